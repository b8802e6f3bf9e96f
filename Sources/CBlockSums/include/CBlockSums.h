// zsync's block checksums and the seed scan (docs/delta.md): MD4 (the strong checksum zsyncmake writes),
// the rolling checksum (rsync's, 16-bit halves) and the search of a seed file for the target's blocks.
// Pure computation over memory the caller owns; no I/O. Imported by Transfer only.
#ifndef METERWISE_CBLOCKSUMS_H
#define METERWISE_CBLOCKSUMS_H

#include <stddef.h>
#include <stdint.h>

/// MD4 (RFC 1320) of `length` bytes followed by `pad` zero bytes, into `out` (16 bytes).
void mw_md4(const void *data, size_t length, size_t pad, uint8_t out[16]);

/// zsync's rolling checksum of one block: a = Σ c, b = Σ (length - i)·c, both mod 2^16, as (a << 16) | b.
uint32_t mw_rsum(const uint8_t *data, size_t length);

/// The target's blocks as the control file lists them, hashed for the scan. Opaque.
typedef struct mw_block_index mw_block_index;

/// Builds the index. `weak` holds `blocks` values (a << 16 | b, already masked as the control file's
/// rsum length keeps them), `strong` `blocks` × 16 bytes (the stored prefix, zero-filled). `block_size`
/// is a power of two; `sequence` 1 or 2 (zsync's seq_matches); `weak_mask` the bits the control file
/// keeps of (a << 16 | b); `strong_length` 3...16. Returns NULL when memory is short or an argument is
/// out of range.
mw_block_index *mw_block_index_new(uint32_t blocks, uint32_t block_size, int sequence, uint32_t weak_mask,
                                   int strong_length, const uint32_t *weak, const uint8_t *strong);

void mw_block_index_free(mw_block_index *index);

/// Not yet found, in `found`.
#define MW_BLOCK_NOT_FOUND UINT64_MAX

/// Searches the seed `fd` (`length` bytes) at every byte offset from `start` to `end` (windows read on past
/// `end`, up to the seed's end) for blocks of the target, treating the seed as followed by zeros (the
/// target's last block is zero-padded). The seed is read with pread, a window at a time: a seed that shrinks
/// while it is scanned ends the scan, never the process. Parts of one seed may be scanned on several threads,
/// each with its own `found` and `progress`. `found` has one entry per block: MW_BLOCK_NOT_FOUND, or
/// (seed << 48) | offset where the block was found; only entries still MW_BLOCK_NOT_FOUND are filled. A block
/// counts when its weak and strong checksums match and, with sequence 2, its neighbour in the target matches
/// at the neighbouring offset as well (zsync's rule), or it continues a run just matched, or it comes just
/// before a new run. `progress` (may be NULL) receives the offset reached every 4 MiB; a nonzero `*cancel`
/// ends the scan early. Returns the number of blocks newly found.
uint64_t mw_block_scan_fd(const mw_block_index *index, int fd, uint64_t length, uint64_t start, uint64_t end,
                          uint16_t seed_id, uint64_t *found, uint64_t *progress, const int *cancel);

/// Checks blocks `first..<first+count` of the file `fd` (`length` bytes) where they belong (block i at
/// offset i × block size) and fills `found` for each that is right, as seed `seed_id`. Used on the partial
/// file at a resume and on every range fetched. Returns the number newly found.
uint64_t mw_block_verify_fd(const mw_block_index *index, int fd, uint64_t length, uint32_t first, uint32_t count,
                            uint16_t seed_id, uint64_t *found, uint64_t *progress, const int *cancel);

/// Relaxed atomic read of a progress counter another thread writes.
uint64_t mw_progress_load(const uint64_t *progress);

#endif
