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
#include "array/readahead.h"
#include "array/reshape_io.h"
#include "stripe/gather.h"
#include "log.h"

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
        rows_log_unrecoverable(a, ad->stripe, ad->chunk_off, nsec);
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
            rows_log_unrecoverable(a, ad->stripe, ad->chunk_off, nsec);
        }
    }
    stripe_unlock_set(&a->locks, held, nheld);
    return rc;
}

#define READ_BATCH 256

int array_read_plain(struct uraid_array *a, void *buf, size_t len, uint64_t offset)
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
    if (a->r10)
        return array_read_raid10(a, p, sector, end - sector);
    if (a->lin)
        return array_read_linear(a, p, sector, end);
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
                          ops[op].m->path, (unsigned long long)(ops[op].offset / SECTOR),
                          uraid_strerror(ops[op].result));
            rc = read_rebuild_piece(a, pieces[i].buf, &pieces[i].ad, pieces[i].nsec, direct_failed, &rb);
        }
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
    if (a->geom.level != 1 && a->geom.level != 10) { /* RAID-1/10: md's bitmap counts array sectors */
        uint64_t ss = (uint64_t)a->k * a->geom.chunk_sectors;
        *ms = sector / ss * a->geom.chunk_sectors;
        *me = ((end - 1) / ss + 1) * a->geom.chunk_sectors;
    }
}

/* What every user write does: the read-only and range checks, the dirty
 * mark on disk, the request count, the bitmap's bits before any member
 * write, then the level's path. buf NULL writes zeros (uraid_write_zeroes). */
int array_write_plain(struct uraid_array *a, const uint8_t *buf, size_t len, uint64_t offset)
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
    if (a->lin)
        return array_write_linear(a, buf, sector, end);
    uint64_t ms, me;
    write_span(a, sector, end, &ms, &me);
    rc = wib_start_write(a, ms, me);
    if (rc)
        return rc;
    if (a->geom.level == 1)
        rc = array_write_mirror(a, buf, sector, end - sector);
    else if (a->r10)
        rc = array_write_raid10(a, buf, sector, end);
    else
        rc = buf ? array_write_striped(a, buf, sector, end) : array_zero_striped(a, sector, end);
    wib_end_write(a, ms, me);
    return rc;
}

/* Every user request holds geom_lock for reading: a reshape's start and end
 * change the geometry with it held for writing. During a reshape the
 * request is split by reshape_io.c between the new and the old geometry. */
int uraid_read(struct uraid_array *a, void *buf, size_t len, uint64_t offset)
{
    pthread_rwlock_rdlock(&a->geom_lock);
    /* acknowledged writes kept in memory are written before they are read */
    gather_settle(__atomic_load_n(&a->gather, __ATOMIC_ACQUIRE), offset / SECTOR, (offset + len) / SECTOR + 1);
    int rc = a->rs ? array_reshape_request(a, buf, NULL, len, offset) : array_read_ra(a, buf, len, offset);
    pthread_rwlock_unlock(&a->geom_lock);
    return rc;
}

int array_write_locked(struct uraid_array *a, const uint8_t *buf, size_t len, uint64_t offset)
{
    return a->rs ? array_reshape_request(a, NULL, buf ? buf : array_reshape_zeroes, len, offset)
                 : array_write_plain(a, buf, len, offset);
}

/* A write that does not gather (zeroes; any write during a reshape) lands
 * after the kept stripes it touches (stripe/gather.c). */
static int write_request(struct uraid_array *a, const uint8_t *buf, size_t len, uint64_t offset)
{
    __atomic_add_fetch(&a->writes_in_flight, 1, __ATOMIC_ACQ_REL);
    pthread_rwlock_rdlock(&a->geom_lock);
    if (!buf || a->rs)
        gather_settle(__atomic_load_n(&a->gather, __ATOMIC_ACQUIRE), offset / SECTOR, (offset + len) / SECTOR + 1);
    int rc = array_write_locked(a, buf, len, offset);
    pthread_rwlock_unlock(&a->geom_lock);
    __atomic_sub_fetch(&a->writes_in_flight, 1, __ATOMIC_ACQ_REL);
    /* a piece held for this write's company is written now if no other write is left */
    gather_write_left(__atomic_load_n(&a->gather, __ATOMIC_ACQUIRE));
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

/* Every member that holds data flushed at once (the engine's pool runs
 * them in parallel: one after another, six remote members at a 2 ms round
 * trip made each flush take 12 ms), and a replace's replacement too, since
 * writes below its checkpoint are mirrored to it. */
int uraid_flush(struct uraid_array *a)
{
    struct io_op ops[URAID_MAX_MEMBERS + 1];
    int slot[URAID_MAX_MEMBERS + 1], n = 0, rc = 0;
    if (a->readonly)
        return 0;
    pthread_rwlock_rdlock(&a->geom_lock); /* a reshape's start adds members */
    /* acknowledged writes kept in memory (stripe/gather.c) go to the
     * members before they are flushed */
    int gathered = gather_flush(__atomic_load_n(&a->gather, __ATOMIC_ACQUIRE));
    /* every slot holding a member: a shrink's leaving members hold the old geometry's data until its end */
    for (int m = 0; m < array_nslots(a); m++) {
        struct member *dev = __atomic_load_n(&a->slot[m].dev, __ATOMIC_ACQUIRE);
        if (dev && (slot_ok(a, m) || __atomic_load_n(&a->slot[m].state, __ATOMIC_ACQUIRE) == URAID_MEMBER_REBUILDING)) {
            slot[n] = m;
            ops[n++] = (struct io_op){.m = dev, .kind = IO_FLUSH};
        }
    }
    struct member *repl = __atomic_load_n(&a->replace_source, __ATOMIC_ACQUIRE) >= 0
                              ? __atomic_load_n(&a->replacement.dev, __ATOMIC_ACQUIRE) : NULL;
    if (repl) {
        slot[n] = -1;
        ops[n++] = (struct io_op){.m = repl, .kind = IO_FLUSH};
    }
    io_engine_run(a->io, ops, n);
    pthread_rwlock_unlock(&a->geom_lock);
    for (int i = 0; i < n; i++) {
        if (!ops[i].result)
            continue;
        if (slot[i] < 0)
            __atomic_store_n(&a->replacement_failed, 1, __ATOMIC_RELEASE); /* the replace ends failed */
        else if (!rc)
            rc = array_member_failed(a, slot[i], ops[i].result, "flushing");
        else
            array_member_failed(a, slot[i], ops[i].result, "flushing");
    }
    return rc ? rc : gathered;
}

uint64_t uraid_size(const struct uraid_array *a) { return __atomic_load_n(&a->size_sectors, __ATOMIC_ACQUIRE) * SECTOR; }
