/* The data path. A request is mapped to stripes; for each stripe every
 * member read and write is decided before any is issued (stripe.c chooses
 * full-stripe, read-modify-write or reconstruct-write by fewest reads, as md
 * does); all reads of a group of stripes go to the I/O engine together,
 * parity is computed on the buffers, and all writes go out together.
 *
 * Reads of healthy members take no lock (concurrent overlapping reads and
 * writes of a block device have no defined order). Anything that rebuilds
 * from the rest of a stripe, and every write, holds that stripe's lock, so
 * parity is never computed from a half-updated stripe.
 *
 * Faults: a member read that fails is rebuilt from the rest of the stripe
 * and the rebuilt data written back to that member (md's read-error
 * correction, counted in its cnt_corrected_read); a member that fails a
 * write, or has vanished, is marked faulty in the other members'
 * superblocks and the array goes on degraded, as long as the level has
 * redundancy left for it. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"

/* Upper bound on the bytes of member buffers one write group uses; a
 * group is also at most MAX_GROUP stripes. */
#define GROUP_BYTES (32u << 20)
#define MAX_GROUP 64

/* ---- one stripe's rows, one buffer per member --------------------------------- */

void rows_mark_unavailable(struct uraid_array *a, struct stripe_rows *r)
{
    for (int m = 0; m < a->geom.raid_disks; m++)
        r->unavailable[m] =
            !slot_ok_upto(a, m, r->stripe * a->geom.chunk_sectors + r->row + r->nrows) ||
            slot_has_bad(&a->slot[m], r->stripe * a->geom.chunk_sectors + r->row, r->nrows);
}

static int rows_count_unavailable(const struct uraid_array *a, const struct stripe_rows *r)
{
    int lost = 0;
    for (int m = 0; m < a->geom.raid_disks; m++)
        lost += r->unavailable[m];
    return lost;
}

/* Rebuilds every unavailable member's rows from the others (already read
 * into r->block). zero is an all-zero block for DDF's P/Q slots. */
static int rows_rebuild(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero)
{
    const struct stripe_map *map = &r->map;
    int nslots = map->nslots, raid6 = a->nparity == 2;
    void *blocks[URAID_PARITY_MAX_K + 2];
    int lost[2], nlost = 0;
    if (rows_count_unavailable(a, r) > a->nparity)
        return -EIO;
    for (int j = 0; j < nslots; j++) {
        int m = map->slot_disk[j];
        blocks[j] = m < 0 ? zero : r->block[m];
        if (m >= 0 && r->unavailable[m])
            lost[nlost++] = j;
    }
    blocks[nslots] = r->block[map->p_disk];
    if (r->unavailable[map->p_disk])
        lost[nlost++] = nslots;
    if (raid6) {
        blocks[nslots + 1] = r->block[map->q_disk];
        if (r->unavailable[map->q_disk])
            lost[nlost++] = nslots + 1;
    }
    if (nlost == 0)
        return 0;
    return uraid_recover(nslots, (size_t)r->nrows * SECTOR, blocks, raid6, nlost, lost);
}

static int stripe_written_degraded(const struct uraid_array *a, uint64_t stripe)
{
    if (!a->degraded_written || stripe >= a->nstripes)
        return 1;
    return (int)(__atomic_load_n(&a->degraded_written[stripe / 64], __ATOMIC_ACQUIRE) >> (stripe % 64) & 1);
}

void array_note_degraded_write(struct uraid_array *a, uint64_t stripe)
{
    if (a->degraded_written && stripe < a->nstripes)
        __atomic_fetch_or(&a->degraded_written[stripe / 64], 1ull << (stripe % 64), __ATOMIC_ACQ_REL);
}

/* The last resort for a stripe with more blocks lost than the level
 * survives: a failed member's chunk, if the stripe was not written since
 * it failed (md would have given up on the whole member). */
static int rows_rebuild_with_old(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero)
{
    if (stripe_written_degraded(a, r->stripe))
        return -EIO;
    uint64_t msec = r->stripe * a->geom.chunk_sectors + r->row;
    int used = 0;
    for (int m = 0; m < a->geom.raid_disks; m++) {
        const struct array_slot *sl = &a->slot[m];
        if (!r->unavailable[m] || slot_ok_upto(a, m, msec + r->nrows))
            continue;
        enum uraid_member_state st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
        struct member *dev = st == URAID_MEMBER_FAULTY ? sl->dev : st == URAID_MEMBER_REBUILDING ? sl->old_dev : NULL;
        uint64_t base = st == URAID_MEMBER_FAULTY ? sl->data_offset : sl->old_data_offset;
        if (!dev)
            continue;
        struct io_op op = {.m = dev, .kind = IO_READ, .buf = r->block[m], .len = (size_t)r->nrows * SECTOR,
                           .offset = (base + msec) * SECTOR};
        array_run_ops(a, &op, 1);
        if (op.result == 0) {
            r->unavailable[m] = 0;
            used++;
            uraid_log(URAID_LOG_INFO, "stripe %llu: read from failed member %s, whose chunk is still current",
                      (unsigned long long)r->stripe, dev->path);
        }
    }
    return used ? rows_rebuild(a, r, zero) : -EIO;
}

int rows_read_and_rebuild(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero,
                                 unsigned char *failed, const unsigned char *have)
{
    struct io_op ops[URAID_MAX_MEMBERS];
    int nops = 0, who[URAID_MAX_MEMBERS];
    for (int m = 0; m < a->geom.raid_disks; m++) {
        if (r->unavailable[m] || (have && have[m]))
            continue;
        who[nops] = m;
        ops[nops++] = array_op(a, m, IO_READ, r->block[m], r->nrows, r->stripe * a->geom.chunk_sectors + r->row);
    }
    array_run_ops(a, ops, nops);
    for (int i = 0; i < nops; i++)
        if (ops[i].result) {
            r->unavailable[who[i]] = 1;
            if (failed)
                failed[who[i]] = 1;
            uraid_log(URAID_LOG_WARN, "member %s: read error at sector %llu (%s); rebuilding from the other members",
                      a->slot[who[i]].dev->path, (unsigned long long)(ops[i].offset / SECTOR),
                      uraid_strerror(ops[i].result));
        }
    int rc = rows_rebuild(a, r, zero);
    if (rc == -EIO)
        rc = rows_rebuild_with_old(a, r, zero);
    return rc;
}

#define PAGE_ROWS 8u

int rows_rebuild_any(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero, unsigned char *failed,
                     const unsigned char *have)
{
    int rc = rows_read_and_rebuild(a, r, zero, failed, have);
    if (rc != -EIO || r->nrows <= PAGE_ROWS)
        return rc;
    /* errors on several members, in different rows: page by page */
    rc = 0;
    struct stripe_rows *sub = malloc(sizeof *sub);
    if (!sub)
        return -ENOMEM;
    for (uint32_t at = 0; at < r->nrows; at += PAGE_ROWS) {
        *sub = *r;
        sub->row = r->row + at;
        sub->nrows = r->nrows - at < PAGE_ROWS ? r->nrows - at : PAGE_ROWS;
        for (int m = 0; m < a->geom.raid_disks; m++)
            sub->block[m] = r->block[m] + (size_t)at * SECTOR;
        rows_mark_unavailable(a, sub);
        int g = rows_read_and_rebuild(a, sub, zero, failed, NULL);
        if (g && !rc)
            rc = g;
    }
    free(sub);
    return rc;
}

static void log_unrecoverable(struct uraid_array *a, uint64_t stripe, uint32_t row, uint32_t nrows)
{
    uint64_t first = stripe * a->geom.chunk_sectors + row;
    uraid_log(URAID_LOG_ERROR,
              "stripe %llu, member sectors %llu-%llu past data_offset: more blocks unreadable than RAID-%d survives; "
              "those array sectors cannot be read",
              (unsigned long long)stripe, (unsigned long long)first, (unsigned long long)(first + nrows - 1),
              a->geom.level);
}

/* ---- reads ----------------------------------------------------------------------- */

/* Serves one chunk piece by rebuilding it from its stripe (stripe locked). */
struct piece {
    struct layout_addr ad;
    uint32_t nsec;
    uint8_t *buf;
    int op;           /* index of its direct read in the batch, -1 if none */
    uint32_t gen;     /* the stripe's seqlock count before the direct reads */
};

/* The pieces of one read batch: consecutive chunks of the array. */
struct read_batch {
    struct piece *pieces;
    int np;
    const struct io_op *ops;
    uint64_t first_chunk;
};

/* The user-buffer copy of data index d's rows [row, row + nrows) of a stripe,
 * if this batch read them directly, successfully, and no writer has touched
 * the stripe since; else NULL (the rows must be read again under the lock). */
static uint8_t *reusable_rows(struct uraid_array *a, const struct read_batch *rb, uint64_t stripe, int d,
                              uint32_t row, uint32_t nrows)
{
    if (!rb)
        return NULL;
    uint64_t chunk = stripe * (uint64_t)a->k + (uint64_t)d;
    if (chunk < rb->first_chunk || chunk - rb->first_chunk >= (uint64_t)rb->np)
        return NULL;
    const struct piece *pc = &rb->pieces[chunk - rb->first_chunk];
    if (pc->op < 0 || rb->ops[pc->op].result || pc->ad.chunk_off > row ||
        pc->ad.chunk_off + pc->nsec < row + nrows)
        return NULL;
    uint32_t now = stripe_gen(&a->locks, stripe);
    if ((pc->gen & 1) || now != pc->gen)
        return NULL;
    return pc->buf + (size_t)(row - pc->ad.chunk_off) * SECTOR;
}

static int read_rebuild_piece(struct uraid_array *a, uint8_t *buf, const struct layout_addr *ad, uint32_t nsec,
                              int direct_failed, const struct read_batch *rb)
{
    if (a->nparity == 0) {
        log_unrecoverable(a, ad->stripe, ad->chunk_off, nsec);
        return -EIO;
    }
    uint16_t held[1];
    int nheld = stripe_lock_set(&a->locks, &ad->stripe, 1, held);
    int n = a->geom.raid_disks;
    size_t len = (size_t)nsec * SECTOR;
    uint8_t *mem = array_scratch((size_t)(n + 1) * len);
    int rc = mem ? 0 : -ENOMEM;
    struct stripe_rows r = {.stripe = ad->stripe, .row = ad->chunk_off, .nrows = nsec};
    if (rc == 0)
        rc = layout_stripe(&a->geom, ad->stripe, &r.map);
    if (rc == 0) {
        for (int m = 0; m < n; m++)
            r.block[m] = mem + (size_t)m * len;
        uint8_t *zero = mem + (size_t)n * len;
        if (r.map.nslots != a->k)
            memset(zero, 0, len); /* only DDF layouts feed zero blocks to the parity engine */
        rows_mark_unavailable(a, &r);
        r.unavailable[ad->disk] = 1;
        /* data rows this request already read need not be read again */
        unsigned char reused[URAID_MAX_MEMBERS] = {0};
        for (int d = 0; d < a->k; d++) {
            int m = r.map.data_disk[d];
            uint8_t *have = m == ad->disk || r.unavailable[m] ? NULL : reusable_rows(a, rb, ad->stripe, d, r.row, nsec);
            if (have) {
                r.block[m] = have;
                reused[m] = 1;
            }
        }
        unsigned char failed[URAID_MAX_MEMBERS] = {0};
        rc = rows_rebuild_any(a, &r, zero, failed, reused);
        if (rc == 0) {
            memcpy(buf, r.block[ad->disk], len);
            __atomic_add_fetch(&a->counters.reconstructions, 1, __ATOMIC_RELAXED);
            if (direct_failed)
                array_correct_read_error(a, ad->disk, r.block[ad->disk], nsec, ad->member_sector);
            for (int m = 0; m < n; m++)
                if (failed[m])
                    array_correct_read_error(a, m, r.block[m], nsec, r.stripe * a->geom.chunk_sectors + r.row);
        } else {
            log_unrecoverable(a, ad->stripe, ad->chunk_off, nsec);
        }
    }
    stripe_unlock_set(&a->locks, held, nheld);
    return rc;
}

#define READ_BATCH 256

int uraid_read(struct uraid_array *a, void *buf, size_t len, uint64_t offset)
{
    int rc = array_range_ok(a, len, offset);
    if (rc)
        return rc;
    __atomic_add_fetch(&a->user_requests, 1, __ATOMIC_RELAXED);
    uint8_t *p = buf;
    uint64_t sector = offset / SECTOR, end = sector + len / SECTOR;
    if (a->geom.level == 1) {
        /* one mirror per request, round robin, so parallel readers share members */
        return array_read_mirror(a, p, sector, (uint32_t)(end - sector));
    }
    struct piece pieces[READ_BATCH];
    struct io_op ops[READ_BATCH];
    while (sector < end && rc == 0) {
        /* map up to READ_BATCH chunk pieces, issue the direct reads together */
        int np = 0, nops = 0;
        uint8_t *p0 = p;
        uint64_t sector0 = sector;
        uint32_t slots0 = __atomic_load_n(&a->slots_gen, __ATOMIC_ACQUIRE);
        while (sector < end && np < READ_BATCH) {
            struct piece *pc = &pieces[np];
            rc = array_map(a, sector, &pc->ad);
            if (rc)
                return rc;
            uint64_t left = a->geom.chunk_sectors - pc->ad.chunk_off;
            pc->nsec = (uint32_t)(end - sector < left ? end - sector : left);
            pc->buf = p;
            pc->gen = stripe_gen(&a->locks, pc->ad.stripe);
            int m = pc->ad.disk;
            pc->op = -1;
            if (slot_ok_upto(a, m, pc->ad.member_sector + pc->nsec) &&
                !slot_has_bad(&a->slot[m], pc->ad.member_sector, pc->nsec)) {
                pc->op = nops;
                ops[nops++] = array_op(a, m, IO_READ, p, pc->nsec, pc->ad.member_sector);
            }
            p += (size_t)pc->nsec * SECTOR;
            sector += pc->nsec;
            np++;
        }
        array_run_ops(a, ops, nops);
        if ((slots0 & 1) || __atomic_load_n(&a->slots_gen, __ATOMIC_ACQUIRE) != slots0) {
            /* a slot changed members while these reads ran: read again */
            p = p0;
            sector = sector0;
            sched_yield();
            continue;
        }
        struct read_batch rb = {.pieces = pieces, .np = np, .ops = ops,
                                .first_chunk = pieces[0].ad.array_sector / a->geom.chunk_sectors};
        for (int i = 0; i < np && rc == 0; i++) {
            int op = pieces[i].op, direct_failed = op >= 0 && ops[op].result != 0;
            if (op >= 0 && !direct_failed)
                continue;
            if (direct_failed)
                uraid_log(URAID_LOG_WARN, "member %s: read error at sector %llu (%s); rebuilding from the other members",
                          a->slot[pieces[i].ad.disk].dev->path, (unsigned long long)(ops[op].offset / SECTOR),
                          uraid_strerror(ops[op].result));
            rc = read_rebuild_piece(a, pieces[i].buf, &pieces[i].ad, pieces[i].nsec, direct_failed, &rb);
        }
    }
    return rc;
}

/* ---- writes -------------------------------------------------------------------------- */

struct wstripe {
    struct stripe_rows r;
    uint64_t r0, r1;                       /* written sectors, relative to the stripe's data start */
    const uint8_t *src;                    /* user data for array sector (stripe start + r0) */
    enum write_method method;
    unsigned char written[URAID_MAX_MEMBERS], covered[URAID_MAX_MEMBERS]; /* by data index */
    unsigned char rewrite[URAID_MAX_MEMBERS]; /* by member: rebuilt rows written back whole (read error, bad block) */
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
    };
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
            w->rewrite[m] = 1;
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
        if (dst) {
            owner[*nops] = self;
            ops[(*nops)++] = array_op(a, m, IO_READ, dst, w->r.nrows, msec);
        }
    }
    if (w->method == WRITE_RMW) {
        int par[2] = {map->p_disk, map->q_disk};
        for (int i = 0; i < a->nparity; i++)
            if (par[i] >= 0 && !w->r.unavailable[par[i]]) {
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

/* Writes a group of planned stripes: reads, parity, writes, each phase as
 * one batch. Called with the group's stripe locks held. */
static int write_group(struct uraid_array *a, struct wstripe *ws, int nw)
{
    int maxops = nw * (a->geom.raid_disks + a->k + 2);
    struct io_op *ops = malloc(sizeof *ops * (size_t)maxops);
    int *owner = malloc(sizeof *owner * (size_t)maxops);
    if (!ops || !owner) {
        free(ops);
        free(owner);
        return -ENOMEM;
    }
    int rc = 0, nops = 0;
    for (int i = 0; i < nw; i++)
        if (ws[i].method != WRITE_REBUILD)
            add_write_reads(a, &ws[i], ops, &nops, owner, i);
    array_run_ops(a, ops, nops);
    /* a failed read turns its stripe into a rebuild */
    for (int i = 0; i < nops; i++)
        if (ops[i].result) {
            uraid_log(URAID_LOG_WARN, "member %s: read error at sector %llu (%s) during a write; rebuilding the stripe",
                      ops[i].m->path, (unsigned long long)(ops[i].offset / SECTOR), uraid_strerror(ops[i].result));
            ws[owner[i]].method = WRITE_REBUILD;
        }
    for (int i = 0; i < nw && rc == 0; i++) {
        struct wstripe *w = &ws[i];
        if (w->method == WRITE_REBUILD) {
            rows_mark_unavailable(a, &w->r);
            unsigned char failed[URAID_MAX_MEMBERS] = {0};
            rc = rows_rebuild_any(a, &w->r, w->zero, failed, NULL);
            if (rc) {
                log_unrecoverable(a, w->r.stripe, w->r.row, w->r.nrows);
                break;
            }
            /* members whose reads failed, or whose rows are listed bad, get
             * their whole new rows below, which corrects them */
            uint64_t msec = w->r.stripe * a->geom.chunk_sectors + w->r.row;
            for (int m = 0; m < a->geom.raid_disks; m++)
                if ((failed[m] || (w->r.unavailable[m] && slot_has_bad(&a->slot[m], msec, w->r.nrows))) &&
                    slot_ok_upto(a, m, msec + w->r.nrows)) {
                    w->r.unavailable[m] = 0;
                    w->rewrite[m] = 1;
                }
            w->method = WRITE_RCW;
            count_method(a, WRITE_REBUILD);
        } else {
            count_method(a, w->method);
        }
        overlay(a, w);
        rc = compute_parity(a, w);
    }
    if (rc == 0) {
        nops = 0;
        for (int i = 0; i < nw; i++)
            add_writes(a, &ws[i], ops, &nops, owner, i);
        array_run_ops(a, ops, nops);
        for (int i = 0; i < nops && rc == 0; i++) {
            int m = -1;
            for (int s = 0; s < a->geom.raid_disks; s++)
                if (a->slot[s].dev == ops[i].m)
                    m = s;
            if (m < 0)
                continue;
            uint64_t msec = ops[i].offset / SECTOR - a->slot[m].data_offset;
            uint32_t nsec = (uint32_t)(ops[i].len / SECTOR);
            /* A failed rewrite of rows that could not be read is recorded in
             * the bad-block log (md's read-error rule); any other failed
             * write fails the member (the write is still durable if the level
             * can lose it). */
            if (ops[i].result)
                array_note_degraded_write(a, ws[owner[i]].r.stripe);
            if (ops[i].result && ws[owner[i]].rewrite[m])
                rc = array_write_failed(a, m, &ops[i]);
            else if (ops[i].result)
                rc = array_member_failed(a, m, ops[i].result, "writing");
            else if (ws[owner[i]].rewrite[m])
                array_clear_bad(a, m, msec, nsec);
        }
    }
    free(ops);
    free(owner);
    return rc;
}

int array_write_striped(struct uraid_array *a, const uint8_t *p, uint64_t sector, uint64_t end)
{
    int rc = 0;
    uint64_t stripe_sectors = (uint64_t)a->k * a->geom.chunk_sectors;
    uint64_t nstripes = (end - 1) / stripe_sectors - sector / stripe_sectors + 1;
    size_t nplans = nstripes < MAX_GROUP ? (size_t)nstripes : MAX_GROUP;
    struct wstripe *ws = (struct wstripe *)array_scratch_plans(sizeof *ws * nplans);
    if (!ws)
        return -ENOMEM;
    while (rc == 0 && sector < end) {
        /* plan a group of stripes under their locks */
        int nw = 0;
        size_t bytes = 0;
        uint64_t stripes[MAX_GROUP];
        uint64_t s = sector;
        while (s < end && nw < MAX_GROUP) {
            uint64_t stripe = s / stripe_sectors, base = stripe * stripe_sectors;
            uint64_t stop = base + stripe_sectors < end ? base + stripe_sectors : end;
            size_t need = (size_t)(a->geom.raid_disks + a->k + 3) * a->geom.chunk_sectors * SECTOR;
            if (nw && bytes + need > GROUP_BYTES)
                break;
            stripes[nw] = stripe;
            ws[nw].r.stripe = stripe;
            ws[nw].r0 = s - base;
            ws[nw].r1 = stop - base;
            ws[nw].src = p + (s - sector) * SECTOR;
            bytes += need;
            nw++;
            s = stop;
        }
        uint16_t held[MAX_GROUP];
        int nheld = stripe_lock_set(&a->locks, stripes, nw, held);
        size_t total = 0;
        for (int i = 0; i < nw && rc == 0; i++) {
            rc = plan_write(a, &ws[i]);
            total += wstripe_bytes(a, &ws[i]);
        }
        uint8_t *mem = rc == 0 ? array_scratch(total) : NULL;
        if (rc == 0 && !mem)
            rc = -ENOMEM;
        if (rc == 0) {
            for (int i = 0; i < nw; i++) {
                wstripe_buffers(a, &ws[i], mem);
                mem += wstripe_bytes(a, &ws[i]);
            }
            stripe_gen_bump(&a->locks, held, nheld);
            rc = write_group(a, ws, nw);
            stripe_gen_bump(&a->locks, held, nheld);
        }
        stripe_unlock_set(&a->locks, held, nheld);
        p += (s - sector) * SECTOR;
        sector = s;
    }
    return rc;
}

/* The member sectors [*ms, *me) past data_offset that a write of array
 * sectors [sector, end) may touch (RAID-4/5/6: whole stripes' rows, for
 * parity), which the write-intent bitmap must cover first. */
static void write_span(const struct uraid_array *a, uint64_t sector, uint64_t end, uint64_t *ms, uint64_t *me)
{
    *ms = sector;
    *me = end;
    if (a->geom.level != 1) {
        uint64_t ss = (uint64_t)a->k * a->geom.chunk_sectors;
        *ms = sector / ss * a->geom.chunk_sectors;
        *me = ((end - 1) / ss + 1) * a->geom.chunk_sectors;
    }
}

/* What every user write does: the read-only and range checks, the dirty
 * mark on disk, the request count, the bitmap's bits before any member
 * write, then the level's path. buf NULL writes zeros (uraid_write_zeroes). */
static int write_request(struct uraid_array *a, const uint8_t *buf, size_t len, uint64_t offset)
{
    if (a->readonly)
        return -EROFS;
    int rc = array_range_ok(a, len, offset);
    if (rc || len == 0)
        return rc;
    rc = array_mark_dirty(a);
    if (rc)
        return rc;
    __atomic_add_fetch(&a->user_requests, 1, __ATOMIC_RELAXED);
    uint64_t sector = offset / SECTOR, end = sector + len / SECTOR;
    if (a->geom.level == 0)
        return array_write_raid0(a, buf, sector, end);
    uint64_t ms, me;
    write_span(a, sector, end, &ms, &me);
    rc = wib_start_write(a, ms, me);
    if (rc)
        return rc;
    if (a->geom.level == 1)
        rc = array_write_mirror(a, buf, sector, end - sector);
    else
        rc = buf ? array_write_striped(a, buf, sector, end) : array_zero_striped(a, sector, end);
    wib_end_write(a, ms, me);
    return rc;
}

int uraid_write(struct uraid_array *a, const void *buf, size_t len, uint64_t offset)
{
    return buf || !len ? write_request(a, buf, len, offset) : -EINVAL;
}

int uraid_write_zeroes(struct uraid_array *a, size_t len, uint64_t offset)
{
    return write_request(a, NULL, len, offset);
}

int uraid_flush(struct uraid_array *a)
{
    int rc = 0;
    for (int m = 0; m < a->geom.raid_disks; m++)
        if (a->slot[m].dev && !a->readonly &&
            (slot_ok(a, m) || __atomic_load_n(&a->slot[m].state, __ATOMIC_ACQUIRE) == URAID_MEMBER_REBUILDING)) {
            int r = member_flush(a->slot[m].dev);
            if (r && !rc)
                rc = array_member_failed(a, m, r, "flushing");
        }
    return rc;
}

uint64_t uraid_size(const struct uraid_array *a) { return a->size_sectors * SECTOR; }

/* ---- resync ------------------------------------------------------------------------ */

/* Makes P and Q agree with the data for member sectors [start, start +
 * nsec) (whole chunks, except at the member's end), one stripe per batch of
 * reads and one of writes. A stripe with a missing data member has nothing
 * to resync on RAID-5; on RAID-6 Q is rewritten so it rebuilds the same
 * missing data as P. */
int array_resync_range(struct uraid_array *a, uint64_t start, uint32_t nsec)
{
    uint32_t c = a->geom.chunk_sectors;
    int n = a->geom.raid_disks, rc = 0;
    size_t len = (size_t)c * SECTOR;
    uint8_t *mem = array_scratch((size_t)(n + 3) * len);
    if (!mem)
        return -ENOMEM;
    for (uint64_t s = start / c; rc == 0 && s * c < start + nsec; s++) {
        struct wstripe w = {.r = {.stripe = s, .row = 0, .nrows = c}};
        uint16_t held[1];
        int nheld = stripe_lock_set(&a->locks, &s, 1, held);
        stripe_gen_bump(&a->locks, held, nheld);
        rc = layout_stripe(&a->geom, s, &w.r.map);
        if (rc == 0) {
            for (int m = 0; m < n; m++)
                w.r.block[m] = mem + (size_t)m * len;
            w.pscratch = mem + (size_t)n * len;
            w.qscratch = w.pscratch + len;
            w.zero = w.qscratch + len;
            if (w.r.map.nslots != a->k)
                memset(w.zero, 0, len);
            rows_mark_unavailable(a, &w.r);
            int missing_data = 0;
            for (int d = 0; d < a->k; d++)
                missing_data += w.r.unavailable[w.r.map.data_disk[d]];
            if (missing_data == 0) {
                struct io_op ops[URAID_MAX_MEMBERS];
                int nops = 0;
                for (int d = 0; d < a->k; d++)
                    ops[nops++] = array_op(a, w.r.map.data_disk[d], IO_READ, w.r.block[w.r.map.data_disk[d]], c, s * c);
                array_run_ops(a, ops, nops);
                for (int i = 0; i < nops && rc == 0; i++)
                    rc = ops[i].result;
                if (rc == 0) {
                    w.method = WRITE_RCW;
                    rc = compute_parity(a, &w);
                }
            } else if (a->nparity == 2 && missing_data == 1 && !w.r.unavailable[w.r.map.p_disk] &&
                       !w.r.unavailable[w.r.map.q_disk]) {
                w.r.unavailable[w.r.map.q_disk] = 1; /* rebuild the data from P, then Q from the data */
                rc = rows_read_and_rebuild(a, &w.r, w.zero, NULL, NULL);
                w.r.unavailable[w.r.map.q_disk] = 0;
            } else {
                stripe_gen_bump(&a->locks, held, nheld);
                stripe_unlock_set(&a->locks, held, nheld);
                continue;
            }
            if (rc == 0) {
                struct io_op ops[2];
                int nops = 0, par[2] = {w.r.map.p_disk, w.r.map.q_disk};
                for (int i = 0; i < a->nparity; i++)
                    if (!w.r.unavailable[par[i]])
                        ops[nops++] = array_op(a, par[i], IO_WRITE, w.r.block[par[i]], c, s * c);
                array_run_ops(a, ops, nops);
                for (int i = 0; i < nops && rc == 0; i++)
                    rc = ops[i].result;
            }
        }
        stripe_gen_bump(&a->locks, held, nheld);
        stripe_unlock_set(&a->locks, held, nheld);
    }
    return rc;
}
