/* The run-time PPL's state, shared by its logging (ppl.c), its replay
 * (ppl_replay.c) and the partial P/Q arithmetic (ppl_q.c). Private to
 * lib/stripe. */
#ifndef URAID_STRIPE_PPL_INT_H
#define URAID_STRIPE_PPL_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "stripe/ppl.h"

#define PPL_MAX_SLOTS 64 /* md's limit: a flush bitmap of one unsigned long */

struct ppl_part;

struct ppl_member {
    pthread_mutex_t mu;         /* log writes one at a time, in order; next_off */
    pthread_mutex_t list_mu;    /* the list, link_seq, unflushed; written_seq (changed under both) */
    pthread_cond_t departed;    /* a part left the list, or written_seq grew (under list_mu) */
    struct ppl_part *inflight;  /* parts of units whose member writes are in flight */
    uint64_t link_seq;          /* parts linked so far */
    uint64_t written_seq;       /* every part up to this one is in a header on disk */
    uint64_t next_off;          /* bytes into the area where the next header goes */
    uint64_t unflushed;         /* slots written by parts that left since the last header */
    uint64_t need[PPL_MAX_SLOTS]; /* per slot: the flush (ppl_flush's number) that covers them */
    uint32_t entries;           /* atomic: entries reserved by units in flight */
    uint64_t pp_bytes;          /* atomic: partial parity reserved */
    uint64_t start;             /* the area: member sector and length */
    uint32_t sectors;
    uint64_t room;              /* bytes of partial parity the area holds after its header */
};

struct ppl_log {
    uint32_t signature;
    uint64_t generation;   /* atomic: the last header's */
    int cleared;           /* atomic: the areas were emptied since open */
    pthread_mutex_t clear_mu;
    pthread_mutex_t res_mu;
    pthread_cond_t res_cv; /* room freed in some log */
    int waiters;           /* atomic: units waiting for room */
    uint32_t tag;          /* atomic: RAID-6 units logged since open (PPL_TAG) */
    /* Per slot, atomic: flushes started (each takes the next number) and
     * the highest number of one that succeeded. A write that completed
     * before a flush numbered n started is durable once flushed >= n. */
    uint64_t flush_started[PPL_MAX_SLOTS];
    uint64_t flushed[PPL_MAX_SLOTS];
    struct ppl_member m[PPL_MAX_SLOTS];
};

/* Flushes of the slots in mask, at once (ppl_flush.c); memory-backed
 * members have nothing to flush. res[s] gets each slot's result when res
 * is not NULL. 0 or the first failure. */
int ppl_flush(struct uraid_array *a, uint64_t mask, int *res);
/* The number a flush of slot s must reach to cover the writes completed
 * so far (under the caller's list_mu: ppl_end records it in need[s]). */
uint64_t ppl_flush_mark(const struct ppl_log *L, int s);
/* The slots of m->unflushed whose writes no flush has covered yet. */
uint64_t ppl_flush_todo(const struct ppl_log *L, const struct ppl_member *m);

/* RAID-6 logs (which md never reads: bit 31 makes it refuse the array)
 * carry in bits 8..31 of each entry's parity_disk a tag of the unit that
 * wrote it, the same in P's and Q's log: replay pairs a folded entry with
 * the other parity's entry of the same write, not of an earlier write of
 * the same rows. Bits 0..7 are the slot. */
#define PPL_SLOT_MASK 0xffu
#define PPL_TAG_SHIFT 8

/* Partial parity both ways (ppl_q.c). Over n blocks blk[j] of len bytes
 * whose Q coefficients are g^slots[j] (md's order: the layout's q_slot):
 *   *pp = P ^ XOR of the blocks              (pp may be NULL)
 *   *pq = Q ^ sum of g^slots[j] * blk[j]     (pq may be NULL)
 * in GF(2^8) with Q's polynomial. With the new parity and the new blocks
 * a write modifies, that is the partial parity of the blocks it leaves
 * alone; with a partial parity and the modified blocks as they are now,
 * it is the parity replay writes. n may be 0 (copies). len at most 1 MiB
 * (a PPL area). 0 or a negative errno. */
int ppl_partial_pq(const uint8_t *P, const uint8_t *Q, int n, const int *slots, const uint8_t *const *blk,
                   size_t len, uint8_t *pp, uint8_t *pq);

#endif
