/* Bad sectors are repaired, not punished (issue 6). A read error is served
 * by rebuilding the rows from the stripe; then the rows are written back
 * and read again to verify, as md does. Only if that fails is the range
 * recorded in the member's md bad-block log (feature BAD_BLOCKS, the format
 * mdadm --examine-badblocks lists); the member stays in the array, reads of
 * listed ranges are rebuilt from the others, and a later successful write
 * of the range takes it off the list. A member is failed only when the
 * range cannot be recorded (no log, log full) or the member is gone.
 *
 * Readers check the lists without a lock (slot_has_bad), so a list is never
 * changed in place: a changed copy is published with an atomic store and
 * the old one kept until the array is closed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"

/* Publishes l as slot m's list (meta_lock held). */
static void publish(struct uraid_array *a, struct array_slot *sl, struct md_bblist *l)
{
    struct md_bblist *old = sl->badblocks;
    __atomic_store_n(&sl->badblocks, l, __ATOMIC_RELEASE);
    if (old) {
        struct bb_retired *r = malloc(sizeof *r);
        if (r) {
            r->list = old;
            r->next = a->bb_retired;
            a->bb_retired = r;
        }
        /* without memory for the note the old list is leaked, never freed under a reader */
    }
}

/* Writes slot m's log area and sets or clears BAD_BLOCKS (meta_lock held). */
static int save_log(struct array_slot *sl)
{
    struct md_sb *sb = &sl->sb;
    /* decode refused such a log already; this keeps a stray superblock in
     * memory from writing one over the superblock or the data */
    if (md_sb_check_bblog(sb, NULL, 0))
        return -EINVAL;
    size_t bytes = (size_t)sb->bblog_size * SECTOR;
    if (bytes > MD_BB_MAX_LOG_BYTES)
        bytes = MD_BB_MAX_LOG_BYTES;
    uint8_t *area = aligned_alloc(4096, 4096);
    if (!area)
        return -ENOMEM;
    int n = md_bb_encode(sl->badblocks, area, bytes);
    int rc = n < 0 ? n : 0;
    int64_t at = md_sb_bblog_sector(sb);
    if (rc == 0)
        rc = at > 0 ? member_write(sl->dev, area, bytes, (uint64_t)at * SECTOR) : -EINVAL;
    free(area);
    if (rc == 0) {
        if (sl->badblocks->count)
            sb->feature_map |= MD_FEATURE_BAD_BLOCKS;
        else
            sb->feature_map &= ~MD_FEATURE_BAD_BLOCKS;
    }
    return rc;
}

int array_record_bad(struct uraid_array *a, int m, uint64_t member_sector, uint32_t nsec)
{
    struct array_slot *sl = &a->slot[m];
    if (a->readonly)
        return -EROFS;
    pthread_mutex_lock(&a->meta_lock);
    int rc = 0;
    if (!sl->dev || !sl->sb.bblog_offset || !sl->sb.bblog_size) {
        rc = -ENOSPC; /* the member has no bad-block log (mdadm --update=no-bbl) */
    } else {
        struct md_bblist *l = malloc(sizeof *l);
        if (!l) {
            rc = -ENOMEM;
        } else {
            if (sl->badblocks)
                *l = *sl->badblocks;
            else
                md_bb_init(l, sl->sb.bblog_shift);
            rc = md_bb_add(l, sl->data_offset + member_sector, nsec);
            if (rc == 0 && md_bb_entries_needed(l) * 8u > (uint32_t)sl->sb.bblog_size * SECTOR)
                rc = -ENOSPC;
            if (rc) {
                free(l);
            } else {
                publish(a, sl, l);
                rc = save_log(sl);
            }
        }
    }
    pthread_mutex_unlock(&a->meta_lock);
    if (rc == 0) {
        uraid_log(URAID_LOG_WARN,
                  "member %s: sectors %llu-%llu cannot be rewritten; recorded in its bad-block log and rebuilt from "
                  "the other members when read (mdadm --examine-badblocks lists them)",
                  sl->dev->path, (unsigned long long)(sl->data_offset + member_sector),
                  (unsigned long long)(sl->data_offset + member_sector + nsec - 1));
        rc = array_write_superblocks(a);
    }
    return rc;
}

void array_clear_bad(struct uraid_array *a, int m, uint64_t member_sector, uint32_t nsec)
{
    struct array_slot *sl = &a->slot[m];
    pthread_mutex_lock(&a->meta_lock);
    struct md_bblist *cur = sl->badblocks, *l = NULL;
    int changed = 0;
    if (cur && md_bb_check(cur, sl->data_offset + member_sector, nsec, NULL, NULL) && (l = malloc(sizeof *l))) {
        *l = *cur;
        /* only whole units are cleared: a partial write can leave the list as it was */
        changed = md_bb_clear(l, sl->data_offset + member_sector, nsec) == 0 &&
                  (l->count != cur->count || memcmp(l->r, cur->r, sizeof l->r[0] * l->count));
        if (changed) {
            publish(a, sl, l);
            save_log(sl);
        } else {
            free(l);
        }
    }
    pthread_mutex_unlock(&a->meta_lock);
    if (changed) {
        uraid_log(URAID_LOG_INFO, "member %s: sectors %llu-%llu written again; taken off its bad-block log",
                  sl->dev->path, (unsigned long long)(sl->data_offset + member_sector),
                  (unsigned long long)(sl->data_offset + member_sector + nsec - 1));
        array_write_superblocks(a);
    }
}

int array_write_failed(struct uraid_array *a, int m, int err, uint64_t member_sector, uint32_t nsec)
{
    if (err != -ENXIO && array_record_bad(a, m, member_sector, nsec) == 0)
        return 0;
    return array_member_failed(a, m, err, "writing");
}

/* Writes rows to slot m and reads them back; 0 when the member keeps them. */
static int rewrite_and_verify(struct uraid_array *a, int m, const uint8_t *data, uint32_t nsec, uint64_t member_sector,
                              uint8_t *back)
{
    struct io_op op = array_op(a, m, IO_WRITE, (void *)data, nsec, member_sector);
    array_run_ops(a, &op, 1);
    if (op.result)
        return op.result;
    /* a sector the disk could not remap still fails, or returns something else */
    struct io_op rd = array_op(a, m, IO_READ, back, nsec, member_sector);
    array_run_ops(a, &rd, 1);
    return rd.result ? rd.result : memcmp(back, data, (size_t)nsec * SECTOR) ? -EIO : 0;
}

#define BAD_UNIT 8u /* sectors: a 4 KiB page, what disks remap */

void array_correct_read_error(struct uraid_array *a, int m, const void *data, uint32_t nsec, uint64_t member_sector)
{
    if (a->readonly || !slot_ok_upto(a, m, member_sector + nsec))
        return;
    uint8_t *back = array_scratch_plans((size_t)nsec * SECTOR);
    int rc = back ? rewrite_and_verify(a, m, data, nsec, member_sector, back) : -ENOMEM;
    if (rc == 0) {
        array_note_corrected_read(a, m);
        uraid_log(URAID_LOG_INFO, "member %s: sectors %llu-%llu rewritten from the other members after a read error",
                  a->slot[m].dev->path, (unsigned long long)(a->slot[m].data_offset + member_sector),
                  (unsigned long long)(a->slot[m].data_offset + member_sector + nsec - 1));
        if (slot_has_bad(&a->slot[m], member_sector, nsec))
            array_clear_bad(a, m, member_sector, nsec); /* it holds them again */
        return;
    }
    if (rc == -ENXIO || rc == -ENOMEM) {
        array_member_failed(a, m, rc, "rewriting after a read error");
        return;
    }
    /* page by page, so only what the member cannot keep is listed */
    const uint8_t *p = data;
    for (uint32_t at = 0; at < nsec; at += BAD_UNIT) {
        uint32_t n = nsec - at < BAD_UNIT ? nsec - at : BAD_UNIT;
        rc = rewrite_and_verify(a, m, p + (size_t)at * SECTOR, n, member_sector + at, back);
        if (rc == 0)
            continue;
        if (rc == -ENXIO || array_write_failed(a, m, rc, member_sector + at, n) || !slot_ok(a, m))
            return;
    }
}
