/* md 0.90 superblock encode/decode and its translation to struct md_sb,
 * written from the kernel's md_p.h field layout and the rules of md.c
 * super_90_load/validate/sync, and checked against superblocks md wrote
 * (tests/fixtures/md0, the oracle's members).
 *
 * As in superblock.c the on-disk struct is made of byte arrays only: no
 * padding, no alignment or host-endian assumption; every word goes
 * through le.h (0.90 is host-endian, and uraid's hosts are little-endian). */
#include "meta/super0.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "meta/le.h"

struct md_sb0_desc_disk {
    uint8_t number[4];
    uint8_t major[4];
    uint8_t minor[4];
    uint8_t raid_disk[4];
    uint8_t state[4];
    uint8_t reserved[108];
};

struct md_sb0_disk {
    /* generic constant part: 32 words */
    uint8_t md_magic[4];
    uint8_t major_version[4];
    uint8_t minor_version[4];
    uint8_t patch_version[4];
    uint8_t gvalid_words[4];
    uint8_t set_uuid0[4];
    uint8_t ctime[4];
    uint8_t level[4];
    uint8_t size[4];
    uint8_t nr_disks[4];
    uint8_t raid_disks[4];
    uint8_t md_minor[4];
    uint8_t not_persistent[4];
    uint8_t set_uuid1[4];
    uint8_t set_uuid2[4];
    uint8_t set_uuid3[4];
    uint8_t gstate_creserved[64];
    /* generic state part: 32 words */
    uint8_t utime[4];
    uint8_t state[4];
    uint8_t active_disks[4];
    uint8_t working_disks[4];
    uint8_t failed_disks[4];
    uint8_t spare_disks[4];
    uint8_t sb_csum[4];
    uint8_t events_lo[4];       /* little-endian hosts: lo before hi */
    uint8_t events_hi[4];
    uint8_t cp_events_lo[4];
    uint8_t cp_events_hi[4];
    uint8_t recovery_cp[4];
    uint8_t reshape_position[8];
    uint8_t new_level[4];
    uint8_t delta_disks[4];
    uint8_t new_layout[4];
    uint8_t new_chunk[4];
    uint8_t gstate_sreserved[56];
    /* personality part: 64 words */
    uint8_t layout[4];
    uint8_t chunk_size[4];
    uint8_t root_pv[4];
    uint8_t root_block[4];
    uint8_t pstate_reserved[240];
    struct md_sb0_desc_disk disks[MD_SB0_DISKS];
    struct md_sb0_desc_disk this_disk;
};

/* md_p.h's word offsets (MD_SB_GENERIC_*, MD_SB_PERSONALITY_OFFSET 64,
 * MD_SB_DISKS_OFFSET 128, MD_SB_DESCRIPTOR_OFFSET 992) in bytes. */
#define AT(f, off) _Static_assert(offsetof(struct md_sb0_disk, f) == (off), #f " offset")
AT(md_magic, 0); AT(major_version, 4); AT(minor_version, 8); AT(patch_version, 12);
AT(gvalid_words, 16); AT(set_uuid0, 20); AT(ctime, 24); AT(level, 28); AT(size, 32);
AT(nr_disks, 36); AT(raid_disks, 40); AT(md_minor, 44); AT(not_persistent, 48);
AT(set_uuid1, 52); AT(set_uuid2, 56); AT(set_uuid3, 60); AT(gstate_creserved, 64);
AT(utime, 128); AT(state, 132); AT(active_disks, 136); AT(working_disks, 140);
AT(failed_disks, 144); AT(spare_disks, 148); AT(sb_csum, 152); AT(events_lo, 156);
AT(events_hi, 160); AT(cp_events_lo, 164); AT(cp_events_hi, 168); AT(recovery_cp, 172);
AT(reshape_position, 176); AT(new_level, 184); AT(delta_disks, 188); AT(new_layout, 192);
AT(new_chunk, 196); AT(gstate_sreserved, 200); AT(layout, 256); AT(chunk_size, 260);
AT(root_pv, 264); AT(root_block, 268); AT(pstate_reserved, 272); AT(disks, 512);
AT(this_disk, 3968);
#undef AT
_Static_assert(sizeof(struct md_sb0_desc_disk) == 128, "a descriptor is 32 words");
_Static_assert(offsetof(struct md_sb0_desc_disk, state) == 16, "descriptor state is word 4");
_Static_assert(sizeof(struct md_sb0_disk) == MD_SB0_BYTES, "0.90 superblock is 4096 bytes");

#define OFF(f) offsetof(struct md_sb0_disk, f)
#define DOFF(f) offsetof(struct md_sb0_desc_disk, f)

uint32_t md_sb0_checksum(const uint8_t *encoded)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < MD_SB0_BYTES; i += 4)
        if (i != OFF(sb_csum))
            sum += le32_get(encoded + i);
    return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

static void desc_put(uint8_t *p, const struct md_sb0_desc *d)
{
    memset(p, 0, sizeof(struct md_sb0_desc_disk));
    le32_put(p + DOFF(number), d->number);
    le32_put(p + DOFF(major), d->major);
    le32_put(p + DOFF(minor), d->minor);
    le32_put(p + DOFF(raid_disk), d->raid_disk);
    le32_put(p + DOFF(state), d->state);
}

static void desc_get(const uint8_t *p, struct md_sb0_desc *d)
{
    d->number = le32_get(p + DOFF(number));
    d->major = le32_get(p + DOFF(major));
    d->minor = le32_get(p + DOFF(minor));
    d->raid_disk = le32_get(p + DOFF(raid_disk));
    d->state = le32_get(p + DOFF(state));
}

void md_sb0_encode(const struct md_sb0 *sb, uint8_t *out)
{
    memset(out, 0, MD_SB0_BYTES);
    le32_put(out + OFF(md_magic), MD_SB_MAGIC);
    le32_put(out + OFF(major_version), 0);
    le32_put(out + OFF(minor_version), MD_SB0_MINOR);
    le32_put(out + OFF(patch_version), sb->patch_version);
    le32_put(out + OFF(gvalid_words), sb->gvalid_words);
    le32_put(out + OFF(set_uuid0), sb->set_uuid[0]);
    le32_put(out + OFF(set_uuid1), sb->set_uuid[1]);
    le32_put(out + OFF(set_uuid2), sb->set_uuid[2]);
    le32_put(out + OFF(set_uuid3), sb->set_uuid[3]);
    le32_put(out + OFF(ctime), sb->ctime);
    le32_put(out + OFF(level), sb->level);
    le32_put(out + OFF(size), sb->size);
    le32_put(out + OFF(nr_disks), sb->nr_disks);
    le32_put(out + OFF(raid_disks), sb->raid_disks);
    le32_put(out + OFF(md_minor), sb->md_minor);
    le32_put(out + OFF(not_persistent), sb->not_persistent);
    le32_put(out + OFF(utime), sb->utime);
    le32_put(out + OFF(state), sb->state);
    le32_put(out + OFF(active_disks), sb->active_disks);
    le32_put(out + OFF(working_disks), sb->working_disks);
    le32_put(out + OFF(failed_disks), sb->failed_disks);
    le32_put(out + OFF(spare_disks), sb->spare_disks);
    le32_put(out + OFF(events_lo), (uint32_t)sb->events);
    le32_put(out + OFF(events_hi), (uint32_t)(sb->events >> 32));
    le32_put(out + OFF(cp_events_lo), (uint32_t)sb->cp_events);
    le32_put(out + OFF(cp_events_hi), (uint32_t)(sb->cp_events >> 32));
    le32_put(out + OFF(recovery_cp), sb->recovery_cp);
    le64_put(out + OFF(reshape_position), sb->reshape_position);
    le32_put(out + OFF(new_level), sb->new_level);
    le32_put(out + OFF(delta_disks), sb->delta_disks);
    le32_put(out + OFF(new_layout), sb->new_layout);
    le32_put(out + OFF(new_chunk), sb->new_chunk);
    le32_put(out + OFF(layout), sb->layout);
    le32_put(out + OFF(chunk_size), sb->chunk_size);
    le32_put(out + OFF(root_pv), sb->root_pv);
    le32_put(out + OFF(root_block), sb->root_block);
    for (uint32_t i = 0; i < MD_SB0_DISKS; i++)
        desc_put(out + OFF(disks) + i * sizeof(struct md_sb0_desc_disk), &sb->disks[i]);
    desc_put(out + OFF(this_disk), &sb->this_disk);
    le32_put(out + OFF(sb_csum), md_sb0_checksum(out));
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static int reserved_zero(const uint8_t *in)
{
    if (!all_zero(in + OFF(gstate_creserved), 64) || !all_zero(in + OFF(gstate_sreserved), 56) ||
        !all_zero(in + OFF(pstate_reserved), 240))
        return 0;
    for (uint32_t i = 0; i <= MD_SB0_DISKS; i++)
        if (!all_zero(in + OFF(disks) + i * sizeof(struct md_sb0_desc_disk) + DOFF(reserved), 108))
            return 0;
    return 1;
}

/* The identity checks, in super_90_load's order. */
static int check_identity(const uint8_t *in, char *why, size_t whylen)
{
    uint32_t magic = le32_get(in + OFF(md_magic));
    if (magic == __builtin_bswap32(MD_SB_MAGIC)) {
        uraid_why(why, whylen, "0.90 superblock in the other byte order (written by a big-endian host): uraid reads "
                         "little-endian 0.90 only (mdadm --update=byteorder converts it)");
        return -EINVAL;
    }
    if (magic != MD_SB_MAGIC) {
        uraid_why(why, whylen, "no md superblock (magic 0x%08x, expected 0x%08x)", magic, MD_SB_MAGIC);
        return -EINVAL;
    }
    uint32_t major = le32_get(in + OFF(major_version)), minor = le32_get(in + OFF(minor_version));
    if (major != 0 || minor != MD_SB0_MINOR) {
        uraid_why(why, whylen, "md superblock version %u.%u at the 0.90 position (%s)", major, minor,
            major == 0 && minor == 91 ? "0.91: a reshape is in progress, which uraid cannot continue"
                                      : "only 0.90 is known there");
        return minor == 91 && major == 0 ? -EOPNOTSUPP : -EINVAL;
    }
    return 0;
}

int md_sb0_decode(const uint8_t *in, struct md_sb0 *sb, char *why, size_t whylen)
{
    memset(sb, 0, sizeof *sb);
    int rc = check_identity(in, why, whylen);
    if (rc)
        return rc;
    uint32_t stored = le32_get(in + OFF(sb_csum)), computed = md_sb0_checksum(in);
    if (stored != computed) {
        uraid_why(why, whylen, "bad 0.90 checksum (stored 0x%08x, computed 0x%08x)", stored, computed);
        return -EBADMSG;
    }
    if (!reserved_zero(in)) {
        uraid_why(why, whylen, "non-zero reserved words in the 0.90 superblock");
        return -EINVAL;
    }
    sb->patch_version = le32_get(in + OFF(patch_version));
    sb->gvalid_words = le32_get(in + OFF(gvalid_words));
    sb->set_uuid[0] = le32_get(in + OFF(set_uuid0));
    sb->set_uuid[1] = le32_get(in + OFF(set_uuid1));
    sb->set_uuid[2] = le32_get(in + OFF(set_uuid2));
    sb->set_uuid[3] = le32_get(in + OFF(set_uuid3));
    sb->ctime = le32_get(in + OFF(ctime));
    sb->level = le32_get(in + OFF(level));
    sb->size = le32_get(in + OFF(size));
    sb->nr_disks = le32_get(in + OFF(nr_disks));
    sb->raid_disks = le32_get(in + OFF(raid_disks));
    sb->md_minor = le32_get(in + OFF(md_minor));
    sb->not_persistent = le32_get(in + OFF(not_persistent));
    sb->utime = le32_get(in + OFF(utime));
    sb->state = le32_get(in + OFF(state));
    sb->active_disks = le32_get(in + OFF(active_disks));
    sb->working_disks = le32_get(in + OFF(working_disks));
    sb->failed_disks = le32_get(in + OFF(failed_disks));
    sb->spare_disks = le32_get(in + OFF(spare_disks));
    sb->sb_csum = stored;
    sb->events = le32_get(in + OFF(events_lo)) | (uint64_t)le32_get(in + OFF(events_hi)) << 32;
    sb->cp_events = le32_get(in + OFF(cp_events_lo)) | (uint64_t)le32_get(in + OFF(cp_events_hi)) << 32;
    sb->recovery_cp = le32_get(in + OFF(recovery_cp));
    sb->reshape_position = le64_get(in + OFF(reshape_position));
    sb->new_level = le32_get(in + OFF(new_level));
    sb->delta_disks = le32_get(in + OFF(delta_disks));
    sb->new_layout = le32_get(in + OFF(new_layout));
    sb->new_chunk = le32_get(in + OFF(new_chunk));
    sb->layout = le32_get(in + OFF(layout));
    sb->chunk_size = le32_get(in + OFF(chunk_size));
    sb->root_pv = le32_get(in + OFF(root_pv));
    sb->root_block = le32_get(in + OFF(root_block));
    for (uint32_t i = 0; i < MD_SB0_DISKS; i++)
        desc_get(in + OFF(disks) + i * sizeof(struct md_sb0_desc_disk), &sb->disks[i]);
    desc_get(in + OFF(this_disk), &sb->this_disk);

    /* md aborts on raid_disks <= 0; more than the table holds is damage */
    if ((int32_t)sb->raid_disks <= 0 || sb->raid_disks > MD_SB0_DISKS) {
        uraid_why(why, whylen, "0.90 raid_disks %d outside 1..%u", (int32_t)sb->raid_disks, MD_SB0_DISKS);
        return -EINVAL;
    }
    if (sb->this_disk.number >= MD_SB0_DISKS) {
        uraid_why(why, whylen, "0.90 this_disk.number %u outside the %u-entry descriptor table", sb->this_disk.number,
            MD_SB0_DISKS);
        return -EINVAL;
    }
    return 0;
}

/* The UUID's words stored big-endian: md_uuid_text then prints them as
 * mdadm does ("%08x:%08x:%08x:%08x" of the four host words). */
static void uuid_to_bytes(const uint32_t w[4], uint8_t out[16])
{
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 4; b++)
            out[4 * i + b] = (uint8_t)(w[i] >> (24 - 8 * b));
}

static void uuid_from_bytes(const uint8_t in[16], uint32_t w[4])
{
    for (int i = 0; i < 4; i++)
        w[i] = (uint32_t)in[4 * i] << 24 | (uint32_t)in[4 * i + 1] << 16 | (uint32_t)in[4 * i + 2] << 8 |
               in[4 * i + 3];
}

int md_sb0_to_sb(const struct md_sb0 *in, uint64_t sb_sector, struct md_sb *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    int32_t level = (int32_t)in->level;
    /* super_90_load: a member too small for the recorded size "has wrapped around" */
    if (level >= 1 && (uint64_t)in->size * 2 > sb_sector) {
        uraid_why(why, whylen, "0.90 size %u KiB is larger than the member's data area (%llu sectors)", in->size,
            (unsigned long long)sb_sector);
        return -EINVAL;
    }
    if (in->chunk_size % SECTOR) {
        uraid_why(why, whylen, "0.90 chunk size %u bytes is not whole sectors", in->chunk_size);
        return -EINVAL;
    }
    out->format = MD_FMT_0_90;
    uuid_to_bytes(in->set_uuid, out->set_uuid);
    out->ctime = in->ctime;
    out->utime = in->utime;
    out->level = level;
    out->layout = in->layout;
    out->size = (uint64_t)in->size * 2;
    out->chunksize = in->chunk_size / SECTOR;
    out->raid_disks = in->raid_disks;
    if (in->state & (1u << MD_SB0_BITMAP_PRESENT)) {
        out->feature_map |= MD_FEATURE_BITMAP_OFFSET;
        out->bitmap_offset = MD_SB0_BITMAP_OFFSET;
    }
    out->data_offset = 0;
    out->data_size = sb_sector;
    out->super_offset = sb_sector;
    out->dev_number = in->this_disk.number;
    out->events = in->events;
    /* super_90_validate: clean, or resync from recovery_cp when it was
     * recorded at these events, else from the start */
    if (in->state & (1u << MD_SB0_CLEAN))
        out->resync_offset = MD_RESYNC_CLEAN;
    else
        out->resync_offset = in->cp_events == in->events ? in->recovery_cp : 0;
    out->sb_csum = in->sb_csum;
    out->v090_minor = in->md_minor;
    out->max_dev = MD_SB0_DISKS;
    for (uint32_t i = 0; i < MD_SB0_DISKS; i++) {
        const struct md_sb0_desc *d = &in->disks[i];
        uint16_t role = MD_ROLE_SPARE;
        if (d->state & (1u << MD_DISK0_FAULTY))
            role = MD_ROLE_FAULTY;
        else if ((d->state & (1u << MD_DISK0_SYNC)) && d->raid_disk < in->raid_disks)
            role = (uint16_t)d->raid_disk;
        else if (i > 0 && d->number == i)
            out->v090_spares |= 1u << i; /* a present spare; number 0 is also an empty entry's */
        out->dev_roles[i] = role;
    }
    if (in->this_disk.state & (1u << MD_DISK0_WRITEMOSTLY))
        out->devflags |= MD_DEVFLAG_WRITEMOSTLY;
    return 0;
}

/* One descriptor of the table md_sb0_from_sb writes, and the counts. */
struct counts {
    uint32_t nr, active, working, failed, spare;
};

/* Slot i holds a spare that is there: one the table listed, or the member
 * writing the superblock itself (present by definition: an empty entry
 * instead would say number 0, and this_disk would read back as slot 0's). */
static int present_spare(const struct md_sb *sb, uint32_t i)
{
    return ((sb->v090_spares >> i) & 1u) || (i == sb->dev_number && sb->dev_roles[i] == MD_ROLE_SPARE);
}

/* Member dn counts as active in sync: a slot, not being rebuilt. */
static int active_member(const struct md_sb *sb, uint32_t dn)
{
    int spare = present_spare(sb, dn) || (dn == sb->dev_number && (sb->feature_map & MD_FEATURE_RECOVERY_OFFSET));
    return sb->dev_roles[dn] < sb->raid_disks && !spare;
}

/* md's numbering of the table (super_90_sync): an active member's
 * descriptor is its raid slot (mdadm's assembly reads disks[slot] as the
 * member in that slot); every other member that has one -- a spare, one
 * being rebuilt (0.90 records it as a spare), a faulty one kept, the
 * writer itself -- takes the next index from raid_disks on, in device
 * number order. So a member rebuilt or replaced into a slot moves to that
 * slot's descriptor, as md moves it, and a decoded table encodes to
 * itself. at[dn] = its index, -1 for none; -ENOSPC past the table. */
static int table_places(const struct md_sb *sb, int at[MD_SB0_DISKS])
{
    int taken[MD_SB0_DISKS] = {0};
    for (uint32_t dn = 0; dn < MD_SB0_DISKS; dn++) {
        at[dn] = -1;
        if (active_member(sb, dn) && !taken[sb->dev_roles[dn]])
            taken[at[dn] = sb->dev_roles[dn]] = 1;
    }
    uint32_t next = sb->raid_disks;
    for (uint32_t dn = 0; dn < MD_SB0_DISKS; dn++) {
        if (at[dn] >= 0)
            continue;
        int kept = (sb->dev_roles[dn] == MD_ROLE_FAULTY && dn >= sb->raid_disks) || present_spare(sb, dn) ||
                   dn == sb->dev_number || active_member(sb, dn);
        if (!kept)
            continue;
        while (next < MD_SB0_DISKS && taken[next])
            next++;
        if (next >= MD_SB0_DISKS)
            return -ENOSPC;
        taken[at[dn] = (int)next] = 1;
    }
    return 0;
}

static void fill_desc(const struct md_sb *sb, uint32_t dn, int i, struct md_sb0_desc *d, struct counts *c)
{
    uint32_t n = (uint32_t)i;
    if (active_member(sb, dn) && sb->dev_roles[dn] == n) {
        *d = (struct md_sb0_desc){.number = n, .raid_disk = n, .state = 1u << MD_DISK0_ACTIVE | 1u << MD_DISK0_SYNC};
        c->nr++, c->active++, c->working++;
    } else if (sb->dev_roles[dn] == MD_ROLE_FAULTY && dn != sb->dev_number) {
        /* md keeps a failed member's descriptor until it is removed; one
         * left at a slot's index is that slot's "removed, faulty" (below) */
        *d = (struct md_sb0_desc){.number = n, .raid_disk = n, .state = 1u << MD_DISK0_FAULTY};
        c->nr++, c->failed++;
    } else {
        *d = (struct md_sb0_desc){.number = n, .raid_disk = n, .state = 0};
        c->nr++, c->working++, c->spare++;
    }
}

int md_sb0_from_sb(const struct md_sb *sb, struct md_sb0 *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    const uint32_t known = MD_FEATURE_BITMAP_OFFSET | MD_FEATURE_RECOVERY_OFFSET;
    if (sb->feature_map & ~known) {
        uraid_why(why, whylen, "feature bits 0x%x have no place in a 0.90 superblock", sb->feature_map & ~known);
        return -EINVAL;
    }
    if (sb->raid_disks < 1 || sb->raid_disks > MD_SB0_DISKS || sb->dev_number >= MD_SB0_DISKS ||
        sb->max_dev > MD_SB0_DISKS) {
        uraid_why(why, whylen, "0.90 holds %u device slots (raid_disks %u, device number %u, max_dev %u)",
            MD_SB0_DISKS, sb->raid_disks, sb->dev_number, sb->max_dev);
        return -EINVAL;
    }
    if (sb->size / 2 > UINT32_MAX || sb->size % 2 || sb->chunksize > UINT32_MAX / SECTOR || sb->data_offset ||
        sb->ctime > UINT32_MAX || sb->utime > UINT32_MAX) {
        uraid_why(why, whylen, "size %llu, chunk %u, data offset %llu or times do not fit 0.90's fields",
            (unsigned long long)sb->size, sb->chunksize, (unsigned long long)sb->data_offset);
        return -EINVAL;
    }
    if ((sb->feature_map & MD_FEATURE_BITMAP_OFFSET) && sb->bitmap_offset != MD_SB0_BITMAP_OFFSET) {
        uraid_why(why, whylen, "0.90's bitmap sits 8 sectors after the superblock, not %d", sb->bitmap_offset);
        return -EINVAL;
    }
    uuid_from_bytes(sb->set_uuid, out->set_uuid);
    out->ctime = (uint32_t)sb->ctime;
    out->utime = (uint32_t)sb->utime;
    out->level = (uint32_t)sb->level;
    out->size = (uint32_t)(sb->size / 2);
    out->raid_disks = sb->raid_disks;
    out->md_minor = sb->v090_minor;
    out->events = out->cp_events = sb->events;
    if (sb->resync_offset == MD_RESYNC_CLEAN) {
        out->state |= 1u << MD_SB0_CLEAN;
        out->recovery_cp = UINT32_MAX;
    } else {
        out->recovery_cp = sb->resync_offset < UINT32_MAX ? (uint32_t)sb->resync_offset : 0;
    }
    if (sb->feature_map & MD_FEATURE_BITMAP_OFFSET)
        out->state |= 1u << MD_SB0_BITMAP_PRESENT;
    out->layout = sb->layout;
    out->chunk_size = sb->chunksize * SECTOR;
    struct counts c = {0};
    int at[MD_SB0_DISKS], used[MD_SB0_DISKS] = {0};
    if (table_places(sb, at)) {
        uraid_why(why, whylen, "0.90's table of %u devices cannot hold the array's members and spares", MD_SB0_DISKS);
        return -EINVAL;
    }
    for (uint32_t dn = 0; dn < MD_SB0_DISKS; dn++)
        if (at[dn] >= 0) {
            fill_desc(sb, dn, at[dn], &out->disks[at[dn]], &c);
            used[at[dn]] = 1;
        }
    /* super_90_sync: an empty slot's descriptor says removed and faulty */
    for (uint32_t i = 0; i < sb->raid_disks; i++) {
        struct md_sb0_desc *d = &out->disks[i];
        if (!used[i]) {
            *d = (struct md_sb0_desc){.number = i, .raid_disk = i,
                                      .state = 1u << MD_DISK0_REMOVED | 1u << MD_DISK0_FAULTY};
            c.failed++;
        }
    }
    out->nr_disks = c.nr;
    out->active_disks = c.active;
    out->working_disks = c.working;
    out->failed_disks = c.failed;
    out->spare_disks = c.spare;
    out->this_disk = out->disks[at[sb->dev_number]];
    if (sb->devflags & MD_DEVFLAG_WRITEMOSTLY)
        out->this_disk.state |= 1u << MD_DISK0_WRITEMOSTLY;
    return 0;
}
