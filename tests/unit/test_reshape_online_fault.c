/* A member failing under an online reshape (lib/array/reshape_job.c with
 * reshape_fail.c): a served RAID-5/6 grows with uraid_grow_online while
 * writer threads write and read back their own regions; partway an old
 * member vanishes (uraid_inject, the fault layer), RAID-6 loses a second
 * one later. The reshape goes on degraded, as md's does, and ends in the
 * new geometry: every byte matches the model, the array is degraded, a
 * spare recovers it and a check is clean.
 * Then the same with a kill -9: a child process grows, loses a member, its
 * writers stop, and it is killed in mid-reshape; the parent opens the
 * members (the reshape in progress, degraded), carries the reshape on and
 * finds every acknowledged write, recovers and checks.
 * And a RAID-5 -> 6 restripe stopped partway, carried on by a served array
 * (the new Q member still recovering) that loses an old member. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "uraid.h"
#include "uraid_grow.h"

#define MAXM 8
#define BLK 4096
#define MEMBER_BYTES (16u << 20)

struct setup {
    int level, nold, nnew;
    char dir[128], path[MAXM + 2][160]; /* members, then two spares */
    const char *paths[MAXM + 2];
    uint8_t *model;       /* the array's bytes (old size), shared with a child */
    uint64_t old_bytes;
};

static const char *sim[MAXM] = {"latency=0us", "latency=0us", "latency=0us", "latency=0us", "latency=0us",
                                "latency=0us", "latency=0us", "latency=0us"};

static int make_setup(struct setup *s, struct rng *r)
{
    char why[300];
    snprintf(s->dir, sizeof s->dir, "%s/uraid-test-rsof.XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
    if (!mkdtemp(s->dir))
        return -errno;
    int n = s->nold + s->nnew;
    for (int i = 0; i < n + 2; i++) {
        snprintf(s->path[i], sizeof s->path[i], "%s/m%d.img", s->dir, i);
        s->paths[i] = s->path[i];
        int fd = open(s->path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)MEMBER_BYTES))
            return -errno;
        close(fd);
    }
    struct uraid_create_params cp = {.level = s->level, .raid_devices = s->nold, .chunk_bytes = 64 << 10,
                                     .layout = -1, .assume_clean = 1, .consistency_policy = URAID_POLICY_RESYNC};
    int rc = uraid_create(s->paths, s->nold, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s->paths, s->nold, NULL, &a, why, sizeof why)) == 0) {
        s->old_bytes = uraid_size(a);
        s->model = mmap(NULL, s->old_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        rng_fill(r, s->model, s->old_bytes);
        rc = uraid_write(a, s->model, s->old_bytes, 0);
        CHECK(rc == 0, "write");
        CHECK(uraid_close(a) == 0);
    }
    return rc;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i < s->nold + s->nnew + 2; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    if (s->model)
        munmap(s->model, s->old_bytes);
}

static void compare(struct uraid_array *a, const struct setup *s, const char *what)
{
    uint64_t size = uraid_size(a);
    uint8_t *buf = malloc(size);
    int rc = uraid_read(a, buf, size, 0);
    CHECK(rc == 0, "%s: read: %s", what, uraid_strerror(rc));
    uint64_t bad = UINT64_MAX;
    for (uint64_t i = 0; i < s->old_bytes && bad == UINT64_MAX; i += BLK)
        if (memcmp(buf + i, s->model + i, BLK))
            bad = i;
    CHECK(bad == UINT64_MAX, "%s: the bytes at %llu differ from what was written", what, (unsigned long long)bad);
    int zeros = 1;
    for (uint64_t i = s->old_bytes; i < size && zeros; i++)
        zeros = buf[i] == 0;
    CHECK(zeros, "%s: the new space is not zeros", what);
    free(buf);
}

/* Degraded as expected; spares recover it; every byte; a clean check. */
static void recover_and_check(struct uraid_array *a, struct setup *s, int nfailed, const char *what)
{
    char why[300];
    struct uraid_array_info info;
    struct uraid_job_status st;
    uraid_get_info(a, &info);
    CHECK(info.raid_devices == s->nold + s->nnew, "%s: %d raid devices", what, info.raid_devices);
    CHECK(info.degraded, "%s: not degraded after losing %d", what, nfailed);
    for (int f = 0; f < nfailed && (uraid_get_info(a, &info), info.degraded); f++) {
        CHECK(uraid_add_spare(a, s->paths[s->nold + s->nnew + f], why, sizeof why) == 0, "%s: add: %s", what, why);
        struct uraid_job_params jp = {.slot = -1};
        CHECK(uraid_job_start(a, URAID_JOB_RECOVER, &jp, why, sizeof why) == 0, "%s: recover: %s", what, why);
        uraid_job_wait(a, &st);
        CHECK(st.result == 0, "%s: recovery: %d %s", what, st.result, st.why);
    }
    uraid_get_info(a, &info);
    CHECK(!info.degraded, "%s: still degraded after the recovery", what);
    compare(a, s, what);
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "%s: check: %s", what, why);
    uraid_job_wait(a, &st);
    CHECK(st.result == 0 && st.mismatch_sectors == 0, "%s: check: result %d, mismatch %llu", what, st.result,
          (unsigned long long)st.mismatch_sectors);
}

struct writer {
    struct uraid_array *a;
    struct setup *s;
    uint64_t lo, hi, seed;
    int *stop;
    int failures, rounds;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct rng r;
    rng_seed(&r, w->seed);
    uint8_t *buf = malloc(128 << 10), *back = malloc(128 << 10);
    while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE)) {
        uint64_t len = (1 + rng_below(&r, 32)) * BLK;
        uint64_t off = w->lo + rng_below(&r, (w->hi - w->lo - len) / BLK + 1) * BLK;
        rng_fill(&r, buf, len);
        if (uraid_write(w->a, buf, len, off) != 0) {
            w->failures++;
            continue;
        }
        memcpy(w->s->model + off, buf, len);
        if (uraid_read(w->a, back, len, off) != 0 || memcmp(back, buf, len))
            w->failures++;
        __atomic_add_fetch(&w->rounds, 1, __ATOMIC_RELAXED);
    }
    free(buf);
    free(back);
    return NULL;
}

/* Waits until the reshape job has done permille/1000 (or ended): 1 while it runs. */
static int reach(struct uraid_array *a, int permille)
{
    struct uraid_job_status st;
    for (int i = 0; i < 60000; i++) {
        uraid_job_status(a, &st);
        if (!st.running)
            return 0;
        if (st.done_sectors * 1000 >= st.total_sectors * (uint64_t)permille)
            return 1;
        usleep(1000);
    }
    return 0;
}

struct plan {
    int slot[2], permille[2], n; /* slots that vanish, and when */
    int kill_at;                 /* 0, or kill -9 at this permille (in a child) */
};

/* Writers on, the losses of p, writers off; then until the end (or the kill). */
static int serve(struct uraid_array *a, struct setup *s, const struct plan *p, uint64_t seed, const char *what)
{
    enum { NW = 3 };
    struct writer w[NW];
    pthread_t t[NW];
    int stop = 0;
    uint64_t part = s->old_bytes / NW / BLK * BLK;
    for (int i = 0; i < NW; i++) {
        w[i] = (struct writer){.a = a, .s = s, .lo = part * (uint64_t)i, .hi = part * (uint64_t)(i + 1),
                               .seed = seed + (uint64_t)i, .stop = &stop};
        pthread_create(&t[i], NULL, writer_main, &w[i]);
    }
    int lost = 0;
    for (int f = 0; f < p->n; f++)
        if (reach(a, p->permille[f]))
            lost += uraid_inject(a, p->slot[f], "vanish") == 0;
    /* the writers meet the degraded array too: a few rounds more (bounded: 5 s) */
    int seen = 0;
    for (int i = 0; i < NW; i++)
        seen += __atomic_load_n(&w[i].rounds, __ATOMIC_RELAXED);
    for (int k = 0, now = seen; k < 500 && now < seen + 3; k++) {
        usleep(10000);
        now = 0;
        for (int i = 0; i < NW; i++)
            now += __atomic_load_n(&w[i].rounds, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    int rounds = 0, failures = 0;
    for (int i = 0; i < NW; i++) {
        pthread_join(t[i], NULL);
        failures += w[i].failures;
        rounds += w[i].rounds;
    }
    CHECK(failures == 0, "%s: %d writes or read-backs failed", what, failures);
    CHECK(rounds > 0, "%s: no write went through during the reshape", what);
    CHECK(lost == p->n, "%s: the reshape ended before %d losses (%d)", what, p->n, lost);
    if (p->kill_at) {
        reach(a, p->kill_at);
        raise(SIGKILL);
    }
    struct uraid_job_status st;
    return uraid_job_wait(a, &st) ? -EIO : st.result;
}

static void online_fail(int level, int nold, int nnew, struct plan p, const char *what, struct rng *r, uint64_t seed)
{
    struct setup s = {.level = level, .nold = nold, .nnew = nnew};
    int n = nold + nnew;
    harness_beginf("RAID-%d %d -> %d online with writers, %s", level, nold, n, what);
    int rc = make_setup(&s, r);
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 20000, .sync_speed_min_kib = 20000, .member_sim = sim};
    struct uraid_array *a = NULL;
    pid_t child = -1;
    if (rc == 0 && p.kill_at)
        child = fork();
    if (rc == 0 && child <= 0) { /* the serving process: this one, or the child to be killed */
        rc = uraid_open(s.paths, nold, &op, &a, why, sizeof why);
        CHECK(rc == 0, "open: %s", why);
        if (rc == 0 && (rc = uraid_grow_online(a, n, s.paths + nold, nnew, why, sizeof why)) != 0)
            CHECK(rc == 0, "grow online: %s", why);
        if (rc == 0) {
            int jr = serve(a, &s, &p, seed, what);
            CHECK(jr == 0, "the reshape went on degraded to its end: %s", uraid_strerror(jr));
            compare(a, &s, "after the degraded reshape");
            recover_and_check(a, &s, p.n, "after the degraded reshape");
            CHECK(uraid_close(a) == 0);
        }
        if (child == 0)
            _exit(harness_finish() ? 1 : 0); /* not reached: killed in serve */
    }
    if (child > 0) {
        int wst = 0;
        waitpid(child, &wst, 0);
        CHECK(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL, "the child was not killed in mid-reshape (status %d)", wst);
        /* every member, the failed ones too: their superblocks are stale and faulty. Killed while dirty
         * and degraded: refused as md refuses it, then --force (the writers had ended: parity agrees) */
        rc = uraid_open(s.paths, n, NULL, &a, why, sizeof why);
        CHECK(rc == -EUCLEAN || rc == 0, "open after the kill: %d %s", rc, why);
        if (rc == -EUCLEAN) {
            CHECK(strstr(why, "--force") != NULL, "the refusal names --force: %s", why);
            rc = uraid_open(s.paths, n, &(struct uraid_open_params){.force = 1}, &a, why, sizeof why);
        }
        CHECK(rc == 0, "open after the kill: %s", why);
        if (rc == 0) {
            struct uraid_array_info info;
            uraid_get_info(a, &info);
            CHECK(info.reshape_total_sectors > 0, "the reshape is not in progress after the kill");
            compare(a, &s, "after the kill, mid-reshape");
            int jrc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why);
            CHECK(jrc == 0 || jrc == -EBUSY, "carry the reshape on: %s", why);
            struct uraid_job_status st;
            uraid_job_wait(a, &st);
            CHECK(st.result == 0, "the reshape carried on after the kill: %d %s", st.result, st.why);
            compare(a, &s, "after the reshape carried on");
            recover_and_check(a, &s, p.n, "after the kill");
            CHECK(uraid_close(a) == 0);
        }
    }
    drop_setup(&s);
    harness_end();
}

/* md's 25raid456-reshape-while-recovery: a grow asked while a recovery
 * runs is refused with one line (mdadm: "is performing resync/recovery
 * and cannot be reshaped") and writes nothing: the new member stays
 * zeros, no reshape is recorded. After the recovery the same grow goes
 * through. */
static void while_recovery(int level, struct rng *r)
{
    struct setup s = {.level = level, .nold = 4, .nnew = 1};
    harness_beginf("RAID-%d: a grow asked while a recovery runs is refused, nothing written", level);
    int rc = make_setup(&s, r);
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 2000, .sync_speed_min_kib = 2000, .member_sim = sim};
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 4, &op, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        CHECK(uraid_inject(a, 1, "vanish") == 0);
        uint8_t blk[BLK] = {1};
        CHECK(uraid_write(a, blk, BLK, 0) == 0, "the write that finds member 1 gone");
        memcpy(s.model, blk, BLK);
        CHECK(uraid_add_spare(a, s.paths[6], why, sizeof why) == 0, "add: %s", why);
        struct uraid_job_params jp = {.slot = -1};
        CHECK(uraid_job_start(a, URAID_JOB_RECOVER, &jp, why, sizeof why) == 0, "recover: %s", why);
        rc = uraid_grow_online(a, 5, s.paths + 4, 1, why, sizeof why);
        CHECK(rc == -EBUSY && strstr(why, "performing a recover") && strstr(why, "cannot be reshaped"),
              "a grow during the recovery: %d %s", rc, why);
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.reshape_total_sectors == 0 && info.raid_devices == 4, "a reshape was recorded");
        uint8_t *img = malloc(MEMBER_BYTES);
        int fd = open(s.paths[4], O_RDONLY), zeros = fd >= 0 && read(fd, img, MEMBER_BYTES) == MEMBER_BYTES;
        for (uint64_t i = 0; zeros && i < MEMBER_BYTES; i++)
            zeros = img[i] == 0;
        if (fd >= 0)
            close(fd);
        free(img);
        CHECK(zeros, "the refused grow wrote to the new member");
        struct uraid_job_status st;
        uraid_job_wait(a, &st);
        CHECK(st.result == 0, "recovery: %s", st.why);
        rc = uraid_grow_online(a, 5, s.paths + 4, 1, why, sizeof why);
        CHECK(rc == 0, "the grow after the recovery: %s", why);
        if (rc == 0) {
            uraid_job_wait(a, &st);
            CHECK(st.result == 0, "reshape: %s", st.why);
            compare(a, &s, "grown after the recovery");
            CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "check: %s", why);
            uraid_job_wait(a, &st);
            CHECK(st.result == 0 && st.mismatch_sectors == 0, "check: mismatch %llu",
                  (unsigned long long)st.mismatch_sectors);
        }
        CHECK(uraid_close(a) == 0);
    }
    drop_setup(&s);
    harness_end();
}

/* A served array already degraded grows (md takes it): the slots lost
 * before stay out of the reshape, the writers go on, the result is the
 * new geometry degraded, which spares recover. */
static void degraded_online(int level, int nold, const int *lose, int nlose, struct rng *r, uint64_t seed)
{
    struct setup s = {.level = level, .nold = nold, .nnew = 1};
    int n = nold + 1;
    harness_beginf("RAID-%d %d -> %d online, degraded by %d before the grow", level, nold, n, nlose);
    int rc = make_setup(&s, r);
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 20000, .sync_speed_min_kib = 20000, .member_sim = sim};
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, nold, &op, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        for (int f = 0; f < nlose; f++) {
            CHECK(uraid_inject(a, lose[f], "vanish") == 0);
            memset(s.model + BLK * f, 0x44 + f, BLK);
            CHECK(uraid_write(a, s.model + BLK * f, BLK, BLK * (uint64_t)f) == 0, "the write finding %d gone", lose[f]);
        }
        rc = uraid_grow_online(a, n, s.paths + nold, 1, why, sizeof why);
        CHECK(rc == 0, "grow online degraded: %s", why);
        if (rc == 0) {
            struct plan p = {.n = 0};
            int jr = serve(a, &s, &p, seed, "degraded grow");
            CHECK(jr == 0, "the degraded reshape: %s", uraid_strerror(jr));
            compare(a, &s, "after the degraded grow");
            recover_and_check(a, &s, nlose, "after the degraded grow");
        }
        CHECK(uraid_close(a) == 0);
    }
    drop_setup(&s);
    harness_end();
}

static void stop_at(void *ctx, uint64_t done, uint64_t total)
{
    (void)total;
    int *stop = ctx;
    if (done >= (uint64_t)stop[1])
        stop[0] = 1;
}

/* An offline RAID-5 4 -> RAID-6 5 stopped at a quarter, opened (level 6,
 * the new Q member rebuilding with the position), its reshape job
 * carried on with writers while old member `lose` vanishes: the job goes
 * on degraded (past the position the array is a RAID-5: the lost
 * member's old rows come from P) and ends a RAID-6 missing it. */
static void level_online_fail(int lose, int writers, struct rng *r, uint64_t seed)
{
    struct setup s = {.level = 5, .nold = 4, .nnew = 1};
    harness_beginf("RAID-5 4 -> RAID-6 5 carried on served, member %d vanishes while Q recovers, %s", lose,
                   writers ? "writers on" : "the job meets it");
    int rc = make_setup(&s, r);
    char why[400];
    int stop[2] = {0, (int)(s.old_bytes / 512 / 4)};
    struct uraid_grow_params gp = {.raid_devices = 5, .level_set = 1, .level = 6, .progress = stop_at, .ctx = stop,
                                   .stop = &stop[0], .checkpoint_ms = 1u << 30};
    if (rc == 0)
        rc = uraid_grow_members(s.paths, 4, s.paths + 4, 1, &gp, NULL, why, sizeof why) == -EINTR ? 0 : -1;
    CHECK(rc == 0, "the offline restripe stopped at a quarter: %s", why);
    struct uraid_open_params op = {.sync_speed_max_kib = 20000, .sync_speed_min_kib = 20000, .member_sim = sim};
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 5, &op, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.level == 6 && info.member[4].state == URAID_MEMBER_REBUILDING, "level %d, the Q member's state %d",
              info.level, info.member[4].state);
        int jrc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why);
        CHECK(jrc == 0 || jrc == -EBUSY, "carry the reshape on: %s", why);
        /* without writers the job's own reads meet the loss first (reshape_fail.c's grow_lose) */
        struct uraid_job_status st;
        int jr = writers ? serve(a, &s, &(struct plan){{lose}, {450}, 1, 0}, seed, "level change")
                 : !reach(a, 450) || uraid_inject(a, lose, "vanish") ? -ESRCH
                 : uraid_job_wait(a, &st) ? -EIO : st.result;
        CHECK(jr == 0, "the restripe went on degraded to its end: %s", uraid_strerror(jr));
        uraid_get_info(a, &info);
        CHECK(info.level == 6 && info.member[4].state == URAID_MEMBER_IN_SYNC && info.degraded == 1,
              "after the end: level %d, the Q member's state %d, degraded %d", info.level, info.member[4].state,
              info.degraded);
        compare(a, &s, "after the degraded restripe");
        recover_and_check(a, &s, 1, "after the degraded restripe");
        CHECK(uraid_close(a) == 0);
    }
    drop_setup(&s);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "reshape_online_fault");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    degraded_online(5, 4, (int[]){1}, 1, &r, seed);
    degraded_online(6, 5, (int[]){0, 2}, 2, &r, seed);
    while_recovery(5, &r);
    while_recovery(6, &r);
    online_fail(5, 4, 1, (struct plan){{1}, {250}, 1, 0}, "member 1 vanishes at a quarter", &r, seed);
    online_fail(6, 4, 1, (struct plan){{0}, {300}, 1, 0}, "member 0 vanishes", &r, seed);
    online_fail(6, 5, 1, (struct plan){{1, 3}, {200, 500}, 2, 0}, "members 1 and 3 vanish", &r, seed);
    online_fail(5, 4, 1, (struct plan){{2}, {250}, 1, 600}, "member 2 vanishes, kill -9 later", &r, seed);
    online_fail(6, 5, 1, (struct plan){{0, 4}, {200, 400}, 2, 650}, "members 0 and 4 vanish, kill -9 later", &r, seed);
    level_online_fail(1, 1, &r, seed);
    level_online_fail(3, 0, &r, seed);
    return harness_finish();
}
