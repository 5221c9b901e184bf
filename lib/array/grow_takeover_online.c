/* A served RAID-1 of two members taken over as a RAID-5 of two, and back
 * (uraid_grow_online_level comes here for --level 5 on a RAID-1 and
 * --level 1 on a RAID-5), as md's level_store does it on a running array
 * (raid5.c's raid5_takeover_raid1, raid1.c's raid1_takeover): no data
 * moves, since a 2-member RAID-5's parity is a copy of its data, so each
 * member holds the array's data at the same member sectors either way.
 *   1. every check first (two members, both in sync, no new member, no
 *      partial parity log or journal, no job or reshape running; RAID-1 ->
 *      5: the chunk the offline takeover records, reshape_level.c's
 *      mirror_parity: --chunk, else md's 64 KiB halved until it divides
 *      the size; the layout left-symmetric, md's); a refusal writes
 *      nothing;
 *   2. with no request in flight (geom_lock held for writing) and no job
 *      running (job_lock): the partial stripes kept in memory written at
 *      the old level (array_flush_kept); the array in memory at the new level as an open
 *      of the new record makes it (geometry, chunk, the degraded-write map
 *      of RAID-5's stripes), then every member's superblock in one batch
 *      (md_update_sb: level, layout, chunk and their new_ copies, events +
 *      1; the bitmap header first, as every superblock write). The
 *      read-ahead's windows and the stripe cache are dropped: the other
 *      level's writes did not count as this one's stripes.
 * A kill -9 before the batch leaves the old level on every member, after
 * it the new one; a kill inside it members one event apart, which the
 * next open (uraid's and md's) takes at the newer's level (the older is
 * one event behind: in sync). Nothing else runs after the switch. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "array/job.h"
#include "array/readahead.h"
#include "array/reshape_io.h"
#include "log.h"
#include "stripe/gather.h"
#include "uraid_grow.h"

struct switch_to {
    struct layout_geom to;
    uint64_t *dw; /* RAID-5's degraded-write map, allocated before the locks */
    char *why;
    size_t whylen;
};

#define no(x, rc, line) uraid_refuse((x)->why, (x)->whylen, (rc), "%s", (line))

/* The chunk of RAID-1 -> 5 (reshape_level.c's mirror_parity). */
static int pick_chunk(const struct uraid_array *a, uint32_t asked, uint32_t *chunk, char *why, size_t whylen)
{
    uint64_t size = a->sb.size;
    *chunk = asked;
    for (uint32_t c = 128; !*chunk && c >= LAYOUT_MIN_CHUNK_SECTORS; c >>= 1)
        if (size % c == 0)
            *chunk = c; /* md's raid5_takeover_raid1: 64 KiB, halved until it divides the size */
    if (*chunk && size % *chunk == 0)
        return 0;
    uraid_why(why, whylen, "the mirror size (%llu sectors) is not a multiple of %s: make it smaller first "
              "(uraid grow --size)", (unsigned long long)size, *chunk ? "the chunk given" : "4 KiB (md's smallest chunk)");
    return -EINVAL;
}

static int check(struct uraid_array *a, int level, int N, uint32_t chunk, const char *layout, int nadded,
                 struct switch_to *x)
{
    char line[300];
    if (a->readonly)
        return no(x, -EROFS, "the array is open read-only");
    if (a->geom.raid_disks != 2) {
        snprintf(line, sizeof line, "md changes RAID-1 and RAID-5 into each other with 2 members only (the array has "
                 "%d)", a->geom.raid_disks);
        return no(x, -EOPNOTSUPP, line);
    }
    if ((N && N != 2) || nadded) {
        snprintf(line, sizeof line, "RAID-%d -> RAID-%d keeps the 2 members: give no --raid-devices other than 2 and "
                 "no new member", a->geom.level, level);
        return no(x, -EINVAL, line);
    }
    if (md_sb_has_ppl(&a->sb) || (a->sb.feature_map & MD_FEATURE_JOURNAL))
        return no(x, -EOPNOTSUPP, md_sb_has_ppl(&a->sb)
                                      ? "the array keeps a partial parity log (ppl), which RAID-1 has none of: switch "
                                        "to resync first (uraid grow --control PATH --consistency-policy=resync)"
                                      : "the array keeps a write journal: md changes the level of none");
    for (int s = 0; s < 2; s++)
        if (!slot_ok(a, s)) {
            snprintf(line, sizeof line, "slot %d is not in sync: the level changes only on a whole array; recover it "
                     "first (uraid add SPARE, then wait for the recovery in uraid status)", s);
            return no(x, -EOPNOTSUPP, line);
        }
    x->to = (struct layout_geom){level, 0, 2, 0};
    if (level == 1) {
        if (layout || chunk)
            return no(x, -EINVAL, "RAID-1 has no layout or chunk");
    } else {
        int l = layout ? layout_from_name(5, layout) : LAYOUT_LEFT_SYMMETRIC;
        if (l != LAYOUT_LEFT_SYMMETRIC)
            return no(x, -EOPNOTSUPP, "md takes a RAID-1 over as a left-symmetric RAID-5 (change the layout after)");
        int rc = pick_chunk(a, chunk, &x->to.chunk_sectors, x->why, x->whylen);
        if (rc)
            return rc;
        x->to.layout = l;
        uint64_t nstripes = a->sb.size / x->to.chunk_sectors;
        if (!(x->dw = calloc((size_t)(nstripes / 64 + 1), sizeof *x->dw)))
            return no(x, -ENOMEM, "out of memory");
    }
    return array_job_refuse_running(a, x->why, x->whylen);
}

/* What the array was, to put back when no superblock took the new level. */
struct before {
    struct md_sb sb;
    struct layout_geom geom;
    int k, nparity;
    uint64_t nstripes, *dw;
};

/* The new level in memory and in the template; caller holds meta_lock. */
static void set_level(struct uraid_array *a, struct switch_to *x, struct before *b)
{
    *b = (struct before){.sb = a->sb, .geom = a->geom, .k = a->k, .nparity = a->nparity, .nstripes = a->nstripes,
                         .dw = a->degraded_written};
    const struct layout_geom *t = &x->to;
    a->sb.level = t->level;
    a->sb.layout = (uint32_t)t->layout;
    a->sb.new_level = (uint32_t)t->level;
    a->sb.new_layout = (uint32_t)t->layout;
    a->sb.chunksize = t->chunk_sectors;
    a->sb.new_chunk = t->chunk_sectors;
    a->geom = *t;
    a->k = layout_data_disks(t);
    a->nparity = 1; /* two mirrors, or one data block and its parity */
    a->nstripes = t->chunk_sectors ? a->member_sectors / t->chunk_sectors : 0;
    a->degraded_written = x->dw; /* RAID-5: none written degraded (both in sync); RAID-1: none */
    x->dw = NULL;
}

static void put_back(struct uraid_array *a, struct switch_to *x, struct before *b)
{
    uint64_t events = a->sb.events;
    x->dw = a->degraded_written;
    a->sb = b->sb;
    a->sb.events = events; /* (bumped by the write that failed: the next one goes past it) */
    a->geom = b->geom;
    a->k = b->k;
    a->nparity = b->nparity;
    a->nstripes = b->nstripes;
    a->degraded_written = b->dw;
    b->dw = NULL;
}

/* The partial stripes kept in memory (stripe/gather.c) written at the
 * level they were acknowledged at, before it changes: another level's
 * writes would not settle them, and a kept stripe written after one of
 * them would go over it. Caller holds geom_lock for writing (the table's
 * thread then writes none meanwhile). */
int array_flush_kept(struct uraid_array *a, char *why, size_t whylen)
{
    int rc = gather_flush(__atomic_load_n(&a->gather, __ATOMIC_ACQUIRE));
    if (rc)
        uraid_why(why, whylen, "a write kept in memory could not be written: %s (the level is unchanged; check the "
                  "members)", uraid_strerror(rc));
    return rc;
}

/* Step 2: under job_lock with no job running. */
static int switch_level(struct uraid_array *a, void *ctx)
{
    struct switch_to *x = ctx;
    if (a->rs)
        return no(x, -EBUSY, "a reshape is in progress: change the level after its end (uraid status)");
    struct before b;
    int from = a->geom.level;
    pthread_rwlock_wrlock(&a->geom_lock); /* the requests in flight end first */
    int rc = array_flush_kept(a, x->why, x->whylen);
    if (rc) {
        pthread_rwlock_unlock(&a->geom_lock);
        return rc;
    }
    pthread_mutex_lock(&a->meta_lock);
    set_level(a, x, &b);
    pthread_mutex_unlock(&a->meta_lock);
    rc = array_write_superblocks(a);
    if (rc) {
        pthread_mutex_lock(&a->meta_lock);
        put_back(a, x, &b);
        pthread_mutex_unlock(&a->meta_lock);
        uraid_why(x->why, x->whylen, "no member took the new level's superblock (%s): the array stays RAID-%d; check "
                  "the members", uraid_strerror(rc), from);
    } else {
        __atomic_store_n(&a->scache_off, 1, __ATOMIC_RELAXED);
        ra_forget(a->ra);
    }
    pthread_rwlock_unlock(&a->geom_lock);
    free(b.dw);
    if (rc == 0)
        uraid_log(URAID_LOG_INFO, "RAID-%d of 2 taken over as RAID-%d%s (no data moved)", from, a->geom.level,
                  a->geom.level == 5 ? " left-symmetric" : "");
    return rc;
}

int array_takeover_mirror_parity_online(struct uraid_array *a, int level, int N, uint32_t chunk, const char *layout,
                                        int nadded, char *why, size_t whylen)
{
    struct switch_to x = {.why = why, .whylen = whylen};
    int rc = check(a, level, N, chunk, layout, nadded, &x);
    if (rc == 0)
        rc = array_job_exclusive(a, switch_level, &x, why, whylen);
    free(x.dw);
    return rc;
}

/* ---- RAID-4/5 of n -> RAID-0 of n - 1 (md's raid0_takeover_raid45) ---------------------------------------
 * md takes over a RAID-4, or a RAID-5 in the parity-last layout, whose
 * only missing member is the parity one (the last slot); mdadm fails and
 * removes that member of a whole array first (Grow.c). The parity-last
 * data members are a RAID-0 of one zone. Recorded as the offline grow
 * records it (reshape_level.c's grow_to_raid0, grow_raid0_online.c's
 * array_raid0_back_locked): level 0, raid_disks n - 1, resync_offset
 * clean, each data member's data_size the RAID-4/5 member size; the
 * parity member, when present and in sync, a spare. With no request in
 * flight the data members' superblocks are written first (events + 1),
 * then the parity member's alone at those events: a kill between leaves
 * it one event behind with its old record, a spare of the newer array
 * (array.c's takeover_step opens it; md leaves it out). */

struct to_raid0 {
    int parity_member; /* the parity slot held a member in sync */
    char *why;
    size_t whylen;
};

static int say0(const struct to_raid0 *x, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say0(const struct to_raid0 *x, int rc, const char *fmt, ...)
{
    char line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    uraid_why(x->why, x->whylen, "%s", line);
    return rc;
}

static int check_raid0(struct uraid_array *a, int N, uint32_t chunk, const char *layout, int nadded,
                       struct to_raid0 *x)
{
    int n = a->geom.raid_disks, lv = a->geom.level;
    if (a->readonly)
        return say0(x, -EROFS, "the array is open read-only");
    if ((N && N != n - 1) || nadded)
        return say0(x, -EINVAL, "md turns a RAID-%d of %d members into a RAID-0 of %d (the parity member becomes a "
                    "spare): give --raid-devices %d (or none) and no new member", lv, n, n - 1, n - 1);
    if (chunk || layout)
        return say0(x, -EOPNOTSUPP, "change the level and the chunk or layout in two runs");
    if (lv == 5 && a->geom.layout != LAYOUT_PARITY_LAST)
        return say0(x, -EOPNOTSUPP, "md takes only a parity-last RAID-5 over as RAID-0 (raid0_takeover_raid45): "
                    "restripe it first (uraid grow --control PATH --layout parity-last), then --level 0");
    if (a->bitmap || (a->sb.feature_map & MD_FEATURE_BITMAP_OFFSET))
        return say0(x, -EOPNOTSUPP, "the array keeps a write-intent bitmap, which md cannot take over as RAID-0: "
                    "remove it first (uraid grow --control PATH --consistency-policy=resync)");
    if (md_sb_has_ppl(&a->sb) || (a->sb.feature_map & MD_FEATURE_JOURNAL))
        return say0(x, -EOPNOTSUPP, "the array keeps a %s, which RAID-0 has none of: switch to resync first "
                    "(uraid grow --control PATH --consistency-policy=resync)",
                    md_sb_has_ppl(&a->sb) ? "partial parity log (ppl)" : "write journal");
    for (int s = 0; s < n - 1; s++)
        if (!slot_ok(a, s))
            return say0(x, -EOPNOTSUPP, "slot %d (a data member) is not in sync: RAID-0 cannot run without it; "
                        "recover it first (uraid add SPARE, then wait for the recovery in uraid status)", s);
        else if (slot_has_bad(&a->slot[s], 0, a->member_sectors))
            return say0(x, -EOPNOTSUPP, "member %s lists bad blocks (uraid examine shows them), which a RAID-0 could "
                        "not rebuild: replace it first (uraid replace), then change the level", a->slot[s].dev->path);
    const struct array_slot *p = &a->slot[n - 1];
    if (p->dev && p->state == URAID_MEMBER_REBUILDING)
        return say0(x, -EBUSY, "the parity member %s is being recovered: let the recovery finish (uraid status), "
                    "then change the level", p->dev->path);
    x->parity_member = slot_ok(a, n - 1);
    return array_job_refuse_running(a, x->why, x->whylen);
}

/* The parity slot's failed member, still open, kept as faulty (offline: "stays faulty"); meta_lock held. */
static void keep_faulty(struct uraid_array *a)
{
    int last = a->geom.raid_disks - 1;
    struct array_slot *sl = &a->slot[last];
    if (!sl->dev || slot_ok(a, last))
        return;
    if (a->nextra < URAID_MAX_MEMBERS) {
        sl->state = URAID_MEMBER_FAULTY;
        a->extra[a->nextra++] = *sl;
    }
    memset(sl, 0, sizeof *sl);
    sl->state = URAID_MEMBER_MISSING;
}

/* Under job_lock with no job running. */
static int switch_raid0(struct uraid_array *a, void *ctx)
{
    struct to_raid0 *x = ctx;
    if (a->rs)
        return say0(x, -EBUSY, "a reshape is in progress: change the level after its end (uraid status)");
    int from = a->geom.level, n = a->geom.raid_disks, spare = -1;
    pthread_rwlock_wrlock(&a->geom_lock); /* the requests in flight end first */
    int rc = array_flush_kept(a, x->why, x->whylen);
    if (rc) {
        pthread_rwlock_unlock(&a->geom_lock);
        return rc;
    }
    pthread_mutex_lock(&a->meta_lock);
    keep_faulty(a);
    rc = array_raid0_back_locked(a, x->why, x->whylen);
    if (rc == 0 && x->parity_member && a->nextra > 0) {
        spare = a->nextra - 1; /* (array_takeover_locked put it last) */
        a->extra[spare].state = URAID_MEMBER_STALE; /* not in the first write */
    }
    pthread_mutex_unlock(&a->meta_lock);
    if (rc == 0 && (rc = array_write_superblocks(a)) != 0)
        say0(x, rc, "the takeover to RAID-0 could not be recorded on the data members: %s (check them; the array "
             "serves as RAID-0 until it stops)", uraid_strerror(rc));
    if (spare >= 0) {
        pthread_mutex_lock(&a->meta_lock);
        a->extra[spare].state = URAID_MEMBER_SPARE;
        pthread_mutex_unlock(&a->meta_lock);
        if (rc == 0 && array_write_extra_superblock(a, &a->extra[spare]) != 0)
            uraid_log(URAID_LOG_WARN, "member %s: its superblock as a spare could not be written: it keeps its old "
                      "record, one event behind (md and uraid leave it out)", a->extra[spare].dev->path);
    }
    pthread_rwlock_unlock(&a->geom_lock);
    if (rc == 0)
        uraid_log(URAID_LOG_INFO, "RAID-%d of %d taken over as RAID-0 of %d (no data moved)%s", from, n, n - 1,
                  spare >= 0 ? "; the parity member is a spare" : "");
    return rc;
}

int array_takeover_raid0_online(struct uraid_array *a, int N, uint32_t chunk, const char *layout, int nadded,
                                char *why, size_t whylen)
{
    struct to_raid0 x = {.why = why, .whylen = whylen};
    int rc = check_raid0(a, N, chunk, layout, nadded, &x);
    return rc ? rc : array_job_exclusive(a, switch_raid0, &x, why, whylen);
}
