/* Rebuild and replace: background jobs (job.c) that fill one slot's member.
 *
 * Recovery: a spare takes the place of a failed or missing member and is
 * written stripe by stripe from the others. Its superblock says which slot
 * it is for and how far it got (feature RECOVERY_OFFSET, recovery_offset,
 * as md does), so a killed rebuild resumes there. Until the rebuild passes
 * a stripe the new member is treated as missing for that stripe: reads
 * rebuild it from the others and writes leave it out (the rebuild computes
 * it later). Each batch of stripes is rebuilt under the stripes' locks, and
 * the member's in-memory checkpoint moves past them before they unlock, so
 * a writer sees either "not rebuilt yet" or "in sync", never half of it.
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

/* ---- the checkpoint on disk ------------------------------------------------------ */

static int rebuild_checkpoint(struct uraid_array *a, struct array_job *j)
{
    struct array_slot *sl = &a->slot[j->slot];
    int rc = member_flush(sl->dev);
    if (rc)
        return rc;
    pthread_mutex_lock(&a->meta_lock);
    sl->sb.feature_map |= MD_FEATURE_RECOVERY_OFFSET;
    sl->sb.recovery_offset = __atomic_load_n(&sl->recovered, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&a->meta_lock);
    return array_write_superblocks(a);
}

static int rebuild_drain(struct uraid_array *a, struct array_job *j);
static void pipe_free(struct array_job *j);

static int rebuild_finish(struct uraid_array *a, struct array_job *j, int rc)
{
    struct array_slot *sl = &a->slot[j->slot];
    if (rc == 0 || rc == -ECANCELED) { /* the batch computed last is valid: keep it */
        int d = rebuild_drain(a, j);
        rc = rc ? rc : d;
    }
    pipe_free(j);
    if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != URAID_MEMBER_REBUILDING) {
        job_fail(j, "member %s failed during the rebuild of slot %d", sl->dev ? sl->dev->path : "?", j->slot);
        return rc ? rc : -EIO;
    }
    if (rc) {
        int c = rebuild_checkpoint(a, j);
        uraid_log(URAID_LOG_INFO, "member %s: rebuild of slot %d stopped at sector %llu%s", sl->dev->path, j->slot,
                  (unsigned long long)sl->recovered, c ? " (checkpoint not saved)" : "; it resumes there");
        return rc;
    }
    rc = member_flush(sl->dev);
    if (rc) {
        job_fail(j, "member %s: flush failed at the end of the rebuild: %s", sl->dev->path, uraid_strerror(rc));
        return rc;
    }
    pthread_mutex_lock(&a->meta_lock);
    sl->sb.feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
    sl->sb.recovery_offset = 0;
    __atomic_store_n(&sl->state, URAID_MEMBER_IN_SYNC, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&a->meta_lock);
    rc = array_write_superblocks(a);
    uraid_log(URAID_LOG_INFO, "member %s: slot %d rebuilt", sl->dev->path, j->slot);
    char detail[64];
    snprintf(detail, sizeof detail, "rebuilt into slot %d", j->slot);
    array_event(a, "SpareActive", sl->dev->path, detail);
    if (rc)
        job_fail(j, "slot %d rebuilt, but the superblocks could not be written: %s", j->slot, uraid_strerror(rc));
    return rc;
}

/* ---- one batch -------------------------------------------------------------------- */

/* Rebuilds stripe rows whose batch read failed somewhere: per stripe
 * (reading again only what is missing), then per 4 KiB row group when a
 * whole stripe has too many unreadable blocks (errors on different members
 * in different rows). The rows of the slot being filled end in r->block. */
static int rebuild_stripe_rows(struct uraid_array *a, struct stripe_rows *r, const unsigned char *have, int target,
                               uint8_t *zero)
{
    unsigned char failed[URAID_MAX_MEMBERS] = {0};
    int rc = rows_rebuild_any(a, r, zero, failed, have);
    if (rc == 0)
        for (int m = 0; m < a->geom.raid_disks; m++)
            if (failed[m] && m != target)
                array_correct_read_error(a, m, r->block[m], r->nrows, r->stripe * a->geom.chunk_sectors + r->row);
    return rc;
}

/* The batch rebuilt last: its write to the new member goes out together
 * with the next batch's reads, so the new member writes while the others
 * read (a rebuild runs at member speed, not half of it). Its stripes are
 * unlocked in between, so a user write may change them: their seqlock
 * counts are kept, and a batch whose count moved is computed again. */
struct rebuild_pipe {
    uint8_t *buf[2];
    int cur;                 /* buf[cur] holds the pending batch */
    int have;
    uint64_t start;
    uint32_t nsec;
    uint32_t gen[MAX_BATCH_STRIPES_REBUILD];
};

/* Appends the member reads batch [start, start + nsec) needs: every slot
 * that can serve it (replace: the source only, straight into out). */
static void add_batch_reads(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec, uint8_t *mem,
                            uint8_t *out, struct io_op *ops, int *who, int *nops)
{
    int source = j->kind == URAID_JOB_REPLACE ? j->source : -1;
    size_t len = (size_t)nsec * SECTOR;
    for (int m = 0; m < a->geom.raid_disks; m++) {
        if ((m == j->slot && source < 0) || (source >= 0 && m != source) || !slot_ok_upto(a, m, start + nsec))
            continue;
        who[*nops] = m;
        ops[(*nops)++] = array_op(a, m, IO_READ, m == source ? out : mem + (size_t)m * len, nsec, start);
    }
}

/* Fills out with the new member's rows of the batch from what was read. */
static int compute_batch(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec, uint8_t *mem,
                         uint8_t *out, const unsigned char *readok, uint8_t *zero)
{
    int n = a->geom.raid_disks, source = j->kind == URAID_JOB_REPLACE ? j->source : -1;
    int lost = source >= 0 ? source : j->slot;
    uint32_t c = a->geom.chunk_sectors;
    size_t len = (size_t)nsec * SECTOR;
    if (source >= 0 && readok[source])
        return 0; /* a replace whose source read well is a plain copy */
    uint64_t s0 = start / c, s1 = (start + nsec + c - 1) / c;
    int rc = 0;
    struct stripe_rows *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    for (uint64_t s = s0; s < s1 && rc == 0; s++) {
        memset(r, 0, sizeof *r);
        r->stripe = s;
        r->nrows = (uint32_t)((s + 1) * c <= start + nsec ? c : start + nsec - s * c);
        if ((rc = layout_stripe(&a->geom, s, &r->map)) != 0)
            break;
        size_t at = (size_t)(s - s0) * c * SECTOR;
        for (int m = 0; m < n; m++)
            r->block[m] = (m == lost ? out : mem + (size_t)m * len) + at;
        rows_mark_unavailable(a, r);
        r->unavailable[lost] = 1;
        /* members whose batch read failed are read again for this stripe only */
        unsigned char have[URAID_MAX_MEMBERS];
        for (int m = 0; m < n; m++)
            have[m] = readok[m] && m != lost;
        rc = rebuild_stripe_rows(a, r, have, lost, zero);
        if (rc == -EIO) /* md: what no member can give is listed bad on the new member */
            rc = array_rebuild_rows_unreadable(a, j, r, lost, job_target(a, j), zero);
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
                       uint8_t *out, uint8_t *zero)
{
    struct io_op ops[URAID_MAX_MEMBERS];
    int who[URAID_MAX_MEMBERS], nops = 0;
    unsigned char readok[URAID_MAX_MEMBERS] = {0};
    add_batch_reads(a, j, start, nsec, mem, out, ops, who, &nops);
    array_run_ops(a, ops, nops);
    for (int i = 0; i < nops; i++)
        readok[who[i]] = ops[i].result == 0;
    return compute_batch(a, j, start, nsec, mem, out, readok, zero);
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
            rc = batch_alone(a, j, P->start, P->nsec, mem, pend, zero);
    }
    struct io_op ops[URAID_MAX_MEMBERS + 1];
    int who[URAID_MAX_MEMBERS + 1], nops = 0;
    unsigned char readok[URAID_MAX_MEMBERS] = {0};
    if (rc == 0 && nsec)
        add_batch_reads(a, j, start, nsec, mem, next, ops, who, &nops);
    int wi = -1;
    struct array_slot *to = job_target(a, j);
    struct member *out = to->dev;
    if (rc == 0 && P->have) {
        if (j->kind == URAID_JOB_REPLACE && __atomic_load_n(&a->replacement_failed, __ATOMIC_ACQUIRE)) {
            job_fail(j, "member %s failed a write during the replace", out->path);
            rc = -EIO;
        } else {
            wi = nops;
            ops[nops++] = (struct io_op){.m = out, .kind = IO_WRITE, .buf = pend, .len = plen,
                                         .offset = (to->data_offset + P->start) * SECTOR};
        }
    }
    if (rc == 0)
        array_run_ops(a, ops, nops);
    if (rc == 0 && wi >= 0) {
        rc = ops[wi].result;
        if (rc)
            job_fail(j, "member %s: write error at sector %llu during the %s: %s", out->path,
                     (unsigned long long)(ops[wi].offset / SECTOR), uraid_job_name(j->kind), uraid_strerror(rc));
        else
            __atomic_store_n(&to->recovered, P->start + P->nsec, __ATOMIC_RELEASE);
        P->have = 0;
    }
    if (rc == 0 && nsec) {
        for (int i = 0; i < nops; i++)
            if (i != wi)
                readok[who[i]] = ops[i].result == 0;
        rc = compute_batch(a, j, start, nsec, mem, next, readok, zero);
        if (rc == 0) {
            for (int i = npend; i < ns; i++)
                P->gen[i - npend] = stripe_gen(&a->locks, stripes[i]);
            P->have = 1;
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

static int pipe_alloc(struct array_job *j, size_t batch_bytes)
{
    struct rebuild_pipe *P = calloc(1, sizeof *P);
    if (!P)
        return -ENOMEM;
    P->buf[0] = aligned_alloc(4096, batch_bytes);
    P->buf[1] = aligned_alloc(4096, batch_bytes);
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

int rebuild_prepare(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                    size_t whylen)
{
    /* no request may be between its plan and its member I/O while a slot's
     * member is swapped for the spare */
    stripe_lock_all(&a->locks);
    pthread_mutex_lock(&a->meta_lock);
    int n = a->geom.raid_disks, slot = -1, rc = 0;
    if (j->kind == URAID_JOB_REPLACE) {
        slot = p->slot;
        if (slot < 0 || slot >= n || !slot_ok(a, slot)) {
            uraid_why(why, whylen, "slot %d has no working member to replace", slot);
            rc = -EINVAL;
            goto out;
        }
    } else if (p->slot >= 0) {
        slot = p->slot < n && !slot_ok(a, p->slot) ? p->slot : -1;
        if (slot < 0) {
            uraid_why(why, whylen, "slot %d does not need a rebuild", p->slot);
            rc = -EINVAL;
            goto out;
        }
    } else {
        for (int s = 0; s < n && slot < 0; s++) /* resume an interrupted rebuild first */
            if (a->slot[s].dev && a->slot[s].state == URAID_MEMBER_REBUILDING)
                slot = s;
        for (int s = 0; s < n && slot < 0; s++)
            if (!slot_ok(a, s))
                slot = s;
        if (slot < 0) {
            uraid_why(why, whylen, "nothing to rebuild: every slot is in sync");
            rc = -EINVAL;
            goto out;
        }
    }
    j->slot = slot;
    struct array_slot *sl = &a->slot[slot];
    if (j->kind == URAID_JOB_RECOVER && sl->dev && sl->state == URAID_MEMBER_REBUILDING) {
        j->start = sl->recovered; /* the checkpoint */
    } else {
        int e = pick_spare(a, p->spare, why, whylen);
        if (e < 0) {
            rc = -ENOENT;
            goto out;
        }
        struct array_slot spare = a->extra[e];
        drop_extra(a, e);
        spare.recovered = 0;
        if (j->kind == URAID_JOB_REPLACE) {
            j->source = slot;
            spare.state = URAID_MEMBER_REBUILDING;
            a->replacement = spare;
            a->replacement_failed = 0;
            __atomic_store_n(&a->replace_source, slot, __ATOMIC_RELEASE);
        } else {
            struct member *old_dev = NULL;
            uint64_t old_offset = 0;
            if (sl->dev) { /* the failed member stays known (and open) as faulty */
                struct array_slot *old = &a->extra[a->nextra++];
                *old = *sl;
                old->state = URAID_MEMBER_FAULTY;
                old_dev = sl->dev;
                old_offset = sl->data_offset;
            }
            spare.state = URAID_MEMBER_REBUILDING;
            spare.sb.feature_map |= MD_FEATURE_RECOVERY_OFFSET;
            spare.sb.recovery_offset = 0;
            if (spare.sb.dev_number < a->sb.max_dev)
                a->sb.dev_roles[spare.sb.dev_number] = (uint16_t)slot;
            spare.old_dev = old_dev;
            spare.old_data_offset = old_offset;
            slot_publish(a, sl, &spare);
        }
    }
    if (rc == 0 && a->geom.level != 1 && (rc = pipe_alloc(j, (size_t)job_batch_sectors(a) * SECTOR)) != 0)
        uraid_why(why, whylen, "out of memory");
    j->step = a->geom.level == 1 ? raid1_copy_step : rebuild_step;
    j->finish = j->kind == URAID_JOB_REPLACE ? replace_finish : rebuild_finish;
    j->checkpoint = j->kind == URAID_JOB_REPLACE ? NULL : rebuild_checkpoint;
out:
    pthread_mutex_unlock(&a->meta_lock);
    stripe_unlock_all(&a->locks);
    if (rc == 0 && j->kind == URAID_JOB_RECOVER && j->start == 0)
        rc = array_write_superblocks(a); /* the spare now names its slot */
    if (rc == 0)
        uraid_log(URAID_LOG_INFO, "%s of slot %d onto %s from sector %llu", uraid_job_name(j->kind), slot,
                  j->kind == URAID_JOB_REPLACE ? a->replacement.dev->path : a->slot[slot].dev->path,
                  (unsigned long long)j->start);
    return rc;
}

void array_maybe_auto_rebuild(struct uraid_array *a)
{
    if (!a->auto_rebuild || a->readonly || a->nparity == 0)
        return;
    int hole = 0, spare = 0, resumable = 0;
    pthread_mutex_lock(&a->meta_lock);
    for (int s = 0; s < a->geom.raid_disks; s++) {
        hole |= !slot_ok(a, s);
        resumable |= a->slot[s].dev && a->slot[s].state == URAID_MEMBER_REBUILDING;
    }
    for (int e = 0; e < a->nextra; e++)
        spare |= a->extra[e].dev && a->extra[e].state == URAID_MEMBER_SPARE;
    int dirty = a->opened_dirty;
    pthread_mutex_unlock(&a->meta_lock);
    char why[256];
    if (!hole && dirty) { /* md resyncs an array that was not shut down cleanly */
        int rc = uraid_job_start(a, URAID_JOB_RESYNC, NULL, why, sizeof why);
        if (rc && rc != -EBUSY)
            uraid_log(URAID_LOG_WARN, "automatic resync not started: %s", why);
        return;
    }
    if (!hole || !(spare || resumable))
        return;
    int rc = uraid_job_start(a, URAID_JOB_RECOVER, NULL, why, sizeof why);
    if (rc && rc != -EBUSY)
        uraid_log(URAID_LOG_WARN, "automatic rebuild not started: %s", why);
}

/* ---- the monitor: starts jobs on behalf of the I/O path -------------------------------- */

static void *monitor_main(void *arg)
{
    struct uraid_array *a = arg;
    pthread_mutex_lock(&a->mon_mu);
    for (;;) {
        while (!a->mon_kick && !a->mon_stop)
            pthread_cond_wait(&a->mon_cv, &a->mon_mu);
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
    pthread_mutex_lock(&a->mon_mu);
    a->mon_stop = 1;
    pthread_cond_signal(&a->mon_cv);
    pthread_mutex_unlock(&a->mon_mu);
    pthread_join(a->mon, NULL);
    a->mon_started = 0;
    pthread_cond_destroy(&a->mon_cv);
    pthread_mutex_destroy(&a->mon_mu);
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
