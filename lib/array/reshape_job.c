/* The reshape as a background job of a served array (job.c's table), and
 * uraid_grow_online, which starts one.
 *
 * The job walks the new geometry's member rows like a rebuild; each step
 * moves the new stripes of its rows in windows (reshape_copy.c), taking
 * each window from the requests first (array_reshape_window), reading the
 * next window's old rows ahead while one is written, as the offline copy
 * does (kept only when no user wrote them meanwhile), and records
 * the position as the offline grow does (reshape_next's rule, every second,
 * and at once when a request waits for a window already moved): every
 * member flushed, then every superblock with the new reshape_position, then
 * the requests below it go to the new geometry. A stop (uraid stop, close,
 * 'idle') records the position reached; the next open carries on from it
 * (the monitor starts the job again, as md continues a reshape at
 * assembly). The end: the last position (the whole array) on disk, then
 * md's end of a reshape in every superblock (reshape.c's table), then the
 * array grows to its new size. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/reshape.h"
#include "array/reshape_io.h"
#include "log.h"

struct rs_job {
    struct grow gr;        /* the members by slot, the geometry, pos and ckpt */
    struct grow_bufs b;
    char why[256];         /* what stopped it (job_fail gets it) */
    uint64_t ahead, dropped; /* windows read ahead; of them read again after a user write (logged) */
};

/* A member the array marked faulty (a request failed on it, or the job
 * did: rs_lost) is gone for the job too, from its next window on. */
static void all_degraded(uint64_t *dw, uint64_t nstripes)
{
    for (uint64_t w = 0; dw && w < nstripes / 64 + 1; w++)
        __atomic_store_n(&dw[w], ~0ull, __ATOMIC_RELEASE);
}

static void rs_sync_gone(struct uraid_array *a, struct grow *gr)
{
    int q = a->rs ? a->rs->q_recovering : -1; /* the new Q member: written as the reshape goes */
    for (int s = 0; s < gr->nslots; s++)
        if (!slot_ok(a, s) && !gr->gone[s] && !(s == q && a->slot[s].state == URAID_MEMBER_REBUILDING)) {
            gr->gone[s] = 1;
            /* the job moves every stripe without it: no chunk left on it is current (rows.c's last
             * resort must not read one back), in either geometry */
            all_degraded(a->degraded_written, a->nstripes);
            if (a->rs)
                all_degraded(a->rs->old->degraded_written, a->rs->old->nstripes);
        }
}

/* grow_lose's hook: the array marks the member faulty (its superblocks
 * say so, the old geometry stops using it) or refuses: no redundancy left. */
static int rs_lost(void *ctx, int slot, int err)
{
    struct uraid_array *a = ctx;
    int rc = array_member_failed(a, slot, err, "reshaping");
    return rc == 0 && !slot_ok(a, slot) ? 0 : rc ? rc : -EIO;
}

/* The array's own bad-block list of slot s, in absolute member sectors. */
static int rs_bad(void *ctx, int slot, uint64_t sector, uint64_t len)
{
    struct uraid_array *a = ctx;
    const struct md_bblist *l = __atomic_load_n(&a->slot[slot].badblocks, __ATOMIC_ACQUIRE);
    return l && l->count && md_bb_check(l, sector, len, NULL, NULL);
}

/* Every member left flushed (one failing is lost), then the position in
 * every superblock; then it is safe. */
static int rs_flush(struct uraid_array *a, struct grow *gr)
{
    rs_sync_gone(a, gr);
    for (int s = 0; s < gr->nslots; s++) {
        int rc = grow_dev(gr, s) ? member_flush(grow_dev(gr, s)) : 0;
        if (rc && grow_lose(gr, s, rc, "flushing"))
            return uraid_why(gr->why, gr->whylen, "member %s: flush failed: %s (the reshape stopped at array "
                             "sector %llu)", a->slot[s].dev->path, uraid_strerror(rc), (unsigned long long)gr->pos), rc;
    }
    return 0;
}

static int rs_checkpoint(struct uraid_array *a, struct rs_job *st)
{
    struct grow *gr = &st->gr;
    int frc = rs_flush(a, gr);
    if (frc)
        return frc;
    pthread_mutex_lock(&a->meta_lock);
    a->sb.reshape_position = gr->pos;
    int q = a->rs->q_recovering;
    if (q >= 0) { /* the new Q member is in sync below the new rows written (md's reshape_request) */
        uint64_t done = reshape_q_recovered(&gr->g, gr->pos);
        a->slot[q].sb.recovery_offset = done;
        __atomic_store_n(&a->slot[q].recovered, done, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&a->meta_lock);
    int rc = array_write_superblocks(a);
    if (rc)
        return uraid_why(gr->why, gr->whylen, "cannot record the reshape position %llu: %s",
                         (unsigned long long)gr->pos, uraid_strerror(rc)), rc;
    gr->ckpt = gr->pos;
    array_reshape_safe(a, gr->pos);
    return 0;
}

/* grow's read-ahead hook: the array watches the rows for user writes. */
static void rs_ahead(void *ctx, uint64_t lo, uint64_t hi)
{
    array_reshape_ahead(ctx, lo, hi);
}

/* With the next window locked: the old rows read ahead during the last one
 * (reshape_copy.c) were not locked then, and a user write that reached them
 * since may be missing from them, so they are dropped and read again under
 * the lock (reshape_io.c's file comment says why that is enough). */
static void rs_ahead_check(struct uraid_array *a, struct rs_job *st)
{
    int had = st->b.ahead_r1 > st->b.ahead_r0;
    st->ahead += had;
    if (!array_reshape_ahead_kept(a) && had) { /* _kept ends the watch either way */
        st->b.ahead_r0 = st->b.ahead_r1 = 0;
        st->dropped++;
    }
}

/* Moves the new stripes of member rows [start, start + nsec). */
static int rs_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec)
{
    struct rs_job *st = j->priv;
    struct grow *gr = &st->gr;
    uint64_t sd = reshape_stripe_data(&gr->g), c = gr->g.unit;
    int back = gr->g.backwards;
    /* backwards the job's rows count from the top: row r is unit stripes - 1 - r / unit */
    uint64_t done = (start + nsec) / c * sd, target = back ? reshape_begin(&gr->g) - done : done;
    int rc = 0;
    while (rc == 0 && (back ? gr->pos > target : gr->pos < target)) {
        uint64_t left = (back ? gr->pos - target : target - gr->pos) / sd, w = 0;
        enum reshape_move mv = reshape_next(&gr->g, gr->pos, gr->ckpt, left < st->b.max_stripes ? left : st->b.max_stripes, &w);
        if (mv == RESHAPE_DONE)
            break;
        if (mv == RESHAPE_CHECKPOINT) {
            rc = gr->pos != gr->ckpt ? rs_checkpoint(a, st) : -EINVAL;
            continue;
        }
        uint64_t lo = back ? gr->pos - w * sd : gr->pos;
        array_reshape_window(a, lo, lo + w * sd);
        rs_sync_gone(a, gr); /* the window's requests ended: a member they failed is out of it */
        rs_ahead_check(a, st);
        rc = grow_copy_window(gr, &st->b, lo, w);
        array_reshape_window_end(a);
        if (rc == 0)
            gr->pos = back ? lo : gr->pos + w * sd;
        if (rc == 0 && array_reshape_wanted(a))
            rc = rs_checkpoint(a, st); /* a request waits for these stripes */
    }
    if (rc)
        job_fail(j, "%s", gr->why[0] ? gr->why : uraid_strerror(rc));
    return rc;
}

static int rs_periodic(struct uraid_array *a, struct array_job *j)
{
    struct rs_job *st = j->priv;
    return st->gr.pos != st->gr.ckpt ? rs_checkpoint(a, st) : 0;
}

/* A RAID-0's grow (rs->then_raid0), its reshape's end written: the RAID-4
 * missing its parity taken back to RAID-0 in a write of its own, as the
 * offline grow does (a kill between the two leaves what it takes back).
 * Caller holds geom_lock for writing. */
static int raid0_back(struct uraid_array *a, struct grow *gr)
{
    pthread_mutex_lock(&a->meta_lock);
    int rc = array_raid0_back_locked(a, gr->why, gr->whylen);
    pthread_mutex_unlock(&a->meta_lock);
    if (rc == 0 && (rc = array_write_superblocks(a)) != 0)
        uraid_why(gr->why, gr->whylen, "the reshape is complete but the takeover back to RAID-0 could not be "
                  "recorded: %s ('uraid grow --level 0' with the members takes it back)", uraid_strerror(rc));
    return rc;
}

/* md's end of a reshape: every member's superblock with the new data
 * offset and no reshape; then the array has its new size. */
static int rs_end(struct uraid_array *a, struct rs_job *st)
{
    struct grow *gr = &st->gr;
    int nslots = array_nslots(a), frc = rs_flush(a, gr);
    if (frc)
        return frc;
    pthread_rwlock_wrlock(&a->geom_lock); /* no request may look at rs while it goes */
    pthread_mutex_lock(&a->meta_lock);
    a->sb.feature_map &= ~(uint32_t)(MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET | MD_FEATURE_RESHAPE_BACKWARDS);
    a->sb.level = (int)a->sb.new_level; /* a chunk or layout change: the new one from now on */
    a->sb.layout = a->sb.new_layout;
    a->sb.chunksize = a->sb.new_chunk;
    a->sb.reshape_position = 0;
    a->sb.delta_disks = 0;
    a->sb.new_offset = 0;
    int q = a->rs->q_recovering;
    if (q >= 0) { /* every new stripe was written whole, Q too */
        a->slot[q].sb.feature_map &= ~MD_FEATURE_RECOVERY_OFFSET;
        a->slot[q].sb.recovery_offset = 0;
        __atomic_store_n(&a->slot[q].state, URAID_MEMBER_IN_SYNC, __ATOMIC_RELEASE);
    }
    for (int s = 0; s < nslots; s++) {
        struct array_slot *sl = &a->slot[s];
        sl->sb.data_offset = reshape_new_off(&gr->g, gr->old_off);
        sl->sb.data_size = gr->g.backwards ? sl->sb.data_size - gr->g.shift : sl->sb.data_size + gr->g.shift;
        if (s < a->geom.raid_disks)
            continue;
        /* a shrink's leaving member: a spare now, as md's raid5_finish_reshape leaves it */
        if (sl->sb.dev_number < MD_SB_MAX_DEV)
            a->sb.dev_roles[sl->sb.dev_number] = MD_ROLE_SPARE;
        sl->data_offset = sl->sb.data_offset;
        sl->state = URAID_MEMBER_SPARE;
        a->extra[a->nextra++] = *sl;
        memset(sl, 0, sizeof *sl);
        sl->state = URAID_MEMBER_MISSING;
    }
    int then = a->rs->then_level, to0 = a->rs->then_raid0;
    if (then) { /* a level change's last step, md's takeover after the restripe (mdadm's order): one write */
        struct layout_geom t = a->geom;
        t.level = then;
        t.raid_disks -= then == 5; /* RAID-6 in a -6 layout: Q, the last member, becomes a spare */
        t.layout = then == 5 ? layout_from_6(t.layout) : 0;
        array_takeover_locked(a, &t);
    }
    pthread_mutex_unlock(&a->meta_lock);
    int rc = array_write_superblocks(a);
    if (rc)
        uraid_why(gr->why, gr->whylen, "the reshape is complete but its end could not be recorded: %s",
                  uraid_strerror(rc));
    struct array_reshape *rs = a->rs;
    __atomic_store_n(&a->rs, NULL, __ATOMIC_RELEASE); /* job.c and the monitor read it without geom_lock */
    __atomic_store_n(&a->size_sectors, reshape_to_sectors(&gr->g), __ATOMIC_RELEASE);
    if (rc == 0 && to0) /* a RAID-0's grow: md's raid0_takeover_raid45 after the end, as the offline grow */
        rc = raid0_back(a, gr);
    pthread_rwlock_unlock(&a->geom_lock);
    array_reshape_free(rs);
    if (rc == 0 && (then || to0))
        uraid_log(URAID_LOG_INFO, "reshape complete, then taken over as RAID-%d (%d members)", to0 ? 0 : then,
                  a->geom.raid_disks);
    else if (rc == 0)
        uraid_log(URAID_LOG_INFO, "reshape complete: %d members, array size %llu KiB (was %llu KiB); clients see the "
                  "new size when they connect again", gr->g.to.raid_disks,
                  (unsigned long long)(reshape_to_sectors(&gr->g) / 2),
                  (unsigned long long)(reshape_from_sectors(&gr->g) / 2));
    return rc;
}

static int rs_finish(struct uraid_array *a, struct array_job *j, int rc)
{
    struct rs_job *st = j->priv;
    struct grow *gr = &st->gr;
    if (rc == 0 && gr->pos != reshape_end(&gr->g))
        rc = -EIO; /* the walk ended before the last stripe: cannot happen */
    if (rc == 0 && gr->pos != gr->ckpt)
        rc = rs_checkpoint(a, st);
    if (rc == 0)
        rc = rs_end(a, st);
    else if (gr->pos != gr->ckpt && rs_checkpoint(a, st) == 0)
        uraid_log(URAID_LOG_INFO, "reshape position %llu recorded", (unsigned long long)gr->pos);
    if (rc)
        array_reshape_idle(a); /* requests waiting between safe and progress go on in the old geometry */
    if (rc && rc != -ECANCELED && gr->why[0])
        job_fail(j, "%s", gr->why);
    uraid_log(URAID_LOG_DEBUG, "reshape: %llu windows read ahead, %llu of them read again after user writes",
              (unsigned long long)st->ahead, (unsigned long long)st->dropped);
    grow_bufs_free(&st->b);
    free(st);
    j->priv = NULL;
    if (rc == 0)
        array_kick_monitor(a); /* a resync the array still owes runs now */
    return rc;
}

int reshape_prepare(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                    size_t whylen)
{
    (void)p;
    struct array_reshape *rs = a->rs;
    if (!rs)
        return uraid_why(why, whylen, "no reshape is in progress: start one with 'uraid grow --control PATH "
                         "--raid-devices N --add NEW...'"), -EINVAL;
    /* md's reshape goes on degraded: a missing or faulty member is left out, a rebuilding one is not
     * (but a RAID-5 -> 6 restripe's new Q member is written as the reshape goes) */
    for (int s = 0; s < array_nslots(a); s++)
        if (a->slot[s].dev && a->slot[s].state == URAID_MEMBER_REBUILDING && s != rs->q_recovering)
            return uraid_why(why, whylen, "slot %d is being rebuilt: the reshape goes on after its recovery", s),
                   -EBUSY;
    struct rs_job *st = calloc(1, sizeof *st);
    if (!st)
        return uraid_why(why, whylen, "out of memory"), -ENOMEM;
    struct grow *gr = &st->gr;
    gr->g = rs->g;
    gr->old_off = rs->old_off;
    pthread_mutex_lock(&rs->mu);
    gr->pos = gr->ckpt = rs->safe;
    pthread_mutex_unlock(&rs->mu);
    gr->n = gr->nslots = array_nslots(a);
    for (int s = 0; s < gr->n; s++) {
        gr->dev[s] = a->slot[s].dev;
        gr->name[s] = a->slot[s].dev ? a->slot[s].dev->path : "(missing)";
        gr->at[s] = s;
        gr->recovering[s] = s == rs->q_recovering; /* a member lost now stops the job (reshape_fail.c) */
    }
    gr->lost = rs_lost;
    gr->bad = rs_bad;
    gr->lost_ctx = a;
    gr->ahead = rs_ahead;
    gr->ahead_ctx = a;
    rs_sync_gone(a, gr);
    gr->why = st->why;
    gr->whylen = sizeof st->why;
    int rc = grow_bufs_alloc(&gr->g, &st->b, 1);
    if (rc) {
        grow_bufs_free(&st->b);
        free(st);
        return uraid_why(why, whylen, "cannot set up the reshape's buffers: %s", uraid_strerror(rc)), rc;
    }
    uint64_t c = gr->g.unit;
    j->priv = st;
    j->step = rs_step;
    j->finish = rs_finish;
    j->checkpoint = rs_periodic;
    j->start = (gr->g.backwards ? reshape_begin(&gr->g) - gr->pos : gr->pos) / reshape_stripe_data(&gr->g) * c;
    j->end = reshape_stripes(&gr->g) * c;
    return 0;
}
