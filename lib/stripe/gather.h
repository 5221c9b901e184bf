/* Partial-stripe writes of sequential streams gathered into whole stripes
 * (gather.c). */
#ifndef URAID_STRIPE_GATHER_H
#define URAID_STRIPE_GATHER_H

#include <stdint.h>

struct uraid_array;
struct stripe_gather;

struct gather_stats {
    uint64_t waits;      /* entries opened by a piece that then waited */
    uint64_t joined;     /* pieces that joined an open entry */
    uint64_t whole;      /* entries written as whole stripes */
    uint64_t timeouts;   /* entries written in their pieces (time ran out, or a flush) */
    uint64_t kicked;     /* flushes that cut waits short */
    uint64_t backed_off; /* pieces of a stream let through because its gathers kept timing out */
};

/* NULL when gathering does not apply (not RAID-4/5/6, URAID_GATHER_US=0,
 * a stripe wider than 16 MiB) or memory is short. */
struct stripe_gather *gather_create(struct uraid_array *a);
void gather_destroy(struct stripe_gather *g);
/* The stripe width it was made for: the geometry a reshape changes. */
uint32_t gather_stripe_sectors(const struct stripe_gather *g);
/* A user write of array sectors [sector, end) from p, its partial stripes
 * gathered where a stream's other pieces may complete them. */
int gather_write(struct uraid_array *a, struct stripe_gather *g, const uint8_t *p, uint64_t sector, uint64_t end);
/* A flush: every open gather written now. */
void gather_kick(struct stripe_gather *g);
void gather_stats(struct stripe_gather *g, struct gather_stats *out);

#endif
