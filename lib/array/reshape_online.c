/* uraid_grow_online: a served RAID-4/5/6 gains members or changes its
 * chunk or layout (mdadm --grow --raid-devices N --add NEW..., --chunk,
 * --layout on a running array), the reshape then runs
 * as a background job (reshape_job.c) while requests go on (reshape_io.c).
 * RAID-1 (grow_mirrors.c), linear (grow_linear.c) and RAID-0
 * (grow_raid0_online.c) gain members through it too.
 *
 * A shrink (fewer members, array_sectors given) is md's backwards reshape
 * (reshape.c's plan_shrink) into the room past the data; the array is the
 * new size from the switch on.
 *
 * What is written when (the offline grow's order, reshape.c):
 *   1. every check first; a refusal writes nothing and closes the new
 *      members;
 *   2. the new members' superblocks (their slots, the reshape at position
 *      0), flushed;
 *   3. with no request in flight (geom_lock held for writing) and no job
 *      running (job_lock): the array becomes the new geometry at position
 *      0, and every member's superblock gets the reshape (events + 1);
 *   4. the job starts; the monitor starts it again after a restart. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/reshape_io.h"
#include "log.h"
#include "uraid_grow.h"

struct online {
    int N, nold, nadd;
    int first, degraded;        /* the first slot in sync; a slot is not */
    uint64_t keep;              /* a shrink: the array sectors kept (--array-size), 0 otherwise */
    uint32_t chunk;             /* the new chunk (sectors) */
    int layout;                 /* the new layout */
    const char *const *added;
    struct member *dev[URAID_MAX_MEMBERS];
    struct md_sb sb[URAID_MAX_MEMBERS];
    struct reshape_geom g;
    uint64_t old_off;
    struct array_reshape *rs;
    const struct online_level *lv; /* a level change (reshape_io.h), or NULL */
    char *why;
    size_t whylen;
};

static int no(struct online *o, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int no(struct online *o, int rc, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    uraid_why(o->why, o->whylen, "%s", line);
    return rc;
}

static int check_members(struct uraid_array *a, struct online *o);

static int check_array(struct uraid_array *a, struct online *o)
{
    const struct md_sb *R = &a->sb;
    if (a->readonly)
        return no(o, -EROFS, "the array is open read-only");
    if (a->rs)
        return no(o, -EBUSY, "a reshape to %d members is already in progress", a->geom.raid_disks);
    int rc = array_job_refuse_running(a, o->why, o->whylen); /* switch_over checks again under job_lock */
    if (rc)
        return rc;
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (a->slot[s].dev && a->slot[s].state == URAID_MEMBER_REBUILDING)
            return no(o, -EBUSY, "member %s is being recovered (its recovery stopped partway): the array cannot be "
                      "reshaped until it is in sync; carry the recovery on first (uraid rebuild), then grow",
                      a->slot[s].dev->path);
    if (a->geom.level < 4 || a->geom.level > 6)
        return no(o, -EOPNOTSUPP, "%s: this grow is not supported while it serves (RAID-4/5/6 gain members and "
                  "change chunk or layout; RAID-0, RAID-1 and linear only gain members: --raid-devices N --add "
                  "NEW...)", a->geom.level == LAYOUT_LEVEL_LINEAR ? "linear" : a->geom.level == 10 ? "RAID-10" :
                  a->geom.level == 0 ? "RAID-0" : a->geom.level == 1 ? "RAID-1" : "this level");
    /* 1.0 and 0.90 keep no room before the data (md restripes them with a backup file); a takeover moves none */
    if (R->format != MD_FMT_1_2 && R->format != MD_FMT_1_1 && !(o->lv && o->lv->takeover))
        return no(o, -EOPNOTSUPP, "growing an array with metadata %s is not supported yet where data moves (a "
                  "restripe; md needs a backup file for %s): the level changes that move no data work with any "
                  "metadata (RAID-5 -> 6 with --layout left-symmetric-6, as mdadm's --layout=preserve)",
                  md_format_name(R->format), md_format_name(R->format));
    if (md_sb_has_ppl(R))
        return no(o, -EOPNOTSUPP, "the array keeps a partial parity log: md cannot reshape such an array; switch to "
                  "resync first (uraid grow --consistency-policy=resync, with the array stopped)");
    if (a->opened_dirty)
        return no(o, -EUCLEAN, "the array was not shut down cleanly and its resync has not finished: grow it after "
                  "the resync");
    int geo = o->chunk != a->geom.chunk_sectors || (o->layout != a->geom.layout && a->geom.level != 4);
    if (o->lv) /* reshape_level_online.c checked the counts */
        return check_members(a, o);
    if (o->N < a->geom.raid_disks && o->nadd)
        return no(o, -EINVAL, "a shrink to %d members takes no new members", o->N);
    if (o->N < a->geom.raid_disks && !o->keep)
        return no(o, -EINVAL, "shrinking to %d members cuts the array: give --array-size (at most the new size) "
                  "after shrinking the file system", o->N);
    if (o->N == a->geom.raid_disks && !geo)
        return no(o, o->nadd == 0 ? -EALREADY : -EINVAL, "--raid-devices %d is the array's member count and the "
                  "chunk and layout are the array's: nothing to do", o->N);
    if (a->member_sectors % o->chunk)
        return no(o, -EINVAL, "the member size (%llu sectors) is not a multiple of the new chunk (%u KiB): make the "
                  "array smaller first, or choose a smaller chunk", (unsigned long long)a->member_sectors, o->chunk / 2);
    if (o->N > URAID_MAX_MEMBERS || (o->N >= a->geom.raid_disks && o->nadd != o->N - a->geom.raid_disks))
        return no(o, -EINVAL, "--raid-devices %d needs %d new member%s (--add), %d given", o->N,
                  o->N - a->geom.raid_disks, o->N - a->geom.raid_disks == 1 ? "" : "s", o->nadd);
    return check_members(a, o);
}

/* The members as they are: where the data starts, which slot is out. */
static int check_members(struct uraid_array *a, struct online *o)
{
    o->nold = a->geom.raid_disks;
    /* md reshapes a degraded array (raid5_start_reshape: not failed): a missing or faulty slot stays out */
    o->first = 0;
    while (o->first < o->nold - 1 && !slot_ok(a, o->first))
        o->first++;
    o->old_off = a->slot[o->first].data_offset;
    for (int s = 0; s < o->nold; s++) {
        const struct array_slot *sl = &a->slot[s];
        if (!slot_ok(a, s) && o->lv) /* md's takeovers want every member (raid5.c's raid6_takeover ...) */
            return no(o, -EOPNOTSUPP, "slot %d is not in sync: the level changes only on a whole array; recover it "
                      "first (uraid add SPARE, then wait for the recovery in uraid status)", s);
        if (!slot_ok(a, s)) {
            o->degraded = 1;
            continue;
        }
        if (sl->data_offset != o->old_off)
            return no(o, -EOPNOTSUPP, "member %s: a data offset unlike the others' is not supported by grow yet",
                      sl->dev->path);
    }
    return 0;
}

static int known_member(const struct uraid_array *a, const char *path)
{
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (a->slot[s].dev && array_same_file(a->slot[s].dev->path, path))
            return 1;
    for (int e = 0; e < a->nextra; e++)
        if (a->extra[e].dev && array_same_file(a->extra[e].dev->path, path))
            return 1;
    return 0;
}

static int open_added(struct uraid_array *a, struct online *o)
{
    uint64_t need = o->old_off + a->member_sectors;
    for (int i = 0; i < o->nadd; i++) {
        char mwhy[300];
        if (known_member(a, o->added[i]))
            return no(o, -EEXIST, "new member %s is already a member or spare of this array", o->added[i]);
        for (int j = 0; j < i; j++)
            if (array_same_file(o->added[i], o->added[j]))
                return no(o, -EINVAL, "%s and %s are the same member: give each once", o->added[j], o->added[i]);
        int rc = array_open_added(a, o->added[i], &o->dev[i], NULL, mwhy, sizeof mwhy);
        if (rc)
            return no(o, rc, "new member %s", mwhy);
        if (o->dev[i]->size / SECTOR < need)
            return no(o, -ENOSPC, "new member %s is too small: %llu sectors, the array needs %llu (data offset %llu + "
                      "%llu per member)", o->added[i], (unsigned long long)(o->dev[i]->size / SECTOR),
                      (unsigned long long)need, (unsigned long long)o->old_off, (unsigned long long)a->member_sectors);
    }
    return 0;
}

/* A device number nobody uses: not in dev_roles, no member's, none taken yet. */
static int free_dev_number(const struct uraid_array *a, const struct online *o, int taken, uint32_t *dn)
{
    for (uint32_t d = 0; d < a->sb.max_dev; d++) {
        int used = a->sb.dev_roles[d] != MD_ROLE_SPARE;
        for (int s = 0; s < a->geom.raid_disks && !used; s++)
            used = a->slot[s].dev && a->slot[s].sb.dev_number == d;
        for (int e = 0; e < a->nextra && !used; e++)
            used = a->extra[e].sb.dev_number == d;
        for (int i = 0; i < taken && !used; i++)
            used = o->sb[i].dev_number == d;
        if (!used) {
            *dn = d;
            return 0;
        }
    }
    return no((struct online *)o, -EOPNOTSUPP, "the superblocks have no free device number for another member "
              "(max_dev %u)", a->sb.max_dev);
}

/* The shift, the geometries, the template's reshape fields (in tmpl) and
 * the new members' superblocks. */
/* A shrink's shift: the room past every member's data (the member size
 * stays: cutting it would move the array's end under its clients; offline
 * the grow cuts it). */
static int plan_shrink_shift(struct uraid_array *a, struct online *o, uint32_t unit, uint64_t *shift)
{
    uint64_t room = UINT64_MAX;
    for (int s = 0; s < o->nold; s++)
        if (slot_ok(a, s) && reshape_tailroom(&a->slot[s].sb, a->member_sectors) < room)
            room = reshape_tailroom(&a->slot[s].sb, a->member_sectors);
    *shift = reshape_choose_shift(room, unit);
    if (!*shift)
        return no(o, -ENOSPC, "too little room past the data to shrink while serving: %llu sectors, one chunk (%u) "
                  "needed; stop the array and shrink it offline (uraid grow cuts the member size by what is "
                  "missing)", (unsigned long long)room, unit);
    uint64_t cap = a->member_sectors * (uint64_t)(o->N - layout_parity_count(&a->geom));
    if (o->keep > cap)
        return no(o, -ENOSPC, "--array-size %lluK is more than %d members hold (%lluK): shrink the file system to "
                  "%lluK or less first and give that --array-size", (unsigned long long)(o->keep / 2), o->N,
                  (unsigned long long)(cap / 2), (unsigned long long)(cap / 2));
    return 0;
}

static int new_member_sb(struct uraid_array *a, struct online *o, int i);

static int plan(struct uraid_array *a, struct online *o, struct md_sb *tmpl)
{
    uint64_t room = UINT64_MAX, bm = wib_area_bytes(a);
    for (int s = 0; s < o->nold; s++)
        if (slot_ok(a, s) && reshape_headroom(&a->slot[s].sb, bm) < room)
            room = reshape_headroom(&a->slot[s].sb, bm);
    uint32_t unit = a->geom.chunk_sectors > o->chunk ? a->geom.chunk_sectors : o->chunk;
    int back = o->N < o->nold;
    uint64_t shift = back ? 0 : reshape_choose_shift(room, unit);
    if (back) {
        int rc = plan_shrink_shift(a, o, unit, &shift);
        if (rc)
            return rc;
    } else if (!shift)
        return no(o, -ENOSPC, "too little head room before the data to grow without a backup file: %llu sectors free "
                  "before data_offset %llu, %u needed (one chunk): %llu sectors missing", (unsigned long long)room,
                  (unsigned long long)o->old_off, (unsigned)reshape_min_shift(unit),
                  (unsigned long long)(reshape_min_shift(unit) - room));
    struct layout_geom from = o->lv ? o->lv->from : a->geom, to = from;
    to.raid_disks = o->N;
    to.chunk_sectors = o->chunk;
    to.layout = o->layout;
    char gwhy[200];
    if (reshape_geom_init_dir(&o->g, &from, &to, a->member_sectors, shift, back, gwhy, sizeof gwhy))
        return no(o, -EINVAL, "%s", gwhy);
    *tmpl = a->sb;
    tmpl->level = from.level; /* a level change: the takeover's, recorded with the restripe (as mdadm) */
    tmpl->layout = (uint32_t)from.layout;
    tmpl->raid_disks = (uint32_t)o->N;
    tmpl->delta_disks = o->N - from.raid_disks;
    tmpl->new_level = (uint32_t)to.level;
    tmpl->new_layout = (uint32_t)to.layout;
    tmpl->new_chunk = to.chunk_sectors;
    tmpl->new_offset = back ? (int32_t)shift : -(int32_t)shift;
    tmpl->reshape_position = reshape_begin(&o->g);
    tmpl->feature_map |= MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET; /* md: no BACKWARDS bit with a delta */
    for (uint32_t dn = 0; dn < tmpl->max_dev; dn++) /* a slot out of sync: no device holds it (as offline) */
        if (tmpl->dev_roles[dn] < o->nold && !slot_ok(a, tmpl->dev_roles[dn]))
            tmpl->dev_roles[dn] = MD_ROLE_FAULTY;
    for (int i = 0; i < o->nadd; i++) {
        int rc = new_member_sb(a, o, i);
        if (rc)
            return rc;
        tmpl->dev_roles[o->sb[i].dev_number] = (uint16_t)(o->nold + i);
    }
    return 0;
}

/* New member i's superblock (o->sb[i]): the first member's, its own device
 * number and UUID; recovering from sector 0 when it is a level change's Q. */
static int new_member_sb(struct uraid_array *a, struct online *o, int i)
{
    struct md_sb *sb = &o->sb[i];
    uint32_t dn = 0;
    int rc = free_dev_number(a, o, i, &dn);
    if (rc)
        return rc;
    *sb = a->slot[o->first].sb;
    sb->dev_number = dn;
    sb->feature_map &= ~(uint32_t)(MD_FEATURE_BAD_BLOCKS | MD_FEATURE_RECOVERY_OFFSET | MD_FEATURE_REPLACEMENT);
    sb->recovery_offset = 0;
    sb->cnt_corrected_read = 0;
    sb->devflags = 0;
    array_place_member(sb, &a->slot[o->first].sb, o->dev[i]->size / SECTOR); /* 1.0, 0.90: at its own end */
    if ((rc = array_random_bytes(sb->device_uuid, 16)) != 0)
        return no(o, rc, "cannot make a device UUID: %s", uraid_strerror(rc));
    if (o->lv && o->lv->q_new)
        sb->feature_map |= MD_FEATURE_RECOVERY_OFFSET;
    return 0;
}

/* Steps 2 and 3 of the top comment; under job_lock with no job running. */
static int switch_over(struct uraid_array *a, void *ctx)
{
    struct online *o = ctx;
    struct md_sb tmpl;
    if (a->rs)
        return no(o, -EBUSY, "a reshape to %d members is already in progress", a->geom.raid_disks);
    pthread_mutex_lock(&a->meta_lock); /* a writer's dirty mark rewrites the superblocks meanwhile */
    int rc = plan(a, o, &tmpl);
    pthread_mutex_unlock(&a->meta_lock);
    if (rc == 0 && (rc = array_reshape_new(a, &o->g, o->old_off, reshape_begin(&o->g), &o->rs)) != 0)
        no(o, rc, "out of memory");
    uint64_t nstripes = a->member_sectors / o->chunk;
    uint64_t *dw = rc == 0 ? calloc((size_t)(nstripes / 64 + 1), sizeof *dw) : NULL;
    if (rc == 0 && !dw)
        rc = no(o, -ENOMEM, "out of memory");
    for (int i = 0; rc == 0 && i < o->nadd; i++) {
        struct md_sb sb = o->sb[i];
        sb.feature_map = (sb.feature_map & ~(uint32_t)MD_FEATURE_BITMAP_OFFSET) | (tmpl.feature_map & (MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET));
        sb.raid_disks = tmpl.raid_disks;
        sb.level = tmpl.level;
        sb.layout = tmpl.layout;
        sb.delta_disks = tmpl.delta_disks;
        sb.new_level = tmpl.new_level;
        sb.new_layout = tmpl.new_layout;
        sb.new_chunk = tmpl.new_chunk;
        sb.new_offset = tmpl.new_offset;
        sb.reshape_position = 0;
        sb.events = tmpl.events + 1;
        memcpy(sb.dev_roles, tmpl.dev_roles, sizeof sb.dev_roles);
        if ((rc = array_write_new_member(o->dev[i], &sb)) == 0)
            rc = member_flush(o->dev[i]);
        if (rc)
            no(o, rc, "new member %s: cannot write its superblock: %s (nothing else was changed)", o->added[i],
               uraid_strerror(rc));
    }
    if (rc) {
        free(dw);
        array_reshape_free(o->rs);
        o->rs = NULL;
        return rc;
    }
    uint64_t new_off = reshape_new_off(&o->g, o->old_off);
    pthread_rwlock_wrlock(&a->geom_lock); /* the requests in flight end first */
    pthread_mutex_lock(&a->meta_lock);
    tmpl.events = a->sb.events; /* what was written since the plan (a dirty mark) stays */
    tmpl.resync_offset = a->sb.resync_offset;
    a->sb = tmpl;
    /* a shrink's leaving slots stay at the old offset: only the old geometry reads them */
    for (int s = 0; s < o->nold && s < o->N; s++)
        __atomic_store_n(&a->slot[s].data_offset, new_off, __ATOMIC_RELEASE);
    for (int i = 0; i < o->nadd; i++) {
        struct array_slot *sl = &a->slot[o->nold + i];
        memset(sl, 0, sizeof *sl);
        sl->sb = o->sb[i];
        sl->data_offset = new_off;
        sl->dev = o->dev[i];
        /* a RAID-5 -> 6 restripe's Q: in sync below the new rows written (reshape_job.c's checkpoints) */
        sl->state = o->lv && o->lv->q_new ? URAID_MEMBER_REBUILDING : URAID_MEMBER_IN_SYNC;
        o->dev[i] = NULL;
    }
    if (o->lv && o->lv->q_new) { /* the old geometry (the -6 layout) reads and writes without it */
        o->rs->q_recovering = o->nold;
        o->rs->old->slot[o->nold].dev = NULL;
        o->rs->old->slot[o->nold].state = URAID_MEMBER_MISSING;
        memset(o->rs->old->degraded_written, 0xff, (size_t)(o->rs->old->nstripes / 64 + 1) * sizeof *dw);
    }
    o->rs->then_level = o->lv ? o->lv->then_level : 0;
    a->geom = o->g.to; /* the new geometry (reshape_io.h): its stripes are the new ones */
    a->nparity = layout_parity_count(&a->geom);
    /* what the array wrote degraded so far: its stripes are the old geometry's (no request in flight) */
    if (a->degraded_written && a->nstripes == o->rs->old->nstripes)
        memcpy(o->rs->old->degraded_written, a->degraded_written, (size_t)(a->nstripes / 64 + 1) * sizeof *dw);
    free(a->degraded_written);
    if (o->degraded) /* a slot out: the new geometry's stripes all lack its chunk */
        memset(dw, 0xff, (size_t)(nstripes / 64 + 1) * sizeof *dw);
    a->degraded_written = dw;
    a->nstripes = nstripes;
    a->k = o->g.to_k;
    if (o->g.backwards) /* md's size in mid-shrink: the smaller (its array_size was cut first) */
        __atomic_store_n(&a->size_sectors, reshape_to_sectors(&o->g), __ATOMIC_RELEASE);
    __atomic_store_n(&a->rs, o->rs, __ATOMIC_RELEASE); /* job.c and the monitor read it without geom_lock */
    pthread_mutex_unlock(&a->meta_lock);
    rc = array_write_superblocks(a);
    pthread_rwlock_unlock(&a->geom_lock);
    if (rc)
        return no(o, rc, "the reshape started, but the superblocks could not be written to every member: %s",
                  uraid_strerror(rc));
    uraid_log(URAID_LOG_INFO, "reshape from %d to %d members started (data offset %llu -> %llu)", o->nold, o->N,
              (unsigned long long)o->old_off, (unsigned long long)new_off);
    return 0;
}

int uraid_grow_online(struct uraid_array *a, int raid_devices, const char *const *added, int nadded, char *why,
                      size_t whylen)
{
    return uraid_grow_online_geom(a, raid_devices, 0, NULL, added, nadded, why, whylen);
}

int uraid_grow_online_geom(struct uraid_array *a, int raid_devices, uint32_t chunk_sectors, const char *layout,
                           const char *const *added, int nadded, char *why, size_t whylen)
{
    return uraid_grow_online_shrink(a, raid_devices, chunk_sectors, layout, added, nadded, 0, why, whylen);
}

/* A takeover (o->lv->takeover): the superblocks alone say the new level,
 * with no request in flight; RAID-5 -> 6's new member then recovers Q as
 * the array's recovery job (md's raid6_takeover, then the spare's
 * recovery). That member is written first as a spare of the array as it
 * is: a kill before the others' writes leaves that array and a spare. */
static int take_over(struct uraid_array *a, void *ctx)
{
    struct online *o = ctx;
    if (a->rs)
        return no(o, -EBUSY, "a reshape to %d members is already in progress", a->geom.raid_disks);
    int rc = 0;
    if (o->nadd) {
        struct md_sb sb;
        pthread_mutex_lock(&a->meta_lock); /* a writer's dirty mark rewrites the superblocks meanwhile */
        if ((rc = new_member_sb(a, o, 0)) == 0) {
            sb = o->sb[0];
            memcpy(sb.dev_roles, a->sb.dev_roles, sizeof sb.dev_roles);
            sb.events = a->sb.events;
            sb.resync_offset = a->sb.resync_offset;
        }
        pthread_mutex_unlock(&a->meta_lock);
        if (rc)
            return rc;
        /* recovery at 0 kept: an open that takes the newer members' role for it (a kill between the
         * writes) recovers it rather than reading it as in sync (array.c's takeover_step) */
        sb.feature_map &= ~(uint32_t)MD_FEATURE_BITMAP_OFFSET;
        sb.dev_roles[sb.dev_number] = MD_ROLE_SPARE;
        if ((rc = array_write_new_member(o->dev[0], &sb)) == 0)
            rc = member_flush(o->dev[0]);
        if (rc)
            return no(o, rc, "new member %s: cannot write its superblock: %s (nothing else was changed)",
                      o->added[0], uraid_strerror(rc));
    }
    pthread_rwlock_wrlock(&a->geom_lock); /* the requests in flight end first */
    pthread_mutex_lock(&a->meta_lock);
    if (o->nadd) {
        struct array_slot *sl = &a->slot[o->nold];
        memset(sl, 0, sizeof *sl);
        sl->sb = o->sb[0];
        sl->data_offset = o->old_off;
        sl->dev = o->dev[0];
        sl->state = URAID_MEMBER_REBUILDING; /* from sector 0 */
        a->sb.dev_roles[sl->sb.dev_number] = (uint16_t)o->nold;
        o->dev[0] = NULL;
    }
    int from = a->geom.level;
    array_takeover_locked(a, &o->lv->from);
    pthread_mutex_unlock(&a->meta_lock);
    rc = array_write_superblocks(a);
    pthread_rwlock_unlock(&a->geom_lock);
    if (rc)
        return no(o, rc, "the level changed, but the superblocks could not be written to every member: %s",
                  uraid_strerror(rc));
    uraid_log(URAID_LOG_INFO, "RAID-%d taken over as RAID-%d (%s, %d members)%s", from, o->lv->from.level,
              layout_name(o->lv->from.level, o->lv->from.layout), o->lv->from.raid_disks,
              o->nadd ? ": Q is recovered onto the new member" : "");
    return 0;
}

int array_grow_online(struct uraid_array *a, int N, uint32_t chunk, int layout, const char *const *added, int nadd,
                      uint64_t keep, const struct online_level *lv, char *why, size_t whylen)
{
    struct online o = {.N = N, .nadd = nadd, .added = added, .keep = keep, .chunk = chunk, .layout = layout,
                       .lv = lv, .why = why, .whylen = whylen};
    int rc = check_array(a, &o);
    if (rc == 0)
        rc = open_added(a, &o);
    if (rc == 0)
        rc = array_job_exclusive(a, lv && lv->takeover ? take_over : switch_over, &o, why, whylen);
    for (int i = 0; i < nadd; i++)
        member_close(o.dev[i]);
    if (rc || (lv && lv->takeover && !lv->q_new))
        return rc;
    char jwhy[256];
    int kind = lv && lv->takeover ? URAID_JOB_RECOVER : URAID_JOB_RESHAPE;
    rc = uraid_job_start(a, kind, NULL, jwhy, sizeof jwhy);
    if (rc == -EBUSY)
        rc = 0; /* the monitor started it first */
    if (rc)
        uraid_why(why, whylen, "the %s is recorded but its job did not start: %s (it starts at the next open)",
                  kind == URAID_JOB_RECOVER ? "recovery of Q" : "reshape", jwhy);
    return rc;
}

int uraid_grow_online_shrink(struct uraid_array *a, int raid_devices, uint32_t chunk_sectors, const char *layout,
                             const char *const *added, int nadded, uint64_t array_sectors, char *why, size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    if (!a || nadded < 0 || nadded > URAID_MAX_MEMBERS || (nadded && !added))
        return uraid_why(why, whylen, "give the new member count and the new members"), -EINVAL;
    if (a->geom.level == 1 && !chunk_sectors && !layout && !array_sectors)
        return array_grow_mirrors_online(a, raid_devices ? raid_devices : a->geom.raid_disks, added, nadded, why,
                                         whylen); /* grow_mirrors.c */
    if (!chunk_sectors && !layout && !array_sectors && array_grow_raid0_due(a, raid_devices, added, nadded))
        return array_grow_raid0_back_online(a, why, whylen); /* a RAID-0 grow's cut-off takeover back */
    if (a->geom.level == 0 && !layout && !array_sectors) /* more members, or another chunk */
        return array_grow_raid0_online(a, raid_devices ? raid_devices : a->geom.raid_disks, chunk_sectors, added,
                                       nadded, why, whylen); /* grow_raid0_online.c */
    if (a->geom.level == LAYOUT_LEVEL_LINEAR && !chunk_sectors && !layout && !array_sectors)
        return array_grow_linear_online(a, raid_devices ? raid_devices : a->geom.raid_disks, added, nadded, why,
                                        whylen); /* grow_linear.c */
    int l = a->geom.layout;
    if (layout && (l = layout_from_name(a->geom.level, layout)) < 0)
        return uraid_why(why, whylen, "RAID-%d has no layout '%s'", a->geom.level, layout), -EINVAL;
    return array_grow_online(a, raid_devices ? raid_devices : a->geom.raid_disks,
                             chunk_sectors ? chunk_sectors : a->geom.chunk_sectors, l, added, nadded, array_sectors,
                             NULL, why, whylen);
}
