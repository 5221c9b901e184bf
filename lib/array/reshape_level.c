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
 *     (delta_disks 0), then the takeover (grow_drop_q).
 *   RAID-4 <-> RAID-5: RAID-4 is RAID-5's parity-last layout (md's
 *     ALGORITHM_PARITY_N): the takeover rewrites the superblocks alone;
 *     another RAID-5 layout is a restripe after it (4 -> 5) or before it
 *     (5 -> 4, to parity-last first).
 *   RAID-1 of 2 <-> RAID-5 of 2: a 2-member RAID-5 holds its data and P
 *     (= the data) at the same member sectors as the mirrors do (md's
 *     raid5_takeover_raid1 and raid1_takeover): the superblocks alone; the
 *     chunk md picks, the largest power of two up to 64 KiB dividing the
 *     size, unless --chunk says.
 *   RAID-0 of N (one zone) -> RAID-4/5 of N + 1 (md's
 *     raid45_takeover_raid0): parity-last, the data where it was, the
 *     parity member the new one, recovering from sector 0, its recovery
 *     (P) in the foreground.
 *   RAID-4/5 of N -> RAID-0 of N - 1 (md's raid0_takeover_raid45): the
 *     parity-last data members are the RAID-0; the parity member becomes a
 *     spare (another RAID-5 layout is restriped to parity-last first). */
#include "array/reshape.h"

#include <errno.h>
#include <stdio.h>
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

/* After a restripe that lost members: the takeover that drops the last
 * slot (RAID-6 -> 5: Q; RAID-4/5 -> 0: the parity) needs every other
 * slot but `bearable` of them; md's raid5_takeover_raid6 leaves a RAID-5
 * missing one member, raid0_takeover_raid45 takes only the data members
 * whole. 0, or a refusal naming the lost members (the restripe's end is
 * on the members already: the array is whole at its restriped level). */
static int takeover_lost(struct grow *gr, int bearable, int level)
{
    const struct md_sb *T = &gr->tmpl;
    int last = (int)T->raid_disks - 1, lost = grow_gone_count(gr, last);
    if (lost <= bearable)
        return 0;
    char names[400] = "";
    size_t k = 0;
    for (int s = 0; s < last && k < sizeof names; s++)
        if (gr->gone[s])
            k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", k ? ", " : "", gr->name[gr->at[s]]);
    return grow_say(gr, -EIO, "the restripe finished without %s, which failed during it; RAID-%d cannot run without "
                    "%s: the array stays %s (layout %s) on %u members, degraded; add spares, let them recover, then "
                    "run the same grow again", names, level, level == 0 ? "a data member" : "two members",
                    grow_level_text((int)T->level), layout_name((int)T->level, (int)T->layout), T->raid_disks);
}

int grow_drop_q(struct grow *gr)
{
    struct md_sb *T = &gr->tmpl;
    int last = (int)T->raid_disks - 1, q = gr->at[last];
    int rc = takeover_lost(gr, 1, 5);
    if (rc)
        return rc;
    T->level = 5;
    T->layout = (uint32_t)layout_from_6((int)T->layout);
    T->new_level = 5;
    T->new_layout = T->layout;
    T->raid_disks = (uint32_t)last;
    if (!gr->gone[last]) /* a Q member that failed stays faulty */
        T->dev_roles[gr->sb[q].dev_number] = MD_ROLE_SPARE;
    /* the members that stay first: a kill before the Q member's write
     * leaves it one event behind, no longer a member of the newer array */
    rc = grow_write_all(gr);
    if (rc)
        return rc;
    gr->sb[q].feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
    gr->sb[q].recovery_offset = 0;
    rc = gr->gone[last] ? 0 : grow_write_one(gr, q);
    if (rc == 0)
        gr->appended = gr->appended ? gr->appended : 4;
    gr->written = 1;
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

/* The superblocks alone say the new level (appended 4: nothing moved, nothing to recover). */
static void takeover(struct grow *gr, int level, int layout, uint32_t chunk)
{
    gr->tmpl = gr->sb[gr->ref];
    gr->tmpl.level = level;
    gr->tmpl.layout = (uint32_t)layout;
    gr->tmpl.new_level = (uint32_t)level;
    gr->tmpl.new_layout = (uint32_t)layout;
    gr->tmpl.chunksize = chunk;
    gr->tmpl.new_chunk = chunk;
    gr->tmpl.feature_map &= ~MD_FEATURE_RAID0_LAYOUT;
    gr->appended = 4;
}

static int same_count(struct grow *gr, int nold, int N, const char *what)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    if (N != (int)R->raid_disks || gr->n != nold)
        return grow_say(gr, -EINVAL, "%s keeps the %u members: give no --raid-devices other than %u and no new "
                        "member", what, R->raid_disks, R->raid_disks);
    return 0;
}

/* RAID-4 -> RAID-5: parity-last as it is, or restriped to the layout given. */
static int raid4_to_5(struct grow *gr, int nold, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    const struct uraid_grow_params *p = gr->p;
    int rc = same_count(gr, nold, N, "RAID-4 -> RAID-5");
    if (rc)
        return rc;
    int want = p->layout ? layout_from_name(5, p->layout) : LAYOUT_PARITY_LAST;
    if (want < 0)
        return grow_say(gr, -EINVAL, "RAID-5 has no layout '%s'", p->layout);
    uint32_t chunk = p->chunk_sectors ? p->chunk_sectors : R->chunksize;
    if (want == LAYOUT_PARITY_LAST && chunk == R->chunksize) {
        takeover(gr, 5, LAYOUT_PARITY_LAST, R->chunksize);
        return 0;
    }
    struct layout_geom from = {5, LAYOUT_PARITY_LAST, N, R->chunksize}, to = {5, want, N, chunk};
    return grow_plan_restripe(gr, nold, &from, &to);
}

int grow_to_raid4(struct grow *gr)
{
    gr->tmpl.level = 4;
    gr->tmpl.layout = 0; /* what mdadm stores for RAID-4: md ignores it */
    gr->tmpl.new_level = 4;
    gr->tmpl.new_layout = 0;
    int rc = grow_write_all(gr);
    if (rc == 0)
        gr->appended = gr->appended ? gr->appended : 4;
    return rc;
}

/* RAID-5 -> RAID-4: parity-last taken over, another layout restriped to it first. */
static int raid5_to_4(struct grow *gr, int nold, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    int rc = same_count(gr, nold, N, "RAID-5 -> RAID-4");
    if (rc)
        return rc;
    if (gr->p->layout && layout_from_name(4, gr->p->layout) < 0)
        return grow_say(gr, -EINVAL, "RAID-4 has one layout, parity-last: '%s' is none", gr->p->layout);
    if (gr->p->chunk_sectors && gr->p->chunk_sectors != R->chunksize)
        return grow_say(gr, -EOPNOTSUPP, "change the level and the chunk in two runs (the chunk first)");
    if (R->layout == LAYOUT_PARITY_LAST) {
        takeover(gr, 4, 0, R->chunksize);
        return 0;
    }
    struct layout_geom from = {5, (int)R->layout, N, R->chunksize}, to = from;
    to.layout = LAYOUT_PARITY_LAST;
    rc = grow_plan_restripe(gr, nold, &from, &to);
    if (rc == 0)
        gr->to_raid4 = 1;
    return rc;
}

/* The members after a restripe to parity-last (or a RAID-4): md's
 * raid0_takeover_raid45, the parity member (the last) dropped, a spare. */
int grow_to_raid0(struct grow *gr)
{
    struct md_sb *T = &gr->tmpl;
    int last = (int)T->raid_disks - 1, p = gr->at[last];
    int rc = takeover_lost(gr, 0, 0);
    if (rc)
        return rc;
    T->level = 0;
    T->layout = 0;
    T->new_level = 0;
    T->new_layout = 0;
    T->raid_disks = (uint32_t)last;
    T->feature_map &= ~MD_FEATURE_RAID0_LAYOUT; /* one zone: no layout to record */
    for (int s = 0; s < last; s++) /* md's raid0_takeover_raid45: rdev->sectors = dev_sectors, its data_size */
        if (!gr->gone[s] && T->size)
            gr->sb[gr->at[s]].data_size = T->size; /* (one zone, whatever the members' sizes) */
    if (!gr->gone[last]) /* a parity member that failed stays faulty */
        T->dev_roles[gr->sb[p].dev_number] = MD_ROLE_SPARE;
    rc = grow_write_all(gr); /* the data members first, as grow_drop_q */
    if (rc == 0 && !gr->gone[last])
        rc = grow_write_one(gr, p);
    if (rc == 0)
        gr->appended = gr->appended ? gr->appended : 4;
    gr->written = 1;
    return rc;
}

/* RAID-4/5 of N -> RAID-0 of N - 1: the parity-last layout's data members are a RAID-0. */
static int parity_to_raid0(struct grow *gr, int nold, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    if (N != (int)R->raid_disks - 1 || gr->n != nold)
        return grow_say(gr, -EINVAL, "md turns a RAID-%d of %u members into a RAID-0 of %u (the parity member becomes "
                        "a spare): give --raid-devices %u (or none) and no new member", R->level, R->raid_disks,
                        R->raid_disks - 1, R->raid_disks - 1);
    /* the chunk it has already: a RAID-0's chunk change cut off before its takeover back, given again */
    if (gr->p->layout || (gr->p->chunk_sectors && gr->p->chunk_sectors != R->chunksize))
        return grow_say(gr, -EOPNOTSUPP, "change the level and the chunk or layout in two runs");
    if (R->level == 4 || R->layout == LAYOUT_PARITY_LAST) {
        gr->tmpl = *R;
        return grow_to_raid0(gr);
    }
    struct layout_geom from = {5, (int)R->layout, (int)R->raid_disks, R->chunksize}, to = from;
    to.layout = LAYOUT_PARITY_LAST;
    int rc = grow_plan_restripe(gr, nold, &from, &to);
    if (rc == 0)
        gr->to_raid0 = 1;
    return rc;
}

/* RAID-1 of 2 <-> RAID-5 of 2. */
static int mirror_parity(struct grow *gr, int nold, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    const struct uraid_grow_params *p = gr->p;
    int rc = same_count(gr, nold, N, R->level == 1 ? "RAID-1 -> RAID-5" : "RAID-5 -> RAID-1");
    if (rc)
        return rc;
    if (R->raid_disks != 2)
        return grow_say(gr, -EOPNOTSUPP, "md changes RAID-1 and RAID-5 into each other with 2 members only (the array "
                        "has %u)", R->raid_disks);
    if (R->level == 5) {
        if (p->layout || p->chunk_sectors)
            return grow_say(gr, -EINVAL, "RAID-1 has no layout or chunk");
        takeover(gr, 1, 0, 0);
        return 0;
    }
    uint32_t chunk = p->chunk_sectors;
    for (uint32_t c = 128; !chunk && c >= LAYOUT_MIN_CHUNK_SECTORS; c >>= 1)
        if (R->size % c == 0)
            chunk = c; /* md's raid5_takeover_raid1: 64 KiB, halved until it divides the size */
    if (!chunk || R->size % chunk)
        return grow_say(gr, -EINVAL, "the mirror size (%llu sectors) is not a multiple of %s: make it smaller first "
                        "(uraid grow --size)", (unsigned long long)R->size,
                        chunk ? "the chunk given" : "4 KiB (md's smallest chunk)");
    int layout = p->layout ? layout_from_name(5, p->layout) : LAYOUT_LEFT_SYMMETRIC;
    if (layout != LAYOUT_LEFT_SYMMETRIC)
        return grow_say(gr, -EOPNOTSUPP, "md takes a RAID-1 over as a left-symmetric RAID-5 (change the layout after)");
    takeover(gr, 5, layout, chunk);
    return 0;
}

/* RAID-0 of N (one zone) -> RAID-4/5 of N + 1, the new member recovered as parity. */
static int raid0_to_parity(struct grow *gr, int nold, int N, int level)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    const struct uraid_grow_params *p = gr->p;
    if (N != (int)R->raid_disks + 1 || gr->n - nold != 1)
        return grow_say(gr, -EINVAL, "md turns a RAID-0 of %u members into a RAID-%d of %u (the new one holds the "
                        "parity): give --raid-devices %u and one new member (--add NEW)", R->raid_disks, level,
                        R->raid_disks + 1, R->raid_disks + 1);
    if ((p->layout && layout_from_name(level, p->layout) != (level == 4 ? 0 : LAYOUT_PARITY_LAST)) ||
        (p->chunk_sectors && p->chunk_sectors != R->chunksize))
        return grow_say(gr, -EOPNOTSUPP, "md takes a RAID-0 over as parity-last with its chunk: change the layout or "
                        "chunk after");
    uint64_t size = 0;
    int rc = grow_raid0_zone(gr, nold, &size);
    if (rc)
        return rc;
    if ((rc = grow_added_fit(gr, nold, size)) != 0)
        return rc;
    takeover(gr, level, level == 4 ? 0 : LAYOUT_PARITY_LAST, R->chunksize);
    gr->tmpl.size = size;
    gr->tmpl.raid_disks = (uint32_t)N;
    rc = grow_new_member(gr, nold, nold);
    if (rc)
        return rc;
    for (int i = 0; i < nold; i++)
        gr->sb[i].size = size;
    gr->sb[nold].size = size;
    gr->sb[nold].feature_map |= MD_FEATURE_RECOVERY_OFFSET;
    gr->sb[nold].recovery_offset = 0;
    gr->appended = 3;
    return 0;
}

int grow_plan_level(struct grow *gr, int nold, int N)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    int want = gr->p->level;
    if (R->level == 5 && want == 6)
        return to_raid6(gr, nold, N);
    if (R->level == 6 && want == 5)
        return to_raid5(gr, nold, N);
    if (R->level == 4 && want == 5)
        return raid4_to_5(gr, nold, N);
    if (R->level == 5 && want == 4)
        return raid5_to_4(gr, nold, N);
    if ((R->level == 1 && want == 5) || (R->level == 5 && want == 1))
        return mirror_parity(gr, nold, N);
    if (R->level == 0 && (want == 4 || want == 5))
        return raid0_to_parity(gr, nold, N, want);
    if ((R->level == 4 || R->level == 5) && want == 0)
        return parity_to_raid0(gr, nold, N);
    return grow_say(gr, -EOPNOTSUPP, "changing RAID-%d to RAID-%d is not supported (md's level changes here: 5 <-> 6, "
                    "4 <-> 5, 1 <-> 5 with 2 members, 0 <-> 4 or 5)", R->level, want);
}
