/* md's write-intent bitmap (md-format.md 1.8): the 256-byte header at
 * super_offset + bitmap_offset when feature bit MD_FEATURE_BITMAP_OFFSET is
 * set, the dirty bits right after it (bit b at byte 256 + b/8, bit b%8).
 * Pure functions: the codec, mdadm's chunk choice and bit arithmetic; the
 * runtime that sets and clears bits is lib/array/wibitmap.c. */
#ifndef URAID_META_BITMAP_H
#define URAID_META_BITMAP_H

#include <stddef.h>
#include <stdint.h>

#define MD_BITMAP_MAGIC 0x6d746962u   /* "bitm" read as a LE u32 */
#define MD_BITMAP_HEADER_BYTES 256u
#define MD_BITMAP_VERSION_LO 3u       /* oldest version md accepts (host-endian bits) */
#define MD_BITMAP_VERSION_HI 4u       /* what mdadm writes: little-endian bits */
#define MD_BITMAP_VERSION_CLUSTERED 5u
#define MD_BITMAP_VERSION_LOCKLESS 6u

#define MD_BITMAP_STATE_STALE 0x2u
#define MD_BITMAP_STATE_WRITE_ERROR 0x4u
#define MD_BITMAP_STATE_FIRST_USE 0x8u
#define MD_BITMAP_STATE_CLEAN 0x10u

struct md_bitmap_sb {
    uint32_t version;
    uint8_t uuid[16];             /* the array's set_uuid */
    uint64_t events;              /* accepted if == sb events or one more */
    uint64_t events_cleared;
    uint64_t sync_size;           /* sectors per member covered */
    uint32_t state;
    uint32_t chunksize;           /* BYTES of each member per bit */
    uint32_t daemon_sleep;        /* seconds */
    uint32_t write_behind;
    uint32_t sectors_reserved;
    uint32_t nodes;
    char cluster_name[64];
    uint8_t pad[120];             /* kept as found so re-encoding is exact */
};

/* Decodes in[256]. Returns 0, or -EINVAL with a reason in why (wrong magic,
 * unknown version, chunk size not a power of two >= 512 bytes). */
int md_bitmap_decode(const uint8_t *in, struct md_bitmap_sb *b, char *why, size_t whylen);

/* Encodes b into out[256]. Returns 0. */
int md_bitmap_encode(const struct md_bitmap_sb *b, uint8_t *out);

/* Bits in the bitmap: one per chunksize bytes of sync_size sectors. */
uint64_t md_bitmap_bits(const struct md_bitmap_sb *b);

/* Bytes of header plus bits on disk for nbits, rounded up to whole 512-byte
 * sectors (what a reader or writer of the whole bitmap transfers). */
uint64_t md_bitmap_area_bytes(uint64_t nbits);

/* md_bitmap_resize's chunk (sectors) for a member size grown from
 * old_sectors to new_sectors: metadata 1.1/1.2 record no room past the
 * bitmap, so the chunk doubles while the new bits would not fit the
 * sectors the old ones fill (and stays under 1 GiB, the header's limit). */
uint64_t md_bitmap_resize_chunk(uint64_t chunk_sectors, uint64_t old_sectors, uint64_t new_sectors);

#define MD_BITMAP_DEFAULT_CHUNK (64u << 20)  /* mdadm: "64Meg is a good default" */
#define MD_BITMAP_MIN_CHUNK 4096u            /* mdadm: sub-page chunks are not used */
#define MD_BITMAP_DAEMON_SLEEP 5u            /* seconds, mdadm's default */

/* mdadm's chunk for an internal bitmap covering sync_sectors of each member
 * in room_sectors of reserved space: the smallest power of two >= 4 KiB
 * whose bits fit after the header; with requested == 0 at least 64 MiB,
 * otherwise requested itself. Returns 0 with *chunk_bytes set, or -EINVAL
 * (requested not a power of two >= 4 KiB, or too small for the room; no
 * room at all) with a one-line reason in why. */
int md_bitmap_choose_chunk(uint64_t sync_sectors, uint32_t room_sectors, uint64_t requested,
                           uint32_t *chunk_bytes, char *why, size_t whylen);

/* A fresh version-4 header as mdadm writes it (state 0, daemon_sleep 5,
 * events_cleared = events). */
void md_bitmap_init(struct md_bitmap_sb *b, const uint8_t uuid[16], uint64_t events, uint64_t sync_sectors,
                    uint32_t chunk_bytes);

/* The bits after the header: test, set/clear and count (LE bit order). */
static inline int md_bitmap_test(const uint8_t *bits, uint64_t b) { return (bits[b >> 3] >> (b & 7)) & 1; }
static inline void md_bitmap_put(uint8_t *bits, uint64_t b, int on)
{
    if (on)
        bits[b >> 3] |= (uint8_t)(1u << (b & 7));
    else
        bits[b >> 3] &= (uint8_t)~(1u << (b & 7));
}
uint64_t md_bitmap_count(const uint8_t *bits, uint64_t nbits);

#endif
