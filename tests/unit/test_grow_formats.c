/* RAID-1 and linear arrays gaining members with metadata 0.90 and 1.0,
 * whose superblocks sit at each member's end (a new member's at its own
 * end, after as much data as the others keep), offline and served:
 *   - RAID-1 2 -> 3 offline: the new mirror recovered, every byte on it,
 *     mdadm --examine sees 3 raid devices and it active;
 *   - the same grow killed (-9) in the new mirror's recovery: the members
 *     open with the new one *not* in sync (0.90 records no recovery
 *     offset: md writes a member being recovered as a spare in every
 *     superblock, and so must uraid, or a half-filled mirror would be read
 *     as in sync), every byte reads back, and a rebuild finishes it;
 *   - linear 2 -> 3 offline: bigger by the new member's data area, the old
 *     bytes as they were;
 *   - served: RAID-1 2 -> 3 and linear 2 -> 3 through uraid_grow_online.
 * Seeded (URAID_TEST_SEED replays). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"
#include "uraid_grow.h"

#define MEMBER (8u << 20)

static struct rng rng;

/* The members as paths: f's n, then extra. */
static int member_paths(struct fx *f, const char *extra, const char **paths)
{
    for (int i = 0; i < f->n; i++)
        paths[i] = f->path[i];
    if (extra)
        paths[f->n] = extra;
    return f->n + (extra != NULL);
}

/* mdadm --examine of path shows n raid devices and the member active. */
static void examine_active(const char *path, int n, const char *fmt, const char *what)
{
    char cmd[512], out[8192];
    snprintf(cmd, sizeof cmd, "mdadm --examine '%s' 2>&1", path);
    int st = harness_run(cmd, out, sizeof out);
    char want[64];
    snprintf(want, sizeof want, "Raid Devices : %d", n);
    CHECK(st == 0 && strstr(out, want), "%s: mdadm --examine shows '%s': %s", what, want, out);
    const char *active = !strcmp(fmt, "0.90") ? "active sync" : "Active device";
    char *this_line = !strcmp(fmt, "0.90") ? strstr(out, "\nthis ") : strstr(out, "Device Role");
    char *eol = this_line ? strchr(this_line + 1, '\n') : NULL;
    if (eol)
        *eol = 0;
    CHECK(this_line && strstr(this_line, active), "%s: mdadm --examine shows the new member %s", what, active);
}

/* fx_open_grown, closed again. */
static void verify(struct fx *f, const char **paths, int n, uint64_t old_bytes, int want_degraded, const char *what)
{
    struct uraid_array *a = fx_open_grown(paths, n, f->model, old_bytes, want_degraded, what);
    if (a)
        uraid_close(a);
}

static int setup(struct fx *f, const char *fmt, int level, char *added, size_t len)
{
    fx_metadata = fmt;
    int rc = fx_setup(f, level, 2, 64u << 10, MEMBER, &rng, 0, NULL);
    fx_metadata = NULL;
    if (rc)
        return rc;
    snprintf(f->label, sizeof f->label, "%s %s", level == 1 ? "RAID-1" : "linear", fmt);
    /* a new member a little bigger than the others: its superblock's place differs */
    rc = fx_make_file(f, "m2.img", added, len);
    if (rc == 0)
        rc = fx_file_of_size(added, MEMBER + (1u << 20));
    return rc;
}

static void test_offline(const char *fmt, int level)
{
    struct fx f;
    char added[300], what[160];
    if (setup(&f, fmt, level, added, sizeof added))
        return;
    snprintf(what, sizeof what, "%s 2 -> 3 offline", f.label);
    const char *paths[4];
    member_paths(&f, added, paths);
    char why[512];
    struct uraid_grow_params p = {.raid_devices = 3};
    int rc = uraid_grow_members(paths, 2, paths + 2, 1, &p, NULL, why, sizeof why);
    CHECK(rc == 0, "%s: grow: %s", what, why);
    if (rc == 0) {
        verify(&f, paths, 3, f.size, 0, what);
        examine_active(added, 3, fmt, what);
    }
    fx_destroy(&f);
}

/* The grow in a child on slowed members, killed in the recovery. */
static void test_killed(const char *fmt)
{
    struct fx f;
    char added[300], what[160];
    if (setup(&f, fmt, 1, added, sizeof added))
        return;
    snprintf(what, sizeof what, "%s 2 -> 3 killed in the recovery", f.label);
    const char *paths[4], *sim[4] = {"throttle=8M", "throttle=8M", "throttle=8M", NULL};
    member_paths(&f, added, paths);
    pid_t pid = fork();
    if (pid == 0) {
        char why[512];
        struct uraid_grow_params p = {.raid_devices = 3, .member_sim = sim};
        _exit(uraid_grow_members(paths, 2, paths + 2, 1, &p, NULL, why, sizeof why) ? 1 : 0);
    }
    /* the recovery of 8 MiB at 8 MB/s takes about a second: kill it halfway */
    struct timespec ts = {0, 400 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st), "%s: the grow was still running when killed (status %d)", what, st);
    /* the new mirror is not in sync: one slot to recover */
    verify(&f, paths, 3, f.size, 1, what);
    struct uraid_array *a = NULL;
    char why[512];
    int rc = uraid_open(paths, 3, NULL, &a, why, sizeof why);
    struct uraid_job_status js;
    if (rc == 0) {
        rc = fx_job(&f, a, URAID_JOB_RECOVER, &(struct uraid_job_params){.slot = -1}, &js);
        uraid_close(a);
    }
    CHECK(rc == 0, "%s: the recovery carried on: %d %s", what, rc, why);
    verify(&f, paths, 3, f.size, 0, what);
    examine_active(added, 3, fmt, what);
    fx_destroy(&f);
}

static void test_served(const char *fmt, int level)
{
    struct fx f;
    char added[300], what[160];
    if (setup(&f, fmt, level, added, sizeof added))
        return;
    snprintf(what, sizeof what, "%s 2 -> 3 served", f.label);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    CHECK(a != NULL, "%s: open", what);
    if (!a)
        return;
    char why[512];
    const char *add[] = {added};
    int rc = uraid_grow_online(a, 3, add, 1, why, sizeof why);
    CHECK(rc == 0, "%s: grow: %s", what, why);
    struct uraid_job_status js;
    if (rc == 0 && level == 1) /* the new mirror's recovery */
        rc = fx_job_wait(&f, a, &js);
    CHECK(rc == 0, "%s: %d %s", what, rc, why);
    uraid_close(a);
    const char *paths[4];
    member_paths(&f, added, paths);
    if (rc == 0) {
        verify(&f, paths, 3, f.size, 0, what);
        examine_active(added, 3, fmt, what);
    }
    fx_destroy(&f);
}

/* Served level changes that move no data, on a filled array of n members
 * of `level`; each step's level must be reached and every byte read back. */
struct step {
    int level, layout_6, add;  /* layout_6: ask for left-symmetric-6 (md's --layout=preserve) */
    int want_level, want_members;
};

static void test_served_levels(const char *fmt, int level, int n, const struct step *steps, int nsteps,
                               const char *name)
{
    struct fx f;
    fx_metadata = fmt;
    int rc = fx_setup(&f, level, n, 64u << 10, MEMBER, &rng, 0, NULL);
    fx_metadata = NULL;
    if (rc)
        return;
    char added[300], what[200];
    snprintf(f.label, sizeof f.label, "%s %s", fmt, name);
    rc = fx_make_file(&f, "new.img", added, sizeof added);
    struct uraid_array *a = rc ? NULL : fx_open(&f, NULL, 0, 0);
    CHECK(a != NULL, "%s: open", f.label);
    int members = n;
    for (int i = 0; a && i < nsteps; i++) {
        const struct step *st = &steps[i];
        char why[512];
        const char *add[] = {added};
        snprintf(what, sizeof what, "%s: step %d (to RAID-%d)", f.label, i + 1, st->level);
        rc = uraid_grow_online_level(a, st->level, 0, 0, st->layout_6 ? "left-symmetric-6" : NULL, add, st->add, why,
                                     sizeof why);
        CHECK(rc == 0, "%s: %s", what, why);
        if (rc)
            break;
        struct uraid_job_status js;
        fx_job_wait(&f, a, &js); /* a recovery of the new member, if any */
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        members = info.raid_devices;
        CHECK(info.level == st->want_level && members == st->want_members && info.degraded == 0,
              "%s: RAID-%d of %d, %d not in sync (want RAID-%d of %d)", what, info.level, members, info.degraded,
              st->want_level, st->want_members);
        fx_check_model(a, f.model, f.size, NULL, what);
    }
    if (a)
        uraid_close(a);
    /* reopened from the superblocks alone: the new member is among them when one was added */
    const char *paths[FX_MAXM];
    int np = member_paths(&f, members > n ? added : NULL, paths);
    struct uraid_array *b = NULL;
    char why[512];
    rc = uraid_open(paths, np, NULL, &b, why, sizeof why);
    CHECK(rc == 0, "%s: reopen: %s", f.label, why);
    if (rc == 0) {
        fx_check_model(b, f.model, f.size, NULL, f.label);
        uraid_close(b);
    }
    fx_destroy(&f);
}

/* RAID-5 -> RAID-6 in the RAID-5 layout restripes: refused on 0.90 and
 * 1.0 with one line, every member byte for byte as before. */
static void test_served_restripe_refused(const char *fmt)
{
    struct fx f;
    fx_metadata = fmt;
    int rc = fx_setup(&f, 5, 4, 64u << 10, MEMBER, &rng, 0, NULL);
    fx_metadata = NULL;
    if (rc)
        return;
    snprintf(f.label, sizeof f.label, "%s RAID-5 -> RAID-6 restripe served", fmt);
    char added[300];
    fx_make_file(&f, "new.img", added, sizeof added);
    const char *paths[FX_MAXM];
    int np = member_paths(&f, added, paths);
    uint64_t sizes[FX_MAXM];
    for (int i = 0; i < np; i++)
        sizes[i] = MEMBER;
    uint8_t *before = fx_files_snapshot(paths, np, sizes, 0, NULL);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (a) {
        const char *add[] = {added};
        fx_refuse_level(a, 6, 0, 0, NULL, add, 1, -EOPNOTSUPP, "backup file");
        uraid_close(a);
    }
    uint8_t *after = fx_files_snapshot(paths, np, sizes, 0, NULL);
    CHECK(before && after && !memcmp(before, after, (size_t)np * MEMBER), "%s: every member byte for byte as before",
          f.label);
    free(before);
    free(after);
    fx_destroy(&f);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_grow_formats");
    fx_log_from_env();
    rng_seed(&rng, harness_seed());
    const char *fmts[] = {"0.90", "1.0"};
    for (int i = 0; i < 2; i++) {
        harness_beginf("RAID-1 %s 2 -> 3 offline", fmts[i]);
        test_offline(fmts[i], 1);
        harness_end();
        harness_beginf("RAID-1 %s 2 -> 3 killed in the new mirror's recovery", fmts[i]);
        test_killed(fmts[i]);
        harness_end();
        harness_beginf("linear %s 2 -> 3 offline", fmts[i]);
        test_offline(fmts[i], LAYOUT_LEVEL_LINEAR);
        harness_end();
        harness_beginf("RAID-1 %s 2 -> 3 served", fmts[i]);
        test_served(fmts[i], 1);
        harness_end();
        harness_beginf("linear %s 2 -> 3 served", fmts[i]);
        test_served(fmts[i], LAYOUT_LEVEL_LINEAR);
        harness_end();
        static const struct step mirror[] = {{5, 0, 0, 5, 2}, {1, 0, 0, 1, 2}};
        harness_beginf("%s served RAID-1 of 2 -> RAID-5 -> RAID-1", fmts[i]);
        test_served_levels(fmts[i], 1, 2, mirror, 2, "RAID-1 of 2 -> 5 -> 1");
        harness_end();
        static const struct step to6[] = {{6, 1, 1, 6, 5}, {5, 0, 0, 5, 4}};
        harness_beginf("%s served RAID-5 of 4 -> RAID-6 of 5 (left-symmetric-6, Q recovered) -> RAID-5", fmts[i]);
        test_served_levels(fmts[i], 5, 4, to6, 2, "RAID-5 of 4 -> 6 -> 5");
        harness_end();
        static const struct step from0[] = {{5, 0, 1, 5, 4}, {0, 0, 0, 0, 3}};
        harness_beginf("%s served RAID-0 of 3 -> RAID-5 of 4 (parity recovered) -> RAID-0", fmts[i]);
        test_served_levels(fmts[i], 0, 3, from0, 2, "RAID-0 of 3 -> 5 -> 0");
        harness_end();
        harness_beginf("%s served RAID-5 -> RAID-6 restripe: refused, nothing written", fmts[i]);
        test_served_restripe_refused(fmts[i]);
        harness_end();
    }
    return harness_finish();
}
