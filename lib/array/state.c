/* Run-time member state: failures, corrected reads, counters, range checks.
 *
 * Member state machine (per slot):
 *   IN_SYNC --write/flush error or vanished, redundancy left--> FAULTY
 *            (dev_roles = 0xfffe and events + 1 in the other members'
 *             superblocks, as md does; the array runs degraded)
 *   IN_SYNC --error with no redundancy left--> IN_SYNC (the request fails
 *            with -EIO; nothing is marked, so the members on disk still
 *            describe an array that --force can assemble)
 * A FAULTY slot is never read or written again in this process. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/reshape_io.h"
#include "array/readahead.h"
#include "stripe/cache.h"
#include "stripe/gather.h"
#include "log.h"

int array_range_ok(const struct uraid_array *a, size_t len, uint64_t offset)
{
    if (len % 512 || offset % 512)
        return -EINVAL;
    uint64_t size = a->size_sectors * 512;
    if (offset > size || len > size - offset)
        return -ENOSPC;
    return 0;
}

static void status_text(const struct uraid_array *a, char *out)
{
    int n = a->geom.raid_disks;
    out[0] = '[';
    for (int s = 0; s < n; s++)
        out[1 + s] = slot_ok(a, s) ? 'U' : '_';
    out[1 + n] = ']';
    out[2 + n] = 0;
}

/* "failed while writing (Input/output error)", or `what` alone for a
 * failure no I/O caused (err 0: an administrator's request). */
static void failure_cause(char *out, size_t len, const char *what, int err)
{
    if (err)
        snprintf(out, len, "failed while %s (%s)", what, uraid_strerror(err));
    else
        snprintf(out, len, "%s", what);
}

int array_member_failed(struct uraid_array *a, int m, int err, const char *what)
{
    char cause[200];
    failure_cause(cause, sizeof cause, what, err);
    if (m < 0)
        return err ? err : -EIO;
    if (a->parent) { /* a reshape's old geometry: the parent decides and records it */
        int rc = array_member_failed(a->parent, m, err, what);
        if (rc == 0 && !slot_ok(a->parent, m))
            __atomic_store_n(&a->slot[m].state, URAID_MEMBER_FAULTY, __ATOMIC_RELEASE);
        return rc;
    }
    pthread_mutex_lock(&a->meta_lock);
    if (a->slot[m].dev && a->slot[m].state == URAID_MEMBER_REBUILDING) {
        /* a member being rebuilt carries no redundancy yet: losing it only
         * stops the rebuild (rebuild.c notices the state) */
        __atomic_store_n(&a->slot[m].state, URAID_MEMBER_FAULTY, __ATOMIC_RELEASE);
        uint32_t dn = a->slot[m].sb.dev_number;
        if (dn < a->sb.max_dev)
            a->sb.dev_roles[dn] = MD_ROLE_FAULTY;
        pthread_mutex_unlock(&a->meta_lock);
        array_notify(a, NOTE_TARGET_FAILED);
        uraid_log(URAID_LOG_WARN, "member %s %s during its rebuild: marked faulty", a->slot[m].dev->path, cause);
        array_write_superblocks(a);
        char detail[320];
        snprintf(detail, sizeof detail, "%s during its rebuild", cause);
        array_event(a, "FailSpare", a->slot[m].dev->path, detail);
        return 0;
    }
    if (!slot_ok(a, m)) {
        pthread_mutex_unlock(&a->meta_lock);
        return 0; /* another request already failed it */
    }
    int missing = 0;
    for (int s = 0; s < a->geom.raid_disks; s++)
        missing += !slot_ok(a, s);
    const char *path = a->slot[m].dev->path;
    if (missing + 1 > a->nparity || !array_survives_without(a, m)) {
        pthread_mutex_unlock(&a->meta_lock);
        uraid_log(URAID_LOG_ERROR,
                  "member %s %s and RAID-%d has no redundancy left for it: the request fails; "
                  "the member is not marked faulty, so the array can still be assembled with --force",
                  path, cause, a->geom.level);
        return -EIO;
    }
    __atomic_store_n(&a->slot[m].state, URAID_MEMBER_FAULTY, __ATOMIC_RELEASE);
    array_reshape_member_failed(a, m);
    uint32_t dev_number = a->slot[m].sb.dev_number;
    if (dev_number < a->sb.max_dev)
        a->sb.dev_roles[dev_number] = MD_ROLE_FAULTY;
    __atomic_add_fetch(&a->counters.member_failures, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&a->meta_lock);

    gather_kick(__atomic_load_n(&a->gather, __ATOMIC_ACQUIRE)); /* kept stripes written while they can be */
    int rc = array_write_superblocks(a);
    array_notify(a, NOTE_MEMBER_FAILED); /* this thread may hold stripe locks: a job starts elsewhere */
    char st[URAID_MAX_MEMBERS + 3];
    status_text(a, st);
    uraid_log(URAID_LOG_WARN, "member %s %s: marked faulty, the array continues degraded %s%s", path, cause, st,
              rc ? " (superblock update failed on some members)" : "");
    char detail[512];
    snprintf(detail, sizeof detail, "%s; the array continues degraded %s", cause, st);
    array_event(a, "Fail", path, detail);
    return 0;
}

void array_note_corrected_read(struct uraid_array *a, int m)
{
    pthread_mutex_lock(&a->meta_lock);
    a->slot[m].sb.cnt_corrected_read++;
    a->corrected_unsaved = 1;
    pthread_mutex_unlock(&a->meta_lock);
    __atomic_add_fetch(&a->counters.corrected_reads, 1, __ATOMIC_RELAXED);
}

int uraid_get_counters(struct uraid_array *a, struct uraid_counters *c)
{
    c->member_reads = __atomic_load_n(&a->counters.member_reads, __ATOMIC_RELAXED);
    c->member_writes = __atomic_load_n(&a->counters.member_writes, __ATOMIC_RELAXED);
    c->member_read_bytes = __atomic_load_n(&a->counters.member_read_bytes, __ATOMIC_RELAXED);
    c->member_write_bytes = __atomic_load_n(&a->counters.member_write_bytes, __ATOMIC_RELAXED);
    c->reconstructions = __atomic_load_n(&a->counters.reconstructions, __ATOMIC_RELAXED);
    c->corrected_reads = __atomic_load_n(&a->counters.corrected_reads, __ATOMIC_RELAXED);
    c->writes_full_stripe = __atomic_load_n(&a->counters.writes_full_stripe, __ATOMIC_RELAXED);
    c->writes_rmw = __atomic_load_n(&a->counters.writes_rmw, __ATOMIC_RELAXED);
    c->writes_rcw = __atomic_load_n(&a->counters.writes_rcw, __ATOMIC_RELAXED);
    c->writes_degraded = __atomic_load_n(&a->counters.writes_degraded, __ATOMIC_RELAXED);
    c->member_failures = __atomic_load_n(&a->counters.member_failures, __ATOMIC_RELAXED);
    return 0;
}

int uraid_set_rmw_level(struct uraid_array *a, int level)
{
    if (!a || level < URAID_RMW_RCW_ONLY || level > URAID_RMW_PREFER)
        return -EINVAL;
    __atomic_store_n(&a->rmw_level, level, __ATOMIC_RELAXED);
    return 0;
}

int uraid_get_rmw_level(struct uraid_array *a)
{
    return __atomic_load_n(&a->rmw_level, __ATOMIC_RELAXED);
}

void uraid_reset_counters(struct uraid_array *a)
{
    uint64_t *c = (uint64_t *)&a->counters;
    for (size_t i = 0; i < sizeof a->counters / sizeof *c; i++)
        __atomic_store_n(&c[i], 0, __ATOMIC_RELAXED);
}

int array_runtime_init(struct uraid_array *a, const struct uraid_open_params *p)
{
    pthread_mutex_init(&a->meta_lock, NULL);
    pthread_mutex_init(&a->dirty_lock, NULL);
    /* a reshape's start and end wait for the requests in flight, and no
     * stream of readers may hold them off */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&a->geom_lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    stripe_locks_init(&a->locks);
    a->ra = ra_create(a);
    array_job_init(a);
    a->replace_source = -1;
    if (p && p->auto_rebuild && !p->readonly && array_monitor_start(a) != 0)
        return -EAGAIN;
    if (p) {
        a->auto_rebuild = p->auto_rebuild;
        a->no_spare_rebuild = p->no_spare_rebuild;
        a->no_auto_resync = p->no_auto_resync;
        a->sync_speed_max_kib = p->sync_speed_max_kib;
        a->sync_speed_min_kib = p->sync_speed_min_kib;
    }
    struct io_engine_params ep = {.workers = p ? p->io_threads : 0, .use_uring = !(p && p->no_uring)};
    return io_engine_create(&ep, &a->io);
}

void array_runtime_fini(struct uraid_array *a)
{
    ra_destroy(a->ra); /* its thread reads members through the engine */
    a->ra = NULL;
    gather_destroy(a->gather); /* no request is in flight */
    a->gather = NULL;
    stripe_cache_destroy(a->scache);
    a->scache = NULL;
    if (a->io)
        io_engine_destroy(a->io);
    a->io = NULL;
    array_job_fini(a);
    stripe_pool_stop(a->pool);
    a->pool = NULL;
    stripe_locks_destroy(&a->locks);
    pthread_rwlock_destroy(&a->geom_lock);
    pthread_mutex_destroy(&a->meta_lock);
    pthread_mutex_destroy(&a->dirty_lock);
}

struct stripe_pool *array_stripe_pool(struct uraid_array *a)
{
    pthread_mutex_lock(&a->meta_lock);
    if (!a->pool)
        a->pool = stripe_pool_start();
    struct stripe_pool *p = a->pool;
    pthread_mutex_unlock(&a->meta_lock);
    return p;
}

#ifndef NDEBUG
static void invariant_broken(const struct uraid_array *a, const char *what, int s)
{
    uraid_log(URAID_LOG_ERROR, "internal error: array state invariant broken: %s (slot %d)", what, s);
    (void)a;
    abort();
}
#endif

void array_check_invariants(const struct uraid_array *a)
{
#ifndef NDEBUG
    int not_in_sync = 0, dirty = __atomic_load_n(&a->dirty, __ATOMIC_ACQUIRE); /* set without meta_lock */
    if (dirty && a->readonly)
        invariant_broken(a, "dirty while read-only", -1);
    if (a->opened_dirty && !dirty)
        invariant_broken(a, "opened dirty but not dirty", -1);
    for (int s = 0; s < a->geom.raid_disks; s++) {
        const struct array_slot *sl = &a->slot[s];
        enum uraid_member_state st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
        /* (a member written as a reshape goes, in sync below its position: a RAID-0 grow's first new
         * member in the RAID-4's old parity slot, RAID-5 -> 6's Q) */
        not_in_sync += st != URAID_MEMBER_IN_SYNC && !(a->rs && a->rs->q_recovering == s);
        if ((st == URAID_MEMBER_IN_SYNC || st == URAID_MEMBER_REBUILDING) && !sl->dev)
            invariant_broken(a, "a working slot without a member", s);
        if (st == URAID_MEMBER_SPARE || st == URAID_MEMBER_STALE)
            invariant_broken(a, "a spare or stale member in a slot", s);
        if (st == URAID_MEMBER_REBUILDING && __atomic_load_n(&sl->recovered, __ATOMIC_ACQUIRE) > a->member_sectors)
            invariant_broken(a, "rebuilt past the member's data area", s);
        if ((st == URAID_MEMBER_IN_SYNC || st == URAID_MEMBER_REBUILDING) && sl->sb.dev_number < a->sb.max_dev &&
            a->sb.dev_roles[sl->sb.dev_number] != s)
            invariant_broken(a, "the roles table does not name this slot", s);
    }
    if (not_in_sync > a->nparity)
        invariant_broken(a, "more slots out of sync than the level survives", -1);
    for (int e = 0; e < a->nextra; e++) {
        enum uraid_member_state st = a->extra[e].state;
        if (st == URAID_MEMBER_IN_SYNC || st == URAID_MEMBER_REBUILDING)
            invariant_broken(a, "a working member outside the slots", e);
    }
#else
    (void)a;
#endif
}

const char *uraid_io_engine(struct uraid_array *a) { return io_engine_kind(a->io); }

int uraid_inject(struct uraid_array *a, int slot, const char *spec)
{
    if (slot < 0 || slot >= a->geom.raid_disks || !spec)
        return -EINVAL;
    struct member *f = a->slot[slot].fault;
    if (!a->slot[slot].dev)
        return -ENODEV;
    if (!f)
        return -EINVAL;
    if (!strcmp(spec, "clear"))
        return member_fault_clear(f);
    if (strstr(spec, "throttle") || strstr(spec, "disk=") || strstr(spec, "seek=") || strstr(spec, "rpm=") ||
        strstr(spec, "qd="))
        return -EINVAL; /* a simulated disk is chosen at open, not injected */
    struct member *top = f;
    int rc = member_apply_spec(&top, spec, NULL, 0);
    /* fault items go into the existing fault layer; nothing may wrap it */
    return rc ? rc : (top == f ? 0 : -EINVAL);
}
