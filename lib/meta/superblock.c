/* md v1.x superblock encode/decode, written from md-format.md section 1
 * (the field table, the checksum and the kernel's acceptance rules) and
 * checked against superblocks written by Linux md and read by mdadm 4.2.
 *
 * The on-disk struct below is made only of byte arrays, so it has no
 * padding and no alignment or host-endian assumptions; every integer goes
 * through the explicit little-endian helpers in le.h. */
#include "meta/superblock.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "meta/le.h"
#include "meta/super0.h"

struct md_sb_disk {
    uint8_t magic[4];
    uint8_t major_version[4];
    uint8_t feature_map[4];
    uint8_t pad0[4];
    uint8_t set_uuid[16];
    uint8_t set_name[32];
    uint8_t ctime[8];
    uint8_t level[4];
    uint8_t layout[4];
    uint8_t size[8];
    uint8_t chunksize[4];
    uint8_t raid_disks[4];
    uint8_t bitmap_offset[4];
    uint8_t new_level[4];
    uint8_t reshape_position[8];
    uint8_t delta_disks[4];
    uint8_t new_layout[4];
    uint8_t new_chunk[4];
    uint8_t new_offset[4];
    uint8_t data_offset[8];
    uint8_t data_size[8];
    uint8_t super_offset[8];
    uint8_t recovery_offset[8];
    uint8_t dev_number[4];
    uint8_t cnt_corrected_read[4];
    uint8_t device_uuid[16];
    uint8_t devflags[1];
    uint8_t bblog_shift[1];
    uint8_t bblog_size[2];
    uint8_t bblog_offset[4];
    uint8_t utime[8];
    uint8_t events[8];
    uint8_t resync_offset[8];
    uint8_t sb_csum[4];
    uint8_t max_dev[4];
    uint8_t pad3[32];
    /* dev_roles[max_dev] (LE u16) follow at byte 256 */
};

/* The offsets of md-format.md 1.2 (verified there against md_p.h). */
#define AT(f, off) _Static_assert(offsetof(struct md_sb_disk, f) == (off), #f " offset")
AT(magic, 0); AT(major_version, 4); AT(feature_map, 8); AT(pad0, 12);
AT(set_uuid, 16); AT(set_name, 32); AT(ctime, 64); AT(level, 72);
AT(layout, 76); AT(size, 80); AT(chunksize, 88); AT(raid_disks, 92);
AT(bitmap_offset, 96); AT(new_level, 100); AT(reshape_position, 104);
AT(delta_disks, 112); AT(new_layout, 116); AT(new_chunk, 120);
AT(new_offset, 124); AT(data_offset, 128); AT(data_size, 136);
AT(super_offset, 144); AT(recovery_offset, 152); AT(dev_number, 160);
AT(cnt_corrected_read, 164); AT(device_uuid, 168); AT(devflags, 184);
AT(bblog_shift, 185); AT(bblog_size, 186); AT(bblog_offset, 188);
AT(utime, 192); AT(events, 200); AT(resync_offset, 208); AT(sb_csum, 216);
AT(max_dev, 220); AT(pad3, 224);
#undef AT
_Static_assert(sizeof(struct md_sb_disk) == MD_SB_FIXED_BYTES, "fixed part is 256 bytes");
_Static_assert(MD_SB_FIXED_BYTES + 2 * MD_SB_MAX_DEV == MD_SB_BYTES, "roles fill 4 KiB");

#define OFF(f) offsetof(struct md_sb_disk, f)

uint32_t md_sb_checksum(const uint8_t *encoded, uint32_t max_dev)
{
    if (max_dev > MD_SB_MAX_DEV)
        max_dev = MD_SB_MAX_DEV;
    uint32_t len = md_sb_len(max_dev);
    uint64_t acc = 0;
    uint32_t i = 0;
    for (; i + 4 <= len; i += 4)
        if (i != OFF(sb_csum)) /* the stored checksum counts as zero */
            acc += le32_get(encoded + i);
    if (len - i == 2)
        acc += le16_get(encoded + i);
    /* One fold only: md adds the carry word once and truncates. */
    return (uint32_t)((acc & 0xffffffffu) + (acc >> 32));
}

int md_sb_encode(const struct md_sb *sb, uint8_t *out)
{
    if (sb->max_dev > MD_SB_MAX_DEV)
        return -EINVAL;
    memset(out, 0, MD_SB_BYTES);
    le32_put(out + OFF(magic), MD_SB_MAGIC);
    le32_put(out + OFF(major_version), MD_SB_MAJOR);
    le32_put(out + OFF(feature_map), sb->feature_map);
    memcpy(out + OFF(set_uuid), sb->set_uuid, 16);
    memcpy(out + OFF(set_name), sb->set_name, 32);
    le64_put(out + OFF(ctime), sb->ctime);
    le32_put(out + OFF(level), (uint32_t)sb->level);
    le32_put(out + OFF(layout), sb->layout);
    le64_put(out + OFF(size), sb->size);
    le32_put(out + OFF(chunksize), sb->chunksize);
    le32_put(out + OFF(raid_disks), sb->raid_disks);
    le32_put(out + OFF(bitmap_offset), (uint32_t)sb->bitmap_offset);
    le32_put(out + OFF(new_level), sb->new_level);
    le64_put(out + OFF(reshape_position), sb->reshape_position);
    le32_put(out + OFF(delta_disks), (uint32_t)sb->delta_disks);
    le32_put(out + OFF(new_layout), sb->new_layout);
    le32_put(out + OFF(new_chunk), sb->new_chunk);
    le32_put(out + OFF(new_offset), (uint32_t)sb->new_offset);
    le64_put(out + OFF(data_offset), sb->data_offset);
    le64_put(out + OFF(data_size), sb->data_size);
    le64_put(out + OFF(super_offset), sb->super_offset);
    le64_put(out + OFF(recovery_offset), sb->recovery_offset);
    le32_put(out + OFF(dev_number), sb->dev_number);
    le32_put(out + OFF(cnt_corrected_read), sb->cnt_corrected_read);
    memcpy(out + OFF(device_uuid), sb->device_uuid, 16);
    out[OFF(devflags)] = sb->devflags;
    out[OFF(bblog_shift)] = sb->bblog_shift;
    le16_put(out + OFF(bblog_size), sb->bblog_size);
    le32_put(out + OFF(bblog_offset), (uint32_t)sb->bblog_offset);
    le64_put(out + OFF(utime), sb->utime);
    le64_put(out + OFF(events), sb->events);
    le64_put(out + OFF(resync_offset), sb->resync_offset);
    le32_put(out + OFF(max_dev), sb->max_dev);
    for (uint32_t i = 0; i < sb->max_dev; i++)
        le16_put(out + MD_SB_FIXED_BYTES + 2 * i, sb->dev_roles[i]);
    le32_put(out + OFF(sb_csum), md_sb_checksum(out, sb->max_dev));
    return 0;
}

void md_sb_bblog_room(const struct md_sb *sb, uint64_t *lo, uint64_t *hi)
{
    uint64_t sb_end = sb->super_offset + md_sb_sectors(sb->max_dev);
    if (sb->super_offset <= MD_SB_V12_SECTOR) {
        *lo = sb_end;
        *hi = sb->data_offset;
    } else {
        /* fuzzed fields must not wrap round */
        *lo = sb->data_offset + sb->data_size < sb->data_offset ? UINT64_MAX : sb->data_offset + sb->data_size;
        *hi = sb->super_offset;
    }
}

int md_sb_check_bblog(const struct md_sb *sb, char *why, size_t whylen)
{
    /* md refuses a listed log it cannot read in one page or that is nowhere */
    if ((sb->feature_map & MD_FEATURE_BAD_BLOCKS) && (!sb->bblog_offset || sb->bblog_size > 8)) {
        uraid_why(why, whylen, "bad-block log of %u sectors at offset %d: md reads one page (8 sectors) at a non-zero offset",
            sb->bblog_size, sb->bblog_offset);
        return -EINVAL;
    }
    if (!sb->bblog_offset || !sb->bblog_size)
        return 0;
    uint64_t lo, hi;
    md_sb_bblog_room(sb, &lo, &hi);
    int64_t start = md_sb_bblog_sector(sb);
    if (start >= 0 && (uint64_t)start >= lo && (uint64_t)start <= hi && hi - (uint64_t)start >= sb->bblog_size)
        return 0;
    int v12 = sb->super_offset <= MD_SB_V12_SECTOR, below = start < 0 || (uint64_t)start < lo;
    const char *what =
        below == v12 ? "would overwrite the superblock" : "would overwrite the data (or lie past the end)";
    if (v12 && below && start + sb->bblog_size <= (int64_t)sb->super_offset)
        what = "lies before the superblock";
    uraid_why(why, whylen,
        "bad-block log at sectors %lld..%lld (offset %d, %u sectors) %s: it must lie in sectors "
        "%llu..%llu, between the superblock and the data (mdadm --update=no-bbl drops it)",
        (long long)start, (long long)start + sb->bblog_size - 1, sb->bblog_offset, sb->bblog_size, what,
        (unsigned long long)lo, (unsigned long long)(hi > lo ? hi - 1 : lo));
    return -EINVAL;
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

int md_sb_decode(const uint8_t *in, uint64_t read_at_sector, struct md_sb *sb, char *why, size_t whylen)
{
    /* Every byte (struct padding included) is set, so decodes compare with memcmp. */
    memset(sb, 0, sizeof(*sb));

    /* The checks run in the kernel's order (super_1_load): identity first,
     * then the fields needed to find the checksummed length, the checksum,
     * then the contents the checksum vouches for. */
    uint32_t magic = le32_get(in + OFF(magic));
    if (magic != MD_SB_MAGIC) {
        uraid_why(why, whylen, "no md superblock (magic 0x%08x, expected 0x%08x)", magic, MD_SB_MAGIC);
        return -EINVAL;
    }
    uint32_t major = le32_get(in + OFF(major_version));
    if (major != MD_SB_MAJOR) {
        uraid_why(why, whylen, "md superblock major version %u (only 1 is known)", major);
        return -EINVAL;
    }
    uint32_t max_dev = le32_get(in + OFF(max_dev));
    if (max_dev > MD_SB_MAX_DEV) {
        uraid_why(why, whylen, "max_dev %u larger than %u", max_dev, MD_SB_MAX_DEV);
        return -EINVAL;
    }
    uint64_t super_offset = le64_get(in + OFF(super_offset));
    if (super_offset != read_at_sector) {
        uraid_why(why, whylen, "superblock says it lives at sector %llu but was read at sector %llu",
            (unsigned long long)super_offset, (unsigned long long)read_at_sector);
        return -EINVAL;
    }
    uint32_t stored = le32_get(in + OFF(sb_csum));
    uint32_t computed = md_sb_checksum(in, max_dev);
    if (stored != computed) {
        uraid_why(why, whylen, "bad checksum (stored 0x%08x, computed 0x%08x)", stored, computed);
        return -EBADMSG;
    }
    uint32_t features = le32_get(in + OFF(feature_map));
    if (features & ~URAID_FEATURE_ALL) {
        uraid_why(why, whylen, "unknown feature bits 0x%x (feature_map 0x%x)", features & ~URAID_FEATURE_ALL,
            features);
        return -EOPNOTSUPP;
    }
    if (!all_zero(in + OFF(pad0), 4) || !all_zero(in + OFF(pad3), 32)) {
        uraid_why(why, whylen, "non-zero reserved bytes (pad0 or pad3)");
        return -EINVAL;
    }

    sb->feature_map = features;
    memcpy(sb->set_uuid, in + OFF(set_uuid), 16);
    memcpy(sb->set_name, in + OFF(set_name), 32);
    sb->ctime = le64_get(in + OFF(ctime));
    sb->level = (int32_t)le32_get(in + OFF(level));
    sb->layout = le32_get(in + OFF(layout));
    sb->size = le64_get(in + OFF(size));
    sb->chunksize = le32_get(in + OFF(chunksize));
    sb->raid_disks = le32_get(in + OFF(raid_disks));
    sb->bitmap_offset = (int32_t)le32_get(in + OFF(bitmap_offset));
    sb->new_level = le32_get(in + OFF(new_level));
    sb->reshape_position = le64_get(in + OFF(reshape_position));
    sb->delta_disks = (int32_t)le32_get(in + OFF(delta_disks));
    sb->new_layout = le32_get(in + OFF(new_layout));
    sb->new_chunk = le32_get(in + OFF(new_chunk));
    sb->new_offset = (int32_t)le32_get(in + OFF(new_offset));
    sb->data_offset = le64_get(in + OFF(data_offset));
    sb->data_size = le64_get(in + OFF(data_size));
    sb->super_offset = super_offset;
    sb->recovery_offset = le64_get(in + OFF(recovery_offset));
    sb->dev_number = le32_get(in + OFF(dev_number));
    sb->cnt_corrected_read = le32_get(in + OFF(cnt_corrected_read));
    memcpy(sb->device_uuid, in + OFF(device_uuid), 16);
    sb->devflags = in[OFF(devflags)];
    sb->bblog_shift = in[OFF(bblog_shift)];
    sb->bblog_size = le16_get(in + OFF(bblog_size));
    sb->bblog_offset = (int32_t)le32_get(in + OFF(bblog_offset));
    sb->utime = le64_get(in + OFF(utime));
    sb->events = le64_get(in + OFF(events));
    sb->resync_offset = le64_get(in + OFF(resync_offset));
    sb->sb_csum = stored;
    sb->format = md_format_of_v1_sector(read_at_sector);
    sb->max_dev = max_dev;
    for (uint32_t i = 0; i < max_dev; i++)
        sb->dev_roles[i] = le16_get(in + MD_SB_FIXED_BYTES + 2 * i);

    if (sb->data_size < 10) {
        uraid_why(why, whylen, "data_size %llu sectors is below md's minimum of 10",
            (unsigned long long)sb->data_size);
        return -EINVAL;
    }
    /* v1.1 and v1.2 (superblock at sector 0 or 8) keep the data after the
     * superblock; the kernel rounds the superblock up to the logical block
     * size (512 here). A v1.0 superblock sits near the end of the member,
     * after the data, and has no such rule. */
    uint64_t sb_end = super_offset + md_sb_sectors(max_dev);
    if (super_offset <= MD_SB_V12_SECTOR) {
        if (sb->data_offset < sb_end) {
            uraid_why(why, whylen, "data_offset %llu overlaps the superblock (sectors %llu..%llu)",
                (unsigned long long)sb->data_offset, (unsigned long long)super_offset,
                (unsigned long long)sb_end - 1);
            return -EINVAL;
        }
        /* Unsigned arithmetic: fuzzed offsets must not overflow. */
        if ((features & MD_FEATURE_NEW_OFFSET) && sb->new_offset < 0 &&
            (uint64_t)(-(int64_t)sb->new_offset) > sb->data_offset - sb_end) {
            uraid_why(why, whylen, "new data offset (data_offset %llu %d) overlaps the superblock",
                (unsigned long long)sb->data_offset, sb->new_offset);
            return -EINVAL;
        }
    }
    /* Not a kernel rule (md grows max_dev to cover every device number),
     * but every reader indexes dev_roles[dev_number], so refuse it here. */
    if (sb->dev_number >= max_dev) {
        uraid_why(why, whylen, "dev_number %u outside dev_roles[%u]", sb->dev_number, max_dev);
        return -EINVAL;
    }
    int rc = md_sb_check_bblog(sb, why, whylen);
    return rc ? rc : md_sb_check_ppl(sb, why, whylen);
}

/* ---- Formats ---------------------------------------------------------- */

const char *md_format_name(int format)
{
    static const char *const names[MD_FMT_COUNT] = {"1.2", "1.1", "1.0", "0.90"};
    return format >= 0 && format < MD_FMT_COUNT ? names[format] : "?";
}

int md_format_parse(const char *text, int *format)
{
    static const struct {
        const char *text;
        int format;
    } spell[] = {
        {"0.90", MD_FMT_0_90}, {"0.9", MD_FMT_0_90}, {"0", MD_FMT_0_90},  {"1.0", MD_FMT_1_0},
        {"1.00", MD_FMT_1_0},  {"1.1", MD_FMT_1_1},  {"1.01", MD_FMT_1_1}, {"1.2", MD_FMT_1_2},
        {"1.02", MD_FMT_1_2},  {"default", MD_FMT_1_2}, {"1", MD_FMT_ANY1},
    };
    for (size_t i = 0; text && i < sizeof spell / sizeof spell[0]; i++)
        if (!strcmp(text, spell[i].text)) {
            *format = spell[i].format;
            return 0;
        }
    return -EINVAL;
}

uint64_t md_format_sb_sector(int format, uint64_t member_sectors)
{
    switch (format) {
    case MD_FMT_1_2:
        return member_sectors >= MD_SB_V12_SECTOR + 8 ? MD_SB_V12_SECTOR : UINT64_MAX;
    case MD_FMT_1_1:
        return member_sectors >= 8 ? 0 : UINT64_MAX;
    case MD_FMT_1_0:
        /* md's super_1_load: 8 KiB back from the end, down to 4 KiB */
        return member_sectors >= 24 ? (member_sectors - 16) & ~(uint64_t)7 : UINT64_MAX;
    case MD_FMT_0_90:
        /* md_p.h MD_NEW_SIZE_SECTORS: the last whole 64 KiB below the end */
        return member_sectors >= 256 ? (member_sectors & ~(uint64_t)127) - 128 : UINT64_MAX;
    default:
        return UINT64_MAX;
    }
}

/* ---- Creating members -------------------------------------------------- */

uint32_t md_choose_bm_space(uint64_t dev_sectors)
{
    if (dev_sectors < 128)                      /* < 64 KiB: no room */
        return 0;
    if (dev_sectors >= 200ull * 1024 * 1024 * 2) /* >= 200 GiB: 128 KiB */
        return 256;
    if (dev_sectors > 8ull * 1024 * 1024 * 2)   /* > 8 GiB: 64 KiB */
        return 128;
    return 8;                                   /* 4 KiB */
}

/* Reshape headroom: room for mdadm --grow to move data without a backup
 * file. 128 MiB, shrunk on small devices but never below 2 chunks. */
static uint64_t headroom_sectors(uint64_t dev_sectors, uint32_t chunk_sectors)
{
    uint64_t headroom = 128ull * 1024 * 2;
    while ((headroom << 10) > dev_sectors && headroom / 2 >= 2ull * chunk_sectors && headroom > 1)
        headroom /= 2;
    return headroom;
}

uint64_t md_choose_data_offset_space(uint64_t dev_sectors, uint32_t chunk_sectors, uint32_t space)
{
    uint64_t off = 24 + space + headroom_sectors(dev_sectors, chunk_sectors);
    return (off + 2047) / 2048 * 2048;
}

uint64_t md_choose_data_offset(uint64_t dev_sectors, uint32_t chunk_sectors)
{
    return md_choose_data_offset_space(dev_sectors, chunk_sectors, md_choose_bm_space(dev_sectors));
}

int md_sb_check_ppl(const struct md_sb *sb, char *why, size_t whylen)
{
    uint32_t f = sb->feature_map;
    if (!md_sb_has_ppl(sb))
        return 0;
    if ((f & MD_FEATURE_PPL_Q) && sb->level != 6) {
        uraid_why(why, whylen, "feature 0x%x (a PPL with partial Q) on RAID-%d: it belongs to RAID-6 only",
            MD_FEATURE_PPL_Q, sb->level);
        return -EINVAL;
    }
    if ((f & MD_FEATURE_PPL_Q) && (f & (MD_FEATURE_PPL | MD_FEATURE_MULTIPLE_PPLS))) {
        uraid_why(why, whylen, "feature 0x%x (a PPL with partial Q) beside md's PPL bits (feature_map 0x%x)",
            MD_FEATURE_PPL_Q, f);
        return -EINVAL;
    }
    if (f & (MD_FEATURE_BITMAP_OFFSET | MD_FEATURE_JOURNAL)) {
        uraid_why(why, whylen, "a PPL together with a %s (md refuses both at once)",
            f & MD_FEATURE_JOURNAL ? "journal" : "write-intent bitmap");
        return -EINVAL;
    }
    int64_t start = md_sb_ppl_sector(sb), end = start + md_sb_ppl_size(sb);
    int64_t sb_end = (int64_t)(sb->super_offset + md_sb_sectors(sb->max_dev));
    int64_t data_lo = (int64_t)sb->data_offset, data_hi = (int64_t)(sb->data_offset + sb->data_size);
    int64_t bb_lo = md_sb_bblog_sector(sb), bb_hi = sb->bblog_offset && sb->bblog_size ? bb_lo + sb->bblog_size : bb_lo;
    const char *what = NULL;
    if (md_sb_ppl_size(sb) < 16)
        what = "is smaller than 16 sectors (a header and one 4 KiB block)";
    else if (start < 0 || (start < sb_end && end > (int64_t)sb->super_offset))
        what = "overlaps the superblock";
    else if (start < data_hi && end > data_lo)
        what = "overlaps the data";
    else if (bb_hi > bb_lo && start < bb_hi && end > bb_lo)
        what = "overlaps the bad-block log";
    if (!what)
        return 0;
    uraid_why(why, whylen, "PPL area at sectors %lld..%lld (offset %d, %u sectors) %s", (long long)start,
        (long long)end - 1, md_sb_ppl_offset(sb), md_sb_ppl_size(sb), what);
    return -EINVAL;
}

uint32_t md_choose_max_dev(uint32_t n)
{
    /* 256 + 2*max_dev must be a whole number of sectors: max_dev = 128 mod 256. */
    uint32_t m = 128;
    while (m < n && m + 256 <= MD_SB_MAX_DEV)
        m += 256;
    return m < n ? MD_SB_MAX_DEV : m;
}

void md_sb_drop_slots(struct md_sb *sb, uint32_t n)
{
    for (uint32_t dn = 0; dn < sb->max_dev && dn < MD_SB_MAX_DEV; dn++)
        if (sb->dev_roles[dn] <= MD_ROLE_MAX_ACTIVE && sb->dev_roles[dn] >= n)
            sb->dev_roles[dn] = MD_ROLE_FAULTY;
    sb->raid_disks = n;
}

int md_sb_make_name(const char *name, const char *homehost, char out[32])
{
    char host[256];
    memset(out, 0, 32);
    if (!name || !*name || strlen(name) > 31)
        return -EINVAL;
    if (!homehost) {
        /* mdadm's default homehost is the machine's name (gethostname). */
        if (gethostname(host, sizeof(host)) != 0)
            host[0] = 0;
        host[sizeof(host) - 1] = 0;
        homehost = host;
    }
    size_t hl = strlen(homehost), nl = strlen(name);
    if (!strchr(name, ':') && hl && hl + 1 + nl <= 31) {
        memcpy(out, homehost, hl);
        out[hl] = ':';
        memcpy(out + hl + 1, name, nl);
    } else
        memcpy(out, name, strlen(name));
    return 0;
}

/* Where a new member's superblock, data and bad-block log go, by format
 * (mdadm 4.2's init_super1 and init_super0, as the oracle's members show):
 *   1.1, 1.2  sb at 0 / 8, data at round_up(sb + 16 + space + headroom,
 *             1 MiB), the log after the bitmap space (or before the data);
 *   1.0       sb 8-12 KiB from this member's end, data from 0 up to
 *             sb - space - 8, the log in the 8 sectors before the sb;
 *   0.90      sb in the last 64 KiB-aligned 64 KiB, data from 0 up to it,
 *             no log (0.90 has none), 27 device slots.
 * `usable` is the common room (the smallest member's); `space` is the
 * bitmap's room before the log, `off_space` what the data offset (or 1.0's
 * tail) reserves: mdadm reserves bitmap space there even for RAID-0. */
struct placement {
    uint64_t super_offset, data_offset, data_size, usable;
    int32_t bblog_offset;
    uint16_t bblog_size;
};

static int place_new_member(const struct md_sb_create_params *p, uint64_t member_sectors, uint32_t max_dev,
                            uint32_t space, uint32_t off_space, struct placement *pl, char *why, size_t whylen)
{
    memset(pl, 0, sizeof *pl);
    int f = p->format;
    uint64_t at = md_format_sb_sector(f, member_sectors), small_at = md_format_sb_sector(f, p->dev_sectors);
    if (at == UINT64_MAX || small_at == UINT64_MAX || member_sectors < p->dev_sectors) {
        uraid_why(why, whylen, "member of %llu sectors too small for metadata %s", (unsigned long long)member_sectors,
            md_format_name(f));
        return -EINVAL;
    }
    pl->super_offset = at;
    if (f == MD_FMT_1_0 || f == MD_FMT_0_90) {
        uint32_t tail = f == MD_FMT_0_90 ? 0 : off_space + 8;
        if (small_at < tail + 10) {
            uraid_why(why, whylen, "member of %llu sectors too small for metadata %s", (unsigned long long)member_sectors,
                md_format_name(f));
            return -EINVAL;
        }
        pl->data_size = at - tail;
        pl->usable = small_at - tail;
        if (f == MD_FMT_1_0) {
            pl->bblog_offset = -8;
            pl->bblog_size = 8;
        }
        return 0;
    }
    uint64_t off = p->data_offset ? p->data_offset
                                  : (at + 16 + off_space + headroom_sectors(p->dev_sectors, p->chunk_sectors) + 2047) /
                                        2048 * 2048;
    if (off < at + md_sb_sectors(max_dev) + 8 || p->dev_sectors < off + 10) {
        uraid_why(why, whylen, "member of %llu sectors too small for data offset %llu", (unsigned long long)member_sectors,
            (unsigned long long)off);
        return -EINVAL;
    }
    pl->data_offset = off;
    pl->data_size = member_sectors - off;
    pl->usable = p->dev_sectors - off;
    /* Bad-block log: 8 sectors (512 entries, md's one-page cap) after the
     * bitmap space, or just before the data when that does not fit. The
     * md fixtures show RAID-0 reserving no bitmap space (log at sb+8). */
    pl->bblog_size = 8;
    pl->bblog_offset = at + 8 + space + 8 <= off ? (int32_t)(8 + space) : (int32_t)(off - 8 - at);
    return 0;
}

int md_sb_init(struct md_sb *sb, const struct md_sb_create_params *p, uint32_t dev_number,
               const uint8_t device_uuid[16], uint64_t member_sectors, char *why, size_t whylen)
{
    memset(sb, 0, sizeof(*sb));
    int v090 = p->format == MD_FMT_0_90;
    uint32_t limit = v090 ? MD_SB0_DISKS : MD_SB_MAX_DEV;
    if (p->format < 0 || p->format >= MD_FMT_COUNT) {
        uraid_why(why, whylen, "unknown metadata format %d", p->format);
        return -EINVAL;
    }
    if (p->raid_disks == 0 || p->raid_disks + (v090 ? p->spares : 0) > limit || dev_number >= p->raid_disks) {
        uraid_why(why, whylen, "raid_disks %u / device %u out of range", p->raid_disks, dev_number);
        return -EINVAL;
    }
    if (p->level != 1 && p->level > 0 && p->chunk_sectors == 0) {
        uraid_why(why, whylen, "level %d needs a chunk size", p->level);
        return -EINVAL;
    }
    if (md_sb_make_name(p->name, p->homehost, sb->set_name) < 0) {
        uraid_why(why, whylen, "array name must be 1 to 31 bytes");
        return -EINVAL;
    }
    if (p->ppl && p->format != MD_FMT_1_2) {
        uraid_why(why, whylen, "a PPL needs metadata 1.2 here (uraid keeps md's PPL area after a 1.2 superblock only)");
        return -EINVAL;
    }
    /* mdadm reserves the PPL's 1 MiB where the bitmap's space would be */
    uint32_t bm_space = p->level <= 0 ? 0 : p->ppl ? MD_PPL_SECTORS : md_choose_bm_space(p->dev_sectors);
    uint32_t max_dev = v090 ? MD_SB0_DISKS : md_choose_max_dev(p->raid_disks + p->spares);
    struct placement pl;
    uint32_t off_space = v090 ? 0 : p->ppl ? MD_PPL_SECTORS : md_choose_bm_space(p->dev_sectors);
    int rc = place_new_member(p, member_sectors, max_dev, bm_space, off_space, &pl, why, whylen);
    if (rc)
        return rc;

    memcpy(sb->set_uuid, p->uuid, 16);
    sb->ctime = v090 ? (uint32_t)p->ctime : p->ctime;
    sb->utime = sb->ctime;
    sb->level = p->level;
    sb->layout = p->layout;
    sb->chunksize = p->chunk_sectors;
    sb->raid_disks = p->raid_disks;
    /* mdadm records 0 for RAID-0 (each member's length is data_size);
     * otherwise the common usable length, whole chunks only. */
    uint64_t usable = pl.usable;
    if (p->level > 0 && p->chunk_sectors && p->level != 1)
        usable -= usable % p->chunk_sectors;
    if (p->level == 1)
        usable -= usable % 128; /* mdadm rounds a mirror down to 64 KiB (the oracle's 1.0 and 1.2 members) */
    if (v090)
        usable &= ~(uint64_t)1; /* 0.90 records KiB */
    sb->size = p->level <= 0 ? 0 : usable;
    sb->data_offset = pl.data_offset;
    sb->data_size = pl.data_size;
    sb->super_offset = pl.super_offset;
    sb->format = p->format;
    sb->dev_number = dev_number;
    memcpy(sb->device_uuid, device_uuid, 16);
    sb->bblog_size = pl.bblog_size;
    sb->bblog_shift = 0;
    sb->bblog_offset = pl.bblog_offset;

    if (p->ppl) {
        sb->feature_map |= p->level == 6 ? MD_FEATURE_PPL_Q : MD_FEATURE_PPL;
        md_sb_set_ppl(sb, 8, MD_PPL_SECTORS);
    }
    sb->events = 0;
    sb->resync_offset = (p->assume_clean || p->level <= 0) ? MD_RESYNC_CLEAN : 0;
    sb->max_dev = max_dev;
    for (uint32_t i = 0; i < max_dev; i++)
        sb->dev_roles[i] = MD_ROLE_SPARE;
    for (uint32_t i = 0; i < p->raid_disks; i++)
        if (!p->missing || !p->missing[i])
            sb->dev_roles[i] = (uint16_t)i;
    return 0;
}
