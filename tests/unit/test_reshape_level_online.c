/* --level on an open (served) array (lib/array/reshape_level_online.c):
 * every change runs with writer threads writing and reading back their
 * own regions while it is made, so the switch meets requests in flight.
 *
 * 1. RAID-5 4 -> RAID-6 5, layout preserve: the takeover, Q recovered by
 *    the recovery job; then RAID-6 (-6 layout) -> RAID-5 4: the takeover,
 *    the Q member a spare.
 * 2. RAID-5 4 -> RAID-6 5, the default layout: the takeover and the
 *    restripe as one reshape; stopped once (a close), opened again and
 *    carried on by the reshape job; then RAID-6 (left-symmetric) ->
 *    RAID-5: the restripe to the -6 layout, then the takeover.
 *    The same 6 -> 5 stopped in its restripe and reopened: carried on, it
 *    ends at RAID-6 in the -6 layout; the same --level then takes it over.
 * 3. RAID-4 -> RAID-5 parity-last (takeover) -> RAID-4 (takeover);
 *    RAID-4 -> RAID-5 left-symmetric (restripe); RAID-5 left-symmetric ->
 *    RAID-4 (restripe, then the takeover).
 * 4. A kill -9 (a child process) in the middle of an online RAID-5 -> 6
 *    restripe with writers in flight: the array, dirty with its Q member
 *    recovering (md's raid5_run starts that: the member holds Q alone),
 *    opens; every acknowledged byte reads back (of a write in flight,
 *    whatever landed is taken as the model), the reshape job finishes it,
 *    a resync, a clean check.
 * 5. A takeover's one superblock write cut off (a kill of a child right
 *    after it, then one member's superblock put back as it was before):
 *    the members are one event apart with two levels, and the array opens
 *    as the newest say (md's event margin), RAID-6 -> 5 with an old data
 *    member or an old Q member, RAID-5 -> 6 with an old data member: every
 *    byte, the geometry, a clean check after the recovery.
 * 6. Refusals: the wrong number of new members, a level md changes only
 *    on a stopped array, a reshape asked twice, a level change while a
 *    check runs: each an error, every member file byte for byte as before.
 * After each change: every byte as the model says, the level, layout and
 * member count as expected (reopened too), a check with mismatch_cnt 0. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "layout.h"
#include "uraid.h"
#include "uraid_grow.h"

#define MAXM 8
#define BLK 4096

struct setup {
    int level, n, nall;
    char dir[128], path[MAXM][160];
    const char *paths[MAXM];
    uint8_t *model;
    uint64_t bytes;
};

static int make_setup(struct setup *s, struct rng *r, int layout)
{
    char why[300];
    snprintf(s->dir, sizeof s->dir, "%s/uraid-test-lvl.XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
    if (!mkdtemp(s->dir))
        return -errno;
    for (int i = 0; i < s->nall; i++) {
        snprintf(s->path[i], sizeof s->path[i], "%s/m%d.img", s->dir, i);
        s->paths[i] = s->path[i];
        int fd = open(s->path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, 16 << 20))
            return -errno;
        close(fd);
    }
    struct uraid_create_params cp = {.level = s->level, .raid_devices = s->n, .chunk_bytes = 64 << 10,
                                     .layout = layout, .assume_clean = 1, .consistency_policy = URAID_POLICY_RESYNC};
    int rc = uraid_create(s->paths, s->n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s->paths, s->n, NULL, &a, why, sizeof why)) == 0) {
        s->bytes = uraid_size(a);
        s->model = malloc(s->bytes);
        rng_fill(r, s->model, s->bytes);
        rc = uraid_write(a, s->model, s->bytes, 0);
        CHECK(rc == 0, "write");
        CHECK(uraid_close(a) == 0);
    }
    return rc;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i < s->nall; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    free(s->model);
}

static void compare(struct uraid_array *a, const struct setup *s, const char *what)
{
    CHECK(uraid_size(a) == s->bytes, "%s: size %llu, expected %llu", what, (unsigned long long)uraid_size(a),
          (unsigned long long)s->bytes);
    uint8_t *buf = malloc(s->bytes);
    int rc = uraid_read(a, buf, s->bytes, 0);
    CHECK(rc == 0, "%s: read: %s", what, uraid_strerror(rc));
    uint64_t bad = UINT64_MAX;
    for (uint64_t i = 0; i < s->bytes && bad == UINT64_MAX; i += BLK)
        if (memcmp(buf + i, s->model + i, BLK))
            bad = i;
    CHECK(bad == UINT64_MAX, "%s: the bytes at %llu differ from what was written", what, (unsigned long long)bad);
    free(buf);
}

static void clean_check(struct uraid_array *a, const char *what)
{
    char why[300];
    struct uraid_job_status st;
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "%s: check: %s", what, why);
    uraid_job_wait(a, &st);
    CHECK(st.result == 0 && st.mismatch_sectors == 0, "%s: check: result %d, mismatch %llu", what, st.result,
          (unsigned long long)st.mismatch_sectors);
}

static void expect_geom(struct uraid_array *a, int level, int layout, int n, const char *what)
{
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.level == level && (level == 4 || info.layout == layout) && info.raid_devices == n &&
              info.degraded == 0 && info.reshape_delta == 0 && info.reshape_position_sectors == 0,
          "%s: RAID-%d layout %d, %d members, %d degraded (expected RAID-%d layout %d, %d members, whole)", what,
          info.level, info.layout, info.raid_devices, info.degraded, level, layout, n);
}

/* ---- writers while the level changes ------------------------------------------- */

struct writer {
    struct uraid_array *a;
    struct setup *s;
    uint64_t lo, hi, seed;
    int *stop;
    int failures, rounds;
    uint64_t *inflight; /* [2]: the byte range being written and put in the model (shared with a parent) */
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
        if (w->inflight) {
            __atomic_store_n(&w->inflight[1], 0, __ATOMIC_SEQ_CST);
            __atomic_store_n(&w->inflight[0], off, __ATOMIC_SEQ_CST);
            __atomic_store_n(&w->inflight[1], off + len, __ATOMIC_SEQ_CST);
        }
        if (uraid_write(w->a, buf, len, off) != 0) {
            w->failures++;
            continue;
        }
        memcpy(w->s->model + off, buf, len);
        if (w->inflight)
            __atomic_store_n(&w->inflight[1], 0, __ATOMIC_SEQ_CST);
        if (uraid_read(w->a, back, len, off) != 0 || memcmp(back, buf, len))
            w->failures++;
        w->rounds++;
    }
    free(buf);
    free(back);
    return NULL;
}

struct change {
    int level, N, nadd;
    const char *layout;
    const char *const *added;
    int stop_at_third; /* cancel the job a third in */
};

/* The level change made while NW writers go on, then the job (if any)
 * waited for, or cancelled a third in. 0 or the first error. */
static int change_with_writers(struct uraid_array *a, struct setup *s, uint64_t seed, const struct change *c,
                               const char *what)
{
    enum { NW = 3 };
    struct writer w[NW];
    pthread_t t[NW];
    int stop = 0;
    uint64_t part = s->bytes / NW / BLK * BLK;
    for (int i = 0; i < NW; i++) {
        w[i] = (struct writer){.a = a, .s = s, .lo = part * (uint64_t)i, .hi = part * (uint64_t)(i + 1),
                               .seed = seed + (uint64_t)i, .stop = &stop};
        pthread_create(&t[i], NULL, writer_main, &w[i]);
    }
    usleep(20000); /* the writers are in flight */
    char why[400];
    int rc = c ? uraid_grow_online_level(a, c->level, c->N, 0, c->layout, c->added, c->nadd, why, sizeof why) : 0;
    CHECK(rc == 0, "%s: %s", what, why);
    struct uraid_job_status st;
    for (int i = 0; rc == 0 && c && c->stop_at_third && i < 20000; i++) {
        uraid_job_status(a, &st);
        if (!st.running || st.done_sectors * 3 >= st.total_sectors)
            break;
        usleep(1000);
    }
    if (rc == 0 && c && c->stop_at_third)
        uraid_job_cancel(a);
    else if (rc == 0)
        uraid_job_wait(a, &st);
    uraid_job_status(a, &st);
    if (rc == 0 && st.result && st.result != -ECANCELED)
        rc = st.result;
    CHECK(rc == 0, "%s: the job: %s (%s)", what, uraid_strerror(rc), st.why);
    usleep(20000);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    int rounds = 0;
    for (int i = 0; i < NW; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].failures == 0, "%s: writer %d: %d writes or read-backs failed", what, i, w[i].failures);
        rounds += w[i].rounds;
    }
    CHECK(rounds > 0, "%s: no write went through", what);
    return rc;
}

static struct uraid_array *reopen(struct uraid_array *a, const struct setup *s, int n, const char *what)
{
    char why[300];
    struct uraid_open_params op = {.sync_speed_max_kib = 40000, .sync_speed_min_kib = 40000};
    if (a)
        CHECK(uraid_close(a) == 0, "%s: close", what);
    a = NULL;
    int rc = uraid_open(s->paths, n, &op, &a, why, sizeof why);
    CHECK(rc == 0, "%s: open: %s", what, why);
    if (rc == 0)
        compare(a, s, what);
    return rc ? NULL : a;
}

/* After a change: the bytes, the geometry, a clean check; reopened from
 * nopen members the same. */
static struct uraid_array *settled(struct uraid_array *a, struct setup *s, int level, int layout, int n, int nopen,
                                   const char *what)
{
    compare(a, s, what);
    expect_geom(a, level, layout, n, what);
    clean_check(a, what);
    a = reopen(a, s, nopen, what);
    if (a)
        expect_geom(a, level, layout, n, what);
    return a;
}

/* ---- the cases ------------------------------------------------------------------ */

static void five_six_takeover(struct rng *r, uint64_t seed)
{
    struct setup s = {.level = 5, .n = 4, .nall = 5};
    harness_begin("RAID-5 4 -> RAID-6 5 (preserve: takeover, Q recovered) -> RAID-5 4, writers going on");
    int rc = make_setup(&s, r, LAYOUT_LEFT_SYMMETRIC);
    struct uraid_array *a = rc ? NULL : reopen(NULL, &s, 4, "open");
    if (a) {
        struct change c = {.level = 6, .nadd = 1, .layout = "preserve", .added = s.paths + 4};
        change_with_writers(a, &s, seed, &c, "5 -> 6 takeover");
        a = settled(a, &s, 6, LAYOUT_LEFT_SYMMETRIC_6, 5, 5, "after 5 -> 6 takeover");
    }
    if (a) {
        struct change c = {.level = 5};
        change_with_writers(a, &s, seed + 10, &c, "6 -> 5 takeover");
        a = settled(a, &s, 5, LAYOUT_LEFT_SYMMETRIC, 4, 5, "after 6 -> 5 takeover");
    }
    if (a) {
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.nmembers == 5 && info.member[4].state == URAID_MEMBER_SPARE, "the Q member: state %d (%d members)",
              info.nmembers > 4 ? (int)info.member[4].state : -1, info.nmembers);
        uraid_close(a);
    }
    drop_setup(&s);
    harness_end();
}

static void five_six_restripe(struct rng *r, uint64_t seed)
{
    struct setup s = {.level = 5, .n = 4, .nall = 5};
    harness_begin("RAID-5 4 -> RAID-6 5 (default layout: restripe, stopped and carried on) -> RAID-5, writers going on");
    int rc = make_setup(&s, r, LAYOUT_LEFT_SYMMETRIC);
    struct uraid_array *a = rc ? NULL : reopen(NULL, &s, 4, "open");
    if (a) {
        struct change c = {.level = 6, .N = 5, .nadd = 1, .added = s.paths + 4, .stop_at_third = 1};
        change_with_writers(a, &s, seed + 20, &c, "5 -> 6 restripe, first part");
        a = reopen(a, &s, 5, "5 -> 6 restripe, reopened in the middle");
    }
    if (a) {
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.level == 6 && info.member[4].state == URAID_MEMBER_REBUILDING && info.reshape_position_sectors > 0,
              "reopened in the middle: RAID-%d, Q state %d, position %llu", info.level, info.member[4].state,
              (unsigned long long)info.reshape_position_sectors);
        char why[300];
        CHECK(uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why) == 0, "carry on: %s", why);
        change_with_writers(a, &s, seed + 30, NULL, "5 -> 6 restripe, the rest");
        a = settled(a, &s, 6, LAYOUT_LEFT_SYMMETRIC, 5, 5, "after 5 -> 6 restripe");
    }
    if (a) {
        struct change c = {.level = 5};
        change_with_writers(a, &s, seed + 40, &c, "6 -> 5 (restripe to -6, then takeover)");
        a = settled(a, &s, 5, LAYOUT_LEFT_SYMMETRIC, 4, 5, "after 6 -> 5");
    }
    if (a)
        uraid_close(a);
    drop_setup(&s);
    harness_end();
}

/* RAID-6 (left-symmetric) -> 5 stopped in its restripe: the takeover is
 * not recorded (as mdadm's), so the restripe carried on after the reopen
 * ends at RAID-6 in the -6 layout, and the same --level then takes it over. */
static void six_five_interrupted(struct rng *r, uint64_t seed)
{
    struct setup s = {.level = 6, .n = 4, .nall = 4};
    harness_begin("RAID-6 -> RAID-5 stopped in its restripe: carried on as RAID-6 -6, then the same --level takes "
                  "it over");
    int rc = make_setup(&s, r, LAYOUT_LEFT_SYMMETRIC);
    struct uraid_array *a = rc ? NULL : reopen(NULL, &s, 4, "open");
    if (a) {
        struct change c = {.level = 5, .stop_at_third = 1};
        change_with_writers(a, &s, seed + 80, &c, "6 -> 5, the restripe's first part");
        a = reopen(a, &s, 4, "6 -> 5, reopened in the middle");
    }
    if (a) {
        char why[300];
        CHECK(uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why) == 0, "carry on: %s", why);
        change_with_writers(a, &s, seed + 90, NULL, "6 -> 5, the restripe's rest");
        a = settled(a, &s, 6, LAYOUT_LEFT_SYMMETRIC_6, 4, 4, "the restripe carried on");
    }
    if (a) {
        struct change c = {.level = 5};
        change_with_writers(a, &s, seed + 100, &c, "6 -> 5 again: the takeover");
        a = settled(a, &s, 5, LAYOUT_LEFT_SYMMETRIC, 3, 4, "after the takeover");
    }
    if (a)
        uraid_close(a);
    drop_setup(&s);
    harness_end();
}

static void four_five(struct rng *r, uint64_t seed)
{
    struct setup s = {.level = 4, .n = 4, .nall = 4};
    harness_begin("RAID-4 <-> RAID-5 (takeovers, and restripes to and from left-symmetric), writers going on");
    int rc = make_setup(&s, r, -1);
    struct uraid_array *a = rc ? NULL : reopen(NULL, &s, 4, "open");
    static const struct {
        int level;
        const char *layout;
        int want_layout;
        const char *what;
    } step[] = {
        {5, NULL, LAYOUT_PARITY_LAST, "4 -> 5 parity-last (takeover)"},
        {4, NULL, 0, "5 parity-last -> 4 (takeover)"},
        {5, "left-symmetric", LAYOUT_LEFT_SYMMETRIC, "4 -> 5 left-symmetric (restripe)"},
        {4, NULL, 0, "5 left-symmetric -> 4 (restripe, then takeover)"},
    };
    for (size_t i = 0; a && i < sizeof step / sizeof step[0]; i++) {
        struct change c = {.level = step[i].level, .layout = step[i].layout};
        change_with_writers(a, &s, seed + 50 + i * 10, &c, step[i].what);
        a = settled(a, &s, step[i].level, step[i].want_layout, 4, 4, step[i].what);
    }
    if (a)
        uraid_close(a);
    drop_setup(&s);
    harness_end();
}

/* FNV-1a of every member file. */
static uint64_t members_hash(const struct setup *s, int n)
{
    uint64_t h = 1469598103934665603ull;
    uint8_t *buf = malloc(1 << 20);
    for (int i = 0; i < n; i++) {
        int fd = open(s->path[i], O_RDONLY);
        ssize_t got;
        while (fd >= 0 && (got = read(fd, buf, 1 << 20)) > 0)
            for (ssize_t j = 0; j < got; j++)
                h = (h ^ buf[j]) * 1099511628211ull;
        if (fd >= 0)
            close(fd);
    }
    free(buf);
    return h;
}

static void refused(struct uraid_array *a, const struct setup *s, int level, int N, const char *layout,
                    const char *const *added, int nadd, int want_rc, const char *what)
{
    char why[400];
    uraid_flush(a);
    uint64_t before = members_hash(s, s->nall);
    int rc = uraid_grow_online_level(a, level, N, 0, layout, added, nadd, why, sizeof why);
    CHECK(rc == want_rc, "%s: %d (%s), expected %d", what, rc, why, want_rc);
    CHECK(rc == 0 || (why[0] && !strchr(why, '\n')), "%s: the refusal is not one line: '%s'", what, why);
    uraid_flush(a);
    CHECK(members_hash(s, s->nall) == before, "%s: a member changed", what);
}

static void refusals(struct rng *r)
{
    struct setup s = {.level = 5, .n = 4, .nall = 6};
    harness_begin("refusals of --level on an open array write nothing");
    int rc = make_setup(&s, r, LAYOUT_LEFT_SYMMETRIC);
    struct uraid_array *a = rc ? NULL : reopen(NULL, &s, 4, "open");
    if (a) {
        refused(a, &s, 6, 0, NULL, NULL, 0, -EINVAL, "5 -> 6 without a new member");
        refused(a, &s, 6, 0, NULL, s.paths + 4, 2, -EINVAL, "5 -> 6 with two new members");
        refused(a, &s, 6, 6, NULL, s.paths + 4, 1, -EINVAL, "5 -> 6 to 6 members");
        refused(a, &s, 4, 0, NULL, s.paths + 4, 1, -EINVAL, "5 -> 4 with a new member");
        refused(a, &s, 1, 0, NULL, NULL, 0, -EOPNOTSUPP, "5 -> 1 (offline only, and 2 members)");
        refused(a, &s, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "5 -> 0 (offline only)");
        refused(a, &s, 10, 0, NULL, NULL, 0, -EOPNOTSUPP, "5 -> 10 (md has none)");
        refused(a, &s, 6, 0, "no-such-layout", s.paths + 4, 1, -EINVAL, "5 -> 6 with a bad layout");
        refused(a, &s, 6, 0, NULL, s.paths + 1, 1, -EEXIST, "5 -> 6 adding a member of the array");
        /* a reshape asked twice: the first starts and is stopped at once (its position recorded, the
         * reshape still in progress, as after 'uraid idle'), the second is refused */
        char why[400];
        rc = uraid_grow_online_level(a, 6, 5, 0, NULL, s.paths + 4, 1, why, sizeof why);
        CHECK(rc == 0, "5 -> 6: %s", why);
        uraid_job_cancel(a);
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.level == 6 && info.raid_devices == 5 && info.reshape_total_sectors > 0, "the first request: "
              "RAID-%d, %d members, reshape total %llu", info.level, info.raid_devices,
              (unsigned long long)info.reshape_total_sectors);
        refused(a, &s, 5, 0, NULL, NULL, 0, -EBUSY, "6 -> 5 while the 5 -> 6 restripe waits");
        refused(a, &s, 6, 6, NULL, s.paths + 5, 1, -EBUSY, "the reshape asked again");
        uraid_close(a);
    }
    drop_setup(&s);
    harness_end();
}

static void busy_job(struct rng *r)
{
    struct setup s = {.level = 5, .n = 4, .nall = 5};
    harness_begin("--level while a check runs: refused, the array unchanged");
    int rc = make_setup(&s, r, LAYOUT_LEFT_SYMMETRIC);
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 1000, .sync_speed_min_kib = 1000}; /* a minute's check */
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 4, &op, &a, why, sizeof why)) != 0)
        CHECK(0, "open: %s", why);
    if (a) {
        struct uraid_job_params p = {.slot = -1};
        CHECK(uraid_job_start(a, URAID_JOB_CHECK, &p, why, sizeof why) == 0, "check: %s", why);
        refused(a, &s, 6, 5, NULL, s.paths + 4, 1, -EBUSY, "5 -> 6 during a check");
        refused(a, &s, 4, 0, NULL, NULL, 0, -EBUSY, "5 -> 4 during a check");
        uraid_job_cancel(a);
        uraid_close(a);
    }
    drop_setup(&s);
    harness_end();
}

/* The child: writers on, the restripe started, killed a third in. */
static void killed_child(struct setup *s, uint64_t seed, uint64_t *inflight)
{
    enum { NW = 3 };
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 20000, .sync_speed_min_kib = 20000};
    struct uraid_array *a = NULL;
    if (uraid_open(s->paths, 4, &op, &a, why, sizeof why))
        _exit(2);
    struct writer w[NW];
    pthread_t t[NW];
    int stop = 0;
    uint64_t part = s->bytes / NW / BLK * BLK;
    for (int i = 0; i < NW; i++) {
        w[i] = (struct writer){.a = a, .s = s, .lo = part * (uint64_t)i, .hi = part * (uint64_t)(i + 1),
                               .seed = seed + 70 + (uint64_t)i, .stop = &stop, .inflight = inflight + 2 * i};
        pthread_create(&t[i], NULL, writer_main, &w[i]);
    }
    usleep(20000);
    if (uraid_grow_online_level(a, 6, 5, 0, NULL, s->paths + 4, 1, why, sizeof why))
        _exit(3);
    struct uraid_job_status st;
    for (int i = 0; i < 20000; i++) {
        uraid_job_status(a, &st);
        if (!st.running || st.done_sectors * 3 >= st.total_sectors)
            break;
        usleep(1000);
    }
    raise(SIGKILL);
    _exit(4);
}

static void five_six_killed(struct rng *r, uint64_t seed)
{
    struct setup s = {.level = 5, .n = 4, .nall = 5};
    harness_begin("RAID-5 -> RAID-6 restripe killed with -9 in the middle, writers in flight: opened dirty, "
                  "carried on, every acknowledged byte");
    int rc = make_setup(&s, r, LAYOUT_LEFT_SYMMETRIC);
    uint8_t *shared = rc ? MAP_FAILED : mmap(NULL, s.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    uint64_t *inflight = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shared != MAP_FAILED && inflight != MAP_FAILED, "mmap");
    if (shared != MAP_FAILED && inflight != MAP_FAILED) {
        memcpy(shared, s.model, s.bytes);
        free(s.model);
        s.model = shared;
        memset(inflight, 0, 4096);
        pid_t child = fork();
        if (child == 0)
            killed_child(&s, seed, inflight);
        int wst = 0;
        waitpid(child, &wst, 0);
        CHECK(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL, "the child was not killed in mid-reshape (status %d)", wst);
        char why[400];
        struct uraid_array *a = NULL;
        rc = uraid_open(s.paths, 5, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "open after the kill: %s", why);
        if (rc == 0) {
            struct uraid_array_info info;
            uraid_get_info(a, &info);
            CHECK(info.level == 6 && info.reshape_total_sectors > 0 && info.member[4].state == URAID_MEMBER_REBUILDING
                  && !info.clean, "after the kill: RAID-%d, reshape total %llu, Q state %d, clean %d", info.level,
                  (unsigned long long)info.reshape_total_sectors, info.member[4].state, info.clean);
            for (int i = 0; i < 3; i++) /* a write in flight: whatever of it landed */
                if (inflight[2 * i + 1] > inflight[2 * i])
                    CHECK(uraid_read(a, s.model + inflight[2 * i], inflight[2 * i + 1] - inflight[2 * i],
                                     inflight[2 * i]) == 0, "read the range in flight");
            compare(a, &s, "after the kill");
            struct uraid_job_status st;
            rc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why);
            CHECK(rc == 0, "carry the reshape on: %s", why);
            uraid_job_wait(a, &st);
            CHECK(st.result == 0, "the reshape carried on: %d %s", st.result, st.why);
            rc = uraid_job_start(a, URAID_JOB_RESYNC, NULL, why, sizeof why);
            CHECK(rc == 0, "resync: %s", why);
            uraid_job_wait(a, &st);
            CHECK(st.result == 0, "the resync: %d %s", st.result, st.why);
            a = settled(a, &s, 6, LAYOUT_LEFT_SYMMETRIC, 5, 5, "after the kill, carried on");
            if (a)
                uraid_close(a);
        }
        munmap(shared, s.bytes);
        s.model = NULL;
    }
    if (inflight != MAP_FAILED)
        munmap(inflight, 4096);
    drop_setup(&s);
    harness_end();
}

/* ---- a takeover's superblock write cut off ----------------------------------------- */

#define SB_AT 4096 /* metadata 1.2: the superblock 4 KiB into the member */

static int sb_block(const char *path, uint8_t *buf, int put)
{
    int fd = open(path, put ? O_WRONLY : O_RDONLY);
    ssize_t n = fd < 0 ? -1 : put ? pwrite(fd, buf, 4096, SB_AT) : pread(fd, buf, 4096, SB_AT);
    if (fd >= 0) {
        if (put)
            fsync(fd);
        close(fd);
    }
    return n == 4096 ? 0 : -1;
}

/* The child: the level change and a kill right after it. */
static void takeover_child(struct setup *s, int n, int level, const char *layout)
{
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 1000, .sync_speed_min_kib = 1000};
    struct uraid_array *a = NULL;
    if (uraid_open(s->paths, n, &op, &a, why, sizeof why))
        _exit(2);
    if (uraid_grow_online_level(a, level, 0, 0, layout, level == 6 ? s->paths + 4 : NULL, level == 6, why, sizeof why))
        _exit(3);
    raise(SIGKILL);
    _exit(4);
}

/* level 6 -> 5 or 5 -> 6 cut off after its write, member `old` put back as it was. */
static void takeover_cut(struct rng *r, int from, int old)
{
    struct setup s = {.level = from, .n = from == 6 ? 5 : 4, .nall = 5};
    harness_beginf("RAID-%d -> RAID-%d takeover cut off: member %d one event behind with the old level; opens as the "
                   "newest say", from, 11 - from, old);
    int rc = make_setup(&s, r, from == 6 ? LAYOUT_LEFT_SYMMETRIC_6 : LAYOUT_LEFT_SYMMETRIC);
    uint8_t before[4096];
    rc = rc ? rc : sb_block(s.path[old], before, 0);
    pid_t child = rc ? -1 : fork();
    if (child == 0)
        takeover_child(&s, s.n, 11 - from, from == 5 ? "preserve" : NULL);
    int wst = 0;
    if (child > 0)
        waitpid(child, &wst, 0);
    CHECK(rc == 0 && WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL, "the child did not make the change (status %d)",
          wst);
    char why[400];
    struct uraid_array *a = NULL;
    if (rc == 0 && WIFSIGNALED(wst)) {
        CHECK(sb_block(s.path[old], before, 1) == 0, "put member %d's superblock back", old);
        rc = uraid_open(s.paths, 5, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "open with member %d one event behind: %s", old, why);
    }
    if (a) {
        compare(a, &s, "opened");
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        int q = from == 5 ? (int)info.member[4].state : -1;
        CHECK(info.level == 11 - from && info.raid_devices == (from == 6 ? 4 : 5) &&
                  (from == 6 || q == URAID_MEMBER_REBUILDING),
              "opened: RAID-%d, %d members, Q state %d", info.level, info.raid_devices, q);
        if (from == 5) {
            struct uraid_job_status st;
            CHECK(uraid_job_start(a, URAID_JOB_RECOVER, NULL, why, sizeof why) == 0, "recover Q: %s", why);
            uraid_job_wait(a, &st);
            CHECK(st.result == 0, "the recovery of Q: %d %s", st.result, st.why);
        }
        a = settled(a, &s, 11 - from, from == 6 ? LAYOUT_LEFT_SYMMETRIC : LAYOUT_LEFT_SYMMETRIC_6,
                    from == 6 ? 4 : 5, 5, "after the cut-off takeover");
        if (a)
            uraid_close(a);
    }
    drop_setup(&s);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "reshape_level_online");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    five_six_takeover(&r, seed);
    five_six_restripe(&r, seed);
    six_five_interrupted(&r, seed);
    four_five(&r, seed);
    five_six_killed(&r, seed);
    takeover_cut(&r, 6, 0);
    takeover_cut(&r, 6, 4);
    takeover_cut(&r, 5, 1);
    refusals(&r);
    busy_job(&r);
    return harness_finish();
}
