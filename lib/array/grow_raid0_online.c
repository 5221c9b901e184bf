/* A served RAID-0 gaining members (mdadm --grow --raid-devices N --add
 * NEW... on a running RAID-0: uraid_grow_online and the control socket's
 * grow come here for RAID-0), as mdadm does it on a running array: the
 * RAID-0 taken over as a RAID-4 missing its parity (md's
 * raid45_takeover_raid0), that reshaped while requests go on, then taken
 * back to RAID-0 (raid0_takeover_raid45). The record is the offline grow's
 * (reshape_raid0.c, whose planner this reuses), so md, the offline grow and
 * the next `uraid serve` carry on each other's:
 *   1. every check first (the offline grow's: one zone, metadata 1.2/1.1,
 *      the new members big enough; no job running); a refusal writes
 *      nothing;
 *   2. with no request in flight (geom_lock held for writing) and no job
 *      running (job_lock): the new members' superblocks, flushed, then the
 *      old members' (a RAID-4 of N + 1 reshaping from n + 1 at position 0,
 *      the first new member in the old parity slot recovering with the
 *      position, the new parity slot empty; events + 1; resync_offset
 *      clean: a RAID-4 without parity has nothing to resync, and md starts
 *      a degraded array only when clean). The array is then that RAID-4 in
 *      memory as an open of those members makes it (array_reshape_open);
 *   3. the reshape job (reshape_job.c) moves the stripes while requests go
 *      on (reshape_io.c); after the superblock write that ends the reshape
 *      another takes the array back to a RAID-0 of N (md's
 *      raid0_takeover_raid45: clean, each data_size the RAID-4's member
 *      size), as the offline grow does; a served RAID-4 missing its parity
 *      left between the two is taken back by the same grow again
 *      (array_grow_raid0_due).
 * A kill -9 leaves md's record of step 2 at the last checkpoint: md
 * assembles it and carries the reshape on (ending, as md does without
 * mdadm's process, at the RAID-4; mdadm --grow --level=0 takes it back);
 * the next `uraid serve` carries it on and takes it back to RAID-0
 * (array_reshape_open sets then_raid0); the offline `uraid grow` with the
 * same arguments finishes it too, a cut-off end included. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/job.h"
#include "array/reshape.h"
#include "array/reshape_io.h"
#include "log.h"
#include "uraid_grow.h"

struct r0grow {
    struct grow gr;
    struct uraid_grow_params p;
    int nold, N;
};

static int known_member(const struct uraid_array *a, const char *path)
{
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (a->slot[s].dev && array_same_file(a->slot[s].dev->path, path))
            return 1;
    for (int e = 0; e < a->nextra; e++)
        if (a->extra[e].dev && array_same_file(a->extra[e].dev->path, path))
            return 1;
    return 0;
}

/* The grow's new members, opened, after the served ones. */
static int gather(struct uraid_array *a, struct r0grow *x, const char *const *added, int nadded)
{
    struct grow *gr = &x->gr;
    gr->n = x->nold; /* (their superblocks: old_sbs, under the locks) */
    for (int i = 0; i < nadded; i++) {
        char mwhy[300];
        if (known_member(a, added[i]))
            return grow_say(gr, -EEXIST, "new member %s is already a member of this array", added[i]);
        for (int j = 0; j < i; j++)
            if (array_same_file(added[i], added[j]))
                return grow_say(gr, -EINVAL, "%s and %s are the same member: give each once", added[j], added[i]);
        int k = gr->n++, rc = array_open_added(a, added[i], &gr->dev[k], NULL, mwhy, sizeof mwhy);
        gr->name[k] = added[i];
        gr->is_added[k] = 1;
        if (rc)
            return grow_say(gr, rc, "new member %s", mwhy);
    }
    return 0;
}

static int check(struct uraid_array *a, struct r0grow *x, int nadded)
{
    struct grow *gr = &x->gr;
    if (a->readonly)
        return grow_say(gr, -EROFS, "the array is open read-only");
    int rechunk = x->p.chunk_sectors && x->p.chunk_sectors != a->geom.chunk_sectors;
    if (rechunk && x->N != x->nold)
        return grow_say(gr, -EOPNOTSUPP, "grow the RAID-0 and change its chunk in two runs");
    if (x->p.chunk_sectors && !rechunk && x->N == x->nold)
        return grow_say(gr, -EALREADY, "the RAID-0 has %d members and chunk %u KiB already: nothing to do", x->nold,
                        a->geom.chunk_sectors / 2);
    if (x->N < x->nold || (x->N == x->nold && !rechunk))
        return grow_say(gr, -EINVAL, "RAID-0 has %d members: --raid-devices %d adds none (md cannot take members "
                        "out of a RAID-0)", x->nold, x->N);
    if (nadded != x->N - x->nold || x->N + 1 > URAID_MAX_MEMBERS)
        return grow_say(gr, -EINVAL, "--raid-devices %d needs %d new member%s (--add), %d given%s", x->N,
                        x->N - x->nold, x->N - x->nold == 1 ? "" : "s", nadded,
                        x->N + 1 > URAID_MAX_MEMBERS ? " (at most 31 members: the RAID-4 on the way has one more)" : "");
    for (int s = 0; s < x->nold; s++)
        if (!a->slot[s].dev || a->slot[s].state != URAID_MEMBER_IN_SYNC)
            return grow_say(gr, -EINVAL, "slot %d has no member in sync: a RAID-0 cannot run without it", s);
    return array_job_refuse_running(a, gr->why, gr->whylen);
}

/* The served members' superblocks as the array would write them now;
 * caller holds geom_lock for writing (no dirty mark moves events). */
static void old_sbs(struct uraid_array *a, struct r0grow *x)
{
    struct grow *gr = &x->gr;
    pthread_mutex_lock(&a->meta_lock);
    for (int s = 0; s < x->nold; s++) {
        gr->name[s] = a->slot[s].dev->path;
        gr->dev[s] = a->slot[s].dev;
        gr->sb[s] = a->slot[s].sb;
        gr->sb[s].events = a->sb.events;
        gr->sb[s].resync_offset = MD_RESYNC_CLEAN; /* RAID-0 has nothing to resync (md keeps it clean) */
        memcpy(gr->sb[s].dev_roles, a->sb.dev_roles, sizeof gr->sb[s].dev_roles);
        gr->sb_ok[s] = 1;
    }
    pthread_mutex_unlock(&a->meta_lock);
}

/* The RAID-0 in memory, kept until the RAID-4 serves. A failure puts it
 * back read-only: with the reshape at position 0 on disk the RAID-0 still
 * reads every stripe where the record says it is, and no superblock of
 * its old record may go over the new one. */
struct r0saved {
    struct array_slot slot[URAID_MAX_MEMBERS];
    struct md_sb sb;
    struct layout_geom geom;
    int k, nparity;
    uint64_t member_sectors, nstripes, *dw;
    struct raid0_zones *r0;
};

static void put_back(struct uraid_array *a, struct r0saved *sv)
{
    struct array_reshape *rs = a->rs;
    __atomic_store_n(&a->rs, NULL, __ATOMIC_RELEASE);
    array_reshape_free(rs);
    pthread_mutex_lock(&a->meta_lock);
    free(a->degraded_written);
    memcpy(a->slot, sv->slot, sizeof a->slot);
    a->sb = sv->sb;
    a->geom = sv->geom;
    a->k = sv->k;
    a->nparity = sv->nparity;
    a->member_sectors = sv->member_sectors;
    a->nstripes = sv->nstripes;
    a->degraded_written = sv->dw;
    a->r0 = sv->r0;
    __atomic_store_n(&a->size_sectors, sv->r0->array_sectors, __ATOMIC_RELEASE);
    __atomic_store_n(&a->dirty, 0, __ATOMIC_RELEASE); /* (read-only: never dirty) */
    __atomic_store_n(&a->readonly, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&a->meta_lock);
}

/* Step 2's memory: the slots, template and geometry of the members just
 * written; caller holds meta_lock. */
static void switch_slots(struct uraid_array *a, struct r0grow *x, uint64_t *dw, uint64_t nstripes)
{
    struct grow *gr = &x->gr;
    const struct md_sb *T = &gr->tmpl;
    int nslots = (int)T->raid_disks;
    a->sb = gr->sb[gr->at[0]];
    for (int s = 0; s < nslots; s++) {
        struct array_slot *sl = &a->slot[s];
        if (s >= x->nold) {
            memset(sl, 0, sizeof *sl);
            sl->state = URAID_MEMBER_MISSING;
        }
        if (gr->gone[s])
            continue;
        sl->sb = gr->sb[gr->at[s]];
        sl->dev = gr->dev[gr->at[s]];
        sl->data_offset = gr->old_off;
        sl->state = gr->recovering[gr->at[s]] ? URAID_MEMBER_REBUILDING : URAID_MEMBER_IN_SYNC;
        sl->recovered = 0;
    }
    a->geom = (struct layout_geom){4, (int)T->new_layout, nslots, T->new_chunk};
    a->nparity = 1;
    a->k = nslots - 1;
    a->member_sectors = T->size;
    /* the superblocks say clean: no dirty mark while it is a RAID-4 without parity */
    __atomic_store_n(&a->dirty, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&a->dirty_partial, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&a->sb_written, 1, __ATOMIC_RELEASE); /* (the empty slot's role is gone from them) */
    a->opened_dirty = 0;
    a->degraded_written = dw;
    a->nstripes = nstripes;
    a->r0 = NULL;
}

/* Step 2's memory: the array as an open of the members just written makes it. */
static int become_raid4(struct uraid_array *a, struct r0grow *x)
{
    struct grow *gr = &x->gr;
    uint64_t nstripes = gr->tmpl.size / gr->tmpl.chunksize;
    uint64_t *dw = malloc((size_t)(nstripes / 64 + 1) * sizeof *dw);
    struct r0saved *sv = malloc(sizeof *sv);
    if (!dw || !sv) {
        free(dw);
        free(sv);
        __atomic_store_n(&a->readonly, 1, __ATOMIC_RELEASE); /* (put_back's reason) */
        return grow_say(gr, -ENOMEM, "the grow is recorded on the members but the array is out of memory to serve "
                        "it (it is served read-only now): stop the server and serve every member, the new ones too, "
                        "which carries the reshape on");
    }
    memset(dw, 0xff, (size_t)(nstripes / 64 + 1) * sizeof *dw); /* the new parity slot: never written */
    pthread_mutex_lock(&a->meta_lock);
    *sv = (struct r0saved){.sb = a->sb, .geom = a->geom, .k = a->k, .nparity = a->nparity,
                           .member_sectors = a->member_sectors, .nstripes = a->nstripes, .dw = a->degraded_written,
                           .r0 = a->r0};
    memcpy(sv->slot, a->slot, sizeof sv->slot);
    switch_slots(a, x, dw, nstripes);
    pthread_mutex_unlock(&a->meta_lock);
    char rwhy[256] = "";
    int rc = array_reshape_open(a, 1, rwhy, sizeof rwhy);
    /* a chunk change has no new member in the old parity slot for the open to tell it by: this start
     * knows (an open after a kill ends it as md does, at the RAID-4 missing its parity) */
    if (rc == 0 && !a->rs->then_raid0 && x->N == x->nold)
        a->rs->then_raid0 = 1;
    if (rc == 0 && !a->rs->then_raid0)
        rc = -EINVAL; /* cannot happen: the record just written is a RAID-0's grow */
    if (rc) {
        put_back(a, sv);
        grow_say(gr, rc, "the grow is recorded on the members but the array cannot serve it: %s (it is served "
                 "read-only now; stop the server and serve every member, the new ones too, which carries the "
                 "reshape on)", rwhy);
    } else {
        for (int i = x->nold; i < gr->n; i++)
            gr->dev[i] = NULL; /* the array holds them */
        free(sv->dw);
        free(sv->r0);
    }
    free(sv);
    return rc;
}

/* Steps 1 (the checks that read the members) and 2; under job_lock with no job running. */
static int start(struct uraid_array *a, void *ctx)
{
    struct r0grow *x = ctx;
    struct grow *gr = &x->gr;
    if (a->rs)
        return grow_say(gr, -EBUSY, "a reshape to %d members is already in progress", a->geom.raid_disks);
    pthread_rwlock_wrlock(&a->geom_lock); /* the requests in flight end first */
    old_sbs(a, x);
    int rc = grow_check_old(gr, x->nold);
    if (rc == 0)
        rc = grow_plan_raid0(gr, x->nold, x->N);
    if (rc == 0)
        rc = grow_write_all(gr);
    if (rc == 0)
        rc = become_raid4(a, x);
    pthread_rwlock_unlock(&a->geom_lock);
    if (rc == 0)
        uraid_log(URAID_LOG_INFO, "RAID-0 of %d taken over as a RAID-4 of %d missing its parity, reshaping to %d "
                  "members (data offset %llu -> %llu); it becomes a RAID-0 of %d at the end", x->nold, x->nold + 1,
                  x->N + 1, (unsigned long long)gr->old_off,
                  (unsigned long long)reshape_new_off(&gr->g, gr->old_off), x->N);
    return rc;
}

int array_grow_raid0_online(struct uraid_array *a, int N, uint32_t chunk, const char *const *added, int nadded,
                            char *why, size_t whylen)
{
    struct r0grow *x = calloc(1, sizeof *x);
    if (!x)
        return uraid_why(why, whylen, "out of memory"), -ENOMEM;
    x->nold = a->geom.raid_disks;
    x->N = N;
    x->p.raid_devices = N;
    x->p.chunk_sectors = chunk;
    x->gr.p = &x->p;
    x->gr.why = why;
    x->gr.whylen = whylen;
    int rc = check(a, x, nadded);
    if (rc == 0)
        rc = gather(a, x, added, nadded);
    if (rc == 0)
        rc = array_job_exclusive(a, start, x, why, whylen);
    for (int i = x->nold; i < x->gr.n; i++)
        member_close(x->gr.dev[i]);
    free(x);
    if (rc)
        return rc;
    char jwhy[256];
    rc = uraid_job_start(a, URAID_JOB_RESHAPE, NULL, jwhy, sizeof jwhy);
    if (rc == -EBUSY)
        rc = 0; /* the monitor started it first */
    if (rc)
        uraid_why(why, whylen, "the grow is recorded but its reshape did not start: %s (it starts at the next open)",
                  jwhy);
    return rc;
}

struct why {
    char *text;
    size_t len;
};

static int back_now(struct uraid_array *a, void *ctx)
{
    struct why *w = ctx;
    pthread_rwlock_wrlock(&a->geom_lock); /* the requests in flight end first */
    pthread_mutex_lock(&a->meta_lock);
    int rc = array_raid0_back_locked(a, w->text, w->len);
    pthread_mutex_unlock(&a->meta_lock);
    if (rc == 0 && (rc = array_write_superblocks(a)) != 0)
        uraid_why(w->text, w->len, "the takeover back to RAID-0 could not be recorded: %s", uraid_strerror(rc));
    pthread_rwlock_unlock(&a->geom_lock);
    return rc;
}

int array_grow_raid0_due(const struct uraid_array *a, int N, const char *const *added, int nadded)
{
    int n = a->geom.raid_disks;
    if (a->geom.level != 4 || a->rs || N != n - 1 || nadded < 1 || a->slot[n - 1].dev)
        return 0;
    for (int s = 0; s < n - 1; s++)
        if (!a->slot[s].dev || a->slot[s].state != URAID_MEMBER_IN_SYNC)
            return 0;
    for (int i = 0; i < nadded; i++)
        if (!known_member(a, added[i]))
            return 0;
    return 1;
}

int array_grow_raid0_back_online(struct uraid_array *a, char *why, size_t whylen)
{
    if (a->readonly)
        return uraid_why(why, whylen, "the array is open read-only"), -EROFS;
    struct why w = {why, whylen};
    int rc = array_job_refuse_running(a, why, whylen);
    if (rc == 0)
        rc = array_job_exclusive(a, back_now, &w, why, whylen);
    if (rc == 0)
        uraid_log(URAID_LOG_INFO, "the RAID-4 missing its parity (a RAID-0 grow's end) taken back to RAID-0 of %d",
                  a->geom.raid_disks);
    return rc;
}

int array_raid0_back_locked(struct uraid_array *a, char *why, size_t whylen)
{
    int n = a->geom.raid_disks - 1; /* the parity slot, the last, is empty */
    uint64_t sizes[URAID_MAX_MEMBERS];
    for (int s = 0; s < n; s++)
        sizes[s] = a->sb.size; /* md's raid0_takeover_raid45: rdev->sectors = dev_sectors, one zone */
    struct raid0_zones *z = malloc(sizeof *z);
    char zwhy[300];
    int rc = z ? raid0_zones_build(z, n, sizes, a->geom.chunk_sectors, RAID0_LAYOUT_UNSET, zwhy, sizeof zwhy)
               : -ENOMEM;
    if (rc) {
        free(z);
        return uraid_why(why, whylen, "the RAID-4 cannot be taken back to RAID-0: %s (the superblocks say RAID-4 "
                         "missing its parity; 'uraid grow --level 0' with the members takes it back)",
                         rc == -ENOMEM ? "out of memory" : zwhy), rc;
    }
    struct layout_geom t = a->geom;
    t.level = 0;
    t.layout = 0;
    t.raid_disks = n;
    array_takeover_locked(a, &t);
    a->sb.feature_map &= ~MD_FEATURE_RAID0_LAYOUT; /* one zone: no layout to record */
    a->sb.resync_offset = MD_RESYNC_CLEAN; /* md: "make sure it will be not marked as dirty" */
    __atomic_store_n(&a->dirty, 1, __ATOMIC_RELEASE); /* (and no dirty mark after: RAID-0 has no resync) */
    a->opened_dirty = 0;
    for (int s = 0; s < n; s++)
        a->slot[s].sb.data_size = a->sb.size;
    free(a->r0);
    a->r0 = z;
    a->member_sectors = z->slot_sectors[0];
    __atomic_store_n(&a->size_sectors, z->array_sectors, __ATOMIC_RELEASE);
    return 0;
}
