/* The streams' read-ahead (lib/array/readahead.c) on RAID-5 and RAID-6:
 *  - a sequential stream is served from read-ahead windows (hits, far fewer
 *    member reads than requests), random reads read nothing ahead, a
 *    budget of 0 turns it off;
 *  - writes and write-zeroes into a window already read are never served
 *    stale, and a writer thread racing a streaming reader: every 4 KiB block
 *    read is at least as new as the last write of it that had returned
 *    before the read began;
 *  - several interleaved streams are each followed (a lone one is not read
 *    ahead by default), and the cache is given back once they stop;
 *  - degraded arrays (one member missing on RAID-5, two on RAID-6): the
 *    windows rebuild the missing members, and read the right data;
 *  - a member read error inside a window is still corrected by the request
 *    path (corrected_reads), data right.
 * Every read is compared with the fixture's model. Randomised: prints its seed. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array/array.h"
#include "array/readahead.h"
#include "array_fixture.h"
#include "harness.h"

static struct rng rng;

#define KIB 4096u
#define CHUNK (64u << 10)
#define MEMBER (8u << 20)

static struct ra_stats stats(struct uraid_array *a)
{
    struct ra_stats st;
    ra_get_stats(a->ra, &st);
    return st;
}

/* Reads [off, off + total) in requests of req bytes, each against the model. */
static void stream(struct fx *f, struct uraid_array *a, uint64_t off, uint64_t total, size_t req, const char *what)
{
    for (uint64_t at = off; at < off + total; at += req) {
        size_t n = at + req > off + total ? (size_t)(off + total - at) : req;
        if (fx_verify(f, a, at, n, what) != 0)
            return;
    }
}

/* The read-ahead thread's windows in flight have ended (at most 20 s). */
static void settle(struct uraid_array *a)
{
    for (int i = 0; i < 2000 && stats(a).pending; i++)
        usleep(10 * 1000);
}

/* A lone stream is read ahead too (the library waits for two by default). */
static int setup1(struct fx *f, int level, int n, int sim, struct uraid_array **a)
{
    int rc = fx_setup(f, level, n, CHUNK, MEMBER, &rng, sim, a);
    if (rc == 0 && *a)
        ra_set_min_streams((*a)->ra, 1), ra_set_any_member((*a)->ra, 1);
    return rc;
}

static void test_hits(int level, int n)
{
    harness_beginf("RAID-%d of %d: a stream is read ahead, random reads are not", level, n);
    struct fx f;
    struct uraid_array *a = NULL;
    if (setup1(&f, level, n, 0, &a) == 0 && a) {
        uint64_t total = f.size / 2;
        uraid_reset_counters(a);
        stream(&f, a, 0, total, CHUNK, "stream");
        struct ra_stats st = stats(a);
        struct uraid_counters c = fx_counters(a);
        uint64_t nreq = total / CHUNK;
        printf("  %llu requests: %llu member reads, %llu windows (%llu by the thread), %llu of %llu sectors hit\n",
               (unsigned long long)nreq, (unsigned long long)c.member_reads, (unsigned long long)st.fills,
               (unsigned long long)st.async_fills, (unsigned long long)st.hits,
               (unsigned long long)(total / 512));
        CHECK(st.fills >= 2 && st.hits * 512 >= total * 9 / 10, "windows %llu, hits %llu sectors of %llu",
              (unsigned long long)st.fills, (unsigned long long)st.hits, (unsigned long long)(total / 512));
        CHECK(c.member_reads * 4 < nreq * (uint64_t)n, "%llu member reads for %llu requests",
              (unsigned long long)c.member_reads, (unsigned long long)nreq);
        settle(a);
        uint64_t fills0 = stats(a).fills;
        for (int i = 0; i < 64; i++) {
            uint64_t off = rng_below(&rng, f.size / KIB) * KIB;
            fx_verify(&f, a, off, KIB, "random read");
        }
        settle(a);
        CHECK(stats(a).fills == fills0, "random reads read ahead: %llu windows after %llu",
              (unsigned long long)stats(a).fills, (unsigned long long)fills0);
        ra_set_budget(a->ra, 0);
        stream(&f, a, total, total / 4, CHUNK, "stream, no budget");
        settle(a);
        CHECK(stats(a).fills == fills0, "budget 0 still read ahead");
        CHECK(uraid_close(a) == 0);
    }
    fx_destroy(&f);
    harness_end();
}

static void test_writes(int level, int n)
{
    harness_beginf("RAID-%d of %d: writes into read-ahead windows are never served stale", level, n);
    struct fx f;
    struct uraid_array *a = NULL;
    if (setup1(&f, level, n, 0, &a) == 0 && a) {
        uint64_t mib = 1u << 20;
        stream(&f, a, 0, 2 * mib, CHUNK, "stream start");
        settle(a); /* the window beyond is read */
        uint8_t buf[3 * KIB];
        rng_fill(&rng, buf, sizeof buf);
        CHECK(fx_write(&f, a, buf, KIB, 2 * mib + 8 * KIB) == 0);
        CHECK(fx_write(&f, a, buf, sizeof buf, 2 * mib + CHUNK + 5 * KIB) == 0);
        CHECK(uraid_write_zeroes(a, 2 * CHUNK, 2 * mib + 3 * CHUNK) == 0);
        memset(f.model + 2 * mib + 3 * CHUNK, 0, 2 * CHUNK);
        stream(&f, a, 2 * mib, 4 * mib, CHUNK, "stream after writes");
        struct ra_stats st = stats(a);
        printf("  %llu windows, %llu found written since their fill, %llu dropped\n",
               (unsigned long long)st.fills, (unsigned long long)st.stale, (unsigned long long)st.dropped);
        CHECK(st.stale >= 1, "the writes fell in no window read ahead: the test tests nothing");
        CHECK(uraid_close(a) == 0);
    }
    fx_destroy(&f);
    harness_end();
}

/* ---- a writer racing a streaming reader ---------------------------------------- */

#define RACE_BLOCKS 512u /* 2 MiB */

struct race {
    struct uraid_array *a;
    uint64_t base;
    uint64_t published[RACE_BLOCKS]; /* version of the last write of the block that returned */
    int stop, failed;
    uint64_t seed, writes;
};

static void stamp(uint8_t *blk, uint64_t b, uint64_t v)
{
    for (unsigned i = 0; i < KIB / 16; i++) {
        memcpy(blk + 16 * i, &v, 8);
        memcpy(blk + 16 * i + 8, &b, 8);
    }
}

static void *race_writer(void *arg)
{
    struct race *r = arg;
    struct rng wr;
    rng_seed(&wr, r->seed);
    uint8_t blk[KIB] __attribute__((aligned(4096)));
    for (uint64_t v = 1; !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE); v++) {
        uint64_t b = rng_below(&wr, RACE_BLOCKS);
        stamp(blk, b, v);
        if (uraid_write(r->a, blk, KIB, r->base + b * KIB) != 0) {
            __atomic_store_n(&r->failed, 1, __ATOMIC_RELEASE);
            break;
        }
        __atomic_store_n(&r->published[b], v, __ATOMIC_RELEASE);
        __atomic_store_n(&r->writes, v, __ATOMIC_RELEASE);
        usleep(200);
    }
    return NULL;
}

static void test_race(int level, int n)
{
    harness_beginf("RAID-%d of %d: a writer racing a streaming reader", level, n);
    struct fx f;
    struct uraid_array *a = NULL;
    static struct race r;
    if (fx_setup(&f, level, n, CHUNK, MEMBER, NULL, 0, &a) == 0 && a) {
        ra_set_min_streams(a->ra, 1);
        ra_set_any_member(a->ra, 1);
        memset(&r, 0, sizeof r);
        r.a = a;
        r.base = 1u << 20;
        r.seed = rng_next(&rng);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, race_writer, &r) == 0);
        uint8_t *buf = aligned_alloc(4096, CHUNK);
        uint64_t before[CHUNK / KIB], reads = 0, bad = 0, newer = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (double el = 0; (el < 1.5 || __atomic_load_n(&r.writes, __ATOMIC_ACQUIRE) < 200) && el < 30 && !bad;) {
            for (uint64_t at = 0; at < RACE_BLOCKS * KIB && !bad; at += CHUNK, reads++) {
                for (unsigned i = 0; i < CHUNK / KIB; i++)
                    before[i] = __atomic_load_n(&r.published[at / KIB + i], __ATOMIC_ACQUIRE);
                CHECK(uraid_read(a, buf, CHUNK, r.base + at) == 0);
                for (unsigned i = 0; i < CHUNK / KIB; i++) {
                    uint64_t v, b;
                    memcpy(&v, buf + i * KIB, 8);
                    memcpy(&b, buf + i * KIB + 8, 8);
                    if (v < before[i] || (v && b != at / KIB + i))
                        bad++;
                    newer += v > before[i];
                }
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            el = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        }
        __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
        pthread_join(t, NULL);
        struct ra_stats st = stats(a);
        printf("  %llu writes of 4 KiB, %llu reads of 64 KiB, %llu blocks older than a returned write, %llu newer; %llu windows, "
               "%llu stale, %llu dropped\n",
               (unsigned long long)r.writes, (unsigned long long)reads, (unsigned long long)bad, (unsigned long long)newer,
               (unsigned long long)st.fills, (unsigned long long)st.stale, (unsigned long long)st.dropped);
        CHECK(!r.failed && bad == 0, "%llu blocks read older than a write that had returned", (unsigned long long)bad);
        CHECK(st.fills > 0 && st.hits > 0 && st.stale > 0, "the reader was not read ahead: the test tests nothing");
        free(buf);
        CHECK(uraid_close(a) == 0);
    }
    fx_destroy(&f);
    harness_end();
}

static void test_streams(void)
{
    harness_begin("RAID-5 of 5: three interleaved streams are each read ahead");
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 5, 5, CHUNK, MEMBER, &rng, 0, &a) == 0 && a) {
        ra_set_any_member(a->ra, 1);
        uint64_t part = f.size / 4, req = 128u << 10;
        int streams = 0;
        stream(&f, a, 3 * part, part, req, "a lone stream");
        CHECK(stats(a).fills == 0, "a lone stream was read ahead (the default waits for two)");
        for (uint64_t at = 0; at < part; at += req) {
            for (int s = 0; s < 3; s++)
                fx_verify(&f, a, (uint64_t)s * part + at, req, "interleaved streams");
            if (at == part / 2)
                streams = stats(a).streams;
        }
        struct ra_stats st = stats(a);
        printf("  streams %d, windows %llu, hits %llu of %llu sectors\n", streams, (unsigned long long)st.fills,
               (unsigned long long)st.hits, (unsigned long long)(3 * part / 512));
        CHECK(streams >= 3, "%d streams followed, 3 (and the lone one) expected", streams);
        CHECK(st.hits * 512 >= 3 * part * 8 / 10, "hits %llu sectors of %llu", (unsigned long long)st.hits,
              (unsigned long long)(3 * part / 512));
        for (int i = 0; i < 100 && stats(a).bytes; i++)
            usleep(100 * 1000);
        CHECK(stats(a).bytes == 0, "%zu bytes still cached 10 s after the streams stopped", stats(a).bytes);
        CHECK(uraid_close(a) == 0);
    }
    fx_destroy(&f);
    harness_end();
}

/* Two interleaved streams over members: windows read ahead. */
static uint64_t two_streams(struct fx *f, struct uraid_array *a)
{
    uint64_t part = f->size / 4, req = 128u << 10, before = stats(a).fills;
    for (uint64_t at = 0; at < part; at += req)
        for (int s = 0; s < 2; s++)
            fx_verify(f, a, (uint64_t)s * 2 * part + at, req, "two streams");
    return stats(a).fills - before;
}

static void test_seekless(void)
{
    harness_begin("RAID-5 of 4 on tmpfs: no read-ahead where members do not seek, unless asked");
    const char *old = getenv("TMPDIR");
    char *keep = old ? strdup(old) : NULL;
    setenv("TMPDIR", "/dev/shm", 1);
    struct fx f;
    struct uraid_array *a = NULL;
    int rc = fx_setup(&f, 5, 4, CHUNK, MEMBER, &rng, 0, &a);
    if (keep)
        setenv("TMPDIR", keep, 1), free(keep);
    else
        unsetenv("TMPDIR");
    if (rc == 0 && a) {
        uint64_t off = two_streams(&f, a);
        CHECK(off == 0, "%llu windows read ahead from tmpfs members", (unsigned long long)off);
        ra_set_any_member(a->ra, 1);
        uint64_t on = two_streams(&f, a);
        CHECK(on > 0, "no window read ahead once asked (ra_set_any_member)");
        printf("  windows: %llu by default, %llu when asked\n", (unsigned long long)off, (unsigned long long)on);
        CHECK(uraid_close(a) == 0);
    }
    fx_destroy(&f);
    harness_end();
}

static void test_degraded(int level, int n, unsigned omit)
{
    harness_beginf("RAID-%d of %d degraded (slots %#x missing): windows rebuild them", level, n, omit);
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, level, n, CHUNK, MEMBER, &rng, 0, NULL) == 0 &&
        fx_open_with(&f, omit, NULL, NULL, 0, NULL, &a) == 0 && a) {
        ra_set_min_streams(a->ra, 1);
        ra_set_any_member(a->ra, 1);
        uraid_reset_counters(a);
        stream(&f, a, 0, f.size, 256u << 10, "degraded stream");
        struct ra_stats st = stats(a);
        struct uraid_counters c = fx_counters(a);
        printf("  windows %llu, hits %llu of %llu sectors, reconstructions by the request path %llu\n",
               (unsigned long long)st.fills, (unsigned long long)st.hits, (unsigned long long)(f.size / 512),
               (unsigned long long)c.reconstructions);
        CHECK(st.hits * 512 >= f.size * 9 / 10, "hits %llu sectors of %llu", (unsigned long long)st.hits,
              (unsigned long long)(f.size / 512));
        CHECK(uraid_close(a) == 0);
    }
    fx_destroy(&f);
    harness_end();
}

static void test_read_error(void)
{
    harness_begin("RAID-5 of 4: a read error in a window is corrected by the request path");
    struct fx f;
    struct uraid_array *a = NULL;
    if (setup1(&f, 5, 4, 1, &a) == 0 && a) {
        CHECK(fx_inject(&f, a, 2, "pending", 1u << 20, KIB) == 0);
        uraid_reset_counters(a);
        stream(&f, a, 0, f.size, CHUNK, "stream over a read error");
        struct uraid_counters c = fx_counters(a);
        printf("  corrected reads %llu, windows %llu\n", (unsigned long long)c.corrected_reads,
               (unsigned long long)stats(a).fills);
        CHECK(c.corrected_reads >= 1, "the read error was not corrected");
        CHECK(uraid_close(a) == 0);
    }
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    fx_log_from_env();
    harness_init(argc, argv, "test_readahead");
    rng_seed(&rng, harness_seed());
    test_hits(5, 4);
    test_hits(6, 6);
    test_writes(5, 4);
    test_writes(6, 5);
    test_race(5, 4);
    test_race(6, 6);
    test_streams();
    test_degraded(5, 4, FX_SLOT(1));
    test_degraded(6, 6, FX_SLOT(0) | FX_SLOT(3));
    test_read_error();
    test_seekless();
    return harness_finish();
}
