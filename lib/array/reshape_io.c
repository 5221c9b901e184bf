/* Reads and writes of an array in mid-reshape (reshape_io.h has the rule).
 *
 * Why no request reads or writes the wrong place:
 *   - below safe every stripe was written in the new geometry and flushed
 *     before the superblocks said safe; the job only writes new stripes at
 *     or past its own position >= safe, so a new-geometry request and the
 *     job never share a stripe;
 *   - from progress on the data is still only in the old geometry, in old
 *     rows >= reshape_old_safe_row(progress); the job writes new rows that
 *     land below old row reshape_old_safe_row(safe) (reshape_geom.h), and
 *     reads old rows only after every old-geometry request overlapping the
 *     window ended (array_reshape_window), and no new one can start there
 *     (progress moved first); the old stripes its edges cut are held too
 *     until the window is written (hold_lo/hold_hi): a degraded copy
 *     rebuilds a lost chunk from a whole old stripe, whose parity a write
 *     beyond the window would change under it;
 *   - a write in the old geometry after a window was read but before its
 *     checkpoint cannot happen: the window's sectors lie below progress.
 *   - the job's read-ahead reads the next window's old rows while the
 *     current window is copied, before the next one is locked, so users
 *     may still write there. array_reshape_ahead marks their array sectors
 *     (whole old stripes) before the reads go out: an old-geometry write
 *     overlapping them that is in flight then, or starts afterwards, sets
 *     ahead_spoiled, and the job, once it holds the next window's lock
 *     (every write there ended, none can start), reads the rows again when
 *     it is set (array_reshape_ahead_kept). A write that ended before the
 *     mark wrote its members before the reads were issued (it left
 *     inflight under mu, the mark took mu after). Writes elsewhere change
 *     no data in those rows (only their own sectors and parity, which a
 *     read-ahead never reads: it is off while a member is gone). Nothing
 *     is written by it, so a kill finds what it found before.
 *   - a kill at any moment: a write below safe is in the new geometry, which
 *     a restart reads below the position on disk (>= safe); a write from
 *     progress on is in the old rows a restart's windows read again.
 * Stripe locks are per geometry: the two never cover the same stripe. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/reshape_io.h"
#include "log.h"

#define RESHAPE_BITS (MD_FEATURE_RESHAPE_ACTIVE | MD_FEATURE_NEW_OFFSET | MD_FEATURE_RESHAPE_BACKWARDS)

const uint8_t array_reshape_zeroes[1];

static int piece(struct uraid_array *t, void *rbuf, const uint8_t *wbuf, uint64_t s, uint64_t n)
{
    size_t len = (size_t)n * SECTOR;
    if (rbuf)
        return array_read_plain(t, rbuf, len, s * SECTOR);
    return array_write_plain(t, wbuf == array_reshape_zeroes ? NULL : wbuf, len, s * SECTOR);
}

static void unlink_req(struct array_reshape *rs, struct rs_req *r)
{
    for (struct rs_req **pp = &rs->inflight; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
}

int array_reshape_request(struct uraid_array *a, void *rbuf, const uint8_t *wbuf, size_t len, uint64_t offset)
{
    struct array_reshape *rs = a->rs;
    int rc = array_range_ok(a, len, offset);
    if (rc || len == 0)
        return rc;
    if (!rbuf && a->readonly)
        return -EROFS;
    /* the dirty mark goes to every member (the parent's superblocks) first */
    if (!rbuf && (rc = array_mark_dirty(a)) != 0)
        return rc;
    uint64_t s = offset / SECTOR, e = s + len / SECTOR;
    uint8_t *rp = rbuf;
    const uint8_t *wp = wbuf;
    while (s < e && rc == 0) {
        struct rs_req me = {0};
        struct uraid_array *t;
        uint64_t n;
        pthread_mutex_lock(&rs->mu);
        for (;;) {
            /* backwards the new geometry is above: from safe up; the old below progress (<= safe) */
            int back = rs->g.backwards;
            if (back ? s >= rs->safe : s < rs->safe) {
                t = a;
                n = (back || e < rs->safe ? e : rs->safe) - s;
                break;
            }
            if (back ? s < rs->progress : s >= rs->progress) {
                t = rs->old;
                n = (back && e > rs->progress ? rs->progress : e) - s;
                /* a write to an old stripe the job's window reads waits for it (a read changes nothing) */
                if (!rbuf && s < rs->hold_hi && rs->hold_lo < s + n) {
                    pthread_cond_wait(&rs->cv, &rs->mu);
                    continue;
                }
                me = (struct rs_req){.s = s, .e = s + n, .write = !rbuf, .next = rs->inflight};
                rs->inflight = &me;
                if (!rbuf && s < rs->ahead_hi && rs->ahead_lo < s + n)
                    rs->ahead_spoiled = 1; /* the job's read-ahead may miss it: read again (reshape_job.c) */
                break;
            }
            rs->want_ckpt = 1; /* md's make_request retries until reshape_safe has passed it */
            pthread_cond_wait(&rs->cv, &rs->mu);
        }
        pthread_mutex_unlock(&rs->mu);
        if (t != a)
            __atomic_add_fetch(&a->user_requests, 1, __ATOMIC_RELAXED); /* the job yields to users */
        rc = piece(t, rp, wbuf == array_reshape_zeroes ? wbuf : wp, s, n);
        if (t != a) {
            pthread_mutex_lock(&rs->mu);
            unlink_req(rs, &me);
            pthread_cond_broadcast(&rs->cv);
            pthread_mutex_unlock(&rs->mu);
        }
        s += n;
        if (rp)
            rp += n * SECTOR;
        if (wp && wbuf != array_reshape_zeroes)
            wp += n * SECTOR;
    }
    return rc;
}

/* An old-geometry request (only writes when writes_only) in flight overlaps [s, e). */
static int overlaps(const struct array_reshape *rs, uint64_t s, uint64_t e, int writes_only)
{
    for (const struct rs_req *r = rs->inflight; r; r = r->next)
        if (r->s < e && s < r->e && (r->write || !writes_only))
            return 1;
    return 0;
}

/* The array sectors of the old stripes that hold [pos, end): the old rows
 * the copy reads are whole old stripes (reshape_copy.c's window_rows). */
static void old_stripes(const struct array_reshape *rs, uint64_t pos, uint64_t end, uint64_t *lo, uint64_t *hi)
{
    uint64_t osd = (uint64_t)rs->g.from_k * rs->g.unit;
    *lo = pos / osd * osd;
    *hi = (end + osd - 1) / osd * osd;
}

void array_reshape_ahead(struct uraid_array *a, uint64_t pos, uint64_t end)
{
    struct array_reshape *rs = a->rs;
    uint64_t lo, hi;
    old_stripes(rs, pos, end, &lo, &hi);
    pthread_mutex_lock(&rs->mu);
    rs->ahead_lo = lo;
    rs->ahead_hi = hi;
    /* a write in flight may reach the members after the reads: as if it came later */
    rs->ahead_spoiled = overlaps(rs, lo, hi, 1);
    pthread_mutex_unlock(&rs->mu);
}

int array_reshape_ahead_kept(struct uraid_array *a)
{
    struct array_reshape *rs = a->rs;
    pthread_mutex_lock(&rs->mu);
    int kept = !rs->ahead_spoiled;
    rs->ahead_lo = rs->ahead_hi = 0;
    rs->ahead_spoiled = 0;
    pthread_mutex_unlock(&rs->mu);
    return kept;
}

void array_reshape_window(struct uraid_array *a, uint64_t pos, uint64_t end)
{
    struct array_reshape *rs = a->rs;
    uint64_t lo, hi;
    old_stripes(rs, pos, end, &lo, &hi);
    pthread_mutex_lock(&rs->mu);
    if (rs->g.backwards ? pos < rs->progress : end > rs->progress)
        rs->progress = rs->g.backwards ? pos : end;
    rs->hold_lo = lo; /* no new old-geometry request there from now on */
    rs->hold_hi = hi;
    while (overlaps(rs, lo, hi, 0))
        pthread_cond_wait(&rs->cv, &rs->mu);
    pthread_mutex_unlock(&rs->mu);
}

void array_reshape_window_end(struct uraid_array *a)
{
    struct array_reshape *rs = a->rs;
    pthread_mutex_lock(&rs->mu);
    rs->hold_lo = rs->hold_hi = 0;
    pthread_cond_broadcast(&rs->cv);
    pthread_mutex_unlock(&rs->mu);
}

void array_reshape_safe(struct uraid_array *a, uint64_t pos)
{
    struct array_reshape *rs = a->rs;
    pthread_mutex_lock(&rs->mu);
    rs->safe = pos;
    if (rs->g.backwards ? rs->progress > pos : rs->progress < pos)
        rs->progress = pos;
    pthread_cond_broadcast(&rs->cv);
    pthread_mutex_unlock(&rs->mu);
}

void array_reshape_idle(struct uraid_array *a)
{
    struct array_reshape *rs = a->rs;
    if (!rs)
        return;
    pthread_mutex_lock(&rs->mu);
    rs->progress = rs->safe;
    pthread_cond_broadcast(&rs->cv);
    pthread_mutex_unlock(&rs->mu);
}

int array_reshape_wanted(struct uraid_array *a)
{
    struct array_reshape *rs = a->rs;
    pthread_mutex_lock(&rs->mu);
    int w = rs->want_ckpt;
    rs->want_ckpt = 0;
    pthread_mutex_unlock(&rs->mu);
    return w;
}

void array_reshape_member_failed(struct uraid_array *a, int m)
{
    struct array_reshape *rs = a->rs;
    if (rs && m >= 0 && m < rs->old->geom.raid_disks)
        __atomic_store_n(&rs->old->slot[m].state, URAID_MEMBER_FAULTY, __ATOMIC_RELEASE);
}

/* ---- the two geometries -------------------------------------------------------- */

int array_reshape_new(struct uraid_array *a, const struct reshape_geom *g, uint64_t old_off, uint64_t pos,
                      struct array_reshape **out)
{
    struct array_reshape *rs = calloc(1, sizeof *rs);
    struct uraid_array *o = calloc(1, sizeof *o);
    uint64_t old_stripes = a->member_sectors / g->from.chunk_sectors;
    uint64_t *dw = calloc((size_t)(old_stripes / 64 + 1), sizeof *dw);
    if (!rs || !o || !dw) {
        free(rs);
        free(o);
        free(dw);
        return -ENOMEM;
    }
    rs->g = *g;
    rs->old_off = old_off;
    rs->q_recovering = -1;
    rs->safe = rs->progress = pos;
    pthread_mutex_init(&rs->mu, NULL);
    pthread_cond_init(&rs->cv, NULL);
    o->geom = g->from;
    o->k = g->from_k;
    o->nparity = layout_parity_count(&g->from);
    o->member_sectors = a->member_sectors;
    o->size_sectors = reshape_from_sectors(g);
    o->readonly = a->readonly;
    o->dirty = 1;      /* the parent marks the members dirty before any write reaches this one */
    o->sb_written = 1;
    o->sb = a->sb;
    o->parent = a;
    o->io = a->io;     /* shared: the parent destroys it */
    o->replace_source = -1;
    o->nstripes = old_stripes;
    o->degraded_written = dw;
    for (int s = 0; s < g->from.raid_disks; s++) {
        o->slot[s] = a->slot[s];
        o->slot[s].data_offset = old_off;
        o->slot[s].old_dev = NULL;
    }
    pthread_mutex_init(&o->meta_lock, NULL);
    pthread_rwlock_init(&o->geom_lock, NULL);
    stripe_locks_init(&o->locks);
    array_job_init(o);
    rs->old = o;
    *out = rs;
    return 0;
}

void array_reshape_free(struct array_reshape *rs)
{
    if (!rs)
        return;
    struct uraid_array *o = rs->old;
    if (o) {
        stripe_pool_stop(o->pool);
        stripe_locks_destroy(&o->locks);
        array_job_fini(o);
        pthread_rwlock_destroy(&o->geom_lock);
        pthread_mutex_destroy(&o->meta_lock);
        free(o->degraded_written);
        free(o); /* its members, engine and bad-block lists are the parent's */
    }
    pthread_cond_destroy(&rs->cv);
    pthread_mutex_destroy(&rs->mu);
    free(rs);
}

/* md's record of a reshape this engine can serve: a forwards restripe of
 * RAID-4/5/6 to as many members or more (chunk and layout may change) with
 * a data offset change (what uraid grow and mdadm 3.3+ write), no log (a
 * write-intent bitmap is kept: its bits index member sectors in either
 * geometry, wibitmap.c); members may be missing as far as both geometries
 * bear it. */
static int reshape_supported(const struct uraid_array *a, char *why, size_t whylen)
{
    const struct md_sb *R = &a->sb;
    if (R->level < 4 || R->level > 6 || R->new_level != (uint32_t)R->level)
        return uraid_why(why, whylen, "a reshape of level %d to %u members (new level %u, delta %d) is in progress: "
                         "uraid serves only restripes of RAID-4/5/6 within the level; finish it with mdadm",
                         R->level, R->raid_disks, R->new_level, R->delta_disks), -EOPNOTSUPP;
    if (!(R->feature_map & MD_FEATURE_NEW_OFFSET) || R->new_offset == 0 ||
        (R->new_offset > 0) != reshape_sb_backwards(R))
        return uraid_why(why, whylen, "the reshape in progress uses a backup file (no data offset change): not "
                         "supported yet; carry it on with mdadm --grow --continue"), -EOPNOTSUPP;
    if (md_sb_has_ppl(R))
        return uraid_why(why, whylen, "a reshape is in progress on an array with a partial parity log: md never "
                         "writes one, so these members are damaged; carry it on with mdadm"), -EOPNOTSUPP;
    return 0;
}

/* Slot s recovers with the reshape: md's reshape_request moves its
 * recovery_offset with the position (reshape_q_recovered). RAID-5 -> 6's
 * restripe: the new Q member, the -6 layout's last slot; a RAID-0's grow
 * (reshape_raid0.c): the first new member, in the RAID-4's parity slot. */
static int q_recovery_follows(const struct reshape_geom *g, int s, uint64_t pos, uint64_t recovered)
{
    int q6 = g->from.level == 6 && g->from.layout >= LAYOUT_LEFT_ASYMMETRIC_6 && s == g->from.raid_disks - 1 &&
             g->to.raid_disks == g->from.raid_disks;
    int p4 = g->from.level == 4 && g->to.level == 4 && s == g->from.raid_disks - 1 &&
             g->to.raid_disks > g->from.raid_disks;
    /* behind the position: a power cut dropped the member's last superblock write while the others' landed;
     * its rows up to the position were flushed before any superblock recorded it (reshape_job.c's checkpoint) */
    return (q6 || p4) && recovered <= reshape_q_recovered(g, pos);
}

int array_reshape_open(struct uraid_array *a, int missing, char *why, size_t whylen)
{
    const struct md_sb *R = &a->sb;
    for (int s = 0; s < a->geom.raid_disks; s++) {
        const struct array_slot *sl = &a->slot[s];
        if (sl->dev && (sl->sb.feature_map ^ R->feature_map) & MD_FEATURE_RESHAPE_ACTIVE)
            return uraid_why(why, whylen, "member %s: its superblock %s a reshape (feature RESHAPE_ACTIVE) but the "
                             "array's newest %s: carry it on with 'uraid grow --continue' first", sl->dev->path,
                             sl->sb.feature_map & MD_FEATURE_RESHAPE_ACTIVE ? "records" : "does not record",
                             R->feature_map & MD_FEATURE_RESHAPE_ACTIVE ? "does" : "does not"), -EOPNOTSUPP;
    }
    if (!(R->feature_map & MD_FEATURE_RESHAPE_ACTIVE))
        return 0;
    int rc = reshape_supported(a, why, whylen);
    if (rc)
        return rc;
    struct layout_geom from = a->geom;
    from.raid_disks = (int)R->raid_disks - R->delta_disks;
    from.layout = (int)R->layout;
    from.chunk_sectors = R->chunksize;
    int back = reshape_sb_backwards(R), first = 0;
    while (first < array_nslots(a) - 1 && !a->slot[first].dev)
        first++;
    uint64_t shift = reshape_sb_shift(R), old_off = a->slot[first].sb.data_offset;
    struct reshape_geom g;
    char gwhy[200];
    if (reshape_geom_init_dir(&g, &from, &a->geom, a->member_sectors, shift, back, gwhy, sizeof gwhy) ||
        reshape_position_ok(&g, R->reshape_position, gwhy, sizeof gwhy))
        return uraid_why(why, whylen, "the reshape on the members: %s", gwhy), -EINVAL;
    int gone_old = 0, gone_new = 0, q_slot = -1;
    for (int s = 0; s < array_nslots(a); s++) {
        int out = a->slot[s].state != URAID_MEMBER_IN_SYNC;
        if (a->slot[s].dev && a->slot[s].state == URAID_MEMBER_REBUILDING) {
            if (q_slot >= 0 || !q_recovery_follows(&g, s, R->reshape_position, a->slot[s].recovered))
                return uraid_why(why, whylen, "a reshape is in progress and member %s is being recovered (a recovery "
                                 "stopped partway, not a member recovering with the reshape position: RAID-5 -> "
                                 "6's new Q member, a RAID-0 grow's first new member): not served; carry the reshape "
                                 "on with 'uraid grow --continue'",
                                 a->slot[s].dev->path), -EOPNOTSUPP;
            q_slot = s;
            uint64_t upto = reshape_q_recovered(&g, R->reshape_position);
            a->slot[s].sb.recovery_offset = upto; /* (see q_recovery_follows) */
            __atomic_store_n(&a->slot[s].recovered, upto, __ATOMIC_RELEASE);
            gone_old++; /* the old geometry's Q: not written yet */
            continue;
        }
        gone_old += out && s < g.from.raid_disks;
        gone_new += out && s < g.to.raid_disks;
    }
    /* md's raid5_run takes a reshape degraded as far as both geometries bear it */
    if (gone_old > layout_parity_count(&g.from) || gone_new > layout_parity_count(&g.to))
        return uraid_why(why, whylen, "a reshape is in progress and %d member%s missing: RAID-%d cannot read the %s "
                         "geometry without %s; give the missing members", missing, missing == 1 ? " is" : "s are",
                         R->level, gone_old > layout_parity_count(&g.from) ? "old" : "new",
                         missing == 1 ? "it" : "them"), -EOPNOTSUPP;
    for (int s = 0; s < array_nslots(a); s++)
        if (a->slot[s].dev &&
            (a->slot[s].sb.data_offset != old_off || !(a->slot[s].sb.feature_map & MD_FEATURE_RESHAPE_ACTIVE)))
            return uraid_why(why, whylen, "member %s is not at the reshape's point (data offset %llu, the others' "
                             "%llu): carry the reshape on with 'uraid grow --continue' first", a->slot[s].dev->path,
                             (unsigned long long)a->slot[s].sb.data_offset, (unsigned long long)old_off), -EINVAL;
    struct array_reshape *rs = NULL;
    if ((rc = array_reshape_new(a, &g, old_off, R->reshape_position, &rs)) != 0)
        return uraid_why(why, whylen, "out of memory"), rc;
    if (q_slot >= 0) { /* the old geometry reads and writes without it (its P is current) */
        rs->q_recovering = q_slot;
        rs->old->slot[q_slot].dev = NULL;
        rs->old->slot[q_slot].state = URAID_MEMBER_MISSING;
        missing++;
        /* a RAID-0's grow (its first new member in the old parity slot, the new parity slot empty): taken
         * back to RAID-0 at the end, as mdadm's grow of a running RAID-0 does (grow_raid0_online.c) */
        rs->then_raid0 = g.from.level == 4 && !a->slot[g.to.raid_disks - 1].dev;
    }
    if (missing) /* as open does for the new geometry: the members left out missed writes */
        memset(rs->old->degraded_written, 0xff, (size_t)(rs->old->nstripes / 64 + 1) * sizeof(uint64_t));
    __atomic_store_n(&a->rs, rs, __ATOMIC_RELEASE); /* (a served grow: job.c and the monitor read it) */
    for (int s = 0; s < a->geom.raid_disks; s++)
        a->slot[s].data_offset = reshape_new_off(&g, old_off);
    /* md's raid5_size with the smaller stripe: a grow's array grows at its end, a shrink's was cut first */
    __atomic_store_n(&a->size_sectors, back ? reshape_to_sectors(&g) : reshape_from_sectors(&g), __ATOMIC_RELEASE);
    uraid_log(URAID_LOG_INFO, "a reshape from %d to %d members (chunk %u to %u sectors) is in progress at array "
              "sector %llu: requests %s it use the new geometry, the others the old", g.from.raid_disks,
              g.to.raid_disks, g.from.chunk_sectors, g.to.chunk_sectors,
              (unsigned long long)R->reshape_position, back ? "from" : "below");
    return 0;
}
