/* Per-stream read-ahead for RAID-4/5/6 (readahead.c): sequential streams of
 * user reads are recognised (up to RA_STREAMS at once) and read ahead in
 * windows of whole stripes, one request per member per window, into a
 * bounded cache that later reads of the stream are served from. Writes
 * invalidate through the stripe locks' seqlock counts. */
#ifndef URAID_READAHEAD_H
#define URAID_READAHEAD_H

#include <stddef.h>
#include <stdint.h>

struct uraid_array;
struct array_ra;

/* What the read-ahead did since open (tests, status). */
struct ra_stats {
    uint64_t hits;        /* sectors served from the cache */
    uint64_t fills;       /* windows read */
    uint64_t async_fills; /* ... of them by the read-ahead thread */
    uint64_t dropped;     /* windows thrown away: a slot changed members while they were read */
    uint64_t stale;       /* cached stripes found written since their fill */
    int streams;          /* sequential streams being followed now */
    size_t bytes, budget; /* cached (and being read), and the most it may */
    int pending;          /* windows queued or being read */
};

/* The cache's budget: URAID_READAHEAD (MiB, 0 turns it off) or
 * RA_DEFAULT_MIB. ra_create allocates only the bookkeeping; NULL on ENOMEM
 * (reads then go without read-ahead). */
#define RA_DEFAULT_MIB 256
struct array_ra *ra_create(struct uraid_array *a);
/* Stops the read-ahead thread and frees the cache (before the I/O engine goes). */
void ra_destroy(struct array_ra *ra);
/* Budget in bytes (0: off); drops what is cached beyond it. */
void ra_set_budget(struct array_ra *ra, size_t bytes);
/* 1: read streams ahead whatever the members (as when URAID_READAHEAD is
 * given); 0: only when a member seeks (struct member's seeks, the default). */
void ra_set_any_member(struct array_ra *ra, int on);
void ra_get_stats(struct array_ra *ra, struct ra_stats *st);
/* Every cached window dropped (a level change with no request in flight:
 * another level's writes do not count as this one's stripes). */
void ra_forget(struct array_ra *ra);
/* Streams active at once before any is read ahead: 2 (a lone stream has no
 * seeks to amortise); tests set 1. */
void ra_set_min_streams(struct array_ra *ra, int n);

/* uraid_read's path for a plain (not reshaping) array, geom_lock held for
 * reading: array_read_plain, with the read-ahead where it applies. */
int array_read_ra(struct uraid_array *a, void *buf, size_t len, uint64_t offset);

#endif
