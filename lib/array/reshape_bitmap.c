/* md's write-intent bitmap carried through an offline reshape (the grow
 * writes the superblocks itself, not array_write_superblocks, so it also
 * keeps what wibitmap.c keeps at run time):
 *   - the bitmap's events follow the superblocks': before each member's
 *     superblock goes out, its bitmap header gets the same events (md
 *     writes its bitmap superblock first, and takes a bitmap whose events
 *     are older than the superblock's as stale: a full resync);
 *   - a new member gets the whole bitmap (header and bits, as the others
 *     hold it) before its first superblock, so md may read it from any
 *     member;
 *   - the bits index member sectors past the data offset, in whichever
 *     geometry a stripe is in (md's sh->sector), so a restripe that keeps
 *     the member size needs no other change; a shrink that cuts the member
 *     size would have to resize the bitmap and is refused (reshape_check.c).
 * The data offset may move down only to the bitmap's end (reshape_headroom
 * counts it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/reshape.h"
#include "meta/bitmap.h"

static uint64_t bitmap_base(const struct md_sb *sb)
{
    return (uint64_t)((int64_t)sb->super_offset + sb->bitmap_offset) * SECTOR;
}

int grow_bitmap_load(struct grow *gr)
{
    const struct md_sb *R = &gr->sb[gr->ref];
    if (!(R->feature_map & MD_FEATURE_BITMAP_OFFSET))
        return 0;
    uint8_t head[512] __attribute__((aligned(4096)));
    char why[200];
    struct md_bitmap_sb hdr;
    int rc = member_read(gr->dev[gr->ref], head, sizeof head, bitmap_base(R));
    if (rc == 0)
        rc = md_bitmap_decode(head, &hdr, why, sizeof why);
    else
        snprintf(why, sizeof why, "cannot read it: %s", uraid_strerror(rc));
    if (rc)
        return grow_say(gr, rc, "member %s: write-intent bitmap at sector %llu: %s", gr->name[gr->ref],
                        (unsigned long long)(bitmap_base(R) / SECTOR), why);
    gr->bm_bytes = md_bitmap_area_bytes(md_bitmap_bits(&hdr));
    void *buf = NULL;
    if (posix_memalign(&buf, 4096, (gr->bm_bytes + 4095) / 4096 * 4096))
        return grow_say(gr, -ENOMEM, "out of memory for the write-intent bitmap (%llu bytes)",
                        (unsigned long long)gr->bm_bytes);
    gr->bm = buf;
    rc = member_read(gr->dev[gr->ref], gr->bm, gr->bm_bytes, bitmap_base(R));
    if (rc)
        return grow_say(gr, rc, "member %s: cannot read the write-intent bitmap's %llu bytes: %s", gr->name[gr->ref],
                        (unsigned long long)gr->bm_bytes, uraid_strerror(rc));
    return 0;
}

void grow_bitmap_free(struct grow *gr)
{
    free(gr->bm);
    gr->bm = NULL;
    gr->bm_bytes = 0;
}

/* The header in buf (at least 512 bytes) with events: 0 or -EINVAL. */
static int set_events(uint8_t *buf, uint64_t events)
{
    struct md_bitmap_sb hdr;
    char why[200];
    int rc = md_bitmap_decode(buf, &hdr, why, sizeof why);
    if (rc)
        return rc;
    hdr.events = events;
    if (hdr.events_cleared > events)
        hdr.events_cleared = events;
    return md_bitmap_encode(&hdr, buf);
}

int grow_bitmap_write(struct grow *gr, int i, int fresh)
{
    if (!gr->bm)
        return 0;
    const struct md_sb *sb = &gr->sb[i];
    uint8_t head[512] __attribute__((aligned(4096)));
    int rc;
    if (fresh) { /* the whole bitmap, as the reference member held it at the start */
        rc = set_events(gr->bm, gr->tmpl.events);
        if (rc == 0)
            rc = member_write(gr->dev[i], gr->bm, gr->bm_bytes, bitmap_base(sb));
    } else {     /* its own header, its bits as they are */
        rc = member_read(gr->dev[i], head, sizeof head, bitmap_base(sb));
        if (rc == 0)
            rc = set_events(head, gr->tmpl.events);
        if (rc == 0)
            rc = member_write(gr->dev[i], head, sizeof head, bitmap_base(sb));
    }
    return rc;
}
