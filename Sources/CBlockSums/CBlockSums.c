// See include/CBlockSums.h. MD4 follows RFC 1320; the rolling checksum and the matching rule follow the
// zsync 0.6 control format (docs/delta.md).
#include "CBlockSums.h"

#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

// ---- MD4 ----

#define MD4_F(x, y, z) (((x) & (y)) | (~(x) & (z)))
#define MD4_G(x, y, z) (((x) & (y)) | ((x) & (z)) | ((y) & (z)))
#define MD4_H(x, y, z) ((x) ^ (y) ^ (z))
#define ROTL(x, s) (((x) << (s)) | ((x) >> (32 - (s))))

static void md4_block(uint32_t state[4], const uint8_t block[64]) {
    uint32_t x[16];
    for (int i = 0; i < 16; i++) {
        x[i] = (uint32_t)block[4 * i] | ((uint32_t)block[4 * i + 1] << 8) | ((uint32_t)block[4 * i + 2] << 16) |
               ((uint32_t)block[4 * i + 3] << 24);
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
#define R1(a, b, c, d, k, s) a = ROTL(a + MD4_F(b, c, d) + x[k], s)
    R1(a, b, c, d, 0, 3); R1(d, a, b, c, 1, 7); R1(c, d, a, b, 2, 11); R1(b, c, d, a, 3, 19);
    R1(a, b, c, d, 4, 3); R1(d, a, b, c, 5, 7); R1(c, d, a, b, 6, 11); R1(b, c, d, a, 7, 19);
    R1(a, b, c, d, 8, 3); R1(d, a, b, c, 9, 7); R1(c, d, a, b, 10, 11); R1(b, c, d, a, 11, 19);
    R1(a, b, c, d, 12, 3); R1(d, a, b, c, 13, 7); R1(c, d, a, b, 14, 11); R1(b, c, d, a, 15, 19);
#define R2(a, b, c, d, k, s) a = ROTL(a + MD4_G(b, c, d) + x[k] + 0x5A827999u, s)
    R2(a, b, c, d, 0, 3); R2(d, a, b, c, 4, 5); R2(c, d, a, b, 8, 9); R2(b, c, d, a, 12, 13);
    R2(a, b, c, d, 1, 3); R2(d, a, b, c, 5, 5); R2(c, d, a, b, 9, 9); R2(b, c, d, a, 13, 13);
    R2(a, b, c, d, 2, 3); R2(d, a, b, c, 6, 5); R2(c, d, a, b, 10, 9); R2(b, c, d, a, 14, 13);
    R2(a, b, c, d, 3, 3); R2(d, a, b, c, 7, 5); R2(c, d, a, b, 11, 9); R2(b, c, d, a, 15, 13);
#define R3(a, b, c, d, k, s) a = ROTL(a + MD4_H(b, c, d) + x[k] + 0x6ED9EBA1u, s)
    R3(a, b, c, d, 0, 3); R3(d, a, b, c, 8, 9); R3(c, d, a, b, 4, 11); R3(b, c, d, a, 12, 15);
    R3(a, b, c, d, 2, 3); R3(d, a, b, c, 10, 9); R3(c, d, a, b, 6, 11); R3(b, c, d, a, 14, 15);
    R3(a, b, c, d, 1, 3); R3(d, a, b, c, 9, 9); R3(c, d, a, b, 5, 11); R3(b, c, d, a, 13, 15);
    R3(a, b, c, d, 3, 3); R3(d, a, b, c, 11, 9); R3(c, d, a, b, 7, 11); R3(b, c, d, a, 15, 15);
    state[0] += a; state[1] += b; state[2] += c; state[3] += d;
}

void mw_md4(const void *data, size_t length, size_t pad, uint8_t out[16]) {
    uint32_t state[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
    const uint8_t *p = data;
    size_t left = length;
    while (left >= 64) {
        md4_block(state, p);
        p += 64;
        left -= 64;
    }
    // The tail of the data, then `pad` zeros, then the padding of RFC 1320.
    uint8_t block[64];
    memcpy(block, p, left);
    size_t fill = left;
    size_t zeros = pad;
    while (fill + zeros >= 64) {
        memset(block + fill, 0, 64 - fill);
        zeros -= 64 - fill;
        md4_block(state, block);
        fill = 0;
    }
    memset(block + fill, 0, zeros);
    fill += zeros;
    block[fill++] = 0x80;
    if (fill > 56) {
        memset(block + fill, 0, 64 - fill);
        md4_block(state, block);
        fill = 0;
    }
    memset(block + fill, 0, 56 - fill);
    uint64_t bits = (uint64_t)(length + pad) * 8;
    for (int i = 0; i < 8; i++) block[56 + i] = (uint8_t)(bits >> (8 * i));
    md4_block(state, block);
    for (int i = 0; i < 4; i++) {
        out[4 * i] = (uint8_t)state[i];
        out[4 * i + 1] = (uint8_t)(state[i] >> 8);
        out[4 * i + 2] = (uint8_t)(state[i] >> 16);
        out[4 * i + 3] = (uint8_t)(state[i] >> 24);
    }
}

// ---- the rolling checksum ----

uint32_t mw_rsum(const uint8_t *data, size_t length) {
    uint16_t a = 0, b = 0;
    for (size_t i = 0; i < length; i++) {
        a += data[i];
        b += (uint16_t)((length - i) * data[i]);
    }
    return ((uint32_t)a << 16) | b;
}

// ---- the index ----

struct mw_block_index {
    uint32_t blocks;
    uint32_t block_size;
    uint32_t shift;
    int sequence;
    uint32_t weak_mask;
    int strong_length;
    uint32_t *weak;   // blocks + 1 (the extra one is 0)
    uint8_t *strong;  // blocks × 16
    uint32_t *head;   // bucket -> block + 1, 0 empty
    uint32_t *next;   // block -> next block + 1 in its bucket
    uint32_t hash_bits;
    uint64_t *filter; // one bit per hash value of a wider hash
    uint32_t filter_bits;
};

static inline uint32_t pair_hash(uint32_t w0, uint32_t w1) {
    uint32_t h = (w0 ^ (w1 * 0x9E3779B1u)) * 0x85EBCA77u;
    return h ^ (h >> 15);
}

mw_block_index *mw_block_index_new(uint32_t blocks, uint32_t block_size, int sequence, uint32_t weak_mask,
                                   int strong_length, const uint32_t *weak, const uint8_t *strong) {
    if (blocks == 0 || blocks > (1u << 30) || block_size < 16 || (block_size & (block_size - 1)) != 0 ||
        sequence < 1 || sequence > 2 || strong_length < 1 || strong_length > 16) {
        return NULL;
    }
    mw_block_index *ix = calloc(1, sizeof *ix);
    if (!ix) return NULL;
    ix->blocks = blocks;
    ix->block_size = block_size;
    while ((1u << ix->shift) < block_size) ix->shift++;
    ix->sequence = sequence;
    ix->weak_mask = weak_mask;
    ix->strong_length = strong_length;
    uint32_t bits = 10;
    while (bits < 31 && (1u << bits) < 2 * (uint64_t)blocks) bits++;
    ix->hash_bits = bits;
    ix->filter_bits = bits + 3 < 32 ? bits + 3 : 32;
    ix->weak = calloc((size_t)blocks + 1, sizeof(uint32_t));
    ix->strong = malloc((size_t)blocks * 16);
    ix->head = calloc((size_t)1 << bits, sizeof(uint32_t));
    ix->next = calloc(blocks, sizeof(uint32_t));
    ix->filter = calloc(((size_t)1 << ix->filter_bits) / 64 + 1, sizeof(uint64_t));
    if (!ix->weak || !ix->strong || !ix->head || !ix->next || !ix->filter) {
        mw_block_index_free(ix);
        return NULL;
    }
    for (uint32_t i = 0; i < blocks; i++) ix->weak[i] = weak[i] & weak_mask;
    memcpy(ix->strong, strong, (size_t)blocks * 16);
    // With sequence 2 a block is keyed by its own weak sum and its successor's; the last block has no
    // successor and is looked for on its own (`last_block_at`). Blocks are chained in reverse so each
    // bucket lists them in offset order.
    uint32_t keyed = sequence == 2 ? blocks - 1 : blocks;
    for (uint32_t i = keyed; i-- > 0;) {
        uint32_t h = pair_hash(ix->weak[i], sequence == 2 ? ix->weak[i + 1] : 0);
        uint32_t bucket = h >> (32 - bits);
        ix->next[i] = ix->head[bucket];
        ix->head[bucket] = i + 1;
        uint32_t f = h >> (32 - ix->filter_bits);
        ix->filter[f >> 6] |= (uint64_t)1 << (f & 63);
    }
    return ix;
}

void mw_block_index_free(mw_block_index *ix) {
    if (!ix) return;
    free(ix->weak);
    free(ix->strong);
    free(ix->head);
    free(ix->next);
    free(ix->filter);
    free(ix);
}

uint64_t mw_progress_load(const uint64_t *progress) { return __atomic_load_n(progress, __ATOMIC_RELAXED); }

static inline void progress_store(uint64_t *progress, uint64_t value) {
    if (progress) __atomic_store_n(progress, value, __ATOMIC_RELAXED);
}

static inline int strong_matches(const mw_block_index *ix, const uint8_t *data, uint32_t block) {
    uint8_t digest[16];
    mw_md4(data, ix->block_size, 0, digest);
    return memcmp(digest, ix->strong + (size_t)block * 16, (size_t)ix->strong_length) == 0;
}

// ---- the scan ----

typedef struct {
    uint64_t expect_offset; // where the next block of the last run would start (global offset)
    uint32_t expect_block;  // that block, or `blocks` when there is no run
    uint64_t resume_at;     // the next global offset to look at
    uint64_t newly;
} scan_state;

#define ROLL(r, out, in, shift)                                                                            \
    do {                                                                                                   \
        uint16_t ra = (uint16_t)((r) >> 16), rb = (uint16_t)(r);                                           \
        ra = (uint16_t)(ra + (in) - (out));                                                                \
        rb = (uint16_t)(rb + ra - ((uint32_t)(out) << (shift)));                                           \
        (r) = ((uint32_t)ra << 16) | rb;                                                                   \
    } while (0)

static inline int record(uint64_t *found, uint32_t block, uint16_t seed, uint64_t offset) {
    if (found[block] != MW_BLOCK_NOT_FOUND) return 0;
    found[block] = ((uint64_t)seed << 48) | offset;
    return 1;
}

// Scans positions [p0, p1) of `buf`, whose first byte is at global offset `base`; `buf` holds at least
// p1 - 1 + sequence × block_size bytes.
static void scan_range(const mw_block_index *ix, const uint8_t *buf, uint64_t p0, uint64_t p1, uint64_t base,
                       uint16_t seed, uint64_t *found, scan_state *st, uint64_t *progress, const int *cancel) {
    const uint32_t bs = ix->block_size, shift = ix->shift, mask = ix->weak_mask, last = ix->blocks - 1;
    const int seq = ix->sequence;
    const uint32_t hbits = ix->hash_bits, fbits = ix->filter_bits;
    uint64_t pos = st->resume_at > base ? st->resume_at - base : 0;
    if (pos < p0) pos = p0;
    uint32_t r0 = 0, r1 = 0;
    int fresh = 1, have_r1 = 0; // r1 is summed only when a lookup needs it: a run's next block needs r0 alone
    uint64_t next_report = pos + (4u << 20);
    while (pos < p1) {
        if (fresh) {
            r0 = mw_rsum(buf + pos, bs);
            have_r1 = 0;
            fresh = 0;
        }
        if (pos >= next_report) {
            progress_store(progress, base + pos);
            if (cancel && *cancel) break;
            next_report = pos + (4u << 20);
        }
        const uint64_t g = base + pos;
        const uint32_t w0 = r0 & mask;
        uint32_t hit = ix->blocks; // the block a match starts with
        int run = 0;               // blocks the match covers
        // The run just matched continues here: its next block needs only its own checksums.
        if (st->expect_offset == g && st->expect_block < ix->blocks && found[st->expect_block] == MW_BLOCK_NOT_FOUND &&
            ix->weak[st->expect_block] == w0 && strong_matches(ix, buf + pos, st->expect_block)) {
            hit = st->expect_block;
            run = 1;
        }
        if (!run) {
            if (seq == 2 && !have_r1) {
                r1 = mw_rsum(buf + pos + bs, bs);
                have_r1 = 1;
            }
            const uint32_t w1 = r1 & mask;
            const uint32_t h = pair_hash(w0, seq == 2 ? w1 : 0);
            const uint32_t f = h >> (32 - fbits);
            if (ix->filter[f >> 6] & ((uint64_t)1 << (f & 63))) {
                for (uint32_t e = ix->head[h >> (32 - hbits)]; e; e = ix->next[e - 1]) {
                    const uint32_t b = e - 1;
                    if (ix->weak[b] != w0 || (seq == 2 && ix->weak[b + 1] != w1)) continue;
                    // Blocks found before (in an earlier seed, or in place) still count as a match here: the
                    // scan jumps over them instead of rolling through them byte by byte.
                    if (!strong_matches(ix, buf + pos, b)) continue;
                    if (seq == 2 && !strong_matches(ix, buf + pos + bs, b + 1)) continue;
                    hit = b;
                    run = seq;
                    break;
                }
            }
            // The last block has no successor to pair with: its own checksums, like zsync.
            if (!run && seq == 2 && found[last] == MW_BLOCK_NOT_FOUND && ix->weak[last] == w0 &&
                strong_matches(ix, buf + pos, last)) {
                hit = last;
                run = 1;
            }
        }
        if (run) {
            for (int k = 0; k < run; k++) st->newly += record(found, hit + (uint32_t)k, seed, g + (uint64_t)k * bs);
            // The block before a new run, if it is here too (a lone unchanged block after a change).
            if (hit > 0 && found[hit - 1] == MW_BLOCK_NOT_FOUND && pos >= bs) {
                const uint8_t *before = buf + pos - bs;
                if ((mw_rsum(before, bs) & mask) == ix->weak[hit - 1] && strong_matches(ix, before, hit - 1)) {
                    st->newly += record(found, hit - 1, seed, g - bs);
                }
            }
            st->expect_block = hit + (uint32_t)run;
            st->expect_offset = g + (uint64_t)run * bs;
            pos += (uint64_t)run * bs;
            fresh = 1;
            continue;
        }
        if (pos + 1 >= p1) {
            pos++;
            break;
        }
        const uint8_t out0 = buf[pos], in0 = buf[pos + bs];
        ROLL(r0, out0, in0, shift);
        if (seq == 2) {
            const uint8_t in1 = buf[pos + 2 * (uint64_t)bs];
            ROLL(r1, in0, in1, shift);
        }
        pos++;
    }
    st->resume_at = base + pos;
}

// Reads `length` bytes at `offset`; returns the bytes read (fewer only at the file's end).
static uint64_t read_at(int fd, uint8_t *buf, uint64_t length, uint64_t offset) {
    uint64_t done = 0;
    while (done < length) {
        ssize_t n = pread(fd, buf + done, (size_t)(length - done), (off_t)(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += (uint64_t)n;
    }
    return done;
}

// Windows of positions scanned per read.
#define SCAN_WINDOW ((uint64_t)8 << 20)

uint64_t mw_block_scan_fd(const mw_block_index *ix, int fd, uint64_t length, uint64_t start, uint64_t end,
                          uint16_t seed_id, uint64_t *found, uint64_t *progress, const int *cancel) {
    if (!ix || length == 0) return 0;
    if (end > length) end = length;
    if (start >= end) return 0;
    const uint64_t bs = ix->block_size, context = (uint64_t)ix->sequence * bs;
    // One block before the window (the look back at a new run), the window, and the context its last
    // positions read.
    uint8_t *buf = malloc((size_t)(bs + SCAN_WINDOW + context));
    if (!buf) return 0;
    scan_state st = {.expect_offset = UINT64_MAX, .expect_block = ix->blocks, .resume_at = start, .newly = 0};
    while (st.resume_at < end && !(cancel && *cancel)) {
        const uint64_t pos = st.resume_at;
        const uint64_t base = pos >= bs ? pos - bs : 0;
        const uint64_t stop = end - pos > SCAN_WINDOW ? pos + SCAN_WINDOW : end;
        const uint64_t need = stop - 1 + context - base;
        const uint64_t avail = length - base < need ? length - base : need;
        // Past the seed's end the window is zeros, as zsync pads it; a seed that shrank meanwhile ends here.
        const uint64_t got = read_at(fd, buf, avail, base);
        if (got < avail) break;
        memset(buf + got, 0, (size_t)(need - got));
        scan_range(ix, buf, pos - base, stop - base, base, seed_id, found, &st, progress, cancel);
    }
    free(buf);
    progress_store(progress, end);
    return st.newly;
}

uint64_t mw_block_verify_fd(const mw_block_index *ix, int fd, uint64_t length, uint32_t first, uint32_t count,
                            uint16_t seed_id, uint64_t *found, uint64_t *progress, const int *cancel) {
    if (!ix || first >= ix->blocks) return 0;
    if (count > ix->blocks - first) count = ix->blocks - first;
    const uint64_t bs = ix->block_size;
    const uint32_t per_read = (uint32_t)(SCAN_WINDOW / bs) > 0 ? (uint32_t)(SCAN_WINDOW / bs) : 1;
    uint8_t *buf = malloc((size_t)(per_read * bs));
    if (!buf) return 0;
    uint64_t newly = 0;
    for (uint32_t b0 = first; b0 < first + count; b0 += per_read) {
        if (cancel && *cancel) break;
        const uint32_t n = first + count - b0 < per_read ? first + count - b0 : per_read;
        const uint64_t offset = (uint64_t)b0 * bs;
        if (offset >= length) break;
        const uint64_t want = length - offset < (uint64_t)n * bs ? length - offset : (uint64_t)n * bs;
        const uint64_t got = read_at(fd, buf, want, offset);
        // The last block is compared zero-padded, as zsyncmake summed it; a file cut short reads as zeros.
        memset(buf + got, 0, (size_t)((uint64_t)n * bs - got));
        progress_store(progress, offset);
        for (uint32_t k = 0; k < n; k++) {
            const uint32_t b = b0 + k;
            if (found[b] != MW_BLOCK_NOT_FOUND) continue;
            const uint8_t *block = buf + (uint64_t)k * bs;
            uint8_t digest[16];
            mw_md4(block, (size_t)bs, 0, digest);
            if (memcmp(digest, ix->strong + (size_t)b * 16, (size_t)ix->strong_length) != 0) continue;
            if ((mw_rsum(block, (size_t)bs) & ix->weak_mask) != ix->weak[b]) continue;
            newly += record(found, b, seed_id, (uint64_t)b * bs);
        }
    }
    free(buf);
    progress_store(progress, length);
    return newly;
}
