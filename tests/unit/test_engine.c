/* The member I/O engine: batches of reads and writes over member files in
 * /dev/shm and /tmp verified byte for byte against a shadow copy, on the
 * io_uring path and threads-only; mixed batches with members that have no
 * direct descriptor; measured parallelism; per-op errors; many threads
 * calling at once; destroy while threads that used rings are alive.
 * Randomised: prints its seed; URAID_TEST_SEED=N replays.
 * URAID_TEST_QUICK=1 (sanitizer build) shrinks sizes and iteration counts.
 * Built with liburing, the io_uring cases insist the ring works; set
 * URAID_TEST_NO_URING=1 where the kernel or a seccomp filter forbids it. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "io/engine.h"

static struct rng rng;
static int quick;
static int expect_uring;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- test backend 1: a file with pread/pwrite and an optional direct fd,
 * counting which path each request took ---- */

struct fdm {
    int fd;
    int direct;                 /* hand the fd to the engine */
    atomic_int reads, writes, directs;
};

static int fdm_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    struct fdm *f = m->priv;
    atomic_fetch_add(&f->reads, 1);
    ssize_t r = pread(f->fd, buf, len, (off_t)off);
    return r < 0 ? -errno : (size_t)r == len ? 0 : -EIO;
}

static int fdm_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    struct fdm *f = m->priv;
    atomic_fetch_add(&f->writes, 1);
    ssize_t r = pwrite(f->fd, buf, len, (off_t)off);
    return r < 0 ? -errno : (size_t)r == len ? 0 : -EIO;
}

static int fdm_flush(struct member *m) { return 0; }

static void fdm_close(struct member *m)
{
    struct fdm *f = m->priv;
    close(f->fd);
    free(f);
}

static int fdm_direct_fd(struct member *m, const void *buf, size_t len, uint64_t off, int write)
{
    struct fdm *f = m->priv;
    if (!f->direct)
        return -1;
    atomic_fetch_add(&f->directs, 1);
    return f->fd;
}

static const struct member_ops fdm_ops = {
    .kind = "test-fd", .read = fdm_read, .write = fdm_write, .flush = fdm_flush,
    .close = fdm_close, .direct_fd = fdm_direct_fd,
};

/* Opens (creating, sized) path; oflags O_RDONLY gives a member whose
 * direct writes fail with EBADF. */
static struct member *fdm_open(const char *path, uint64_t size, int direct, int oflags)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)size))
        return NULL;
    if (oflags == O_RDONLY) {
        close(fd);
        fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    struct member *m = calloc(1, sizeof *m);
    struct fdm *f = calloc(1, sizeof *f);
    f->fd = fd;
    f->direct = direct;
    m->ops = &fdm_ops;
    m->path = strdup(path);
    m->size = size;
    m->priv = f;
    return m;
}

static struct fdm *fdm_of(struct member *m) { return m->priv; }

/* ---- test backend 2: memory, no direct fd, optional sleep and error,
 * recording how many requests were inside it at once ---- */

struct slow {
    uint8_t *mem;
    uint32_t delay_us;
    int err;                    /* returned by every read when set */
    atomic_int *inside, *max_inside; /* shared across members */
};

static void slow_enter(struct slow *s)
{
    if (!s->inside)
        return;
    int v = atomic_fetch_add(s->inside, 1) + 1;
    int mx = atomic_load(s->max_inside);
    while (v > mx && !atomic_compare_exchange_weak(s->max_inside, &mx, v))
        ;
}

static void slow_leave(struct slow *s)
{
    if (s->inside)
        atomic_fetch_sub(s->inside, 1);
}

static int slow_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    struct slow *s = m->priv;
    slow_enter(s);
    if (s->delay_us)
        usleep(s->delay_us);
    slow_leave(s);
    if (s->err)
        return s->err;
    if (off + len > m->size)
        return -EIO;
    memcpy(buf, s->mem + off, len);
    return 0;
}

static int slow_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    struct slow *s = m->priv;
    slow_enter(s);
    if (s->delay_us)
        usleep(s->delay_us);
    slow_leave(s);
    if (off + len > m->size)
        return -EIO;
    memcpy(s->mem + off, buf, len);
    return 0;
}

static void slow_close(struct member *m)
{
    struct slow *s = m->priv;
    free(s->mem);
    free(s);
}

static const struct member_ops slow_ops = {
    .kind = "test-slow", .read = slow_read, .write = slow_write, .flush = fdm_flush,
    .close = slow_close, .direct_fd = NULL,
};

static struct member *slow_open(uint64_t size, uint32_t delay_us, int err, atomic_int *inside,
                                atomic_int *max_inside)
{
    struct member *m = calloc(1, sizeof *m);
    struct slow *s = calloc(1, sizeof *s);
    s->mem = calloc(1, size);
    s->delay_us = delay_us;
    s->err = err;
    s->inside = inside;
    s->max_inside = max_inside;
    m->ops = &slow_ops;
    m->path = strdup("slow");
    m->size = size;
    m->priv = s;
    return m;
}

/* ---- members with a shadow copy ---- */

#define NMEM 6

struct set {
    int n;
    struct member *m[16];
    uint8_t *shadow[16];
    uint64_t size;
    char paths[16][64];
};

/* Members alternate between /dev/shm and /tmp; `kind` 0 = test fd backend
 * with direct fd, 1 = the real file backend, 2 = test fd backend without a
 * direct fd, 3 = slow memory backend (no delay). */
static void set_open(struct set *s, int n, uint64_t size, const int *kinds)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->size = size;
    for (int i = 0; i < n; i++) {
        snprintf(s->paths[i], sizeof s->paths[i], "%s/uraid-engine-%d-%d",
                 i % 2 ? "/tmp" : "/dev/shm", (int)getpid(), i);
        s->shadow[i] = calloc(1, size);
        switch (kinds[i % 4]) {
        case 0: s->m[i] = fdm_open(s->paths[i], size, 1, O_RDWR); break;
        case 1: {
            struct member *tmp = fdm_open(s->paths[i], size, 0, O_RDWR);
            member_close(tmp);
            int rc = member_open_file(s->paths[i], 0, &s->m[i]);
            CHECK(rc == 0, "open %s: %d", s->paths[i], rc);
            break;
        }
        case 2: s->m[i] = fdm_open(s->paths[i], size, 0, O_RDWR); break;
        default: s->m[i] = slow_open(size, 0, 0, NULL, NULL); s->paths[i][0] = 0; break;
        }
        CHECK(s->m[i] != NULL, "member %d", i);
    }
}

static void set_close(struct set *s)
{
    for (int i = 0; i < s->n; i++) {
        member_close(s->m[i]);
        if (s->paths[i][0])
            unlink(s->paths[i]);
        free(s->shadow[i]);
    }
}

/* Picks `nops` random ranges; ranges on one member within a batch never
 * overlap (each op gets its own slice of the member). */
static void make_batch(struct set *s, struct rng *r, struct io_op *ops, uint8_t **bufs, int nops,
                       enum io_kind kind, size_t maxlen)
{
    int per = (nops + s->n - 1) / s->n;
    uint64_t slice = s->size / (uint64_t)per;
    for (int i = 0; i < nops; i++) {
        int mi = i % s->n, si = i / s->n;
        size_t len = 1 + rng_below(r, maxlen < slice ? maxlen : slice);
        if (rng_below(r, 3) == 0) /* often sector-shaped, sometimes odd */
            len = (len + 511) & ~(size_t)511;
        if (len > slice)
            len = slice;
        uint64_t off = (uint64_t)si * slice + rng_below(r, slice - len + 1);
        ops[i] = (struct io_op){.m = s->m[mi], .kind = kind, .buf = bufs[i], .len = len,
                                .offset = off, .result = 12345};
        if (kind == IO_WRITE)
            rng_fill(r, bufs[i], len);
    }
}

static int verify_batch(struct set *s, struct io_op *ops, int nops)
{
    int bad = 0;
    for (int i = 0; i < nops; i++) {
        int mi = i % s->n;
        if (ops[i].result != 0) {
            bad++;
            CHECK(ops[i].result == 0, "op %d result %d", i, ops[i].result);
            continue;
        }
        if (ops[i].kind == IO_WRITE)
            memcpy(s->shadow[mi] + ops[i].offset, ops[i].buf, ops[i].len);
        else if (memcmp(s->shadow[mi] + ops[i].offset, ops[i].buf, ops[i].len)) {
            bad++;
            CHECK(0, "op %d: read of %zu bytes at %llu on member %d differs", i, ops[i].len,
                  (unsigned long long)ops[i].offset, mi);
        }
    }
    return bad;
}

/* Whole-member comparison through the member's own read (not the engine). */
static void verify_members(struct set *s)
{
    uint8_t *buf = malloc(s->size);
    for (int i = 0; i < s->n; i++) {
        int rc = member_read(s->m[i], buf, s->size, 0);
        CHECK(rc == 0 && !memcmp(buf, s->shadow[i], s->size), "member %d content (rc %d)", i, rc);
    }
    free(buf);
}

static void random_batches(struct io_engine *e, struct set *s, int rounds, int nops, size_t maxlen)
{
    uint8_t **bufs = calloc((size_t)nops, sizeof *bufs);
    struct io_op *ops = calloc((size_t)nops, sizeof *ops);
    for (int i = 0; i < nops; i++)
        bufs[i] = aligned_alloc(4096, (maxlen + 511 + 4095) & ~(size_t)4095);
    for (int r = 0; r < rounds; r++) {
        enum io_kind kind = rng_below(&rng, 2) ? IO_WRITE : IO_READ;
        make_batch(s, &rng, ops, bufs, nops, kind, maxlen);
        int rc = io_engine_run(e, ops, nops);
        CHECK(rc == 0, "round %d rc %d", r, rc);
        if (verify_batch(s, ops, nops))
            break;
    }
    verify_members(s);
    for (int i = 0; i < nops; i++)
        free(bufs[i]);
    free(bufs);
    free(ops);
}

static struct io_engine *engine(int workers, int use_uring)
{
    struct io_engine *e = NULL;
    struct io_engine_params p = {.workers = workers, .use_uring = use_uring};
    int rc = io_engine_create(&p, &e);
    CHECK(rc == 0 && e, "create rc %d", rc);
    return e;
}

static void test_batches(int use_uring)
{
    struct io_engine *e = engine(4, use_uring);
    CHECK(!strcmp(io_engine_kind(e), use_uring && expect_uring ? "io_uring" : "threads"),
          "kind %s (use_uring %d)", io_engine_kind(e), use_uring);
    int direct = !strcmp(io_engine_kind(e), "io_uring");
    uint64_t size = quick ? (1u << 20) : (4u << 20);
    static const int kinds[] = {0, 0, 0, 0};
    struct set s;
    set_open(&s, NMEM, size, kinds);
    /* Small and large batches; 300 ops exceed the ring's 128 entries. */
    random_batches(e, &s, quick ? 20 : 100, NMEM, 256 << 10);
    random_batches(e, &s, quick ? 4 : 20, 300, 8 << 10);
    random_batches(e, &s, quick ? 10 : 40, 1, 64 << 10);
    for (int i = 0; i < s.n; i++) {
        struct fdm *f = fdm_of(s.m[i]);
        int rd = atomic_load(&f->reads), wr = atomic_load(&f->writes), dr = atomic_load(&f->directs);
        /* The only reads through the member's own read are verify_members'
         * (once per random_batches call). */
        if (direct)
            CHECK(rd == 3 && wr == 0 && dr > 0, "member %d: %d reads, %d writes, %d direct", i, rd, wr, dr);
        else
            CHECK(dr == 0 && rd > 3 && wr > 0, "member %d: %d reads, %d writes, %d direct", i, rd, wr, dr);
    }
    set_close(&s);
    io_engine_destroy(e);
}

/* Real file members, members without direct fds and memory members in one
 * batch: both paths at once, verified. */
static void test_mixed_backends(int use_uring)
{
    struct io_engine *e = engine(0, use_uring);
    uint64_t size = quick ? (1u << 20) : (2u << 20);
    static const int kinds[] = {0, 1, 2, 3};
    struct set s;
    set_open(&s, 8, size, kinds);
    random_batches(e, &s, quick ? 20 : 80, 8, 128 << 10);
    random_batches(e, &s, quick ? 4 : 10, 64, 16 << 10);
    set_close(&s);
    io_engine_destroy(e);
}

/* 8 requests on 8 members that each take 50 ms: in parallel they take
 * ~50 ms, one at a time 400. Half the batch also has direct members. */
static void test_parallelism(int use_uring, int with_direct)
{
    struct io_engine *e = engine(16, use_uring);
    atomic_int inside = 0, max_inside = 0;
    struct member *m[8];
    struct member *fm[8] = {0};
    char paths[8][64];
    struct io_op ops[16];
    uint8_t *bufs[16];
    int n = 0;
    for (int i = 0; i < 8; i++) {
        m[i] = slow_open(1 << 16, 50000, 0, &inside, &max_inside);
        bufs[n] = malloc(4096);
        ops[n] = (struct io_op){.m = m[i], .kind = IO_READ, .buf = bufs[n], .len = 4096};
        n++;
        if (with_direct) {
            snprintf(paths[i], sizeof paths[i], "/dev/shm/uraid-engine-par-%d-%d", (int)getpid(), i);
            fm[i] = fdm_open(paths[i], 1 << 16, 1, O_RDWR);
            bufs[n] = malloc(4096);
            ops[n] = (struct io_op){.m = fm[i], .kind = IO_READ, .buf = bufs[n], .len = 4096};
            n++;
        }
    }
    /* The first run warms the pool (threads started, ring made). */
    io_engine_run(e, ops, n);
    double best = 1e9;
    for (int t = 0; t < 3; t++) {
        double t0 = now_ms();
        int rc = io_engine_run(e, ops, n);
        double dt = now_ms() - t0;
        CHECK(rc == 0, "rc %d", rc);
        if (dt < best)
            best = dt;
    }
    printf("  %s, %s: 8 x 50 ms requests took %.1f ms, %d at once\n", io_engine_kind(e),
           with_direct ? "with 8 direct reads" : "pool only", best, atomic_load(&max_inside));
    CHECK(best < 200, "took %.1f ms; serial would be 400", best);
    CHECK(atomic_load(&max_inside) == 8, "at most %d at once", atomic_load(&max_inside));
    for (int i = 0; i < n; i++)
        free(bufs[i]);
    for (int i = 0; i < 8; i++) {
        member_close(m[i]);
        if (fm[i]) {
            member_close(fm[i]);
            unlink(paths[i]);
        }
    }
    io_engine_destroy(e);
}

static void test_errors(int use_uring)
{
    struct io_engine *e = engine(4, use_uring);
    struct member *good = slow_open(1 << 16, 0, 0, NULL, NULL);
    struct member *eio = slow_open(1 << 16, 0, -EIO, NULL, NULL);
    struct member *ro = slow_open(1 << 16, 0, 0, NULL, NULL);
    ro->readonly = 1;
    char p1[64], p2[64];
    snprintf(p1, sizeof p1, "/dev/shm/uraid-engine-err1-%d", (int)getpid());
    snprintf(p2, sizeof p2, "/tmp/uraid-engine-err2-%d", (int)getpid());
    struct member *fd_ok = fdm_open(p1, 1 << 16, 1, O_RDWR);
    struct member *fd_badw = fdm_open(p2, 1 << 16, 1, O_RDONLY); /* direct writes: EBADF */
    static uint8_t buf[8][8192];
    struct io_op ops[] = {
        {.m = good, .kind = IO_READ, .buf = buf[0], .len = 4096},
        {.m = fd_ok, .kind = IO_WRITE, .buf = buf[1], .len = 4096},
        {.m = eio, .kind = IO_READ, .buf = buf[2], .len = 4096},
        {.m = fd_ok, .kind = IO_READ, .buf = buf[3], .len = 8192, .offset = (1 << 16) - 4096}, /* past end */
        {.m = fd_badw, .kind = IO_WRITE, .buf = buf[4], .len = 4096},
        {.m = ro, .kind = IO_WRITE, .buf = buf[5], .len = 4096},
        {.m = NULL, .kind = IO_READ, .buf = buf[6], .len = 4096},
        {.m = good, .kind = IO_WRITE, .buf = buf[7], .len = 0},
        {.m = fd_ok, .kind = IO_READ, .buf = buf[7], .len = 4096, .offset = 4096},
    };
    int n = (int)(sizeof ops / sizeof ops[0]);
    int rc = io_engine_run(e, ops, n);
    CHECK(rc == -EIO, "rc %d (first failure is op 2's -EIO)", rc);
    static const int want[] = {0, 0, -EIO, -EIO, -EBADF, -EROFS, -EINVAL, 0, 0};
    for (int i = 0; i < n; i++) {
        int w = want[i];
        /* Threads-only runs the O_RDONLY member's write through pwrite. */
        CHECK(ops[i].result == w, "op %d result %d, want %d", i, ops[i].result, w);
    }
    CHECK(io_engine_run(e, NULL, 0) == 0);
    CHECK(io_engine_run(e, NULL, 1) == -EINVAL);
    CHECK(io_engine_run(NULL, ops, 1) == -EINVAL);
    member_close(good);
    member_close(eio);
    member_close(ro);
    member_close(fd_ok);
    member_close(fd_badw);
    unlink(p1);
    unlink(p2);
    io_engine_destroy(e);
}

/* ---- many callers at once ---- */

struct caller {
    pthread_t t;
    int id, nthreads;
    struct io_engine *e;
    struct set *s;
    uint64_t seed;
    int iters;
    int failures;
    int rc_fail;
};

/* Each thread owns one slice of every member, writes random data there in
 * batches over all members and reads it back through the engine. */
static void *caller_main(void *arg)
{
    struct caller *c = arg;
    struct rng r;
    rng_seed(&r, c->seed);
    struct set *s = c->s;
    uint64_t slice = s->size / (uint64_t)c->nthreads, base = slice * (uint64_t)c->id;
    struct io_op ops[16];
    uint8_t *wbuf[16], *rbuf[16];
    for (int i = 0; i < s->n; i++) {
        wbuf[i] = aligned_alloc(4096, slice);
        rbuf[i] = aligned_alloc(4096, slice);
    }
    for (int it = 0; it < c->iters; it++) {
        size_t len = 1 + rng_below(&r, slice);
        uint64_t off = base + rng_below(&r, slice - len + 1);
        for (int i = 0; i < s->n; i++) {
            rng_fill(&r, wbuf[i], len);
            ops[i] = (struct io_op){.m = s->m[i], .kind = IO_WRITE, .buf = wbuf[i], .len = len, .offset = off};
        }
        if (io_engine_run(c->e, ops, s->n))
            c->rc_fail++;
        for (int i = 0; i < s->n; i++) {
            memset(rbuf[i], 0xa5, len);
            ops[i] = (struct io_op){.m = s->m[i], .kind = IO_READ, .buf = rbuf[i], .len = len, .offset = off};
        }
        if (io_engine_run(c->e, ops, s->n))
            c->rc_fail++;
        for (int i = 0; i < s->n; i++)
            if (memcmp(rbuf[i], wbuf[i], len))
                c->failures++;
    }
    for (int i = 0; i < s->n; i++) {
        free(wbuf[i]);
        free(rbuf[i]);
    }
    return NULL;
}

static void test_concurrent(int use_uring, int workers)
{
    struct io_engine *e = engine(workers, use_uring);
    static const int kinds[] = {0, 1, 2, 3};
    struct set s;
    set_open(&s, 8, 8u << 16, kinds);
    struct caller c[8];
    double t0 = now_ms();
    for (int i = 0; i < 8; i++) {
        c[i] = (struct caller){.id = i, .nthreads = 8, .e = e, .s = &s,
                               .seed = rng_next(&rng), .iters = quick ? 100 : 1000};
        pthread_create(&c[i].t, NULL, caller_main, &c[i]);
    }
    int fail = 0, rcf = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(c[i].t, NULL);
        fail += c[i].failures;
        rcf += c[i].rc_fail;
    }
    printf("  %s, %d workers: 8 threads x %d write+read batches of 8 in %.0f ms\n",
           io_engine_kind(e), workers, c[0].iters, now_ms() - t0);
    CHECK(fail == 0 && rcf == 0, "%d mismatches, %d failed batches", fail, rcf);
    set_close(&s);
    io_engine_destroy(e);
}

/* Threads that used rings: some exit before destroy (their key destructor
 * frees the ring), some are still alive when the engine goes away (destroy
 * frees it, and no destructor runs later). ASan reports any leak or
 * double free. */
struct holder {
    pthread_t t;
    struct io_engine *e;
    struct member *m;
    pthread_barrier_t *used, *destroyed;
    int rc;
};

static void *holder_main(void *arg)
{
    struct holder *h = arg;
    uint8_t buf[4096];
    struct io_op op[2] = {
        {.m = h->m, .kind = IO_READ, .buf = buf, .len = 2048},
        {.m = h->m, .kind = IO_READ, .buf = buf + 2048, .len = 2048, .offset = 2048},
    };
    h->rc = io_engine_run(h->e, op, 2);
    if (h->used) {
        pthread_barrier_wait(h->used);
        pthread_barrier_wait(h->destroyed);
    }
    return NULL;
}

static void test_destroy_with_rings(void)
{
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/uraid-engine-destroy-%d", (int)getpid());
    struct member *m = fdm_open(path, 1 << 16, 1, O_RDWR);
    for (int round = 0; round < (quick ? 3 : 10); round++) {
        struct io_engine *e = engine(2, 1);
        struct holder early[4], late[4];
        pthread_barrier_t used, destroyed;
        pthread_barrier_init(&used, NULL, 5);
        pthread_barrier_init(&destroyed, NULL, 5);
        for (int i = 0; i < 4; i++) {
            early[i] = (struct holder){.e = e, .m = m};
            pthread_create(&early[i].t, NULL, holder_main, &early[i]);
            late[i] = (struct holder){.e = e, .m = m, .used = &used, .destroyed = &destroyed};
            pthread_create(&late[i].t, NULL, holder_main, &late[i]);
        }
        for (int i = 0; i < 4; i++)
            pthread_join(early[i].t, NULL);
        pthread_barrier_wait(&used);
        io_engine_destroy(e);
        pthread_barrier_wait(&destroyed);
        for (int i = 0; i < 4; i++) {
            pthread_join(late[i].t, NULL);
            CHECK(early[i].rc == 0 && late[i].rc == 0, "rc %d %d", early[i].rc, late[i].rc);
        }
        pthread_barrier_destroy(&used);
        pthread_barrier_destroy(&destroyed);
    }
    member_close(m);
    unlink(path);
}

/* One worker and a queue of 64: a 500-op batch overflows and the caller
 * runs the rest itself. */
static void test_queue_overflow(void)
{
    struct io_engine *e = engine(1, 0);
    static const int kinds[] = {3, 3, 3, 3};
    struct set s;
    set_open(&s, 4, 1 << 20, kinds);
    random_batches(e, &s, quick ? 5 : 20, 500, 1024);
    set_close(&s);
    io_engine_destroy(e);
    struct io_engine *d = NULL;
    CHECK(io_engine_create(NULL, &d) == 0 && d);
    io_engine_destroy(d);
    struct io_engine_params bad = {.workers = -1};
    CHECK(io_engine_create(&bad, &d) == -EINVAL);
}

static void test_parallelism_both(int u)
{
    test_parallelism(u, 0);
    test_parallelism(u, 1);
}

static void test_concurrent_both(int u)
{
    test_concurrent(u, 16);
    test_concurrent(u, 2);
}

/* The cases run once with io_uring and once on the thread pool only. */
static const struct {
    const char *what;
    void (*run)(int uring);
} cases[] = {
    {"random batches verified byte for byte", test_batches},
    {"mixed backends in one batch", test_mixed_backends},
    {"8 slow members run in parallel", test_parallelism_both},
    {"per-op errors", test_errors},
    {"8 threads call at once", test_concurrent_both},
};

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_engine");
    rng_seed(&rng, harness_seed());
    quick = getenv("URAID_TEST_QUICK") && *getenv("URAID_TEST_QUICK") == '1';
#ifdef HAVE_URING
    expect_uring = !(getenv("URAID_TEST_NO_URING") && *getenv("URAID_TEST_NO_URING") == '1');
#endif
    for (int u = 1; u >= 0; u--)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            harness_beginf("%s: %s", u ? "io_uring" : "threads only", cases[c].what);
            cases[c].run(u);
            harness_end();
        }
    harness_begin("destroy with live threads that used rings");
    test_destroy_with_rings();
    harness_end();
    harness_begin("queue overflow runs on the caller; create arguments");
    test_queue_overflow();
    harness_end();
    return harness_finish();
}
