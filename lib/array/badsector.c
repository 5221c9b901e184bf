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
    return array_write_bblog(sl->dev, &sl->sb, sl->badblocks);
}

/* Why a range is recorded: the words of the warning. */
enum bad_cause { BAD_REWRITE, BAD_WRITE, BAD_REBUILD };

/* Records member sectors [member_sector, +nsec) of sl as bad and writes its
 * log, then the superblocks (BAD_BLOCKS). sl is a slot or the replacement. */
static int record_bad(struct uraid_array *a, struct array_slot *sl, uint64_t member_sector, uint32_t nsec,
                      enum bad_cause cause)
{
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
    if (rc)
        return rc;
    static const char *const what[] = {
        [BAD_REWRITE] = "cannot be rewritten; recorded in its bad-block log and rebuilt from the other members "
                        "when read",
        [BAD_WRITE] = "cannot be written; recorded in its bad-block log and rebuilt from the other members when "
                      "read",
        [BAD_REBUILD] = "could not be rebuilt (unreadable on the other members too); recorded in its bad-block "
                        "log: reads of them fail until they are written again",
    };
    uraid_log(URAID_LOG_WARN, "member %s: sectors %llu-%llu %s (mdadm --examine-badblocks lists them)",
              sl->dev->path, (unsigned long long)(sl->data_offset + member_sector),
              (unsigned long long)(sl->data_offset + member_sector + nsec - 1), what[cause]);
    return array_write_superblocks(a);
}

int array_record_bad(struct uraid_array *a, int m, uint64_t member_sector, uint32_t nsec)
{
    return record_bad(a, &a->slot[m], member_sector, nsec, BAD_REWRITE);
}

int array_rebuild_unreadable(struct uraid_array *a, struct array_job *j, struct array_slot *target,
                             uint64_t member_sector, uint32_t nsec)
{
    int rc = record_bad(a, target, member_sector, nsec, BAD_REBUILD);
    if (rc)
        job_fail(j,
                 "member %s: sectors %llu-%llu cannot be rebuilt (unreadable on the other members) nor recorded in "
                 "its bad-block log (%s); the %s stops there: make them readable on the other members, or use a "
                 "member with room in its bad-block log",
                 target->dev->path, (unsigned long long)(target->data_offset + member_sector),
                 (unsigned long long)(target->data_offset + member_sector + nsec - 1),
                 rc == -ENOSPC ? "it has none, or it is full" : uraid_strerror(rc), uraid_job_name(j->kind));
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

/* ---- narrowing a failed I/O down to the blocks that fail ------------------------ */

#define PAGE_SECTORS 8u /* a 4 KiB page: what disks remap, md's stripe unit */

/* Consecutive pieces with the same outcome, handed on as one range so a
 * long bad run costs one log update, not one per unit. */
struct runs {
    const struct narrow_ops *ops;
    void *ctx;
    uint64_t at;
    uint32_t len;
    int bad;
};

static int run_end(struct runs *r)
{
    int rc = 0;
    if (r->len && r->bad)
        rc = r->ops->lost(r->ctx, r->at, r->len);
    else if (r->len && r->ops->kept)
        r->ops->kept(r->ctx, r->at, r->len);
    r->len = 0;
    return rc;
}

static int run_add(struct runs *r, uint64_t at, uint32_t len, int bad)
{
    int rc = 0;
    if (r->len && (r->bad != bad || r->at + r->len != at))
        rc = run_end(r);
    if (!r->len) {
        r->at = at;
        r->bad = bad;
    }
    r->len += len;
    return rc;
}

static uint64_t piece_end(uint64_t at, uint32_t unit, uint64_t end)
{
    uint64_t next = (at / unit + 1) * unit;
    return next < end ? next : end;
}

int array_narrow(uint64_t start, uint32_t nsec, uint32_t unit, const struct narrow_ops *ops, void *ctx)
{
    /* pages first, so a long request costs a retry per page, not per unit */
    uint32_t page = unit > PAGE_SECTORS ? unit : PAGE_SECTORS;
    struct runs r = {.ops = ops, .ctx = ctx};
    uint64_t end = start + nsec;
    int rc = 0;
    for (uint64_t p = start, next; p < end && rc == 0; p = next) {
        next = piece_end(p, page, end);
        int e = ops->try(ctx, p, (uint32_t)(next - p));
        if (e == -ENXIO)
            return e;
        if (e == 0 || unit >= page) {
            rc = run_add(&r, p, (uint32_t)(next - p), e != 0);
            continue;
        }
        for (uint64_t u = p, unext; u < next && rc == 0; u = unext) {
            unext = piece_end(u, unit, next);
            e = ops->try(ctx, u, (uint32_t)(unext - u));
            if (e == -ENXIO)
                return e;
            rc = run_add(&r, u, (uint32_t)(unext - u), e != 0);
        }
    }
    return rc ? rc : run_end(&r);
}

/* The unit a member's failures are narrowed to: its bad-block log's. */
static uint32_t bb_unit(const struct array_slot *sl)
{
    return 1u << sl->sb.bblog_shift;
}

/* Slot m cannot keep sectors it was given: listed, or else the member is
 * failed (no log, log full). Returns like array_write_failed. */
static int keep_or_fail(struct uraid_array *a, int m, uint64_t member_sector, uint32_t nsec, enum bad_cause cause,
                        int *failed)
{
    if (record_bad(a, &a->slot[m], member_sector, nsec, cause) == 0)
        return 0;
    *failed = 1;
    return array_member_failed(a, m, -EIO, "writing");
}

/* A failed write retried piece by piece (md's narrow_write_error). */
struct write_retry {
    struct uraid_array *a;
    int m;
    const struct io_op *op;
    uint64_t first;   /* member sector of op->buf */
    int failed;       /* the member was failed: nothing more to do */
    int rc;
};

static int write_try(void *ctx, uint64_t sector, uint32_t nsec)
{
    struct write_retry *w = ctx;
    uint8_t *buf = w->op->buf ? (uint8_t *)w->op->buf + (sector - w->first) * SECTOR : NULL;
    struct io_op op = array_op(w->a, w->m, w->op->kind, buf, nsec, sector);
    array_run_ops(w->a, &op, 1);
    return op.result;
}

static int write_lost(void *ctx, uint64_t sector, uint32_t nsec)
{
    struct write_retry *w = ctx;
    w->rc = keep_or_fail(w->a, w->m, sector, nsec, BAD_WRITE, &w->failed);
    return w->failed ? -EIO : 0;
}

static void write_kept(void *ctx, uint64_t sector, uint32_t nsec)
{
    struct write_retry *w = ctx;
    if (slot_has_bad(&w->a->slot[w->m], sector, nsec))
        array_clear_bad(w->a, w->m, sector, nsec); /* written now: the rewrite of a listed range */
}

int array_write_failed(struct uraid_array *a, int m, const struct io_op *op)
{
    struct array_slot *sl = &a->slot[m];
    if (op->result == -ENXIO || a->readonly)
        return array_member_failed(a, m, op->result, "writing");
    struct write_retry w = {.a = a, .m = m, .op = op, .first = op->offset / SECTOR - sl->data_offset};
    static const struct narrow_ops ops = {.try = write_try, .lost = write_lost, .kept = write_kept};
    int rc = array_narrow(w.first, (uint32_t)(op->len / SECTOR), bb_unit(sl), &ops, &w);
    if (rc == -ENXIO)
        return array_member_failed(a, m, rc, "writing");
    return w.rc;
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

struct rewrite {
    struct uraid_array *a;
    int m;
    const uint8_t *data;
    uint64_t first;
    uint8_t *back;
    int failed;
};

static int rewrite_try(void *ctx, uint64_t sector, uint32_t nsec)
{
    struct rewrite *w = ctx;
    return rewrite_and_verify(w->a, w->m, w->data + (sector - w->first) * SECTOR, nsec, sector, w->back);
}

static int rewrite_lost(void *ctx, uint64_t sector, uint32_t nsec)
{
    struct rewrite *w = ctx;
    keep_or_fail(w->a, w->m, sector, nsec, BAD_REWRITE, &w->failed);
    return w->failed ? -EIO : 0;
}

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
    /* only what the member cannot keep is listed */
    struct rewrite w = {.a = a, .m = m, .data = data, .first = member_sector, .back = back};
    static const struct narrow_ops ops = {.try = rewrite_try, .lost = rewrite_lost};
    if (array_narrow(member_sector, nsec, bb_unit(&a->slot[m]), &ops, &w) == -ENXIO)
        array_member_failed(a, m, -ENXIO, "rewriting after a read error");
}

/* ---- a rebuild over sectors no member can give -------------------------------------- */

/* The member a job fills for slot m: the replacement for a replace's
 * source, else the slot's own (new) member. */
static struct array_slot *filled_member(struct uraid_array *a, const struct array_job *j, int m)
{
    return j->kind == URAID_JOB_REPLACE && m == j->source ? &a->replacement : &a->slot[m];
}

int array_rebuild_rows_lost(struct uraid_array *a, struct array_job *j, struct stripe_rows *r,
                            const unsigned char *is_target)
{
    uint64_t first = r->stripe * a->geom.chunk_sectors + r->row;
    int rc = 0;
    for (int m = 0; m < a->geom.raid_disks && rc == 0; m++) {
        if (!is_target[m])
            continue;
        /* md writes nothing there; zeros keep stale bytes of other stripes off the member */
        memset(r->block[m], 0, (size_t)r->nrows * SECTOR);
        rc = array_rebuild_unreadable(a, j, filled_member(a, j, m), first, r->nrows);
    }
    return rc;
}
