/* md RAID levels and layouts as pure functions: no I/O, no global state,
 * every call thread-safe.
 *
 * Units: every *_sector / *_sectors value is in 512-byte sectors. Member
 * sectors are relative to the member's data_offset (the caller adds it).
 *
 * Addressing (RAID-4/5/6, from md's raid5_compute_sector):
 *   chunk = S / c, off = S % c, stripe = chunk / k, d = chunk % k,
 *   member sector = stripe * c + off on whichever member holds d.
 * RAID-0 with equal-size members (one zone): the same with k = n,
 *   d = member. Members of different sizes make zones, each its own
 *   stripe set: raid0.h maps those; layout_map is only zone 0.
 * RAID-1: every member holds array sector S at member sector S.
 *
 * RAID-6 Q coefficient order (the trap; md-format.md section 2):
 *   md layouts (0-5, 16-20): Q = sum over slots j of g^j * D(slot j), where
 *   the slots number the data members met walking upward (wrapping) from the
 *   member after Q, skipping P and Q. Slot != d in some stripes of layouts
 *   0, 1, 18 and 19.
 *   DDF layouts (8, 9, 10): the exponent is the physical member index and Q
 *   runs over n "disks", the P and Q members counting as all-zero blocks.
 * struct stripe_map exposes both through nslots/slot_disk[]: feed the parity
 * engine nslots blocks, block j being member slot_disk[j] (a zero block when
 * slot_disk[j] < 0, which only happens for DDF).
 *
 * Every function returns 0 or a negative errno: -EINVAL for a geometry that
 * layout_check() refuses or an argument out of range, -EOVERFLOW when an
 * address does not fit in 64 bits.
 */
#ifndef URAID_LAYOUT_H
#define URAID_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* Members per array this module handles. RAID-4/5/6 are further bounded by
 * the parity engine (URAID_PARITY_MAX_K = 253 Q slots): RAID-4/5 n <= 254,
 * RAID-6 md layouts n <= 255, DDF layouts n <= 253. */
#define LAYOUT_MAX_DISKS 256

/* md's level number of linear (the superblock's level field is signed). */
#define LAYOUT_LEVEL_LINEAR (-1)

/* Smallest chunk: one 4 KiB page, md's stripe_head unit. */
#define LAYOUT_MIN_CHUNK_SECTORS 8u

/* md layout numbers (md_p.h ALGORITHM_*); the names are mdadm's. */
enum layout_alg {
    LAYOUT_LEFT_ASYMMETRIC = 0,
    LAYOUT_RIGHT_ASYMMETRIC = 1,
    LAYOUT_LEFT_SYMMETRIC = 2, /* mdadm's default for RAID-5 and RAID-6 */
    LAYOUT_RIGHT_SYMMETRIC = 3,
    LAYOUT_PARITY_FIRST = 4,
    LAYOUT_PARITY_LAST = 5,
    LAYOUT_DDF_ZERO_RESTART = 8, /* RAID-6 only */
    LAYOUT_DDF_N_RESTART = 9,
    LAYOUT_DDF_N_CONTINUE = 10,
    LAYOUT_LEFT_ASYMMETRIC_6 = 16, /* RAID-6 only: RAID-5 layout + Q on the last member */
    LAYOUT_RIGHT_ASYMMETRIC_6 = 17,
    LAYOUT_LEFT_SYMMETRIC_6 = 18,
    LAYOUT_RIGHT_SYMMETRIC_6 = 19,
    LAYOUT_PARITY_FIRST_6 = 20,
};

/* Array geometry as the superblock states it.
 *   level: LAYOUT_LEVEL_LINEAR, 0, 1, 4, 5, 6 or 10. layout_check takes
 *     all of them; the stripe functions below (layout_stripe, layout_map,
 *     layout_unmap, layout_array_sectors) refuse linear and 10, which
 *     linear.h and raid10.h map (copies on different member sectors).
 *   layout: md layout number; only read for levels 5 and 6. RAID-4's
 *     superblock says 0 (mdadm 4.2) and md ignores it: RAID-4 is always
 *     "parity-last". RAID-0's field (1 or 2 on newer kernels) only matters
 *     for multi-zone arrays, which raid0.h models.
 *   raid_disks: n, members in the array including missing ones.
 *   chunk_sectors: power of two >= 8; ignored (may be 0) for RAID-1. */
struct layout_geom {
    int level;
    int layout;
    int raid_disks;
    uint32_t chunk_sectors;
};

/* What a member holds in one stripe. */
enum layout_role {
    LAYOUT_ROLE_DATA = 0,
    LAYOUT_ROLE_P = 1,
    LAYOUT_ROLE_Q = 2,
};

/* One stripe of the array, from layout_stripe().
 * For RAID-1 a "stripe" is one sector: k = 1 and every member is a copy of
 * data index 0 (data_disk[0] = 0, disk_role[m] = 0 for every m). */
struct stripe_map {
    int p_disk;  /* member holding P, -1 for RAID-0/1 */
    int q_disk;  /* member holding Q, -1 unless RAID-6 */
    int k;       /* data blocks per stripe */
    int nslots;  /* blocks to feed the parity engine: k for RAID-4/5 and md
                  * RAID-6 layouts, n for DDF layouts, 0 for RAID-0/1 */
    int16_t data_disk[LAYOUT_MAX_DISKS]; /* [d] member holding data index d */
    int16_t q_slot[LAYOUT_MAX_DISKS];    /* [d] Q slot (exponent) of data d;
                                          * = d for RAID-4/5, -1 for RAID-0/1 */
    int16_t slot_disk[LAYOUT_MAX_DISKS]; /* [j] member in slot j, -1 = zero block */
    int16_t disk_role[LAYOUT_MAX_DISKS]; /* [m] data index d >= 0, or
                                          * -LAYOUT_ROLE_P / -LAYOUT_ROLE_Q */
};

/* One sector's position on both sides of the mapping. */
struct layout_addr {
    uint64_t array_sector;  /* UINT64_MAX when role is P or Q */
    uint64_t stripe;
    int d;                  /* data index in the stripe, -1 for P and Q */
    int disk;               /* member (RAID-1: 0 from layout_map) */
    int role;               /* enum layout_role */
    uint32_t chunk_off;     /* sector within the chunk (0 for RAID-1) */
    uint64_t member_sector; /* relative to data_offset */
};

/* 0 if the geometry is one md accepts and this module handles, else
 * -EINVAL with a one-line reason in why (if why != NULL and whylen > 0). */
int layout_check(const struct layout_geom *g, char *why, size_t whylen);

/* Data blocks per stripe: n for RAID-0, 1 for RAID-1, n-1 for RAID-4/5,
 * n-2 for RAID-6; negative errno for a bad geometry. */
int layout_data_disks(const struct layout_geom *g);

/* Parity blocks per stripe: 0, 1 or 2; negative errno for a bad geometry. */
int layout_parity_count(const struct layout_geom *g);

/* Array size for members with member_sectors usable data sectors each:
 * md rounds the member size down to whole chunks (not for RAID-1). */
int layout_array_sectors(const struct layout_geom *g, uint64_t member_sectors,
                         uint64_t *array_sectors);

/* Fills *out for stripe number `stripe`. */
int layout_stripe(const struct layout_geom *g, uint64_t stripe, struct stripe_map *out);

/* Array sector -> position. Fills every field of *out (role is DATA). */
int layout_map(const struct layout_geom *g, uint64_t array_sector, struct layout_addr *out);

/* (member, member sector) -> position: what that member sector holds. For
 * P and Q, array_sector is UINT64_MAX and d is -1. Fills every field. */
int layout_unmap(const struct layout_geom *g, int disk, uint64_t member_sector,
                 struct layout_addr *out);

/* Layout names. layout_from_name returns the md number (>= 0) or -EINVAL.
 * Accepts mdadm's long names, "la"/"ra"/"ls"/"rs" and "default", ignoring
 * case. For level 4 only "parity-last" and "default" are accepted and the
 * result is 0, what mdadm stores. Level 0 has "original" (1) and
 * "alternate" (2), its multi-zone layouts (raid0.h); level 1 has none.
 * Level 10 takes mdadm's n2, f2, o2 ... (raid10_layout_from_name) and
 * layout_name gives mdadm --examine's words ("near=2", "far=2",
 * "offset=2"). */
int layout_from_name(int level, const char *name);

/* mdadm's long name of a layout, or NULL if the level has no such layout
 * (RAID-0's 0: no layout recorded).
 * Level 4 always gives "parity-last" (the number is ignored). */
const char *layout_name(int level, int layout);

/* Whether a RAID-5/6 layout number exists for the level (4: always). */
int layout_valid(int level, int layout);

#endif
