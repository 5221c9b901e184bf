/* The data path, first version: correct and serial. A request is split into
 * stripes; for each stripe every member read is decided, issued, parity is
 * computed on buffers and the writes are issued. The I/O engine (issue 4)
 * keeps this structure and makes the per-stripe I/O parallel.
 *
 * Reads: a data chunk on an in-sync member is read directly; if its member
 * is missing or the read fails, the rows are rebuilt from the rest of the
 * stripe (any `nparity` blocks may be unavailable).
 * Writes (RAID-4/5/6): reconstruct-write. The old contents of data blocks
 * the write does not fully cover are read (rebuilt if unavailable), the new
 * data is laid over them, P and Q are regenerated from all data blocks, and
 * the changed data blocks plus P and Q are written to the members that are
 * present. A degraded stripe therefore always keeps parity that rebuilds
 * the missing chunk. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "log.h"

#define SECTOR 512u

/* Rows [row, row + nrows) of one stripe, one buffer per member. */
struct stripe_op {
    uint64_t stripe;
    uint32_t row, nrows;
    struct stripe_map map;
    uint8_t *mem;
    uint8_t *block[URAID_MAX_MEMBERS];
    uint8_t *zero;                        /* an all-zero block (DDF Q slots) */
    unsigned char unavailable[URAID_MAX_MEMBERS];
};

static uint64_t member_byte(const struct uraid_array *a, int disk, uint64_t stripe, uint32_t row)
{
    return (a->slot[disk].data_offset + stripe * a->geom.chunk_sectors + row) * SECTOR;
}

static int op_init(struct uraid_array *a, struct stripe_op *op, uint64_t stripe, uint32_t row, uint32_t nrows)
{
    int n = a->geom.raid_disks;
    size_t len = (size_t)nrows * SECTOR;
    op->stripe = stripe;
    op->row = row;
    op->nrows = nrows;
    int rc = layout_stripe(&a->geom, stripe, &op->map);
    if (rc)
        return rc;
    op->mem = aligned_alloc(64, (size_t)(n + 1) * len);
    if (!op->mem)
        return -ENOMEM;
    for (int m = 0; m < n; m++) {
        op->block[m] = op->mem + (size_t)m * len;
        op->unavailable[m] = !slot_ok(a, m);
    }
    op->zero = op->mem + (size_t)n * len;
    memset(op->zero, 0, len);
    return 0;
}

static void op_free(struct stripe_op *op) { free(op->mem); }

static int op_read_member(struct uraid_array *a, struct stripe_op *op, int m)
{
    if (slot_has_bad(&a->slot[m], op->stripe * a->geom.chunk_sectors + op->row, op->nrows)) {
        op->unavailable[m] = 1;
        return -EIO;
    }
    int rc = member_read(a->slot[m].dev, op->block[m], (size_t)op->nrows * SECTOR,
                         member_byte(a, m, op->stripe, op->row));
    if (rc) {
        uraid_log(URAID_LOG_WARN, "member %s: read error at sector %llu (%s); rebuilding from the other members",
                  a->slot[m].dev->path,
                  (unsigned long long)(member_byte(a, m, op->stripe, op->row) / SECTOR), uraid_strerror(rc));
        op->unavailable[m] = 1;
    }
    return rc;
}

static int op_count_unavailable(const struct uraid_array *a, const struct stripe_op *op)
{
    int lost = 0;
    for (int m = 0; m < a->geom.raid_disks; m++)
        lost += op->unavailable[m];
    return lost;
}

/* Rebuilds every unavailable member's rows from the others (which must
 * already be in op->block). */
static int op_rebuild(struct uraid_array *a, struct stripe_op *op)
{
    const struct stripe_map *map = &op->map;
    int n = a->geom.raid_disks, nslots = map->nslots, raid6 = a->nparity == 2;
    void *blocks[URAID_PARITY_MAX_K + 2];
    int lost[2], nlost = 0;
    for (int j = 0; j < nslots; j++) {
        int m = map->slot_disk[j];
        blocks[j] = m < 0 ? op->zero : op->block[m];
        if (m >= 0 && op->unavailable[m] && nlost < 2)
            lost[nlost++] = j;
    }
    blocks[nslots] = op->block[map->p_disk];
    if (op->unavailable[map->p_disk] && nlost < 2)
        lost[nlost++] = nslots;
    if (raid6) {
        blocks[nslots + 1] = op->block[map->q_disk];
        if (op->unavailable[map->q_disk] && nlost < 2)
            lost[nlost++] = nslots + 1;
    }
    if (nlost == 0)
        return 0;
    if (op_count_unavailable(a, op) > a->nparity || nlost > a->nparity)
        return -EIO;
    (void)n;
    return uraid_recover(nslots, (size_t)op->nrows * SECTOR, blocks, raid6, nlost, lost);
}

/* Reads every available member's rows and rebuilds the rest. */
static int op_read_all(struct uraid_array *a, struct stripe_op *op)
{
    for (int m = 0; m < a->geom.raid_disks; m++)
        if (!op->unavailable[m])
            op_read_member(a, op, m);
    if (op_count_unavailable(a, op) > a->nparity)
        return -EIO;
    return op_rebuild(a, op);
}

static void log_unreadable(struct uraid_array *a, uint64_t stripe, uint32_t row, uint32_t nrows)
{
    uraid_log(URAID_LOG_ERROR,
              "stripe %llu (member sectors %llu-%llu past data_offset): more members unavailable than %s survives",
              (unsigned long long)stripe, (unsigned long long)(stripe * a->geom.chunk_sectors + row),
              (unsigned long long)(stripe * a->geom.chunk_sectors + row + nrows - 1),
              a->geom.level == 6 ? "RAID-6" : a->geom.level == 0 ? "RAID-0" : "this level");
}

/* ---- reads ------------------------------------------------------------------- */

static int read_mirror(struct uraid_array *a, uint8_t *buf, uint64_t sector, uint32_t nsec)
{
    for (int m = 0; m < a->geom.raid_disks; m++) {
        if (!slot_ok(a, m) || slot_has_bad(&a->slot[m], sector, nsec))
            continue;
        int rc = member_read(a->slot[m].dev, buf, (size_t)nsec * SECTOR, (a->slot[m].data_offset + sector) * SECTOR);
        if (rc == 0)
            return 0;
        uraid_log(URAID_LOG_WARN, "member %s: read error at sector %llu (%s); trying another mirror",
                  a->slot[m].dev->path, (unsigned long long)(a->slot[m].data_offset + sector), uraid_strerror(rc));
    }
    uraid_log(URAID_LOG_ERROR, "array sectors %llu-%llu: no mirror could be read", (unsigned long long)sector,
              (unsigned long long)(sector + nsec - 1));
    return -EIO;
}

/* One piece inside one chunk: direct read, else rebuild from the stripe. */
static int read_piece(struct uraid_array *a, uint8_t *buf, const struct layout_addr *ad, uint32_t nsec)
{
    int disk = ad->disk;
    if (slot_ok(a, disk) && !slot_has_bad(&a->slot[disk], ad->member_sector, nsec)) {
        int rc = member_read(a->slot[disk].dev, buf, (size_t)nsec * SECTOR,
                             (a->slot[disk].data_offset + ad->member_sector) * SECTOR);
        if (rc == 0)
            return 0;
        uraid_log(URAID_LOG_WARN, "member %s: read error at sector %llu (%s); rebuilding from the other members",
                  a->slot[disk].dev->path, (unsigned long long)(a->slot[disk].data_offset + ad->member_sector),
                  uraid_strerror(rc));
    }
    if (a->nparity == 0) {
        log_unreadable(a, ad->stripe, ad->chunk_off, nsec);
        return -EIO;
    }
    struct stripe_op op;
    int rc = op_init(a, &op, ad->stripe, ad->chunk_off, nsec);
    if (rc)
        return rc;
    op.unavailable[disk] = 1;
    rc = op_read_all(a, &op);
    if (rc == 0)
        memcpy(buf, op.block[disk], (size_t)nsec * SECTOR);
    else
        log_unreadable(a, ad->stripe, ad->chunk_off, nsec);
    op_free(&op);
    return rc;
}

static int range_ok(const struct uraid_array *a, size_t len, uint64_t offset)
{
    if (len % SECTOR || offset % SECTOR)
        return -EINVAL;
    if (offset > a->size_sectors * SECTOR || len > a->size_sectors * SECTOR - offset)
        return -ENOSPC;
    return 0;
}

int uraid_read(struct uraid_array *a, void *buf, size_t len, uint64_t offset)
{
    int rc = range_ok(a, len, offset);
    if (rc)
        return rc;
    uint8_t *p = buf;
    uint64_t sector = offset / SECTOR, end = sector + len / SECTOR;
    pthread_mutex_lock(&a->io_lock);
    if (a->geom.level == 1) {
        rc = read_mirror(a, p, sector, (uint32_t)(end - sector));
        pthread_mutex_unlock(&a->io_lock);
        return rc;
    }
    while (sector < end && rc == 0) {
        struct layout_addr ad;
        rc = layout_map(&a->geom, sector, &ad);
        if (rc)
            break;
        uint64_t left = a->geom.chunk_sectors - ad.chunk_off;
        uint32_t nsec = (uint32_t)(end - sector < left ? end - sector : left);
        rc = read_piece(a, p, &ad, nsec);
        p += (size_t)nsec * SECTOR;
        sector += nsec;
    }
    pthread_mutex_unlock(&a->io_lock);
    return rc;
}

/* ---- writes ------------------------------------------------------------------ */

static int write_member(struct uraid_array *a, int m, const void *buf, uint32_t nsec, uint64_t member_sector)
{
    int rc = member_write(a->slot[m].dev, buf, (size_t)nsec * SECTOR, (a->slot[m].data_offset + member_sector) * SECTOR);
    if (rc)
        uraid_log(URAID_LOG_ERROR, "member %s: write error at sector %llu (%s)", a->slot[m].dev->path,
                  (unsigned long long)(a->slot[m].data_offset + member_sector), uraid_strerror(rc));
    return rc;
}

static int write_mirror(struct uraid_array *a, const uint8_t *buf, uint64_t sector, uint32_t nsec)
{
    int written = 0, rc = 0;
    for (int m = 0; m < a->geom.raid_disks; m++) {
        if (!slot_ok(a, m))
            continue;
        int r = write_member(a, m, buf, nsec, sector);
        if (r == 0)
            written++;
        else
            rc = r;
    }
    return written ? 0 : (rc ? rc : -EIO);
}

static int write_striped_piece(struct uraid_array *a, const uint8_t *buf, const struct layout_addr *ad, uint32_t nsec)
{
    if (!slot_ok(a, ad->disk)) {
        log_unreadable(a, ad->stripe, ad->chunk_off, nsec);
        return -EIO;
    }
    return write_member(a, ad->disk, buf, nsec, ad->member_sector);
}

/* Writes array sectors [s0, s1) that lie in one stripe (RAID-4/5/6). */
static int write_stripe(struct uraid_array *a, const uint8_t *buf, uint64_t stripe, uint64_t s0, uint64_t s1)
{
    uint32_t c = a->geom.chunk_sectors;
    uint64_t base = stripe * (uint64_t)a->k * c;
    uint64_t r0 = s0 - base, r1 = s1 - base;
    uint32_t d0 = (uint32_t)(r0 / c), d1 = (uint32_t)((r1 - 1) / c);
    /* rows touched: one chunk's sub-range, or whole chunks when the write
     * spans several data chunks of the stripe */
    uint32_t row = d0 == d1 ? (uint32_t)(r0 % c) : 0;
    uint32_t row_end = d0 == d1 ? (uint32_t)((r1 - 1) % c + 1) : c;
    uint32_t nrows = row_end - row;

    struct stripe_op op;
    int rc = op_init(a, &op, stripe, row, nrows);
    if (rc)
        return rc;
    const struct stripe_map *map = &op.map;

    /* which data blocks are fully overwritten in rows [row, row_end) */
    unsigned char covered[URAID_MAX_MEMBERS] = {0};
    for (int d = 0; d < a->k; d++) {
        uint64_t lo = (uint64_t)d * c + row, hi = (uint64_t)d * c + row_end;
        covered[d] = r0 <= lo && r1 >= hi;
    }
    /* old contents needed: uncovered data blocks. If one of them is
     * unavailable, read everything and rebuild instead. */
    int need_rebuild = 0;
    for (int d = 0; d < a->k && !need_rebuild; d++)
        if (!covered[d] && op.unavailable[map->data_disk[d]])
            need_rebuild = 1;
    if (!need_rebuild) {
        for (int d = 0; d < a->k; d++) {
            int m = map->data_disk[d];
            if (!covered[d] && op_read_member(a, &op, m))
                need_rebuild = 1;
        }
    }
    if (need_rebuild) {
        rc = op_read_all(a, &op);
        if (rc) {
            log_unreadable(a, stripe, row, nrows);
            op_free(&op);
            return rc;
        }
    }
    /* lay the new data over the old */
    for (int d = 0; d < a->k; d++) {
        uint64_t lo = (uint64_t)d * c + row, hi = (uint64_t)d * c + row_end;
        uint64_t w0 = r0 > lo ? r0 : lo, w1 = r1 < hi ? r1 : hi;
        if (w0 >= w1)
            continue;
        memcpy(op.block[map->data_disk[d]] + (w0 - lo) * SECTOR, buf + (base + w0 - s0) * SECTOR,
               (size_t)(w1 - w0) * SECTOR);
    }
    /* parity from all data blocks, in Q slot order */
    const void *src[URAID_PARITY_MAX_K];
    for (int j = 0; j < map->nslots; j++)
        src[j] = map->slot_disk[j] < 0 ? op.zero : op.block[map->slot_disk[j]];
    size_t len = (size_t)nrows * SECTOR;
    if (a->nparity == 2)
        rc = uraid_gen_pq(map->nslots, len, src, op.block[map->p_disk], op.block[map->q_disk]);
    else
        rc = uraid_gen_p(map->nslots, len, src, op.block[map->p_disk]);

    /* write the changed data blocks, then P and Q, to the members present */
    for (int d = 0; d < a->k && rc == 0; d++) {
        int m = map->data_disk[d];
        uint64_t lo = (uint64_t)d * c + row, hi = (uint64_t)d * c + row_end;
        if (r0 >= hi || r1 <= lo || !slot_ok(a, m))
            continue;
        rc = write_member(a, m, op.block[m], nrows, stripe * c + row);
    }
    if (rc == 0 && slot_ok(a, map->p_disk))
        rc = write_member(a, map->p_disk, op.block[map->p_disk], nrows, stripe * c + row);
    if (rc == 0 && a->nparity == 2 && slot_ok(a, map->q_disk))
        rc = write_member(a, map->q_disk, op.block[map->q_disk], nrows, stripe * c + row);
    op_free(&op);
    return rc;
}

int uraid_write(struct uraid_array *a, const void *buf, size_t len, uint64_t offset)
{
    if (a->readonly)
        return -EROFS;
    int rc = range_ok(a, len, offset);
    if (rc || len == 0)
        return rc;
    pthread_mutex_lock(&a->io_lock);
    rc = array_mark_dirty(a);
    const uint8_t *p = buf;
    uint64_t sector = offset / SECTOR, end = sector + len / SECTOR;
    if (rc == 0 && a->geom.level == 1) {
        rc = write_mirror(a, p, sector, (uint32_t)(end - sector));
        pthread_mutex_unlock(&a->io_lock);
        return rc;
    }
    uint64_t stripe_sectors = (uint64_t)a->k * a->geom.chunk_sectors;
    while (rc == 0 && sector < end) {
        if (a->geom.level == 0) {
            struct layout_addr ad;
            rc = layout_map(&a->geom, sector, &ad);
            if (rc)
                break;
            uint64_t left = a->geom.chunk_sectors - ad.chunk_off;
            uint32_t nsec = (uint32_t)(end - sector < left ? end - sector : left);
            rc = write_striped_piece(a, p, &ad, nsec);
            p += (size_t)nsec * SECTOR;
            sector += nsec;
            continue;
        }
        uint64_t stripe = sector / stripe_sectors;
        uint64_t stop = (stripe + 1) * stripe_sectors;
        if (stop > end)
            stop = end;
        rc = write_stripe(a, p, stripe, sector, stop);
        p += (stop - sector) * SECTOR;
        sector = stop;
    }
    pthread_mutex_unlock(&a->io_lock);
    return rc;
}

int uraid_flush(struct uraid_array *a)
{
    int rc = 0;
    for (int m = 0; m < a->geom.raid_disks; m++)
        if (a->slot[m].dev && !a->readonly) {
            int r = member_flush(a->slot[m].dev);
            if (r && !rc)
                rc = r;
        }
    return rc;
}

uint64_t uraid_size(const struct uraid_array *a) { return a->size_sectors * SECTOR; }

/* ---- resync ------------------------------------------------------------------ */

/* Makes P and Q agree with the data for member sectors [start, start +
 * nsec) of every stripe in that range (start and nsec whole chunks, except
 * that the range may end at the member's end). A stripe with a missing data
 * member has nothing to resync on RAID-5; on RAID-6 Q is rewritten so that
 * it rebuilds the same missing data as P. */
int array_resync_range(struct uraid_array *a, uint64_t start, uint32_t nsec)
{
    uint32_t c = a->geom.chunk_sectors;
    int rc = 0;
    pthread_mutex_lock(&a->io_lock);
    for (uint64_t s = start / c; rc == 0 && s * c < start + nsec; s++) {
        struct stripe_op op;
        rc = op_init(a, &op, s, 0, c);
        if (rc)
            break;
        const struct stripe_map *map = &op.map;
        int missing_data = 0;
        for (int d = 0; d < a->k; d++) {
            int m = map->data_disk[d];
            if (op.unavailable[m] || op_read_member(a, &op, m))
                missing_data++;
        }
        size_t len = (size_t)c * SECTOR;
        if (missing_data == 0) {
            const void *src[URAID_PARITY_MAX_K];
            for (int j = 0; j < map->nslots; j++)
                src[j] = map->slot_disk[j] < 0 ? op.zero : op.block[map->slot_disk[j]];
            rc = a->nparity == 2 ? uraid_gen_pq(map->nslots, len, src, op.block[map->p_disk], op.block[map->q_disk])
                                 : uraid_gen_p(map->nslots, len, src, op.block[map->p_disk]);
            if (rc == 0 && slot_ok(a, map->p_disk))
                rc = write_member(a, map->p_disk, op.block[map->p_disk], c, s * c);
            if (rc == 0 && a->nparity == 2 && slot_ok(a, map->q_disk))
                rc = write_member(a, map->q_disk, op.block[map->q_disk], c, s * c);
        } else if (a->nparity == 2 && missing_data == 1 && slot_ok(a, map->p_disk) && slot_ok(a, map->q_disk)) {
            rc = op_read_member(a, &op, map->p_disk);
            op.unavailable[map->q_disk] = 1;
            if (rc == 0)
                rc = op_rebuild(a, &op);
            if (rc == 0)
                rc = write_member(a, map->q_disk, op.block[map->q_disk], c, s * c);
        }
        op_free(&op);
    }
    pthread_mutex_unlock(&a->io_lock);
    return rc;
}
