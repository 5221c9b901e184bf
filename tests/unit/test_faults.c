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
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array_fixture.h"
#include "harness.h"

static struct rng rng;
static int quick, longrun;

#define K 1024u

__attribute__((unused)) static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fill(struct fx *f, struct uraid_array *a)
{
    size_t len = 1u << 20;
    uint8_t *buf = aligned_alloc(4096, len);
    for (uint64_t off = 0; off < f->size; off += len) {
        size_t l = f->size - off < len ? (size_t)(f->size - off) : len;
        rng_fill(&rng, buf, l);
        int rc = fx_write(f, a, buf, l, off);
        CHECK(rc == 0, "%s: fill at %llu: %d", f->label, (unsigned long long)off, rc);
    }
    free(buf);
}

/* Array offset of data index d, byte `in` of its chunk, in stripe s. */
static uint64_t at(const struct fx *f, uint64_t s, int d, uint64_t in)
{
    return s * f->stripe_bytes + (uint64_t)d * f->chunk + in;
}

static int inject_range(struct uraid_array *a, const struct fx *f, int slot, const char *what, uint64_t member_off,
                        uint64_t len)
{
    char spec[96];
    snprintf(spec, sizeof spec, "%s=%llu+%llu", what, (unsigned long long)(f->data_offset + member_off),
             (unsigned long long)len);
    int rc = uraid_inject(a, slot, spec);
    CHECK(rc == 0, "%s: inject '%s' on slot %d: %d", f->label, spec, slot, rc);
    return rc;
}

static struct uraid_counters counters(struct uraid_array *a)
{
    struct uraid_counters c;
    uraid_get_counters(a, &c);
    return c;
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
    if (fx_create(&f, level, n, chunk, 4u << 20) != 0)
        goto out;
    struct uraid_array *a = fx_open(&f, NULL, 1, 0);
    if (!a)
        goto out;
    fill(&f, a);
    CHECK(uraid_close(a) == 0);

    /* an open that only reads: the correction must still reach the superblock */
    a = fx_open(&f, NULL, 1, 0);
    if (!a)
        goto out;
    int m;
    uint64_t mo;
    uint64_t off = at(&f, 3, 1, 0);
    fx_locate(&f, off, &m, &mo);
    inject_range(a, &f, m, "read-eio", mo + 16 * K, 8 * K);
    uraid_reset_counters(a);
    fx_verify(&f, a, off, chunk, "read over a read error");
    struct uraid_counters c = counters(a);
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
    c = counters(a);
    CHECK(c.member_reads == 1 && c.reconstructions == 0, "%s: after clear: %llu reads, %llu reconstructions", f.label,
          (unsigned long long)c.member_reads, (unsigned long long)c.reconstructions);
    int corrected_expect[FX_MAXM] = {0};
    corrected_expect[m] = 1;
    if (level == 6) {
        /* two read errors in one stripe: data 0 and P */
        int m0, p, q;
        uint64_t off0 = at(&f, 6, 0, 0);
        fx_locate(&f, off0, &m0, &mo);
        fx_parity_of(&f, 6, &p, &q);
        inject_range(a, &f, m0, "read-eio", mo, 4 * K);
        inject_range(a, &f, p, "read-eio", mo + 4 * K, 4 * K);
        uraid_reset_counters(a);
        fx_verify(&f, a, at(&f, 6, 0, 0), f.stripe_bytes, "stripe read over two read errors");
        c = counters(a);
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
    off = at(&f, 5, 2, 8 * K);
    fx_locate(&f, off, &m, &mo);
    inject_range(a, &f, m, "read-eio", mo - 8 * K, chunk);
    /* RAID-6 (k = 4) takes reconstruct-write on the rmw/rcw tie and reads
     * data 0 instead: a read error there too (one per stripe on RAID-5,
     * which reads everything once the stripe needs rebuilding) */
    int m0 = m;
    uint64_t mo0;
    if (level == 6) {
        fx_locate(&f, at(&f, 5, 0, 0), &m0, &mo0);
        inject_range(a, &f, m0, "read-eio", mo0, chunk);
    }
    uint8_t buf[4 * K];
    rng_fill(&rng, buf, sizeof buf);
    uraid_reset_counters(a);
    CHECK(fx_write(&f, a, buf, sizeof buf, off) == 0);
    c = counters(a);
    CHECK(c.writes_degraded == 1 && c.member_failures == 0, "%s: write over a read error: degraded %llu failures %llu",
          f.label, (unsigned long long)c.writes_degraded, (unsigned long long)c.member_failures);
    fx_verify(&f, a, at(&f, 5, 0, 0), f.stripe_bytes, "stripe after a write over a read error");
    uraid_inject(a, m, "clear");
    uraid_inject(a, m0, "clear");
    check_member_holds(&f, off, sizeof buf, "written member");
    fx_verify_all(&f, a, "everything");
    CHECK(uraid_close(a) == 0);
    a = fx_open(&f, NULL, 0, 0);
    if (a) {
        fx_verify_all(&f, a, "after reopen");
        uraid_close(a);
    }
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
    if (fx_create(&f, level, n, 32u << 10, 4u << 20) != 0)
        goto out;
    struct uraid_array *a = fx_open(&f, NULL, 1, 0);
    if (!a)
        goto out;
    fill(&f, a); /* also the warm-up: the array is dirty from here on */
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
                inject_range(a, &f, victim, "write-eio", 0, f.member_bytes - f.data_offset);
        }
        int rc;
        random_write(&f, a, &rc);
        CHECK(rc == 0, "%s: write %d after the %s of slot %d: %d", f.label, i, kind, victim, rc);
        if (rng_below(&rng, 4) == 0) {
            uint64_t off = rng_below(&rng, f.size / f.stripe_bytes) * f.stripe_bytes;
            fx_verify(&f, a, off, f.stripe_bytes, "read between writes");
        }
    }
    struct uraid_counters c = counters(a);
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
    if (fx_create(&f, 5, n, 32u << 10, 4u << 20) != 0)
        goto out;
    struct uraid_array *a = fx_open(&f, NULL, 1, 0);
    if (!a)
        goto out;
    fill(&f, a);
    int first = 1, second = 2, rc;
    CHECK(uraid_inject(a, first, "vanish") == 0);
    for (int i = 0; i < 40; i++) {
        random_write(&f, a, &rc);
        CHECK(rc == 0, "%s: degraded write %d: %d", f.label, i, rc);
    }
    CHECK(counters(a).member_failures == 1);
    CHECK(uraid_inject(a, second, "vanish") == 0);
    uint8_t *buf = aligned_alloc(4096, f.stripe_bytes);
    int fails = 0, oks = 0;
    for (uint64_t s = 0; s < 16; s++)
        for (int d = 0; d < f.k; d++) {
            int m;
            uint64_t mo, off = at(&f, s, d, 4096);
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
    CHECK(counters(a).member_failures == 1, "%s: member_failures %llu", f.label,
          (unsigned long long)counters(a).member_failures);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.member[second].state == URAID_MEMBER_IN_SYNC, "%s: second failed member marked (%d)", f.label,
          info.member[second].state);
    rc = uraid_close(a);
    CHECK(rc == -EIO, "%s: close of an array beyond redundancy: %d", f.label, rc);
    free(buf);
    /* the member that went last still belongs: assemble with it (forced:
     * dirty + degraded) and every acknowledged byte is there */
    int omit[FX_MAXM] = {0};
    omit[first] = 1;
    a = fx_open(&f, omit, 0, 1);
    if (a) {
        fx_verify_all(&f, a, "forced reopen with the surviving members");
        uraid_close(a);
    }
out:
    harness_end();
    fx_destroy(&f);
}

static void test_mt(void) {}

static void print_log(void *ctx, enum uraid_log_level level, const char *msg)
{
    (void)ctx;
    printf("    log%d: %s\n", level, msg);
}

int main(int argc, char **argv)
{
    if (getenv("URAID_TEST_VERBOSE"))
        uraid_set_log(print_log, NULL, URAID_LOG_INFO);
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
