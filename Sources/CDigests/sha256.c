// SHA-256 (FIPS 180-4, section 6.2): a portable block function; one with the x86 SHA extensions
// (`sha256rnds2` runs two rounds on the state kept as the pairs ABEF and CDGH; `sha256msg1`/`sha256msg2`
// extend the message schedule four words at a time); and one with the ARMv8 SHA-2 instructions (`sha256h`
// and `sha256h2` run four rounds on ABCD and EFGH, `sha256su0`/`sha256su1` extend the schedule). Those sit
// behind target attributes, so the target builds without -march flags, and run only where cpu.c found
// the instructions.
#include "CDigests.h"
#include "blocks.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

// The first 32 bits of the fractional parts of the cube roots of the first 64 primes.
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static void blocks_portable(uint32_t *h, const uint8_t *p, size_t count) {
    uint32_t w[64];
    for (; count; count--, p += 64) {
        for (int t = 0; t < 16; t++) w[t] = mw_load_be32(p + 4 * t);
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = mw_rotr(w[t - 15], 7) ^ mw_rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = mw_rotr(w[t - 2], 17) ^ mw_rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
        for (int t = 0; t < 64; t++) {
            uint32_t t1 = k + (mw_rotr(e, 6) ^ mw_rotr(e, 11) ^ mw_rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
            uint32_t t2 = (mw_rotr(a, 2) ^ mw_rotr(a, 13) ^ mw_rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            k = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
        h[5] += f;
        h[6] += g;
        h[7] += k;
    }
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("sha,ssse3,sse4.1"))) static void blocks_sha_ni(uint32_t *h, const uint8_t *p, size_t count) {
    // Each 32-bit word of the message is big-endian.
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    // h[0..3] = A B C D and h[4..7] = E F G H (lane 0 first) become ABEF and CDGH, A and C in lane 3.
    __m128i dcba = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0xB1);         // lanes B A D C
    __m128i hgfe = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(h + 4)), 0x1B);  // lanes H G F E
    __m128i abef = _mm_alignr_epi8(dcba, hgfe, 8);                                       // lanes F E B A
    __m128i cdgh = _mm_blend_epi16(hgfe, dcba, 0xF0);                                    // lanes H G D C
    for (; count; count--, p += 64) {
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i w[4];
        for (int i = 0; i < 16; i++) {
            __m128i *now = &w[i & 3];
            if (i < 4) {
                *now = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), swap);
            } else {
                // W[t..t+3] from W[t-16..t-13] (*now), W[t-12..], W[t-7..t-4] and W[t-2], W[t-1].
                const __m128i back12 = w[(i + 1) & 3], back8 = w[(i + 2) & 3], back4 = w[(i + 3) & 3];
                __m128i x = _mm_sha256msg1_epu32(*now, back12);
                x = _mm_add_epi32(x, _mm_alignr_epi8(back4, back8, 4));
                *now = _mm_sha256msg2_epu32(x, back4);
            }
            __m128i wk = _mm_add_epi32(*now, _mm_loadu_si128((const __m128i *)(K + 4 * i)));
            // Two rounds give the new ABEF, and the old ABEF is the new CDGH: the pair swaps twice.
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);  // lanes A B E F
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);  // lanes G H C D
    _mm_storeu_si128((__m128i *)h, _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}
#endif

#if defined(__aarch64__)
__attribute__((target("+crypto"))) static void blocks_armv8(uint32_t *h, const uint8_t *p, size_t count) {
    uint32x4_t abcd = vld1q_u32(h), efgh = vld1q_u32(h + 4);
    for (; count; count--, p += 64) {
        const uint32x4_t abcd0 = abcd, efgh0 = efgh;
        uint32x4_t w[4];
        for (int i = 0; i < 16; i++) {
            uint32x4_t *now = &w[i & 3];
            if (i < 4) {
                *now = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * i)));
            } else {
                // W[t..t+3] from W[t-16..t-13] (*now), W[t-15..] (the next), W[t-7..] and W[t-2], W[t-1].
                *now = vsha256su1q_u32(vsha256su0q_u32(*now, w[(i + 1) & 3]), w[(i + 2) & 3], w[(i + 3) & 3]);
            }
            const uint32x4_t wk = vaddq_u32(*now, vld1q_u32(K + 4 * i));
            const uint32x4_t before = abcd;
            abcd = vsha256hq_u32(abcd, efgh, wk);
            efgh = vsha256h2q_u32(efgh, before, wk);
        }
        abcd = vaddq_u32(abcd, abcd0);
        efgh = vaddq_u32(efgh, efgh0);
    }
    vst1q_u32(h, abcd);
    vst1q_u32(h + 4, efgh);
}
#endif

static void blocks(uint32_t *h, const uint8_t *p, size_t count) {
#if defined(__x86_64__) || defined(__i386__)
    if (mw_digests_use_hardware()) {
        blocks_sha_ni(h, p, count);
        return;
    }
#elif defined(__aarch64__)
    if (mw_digests_use_hardware()) {
        blocks_armv8(h, p, count);
        return;
    }
#endif
    blocks_portable(h, p, count);
}

void mw_sha256_init(mw_sha256_ctx *ctx) {
    // The first 32 bits of the fractional parts of the square roots of the first 8 primes.
    static const uint32_t initial[8] = {
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    };
    memcpy(ctx->state, initial, sizeof initial);
    ctx->length = 0;
    ctx->used = 0;
}

void mw_sha256_update(mw_sha256_ctx *ctx, const void *data, size_t count) {
    if (!count) return;
    mw_absorb(ctx->state, ctx->block, &ctx->used, &ctx->length, data, count, blocks);
}

void mw_sha256_final(const mw_sha256_ctx *ctx, uint8_t digest[32]) {
    uint32_t state[8];
    memcpy(state, ctx->state, sizeof state);
    mw_finish(state, ctx->block, ctx->used, ctx->length, blocks);
    for (int i = 0; i < 8; i++) mw_store_be32(digest + 4 * i, state[i]);
}
