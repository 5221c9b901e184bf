/* Partial-stripe writes gathered into whole stripes (lib/stripe/gather.c),
 * counted by the member reads and writes they cost:
 *   - a sequential stream cut into requests that are not whole stripes,
 *     one request at a time and from four threads at once: every stripe
 *     written whole, no member read (RAID-5 and RAID-6 healthy, RAID-6
 *     missing one, with a PPL, with a bitmap);
 *   - an array that cannot lose another member (RAID-5 missing one,
 *     RAID-6 missing two) keeps nothing: a kept stripe could not be
 *     written once one more member failed;
 *   - a member failing while pieces are kept: they are written at once,
 *     degraded, and survive a second failure that follows;
 *   - random writes are never kept;
 *   - a kept piece whose stripe is never completed is written when its time
 *     runs out, the usual read-modify-write way;
 *   - a flush writes every kept piece before it returns (durable: read
 *     back after a reopen), a read of a kept piece sees it, a zeroing after
 *     it wins;
 *   - URAID_GATHER_US=0 turns it off;
 *   - the stripe cache (lib/stripe/cache.c): with gathering off, the second
 *     piece of a stripe reads nothing, and a stripe changed since (zeroed)
 *     is read again, so parity stays right.
 * Deterministic: the waits are long (seconds) where pieces must meet, and
 * the threads start at a barrier, so no count depends on scheduling; the
 * data written is random (its seed printed) and read back byte for byte. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array/array.h"
#include "array_fixture.h"
#include "harness.h"
#include "stripe/cache.h"
#include "stripe/gather.h"

static struct rng rng;

#define CHUNK (64u << 10)
#define MEMBER (4u << 20)
#define THREADS 4
#define BASE_STRIPE 8

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static struct gather_stats stats_of(struct uraid_array *a)
{
    struct gather_stats s;
    gather_stats(__atomic_load_n(&a->gather, __ATOMIC_ACQUIRE), &s);
    return s;
}

/* The whole stripe before BASE_STRIPE, written so the stream has a
 * predecessor (the predictor's "recent request"), and the counters reset. */
static void prime(struct fx *f, struct uraid_array *a)
{
    uint8_t *buf = aligned_alloc(4096, f->stripe_bytes);
    rng_fill(&rng, buf, f->stripe_bytes);
    CHECK(fx_write(f, a, buf, f->stripe_bytes, (BASE_STRIPE - 1) * f->stripe_bytes) == 0, "%s: prime", f->label);
    free(buf);
    uraid_reset_counters(a);
}

struct piece {
    struct fx *f;
    struct uraid_array *a;
    pthread_barrier_t *go;
    const uint8_t *buf;
    size_t len;
    uint64_t off;
    int rc;
};

static void *write_piece(void *arg)
{
    struct piece *p = arg;
    pthread_barrier_wait(p->go);
    p->rc = fx_write(p->f, p->a, p->buf, p->len, p->off);
    return NULL;
}

/* THREADS requests of 5/4 stripe each, one stream from BASE_STRIPE (every
 * stripe but the first and last cut between two requests), at once. */
static void stream_at_once(struct fx *f, struct uraid_array *a, int together)
{
    size_t len = (size_t)f->stripe_bytes * 5 / 4;
    uint8_t *buf = aligned_alloc(4096, len * THREADS);
    rng_fill(&rng, buf, len * THREADS);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, THREADS);
    struct piece p[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        p[i] = (struct piece){.f = f, .a = a, .go = &go, .buf = buf + len * (size_t)i, .len = len,
                              .off = BASE_STRIPE * f->stripe_bytes + len * (uint64_t)i};
    for (int i = 0; !together && i < THREADS; i++) {
        p[i].rc = fx_write(f, a, p[i].buf, p[i].len, p[i].off);
        CHECK(p[i].rc == 0, "%s: request %d: %d", f->label, i, p[i].rc);
    }
    pthread_barrier_destroy(&go);
    pthread_barrier_init(&go, NULL, THREADS);
    for (int i = 0; together && i < THREADS; i++)
        pthread_create(&t[i], NULL, write_piece, &p[i]);
    for (int i = 0; together && i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK(p[i].rc == 0, "%s: request %d: %d", f->label, i, p[i].rc);
    }
    pthread_barrier_destroy(&go);
    free(buf);
}

/* The stream's stripes (5 of them) each written whole: writes to every
 * available member, no reads. */
static void stream_case(int level, int n, const unsigned omit, int policy, const char *what, int together)
{
    int held = together == 2; /* the default: each request waits for its pieces' writes */
    harness_beginf("RAID-%d of %d %s: a stream in 5/4-stripe requests %s: whole stripes, no reads", level, n, what,
                   held ? "from 4 threads at once, held (the default)"
                   : together ? "from 4 threads at once, answered at once" : "one at a time, answered at once");
    if (held) {
        unsetenv("URAID_GATHER_US");
        setenv("URAID_GATHER_HOLD_US", "5000000", 1);
        gather_test_patient = 1; /* pieces always meet: no count depends on timing */
    } else {
        setenv("URAID_GATHER_US", "5000000", 1); /* pieces always meet: no count depends on timing */
    }
    fx_policy = policy == URAID_POLICY_BITMAP ? URAID_POLICY_RESYNC : policy;
    struct fx f;
    int rc = fx_create_bitmap(&f, level, n, CHUNK, MEMBER, policy == URAID_POLICY_BITMAP ? 65536 : 0);
    struct uraid_array *full = rc == 0 ? fx_open(&f, NULL, 0, 0) : NULL;
    if (full) {
        fx_fill(&f, full, &rng);
        uraid_close(full);
    }
    if (full) {
        struct uraid_open_params op = {.force = 1};
        struct uraid_array *a = NULL;
        if (fx_open_with(&f, omit, NULL, NULL, 0, &op, &a) == 0) {
            prime(&f, a);
            stream_at_once(&f, a, together);
            struct uraid_counters c = fx_counters(a);
            struct gather_stats g = stats_of(a);
            int avail = n - __builtin_popcount(omit);
            printf("  %s: reads %llu writes %llu, full stripes %llu rmw %llu rcw %llu; gathered %llu whole, "
                   "%llu timed out\n", f.label, (unsigned long long)c.member_reads,
                   (unsigned long long)c.member_writes, (unsigned long long)c.writes_full_stripe,
                   (unsigned long long)c.writes_rmw, (unsigned long long)c.writes_rcw,
                   (unsigned long long)g.whole, (unsigned long long)g.timeouts);
            CHECK(c.member_reads == 0, "%s: %llu member reads, expected 0", f.label,
                  (unsigned long long)c.member_reads);
            CHECK(c.writes_full_stripe == 5 && c.writes_rmw == 0 && c.writes_rcw == 0,
                  "%s: full/rmw/rcw %llu/%llu/%llu, expected 5/0/0", f.label,
                  (unsigned long long)c.writes_full_stripe, (unsigned long long)c.writes_rmw,
                  (unsigned long long)c.writes_rcw);
            /* whole stripes need no partial parity: no PPL writes either */
            CHECK(c.member_writes == (uint64_t)(5 * avail),
                  "%s: %llu member writes, expected %d", f.label, (unsigned long long)c.member_writes, 5 * avail);
            CHECK(g.whole == 3 && g.timeouts == 0, "%s: gathered %llu whole, %llu timed out; expected 3 and 0",
                  f.label, (unsigned long long)g.whole, (unsigned long long)g.timeouts);
            /* held: every answered request's data is on the members, none kept in memory */
            CHECK(!held || g.open == 0, "%s: %llu stripes still kept after every request was answered", f.label,
                  (unsigned long long)g.open);
            fx_verify_all(&f, a, "after the stream");
            uraid_close(a);
            if (omit == 0 && policy != URAID_POLICY_PPL) {
                a = fx_open(&f, NULL, 0, 0);
                struct uraid_job_status st;
                if (a && fx_job(&f, a, URAID_JOB_CHECK, NULL, &st) == 0)
                    CHECK(st.mismatch_sectors == 0, "%s: mismatch_cnt %llu", f.label,
                          (unsigned long long)st.mismatch_sectors);
                uraid_close(a);
            }
        }
    }
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    gather_test_patient = 0;
    unsetenv("URAID_GATHER_HOLD_US");
    harness_end();
}

/* An array that cannot lose another member keeps nothing: the stream's
 * pieces are written as they come (reads for the partial stripes), and
 * every byte reads back. */
static void no_keep_case(int level, int n, unsigned omit, const char *what)
{
    harness_beginf("RAID-%d of %d %s: nothing kept (one more failure would leave a kept stripe unwritable)", level, n,
                   what);
    setenv("URAID_GATHER_US", "5000000", 1);
    struct fx f;
    int rc = fx_create(&f, level, n, CHUNK, MEMBER);
    struct uraid_array *full = rc == 0 ? fx_open(&f, NULL, 0, 0) : NULL;
    if (full) {
        fx_fill(&f, full, &rng);
        uraid_close(full);
        struct uraid_open_params op = {.force = 1};
        struct uraid_array *a = NULL;
        if (fx_open_with(&f, omit, NULL, NULL, 0, &op, &a) == 0) {
            prime(&f, a);
            uint64_t t0 = now_ms();
            stream_at_once(&f, a, 0);
            uint64_t ms = now_ms() - t0;
            struct uraid_counters c = fx_counters(a);
            struct gather_stats g = stats_of(a);
            printf("  %s: %llu ms, reads %llu, full stripes %llu; kept %llu joined %llu\n", f.label,
                   (unsigned long long)ms, (unsigned long long)c.member_reads,
                   (unsigned long long)c.writes_full_stripe, (unsigned long long)g.kept, (unsigned long long)g.joined);
            CHECK(g.kept == 0 && g.joined == 0 && g.open == 0, "%s: kept %llu joined %llu open %llu, expected none",
                  f.label, (unsigned long long)g.kept, (unsigned long long)g.joined, (unsigned long long)g.open);
            CHECK(c.member_reads > 0 && c.writes_full_stripe == 2, "%s: reads %llu full %llu, expected some and 2",
                  f.label, (unsigned long long)c.member_reads, (unsigned long long)c.writes_full_stripe);
            CHECK(ms < 4000, "%s: the stream took %llu ms (waited for a kept stripe?)", f.label,
                  (unsigned long long)ms);
            fx_verify_all(&f, a, "after the stream");
            uraid_close(a);
        }
    }
    fx_destroy(&f);
    harness_end();
}

/* Pieces kept on a healthy RAID-5 (their wait 10 s), then a member fails:
 * the table writes them at once, degraded, long before their time runs
 * out (so no later failure can catch them in memory), and the reopened
 * array without the failed member holds every byte. */
static void member_fails_case(void)
{
    harness_begin("RAID-5: a member fails while pieces are kept: written at once, degraded, before a second fails");
    setenv("URAID_GATHER_US", "10000000", 1);
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 5, 5, CHUNK, MEMBER, &rng, 0, &a) == 0 && a) {
        prime(&f, a);
        uint8_t *buf = aligned_alloc(4096, 2 * CHUNK);
        rng_fill(&rng, buf, 2 * CHUNK);
        uint64_t at = BASE_STRIPE * f.stripe_bytes;
        CHECK(fx_write(&f, a, buf, CHUNK, at) == 0);
        CHECK(fx_write(&f, a, buf + CHUNK, CHUNK, at - CHUNK) == 0); /* before it: the stripe before, kept too */
        struct gather_stats g = stats_of(a);
        CHECK(g.open == 2 && fx_counters(a).member_writes == 0, "before the failure: %llu open, %llu member writes",
              (unsigned long long)g.open, (unsigned long long)fx_counters(a).member_writes);
        char why[256];
        uint64_t t0 = now_ms();
        CHECK(array_manage_fail(a, f.path[3], why, sizeof why) == 0, "fail %s: %s", f.path[3], why);
        for (int i = 0; i < 5000 && stats_of(a).open > 0; i++) /* 5 s at most; the wait was 10 s */
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        uint64_t ms = now_ms() - t0;
        g = stats_of(a);
        printf("  written %llu ms after the failure; drained %llu, timed out %llu\n", (unsigned long long)ms,
               (unsigned long long)g.drained, (unsigned long long)g.timeouts);
        CHECK(g.open == 0 && g.drained == 2 && g.timeouts == 0, "open %llu drained %llu timeouts %llu, expected 0, 2, 0",
              (unsigned long long)g.open, (unsigned long long)g.drained, (unsigned long long)g.timeouts);
        /* nothing is kept any more: the stream's next piece goes out at once */
        CHECK(fx_write(&f, a, buf, CHUNK, at + CHUNK) == 0);
        CHECK(stats_of(a).open == 0 && stats_of(a).kept == 2, "a piece was kept on a degraded RAID-5");
        fx_verify_all(&f, a, "degraded, after the failure");
        CHECK(uraid_close(a) == 0);
        fx_verify_omitting(&f, FX_SLOT(3), 0, "reopened without the failed member");
        free(buf);
    }
    fx_destroy(&f);
    harness_end();
}

/* 4 KiB writes at random places (no two within a stripe of each other, so
 * none continues another): none waits, though a wait would be 5 s. */
static void random_case(void)
{
    harness_begin("random 4 KiB writes are never kept");
    setenv("URAID_GATHER_US", "5000000", 1);
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 5, 5, CHUNK, MEMBER, &rng, 0, &a) == 0 && a) {
        uint64_t stripes = f.size / f.stripe_bytes;
        uint8_t buf[4096];
        uint64_t t0 = now_ms();
        int nw = 0;
        /* every other stripe, never at a stripe's first or last 4 KiB (the
         * fill's requests end on stripe boundaries): no write touches
         * another's end or start */
        for (uint64_t s = 0; s + 1 < stripes && nw < 40; s += 2, nw++) {
            rng_fill(&rng, buf, sizeof buf);
            uint64_t off = s * f.stripe_bytes + (1 + rng_below(&rng, f.stripe_bytes / 4096 - 2)) * 4096;
            CHECK(fx_write(&f, a, buf, sizeof buf, off) == 0);
        }
        uint64_t ms = now_ms() - t0;
        struct gather_stats g = stats_of(a);
        printf("  %d writes in %llu ms, %llu kept\n", nw, (unsigned long long)ms, (unsigned long long)g.kept);
        CHECK(g.kept == 0 && g.joined == 0, "%llu random writes kept, %llu joined", (unsigned long long)g.kept,
              (unsigned long long)g.joined);
        CHECK(ms < 4000, "random writes took %llu ms", (unsigned long long)ms);
        fx_verify_all(&f, a, "after random writes");
        uraid_close(a);
    }
    fx_destroy(&f);
    harness_end();
}

/* A lone chunk of a 4+1 RAID-5 written in its piece: one read-modify-write
 * (old data and P read, new data and P written). */
static void expect_one_rmw(const struct uraid_counters *c)
{
    CHECK(c->member_reads == 2 && c->member_writes == 2 && c->writes_rmw == 1,
          "reads %llu writes %llu rmw %llu, expected 2, 2, 1", (unsigned long long)c->member_reads,
          (unsigned long long)c->member_writes, (unsigned long long)c->writes_rmw);
}

/* One piece of a stream whose stripe no other request completes: kept,
 * then written when its 20 ms run out, by read-modify-write (one data
 * chunk of a 4+1 RAID-5: old data and P read). */
static void timeout_case(void)
{
    harness_begin("a kept piece never completed is written when its time runs out, by read-modify-write");
    setenv("URAID_GATHER_US", "20000", 1);
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 5, 5, CHUNK, MEMBER, &rng, 0, &a) == 0 && a) {
        prime(&f, a);
        uint8_t *buf = aligned_alloc(4096, CHUNK);
        rng_fill(&rng, buf, CHUNK);
        uint64_t t0 = now_ms();
        CHECK(fx_write(&f, a, buf, CHUNK, BASE_STRIPE * f.stripe_bytes) == 0);
        struct gather_stats g = stats_of(a);
        CHECK(g.kept == 1, "kept %llu, expected 1", (unsigned long long)g.kept);
        for (int i = 0; i < 10000 && stats_of(a).timeouts == 0; i++) /* 10 s at most */
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        for (int i = 0; i < 10000 && stats_of(a).open > 0; i++)
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        uint64_t ms = now_ms() - t0;
        struct uraid_counters c = fx_counters(a);
        g = stats_of(a);
        printf("  written within %llu ms; reads %llu writes %llu rmw %llu; %llu timed out\n", (unsigned long long)ms,
               (unsigned long long)c.member_reads, (unsigned long long)c.member_writes,
               (unsigned long long)c.writes_rmw, (unsigned long long)g.timeouts);
        CHECK(ms >= 20, "the piece was written after %llu ms, before its 20 ms", (unsigned long long)ms);
        CHECK(g.timeouts == 1 && g.whole == 0 && g.settled == 0, "timeouts %llu whole %llu settled %llu",
              (unsigned long long)g.timeouts, (unsigned long long)g.whole, (unsigned long long)g.settled);
        expect_one_rmw(&c);
        free(buf);
        fx_verify_all(&f, a, "after the timeout");
        uraid_close(a);
    }
    fx_destroy(&f);
    harness_end();
}

/* A kept piece (its wait 10 s): nothing reaches the members until the
 * flush, which writes it before it returns; reopened, the array holds it. */
static void flush_case(void)
{
    harness_begin("a flush writes every kept piece before it returns");
    setenv("URAID_GATHER_US", "10000000", 1);
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 6, 6, CHUNK, MEMBER, &rng, 0, &a) == 0 && a) {
        prime(&f, a);
        uint8_t *buf = aligned_alloc(4096, CHUNK);
        rng_fill(&rng, buf, CHUNK);
        CHECK(fx_write(&f, a, buf, CHUNK, BASE_STRIPE * f.stripe_bytes) == 0);
        struct uraid_counters c = fx_counters(a);
        struct gather_stats g = stats_of(a);
        CHECK(g.open == 1 && c.member_writes == 0, "before the flush: %llu open, %llu member writes",
              (unsigned long long)g.open, (unsigned long long)c.member_writes);
        uint64_t t0 = now_ms();
        CHECK(uraid_flush(a) == 0);
        uint64_t ms = now_ms() - t0;
        c = fx_counters(a);
        g = stats_of(a);
        printf("  flush took %llu ms; member writes %llu reads %llu; settled %llu\n", (unsigned long long)ms,
               (unsigned long long)c.member_writes, (unsigned long long)c.member_reads, (unsigned long long)g.settled);
        CHECK(g.open == 0 && g.settled == 1 && c.member_writes == 3 && c.member_reads == 3,
              "after the flush: open %llu settled %llu, %llu writes %llu reads (expected 0, 1, 3, 3)",
              (unsigned long long)g.open, (unsigned long long)g.settled, (unsigned long long)c.member_writes,
              (unsigned long long)c.member_reads);
        free(buf);
        uraid_close(a);
        fx_verify_omitting(&f, 0, 0, "reopened after the flush");
    }
    fx_destroy(&f);
    harness_end();
}

/* A kept piece read back at once (the read writes it first), and a kept
 * piece zeroed over by write-zeroes of its whole stripe (the zeroes land
 * after it). */
static void read_zero_case(void)
{
    harness_begin("a read sees a kept piece; write-zeroes after a kept piece wins");
    setenv("URAID_GATHER_US", "10000000", 1);
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 5, 5, CHUNK, MEMBER, &rng, 0, &a) == 0 && a) {
        prime(&f, a);
        size_t len2 = f.stripe_bytes; /* the first stripe's rest, and the next one's first chunk */
        uint8_t *buf = aligned_alloc(4096, CHUNK + len2);
        rng_fill(&rng, buf, CHUNK + len2);
        uint64_t at = BASE_STRIPE * f.stripe_bytes;
        CHECK(fx_write(&f, a, buf, CHUNK, at) == 0);
        CHECK(stats_of(a).open == 1, "the piece was not kept");
        fx_verify(&f, a, at, f.stripe_bytes, "a kept piece read back");
        CHECK(stats_of(a).settled == 1 && stats_of(a).open == 0, "the read did not write the kept piece");
        /* the stream goes on: its first stripe can no longer be whole (a
         * piece of it is written), so only the next stripe's piece is
         * kept, then zeroed */
        CHECK(fx_write(&f, a, buf + CHUNK, len2, at + CHUNK) == 0);
        CHECK(stats_of(a).open == 1, "the second piece was not kept");
        CHECK(uraid_write_zeroes(a, f.stripe_bytes, at + f.stripe_bytes) == 0);
        memset(f.model + at + f.stripe_bytes, 0, f.stripe_bytes);
        CHECK(stats_of(a).open == 0, "the zeroing left the piece kept");
        free(buf);
        fx_verify_all(&f, a, "after the zeroing");
        uraid_close(a);
        fx_verify_omitting(&f, 0, 0, "reopened");
    }
    fx_destroy(&f);
    harness_end();
}

/* Gathering turned off (URAID_GATHER_US=0, URAID_GATHER_HOLD_US=0): no
 * table, each piece its own read-modify-write or reconstruct-write, so the
 * stream costs reads. And the default (held) with a stream of one request
 * at a time: no other request of it is ever in flight to complete a piece,
 * so nothing is held (no wait: the whole stream well inside one hold). */
static void off_case(int which)
{
    static const char *const what[] = {"URAID_GATHER_US=0: no gathering", "URAID_GATHER_HOLD_US=0: no gathering",
                                       "the default (held), one request at a time: nothing held"};
    harness_beginf("%s, the stream's pieces read", what[which]);
    unsetenv("URAID_GATHER_US");
    unsetenv("URAID_GATHER_HOLD_US");
    if (which == 0)
        setenv("URAID_GATHER_US", "0", 1);
    else if (which == 1)
        setenv("URAID_GATHER_HOLD_US", "0", 1);
    else
        setenv("URAID_GATHER_HOLD_US", "5000000", 1);
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 5, 5, CHUNK, MEMBER, &rng, 0, &a) == 0 && a) {
        prime(&f, a);
        uint64_t t0 = now_ms();
        stream_at_once(&f, a, which < 2);
        uint64_t ms = now_ms() - t0;
        struct uraid_counters c = fx_counters(a);
        struct gather_stats g = stats_of(a);
        printf("  reads %llu, full stripes %llu, kept %llu, %llu ms\n", (unsigned long long)c.member_reads,
               (unsigned long long)c.writes_full_stripe, (unsigned long long)g.kept, (unsigned long long)ms);
        if (which < 2)
            CHECK(__atomic_load_n(&a->gather, __ATOMIC_ACQUIRE) == NULL, "a gather table was made");
        else
            CHECK(__atomic_load_n(&a->gather, __ATOMIC_ACQUIRE) != NULL && g.kept == 0 && ms < 2500,
                  "held mode: kept %llu in %llu ms, expected 0 well inside the 5 s hold", (unsigned long long)g.kept,
                  (unsigned long long)ms);
        CHECK(c.member_reads > 0 && c.writes_full_stripe == 2, "reads %llu full %llu, expected some and 2",
              (unsigned long long)c.member_reads, (unsigned long long)c.writes_full_stripe);
        fx_verify_all(&f, a, "without gathering");
        uraid_close(a);
    }
    unsetenv("URAID_GATHER_HOLD_US");
    fx_destroy(&f);
    harness_end();
}

/* Held: a piece whose stripe no request completes is written by its own
 * request when its time (200 ms) runs out, by read-modify-write, and the
 * request is answered only then, with nothing left kept. */
static void held_timeout_case(void)
{
    harness_begin("held: a piece never completed is written by its request after its time, then answered");
    unsetenv("URAID_GATHER_US");
    setenv("URAID_GATHER_HOLD_US", "200000", 1);
    gather_test_patient = 1;
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 5, 5, CHUNK, MEMBER, &rng, 0, &a) == 0 && a) {
        prime(&f, a);
        uint8_t *buf = aligned_alloc(4096, CHUNK);
        rng_fill(&rng, buf, CHUNK);
        uint64_t t0 = now_ms();
        CHECK(fx_write(&f, a, buf, CHUNK, BASE_STRIPE * f.stripe_bytes) == 0);
        uint64_t ms = now_ms() - t0;
        struct uraid_counters c = fx_counters(a);
        struct gather_stats g = stats_of(a);
        printf("  answered after %llu ms; reads %llu writes %llu rmw %llu; kept %llu, %llu timed out, %llu open\n",
               (unsigned long long)ms, (unsigned long long)c.member_reads, (unsigned long long)c.member_writes,
               (unsigned long long)c.writes_rmw, (unsigned long long)g.kept, (unsigned long long)g.timeouts,
               (unsigned long long)g.open);
        CHECK(ms >= 200, "answered after %llu ms, before the piece's 200 ms", (unsigned long long)ms);
        CHECK(g.kept == 1 && g.timeouts == 1 && g.open == 0, "kept %llu timeouts %llu open %llu, expected 1 1 0",
              (unsigned long long)g.kept, (unsigned long long)g.timeouts, (unsigned long long)g.open);
        expect_one_rmw(&c);
        free(buf);
        fx_verify_all(&f, a, "after the held piece");
        uraid_close(a);
    }
    gather_test_patient = 0;
    unsetenv("URAID_GATHER_HOLD_US");
    fx_destroy(&f);
    harness_end();
}

static void expect_consistent(struct fx *f, struct uraid_array *a, const char *what);

struct shared_stream {
    struct fx *f;
    struct uraid_array *a;
    const uint8_t *buf;
    size_t len;
    int next, total, rc;
};

static void *stream_worker(void *arg)
{
    struct shared_stream *s = arg;
    for (;;) {
        int i = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
        if (i >= s->total)
            return NULL;
        uint64_t off = BASE_STRIPE * s->f->stripe_bytes + s->len * (uint64_t)i;
        int rc = uraid_write(s->a, s->buf + s->len * (size_t)i, s->len, off);
        if (rc)
            __atomic_store_n(&s->rc, rc, __ATOMIC_RELAXED);
    }
}

/* Held, as a user's writer drives it: one stream with two requests in
 * flight (two threads taking its next request in turn, fio's iodepth=2),
 * no test hook. Pieces meet whenever the other request is in flight;
 * every request is answered with its data on the members, and the data
 * read back byte for byte. How many stripes went whole depends on the
 * scheduling: printed, and at least one. */
static void company_case(void)
{
    harness_begin("held, a stream with 2 requests in flight (no test hook): stripes gathered, nothing kept after");
    unsetenv("URAID_GATHER_US");
    setenv("URAID_GATHER_HOLD_US", "1000000", 1);
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 5, 5, CHUNK, MEMBER, &rng, 0, &a) == 0 && a) {
        prime(&f, a);
        struct shared_stream s = {.f = &f, .a = a, .len = (size_t)f.stripe_bytes * 5 / 4, .total = 32};
        uint8_t *buf = aligned_alloc(4096, s.len * (size_t)s.total);
        rng_fill(&rng, buf, s.len * (size_t)s.total);
        s.buf = buf;
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, stream_worker, &s);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        memcpy(f.model + BASE_STRIPE * f.stripe_bytes, buf, s.len * (size_t)s.total);
        struct gather_stats g = stats_of(a);
        struct uraid_counters c = fx_counters(a);
        printf("  %d requests: %llu stripes whole, %llu in pieces, %llu backed off, %llu kept now; member reads %llu\n", s.total,
               (unsigned long long)g.whole, (unsigned long long)g.timeouts, (unsigned long long)g.backed_off,
               (unsigned long long)g.open, (unsigned long long)c.member_reads);
        CHECK(s.rc == 0, "a write failed: %d", s.rc);
        CHECK(g.whole >= 1 && g.open == 0, "%llu whole (expected some), %llu kept after every answer",
              (unsigned long long)g.whole, (unsigned long long)g.open);
        free(buf);
        fx_verify_all(&f, a, "after the stream");
        expect_consistent(&f, a, "after the stream");
        uraid_close(a);
    }
    unsetenv("URAID_GATHER_HOLD_US");
    fx_destroy(&f);
    harness_end();
}

/* One write of len bytes at off; the member reads and the method counts it
 * cost, in *c. */
static void counted_write(struct fx *f, struct uraid_array *a, uint64_t off, size_t len, struct uraid_counters *c)
{
    uint8_t *buf = aligned_alloc(4096, len);
    rng_fill(&rng, buf, len);
    uraid_reset_counters(a);
    CHECK(fx_write(f, a, buf, len, off) == 0, "%s: write of %zu at %llu", f->label, len, (unsigned long long)off);
    *c = fx_counters(a);
    printf("  %zu bytes at %llu: reads %llu writes %llu (rmw %llu rcw %llu)\n", len, (unsigned long long)off,
           (unsigned long long)c->member_reads, (unsigned long long)c->member_writes,
           (unsigned long long)c->writes_rmw, (unsigned long long)c->writes_rcw);
    free(buf);
}

static void expect_consistent(struct fx *f, struct uraid_array *a, const char *what)
{
    struct uraid_job_status st;
    if (fx_job(f, a, URAID_JOB_CHECK, NULL, &st) == 0)
        CHECK(st.mismatch_sectors == 0, "%s: %s: mismatch_cnt %llu", f->label, what,
              (unsigned long long)st.mismatch_sectors);
    fx_verify_all(f, a, what);
}

static void cache_case(void)
{
    harness_begin("stripe cache: a stripe's second piece reads nothing; a stripe changed since is read again");
    setenv("URAID_GATHER_US", "0", 1); /* the pieces one after another, each its own write */
    setenv("URAID_STRIPE_CACHE", "1", 1); /* off by default */
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 6, 8, CHUNK, MEMBER, &rng, 0, &a) == 0 && a) {
        struct uraid_counters c;
        stripe_cache_clear(stripe_cache_of(a)); /* the fill's pieces were cached too */
        /* 2 of 6 chunks: 4 reads either way, reconstruct-write on the tie */
        counted_write(&f, a, fx_at(&f, BASE_STRIPE, 0, 0), 2 * CHUNK, &c);
        CHECK(c.member_reads == 4 && c.writes_rcw == 1, "first piece: %llu reads, expected 4",
              (unsigned long long)c.member_reads);
        /* the other 4: every block it would read is cached */
        counted_write(&f, a, fx_at(&f, BASE_STRIPE, 2, 0), 4 * CHUNK, &c);
        CHECK(c.member_reads == 0 && c.member_writes == 6, "second piece: %llu reads %llu writes, expected 0 and 6",
              (unsigned long long)c.member_reads, (unsigned long long)c.member_writes);
        struct stripe_cache_stats cs;
        stripe_cache_stats(stripe_cache_of(a), &cs);
        CHECK(cs.hits == 2, "cache hits %llu, expected 2 (data 0 and 1)", (unsigned long long)cs.hits);
        expect_consistent(&f, a, "after two pieces");

        /* 4 KiB in data 0 of the next stripe (old data, P, Q read), then the
         * stripe zeroed whole (zero.c: no cache, a new count), then 4 KiB
         * in data 1: the cached P and Q are stale, so 3 reads again */
        uint64_t s = BASE_STRIPE + 1;
        counted_write(&f, a, fx_at(&f, s, 0, 0), 4096, &c);
        CHECK(c.member_reads == 3 && c.writes_rmw == 1, "4 KiB: %llu reads, expected 3",
              (unsigned long long)c.member_reads);
        CHECK(uraid_write_zeroes(a, f.stripe_bytes, s * f.stripe_bytes) == 0);
        memset(f.model + s * f.stripe_bytes, 0, f.stripe_bytes);
        counted_write(&f, a, fx_at(&f, s, 1, 0), 4096, &c);
        CHECK(c.member_reads == 3 && c.writes_rmw == 1, "after the zeroing: %llu reads, expected 3 (a stale entry used?)",
              (unsigned long long)c.member_reads);
        expect_consistent(&f, a, "after the zeroing");
        uraid_close(a);
    }
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_gather");
    rng_seed(&rng, harness_seed());
    fx_log_from_env();
    for (int together = 0; together < 3; together++) {
        stream_case(5, 5, 0, URAID_POLICY_RESYNC, "healthy", together);
        stream_case(6, 6, 0, URAID_POLICY_RESYNC, "healthy", together);
        stream_case(6, 6, FX_SLOT(4), URAID_POLICY_RESYNC, "missing one", together);
        stream_case(5, 5, 0, URAID_POLICY_PPL, "with a PPL", together);
        stream_case(6, 6, 0, URAID_POLICY_BITMAP, "with a bitmap", together);
    }
    stream_case(5, 5, FX_SLOT(2), URAID_POLICY_RESYNC, "missing one", 2); /* held: nothing answered early */
    no_keep_case(5, 5, FX_SLOT(2), "missing one");
    no_keep_case(6, 6, FX_SLOT(1) | FX_SLOT(4), "missing two");
    member_fails_case();
    random_case();
    timeout_case();
    flush_case();
    read_zero_case();
    off_case(0);
    off_case(1);
    off_case(2);
    held_timeout_case();
    company_case();
    cache_case();
    return harness_finish();
}
