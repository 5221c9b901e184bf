/* uraid_grow_size: mdadm --grow --size max|SIZE for an array that is not
 * running, after its members were replaced by bigger ones (or grew).
 *
 * What is written when (md's raid5_resize / raid1_resize and super_1_sync):
 *   1. every check first (uraid_open's, then: RAID-1/4/5/6, every slot in
 *      sync, a clean shutdown, no reshape, a size larger than now; 0.90 and
 *      1.0: no bitmap, and their superblocks placed at the members' ends
 *      first, resize_place.c); a refusal writes nothing;
 *   2. with a write-intent bitmap, every member's whole bitmap resized as
 *      md_bitmap_resize does (wib_resize: the chunk doubled while the bits
 *      would not fit its sectors, the new region's bits set);
 *   3. every member's superblock: size = the new size per member, data_size
 *      = the member's room, resync_offset = the old size (md sets
 *      recovery_cp to the old dev_sectors: in sync below it), events + 1;
 *   4. the array opened again (dirty from the old size on) and resynced from
 *      the old size (with a bitmap: its set bits, the new region's among
 *      them): the new region's parity (or mirrors) computed from its data;
 *      the clean close records resync_offset = MaxSector.
 * A kill during 2 leaves the old size with a bitmap whose chunk md and
 * uraid both read (they count the bits from the array's size); a kill
 * during 4 leaves md's record of a resync from the old size, and the new
 * region's bits set: the next resync (uraid's or md's) covers it.
 *
 * uraid_grow_size_online does 2 and 3 on a served array with no request in
 * flight (0.90/1.0: when every member's superblock is already where md
 * looks on it, as on members replaced by bigger ones; a member grown in
 * place needs the offline grow, which moves it), switches its size, and runs 4's resync as its job
 * while requests go on; resync_offset is the old size only when nothing
 * was written since the open (a written array's superblocks say 0, md's
 * active array, and keep saying it), and the first write after the grow
 * says 0 again (array.c's dirty_partial). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "array/resize.h"
#include "array/wibitmap.h"
#include "log.h"
#include "uraid_grow.h"

static int room_of(const struct array_slot *sl, uint64_t *room)
{
    uint64_t dev = sl->dev->size / SECTOR;
    if (sl->sb.format == MD_FMT_1_0 || sl->sb.format == MD_FMT_0_90) /* placed by resize_place.c */
        return (*room = resize_md_room(sl->sb.format, dev)) > 0 ? 0 : -ENOSPC;
    if (dev <= sl->sb.data_offset)
        return -ENOSPC;
    *room = dev - sl->sb.data_offset;
    return 0;
}

/* Online, metadata 0.90/1.0: every member's superblock where md looks on
 * the member as it is now (a member replaced by a bigger one carries it at
 * its own end), so that the new size is written in place. A member grown
 * in place keeps it below its end: moving it is the offline grow's
 * (resize_place.c), with nothing served. Spares get the new size too, so
 * each must hold it. */
static int placed_at_ends(const struct uraid_array *a, char *why, size_t whylen)
{
    for (int s = 0; s < a->geom.raid_disks; s++) {
        const struct array_slot *sl = &a->slot[s];
        uint64_t at = sl->dev ? md_format_sb_sector(sl->sb.format, sl->dev->size / SECTOR) : sl->sb.super_offset;
        if (sl->dev && at != sl->sb.super_offset)
            return uraid_why(why, whylen, "member %s grew in place: its metadata %s superblock at sector %llu is "
                             "not where md looks now (sector %llu): stop the array and run 'uraid grow MEMBERS... "
                             "--size', which moves it as md does", sl->dev->path, md_format_name(sl->sb.format),
                             (unsigned long long)sl->sb.super_offset, (unsigned long long)at), -EOPNOTSUPP;
    }
    return 0;
}

static int spares_hold(const struct uraid_array *a, uint64_t to, char *why, size_t whylen)
{
    for (int e = 0; e < a->nextra; e++) {
        const struct array_slot *sl = &a->extra[e];
        uint64_t room = 0;
        if (sl->dev && sl->state == URAID_MEMBER_SPARE && (room_of(sl, &room) || room < to))
            return uraid_why(why, whylen, "spare %s holds %llu KiB past its data offset, less than the new %llu KiB "
                             "per member: remove it first", sl->dev->path, (unsigned long long)(room / 2),
                             (unsigned long long)(to / 2)), -ENOSPC;
    }
    return 0;
}

static int check(struct uraid_array *a, uint64_t want, int online, uint64_t *to, char *why, size_t whylen)
{
    const struct md_sb *R = &a->sb;
    int rc;
    if (a->geom.level != 1 && (a->geom.level < 4 || a->geom.level > 6))
        return uraid_why(why, whylen, "--size on %s is not supported yet: RAID-1/4/5/6 can use bigger members",
                         a->geom.level == 0 ? "RAID-0 (md takes its size from the members)" : "this level"), -EOPNOTSUPP;
    int at_end = R->format == MD_FMT_1_0 || R->format == MD_FMT_0_90;
    if (at_end && online && (rc = placed_at_ends(a, why, whylen)) != 0)
        return rc;
    if (at_end && (R->feature_map & MD_FEATURE_BITMAP_OFFSET))
        return uraid_why(why, whylen, "metadata %s with a write-intent bitmap: md cannot move a bitmap kept beside "
                         "the superblock at the member's end; remove it ('uraid update --update=no-bitmap MEMBERS'), "
                         "grow, then add it again ('uraid grow --consistency-policy=bitmap MEMBERS')",
                         md_format_name(R->format)), -EOPNOTSUPP;
    if (a->rs || (R->feature_map & MD_FEATURE_RESHAPE_ACTIVE))
        return uraid_why(why, whylen, "a reshape is in progress: finish it first"), -EBUSY;
    if (a->opened_dirty)
        return uraid_why(why, whylen, "the array was not shut down cleanly: run 'uraid resync' first"), -EUCLEAN;
    uint64_t room = UINT64_MAX;
    for (int s = 0; s < a->geom.raid_disks; s++) {
        uint64_t r = 0;
        if (!slot_ok(a, s))
            return uraid_why(why, whylen, "slot %d is not in sync: rebuild it first", s), -EINVAL;
        if (room_of(&a->slot[s], &r))
            return uraid_why(why, whylen, "member %s has no room past its data offset", a->slot[s].dev->path), -ENOSPC;
        if (r < room)
            room = r;
    }
    /* md's raid5_resize keeps whole chunks; raid1_resize takes the room as it is (0.90 counts KiB) */
    uint64_t unit = a->geom.level != 1 ? a->geom.chunk_sectors : R->format == MD_FMT_0_90 ? 2 : 1;
    uint64_t max = room / unit * unit;
    if (want && want > max)
        return uraid_why(why, whylen, "--size %llu KiB is more than the smallest member holds (%llu KiB past its data "
                         "offset)", (unsigned long long)(want / 2), (unsigned long long)(max / 2)), -ENOSPC;
    *to = want ? want / unit * unit : max;
    if (*to < a->member_sectors)
        return uraid_why(why, whylen, "--size %llu KiB is smaller than the array's %llu KiB per member: shrinking is "
                         "not supported yet", (unsigned long long)(*to / 2),
                         (unsigned long long)(a->member_sectors / 2)), -EINVAL;
    if (*to == a->member_sectors)
        return uraid_why(why, whylen, "the array already uses %llu KiB per member, all %s: nothing to do",
                         (unsigned long long)(*to / 2), want ? "that was asked" : "the members hold"), -EALREADY;
    return spares_hold(a, *to, why, whylen);
}

struct resize {
    uint64_t want, to, from;
    int online;
    char *why;
    size_t whylen;
};

/* Steps 2 and 3 of the top comment, then the array switched to the new
 * size; under job_lock with no job running (array_job_exclusive), and
 * with geom_lock held for writing, so no request is in flight while the
 * bitmap, the superblocks and the size change (a served array's requests
 * wait for it, as reshape_online.c's switch does). */
static int switch_size(struct uraid_array *a, void *ctx)
{
    struct resize *r = ctx;
    int rc = check(a, r->want, r->online, &r->to, r->why, r->whylen);
    if (rc)
        return rc;
    uint64_t to = r->to, nstripes = a->geom.level == 1 ? 0 : to / a->geom.chunk_sectors;
    uint64_t *dw = NULL;
    if (nstripes && !(dw = calloc((size_t)(nstripes / 64 + 1), sizeof *dw)))
        return uraid_why(r->why, r->whylen, "out of memory"), -ENOMEM;
    pthread_rwlock_wrlock(&a->geom_lock);
    if ((rc = wib_resize(a, to, r->why, r->whylen)) != 0)
        goto out;
    pthread_mutex_lock(&a->meta_lock);
    struct md_sb saved = a->sb;
    uint64_t saved_size[URAID_MAX_MEMBERS];
    /* a written array's superblocks say 0 already (md's active array): the
     * old region may hold writes in flight at a kill, so they keep saying it */
    int was_dirty = __atomic_load_n(&a->dirty, __ATOMIC_ACQUIRE);
    r->from = a->member_sectors;
    a->sb.size = to;
    for (int s = 0; s < a->geom.raid_disks; s++) {
        uint64_t room = 0;
        saved_size[s] = a->slot[s].sb.data_size;
        if (room_of(&a->slot[s], &room) == 0)
            a->slot[s].sb.data_size = room;
    }
    a->sb.resync_offset = was_dirty ? 0 : r->from;
    pthread_mutex_unlock(&a->meta_lock);
    if ((rc = array_write_superblocks(a)) != 0) {
        pthread_mutex_lock(&a->meta_lock);
        a->sb = saved;
        for (int s = 0; s < a->geom.raid_disks; s++)
            a->slot[s].sb.data_size = saved_size[s];
        pthread_mutex_unlock(&a->meta_lock);
        uraid_why(r->why, r->whylen, "cannot write the new size to the superblocks: %s", uraid_strerror(rc));
        goto out;
    }
    pthread_mutex_lock(&a->meta_lock);
    a->member_sectors = to;
    __atomic_store_n(&a->size_sectors, a->geom.level == 1 ? to : nstripes * a->geom.chunk_sectors * (uint64_t)a->k,
                     __ATOMIC_RELEASE);
    if (dw) { /* the stripes written degraded so far keep their bits */
        if (a->degraded_written)
            memcpy(dw, a->degraded_written, (size_t)(a->nstripes / 64 + 1) * sizeof *dw);
        free(a->degraded_written);
        a->degraded_written = dw;
        a->nstripes = nstripes;
        dw = NULL;
    }
    a->opened_dirty = 1;
    __atomic_store_n(&a->dirty, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&a->dirty_partial, !was_dirty, __ATOMIC_RELEASE); /* the next write says 0 (array.c) */
    a->resync_from = r->from;
    a->sb.resync_offset = 0; /* what an open of a dirty array keeps in memory (array.c) */
    pthread_mutex_unlock(&a->meta_lock);
out:
    pthread_rwlock_unlock(&a->geom_lock);
    free(dw);
    return rc;
}

int uraid_grow_size(const char *const *members, int n, uint64_t size_sectors, struct uraid_grow_result *res,
                    char *why, size_t whylen)
{
    struct uraid_array *a = NULL;
    uraid_why(why, whylen, "%s", "");
    int rc = resize_place_superblocks(members, n, size_sectors, why, whylen); /* 0.90/1.0: md's new place */
    if (rc < 0)
        return rc;
    rc = uraid_open(members, n, NULL, &a, why, whylen);
    if (rc)
        return rc;
    uint64_t from = a->member_sectors, old_bytes = uraid_size(a);
    struct resize r = {.want = size_sectors, .why = why, .whylen = whylen};
    rc = array_job_exclusive(a, switch_size, &r, why, whylen);
    if (rc == 0) {
        struct uraid_job_status st;
        rc = uraid_job_start(a, URAID_JOB_RESYNC, NULL, why, whylen);
        if (rc == 0 && (rc = uraid_job_wait(a, &st)) != 0)
            uraid_why(why, whylen, "the new region's resync stopped: %s (the superblocks say where: run 'uraid "
                      "resync' to finish it)", st.why);
    }
    if (res) {
        memset(res, 0, sizeof *res);
        res->from_sectors = old_bytes / SECTOR;
        res->to_sectors = uraid_size(a) / SECTOR;
        res->start_position = from;
        res->raid_devices = a->geom.raid_disks;
    }
    int crc = uraid_close(a);
    return rc ? rc : crc;
}

int uraid_grow_size_online(struct uraid_array *a, uint64_t size_sectors, uint64_t *from_sectors, char *why,
                           size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    if (!a)
        return uraid_why(why, whylen, "no array"), -EINVAL;
    if (a->readonly)
        return uraid_why(why, whylen, "the array is open read-only"), -EROFS;
    struct resize r = {.want = size_sectors, .online = 1, .why = why, .whylen = whylen};
    uint64_t old_bytes = uraid_size(a);
    /* the refusals about the array first (a reshape's among them), then
     * again under job_lock, where a job running refuses too */
    int rc = a->rs ? 0 : array_job_refuse_running(a, why, whylen); /* md: -EBUSY while its sync thread runs */
    if (rc == 0)
        rc = check(a, size_sectors, 1, &r.to, why, whylen);
    if (rc == 0)
        rc = array_job_exclusive(a, switch_size, &r, why, whylen);
    if (rc)
        return rc;
    if (from_sectors)
        *from_sectors = old_bytes / SECTOR;
    uraid_log(URAID_LOG_INFO, "size %llu -> %llu KiB per member: the new region is resynced from sector %llu",
              (unsigned long long)(r.from / 2), (unsigned long long)(r.to / 2), (unsigned long long)r.from);
    char jwhy[256];
    rc = uraid_job_start(a, URAID_JOB_RESYNC, NULL, jwhy, sizeof jwhy);
    if (rc == -EBUSY)
        rc = 0; /* the monitor started it first (an array opened dirty is resynced) */
    if (rc)
        uraid_why(why, whylen, "the new size is recorded but its resync did not start: %s (the server starts it "
                  "when restarted, from the old size)", jwhy);
    return rc;
}
