/* Check and repair (scrub) through the job API on arrays of member files.
 * Silent corruption is written straight into member files (pwrite at
 * data_offset + the member offset the layout gives), then:
 *   - RAID-6: a data chunk, P and Q each found with the right slot and
 *     kind, repaired, a second check finds nothing, the data is what was
 *     written; random single pages on random blocks (seeded) likewise;
 *   - RAID-5: reported as a P mismatch; repair makes parity consistent;
 *   - two blocks of one RAID-6 page: MULTI, not repaired, left as is;
 *   - mismatch_cnt in units of 8 sectors per 4 KiB page;
 *   - healthy arrays: nothing found; a writer thread during checks: no
 *     false mismatches (the stripe locks);
 *   - a read error during check: rebuilt and rewritten; beyond redundancy:
 *     an UNREADABLE finding and the check goes on;
 *   - degraded arrays: check refused when nothing can be compared, repair
 *     refused on a degraded RAID-6.
 * Prints its seed; URAID_SEED (or URAID_TEST_SEED) replays. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"

#define K 1024u
#define CHUNK (64u * K)

static struct rng rng;

/* Overwrites len bytes of a member file at `off` past data_offset with
 * random bytes that differ from what is there. */
static void corrupt(const struct fx *f, int slot, uint64_t off, size_t len)
{
    uint8_t *old = malloc(len), *buf = malloc(len);
    CHECK(fx_member_pread(f, slot, old, len, off) == 0);
    rng_fill(&rng, buf, len);
    for (size_t i = 0; i < len; i++)
        if (buf[i] == old[i])
            buf[i] ^= 0x5a;
    CHECK(fx_member_pwrite(f, slot, buf, len, off) == 0, "corrupting %s at %llu", f->path[slot],
          (unsigned long long)off);
    free(old);
    free(buf);
}

struct run {
    int rc;
    struct uraid_job_status st;
    size_t nf;
    struct uraid_finding f[64];
};

/* Under user I/O the job yields down to speed_min: keep that floor high
 * enough for a test to take seconds, not minutes. */
static const struct uraid_job_params fast = {.slot = -1, .speed_min_kib = 20000};

static void run_job(const struct fx *f, struct uraid_array *a, enum uraid_job_kind kind, struct run *r)
{
    memset(r, 0, sizeof *r);
    r->rc = fx_job(f, a, kind, &fast, &r->st);
    if (r->rc)
        return;
    CHECK(r->st.done_sectors == r->st.total_sectors && r->st.total_sectors > 0, "%s: done %llu of %llu",
          uraid_job_name(kind), (unsigned long long)r->st.done_sectors, (unsigned long long)r->st.total_sectors);
    r->nf = uraid_job_findings(a, r->f, 64);
}

/* A freshly created, filled and closed array. */
static int setup(struct fx *f, int level, int n, uint64_t member_bytes)
{
    return fx_setup(f, level, n, CHUNK, member_bytes, &rng, 0, NULL);
}

/* Opens the array with a fault layer on every member. */
static struct uraid_array *open_sim(struct fx *f)
{
    struct uraid_array *a;
    return fx_open_with(f, 0, "latency=0us", NULL, 0, NULL, &a) ? NULL : a;
}

static void expect_clean(struct fx *f, struct uraid_array *a, const char *what)
{
    struct run r;
    run_job(f, a, URAID_JOB_CHECK, &r);
    CHECK(r.st.mismatch_sectors == 0 && r.nf == 0, "%s: %s: mismatch_cnt %llu, %zu findings", f->label, what,
          (unsigned long long)r.st.mismatch_sectors, r.nf);
}

/* Member slot holding role `which` (0 = data index d, 1 = P, 2 = Q) of a stripe. */
static int member_of(const struct fx *f, uint64_t stripe, int which, int d)
{
    struct stripe_map map;
    layout_stripe(&f->geom, stripe, &map);
    return which == 1 ? map.p_disk : which == 2 ? map.q_disk : map.data_disk[d];
}

/* ---- one block of a RAID-6 stripe --------------------------------------------- */

static void test_raid6_one(int which)
{
    static const char *const names[] = {"data chunk", "P", "Q"};
    static const enum uraid_finding_kind kinds[] = {URAID_FOUND_DATA, URAID_FOUND_P, URAID_FOUND_Q};
    harness_beginf("RAID-6: corrupt %s found, repaired to the right block", names[which]);
    struct fx f;
    if (setup(&f, 6, 6, 4u << 20))
        goto out;
    uint64_t stripe = 3 + rng_below(&rng, 4);
    int slot = member_of(&f, stripe, which, (int)rng_below(&rng, (uint64_t)f.k));
    uint64_t page = rng_below(&rng, CHUNK / 4096 - 1);
    uint64_t moff = stripe * CHUNK + page * 4096;
    corrupt(&f, slot, moff, 4096);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    struct run r;
    run_job(&f, a, URAID_JOB_CHECK, &r);
    CHECK(r.st.mismatch_sectors == 8 && r.nf == 1, "%s: check: mismatch_cnt %llu, %zu findings", f.label,
          (unsigned long long)r.st.mismatch_sectors, r.nf);
    if (r.nf == 1)
        CHECK(r.f[0].kind == kinds[which] && r.f[0].slot == slot && r.f[0].member_sector == moff / 512 &&
                  r.f[0].nsec == 8 && r.f[0].stripe == stripe && !r.f[0].repaired,
              "%s: finding kind %d slot %d sector %llu nsec %u stripe %llu repaired %d; expected kind %d slot %d "
              "sector %llu stripe %llu",
              f.label, r.f[0].kind, r.f[0].slot, (unsigned long long)r.f[0].member_sector, r.f[0].nsec,
              (unsigned long long)r.f[0].stripe, r.f[0].repaired, kinds[which], slot,
              (unsigned long long)(moff / 512), (unsigned long long)stripe);
    run_job(&f, a, URAID_JOB_REPAIR, &r);
    CHECK(r.nf == 1 && r.f[0].repaired && r.f[0].slot == slot && r.st.repaired_sectors == 8,
          "%s: repair: %zu findings, repaired %d, slot %d, repaired_sectors %llu", f.label, r.nf,
          r.nf ? r.f[0].repaired : -1, r.nf ? r.f[0].slot : -1, (unsigned long long)r.st.repaired_sectors);
    expect_clean(&f, a, "check after repair");
    fx_verify_all(&f, a, "after repair");
    CHECK(uraid_close(a) == 0);
    /* the repair reached the member file, not only a cache */
    a = fx_open(&f, NULL, 0, 0);
    if (a) {
        expect_clean(&f, a, "check after reopen");
        uraid_close(a);
    }
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- random single pages on random blocks, one per stripe ------------------------ */

static void test_raid6_random(void)
{
    harness_begin("RAID-6: random single-page corruptions (seeded) each found and repaired");
    struct fx f;
    if (setup(&f, 6, 7, 4u << 20))
        goto out;
    uint64_t stripes = (f.size / f.stripe_bytes);
    int nbad = 6;
    int slots[6];
    uint64_t secs[6];
    for (int i = 0; i < nbad; i++) {
        uint64_t s = (uint64_t)i * (stripes / (uint64_t)nbad) + rng_below(&rng, stripes / (uint64_t)nbad);
        int which = (int)rng_below(&rng, 3);
        slots[i] = member_of(&f, s, which, (int)rng_below(&rng, (uint64_t)f.k));
        uint64_t moff = s * CHUNK + rng_below(&rng, CHUNK / 4096) * 4096;
        secs[i] = moff / 512;
        corrupt(&f, slots[i], moff + rng_below(&rng, 4000), 1 + rng_below(&rng, 90));
    }
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    struct run r;
    run_job(&f, a, URAID_JOB_REPAIR, &r);
    CHECK(r.st.mismatch_sectors == 8u * (uint64_t)nbad && r.nf == (size_t)nbad,
          "%s: mismatch_cnt %llu, %zu findings (want %d)", f.label, (unsigned long long)r.st.mismatch_sectors, r.nf,
          nbad);
    for (size_t i = 0; i < r.nf && i < (size_t)nbad; i++)
        CHECK(r.f[i].slot == slots[i] && r.f[i].member_sector == secs[i] && r.f[i].repaired,
              "%s: finding %zu: slot %d sector %llu repaired %d, want slot %d sector %llu", f.label, i, r.f[i].slot,
              (unsigned long long)r.f[i].member_sector, r.f[i].repaired, slots[i], (unsigned long long)secs[i]);
    expect_clean(&f, a, "after repair");
    fx_verify_all(&f, a, "after repair");
    uraid_close(a);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- RAID-5: reported as parity, repair rewrites P --------------------------------- */

static void test_raid5(void)
{
    harness_begin("RAID-5: a corrupt data chunk is reported as P, repair makes parity consistent");
    struct fx f;
    if (setup(&f, 5, 5, 4u << 20))
        goto out;
    uint64_t stripe = 2;
    int d = 1, slot = member_of(&f, stripe, 0, d), p = member_of(&f, stripe, 1, 0);
    /* 5 KiB from 2 KiB into the chunk: touches pages 0 and 1, 16 sectors */
    corrupt(&f, slot, stripe * CHUNK + 2048, 5 * K);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    struct run r;
    run_job(&f, a, URAID_JOB_CHECK, &r);
    CHECK(r.st.mismatch_sectors == 16 && r.nf == 1, "%s: mismatch_cnt %llu (want 16: two pages), %zu findings",
          f.label, (unsigned long long)r.st.mismatch_sectors, r.nf);
    if (r.nf == 1)
        CHECK(r.f[0].kind == URAID_FOUND_P && r.f[0].slot == p && r.f[0].nsec == 16 &&
                  r.f[0].member_sector == stripe * CHUNK / 512,
              "%s: finding kind %d slot %d nsec %u sector %llu", f.label, r.f[0].kind, r.f[0].slot, r.f[0].nsec,
              (unsigned long long)r.f[0].member_sector);
    run_job(&f, a, URAID_JOB_REPAIR, &r);
    CHECK(r.nf == 1 && r.f[0].repaired && r.st.repaired_sectors == 16, "%s: repair: %zu findings, repaired %llu",
          f.label, r.nf, (unsigned long long)r.st.repaired_sectors);
    expect_clean(&f, a, "after repair");
    /* RAID-5 cannot tell the data was wrong: the array now holds what the member holds */
    uint64_t off = fx_at(&f, stripe, d, 2048);
    CHECK(fx_member_pread(&f, slot, f.model + off, 5 * K, stripe * CHUNK + 2048) == 0);
    fx_verify_all(&f, a, "after repair");
    uraid_close(a);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- two blocks of one page: reported, not repaired --------------------------------- */

static void test_multi(void)
{
    harness_begin("RAID-6: two blocks of one page wrong: MULTI, not repaired, left as is");
    struct fx f;
    if (setup(&f, 6, 6, 4u << 20))
        goto out;
    uint64_t stripe = 4, moff = stripe * CHUNK + 12 * K;
    int s0 = member_of(&f, stripe, 0, 0), s1 = member_of(&f, stripe, 0, 2);
    corrupt(&f, s0, moff, 512);
    corrupt(&f, s1, moff + 1024, 512);
    uint8_t before[2][4096], after[2][4096];
    fx_member_pread(&f, s0, before[0], 4096, moff);
    fx_member_pread(&f, s1, before[1], 4096, moff);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    struct run r;
    run_job(&f, a, URAID_JOB_REPAIR, &r);
    CHECK(r.st.mismatch_sectors == 8 && r.nf == 1 && r.st.repaired_sectors == 0,
          "%s: mismatch_cnt %llu, %zu findings, repaired %llu", f.label, (unsigned long long)r.st.mismatch_sectors,
          r.nf, (unsigned long long)r.st.repaired_sectors);
    if (r.nf == 1)
        CHECK(r.f[0].kind == URAID_FOUND_MULTI && !r.f[0].repaired && r.f[0].member_sector == moff / 512 &&
                  r.f[0].nsec == 8,
              "%s: kind %d repaired %d sector %llu", f.label, r.f[0].kind, r.f[0].repaired,
              (unsigned long long)r.f[0].member_sector);
    uraid_close(a);
    fx_member_pread(&f, s0, after[0], 4096, moff);
    fx_member_pread(&f, s1, after[1], 4096, moff);
    CHECK(!memcmp(before, after, sizeof before), "%s: a MULTI page was changed", f.label);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- healthy arrays, and a writer during checks ------------------------------------ */

static void test_healthy(int level, int n)
{
    harness_beginf("RAID-%d n=%d healthy: check and repair find nothing", level, n);
    struct fx f;
    if (setup(&f, level, n, 4u << 20))
        goto out;
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    expect_clean(&f, a, "check");
    struct run r;
    run_job(&f, a, URAID_JOB_REPAIR, &r);
    CHECK(r.st.mismatch_sectors == 0 && r.st.repaired_sectors == 0 && r.nf == 0, "%s: repair found %llu",
          f.label, (unsigned long long)r.st.mismatch_sectors);
    char line[256];
    uraid_job_progress_line(&r.st, line, sizeof line);
    CHECK(strstr(line, "repair finished") && strstr(line, "mismatch_cnt 0"), "progress line: %s", line);
    uraid_close(a);
out:
    fx_destroy(&f);
    harness_end();
}

struct writer {
    struct fx *f;
    struct uraid_array *a;
    int stop, rc;
    uint64_t seed, writes;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct rng r;
    rng_seed(&r, w->seed);
    uint8_t *buf = aligned_alloc(4096, 256 * K);
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE) && w->rc == 0) {
        size_t len = (1 + rng_below(&r, 64)) * 4096;
        uint64_t off = rng_below(&r, (w->f->size - len) / 512) * 512;
        rng_fill(&r, buf, len);
        w->rc = fx_write(w->f, w->a, buf, len, off);
        w->writes++;
    }
    free(buf);
    return NULL;
}

static void test_concurrent_writes(void)
{
    harness_begin("RAID-6: user writes during checks give no false mismatches");
    struct fx f;
    if (setup(&f, 6, 6, 16u << 20))
        goto out;
    /* a guard more than a proof: a write issues its data and parity
     * updates together, so without the locks the window is microseconds */
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    struct writer w = {.f = &f, .a = a, .seed = rng_next(&rng)};
    pthread_t t;
    pthread_create(&t, NULL, writer_main, &w);
    for (int i = 0; i < 4; i++)
        expect_clean(&f, a, "check beside a writer");
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK(w.rc == 0 && w.writes > 0, "%s: writer: %d after %llu writes", f.label, w.rc, (unsigned long long)w.writes);
    expect_clean(&f, a, "check after the writer");
    fx_verify_all(&f, a, "after writes and checks");
    uraid_close(a);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- a read error during check ----------------------------------------------------- */

static void test_read_error(void)
{
    harness_begin("RAID-6: a read error during check is rebuilt and rewritten");
    struct fx f;
    if (setup(&f, 6, 6, 4u << 20))
        goto out;
    uint64_t stripe = 5, moff = stripe * CHUNK + 16 * K;
    int slot = member_of(&f, stripe, 0, 1);
    /* garbage under the unreadable range: only a rewrite makes it right again */
    corrupt(&f, slot, moff, 8 * K);
    struct uraid_array *a = open_sim(&f);
    if (!a)
        goto out;
    fx_inject(&f, a, slot, "pending", moff, 8 * K);
    struct run r;
    run_job(&f, a, URAID_JOB_CHECK, &r);
    struct uraid_counters c = fx_counters(a);
    CHECK(r.st.mismatch_sectors == 0 && r.nf == 0 && c.corrected_reads >= 1 && c.member_failures == 0,
          "%s: mismatch_cnt %llu, %zu findings, corrected %llu, failures %llu", f.label,
          (unsigned long long)r.st.mismatch_sectors, r.nf, (unsigned long long)c.corrected_reads,
          (unsigned long long)c.member_failures);
    CHECK(uraid_inject(a, slot, "clear") == 0);
    uint8_t *buf = malloc(8 * K);
    uint64_t off = fx_at(&f, stripe, 1, 16 * K);
    CHECK(fx_member_pread(&f, slot, buf, 8 * K, moff) == 0 && !memcmp(buf, f.model + off, 8 * K),
          "%s: member %d does not hold the rebuilt data", f.label, slot);
    free(buf);
    expect_clean(&f, a, "after the correction");
    uraid_close(a);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- beyond redundancy: unreadable, and the scrub goes on ------------------------ */

static void test_unreadable(void)
{
    harness_begin("RAID-5: two members unreadable at one place: UNREADABLE, the check goes on");
    struct fx f;
    if (setup(&f, 5, 4, 4u << 20))
        goto out;
    uint64_t stripe = 3, moff = stripe * CHUNK + 8 * K;
    int s0 = member_of(&f, stripe, 0, 0), s1 = member_of(&f, stripe, 1, 0);
    uint64_t later = 6 * CHUNK;                     /* a mismatch after the unreadable place */
    int s2 = member_of(&f, 6, 0, 1);
    corrupt(&f, s2, later, 512);
    struct uraid_array *a = open_sim(&f);
    if (!a)
        goto out;
    fx_inject(&f, a, s0, "read-eio", moff, 4 * K);
    fx_inject(&f, a, s1, "read-eio", moff, 4 * K);
    struct run r;
    run_job(&f, a, URAID_JOB_CHECK, &r);
    CHECK(r.rc == 0 && r.nf == 2, "%s: result %d, %zu findings", f.label, r.rc, r.nf);
    if (r.nf == 2) {
        CHECK(r.f[0].kind == URAID_FOUND_UNREADABLE && r.f[0].member_sector == moff / 512 && r.f[0].nsec == 8,
              "%s: first finding kind %d sector %llu nsec %u", f.label, r.f[0].kind,
              (unsigned long long)r.f[0].member_sector, r.f[0].nsec);
        CHECK(r.f[1].kind == URAID_FOUND_P && r.f[1].member_sector == later / 512, "%s: second finding kind %d",
              f.label, r.f[1].kind);
    }
    struct uraid_counters c = fx_counters(a);
    CHECK(c.member_failures == 0, "%s: %llu members failed", f.label, (unsigned long long)c.member_failures);
    uraid_close(a);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- degraded arrays ---------------------------------------------------------------- */

static void test_degraded(void)
{
    harness_begin("degraded: RAID-5 check refused; RAID-6 with one missing: check runs, repair refused");
    struct fx f;
    char why[256];
    int omit[FX_MAXM] = {0};
    omit[1] = 1;
    if (setup(&f, 5, 4, 4u << 20) == 0) {
        struct uraid_array *a = fx_open(&f, omit, 0, 0);
        if (a) {
            int rc = uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why);
            CHECK(rc == -EINVAL && strstr(why, "nothing can be checked"), "RAID-5 degraded check: %d (%s)", rc,
                  why);
            uraid_close(a);
        }
    }
    fx_destroy(&f);
    if (setup(&f, 6, 6, 4u << 20) == 0) {
        uint64_t stripe = 2;
        int slot = member_of(&f, stripe, 0, 0);
        if (slot == 1)
            slot = member_of(&f, stripe, 0, 1);
        corrupt(&f, slot, stripe * CHUNK, 4096);
        struct uraid_array *a = fx_open(&f, omit, 0, 0);
        if (a) {
            int rc = uraid_job_start(a, URAID_JOB_REPAIR, NULL, why, sizeof why);
            CHECK(rc == -EINVAL && strstr(why, "repair needs every member"), "RAID-6 degraded repair: %d (%s)", rc,
                  why);
            struct run r;
            run_job(&f, a, URAID_JOB_CHECK, &r);
            CHECK(r.st.mismatch_sectors == 8 && r.nf == 1 && r.f[0].kind == URAID_FOUND_MULTI,
                  "RAID-6 degraded check: mismatch_cnt %llu, %zu findings, kind %d",
                  (unsigned long long)r.st.mismatch_sectors, r.nf, r.nf ? (int)r.f[0].kind : -1);
            uraid_close(a);
        }
    }
    fx_destroy(&f);
    harness_end();
}


/* ---- a refused start keeps the last job's report ------------------------------- */

/* The serve monitor tries an automatic job whenever one ends; a refused
 * one ("nothing to rebuild") must not wipe what the check found. */
static void test_report_kept(void)
{
    harness_begin("a refused job start keeps the finished check's report and findings");
    struct fx f;
    if (setup(&f, 5, 4, 4u << 20))
        goto out;
    int slot = member_of(&f, 1, 0, 0);
    corrupt(&f, slot, 1 * CHUNK, 4 * K);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    struct run r;
    run_job(&f, a, URAID_JOB_CHECK, &r);
    CHECK(r.st.mismatch_sectors == 8 && r.nf == 1, "%s: check: mismatch_cnt %llu, %zu findings", f.label,
          (unsigned long long)r.st.mismatch_sectors, r.nf);
    char why[256];
    int rc = uraid_job_start(a, URAID_JOB_RECOVER, NULL, why, sizeof why);
    CHECK(rc == -EINVAL, "%s: recover on a whole array: rc %d (%s)", f.label, rc, why);
    struct uraid_job_status st;
    uraid_job_status(a, &st);
    struct uraid_finding found[4];
    size_t nf = uraid_job_findings(a, found, 4);
    CHECK(st.kind == URAID_JOB_CHECK && !st.running && st.result == 0 && st.mismatch_sectors == 8 &&
              st.done_sectors == st.total_sectors && st.total_sectors > 0,
          "%s: after the refusal: kind %s, mismatch_cnt %llu, done %llu of %llu", f.label, uraid_job_name(st.kind),
          (unsigned long long)st.mismatch_sectors, (unsigned long long)st.done_sectors,
          (unsigned long long)st.total_sectors);
    CHECK(nf == 1 && found[0].slot == r.f[0].slot && found[0].member_sector == r.f[0].member_sector,
          "%s: after the refusal: %zu findings (want the check's one)", f.label, nf);
    uraid_close(a);
out:
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    fx_log_from_env();
    const char *seed = getenv("URAID_SEED");
    if (seed && *seed && !getenv("URAID_TEST_SEED"))
        setenv("URAID_TEST_SEED", seed, 1);
    harness_init(argc, argv, "test_scrub");
    rng_seed(&rng, harness_seed());
    test_healthy(6, 6);
    test_healthy(5, 4);
    test_raid6_one(0);
    test_raid6_one(1);
    test_raid6_one(2);
    test_raid6_random();
    test_raid5();
    test_multi();
    test_concurrent_writes();
    test_read_error();
    test_unreadable();
    test_degraded();
    test_report_kept();
    return harness_finish();
}
