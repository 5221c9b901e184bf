/* One NBD member's work on the thread that serves it (nbd_threads.c; see
 * nbd.c): that thread alone calls libnbd on the member's handles, so a
 * connection can be closed and replaced, and a request sent again, without
 * any lock around libnbd.
 *
 * Each turn (nbd_loop_turn): take the newly queued requests, send what can
 * be sent, fail the member if a request is older than the timeout; then
 * the thread polls every socket of its members (and the eventfd submitters
 * write to) until there is something to do or the next deadline, and
 * hands each socket's events here (nbd_loop_notify, nbd_loop_check).
 * libnbd runs the completion callbacks inside nbd_aio_notify_read on that
 * thread. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "member/nbd_conn.h"

#ifdef HAVE_LIBNBD

/* A connection with this many requests outstanding is busy: the next
 * request opens another connection if the server allows multi-conn.
 * nbdkit serves each connection with 16 threads. */
#define NBD_CONN_BUSY 16
/* Reconnection attempts: the first at once, then every 50 ms doubling to
 * 1 s, until a waiting request reaches its deadline. */
#define BACKOFF_FIRST_NS 50000000ull
#define BACKOFF_MAX_NS 1000000000ull
/* A connection attempt without a member timeout gives up after this and
 * is tried again. */
#define CONNECT_TRY_NS 30000000000ull
/* Requests beyond a busy connection wait this long at most for one being
 * opened (a handshake takes well under a millisecond on a LAN). */
#define HOLD_NS 200000000ull

int nbd_conn_start(const char *uri, struct nbd_handle **out, char *why, size_t whylen)
{
    *out = NULL;
    struct nbd_handle *h = nbd_create();
    if (!h) {
        uraid_why(why, whylen, "%s", nbd_get_error());
        return -ENOMEM;
    }
    /* A URI the user typed may name its own TLS key file (tls-psk-file=). */
    nbd_set_uri_allow_local_file(h, true);
    /* Every read's result is checked, so libnbd need not clear buffers first. */
    nbd_set_pread_initialize(h, false);
    if (nbd_aio_connect_uri(h, uri) == -1) {
        int err = nbd_get_errno();
        const char *msg = nbd_get_error();
        const char *hint = "";
        if (err == ECONNREFUSED || err == ENOENT)
            hint = " (is the NBD server running?)";
        else if (err == EINVAL)
            hint = " (expected nbd://HOST[:PORT][/EXPORT] or nbd+unix:///[EXPORT]?socket=PATH)";
        uraid_why(why, whylen, "%s%s", msg ? msg : "cannot connect", hint);
        nbd_close(h);
        return err > 0 ? -err : -EIO;
    }
    *out = h;
    return 0;
}

static int connected(struct nbd_handle *h) { return nbd_aio_is_ready(h) == 1 || nbd_aio_is_processing(h) == 1; }
static int is_down(struct nbd_handle *h) { return nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1; }

/* One poll of a handle for at most ms; -1 when it died. */
static int poll_once(struct nbd_handle *h, int ms)
{
    int fd = nbd_aio_get_fd(h);
    unsigned dir = nbd_aio_get_direction(h);
    if (fd < 0)
        return -1;
    struct pollfd pfd = {.fd = fd, .events = (short)((dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
                                                     (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0))};
    int n = poll(&pfd, 1, ms);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    int rc = 0;
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
        rc = nbd_aio_notify_read(h);
    if (!rc && (pfd.revents & POLLOUT))
        rc = nbd_aio_notify_write(h);
    return rc;
}

int nbd_conn_wait(struct nbd_handle *h, uint64_t deadline, char *why, size_t whylen)
{
    while (!connected(h)) {
        if (is_down(h) || nbd_aio_is_connecting(h) != 1) {
            int err = nbd_get_errno();
            const char *msg = nbd_get_error();
            uraid_why(why, whylen, "%s%s", msg ? msg : "the connection failed",
                      err == ECONNREFUSED || err == ENOENT ? " (is the NBD server running?)" : "");
            return err > 0 ? -err : -ECONNRESET;
        }
        int ms = 1000;
        if (deadline) {
            uint64_t now = nbd_now_ns();
            if (now >= deadline) {
                uraid_why(why, whylen, "the server accepted the connection but did not finish the NBD handshake "
                          "within the member's timeout (stopped or overloaded?)");
                return -ETIMEDOUT;
            }
            if (deadline - now < 1000000000ull)
                ms = (int)((deadline - now) / 1000000u) + 1;
        }
        if (poll_once(h, ms) < 0 && !is_down(h)) {
            uraid_why(why, whylen, "%s", nbd_get_error() ? nbd_get_error() : "the connection failed");
            return -ECONNRESET;
        }
    }
    return 0;
}

void nbd_conn_close(struct nbd_handle *h)
{
    if (connected(h))
        nbd_aio_disconnect(h, 0);
    nbd_close(h);
}

/* ---- requests ---- */

static int conn_errno(int err)
{
    return err == ENOTCONN || err == ECONNRESET || err == EPIPE || err == ESHUTDOWN || err == ECONNABORTED;
}

/* The member's errno for an error the server (or libnbd) gave a request. */
static int server_errno(int err)
{
    switch (err) {
    case ENOSPC:
    case EROFS:
    case EINVAL:
    case ERANGE:
        return -err;
    case EPERM:
        return -EROFS;
    default:
        return -EIO; /* EIO and anything else the server reports: a medium error */
    }
}

static void stream_done(struct nbd_priv *p, struct nbd_req *r);

/* libnbd's completion callback, on this thread inside notify_read. A
 * request whose connection died goes back to wait for another one. It
 * must not call libnbd on the handle. */
static int req_answered(void *ud, int *error)
{
    struct nbd_req *r = ud;
    struct nbd_conn *c = r->conn;
    if (!c)
        return 1; /* already taken back by conn_down */
    nbd_list_del(r);
    c->inflight--;
    r->conn = NULL;
    struct nbd_priv *p = c->p;
    stream_done(p, r);
    uint64_t rtt = nbd_now_ns() - r->sent;
    p->rtt_ns = p->rtt_ns ? p->rtt_ns - p->rtt_ns / 8 + rtt / 8 : rtt;
    int err = *error;
    if (err && conn_errno(err))
        nbd_list_add_tail(&c->p->waiting, r); /* conn_down will see the dead handle */
    else
        nbd_req_complete(c->p, r, err ? server_errno(err) : 0);
    return 1;
}

static void conn_down(struct nbd_priv *p, struct nbd_conn *c, const char *reason);

/* Sends r on c. */
static void send_req(struct nbd_priv *p, struct nbd_conn *c, struct nbd_req *r)
{
    nbd_completion_callback cb = {.callback = req_answered, .user_data = r};
    r->conn = c;
    r->sent = nbd_now_ns();
    nbd_list_add_tail(&c->wire, r);
    c->inflight++;
    int64_t ck;
    switch (r->kind) {
    case MEMBER_AIO_READ: ck = nbd_aio_pread(c->h, r->buf, r->len, r->off, cb, 0); break;
    case MEMBER_AIO_WRITE: ck = nbd_aio_pwrite(c->h, r->buf, r->len, r->off, cb, 0); break;
    case MEMBER_AIO_WRITE_FUA: ck = nbd_aio_pwrite(c->h, r->buf, r->len, r->off, cb, LIBNBD_CMD_FLAG_FUA); break;
    case MEMBER_AIO_ZERO: ck = nbd_aio_zero(c->h, r->len, r->off, cb, 0); break;
    default: ck = nbd_aio_flush(c->h, cb, 0); break;
    }
    if (ck != -1 || r->conn != c)
        return; /* in flight, or the callback already had it */
    int err = nbd_get_errno();
    nbd_list_del(r);
    c->inflight--;
    r->conn = NULL;
    stream_done(p, r);
    if (is_down(c->h) || conn_errno(err)) {
        nbd_list_add_tail(&p->waiting, r);
        conn_down(p, c, nbd_get_error() ? nbd_get_error() : "the connection failed");
    } else {
        nbd_req_complete(p, r, server_errno(err));
    }
}

/* ---- connections ---- */

static const char *member_name(const struct nbd_priv *p) { return p->m->path; }

static void conn_down(struct nbd_priv *p, struct nbd_conn *c, const char *reason)
{
    struct nbd_handle *h = c->h;
    int was_ready = c->ready;
    c->h = NULL;
    c->ready = 0;
    /* Unanswered requests are older than any waiting one: they go first. */
    while (!nbd_list_empty(&c->wire)) {
        struct nbd_req *r = c->wire.prev;
        nbd_list_del(r);
        r->conn = NULL;
        r->next = p->waiting.next;
        r->prev = &p->waiting;
        p->waiting.next->prev = r;
        p->waiting.next = r;
    }
    c->inflight = 0;
    nbd_close(h);
    if (was_ready && !p->outage) {
        p->outage = 1;
        /* limits learnt from the old server (refused connections) go with it */
        p->maxconn = p->maxconn_init;
        p->outage_since = nbd_now_ns();
        p->next_connect = 0;
        p->backoff = BACKOFF_FIRST_NS;
        if (p->timeout_ns)
            uraid_log(URAID_LOG_WARN, "member %s: NBD connection lost (%s); reconnecting and sending its requests "
                      "again, for up to %.3g s before the member is failed", member_name(p),
                      reason ? reason : "no reason given", (double)p->timeout_ns / 1e9);
        else
            uraid_log(URAID_LOG_WARN, "member %s: NBD connection lost (%s); reconnecting (no timeout set: requests "
                      "wait for the server)", member_name(p), reason ? reason : "no reason given");
    }
}

static int conns_open(const struct nbd_priv *p, int *connecting)
{
    int n = 0;
    *connecting = 0;
    for (int i = 0; i < NBD_MAX_CONNS; i++)
        if (p->conn[i].h) {
            n++;
            *connecting += !p->conn[i].ready;
        }
    return n;
}

/* Starts one more connection if none is being made, the limit allows it
 * and the backoff has passed. */
static void want_conn(struct nbd_priv *p, uint64_t now)
{
    int connecting, open = conns_open(p, &connecting);
    if (connecting || open >= p->maxconn || now < p->next_connect)
        return;
    struct nbd_conn *c = NULL;
    for (int i = 0; i < NBD_MAX_CONNS && !c; i++)
        if (!p->conn[i].h)
            c = &p->conn[i];
    if (!c)
        return;
    char why[200];
    if (nbd_conn_start(p->uri, &c->h, why, sizeof why)) {
        c->h = NULL;
        if (open) /* an extra connection refused: stay with the open ones */
            p->maxconn = open;
        p->next_connect = now + p->backoff;
        p->backoff = p->backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : p->backoff * 2;
        return;
    }
    c->connect_started = now;
    c->connect_deadline = now + (p->timeout_ns ? p->timeout_ns : CONNECT_TRY_NS);
}

static void fail_member(struct nbd_priv *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A connection whose handshake finished: check it is the same export. */
static void conn_connected(struct nbd_priv *p, struct nbd_conn *c)
{
    int64_t size = nbd_get_size(c->h);
    if (size < 0 || (uint64_t)size != p->m->size) {
        fail_member(p, "the export now has %lld bytes, not %llu: it is not the same export", (long long)size,
                    (unsigned long long)p->m->size);
        return;
    }
    if (!p->m->readonly && nbd_is_read_only(c->h) == 1) {
        fail_member(p, "the export came back read-only");
        return;
    }
    /* a server restarted without multi-conn gets one connection from now on */
    if (nbd_can_multi_conn(c->h) != 1)
        p->maxconn = 1;
    c->ready = 1;
    p->backoff = BACKOFF_FIRST_NS;
    if (p->outage) {
        p->outage = 0;
        /* at the level of the warning it ends, so that both are seen */
        uraid_log(URAID_LOG_WARN, "member %s: NBD connection open again after %.2f s; its requests were sent again, "
                  "the member goes on", member_name(p), (double)(nbd_now_ns() - p->outage_since) / 1e9);
    }
}

static void conn_failed_attempt(struct nbd_priv *p, struct nbd_conn *c, uint64_t now)
{
    int connecting, open = conns_open(p, &connecting) - 1;
    nbd_close(c->h);
    c->h = NULL;
    if (open > 0 && open < p->maxconn)
        p->maxconn = open; /* the server turns extra connections away */
    p->next_connect = now + p->backoff;
    p->backoff = p->backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : p->backoff * 2;
}

/* The ready connection with the fewest requests outstanding, or NULL. */
static struct nbd_conn *best_conn(struct nbd_priv *p)
{
    struct nbd_conn *best = NULL;
    for (int i = 0; i < NBD_MAX_CONNS; i++) {
        struct nbd_conn *c = &p->conn[i];
        if (c->h && c->ready && (!best || c->inflight < best->inflight))
            best = c;
    }
    return best;
}

/* A connection being opened for at most HOLD_NS. */
static int fresh_connect(const struct nbd_priv *p, uint64_t now)
{
    for (int i = 0; i < NBD_MAX_CONNS; i++)
        if (p->conn[i].h && !p->conn[i].ready && now - p->conn[i].connect_started < HOLD_NS)
            return 1;
    return 0;
}

/* How far down the waiting list a request's neighbours are looked for. */
#define MERGE_SCAN 64

/* The first request after r in the waiting list (before any flush, which
 * nothing may pass) that can be appended to r: the same kind, starting
 * where r ends, not merged itself. */
static struct nbd_req *next_adjacent(struct nbd_priv *p, struct nbd_req *r, uint64_t end)
{
    int n = 0;
    for (struct nbd_req *s = r->next; s != &p->waiting && n < MERGE_SCAN; s = s->next, n++) {
        if (s->kind != MEMBER_AIO_READ && s->kind != MEMBER_AIO_WRITE)
            return NULL;
        if (s->kind == r->kind && s->off == end && !s->kids)
            return s;
    }
    return NULL;
}

/* A merged request in r's place with r as its only kid, or NULL when
 * memory is short. */
static struct nbd_req *merge_start(struct nbd_priv *p, struct nbd_req *r)
{
    struct nbd_req *m = nbd_req_alloc(p);
    void *bounce = m ? nbd_bounce_get(p) : NULL;
    if (!bounce) {
        free(m);
        return NULL;
    }
    *m = (struct nbd_req){.kind = r->kind, .buf = bounce, .len = r->len, .off = r->off, .deadline = r->deadline,
                          .queued = r->queued, .kids = r};
    if (r->kind == MEMBER_AIO_WRITE)
        memcpy(bounce, r->buf, r->len);
    nbd_list_add_tail(r, m); /* in r's place */
    nbd_list_del(r);
    r->sib = NULL;
    return m;
}

/* Replaces the waiting request r by one request covering r and the
 * requests adjacent to it (a multi-stripe write gives each member
 * consecutive chunks; sequential callers give consecutive pieces), up to
 * merge_max: one request at the server instead of several. Every waiting
 * request is already in flight as far as the array is concerned, and the
 * array never has two overlapping requests out, so taking a later one
 * with an earlier one changes no result. Writes are gathered into a
 * bounce buffer, reads scattered back from it (nbd_req_complete). A
 * merged request still waiting (held) takes the neighbours that arrived
 * since. Returns the request to send: r itself when nothing is adjacent
 * or memory is short. */
static struct nbd_req *merge_run(struct nbd_priv *p, struct nbd_req *r)
{
    if ((r->kind != MEMBER_AIO_READ && r->kind != MEMBER_AIO_WRITE) || r->len >= p->merge_max)
        return r;
    struct nbd_req *add[MERGE_SCAN], *last = r, *s;
    int n = 0;
    size_t len = r->len;
    while (n < MERGE_SCAN && (s = next_adjacent(p, last, r->off + len)) && len + s->len <= p->merge_max) {
        add[n++] = s;
        len += s->len;
        last = s;
    }
    if (!n)
        return r;
    struct nbd_req *m = r->kids ? r : merge_start(p, r);
    if (!m)
        return r;
    uint8_t *bounce = m->buf; /* merge_max bytes */
    struct nbd_req *tail = m->kids;
    while (tail->sib)
        tail = tail->sib;
    for (int i = 0; i < n; i++) {
        struct nbd_req *k = add[i];
        nbd_list_del(k);
        if (k->deadline && (!m->deadline || k->deadline < m->deadline))
            m->deadline = k->deadline;
        if (k->queued < m->queued)
            m->queued = k->queued;
        if (k->kind == MEMBER_AIO_WRITE)
            memcpy(bounce + (k->off - m->off), k->buf, k->len);
        tail->sib = k;
        k->sib = NULL;
        tail = k;
    }
    m->len = len;
    return m;
}

/* ---- holding a stream's next piece ---- */

/* A request this large is sent without waiting for more: the server's
 * cost per request is already spread over four chunks of 64 KiB, and a
 * client whose requests are this large per member (uraid write's 4 MiB
 * pieces: 1 MiB per member) has few in flight, so a hold would cost it
 * throughput (measured: cli writes 0.82x with holds up to 2 MiB). */
#define HOLD_UNTIL (256u << 10)

/* The stream entry r continues (it starts where a request sent ended), or
 * -1. */
static int stream_of(const struct nbd_priv *p, const struct nbd_req *r)
{
    for (int i = 0; i < NBD_STREAMS; i++)
        if (p->stream[i].end == r->off)
            return i;
    return -1;
}

/* r is no longer in flight for its stream (answered, or to be sent again). */
static void stream_done(struct nbd_priv *p, struct nbd_req *r)
{
    if (r->stream && p->stream[r->stream - 1].gen == r->stream_gen)
        p->stream[r->stream - 1].inflight--;
    r->stream = 0;
}

/* r was sent: its stream now ends where r ends and has r in flight (a new
 * stream takes the oldest entry). */
static void stream_note(struct nbd_priv *p, struct nbd_req *r)
{
    stream_done(p, r);
    if (r->kind != MEMBER_AIO_READ && r->kind != MEMBER_AIO_WRITE)
        return;
    int i = stream_of(p, r);
    if (i < 0) {
        i = p->stream_next;
        p->stream_next = (p->stream_next + 1) % NBD_STREAMS;
        p->stream[i] = (struct nbd_stream){.gen = p->stream[i].gen + 1};
    }
    p->stream[i].end = r->off + r->len;
    p->stream[i].inflight++;
    r->stream = i + 1;
    r->stream_gen = p->stream[i].gen;
}

/* 1 when a flush waits: nothing is held past it, so that what it is to
 * cover is not kept back (the array flushes only after its writes
 * completed, but a caller of the member alone may not). */
static int flush_waiting(const struct nbd_priv *p)
{
    for (const struct nbd_req *r = p->waiting.next; r != &p->waiting; r = r->next)
        if (r->kind != MEMBER_AIO_READ && r->kind != MEMBER_AIO_WRITE)
            return 1;
    return 0;
}

/* Whether r (after merge_run) waits a little longer for the piece after
 * it: only the continuation of a sequential stream that has a request in
 * flight on this member (so its client is not waiting for r before it
 * sends the next piece, as one with a single request out would be), only
 * below HOLD_UNTIL and the merge limit, never with a flush waiting, and for at most the
 * member's round trip (a request then takes at most twice as long; a
 * member close by holds for microseconds) and hold_ns, counted from the
 * submission of r's oldest part. A random request continues no stream and
 * is sent at once. Sets hold_until for the loop's sleep. */
static int held(struct nbd_priv *p, const struct nbd_req *r, uint64_t now, int flushing)
{
    if (!p->hold_ns || flushing || (r->kind != MEMBER_AIO_READ && r->kind != MEMBER_AIO_WRITE) ||
        r->len >= HOLD_UNTIL || r->len >= p->merge_max)
        return 0;
    int i = stream_of(p, r);
    if (i < 0 || !p->stream[i].inflight)
        return 0;
    uint64_t until = r->queued + (p->rtt_ns < p->hold_ns ? p->rtt_ns : p->hold_ns);
    if (until <= now)
        return 0;
    if (!p->hold_until || until < p->hold_until)
        p->hold_until = until;
    return 1;
}

static void dispatch(struct nbd_priv *p, uint64_t now)
{
    int flushing = p->hold_ns ? flush_waiting(p) : 0;
    p->hold_until = 0;
    struct nbd_req *r = p->waiting.next;
    while (r != &p->waiting) {
        struct nbd_conn *c = best_conn(p);
        if (!c || c->inflight >= NBD_CONN_BUSY) {
            want_conn(p, now);
            /* A connection on its way serves these sooner than a busy
             * one's queue at the server, if it comes soon; else (or
             * without one) they queue there. */
            if (!c || fresh_connect(p, now))
                return;
        }
        struct nbd_req *m = merge_run(p, r);
        r = m->next; /* merge_run took m's kids off the list */
        if (held(p, m, now, flushing))
            continue;
        nbd_list_del(m);
        stream_note(p, m); /* first: m may be answered and reused once sent */
        send_req(p, c, m);
    }
}

/* ---- failing the member ---- */

static void fail_all(struct nbd_priv *p, struct nbd_req *list)
{
    while (!nbd_list_empty(list)) {
        struct nbd_req *r = list->next;
        nbd_list_del(r);
        nbd_req_complete(p, r, -ENXIO);
    }
}

/* For good: connections closed first (nothing may land in a buffer after
 * its request has been answered), then every request answered -ENXIO. */
static void fail_member(struct nbd_priv *p, const char *fmt, ...)
{
    char reason[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    struct nbd_req all;
    nbd_list_init(&all);
    for (int i = 0; i < NBD_MAX_CONNS; i++) {
        struct nbd_conn *c = &p->conn[i];
        if (!c->h)
            continue;
        struct nbd_handle *h = c->h;
        c->h = NULL;
        c->ready = 0;
        while (!nbd_list_empty(&c->wire)) {
            struct nbd_req *r = c->wire.next;
            nbd_list_del(r);
            r->conn = NULL;
            nbd_list_add_tail(&all, r);
        }
        c->inflight = 0;
        nbd_close(h);
    }
    nbd_list_splice_tail(&all, &p->waiting);
    pthread_mutex_lock(&p->mu);
    int first = !p->failed;
    p->failed = 1;
    nbd_list_splice_tail(&all, &p->queue);
    pthread_mutex_unlock(&p->mu);
    if (first)
        uraid_log(URAID_LOG_WARN, "member %s: %s: the member is failed; once its server answers, add it again "
                  "(uraid add, or the control socket)", member_name(p), reason);
    fail_all(p, &all);
}

/* The earliest deadline of any request, 0 if none has one. A connection
 * sends in the order requests were submitted (those sent again go first),
 * so its oldest is at the head; the waiting list is short and scanned. */
static uint64_t first_deadline(const struct nbd_priv *p)
{
    uint64_t d = 0;
    for (const struct nbd_req *r = p->waiting.next; r != &p->waiting; r = r->next)
        if (r->deadline && (!d || r->deadline < d))
            d = r->deadline;
    for (int i = 0; i < NBD_MAX_CONNS; i++) {
        const struct nbd_req *r = p->conn[i].wire.next;
        if (r != &p->conn[i].wire && r->deadline && (!d || r->deadline < d))
            d = r->deadline;
    }
    return d;
}

/* ---- the loop ---- */

/* Takes the queued requests; returns 1 when the member is closing. */
static int intake(struct nbd_priv *p)
{
    pthread_mutex_lock(&p->mu);
    nbd_list_splice_tail(&p->waiting, &p->queue);
    int stop = p->stop;
    pthread_mutex_unlock(&p->mu);
    return stop;
}

/* Nanoseconds poll may sleep: until the next deadline, connection
 * deadline, reconnection attempt or the end of a hold; -1 for none. At
 * most a second. */
static int64_t sleep_ns(const struct nbd_priv *p, uint64_t now)
{
    uint64_t until = first_deadline(p);
    int connecting = 0, ready = 0;
    if (p->hold_until && (!until || p->hold_until < until))
        until = p->hold_until;
    for (int i = 0; i < NBD_MAX_CONNS; i++) {
        const struct nbd_conn *c = &p->conn[i];
        if (!c->h)
            continue;
        ready += c->ready;
        if (!c->ready) {
            connecting = 1;
            if (!until || c->connect_deadline < until)
                until = c->connect_deadline;
            /* requests held for it go to the busy connections then */
            uint64_t hold = c->connect_started + HOLD_NS;
            if (!nbd_list_empty(&p->waiting) && hold > now && hold < until)
                until = hold;
        }
    }
    /* requests waiting for a connection that is not being made: the next attempt */
    if (!nbd_list_empty(&p->waiting) && !ready && !connecting) {
        uint64_t next = p->next_connect > now ? p->next_connect : now;
        if (!until || next < until)
            until = next;
    }
    if (!until)
        return -1;
    if (until <= now)
        return 0;
    return until - now > 1000000000ull ? 1000000000ll : (int64_t)(until - now);
}

int nbd_loop_fds(struct nbd_priv *p, struct pollfd *pfd, struct nbd_conn **who)
{
    int n = 0;
    for (int i = 0; i < NBD_MAX_CONNS; i++) {
        struct nbd_conn *c = &p->conn[i];
        int fd = c->h ? nbd_aio_get_fd(c->h) : -1;
        if (fd < 0)
            continue;
        unsigned dir = nbd_aio_get_direction(c->h);
        pfd[n] = (struct pollfd){.fd = fd, .events = (short)((dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
                                                             (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0))};
        who[n++] = c;
    }
    return n;
}

void nbd_loop_notify(struct nbd_conn *c, short revents)
{
    int rc = 0;
    if (!c->h)
        return; /* closed by an earlier one's failure */
    if (revents & (POLLIN | POLLHUP | POLLERR))
        rc = nbd_aio_notify_read(c->h);
    if (!rc && c->h && (revents & POLLOUT))
        rc = nbd_aio_notify_write(c->h);
    (void)rc; /* a dead handle is found by nbd_loop_check */
}

void nbd_loop_check(struct nbd_priv *p, uint64_t now)
{
    for (int i = 0; i < NBD_MAX_CONNS; i++) {
        struct nbd_conn *c = &p->conn[i];
        if (!c->h)
            continue;
        if (c->ready) {
            if (is_down(c->h))
                conn_down(p, c, "the server closed it or the socket failed");
        } else if (connected(c->h)) {
            conn_connected(p, c);
        } else if (is_down(c->h) || nbd_aio_is_connecting(c->h) != 1 || now >= c->connect_deadline) {
            conn_failed_attempt(p, c, now);
        }
    }
}

int nbd_loop_turn(struct nbd_priv *p, uint64_t now, int64_t *sleep)
{
    if (!p->backoff)
        p->backoff = BACKOFF_FIRST_NS;
    if (intake(p))
        return 1;
    int failed;
    pthread_mutex_lock(&p->mu);
    failed = p->failed;
    pthread_mutex_unlock(&p->mu);
    if (!failed) {
        dispatch(p, now);
        uint64_t d = first_deadline(p);
        if (d && d <= now)
            fail_member(p, "a request had no answer for %.3g s (the member's timeout)", (double)p->timeout_ns / 1e9);
    }
    *sleep = sleep_ns(p, now);
    return 0;
}

void nbd_loop_finish(struct nbd_priv *p)
{
    /* The array has waited for its requests, so none is left but those of
     * a caller that did not; they fail rather than hang. */
    fail_all(p, &p->waiting);
    for (int i = 0; i < NBD_MAX_CONNS; i++) {
        struct nbd_conn *c = &p->conn[i];
        if (!c->h)
            continue;
        struct nbd_handle *h = c->h;
        c->h = NULL;
        struct nbd_req wire;
        nbd_list_init(&wire);
        nbd_list_splice_tail(&wire, &c->wire);
        for (struct nbd_req *r = wire.next; r != &wire; r = r->next)
            r->conn = NULL;
        nbd_conn_close(h);
        fail_all(p, &wire);
    }
}

#endif /* HAVE_LIBNBD */
