/* kill -9 at random moments of every served reshape kind: a child process
 * opens the array, keeps one writer going (each write recorded before it
 * goes out and once acknowledged, in shared memory), starts the grow
 * through the API uraid_grow_online* serve's control socket calls, and is
 * killed with SIGKILL when the reshape job has moved a random share of
 * the array (0%: right after the grow returned). The parent then opens
 * every member as `uraid serve` would, runs the job the record asks for
 * (the reshape, or a takeover's recovery) to its end, and checks:
 *   - the geometry asked for was reached (level, members, chunk; a RAID-0
 *     chunk change killed midway ends, as md ends it, at the RAID-4
 *     missing its parity, and `--level 0` then takes it back);
 *   - every byte is the last acknowledged write's or the fill's (the one
 *     write in flight at the kill may hold its old or new bytes);
 *   - a check finds no parity mismatch where there is parity.
 * The same with a simulated power cut instead (lib/member/powercut.c: each
 * member's writes since its last flush kept, dropped or torn), in this
 * process, with test_crash's workload of writers and flushes and its
 * judge: a write acknowledged before a completed flush must be there, a
 * sector never written must hold its old value.
 * A table per kind: trials, crashes that fell inside the reshape, lost
 * data, mismatches, failures. 2 trials per kind in make check (1 with
 * URAID_TEST_QUICK), 50 with URAID_TEST_LONG=1 or URAID_RESHAPE_TRIALS=N.
 * Seeded (URAID_TEST_SEED replays the kill points; the thread timing is
 * not replayed). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array/array.h"
#include "array_fixture.h"
#include "crash_workload.h"
#include "harness.h"
#include "member/powercut.h"
#include "uraid.h"
#include "uraid_grow.h"

#define MEMBER_BYTES (3u << 20)
#define MAXM 8
#define SPEED_KIB 4000

enum op { GROW, GEOM, LEVEL, SHRINK, RECOVER, REPLACE };

struct kind {
    const char *name;
    int level, nold, nadd;
    enum op op;
    int N;                  /* raid_devices asked (0: keep) */
    uint32_t chunk_sectors; /* asked (0: keep) */
    const char *layout;     /* asked (NULL: keep) */
    int new_level;          /* LEVEL */
    int end_level, end_members;
    uint32_t end_chunk_sectors;
};

static const struct kind kinds[] = {
    {"RAID-5 4 -> 5", 5, 4, 1, GROW, 5, 0, NULL, 0, 5, 5, 128},
    {"RAID-6 5 -> 6", 6, 5, 1, GROW, 6, 0, NULL, 0, 6, 6, 128},
    {"RAID-5 chunk 64K -> 128K, right-asymmetric", 5, 4, 0, GEOM, 4, 256, "right-asymmetric", 0, 5, 4, 256},
    {"RAID-5 4 -> RAID-6 5 (restriped)", 5, 4, 1, LEVEL, 0, 0, NULL, 6, 6, 5, 128},
    {"RAID-0 3 -> 5", 0, 3, 2, GROW, 5, 0, NULL, 0, 0, 5, 128},
    {"RAID-0 chunk 64K -> 128K", 0, 3, 0, GEOM, 3, 256, NULL, 0, 0, 3, 256},
    {"RAID-5 5 -> 4 (shrink)", 5, 5, 0, SHRINK, 4, 0, NULL, 0, 5, 4, 128},
    /* the other jobs that move a member's data while it serves */
    {"RAID-5 4: a member failed, recovered onto a spare", 5, 4, 1, RECOVER, 4, 0, NULL, 0, 5, 4, 128},
    {"RAID-6 5: a member replaced by a spare", 6, 5, 1, REPLACE, 5, 0, NULL, 0, 6, 5, 128},
};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])

struct trial {
    const struct kind *k;
    char dir[128], path[MAXM][160];
    const char *paths[MAXM];
    uint8_t *model;
    struct fx_inflight *pend;
    uint64_t bytes, keep; /* the fill; what the writer covers (a shrink keeps less) */
    int offline;          /* the open refused and said to run the grow again offline; it did */
};

struct tally {
    int trials, inside, lost, mismatch, failed, offline;
};

static int set_up(struct trial *t, struct rng *r)
{
    const struct kind *k = t->k;
    int n = k->nold + k->nadd;
    uint64_t sizes[MAXM];
    for (int i = 0; i < n; i++)
        sizes[i] = MEMBER_BYTES;
    int rc = fx_tmpdir(t->dir, sizeof t->dir, "reshape-online-kill");
    if (rc == 0)
        rc = fx_member_files(t->dir, t->path, t->paths, n, sizes, 0);
    char why[300] = "";
    /* a served shrink needs room past the data for its first moves: an offline grow by one member left it */
    int first = k->op == SHRINK ? k->nold - 1 : k->nold;
    struct uraid_create_params cp = {.level = k->level, .raid_devices = first, .layout = -1,
                                     .chunk_bytes = 64u << 10, .assume_clean = 1,
                                     /* md reshapes no array with a PPL; the other jobs run on the default */
                                     .consistency_policy = k->op >= RECOVER ? URAID_POLICY_PPL : URAID_POLICY_RESYNC};
    if (rc == 0 && (rc = uraid_create(t->paths, first, &cp, 0, why, sizeof why)) != 0)
        CHECK(rc == 0, "%s: create: %s", k->name, why);
    struct uraid_grow_params gp = {.raid_devices = k->nold};
    if (rc == 0 && first < k->nold && (rc = uraid_grow_members(t->paths, first, t->paths + first, 1, &gp, NULL, why,
                                                                sizeof why)) != 0)
        CHECK(rc == 0, "%s: the grow that leaves room: %s", k->name, why);
    if (rc == 0)
        rc = fx_open_fill(t->paths, k->nold, 0, r, &t->model, &t->bytes, why, sizeof why);
    /* a shrink keeps what the smaller array holds (--array-size) */
    t->keep = k->op == SHRINK ? t->bytes / (uint64_t)(k->nold - 1) * (uint64_t)(k->N - 1) : t->bytes;
    t->pend = fx_shared_map(sizeof *t->pend);
    return rc ? rc : t->pend ? 0 : -ENOMEM;
}

static void tear_down(struct trial *t)
{
    for (int i = 0; i < t->k->nold + t->k->nadd; i++)
        unlink(t->path[i]);
    rmdir(t->dir);
    if (t->model)
        fx_shared_free(t->model, t->bytes);
    if (t->pend)
        fx_shared_free(t->pend, sizeof *t->pend);
}

static int start_grow(struct uraid_array *a, const struct trial *t, char *why, size_t whylen)
{
    const struct kind *k = t->k;
    const char *const *added = t->paths + k->nold;
    switch (k->op) {
    case GROW:
        return uraid_grow_online(a, k->N, added, k->nadd, why, whylen);
    case GEOM:
        return uraid_grow_online_geom(a, k->N, k->chunk_sectors, k->layout, added, k->nadd, why, whylen);
    case LEVEL:
        return uraid_grow_online_level(a, k->new_level, 0, 0, NULL, added, k->nadd, why, whylen);
    case SHRINK:
        return uraid_grow_online_shrink(a, k->N, 0, NULL, NULL, 0, t->keep / 512, why, whylen);
    case RECOVER:
    case REPLACE: {
        int rc = k->op == RECOVER ? array_manage_fail(a, t->paths[1], why, whylen) : 0;
        if (rc == 0 && k->op == RECOVER)
            rc = array_manage_remove(a, t->paths[1], why, whylen);
        if (rc == 0)
            rc = uraid_add_spare(a, added[0], why, whylen);
        struct uraid_job_params jp = {.slot = k->op == REPLACE ? 1 : -1, .spare = added[0]};
        if (rc >= 0)
            rc = uraid_job_start(a, k->op == REPLACE ? URAID_JOB_REPLACE : URAID_JOB_RECOVER, &jp, why, whylen);
        return rc == -EBUSY ? 0 : rc < 0 ? rc : 0; /* (the monitor may have started the recovery) */
    }
    }
    return -EINVAL;
}

/* The child: the writer on, the grow started, killed once the job has
 * moved pct% (0: at once). */
_Noreturn static void child(const struct trial *t, int pct, uint64_t seed)
{
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = SPEED_KIB, .sync_speed_min_kib = SPEED_KIB};
    struct uraid_array *a = NULL;
    if (uraid_open(t->paths, t->k->nold, &op, &a, why, sizeof why))
        _exit(3);
    struct fx_killer w = {.a = a, .model = t->model, .bytes = t->keep, .seed = seed, .pend = t->pend};
    fx_kill_writer_start(&w);
    if (start_grow(a, t, why, sizeof why)) {
        fprintf(stderr, "grow: %s\n", why);
        _exit(3);
    }
    for (int i = 0; pct && i < 20000; i++) {
        struct uraid_job_status st;
        uraid_job_status(a, &st);
        if (!st.running || (st.total_sectors && st.done_sectors * 100 >= st.total_sectors * (uint64_t)pct))
            break;
        usleep(1000);
    }
    raise(SIGKILL);
    _exit(6);
}

/* After the kill: open every member, the job the record asks for run to its end. */
static int carry_on(struct trial *t, struct uraid_array **out, int *inside, char *why, size_t whylen)
{
    const struct kind *k = t->k;
    int n = k->nold + k->nadd;
    struct uraid_array *a = NULL;
    int rc = uraid_open(t->paths, n, NULL, &a, why, whylen);
    if (rc && (strstr(why, "grow --continue") || strstr(why, "the same 'uraid grow' again"))) {
        /* a crash in a superblock batch: the open says to carry it on offline first; so does the user */
        struct uraid_grow_params gp = {.raid_devices = k->op == LEVEL ? 0 : k->N, .chunk_sectors = k->chunk_sectors,
                                       .layout = k->layout, .level_set = k->op == LEVEL, .level = k->new_level,
                                       .array_sectors = k->op == SHRINK ? t->keep / 512 : 0};
        rc = uraid_grow_members(t->paths, k->nold, t->paths + k->nold, k->nadd, &gp, NULL, why, whylen);
        if (rc == -EALREADY)
            rc = 0;
        t->offline += rc == 0;
        if (rc == 0)
            rc = uraid_open(t->paths, n, NULL, &a, why, whylen);
    }
    if (rc && k->nadd && strstr(why, "no md superblock") && strstr(why, t->paths[k->nold])) {
        /* the cut came before any old member's superblock changed (the new member's went first and
         * was lost): the array is as it was, and the user gives the grow again */
        rc = uraid_open(t->paths, k->nold, NULL, &a, why, whylen);
        struct uraid_array_info was;
        if (rc == 0 && (uraid_get_info(a, &was), was.level == k->level && was.raid_devices == k->nold &&
                        !was.reshape_total_sectors)) {
            rc = start_grow(a, t, why, whylen);
            t->offline += rc == 0;
        } else if (rc == 0) {
            rc = -EINVAL;
            snprintf(why, whylen, "the new member lost its superblock but the array changed: RAID-%d of %d", was.level,
                     was.raid_devices);
        }
    }
    if (rc)
        return rc;
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    *inside = info.reshape_total_sectors != 0 || info.degraded != 0;
    for (int i = 0; i < info.nmembers; i++) /* a replacement or a recovery cut midway */
        *inside |= info.member[i].state == URAID_MEMBER_REBUILDING;
    struct uraid_job_status st = {0};
    for (int round = 0; rc == 0 && round < 3; round++) { /* a reshape, then maybe a recovery */
        uraid_get_info(a, &info);
        enum uraid_job_kind kind = info.reshape_total_sectors ? URAID_JOB_RESHAPE : URAID_JOB_RECOVER;
        if (kind == URAID_JOB_RECOVER && info.degraded == 0)
            break;
        if (kind == URAID_JOB_RECOVER && info.level == 4 && k->end_level == 0)
            break; /* the RAID-4 missing its parity on the way back to RAID-0: nothing to recover */
        int jrc = uraid_job_start(a, kind, &(struct uraid_job_params){.slot = -1}, why, whylen);
        if (jrc && jrc != -EBUSY) {
            rc = jrc;
            break;
        }
        uraid_job_wait(a, &st);
        if (st.result) {
            snprintf(why, whylen, "%s", st.why);
            rc = st.result;
        }
    }
    uraid_job_status(a, &st);
    if (st.running) /* one the open or a recovery started on its own (a replace taken up again) */
        uraid_job_wait(a, &st);
    uraid_get_info(a, &info);
    if (rc == 0 && k->end_level == 0 && info.level == 4) /* md's end of a RAID-0 chunk change: --level 0 takes it back */
        rc = uraid_grow_online_level(a, 0, 0, 0, NULL, NULL, 0, why, whylen);
    uraid_get_info(a, &info);
    if (rc == 0 && !info.clean && info.level >= 4) { /* a kill with writes out: the resync serve starts (policy resync) */
        rc = uraid_job_start(a, URAID_JOB_RESYNC, NULL, why, whylen);
        if (rc == -EBUSY)
            rc = 0;
        if (rc == 0 && (uraid_job_wait(a, &st), st.result)) {
            snprintf(why, whylen, "resync: %s", st.why);
            rc = st.result;
        }
    }
    *out = a;
    return rc;
}

/* The geometry the kind asked for, reached and no reshape left. */
static void check_geometry(struct uraid_array *a, const struct kind *k)
{
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.level == k->end_level && info.raid_devices == k->end_members &&
              info.chunk_bytes == k->end_chunk_sectors * 512u && !info.reshape_total_sectors,
          "RAID-%d of %d, chunk %u, reshape %llu (want RAID-%d of %d, chunk %u)", info.level, info.raid_devices,
          info.chunk_bytes, (unsigned long long)info.reshape_total_sectors, k->end_level, k->end_members,
          k->end_chunk_sectors * 512u);
}

/* A check where there is parity: 1 when it found mismatches. */
static int check_parity(struct uraid_array *a, const struct kind *k)
{
    if (k->end_level < 4)
        return 0;
    char why[300] = "";
    struct uraid_job_status st = {0};
    int crc = uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why);
    if (crc == 0)
        uraid_job_wait(a, &st);
    CHECK(crc == 0 && st.result == 0 && st.mismatch_sectors == 0, "check: %d %s, %llu mismatched", crc, why,
          (unsigned long long)st.mismatch_sectors);
    return crc == 0 && st.mismatch_sectors != 0;
}

static void one_trial(const struct kind *k, struct rng *r, struct tally *ty)
{
    struct trial t = {.k = k};
    int pct = rng_below(r, 5) == 0 ? 0 : 1 + (int)rng_below(r, 95);
    uint64_t seed = rng_next(r);
    harness_beginf("%s: kill -9 at %d%% of the reshape", k->name, pct);
    ty->trials++;
    if (set_up(&t, r)) {
        ty->failed++;
        CHECK(0, "%s: the set-up failed", k->name);
        tear_down(&t);
        harness_end();
        return;
    }
    pid_t pid = fork();
    if (pid == 0)
        child(&t, pct, seed);
    int wst = 0;
    waitpid(pid, &wst, 0);
    CHECK(WIFSIGNALED(wst), "the child was not killed (exit %d)", WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
    char why[400] = "";
    struct uraid_array *a = NULL;
    int inside = 0, rc = carry_on(&t, &a, &inside, why, sizeof why);
    CHECK(rc == 0, "carried on after the kill: %d %s", rc, why);
    ty->failed += rc != 0;
    ty->inside += inside;
    ty->offline += t.offline;
    if (a) {
        check_geometry(a, k);
        int before = harness_check_failures();
        fx_check_model(a, t.model, t.keep, t.pend, "after the kill");
        ty->lost += harness_check_failures() != before;
        ty->mismatch += check_parity(a, k);
        uraid_close(a);
    }
    tear_down(&t);
    harness_end();
}

/* ---- power cuts ------------------------------------------------------------------------ */

/* The same array as set_up, its bytes the crash workload's base values. */
static int set_up_base(struct trial *t, struct rng *r, uint64_t seed)
{
    int rc = set_up(t, r);
    char why[300];
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(t->paths, t->k->nold, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        rc = cw_fill_base(a, seed, t->keep,
                          (uint64_t)info.chunk_bytes * (uint64_t)(info.raid_devices - (info.level == 6 ? 2 : info.level ? 1 : 0)));
        CHECK(rc == 0 && uraid_close(a) == 0, "the base values: %d", rc);
    }
    return rc;
}

/* In this process: the members behind one power domain (members added by the grow join it), the
 * grow started, the crash workload's writers and flushes on, the power cut at a random member
 * write (or, when the writers end first, once the job has moved pct%); then opened afresh and
 * judged as test_crash judges. */
static void power_trial(const struct kind *k, struct rng *r, struct tally *ty)
{
    struct trial t = {.k = k};
    uint64_t seed = rng_next(r), at = 1 + rng_below(r, 600);
    int pct = (int)rng_below(r, 90);
    harness_beginf("%s: power cut at member write %llu (else at %d%%)", k->name, (unsigned long long)at, pct);
    ty->trials++;
    if (set_up_base(&t, r, seed)) {
        ty->failed++;
        CHECK(0, "%s: the set-up failed", k->name);
        tear_down(&t);
        harness_end();
        return;
    }
    char dom[64], spec[128], why[400] = "";
    snprintf(dom, sizeof dom, "rsonline-%llx", (unsigned long long)seed);
    snprintf(spec, sizeof spec, "powercut=%s,seed=%llu", dom, (unsigned long long)seed);
    const char *sim[MAXM];
    for (int i = 0; i < MAXM; i++)
        sim[i] = spec;
    struct uraid_open_params op = {.member_sim = sim, .sync_speed_max_kib = SPEED_KIB,
                                   .sync_speed_min_kib = SPEED_KIB};
    struct uraid_array *a = NULL;
    int rc = uraid_open(t.paths, k->nold, &op, &a, why, sizeof why);
    CHECK(rc == 0, "open over the power-cut layer: %s", why);
    struct powercut_domain *d = rc == 0 ? powercut_domain_find(dom) : NULL;
    struct cw_journal j;
    cw_journal_init(&j, -1);
    if (d) {
        struct cw_cut_mark mark = {.j = &j, .at = (size_t)-1};
        powercut_on_cut(d, cw_mark_cut, &mark);
        powercut_arm(d, at);
        start_grow(a, &t, why, sizeof why); /* (a cut inside it fails it: what a dead process leaves) */
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        struct cw_params p = {.a = a, .seed = seed, .size = t.keep, .chunk = info.chunk_bytes,
                              .stripe = (uint64_t)info.chunk_bytes * 2, .threads = 2, .writes_per_thread = 30,
                              .flush_one_in = 5};
        cw_run(&p, &j);
        for (int i = 0; !powercut_is_cut(d) && i < 20000; i++) {
            struct uraid_job_status st;
            uraid_job_status(a, &st);
            if (!st.running || (st.total_sectors && st.done_sectors * 100 >= st.total_sectors * (uint64_t)pct))
                break;
            usleep(500);
        }
        if (!powercut_is_cut(d))
            powercut_cut(d);
        cw_journal_cut(&j, mark.at);
        uraid_close(a); /* fails: the members are dead; it only frees memory */
        a = NULL;
        powercut_domain_forget(dom);
    }
    int inside = 0;
    rc = d ? carry_on(&t, &a, &inside, why, sizeof why) : -EIO;
    CHECK(rc == 0, "carried on after the cut: %d %s", rc, why);
    ty->failed += rc != 0;
    ty->inside += inside;
    ty->offline += t.offline;
    if (a) {
        check_geometry(a, k);
        struct cw_verdict v;
        int jrc = cw_judge(a, seed, t.keep, &j, &v);
        CHECK(jrc == 0 && !v.lost_sectors && !v.damaged_sectors && !v.bad_sectors,
              "after the cut (reshape recorded at the open %d, carried on offline %d): %llu sectors lost, %llu damaged, %llu bad (first at %llu: %s)", inside, t.offline,
              (unsigned long long)v.lost_sectors, (unsigned long long)v.damaged_sectors,
              (unsigned long long)v.bad_sectors, (unsigned long long)v.first_bad_sector, v.first_bad);
        ty->lost += jrc || v.lost_sectors || v.damaged_sectors || v.bad_sectors;
        ty->mismatch += check_parity(a, k);
        uraid_close(a);
    }
    cw_journal_free(&j);
    tear_down(&t);
    harness_end();
}

static void print_table(const char *what, const struct tally *ty, int trials, uint64_t seed)
{
    printf("served reshape %s trials: seed %llu, %d per kind (URAID_RESHAPE_TRIALS; 50 with URAID_TEST_LONG=1)\n",
           what, (unsigned long long)seed, trials);
    printf("%-44s %6s %7s %5s %9s %6s %8s\n", "kind", "trials", "inside", "lost", "mismatch", "failed", "again");
    for (int k = 0; k < NKINDS; k++)
        printf("%-44s %6d %7d %5d %9d %6d %8d\n", kinds[k].name, ty[k].trials, ty[k].inside, ty[k].lost,
               ty[k].mismatch, ty[k].failed, ty[k].offline);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "reshape_online_kill");
    fx_log_from_env();
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    int trials = getenv("URAID_TEST_LONG") ? 50 : getenv("URAID_TEST_QUICK") ? 1 : 2;
    if (getenv("URAID_RESHAPE_TRIALS"))
        trials = atoi(getenv("URAID_RESHAPE_TRIALS"));
    struct tally ty[NKINDS] = {{0}}, pw[NKINDS] = {{0}};
    /* URAID_RESHAPE_ONLY=TEXT: only the kinds whose name holds it ("kill" or "power" picks the crash);
     * every trial's random draws are made anyway, so a seed replays the same trials */
    const char *only = getenv("URAID_RESHAPE_ONLY");
    for (int k = 0; k < NKINDS; k++)
        for (int i = 0; i < trials; i++) {
            struct rng r2 = r;
            rng_next(&r);
            if (!only || strstr(kinds[k].name, only) || !strcmp(only, "kill"))
                one_trial(&kinds[k], &r2, &ty[k]);
        }
    for (int k = 0; k < NKINDS; k++)
        for (int i = 0; i < trials; i++) {
            struct rng r2 = r;
            rng_next(&r);
            if (!only || strstr(kinds[k].name, only) || !strcmp(only, "power"))
                power_trial(&kinds[k], &r2, &pw[k]);
        }
    print_table("kill -9", ty, trials, seed);
    print_table("power-cut", pw, trials, seed);
    printf("inside: the crash fell while the reshape was recorded; lost: an acknowledged byte read back wrong (a "
           "power cut: a write acknowledged before a completed flush, or a sector never written not its old "
           "value); mismatch: the check found parity mismatches; failed: the open or the job after the crash "
           "failed; again: the open refused (a superblock batch cut off) and the grow given again carried it "
           "on (offline as the refusal says, or served when the cut left the array as it was)\n\n");
    return harness_finish();
}
