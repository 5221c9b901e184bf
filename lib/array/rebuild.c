/* Rebuild and replace: background jobs (job.c) that fill slots' members.
 *
 * Recovery: spares take the places of failed or missing members -- every
 * hole there is a spare for, as md does, plus the slots an interrupted
 * rebuild left half done -- and are written stripe by stripe from the
 * others: the survivors are read once per batch and every target's rows of
 * it rebuilt together (RAID-6 recovers two lost blocks at once). Its superblock says which slot
 * it is for and how far it got (feature RECOVERY_OFFSET, recovery_offset,
 * as md does), so a killed rebuild resumes there. Until the rebuild passes
 * a stripe the new member is treated as missing for that stripe: reads
 * rebuild it from the others and writes leave it out (the rebuild computes
 * it later). Each batch of stripes is rebuilt under the stripes' locks, and
 * the member's in-memory checkpoint moves past them before they unlock, so
 * a writer sees either "not rebuilt yet" or "in sync", never half of it.
 * A member re-added with the write-intent bitmap (manage.c) is rebuilt
 * only where the bitmap shows writes since it left: the other batches are
 * passed under their locks (a write that sets a bit after the check finds
 * the checkpoint past it and writes the member itself).
 *
 * Replace: the old member stays in its slot and in sync while its data is
 * copied onto a spare; rows it cannot read are rebuilt from the others.
 * Writes below the copy's checkpoint go to both (rw.c), so redundancy is
 * never reduced. At the end the spare takes the slot and the old member is
 * marked faulty, as md's replace does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"

/* A usable spare for the job: given by path, or the first spare (then a
 * stale member) that is large enough. Returns its index in extra[] or -1. */
static int pick_spare(struct uraid_array *a, const char *path, char *why, size_t whylen)
{
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++)
        for (int e = 0; e < a->nextra && best < 0; e++) {
            struct array_slot *sl = &a->extra[e];
            enum uraid_member_state want = pass == 0 ? URAID_MEMBER_SPARE : URAID_MEMBER_STALE;
            if (!sl->dev || sl->state != want)
                continue;
            if (path && strcmp(path, sl->dev->path))
                continue;
            if (sl->dev->size / 512 < sl->data_offset + a->member_sectors) {
                if (path)
                    uraid_why(why, whylen, "spare %s is too small for this array", path);
                continue;
            }
            best = e;
        }
    if (best < 0 && (!why || !why[0]))
        uraid_why(why, whylen, path ? "%s is not a spare of this array; add it first with 'uraid add'"
                                    : "no spare to rebuild onto: add one with 'uraid add'",
                  path);
    return best;
}

static void drop_extra(struct uraid_array *a, int e)
{
    memmove(&a->extra[e], &a->extra[e + 1], sizeof a->extra[0] * (size_t)(a->nextra - e - 1));
    a->nextra--;
    memset(&a->extra[a->nextra], 0, sizeof a->extra[0]);
}

/* ---- targets ------------------------------------------------------------------------ */

/* The member target i of the job writes: a slot being rebuilt, or the
 * replacement being copied. */
static struct array_slot *target_of(struct uraid_array *a, const struct array_job *j, int i)
{
    return j->kind == URAID_JOB_REPLACE ? &a->replacement : &a->slot[j->target[i]];
}

/* Targets whose rows of member sectors [start, end) the batch rebuilds (a
 * bit per target index): those not valid up to end. Replace: its one. */
static unsigned batch_lost(struct uraid_array *a, const struct array_job *j, uint64_t end)
{
    if (j->kind == URAID_JOB_REPLACE)
        return 1u;
    unsigned lost = 0;
    for (int i = 0; i < j->ntargets; i++)
        if (!slot_ok_upto(a, j->target[i], end))
            lost |= 1u << i;
    return lost;
}

/* Whether [start, start + nsec) needs work: some lost target is a plain
 * spare, or the bitmap shows a write there since a re-added one left.
 * Called under the range's locks (see the top of this file). */
static int batch_needed(struct uraid_array *a, const struct array_job *j, unsigned lost, uint64_t start, uint32_t nsec)
{
    if (j->kind == URAID_JOB_REPLACE)
        return 1;
    unsigned readd = __atomic_load_n(&a->job.readd_mask, __ATOMIC_ACQUIRE);
    for (int i = 0; i < j->ntargets; i++)
        if ((lost >> i & 1) && !(readd >> j->target[i] & 1))
            return 1;
    uint64_t rs, re;
    return wib_next_dirty(a, start, &rs, &re) && rs < start + nsec;
}

/* Every lost target's checkpoint moves to end (its rows below are valid). */
static void targets_passed(struct uraid_array *a, const struct array_job *j, unsigned lost, uint64_t end)
{
    for (int i = 0; i < j->ntargets; i++)
        if (lost >> i & 1)
            __atomic_store_n(&target_of(a, j, i)->recovered, end, __ATOMIC_RELEASE);
}

/* ---- the checkpoint on disk ------------------------------------------------------ */

static int rebuild_checkpoint(struct uraid_array *a, struct array_job *j)
{
    for (int i = 0; i < j->ntargets; i++) {
        struct array_slot *sl = target_of(a, j, i);
        if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != URAID_MEMBER_REBUILDING)
            continue; /* failed meanwhile */
        int rc = member_flush(sl->dev);
        if (rc)
            return rc;
        pthread_mutex_lock(&a->meta_lock);
        sl->sb.feature_map |= MD_FEATURE_RECOVERY_OFFSET;
        sl->sb.recovery_offset = __atomic_load_n(&sl->recovered, __ATOMIC_ACQUIRE);
        pthread_mutex_unlock(&a->meta_lock);
    }
    return array_write_superblocks(a);
}

static int rebuild_drain(struct uraid_array *a, struct array_job *j);
static void pipe_free(struct array_job *j);

/* Target i is whole: in sync, without a recovery offset. */
static int target_done(struct uraid_array *a, struct array_job *j, int i)
{
    struct array_slot *sl = target_of(a, j, i);
    int rc = member_flush(sl->dev);
    if (rc) {
        job_fail(j, "member %s: flush failed at the end of the rebuild: %s", sl->dev->path, uraid_strerror(rc));
        return rc;
    }
    pthread_mutex_lock(&a->meta_lock);
    sl->sb.feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
    sl->sb.recovery_offset = 0;
    __atomic_store_n(&sl->state, URAID_MEMBER_IN_SYNC, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&a->meta_lock);
    __atomic_and_fetch(&a->job.readd_mask, ~(1u << j->target[i]), __ATOMIC_ACQ_REL);
    uraid_log(URAID_LOG_INFO, "member %s: slot %d rebuilt", sl->dev->path, j->target[i]);
    char detail[64];
    snprintf(detail, sizeof detail, "rebuilt into slot %d", j->target[i]);
    array_event(a, "SpareActive", sl->dev->path, detail);
    return 0;
}

static int rebuild_finish(struct uraid_array *a, struct array_job *j, int rc)
{
    if (rc == 0 || rc == -ECANCELED) { /* the batch computed last is valid: keep it */
        int d = rebuild_drain(a, j);
        rc = rc ? rc : d;
    }
    pipe_free(j);
    int failed = -1, done = 0;
    for (int i = 0; i < j->ntargets; i++) {
        struct array_slot *sl = target_of(a, j, i);
        if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != URAID_MEMBER_REBUILDING) {
            __atomic_and_fetch(&a->job.readd_mask, ~(1u << j->target[i]), __ATOMIC_ACQ_REL);
            if (failed < 0)
                failed = i;
        } else if (rc == 0 && target_done(a, j, i) == 0) {
            done++;
        }
    }
    if (rc) {
        int c = rebuild_checkpoint(a, j);
        for (int i = 0; i < j->ntargets; i++)
            if (i != failed)
                uraid_log(URAID_LOG_INFO, "member %s: rebuild of slot %d stopped at sector %llu%s",
                          target_of(a, j, i)->dev->path, j->target[i],
                          (unsigned long long)target_of(a, j, i)->recovered,
                          c ? " (checkpoint not saved)" : "; it resumes there");
    }
    int wr = done ? array_write_superblocks(a) : 0;
    if (failed >= 0) {
        job_fail(j, "member %s failed during the rebuild of slot %d", target_of(a, j, failed)->dev->path,
                 j->target[failed]);
        return rc ? rc : -EIO;
    }
    if (rc && rc != -ECANCELED) /* md's recovery_disabled: not retried until the members change */
        __atomic_store_n(&a->job.auto_disabled, 1, __ATOMIC_RELEASE);
    if (rc == 0 && wr)
        job_fail(j, "slots rebuilt, but the superblocks could not be written: %s", uraid_strerror(wr));
    return rc ? rc : wr;
}

/* ---- one batch -------------------------------------------------------------------- */

/* What rows_gather did with one range of a stripe's rows (the whole
 * stripe, or a 4 KiB group of it when the whole had too many blocks
 * unreadable): rebuilt, then the members whose reads failed there get the
 * rows back (not a slot being filled: the rebuild writes those); or lost,
 * then recorded on the new members. Nothing is read again to find out. */
struct stripe_outcome {
    struct uraid_array *a;
    struct array_job *j;
    const unsigned char *is_target;
    int rc;                 /* the first error that stops the job */
};

static void stripe_outcome(void *ctx, struct stripe_rows *r, int rc, const unsigned char *failed)
{
    struct stripe_outcome *o = ctx;
    struct uraid_array *a = o->a;
    if (o->rc)
        return;
    if (rc == -EIO) { /* md: what no member can give is listed bad on the new members */
        o->rc = array_rebuild_rows_lost(a, o->j, r, o->is_target);
        return;
    }
    o->rc = rc;
    uint64_t first = r->stripe * a->geom.chunk_sectors + r->row;
    for (int m = 0; m < a->geom.raid_disks && rc == 0; m++)
        if (failed[m] && !o->is_target[m])
            array_correct_read_error(a, m, r->block[m], r->nrows, first);
}

/* The batch rebuilt last: its writes to the new members go out together
 * with the next batch's reads, so the new members write while the others
 * read (a rebuild runs at member speed, not half of it). Its stripes are
 * unlocked in between, so a user write may change them: their seqlock
 * counts are kept, and a batch whose count moved is computed again. Each
 * buffer holds one batch per target, target after target. */
struct rebuild_pipe {
    uint8_t *buf[2];
    int cur;                 /* buf[cur] holds the pending batch */
    int have;
    unsigned lost;           /* the pending batch's targets (batch_lost) */
    uint64_t start;
    uint32_t nsec;
    size_t batch_bytes;      /* one target's share of a buffer */
    uint32_t gen[MAX_BATCH_STRIPES_REBUILD];
};

/* Where batch [start, start + nsec) lives (the stripe layer's batch):
 * each lost target's rows in its share of out (replace: the source's rows,
 * read straight into out), every other member's at mem + m * len. */
struct rebuild_batch {
    struct stripe_batch b;
    unsigned char is_target[URAID_MAX_MEMBERS]; /* by slot: rows being filled */
    unsigned char skip[URAID_MAX_MEMBERS];      /* by slot: not read (replace: all but the source) */
    int source;                                 /* replace: the slot copied, else -1 */
};

static void batch_layout(struct uraid_array *a, const struct array_job *j, uint64_t start, uint32_t nsec,
                         uint8_t *mem, uint8_t *out, size_t batch_bytes, unsigned lost, struct rebuild_batch *rb)
{
    size_t len = (size_t)nsec * SECTOR;
    memset(rb, 0, sizeof *rb);
    rb->b.start = start;
    rb->b.end = start + nsec;
    rb->source = j->kind == URAID_JOB_REPLACE ? j->source : -1;
    for (int m = 0; m < a->geom.raid_disks; m++) {
        rb->b.base[m] = mem + (size_t)m * len;
        rb->skip[m] = rb->source >= 0 && m != rb->source;
    }
    if (rb->source >= 0) {
        rb->b.base[rb->source] = out;
        rb->is_target[rb->source] = 1;
        return;
    }
    for (int i = 0, k = 0; i < j->ntargets; i++)
        if (lost >> i & 1) {
            rb->b.base[j->target[i]] = out + (size_t)k++ * batch_bytes;
            rb->is_target[j->target[i]] = 1;
        }
}

/* Fills the lost targets' rows of the batch from what was read. */
static int compute_batch(struct uraid_array *a, struct array_job *j, struct rebuild_batch *rb, uint8_t *zero)
{
    int n = a->geom.raid_disks, source = rb->source;
    uint32_t c = a->geom.chunk_sectors;
    if (source >= 0 && rb->b.readok[source])
        return 0; /* a replace whose source read well is a plain copy */
    int rc = 0;
    struct stripe_rows *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    for (uint64_t s = rb->b.start / c; s * c < rb->b.end && rc == 0; s++) {
        if ((rc = stripe_batch_rows(a, &rb->b, s, r)) != 0)
            break;
        if (source >= 0)
            r->unavailable[source] = 1;
        /* members whose batch read failed are read again for this stripe only */
        unsigned char have[URAID_MAX_MEMBERS];
        for (int m = 0; m < n; m++)
            have[m] = rb->b.readok[m] && !rb->is_target[m];
        struct stripe_outcome o = {.a = a, .j = j, .is_target = rb->is_target};
        rc = rows_gather(a, r, zero, have, NULL, stripe_outcome, &o);
        if (rc == -EIO) /* some rows were lost: recorded, the job goes on */
            rc = o.rc;
        if (rc == 0 && source >= 0)
            array_correct_read_error(a, source, r->block[source], r->nrows, s * c);
        if (rc)
            job_fail(j, "stripe %llu (member sectors %llu-%llu) cannot be rebuilt: more blocks unreadable than "
                        "RAID-%d survives",
                     (unsigned long long)s, (unsigned long long)(s * c), (unsigned long long)(s * c + r->nrows - 1),
                     a->geom.level);
    }
    free(r);
    return rc;
}

/* Reads and computes batch [start, start + nsec) into out on its own. */
static int batch_alone(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec, uint8_t *mem,
                       uint8_t *out, size_t batch_bytes, unsigned lost, uint8_t *zero)
{
    struct rebuild_batch rb;
    batch_layout(a, j, start, nsec, mem, out, batch_bytes, lost, &rb);
    stripe_batch_read(a, &rb.b, rb.skip);
    return compute_batch(a, j, &rb, zero);
}

/* Appends the pending batch's writes, one per target it rebuilds. */
static int add_pending_writes(struct uraid_array *a, struct array_job *j, const struct rebuild_pipe *P,
                              const uint8_t *pend, struct io_op *ops, int *nops)
{
    if (j->kind == URAID_JOB_REPLACE && __atomic_load_n(&a->replacement_failed, __ATOMIC_ACQUIRE)) {
        job_fail(j, "member %s failed a write during the replace", a->replacement.dev->path);
        return -EIO;
    }
    for (int i = 0, k = 0; i < (j->kind == URAID_JOB_REPLACE ? 1 : j->ntargets); i++) {
        if (!(P->lost >> i & 1))
            continue;
        struct array_slot *to = target_of(a, j, i);
        ops[(*nops)++] = (struct io_op){.m = to->dev, .kind = IO_WRITE, .buf = (void *)(pend + (size_t)k++ * P->batch_bytes),
                                        .len = (size_t)P->nsec * SECTOR,
                                        .offset = (to->data_offset + P->start) * SECTOR};
    }
    return 0;
}

/* A recovery's write to a new member failed: md's rule (raid5's
 * R5_WriteError, narrow_write_error) -- the failing blocks are found and
 * listed in the new member's bad-block log, and the rebuild goes on; with
 * no room to list them the member is marked faulty (FailSpare) and the job
 * ends. Returns 1 when the rebuild may go on. */
static int target_kept_write(struct uraid_array *a, struct array_job *j, const struct io_op *op)
{
    if (j->kind == URAID_JOB_REPLACE)
        return 0; /* the replacement: replacement_failed ends the copy */
    for (int i = 0; i < j->ntargets; i++) {
        int s = j->target[i];
        if (a->slot[s].dev != op->m)
            continue;
        array_write_failed(a, s, op);
        return __atomic_load_n(&a->slot[s].state, __ATOMIC_ACQUIRE) == URAID_MEMBER_REBUILDING;
    }
    return 0;
}

/* One step: [start, start + nsec) is read (and the pending batch written)
 * under the locks of both batches; nsec 0 only writes the pending batch. */
int rebuild_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec)
{
    struct rebuild_pipe *P = j->priv;
    int n = a->geom.raid_disks;
    uint32_t c = a->geom.chunk_sectors;
    size_t len = (size_t)nsec * SECTOR, plen = (size_t)P->nsec * SECTOR;
    size_t area = len > plen ? len : plen;
    uint8_t *mem = array_scratch((size_t)n * area + (size_t)c * SECTOR);
    if (!mem)
        return -ENOMEM;
    uint8_t *zero = mem + (size_t)n * area;
    memset(zero, 0, (size_t)c * SECTOR); /* DDF layouts feed zero blocks to the parity engine */
    uint64_t stripes[2 * MAX_BATCH_STRIPES_REBUILD];
    int ns = 0, npend = 0;
    if (P->have)
        for (uint64_t s = P->start / c; s * c < P->start + P->nsec; s++)
            stripes[ns++] = s;
    npend = ns;
    for (uint64_t s = start / c; nsec && s * c < start + nsec; s++)
        stripes[ns++] = s;
    uint16_t held[2 * MAX_BATCH_STRIPES_REBUILD];
    int nheld = stripe_lock_set(&a->locks, stripes, ns, held);
    int rc = 0;
    uint8_t *pend = P->buf[P->cur], *next = P->buf[P->cur ^ 1];
    if (P->have) {
        int moved = 0;
        for (int i = 0; i < npend; i++)
            moved |= stripe_gen(&a->locks, stripes[i]) != P->gen[i];
        if (moved) /* a user wrote to those stripes meanwhile */
            rc = batch_alone(a, j, P->start, P->nsec, mem, pend, P->batch_bytes, P->lost, zero);
    }
    unsigned lost = nsec ? batch_lost(a, j, start + nsec) : 0;
    int needed = nsec && lost && batch_needed(a, j, lost, start, nsec);
    struct io_op ops[2 * URAID_MAX_MEMBERS + 1];
    int who[2 * URAID_MAX_MEMBERS + 1], nops = 0;
    struct rebuild_batch rb;
    if (rc == 0 && needed) {
        batch_layout(a, j, start, nsec, mem, next, P->batch_bytes, lost, &rb);
        nops = stripe_batch_reads(a, &rb.b, rb.skip, ops, who);
    }
    int nreads = nops;
    if (rc == 0 && P->have)
        rc = add_pending_writes(a, j, P, pend, ops, &nops);
    if (rc == 0)
        array_run_ops(a, ops, nops);
    for (int i = nreads; i < nops && rc == 0; i++) {
        if (ops[i].result == 0 || target_kept_write(a, j, &ops[i]))
            continue;
        rc = ops[i].result;
        job_fail(j, "member %s: write error at sector %llu during the %s: %s", ops[i].m->path,
                 (unsigned long long)(ops[i].offset / SECTOR), uraid_job_name(j->kind), uraid_strerror(rc));
    }
    if (rc == 0 && P->have) {
        targets_passed(a, j, P->lost, P->start + P->nsec);
        P->have = 0;
    }
    if (rc == 0 && nsec && !needed) {
        targets_passed(a, j, lost, start + nsec); /* clean since the re-added members left, or nothing lost */
        rc = JOB_SKIPPED;
    } else if (rc == 0 && nsec) {
        stripe_batch_results(&rb.b, ops, who, nreads);
        rc = compute_batch(a, j, &rb, zero);
        if (rc == 0) {
            for (int i = npend; i < ns; i++)
                P->gen[i - npend] = stripe_gen(&a->locks, stripes[i]);
            P->have = 1;
            P->lost = lost;
            P->start = start;
            P->nsec = nsec;
            P->cur ^= 1;
        }
    }
    stripe_unlock_set(&a->locks, held, nheld);
    return rc;
}

/* Writes the last pending batch (at the end of a job that ran through). */
static int rebuild_drain(struct uraid_array *a, struct array_job *j)
{
    struct rebuild_pipe *P = j->priv;
    return P && P->have ? rebuild_step(a, j, 0, 0) : 0;
}

static void pipe_free(struct array_job *j)
{
    struct rebuild_pipe *P = j->priv;
    if (P) {
        free(P->buf[0]);
        free(P->buf[1]);
        free(P);
    }
    j->priv = NULL;
}

static int pipe_alloc(struct array_job *j, size_t batch_bytes, int ntargets)
{
    struct rebuild_pipe *P = calloc(1, sizeof *P);
    if (!P)
        return -ENOMEM;
    P->batch_bytes = batch_bytes;
    P->buf[0] = aligned_alloc(4096, batch_bytes * (size_t)ntargets);
    P->buf[1] = aligned_alloc(4096, batch_bytes * (size_t)ntargets);
    j->priv = P;
    if (!P->buf[0] || !P->buf[1]) {
        pipe_free(j);
        return -ENOMEM;
    }
    return 0;
}

/* ---- replace: finishing ------------------------------------------------------------- */

static int replace_finish(struct uraid_array *a, struct array_job *j, int rc)
{
    int src = j->source;
    if (rc == 0)
        rc = rebuild_drain(a, j);
    pipe_free(j);
    struct array_slot repl = a->replacement;
    if (rc == 0 && (rc = member_flush(repl.dev)) != 0)
        job_fail(j, "member %s: flush failed at the end of the replace: %s", repl.dev->path, uraid_strerror(rc));
    if (rc == 0 && !slot_ok(a, src)) {
        job_fail(j, "member in slot %d failed during the replace; rebuild onto the spare instead", src);
        rc = -EIO;
    }
    stripe_lock_all(&a->locks); /* no write may be on its way to the old member */
    pthread_mutex_lock(&a->meta_lock);
    __atomic_store_n(&a->replace_source, -1, __ATOMIC_RELEASE);
    memset(&a->replacement, 0, sizeof a->replacement);
    struct array_slot *old = &a->extra[a->nextra++];
    if (rc == 0) {
        /* the copy takes the slot; the old member is retired as faulty */
        *old = a->slot[src];
        old->state = URAID_MEMBER_FAULTY; /* extra[] is read under meta_lock only */
        if (old->sb.dev_number < a->sb.max_dev)
            a->sb.dev_roles[old->sb.dev_number] = MD_ROLE_FAULTY;
        repl.state = URAID_MEMBER_IN_SYNC;
        repl.recovered = 0;
        repl.sb.feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
        repl.sb.recovery_offset = 0;
        if (repl.sb.dev_number < a->sb.max_dev)
            a->sb.dev_roles[repl.sb.dev_number] = (uint16_t)src;
        slot_publish(a, &a->slot[src], &repl);
    } else {
        repl.state = URAID_MEMBER_SPARE;
        repl.recovered = 0;
        *old = repl;
    }
    pthread_mutex_unlock(&a->meta_lock);
    stripe_unlock_all(&a->locks);
    int wr = array_write_superblocks(a);
    if (rc == 0) {
        uraid_log(URAID_LOG_INFO, "member %s replaced %s in slot %d; %s is marked faulty and can be removed",
                  a->slot[src].dev->path, old->dev->path, src, old->dev->path);
        char detail[300];
        snprintf(detail, sizeof detail, "replaced %s in slot %d", old->dev->path, src);
        array_event(a, "SpareActive", a->slot[src].dev->path, detail);
        rc = wr;
        if (rc)
            job_fail(j, "replaced, but the superblocks could not be written: %s", uraid_strerror(rc));
    }
    return rc;
}

/* ---- set-up ---------------------------------------------------------------------------- */

/* Puts spare extra[e] into hole `slot` as a member being rebuilt from
 * sector 0. The member it replaces stays known: a failed one as faulty in
 * extra[] (and as the slot's old_dev, see array.h), a removed one only
 * until close (job_retire_member), so it is not listed again. Under
 * meta_lock and every stripe lock. */
static int take_spare(struct uraid_array *a, int slot, int e)
{
    struct array_slot *sl = &a->slot[slot];
    struct array_slot spare = a->extra[e];
    drop_extra(a, e);
    struct member *old_dev = NULL;
    uint64_t old_offset = 0;
    if (sl->dev && sl->state == URAID_MEMBER_MISSING) {
        int rc = job_retire_member(a, sl->dev);
        if (rc)
            return rc;
    } else if (sl->dev) { /* the failed member stays known (and open) as faulty */
        struct array_slot *old = &a->extra[a->nextra++];
        *old = *sl;
        old->state = URAID_MEMBER_FAULTY;
        old_dev = sl->dev;
        old_offset = sl->data_offset;
    }
    spare.recovered = 0;
    spare.state = URAID_MEMBER_REBUILDING;
    spare.sb.feature_map |= MD_FEATURE_RECOVERY_OFFSET;
    spare.sb.recovery_offset = 0;
    if (spare.sb.dev_number < a->sb.max_dev)
        a->sb.dev_roles[spare.sb.dev_number] = (uint16_t)slot;
    spare.old_dev = old_dev;
    spare.old_data_offset = old_offset;
    slot_publish(a, sl, &spare);
    return 0;
}

/* A slot needing a rebuild that no rebuild has begun on. */
static int is_hole(const struct uraid_array *a, int s)
{
    return !slot_ok(a, s) && !(a->slot[s].dev && a->slot[s].state == URAID_MEMBER_REBUILDING);
}

/* RECOVER's targets: the slot asked for, or every slot half rebuilt plus
 * every hole a spare can fill (the named spare goes to the first hole).
 * Under meta_lock and every stripe lock. */
static int recover_targets(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                           size_t whylen, int *fresh)
{
    int n = a->geom.raid_disks;
    if (p->slot >= 0 && (p->slot >= n || slot_ok(a, p->slot))) {
        uraid_why(why, whylen, "slot %d does not need a rebuild", p->slot);
        return -EINVAL;
    }
    int holes = 0, named = p->spare != NULL;
    for (int s = 0; s < n; s++) {
        if (p->slot >= 0 && s != p->slot)
            continue;
        if (a->slot[s].dev && a->slot[s].state == URAID_MEMBER_REBUILDING) {
            j->target[j->ntargets++] = s; /* resumes at its checkpoint */
            continue;
        }
        if (!is_hole(a, s))
            continue;
        holes++;
        char pwhy[256] = "";
        int e = pick_spare(a, named ? p->spare : NULL, pwhy, sizeof pwhy);
        if (e < 0) {
            if (named || j->ntargets == 0)
                uraid_why(why, whylen, "%s", pwhy);
            if (named)
                return -ENOENT;
            continue;
        }
        named = 0;
        int rc = take_spare(a, s, e);
        if (rc) {
            uraid_why(why, whylen, "out of memory");
            return rc;
        }
        j->target[j->ntargets++] = s;
        ++*fresh;
    }
    if (j->ntargets) {
        uraid_why(why, whylen, "%s", ""); /* a hole without a spare is not this job's failure */
        return 0;
    }
    if (!holes)
        uraid_why(why, whylen, "nothing to rebuild: every slot is in sync");
    return holes ? -ENOENT : -EINVAL;
}

static int replace_target(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                          size_t whylen)
{
    int slot = p->slot;
    if (slot < 0 || slot >= a->geom.raid_disks || !slot_ok(a, slot)) {
        uraid_why(why, whylen, "slot %d has no working member to replace", slot);
        return -EINVAL;
    }
    int e = pick_spare(a, p->spare, why, whylen);
    if (e < 0)
        return -ENOENT;
    struct array_slot spare = a->extra[e];
    drop_extra(a, e);
    spare.recovered = 0;
    spare.state = URAID_MEMBER_REBUILDING;
    j->source = slot;
    j->target[j->ntargets++] = slot;
    a->replacement = spare;
    a->replacement_failed = 0;
    __atomic_store_n(&a->replace_source, slot, __ATOMIC_RELEASE);
    return 0;
}

int rebuild_prepare(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                    size_t whylen)
{
    /* no request may be between its plan and its member I/O while a slot's
     * member is swapped for the spare */
    stripe_lock_all(&a->locks);
    pthread_mutex_lock(&a->meta_lock);
    int fresh = 0;
    int rc = j->kind == URAID_JOB_REPLACE ? replace_target(a, j, p, why, whylen)
                                          : recover_targets(a, j, p, why, whylen, &fresh);
    if (rc == 0) {
        j->slot = j->target[0];
        if (j->kind == URAID_JOB_RECOVER) {
            uint64_t unit = a->geom.level == 1 ? 1 : a->geom.chunk_sectors;
            j->start = j->end;
            for (int i = 0; i < j->ntargets; i++) /* the lowest checkpoint, in whole stripes */
                if (a->slot[j->target[i]].recovered / unit * unit < j->start)
                    j->start = a->slot[j->target[i]].recovered / unit * unit;
        }
        if (a->geom.level != 1 && !a->r10 && (rc = pipe_alloc(j, (size_t)job_batch_sectors(a) * SECTOR, j->ntargets)) != 0)
            uraid_why(why, whylen, "out of memory");
    }
    j->step = a->geom.level == 1 ? raid1_copy_step : a->r10 ? raid10_copy_step : rebuild_step;
    j->finish = j->kind == URAID_JOB_REPLACE ? replace_finish : rebuild_finish;
    j->checkpoint = j->kind == URAID_JOB_REPLACE ? NULL : rebuild_checkpoint;
    pthread_mutex_unlock(&a->meta_lock);
    stripe_unlock_all(&a->locks);
    if (fresh && rc == 0)
        rc = array_write_superblocks(a); /* the spares now name their slots */
    for (int i = 0; i < j->ntargets && rc == 0; i++)
        uraid_log(URAID_LOG_INFO, "%s of slot %d onto %s from sector %llu%s", uraid_job_name(j->kind), j->target[i],
                  target_of(a, j, i)->dev->path,
                  (unsigned long long)(j->kind == URAID_JOB_REPLACE ? 0 : a->slot[j->target[i]].recovered),
                  (__atomic_load_n(&a->job.readd_mask, __ATOMIC_ACQUIRE) >> j->target[i] & 1)
                      ? " (re-added: only the chunks the write-intent bitmap marks)"
                      : "");
    return rc;
}

/* The slots a running recovery does not cover that a spare could fill. */
static int recovery_missing_holes(struct uraid_array *a)
{
    struct array_job *j = &a->job;
    pthread_mutex_lock(&a->job_lock); /* the targets are set under it */
    if (!__atomic_load_n(&j->running, __ATOMIC_ACQUIRE) || j->kind != URAID_JOB_RECOVER) {
        pthread_mutex_unlock(&a->job_lock);
        return 0;
    }
    int spare = 0, uncovered = 0;
    pthread_mutex_lock(&a->meta_lock);
    for (int e = 0; e < a->nextra; e++)
        spare |= a->extra[e].dev && a->extra[e].state == URAID_MEMBER_SPARE;
    for (int s = 0; s < a->geom.raid_disks && spare; s++) {
        int covered = 0;
        for (int i = 0; i < j->ntargets; i++)
            covered |= j->target[i] == s;
        uncovered |= !covered && is_hole(a, s);
    }
    pthread_mutex_unlock(&a->meta_lock);
    pthread_mutex_unlock(&a->job_lock);
    return uncovered;
}

void array_maybe_auto_rebuild(struct uraid_array *a)
{
    if (!a->auto_rebuild || a->readonly || a->nparity == 0 || __atomic_load_n(&a->job.frozen, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&a->job.auto_disabled, __ATOMIC_ACQUIRE))
        return;
    if (!a->no_spare_rebuild && recovery_missing_holes(a)) {
        /* md restarts a recovery to take in a spare that arrived meanwhile:
         * this one stops (checkpoints kept) and the monitor starts the next */
        uraid_log(URAID_LOG_INFO, "a spare arrived during the recovery: it restarts to take it in");
        __atomic_store_n(&a->job.stop, 1, __ATOMIC_RELEASE); /* the monitor sees it end */
        return;
    }
    char why[256];
    if (__atomic_load_n(&a->rs, __ATOMIC_ACQUIRE)) {
        /* md carries on a reshape at assembly, before anything else */
        int rc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, why, sizeof why);
        if (rc && rc != -EBUSY)
            uraid_log(URAID_LOG_WARN, "the reshape in progress was not carried on: %s", why);
        return;
    }
    int hole = 0, holes = 0, spare = 0, resumable = 0;
    pthread_mutex_lock(&a->meta_lock);
    for (int s = 0; s < a->geom.raid_disks; s++) {
        hole |= !slot_ok(a, s);
        holes += !slot_ok(a, s);
        resumable |= a->slot[s].dev && a->slot[s].state == URAID_MEMBER_REBUILDING;
    }
    for (int e = 0; e < a->nextra; e++)
        spare |= a->extra[e].dev && a->extra[e].state == URAID_MEMBER_SPARE;
    int dirty = a->opened_dirty;
    pthread_mutex_unlock(&a->meta_lock);
    /* md resyncs an array that was not shut down cleanly, degraded too as
     * long as it has a redundancy left to make consistent (a RAID-6
     * missing one member); the recovery onto a spare follows when it ends */
    if (dirty && holes < a->nparity && !a->no_auto_resync) {
        int rc = uraid_job_start(a, URAID_JOB_RESYNC, NULL, why, sizeof why);
        if (rc && rc != -EBUSY)
            uraid_log(URAID_LOG_WARN, "automatic resync not started: %s", why);
        return;
    }
    if (!hole || !(spare || resumable) || a->no_spare_rebuild)
        return;
    int rc = uraid_job_start(a, URAID_JOB_RECOVER, NULL, why, sizeof why);
    if (rc && rc != -EBUSY)
        uraid_log(URAID_LOG_WARN, "automatic rebuild not started: %s", why);
}

void slot_publish(struct uraid_array *a, struct array_slot *dst, const struct array_slot *src)
{
    __atomic_add_fetch(&a->slots_gen, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&dst->state, URAID_MEMBER_MISSING, __ATOMIC_RELEASE);
    __atomic_store_n(&dst->recovered, src->recovered, __ATOMIC_RELEASE);
    __atomic_store_n(&dst->data_offset, src->data_offset, __ATOMIC_RELEASE);
    __atomic_store_n(&dst->badblocks, src->badblocks, __ATOMIC_RELEASE);
    __atomic_store_n(&dst->dev, src->dev, __ATOMIC_RELEASE);
    dst->sb = src->sb;
    dst->fault = src->fault;
    dst->old_dev = src->old_dev;
    dst->old_data_offset = src->old_data_offset;
    __atomic_store_n(&dst->state, src->state, __ATOMIC_RELEASE);
    __atomic_add_fetch(&a->slots_gen, 1, __ATOMIC_ACQ_REL);
}
