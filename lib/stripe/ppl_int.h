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

#include "meta/ppl.h"

/* One unit's share of one member's log: its entries and their partial
 * parity, kept while the unit's member writes are in flight. Every header
 * written on that member meanwhile repeats them (md replays only a log's
 * newest header), so writers on one parity member overlap: each holds
 * the member's log only for its own log write. A part without partial
 * parity (whole stripes written) may stay listed after its unit finished
 * ("lingering", ppl_flush.c) until flushes cover its writes. */
struct ppl_part {
    struct ppl_part *next;       /* the member's parts in flight */
    struct ppl_part *unit_next;  /* the unit's other parts */
    int slot;
    int lingering;               /* its unit has finished; mark[] says which flushes cover it */
    int out;                     /* its unit's logs are all written, so its member writes may be
                                  * out (under list_mu): the area's restart waits only for these */
    uint64_t seq;                /* its place in the member's list */
    uint32_t nentries;
    uint64_t pp_bytes;
    uint64_t written;            /* slots the unit's stripes write */
    uint64_t s_lo, s_hi;         /* its unit's stripes lie in [s_lo, s_hi] */
    uint64_t la_lo, la_hi;       /* its entries' stripes (with those logged ahead) lie in [la_lo, la_hi] */
    int ahead;                   /* every stripe of [la_lo, la_hi] with its parity here is listed, whole */
    int idle;                    /* lingering, covered: headers composed since a unit last pinned it */
    int pins;                    /* units whose stripes it lists write now without a log write (ppl_ahead.c) */
    uint64_t mark[PPL_MAX_SLOTS]; /* lingering: per written slot, ppl_flush_mark when its unit finished */
    uint8_t *folded;             /* 2 per entry (ppl_header.folded, folded2), after e[] */
    uint8_t *pp;                 /* pp_bytes, after folded[] */
    struct ppl_entry e[];
};

/* Stripes [lo, end); end 0: none. */
struct ppl_span {
    uint64_t lo, end;
};

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
    uint32_t lingering;         /* entries of lingering parts in the list */
    int wrapping;               /* writers waiting for the area to start over (claim_log) */
    int restarting;             /* a header at the area's start is being written (under list_mu):
                                 * no unit goes out meanwhile (ppl_log.c, parts_out) */
    /* Stripes of parts with partial parity that left the list while the
     * newest header on disk may still list them: replay would apply that
     * partial parity after the entries before it, so no write of those
     * stripes goes out without a log write (ppl_ahead.c's lister) until a
     * header composed after they left is on disk. Under list_mu:
     *   left_new      left since the last header was composed (ppl_end);
     *   left_writing  left before the header being written was composed
     *                 (moved there by prepare_header);
     *   left_disk     listed by the newest header on disk: emptied when a
     *                 header is written (finish_header), left_writing
     *                 added to it when that write fails. */
    struct ppl_span left_new, left_writing, left_disk;
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
    uint64_t units_logged, units_covered, units_pp; /* atomic: units since open that wrote a header (of
                                                     * them, with partial parity) or were covered ahead */
    uint64_t units_waited; /* atomic: waits for a lister's header on its way that found it on disk
                            * (one per log: a RAID-6 unit may wait in two) */
    int waiting;           /* atomic: units waiting so now (uraid -v does not show it; tests watch it) */
    /* Per slot, atomic: flushes started (each takes the next number) and
     * the highest number of one that succeeded. A write that completed
     * before a flush numbered n started is durable once flushed >= n. */
    uint64_t flush_started[PPL_MAX_SLOTS];
    uint64_t flushed[PPL_MAX_SLOTS];
    uint64_t flush_ended[PPL_MAX_SLOTS]; /* atomic: the highest number of one that ended, either way */
    /* The flusher (ppl_flush.c): a thread that flushes the members a unit
     * wrote as soon as it ends, so that the next header on its logs finds
     * them flushed, or a flush in flight to wait for, instead of paying
     * the flush itself. */
    pthread_mutex_t fl_mu;
    pthread_cond_t fl_work;     /* fl_pending set, or fl_state stopping */
    pthread_cond_t fl_ended;    /* a flush ended (when fl_waiters) */
    uint64_t fl_pending;        /* slots to flush, under fl_mu */
    int fl_waiters;             /* atomic: threads waiting for a flush in flight */
    int fl_state;               /* under fl_mu: 0 not started, 1 running, 2 stopping, -1 could not start */
    pthread_t flusher;
    struct uraid_array *a;
    struct ppl_member m[PPL_MAX_SLOTS];
};

/* The unit's parts linked into their logs and every log that does not
 * list them yet written (ppl_log.c), before any member write of the unit;
 * then its writes may go out. 0 or a negative errno (the logs it could
 * not write are let go; ppl_end takes its parts out). */
int ppl_write_logs(struct uraid_array *a, struct ppl_unit *u);

/* Flushes of the slots in mask, at once (ppl_flush.c); memory-backed
 * members have nothing to flush. res[s] gets each slot's result when res
 * is not NULL. 0 or the first failure. */
int ppl_flush(struct uraid_array *a, uint64_t mask, int *res);
/* The number a flush of slot s must reach to cover the writes completed
 * so far (under the caller's list_mu: ppl_end records it in need[s]); 0
 * for a member that needs no flush (memory-backed, or write-through). */
uint64_t ppl_flush_mark(const struct ppl_log *L, int s);
/* The slots of m->unflushed whose writes no flush has covered yet; each
 * one's m->need raised into need[] (the flush number that covers it). */
uint64_t ppl_flush_todo(const struct ppl_log *L, const struct ppl_member *m, uint64_t *need);
/* Before a header: the slots of todo flushed so that a flush numbered at
 * least need[s] has succeeded on each; a flush in flight that will do
 * (the flusher's, another header's) is waited for, not issued again. A
 * failed flush is logged (it fails its member elsewhere). */
void ppl_flush_departed(struct uraid_array *a, uint64_t todo, const uint64_t *need);
/* A unit that wrote the slots of mask ended: the flusher flushes them. */
void ppl_flush_kick(struct uraid_array *a, uint64_t mask);
/* Stops the flusher (ppl_close). */
void ppl_flusher_stop(struct ppl_log *L);

/* Under m->list_mu, when part p's unit finishes: 1 when p stays listed
 * (lingering), 0 when it is to leave the list as usual. Parts kept after
 * their writes were covered may leave for it onto *gone (for
 * ppl_free_swept once list_mu is let go). */
int ppl_linger(struct ppl_log *L, struct ppl_member *m, struct ppl_part *p, struct ppl_part **gone);
/* Under m->list_mu: lingering parts leave the list onto *gone, those
 * whose writes flushes have covered since, and (all set) every other one,
 * or those whose stripes a part not on disk yet rewrites with partial
 * parity (which takes their writes as durable): their slots then go to
 * m->unflushed, flushed before the next header. */
void ppl_sweep(const struct ppl_log *L, struct ppl_member *m, int all, struct ppl_part **gone);
/* Room was given back in some log: units waiting for room look again. */
void ppl_wake_reservers(struct ppl_log *L);
/* The parts ppl_sweep took from slot s's list freed, their room in the
 * log given back. */
void ppl_free_swept(struct ppl_log *L, int s, struct ppl_part *gone);
/* Under m->list_mu: part p, its unit finished, kept listed because units
 * it covers still write (p->pins). */
void ppl_linger_pinned(struct ppl_log *L, struct ppl_member *m, struct ppl_part *p);

/* Whole stripes logged ahead (ppl_ahead.c). A unit whose parts (not linked
 * yet) have no partial parity and whose stripes a part on disk already
 * lists whole, in every log the unit needs, writes without a log write:
 * those parts are pinned for it and its own freed. 1 when so, else 0. */
int ppl_cover(struct ppl_log *L, struct ppl_unit *u);
/* At the end of a covered unit: its writes are added to the pinned parts'
 * (which stay listed until flushes cover them), the pins let go. */
void ppl_uncover(struct ppl_log *L, struct ppl_unit *u);
/* Stripes logged ahead of a unit of `taken` whole stripes (a stream): how
 * many, at most PPL_AHEAD_MAX. */
int ppl_ahead_count(int taken);
/* Where m's list links to part (the pointer to rewrite to unlink it), or
 * NULL when it is not in the list. Under m->list_mu. */
struct ppl_part **ppl_link_of(struct ppl_member *m, const struct ppl_part *part);
#define PPL_AHEAD_MAX 96

/* The left_* spans (ppl_member), under list_mu: part p leaves the list
 * (its unit ended); a header was composed (the parts that left are not in
 * it); the header composed last was written, or not. */
void ppl_left_part(struct ppl_member *m, const struct ppl_part *p);
void ppl_left_composed(struct ppl_member *m);
void ppl_left_written(struct ppl_member *m, int written);

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
