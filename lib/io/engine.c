/* The member I/O engine (see engine.h).
 *
 * A call to io_engine_run splits its batch in two:
 *   - ops whose member hands out a file descriptor (member_direct_fd >= 0)
 *     go to the calling thread's own io_uring: one ring per (engine, thread),
 *     created on first use and kept in a pthread key, so concurrent callers
 *     never share a ring and the fast path takes no lock;
 *   - every other op goes to a fixed pool of worker threads through one
 *     bounded queue (a ring of {op, batch} pairs sized at creation).
 * Pool ops are queued first, then the ring is submitted, so both halves of a
 * mixed batch are in flight at once. The caller waits on its own batch's
 * counter, never on anyone else's requests.
 *
 * No allocation per request after warm-up: the caller's io_op array is the
 * request, the batch lives on the caller's stack, the queue and the ring's
 * completion slots are fixed arrays. The only growth is the per-thread
 * scratch array of descriptors, which grows to the largest batch seen. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/engine.h"

#ifdef HAVE_URING
#include <liburing.h>
#endif

#define DEFAULT_WORKERS 16
#define MAX_WORKERS 256
/* Queue slots per worker: enough that a burst of large batches from many
 * callers rarely overflows; when it does, the caller runs the op itself. */
#define QUEUE_PER_WORKER 64

/* One batch in flight on the pool: lives on the caller's stack. */
struct batch {
    atomic_int pending;     /* pool ops not yet finished */
    int queued;             /* pool ops handed to the workers */
    int done;               /* set under mu when pending reaches 0 */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

struct job {
    struct io_op *op;
    struct batch *b;
};

#ifdef HAVE_URING
#define RING_ENTRIES 128
/* Linux transfers at most 0x7ffff000 bytes per read/write; stay well below
 * and let the short-transfer path submit the rest. */
#define MAX_SQE_BYTES (1u << 30)
/* -EAGAIN/-EINTR from a completion are retried this many times, then the
 * rest of the op runs through the member's own read/write. */
#define MAX_RETRIES 32

/* One request in flight on a ring; user_data points here. */
struct slot {
    struct io_op *op;
    int fd;
    int retries;
    size_t done;            /* bytes transferred so far (short transfers) */
};

struct tl_ring {
    struct io_uring ring;
    struct io_engine *e;
    struct tl_ring *prev, *next;   /* e->rings, under e->rings_mu */
    int broken;                    /* io_uring_enter failed hard: pool only */
    int *fds;                      /* per-op descriptor scratch for one batch */
    int fds_cap;
    int nfree;
    int free_slots[RING_ENTRIES];
    struct slot slots[RING_ENTRIES];
};
#endif

struct io_engine {
    int uring;              /* 1: io_uring works here and was asked for */
    int nworkers;
    pthread_t *workers;

    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    struct job *q;
    unsigned qcap, qhead, qlen;
    int stop;

#ifdef HAVE_URING
    pthread_key_t key;
    int key_ok;
    pthread_mutex_t rings_mu;
    struct tl_ring *rings;         /* every live ring, so destroy can free them */
#endif
};

/* ---- running one op synchronously (workers, overflow, fallbacks) ---- */

static int op_valid(const struct io_op *op)
{
    if (!op->m || !op->m->ops || (!op->buf && op->len && op->kind != IO_ZERO && op->kind != IO_FLUSH))
        return -EINVAL;
    if (op->kind != IO_READ && op->kind != IO_WRITE && op->kind != IO_ZERO && op->kind != IO_FLUSH)
        return -EINVAL;
    /* The direct path bypasses the backend's own read-only check. */
    if (op->kind != IO_READ && op->m->readonly)
        return -EROFS;
    return 0;
}

static int op_sync(struct io_op *op, size_t done)
{
    size_t len = op->len - done;
    uint64_t off = op->offset + done;
    if (op->kind == IO_ZERO)
        return member_zero(op->m, len, off);
    uint8_t *p = (uint8_t *)op->buf + done;
    return op->kind == IO_READ ? member_read(op->m, p, len, off)
                               : member_write(op->m, p, len, off);
}

static void op_run(struct io_op *op)
{
    int rc = op_valid(op);
    if (!rc && op->kind == IO_FLUSH)
        rc = member_flush(op->m);
    else if (!rc && op->kind == IO_WRITE && op->fua && op->len && !op->m->inline_io)
        rc = member_write_fua(op->m, op->buf, op->len, op->offset); /* memory-backed members: a write */
    else if (!rc && op->len)
        rc = op_sync(op, 0);
    op->result = rc;
}

/* ---- thread pool ---- */

static void batch_complete(struct batch *b)
{
    if (atomic_fetch_sub_explicit(&b->pending, 1, memory_order_acq_rel) != 1)
        return;
    /* Signal under the lock: the caller may destroy b as soon as it sees
     * done, which it can only do after we unlock. */
    pthread_mutex_lock(&b->mu);
    b->done = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static void *worker_main(void *arg)
{
    struct io_engine *e = arg;
    pthread_mutex_lock(&e->qmu);
    for (;;) {
        while (!e->qlen && !e->stop)
            pthread_cond_wait(&e->qcv, &e->qmu);
        if (!e->qlen)
            break; /* stopping, and the queue is drained */
        struct job j = e->q[e->qhead];
        e->qhead = (e->qhead + 1) % e->qcap;
        e->qlen--;
        pthread_mutex_unlock(&e->qmu);
        op_run(j.op);
        batch_complete(j.b);
        pthread_mutex_lock(&e->qmu);
    }
    pthread_mutex_unlock(&e->qmu);
    return NULL;
}

static int is_pool(const struct io_op *ops, const int *fds, int i)
{
    return !ops[i].async && (!fds || fds[i] < 0);
}

/* Queues up to `limit` pool ops of ops[] (in index order) for batch b.
 * Returns the index just past the last op queued: pool ops from there on
 * did not fit (or were held back) and the caller runs them itself. */
static int pool_queue(struct io_engine *e, struct batch *b, struct io_op *ops, int n,
                      const int *fds, int limit)
{
    int i = 0, queued = 0;
    pthread_mutex_lock(&e->qmu);
    unsigned room = e->qcap - e->qlen;
    if ((unsigned)limit > room)
        limit = (int)room;
    /* Set before any job is visible: workers may finish them at once. */
    atomic_store_explicit(&b->pending, limit, memory_order_relaxed);
    b->queued = limit;
    for (; i < n && queued < limit; i++) {
        if (!is_pool(ops, fds, i))
            continue;
        unsigned tail = (e->qhead + e->qlen) % e->qcap;
        e->q[tail].op = &ops[i];
        e->q[tail].b = b;
        e->qlen++;
        queued++;
    }
    pthread_mutex_unlock(&e->qmu);
    /* Wake only as many workers as there are jobs: a broadcast would wake
     * the whole pool for a two-op batch. */
    for (int k = 0; k < queued && k < e->nworkers; k++)
        pthread_cond_signal(&e->qcv);
    return i;
}

static void pool_wait(struct batch *b)
{
    /* Not a shortcut on pending == 0: the worker that brought it to 0 still
     * has to lock mu and signal, and b must outlive that. */
    if (!b->queued)
        return;
    pthread_mutex_lock(&b->mu);
    while (!b->done)
        pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

static void run_inline(struct io_op *ops, int n, const int *fds, int from)
{
    for (int i = from; i < n; i++)
        if (is_pool(ops, fds, i))
            op_run(&ops[i]);
}

/* ---- members with their own asynchronous submit (NBD) ---- */

static void aio_done(struct member_aio *a, int rc)
{
    struct io_op *op = (struct io_op *)((char *)a - offsetof(struct io_op, aio));
    op->result = rc;
    batch_complete(a->ctx);
}

/* 1 when an op after ops[i] in the batch goes to a member of the same
 * backend's submit (plugged: only the batch's last op on that backend
 * wakes its thread; NBD serves all its members from one thread, which
 * then wakes once per batch and finds every member's requests queued,
 * instead of once per member). Batches are tens of ops, so a scan is
 * cheaper than anything cleverer. */
static int later_on_backend(const struct io_op *ops, int i, int n)
{
    for (int j = i + 1; j < n; j++)
        if (ops[j].m && ops[j].m->ops && ops[j].m->ops->submit == ops[i].m->ops->submit && !op_valid(&ops[j]) &&
            (ops[j].len || ops[j].kind == IO_FLUSH))
            return 1;
    return 0;
}

/* Starts every op whose member takes it asynchronously, all before any is
 * waited for: a member far away then has the whole batch in flight instead
 * of one request per pool thread. b holds one count of the caller's own
 * until async_wait, so early completions cannot finish it while ops are
 * still being started. Returns how many were started. */
static int async_start(struct batch *b, struct io_op *ops, int n)
{
    int started = 0;
    atomic_store_explicit(&b->pending, 1, memory_order_relaxed);
    b->queued = 1;
    for (int i = 0; i < n; i++) {
        struct io_op *op = &ops[i];
        op->async = 0;
        if (!op->m || !op->m->ops || !op->m->ops->submit || op_valid(op) || (!op->len && op->kind != IO_FLUSH))
            continue;
        op->aio = (struct member_aio){.done = aio_done, .ctx = b};
        atomic_fetch_add_explicit(&b->pending, 1, memory_order_relaxed);
        op->async = 1;
        int kind = op->kind == IO_WRITE && op->fua ? MEMBER_AIO_WRITE_FUA : (int)op->kind;
        if (later_on_backend(ops, i, n))
            kind |= MEMBER_AIO_PLUG;
        if (op->m->ops->submit(op->m, kind, op->buf, op->len, op->offset, &op->aio)) {
            op->async = 0; /* not taken: the pool runs it */
            atomic_fetch_sub_explicit(&b->pending, 1, memory_order_relaxed);
            continue;
        }
        started++;
    }
    return started;
}

static void async_wait(struct batch *b, int started)
{
    if (!started)
        return; /* nobody else ever saw b */
    batch_complete(b); /* the caller's own count */
    pool_wait(b);
}

/* ---- io_uring ---- */

#ifdef HAVE_URING

static int ring_init(struct io_uring *ring)
{
    /* Each ring is only ever submitted to by the thread that made it, which
     * is what SINGLE_ISSUER promises; COOP_TASKRUN spares that thread an IPI
     * per completion. Older kernels reject the flags: retry without. */
#if defined(IORING_SETUP_SINGLE_ISSUER) && defined(IORING_SETUP_COOP_TASKRUN)
    if (io_uring_queue_init(RING_ENTRIES, ring,
                            IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN) == 0)
        return 0;
#endif
    return io_uring_queue_init(RING_ENTRIES, ring, 0);
}

static void ring_free(struct tl_ring *r)
{
    io_uring_queue_exit(&r->ring);
    free(r->fds);
    free(r);
}

/* pthread key destructor: the thread that owned this ring is exiting. */
static void ring_thread_exit(void *arg)
{
    struct tl_ring *r = arg;
    struct io_engine *e = r->e;
    pthread_mutex_lock(&e->rings_mu);
    if (r->prev)
        r->prev->next = r->next;
    else
        e->rings = r->next;
    if (r->next)
        r->next->prev = r->prev;
    pthread_mutex_unlock(&e->rings_mu);
    ring_free(r);
}

/* Makes a ring for the calling thread and registers it. NULL on failure
 * (the caller then uses the pool for this batch). */
static struct tl_ring *ring_new(struct io_engine *e)
{
    struct tl_ring *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    if (ring_init(&r->ring)) {
        free(r);
        return NULL;
    }
    r->e = e;
    r->nfree = RING_ENTRIES;
    for (int i = 0; i < RING_ENTRIES; i++)
        r->free_slots[i] = RING_ENTRIES - 1 - i;
    if (pthread_setspecific(e->key, r)) {
        ring_free(r);
        return NULL;
    }
    pthread_mutex_lock(&e->rings_mu);
    r->next = e->rings;
    if (e->rings)
        e->rings->prev = r;
    e->rings = r;
    pthread_mutex_unlock(&e->rings_mu);
    return r;
}

static struct tl_ring *ring_get(struct io_engine *e)
{
    if (!e->uring)
        return NULL;
    struct tl_ring *r = pthread_getspecific(e->key);
    if (!r)
        r = ring_new(e);
    return r && !r->broken ? r : NULL;
}

/* Fills the scratch array: fds[i] >= 0 for ops that go to the ring.
 * Returns how many do, or -1 if the scratch cannot grow (all go to the pool). */
static int ring_classify(struct tl_ring *r, struct io_op *ops, int n)
{
    if (n > r->fds_cap) {
        int cap = n < 64 ? 64 : n;
        int *p = realloc(r->fds, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        r->fds = p;
        r->fds_cap = cap;
    }
    int direct = 0;
    for (int i = 0; i < n; i++) {
        struct io_op *op = &ops[i];
        int fd = -1;
        /* Invalid and empty ops take the pool path, which reports them. */
        if (!op->async && !op_valid(op) && op->len && op->kind != IO_ZERO && op->kind != IO_FLUSH && !op->fua)
            fd = member_direct_fd(op->m, op->buf, op->len, op->offset, op->kind == IO_WRITE);
        r->fds[i] = fd < 0 ? -1 : fd;
        direct += fd >= 0;
    }
    return direct;
}

static void slot_prep(struct tl_ring *r, struct slot *s)
{
    struct io_uring_sqe *sqe;
    /* In-flight requests never exceed the SQ size and submitted entries are
     * consumed at once, so this only loops if the kernel is lagging. */
    while (!(sqe = io_uring_get_sqe(&r->ring)))
        io_uring_submit(&r->ring);
    struct io_op *op = s->op;
    size_t left = op->len - s->done;
    if (left > MAX_SQE_BYTES)
        left = MAX_SQE_BYTES;
    uint8_t *p = (uint8_t *)op->buf + s->done;
    if (op->kind == IO_READ)
        io_uring_prep_read(sqe, s->fd, p, (unsigned)left, op->offset + s->done);
    else
        io_uring_prep_write(sqe, s->fd, p, (unsigned)left, op->offset + s->done);
    io_uring_sqe_set_data(sqe, s);
}

static void slot_release(struct tl_ring *r, struct slot *s)
{
    s->op = NULL; /* the broken-ring path fails only slots still in use */
    r->free_slots[r->nfree++] = (int)(s - r->slots);
}

/* Progress of one batch on a ring. */
struct ring_batch {
    struct io_op *ops;
    int n;
    int next;       /* first op not yet given a slot */
    int inflight;   /* slots in use */
};

/* Gives slots to as many direct ops as fit. */
static void ring_fill(struct tl_ring *r, struct ring_batch *rb)
{
    while (rb->next < rb->n && r->nfree) {
        int i = rb->next++;
        if (r->fds[i] < 0)
            continue;
        struct slot *s = &r->slots[r->free_slots[--r->nfree]];
        s->op = &rb->ops[i];
        s->fd = r->fds[i];
        s->retries = 0;
        s->done = 0;
        slot_prep(r, s);
        rb->inflight++;
    }
}

static void ring_complete(struct tl_ring *r, struct ring_batch *rb, struct slot *s, int res)
{
    struct io_op *op = s->op;
    if (res > 0) {
        s->done += (size_t)res;
        if (s->done < op->len) { /* short transfer: ask for the rest */
            slot_prep(r, s);
            return;
        }
        op->result = 0;
    } else if (res == 0) {
        /* End of file on a read (the member is shorter than recorded), or
         * a write that made no progress: the same -EIO file.c reports. */
        op->result = -EIO;
    } else if (res == -EAGAIN || res == -EINTR) {
        if (++s->retries < MAX_RETRIES) {
            slot_prep(r, s);
            return;
        }
        op->result = op_sync(op, s->done);
    } else {
        op->result = res;
    }
    slot_release(r, s);
    rb->inflight--;
}

/* Submits whatever is prepared; errors are left for ring_drain, whose
 * submit_and_wait sees the same unsubmitted entries again. */
static void ring_start(struct tl_ring *r, struct ring_batch *rb)
{
    ring_fill(r, rb);
    io_uring_submit(&r->ring);
}

static void ring_drain(struct tl_ring *r, struct ring_batch *rb)
{
    while (rb->inflight || rb->next < rb->n) {
        ring_fill(r, rb);
        if (!rb->inflight)
            break;
        int ret = io_uring_submit_and_wait(&r->ring, 1);
        if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
            /* Cannot happen on a healthy ring (bad fd, fault on the rings
             * themselves). Fail what is in flight, run the rest through
             * the members, and keep this thread off the ring from now on.
             * The in-flight requests are not waited for: nothing can. */
            r->broken = 1;
            for (int i = 0; i < RING_ENTRIES; i++)
                if (r->slots[i].op)
                    r->slots[i].op->result = ret;
            for (int i = rb->next; i < rb->n; i++)
                if (r->fds[i] >= 0)
                    op_run(&rb->ops[i]);
            return;
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&r->ring, head, cqe) {
            ring_complete(r, rb, io_uring_cqe_get_data(cqe), cqe->res);
            seen++;
        }
        io_uring_cq_advance(&r->ring, seen);
    }
}

/* True if this kernel lets us use io_uring for plain reads and writes.
 * The probe ring becomes the creating thread's ring. */
static int uring_probe(struct io_engine *e)
{
    if (pthread_key_create(&e->key, ring_thread_exit))
        return 0;
    e->key_ok = 1;
    e->uring = 1;
    struct tl_ring *r = ring_new(e);
    int ok = 0;
    if (r) {
        struct io_uring_probe *p = io_uring_get_probe_ring(&r->ring);
        ok = p && io_uring_opcode_supported(p, IORING_OP_READ) &&
             io_uring_opcode_supported(p, IORING_OP_WRITE);
        if (p)
            io_uring_free_probe(p);
    }
    e->uring = ok;
    return ok;
}

static void uring_destroy(struct io_engine *e)
{
    if (!e->key_ok)
        return;
    /* After this no thread-exit destructor runs for our key; rings of
     * threads still alive are freed here. */
    pthread_key_delete(e->key);
    pthread_mutex_lock(&e->rings_mu);
    struct tl_ring *r = e->rings;
    e->rings = NULL;
    pthread_mutex_unlock(&e->rings_mu);
    while (r) {
        struct tl_ring *next = r->next;
        ring_free(r);
        r = next;
    }
}

#endif /* HAVE_URING */

/* ---- public API ---- */

int io_engine_create(const struct io_engine_params *p, struct io_engine **out)
{
    struct io_engine_params def = {.workers = 0, .use_uring = 1};
    if (!p)
        p = &def;
    if (!out || p->workers < 0)
        return -EINVAL;
    struct io_engine *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    e->nworkers = p->workers ? p->workers : DEFAULT_WORKERS;
    if (e->nworkers > MAX_WORKERS)
        e->nworkers = MAX_WORKERS;
    e->qcap = (unsigned)e->nworkers * QUEUE_PER_WORKER;
    e->q = calloc(e->qcap, sizeof *e->q);
    e->workers = calloc((size_t)e->nworkers, sizeof *e->workers);
    if (!e->q || !e->workers) {
        free(e->q);
        free(e->workers);
        free(e);
        return -ENOMEM;
    }
    pthread_mutex_init(&e->qmu, NULL);
    pthread_cond_init(&e->qcv, NULL);
#ifdef HAVE_URING
    pthread_mutex_init(&e->rings_mu, NULL);
    if (p->use_uring)
        uring_probe(e);
#endif
    int started = 0, rc = 0;
    for (; started < e->nworkers; started++) {
        rc = -pthread_create(&e->workers[started], NULL, worker_main, e);
        if (rc)
            break;
    }
    if (rc) {
        e->nworkers = started;
        io_engine_destroy(e);
        return rc;
    }
    *out = e;
    return 0;
}

/* Callers must have returned from io_engine_run, and threads that used the
 * engine must either have exited or not exit while this runs. */
void io_engine_destroy(struct io_engine *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->qmu);
    e->stop = 1;
    pthread_cond_broadcast(&e->qcv);
    pthread_mutex_unlock(&e->qmu);
    for (int i = 0; i < e->nworkers; i++)
        pthread_join(e->workers[i], NULL);
#ifdef HAVE_URING
    uring_destroy(e);
    pthread_mutex_destroy(&e->rings_mu);
#endif
    pthread_mutex_destroy(&e->qmu);
    pthread_cond_destroy(&e->qcv);
    free(e->q);
    free(e->workers);
    free(e);
}

int io_engine_run(struct io_engine *e, struct io_op *ops, int n)
{
    if (!e || n < 0 || (n && !ops))
        return -EINVAL;
    if (n == 0)
        return 0;

    /* Members whose requests are a memcpy that never blocks (tmpfs) are
     * served on this thread: a hand-off to a worker or to io_uring's
     * workers costs several times the copy. */
    int all_inline = 1;
    for (int i = 0; i < n && all_inline; i++)
        all_inline = ops[i].m && ops[i].m->inline_io;
    if (all_inline) {
        for (int i = 0; i < n; i++)
            op_run(&ops[i]);
        for (int i = 0; i < n; i++)
            if (ops[i].result)
                return ops[i].result;
        return 0;
    }

    struct batch ab = {.done = 0};
    pthread_mutex_init(&ab.mu, NULL);
    pthread_cond_init(&ab.cv, NULL);
    int nasync = async_start(&ab, ops, n);

    const int *fds = NULL; /* NULL: every op goes to the pool */
    int ndirect = 0;
#ifdef HAVE_URING
    /* a batch all taken by members' own submit (NBD) needs no ring: this
     * thread then never makes one */
    struct tl_ring *r = nasync < n ? ring_get(e) : NULL;
    if (r) {
        ndirect = ring_classify(r, ops, n);
        if (ndirect > 0)
            fds = r->fds;
        else
            ndirect = 0;
    }
#endif
    int npool = n - ndirect - nasync;

    struct batch b = {.done = 0};
    atomic_init(&b.pending, 0);
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);

    /* Without ring work the caller would only sleep: it keeps the last
     * pool op for itself (a one-op batch then costs no hand-off at all). */
    int keep = ndirect == 0 ? 1 : 0;
    int from = n;
    if (npool - keep > 0)
        from = pool_queue(e, &b, ops, n, fds, npool - keep);
    else if (npool)
        from = 0;

#ifdef HAVE_URING
    struct ring_batch rb = {.ops = ops, .n = n};
    if (ndirect)
        ring_start(r, &rb);
#endif
    /* Ops the queue had no room for (and the kept one) run here, while
     * the ring's requests and the workers are busy. */
    run_inline(ops, n, fds, from);
#ifdef HAVE_URING
    if (ndirect)
        ring_drain(r, &rb);
#endif
    pool_wait(&b);
    async_wait(&ab, nasync);
    pthread_mutex_destroy(&b.mu);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&ab.mu);
    pthread_cond_destroy(&ab.cv);

    for (int i = 0; i < n; i++)
        if (ops[i].result)
            return ops[i].result;
    return 0;
}

const char *io_engine_kind(const struct io_engine *e)
{
#ifdef HAVE_URING
    if (e && e->uring)
        return "io_uring";
#endif
    return "threads";
}
