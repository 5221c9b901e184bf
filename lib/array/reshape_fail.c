/* A member lost in mid-reshape: the reshape goes on degraded, as md's
 * raid5 reshape does (reshape_request reads the old stripes degraded, the
 * new stripes are written without the failed member, super_1_sync records
 * it faulty: dev_roles = 0xfffe in the others' superblocks).
 *
 * Why a kill or a power cut after a loss still loses nothing (the order of
 * reshape_copy.c stays; a loss only takes a member out of it):
 *   - the loss is recorded (offline: every other member's superblock,
 *     events + 1, the position unchanged) before the window it happened
 *     in is done again; a restart finds the member faulty, or, when the
 *     record was cut off, still in the array: then its old rows and the new
 *     rows below the recorded position are what they were (the safety rule
 *     kept every write since that position off them) and the restart redoes
 *     the windows from there, meeting the same failure again;
 *   - the window is done again whole, read degraded from the old rows
 *     (still intact: they lie past every new row written since the
 *     recorded position) and written whole on every member left, so the
 *     new stripes below any later position hold data and parity that agree
 *     without the lost member;
 *   - a loss past what the level can bear (a second one on RAID-5, a third
 *     on RAID-6, counted in the old and in the new geometry) stops the
 *     reshape with nothing recorded for it, as array_member_failed leaves
 *     an array with no redundancy left: the members still describe the
 *     array as it was at the last recorded position. */
#include <errno.h>
#include <string.h>

#include "array/reshape.h"
#include "log.h"
#include "uraid_parity.h"

int grow_gone_count(const struct grow *gr, int n)
{
    int c = 0;
    for (int s = 0; s < n; s++)
        c += gr->gone[s];
    return c;
}

/* Slot s's member is being recovered: a RAID-5 -> 6 restripe's new Q
 * member, in sync only below the reshape position (md moves its
 * recovery_offset with the position), so the old geometry has no Q. */
static int slot_recovering(const struct grow *gr, int s)
{
    return gr->recovering[gr->at[s]];
}

/* Nonzero when geometry g, with slot `slot` gone too, has lost more
 * members than its parity covers; in the old geometry a recovering member
 * counts as lost (its rows there are not written yet). */
static int lost_in(const struct grow *gr, const struct layout_geom *g, int old, int slot)
{
    int n = 0;
    for (int s = 0; s < g->raid_disks; s++)
        n += gr->gone[s] || s == slot || (old && slot_recovering(gr, s));
    return n > layout_parity_count(g);
}

/* Nonzero when one more gone slot `slot` leaves the old or the new geometry unreadable. */
static int too_many_lost(const struct grow *gr, int slot)
{
    const struct layout_geom *f = &gr->g.from, *t = &gr->g.to;
    return (slot < f->raid_disks && lost_in(gr, f, 1, slot)) || (slot < t->raid_disks && lost_in(gr, t, 0, slot));
}

int grow_lose(struct grow *gr, int slot, int err, const char *what)
{
    if (gr->gone[slot])
        return 0;
    const char *name = gr->name[gr->at[slot]];
    if (gr->lost && !too_many_lost(gr, slot)) { /* served: the array marks it and writes its superblocks */
        int rc = gr->lost(gr->lost_ctx, slot, err);
        if (rc == 0)
            gr->gone[slot] = 1;
        else
            uraid_why(gr->why, gr->whylen, "member %s failed while %s (%s) and the array has no redundancy left for "
                      "it: the reshape stopped at array sector %llu", name, what, uraid_strerror(err),
                      (unsigned long long)gr->ckpt);
        return rc;
    }
    if (gr->lost || too_many_lost(gr, slot))
        return uraid_why(gr->why, gr->whylen, "member %s failed while %s at array sector %llu (%s) and the array has "
                         "no redundancy left for it: the reshape stopped (recorded at %llu); replace the member's disk "
                         "by a copy (ddrescue) and run the same grow again", name, what, (unsigned long long)gr->pos,
                         uraid_strerror(err), (unsigned long long)gr->ckpt), err;
    gr->gone[slot] = 1;
    uint32_t dn = gr->sb[gr->at[slot]].dev_number;
    if (dn < gr->tmpl.max_dev)
        gr->tmpl.dev_roles[dn] = MD_ROLE_FAULTY;
    uraid_log(URAID_LOG_WARN, "member %s (slot %d) failed while %s at array sector %llu (%s): marked faulty, the "
              "reshape goes on degraded", name, slot, what, (unsigned long long)gr->pos, uraid_strerror(err));
    return grow_write_all(gr);
}

/* Q-slot order of the blocks uraid_recover takes: data slots, P, Q. */
static int block_of(const struct stripe_map *sm, int m)
{
    int role = sm->disk_role[m];
    if (role == -LAYOUT_ROLE_P)
        return sm->nslots;
    if (role == -LAYOUT_ROLE_Q)
        return sm->nslots + 1;
    for (int j = 0; j < sm->nslots; j++)
        if (sm->slot_disk[j] == m)
            return j;
    return -1;
}

int grow_bad(const struct grow *gr, int s, uint64_t lo, uint64_t len)
{
    if (gr->gone[s] || len == 0)
        return 0;
    if (gr->bad)
        return gr->bad(gr->lost_ctx, s, lo, len);
    const struct md_bblist *l = gr->bb[gr->at[s]];
    return l && l->count && md_bb_check(l, lo, len, NULL, NULL);
}

int grow_old_bad(const struct grow *gr, uint64_t r0, uint64_t r1)
{
    for (int m = 0; m < gr->g.from.raid_disks; m++)
        if (grow_bad(gr, m, gr->old_off + r0, r1 - r0))
            return 1;
    return 0;
}

void grow_bad_written(struct grow *gr, uint64_t lo, uint64_t len)
{
    if (gr->bad)
        return; /* a served array's lists are its own */
    for (int s = 0; s < grow_slots(gr); s++) {
        struct md_bblist *l = gr->bb[gr->at[s]];
        if (gr->gone[s] || !l || !l->count || !md_bb_check(l, lo, len, NULL, NULL))
            continue;
        md_bb_clear(l, lo, len); /* -ENOSPC: kept, which is still right */
        gr->bb_dirty[gr->at[s]] = 1;
    }
}

/* The old members whose rows [a, e) of stripe st cannot be used: gone, not
 * in sync, or listed bad; their block indexes in lost[] (at most 3 kept). */
static int stripe_lost(const struct grow *gr, const struct stripe_map *sm, uint64_t a, uint64_t e, int *lost)
{
    int nlost = 0;
    for (int m = 0; m < gr->g.from.raid_disks; m++)
        if (gr->gone[m] || slot_recovering(gr, m) || grow_bad(gr, m, gr->old_off + a, e - a)) {
            if (nlost < 3)
                lost[nlost] = block_of(sm, m);
            nlost++;
        }
    return nlost;
}

int grow_rebuild_old(struct grow *gr, struct grow_bufs *b, uint64_t r0, uint64_t r1)
{
    const struct layout_geom *f = &gr->g.from;
    if (!grow_gone_count(gr, f->raid_disks) && !grow_old_bad(gr, r0, r1))
        return 0; /* the copy read no parity: nothing to rebuild */
    uint64_t c = f->chunk_sectors;
    for (uint64_t st = r0 / c; st < (r1 + c - 1) / c; st++) {
        struct stripe_map sm;
        int rc = layout_stripe(f, st, &sm), lost[3];
        if (rc)
            return rc;
        void *blocks[LAYOUT_MAX_DISKS + 2];
        size_t at = (size_t)(st * c - r0) * SECTOR;
        for (int m = 0; m < f->raid_disks; m++) {
            int j = block_of(&sm, m);
            if (j < 0)
                return -EOPNOTSUPP; /* a zero slot (DDF): not a layout md reshapes */
            blocks[j] = b->old[m] + at;
        }
        uint64_t a = st * c > r0 ? st * c : r0, e = (st + 1) * c < r1 ? (st + 1) * c : r1;
        int nlost = stripe_lost(gr, &sm, a, e, lost);
        if (nlost > (f->level == 6 ? 2 : 1))
            return -EIO; /* more blocks unreadable than the parity covers */
        if (nlost && (rc = uraid_recover(sm.nslots, (size_t)c * SECTOR, blocks, f->level == 6, nlost, lost)) != 0)
            return rc;
    }
    return 0;
}

int grow_lost_slots(const struct md_sb *R, int nall, int *lost)
{
    int n = 0;
    for (int s = 0; s < nall; s++) {
        int held = 0;
        for (uint32_t dn = 0; dn < R->max_dev && !held; dn++)
            held = R->dev_roles[dn] == s;
        if (lost)
            lost[s] = !held;
        n += !held;
    }
    return n;
}

int grow_place_lost(struct grow *gr, const struct md_sb *R, int nall, const int *seen)
{
    int lost[URAID_MAX_MEMBERS], np = R->level == 6 ? 2 : 1, np_new = R->new_level == 6 ? 2 : 1;
    int nold = (int)R->raid_disks - R->delta_disks, nnew = (int)R->raid_disks, in_old = 0, in_new = 0;
    if (!grow_lost_slots(R, nall, lost))
        return 0;
    for (int s = 0; s < nall; s++) {
        if (seen[s] || !lost[s])
            continue;
        gr->gone[s] = 1;
        in_old += s < nold;
        in_new += s < nnew;
    }
    /* a RAID-5 -> 6 restripe's new Q member holds nothing of the old geometry */
    for (int s = 0; s < nold && s < nall; s++)
        in_old += seen[s] && slot_recovering(gr, s);
    if (in_old > np || in_new > np_new)
        return uraid_why(gr->why, gr->whylen, "the reshape on the members has %d member%s marked faulty%s: RAID-%d "
                         "cannot go on without so many; give the members back (a copy of the failed disk, ddrescue)",
                         in_new, in_new == 1 ? "" : "s", in_old > in_new ? " and one being recovered" : "",
                         R->level), -EINVAL;
    return 0;
}
