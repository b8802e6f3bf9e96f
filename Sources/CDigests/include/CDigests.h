// SHA-256 and SHA-1 (FIPS 180-4), streamed: init, update with any number of bytes, final. The block function
// is chosen once per process: the x86 SHA extensions where the CPU has them, portable C otherwise.
#ifndef CDIGESTS_H
#define CDIGESTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t state[8];
    uint64_t length;  // bytes given so far
    uint8_t block[64];
    uint32_t used;  // bytes of `block` filled
} mw_sha256_ctx;

typedef struct {
    uint32_t state[5];
    uint64_t length;
    uint8_t block[64];
    uint32_t used;
} mw_sha1_ctx;

void mw_sha256_init(mw_sha256_ctx *ctx);
void mw_sha256_update(mw_sha256_ctx *ctx, const void *data, size_t count);
/// Writes the 32-byte digest; `ctx` is left as it was (a copy is finished), so more may follow.
void mw_sha256_final(const mw_sha256_ctx *ctx, uint8_t digest[32]);

void mw_sha1_init(mw_sha1_ctx *ctx);
void mw_sha1_update(mw_sha1_ctx *ctx, const void *data, size_t count);
void mw_sha1_final(const mw_sha1_ctx *ctx, uint8_t digest[20]);

/// 1 when the block functions in use are the CPU's SHA instructions, 0 for portable C.
int mw_digests_hardware(void);
/// For tests: 1 makes every later update use the portable block functions, 0 returns to the CPU's choice.
void mw_digests_force_portable(int on);

#endif
