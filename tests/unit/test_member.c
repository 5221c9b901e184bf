/* Member backends and layers: the file backend (buffered and O_DIRECT
 * paths, on ext4 under /tmp and tmpfs under /dev/shm, and a loop block
 * device with 4 KiB sectors when losetup works), direct_fd, the
 * fault-injection layer (ranges, overlaps, dropped writes, vanish, clear,
 * hits, rules added under concurrent I/O), the throttle layer's timing, and
 * the command-line layer specs with their error messages.
 * Randomised: prints its seed; URAID_TEST_SEED=N replays.
 * URAID_TEST_QUICK=1 (the sanitizer build) shrinks sizes and iterations. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "member/member.h"
#include "member/powercut.h"

static struct rng rng;
static int quick;
static char tmpdir_disk[64], tmpdir_shm[64];

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A file of `size` bytes of seeded noise; its contents are also in *shadow. */
static void make_file(const char *path, size_t size, uint8_t **shadow)
{
    uint8_t *b = malloc(size);
    rng_fill(&rng, b, size);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
    CHECK(pwrite(fd, b, size, 0) == (ssize_t)size);
    close(fd);
    if (shadow)
        *shadow = b;
    else
        free(b);
}

/* The file's bytes as another process would see them (a fresh descriptor). */
static int file_equals(const char *path, const uint8_t *want, size_t size)
{
    uint8_t *got = malloc(size);
    int fd = open(path, O_RDONLY);
    ssize_t r = fd >= 0 ? pread(fd, got, size, 0) : -1;
    if (fd >= 0)
        close(fd);
    int ok = r == (ssize_t)size && !memcmp(got, want, size);
    free(got);
    return ok;
}

static int is_direct(int fd)
{
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : 0;
    return fl > 0 && (fl & O_DIRECT);
}

/* ---------------------------------------------------------------- file */

/* Random round trips against a shadow copy: odd offsets and lengths (the
 * buffered path) and aligned ones (the O_DIRECT path), then the file as a
 * separate reader sees it. Returns whether O_DIRECT served aligned requests. */
static int round_trips(const char *path, size_t size, size_t align)
{
    uint8_t *shadow;
    make_file(path, size, &shadow);
    struct member *m = NULL;
    int rc = member_open_file(path, 0, &m);
    CHECK(rc == 0, "open %s: %d", path, rc);
    if (rc)
        return 0;
    CHECK(m->size == size, "size %llu", (unsigned long long)m->size);
    uint8_t *mem = aligned_alloc(4096, 1 << 20), *rd = aligned_alloc(4096, 1 << 20);
    int direct = is_direct(member_direct_fd(m, mem, align, 0, 0));
    int iters = quick ? 60 : 400;
    for (int i = 0; i < iters; i++) {
        int aligned = i & 1;
        size_t len, off;
        uint8_t *buf;
        if (aligned) {
            len = align * (1 + rng_below(&rng, (256u << 10) / align));
            off = align * rng_below(&rng, (size - len) / align + 1);
            buf = mem;
            CHECK(!direct || is_direct(member_direct_fd(m, buf, len, off, 1)));
        } else {
            len = 1 + rng_below(&rng, 200000);
            off = rng_below(&rng, size - len + 1);
            buf = mem + 1 + rng_below(&rng, 511);
            CHECK(!is_direct(member_direct_fd(m, buf, len, off, 1)));
        }
        if (rng_below(&rng, 2)) {
            rng_fill(&rng, buf, len);
            rc = member_write(m, buf, len, off);
            CHECK(rc == 0, "write %zu@%zu: %d", len, off, rc);
            memcpy(shadow + off, buf, len);
        } else {
            uint8_t *dst = aligned ? rd : rd + (buf - mem);
            rc = member_read(m, dst, len, off);
            CHECK(rc == 0 && !memcmp(dst, shadow + off, len), "read %zu@%zu: %d (aligned %d)", len, off, rc,
                  aligned);
        }
    }
    /* Coherence: a buffered write by someone else is seen by a direct read,
     * a direct write by a buffered reader. */
    int fd = open(path, O_RDWR);
    memset(shadow, 0x5a, align);
    CHECK(pwrite(fd, shadow, align, 0) == (ssize_t)align);
    close(fd);
    CHECK(member_read(m, rd, align, 0) == 0 && !memcmp(rd, shadow, align), "direct read sees buffered write");
    CHECK(member_flush(m) == 0);
    CHECK(file_equals(path, shadow, size), "file contents after round trips");
    member_close(m);
    free(mem);
    free(rd);
    free(shadow);
    unlink(path);
    return direct;
}

static void test_file_roundtrips(void)
{
    char path[128];
    size_t size = quick ? (2u << 20) : (8u << 20);
    snprintf(path, sizeof path, "%s/rt", tmpdir_disk);
    int d_disk = round_trips(path, size, 512);
    printf("  O_DIRECT on %s (ext4): %s\n", tmpdir_disk, d_disk ? "used" : "not used");
    CHECK(d_disk, "ext4 accepts O_DIRECT: the aligned path must use it");
    snprintf(path, sizeof path, "%s/rt", tmpdir_shm);
    int d_shm = round_trips(path, size, 512);
    printf("  O_DIRECT on %s (tmpfs): %s\n", tmpdir_shm, d_shm ? "used (Linux >= 6.6 accepts it)" : "not used (fell back)");
}

static void test_direct_fd(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/dfd", tmpdir_disk);
    uint8_t *shadow;
    make_file(path, 1 << 20, &shadow);
    struct member *m;
    CHECK(member_open_file(path, 0, &m) == 0);
    CHECK(!strcmp(m->ops->kind, "file"));
    uint8_t *a = aligned_alloc(4096, 65536);
    int dfd = member_direct_fd(m, a, 4096, 8192, 0);
    int bfd = member_direct_fd(m, a + 1, 4096, 8192, 0);
    CHECK(dfd >= 0 && bfd >= 0 && dfd != bfd);
    CHECK(is_direct(dfd) && !is_direct(bfd));
    CHECK(member_direct_fd(m, a, 4095, 8192, 0) == bfd, "odd length: buffered");
    CHECK(member_direct_fd(m, a, 4096, 8193, 0) == bfd, "odd offset: buffered");
    CHECK(member_direct_fd(m, a, 4096, 8192, 1) == dfd, "aligned write: direct");
    /* What io_uring will do with them: plain pread on the given descriptor. */
    CHECK(pread(dfd, a, 4096, 8192) == 4096 && !memcmp(a, shadow + 8192, 4096));
    CHECK(pread(bfd, a + 1, 100, 3) == 100 && !memcmp(a + 1, shadow + 3, 100));
    member_close(m);

    /* Read-only: reads work, no descriptor is offered for writes and writes
     * are refused without touching the file. */
    CHECK(member_open_file(path, 1, &m) == 0);
    CHECK(m->readonly);
    CHECK(member_direct_fd(m, a, 4096, 0, 1) == -1);
    CHECK(member_direct_fd(m, a, 4096, 0, 0) >= 0);
    memset(a, 1, 4096);
    CHECK(member_write(m, a, 4096, 0) == -EROFS);
    CHECK(member_write(m, a + 1, 10, 5) == -EROFS);
    CHECK(member_flush(m) == 0);
    CHECK(member_read(m, a, 4096, 0) == 0 && !memcmp(a, shadow, 4096));
    member_close(m);
    CHECK(file_equals(path, shadow, 1 << 20), "read-only member wrote nothing");
    unlink(path);
    free(shadow);

    /* A file whose size is not a multiple of the block size: the tail reads
     * fine; reading past the end is an error, never a silent short read. */
    make_file(path, 10000, &shadow);
    CHECK(member_open_file(path, 0, &m) == 0);
    CHECK(member_read(m, a, 10000 - 9216, 9216) == 0 && !memcmp(a, shadow + 9216, 784));
    CHECK(member_read(m, a, 1024, 9216) == -EIO, "aligned read across EOF");
    CHECK(member_read(m, a + 3, 100, 9950) == -EIO, "buffered read across EOF");
    CHECK(member_read(m, a, 8192, 0) == 0 && !memcmp(a, shadow, 8192));
    member_close(m);
    unlink(path);
    free(shadow);
    free(a);

    CHECK(member_open_file("/nonexistent/uraid-member", 0, &m) == -ENOENT);
    CHECK(member_open_file(tmpdir_disk, 0, &m) == -EISDIR);
}

/* A loop device with 4 KiB logical sectors: BLKSSZGET must raise the
 * alignment, so 512-aligned requests take the buffered path. Needs root and
 * losetup; skipped (with a message) elsewhere. */
static void test_blockdev(void)
{
    char img[128], cmd[256], dev[64] = "";
    snprintf(img, sizeof img, "%s/loop.img", tmpdir_disk);
    uint8_t *shadow;
    make_file(img, 4 << 20, &shadow);
    snprintf(cmd, sizeof cmd, "losetup -f --show -b 4096 %s 2>/dev/null", img);
    FILE *p = geteuid() == 0 ? popen(cmd, "r") : NULL;
    if (p) {
        if (!fgets(dev, sizeof dev, p))
            dev[0] = 0;
        pclose(p);
    }
    dev[strcspn(dev, "\n")] = 0;
    if (!dev[0]) {
        /* not run, so not passed: the case says so */
        harness_skip("losetup unavailable (needs root and /dev/loop*)");
        unlink(img);
        free(shadow);
        return;
    }
    struct member *m;
    int rc = member_open_file(dev, 0, &m);
    CHECK(rc == 0, "open %s: %d", dev, rc);
    if (!rc) {
        CHECK(!strcmp(m->ops->kind, "blockdev"));
        CHECK(m->size == 4 << 20);
        uint8_t *a = aligned_alloc(4096, 65536);
        CHECK(is_direct(member_direct_fd(m, a, 4096, 4096, 0)), "4K-aligned: direct");
        CHECK(!is_direct(member_direct_fd(m, a, 512, 512, 0)), "512-aligned on a 4Kn device: buffered");
        rng_fill(&rng, a, 65536);
        CHECK(member_write(m, a, 65536, 8192) == 0);
        memcpy(shadow + 8192, a, 65536);
        CHECK(member_write(m, a + 7, 1000, 70001) == 0);
        memcpy(shadow + 70001, a + 7, 1000);
        CHECK(member_flush(m) == 0);
        CHECK(member_read(m, a, 4096 * 4, 65536) == 0 && !memcmp(a, shadow + 65536, 4096 * 4));
        CHECK(member_zero(m, 3 * 4096, 12288) == 0, "BLKZEROOUT on %s", dev);
        memset(shadow + 12288, 0, 3 * 4096);
        free(a);
        member_close(m);
        printf("  block device %s (4 KiB sectors): O_DIRECT used for 4K-aligned requests\n", dev);
    }
    snprintf(cmd, sizeof cmd, "losetup -d %s", dev);
    CHECK(system(cmd) == 0, "detach %s", dev);
    CHECK(file_equals(img, shadow, 4 << 20), "loop image contents");
    unlink(img);
    free(shadow);
}

/* --------------------------------------------------------------- fault */

static struct member *open_layered(const char *name, size_t size, uint8_t **shadow)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", tmpdir_shm, name);
    make_file(path, size, shadow);
    struct member *m = NULL;
    CHECK(member_open_file(path, 0, &m) == 0);
    return m;
}

static void remove_member_file(struct member *m)
{
    unlink(m->path);
}

/* Zeroing: a hole punched in a file (or zeros written where it cannot be),
 * the fault rules seeing it as a write, the throttle passing it on. */
static void test_zero(void)
{
    const char *dirs[2] = {tmpdir_disk, tmpdir_shm};
    for (int i = 0; i < 2; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/zero.img", dirs[i]);
        uint8_t *shadow;
        make_file(path, 1 << 20, &shadow);
        struct member *m;
        if (member_open_file(path, 0, &m) == 0) {
            CHECK(member_zero(m, 200000, 4096 + 512) == 0, "zero on %s", path);
            memset(shadow + 4096 + 512, 0, 200000);
            member_close(m);
        }
        CHECK(file_equals(path, shadow, 1 << 20), "%s: zeroed range, the rest kept", path);
        CHECK(member_open_file(path, 1, &m) == 0 && member_zero(m, 4096, 0) == -EROFS, "read-only member refuses");
        member_close(m);
        unlink(path);
        free(shadow);
    }
    uint8_t *shadow;
    struct member *m = open_layered("zero-fault.img", 1 << 20, &shadow);
    if (!m)
        return;
    char path[128];
    snprintf(path, sizeof path, "%s", m->path);
    CHECK(member_fault_wrap(m, &m) == 0);
    struct fault_rule eio = {.what = FAULT_WRITE, .start = 65536, .len = 4096, .err = -EIO};
    struct fault_rule drop = {.what = FAULT_DROP_WRITE, .start = 131072, .len = 4096};
    struct fault_rule pend = {.what = FAULT_READ | FAULT_HEAL, .start = 196608, .len = 4096, .err = -EIO};
    CHECK(member_fault_add(m, &eio) == 0 && member_fault_add(m, &drop) == 0 && member_fault_add(m, &pend) == 0);
    CHECK(member_zero(m, 8192, 61440) == -EIO, "a write-eio rule fails the zeroing");
    CHECK(member_zero(m, 16384, 126976) == 0, "zeroing around a dropped range");
    memset(shadow + 126976, 0, 4096);
    memset(shadow + 135168, 0, 8192);
    uint8_t page[4096];
    CHECK(member_read(m, page, 4096, 196608) == -EIO, "pending sector unreadable before");
    CHECK(member_zero(m, 4096, 196608) == 0);
    memset(shadow + 196608, 0, 4096);
    CHECK(member_read(m, page, 4096, 196608) == 0, "zeroing heals a pending sector as a write does");
    struct member *t;
    CHECK(member_throttle_wrap(m, 1000000, 0, &t) == 0);
    double t0 = now_ms();
    CHECK(member_zero(t, 512 << 10, 262144) == 0);
    memset(shadow + 262144, 0, 512 << 10);
    /* a transfer of 512 KiB at 1 MB/s would take half a second */
    CHECK(now_ms() - t0 < 250, "a zeroed range moves no data through the throttle: %.1f ms", now_ms() - t0);
    member_close(t);
    CHECK(file_equals(path, shadow, 1 << 20), "fault/throttle layers: zeroed where allowed, the rest kept");
    unlink(path);
    free(shadow);
}

static void test_fault_rules(void)
{
    uint8_t *shadow, buf[65536];
    struct member *f, *inner = open_layered("fault", 1 << 20, &shadow);
    char path[128];
    snprintf(path, sizeof path, "%s", inner->path);
    CHECK(member_fault_wrap(inner, &f) == 0);
    CHECK(!strcmp(f->path, path) && f->size == 1 << 20);
    CHECK(member_direct_fd(f, buf, 4096, 0, 0) == -1, "the layer keeps io_uring out");
    CHECK(member_fault_add(inner, &(struct fault_rule){FAULT_READ, 0, 1, 0}) == -EINVAL, "not a fault layer");
    CHECK(member_fault_add(f, &(struct fault_rule){0, 0, 1, 0}) == -EINVAL, "no kind");
    CHECK(member_fault_add(f, &(struct fault_rule){FAULT_READ, 0, 0, 0}) == -EINVAL, "empty range");
    CHECK(member_fault_add(f, &(struct fault_rule){FAULT_READ, 0, 1, EIO}) == -EINVAL, "positive errno");
    CHECK(member_fault_hits(f) == 0);

    /* Reads of [64K, 68K) fail with the default -EIO; writes there work. */
    CHECK(member_fault_add(f, &(struct fault_rule){FAULT_READ, 65536, 4096, 0}) == 0);
    CHECK(member_read(f, buf, 4096, 0) == 0 && !memcmp(buf, shadow, 4096));
    CHECK(member_read(f, buf, 4096, 61440) == 0, "just before");
    CHECK(member_read(f, buf, 4096, 69632) == 0, "just after");
    CHECK(member_read(f, buf, 4097, 61440) == -EIO, "overlaps the first byte");
    CHECK(member_read(f, buf, 1, 69631) == -EIO, "the last byte");
    CHECK(member_read(f, buf, 65536, 32768) == -EIO, "covers it");
    CHECK(member_fault_hits(f) == 3);
    memset(buf, 0xa5, 4096);
    CHECK(member_write(f, buf, 4096, 65536) == 0, "reads-only rule lets writes through");
    memcpy(shadow + 65536, buf, 4096);

    /* Writes of [128K, 132K) fail with a chosen errno and write nothing. */
    CHECK(member_fault_add(f, &(struct fault_rule){FAULT_WRITE, 131072, 4096, -ENOSPC}) == 0);
    memset(buf, 0x3c, 8192);
    CHECK(member_write(f, buf, 8192, 126976) == -ENOSPC, "write overlapping fails whole");
    CHECK(member_read(f, buf, 8192, 126976) == 0 && !memcmp(buf, shadow + 126976, 8192), "nothing written");
    CHECK(member_fault_hits(f) == 4);

    /* Dropped writes: success reported, the dropped range keeps its old
     * data, the rest of the request is really written. */
    CHECK(member_fault_add(f, &(struct fault_rule){FAULT_DROP_WRITE, 262144, 8192, 0}) == 0);
    CHECK(member_fault_add(f, &(struct fault_rule){FAULT_DROP_WRITE, 278528, 4096, 0}) == 0);
    rng_fill(&rng, buf, 32768);
    CHECK(member_write(f, buf, 32768, 258048) == 0, "dropped write reports success");
    memcpy(shadow + 258048, buf, 4096);           /* [252K, 256K) written */
    memcpy(shadow + 270336, buf + 12288, 8192);   /* [264K, 272K) written */
    memcpy(shadow + 282624, buf + 24576, 8192);   /* [276K, 284K) written */
    CHECK(member_fault_hits(f) == 5);
    CHECK(member_flush(f) == 0);
    CHECK(file_equals(path, shadow, 1 << 20), "only the dropped ranges kept old data");
    CHECK(member_write(f, buf, 4096, 270336) == 0 && member_fault_hits(f) == 5, "between the drops: written");
    memcpy(shadow + 270336, buf, 4096);

    /* Clear: everything passes again; hits keep their count. */
    CHECK(member_fault_clear(f) == 0);
    CHECK(member_read(f, buf, 65536, 32768) == 0);
    memset(buf, 0x11, 8192);
    CHECK(member_write(f, buf, 8192, 126976) == 0);
    memcpy(shadow + 126976, buf, 8192);
    CHECK(member_fault_hits(f) == 5);

    /* Latency: every request takes at least that long. */
    CHECK(member_fault_latency(f, 3000) == 0);
    double t0 = now_ms();
    CHECK(member_read(f, buf, 512, 0) == 0);
    CHECK(member_write(f, buf, 512, 0) == 0);
    memcpy(shadow, buf, 512);
    double dt = now_ms() - t0;
    CHECK(dt >= 6 && dt < 200, "two requests with 3 ms latency took %.1f ms", dt);
    CHECK(member_fault_latency(f, 0) == 0);

    /* Vanish: every later call fails with -ENXIO and is counted. */
    CHECK(member_fault_vanish(f) == 0);
    CHECK(member_read(f, buf, 512, 0) == -ENXIO);
    CHECK(member_write(f, buf, 512, 4096) == -ENXIO);
    CHECK(member_flush(f) == -ENXIO);
    CHECK(member_fault_hits(f) == 8);
    CHECK(file_equals(path, shadow, 1 << 20), "a vanished member is not written");
    CHECK(member_fault_clear(f) == 0, "clear brings a vanished member back");
    CHECK(member_read(f, buf, 512, 0) == 0 && !memcmp(buf, shadow, 512));
    member_close(f);
    unlink(path);
    free(shadow);

    /* Read-only members: a drop rule does not turn a refused write into a
     * reported success. */
    make_file(path, 8192, NULL);
    CHECK(member_open_file(path, 1, &inner) == 0);
    CHECK(member_fault_wrap(inner, &f) == 0 && f->readonly);
    CHECK(member_fault_add(f, &(struct fault_rule){FAULT_DROP_WRITE, 0, 4096, 0}) == 0);
    CHECK(member_write(f, buf, 512, 0) == -EROFS);
    member_close(f);
    unlink(path);
}

/* Four threads do write/read/verify rounds on their own regions while the
 * main thread keeps adding rules elsewhere, then fails thread 0's region. */
struct worker {
    struct member *m;
    int id;
    atomic_int *stop;
    atomic_int rule_on; /* set once thread 0's region has a read-eio rule */
    long rounds, unexpected;
    atomic_long eio_after_rule;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    uint8_t out[4096], in[4096];
    struct rng r;
    rng_seed(&r, (uint64_t)w->id + 1);
    uint64_t base = (uint64_t)w->id * 65536;
    while (!atomic_load(w->stop)) {
        uint64_t off = base + 4096 * rng_below(&r, 16);
        int ruled = atomic_load(&w->rule_on);
        rng_fill(&r, out, sizeof out);
        int wr = member_write(w->m, out, sizeof out, off);
        int rd = member_read(w->m, in, sizeof in, off);
        if (wr || memcmp(in, out, sizeof in) || rd) {
            if (ruled && !wr && rd == -EIO)
                w->eio_after_rule++;
            else if (!(rd == -EIO && w->id == 0)) /* the rule may land between our check and the read */
                w->unexpected++;
        }
        w->rounds++;
    }
    return NULL;
}

static void test_fault_concurrent(void)
{
    uint8_t *shadow;
    struct member *f, *inner = open_layered("conc", 8 << 20, &shadow);
    free(shadow);
    CHECK(member_fault_wrap(inner, &f) == 0);
    atomic_int stop = 0;
    struct worker w[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.m = f, .id = i, .stop = &stop};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    int nrules = quick ? 300 : 3000;
    for (int i = 0; i < nrules; i++) {
        struct fault_rule r = {1u << rng_below(&rng, 3), (1u << 20) + rng_below(&rng, 7u << 20),
                               1 + rng_below(&rng, 65536), 0};
        CHECK(member_fault_add(f, &r) == 0);
        if (i % 64 == 0)
            usleep(3000); /* spread the additions over the workers' rounds */
    }
    atomic_store(&w[0].rule_on, 1);
    CHECK(member_fault_add(f, &(struct fault_rule){FAULT_READ, 0, 65536, 0}) == 0);
    double t0 = now_ms();
    while (w[0].eio_after_rule == 0 && now_ms() - t0 < 2000)
        usleep(1000);
    atomic_store(&stop, 1);
    long total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += w[i].rounds;
        CHECK(w[i].unexpected == 0, "thread %d: %ld unexpected results", i, w[i].unexpected);
    }
    CHECK(w[0].eio_after_rule > 0, "thread 0 saw its region fail after the rule was added");
    CHECK(w[1].rounds > 0 && w[2].rounds > 0 && w[3].rounds > 0);
    printf("  %ld rounds of write+read on 4 threads while %d rules were added\n", total, nrules + 1);
    remove_member_file(f);
    member_close(f);
}

/* ------------------------------------------------------------ throttle */

struct timed_io {
    struct member *m;
    size_t total, req;
    double ms;
    int rc;
};

static void *timed_reads(void *arg)
{
    struct timed_io *t = arg;
    uint8_t *buf = malloc(t->req);
    double t0 = now_ms();
    t->rc = 0;
    for (size_t done = 0; done < t->total && !t->rc; done += t->req)
        t->rc = member_read(t->m, buf, t->req, done % t->m->size);
    t->ms = now_ms() - t0;
    free(buf);
    return NULL;
}

static void test_throttle(void)
{
    const uint64_t rate = 40000000; /* 40 MB/s */
    size_t total = quick ? (2u << 20) : (4u << 20);
    double expect = total * 1e3 / rate;
    uint8_t *shadow;
    struct member *t1, *t2;
    CHECK(member_throttle_wrap(open_layered("thr1", 4 << 20, &shadow), rate, 0, &t1) == 0);
    free(shadow);
    CHECK(member_throttle_wrap(open_layered("thr2", 4 << 20, &shadow), rate, 0, &t2) == 0);
    free(shadow);
    CHECK(!strcmp(t1->ops->kind, "throttle") && member_direct_fd(t1, &rate, 8, 0, 0) == -1);

    /* One member, one thread. */
    struct timed_io a = {t1, total, 65536, 0, 0}, b = {t2, total, 65536, 0, 0};
    timed_reads(&a);
    CHECK(a.rc == 0);
    printf("  one member: %zu KiB at 40 MB/s in %.1f ms (ideal %.1f, %+.1f%%)\n", total >> 10, a.ms, expect,
           (a.ms / expect - 1) * 100);
    /* the lower bound is the layer's promise; the upper one only catches a
     * layer that sleeps far too long, with room for a loaded machine */
    CHECK(a.ms > expect * 0.97 && a.ms < expect * 10, "%.1f ms, expected %.1f", a.ms, expect);

    /* Two members in parallel: twice the bandwidth, about the same time.
     * Served one after the other they would take twice as long: the
     * parallel run is held against the two run one after the other just
     * before it, so a loaded machine (which stretches both alike) does not
     * decide; best of three, as one thread can be stalled for a while. */
    pthread_t th1, th2;
    double both = 0, serial = 0;
    for (int attempt = 0; attempt < 3 && (attempt == 0 || both >= serial * 0.8); attempt++) {
        timed_reads(&a);
        serial = a.ms;
        timed_reads(&b);
        serial += b.ms;
        pthread_create(&th1, NULL, timed_reads, &a);
        pthread_create(&th2, NULL, timed_reads, &b);
        pthread_join(th1, NULL);
        pthread_join(th2, NULL);
        both = a.ms > b.ms ? a.ms : b.ms;
        printf("  two members in parallel: %.1f ms, one after the other %.1f ms (one member alone: ideal %.1f)\n",
               both, serial, expect);
    }
    CHECK(a.rc == 0 && b.rc == 0);
    CHECK(both > expect * 0.97 && both < serial * 0.8, "%.1f ms in parallel, %.1f one after the other", both, serial);

    /* Two threads on one member: served one at a time, the rate holds. */
    struct timed_io c = {t1, total / 2, 65536, 0, 0}, d = {t1, total / 2, 65536, 0, 0};
    /* the pair's wall time: either thread alone may have run part of it unshared */
    double pair_t0 = now_ms();
    pthread_create(&th1, NULL, timed_reads, &c);
    pthread_create(&th2, NULL, timed_reads, &d);
    pthread_join(th1, NULL);
    pthread_join(th2, NULL);
    both = now_ms() - pair_t0;
    printf("  two threads on one member: %.1f ms (ideal %.1f)\n", both, expect);
    CHECK(both > expect * 0.97 && both < expect * 10, "%.1f ms, expected %.1f", both, expect);
    remove_member_file(t1);
    remove_member_file(t2);
    member_close(t1);
    member_close(t2);

    /* Latency only: 20 small requests at 2 ms each. */
    struct member *lt;
    CHECK(member_throttle_wrap(open_layered("thr3", 1 << 20, &shadow), 0, 2000, &lt) == 0);
    free(shadow);
    struct timed_io e = {lt, 20 * 4096, 4096, 0, 0};
    timed_reads(&e);
    printf("  20 requests at 2 ms latency: %.1f ms (ideal 40.0)\n", e.ms);
    CHECK(e.rc == 0 && e.ms > 40 * 0.95 && e.ms < 40 * 10, "%.1f ms", e.ms);
    uint8_t buf[16];
    {
        /* idle for longer than the model's slack first: a request arriving
         * within 1 ms of the last one's end starts at that end (back to
         * back), which would count part of this one before t0 */
        usleep(3000);
        double t0 = now_ms();
        CHECK(member_flush(lt) == 0);
        CHECK(member_write(lt, "abcdefgh", 8, 100) == 0);
        CHECK(member_read(lt, buf, 8, 100) == 0 && !memcmp(buf, "abcdefgh", 8));
        double dt = now_ms() - t0;
        CHECK(dt >= 6 * 0.95, "flush, write and read take their latency: %.1f ms", dt);
    }
    remove_member_file(lt);
    member_close(lt);
}

/* ---------------------------------------------------------------- spec */

static struct member *spec_member(const char *spec, int expect_rc, const char *expect_why)
{
    uint8_t *shadow;
    struct member *m = open_layered("spec", 1 << 20, &shadow), *orig = m;
    free(shadow);
    char why[256] = "untouched";
    int rc = member_apply_spec(&m, spec, why, sizeof why);
    CHECK(rc == expect_rc, "spec '%s': rc %d (%s)", spec, rc, why);
    if (expect_why) {
        CHECK(strstr(why, expect_why) != NULL, "spec '%s': error '%s' lacks '%s'", spec, why, expect_why);
        CHECK(!strchr(why, '\n'), "one line");
        CHECK(m == orig, "a bad spec leaves the member as it was");
        printf("  '%s' -> %s\n", spec, why);
    }
    return m;
}

static double time_read(struct member *m, size_t len, int *rc)
{
    uint8_t *buf = malloc(len);
    double t0 = now_ms();
    *rc = member_read(m, buf, len, 0);
    free(buf);
    return now_ms() - t0;
}

static void drop_spec_member(struct member *m)
{
    remove_member_file(m);
    member_close(m);
}

static void test_spec(void)
{
    uint8_t buf[8192];
    int rc;
    struct member *m = spec_member("throttle=2M", 0, NULL);
    CHECK(!strcmp(m->ops->kind, "throttle"));
    double ms = time_read(m, 40000, &rc); /* 40 kB at 2 MB/s: 20 ms */
    CHECK(rc == 0 && ms > 19 && ms < 600, "throttle=2M: 40000 bytes in %.1f ms", ms);
    drop_spec_member(m);

    /* lower bounds: what the layer promises; upper ones (10x) only catch a
     * wrong unit (s for ms, B for MB: 1000x), with room for a loaded machine */
    m = spec_member(" throttle=2MB/s , latency=5ms ", 0, NULL);
    ms = time_read(m, 40000, &rc);
    CHECK(rc == 0 && ms > 24 && ms < 750, "2 MB/s + 5 ms: 40000 bytes in %.1f ms", ms);
    drop_spec_member(m);

    m = spec_member("throttle=1Mi", 0, NULL);
    ms = time_read(m, 20480, &rc); /* 20 KiB at 1 MiB/s: 19.5 ms */
    CHECK(rc == 0 && ms > 19 && ms < 600, "throttle=1Mi: 20 KiB in %.1f ms", ms);
    drop_spec_member(m);

    m = spec_member("latency=2ms", 0, NULL);
    CHECK(!strcmp(m->ops->kind, "fault"));
    ms = time_read(m, 512, &rc);
    CHECK(rc == 0 && ms >= 2 && ms < 200, "latency=2ms: %.1f ms", ms);
    drop_spec_member(m);

    m = spec_member("read-eio=64K+4K;write-eio=0+1;drop-writes=128K+4K", 0, NULL);
    CHECK(member_read(m, buf, 4096, 65536) == -EIO);
    CHECK(member_read(m, buf, 1, 65535) == 0 && member_read(m, buf, 1, 69632) == 0);
    CHECK(member_write(m, buf, 512, 0) == -EIO);
    CHECK(member_write(m, buf, 512, 512) == 0);
    uint8_t before[4096];
    CHECK(member_read(m, before, 4096, 131072) == 0);
    memset(buf, ~before[0], 4096);
    CHECK(member_write(m, buf, 4096, 131072) == 0);
    CHECK(member_read(m, buf, 4096, 131072) == 0 && !memcmp(buf, before, 4096), "dropped");
    CHECK(member_fault_hits(m) == 3, "one fault layer holds all three rules");
    drop_spec_member(m);

    m = spec_member("throttle=100M;vanish", 0, NULL);
    CHECK(!strcmp(m->ops->kind, "fault") && member_read(m, buf, 512, 0) == -ENXIO);
    drop_spec_member(m);

    m = spec_member("read-eio=1M-4K+4K", -EINVAL, "bad layer spec 'read-eio=1M-4K+4K'");
    drop_spec_member(m);
    m = spec_member("read-eio=0xff000+4KiB;", 0, NULL);
    CHECK(member_read(m, buf, 1, 0xff000 + 4095) == -EIO);
    drop_spec_member(m);

    static const struct { const char *spec, *why; } bad[] = {
        {"throttle=60Q", "bad layer spec 'throttle=60Q': unknown rate suffix"},
        {"throttle=fast", "expected a rate"},
        {"throttle=", "expected KEY=VALUE"},
        {"read-eio=1M", "bad layer spec 'read-eio=1M': expected OFFSET+LENGTH"},
        {"read-eio=4K+0", "range is empty"},
        {"write-eio=2M+4K", "past the member's end (1048576 bytes)"},
        {"drop-writes=1X+4K", "unknown size suffix"},
        {"latency=5", "needs a unit"},
        {"latency=5min", "unknown time unit"},
        {"latency=-1ms", "expected a time"},
        {"latency=2ms,latency=3ms", "latency given twice"},
        {"throttle=60M,read-eio=0+4K", "cannot share a spec with throttle"},
        {"vanish=1", "vanish takes no value"},
        {"frobnicate=3", "bad layer spec 'frobnicate=3': unknown key"},
        {"read-eio=0+4K;bogus", "bad layer spec 'bogus'"},
        {"", "no layer given"},
        {" ; ", "no layer given"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = spec_member(bad[i].spec, -EINVAL, bad[i].why);
        CHECK(!strcmp(m->ops->kind, "file"), "'%s' applied nothing", bad[i].spec);
        CHECK(member_read(m, buf, 4096, 0) == 0);
        drop_spec_member(m);
    }
}

/* Which members the PPL may leave unflushed: the disk model keeps no
 * volatile cache (write_through), through any fault layer over it, unless a
 * simulated power cut lies below it or over it (its cut keeps only what
 * flushes covered); a file keeps writes in the page cache. */
static void test_spec_write_through(void)
{
    static const struct {
        const char *spec;
        int write_through, power_sim;
    } cases[] = {
        {"disk=nvme", 1, 0},
        {"disk=nvme;latency=1ms", 1, 0},
        {"latency=1ms", 0, 0},
        {"powercut=wt-below,seed=1;disk=nvme", 0, 1},
        {"disk=nvme;powercut=wt-above,seed=1", 0, 1},
        {"powercut=wt-fault,seed=1;latency=1ms", 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct member *m = spec_member(cases[i].spec, 0, NULL);
        CHECK(m->write_through == cases[i].write_through && m->power_sim == cases[i].power_sim,
              "'%s': write_through %d, power_sim %d (want %d, %d)", cases[i].spec, m->write_through, m->power_sim,
              cases[i].write_through, cases[i].power_sim);
        drop_spec_member(m);
    }
    powercut_domain_forget("wt-below");
    powercut_domain_forget("wt-above");
    powercut_domain_forget("wt-fault");
}

struct stalled {
    struct member *m;
    uint64_t off;
    int rc, done;
};

static void *stalled_write(void *arg)
{
    struct stalled *w = arg;
    uint8_t buf[4096];
    memset(buf, 0x5a, sizeof buf);
    w->rc = member_write(w->m, buf, sizeof buf, w->off);
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* stall-writes holds the writes it covers (and only those) until the rules
 * are cleared, counting each held request once. */
static void test_spec_stall(void)
{
    struct member *m = spec_member("stall-writes=64K+4K", 0, NULL);
    uint8_t buf[4096];
    memset(buf, 1, sizeof buf);
    CHECK(member_write(m, buf, sizeof buf, 0) == 0 && member_write(m, buf, sizeof buf, 68 * 1024) == 0,
          "writes beside the range go through");
    struct stalled w = {.m = m, .off = 62 * 1024};
    pthread_t t;
    pthread_create(&t, NULL, stalled_write, &w);
    usleep(100 * 1000);
    CHECK(!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE), "a write overlapping the range waits");
    CHECK(member_fault_hits(m) == 1, "the held write counted once: %llu", (unsigned long long)member_fault_hits(m));
    CHECK(member_read(m, buf, sizeof buf, 64 * 1024) == 0, "reads are not held");
    CHECK(member_fault_clear(m) == 0);
    pthread_join(t, NULL);
    CHECK(w.rc == 0, "the held write completes after the clear: %d", w.rc);
    CHECK(member_read(m, buf, 4, 64 * 1024) == 0 && buf[0] == 0x5a, "and its data landed");
    drop_spec_member(m);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_member");
    rng_seed(&rng, harness_seed());
    quick = getenv("URAID_TEST_QUICK") != NULL;
    snprintf(tmpdir_disk, sizeof tmpdir_disk, "/tmp/uraid-member-XXXXXX");
    snprintf(tmpdir_shm, sizeof tmpdir_shm, "/dev/shm/uraid-member-XXXXXX");
    if (!mkdtemp(tmpdir_disk) || !mkdtemp(tmpdir_shm)) {
        CHECK(0, "mkdtemp: %s", strerror(errno));
        return harness_finish();
    }

    harness_begin("file backend: round trips, odd and aligned (ext4 and tmpfs)");
    test_file_roundtrips();
    harness_end();
    harness_begin("file backend: direct_fd, read-only, EOF, open errors");
    test_direct_fd();
    harness_end();
    harness_begin("file backend: block device with 4 KiB sectors");
    test_blockdev();
    harness_end();
    harness_begin("zeroing: holes in files, fault rules see a write, throttle passes it on");
    test_zero();
    harness_end();
    harness_begin("fault layer: ranges, overlaps, drops, vanish, clear, hits");
    test_fault_rules();
    harness_end();
    harness_begin("fault layer: rules added during I/O on 4 threads");
    test_fault_concurrent();
    harness_end();
    harness_begin("throttle layer: rate, parallel members, latency");
    test_throttle();
    harness_end();
    harness_begin("layer specs: good and bad");
    test_spec();
    harness_end();
    harness_begin("layer specs: the disk model is write-through, unless a power cut is simulated with it");
    test_spec_write_through();
    harness_end();
    harness_begin("layer specs: stall-writes holds the writes it covers until the rules are cleared");
    test_spec_stall();
    harness_end();

    rmdir(tmpdir_disk);
    rmdir(tmpdir_shm);
    return harness_finish();
}
