/* md 0.90 superblock: one encoder, one decoder, and the translation to
 * and from struct md_sb (superblock.h) the array code works with. Pure
 * functions: no I/O, no state, no printing. docs/FORMAT.md describes the
 * format (the kernel's md_p.h mdp_superblock_s and super_90_*).
 *
 * On disk: 4096 bytes at md_format_sb_sector(MD_FMT_0_90, member sectors),
 * the last 64 KiB-aligned 64 KiB of the member; the array's data runs from
 * sector 0 up to it. Fields are 32-bit words in the byte order of the host
 * that wrote them: uraid reads and writes little-endian (x86, arm64) and
 * refuses a byte-swapped (big-endian) superblock with a clear reason. */
#ifndef URAID_META_SUPER0_H
#define URAID_META_SUPER0_H

#include <stddef.h>
#include <stdint.h>

#include "meta/superblock.h"

#define MD_SB0_BYTES 4096u
#define MD_SB0_DISKS 27u            /* descriptor slots: 0.90's member limit */
#define MD_SB0_MINOR 90u

/* state bits */
#define MD_SB0_CLEAN 0u
#define MD_SB0_ERRORS 1u
#define MD_SB0_BITMAP_PRESENT 8u
/* descriptor state bits */
#define MD_DISK0_FAULTY 0u
#define MD_DISK0_ACTIVE 1u
#define MD_DISK0_SYNC 2u
#define MD_DISK0_REMOVED 3u
#define MD_DISK0_WRITEMOSTLY 9u
#define MD_DISK0_FAILFAST 10u

/* 0.90's bitmap: 4 KiB after the superblock, in the 60 KiB left of its 64 KiB. */
#define MD_SB0_BITMAP_OFFSET 8      /* sectors from the superblock */
#define MD_SB0_BITMAP_SECTORS 120u

/* 2 TiB in sectors: md refuses bigger 0.90 members for RAID-1/4/5/6 (the
 * size field is 32-bit KiB, and kernels before 3.1 wrapped at 2 TiB). */
#define MD_SB0_MAX_MEMBER_SECTORS (1ull << 32)

struct md_sb0_desc {
    uint32_t number, major, minor, raid_disk, state;
};

/* Every 0.90 field in host form. The reserved words are not kept: the
 * decoder refuses non-zero ones and the encoder writes zeros. */
struct md_sb0 {
    uint32_t patch_version;
    uint32_t gvalid_words;
    uint32_t set_uuid[4];       /* set_uuid0..3 (mdadm prints them as 4 hex words) */
    uint32_t ctime;             /* seconds */
    uint32_t level;             /* as int32: 0, 1, 4, 5, 6, 10, -1 linear */
    uint32_t size;              /* KiB of each member used by the array */
    uint32_t nr_disks;
    uint32_t raid_disks;
    uint32_t md_minor;
    uint32_t not_persistent;
    uint32_t utime;
    uint32_t state;             /* MD_SB0_* bits */
    uint32_t active_disks, working_disks, failed_disks, spare_disks;
    uint32_t sb_csum;           /* decode: as stored (and verified) */
    uint64_t events;            /* events_hi:events_lo */
    uint64_t cp_events;         /* the events at the last checkpoint */
    uint32_t recovery_cp;       /* sectors resynced; 0xffffffff clean */
    uint64_t reshape_position;  /* minor 91 only */
    uint32_t new_level, delta_disks, new_layout, new_chunk;
    uint32_t layout;
    uint32_t chunk_size;        /* bytes */
    uint32_t root_pv, root_block;
    struct md_sb0_desc disks[MD_SB0_DISKS];
    struct md_sb0_desc this_disk;
};

/* The checksum: the u32 words of the 4096 bytes summed in 64 bits with
 * sb_csum counted as zero, then the high half added to the low. */
uint32_t md_sb0_checksum(const uint8_t *encoded);

/* Encodes sb into out[MD_SB0_BYTES] with a fresh checksum (sb->sb_csum is
 * ignored). Always succeeds. */
void md_sb0_encode(const struct md_sb0 *sb, uint8_t *out);

/* Decodes in[MD_SB0_BYTES] and applies md's acceptance rules (super_90_load)
 * plus uraid's own (the ones a reader indexes by). On success fills *sb
 * (every byte) and returns 0; otherwise a negative errno and one line in
 * why: -EINVAL not a 0.90 superblock (magic, a byte-swapped magic, version)
 * or a damaged field (raid_disks, this_disk.number, reserved words);
 * -EBADMSG bad checksum. */
int md_sb0_decode(const uint8_t *in, struct md_sb0 *sb, char *why, size_t whylen);

/* The md_sb view of a 0.90 member read at sb_sector of a member:
 * format 0.90, data_offset 0, data_size = sb_sector, size = KiB * 2,
 * dev_number = this_disk.number, max_dev 27 and the roles from the
 * descriptor table as md's super_90_validate reads it (sync -> its slot,
 * faulty -> 0xfffe, else spare; a present spare's bit in v090_spares),
 * the bitmap-present
 * state bit as BITMAP_OFFSET at sb + 8, the clean bit as resync_offset,
 * and the UUID's words big-endian so md_uuid_text prints mdadm's text.
 * Returns 0, or -EINVAL with a reason when the fields cannot describe an
 * array uraid can assemble (this disk's descriptor disagreeing with
 * this_disk, a size past the superblock). */
int md_sb0_to_sb(const struct md_sb0 *in, uint64_t sb_sector, struct md_sb *out, char *why, size_t whylen);

/* The 0.90 superblock that records *sb (a 0.90 member's md_sb, as
 * md_sb0_to_sb makes it and the array code updates it): the descriptor
 * table from dev_roles and v090_spares (a member being rebuilt is written
 * as a spare, as md's super_90_sync does: 0.90 has no recovery offset, so
 * a rebuild cut short starts again), the counts md keeps, this_disk,
 * cp_events = events. Descriptor major/minor are 0 (a file has none; md
 * rewrites them from its devices). Returns 0, or -EINVAL when sb cannot be
 * written as 0.90 (more than 27 device numbers, a size over 32-bit KiB,
 * feature bits 0.90 has no room for). */
int md_sb0_from_sb(const struct md_sb *sb, struct md_sb0 *out, char *why, size_t whylen);

#endif
