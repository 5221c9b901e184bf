/* The PPL's member flushes (ppl_int.h): run at once, and counted, so that
 * a header need not flush again a member whose writes a flush started
 * since (another unit's log flush, most often) has made durable.
 *
 * Lingering parts. A unit that leaves a log must have its member writes
 * flushed before a header that no longer lists it goes out. A part
 * without partial parity (whole stripes: replay rewrites their parity
 * from the data, whatever state a power cut left the data in) need not
 * leave: it stays listed in the headers that follow, at no cost (entries
 * only, no partial parity), and leaves once flushes that other log writes
 * issue anyway have covered its writes. So a stream of whole-stripe
 * writes does not flush every member before each log write. Once
 * covered, a part that lists stripes ahead stays a few headers more while
 * no unit pins it (LINGER_IDLE_HEADERS), so the units after it find it,
 * unless a part just ended needs its room. It must
 * leave, its members flushed first, before a part with partial parity of
 * one of its stripes is written (that partial parity takes its data as
 * durable; replay in header order could otherwise end with it), when the
 * area must start over, and when a unit waits for room in the log. */
#include <errno.h>
#include <stdlib.h>

#include "array/dataio.h"
#include "log.h"
#include "stripe/ppl_int.h"

/* Memory-backed members have nothing to flush, and a member without a
 * volatile write cache keeps every completed write: md flushes only the
 * members whose queue says "write back". */
static int needs_flush(const struct member *dev)
{
    return !dev->inline_io && !dev->write_through;
}

uint64_t ppl_flush_mark(const struct ppl_log *L, int s)
{
    /* 0: every flush count covers it (nothing to flush on that member) */
    const struct member *dev = __atomic_load_n(&L->a->slot[s].dev, __ATOMIC_ACQUIRE);
    if (dev && !needs_flush(dev))
        return 0;
    return __atomic_load_n(&L->flush_started[s], __ATOMIC_ACQUIRE) + 1;
}

uint64_t ppl_flush_todo(const struct ppl_log *L, const struct ppl_member *m, uint64_t *need)
{
    uint64_t todo = 0;
    for (int s = 0; s < PPL_MAX_SLOTS; s++)
        if ((m->unflushed >> s & 1) && __atomic_load_n(&L->flushed[s], __ATOMIC_ACQUIRE) < m->need[s]) {
            todo |= 1ull << s;
            need[s] = need[s] > m->need[s] ? need[s] : m->need[s];
        }
    return todo;
}

static void raise_to(uint64_t *v, uint64_t n)
{
    uint64_t cur = __atomic_load_n(v, __ATOMIC_ACQUIRE);
    while (cur < n && !__atomic_compare_exchange_n(v, &cur, n, 0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE))
        ;
}

int ppl_flush(struct uraid_array *a, uint64_t mask, int *res)
{
    struct ppl_log *L = a->ppl;
    struct io_op ops[PPL_MAX_SLOTS];
    int slot[PPL_MAX_SLOTS];
    uint64_t num[PPL_MAX_SLOTS];
    int n = 0, rc = 0;
    for (int s = 0; s < PPL_MAX_SLOTS && mask >> s; s++) {
        if (!(mask >> s & 1))
            continue;
        if (res)
            res[s] = 0;
        struct member *dev = __atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE);
        if (!dev || !slot_ok(a, s) || !needs_flush(dev))
            continue;
        num[n] = __atomic_add_fetch(&L->flush_started[s], 1, __ATOMIC_ACQ_REL);
        slot[n] = s;
        ops[n++] = (struct io_op){.m = dev, .kind = IO_FLUSH};
    }
    if (n == 1)
        ops[0].result = member_flush(ops[0].m);
    else if (n)
        io_engine_run(a->io, ops, n);
    for (int i = 0; i < n; i++) {
        if (ops[i].result == 0)
            raise_to(&L->flushed[slot[i]], num[i]);
        else if (!rc)
            rc = ops[i].result;
        raise_to(&L->flush_ended[slot[i]], num[i]);
        if (res)
            res[slot[i]] = ops[i].result;
    }
    /* seq_cst against in_flight's waiter: it counts itself, then looks */
    if (n && __atomic_load_n(&L->fl_waiters, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&L->fl_mu);
        pthread_cond_broadcast(&L->fl_ended);
        pthread_mutex_unlock(&L->fl_mu);
    }
    return rc;
}

/* A flush numbered need or later started on s and has not ended: its
 * result will say whether s's writes are covered. */
static int in_flight(const struct ppl_log *L, int s, uint64_t need)
{
    return __atomic_load_n(&L->flush_started[s], __ATOMIC_SEQ_CST) >= need &&
           __atomic_load_n(&L->flush_ended[s], __ATOMIC_SEQ_CST) < need;
}

void ppl_flush_departed(struct uraid_array *a, uint64_t todo, const uint64_t *need)
{
    struct ppl_log *L = a->ppl;
    uint64_t wait = 0, left = 0;
    int res[PPL_MAX_SLOTS];
    for (int s = 0; s < PPL_MAX_SLOTS && todo >> s; s++)
        if ((todo >> s & 1) && in_flight(L, s, need[s]))
            wait |= 1ull << s;
    if (wait) {
        __atomic_add_fetch(&L->fl_waiters, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_lock(&L->fl_mu);
        for (int s = 0; s < PPL_MAX_SLOTS && wait >> s; s++)
            while ((wait >> s & 1) && in_flight(L, s, need[s]))
                pthread_cond_wait(&L->fl_ended, &L->fl_mu);
        pthread_mutex_unlock(&L->fl_mu);
        __atomic_sub_fetch(&L->fl_waiters, 1, __ATOMIC_ACQ_REL);
    }
    /* what no flush has covered (also after one that failed) is flushed now */
    for (int s = 0; s < PPL_MAX_SLOTS && todo >> s; s++)
        if ((todo >> s & 1) && __atomic_load_n(&L->flushed[s], __ATOMIC_ACQUIRE) < need[s])
            left |= 1ull << s;
    if (!left || ppl_flush(a, left, res) == 0)
        return;
    for (int j = 0; j < PPL_MAX_SLOTS; j++)
        if ((left >> j & 1) && res[j])
            uraid_log(URAID_LOG_WARN, "member %s: flush failed before its PPL was rewritten: %s",
                      a->slot[j].dev ? a->slot[j].dev->path : "(missing)", uraid_strerror(res[j]));
}

/* ---- the flusher ------------------------------------------------------------------- */

static void *flusher_main(void *arg)
{
    struct ppl_log *L = arg;
    pthread_mutex_lock(&L->fl_mu);
    for (;;) {
        while (!L->fl_pending && L->fl_state == 1)
            pthread_cond_wait(&L->fl_work, &L->fl_mu);
        if (L->fl_state != 1)
            break;
        uint64_t mask = L->fl_pending;
        L->fl_pending = 0;
        pthread_mutex_unlock(&L->fl_mu);
        /* failures are the header's to see: flushed[] does not move */
        ppl_flush(L->a, mask, NULL);
        pthread_mutex_lock(&L->fl_mu);
    }
    pthread_mutex_unlock(&L->fl_mu);
    return NULL;
}

void ppl_flush_kick(struct uraid_array *a, uint64_t mask)
{
    struct ppl_log *L = a->ppl;
    for (int s = 0; s < PPL_MAX_SLOTS && mask >> s; s++) {
        struct member *dev = __atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE);
        if ((mask >> s & 1) && (!dev || !needs_flush(dev)))
            mask &= ~(1ull << s);
    }
    if (!mask)
        return;
    pthread_mutex_lock(&L->fl_mu);
    if (L->fl_state == 0)
        L->fl_state = pthread_create(&L->flusher, NULL, flusher_main, L) ? -1 : 1;
    if (L->fl_state == 1) {
        L->fl_pending |= mask;
        pthread_cond_signal(&L->fl_work);
    }
    pthread_mutex_unlock(&L->fl_mu);
}

void ppl_flusher_stop(struct ppl_log *L)
{
    pthread_mutex_lock(&L->fl_mu);
    int running = L->fl_state == 1;
    if (running)
        L->fl_state = 2;
    pthread_cond_signal(&L->fl_work);
    pthread_mutex_unlock(&L->fl_mu);
    if (running)
        pthread_join(L->flusher, NULL);
}

/* Lingering entries at most, per log: room stays for units in flight. */
#define LINGER_MAX (PPL_MAX_ENTRIES / 4)
/* Headers a covered part listing stripes ahead stays in with no unit
 * pinning it: longer keeps stale lists in LINGER_MAX's room, where new
 * ones could not linger (measured 3 > 5, 10 > 0). */
#define LINGER_IDLE_HEADERS 3

static int covered(const struct ppl_log *L, const struct ppl_part *p)
{
    for (int j = 0; j < PPL_MAX_SLOTS; j++)
        if ((p->written >> j & 1) && __atomic_load_n(&L->flushed[j], __ATOMIC_ACQUIRE) < p->mark[j])
            return 0;
    return 1;
}

/* Parts kept after their writes were covered (ppl_sweep's idle rule)
 * give their room to p, the oldest first: p is the newer list. */
static void unkeep(const struct ppl_log *L, struct ppl_member *m, const struct ppl_part *p, struct ppl_part **gone)
{
    while (m->lingering + p->nentries > LINGER_MAX) {
        struct ppl_part **oldest = NULL;
        for (struct ppl_part **pp = &m->inflight; *pp; pp = &(*pp)->next)
            if ((*pp)->lingering && (*pp)->idle && !(*pp)->pins && covered(L, *pp))
                oldest = pp;
        if (!oldest)
            return;
        struct ppl_part *q = *oldest;
        *oldest = q->next;
        m->lingering -= q->nentries;
        q->next = *gone;
        *gone = q;
    }
}

int ppl_linger(struct ppl_log *L, struct ppl_member *m, struct ppl_part *p, struct ppl_part **gone)
{
    if (p->pp_bytes || p->seq > m->written_seq || m->wrapping || __atomic_load_n(&L->waiters, __ATOMIC_ACQUIRE))
        return 0;
    unkeep(L, m, p, gone);
    if (m->lingering + p->nentries > LINGER_MAX)
        return 0;
    for (int j = 0; j < PPL_MAX_SLOTS; j++)
        if (p->written >> j & 1)
            p->mark[j] = ppl_flush_mark(L, j);
    p->lingering = 1;
    m->lingering += p->nentries;
    return 1;
}

/* A part of m's list not on disk yet logs partial parity of a stripe of p. */
static int rewritten(const struct ppl_member *m, const struct ppl_part *p)
{
    for (const struct ppl_part *q = m->inflight; q; q = q->next)
        if (q->seq > m->written_seq && q->pp_bytes && q->s_lo <= p->la_hi && p->la_lo <= q->s_hi)
            return 1;
    return 0;
}

/* p's writes go to the slots flushed before the next header. */
static void to_flush(struct ppl_member *m, const struct ppl_part *p)
{
    m->unflushed |= p->written;
    for (int j = 0; j < PPL_MAX_SLOTS; j++)
        if ((p->written >> j & 1) && m->need[j] < p->mark[j])
            m->need[j] = p->mark[j];
}

void ppl_linger_pinned(struct ppl_log *L, struct ppl_member *m, struct ppl_part *p)
{
    for (int j = 0; j < PPL_MAX_SLOTS; j++)
        if (p->written >> j & 1)
            p->mark[j] = ppl_flush_mark(L, j);
    p->lingering = 1;
    m->lingering += p->nentries;
}

void ppl_sweep(const struct ppl_log *L, struct ppl_member *m, int all, struct ppl_part **gone)
{
    for (struct ppl_part **pp = &m->inflight; *pp;) {
        struct ppl_part *p = *pp;
        /* a pinned part stays; writes of its stripes that finished are
         * flushed first when partial parity of them is to be logged */
        if (p->pins && (all || rewritten(m, p)))
            to_flush(m, p);
        if (!p->lingering || p->pins) {
            pp = &p->next;
            continue;
        }
        int done = covered(L, p);
        /* a part listing stripes ahead stays while units still find it
         * (ppl_cover): on members whose writes need no flush it is
         * covered at once, and a stream's next units would each write
         * a header of their own (RAID-5 of sata-ssd models, 2 streams of
         * 4 x 1 MiB: 36% of units logged, 14% kept so) */
        if (done && !all && p->ahead && !rewritten(m, p) && ++p->idle <= LINGER_IDLE_HEADERS) {
            pp = &p->next;
            continue;
        }
        if (!done && !all && !rewritten(m, p)) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        m->lingering -= p->nentries;
        if (!done)
            to_flush(m, p);
        p->next = *gone;
        *gone = p;
    }
}

void ppl_wake_reservers(struct ppl_log *L)
{
    if (!__atomic_load_n(&L->waiters, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&L->res_mu);
    pthread_cond_broadcast(&L->res_cv);
    pthread_mutex_unlock(&L->res_mu);
}

void ppl_free_swept(struct ppl_log *L, int s, struct ppl_part *gone)
{
    int any = gone != NULL;
    for (struct ppl_part *nx; gone; gone = nx) {
        nx = gone->next;
        __atomic_sub_fetch(&L->m[s].entries, gone->nentries, __ATOMIC_ACQ_REL);
        free(gone);
    }
    if (any)
        ppl_wake_reservers(L);
}
