/* Members that are NBD exports, through libnbd.
 *
 * Pipelined: every request is started with libnbd's asynchronous calls
 * (nbd_aio_pread/pwrite/zero/flush) by the thread serving the member
 * (nbd_threads.c: one for all NBD members by default; nbd_loop.c), which
 * owns the member's connections and polls their sockets; submitting
 * threads only queue a request and wake it. The I/O engine submits a whole
 * batch through member_ops.submit before waiting, so a member a round trip
 * away has every request of every caller in flight at once, not one per
 * pool thread. Requests go to the least busy connection; a second one (up
 * to 4, URAID_NBD_CONNECTIONS) is opened when each open connection has
 * NBD_CONN_BUSY requests outstanding and the server advertises multi-conn
 * (its promise that a flush on one connection covers writes completed on
 * all, and that all read the same data). Why connections as well as
 * pipelining: a server serves a connection with a fixed number of threads
 * (nbdkit: 16), so requests beyond that only queue there: a batch of 48
 * reads of 64 KiB from nbdkit with a 50 ms delay had 16 at the server at
 * once on one connection (3 round trips, 153 ms) and all 48 on up to 4
 * (one round trip, 56 ms; tests/unit/test_nbd_far.c with
 * URAID_NBD_CONNECTIONS=1 and 4). A connection is opened only when the
 * ones open are that busy, so a member at a light load uses one.
 *
 * Errors: an error the server sends back (EIO for a bad range) leaves the
 * connection usable and is a medium error (-EIO), which the array rebuilds
 * and rewrites. A connection that dies (server restarted, socket reset) is
 * opened again and its unanswered requests sent again, so an outage
 * shorter than the timeout is not seen by the array (a write sent twice
 * lands the same bytes; the array never has two overlapping writes out).
 * Two assumptions, the same as Linux's nbd client makes on reconnect: a
 * request the server was still running when its connection died does not
 * land after a later write to the same range sent on the new connection
 * (nbdkit's delay filter abandons such requests; a plain write ends in
 * microseconds, long before a reconnect), and writes it acknowledged
 * before the outage survive it (a server restarted on the same host; not
 * one whose host lost its cache, which no client can tell).
 * A request unanswered for longer than the timeout (",timeout=TIME" after
 * the URI, 30 s by default, as Linux's nbd client) fails the member: every
 * request then answers -ENXIO, the array goes on degraded, as with a disk
 * pulled out, and, as in md, the member stays failed until it is added
 * again (uraid add / the control socket), which opens it anew. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "member/member.h"
#include "member/nbd_conn.h"

int member_is_nbd_uri(const char *name)
{
    /* nbd://, nbds://, nbd+unix://, nbds+vsock:// ... (the NBD URI spec's
     * schemes); a file whose name starts like that can be given as ./name. */
    if (strncmp(name, "nbd", 3))
        return 0;
    const char *p = name + 3;
    while ((*p >= 'a' && *p <= 'z') || *p == '+')
        p++;
    return !strncmp(p, "://", 3);
}

#ifdef HAVE_LIBNBD

/* libnbd refuses requests above 64 MiB; the array's largest member request
 * (a rebuild batch) is far below this, so the split is only a safety net. */
#define NBD_MAX_REQUEST (32u << 20)
#define NBD_MAX_ZERO (1u << 30)
/* Adjacent requests are merged up to this (nbd_loop.c): every request
 * costs the server a thread hand-off and a round trip of its own, and a
 * multi-stripe write gives each member consecutive chunks. */
#define NBD_MERGE_DEFAULT (2u << 20)
/* How long the next piece of a sequential stream may wait for the piece
 * after it (nbd_loop.c, held): a client sending one stripe per request
 * (nbdcopy: 256 KiB) gives each member one chunk per front request, and
 * only holding lets the next front request's chunk join it. */
#define NBD_HOLD_DEFAULT_US 4000

uint64_t nbd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* How many connections a member may use: URAID_NBD_CONNECTIONS (1..16)
 * for measuring, else NBD_DEFAULT_CONNS. */
static int conns_wanted(void)
{
    const char *s = getenv("URAID_NBD_CONNECTIONS");
    if (s && *s) {
        int n = atoi(s);
        if (n >= 1 && n <= NBD_MAX_CONNS)
            return n;
    }
    return NBD_DEFAULT_CONNS;
}

struct nbd_req *nbd_req_alloc(struct nbd_priv *p)
{
    pthread_mutex_lock(&p->mu);
    struct nbd_req *r = p->free;
    if (r)
        p->free = r->next;
    pthread_mutex_unlock(&p->mu);
    if (!r)
        r = malloc(sizeof *r);
    return r;
}

/* URAID_NBD_MERGE (bytes, 0: off) for measuring, else NBD_MERGE_DEFAULT;
 * never above what the server takes in one request. */
static size_t merge_wanted(size_t max_request)
{
    const char *s = getenv("URAID_NBD_MERGE");
    size_t n = NBD_MERGE_DEFAULT;
    if (s && *s)
        n = (size_t)strtoull(s, NULL, 0);
    return n < max_request ? n : max_request;
}

/* URAID_NBD_HOLD (microseconds, 0: never) for measuring, else
 * NBD_HOLD_DEFAULT_US. */
static uint64_t hold_wanted(void)
{
    const char *s = getenv("URAID_NBD_HOLD");
    uint64_t us = NBD_HOLD_DEFAULT_US;
    if (s && *s)
        us = strtoull(s, NULL, 0);
    return us * 1000u;
}

/* Threads whose members got plugged requests from this submitting
 * thread and have not been woken for them: the batch's last request (the
 * engine plugs every request but its last to an NBD member, whichever
 * member) wakes them all at once. */
#define NBD_DEFER 16
static __thread struct nbd_thread *deferred[NBD_DEFER];
static __thread int ndeferred;

static void defer_kick(struct nbd_thread *t)
{
    for (int i = 0; i < ndeferred; i++)
        if (deferred[i] == t)
            return;
    if (ndeferred == NBD_DEFER)
        nbd_thread_kick(t);
    else
        deferred[ndeferred++] = t;
}

static void kick_deferred(void)
{
    while (ndeferred)
        nbd_thread_kick(deferred[--ndeferred]);
}

/* Queues a request for the member's thread. 0, or -ENXIO once the member
 * has failed (aio->done is then not called). */
static int nbd_queue(struct nbd_priv *p, int kind, void *buf, size_t len, uint64_t off, struct member_aio *aio)
{
    int plug = kind & MEMBER_AIO_PLUG;
    kind &= ~MEMBER_AIO_PLUG;
    struct nbd_req *r = nbd_req_alloc(p);
    if (!r)
        return -ENOMEM;
    *r = (struct nbd_req){.kind = kind, .buf = buf, .len = len, .off = off, .aio = aio, .queued = nbd_now_ns()};
    if (p->timeout_ns)
        r->deadline = r->queued + p->timeout_ns;
    pthread_mutex_lock(&p->mu);
    if (p->failed || p->stop) {
        r->next = p->free;
        p->free = r;
        pthread_mutex_unlock(&p->mu);
        return -ENXIO;
    }
    nbd_list_add_tail(&p->queue, r);
    pthread_mutex_unlock(&p->mu);
    if (plug) {
        defer_kick(p->thr);
    } else {
        nbd_thread_kick(p->thr);
        kick_deferred();
    }
    return 0;
}

void *nbd_bounce_get(struct nbd_priv *p)
{
    return p->nbounce ? p->bounce[--p->nbounce] : malloc(p->merge_max);
}

void nbd_bounce_put(struct nbd_priv *p, void *buf)
{
    if (p->nbounce < NBD_BOUNCE_KEEP)
        p->bounce[p->nbounce++] = buf;
    else
        free(buf);
}

void nbd_req_complete(struct nbd_priv *p, struct nbd_req *r, int rc)
{
    struct nbd_req *kid = r->kids;
    if (kid) {
        while (kid) {
            struct nbd_req *next = kid->sib;
            if (!rc && kid->kind == MEMBER_AIO_READ)
                memcpy(kid->buf, (uint8_t *)r->buf + (kid->off - r->off), kid->len);
            nbd_req_complete(p, kid, rc);
            kid = next;
        }
        nbd_bounce_put(p, r->buf);
    }
    struct member_aio *aio = r->aio;
    pthread_mutex_lock(&p->mu);
    r->next = p->free;
    p->free = r;
    pthread_mutex_unlock(&p->mu);
    if (aio)
        aio->done(aio, rc);
}

static int submit_one(struct member *m, int kind, void *buf, size_t len, uint64_t off, struct member_aio *aio)
{
    struct nbd_priv *p = m->priv;
    int plug = kind & MEMBER_AIO_PLUG;
    kind &= ~MEMBER_AIO_PLUG;
    if (kind == MEMBER_AIO_FLUSH) {
        /* as member_nbd_flush: without a server flush there is nothing to wait for */
        if (m->readonly || !p->can_flush) {
            aio->done(aio, 0);
            return 0;
        }
        return nbd_queue(p, kind | plug, NULL, 0, 0, aio);
    }
    if (kind == MEMBER_AIO_ZERO ? !p->can_zero || len > NBD_MAX_ZERO : len > p->max_request)
        return -E2BIG; /* the synchronous path splits it, or writes zeros */
    if (kind == MEMBER_AIO_WRITE_FUA && !p->can_fua) {
        if (p->can_flush)
            return -EOPNOTSUPP; /* the engine writes, then flushes */
        kind = MEMBER_AIO_WRITE; /* nothing cached: a write is durable */
    }
    if ((kind == MEMBER_AIO_WRITE || kind == MEMBER_AIO_WRITE_FUA) && m->readonly)
        return -EROFS;
    return nbd_queue(p, kind | plug, buf, len, off, aio);
}

static int member_nbd_submit(struct member *m, int kind, void *buf, size_t len, uint64_t off,
                             struct member_aio *aio)
{
    int rc = submit_one(m, kind, buf, len, off, aio);
    /* The batch's last request may not have been queued (not taken, or a
     * flush with nothing to flush): the plugged ones before it must not
     * wait for a kick that never comes. */
    if (rc || !(kind & MEMBER_AIO_PLUG))
        kick_deferred();
    return rc;
}

/* A synchronous call waits for all the pieces it submitted. */
struct waiter {
    struct member_aio aio;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left;
    int rc;
};

static void waiter_done(struct member_aio *a, int rc)
{
    struct waiter *w = a->ctx;
    pthread_mutex_lock(&w->mu);
    if (rc && !w->rc)
        w->rc = rc;
    if (--w->left == 0)
        pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Submits [off, off + len) in pieces of at most max, all at once, and waits. */
static int nbd_sync(struct nbd_priv *p, int kind, uint8_t *buf, size_t len, uint64_t off, size_t max)
{
    struct waiter w = {.left = 1};
    w.aio = (struct member_aio){.done = waiter_done, .ctx = &w};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    int rc = 0;
    do {
        size_t n = len < max ? len : max;
        pthread_mutex_lock(&w.mu);
        w.left++;
        pthread_mutex_unlock(&w.mu);
        rc = nbd_queue(p, kind, buf, n, off, &w.aio);
        if (rc) {
            waiter_done(&w.aio, rc);
            break;
        }
        if (buf)
            buf += n;
        len -= n;
        off += n;
    } while (len);
    waiter_done(&w.aio, 0); /* the count held while submitting */
    pthread_mutex_lock(&w.mu);
    while (w.left)
        pthread_cond_wait(&w.cv, &w.mu);
    rc = w.rc;
    pthread_mutex_unlock(&w.mu);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    return rc;
}

static int member_nbd_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    struct nbd_priv *p = m->priv;
    return len ? nbd_sync(p, MEMBER_AIO_READ, buf, len, off, p->max_request) : 0;
}

static int member_nbd_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    struct nbd_priv *p = m->priv;
    if (m->readonly)
        return -EROFS;
    return len ? nbd_sync(p, MEMBER_AIO_WRITE, (void *)buf, len, off, p->max_request) : 0;
}

static int member_nbd_flush(struct member *m);

/* NBD's FUA flag where the server offers it (one round trip); else the
 * write and a flush, or only the write on a server without flush (it
 * keeps nothing in a cache: member_nbd_flush). */
static int member_nbd_write_fua(struct member *m, const void *buf, size_t len, uint64_t off)
{
    struct nbd_priv *p = m->priv;
    if (m->readonly)
        return -EROFS;
    if (!p->can_fua) {
        int rc = member_nbd_write(m, buf, len, off);
        return rc ? rc : member_nbd_flush(m);
    }
    return len ? nbd_sync(p, MEMBER_AIO_WRITE_FUA, (void *)buf, len, off, p->max_request) : 0;
}

static int member_nbd_flush(struct member *m)
{
    struct nbd_priv *p = m->priv;
    /* A server without flush (can_flush false) writes through or keeps
     * nothing to flush; Linux's nbd driver treats it the same way. The
     * array flushes after its writes have completed, so one flush on any
     * connection covers them (multi-conn). */
    if (m->readonly || !p->can_flush)
        return 0;
    return nbd_sync(p, NBD_REQ_FLUSH, NULL, 1, 0, 1);
}

/* NBD_CMD_WRITE_ZEROES: the server zeroes (or punches) the range without
 * the zeros crossing the socket. A server without it gets zeros written by
 * member_zero. NBD lengths are 32-bit on the wire. */
static int member_nbd_zero(struct member *m, size_t len, uint64_t off)
{
    struct nbd_priv *p = m->priv;
    if (!p->can_zero)
        return -EOPNOTSUPP;
    if (m->readonly)
        return -EROFS;
    return len ? nbd_sync(p, MEMBER_AIO_ZERO, NULL, len, off, NBD_MAX_ZERO) : 0;
}

static void priv_free(struct nbd_priv *p)
{
    for (int i = 0; i < NBD_MAX_CONNS; i++)
        if (p->conn[i].h)
            nbd_conn_close(p->conn[i].h);
    while (p->nbounce)
        free(p->bounce[--p->nbounce]);
    while (p->free) {
        struct nbd_req *r = p->free;
        p->free = r->next;
        free(r);
    }
    pthread_mutex_destroy(&p->mu);
    free(p->uri);
    free(p);
}

static void member_nbd_close(struct member *m)
{
    struct nbd_priv *p = m->priv;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_mutex_unlock(&p->mu);
    nbd_thread_detach(p); /* its thread closes the connections */
    priv_free(p);
}

static const struct member_ops nbd_ops = {
    .kind = "nbd",
    .read = member_nbd_read,
    .write = member_nbd_write,
    .flush = member_nbd_flush,
    .close = member_nbd_close,
    .zero = member_nbd_zero,
    .submit = member_nbd_submit,
    .write_fua = member_nbd_write_fua,
};

/* The first connection, made here with the caller waiting: it tells the
 * size and the export's flags, and a refusal reaches the user at once. */
static int first_connection(struct nbd_priv *p, int readonly, int64_t *size, char *why, size_t whylen)
{
    struct nbd_handle *h = NULL;
    int rc = nbd_conn_start(p->uri, &h, why, whylen);
    if (!rc)
        rc = nbd_conn_wait(h, p->timeout_ns ? nbd_now_ns() + p->timeout_ns : 0, why, whylen);
    if (rc) {
        if (h)
            nbd_close(h);
        return rc;
    }
    *size = nbd_get_size(h);
    if (*size < 0) {
        uraid_why(why, whylen, "cannot read the export's size: %s", nbd_get_error());
        rc = -EIO;
    } else if (!readonly && nbd_is_read_only(h) == 1) {
        uraid_why(why, whylen, "the NBD export is read-only (e.g. nbdkit -r); a member written to must be writable");
        rc = -EROFS;
    }
    if (rc) {
        nbd_conn_close(h);
        return rc;
    }
    p->conn[0].h = h;
    p->conn[0].ready = 1;
    p->maxconn = nbd_can_multi_conn(h) == 1 ? p->maxconn_wanted : 1;
    p->maxconn_init = p->maxconn;
    p->can_flush = nbd_can_flush(h) == 1;
    p->can_fua = nbd_can_fua(h) == 1;
    p->can_zero = nbd_can_zero(h) == 1;
    p->max_request = NBD_MAX_REQUEST;
    int64_t maxb = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
    if (maxb > 0 && (uint64_t)maxb < p->max_request)
        p->max_request = (size_t)maxb;
    p->merge_max = merge_wanted(p->max_request);
    p->hold_ns = p->merge_max ? hold_wanted() : 0;
    return 0;
}

static struct nbd_priv *priv_new(void)
{
    struct nbd_priv *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    nbd_list_init(&p->queue);
    nbd_list_init(&p->waiting);
    for (int i = 0; i < NBD_STREAMS; i++)
        p->stream[i].end = UINT64_MAX;
    for (int i = 0; i < NBD_MAX_CONNS; i++) {
        p->conn[i].p = p;
        nbd_list_init(&p->conn[i].wire);
    }
    p->efd = -1; /* its thread's, once attached */
    return p;
}

int member_open_nbd(const char *name, int readonly, struct member **out, char *why, size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    size_t ulen = strlen(name) + 1;
    char *uri = malloc(ulen);
    struct nbd_member_opts o;
    if (!uri) {
        uraid_why(why, whylen, "out of memory");
        return -ENOMEM;
    }
    int rc = member_nbd_options(name, uri, ulen, &o, why, whylen);
    if (rc) {
        free(uri);
        return rc;
    }
    struct nbd_priv *p = priv_new();
    struct member *m = calloc(1, sizeof *m);
    char *path = strdup(name);
    if (!p || !m || !path) {
        if (p)
            priv_free(p);
        free(uri);
        free(m);
        free(path);
        uraid_why(why, whylen, "out of memory");
        return -ENOMEM;
    }
    p->uri = uri;
    p->timeout_ns = (uint64_t)o.timeout_ms * 1000000u;
    p->maxconn_wanted = conns_wanted();
    int64_t size = 0;
    rc = first_connection(p, readonly, &size, why, whylen);
    m->ops = &nbd_ops;
    m->path = path;
    m->size = (uint64_t)size;
    m->readonly = readonly;
    m->priv = p;
    p->m = m;
    if (!rc) {
        rc = nbd_thread_attach(p);
        if (rc)
            uraid_why(why, whylen, "cannot start the thread serving NBD members: %s", strerror(-rc));
    }
    if (rc) {
        priv_free(p);
        free(path);
        free(m);
        return rc;
    }
    *out = m;
    return 0;
}

#else /* !HAVE_LIBNBD */

int member_open_nbd(const char *uri, int readonly, struct member **out, char *why, size_t whylen)
{
    uraid_why(why, whylen, "this uraid was built without libnbd: install libnbd-dev (scripts/deps.sh) and rebuild");
    return -EPROTONOSUPPORT;
}

#endif
