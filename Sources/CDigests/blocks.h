// What SHA-256 and SHA-1 share: 64-byte blocks, the same padding (a 1 bit, zeros, the length in bits,
// big-endian), and the choice of block function (cpu.c).
#ifndef CDIGESTS_BLOCKS_H
#define CDIGESTS_BLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/// Runs `count` whole 64-byte blocks from `p` through the compression function into `state`.
typedef void (*mw_blocks_fn)(uint32_t *state, const uint8_t *p, size_t count);

/// Nonzero when the CPU's SHA instructions are to be used now (detected once; see mw_digests_force_portable).
int mw_digests_use_hardware(void);

static inline uint32_t mw_load_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline void mw_store_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline uint32_t mw_rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
static inline uint32_t mw_rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

/// Feeds bytes through a partly filled block: whole blocks of the input go straight to `blocks`, the rest waits
/// in `block`.
static inline void mw_absorb(uint32_t *state, uint8_t block[64], uint32_t *used, uint64_t *length,
                             const uint8_t *p, size_t n, mw_blocks_fn blocks) {
    *length += n;
    if (*used) {
        size_t take = 64 - *used < n ? 64 - *used : n;
        memcpy(block + *used, p, take);
        *used += (uint32_t)take;
        p += take;
        n -= take;
        if (*used < 64) return;
        blocks(state, block, 1);
        *used = 0;
    }
    if (n >= 64) {
        blocks(state, p, n / 64);
        p += n & ~(size_t)63;
        n &= 63;
    }
    if (n) {
        memcpy(block, p, n);
        *used = (uint32_t)n;
    }
}

/// Pads a copy of the pending bytes and runs the last one or two blocks into `state` (a copy too).
static inline void mw_finish(uint32_t *state, const uint8_t block[64], uint32_t used, uint64_t length,
                             mw_blocks_fn blocks) {
    uint8_t tail[128];
    memset(tail, 0, sizeof tail);
    memcpy(tail, block, used);
    tail[used] = 0x80;
    size_t total = used < 56 ? 64 : 128;
    uint64_t bits = length << 3;
    for (int i = 0; i < 8; i++) tail[total - 1 - i] = (uint8_t)(bits >> (8 * i));
    blocks(state, tail, total / 64);
}

#endif
