/* Inside the NBD member backend (nbd.c, nbd_loop.c): the member's state,
 * shared between the threads that submit requests and the member's own
 * thread, which alone touches the libnbd handles. */
#ifndef URAID_NBD_CONN_H
#define URAID_NBD_CONN_H

#ifdef HAVE_LIBNBD
#include <libnbd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "member/member.h"

#define NBD_MAX_CONNS 16
#define NBD_DEFAULT_CONNS 4
#define NBD_REQ_FLUSH MEMBER_AIO_FLUSH
/* Sequential streams followed per member for holding (nbd_loop.c). */
#define NBD_STREAMS 8
/* Bounce buffers kept per member for merged requests (nbd_loop.c). */
#define NBD_BOUNCE_KEEP 16

struct nbd_conn;

/* One request; lists are circular with a sentinel. */
struct nbd_req {
    struct nbd_req *next, *prev;
    int kind;                /* enum member_aio_kind */
    void *buf;
    size_t len;
    uint64_t off;
    uint64_t deadline;       /* CLOCK_MONOTONIC ns; 0: no timeout */
    uint64_t queued;         /* CLOCK_MONOTONIC ns when submitted (a merged one: its oldest kid's) */
    uint64_t sent;           /* when sent to the server (the member's round trip) */
    int stream;              /* 1 + the stream entry it was counted in flight for; 0: none */
    unsigned stream_gen;     /* that entry's generation then */
    struct member_aio *aio;
    struct nbd_conn *conn;   /* sent on this connection and not answered, else NULL */
    /* A request merged from several (nbd_loop.c, merge_run): kids are the
     * originals in offset order (linked by sib, on no list), buf is a
     * bounce buffer of its own, aio is NULL. */
    struct nbd_req *kids, *sib;
};

struct nbd_priv;

struct nbd_conn {
    struct nbd_priv *p;
    struct nbd_handle *h;    /* NULL: not connected */
    int ready;               /* handshake done: requests may be sent */
    uint64_t connect_started, connect_deadline;
    int inflight;
    struct nbd_req wire;     /* sent, not answered yet (oldest first) */
};

struct nbd_priv {
    /* Shared with the submitting threads, under mu. */
    pthread_mutex_t mu;
    struct nbd_req queue;    /* submitted, not yet taken by the member's thread */
    struct nbd_req *free;    /* spare requests (singly linked by next) */
    int failed;              /* for good: every later request is -ENXIO */
    int stop;
    int efd;                 /* eventfd that wakes the member's thread (the thread's) */

    /* Set at open, read-only afterwards. */
    struct member *m;
    char *uri;               /* for libnbd: the name without member options */
    uint64_t timeout_ns;     /* 0: no timeout */
    int maxconn_wanted;
    int can_flush, can_zero, can_fua;
    size_t max_request;
    size_t merge_max;        /* adjacent reads or writes merged up to this; 0: never */
    uint64_t hold_ns;        /* a stream's next piece waits up to this for its neighbour; 0: never */

    struct nbd_thread *thr;  /* the thread serving it (nbd_threads.c); set at open */
    int finished;            /* under thr's lock: the thread has let go of it at close */

    /* The member's thread only. */
    struct nbd_conn conn[NBD_MAX_CONNS];
    int maxconn;             /* 1 without multi-conn; lowered when the server refuses more */
    int maxconn_init;        /* what the first connection allowed */
    struct nbd_req waiting;  /* not sent yet, or to be sent again after a lost connection */
    uint64_t next_connect;   /* no connection attempt before this (backoff) */
    uint64_t backoff;
    int outage;              /* a connection was lost and none has come back yet */
    uint64_t outage_since;
    /* Sequential streams (nbd_loop.c, held): where the last requests sent
     * ended, one entry per stream, the oldest replaced. */
    struct nbd_stream {
        uint64_t end;        /* UINT64_MAX: unused */
        unsigned gen;        /* bumped when the entry is given to another stream */
        int inflight;        /* its requests sent and not answered */
    } stream[NBD_STREAMS];
    int stream_next;
    uint64_t rtt_ns;         /* moving average of the time from send to answer */
    /* Bounce buffers of merge_max bytes kept for the next merge: a fresh
     * one of that size each time is a new mapping, every page faulted in
     * and cleared (a quarter of the serving process's time). */
    void *bounce[NBD_BOUNCE_KEEP];
    int nbounce;
    uint64_t hold_until;     /* the earliest a held request is sent anyway; 0: none held */
};

uint64_t nbd_now_ns(void);

static inline void nbd_list_init(struct nbd_req *s) { s->next = s->prev = s; }
static inline int nbd_list_empty(const struct nbd_req *s) { return s->next == s; }
static inline void nbd_list_del(struct nbd_req *r)
{
    r->prev->next = r->next;
    r->next->prev = r->prev;
    r->next = r->prev = r;
}
static inline void nbd_list_add_tail(struct nbd_req *s, struct nbd_req *r)
{
    r->prev = s->prev;
    r->next = s;
    s->prev->next = r;
    s->prev = r;
}
/* Moves every request of from to the end of to (from becomes empty). */
static inline void nbd_list_splice_tail(struct nbd_req *to, struct nbd_req *from)
{
    if (nbd_list_empty(from))
        return;
    from->next->prev = to->prev;
    to->prev->next = from->next;
    from->prev->next = to;
    to->prev = from->prev;
    nbd_list_init(from);
}

/* Creates a handle and starts connecting it without blocking. why gets
 * libnbd's words when that fails at once. */
int nbd_conn_start(const char *uri, struct nbd_handle **out, char *why, size_t whylen);
/* Drives a started connection until the handshake is done, the connection
 * fails or deadline (0: none) passes (-ETIMEDOUT). */
int nbd_conn_wait(struct nbd_handle *h, uint64_t deadline, char *why, size_t whylen);
/* A clean NBD_CMD_DISC when the connection is up, without waiting for a
 * server that may have stopped answering; then the handle is freed. */
void nbd_conn_close(struct nbd_handle *h);

/* The member's work on its thread (nbd_loop.c). One turn: queued
 * requests taken and sent, timeouts; *sleep gets how long (ns, -1: no
 * limit) the thread may sleep for this member. 1 when the member is
 * closing: the thread calls nbd_loop_finish and lets it go. */
int nbd_loop_turn(struct nbd_priv *p, uint64_t now, int64_t *sleep);
void nbd_loop_finish(struct nbd_priv *p);
/* The member's sockets to poll (at most NBD_MAX_CONNS entries), and a
 * socket's events handed back; then nbd_loop_check for handshakes done and
 * connections lost. */
struct pollfd;
int nbd_loop_fds(struct nbd_priv *p, struct pollfd *pfd, struct nbd_conn **who);
void nbd_loop_notify(struct nbd_conn *c, short revents);
void nbd_loop_check(struct nbd_priv *p, uint64_t now);

/* The threads serving NBD members (nbd_threads.c): a member is given to
 * one at open (its efd is then the thread's) and taken back at close,
 * after p->stop was set: detach waits until the thread has finished it. */
int nbd_thread_attach(struct nbd_priv *p);
/* Wakes the thread for requests queued on its members (an eventfd write
 * only when it was not woken since its last turn began). */
void nbd_thread_kick(struct nbd_thread *t);
void nbd_thread_detach(struct nbd_priv *p);
/* Hands a finished request back to its submitter and the request to the
 * free list; a merged one answers each of its kids (reads get their part
 * of the bounce buffer first). */
void nbd_req_complete(struct nbd_priv *p, struct nbd_req *r, int rc);
/* A bounce buffer of merge_max bytes (the member's thread only), NULL when
 * out of memory; and one given back. */
void *nbd_bounce_get(struct nbd_priv *p);
void nbd_bounce_put(struct nbd_priv *p, void *buf);
/* A spare request from the free list or malloc, NULL when out of memory. */
struct nbd_req *nbd_req_alloc(struct nbd_priv *p);

#endif /* HAVE_LIBNBD */
#endif
