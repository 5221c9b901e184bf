/* grow --size on metadata 0.90 and 1.0, whose superblock sits at the
 * member's end (lib/array/resize.c does the rest): md's
 * super_90_rdev_size_change / super_1_rdev_size_change, which mdadm's
 * --grow --size triggers by writing 0 to every member's sysfs "size"
 * before the array's resize. Each member's superblock is written, as it
 * is, where md looks for it on the member as it is now (the 0.90 place:
 * the last whole 64 KiB less 64 KiB; 1.0: 8 KiB back from the end, down
 * to 4 KiB), with 1.0's data_size the room md computes there (the
 * superblock's place less md's bitmap space for the device's size less
 * the 4 KiB bad-block log); events are kept. The copy at the old place is
 * left: it lies inside the new room, where md and uraid never look for a
 * superblock, and the resync of the new region or later writes overwrite
 * it.
 *
 * Where the superblock is now: at the member's end (a bigger disk rebuilt
 * or replaced onto, or a member placed by an earlier run), or below it
 * when the member grew in place (a file made bigger, an LV extended): md
 * then finds nothing; uraid reads the member backwards from its end for
 * it, 4 KiB (1.0) or 64 KiB (0.90) aligned, and takes a superblock of the
 * wanted format whose checksum and recorded place agree.
 *
 * Order per member (a kill between any two writes leaves superblocks md
 * and uraid find): 1.0's bad-block log copied to its place beside the new
 * superblock (below the new place, above the old superblock), then the
 * superblock, then a flush. A member not yet placed keeps its superblock
 * at the old place only: running the grow again finds it and goes on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "array/resize.h"
#include "log.h"
#include "meta/super0.h"

#define SCAN_BYTES (1u << 20)

/* A superblock of format `format` at sector `at` of m: 0 and *sb, or -ENOENT. */
static int sb_at(int format, uint64_t at, const uint8_t *buf, struct md_sb *sb)
{
    char why[200];
    uint32_t magic = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 24;
    if (magic != MD_SB_MAGIC)
        return -ENOENT;
    if (format == MD_FMT_0_90) {
        struct md_sb0 s0;
        if (md_sb0_decode(buf, &s0, why, sizeof why) || md_sb0_to_sb(&s0, at, sb, why, sizeof why))
            return -ENOENT;
        return 0;
    }
    if (md_sb_decode(buf, at, sb, why, sizeof why) || sb->data_offset != 0)
        return -ENOENT; /* 1.1/1.2 start at 0/8: a 1.0 superblock has its data from 0 */
    sb->format = MD_FMT_1_0;
    return 0;
}

/* Reads m backwards from its end for a 1.0 superblock (4 KiB aligned) or
 * a 0.90 one (64 KiB aligned), the highest first: an older copy left by
 * an earlier grow lies below the newest. */
static int find_sb(struct member *m, struct md_sb *sb)
{
    uint64_t top = md_format_sb_sector(MD_FMT_1_0, m->size / SECTOR), win = SCAN_BYTES / SECTOR, lo = 0, hi = 0;
    if (top == UINT64_MAX)
        return -ENOENT;
    uint8_t *buf = aligned_alloc(4096, SCAN_BYTES);
    if (!buf)
        return -ENOMEM;
    int rc = -ENOENT;
    for (uint64_t at = top + 8; rc == -ENOENT && at >= 8;) {
        at -= 8;
        if (at < lo || at + 8 > hi || hi == 0) { /* the window [lo, hi) ending at this candidate's end */
            hi = at + 8;
            lo = hi > win ? hi - win : 0;
            int r = member_read(m, buf, (size_t)(hi - lo) * SECTOR, lo * SECTOR);
            if (r) {
                rc = r;
                break;
            }
        }
        rc = sb_at(MD_FMT_1_0, at, buf + (at - lo) * SECTOR, sb);
        if (rc == -ENOENT && at % 128 == 0)
            rc = sb_at(MD_FMT_0_90, at, buf + (at - lo) * SECTOR, sb);
    }
    free(buf);
    return rc;
}

/* md's room for data below the superblock's new place on a member of
 * `sectors` (super_1_rdev_size_change, super_90_rdev_size_change). */
uint64_t resize_md_room(int format, uint64_t sectors)
{
    uint64_t at = md_format_sb_sector(format, sectors);
    if (at == UINT64_MAX)
        return 0;
    if (format == MD_FMT_0_90) /* 0.90 records KiB in 32 bits: md's limit for levels >= 1 */
        return at < (2ull << 32) - 2 ? at : (2ull << 32) - 2;
    uint64_t tail = md_choose_bm_space(sectors) + 8;
    return at > tail ? at - tail : 0;
}

struct placed {
    struct member *m;
    struct md_sb sb;
    uint64_t old_at;
};

static int move_one(struct placed *p, char *why, size_t whylen)
{
    struct md_sb nsb = p->sb;
    uint64_t sectors = p->m->size / SECTOR;
    nsb.super_offset = md_format_sb_sector(nsb.format, sectors);
    if (nsb.format == MD_FMT_1_0)
        nsb.data_size = resize_md_room(MD_FMT_1_0, sectors);
    if (nsb.super_offset == p->old_at && nsb.data_size == p->sb.data_size)
        return 0;
    int rc = 0;
    if (nsb.format == MD_FMT_1_0 && nsb.bblog_offset && nsb.bblog_size) {
        size_t len = (size_t)nsb.bblog_size * SECTOR;
        uint8_t *log = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
        if (!log)
            return uraid_why(why, whylen, "out of memory"), -ENOMEM;
        uint64_t from = (uint64_t)((int64_t)p->old_at + nsb.bblog_offset);
        uint64_t to = (uint64_t)((int64_t)nsb.super_offset + nsb.bblog_offset);
        if ((rc = member_read(p->m, log, len, from * SECTOR)) == 0)
            rc = member_write(p->m, log, len, to * SECTOR);
        free(log);
        if (rc)
            return uraid_why(why, whylen, "member %s: cannot copy its bad-block log from sector %llu to %llu: %s",
                             p->m->path, (unsigned long long)from, (unsigned long long)to, uraid_strerror(rc)), rc;
    }
    if ((rc = array_write_superblock(p->m, &nsb)) == 0)
        rc = member_flush(p->m);
    if (rc)
        return uraid_why(why, whylen, "member %s: cannot write its superblock at sector %llu: %s (its superblock at "
                         "sector %llu is intact: run the grow again)", p->m->path,
                         (unsigned long long)nsb.super_offset, uraid_strerror(rc), (unsigned long long)p->old_at), rc;
    uraid_log(URAID_LOG_INFO, "member %s: metadata %s superblock placed at sector %llu (was %llu), data_size %llu",
              p->m->path, md_format_name(nsb.format), (unsigned long long)nsb.super_offset,
              (unsigned long long)p->old_at, (unsigned long long)nsb.data_size);
    return 0;
}

/* The checks uraid_grow_size makes after the open, made on the superblocks
 * found, so that a refusal writes nothing (resize.c checks again). */
static int precheck(struct placed *p, int n, uint64_t want, char *why, size_t whylen)
{
    const struct md_sb *R = &p[0].sb;
    for (int i = 1; i < n; i++)
        if (memcmp(p[i].sb.set_uuid, R->set_uuid, 16) || p[i].sb.events != R->events)
            return uraid_why(why, whylen, "member %s: %s than member %s's: give the array's members, assembled "
                             "clean (uraid detail)", p[i].m->path, memcmp(p[i].sb.set_uuid, R->set_uuid, 16)
                             ? "another array" : "other events", p[0].m->path), -EINVAL;
    if (R->level != 1 && (R->level < 4 || R->level > 6))
        return uraid_why(why, whylen, "--size on this level is not supported yet: RAID-1/4/5/6 can use bigger "
                         "members"), -EOPNOTSUPP;
    if (R->feature_map & MD_FEATURE_BITMAP_OFFSET)
        return uraid_why(why, whylen, "metadata %s with a write-intent bitmap: md cannot move a bitmap kept beside "
                         "the superblock at the member's end; remove it ('uraid update --update=no-bitmap MEMBERS'), "
                         "grow, then add it again ('uraid grow --consistency-policy=bitmap MEMBERS')",
                         md_format_name(R->format)), -EOPNOTSUPP;
    if (R->feature_map & MD_FEATURE_RESHAPE_ACTIVE)
        return uraid_why(why, whylen, "a reshape is in progress: finish it first"), -EBUSY;
    if (R->resync_offset != MD_RESYNC_CLEAN)
        return uraid_why(why, whylen, "the array was not shut down cleanly: run 'uraid resync' first"), -EUCLEAN;
    uint64_t room = UINT64_MAX;
    for (int i = 0; i < n; i++) {
        uint64_t r = resize_md_room(R->format, p[i].m->size / SECTOR);
        if (r < room)
            room = r;
        /* the old superblock must end up inside the new room, below the new tail */
        if (p[i].old_at != md_format_sb_sector(R->format, p[i].m->size / SECTOR) && p[i].old_at + 8 > r)
            return uraid_why(why, whylen, "member %s grew too little to use: its superblock at sector %llu would "
                             "be under the new one's tail (room %llu sectors)", p[i].m->path,
                             (unsigned long long)p[i].old_at, (unsigned long long)r), -ENOSPC;
    }
    uint64_t unit = R->level != 1 ? R->chunksize : R->format == MD_FMT_0_90 ? 2 : 1, max = room / unit * unit;
    if (want && want > max)
        return uraid_why(why, whylen, "--size %llu KiB is more than the smallest member holds (%llu KiB below its "
                         "metadata %s superblock)", (unsigned long long)(want / 2), (unsigned long long)(max / 2),
                         md_format_name(R->format)), -ENOSPC;
    uint64_t to = want ? want / unit * unit : max;
    if (to < R->size)
        return uraid_why(why, whylen, "--size %llu KiB is smaller than the array's %llu KiB per member: shrinking is "
                         "not supported yet", (unsigned long long)(to / 2), (unsigned long long)(R->size / 2)),
               -EINVAL;
    if (to == R->size)
        return uraid_why(why, whylen, "the array already uses %llu KiB per member, all %s: nothing to do",
                         (unsigned long long)(to / 2), want ? "that was asked" : "the members hold"), -EALREADY;
    return 0;
}

int resize_place_superblocks(const char *const *members, int n, uint64_t want, char *why, size_t whylen)
{
    if (n < 1 || n > URAID_MAX_MEMBERS)
        return uraid_why(why, whylen, "give the array's members"), -EINVAL;
    struct placed *p = calloc((size_t)n, sizeof *p);
    if (!p)
        return uraid_why(why, whylen, "out of memory"), -ENOMEM;
    int rc = 0, format = -1;
    for (int i = 0; i < n && rc == 0; i++) {
        char mwhy[300];
        if ((rc = member_open_why(members[i], 0, &p[i].m, mwhy, sizeof mwhy)) != 0) {
            uraid_why(why, whylen, "member %s: cannot open: %s", members[i], mwhy);
            break;
        }
        if (array_read_superblock(p[i].m, &p[i].sb, mwhy, sizeof mwhy) == 0) {
            format = p[i].sb.format;
            if (format != MD_FMT_1_0 && format != MD_FMT_0_90) {
                rc = 1; /* 1.1/1.2: nothing at the end to place */
                break;
            }
            p[i].old_at = p[i].sb.super_offset;
            continue;
        }
        /* nothing at the end: a member grown in place keeps it below */
        rc = find_sb(p[i].m, &p[i].sb);
        if (rc == 0) {
            p[i].old_at = p[i].sb.super_offset;
            if (format >= 0 && p[i].sb.format != format)
                rc = -EINVAL;
            format = p[i].sb.format;
        }
        if (rc)
            uraid_why(why, whylen, "member %s: %s", members[i], rc == -ENOENT || rc == -EINVAL
                      ? "no md superblock at its end nor below it (metadata 0.90 and 1.0 keep it at the end)"
                      : uraid_strerror(rc));
    }
    if (rc == 0)
        rc = precheck(p, n, want, why, whylen);
    for (int i = 0; i < n && rc == 0; i++)
        rc = move_one(&p[i], why, whylen);
    for (int i = 0; i < n; i++)
        if (p[i].m)
            member_close(p[i].m);
    free(p);
    return rc;
}
