/* Reshape geometry: restriping a RAID-4/5/6 array to more members, another
 * chunk size or another layout by moving data_offset, as mdadm 3.3+ and md
 * do without a backup file. Pure arithmetic: no I/O, no state, every call
 * thread-safe.
 *
 * Units: sectors (512 bytes). "Rows" are member sectors relative to a data
 * offset: old rows to the old data_offset, new rows to the new one. The new
 * data_offset is the old one minus `shift` on every member, so new row x
 * lies at old row x - shift on the disk. The reshape moves whole "units" of
 * U = max(old chunk, new chunk) rows (md's reshape_sectors): a unit of new
 * rows is U / new chunk new stripes and holds to_k * U array sectors.
 *
 * md's record (md-format.md 1.6, the reshape row of section 4):
 * reshape_position P is an array sector on a unit boundary (md's raid5_run
 * divides it by max chunk * new data disks); array sectors below P are in
 * the new geometry, the others in the old. The reshape runs forwards (from
 * sector 0) because the new stripe holds at least as much data per row
 * (to_k >= from_k), so the new rows written never pass the old rows read.
 *
 * Safety rule (md's raid5 reshape_request with min_offset_diff = -shift):
 * with P the position on disk, the old layout keeps the array sectors >= P
 * only in old rows >= reshape_old_safe_row(P); new rows may therefore be
 * written up to that row + shift and no further until a later position is
 * on disk. reshape_window() applies it.
 *
 * Backwards (md's RESHAPE_BACKWARDS: fewer data members, or a chunk or
 * layout change moved up): new data_offset = old + shift, so new row x is
 * old row x + shift. P starts at the new size (md's raid5_size with the
 * smaller of the two stripes) and counts down to 0: array sectors >= P are
 * in the new geometry, those below in the old. The new stripe holds at most
 * as much data per row (to_k <= from_k), so from the end down the new rows
 * written stay above the old rows read. Safety rule (md's reshape_request
 * with reshape_backwards and min_offset_diff = shift): the old layout keeps
 * the array sectors < P in old rows < reshape_old_safe_end(P); new rows
 * may be written down to that row - shift. */
#ifndef URAID_RESHAPE_GEOM_H
#define URAID_RESHAPE_GEOM_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

struct reshape_geom {
    struct layout_geom from, to; /* the same level (4, 5 or 6) */
    int from_k, to_k;            /* data blocks per stripe, to_k >= from_k */
    uint32_t unit;               /* rows moved as one: max(from, to chunk) */
    uint64_t member_sectors;     /* the superblock's size: data sectors per member */
    uint64_t shift;              /* |old data_offset - new data_offset| */
    int backwards;               /* the data moves up (new data_offset = old + shift), from the end down */
};

/* Fills g for restriping `from` to `to` (levels 4/5/6, the same level; at
 * least as many members and data blocks per stripe; something changed)
 * over members_sectors per member (a multiple of both chunks) with the
 * data moved down by shift sectors (at least one unit, a multiple of 8).
 * 0, or -EINVAL with one line in why. */
int reshape_geom_init(struct reshape_geom *g, const struct layout_geom *from, const struct layout_geom *to,
                      uint64_t member_sectors, uint64_t shift, char *why, size_t whylen);
/* The same in either direction: backwards allows fewer members and data
 * blocks (at least as many in the old stripe as in the new). */
int reshape_geom_init_dir(struct reshape_geom *g, const struct layout_geom *from, const struct layout_geom *to,
                          uint64_t member_sectors, uint64_t shift, int backwards, char *why, size_t whylen);

/* md's direction from a superblock's record: backwards when the member
 * count shrinks, or with the BACKWARDS bit when it stays (md's
 * super_1_validate); the data offset change is new_offset's sign. */
struct md_sb;
int reshape_sb_backwards(const struct md_sb *sb);
/* How far the record moves the data offset (|new_offset|), either way. */
uint64_t reshape_sb_shift(const struct md_sb *sb);

/* Where a reshape starts (forwards 0, backwards the new size) and ends. */
uint64_t reshape_begin(const struct reshape_geom *g);
uint64_t reshape_end(const struct reshape_geom *g);
/* The new data offset for old_off. */
uint64_t reshape_new_off(const struct reshape_geom *g, uint64_t old_off);
/* The end of the old rows that hold array sectors < pos (backwards'
 * safety bound): the old unit holding sector pos - 1, to its end. */
uint64_t reshape_old_safe_end(const struct reshape_geom *g, uint64_t pos);
/* Backwards: the first unit a window ending at pos may start at while ckpt
 * is on disk (units at or above it write only old rows no restart reads). */
uint64_t reshape_back_floor(const struct reshape_geom *g, uint64_t ckpt);

/* Array sectors before and after the reshape. */
uint64_t reshape_from_sectors(const struct reshape_geom *g);
uint64_t reshape_to_sectors(const struct reshape_geom *g);

/* Array sectors per unit of new rows (reshape positions are multiples of
 * it). The "stripes" of the functions below are these units. */
uint64_t reshape_stripe_data(const struct reshape_geom *g);
/* RAID-5 -> 6 restripe: the member sectors of the new Q member in sync at
 * array position pos (md's recovery_offset: the new rows below it). */
static inline uint64_t reshape_q_recovered(const struct reshape_geom *g, uint64_t pos)
{
    return pos / reshape_stripe_data(g) * g->unit;
}

/* Units in all. */
uint64_t reshape_stripes(const struct reshape_geom *g);

/* The old row below which the old layout holds only array sectors < pos
 * (and parity of stripes wholly below it): the first row of the old unit
 * that holds sector pos (md's here_old, in whole units as md counts). */
uint64_t reshape_old_safe_row(const struct reshape_geom *g, uint64_t pos);

/* How many units may be written from position pos (a unit boundary,
 * >= ckpt) while the position on disk is ckpt: the largest W with new
 * rows [pos / stripe_data * U, + W * U) ending at or below old
 * row reshape_old_safe_row(ckpt) + shift, capped at the stripes left and
 * at max_stripes. */
uint64_t reshape_window(const struct reshape_geom *g, uint64_t pos, uint64_t ckpt, uint64_t max_stripes);

/* The engine's next move from pos with ckpt on disk. Backwards, pos and
 * ckpt count down, and COPY's *stripes units end at pos (they start at
 * pos - *stripes * stripe_data). */
enum reshape_move {
    RESHAPE_DONE,       /* pos is the end */
    RESHAPE_CHECKPOINT, /* record pos on every member first (*stripes = 0) */
    RESHAPE_COPY,       /* copy *stripes new stripes starting at pos */
};
/* A full window of max_stripes when the checkpoint allows it; else a
 * checkpoint when pos is ahead of ckpt (as md insists on a superblock
 * update once the safe position lags the write position); else the
 * window that fits (at least one stripe, as shift >= one chunk). */
enum reshape_move reshape_next(const struct reshape_geom *g, uint64_t pos, uint64_t ckpt, uint64_t max_stripes,
                               uint64_t *stripes);

/* 0 when md can take over a reshape recorded at pos (its raid5_run rules:
 * a new stripe boundary, inside the array, and the new rows behind the old
 * ones by less than the shift), else -EINVAL with one line in why. */
int reshape_position_ok(const struct reshape_geom *g, uint64_t pos, char *why, size_t whylen);

/* The shift chosen for a grow: 4 chunks, or as many whole chunks as the
 * head room holds when that is less; 0 when the head room is below one
 * chunk. reshape_min_shift() is that one chunk. Pass the unit (the larger
 * chunk) for a chunk change. */
uint64_t reshape_choose_shift(uint64_t headroom, uint32_t chunk_sectors);
static inline uint64_t reshape_min_shift(uint32_t chunk_sectors) { return chunk_sectors; }

#endif
