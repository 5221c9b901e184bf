/* Reads and writes of an array in mid-reshape (reshape_io.c) and the
 * reshape job that moves its stripes while it serves (reshape_job.c).
 *
 * The open array is the new geometry (every member, the new data offset);
 * rs->old is the old geometry (the old members at the old data offset), an
 * array of its own that shares the members. A request is addressed as md's
 * raid5.c make_request addresses it, with two positions (array sectors on
 * new stripe boundaries, safe <= progress):
 *   sector <  safe      the new geometry (md's reshape_safe: moved, and the
 *                       position on disk says so);
 *   sector >= progress  the old geometry (md's reshape_progress: not moved,
 *                       and not in the window being moved);
 *   in between          the request waits (md retries it) until the next
 *                       checkpoint moves safe past it: those stripes are
 *                       being moved, or were moved but a restart would
 *                       still read them in the old geometry.
 * The job moves progress ahead before a window and waits for the old-
 * geometry requests that overlap the window to end (the window lock). */
#ifndef URAID_ARRAY_RESHAPE_IO_H
#define URAID_ARRAY_RESHAPE_IO_H

#include "array/array.h"
#include "reshape_geom.h"

/* An old-geometry request in flight (on its caller's stack). */
struct rs_req {
    uint64_t s, e;
    int write;
    struct rs_req *next;
};

struct array_reshape {
    struct reshape_geom g;
    uint64_t old_off;          /* every member's data offset in the old geometry */
    struct uraid_array *old;   /* the old geometry */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t safe, progress;   /* under mu */
    int want_ckpt;             /* a request waits for safe to move */
    int q_recovering;          /* RAID-5 -> 6 restripe: the new Q member's slot, in sync below the position
                                * (md's recovery_offset follows it), unused by the old geometry; else -1 */
    int then_level;            /* a level change's restripe: at its end the array is taken over as this
                                * level (RAID-6 in a -6 layout -> 5, parity-last -> 4); 0: none. Memory
                                * only, as mdadm's: a restart ends the restripe at the level it has */
    int then_raid0;            /* a RAID-0's grow (a RAID-4 missing its parity, its first new member in the
                                * old parity slot): at its end the array is taken back to RAID-0 of the data
                                * members (md's raid0_takeover_raid45, as mdadm's grow ends it) */
    struct rs_req *inflight;   /* old-geometry requests running, under mu */
    /* Under mu: the array sectors of the old stripes the job's window reads
     * beyond the window (an old stripe straddling its edge): old-geometry
     * requests there wait while the window is copied, since a degraded copy
     * rebuilds a lost chunk from the whole old stripe (P, Q and its other
     * data); empty when hold_lo == hold_hi. */
    uint64_t hold_lo, hold_hi;
    /* Under mu: the array sectors of the old stripes the job's read-ahead
     * read for its next window (whole old stripes, as hold_lo/hold_hi), and
     * whether an old-geometry write overlapped them since the reads went out
     * (its data may be missing from what was read); empty when equal. */
    uint64_t ahead_lo, ahead_hi;
    int ahead_spoiled;
};

/* Passed as the write buffer of array_reshape_request: write zeroes. */
extern const uint8_t array_reshape_zeroes[1];

/* The request paths of one geometry (rw.c): what uraid_read and
 * uraid_write do on an array that is not reshaping. */
int array_read_plain(struct uraid_array *a, void *buf, size_t len, uint64_t offset);
int array_write_plain(struct uraid_array *a, const uint8_t *buf, size_t len, uint64_t offset);

/* One user request on a reshaping array (rbuf: a read; else wbuf, or
 * array_reshape_zeroes), split between the geometries. Caller holds
 * geom_lock for reading. */
int array_reshape_request(struct uraid_array *a, void *rbuf, const uint8_t *wbuf, size_t len, uint64_t offset);

/* At open, after the members are placed: an array whose superblocks say
 * RESHAPE_ACTIVE becomes the new geometry with the old one beside it
 * (0 when it does not reshape; a refusal names what is not supported). */
int array_reshape_open(struct uraid_array *a, int missing, char *why, size_t whylen);

/* The old geometry from the array as it is (before a reshape starts, or
 * at open): the first g->from.raid_disks slots at data offset old_off. */
int array_reshape_new(struct uraid_array *a, const struct reshape_geom *g, uint64_t old_off, uint64_t pos,
                      struct array_reshape **out);
void array_reshape_free(struct array_reshape *rs);

/* The job's side of the window lock: progress moves to end and the call
 * returns once no old-geometry request overlaps [pos, end) or the old
 * stripes that straddle its edges (held until array_reshape_window_end). */
void array_reshape_window(struct uraid_array *a, uint64_t pos, uint64_t end);
void array_reshape_window_end(struct uraid_array *a);
/* The job's read-ahead (reshape_copy.c) is about to read the old rows of
 * array sectors [pos, end): the old-geometry writes there are watched from
 * now on, those in flight included. _kept, once the next window is locked
 * (array_reshape_window): 1 when none overlapped them (what was read is
 * what the window must copy), 0 when the rows are to be read again; the
 * watch ends. */
void array_reshape_ahead(struct uraid_array *a, uint64_t pos, uint64_t end);
int array_reshape_ahead_kept(struct uraid_array *a);
/* A checkpoint is on disk at pos: requests below it go to the new geometry. */
void array_reshape_safe(struct uraid_array *a, uint64_t pos);
/* The job ended without recording where it got to (a checkpoint failed):
 * progress goes back to safe. Nothing was written in the old rows of the
 * stripes in between (the safety rule) and no request wrote them (they
 * waited), so the old geometry still holds them; the waiters go there. */
void array_reshape_idle(struct uraid_array *a);
/* 1 (and the flag cleared) when a request waits for a checkpoint. */
int array_reshape_wanted(struct uraid_array *a);

/* Member m of the new geometry failed: the old geometry stops using it too. */
void array_reshape_member_failed(struct uraid_array *a, int m);

/* A level change on a served array (reshape_level_online.c decides it,
 * reshape_online.c makes it): the takeover that comes first (from: the
 * array as md's takeover leaves it, moving no data), then either nothing
 * more (takeover) or the restripe within from.level to the new chunk and
 * layout, and at its end the takeover to then_level (0: none). */
struct online_level {
    struct layout_geom from;
    int takeover;
    int q_new;                 /* the one added member is from's Q, recovered (RAID-5 -> 6) */
    int then_level;
};

/* uraid_grow_online_shrink with the layout as a number, and lv (NULL:
 * within the level). N counts from's members; keep is --array-size. */
int array_grow_online(struct uraid_array *a, int N, uint32_t chunk, int layout, const char *const *added, int nadd,
                      uint64_t keep, const struct online_level *lv, char *why, size_t whylen);

/* The served array taken over as geometry `to` (same chunk and data
 * members): the superblock template, the geometry, the parity count; the
 * slots past to->raid_disks (RAID-6's Q) become spares. Caller holds
 * geom_lock for writing (no request in flight) and meta_lock, and writes
 * the superblocks after. (reshape_level_online.c) */
void array_takeover_locked(struct uraid_array *a, const struct layout_geom *to);

/* A served RAID-0 gaining members (grow_raid0_online.c): taken over as a
 * RAID-4 missing its parity, the reshape recorded and its job started. 0
 * or a refusal (nothing written) with why set. */
int array_grow_raid0_online(struct uraid_array *a, int N, uint32_t chunk, const char *const *added, int nadded,
                            char *why, size_t whylen);
/* The same RAID-0 grow asked again of a served RAID-4 missing its parity
 * (N its data members, every new member named a member: a grow whose end
 * was written but not its takeover back): 1 when it is that case; then
 * _back_online takes it back to RAID-0 (one superblock write, no request in
 * flight), as the offline grow does. */
int array_grow_raid0_due(const struct uraid_array *a, int N, const char *const *added, int nadded);
int array_grow_raid0_back_online(struct uraid_array *a, char *why, size_t whylen);
/* The end of a served RAID-0 grow: the RAID-4 without parity taken back to
 * a RAID-0 of its data members, its zones built. Caller holds geom_lock for
 * writing and meta_lock, and writes the superblocks after. */
int array_raid0_back_locked(struct uraid_array *a, char *why, size_t whylen);

/* Headroom before data_offset a member's metadata leaves (reshape.c):
 * the superblock's 36 KiB, the bad-block log and the write-intent bitmap
 * (bitmap_bytes: its header and bits; 0 when there is none). */
uint64_t reshape_headroom(const struct md_sb *sb, uint64_t bitmap_bytes);
/* Room past a member's data beyond the per-member size (reshape.c). */
uint64_t reshape_tailroom(const struct md_sb *sb, uint64_t size);

#endif
