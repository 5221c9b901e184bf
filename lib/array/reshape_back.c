/* Shrinking a RAID-4/5/6 offline (md's backwards reshape; reshape.c has
 * the rest of the grow, reshape_geom.h the arithmetic, docs/FORMAT.md §5c
 * the record), and the start's record both directions share. */
#include <errno.h>
#include <string.h>

#include "array/reshape.h"
#include "array/reshape_io.h"

#define RESHAPE_BITS (MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET | MD_FEATURE_RESHAPE_BACKWARDS)
#define say grow_say

/* The reshape fields every member gets at the start, in md's record. */
void grow_start_record(struct grow *gr, const struct layout_geom *from, const struct layout_geom *to)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    gr->tmpl = *R;
    gr->tmpl.level = from->level;
    gr->tmpl.layout = (uint32_t)from->layout;
    gr->tmpl.raid_disks = (uint32_t)to->raid_disks;
    gr->tmpl.delta_disks = to->raid_disks - from->raid_disks;
    gr->tmpl.new_level = (uint32_t)to->level;
    gr->tmpl.new_layout = (uint32_t)to->layout;
    gr->tmpl.new_chunk = to->chunk_sectors;
    gr->tmpl.size = gr->g.member_sectors;
    gr->tmpl.new_offset = gr->g.backwards ? (int32_t)gr->g.shift : -(int32_t)gr->g.shift;
    gr->tmpl.reshape_position = reshape_begin(&gr->g);
    /* md's super_1_sync: the BACKWARDS bit only where the member count stays (a shrink is backwards by
     * its negative delta_disks) */
    gr->tmpl.feature_map = (R->feature_map & ~RESHAPE_BITS) | MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET |
                           (gr->g.backwards && gr->tmpl.delta_disks == 0 ? MD_FEATURE_RESHAPE_BACKWARDS : 0);
    gr->old_off = R->data_offset;
    gr->pos = gr->ckpt = gr->tmpl.reshape_position;
}

/* Fewer members (mdadm --grow --raid-devices N, N smaller; chunk and layout
 * may change with it): md's backwards reshape. The data moves up into the
 * room past each member's data (md's new_offset > 0); where there is less
 * than one unit, the member size is cut by what is missing (mdadm does so
 * for RAID-10), which --array-size must allow. The members in slots N and
 * up keep their slots until the end, then become spares. */
int grow_plan_shrink(struct grow *gr, int nmembers, const struct layout_geom *to)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    int mrc = grow_data_moves(gr);
    if (mrc)
        return mrc;
    const struct layout_geom from = {R->level, (int)R->layout, (int)R->raid_disks, R->chunksize};
    if (gr->n > nmembers)
        return say(gr, -EINVAL, "a shrink to %d members takes no new members (--add): give the array's %u members; "
                   "the %u leaving become spares", to->raid_disks, R->raid_disks, R->raid_disks - (uint32_t)to->raid_disks);
    char gwhy[200];
    if (layout_check(to, gwhy, sizeof gwhy))
        return say(gr, -EINVAL, "%s", gwhy);
    int rc = grow_check_old(gr, nmembers);
    if (rc)
        return rc;
    uint32_t unit = R->chunksize > to->chunk_sectors ? R->chunksize : to->chunk_sectors;
    uint64_t room = UINT64_MAX, size = R->size;
    for (int i = 0; i < nmembers; i++)
        if (reshape_tailroom(&gr->sb[i], R->size) < room)
            room = reshape_tailroom(&gr->sb[i], R->size);
    uint64_t shift = reshape_choose_shift(room, unit);
    if (!shift) {
        shift = reshape_min_shift(unit);
        uint64_t cut = shift - room;
        size = R->size > cut ? (R->size - cut) / unit * unit : 0;
    }
    size = size / unit * unit;
    if (size < R->size && gr->bm)
        return say(gr, -ENOSPC, "too little room past the data to shrink without cutting the member size by %llu "
                   "sectors, which the write-intent bitmap would have to follow: remove the bitmap first (uraid grow "
                   "--consistency-policy=resync), shrink, then add it back (--consistency-policy=bitmap)",
                   (unsigned long long)(R->size - size));
    if (!size)
        return say(gr, -ENOSPC, "the members are too small to shrink the array: no room for one %u-sector unit", unit);
    int fk = layout_data_disks(&from), tk = layout_data_disks(to);
    uint64_t now = R->size * (uint64_t)fk, cap = size * (uint64_t)tk, want = gr->p->array_sectors;
    if (!want)
        return say(gr, -EINVAL, "shrinking to %d members cuts the array from %llu to %llu sectors: the %llu sectors "
                   "past the new end would be lost. Shrink the file system (or whatever uses the array) to %lluK or "
                   "less first, then give --array-size %lluK with the grow", to->raid_disks, (unsigned long long)now,
                   (unsigned long long)cap, (unsigned long long)(now - cap), (unsigned long long)(cap / 2),
                   (unsigned long long)(cap / 2));
    if (want > cap)
        return say(gr, -ENOSPC, "--array-size %lluK is more than %d members hold (%lluK, %llu sectors less): "
                   "shrink the file system to %lluK or less first and give that --array-size",
                   (unsigned long long)(want / 2), to->raid_disks, (unsigned long long)(cap / 2),
                   (unsigned long long)(want - cap), (unsigned long long)(cap / 2));
    if (reshape_geom_init_dir(&gr->g, &from, to, size, shift, 1, gwhy, sizeof gwhy))
        return say(gr, -EINVAL, "%s", gwhy);
    grow_start_record(gr, &from, to);
    gr->nslots = (int)R->raid_disks;
    gr->from_before = now;
    return 0;
}
