/* uraid_grow_online_level: --level on a served array, as md changes the
 * level of a running one (raid5.c's takeovers, then mdadm's restripe).
 *
 * Each change is a takeover that moves no data and, where the layout or
 * chunk asked for differs, a restripe within a level (reshape_online.c,
 * reshape_job.c), recorded as the offline grow records it
 * (reshape_level.c):
 *   RAID-5 (N) -> RAID-6 (N + 1), one new member:
 *     layout the -6 form ("preserve"), the same chunk: the takeover. With
 *       no request in flight the array becomes RAID-6 in the -6 layout,
 *       the new member Q recovering from sector 0; the recovery job
 *       rebuilds it while requests go on (a restart carries it on from
 *       its recovery_offset, as md).
 *     otherwise (the default: the RAID-5 layout, Q rotating): the takeover
 *       and the restripe recorded at once (level 6 in the -6 layout,
 *       new_layout the target, delta 0), Q's recovery_offset following the
 *       reshape position; the reshape job writes every new stripe whole.
 *   RAID-6 (N) -> RAID-5 (N - 1): in a -6 layout the takeover (the last
 *     member, Q, a spare); otherwise a restripe to the -6 layout whose end
 *     is the takeover (rs->then_level; a restart before it ends the
 *     restripe at RAID-6 and the same command then takes it over).
 *   RAID-4 -> RAID-5: parity-last the takeover; another layout or chunk
 *     the takeover recorded with the restripe (level 5 parity-last,
 *     new_layout the target).
 *   RAID-5 -> RAID-4: parity-last the takeover; another layout a restripe
 *     to parity-last whose end is the takeover.
 *   RAID-1 of 2 <-> RAID-5 of 2, RAID-4 / RAID-5 parity-last -> RAID-0:
 *     the superblocks alone (grow_takeover_online.c).
 *   RAID-0 -> RAID-4 / RAID-5 parity-last of N + 1, the parity slot
 *     missing, a new member recovered into it (grow_takeover_raid0.c). Every
 * refusal comes before anything is written. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "array/reshape.h"
#include "array/reshape_io.h"
#include "log.h"
#include "uraid_grow.h"

void array_takeover_locked(struct uraid_array *a, const struct layout_geom *to)
{
    for (int s = to->raid_disks; s < a->geom.raid_disks; s++) {
        struct array_slot *sl = &a->slot[s];
        if (sl->dev && a->nextra < URAID_MAX_MEMBERS) { /* md's raid5_takeover_raid6: the Q member a spare */
            if (sl->sb.dev_number < MD_SB_MAX_DEV)
                a->sb.dev_roles[sl->sb.dev_number] = MD_ROLE_SPARE;
            sl->sb.feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
            sl->sb.recovery_offset = 0;
            sl->state = URAID_MEMBER_SPARE;
            a->extra[a->nextra++] = *sl;
        }
        memset(sl, 0, sizeof *sl);
        sl->state = URAID_MEMBER_MISSING;
    }
    int layout = to->level == 4 ? 0 : to->layout; /* what mdadm stores for RAID-4 */
    a->sb.level = to->level;
    a->sb.layout = (uint32_t)layout;
    a->sb.new_level = (uint32_t)to->level;
    a->sb.new_layout = (uint32_t)layout;
    a->sb.raid_disks = (uint32_t)to->raid_disks;
    a->geom = *to;
    a->geom.layout = layout;
    a->nparity = layout_parity_count(to);
    a->k = to->raid_disks - a->nparity;
}

struct req {
    int level, N, nadd;
    uint32_t chunk; /* 0: keep */
    const char *layout;
    char *why;
    size_t whylen;
};

#define say(q, rc, ...) uraid_refuse((q)->why, (q)->whylen, (rc), __VA_ARGS__)

/* RAID-5 (n) -> RAID-6 (n + 1); *N, *chunk and *layout are the restripe's. */
static int plan_to_6(const struct uraid_array *a, const struct req *q, struct online_level *lv, int *N,
                     uint32_t chunk, int *layout)
{
    const struct layout_geom *g = &a->geom;
    int n = g->raid_disks, l6 = layout_to_6(g->layout);
    if ((q->N && q->N != n + 1) || q->nadd != 1)
        return say(q, -EINVAL, "md turns a RAID-5 of %d members into a RAID-6 of %d: give --raid-devices %d and one "
                   "new member (--add NEW)", n, n + 1, n + 1);
    if (l6 < 0)
        return say(q, -EOPNOTSUPP, "RAID-5 layout %s has no RAID-6 form md takes over", layout_name(5, g->layout));
    *N = n + 1;
    *layout = g->layout; /* mdadm's default: the RAID-5 layout, Q rotating */
    if (q->layout && !strcmp(q->layout, "preserve"))
        *layout = l6;
    else if (q->layout && (*layout = layout_from_name(6, q->layout)) < 0)
        return say(q, -EINVAL, "RAID-6 has no layout '%s' (left-symmetric, ..., left-symmetric-6, ..., or "
                   "preserve)", q->layout);
    lv->from = (struct layout_geom){6, l6, n + 1, g->chunk_sectors};
    lv->q_new = 1;
    lv->takeover = *layout == l6 && chunk == g->chunk_sectors;
    return 0;
}

/* RAID-6 (n) -> RAID-5 (n - 1). */
static int plan_to_5(const struct uraid_array *a, const struct req *q, struct online_level *lv, int *N,
                     uint32_t chunk, int *layout)
{
    const struct layout_geom *g = &a->geom;
    int n = g->raid_disks, l5 = layout_from_6(g->layout);
    if ((q->N && q->N != n - 1) || q->nadd)
        return say(q, -EINVAL, "md turns a RAID-6 of %d members into a RAID-5 of %d (the Q member becomes a spare): "
                   "give --raid-devices %d (or none) and no new member", n, n - 1, n - 1);
    if (chunk != g->chunk_sectors)
        return say(q, -EOPNOTSUPP, "change the level and the chunk in two runs (the chunk first)");
    int want = q->layout ? layout_from_name(5, q->layout) : l5 >= 0 ? l5 : g->layout;
    if (want < 0)
        return say(q, -EINVAL, "RAID-5 has no layout '%s'", q->layout);
    if (l5 >= 0 && want != l5)
        return say(q, -EOPNOTSUPP, "change the level and the layout in two runs (the level first)");
    if (l5 >= 0) { /* the takeover alone */
        lv->from = (struct layout_geom){5, l5, n - 1, g->chunk_sectors};
        lv->takeover = 1;
        *N = n - 1;
        return 0;
    }
    int l6 = layout_to_6(want);
    if (l6 < 0)
        return say(q, -EOPNOTSUPP, "RAID-5 layout %s has no RAID-6 form to restripe to first", layout_name(5, want));
    lv->from = *g;
    lv->then_level = 5;
    *N = n;
    *layout = l6;
    return 0;
}

static int same_count(const struct uraid_array *a, const struct req *q, const char *what)
{
    int n = a->geom.raid_disks;
    if ((q->N && q->N != n) || q->nadd)
        return say(q, -EINVAL, "%s keeps the %d members: give no --raid-devices other than %d and no new member", what,
                   n, n);
    return 0;
}

/* RAID-4 <-> RAID-5 of n members. */
static int plan_4_5(const struct uraid_array *a, const struct req *q, struct online_level *lv, uint32_t chunk,
                    int *layout)
{
    const struct layout_geom *g = &a->geom;
    int n = g->raid_disks, rc = same_count(a, q, q->level == 5 ? "RAID-4 -> RAID-5" : "RAID-5 -> RAID-4");
    if (rc)
        return rc;
    if (q->level == 5) {
        int want = q->layout ? layout_from_name(5, q->layout) : LAYOUT_PARITY_LAST;
        if (want < 0)
            return say(q, -EINVAL, "RAID-5 has no layout '%s'", q->layout);
        lv->from = (struct layout_geom){5, LAYOUT_PARITY_LAST, n, g->chunk_sectors};
        lv->takeover = want == LAYOUT_PARITY_LAST && chunk == g->chunk_sectors;
        *layout = want;
        return 0;
    }
    if (q->layout && layout_from_name(4, q->layout) < 0)
        return say(q, -EINVAL, "RAID-4 has one layout, parity-last: '%s' is none", q->layout);
    if (chunk != g->chunk_sectors)
        return say(q, -EOPNOTSUPP, "change the level and the chunk in two runs (the chunk first)");
    if (g->layout == LAYOUT_PARITY_LAST) {
        lv->from = (struct layout_geom){4, 0, n, g->chunk_sectors};
        lv->takeover = 1;
        return 0;
    }
    lv->from = *g; /* restriped to parity-last, then taken over */
    lv->then_level = 4;
    *layout = LAYOUT_PARITY_LAST;
    return 0;
}

int uraid_grow_online_level(struct uraid_array *a, int level, int raid_devices, uint32_t chunk_sectors,
                            const char *layout, const char *const *added, int nadded, char *why, size_t whylen)
{
    struct req q = {.level = level, .N = raid_devices, .nadd = nadded, .chunk = chunk_sectors, .layout = layout,
                    .why = why, .whylen = whylen};
    uraid_why(why, whylen, "%s", "");
    if (!a || nadded < 0 || nadded > URAID_MAX_MEMBERS || (nadded && !added))
        return say(&q, -EINVAL, "give the new level, member count and new members");
    int cur = a->geom.level;
    if (level == cur) { /* mdadm: a --level the array has changes nothing by itself */
        int done = array_takeover_raid0_carry_on(a, level, raid_devices, chunk_sectors, layout, added, nadded, why,
                                                 whylen); /* the RAID-0 takeover's add, cut off before */
        if (done)
            return done < 0 ? done : 0;
        return uraid_grow_online_shrink(a, raid_devices, chunk_sectors, layout, added, nadded, 0, why, whylen);
    }
    if (__atomic_load_n(&a->rs, __ATOMIC_ACQUIRE))
        return say(&q, -EBUSY, "a reshape to %d members is already in progress: change the level after its end "
                   "(uraid status)", a->geom.raid_disks);
    /* 0.90 and 1.0: the takeovers move no data and work with any metadata; a restripe is refused where it
     * is planned (reshape_online.c's check_array) */
    struct online_level lv = {0};
    int N = a->geom.raid_disks, l = a->geom.layout, rc;
    uint32_t chunk = chunk_sectors ? chunk_sectors : a->geom.chunk_sectors;
    if (cur == 5 && level == 6)
        rc = plan_to_6(a, &q, &lv, &N, chunk, &l);
    else if (cur == 6 && level == 5)
        rc = plan_to_5(a, &q, &lv, &N, chunk, &l);
    else if ((cur == 4 && level == 5) || (cur == 5 && level == 4))
        rc = plan_4_5(a, &q, &lv, chunk, &l);
    else if ((cur == 4 || cur == 5) && level == 0)
        return array_takeover_raid0_online(a, raid_devices, chunk_sectors, layout, nadded, why,
                                           whylen); /* grow_takeover_online.c */
    else if ((cur == 1 && level == 5) || (cur == 5 && level == 1))
        return array_takeover_mirror_parity_online(a, level, raid_devices, chunk_sectors, layout, nadded, why,
                                                   whylen); /* grow_takeover_online.c */
    else if (cur == 0 && (level == 4 || level == 5))
        return array_takeover_from_raid0_online(a, level, raid_devices, chunk_sectors, layout, added, nadded, why,
                                                whylen); /* grow_takeover_raid0.c */
    else
        return say(&q, -EOPNOTSUPP, "changing RAID-%d to RAID-%d is not supported (md's level changes: 5 <-> 6, "
                   "4 <-> 5, 1 <-> 5 with 2 members, 0 <-> 4 or 5)", cur, level);
    return rc ? rc : array_grow_online(a, N, chunk, l, added, nadded, 0, &lv, why, whylen);
}
