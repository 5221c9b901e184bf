/* md RAID-10 as pure functions (no I/O, no global state, thread-safe):
 * where each copy of an array sector lives. Sectors are 512 bytes; member
 * sectors are relative to the member's data_offset.
 *
 * md's layout word (drivers/md/raid10.c): near copies in bits 0-7, far
 * copies in bits 8-15, bit 16 "offset" (the far copies one chunk apart
 * instead of a whole region apart); bits 17-18 choose far sets, which
 * mdadm never writes and this module refuses. mdadm names: nN (near N,
 * far 1) = N | 0x100, fN = 0x1 | N << 8, oN = fN | 0x10000.
 *
 * The map, for c = chunk, n = members, nc/fc = near/far copies, from md's
 * raid10_find_phys:
 *   q = S / c (array chunk), chunk q's first copy is at position
 *   p = q * nc: member p % n, row p / n (offset: row (p / n) * fc);
 *   near copy i (0 <= i < nc) is position p + i; far copy f (1 <= f < fc)
 *   of each near copy is nc members further (mod n) and f * stride
 *   sectors further down, stride = one region (dev_sectors / fc) for far,
 *   one chunk for offset.
 * Copies are listed in md's order: near copy 0 and its far copies, near
 * copy 1 and its far copies, ...; md reads, resyncs and repairs from the
 * first readable one in that order.
 *
 * Sizes (md's raid10_size and calc_sectors): with m = the member size the
 * superblock states (sb->size) in whole chunks,
 *   array chunks = floor(floor(m / fc) * n / nc),
 *   used member chunks (dev_sectors) = ceil(array chunks * nc * fc / n),
 *   far stride = floor(used chunks / fc) chunks.
 * Positions on a member past the last array chunk hold nothing. */
#ifndef URAID_RAID10_H
#define URAID_RAID10_H

#include <stddef.h>
#include <stdint.h>

/* Copies of a sector this module handles (md allows up to raid_disks). */
#define RAID10_MAX_COPIES 16

#define RAID10_OFFSET_BIT 0x10000

struct raid10_geom {
    int raid_disks;
    int near, far, offset; /* offset: 0 or 1 */
    int copies;            /* near * far */
    uint32_t chunk_sectors;
    uint64_t dev_sectors;  /* member sectors in use */
    uint64_t stride;       /* sectors between far copies */
    uint64_t array_sectors;
};

struct raid10_copy {
    int disk;
    uint64_t sector; /* member sector */
};

/* Splits md's layout word; -EINVAL (reason in why) for far sets, a zero
 * count, or copies beyond raid_disks or RAID10_MAX_COPIES. */
int raid10_layout_check(int raid_disks, int layout, char *why, size_t whylen);

/* The geometry of an array whose members hold member_sectors each (the
 * superblock's size); -EINVAL with a reason when md would refuse it. */
int raid10_geom_init(struct raid10_geom *g, int raid_disks, int layout, uint32_t chunk_sectors,
                     uint64_t member_sectors, char *why, size_t whylen);

/* Array sector -> its g->copies copies in md's order. */
int raid10_map(const struct raid10_geom *g, uint64_t array_sector, struct raid10_copy *out);

/* (member, member sector) -> the array sector held there; -ENOENT when
 * that position holds nothing (past the array's last chunk). */
int raid10_unmap(const struct raid10_geom *g, int disk, uint64_t member_sector, uint64_t *array_sector);

/* 1 when every chunk keeps a copy on a member not in missing[] (md's
 * enough(): each run of `copies` members starting at a multiple of near
 * copies keeps one), else 0. */
int raid10_survives(const struct raid10_geom *g, const unsigned char *missing);

/* mdadm's names: "n2", "f3", "o2" ... (case ignored); the layout word or
 * -EINVAL. */
int raid10_layout_from_name(const char *name);
/* "n2", "f2", "o3", or "n2f2" for a mixed word, into buf; NULL if the
 * word is not a RAID-10 layout. */
const char *raid10_layout_name(int layout, char *buf, size_t len);

#endif
