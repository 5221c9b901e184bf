/* Throttling: a simulated disk (member.h: struct disk_model). Each request
 * costs
 *     latency + positioning + len / bytes_per_sec
 * of wall time: the layer does the real I/O, then sleeps until the request's
 * deadline. Positioning is what a disk head pays to get from the end of the
 * previous request to this one's start: nothing when they meet (a stream),
 * the time the skipped bytes take to pass under the head for a skip
 * forward of at most one revolution's worth of bytes (the head waits on its
 * track: a RAID-5 stream passing over parity chunks), else a seek that grows with the square root of the distance (an arm
 * accelerates, then coasts: short seeks cost far less than a full stroke),
 *     track-to-track + (full_stroke - track-to-track) * sqrt(distance / size)
 * plus half a revolution, the average rotational latency. Over uniformly
 * random pairs of offsets E[sqrt(d)] is 8/15, so the average seek is about
 * t2t + 0.53 * (full - t2t): datasheets' "average seek".
 *
 * Queueing. A disk with a head (seek or rpm given) serves one request at a
 * time. With qd = 1 requests are served in arrival order; with qd > 1 the
 * disk keeps the qd oldest waiting requests in its queue (NCQ) and, each
 * time it is free, serves the one nearest the head (a request passed over qd
 * times goes next, so none starves). A disk without a head (an SSD) serves
 * up to qd requests at once, each paying its latency in parallel, their
 * transfers sharing one channel of bytes_per_sec.
 *
 * Deadlines are absolute CLOCK_MONOTONIC times so the real I/O counts
 * against the budget and wall-clock jumps change nothing. The model's time
 * is kept, not the scheduler's: a request queued behind another starts at
 * that one's deadline, however late its thread woke; and a request arriving
 * within SLACK_NS of the deadline of the slot it takes is treated as
 * back-to-back (a thread wakes some tens of microseconds late; charged to
 * every request that made a 64 KiB stream ~5% slower than its rate). An idle
 * disk banks no more than SLACK_NS. Conversely a request whose deadline is
 * less than EARLY_NS away returns without sleeping (a sleep that short lasts
 * the kernel's timer slack, ~50 us, which would make a 20 us NVMe request
 * take three times its time); the next one still starts at that deadline,
 * so a stream is never faster than the model, a single request at most
 * EARLY_NS early. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "member/member.h"

#define SLACK_NS 1000000u
#define EARLY_NS 50000u
#define T2T_NS 1000000u /* track-to-track, both datasheets the presets cite: 1 ms */

/* A request waiting for an NCQ disk to pick it. */
struct waiter {
    uint64_t off;
    int passed;        /* times a nearer request went first */
    int chosen;
    uint64_t deadline; /* set by whoever chose it */
    size_t len;
    int zero;
    pthread_cond_t cv;
    struct waiter *next;
};

struct throttle_priv {
    struct member *inner;
    struct disk_model d;
    int has_head;
    uint64_t t2t_ns, seek_ns, half_rev_ns;
    uint64_t rev_bytes;    /* bytes passing under the head per revolution (a track) */
    pthread_mutex_t mu;
    uint64_t head;         /* where the last committed request ended, under mu */
    uint64_t xfer_until;   /* the shared transfer channel is busy until, under mu */
    uint64_t *slot_free;   /* per slot: deadline of its last request, under mu */
    int nslots;
    int in_service;        /* NCQ: a request holds the head */
    struct waiter *wq;     /* NCQ: waiting requests in arrival order */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t clamp_ns(unsigned __int128 ns)
{
    return ns > UINT64_MAX / 4 ? UINT64_MAX / 4 : (uint64_t)ns;
}

static uint64_t transfer_ns(const struct throttle_priv *t, size_t len)
{
    if (!t->d.bytes_per_sec)
        return 0;
    return clamp_ns((unsigned __int128)len * 1000000000u / t->d.bytes_per_sec);
}

static uint64_t distance(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

static uint64_t position_ns(const struct throttle_priv *t, uint64_t off)
{
    if (!t->has_head || off == t->head)
        return 0;
    /* A short skip forward (a RAID-5 stream passing over a parity chunk)
     * needs no seek: the head stays on its track while the skipped bytes
     * pass under it, as on a real disk (whose read-ahead caches them). */
    if (off > t->head && off - t->head <= t->rev_bytes)
        return transfer_ns(t, (size_t)(off - t->head));
    uint64_t ns = t->half_rev_ns;
    if (t->seek_ns) {
        double frac = t->inner->size ? (double)distance(off, t->head) / (double)t->inner->size : 1.0;
        if (frac > 1)
            frac = 1;
        ns += t->t2t_ns + (uint64_t)((double)(t->seek_ns - t->t2t_ns) * sqrt(frac));
    }
    return ns;
}

/* Commits a request starting no earlier than start: its deadline. Under mu. */
static uint64_t commit(struct throttle_priv *t, uint64_t start, uint64_t off, size_t len, int zero)
{
    uint64_t ready = start + (uint64_t)t->d.latency_usec * 1000u + position_ns(t, off);
    /* transfers share the channel; with one slot it is always free by now */
    if (ready < t->xfer_until)
        ready = t->xfer_until;
    /* a zeroed range moves no data: it costs the positioning and latency */
    uint64_t deadline = ready + transfer_ns(t, zero ? 0 : len);
    t->xfer_until = deadline;
    t->head = off + len;
    return deadline;
}

/* The calling thread's last request on a simulated disk: a synchronous
 * caller cannot start a request before its previous one ended, even when it
 * came back EARLY_NS early, and one that comes back late starts at that end
 * (back-to-back). A worker serving many members remembers only the last:
 * requests to another disk do not wait for this one anyway. */
static __thread const struct throttle_priv *my_disk;
static __thread uint64_t my_deadline;

/* Where a request arriving at now starts on a slot free since f. */
static uint64_t start_after(const struct throttle_priv *t, uint64_t now, uint64_t f)
{
    if (my_disk == t && my_deadline > f)
        f = my_deadline;
    return f >= now || now - f < SLACK_NS ? f : now;
}

/* Arrival-order scheduling (no head, or qd 1): the earliest-free slot. */
static uint64_t schedule_fifo(struct throttle_priv *t, uint64_t off, size_t len, int zero)
{
    pthread_mutex_lock(&t->mu);
    int best = 0;
    for (int i = 1; i < t->nslots; i++)
        if (t->slot_free[i] < t->slot_free[best])
            best = i;
    uint64_t deadline = commit(t, start_after(t, now_ns(), t->slot_free[best]), off, len, zero);
    t->slot_free[best] = deadline;
    pthread_mutex_unlock(&t->mu);
    return deadline;
}

/* NCQ: waits until the disk takes this request; its deadline. */
static uint64_t schedule_ncq(struct throttle_priv *t, uint64_t off, size_t len, int zero)
{
    pthread_mutex_lock(&t->mu);
    uint64_t deadline;
    if (!t->in_service && !t->wq) {
        t->in_service = 1;
        deadline = commit(t, start_after(t, now_ns(), t->slot_free[0]), off, len, zero);
    } else {
        struct waiter w = {.off = off, .len = len, .zero = zero};
        pthread_cond_init(&w.cv, NULL);
        struct waiter **p = &t->wq;
        while (*p)
            p = &(*p)->next;
        *p = &w;
        while (!w.chosen)
            pthread_cond_wait(&w.cv, &t->mu);
        pthread_cond_destroy(&w.cv);
        deadline = w.deadline;
    }
    pthread_mutex_unlock(&t->mu);
    return deadline;
}

/* NCQ: the request that ended at `ended` hands the head to the nearest of
 * the qd oldest waiters, starting exactly then. */
static void ncq_next(struct throttle_priv *t, uint64_t ended)
{
    pthread_mutex_lock(&t->mu);
    struct waiter **pick = NULL, **p = &t->wq;
    uint32_t n = 0;
    for (; *p && n < t->d.qd; p = &(*p)->next, n++) {
        if (!pick || distance((*p)->off, t->head) < distance((*pick)->off, t->head))
            pick = p;
        if ((*p)->passed >= (int)t->d.qd) { /* aged: it goes now */
            pick = p;
            break;
        }
    }
    if (!pick) {
        t->in_service = 0;
        t->slot_free[0] = ended;
    } else {
        struct waiter *w = *pick;
        *pick = w->next;
        uint32_t k = 1;
        for (struct waiter *o = t->wq; o && k < t->d.qd; o = o->next, k++)
            o->passed++; /* the rest of the window was passed over */
        w->deadline = commit(t, ended, w->off, w->len, w->zero);
        w->chosen = 1;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&t->mu);
}

static void sleep_until(uint64_t deadline_ns)
{
    if (deadline_ns < now_ns() + EARLY_NS)
        return;
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000u), .tv_nsec = (long)(deadline_ns % 1000000000u)};
    /* clock_nanosleep returns the error instead of setting errno. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

enum op { OP_READ, OP_WRITE, OP_FLUSH, OP_ZERO, OP_WRITE_FUA };

static int serve(struct member *m, enum op op, void *buf, size_t len, uint64_t off)
{
    struct throttle_priv *t = m->priv;
    int ncq = t->has_head && t->d.qd > 1;
    if (op == OP_FLUSH) { /* the head stays where it is */
        pthread_mutex_lock(&t->mu);
        off = t->head;
        pthread_mutex_unlock(&t->mu);
        len = 0;
    }
    uint64_t deadline = ncq ? schedule_ncq(t, off, len, op == OP_ZERO) : schedule_fifo(t, off, len, op == OP_ZERO);
    int rc;
    if (op == OP_READ)
        rc = member_read(t->inner, buf, len, off);
    else if (op == OP_WRITE)
        rc = member_write(t->inner, buf, len, off);
    else if (op == OP_WRITE_FUA)
        rc = member_write_fua(t->inner, buf, len, off);
    else if (op == OP_ZERO)
        rc = member_zero(t->inner, len, off);
    else
        rc = member_flush(t->inner);
    /* Failed requests take their time too: a disk reporting a medium error
     * has still spent the seek and the transfer. */
    sleep_until(deadline);
    my_disk = t;
    my_deadline = deadline;
    if (ncq)
        ncq_next(t, deadline);
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

/* A FUA write costs what a write costs: latency, positioning and its own
 * transfer, and not the flush's wait behind every transfer queued before
 * it. The model's disks keep no volatile cache: a write is on the medium at
 * its deadline, and a flush is a command's round trip ordered behind the
 * transfers before it. That is a drive whose cache survives a power loss
 * (enterprise SSDs acknowledge FUA from their capacitor-backed cache; the
 * NVMe spec makes FUA a no-op without a volatile write cache) or a disk
 * with its write cache off, as the hdd presets' free flush says. A consumer
 * drive with a volatile cache would add the time to program that one
 * write's pages (a FUA write makes only itself durable, never the rest of
 * the cache), which this model leaves out. */
static int throttle_write_fua(struct member *m, const void *buf, size_t len, uint64_t off)
{
    if (m->readonly)
        return -EROFS;
    return serve(m, OP_WRITE_FUA, (void *)buf, len, off);
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
    pthread_mutex_destroy(&t->mu);
    free(t->slot_free);
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
    .write_fua = throttle_write_fua,
};

int member_disk_wrap(struct member *inner, const struct disk_model *d, struct member **out)
{
    if (!inner || !d || !out || d->qd < 1 || d->qd > DISK_QD_MAX)
        return -EINVAL;
    struct throttle_priv *t = calloc(1, sizeof *t);
    int has_head = d->seek_usec || d->rpm;
    int nslots = has_head ? 1 : (int)d->qd;
    uint64_t *slots = calloc((size_t)nslots, sizeof *slots);
    struct member *m = calloc(1, sizeof *m);
    char *name = strdup(inner->path ? inner->path : "");
    if (!m || !t || !name || !slots) {
        free(m);
        free(t);
        free(name);
        free(slots);
        return -ENOMEM;
    }
    pthread_mutex_init(&t->mu, NULL);
    t->inner = inner;
    t->d = *d;
    t->has_head = has_head;
    t->seek_ns = (uint64_t)d->seek_usec * 1000u;
    t->t2t_ns = t->seek_ns < T2T_NS ? t->seek_ns : T2T_NS;
    t->half_rev_ns = d->rpm ? 30000000000ull / d->rpm : 0;
    t->rev_bytes = d->rpm ? d->bytes_per_sec * 60u / d->rpm : 0;
    t->slot_free = slots;
    t->nslots = nslots;
    m->ops = &throttle_ops;
    m->path = name;
    m->size = inner->size;
    m->readonly = inner->readonly;
    m->seeks = d->seek_usec || d->rpm || inner->seeks;
    /* the model keeps no volatile cache (throttle_write_fua), unless a
     * simulated power cut below decides what survives by flushes */
    m->write_through = !inner->power_sim;
    m->power_sim = inner->power_sim;
    m->priv = t;
    *out = m;
    return 0;
}

/* The presets. Sources (datasheets, typical values):
 *   hdd-7200: Seagate BarraCuda ST1000DM010: 210 MB/s max sustained at the
 *     outer diameter; Barracuda XT ST32000641AS: 138 MB/s sustained, 4.16 ms
 *     average latency; Seagate desktop 7200 rpm: 8.5 ms average read seek,
 *     < 1 ms track-to-track. 180 MB/s; a 15 ms full stroke gives an 8.5 ms
 *     average seek with 1 ms track-to-track; 7200 rpm: 4.17 ms rotational
 *     latency; random 4 KiB: 12.7 ms, ~79 IOPS.
 *   hdd-5400: Hitachi Travelstar 5K320 (OEM specification 4.4.2): 12 ms
 *     average read seek, 1 ms single track, 20 ms full stroke, 5.5 ms
 *     average latency; 5400 rpm desktop disks stream 100-130 MB/s. 120 MB/s;
 *     a 22 ms full stroke gives the 12 ms average seek in this model
 *     (sqrt of the distance); random 4 KiB: 17.8 ms, ~56 IOPS.
 *   sata-ssd: SATA 6 Gb/s SSDs (Samsung 860 EVO: 550/520 MB/s sequential,
 *     ~10k IOPS 4 KiB at QD1, ~100 us): 500 MB/s, 80 us per request, NCQ
 *     depth 32 (the SATA limit).
 *   nvme: PCIe 3.0 x4 NVMe (Samsung 970 EVO: 3,400/2,500 MB/s; ~20 us for a
 *     4 KiB write at QD1): 3 GB/s, 20 us, 64 requests at once. */
static const struct {
    const char *name;
    struct disk_model d;
} presets[] = {
    {"hdd-7200", {.bytes_per_sec = 180000000, .seek_usec = 15000, .rpm = 7200, .qd = 1}},
    {"hdd-5400", {.bytes_per_sec = 120000000, .seek_usec = 22000, .rpm = 5400, .qd = 1}},
    {"sata-ssd", {.bytes_per_sec = 500000000, .latency_usec = 80, .qd = 32}},
    {"nvme", {.bytes_per_sec = 3000000000u, .latency_usec = 20, .qd = 64}},
};

int member_disk_preset(const char *name, struct disk_model *out)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (name && !strcmp(name, presets[i].name)) {
            *out = presets[i].d;
            return 0;
        }
    return -ENOENT;
}

int member_throttle_wrap(struct member *inner, uint64_t bytes_per_sec, uint32_t latency_usec, struct member **out)
{
    struct disk_model d = {.bytes_per_sec = bytes_per_sec, .latency_usec = latency_usec, .qd = 1};
    return member_disk_wrap(inner, &d, out);
}
