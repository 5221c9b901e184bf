/* Fault injection: a layer that stacks on any member and makes chosen byte
 * ranges fail (medium errors), silently drops writes (a disk that lies about
 * its cache), holds writes until told (a request stuck in a disk), makes the
 * member vanish (a pulled cable) or slows every request.
 *
 * Rules can change while other threads do I/O through the layer, so the rule
 * list sits behind a mutex. The lock is held only to decide a request's fate,
 * never across the inner I/O or the latency sleep (a stalled write waits on
 * a condition, which lets it go), so the layer keeps the member's own
 * concurrency. The decision is taken once, at the start of a
 * request: a rule added while a request is in flight affects later requests. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "member/member.h"

struct fault_priv {
    struct member *inner;
    pthread_mutex_t lock;
    pthread_cond_t cleared;   /* the rules were cleared: stalled writes go on */
    struct fault_rule *rules; /* under lock */
    size_t nrules, cap;       /* under lock */
    atomic_int vanished;
    atomic_uint latency_usec;
    atomic_uint_fast64_t hits;
};

static const struct member_ops fault_ops;

static struct fault_priv *fault_of(struct member *m)
{
    return m && m->ops == &fault_ops ? m->priv : NULL;
}

/* [start, start + len) clipped at 2^64 so a rule "to the end" cannot wrap. */
static uint64_t range_end(uint64_t start, uint64_t len)
{
    return len > UINT64_MAX - start ? UINT64_MAX : start + len;
}

static int overlaps(const struct fault_rule *r, uint64_t off, size_t len)
{
    return len && r->len && off < range_end(r->start, r->len) && r->start < range_end(off, len);
}

static void sleep_usec(unsigned usec)
{
    struct timespec ts = {.tv_sec = usec / 1000000u, .tv_nsec = (long)(usec % 1000000u) * 1000};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/* Common prologue of every request: latency, then vanish. Returns 0 or -ENXIO. */
static int enter(struct fault_priv *f)
{
    unsigned usec = atomic_load(&f->latency_usec);
    if (usec)
        sleep_usec(usec);
    if (atomic_load(&f->vanished)) {
        atomic_fetch_add(&f->hits, 1);
        return -ENXIO;
    }
    return 0;
}

/* The error of the first rule with a bit of `what` overlapping the request, or 0. */
static int failing_rule(struct fault_priv *f, unsigned what, uint64_t off, size_t len)
{
    int err = 0;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->nrules && !err; i++)
        if ((f->rules[i].what & what) && overlaps(&f->rules[i], off, len))
            err = f->rules[i].err;
    pthread_mutex_unlock(&f->lock);
    return err;
}

static int fault_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    struct fault_priv *f = m->priv;
    int rc = enter(f);
    if (rc)
        return rc;
    rc = failing_rule(f, FAULT_READ, off, len);
    if (rc) {
        atomic_fetch_add(&f->hits, 1);
        return rc; /* a request overlapping a bad range fails whole, like a disk's */
    }
    return member_read(f->inner, buf, len, off);
}

static int cmp_start(const void *a, const void *b)
{
    const struct fault_rule *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Writes the parts of [off, off + len) outside every dropped range: only
 * the sectors under a drop rule are lost, as when a disk's cache loses
 * them, and the rest of the request really reaches the member. */
static int write_around(struct fault_priv *f, struct fault_rule *drop, size_t ndrop, const void *buf, size_t len,
                        uint64_t off)
{
    qsort(drop, ndrop, sizeof *drop, cmp_start);
    const uint8_t *p = buf;
    uint64_t at = off, end = off + len;
    for (size_t i = 0; i < ndrop && at < end; i++) {
        uint64_t ds = drop[i].start, de = range_end(drop[i].start, drop[i].len);
        if (ds > at) {
            uint64_t to = ds < end ? ds : end;
            int rc = member_write(f->inner, p + (at - off), (size_t)(to - at), at);
            if (rc)
                return rc;
        }
        if (de > at)
            at = de;
    }
    if (at < end)
        return member_write(f->inner, p + (at - off), (size_t)(end - at), at);
    return 0;
}

/* A written range of a healing rule reads again: the rule keeps what is
 * left on either side (it may split in two). */
static void heal(struct fault_priv *f, uint64_t off, size_t len)
{
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->nrules; i++) {
        struct fault_rule *r = &f->rules[i];
        if (!(r->what & FAULT_HEAL) || !overlaps(r, off, len))
            continue;
        uint64_t rs = r->start, re = range_end(r->start, r->len), we = range_end(off, len);
        int left = rs < off, right = re > we;
        if (left && right && f->nrules == f->cap) {
            struct fault_rule *n = realloc(f->rules, 2 * f->cap * sizeof *n);
            if (!n)
                continue; /* keep the rule whole: still failing, never wrongly healed */
            f->rules = n;
            f->cap *= 2;
            r = &f->rules[i];
        }
        if (left && right) {
            f->rules[f->nrules] = *r;
            f->rules[f->nrules].start = we;
            f->rules[f->nrules].len = re - we;
            f->nrules++;
        }
        if (left) {
            r->len = off - rs;
        } else if (right) {
            r->start = we;
            r->len = re - we;
        } else {
            f->rules[i] = f->rules[--f->nrules];
            i--;
        }
    }
    pthread_mutex_unlock(&f->lock);
}

/* Under f->lock: waits while a stall rule overlaps the write. */
static void stall(struct fault_priv *f, uint64_t off, size_t len)
{
    int counted = 0;
    for (size_t i = 0; i < f->nrules; i++) {
        if (!(f->rules[i].what & FAULT_STALL_WRITE) || !overlaps(&f->rules[i], off, len))
            continue;
        if (!counted++)
            atomic_fetch_add(&f->hits, 1);
        pthread_cond_wait(&f->cleared, &f->lock);
        i = (size_t)-1; /* the rules changed: look again from the first */
    }
}

/* A write, durable when it returns with fua (the inner member's FUA
 * write; around dropped parts, the pieces written and then flushed). */
static int put(struct member *m, const void *buf, size_t len, uint64_t off, int fua)
{
    struct fault_priv *f = m->priv;
    if (m->readonly)
        return -EROFS; /* before any rule: a read-only member never reports a write as done */
    int rc = enter(f);
    if (rc)
        return rc;
    struct fault_rule small[8], *drop = small;
    size_t ndrop = 0;
    pthread_mutex_lock(&f->lock);
    stall(f, off, len);
    for (size_t i = 0; i < f->nrules && !rc; i++)
        if ((f->rules[i].what & FAULT_WRITE) && overlaps(&f->rules[i], off, len))
            rc = f->rules[i].err;
    if (!rc) {
        for (size_t i = 0; i < f->nrules; i++) {
            if (!(f->rules[i].what & FAULT_DROP_WRITE) || !overlaps(&f->rules[i], off, len))
                continue;
            if (drop == small && ndrop == sizeof small / sizeof small[0]) {
                drop = malloc(f->nrules * sizeof *drop);
                if (!drop) {
                    rc = -ENOMEM;
                    break;
                }
                memcpy(drop, small, sizeof small);
            }
            drop[ndrop++] = f->rules[i];
        }
    }
    pthread_mutex_unlock(&f->lock);
    if (rc == -ENOMEM && drop == small) {
        return rc;
    } else if (rc) {
        atomic_fetch_add(&f->hits, 1);
    } else if (ndrop) {
        atomic_fetch_add(&f->hits, 1);
        rc = write_around(f, drop, ndrop, buf, len, off);
        if (rc == 0 && fua)
            rc = member_flush(f->inner);
    } else {
        rc = fua ? member_write_fua(f->inner, buf, len, off) : member_write(f->inner, buf, len, off);
    }
    if (drop != small)
        free(drop);
    if (rc == 0)
        heal(f, off, len);
    return rc;
}

static int fault_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    return put(m, buf, len, off, 0);
}

static int fault_write_fua(struct member *m, const void *buf, size_t len, uint64_t off)
{
    return put(m, buf, len, off, 1);
}

/* The rules see a zeroed range as a write of it: failing or dropped
 * ranges stay as they were, written ones heal. */
static int fault_zero(struct member *m, size_t len, uint64_t off)
{
    struct fault_priv *f = m->priv;
    if (m->readonly)
        return -EROFS;
    int rc = enter(f);
    if (rc)
        return rc;
    int dropped = 0;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->nrules && !rc; i++) {
        if ((f->rules[i].what & FAULT_WRITE) && overlaps(&f->rules[i], off, len))
            rc = f->rules[i].err;
        dropped |= (f->rules[i].what & FAULT_DROP_WRITE) && overlaps(&f->rules[i], off, len);
    }
    pthread_mutex_unlock(&f->lock);
    if (rc || dropped) {
        atomic_fetch_add(&f->hits, 1);
        if (rc)
            return rc;
        /* zeros written, in pieces, around the dropped parts */
        size_t piece = len < (256u << 10) ? len : (256u << 10);
        uint8_t *zeros = calloc(1, piece);
        if (!zeros)
            return -ENOMEM;
        for (size_t done = 0; done < len && rc == 0; done += piece)
            rc = fault_write(m, zeros, len - done < piece ? len - done : piece, off + done);
        free(zeros);
        return rc;
    }
    rc = member_zero(f->inner, len, off);
    if (rc == 0)
        heal(f, off, len);
    return rc;
}

static int fault_flush(struct member *m)
{
    struct fault_priv *f = m->priv;
    int rc = enter(f);
    return rc ? rc : member_flush(f->inner);
}

static void fault_close(struct member *m)
{
    struct fault_priv *f = m->priv;
    member_close(f->inner);
    pthread_mutex_destroy(&f->lock);
    pthread_cond_destroy(&f->cleared);
    free(f->rules);
    free(f);
}

/* direct_fd stays NULL: io_uring must not bypass the rules. */
static const struct member_ops fault_ops = {
    .kind = "fault",
    .read = fault_read,
    .write = fault_write,
    .flush = fault_flush,
    .zero = fault_zero,
    .close = fault_close,
    .write_fua = fault_write_fua,
};

int member_fault_wrap(struct member *inner, struct member **out)
{
    if (!inner || !out)
        return -EINVAL;
    struct member *m = calloc(1, sizeof *m);
    struct fault_priv *f = calloc(1, sizeof *f);
    char *name = strdup(inner->path ? inner->path : "");
    if (!m || !f || !name) {
        free(m);
        free(f);
        free(name);
        return -ENOMEM;
    }
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->cleared, NULL);
    f->inner = inner;
    m->ops = &fault_ops;
    m->path = name;
    m->size = inner->size;
    m->readonly = inner->readonly;
    m->seeks = inner->seeks;
    m->write_through = inner->write_through;
    m->power_sim = inner->power_sim;
    m->priv = f;
    *out = m;
    return 0;
}

int member_fault_add(struct member *m, const struct fault_rule *r)
{
    struct fault_priv *f = fault_of(m);
    if (!f || !r || !r->what ||
        (r->what & ~(unsigned)(FAULT_READ | FAULT_WRITE | FAULT_DROP_WRITE | FAULT_HEAL | FAULT_STALL_WRITE)) ||
        !r->len || r->err > 0 || (r->what & FAULT_HEAL && !(r->what & FAULT_READ)))
        return -EINVAL;
    struct fault_rule rule = *r;
    if (!rule.err)
        rule.err = -EIO;
    int rc = 0;
    pthread_mutex_lock(&f->lock);
    if (f->nrules == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 8;
        struct fault_rule *n = realloc(f->rules, cap * sizeof *n);
        if (n) {
            f->rules = n;
            f->cap = cap;
        } else {
            rc = -ENOMEM;
        }
    }
    if (!rc)
        f->rules[f->nrules++] = rule;
    pthread_mutex_unlock(&f->lock);
    return rc;
}

/* Removes every rule and the latency and brings a vanished member back (a
 * re-plugged disk); the hit counter keeps counting. */
int member_fault_clear(struct member *m)
{
    struct fault_priv *f = fault_of(m);
    if (!f)
        return -EINVAL;
    pthread_mutex_lock(&f->lock);
    f->nrules = 0;
    pthread_cond_broadcast(&f->cleared);
    pthread_mutex_unlock(&f->lock);
    atomic_store(&f->latency_usec, 0);
    atomic_store(&f->vanished, 0);
    return 0;
}

int member_fault_vanish(struct member *m)
{
    struct fault_priv *f = fault_of(m);
    if (!f)
        return -EINVAL;
    atomic_store(&f->vanished, 1);
    return 0;
}

int member_fault_latency(struct member *m, uint32_t usec)
{
    struct fault_priv *f = fault_of(m);
    if (!f)
        return -EINVAL;
    atomic_store(&f->latency_usec, usec);
    return 0;
}

uint64_t member_fault_hits(struct member *m)
{
    struct fault_priv *f = fault_of(m);
    return f ? atomic_load(&f->hits) : 0;
}
