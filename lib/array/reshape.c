/* uraid_grow_members: RAID-4/5/6 gain members or change chunk or layout
 * offline (and --level, reshape_level.c), recorded as md records a
 * reshape, so md and uraid can each carry on the other's.
 *
 * What is written when (docs/FORMAT.md has the same in prose):
 *   1. start: every check first, nothing written on a refusal. Then the new
 *      members' superblocks (their slots, data_offset = the old members',
 *      new_offset = -shift, RESHAPE_ACTIVE at position 0), flushed; then
 *      the old members' (raid_disks = N, delta_disks, new_level/layout/
 *      chunk, RESHAPE_ACTIVE | NEW_OFFSET, reshape_position 0), events + 1.
 *      A kill between the two leaves members at position 0 and members not
 *      reshaping one event behind: both read the old layout everywhere, and
 *      the next run (the reference is the newest) carries on from 0.
 *   2. windows of new stripes (reshape_copy.c), each read whole from the
 *      old layout and written whole in the new one; reshape_position goes to
 *      every superblock after a flush of the data below it, when the next
 *      window would need it (reshape_geom.h's safety rule) and every
 *      checkpoint_ms.
 *   3. end: raid_disks = N, data_offset = old - shift, data_size + shift,
 *      RESHAPE_ACTIVE and NEW_OFFSET cleared, events + 1.
 *   A member lost on the way (reshape_fail.c): its role faulty in every
 *   other member's superblock at once (events + 1, the position kept), then
 *   the reshape goes on without it; a degraded array starts so. */
#include "array/reshape.h"
#include "array/reshape_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

#define RESHAPE_BITS (MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET | MD_FEATURE_RESHAPE_BACKWARDS)
/* md's super_1_allow_new_offset: new data must start 36 KiB past the superblock */
#define MD_NEW_OFFSET_MIN_FROM_SB 72u

#define say grow_say
#define same_array grow_same_array
#define level_text grow_level_text
#define write_all grow_write_all

/* ---- reading the members ---------------------------------------------------- */

static int open_all(struct grow *gr)
{
    for (int i = 0; i < gr->n; i++) {
        char mwhy[300];
        int rc = member_open_why(gr->name[i], 0, &gr->dev[i], mwhy, sizeof mwhy);
        if (rc)
            return say(gr, rc, "member %s: cannot open: %s", gr->name[i], mwhy);
        const char *spec = gr->p->member_sim ? gr->p->member_sim[i] : NULL;
        if (spec && *spec && (rc = member_apply_spec(&gr->dev[i], spec, mwhy, sizeof mwhy)) != 0)
            return say(gr, rc, "member %s: %s", gr->name[i], mwhy);
        for (int j = 0; j < i; j++)
            if (array_same_file(gr->name[i], gr->name[j]))
                return say(gr, -EINVAL, "%s and %s are the same member: give each once", gr->name[j], gr->name[i]);
        char swhy[400];
        rc = array_read_superblock(gr->dev[i], &gr->sb[i], swhy, sizeof swhy);
        if (rc && !gr->is_added[i])
            return say(gr, rc, "%s", swhy);
        gr->sb_ok[i] = rc == 0;
    }
    return 0;
}

/* The reference: the member with the highest events among those of the
 * first member's array. */
static void pick_ref(struct grow *gr)
{
    gr->ref = 0;
    for (int i = 0; i < gr->n; i++)
        if (gr->sb_ok[i] && !memcmp(gr->sb[i].set_uuid, gr->sb[0].set_uuid, 16) &&
            gr->sb[i].events > gr->sb[gr->ref].events)
            gr->ref = i;
}

int grow_same_array(const struct grow *gr, int i)
{
    return gr->sb_ok[i] && !memcmp(gr->sb[i].set_uuid, gr->sb[gr->ref].set_uuid, 16);
}

/* Head room on member i: sectors between what md's metadata occupies
 * (superblock + 36 KiB, the bad-block log) and data_offset. */
uint64_t reshape_headroom(const struct md_sb *sb, uint64_t bitmap_bytes)
{
    uint64_t floor = sb->super_offset + MD_NEW_OFFSET_MIN_FROM_SB;
    if (sb->bblog_offset && sb->bblog_size) {
        int64_t end = md_sb_bblog_sector(sb) + sb->bblog_size;
        if (end > 0 && (uint64_t)end > floor)
            floor = (uint64_t)end;
    }
    if ((sb->feature_map & MD_FEATURE_BITMAP_OFFSET) && bitmap_bytes) {
        int64_t end = (int64_t)sb->super_offset + sb->bitmap_offset + (int64_t)((bitmap_bytes + 511) / 512);
        if (end > 0 && (uint64_t)end > floor)
            floor = (uint64_t)end;
    }
    floor = (floor + 7) & ~7ull;
    return sb->data_offset > floor ? sb->data_offset - floor : 0;
}

/* Tail room on a member: data sectors past the array's per-member size. */
uint64_t reshape_tailroom(const struct md_sb *sb, uint64_t size)
{
    return sb->data_size > size ? sb->data_size - size : 0;
}

const char *grow_level_text(int level)
{
    static const char *names[] = {"RAID-0", "RAID-1", "", "", "RAID-4", "RAID-5", "RAID-6"};
    return level >= 0 && level <= 6 ? names[level] : level == 10 ? "RAID-10" : "this level";
}

/* A device number for each new member: unused in dev_roles and by the members. */
static int new_dev_number(struct grow *gr, uint32_t *dn)
{
    for (uint32_t d = 0; d < gr->tmpl.max_dev; d++) {
        int used = gr->tmpl.dev_roles[d] != MD_ROLE_SPARE;
        for (int i = 0; i < gr->n && !used; i++)
            used = !gr->is_added[i] && gr->sb[i].dev_number == d;
        if (!used) {
            *dn = d;
            return 0;
        }
    }
    return say(gr, -EOPNOTSUPP, "the superblocks have no free device number for another member (max_dev %u)",
               gr->tmpl.max_dev);
}

static int check_added(struct grow *gr, int nold, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    /* linear keeps no per-member size: a new member needs room for one chunk of data */
    uint64_t need = R->data_offset + (R->level == LAYOUT_LEVEL_LINEAR ? 2048 : R->size);
    int have = (int)R->raid_disks; /* the old slots, a missing one's too */
    if (gr->n - nold != N - have || N > URAID_MAX_MEMBERS)
        return say(gr, -EINVAL, "--raid-devices %d needs %d new member%s (--add), %d given", N, N - have,
                   N - have == 1 ? "" : "s", gr->n - nold);
    for (int i = nold; i < gr->n; i++) {
        struct md_sb placed = *R;
        array_place_member(&placed, R, gr->dev[i]->size / SECTOR);
        if (same_array(gr, i))
            return say(gr, -EEXIST, "new member %s is already a member of this array", gr->name[i]);
        if (gr->dev[i]->size / SECTOR < need || placed.data_size < need - R->data_offset)
            return say(gr, -ENOSPC, "new member %s is too small: %llu sectors, the array needs %llu (data offset %llu "
                       "+ %llu per member)", gr->name[i], (unsigned long long)(gr->dev[i]->size / SECTOR),
                       (unsigned long long)need, (unsigned long long)R->data_offset, (unsigned long long)R->size);
    }
    return 0;
}

/* Member i's superblock as a new member in slot `slot` with device number
 * dn: the reference's, with its own identity and an empty bad-block log. */
static int new_member_sb(struct grow *gr, int i, uint32_t dn, int slot)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    struct md_sb *sb = &gr->sb[i];
    *sb = *R;
    sb->dev_number = dn;
    sb->feature_map &= ~(MD_FEATURE_BAD_BLOCKS | MD_FEATURE_RECOVERY_OFFSET | MD_FEATURE_REPLACEMENT);
    sb->recovery_offset = 0;
    sb->cnt_corrected_read = 0;
    sb->devflags = 0;
    array_place_member(sb, R, gr->dev[i]->size / SECTOR); /* 1.0, 0.90: at its own end */
    int rc = array_random_bytes(sb->device_uuid, 16);
    if (rc)
        return say(gr, rc, "cannot make a device UUID: %s", uraid_strerror(rc));
    gr->tmpl.dev_roles[dn] = (uint16_t)slot;
    gr->at[slot] = i;
    gr->sb_ok[i] = 1;
    gr->fresh[i] = 1;
    return 0;
}

/* The new members' superblocks, the template's reshape fields, the geometry
 * (from: the array's, or its RAID-6 takeover's; to: the new one). */
int grow_plan_restripe(struct grow *gr, int nold, const struct layout_geom *from, const struct layout_geom *to)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    int mrc = grow_data_moves(gr);
    if (mrc)
        return mrc;
    int N = to->raid_disks;
    uint32_t unit = R->chunksize > to->chunk_sectors ? R->chunksize : to->chunk_sectors;
    if (R->size % to->chunk_sectors)
        return say(gr, -EINVAL, "the member size (%llu sectors) is not a multiple of the new chunk (%u KiB): make the "
                   "array smaller first (uraid grow --size), or choose a smaller chunk",
                   (unsigned long long)R->size, to->chunk_sectors / 2);
    uint64_t room = UINT64_MAX;
    for (int i = 0; i < nold; i++)
        if (reshape_headroom(&gr->sb[i], gr->bm_bytes) < room)
            room = reshape_headroom(&gr->sb[i], gr->bm_bytes);
    uint64_t shift = reshape_choose_shift(room, unit), tail = UINT64_MAX;
    for (int i = 0; i < nold; i++)
        if (reshape_tailroom(&gr->sb[i], R->size) < tail)
            tail = reshape_tailroom(&gr->sb[i], R->size);
    /* the same member count may go either way: md moves the data up (backwards) when the room is past it */
    int back = !shift && N == from->raid_disks && nold == N && reshape_choose_shift(tail, unit);
    if (back)
        shift = reshape_choose_shift(tail, unit);
    if (!shift)
        return say(gr, -ENOSPC, "too little head room before the data to grow without a backup file: %llu "
                   "sectors free before data_offset %llu, %u needed (one chunk): %llu sectors missing",
                   (unsigned long long)room, (unsigned long long)R->data_offset, (unsigned)reshape_min_shift(unit),
                   (unsigned long long)(reshape_min_shift(unit) - room));
    char gwhy[200];
    if (reshape_geom_init_dir(&gr->g, from, to, R->size, shift, back, gwhy, sizeof gwhy))
        return say(gr, -EINVAL, "%s", gwhy);
    grow_start_record(gr, from, to);
    gr->tmpl.raid_disks = (uint32_t)N;
    gr->tmpl.delta_disks = N - from->raid_disks;
    /* a slot missing from the start: no device holds it in the record (md's super_1_sync marks a failed one so) */
    for (uint32_t dn = 0; dn < gr->tmpl.max_dev; dn++)
        if (gr->tmpl.dev_roles[dn] < R->raid_disks && gr->gone[gr->tmpl.dev_roles[dn]])
            gr->tmpl.dev_roles[dn] = MD_ROLE_FAULTY;
    for (int i = nold; i < gr->n; i++) {
        /* the added members take the slots after the array's, in order (nold: the members given, a degraded
         * array's missing ones aside) */
        int rc = grow_new_member(gr, i, (int)R->raid_disks + (i - nold));
        if (rc)
            return rc;
    }
    return 0;
}

int grow_new_member(struct grow *gr, int i, int slot)
{
    uint32_t dn = 0;
    int rc = new_dev_number(gr, &dn);
    return rc ? rc : new_member_sb(gr, i, dn, slot);
}

/* Linear gains members as md's linear_add does: appended after the last,
 * no data moved, the superblocks say raid_disks = N (one write, events +
 * 1) and the array is the longer concatenation. RAID-1 gains mirrors as
 * md's raid1_add_disk into a new slot does: the same write, each new
 * mirror recorded as recovering from sector 0 (RECOVERY_OFFSET), which
 * the recovery that follows fills (uraid_grow_members runs it). */
static int plan_linear(struct grow *gr, int nold, int N)
{
    gr->tmpl = gr->sb[gr->ref];
    gr->tmpl.raid_disks = (uint32_t)N;
    for (int i = nold; i < gr->n; i++) {
        uint32_t dn = 0;
        int rc = new_dev_number(gr, &dn);
        if (rc == 0)
            rc = new_member_sb(gr, i, dn, i);
        if (rc)
            return rc;
        if (gr->tmpl.level == 1) {
            gr->sb[i].feature_map |= MD_FEATURE_RECOVERY_OFFSET;
            gr->sb[i].recovery_offset = 0;
        }
    }
    gr->appended = gr->tmpl.level == 1 ? 2 : 1;
    return 0;
}

/* A RAID-1 of fewer mirrors, as md's raid1_reshape makes it: only the
 * slots from N up may go, and only when no member holds them (md: "cannot
 * reduce number of devices" while they are in use); the superblocks then
 * say N raid devices. Linear loses no member (md cannot). */
static int drop_mirrors(struct grow *gr, int nmembers, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    if (R->level != 1)
        return say(gr, -EINVAL, "linear has %u members: --raid-devices %d would drop some (md cannot remove a linear "
                   "member)", R->raid_disks, N);
    if (N < 1 || gr->n > nmembers)
        return say(gr, -EINVAL, "a RAID-1 of %d mirrors takes no new member: give the array's members alone", N);
    gr->degraded_ok = 1;
    gr->drop_from = N;
    int rc = grow_check_old(gr, nmembers);
    for (int s = N; rc == 0 && s < (int)R->raid_disks; s++)
        if (!gr->gone[s])
            return say(gr, -EBUSY, "slot %d holds mirror %s: md drops a mirror only from an empty slot; fail and "
                       "remove it first (uraid fail and uraid remove while it serves), or leave it out of the "
                       "members given here, then --raid-devices %d", s, gr->name[gr->at[s]], N);
    int insync = 0;
    for (int s = 0; rc == 0 && s < N; s++)
        insync += !gr->gone[s];
    if (rc == 0 && !insync)
        return say(gr, -EINVAL, "no mirror in slots 0-%d holds the data: --raid-devices %d would leave none", N - 1, N);
    if (rc)
        return rc;
    gr->tmpl = *R;
    md_sb_drop_slots(&gr->tmpl, (uint32_t)N);
    gr->nslots = N;
    gr->appended = 5;
    return write_all(gr);
}

/* The new mirrors filled: the array opened as any command opens it and
 * its recovery run to the end (a kill leaves md's checkpoint, from which
 * `uraid rebuild` or md carries on). */
static int recover_mirrors(struct grow *gr, char *why, size_t whylen)
{
    struct uraid_open_params op = {.member_sim = gr->p->member_sim};
    struct uraid_array *a;
    int rc = uraid_open(gr->name, gr->n, &op, &a, why, whylen);
    if (rc)
        return rc;
    struct uraid_job_params jp = {.slot = -1};
    rc = uraid_job_start(a, URAID_JOB_RECOVER, &jp, why, whylen);
    if (rc == 0) {
        struct uraid_job_status st;
        rc = uraid_job_wait(a, &st);
        if (rc || st.result)
            uraid_why(why, whylen, "the new mirrors' recovery failed: %s (run 'uraid rebuild' with every member to "
                      "carry it on)", st.why[0] ? st.why : uraid_strerror(rc ? rc : st.result));
        rc = rc ? rc : st.result;
    }
    int crc = uraid_close(a);
    return rc ? rc : crc;
}

/* ---- carrying on a reshape already on the members --------------------------- */

static int plan_resume(struct grow *gr, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    int nold = (int)R->raid_disks - R->delta_disks, back = reshape_sb_backwards(R);
    int nall = nold > (int)R->raid_disks ? nold : (int)R->raid_disks;
    if (R->new_level != (uint32_t)R->level || (R->delta_disks < 0 && !back))
        return say(gr, -EOPNOTSUPP, "the reshape on the members (%d -> %u members, level %d -> %u) is not one uraid "
                   "can carry on yet: it carries on RAID-4/5/6 restripes within one level", nold, R->raid_disks,
                   R->level, R->new_level);
    const struct uraid_grow_params *p = gr->p;
    /* RAID-6 -> RAID-5 goes through a restripe to the -6 layout: the same --level 5 again carries it on */
    gr->drop_q = p->level_set && p->level == 5 && R->new_level == 6 && layout_from_6((int)R->new_layout) >= 0 &&
                 (!N || N == (int)R->raid_disks - 1);
    gr->to_raid4 = p->level_set && p->level == 4 && R->new_level == 5 && R->new_layout == LAYOUT_PARITY_LAST;
    gr->to_raid0 = p->level_set && p->level == 0 && R->new_level == 5 && R->new_layout == LAYOUT_PARITY_LAST &&
                   (!N || N == (int)R->raid_disks - 1);
    /* a RAID-0's grow (reshape_raid0.c): a RAID-4 missing its parity, asked for with the RAID-0's count */
    if (R->new_level == 4 && grow_raid4_parity_lost(R) && (p->level_set ? p->level == 0 : N == (int)R->raid_disks - 1))
        gr->to_raid0 = 1;
    if (gr->to_raid0)
        N = 0;
    if (gr->drop_q)
        N = 0;
    if ((p->chunk_sectors && p->chunk_sectors != R->new_chunk) ||
        (p->level_set && p->level != (int)R->new_level && !gr->drop_q && !gr->to_raid4 && !gr->to_raid0) ||
        (p->layout && layout_from_name((int)R->new_level, p->layout) != (int)R->new_layout))
        return say(gr, -EBUSY, "a reshape to chunk %u KiB, layout %s is already in progress (at array sector %llu): "
                   "give the same options again or use --continue", R->new_chunk / 2,
                   layout_name((int)R->new_level, (int)R->new_layout) ? layout_name((int)R->new_level, (int)R->new_layout)
                                                                      : "-",
                   (unsigned long long)R->reshape_position);
    if (!(R->feature_map & MD_FEATURE_NEW_OFFSET) || R->new_offset == 0 || (R->new_offset > 0) != back)
        return say(gr, -EOPNOTSUPP, "the reshape on the members uses a backup file (no data offset change%s): not "
                   "supported yet; carry it on with mdadm --grow --continue",
                   R->new_offset && (R->new_offset > 0) != back ? " in its direction" : "");
    if (N && N != (int)R->raid_disks)
        return say(gr, -EBUSY, "a reshape to %u members is already in progress (at array sector %llu): give the same "
                   "members again or use --continue", R->raid_disks, (unsigned long long)R->reshape_position);
    int nlost = grow_lost_slots(R, nall, NULL);
    if (gr->n < nall - nlost)
        return say(gr, -EINVAL, "a reshape to %u members is in progress: give all %d members (%d given)%s",
                   R->raid_disks, nall - nlost, gr->n, nall > (int)R->raid_disks ? ", the leaving ones too" : "");
    gr->tmpl = *R;
    gr->nslots = nall;
    /* as md's next superblock write: a stale BACKWARDS bit (mdadm's revert of a shrink keeps it) goes */
    gr->tmpl.feature_map &= ~MD_FEATURE_RESHAPE_BACKWARDS;
    if (back && R->delta_disks == 0)
        gr->tmpl.feature_map |= MD_FEATURE_RESHAPE_BACKWARDS;
    /* a member the start's superblocks missed: nothing has moved while the position is the start's */
    uint64_t begin = back ? R->size * (uint64_t)((int)R->raid_disks - (R->level == 6 ? 2 : 1)) : 0;
    int seen[URAID_MAX_MEMBERS] = {0}, fill[URAID_MAX_MEMBERS], nfill = 0;
    for (int i = 0; i < gr->n; i++) {
        const struct md_sb *sb = &gr->sb[i];
        /* a new member whose superblock a kill cut off at the very start
         * (nothing has moved yet): it gets one now */
        if (!same_array(gr, i) && gr->is_added[i] && R->reshape_position == 0 &&
            gr->dev[i]->size / SECTOR >= R->data_offset + R->size) {
            fill[nfill++] = i;
            continue;
        }
        if (!same_array(gr, i))
            return say(gr, -EBUSY, "member %s is not part of the reshape in progress (to %u members): give the same "
                       "members again or use --continue", gr->name[i], R->raid_disks);
        uint16_t role = sb->dev_number < R->max_dev ? R->dev_roles[sb->dev_number] : MD_ROLE_SPARE;
        if (role == MD_ROLE_FAULTY && nlost)
            continue; /* it failed during the reshape: the reshape goes on without it */
        int behind = sb->events + 1 < R->events ||
                     (!(sb->feature_map & MD_FEATURE_RESHAPE_ACTIVE) && R->reshape_position != begin);
        if (role >= nall || seen[role] || behind || sb->data_offset != R->data_offset)
            return say(gr, -EINVAL, "member %s is not an up-to-date member of the reshape (events %llu, the array's "
                       "%llu)", gr->name[i], (unsigned long long)sb->events, (unsigned long long)R->events);
        int rc = grow_bb_load(gr, i);
        if (rc)
            return rc;
        seen[role] = 1;
        gr->at[role] = i;
        gr->recovering[i] = !!(sb->feature_map & MD_FEATURE_RECOVERY_OFFSET);
    }
    for (int s = nold, f = 0; s < (int)R->raid_disks && f < nfill; s++)
        for (uint32_t dn = 0; !seen[s] && dn < R->max_dev; dn++)
            if (R->dev_roles[dn] == s) {
                int rc = new_member_sb(gr, fill[f++], dn, s);
                if (rc)
                    return rc;
                seen[s] = 1;
            }
    int rc = grow_place_lost(gr, R, nall, seen);
    if (rc)
        return rc;
    for (int s = 0; s < nall; s++)
        if (!seen[s] && !gr->gone[s])
            return say(gr, -EINVAL, "slot %d of the reshape to %u members has no member among those given: give "
                       "every member, old and new", s, R->raid_disks);
    struct layout_geom from = {R->level, (int)R->layout, nold, R->chunksize};
    struct layout_geom to = {(int)R->new_level, (int)R->new_layout, (int)R->raid_disks, R->new_chunk};
    char gwhy[200];
    if (reshape_geom_init_dir(&gr->g, &from, &to, R->size, reshape_sb_shift(R), back, gwhy, sizeof gwhy) ||
        reshape_position_ok(&gr->g, R->reshape_position, gwhy, sizeof gwhy))
        return say(gr, -EINVAL, "the reshape on the members: %s", gwhy);
    gr->old_off = R->data_offset;
    gr->pos = gr->ckpt = R->reshape_position;
    return 0;
}

/* A kill while the end's superblocks went out leaves some members done
 * (the reference) and others one event behind, still reshaping. The end is
 * written only after the last window and a flush, so all the data is in the
 * new geometry: those members get the end's superblock too. *found = 0 when
 * the members show no such state. */
static int finish_interrupted(struct grow *gr, int *found, struct uraid_grow_result *res)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    int lag = -1, seen[URAID_MAX_MEMBERS] = {0}, nleft = 0;
    for (int i = 0; i < gr->n; i++) {
        const struct md_sb *sb = &gr->sb[i];
        int faulty = sb->dev_number < R->max_dev && R->dev_roles[sb->dev_number] == MD_ROLE_FAULTY;
        if (same_array(gr, i) && !faulty && (sb->feature_map & MD_FEATURE_RESHAPE_ACTIVE) && sb->events + 1 == R->events &&
            sb->raid_disks == R->raid_disks && sb->new_offset != 0 &&
            sb->data_offset + (uint64_t)(int64_t)sb->new_offset == R->data_offset)
            lag = i;
    }
    *found = lag >= 0;
    if (!*found)
        return 0;
    const struct md_sb *L = &gr->sb[lag];
    for (int i = 0; i < gr->n; i++) {
        struct md_sb *sb = &gr->sb[i];
        uint16_t role = same_array(gr, i) && sb->dev_number < R->max_dev ? R->dev_roles[sb->dev_number] : MD_ROLE_SPARE;
        int reshaping = !!(sb->feature_map & MD_FEATURE_RESHAPE_ACTIVE);
        uint64_t off = reshaping ? sb->data_offset + (uint64_t)(int64_t)sb->new_offset : sb->data_offset;
        /* a shrink's leaving member: a spare in the end's record, in a slot past it in the reshape's */
        int leaving = role == MD_ROLE_SPARE && same_array(gr, i) && L->delta_disks < 0 &&
                      sb->dev_number < L->max_dev && L->dev_roles[sb->dev_number] < L->raid_disks - L->delta_disks;
        if (role == MD_ROLE_FAULTY && same_array(gr, i))
            continue; /* failed during the reshape: the end is written without it */
        if ((!leaving && (role >= R->raid_disks || seen[role])) || sb->events + 1 < R->events || off != R->data_offset)
            return say(gr, -EINVAL, "the reshape's end was cut off, and member %s is not one of its members "
                       "(events %llu, the array's %llu): give every member, old and new", gr->name[i],
                       (unsigned long long)sb->events, (unsigned long long)R->events);
        if (reshaping) {
            sb->data_size = sb->data_offset > off ? sb->data_size + (sb->data_offset - off)
                                                  : sb->data_size - (off - sb->data_offset);
            sb->data_offset = off;
            /* every new stripe was written whole: a member recovering with the reshape is in sync (md's
             * end_reshape sets recovery_offset = MaxSector) */
            sb->feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
            sb->recovery_offset = 0;
        }
        if (leaving) {
            gr->at[R->raid_disks + (uint32_t)nleft++] = i;
            continue;
        }
        seen[role] = 1;
        gr->at[role] = i;
    }
    int rc = grow_place_lost(gr, R, (int)R->raid_disks, seen), nseen = 0;
    for (int s = 0; s < (int)R->raid_disks; s++)
        nseen += seen[s] || gr->gone[s];
    if (rc == 0 && nseen != (int)R->raid_disks)
        rc = say(gr, -EINVAL, "the reshape's end was cut off: give all %u members (%d given)", R->raid_disks, gr->n);
    if (rc)
        return rc;
    int np = R->level == 6 ? 2 : 1;
    res->resumed = 1;
    res->raid_devices = (int)R->raid_disks;
    res->from_sectors = R->size * (uint64_t)((int)R->raid_disks - L->delta_disks - np);
    res->to_sectors = R->size * (uint64_t)((int)R->raid_disks - np);
    res->backwards = L->new_offset > 0;
    res->start_position = res->backwards ? 0 : res->to_sectors;
    res->shift = reshape_sb_shift(L);
    gr->tmpl = *R;
    gr->nslots = (int)R->raid_disks + nleft;
    return write_all(gr);
}

/* A takeover (--level: superblocks alone, no data moved) cut off while its
 * superblocks went out leaves members one event behind with the old level
 * or member count. Nothing moved between the two events, so those members
 * get the reference's superblock. 1 when some were healed. */
static int heal_takeover(struct grow *gr, int *healed)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    *healed = 0;
    if (R->feature_map & MD_FEATURE_RESHAPE_ACTIVE)
        return 0;
    gr->tmpl = *R;
    for (int i = 0; i < gr->n; i++) {
        const struct md_sb *sb = &gr->sb[i];
        if (!same_array(gr, i) || sb->events + 1 != R->events || (sb->feature_map & MD_FEATURE_RESHAPE_ACTIVE) ||
            (sb->level == R->level && sb->raid_disks == R->raid_disks && sb->layout == R->layout &&
             sb->chunksize == R->chunksize))
            continue;
        if (R->level == 0 && sb->level != 0 && R->size) /* as grow_to_raid0 wrote the others */
            gr->sb[i].data_size = R->size;
        int rc = grow_write_one(gr, i);
        if (rc)
            return rc;
        *healed = 1;
    }
    return 0;
}

static int finish(struct grow *gr)
{
    int frc = grow_flush_all(gr);
    if (frc)
        return frc;
    gr->tmpl.feature_map &= ~RESHAPE_BITS;
    gr->tmpl.reshape_position = 0;
    gr->tmpl.delta_disks = 0;
    gr->tmpl.new_offset = 0;
    gr->tmpl.level = (int)gr->tmpl.new_level;
    gr->tmpl.layout = gr->tmpl.new_layout;
    gr->tmpl.chunksize = gr->tmpl.new_chunk;
    /* md_finish_reshape moves every member's data offset, the leaving ones' too */
    for (int s = 0; s < grow_slots(gr); s++) {
        if (gr->gone[s]) /* faulty: its superblock is not written again */
            continue;
        struct md_sb *sb = &gr->sb[gr->at[s]];
        sb->data_offset = reshape_new_off(&gr->g, gr->old_off);
        sb->data_size = gr->g.backwards ? sb->data_size - gr->g.shift : sb->data_size + gr->g.shift;
        /* every new stripe was written whole, on every member */
        sb->feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
        sb->recovery_offset = 0;
        /* a shrink's leaving members: spares, as md's raid5_finish_reshape and remove_and_add_spares leave them */
        if (s >= (int)gr->tmpl.raid_disks)
            gr->tmpl.dev_roles[sb->dev_number] = MD_ROLE_SPARE;
    }
    int rc = write_all(gr);
    if (rc == 0 && gr->drop_q)
        return grow_drop_q(gr);
    if (rc == 0 && gr->to_raid0)
        return grow_to_raid0(gr);
    return rc == 0 && gr->to_raid4 ? grow_to_raid4(gr) : rc;
}

/* The geometry asked for: the array's with the member count, chunk and
 * layout given. 0, -EALREADY when that is the array's already, or a
 * refusal. *geo = 1 when a chunk, layout or level was given. */
static int target(struct grow *gr, int N, struct layout_geom *to, int *geo)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    const struct uraid_grow_params *p = gr->p;
    *to = (struct layout_geom){R->level, (int)R->layout, N, R->chunksize};
    *geo = p->chunk_sectors || p->layout || p->level_set;
    if (!*geo)
        return 0;
    if (R->level == 0 && N == (int)R->raid_disks && !p->layout && (!p->level_set || !p->level) &&
        (!p->chunk_sectors || p->chunk_sectors == R->chunksize))
        /* the same chunk change again after it ended (a kill after its last write) */
        return say(gr, -EALREADY, "the RAID-0 has %d members and chunk %u KiB already: nothing to do", N,
                   R->chunksize / 2);
    if (R->level < 4 || R->level > 6)
        return say(gr, -EOPNOTSUPP, "%s has no chunk or layout to change here: RAID-4/5/6 restripe to another chunk "
                   "or layout (RAID-0 its chunk)", level_text(R->level));
    if (p->level_set && p->level != R->level)
        return say(gr, -EOPNOTSUPP, "changing %s to RAID-%d is not supported yet", level_text(R->level), p->level);
    if (p->chunk_sectors)
        to->chunk_sectors = p->chunk_sectors;
    if (p->layout && (to->layout = layout_from_name(R->level, p->layout)) < 0)
        return say(gr, -EINVAL, "%s has no layout '%s' (%s)", level_text(R->level), p->layout,
                   R->level == 4 ? "parity-last" : R->level == 5 ? "left-symmetric, right-symmetric, left-asymmetric, "
                   "right-asymmetric, parity-first, parity-last" : "left-symmetric, ..., left-symmetric-6, ...");
    int same_layout = to->layout == (int)R->layout || R->level == 4;
    if (N == (int)R->raid_disks && to->chunk_sectors == R->chunksize && same_layout)
        return say(gr, -EALREADY, "the array already has %d members, chunk %u KiB and layout %s: nothing to do", N,
                   R->chunksize / 2, layout_name(R->level, (int)R->layout));
    return 0;
}

/* The same RAID-0 grow run again (members and --add, the RAID-0's new
 * count) on a RAID-4 missing its last slot, no reshape left: its reshape
 * ended, the takeover back to RAID-0 is still to come (reshape_raid0.c).
 * A shrink never gives --add. */
static int raid0_takeover_due(struct grow *gr, int nmembers)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    return !gr->p->level_set && gr->p->raid_devices == (int)R->raid_disks - 1 && gr->n > nmembers &&
           !(R->feature_map & MD_FEATURE_RESHAPE_ACTIVE) && grow_raid4_parity_lost(R);
}

/* A new grow: the checks, then the start's superblocks. */
static int start(struct grow *gr, int nmembers)
{
    int N = gr->p->raid_devices ? gr->p->raid_devices : (int)gr->sb[gr->ref].raid_disks, geo = 0;
    if (gr->p->resume_only)
        return say(gr, -EINVAL, "no reshape is in progress on these members: nothing to continue");
    const struct md_sb *R = &gr->sb[gr->ref];
    int done = N == (int)R->raid_disks && gr->n > nmembers;
    for (int i = nmembers; i < gr->n && done; i++)
        /* (a new member that failed during the reshape is faulty now) */
        done = same_array(gr, i) && gr->sb[i].dev_number < R->max_dev &&
               (R->dev_roles[gr->sb[i].dev_number] < N || R->dev_roles[gr->sb[i].dev_number] == MD_ROLE_FAULTY);
    int recovering = 0;
    for (int i = 0; i < gr->n && done; i++)
        recovering |= same_array(gr, i) && (gr->sb[i].feature_map & MD_FEATURE_RECOVERY_OFFSET);
    if (done && recovering && (R->level == 1 || gr->p->level_set)) {
        gr->resumed_mirrors = 1; /* the same grow again after a kill in the new mirrors' (or Q's) recovery */
        return 0;
    }
    if (gr->p->level_set && gr->p->level != R->level && R->level >= 0 && R->level <= 6) {
        int want = gr->p->level, more = (R->level == 5 && want == 6) || R->level == 0;
        int fewer = (R->level == 6 && want == 5) || want == 0;
        int nold = nmembers, NL = gr->p->raid_devices ? gr->p->raid_devices
                                                      : (int)R->raid_disks + (more ? 1 : fewer ? -1 : 0);
        /* md's raid0_takeover_raid45 takes a parity-last array missing its parity (a RAID-0's grow ends so) */
        gr->degraded_ok = want == 0 && (R->level == 4 || (R->level == 5 && R->layout == LAYOUT_PARITY_LAST));
        int rc = grow_check_old(gr, nold);
        if (rc == 0 && NL > (int)R->raid_disks)
            rc = check_added(gr, nold, NL);
        if (rc == 0)
            rc = grow_plan_level(gr, nold, NL);
        return rc || gr->written ? rc : write_all(gr);
    }
    if (raid0_takeover_due(gr, nmembers)) {
        /* the same RAID-0 grow again, cut off between its reshape's end and the takeover back
         * (reshape_raid0.c): the RAID-4 missing its parity taken over alone */
        gr->degraded_ok = 1;
        int rc = grow_check_old(gr, gr->n);
        if (rc == 0) {
            gr->tmpl = *R;
            rc = grow_to_raid0(gr);
        }
        return rc;
    }
    /* more members, or another chunk: mdadm's way, through a RAID-4 missing its parity */
    int r0_chunk = R->level == 0 && N == (int)R->raid_disks && gr->n == nmembers && gr->p->chunk_sectors &&
                   gr->p->chunk_sectors != R->chunksize && !gr->p->layout && (!gr->p->level_set || !gr->p->level);
    if (R->level == 0 && (N > (int)R->raid_disks || r0_chunk)) {
        int rc = grow_check_old(gr, nmembers);
        if (rc == 0 && !r0_chunk)
            rc = check_added(gr, nmembers, N);
        if (rc == 0)
            rc = grow_plan_raid0(gr, nmembers, N);
        return rc ? rc : write_all(gr);
    }
    struct layout_geom to;
    if (gr->p->level_set && gr->p->level == R->level && N == (int)R->raid_disks && gr->n == nmembers &&
        !gr->p->chunk_sectors && !gr->p->layout && !gr->p->array_sectors)
        /* --level alone, the level the array has (a takeover cut off and healed above, or done before) */
        return say(gr, -EALREADY, "the array is %s of %d members already: nothing to do", grow_level_text(R->level), N);
    if (done && !gr->p->chunk_sectors && !gr->p->layout && !gr->p->level_set)
        /* the same grow again after it ended (a kill after its last write) */
        return say(gr, -EALREADY, "the array already has %d members, the new ones among them: nothing to do", N);
    int rc = target(gr, N, &to, &geo);
    if (rc)
        return rc;
    if (N == (int)R->raid_disks && !geo && gr->n == nmembers && gr->p->array_sectors)
        /* the same shrink again after it ended (a kill after its last write) */
        return say(gr, -EALREADY, "the array already has %d members: nothing to do", N);
    if (N < (int)R->raid_disks && (R->level == 1 || R->level == LAYOUT_LEVEL_LINEAR))
        return drop_mirrors(gr, nmembers, N);
    if (N == (int)R->raid_disks && (R->level == 1 || R->level == LAYOUT_LEVEL_LINEAR) && gr->n == nmembers &&
        !gr->p->chunk_sectors && !gr->p->layout && !gr->p->level_set && !gr->p->array_sectors)
        return say(gr, -EALREADY, "the %s has %d members already: nothing to do", grow_level_text(R->level), N);
    if (N < (int)R->raid_disks) {
        rc = grow_plan_shrink(gr, nmembers, &to);
        return rc ? rc : write_all(gr);
    }
    if (N == (int)R->raid_disks && !geo)
        return say(gr, -EINVAL, "--raid-devices %d is the array's member count: give more members (--add), fewer "
                   "(with --array-size), or another --chunk, --layout or --level", N);
    gr->degraded_ok = R->level >= 4 && R->level <= 6; /* a restripe within the level */
    rc = grow_check_old(gr, nmembers);
    if (rc == 0)
        rc = check_added(gr, nmembers, N);
    if (rc == 0)
        rc = R->level == LAYOUT_LEVEL_LINEAR || R->level == 1
                 ? plan_linear(gr, nmembers, N)
                 : grow_plan_restripe(gr, nmembers, &(struct layout_geom){R->level, (int)R->layout, (int)R->raid_disks,
                                                                          R->chunksize}, &to);
    return rc ? rc : write_all(gr);
}

int uraid_grow_members(const char *const *members, int nmembers, const char *const *added, int nadded,
                       const struct uraid_grow_params *p, struct uraid_grow_result *res, char *why, size_t whylen)
{
    static const struct uraid_grow_params defaults;
    struct grow *gr = calloc(1, sizeof *gr);
    if (!gr)
        return -ENOMEM;
    uraid_why(why, whylen, "%s", "");
    gr->p = p ? p : &defaults;
    gr->why = why;
    gr->whylen = whylen;
    int rc = 0;
    if (nmembers < 1 || nadded < 0 || nmembers + nadded > URAID_MAX_MEMBERS)
        rc = say(gr, -EINVAL, "give the array's members (at most %d names in all)", URAID_MAX_MEMBERS);
    for (int i = 0; rc == 0 && i < nmembers + nadded; i++) {
        gr->name[gr->n] = i < nmembers ? members[i] : added[i - nmembers];
        gr->is_added[gr->n++] = i >= nmembers;
    }
    if (rc == 0)
        rc = open_all(gr);
    struct uraid_grow_result r = {0};
    int active = 0, ended = 0;
    if (rc == 0) {
        pick_ref(gr);
        rc = grow_bitmap_load(gr);
    }
    if (rc == 0) {
        r.from_level = gr->sb[gr->ref].level;
        active = !!(gr->sb[gr->ref].feature_map & MD_FEATURE_RESHAPE_ACTIVE);
        rc = active ? plan_resume(gr, gr->p->raid_devices) : finish_interrupted(gr, &ended, &r);
        /* carrying on: every member records the same position before anything moves */
        if (rc == 0 && active)
            rc = grow_checkpoint(gr, gr->pos);
    }
    int healed = 0;
    /* a restripe's cut-off end closed: the takeover after it (RAID-6 -> 5, 5 -> 4) is still to come */
    if (rc == 0 && ended && gr->p->level_set && gr->p->level != gr->sb[gr->ref].level)
        ended = 0;
    if (rc == 0 && ended && raid0_takeover_due(gr, nmembers)) /* a RAID-0 grow's takeover back */
        ended = 0;
    if (rc == 0 && !active && !ended && (gr->p->level_set || gr->sb[gr->ref].level == 0))
        rc = heal_takeover(gr, &healed); /* (a RAID-0 grow ends in a takeover too) */
    if (rc == 0 && !active && !ended)
        rc = start(gr, nmembers);
    if (rc == -EALREADY && healed) { /* the cut-off takeover is complete now */
        const struct md_sb *R = &gr->sb[gr->ref];
        struct layout_geom lg = {R->level, (int)R->layout, (int)R->raid_disks, R->chunksize};
        rc = 0;
        r.resumed = 1;
        r.appended = 4;
        r.raid_devices = (int)R->raid_disks;
        r.from_sectors = r.to_sectors = R->size * (uint64_t)layout_data_disks(&lg);
        ended = 1;
    }
    if (rc == 0 && gr->resumed_mirrors) {
        const struct md_sb *R = &gr->sb[gr->ref];
        r.resumed = 1;
        struct layout_geom lg = {R->level, (int)R->layout, (int)R->raid_disks, R->chunksize};
        r.appended = gr->appended = R->level == 1 ? 2 : 3;
        r.raid_devices = (int)R->raid_disks;
        r.from_sectors = r.to_sectors = R->size * (uint64_t)layout_data_disks(&lg);
        ended = 1;
    }
    if (rc == 0 && gr->appended >= 3 && !gr->resumed_mirrors) {
        const struct md_sb *T = &gr->tmpl;
        struct layout_geom lg = {T->level, (int)T->layout, (int)T->raid_disks, T->chunksize};
        r.from_sectors = r.to_sectors = T->size * (uint64_t)layout_data_disks(&lg); /* no data moved */
        r.raid_devices = (int)T->raid_disks;
        r.appended = gr->appended;
        ended = 1;
    } else if (rc == 0 && gr->appended && !gr->resumed_mirrors) {
        for (int s = 0; s < (int)gr->tmpl.raid_disks; s++) {
            r.to_sectors += gr->sb[gr->at[s]].data_size;
            if (s < nmembers)
                r.from_sectors += gr->sb[gr->at[s]].data_size;
        }
        r.raid_devices = (int)gr->tmpl.raid_disks;
        r.appended = gr->appended;
        if (gr->tmpl.level == 1) /* mirrors: the size stays */
            r.from_sectors = r.to_sectors = gr->sb[gr->ref].size;
        ended = 1;
    }
    if (rc == 0 && !ended) {
        r.resumed = active;
        r.from_sectors = gr->from_before ? gr->from_before : reshape_from_sectors(&gr->g);
        r.to_sectors = reshape_to_sectors(&gr->g);
        r.start_position = gr->pos;
        r.shift = gr->g.shift;
        r.backwards = gr->g.backwards;
        r.raid_devices = gr->g.to.raid_disks;
        rc = grow_copy(gr);
        if (rc == 0)
            rc = finish(gr);
        if (rc == 0 && (gr->drop_q || gr->to_raid0))
            r.raid_devices--; /* the Q or parity member is a spare now */

    }
    for (int i = 0; i < gr->n; i++) {
        member_close(gr->dev[i]);
        gr->dev[i] = NULL;
    }
    if (rc == 0 && (gr->appended == 2 || gr->appended == 3))
        rc = recover_mirrors(gr, why, whylen);
    if (res) {
        r.level = gr->tmpl.level;
        *res = r;
    }
    grow_bitmap_free(gr);
    grow_bb_free(gr);
    free(gr);
    return rc;
}
