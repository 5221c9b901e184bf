/* The data path of the levels without parity: RAID-1 (a read from one
 * mirror, others tried on errors and corrected; a write to every mirror)
 * and RAID-0 (writes straight to the chunks' members). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"

#define RAID0_BATCH 256

int array_read_mirror(struct uraid_array *a, uint8_t *buf, uint64_t sector, uint32_t nsec)
{
    int failed[URAID_MAX_MEMBERS], nfailed = 0;
    for (int m = 0; m < a->geom.raid_disks; m++) {
        if (!slot_ok(a, m) || slot_has_bad(&a->slot[m], sector, nsec))
            continue;
        struct io_op op = array_op(a, m, IO_READ, buf, nsec, sector);
        array_run_ops(a, &op, 1);
        if (op.result == 0) {
            for (int i = 0; i < nfailed; i++)
                array_correct_read_error(a, failed[i], buf, nsec, sector);
            return 0;
        }
        uraid_log(URAID_LOG_WARN, "member %s: read error at sector %llu (%s); trying another mirror",
                  a->slot[m].dev->path, (unsigned long long)(op.offset / SECTOR), uraid_strerror(op.result));
        failed[nfailed++] = m;
    }
    uraid_log(URAID_LOG_ERROR, "array sectors %llu-%llu: no mirror could be read", (unsigned long long)sector,
              (unsigned long long)(sector + nsec - 1));
    return -EIO;
}

int array_write_mirror(struct uraid_array *a, const uint8_t *buf, uint64_t sector, uint32_t nsec)
{
    struct io_op ops[URAID_MAX_MEMBERS];
    int n = 0;
    for (int m = 0; m < a->geom.raid_disks; m++)
        if (slot_ok(a, m))
            ops[n++] = array_op(a, m, IO_WRITE, (void *)buf, nsec, sector);
    uint64_t stripe = sector / 8;
    uint16_t held[1];
    int nheld = stripe_lock_set(&a->locks, &stripe, 1, held);
    array_run_ops(a, ops, n);
    stripe_unlock_set(&a->locks, held, nheld);
    int rc = n ? 0 : -EIO;
    for (int i = 0; i < n && rc == 0; i++)
        if (ops[i].result) {
            for (int m = 0; m < a->geom.raid_disks; m++)
                if (a->slot[m].dev == ops[i].m)
                    rc = array_member_failed(a, m, ops[i].result, "writing");
        }
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
            rc = layout_map(&a->geom, sector, &ad);
            if (rc)
                return rc;
            uint64_t left = a->geom.chunk_sectors - ad.chunk_off;
            uint32_t nsec = (uint32_t)(end - sector < left ? end - sector : left);
            if (!slot_ok(a, ad.disk))
                return -EIO;
            ops[n++] = array_op(a, ad.disk, IO_WRITE, (void *)p, nsec, ad.member_sector);
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

