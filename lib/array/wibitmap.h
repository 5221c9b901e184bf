/* md's internal write-intent bitmap at run time (the on-disk codec is
 * lib/meta/bitmap.c). One bit covers chunk_sectors of every member; each
 * chunk has one atomic word in memory:
 *
 *   bits 0-23  writes in flight          bit 28 NEEDED (dirty at open: the
 *   bits 24-25 idle passes of the daemon        resync must cover it)
 *   bit 29     WANT (being set on disk)  bit 30 ONDISK (the bit is on disk)
 *
 * Chunk states:  clear --first write: WANT, page written on every working
 * member and flushed--> ONDISK --idle two daemon passes, array whole-->
 * clear (page rewritten). A write proceeds only once every chunk it touches
 * is ONDISK, so after a crash every member range that may differ between
 * mirrors or parity is under a set bit. When the bit is already on disk a
 * write costs one compare-and-swap per chunk and no lock.
 *
 * The header's events follow the superblocks' (wib_write_header is called
 * by array_write_superblocks before the superblocks go out, as md writes
 * its bitmap superblock first), so md accepts the bitmap after a clean stop
 * and after a crash alike. */
#ifndef URAID_WIBITMAP_H
#define URAID_WIBITMAP_H

#include <stdint.h>
#include <stddef.h>

#include "uraid.h"

struct uraid_array;
struct md_bitmap_sb;

/* Loads the bitmap of an array whose superblock has one (no-op otherwise)
 * and, unless read-only, starts the daemon that clears idle bits. A bitmap
 * whose events are older than the superblock's or that says STALE cannot
 * tell where writes were: every chunk is then NEEDED when the array was not
 * shut down cleanly (a full resync, as md), and all bits are cleared when it
 * was. Returns 0 or a negative errno with a reason naming the member. */
int wib_open(struct uraid_array *a, const struct uraid_open_params *p, char *why, size_t whylen);

/* Stops the daemon and frees the bitmap (a->bitmap becomes NULL). */
void wib_free(struct uraid_array *a);

/* md_bitmap_resize for a member size grown to new_span sectors, with no
 * I/O in flight (uraid_grow_size): the chunk doubles until the bits fit
 * the bitmap's present sectors (1.1/1.2 record no room past them), the old
 * bits carry over, the new region's chunks are set and NEEDED (a resync
 * covers them, after a kill too), and every member gets the whole bitmap
 * before the caller writes the superblocks with the new size. */
int wib_resize(struct uraid_array *a, uint64_t new_span, char *why, size_t whylen);

/* Member sectors [start, end) past data_offset are about to be written:
 * sets and writes (and flushes) every bit not yet on disk, then counts the
 * writes in flight. 0, or -EIO when no working member took the bitmap
 * (nothing of the write may go out then). Members that failed the bitmap
 * write are marked faulty. */
int wib_start_write(struct uraid_array *a, uint64_t start, uint64_t end);
/* The write of [start, end) has finished (or failed). */
void wib_end_write(struct uraid_array *a, uint64_t start, uint64_t end);

/* Writes the header with the template's events to every working member.
 * Called with meta_lock held by array_write_superblocks, after it bumped
 * the events and before it writes the superblocks. */
void wib_write_header(struct uraid_array *a);

/* A clean close: clears every bit no write holds and no resync still needs
 * (all of them, unless the array is degraded) and writes the pages. */
int wib_clear_idle(struct uraid_array *a);

/* Resync guidance: the first NEEDED member range at or after pos, as
 * [*run_start, *run_end) in whole chunks; 0 when there is none. */
int wib_next_needed(struct uraid_array *a, uint64_t pos, uint64_t *run_start, uint64_t *run_end);
/* Recovery of a re-added member: the first member range at or after pos
 * that may have been written since a member left (bit set, being set, or
 * a write in flight), in whole chunks; 0 when there is none. Bits are not
 * cleared while the array is degraded, so they cover every write since. */
int wib_next_dirty(struct uraid_array *a, uint64_t pos, uint64_t *run_start, uint64_t *run_end);
/* The resync has covered everything: NEEDED is dropped and idle bits are
 * cleared on disk. */
void wib_resync_done(struct uraid_array *a);

/* Bytes of header and bits on each member (0: the array keeps no bitmap). */
uint64_t wib_area_bytes(struct uraid_array *a);

struct wib_info {
    int present;
    uint32_t chunk_bytes;
    uint64_t bits, dirty;          /* dirty: bits set on disk */
    uint64_t events, events_cleared;
    uint64_t pages, pages_used;    /* md's in-memory counter pages (2048 chunks each) */
    int stale_at_open;
};
void wib_get_info(struct uraid_array *a, struct wib_info *info);

/* Writes a fresh bitmap (header hdr, no bit set) to every present member of
 * a new array (create.c). */
int wib_write_fresh(struct uraid_array *a, const struct md_bitmap_sb *hdr);

#endif
