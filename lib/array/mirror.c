/* The data path of the levels without parity: RAID-1 (a read from one
 * mirror, others tried on errors and corrected; a write to every mirror)
 * and RAID-0 (writes straight to the chunks' members). */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"

#define RAID0_BATCH 256
#define RAID1_MAX_UNITS 64

/* Slot m can serve member sectors [sector, +nsec): in sync there and none
 * of them on its bad-block list (listed sectors hold stale data). */
int array_copy_usable(const struct uraid_array *a, int m, uint64_t sector, uint32_t nsec)
{
    return slot_ok_upto(a, m, sector + nsec) && !slot_has_bad(&a->slot[m], sector, nsec);
}

/* One read from slot m; -EAGAIN when the slot changed members meanwhile. */
int array_read_slot(struct uraid_array *a, int m, uint8_t *buf, uint32_t nsec, uint64_t sector)
{
    uint32_t gen = __atomic_load_n(&a->slots_gen, __ATOMIC_ACQUIRE);
    if (gen & 1)
        return -EAGAIN;
    struct io_op op = array_op(a, m, IO_READ, buf, nsec, sector);
    array_run_ops(a, &op, 1);
    if (__atomic_load_n(&a->slots_gen, __ATOMIC_ACQUIRE) != gen)
        return -EAGAIN;
    if (op.result)
        uraid_log(URAID_LOG_WARN, "member %s: read error at sector %llu (%s); trying another mirror",
                  a->slot[m].dev->path, (unsigned long long)(op.offset / SECTOR), uraid_strerror(op.result));
    return op.result;
}

/* Reads nsec sectors into buf from the copies cp[0..n) (a copy: a slot
 * and the member sector where it holds them; RAID-1's copies all sit at
 * the same sector, RAID-10's anywhere): whole from the first that can,
 * else page by page from any copy whose page is readable and not listed
 * bad, so errors on different copies in different places lose nothing.
 * *trouble is set when some copy failed a read; with `correct`, each copy
 * that failed gets the range rewritten (the caller holds the units' locks
 * then, so the rewrite cannot overwrite a newer write). */
int array_read_copies(struct uraid_array *a, const struct raid10_copy *cp, int n, uint8_t *buf, uint32_t nsec,
                      int correct, int *trouble)
{
    unsigned char failed[URAID_MAX_MEMBERS] = {0};
    int done = 0;
    for (int i = 0; i < n && !done; i++) {
        if (!array_copy_usable(a, cp[i].disk, cp[i].sector, nsec))
            continue;
        int rc = array_read_slot(a, cp[i].disk, buf, nsec, cp[i].sector);
        if (rc == -EAGAIN) {
            i--; /* the slot changed members: read it again */
            sched_yield();
            continue;
        }
        done = rc == 0;
        failed[i] = rc != 0;
    }
    for (uint32_t at = 0; at < nsec && !done; at += 8) {
        uint32_t len = nsec - at < 8 ? nsec - at : 8;
        int got = 0;
        for (int i = 0; i < n && !got; i++) {
            if (!array_copy_usable(a, cp[i].disk, cp[i].sector + at, len))
                continue;
            int rc = array_read_slot(a, cp[i].disk, buf + (size_t)at * SECTOR, len, cp[i].sector + at);
            if (rc == -EAGAIN) {
                i--;
                sched_yield();
                continue;
            }
            got = rc == 0;
            failed[i] |= rc != 0;
        }
        if (!got) {
            uraid_log(URAID_LOG_ERROR, "member sectors %llu-%llu of slot %d: no copy could be read",
                      (unsigned long long)(cp[0].sector + at), (unsigned long long)(cp[0].sector + at + len - 1),
                      cp[0].disk);
            *trouble = 1;
            return -EIO;
        }
    }
    for (int i = 0; i < n; i++) {
        *trouble |= failed[i];
        if (failed[i] && correct)
            array_correct_read_error(a, cp[i].disk, buf, nsec, cp[i].sector);
    }
    return 0;
}

/* RAID-1: the mirrors in order[], all at member sector `sector`. */
static int read_mirrors(struct uraid_array *a, const int *order, int n, uint8_t *buf, uint64_t sector, uint32_t nsec,
                        int correct, int *trouble)
{
    struct raid10_copy cp[URAID_MAX_MEMBERS];
    for (int i = 0; i < n; i++)
        cp[i] = (struct raid10_copy){.disk = order[i], .sector = sector};
    return array_read_copies(a, cp, n, buf, nsec, correct, trouble);
}

/* Locks the mirror units covering [sector, sector + nsec) (at most
 * RAID1_MAX_UNITS of them). */
static int lock_units(struct uraid_array *a, uint64_t sector, uint32_t nsec, uint16_t *held)
{
    uint64_t units[RAID1_MAX_UNITS];
    int nu = 0;
    for (uint64_t u = sector / RAID1_UNIT; u * RAID1_UNIT < sector + nsec && nu < RAID1_MAX_UNITS; u++)
        units[nu++] = u;
    return stripe_lock_set(&a->locks, units, nu, held);
}

/* The longest piece from sector that stays within RAID1_MAX_UNITS units. */
static uint32_t unit_piece(uint64_t sector, uint64_t nsec)
{
    uint64_t room = (sector / RAID1_UNIT + RAID1_MAX_UNITS) * RAID1_UNIT - sector;
    return (uint32_t)(nsec < room ? nsec : room);
}

int array_read_mirror(struct uraid_array *a, uint8_t *buf, uint64_t sector, uint32_t nsec)
{
    int order[URAID_MAX_MEMBERS], trouble = 0;
    for (int m = 0; m < a->geom.raid_disks; m++)
        order[m] = m;
    int rc = read_mirrors(a, order, a->geom.raid_disks, buf, sector, nsec, 0, &trouble);
    /* a mirror failed: read again under the units' locks and rewrite what it lost */
    while (trouble && nsec) {
        uint32_t n = unit_piece(sector, nsec);
        uint16_t held[RAID1_MAX_UNITS];
        int nheld = lock_units(a, sector, n, held);
        rc = read_mirrors(a, order, a->geom.raid_disks, buf, sector, n, 1, &trouble);
        stripe_unlock_set(&a->locks, held, nheld);
        if (rc)
            return rc;
        buf += (size_t)n * SECTOR;
        sector += n;
        nsec -= n;
    }
    return rc;
}

int array_write_mirror(struct uraid_array *a, const uint8_t *buf, uint64_t sector, uint64_t nsec)
{
    int rc = 0;
    while (nsec && rc == 0) {
        uint32_t n = unit_piece(sector, nsec);
        uint16_t held[RAID1_MAX_UNITS];
        int nheld = lock_units(a, sector, n, held);
        /* under the units' locks: a mirror being rebuilt gets the part its
         * rebuild has passed (the rest it copies later) */
        struct io_op ops[URAID_MAX_MEMBERS];
        int nops = 0, who[URAID_MAX_MEMBERS];
        for (int m = 0; m < a->geom.raid_disks; m++) {
            uint32_t len = (uint32_t)(slot_writes_end(a, m, sector, sector + n) - sector);
            if (!len)
                continue;
            who[nops] = m;
            ops[nops++] = array_op(a, m, buf ? IO_WRITE : IO_ZERO, (void *)buf, len, sector);
        }
        array_run_ops(a, ops, nops);
        /* a mirror that cannot take the write keeps the range on its
         * bad-block list (md's rule) while another mirror holds the data;
         * still locked, as a failed write is tried again piece by piece */
        int stored = 0, lost = 0;
        for (int i = 0; i < nops; i++) {
            uint32_t len = (uint32_t)(ops[i].len / SECTOR);
            if (ops[i].result == 0) {
                stored++;
                if (slot_has_bad(&a->slot[who[i]], sector, len))
                    array_clear_bad(a, who[i], sector, len);
            } else if (array_write_failed(a, who[i], &ops[i])) {
                lost = 1;
            }
        }
        stripe_unlock_set(&a->locks, held, nheld);
        rc = stored && !lost ? 0 : -EIO;
        if (buf)
            buf += (size_t)n * SECTOR;
        sector += n;
        nsec -= n;
    }
    return rc;
}

/* Reads [start, start + nsec) for a job holding the units' locks: `first`
 * tried first, `skip` never; with `correct`, read errors are rewritten as
 * on a user read. */
static int read_any_mirror(struct uraid_array *a, int first, int skip, uint8_t *buf, uint64_t start, uint32_t nsec,
                           int correct)
{
    int order[URAID_MAX_MEMBERS], n = 0, trouble = 0;
    if (first >= 0)
        order[n++] = first;
    for (int m = 0; m < a->geom.raid_disks; m++)
        if (m != first && m != skip)
            order[n++] = m;
    return read_mirrors(a, order, n, buf, start, nsec, correct, &trouble);
}

/* Recovery and replace over sectors no mirror can give: md lists them bad
 * on the new members and goes on (raid1 sync_request, fix_sync_read_error). */
struct copy_retry {
    struct uraid_array *a;
    struct array_job *j;
    uint8_t *buf;
    uint64_t start;
    int first;                             /* the mirror to read first, or -1 */
    struct array_slot *to[URAID_MAX_MEMBERS]; /* the members being filled */
    int nto;
};

static int copy_try(void *ctx, uint64_t sector, uint32_t nsec)
{
    struct copy_retry *c = ctx;
    return read_any_mirror(c->a, c->first, -1, c->buf + (sector - c->start) * SECTOR, sector, nsec, 1);
}

static int copy_lost(void *ctx, uint64_t sector, uint32_t nsec)
{
    struct copy_retry *c = ctx;
    memset(c->buf + (sector - c->start) * SECTOR, 0, (size_t)nsec * SECTOR);
    int rc = 0;
    for (int i = 0; i < c->nto && rc == 0; i++)
        rc = array_rebuild_unreadable(c->a, c->j, c->to[i], sector, nsec);
    return rc;
}

/* Reads [start, start + nsec) for the members in c->to; on a read error,
 * down to the sectors: what is listed on the sources is exactly what is lost. */
static int copy_read(struct copy_retry *c, uint64_t start, uint32_t nsec)
{
    int rc = read_any_mirror(c->a, c->first, -1, c->buf, start, nsec, 1);
    if (rc == -EIO) {
        static const struct narrow_ops ops = {.try = copy_try, .lost = copy_lost};
        rc = array_narrow(start, nsec, 1, &ops, c);
    }
    return rc;
}

/* Recovery of [start, start + nsec) under the units' locks: one read from
 * a mirror in sync there, written to every target not yet past it (the
 * targets rebuilt together). Targets that are all re-added, in a range
 * the bitmap shows clean, only move their checkpoints (JOB_SKIPPED). */
static int raid1_recover_units(struct uraid_array *a, struct array_job *j, uint8_t *buf, uint64_t start, uint32_t nsec)
{
    struct io_op w[URAID_MAX_MEMBERS];
    int nw = 0, plain = 0;
    unsigned readd = __atomic_load_n(&a->job.readd_mask, __ATOMIC_ACQUIRE);
    struct copy_retry c = {.a = a, .j = j, .buf = buf, .start = start, .first = -1};
    for (int i = 0; i < j->ntargets; i++) {
        int t = j->target[i];
        if (slot_ok_upto(a, t, start + nsec))
            continue;
        plain |= !(readd >> t & 1);
        c.to[nw] = &a->slot[t];
        w[nw++] = (struct io_op){.m = a->slot[t].dev, .kind = IO_WRITE, .buf = buf, .len = (size_t)nsec * SECTOR,
                                 .offset = (a->slot[t].data_offset + start) * SECTOR};
    }
    c.nto = nw;
    uint64_t rs, re;
    int skip = !nw || (!plain && !(wib_next_dirty(a, start, &rs, &re) && rs < start + nsec));
    int rc = skip ? 0 : copy_read(&c, start, nsec);
    if (rc == 0 && !skip)
        array_run_ops(a, w, nw);
    for (int i = 0; i < nw && rc == 0; i++)
        rc = w[i].result;
    for (int i = 0; i < nw && rc == 0; i++)
        __atomic_store_n(&c.to[i]->recovered, start + nsec, __ATOMIC_RELEASE);
    return rc == 0 && skip ? JOB_SKIPPED : rc;
}

int raid1_copy_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec)
{
    uint16_t held[RAID1_MAX_UNITS];
    int nheld = lock_units(a, start, nsec, held);
    uint8_t *buf = array_scratch((size_t)nsec * SECTOR);
    int rc = buf ? 0 : -ENOMEM;
    if (j->kind == URAID_JOB_RESYNC) {
        /* md's RAID-1 resync: the first readable mirror's copy to all others */
        int src = -1;
        for (int m = 0; m < a->geom.raid_disks && src < 0; m++)
            if (slot_ok(a, m))
                src = m;
        if (rc == 0)
            rc = read_any_mirror(a, src, -1, buf, start, nsec, 1);
        struct io_op ops[URAID_MAX_MEMBERS];
        int nops = 0, who[URAID_MAX_MEMBERS];
        for (int m = 0; m < a->geom.raid_disks && rc == 0; m++)
            if (m != src && slot_ok(a, m)) {
                who[nops] = m;
                ops[nops++] = array_op(a, m, IO_WRITE, buf, nsec, start);
            }
        if (rc == 0)
            array_run_ops(a, ops, nops);
        for (int i = 0; i < nops && rc == 0; i++)
            if (ops[i].result)
                rc = array_member_failed(a, who[i], ops[i].result, "resyncing");
    } else if (j->kind == URAID_JOB_REPLACE) {
        struct array_slot *to = job_target(a, j);
        if (rc == 0)
        if (rc == 0) {
            struct copy_retry c = {.a = a, .j = j, .buf = buf, .start = start, .first = j->source, .to = {to}, .nto = 1};
            rc = copy_read(&c, start, nsec);
        }
        if (rc == 0) {
            struct io_op w = {.m = to->dev, .kind = IO_WRITE, .buf = buf, .len = (size_t)nsec * SECTOR,
                              .offset = (to->data_offset + start) * SECTOR};
            array_run_ops(a, &w, 1);
            rc = w.result;
        }
        if (rc == 0)
            __atomic_store_n(&to->recovered, start + nsec, __ATOMIC_RELEASE);
    } else if (rc == 0) {
        rc = raid1_recover_units(a, j, buf, start, nsec);
    }
    stripe_unlock_set(&a->locks, held, nheld);
    if (rc < 0)
        job_fail(j, "member sectors %llu-%llu: %s failed: %s", (unsigned long long)start,
                 (unsigned long long)(start + nsec - 1), uraid_job_name(j->kind), uraid_strerror(rc));
    return rc;
}

int array_write_raid0(struct uraid_array *a, const uint8_t *p, uint64_t sector, uint64_t end)
{
    struct io_op ops[RAID0_BATCH];
    int rc = 0;
    while (sector < end && rc == 0) {
        int n = 0;
        while (sector < end && n < RAID0_BATCH) {
            struct layout_addr ad;
            rc = array_map(a, sector, &ad);
            if (rc)
                return rc;
            uint64_t left = a->geom.chunk_sectors - ad.chunk_off;
            uint32_t nsec = (uint32_t)(end - sector < left ? end - sector : left);
            if (!slot_ok(a, ad.disk))
                return -EIO;
            ops[n++] = array_op(a, ad.disk, p ? IO_WRITE : IO_ZERO, (void *)p, nsec, ad.member_sector);
            if (p)
                p += (size_t)nsec * SECTOR;
            sector += nsec;
        }
        array_run_ops(a, ops, n);
        for (int i = 0; i < n && rc == 0; i++)
            if (ops[i].result) {
                uraid_log(URAID_LOG_ERROR, "member %s: write error at sector %llu (%s); RAID-0 has no redundancy",
                          ops[i].m->path, (unsigned long long)(ops[i].offset / SECTOR), uraid_strerror(ops[i].result));
                rc = ops[i].result;
            }
    }
    return rc;
}


int raid1_scrub_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec)
{
    int n = a->geom.raid_disks;
    size_t len = (size_t)nsec * SECTOR;
    uint16_t held[RAID1_MAX_UNITS];
    int nheld = lock_units(a, start, nsec, held);
    uint8_t *mem = array_scratch((size_t)n * len);
    int rc = mem ? 0 : -ENOMEM;
    struct io_op ops[URAID_MAX_MEMBERS];
    int nops = 0, who[URAID_MAX_MEMBERS];
    for (int m = 0; m < n && rc == 0; m++)
        if (slot_ok(a, m)) {
            who[nops] = m;
            ops[nops++] = array_op(a, m, IO_READ, mem + (size_t)m * len, nsec, start);
        }
    if (rc == 0)
        array_run_ops(a, ops, nops);
    /* listed sectors hold stale data: such a mirror is treated as unreadable here and rewritten */
    for (int i = 0; i < nops; i++)
        if (ops[i].result == 0 && slot_has_bad(&a->slot[who[i]], start, nsec))
            ops[i].result = -EIO;
    /* the reference copy: the first mirror that read */
    int ref = -1;
    for (int i = 0; i < nops && ref < 0 && rc == 0; i++)
        if (ops[i].result == 0)
            ref = who[i];
    if (rc == 0 && ref < 0) {
        /* no mirror reads whole: page by page from any, as a read does */
        /* no correction there: the loop below rewrites every mirror that failed */
        rc = read_any_mirror(a, -1, -1, mem, start, nsec, 0);
        if (rc == 0) {
            ref = 0;
            for (int i = 0; i < nops; i++)
                if (who[i] == 0 && ops[i].result) {
                    /* mem holds the assembled copy in slot 0's place: mend slot 0 from it */
                    array_correct_read_error(a, 0, mem, nsec, start);
                    ops[i].result = 0;
                }
        } else {
            struct uraid_finding f = {.member_sector = start, .nsec = nsec, .stripe = start / RAID1_UNIT, .slot = -1,
                                      .kind = URAID_FOUND_UNREADABLE};
            job_add_finding(j, &f);
            rc = 0;
        }
    }
    const uint8_t *good = ref >= 0 ? mem + (size_t)ref * len : NULL;
    for (int i = 0; i < nops && good && rc == 0; i++) {
        int m = who[i];
        if (m == ref)
            continue;
        if (ops[i].result) { /* a read error: rewrite it from the reference, as md does during a check */
            array_correct_read_error(a, m, good, nsec, start);
            continue;
        }
        const uint8_t *mine = mem + (size_t)m * len;
        for (uint32_t at = 0; at < nsec; at += 8) {
            uint32_t pl = nsec - at < 8 ? nsec - at : 8;
            size_t off = (size_t)at * SECTOR;
            if (!memcmp(mine + off, good + off, (size_t)pl * SECTOR))
                continue;
            __atomic_add_fetch(&j->mismatch_sectors, 8, __ATOMIC_RELAXED);
            struct uraid_finding f = {.member_sector = start + at, .nsec = pl, .stripe = (start + at) / RAID1_UNIT,
                                      .slot = m, .kind = URAID_FOUND_MIRROR};
            if (j->kind == URAID_JOB_REPAIR) {
                struct io_op w = array_op(a, m, IO_WRITE, (void *)(good + off), pl, start + at);
                array_run_ops(a, &w, 1);
                f.repaired = w.result == 0;
                if (f.repaired)
                    __atomic_add_fetch(&j->repaired_sectors, pl, __ATOMIC_RELAXED);
            }
            uraid_log(URAID_LOG_INFO, "member %s sector %llu: differs from mirror %s%s", a->slot[m].dev->path,
                      (unsigned long long)(a->slot[m].data_offset + start + at), a->slot[ref].dev->path,
                      f.repaired ? ", repaired" : "");
            job_add_finding(j, &f);
        }
    }
    stripe_unlock_set(&a->locks, held, nheld);
    return rc;
}
