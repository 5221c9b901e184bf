/* Private state of an open array. The public API is in include/uraid.h.
 *
 * Array state machine (issue 3: one process, single open):
 *   CLEAN --first write--> DIRTY (resync_offset = 0 written to every member
 *                                 before the write is issued)
 *   DIRTY --uraid_close--> CLEAN (resync_offset = MaxSector, events + 1)
 * An array found DIRTY at open was not closed: parity may be stale where
 * writes were in flight. md refuses DIRTY + degraded unless forced. */
#ifndef URAID_ARRAY_H
#define URAID_ARRAY_H

#include <pthread.h>

#include "layout.h"
#include "member/member.h"
#include "meta/badblocks.h"
#include "meta/superblock.h"
#include "uraid.h"

struct array_slot {
    struct member *dev;        /* NULL when the slot is missing or failed */
    struct md_sb sb;           /* this member's superblock (valid when dev or stale) */
    enum uraid_member_state state;
    uint64_t data_offset;      /* sectors */
    struct md_bblist *badblocks; /* md's bad-block log, NULL when empty */
};

struct uraid_array {
    struct layout_geom geom;
    int k;                     /* data blocks per stripe */
    int nparity;               /* 0, 1 or 2 */
    uint64_t member_sectors;   /* superblock "size": data sectors used per member */
    uint64_t size_sectors;     /* array */
    int readonly;
    int dirty;                 /* resync_offset = 0 is on disk */
    int opened_dirty;          /* found dirty at open: stays dirty until resynced */
    int sb_written;            /* superblocks written since open (roles are current) */
    struct md_sb sb;           /* the array-wide template (highest events) */

    struct array_slot slot[URAID_MAX_MEMBERS];     /* by raid slot, raid_disks entries */
    int nextra;                                    /* spares and stale members, for info */
    struct array_slot extra[URAID_MAX_MEMBERS];

    /* Issue 3's data path is serial: one lock around every request. The I/O
     * engine (issue 4) replaces it with per-stripe locks. */
    pthread_mutex_t io_lock;
    pthread_mutex_t meta_lock;
};

/* Writes every present member's superblock after `update` changed the
 * template; bumps events. (array.c) */
int array_write_superblocks(struct uraid_array *a);

/* Marks the array dirty on disk before its first write. (array.c) */
int array_mark_dirty(struct uraid_array *a);

/* Reads one member's superblock; `why` names the member on failure. (array.c) */
int array_read_superblock(struct member *m, struct md_sb *sb, char *why, size_t whylen);

/* Data sectors per member the array uses: sb->size, except RAID-0 where
 * mdadm writes 0 and the smallest member's data area (in whole chunks)
 * counts. (array.c) */
uint64_t array_member_sectors(const struct md_sb *sb, uint64_t smallest_member_sectors);

/* Regenerates parity for member sectors [start, start + nsec). (rw.c) */
int array_resync_range(struct uraid_array *a, uint64_t start, uint32_t nsec);

/* 1 if member sectors [start, start + len) past data_offset hold a block
 * md listed as bad: such rows are rebuilt from the other members. */
static inline int slot_has_bad(const struct array_slot *sl, uint64_t start, uint64_t len)
{
    return sl->badblocks && md_bb_check(sl->badblocks, sl->data_offset + start, len, NULL, NULL);
}

/* Slot usable for reads and writes. */
static inline int slot_ok(const struct uraid_array *a, int s)
{
    return a->slot[s].dev && a->slot[s].state == URAID_MEMBER_IN_SYNC;
}

#endif
