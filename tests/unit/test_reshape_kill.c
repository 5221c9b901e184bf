/* kill -9 at random moments of every offline reshape kind: a child process
 * runs the grow on members slowed to 20 MB/s (so a grow takes about half a
 * second), the parent kills it with SIGKILL after a random delay from the
 * trial's seed, then runs the same grow again, which must carry the
 * reshape on from its checkpoint (or find it finished), and the array must
 * read back every byte it kept, zeros in the new space, and check clean.
 * The kinds: RAID-5 4 -> 5, RAID-6 5 -> 6, RAID-5 4 -> RAID-6 5, a chunk
 * and layout change, RAID-0 3 -> RAID-5 4, RAID-0 3 -> 5 and a RAID-0's chunk change (mdadm's way,
 * through a RAID-4 missing its parity), and the shrinks RAID-5 5 -> 4 and
 * RAID-6 6 -> 5 with a chunk change. tests/unit/test_reshape.c puts a
 * power cut at every member write of the same kinds; this is the process
 * death at any instant, between and inside member writes.
 *
 * Trials per kind: 2 in make check, 50 with URAID_TEST_LONG=1 (make
 * check-long), or URAID_RESHAPE_TRIALS. The seed is printed; URAID_TEST_SEED
 * replays the kill moments (the grow's own timing varies from run to run,
 * so a replay kills at the same delay, not always in the same write).
 * A table at the end: per kind, trials, kills that fell inside the grow,
 * and trials that lost data or left parity mismatches. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "uraid.h"
#include "uraid_grow.h"

#define MEMBER_BYTES (4u << 20)
#define MAXM 8
#define SLOW "throttle=20M"

struct kind {
    const char *name;
    int level, nold, nnew, nend;
    uint32_t create_chunk_kib;  /* 0: 64 */
    uint32_t chunk_sectors;     /* asked: 0 keep */
    const char *layout;
    int new_level;              /* -1 keep */
    int shrink;                 /* nend < nold, --array-size given */
};

static const struct kind kinds[] = {
    {"RAID-5 4 -> 5", 5, 4, 1, 5, 0, 0, NULL, -1, 0},
    {"RAID-6 5 -> 6", 6, 5, 1, 6, 0, 0, NULL, -1, 0},
    {"RAID-5 4 -> RAID-6 5", 5, 4, 1, 5, 0, 0, NULL, 6, 0},
    {"RAID-5 chunk 64K -> 128K, right-asymmetric", 5, 4, 0, 4, 0, 256, "right-asymmetric", -1, 0},
    {"RAID-0 3 -> RAID-5 4", 0, 3, 1, 4, 0, 0, NULL, 5, 0},
    {"RAID-0 3 -> 5", 0, 3, 2, 5, 0, 0, NULL, -1, 0},
    /* --level 0 names the end: a kill leaves md's RAID-4 reshape, which ends as RAID-4 without it */
    {"RAID-0 chunk 64K -> 128K", 0, 3, 0, 3, 0, 256, NULL, 0, 0},
    {"RAID-5 5 -> 4 (shrink)", 5, 5, 0, 4, 0, 0, NULL, -1, 1},
    {"RAID-6 6 -> 5, chunk 64K -> 32K (shrink)", 6, 6, 0, 5, 0, 64, NULL, -1, 1},
};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])

struct setup {
    const struct kind *k;
    char dir[128], path[MAXM][160];
    uint8_t *image[MAXM]; /* the members before the grow */
    uint8_t *data;        /* the array's bytes before */
    uint64_t old_bytes, keep; /* keep: a shrink's --array-size, sectors */
};

struct tally {
    int trials, inside, lost, mismatch, failed;
};

static int put_file(const char *path, const uint8_t *buf, size_t len)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    int ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -EIO;
}

static int get_file(const char *path, uint8_t *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    int ok = fd >= 0 && read(fd, buf, len) == (ssize_t)len;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -EIO;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void paths_of(const struct setup *s, const char **paths)
{
    for (int i = 0; i < s->k->nold + s->k->nnew; i++)
        paths[i] = s->path[i];
}

/* The grow of the kind, members slowed by `spec` (NULL: none). */
static int grow(const struct setup *s, const char *spec, char *why, size_t whylen)
{
    const struct kind *k = s->k;
    const char *paths[MAXM], *sim[MAXM];
    paths_of(s, paths);
    for (int i = 0; i < k->nold + k->nnew; i++)
        sim[i] = spec;
    struct uraid_grow_params p = {.raid_devices = k->shrink ? k->nend : k->nnew ? k->nold + k->nnew : 0,
                                  .array_sectors = s->keep, .member_sim = spec ? sim : NULL,
                                  .checkpoint_ms = 50, .chunk_sectors = k->chunk_sectors, .layout = k->layout,
                                  .level_set = k->new_level >= 0, .level = k->new_level};
    return uraid_grow_members(paths, k->nold, paths + k->nold, k->nnew, &p, NULL, why, whylen);
}

static int make_setup(struct setup *s, struct rng *r)
{
    const struct kind *k = s->k;
    char why[300];
    snprintf(s->dir, sizeof s->dir, "%s/uraid-test-reshape-kill.XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
    if (!mkdtemp(s->dir))
        return -errno;
    int n = k->nold + k->nnew;
    uint8_t *zero = calloc(1, MEMBER_BYTES);
    for (int i = 0; i < n; i++) {
        snprintf(s->path[i], sizeof s->path[i], "%s/m%d.img", s->dir, i);
        put_file(s->path[i], zero, MEMBER_BYTES);
    }
    free(zero);
    const char *paths[MAXM];
    paths_of(s, paths);
    struct uraid_create_params cp = {.level = k->level, .raid_devices = k->nold,
                                     .chunk_bytes = (k->create_chunk_kib ? k->create_chunk_kib : 64) << 10,
                                     .layout = -1, .assume_clean = 1,
                                     .consistency_policy = k->level ? URAID_POLICY_RESYNC : 0};
    int rc = uraid_create(paths, k->nold, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(paths, k->nold, NULL, &a, why, sizeof why)) == 0) {
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        s->old_bytes = info.size_bytes;
        s->data = malloc(s->old_bytes);
        rng_fill(r, s->data, s->old_bytes);
        rc = uraid_write(a, s->data, s->old_bytes, 0);
        CHECK(rc == 0, "write");
        CHECK(uraid_close(a) == 0);
    }
    if (rc == 0 && k->shrink) { /* the size to keep, from the refusal that names it */
        rc = grow(s, NULL, why, sizeof why);
        const char *g = strstr(why, "give --array-size ");
        s->keep = rc == -EINVAL && g ? strtoull(g + 18, NULL, 10) * 2 : 0;
        CHECK(s->keep > 0, "the shrink's refusal names the size to keep: %d %s", rc, why);
        rc = s->keep ? 0 : -EINVAL;
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        s->image[i] = malloc(MEMBER_BYTES);
        rc = get_file(s->path[i], s->image[i], MEMBER_BYTES);
    }
    return rc;
}

static void restore(const struct setup *s)
{
    for (int i = 0; i < s->k->nold + s->k->nnew; i++)
        put_file(s->path[i], s->image[i], MEMBER_BYTES);
}

/* The array after the grow: every kept byte, zeros in the new space, a clean check. */
static void verify(const struct setup *s, struct tally *t)
{
    const char *paths[MAXM];
    paths_of(s, paths);
    char why[300];
    struct uraid_array *a = NULL;
    int rc = uraid_open(paths, s->k->nend, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "open after the grow: %s", why);
    if (rc) {
        t->failed++;
        return;
    }
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    uint8_t *buf = malloc(info.size_bytes);
    uint64_t kept = info.size_bytes < s->old_bytes ? info.size_bytes : s->old_bytes;
    int same = uraid_read(a, buf, info.size_bytes, 0) == 0 && !memcmp(buf, s->data, kept);
    /* a grown RAID-0 is the reshaped size (md's raid0_takeover_raid45 records the RAID-4's
     * member size as every data_size); an array taken over from RAID-5 is its data members' */
    uint64_t moved = info.level == 0 ? s->old_bytes / (uint64_t)s->k->nold * (uint64_t)s->k->nend : info.size_bytes;
    for (uint64_t i = s->old_bytes; same && i < moved; i++)
        same = buf[i] == 0;
    free(buf);
    CHECK(same, "the array does not read back the bytes it kept (and zeros after)");
    t->lost += !same;
    struct uraid_job_status st = {0};
    if (info.level == 0) { /* no parity to check */
        CHECK(uraid_close(a) == 0);
        return;
    }
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "check: %s", why);
    uraid_job_wait(a, &st);
    CHECK(st.result == 0 && st.mismatch_sectors == 0, "check: result %d, mismatch_cnt %llu", st.result,
          (unsigned long long)st.mismatch_sectors);
    t->mismatch += st.result != 0 || st.mismatch_sectors != 0;
    CHECK(uraid_close(a) == 0);
}

/* One trial: the grow in a child killed after delay_ms, then the same grow again. */
static void trial(const struct setup *s, double delay_ms, struct tally *t)
{
    restore(s);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char why[400];
        _exit(grow(s, SLOW, why, sizeof why) == 0 ? 0 : 3);
    }
    CHECK(pid > 0, "fork: %s", strerror(errno));
    if (pid < 0)
        return;
    usleep((useconds_t)(delay_ms * 1000));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    int inside = WIFSIGNALED(status);
    CHECK(inside || (WIFEXITED(status) && WEXITSTATUS(status) == 0), "the grow failed before the kill (status %d)",
          status);
    t->inside += inside;
    char why[400];
    int rc = grow(s, NULL, why, sizeof why);
    CHECK(rc == 0 || rc == -EALREADY, "the same grow again: %s", why);
    if (rc == 0 || rc == -EALREADY)
        verify(s, t);
    else
        t->failed++;
    t->trials++;
}

/* How long an uninterrupted slow grow of the kind takes, seconds. */
static double timed_grow(const struct setup *s)
{
    char why[400];
    restore(s);
    double t0 = now_s();
    int rc = grow(s, SLOW, why, sizeof why);
    CHECK(rc == 0, "a slow grow without a kill: %s", why);
    return now_s() - t0;
}

static void run_kind(const struct kind *k, int ntrials, struct rng *r, struct tally *t)
{
    struct setup s = {.k = k};
    alarm(600); /* a grow that never ends (a broken resume) fails the test instead of hanging it */
    harness_beginf("%s: set-up and a grow without a kill", k->name);
    int rc = make_setup(&s, r);
    CHECK(rc == 0, "set-up");
    double full = rc == 0 ? timed_grow(&s) : 0;
    if (rc == 0)
        verify(&s, &(struct tally){0});
    harness_end();
    for (int i = 0; rc == 0 && i < ntrials; i++) {
        /* a moment from the start to a little past the end */
        double ms = 2 + (double)rng_below(r, (uint64_t)(full * 1100) + 1);
        harness_beginf("%s: kill -9 after %.0f ms (the grow takes about %.0f ms)", k->name, ms, full * 1000);
        trial(&s, ms, t);
        harness_end();
    }
    for (int i = 0; i < k->nold + k->nnew; i++) {
        unlink(s.path[i]);
        free(s.image[i]);
    }
    rmdir(s.dir);
    free(s.data);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "reshape_kill");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    const char *env = getenv("URAID_RESHAPE_TRIALS"), *lng = getenv("URAID_TEST_LONG");
    int ntrials = env ? atoi(env) : lng && !strcmp(lng, "1") ? 50 : 2;
    struct tally t[NKINDS] = {{0}};
    for (int k = 0; k < NKINDS; k++)
        run_kind(&kinds[k], ntrials, &r, &t[k]);
    printf("reshape kill trials: seed %llu, %d per kind (URAID_RESHAPE_TRIALS; 50 with URAID_TEST_LONG=1)\n",
           (unsigned long long)seed, ntrials);
    printf("%-44s %6s %7s %5s %9s %7s\n", "kind", "trials", "inside", "lost", "mismatch", "failed");
    for (int k = 0; k < NKINDS; k++)
        printf("%-44s %6d %7d %5d %9d %7d\n", kinds[k].name, t[k].trials, t[k].inside, t[k].lost, t[k].mismatch,
               t[k].failed);
    printf("inside: the kill fell while the grow ran; lost: a kept byte read back wrong or the new space not zeros; "
           "mismatch: the check found parity mismatches; failed: the same grow again or the open failed\n\n");
    return harness_finish();
}
