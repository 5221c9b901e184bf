/* md v1.2 superblock encoding and decoding (little-endian, fixed offsets).
 * Written from md-format.md section 1; the offsets are checked against the
 * kernel's struct mdp_superblock_1 layout by the _Static_asserts below. */
#include "meta/superblock.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The on-disk layout, only to pin the offsets the codec uses. */
struct md_sb_disk {
    uint32_t magic, major_version, feature_map, pad0;
    uint8_t set_uuid[16];
    char set_name[32];
    uint64_t ctime;
    int32_t level;
    uint32_t layout;
    uint64_t size;
    uint32_t chunksize, raid_disks;
    int32_t bitmap_offset;
    uint32_t new_level;
    uint64_t reshape_position;
    int32_t delta_disks;
    uint32_t new_layout, new_chunk;
    int32_t new_offset;
    uint64_t data_offset, data_size, super_offset, recovery_offset;
    uint32_t dev_number, cnt_corrected_read;
    uint8_t device_uuid[16];
    uint8_t devflags, bblog_shift;
    uint16_t bblog_size;
    int32_t bblog_offset;
    uint64_t utime, events, resync_offset;
    uint32_t sb_csum, max_dev;
    uint8_t pad3[32];
    uint16_t dev_roles[];
} __attribute__((packed));

#define OFF(f) offsetof(struct md_sb_disk, f)
_Static_assert(OFF(feature_map) == 8, "feature_map");
_Static_assert(OFF(set_uuid) == 16, "set_uuid");
_Static_assert(OFF(set_name) == 32, "set_name");
_Static_assert(OFF(ctime) == 64, "ctime");
_Static_assert(OFF(level) == 72, "level");
_Static_assert(OFF(size) == 80, "size");
_Static_assert(OFF(chunksize) == 88, "chunksize");
_Static_assert(OFF(bitmap_offset) == 96, "bitmap_offset");
_Static_assert(OFF(reshape_position) == 104, "reshape_position");
_Static_assert(OFF(new_offset) == 124, "new_offset");
_Static_assert(OFF(data_offset) == 128, "data_offset");
_Static_assert(OFF(recovery_offset) == 152, "recovery_offset");
_Static_assert(OFF(dev_number) == 160, "dev_number");
_Static_assert(OFF(device_uuid) == 168, "device_uuid");
_Static_assert(OFF(devflags) == 184, "devflags");
_Static_assert(OFF(bblog_size) == 186, "bblog_size");
_Static_assert(OFF(bblog_offset) == 188, "bblog_offset");
_Static_assert(OFF(utime) == 192, "utime");
_Static_assert(OFF(resync_offset) == 208, "resync_offset");
_Static_assert(OFF(sb_csum) == 216, "sb_csum");
_Static_assert(OFF(max_dev) == 220, "max_dev");
_Static_assert(OFF(pad3) == 224, "pad3");
_Static_assert(sizeof(struct md_sb_disk) == 256, "fixed part is 256 bytes");
_Static_assert(256 + 2 * MD_SB_MAX_DEV <= MD_SB_BYTES, "roles fit in 4 KiB");

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

uint32_t md_sb_checksum(const uint8_t *sb, uint32_t max_dev)
{
    size_t len = 256 + 2 * (size_t)max_dev;
    uint64_t sum = 0;
    size_t i;
    for (i = 0; i + 4 <= len; i += 4)
        sum += i == OFF(sb_csum) ? 0 : get32(sb + i);
    if (len - i == 2)
        sum += get16(sb + i);
    return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

int md_sb_encode(const struct md_sb *sb, uint8_t *out)
{
    if (sb->max_dev > MD_SB_MAX_DEV)
        return -EINVAL;
    memset(out, 0, MD_SB_BYTES);
    put32(out + OFF(magic), MD_SB_MAGIC);
    put32(out + OFF(major_version), 1);
    put32(out + OFF(feature_map), sb->feature_map);
    memcpy(out + OFF(set_uuid), sb->set_uuid, 16);
    memcpy(out + OFF(set_name), sb->set_name, 32);
    put64(out + OFF(ctime), sb->ctime);
    put32(out + OFF(level), (uint32_t)sb->level);
    put32(out + OFF(layout), sb->layout);
    put64(out + OFF(size), sb->size);
    put32(out + OFF(chunksize), sb->chunksize);
    put32(out + OFF(raid_disks), sb->raid_disks);
    put32(out + OFF(bitmap_offset), (uint32_t)sb->bitmap_offset);
    put32(out + OFF(new_level), sb->new_level);
    put64(out + OFF(reshape_position), sb->reshape_position);
    put32(out + OFF(delta_disks), (uint32_t)sb->delta_disks);
    put32(out + OFF(new_layout), sb->new_layout);
    put32(out + OFF(new_chunk), sb->new_chunk);
    put32(out + OFF(new_offset), (uint32_t)sb->new_offset);
    put64(out + OFF(data_offset), sb->data_offset);
    put64(out + OFF(data_size), sb->data_size);
    put64(out + OFF(super_offset), sb->super_offset);
    put64(out + OFF(recovery_offset), sb->recovery_offset);
    put32(out + OFF(dev_number), sb->dev_number);
    put32(out + OFF(cnt_corrected_read), sb->cnt_corrected_read);
    memcpy(out + OFF(device_uuid), sb->device_uuid, 16);
    out[OFF(devflags)] = sb->devflags;
    out[OFF(bblog_shift)] = sb->bblog_shift;
    put16(out + OFF(bblog_size), sb->bblog_size);
    put32(out + OFF(bblog_offset), (uint32_t)sb->bblog_offset);
    put64(out + OFF(utime), sb->utime);
    put64(out + OFF(events), sb->events);
    put64(out + OFF(resync_offset), sb->resync_offset);
    put32(out + OFF(max_dev), sb->max_dev);
    for (uint32_t i = 0; i < sb->max_dev; i++)
        put16(out + 256 + 2 * i, sb->dev_roles[i]);
    put32(out + OFF(sb_csum), md_sb_checksum(out, sb->max_dev));
    return 0;
}

static int fail(char *why, size_t whylen, int err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t whylen, int err, const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return err;
}

int md_sb_decode(const uint8_t *in, uint64_t read_at_sector, struct md_sb *sb, char *why, size_t whylen)
{
    memset(sb, 0, sizeof *sb);
    uint32_t magic = get32(in + OFF(magic));
    if (magic != MD_SB_MAGIC)
        return fail(why, whylen, -EINVAL, "no md superblock at sector %llu (magic 0x%08x, want 0x%08x)",
                    (unsigned long long)read_at_sector, magic, MD_SB_MAGIC);
    uint32_t major = get32(in + OFF(major_version));
    if (major != 1)
        return fail(why, whylen, -EINVAL, "md superblock version %u is not supported (only 1.x)", major);
    sb->max_dev = get32(in + OFF(max_dev));
    if (sb->max_dev > MD_SB_MAX_DEV)
        return fail(why, whylen, -EINVAL, "superblock lists %u devices, more than md's %d", sb->max_dev,
                    MD_SB_MAX_DEV);
    sb->sb_csum = get32(in + OFF(sb_csum));
    uint32_t computed = md_sb_checksum(in, sb->max_dev);
    if (computed != sb->sb_csum)
        return fail(why, whylen, -EBADMSG, "bad superblock checksum (stored 0x%08x, computed 0x%08x)", sb->sb_csum,
                    computed);
    sb->feature_map = get32(in + OFF(feature_map));
    if (sb->feature_map & ~MD_FEATURE_ALL)
        return fail(why, whylen, -EOPNOTSUPP, "unknown md feature bits 0x%x", sb->feature_map & ~MD_FEATURE_ALL);
    if (get32(in + OFF(pad0)))
        return fail(why, whylen, -EINVAL, "superblock padding (pad0) is not zero");
    for (int i = 0; i < 32; i++)
        if (in[OFF(pad3) + i])
            return fail(why, whylen, -EINVAL, "superblock padding (pad3) is not zero");
    memcpy(sb->set_uuid, in + OFF(set_uuid), 16);
    memcpy(sb->set_name, in + OFF(set_name), 32);
    sb->ctime = get64(in + OFF(ctime));
    sb->level = (int32_t)get32(in + OFF(level));
    sb->layout = get32(in + OFF(layout));
    sb->size = get64(in + OFF(size));
    sb->chunksize = get32(in + OFF(chunksize));
    sb->raid_disks = get32(in + OFF(raid_disks));
    sb->bitmap_offset = (int32_t)get32(in + OFF(bitmap_offset));
    sb->new_level = get32(in + OFF(new_level));
    sb->reshape_position = get64(in + OFF(reshape_position));
    sb->delta_disks = (int32_t)get32(in + OFF(delta_disks));
    sb->new_layout = get32(in + OFF(new_layout));
    sb->new_chunk = get32(in + OFF(new_chunk));
    sb->new_offset = (int32_t)get32(in + OFF(new_offset));
    sb->data_offset = get64(in + OFF(data_offset));
    sb->data_size = get64(in + OFF(data_size));
    sb->super_offset = get64(in + OFF(super_offset));
    sb->recovery_offset = get64(in + OFF(recovery_offset));
    sb->dev_number = get32(in + OFF(dev_number));
    sb->cnt_corrected_read = get32(in + OFF(cnt_corrected_read));
    memcpy(sb->device_uuid, in + OFF(device_uuid), 16);
    sb->devflags = in[OFF(devflags)];
    sb->bblog_shift = in[OFF(bblog_shift)];
    sb->bblog_size = get16(in + OFF(bblog_size));
    sb->bblog_offset = (int32_t)get32(in + OFF(bblog_offset));
    sb->utime = get64(in + OFF(utime));
    sb->events = get64(in + OFF(events));
    sb->resync_offset = get64(in + OFF(resync_offset));
    for (uint32_t i = 0; i < sb->max_dev; i++)
        sb->dev_roles[i] = get16(in + 256 + 2 * i);

    if (sb->super_offset != read_at_sector)
        return fail(why, whylen, -EINVAL, "superblock says it lives at sector %llu but was read at %llu",
                    (unsigned long long)sb->super_offset, (unsigned long long)read_at_sector);
    if (sb->data_size < 10)
        return fail(why, whylen, -EINVAL, "superblock data size %llu sectors is too small",
                    (unsigned long long)sb->data_size);
    uint64_t sb_sectors = (256 + 2 * (uint64_t)sb->max_dev + 511) / 512;
    if (sb->data_offset < sb->super_offset + sb_sectors)
        return fail(why, whylen, -EINVAL, "data offset %llu overlaps the superblock",
                    (unsigned long long)sb->data_offset);
    if (sb->dev_number >= sb->max_dev)
        return fail(why, whylen, -EINVAL, "device number %u is outside the %u-entry role table", sb->dev_number,
                    sb->max_dev);
    return 0;
}

uint32_t md_bitmap_space(uint64_t dev_sectors, int level)
{
    if (level == 0 || dev_sectors < 128)
        return 0;
    if (dev_sectors < 8ull * 1024 * 1024 * 2) /* up to 8 GiB: 4 KiB */
        return 8;
    if (dev_sectors < 200ull * 1024 * 1024 * 2) /* up to 200 GiB: 64 KiB */
        return 128;
    return 256;
}

uint64_t md_choose_data_offset(uint64_t dev_sectors, uint32_t chunk_sectors, int level)
{
    uint64_t headroom = 128 * 1024 * 2; /* 128 MiB of reshape room */
    uint64_t min_headroom = 2 * (uint64_t)(chunk_sectors ? chunk_sectors : 8);
    while (headroom * 1024 > dev_sectors && headroom / 2 >= min_headroom)
        headroom /= 2;
    uint64_t off = 24 + md_bitmap_space(dev_sectors, level) + headroom;
    return (off + 2047) / 2048 * 2048;
}

void md_sb_init_array(struct md_sb *sb, const struct md_sb_create_params *p)
{
    memset(sb, 0, sizeof *sb);
    memcpy(sb->set_uuid, p->uuid, 16);
    char host[64] = "";
    if (p->homehost)
        snprintf(host, sizeof host, "%s", p->homehost);
    else if (gethostname(host, sizeof host) != 0)
        host[0] = 0;
    host[sizeof host - 1] = 0;
    char full[160];
    /* mdadm stores "homehost:name" when it fits in 31 characters */
    if (!strchr(p->name, ':') && host[0] && snprintf(full, sizeof full, "%s:%s", host, p->name) < 32)
        memcpy(sb->set_name, full, strlen(full));
    else
        memcpy(sb->set_name, p->name, strnlen(p->name, 31));
    sb->ctime = p->ctime;
    sb->utime = p->ctime;
    sb->level = p->level;
    sb->layout = p->layout;
    sb->size = p->size;
    sb->chunksize = p->chunk_sectors;
    sb->raid_disks = p->raid_disks;
    sb->data_offset = p->data_offset;
    sb->super_offset = MD_SB_V12_SECTOR;
    sb->max_dev = 128;
    while (sb->max_dev < p->raid_disks)
        sb->max_dev += 256; /* the superblock grows by whole 512-byte sectors */
    for (uint32_t i = 0; i < sb->max_dev; i++)
        sb->dev_roles[i] = i < p->raid_disks && p->slot_present[i] ? (uint16_t)i : MD_ROLE_SPARE;
    sb->bblog_size = 8;
    sb->bblog_shift = 0;
    sb->events = 0;
    sb->resync_offset = 0;
}

void md_sb_init_member(struct md_sb *sb, uint32_t dev_number, const uint8_t device_uuid[16], uint64_t dev_sectors)
{
    sb->dev_number = dev_number;
    memcpy(sb->device_uuid, device_uuid, 16);
    sb->data_size = dev_sectors > sb->data_offset ? dev_sectors - sb->data_offset : 0;
    uint32_t bm = md_bitmap_space(dev_sectors, sb->level);
    uint64_t sb_end = MD_SB_V12_SECTOR + 8 + bm;
    /* the log goes after the superblock and bitmap space, or just before
     * the data if that does not fit */
    if (sb_end + sb->bblog_size <= sb->data_offset)
        sb->bblog_offset = (int32_t)(8 + bm);
    else
        sb->bblog_offset = (int32_t)(sb->data_offset - sb->bblog_size - MD_SB_V12_SECTOR);
}
