/* Reads and writes of an array in mid-reshape (lib/array/reshape_io.c) and
 * the reshape as a job of an open array (reshape_job.c, reshape_online.c).
 *
 * 1. Stopped positions: RAID-5 4 -> 5 and RAID-6 4 -> 6 grown offline and
 *    stopped at several positions (the offline grow's stop); at each, the
 *    array is opened through the engine (both geometries), read whole and
 *    compared with the model, written at random ranges (across the
 *    boundary too) and read back, closed, and the grow carried on to the
 *    next stop. At the end: every byte, zeros in the new space, a clean
 *    check.
 * 2. Online: a clean array grown with uraid_grow_online while writer
 *    threads write and read back their own regions; the job is stopped
 *    once (a close in the middle), opened again and carried on by
 *    uraid_job_start(RESHAPE); at the end every byte matches the model and
 *    a check reports mismatch_cnt 0.
 * 3. A shrink (backwards) stopped and opened at several points, then
 *    finished by the open array's reshape job with writers going on; and
 *    a served array shrunk online with writers (uraid_grow_online_shrink).
 * 4. A RAID-5 -> 6 restripe (the new member the Q of the old -6 layout,
 *    recovered by the reshape) stopped twice: each time the array opens,
 *    reads back, takes writes on both sides of the position, and the
 *    second time its reshape job finishes it with writers going on; then
 *    the new member is in sync, every byte, a clean check.
 * 5. A write-intent bitmap through a reshape: a write above the stopped
 *    position (the old geometry) sets the bit of its old stripe's member
 *    sectors on disk before it goes out (md's sh->sector), one below it the
 *    bit of its new stripe; the grow carried on to the end keeps every
 *    byte. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "uraid.h"
#include "uraid_grow.h"

#define MAXM 8
#define BLK 4096

struct setup {
    int level, nold, nnew;
    uint64_t bitmap_chunk;   /* bytes: a write-intent bitmap; 0: resync policy */
    uint64_t member_bytes;
    const char *metadata;    /* NULL: 1.2 */
    char dir[128], path[MAXM][160];
    const char *paths[MAXM];
    uint8_t *model;       /* the array's bytes (old size) */
    uint64_t old_bytes;
};

static int make_setup(struct setup *s, struct rng *r)
{
    char why[300];
    snprintf(s->dir, sizeof s->dir, "%s/uraid-test-rsio.XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
    if (!mkdtemp(s->dir))
        return -errno;
    int n = s->nold + s->nnew;
    for (int i = 0; i < n; i++) {
        snprintf(s->path[i], sizeof s->path[i], "%s/m%d.img", s->dir, i);
        s->paths[i] = s->path[i];
        int fd = open(s->path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)s->member_bytes))
            return -errno;
        close(fd);
    }
    struct uraid_create_params cp = {.level = s->level, .raid_devices = s->nold, .chunk_bytes = 64 << 10,
                                     .layout = -1, .assume_clean = 1, .consistency_policy = URAID_POLICY_RESYNC,
                                     .bitmap_chunk_bytes = s->bitmap_chunk, .metadata = s->metadata};
    if (s->bitmap_chunk)
        cp.consistency_policy = URAID_POLICY_BITMAP;
    int rc = uraid_create(s->paths, s->nold, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s->paths, s->nold, NULL, &a, why, sizeof why)) == 0) {
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        s->old_bytes = info.size_bytes;
        s->model = malloc(s->old_bytes);
        rng_fill(r, s->model, s->old_bytes);
        rc = uraid_write(a, s->model, s->old_bytes, 0);
        CHECK(rc == 0, "write");
        CHECK(uraid_close(a) == 0);
    }
    return rc;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i < s->nold + s->nnew; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    free(s->model);
}

struct stop_at {
    uint64_t at;
    volatile int stop;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct stop_at *st = ctx;
    (void)total;
    if (done >= st->at)
        st->stop = 1;
}

/* The whole array against the model (and zeros past it when bigger). */
static void compare(struct uraid_array *a, const struct setup *s, const char *what)
{
    uint64_t size = uraid_size(a);
    uint8_t *buf = malloc(size);
    int rc = uraid_read(a, buf, size, 0);
    CHECK(rc == 0, "%s: read: %s", what, uraid_strerror(rc));
    uint64_t bad = UINT64_MAX;
    for (uint64_t i = 0; i < s->old_bytes && bad == UINT64_MAX; i += BLK)
        if (memcmp(buf + i, s->model + i, BLK))
            bad = i;
    CHECK(bad == UINT64_MAX, "%s: the bytes at %llu differ from what was written", what, (unsigned long long)bad);
    int zeros = 1;
    for (uint64_t i = s->old_bytes; i < size && zeros; i++)
        zeros = buf[i] == 0;
    CHECK(zeros, "%s: the new space is not zeros", what);
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

/* Random writes of up to 300 KiB (the model too), some across pos. */
static void scribble(struct uraid_array *a, struct setup *s, struct rng *r, uint64_t pos_bytes, const char *what)
{
    uint8_t *buf = malloc(300 << 10);
    for (int i = 0; i < 12; i++) {
        uint64_t len = (1 + rng_below(r, 75)) * BLK, off;
        if (i % 3 == 0 && pos_bytes > len && pos_bytes < s->old_bytes)
            off = (pos_bytes - len / 2) / BLK * BLK;
        else
            off = rng_below(r, (s->old_bytes - len) / BLK + 1) * BLK;
        if (off + len > s->old_bytes)
            off = s->old_bytes - len;
        rng_fill(r, buf, len);
        int rc = uraid_write(a, buf, len, off);
        CHECK(rc == 0, "%s: write at %llu: %s", what, (unsigned long long)off, uraid_strerror(rc));
        memcpy(s->model + off, buf, len);
    }
    free(buf);
}

static void stopped_positions(int level, int nold, int nnew, struct rng *r)
{
    struct setup s = {.level = level, .nold = nold, .nnew = nnew, .member_bytes = 4u << 20};
    int n = nold + nnew;
    harness_beginf("RAID-%d %d -> %d: I/O at stopped reshape positions", level, nold, n);
    int rc = make_setup(&s, r);
    char why[400], what[80];
    /* stops at growing fractions of the old size (in array sectors): past it
     * the windows hold only zeros and run to the end in one go */
    static const int pct[] = {3, 20, 45, 70};
    int resumed = 0;
    for (size_t k = 0; rc == 0 && k < sizeof pct / sizeof pct[0]; k++) {
        struct stop_at st = {.at = s.old_bytes / 512 * (uint64_t)pct[k] / 100};
        struct uraid_grow_params p = {.raid_devices = resumed ? 0 : n, .resume_only = resumed, .progress = on_progress,
                                      .ctx = &st, .stop = &st.stop, .checkpoint_ms = 1u << 30};
        struct uraid_grow_result res;
        rc = uraid_grow_members(s.paths, resumed ? n : nold, s.paths + nold, resumed ? 0 : nnew, &p, &res, why,
                                sizeof why);
        CHECK(rc == -EINTR, "stop at %d%%: %d %s", pct[k], rc, why);
        if (rc != -EINTR)
            break;
        resumed = 1;
        struct uraid_array *a = NULL;
        snprintf(what, sizeof what, "stopped at %d%%", pct[k]);
        rc = uraid_open(s.paths, n, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "%s: open: %s", what, why);
        if (rc)
            break;
        CHECK(uraid_size(a) == s.old_bytes, "%s: size %llu, the old one is %llu", what,
              (unsigned long long)uraid_size(a), (unsigned long long)s.old_bytes);
        compare(a, &s, what);
        scribble(a, &s, r, st.at * 512, what);
        compare(a, &s, what);
        char busy[300];
        CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, busy, sizeof busy) == -EBUSY, "%s: a check started during "
              "the reshape", what);
        CHECK(uraid_close(a) == 0, "%s: close", what);
    }
    if (rc == -EINTR) {
        struct uraid_grow_params p = {.resume_only = 1};
        rc = uraid_grow_members(s.paths, n, NULL, 0, &p, NULL, why, sizeof why);
        CHECK(rc == 0, "continue to the end: %s", why);
        struct uraid_array *a = NULL;
        if (rc == 0 && uraid_open(s.paths, n, NULL, &a, why, sizeof why) == 0) {
            compare(a, &s, "after the end");
            clean_check(a, "after the end");
            uraid_close(a);
        }
    }
    drop_setup(&s);
    harness_end();
}

/* ---- a write-intent bitmap ----------------------------------------------------- */

#define BM_AT 8192u /* uraid create's bitmap: 8 sectors past the superblock at sector 8 */

/* Bit b of member path's bitmap, as on disk (-1: no bitmap there). */
static int bit_on_disk(const char *path, uint64_t b)
{
    uint8_t head[4], byte = 0;
    int fd = open(path, O_RDONLY);
    int ok = fd >= 0 && pread(fd, head, 4, BM_AT) == 4 && !memcmp(head, "bitm", 4) &&
             pread(fd, &byte, 1, BM_AT + 256 + b / 8) == 1;
    if (fd >= 0)
        close(fd);
    return ok ? (byte >> (b % 8)) & 1 : -1;
}

/* One 4 KiB write at array byte off while the array is open; the bits of
 * its stripe in the old (k_old data members) and the new geometry (k_new),
 * a bitmap chunk being one 64 KiB chunk: *in_old, *in_new. */
static void bits_of_write(struct uraid_array *a, struct setup *s, struct rng *r, uint64_t off, int k_old, int k_new,
                          int *in_old, int *in_new)
{
    uint8_t buf[BLK];
    rng_fill(r, buf, sizeof buf);
    CHECK(uraid_write(a, buf, sizeof buf, off) == 0, "write at %llu", (unsigned long long)off);
    memcpy(s->model + off, buf, sizeof buf);
    uint64_t chunk = 64 << 10;
    *in_old = bit_on_disk(s->path[0], off / (chunk * (uint64_t)k_old));
    *in_new = bit_on_disk(s->path[0], off / (chunk * (uint64_t)k_new));
}

static void bitmap_reshape(struct rng *r)
{
    struct setup s = {.level = 5, .nold = 4, .nnew = 1, .member_bytes = 4u << 20, .bitmap_chunk = 64 << 10};
    harness_begin("RAID-5 4 -> 5 with a write-intent bitmap: each geometry's writes set their own stripes' bits");
    int rc = make_setup(&s, r);
    char why[400];
    struct stop_at st = {.at = s.old_bytes / 512 / 5};
    struct uraid_grow_params p = {.raid_devices = 5, .progress = on_progress, .ctx = &st, .stop = &st.stop,
                                  .checkpoint_ms = 1u << 30};
    if (rc == 0) {
        rc = uraid_grow_members(s.paths, 4, s.paths + 4, 1, &p, NULL, why, sizeof why);
        CHECK(rc == -EINTR, "stop at 20%%: %d %s", rc, why);
    }
    struct uraid_array *a = NULL;
    if (rc == -EINTR && (rc = uraid_open(s.paths, 5, NULL, &a, why, sizeof why)) != 0)
        CHECK(0, "open mid-reshape: %s", why);
    if (a) {
        int old_bit, new_bit;
        /* 80% in: above the position, in the old geometry (3 data members) */
        uint64_t off = s.old_bytes / 5 * 4 / BLK * BLK;
        bits_of_write(a, &s, r, off, 3, 4, &old_bit, &new_bit);
        CHECK(old_bit == 1 && new_bit == 0, "a write at %llu in the old geometry: its old stripe's bit %d, the new "
              "geometry's %d (expected 1 and 0)", (unsigned long long)off, old_bit, new_bit);
        /* 5% in: below it, in the new geometry (4 data members) */
        off = s.old_bytes / 20 / BLK * BLK;
        bits_of_write(a, &s, r, off, 3, 4, &old_bit, &new_bit);
        CHECK(new_bit == 1, "a write at %llu in the new geometry: its new stripe's bit %d (expected 1)",
              (unsigned long long)off, new_bit);
        compare(a, &s, "mid-reshape, after the writes");
        CHECK(uraid_close(a) == 0);
        struct uraid_grow_params go = {.resume_only = 1};
        rc = uraid_grow_members(s.paths, 5, NULL, 0, &go, NULL, why, sizeof why);
        CHECK(rc == 0, "continue to the end: %s", why);
        if (rc == 0 && uraid_open(s.paths, 5, NULL, &a, why, sizeof why) == 0) {
            compare(a, &s, "after the end");
            clean_check(a, "after the end");
            uraid_close(a);
        }
        for (int i = 0; i < 5; i++)
            CHECK(bit_on_disk(s.path[i], 0) >= 0, "member %d has no bitmap after the grow", i);
    }
    drop_setup(&s);
    harness_end();
}

/* ---- online --------------------------------------------------------------------- */

/* After a shrink's end: closed, then opened from its n members alone, the
 * same bytes. */
static void reopen_members(struct uraid_array *a, const struct setup *s, int n)
{
    char why[256];
    CHECK(uraid_close(a) == 0, "close");
    int rc = uraid_open(s->paths, n, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "open the %d members after the end: %s", n, why);
    if (rc == 0) {
        compare(a, s, "reopened after the end");
        uraid_close(a);
    }
}

struct writer {
    struct uraid_array *a;
    struct setup *s;
    uint64_t lo, hi;      /* its own byte range of the model */
    uint64_t seed;
    int *stop;            /* atomic */
    int failures, rounds;
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
        if (uraid_write(w->a, buf, len, off) != 0) {
            w->failures++;
            continue;
        }
        memcpy(w->s->model + off, buf, len);
        if (uraid_read(w->a, back, len, off) != 0 || memcmp(back, buf, len))
            w->failures++;
        w->rounds++;
    }
    free(buf);
    free(back);
    return NULL;
}

static int run_writers(struct uraid_array *a, struct setup *s, uint64_t seed, int (*until)(struct uraid_array *),
                       const char *what)
{
    enum { NW = 3 };
    struct writer w[NW];
    pthread_t t[NW];
    int stop = 0;
    uint64_t part = s->old_bytes / NW / BLK * BLK;
    for (int i = 0; i < NW; i++) {
        w[i] = (struct writer){.a = a, .s = s, .lo = part * (uint64_t)i, .hi = part * (uint64_t)(i + 1),
                               .seed = seed + (uint64_t)i, .stop = &stop};
        pthread_create(&t[i], NULL, writer_main, &w[i]);
    }
    int rc = until(a);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    int rounds = 0;
    for (int i = 0; i < NW; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].failures == 0, "%s: writer %d: %d writes or read-backs failed", what, i, w[i].failures);
        rounds += w[i].rounds;
    }
    CHECK(rounds > 0, "%s: no write went through during the reshape", what);
    return rc;
}

/* Until the reshape passed a third of the members, then stop it. */
static int until_third(struct uraid_array *a)
{
    struct uraid_job_status st;
    for (int i = 0; i < 20000; i++) {
        uraid_job_status(a, &st);
        if (!st.running || st.done_sectors * 3 >= st.total_sectors)
            break;
        usleep(1000);
    }
    uraid_job_cancel(a);
    uraid_job_status(a, &st);
    if (getenv("RSIO_DEBUG"))
        fprintf(stderr, "job kind %d result %d done %llu/%llu why %s\n", st.kind, st.result,
                (unsigned long long)st.done_sectors, (unsigned long long)st.total_sectors, st.why);
    return st.result;
}

static int until_end(struct uraid_array *a)
{
    struct uraid_job_status st;
    return uraid_job_wait(a, &st);
}

static void online(int level, int nold, int nnew, const char *metadata, struct rng *r, uint64_t seed)
{
    /* 16 MiB: the job runs in steps of 2 MiB per member, and is stopped between two */
    struct setup s = {.level = level, .nold = nold, .nnew = nnew, .member_bytes = 16u << 20, .metadata = metadata};
    int n = nold + nnew;
    harness_beginf("RAID-%d %d -> %d online, with writers%s%s", level, nold, n, metadata ? ", metadata " : "",
                   metadata ? metadata : "");
    int rc = make_setup(&s, r);
    char why[400];
    struct uraid_open_params op = {.sync_speed_max_kib = 20000, .sync_speed_min_kib = 20000}; /* slow enough for the writers to meet it, not slower while they write */
    struct uraid_array *a = NULL;
    if (rc == 0)
        rc = uraid_open(s.paths, nold, &op, &a, why, sizeof why);
    CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        char bad[400];
        CHECK(uraid_grow_online(a, n + 1, s.paths + nold, nnew, bad, sizeof bad) == -EINVAL, "a grow with too few "
              "new members was taken");
        rc = uraid_grow_online(a, n, s.paths + nold, nnew, why, sizeof why);
        CHECK(rc == 0, "grow online: %s", why);
    }
    if (rc == 0) {
        int jr = run_writers(a, &s, seed, until_third, "first part");
        CHECK(jr == -ECANCELED || jr == 0, "the reshape's first part: %s", uraid_strerror(jr));
        compare(a, &s, "after the stop");
        CHECK(uraid_close(a) == 0, "close in mid-reshape");
        a = NULL;
        rc = uraid_open(s.paths, n, &op, &a, why, sizeof why);
        CHECK(rc == 0, "open in mid-reshape: %s", why);
    }
    if (rc == 0) {
        compare(a, &s, "reopened");
        rc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why);
        CHECK(rc == 0, "carry the reshape on: %s", why);
        if (rc == 0) {
            int jr = run_writers(a, &s, seed + 100, until_end, "second part");
            CHECK(jr == 0, "the reshape's end: %s", uraid_strerror(jr));
        }
        CHECK(uraid_size(a) > s.old_bytes, "the array did not grow: %llu bytes", (unsigned long long)uraid_size(a));
        compare(a, &s, "after the online reshape");
        clean_check(a, "after the online reshape");
        CHECK(uraid_close(a) == 0, "close");
        a = NULL;
        rc = uraid_open(s.paths, n, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "open after the end: %s", why);
        if (rc == 0) {
            struct uraid_array_info info;
            uraid_get_info(a, &info);
            CHECK(info.raid_devices == n, "%d raid devices after the end", info.raid_devices);
            compare(a, &s, "reopened after the end");
            uraid_close(a);
        }
    }
    drop_setup(&s);
    harness_end();
}

/* A shrink (md's backwards reshape) stopped at several points: each time
 * the array opens at its new size (both geometries), reads back, takes
 * writes across the position; the last leg is the open array's reshape job
 * (what uraid serve runs) with writer threads going on; then the leaving
 * member is a spare, every byte matches, the check is clean. */
static void shrink_positions(int level, int nold, struct rng *r, uint64_t seed)
{
    struct setup s = {.level = level, .nold = nold, .member_bytes = 16u << 20};
    int n = nold, N = nold - 1;
    harness_beginf("RAID-%d %d -> %d: a shrink stopped, read and written, then finished by the job", level, nold, N);
    int rc = make_setup(&s, r);
    char why[400], what[80];
    struct uraid_grow_params p0 = {.raid_devices = N};
    if (rc == 0)
        rc = uraid_grow_members(s.paths, n, NULL, 0, &p0, NULL, why, sizeof why);
    const char *k = rc == -EINVAL ? strstr(why, "give --array-size ") : NULL;
    uint64_t keep = k ? strtoull(k + 18, NULL, 10) * 2 : 0;
    CHECK(keep > 0, "a shrink without --array-size names the size: %d %s", rc, why);
    rc = keep ? 0 : -EINVAL;
    static const int pct[] = {10, 45};
    int stopped = 0;
    for (size_t i = 0; rc == 0 && i < sizeof pct / sizeof pct[0]; i++) {
        struct stop_at st = {.at = keep * (uint64_t)pct[i] / 100};
        struct uraid_grow_params p = {.raid_devices = N, .array_sectors = keep, .progress = on_progress, .ctx = &st,
                                      .stop = &st.stop, .checkpoint_ms = 1u << 30};
        rc = uraid_grow_members(s.paths, n, NULL, 0, &p, NULL, why, sizeof why);
        CHECK(rc == -EINTR, "stop at %d%%: %d %s", pct[i], rc, why);
        if (rc != -EINTR)
            break;
        stopped++;
        s.old_bytes = keep * 512; /* the end past the new size was given up */
        struct uraid_array *a = NULL;
        snprintf(what, sizeof what, "shrink stopped at %d%%", pct[i]);
        rc = uraid_open(s.paths, n, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "%s: open: %s", what, why);
        if (rc)
            break;
        CHECK(uraid_size(a) == keep * 512, "%s: size %llu, want %llu", what, (unsigned long long)uraid_size(a),
              (unsigned long long)(keep * 512));
        compare(a, &s, what);
        scribble(a, &s, r, (keep - st.at) * 512, what);
        compare(a, &s, what);
        CHECK(uraid_close(a) == 0, "%s: close", what);
    }
    struct uraid_array *a = NULL;
    CHECK(stopped == 2, "the shrink stopped %d times", stopped);
    if (rc == 0 && stopped) {
        struct uraid_open_params op = {.sync_speed_max_kib = 20000, .sync_speed_min_kib = 20000};
        rc = uraid_open(s.paths, n, &op, &a, why, sizeof why);
        CHECK(rc == 0, "open for the job: %s", why);
    }
    if (rc == 0 && a) {
        rc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why);
        CHECK(rc == 0, "the reshape job: %s", why);
        if (rc == 0) {
            int jr = run_writers(a, &s, seed + 7, until_end, "the job's leg");
            CHECK(jr == 0, "the shrink's end: %s", uraid_strerror(jr));
        }
        compare(a, &s, "after the job");
        clean_check(a, "after the job");
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        int spares = 0;
        for (int m = 0; m < info.nmembers; m++)
            spares += info.member[m].slot < 0 && info.member[m].state == URAID_MEMBER_SPARE;
        CHECK(info.raid_devices == N && spares == 1, "%d raid devices, %d spares after the job", info.raid_devices,
              spares);
        reopen_members(a, &s, N);
    }
    drop_setup(&s);
    harness_end();
}

/* Online shrink (uraid_grow_online_shrink): its refusals on a fresh array
 * (no --array-size, no room past the data); then, after an offline grow
 * 4 -> 5 left 4 chunks of room past the data, the served array shrinks
 * back 5 -> 4 while writer threads go on, stopped once by a close and
 * carried on by the job after the open. */
static void online_shrink(int level, struct rng *r, uint64_t seed)
{
    struct setup s = {.level = level, .nold = 4, .nnew = 1, .member_bytes = 16u << 20};
    harness_beginf("RAID-%d 5 -> 4 online (after a grow left room past the data), with writers", level);
    int rc = make_setup(&s, r);
    char why[400];
    struct uraid_array *a = NULL;
    struct uraid_open_params op = {.sync_speed_max_kib = 20000, .sync_speed_min_kib = 20000};
    if (rc == 0 && (rc = uraid_open(s.paths, 4, &op, &a, why, sizeof why)) == 0) {
        char bad[400];
        CHECK(uraid_grow_online_shrink(a, 3, 0, NULL, NULL, 0, 0, bad, sizeof bad) == -EINVAL &&
              strstr(bad, "--array-size"), "a shrink without --array-size: %s", bad);
        CHECK(uraid_grow_online_shrink(a, 3, 0, NULL, NULL, 0, 8, bad, sizeof bad) == -ENOSPC &&
              strstr(bad, "offline"), "a shrink with no room past the data: %s", bad);
        CHECK(uraid_close(a) == 0);
        a = NULL;
    }
    struct uraid_grow_params gp = {.raid_devices = 5};
    if (rc == 0)
        rc = uraid_grow_members(s.paths, 4, s.paths + 4, 1, &gp, NULL, why, sizeof why);
    CHECK(rc == 0, "grow 4 -> 5 offline: %s", why);
    if (rc == 0 && (rc = uraid_open(s.paths, 5, &op, &a, why, sizeof why)) == 0) {
        uint64_t keep = s.old_bytes / 512;
        char bad[400];
        CHECK(uraid_grow_online_shrink(a, 4, 0, NULL, NULL, 0, keep + 8, bad, sizeof bad) == -ENOSPC &&
              strstr(bad, "more than"), "--array-size too big: %s", bad);
        rc = uraid_grow_online_shrink(a, 4, 0, NULL, NULL, 0, keep, why, sizeof why);
        CHECK(rc == 0, "shrink online: %s", why);
        CHECK(rc || uraid_size(a) == s.old_bytes, "the array is the new size at once: %llu",
              (unsigned long long)uraid_size(a));
    }
    if (rc == 0) {
        int jr = run_writers(a, &s, seed + 11, until_third, "first part");
        CHECK(jr == -ECANCELED || jr == 0, "the shrink's first part: %s", uraid_strerror(jr));
        compare(a, &s, "after the stop");
        CHECK(uraid_close(a) == 0, "close in mid-shrink");
        a = NULL;
        rc = uraid_open(s.paths, 5, &op, &a, why, sizeof why);
        CHECK(rc == 0, "open in mid-shrink: %s", why);
    }
    if (rc == 0) {
        compare(a, &s, "reopened");
        rc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why);
        CHECK(rc == 0 || rc == -EBUSY, "carry the shrink on: %s", why);
        int jr = run_writers(a, &s, seed + 12, until_end, "second part");
        CHECK(jr == 0, "the shrink's end: %s", uraid_strerror(jr));
        compare(a, &s, "after the online shrink");
        clean_check(a, "after the online shrink");
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.raid_devices == 4, "%d raid devices after the end", info.raid_devices);
        reopen_members(a, &s, 4);
    }
    drop_setup(&s);
    harness_end();
}

/* ---- RAID-5 -> 6, stopped with the new Q member half recovered --------------------- */

static void level_positions(struct rng *r, uint64_t seed)
{
    struct setup s = {.level = 5, .nold = 4, .nnew = 1, .member_bytes = 16u << 20};
    harness_begin("RAID-5 4 -> RAID-6 5 stopped mid-restripe: opens, reads, writes, its job finishes it");
    int rc = make_setup(&s, r);
    char why[400], what[80];
    static const int pct[] = {20, 55};
    for (size_t k = 0; rc == 0 && k < 2; k++) {
        struct stop_at st = {.at = s.old_bytes / 512 * (uint64_t)pct[k] / 100};
        struct uraid_grow_params p = {.raid_devices = k ? 0 : 5, .level_set = !k, .level = 6, .resume_only = !!k,
                                      .progress = on_progress, .ctx = &st, .stop = &st.stop,
                                      .checkpoint_ms = 1u << 30};
        rc = uraid_grow_members(s.paths, k ? 5 : 4, s.paths + 4, k ? 0 : 1, &p, NULL, why, sizeof why);
        CHECK(rc == -EINTR, "stop at %d%%: %d %s", pct[k], rc, why);
        if (rc != -EINTR)
            break;
        struct uraid_array *a = NULL;
        snprintf(what, sizeof what, "stopped at %d%%", pct[k]);
        rc = uraid_open(s.paths, 5, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "%s: open: %s", what, why);
        if (rc)
            break;
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.level == 6 && info.member[4].state == URAID_MEMBER_REBUILDING, "%s: level %d, the new member's "
              "state %d (expected RAID-6, rebuilding)", what, info.level, info.member[4].state);
        compare(a, &s, what);
        scribble(a, &s, r, st.at * 512, what);
        compare(a, &s, what);
        if (k == 0) {
            CHECK(uraid_close(a) == 0, "%s: close", what);
            continue;
        }
        rc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why);
        CHECK(rc == 0, "%s: the reshape job: %s", what, why);
        if (rc == 0) {
            int jr = run_writers(a, &s, seed + 200, until_end, "the rest");
            CHECK(jr == 0, "the reshape's end: %s", uraid_strerror(jr));
        }
        uraid_get_info(a, &info);
        CHECK(info.member[4].state == URAID_MEMBER_IN_SYNC, "after the end: the new member's state %d",
              info.member[4].state);
        compare(a, &s, "after the end");
        clean_check(a, "after the end");
        CHECK(uraid_close(a) == 0, "close");
        rc = uraid_open(s.paths, 5, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "open after the end: %s", why);
        if (rc == 0) {
            uraid_get_info(a, &info);
            CHECK(info.level == 6 && info.degraded == 0 && info.member[4].state == URAID_MEMBER_IN_SYNC,
                  "reopened: level %d degraded %d, the new member's state %d", info.level, info.degraded,
                  info.member[4].state);
            compare(a, &s, "reopened after the end");
            clean_check(a, "reopened after the end");
            uraid_close(a);
        }
    }
    drop_setup(&s);
    harness_end();
}

static void log_line(void *ctx, enum uraid_log_level level, const char *message)
{
    (void)ctx;
    (void)level;
    fprintf(stderr, "  log: %s\n", message);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "reshape_io");
    if (getenv("RSIO_DEBUG"))
        uraid_set_log(log_line, NULL, URAID_LOG_INFO);
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    stopped_positions(5, 4, 1, &r);
    stopped_positions(6, 4, 2, &r);
    online(5, 4, 1, NULL, &r, seed);
    online(6, 4, 1, NULL, &r, seed);
    online(5, 4, 1, "1.1", &r, seed);
    shrink_positions(5, 5, &r, seed);
    shrink_positions(6, 5, &r, seed);
    online_shrink(5, &r, seed);
    online_shrink(6, &r, seed);
    level_positions(&r, seed);
    bitmap_reshape(&r);
    return harness_finish();
}
