/* A served linear array gaining members (mdadm --grow --raid-devices N
 * --add NEW... on a running linear array: uraid_grow_online and the
 * control socket's grow come here for linear), as mdadm's Grow_Add_device
 * and md's linear_add do it, one new member at a time:
 *   1. every check first (linear, metadata 1.2 or 1.1 as the offline grow
 *      takes, N = the members now + the new ones, each new member big
 *      enough, no job running); a refusal writes nothing;
 *   2. per new member, with no request in flight (geom_lock held for
 *      writing) and no job running (job_lock):
 *      a. its superblock (mdadm's "linear-grow-new"): the array's as it
 *         is (raid_disks and events unchanged), its own device number and
 *         UUID, its role the next slot; flushed;
 *      b. the array appends it (md's linear_add: no data moves, the array
 *         is longer at its end) and every superblock says raid_disks + 1
 *         (events + 1).
 * A kill between a and b leaves the array as it was: its members do not
 * list the new one, whose own role is past their raid_disks (md and the
 * next open ignore it); the same grow again writes it anew. A kill after
 * b leaves the longer array; the same grow again counts the members
 * already in it and adds only the others. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "array/job.h"
#include "log.h"
#include "uraid_grow.h"

struct lin_add {
    const char *path;
    struct member *dev;
    char *why;
    size_t whylen;
};

static int slot_named(const struct uraid_array *a, const char *path)
{
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (a->slot[s].dev && array_same_file(a->slot[s].dev->path, path))
            return 1;
    return 0;
}

static int check_array(const struct uraid_array *a, int N, int nnew, int nin, char *why, size_t whylen)
{
    int n = a->geom.raid_disks;
    if (a->readonly)
        return uraid_why(why, whylen, "the array is open read-only"), -EROFS;
    /* any metadata: a new member's superblock goes where its format puts it (new_sb) */
    if (a->opened_dirty)
        return uraid_why(why, whylen, "the array was not shut down cleanly and its resync has not finished: grow "
                         "it after the resync"), -EUCLEAN;
    if (nnew == 0 && N == n)
        return uraid_why(why, whylen, "the array already has %d members, the new ones among them: nothing to do", n),
               -EALREADY;
    if (N < n)
        return uraid_why(why, whylen, "linear has %d members: --raid-devices %d would drop some (md cannot remove a "
                         "linear member)", n, N), -EINVAL;
    if (N - n != nnew)
        return uraid_why(why, whylen, "--raid-devices %d needs %d new member%s (--add), %d given%s", N, N - n,
                         N - n == 1 ? "" : "s", nnew, nin ? " (the others named are members already)" : ""),
               -EINVAL;
    if (N > URAID_MAX_MEMBERS)
        return uraid_why(why, whylen, "linear of %d members: at most %d", N, URAID_MAX_MEMBERS), -EINVAL;
    for (int s = 0; s < n; s++) {
        const struct array_slot *sl = &a->slot[s];
        if (!sl->dev || sl->state != URAID_MEMBER_IN_SYNC)
            return uraid_why(why, whylen, "slot %d has no member in sync: a linear array cannot run without it", s),
                   -EINVAL;
        if ((sl->badblocks && sl->badblocks->count) || sl->data_offset != a->slot[0].data_offset)
            return uraid_why(why, whylen, "member %s: %s is not supported by grow yet", sl->dev->path,
                             sl->data_offset != a->slot[0].data_offset ? "a data offset unlike the others'"
                                                                       : "a non-empty bad-block list"), -EOPNOTSUPP;
    }
    return 0;
}

/* A device number nobody uses: not in dev_roles, no member's nor spare's. */
static int free_dev_number(const struct uraid_array *a, uint32_t *dn)
{
    for (uint32_t d = 0; d < a->sb.max_dev && d < MD_SB_MAX_DEV; d++) {
        int used = a->sb.dev_roles[d] != MD_ROLE_SPARE;
        for (int s = 0; s < a->geom.raid_disks && !used; s++)
            used = a->slot[s].dev && a->slot[s].sb.dev_number == d;
        for (int e = 0; e < a->nextra && !used; e++)
            used = a->extra[e].sb.dev_number == d;
        if (!used) {
            *dn = d;
            return 0;
        }
    }
    return -EOPNOTSUPP;
}

/* The new member's superblock (step a): slot 0's, its identity, the role s. */
static int new_sb(struct uraid_array *a, struct lin_add *x, int s, struct md_sb *sb)
{
    uint32_t dn = 0;
    if (free_dev_number(a, &dn))
        return uraid_why(x->why, x->whylen, "the superblocks have no free device number for another member "
                         "(max_dev %u)", a->sb.max_dev), -EOPNOTSUPP;
    *sb = a->slot[0].sb;
    sb->dev_number = dn;
    sb->feature_map &= ~(uint32_t)(MD_FEATURE_BAD_BLOCKS | MD_FEATURE_RECOVERY_OFFSET | MD_FEATURE_REPLACEMENT);
    sb->recovery_offset = 0;
    sb->cnt_corrected_read = 0;
    sb->devflags = 0;
    array_place_member(sb, &a->slot[0].sb, x->dev->size / SECTOR); /* 1.0, 0.90: at its own end */
    int rc = array_random_bytes(sb->device_uuid, 16);
    if (rc)
        return uraid_why(x->why, x->whylen, "cannot make a device UUID: %s", uraid_strerror(rc)), rc;
    memcpy(sb->dev_roles, a->sb.dev_roles, sizeof sb->dev_roles);
    sb->events = a->sb.events;
    sb->resync_offset = a->sb.resync_offset;
    sb->raid_disks = (uint32_t)s; /* mdadm's linear-grow-new: the size unchanged, so the others still match */
    sb->dev_roles[dn] = (uint16_t)s;
    return 0;
}

/* Step b's geometry: slot s appended, the member table and size with it. */
static int append_locked(struct uraid_array *a, struct lin_add *x, const struct md_sb *sb, int s)
{
    struct linear_geom *lin = malloc(sizeof *lin);
    uint64_t sizes[URAID_MAX_MEMBERS];
    for (int i = 0; i < s; i++)
        sizes[i] = a->slot[i].sb.data_size;
    sizes[s] = sb->data_size;
    char lwhy[160];
    int rc = lin ? linear_init(lin, s + 1, sizes, a->geom.chunk_sectors, lwhy, sizeof lwhy) : -ENOMEM;
    if (rc) {
        free(lin);
        return uraid_why(x->why, x->whylen, "new member %s: %s", x->path, lin ? lwhy : "out of memory"), rc;
    }
    struct array_slot *sl = &a->slot[s];
    memset(sl, 0, sizeof *sl);
    sl->sb = *sb;
    sl->sb.raid_disks = (uint32_t)s + 1;
    sl->data_offset = a->slot[0].data_offset;
    sl->dev = x->dev;
    sl->state = URAID_MEMBER_IN_SYNC;
    x->dev = NULL;
    a->sb.dev_roles[sb->dev_number] = (uint16_t)s;
    a->sb.raid_disks = (uint32_t)s + 1;
    a->geom.raid_disks = s + 1;
    a->k = layout_data_disks(&a->geom);
    free(a->lin);
    a->lin = lin;
    for (int i = 0; i <= s; i++)
        if (lin->start[i + 1] - lin->start[i] > a->member_sectors)
            a->member_sectors = lin->start[i + 1] - lin->start[i];
    __atomic_store_n(&a->size_sectors, linear_array_sectors(lin), __ATOMIC_RELEASE);
    return 0;
}

/* Steps a and b for one member; under job_lock with no job running. */
static int add_one(struct uraid_array *a, void *ctx)
{
    struct lin_add *x = ctx;
    struct md_sb sb;
    int s = a->geom.raid_disks;
    uint64_t was = a->size_sectors;
    pthread_rwlock_wrlock(&a->geom_lock); /* the requests in flight end first */
    pthread_mutex_lock(&a->meta_lock);    /* no other superblock write meanwhile: the events stay */
    int rc = new_sb(a, x, s, &sb);
    if (rc == 0 && ((rc = array_write_new_member(x->dev, &sb)) != 0 || (rc = member_flush(x->dev)) != 0))
        uraid_why(x->why, x->whylen, "new member %s: cannot write its superblock: %s (nothing else was changed)",
                  x->path, uraid_strerror(rc));
    if (rc == 0)
        rc = append_locked(a, x, &sb, s);
    pthread_mutex_unlock(&a->meta_lock);
    if (rc == 0 && (rc = array_write_superblocks(a)) != 0)
        uraid_why(x->why, x->whylen, "member %s was appended, but the superblocks could not be written to every "
                  "member: %s (run the same grow again)", x->path, uraid_strerror(rc));
    pthread_rwlock_unlock(&a->geom_lock);
    if (rc == 0)
        uraid_log(URAID_LOG_INFO, "linear: member %s appended as slot %d, array size %llu KiB (was %llu KiB); "
                  "clients see the new size when they connect again", x->path, s,
                  (unsigned long long)(a->size_sectors / 2), (unsigned long long)(was / 2));
    return rc;
}

/* New member i: distinct, not in the array, opened, big enough (the
 * offline grow's rule: room for the data offset and one chunk, 1 MiB). */
static int open_new(struct uraid_array *a, const char *const *added, int i, struct member **dev, char *why,
                    size_t whylen)
{
    char mwhy[300];
    uint64_t need = a->slot[0].data_offset + 2048;
    for (int j = 0; j < i; j++)
        if (array_same_file(added[i], added[j]))
            return uraid_why(why, whylen, "%s and %s are the same member: give each once", added[j], added[i]),
                   -EINVAL;
    for (int e = 0; e < a->nextra; e++)
        if (a->extra[e].dev && array_same_file(a->extra[e].dev->path, added[i]))
            return uraid_why(why, whylen, "new member %s is already a spare or stale member of this array", added[i]),
                   -EEXIST;
    int rc = array_open_added(a, added[i], dev, NULL, mwhy, sizeof mwhy);
    if (rc)
        return uraid_why(why, whylen, "new member %s", mwhy), rc;
    pthread_mutex_lock(&a->meta_lock); /* a writer's dirty mark rewrites the superblocks meanwhile */
    struct md_sb ref = a->slot[0].sb, placed = ref;
    pthread_mutex_unlock(&a->meta_lock);
    array_place_member(&placed, &ref, (*dev)->size / SECTOR);
    if ((*dev)->size / SECTOR < need || placed.data_size < need - a->slot[0].data_offset)
        return uraid_why(why, whylen, "new member %s is too small: %llu sectors, the array needs %llu (data offset "
                         "%llu + one chunk)", added[i], (unsigned long long)((*dev)->size / SECTOR),
                         (unsigned long long)need, (unsigned long long)a->slot[0].data_offset), -ENOSPC;
    return 0;
}

int array_grow_linear_online(struct uraid_array *a, int N, const char *const *added, int nadded, char *why,
                             size_t whylen)
{
    struct member *dev[URAID_MAX_MEMBERS] = {0};
    int todo[URAID_MAX_MEMBERS], nnew = 0, rc = 0;
    for (int i = 0; i < nadded; i++) /* appended before a kill: counted as members now */
        if (!slot_named(a, added[i]))
            todo[nnew++] = i;
    rc = check_array(a, N, nnew, nadded - nnew, why, whylen);
    if (rc == 0)
        rc = array_job_refuse_running(a, why, whylen);
    for (int i = 0; rc == 0 && i < nnew; i++)
        rc = open_new(a, added, todo[i], &dev[i], why, whylen);
    for (int i = 0; rc == 0 && i < nnew; i++) {
        struct lin_add x = {.path = added[todo[i]], .dev = dev[i], .why = why, .whylen = whylen};
        rc = array_job_exclusive(a, add_one, &x, why, whylen);
        dev[i] = x.dev; /* NULL once the array holds it */
    }
    for (int i = 0; i < nnew; i++)
        member_close(dev[i]);
    return rc;
}
