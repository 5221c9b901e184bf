/* The checks of an array about to be grown offline (reshape.c's start):
 * clean, its members in sync (none being recovered: md's
 * 25raid456-reshape-while-recovery; mdadm refuses a grow while a
 * recovery runs), or degraded as far as the level bears (md's
 * raid5_start_reshape takes an array that has not failed). Nothing is
 * written here. */
#include <errno.h>

#include "array/reshape.h"

#define say grow_say
#define same_array grow_same_array
#define level_text grow_level_text

int grow_bb_load(struct grow *gr, int i)
{
    const struct md_sb *R = &gr->sb[gr->ref], *sb = &gr->sb[i];
    if (!(sb->feature_map & MD_FEATURE_BAD_BLOCKS) || gr->bb[i])
        return 0;
    /* the copy rebuilds listed rows from parity; without parity (RAID-0, linear, RAID-1's mirrors are
     * recovered whole) or ending without it, a listed row would be lost */
    int to0 = gr->p->level_set && (gr->p->level == 0 || gr->p->level == 1);
    if (R->level < 4 || R->level > 6 || to0)
        return say(gr, -EOPNOTSUPP, "member %s lists bad blocks (uraid examine shows them): %s cannot rebuild them "
                   "from parity; replace the member first (uraid add SPARE, uraid replace), then grow", gr->name[i],
                   R->level < 4 || R->level > 6 ? "this level" : "an array becoming RAID-0 or RAID-1");
    char why[300];
    int rc = array_read_bblog(gr->dev[i], sb, &gr->bb[i], why, sizeof why);
    return rc ? say(gr, rc, "%s", why) : 0;
}

/* Every listed range of every member rebuildable: in the rows it covers
 * (members share one data offset, so equal member sectors are one stripe's
 * rows) no more members list bad, or are missing, than the parity covers.
 * Else the copy would stop partway at those rows: refused before. */
static int bb_rebuildable(struct grow *gr, int n, int np)
{
    int gone = 0;
    for (int s = 0; s < n; s++)
        gone += gr->gone[s];
    for (int s = 0; s < n; s++) {
        const struct md_bblist *l = gr->gone[s] ? NULL : gr->bb[gr->at[s]];
        for (uint32_t e = 0; l && e < l->count; e++) {
            uint64_t lo = l->r[e].start, len = l->r[e].len;
            int listed = gone + 1;
            for (int o = 0; o < n; o++)
                listed += o != s && grow_bad(gr, o, lo, len);
            if (listed > np)
                return say(gr, -EIO, "member %s lists sectors %llu-%llu bad, and %d other member%s of the same rows "
                           "%s missing or list%s them too: RAID-%d cannot rebuild them, the grow would stop there; "
                           "copy what reads (uraid salvage) or replace members first", gr->name[gr->at[s]],
                           (unsigned long long)lo, (unsigned long long)(lo + len - 1), listed - 1,
                           listed - 1 == 1 ? "" : "s", listed - 1 == 1 ? "is" : "are", listed - 1 == 1 ? "s" : "",
                           gr->sb[gr->ref].level);
        }
    }
    return 0;
}

int grow_data_moves(struct grow *gr)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    /* 1.0 and 0.90 keep no room before the data: md restripes them with a
     * backup file (its critical section), which uraid does not write. 1.1
     * has room before its data as 1.2 has (reshape_headroom counts from its
     * superblock at sector 0). What moves no data -- RAID-1 and linear
     * gaining members, the takeovers -- works with any metadata. */
    if (R->format == MD_FMT_1_2 || R->format == MD_FMT_1_1)
        return 0;
    return say(gr, -EOPNOTSUPP, "growing an array with metadata %s is not supported yet where data moves (a restripe: "
               "more or fewer members, another chunk or layout; md needs a backup file for %s): RAID-1 and linear "
               "gain members and the level changes that move no data work with any metadata (RAID-5 -> 6 with "
               "--layout left-symmetric-6, as mdadm's --layout=preserve)", md_format_name(R->format),
               md_format_name(R->format));
}

/* The array as it is now: one clean, in-sync member per old slot (or,
 * degraded_ok, as many as the level bears without those its superblocks
 * record failed), none of the features a grow does not handle yet. */
int grow_check_old(struct grow *gr, int nold_given)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    int linear = R->level == LAYOUT_LEVEL_LINEAR || R->level == 1; /* nothing restriped */
    int raid0_grows = R->level == 0 && (gr->p->raid_devices > (int)R->raid_disks ||
                                        (gr->p->chunk_sectors && gr->p->chunk_sectors != R->chunksize));
    if (!linear && (R->level < 4 || R->level > 6) && !(gr->p->level_set && R->level == 0) && !raid0_grows)
        return say(gr, -EOPNOTSUPP, "%s: %s", level_text(R->level),
                   R->level == 0 ? "md cannot take members out of a RAID-0; it gains members (--raid-devices N --add "
                                   "NEW...), changes its chunk (--chunk) or level (--level 4 or 5)"
                                 : "growing it is not supported yet: RAID-4/5/6 restripe, RAID-1 and linear gain "
                                   "members, RAID-0 gains members or changes its chunk");
    /* metadata 1.0 and 0.90: the planners that move data refuse them (grow_data_moves) */
    if (md_sb_has_ppl(R) || (R->feature_map & MD_FEATURE_JOURNAL))
        return say(gr, -EOPNOTSUPP, "the array keeps a %s: md cannot reshape such an array; switch to resync first "
                   "(uraid grow --consistency-policy=resync)",
                   md_sb_has_ppl(R) ? "partial parity log (ppl)" : "write journal");
    /* a restripe keeps the bitmap (reshape_bitmap.c); RAID-0 has none, and
     * RAID-1's new mirrors would need their recovery guided by it */
    if ((R->feature_map & MD_FEATURE_BITMAP_OFFSET) && (linear || (gr->p->level_set && gr->p->level == 0)))
        return say(gr, -EOPNOTSUPP, "%s with a write-intent bitmap %s is not supported: remove the bitmap first "
                   "(uraid grow --consistency-policy=resync), grow, then add it back (--consistency-policy=bitmap)",
                   level_text(R->level), gr->p->level_set && gr->p->level == 0 ? "becoming RAID-0" : "gaining members");
    if (R->resync_offset != MD_RESYNC_CLEAN)
        return say(gr, -EUCLEAN, "the array was not shut down cleanly: run 'uraid resync' first, then grow");
    /* md reshapes a degraded RAID-4/5/6 (raid5_start_reshape: not failed): the missing slots stay out */
    /* a RAID-1 dropping mirrors (mirrors_dropped) may lack all but one */
    int np = !gr->degraded_ok ? 0 : R->level >= 4 && R->level <= 6 ? (R->level == 6 ? 2 : 1)
             : R->level == 1 ? (int)R->raid_disks - 1 : 0, present = 0;
    if (nold_given > (int)R->raid_disks + np || nold_given < (int)R->raid_disks - np)
        return say(gr, -EINVAL, "give all %u members of the array (%d given), then --add the new ones", R->raid_disks,
                   nold_given);
    int seen[URAID_MAX_MEMBERS] = {0};
    for (int i = 0; i < nold_given; i++) {
        const struct md_sb *sb = &gr->sb[i];
        uint16_t role = sb->dev_number < R->max_dev ? R->dev_roles[sb->dev_number] : MD_ROLE_SPARE;
        if (!same_array(gr, i))
            return say(gr, -EINVAL, "member %s belongs to another array than %s", gr->name[i], gr->name[gr->ref]);
        if (np && (role == MD_ROLE_FAULTY || role == MD_ROLE_SPARE) && sb->events < R->events &&
            !(sb->feature_map & MD_FEATURE_RECOVERY_OFFSET))
            continue; /* failed or left out before: the array is degraded without it */
        if (sb->events == R->events && (sb->feature_map & (MD_FEATURE_RECOVERY_OFFSET | MD_FEATURE_REPLACEMENT)))
            return say(gr, -EBUSY, "member %s is being %s (up to sector %llu): the array is performing a recovery "
                       "and cannot be reshaped, as mdadm refuses it; let the recovery finish first ('uraid rebuild' "
                       "with every member), then grow", gr->name[i],
                       sb->feature_map & MD_FEATURE_REPLACEMENT ? "rebuilt as a replacement" : "recovered",
                       (unsigned long long)sb->recovery_offset);
        if (sb->events != R->events || role >= R->raid_disks || seen[role])
            return say(gr, -EINVAL, "member %s is not an in-sync member of the array (events %llu, the array's %llu): "
                       "a grow needs every member in sync; rebuild first", gr->name[i],
                       (unsigned long long)sb->events, (unsigned long long)R->events);
        if (sb->data_offset != R->data_offset)
            return say(gr, -EOPNOTSUPP, "member %s: a data offset unlike the others' is not supported by grow yet",
                       gr->name[i]);
        int rc = grow_bb_load(gr, i);
        if (rc)
            return rc;
        seen[role] = 1;
        gr->at[role] = i;
        present++;
    }
    if (present < (int)R->raid_disks - np || (present < (int)R->raid_disks && R->resync_offset != MD_RESYNC_CLEAN))
        return say(gr, -EINVAL, "give all %u members of the array (%d in sync given), then --add the new ones",
                   R->raid_disks, present);
    for (int s = 0; s < (int)R->raid_disks; s++)
        for (uint32_t dn = 0; !seen[s] && dn < R->max_dev && !(gr->drop_from && s >= gr->drop_from); dn++)
            if (R->dev_roles[dn] == s) /* not recorded failed: left out by mistake? (a dropped mirror: meant) */
                return say(gr, -EINVAL, "slot %d's member (device number %u) was not given: give all %u members of "
                           "the array; a degraded one may lack only those its superblocks record as failed", s, dn,
                           R->raid_disks);
    for (int s = 0; s < (int)R->raid_disks; s++)
        gr->gone[s] = !seen[s];
    return bb_rebuildable(gr, (int)R->raid_disks, np ? np : R->level == 6 ? 2 : 1);
}

