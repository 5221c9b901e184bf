/* Partial-stripe writes of a sequential stream gathered into whole
 * stripes, as md's stripe cache completes them: requests reach the array
 * cut by the front-end (loop and FUSE: at most 1 MiB; a 1 MiB request on
 * a 5+1 RAID-5 of 64 KiB chunks has a partial stripe at each end), so
 * each stripe would be written in two or three pieces, each with its
 * reads (and with a PPL, its partial parity logged before the write).
 *
 * Two modes.
 * Held (the default, URAID_GATHER_HOLD_US, 20 ms): a partial stripe of a
 * stream is kept in a table of open stripes while its request waits, not
 * answered; the stream's other requests in flight (a writer with several
 * out: the kernel's writeback, fio's iodepth, nbdcopy) bring the rest,
 * and the request that completes a stripe writes it as one full-stripe
 * write with no reads and no partial parity (hold_wait: the waiting
 * requests are answered when it is written). Nothing answered is only in
 * memory, so a kill -9 loses nothing the members did not hold, as with md.
 * A piece is held only when another request of its stream is in flight
 * (a writer with one request out sends the next only once this one is
 * answered: nothing would come), and its request writes it in its pieces
 * when its time runs out, or 2 ms after every write in flight is waiting
 * too (none of them can complete it).
 * Answered at once (URAID_GATHER_US set, off when 0; 50 ms measured
 * best): the piece's request is acknowledged at once, as a disk's write
 * cache does; the stream's next request, sent only then, brings the rest.
 * A stripe not completed within URAID_GATHER_US of its request's answer
 * is written by the table's thread in its pieces. A kill -9 of the
 * server loses the answered pieces (as a power cut loses a disk's cache).
 *
 * Which pieces are kept (the predictor): a partial stripe of a request
 * that touches a recent request's end or start (the stream's next or
 * previous request), or of a large request (>= 256 KiB) a little ahead of
 * one (its predecessors still in flight); not a side whose neighbour has
 * already placed its pieces (neighbour_decided: it kept its piece, which
 * is then joined, or wrote it, and the stripe can never be whole). A
 * random write touches nothing recent and is never kept. A stream whose
 * stripes keep timing out stops being kept, and is tried again every 16th
 * piece.
 *
 * Why it is safe (gather_settle): a kept piece is only in memory, so
 *   - uraid_flush writes every open stripe before it flushes the members:
 *     no acknowledged write is left undurable past a flush;
 *   - a read of an open stripe's sectors writes it first (and waits for one
 *     being written), so every read sees every acknowledged write;
 *   - a later write to an open stripe joins it (its data laid over the
 *     pieces before it), and waits for a stripe being written, so writes
 *     to a sector land in the order they were acknowledged; a write that
 *     does not gather (write-zeroes, a reshape under way) settles the
 *     stripes it touches first.
 * Kept stripes are written through the full write path (write-intent
 * bitmap, dirty mark, a reshape's split of the request), by whichever
 * thread writes them, holding geom_lock for reading like any request. A
 * write error of a kept stripe goes to the requests waiting for it (held)
 * or to the next flush (answered at once).
 *
 * Why it is safe against member failures (gather_allowed, answered at
 * once only: a held piece's request still waits for its write): a kept
 * stripe must still be writable when its time runs out, so stripes are
 * kept only while the array can lose one more member and still write
 * (fewer slots out of sync than parities: a healthy RAID-4/5, a RAID-6
 * missing at most one). When a member fails, array_member_failed calls
 * gather_kick and the table's thread writes every open stripe at once,
 * degraded, while that is still possible; a write arriving while the
 * array cannot lose another member is not kept (and settles the open
 * stripes it touches).
 *
 * States of an entry: FREE --a piece (new_entry)--> OPEN (pieces join)
 * --whole (gather_pieces), timed out (hold_wait, timeout_thread) or
 * settled (gather_settle)--> WRITING (one thread writes it, write_list)
 * --> FREE, or DONE while held requests have still to read its result
 * (hold_wait frees it when the last leaves). Invariants: busy counts the
 * OPEN and WRITING entries; an entry's gen moves exactly when it leaves
 * WRITING; holders counts the requests waiting on an OPEN, WRITING or
 * DONE entry. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array/dataio.h"
#include "log.h"
#include "stripe/gather.h"

#define GATHER_ENTRIES 16
#define GATHER_RECENT 16
#define GATHER_MAX_STRIPE (16u << 20) /* wider stripes are not gathered */
#define GATHER_BIG_SECTORS 512        /* 256 KiB: a request that may have predecessors in flight */
#define GATHER_RECENT_NS 200000000ull /* a request older than 0.2 s + the wait is no stream's */

enum gstate { G_FREE = 0, G_OPEN, G_WRITING, G_DONE };

struct gentry {
    enum gstate state;
    uint64_t stripe;
    uint64_t deadline;    /* CLOCK_MONOTONIC ns */
    uint32_t covered;     /* sectors of the stripe written by some piece */
    uint8_t *buf;         /* the stripe's data, ss sectors */
    unsigned char *bits;  /* sector bitmap of the pieces */
    uint32_t gen;         /* writes of this entry so far: a holder waits for it to move */
    int holders;          /* held mode: requests waiting for this stripe's write (DONE until 0) */
    pthread_cond_t cv;    /* held mode: its holders wait here (its write, or a look at being alone) */
    int rc;               /* the last write's result, for its holders */
};

struct recent {
    uint64_t start, end, when;
    uint64_t ticket;      /* which request this record is (predict's count) */
    int decided;          /* its pieces were kept, joined or written (set under the table's lock) */
    int done;             /* the request has left gather_write */
};

struct stripe_gather {
    struct uraid_array *a;
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* an entry left WRITING, or the thread has work */
    pthread_t thread;     /* writes the stripes whose time ran out */
    int thread_started, stop;
    int hold;             /* 1: a piece's request waits for its stripe's write; 0: answered at once */
    int waiting;          /* atomic: held mode's requests waiting for their pieces' writes */
    uint64_t wait_ns;
    uint32_t ss;          /* sectors of a stripe's data */
    int busy;             /* atomic: entries not FREE (0: reads need not look) */
    int deferred_rc;      /* a kept stripe's write failed: the next flush says so */
    struct gentry e[GATHER_ENTRIES];
    struct recent r[GATHER_RECENT];
    uint64_t rnext;       /* atomic: requests recorded so far */
    int misses;           /* atomic: timeouts in a row since the last whole stripe */
    uint32_t skip;        /* atomic: pieces let through since misses reached the limit */
    uint64_t backed_off;  /* atomic: gather_stats' backed_off */
    struct gather_stats st;
};

/* Set while a thread writes a kept stripe: its write must not gather. */
static __thread int bypass;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Held mode's wait for the rest of a stripe (URAID_GATHER_HOLD_US): the
 * requests that complete it are already in flight, so it comes within
 * their scheduling delay; the wait matters only when it does not (the
 * stream's writer had fewer requests out than thought), and is then cut
 * short as soon as no other write is in flight. */
#define GATHER_HOLD_DEFAULT_US 20000

int gather_test_patient;

/* Microseconds from the variable, dflt when unset, 0 when not a number; at
 * most 10 s (tests wait long to be sure). */
static uint64_t env_us(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    unsigned long long us = strtoull(v, &end, 10);
    return *end ? 0 : us > 10000000 ? 10000000 : us;
}

int gather_bypassed(void) { return bypass; }

/* May a stripe be kept? Only while the array can lose one more member and
 * still write it (the file's comment). */
static int gather_allowed(const struct uraid_array *a)
{
    int out = 0;
    for (int s = 0; s < a->geom.raid_disks; s++)
        out += !slot_ok(a, s);
    return out < a->nparity;
}

/* Held requests look again whether every write in flight waits (lock
 * held). */
static void kick_holders(struct stripe_gather *g)
{
    for (int i = 0; i < GATHER_ENTRIES; i++)
        if (g->e[i].holders)
            pthread_cond_broadcast(&g->e[i].cv);
}

/* Is every write in flight waiting for its pieces? */
static int all_waiting(const struct stripe_gather *g)
{
    return __atomic_load_n(&g->waiting, __ATOMIC_ACQUIRE) >=
           __atomic_load_n(&g->a->writes_in_flight, __ATOMIC_ACQUIRE);
}

void gather_kick(struct stripe_gather *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    pthread_cond_broadcast(&g->cv); /* the thread looks at gather_allowed again */
    kick_holders(g);
    pthread_mutex_unlock(&g->mu);
}

uint32_t gather_stripe_sectors(const struct stripe_gather *g) { return g->ss; }

void gather_stats(struct stripe_gather *g, struct gather_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    *out = g->st;
    out->backed_off = __atomic_load_n(&g->backed_off, __ATOMIC_RELAXED);
    for (int i = 0; i < GATHER_ENTRIES; i++)
        out->open += g->e[i].state != G_FREE;
    pthread_mutex_unlock(&g->mu);
}

static int overlaps(const struct stripe_gather *g, const struct gentry *e, uint64_t sector, uint64_t end)
{
    uint64_t base = e->stripe * g->ss;
    return sector < base + g->ss && end > base;
}

/* The entry states' invariants (the file's comment), with the table's lock
 * held; debug builds only. */
static void check_table(struct stripe_gather *g)
{
#ifndef NDEBUG
    int live = 0;
    for (int i = 0; i < GATHER_ENTRIES; i++) {
        const struct gentry *e = &g->e[i];
        live += e->state == G_OPEN || e->state == G_WRITING;
        if (e->holders < 0 || (e->state == G_DONE && e->holders == 0) || (e->state == G_FREE && e->holders) ||
            (e->holders && !g->hold)) {
            uraid_log(URAID_LOG_ERROR, "gather: entry %d (stripe %llu) in state %d with %d holders", i,
                      (unsigned long long)e->stripe, (int)e->state, e->holders);
            abort();
        }
    }
    if (live != __atomic_load_n(&g->busy, __ATOMIC_RELAXED)) {
        uraid_log(URAID_LOG_ERROR, "gather: %d entries open or being written, busy says %d", live, g->busy);
        abort();
    }
#else
    (void)g;
#endif
}

/* Writes what the entry holds (the caller moved it to WRITING and holds
 * geom_lock for reading): the whole stripe, or each run of its pieces,
 * through the full write path. */
static int write_entry(struct uraid_array *a, struct stripe_gather *g, struct gentry *e)
{
    uint64_t base = e->stripe * g->ss;
    int rc = 0;
    bypass = 1;
    for (uint32_t s = 0; s < g->ss;) {
        if (!(e->bits[s / 8] & (1u << (s % 8)))) {
            s++;
            continue;
        }
        uint32_t t = s;
        while (t < g->ss && (e->bits[t / 8] & (1u << (t % 8))))
            t++;
        int r = array_write_locked(a, e->buf + (size_t)s * SECTOR, (size_t)(t - s) * SECTOR, (base + s) * SECTOR);
        rc = rc ? rc : r;
        s = t;
    }
    bypass = 0;
    return rc;
}

/* Entries list[0..n-1], moved to WRITING by this thread, written and
 * freed. rc of the first failure. */
static int write_list(struct stripe_gather *g, struct gentry **list, int n)
{
    int rc = 0, r[GATHER_ENTRIES];
    for (int i = 0; i < n; i++) {
        r[i] = write_entry(g->a, g, list[i]);
        rc = rc ? rc : r[i];
    }
    pthread_mutex_lock(&g->mu);
    if (rc && !g->deferred_rc && !g->hold)
        g->deferred_rc = rc; /* pieces acknowledged before: the next flush fails */
    for (int i = 0; i < n; i++) {
        list[i]->rc = r[i];
        list[i]->gen++;
        list[i]->state = list[i]->holders ? G_DONE : G_FREE; /* DONE: its holders still read rc */
        if (list[i]->holders)
            pthread_cond_broadcast(&list[i]->cv);
    }
    __atomic_sub_fetch(&g->busy, n, __ATOMIC_RELEASE);
    check_table(g);
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return rc;
}

/* Called with the lock: waits until no entry overlapping [sector, end) is
 * being written by another thread. */
static void wait_writing(struct stripe_gather *g, uint64_t sector, uint64_t end)
{
    for (;;) {
        int any = 0;
        for (int i = 0; i < GATHER_ENTRIES && !any; i++)
            any = g->e[i].state == G_WRITING && overlaps(g, &g->e[i], sector, end);
        if (!any)
            return;
        pthread_cond_wait(&g->cv, &g->mu);
    }
}

int gather_settle(struct stripe_gather *g, uint64_t sector, uint64_t end)
{
    if (!g || bypass || __atomic_load_n(&g->busy, __ATOMIC_ACQUIRE) == 0)
        return 0;
    struct gentry *mine[GATHER_ENTRIES];
    int n = 0;
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < GATHER_ENTRIES; i++)
        if (g->e[i].state == G_OPEN && overlaps(g, &g->e[i], sector, end)) {
            g->e[i].state = G_WRITING;
            mine[n++] = &g->e[i];
        }
    g->st.settled += (uint64_t)n;
    pthread_mutex_unlock(&g->mu);
    int rc = write_list(g, mine, n);
    pthread_mutex_lock(&g->mu);
    wait_writing(g, sector, end);
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int gather_flush(struct stripe_gather *g)
{
    if (!g)
        return 0;
    int rc = gather_settle(g, 0, UINT64_MAX);
    pthread_mutex_lock(&g->mu);
    if (!rc)
        rc = g->deferred_rc;
    g->deferred_rc = 0;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

/* gather_allowed for the table's thread, which holds only the table's
 * lock: the array's shape (members, parities) changes under geom_lock held
 * for writing, so it is read under geom_lock for reading, only tried (that
 * lock is taken before the table's elsewhere). *busy when a change holds
 * it: nothing is drained then. */
static int drain_due(struct uraid_array *a, int *busy)
{
    *busy = pthread_rwlock_tryrdlock(&a->geom_lock) != 0;
    if (*busy)
        return 0;
    int drain = !gather_allowed(a);
    pthread_rwlock_unlock(&a->geom_lock);
    return drain;
}

/* The table's thread: writes every stripe whose time ran out, holding
 * geom_lock for reading as a request does (taken before the table's lock,
 * so a reshape waiting for the lock never waits on this thread). */
static void *timeout_thread(void *arg)
{
    struct stripe_gather *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        uint64_t first = UINT64_MAX, t = now_ns();
        int busy, drain = drain_due(g->a, &busy); /* a member failed: every open stripe now */
        for (int i = 0; i < GATHER_ENTRIES; i++)
            if (g->e[i].state == G_OPEN && g->e[i].deadline < first)
                first = drain ? 0 : g->e[i].deadline;
        if (busy && first != UINT64_MAX && first > t + 1000000)
            first = t + 1000000; /* the shape is changing: look again in 1 ms */
        if (first == UINT64_MAX) {
            pthread_cond_wait(&g->cv, &g->mu);
            continue;
        }
        if (t < first) {
            struct timespec ts = {.tv_sec = (time_t)(first / 1000000000ull), .tv_nsec = (long)(first % 1000000000ull)};
            pthread_cond_timedwait(&g->cv, &g->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&g->mu);
        pthread_rwlock_rdlock(&g->a->geom_lock);
        pthread_mutex_lock(&g->mu);
        struct gentry *mine[GATHER_ENTRIES];
        int n = 0;
        t = now_ns();
        drain = !gather_allowed(g->a);
        for (int i = 0; i < GATHER_ENTRIES; i++)
            if (g->e[i].state == G_OPEN && (drain || g->e[i].deadline <= t)) {
                g->e[i].state = G_WRITING;
                mine[n++] = &g->e[i];
            }
        if (drain) {
            g->st.drained += (uint64_t)n;
        } else {
            g->st.timeouts += (uint64_t)n;
            __atomic_add_fetch(&g->misses, n, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&g->mu);
        write_list(g, mine, n);
        pthread_rwlock_unlock(&g->a->geom_lock);
        pthread_mutex_lock(&g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Held mode unless URAID_GATHER_US asks for pieces answered at once (0:
 * no gathering at all). */
struct stripe_gather *gather_create(struct uraid_array *a)
{
    uint64_t ss = (uint64_t)a->k * a->geom.chunk_sectors;
    const char *answer = getenv("URAID_GATHER_US");
    int hold = !answer || !*answer;
    uint64_t us = hold ? env_us("URAID_GATHER_HOLD_US", GATHER_HOLD_DEFAULT_US) : env_us("URAID_GATHER_US", 0);
    if (us == 0 || a->nparity == 0 || a->geom.level < 4 || a->r10 || a->lin || a->parent || a->readonly || ss == 0 ||
        ss * SECTOR > GATHER_MAX_STRIPE)
        return NULL;
    struct stripe_gather *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->a = a;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    for (int i = 0; i < GATHER_ENTRIES; i++)
        pthread_cond_init(&g->e[i].cv, &ca);
    pthread_condattr_destroy(&ca);
    g->wait_ns = us * 1000;
    g->ss = (uint32_t)ss;
    g->hold = hold;
    if (hold) /* each request writes its own pieces when their time runs out */
        return g;
    if (pthread_create(&g->thread, NULL, timeout_thread, g) != 0) {
        gather_destroy(g);
        return NULL;
    }
    g->thread_started = 1;
    return g;
}

void gather_destroy(struct stripe_gather *g)
{
    if (!g)
        return;
    /* uraid_close flushed first (and no request runs now), so nothing is
     * open: the members' layers may already be gone */
    int open = __atomic_load_n(&g->busy, __ATOMIC_ACQUIRE);
    if (open)
        uraid_log(URAID_LOG_ERROR, "gather: %d kept stripes were never written (closed without a flush)", open);
    if (g->thread_started) {
        pthread_mutex_lock(&g->mu);
        g->stop = 1;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL);
    }
    uraid_log(URAID_LOG_INFO,
              "gather: %llu stripes gathered whole, %llu written in pieces when their time ran out, %llu written "
              "early (a read, flush or zeroing), %llu written when a member failed, %llu pieces joined, %llu let "
              "through (backed off)",
              (unsigned long long)g->st.whole, (unsigned long long)g->st.timeouts, (unsigned long long)g->st.settled,
              (unsigned long long)g->st.drained,
              (unsigned long long)g->st.joined, (unsigned long long)g->backed_off);
    for (int i = 0; i < GATHER_ENTRIES; i++) {
        free(g->e[i].buf);
        free(g->e[i].bits);
    }
    pthread_cond_destroy(&g->cv);
    for (int i = 0; i < GATHER_ENTRIES; i++)
        pthread_cond_destroy(&g->e[i].cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* What predict says of a request. */
struct guess {
    int seq;        /* it belongs to a stream: keep its partial stripes */
    int company;    /* another request of the stream is in flight (behind or
                     * ahead), so a held piece's rest may come while it waits;
                     * a writer with one request out sends its next only once
                     * this one is answered */
    uint64_t ticket; /* names the record for predict_done */
};

/* Does [start, end) belong to a stream (the struct's fields)? Recorded as
 * recent either way.
 * Without the table's lock (every random write passes here, from many
 * threads): the fields are atomics, and a record torn by a concurrent
 * writer can only make one guess wrong, never a write. */
static void predict(struct stripe_gather *g, uint64_t start, uint64_t end, uint64_t now, struct guess *gu)
{
    int seq = 0;
    uint64_t len = end - start, near = 4 * len;
    memset(gu, 0, sizeof *gu);
    for (int i = 0; i < GATHER_RECENT; i++) {
        struct recent *r = &g->r[i];
        uint64_t rs = __atomic_load_n(&r->start, __ATOMIC_RELAXED), re = __atomic_load_n(&r->end, __ATOMIC_RELAXED);
        if (re == 0 || now - __atomic_load_n(&r->when, __ATOMIC_RELAXED) > GATHER_RECENT_NS + g->wait_ns)
            continue;
        if (re == start || rs == end)
            seq = 1;
        else if (len >= GATHER_BIG_SECTORS && start > re && start - re <= near)
            seq = 1;
        if (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE) && re + near >= start && rs <= end + near)
            gu->company = 1;
    }
    gu->ticket = __atomic_fetch_add(&g->rnext, 1, __ATOMIC_RELAXED);
    struct recent *r = &g->r[gu->ticket % GATHER_RECENT];
    __atomic_store_n(&r->done, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&r->decided, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&r->ticket, gu->ticket, __ATOMIC_RELAXED);
    __atomic_store_n(&r->when, now, __ATOMIC_RELAXED);
    __atomic_store_n(&r->start, start, __ATOMIC_RELAXED);
    __atomic_store_n(&r->end, end, __ATOMIC_RELEASE);
    if (seq && __atomic_load_n(&g->misses, __ATOMIC_RELAXED) >= 4 &&
        (__atomic_fetch_add(&g->skip, 1, __ATOMIC_RELAXED) % 16) != 0) {
        __atomic_add_fetch(&g->backed_off, 1, __ATOMIC_RELAXED);
        seq = 0; /* this stream's stripes are not completed in time: let it through */
    }
    gu->seq = seq;
}

/* The request of this ticket has placed its pieces (under the table's
 * lock, or with none to place). */
static void predict_decided(struct stripe_gather *g, uint64_t ticket)
{
    struct recent *r = &g->r[ticket % GATHER_RECENT];
    if (__atomic_load_n(&r->ticket, __ATOMIC_RELAXED) == ticket)
        __atomic_store_n(&r->decided, 1, __ATOMIC_RELEASE);
}

/* Under the table's lock: has a request ending at sector `at` (ends, 0) or
 * starting there (1) placed its pieces already? Then it kept the piece
 * next to `at` (find_open finds it) or wrote it, and a new entry on this
 * side would never be whole. One still on its way finds the new entry. */
static int neighbour_decided(struct stripe_gather *g, uint64_t at, int starts, uint64_t now)
{
    for (int i = 0; i < GATHER_RECENT; i++) {
        struct recent *r = &g->r[i];
        uint64_t edge = __atomic_load_n(starts ? &r->start : &r->end, __ATOMIC_RELAXED);
        if (edge == at && __atomic_load_n(&r->end, __ATOMIC_RELAXED) != 0 &&
            now - __atomic_load_n(&r->when, __ATOMIC_RELAXED) <= GATHER_RECENT_NS + g->wait_ns &&
            __atomic_load_n(&r->decided, __ATOMIC_ACQUIRE))
            return 1;
    }
    return 0;
}

/* The request of predict's ticket has left: no company any more. */
static void predict_done(struct stripe_gather *g, uint64_t ticket)
{
    struct recent *r = &g->r[ticket % GATHER_RECENT];
    if (__atomic_load_n(&r->ticket, __ATOMIC_RELAXED) == ticket)
        __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static struct gentry *find_open(struct stripe_gather *g, uint64_t stripe)
{
    for (int i = 0; i < GATHER_ENTRIES; i++)
        if (g->e[i].state == G_OPEN && g->e[i].stripe == stripe)
            return &g->e[i];
    return NULL;
}

static struct gentry *new_entry(struct stripe_gather *g, uint64_t stripe, uint64_t now)
{
    for (int i = 0; i < GATHER_ENTRIES; i++) {
        struct gentry *e = &g->e[i];
        if (e->state != G_FREE)
            continue;
        if (!e->buf) {
            void *b = NULL;
            if (posix_memalign(&b, 4096, (size_t)g->ss * SECTOR))
                return NULL;
            e->buf = b;
            e->bits = malloc((g->ss + 7) / 8);
            if (!e->bits) {
                free(e->buf);
                e->buf = NULL;
                return NULL;
            }
        }
        memset(e->bits, 0, (g->ss + 7) / 8);
        e->state = G_OPEN;
        e->stripe = stripe;
        e->deadline = now + g->wait_ns;
        e->covered = 0;
        __atomic_add_fetch(&g->busy, 1, __ATOMIC_RELEASE);
        g->st.kept++;
        if (!g->hold)
            pthread_cond_broadcast(&g->cv); /* the thread learns the new deadline */
        return e;
    }
    return NULL;
}

/* Sectors [r0, r1) of the entry's stripe from src. */
static void add_piece(struct gentry *e, uint32_t r0, uint32_t r1, const uint8_t *src)
{
    memcpy(e->buf + (size_t)r0 * SECTOR, src, (size_t)(r1 - r0) * SECTOR);
    for (uint32_t s = r0; s < r1; s++)
        if (!(e->bits[s / 8] & (1u << (s % 8)))) {
            e->bits[s / 8] |= (unsigned char)(1u << (s % 8));
            e->covered++;
        }
}

/* Until when may a held entry wait (lock held)? Its deadline; but when
 * every write in flight is waiting too (none of them can complete it),
 * only GATHER_ALONE_NS from when that began: the writer of a stream sends
 * its next request as soon as one is answered, or sends none. */
#define GATHER_ALONE_NS 2000000ull

static uint64_t wait_until(struct stripe_gather *g, const struct gentry *e, uint64_t now, uint64_t *alone_since)
{
    if (!all_waiting(g) || gather_test_patient)
        *alone_since = 0;
    else if (!*alone_since)
        *alone_since = now;
    uint64_t until = e->deadline;
    if (*alone_since && *alone_since + GATHER_ALONE_NS < until)
        until = *alone_since + GATHER_ALONE_NS;
    return until;
}

/* Held mode: waits until each entry this request put a piece in (list,
 * their gen when it did) has been written: by the request that completed
 * it, a read or flush that settled it, or this thread when wait_until's
 * time has come (the pieces then go in their pieces, and count as a
 * miss). rc, or the first of their write errors. */
static int hold_wait(struct stripe_gather *g, struct gentry **list, const uint32_t *gen, int n, int rc)
{
    if (n == 0)
        return rc;
    pthread_mutex_lock(&g->mu);
    __atomic_add_fetch(&g->waiting, 1, __ATOMIC_ACQ_REL);
    if (all_waiting(g))
        kick_holders(g); /* the others may now all be waiting */
    uint64_t alone_since = 0;
    for (int i = 0; i < n; i++) {
        struct gentry *e = list[i];
        while (e->gen == gen[i]) {
            uint64_t t = now_ns(), until = e->state == G_OPEN ? wait_until(g, e, t, &alone_since) : 0;
            if (e->state != G_OPEN) {
                pthread_cond_wait(&e->cv, &g->mu); /* another thread writes it */
            } else if (t < until) {
                struct timespec ts = {.tv_sec = (time_t)(until / 1000000000ull),
                                      .tv_nsec = (long)(until % 1000000000ull)};
                pthread_cond_timedwait(&e->cv, &g->mu, &ts);
            } else {
                e->state = G_WRITING;
                g->st.timeouts++;
                __atomic_add_fetch(&g->misses, 1, __ATOMIC_RELAXED);
                pthread_mutex_unlock(&g->mu);
                write_list(g, &e, 1);
                pthread_mutex_lock(&g->mu);
            }
        }
        rc = rc ? rc : e->rc;
        if (--e->holders == 0 && e->state == G_DONE)
            e->state = G_FREE;
    }
    __atomic_sub_fetch(&g->waiting, 1, __ATOMIC_ACQ_REL);
    check_table(g);
    pthread_mutex_unlock(&g->mu);
    return rc;
}

void gather_write_left(struct stripe_gather *g)
{
    if (!g || __atomic_load_n(&g->waiting, __ATOMIC_ACQUIRE) == 0 || !all_waiting(g))
        return;
    pthread_mutex_lock(&g->mu);
    kick_holders(g);
    pthread_mutex_unlock(&g->mu);
}

/* The request's pieces: joined to open stripes or kept in new ones (seq),
 * the rest written; then (held mode) waits for its pieces' writes. */
static int gather_pieces(struct uraid_array *a, struct stripe_gather *g, const uint8_t *p, uint64_t sector,
                         uint64_t end, uint64_t now, const struct guess *gu)
{
    int seq = gu->seq;
    uint64_t ss = g->ss, s0 = sector / ss, s1 = (end - 1) / ss + 1;
    struct gentry *held[GATHER_ENTRIES], *whole[GATHER_ENTRIES], *wait[GATHER_ENTRIES];
    uint64_t held_stripe[GATHER_ENTRIES];
    uint32_t wait_gen[GATHER_ENTRIES];
    int nheld = 0, nwhole = 0, nwait = 0;
    /* nothing open and nothing to keep (a random write): no lock. A piece
     * acknowledged before this write began made busy non-zero first, so a
     * write that must join or follow a kept stripe never comes this way. */
    if (!seq && __atomic_load_n(&g->busy, __ATOMIC_ACQUIRE) == 0) {
        predict_decided(g, gu->ticket);
        return array_write_direct(a, p, sector, end);
    }
    pthread_mutex_lock(&g->mu);
    wait_writing(g, sector, end); /* an earlier write of these sectors lands first */
    for (uint64_t s = s0; s < s1; s++) {
        uint64_t lo = s * ss > sector ? s * ss : sector, hi = (s + 1) * ss < end ? (s + 1) * ss : end;
        int full = lo == s * ss && hi == (s + 1) * ss;
        struct gentry *e = find_open(g, s);
        if (e)
            g->st.joined++;
        else if (seq && !full && !(lo > s * ss && neighbour_decided(g, lo, 0, now)) &&
                 !(hi < (s + 1) * ss && neighbour_decided(g, hi, 1, now)))
            e = new_entry(g, s, now);
        if (!e)
            continue;
        add_piece(e, (uint32_t)(lo - s * ss), (uint32_t)(hi - s * ss), p + (lo - sector) * SECTOR);
        held_stripe[nheld] = s;
        held[nheld++] = e;
        if (e->covered == ss) {
            e->state = G_WRITING;
            g->st.whole++;
            __atomic_store_n(&g->misses, 0, __ATOMIC_RELAXED);
            whole[nwhole++] = e;
        } else if (g->hold) {
            e->holders++;
            wait_gen[nwait] = e->gen;
            wait[nwait++] = e;
        }
    }
    predict_decided(g, gu->ticket);
    pthread_mutex_unlock(&g->mu);
    /* the stripes no entry took, in runs; then the stripes made whole (this
     * request's bitmap span covers them: it touches each) */
    int rc = 0;
    uint64_t run = sector;
    for (int i = 0; i <= nheld; i++) {
        uint64_t lo = i < nheld ? (held_stripe[i] * ss > sector ? held_stripe[i] * ss : sector) : end;
        if (lo > run) {
            int r = array_write_direct(a, p + (run - sector) * SECTOR, run, lo);
            rc = rc ? rc : r;
        }
        if (i < nheld)
            run = (held_stripe[i] + 1) * ss < end ? (held_stripe[i] + 1) * ss : end;
    }
    int r = write_list(g, whole, nwhole);
    rc = rc ? rc : r;
    if (g->hold)
        return hold_wait(g, wait, wait_gen, nwait, rc);
    /* the wait is for the stream's next request, which comes only once
     * this one is answered: it counts from now, not from when the piece
     * was kept (this request's own stripes took their time) */
    now = now_ns();
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < nheld; i++)
        if (held[i]->state == G_OPEN && held[i]->stripe == held_stripe[i] && held[i]->deadline < now + g->wait_ns)
            held[i]->deadline = now + g->wait_ns;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int gather_write(struct uraid_array *a, struct stripe_gather *g, const uint8_t *p, uint64_t sector, uint64_t end)
{
    if (!g->hold && !gather_allowed(a)) { /* nothing kept: what is open here is written first */
        int rc = gather_settle(g, sector, end);
        int r = array_write_direct(a, p, sector, end);
        return rc ? rc : r;
    }
    uint64_t now = now_ns();
    struct guess gu;
    predict(g, sector, end, now, &gu);
    if (g->hold && !gu.company && !gather_test_patient)
        gu.seq = 0; /* no request of the stream in flight could complete a held piece */
    int rc = gather_pieces(a, g, p, sector, end, now, &gu);
    predict_done(g, gu.ticket);
    return rc;
}
