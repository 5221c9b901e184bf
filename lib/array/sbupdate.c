/* Superblock updates: the array-wide fields every member gets (md's
 * super_1_sync), the events, the roles of absent members dropped, and the
 * dirty mark before the first write (md's md_write_start). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array/array.h"
#include "log.h"

#define RESHAPE_BITS (MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET | MD_FEATURE_RESHAPE_BACKWARDS)

static uint64_t now_seconds(void) { return (uint64_t)time(NULL); }

/* The array-wide fields of the template go into each member's own
 * superblock, which keeps its per-member fields (dev_number, device_uuid,
 * data_offset, bad-block log, corrected reads...). */
static void merge_array_fields(struct md_sb *dst, const struct md_sb *tmpl)
{
    dst->events = tmpl->events;
    dst->utime = tmpl->utime;
    dst->resync_offset = tmpl->resync_offset;
    dst->size = tmpl->size; /* uraid grow --size */
    dst->max_dev = tmpl->max_dev;
    memcpy(dst->dev_roles, tmpl->dev_roles, sizeof dst->dev_roles);
    dst->v090_spares = tmpl->v090_spares;
    /* the geometry: the end of a reshape job that changed the chunk or layout */
    dst->level = tmpl->level;
    dst->layout = tmpl->layout;
    dst->chunksize = tmpl->chunksize;
    /* a reshape's record is array-wide too (the same on every member outside one) */
    dst->feature_map = (dst->feature_map & ~RESHAPE_BITS) | (tmpl->feature_map & RESHAPE_BITS);
    dst->raid_disks = tmpl->raid_disks;
    dst->reshape_position = tmpl->reshape_position;
    dst->delta_disks = tmpl->delta_disks;
    dst->new_level = tmpl->new_level;
    dst->new_layout = tmpl->new_layout;
    dst->new_chunk = tmpl->new_chunk;
    dst->new_offset = tmpl->new_offset;
}

/* 0.90 has no role for "spare" apart from "nobody": the members present
 * as spares (a rebuilding one too: 0.90 records no recovery offset) are
 * named by device number for md_sb0_from_sb's descriptor table. */
static void note_spares(struct uraid_array *a)
{
    uint32_t bits = 0;
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (a->slot[s].dev && a->slot[s].state == URAID_MEMBER_REBUILDING && a->slot[s].sb.dev_number < 32)
            bits |= 1u << a->slot[s].sb.dev_number;
    for (int e = 0; e < a->nextra; e++)
        if (a->extra[e].dev && a->extra[e].state == URAID_MEMBER_SPARE && a->extra[e].sb.dev_number < 32)
            bits |= 1u << a->extra[e].sb.dev_number;
    a->sb.v090_spares = bits;
}

uint64_t array_member_sectors(const struct md_sb *sb, uint64_t smallest_member_sectors)
{
    if (sb->level != 0)
        return sb->size;
    /* mdadm writes size 0 for RAID-0: the members' data areas, in chunks */
    uint64_t room = smallest_member_sectors > sb->data_offset ? smallest_member_sectors - sb->data_offset : 0;
    return sb->chunksize ? room / sb->chunksize * sb->chunksize : 0;
}

/* md's super_1_sync rebuilds dev_roles on every superblock update: a raid
 * slot stays recorded only for the member that is present in it; an absent
 * member's entry becomes 0xffff. Without this, a member left out of a
 * degraded write is only one event behind if the process dies before the
 * clean close (first write: events + 1), and assembly, which accepts one
 * event behind, would take it back in sync although it missed the writes.
 * With its role dropped it comes back as a spare and the array stays
 * degraded (and dirty + degraded, so it is refused unless forced). */
static void drop_absent_roles(struct uraid_array *a)
{
    for (uint32_t i = 0; i < a->sb.max_dev && i < MD_SB_MAX_DEV; i++) {
        uint16_t role = a->sb.dev_roles[i];
        if (role >= (uint16_t)a->geom.raid_disks)
            continue; /* spare, faulty, journal: kept as recorded */
        const struct array_slot *sl = &a->slot[role];
        if (!sl->dev || sl->sb.dev_number != i)
            a->sb.dev_roles[i] = MD_ROLE_SPARE;
    }
}

int array_write_superblocks(struct uraid_array *a)
{
    if (a->parent) /* a reshape's old geometry: the members' superblocks are the parent's */
        return array_write_superblocks(a->parent);
    if (a->readonly)
        return -EROFS;
    pthread_mutex_lock(&a->meta_lock);
    drop_absent_roles(a);
    note_spares(a);
    array_check_invariants(a);
    a->sb.events++;
    a->sb.utime = now_seconds();
    /* md writes its bitmap superblock first: after a crash in between the
     * bitmap is one event ahead, which md still accepts */
    wib_write_header(a);
    struct member *devs[2 * URAID_MAX_MEMBERS];
    const struct md_sb *sbs[2 * URAID_MAX_MEMBERS];
    int res[2 * URAID_MAX_MEMBERS];
    int n = 0, nslots, rc = 0, written = 0;
    for (int s = 0; s < array_nslots(a); s++) {
        struct array_slot *sl = &a->slot[s];
        if (!sl->dev || (sl->state != URAID_MEMBER_IN_SYNC && sl->state != URAID_MEMBER_REBUILDING))
            continue;
        merge_array_fields(&sl->sb, &a->sb);
        devs[n] = sl->dev;
        sbs[n++] = &sl->sb;
    }
    nslots = n; /* the spares after them: a spare's failed write fails nothing */
    for (int e = 0; e < a->nextra; e++) {
        struct array_slot *sl = &a->extra[e];
        if (!sl->dev || sl->state != URAID_MEMBER_SPARE)
            continue;
        merge_array_fields(&sl->sb, &a->sb);
        devs[n] = sl->dev;
        sbs[n++] = &sl->sb;
    }
    array_write_superblock_set(a, devs, sbs, n, res);
    for (int i = 0; i < nslots; i++) {
        if (res[i]) {
            uraid_log(URAID_LOG_ERROR, "member %s: cannot write its superblock: %s", devs[i]->path,
                      uraid_strerror(res[i]));
            rc = res[i];
        } else {
            written++;
        }
    }
    if (written) {
        __atomic_store_n(&a->sb_written, 1, __ATOMIC_RELEASE);
        a->corrected_unsaved = 0; /* the counts went out with the superblocks */
    }
    pthread_mutex_unlock(&a->meta_lock);
    return written ? 0 : (rc ? rc : -EIO);
}

int array_write_extra_superblock(struct uraid_array *a, struct array_slot *sl)
{
    pthread_mutex_lock(&a->meta_lock);
    merge_array_fields(&sl->sb, &a->sb);
    struct md_sb sb = sl->sb;
    pthread_mutex_unlock(&a->meta_lock);
    int rc = array_write_superblock(sl->dev, &sb);
    return rc ? rc : member_flush(sl->dev);
}

/* Whether the superblocks still have to say dirty before a write (see
 * array_mark_dirty). */
static int dirty_pending(struct uraid_array *a)
{
    int absent = 0;
    for (int s = 0; s < a->geom.raid_disks; s++)
        absent |= !__atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE);
    return !__atomic_load_n(&a->dirty, __ATOMIC_ACQUIRE) || __atomic_load_n(&a->dirty_partial, __ATOMIC_ACQUIRE) ||
           (!__atomic_load_n(&a->sb_written, __ATOMIC_ACQUIRE) && absent);
}

int array_mark_dirty(struct uraid_array *a)
{
    /* An array opened dirty is already marked on disk, but if it is also
     * degraded (forced open) its superblocks still give the absent members
     * their slots: write them once before the first write so those roles
     * are dropped (drop_absent_roles), or a member that misses these writes
     * would later be taken back in sync at the same events. */
    if (!dirty_pending(a))
        return 0;
    /* The first writes of a served array come many at once: one writes the
     * superblocks, the others wait for it (md's md_write_start), instead
     * of each writing them again, one after another under meta_lock. */
    pthread_mutex_lock(&a->dirty_lock);
    int rc = 0;
    if (dirty_pending(a)) {
        pthread_mutex_lock(&a->meta_lock);
        a->sb.resync_offset = 0;
        pthread_mutex_unlock(&a->meta_lock);
        rc = array_write_superblocks(a);
        if (rc == 0) {
            __atomic_store_n(&a->dirty, 1, __ATOMIC_RELEASE);
            __atomic_store_n(&a->dirty_partial, 0, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&a->dirty_lock);
    return rc;
}
