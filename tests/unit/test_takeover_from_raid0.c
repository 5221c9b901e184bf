/* A served RAID-0 of 3 (one zone) taken over as a RAID-4 / RAID-5
 * parity-last of 4 (lib/array/grow_takeover_raid0.c, md's
 * raid45_takeover_raid0 on a running array, then mdadm's add): with
 * writer threads writing and reading back during the change and, with a
 * new member, during its recovery into the parity slot. After: the level,
 * parity-last, 4 slots (the last missing without a new member), the same
 * size, every byte the model's, a check with no mismatch once the parity
 * member is recovered, the same after a reopen. Refusals (another count,
 * two new members, another layout or chunk, members of unequal size, a new
 * member too small, one of the array's, one holding an md superblock,
 * read-only) write nothing: every member byte for byte. A kill -9 at a
 * seeded point of the parity member's recovery (acknowledged writes going
 * on): the next open (no --force: the member being recovered holds only
 * parity) carries the recovery on, every acknowledged byte, no mismatch;
 * another killed one is finished by the offline grow with the same
 * arguments. Seeded (printed by the harness). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"
#include "uraid.h"
#include "uraid_grow.h"

#define N0 3
#define NF (N0 + 2) /* the members, the new one, a spare file */
#define BLK 4096
#define MEMBER_BYTES (8u << 20)
#define PARITY_LAST 5

struct setup {
    char dir[128], path[NF][160];
    const char *paths[NF];
    uint64_t size[NF];
    uint8_t *model; /* shared with a child */
    uint64_t bytes;
};

static int make_setup(struct setup *s, uint64_t last_size, uint64_t new_size, struct rng *r)
{
    char why[300];
    for (int i = 0; i < NF; i++)
        s->size[i] = i == N0 - 1 && last_size ? last_size : i == N0 && new_size ? new_size : MEMBER_BYTES;
    int rc = fx_tmpdir(s->dir, sizeof s->dir, "from0");
    if (rc || (rc = fx_member_files(s->dir, s->path, s->paths, NF, s->size, 0)))
        return rc;
    struct uraid_create_params cp = {.level = 0, .raid_devices = N0, .layout = -1, .chunk_bytes = 64u << 10};
    rc = uraid_create(s->paths, N0, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    if (rc == 0)
        rc = fx_open_fill(s->paths, N0, 0, r, &s->model, &s->bytes, why, sizeof why);
    CHECK(rc == 0, "open: %s", why);
    return rc;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i < NF; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    fx_shared_free(s->model, s->bytes);
}

static uint8_t *snapshot(const struct setup *s, uint64_t *total)
{
    return fx_files_snapshot(s->paths, NF, s->size, 0, total);
}

static void check_bytes(struct uraid_array *a, const struct setup *s, const char *what)
{
    fx_check_model(a, s->model, s->bytes, NULL, what);
}

/* RAID-level parity-last of 4, `insync` slots in sync, the size kept, every byte; whole: a check finds nothing. */
static void verify(struct uraid_array *a, const struct setup *s, int level, int insync, const char *what)
{
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    int n = 0, same = 1;
    for (int i = 0; i < info.nmembers; i++) {
        n += info.member[i].slot >= 0 && info.member[i].state == URAID_MEMBER_IN_SYNC;
        same &= !info.member[i].path[0] || info.member[i].events == info.events; /* (a missing slot: no member) */
    }
    CHECK(info.level == level && info.raid_devices == N0 + 1 && n == insync && same && info.size_bytes == s->bytes &&
          (level == 4 || info.layout == PARITY_LAST),
          "%s: RAID-%d layout %d of %d (%d in sync, events alike %d), %llu bytes (expected RAID-%d parity-last of %d, "
          "%d in sync, %llu bytes)", what, info.level, info.layout, info.raid_devices, n, same,
          (unsigned long long)info.size_bytes, level, N0 + 1, insync, (unsigned long long)s->bytes);
    check_bytes(a, s, what);
    if (insync == N0 + 1) {
        char why[300];
        struct uraid_job_status st = {0};
        int rc = uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why);
        if (rc == 0)
            uraid_job_wait(a, &st);
        CHECK(rc == 0 && st.result == 0 && st.mismatch_sectors == 0, "%s: check %d %s, %llu mismatched sectors", what,
              rc, why, (unsigned long long)st.mismatch_sectors);
    }
}

static void change_case(int level, int with_new, struct rng *r, uint64_t seed)
{
    struct setup s = {0};
    harness_beginf("RAID-0 of 3 -> RAID-%d of 4 while it serves, with writers%s", level,
                   with_new ? ", a new member recovered as the parity" : ", the parity slot left missing");
    int rc = make_setup(&s, 0, 0, r);
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 20000, .sync_speed_min_kib = 20000};
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, N0, &op, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        enum { NW = 3 };
        struct fx_writer w[NW];
        pthread_t t[NW];
        int stop = 0, failures = 0, during = 0;
        uint64_t slice = s.bytes / NW / BLK * BLK;
        for (int i = 0; i < NW; i++)
            w[i] = (struct fx_writer){.a = a, .model = s.model, .lo = slice * (uint64_t)i,
                                      .hi = slice * (uint64_t)(i + 1), .seed = seed + (uint64_t)i, .stop = &stop};
        fx_writers_start(w, t, NW);
        fx_writers_wait(w, NW, 20);
        rc = uraid_grow_online_level(a, level, 0, 0, NULL, s.paths + N0, with_new, why, sizeof why);
        CHECK(rc == 0, "--level %d: %s", level, why);
        struct uraid_job_status st;
        uraid_job_status(a, &st);
        while (rc == 0 && with_new && st.running) {
            int at = __atomic_load_n(&w[0].rounds, __ATOMIC_RELAXED);
            usleep(5000);
            during += __atomic_load_n(&w[0].rounds, __ATOMIC_RELAXED) > at;
            uraid_job_status(a, &st);
        }
        if (with_new) {
            uraid_job_wait(a, &st);
            CHECK(st.result == 0 && during > 0, "the recovery: %d %s, writes during it in %d polls", st.result,
                  st.why, during);
        }
        fx_writers_wait(w, NW, 20);
        failures = fx_writers_stop(w, t, NW, &stop);
        CHECK(failures == 0, "%d writes or read-backs failed", failures);
        verify(a, &s, level, with_new ? N0 + 1 : N0, "taken over");
        CHECK(uraid_close(a) == 0);
        rc = uraid_open(s.paths, N0 + with_new, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "reopen: %s", why);
        if (rc == 0) {
            verify(a, &s, level, with_new ? N0 + 1 : N0, "reopened");
            struct uraid_array_info info;
            uraid_get_info(a, &info);
            CHECK(info.clean, "recorded dirty after a clean close");
            uraid_close(a);
        }
    }
    drop_setup(&s);
    harness_end();
}

static void refusals(struct rng *r)
{
    harness_begin("refused RAID-0 -> RAID-4/5 takeovers write nothing");
    struct setup s = {0};
    char why[400];
    int rc = make_setup(&s, 0, 1u << 20, r); /* the new member: too small */
    struct uraid_array *a = NULL;
    uint64_t total = 0;
    if (rc == 0) { /* the spare file: another array's member */
        const char *other[] = {s.paths[N0 + 1], "missing"};
        struct uraid_create_params cp = {.level = 1, .raid_devices = 2, .layout = -1};
        rc = uraid_create(other, 2, &cp, 1, why, sizeof why);
        CHECK(rc == 0, "create another array: %s", why);
    }
    if (rc == 0 && (rc = uraid_open(s.paths, N0, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    uint8_t *before = rc == 0 ? snapshot(&s, &total) : NULL;
    if (rc == 0) {
        const char *old[] = {s.paths[0]};
        fx_refuse_level(a, 5, N0 + 2, 0, NULL, NULL, 0, -EINVAL, "into a RAID-5 of 4");
        fx_refuse_level(a, 5, 0, 0, NULL, s.paths + N0, 2, -EINVAL, "at most one new member");
        fx_refuse_level(a, 5, 0, 0, "left-symmetric", NULL, 0, -EOPNOTSUPP, "as parity-last with its chunk");
        fx_refuse_level(a, 4, 0, 256, NULL, NULL, 0, -EOPNOTSUPP, "as parity-last with its chunk");
        fx_refuse_level(a, 5, 0, 0, NULL, s.paths + N0, 1, -ENOSPC, "is too small");
        fx_refuse_level(a, 5, 0, 0, NULL, old, 1, -EEXIST, "already a member");
        fx_refuse_level(a, 5, 0, 0, NULL, s.paths + N0 + 1, 1, -EEXIST, "holds an md superblock");
        fx_refuse_level(a, 6, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "not supported");
        CHECK(uraid_close(a) == 0);
        struct uraid_open_params ro = {.readonly = 1};
        if ((rc = uraid_open(s.paths, N0, &ro, &a, why, sizeof why)) == 0) {
            fx_refuse_level(a, 5, 0, 0, NULL, NULL, 0, -EROFS, "read-only");
            uraid_close(a);
        }
        CHECK(rc == 0, "open read-only: %s", why);
        uint8_t *after = snapshot(&s, &total);
        CHECK(before && after && !memcmp(before, after, total), "a refused --level changed a member");
        free(after);
    }
    free(before);
    drop_setup(&s);
    /* members of unequal size: two zones */
    struct setup u = {0};
    rc = make_setup(&u, 2 * MEMBER_BYTES, 0, r);
    if (rc == 0 && (rc = uraid_open(u.paths, N0, NULL, &a, why, sizeof why)) == 0) {
        before = snapshot(&u, &total);
        fx_refuse_level(a, 5, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "one zone");
        uraid_close(a);
        uint8_t *after = snapshot(&u, &total);
        CHECK(before && after && !memcmp(before, after, total), "a refused --level changed a member");
        free(before);
        free(after);
    }
    CHECK(rc == 0, "%s", why);
    drop_setup(&u);
    harness_end();
}

/* The child: open, the takeover with the new member (slow recovery), writes, SIGKILL past pct percent. */
static void child_run(struct setup *s, int level, int pct)
{
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 3000, .sync_speed_min_kib = 3000};
    struct uraid_array *a = NULL;
    struct rng r;
    rng_seed(&r, 77);
    uint8_t buf[16 * BLK];
    if (uraid_open(s->paths, N0, &op, &a, why, sizeof why) ||
        uraid_grow_online_level(a, level, 0, 0, NULL, s->paths + N0, 1, why, sizeof why))
        _exit(3);
    for (int i = 0; i < 4000; i++) {
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
    int pct = 5 + (int)rng_below(r, 70), level = offline ? 4 : 5;
    harness_beginf("RAID-0 of 3 -> RAID-%d of 4: kill -9 at %d%% of the parity's recovery, then %s", level, pct,
                   offline ? "the offline grow again" : "an open carries the recovery on");
    struct setup s = {0};
    char why[400];
    int rc = make_setup(&s, 0, 0, r);
    pid_t child = rc == 0 ? fork() : -1;
    if (child == 0)
        child_run(&s, level, pct);
    if (child > 0) {
        int wst = 0;
        waitpid(child, &wst, 0);
        CHECK(WIFSIGNALED(wst), "the child was not killed past %d%% (status %d)", pct, WEXITSTATUS(wst));
        struct uraid_array *a = NULL;
        if (offline) {
            struct uraid_grow_params gp = {.level_set = 1, .level = level};
            struct uraid_grow_result res;
            rc = uraid_grow_members(s.paths, N0, s.paths + N0, 1, &gp, &res, why, sizeof why);
            CHECK(rc == 0, "the offline grow finishes it: %d %s", rc, why);
        } else {
            rc = uraid_open(s.paths, N0 + 1, NULL, &a, why, sizeof why);
            CHECK(rc == 0, "open after the kill (no --force): %s", why);
            if (rc == 0) {
                rc = uraid_job_start(a, URAID_JOB_RECOVER, &(struct uraid_job_params){.slot = -1}, why, sizeof why);
                struct uraid_job_status st;
                if (rc == 0)
                    uraid_job_wait(a, &st);
                CHECK(rc == 0 && st.result == 0, "the recovery carried on: %d %s", rc, why);
                CHECK(uraid_close(a) == 0);
            }
        }
        if ((rc = uraid_open(s.paths, N0 + 1, NULL, &a, why, sizeof why)) == 0) {
            verify(a, &s, level, N0 + 1, "after the kill");
            uraid_close(a);
        }
        CHECK(rc == 0, "reopen: %s", why);
    }
    drop_setup(&s);
    harness_end();
}

/* The takeover cut off before its add (a kill between steps 2 and 3, made
 * here by a takeover without a new member and a reopen): the same command
 * again adds the new member and recovers the parity onto it. */
static void carry_on_case(struct rng *r)
{
    struct setup s = {0};
    harness_begin("RAID-0 -> RAID-5 cut off before its add: the same --level 5 --add again recovers the parity");
    int rc = make_setup(&s, 0, 0, r);
    char why[400];
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, N0, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        rc = uraid_grow_online_level(a, 5, 0, 0, NULL, s.paths + N0, 0, why, sizeof why);
        CHECK(rc == 0, "--level 5 without the new member: %s", why);
        CHECK(uraid_close(a) == 0);
        rc = uraid_open(s.paths, N0, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "reopen: %s", why);
    }
    if (rc == 0) {
        rc = uraid_grow_online_level(a, 5, 0, 0, NULL, s.paths + N0, 1, why, sizeof why);
        CHECK(rc == 0, "--level 5 --add again: %s", why);
        struct uraid_job_status st = {0};
        uraid_job_wait(a, &st);
        CHECK(rc == 0 && st.result == 0, "the recovery: %d %s", st.result, st.why);
        verify(a, &s, 5, N0 + 1, "carried on");
        CHECK(uraid_close(a) == 0);
    }
    drop_setup(&s);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "takeover_from_raid0");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    change_case(5, 1, &r, seed);
    change_case(4, 0, &r, seed);
    change_case(4, 1, &r, seed);
    refusals(&r);
    carry_on_case(&r);
    killed(0, &r);
    killed(1, &r);
    return harness_finish();
}
