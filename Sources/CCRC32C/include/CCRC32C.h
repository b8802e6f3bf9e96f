// CRC-32C (Castagnoli): the per-chunk checksum of the partial file (docs/checkpoint.md). It guards
// against torn or stale data after a crash, not against an adversary. Imported by Transfer only.
#ifndef METERWISE_CCRC32C_H
#define METERWISE_CCRC32C_H

#include <stddef.h>
#include <stdint.h>

/// The CRC-32C (reflected polynomial 0x82F63B78) of `data` appended to bytes whose CRC-32C is `crc`.
///
/// Convention (zlib's `crc32()`): `crc` and the result are finished values, the initial and final
/// xor with 0xFFFFFFFF happen inside. Start with 0; `update(update(0, a), b) == update(0, a ‖ b)`.
/// "123456789" gives 0xE3069283. Uses SSE 4.2 (x86_64) or the ARMv8 CRC instructions (aarch64) when
/// the CPU has them, else a table (slice-by-8).
uint32_t mw_crc32c_update(uint32_t crc, const void *data, size_t length);

/// The same, always with the table: the reference the hardware path is tested against.
uint32_t mw_crc32c_software(uint32_t crc, const void *data, size_t length);

/// The path `mw_crc32c_update` takes on this CPU: "sse4.2" (three lanes of `crc32`), "sse4.2+pclmul" (folding
/// with carry-less multiplication, where it timed faster at the first call), "armv8-crc" or "software".
const char *mw_crc32c_implementation(void);

/// The same as `mw_crc32c_update` through one named path ("sse4.2", "sse4.2+pclmul", "armv8-crc", "software"),
/// so that tests check each path the CPU has whichever was chosen; 0 in `*ran` when this CPU lacks it (then the
/// result is the table's).
uint32_t mw_crc32c_through(const char *path, uint32_t crc, const void *data, size_t length, int *ran);

#endif
