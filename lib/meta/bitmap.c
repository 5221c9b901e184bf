/* md write-intent bitmap: header codec, mdadm's chunk choice, bit counts
 * (md-format.md 1.8). */
#include "meta/bitmap.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "meta/le.h"

/* Field offsets of the 256-byte header. */
enum {
    BM_MAGIC = 0, BM_VERSION = 4, BM_UUID = 8, BM_EVENTS = 24, BM_EVENTS_CLEARED = 32,
    BM_SYNC_SIZE = 40, BM_STATE = 48, BM_CHUNKSIZE = 52, BM_DAEMON_SLEEP = 56,
    BM_WRITE_BEHIND = 60, BM_SECTORS_RESERVED = 64, BM_NODES = 68, BM_CLUSTER_NAME = 72,
    BM_PAD = 136,
};
_Static_assert(BM_CLUSTER_NAME + 64 == BM_PAD, "cluster_name is 64 bytes");
_Static_assert(BM_PAD + sizeof(((struct md_bitmap_sb *)0)->pad) == MD_BITMAP_HEADER_BYTES,
               "header is 256 bytes");
_Static_assert(sizeof(((struct md_bitmap_sb *)0)->cluster_name) == 64, "cluster_name");

static int fail(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t whylen, const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

int md_bitmap_decode(const uint8_t *in, struct md_bitmap_sb *b, char *why, size_t whylen)
{
    memset(b, 0, sizeof(*b));
    uint32_t magic = le32_get(in + BM_MAGIC);
    if (magic != MD_BITMAP_MAGIC)
        return fail(why, whylen, "no bitmap (magic 0x%08x, expected 0x%08x)", magic, MD_BITMAP_MAGIC);
    b->version = le32_get(in + BM_VERSION);
    if (b->version < MD_BITMAP_VERSION_LO || b->version > MD_BITMAP_VERSION_LOCKLESS)
        return fail(why, whylen, "bitmap version %u unknown", b->version);
    memcpy(b->uuid, in + BM_UUID, 16);
    b->events = le64_get(in + BM_EVENTS);
    b->events_cleared = le64_get(in + BM_EVENTS_CLEARED);
    b->sync_size = le64_get(in + BM_SYNC_SIZE);
    b->state = le32_get(in + BM_STATE);
    b->chunksize = le32_get(in + BM_CHUNKSIZE);
    b->daemon_sleep = le32_get(in + BM_DAEMON_SLEEP);
    b->write_behind = le32_get(in + BM_WRITE_BEHIND);
    b->sectors_reserved = le32_get(in + BM_SECTORS_RESERVED);
    b->nodes = le32_get(in + BM_NODES);
    memcpy(b->cluster_name, in + BM_CLUSTER_NAME, 64);
    memcpy(b->pad, in + BM_PAD, sizeof(b->pad));
    /* md refuses these too: a bit must cover whole sectors. */
    if (b->chunksize < 512 || (b->chunksize & (b->chunksize - 1)))
        return fail(why, whylen, "bitmap chunk size %u is not a power of two >= 512", b->chunksize);
    return 0;
}

int md_bitmap_encode(const struct md_bitmap_sb *b, uint8_t *out)
{
    memset(out, 0, MD_BITMAP_HEADER_BYTES);
    le32_put(out + BM_MAGIC, MD_BITMAP_MAGIC);
    le32_put(out + BM_VERSION, b->version);
    memcpy(out + BM_UUID, b->uuid, 16);
    le64_put(out + BM_EVENTS, b->events);
    le64_put(out + BM_EVENTS_CLEARED, b->events_cleared);
    le64_put(out + BM_SYNC_SIZE, b->sync_size);
    le32_put(out + BM_STATE, b->state);
    le32_put(out + BM_CHUNKSIZE, b->chunksize);
    le32_put(out + BM_DAEMON_SLEEP, b->daemon_sleep);
    le32_put(out + BM_WRITE_BEHIND, b->write_behind);
    le32_put(out + BM_SECTORS_RESERVED, b->sectors_reserved);
    le32_put(out + BM_NODES, b->nodes);
    memcpy(out + BM_CLUSTER_NAME, b->cluster_name, 64);
    memcpy(out + BM_PAD, b->pad, sizeof(b->pad));
    return 0;
}

uint64_t md_bitmap_bits(const struct md_bitmap_sb *b)
{
    if (!b->chunksize)
        return 0;
    /* sync_size < 2^55 in practice; compute in sectors to avoid overflow. */
    uint64_t chunk_sectors = b->chunksize / 512 ? b->chunksize / 512 : 1;
    return (b->sync_size + chunk_sectors - 1) / chunk_sectors;
}

uint64_t md_bitmap_area_bytes(uint64_t nbits)
{
    uint64_t bytes = MD_BITMAP_HEADER_BYTES + (nbits + 7) / 8;
    return (bytes + 511) / 512 * 512;
}

uint64_t md_bitmap_resize_chunk(uint64_t chunk_sectors, uint64_t old_sectors, uint64_t new_sectors)
{
    uint64_t room = md_bitmap_area_bytes((old_sectors + chunk_sectors - 1) / chunk_sectors);
    while (md_bitmap_area_bytes((new_sectors + chunk_sectors - 1) / chunk_sectors) > room &&
           chunk_sectors < (1ull << 30) / 512)
        chunk_sectors *= 2;
    return chunk_sectors;
}

int md_bitmap_choose_chunk(uint64_t sync_sectors, uint32_t room_sectors, uint64_t requested,
                           uint32_t *chunk_bytes, char *why, size_t whylen)
{
    if ((uint64_t)room_sectors * 512 <= MD_BITMAP_HEADER_BYTES)
        return fail(why, whylen, "no space is reserved for a bitmap on these members");
    if (requested && (requested < MD_BITMAP_MIN_CHUNK || (requested & (requested - 1)) || requested > (1ull << 31)))
        return fail(why, whylen, "bitmap chunk %llu bytes is not a power of two between 4K and 2G",
                    (unsigned long long)requested);
    /* mdadm's add_internal_bitmap1: halve the bits until they fit */
    uint64_t max_bits = ((uint64_t)room_sectors * 512 - MD_BITMAP_HEADER_BYTES) * 8;
    uint64_t min_chunk = MD_BITMAP_MIN_CHUNK, bits = sync_sectors * 512 / min_chunk + 1;
    while (bits > max_bits) {
        min_chunk *= 2;
        bits = (bits + 1) / 2;
    }
    if (requested && requested < min_chunk)
        return fail(why, whylen,
                    "bitmap chunk %lluK is too small: %llu sectors per member need a chunk of at least %lluK "
                    "to fit the %u sectors reserved for the bitmap",
                    (unsigned long long)(requested >> 10), (unsigned long long)sync_sectors,
                    (unsigned long long)(min_chunk >> 10), room_sectors);
    uint64_t chunk = requested ? requested : min_chunk < MD_BITMAP_DEFAULT_CHUNK ? MD_BITMAP_DEFAULT_CHUNK : min_chunk;
    if (chunk > (1ull << 31))
        return fail(why, whylen, "members too large for a bitmap in %u sectors", room_sectors);
    *chunk_bytes = (uint32_t)chunk;
    return 0;
}

void md_bitmap_init(struct md_bitmap_sb *b, const uint8_t uuid[16], uint64_t events, uint64_t sync_sectors,
                    uint32_t chunk_bytes)
{
    memset(b, 0, sizeof *b);
    b->version = MD_BITMAP_VERSION_HI;
    memcpy(b->uuid, uuid, 16);
    b->events = events;
    b->events_cleared = events;
    b->sync_size = sync_sectors;
    b->chunksize = chunk_bytes;
    b->daemon_sleep = MD_BITMAP_DAEMON_SLEEP;
}

uint64_t md_bitmap_count(const uint8_t *bits, uint64_t nbits)
{
    uint64_t n = 0, whole = nbits / 8;
    for (uint64_t i = 0; i < whole; i++)
        n += (uint64_t)__builtin_popcount(bits[i]);
    for (uint64_t b = whole * 8; b < nbits; b++)
        n += (uint64_t)md_bitmap_test(bits, b);
    return n;
}
