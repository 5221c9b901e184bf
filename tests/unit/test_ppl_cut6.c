/* Power cuts of a degraded RAID-6 with a PPL, many per second: the stress
 * test of the loss docs/CRASH.md tracked as "a rare RAID-6 degraded loss"
 * (test_crash's raid6/degraded-1/ppl/powercut lost flushed data in 2 of
 * about 50,000 trials there).
 *
 * A tiny RAID-6 (5 members, 16 KiB chunks, 8 stripes) with one member left
 * out, consistency policy ppl, is created, filled with known base data and
 * kept as a template in memory. Each trial puts the template back, opens
 * the array over the power-cut layer (lib/member/powercut.h) and runs
 * writer threads (tests/lib/crash_workload.c, the journal and judge of
 * test_crash) whose writes are mostly pieces of one stream they share: so
 * consecutive pieces of one stripe come from different threads one right
 * after the other, a chunk of the missing member is split between two
 * requests at a 4 KiB row, and random flushes make their data durable.
 * The cut comes during a random member write. Then the members are opened
 * afresh (the PPL replayed), every sector judged (flushed writes kept,
 * untouched sectors unchanged, nothing but old or written data elsewhere)
 * and a check must find no mismatch.
 *
 * Variants (one case each): the 3/4-stripe pieces of test_crash's stream
 * and pieces of random length; 2 to 4 writers; the missing member random
 * or fixed; and a PPL area cut to 160 sectors, so that the log starts over
 * at the area's start every few headers, with the cut aimed at such a
 * restarting header (aim_restart). That is the loss docs/CRASH.md tracked:
 * a unit whose entries an earlier header of the log held, waiting for its
 * other log, sent its writes while the header restarting the log was
 * being written; the cut tore that header, replay found nothing to replay
 * on that log, and the chunk of the missing member was rebuilt from stale
 * parity. They also caught a second way a torn restart lost data: all
 * its header sectors dropped and later ones kept, so the old first header
 * of the chain stayed sound with the headers after it cut off, and replay
 * took it for the newest (ppl_log.c, wipe_restarts). Gathering is held
 * (the default) or off with
 * URAID_GATHER_HOLD_US=0, set for the whole run by the caller.
 *
 * Trials per case: 30, and 200 aimed at restarts (make check, about 14 s);
 * with URAID_TEST_LONG=1, 2000 and 5000; with URAID_TEST_QUICK (the ASan
 * and TSan builds in make check) 5 and 30; URAID_CUT6_TRIALS=N sets every
 * case's. URAID_CUT6_ONLY=N runs case N only. URAID_TEST_SEED replays a
 * run's choices (not the threads' interleaving), and a failing trial
 * prints its own seed (URAID_CUT6_TRIAL=S runs that trial alone, in the
 * case URAID_CUT6_ONLY names) with every PPL entry the recovery replayed,
 * each member write the cut kept, dropped or tore (member by join order,
 * the missing slot skipped; byte offsets), and the rows whose parity
 * disagreed with the data on the members before the replay and after it
 * (raw_inconsistent: "stripe:row"). Knobs: URAID_CUT6_KEEP and
 * URAID_CUT6_TEAR (the cut's odds, percent; a third each),
 * URAID_CUT6_LATENCY_US (each member up to that much latency above the
 * cut layer), URAID_CUT6_PPL_SECTORS (every case's area),
 * URAID_CUT6_LOG_US (the aimed cases' delay of each log write, 1000),
 * URAID_CUT6_VERBOSE=1 (a line per trial; 2 also each restart seen).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array_fixture.h"
#include "crash_workload.h"
#include "harness.h"
#include "member/powercut.h"
#include "meta/superblock.h"
#include "uraid_parity.h"

#define N 5
#define CHUNK (16u << 10)
#define STRIPES 8

struct variant {
    const char *name;
    int threads;
    int stream_random;   /* pieces of random length (else 3/4 stripe) */
    unsigned stream_in8; /* of 8 writes, the stream's */
    int missing;         /* the slot left out, -1: random per trial */
    int writes;          /* per thread */
    unsigned ppl_sectors; /* each member's PPL area (0: as created, 1 MiB) */
    int aim;             /* the cut aimed at a header written at the area's start (aim_restart) */
};

/* The area's restart (a header written at its start again once the area
 * is used up) in most trials needs a small area: 160 sectors hold a few
 * headers. */
#define SMALL_AREA 160

static const struct variant variants[] = {
    {"3 writers, the 3/4-stripe stream and test_crash's mix", 3, 0, 4, -1, 24, 0, 0},
    {"3 writers, the 3/4-stripe stream only", 3, 0, 8, -1, 24, 0, 0},
    {"2 writers, the 3/4-stripe stream only", 2, 0, 8, -1, 32, 0, 0},
    {"4 writers, the 3/4-stripe stream only", 4, 0, 8, -1, 20, 0, 0},
    {"3 writers, stream pieces of random length", 3, 1, 8, -1, 24, 0, 0},
    {"3 writers, the stream, slot 0 missing", 3, 0, 7, 0, 24, 0, 0},
    {"3 writers, the stream, a small PPL area", 3, 0, 8, -1, 24, SMALL_AREA, 0},
    {"3 writers, the stream, a small PPL area, the cut at a header restarting it", 3, 0, 8, -1, 24, SMALL_AREA, 1},
    {"4 writers, the mix, a small PPL area, the cut at a header restarting it", 4, 0, 4, -1, 24, SMALL_AREA, 1},
};
#define NVARIANTS (int)(sizeof variants / sizeof variants[0])

static struct fx fx;
static uint8_t *image[N];      /* the template: every member file after the fill */
static uint64_t base_seed = 1; /* the base data's seed (cw_sector id 0) */
static unsigned keep_pct = 33, tear_pct = 33;
static unsigned latency_us; /* URAID_CUT6_LATENCY_US: the most latency a member gets above the cut layer */
static unsigned ppl_sectors; /* URAID_CUT6_PPL_SECTORS: every case's PPL area (0: the case's own) */
static uint64_t area_at;       /* where each member's PPL area starts, bytes */
static int verbose; /* URAID_CUT6_VERBOSE=1: a line per trial */

/* ---- the recovery's messages, kept per trial (URAID_CRASH_DIAG's way) ---- */

static pthread_mutex_t diag_mu = PTHREAD_MUTEX_INITIALIZER;
static char *diag_buf;
static size_t diag_len, diag_cap = 8u << 20;
static int diag_on;

static void diag_log(void *ctx, enum uraid_log_level level, const char *msg)
{
    (void)ctx;
    char line[1024];
    int n = snprintf(line, sizeof line, "    log%d: %s\n", level, msg);
    pthread_mutex_lock(&diag_mu);
    /* during the writes (diag_on 2) only the cut's account of each write */
    if (diag_on && (diag_on == 1 || strstr(msg, "power cut")) && n > 0 && diag_len + (size_t)n < diag_cap) {
        memcpy(diag_buf + diag_len, line, (size_t)n);
        diag_len += (size_t)n;
    }
    pthread_mutex_unlock(&diag_mu);
}

static void diag_set(int on)
{
    pthread_mutex_lock(&diag_mu);
    if (on == 2 || (on && !diag_on))
        diag_len = 0;
    diag_on = on;
    pthread_mutex_unlock(&diag_mu);
}

/* ---- the template ---- */

static int file_io(const char *path, uint8_t *buf, uint64_t len, int put)
{
    int fd = open(path, put ? O_WRONLY : O_RDONLY);
    if (fd < 0)
        return -errno;
    ssize_t n = put ? pwrite(fd, buf, len, 0) : pread(fd, buf, len, 0);
    int rc = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
    close(fd);
    return rc;
}

/* Every member's PPL area cut to `sectors` (the superblock rewritten): a
 * small area starts over every few headers, so the area's restart, which
 * a 1 MiB area reaches only in a long run, is in most trials. */
static int shrink_ppl(uint16_t sectors)
{
    for (int s = 0; s < N; s++) {
        struct md_sb sb;
        uint8_t buf[4096] = {0};
        int rc = fx_read_sb(&fx, s, &sb);
        if (rc)
            return rc;
        md_sb_set_ppl(&sb, md_sb_ppl_offset(&sb), sectors);
        if ((rc = md_sb_encode(&sb, buf)) != 0 || (rc = fx_sb_area(fx.path[s], buf, 1)) != 0)
            return rc;
    }
    return 0;
}

static int make_template(void)
{
    /* the smallest members that hold the PPL area and STRIPES chunks each */
    fx_policy = URAID_POLICY_PPL;
    int rc = fx_create(&fx, 6, N, CHUNK, (2u << 20) + STRIPES * CHUNK);
    fx_policy = URAID_POLICY_RESYNC;
    if (rc)
        return rc;
    struct uraid_array *a;
    if ((rc = fx_open_with(&fx, 0, NULL, NULL, 0, NULL, &a)) != 0)
        return rc;
    rc = cw_fill_base(a, base_seed, fx.size, fx.stripe_bytes);
    CHECK(rc == 0, "filling the base data: %d", rc);
    CHECK(uraid_close(a) == 0);
    for (int s = 0; s < N && rc == 0; s++) {
        image[s] = malloc(fx.member_bytes);
        rc = image[s] ? file_io(fx.path[s], image[s], fx.member_bytes, 0) : -ENOMEM;
    }
    CHECK(rc == 0, "reading the template: %d", rc);
    struct md_sb sb;
    if (rc == 0 && (rc = fx_read_sb(&fx, 0, &sb)) == 0)
        area_at = (uint64_t)md_sb_ppl_sector(&sb) * 512;
    return rc;
}

/* ---- one trial ---- */

/* The members as the cut left them, before any replay: sectors whose
 * parity does not agree with the data (the missing member's block taken
 * from P when it is a data block), and the first of them in *first
 * (stripe * 1000 + row), for a failing trial's message. */
static char raw_rows[300]; /* "stripe:rows" of the inconsistent sectors, for the message */

static uint64_t raw_inconsistent(int missing, uint64_t *first)
{
    size_t at = 0;
    raw_rows[0] = 0;
    uint8_t *blk[N], p[CHUNK], q[CHUNK];
    uint64_t bad = 0;
    *first = UINT64_MAX;
    for (int s = 0; s < N; s++)
        blk[s] = malloc(CHUNK);
    for (uint64_t st = 0; st < STRIPES; st++) {
        struct stripe_map m;
        if (layout_stripe(&fx.geom, st, &m))
            break;
        for (int s = 0; s < N; s++)
            if (s != missing && blk[s] && fx_member_pread(&fx, s, blk[s], CHUNK, st * CHUNK))
                memset(blk[s], 0, CHUNK);
        if (missing != m.p_disk && missing != m.q_disk) { /* a data block: from P */
            memcpy(blk[missing], blk[m.p_disk], CHUNK);
            for (int d = 0; d < fx.k; d++)
                if (m.data_disk[d] != missing)
                    for (size_t i = 0; i < CHUNK; i++)
                        blk[missing][i] ^= blk[m.data_disk[d]][i];
        }
        const void *src[N];
        for (int j = 0; j < m.nslots; j++)
            src[j] = blk[m.slot_disk[j]];
        uraid_gen_pq(m.nslots, CHUNK, src, p, q);
        for (uint32_t r = 0; r < CHUNK / 512; r++) {
            int ok = (missing == m.p_disk || !memcmp(p + r * 512, blk[m.p_disk] + r * 512, 512)) &&
                     (missing == m.q_disk || !memcmp(q + r * 512, blk[m.q_disk] + r * 512, 512));
            if (!ok && *first == UINT64_MAX)
                *first = st * 1000 + r;
            if (!ok && at + 12 < sizeof raw_rows)
                at += (size_t)snprintf(raw_rows + at, sizeof raw_rows - at, " %llu:%u", (unsigned long long)st, r);
            bad += !ok;
        }
    }
    for (int s = 0; s < N; s++)
        free(blk[s]);
    return bad;
}

/* The cut aimed at the area's restart (aim set): a FUA write at the start
 * of a PPL area is a header that starts the area over. Every log write
 * (FUA) is held 1 ms (slow log writes: the units a header does not hold
 * up write meanwhile), and
 * a random one of the first 3 during which other member writes went out
 * then cuts the power: it is torn, kept or dropped with those writes. */
struct aim {
    struct powercut_domain *d;
    int skip;  /* restarts to let pass first */
    int fired;
    uint64_t data_writes; /* member writes other than FUA ones (data and parity) */
};

static unsigned aim_sleep_us = 1000; /* URAID_CUT6_LOG_US: each log write's delay when aiming */

static int aim_restart(void *ctx, unsigned member_ix, uint64_t off, size_t len, int fua)
{
    struct aim *am = ctx;
    (void)member_ix;
    (void)len;
    if (__atomic_load_n(&am->fired, __ATOMIC_ACQUIRE))
        return 0;
    if (!fua) {
        __atomic_add_fetch(&am->data_writes, 1, __ATOMIC_ACQ_REL);
        return 0;
    }
    /* log writes slow, so that a unit waits for its second log a while
     * and the units a restart does not hold up write meanwhile */
    uint64_t *all = &am->data_writes, before = __atomic_load_n(all, __ATOMIC_ACQUIRE);
    usleep(aim_sleep_us);
    /* the cut at a restart during which other member writes went out (a
     * unit listed in that log among them, the case that lost data; its
     * own writes to this member wait behind this one) */
    int fire = off == area_at && __atomic_load_n(all, __ATOMIC_ACQUIRE) > before &&
           __atomic_sub_fetch(&am->skip, 1, __ATOMIC_ACQ_REL) < 0 && !__atomic_exchange_n(&am->fired, 1, __ATOMIC_ACQ_REL);
    if (off == area_at && verbose > 1)
        printf("    restart on member %u%s, %llu data writes meanwhile\n", member_ix, fire ? " CUT" : "",
               (unsigned long long)(__atomic_load_n(all, __ATOMIC_ACQUIRE) - before));
    return fire;
}

struct result {
    int failed, forced;
    char what[1400];
};

/* The writes of one trial over the power-cut layer, the cut, the reopen and
 * the judgement into *res. 0, or a negative errno when the trial could not
 * run at all. */
static int trial(const struct variant *v, uint64_t seed, struct result *res)
{
    struct rng r;
    rng_seed(&r, seed);
    memset(res, 0, sizeof *res);
    int missing = v->missing >= 0 ? v->missing : (int)rng_below(&r, N);
    for (int s = 0; s < N; s++) {
        int rc = file_io(fx.path[s], image[s], fx.member_bytes, 1);
        if (rc)
            return rc;
    }
    unsigned area = ppl_sectors ? ppl_sectors : v->ppl_sectors;
    int rc = area ? shrink_ppl((uint16_t)area) : 0;
    if (rc)
        return rc;
    char dom[64];
    snprintf(dom, sizeof dom, "cut6-%llx", (unsigned long long)seed);
    /* each member its own latency above the cut layer (0 to
     * URAID_CUT6_LATENCY_US, from the seed): requests that take time
     * overlap, several units are in flight at once, and the members'
     * writes of one unit complete in every order */
    char specs[N][200];
    const char *sim[N], *paths[N];
    int np = 0;
    for (int s = 0; s < N; s++) {
        unsigned us = latency_us ? (unsigned)rng_below(&r, latency_us + 1) : 0;
        if (s == missing)
            continue;
        snprintf(specs[np], sizeof specs[np], "powercut=%s,seed=%llu,keep=%u,tear=%u%s%.0u%s", dom,
                 (unsigned long long)seed, keep_pct, tear_pct, us ? ";latency=" : "", us, us ? "us" : "");
        sim[np] = specs[np];
        paths[np++] = fx.path[s];
    }
    struct uraid_array *a;
    struct uraid_open_params op = {.member_sim = sim};
    char why[512] = "";
    rc = uraid_open(paths, np, &op, &a, why, sizeof why);
    CHECK(rc == 0, "open over the power-cut layer: %s", why);
    if (rc)
        return rc;
    struct powercut_domain *d = powercut_domain_find(dom);
    struct cw_journal j;
    cw_journal_init(&j, -1);
    struct cw_cut_mark mark = {.j = &j};
    powercut_on_cut(d, cw_mark_cut, &mark);
    /* about 10 member writes per request: anywhere in the run */
    uint64_t at = 1 + rng_below(&r, (uint64_t)v->threads * (uint64_t)v->writes * 8);
    struct aim am = {.d = d, .skip = (int)rng_below(&r, 3)};
    if (v->aim && rng_below(&r, 4)) { /* a quarter of them at a random write still */
        powercut_on_write(d, aim_restart, &am);
        at = 0;
    }
    powercut_arm(d, at);
    diag_set(2);
    struct cw_params p = {.a = a, .seed = base_seed, .size = fx.size, .chunk = CHUNK, .stripe = fx.stripe_bytes,
                          .threads = v->threads, .writes_per_thread = v->writes, .flush_one_in = 5,
                          .stream_in8 = v->stream_in8, .stream_random = v->stream_random,
                          .pick_seed = seed};
    cw_run(&p, &j);
    int by_trigger = powercut_is_cut(d);
    if (!by_trigger)
        powercut_cut(d);
    cw_journal_cut(&j, mark.at);
    uraid_close(a); /* fails: the members are dead; it only frees memory */
    struct powercut_stats st;
    powercut_get_stats(d, &st);
    powercut_domain_forget(dom);
    uint64_t raw_first, raw_bad = raw_inconsistent(missing, &raw_first);
    char before_rows[sizeof raw_rows];
    memcpy(before_rows, raw_rows, sizeof raw_rows);

    /* recovery: the members afresh, the PPL replayed at open */
    diag_set(1);
    op = (struct uraid_open_params){0};
    rc = uraid_open(paths, np, &op, &a, why, sizeof why);
    if (rc == -EUCLEAN) {
        res->forced = 1;
        op.force = 1;
        rc = uraid_open(paths, np, &op, &a, why, sizeof why);
    }
    diag_set(0);
    if (rc) {
        res->failed = 1;
        snprintf(res->what, sizeof res->what, "reopen: %s", why);
        cw_journal_free(&j);
        return 0;
    }
    struct cw_verdict vd;
    rc = cw_judge(a, base_seed, fx.size, &j, &vd);
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status js = {0};
    uint64_t mism = 0;
    if (uraid_job_start(a, URAID_JOB_CHECK, &jp, why, sizeof why) == 0 && uraid_job_wait(a, &js) == 0)
        mism = js.mismatch_sectors;
    uraid_close(a);
    cw_journal_free(&j);
    if (rc)
        return rc;
    uint64_t after_first, after_bad = raw_inconsistent(missing, &after_first);
    /* a forced open (the replay found a damaged log) is counted apart: the
     * write hole is then expected, as without a log */
    res->failed = !res->forced && (vd.lost_sectors || vd.damaged_sectors || vd.bad_sectors || mism);
    snprintf(res->what, sizeof res->what,
             "slot %d missing, cut %s member write %llu: %llu kept, %llu dropped, %llu torn; %llu writes (%llu "
             "acked, %llu durable); lost %llu, damaged %llu, bad %llu, mismatch %llu%s%s%s; before replay %llu "
             "sectors inconsistent (first: stripe %llu row %llu;%s), after %llu (%s)",
             missing, by_trigger ? "at" : "after", (unsigned long long)(by_trigger && at ? at : st.writes),
             (unsigned long long)st.cut_kept, (unsigned long long)st.cut_dropped, (unsigned long long)st.cut_torn,
             (unsigned long long)vd.writes_issued, (unsigned long long)vd.writes_acked,
             (unsigned long long)vd.writes_durable, (unsigned long long)vd.lost_sectors,
             (unsigned long long)vd.damaged_sectors, (unsigned long long)vd.bad_sectors, (unsigned long long)mism,
             res->forced ? ", forced open" : "", vd.first_bad_sector != UINT64_MAX ? "; first: " : "",
             vd.first_bad_sector != UINT64_MAX ? vd.first_bad : "", (unsigned long long)raw_bad,
             (unsigned long long)(raw_first / 1000), (unsigned long long)(raw_first % 1000), before_rows,
             (unsigned long long)after_bad, raw_rows);
    return 0;
}

static int env_int(const char *name, int dflt)
{
    const char *e = getenv(name);
    return e && *e ? atoi(e) : dflt;
}

static void run_variant(int idx, int trials, struct rng *r, uint64_t only_trial)
{
    const struct variant *v = &variants[idx];
    harness_beginf("RAID-6 of %d missing one, ppl, power cuts: %s (case %d, %d trials): nothing flushed lost, "
                   "nothing untouched damaged, check clean", N, v->name, idx, trials);
    int failed = 0, ran = 0, errors = 0, forced = 0;
    time_t t0 = time(NULL);
    for (int t = 0; t < trials; t++) {
        uint64_t seed = only_trial ? only_trial : rng_next(r);
        struct result res;
        int rc = trial(v, seed, &res);
        if (rc) {
            errors++;
            CHECK(0, "case %d trial seed %llu could not run: %d", idx, (unsigned long long)seed, rc);
            if (errors > 3)
                break;
            continue;
        }
        ran++;
        forced += res.forced;
        if (res.forced && !res.failed) {
            printf("  forced open: case %d trial %d seed %llu: %s\n", idx, t, (unsigned long long)seed, res.what);
            pthread_mutex_lock(&diag_mu);
            if (verbose)
                fwrite(diag_buf, 1, diag_len, stdout);
            pthread_mutex_unlock(&diag_mu);
        }
        if (verbose && !res.failed)
            printf("  case %d trial %d seed %llu: %s\n", idx, t, (unsigned long long)seed, res.what);
        if (res.failed) {
            failed++;
            printf("  FAILED case %d trial %d seed %llu: %s\n    replay: URAID_CUT6_ONLY=%d URAID_CUT6_TRIAL=%llu\n",
                   idx, t, (unsigned long long)seed, res.what, idx, (unsigned long long)seed);
            pthread_mutex_lock(&diag_mu);
            fwrite(diag_buf, 1, diag_len, stdout);
            pthread_mutex_unlock(&diag_mu);
            fflush(stdout);
        }
    }
    printf("  case %d: %d of %d trials failed, %d opened with --force (%lld s)\n", idx, failed, ran, forced,
           (long long)(time(NULL) - t0));
    fflush(stdout);
    CHECK(failed == 0, "case %d: %d of %d power-cut trials lost, damaged or mismatched data", idx, failed, ran);
    /* with the area as created a cut never damages the log (docs/CRASH.md) */
    CHECK(ppl_sectors || v->ppl_sectors || forced == 0, "case %d: %d of %d trials needed --force", idx, forced, ran);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_ppl_cut6");
    struct rng r;
    rng_seed(&r, harness_seed());
    int lng = env_int("URAID_TEST_LONG", 0), quick = getenv("URAID_TEST_QUICK") != NULL;
    int trials = env_int("URAID_CUT6_TRIALS", 0); /* 0: each case's own count */
    int only = env_int("URAID_CUT6_ONLY", -1);
    const char *ts = getenv("URAID_CUT6_TRIAL");
    uint64_t only_trial = ts && *ts ? strtoull(ts, NULL, 10) : 0;
    keep_pct = (unsigned)env_int("URAID_CUT6_KEEP", 33);
    tear_pct = (unsigned)env_int("URAID_CUT6_TEAR", 33);
    verbose = env_int("URAID_CUT6_VERBOSE", 0);
    latency_us = (unsigned)env_int("URAID_CUT6_LATENCY_US", 0);
    ppl_sectors = (unsigned)env_int("URAID_CUT6_PPL_SECTORS", 0);
    aim_sleep_us = (unsigned)env_int("URAID_CUT6_LOG_US", 1000);
    if (only_trial)
        trials = 1;
    /* the members in memory: a trial is milliseconds there, 4 times that on a disk */
    if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0)
        setenv("TMPDIR", "/dev/shm", 0);
    diag_buf = malloc(diag_cap);
    if (diag_buf)
        uraid_set_log(diag_log, NULL, URAID_LOG_DEBUG);
    const char *hold = getenv("URAID_GATHER_HOLD_US");
    printf("ppl power-cut stress: %s trials per case (URAID_CUT6_TRIALS), keep %u%%, tear %u%%, gathering %s\n",
           trials  ? "as set"
           : quick ? "5 (30 aimed at restarts; URAID_TEST_QUICK)"
           : lng   ? "2000 (5000 aimed at restarts)"
                   : "30 (200 aimed at restarts)",
           keep_pct, tear_pct,
           hold && !strcmp(hold, "0") ? "off" : "held (default)");
    if (!lng && !trials)
        printf("note test_ppl_cut6: short mode (URAID_TEST_LONG=1: 2000 and 5000 trials per case)\n");
    if (make_template() == 0)
        for (int i = 0; i < NVARIANTS; i++)
            if (only < 0 || only == i)
                run_variant(i, trials     ? trials
                               : quick    ? (variants[i].aim ? 30 : 5)
                               : lng      ? (variants[i].aim ? 5000 : 2000)
                                          : (variants[i].aim ? 200 : 30),
                            &r, only_trial);
    for (int s = 0; s < N; s++)
        free(image[s]);
    fx_destroy(&fx);
    uraid_set_log(NULL, NULL, URAID_LOG_WARN);
    free(diag_buf);
    return harness_finish();
}
