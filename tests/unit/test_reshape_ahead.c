/* The online reshape job's read-ahead (lib/array/reshape_copy.c, its
 * watch in reshape_io.c, the drop in reshape_job.c): while the job writes
 * one window it reads the next window's old rows, before that window is
 * locked, so users may still write them in the old geometry. Each such
 * write must make the job read the rows again; copied from the rows read
 * ahead it would be lost (the new geometry would hold the bytes from
 * before it).
 *
 * A RAID-5 of 4 on slow simulated disks (so a window takes long enough for
 * writes to meet the read-ahead) grows online to 5 while writer threads
 * write 4 KiB blocks just past the job's position, where the next window
 * lies; then every byte matches the model, a check reports mismatch 0,
 * and the job's log says how many windows were read again (it must be
 * some, else the case did not happen and the run says nothing). The
 * reshape is stopped at a quarter, closed and reopened, and the reopened
 * array's job does the rest, the writers going on. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "uraid.h"
#include "uraid_grow.h"

#define NOLD 4
#define NW 3              /* writer threads; writer i owns the blocks i, i + NW, ... */
#define BLK 4096
#define MEMBER (32u << 20)
#define RATE "throttle=40M" /* a window of 2 MiB per member takes about 50 ms */

struct setup {
    char dir[128], path[NOLD + 1][160];
    const char *paths[NOLD + 1];
    uint8_t *model;
    uint64_t bytes;       /* the array's size before the grow */
};

struct writer {
    struct uraid_array *a;
    struct setup *s;
    int id;
    uint64_t seed;
    int *stop;            /* atomic */
    int failures, writes;
};

/* Members on tmpfs, the array created and filled with random bytes. */
static int make_setup(struct setup *s, struct rng *r)
{
    char why[300];
    snprintf(s->dir, sizeof s->dir, "%s/uraid-test-rsra.XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
    if (!mkdtemp(s->dir))
        return -errno;
    for (int i = 0; i <= NOLD; i++) {
        char name[sizeof s->path[i]]; /* not straight into s: gcc -O1 sees s->dir and s->path as one object */
        snprintf(name, sizeof name, "%s/m%d.img", s->dir, i);
        memcpy(s->path[i], name, sizeof name);
        s->paths[i] = s->path[i];
        int fd = open(s->path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)MEMBER))
            return -errno;
        close(fd);
    }
    struct uraid_create_params cp = {.level = 5, .raid_devices = NOLD, .chunk_bytes = 64 << 10, .layout = -1,
                                     .assume_clean = 1, .consistency_policy = URAID_POLICY_RESYNC};
    struct uraid_array *a = NULL;
    int rc = uraid_create(s->paths, NOLD, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    if (rc == 0 && (rc = uraid_open(s->paths, NOLD, NULL, &a, why, sizeof why)) == 0) {
        s->bytes = uraid_size(a);
        s->model = malloc(s->bytes);
        rng_fill(r, s->model, s->bytes);
        rc = uraid_write(a, s->model, s->bytes, 0);
        CHECK(rc == 0, "fill: %s", uraid_strerror(rc));
        CHECK(uraid_close(a) == 0, "close");
    }
    return rc;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i <= NOLD; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    free(s->model);
}

/* The array byte the job has reached: its rows are the new geometry's
 * (4 data members of 5), each row sector holding 4 array sectors. */
static uint64_t job_at(struct uraid_array *a)
{
    struct uraid_job_status st;
    if (uraid_job_status(a, &st) || !st.running)
        return UINT64_MAX;
    return st.done_sectors * 512 * NOLD;
}

/* Blocks of this writer in the 16 MiB past the job's position: the step
 * being moved (8 MiB of array data: 2 MiB per member) and the next, whose
 * first window the job reads ahead. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct rng r;
    rng_seed(&r, w->seed);
    uint8_t buf[BLK];
    uint64_t nblk = w->s->bytes / BLK;
    while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE)) {
        uint64_t at = job_at(w->a);
        if (at == UINT64_MAX || at >= w->s->bytes) {
            usleep(1000);
            continue;
        }
        uint64_t b = (at + (4u << 20) + rng_below(&r, 12u << 20)) / BLK;
        b = b / NW * NW + (uint64_t)w->id;
        if (b >= nblk)
            continue;
        rng_fill(&r, buf, BLK);
        if (uraid_write(w->a, buf, BLK, b * BLK)) {
            w->failures++;
            continue;
        }
        memcpy(w->s->model + b * BLK, buf, BLK);
        w->writes++;
    }
    return NULL;
}

/* Writers run until the job stops (at a quarter when `part`, else its end). */
static int run_writers(struct uraid_array *a, struct setup *s, uint64_t seed, int part, int *total, const char *what)
{
    struct writer w[NW];
    pthread_t t[NW];
    int stop = 0, writes = 0;
    for (int i = 0; i < NW; i++) {
        w[i] = (struct writer){.a = a, .s = s, .id = i, .seed = seed + (uint64_t)i, .stop = &stop};
        pthread_create(&t[i], NULL, writer_main, &w[i]);
    }
    struct uraid_job_status st;
    for (int i = 0; part && i < 60000; i++) {
        uraid_job_status(a, &st);
        if (!st.running || st.done_sectors * 4 >= st.total_sectors)
            break;
        usleep(1000);
    }
    if (part)
        uraid_job_cancel(a);
    int rc = uraid_job_wait(a, &st);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < NW; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].failures == 0, "%s: writer %d: %d writes failed", what, i, w[i].failures);
        writes += w[i].writes;
    }
    if (!part) /* the rest runs in large windows, often too fast for a write to meet it */
        CHECK(writes + *total > 0, "no write went through during the reshape");
    *total += writes;
    return part && rc == -ECANCELED ? 0 : rc;
}

static void compare(struct uraid_array *a, const struct setup *s, const char *what)
{
    uint8_t *buf = malloc(s->bytes);
    int rc = uraid_read(a, buf, s->bytes, 0);
    CHECK(rc == 0, "%s: read: %s", what, uraid_strerror(rc));
    uint64_t bad = 0, first = UINT64_MAX;
    for (uint64_t i = 0; rc == 0 && i < s->bytes; i += BLK)
        if (memcmp(buf + i, s->model + i, BLK) && bad++ == 0)
            first = i;
    CHECK(bad == 0, "%s: %llu blocks differ from what was written, the first at byte %llu", what,
          (unsigned long long)bad, (unsigned long long)first);
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

/* The job's count of windows read again, from its log line. */
static unsigned long long dropped;

static void log_line(void *ctx, enum uraid_log_level level, const char *message)
{
    unsigned long long ahead, again;
    (void)ctx;
    (void)level;
    if (sscanf(message, "reshape: %llu windows read ahead, %llu of them read again", &ahead, &again) == 2)
        __atomic_add_fetch(&dropped, again, __ATOMIC_RELAXED);
    if (getenv("RSRA_DEBUG"))
        fprintf(stderr, "  log: %s\n", message);
}

static void writes_into_read_ahead(struct rng *r, uint64_t seed)
{
    struct setup s = {0};
    harness_begin("RAID-5 4 -> 5 online: user writes into the rows the job read ahead are kept");
    int rc = make_setup(&s, r);
    char why[400];
    int writes = 0;
    const char *sim[NOLD + 1];
    for (int i = 0; i <= NOLD; i++)
        sim[i] = RATE;
    struct uraid_open_params op = {.member_sim = sim, .sync_speed_min_kib = 1ull << 30};
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, NOLD, &op, &a, why, sizeof why)) != 0)
        CHECK(0, "open: %s", why);
    if (rc == 0 && (rc = uraid_grow_online(a, NOLD + 1, s.paths + NOLD, 1, why, sizeof why)) != 0)
        CHECK(0, "grow online: %s", why);
    if (rc == 0) {
        CHECK(run_writers(a, &s, seed, 1, &writes, "first quarter") == 0, "the reshape's first quarter");
        compare(a, &s, "stopped at a quarter");
        CHECK(uraid_close(a) == 0, "close in mid-reshape");
        a = NULL;
        if ((rc = uraid_open(s.paths, NOLD + 1, &op, &a, why, sizeof why)) != 0)
            CHECK(0, "open in mid-reshape: %s", why);
    }
    if (rc == 0 && (rc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why)) != 0)
        CHECK(0, "carry the reshape on: %s", why);
    if (rc == 0) {
        CHECK(run_writers(a, &s, seed + 100, 0, &writes, "the rest") == 0, "the reshape's end");
        CHECK(uraid_size(a) > s.bytes, "the array did not grow");
        compare(a, &s, "after the online reshape");
        clean_check(a, "after the online reshape");
    }
    if (a)
        CHECK(uraid_close(a) == 0, "close");
    printf("  %llu windows read ahead were read again after user writes\n", dropped);
    CHECK(dropped > 0, "no user write reached the rows read ahead: the case was not exercised");
    drop_setup(&s);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "reshape_ahead");
    uraid_set_log(log_line, NULL, URAID_LOG_DEBUG);
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    writes_into_read_ahead(&r, seed);
    return harness_finish();
}
