/* uraid_examine: one member's md metadata decoded for an mdadm-like
 * --examine (the CLI formats it). Opens the member read-only and reads the
 * superblock and, when there is one, the write-intent bitmap. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "layout.h"
#include "log.h"
#include "member/member.h"
#include "meta/bitmap.h"
#include "meta/super0.h"
#include "meta/superblock.h"
#include "uraid_admin.h"

/* superblock ctime/utime: low 40 bits seconds, high 24 microseconds */
#define MD_TIME_SECONDS(t) ((t) & 0xffffffffffull)

static void fill_state(const struct md_sb *sb, struct uraid_examine *e)
{
    int n = (int)sb->raid_disks < URAID_MAX_MEMBERS ? (int)sb->raid_disks : URAID_MAX_MEMBERS;
    memset(e->array_state, '.', (size_t)n);
    e->array_state[n] = 0;
    for (uint32_t d = 0; d < sb->max_dev; d++) {
        uint16_t r = sb->dev_roles[d];
        if (r < (uint16_t)n)
            e->array_state[r] = 'A';
    }
    uint16_t role = sb->dev_number < sb->max_dev ? sb->dev_roles[sb->dev_number] : MD_ROLE_SPARE;
    e->role = role == MD_ROLE_SPARE ? URAID_ROLE_SPARE : role == MD_ROLE_FAULTY ? URAID_ROLE_FAULTY : (int)role;
}

static void fill_sb(const struct md_sb *sb, struct uraid_examine *e)
{
    e->feature_map = sb->feature_map;
    memcpy(e->array_uuid, sb->set_uuid, 16);
    memcpy(e->device_uuid, sb->device_uuid, 16);
    memcpy(e->name, sb->set_name, 32);
    e->name[32] = 0;
    e->ctime = MD_TIME_SECONDS(sb->ctime);
    e->utime = MD_TIME_SECONDS(sb->utime);
    e->level = sb->level;
    e->layout = (int)sb->layout;
    e->raid_devices = (int)sb->raid_disks;
    if (sb->level == 4 || sb->level == 5 || sb->level == 6 || sb->level == 10)
        e->layout_name = layout_name(sb->level, (int)sb->layout);
    else if (sb->level == 0 && (sb->feature_map & MD_FEATURE_RAID0_LAYOUT))
        e->layout_name = layout_name(0, (int)sb->layout);
    e->chunk_bytes = sb->chunksize * 512u;
    e->avail_dev_sectors = sb->data_size;
    e->used_dev_sectors = sb->size;
    struct layout_geom g = {sb->level, (int)sb->layout, (int)sb->raid_disks, sb->chunksize};
    /* like mdadm, no array size when the superblock records none (RAID-0) */
    if (sb->level == 10) {
        /* mdadm's figure: size * members / copies, not md's whole-chunk size */
        uint64_t copies = (sb->layout & 0xff) * (sb->layout >> 8 & 0xff);
        e->array_sectors = copies ? sb->size * sb->raid_disks / copies : 0;
    } else if (!sb->size || layout_array_sectors(&g, sb->size, &e->array_sectors))
        e->array_sectors = 0;
    e->data_offset_sectors = sb->data_offset;
    e->super_offset_sectors = sb->super_offset;
    e->has_recovery_offset = !!(sb->feature_map & MD_FEATURE_RECOVERY_OFFSET);
    e->recovery_offset_sectors = sb->recovery_offset;
    e->clean = sb->resync_offset == MD_RESYNC_CLEAN;
    e->has_bitmap = !!(sb->feature_map & MD_FEATURE_BITMAP_OFFSET);
    e->bitmap_offset_sectors = sb->bitmap_offset;
    e->has_ppl = !e->has_bitmap && md_sb_has_ppl(sb);
    e->has_ppl_q = e->has_ppl && md_sb_has_ppl_q(sb);
    e->ppl_offset_sectors = md_sb_ppl_offset(sb);
    e->ppl_sectors = md_sb_ppl_size(sb);
    e->has_bblog = sb->bblog_offset && sb->bblog_size;
    e->bad_blocks_present = !!(sb->feature_map & MD_FEATURE_BAD_BLOCKS);
    e->bblog_entries = sb->bblog_size * 512u / 8;
    e->bblog_offset_sectors = sb->bblog_offset;
    e->checksum = sb->sb_csum;
    e->events = sb->events;
    fill_state(sb, e);
}

/* mdadm's getinfo_super1 space_before/space_after: between the metadata
 * (superblock + 72 sectors as the kernel reserves, bitmap, log) and the
 * data, and between the used data and what follows it. bitmap_sectors is
 * the bitmap's length when known (0 before it is read). */
static void fill_space(const struct md_sb *sb, uint64_t bitmap_sectors, struct uraid_examine *e)
{
    uint64_t used = sb->level <= 0 ? sb->data_size : sb->size;
    int has_bb = sb->bblog_offset && sb->bblog_size, has_bm = !!(sb->feature_map & MD_FEATURE_BITMAP_OFFSET);
    if (sb->data_offset < sb->super_offset) { /* 1.0: the metadata follows the data */
        int64_t end = (int64_t)sb->super_offset;
        if (has_bb && md_sb_bblog_sector(sb) < end)
            end = md_sb_bblog_sector(sb);
        if (has_bm && (int64_t)sb->super_offset + sb->bitmap_offset < end)
            end = (int64_t)sb->super_offset + sb->bitmap_offset;
        int64_t data_end = (int64_t)(sb->data_offset + used);
        e->space_before = sb->data_offset;
        e->space_after = end > data_end ? (uint64_t)(end - data_end) : 0;
        return;
    }
    int64_t earliest = (int64_t)sb->super_offset + 72;
    if (has_bm && sb->bitmap_offset > 0 && (int64_t)sb->super_offset + sb->bitmap_offset + (int64_t)bitmap_sectors > earliest)
        earliest = (int64_t)sb->super_offset + sb->bitmap_offset + (int64_t)bitmap_sectors;
    if (has_bb && md_sb_bblog_sector(sb) + sb->bblog_size > earliest)
        earliest = md_sb_bblog_sector(sb) + sb->bblog_size;
    e->space_before = (int64_t)sb->data_offset > earliest ? sb->data_offset - (uint64_t)earliest : 0;
    e->space_after = sb->data_size > used ? sb->data_size - used : 0;
}

/* The bitmap at sb + bitmap_offset: header decoded, dirty bits counted. */
static int read_bitmap(struct member *m, const struct md_sb *sb, struct uraid_examine *e)
{
    uint64_t at = (sb->super_offset + (uint64_t)(int64_t)sb->bitmap_offset) * 512;
    uint8_t head[512] __attribute__((aligned(4096)));
    struct md_bitmap_sb bm;
    char why[200];
    int rc = member_read(m, head, sizeof head, at);
    if (rc == 0)
        rc = md_bitmap_decode(head, &bm, why, sizeof why);
    else
        uraid_why(why, sizeof why, "%s", uraid_strerror(rc));
    if (rc) {
        uraid_why(e->bitmap_why, sizeof e->bitmap_why, "member %s: write-intent bitmap at sector %llu: %s", m->path,
                  (unsigned long long)(at / 512), why);
        return rc;
    }
    uint64_t nbits = md_bitmap_bits(&bm), area = md_bitmap_area_bytes(nbits);
    uint8_t *buf = aligned_alloc(4096, (area + 4095) / 4096 * 4096);
    rc = buf ? member_read(m, buf, area, at) : -ENOMEM;
    if (rc == 0)
        e->bitmap.dirty_bits = md_bitmap_count(buf + MD_BITMAP_HEADER_BYTES, nbits);
    free(buf);
    if (rc) {
        uraid_why(e->bitmap_why, sizeof e->bitmap_why, "member %s: cannot read the write-intent bitmap's %llu bits",
                  m->path, (unsigned long long)nbits);
        return rc;
    }
    struct uraid_examine_bitmap *b = &e->bitmap;
    b->magic = MD_BITMAP_MAGIC;
    b->version = bm.version;
    memcpy(b->uuid, bm.uuid, 16);
    b->events = bm.events;
    b->events_cleared = bm.events_cleared;
    b->stale = !!(bm.state & MD_BITMAP_STATE_STALE);
    b->chunk_bytes = bm.chunksize;
    b->daemon_sleep_s = bm.daemon_sleep;
    b->write_behind = bm.write_behind != 0;
    b->sync_sectors = bm.sync_size;
    b->bits = nbits;
    return 0;
}

/* 0.90: the descriptor table and counts, from the superblock itself. */
static int fill_v090(struct member *m, const struct md_sb *sb, struct uraid_examine *e, char *why, size_t whylen)
{
    uint8_t raw[MD_SB0_BYTES] __attribute__((aligned(4096)));
    struct md_sb0 s0;
    char reason[240];
    int rc = member_read(m, raw, sizeof raw, sb->super_offset * SECTOR);
    if (rc == 0 && (rc = md_sb0_decode(raw, &s0, reason, sizeof reason)) != 0)
        uraid_why(why, whylen, "member %s: %s", m->path, reason);
    else if (rc)
        uraid_why(why, whylen, "member %s: cannot read the 0.90 superblock: %s", m->path, uraid_strerror(rc));
    if (rc)
        return rc;
    struct uraid_examine0 *v = &e->v0;
    e->v090 = 1;
    snprintf(e->version, sizeof e->version, "0.%02u.%02u", MD_SB0_MINOR, s0.patch_version % 100);
    v->total = s0.nr_disks;
    v->preferred_minor = s0.md_minor;
    v->active = s0.active_disks;
    v->working = s0.working_disks;
    v->failed = s0.failed_disks;
    v->spare = s0.spare_disks;
    v->errors = !!(s0.state & (1u << MD_SB0_ERRORS));
    const struct md_sb0_desc *d = &s0.this_disk;
    v->this_disk = (struct uraid_examine_desc){d->number, d->major, d->minor, d->raid_disk, d->state};
    uint64_t rows = (uint64_t)s0.raid_disks + s0.spare_disks;
    v->ndisks = rows > MD_SB0_DISKS ? (int)MD_SB0_DISKS : (int)rows;
    for (int i = 0; i < v->ndisks; i++) {
        d = &s0.disks[i];
        v->disks[i] = (struct uraid_examine_desc){d->number, d->major, d->minor, d->raid_disk, d->state};
    }
    return 0;
}

int uraid_examine(const char *member, struct uraid_examine *out, char *why, size_t whylen)
{
    return uraid_examine_as(member, NULL, out, why, whylen);
}

int uraid_examine_as(const char *member, const char *metadata, struct uraid_examine *out, char *why,
                     size_t whylen)
{
    if (!member || !out) {
        uraid_why(why, whylen, "no member given");
        return -EINVAL;
    }
    memset(out, 0, sizeof *out);
    struct member *m;
    char reason[300];
    int rc = member_open_why(member, 1, &m, reason, sizeof reason);
    if (rc) {
        uraid_why(why, whylen, "member %s: cannot open: %s", member, reason);
        return rc;
    }
    struct md_sb sb;
    int want;
    rc = array_parse_metadata(metadata, &want, why, whylen);
    if (rc == 0)
        rc = array_read_superblock_as(m, want, &sb, why, whylen);
    if (rc == 0) {
        fill_sb(&sb, out);
        snprintf(out->version, sizeof out->version, "%s", md_format_name(sb.format));
        if (sb.format == MD_FMT_0_90)
            rc = fill_v090(m, &sb, out, why, whylen);
    }
    if (rc == 0) {
        if (out->has_bitmap)
            out->bitmap_err = read_bitmap(m, &sb, out);
        uint64_t bm_bytes = out->has_bitmap && !out->bitmap_err ? md_bitmap_area_bytes(out->bitmap.bits) : 0;
        fill_space(&sb, (bm_bytes + SECTOR - 1) / SECTOR, out);
    }
    member_close(m);
    return rc;
}
