/* Data-path primitives shared by the request path (rw.c), the stripe layer
 * (lib/stripe) and background work (rebuild.c, scrub.c): member I/O in
 * batches with the array's counters, per-thread scratch buffers. */
#ifndef URAID_DATAIO_H
#define URAID_DATAIO_H

#include "array/array.h"

/* Per-thread scratch buffer (4 KiB aligned) reused across calls: no
 * allocation on the I/O path once warm. Valid until the thread's next call. */
uint8_t *array_scratch(size_t size);
/* A second per-thread area, for the write planner's stripe descriptors. */
uint8_t *array_scratch_plans(size_t size);

/* One member I/O of nsec sectors at member_sector (past data_offset) of
 * slot m; array_run_ops counts them and runs them in parallel. */
struct io_op array_op(struct uraid_array *a, int m, enum io_kind kind, void *buf, uint32_t nsec,
                      uint64_t member_sector);
void array_run_ops(struct uraid_array *a, struct io_op *ops, int n);

/* The member a recovery or replace job writes: the slot being rebuilt, or
 * the replacement being copied. */
static inline struct array_slot *job_target(struct uraid_array *a, const struct array_job *j)
{
    return j->kind == URAID_JOB_REPLACE ? &a->replacement : &a->slot[j->slot];
}

/* RAID-1 has no chunks: its stripe locks cover units of this many sectors. */
#define RAID1_UNIT 128u

/* Array sector -> member position: layout_map, or for RAID-0 its zones
 * (stripe is then the row on the member: member_sector / chunk). (dataio.c) */
int array_map(const struct uraid_array *a, uint64_t sector, struct layout_addr *ad);

/* Copies of one range (RAID-1 mirrors, RAID-10 copies), mirror.c: a slot
 * serves member sectors [sector, +nsec) when in sync there and none is
 * listed bad; one read from it (-EAGAIN when the slot changed members);
 * the range from the first copy that reads, else page by page from any
 * (array_read_copies: *trouble set when a copy failed; with `correct`
 * under the units' locks, the failed copies rewritten). */
int array_copy_usable(const struct uraid_array *a, int m, uint64_t sector, uint32_t nsec);
int array_read_slot(struct uraid_array *a, int m, uint8_t *buf, uint32_t nsec, uint64_t sector);
int array_read_copies(struct uraid_array *a, const struct raid10_copy *cp, int n, uint8_t *buf, uint32_t nsec,
                      int correct, int *trouble);

/* RAID-10 (raid10io.c): requests split at chunks, each chunk's copies
 * from raid10_map read and written as RAID-1's mirrors are, under locks
 * of RAID1_UNIT array sectors. Its jobs: recovery and replace walk the
 * targets' member sectors (each chunk found by raid10_unmap and copied
 * from another copy); check, repair and resync walk array sectors and
 * compare each chunk's copies with the first readable one (md's order). */
int array_read_raid10(struct uraid_array *a, uint8_t *buf, uint64_t sector, uint64_t nsec);
int array_write_raid10(struct uraid_array *a, const uint8_t *buf, uint64_t sector, uint64_t end);
int raid10_copy_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec);
int raid10_scrub_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec);
/* 1 when some chunk still has two copies on members in sync (a degraded
 * RAID-10's check compares those, as md's does). */
int raid10_copies_to_compare(const struct uraid_array *a);
/* linear (raid10io.c): each piece on its member, no redundancy (RAID-0's rules). */
int array_read_linear(struct uraid_array *a, uint8_t *buf, uint64_t sector, uint64_t end);
int array_write_linear(struct uraid_array *a, const uint8_t *buf, uint64_t sector, uint64_t end);

/* RAID-1 and RAID-0 requests (mirror.c). */
int array_read_mirror(struct uraid_array *a, uint8_t *buf, uint64_t sector, uint32_t nsec);
/* RAID-4/5/6: whole stripes zeroed without reads (zero.c); callers have
 * done the checks and the bitmap (write_request). */
int array_zero_striped(struct uraid_array *a, uint64_t sector, uint64_t end);

/* buf (p) NULL: the range is zeroed on the members (uraid_write_zeroes). */
int array_write_mirror(struct uraid_array *a, const uint8_t *buf, uint64_t sector, uint64_t nsec);
int array_write_raid0(struct uraid_array *a, const uint8_t *p, uint64_t sector, uint64_t end);
/* The step of RAID-1 jobs: recovery and replace copy from a mirror that can
 * be read; resync copies the first mirror to the others. (mirror.c) */
int raid1_copy_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec);
/* RAID-1 check/repair: every mirror compared with the first, page by page;
 * repair copies the first over a differing one (md's rule). (mirror.c) */
int raid1_scrub_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec);

/* After rows of slot m were rebuilt because its read failed: write them
 * back, re-read to verify, count the correction; if the member cannot
 * keep them, record the range in its bad-block log (failing the member
 * only when the log is full or the member is gone). */
void array_correct_read_error(struct uraid_array *a, int m, const void *data, uint32_t nsec, uint64_t member_sector);

/* Records member sectors [member_sector, +nsec) of slot m as bad in its md
 * bad-block log and writes the log (feature BAD_BLOCKS). Returns 0, or
 * -ENOSPC when the member has no log or it is full. (badsector.c) */
int array_record_bad(struct uraid_array *a, int m, uint64_t member_sector, uint32_t nsec);
/* Forgets listed sectors of slot m in that range after a successful write
 * of them, and writes the log. (badsector.c) */
void array_clear_bad(struct uraid_array *a, int m, uint64_t member_sector, uint32_t nsec);
/* Write op to slot m failed (op->result): md's narrow_write_error. The
 * write is tried again piece by piece (4 KiB, then the bad-block unit) and
 * only the pieces that still fail are recorded as bad; listed pieces that
 * now take it leave the list. The member is failed when it is gone or a
 * piece cannot be recorded (no log, log full). Returns 0 when the data
 * stays safe, -EIO when the level has no redundancy left. (badsector.c) */
int array_write_failed(struct uraid_array *a, int m, const struct io_op *op);

/* Narrowing a failed member I/O to the blocks that fail. try() runs the I/O
 * on a piece (0 or a negative errno); lost() and kept() (may be NULL) get
 * the runs of pieces that failed and worked. */
struct narrow_ops {
    int (*try)(void *ctx, uint64_t member_sector, uint32_t nsec);
    int (*lost)(void *ctx, uint64_t member_sector, uint32_t nsec);
    void (*kept)(void *ctx, uint64_t member_sector, uint32_t nsec);
};
/* [start, start + nsec) tried in aligned 4 KiB pieces, a failing piece
 * again in pieces of `unit` sectors. Returns 0; -ENXIO as soon as try()
 * says the member is gone; or the first non-zero lost(), which ends it. */
int array_narrow(uint64_t start, uint32_t nsec, uint32_t unit, const struct narrow_ops *ops, void *ctx);

/* Recovery and replace over sectors no member can give (md's raid1
 * sync_request and raid5 handle_failed_sync): they are recorded in the
 * bad-block log of target (the member job j fills) and the job goes on.
 * Returns 0, or -ENOSPC (no log, or full) or another error, with the job's
 * reason set: the job must stop there. */
int array_rebuild_unreadable(struct uraid_array *a, struct array_job *j, struct array_slot *target,
                             uint64_t member_sector, uint32_t nsec);
/* Rows r of a stripe (the slots in is_target to be filled, into
 * r->block[slot]) that no member can give (rows_gather's outcome for them
 * was -EIO; it judges 4 KiB groups, md's stripe_head unit in raid5's
 * handle_failed_sync): zeroed and recorded on every target's member
 * (array_rebuild_unreadable; a replace's source slot stands for its
 * replacement). Returns 0 or the error that stops the job. */
int array_rebuild_rows_lost(struct uraid_array *a, struct array_job *j, struct stripe_rows *r,
                            const unsigned char *is_target);

#endif
