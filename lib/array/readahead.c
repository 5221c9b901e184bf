/* Read-ahead for RAID-4/5/6 streams. Two readers streaming different files
 * of one array make every member seek between them for each request (the
 * requests a file system or a loop device sends are small), so two streams
 * together read at half the rate of one (seed 000's collapse). md leaves it
 * to the block layer's elevator and read-ahead; uraid has no elevator in
 * front of it, so the array layer does what those do, for every front-end:
 *
 *  - streams: up to RA_STREAMS sequential streams are followed, each by the
 *    end of the furthest request; a request starting near one (within a few
 *    request lengths: a stream's requests arrive out of order when several
 *    are in flight) and reading past it continues it; two such requests
 *    make it sequential (four for small ones: random reads meet by chance).
 *    A large request some way ahead (a file system's next extent) continues
 *    it once the request after it follows on;
 *  - windows: once two streams are active (a lone stream has no seeks to
 *    amortise, and its requests in flight already keep the members busy),
 *    each is read ahead in windows of whole stripes, one request per member
 *    per window (parity included: a head that skips the parity chunk pays
 *    its time anyway), growing from the request's size by doubling as
 *    Linux's read-ahead does, to at most RA_MEMBER_MAX per member and the
 *    budget shared by the active streams; when a request reaches the last
 *    window queued, the next is queued for a thread of its own, so the disks
 *    stay busy while the stream consumes the last;
 *  - the cache: windows live in a budget (URAID_READAHEAD MiB); a window a
 *    stream has passed is freed at once, one of an idle stream when the
 *    thread has been idle a second, and no window a stream is still in is
 *    evicted for another (that stream would start again with small windows);
 *  - writes: a window records each stripe's seqlock count before its reads
 *    and compares after (a stripe a writer touched in between is not
 *    served); a read served from it compares them again, so data written
 *    after a fill is never served from the cache. Every writer of data
 *    bumps those counts (write.c, zero.c, scrub.c's repair), so no write
 *    path calls in here;
 *  - degraded arrays: a member that cannot serve the window (missing,
 *    rebuilding, bad blocks) is rebuilt in the window from the others. A
 *    member whose read fails is left out: the request path reads those
 *    pieces itself and corrects the read error, as it would without us. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array/dataio.h"
#include "array/readahead.h"
#include "array/reshape_io.h"

#define RA_STREAMS 8
#define RA_MEMBER_MAX (16u << 20) /* a window's bytes per member: ~280 ms of a 60 MB/s disk per seek */
#define RA_MEMBER_ONE (2u << 20) /* ... with one stream: no seek to amortise, less read past a file's end */
#define RA_MIN_STRIPES 4u
#define RA_JUMP_SECTORS (64u << 11) /* 64 MiB: ext4 puts a file's extents this far apart */
#define RA_JUMP_MIN_REQ 128u        /* sectors: requests smaller than this never jump with a stream */
#define RA_ACTIVE_NS 1000000000ull /* a stream idle this long no longer shares the budget */

enum ra_state { RA_QUEUED, RA_FILLING, RA_READY, RA_DEAD };

struct ra_entry {
    uint64_t s0, s1;      /* stripes [s0, s1) */
    enum ra_state state;
    int refs;
    uint64_t used;        /* LRU tick */
    uint64_t sig;         /* the geometry it was queued for */
    int owner;            /* the stream it was read for */
    size_t member_bytes;  /* each member's buffer */
    size_t bytes;         /* counted against the budget */
    uint8_t *mem;         /* raid_disks buffers */
    uint32_t *gen;        /* per stripe: its lock's seqlock count at the fill */
    uint8_t *bad;         /* per stripe: written since (or during) the fill, not to be served (atomic) */
    unsigned char valid[URAID_MAX_MEMBERS];
    struct ra_entry *next;
};

struct ra_stream {
    uint64_t next;        /* array sector after the furthest request */
    uint64_t ahead;       /* stripes below this are read or queued */
    uint64_t mark;        /* the last window queued starts here */
    uint64_t jump;        /* a request some way past next ended here (0: none) */
    uint64_t used_ns;
    uint32_t win;         /* stripes of the next window */
    int seq;              /* requests seen; sequential from 2 */
};

struct array_ra {
    struct uraid_array *a;
    pthread_mutex_t mu;
    pthread_cond_t done;  /* a fill ended */
    pthread_cond_t work;  /* a window was queued, or stop */
    struct ra_entry *list;
    size_t bytes, budget;
    uint64_t tick, sig;
    struct ra_stream st[RA_STREAMS];
    pthread_t thr;
    int started, stop;
    int min_streams;      /* read ahead once this many streams are active */
    int any_member;       /* URAID_READAHEAD given: whether members seek or not */
    struct ra_stats stats;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What a window's member offsets depend on: a reshape changes it. */
static uint64_t geom_sig(const struct uraid_array *a)
{
    uint64_t h = ((uint64_t)a->geom.level << 48) ^ ((uint64_t)a->geom.layout << 32) ^
                 ((uint64_t)a->geom.raid_disks << 20) ^ a->geom.chunk_sectors;
    for (int m = 0; m < a->geom.raid_disks; m++)
        h = h * 1000003u + __atomic_load_n(&a->slot[m].data_offset, __ATOMIC_RELAXED);
    return h;
}

/* Streams interleaved at a member cost seeks only where the member has a
 * head; on memory, SSDs and NBD exports (measured: served reads of far
 * members 0.77 of ideal without, 0.46-0.55 with) read-ahead only adds a
 * copy and a thread hand-off. */
static int members_seek(const struct uraid_array *a)
{
    for (int m = 0; m < a->geom.raid_disks; m++) {
        struct member *dev = __atomic_load_n(&a->slot[m].dev, __ATOMIC_ACQUIRE);
        if (dev && dev->seeks)
            return 1;
    }
    return 0;
}

static int ra_applies(const struct uraid_array *a)
{
    return a->ra && a->nparity > 0 && a->geom.level >= 4 && !a->r0 && !a->r10 && !a->lin && !a->parent &&
           __atomic_load_n(&a->ra->budget, __ATOMIC_RELAXED) > 0 && (__atomic_load_n(&a->ra->any_member, __ATOMIC_ACQUIRE) || members_seek(a));
}

static uint64_t stripe_sectors(const struct uraid_array *a) { return (uint64_t)a->k * a->geom.chunk_sectors; }

/* ---- the cache (under mu) ------------------------------------------------------- */

static void entry_unlink_free(struct array_ra *ra, struct ra_entry *e)
{
    for (struct ra_entry **p = &ra->list; *p; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            break;
        }
    ra->bytes -= e->bytes;
    free(e->mem);
    free(e->gen); /* bad[] lives in the same allocation */
    free(e);
}

static void entry_kill(struct array_ra *ra, struct ra_entry *e)
{
    e->state = RA_DEAD;
    if (e->refs == 0)
        entry_unlink_free(ra, e);
}

static void entry_unref(struct array_ra *ra, struct ra_entry *e)
{
    if (--e->refs == 0 && e->state == RA_DEAD)
        entry_unlink_free(ra, e);
}

static struct ra_entry *entry_find(struct array_ra *ra, uint64_t stripe)
{
    for (struct ra_entry *e = ra->list; e; e = e->next)
        if (e->state != RA_DEAD && e->s0 <= stripe && stripe < e->s1)
            return e;
    return NULL;
}

/* The first stripe at or after `stripe` that some window holds (UINT64_MAX: none). */
static uint64_t entry_next_start(struct array_ra *ra, uint64_t stripe)
{
    uint64_t best = UINT64_MAX;
    for (struct ra_entry *e = ra->list; e; e = e->next)
        if (e->state != RA_DEAD && e->s0 >= stripe && e->s0 < best)
            best = e->s0;
    return best;
}

/* A ready window no stream is still reading: its stream went idle, or
 * has read past it, or it was asked to give everything back (force). */
static int evictable(const struct array_ra *ra, const struct ra_entry *e, uint64_t ss, uint64_t now, int force)
{
    if (e->refs || e->state != RA_READY)
        return 0;
    const struct ra_stream *s = &ra->st[e->owner];
    return force || s->seq < 2 || now - s->used_ns >= RA_ACTIVE_NS || e->s1 * ss <= s->next;
}

/* Room for `need` more bytes, the least recently used evictable windows
 * first. Never a window a stream is still in: evicting it would make the
 * stream start again with small windows, which is worse than waiting. */
static int make_room(struct array_ra *ra, size_t need, uint64_t ss, int force)
{
    uint64_t now = now_ns();
    while (ra->bytes + need > ra->budget) {
        struct ra_entry *lru = NULL;
        for (struct ra_entry *e = ra->list; e; e = e->next)
            if (evictable(ra, e, ss, now, force) && (!lru || e->used < lru->used))
                lru = e;
        if (!lru)
            return -ENOSPC;
        entry_unlink_free(ra, lru);
    }
    return 0;
}

/* Every window no stream is still in, freed. */
static void trim(struct array_ra *ra, uint64_t ss)
{
    uint64_t now = now_ns();
    struct ra_entry *e = ra->list;
    while (e) {
        struct ra_entry *next = e->next;
        if (evictable(ra, e, ss, now, 0))
            entry_unlink_free(ra, e);
        e = next;
    }
}

static void kill_all(struct array_ra *ra)
{
    struct ra_entry *e = ra->list;
    while (e) {
        struct ra_entry *next = e->next;
        if (e->state != RA_DEAD)
            entry_kill(ra, e);
        e = next;
    }
    pthread_cond_broadcast(&ra->done);
}

/* Queues a window of stripes [*s, *s + n) for stream `owner`, trimmed to
 * what no window holds and the array's end (*start: where it begins); *s
 * moves past what it considered. 1 queued, 0 nothing to read there,
 * -ENOSPC/-ENOMEM no room. */
static int queue_window(struct array_ra *ra, struct uraid_array *a, uint64_t *s, uint64_t n, int owner,
                        uint64_t *start)
{
    uint64_t ss = stripe_sectors(a), nstripes = (a->size_sectors + ss - 1) / ss;
    struct ra_entry *have;
    while (*s < nstripes && (have = entry_find(ra, *s)) != NULL)
        *s = have->s1;
    uint64_t s0 = *s, s1 = s0 + n, nxt = entry_next_start(ra, s0);
    if (s1 > nstripes)
        s1 = nstripes;
    if (s1 > nxt)
        s1 = nxt;
    if (s0 >= s1)
        return 0;
    int n_m = a->geom.raid_disks;
    size_t mb = (size_t)(s1 - s0) * a->geom.chunk_sectors * SECTOR;
    size_t bytes = mb * (size_t)n_m + (sizeof(uint32_t) + 1) * (size_t)(s1 - s0);
    if (make_room(ra, bytes, ss, 0))
        return -ENOSPC;
    struct ra_entry *e = calloc(1, sizeof *e);
    uint8_t *mem = aligned_alloc(4096, mb * (size_t)n_m);
    uint32_t *gen = calloc((size_t)(s1 - s0), sizeof *gen + 1);
    if (!e || !mem || !gen) {
        free(e);
        free(mem);
        free(gen);
        return -ENOMEM;
    }
    *e = (struct ra_entry){.s0 = s0, .s1 = s1, .state = RA_QUEUED, .used = ++ra->tick, .sig = ra->sig, .owner = owner,
                           .member_bytes = mb, .bytes = bytes, .mem = mem, .gen = gen,
                           .bad = (uint8_t *)(gen + (s1 - s0)), .next = ra->list};
    ra->list = e;
    ra->bytes += bytes;
    *s = s1;
    *start = s0;
    return 1;
}

/* ---- filling a window (no lock held; geom_lock held for reading) ----------------- */

/* Members that could not be read for the window (lost[]) rebuilt in it
 * from the others, stripe by stripe, when everything else was read. */
static void rebuild_lost(struct uraid_array *a, struct ra_entry *e, const unsigned char *lost)
{
    int n = a->geom.raid_disks, list[URAID_MAX_MEMBERS], nlost = 0;
    for (int m = 0; m < n; m++) {
        if (lost[m])
            list[nlost++] = m;
        else if (!e->valid[m])
            return; /* a read failed: the request path corrects it */
    }
    if (nlost == 0 || nlost > a->nparity)
        return;
    uint32_t cs = a->geom.chunk_sectors;
    for (uint64_t s = e->s0; s < e->s1; s++) {
        struct stripe_rows r = {.stripe = s, .row = 0, .nrows = cs};
        if (layout_stripe(&a->geom, s, &r.map) || r.map.nslots != a->k)
            return; /* DDF layouts feed zero blocks: left to the request path */
        for (int m = 0; m < n; m++)
            r.block[m] = e->mem + (size_t)m * e->member_bytes + (size_t)(s - e->s0) * cs * SECTOR;
        if (rows_recover(a, &r, NULL, list, nlost))
            return;
    }
    for (int i = 0; i < nlost; i++)
        e->valid[list[i]] = 1;
}

static int fill(struct uraid_array *a, struct ra_entry *e)
{
    uint32_t cs = a->geom.chunk_sectors;
    uint64_t ms0 = e->s0 * cs, nsec = (e->s1 - e->s0) * cs;
    uint32_t slots0 = __atomic_load_n(&a->slots_gen, __ATOMIC_ACQUIRE);
    if (slots0 & 1)
        return -EAGAIN;
    for (uint64_t s = e->s0; s < e->s1; s++) {
        e->gen[s - e->s0] = stripe_gen(&a->locks, s);
        e->bad[s - e->s0] = e->gen[s - e->s0] & 1; /* a writer is in there now */
    }
    struct io_op ops[URAID_MAX_MEMBERS];
    int who[URAID_MAX_MEMBERS], nops = 0, n = a->geom.raid_disks;
    unsigned char lost[URAID_MAX_MEMBERS] = {0};
    for (int m = 0; m < n; m++) {
        e->valid[m] = 0;
        if (slot_ok_upto(a, m, ms0 + nsec) && !slot_has_bad(&a->slot[m], ms0, nsec)) {
            who[nops] = m;
            ops[nops++] = array_op(a, m, IO_READ, e->mem + (size_t)m * e->member_bytes, (uint32_t)nsec, ms0);
        } else {
            lost[m] = 1;
        }
    }
    array_run_ops(a, ops, nops);
    if (__atomic_load_n(&a->slots_gen, __ATOMIC_ACQUIRE) != slots0)
        return -EAGAIN;
    for (int i = 0; i < nops; i++)
        e->valid[who[i]] = ops[i].result == 0;
    rebuild_lost(a, e, lost);
    for (uint64_t s = e->s0; s < e->s1; s++)
        if (stripe_gen(&a->locks, s) != e->gen[s - e->s0])
            e->bad[s - e->s0] = 1; /* written while we read: parts may be old */
    return 0;
}

/* Under mu: the fill of e ended with rc. */
static void fill_done(struct array_ra *ra, struct ra_entry *e, int rc)
{
    if (rc == 0 && e->state == RA_FILLING) {
        e->state = RA_READY;
        ra->stats.fills++;
    } else if (e->state != RA_DEAD) {
        ra->stats.dropped++;
        entry_kill(ra, e); /* the caller still holds a reference */
    }
    pthread_cond_broadcast(&ra->done);
}

static void *ra_thread(void *arg)
{
    struct array_ra *ra = arg;
    struct uraid_array *a = ra->a;
    pthread_mutex_lock(&ra->mu);
    while (!ra->stop) {
        struct ra_entry *e = NULL;
        for (struct ra_entry *x = ra->list; x; x = x->next)
            if (x->state == RA_QUEUED && (!e || x->used < e->used))
                e = x;
        if (!e) {
            /* idle: what no stream reads any more goes back (a second
             * or two after the streams stop, the cache is empty) */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            if (pthread_cond_timedwait(&ra->work, &ra->mu, &ts) == ETIMEDOUT)
                trim(ra, stripe_sectors(a));
            continue;
        }
        e->state = RA_FILLING;
        e->refs++;
        pthread_mutex_unlock(&ra->mu);
        int rc = -EAGAIN;
        /* never wait for geom_lock: a reshape waiting for it waits for the
         * requests in flight, and one of them may wait for this window */
        if (pthread_rwlock_tryrdlock(&a->geom_lock) == 0) {
            if (!a->rs && geom_sig(a) == e->sig)
                rc = fill(a, e);
            pthread_rwlock_unlock(&a->geom_lock);
        }
        pthread_mutex_lock(&ra->mu);
        if (rc == 0 && e->state == RA_FILLING)
            ra->stats.async_fills++;
        fill_done(ra, e, rc);
        entry_unref(ra, e);
    }
    pthread_mutex_unlock(&ra->mu);
    return NULL;
}

/* ---- streams (under mu) --------------------------------------------------------- */

static int active_streams(const struct array_ra *ra, uint64_t now)
{
    int n = 0;
    for (int i = 0; i < RA_STREAMS; i++)
        n += ra->st[i].seq >= 2 && now - ra->st[i].used_ns < RA_ACTIVE_NS;
    return n ? n : 1;
}

/* The largest window (stripes) now: each active stream keeps about two. */
static uint64_t max_window(const struct array_ra *ra, const struct uraid_array *a, uint64_t now)
{
    uint64_t chunk = (uint64_t)a->geom.chunk_sectors * SECTOR;
    uint64_t w = ra->budget / (2u * (uint64_t)active_streams(ra, now)) / ((uint64_t)a->geom.raid_disks * chunk);
    uint64_t cap = active_streams(ra, now) > 1 ? RA_MEMBER_MAX : RA_MEMBER_ONE;
    if (w > cap / chunk)
        w = cap / chunk;
    return w < RA_MIN_STRIPES ? RA_MIN_STRIPES : w;
}

static int near(uint64_t sector, uint64_t at, uint64_t tol) { return sector + tol >= at && sector <= at + tol; }

/* The stream this request continues, if it is sequential; -1 otherwise. A
 * request a little way past a stream (a file system's next extent: ext4
 * puts them up to tens of MiB apart) continues it once the request after
 * it follows on; a lone random read there does not. */
static int stream_note(struct array_ra *ra, uint64_t sector, uint64_t end, uint64_t now)
{
    /* a stream's requests in flight together arrive in any order: a few
     * requests' worth either way, at least 1 MiB for large ones */
    int big = end - sector >= RA_JUMP_MIN_REQ; /* random reads are small */
    uint64_t tol = (end - sector) * 4;
    if (big && tol < 2048)
        tol = 2048;
    int hit = -1, lru = 0;
    for (int i = 0; i < RA_STREAMS && hit < 0; i++) /* a stream it follows */
        if (ra->st[i].seq && near(sector, ra->st[i].next, tol))
            hit = i;
    for (int i = 0; i < RA_STREAMS && hit < 0 && big; i++) /* one whose jump it confirms */
        if (ra->st[i].seq >= 2 && ra->st[i].jump && near(sector, ra->st[i].jump, tol)) {
            hit = i;
            ra->st[i].next = ra->st[i].jump;
        }
    if (hit >= 0) {
        struct ra_stream *s = &ra->st[hit];
        if (end > s->next) { /* only reading on counts: a re-read is not a stream */
            s->seq++;
            s->next = end;
        }
        s->jump = 0;
        s->used_ns = now;
        /* small requests must run longer: two random reads meet by chance */
        return s->seq >= (big ? 2 : 4) ? hit : -1;
    }
    for (int i = 0; i < RA_STREAMS; i++) {
        struct ra_stream *s = &ra->st[i];
        if (big && s->seq >= 2 && sector > s->next && sector - s->next <= RA_JUMP_SECTORS && !s->jump) {
            s->jump = end; /* perhaps */
            return -1;
        }
        if (s->used_ns < ra->st[lru].used_ns)
            lru = i;
    }
    ra->st[lru] = (struct ra_stream){.next = end, .seq = 1, .used_ns = now};
    return -1;
}

/* Windows of stream si that it has passed: their memory goes back now
 * rather than when the budget runs out (a re-read is the page cache's). */
static void drop_behind(struct array_ra *ra, int si, uint64_t first)
{
    struct ra_entry *e = ra->list;
    while (e) {
        struct ra_entry *next = e->next;
        if (e->owner == si && e->state == RA_READY && e->s1 <= first)
            entry_kill(ra, e);
        e = next;
    }
}

/* Queues a window for stream si at s->ahead; 1 queued, 0 nothing there, < 0 no room. */
static int stream_queue(struct array_ra *ra, struct uraid_array *a, int si, uint64_t maxw)
{
    struct ra_stream *s = &ra->st[si];
    uint64_t s0;
    int q = queue_window(ra, a, &s->ahead, s->win, si, &s0);
    if (q > 0) {
        s->mark = s0;
        s->win = (uint32_t)(2u * s->win > maxw ? maxw : 2u * s->win);
    }
    return q;
}

/* Queues the windows stream si needs: what the request reads, and, once
 * the request reaches the last window queued (its mark, as Linux's
 * PG_readahead page), the next one for the thread: about two windows per
 * stream, the one being read from and the one being read. The window
 * doubles with each, from the request's size to max_window. */
static void schedule(struct array_ra *ra, struct uraid_array *a, int si, uint64_t sector, uint64_t end,
                     uint64_t now)
{
    struct ra_stream *s = &ra->st[si];
    uint64_t ss = stripe_sectors(a), first = sector / ss, last = (end - 1) / ss;
    uint64_t maxw = max_window(ra, a, now), nstripes = (a->size_sectors + ss - 1) / ss;
    if (s->win == 0) { /* a new stream: small windows first */
        uint64_t req = last - first + 1;
        s->ahead = s->mark = first;
        s->win = (uint32_t)(2 * req > RA_MIN_STRIPES ? 2 * req : RA_MIN_STRIPES);
    } else if (s->ahead < first || s->ahead > last + 4 * maxw || (s->ahead > first && !entry_find(ra, first))) {
        s->ahead = s->mark = first; /* it jumped, or its window was thrown away: its window size stays */
    }
    if (s->win > maxw)
        s->win = (uint32_t)maxw;
    drop_behind(ra, si, first);
    int q = 0;
    for (int guard = 0; s->ahead <= last && guard < 4 && q >= 0; guard++)
        q = stream_queue(ra, a, si, maxw);
    if (q < 0 || last < s->mark || s->ahead >= nstripes || stream_queue(ra, a, si, maxw) <= 0)
        return;
    if (!ra->started && !ra->stop)
        ra->started = pthread_create(&ra->thr, NULL, ra_thread, ra) == 0;
    pthread_cond_signal(&ra->work);
}

/* ---- serving -------------------------------------------------------------------- */

/* The ready window holding `stripe`, referenced (filled here when still
 * queued, waited for when being filled); NULL when none: *plain_end
 * (array sectors) is then lowered to where the next window starts. */
static struct ra_entry *acquire(struct array_ra *ra, struct uraid_array *a, uint64_t stripe, uint64_t *plain_end)
{
    uint64_t ss = stripe_sectors(a);
    pthread_mutex_lock(&ra->mu);
    struct ra_entry *e;
    while ((e = entry_find(ra, stripe)) != NULL) {
        e->refs++;
        if (e->state == RA_QUEUED) { /* ours to read now */
            e->state = RA_FILLING;
            pthread_mutex_unlock(&ra->mu);
            int rc = fill(a, e);
            pthread_mutex_lock(&ra->mu);
            fill_done(ra, e, rc);
        }
        while (e->state == RA_FILLING)
            pthread_cond_wait(&ra->done, &ra->mu);
        if (e->state == RA_READY) {
            e->used = ++ra->tick;
            break;
        }
        entry_unref(ra, e); /* thrown away: look again */
    }
    if (!e) {
        uint64_t nxt = entry_next_start(ra, stripe + 1);
        if (nxt != UINT64_MAX && nxt * ss < *plain_end)
            *plain_end = nxt * ss;
    }
    pthread_mutex_unlock(&ra->mu);
    return e;
}

static void release(struct array_ra *ra, struct ra_entry *e, uint64_t hit, int stale)
{
    pthread_mutex_lock(&ra->mu);
    ra->stats.hits += hit;
    ra->stats.stale += stale != 0;
    entry_unref(ra, e);
    pthread_mutex_unlock(&ra->mu);
}

/* Copies what e holds of [sector, end) from sector on: the sectors copied,
 * 0 when it cannot serve the first piece (*stale: written since the fill). */
static uint64_t copy_from(struct uraid_array *a, const struct ra_entry *e, uint8_t *buf, uint64_t sector,
                          uint64_t end, int *stale)
{
    uint32_t cs = a->geom.chunk_sectors;
    uint64_t done = 0;
    while (sector + done < end) {
        struct layout_addr ad;
        if (layout_map(&a->geom, sector + done, &ad) || ad.stripe < e->s0 || ad.stripe >= e->s1 ||
            !e->valid[ad.disk])
            break;
        uint64_t i = ad.stripe - e->s0;
        if (__atomic_load_n(&e->bad[i], __ATOMIC_RELAXED))
            break;
        if (stripe_gen(&a->locks, ad.stripe) != e->gen[i]) { /* written since the fill */
            __atomic_store_n(&e->bad[i], 1, __ATOMIC_RELAXED);
            *stale = 1;
            break;
        }
        uint64_t nsec = cs - ad.chunk_off;
        if (nsec > end - sector - done)
            nsec = end - sector - done;
        memcpy(buf + done * SECTOR,
               e->mem + (size_t)ad.disk * e->member_bytes + (size_t)(ad.member_sector - e->s0 * cs) * SECTOR,
               (size_t)nsec * SECTOR);
        done += nsec;
    }
    return done;
}

int array_read_ra(struct uraid_array *a, void *buf, size_t len, uint64_t offset)
{
    if (!ra_applies(a) || len == 0 || array_range_ok(a, len, offset))
        return array_read_plain(a, buf, len, offset);
    struct array_ra *ra = a->ra;
    uint64_t sector = offset / SECTOR, end = sector + len / SECTOR, ss = stripe_sectors(a), now = now_ns();
    pthread_mutex_lock(&ra->mu);
    uint64_t sig = geom_sig(a);
    if (sig != ra->sig) { /* a reshape moved everything */
        kill_all(ra);
        memset(ra->st, 0, sizeof ra->st);
        ra->sig = sig;
    }
    int si = stream_note(ra, sector, end, now);
    /* one stream alone has no seeks to amortise: its requests in flight
     * together keep the members streaming (and a window read past the end
     * of a file would only cost it) */
    if (si >= 0 && active_streams(ra, now) >= ra->min_streams)
        schedule(ra, a, si, sector, end, now);
    pthread_mutex_unlock(&ra->mu);
    uint8_t *p = buf;
    int rc = 0, plain = 0;
    while (sector < end && rc == 0) {
        uint64_t n = 0, plain_end = end;
        struct ra_entry *e = acquire(ra, a, sector / ss, &plain_end);
        if (e) {
            int stale = 0;
            n = copy_from(a, e, p, sector, end, &stale);
            release(ra, e, n, stale);
            if (n == 0) { /* this piece from its member: up to the chunk's end */
                struct layout_addr ad;
                rc = layout_map(&a->geom, sector, &ad);
                plain_end = sector + a->geom.chunk_sectors - ad.chunk_off;
                if (plain_end > end)
                    plain_end = end;
            }
        }
        if (n == 0 && rc == 0) {
            n = plain_end - sector;
            rc = array_read_plain(a, p, (size_t)n * SECTOR, sector * SECTOR);
            plain = 1;
        }
        p += (size_t)n * SECTOR;
        sector += n;
    }
    if (!plain)
        __atomic_add_fetch(&a->user_requests, 1, __ATOMIC_RELAXED);
    return rc;
}

/* ---- life ----------------------------------------------------------------------- */

struct array_ra *ra_create(struct uraid_array *a)
{
    struct array_ra *ra = calloc(1, sizeof *ra);
    if (!ra)
        return NULL;
    ra->a = a;
    pthread_mutex_init(&ra->mu, NULL);
    pthread_cond_init(&ra->done, NULL);
    pthread_cond_init(&ra->work, NULL);
    const char *env = getenv("URAID_READAHEAD");
    unsigned long mib = RA_DEFAULT_MIB;
    if (env && *env) {
        char *endp;
        unsigned long v = strtoul(env, &endp, 10);
        if (*endp == 0) {
            mib = v;
            ra->any_member = 1;
        }
    }
    ra->budget = (size_t)mib << 20;
    ra->min_streams = 2;
    return ra;
}

void ra_set_any_member(struct array_ra *ra, int on)
{
    __atomic_store_n(&ra->any_member, on, __ATOMIC_RELEASE);
}

void ra_set_budget(struct array_ra *ra, size_t bytes)
{
    pthread_mutex_lock(&ra->mu);
    ra->budget = bytes;
    make_room(ra, 0, 1, 1);
    pthread_mutex_unlock(&ra->mu);
}

void ra_forget(struct array_ra *ra)
{
    if (!ra)
        return;
    pthread_mutex_lock(&ra->mu);
    kill_all(ra);
    memset(ra->st, 0, sizeof ra->st);
    ra->sig = 0;
    pthread_mutex_unlock(&ra->mu);
}

void ra_set_min_streams(struct array_ra *ra, int n)
{
    pthread_mutex_lock(&ra->mu);
    ra->min_streams = n;
    pthread_mutex_unlock(&ra->mu);
}

void ra_get_stats(struct array_ra *ra, struct ra_stats *st)
{
    pthread_mutex_lock(&ra->mu);
    *st = ra->stats;
    st->streams = 0;
    st->bytes = ra->bytes;
    st->budget = ra->budget;
    st->pending = 0;
    for (struct ra_entry *e = ra->list; e; e = e->next)
        st->pending += e->state == RA_QUEUED || e->state == RA_FILLING;
    uint64_t now = now_ns();
    for (int i = 0; i < RA_STREAMS; i++)
        st->streams += ra->st[i].seq >= 2 && now - ra->st[i].used_ns < RA_ACTIVE_NS;
    pthread_mutex_unlock(&ra->mu);
}

void ra_destroy(struct array_ra *ra)
{
    if (!ra)
        return;
    pthread_mutex_lock(&ra->mu);
    ra->stop = 1;
    pthread_cond_broadcast(&ra->work);
    pthread_mutex_unlock(&ra->mu);
    if (ra->started)
        pthread_join(ra->thr, NULL);
    while (ra->list)
        entry_unlink_free(ra, ra->list);
    pthread_cond_destroy(&ra->work);
    pthread_cond_destroy(&ra->done);
    pthread_mutex_destroy(&ra->mu);
    free(ra);
}
