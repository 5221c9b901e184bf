/* Member management while an array is open (the control socket's fail,
 * remove and add): md's `mdadm --manage --fail/--remove/--add`.
 *
 * Member states these operations move between (per member):
 *   slot IN_SYNC --fail--> FAULTY (array_member_failed: 0xfffe in the
 *                          others' dev_roles) --remove--> slot MISSING
 *                          (dev_roles entry 0xffff, as md's super_1_sync
 *                          writes for a device no longer in the array)
 *   extra SPARE/STALE --remove--> gone (closed)
 *   extra FAULTY --remove--> gone (kept open until close: it held a slot
 *                          and may be that slot's old_dev, see array.h)
 *   (new file) --add--> extra SPARE (role 0xffff in its own superblock)
 *   (former member) --add--> slot REBUILDING, re-added (md's --re-add):
 *                          when the write-intent bitmap covers every write
 *                          since it left, its recovery rebuilds only the
 *                          dirty chunks (readd_slot says when); otherwise
 *                          it becomes a spare for a full rebuild.
 * A rebuild that fills a slot whose member was removed keeps that member
 * open (job_retire_member) but lists it nowhere, so the same file can be
 * added again: md's fail/remove/add loop runs any number of times.
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

#include "array/array.h"
#include "array/dataio.h"
#include "log.h"

/* A slot whose member was removed keeps its struct member (see above). */
static int slot_present(const struct array_slot *sl) { return sl->dev && sl->state != URAID_MEMBER_MISSING; }

int array_find_member(const struct uraid_array *a, const char *name, int *slot, int *extra)
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
        if (slot_present(&a->slot[s]) && array_same_file(a->slot[s].dev->path, name)) {
            *slot = s;
            return 0;
        }
    for (int e = 0; e < a->nextra; e++)
        if (a->extra[e].dev && array_same_file(a->extra[e].dev->path, name)) {
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
    int rc = array_find_member(a, name, &slot, &extra);
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
    if (!array_survives_without(a, slot)) {
        uraid_why(why, whylen, "failing %s would leave RAID-10 without any copy of some chunks (md's RAID-10 keeps "
                  "one of each); rebuild the other missing members first", name);
        return -EBUSY;
    }
    rc = array_member_failed(a, slot, 0, "failed on an administrator's request");
    job_members_changed(a);
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
    if (array_find_member(a, name, &slot, &extra)) {
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
        /* a faulty member held a slot: readers without a lock may still hold it */
        if (sl->state == URAID_MEMBER_FAULTY && job_retire_member(a, sl->dev) == 0)
            gone = NULL;
        else
            gone = sl->dev;
        bb = sl->badblocks;
        memmove(&a->extra[extra], &a->extra[extra + 1], (size_t)(a->nextra - extra - 1) * sizeof a->extra[0]);
        a->nextra--;
        memset(&a->extra[a->nextra], 0, sizeof a->extra[0]);
    }
    pthread_mutex_unlock(&a->meta_lock);
    member_close(gone);
    free(bb);
    job_members_changed(a);
    int rc = array_write_superblocks(a);
    uraid_log(URAID_LOG_INFO, "member %s removed from the array", name);
    if (rc)
        uraid_why(why, whylen, "%s removed, but the superblocks could not be updated: %s", name, uraid_strerror(rc));
    return rc;
}


/* The lowest device number no member uses (md's choice for a new disk). */
static int free_dev_number(const struct uraid_array *a)
{
    /* md numbers a 0.90 spare from raid_disks up: the numbers below are
     * the slots' descriptors (super_90_sync marks an empty one removed) */
    uint32_t first = a->sb.format == MD_FMT_0_90 ? (uint32_t)a->geom.raid_disks : 0;
    for (uint32_t i = first; i < a->sb.max_dev && i < MD_SB_MAX_DEV; i++) {
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

enum add_mode { ADD_SPARE, ADD_AUTO, ADD_READD };

/* Whether a member that left this array (its superblock `old`) may go back
 * into its slot with only the dirty chunks rebuilt, as md decides for a
 * re-add: it held a slot that is empty now, its device number is free,
 * and the write-intent bitmap covers every write since it left (its
 * events are not older than the bitmap's events_cleared). Returns the
 * slot; -1 with the reason in note when only a full rebuild can bring it
 * back; -2 when it never held a slot (a spare). Caller holds meta_lock. */
static int readd_slot(struct uraid_array *a, const struct md_sb *old, const struct member *m, char *note, size_t len)
{
    uint32_t dn = old->dev_number;
    uint16_t role = dn < old->max_dev && dn < MD_SB_MAX_DEV ? old->dev_roles[dn] : MD_ROLE_SPARE;
    if (role >= (uint16_t)a->geom.raid_disks)
        return -2;
    struct wib_info bi;
    wib_get_info(a, &bi);
    const struct array_slot *sl = &a->slot[role];
    if (slot_present(sl))
        uraid_why(note, len, "slot %u has a member again", role);
    else if (!bi.present)
        uraid_why(note, len, "the array has no write-intent bitmap");
    else if (bi.stale_at_open)
        uraid_why(note, len, "the write-intent bitmap was out of date when the array was opened");
    else if (old->events > a->sb.events)
        uraid_why(note, len, "its events (%llu) are ahead of the array's (%llu)", (unsigned long long)old->events,
                  (unsigned long long)a->sb.events);
    else if (old->events < bi.events_cleared)
        uraid_why(note, len, "the bitmap was cleared since it left (its events %llu, bits cleared at %llu)",
                  (unsigned long long)old->events, (unsigned long long)bi.events_cleared);
    else if (old->feature_map & (MD_FEATURE_RECOVERY_OFFSET | MD_FEATURE_BAD_BLOCKS))
        uraid_why(note, len, "%s", (old->feature_map & MD_FEATURE_RECOVERY_OFFSET) ? "it was being rebuilt itself"
                                                                                 : "its bad-block log lists sectors");
    else if (dn >= a->sb.max_dev || (a->sb.dev_roles[dn] != MD_ROLE_SPARE && a->sb.dev_roles[dn] != MD_ROLE_FAULTY &&
                                     a->sb.dev_roles[dn] != role))
        uraid_why(note, len, "its device number %u is in use", dn);
    else if (m->size / 512 < old->data_offset + a->member_sectors)
        uraid_why(note, len, "it is smaller than the array needs");
    else
        return role;
    return -1;
}

/* Another member in this array with device number dn (a re-add keeps its own). */
static int dev_number_used(const struct uraid_array *a, uint32_t dn)
{
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (slot_present(&a->slot[s]) && a->slot[s].sb.dev_number == dn)
            return 1;
    for (int e = 0; e < a->nextra; e++)
        if (a->extra[e].dev && a->extra[e].sb.dev_number == dn)
            return 1;
    return 0;
}

/* Puts m back into its slot as a member being rebuilt from sector 0 whose
 * recovery copies only the bitmap's dirty chunks. 1 on success, 0 when the
 * state changed meanwhile (the caller adds it as a spare), -errno. */
static int readd_member(struct uraid_array *a, struct member *m, const struct md_sb *old, char *why, size_t whylen)
{
    stripe_lock_all(&a->locks); /* the slot changes members: no request between plan and I/O */
    pthread_mutex_lock(&a->meta_lock);
    char note[200] = "";
    int slot = readd_slot(a, old, m, note, sizeof note), rc = 1;
    if (slot >= 0 && dev_number_used(a, old->dev_number))
        slot = -1;
    struct array_slot *sl = slot >= 0 ? &a->slot[slot] : NULL;
    if (sl && sl->dev && (rc = job_retire_member(a, sl->dev)) != 0)
        slot = -1; /* the removed member it replaces stays open until close */
    if (slot >= 0) {
        struct array_slot in = {.dev = m, .sb = *old, .state = URAID_MEMBER_REBUILDING, .data_offset = old->data_offset};
        in.sb.feature_map |= MD_FEATURE_RECOVERY_OFFSET;
        in.sb.recovery_offset = 0;
        a->sb.dev_roles[old->dev_number] = (uint16_t)slot;
        __atomic_or_fetch(&a->job.readd_mask, 1u << slot, __ATOMIC_ACQ_REL);
        slot_publish(a, sl, &in);
        rc = 1;
    }
    pthread_mutex_unlock(&a->meta_lock);
    stripe_unlock_all(&a->locks);
    if (slot < 0)
        return rc < 0 ? rc : 0;
    int wr = array_write_superblocks(a);
    uraid_log(URAID_LOG_INFO, "member %s re-added to slot %d: only the chunks the write-intent bitmap marks are "
              "rebuilt", m->path, slot);
    uraid_why(why, whylen, "%s re-added to slot %d: its recovery rebuilds only the chunks written since it left",
              m->path, slot);
    if (wr)
        uraid_why(why, whylen, "%s re-added, but the superblocks could not be updated: %s", m->path,
                  uraid_strerror(wr));
    return wr ? wr : 1;
}

/* Opens path and checks it is neither a member nor another array's:
 * 0 with the member open and its old superblock (*ours: it has one of
 * this array). */
static int open_new_member(struct uraid_array *a, const char *path, struct member **out, struct md_sb *old,
                           int *ours, char *why, size_t whylen)
{
    int slot, extra;
    pthread_mutex_lock(&a->meta_lock);
    int known = array_find_member(a, path, &slot, &extra) == 0;
    pthread_mutex_unlock(&a->meta_lock);
    if (known) {
        uraid_why(why, whylen, "%s is already a member of this array", path);
        return -EEXIST;
    }
    int rc = array_open_added(a, path, out, NULL, why, whylen); /* in the others' simulation layers */
    if (rc)
        return rc;
    *ours = 0;
    if (array_read_superblock(*out, old, NULL, 0) == 0) {
        if (memcmp(old->set_uuid, a->sb.set_uuid, 16)) {
            char name[33] = {0};
            memcpy(name, old->set_name, 32);
            uraid_why(why, whylen, "%s belongs to another md array (name '%s'); wipe its superblock to reuse it", path,
                      name);
            member_close(*out);
            return -EEXIST;
        }
        *ours = 1;
    }
    return 0;
}

static int spare_superblock(struct uraid_array *a, struct member *m, char *why, size_t whylen);

/* Writes a spare's superblock on m and lists it in extra[]; m is closed
 * when that cannot be done. */
static int add_as_spare(struct uraid_array *a, struct member *m, char *why, size_t whylen)
{
    int rc = spare_superblock(a, m, why, whylen);
    if (rc) {
        member_close(m);
        return rc;
    }
    /* every superblock (the spare's too) at the new events */
    rc = array_write_superblocks(a);
    if (rc)
        uraid_why(why, whylen, "%s added, but the superblocks could not be updated: %s", m->path, uraid_strerror(rc));
    return rc;
}

/* The spare's own superblock, then its entry in extra[]. */
static int spare_superblock(struct uraid_array *a, struct member *m, char *why, size_t whylen)
{
    const char *path = m->path;
    pthread_mutex_lock(&a->meta_lock);
    struct md_sb sb = a->sb; /* the array-wide fields; the per-member ones are set below */
    uint64_t need = sb.data_offset + a->member_sectors;
    if (m->size / 512 < need) {
        pthread_mutex_unlock(&a->meta_lock);
        uraid_why(why, whylen, "%s is too small: %llu sectors, the array needs %llu (data offset %llu + %llu)", path,
            (unsigned long long)(m->size / 512), (unsigned long long)need, (unsigned long long)sb.data_offset,
            (unsigned long long)a->member_sectors);
        return -ENOSPC;
    }
    int dn = free_dev_number(a);
    if (dn < 0) {
        pthread_mutex_unlock(&a->meta_lock);
        uraid_why(why, whylen, "no free device number in the superblock (max_dev %u)", a->sb.max_dev);
        return -ENOSPC;
    }
    sb.dev_number = (uint32_t)dn;
    sb.dev_roles[dn] = MD_ROLE_SPARE;
    /* where this member's superblock goes: 1.0 and 0.90 keep it at the
     * end, after the data and the same tail the others have (bitmap, log) */
    array_place_member(&sb, &a->sb, m->size / 512);
    if ((sb.format == MD_FMT_1_0 || sb.format == MD_FMT_0_90) && sb.data_size < a->member_sectors) {
        pthread_mutex_unlock(&a->meta_lock);
        uraid_why(why, whylen, "%s is too small: %llu sectors leave %llu for data before a metadata %s "
                  "superblock, the array needs %llu", path, (unsigned long long)(m->size / 512),
                  (unsigned long long)sb.data_size, md_format_name(sb.format), (unsigned long long)a->member_sectors);
        return -ENOSPC;
    }
    sb.recovery_offset = 0;
    sb.feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
    sb.cnt_corrected_read = 0;
    sb.devflags = 0;
    pthread_mutex_unlock(&a->meta_lock);
    if (array_random_bytes(sb.device_uuid, 16)) {
        uraid_why(why, whylen, "cannot get random bytes for the device UUID");
        return -EIO;
    }
    int rc = array_write_new_member(m, &sb);
    if (rc == 0)
        rc = member_flush(m);
    if (rc) {
        uraid_why(why, whylen, "cannot write the superblock of %s: %s", path, uraid_strerror(rc));
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
    uraid_log(URAID_LOG_INFO, "member %s added as a spare (device number %d)", path, dn);
    return 0;
}

/* Adds path: as a spare, or (ADD_AUTO, ADD_READD) back into its slot when
 * it was a member there and the bitmap covers it. 1 re-added, 0 added as a
 * spare (why may say why it was not re-added), or -errno. */
static int add_member(struct uraid_array *a, const char *path, enum add_mode mode, char *why, size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    if (a->readonly) {
        uraid_why(why, whylen, "the array is open read-only");
        return -EROFS;
    }
    if (a->nextra >= URAID_MAX_MEMBERS) {
        uraid_why(why, whylen, "too many spare and stale members");
        return -ENOSPC;
    }
    struct member *m;
    struct md_sb old;
    int ours, rc = open_new_member(a, path, &m, &old, &ours, why, whylen);
    if (rc)
        return rc;
    char note[200] = "";
    int slot = -2;
    if (mode != ADD_SPARE && ours) {
        pthread_mutex_lock(&a->meta_lock);
        slot = readd_slot(a, &old, m, note, sizeof note);
        pthread_mutex_unlock(&a->meta_lock);
    }
    if (mode == ADD_READD && slot == -2) {
        uraid_why(why, whylen, "%s did not hold a slot of this array: nothing to re-add (add it as a spare with "
                  "'uraid add MEMBERS... --spare %s')", path, path);
        member_close(m);
        return -EINVAL;
    }
    int readded = slot >= 0 ? readd_member(a, m, &old, why, whylen) : 0;
    if (readded == -ENOMEM) {
        member_close(m);
        uraid_why(why, whylen, "out of memory");
        return readded;
    }
    if (readded) { /* in its slot (a negative rc: only the superblocks failed, said in why) */
        job_members_changed(a);
        array_maybe_auto_rebuild(a);
        return readded;
    }
    if (slot >= -1)
        uraid_log(URAID_LOG_INFO, "member %s cannot be re-added (%s): it is added as a spare and rebuilt in full",
                  path, note[0] ? note : "the array changed meanwhile");
    rc = add_as_spare(a, m, why, whylen);
    /* without a bitmap md never tries a re-add: an add is then silent, as mdadm's */
    if (rc == 0 && slot >= -1 && (mode == ADD_READD || a->bitmap))
        uraid_why(why, whylen, "%s added as a spare for a full rebuild, not re-added: %s", path,
                  note[0] ? note : "the array changed meanwhile");
    job_members_changed(a);
    array_maybe_auto_rebuild(a);
    return rc;
}

int array_manage_add(struct uraid_array *a, const char *path, char *why, size_t whylen)
{
    int rc = add_member(a, path, ADD_AUTO, why, whylen);
    return rc > 0 ? 0 : rc;
}

int uraid_add_spare(struct uraid_array *a, const char *path, char *why, size_t whylen)
{
    return add_member(a, path, ADD_SPARE, why, whylen);
}

int uraid_readd(struct uraid_array *a, const char *path, char *why, size_t whylen)
{
    return add_member(a, path, ADD_READD, why, whylen);
}
