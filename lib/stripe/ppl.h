/* md's partial parity log at run time (RAID-5, consistency policy ppl;
 * format in lib/meta/ppl.h, docs/FORMAT.md "PPL").
 *
 * Every write that changes data (user writes, whole-stripe zeroing) is
 * logged on the PPL area of its stripe's parity member before its data
 * and parity go out, as md's raid5-ppl.c does:
 *
 *   ppl_begin  the group's entries (and the partial parity of the rows a
 *              write leaves alone: P ^ the new blocks, which is the XOR of
 *              the untouched blocks) go out in one write per parity
 *              member, each with FUA, together with the entries of every
 *              other unit still in flight on that member
 *   (the caller's data and parity writes)
 *   ppl_end    the unit leaves the logs; the members it wrote are flushed
 *              before a header that no longer lists it goes out (a power
 *              cut must not leave an unflushed write that no log covers),
 *              by the flusher thread as soon as the unit ends
 *
 * Each log write goes after the previous one in the area (md's chain of
 * headers; a torn one leaves the one before it whole): md replays only a
 * log's newest header, so each header lists every unit in flight on its
 * member. On a degraded array a modified block of the missing member
 * lives in parity only; its new data goes into the entry's partial parity
 * ("folded", lib/meta/ppl.h). At open, a dirty array's logs are replayed
 * the way md's ppl_recover does: each entry's parity rewritten as partial
 * parity ^ the modified blocks as they are now (a folded block left out). */
#ifndef URAID_STRIPE_PPL_H
#define URAID_STRIPE_PPL_H

#include <stddef.h>
#include <stdint.h>

#include "stripe/stripe.h"
#include "meta/superblock.h"

struct uraid_array;
struct ppl_log;

/* 0 when sb's array can keep a PPL with uraid, else -EOPNOTSUPP/-EINVAL
 * and a reason: RAID-5, at most 64 members (md's limit), an area that
 * holds a header and a whole chunk of partial parity. */
int ppl_supported(const struct md_sb *sb, char *why, size_t whylen);

/* The run-time log of an array whose superblock has feature PPL (a->ppl
 * stays NULL otherwise). 0 or a negative errno with a reason. */
int ppl_open(struct uraid_array *a, char *why, size_t whylen);
void ppl_close(struct uraid_array *a);

/* One planned stripe as the log needs it: data sectors [r0, r1) of the
 * stripe written, its rows (new blocks and P in place) or NULL for a
 * whole stripe written with nothing computed (zeroing). */
struct ppl_stripe {
    uint64_t stripe;
    uint64_t r0, r1;
    const struct stripe_rows *r;
};

struct ppl_part;
#define PPL_UNIT_PINS 64
struct ppl_unit {
    uint64_t held;            /* raid slots whose log lists this unit */
    struct ppl_part *parts;   /* its entries there, until ppl_end */
    int reserved;
    /* a unit written without a log write: the parts that list its stripes */
    int npin;
    struct ppl_part *pin[PPL_UNIT_PINS];
    int pin_slot[PPL_UNIT_PINS];
    uint64_t pin_written[PPL_UNIT_PINS];
};

/* Logs the longest prefix of ps[0..n-1] that fits one log per parity
 * member (at least one stripe) and returns its length; the unit's entries
 * stay in those logs until ppl_end. A negative errno when a log write
 * fails (nothing is left held). */
int ppl_begin(struct uraid_array *a, const struct ppl_stripe *ps, int n, struct ppl_unit *u);
void ppl_end(struct uraid_array *a, struct ppl_unit *u);

/* Empties every present member's log (the area zeroed, an empty header),
 * as md and mdadm do before first use; flushed. */
int ppl_clear_all(struct uraid_array *a);

/* Replays a dirty array's logs. With apply 0 only reads and checks them.
 * *mismatch counts headers and entries that fail their checksums or do not
 * fit the array (md's mismatch_count); *recovered the entries replayed
 * (or, without apply, that would be). */
int ppl_replay(struct uraid_array *a, int apply, int *mismatch, int *recovered);

#endif
