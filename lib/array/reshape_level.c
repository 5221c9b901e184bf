/* uraid grow --level: RAID-5 <-> RAID-6 as md changes them.
 *
 * md changes a level only by a takeover that moves no data (raid5.c's
 * raid6_takeover, raid5_takeover_raid6), then, where the layout asked for
 * differs, a restripe within the new level (raid5_run refuses a reshape
 * whose new_level differs from level). So:
 *   RAID-5 (N) -> RAID-6 (N + 1), layout given as its -6 form (or
 *     "preserve"): the takeover alone. The superblocks say level 6, the
 *     -6 layout (the RAID-5 data and P where they were, Q on the new last
 *     member), raid_disks N + 1; the new member is recovering from sector
 *     0 (RECOVERY_OFFSET), and its recovery (Q) follows in the foreground.
 *   RAID-5 -> RAID-6 with another layout (the default: the RAID-5 one,
 *     e.g. left-symmetric, as mdadm normalises): the takeover and the
 *     restripe recorded at once, as mdadm leaves them: level 6 in the -6
 *     layout on N + 1 members, delta_disks 0, new_layout the target, the
 *     new member recovering with its recovery_offset following the reshape
 *     position (md's reshape_request does the same), data_offset moved
 *     down. Every new stripe is written whole (data, P, Q), so at the end
 *     every member is in sync.
 *   RAID-6 (N) in a -6 layout -> RAID-5 (N - 1): the takeover alone: the
 *     superblocks say level 5, the RAID-5 layout, raid_disks N - 1; the
 *     last member (Q only) becomes a spare.
 *   RAID-6 in another layout -> RAID-5: a restripe to the -6 layout first
 *     (delta_disks 0), then the takeover (grow_drop_q). */
#include "array/reshape.h"

#include <errno.h>
#include <string.h>

int layout_to_6(int l)
{
    if (l >= LAYOUT_LEFT_ASYMMETRIC && l <= LAYOUT_RIGHT_SYMMETRIC)
        return l + LAYOUT_LEFT_ASYMMETRIC_6;
    return l == LAYOUT_PARITY_FIRST ? LAYOUT_PARITY_FIRST_6 : l == LAYOUT_PARITY_LAST ? LAYOUT_PARITY_LAST : -1;
}

int layout_from_6(int l)
{
    if (l >= LAYOUT_LEFT_ASYMMETRIC_6 && l <= LAYOUT_RIGHT_SYMMETRIC_6)
        return l - LAYOUT_LEFT_ASYMMETRIC_6;
    return l == LAYOUT_PARITY_FIRST_6 ? LAYOUT_PARITY_FIRST : l == LAYOUT_PARITY_LAST ? LAYOUT_PARITY_LAST : -1;
}

/* RAID-5 -> RAID-6 on N members (N - 1 old, one added). */
static int to_raid6(struct grow *gr, int nold, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    const struct uraid_grow_params *p = gr->p;
    int l6 = layout_to_6((int)R->layout);
    if (N != (int)R->raid_disks + 1 || gr->n - nold != 1)
        return grow_say(gr, -EINVAL, "md turns a RAID-5 of %u members into a RAID-6 of %u: give --raid-devices %u "
                        "and one new member (--add NEW)", R->raid_disks, R->raid_disks + 1, R->raid_disks + 1);
    if (l6 < 0)
        return grow_say(gr, -EOPNOTSUPP, "RAID-5 layout %u has no RAID-6 form md takes over", R->layout);
    struct layout_geom from = {6, l6, N, R->chunksize}, to = from;
    to.layout = (int)R->layout; /* mdadm's default: the RAID-5 layout, Q rotating */
    if (p->layout && !strcmp(p->layout, "preserve"))
        to.layout = l6;
    else if (p->layout && (to.layout = layout_from_name(6, p->layout)) < 0)
        return grow_say(gr, -EINVAL, "RAID-6 has no layout '%s' (left-symmetric, ..., left-symmetric-6, ..., or "
                        "preserve)", p->layout);
    if (p->chunk_sectors)
        to.chunk_sectors = p->chunk_sectors;
    if (to.layout == l6 && to.chunk_sectors == R->chunksize) {
        /* the takeover alone: Q recovered onto the new member */
        gr->tmpl = *R;
        gr->tmpl.level = 6;
        gr->tmpl.layout = (uint32_t)l6;
        gr->tmpl.raid_disks = (uint32_t)N;
        int rc = grow_new_member(gr, nold, nold);
        if (rc)
            return rc;
        gr->sb[nold].feature_map |= MD_FEATURE_RECOVERY_OFFSET;
        gr->sb[nold].recovery_offset = 0;
        gr->appended = 3;
        return 0;
    }
    int rc = grow_plan_restripe(gr, nold, &from, &to);
    if (rc)
        return rc;
    gr->sb[nold].feature_map |= MD_FEATURE_RECOVERY_OFFSET;
    gr->sb[nold].recovery_offset = 0;
    gr->recovering[nold] = 1;
    return 0;
}

int grow_drop_q(struct grow *gr)
{
    struct md_sb *T = &gr->tmpl;
    int last = (int)T->raid_disks - 1, q = gr->at[last];
    T->level = 5;
    T->layout = (uint32_t)layout_from_6((int)T->layout);
    T->new_level = 5;
    T->new_layout = T->layout;
    T->raid_disks = (uint32_t)last;
    T->dev_roles[gr->sb[q].dev_number] = MD_ROLE_SPARE;
    /* the members that stay first: a kill before the Q member's write
     * leaves it one event behind, no longer a member of the newer array */
    int rc = grow_write_all(gr);
    if (rc)
        return rc;
    gr->sb[q].feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
    gr->sb[q].recovery_offset = 0;
    rc = grow_write_one(gr, q);
    if (rc == 0)
        gr->appended = gr->appended ? gr->appended : 4;
    return rc;
}

/* RAID-6 (N) -> RAID-5 (N - 1). */
static int to_raid5(struct grow *gr, int nold, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    const struct uraid_grow_params *p = gr->p;
    if (N != (int)R->raid_disks - 1 || gr->n != nold)
        return grow_say(gr, -EINVAL, "md turns a RAID-6 of %u members into a RAID-5 of %u (the Q member becomes a "
                        "spare): give --raid-devices %u (or none) and no new member", R->raid_disks,
                        R->raid_disks - 1, R->raid_disks - 1);
    if (p->chunk_sectors && p->chunk_sectors != R->chunksize)
        return grow_say(gr, -EOPNOTSUPP, "change the level and the chunk in two runs (the chunk first)");
    int l5 = layout_from_6((int)R->layout);
    if (p->layout && layout_from_name(5, p->layout) < 0)
        return grow_say(gr, -EINVAL, "RAID-5 has no layout '%s'", p->layout);
    int want = p->layout ? layout_from_name(5, p->layout) : l5 >= 0 ? l5 : (int)R->layout;
    if (l5 >= 0 && want != l5)
        return grow_say(gr, -EOPNOTSUPP, "change the level and the layout in two runs (the level first)");
    if (l5 >= 0) {
        gr->tmpl = *R;
        return grow_drop_q(gr); /* the takeover alone */
    }
    int l6 = layout_to_6(want);
    if (l6 < 0)
        return grow_say(gr, -EOPNOTSUPP, "RAID-5 layout %d has no RAID-6 form to restripe to first", want);
    struct layout_geom from = {6, (int)R->layout, (int)R->raid_disks, R->chunksize}, to = from;
    to.layout = l6;
    int rc = grow_plan_restripe(gr, nold, &from, &to);
    if (rc == 0)
        gr->drop_q = 1;
    return rc;
}

int grow_plan_level(struct grow *gr, int nold, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    int want = gr->p->level;
    if (R->level == 5 && want == 6)
        return to_raid6(gr, nold, N);
    if (R->level == 6 && want == 5)
        return to_raid5(gr, nold, N);
    return grow_say(gr, -EOPNOTSUPP, "changing RAID-%d to RAID-%d is not supported yet (RAID-5 <-> RAID-6 are)",
                    R->level, want);
}
