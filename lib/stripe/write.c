/* A group of stripes written, the one way every stripe is written: user
 * writes (rw.c) and resync both plan each stripe (stripe.c's choice:
 * full-stripe with no reads, read-modify-write or reconstruct-write by the
 * fewest member reads, a rebuild first when neither can run), then issue
 * all the group's reads as one batch, compute parity (blocks the write
 * covers whole are used in place from the caller's buffer), and issue all
 * writes as one batch. A failed read turns its stripe into a rebuild; a
 * member that fails a write is marked faulty (the level's redundancy
 * permitting), and a failed rewrite of rows that could not be read goes to
 * the member's bad-block log instead.
 *
 * States of one stripe in a group: PLANNED (plan_write / plan_resync)
 *   --write_group: reads issued--> READ --rebuild if a read failed or the
 *   plan said so--> COMPUTED (overlay, compute_parity) --writes issued-->
 *   WRITTEN. The group's stripe locks are held throughout and the seqlock
 *   count is odd between the first and the last member write. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"
#include "stripe/cache.h"
#include "stripe/gather.h"
#include "stripe/ppl.h"

/* Upper bound on the bytes of member buffers one write group uses; a
 * group is also at most MAX_GROUP stripes. */
#define WRITE_GROUP_BYTES (32u << 20)
#define MAX_GROUP 64

/* ---- writes -------------------------------------------------------------------------- */

/* Why a member's rebuilt rows are written back whole. */
enum rewrite { REWRITE_NONE = 0, REWRITE_LISTED, REWRITE_READ_ERROR };

struct wstripe {
    struct stripe_rows r;
    uint64_t r0, r1;                       /* written sectors, relative to the stripe's data start */
    const uint8_t *src;                    /* user data for array sector (stripe start + r0) */
    enum write_method method;
    unsigned char written[URAID_MAX_MEMBERS], covered[URAID_MAX_MEMBERS]; /* by data index */
    unsigned char rewrite[URAID_MAX_MEMBERS]; /* by member: rebuilt rows written back whole (enum rewrite) */
    uint8_t *old[URAID_MAX_MEMBERS];       /* RMW: old contents of written blocks, by data index */
    uint8_t *pscratch, *qscratch, *zero;   /* parity targets for missing P/Q; DDF zero slot */
};

/* Plans one stripe: rows, coverage, method. */
static int plan_write(struct uraid_array *a, struct wstripe *w)
{
    uint32_t c = a->geom.chunk_sectors;
    uint32_t d0 = (uint32_t)(w->r0 / c), d1 = (uint32_t)((w->r1 - 1) / c);
    w->r.row = d0 == d1 ? (uint32_t)(w->r0 % c) : 0;
    uint32_t row_end = d0 == d1 ? (uint32_t)((w->r1 - 1) % c + 1) : c;
    w->r.nrows = row_end - w->r.row;
    int rc = layout_stripe(&a->geom, w->r.stripe, &w->r.map);
    if (rc)
        return rc;
    rows_mark_unavailable(a, &w->r);
    for (int d = 0; d < a->k; d++) {
        uint64_t lo = (uint64_t)d * c + w->r.row, hi = (uint64_t)d * c + row_end;
        w->written[d] = w->r0 < hi && w->r1 > lo;
        w->covered[d] = w->r0 <= lo && w->r1 >= hi;
    }
    struct write_choice_in in = {
        .n = a->geom.raid_disks, .k = a->k, .nparity = a->nparity, .map = &w->r.map,
        .written = w->written, .covered = w->covered, .unavailable = w->r.unavailable,
        .rmw_level = __atomic_load_n(&a->rmw_level, __ATOMIC_RELAXED),
    };
    unsigned char cached[URAID_MAX_MEMBERS];
    stripe_cache_known(stripe_cache_of(a), a, &w->r, cached);
    in.cached = cached;
    int reads;
    w->method = write_choose(&in, &reads);
    memset(w->rewrite, 0, sizeof w->rewrite);
    /* An unavailable member is either not in sync here (the stripe is then
     * written degraded: a failed member's old chunk of it goes stale) or
     * working with rows listed bad (rebuilt and written whole, which takes
     * them off its bad-block log). */
    uint64_t msec = w->r.stripe * c + w->r.row;
    /* a full-stripe write knows every block: a member whose rows are only
     * listed bad gets them whole (md writes a block it holds up to date),
     * which takes them off its list; else they would stay lost */
    for (int m = 0; m < a->geom.raid_disks && w->method == WRITE_FULL; m++)
        if (w->r.unavailable[m] && slot_ok_upto(a, m, msec + w->r.nrows)) {
            w->r.unavailable[m] = 0;
            w->rewrite[m] = REWRITE_LISTED;
        }
    int lost = 0, listed = 0, degraded = 0;
    for (int m = 0; m < a->geom.raid_disks; m++) {
        if (!w->r.unavailable[m])
            continue;
        lost++;
        if (slot_ok_upto(a, m, msec + w->r.nrows))
            listed = 1;
        else
            degraded = 1;
    }
    if (degraded)
        array_note_degraded_write(a, w->r.stripe);
    if (listed && lost <= a->nparity)
        w->method = WRITE_REBUILD;
    return 0;
}

/* Bytes of member buffers a planned stripe needs. */
static size_t wstripe_bytes(const struct uraid_array *a, const struct wstripe *w)
{
    size_t len = (size_t)w->r.nrows * SECTOR;
    return (size_t)(a->geom.raid_disks + a->k + 3) * len;
}

static void wstripe_buffers(struct uraid_array *a, struct wstripe *w, uint8_t *mem)
{
    size_t len = (size_t)w->r.nrows * SECTOR;
    for (int m = 0; m < a->geom.raid_disks; m++)
        w->r.block[m] = mem + (size_t)m * len;
    mem += (size_t)a->geom.raid_disks * len;
    for (int d = 0; d < a->k; d++)
        w->old[d] = mem + (size_t)d * len;
    mem += (size_t)a->k * len;
    w->pscratch = mem;
    w->qscratch = mem + len;
    w->zero = mem + 2 * len;
    /* only DDF layouts feed zero blocks to the parity engine: zeroing a
     * chunk per stripe otherwise costs a tenth of a full-stripe write */
    if (w->r.map.nslots != a->k)
        memset(w->zero, 0, len);
}

/* The member reads a planned stripe needs, appended to ops. */
static void add_write_reads(struct uraid_array *a, struct wstripe *w, struct io_op *ops, int *nops, int *owner,
                            int self)
{
    const struct stripe_map *map = &w->r.map;
    struct stripe_cache *cache = stripe_cache_of(a);
    uint64_t msec = w->r.stripe * a->geom.chunk_sectors + w->r.row;
    int parity = (map->p_disk >= 0 && !w->r.unavailable[map->p_disk]) ||
                 (map->q_disk >= 0 && !w->r.unavailable[map->q_disk]);
    for (int d = 0; d < a->k; d++) {
        int m = map->data_disk[d];
        void *dst = NULL;
        if (w->method == WRITE_RMW && w->written[d])
            dst = w->old[d];
        else if (w->method == WRITE_RCW && !w->covered[d] && !w->r.unavailable[m] && (w->written[d] || parity))
            dst = w->r.block[m]; /* without parity to compute, only partly written blocks are read */
        if (dst && !stripe_cache_read(cache, a, &w->r, m, dst)) {
            owner[*nops] = self;
            ops[(*nops)++] = array_op(a, m, IO_READ, dst, w->r.nrows, msec);
        }
    }
    if (w->method == WRITE_RMW) {
        int par[2] = {map->p_disk, map->q_disk};
        for (int i = 0; i < a->nparity; i++)
            if (par[i] >= 0 && !w->r.unavailable[par[i]] && !stripe_cache_read(cache, a, &w->r, par[i], w->r.block[par[i]])) {
                owner[*nops] = self;
                ops[(*nops)++] = array_op(a, par[i], IO_READ, w->r.block[par[i]], w->r.nrows, msec);
            }
    }
}

/* The new contents of data index d's rows: old (or zeros) overlaid with the
 * user's data, in w->r.block. For RMW the old rows are in w->old[d]. A
 * block the write covers whole is not copied: its buffer pointer is moved
 * to the user's data, which parity and the member write then read in place
 * (this runs after any rebuild, so nothing writes through that pointer). */
static void overlay(struct uraid_array *a, struct wstripe *w)
{
    uint32_t c = a->geom.chunk_sectors;
    size_t len = (size_t)w->r.nrows * SECTOR;
    for (int d = 0; d < a->k; d++) {
        if (!w->written[d])
            continue;
        int m = w->r.map.data_disk[d];
        uint64_t lo = (uint64_t)d * c + w->r.row, hi = lo + w->r.nrows;
        if (w->covered[d]) {
            w->r.block[m] = (uint8_t *)(uintptr_t)(w->src + (lo - w->r0) * SECTOR);
            continue;
        }
        uint8_t *blk = w->r.block[m];
        if (w->method == WRITE_RMW)
            memcpy(blk, w->old[d], len);
        uint64_t s0 = w->r0 > lo ? w->r0 : lo, s1 = w->r1 < hi ? w->r1 : hi;
        memcpy(blk + (s0 - lo) * SECTOR, w->src + (s0 - w->r0) * SECTOR, (size_t)(s1 - s0) * SECTOR);
    }
}

static int compute_parity(struct uraid_array *a, struct wstripe *w)
{
    const struct stripe_map *map = &w->r.map;
    size_t len = (size_t)w->r.nrows * SECTOR;
    if (a->nparity == 0)
        return 0;
    uint8_t *p = w->r.unavailable[map->p_disk] ? w->pscratch : w->r.block[map->p_disk];
    uint8_t *q = a->nparity == 2 ? (w->r.unavailable[map->q_disk] ? w->qscratch : w->r.block[map->q_disk]) : NULL;
    if (w->method == WRITE_RMW) {
        int slots[URAID_PARITY_MAX_K], n = 0;
        const void *olds[URAID_PARITY_MAX_K], *news[URAID_PARITY_MAX_K];
        /* rmw takes slots in increasing Q-slot order */
        for (int j = 0; j < map->nslots; j++) {
            int m = map->slot_disk[j];
            if (m < 0 || map->disk_role[m] < 0 || !w->written[map->disk_role[m]])
                continue;
            int d = map->disk_role[m];
            slots[n] = j;
            olds[n] = w->old[d];
            news[n] = w->r.block[m];
            n++;
        }
        return uraid_rmw(n, slots, len, olds, news, p, q);
    }
    const void *src[URAID_PARITY_MAX_K];
    for (int j = 0; j < map->nslots; j++)
        src[j] = map->slot_disk[j] < 0 ? w->zero : w->r.block[map->slot_disk[j]];
    return q ? uraid_gen_pq(map->nslots, len, src, p, q) : uraid_gen_p(map->nslots, len, src, p);
}

static void add_writes(struct uraid_array *a, struct wstripe *w, struct io_op *ops, int *nops, int *owner, int self)
{
    const struct stripe_map *map = &w->r.map;
    uint64_t msec = w->r.stripe * a->geom.chunk_sectors + w->r.row;
    for (int d = 0; d < a->k; d++) {
        int m = map->data_disk[d];
        if ((w->written[d] || w->rewrite[m]) && !w->r.unavailable[m]) {
            owner[*nops] = self;
            ops[(*nops)++] = array_op(a, m, IO_WRITE, w->r.block[m], w->r.nrows, msec);
        }
    }
    int par[2] = {map->p_disk, map->q_disk};
    for (int i = 0; i < a->nparity; i++)
        if (par[i] >= 0 && !w->r.unavailable[par[i]]) {
            owner[*nops] = self;
            ops[(*nops)++] = array_op(a, par[i], IO_WRITE, w->r.block[par[i]], w->r.nrows, msec);
        }
}

static void count_method(struct uraid_array *a, enum write_method m)
{
    uint64_t *c = m == WRITE_FULL  ? &a->counters.writes_full_stripe
                  : m == WRITE_RMW ? &a->counters.writes_rmw
                  : m == WRITE_RCW ? &a->counters.writes_rcw
                                   : &a->counters.writes_degraded;
    __atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/* A stripe whose reads failed, or that the plan could not serve: every
 * block gathered (read or rebuilt), then written as a reconstruct-write.
 * Members whose reads failed, or whose rows are listed bad, get their whole
 * new rows, which corrects them. */
static int rebuild_for_write(struct uraid_array *a, struct wstripe *w)
{
    rows_mark_unavailable(a, &w->r);
    unsigned char failed[URAID_MAX_MEMBERS] = {0};
    int rc = rows_rebuild_any(a, &w->r, w->zero, failed, NULL);
    if (rc) {
        rows_log_unrecoverable(a, w->r.stripe, w->r.row, w->r.nrows);
        return rc;
    }
    uint64_t msec = w->r.stripe * a->geom.chunk_sectors + w->r.row;
    for (int m = 0; m < a->geom.raid_disks; m++)
        if ((failed[m] || (w->r.unavailable[m] && slot_has_bad(&a->slot[m], msec, w->r.nrows))) &&
            slot_ok_upto(a, m, msec + w->r.nrows)) {
            w->r.unavailable[m] = 0;
            w->rewrite[m] = failed[m] ? REWRITE_READ_ERROR : REWRITE_LISTED;
        }
    w->method = WRITE_RCW;
    return 0;
}

/* The group's reads as one batch; a failed read turns its stripe into a
 * rebuild. */
static void group_reads(struct uraid_array *a, struct wstripe *ws, int nw, struct io_op *ops, int *owner)
{
    int nops = 0;
    for (int i = 0; i < nw; i++)
        if (ws[i].method != WRITE_REBUILD)
            add_write_reads(a, &ws[i], ops, &nops, owner, i);
    array_run_ops(a, ops, nops);
    for (int i = 0; i < nops; i++)
        if (ops[i].result) {
            uraid_log(URAID_LOG_WARN, "member %s: read error at sector %llu (%s) during a write; rebuilding the stripe",
                      ops[i].m->path, (unsigned long long)(ops[i].offset / SECTOR), uraid_strerror(ops[i].result));
            ws[owner[i]].method = WRITE_REBUILD;
        }
}

/* Each stripe's new blocks and parity; user writes count their method. */
static int group_compute(struct uraid_array *a, struct wstripe *ws, int nw, int user)
{
    int rc = 0;
    for (int i = 0; i < nw && rc == 0; i++) {
        struct wstripe *w = &ws[i];
        enum write_method planned = w->method;
        if (planned == WRITE_REBUILD && (rc = rebuild_for_write(a, w)) != 0)
            break;
        if (user)
            count_method(a, planned);
        overlay(a, w);
        rc = compute_parity(a, w);
    }
    return rc;
}

/* Each partial stripe of the group whose writes all succeeded, in the
 * stripe cache: the blocks the write knew whole. Full-stripe writes are
 * left out (nothing of theirs is read again). */
static void cache_group(struct uraid_array *a, struct wstripe *ws, int nw, const struct io_op *ops,
                        const int *owner, int nops)
{
    struct stripe_cache *c = stripe_cache_of(a);
    for (int i = 0; c && i < nw; i++) {
        struct wstripe *w = &ws[i];
        const struct stripe_map *map = &w->r.map;
        int failed = 0;
        for (int j = 0; j < nops; j++)
            failed |= owner[j] == i && ops[j].result != 0;
        if (failed || w->method == WRITE_FULL)
            continue;
        int parity = (map->p_disk >= 0 && !w->r.unavailable[map->p_disk]) ||
                     (map->q_disk >= 0 && !w->r.unavailable[map->q_disk]);
        unsigned char known[URAID_MAX_MEMBERS] = {0};
        for (int d = 0; d < a->k; d++) {
            int m = map->data_disk[d];
            /* reconstruct-write read every block it did not write (when
             * there was parity to compute); read-modify-write knows only
             * the blocks it wrote */
            known[m] = !w->r.unavailable[m] && (w->written[d] || (w->method == WRITE_RCW && parity));
        }
        if (map->p_disk >= 0)
            known[map->p_disk] = !w->r.unavailable[map->p_disk];
        if (map->q_disk >= 0)
            known[map->q_disk] = !w->r.unavailable[map->q_disk];
        stripe_cache_store(c, a, &w->r, known, stripe_gen(&a->locks, w->r.stripe) + 1);
    }
}

/* The slot member op writes to, or -1 (a replacement's mirrored write). */
static int op_slot(const struct uraid_array *a, const struct io_op *op)
{
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (a->slot[s].dev == op->m)
            return s;
    return -1;
}

/* The group's writes as one batch. A failed rewrite of rows that could not
 * be read is recorded in the bad-block log (md's read-error rule); any
 * other failed write fails the member (the write is still durable if the
 * level can lose it). */
static int group_writes(struct uraid_array *a, struct wstripe *ws, int nw, struct io_op *ops, int *owner)
{
    int rc = 0, nops = 0;
    for (int i = 0; i < nw; i++)
        add_writes(a, &ws[i], ops, &nops, owner, i);
    array_run_ops(a, ops, nops);
    for (int i = 0; i < nops && rc == 0; i++) {
        int m = op_slot(a, &ops[i]);
        if (m < 0)
            continue;
        const struct wstripe *w = &ws[owner[i]];
        uint64_t msec = ops[i].offset / SECTOR - a->slot[m].data_offset;
        uint32_t nsec = (uint32_t)(ops[i].len / SECTOR);
        if (ops[i].result)
            array_note_degraded_write(a, w->r.stripe);
        if (ops[i].result && w->rewrite[m])
            rc = array_write_failed(a, m, &ops[i]);
        else if (ops[i].result)
            rc = array_member_failed(a, m, ops[i].result, "writing");
        else if (w->rewrite[m])
            array_clear_bad(a, m, msec, nsec);
        if (!ops[i].result && w->rewrite[m] == REWRITE_READ_ERROR)
            array_note_corrected_read(a, m);
    }
    if (rc == 0)
        cache_group(a, ws, nw, ops, owner, nops);
    return rc;
}

/* With a PPL, the group's writes go out in units the logs can hold, each
 * unit's log written and flushed first (stripe/ppl.h). */
static int logged_writes(struct uraid_array *a, struct wstripe *ws, int nw, struct io_op *ops, int *owner)
{
    struct ppl_stripe ps[MAX_GROUP];
    for (int i = 0; i < nw; i++)
        ps[i] = (struct ppl_stripe){.stripe = ws[i].r.stripe, .r0 = ws[i].r0, .r1 = ws[i].r1, .r = &ws[i].r};
    int rc = 0;
    for (int i = 0; i < nw && rc == 0;) {
        struct ppl_unit u;
        int n = ppl_begin(a, ps + i, nw - i, &u);
        if (n < 0)
            return n;
        rc = group_writes(a, ws + i, n, ops, owner);
        ppl_end(a, &u);
        i += n;
    }
    return rc;
}

/* Writes a group of planned stripes: reads, parity, writes, each phase as
 * one batch. Called with the group's stripe locks held. */
static int write_group(struct uraid_array *a, struct wstripe *ws, int nw, int user)
{
    int maxops = nw * (a->geom.raid_disks + a->k + 2);
    struct io_op *ops = malloc(sizeof *ops * (size_t)maxops);
    int *owner = malloc(sizeof *owner * (size_t)maxops);
    int rc = ops && owner ? 0 : -ENOMEM;
    if (rc == 0) {
        group_reads(a, ws, nw, ops, owner);
        rc = group_compute(a, ws, nw, user);
    }
    /* resync writes change no data: md logs user writes only */
    if (rc == 0)
        rc = user && a->ppl ? logged_writes(a, ws, nw, ops, owner) : group_writes(a, ws, nw, ops, owner);
    free(ops);
    free(owner);
    return rc;
}

/* Plans stripe w->r.stripe for the caller: 0, 1 to leave it out, or a
 * negative errno. */
typedef int (*plan_fn)(struct uraid_array *a, struct wstripe *w, void *ctx);

/* Stripes [s0, s1) in groups: each group's locks taken, every stripe
 * planned, buffers laid out, the group written. */
static int write_stripes(struct uraid_array *a, uint64_t s0, uint64_t s1, plan_fn plan, void *ctx, int user)
{
    size_t need = (size_t)(a->geom.raid_disks + a->k + 3) * a->geom.chunk_sectors * SECTOR;
    uint64_t per = WRITE_GROUP_BYTES / need;
    per = per < 1 ? 1 : per > MAX_GROUP ? MAX_GROUP : per;
    size_t nplans = s1 - s0 < per ? (size_t)(s1 - s0) : (size_t)per;
    struct wstripe *ws = (struct wstripe *)array_scratch_plans(sizeof *ws * nplans);
    if (!ws)
        return -ENOMEM;
    int rc = 0;
    for (uint64_t s = s0; rc == 0 && s < s1;) {
        int nw = (int)(s1 - s < per ? s1 - s : per), planned = 0;
        uint64_t stripes[MAX_GROUP];
        for (int i = 0; i < nw; i++)
            stripes[i] = s + (uint64_t)i;
        uint16_t held[MAX_GROUP];
        int nheld = stripe_lock_set(&a->locks, stripes, nw, held);
        size_t total = 0;
        for (int i = 0; i < nw && rc >= 0; i++) {
            ws[planned].r.stripe = stripes[i];
            rc = plan(a, &ws[planned], ctx);
            if (rc == 0)
                total += wstripe_bytes(a, &ws[planned++]);
        }
        rc = rc < 0 ? rc : 0;
        uint8_t *mem = rc == 0 && planned ? array_scratch(total) : NULL;
        if (rc == 0 && planned && !mem)
            rc = -ENOMEM;
        if (rc == 0 && planned) {
            for (int i = 0; i < planned; i++) {
                wstripe_buffers(a, &ws[i], mem);
                mem += wstripe_bytes(a, &ws[i]);
            }
            stripe_gen_bump(&a->locks, held, nheld);
            rc = write_group(a, ws, planned, user);
            stripe_gen_bump(&a->locks, held, nheld);
        }
        stripe_unlock_set(&a->locks, held, nheld);
        s += (uint64_t)nw;
    }
    return rc;
}

/* A user write of array sectors [sector, end) from p. */
struct user_write {
    const uint8_t *p;
    uint64_t sector, end;
};

static int plan_user(struct uraid_array *a, struct wstripe *w, void *ctx)
{
    const struct user_write *u = ctx;
    uint64_t ss = (uint64_t)a->k * a->geom.chunk_sectors, base = w->r.stripe * ss;
    uint64_t from = u->sector > base ? u->sector : base, to = u->end < base + ss ? u->end : base + ss;
    w->r0 = from - base;
    w->r1 = to - base;
    w->src = u->p + (from - u->sector) * SECTOR;
    return plan_write(a, w);
}

int array_write_direct(struct uraid_array *a, const uint8_t *p, uint64_t sector, uint64_t end)
{
    uint64_t ss = (uint64_t)a->k * a->geom.chunk_sectors;
    struct user_write u = {.p = p, .sector = sector, .end = end};
    return write_stripes(a, sector / ss, (end - 1) / ss + 1, plan_user, &u, 1);
}

/* Partial stripes of a stream gathered first (gather.c), unless a reshape
 * has changed the stripe since the gather table was made (write_request
 * then settles the open stripes a write touches before it), or this is a
 * kept stripe being written. */
int array_write_striped(struct uraid_array *a, const uint8_t *p, uint64_t sector, uint64_t end)
{
    if (gather_bypassed())
        return array_write_direct(a, p, sector, end);
    struct stripe_gather *g = __atomic_load_n(&a->gather, __ATOMIC_ACQUIRE);
    if (!g && !__atomic_load_n(&a->gather_off, __ATOMIC_RELAXED)) {
        struct stripe_gather *made = gather_create(a), *none = NULL;
        if (!made)
            __atomic_store_n(&a->gather_off, 1, __ATOMIC_RELAXED);
        else if (!__atomic_compare_exchange_n(&a->gather, &none, made, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            gather_destroy(made); /* another writer made it first */
        g = __atomic_load_n(&a->gather, __ATOMIC_ACQUIRE);
    }
    if (g && !a->rs && gather_stripe_sectors(g) == (uint64_t)a->k * a->geom.chunk_sectors)
        return gather_write(a, g, p, sector, end);
    return array_write_direct(a, p, sector, end);
}

/* A resync's stripe: nothing written, parity regenerated from the data
 * (RCW reads every data block); a RAID-6 stripe missing one data block is
 * rebuilt first (from P: one lost block), then Q follows from the data. */
static int plan_resync(struct uraid_array *a, struct wstripe *w, void *ctx)
{
    (void)ctx;
    w->r.row = 0;
    w->r.nrows = a->geom.chunk_sectors;
    int rc = layout_stripe(&a->geom, w->r.stripe, &w->r.map);
    if (rc)
        return rc;
    rows_mark_unavailable(a, &w->r);
    memset(w->written, 0, sizeof w->written);
    memset(w->covered, 0, sizeof w->covered);
    memset(w->rewrite, 0, sizeof w->rewrite);
    w->r0 = w->r1 = 0;
    w->src = NULL;
    int missing_data = 0;
    for (int d = 0; d < a->k; d++)
        missing_data += w->r.unavailable[w->r.map.data_disk[d]];
    if (missing_data == 0) {
        w->method = WRITE_RCW;
        return 0;
    }
    if (a->nparity == 2 && missing_data == 1 && !w->r.unavailable[w->r.map.p_disk] &&
        !w->r.unavailable[w->r.map.q_disk]) {
        w->method = WRITE_REBUILD;
        return 0;
    }
    return 1;
}

int array_resync_range(struct uraid_array *a, uint64_t start, uint32_t nsec)
{
    uint32_t c = a->geom.chunk_sectors;
    return write_stripes(a, start / c, (start + nsec + c - 1) / c, plan_resync, NULL, 0);
}
