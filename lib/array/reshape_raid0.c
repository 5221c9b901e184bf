/* uraid grow of a RAID-0: more members or another chunk, as mdadm grows one (Grow.c turns
 * the RAID-0 into a RAID-4 missing its parity, reshapes that, and turns it
 * back), so that md can carry on a grow uraid began and uraid one md
 * began:
 *   1. the takeover (md's raid45_takeover_raid0): a RAID-4 of N + 1
 *      members in md's parity-last layout (ALGORITHM_PARITY_N), the data
 *      where it was, slot N (the parity) missing; recorded in the same
 *      superblock write as the reshape's start (md would write it first,
 *      but a RAID-4 of N + 1 missing its parity holds the same bytes as
 *      the RAID-0: either record reads the same);
 *   2. the reshape to N + k + 1 members (md's raid5_start_reshape): the
 *      first new member takes the empty slot N and is recovering, its
 *      recovery_offset following the position as md's reshape_request
 *      moves it (below the position it holds new data rows; above, the
 *      old geometry's parity, which nothing wrote); the others take slots
 *      N + 1 .. N + k - 1; the new parity slot N + k stays missing, so the
 *      new stripes are written without parity and the old ones read
 *      without it (reshape_copy.c reads only data while no old member is
 *      gone);
 *   3. the end, then md's raid0_takeover_raid45 (grow_to_raid0): the
 *      missing parity slot dropped, a RAID-0 of N + k.
 * A kill leaves md's record of step 2; the same grow again (or md, which
 * stops at a RAID-4 missing its parity; `uraid grow --level 0` then takes
 * it back) carries it on. */
#include <errno.h>

#include "array/reshape.h"

int grow_raid0_zone(struct grow *gr, int nold, uint64_t *size)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    *size = UINT64_MAX;
    for (int i = 0; i < nold; i++) {
        uint64_t s = gr->sb[i].data_size / R->chunksize * R->chunksize;
        if (*size != UINT64_MAX && s != *size)
            return grow_say(gr, -EOPNOTSUPP, "member %s holds %llu sectors of data, the others %llu: md takes only a "
                            "RAID-0 of equal members (one zone) over", gr->name[i], (unsigned long long)s,
                            (unsigned long long)*size);
        *size = s;
    }
    return 0;
}

int grow_raid4_parity_lost(const struct md_sb *R)
{
    int lost[URAID_MAX_MEMBERS];
    if (R->level != 4 || R->raid_disks < 2 || R->raid_disks > URAID_MAX_MEMBERS)
        return 0;
    grow_lost_slots(R, (int)R->raid_disks, lost);
    return lost[R->raid_disks - 1];
}

int grow_added_fit(struct grow *gr, int nold, uint64_t size)
{
    uint64_t need = gr->sb[gr->ref].data_offset + size;
    for (int i = nold; i < gr->n; i++)
        if (gr->dev[i]->size / SECTOR < need)
            return grow_say(gr, -ENOSPC, "new member %s is too small: %llu sectors, the array needs %llu (data offset "
                            "%llu + %llu per member)", gr->name[i], (unsigned long long)(gr->dev[i]->size / SECTOR),
                            (unsigned long long)need, (unsigned long long)gr->sb[gr->ref].data_offset,
                            (unsigned long long)size);
    return 0;
}

int grow_plan_raid0(struct grow *gr, int nold, int N)
{
    struct md_sb *R = &gr->sb[gr->ref];
    int mrc = grow_data_moves(gr);
    if (mrc)
        return mrc;
    const struct uraid_grow_params *p = gr->p;
    int n0 = (int)R->raid_disks;
    uint32_t chunk = p->chunk_sectors ? p->chunk_sectors : R->chunksize;
    if (p->layout || (N > n0 && chunk != R->chunksize))
        return grow_say(gr, -EOPNOTSUPP, p->layout ? "RAID-0 has no layout to change"
                                                   : "grow the RAID-0 and change its chunk in two runs");
    uint64_t size = 0;
    int rc = grow_raid0_zone(gr, nold, &size);
    if (rc)
        return rc;
    if ((rc = grow_added_fit(gr, nold, size)) != 0)
        return rc;
    /* the RAID-4 md's takeover makes: every member's size the zone's (a RAID-0 records none) */
    for (int i = 0; i < nold; i++)
        gr->sb[i].size = size;
    R->feature_map &= ~MD_FEATURE_RAID0_LAYOUT; /* one zone: no layout to record */
    struct layout_geom from = {4, LAYOUT_PARITY_LAST, n0 + 1, R->chunksize};
    struct layout_geom to = {4, LAYOUT_PARITY_LAST, N + 1, chunk};
    rc = grow_plan_restripe(gr, nold, &from, &to);
    if (rc)
        return rc;
    gr->gone[N] = 1; /* the new parity slot: no member holds it */
    if (N > n0) { /* the first new member takes the old parity slot, its rows filled as the reshape passes */
        gr->sb[nold].feature_map |= MD_FEATURE_RECOVERY_OFFSET;
        gr->sb[nold].recovery_offset = 0;
        gr->recovering[nold] = 1;
    }
    gr->to_raid0 = 1;
    return 0;
}
