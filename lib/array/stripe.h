/* Stripe planning for the data path: which member blocks a request needs
 * read and written, chosen before any I/O is issued, and the locks that
 * keep two writers off one stripe. */
#ifndef URAID_STRIPE_H
#define URAID_STRIPE_H

#include <pthread.h>
#include <stdint.h>

#include "layout.h"
#include "uraid.h"

/* Writers of one stripe are serialised; different stripes run in parallel.
 * A stripe maps to one of STRIPE_LOCKS mutexes (two stripes sharing one
 * only wait for each other). A request takes its stripes' locks in
 * ascending lock order, so two requests never deadlock. */
#define STRIPE_LOCKS 4096

struct stripe_locks {
    pthread_mutex_t m[STRIPE_LOCKS];
    /* Per lock: odd while a writer changes a stripe under it, +2 per write
     * (a seqlock). A reader that read data chunks without the lock may reuse
     * them under the lock only if the count is even and unchanged since
     * before its reads. */
    uint32_t gen[STRIPE_LOCKS];
};

static inline uint32_t stripe_gen(const struct stripe_locks *l, uint64_t stripe)
{
    return __atomic_load_n(&l->gen[stripe % STRIPE_LOCKS], __ATOMIC_ACQUIRE);
}

/* Called by writers for every lock they hold, before and after changing
 * the stripes' members. */
static inline void stripe_gen_bump(struct stripe_locks *l, const uint16_t *held, int nheld)
{
    for (int i = 0; i < nheld; i++)
        __atomic_add_fetch(&l->gen[held[i]], 1, __ATOMIC_ACQ_REL);
}

void stripe_locks_init(struct stripe_locks *l);
void stripe_locks_destroy(struct stripe_locks *l);
/* Locks the set for stripes[0..n-1]; held[] receives the lock indexes taken
 * (at most n) and the count is returned for stripe_unlock_set. */
int stripe_lock_set(struct stripe_locks *l, const uint64_t *stripes, int n, uint16_t *held);
void stripe_unlock_set(struct stripe_locks *l, const uint16_t *held, int nheld);
/* Every lock, in the same ascending order: no request is between its plan
 * and its member I/O while they are held (used to swap a slot's member). */
void stripe_lock_all(struct stripe_locks *l);
void stripe_unlock_all(struct stripe_locks *l);

/* How a partial-stripe write updates parity. */
enum write_method {
    WRITE_FULL = 0,   /* every data block fully written: no reads */
    WRITE_RMW,        /* read old data of written blocks + P (+Q), apply deltas */
    WRITE_RCW,        /* read the data blocks not fully written, regenerate */
    WRITE_REBUILD,    /* neither is possible with the members available: read
                       * everything readable, rebuild the rest, regenerate */
};

/* Inputs for the choice, per member slot of the stripe (index = member). */
struct write_choice_in {
    int n, k, nparity;
    const struct stripe_map *map;
    const unsigned char *written;     /* [d] data index d gets new data */
    const unsigned char *covered;     /* [d] ... over every row of the range */
    const unsigned char *unavailable; /* [m] member m cannot be read/written */
};

/* md's rule (reference section 3): count the member reads each method needs
 * (an unavailable block makes a method impossible), pick RMW only when it
 * needs strictly fewer reads, RCW on a tie. *reads gets the chosen count. */
enum write_method write_choose(const struct write_choice_in *in, int *reads);

#endif
