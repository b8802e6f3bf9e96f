// CRC-32C with a run-time choice of instructions: SSE 4.2 `crc32` on x86_64, the ARMv8 CRC extension on
// aarch64 (both behind target attributes, so the target builds without -msse4.2 / -march flags), and a
// slice-by-8 table otherwise. The choice is made once (pthread_once).
//
// The hardware paths run three lanes at once: the instruction's latency is three cycles but a new one can
// start every cycle, so one chain uses a third of what the CPU can do. Each block of 3 x LANE bytes is three
// independent chains, joined with the register's linearity: for the raw register g (no inversions),
// g(c, A || B) = M(|B|) * g(c, A) xor g(0, B), where M(n) multiplies by x^(8n) mod P. M(LANE) is applied with
// four 256-entry tables built once from the hardware function itself.
#include "CCRC32C.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <time.h>
#include <wmmintrin.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#define POLY 0x82F63B78u

typedef uint32_t (*mw_crc32c_fn)(uint32_t, const unsigned char *, size_t);

// ---- software: slice-by-8 ----

static uint32_t table[8][256];

static void build_table(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = table[0][n];
        for (int k = 1; k < 8; k++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[k][n] = c;
        }
    }
}

/// `c` is the running (inverted) register, as in the hardware paths.
static uint32_t crc32c_table(uint32_t c, const unsigned char *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= c;
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
            table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^ table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

// ---- hardware ----

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t c32, const unsigned char *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c32 = _mm_crc32_u8(c32, *p++);
        n--;
    }
    uint64_t c = c32;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
        p += 8;
        n -= 8;
    }
    c32 = (uint32_t)c;
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}
#elif defined(__aarch64__)
__attribute__((target("crc")))
static uint32_t crc32c_armv8(uint32_t c, const unsigned char *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c = __builtin_arm_crc32cb(c, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_arm_crc32cd(c, v);
        p += 8;
        n -= 8;
    }
    while (n--) c = __builtin_arm_crc32cb(c, *p++);
    return c;
}
#endif

// ---- three lanes ----

#define LANE 4096

static uint32_t shift_table[4][256];

/// M(LANE) * c: `c` moved past LANE zero bytes.
static uint32_t shift_lane(uint32_t c) {
    return shift_table[0][c & 0xff] ^ shift_table[1][(c >> 8) & 0xff] ^ shift_table[2][(c >> 16) & 0xff] ^
           shift_table[3][c >> 24];
}

/// The tables of M(LANE), from the images of the 32 one-bit registers (g(e_i, LANE zeros) = M(LANE) * e_i).
static void build_shift(mw_crc32c_fn one) {
    static const unsigned char zeros[LANE];
    uint32_t column[32];
    for (int i = 0; i < 32; i++) column[i] = one(1u << i, zeros, LANE);
    for (int k = 0; k < 4; k++) {
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int i = 0; i < 8; i++) {
                if (b & (1 << i)) v ^= column[8 * k + i];
            }
            shift_table[k][b] = v;
        }
    }
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42_lanes(uint32_t c32, const unsigned char *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c32 = _mm_crc32_u8(c32, *p++);
        n--;
    }
    while (n >= 3 * LANE) {
        uint64_t a = c32, b = 0, c = 0;
        const unsigned char *end = p + LANE;
        do {
            uint64_t va, vb, vc;
            memcpy(&va, p, 8);
            memcpy(&vb, p + LANE, 8);
            memcpy(&vc, p + 2 * LANE, 8);
            a = _mm_crc32_u64(a, va);
            b = _mm_crc32_u64(b, vb);
            c = _mm_crc32_u64(c, vc);
            p += 8;
        } while (p < end);
        c32 = shift_lane(shift_lane((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c;
        p += 2 * LANE;
        n -= 3 * LANE;
    }
    return crc32c_sse42(c32, p, n);
}

// ---- carry-less multiplication (x86_64 with PCLMULQDQ) ----
//
// On CPUs whose `crc32` instruction cannot start one per cycle (AMD's: about 6 GB/s with one lane or three), the
// message is folded 64 bytes at a time in four 128-bit registers with PCLMULQDQ, and the last register is fed to
// `crc32` as 16 bytes of message. A register X of 16 message bytes loaded little-endian holds the polynomial whose
// bit j has degree 127 - j (reflected). Moved D bits further on, X * x^D = lo(X) * x^(64+D) + hi(X) * x^D, with
// each power taken mod P. The product of two reflected 64-bit values is reflected over 127 bits, which read as 128
// bits is one degree higher; so the constants are x^(64+D-1) and x^(D-1) mod P, as reflected 64-bit values (bit
// 63 - d is x^d). `mw_crc32c_update` times this and the three lanes once and keeps the faster.

static uint64_t fold_512[2], fold_128[2];

/// x^n mod P as a reflected 64-bit constant.
static uint64_t power_constant(unsigned n) {
    uint32_t v = 1;  // normal form: bit d is x^d
    for (unsigned i = 0; i < n; i++) {
        uint32_t top = v >> 31;
        v <<= 1;
        if (top) v ^= 0x1EDC6F41u;
    }
    uint32_t r = 0;
    for (int d = 0; d < 32; d++) {
        if ((v >> d) & 1) r |= 1u << (31 - d);
    }
    return (uint64_t)r << 32;
}

static void build_fold(void) {
    fold_512[0] = power_constant(512 + 63);
    fold_512[1] = power_constant(511);
    fold_128[0] = power_constant(128 + 63);
    fold_128[1] = power_constant(127);
}

__attribute__((target("sse4.2,pclmul")))
static inline __m128i fold(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("sse4.2,pclmul")))
static uint32_t crc32c_pclmul(uint32_t c, const unsigned char *p, size_t n) {
    if (n < 128) return crc32c_sse42(c, p, n);
    const __m128i k4 = _mm_set_epi64x((long long)fold_512[1], (long long)fold_512[0]);
    const __m128i k1 = _mm_set_epi64x((long long)fold_128[1], (long long)fold_128[0]);
    __m128i x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    // The running register goes into the first 4 bytes of the message.
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)c));
    p += 64;
    n -= 64;
    while (n >= 64) {
        x0 = _mm_xor_si128(fold(x0, k4), _mm_loadu_si128((const __m128i *)p));
        x1 = _mm_xor_si128(fold(x1, k4), _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = _mm_xor_si128(fold(x2, k4), _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = _mm_xor_si128(fold(x3, k4), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    x1 = _mm_xor_si128(x1, fold(x0, k1));
    x2 = _mm_xor_si128(x2, fold(x1, k1));
    x3 = _mm_xor_si128(x3, fold(x2, k1));
    while (n >= 16) {
        x3 = _mm_xor_si128(fold(x3, k1), _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    uint64_t r = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x3));
    r = _mm_crc32_u64(r, (uint64_t)_mm_extract_epi64(x3, 1));
    return crc32c_sse42((uint32_t)r, p, n);
}

/// The shortest of three runs of `fn` over 64 KiB, in nanoseconds.
static uint64_t time_of(mw_crc32c_fn fn) {
    static unsigned char sample[64 << 10];
    uint64_t best = UINT64_MAX;
    volatile uint32_t sink = 0;
    for (int i = 0; i < 3; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        sink ^= fn(sink, sample, sizeof sample);
        clock_gettime(CLOCK_MONOTONIC, &b);
        uint64_t ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)(b.tv_nsec - a.tv_nsec);
        if (ns < best) best = ns;
    }
    return best;
}
#elif defined(__aarch64__)
__attribute__((target("crc")))
static uint32_t crc32c_armv8_lanes(uint32_t c32, const unsigned char *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        c32 = __builtin_arm_crc32cb(c32, *p++);
        n--;
    }
    while (n >= 3 * LANE) {
        uint32_t a = c32, b = 0, c = 0;
        const unsigned char *end = p + LANE;
        do {
            uint64_t va, vb, vc;
            memcpy(&va, p, 8);
            memcpy(&vb, p + LANE, 8);
            memcpy(&vc, p + 2 * LANE, 8);
            a = __builtin_arm_crc32cd(a, va);
            b = __builtin_arm_crc32cd(b, vb);
            c = __builtin_arm_crc32cd(c, vc);
            p += 8;
        } while (p < end);
        c32 = shift_lane(shift_lane(a) ^ b) ^ c;
        p += 2 * LANE;
        n -= 3 * LANE;
    }
    return crc32c_armv8(c32, p, n);
}
#endif

// ---- the choice ----

static pthread_once_t once = PTHREAD_ONCE_INIT;
static mw_crc32c_fn chosen = crc32c_table;
static const char *chosen_name = "software";

static void choose(void) {
    build_table();
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        build_shift(crc32c_sse42);
        chosen = crc32c_sse42_lanes;
        chosen_name = "sse4.2";
        if (__builtin_cpu_supports("pclmul")) {
            build_fold();
            if (time_of(crc32c_pclmul) < time_of(crc32c_sse42_lanes)) {
                chosen = crc32c_pclmul;
                chosen_name = "sse4.2+pclmul";
            }
        }
    }
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_CRC32)
    int has_crc = 1;
#else
    int has_crc = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#endif
    if (has_crc) {
        build_shift(crc32c_armv8);
        chosen = crc32c_armv8_lanes;
        chosen_name = "armv8-crc";
    }
#endif
}

uint32_t mw_crc32c_update(uint32_t crc, const void *data, size_t length) {
    pthread_once(&once, choose);
    if (length == 0) return crc;
    return ~chosen(~crc, (const unsigned char *)data, length);
}

uint32_t mw_crc32c_software(uint32_t crc, const void *data, size_t length) {
    pthread_once(&once, choose);
    if (length == 0) return crc;
    return ~crc32c_table(~crc, (const unsigned char *)data, length);
}

const char *mw_crc32c_implementation(void) {
    pthread_once(&once, choose);
    return chosen_name;
}

uint32_t mw_crc32c_through(const char *path, uint32_t crc, const void *data, size_t length, int *ran) {
    pthread_once(&once, choose);
    mw_crc32c_fn fn = crc32c_table;
    *ran = strcmp(path, "software") == 0;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2") && strcmp(path, "sse4.2") == 0) {
        fn = crc32c_sse42_lanes;
        *ran = 1;
    }
    if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul") && strcmp(path, "sse4.2+pclmul") == 0) {
        fn = crc32c_pclmul;
        *ran = 1;
    }
#elif defined(__aarch64__)
    if (chosen == crc32c_armv8_lanes && strcmp(path, "armv8-crc") == 0) {
        fn = crc32c_armv8_lanes;
        *ran = 1;
    }
#endif
    if (length == 0) return crc;
    return ~fn(~crc, (const unsigned char *)data, length);
}
