/* Recently written stripes' blocks, valid while their seqlock count is
 * unchanged (cache.c). Every call is made under the stripe's lock. */
#ifndef URAID_STRIPE_CACHE_H
#define URAID_STRIPE_CACHE_H

#include <stdint.h>

#include "stripe/stripe.h"

struct stripe_cache;

struct stripe_cache_stats {
    uint64_t stored; /* stripes stored after their write */
    uint64_t hits;   /* member reads served from the cache */
};

/* The array's cache (made at the first use), or NULL: not RAID-4/5/6,
 * URAID_STRIPE_CACHE=0, a reshape since the open, or no memory. */
struct stripe_cache *stripe_cache_of(struct uraid_array *a);
void stripe_cache_destroy(struct stripe_cache *c);
/* Forgets every entry and the counts (tests that count member reads). */
void stripe_cache_clear(struct stripe_cache *c);
void stripe_cache_stats(struct stripe_cache *c, struct stripe_cache_stats *out);

/* After r's write, with the count still odd: the blocks known[m] (by
 * member slot) as written or read, for r's rows; gen is the count the
 * writer's last bump will leave. */
void stripe_cache_store(struct stripe_cache *c, const struct uraid_array *a, const struct stripe_rows *r,
                        const unsigned char *known, uint32_t gen);
/* While planning (before the writer's first bump): known[m] = 1 where
 * member m's block of r's rows would come from the cache. */
void stripe_cache_known(struct stripe_cache *c, const struct uraid_array *a, const struct stripe_rows *r,
                        unsigned char *known);
/* During the writer's reads (after its first bump): member m's block of
 * r's rows copied to dst from the cache; 1 if it was there, else 0. */
int stripe_cache_read(struct stripe_cache *c, const struct uraid_array *a, const struct stripe_rows *r, int m,
                      void *dst);

#endif
