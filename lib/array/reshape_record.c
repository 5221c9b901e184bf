/* The superblock records of an offline grow (reshape.c's steps 1-3): the
 * template's array-wide fields merged into each member's own superblock,
 * written with the member's bitmap header first (reshape_bitmap.c), and
 * the checkpoint: the data below a position flushed on every member before
 * any superblock says the reshape has passed it. A member that cannot take
 * its superblock is lost as any failing member (reshape_fail.c). */
#include "array/reshape.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define RESHAPE_BITS (MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET | MD_FEATURE_RESHAPE_BACKWARDS)
#define say grow_say

static int write_sb(struct member *m, const struct md_sb *sb)
{
    int rc = array_write_superblock(m, sb); /* in its format's place and encoding */
    return rc ? rc : member_flush(m);
}

/* The array-wide fields of the template into a member's own superblock. */
static void merge(struct md_sb *dst, const struct md_sb *t)
{
    dst->feature_map = (dst->feature_map & ~RESHAPE_BITS) | (t->feature_map & RESHAPE_BITS);
    dst->level = t->level;
    dst->layout = t->layout;
    dst->chunksize = t->chunksize;
    dst->size = t->size;
    dst->raid_disks = t->raid_disks;
    dst->new_level = t->new_level;
    dst->reshape_position = t->reshape_position;
    dst->delta_disks = t->delta_disks;
    dst->new_layout = t->new_layout;
    dst->new_chunk = t->new_chunk;
    dst->new_offset = t->new_offset;
    dst->events = t->events;
    dst->utime = t->utime;
    dst->resync_offset = t->resync_offset;
    dst->max_dev = t->max_dev;
    memcpy(dst->dev_roles, t->dev_roles, sizeof dst->dev_roles);
    dst->v090_spares = t->v090_spares;
}

/* Every member's superblock from the template, events + 1: the fresh (new)
 * members first with an empty bad-block log, flushed, then the others, so
 * no old member names a reshape whose new members have no superblock. */
/* 0.90 records no recovery offset: a member being recovered (a new mirror,
 * a takeover's new Q or parity member) is a spare in every superblock until
 * its recovery ends, as md writes it (super0.c's table). */
static void note_recovering_090(struct grow *gr)
{
    if (gr->tmpl.format != MD_FMT_0_90)
        return;
    for (int s = 0; s < grow_slots(gr); s++) {
        const struct md_sb *sb = &gr->sb[gr->at[s]];
        if (!gr->gone[s] && (sb->feature_map & MD_FEATURE_RECOVERY_OFFSET) && sb->dev_number < 32)
            gr->tmpl.v090_spares |= 1u << sb->dev_number;
    }
}

int grow_write_all(struct grow *gr)
{
    note_recovering_090(gr);
    gr->tmpl.events++;
    gr->tmpl.utime = (uint64_t)time(NULL);
    for (int pass = 0; pass < 2; pass++)
        for (int s = 0; s < grow_slots(gr); s++) {
            int i = gr->at[s], rc;
            if (gr->gone[s] || gr->fresh[i] != (pass == 0))
                continue;
            merge(&gr->sb[i], &gr->tmpl);
            /* md writes its bitmap superblock and bad-block log before the superblocks */
            rc = grow_bitmap_write(gr, i, gr->fresh[i]);
            if (rc == 0 && !gr->fresh[i])
                rc = grow_bb_write(gr, i);
            if (rc == 0 && gr->fresh[i] && (rc = array_write_new_member(gr->dev[i], &gr->sb[i])) == 0)
                rc = member_flush(gr->dev[i]);
            else if (rc == 0 && !gr->fresh[i])
                rc = write_sb(gr->dev[i], &gr->sb[i]);
            /* a member lost now: the others get the record of it (grow_lose writes them all again) */
            if (rc && gr->g.from.raid_disks && grow_lose(gr, s, rc, "writing its superblock") == 0)
                return 0;
            if (rc)
                return say(gr, rc, "member %s: cannot write its superblock: %s (the members keep the last "
                           "recorded position; run the same grow again)", gr->name[i], uraid_strerror(rc));
        }
    memset(gr->fresh, 0, sizeof gr->fresh);
    return 0;
}

int grow_write_one(struct grow *gr, int i)
{
    merge(&gr->sb[i], &gr->tmpl);
    int rc = grow_bitmap_write(gr, i, 0);
    if (rc == 0)
        rc = grow_bb_write(gr, i);
    if (rc == 0)
        rc = write_sb(gr->dev[i], &gr->sb[i]);
    if (rc)
        return say(gr, rc, "member %s: cannot write its superblock: %s", gr->name[i], uraid_strerror(rc));
    return 0;
}

int grow_bb_write(struct grow *gr, int i)
{
    if (!gr->bb_dirty[i] || !gr->bb[i])
        return 0;
    int rc = array_write_bblog(gr->dev[i], &gr->sb[i], gr->bb[i]);
    if (rc == 0)
        gr->bb_dirty[i] = 0;
    return rc;
}

void grow_bb_free(struct grow *gr)
{
    for (int i = 0; i < URAID_MAX_MEMBERS; i++) {
        free(gr->bb[i]);
        gr->bb[i] = NULL;
    }
}

/* Every member left flushed; one whose flush fails is lost (its writes
 * since the last flush may be gone: it is not read again). */
int grow_flush_all(struct grow *gr)
{
    for (int s = 0; s < grow_slots(gr); s++) {
        int rc = grow_dev(gr, s) ? member_flush(grow_dev(gr, s)) : 0;
        if (rc && grow_lose(gr, s, rc, "flushing") != 0)
            return say(gr, rc, "member %s: flush failed: %s", gr->name[gr->at[s]], uraid_strerror(rc));
    }
    return 0;
}

int grow_checkpoint(struct grow *gr, uint64_t ckpt)
{
    /* the data below ckpt must be on every disk before any superblock says so */
    int rc = grow_flush_all(gr);
    if (rc)
        return rc;
    gr->tmpl.reshape_position = ckpt;
    /* a member not in sync (RAID-5 -> 6: the new one) is below ckpt: md's reshape_request moves its recovery_offset */
    for (int i = 0; i < gr->n; i++)
        if (gr->recovering[i])
            gr->sb[i].recovery_offset = reshape_q_recovered(&gr->g, ckpt);
    rc = grow_write_all(gr);
    if (rc == 0)
        gr->ckpt = ckpt;
    return rc;
}
