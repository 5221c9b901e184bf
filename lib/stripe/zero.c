/* Write-zeroes on RAID-4/5/6 (uraid_write_zeroes: NBD trim and zero, FUSE
 * fallocate punch/zero; RAID-0/1 zero every member's range directly): the
 * range reads as zeros afterwards.
 *
 * Whole stripes are zeroed on every member at once: a stripe of zeros is
 * consistent for every level (P and Q of zero data are zero), so nothing
 * is read or computed, and file members get holes (a thin image gives its
 * blocks back). The partial stripes at either end are ordinary writes of
 * zeros, which keep parity by read-modify-write as any write does. */
#include <errno.h>

#include "array/dataio.h"
#include "stripe/ppl.h"

#define ZERO_STRIPES 64u            /* stripes locked at a time */
#define ZERO_PIECE (1u << 20)       /* bytes of zeros per partial-stripe write */

/* Zeroes whole stripes [s0, s1): member sectors [s0 * c, s1 * c) of every
 * member (stripe s is row s of chunks on every member, in every layout). */
static int zero_stripes(struct uraid_array *a, uint64_t s0, uint64_t s1)
{
    uint32_t c = a->geom.chunk_sectors;
    int rc = 0;
    while (s0 < s1 && rc == 0) {
        uint64_t e = s1 - s0 > ZERO_STRIPES ? s0 + ZERO_STRIPES : s1;
        uint64_t stripes[ZERO_STRIPES];
        uint16_t held[ZERO_STRIPES];
        int ns = 0;
        for (uint64_t s = s0; s < e; s++)
            stripes[ns++] = s;
        int nheld = stripe_lock_set(&a->locks, stripes, ns, held);
        uint64_t lo = s0 * c, hi = e * c;
        struct io_op ops[URAID_MAX_MEMBERS];
        int who[URAID_MAX_MEMBERS], nops = 0;
        for (int m = 0; m < a->geom.raid_disks; m++) {
            uint64_t end = slot_writes_end(a, m, lo, hi);
            if (end < hi) /* this slot's chunks of these stripes go stale (or are rebuilt later) */
                for (uint64_t s = s0; s < e; s++)
                    array_note_degraded_write(a, s);
            if (end == lo)
                continue;
            who[nops] = m;
            ops[nops++] = array_op(a, m, IO_ZERO, NULL, (uint32_t)(end - lo), lo);
        }
        /* zeroing changes data: with a PPL it is logged as full-stripe writes */
        struct ppl_unit u = {0};
        struct ppl_stripe ps[ZERO_STRIPES];
        for (int i = 0; i < ns; i++)
            ps[i] = (struct ppl_stripe){.stripe = stripes[i], .r1 = (uint64_t)a->k * c};
        int logged = a->ppl ? ppl_begin(a, ps, ns, &u) : ns;
        if (logged >= 0 && logged < ns) /* 64 entries without partial parity always fit */
            logged = -EOVERFLOW;
        stripe_gen_bump(&a->locks, held, nheld);
        if (logged == ns)
            array_run_ops(a, ops, nops);
        stripe_gen_bump(&a->locks, held, nheld);
        if (a->ppl)
            ppl_end(a, &u);
        stripe_unlock_set(&a->locks, held, nheld);
        if (logged < 0)
            return logged;
        for (int i = 0; i < nops && rc == 0; i++) {
            uint32_t len = (uint32_t)(ops[i].len / SECTOR);
            if (ops[i].result)
                rc = array_member_failed(a, who[i], ops[i].result, "zeroing");
            else if (slot_has_bad(&a->slot[who[i]], lo, len))
                array_clear_bad(a, who[i], lo, len);
        }
        s0 = e;
    }
    return rc;
}

/* Array sectors [sector, end) of a partial stripe, as writes of zeros. */
static int zero_by_writing(struct uraid_array *a, uint64_t sector, uint64_t end)
{
    /* shared and never written: no allocation on the I/O path (FUSE) */
    static const uint8_t zeros[ZERO_PIECE] __attribute__((aligned(4096)));
    int rc = 0;
    for (uint64_t at = sector; at < end && rc == 0; at += ZERO_PIECE / SECTOR) {
        uint64_t stop = end - at < ZERO_PIECE / SECTOR ? end : at + ZERO_PIECE / SECTOR;
        rc = array_write_striped(a, zeros, at, stop);
    }
    return rc;
}

int array_zero_striped(struct uraid_array *a, uint64_t sector, uint64_t end)
{
    uint64_t stripe_sectors = (uint64_t)a->k * a->geom.chunk_sectors;
    uint64_t s0 = (sector + stripe_sectors - 1) / stripe_sectors, s1 = end / stripe_sectors;
    if (s0 >= s1) /* no whole stripe inside */
        return zero_by_writing(a, sector, end);
    int rc = zero_by_writing(a, sector, s0 * stripe_sectors);
    if (rc == 0)
        rc = zero_stripes(a, s0, s1);
    if (rc == 0)
        rc = zero_by_writing(a, s1 * stripe_sectors, end);
    return rc;
}
