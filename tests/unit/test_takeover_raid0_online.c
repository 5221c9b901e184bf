/* A served RAID-4, or RAID-5 in the parity-last layout, taken over as a
 * RAID-0 of its data members (lib/array/grow_takeover_online.c, md's
 * raid0_takeover_raid45 on a running array, as mdadm --grow --level=0
 * does it): a whole RAID-5 parity-last of 4 with writer threads writing
 * and reading back during the change, a whole RAID-4 of 4, and a RAID-4
 * missing only its parity member. After each: a RAID-0 of 3 of the same
 * size, every byte the model's, the same after a reopen with the data
 * members, and with every member (the parity member then a spare at the
 * array's events). Refusals (another layout, another count, a new member,
 * a chunk or layout, a write-intent bitmap, a PPL, a data member missing,
 * read-only, a job running) write nothing: every member byte for byte. The
 * parity member's superblock write cut off (a child exits after the
 * switch, the parity member's old superblock put back): the open takes
 * the RAID-0 with it a spare, every byte. A kill -9 at a seeded moment
 * around the switch under a writer: the next open serves RAID-5 or RAID-0,
 * every acknowledged byte (the write in flight old or new). And a kill -9
 * at a seeded moment while the level goes 5 -> 0 -> 5 -> 0 ... (RAID-0
 * back to a RAID-5 missing its parity, grow_takeover_raid0.c) under a
 * writer: the open takes whichever level the newest superblock says,
 * every acknowledged byte. Seeded (printed by the harness). */
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

#define NM 4
#define BLK 4096
#define MEMBER_BYTES (8u << 20)
#define PARITY_LAST 5 /* md's ALGORITHM_PARITY_N */

struct setup {
    char dir[128], path[NM + 1][160];
    const char *paths[NM + 1];
    uint8_t *model; /* shared with a child */
    uint64_t bytes;
    struct fx_inflight *pend; /* the child's write in flight: either content may be on the members */
};

/* NM members (the paths given, "missing" allowed) at level, layout, policy; the data written. */
static int make_setup(struct setup *s, int level, int layout, int policy, const char *const *paths, struct rng *r)
{
    char why[300];
    int rc = fx_tmpdir(s->dir, sizeof s->dir, "tk0");
    if (rc || (rc = fx_member_files(s->dir, s->path, s->paths, NM + 1, NULL, MEMBER_BYTES)))
        return rc;
    const char *given[NM];
    int n = 0;
    for (int i = 0; i < NM; i++)
        given[i] = paths && paths[i] ? paths[i] : s->paths[i];
    struct uraid_create_params cp = {.level = level, .raid_devices = NM, .layout = layout, .chunk_bytes = 64u << 10,
                                     .assume_clean = 1, .consistency_policy = policy};
    rc = uraid_create(given, NM, &cp, 1, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    const char *present[NM];
    for (int i = 0; i < NM; i++)
        if (strcmp(given[i], "missing"))
            present[n++] = given[i];
    if (rc == 0)
        rc = fx_open_fill(present, n, 0, r, &s->model, &s->bytes, why, sizeof why);
    if (s->model)
        s->pend = fx_shared_map(sizeof *s->pend);
    CHECK(rc == 0, "open: %s", why);
    return rc;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i <= NM; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    fx_shared_free(s->model, s->bytes);
    fx_shared_free(s->pend, sizeof *s->pend);
}

static uint8_t *snapshot(const struct setup *s)
{
    return fx_files_snapshot(s->paths, NM + 1, NULL, MEMBER_BYTES, NULL);
}

/* The array's bytes are the model's (the pending write's blocks either way). */
static void check_bytes(struct uraid_array *a, const struct setup *s, const char *what)
{
    fx_check_model(a, s->model, s->bytes, s->pend, what);
}

/* A RAID-0 of NM - 1 of the old size; `spares` members outside the slots, every one at the array's events. */
static void check_raid0(struct uraid_array *a, const struct setup *s, int spares, int opened, const char *what)
{
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    int same = 1, insync = 0, spare = 0;
    for (int i = 0; i < info.nmembers; i++) {
        same &= info.member[i].events == info.events;
        insync += info.member[i].slot >= 0 && info.member[i].state == URAID_MEMBER_IN_SYNC;
        spare += info.member[i].slot < 0 && info.member[i].state == URAID_MEMBER_SPARE;
    }
    CHECK(info.level == 0 && info.raid_devices == NM - 1 && insync == NM - 1 && spare == spares && same &&
          info.size_bytes == s->bytes && (info.clean || !opened),
          "%s: RAID-%d of %d (%d in sync, %d spares, events alike %d, clean %d), %llu bytes (expected RAID-0 of %d, "
          "%d spares, %llu bytes)", what, info.level, info.raid_devices, insync, spare, same, info.clean,
          (unsigned long long)info.size_bytes, NM - 1, spares, (unsigned long long)s->bytes);
    check_bytes(a, s, what);
}

/* Reopened with the data members, then with every member (the parity member a spare when it took part). */
static void reopen_both(const struct setup *s, int parity_spare, const char *what)
{
    char why[400], name[200];
    struct uraid_array *a = NULL;
    int rc = uraid_open(s->paths, NM - 1, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "%s: reopen the data members: %s", what, why);
    snprintf(name, sizeof name, "%s, reopened", what);
    if (rc == 0) {
        check_raid0(a, s, 0, 1, name);
        uraid_close(a);
    }
    if (!parity_spare)
        return;
    rc = uraid_open(s->paths, NM, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "%s: reopen every member: %s", what, why);
    snprintf(name, sizeof name, "%s, reopened with the parity member", what);
    if (rc == 0) {
        check_raid0(a, s, 1, 1, name);
        uraid_close(a);
    }
}

static int to_raid0(struct uraid_array *a, char *why, size_t whylen)
{
    return uraid_grow_online_level(a, 0, 0, 0, NULL, NULL, 0, why, whylen);
}

/* level/layout whole, with writers when `writers`; or (paths) created with the parity slot missing. */
static void change_case(int level, int layout, const char *const *paths, int writers, struct rng *r, uint64_t seed)
{
    struct setup s = {0};
    harness_beginf("RAID-%d %s%s -> RAID-0 while it serves%s", level, level == 5 ? "parity-last " : "",
                   paths ? "missing its parity member" : "whole", writers ? ", with writers" : "");
    int rc = make_setup(&s, level, layout, URAID_POLICY_RESYNC, paths, r);
    char why[400];
    struct uraid_array *a = NULL;
    int nopen = paths ? NM - 1 : NM;
    if (rc == 0 && (rc = uraid_open(s.paths, nopen, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        enum { NW = 3 };
        struct fx_writer w[NW];
        pthread_t t[NW];
        int stop = 0, failures = 0, nw = writers ? NW : 0;
        uint64_t slice = s.bytes / NW / BLK * BLK;
        for (int i = 0; i < nw; i++)
            w[i] = (struct fx_writer){.a = a, .model = s.model, .lo = slice * (uint64_t)i,
                                      .hi = slice * (uint64_t)(i + 1), .seed = seed + (uint64_t)i, .stop = &stop};
        fx_writers_start(w, t, nw);
        for (int i = 0; i < nw; i++)
            while (__atomic_load_n(&w[i].rounds, __ATOMIC_RELAXED) < 20)
                usleep(1000);
        rc = to_raid0(a, why, sizeof why);
        CHECK(rc == 0, "--level 0: %s", why);
        fx_writers_wait(w, nw, 20); /* every writer goes on at the new level */
        failures = fx_writers_stop(w, t, nw, &stop);
        CHECK(failures == 0, "%d writes or read-backs failed", failures);
        check_raid0(a, &s, paths ? 0 : 1, 0, "taken over"); /* (served: never marked dirty, recorded clean) */
        rc = to_raid0(a, why, sizeof why);
        CHECK(rc != 0, "--level 0 again on the RAID-0: accepted");
        CHECK(uraid_close(a) == 0);
        reopen_both(&s, !paths, "taken over");
    }
    drop_setup(&s);
    harness_end();
}

/* A --level 0 refused (fx_refuse_level's check and message). */
static void refuse(struct uraid_array *a, int N, uint32_t chunk, const char *layout, const char *const *added,
                   int nadd, int want, const char *text)
{
    fx_refuse_level(a, 0, N, chunk, layout, added, nadd, want, text);
}

/* One array (level, layout, policy, paths) refused as `ask` asks, then read-only; nothing written. */
static void refuse_on(int level, int layout, int policy, const char *const *paths, struct rng *r,
                      void (*ask)(struct uraid_array *, struct setup *))
{
    struct setup s = {0};
    char why[400];
    int rc = make_setup(&s, level, layout, policy, paths, r), n = paths ? NM - 1 : NM;
    const char *const *open_paths = paths && !strcmp(paths[0], "missing") ? s.paths + 1 : s.paths;
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(open_paths, n, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    uint8_t *before = rc == 0 ? snapshot(&s) : NULL;
    if (rc == 0) {
        ask(a, &s);
        CHECK(uraid_close(a) == 0);
        struct uraid_open_params ro = {.readonly = 1};
        if ((rc = uraid_open(open_paths, n, &ro, &a, why, sizeof why)) == 0) {
            refuse(a, 0, 0, NULL, NULL, 0, -EROFS, "read-only");
            uraid_close(a);
        }
        CHECK(rc == 0, "open read-only: %s", why);
        uint8_t *after = snapshot(&s);
        CHECK(before && after && !memcmp(before, after, (NM + 1ull) * MEMBER_BYTES),
              "a refused --level 0 changed a member");
        free(after);
    }
    free(before);
    drop_setup(&s);
}

static void ask_plain(struct uraid_array *a, struct setup *s)
{
    refuse(a, NM, 0, NULL, NULL, 0, -EINVAL, "into a RAID-0 of 3");
    refuse(a, 0, 0, NULL, s->paths + NM, 1, -EINVAL, "and no new member");
    refuse(a, 0, 256, NULL, NULL, 0, -EOPNOTSUPP, "in two runs");
    refuse(a, 0, 0, "parity-last", NULL, 0, -EOPNOTSUPP, "in two runs");
    char why[300];
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "check: %s", why);
    refuse(a, 0, 0, NULL, NULL, 0, -EBUSY, "");
    struct uraid_job_status st;
    uraid_job_cancel(a);
    uraid_job_wait(a, &st);
}

static void ask_layout(struct uraid_array *a, struct setup *s)
{
    (void)s;
    refuse(a, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "only a parity-last RAID-5");
}

static void ask_bitmap(struct uraid_array *a, struct setup *s)
{
    (void)s;
    refuse(a, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "write-intent bitmap");
}

static void ask_ppl(struct uraid_array *a, struct setup *s)
{
    (void)s;
    refuse(a, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "partial parity log");
}

static void ask_data_missing(struct uraid_array *a, struct setup *s)
{
    (void)s;
    refuse(a, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "slot 0 (a data member) is not in sync");
}

static void refusals(struct rng *r)
{
    harness_begin("refused RAID-4/5 -> RAID-0 takeovers write nothing");
    const char *first_missing[NM] = {"missing", NULL, NULL, NULL};
    refuse_on(4, -1, URAID_POLICY_RESYNC, NULL, r, ask_plain);
    refuse_on(5, 2, URAID_POLICY_RESYNC, NULL, r, ask_layout);
    refuse_on(4, -1, URAID_POLICY_BITMAP, NULL, r, ask_bitmap);
    refuse_on(5, PARITY_LAST, URAID_POLICY_PPL, NULL, r, ask_ppl);
    refuse_on(4, -1, URAID_POLICY_RESYNC, first_missing, r, ask_data_missing);
    harness_end();
}

static void cut_off(struct rng *r)
{
    harness_begin("RAID-5 parity-last -> RAID-0 cut off before the parity member's superblock: the open");
    struct setup s = {0};
    char why[400];
    uint8_t old_sb[4096];
    int rc = make_setup(&s, 5, PARITY_LAST, URAID_POLICY_RESYNC, NULL, r);
    if (rc == 0 && (rc = fx_sb_area(s.paths[NM - 1], old_sb, 0)) == 0) {
        pid_t child = fork();
        if (child == 0) { /* the switch, then gone without a close */
            struct uraid_array *a = NULL;
            if (uraid_open(s.paths, NM, NULL, &a, why, sizeof why) || to_raid0(a, why, sizeof why))
                _exit(3);
            _exit(0);
        }
        int wst = 0;
        waitpid(child, &wst, 0);
        CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "the child's switch (status %d)", WEXITSTATUS(wst));
        rc = fx_sb_area(s.paths[NM - 1], old_sb, 1); /* the parity member missed its write */
    }
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, NM, NULL, &a, why, sizeof why)) == 0) {
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        int spare = 0;
        for (int i = 0; i < info.nmembers; i++)
            spare += info.member[i].slot < 0 && info.member[i].state == URAID_MEMBER_SPARE &&
                     info.member[i].events + 1 == info.events;
        CHECK(info.level == 0 && info.raid_devices == NM - 1 && spare == 1 && info.size_bytes == s.bytes,
              "after the cut-off: RAID-%d of %d, %d spare one event behind", info.level, info.raid_devices, spare);
        check_bytes(a, &s, "after the cut-off");
        uraid_close(a);
    }
    CHECK(rc == 0, "open after the cut-off: %s", why);
    if (rc == 0 && (rc = fx_sb_area(s.paths[NM - 1], old_sb, 1)) == 0) { /* the offline grow heals it */
        struct uraid_grow_params gp = {.level_set = 1, .level = 0};
        struct uraid_grow_result res;
        rc = uraid_grow_members(s.paths, NM, NULL, 0, &gp, &res, why, sizeof why);
        CHECK(rc == 0 && res.level == 0, "the offline --level 0 after the cut-off: %d %s", rc, why);
        reopen_both(&s, 1, "healed by the offline grow");
    }
    drop_setup(&s);
    harness_end();
}

/* The child: a writer, the switch after `before_us`, SIGKILL `after_us` later (or at once). */
static void child_run(struct setup *s, uint64_t seed, unsigned before_us, unsigned after_us)
{
    char why[400];
    struct uraid_array *a = NULL;
    if (uraid_open(s->paths, NM, NULL, &a, why, sizeof why))
        _exit(3);
    struct fx_killer k = {.a = a, .model = s->model, .bytes = s->bytes, .seed = seed, .pend = s->pend};
    fx_kill_writer_start(&k);
    usleep(before_us);
    if (to_raid0(a, why, sizeof why))
        _exit(5);
    usleep(after_us);
    raise(SIGKILL);
    _exit(6);
}

static void killed(struct rng *r, uint64_t seed)
{
    unsigned before_us = (unsigned)rng_below(r, 3000), after_us = (unsigned)rng_below(r, 3) * (unsigned)rng_below(r, 5000);
    harness_beginf("kill -9 %u us after a RAID-5 parity-last -> RAID-0 switch (%u us into writes): the open, the "
                   "offline grow", after_us, before_us);
    struct setup s = {0};
    char why[400];
    int rc = make_setup(&s, 5, PARITY_LAST, URAID_POLICY_RESYNC, NULL, r);
    pid_t child = rc == 0 ? fork() : -1;
    if (child == 0)
        child_run(&s, seed, before_us, after_us);
    if (child > 0) {
        int wst = 0;
        waitpid(child, &wst, 0);
        CHECK(WIFSIGNALED(wst), "the child was not killed (status %d)", WEXITSTATUS(wst));
        struct uraid_array *a = NULL;
        struct uraid_open_params op = {.force = 1};
        rc = uraid_open(s.paths, NM, &op, &a, why, sizeof why);
        CHECK(rc == 0, "open after the kill: %s", why);
        if (rc == 0) {
            struct uraid_array_info info;
            uraid_get_info(a, &info);
            CHECK(info.level == 0 && info.raid_devices == NM - 1, "after the kill: RAID-%d of %d", info.level,
                  info.raid_devices);
            check_bytes(a, &s, "opened after the kill");
            CHECK(uraid_close(a) == 0);
            reopen_both(&s, 1, "after the kill");
        }
    }
    drop_setup(&s);
    harness_end();
}

/* The child: a writer, the level switched 5 -> 0 -> 5 -> 0 ... (the RAID-5
 * missing its parity after the first round) until SIGKILL after delay_us. */
static void toggle_run(struct setup *s, uint64_t seed, unsigned delay_us)
{
    char why[400];
    struct uraid_array *a = NULL;
    if (uraid_open(s->paths, NM, NULL, &a, why, sizeof why))
        _exit(3);
    struct fx_killer k = {.a = a, .model = s->model, .bytes = s->bytes, .seed = seed, .pend = s->pend};
    fx_kill_writer_start(&k);
    fx_switch_levels_until_killed(a, 0, 5, seed, delay_us);
}

static void killed_toggling(struct rng *r, uint64_t seed)
{
    unsigned delay_us = 2000 + (unsigned)rng_below(r, 60000);
    harness_beginf("kill -9 %u us into switching RAID-5 parity-last <-> RAID-0 under a writer: the open", delay_us);
    struct setup s = {0};
    char why[400];
    int rc = make_setup(&s, 5, PARITY_LAST, URAID_POLICY_RESYNC, NULL, r);
    pid_t child = rc == 0 ? fork() : -1;
    if (child == 0)
        toggle_run(&s, seed, delay_us);
    if (child > 0) {
        int wst = 0;
        waitpid(child, &wst, 0);
        CHECK(WIFSIGNALED(wst), "the child was not killed (status %d)", WEXITSTATUS(wst));
        struct uraid_array *a = NULL;
        struct uraid_open_params op = {.force = 1}; /* (a dirty RAID-5 missing its parity: md wants it forced too) */
        rc = uraid_open(s.paths, NM, &op, &a, why, sizeof why);
        CHECK(rc == 0, "open after the kill: %s", why);
        if (rc == 0) {
            struct uraid_array_info info;
            uraid_get_info(a, &info);
            int data = 0;
            for (int i = 0; i < info.nmembers; i++)
                data += info.member[i].slot >= 0 && info.member[i].slot < NM - 1 &&
                        info.member[i].state == URAID_MEMBER_IN_SYNC;
            CHECK((info.level == 0 && info.raid_devices == NM - 1) || (info.level == 5 && info.raid_devices == NM),
                  "after the kill: RAID-%d of %d", info.level, info.raid_devices);
            CHECK(data == NM - 1 && info.size_bytes == s.bytes, "after the kill: %d data members in sync, %llu bytes",
                  data, (unsigned long long)info.size_bytes);
            check_bytes(a, &s, "opened after the kill");
            uraid_close(a);
        }
    }
    drop_setup(&s);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "takeover_raid0_online");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    const char *parity_missing[NM] = {NULL, NULL, NULL, "missing"};
    change_case(5, PARITY_LAST, NULL, 1, &r, seed);
    change_case(4, -1, NULL, 0, &r, seed);
    change_case(4, -1, parity_missing, 1, &r, seed);
    refusals(&r);
    cut_off(&r);
    killed(&r, seed);
    killed(&r, seed + 1);
    killed_toggling(&r, seed);
    killed_toggling(&r, seed + 1);
    return harness_finish();
}
