/* Members that are NBD exports, through libnbd.
 *
 * A libnbd handle is thread-safe but runs one synchronous command at a time,
 * while the I/O engine's pool calls a member from many threads at once. So a
 * member keeps a small pool of connections: the first is opened with the
 * member (it tells the size and the export's flags), the others only when
 * every open one is busy, and only if the server advertises multi-conn: that
 * flag is the server's promise that a flush on one connection covers writes
 * completed on all of them, and that what one connection wrote is what the
 * others read. Without it the member stays on one connection.
 *
 * Errors: an error the server sends back (EIO for a bad range) leaves the
 * connection usable and is a medium error (-EIO), which the array rebuilds
 * and rewrites. A connection that dies (server gone, socket reset) cannot be
 * revived: the member answers -ENXIO from then on, which fails it, and the
 * array goes on degraded, as with a disk pulled out. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "member/member.h"

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
#include <libnbd.h>

#define NBD_MAX_CONNS 16
#define NBD_DEFAULT_CONNS 4
/* libnbd refuses requests above 64 MiB; the array's largest member request
 * (a rebuild batch) is far below this, so the split is only a safety net. */
#define NBD_MAX_REQUEST (32u << 20)
#define NBD_MAX_ZERO (1u << 30)

struct nbd_conn {
    struct nbd_handle *h;
    int busy;
};

struct nbd_priv {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct nbd_conn conn[NBD_MAX_CONNS];
    int nconn;              /* open connections (conn[0 .. nconn-1]) */
    int opening;            /* connections being opened outside the lock */
    int maxconn;            /* 1 without multi-conn; lowered when the server refuses more */
    int gone;               /* a connection died: every later call is -ENXIO */
    int can_flush;
    int can_zero;
    size_t max_request;
};

/* How many connections a member may use: URAID_NBD_CONNECTIONS (1..16)
 * for measuring, else 4, which keeps the pool's threads busy without
 * opening dozens of sockets per array. */
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

/* Opens one connection. why gets libnbd's own words, which say what failed
 * (URI syntax, connect, handshake, TLS). */
static int connect_one(const char *uri, struct nbd_handle **out, char *why, size_t whylen)
{
    struct nbd_handle *h = nbd_create();
    if (!h) {
        uraid_why(why, whylen, "%s", nbd_get_error());
        return -ENOMEM;
    }
    /* A URI the user typed may name its own TLS key file (tls-psk-file=). */
    nbd_set_uri_allow_local_file(h, true);
    /* Every read's result is checked, so libnbd need not clear buffers first. */
    nbd_set_pread_initialize(h, false);
    if (nbd_connect_uri(h, uri) == -1) {
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

static void disconnect(struct nbd_handle *h)
{
    /* A clean NBD_CMD_DISC lets the server finish and log no error; a dead
     * connection can only be closed. */
    if (!nbd_aio_is_dead(h) && !nbd_aio_is_closed(h))
        nbd_shutdown(h, 0);
    nbd_close(h);
}

/* Takes an idle connection, opening one more when all are busy and the
 * server allows it. Returns 0, or -ENXIO once the member has gone. */
static int conn_get(struct member *m, struct nbd_conn **out)
{
    struct nbd_priv *p = m->priv;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->gone) {
            pthread_mutex_unlock(&p->mu);
            return -ENXIO;
        }
        for (int i = 0; i < p->nconn; i++)
            if (!p->conn[i].busy) {
                p->conn[i].busy = 1;
                *out = &p->conn[i];
                pthread_mutex_unlock(&p->mu);
                return 0;
            }
        if (p->nconn + p->opening < p->maxconn) {
            /* Connect without the lock: other threads keep using the open
             * connections meanwhile. */
            p->opening++;
            pthread_mutex_unlock(&p->mu);
            struct nbd_handle *h = NULL;
            int rc = connect_one(m->path, &h, NULL, 0);
            pthread_mutex_lock(&p->mu);
            p->opening--;
            if (rc == 0 && !p->gone) {
                struct nbd_conn *c = &p->conn[p->nconn++];
                c->h = h;
                c->busy = 1;
                *out = c;
                pthread_mutex_unlock(&p->mu);
                return 0;
            }
            if (h)
                disconnect(h);
            /* A server that turns extra connections away (a connection
             * limit): stay with the ones it accepted. */
            p->maxconn = p->nconn + p->opening;
            pthread_cond_broadcast(&p->cv);
            continue;
        }
        pthread_cond_wait(&p->cv, &p->mu);
    }
}

static void conn_put(struct nbd_priv *p, struct nbd_conn *c)
{
    pthread_mutex_lock(&p->mu);
    c->busy = 0;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* The member's errno for a failed command, read on the failing thread
 * (libnbd keeps the error per thread). */
static int command_error(struct member *m, struct nbd_conn *c, const char *what)
{
    struct nbd_priv *p = m->priv;
    int err = nbd_get_errno();
    const char *msg = nbd_get_error();
    int dead = nbd_aio_is_dead(c->h) || nbd_aio_is_closed(c->h) || err == ENOTCONN || err == ECONNRESET ||
               err == EPIPE || err == ESHUTDOWN;
    if (dead) {
        pthread_mutex_lock(&p->mu);
        int first = !p->gone;
        p->gone = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (first)
            uraid_log(URAID_LOG_WARN, "member %s: NBD connection lost during %s (%s): the member has gone", m->path,
                      what, msg ? msg : "no reason given");
        return -ENXIO;
    }
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

static int nbd_io(struct member *m, void *buf, size_t len, uint64_t off, int write)
{
    struct nbd_priv *p = m->priv;
    uint8_t *b = buf;
    while (len) {
        size_t n = len < p->max_request ? len : p->max_request;
        struct nbd_conn *c;
        int rc = conn_get(m, &c);
        if (rc)
            return rc;
        int r = write ? nbd_pwrite(c->h, b, n, off, 0) : nbd_pread(c->h, b, n, off, 0);
        if (r == -1)
            rc = command_error(m, c, write ? "a write" : "a read");
        conn_put(p, c);
        if (rc)
            return rc;
        b += n;
        len -= n;
        off += n;
    }
    return 0;
}

static int member_nbd_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    return nbd_io(m, buf, len, off, 0);
}

static int member_nbd_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    if (m->readonly)
        return -EROFS;
    return nbd_io(m, (void *)buf, len, off, 1);
}

static int member_nbd_flush(struct member *m)
{
    struct nbd_priv *p = m->priv;
    /* A server without flush (can_flush false) writes through or keeps
     * nothing to flush; Linux's nbd driver treats it the same way. */
    if (m->readonly || !p->can_flush)
        return 0;
    struct nbd_conn *c;
    int rc = conn_get(m, &c);
    if (rc)
        return rc;
    if (nbd_flush(c->h, 0) == -1)
        rc = command_error(m, c, "a flush");
    conn_put(p, c);
    return rc;
}

/* NBD_CMD_WRITE_ZEROES: the server zeroes (or punches) the range without
 * the zeros crossing the socket. A server without it gets zeros written by
 * member_zero. */
static int member_nbd_zero(struct member *m, size_t len, uint64_t off)
{
    struct nbd_priv *p = m->priv;
    if (!p->can_zero)
        return -EOPNOTSUPP;
    while (len) {
        /* NBD lengths are 32-bit on the wire */
        size_t n = len < NBD_MAX_ZERO ? len : NBD_MAX_ZERO;
        struct nbd_conn *c;
        int rc = conn_get(m, &c);
        if (rc)
            return rc;
        if (nbd_zero(c->h, n, off, 0) == -1)
            rc = command_error(m, c, "a write of zeros");
        conn_put(p, c);
        if (rc)
            return rc;
        len -= n;
        off += n;
    }
    return 0;
}

static void member_nbd_close(struct member *m)
{
    struct nbd_priv *p = m->priv;
    for (int i = 0; i < p->nconn; i++)
        disconnect(p->conn[i].h);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static const struct member_ops nbd_ops = {
    .kind = "nbd",
    .read = member_nbd_read,
    .write = member_nbd_write,
    .flush = member_nbd_flush,
    .close = member_nbd_close,
    .zero = member_nbd_zero,
};

int member_open_nbd(const char *uri, int readonly, struct member **out, char *why, size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    struct nbd_handle *h = NULL;
    int rc = connect_one(uri, &h, why, whylen);
    if (rc)
        return rc;
    int64_t size = nbd_get_size(h);
    if (size < 0) {
        uraid_why(why, whylen, "cannot read the export's size: %s", nbd_get_error());
        disconnect(h);
        return -EIO;
    }
    if (!readonly && nbd_is_read_only(h) == 1) {
        uraid_why(why, whylen, "the NBD export is read-only (e.g. nbdkit -r); a member written to must be writable");
        disconnect(h);
        return -EROFS;
    }
    struct member *m = calloc(1, sizeof *m);
    struct nbd_priv *p = calloc(1, sizeof *p);
    char *name = strdup(uri);
    if (!m || !p || !name) {
        free(m);
        free(p);
        free(name);
        disconnect(h);
        uraid_why(why, whylen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->conn[0].h = h;
    p->nconn = 1;
    p->maxconn = nbd_can_multi_conn(h) == 1 ? conns_wanted() : 1;
    p->can_flush = nbd_can_flush(h) == 1;
    p->can_zero = nbd_can_zero(h) == 1;
    p->max_request = NBD_MAX_REQUEST;
    int64_t maxb = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
    if (maxb > 0 && (uint64_t)maxb < p->max_request)
        p->max_request = (size_t)maxb;
    m->ops = &nbd_ops;
    m->path = name;
    m->size = (uint64_t)size;
    m->readonly = readonly;
    m->priv = p;
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
