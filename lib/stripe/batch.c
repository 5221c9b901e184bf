/* Jobs' batches: a run of stripes read with one request per member (large
 * requests stream at member speed), then each stripe's rows used in place
 * from those buffers. A member whose batch read failed is read again, per
 * stripe, by rows_gather. */
#include <errno.h>

#include "array/dataio.h"

int stripe_batch_reads(struct uraid_array *a, const struct stripe_batch *b, const unsigned char *skip,
                       struct io_op *ops, int *who)
{
    int nops = 0;
    for (int m = 0; m < a->geom.raid_disks; m++) {
        if ((skip && skip[m]) || !b->base[m] || !slot_ok_upto(a, m, b->end))
            continue;
        who[nops] = m;
        ops[nops++] = array_op(a, m, IO_READ, b->base[m], (uint32_t)(b->end - b->start), b->start);
    }
    return nops;
}

void stripe_batch_results(struct stripe_batch *b, const struct io_op *ops, const int *who, int nops)
{
    for (int i = 0; i < nops; i++)
        b->readok[who[i]] = ops[i].result == 0;
}

void stripe_batch_read(struct uraid_array *a, struct stripe_batch *b, const unsigned char *skip)
{
    struct io_op ops[URAID_MAX_MEMBERS];
    int who[URAID_MAX_MEMBERS];
    for (int m = 0; m < URAID_MAX_MEMBERS; m++)
        b->readok[m] = 0;
    int nops = stripe_batch_reads(a, b, skip, ops, who);
    array_run_ops(a, ops, nops);
    stripe_batch_results(b, ops, who, nops);
}

int stripe_batch_rows(struct uraid_array *a, const struct stripe_batch *b, uint64_t s, struct stripe_rows *r)
{
    uint32_t c = a->geom.chunk_sectors;
    uint64_t first = s * c;
    if (first < b->start || first >= b->end)
        return -EINVAL;
    r->stripe = s;
    r->row = 0;
    r->nrows = (uint32_t)(first + c <= b->end ? c : b->end - first);
    int rc = layout_stripe(&a->geom, s, &r->map);
    if (rc)
        return rc;
    size_t at = (size_t)(first - b->start) * SECTOR;
    for (int m = 0; m < a->geom.raid_disks; m++)
        r->block[m] = b->base[m] ? b->base[m] + at : NULL;
    rows_mark_unavailable(a, r);
    return 0;
}
