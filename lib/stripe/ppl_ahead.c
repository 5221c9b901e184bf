/* Whole stripes logged ahead (ppl_int.h). A stream of whole-stripe writes
 * pays a log write and its flush per unit, before its data; a bitmap pays
 * a write per bitmap chunk. So a unit of whole stripes, consecutive, on a
 * healthy array also lists the next stripes whole (entries only, no
 * partial parity: replay rewrites their parity from the data, right
 * whatever the data are, so listing a stripe nobody writes costs replay
 * time only). The units that follow and write only stripes a header on
 * disk lists that way need no log write: they pin the part that lists
 * them, so it stays listed while they write and lingers after them until
 * flushes cover their writes too (ppl_flush.c), as if its own unit had
 * written them. A pinned part never leaves the list: the area's restart
 * waits for its pins, and a part with partial parity of one of its
 * stripes gets its writes flushed before that part's header (ppl_sweep).
 * A stripe is not covered while a part with partial parity of it is in
 * the list, nor while the newest header on disk may still list one that
 * left (ppl_member's left_* spans): replay, which walks a header's entries
 * in order, could apply that stale partial parity after the whole entry
 * and undo what the covered write made of the stripe's parity. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "stripe/ppl_int.h"

int ppl_ahead_count(int taken)
{
    int n = 12 * taken;
    return n < 32 ? 32 : n > PPL_AHEAD_MAX ? PPL_AHEAD_MAX : n;
}

struct ppl_part **ppl_link_of(struct ppl_member *m, const struct ppl_part *part)
{
    for (struct ppl_part **pp = &m->inflight; *pp; pp = &(*pp)->next)
        if (*pp == part)
            return pp;
    return NULL;
}

static void span_add(struct ppl_span *sp, uint64_t lo, uint64_t hi)
{
    if (!sp->end || lo < sp->lo)
        sp->lo = lo;
    if (hi + 1 > sp->end)
        sp->end = hi + 1;
}

static int span_meets(const struct ppl_span *sp, uint64_t lo, uint64_t hi)
{
    return sp->end && lo < sp->end && sp->lo <= hi;
}

/* A part of m's list on disk listing p's stripes whole, or NULL. Under
 * m->list_mu. Otherwise *coming says whether one is on its way (listed,
 * its unit's log writes not all done): its header will cover p once
 * written. */
static struct ppl_part *lister(const struct ppl_member *m, const struct ppl_part *p, int *coming)
{
    struct ppl_part *found = NULL;
    *coming = 0;
    if (m->wrapping || span_meets(&m->left_new, p->s_lo, p->s_hi) || span_meets(&m->left_writing, p->s_lo, p->s_hi) ||
        span_meets(&m->left_disk, p->s_lo, p->s_hi))
        return NULL;
    for (struct ppl_part *c = m->inflight; c; c = c->next) {
        /* a part with partial parity of these stripes must leave first
         * (ppl_sweep, before a header): replayed after the lister it
         * would take the data these writes overwrite as current */
        if (c->pp_bytes && c->la_lo <= p->s_hi && p->s_lo <= c->la_hi)
            return NULL;
        if (found || !c->ahead || c->la_lo > p->s_lo || p->s_hi > c->la_hi)
            continue;
        if (c->out && c->seq <= m->written_seq)
            found = c;
        else
            *coming = 1;
    }
    return found;
}

/* How long a unit waits for a lister's header on its way, at most: about
 * a far member's round trip. A header in flight usually lands sooner than
 * the unit's own would: its log write waits for that one first. */
#define COMING_WAIT_NS 20000000ull

/* lister, waiting (m->list_mu held) while one is only on its way. */
static struct ppl_part *lister_wait(struct ppl_log *L, struct ppl_member *m, const struct ppl_part *p)
{
    int coming;
    struct ppl_part *c = lister(m, p, &coming);
    if (c || !coming)
        return c;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + COMING_WAIT_NS;
    until.tv_sec += (time_t)(ns / 1000000000ull);
    until.tv_nsec = (long)(ns % 1000000000ull);
    __atomic_add_fetch(&L->waiting, 1, __ATOMIC_ACQ_REL);
    while (!c && coming && pthread_cond_timedwait(&m->departed, &m->list_mu, &until) == 0)
        c = lister(m, p, &coming);
    __atomic_sub_fetch(&L->waiting, 1, __ATOMIC_ACQ_REL);
    c = c ? c : lister(m, p, &coming);
    if (c)
        __atomic_add_fetch(&L->units_waited, 1, __ATOMIC_RELAXED);
    return c;
}

void ppl_left_part(struct ppl_member *m, const struct ppl_part *p)
{
    if (p->pp_bytes)
        span_add(&m->left_new, p->la_lo, p->la_hi);
}

void ppl_left_composed(struct ppl_member *m)
{
    m->left_writing = m->left_new;
    m->left_new = (struct ppl_span){0};
}

void ppl_left_written(struct ppl_member *m, int written)
{
    if (written)
        m->left_disk = (struct ppl_span){0};
    else if (m->left_writing.end)
        span_add(&m->left_disk, m->left_writing.lo, m->left_writing.end - 1);
    m->left_writing = (struct ppl_span){0};
}

static void unpin(struct ppl_log *L, struct ppl_unit *u, int add)
{
    for (int i = 0; i < u->npin; i++) {
        struct ppl_member *m = &L->m[u->pin_slot[i]];
        struct ppl_part *c = u->pin[i];
        pthread_mutex_lock(&m->list_mu);
        if (add) {
            c->written |= u->pin_written[i];
            for (int j = 0; j < PPL_MAX_SLOTS; j++)
                if (u->pin_written[i] >> j & 1)
                    c->mark[j] = ppl_flush_mark(L, j);
        }
        c->pins--;
        pthread_cond_broadcast(&m->departed);
        pthread_mutex_unlock(&m->list_mu);
    }
    u->npin = 0;
    /* a part no longer pinned may give its room back to a unit waiting */
    ppl_wake_reservers(L);
}

int ppl_cover(struct ppl_log *L, struct ppl_unit *u)
{
    u->npin = 0;
    if (!u->parts)
        return 0;
    for (struct ppl_part *p = u->parts; p; p = p->unit_next)
        if (p->pp_bytes)
            return 0;
    for (struct ppl_part *p = u->parts; p; p = p->unit_next) {
        struct ppl_member *m = &L->m[p->slot];
        if (!p->written)
            continue; /* a log of stripes ahead only */
        pthread_mutex_lock(&m->list_mu);
        struct ppl_part *c = u->npin < PPL_UNIT_PINS ? lister_wait(L, m, p) : NULL;
        if (c) {
            c->pins++;
            c->idle = 0;
            u->pin[u->npin] = c;
            u->pin_slot[u->npin] = p->slot;
            u->pin_written[u->npin++] = p->written;
        }
        pthread_mutex_unlock(&m->list_mu);
        if (!c) {
            unpin(L, u, 0);
            return 0;
        }
    }
    for (struct ppl_part *p = u->parts, *nx; p; p = nx) {
        nx = p->unit_next;
        free(p);
    }
    u->parts = NULL;
    u->held = 0;
    return 1;
}

void ppl_uncover(struct ppl_log *L, struct ppl_unit *u)
{
    if (u->npin)
        unpin(L, u, 1);
}
