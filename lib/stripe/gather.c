/* Partial-stripe writes of a sequential stream gathered into whole
 * stripes, as md's stripe cache completes them: requests reach the array
 * cut by the front-end (loop and FUSE: at most 1 MiB), never a whole
 * stripe of a wide array (14 x 64 KiB = 896 KiB), so each stripe would be
 * written in two or three pieces, each with its reads. A piece of a
 * stream waits a bounded time (URAID_GATHER_US, default 1000 us, 0: off)
 * for the other pieces of its stripe, which come from requests already in
 * flight on other threads; a stripe made whole is written as one
 * full-stripe write with no reads, and on timeout the pieces gathered go
 * their usual way (read-modify-write / reconstruct-write).
 *
 * Which pieces wait (the predictor): a partial stripe of a request that
 * touches a recent request's end or start (exactly: the stream's next or
 * previous request), or of a large request (>= 256 KiB) a little ahead of
 * one (its predecessors still in flight). A random write touches nothing
 * recent and never waits. A stream whose gathers keep timing out (its
 * requests come one at a time: nothing is in flight to complete a stripe)
 * stops waiting, and tries again now and then.
 *
 * Why it is safe: no piece is acknowledged before its stripe is written
 * (the requester waits, so a flush still covers every acknowledged
 * write); a flush cuts every wait short. A write that touches a stripe
 * with an open gather joins it (its data laid over the pieces before it),
 * so writes to one stripe still land in the order they arrived. Stripe
 * locks are taken only by the thread that writes, after the gather
 * table's lock is dropped, and no thread waits while it holds one. The
 * write itself is the write group's (write.c): bitmap, PPL, degraded
 * stripes and failures are handled there as for any write.
 *
 * States of an entry: OPEN (pieces join) --whole, timed out or a flush-->
 * WRITING (one thread writes it) --> DONE (rc; each piece's thread leaves,
 * the last one frees the slot). */
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
    int refs;             /* pieces whose threads have not left */
    int rc;
    uint8_t *buf;         /* the stripe's data, ss sectors */
    unsigned char *bits;  /* sector bitmap of the pieces */
};

struct recent {
    uint64_t start, end, when;
};

struct stripe_gather {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t wait_ns;
    uint32_t ss;          /* sectors of a stripe's data */
    struct gentry e[GATHER_ENTRIES];
    struct recent r[GATHER_RECENT];
    int rnext;
    int misses;           /* timeouts in a row since the last whole stripe */
    uint32_t skip;        /* qualifying pieces let through since misses reached the limit */
    struct gather_stats st;
};

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t gather_wait_us(void)
{
    const char *v = getenv("URAID_GATHER_US");
    if (!v || !*v)
        return 1000;
    char *end;
    unsigned long long us = strtoull(v, &end, 10);
    return *end ? 1000 : us > 10000000 ? 10000000 : us; /* at most 10 s (tests wait long to be sure) */
}

struct stripe_gather *gather_create(struct uraid_array *a)
{
    uint64_t ss = (uint64_t)a->k * a->geom.chunk_sectors;
    uint64_t us = gather_wait_us();
    if (us == 0 || a->nparity == 0 || a->geom.level < 4 || a->r10 || a->lin || a->parent || ss == 0 ||
        ss * SECTOR > GATHER_MAX_STRIPE)
        return NULL;
    struct stripe_gather *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    g->wait_ns = us * 1000;
    g->ss = (uint32_t)ss;
    return g;
}

void gather_destroy(struct stripe_gather *g)
{
    if (!g)
        return;
    uraid_log(URAID_LOG_INFO,
              "gather: %llu stripes gathered whole, %llu written in pieces (%llu cut short by a flush), %llu pieces "
              "joined, %llu let through (backed off)",
              (unsigned long long)g->st.whole, (unsigned long long)g->st.timeouts, (unsigned long long)g->st.kicked,
              (unsigned long long)g->st.joined, (unsigned long long)g->st.backed_off);
    for (int i = 0; i < GATHER_ENTRIES; i++) {
        free(g->e[i].buf);
        free(g->e[i].bits);
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

uint32_t gather_stripe_sectors(const struct stripe_gather *g) { return g->ss; }

void gather_stats(struct stripe_gather *g, struct gather_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    *out = g->st;
    pthread_mutex_unlock(&g->mu);
}

void gather_kick(struct stripe_gather *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    int any = 0;
    for (int i = 0; i < GATHER_ENTRIES; i++)
        if (g->e[i].state == G_OPEN) {
            g->e[i].deadline = 0;
            any = 1;
        }
    if (any) {
        g->st.kicked++;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
}

/* Does [start, end) belong to a stream? Recorded as recent either way. */
static int predict(struct stripe_gather *g, uint64_t start, uint64_t end, uint64_t now)
{
    int seq = 0;
    uint64_t len = end - start;
    for (int i = 0; i < GATHER_RECENT; i++) {
        const struct recent *r = &g->r[i];
        if (r->end == 0 || now - r->when > GATHER_RECENT_NS + g->wait_ns)
            continue;
        if (r->end == start || r->start == end)
            seq = 1;
        else if (len >= GATHER_BIG_SECTORS && start > r->end && start - r->end <= 4 * len)
            seq = 1;
    }
    g->r[g->rnext] = (struct recent){.start = start, .end = end, .when = now};
    g->rnext = (g->rnext + 1) % GATHER_RECENT;
    if (seq && g->misses >= 4 && (g->skip++ % 16) != 0) {
        g->st.backed_off++;
        return 0; /* nothing arrives to complete this stream's stripes: let it through */
    }
    return seq;
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
        e->refs = 0;
        e->rc = 0;
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
    e->refs++;
}

/* Writes what the entry holds: the whole stripe, or each run of its
 * pieces (the usual read-modify-write / reconstruct-write). Called by the
 * one thread that moved it to WRITING, without the table's lock. */
static int write_entry(struct uraid_array *a, struct stripe_gather *g, struct gentry *e)
{
    uint64_t base = e->stripe * g->ss;
    if (e->covered == g->ss)
        return array_write_direct(a, e->buf, base, base + g->ss);
    int rc = 0;
    for (uint32_t s = 0; s < g->ss;) {
        if (!(e->bits[s / 8] & (1u << (s % 8)))) {
            s++;
            continue;
        }
        uint32_t t = s;
        while (t < g->ss && (e->bits[t / 8] & (1u << (t % 8))))
            t++;
        int r = array_write_direct(a, e->buf + (size_t)s * SECTOR, base + s, base + t);
        rc = rc ? rc : r;
        s = t;
    }
    return rc;
}

/* The entry written by this thread, its waiters told. */
static void finish_entry(struct uraid_array *a, struct stripe_gather *g, struct gentry *e)
{
    int rc = write_entry(a, g, e);
    pthread_mutex_lock(&g->mu);
    e->rc = rc;
    e->state = G_DONE;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Called with the lock: waits until e is DONE, writing it if its time runs
 * out first; the piece's reference dropped. Returns the entry's rc. */
static int wait_entry(struct uraid_array *a, struct stripe_gather *g, struct gentry *e)
{
    while (e->state != G_DONE) {
        if (e->state == G_OPEN) {
            uint64_t t = now_ns();
            if (t >= e->deadline) {
                e->state = G_WRITING;
                if (e->covered == g->ss) {
                    g->st.whole++;
                    g->misses = 0;
                } else {
                    g->st.timeouts++;
                    g->misses++;
                }
                pthread_mutex_unlock(&g->mu);
                finish_entry(a, g, e);
                pthread_mutex_lock(&g->mu);
                continue;
            }
            struct timespec ts = {.tv_sec = (time_t)(e->deadline / 1000000000ull),
                                  .tv_nsec = (long)(e->deadline % 1000000000ull)};
            pthread_cond_timedwait(&g->cv, &g->mu, &ts);
        } else {
            pthread_cond_wait(&g->cv, &g->mu);
        }
    }
    int rc = e->rc;
    if (--e->refs == 0)
        e->state = G_FREE;
    return rc;
}

int gather_write(struct uraid_array *a, struct stripe_gather *g, const uint8_t *p, uint64_t sector, uint64_t end)
{
    uint64_t ss = g->ss, s0 = sector / ss, s1 = (end - 1) / ss + 1;
    struct gentry *mine[2 + GATHER_ENTRIES], *write_now[2 + GATHER_ENTRIES];
    int nmine = 0, nwrite = 0;
    uint64_t now = now_ns();
    pthread_mutex_lock(&g->mu);
    int seq = predict(g, sector, end, now);
    for (uint64_t s = s0; s < s1; s++) {
        uint64_t lo = s * ss > sector ? s * ss : sector, hi = (s + 1) * ss < end ? (s + 1) * ss : end;
        int whole = lo == s * ss && hi == (s + 1) * ss;
        struct gentry *e = find_open(g, s);
        if (!e && seq && !whole && nmine < 2)
            e = new_entry(g, s, now);
        if (!e)
            continue;
        if (e->refs == 0)
            g->st.waits++;
        else
            g->st.joined++;
        add_piece(e, (uint32_t)(lo - s * ss), (uint32_t)(hi - s * ss), p + (lo - sector) * SECTOR);
        mine[nmine++] = e;
        if (e->covered == ss) {
            e->state = G_WRITING;
            g->st.whole++;
            g->misses = 0;
            write_now[nwrite++] = e;
        }
    }
    pthread_mutex_unlock(&g->mu);
    /* the stripes no entry holds, in runs, then the entries made whole */
    int rc = 0;
    uint64_t run = sector;
    for (uint64_t s = s0; s < s1; s++) {
        int held = 0;
        for (int i = 0; i < nmine; i++)
            held |= mine[i]->stripe == s;
        if (!held)
            continue;
        uint64_t lo = s * ss > sector ? s * ss : sector;
        if (lo > run) {
            int r = array_write_direct(a, p + (run - sector) * SECTOR, run, lo);
            rc = rc ? rc : r;
        }
        run = (s + 1) * ss < end ? (s + 1) * ss : end;
    }
    if (end > run) {
        int r = array_write_direct(a, p + (run - sector) * SECTOR, run, end);
        rc = rc ? rc : r;
    }
    for (int i = 0; i < nwrite; i++)
        finish_entry(a, g, write_now[i]);
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < nmine; i++) {
        int r = wait_entry(a, g, mine[i]);
        rc = rc ? rc : r;
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}
