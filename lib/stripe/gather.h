/* Partial-stripe writes of sequential streams gathered into whole stripes
 * (gather.c). */
#ifndef URAID_STRIPE_GATHER_H
#define URAID_STRIPE_GATHER_H

#include <stdint.h>

struct uraid_array;
struct stripe_gather;

struct gather_stats {
    uint64_t kept;       /* stripes opened by a piece (held or answered at once) */
    uint64_t joined;     /* pieces that joined an open stripe */
    uint64_t whole;      /* stripes completed and written whole */
    uint64_t timeouts;   /* stripes written in their pieces: their time ran out (held: or no company) */
    uint64_t settled;    /* stripes written early: a read of them, a flush, a write that does not gather */
    uint64_t backed_off; /* pieces of a stream let through because its stripes kept timing out */
    uint64_t drained;    /* stripes written at once because a member failed */
    uint64_t open;       /* stripes open now */
};

/* NULL when gathering does not apply (not RAID-4/5/6, URAID_GATHER_US=0,
 * or unset with URAID_GATHER_HOLD_US=0,
 * read-only, a stripe wider than 16 MiB) or memory is short. */
struct stripe_gather *gather_create(struct uraid_array *a);
/* Writes what is still open, stops the table's thread. */
void gather_destroy(struct stripe_gather *g);
/* The stripe width it was made for: the geometry a reshape changes. */
uint32_t gather_stripe_sectors(const struct stripe_gather *g);
/* A user write of array sectors [sector, end) from p (geom_lock held for
 * reading): its partial stripes kept where the stream's next request may
 * complete them, the rest written. */
int gather_write(struct uraid_array *a, struct stripe_gather *g, const uint8_t *p, uint64_t sector, uint64_t end);
/* Before a read or a write that does not gather of array sectors [sector,
 * end) (geom_lock held for reading): the open stripes there written, and
 * those being written waited for. g may be NULL. */
int gather_settle(struct stripe_gather *g, uint64_t sector, uint64_t end);
/* Before a flush (geom_lock held): every open stripe written; the first
 * error of a kept stripe's write since the last flush. g may be NULL. */
int gather_flush(struct stripe_gather *g);
/* A member failed (array_member_failed): the table's thread writes every
 * open stripe now if the array cannot lose another. g may be NULL. */
void gather_kick(struct stripe_gather *g);
/* A user write left uraid_write: held pieces waiting for company look
 * again whether any other write is in flight. g may be NULL. */
void gather_write_left(struct stripe_gather *g);
/* Tests only: a stream's pieces are held whether or not another of its
 * requests is in flight, and wait for their time even when no other write
 * is (so counts do not depend on when threads arrive). */
extern int gather_test_patient;
/* 1 while this thread writes a kept stripe (its write must not gather). */
int gather_bypassed(void);
void gather_stats(struct stripe_gather *g, struct gather_stats *out);

/* rw.c: a user write with geom_lock already held (a reshape's split too). */
int array_write_locked(struct uraid_array *a, const uint8_t *buf, size_t len, uint64_t offset);

#endif
