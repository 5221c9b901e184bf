/* A stripe's rows gathered: every block that can be read is read (one
 * batch), every block that cannot is rebuilt from the others. When the
 * range as a whole has more blocks lost than the level survives (errors on
 * different members in different rows), it is gathered again 4 KiB row
 * group by row group, each judged on its own. As a last resort a failed
 * member's chunk of a stripe not written since it failed is read (its
 * replacement may still be rebuilding). Every request and job that needs
 * a stripe's blocks comes here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"

void rows_mark_unavailable(struct uraid_array *a, struct stripe_rows *r)
{
    uint64_t msec = r->stripe * a->geom.chunk_sectors + r->row;
    for (int m = 0; m < a->geom.raid_disks; m++)
        r->unavailable[m] = !slot_ok_upto(a, m, msec + r->nrows) || slot_has_bad(&a->slot[m], msec, r->nrows);
}

/* The parity engine's index of member m's block in the stripe (data slot,
 * then P, then Q), or -1. */
static int engine_index(const struct stripe_map *map, int m)
{
    for (int j = 0; j < map->nslots; j++)
        if (map->slot_disk[j] == m)
            return j;
    if (m == map->p_disk)
        return map->nslots;
    if (m >= 0 && m == map->q_disk)
        return map->nslots + 1;
    return -1;
}

int rows_recover(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero, const int *lost, int nlost)
{
    const struct stripe_map *map = &r->map;
    int nslots = map->nslots, raid6 = a->nparity == 2;
    void *blocks[URAID_PARITY_MAX_K + 2];
    int idx[2];
    if (nlost == 0)
        return 0;
    if (nlost > a->nparity)
        return -EIO;
    for (int j = 0; j < nslots; j++)
        blocks[j] = map->slot_disk[j] < 0 ? zero : r->block[map->slot_disk[j]];
    blocks[nslots] = r->block[map->p_disk];
    if (raid6)
        blocks[nslots + 1] = r->block[map->q_disk];
    for (int i = 0; i < nlost; i++)
        if ((idx[i] = engine_index(map, lost[i])) < 0)
            return -EINVAL;
    if (nlost == 2 && idx[0] > idx[1]) { /* the engine takes them in order */
        int t = idx[0];
        idx[0] = idx[1];
        idx[1] = t;
    }
    return uraid_recover(nslots, (size_t)r->nrows * SECTOR, blocks, raid6, nlost, idx);
}

/* Rebuilds every unavailable member's rows from the others (already read). */
static int rows_rebuild(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero)
{
    int lost[URAID_MAX_MEMBERS], nlost = 0;
    for (int m = 0; m < a->geom.raid_disks; m++)
        if (r->unavailable[m])
            lost[nlost++] = m;
    return nlost > a->nparity ? -EIO : rows_recover(a, r, zero, lost, nlost);
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

int rows_read_and_rebuild(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero, unsigned char *failed,
                          const unsigned char *have)
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
                      ops[i].m->path, (unsigned long long)(ops[i].offset / SECTOR),
                      uraid_strerror(ops[i].result));
        }
    int rc = rows_rebuild(a, r, zero);
    if (rc == -EIO)
        rc = rows_rebuild_with_old(a, r, zero);
    return rc;
}

static void merge_failed(unsigned char *into, const unsigned char *from, int n)
{
    if (into)
        for (int m = 0; m < n; m++)
            into[m] |= from[m];
}

int rows_gather(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero, const unsigned char *have,
                unsigned char *failed, rows_outcome_fn outcome, void *ctx)
{
    int n = a->geom.raid_disks;
    unsigned char f[URAID_MAX_MEMBERS] = {0}, read_ok[URAID_MAX_MEMBERS];
    for (int m = 0; m < n; m++) /* what the first pass reads, or has */
        read_ok[m] = (have && have[m]) || !r->unavailable[m];
    int rc = rows_read_and_rebuild(a, r, zero, f, have);
    merge_failed(failed, f, n);
    if (rc != -EIO || r->nrows <= STRIPE_PAGE_ROWS) {
        if (outcome)
            outcome(ctx, r, rc, f);
        return rc;
    }
    /* errors on several members, in different rows: page by page; the
     * members read whole without an error are in the buffers already */
    for (int m = 0; m < n; m++)
        read_ok[m] &= !f[m];
    rc = 0;
    struct stripe_rows *sub = malloc(sizeof *sub);
    if (!sub)
        return -ENOMEM;
    for (uint32_t at = 0; at < r->nrows; at += STRIPE_PAGE_ROWS) {
        *sub = *r;
        sub->row = r->row + at;
        sub->nrows = r->nrows - at < STRIPE_PAGE_ROWS ? r->nrows - at : STRIPE_PAGE_ROWS;
        for (int m = 0; m < n; m++)
            sub->block[m] = r->block[m] + (size_t)at * SECTOR;
        rows_mark_unavailable(a, sub);
        memset(f, 0, sizeof f);
        int g = rows_read_and_rebuild(a, sub, zero, f, read_ok);
        merge_failed(failed, f, n);
        if (outcome)
            outcome(ctx, sub, g, f);
        if (g && !rc)
            rc = g;
    }
    free(sub);
    return rc;
}

int rows_rebuild_any(struct uraid_array *a, struct stripe_rows *r, uint8_t *zero, unsigned char *failed,
                     const unsigned char *have)
{
    return rows_gather(a, r, zero, have, failed, NULL, NULL);
}

void rows_log_unrecoverable(struct uraid_array *a, uint64_t stripe, uint32_t row, uint32_t nrows)
{
    uint64_t first = stripe * a->geom.chunk_sectors + row;
    uraid_log(URAID_LOG_ERROR,
              "stripe %llu, member sectors %llu-%llu past data_offset: more blocks unreadable than RAID-%d survives; "
              "those array sectors cannot be read",
              (unsigned long long)stripe, (unsigned long long)first, (unsigned long long)(first + nrows - 1),
              a->geom.level);
}
