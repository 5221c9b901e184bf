/* The stripe layer: the one path by which every request and every job
 * (resync, recovery, replace, check, repair) reads, rebuilds, computes and
 * writes a stripe, as md's raid5.c handles stripes for all of them.
 *
 *   locks.c   stripe locks (with a seqlock count) and the write method choice
 *   rows.c    a stripe's rows gathered: read what can be read, rebuild the
 *             rest, 4 KiB row group by row group when the whole range cannot
 *   write.c   a group of stripes written: plan (full / RMW / RCW / rebuild),
 *             reads, parity, writes; user writes and resync both go through it
 *   batch.c   jobs' batches: one read per member for a run of stripes, then
 *             each stripe's rows in place
 *   pool.c    the array's workers, that share the CPU work of a batch
 *   gather.c  partial stripes of sequential streams kept and completed into
 *             whole ones (answered at once; flushes and reads settle them)
 *   cache.c   recently written partial stripes' blocks, while unchanged
 *
 * Callers hold the stripes' locks for everything but the lock functions. */
#ifndef URAID_STRIPE_H
#define URAID_STRIPE_H

#include <pthread.h>
#include <stdint.h>

#include "io/engine.h"
#include "layout.h"
#include "uraid.h"

struct uraid_array;

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
    int rmw_level;                    /* URAID_RMW_*: md's rmw_level */
    const unsigned char *cached;      /* [m] member m's block needs no read (stripe/cache.c); may be NULL */
};

/* md's rule (reference section 3): count the member reads each method needs
 * (an unavailable block makes a method impossible), pick RMW only when it
 * needs strictly fewer reads, RCW on a tie (rmw_level 1); RMW on a tie too
 * (rmw_level 2); never RMW (rmw_level 0: RCW, or REBUILD when RCW cannot
 * run). *reads gets the chosen count. */
enum write_method write_choose(const struct write_choice_in *in, int *reads);

/* ---- a stripe's rows (rows.c) ----------------------------------------------------- */

/* Rows [row, row + nrows) of one stripe, one buffer per member slot. */
struct stripe_rows {
    uint64_t stripe;
    uint32_t row, nrows;
    struct stripe_map map;
    uint8_t *block[URAID_MAX_MEMBERS];
    unsigned char unavailable[URAID_MAX_MEMBERS];
};

/* The fallback unit: 4 KiB of rows, md's page (and mismatch_cnt's unit). */
#define STRIPE_PAGE_ROWS 8u

/* Marks the slots that cannot serve these rows: not in sync (or rebuilt
 * not far enough), or listed in their bad-block log. */
void rows_mark_unavailable(struct uraid_array *a, struct stripe_rows *r);

/* Reads every available slot's rows (one batch) except those in have[]
 * (may be NULL), marks the ones that fail unavailable (and in failed[], may
 * be NULL), and rebuilds every unavailable slot's rows from the rest.
 * zero is an all-zero block of nrows (used by DDF layouts only). -EIO when
 * more blocks are lost than the level survives. */
int rows_read_and_rebuild(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero, unsigned char *failed,
                          const unsigned char *have);

/* What became of one range of rows: rc 0 when every block is present
 * (failed[m]: member m's read failed there and its rows were rebuilt), or
 * -EIO when more were lost than the level survives. */
typedef void (*rows_outcome_fn)(void *ctx, struct stripe_rows *r, int rc, const unsigned char *failed);

/* rows_read_and_rebuild, and when the range as a whole has more blocks
 * lost than the level survives (errors on different members in different
 * rows), each 4 KiB row group read and rebuilt on its own (availability
 * judged again per group). outcome (may be NULL) hears of every range as it
 * ends; failed (may be NULL) collects every member whose read failed
 * anywhere. Returns 0, or the first range's error. */
int rows_gather(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero, const unsigned char *have,
                unsigned char *failed, rows_outcome_fn outcome, void *ctx);

/* rows_gather without a per-range outcome: -EIO if some group still cannot
 * be rebuilt. */
int rows_rebuild_any(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero, unsigned char *failed,
                     const unsigned char *have);

/* Rebuilds the listed blocks of the rows in place from the others (all
 * read): lost[] are member slots, at most the level's parity count. */
int rows_recover(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero, const int *lost, int nlost);

/* Stripe `stripe` is being written while some slot is not in sync: a
 * failed member's chunk of it is stale from now on. */
void array_note_degraded_write(struct uraid_array *a, uint64_t stripe);

/* One line at ERROR for rows that cannot be rebuilt. */
void rows_log_unrecoverable(struct uraid_array *a, uint64_t stripe, uint32_t row, uint32_t nrows);

/* ---- writes (write.c) -------------------------------------------------------------- */

/* RAID-4/5/6: array sectors [sector, end) written in groups of stripes
 * under their locks. Callers have done the checks and the bitmap
 * (write_request in rw.c). */
int array_write_striped(struct uraid_array *a, const uint8_t *p, uint64_t sector, uint64_t end);
/* The same without gathering partial stripes (gather.c's own writes). */
int array_write_direct(struct uraid_array *a, const uint8_t *p, uint64_t sector, uint64_t end);

/* Makes P and Q agree with the data for member sectors [start, start +
 * nsec) (whole chunks), through the same group path as a write that
 * changes no data: parity regenerated and written. A stripe with a missing
 * data member has nothing to resync on RAID-5; on RAID-6 its data is
 * rebuilt from P and Q rewritten, so both rebuild the same data. */
int array_resync_range(struct uraid_array *a, uint64_t start, uint32_t nsec);

/* ---- jobs' batches (batch.c) -------------------------------------------------------- */

/* Member sectors [start, end) of every slot, member m's at base[m]. */
struct stripe_batch {
    uint64_t start, end;
    uint8_t *base[URAID_MAX_MEMBERS];
    unsigned char readok[URAID_MAX_MEMBERS]; /* its read succeeded */
};

/* Appends the reads of every slot that can serve the whole batch, except
 * where skip[m] (may be NULL), to ops; who[i] gets the slot of ops[i]. */
int stripe_batch_reads(struct uraid_array *a, const struct stripe_batch *b, const unsigned char *skip,
                       struct io_op *ops, int *who);
/* Takes the results of those reads (ops[0..nops-1]) into readok. */
void stripe_batch_results(struct stripe_batch *b, const struct io_op *ops, const int *who, int nops);
/* Both, run as one engine call. */
void stripe_batch_read(struct uraid_array *a, struct stripe_batch *b, const unsigned char *skip);
/* Stripe s's rows within the batch, in place: map, buffers, availability. */
int stripe_batch_rows(struct uraid_array *a, const struct stripe_batch *b, uint64_t s, struct stripe_rows *r);

/* ---- workers (pool.c) --------------------------------------------------------------- */

/* The array's workers for the CPU work of a batch: up to one per
 * processor beside the calling thread, started at the first use and kept
 * until the array closes. */
struct stripe_pool;
struct stripe_pool *stripe_pool_start(void);
void stripe_pool_stop(struct stripe_pool *p);
/* Parts the pool can run at once (its workers and the caller). */
int stripe_pool_parts(const struct stripe_pool *p);
/* Runs fn(part 0..nparts-1) (parts[i] at (char *)parts + i * size), part 0
 * on the caller, and returns when all are done. One batch at a time: a
 * caller that finds the pool busy runs every part itself. */
void stripe_pool_run(struct stripe_pool *p, void (*fn)(void *part), void *parts, size_t size, int nparts);

#endif
