/* Recovery as md does it (issue 10), through the library and the control
 * socket on member files:
 *   - one recovery fills every hole there is a spare for (RAID-6 with two
 *     members lost and two spares, RAID-1 n=4 likewise), reading the
 *     survivors once for both;
 *   - a serving array picks up a spare added while a recovery runs;
 *   - idle stops a recovery that md starts again; frozen keeps it stopped
 *     until idle thaws it;
 *   - md's fail/remove/add loop, cycle after cycle, with no phantom entry;
 *   - a re-added member (write-intent bitmap) is rebuilt only where the
 *     bitmap shows writes since it left;
 *   - the progress line before any speed was measured.
 * Prints its seed; URAID_TEST_SEED=N replays (thread scheduling aside). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array_fixture.h"
#include "harness.h"
#include "uraid_ctl.h"

static struct rng rng;
#define MEMBER_BYTES (8u << 20)

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Fails slot s the way a dying disk does: it vanishes, and the next write
 * to it fails it. */
static void lose_member(struct fx *f, struct uraid_array *a, int s)
{
    CHECK(uraid_inject(a, s, "vanish") == 0);
    uint8_t buf[4096];
    rng_fill(&rng, buf, sizeof buf);
    for (int d = 0; d < (f->level == 1 ? 1 : f->k); d++)
        CHECK(fx_write(f, a, buf, sizeof buf, f->level == 1 ? 0 : fx_at(f, 0, d, 0)) == 0);
}

static int degraded(struct uraid_array *a)
{
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    return info.degraded;
}

/* Waits (at most 20 s) until the array is whole and no job runs. */
static int await_whole(struct uraid_array *a)
{
    struct uraid_job_status st;
    for (int i = 0; i < 2000; i++) {
        uraid_job_status(a, &st);
        if (!st.running && degraded(a) == 0)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

/* ---- one recovery, two holes ------------------------------------------------------- */

static void test_two_holes(int level, int n, int s1, int s2)
{
    harness_beginf("recover: RAID-%d n=%d, slots %d and %d lost, two spares: whole after one recovery", level, n,
                   s1, s2);
    struct fx f;
    struct uraid_array *a;
    char sp[2][300];
    if (fx_setup(&f, level, n, 64u << 10, MEMBER_BYTES, &rng, 1, &a))
        goto out;
    if (fx_make_file(&f, "s0", sp[0], sizeof sp[0]) || fx_make_file(&f, "s1", sp[1], sizeof sp[1])) {
        uraid_close(a);
        goto out;
    }
    lose_member(&f, a, s1);
    lose_member(&f, a, s2);
    fx_add_spare(&f, a, sp[0]);
    fx_add_spare(&f, a, sp[1]);
    uraid_reset_counters(a);
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status st;
    if (fx_job(&f, a, URAID_JOB_RECOVER, &jp, &st) == 0) {
        CHECK(degraded(a) == 0, "%s: %d slots still not in sync after one recovery", f.label, degraded(a));
        CHECK(st.ntargets == 2 && st.targets[0] == s1 && st.targets[1] == s2, "%s: targets %d: %d %d", f.label,
              st.ntargets, st.targets[0], st.targets[1]);
        /* the survivors read once for both targets (RAID-1: one mirror) */
        struct uraid_counters c = fx_counters(a);
        uint64_t once = (uint64_t)(level == 1 ? 1 : n - 2) * st.total_sectors * 512;
        CHECK(c.member_read_bytes <= once + once / 20, "%s: %llu bytes read, the survivors hold %llu", f.label,
              (unsigned long long)c.member_read_bytes, (unsigned long long)once);
        fx_verify_all(&f, a, "after one recovery of two slots");
    }
    CHECK(uraid_close(a) == 0);
    fx_adopt(&f, s1, sp[0]);
    fx_adopt(&f, s2, sp[1]);
    if (level == 6) { /* two survivors left out: only the rebuilt members make it readable */
        unsigned omit = 0;
        for (int s = 0, k = 0; s < n && k < 2; s++)
            if (s != s1 && s != s2) {
                omit |= FX_SLOT(s);
                k++;
            }
        fx_verify_omitting(&f, omit, 0, "the rebuilt members with two others left out");
    } else
        for (int s = 0; s < n; s++)
            if (s != s1 && s != s2)
                fx_verify_omitting(&f, FX_SLOT(s), 0, "a rebuilt mirror with another left out");
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- serving: spares through the control socket --------------------------------------- */

struct served {
    struct fx f;
    struct uraid_array *a;
    struct uraid_ctl *c;
    char sock[320];
};

static int serve(struct served *s, int level, int n, struct uraid_open_params *op, int bitmap)
{
    struct uraid_array *a;
    int rc = bitmap ? fx_create_bitmap(&s->f, level, n, 64u << 10, MEMBER_BYTES, 512u << 10)
                    : fx_create(&s->f, level, n, 64u << 10, MEMBER_BYTES);
    if (rc || (rc = fx_open_with(&s->f, 0, "", NULL, 0, NULL, &a)) != 0)
        return rc ? rc : -EIO;
    fx_fill(&s->f, a, &rng);
    CHECK((rc = uraid_close(a)) == 0); /* a clean close: the bitmap starts clear */
    if (rc || (rc = fx_open_with(&s->f, 0, "", NULL, 0, op, &s->a)) != 0)
        return rc ? rc : -EIO;
    snprintf(s->sock, sizeof s->sock, "%s/ctl.sock", s->f.dir);
    char why[256];
    rc = uraid_ctl_start(s->a, s->sock, NULL, NULL, &s->c, why, sizeof why);
    CHECK(rc == 0, "control socket: %s", why);
    return rc;
}

static void unserve(struct served *s)
{
    if (s->c)
        uraid_ctl_stop(s->c);
    s->c = NULL;
}

/* One request; 0 when the answer starts with "ok" (the rest in resp). */
static int req(struct served *s, char *resp, size_t len, const char *fmt, const char *arg)
{
    char r[600];
    snprintf(r, sizeof r, fmt, arg);
    int rc = uraid_ctl_request(s->sock, r, resp, len);
    return rc ? rc : strncmp(resp, "ok", 2) ? -EIO : 0;
}

static void test_serving_two_holes(void)
{
    harness_begin("serving: RAID-1 n=4, two slots failed, two spares added (the second during the recovery): whole");
    struct served s = {0};
    struct uraid_open_params op = {.auto_rebuild = 1, .sync_speed_max_kib = 4096, .sync_speed_min_kib = 4096};
    char sp[2][300], resp[4096];
    if (serve(&s, 1, 4, &op, 0))
        goto out;
    fx_make_file(&s.f, "s0", sp[0], sizeof sp[0]);
    fx_make_file(&s.f, "s1", sp[1], sizeof sp[1]);
    CHECK(req(&s, resp, sizeof resp, "fail %s", s.f.path[1]) == 0, "fail: %s", resp);
    CHECK(req(&s, resp, sizeof resp, "fail %s", s.f.path[2]) == 0, "fail: %s", resp);
    CHECK(req(&s, resp, sizeof resp, "add %s", sp[0]) == 0, "add: %s", resp);
    struct uraid_job_status st;
    for (int i = 0; i < 200; i++) { /* the first recovery is under way */
        uraid_job_status(s.a, &st);
        if (st.running && st.done_sectors > 0)
            break;
        sleep_ms(10);
    }
    CHECK(st.running && st.kind == URAID_JOB_RECOVER, "no recovery after the first add (%s)", uraid_job_name(st.kind));
    CHECK(req(&s, resp, sizeof resp, "add %s", sp[1]) == 0, "second add: %s", resp);
    CHECK(await_whole(s.a), "not whole: %d slots degraded", degraded(s.a));
    CHECK(req(&s, resp, sizeof resp, "status%s", "") == 0 && strstr(resp, "[4/4] [UUUU]"), "status: %.300s", resp);
    fx_verify_all(&s.f, s.a, "after both spares were rebuilt in");
out:
    unserve(&s);
    if (s.a)
        CHECK(uraid_close(s.a) == 0);
    fx_destroy(&s.f);
    harness_end();
}

/* A serving RAID-6 that starts with two members gone and two spares:
 * one automatic recovery, both slots its targets, whole at the end. */
static void test_serving_raid6_two_holes(void)
{
    harness_begin("serving: RAID-6 n=6 opened with two members gone and two spares: whole after one recovery");
    struct fx f;
    struct uraid_array *a;
    char sp[2][300];
    if (fx_setup(&f, 6, 6, 64u << 10, MEMBER_BYTES, &rng, 0, &a))
        goto out;
    int ok = fx_make_file(&f, "s0", sp[0], sizeof sp[0]) == 0 && fx_make_file(&f, "s1", sp[1], sizeof sp[1]) == 0 &&
             fx_add_spare(&f, a, sp[0]) == 0 && fx_add_spare(&f, a, sp[1]) == 0;
    CHECK(uraid_close(a) == 0);
    const char *extra[2] = {sp[0], sp[1]};
    struct uraid_open_params op = {.auto_rebuild = 1};
    if (!ok || fx_open_with(&f, FX_SLOT(2) | FX_SLOT(3), NULL, extra, 2, &op, &a))
        goto out;
    CHECK(await_whole(a), "not whole: %d slots degraded", degraded(a));
    struct uraid_job_status st;
    uraid_job_status(a, &st);
    CHECK(st.kind == URAID_JOB_RECOVER && st.result == 0 && st.ntargets == 2 && st.targets[0] == 2 &&
              st.targets[1] == 3,
          "last job %s (result %d) with %d targets: one recovery should have filled slots 2 and 3",
          uraid_job_name(st.kind), st.result, st.ntargets);
    fx_verify_all(&f, a, "after the automatic recovery of two slots");
    CHECK(uraid_close(a) == 0);
    fx_adopt(&f, 2, sp[0]);
    fx_adopt(&f, 3, sp[1]);
    fx_verify_omitting(&f, FX_SLOT(0) | FX_SLOT(1), 0, "the rebuilt members with two others left out");
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- idle and frozen ------------------------------------------------------------------------ */

static void test_idle_frozen(void)
{
    harness_begin("serving: idle interrupts a recovery that starts again; frozen keeps it stopped until idle");
    struct served s = {0};
    struct uraid_open_params op = {.auto_rebuild = 1, .sync_speed_max_kib = 2048, .sync_speed_min_kib = 2048};
    char sp[300], resp[8192];
    if (serve(&s, 5, 4, &op, 0))
        goto out;
    fx_make_file(&s.f, "s0", sp, sizeof sp);
    CHECK(req(&s, resp, sizeof resp, "fail %s", s.f.path[2]) == 0, "fail: %s", resp);
    CHECK(req(&s, resp, sizeof resp, "add %s", sp) == 0, "add: %s", resp);
    struct uraid_job_status st = {0}; /* read by the loop condition before the first status */
    for (int i = 0; i < 300 && !(st.running && st.done_sectors * 8 >= st.total_sectors); i++) {
        sleep_ms(10);
        uraid_job_status(s.a, &st);
    }
    CHECK(req(&s, resp, sizeof resp, "idle%s", "") == 0, "idle: %s", resp);
    uraid_job_status(s.a, &st);
    uint64_t stopped = st.done_sectors;
    int again = 0;
    for (int i = 0; i < 200 && !again; i++) {
        sleep_ms(10);
        uraid_job_status(s.a, &st);
        again = st.running && st.kind == URAID_JOB_RECOVER;
    }
    CHECK(again, "the recovery did not start again after idle");
    CHECK(st.done_sectors >= stopped / 2, "restarted at %llu, stopped at %llu", (unsigned long long)st.done_sectors,
          (unsigned long long)stopped);
    CHECK(req(&s, resp, sizeof resp, "frozen%s", "") == 0, "frozen: %s", resp);
    sleep_ms(400);
    uraid_job_status(s.a, &st);
    CHECK(!st.running && st.frozen, "frozen: running %d frozen %d", st.running, st.frozen);
    CHECK(req(&s, resp, sizeof resp, "status%s", "") == 0 && strstr(resp, "background: frozen"), "status: %.2000s",
          resp);
    CHECK(degraded(s.a) == 1, "frozen: %d degraded", degraded(s.a));
    CHECK(req(&s, resp, sizeof resp, "idle%s", "") == 0, "idle (thaw): %s", resp);
    CHECK(await_whole(s.a), "not whole after the thaw: %d degraded", degraded(s.a));
    fx_verify_all(&s.f, s.a, "after idle, frozen and idle");
out:
    unserve(&s);
    if (s.a)
        CHECK(uraid_close(s.a) == 0);
    fx_destroy(&s.f);
    harness_end();
}

/* ---- fail, remove, add again; re-add with the bitmap ----------------------------------------- */

static void test_loop_and_readd(int level, int n, int bitmap)
{
    harness_beginf("serving: RAID-%d n=%d fail/remove/add of the same file, 4 cycles%s", level, n,
                   bitmap ? ", re-added with the bitmap: only dirty chunks rebuilt" : "");
    struct served s = {0};
    /* the bitmap daemon clears a chunk's bit after two idle periods of 20 ms */
    struct uraid_open_params op = {.auto_rebuild = 1, .bitmap_daemon_ms = 20};
    char resp[8192];
    if (serve(&s, level, n, &op, bitmap))
        goto out;
    for (int c = 0; c < 4; c++) {
        int slot = c % n;
        sleep_ms(200); /* the last cycle's writes are cleared from the bitmap */
        int rc = req(&s, resp, sizeof resp, "fail %s", s.f.path[slot]);
        if (rc == 0)
            rc = req(&s, resp, sizeof resp, "remove %s", s.f.path[slot]);
        /* a write while it is out: one 64 KiB piece, so one bitmap chunk */
        uint8_t buf[65536];
        rng_fill(&rng, buf, sizeof buf);
        uint64_t off = rng_below(&rng, s.f.size / sizeof buf) * sizeof buf;
        CHECK(fx_write(&s.f, s.a, buf, sizeof buf, off) == 0);
        if (rc == 0)
            rc = req(&s, resp, sizeof resp, "add %s", s.f.path[slot]);
        CHECK(rc == 0, "cycle %d: %s", c, resp);
        if (rc)
            break;
        CHECK(!bitmap || strstr(resp, "re-added to slot"), "cycle %d: add answered '%s'", c, resp);
        CHECK(bitmap || !strstr(resp, "re-added to slot"), "cycle %d: re-added without a bitmap: '%s'", c, resp);
        CHECK(await_whole(s.a), "cycle %d: not whole", c);
        struct uraid_job_status st;
        uraid_job_status(s.a, &st);
        if (bitmap)
            CHECK(st.worked_sectors > 0 && st.worked_sectors * 2 <= st.total_sectors,
                  "cycle %d: %llu of %llu sectors worked on", c, (unsigned long long)st.worked_sectors,
                  (unsigned long long)st.total_sectors);
        else
            CHECK(st.worked_sectors == st.total_sectors, "cycle %d: full rebuild worked %llu of %llu", c,
                  (unsigned long long)st.worked_sectors, (unsigned long long)st.total_sectors);
        /* no phantom: the file is listed once, in its slot */
        static struct uraid_array_info info;
        uraid_get_info(s.a, &info);
        int seen = 0;
        for (int i = 0; i < info.nmembers; i++)
            seen += !strcmp(info.member[i].path, s.f.path[slot]);
        CHECK(seen == 1 && info.nmembers == n, "cycle %d: %s listed %d times, %d entries", c, s.f.path[slot], seen,
              info.nmembers);
    }
    fx_verify_all(&s.f, s.a, "after the cycles");
    unserve(&s);
    CHECK(uraid_close(s.a) == 0);
    s.a = NULL;
    for (int c = 0; c < 4 && c < n; c++)
        fx_verify_without_others(&s.f, c, level == 6 ? 2 : 1, "each re-added member with others left out");
out:
    unserve(&s);
    if (s.a)
        uraid_close(s.a);
    fx_destroy(&s.f);
    harness_end();
}

/* ---- the progress line ---------------------------------------------------------------------- */

static void test_progress_line(void)
{
    harness_begin("progress line: no speed or finish time before one was measured");
    struct uraid_job_status st = {.kind = URAID_JOB_RECOVER, .running = 1, .done_sectors = 1000,
                                  .total_sectors = 100000};
    char line[256];
    uraid_job_progress_line(&st, line, sizeof line);
    CHECK(!strstr(line, "speed=") && !strstr(line, "finish=") && strstr(line, "recovery = 1.0%"), "'%s'", line);
    st.speed_kib = 5000;
    uraid_job_progress_line(&st, line, sizeof line);
    CHECK(strstr(line, "speed=5000K/sec") && strstr(line, "finish=0.2min"), "'%s'", line);
    harness_end();
}

int main(int argc, char **argv)
{
    fx_log_from_env();
    harness_init(argc, argv, "test_recovery");
    rng_seed(&rng, harness_seed());
    test_progress_line();
    test_two_holes(6, 6, 1, 4);
    test_two_holes(6, 6, 0, 5);
    test_two_holes(1, 4, 1, 2);
    test_serving_two_holes();
    test_serving_raid6_two_holes();
    test_idle_frozen();
    test_loop_and_readd(1, 2, 0);
    test_loop_and_readd(5, 4, 1);
    test_loop_and_readd(6, 6, 1);
    test_loop_and_readd(1, 3, 1);
    return harness_finish();
}
