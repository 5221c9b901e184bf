/* Throttling: a simulated disk. Requests to one throttled member are served
 * one at a time, like one disk head, and each takes
 *     latency + len / bytes_per_sec
 * of wall time: the layer does the real I/O, then sleeps for what is left.
 * So one member never exceeds its rate, and n throttled members driven in
 * parallel give n times the bandwidth, which is what the I/O engine's
 * parallelism has to show. Deadlines are absolute CLOCK_MONOTONIC times so
 * the time the real I/O took counts against the budget, and wall-clock
 * jumps cannot stretch or shorten a request.
 *
 * A sleeping thread wakes some tens of microseconds late; charged to every
 * request, that made a stream of 64 KiB requests ~5% slower than the rate.
 * So a request arriving within SLACK_NS of the previous one's deadline is
 * treated as back-to-back: it starts at that deadline, not at "now". The
 * deadlines of a stream then advance by exactly the service times (the rate
 * holds over any stream), while an idle disk banks no more than SLACK_NS. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "member/member.h"

struct throttle_priv {
    struct member *inner;
    uint64_t bytes_per_sec; /* 0 = unlimited */
    uint32_t latency_usec;
    pthread_mutex_t head;   /* the one request being served */
    uint64_t busy_until;    /* deadline of the last request served, under head */
};

#define SLACK_NS 200000u

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Service time of a request of len bytes, in nanoseconds. 128-bit so large
 * requests at high rates cannot overflow. */
static uint64_t service_ns(const struct throttle_priv *t, size_t len)
{
    unsigned __int128 ns = (unsigned __int128)t->latency_usec * 1000u;
    if (t->bytes_per_sec)
        ns += (unsigned __int128)len * 1000000000u / t->bytes_per_sec;
    return ns > UINT64_MAX / 2 ? UINT64_MAX / 2 : (uint64_t)ns;
}

static void sleep_until(uint64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000u), .tv_nsec = (long)(deadline_ns % 1000000000u)};
    /* clock_nanosleep returns the error instead of setting errno. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

enum op { OP_READ, OP_WRITE, OP_FLUSH, OP_ZERO };

static int serve(struct member *m, enum op op, void *buf, size_t len, uint64_t off)
{
    struct throttle_priv *t = m->priv;
    pthread_mutex_lock(&t->head);
    uint64_t start = now_ns();
    if (start - SLACK_NS < t->busy_until && start > t->busy_until)
        start = t->busy_until;
    /* a zeroed range moves no data: it costs a request's latency */
    uint64_t deadline = start + service_ns(t, op == OP_ZERO ? 0 : len);
    t->busy_until = deadline;
    int rc;
    if (op == OP_READ)
        rc = member_read(t->inner, buf, len, off);
    else if (op == OP_WRITE)
        rc = member_write(t->inner, buf, len, off);
    else if (op == OP_ZERO)
        rc = member_zero(t->inner, len, off);
    else
        rc = member_flush(t->inner);
    /* Failed requests take their time too: a disk reporting a medium error
     * has still spent the seek and the transfer. */
    sleep_until(deadline);
    pthread_mutex_unlock(&t->head);
    return rc;
}

static int throttle_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    return serve(m, OP_READ, buf, len, off);
}

static int throttle_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    if (m->readonly)
        return -EROFS;
    return serve(m, OP_WRITE, (void *)buf, len, off);
}

static int throttle_zero(struct member *m, size_t len, uint64_t off)
{
    if (m->readonly)
        return -EROFS;
    return serve(m, OP_ZERO, NULL, len, off);
}

static int throttle_flush(struct member *m)
{
    return serve(m, OP_FLUSH, NULL, 0, 0);
}

static void throttle_close(struct member *m)
{
    struct throttle_priv *t = m->priv;
    member_close(t->inner);
    pthread_mutex_destroy(&t->head);
    free(t);
}

/* direct_fd stays NULL: io_uring must not bypass the simulated disk. */
static const struct member_ops throttle_ops = {
    .kind = "throttle",
    .read = throttle_read,
    .write = throttle_write,
    .flush = throttle_flush,
    .zero = throttle_zero,
    .close = throttle_close,
};

int member_throttle_wrap(struct member *inner, uint64_t bytes_per_sec, uint32_t latency_usec, struct member **out)
{
    if (!inner || !out)
        return -EINVAL;
    struct member *m = calloc(1, sizeof *m);
    struct throttle_priv *t = calloc(1, sizeof *t);
    char *name = strdup(inner->path ? inner->path : "");
    if (!m || !t || !name) {
        free(m);
        free(t);
        free(name);
        return -ENOMEM;
    }
    pthread_mutex_init(&t->head, NULL);
    t->inner = inner;
    t->bytes_per_sec = bytes_per_sec;
    t->latency_usec = latency_usec;
    m->ops = &throttle_ops;
    m->path = name;
    m->size = inner->size;
    m->readonly = inner->readonly;
    m->priv = t;
    *out = m;
    return 0;
}
