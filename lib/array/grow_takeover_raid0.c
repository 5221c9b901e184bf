/* A served RAID-0 of n (one zone) taken over as a RAID-4, or RAID-5
 * parity-last, of n + 1 (uraid_grow_online_level for --level 4/5 on a
 * RAID-0), as md's raid45_takeover_raid0 does on a running array (mdadm
 * --grow --level=4/5): no data moves, the data members are the new
 * level's data members, the parity slot (the last) has no member; with a
 * new member given, it is added as a spare and recovered into that slot
 * by the recovery job (mdadm --add after the level change).
 *   1. every check first (one zone, the count, at most one new member that
 *      holds no md superblock and is big enough, parity-last and the same
 *      chunk, every member in sync, no job running); a refusal writes
 *      nothing;
 *   2. with no request in flight (geom_lock held for writing) and no job
 *      running (job_lock): the array in memory as an open of the new
 *      record makes it (geometry, member size the zone's, the parity slot
 *      missing, every stripe's parity unwritten) and every member's
 *      superblock written once, as the offline raid0_to_parity records it
 *      (level, layout and new_ copies, raid_disks n + 1, size the zone's
 *      per-member size, clean: md's recovery_cp = MaxSector; events + 1);
 *   3. the new member added as a spare (manage.c: its superblock, then
 *      every member's), the recovery job started.
 * A kill -9 after 2 leaves a RAID-4/5 missing its parity member, which the
 * next `uraid serve`, the offline grow and md open; after 3 a spare too,
 * which the next serve's monitor recovers (md's does); during the
 * recovery, a member recovering parity only (array.c's q_recovering, md's
 * dirty_parity_disks), whose recovery goes on from its checkpoint. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "array/job.h"
#include "array/readahead.h"
#include "log.h"
#include "uraid_grow.h"

struct from0 {
    int level, n;
    uint64_t size; /* the zone's per-member size */
    uint64_t *dw;  /* the new degraded-write map, allocated before the locks */
    char *why;
    size_t whylen;
};

#define say(x, rc, ...) uraid_refuse((x)->why, (x)->whylen, (rc), __VA_ARGS__)

static int known_member(struct uraid_array *a, const char *path)
{
    int slot, extra;
    pthread_mutex_lock(&a->meta_lock);
    int found = array_find_member(a, path, &slot, &extra) == 0;
    pthread_mutex_unlock(&a->meta_lock);
    return found;
}

/* The new member: not one of the array's, no md superblock, room for data_offset + size. */
static int check_new(struct uraid_array *a, struct from0 *x, const char *path)
{
    char mwhy[300];
    struct member *m = NULL;
    if (known_member(a, path))
        return say(x, -EEXIST, "new member %s is already a member of this array", path);
    int rc = member_open_why(path, 0, &m, mwhy, sizeof mwhy);
    if (rc)
        return say(x, rc, "new member %s: cannot open: %s", path, mwhy);
    struct md_sb sb;
    uint64_t need = a->slot[0].data_offset + x->size;
    if (array_read_superblock(m, &sb, mwhy, sizeof mwhy) == 0)
        rc = say(x, -EEXIST, "new member %s holds an md superblock (level %d, %u members): wipe it first if it "
                 "belongs to no array (uraid zero-superblock)", path, sb.level, sb.raid_disks);
    else if (m->size / SECTOR < need)
        rc = say(x, -ENOSPC, "new member %s is too small: %llu sectors, the array needs %llu (data offset %llu + "
                 "%llu)", path, (unsigned long long)(m->size / SECTOR), (unsigned long long)need,
                 (unsigned long long)a->slot[0].data_offset, (unsigned long long)x->size);
    member_close(m);
    return rc;
}

static int check(struct uraid_array *a, struct from0 *x, int N, uint32_t chunk, const char *layout,
                 const char *const *added, int nadded)
{
    int n = a->geom.raid_disks, want = x->level == 4 ? 0 : LAYOUT_PARITY_LAST;
    if (a->readonly)
        return say(x, -EROFS, "the array is open read-only");
    if ((N && N != n + 1) || nadded > 1 || n + 1 > URAID_MAX_MEMBERS)
        return say(x, -EINVAL, "md turns a RAID-0 of %d members into a RAID-%d of %d (the new last slot holds the "
                   "parity, missing until a member recovers it): give --raid-devices %d (or none) and at most one "
                   "new member", n, x->level, n + 1, n + 1);
    if ((layout && layout_from_name(x->level, layout) != want) || (chunk && chunk != a->geom.chunk_sectors))
        return say(x, -EOPNOTSUPP, "md takes a RAID-0 over as parity-last with its chunk: change the layout or "
                   "chunk after");
    if (!a->r0 || a->r0->nzones != 1)
        return say(x, -EOPNOTSUPP, "the RAID-0's members differ in size (%d zones): md takes only a RAID-0 of "
                   "equal members (one zone) over", a->r0 ? a->r0->nzones : 0);
    for (int s = 0; s < n; s++)
        if (!slot_ok(a, s) || a->slot[s].data_offset != a->slot[0].data_offset)
            return say(x, -EOPNOTSUPP, "slot %d: %s", s, slot_ok(a, s) ? "a data offset unlike the others' is "
                       "not supported by the takeover yet" : "no member in sync");
    x->n = n;
    x->size = a->r0->slot_sectors[0];
    int rc = nadded ? check_new(a, x, added[0]) : 0;
    if (rc)
        return rc;
    uint64_t words = x->size / a->geom.chunk_sectors / 64 + 1;
    if (!(x->dw = malloc((size_t)words * sizeof *x->dw)))
        return say(x, -ENOMEM, "out of memory");
    memset(x->dw, 0xff, (size_t)words * sizeof *x->dw); /* the parity slot: never written */
    return array_job_refuse_running(a, x->why, x->whylen);
}

/* The new level in the template and in memory; caller holds meta_lock. Returns the RAID-0 zones to free. */
static struct raid0_zones *set_level(struct uraid_array *a, struct from0 *x, uint64_t **old_dw)
{
    int n = x->n, layout = x->level == 4 ? 0 : LAYOUT_PARITY_LAST;
    struct raid0_zones *z = a->r0;
    a->sb.level = x->level;
    a->sb.layout = (uint32_t)layout;
    a->sb.new_level = (uint32_t)x->level;
    a->sb.new_layout = (uint32_t)layout;
    a->sb.new_chunk = a->sb.chunksize;
    a->sb.feature_map &= ~MD_FEATURE_RAID0_LAYOUT;
    a->sb.size = x->size;
    a->sb.raid_disks = (uint32_t)(n + 1);
    a->sb.resync_offset = MD_RESYNC_CLEAN; /* md: "make sure it will be not marked as dirty" */
    for (int s = 0; s < n; s++)
        a->slot[s].sb.size = x->size;
    memset(&a->slot[n], 0, sizeof a->slot[n]);
    a->slot[n].state = URAID_MEMBER_MISSING;
    a->geom = (struct layout_geom){x->level, layout, n + 1, a->geom.chunk_sectors};
    a->k = n;
    a->nparity = 1;
    a->member_sectors = x->size;
    a->nstripes = x->size / a->geom.chunk_sectors;
    *old_dw = a->degraded_written;
    a->degraded_written = x->dw;
    x->dw = NULL;
    a->r0 = NULL;
    /* as an open of the new record: clean, the first write marks it dirty */
    __atomic_store_n(&a->dirty, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&a->dirty_partial, 0, __ATOMIC_RELEASE);
    a->opened_dirty = 0;
    return z;
}

/* Step 2: under job_lock with no job running. */
static int switch_level(struct uraid_array *a, void *ctx)
{
    struct from0 *x = ctx;
    if (a->rs)
        return say(x, -EBUSY, "a reshape is in progress: change the level after its end (uraid status)");
    uint64_t *old_dw = NULL;
    pthread_rwlock_wrlock(&a->geom_lock); /* the requests in flight end first */
    pthread_mutex_lock(&a->meta_lock);
    struct raid0_zones *z = set_level(a, x, &old_dw);
    pthread_mutex_unlock(&a->meta_lock);
    __atomic_store_n(&a->scache_off, 1, __ATOMIC_RELAXED); /* (another level's writes went past it) */
    ra_forget(a->ra);
    int rc = array_write_superblocks(a);
    if (rc) {
        __atomic_store_n(&a->readonly, 1, __ATOMIC_RELEASE);
        say(x, rc, "no member took the RAID-%d's superblock (%s): the array is served read-only now; check the "
            "members, stop the server and serve them again", x->level, uraid_strerror(rc));
    }
    pthread_rwlock_unlock(&a->geom_lock);
    free(old_dw);
    free(z);
    if (rc == 0)
        uraid_log(URAID_LOG_INFO, "RAID-0 of %d taken over as RAID-%d of %d (parity-last, the parity slot missing; no "
                  "data moved)", x->n, x->level, x->n + 1);
    return rc;
}

/* The new member into the parity slot: added as a spare, then recovered
 * (mdadm --add after the level change). */
static int add_parity_member(struct uraid_array *a, int level, int n, const char *added, char *why, size_t whylen)
{
    int rc = uraid_add_spare(a, added, why, whylen);
    if (rc < 0) {
        char line[400];
        snprintf(line, sizeof line, "the array is RAID-%d of %d now, its parity slot missing, but %s could not be "
                 "added: %s (add a spare: uraid add)", level, n, added, why);
        uraid_why(why, whylen, "%s", line);
        return rc;
    }
    char jwhy[256];
    struct uraid_job_params jp = {.slot = -1};
    rc = uraid_job_start(a, URAID_JOB_RECOVER, &jp, jwhy, sizeof jwhy);
    if (rc == -EBUSY)
        rc = 0; /* the monitor started it first */
    if (rc)
        uraid_why(why, whylen, "the array is RAID-%d of %d now with %s a spare, but its recovery did not start: %s "
                  "(run 'uraid rebuild')", level, n, added, jwhy);
    return rc;
}

int array_takeover_from_raid0_online(struct uraid_array *a, int level, int N, uint32_t chunk, const char *layout,
                                     const char *const *added, int nadded, char *why, size_t whylen)
{
    struct from0 x = {.level = level, .why = why, .whylen = whylen};
    int rc = check(a, &x, N, chunk, layout, added, nadded);
    if (rc == 0)
        rc = array_job_exclusive(a, switch_level, &x, why, whylen);
    free(x.dw);
    if (rc || !nadded)
        return rc;
    return add_parity_member(a, level, x.n + 1, added[0], why, whylen);
}

int array_takeover_raid0_carry_on(struct uraid_array *a, int level, int N, uint32_t chunk, const char *layout,
                                  const char *const *added, int nadded, char *why, size_t whylen)
{
    int n = a->geom.raid_disks, last = n - 1;
    int parity_last = a->geom.level == 4 || (a->geom.level == 5 && a->geom.layout == LAYOUT_PARITY_LAST);
    if (level != a->geom.level || !parity_last || nadded != 1 || (N && N != n) ||
        (chunk && chunk != a->geom.chunk_sectors) || a->slot[last].dev)
        return 0;
    if (layout && layout_from_name(level, layout) != (level == 4 ? 0 : LAYOUT_PARITY_LAST))
        return 0;
    for (int s = 0; s < last; s++)
        if (!slot_ok(a, s))
            return 0;
    for (int e = 0; e < a->nextra; e++)
        if (a->extra[e].dev && a->extra[e].state == URAID_MEMBER_SPARE)
            return 0; /* a spare is there already: the recovery takes it */
    int rc = add_parity_member(a, level, n, added[0], why, whylen);
    return rc ? rc : 1;
}
