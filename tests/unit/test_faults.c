/* Faults through the member simulation layers: every member is opened with
 * a fault layer (member_sim spec "") and faults are injected at run time
 * with uraid_inject().
 *   - read errors: served by rebuilding, the member rewritten (md's
 *     correction), counted, and the count persisted in the member's
 *     superblock at close (cnt_corrected_read);
 *   - a member vanishing, or failing writes, in the middle of writes: marked
 *     faulty (0xfffe and events + 1 in the others' superblocks, its own
 *     untouched), every acknowledged write still reads back, also after a
 *     reopen without it;
 *   - beyond redundancy (RAID-5, a second member fails): -EIO, and nothing
 *     acknowledged before is damaged (checked after a forced reopen);
 *   - a multi-threaded model test: writers each own a region of the array
 *     (regions share stripes), read back their own region while writing and
 *     everything after a barrier, while another thread injects read errors
 *     and member failures (one for RAID-5, two for RAID-6) at random moments.
 *
 * Prints its seed; URAID_TEST_SEED=N replays (thread scheduling aside).
 * URAID_TEST_QUICK=1 (sanitizer build) shortens the multi-threaded run,
 * URAID_TEST_LONG=1 makes it a soak run (URAID_TEST_LONG=N: N minutes per
 * configuration). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array_fixture.h"
#include "harness.h"

static struct rng rng;
static int quick, longrun;

#define K 1024u

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The member file holds the model's bytes for array range [off, off + len)
 * (inside one chunk). */
static void check_member_holds(struct fx *f, uint64_t off, size_t len, const char *what)
{
    int slot;
    uint64_t mo;
    fx_locate(f, off, &slot, &mo);
    uint8_t *buf = malloc(len);
    int rc = fx_member_pread(f, slot, buf, len, mo);
    CHECK(rc == 0 && !memcmp(buf, f->model + off, len), "%s: %s: member %d does not hold array bytes %llu+%zu",
          f->label, what, slot, (unsigned long long)off, len);
    free(buf);
}

/* ---- read errors ------------------------------------------------------------------ */

static void test_read_errors(int level, int n)
{
    char name[96];
    snprintf(name, sizeof name, "read errors: RAID-%d n=%d rebuilt, rewritten, counted, persisted", level, n);
    harness_begin(name);
    struct fx f;
    const uint32_t chunk = 64u << 10;
    struct uraid_array *a;
    if (fx_setup(&f, level, n, chunk, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    CHECK(uraid_close(a) == 0);

    /* an open that only reads: the correction must still reach the superblock */
    a = fx_open(&f, NULL, 1, 0);
    if (!a)
        goto out;
    int m;
    uint64_t mo;
    uint64_t off = fx_at(&f, 3, 1, 0);
    fx_locate(&f, off, &m, &mo);
    fx_inject(&f, a, m, "pending", mo + 16 * K, 8 * K);
    uraid_reset_counters(a);
    fx_verify(&f, a, off, chunk, "read over a read error");
    struct uraid_counters c = fx_counters(a);
    CHECK(c.corrected_reads == 1 && c.reconstructions == 1 && c.member_failures == 0,
          "%s: corrected %llu reconstructions %llu failures %llu", f.label, (unsigned long long)c.corrected_reads,
          (unsigned long long)c.reconstructions, (unsigned long long)c.member_failures);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.member[m].corrected_reads == 1 && info.member[m].state == URAID_MEMBER_IN_SYNC,
          "%s: info: slot %d corrected %u state %d", f.label, m, info.member[m].corrected_reads, info.member[m].state);
    CHECK(uraid_inject(a, m, "clear") == 0);
    check_member_holds(&f, off, chunk, "after the correction");
    uraid_reset_counters(a);
    fx_verify(&f, a, off, chunk, "read after clear");
    c = fx_counters(a);
    CHECK(c.member_reads == 1 && c.reconstructions == 0, "%s: after clear: %llu reads, %llu reconstructions", f.label,
          (unsigned long long)c.member_reads, (unsigned long long)c.reconstructions);
    int corrected_expect[FX_MAXM] = {0};
    corrected_expect[m] = 1;
    if (level == 6) {
        /* two read errors in one stripe: data 0 and P */
        int m0, p, q;
        uint64_t off0 = fx_at(&f, 6, 0, 0);
        fx_locate(&f, off0, &m0, &mo);
        fx_parity_of(&f, 6, &p, &q);
        fx_inject(&f, a, m0, "pending", mo, 4 * K);
        fx_inject(&f, a, p, "pending", mo + 4 * K, 4 * K);
        uraid_reset_counters(a);
        fx_verify(&f, a, fx_at(&f, 6, 0, 0), f.stripe_bytes, "stripe read over two read errors");
        c = fx_counters(a);
        CHECK(c.corrected_reads == 2 && c.reconstructions == 1, "%s: two errors: corrected %llu reconstructions %llu",
              f.label, (unsigned long long)c.corrected_reads, (unsigned long long)c.reconstructions);
        uraid_inject(a, m0, "clear");
        uraid_inject(a, p, "clear");
        check_member_holds(&f, off0, chunk, "data member after two corrections");
        corrected_expect[m0]++;
        corrected_expect[p]++;
    }
    CHECK(uraid_close(a) == 0);
    for (int s = 0; s < n; s++) {
        struct md_sb sb;
        if (fx_read_sb(&f, s, &sb) == 0)
            CHECK(sb.cnt_corrected_read == (uint32_t)corrected_expect[s],
                  "%s: slot %d superblock cnt_corrected_read %u after close, expected %d", f.label, s,
                  sb.cnt_corrected_read, corrected_expect[s]);
    }

    /* a read error under a write's read phase: the stripe is rebuilt */
    a = fx_open(&f, NULL, 1, 0);
    if (!a)
        goto out;
    off = fx_at(&f, 5, 2, 8 * K);
    fx_locate(&f, off, &m, &mo);
    fx_inject(&f, a, m, "read-eio", mo - 8 * K, chunk);
    /* RAID-6 (k = 4) takes reconstruct-write on the rmw/rcw tie and reads
     * data 0 instead: a read error there too (one per stripe on RAID-5,
     * which reads everything once the stripe needs rebuilding) */
    int m0 = m;
    uint64_t mo0;
    if (level == 6) {
        fx_locate(&f, fx_at(&f, 5, 0, 0), &m0, &mo0);
        fx_inject(&f, a, m0, "read-eio", mo0, chunk);
    }
    uint8_t buf[4 * K];
    rng_fill(&rng, buf, sizeof buf);
    uraid_reset_counters(a);
    CHECK(fx_write(&f, a, buf, sizeof buf, off) == 0);
    c = fx_counters(a);
    CHECK(c.writes_degraded == 1 && c.member_failures == 0, "%s: write over a read error: degraded %llu failures %llu",
          f.label, (unsigned long long)c.writes_degraded, (unsigned long long)c.member_failures);
    fx_verify(&f, a, fx_at(&f, 5, 0, 0), f.stripe_bytes, "stripe after a write over a read error");
    uraid_inject(a, m, "clear");
    uraid_inject(a, m0, "clear");
    check_member_holds(&f, off, sizeof buf, "written member");
    fx_verify_all(&f, a, "everything");
    CHECK(uraid_close(a) == 0);
    fx_verify_omitting(&f, 0, 0, "after reopen");
out:
    harness_end();
    fx_destroy(&f);
}

/* ---- a member fails during writes -------------------------------------------------- */

static void random_write(struct fx *f, struct uraid_array *a, int *rc_out)
{
    uint64_t len = (1 + rng_below(&rng, 3 * f->stripe_bytes / 512)) * 512;
    if (rng_below(&rng, 3) == 0)
        len = (1 + rng_below(&rng, 16)) * 512;
    uint64_t off = rng_below(&rng, (f->size - len) / 512 + 1) * 512;
    uint8_t *buf = malloc(len);
    rng_fill(&rng, buf, len);
    *rc_out = fx_write(f, a, buf, len, off);
    free(buf);
}

/* kind: "vanish" or "write-eio" (over the whole data area) */
static void test_member_fails(int level, int n, const char *kind)
{
    char name[96];
    snprintf(name, sizeof name, "RAID-%d n=%d: member %s during writes: faulty, data kept", level, n, kind);
    harness_begin(name);
    struct fx f;
    /* also the warm-up: the array is dirty from here on */
    struct uraid_array *a;
    if (fx_setup(&f, level, n, 32u << 10, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    int victim = (int)rng_below(&rng, (uint64_t)n);
    uint8_t before[MD_SB_BYTES], after[MD_SB_BYTES];
    struct md_sb sb0;
    fx_sb_bytes(&f, victim, before);
    fx_read_sb(&f, victim, &sb0);
    uraid_reset_counters(a);
    int ops = 200;
    for (int i = 0; i < ops; i++) {
        if (i == ops / 3) {
            if (!strcmp(kind, "vanish"))
                CHECK(uraid_inject(a, victim, "vanish") == 0);
            else
                fx_inject(&f, a, victim, "write-eio", 0, f.member_bytes - f.data_offset);
        }
        int rc;
        random_write(&f, a, &rc);
        CHECK(rc == 0, "%s: write %d after the %s of slot %d: %d", f.label, i, kind, victim, rc);
        if (rng_below(&rng, 4) == 0) {
            uint64_t off = rng_below(&rng, f.size / f.stripe_bytes) * f.stripe_bytes;
            fx_verify(&f, a, off, f.stripe_bytes, "read between writes");
        }
    }
    struct uraid_counters c = fx_counters(a);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(c.member_failures == 1, "%s: member_failures %llu", f.label, (unsigned long long)c.member_failures);
    CHECK(info.degraded == 1 && info.member[victim].state == URAID_MEMBER_FAULTY, "%s: degraded %d, slot %d state %d",
          f.label, info.degraded, victim, info.member[victim].state);
    fx_verify_all(&f, a, "after the failure");
    CHECK(uraid_close(a) == 0);
    fx_sb_bytes(&f, victim, after);
    CHECK(!memcmp(before, after, sizeof before), "%s: the failed member's superblock was written", f.label);
    for (int s = 0; s < n; s++) {
        struct md_sb sb;
        if (s == victim || fx_read_sb(&f, s, &sb))
            continue;
        CHECK(sb.dev_roles[sb0.dev_number] == MD_ROLE_FAULTY, "%s: slot %d says role 0x%x for the failed member",
              f.label, s, sb.dev_roles[sb0.dev_number]);
        CHECK(sb.events > sb0.events + 1 && sb.resync_offset == MD_RESYNC_CLEAN, "%s: slot %d events %llu (failed %llu)",
              f.label, s, (unsigned long long)sb.events, (unsigned long long)sb0.events);
    }
    int omit[FX_MAXM] = {0};
    omit[victim] = 1;
    a = fx_open(&f, omit, 0, 0);
    if (a) {
        uraid_get_info(a, &info);
        CHECK(info.degraded == 1, "%s: reopened degraded %d", f.label, info.degraded);
        fx_verify_all(&f, a, "reopened without the failed member");
        uraid_close(a);
    }
    a = fx_open(&f, NULL, 0, 0); /* given anyway: left out */
    if (a) {
        uraid_get_info(a, &info);
        CHECK(info.degraded == 1 && info.member[victim].state != URAID_MEMBER_IN_SYNC,
              "%s: failed member given back: degraded %d, state %d", f.label, info.degraded,
              info.member[victim].state);
        fx_verify_all(&f, a, "reopened with the failed member given");
        uraid_close(a);
    }
out:
    harness_end();
    fx_destroy(&f);
}

/* ---- beyond redundancy ------------------------------------------------------------- */

static void test_beyond_redundancy(void)
{
    harness_begin("RAID-5: a second member fails: -EIO, nothing acknowledged damaged");
    struct fx f;
    const int n = 4;
    struct uraid_array *a;
    if (fx_setup(&f, 5, n, 32u << 10, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    int first = 1, second = 2, rc;
    CHECK(uraid_inject(a, first, "vanish") == 0);
    for (int i = 0; i < 40; i++) {
        random_write(&f, a, &rc);
        CHECK(rc == 0, "%s: degraded write %d: %d", f.label, i, rc);
    }
    CHECK(fx_counters(a).member_failures == 1);
    CHECK(uraid_inject(a, second, "vanish") == 0);
    uint8_t *buf = aligned_alloc(4096, f.stripe_bytes);
    int fails = 0, oks = 0;
    for (uint64_t s = 0; s < 16; s++)
        for (int d = 0; d < f.k; d++) {
            int m;
            uint64_t mo, off = fx_at(&f, s, d, 4096);
            fx_locate(&f, off, &m, &mo);
            rc = uraid_read(a, buf, 4 * K, off);
            if (m == first || m == second) {
                CHECK(rc == -EIO, "%s: read of a chunk on failed member %d: %d", f.label, m, rc);
                fails++;
            } else {
                CHECK(rc == 0 && !memcmp(buf, f.model + off, 4 * K), "%s: read of a chunk on member %d: %d", f.label,
                      m, rc);
                oks++;
            }
            if (m == second) {
                /* an RMW or RCW write needs the second member's old data:
                 * it fails before anything is written */
                rng_fill(&rng, buf, 4 * K);
                rc = uraid_write(a, buf, 4 * K, off);
                CHECK(rc == -EIO, "%s: write to a chunk on the second failed member: %d", f.label, rc);
            }
        }
    CHECK(fails > 0 && oks > 0);
    CHECK(fx_counters(a).member_failures == 1, "%s: member_failures %llu", f.label,
          (unsigned long long)fx_counters(a).member_failures);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.member[second].state == URAID_MEMBER_IN_SYNC, "%s: second failed member marked (%d)", f.label,
          info.member[second].state);
    rc = uraid_close(a);
    CHECK(rc == -EIO, "%s: close of an array beyond redundancy: %d", f.label, rc);
    free(buf);
    /* the member that went last still belongs: assemble with it (forced:
     * dirty + degraded) and every acknowledged byte is there */
    fx_verify_omitting(&f, FX_SLOT(first), 1, "forced reopen with the surviving members");
out:
    harness_end();
    fx_destroy(&f);
}

/* ---- multi-threaded model test ------------------------------------------------------
 * Workers each own a region of the array (boundaries fall inside stripes, so
 * neighbours share stripes, stripe locks and parity) and only write there;
 * phase A: writes and reads of the own region, checked against the model;
 * barrier; phase B: reads anywhere, checked; barrier; repeat. An injector
 * thread adds read errors on one member at a time (while the level has
 * redundancy to spare for them) and fails members (vanish or write errors)
 * at random moments, up to the level's redundancy. Before the failure that
 * uses up the redundancy it clears the read errors under io_lock taken
 * exclusively, so no request that met one is still running: a read error
 * plus that many failures would be beyond the level. */

#define MT_MAX_THREADS 8

static struct {
    struct fx *f;
    struct uraid_array *a;
    int nthreads, nparity;
    uint64_t lo[MT_MAX_THREADS + 1]; /* thread t owns [lo[t], lo[t + 1]) */
    uint64_t maxlen;
    pthread_barrier_t bar;
    pthread_rwlock_t io_lock;
    double phase_end, start, duration;
    int end, stop;                   /* atomics */
    uint64_t seed;
    uint64_t writes, reads, far_reads, rounds; /* atomics */
    /* injector */
    int failed[FX_MAXM], readeio_slot;
    uint64_t readeio_rules, readeio_clears;
    char victims[128];
} mt;

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;

/* CHECK from any thread; the first failure stops the run */
#define MT_CHECK(cond, ...)                                                  \
    do {                                                                     \
        if (!(cond)) {                                                       \
            pthread_mutex_lock(&check_lock);                                 \
            harness_fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__);         \
            __atomic_store_n(&mt.stop, 1, __ATOMIC_RELAXED);                 \
            pthread_mutex_unlock(&check_lock);                               \
        }                                                                    \
    } while (0)

static int mt_stopped(void)
{
    return __atomic_load_n(&mt.stop, __ATOMIC_RELAXED);
}

static void mt_pick(struct rng *r, uint64_t lo, uint64_t hi, uint64_t *off, uint64_t *len)
{
    uint64_t l;
    switch (rng_below(r, 3)) {
    case 0: l = (1 + rng_below(r, 16)) * 512; break;
    case 1: l = (1 + rng_below(r, mt.f->chunk / 512 * 2)) * 512; break;
    default: l = (1 + rng_below(r, mt.maxlen / 512)) * 512; break;
    }
    if (l > hi - lo)
        l = hi - lo;
    *off = lo + rng_below(r, (hi - lo - l) / 512 + 1) * 512;
    *len = l;
}

static void mt_read_check(struct rng *r, uint8_t *buf, uint64_t off, uint64_t len, const char *what)
{
    pthread_rwlock_rdlock(&mt.io_lock);
    int rc = uraid_read(mt.a, buf, len, off);
    pthread_rwlock_unlock(&mt.io_lock);
    MT_CHECK(rc == 0 && !memcmp(buf, mt.f->model + off, len), "%s: %s %llu+%llu: rc %d%s", mt.f->label, what,
             (unsigned long long)off, (unsigned long long)len, rc, rc ? "" : ", data differs");
    (void)r;
}

static void *mt_worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    struct rng r;
    rng_seed(&r, mt.seed * 1000003u + (uint64_t)t + 1);
    uint8_t *mem = aligned_alloc(4096, mt.maxlen + 4096);
    for (;;) {
        pthread_barrier_wait(&mt.bar);
        if (__atomic_load_n(&mt.end, __ATOMIC_ACQUIRE))
            break;
        uint8_t *buf = mem + 512 * rng_below(&r, 2); /* sector-aligned or page-aligned */
        while (now() < mt.phase_end && !mt_stopped()) {
            uint64_t off, len;
            mt_pick(&r, mt.lo[t], mt.lo[t + 1], &off, &len);
            if (rng_below(&r, 10) < 6) {
                rng_fill(&r, buf, len);
                pthread_rwlock_rdlock(&mt.io_lock);
                int rc = uraid_write(mt.a, buf, len, off);
                pthread_rwlock_unlock(&mt.io_lock);
                MT_CHECK(rc == 0, "%s: thread %d write %llu+%llu: %d", mt.f->label, t, (unsigned long long)off,
                         (unsigned long long)len, rc);
                if (rc == 0)
                    memcpy(mt.f->model + off, buf, len);
                __atomic_add_fetch(&mt.writes, 1, __ATOMIC_RELAXED);
            } else {
                mt_read_check(&r, buf, off, len, "read of the own region");
                __atomic_add_fetch(&mt.reads, 1, __ATOMIC_RELAXED);
            }
        }
        pthread_barrier_wait(&mt.bar);
        for (int i = 0; i < 6 && !mt_stopped(); i++) {
            uint64_t off, len;
            mt_pick(&r, 0, mt.f->size, &off, &len);
            mt_read_check(&r, buf, off, len, "read anywhere after the barrier");
            __atomic_add_fetch(&mt.far_reads, 1, __ATOMIC_RELAXED);
        }
        pthread_barrier_wait(&mt.bar);
    }
    free(mem);
    return NULL;
}

static void mt_clear_read_errors(void)
{
    if (mt.readeio_slot < 0)
        return;
    pthread_rwlock_wrlock(&mt.io_lock);
    MT_CHECK(uraid_inject(mt.a, mt.readeio_slot, "clear") == 0);
    pthread_rwlock_unlock(&mt.io_lock);
    mt.readeio_slot = -1;
    mt.readeio_clears++;
}

static int mt_pick_slot(struct rng *r)
{
    int n = mt.f->n, s;
    do
        s = (int)rng_below(r, (uint64_t)n);
    while (mt.failed[s] || s == mt.readeio_slot);
    return s;
}

static void *mt_injector(void *arg)
{
    (void)arg;
    struct rng r;
    rng_seed(&r, mt.seed ^ 0x5eedf00dull);
    struct fx *f = mt.f;
    double fail_at[2];
    for (int i = 0; i < mt.nparity; i++)
        fail_at[i] = mt.duration * (0.1 + 0.65 * (double)rng_below(&r, 1000) / 1000.0);
    if (mt.nparity == 2 && fail_at[0] > fail_at[1]) {
        double x = fail_at[0];
        fail_at[0] = fail_at[1];
        fail_at[1] = x;
    }
    int nfailed = 0;
    uint64_t area = f->member_bytes - f->data_offset;
    while (!__atomic_load_n(&mt.end, __ATOMIC_ACQUIRE) && !mt_stopped()) {
        struct timespec ts = {0, (long)(2 + rng_below(&r, 40)) * 1000000L};
        nanosleep(&ts, NULL);
        if (nfailed < mt.nparity && now() - mt.start >= fail_at[nfailed]) {
            if (nfailed + 1 == mt.nparity)
                mt_clear_read_errors();
            int victim = mt_pick_slot(&r);
            int vanish = (int)rng_below(&r, 2);
            if (vanish)
                MT_CHECK(uraid_inject(mt.a, victim, "vanish") == 0);
            else
                MT_CHECK(fx_inject(f, mt.a, victim, "write-eio", 0, area) == 0);
            mt.failed[victim] = 1;
            nfailed++;
            size_t l = strlen(mt.victims);
            snprintf(mt.victims + l, sizeof mt.victims - l, "%sslot %d %s at %.1fs", l ? ", " : "", victim,
                     vanish ? "vanished" : "write errors", now() - mt.start);
            continue;
        }
        if (nfailed >= mt.nparity)
            continue; /* no redundancy to spare for read errors */
        if (mt.readeio_slot >= 0 && rng_below(&r, 3) == 0) {
            mt_clear_read_errors();
        } else if (mt.readeio_slot < 0 || rng_below(&r, 2)) {
            int s = mt.readeio_slot >= 0 ? mt.readeio_slot : mt_pick_slot(&r);
            uint64_t len = (1 + rng_below(&r, 64)) * 4096;
            uint64_t off = rng_below(&r, (area - len) / 512) * 512;
            if (fx_inject(f, mt.a, s, "pending", off, len) == 0) {
                mt.readeio_slot = s;
                mt.readeio_rules++;
            }
        }
    }
    return NULL;
}

static void mt_config(int level, int n, uint32_t chunk, int nthreads, double seconds)
{
    char name[128];
    snprintf(name, sizeof name, "threads: RAID-%d n=%d chunk %uK, %d writers, read errors and %d member failures",
             level, n, chunk / 1024, nthreads, level == 6 ? 2 : 1);
    harness_begin(name);
    struct fx f;
    uint64_t member_bytes = (quick ? 4u : 8u) << 20;
    struct uraid_array *a;
    if (fx_setup(&f, level, n, chunk, member_bytes, &rng, 1, &a) != 0)
        goto out;
    memset(&mt, 0, sizeof mt);
    mt.f = &f;
    mt.a = a;
    mt.nthreads = nthreads;
    mt.nparity = level == 6 ? 2 : 1;
    mt.maxlen = 2 * f.stripe_bytes;
    mt.readeio_slot = -1;
    mt.seed = rng_next(&rng);
    mt.duration = seconds;
    for (int t = 0; t <= nthreads; t++)
        mt.lo[t] = f.size / (uint64_t)nthreads * (uint64_t)t / 512 * 512;
    mt.lo[nthreads] = f.size;
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&mt.io_lock, &ra);
    pthread_barrier_init(&mt.bar, NULL, (unsigned)nthreads + 1);
    pthread_t th[MT_MAX_THREADS], inj;
    for (int t = 0; t < nthreads; t++)
        pthread_create(&th[t], NULL, mt_worker, (void *)(intptr_t)t);
    uraid_reset_counters(a);
    mt.start = now();
    pthread_create(&inj, NULL, mt_injector, NULL);
    while (now() - mt.start < seconds && !mt_stopped()) {
        mt.phase_end = now() + 0.05 + 0.25 * (double)rng_below(&rng, 100) / 100.0;
        pthread_barrier_wait(&mt.bar); /* phase A */
        pthread_barrier_wait(&mt.bar); /* phase B */
        pthread_barrier_wait(&mt.bar);
        mt.rounds++;
    }
    __atomic_store_n(&mt.end, 1, __ATOMIC_RELEASE);
    pthread_barrier_wait(&mt.bar);
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    pthread_join(inj, NULL);
    pthread_barrier_destroy(&mt.bar);
    pthread_rwlock_destroy(&mt.io_lock);
    pthread_rwlockattr_destroy(&ra);
    double secs = now() - mt.start;
    struct uraid_counters c = fx_counters(a);
    printf("  %s: %.1fs, %llu rounds, %llu writes, %llu reads, %llu reads across regions; %llu read-error ranges "
           "(%llu clears); %s\n"
           "    corrected reads %llu, reconstructions %llu, rebuilt writes %llu, rmw %llu, rcw %llu, full %llu, "
           "member failures %llu\n",
           f.label, secs, (unsigned long long)mt.rounds, (unsigned long long)mt.writes, (unsigned long long)mt.reads,
           (unsigned long long)mt.far_reads, (unsigned long long)mt.readeio_rules,
           (unsigned long long)mt.readeio_clears, mt.victims, (unsigned long long)c.corrected_reads,
           (unsigned long long)c.reconstructions, (unsigned long long)c.writes_degraded,
           (unsigned long long)c.writes_rmw, (unsigned long long)c.writes_rcw,
           (unsigned long long)c.writes_full_stripe, (unsigned long long)c.member_failures);
    if (mt_stopped()) {
        uraid_close(a);
        goto out;
    }
    fx_verify_all(&f, a, "after the run");
    /* a member with write errors that no write reached since is not known
     * to have failed yet: rewrite everything (the same data) to meet it */
    for (uint64_t off = 0; off < f.size; off += 1u << 20) {
        uint64_t len = f.size - off < (1u << 20) ? f.size - off : 1u << 20;
        int rc = uraid_write(a, f.model + off, len, off);
        CHECK(rc == 0, "%s: rewrite at %llu: %d", f.label, (unsigned long long)off, rc);
    }
    c = fx_counters(a);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(c.member_failures == (uint64_t)mt.nparity && info.degraded == mt.nparity,
          "%s: member failures %llu, degraded %d, expected %d", f.label, (unsigned long long)c.member_failures,
          info.degraded, mt.nparity);
    for (int s = 0; s < n; s++)
        CHECK((info.member[s].state == URAID_MEMBER_FAULTY) == mt.failed[s], "%s: slot %d state %d, failed %d",
              f.label, s, info.member[s].state, mt.failed[s]);
    fx_verify_all(&f, a, "after the rewrite");
    CHECK(uraid_close(a) == 0);
    a = fx_open(&f, mt.failed, 0, 0);
    if (a) {
        fx_verify_all(&f, a, "reopened without the failed members");
        CHECK(uraid_close(a) == 0);
    }
out:
    harness_end();
    fx_destroy(&f);
}

static void test_mt(void)
{
    double secs = longrun ? 60.0 * longrun : quick ? 5.0 : 6.0;
    int t5 = 4 + (int)rng_below(&rng, 5), t6 = 4 + (int)rng_below(&rng, 5);
    mt_config(5, 5, 16u << 10, t5, secs);
    mt_config(6, 6, 32u << 10, t6, secs);
    if (!quick) {
        mt_config(5, 4, 64u << 10, 8, secs);
        mt_config(6, 8, 16u << 10, 4 + (int)rng_below(&rng, 5), secs);
    }
}

int main(int argc, char **argv)
{
    fx_log_from_env();
    harness_init(argc, argv, "test_faults");
    rng_seed(&rng, harness_seed());
    quick = getenv("URAID_TEST_QUICK") && *getenv("URAID_TEST_QUICK") == '1';
    const char *lv = getenv("URAID_TEST_LONG");
    longrun = lv && *lv ? atoi(lv) : 0;
    test_read_errors(5, 5);
    test_read_errors(6, 6);
    test_member_fails(5, 5, "vanish");
    test_member_fails(6, 7, "vanish");
    test_member_fails(5, 4, "write-eio");
    test_member_fails(6, 6, "write-eio");
    test_beyond_redundancy();
    test_mt();
    return harness_finish();
}
