/* md bad-block log codec and range list (md-format.md 1.7). */
#include "meta/badblocks.h"

#include <errno.h>
#include <string.h>

#include "meta/le.h"

#define BB_TERMINATOR UINT64_MAX
#define BB_START_BITS 54          /* 64 - the 10-bit length field */
#define BB_MAX_SHIFT 9            /* unit of 256 KiB; anything larger is nonsense */

void md_bb_init(struct md_bblist *l, uint8_t shift)
{
    l->count = 0;
    l->shift = shift;
}

/* Inserts [s, e) (already unit-aligned) into the sorted list, merging it
 * with every range it overlaps or touches. Works on a copy-free plan: find
 * the first and last ranges it touches, then replace them by one. */
static int insert_range(struct md_bblist *l, uint64_t s, uint64_t e)
{
    uint32_t lo = 0;
    while (lo < l->count && l->r[lo].start + l->r[lo].len < s)
        lo++;                     /* ranges ending before s (not touching) */
    uint32_t hi = lo;
    while (hi < l->count && l->r[hi].start <= e) {
        if (l->r[hi].start < s)
            s = l->r[hi].start;
        if (l->r[hi].start + l->r[hi].len > e)
            e = l->r[hi].start + l->r[hi].len;
        hi++;                     /* ranges [lo, hi) merge into [s, e) */
    }
    if (hi == lo) {
        if (l->count >= MD_BB_MAX_RANGES)
            return -ENOSPC;
        memmove(&l->r[lo + 1], &l->r[lo], (l->count - lo) * sizeof(l->r[0]));
        l->count++;
    } else if (hi - lo > 1) {
        memmove(&l->r[lo + 1], &l->r[hi], (l->count - hi) * sizeof(l->r[0]));
        l->count -= hi - lo - 1;
    }
    l->r[lo].start = s;
    l->r[lo].len = e - s;
    return 0;
}

int md_bb_decode(const uint8_t *area, size_t area_bytes, uint8_t shift, struct md_bblist *l)
{
    md_bb_init(l, shift);
    if (shift > BB_MAX_SHIFT)
        return -EINVAL;
    if (area_bytes > MD_BB_MAX_LOG_BYTES)
        area_bytes = MD_BB_MAX_LOG_BYTES;
    for (size_t off = 0; off + 8 <= area_bytes; off += 8) {
        uint64_t e = le64_get(area + off);
        if (e == BB_TERMINATOR)
            break;
        uint64_t len = (e & 0x3ff) << shift;
        uint64_t start = (e >> 10) << shift;
        if (!len)
            continue;
        if (start + len < start)
            return -EINVAL;
        int rc = insert_range(l, start, start + len);
        if (rc)
            return rc;
    }
    return 0;
}

uint32_t md_bb_entries_needed(const struct md_bblist *l)
{
    uint64_t n = 0;
    uint64_t max = (uint64_t)MD_BB_ENTRY_MAX_LEN << l->shift;
    for (uint32_t i = 0; i < l->count; i++)
        n += (l->r[i].len + max - 1) / max;
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

int md_bb_encode(const struct md_bblist *l, uint8_t *area, size_t area_bytes)
{
    size_t cap = (area_bytes < MD_BB_MAX_LOG_BYTES ? area_bytes : MD_BB_MAX_LOG_BYTES) / 8;
    if (l->shift > BB_MAX_SHIFT)
        return -EINVAL;
    if (md_bb_entries_needed(l) > cap)
        return -ENOSPC;
    for (uint32_t i = 0; i < l->count; i++)
        if (((l->r[i].start + l->r[i].len - 1) >> l->shift) >> BB_START_BITS)
            return -EINVAL;
    memset(area, 0xff, area_bytes);
    size_t n = 0;
    for (uint32_t i = 0; i < l->count; i++) {
        uint64_t start = l->r[i].start >> l->shift;
        uint64_t units = l->r[i].len >> l->shift;
        while (units) {
            uint64_t take = units < MD_BB_ENTRY_MAX_LEN ? units : MD_BB_ENTRY_MAX_LEN;
            le64_put(area + 8 * n++, start << 10 | take);
            start += take;
            units -= take;
        }
    }
    return (int)n;
}

/* Rounds [start, start + len) out (widen = 1) or in (widen = 0) to whole
 * units; returns -EINVAL on overflow or len 0. */
static int unit_bounds(const struct md_bblist *l, uint64_t start, uint64_t len, int widen, uint64_t *s,
                       uint64_t *e)
{
    uint64_t unit = 1ull << l->shift;
    if (!len || start + len < start)
        return -EINVAL;
    uint64_t end = start + len;
    if (widen) {
        *s = start & ~(unit - 1);
        if (end & (unit - 1)) {
            if (end + unit < end)
                return -EINVAL;
            end = (end | (unit - 1)) + 1;
        }
        *e = end;
    } else {
        *s = (start + unit - 1) & ~(unit - 1);
        *e = end & ~(unit - 1);
        if (*s < start)           /* start rounded past 2^64 */
            *s = *e;
    }
    return 0;
}

int md_bb_add(struct md_bblist *l, uint64_t start, uint64_t len)
{
    uint64_t s, e;
    int rc = unit_bounds(l, start, len, 1, &s, &e);
    return rc ? rc : insert_range(l, s, e);
}

int md_bb_clear(struct md_bblist *l, uint64_t start, uint64_t len)
{
    uint64_t s, e;
    int rc = unit_bounds(l, start, len, 0, &s, &e);
    if (rc)
        return rc;
    if (s >= e)
        return 0;                 /* no whole unit inside */
    /* A range strictly containing [s, e) splits in two: the one case that
     * grows the list, so check room before changing anything. */
    for (uint32_t i = 0; i < l->count; i++) {
        struct md_bb_range *r = &l->r[i];
        if (r->start < s && r->start + r->len > e) {
            if (l->count >= MD_BB_MAX_RANGES)
                return -ENOSPC;
            memmove(&l->r[i + 1], &l->r[i], (l->count - i) * sizeof(l->r[0]));
            l->count++;
            uint64_t old_end = r->start + r->len;
            r->len = s - r->start;
            l->r[i + 1].start = e;
            l->r[i + 1].len = old_end - e;
            return 0;
        }
    }
    uint32_t out = 0;
    for (uint32_t i = 0; i < l->count; i++) {
        struct md_bb_range r = l->r[i];
        uint64_t rend = r.start + r.len;
        if (rend <= s || r.start >= e) {
            l->r[out++] = r;      /* untouched */
            continue;
        }
        if (r.start < s) {        /* keep the head */
            r.len = s - r.start;
            l->r[out++] = r;
        } else if (rend > e) {    /* keep the tail */
            r.start = e;
            r.len = rend - e;
            l->r[out++] = r;
        }                         /* else wholly cleared */
    }
    l->count = out;
    return 0;
}

int md_bb_check(const struct md_bblist *l, uint64_t start, uint64_t len, uint64_t *first_bad,
                uint64_t *bad_len)
{
    if (!len)
        return 0;
    uint64_t end = start + len < start ? UINT64_MAX : start + len;
    /* Binary search for the first range ending after start. */
    uint32_t lo = 0, hi = l->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (l->r[mid].start + l->r[mid].len <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == l->count || l->r[lo].start >= end)
        return 0;
    uint64_t s = l->r[lo].start > start ? l->r[lo].start : start;
    uint64_t e = l->r[lo].start + l->r[lo].len < end ? l->r[lo].start + l->r[lo].len : end;
    if (first_bad)
        *first_bad = s;
    if (bad_len)
        *bad_len = e - s;
    return 1;
}
