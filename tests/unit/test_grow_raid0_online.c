/* A served RAID-0 gaining members (lib/array/grow_raid0_online.c, mdadm
 * --grow --raid-devices N --add NEW... on a running RAID-0: a RAID-4
 * missing its parity reshaped, then taken back): writer threads write and
 * read back their own slices of the array while it grows from 3 members to
 * 5 and from 2 to 3, the reshape job slowed so that they overlap it; once
 * the job ends, a thread writes into the new space. Then: a RAID-0 of N,
 * every byte the model's (zeros in the new space where nothing wrote), the
 * same after a reopen, and every member's superblock a RAID-0 of N at one
 * event count (a new member's role, the dropped parity slot gone) whose
 * size is the reshaped one, a bigger new member too (md's takeover records
 * the RAID-4's member size as every data_size: one zone). The
 * same grow again is refused. Refusals (no member added, a count that does
 * not match the new members, a member too small, members of unequal size,
 * one named twice, an old member named as new, read-only) write nothing:
 * every member byte for byte. A kill -9 of the serving process in
 * mid-reshape (after acknowledged writes): the next open serves the RAID-4
 * in mid-reshape, its job carries the reshape on and takes it back to
 * RAID-0, every acknowledged byte; and the offline grow with the same
 * arguments carries on another killed one the same way. Seeded (printed by
 * the harness). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"
#include "uraid.h"
#include "uraid_grow.h"

#define MAXM 8
#define BLK 4096
#define MEMBER_BYTES (8u << 20)

struct setup {
    int n, nadd;
    uint64_t size[MAXM];
    char dir[128], path[MAXM][160];
    const char *paths[MAXM];
    uint8_t *model; /* the grown array (total bytes mapped); shared with a child */
    uint64_t bytes, grown, total;
};

static int make_setup(struct setup *s, uint64_t last_size, struct rng *r)
{
    char why[300];
    s->total = 0;
    for (int i = 0; i < s->n + s->nadd; i++) {
        s->size[i] = i == s->n + s->nadd - 1 && last_size ? last_size : MEMBER_BYTES;
        s->total += s->size[i];
    }
    int rc = fx_tmpdir(s->dir, sizeof s->dir, "raid0");
    if (rc || (rc = fx_member_files(s->dir, s->path, s->paths, s->n + s->nadd, s->size, 0)))
        return rc;
    struct uraid_create_params cp = {.level = 0, .raid_devices = s->n, .layout = -1, .chunk_bytes = 64u << 10};
    rc = uraid_create(s->paths, s->n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    /* the model: all the members' bytes, more than the grown array (zeros past the old end) */
    if (rc == 0 && (rc = fx_open_fill(s->paths, s->n, s->total, r, &s->model, &s->bytes, why, sizeof why)) == 0)
        s->grown = s->bytes / (uint64_t)s->n * (uint64_t)(s->n + s->nadd);
    return rc;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i < s->n + s->nadd; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    fx_shared_free(s->model, s->total);
}

static uint8_t *snapshot(const struct setup *s)
{
    return fx_files_snapshot(s->paths, s->n + s->nadd, s->size, 0, NULL);
}

/* A RAID-0 of N at one event count, s->grown bytes (md's raid0_takeover_raid45
 * records the RAID-4's member size as each member's data_size: one zone,
 * the reshaped size), every byte the model's. */
static void verify(struct uraid_array *a, const struct setup *s, const char *what)
{
    int N = s->n + s->nadd;
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    uint64_t want = s->grown;
    int same = 1, slots = 0;
    for (int i = 0; i < info.nmembers; i++) {
        same &= info.member[i].events == info.member[0].events;
        slots += info.member[i].slot >= 0 && info.member[i].state == URAID_MEMBER_IN_SYNC;
    }
    CHECK(info.level == 0 && info.raid_devices == N && slots == N && info.size_bytes == want &&
          same && !info.reshape_delta, "%s: RAID-%d of %d (%d in sync), %llu bytes, events alike %d, reshape %d "
          "(expected RAID-0 of %d, %llu)", what, info.level, info.raid_devices, slots,
          (unsigned long long)info.size_bytes, same, info.reshape_delta, N, (unsigned long long)want);
    fx_check_model(a, s->model, s->grown, NULL, what);
}

static int job_running(struct uraid_array *a)
{
    struct uraid_job_status st;
    uraid_job_status(a, &st);
    return st.running;
}

static void grow_case(int n, int nadd, uint64_t last_size, struct rng *r, uint64_t seed)
{
    struct setup s = {.n = n, .nadd = nadd};
    harness_beginf("RAID-0 %d -> %d while it serves, with writers%s", n, n + nadd,
                   last_size ? " (the last new member bigger: one zone all the same)" : "");
    int rc = make_setup(&s, last_size, r);
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 12000, .sync_speed_min_kib = 12000};
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, n, &op, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        enum { NW = 3 };
        struct fx_writer w[NW];
        pthread_t t[NW];
        int stop = 0, during = 0;
        for (int i = 0; i < NW; i++) {
            int tail = i == NW - 1; /* the new space, once the array is that big */
            w[i] = (struct fx_writer){.a = a, .model = s.model, .lo = tail ? s.bytes : s.bytes / 2 * (uint64_t)i,
                                      .hi = tail ? s.grown : s.bytes / 2 * (uint64_t)(i + 1),
                                      .seed = seed + (uint64_t)i, .wait_for = tail ? s.grown : 0, .stop = &stop};
        }
        fx_writers_start(w, t, NW);
        usleep(20000);
        rc = uraid_grow_online(a, n + nadd, s.paths + n, nadd, why, sizeof why);
        CHECK(rc == 0, "grow online: %s", why);
        int before = __atomic_load_n(&w[0].rounds, __ATOMIC_RELAXED);
        while (rc == 0 && job_running(a))
            usleep(5000);
        during = __atomic_load_n(&w[0].rounds, __ATOMIC_RELAXED) - before;
        struct uraid_job_status st;
        uraid_job_wait(a, &st);
        CHECK(st.result == 0, "the reshape: %d %s", st.result, st.why);
        usleep(50000);
        int failures = fx_writers_stop(w, t, NW, &stop);
        for (int i = 0; i < NW; i++)
            CHECK(w[i].rounds > 0, "writer %d wrote nothing", i);
        CHECK(failures == 0 && during >= 20, "%d writes or read-backs failed, %d rounds during the reshape", failures,
              during);
        verify(a, &s, "grown");
        rc = uraid_grow_online(a, n + nadd, s.paths + n, nadd, why, sizeof why);
        CHECK(rc == -EINVAL && strstr(why, "adds none"), "the same grow again: %d %s", rc, why);
        CHECK(uraid_close(a) == 0);
        rc = uraid_open(s.paths, n + nadd, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "reopen: %s", why);
        if (rc == 0) {
            verify(a, &s, "reopened");
            uraid_close(a);
        }
    }
    drop_setup(&s);
    harness_end();
}

static void refusals(struct rng *r)
{
    struct setup s = {.n = 2, .nadd = 2};
    harness_begin("RAID-0: refused grows write nothing");
    int rc = make_setup(&s, 1u << 20, r); /* the last new member: too small */
    char why[400];
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    uint8_t *before = rc == 0 ? snapshot(&s) : NULL;
    if (rc == 0) {
        const char *twice[] = {s.paths[2], s.paths[2]}, *old[] = {s.paths[0]};
        fx_refuse_grow(a, 2, NULL, 0, -EINVAL, "adds none");
        fx_refuse_grow(a, 4, s.paths + 2, 1, -EINVAL, "needs 2 new members");
        fx_refuse_grow(a, 4, s.paths + 2, 2, -ENOSPC, "is too small");
        fx_refuse_grow(a, 4, twice, 2, -EINVAL, "are the same member");
        fx_refuse_grow(a, 3, old, 1, -EEXIST, "already a member");
        CHECK(uraid_close(a) == 0);
        struct uraid_open_params ro = {.readonly = 1};
        if ((rc = uraid_open(s.paths, 2, &ro, &a, why, sizeof why)) == 0) {
            fx_refuse_grow(a, 3, s.paths + 2, 1, -EROFS, "read-only");
            uraid_close(a);
        }
        CHECK(rc == 0, "open read-only: %s", why);
        uint8_t *after = snapshot(&s);
        CHECK(after && !memcmp(before, after, s.total), "a refused grow changed a member");
        free(after);
    }
    free(before);
    drop_setup(&s);
    harness_end();
}

static void unequal(struct rng *r)
{
    harness_begin("RAID-0 of unequal members (two zones): refused, nothing written");
    struct setup s = {.n = 2, .nadd = 1};
    char why[400];
    int rc = make_setup(&s, 0, r);
    /* a third member twice as big: the array's zones differ */
    struct setup t = {.n = 3, .nadd = 1};
    snprintf(t.dir, sizeof t.dir, "%s", s.dir);
    for (int i = 0; i < 4; i++) {
        snprintf(t.path[i], sizeof t.path[i], "%s/z%d.img", s.dir, i);
        t.paths[i] = t.path[i];
        t.size[i] = i == 2 ? 2 * MEMBER_BYTES : MEMBER_BYTES;
        t.total += t.size[i];
        int frc = fx_file_of_size(t.path[i], t.size[i]);
        rc = rc ? rc : frc ? -EIO : 0;
    }
    struct uraid_create_params cp = {.level = 0, .raid_devices = 3, .layout = -1, .chunk_bytes = 64u << 10};
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_create(t.paths, 3, &cp, 0, why, sizeof why)) == 0 &&
        (rc = uraid_open(t.paths, 3, NULL, &a, why, sizeof why)) == 0) {
        uint8_t *before = snapshot(&t);
        fx_refuse_grow(a, 4, t.paths + 3, 1, -EOPNOTSUPP, "one zone");
        uraid_close(a);
        uint8_t *after = snapshot(&t);
        CHECK(before && after && !memcmp(before, after, t.total), "a refused grow changed a member");
        free(before);
        free(after);
    }
    CHECK(rc == 0, "setup: %s", why);
    for (int i = 0; i < 4; i++)
        unlink(t.path[i]);
    drop_setup(&s);
    harness_end();
}

/* The child: open, acknowledged writes, the grow, more writes, then
 * SIGKILL once the reshape is past pct percent (from the seed) and before
 * its end. */
static void child_run(struct setup *s, int pct)
{
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 3000, .sync_speed_min_kib = 3000};
    struct uraid_array *a = NULL;
    struct rng r;
    rng_seed(&r, 99);
    uint8_t buf[16 * BLK];
    if (uraid_open(s->paths, s->n, &op, &a, why, sizeof why) ||
        uraid_grow_online(a, s->n + s->nadd, s->paths + s->n, s->nadd, why, sizeof why))
        _exit(3);
    for (int i = 0; i < 2000; i++) {
        uint64_t off = rng_below(&r, (s->bytes - sizeof buf) / BLK) * BLK;
        rng_fill(&r, buf, sizeof buf);
        if (uraid_write(a, buf, sizeof buf, off))
            _exit(4);
        memcpy(s->model + off, buf, sizeof buf);
        struct uraid_job_status st;
        uraid_job_status(a, &st);
        if (!st.running)
            _exit(5); /* ended before the kill: too fast */
        if (i >= 10 && st.done_sectors * 100 > st.total_sectors * (uint64_t)pct)
            break;
        usleep(2000);
    }
    raise(SIGKILL);
}

static void killed(int offline, struct rng *r)
{
    struct setup s = {.n = 3, .nadd = 2};
    harness_beginf("RAID-0 3 -> 5: kill -9 in mid-reshape, then %s", offline ? "the offline grow again" :
                   "an open carries it on and takes it back to RAID-0");
    int rc = make_setup(&s, 0, r);
    char why[400];
    int pct = 5 + (int)rng_below(r, 70); /* where the kill falls */
    pid_t child = rc == 0 ? fork() : -1;
    if (child == 0)
        child_run(&s, pct);
    if (child > 0) {
        int wst = 0;
        waitpid(child, &wst, 0);
        CHECK(WIFSIGNALED(wst), "the child was not killed past %d%% (status %d)", pct, WEXITSTATUS(wst));
        struct uraid_array *a = NULL;
        if (offline) {
            struct uraid_grow_params gp = {.raid_devices = 5};
            struct uraid_grow_result res;
            rc = uraid_grow_members(s.paths, 3, s.paths + 3, 2, &gp, &res, why, sizeof why);
            CHECK(rc == 0 && res.resumed, "the offline grow carries it on: %d %s", rc, why);
        } else {
            rc = uraid_open(s.paths, 5, NULL, &a, why, sizeof why);
            CHECK(rc == 0, "open after the kill: %s", why);
            struct uraid_array_info info;
            if (rc == 0) {
                uraid_get_info(a, &info);
                CHECK(info.level == 4 && info.reshape_delta == 2, "after the kill: RAID-%d, delta %d", info.level,
                      info.reshape_delta);
                rc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why);
                CHECK(rc == 0, "the reshape job: %s", why);
                struct uraid_job_status st;
                uraid_job_wait(a, &st);
                CHECK(st.result == 0, "the reshape carried on: %d %s", st.result, st.why);
                verify(a, &s, "carried on by the open");
                CHECK(uraid_close(a) == 0);
            }
        }
        if ((rc = uraid_open(s.paths, 5, NULL, &a, why, sizeof why)) == 0) {
            verify(a, &s, "reopened");
            uraid_close(a);
        }
        CHECK(rc == 0, "reopen: %s", why);
    }
    drop_setup(&s);
    harness_end();
}

/* A served RAID-4 missing its parity (what a RAID-0 grow leaves when its
 * end was written but not its takeover back): the same grow asked again
 * (the RAID-0's count, its new members named) takes it back to RAID-0 in
 * one write; every byte, and a reopen finds the RAID-0, clean. */
static void back_case(struct rng *r)
{
    harness_begin("a served RAID-4 missing its parity: the same RAID-0 grow again takes it back");
    struct setup s = {.n = 3, .nadd = 1};
    char why[400];
    int rc = make_setup(&s, 0, r); /* (for its files: m0..m2 become the RAID-4's data members) */
    const char *paths[4] = {s.paths[0], s.paths[1], s.paths[2], "missing"};
    struct uraid_create_params cp = {.level = 4, .raid_devices = 4, .layout = -1, .chunk_bytes = 64u << 10,
                                     .assume_clean = 1, .consistency_policy = URAID_POLICY_RESYNC};
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_create(paths, 4, &cp, 1, why, sizeof why)) == 0 &&
        (rc = uraid_open(s.paths, 3, NULL, &a, why, sizeof why)) == 0) {
        s.bytes = uraid_size(a);
        rng_fill(r, s.model, s.bytes);
        CHECK(uraid_write(a, s.model, s.bytes, 0) == 0, "write");
        fx_refuse_grow(a, 3, NULL, 0, -EINVAL, "give --array-size"); /* a shrink without its size, as before */
        rc = uraid_grow_online(a, 3, s.paths + 1, 2, why, sizeof why);
        CHECK(rc == 0, "the same grow again: %s", why);
        s.grown = s.bytes;
        s.n = 3;
        s.nadd = 0;
        verify(a, &s, "taken back");
        CHECK(uraid_close(a) == 0);
        if ((rc = uraid_open(s.paths, 3, NULL, &a, why, sizeof why)) == 0) {
            struct uraid_array_info info;
            uraid_get_info(a, &info);
            CHECK(info.clean, "the RAID-0 is recorded dirty");
            verify(a, &s, "reopened");
            uraid_close(a);
        }
        s.nadd = 1;
    }
    CHECK(rc == 0, "%s", why);
    drop_setup(&s);
    harness_end();
}

/* A served RAID-0's chunk changed (mdadm's way, as its growth), writers on. */
static void chunk_case(struct rng *r, uint64_t seed)
{
    struct setup s = {.n = 3, .nadd = 0};
    harness_begin("RAID-0 of 3, chunk 64K -> 128K while it serves, with writers");
    int rc = make_setup(&s, 0, r);
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 12000, .sync_speed_min_kib = 12000};
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 3, &op, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        enum { NW = 3 };
        struct fx_writer w[NW];
        pthread_t t[NW];
        int stop = 0;
        for (int i = 0; i < NW; i++)
            w[i] = (struct fx_writer){.a = a, .model = s.model, .lo = s.bytes / NW * (uint64_t)i / BLK * BLK,
                                      .hi = s.bytes / NW * (uint64_t)(i + 1) / BLK * BLK, .seed = seed + (uint64_t)i,
                                      .stop = &stop};
        fx_writers_start(w, t, NW);
        usleep(20000);
        rc = uraid_grow_online_geom(a, 0, 256, NULL, NULL, 0, why, sizeof why);
        CHECK(rc == 0, "--chunk 128K online: %s", why);
        int before = __atomic_load_n(&w[0].rounds, __ATOMIC_RELAXED);
        struct uraid_job_status st;
        uraid_job_wait(a, &st);
        CHECK(st.result == 0, "the reshape: %d %s", st.result, st.why);
        int during = __atomic_load_n(&w[0].rounds, __ATOMIC_RELAXED) - before;
        int failures = fx_writers_stop(w, t, NW, &stop);
        CHECK(failures == 0 && during > 0, "%d writes or read-backs failed, %d rounds during the reshape", failures,
              during);
        verify(a, &s, "rechunked");
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.chunk_bytes == 128u << 10, "chunk %u bytes (want 128K)", info.chunk_bytes);
        rc = uraid_grow_online_geom(a, 0, 256, NULL, NULL, 0, why, sizeof why);
        CHECK(rc == -EALREADY && strstr(why, "nothing to do"), "the same again: %d %s", rc, why);
        CHECK(uraid_close(a) == 0);
        rc = uraid_open(s.paths, 3, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "reopen: %s", why);
        if (rc == 0) {
            verify(a, &s, "reopened");
            uraid_close(a);
        }
    }
    drop_setup(&s);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "grow_raid0_online");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    grow_case(3, 2, 0, &r, seed);
    grow_case(2, 1, 12u << 20, &r, seed);
    chunk_case(&r, seed);
    refusals(&r);
    unequal(&r);
    killed(0, &r);
    killed(1, &r);
    back_case(&r);
    return harness_finish();
}
