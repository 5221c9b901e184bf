/* md's write-intent bitmap superblock (md-format.md 1.8): the 256-byte
 * header at super_offset + bitmap_offset when feature bit
 * MD_FEATURE_BITMAP_OFFSET is set. uraid does not maintain the bitmap yet;
 * it decodes the header so an array can recognise the bitmap, keep it
 * (re-encode it unchanged) and report it. Pure functions. */
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

#endif
