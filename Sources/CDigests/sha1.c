// SHA-1 (FIPS 180-4, section 6.1), for the formats that name it (zsync's whole-file check, Metalink's
// sha-1): a portable block function; one with the x86 SHA extensions (`sha1rnds4` runs four rounds with
// A..D in one register, `sha1nexte` derives the next E, `sha1msg1`/`sha1msg2` extend the schedule); and
// one with the ARMv8 SHA-1 instructions (`sha1c`/`sha1p`/`sha1m` run four rounds, `sha1h` gives the next E).
#include "CDigests.h"
#include "blocks.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

static const uint32_t K[4] = {0x5a827999, 0x6ed9eba1, 0x8f1bbcdc, 0xca62c1d6};

static void blocks_portable(uint32_t *h, const uint8_t *p, size_t count) {
    uint32_t w[80];
    for (; count; count--, p += 64) {
        for (int t = 0; t < 16; t++) w[t] = mw_load_be32(p + 4 * t);
        for (int t = 16; t < 80; t++) w[t] = mw_rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        // One loop per round function, so each runs without a branch.
#define MW_SHA1_ROUNDS(from, f)                                   \
    for (int t = (from); t < (from) + 20; t++) {                  \
        uint32_t next = mw_rotl(a, 5) + (f) + e + K[(from) / 20] + w[t]; \
        e = d;                                                    \
        d = c;                                                    \
        c = mw_rotl(b, 30);                                       \
        b = a;                                                    \
        a = next;                                                 \
    }
        MW_SHA1_ROUNDS(0, (b & c) | (~b & d))
        MW_SHA1_ROUNDS(20, b ^ c ^ d)
        MW_SHA1_ROUNDS(40, (b & c) | (b & d) | (c & d))
        MW_SHA1_ROUNDS(60, b ^ c ^ d)
#undef MW_SHA1_ROUNDS
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
    }
}

#if defined(__x86_64__) || defined(__i386__)
// Four rounds of group `i` (0..19) with round function `f` (an immediate, hence a macro): `w[i & 3]` is
// W[4i..4i+3], extended from the four before it once i >= 4; `e` is E plus the group's words.
#define MW_SHA1_GROUP(i, f)                                                                          \
    do {                                                                                             \
        __m128i *now = &w[(i) & 3];                                                                  \
        if ((i) < 4) {                                                                               \
            *now = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * (i))), swap);         \
        } else {                                                                                     \
            __m128i x = _mm_sha1msg1_epu32(*now, w[((i) + 1) & 3]);                                  \
            x = _mm_xor_si128(x, w[((i) + 2) & 3]);                                                  \
            *now = _mm_sha1msg2_epu32(x, w[((i) + 3) & 3]);                                          \
        }                                                                                            \
        __m128i e = (i) == 0 ? _mm_add_epi32(e0, *now) : _mm_sha1nexte_epu32(previous, *now);        \
        previous = abcd;                                                                             \
        abcd = _mm_sha1rnds4_epu32(abcd, e, f);                                                      \
    } while (0)

__attribute__((target("sha,ssse3,sse4.1"))) static void blocks_sha_ni(uint32_t *h, const uint8_t *p, size_t count) {
    // The block's bytes reversed: each word big-endian, W[t] in lane 3 first.
    const __m128i swap = _mm_set_epi64x(0x0001020304050607ULL, 0x08090a0b0c0d0e0fULL);
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0x1B);  // A in lane 3
    uint32_t e_word = h[4];
    for (; count; count--, p += 64) {
        const __m128i abcd0 = abcd;
        const __m128i e0 = _mm_set_epi32((int)e_word, 0, 0, 0);
        __m128i w[4], previous = abcd;
        MW_SHA1_GROUP(0, 0);
        MW_SHA1_GROUP(1, 0);
        MW_SHA1_GROUP(2, 0);
        MW_SHA1_GROUP(3, 0);
        MW_SHA1_GROUP(4, 0);
        MW_SHA1_GROUP(5, 1);
        MW_SHA1_GROUP(6, 1);
        MW_SHA1_GROUP(7, 1);
        MW_SHA1_GROUP(8, 1);
        MW_SHA1_GROUP(9, 1);
        MW_SHA1_GROUP(10, 2);
        MW_SHA1_GROUP(11, 2);
        MW_SHA1_GROUP(12, 2);
        MW_SHA1_GROUP(13, 2);
        MW_SHA1_GROUP(14, 2);
        MW_SHA1_GROUP(15, 3);
        MW_SHA1_GROUP(16, 3);
        MW_SHA1_GROUP(17, 3);
        MW_SHA1_GROUP(18, 3);
        MW_SHA1_GROUP(19, 3);
        // E after the 80 rounds is A of round 76 rotated by 30; add the E the block started with.
        e_word = (uint32_t)_mm_extract_epi32(_mm_sha1nexte_epu32(previous, e0), 3);
        abcd = _mm_add_epi32(abcd, abcd0);
    }
    _mm_storeu_si128((__m128i *)h, _mm_shuffle_epi32(abcd, 0x1B));
    h[4] = e_word;
}
#undef MW_SHA1_GROUP
#endif

#if defined(__aarch64__)
__attribute__((target("+crypto"))) static void blocks_armv8(uint32_t *h, const uint8_t *p, size_t count) {
    uint32x4_t abcd = vld1q_u32(h);
    uint32_t e = h[4];
    for (; count; count--, p += 64) {
        const uint32x4_t abcd0 = abcd;
        const uint32_t e0 = e;
        uint32x4_t w[4];
        for (int i = 0; i < 20; i++) {
            uint32x4_t *now = &w[i & 3];
            if (i < 4) {
                *now = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * i)));
            } else {
                *now = vsha1su1q_u32(vsha1su0q_u32(*now, w[(i + 1) & 3], w[(i + 2) & 3]), w[(i + 3) & 3]);
            }
            const uint32x4_t wk = vaddq_u32(*now, vdupq_n_u32(K[i / 5]));
            const uint32_t next_e = vsha1h_u32(vgetq_lane_u32(abcd, 0));
            if (i < 5)
                abcd = vsha1cq_u32(abcd, e, wk);
            else if (i < 10 || i >= 15)
                abcd = vsha1pq_u32(abcd, e, wk);
            else
                abcd = vsha1mq_u32(abcd, e, wk);
            e = next_e;
        }
        abcd = vaddq_u32(abcd, abcd0);
        e += e0;
    }
    vst1q_u32(h, abcd);
    h[4] = e;
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

void mw_sha1_init(mw_sha1_ctx *ctx) {
    static const uint32_t initial[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
    memcpy(ctx->state, initial, sizeof initial);
    ctx->length = 0;
    ctx->used = 0;
}

void mw_sha1_update(mw_sha1_ctx *ctx, const void *data, size_t count) {
    if (!count) return;
    mw_absorb(ctx->state, ctx->block, &ctx->used, &ctx->length, data, count, blocks);
}

void mw_sha1_final(const mw_sha1_ctx *ctx, uint8_t digest[20]) {
    uint32_t state[5];
    memcpy(state, ctx->state, sizeof state);
    mw_finish(state, ctx->block, ctx->used, ctx->length, blocks);
    for (int i = 0; i < 5; i++) mw_store_be32(digest + 4 * i, state[i]);
}
