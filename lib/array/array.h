/* Private state of an open array. The public API is in include/uraid.h.
 *
 * Two state machines live here, written in the form of SQLite's pager.c:
 * each state, the transitions out of it with the function that makes
 * them, and what holds while in it. array_check_invariants (state.c)
 * checks the invariants in debug builds (without NDEBUG) before every
 * superblock write, the point every transition passes.
 *
 * ARRAY (whole-array flags: dirty, opened_dirty, the degraded count):
 *   CLEAN      resync_offset = MaxSector on disk; no write since open.
 *              -> DIRTY: the first write (array_mark_dirty writes
 *                 resync_offset = 0 to every member before the write goes
 *                 out). Invariant: !dirty.
 *   DIRTY      resync_offset = 0 on disk; writes may be in flight.
 *              -> CLEAN: uraid_close (resync_offset = MaxSector, events + 1),
 *                 unless opened dirty and not yet resynced.
 *              Invariant: dirty && !readonly.
 *   OPENED DIRTY  found dirty at open (the last process died with writes
 *              in flight): parity may disagree with data where writes were
 *              in flight; stays dirty on disk until the resync job ends
 *              (resync_finish clears opened_dirty). md refuses to start it
 *              degraded unless forced. Invariant: dirty.
 *   DEGRADED   some slot not IN_SYNC (orthogonal to the above): reads
 *              rebuild, writes leave the slot out and mark the stripe in
 *              degraded_written. Invariant: slots not IN_SYNC <= nparity
 *              (array_member_failed refuses the failure that would break it).
 *   With a write-intent bitmap, the dirty chunks (wibitmap.c) bound what a
 *   resync of an OPENED DIRTY array walks.
 *
 * MEMBER SLOT (slot[s].state; extra[] holds the members in no slot):
 *   IN_SYNC     dev != NULL, serves every sector.
 *               -> FAULTY: an I/O error or vanished member with redundancy
 *                  left (array_member_failed), or `fail` (array_manage_fail).
 *               -> (old member to extra[] as FAULTY, the copy IN_SYNC):
 *                  the end of a replace (replace_finish).
 *   REBUILDING  dev != NULL, valid below `recovered` only (slot_ok_upto);
 *               recovered <= member_sectors and only grows while the job
 *               runs. -> IN_SYNC: the job's end (rebuild_finish);
 *               -> FAULTY: the new member fails (array_member_failed).
 *   FAULTY      dev may still be open (its good chunks serve as a last
 *               resort, rows.c); never read or written by requests.
 *               -> MISSING: `remove` (array_manage_remove);
 *               -> REBUILDING: a spare takes the slot (rebuild_prepare,
 *                  through slot_publish under every stripe lock).
 *   MISSING     no member, or a removed one kept open until close (requests
 *               in flight may still hold its pointer, manage.c); never
 *               read or written. -> REBUILDING: as from FAULTY.
 *   In extra[]: SPARE (can take a slot), STALE (its events lag: left out
 *   at open, usable as a spare), FAULTY (retired); never IN_SYNC or
 *   REBUILDING. A slot's dev_roles entry names the slot while it is
 *   IN_SYNC or REBUILDING. */
#ifndef URAID_ARRAY_H
#define URAID_ARRAY_H

#include <pthread.h>

#include "array/job.h"
#include "stripe/stripe.h"
#include "array/wibitmap.h"
#include "io/engine.h"
#include "layout.h"
#include "member/member.h"
#include "meta/badblocks.h"
#include "meta/superblock.h"
#include "linear.h"
#include "raid0.h"
#include "raid10.h"
#include "uraid.h"

struct array_slot {
    struct member *dev;        /* NULL when the slot is missing or failed */
    struct md_sb sb;           /* this member's superblock (valid when dev or stale) */
    enum uraid_member_state state;
    uint64_t data_offset;      /* sectors */
    struct md_bblist *badblocks; /* md's bad-block log, NULL when empty */
    struct member *fault;      /* the fault layer under dev (member_sim), or NULL */
    uint64_t recovered;        /* REBUILDING: member sectors [0, recovered) are valid (atomic) */
    /* The failed member this slot's rebuild replaces, still open: its
     * chunks of stripes not written since it failed are good, and serve
     * as a last resort when a stripe has too many other blocks unreadable. */
    struct member *old_dev;
    uint64_t old_data_offset;
};

/* Bad-block lists replaced while readers may still look at them (badsector.c). */
struct bb_retired {
    struct md_bblist *list;
    struct bb_retired *next;
};

struct uraid_array {
    struct layout_geom geom;
    struct raid0_zones *r0;    /* RAID-0: its zones (members may differ in size); NULL otherwise */
    struct raid10_geom *r10;   /* RAID-10: where the copies lie; NULL otherwise */
    struct linear_geom *lin;   /* linear: where each member's data area starts; NULL otherwise */
    int k;                     /* data blocks per stripe */
    int nparity;               /* 0, 1 or 2 */
    uint64_t member_sectors;   /* superblock "size": data sectors used per member
                                * (RAID-0: by the largest member) */
    uint64_t size_sectors;     /* array */
    int readonly;
    int dirty;                 /* resync_offset = 0 is on disk */
    int dirty_partial;         /* dirty, but the superblocks say "in sync below resync_from" (a grown
                                * size's record, resize.c): the first write still says 0 */
    int opened_dirty;          /* found dirty at open: stays dirty until resynced */
    uint64_t resync_from;      /* opened dirty: the resync_offset found (md's checkpoint: in sync below it) */
    int sb_written;            /* superblocks written since open (roles are current) */
    char *added_sim;           /* the simulation layers every member was opened with (one spec for all),
                                * which members added at run time get too; NULL: none, or not one spec */
    struct md_sb sb;           /* the array-wide template (highest events) */

    struct array_slot slot[URAID_MAX_MEMBERS];     /* by raid slot, raid_disks entries */
    int nextra;                                    /* spares and stale members, for info */
    struct array_slot extra[URAID_MAX_MEMBERS];

    struct io_engine *io;      /* parallel member I/O */
    struct stripe_locks locks; /* writers of one stripe are serialised */
    struct stripe_pool *pool;  /* stripe workers, started by the first job that wants them (array_stripe_pool) */
    struct array_ra *ra;       /* RAID-4/5/6 streams' read-ahead (readahead.c), NULL when it could not start */
    struct stripe_gather *gather; /* atomic: RAID-4/5/6 partial stripes gathered (stripe/gather.c), made at the first write */
    int gather_off;               /* atomic: gathering does not apply (gather_create said NULL) */
    int writes_in_flight;         /* atomic: user writes inside uraid_write (gather.c: may a held piece wait?) */
    struct stripe_cache *scache;  /* atomic: recently written stripes' blocks (stripe/cache.c), made at the first write */
    int scache_off;               /* atomic: no cache (off, or a reshape since the open) */
    struct uraid_counters counters; /* updated with atomics */
    int rmw_level;             /* atomic: URAID_RMW_*, read as each stripe is planned */
    int corrected_unsaved;     /* cnt_corrected_read changed since the last superblock write */
    pthread_mutex_t meta_lock; /* superblock template and member state changes */
    pthread_mutex_t dirty_lock; /* one writer marks the array dirty; the others wait for it */

    uint64_t user_requests;    /* atomic: reads and writes served, so background work can yield */
    int auto_rebuild;          /* the monitor runs: background maintenance as md does */
    int no_spare_rebuild;      /* ... but no recovery onto spares by itself */
    int no_auto_resync;        /* ... and no resync of a dirty array by itself */
    uint64_t sync_speed_max_kib, sync_speed_min_kib;
    /* REPLACE: the copy under way of slot replace_source (-1: none) onto
     * replacement; member writes to the source below replacement.recovered
     * are mirrored onto it (array_run_ops). */
    int replace_source;
    int replacement_failed;
    struct array_slot replacement;
    struct bb_retired *bb_retired; /* freed at close */
    /* Slot swaps (a spare taking a slot, a replacement taking over) bump it
     * to odd before and to even after, under every stripe lock; readers that
     * take no lock (direct reads) redo a batch during which it moved. */
    uint32_t slots_gen;
    /* auto_rebuild: a thread that starts jobs when the I/O path, which holds
     * stripe locks, reports a failure (array_kick_monitor) */
    pthread_t mon;
    int mon_started, mon_kick, mon_stop, mon_joined;
    pthread_mutex_t mon_mu;
    pthread_cond_t mon_cv;
    /* One bit per stripe: written while some slot was not in sync, so a
     * failed member's old chunk of it is stale (see array_slot.old_dev). */
    uint64_t *degraded_written;
    uint64_t nstripes;
    pthread_mutex_t job_lock;  /* starting, waiting for and reading the job */
    struct array_job job;
    char *event_program;       /* run for every event (events.c), or NULL; set at open */
    struct wibitmap *bitmap;   /* md's write-intent bitmap (wibitmap.c), NULL when none */
    struct ppl_log *ppl;       /* md's partial parity log (lib/stripe/ppl.c), NULL when the policy is not ppl */
    /* A reshape in progress (reshape_io.c): this array is the new geometry,
     * rs->old the old one; NULL when none. Set and cleared only with
     * geom_lock held for writing; every user request holds it for reading. */
    struct array_reshape *rs;
    pthread_rwlock_t geom_lock;
    /* The old geometry of a reshape is an array of its own that shares the
     * members: parent is the array it belongs to (it writes no superblock
     * itself: failures and superblocks go to the parent). */
    struct uraid_array *parent;
};

/* Reports an event with mdadm --monitor's name (Fail, FailSpare,
 * SpareActive, DegradedArray, RebuildStarted, RebuildFinished): logged, and
 * the event program run in the background. member and detail may be NULL.
 * Never blocks. (events.c) */
void array_event(struct uraid_array *a, const char *event, const char *member, const char *detail);
/* Waits (at most 10 s) for event programs still running. (events.c) */
void array_events_drain(void);

/* Sets up and tears down what the data path needs (I/O engine, stripe
 * locks, the meta lock). (state.c) */
int array_runtime_init(struct uraid_array *a, const struct uraid_open_params *p);
void array_runtime_fini(struct uraid_array *a);

/* The array's stripe workers, started at the first call; NULL when they
 * cannot start (callers then work alone). (state.c) */
struct stripe_pool *array_stripe_pool(struct uraid_array *a);

/* Fills p with n random bytes (UUIDs): 0 or a negative errno. (create.c) */
int array_random_bytes(uint8_t *p, size_t n);

/* Debug builds: aborts with the broken invariant when the state machines
 * above are violated. Caller holds meta_lock. (state.c) */
void array_check_invariants(const struct uraid_array *a);

/* 0, or -EINVAL/-ENOSPC for a byte range that is unaligned or outside. (state.c) */
int array_range_ok(const struct uraid_array *a, size_t len, uint64_t offset);

/* Member m failed an I/O: mark it faulty (superblocks of the others) and
 * return 0 if the level has redundancy left for it, else log and return
 * -EIO without marking anything. (state.c) */
int array_member_failed(struct uraid_array *a, int m, int err, const char *what);

/* Member management while open, for the control socket (manage.c): name
 * is a path as given at open or a raid slot number. 0 or a negative errno
 * with one line in why: -ENODEV not a member, -EBUSY beyond redundancy
 * (fail) or still active (remove), -EINVAL not active (fail), -EEXIST
 * already a member or another array's (add), -ENOSPC too small (add). */
int array_manage_fail(struct uraid_array *a, const char *name, char *why, size_t whylen);
/* A served RAID-1 gaining mirrors (grow_mirrors.c): the new members added
 * as spares, raid_disks = N with no request in flight, their recovery
 * started. 0 or a refusal (nothing written) with why set. */
int array_grow_mirrors_online(struct uraid_array *a, int N, const char *const *added, int nadded, char *why,
                              size_t whylen);
/* A served RAID-1 of 2 taken over as a RAID-5 of 2 (level 5) or back
 * (level 1), as md's raid5_takeover_raid1 / raid1_takeover
 * (grow_takeover_online.c): no data moved, the new level's superblocks
 * written with no request in flight. 0 or a refusal (nothing written). */
int array_takeover_mirror_parity_online(struct uraid_array *a, int level, int N, uint32_t chunk, const char *layout,
                                        int nadded, char *why, size_t whylen);
/* A served RAID-4, or RAID-5 parity-last, whole or missing only its
 * parity member, taken over as a RAID-0 of the data members (md's
 * raid0_takeover_raid45; grow_takeover_online.c). 0 or a refusal
 * (nothing written). */
int array_takeover_raid0_online(struct uraid_array *a, int N, uint32_t chunk, const char *layout, int nadded,
                                char *why, size_t whylen);
/* Before a takeover changes the level: the partial stripes kept in memory
 * (stripe/gather.c) written at the level they were acknowledged at;
 * caller holds geom_lock for writing. 0 or the error with why set
 * (grow_takeover_online.c). */
int array_flush_kept(struct uraid_array *a, char *why, size_t whylen);
/* A served RAID-0 of one zone taken over as a RAID-4 / RAID-5 parity-last
 * of N + 1, the parity slot missing; a new member given is added as a
 * spare and recovered into it (md's raid45_takeover_raid0, then mdadm's
 * add; grow_takeover_raid0.c). 0 or a refusal (nothing written). */
int array_takeover_from_raid0_online(struct uraid_array *a, int level, int N, uint32_t chunk, const char *layout,
                                     const char *const *added, int nadded, char *why, size_t whylen);
/* The same command again after a kill between the takeover and the add:
 * the array a RAID-4 / RAID-5 parity-last of `level` missing only its
 * parity member, one new member given and no spare there: it is added and
 * recovered into the parity slot. 1 when done so, 0 when the array is not
 * in that state (the caller goes on), or an error with why set. */
int array_takeover_raid0_carry_on(struct uraid_array *a, int level, int N, uint32_t chunk, const char *layout,
                                  const char *const *added, int nadded, char *why, size_t whylen);
/* A served linear array gaining members (grow_linear.c): each appended as
 * md's linear_add does (no data moved), with no request in flight. 0 or a
 * refusal (nothing written) with why set. */
int array_grow_linear_online(struct uraid_array *a, int N, const char *const *added, int nadded, char *why,
                             size_t whylen);
int array_manage_remove(struct uraid_array *a, const char *name, char *why, size_t whylen);
int array_manage_add(struct uraid_array *a, const char *path, char *why, size_t whylen);

/* A read error on member m was corrected by rewriting it. (state.c) */
void array_note_corrected_read(struct uraid_array *a, int m);

/* Writes every present member's superblock after `update` changed the
 * template; bumps events. (sbupdate.c) */
int array_write_superblocks(struct uraid_array *a);

/* One member outside the slots (a spare) gets the template's array-wide
 * fields at the events the last write gave, written and flushed alone
 * (sbupdate.c). 0 or a negative errno. */
int array_write_extra_superblock(struct uraid_array *a, struct array_slot *sl);

/* uraid_get_info for a caller that holds meta_lock. (info.c) */
void array_info_locked(struct uraid_array *a, struct uraid_array_info *info);

/* A member's bad-block log as its superblock sb locates it: *out NULL when
 * the superblock says it is empty, else a list the caller frees; 0, or a
 * negative errno with why naming the member. (sbio.c) */
int array_read_bblog(struct member *m, const struct md_sb *sb, struct md_bblist **out, char *why, size_t whylen);
/* Writes l into m's log area (sb's bblog fields; the area stays inside the
 * room md_sb_bblog_room allows) and sets or clears BAD_BLOCKS in sb; the
 * superblock itself is the caller's to write. 0 or a negative errno. */
int array_write_bblog(struct member *m, struct md_sb *sb, const struct md_bblist *l);

/* Where a new member of dev_sectors puts its superblock and data, as the
 * array whose member's superblock ref is keeps them: super_offset and
 * data_size into sb (1.2, 1.1: data from ref's data_offset to the end;
 * 1.0, 0.90: the superblock at the member's end, after the data and the
 * same tail ref keeps, bitmap and log). data_size 0: no room. (sbio.c) */
void array_place_member(struct md_sb *sb, const struct md_sb *ref, uint64_t dev_sectors);

/* A member added at run time (a spare, a grow's new member) opened for
 * writing, in the simulation layers the others were opened with
 * (added_sim; *fault gets its fault layer, NULL without). 0, or a
 * negative errno with why "cannot open PATH: ...". (array.c) */
int array_open_added(struct uraid_array *a, const char *path, struct member **dev, struct member **fault, char *why,
                     size_t whylen);

/* A new member's superblock and an empty bad-block log (create, add). (sbio.c) */
int array_write_new_member(struct member *m, const struct md_sb *sb);

/* At open, for a PPL array opened for writing: the log opened and, when
 * the array is dirty, replayed and the array recorded clean (md starts a
 * dirty, degraded array with a PPL); a damaged log leaves it dirty, and
 * refuses it (-EUCLEAN) when degraded (missing slots, named in gone)
 * unless force. (policy.c) */
int array_ppl_start(struct uraid_array *a, int missing, const char *gone, int force, char *why, size_t whylen);

/* Marks the array dirty on disk before its first write. (sbupdate.c) */
int array_mark_dirty(struct uraid_array *a);

/* 1 if two member names are one file or device (the same name, inode or
 * device number). (array.c) */
int array_same_file(const char *x, const char *y);
/* Finds `name` (a path as given at open, or a raid slot number) among the
 * present members: *slot >= 0 for a raid slot, else *extra >= 0; 0 or
 * -ENODEV (manage.c). Caller holds meta_lock. */
int array_find_member(const struct uraid_array *a, const char *name, int *slot, int *extra);

/* Reads one member's superblock in any md format; `why` names the member
 * on failure. _as looks only where `want` (enum md_format, MD_FMT_ANY or
 * MD_FMT_ANY1) keeps it. Two valid superblocks at two places: -ENOTUNIQ
 * with both named. (sbio.c) */
int array_read_superblock(struct member *m, struct md_sb *sb, char *why, size_t whylen);
int array_read_superblock_as(struct member *m, int want, struct md_sb *sb, char *why, size_t whylen);

/* Writes sb where and as its format says (super_offset, 1.x or 0.90);
 * -EINVAL when that is not where md looks on this member. (sbio.c) */
int array_write_superblock(struct member *m, const struct md_sb *sb);
/* sb encoded for member m into buf (MD_SB_BYTES) and the byte offset it
 * goes to: what array_write_superblock writes. 0 or a negative errno. */
int array_encode_superblock(struct member *m, const struct md_sb *sb, uint8_t *buf, uint64_t *offset);
/* sbs[i] written to devs[i] and flushed, all members at once (the
 * engine's batch); res[i] each one's 0 or negative errno. Returns 0 or
 * -ENOMEM (then every res is -ENOMEM). */
int array_write_superblock_set(struct uraid_array *a, struct member *const *devs, const struct md_sb *const *sbs,
                               int n, int *res);

/* mdadm's --metadata spellings into enum md_format; NULL -> MD_FMT_ANY.
 * 0 or -EINVAL with one line. (sbio.c) */
int array_parse_metadata(const char *text, int *format, char *why, size_t whylen);

/* Data sectors per member the array uses: sb->size, except RAID-0 where
 * mdadm writes 0 and the smallest member's data area (in whole chunks)
 * counts. (sbupdate.c) */
uint64_t array_member_sectors(const struct md_sb *sb, uint64_t smallest_member_sectors);

/* The slots holding members: raid_disks, or during a shrink (md's backwards
 * reshape, delta_disks < 0) the old count, the leaving members in the slots
 * past the new geometry's (the old geometry, reshape_io.h, reads them). */
static inline int array_nslots(const struct uraid_array *a)
{
    int old = (int)a->sb.raid_disks - a->sb.delta_disks;
    return (a->sb.feature_map & MD_FEATURE_RESHAPE_ACTIVE) && a->sb.delta_disks < 0 && a->geom.level >= 4 &&
                   a->geom.level <= 6 && old <= URAID_MAX_MEMBERS
               ? old
               : a->geom.raid_disks;
}

/* 1 if member sectors [start, start + len) past data_offset hold a block
 * md listed as bad: such rows are rebuilt from the other members. */
static inline int slot_has_bad(const struct array_slot *sl, uint64_t start, uint64_t len)
{
    const struct md_bblist *l = __atomic_load_n(&sl->badblocks, __ATOMIC_ACQUIRE);
    return l && l->count && md_bb_check(l, __atomic_load_n(&sl->data_offset, __ATOMIC_RELAXED) + start, len, NULL, NULL);
}

/* Slot usable for reads and writes of member sectors below end: in sync,
 * or being rebuilt and already past end. */
static inline int slot_ok_upto(const struct uraid_array *a, int s, uint64_t end)
{
    if (!__atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE))
        return 0;
    enum uraid_member_state st = __atomic_load_n(&a->slot[s].state, __ATOMIC_ACQUIRE);
    return st == URAID_MEMBER_IN_SYNC ||
           (st == URAID_MEMBER_REBUILDING && end <= __atomic_load_n(&a->slot[s].recovered, __ATOMIC_ACQUIRE));
}

/* Where writes to slot s of member sectors [start, end) stop: end when
 * it is in sync there, its rebuild checkpoint when that lies inside (the
 * rest is rebuilt later), start when it takes none of them. Callers hold
 * the range's stripe locks, so the checkpoint cannot move meanwhile. */
static inline uint64_t slot_writes_end(const struct uraid_array *a, int s, uint64_t start, uint64_t end)
{
    if (slot_ok_upto(a, s, end))
        return end;
    if (!__atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&a->slot[s].state, __ATOMIC_ACQUIRE) != URAID_MEMBER_REBUILDING)
        return start;
    uint64_t done = __atomic_load_n(&a->slot[s].recovered, __ATOMIC_ACQUIRE);
    return done > start ? done : start;
}

/* Set-up at open (raid10io.c): RAID-10's copies from the superblock's
 * size (nparity becomes raid_disks - 1: which sets of members it survives
 * array_survives_without says); linear's member table once the slots are
 * placed. ref names the member in messages. */
int array_open_raid10(struct uraid_array *a, uint64_t sb_size, const char *ref, char *why, size_t whylen);
int array_open_linear(struct uraid_array *a, const char *ref, char *why, size_t whylen);

/* 1 when the array keeps all its data with the slots not in sync and
 * slot `also` (-1: none) gone: at most nparity of them, and for RAID-10
 * md's enough() (raid10_survives). (raid10io.c) */
int array_survives_without(const struct uraid_array *a, int also);

/* With auto_rebuild: starts a recovery when a spare can fill a hole, or a
 * resync when the array was found dirty and is whole; quiet when there is
 * nothing to do. (rebuild.c) */
void array_maybe_auto_rebuild(struct uraid_array *a);

/* Asks the monitor thread to run array_maybe_auto_rebuild (callers that
 * may hold stripe locks, and every job's end); array_monitor_stop ends the
 * thread, array_monitor_destroy frees its lock once no job thread can kick
 * it any more. (job.c) */
void array_kick_monitor(struct uraid_array *a);
int array_monitor_start(struct uraid_array *a);
void array_monitor_stop(struct uraid_array *a);
void array_monitor_destroy(struct uraid_array *a);

/* Puts src into slot dst while readers without a lock may look at it:
 * the slot stops serving, its fields change one by one, then it serves in
 * src's state; slots_gen tells the readers. Under meta_lock and every
 * stripe lock. (rebuild.c) */
void slot_publish(struct uraid_array *a, struct array_slot *dst, const struct array_slot *src);

/* Slot usable for reads and writes. */
static inline int slot_ok(const struct uraid_array *a, int s)
{
    /* state changes under meta_lock while other threads do I/O */
    return __atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE) && __atomic_load_n(&a->slot[s].state, __ATOMIC_ACQUIRE) == URAID_MEMBER_IN_SYNC;
}

#endif
