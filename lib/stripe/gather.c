/* Partial-stripe writes of a sequential stream gathered into whole
 * stripes, as md's stripe cache completes them: requests reach the array
 * cut by the front-end (loop and FUSE: at most 1 MiB, one at a time for
 * an O_DIRECT writer), never a whole stripe of a wide array (14 x 64 KiB
 * = 896 KiB), so each stripe would be written in two or three pieces,
 * each with its reads.
 *
 * A partial stripe of a stream is kept in a table of open stripes and its
 * request acknowledged at once, as a disk's write cache acknowledges; the
 * stream's next request brings the rest of the stripe, and the thread
 * that completes a stripe writes it as one full-stripe write with no
 * reads (and no partial parity: PPL logs nothing for it). A stripe not
 * completed within URAID_GATHER_US of its request's answer (off by default;
 * 50 ms measured best) is written
 * by the table's thread in its pieces, the usual read-modify-write /
 * reconstruct-write.
 *
 * Which pieces are kept (the predictor): a partial stripe of a request
 * that touches a recent request's end or start (the stream's next or
 * previous request), or of a large request (>= 256 KiB) a little ahead of
 * one (its predecessors still in flight). A random write touches nothing
 * recent and is never kept. A stream whose stripes keep timing out stops
 * being kept, and is tried again every 16th piece.
 *
 * Why it is safe (gather_settle): an acknowledged piece is only in memory,
 * like a disk's volatile cache, so
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
 * write error of a kept stripe is returned by the next flush.
 *
 * Why it is safe against member failures (gather_allowed): a kept stripe
 * must still be writable when its time runs out, so stripes are kept only
 * while the array can lose one more member and still write (fewer slots
 * out of sync than parities: a healthy RAID-4/5, a RAID-6 missing at most
 * one). When a member fails, array_member_failed calls gather_kick and
 * the table's thread writes every open stripe at once, degraded, while
 * that is still possible; a write arriving while the array cannot lose
 * another member is not kept (and settles the open stripes it touches).
 *
 * States of an entry: FREE --a piece--> OPEN (pieces join) --whole, timed
 * out, or settled--> WRITING (one thread writes it) --> FREE. */
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

enum gstate { G_FREE = 0, G_OPEN, G_WRITING };

struct gentry {
    enum gstate state;
    uint64_t stripe;
    uint64_t deadline;    /* CLOCK_MONOTONIC ns */
    uint32_t covered;     /* sectors of the stripe written by some piece */
    uint8_t *buf;         /* the stripe's data, ss sectors */
    unsigned char *bits;  /* sector bitmap of the pieces */
};

struct recent {
    uint64_t start, end, when;
};

struct stripe_gather {
    struct uraid_array *a;
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* an entry left WRITING, or the thread has work */
    pthread_t thread;     /* writes the stripes whose time ran out */
    int thread_started, stop;
    uint64_t wait_ns;
    uint32_t ss;          /* sectors of a stripe's data */
    int busy;             /* atomic: entries not FREE (0: reads need not look) */
    int deferred_rc;      /* a kept stripe's write failed: the next flush says so */
    struct gentry e[GATHER_ENTRIES];
    struct recent r[GATHER_RECENT];
    unsigned rnext;       /* atomic */
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

/* Off unless asked for (50000 is the value measured for a stream: 1-10 ms
 * kept timing out under load, RESULTS.md). A kept stripe is acknowledged
 * before it is written, so a kill -9 of the server loses it although no
 * member lost power: md acknowledges only what its members hold (ublk.sh's
 * "written across the kill" failed in CI with this on). */
#define GATHER_DEFAULT_US 0

static uint64_t gather_wait_us(void)
{
    const char *v = getenv("URAID_GATHER_US");
    if (!v || !*v)
        return GATHER_DEFAULT_US;
    char *end;
    unsigned long long us = strtoull(v, &end, 10);
    return *end ? 0 : us > 10000000 ? 10000000 : us; /* at most 10 s (tests wait long to be sure) */
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

void gather_kick(struct stripe_gather *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    pthread_cond_broadcast(&g->cv); /* the thread looks at gather_allowed again */
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
    int rc = 0;
    for (int i = 0; i < n; i++) {
        int r = write_entry(g->a, g, list[i]);
        rc = rc ? rc : r;
    }
    pthread_mutex_lock(&g->mu);
    if (rc && !g->deferred_rc)
        g->deferred_rc = rc; /* pieces acknowledged before: the next flush fails */
    for (int i = 0; i < n; i++)
        list[i]->state = G_FREE;
    __atomic_sub_fetch(&g->busy, n, __ATOMIC_RELEASE);
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

struct stripe_gather *gather_create(struct uraid_array *a)
{
    uint64_t ss = (uint64_t)a->k * a->geom.chunk_sectors;
    uint64_t us = gather_wait_us();
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
    pthread_condattr_destroy(&ca);
    g->wait_ns = us * 1000;
    g->ss = (uint32_t)ss;
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
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* Does [start, end) belong to a stream? Recorded as recent either way.
 * Without the table's lock (every random write passes here, from many
 * threads): the fields are atomics, and a record torn by a concurrent
 * writer can only make one guess wrong, never a write. */
static int predict(struct stripe_gather *g, uint64_t start, uint64_t end, uint64_t now)
{
    int seq = 0;
    uint64_t len = end - start;
    for (int i = 0; i < GATHER_RECENT && !seq; i++) {
        struct recent *r = &g->r[i];
        uint64_t rs = __atomic_load_n(&r->start, __ATOMIC_RELAXED), re = __atomic_load_n(&r->end, __ATOMIC_RELAXED);
        if (re == 0 || now - __atomic_load_n(&r->when, __ATOMIC_RELAXED) > GATHER_RECENT_NS + g->wait_ns)
            continue;
        if (re == start || rs == end)
            seq = 1;
        else if (len >= GATHER_BIG_SECTORS && start > re && start - re <= 4 * len)
            seq = 1;
    }
    struct recent *r = &g->r[__atomic_fetch_add(&g->rnext, 1, __ATOMIC_RELAXED) % GATHER_RECENT];
    __atomic_store_n(&r->when, now, __ATOMIC_RELAXED);
    __atomic_store_n(&r->start, start, __ATOMIC_RELAXED);
    __atomic_store_n(&r->end, end, __ATOMIC_RELAXED);
    if (seq && __atomic_load_n(&g->misses, __ATOMIC_RELAXED) >= 4 &&
        (__atomic_fetch_add(&g->skip, 1, __ATOMIC_RELAXED) % 16) != 0) {
        __atomic_add_fetch(&g->backed_off, 1, __ATOMIC_RELAXED);
        return 0; /* this stream's stripes are not completed in time: let it through */
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
        __atomic_add_fetch(&g->busy, 1, __ATOMIC_RELEASE);
        g->st.kept++;
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

int gather_write(struct uraid_array *a, struct stripe_gather *g, const uint8_t *p, uint64_t sector, uint64_t end)
{
    uint64_t ss = g->ss, s0 = sector / ss, s1 = (end - 1) / ss + 1;
    struct gentry *held[GATHER_ENTRIES], *whole[GATHER_ENTRIES];
    uint64_t held_stripe[GATHER_ENTRIES];
    int nheld = 0, nwhole = 0;
    uint64_t now = now_ns();
    if (!gather_allowed(a)) { /* nothing kept: what is open here is written first */
        int rc = gather_settle(g, sector, end);
        int r = array_write_direct(a, p, sector, end);
        return rc ? rc : r;
    }
    int seq = predict(g, sector, end, now);
    /* nothing open and nothing to keep (a random write): no lock. A piece
     * acknowledged before this write began made busy non-zero first, so a
     * write that must join or follow a kept stripe never comes this way. */
    if (!seq && __atomic_load_n(&g->busy, __ATOMIC_ACQUIRE) == 0)
        return array_write_direct(a, p, sector, end);
    pthread_mutex_lock(&g->mu);
    wait_writing(g, sector, end); /* an earlier write of these sectors lands first */
    for (uint64_t s = s0; s < s1; s++) {
        uint64_t lo = s * ss > sector ? s * ss : sector, hi = (s + 1) * ss < end ? (s + 1) * ss : end;
        int full = lo == s * ss && hi == (s + 1) * ss;
        struct gentry *e = find_open(g, s);
        if (e)
            g->st.joined++;
        else if (seq && !full)
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
        }
    }
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
    /* the wait is for the stream's next request, which comes only once
     * this one is answered: it counts from now, not from when the piece
     * was kept (this request's own stripes took their time) */
    now = now_ns();
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < nheld; i++)
        if (held[i]->state == G_OPEN && held[i]->stripe == held_stripe[i] && held[i]->deadline < now + g->wait_ns)
            held[i]->deadline = now + g->wait_ns;
    pthread_mutex_unlock(&g->mu);
    return rc ? rc : r;
}
