/* Reading and writing a member's superblock in whichever md format it has.
 *
 * The format is a property of each superblock (md_sb.format): a read finds
 * it by looking at every place md puts one (1.2 at 4 KiB, 1.1 at 0, 1.0
 * near the end, 0.90 in the last 64 KiB), a write puts it back where it
 * was found (super_offset) in its own encoding. A member that holds valid
 * superblocks at two places -- md's classic case is an old 0.90 superblock
 * left at the end of a disk reused for a 1.2 array, inside the new array's
 * data -- is refused with both named until the user says which format to
 * open (--metadata): guessing could write one array's metadata over the
 * other's data. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "log.h"
#include "meta/super0.h"

/* One candidate: 0, -ENOENT when nothing md-like is there (no magic, or
 * the member is too small for the place), another negative errno with a
 * reason when an md superblock is there but cannot be used. */
static int read_one(struct member *m, int format, struct md_sb *sb, char *reason, size_t len)
{
    uint8_t buf[MD_SB_BYTES] __attribute__((aligned(4096)));
    uint64_t at = md_format_sb_sector(format, m->size / SECTOR);
    if (at == UINT64_MAX || (at + MD_SB_BYTES / SECTOR) * SECTOR > m->size)
        return -ENOENT;
    int rc = member_read(m, buf, MD_SB_BYTES, at * SECTOR);
    if (rc) {
        snprintf(reason, len, "cannot read the superblock at sector %llu: %s", (unsigned long long)at,
                 uraid_strerror(rc));
        return rc;
    }
    uint32_t magic = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 24;
    if (magic != MD_SB_MAGIC && magic != __builtin_bswap32(MD_SB_MAGIC))
        return -ENOENT;
    char why[240];
    if (format == MD_FMT_0_90) {
        struct md_sb0 s0;
        rc = md_sb0_decode(buf, &s0, why, sizeof why);
        if (rc == 0)
            rc = md_sb0_to_sb(&s0, at, sb, why, sizeof why);
    } else {
        rc = md_sb_decode(buf, at, sb, why, sizeof why);
        sb->format = format;
    }
    if (rc)
        snprintf(reason, len, "%s (metadata %s at sector %llu)", why, md_format_name(format),
                 (unsigned long long)at);
    return rc;
}

static int wanted(int want, int format)
{
    return want == MD_FMT_ANY || want == format || (want == MD_FMT_ANY1 && format != MD_FMT_0_90);
}

int array_read_superblock_as(struct member *m, int want, struct md_sb *sb, char *why, size_t whylen)
{
    static const int order[MD_FMT_COUNT] = {MD_FMT_1_2, MD_FMT_1_1, MD_FMT_1_0, MD_FMT_0_90};
    struct md_sb *found = calloc(MD_FMT_COUNT, sizeof *found);
    if (!found) {
        uraid_why(why, whylen, "out of memory");
        return -ENOMEM;
    }
    int nfound = 0, first_err = 0, which[MD_FMT_COUNT];
    char reason[300] = "", err_reason[300] = "";
    for (int k = 0; k < MD_FMT_COUNT; k++) {
        int f = order[k];
        if (!wanted(want, f))
            continue;
        int rc = read_one(m, f, &found[nfound], reason, sizeof reason);
        if (rc == 0)
            which[nfound++] = f;
        else if (rc != -ENOENT && !first_err) {
            first_err = rc;
            snprintf(err_reason, sizeof err_reason, "%s", reason);
        }
    }
    int rc = 0;
    if (nfound == 1) {
        *sb = found[0];
    } else if (nfound > 1) {
        char u0[MD_UUID_TEXT], u1[MD_UUID_TEXT];
        md_uuid_text(found[0].set_uuid, u0);
        md_uuid_text(found[1].set_uuid, u1);
        uraid_why(why, whylen,
                  "member %s holds two md superblocks: metadata %s at sector %llu (array %s, events %llu) and "
                  "metadata %s at sector %llu (array %s, events %llu); one is a leftover in the other's space: "
                  "say which with --metadata %s or --metadata %s (nothing was written)",
                  m->path, md_format_name(which[0]), (unsigned long long)found[0].super_offset, u0,
                  (unsigned long long)found[0].events, md_format_name(which[1]),
                  (unsigned long long)found[1].super_offset, u1, (unsigned long long)found[1].events,
                  md_format_name(which[0]), md_format_name(which[1]));
        rc = -ENOTUNIQ;
    } else if (first_err) {
        uraid_why(why, whylen, "member %s: %s", m->path, err_reason);
        rc = first_err;
    } else if (m->size < MD_SB_V12_BYTES + MD_SB_BYTES) {
        uraid_why(why, whylen, "member %s: too small to hold an md superblock (%llu bytes)", m->path,
                  (unsigned long long)m->size);
        rc = -EINVAL;
    } else {
        int at_end = want == MD_FMT_ANY || want == MD_FMT_ANY1 || want == MD_FMT_1_0 || want == MD_FMT_0_90;
        uraid_why(why, whylen, "member %s: no md superblock (no md magic where metadata %s keeps it)%s", m->path,
                  want == MD_FMT_ANY    ? "0.90, 1.0, 1.1 or 1.2"
                  : want == MD_FMT_ANY1 ? "1.0, 1.1 or 1.2"
                                        : md_format_name(want),
                  at_end ? "; a 0.90 or 1.0 member that grew keeps it below its new end, where md does not look "
                           "either: 'uraid grow MEMBERS... --size max' finds it and writes it at the end" : "");
        rc = -EINVAL;
    }
    free(found);
    return rc;
}

int array_read_superblock(struct member *m, struct md_sb *sb, char *why, size_t whylen)
{
    return array_read_superblock_as(m, MD_FMT_ANY, sb, why, whylen);
}

int array_encode_superblock(struct member *m, const struct md_sb *sb, uint8_t *buf, uint64_t *offset)
{
    int rc = 0;
    if (sb->format == MD_FMT_0_90) {
        struct md_sb0 s0;
        char why[200];
        rc = md_sb0_from_sb(sb, &s0, why, sizeof why);
        if (rc)
            uraid_log(URAID_LOG_ERROR, "member %s: cannot write a 0.90 superblock: %s", m->path, why);
        else
            md_sb0_encode(&s0, buf);
    } else {
        rc = md_sb_encode(sb, buf);
    }
    if (rc)
        return rc;
    if (sb->super_offset != md_format_sb_sector(sb->format, m->size / SECTOR))
        return -EINVAL; /* the superblock belongs elsewhere on this member: never write it there */
    *offset = sb->super_offset * SECTOR;
    return 0;
}

int array_write_superblock(struct member *m, const struct md_sb *sb)
{
    uint8_t buf[MD_SB_BYTES] __attribute__((aligned(4096)));
    uint64_t at;
    int rc = array_encode_superblock(m, sb, buf, &at);
    return rc ? rc : member_write(m, buf, MD_SB_BYTES, at);
}

int array_write_superblock_set(struct uraid_array *a, struct member *const *devs, const struct md_sb *const *sbs,
                               int n, int *res)
{
    uint8_t *bufs = n ? aligned_alloc(4096, (size_t)n * MD_SB_BYTES) : NULL;
    struct io_op *ops = n ? calloc((size_t)n, sizeof *ops) : NULL;
    int *idx = n ? calloc((size_t)n, sizeof *idx) : NULL;
    int rc = !n || (bufs && ops && idx) ? 0 : -ENOMEM, nops = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        uint64_t at = 0;
        res[i] = array_encode_superblock(devs[i], sbs[i], bufs + (size_t)i * MD_SB_BYTES, &at);
        if (res[i] == 0) {
            idx[nops] = i;
            ops[nops++] = (struct io_op){.m = devs[i], .kind = IO_WRITE, .buf = bufs + (size_t)i * MD_SB_BYTES,
                                         .len = MD_SB_BYTES, .offset = at};
        }
    }
    /* every write, then every flush, at once: members far away cost two
     * round trips in all instead of two each (md's md_super_write for
     * every member, then md_super_wait) */
    for (int pass = 0; pass < 2 && rc == 0 && nops; pass++) {
        if (a->io) {
            io_engine_run(a->io, ops, nops);
        } else {
            for (int k = 0; k < nops; k++)
                ops[k].result = ops[k].kind == IO_FLUSH ? member_flush(ops[k].m)
                                                        : member_write(ops[k].m, ops[k].buf, ops[k].len, ops[k].offset);
        }
        int kept = 0;
        for (int k = 0; k < nops; k++) {
            res[idx[k]] = ops[k].result;
            if (ops[k].result)
                continue;
            idx[kept] = idx[k];
            ops[kept++] = (struct io_op){.m = ops[k].m, .kind = IO_FLUSH};
        }
        nops = kept;
    }
    for (int i = 0; i < n && rc; i++)
        res[i] = rc;
    free(bufs);
    free(ops);
    free(idx);
    return rc;
}

int array_write_new_member(struct member *m, const struct md_sb *sb)
{
    int rc = array_write_superblock(m, sb);
    int64_t at = md_sb_bblog_sector(sb);
    if (rc == 0 && sb->bblog_size && sb->bblog_offset) {
        /* an empty log is all 0xff: every entry unused, as mdadm writes it */
        size_t len = (size_t)sb->bblog_size * SECTOR;
        uint8_t *log = malloc(len);
        if (!log)
            return -ENOMEM;
        memset(log, 0xff, len);
        rc = at > 0 ? member_write(m, log, len, (uint64_t)at * SECTOR) : -EINVAL;
        free(log);
    }
    return rc;
}

int array_parse_metadata(const char *text, int *format, char *why, size_t whylen)
{
    *format = MD_FMT_ANY;
    if (!text)
        return 0;
    if (md_format_parse(text, format) == 0)
        return 0;
    uraid_why(why, whylen, "unknown metadata '%s' (md's are 0.90, 1.0, 1.1 and 1.2; mdadm's 0.9, 1 and default "
                           "are accepted too)", text);
    return -EINVAL;
}

const char *uraid_metadata_name(const char *metadata)
{
    int f = MD_FMT_1_2;
    if (metadata && md_format_parse(metadata, &f))
        return "?";
    return md_format_name(f == MD_FMT_ANY1 ? MD_FMT_1_2 : f);
}

int array_read_bblog(struct member *m, const struct md_sb *sb, struct md_bblist **out, char *why, size_t whylen)
{
    *out = NULL;
    if (!(sb->feature_map & MD_FEATURE_BAD_BLOCKS) || !sb->bblog_offset || !sb->bblog_size)
        return 0;
    size_t bytes = (size_t)sb->bblog_size * SECTOR;
    if (bytes > MD_BB_MAX_LOG_BYTES)
        bytes = MD_BB_MAX_LOG_BYTES;
    uint8_t *area = malloc(bytes);
    struct md_bblist *l = malloc(sizeof *l);
    int64_t at = md_sb_bblog_sector(sb);
    int rc = !area || !l ? -ENOMEM : at > 0 ? member_read(m, area, bytes, (uint64_t)at * SECTOR) : -EINVAL;
    if (rc == 0)
        rc = md_bb_decode(area, bytes, sb->bblog_shift, l);
    free(area);
    if (rc) {
        free(l);
        return uraid_why(why, whylen, "member %s: cannot read its bad-block log: %s", m->path, uraid_strerror(rc)), rc;
    }
    *out = l;
    return 0;
}

int array_write_bblog(struct member *m, struct md_sb *sb, const struct md_bblist *l)
{
    /* decode refused such a log already; this keeps a stray superblock in
     * memory from writing one over the superblock or the data */
    if (md_sb_check_bblog(sb, NULL, 0))
        return -EINVAL;
    size_t bytes = (size_t)sb->bblog_size * SECTOR;
    if (bytes > MD_BB_MAX_LOG_BYTES)
        bytes = MD_BB_MAX_LOG_BYTES;
    uint8_t *area = aligned_alloc(4096, 4096);
    if (!area)
        return -ENOMEM;
    int n = md_bb_encode(l, area, bytes);
    int rc = n < 0 ? n : 0;
    int64_t at = md_sb_bblog_sector(sb);
    if (rc == 0)
        rc = at > 0 ? member_write(m, area, bytes, (uint64_t)at * SECTOR) : -EINVAL;
    free(area);
    if (rc == 0) {
        if (l->count)
            sb->feature_map |= MD_FEATURE_BAD_BLOCKS;
        else
            sb->feature_map &= ~MD_FEATURE_BAD_BLOCKS;
    }
    return rc;
}

void array_place_member(struct md_sb *sb, const struct md_sb *ref, uint64_t dev_sectors)
{
    uint64_t at = md_format_sb_sector(ref->format, dev_sectors);
    sb->super_offset = at;
    if (ref->format == MD_FMT_1_0 || ref->format == MD_FMT_0_90) {
        uint64_t tail = ref->super_offset - ref->data_offset - ref->data_size;
        sb->data_size = at != UINT64_MAX && at > tail + ref->data_offset ? at - tail - ref->data_offset : 0;
    } else {
        sb->data_size = dev_sectors > ref->data_offset ? dev_sectors - ref->data_offset : 0;
    }
}
