/* Growing an array that is not running: RAID-4/5/6 gain members (mdadm
 * --grow --raid-devices N --add NEW...) or change chunk or layout (--chunk,
 * --layout), restriped in the foreground; md's level changes (--level); recorded in every member's superblock exactly as md
 * records a reshape (RESHAPE_ACTIVE, NEW_OFFSET, reshape_position, ...), so
 * either uraid or md can carry on a reshape the other started. No backup
 * file: the data moves down into the head room before data_offset, as
 * mdadm 3.3+ does. docs/FORMAT.md says what is written when. */
#ifndef URAID_GROW_H
#define URAID_GROW_H

#include <stdint.h>

#include "uraid.h"

#ifdef __cplusplus
extern "C" {
#endif

struct uraid_grow_params {
    int raid_devices;        /* the new member count; 0 with resume_only */
    int resume_only;         /* --continue: carry on the reshape recorded on the members */
    /* Simulation layers (NULL or one spec per name: members first, then the
     * added ones; the syntax of uraid_open_params.member_sim). */
    const char *const *member_sim;
    /* Called after every window (may be NULL): array sectors of the new
     * geometry done and in all. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *ctx;
    const volatile int *stop; /* non-zero: checkpoint and return -EINTR */
    uint32_t checkpoint_ms;  /* the position goes to the superblocks at least this often; 0 = 1000 */
    /* mdadm --grow --chunk / --layout / --level (RAID-4/5/6; raid_devices
     * may then be 0 for the same count): 0, NULL, level_set 0 keep. */
    uint32_t chunk_sectors;
    const char *layout;      /* a name layout_from_name takes at the new level */
    int level_set, level;
    /* mdadm --grow --array-size: the array sectors the user keeps when a
     * reshape makes the array smaller (fewer members, or the member size
     * cut to make room). A shrink that would drop data past the new end is
     * refused unless this is given and at most the new size; 0: none. */
    uint64_t array_sectors;
};

struct uraid_grow_result {
    int resumed;             /* a reshape already on the members was carried on */
    uint64_t from_sectors;   /* the array's size before and after */
    uint64_t to_sectors;
    uint64_t start_position; /* array sector the run started at */
    uint64_t shift;          /* sectors data_offset moved (down; up when backwards) */
    int backwards;           /* md's backwards reshape: a shrink, the data moved up */
    int raid_devices;
    int appended;            /* 1: linear, the new members appended; 2: RAID-1, the new mirrors
                              * recovered; nothing restriped either way; 3: a level taken over
                              * (--level), the new member recovered (RAID-5 -> 6 with Q, RAID-0
                              * -> 4/5 with P); 4: a level taken over, nothing to recover;
                              * 5: a RAID-1's empty slots dropped (fewer mirrors) */
    int from_level, level;   /* the levels before and after */
};

/* Grows the array of `members` (every member, any order) by the `added`
 * members to p->raid_devices, or carries on the reshape recorded on the
 * members (the same command again: members and added as before, or
 * p->resume_only with every member in `members`). Returns 0 when the
 * reshape is complete; -EALREADY when the array already has the added
 * members in its p->raid_devices slots (the same grow run again after it
 * ended); -EINTR when stopped (its position is recorded: run
 * again to continue); -EINVAL, -ENOSPC, -EOPNOTSUPP, -EBUSY, ... with one
 * line in why for a refusal, which writes nothing: a level other than 4/5/6,
 * RAID-1 or linear (linear: the new members appended, nothing moved,
 * appended = 1), a level change md does not make, a chunk that does not
 * divide the member size,
 * N not larger, too few or too many new members, a new member too small,
 * too little head room before data_offset (the line says how much is
 * missing), a reshape in progress with other parameters, an array that is
 * degraded, dirty, or has a bitmap or a PPL. */
URAID_API int uraid_grow_members(const char *const *members, int nmembers, const char *const *added, int nadded,
                                 const struct uraid_grow_params *p, struct uraid_grow_result *res, char *why,
                                 size_t whylen);

/* Grows an open (served) RAID-5/6 array by the `added` members to
 * raid_devices while it serves: every check first (the same refusals as
 * uraid_grow_members, plus a job running: -EBUSY), nothing written on a
 * refusal; then the new members' superblocks, every member's with the
 * reshape at position 0, and the reshape job (URAID_JOB_RESHAPE in
 * uraid_job_status) moves the stripes while reads and writes go on. The
 * array keeps its old size until the job ends (as md does); a stop or a
 * kill leaves the position recorded, and the next uraid_open carries it on
 * (the monitor starts the job; reads and writes work either way). */
URAID_API int uraid_grow_online(struct uraid_array *a, int raid_devices, const char *const *added, int nadded,
                                char *why, size_t whylen);

/* The same with a chunk (sectors, 0 keep) and a layout (a name, NULL
 * keep) as well (mdadm --grow --chunk / --layout on a running RAID-4/5/6):
 * raid_devices may then be the array's count (no new members). The served
 * array is the new geometry from the start (reshape_io.h); the same
 * refusals as uraid_grow_members' for a chunk or layout. */
URAID_API int uraid_grow_online_geom(struct uraid_array *a, int raid_devices, uint32_t chunk_sectors,
                                     const char *layout, const char *const *added, int nadded, char *why,
                                     size_t whylen);

/* The same with array_sectors (mdadm's --array-size, what is kept): with
 * raid_devices smaller, a shrink while it serves (md's backwards reshape;
 * no new members). The array is the new size from the start; the room past
 * the members' data must hold one chunk (offline, uraid_grow_members cuts
 * the member size instead). The same refusals as uraid_grow_members'. */
URAID_API int uraid_grow_online_shrink(struct uraid_array *a, int raid_devices, uint32_t chunk_sectors,
                                       const char *layout, const char *const *added, int nadded,
                                       uint64_t array_sectors, char *why, size_t whylen);

/* mdadm --grow --level L on a running array (raid_devices 0: md's count
 * for the change; chunk_sectors 0 and layout NULL: keep, or mdadm's
 * default): RAID-5 -> 6 with one new member (layout "preserve" or a -6
 * layout: the takeover, Q recovered as the recovery job; else the takeover
 * and the restripe to the layout as the reshape job), RAID-6 -> 5 (the Q
 * member a spare; a restripe to the -6 layout first where needed),
 * RAID-4 <-> 5 (parity-last: the takeover; else a restripe). The level
 * changes with no request in flight. A level change md makes only on a
 * stopped array (0 <-> 4/5, 1 <-> 5), a wrong member count, a job or
 * reshape running, a PPL or degraded array: refused, nothing written.
 * The same level: uraid_grow_online_shrink. */
URAID_API int uraid_grow_online_level(struct uraid_array *a, int level, int raid_devices, uint32_t chunk_sectors,
                                      const char *layout, const char *const *added, int nadded, char *why,
                                      size_t whylen);

/* mdadm --grow --size for an array that is not running: every member of
 * a RAID-1/4/5/6 given; size_sectors per member, 0 for max (the smallest
 * member's room past its data offset, in whole chunks for RAID-4/5/6).
 * Metadata 0.90 and 1.0 (superblock at the end) first get each member's
 * superblock written where md looks on the member as it is now (found at
 * the end, or below it on a member that grew in place), as md's
 * rdev_size_change does; a write-intent bitmap there is refused, as md
 * refuses it.
 * The new size and md's resync checkpoint (resync_offset = the old size)
 * go to every superblock, then the new region is resynced (parity or
 * mirrors from its data) and the array closed clean. 0; -EALREADY when the
 * size is already that; a refusal (-EINVAL, -ENOSPC, -EOPNOTSUPP, -EUCLEAN:
 * smaller, too big, a bitmap, a reshape, not clean, degraded, another
 * level) writes nothing. res (may be NULL): array sectors before and after,
 * start_position the old size per member. */
URAID_API int uraid_grow_size(const char *const *members, int n, uint64_t size_sectors,
                              struct uraid_grow_result *res, char *why, size_t whylen);

/* mdadm --grow --size on a running array: the open (served) array uses
 * its members' room while requests go on. The same checks and refusals as
 * uraid_grow_size (nothing written on a refusal), plus read-only (-EROFS)
 * and a job running (-EBUSY); then, with no request in flight, the bitmap
 * resized, every superblock with the new size (metadata 1.1/1.2 only:
 * 0.90/1.0 must be grown stopped; resync_offset = the old size
 * when nothing was written since the open, else 0 as md's active array),
 * the array switched to the new size (uraid_size), and the new region's
 * resync started as a job (URAID_JOB_RESYNC in uraid_job_status). A kill
 * leaves md's record: the next open resyncs from it. from_sectors (may be
 * NULL): the array sectors before. */
URAID_API int uraid_grow_size_online(struct uraid_array *a, uint64_t size_sectors, uint64_t *from_sectors, char *why,
                                     size_t whylen);

#ifdef __cplusplus
}
#endif

#endif
