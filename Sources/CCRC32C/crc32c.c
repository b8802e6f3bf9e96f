// CRC-32C with a run-time choice of instructions: SSE 4.2 `crc32` on x86_64, the ARMv8 CRC extension on
// aarch64 (both behind target attributes, so the target builds without -msse4.2 / -march flags), and a
// slice-by-8 table otherwise. The choice is made once (pthread_once).
#include "CCRC32C.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
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

// ---- the choice ----

static pthread_once_t once = PTHREAD_ONCE_INIT;
static mw_crc32c_fn chosen = crc32c_table;
static const char *chosen_name = "software";

static void choose(void) {
    build_table();
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        chosen = crc32c_sse42;
        chosen_name = "sse4.2";
    }
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_CRC32)
    int has_crc = 1;
#else
    int has_crc = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#endif
    if (has_crc) {
        chosen = crc32c_armv8;
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
