/* Background work: one job per array walks the members' data areas in
 * batches of whole stripes on its own thread, calling its kind's step
 * (rebuild.c, scrub.c) for each batch.
 *
 * Speed: held under speed_max (0 = no limit). While user requests arrive
 * the job yields down to speed_min, as md's resync does (is_mddev_idle),
 * so users see their latency, but never below speed_min: a busy array
 * still finishes its rebuild. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array/array.h"
#include "log.h"

#define DEFAULT_SPEED_MIN_KIB 1000u  /* md's sync_speed_min */
#define BATCH_BYTES_PER_MEMBER (2u << 20)
#define MAX_BATCH_STRIPES MAX_BATCH_STRIPES_REBUILD
#define CHECKPOINT_NS 1000000000ull
#define SPEED_WINDOW_NS 2000000000ull
#define MAX_FINDINGS 4096

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *uraid_job_name(enum uraid_job_kind kind)
{
    switch (kind) {
    case URAID_JOB_IDLE: return "idle";
    case URAID_JOB_RECOVER: return "recovery";
    case URAID_JOB_REPLACE: return "replace";
    case URAID_JOB_CHECK: return "check";
    case URAID_JOB_REPAIR: return "repair";
    case URAID_JOB_RESYNC: return "resync";
    }
    return "?";
}

void job_add_finding(struct array_job *j, const struct uraid_finding *f)
{
    pthread_mutex_lock(&j->found_lock);
    if (j->nfound == j->capfound && j->capfound < MAX_FINDINGS) {
        size_t cap = j->capfound ? j->capfound * 2 : 64;
        struct uraid_finding *n = realloc(j->found, cap * sizeof *n);
        if (n) {
            j->found = n;
            j->capfound = cap;
        }
    }
    if (j->nfound < j->capfound)
        j->found[j->nfound++] = *f;
    pthread_mutex_unlock(&j->found_lock);
}

void job_fail(struct array_job *j, const char *fmt, ...)
{
    if (j->why[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->why, sizeof j->why, fmt, ap);
    va_end(ap);
}

int job_stopping(const struct array_job *j) { return __atomic_load_n(&j->stop, __ATOMIC_ACQUIRE); }

/* Sleeps up to usec in short naps, returning early when a stop is asked. */
static void nap(struct array_job *j, uint64_t usec)
{
    while (usec && !job_stopping(j)) {
        uint64_t step = usec < 50000 ? usec : 50000;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)step * 1000};
        nanosleep(&ts, NULL);
        usec -= step;
    }
}

uint32_t job_batch_sectors(const struct uraid_array *a)
{
    uint32_t c = a->geom.chunk_sectors ? a->geom.chunk_sectors : 128; /* RAID-1: mirror lock units */
    uint32_t stripes = BATCH_BYTES_PER_MEMBER / (c * 512u);
    if (stripes < 1)
        stripes = 1;
    if (stripes > MAX_BATCH_STRIPES)
        stripes = MAX_BATCH_STRIPES;
    return stripes * c;
}

static void *job_main(void *arg)
{
    struct uraid_array *a = arg;
    struct array_job *j = &a->job;
    uint32_t nsec = job_batch_sectors(a);
    uint64_t pos = j->start, t0 = now_ns(), last_ckpt = t0;
    uint64_t win_t = t0, win_pos = pos, speed_t = t0, speed_pos = pos, cur_limit = j->speed_max_kib;
    uint64_t seen_user = __atomic_load_n(&a->user_requests, __ATOMIC_RELAXED);
    int rc = 0;
    array_event(a, "RebuildStarted", NULL, uraid_job_name(j->kind)); /* mdadm's name for every sync action */
    while (pos < j->end && !job_stopping(j)) {
        uint64_t run_end = j->end;
        if (j->next) {
            /* whole lock units around the range that needs work */
            uint64_t rs, re, unit = a->geom.chunk_sectors ? a->geom.chunk_sectors : 128;
            if (!j->next(a, pos, &rs, &re)) {
                pos = j->end;
                __atomic_store_n(&j->done, pos, __ATOMIC_RELEASE);
                break;
            }
            rs = rs / unit * unit;
            re = (re + unit - 1) / unit * unit;
            if (rs > pos)
                pos = rs;
            if (re < run_end)
                run_end = re;
        }
        uint32_t n = run_end - pos < nsec ? (uint32_t)(run_end - pos) : nsec;
        rc = j->step(a, j, pos, n);
        if (rc)
            break;
        __atomic_add_fetch(&j->worked, n, __ATOMIC_RELAXED);
        pos += n;
        __atomic_store_n(&j->done, pos, __ATOMIC_RELEASE);
        uint64_t t = now_ns();
        if (t - speed_t >= SPEED_WINDOW_NS / 4) {
            uint64_t kib = (pos - speed_pos) / 2 * 1000000000ull / (t - speed_t);
            __atomic_store_n(&j->speed_kib, kib, __ATOMIC_RELAXED);
            speed_t = t;
            speed_pos = pos;
        }
        if (j->checkpoint && t - last_ckpt >= CHECKPOINT_NS) {
            j->checkpoint(a, j);
            last_ckpt = t;
        }
        /* pace: the limit that applies now (the floor while users do I/O,
         * as md's is_mddev_idle), over a window that starts again whenever
         * the limit changes; naps are short so an idle array speeds up at once */
        for (;;) {
            uint64_t user = __atomic_load_n(&a->user_requests, __ATOMIC_RELAXED);
            uint64_t limit = j->speed_max_kib;
            if (user != seen_user && (limit == 0 || limit > j->speed_min_kib))
                limit = j->speed_min_kib;
            seen_user = user;
            uint64_t t2 = now_ns();
            if (limit != cur_limit || t2 - win_t > SPEED_WINDOW_NS) {
                cur_limit = limit;
                win_t = t2;
                win_pos = pos;
            }
            if (!limit || job_stopping(j))
                break;
            uint64_t want_ns = (pos - win_pos) / 2 * 1000000000ull / limit, spent = t2 - win_t;
            if (want_ns <= spent)
                break;
            uint64_t ns = want_ns - spent;
            nap(j, (ns < 100000000ull ? ns : 100000000ull) / 1000);
        }
    }
    if (rc == 0 && pos < j->end && job_stopping(j))
        rc = -ECANCELED;
    if (j->finish)
        rc = j->finish(a, j, rc);
    j->result = rc;
    j->elapsed_ns = now_ns() - t0;
    if (rc && rc != -ECANCELED && !j->why[0])
        job_fail(j, "%s stopped: %s", uraid_job_name(j->kind), uraid_strerror(rc));
    uraid_log(rc && rc != -ECANCELED ? URAID_LOG_ERROR : URAID_LOG_INFO, "%s %s%s%s", uraid_job_name(j->kind),
              rc == 0 ? "finished" : rc == -ECANCELED ? "stopped (resumes from its checkpoint)" : "failed",
              j->why[0] ? ": " : "", j->why);
    char detail[400];
    int len = snprintf(detail, sizeof detail, "%s %s", uraid_job_name(j->kind),
                       rc == 0 ? "finished" : rc == -ECANCELED ? "stopped" : "failed");
    if (j->kind == URAID_JOB_CHECK || j->kind == URAID_JOB_REPAIR)
        len += snprintf(detail + len, sizeof detail - (size_t)len, ", mismatch_cnt %llu",
                        (unsigned long long)__atomic_load_n(&j->mismatch_sectors, __ATOMIC_RELAXED));
    if (j->why[0])
        snprintf(detail + len, sizeof detail - (size_t)len, ": %s", j->why);
    array_event(a, "RebuildFinished", NULL, detail);
    __atomic_store_n(&j->running, 0, __ATOMIC_RELEASE);
    return NULL;
}

/* Joins a finished job's thread so a new one can start. */
static void reap(struct array_job *j)
{
    if (j->thread_started && !__atomic_load_n(&j->running, __ATOMIC_ACQUIRE)) {
        pthread_join(j->thread, NULL);
        j->thread_started = 0;
    }
}

int uraid_job_start(struct uraid_array *a, enum uraid_job_kind kind, const struct uraid_job_params *p, char *why,
                    size_t whylen)
{
    struct uraid_job_params defaults = {.slot = -1};
    if (!p)
        p = &defaults;
    uraid_why(why, whylen, "%s", "");
    if (a->readonly) {
        uraid_why(why, whylen, "the array is open read-only");
        return -EROFS;
    }
    if (a->nparity == 0 && kind != URAID_JOB_IDLE) {
        uraid_why(why, whylen, "RAID-%d has no redundancy to %s with", a->geom.level, uraid_job_name(kind));
        return -EINVAL;
    }
    pthread_mutex_lock(&a->job_lock);
    struct array_job *j = &a->job;
    reap(j);
    if (j->thread_started) {
        pthread_mutex_unlock(&a->job_lock);
        uraid_why(why, whylen, "a %s is already running", uraid_job_name(j->kind));
        return -EBUSY;
    }
    pthread_mutex_lock(&j->found_lock);
    free(j->found);
    j->found = NULL;
    j->nfound = j->capfound = 0;
    pthread_mutex_unlock(&j->found_lock);
    j->kind = kind;
    j->step = NULL;
    j->finish = NULL;
    j->checkpoint = NULL;
    j->next = NULL;
    j->worked = 0;
    j->stop = 0;
    j->result = 0;
    j->why[0] = 0;
    j->slot = j->source = -1;
    j->mismatch_sectors = j->repaired_sectors = 0;
    j->speed_kib = 0;
    j->elapsed_ns = 0;
    j->speed_max_kib = p->speed_max_kib ? p->speed_max_kib : a->sync_speed_max_kib;
    j->speed_min_kib = p->speed_min_kib ? p->speed_min_kib : a->sync_speed_min_kib;
    if (!j->speed_min_kib)
        j->speed_min_kib = DEFAULT_SPEED_MIN_KIB;
    if (j->speed_max_kib && j->speed_min_kib > j->speed_max_kib)
        j->speed_min_kib = j->speed_max_kib;
    /* every kind walks the members' whole data areas (RAID-1: no chunks) */
    j->start = 0;
    j->end = a->geom.level == 1 ? a->member_sectors
                                : a->member_sectors / a->geom.chunk_sectors * a->geom.chunk_sectors;
    int rc;
    switch (kind) {
    case URAID_JOB_RECOVER:
    case URAID_JOB_REPLACE: rc = rebuild_prepare(a, j, p, why, whylen); break;
    case URAID_JOB_CHECK:
    case URAID_JOB_REPAIR: rc = scrub_prepare(a, j, p, why, whylen); break;
    case URAID_JOB_RESYNC: rc = resync_prepare(a, j, p, why, whylen); break;
    default:
        uraid_why(why, whylen, "unknown job");
        rc = -EINVAL;
    }
    if (rc == 0) {
        j->done = j->start;
        j->t0_ns = now_ns();
        j->running = 1;
        rc = -pthread_create(&j->thread, NULL, job_main, a);
        if (rc) {
            j->running = 0;
            if (j->finish) /* undo the kind's set-up (buffers, a checkpoint to resume from) */
                j->finish(a, j, rc);
            uraid_why(why, whylen, "cannot start a thread: %s", uraid_strerror(rc));
        } else {
            j->thread_started = 1;
            uraid_log(URAID_LOG_INFO, "%s started", uraid_job_name(kind));
        }
    } else {
        j->kind = URAID_JOB_IDLE;
    }
    pthread_mutex_unlock(&a->job_lock);
    return rc;
}

int uraid_job_status(struct uraid_array *a, struct uraid_job_status *st)
{
    memset(st, 0, sizeof *st);
    struct array_job *j = &a->job;
    pthread_mutex_lock(&a->job_lock);
    st->kind = j->kind;
    st->running = __atomic_load_n(&j->running, __ATOMIC_ACQUIRE);
    if (!st->running) {
        st->result = j->result;
        snprintf(st->why, sizeof st->why, "%s", j->why);
    }
    st->slot = j->slot;
    st->done_sectors = __atomic_load_n(&j->done, __ATOMIC_ACQUIRE);
    st->total_sectors = j->end;
    st->speed_kib = __atomic_load_n(&j->speed_kib, __ATOMIC_RELAXED);
    st->elapsed_ms = (st->running ? now_ns() - j->t0_ns : j->elapsed_ns) / 1000000u;
    st->mismatch_sectors = __atomic_load_n(&j->mismatch_sectors, __ATOMIC_RELAXED);
    st->repaired_sectors = __atomic_load_n(&j->repaired_sectors, __ATOMIC_RELAXED);
    st->worked_sectors = __atomic_load_n(&j->worked, __ATOMIC_RELAXED);
    pthread_mutex_lock(&j->found_lock);
    st->nfindings = j->nfound;
    pthread_mutex_unlock(&j->found_lock);
    pthread_mutex_unlock(&a->job_lock);
    return 0;
}

int uraid_job_wait(struct uraid_array *a, struct uraid_job_status *st)
{
    pthread_mutex_lock(&a->job_lock);
    struct array_job *j = &a->job;
    if (j->thread_started) {
        pthread_join(j->thread, NULL);
        j->thread_started = 0;
    }
    pthread_mutex_unlock(&a->job_lock);
    struct uraid_job_status mine;
    uraid_job_status(a, st ? st : &mine);
    return j->result;
}

int uraid_job_cancel(struct uraid_array *a)
{
    __atomic_store_n(&a->job.stop, 1, __ATOMIC_RELEASE);
    uraid_job_wait(a, NULL);
    return 0;
}

size_t uraid_job_findings(struct uraid_array *a, struct uraid_finding *out, size_t max)
{
    struct array_job *j = &a->job;
    pthread_mutex_lock(&j->found_lock);
    size_t n = j->nfound < max ? j->nfound : max;
    if (n)
        memcpy(out, j->found, n * sizeof *out);
    pthread_mutex_unlock(&j->found_lock);
    return n;
}

void array_job_init(struct uraid_array *a)
{
    pthread_mutex_init(&a->job_lock, NULL);
    pthread_mutex_init(&a->job.found_lock, NULL);
}

void array_job_fini(struct uraid_array *a)
{
    if (a->job.thread_started)
        uraid_job_cancel(a);
    free(a->job.found);
    a->job.found = NULL;
    pthread_mutex_destroy(&a->job.found_lock);
    pthread_mutex_destroy(&a->job_lock);
}

void uraid_job_progress_line(const struct uraid_job_status *st, char *buf, size_t len)
{
    if (st->kind == URAID_JOB_IDLE) {
        snprintf(buf, len, "background: idle");
        return;
    }
    const char *name = uraid_job_name(st->kind);
    if (!st->running) {
        const char *how = st->result == 0 ? "finished" : st->result == -ECANCELED ? "stopped" : "failed";
        int o = snprintf(buf, len, "background: %s %s after %.1fs", name, how, (double)st->elapsed_ms / 1000.0);
        if (o > 0 && (size_t)o < len && (st->kind == URAID_JOB_CHECK || st->kind == URAID_JOB_REPAIR))
            o += snprintf(buf + o, len - (size_t)o, ", mismatch_cnt %llu, repaired %llu sectors",
                          (unsigned long long)st->mismatch_sectors, (unsigned long long)st->repaired_sectors);
        if (o > 0 && (size_t)o < len && st->result && st->why[0])
            snprintf(buf + o, len - (size_t)o, ": %s", st->why);
        return;
    }
    double frac = st->total_sectors ? (double)st->done_sectors / (double)st->total_sectors : 0;
    char bar[24];
    int width = 20, filled = (int)(frac * width);
    bar[0] = '[';
    for (int i = 0; i < width; i++)
        bar[1 + i] = i < filled ? '=' : i == filled ? '>' : '.';
    bar[1 + width] = ']';
    bar[2 + width] = 0;
    double finish_min = st->speed_kib ? (double)(st->total_sectors - st->done_sectors) / 2.0 /
                                            (double)st->speed_kib / 60.0
                                      : 0;
    snprintf(buf, len, "%s  %s = %.1f%% (%llu/%llu) finish=%.1fmin speed=%lluK/sec", bar, name, frac * 100.0,
             (unsigned long long)(st->done_sectors / 2), (unsigned long long)(st->total_sectors / 2), finish_min,
             (unsigned long long)st->speed_kib);
}
