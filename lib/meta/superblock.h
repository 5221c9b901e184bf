/* md v1.x superblock (1.0, 1.1, 1.2: one codec, three places), where each
 * md format keeps its superblock (0.90's codec is super0.h), and mdadm
 * 4.2's rules for laying out a new member in each format. Pure functions: no I/O, no state, no printing.
 * The on-disk format and the values uraid chooses are described in
 * docs/FORMAT.md (source: ../shared/reference/md-format.md section 1).
 *
 * Units: every offset and size field is in 512-byte sectors, as on disk.
 * Offsets named "from the superblock" are signed and relative to
 * super_offset (sector 8 for v1.2, 0 for v1.1, near the end for v1.0). */
#ifndef URAID_META_SUPERBLOCK_H
#define URAID_META_SUPERBLOCK_H

#include <stddef.h>
#include <stdint.h>

#define SECTOR 512u                 /* bytes: the unit of every offset and size field */

#define MD_SB_MAGIC 0xa92b4efcu
#define MD_SB_MAJOR 1u
#define MD_SB_FIXED_BYTES 256u      /* before dev_roles[] */
#define MD_SB_MAX_DEV 1920u         /* (4096 - 256) / 2: the kernel's limit */
#define MD_SB_BYTES 4096u           /* what is read and written */
#define MD_SB_V12_SECTOR 8u         /* v1.2: 4 KiB from the start */
#define MD_SB_V12_BYTES (MD_SB_V12_SECTOR * SECTOR) /* the same in bytes */

#define MD_FEATURE_BITMAP_OFFSET 0x1u
#define MD_FEATURE_RECOVERY_OFFSET 0x2u
#define MD_FEATURE_RESHAPE_ACTIVE 0x4u
#define MD_FEATURE_BAD_BLOCKS 0x8u
#define MD_FEATURE_REPLACEMENT 0x10u
#define MD_FEATURE_RESHAPE_BACKWARDS 0x20u
#define MD_FEATURE_NEW_OFFSET 0x40u
#define MD_FEATURE_RECOVERY_BITMAP 0x80u
#define MD_FEATURE_CLUSTERED 0x100u
#define MD_FEATURE_JOURNAL 0x200u
#define MD_FEATURE_PPL 0x400u
#define MD_FEATURE_MULTIPLE_PPLS 0x800u
#define MD_FEATURE_RAID0_LAYOUT 0x1000u
#define MD_FEATURE_ALL 0x1fffu      /* every bit the kernel knows */
/* uraid's own bit (docs/FORMAT.md 5b): a PPL on RAID-6 whose Q member logs
 * partial Q. Outside MD_FEATURE_ALL on purpose: md's super_1_load refuses
 * a superblock with a bit it does not know, so md refuses the array rather
 * than take the Q logs for RAID-5 ones. Set instead of PPL, never beside it. */
#define MD_FEATURE_PPL_Q 0x80000000u
#define URAID_FEATURE_ALL (MD_FEATURE_ALL | MD_FEATURE_PPL_Q) /* what uraid decodes */

#define MD_ROLE_SPARE 0xffffu
#define MD_ROLE_FAULTY 0xfffeu
#define MD_ROLE_JOURNAL 0xfffdu
#define MD_ROLE_MAX_ACTIVE 0xfeffu  /* roles 0..this are raid slots */

#define MD_DEVFLAG_WRITEMOSTLY 0x1u
#define MD_DEVFLAG_FAILFAST 0x2u

/* mdadm 4.2's PPL area for v1.2: 1 MiB at sb + 8 (MULTIPLE_PPL_AREA_SIZE_SUPER1) */
#define MD_PPL_SECTORS 2048u

#define MD_RESYNC_CLEAN UINT64_MAX  /* resync_offset of a clean array ("MaxSector") */

/* md's superblock formats. 1.x share one codec (this file) and differ only
 * in where the superblock sits; 0.90 has its own (super0.h), translated to
 * and from struct md_sb so the array code handles every format alike. */
enum md_format {
    MD_FMT_1_2 = 0,  /* 4 KiB from the start (mdadm's default); zero so a zeroed md_sb is 1.2 */
    MD_FMT_1_1,      /* sector 0 */
    MD_FMT_1_0,      /* 8 to 12 KiB from the end, 4 KiB aligned */
    MD_FMT_0_90,     /* the last 64 KiB-aligned 64 KiB of the member */
    MD_FMT_COUNT,
    MD_FMT_ANY = -1, /* probe every format */
    MD_FMT_ANY1 = -2 /* mdadm's "1": any 1.x (1.2 when creating) */
};

/* "1.2", "1.1", "1.0", "0.90" ("?" for anything else). */
const char *md_format_name(int format);

/* mdadm's --metadata spellings: 0.90, 0.9, 0; 1.0, 1.00; 1.1, 1.01; 1.2,
 * 1.02, default; 1 (any 1.x). 0 or -EINVAL. */
int md_format_parse(const char *text, int *format);

/* The sector a superblock of `format` sits at on a member of
 * member_sectors; UINT64_MAX when the member is too small to hold one. */
uint64_t md_format_sb_sector(int format, uint64_t member_sectors);

/* The format a v1 superblock read at `sector` has (0: 1.1, 8: 1.2, else 1.0). */
static inline int md_format_of_v1_sector(uint64_t sector)
{
    return sector == 0 ? MD_FMT_1_1 : sector == MD_SB_V12_SECTOR ? MD_FMT_1_2 : MD_FMT_1_0;
}

/* Every v1.2 field in host form. The pads (pad0, pad3) are not kept: the
 * decoder rejects non-zero pads and the encoder writes zeros. */
struct md_sb {
    uint32_t feature_map;
    uint8_t set_uuid[16];
    char set_name[32];          /* NUL-padded, not necessarily terminated */
    uint64_t ctime;             /* low 40 bits seconds, high 24 bits microseconds */
    int32_t level;              /* 0, 1, 4, 5, 6, 10; -1 linear; -4 multipath */
    uint32_t layout;
    uint64_t size;              /* sectors of each member used by the array */
    uint32_t chunksize;         /* sectors */
    uint32_t raid_disks;
    int32_t bitmap_offset;      /* from the superblock (feature bit 0); with PPL:
                                 * see md_sb_ppl_offset()/md_sb_ppl_size() */
    uint32_t new_level;
    uint64_t reshape_position;
    int32_t delta_disks;
    uint32_t new_layout;
    uint32_t new_chunk;         /* sectors */
    int32_t new_offset;         /* added to data_offset in the new geometry */
    uint64_t data_offset;       /* sector on this member where array data starts */
    uint64_t data_size;         /* sectors usable for data on this member */
    uint64_t super_offset;      /* sector this superblock lives at */
    uint64_t recovery_offset;   /* journal_tail on a journal device */
    uint32_t dev_number;        /* index into dev_roles[] */
    uint32_t cnt_corrected_read;
    uint8_t device_uuid[16];
    uint8_t devflags;
    uint8_t bblog_shift;        /* bad-block unit = 512 << shift bytes */
    uint16_t bblog_size;        /* sectors */
    int32_t bblog_offset;       /* from the superblock; 0 = no log */
    uint64_t utime;
    uint64_t events;
    uint64_t resync_offset;     /* MD_RESYNC_CLEAN when clean */
    uint32_t sb_csum;           /* decode: as stored (and verified) */
    uint32_t max_dev;           /* dev_roles[] entries on disk */
    uint16_t dev_roles[MD_SB_MAX_DEV]; /* entries >= max_dev are zero */
    /* Not v1 fields: how this superblock is stored (md_sb_decode sets it
     * from the sector it was read at; md_sb_encode ignores it), and what
     * 0.90 keeps that v1 has no field for (md_sb0_to_sb, md_sb_from_sb0). */
    int32_t format;             /* enum md_format */
    uint32_t v090_minor;        /* 0.90 md_minor (mdadm's "Preferred Minor") */
    uint32_t v090_spares;       /* 0.90: device numbers (bits) of members present as spares,
                                 * those being rebuilt included (descriptor state 0) */
};

/* Bytes of an encoded superblock that carry information: 256 + 2*max_dev. */
static inline uint32_t md_sb_len(uint32_t max_dev) { return MD_SB_FIXED_BYTES + 2u * max_dev; }

/* Sectors the superblock occupies (its length rounded up to 512 bytes). */
static inline uint32_t md_sb_sectors(uint32_t max_dev) { return (md_sb_len(max_dev) + 511u) / 512u; }

/* A UUID as mdadm prints it: 8 hex digits, ':', ... (35 characters). */
#define MD_UUID_TEXT 36
static inline void md_uuid_text(const uint8_t u[16], char out[MD_UUID_TEXT])
{
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i && i % 4 == 0)
            *p++ = ':';
        *p++ = hex[u[i] >> 4];
        *p++ = hex[u[i] & 15];
    }
    *p = 0;
}

/* The array UUID as md's write-intent bitmap header stores it: 1.x's
 * bytes; for 0.90 the four host-endian words as they lie on disk (md
 * copies the superblock's words), so each word's bytes reversed from
 * md_sb.set_uuid (which keeps them big-endian for md_uuid_text). */
static inline void md_sb_bitmap_uuid(const struct md_sb *sb, uint8_t out[16])
{
    for (int i = 0; i < 16; i++)
        out[i] = sb->format == MD_FMT_0_90 ? sb->set_uuid[(i & ~3) + 3 - (i & 3)] : sb->set_uuid[i];
}

/* Where the bad-block log starts: sectors from the member's start (<= 0 when
 * the fields make no sense). */
static inline int64_t md_sb_bblog_sector(const struct md_sb *sb) { return (int64_t)sb->super_offset + sb->bblog_offset; }

/* The sectors a bad-block log may occupy: between the end of the superblock
 * and data_offset (v1.1, v1.2), or between the end of the data and the
 * superblock (v1.0). *lo >= *hi when there is no room. */
void md_sb_bblog_room(const struct md_sb *sb, uint64_t *lo, uint64_t *hi);

/* 0 when sb has no log (bblog_offset or bblog_size 0, BAD_BLOCKS clear) or
 * its log lies inside md_sb_bblog_room(); else -EINVAL with a reason. A log
 * elsewhere would be written over the superblock or the data the first time
 * a bad block is recorded. md_sb_decode applies it. */
int md_sb_check_bblog(const struct md_sb *sb, char *why, size_t whylen);

/* A PPL is kept: mdadm writes feature bit PPL, the kernel rewrites it as
 * MULTIPLE_PPLS alone once it uses the area as several logs (mdadm's
 * md_feature_any_ppl_on); uraid's RAID-6 PPL (partial P and Q) has PPL_Q. */
static inline int md_sb_has_ppl(const struct md_sb *sb)
{
    return !!(sb->feature_map & (MD_FEATURE_PPL | MD_FEATURE_MULTIPLE_PPLS | MD_FEATURE_PPL_Q));
}
/* The PPL is uraid's RAID-6 one: md cannot assemble the array. */
static inline int md_sb_has_ppl_q(const struct md_sb *sb) { return !!(sb->feature_map & MD_FEATURE_PPL_Q); }

/* The PPL area shares bytes 96..99 with bitmap_offset (feature bit PPL). */
static inline int16_t md_sb_ppl_offset(const struct md_sb *sb) { return (int16_t)((uint32_t)sb->bitmap_offset & 0xffffu); }
static inline uint16_t md_sb_ppl_size(const struct md_sb *sb) { return (uint16_t)((uint32_t)sb->bitmap_offset >> 16); }
static inline void md_sb_set_ppl(struct md_sb *sb, int16_t offset, uint16_t size)
{
    sb->bitmap_offset = (int32_t)((uint32_t)(uint16_t)offset | (uint32_t)size << 16);
}
/* Where the PPL area starts: sectors from the member's start. */
static inline int64_t md_sb_ppl_sector(const struct md_sb *sb) { return (int64_t)sb->super_offset + md_sb_ppl_offset(sb); }

/* 0 when sb has no PPL (feature bit clear) or its area is one md accepts:
 * at least 16 sectors (a header and one 4 KiB block), clear of the
 * superblock, the bad-block log and the data, and no bitmap or journal
 * beside it (md refuses both); else -EINVAL with a reason. md_sb_decode
 * applies it. */
int md_sb_check_ppl(const struct md_sb *sb, char *why, size_t whylen);

/* Encodes sb into out[MD_SB_BYTES]: 256 + 2*max_dev bytes of superblock with
 * a freshly computed checksum, zeros after that. sb->sb_csum is ignored.
 * Returns 0, or -EINVAL when max_dev > MD_SB_MAX_DEV (out is then untouched). */
int md_sb_encode(const struct md_sb *sb, uint8_t *out);

/* Decodes in[MD_SB_BYTES], read at sector read_at_sector of a member, and
 * applies the kernel's acceptance rules. On success fills *sb (every byte,
 * so two decodes of the same input compare equal with memcmp) and returns
 * 0. Otherwise returns a negative errno and writes a one-line reason to why
 * (if why is not NULL):
 *   -EINVAL      not an md v1 superblock (magic, major version), or a field
 *                the kernel rejects (max_dev, super_offset, pads, data_size,
 *                data_offset, dev_number, a BAD_BLOCKS log of offset 0 or
 *                more than one page) or that would be unsafe to write
 *                through (md_sb_check_bblog)
 *   -EBADMSG     bad checksum
 *   -EOPNOTSUPP  feature bits unknown to md */
int md_sb_decode(const uint8_t *in, uint64_t read_at_sector, struct md_sb *sb, char *why, size_t whylen);

/* The checksum of an encoded superblock: sum of the LE u32 words of its
 * first 256 + 2*max_dev bytes (a trailing u16 if any), sb_csum counted as
 * zero, folded once from 64 to 32 bits. max_dev must be <= MD_SB_MAX_DEV. */
uint32_t md_sb_checksum(const uint8_t *encoded, uint32_t max_dev);

/* ---- Creating members like mdadm 4.2 ---------------------------------- */

/* mdadm's space for an internal bitmap on a device of dev_sectors: 0 below
 * 64 KiB, 8 sectors up to 8 GiB, 128 above, 256 from 200 GiB. */
uint32_t md_choose_bm_space(uint64_t dev_sectors);

/* mdadm 4.2's data_offset for a new v1.2 member of dev_sectors with a chunk
 * of chunk_sectors (0 for RAID-1): 24 sectors + bitmap space + reshape
 * headroom (128 MiB, halved while it is more than 1/1024 of the device and
 * the half is still at least 2 chunks), rounded up to 2048 sectors (1 MiB).
 * On a 4 MiB device with 64 KiB chunks that is 24 + 8 + 256 -> 2048. */
uint64_t md_choose_data_offset(uint64_t dev_sectors, uint32_t chunk_sectors);
/* The same with `space` sectors reserved after the superblock instead of
 * the bitmap's (mdadm --consistency-policy=ppl reserves its 1 MiB PPL). */
uint64_t md_choose_data_offset_space(uint64_t dev_sectors, uint32_t chunk_sectors, uint32_t space);

/* Smallest max_dev that holds n roles and keeps 256 + 2*max_dev a multiple
 * of 512 (mdadm writes whole sectors): 128, 384, 640, ... up to 1920. */
uint32_t md_choose_max_dev(uint32_t n);

struct md_sb_create_params {
    int32_t level;
    uint32_t layout;
    uint32_t chunk_sectors;     /* 0 for RAID-1 */
    uint32_t raid_disks;
    uint32_t spares;            /* device numbers past raid_disks max_dev must hold */
    uint64_t dev_sectors;       /* the smallest member's size */
    uint64_t data_offset;       /* 0: md_choose_data_offset() */
    const char *name;           /* required; "host:name" is kept as is */
    const char *homehost;       /* NULL: this machine's hostname; "": none */
    uint64_t ctime;             /* seconds since the epoch */
    uint8_t uuid[16];
    const uint8_t *missing;     /* NULL or raid_disks flags: nonzero = empty slot */
    int assume_clean;           /* resync_offset = MD_RESYNC_CLEAN instead of 0 */
    int ppl;                    /* mdadm --consistency-policy=ppl: feature bit PPL (PPL_Q on
                                 * RAID-6), a 1 MiB area at sb + 8, data_offset and bad-block
                                 * log after it */
    int format;                 /* enum md_format (0: 1.2). 1.0 puts the superblock near each
                                 * member's end (data from 0, log before it); 0.90 as md_sb0_init */
};

/* Fills sb for the member in raid slot dev_number (mdadm gives member i of
 * a new array device number i) like mdadm --create: no feature bits,
 * max_dev from md_choose_max_dev(), dev_roles[i] = i for present slots and
 * 0xffff elsewhere, size = dev_sectors - data_offset rounded down to the
 * chunk (0 for RAID-0, as mdadm writes), data_size = member_sectors -
 * data_offset, an 8-sector bad-block log right after the bitmap space
 * (right after the superblock for RAID-0 and linear), events 0, utime =
 * ctime. Returns 0 or -EINVAL (bad geometry, name too long, member too
 * small, slot out of range) with a reason in why. */
int md_sb_init(struct md_sb *sb, const struct md_sb_create_params *p, uint32_t dev_number,
               const uint8_t device_uuid[16], uint64_t member_sectors, char *why, size_t whylen);

/* The set_name mdadm would store for name and homehost (NULL homehost means
 * this machine's hostname): "homehost:name" when name has no ':' and the
 * result fits in 31 bytes, else name. Returns 0 or -EINVAL if name is empty
 * or longer than 31 bytes. out is NUL-padded to 32 bytes. */
int md_sb_make_name(const char *name, const char *homehost, char out[32]);

/* A RAID-1 narrowed to its first n slots (md's raid1_reshape): raid_disks
 * n, and every device whose role was a slot from n up is faulty (a slot
 * gone with its absent member). */
void md_sb_drop_slots(struct md_sb *sb, uint32_t n);

#endif
