/* Member management while an array is open (the control socket's fail,
 * remove and add): md's `mdadm --manage --fail/--remove/--add`.
 *
 * Member states these operations move between (per member):
 *   slot IN_SYNC --fail--> FAULTY (array_member_failed: 0xfffe in the
 *                          others' dev_roles) --remove--> slot MISSING
 *                          (dev_roles entry 0xffff, as md's super_1_sync
 *                          writes for a device no longer in the array)
 *   extra SPARE/STALE/FAULTY --remove--> gone (closed)
 *   (new file) --add--> extra SPARE (role 0xffff in its own superblock)
 *
 * A removed raid-slot member's `struct member` stays open until
 * uraid_close: the data path reads a->slot[s].dev without a lock (it may
 * have checked slot_ok just before the member failed, and its error
 * messages read dev->path afterwards), so freeing or clearing the pointer
 * here could crash a request in flight. The slot's state MISSING keeps
 * every new request away from it; uraid_get_info reports it as removed.
 * Spares and stale members in extra[] are never touched by the data path,
 * so those are closed at once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "array/array.h"
#include "log.h"

#define SB_OFFSET_BYTES 4096u

/* A slot whose member was removed keeps its struct member (see above). */
static int slot_present(const struct array_slot *sl) { return sl->dev && sl->state != URAID_MEMBER_MISSING; }

/* Same file: the path as given, or the same inode under another name. */
static int same_file(const char *x, const char *y)
{
    if (!strcmp(x, y))
        return 1;
    struct stat sx, sy;
    if (stat(x, &sx) || stat(y, &sy))
        return 0;
    if (S_ISBLK(sx.st_mode) && S_ISBLK(sy.st_mode))
        return sx.st_rdev == sy.st_rdev;
    return sx.st_dev == sy.st_dev && sx.st_ino == sy.st_ino;
}

/* Finds `name` (a path as given at open, or a raid slot number) among the
 * present members: *slot >= 0 for a raid slot, else *extra >= 0. Caller
 * holds meta_lock. */
static int find_member(struct uraid_array *a, const char *name, int *slot, int *extra)
{
    *slot = *extra = -1;
    char *end;
    long n = strtol(name, &end, 10);
    if (*name && !*end && n >= 0 && n < a->geom.raid_disks) {
        if (!slot_present(&a->slot[n]))
            return -ENODEV;
        *slot = (int)n;
        return 0;
    }
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (slot_present(&a->slot[s]) && same_file(a->slot[s].dev->path, name)) {
            *slot = s;
            return 0;
        }
    for (int e = 0; e < a->nextra; e++)
        if (a->extra[e].dev && same_file(a->extra[e].dev->path, name)) {
            *extra = e;
            return 0;
        }
    return -ENODEV;
}

static const char *state_word(enum uraid_member_state st)
{
    switch (st) {
    case URAID_MEMBER_IN_SYNC: return "in sync";
    case URAID_MEMBER_MISSING: return "removed";
    case URAID_MEMBER_FAULTY: return "faulty";
    case URAID_MEMBER_SPARE: return "a spare";
    case URAID_MEMBER_STALE: return "stale";
    case URAID_MEMBER_REBUILDING: return "being rebuilt";
    }
    return "?";
}

int array_manage_fail(struct uraid_array *a, const char *name, char *why, size_t whylen)
{
    if (a->readonly) {
        uraid_why(why, whylen, "the array is open read-only");
        return -EROFS;
    }
    int slot, extra;
    pthread_mutex_lock(&a->meta_lock);
    int rc = find_member(a, name, &slot, &extra);
    int missing = 0;
    for (int s = 0; s < a->geom.raid_disks; s++)
        missing += !slot_ok(a, s);
    enum uraid_member_state st = slot >= 0 ? a->slot[slot].state : extra >= 0 ? a->extra[extra].state : 0;
    pthread_mutex_unlock(&a->meta_lock);
    if (rc) {
        uraid_why(why, whylen, "%s is not a member of this array", name);
        return -ENODEV;
    }
    if (slot < 0 || st != URAID_MEMBER_IN_SYNC) {
        uraid_why(why, whylen, "%s is %s, not an active member: only active members can be failed", name,
            slot < 0 ? state_word(st) : state_word(st));
        return -EINVAL;
    }
    /* checked here for a clear message; array_member_failed checks again
     * under the lock and refuses (-EIO) without marking anything */
    if (missing + 1 > a->nparity) {
        uraid_why(why, whylen, "failing %s would leave RAID-%d with %d of %d members missing; it survives %d", name,
            a->geom.level, missing + 1, a->geom.raid_disks, a->nparity);
        return -EBUSY;
    }
    rc = array_member_failed(a, slot, 0, "failed on an administrator's request");
    if (rc == -EIO) {
        uraid_why(why, whylen, "failing %s would exceed the redundancy of RAID-%d", name, a->geom.level);
        return -EBUSY;
    }
    return rc;
}

int array_manage_remove(struct uraid_array *a, const char *name, char *why, size_t whylen)
{
    if (a->readonly) {
        uraid_why(why, whylen, "the array is open read-only");
        return -EROFS;
    }
    int slot, extra;
    pthread_mutex_lock(&a->meta_lock);
    if (find_member(a, name, &slot, &extra)) {
        pthread_mutex_unlock(&a->meta_lock);
        uraid_why(why, whylen, "%s is not a member of this array", name);
        return -ENODEV;
    }
    struct array_slot *sl = slot >= 0 ? &a->slot[slot] : &a->extra[extra];
    if (sl->state == URAID_MEMBER_IN_SYNC) {
        pthread_mutex_unlock(&a->meta_lock);
        uraid_why(why, whylen, "%s is an active member: fail it first", name);
        return -EBUSY;
    }
    uint32_t dn = sl->sb.dev_number;
    if (dn < a->sb.max_dev && dn < MD_SB_MAX_DEV)
        a->sb.dev_roles[dn] = MD_ROLE_SPARE; /* md: no device in the array has this number now */
    struct member *gone = NULL;
    struct md_bblist *bb = NULL;
    if (slot >= 0) {
        /* keep dev open (see the top of this file) */
        __atomic_store_n(&sl->state, URAID_MEMBER_MISSING, __ATOMIC_RELEASE);
    } else {
        gone = sl->dev;
        bb = sl->badblocks;
        memmove(&a->extra[extra], &a->extra[extra + 1], (size_t)(a->nextra - extra - 1) * sizeof a->extra[0]);
        a->nextra--;
        memset(&a->extra[a->nextra], 0, sizeof a->extra[0]);
    }
    pthread_mutex_unlock(&a->meta_lock);
    member_close(gone);
    free(bb);
    int rc = array_write_superblocks(a);
    uraid_log(URAID_LOG_INFO, "member %s removed from the array", name);
    if (rc)
        uraid_why(why, whylen, "%s removed, but the superblocks could not be updated: %s", name, uraid_strerror(rc));
    return rc;
}


/* The lowest device number no member uses (md's choice for a new disk). */
static int free_dev_number(const struct uraid_array *a)
{
    for (uint32_t i = 0; i < a->sb.max_dev && i < MD_SB_MAX_DEV; i++) {
        if (a->sb.dev_roles[i] != MD_ROLE_SPARE)
            continue;
        int used = 0;
        for (int s = 0; s < a->geom.raid_disks && !used; s++)
            used = slot_present(&a->slot[s]) && a->slot[s].sb.dev_number == i;
        for (int e = 0; e < a->nextra && !used; e++)
            used = a->extra[e].dev && a->extra[e].sb.dev_number == i;
        if (!used)
            return (int)i;
    }
    return -1;
}

int array_manage_add(struct uraid_array *a, const char *path, char *why, size_t whylen)
{
    if (a->readonly) {
        uraid_why(why, whylen, "the array is open read-only");
        return -EROFS;
    }
    if (a->nextra >= URAID_MAX_MEMBERS) {
        uraid_why(why, whylen, "too many spare and stale members");
        return -ENOSPC;
    }
    int slot, extra;
    pthread_mutex_lock(&a->meta_lock);
    int known = find_member(a, path, &slot, &extra) == 0;
    pthread_mutex_unlock(&a->meta_lock);
    if (known) {
        uraid_why(why, whylen, "%s is already a member of this array", path);
        return -EEXIST;
    }
    struct member *m;
    char mwhy[300];
    int rc = member_open_why(path, 0, &m, mwhy, sizeof mwhy);
    if (rc) {
        uraid_why(why, whylen, "cannot open %s: %s", path, mwhy);
        return rc;
    }
    struct md_sb old;
    if (array_read_superblock(m, &old, NULL, 0) == 0 && memcmp(old.set_uuid, a->sb.set_uuid, 16)) {
        char name[33] = {0};
        memcpy(name, old.set_name, 32);
        uraid_why(why, whylen, "%s belongs to another md array (name '%s'); wipe its superblock to reuse it", path, name);
        member_close(m);
        return -EEXIST;
    }
    pthread_mutex_lock(&a->meta_lock);
    struct md_sb sb = a->sb; /* the array-wide fields; the per-member ones are set below */
    uint64_t need = sb.data_offset + a->member_sectors;
    if (m->size / 512 < need) {
        pthread_mutex_unlock(&a->meta_lock);
        uraid_why(why, whylen, "%s is too small: %llu sectors, the array needs %llu (data offset %llu + %llu)", path,
            (unsigned long long)(m->size / 512), (unsigned long long)need, (unsigned long long)sb.data_offset,
            (unsigned long long)a->member_sectors);
        member_close(m);
        return -ENOSPC;
    }
    int dn = free_dev_number(a);
    if (dn < 0) {
        pthread_mutex_unlock(&a->meta_lock);
        uraid_why(why, whylen, "no free device number in the superblock (max_dev %u)", a->sb.max_dev);
        member_close(m);
        return -ENOSPC;
    }
    sb.dev_number = (uint32_t)dn;
    sb.dev_roles[dn] = MD_ROLE_SPARE;
    sb.data_size = m->size / 512 - sb.data_offset;
    sb.super_offset = SB_OFFSET_BYTES / 512;
    sb.recovery_offset = 0;
    sb.feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
    sb.cnt_corrected_read = 0;
    sb.devflags = 0;
    pthread_mutex_unlock(&a->meta_lock);
    if (getrandom(sb.device_uuid, 16, 0) != 16) {
        uraid_why(why, whylen, "cannot get random bytes for the device UUID");
        member_close(m);
        return -EIO;
    }
    rc = array_write_new_member(m, &sb);
    if (rc == 0)
        rc = member_flush(m);
    if (rc) {
        uraid_why(why, whylen, "cannot write the superblock of %s: %s", path, uraid_strerror(rc));
        member_close(m);
        return rc;
    }
    pthread_mutex_lock(&a->meta_lock);
    struct array_slot *sl = &a->extra[a->nextra];
    memset(sl, 0, sizeof *sl);
    sl->dev = m;
    sl->sb = sb;
    sl->data_offset = sb.data_offset;
    sl->state = URAID_MEMBER_SPARE;
    a->nextra++;
    pthread_mutex_unlock(&a->meta_lock);
    /* every superblock (the spare's too) at the new events */
    rc = array_write_superblocks(a);
    uraid_log(URAID_LOG_INFO, "member %s added as a spare (device number %d)", path, dn);
    array_maybe_auto_rebuild(a);
    if (rc)
        uraid_why(why, whylen, "%s added, but the superblocks could not be updated: %s", path, uraid_strerror(rc));
    return rc;
}

int uraid_add_spare(struct uraid_array *a, const char *path, char *why, size_t whylen)
{
    return array_manage_add(a, path, why, whylen);
}
