/* The data path of RAID-10 and linear. RAID-10 is RAID-1 whose copies
 * raid10_map places: a request is cut at chunks and each chunk's copies are
 * read (the first usable copy in md's order, others on errors, the failed
 * copy rewritten) and written (every copy, a failed one keeping the range
 * on its bad-block list) with mirror.c's routines. Locks are RAID-1's
 * units, over array sectors: user I/O, the array-sector jobs (check,
 * repair, resync) and the member-sector jobs (recovery, replace: each
 * target chunk unmapped to its array sectors first) all meet there.
 * Linear has no redundancy: a piece goes to its member, a failure fails
 * the request (RAID-0's rules). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"

#define R10_MAX_UNITS 64

int array_open_raid10(struct uraid_array *a, uint64_t sb_size, const char *ref, char *why, size_t whylen)
{
    char gwhy[200];
    a->r10 = malloc(sizeof *a->r10);
    if (!a->r10) {
        uraid_why(why, whylen, "out of memory");
        return -ENOMEM;
    }
    int rc = raid10_geom_init(a->r10, a->geom.raid_disks, a->geom.layout, a->geom.chunk_sectors, sb_size, gwhy,
                              sizeof gwhy);
    if (rc)
        uraid_why(why, whylen, "member %s: %s", ref, gwhy);
    a->nparity = a->geom.raid_disks - 1;
    return rc;
}

int array_open_linear(struct uraid_array *a, const char *ref, char *why, size_t whylen)
{
    uint64_t sizes[URAID_MAX_MEMBERS];
    for (int s = 0; s < a->geom.raid_disks; s++)
        sizes[s] = a->slot[s].sb.data_size;
    a->lin = malloc(sizeof *a->lin);
    if (!a->lin) {
        uraid_why(why, whylen, "out of memory");
        return -ENOMEM;
    }
    char lwhy[160];
    int rc = linear_init(a->lin, a->geom.raid_disks, sizes, a->geom.chunk_sectors, lwhy, sizeof lwhy);
    if (rc) {
        uraid_why(why, whylen, "member %s: %s", ref, lwhy);
        return rc;
    }
    a->size_sectors = linear_array_sectors(a->lin);
    a->member_sectors = 0;
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (a->lin->start[s + 1] - a->lin->start[s] > a->member_sectors)
            a->member_sectors = a->lin->start[s + 1] - a->lin->start[s];
    return 0;
}

int array_survives_without(const struct uraid_array *a, int also)
{
    unsigned char missing[URAID_MAX_MEMBERS] = {0};
    int count = 0;
    for (int s = 0; s < a->geom.raid_disks; s++) {
        missing[s] = s == also || __atomic_load_n(&a->slot[s].state, __ATOMIC_ACQUIRE) != URAID_MEMBER_IN_SYNC ||
                     !__atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE);
        count += missing[s];
    }
    if (count > a->nparity)
        return 0;
    return a->r10 ? raid10_survives(a->r10, missing) : 1;
}

/* ---- locks and pieces ---------------------------------------------------------- */

static int lock_array_units(struct uraid_array *a, uint64_t sector, uint64_t nsec, uint16_t *held)
{
    uint64_t units[R10_MAX_UNITS];
    int nu = 0;
    for (uint64_t u = sector / RAID1_UNIT; u * RAID1_UNIT < sector + nsec && nu < R10_MAX_UNITS; u++)
        units[nu++] = u;
    return stripe_lock_set(&a->locks, units, nu, held);
}

/* The piece of [sector, end) that stays in sector's chunk. */
static uint32_t chunk_piece(const struct uraid_array *a, uint64_t sector, uint64_t end)
{
    uint64_t c = a->r10->chunk_sectors, left = c - sector % c;
    return (uint32_t)(end - sector < left ? end - sector : left);
}

static void copies_at(const struct uraid_array *a, uint64_t sector, struct raid10_copy *cp)
{
    raid10_map(a->r10, sector, cp); /* sector < size: checked by the request's range check */
}

/* ---- requests -------------------------------------------------------------------- */

static int read_chunk(struct uraid_array *a, uint8_t *buf, uint64_t sector, uint32_t nsec)
{
    struct raid10_copy cp[RAID10_MAX_COPIES];
    copies_at(a, sector, cp);
    int trouble = 0, n = a->r10->copies;
    int rc = array_read_copies(a, cp, n, buf, nsec, 0, &trouble);
    if (trouble) {
        /* a copy failed: read again under the units' locks and rewrite what it lost */
        uint16_t held[R10_MAX_UNITS];
        int nheld = lock_array_units(a, sector, nsec, held);
        trouble = 0;
        rc = array_read_copies(a, cp, n, buf, nsec, 1, &trouble);
        stripe_unlock_set(&a->locks, held, nheld);
    }
    if (rc)
        uraid_log(URAID_LOG_ERROR, "array sectors %llu-%llu: no copy could be read", (unsigned long long)sector,
                  (unsigned long long)(sector + nsec - 1));
    return rc;
}

/* Up to R10_BATCH chunk pieces of a request go to the members together
 * (one op per piece, the members working in parallel: piece by piece, a
 * 4K-chunk RAID-10 read at a tenth of its members' rate); a piece whose op
 * failed, that no copy serves whole, or read while a slot changed members,
 * is read again alone by read_chunk, which tries the other copies. */
#define R10_BATCH 256

struct r10_batch {
    struct io_op *op;           /* cap * copies */
    int *disk;                  /* cap * copies: each op's slot */
    uint64_t *sector;           /* cap: each piece's array sector */
    uint32_t *nsec;
    int *first, *nops;          /* cap: each piece's ops */
    int cap, npieces, nop;
};

/* A batch big enough for [sector, end) or R10_BATCH pieces, in one
 * allocation sized to the request (a 4 KiB request must not pay for 256
 * pieces). */
static struct r10_batch *batch_new(const struct uraid_array *a, uint64_t sector, uint64_t end)
{
    uint64_t c = a->r10->chunk_sectors, pieces = (end - sector) / c + 2;
    int cap = pieces < R10_BATCH ? (int)pieces : R10_BATCH, nops = cap * a->r10->copies;
    size_t size = sizeof(struct r10_batch) + (size_t)nops * (sizeof(struct io_op) + sizeof(int)) +
                  (size_t)cap * (sizeof(uint64_t) + sizeof(uint32_t) + 2 * sizeof(int));
    struct r10_batch *b = malloc(size);
    if (!b)
        return NULL;
    b->op = (struct io_op *)(b + 1);
    b->sector = (uint64_t *)(b->op + nops);
    b->disk = (int *)(b->sector + cap);
    b->nsec = (uint32_t *)(b->disk + nops);
    b->first = (int *)(b->nsec + cap);
    b->nops = b->first + cap;
    b->cap = cap;
    return b;
}

/* Cuts [sector, end) into chunk pieces, at most R10_BATCH of them and for a
 * write no more than lock_array_units can hold; returns the batch's end. */
static uint64_t batch_cut(const struct uraid_array *a, struct r10_batch *b, uint64_t sector, uint64_t end,
                          int for_write)
{
    uint64_t limit = end;
    if (for_write && (sector / RAID1_UNIT + R10_MAX_UNITS) * RAID1_UNIT < limit)
        limit = (sector / RAID1_UNIT + R10_MAX_UNITS) * RAID1_UNIT;
    b->npieces = b->nop = 0;
    while (sector < limit && b->npieces < b->cap) {
        uint32_t n = chunk_piece(a, sector, limit);
        b->sector[b->npieces] = sector;
        b->nsec[b->npieces++] = n;
        sector += n;
    }
    return sector;
}

static void add_op(struct uraid_array *a, struct r10_batch *b, int p, int disk, enum io_kind kind, void *buf,
                   uint32_t nsec, uint64_t member_sector)
{
    b->disk[b->nop] = disk;
    b->op[b->nop++] = array_op(a, disk, kind, buf, nsec, member_sector);
    b->nops[p]++;
}

int array_read_raid10(struct uraid_array *a, uint8_t *buf, uint64_t sector, uint64_t nsec)
{
    uint64_t end = sector + nsec;
    struct r10_batch *b = batch_new(a, sector, end);
    if (!b)
        return -ENOMEM;
    int rc = 0;
    while (sector < end && rc == 0) {
        uint64_t next = batch_cut(a, b, sector, end, 0);
        uint32_t gen = __atomic_load_n(&a->slots_gen, __ATOMIC_ACQUIRE);
        for (int p = 0; p < b->npieces; p++) {
            struct raid10_copy cp[RAID10_MAX_COPIES];
            copies_at(a, b->sector[p], cp);
            b->first[p] = b->nop;
            b->nops[p] = 0;
            for (int i = 0; i < a->r10->copies && !b->nops[p] && !(gen & 1); i++)
                if (array_copy_usable(a, cp[i].disk, cp[i].sector, b->nsec[p]))
                    add_op(a, b, p, cp[i].disk, IO_READ, buf + (b->sector[p] - sector) * SECTOR, b->nsec[p],
                           cp[i].sector);
        }
        array_run_ops(a, b->op, b->nop);
        int moved = __atomic_load_n(&a->slots_gen, __ATOMIC_ACQUIRE) != gen;
        for (int p = 0; p < b->npieces && rc == 0; p++)
            if (moved || !b->nops[p] || b->op[b->first[p]].result)
                rc = read_chunk(a, buf + (b->sector[p] - sector) * SECTOR, b->sector[p], b->nsec[p]);
        buf += (size_t)(next - sector) * SECTOR;
        sector = next;
    }
    free(b);
    return rc;
}

/* Every copy of each piece of a batch, under the batch's units' locks: a
 * copy being rebuilt gets the part its rebuild has passed; a copy that
 * cannot take the write keeps the range on its bad-block list (md's rule)
 * while another copy holds the data. */
static int write_batch(struct uraid_array *a, struct r10_batch *b, const uint8_t *buf, uint64_t sector,
                       uint64_t end)
{
    uint16_t held[R10_MAX_UNITS];
    int nheld = lock_array_units(a, sector, end - sector, held);
    for (int p = 0; p < b->npieces; p++) {
        struct raid10_copy cp[RAID10_MAX_COPIES];
        copies_at(a, b->sector[p], cp);
        b->first[p] = b->nop;
        b->nops[p] = 0;
        const uint8_t *at = buf ? buf + (b->sector[p] - sector) * SECTOR : NULL;
        for (int i = 0; i < a->r10->copies; i++) {
            int m = cp[i].disk;
            uint32_t len = (uint32_t)(slot_writes_end(a, m, cp[i].sector, cp[i].sector + b->nsec[p]) - cp[i].sector);
            if (len)
                add_op(a, b, p, m, at ? IO_WRITE : IO_ZERO, (void *)at, len, cp[i].sector);
        }
    }
    array_run_ops(a, b->op, b->nop);
    int rc = 0;
    for (int p = 0; p < b->npieces; p++) {
        int stored = 0, lost = 0;
        for (int k = b->first[p]; k < b->first[p] + b->nops[p]; k++) {
            int m = b->disk[k];
            uint32_t len = (uint32_t)(b->op[k].len / SECTOR);
            uint64_t ms = b->op[k].offset / SECTOR - a->slot[m].data_offset;
            if (b->op[k].result == 0) {
                stored++;
                if (slot_has_bad(&a->slot[m], ms, len))
                    array_clear_bad(a, m, ms, len);
            } else if (array_write_failed(a, m, &b->op[k])) {
                lost = 1;
            }
        }
        if (!stored || lost) {
            uraid_log(URAID_LOG_ERROR, "array sectors %llu-%llu: no copy took the write",
                      (unsigned long long)b->sector[p], (unsigned long long)(b->sector[p] + b->nsec[p] - 1));
            rc = -EIO;
        }
    }
    stripe_unlock_set(&a->locks, held, nheld);
    return rc;
}

int array_write_raid10(struct uraid_array *a, const uint8_t *buf, uint64_t sector, uint64_t end)
{
    struct r10_batch *b = batch_new(a, sector, end);
    if (!b)
        return -ENOMEM;
    int rc = 0;
    while (sector < end && rc == 0) {
        uint64_t next = batch_cut(a, b, sector, end, 1);
        rc = write_batch(a, b, buf, sector, next);
        if (buf)
            buf += (size_t)(next - sector) * SECTOR;
        sector = next;
    }
    free(b);
    return rc;
}

/* ---- recovery and replace: member sectors of the targets ------------------------- */

struct r10_fill {
    struct uraid_array *a;
    struct array_job *j;
    struct raid10_copy cp[RAID10_MAX_COPIES];
    int ncp;
    uint8_t *buf;
    uint64_t start;            /* the target's member sector at buf */
    struct array_slot *to;
};

static int fill_try(void *ctx, uint64_t sector, uint32_t nsec)
{
    struct r10_fill *f = ctx;
    struct raid10_copy cp[RAID10_MAX_COPIES];
    for (int i = 0; i < f->ncp; i++)
        cp[i] = (struct raid10_copy){.disk = f->cp[i].disk, .sector = f->cp[i].sector + (sector - f->start)};
    int trouble = 0;
    return array_read_copies(f->a, cp, f->ncp, f->buf + (sector - f->start) * SECTOR, nsec, 1, &trouble);
}

static int fill_lost(void *ctx, uint64_t sector, uint32_t nsec)
{
    struct r10_fill *f = ctx;
    memset(f->buf + (sector - f->start) * SECTOR, 0, (size_t)nsec * SECTOR);
    return array_rebuild_unreadable(f->a, f->j, f->to, sector, nsec);
}

/* A re-added member (md's --re-add) needs the piece only where the
 * bitmap, over array sectors, shows a write since it left. */
static int readd_clean(struct uraid_array *a, const struct array_job *j, int t, uint64_t as, uint32_t nsec)
{
    unsigned readd = __atomic_load_n(&a->job.readd_mask, __ATOMIC_ACQUIRE);
    uint64_t rs, re;
    return j->kind == URAID_JOB_RECOVER && (readd >> t & 1) && !(wib_next_dirty(a, as, &rs, &re) && rs < as + nsec);
}

/* Chunk piece [ms, ms + nsec) of slot t, written to `to` (the slot's new
 * member, or a replace's replacement). The copies to read: the others in
 * md's order, the slot itself first for a replace (it is still good).
 * Returns JOB_SKIPPED for a re-added member's clean piece. */
static int fill_piece(struct uraid_array *a, struct array_job *j, int t, struct array_slot *to, uint8_t *buf,
                      uint64_t ms, uint32_t nsec)
{
    uint64_t as;
    int rc = raid10_unmap(a->r10, t, ms, &as);
    if (rc == -ENOENT) {
        __atomic_store_n(&to->recovered, ms + nsec, __ATOMIC_RELEASE);
        return 0; /* this place holds no chunk: no write can come here either */
    }
    if (rc)
        return rc;
    struct raid10_copy all[RAID10_MAX_COPIES];
    copies_at(a, as, all);
    struct r10_fill f = {.a = a, .j = j, .buf = buf, .start = ms, .to = to};
    if (j->kind == URAID_JOB_REPLACE)
        f.cp[f.ncp++] = (struct raid10_copy){.disk = t, .sector = ms};
    for (int i = 0; i < a->r10->copies; i++)
        if (all[i].disk != t)
            f.cp[f.ncp++] = all[i];
    uint16_t held[R10_MAX_UNITS];
    int nheld = lock_array_units(a, as, nsec, held);
    if (readd_clean(a, j, t, as, nsec)) {
        /* under the locks: a write that marks the bitmap after this finds the checkpoint past it */
        __atomic_store_n(&to->recovered, ms + nsec, __ATOMIC_RELEASE);
        stripe_unlock_set(&a->locks, held, nheld);
        return JOB_SKIPPED;
    }
    int trouble = 0;
    rc = array_read_copies(a, f.cp, f.ncp, buf, nsec, 1, &trouble);
    if (rc == -EIO) {
        /* down to the sectors: what no copy gives is listed on the target */
        static const struct narrow_ops ops = {.try = fill_try, .lost = fill_lost};
        rc = array_narrow(ms, nsec, 1, &ops, &f);
    }
    if (rc == 0) {
        struct io_op w = {.m = to->dev, .kind = IO_WRITE, .buf = buf, .len = (size_t)nsec * SECTOR,
                          .offset = (to->data_offset + ms) * SECTOR};
        array_run_ops(a, &w, 1);
        rc = w.result;
    }
    /* still under the chunk's locks: a write that follows sees the target
     * in sync here and writes its copy too (the checkpoint moves up piece
     * by piece, in member order) */
    if (rc == 0)
        __atomic_store_n(&to->recovered, ms + nsec, __ATOMIC_RELEASE);
    stripe_unlock_set(&a->locks, held, nheld);
    return rc;
}

int raid10_copy_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec)
{
    if (j->kind == URAID_JOB_RESYNC)
        return raid10_scrub_step(a, j, start, nsec);
    uint32_t c = a->r10->chunk_sectors;
    uint8_t *buf = array_scratch((size_t)c * SECTOR);
    int rc = buf ? 0 : -ENOMEM, worked = 0;
    for (int i = 0; i < j->ntargets && rc == 0; i++) {
        int t = j->target[i];
        struct array_slot *to = job_target(a, j);
        if (j->kind == URAID_JOB_RECOVER) {
            to = &a->slot[t];
            if (slot_ok_upto(a, t, start + nsec))
                continue;
        }
        for (uint64_t ms = start; ms < start + nsec && rc == 0;) {
            uint32_t n = (uint32_t)(c - ms % c);
            if (n > start + nsec - ms)
                n = (uint32_t)(start + nsec - ms);
            rc = fill_piece(a, j, t, to, buf, ms, n);
            worked |= rc == 0;
            if (rc == JOB_SKIPPED)
                rc = 0;
            ms += n;
        }
    }
    if (rc < 0)
        job_fail(j, "member sectors %llu-%llu: %s failed: %s", (unsigned long long)start,
                 (unsigned long long)(start + nsec - 1), uraid_job_name(j->kind), uraid_strerror(rc));
    return rc == 0 && !worked ? JOB_SKIPPED : rc;
}

/* ---- check, repair, resync: array sectors ---------------------------------------- */

static void note(struct array_job *j, const struct raid10_copy *cp, uint64_t sector, uint32_t nsec, int slot,
                 enum uraid_finding_kind kind, int repaired, uint32_t chunk)
{
    struct uraid_finding f = {.member_sector = cp->sector, .nsec = nsec, .stripe = sector / chunk, .slot = slot,
                              .kind = kind, .repaired = repaired};
    job_add_finding(j, &f);
}

/* One chunk piece: every usable copy read, each compared page by page
 * with the first that read (md's raid10 sync_request_write); check counts
 * the pages that differ, repair and resync write the reference over them;
 * a copy that failed its read is rewritten from the reference. */
static int scrub_chunk(struct uraid_array *a, struct array_job *j, uint64_t sector, uint32_t nsec, uint8_t *mem)
{
    int n = a->r10->copies;
    size_t len = (size_t)nsec * SECTOR;
    struct raid10_copy cp[RAID10_MAX_COPIES];
    copies_at(a, sector, cp);
    struct io_op ops[RAID10_MAX_COPIES];
    int nops = 0, who[RAID10_MAX_COPIES];
    for (int i = 0; i < n; i++)
        if (slot_ok(a, cp[i].disk)) {
            who[nops] = i;
            ops[nops++] = array_op(a, cp[i].disk, IO_READ, mem + (size_t)i * len, nsec, cp[i].sector);
        }
    array_run_ops(a, ops, nops);
    for (int k = 0; k < nops; k++) /* listed sectors hold stale data: unreadable here, rewritten below */
        if (ops[k].result == 0 && slot_has_bad(&a->slot[cp[who[k]].disk], cp[who[k]].sector, nsec))
            ops[k].result = -EIO;
    int ref = -1;
    for (int k = 0; k < nops && ref < 0; k++)
        if (ops[k].result == 0)
            ref = who[k];
    if (ref < 0 && nops) {
        /* no copy reads whole: page by page from any, into the first's place */
        int trouble = 0;
        if (array_read_copies(a, cp, n, mem + (size_t)who[0] * len, nsec, 0, &trouble)) {
            note(j, &cp[who[0]], sector, nsec, -1, URAID_FOUND_UNREADABLE, 0, a->r10->chunk_sectors);
            return 0;
        }
        ref = who[0];
        array_correct_read_error(a, cp[ref].disk, mem + (size_t)ref * len, nsec, cp[ref].sector);
        ops[0].result = 0;
    }
    if (ref < 0)
        return 0; /* no copy in sync: nothing to compare */
    const uint8_t *good = mem + (size_t)ref * len;
    int write = j->kind != URAID_JOB_CHECK;
    for (int k = 0; k < nops; k++) {
        int i = who[k], m = cp[i].disk;
        if (i == ref)
            continue;
        if (ops[k].result) {
            array_correct_read_error(a, m, good, nsec, cp[i].sector);
            continue;
        }
        for (uint32_t at = 0; at < nsec; at += 8) {
            uint32_t pl = nsec - at < 8 ? nsec - at : 8;
            size_t off = (size_t)at * SECTOR;
            if (!memcmp(mem + (size_t)i * len + off, good + off, (size_t)pl * SECTOR))
                continue;
            int repaired = 0;
            if (j->kind != URAID_JOB_RESYNC)
                __atomic_add_fetch(&j->mismatch_sectors, 8, __ATOMIC_RELAXED);
            if (write) {
                struct io_op w = array_op(a, m, IO_WRITE, (void *)(good + off), pl, cp[i].sector + at);
                array_run_ops(a, &w, 1);
                repaired = w.result == 0;
                if (repaired && j->kind == URAID_JOB_REPAIR)
                    __atomic_add_fetch(&j->repaired_sectors, pl, __ATOMIC_RELAXED);
                if (w.result)
                    array_member_failed(a, m, w.result, "rewriting a copy");
            }
            if (j->kind == URAID_JOB_RESYNC)
                continue;
            struct raid10_copy here = {.disk = m, .sector = cp[i].sector + at};
            note(j, &here, sector + at, pl, m, URAID_FOUND_MIRROR, repaired, a->r10->chunk_sectors);
            uraid_log(URAID_LOG_INFO, "member %s sector %llu: differs from its copy on %s%s", a->slot[m].dev->path,
                      (unsigned long long)(a->slot[m].data_offset + cp[i].sector + at),
                      a->slot[cp[ref].disk].dev->path, repaired ? ", repaired" : "");
        }
    }
    return 0;
}

int raid10_scrub_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec)
{
    uint32_t c = a->r10->chunk_sectors;
    uint8_t *mem = array_scratch((size_t)a->r10->copies * c * SECTOR);
    int rc = mem ? 0 : -ENOMEM;
    uint64_t end = start + nsec;
    for (uint64_t s = start; s < end && rc == 0;) {
        uint32_t n = chunk_piece(a, s, end);
        uint16_t held[R10_MAX_UNITS];
        int nheld = lock_array_units(a, s, n, held);
        rc = scrub_chunk(a, j, s, n, mem);
        stripe_unlock_set(&a->locks, held, nheld);
        s += n;
    }
    if (rc < 0)
        job_fail(j, "array sectors %llu-%llu: %s failed: %s", (unsigned long long)start,
                 (unsigned long long)(end - 1), uraid_job_name(j->kind), uraid_strerror(rc));
    return rc;
}

int raid10_copies_to_compare(const struct uraid_array *a)
{
    /* every md layout places chunk k's copies by k modulo the member count
     * (near, far, offset), so raid_disks^2 chunks show every placement */
    uint64_t c = a->r10->chunk_sectors, n = (uint64_t)a->geom.raid_disks;
    for (uint64_t k = 0; k < n * n && k * c < a->size_sectors; k++) {
        struct raid10_copy cp[RAID10_MAX_COPIES];
        copies_at(a, k * c, cp);
        int ok = 0;
        for (int i = 0; i < a->r10->copies; i++)
            ok += slot_ok(a, cp[i].disk);
        if (ok >= 2)
            return 1;
    }
    return 0;
}

/* ---- linear ---------------------------------------------------------------------- */

static int linear_io(struct uraid_array *a, enum io_kind kind, uint8_t *p, uint64_t sector, uint64_t end)
{
    int rc = 0;
    while (sector < end && rc == 0) {
        int m;
        uint64_t ms, left;
        rc = linear_map(a->lin, sector, &m, &ms, &left);
        if (rc)
            return rc;
        uint64_t n64 = end - sector < left ? end - sector : left;
        uint32_t n = n64 > (1u << 16) ? 1u << 16 : (uint32_t)n64;
        if (!slot_ok(a, m) || (kind == IO_READ && slot_has_bad(&a->slot[m], ms, n)))
            return -EIO;
        struct io_op op = array_op(a, m, kind, p, n, ms);
        array_run_ops(a, &op, 1);
        if (op.result) {
            uraid_log(URAID_LOG_ERROR, "member %s: %s error at sector %llu (%s); linear has no redundancy",
                      op.m->path, kind == IO_READ ? "read" : "write", (unsigned long long)(op.offset / SECTOR),
                      uraid_strerror(op.result));
            rc = op.result;
        }
        if (p)
            p += (size_t)n * SECTOR;
        sector += n;
    }
    return rc;
}

int array_read_linear(struct uraid_array *a, uint8_t *buf, uint64_t sector, uint64_t end)
{
    return linear_io(a, IO_READ, buf, sector, end);
}

int array_write_linear(struct uraid_array *a, const uint8_t *buf, uint64_t sector, uint64_t end)
{
    return linear_io(a, buf ? IO_WRITE : IO_ZERO, (uint8_t *)buf, sector, end);
}
