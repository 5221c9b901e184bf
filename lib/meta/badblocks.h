/* md's per-member bad-block log (md-format.md 1.7): pure functions between
 * the on-disk log area and a sorted, merged list of sector ranges.
 *
 * On disk: bblog_size sectors at super_offset + bblog_offset, made of LE
 * u64 entries (start << 10) | len, start and len in units of
 * 512 << bblog_shift bytes, start an absolute member sector (data_offset
 * included), len 1..1023 (md writes at most 512), and an entry of all 0xff
 * bytes ending the list. md reads the log only while feature bit
 * MD_FEATURE_BAD_BLOCKS is set: without it the list is empty whatever the
 * area holds (md leaves a new member's area zeroed).
 *
 * In memory: ranges in 512-byte sectors, sorted, non-overlapping and not
 * touching (adjacent ranges are merged), every bound a multiple of the unit
 * (1 << shift sectors). */
#ifndef URAID_META_BADBLOCKS_H
#define URAID_META_BADBLOCKS_H

#include <stddef.h>
#include <stdint.h>

#define MD_BB_MAX_RANGES 512     /* the kernel keeps one page: 512 entries */
#define MD_BB_ENTRY_MAX_LEN 512  /* units per entry md writes */
#define MD_BB_MAX_LOG_BYTES 4096 /* md reads at most one page of log */

struct md_bb_range {
    uint64_t start;              /* absolute member sector */
    uint64_t len;                /* sectors, > 0 */
};

struct md_bblist {
    uint32_t count;
    uint8_t shift;               /* unit = 1 << shift sectors */
    struct md_bb_range r[MD_BB_MAX_RANGES];
};

/* An empty list with the given unit shift (0..9; md uses 0). */
void md_bb_init(struct md_bblist *l, uint8_t shift);

/* Decodes the log area (area_bytes, a multiple of 8; only the first
 * MD_BB_MAX_LOG_BYTES are read, as md does) into *l, merging overlaps.
 * Entries of length 0 are skipped (md ignores them too, and a zeroed area
 * is all such entries). Returns 0, -EINVAL for a shift above 9 or a range
 * past 2^64, or -ENOSPC for more than MD_BB_MAX_RANGES separate ranges. */
int md_bb_decode(const uint8_t *area, size_t area_bytes, uint8_t shift, struct md_bblist *l);

/* Number of log entries l needs (ranges longer than 512 units take several). */
uint32_t md_bb_entries_needed(const struct md_bblist *l);

/* Encodes l into area (area_bytes, a multiple of 8): the entries, then 0xff
 * to the end. Returns the number of entries written, or -ENOSPC when they
 * do not fit (in area_bytes or in md's one-page limit), or -EINVAL for a
 * start beyond the 54-bit field. */
int md_bb_encode(const struct md_bblist *l, uint8_t *area, size_t area_bytes);

/* Records [start, start + len) sectors as bad. The range is widened to
 * whole units (a partly bad unit is bad) and merged with its neighbours.
 * Returns 0, -EINVAL for len 0 or overflow, -ENOSPC when the list is full
 * (l is then unchanged). */
int md_bb_add(struct md_bblist *l, uint64_t start, uint64_t len);

/* Forgets [start, start + len) sectors (after a successful rewrite). Only
 * whole units inside the range are cleared. Returns 0, -EINVAL for len 0
 * or overflow, -ENOSPC when splitting a range would overflow the list (l
 * is then unchanged). */
int md_bb_clear(struct md_bblist *l, uint64_t start, uint64_t len);

/* 1 if any sector of [start, start + len) is listed, else 0. With a match,
 * *first_bad and *bad_len (if not NULL) give the first listed range that
 * overlaps, clipped to the query. */
int md_bb_check(const struct md_bblist *l, uint64_t start, uint64_t len, uint64_t *first_bad,
                uint64_t *bad_len);

#endif
