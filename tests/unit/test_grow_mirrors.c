/* A served RAID-1 gaining mirrors (lib/array/grow_mirrors.c, mdadm --grow
 * --raid-devices N --add NEW... on a running RAID-1): writer threads write
 * and read back their own regions while the array grows from 2 mirrors to
 * 3 (and to 4 with two new members); the new mirrors are recovered by the
 * job the grow starts; then every byte matches the model, the array is
 * whole with N mirrors, a check (which compares the mirrors) finds
 * mismatch_cnt 0, and so does a reopen. Refusals (no more mirrors, a
 * member count that does not match the new members, a job running) write
 * nothing: every member byte for byte. A kill -9 right after the grow
 * (its recovery under way): the next open finds N slots and the new
 * members as spares or recovering, recovers them, and reads every
 * acknowledged byte. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array/array.h"
#include "array_fixture.h"
#include "harness.h"
#include "uraid.h"
#include "uraid_grow.h"

#define MAXM 6
#define MEMBER_BYTES (16u << 20)

struct setup {
    int n, nadd;
    char dir[128], path[MAXM][160];
    const char *paths[MAXM];
    uint8_t *model; /* shared with a child */
    uint64_t bytes;
};

static int make_setup(struct setup *s, struct rng *r)
{
    char why[300];
    int rc = fx_tmpdir(s->dir, sizeof s->dir, "mirrors");
    if (rc || (rc = fx_member_files(s->dir, s->path, s->paths, s->n + s->nadd, NULL, MEMBER_BYTES)))
        return rc;
    struct uraid_create_params cp = {.level = 1, .raid_devices = s->n, .layout = -1, .assume_clean = 1,
                                     .consistency_policy = URAID_POLICY_RESYNC};
    rc = uraid_create(s->paths, s->n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    if (rc == 0)
        rc = fx_open_fill(s->paths, s->n, 0, r, &s->model, &s->bytes, why, sizeof why);
    return rc;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i < s->n + s->nadd; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    fx_shared_free(s->model, s->bytes);
}

/* Every member file's bytes, to compare after a refusal. */
static uint8_t *snapshot(const struct setup *s)
{
    return fx_files_snapshot(s->paths, s->n + s->nadd, NULL, MEMBER_BYTES, NULL);
}

/* Whole with n mirrors, every byte the model's, a clean check. */
static void verify(struct uraid_array *a, const struct setup *s, int n, const char *what)
{
    char why[300];
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.raid_devices == n && !info.degraded, "%s: %d mirrors, degraded %d (expected %d, whole)", what,
          info.raid_devices, info.degraded, n);
    uint8_t *buf = malloc(s->bytes);
    CHECK(uraid_read(a, buf, s->bytes, 0) == 0 && !memcmp(buf, s->model, s->bytes), "%s: the bytes differ", what);
    free(buf);
    struct uraid_job_status st;
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "%s: check: %s", what, why);
    uraid_job_wait(a, &st);
    CHECK(st.result == 0 && st.mismatch_sectors == 0, "%s: check: result %d, mismatch %llu", what, st.result,
          (unsigned long long)st.mismatch_sectors);
}

static void grow_case(int n, int nadd, struct rng *r, uint64_t seed)
{
    struct setup s = {.n = n, .nadd = nadd};
    harness_beginf("RAID-1 %d -> %d mirrors while it serves, with writers", n, n + nadd);
    int rc = make_setup(&s, r);
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 20000, .sync_speed_min_kib = 20000};
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, n, &op, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        enum { NW = 2 };
        struct fx_writer w[NW];
        pthread_t t[NW];
        int stop = 0;
        for (int i = 0; i < NW; i++)
            w[i] = (struct fx_writer){.a = a, .model = s.model, .lo = s.bytes / NW * (uint64_t)i,
                                      .hi = s.bytes / NW * (uint64_t)(i + 1), .seed = seed + (uint64_t)i,
                                      .stop = &stop};
        fx_writers_start(w, t, NW);
        usleep(20000);
        rc = uraid_grow_online(a, n + nadd, s.paths + n, nadd, why, sizeof why);
        CHECK(rc == 0, "grow online: %s", why);
        struct uraid_job_status st;
        uraid_job_wait(a, &st);
        CHECK(st.result == 0, "the new mirrors' recovery: %d %s", st.result, st.why);
        int failures = fx_writers_stop(w, t, NW, &stop), rounds = 0;
        for (int i = 0; i < NW; i++)
            rounds += w[i].rounds;
        CHECK(failures == 0 && rounds > 0, "%d writes or read-backs failed, %d rounds", failures, rounds);
        verify(a, &s, n + nadd, "grown");
        CHECK(uraid_close(a) == 0);
        rc = uraid_open(s.paths, n + nadd, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "reopen: %s", why);
        if (rc == 0) {
            verify(a, &s, n + nadd, "reopened");
            uraid_close(a);
        }
    }
    drop_setup(&s);
    harness_end();
}

static void refusals(struct rng *r)
{
    struct setup s = {.n = 2, .nadd = 2};
    harness_begin("RAID-1: refused grows write nothing");
    int rc = make_setup(&s, r);
    char why[400];
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    uint8_t *before = rc == 0 ? snapshot(&s) : NULL;
    if (rc == 0) {
        rc = uraid_grow_online(a, 2, s.paths + 2, 0, why, sizeof why);
        CHECK(rc == -EALREADY && strstr(why, "nothing to do"), "the same count: %d %s", rc, why);
        rc = uraid_grow_online(a, 4, s.paths + 2, 1, why, sizeof why);
        CHECK(rc == -EINVAL && strstr(why, "needs 2 new members"), "too few new members: %d %s", rc, why);
        CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "check: %s", why);
        rc = uraid_grow_online(a, 3, s.paths + 2, 1, why, sizeof why);
        struct uraid_job_status st;
        uraid_job_status(a, &st);
        /* the check may end first on a fast machine: then the grow went through */
        CHECK(rc == -EBUSY ? strstr(why, "cannot be reshaped") != NULL : rc == 0, "a job running: %d %s", rc, why);
        int grown = rc == 0;
        uraid_job_wait(a, &st);
        CHECK(uraid_close(a) == 0);
        if (!grown) {
            uint8_t *after = snapshot(&s);
            CHECK(after && !memcmp(before, after, (size_t)4 * MEMBER_BYTES), "a refused grow changed a member");
            free(after);
        }
    }
    free(before);
    drop_setup(&s);
    harness_end();
}

/* kill -9 in a child right after the grow, its recovery under way. */
static void killed(struct rng *r)
{
    struct setup s = {.n = 2, .nadd = 1};
    harness_begin("RAID-1 2 -> 3: kill -9 during the new mirror's recovery, then open");
    int rc = make_setup(&s, r);
    char why[400];
    pid_t child = rc == 0 ? fork() : -1;
    if (child == 0) {
        struct uraid_open_params op = {.sync_speed_max_kib = 4000, .sync_speed_min_kib = 4000};
        struct uraid_array *a = NULL;
        if (uraid_open(s.paths, 2, &op, &a, why, sizeof why) || uraid_grow_online(a, 3, s.paths + 2, 1, why, sizeof why))
            _exit(3);
        usleep(300000);
        raise(SIGKILL);
    }
    if (child > 0) {
        int wst = 0;
        waitpid(child, &wst, 0);
        CHECK(WIFSIGNALED(wst), "the child was not killed (status %d)", wst);
        struct uraid_array *a = NULL;
        rc = uraid_open(s.paths, 3, NULL, &a, why, sizeof why); /* md starts a dirty degraded RAID-1 */
        CHECK(rc == 0, "open after the kill: %s", why);
        if (rc == 0) {
            struct uraid_array_info info;
            uraid_get_info(a, &info);
            CHECK(info.raid_devices == 3 && info.degraded, "after the kill: %d mirrors, degraded %d", info.raid_devices,
                  info.degraded);
            struct uraid_job_params jp = {.slot = -1};
            int jrc = uraid_job_start(a, URAID_JOB_RECOVER, &jp, why, sizeof why);
            CHECK(jrc == 0 || jrc == -EBUSY, "recover: %s", why);
            struct uraid_job_status st;
            uraid_job_wait(a, &st);
            verify(a, &s, 3, "recovered after the kill");
            CHECK(uraid_close(a) == 0);
        }
    }
    drop_setup(&s);
    harness_end();
}

/* Fewer mirrors, md's raid1_reshape: refused while the slot to drop holds
 * a member (nothing written), then served after fail + remove, offline with
 * the member left out; every byte, a clean check, a reopen of the rest. */
static void drop_case(int served, struct rng *r)
{
    struct setup s = {.n = 3, .nadd = 0};
    harness_beginf("RAID-1 3 -> 2 mirrors (%s): refused while slot 2 holds a member, then its empty slot dropped",
                   served ? "served" : "offline");
    int rc = make_setup(&s, r);
    char why[400];
    uint8_t *before = rc == 0 ? snapshot(&s) : NULL;
    struct uraid_array *a = NULL;
    if (rc == 0 && served) {
        rc = uraid_open(s.paths, 3, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "open: %s", why);
        if (rc == 0) {
            fx_refuse_grow(a, 2, NULL, 0, -EBUSY, "only from an empty slot");
            uraid_close(a);
        }
    } else if (rc == 0) {
        struct uraid_grow_params gp = {.raid_devices = 2};
        rc = uraid_grow_members(s.paths, 3, NULL, 0, &gp, NULL, why, sizeof why);
        CHECK(rc == -EBUSY && strstr(why, "only from an empty slot") && !strchr(why, '\n'), "refused: %d %s", rc, why);
        rc = 0;
    }
    uint8_t *after = rc == 0 ? snapshot(&s) : NULL;
    CHECK(before && after && !memcmp(before, after, (size_t)3 * MEMBER_BYTES), "a refused drop changed a member");
    free(before);
    free(after);
    if (rc == 0 && served && (rc = uraid_open(s.paths, 3, NULL, &a, why, sizeof why)) == 0) {
        CHECK(array_manage_fail(a, s.paths[2], why, sizeof why) == 0, "fail: %s", why);
        CHECK(array_manage_remove(a, s.paths[2], why, sizeof why) == 0, "remove: %s", why);
        rc = uraid_grow_online(a, 2, NULL, 0, why, sizeof why);
        CHECK(rc == 0, "the served drop: %s", why);
        if (rc == 0)
            verify(a, &s, 2, "served, 2 mirrors");
        uraid_close(a);
    } else if (rc == 0) {
        struct uraid_grow_params gp = {.raid_devices = 2};
        rc = uraid_grow_members(s.paths, 2, NULL, 0, &gp, NULL, why, sizeof why);
        CHECK(rc == 0, "the drop with slot 2's member left out: %s", why);
    }
    if ((rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) == 0) {
        verify(a, &s, 2, "reopened with the 2 mirrors");
        uraid_close(a);
    }
    CHECK(rc == 0, "reopen: %s", why);
    drop_setup(&s);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "grow_mirrors");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    grow_case(2, 1, &r, seed);
    grow_case(2, 2, &r, seed);
    refusals(&r);
    drop_case(1, &r);
    drop_case(0, &r);
    killed(&r);
    return harness_finish();
}
