/* grow --size's internals shared by resize.c and resize_place.c. */
#ifndef URAID_ARRAY_RESIZE_H
#define URAID_ARRAY_RESIZE_H

#include <stddef.h>
#include <stdint.h>

/* md's room for data on a member of `sectors` with metadata 0.90 or 1.0,
 * the superblock at the end's place (md's rdev_size_change). */
uint64_t resize_md_room(int format, uint64_t sectors);

/* Metadata 0.90/1.0: every member's superblock found (at its end, or below
 * it on a member grown in place) and, after the checks grow --size makes
 * (a refusal writes nothing), written where md looks on the member as it
 * is now (resize_place.c's top comment). 0 when placed; 1 when the members
 * are 1.1/1.2 (nothing to place); -EALREADY, or a refusal with why. */
int resize_place_superblocks(const char *const *members, int n, uint64_t want, char *why, size_t whylen);

#endif
