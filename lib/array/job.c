/* Background work: one job per array walks the members' data areas in
 * batches of whole stripes on its own thread, calling its kind's step
 * (rebuild.c, scrub.c, resync.c, mirror.c) for each batch.
 *
 * Speed: held under speed_max (0 = no limit). While user requests arrive
 * the job yields down to speed_min, as md's resync does (is_mddev_idle),
 * so users see their latency, but never below speed_min: a busy array
 * still finishes its rebuild.
 *
 * The job's lifecycle (a->job.phase), in the manner of SQLite's pager.c:
 *
 *   JOB_NONE:      no thread. kind is IDLE, or the last job's kind, result
 *                  and reason (why) stay for uraid_job_status.
 *   JOB_PREPARED:  uraid_job_start holds job_lock; the kind's prepare
 *                  succeeded (step set, targets swapped in, start/end set)
 *                  and the thread is being created.
 *   JOB_RUNNING:   job_main walks [start, end) calling step; stop (an
 *                  atomic) asks it to end at the next batch.
 *   JOB_FINISHING: job_main left the walk and runs the kind's finish
 *                  (checkpoint or completion written); stop is ignored.
 *   JOB_ENDED:     running is 0, result final; the thread exits and is
 *                  not joined yet.
 *
 *   NONE     -> PREPARED   uraid_job_start (after reap), under job_lock
 *   PREPARED -> RUNNING    uraid_job_start, once pthread_create succeeded
 *   PREPARED -> NONE       uraid_job_start, when the thread cannot start
 *                          (finish undoes the set-up)
 *   RUNNING  -> FINISHING  job_main, at the end of the walk, on a stop or
 *                          on a step's error
 *   FINISHING-> ENDED      job_main, after finish (running stored 0 last)
 *   ENDED    -> NONE       reap (uraid_job_start) or uraid_job_wait
 *                          (join), under job_lock
 *
 * Invariants (checked by job_check under #ifndef NDEBUG):
 *   NONE:      !thread_started, !running.
 *   PREPARED:  step != NULL, start <= end, !thread_started.
 *   RUNNING, FINISHING: thread_started, running; RECOVER: 1 <= ntargets,
 *              slot == target[0], every target a slot of the array whose
 *              member is there (REBUILDING, or FAULTY once it failed).
 *   ENDED:     thread_started, !running (checked by the thread that joins it).
 * job_check runs where the phase cannot move under it: on the job's own
 * thread for RUNNING and FINISHING, under job_lock for the others.
 *   Always:    start <= done <= end once a job has run; at most one thread.
 *
 * Beside the phase, kept from one job to the next:
 *   frozen        md's "frozen": uraid_job_freeze sets it (and stops the
 *                 job); uraid_job_idle and a check/repair started on
 *                 request clear it. While set, the monitor (rebuild.c)
 *                 starts nothing by itself.
 *   auto_disabled an automatic job failed with an error: the monitor does
 *                 not retry it until the members change (job_members_changed,
 *                 md's recovery_disabled), so a failing rebuild cannot loop.
 * uraid_job_idle (md's "idle") stops the job without freezing: with
 * auto_rebuild the monitor starts a needed recovery or resync again, from
 * its checkpoint. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array/array.h"
#include "log.h"

#ifndef NDEBUG
#include <assert.h>
/* The invariants of the job's phase (see the top of this file). */
static void job_check(const struct uraid_array *a)
{
    const struct array_job *j = &a->job;
    int running = __atomic_load_n(&j->running, __ATOMIC_ACQUIRE);
    enum job_phase phase = __atomic_load_n(&j->phase, __ATOMIC_ACQUIRE);
    switch (phase) {
    case JOB_NONE: assert(!j->thread_started && !running); break;
    case JOB_PREPARED: assert(j->step && j->start <= j->end && !j->thread_started); break;
    case JOB_RUNNING:
    case JOB_FINISHING:
        assert(running);
        if (j->kind == URAID_JOB_RECOVER) {
            assert(j->ntargets >= 1 && j->ntargets <= a->geom.raid_disks && j->slot == j->target[0]);
            for (int i = 0; i < j->ntargets; i++) {
                int t = j->target[i];
                assert(t >= 0 && t < a->geom.raid_disks && __atomic_load_n(&a->slot[t].dev, __ATOMIC_ACQUIRE));
                enum uraid_member_state st = __atomic_load_n(&a->slot[t].state, __ATOMIC_ACQUIRE);
                assert(st == URAID_MEMBER_REBUILDING || st == URAID_MEMBER_FAULTY || st == URAID_MEMBER_IN_SYNC);
            }
        }
        break;
    case JOB_ENDED: assert(!running); break;
    }
    uint64_t done = __atomic_load_n(&j->done, __ATOMIC_ACQUIRE);
    assert(phase == JOB_NONE || phase == JOB_PREPARED || (j->start <= done && done <= j->end));
}
#else
#define job_check(a) ((void)0)
#endif

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

/* The kinds of job, one row each (as the parity registry lists its
 * routines): md's name, the set-up that picks the kind's step, finish and
 * checkpoint for this array's level, and what the runner does for it. A
 * reshape is one more row (reshape_job.c); while one is recorded on the
 * members no other kind starts (md runs nothing beside a reshape). */
typedef int (*job_prepare_fn)(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p,
                              char *why, size_t whylen);
struct job_kind {
    enum uraid_job_kind kind;
    const char *name;          /* md's sync_action word (mdstat's for recovery) */
    job_prepare_fn prepare;    /* NULL: cannot be started */
    int counts_mismatches;     /* reports mismatch_cnt (check, repair) */
    int disable_on_error;      /* an automatic retry waits for a member change (resync;
                                * rebuild_finish decides for a recovery) */
};

static const struct job_kind job_kinds[] = {
    {URAID_JOB_IDLE, "idle", NULL, 0, 0},
    {URAID_JOB_RECOVER, "recovery", rebuild_prepare, 0, 0},
    {URAID_JOB_REPLACE, "replace", rebuild_prepare, 0, 0},
    {URAID_JOB_CHECK, "check", scrub_prepare, 1, 0},
    {URAID_JOB_REPAIR, "repair", scrub_prepare, 1, 0},
    {URAID_JOB_RESYNC, "resync", resync_prepare, 0, 1},
    {URAID_JOB_RESHAPE, "reshape", reshape_prepare, 0, 1},
};

static const struct job_kind *kind_of(enum uraid_job_kind kind)
{
    for (size_t i = 0; i < sizeof job_kinds / sizeof job_kinds[0]; i++)
        if (job_kinds[i].kind == kind)
            return &job_kinds[i];
    return NULL;
}

const char *uraid_job_name(enum uraid_job_kind kind)
{
    const struct job_kind *k = kind_of(kind);
    return k ? k->name : "?";
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
    uint64_t win_t = t0, win_pos = pos, speed_t = t0, speed_pos = pos;
    uint64_t seen_user = __atomic_load_n(&a->user_requests, __ATOMIC_RELAXED);
    int rc = 0;
    job_check(a);
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
        if (rc < 0)
            break;
        if (rc != JOB_SKIPPED)
            __atomic_add_fetch(&j->worked, n, __ATOMIC_RELAXED);
        rc = 0;
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
         * as md's is_mddev_idle) over the current window; naps are short so
         * an idle array speeds up at once. The window does not start again
         * when the limit changes: users coming and going would otherwise
         * grant a free batch at each change, and the job would run at full
         * speed under intermittent I/O */
        for (;;) {
            uint64_t user = __atomic_load_n(&a->user_requests, __ATOMIC_RELAXED);
            uint64_t limit = j->speed_max_kib;
            if (user != seen_user && (limit == 0 || limit > j->speed_min_kib))
                limit = j->speed_min_kib;
            seen_user = user;
            uint64_t t2 = now_ns();
            if (t2 - win_t > SPEED_WINDOW_NS) {
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
    __atomic_store_n(&j->phase, JOB_FINISHING, __ATOMIC_RELEASE);
    job_check(a);
    if (j->finish)
        rc = j->finish(a, j, rc);
    j->result = rc;
    j->elapsed_ns = now_ns() - t0;
    if (rc && rc != -ECANCELED && kind_of(j->kind)->disable_on_error)
        __atomic_store_n(&j->auto_disabled, 1, __ATOMIC_RELEASE);
    if (rc && rc != -ECANCELED && !j->why[0])
        job_fail(j, "%s stopped: %s", uraid_job_name(j->kind), uraid_strerror(rc));
    uraid_log(rc && rc != -ECANCELED ? URAID_LOG_ERROR : URAID_LOG_INFO, "%s %s%s%s", uraid_job_name(j->kind),
              rc == 0 ? "finished" : rc == -ECANCELED ? "stopped (resumes from its checkpoint)" : "failed",
              j->why[0] ? ": " : "", j->why);
    char detail[400];
    int len = snprintf(detail, sizeof detail, "%s %s", uraid_job_name(j->kind),
                       rc == 0 ? "finished" : rc == -ECANCELED ? "stopped" : "failed");
    if (kind_of(j->kind)->counts_mismatches)
        len += snprintf(detail + len, sizeof detail - (size_t)len, ", mismatch_cnt %llu",
                        (unsigned long long)__atomic_load_n(&j->mismatch_sectors, __ATOMIC_RELAXED));
    if (j->why[0])
        snprintf(detail + len, sizeof detail - (size_t)len, ": %s", j->why);
    array_event(a, "RebuildFinished", NULL, detail);
    __atomic_store_n(&j->phase, JOB_ENDED, __ATOMIC_RELEASE);
    __atomic_store_n(&j->running, 0, __ATOMIC_RELEASE);
    /* md_check_recovery runs when a sync ends: the monitor may have looked
     * at this job while it still ran and gone to sleep after it ended */
    array_kick_monitor(a);
    return NULL;
}

/* Joins a finished job's thread so a new one can start. */
static void reap(struct uraid_array *a)
{
    struct array_job *j = &a->job;
    if (j->thread_started && !__atomic_load_n(&j->running, __ATOMIC_ACQUIRE)) {
        pthread_join(j->thread, NULL);
        j->thread_started = 0;
        __atomic_store_n(&j->phase, JOB_NONE, __ATOMIC_RELEASE);
        job_check(a);
    }
}

/* What uraid_job_status reports of the last job. A start that its kind's
 * prepare refuses puts it back: the serve monitor tries an automatic job
 * whenever one ends, and a refused one ("nothing to rebuild") must not wipe
 * the report of the check that just finished. Its findings are freed only
 * once a new job is prepared. */
struct job_report {
    enum uraid_job_kind kind;
    int result, slot, source, ntargets, target[URAID_MAX_MEMBERS];
    char why[256];
    uint64_t start, end, done, t0_ns, elapsed_ns, speed_kib, worked, mismatch_sectors, repaired_sectors;
};

/* The fields a report keeps, named once for both directions (memcpy: the
 * arrays among them copy as the scalars do). */
#define JOB_REPORT_FIELDS(X)                                                                                  \
    X(kind) X(result) X(slot) X(source) X(ntargets) X(target) X(why) X(start) X(end) X(done) X(t0_ns)          \
    X(elapsed_ns) X(speed_kib) X(worked) X(mismatch_sectors) X(repaired_sectors)
#define JOB_TO_REPORT(f) memcpy(&r->f, &j->f, sizeof r->f);
#define REPORT_TO_JOB(f) memcpy(&j->f, &r->f, sizeof j->f);
#define SAME_SIZE(f) _Static_assert(sizeof((struct job_report *)0)->f == sizeof((struct array_job *)0)->f, #f);
JOB_REPORT_FIELDS(SAME_SIZE)
#undef SAME_SIZE

static void report_save(const struct array_job *j, struct job_report *r) { JOB_REPORT_FIELDS(JOB_TO_REPORT) }

static void report_restore(struct array_job *j, const struct job_report *r) { JOB_REPORT_FIELDS(REPORT_TO_JOB) }

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
    reap(a);
    if (j->thread_started) {
        enum uraid_job_kind running = j->kind; /* read under job_lock: a new job may set it next */
        pthread_mutex_unlock(&a->job_lock);
        uraid_why(why, whylen, "a %s is already running", uraid_job_name(running));
        return -EBUSY;
    }
    if (__atomic_load_n(&a->rs, __ATOMIC_ACQUIRE) && kind != URAID_JOB_RESHAPE && kind != URAID_JOB_IDLE) {
        pthread_mutex_unlock(&a->job_lock);
        uraid_why(why, whylen, "a reshape is in progress: a %s can run once it is complete", uraid_job_name(kind));
        return -EBUSY;
    }
    struct job_report last;
    report_save(j, &last);
    j->kind = kind;
    j->step = NULL;
    j->finish = NULL;
    j->checkpoint = NULL;
    j->next = NULL;
    __atomic_store_n(&j->stop, 0, __ATOMIC_RELEASE);
    j->result = 0;
    j->why[0] = 0;
    j->slot = j->source = -1;
    j->ntargets = 0;
    j->worked = j->mismatch_sectors = j->repaired_sectors = 0;
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
    const struct job_kind *k = kind_of(kind);
    int rc = k && k->prepare ? k->prepare(a, j, p, why, whylen) : -EINVAL;
    if (!k || !k->prepare)
        uraid_why(why, whylen, "unknown job");
    if (rc == 0) {
        pthread_mutex_lock(&j->found_lock); /* the new job's findings start empty */
        free(j->found);
        j->found = NULL;
        j->nfound = j->capfound = 0;
        pthread_mutex_unlock(&j->found_lock);
        j->done = j->start;
        j->t0_ns = now_ns();
        __atomic_store_n(&j->phase, JOB_PREPARED, __ATOMIC_RELEASE);
        job_check(a);
        __atomic_store_n(&j->running, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&j->phase, JOB_RUNNING, __ATOMIC_RELEASE);
        rc = -pthread_create(&j->thread, NULL, job_main, a);
        if (rc) {
            __atomic_store_n(&j->running, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&j->phase, JOB_NONE, __ATOMIC_RELEASE);
            if (j->finish) /* undo the kind's set-up (buffers, a checkpoint to resume from) */
                j->finish(a, j, rc);
            uraid_why(why, whylen, "cannot start a thread: %s", uraid_strerror(rc));
        } else {
            j->thread_started = 1;
            uraid_log(URAID_LOG_INFO, "%s started", uraid_job_name(kind));
            array_kick_monitor(a); /* it watches for the end, to start what is needed next */
        }
    } else {
        report_restore(j, &last);
    }
    pthread_mutex_unlock(&a->job_lock);
    return rc;
}

int array_job_refuse_running(struct uraid_array *a, char *why, size_t whylen)
{
    struct uraid_job_status js;
    if (uraid_job_status(a, &js) || !js.running)
        return 0;
    const char *name = uraid_job_name(js.kind);
    return uraid_why(why, whylen, "the array is performing a %s and cannot be reshaped, as mdadm refuses it (a %s is "
                     "running): wait for its end (uraid status) or stop it ('uraid idle'), then grow", name, name),
           -EBUSY;
}

int array_job_exclusive(struct uraid_array *a, int (*fn)(struct uraid_array *a, void *ctx), void *ctx, char *why,
                        size_t whylen)
{
    pthread_mutex_lock(&a->job_lock);
    reap(a);
    int rc;
    if (a->job.thread_started) {
        uraid_why(why, whylen, "a %s is running: stop it first ('uraid idle') or wait for its end",
                  uraid_job_name(a->job.kind));
        rc = -EBUSY;
    } else {
        rc = fn(a, ctx);
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
    st->ntargets = j->kind == URAID_JOB_RECOVER ? j->ntargets : 0;
    for (int i = 0; i < st->ntargets; i++)
        st->targets[i] = j->target[i];
    st->done_sectors = __atomic_load_n(&j->done, __ATOMIC_ACQUIRE);
    st->total_sectors = j->end;
    st->speed_kib = __atomic_load_n(&j->speed_kib, __ATOMIC_RELAXED);
    uint64_t elapsed_ns = st->running ? now_ns() - j->t0_ns : j->elapsed_ns;
    st->elapsed_ms = elapsed_ns / 1000000u;
    /* before the first speed window has passed: the average so far, if
     * anything was done (0 = not measured yet, and the line says nothing) */
    if (!st->speed_kib && st->running && st->done_sectors > j->start && elapsed_ns)
        st->speed_kib = (st->done_sectors - j->start) / 2 * 1000000000ull / elapsed_ns;
    st->mismatch_sectors = __atomic_load_n(&j->mismatch_sectors, __ATOMIC_RELAXED);
    st->repaired_sectors = __atomic_load_n(&j->repaired_sectors, __ATOMIC_RELAXED);
    st->worked_sectors = __atomic_load_n(&j->worked, __ATOMIC_RELAXED);
    st->frozen = __atomic_load_n(&j->frozen, __ATOMIC_ACQUIRE);
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
        __atomic_store_n(&j->phase, JOB_NONE, __ATOMIC_RELEASE);
        job_check(a);
    }
    int result = j->result; /* under job_lock: the monitor may start the next job at once */
    pthread_mutex_unlock(&a->job_lock);
    struct uraid_job_status mine;
    uraid_job_status(a, st ? st : &mine);
    return result;
}

int uraid_job_cancel(struct uraid_array *a)
{
    __atomic_store_n(&a->job.stop, 1, __ATOMIC_RELEASE);
    uraid_job_wait(a, NULL);
    return 0;
}

int uraid_job_freeze(struct uraid_array *a)
{
    __atomic_store_n(&a->job.frozen, 1, __ATOMIC_RELEASE); /* first: the monitor must not restart it */
    return uraid_job_cancel(a);
}

int uraid_job_idle(struct uraid_array *a)
{
    uraid_job_cancel(a);
    int was = __atomic_exchange_n(&a->job.frozen, 0, __ATOMIC_ACQ_REL);
    if (was)
        uraid_log(URAID_LOG_INFO, "background work thawed: needed recovery or resync may start again");
    array_kick_monitor(a); /* a needed recovery starts again from its checkpoint */
    return 0;
}

void array_notify(struct uraid_array *a, enum array_note note)
{
    if (note == NOTE_TARGET_FAILED)
        __atomic_store_n(&a->job.stop, 1, __ATOMIC_RELEASE); /* rebuild_finish sees which target failed */
    array_kick_monitor(a); /* a job starts on the monitor's thread, never on the I/O path's */
}

void job_members_changed(struct uraid_array *a) { __atomic_store_n(&a->job.auto_disabled, 0, __ATOMIC_RELEASE); }

int job_retire_member(struct uraid_array *a, struct member *dev)
{
    if (!dev)
        return 0;
    struct retired_member *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    r->dev = dev;
    pthread_mutex_lock(&a->job.found_lock);
    r->next = a->job.retired;
    a->job.retired = r;
    pthread_mutex_unlock(&a->job.found_lock);
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
    while (a->job.retired) {
        struct retired_member *r = a->job.retired;
        a->job.retired = r->next;
        member_close(r->dev);
        free(r);
    }
    pthread_mutex_destroy(&a->job.found_lock);
    pthread_mutex_destroy(&a->job_lock);
}

void uraid_job_progress_line(const struct uraid_job_status *st, char *buf, size_t len)
{
    if (st->kind == URAID_JOB_IDLE || (st->frozen && !st->running)) {
        snprintf(buf, len, "background: %s", st->frozen ? "frozen (nothing starts by itself; 'uraid idle' thaws)"
                                                        : "idle");
        return;
    }
    const char *name = uraid_job_name(st->kind);
    if (!st->running) {
        const char *how = st->result == 0 ? "finished" : st->result == -ECANCELED ? "stopped" : "failed";
        int o = snprintf(buf, len, "background: %s %s after %.1fs", name, how, (double)st->elapsed_ms / 1000.0);
        if (o > 0 && (size_t)o < len && kind_of(st->kind) && kind_of(st->kind)->counts_mismatches)
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
    int o = snprintf(buf, len, "%s  %s = %.1f%% (%llu/%llu)", bar, name, frac * 100.0,
                     (unsigned long long)(st->done_sectors / 2), (unsigned long long)(st->total_sectors / 2));
    /* no speed is measured before the first window has passed: say nothing rather than 0 */
    if (st->speed_kib && o > 0 && (size_t)o < len)
        snprintf(buf + o, len - (size_t)o, " finish=%.1fmin speed=%lluK/sec",
                 (double)(st->total_sectors - st->done_sectors) / 2.0 / (double)st->speed_kib / 60.0,
                 (unsigned long long)st->speed_kib);
}

/* ---- the monitor: starts jobs on behalf of the I/O path -------------------------------- */

#define MONITOR_POLL_NS 100000000L /* while a job runs: its end starts the next one */

static void *monitor_main(void *arg)
{
    struct uraid_array *a = arg;
    pthread_mutex_lock(&a->mon_mu);
    for (;;) {
        while (!a->mon_kick && !a->mon_stop) {
            if (!__atomic_load_n(&a->job.running, __ATOMIC_ACQUIRE)) {
                pthread_cond_wait(&a->mon_cv, &a->mon_mu);
                continue;
            }
            /* md_check_recovery runs again when a sync ends: look every tick */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += MONITOR_POLL_NS;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&a->mon_cv, &a->mon_mu, &ts);
            if (!__atomic_load_n(&a->job.running, __ATOMIC_ACQUIRE))
                break;
        }
        if (a->mon_stop)
            break;
        a->mon_kick = 0;
        pthread_mutex_unlock(&a->mon_mu);
        array_maybe_auto_rebuild(a);
        pthread_mutex_lock(&a->mon_mu);
    }
    pthread_mutex_unlock(&a->mon_mu);
    return NULL;
}

int array_monitor_start(struct uraid_array *a)
{
    pthread_mutex_init(&a->mon_mu, NULL);
    pthread_cond_init(&a->mon_cv, NULL);
    int rc = -pthread_create(&a->mon, NULL, monitor_main, a);
    a->mon_started = rc == 0;
    return rc;
}

void array_kick_monitor(struct uraid_array *a)
{
    if (!a->mon_started)
        return;
    pthread_mutex_lock(&a->mon_mu);
    a->mon_kick = 1;
    pthread_cond_signal(&a->mon_cv);
    pthread_mutex_unlock(&a->mon_mu);
}

void array_monitor_stop(struct uraid_array *a)
{
    if (!a->mon_started)
        return;
    if (a->mon_joined)
        return;
    pthread_mutex_lock(&a->mon_mu);
    a->mon_stop = 1;
    pthread_cond_signal(&a->mon_cv);
    pthread_mutex_unlock(&a->mon_mu);
    pthread_join(a->mon, NULL);
    a->mon_joined = 1;
}

void array_monitor_destroy(struct uraid_array *a)
{
    if (!a->mon_started)
        return;
    array_monitor_stop(a);
    a->mon_started = 0;
    pthread_cond_destroy(&a->mon_cv);
    pthread_mutex_destroy(&a->mon_mu);
}
