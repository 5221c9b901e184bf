/* md's linear level as pure functions (no I/O, thread-safe): the array is
 * the members' data areas one after the other, in slot order. Sectors are
 * 512 bytes; member sectors are relative to data_offset.
 *
 * md (drivers/md/md-linear.c) takes each member's whole data area (the
 * superblock's data_size; mdadm records size 0), rounded down to the chunk
 * when the superblock has one (mdadm writes chunk 0: "Rounding : 0K"), so
 * members may differ in size. */
#ifndef URAID_LINEAR_H
#define URAID_LINEAR_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

struct linear_geom {
    int n;
    uint64_t start[LAYOUT_MAX_DISKS + 1]; /* member i holds [start[i], start[i + 1]) */
};

/* -EINVAL with a reason for no member, a member without data, or a sum
 * past 64 bits. */
int linear_init(struct linear_geom *g, int n, const uint64_t *data_sectors, uint32_t chunk_sectors, char *why,
                size_t whylen);

static inline uint64_t linear_array_sectors(const struct linear_geom *g) { return g->start[g->n]; }

/* Array sector -> (member, member sector) and the sectors left on that
 * member from there; -EINVAL past the end. */
int linear_map(const struct linear_geom *g, uint64_t array_sector, int *disk, uint64_t *member_sector,
               uint64_t *left);

#endif
