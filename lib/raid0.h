/* md RAID-0 with members of any size: zones, as pure functions (no I/O, no
 * global state, thread-safe). Sectors are 512 bytes; member sectors are
 * relative to the member's data_offset.
 *
 * md (drivers/md/raid0.c, create_strip_zones) rounds every member's data
 * size down to whole chunks and cuts the array into zones, one per distinct
 * rounded size, smallest first:
 *   zone 0 stripes over every member from member sector 0 up to the
 *     smallest size;
 *   zone z stripes over the members larger than zone z-1's end on a
 *     member (its dev_start), in slot order, up to the next size.
 * So the array is as large as the sum of the rounded sizes.
 *
 * Inside a zone of nb members, in-zone chunk q is row q / nb of member
 * (q + shift) % nb of the zone, where shift depends on the layout:
 *   RAID0_LAYOUT_ORIGINAL (1): shift = (zone start / chunk) % nb, because
 *     kernels before 3.14 (and md's layout 1 since) pick the member from
 *     the array chunk number, not the in-zone one;
 *   RAID0_LAYOUT_ALTERNATE (2): shift = 0 (what 3.14 to 5.3 did).
 * Zone 0 starts at 0 and a one-member zone has nothing to shift, so the
 * layouts differ only when zone 1 has two members or more; otherwise md
 * (since 5.4's fix-ups, e.g. the Linux 6.1 of md-oracle) ignores the field.
 * When they differ, a superblock recording no layout (no
 * MD_FEATURE_RAID0_LAYOUT, or a value other than 1 or 2) is ambiguous and
 * md refuses it unless raid0.default_layout says which; so does this
 * module. */
#ifndef URAID_RAID0_H
#define URAID_RAID0_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

enum raid0_layout {
    RAID0_LAYOUT_UNSET = -1,    /* not recorded in the superblock */
    RAID0_LAYOUT_ORIGINAL = 1,  /* mdadm's "original", its default for multi-zone */
    RAID0_LAYOUT_ALTERNATE = 2, /* mdadm's "alternate" */
};

struct raid0_zone {
    uint64_t start, end; /* array sectors [start, end); multiples of the chunk */
    uint64_t dev_start;  /* member sector where the zone begins on each of its members */
    int nb;              /* members in the zone */
    int shift;           /* see above */
};

struct raid0_zones {
    int raid_disks;
    int nzones;
    int layout;                 /* the one in force: 1 or 2 (1 when it does not matter) */
    int layout_matters;         /* zone 1 exists and has two members or more */
    uint32_t chunk_sectors;
    uint64_t array_sectors;     /* end of the last zone */
    uint64_t slot_sectors[LAYOUT_MAX_DISKS];  /* each slot's data size, whole chunks */
    struct raid0_zone zone[LAYOUT_MAX_DISKS];
    int16_t zone_slot[LAYOUT_MAX_DISKS][LAYOUT_MAX_DISKS]; /* [z][i]: slot of zone z's i-th member */
};

/* Where one array sector lives. */
struct raid0_addr {
    int zone;
    int slot;
    uint64_t member_sector;
    uint32_t chunk_off;  /* sector within the chunk */
};

/* Builds the zones of n slots whose data areas hold data_sectors[s]
 * sectors (before rounding) with the given chunk and recorded layout
 * (RAID0_LAYOUT_UNSET when the superblock has no MD_FEATURE_RAID0_LAYOUT).
 * -EINVAL with a one-line reason in why for a slot below one chunk, a bad
 * n or chunk, or layout not 1 or 2 where it matters. */
int raid0_zones_build(struct raid0_zones *z, int n, const uint64_t *data_sectors, uint32_t chunk_sectors,
                      int layout, char *why, size_t whylen);

/* Number of zones md makes of these sizes (distinct sizes in whole
 * chunks), without building them; negative errno on bad arguments. */
int raid0_zone_count(int n, const uint64_t *data_sectors, uint32_t chunk_sectors);

/* Array sector -> member; -EINVAL past the end. */
int raid0_map(const struct raid0_zones *z, uint64_t array_sector, struct raid0_addr *out);

/* (slot, member sector) -> array sector; -EINVAL when the slot does not
 * use that sector (past its rounded size). */
int raid0_unmap(const struct raid0_zones *z, int slot, uint64_t member_sector, uint64_t *array_sector);

#endif
