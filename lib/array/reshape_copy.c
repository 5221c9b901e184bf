/* The copy of an offline grow: windows of whole units of new rows (one or
 * more new stripes each: reshape_geom.h), each read from the old geometry
 * (the old rows it spans, on every old member) and written whole in the new
 * one (data, then P and Q computed from it), with the position recorded as
 * reshape_next() says. Old and new chunks may differ: data moves in pieces
 * of the smaller chunk.
 *
 * Why a kill -9 (or a power cut) at any instant loses nothing. Let P be the
 * position in the superblocks on disk (during a superblock update some
 * members may say the previous P' < P: both satisfy what follows).
 *   - A restart (uraid or md) reads the array below P in the new geometry
 *     and from P on in the old one, and redoes the windows from P.
 *   - The new geometry below P was written and flushed before any
 *     superblock said P (grow_checkpoint flushes every member first), and
 *     the windows after P write only new stripes at or past P: new rows
 *     from row(P) on, never below.
 *   - The old geometry from P on lives in old rows >= safe(P) =
 *     reshape_old_safe_row(P). A window is only issued when its new rows end
 *     at or below safe(P) + shift (reshape_window), and new row x is disk
 *     sector new_off + x = old_off + x - shift: so every write since P
 *     lands below old_off + safe(P), on old rows that hold only array
 *     sectors below P (and parity of stripes below P), which no restart
 *     reads. Writes may land in any order and any subset: none of them
 *     touches a sector a restart from P or P' reads.
 *   - A window reads all its old rows before writing, and its old rows are
 *     >= safe(pos) >= safe(P): not yet overwritten by this run either.
 *   - The tail past the old array's end is written as zeros with their
 *     parity, as md does, so the new space checks clean.
 * Backwards (reshape_geom.h) the same holds mirrored: a restart reads the
 * new geometry from P up and the old one below; the windows run from P
 * down and write new rows at old row + shift, never below old row
 * reshape_old_safe_end(P) (reshape_back_floor), so none lands where the
 * old geometry below P lives; the old rows a window reads end at or below
 * reshape_old_safe_end(pos), under the rows written since.
 * tests/unit/test_reshape_geom.c replays this order on a model and checks
 * every write against what a restart would read. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array/reshape.h"
#include "io/engine.h"
#include "log.h"
#include "uraid_parity.h"

#define WINDOW_BYTES (4u << 20) /* per member and window */
#define WINDOW_MAX_STRIPES 256


static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void grow_bufs_free(struct grow_bufs *b)
{
    for (int m = 0; m < URAID_MAX_MEMBERS; m++) {
        free(b->old[m]);
        free(b->new[m]);
        free(b->ahead[m]);
    }
    free(b->zero);
    if (b->io)
        io_engine_destroy(b->io);
}

int grow_bufs_alloc(const struct reshape_geom *g, struct grow_bufs *b, int with_ahead)
{
    size_t ub = (size_t)g->unit * SECTOR, cb = (size_t)g->to.chunk_sectors * SECTOR;
    b->max_stripes = WINDOW_BYTES / ub ? WINDOW_BYTES / ub : 1;
    if (b->max_stripes > WINDOW_MAX_STRIPES)
        b->max_stripes = WINDOW_MAX_STRIPES;
    /* old rows a window spans: its data over from_k per row, plus the partial old units at both ends */
    size_t old_units = (size_t)(b->max_stripes * (uint64_t)g->to_k / (uint64_t)g->from_k + 2);
    for (int m = 0; m < g->from.raid_disks; m++)
        if (!(b->old[m] = aligned_alloc(4096, old_units * ub)) ||
            (with_ahead && !(b->ahead[m] = aligned_alloc(4096, old_units * ub))))
            return -ENOMEM;
    for (int m = 0; m < g->to.raid_disks; m++)
        if (!(b->new[m] = aligned_alloc(4096, (size_t)b->max_stripes * ub)))
            return -ENOMEM;
    if (!(b->zero = aligned_alloc(4096, cb)))
        return -ENOMEM;
    memset(b->zero, 0, cb);
    struct io_engine_params ep = {.workers = 2 * g->to.raid_disks, .use_uring = 1};
    return io_engine_create(&ep, &b->io);
}

/* One I/O on every member left of a window at once (engine: threads or
 * io_uring), op i on slot slot[i]. A member that fails is lost
 * (reshape_fail.c): -EAGAIN when every failure was borne (the window is
 * done again, degraded), else the error with why set. */
static int run_all(struct grow *gr, struct grow_bufs *b, struct io_op *ops, const int *slot, int n, const char *what)
{
    int rc = io_engine_run(b->io, ops, n), again = 0;
    for (int i = 0; rc && i < n; i++) {
        if (!ops[i].result)
            continue;
        int lrc = grow_lose(gr, slot[i], ops[i].result, what);
        if (lrc)
            return lrc;
        again = 1;
    }
    return again ? -EAGAIN : rc;
}

/* 1 when an old member is gone (lost before or during the reshape). */
static int old_gone(const struct grow *gr)
{
    for (int m = 0; m < gr->g.from.raid_disks; m++)
        if (!grow_dev(gr, m))
            return 1;
    return 0;
}

/* The reads of old rows [r0, r1) into bufs (each at its row's place) on
 * every old member left, in *ops (their slots in *slots; free both): the
 * data chunks only, unless a member is gone, whose part is rebuilt from
 * the others' data and parity. The old parity is otherwise not read: the
 * new stripes' parity is computed from the data (md's reshape reads only
 * the data blocks too), and a RAID-5 of n members reads n/(n-1) less.
 * The number of reads, or -ENOMEM. */
static int old_reads(struct grow *gr, uint8_t **bufs, uint64_t r0, uint64_t r1, struct io_op **opsp, int **slotp)
{
    const struct layout_geom *from = &gr->g.from;
    int n = from->raid_disks, nops = 0, rc = 0, parity = old_gone(gr) || grow_old_bad(gr, r0, r1);
    uint32_t c = from->chunk_sectors;
    uint64_t s0 = r0 / c, s1 = (r1 + c - 1) / c;
    struct io_op *ops = calloc((size_t)n * (size_t)(s1 - s0 + 1), sizeof *ops);
    int *slot = calloc((size_t)n * (size_t)(s1 - s0 + 1), sizeof *slot);
    if (!ops || !slot)
        rc = -ENOMEM;
    for (int m = 0; rc == 0 && m < n; m++) {
        if (!grow_dev(gr, m))
            continue;
        uint64_t lo = r0, hi = r0; /* the extent being gathered: [lo, hi) */
        for (uint64_t st = s0; rc == 0 && st <= s1; st++) {
            uint64_t a = st * c > r0 ? st * c : r0, e = (st + 1) * c < r1 ? (st + 1) * c : r1;
            struct stripe_map sm;
            /* rows a member lists bad are not read: they are rebuilt (grow_rebuild_old) */
            int wanted = st < s1 && (rc = layout_stripe(from, st, &sm)) == 0 && (parity || sm.disk_role[m] >= 0) &&
                         !grow_bad(gr, m, gr->old_off + a, e - a);
            if (wanted && a == hi) {
                hi = e;
                continue;
            }
            if (hi > lo) {
                ops[nops] = (struct io_op){.m = grow_dev(gr, m), .kind = IO_READ, .buf = bufs[m] + (lo - r0) * SECTOR,
                                           .len = (size_t)(hi - lo) * SECTOR, .offset = (gr->old_off + lo) * SECTOR};
                slot[nops++] = m;
            }
            lo = a, hi = wanted ? e : a;
        }
    }
    if (rc) {
        free(ops);
        free(slot);
        return rc;
    }
    *opsp = ops, *slotp = slot;
    return nops;
}

/* Reads old rows [r0, r1) of every old member left into b->old, the lost
 * ones' rebuilt from the others. */
static int read_old(struct grow *gr, struct grow_bufs *b, uint64_t r0, uint64_t r1)
{
    struct io_op *ops;
    int *slot, n = old_reads(gr, b->old, r0, r1, &ops, &slot), rc = n < 0 ? n : 0;
    if (n < 0)
        return uraid_why(gr->why, gr->whylen, "cannot read the old stripes: %s", uraid_strerror(n)), n;
    rc = run_all(gr, b, ops, slot, n, "reading the old stripes");
    free(ops);
    free(slot);
    if (rc == 0 && (rc = grow_rebuild_old(gr, b, r0, r1)) != 0)
        uraid_why(gr->why, gr->whylen, "old rows %llu-%llu: cannot rebuild the lost members' part: %s",
                  (unsigned long long)r0, (unsigned long long)r1, uraid_strerror(rc));
    return rc;
}

/* The old rows [*r0, *r1) that the w units at pos are made of (none past
 * the old data). */
static void window_rows(const struct reshape_geom *g, uint64_t pos, uint64_t w, uint64_t *r0, uint64_t *r1)
{
    uint64_t u = g->unit, osd = (uint64_t)g->from_k * u, old_total = reshape_from_sectors(g);
    uint64_t end = pos + w * reshape_stripe_data(g);
    *r0 = *r1 = 0;
    if (pos < old_total) {
        uint64_t e = end < old_total ? end : old_total;
        *r0 = pos / osd * u;
        *r1 = (e + osd - 1) / osd * u;
    }
}

/* The window's old rows in b->old, from the read-ahead when it holds them
 * (the buffers swap), else read now; *base is the row b->old starts at. */
static int window_read(struct grow *gr, struct grow_bufs *b, uint64_t pos, uint64_t w, uint64_t *base)
{
    uint64_t r0, r1;
    window_rows(&gr->g, pos, w, &r0, &r1);
    *base = r0;
    if (r0 == r1)
        return 0;
    if (!old_gone(gr) && !grow_old_bad(gr, r0, r1) && b->ahead_r0 <= r0 && r1 <= b->ahead_r1) {
        for (int m = 0; m < gr->g.from.raid_disks; m++) {
            uint8_t *t = b->old[m];
            b->old[m] = b->ahead[m];
            b->ahead[m] = t;
        }
        *base = b->ahead_r0;
        b->ahead_r0 = b->ahead_r1 = 0;
        return 0;
    }
    return read_old(gr, b, r0, r1);
}

/* New stripe t (at byte off of the window's buffers): data from the old rows
 * starting at r0, in pieces of the smaller chunk; P and Q from the data. */
static int build_stripe(struct grow *gr, struct grow_bufs *b, uint64_t t, size_t off, uint64_t r0)
{
    const struct reshape_geom *g = &gr->g;
    uint32_t c = g->to.chunk_sectors, piece = c < g->from.chunk_sectors ? c : g->from.chunk_sectors;
    size_t cb = (size_t)c * SECTOR;
    uint64_t old_total = reshape_from_sectors(g);
    struct stripe_map sm;
    int rc = layout_stripe(&g->to, t, &sm);
    for (int d = 0; rc == 0 && d < g->to_k; d++) {
        uint64_t x0 = (t * (uint64_t)g->to_k + (uint64_t)d) * c;
        uint8_t *dst = b->new[sm.data_disk[d]] + off;
        for (uint32_t o = 0; rc == 0 && o < c; o += piece) {
            struct layout_addr ad;
            uint64_t x = x0 + o;
            if (x >= old_total)
                memset(dst + (size_t)o * SECTOR, 0, (size_t)piece * SECTOR); /* past the old data: zeros, as md's
                                                                              * reshape writes them */
            else if ((rc = layout_map(&g->from, x, &ad)) == 0)
                memcpy(dst + (size_t)o * SECTOR, b->old[ad.disk] + (size_t)(ad.member_sector - r0) * SECTOR,
                       (size_t)piece * SECTOR);
        }
    }
    if (rc)
        return rc;
    const void *data[LAYOUT_MAX_DISKS];
    for (int j = 0; j < sm.nslots; j++)
        data[j] = sm.slot_disk[j] >= 0 ? b->new[sm.slot_disk[j]] + off : b->zero;
    if (g->to.level == 6)
        return uraid_gen_pq(sm.nslots, cb, data, b->new[sm.p_disk] + off, b->new[sm.q_disk] + off);
    return uraid_gen_p(sm.nslots, cb, data, b->new[sm.p_disk] + off);
}

/* Units [pos / stripe_data, + w) built from the old rows in b->old (which
 * start at row base) and written; -EAGAIN when a member was lost on the
 * way (the window is to be done again). */
static int window_write(struct grow *gr, struct grow_bufs *b, uint64_t pos, uint64_t w, uint64_t base)
{
    const struct reshape_geom *g = &gr->g;
    uint32_t u = g->unit, c = g->to.chunk_sectors;
    uint64_t t0 = pos / reshape_stripe_data(g);
    uint64_t s0 = t0 * u / c, s1 = (t0 + w) * u / c; /* the new stripes of these units */
    for (uint64_t s = s0; s < s1; s++) {
        int rc = build_stripe(gr, b, s, (size_t)(s - s0) * c * SECTOR, base);
        if (rc)
            return uraid_why(gr->why, gr->whylen, "stripe %llu: %s", (unsigned long long)s, uraid_strerror(rc)), rc;
    }
    uint64_t at = reshape_new_off(g, gr->old_off) + t0 * u; /* the new data offset + the new row */
    struct io_op ops[URAID_MAX_MEMBERS];
    int slot[URAID_MAX_MEMBERS], n = 0;
    for (int s = 0; s < g->to.raid_disks; s++)
        if (grow_dev(gr, s)) {
            slot[n] = s;
            ops[n++] = (struct io_op){.m = grow_dev(gr, s), .kind = IO_WRITE, .buf = b->new[s],
                                      .len = (size_t)(w * u) * SECTOR, .offset = at * SECTOR};
        }
    int rc = run_all(gr, b, ops, slot, n, "writing the new stripes");
    if (rc == 0)
        grow_bad_written(gr, at, w * u);
    return rc;
}

/* The copy's read-ahead: while a window is built and written, a thread
 * reads the old rows of the window after it, as large as a checkpoint
 * would allow. Safe at any moment against the copy's own writes: the rows
 * a window reads depend only on its position, and lie where no write since
 * the recorded position lands (the file comment), the next window's
 * included. A guess that does not cover the next window (a stop, an error)
 * is dropped. A served array's users may write those rows before the job
 * takes the next window: gr->ahead has the array watch them first, and
 * the job drops the guess when one did (reshape_job.c's rs_step). The
 * reads are planned in the copy's thread (old_reads looks at gr->gone,
 * which a loss in window_write changes); the thread only runs them. */
struct read_ahead {
    pthread_t thread;
    int running, rc, n;
    struct io_engine *io;
    struct io_op *ops;
    int *slot;
    uint64_t r0, r1;
};

/* A failed read only drops the guess: the window's own read then meets
 * the error and loses the member (run_all), in the copy's thread. */
static void *read_ahead_run(void *arg)
{
    struct read_ahead *ra = arg;
    ra->rc = io_engine_run(ra->io, ra->ops, ra->n);
    for (int i = 0; i < ra->n; i++)
        if (ra->ops[i].result)
            ra->rc = ra->ops[i].result;
    return NULL;
}

/* Starts reading the window after the w units at start. */
static void read_ahead_start(struct read_ahead *ra, struct grow *gr, struct grow_bufs *b, uint64_t start, uint64_t w)
{
    const struct reshape_geom *g = &gr->g;
    uint64_t sd = reshape_stripe_data(g), next = g->backwards ? start : start + w * sd, nw;
    *ra = (struct read_ahead){.io = b->io};
    b->ahead_r0 = b->ahead_r1 = 0;
    if (!b->ahead[0] || old_gone(gr) || reshape_next(g, next, next, b->max_stripes, &nw) != RESHAPE_COPY)
        return;
    if (nw > w) /* no bigger than this one: on slow members a large guess delays this window's writes */
        nw = w;
    uint64_t lo = g->backwards ? next - nw * sd : next;
    window_rows(g, lo, nw, &ra->r0, &ra->r1);
    if (ra->r0 == ra->r1)
        return;
    if (gr->ahead) /* before the reads go out: a user write from now on is seen */
        gr->ahead(gr->ahead_ctx, lo, lo + nw * sd);
    ra->n = old_reads(gr, b->ahead, ra->r0, ra->r1, &ra->ops, &ra->slot);
    if (ra->n >= 0 && pthread_create(&ra->thread, NULL, read_ahead_run, ra) == 0)
        ra->running = 1;
}

static void read_ahead_finish(struct read_ahead *ra, struct grow_bufs *b)
{
    if (ra->running) {
        pthread_join(ra->thread, NULL);
        if (ra->rc == 0)
            b->ahead_r0 = ra->r0, b->ahead_r1 = ra->r1;
    }
    free(ra->ops); /* NULL when no read was planned */
    free(ra->slot);
}

/* Units [pos / stripe_data, + w): read, build, write, with the next
 * window read meanwhile when b has read-ahead buffers; -EAGAIN when a
 * member was lost on the way. */
static int copy_window_once(struct grow *gr, struct grow_bufs *b, uint64_t pos, uint64_t w)
{
    struct read_ahead ra;
    uint64_t base;
    int rc = window_read(gr, b, pos, w, &base);
    if (rc)
        return rc;
    read_ahead_start(&ra, gr, b, pos, w);
    rc = window_write(gr, b, pos, w, base);
    read_ahead_finish(&ra, b);
    return rc;
}

int grow_copy_window(struct grow *gr, struct grow_bufs *b, uint64_t pos, uint64_t w)
{
    int rc;
    /* each round loses a member or ends: at most one round per member */
    for (int round = 0; (rc = copy_window_once(gr, b, pos, w)) == -EAGAIN && round <= URAID_MAX_MEMBERS; round++)
        ;
    return rc == -EAGAIN ? -EIO : rc;
}

int grow_copy(struct grow *gr)
{
    struct grow_bufs b = {0};
    int rc = grow_bufs_alloc(&gr->g, &b, 1);
    if (rc)
        uraid_why(gr->why, gr->whylen, "cannot set up the reshape's buffers and I/O: %s", uraid_strerror(rc));
    uint64_t every = gr->p->checkpoint_ms ? gr->p->checkpoint_ms : 1000, last = now_ms();
    uint64_t sd = reshape_stripe_data(&gr->g), total = reshape_to_sectors(&gr->g);
    int back = gr->g.backwards;
    while (rc == 0) {
        if (gr->p->stop && *gr->p->stop) {
            rc = gr->pos != gr->ckpt ? grow_checkpoint(gr, gr->pos) : 0;
            if (rc == 0)
                rc = -EINTR, uraid_why(gr->why, gr->whylen, "stopped at array sector %llu of %llu (recorded on every "
                                       "member): run the same grow again to continue",
                                       (unsigned long long)gr->pos, (unsigned long long)total);
            break;
        }
        uint64_t w;
        enum reshape_move mv = reshape_next(&gr->g, gr->pos, gr->ckpt, b.max_stripes, &w);
        if (mv == RESHAPE_DONE)
            break;
        if (mv == RESHAPE_CHECKPOINT && gr->pos == gr->ckpt) {
            rc = -EINVAL; /* reshape_geom_init keeps shift >= one chunk, so this cannot happen */
            uraid_why(gr->why, gr->whylen, "the reshape cannot move past array sector %llu", (unsigned long long)gr->pos);
            break;
        }
        if (mv == RESHAPE_CHECKPOINT || (now_ms() - last >= every && gr->pos != gr->ckpt)) {
            rc = grow_checkpoint(gr, gr->pos);
            last = now_ms();
            continue;
        }
        /* backwards the window ends at pos: its units lie below */
        rc = grow_copy_window(gr, &b, back ? gr->pos - w * sd : gr->pos, w);
        if (rc == 0) {
            gr->pos = back ? gr->pos - w * sd : gr->pos + w * sd;
            if (gr->p->progress)
                gr->p->progress(gr->p->ctx, back ? total - gr->pos : gr->pos, total);
        }
    }
    grow_bufs_free(&b);
    return rc;
}
