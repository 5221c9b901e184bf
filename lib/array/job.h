/* Background work on an open array (job.c runs it): one job at a time walks
 * the members' data areas in batches of whole stripes, calling the kind's
 * step function for each batch, keeping progress, speed and the limits. */
#ifndef URAID_JOB_H
#define URAID_JOB_H

#include <pthread.h>
#include <stdint.h>

#include "uraid.h"

struct uraid_array;
struct array_job;

/* Works on member sectors [start, start + nsec) past data_offset (whole
 * stripes except at the end) with the stripes' locks taken by the step
 * itself. Returns 0, JOB_SKIPPED when the range needed no work (a re-add
 * whose chunks the bitmap shows clean: not counted in worked), or a
 * negative errno that ends the job (with a reason set through job_fail). */
#define JOB_SKIPPED 1
typedef int (*job_step_fn)(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec);

/* The job's lifecycle (job.c's opening comment). */
enum job_phase { JOB_NONE = 0, JOB_PREPARED, JOB_RUNNING, JOB_FINISHING, JOB_ENDED };

/* A member a recovery took out of its slot after it was removed: readers
 * without a lock may still hold its pointer, so it stays open until close. */
struct retired_member {
    struct member *dev;
    struct retired_member *next;
};

struct array_job {
    enum uraid_job_kind kind;
    enum job_phase phase;       /* under job_lock, except RUNNING -> FINISHING -> ENDED on the job's thread */
    job_step_fn step;
    int (*finish)(struct uraid_array *a, struct array_job *j, int rc); /* after the last step or a stop; may be NULL */
    int (*checkpoint)(struct uraid_array *a, struct array_job *j);     /* every few seconds; may be NULL */
    pthread_t thread;
    int thread_started;
    int running, stop;          /* atomics */
    int result;
    char why[256];
    int slot;                   /* RECOVER: the first target slot; REPLACE: the slot copied */
    int ntargets;               /* RECOVER: every slot this job rebuilds (REPLACE: 1) */
    int target[URAID_MAX_MEMBERS];
    int source;                 /* REPLACE: the slot being copied */
    uint64_t start, end;        /* member sectors */
    uint64_t done;              /* atomic: member sectors finished */
    uint64_t speed_max_kib, speed_min_kib;
    uint64_t t0_ns, elapsed_ns;
    uint64_t speed_kib;         /* atomic */
    uint64_t mismatch_sectors, repaired_sectors; /* atomics */
    void *priv;                 /* the kind's own state (rebuild.c's pipeline) */
    /* Optional: the next member range at or after pos with work in it, as
     * [*rs, *re); 0 when none is left (a resync guided by the bitmap). */
    int (*next)(struct uraid_array *a, uint64_t pos, uint64_t *rs, uint64_t *re);
    uint64_t worked;            /* atomic: member sectors stepped over */
    pthread_mutex_t found_lock;
    struct uraid_finding *found;
    size_t nfound, capfound;
    /* Kept from one job to the next (not reset by uraid_job_start): */
    int frozen;                 /* atomic: md's sync_action "frozen": nothing starts by itself */
    int auto_disabled;          /* atomic: an automatic job failed; none starts by itself until
                                 * the members change (md's recovery_disabled) */
    unsigned readd_mask;        /* atomic: slots re-added with the bitmap: only dirty chunks rebuilt */
    struct retired_member *retired; /* closed by array_job_fini */
};

/* Member sectors per batch (whole stripes, at most MAX_BATCH_STRIPES_REBUILD). */
#define MAX_BATCH_STRIPES_REBUILD 64
uint32_t job_batch_sectors(const struct uraid_array *a);

/* Keeps a removed member open until close (see struct retired_member). */
int job_retire_member(struct uraid_array *a, struct member *dev);
/* The members changed (a spare added, a member failed or removed): an
 * automatic job that failed may be tried again. */
void job_members_changed(struct uraid_array *a);

/* All the I/O path tells maintenance (it never calls into job code):
 * never blocks, safe with stripe locks held. */
enum array_note {
    NOTE_MEMBER_FAILED,  /* a working member was marked faulty: look for a spare */
    NOTE_TARGET_FAILED,  /* a member a job writes failed: the job ends at its next batch */
};
void array_notify(struct uraid_array *a, enum array_note note);

/* Records a finding (kept up to a bound; the count goes on). */
void job_add_finding(struct array_job *j, const struct uraid_finding *f);
/* Sets the job's one-line reason (first one wins). */
void job_fail(struct array_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 when a stop was asked for. */
int job_stopping(const struct array_job *j);

/* Kind-specific set-up under the job lock (step, finish, checkpoint, slot;
 * start and end come set to the whole data area); a one-line reason in why
 * when it cannot run. */
int rebuild_prepare(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                    size_t whylen);                                                       /* rebuild.c */
int scrub_prepare(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                  size_t whylen);                                                         /* scrub.c */

int resync_prepare(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                   size_t whylen);                                                        /* resync.c */

int reshape_prepare(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                    size_t whylen);                                                       /* reshape_job.c */

/* Runs fn(a, ctx) under job_lock with no job running and none able to
 * start meanwhile (a reshape's start); -EBUSY with why set when one runs. */
int array_job_exclusive(struct uraid_array *a, int (*fn)(struct uraid_array *a, void *ctx), void *ctx, char *why,
                        size_t whylen);

/* A grow asked while a job runs: -EBUSY with mdadm's refusal in why
 * (md's sync thread running), else 0. Callers ask again under job_lock
 * (array_job_exclusive). */
int array_job_refuse_running(struct uraid_array *a, char *why, size_t whylen);

void array_job_init(struct uraid_array *a);
/* Cancels a running job (its checkpoint is kept) and frees the job. */
void array_job_fini(struct uraid_array *a);

/* Step functions of each kind. */
int rebuild_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec);   /* rebuild.c */
int scrub_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec);     /* scrub.c */

#endif
