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
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "uraid.h"
#include "uraid_grow.h"

#define N0 3
#define NF (N0 + 2) /* the members, the new one, a spare file */
#define BLK 4096
#define MEMBER_BYTES (8u << 20)
#define MAXW (64u << 10)
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
    snprintf(s->dir, sizeof s->dir, "%s/uraid-test-from0.XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
    if (!mkdtemp(s->dir))
        return -errno;
    char dir[sizeof s->dir]; /* (not s->dir itself: the compiler cannot tell path[i] from it) */
    memcpy(dir, s->dir, sizeof dir);
    for (int i = 0; i < NF; i++) {
        s->size[i] = i == N0 - 1 && last_size ? last_size : i == N0 && new_size ? new_size : MEMBER_BYTES;
        snprintf(s->path[i], sizeof s->path[i], "%s/m%d.img", dir, i);
        s->paths[i] = s->path[i];
        int fd = open(s->path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)s->size[i]))
            return -errno;
        close(fd);
    }
    struct uraid_create_params cp = {.level = 0, .raid_devices = N0, .layout = -1, .chunk_bytes = 64u << 10};
    int rc = uraid_create(s->paths, N0, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s->paths, N0, NULL, &a, why, sizeof why)) == 0) {
        s->bytes = uraid_size(a);
        s->model = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        rng_fill(r, s->model, s->bytes);
        rc = uraid_write(a, s->model, s->bytes, 0);
        CHECK(rc == 0, "write");
        CHECK(uraid_close(a) == 0);
    }
    CHECK(rc == 0, "open: %s", why);
    return rc;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i < NF; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    if (s->model)
        munmap(s->model, s->bytes);
}

static uint8_t *snapshot(const struct setup *s, uint64_t *total)
{
    *total = 0;
    for (int i = 0; i < NF; i++)
        *total += s->size[i];
    uint8_t *img = malloc(*total), *p = img;
    for (int i = 0; img && i < NF; i++) {
        int fd = open(s->path[i], O_RDONLY);
        if (fd < 0 || pread(fd, p, s->size[i], 0) != (ssize_t)s->size[i])
            memset(p, 0xee, s->size[i]);
        if (fd >= 0)
            close(fd);
        p += s->size[i];
    }
    return img;
}

static void check_bytes(struct uraid_array *a, const struct setup *s, const char *what)
{
    uint8_t *buf = malloc(s->bytes);
    int rc = buf ? uraid_read(a, buf, s->bytes, 0) : -ENOMEM;
    uint64_t at = 0;
    while (rc == 0 && at < s->bytes && buf[at] == s->model[at])
        at++;
    CHECK(rc == 0 && at == s->bytes, "%s: read %d, first difference at byte %llu of %llu", what, rc,
          (unsigned long long)at, (unsigned long long)s->bytes);
    free(buf);
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
    uint8_t *buf = malloc(MAXW), *back = malloc(MAXW);
    while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE)) {
        uint64_t len = (1 + rng_below(&r, 16)) * BLK;
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

static void wait_rounds(struct writer *w, int nw, int more)
{
    for (int i = 0; i < nw; i++) {
        int at = __atomic_load_n(&w[i].rounds, __ATOMIC_RELAXED);
        while (__atomic_load_n(&w[i].rounds, __ATOMIC_RELAXED) < at + more)
            usleep(1000);
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
        struct writer w[NW];
        pthread_t t[NW];
        int stop = 0, failures = 0, during = 0;
        uint64_t slice = s.bytes / NW / BLK * BLK;
        for (int i = 0; i < NW; i++) {
            w[i] = (struct writer){.a = a, .s = &s, .lo = slice * (uint64_t)i, .hi = slice * (uint64_t)(i + 1),
                                   .seed = seed + (uint64_t)i, .stop = &stop};
            pthread_create(&t[i], NULL, writer_main, &w[i]);
        }
        wait_rounds(w, NW, 20);
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
        wait_rounds(w, NW, 20);
        __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        for (int i = 0; i < NW; i++) {
            pthread_join(t[i], NULL);
            failures += w[i].failures;
        }
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

static void refuse(struct uraid_array *a, int level, int N, uint32_t chunk, const char *layout,
                   const char *const *added, int nadd, int want, const char *text)
{
    char why[400] = "";
    int rc = uraid_grow_online_level(a, level, N, chunk, layout, added, nadd, why, sizeof why);
    CHECK(rc == want && strstr(why, text) && !strchr(why, '\n'),
          "--level %d -n %d chunk %u layout %s, %d new: %d '%s' (expected %d, '%s')", level, N, chunk,
          layout ? layout : "-", nadd, rc, why, want, text);
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
        refuse(a, 5, N0 + 2, 0, NULL, NULL, 0, -EINVAL, "into a RAID-5 of 4");
        refuse(a, 5, 0, 0, NULL, s.paths + N0, 2, -EINVAL, "at most one new member");
        refuse(a, 5, 0, 0, "left-symmetric", NULL, 0, -EOPNOTSUPP, "as parity-last with its chunk");
        refuse(a, 4, 0, 256, NULL, NULL, 0, -EOPNOTSUPP, "as parity-last with its chunk");
        refuse(a, 5, 0, 0, NULL, s.paths + N0, 1, -ENOSPC, "is too small");
        refuse(a, 5, 0, 0, NULL, old, 1, -EEXIST, "already a member");
        refuse(a, 5, 0, 0, NULL, s.paths + N0 + 1, 1, -EEXIST, "holds an md superblock");
        refuse(a, 6, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "not supported");
        CHECK(uraid_close(a) == 0);
        struct uraid_open_params ro = {.readonly = 1};
        if ((rc = uraid_open(s.paths, N0, &ro, &a, why, sizeof why)) == 0) {
            refuse(a, 5, 0, 0, NULL, NULL, 0, -EROFS, "read-only");
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
        refuse(a, 5, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "one zone");
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
    killed(0, &r);
    killed(1, &r);
    return harness_finish();
}
