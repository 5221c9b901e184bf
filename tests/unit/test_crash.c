/* Crash trials: do acknowledged writes survive a crash, and does a crash
 * damage what it never touched?
 *
 * For each level (RAID-5, RAID-6), state (healthy, degraded by one member,
 * RAID-6 also by two), consistency policy (a table: resync, bitmap, ppl --
 * a policy `uraid create` does not offer is printed "not available" and
 * counted neither way) and kind of crash, a trial:
 *   1. creates the array with the real `uraid create`, fills it with known
 *      base data and closes it cleanly;
 *   2. opens it (the degraded states leave members out) and runs several
 *      writer threads (tests/lib/crash_workload.c: every shape of write,
 *      random flushes, a journal of what was issued, acknowledged, flushed);
 *   3. crashes at a random moment: either
 *        kill -9: the writers run in a child (this binary started afresh,
 *        for TSan) that is killed with SIGKILL after a random number of
 *        journal records, or
 *        power cut: every member sits on the power-cut layer
 *        (lib/member/powercut.c) in one domain, cut at a random member
 *        write; each member's writes since its last flush are kept,
 *        dropped or torn at sector granularity, then every I/O fails and
 *        the array is abandoned;
 *   4. reopens the members afresh with auto_rebuild (as a server does),
 *      with --force only where md would need it (dirty + degraded:
 *      counted in the "forced" column), waits for the job the array starts
 *      and starts a resync itself if the array is still dirty;
 *   5. judges every sector against the journal (lost acknowledged data,
 *      damaged untouched sectors, garbage in written sectors) and runs a
 *      check (mismatch_cnt).
 * Promises asserted: a healthy array loses and damages nothing and checks
 * clean, whatever the policy; a degraded one the same only under a policy
 * that promises to close the write hole (ppl). resync and bitmap on a
 * degraded array leave the hole: those rows are reported, not asserted.
 *
 * URAID_CRASH_TRIALS=N trials per row (default 3, 1 with URAID_TEST_QUICK;
 * `make crash-long` runs 200). Every trial prints its seed and the line that
 * replays it: URAID_TEST_SEED=S URAID_CRASH_ONLY=ROW (URAID_CRASH_ONLY=raid6,kill
 * runs the rows whose label contains every part). URAID_CRASH_THREADS=N
 * changes the number of writers (3; 1 makes a power-cut trial's order of
 * member writes nearly the same from run to run, for a replay).
 * URAID_CRASH_DIAG=1 prints the recovery's messages (every PPL entry
 * replayed) under each trial that fails.
 *
 * Also: uraid_flush makes every acknowledged write durable on every member
 * (the power-cut layer counts what is not flushed yet, and a cut that drops
 * everything unflushed must leave exactly the flushed state). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array_fixture.h"
#include "crash_workload.h"
#include "harness.h"
#include "member/powercut.h"

#define CHUNK (16u << 10)
#define MEMBER_BYTES (3u << 20)
#define THREADS 3
#define WRITES_PER_THREAD 40
#define FLUSH_ONE_IN 6

static struct rng rng;
static const char *uraid_bin = "build/uraid";
static int has_policy_option; /* `uraid create --help` offers --consistency-policy */

/* ---- the table of what is tried -------------------------------------------------------- */

struct policy {
    const char *name;
    const char *args;          /* uraid create options, always given */
    const char *policy_arg;    /* given too when --consistency-policy exists */
    int needs_policy_option;   /* not available without --consistency-policy */
    int closes_hole;           /* promises no damage on a degraded array either */
};

static const struct policy policies[] = {
    {"resync", "--bitmap none", "--consistency-policy resync", 0, 0},
    {"bitmap", "--bitmap internal --bitmap-chunk 64K", "--consistency-policy bitmap", 0, 0},
    {"ppl", "", "--consistency-policy ppl", 1, 1},
};
#define NPOL (int)(sizeof policies / sizeof policies[0])

struct shape {
    int level, n, missing;
};

static const struct shape shapes[] = {{5, 4, 0}, {5, 4, 1}, {6, 5, 0}, {6, 5, 1}, {6, 5, 2}};
#define NSHAPE (int)(sizeof shapes / sizeof shapes[0])

enum crash { KILL9, POWERCUT };
static const char *const crash_names[] = {"kill", "powercut"};

struct row {
    char label[64];            /* raid5/deg1/resync/kill: URAID_CRASH_ONLY matches on it */
    const struct shape *sh;
    const struct policy *pol;
    enum crash crash;
    int available;
    char why_not[200];
    int trials, lost, damaged, bad, mismatch, forced, check_na, errors;
    uint64_t lost_sectors, damaged_sectors, bad_sectors;
};

/* ---- one array per trial ----------------------------------------------------------------- */

struct trial {
    struct fx f;               /* paths, geometry, directory (its model is unused) */
    const struct row *row;
    uint64_t seed;
    unsigned omit;             /* FX_SLOT()s left out */
    uint64_t size;
};

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* `uraid create` with the policy's options on n fresh member files. */
static int create_array(struct fx *f, const struct shape *sh, const struct policy *pol, char *out, size_t outlen)
{
    memset(f, 0, sizeof *f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/uraid-crash-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) {
        snprintf(out, outlen, "mkdtemp %s: %s", f->dir, strerror(errno));
        return -errno;
    }
    f->n = sh->n;
    f->level = sh->level;
    char cmd[4096];
    int at = snprintf(cmd, sizeof cmd, "%s create --level %d --raid-devices %d --chunk %uK --assume-clean %s %s",
                      uraid_bin, sh->level, sh->n, CHUNK / 1024, pol->args,
                      has_policy_option && pol->policy_arg ? pol->policy_arg : "");
    char dir[sizeof f->dir]; /* a copy: gcc -O1 cannot tell f->dir and f->path[] apart (-Wrestrict) */
    memcpy(dir, f->dir, sizeof dir);
    for (int s = 0; s < sh->n; s++) {
        snprintf(f->path[s], sizeof f->path[s], "%s/m%d.img", dir, s);
        int rc = fx_file_of_size(f->path[s], MEMBER_BYTES);
        if (rc) {
            snprintf(out, outlen, "member %s: %s", f->path[s], strerror(-rc));
            return rc;
        }
        at += snprintf(cmd + at, sizeof cmd - (size_t)at, " %s", f->path[s]);
    }
    snprintf(cmd + at, sizeof cmd - (size_t)at, " 2>&1");
    int st = harness_run(cmd, out, outlen);
    char *nl = strchr(out, '\n');
    if (nl && st != 0)
        *nl = 0;
    return st == 0 ? 0 : -EINVAL;
}

static void remove_array(struct fx *f)
{
    for (int s = 0; s < f->n; s++)
        unlink(f->path[s]);
    if (f->dir[0])
        rmdir(f->dir);
    f->dir[0] = 0;
}

static int open_paths(struct trial *t, const char *const *sim, struct uraid_open_params *op,
                      struct uraid_array **a, char *why, size_t whylen)
{
    const char *paths[FX_MAXM];
    int np = 0;
    for (int s = 0; s < t->f.n; s++)
        if (!(t->omit & FX_SLOT(s)))
            paths[np++] = t->f.path[s];
    op->member_sim = sim;
    int rc = uraid_open(paths, np, op, a, why, whylen);
    op->member_sim = NULL;
    return rc;
}

/* The policy the array shows is the one asked for. */
static void check_policy(struct trial *t, struct uraid_array *a)
{
    static struct uraid_array_info info;
    CHECK(uraid_get_info(a, &info) == 0);
    const char *p = t->row->pol->name;
    if (!strcmp(p, "bitmap") || !strcmp(p, "resync"))
        CHECK(info.bitmap == !strcmp(p, "bitmap"), "%s: created with policy %s, the array says bitmap=%d",
              t->row->label, p, info.bitmap);
    if (t->row->pol->needs_policy_option) {
        char cmd[512], out[8192];
        snprintf(cmd, sizeof cmd, "%s examine %s 2>&1", uraid_bin, t->f.path[0]);
        harness_run(cmd, out, sizeof out);
        int shown = 0; /* on a line that is not the member's path, which is random */
        for (char *line = strtok(out, "\n"); line && !shown; line = strtok(NULL, "\n"))
            shown = !strstr(line, t->f.dir) && strcasestr(line, p);
        CHECK(shown, "%s: uraid examine does not show the policy %s", t->row->label, p);
    }
}

/* Creates, fills with the base data and closes cleanly. */
static int trial_setup(struct trial *t)
{
    char out[2048] = "";
    int rc = create_array(&t->f, t->row->sh, t->row->pol, out, sizeof out);
    CHECK(rc == 0, "%s: uraid create: %s", t->row->label, out);
    if (rc)
        return rc;
    struct uraid_open_params op = {0};
    struct uraid_array *a;
    char why[512] = "";
    unsigned omit = t->omit;
    t->omit = 0;
    rc = open_paths(t, NULL, &op, &a, why, sizeof why);
    t->omit = omit;
    CHECK(rc == 0, "%s: open after create: %s", t->row->label, why);
    if (rc)
        return rc;
    check_policy(t, a);
    t->size = uraid_size(a);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    uint64_t stripe = (uint64_t)info.chunk_bytes * (uint64_t)(info.raid_devices - (info.level == 6 ? 2 : 1));
    rc = cw_fill_base(a, t->seed, t->size, stripe);
    CHECK(rc == 0, "%s: filling the base data: %d", t->row->label, rc);
    int crc = uraid_close(a);
    CHECK(crc == 0, "%s: clean close after the fill: %d", t->row->label, crc);
    return rc ? rc : crc;
}

static void workload_params(struct cw_params *p, struct uraid_array *a, uint64_t seed)
{
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    *p = (struct cw_params){.a = a, .seed = seed, .size = uraid_size(a), .chunk = info.chunk_bytes,
                            .stripe = (uint64_t)info.chunk_bytes *
                                      (uint64_t)(info.raid_devices - (info.level == 6 ? 2 : 1)),
                            .threads = getenv("URAID_CRASH_THREADS") ? atoi(getenv("URAID_CRASH_THREADS")) : THREADS,
                            .writes_per_thread = WRITES_PER_THREAD,
                            .flush_one_in = FLUSH_ONE_IN};
}

/* ---- the two crashes --------------------------------------------------------------------- */

/* The writers in this process over power-cut layers; the cut at a random
 * member write (or after the last one). The abandoned array is freed (every
 * I/O fails by then, so nothing it does reaches the members). */
static int crash_powercut(struct trial *t, struct rng *r, struct cw_journal *j, char *note, size_t notelen)
{
    char dom[64], spec[128];
    snprintf(dom, sizeof dom, "crash-%llx", (unsigned long long)t->seed);
    snprintf(spec, sizeof spec, "powercut=%s,seed=%llu", dom, (unsigned long long)t->seed);
    const char *sim[FX_MAXM];
    for (int i = 0; i < FX_MAXM; i++)
        sim[i] = spec;
    struct uraid_open_params op = {0};
    struct uraid_array *a;
    char why[512] = "";
    int rc = open_paths(t, sim, &op, &a, why, sizeof why);
    CHECK(rc == 0, "%s: open over the power-cut layer: %s", t->row->label, why);
    if (rc)
        return rc;
    struct powercut_domain *d = powercut_domain_find(dom);
    CHECK(d != NULL, "%s: no power domain %s", t->row->label, dom);
    if (!d)
        return -ENOENT;
    /* What the process acknowledged after the cut no client ever saw: the
     * journal ends at the cut (anything later in it is dropped). */
    struct cw_cut_mark mark = {.j = j};
    powercut_on_cut(d, cw_mark_cut, &mark);
    /* half the cuts anywhere in the run, half in its first member writes,
     * where the array's own metadata (the dirty mark, the first bitmap
     * bits) is still unflushed */
    uint64_t at = 1 + rng_below(r, rng_below(r, 2) ? 600 : 40);
    powercut_arm(d, at);
    struct cw_params p;
    workload_params(&p, a, t->seed);
    cw_run(&p, j);
    int by_trigger = powercut_is_cut(d);
    if (!by_trigger)
        powercut_cut(d);
    CHECK(mark.set);
    size_t seen = j->n;
    cw_journal_cut(j, mark.at);
    uraid_close(a); /* fails: the members are dead; it only frees memory */
    struct powercut_stats st;
    powercut_get_stats(d, &st);
    snprintf(note, notelen, "cut %s member write %llu (journal %zu of %zu): %llu kept, %llu dropped, %llu torn",
             by_trigger ? "at" : "after", (unsigned long long)(by_trigger ? at : st.writes), mark.at, seen,
             (unsigned long long)st.cut_kept, (unsigned long long)st.cut_dropped, (unsigned long long)st.cut_torn);
    powercut_domain_forget(dom);
    return 0;
}

/* Child side of kill -9: opens the members given, runs the writers with the
 * journal down fd and waits to be killed. */
static int crash_child_main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int fd = atoi(argv[0]);
    uint64_t seed = strtoull(argv[1], NULL, 0);
    /* Member writes that take a disk's time (100 us each, the members'
     * requests in parallel): on memory-backed files a stripe's data and
     * parity writes are a few microseconds apart and a kill almost never
     * falls between them, as it does on real disks or NBD members. */
    const char *sim[FX_MAXM * 2];
    for (int i = 0; i < FX_MAXM * 2; i++)
        sim[i] = "latency=100us";
    struct uraid_open_params op = {.member_sim = sim};
    struct uraid_array *a;
    if (argc - 2 > FX_MAXM * 2 || uraid_open((const char **)argv + 2, argc - 2, &op, &a, NULL, 0))
        return 1;
    struct cw_journal j;
    cw_journal_init(&j, fd);
    struct cw_params p;
    workload_params(&p, a, seed);
    cw_run(&p, &j);
    for (;;)
        pause();
}

static int crash_kill9(struct trial *t, struct rng *r, struct cw_journal *j, char *note, size_t notelen)
{
    int pfd[2];
    if (pipe(pfd))
        return -errno;
    char fdarg[16], seedarg[32];
    snprintf(fdarg, sizeof fdarg, "%d", pfd[1]);
    snprintf(seedarg, sizeof seedarg, "%llu", (unsigned long long)t->seed);
    char *argv[FX_MAXM + 5];
    int n = 0;
    argv[n++] = (char *)"test_crash";
    argv[n++] = (char *)"--crash-child";
    argv[n++] = fdarg;
    argv[n++] = seedarg;
    for (int s = 0; s < t->f.n; s++)
        if (!(t->omit & FX_SLOT(s)))
            argv[n++] = t->f.path[s];
    argv[n] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a test that died */
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        return -errno;
    }
    /* about 2 records per write and 2 per flush: somewhere in the whole run */
    uint64_t kill_at = 1 + rng_below(r, THREADS * WRITES_PER_THREAD * 2 + THREADS * WRITES_PER_THREAD / 3);
    int killed = 0, ended = 0;
    struct cw_rec rec;
    size_t got = 0;
    for (;;) {
        struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
        if (!killed && poll(&pf, 1, 60000) == 0) {
            CHECK(0, "%s: the writer child wrote nothing for 60 s: killed", t->row->label);
            kill(pid, SIGKILL);
            killed = -1;
        }
        ssize_t k = read(pfd[0], (char *)&rec + got, sizeof rec - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
        if (got < sizeof rec)
            continue;
        got = 0;
        if (rec.type == CW_END)
            ended = 1;
        else
            cw_journal_add(j, &rec);
        if (!killed && (j->n >= kill_at || ended)) {
            kill(pid, SIGKILL);
            killed = 1;
        }
    }
    close(pfd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: the writer child ended by itself (status %#x)",
          t->row->label, st);
    snprintf(note, notelen, "killed after %zu journal records%s", j->n, ended ? " (all writes done)" : "");
    return killed > 0 ? 0 : -ECHILD;
}

/* ---- after the crash ------------------------------------------------------------------------- */

struct outcome {
    struct cw_verdict v;
    uint64_t mismatch;
    int forced, check_na, resynced;
};

/* Opens the members afresh as a server would (auto_rebuild; --force only
 * for dirty + degraded, as md), lets the array's own job finish and
 * resyncs if it is still dirty. */
static int reopen_recovered(struct trial *t, struct uraid_array **out, struct outcome *o)
{
    struct uraid_open_params op = {.auto_rebuild = 1};
    struct uraid_array *a;
    char why[512] = "";
    int rc = open_paths(t, NULL, &op, &a, why, sizeof why);
    if (rc == -EUCLEAN) {
        o->forced = 1;
        op.force = 1;
        rc = open_paths(t, NULL, &op, &a, why, sizeof why);
    }
    CHECK(rc == 0, "%s seed %llu: reopen after the crash: %s", t->row->label, (unsigned long long)t->seed, why);
    if (rc)
        return rc;
    struct uraid_job_status st;
    uraid_job_status(a, &st);
    if (st.running)
        CHECK(uraid_job_wait(a, &st) == 0, "%s: the array's %s failed: %s", t->row->label, uraid_job_name(st.kind),
              st.why);
    o->resynced = st.kind == URAID_JOB_RESYNC;
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    if (!info.clean && uraid_job_start(a, URAID_JOB_RESYNC, NULL, why, sizeof why) == 0) {
        CHECK(uraid_job_wait(a, &st) == 0, "%s: resync failed: %s", t->row->label, st.why);
        o->resynced = 1;
    }
    *out = a;
    return 0;
}

/* A check's mismatch count, or check_na when there is no redundancy left. */
static void run_check(struct trial *t, struct uraid_array *a, struct outcome *o)
{
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status st;
    char why[256];
    if (uraid_job_start(a, URAID_JOB_CHECK, &jp, why, sizeof why) == 0) {
        CHECK(uraid_job_wait(a, &st) == 0, "%s: check failed: %s", t->row->label, st.why);
        o->mismatch = st.mismatch_sectors;
    } else {
        o->check_na = 1;
    }
}

/* URAID_CRASH_DIAG=1: the library's messages (debug level: every PPL entry
 * replayed) from each trial's recovery kept, and printed for a trial that
 * loses, damages or mismatches something. */
static pthread_mutex_t diag_mu = PTHREAD_MUTEX_INITIALIZER;
static char *diag_buf;
static size_t diag_len, diag_cap;

static void diag_log(void *ctx, enum uraid_log_level level, const char *msg)
{
    (void)ctx;
    char line[1024];
    int n = snprintf(line, sizeof line, "    log%d: %s\n", level, msg);
    pthread_mutex_lock(&diag_mu);
    if (n > 0 && diag_len + (size_t)n < diag_cap) {
        memcpy(diag_buf + diag_len, line, (size_t)n);
        diag_len += (size_t)n;
    }
    pthread_mutex_unlock(&diag_mu);
}

static void diag_reset(void)
{
    pthread_mutex_lock(&diag_mu);
    diag_len = 0;
    pthread_mutex_unlock(&diag_mu);
}

static void diag_start(void)
{
    const char *v = getenv("URAID_CRASH_DIAG");
    if (!v || !*v || !strcmp(v, "0"))
        return;
    diag_cap = 16u << 20;
    diag_buf = malloc(diag_cap);
    if (diag_buf)
        uraid_set_log(diag_log, NULL, URAID_LOG_DEBUG);
}

static int recover_and_judge(struct trial *t, const struct cw_journal *j, struct outcome *o)
{
    diag_reset();
    memset(o, 0, sizeof *o);
    struct uraid_array *a;
    int rc = reopen_recovered(t, &a, o);
    if (rc)
        return rc;
    rc = cw_judge(a, t->seed, t->size, j, &o->v);
    CHECK(rc == 0, "%s: judging: %d", t->row->label, rc);
    run_check(t, a, o);
    CHECK(uraid_close(a) == 0, "%s: close after recovery", t->row->label);
    return rc;
}

static void run_trial(struct row *row, uint64_t seed)
{
    struct trial t = {.row = row, .seed = seed};
    struct rng r;
    rng_seed(&r, seed);
    while (__builtin_popcount(t.omit) < row->sh->missing)
        t.omit |= FX_SLOT(rng_below(&r, (uint64_t)row->sh->n));
    char note[200] = "";
    struct cw_journal j;
    cw_journal_init(&j, -1);
    struct outcome o = {0};
    int rc = trial_setup(&t);
    if (!rc)
        rc = row->crash == POWERCUT ? crash_powercut(&t, &r, &j, note, sizeof note)
                                    : crash_kill9(&t, &r, &j, note, sizeof note);
    if (!rc)
        rc = recover_and_judge(&t, &j, &o);
    row->trials++;
    if (rc) {
        row->errors++;
    } else {
        const struct cw_verdict *v = &o.v;
        row->lost += v->lost_sectors > 0;
        row->damaged += v->damaged_sectors > 0;
        row->bad += v->bad_sectors > 0;
        row->mismatch += o.mismatch > 0;
        row->forced += o.forced;
        row->check_na += o.check_na;
        row->lost_sectors += v->lost_sectors;
        row->damaged_sectors += v->damaged_sectors;
        row->bad_sectors += v->bad_sectors;
        printf("  %-28s seed %-20llu %3llu writes (%llu acked, %llu durable), %s; lost %llu, damaged %llu, bad "
               "%llu, mismatch %llu%s%s%s%s\n",
               row->label, (unsigned long long)seed, (unsigned long long)v->writes_issued,
               (unsigned long long)v->writes_acked, (unsigned long long)v->writes_durable, note,
               (unsigned long long)v->lost_sectors, (unsigned long long)v->damaged_sectors,
               (unsigned long long)v->bad_sectors, (unsigned long long)o.mismatch, o.check_na ? " (no check)" : "",
               o.forced ? ", forced open" : "", v->first_bad_sector != UINT64_MAX ? "; first: " : "",
               v->first_bad_sector != UINT64_MAX ? v->first_bad : "");
    }
    if (rc || o.v.lost_sectors || o.v.damaged_sectors || o.v.bad_sectors || o.mismatch) {
        printf("    replay: URAID_TEST_SEED=%llu URAID_CRASH_ONLY=%s\n", (unsigned long long)seed, row->label);
        pthread_mutex_lock(&diag_mu);
        if (diag_buf)
            fwrite(diag_buf, 1, diag_len, stdout);
        pthread_mutex_unlock(&diag_mu);
    }
    fflush(stdout);
    cw_journal_free(&j);
    remove_array(&t.f);
}

/* ---- the table ---------------------------------------------------------------------------- */

static const char *state_name(int missing)
{
    return missing == 0 ? "healthy" : missing == 1 ? "degraded-1" : "degraded-2";
}

static void detect_policy_option(void)
{
    char cmd[512], out[8192] = "";
    snprintf(cmd, sizeof cmd, "%s create --help 2>&1", uraid_bin);
    harness_run(cmd, out, sizeof out);
    has_policy_option = strstr(out, "consistency-policy") != NULL;
}

/* A policy that needs --consistency-policy is available when uraid create
 * offers the option and accepts the policy for this shape. */
static int policy_available(const struct policy *pol, const struct shape *sh, char *why, size_t whylen)
{
    if (!pol->needs_policy_option)
        return 1;
    if (!has_policy_option) {
        snprintf(why, whylen, "uraid create has no --consistency-policy");
        return 0;
    }
    struct fx f;
    char out[1024] = "";
    int rc = create_array(&f, sh, pol, out, sizeof out);
    remove_array(&f);
    if (rc)
        snprintf(why, whylen, "uraid create refuses it: %.150s", out);
    return rc == 0;
}

static void print_table(const struct row *rows, int nrows, int trials)
{
    printf("\ncrash trials: seed %llu, %d per row (URAID_CRASH_TRIALS); a column counts the trials with at least one "
           "such sector\n",
           (unsigned long long)harness_seed(), trials);
    printf("%-7s %-11s %-7s %-9s %6s %6s %8s %5s %9s %7s  %s\n", "level", "state", "policy", "crash", "trials", "lost",
           "damaged", "bad", "mismatch", "forced", "sectors lost/damaged/bad");
    for (int i = 0; i < nrows; i++) {
        const struct row *r = &rows[i];
        printf("RAID-%-2d %-11s %-7s %-9s ", r->sh->level, state_name(r->sh->missing), r->pol->name,
               crash_names[r->crash]);
        if (!r->available) {
            printf("not available: %s\n", r->why_not);
            continue;
        }
        if (!r->trials) {
            printf("not run (URAID_CRASH_ONLY)\n");
            continue;
        }
        char mm[16];
        snprintf(mm, sizeof mm, r->check_na == r->trials ? "n/a" : "%d", r->mismatch);
        printf("%6d %6d %8d %5d %9s %7d  %llu/%llu/%llu%s\n", r->trials, r->lost, r->damaged, r->bad, mm, r->forced,
               (unsigned long long)r->lost_sectors, (unsigned long long)r->damaged_sectors,
               (unsigned long long)r->bad_sectors, r->errors ? "  (trials with errors: see above)" : "");
    }
    printf("lost: acknowledged data covered by a completed flush read back wrong; damaged: a sector the trial never "
           "wrote changed; bad: a written sector holds neither its old value nor one of its writes; mismatch: the "
           "check after recovery found parity mismatches (n/a: no redundancy left); forced: reopened with --force "
           "(dirty + degraded)\n\n");
}

static void run_row(struct row *r, int idx, int trials, const char *only)
{
    int promise = r->sh->missing == 0 || r->pol->closes_hole;
    harness_beginf("%s: %d trials, %s", r->label, trials,
                   promise ? "nothing acknowledged lost, nothing untouched damaged, check clean"
                           : "reported only (this policy leaves the write hole on a degraded array)");
    for (int i = 0; i < trials; i++)
        run_trial(r, only && i == 0 ? harness_seed() : mix(harness_seed() ^ mix((uint64_t)idx * 1000003u + (uint64_t)i)));
    CHECK(r->errors == 0, "%s: %d trials could not be run to the end", r->label, r->errors);
    if (promise)
        CHECK(!r->lost && !r->damaged && !r->bad && !r->mismatch,
              "%s: %d trials lost acknowledged data, %d damaged untouched sectors, %d left garbage, %d mismatched "
              "after recovery (replay lines above)",
              r->label, r->lost, r->damaged, r->bad, r->mismatch);
    harness_end();
}

/* ---- flush means durable ------------------------------------------------------------------ */

/* n writes of every shape, one at a time, recorded in j as the writers do
 * (ids from *next_id); with flush, then a flush. */
static int journaled_writes(struct uraid_array *a, struct rng *r, const struct cw_params *p, struct cw_journal *j,
                            uint32_t *next_id, int n, int flush)
{
    uint8_t *buf = aligned_alloc(4096, p->stripe);
    int rc = buf ? 0 : -ENOMEM;
    for (int i = 0; i < n && !rc; i++) {
        uint64_t off, len, kind = rng_below(r, 4), ssec = p->stripe / CW_SECTOR;
        if (kind == 0) {
            len = 4096;
            off = rng_below(r, p->size / 4096) * 4096;
        } else if (kind == 1) {
            len = p->chunk;
            off = rng_below(r, p->size / p->chunk) * p->chunk;
        } else if (kind == 2) {
            len = (1 + rng_below(r, ssec - 1)) * CW_SECTOR;
            off = rng_below(r, p->size / p->stripe) * p->stripe + rng_below(r, ssec - len / CW_SECTOR + 1) * CW_SECTOR;
        } else {
            len = p->stripe;
            off = rng_below(r, p->size / p->stripe) * p->stripe;
        }
        uint32_t id = ++*next_id;
        cw_journal_add(j, &(struct cw_rec){.type = CW_ISSUE, .id = id, .off = off, .len = (uint32_t)len});
        for (uint64_t s = 0; s < len / CW_SECTOR; s++)
            cw_sector(p->seed, id, off / CW_SECTOR + s, buf + s * CW_SECTOR);
        rc = uraid_write(a, buf, len, off);
        if (!rc)
            cw_journal_add(j, &(struct cw_rec){.type = CW_ACK, .id = id});
    }
    free(buf);
    if (!rc && flush) {
        cw_journal_add(j, &(struct cw_rec){.type = CW_FLUSH_START, .id = 1});
        rc = uraid_flush(a);
        if (!rc)
            cw_journal_add(j, &(struct cw_rec){.type = CW_FLUSH_DONE, .id = 1});
    }
    return rc;
}

/* uraid_flush leaves no acknowledged write unflushed on any member: the
 * layer has nothing pending when it returns, and a cut that drops
 * everything not flushed loses none of it. On a healthy array more writes
 * follow the flush before the cut (they may survive, since the array flushes
 * members on its own too, e.g. for the bitmap, but must be whole sectors of
 * old or new data); on a degraded one too under a policy that closes the
 * write hole (ppl), while under the others such writes would open it, so
 * there the cut follows the flush at once and the array must read back
 * exactly as flushed. */
static void test_flush(const struct shape *sh, const struct policy *pol)
{
    struct row row = {.sh = sh, .pol = pol, .crash = POWERCUT, .available = 1};
    snprintf(row.label, sizeof row.label, "flush/raid%d/%s/%s", sh->level, state_name(sh->missing), pol->name);
    int more = sh->missing == 0 || pol->closes_hole;
    harness_beginf("%s: nothing unflushed on any member after uraid_flush, nothing flushed lost at a cut%s", row.label,
                   more ? " (with unflushed writes after it)" : "");
    struct trial t = {.row = &row, .seed = rng_next(&rng)};
    for (int s = 0; s < sh->missing; s++)
        t.omit |= FX_SLOT(s);
    struct cw_journal j;
    cw_journal_init(&j, -1);
    if (trial_setup(&t))
        goto out;
    char dom[64], spec[160], why[512] = "";
    snprintf(dom, sizeof dom, "flush-%llx", (unsigned long long)t.seed);
    snprintf(spec, sizeof spec, "powercut=%s,seed=%llu,keep=0,tear=0", dom, (unsigned long long)t.seed);
    const char *sim[FX_MAXM];
    for (int i = 0; i < FX_MAXM; i++)
        sim[i] = spec;
    struct uraid_open_params op = {.bitmap_daemon_ms = 600000}; /* no bitmap clearing in between */
    struct uraid_array *a;
    if (open_paths(&t, sim, &op, &a, why, sizeof why)) {
        CHECK(0, "%s: open: %s", row.label, why);
        goto out;
    }
    struct powercut_domain *d = powercut_domain_find(dom);
    struct cw_params p;
    workload_params(&p, a, t.seed);
    struct rng r;
    rng_seed(&r, t.seed);
    uint32_t ids = 0;
    CHECK(journaled_writes(a, &r, &p, &j, &ids, 40, 1) == 0, "%s: writes and flush", row.label);
    struct powercut_stats st;
    powercut_get_stats(d, &st);
    CHECK(st.pending_writes == 0, "%s: %llu member writes (%llu bytes) not flushed after uraid_flush returned",
          row.label, (unsigned long long)st.pending_writes, (unsigned long long)st.pending_bytes);
    if (more) {
        uint64_t flushes = st.flushes;
        CHECK(journaled_writes(a, &r, &p, &j, &ids, 10, 0) == 0);
        powercut_get_stats(d, &st);
        /* ppl's flusher may have flushed them already */
        CHECK(st.pending_writes > 0 || st.flushes > flushes, "%s: the writes after the flush are neither pending nor flushed",
              row.label);
    }
    powercut_cut(d);
    uraid_close(a);
    powercut_get_stats(d, &st);
    CHECK(!st.cut_kept && !st.cut_torn && (more || !st.cut_dropped), "%s: at the cut %llu kept, %llu torn, %llu dropped",
          row.label, (unsigned long long)st.cut_kept, (unsigned long long)st.cut_torn,
          (unsigned long long)st.cut_dropped);
    powercut_domain_forget(dom);
    struct outcome o = {0};
    if (reopen_recovered(&t, &a, &o))
        goto out;
    CHECK(cw_judge(a, t.seed, t.size, &j, &o.v) == 0);
    CHECK(o.v.writes_durable == 40, "%s: %llu of 40 writes durable in the model", row.label,
          (unsigned long long)o.v.writes_durable);
    CHECK(!o.v.lost_sectors && !o.v.damaged_sectors && !o.v.bad_sectors,
          "%s seed %llu: %llu flushed sectors lost, %llu untouched damaged, %llu garbage; first: %s", row.label,
          (unsigned long long)t.seed, (unsigned long long)o.v.lost_sectors, (unsigned long long)o.v.damaged_sectors,
          (unsigned long long)o.v.bad_sectors, o.v.first_bad);
    run_check(&t, a, &o);
    CHECK(o.mismatch == 0, "%s: %llu mismatched sectors", row.label, (unsigned long long)o.mismatch);
    CHECK(uraid_close(a) == 0);
out:
    cw_journal_free(&j);
    remove_array(&t.f);
    harness_end();
}

/* URAID_CRASH_ONLY: rows whose label contains every ','-separated part. */
static int row_selected(const char *label, const char *only)
{
    if (!only)
        return 1;
    char copy[256], *save = NULL;
    snprintf(copy, sizeof copy, "%s", only);
    for (char *part = strtok_r(copy, ",", &save); part; part = strtok_r(NULL, ",", &save))
        if (!strstr(label, part))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--crash-child"))
        return crash_child_main(argc - 2, argv + 2);
    fx_log_from_env();
    diag_start();
    harness_init(argc, argv, "test_crash");
    rng_seed(&rng, harness_seed());
    const char *bin = getenv("URAID");
    if (bin && *bin)
        uraid_bin = bin;
    harness_begin("the uraid command is there (make all)");
    CHECK(access(uraid_bin, X_OK) == 0, "%s: %s (build it with make all, or set URAID)", uraid_bin, strerror(errno));
    harness_end();
    if (access(uraid_bin, X_OK))
        return harness_finish();
    detect_policy_option();

    const char *only = getenv("URAID_CRASH_ONLY");
    if (only && !*only)
        only = NULL;
    const char *tv = getenv("URAID_CRASH_TRIALS"), *quick = getenv("URAID_TEST_QUICK");
    int trials = tv && *tv ? atoi(tv) : only ? 1 : quick && *quick && strcmp(quick, "0") ? 1 : 3;
    if (trials < 1)
        trials = 1;

    if (!only) {
        for (int s = 0; s < NSHAPE; s++)
            for (int p = 0; p < NPOL; p++) {
                char why[200];
                if (policy_available(&policies[p], &shapes[s], why, sizeof why))
                    test_flush(&shapes[s], &policies[p]);
                else
                    printf("flush/raid%d/%s/%s: not available: %s\n", shapes[s].level, state_name(shapes[s].missing),
                           policies[p].name, why);
            }
    }

    static struct row rows[NSHAPE * NPOL * 2];
    int nrows = 0;
    for (int s = 0; s < NSHAPE; s++)
        for (int p = 0; p < NPOL; p++) {
            char why[200] = "";
            int avail = policy_available(&policies[p], &shapes[s], why, sizeof why);
            for (int c = 0; c < 2; c++) {
                struct row *r = &rows[nrows++];
                *r = (struct row){.sh = &shapes[s], .pol = &policies[p], .crash = (enum crash)c, .available = avail};
                snprintf(r->why_not, sizeof r->why_not, "%s", why);
                snprintf(r->label, sizeof r->label, "raid%d/%s/%s/%s", shapes[s].level, state_name(shapes[s].missing),
                         policies[p].name, crash_names[c]);
            }
        }
    for (int i = 0; i < nrows; i++)
        if (rows[i].available && row_selected(rows[i].label, only))
            run_row(&rows[i], i, trials, only);
    print_table(rows, nrows, trials);
    return harness_finish();
}
