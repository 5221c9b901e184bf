/* The stripe layer (lib/stripe): resync goes through the same write group
 * as user writes, so a read error during a resync is rebuilt and written
 * back instead of ending the job; a degraded RAID-6 resync makes Q agree
 * with P; rows_gather reports each 4 KiB row group that the whole range
 * could not serve; the array's stripe workers serve consecutive checks and
 * stop at close.
 * Prints its seed; URAID_TEST_SEED=N replays. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "array_fixture.h"
#include "harness.h"

static struct rng rng;
#define K 1024u

static uint64_t mismatches(const struct fx *f, struct uraid_array *a)
{
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status st = {0};
    fx_job(f, a, URAID_JOB_CHECK, &jp, &st);
    return st.mismatch_sectors;
}

/* Overwrites member `slot`'s chunk of stripe s with random bytes: a torn
 * stripe, as a crash between a data and a parity write leaves it. */
static void tear(struct fx *f, int slot, uint64_t s)
{
    uint8_t *junk = malloc(f->chunk);
    rng_fill(&rng, junk, f->chunk);
    CHECK(fx_member_pwrite(f, slot, junk, f->chunk, s * f->chunk) == 0, "tearing stripe %llu", (unsigned long long)s);
    free(junk);
}

/* A data read error in the middle of a resync: the stripe is rebuilt from
 * its parity, the member's rows are written back (a corrected read), and
 * the resync goes on to make the torn stripe after it consistent. */
static void test_resync_read_error(void)
{
    harness_begin("resync: a data member's read error is rebuilt and rewritten, the resync goes on");
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 5, 4, 64 * K, 4u << 20, &rng, 1, NULL)) {
        harness_end();
        return;
    }
    int p, q;
    fx_parity_of(&f, 5, &p, &q);
    tear(&f, p, 5); /* stripe 5's parity disagrees with its data */
    if (fx_open_with(&f, 0, "", NULL, 0, NULL, &a) == 0) {
        int d;
        uint64_t off;
        fx_locate(&f, fx_at(&f, 2, 0, 0), &d, &off);
        fx_inject(&f, a, d, "pending", off, 16 * K); /* unreadable until rewritten */
        struct uraid_counters before = fx_counters(a);
        uint64_t member_sectors = a->member_sectors;
        int rc = array_resync_range(a, 0, (uint32_t)(member_sectors / f.geom.chunk_sectors * f.geom.chunk_sectors));
        struct uraid_counters after = fx_counters(a);
        CHECK(rc == 0, "resync with a read error in stripe 2: %s", uraid_strerror(rc));
        CHECK(after.writes_rcw == before.writes_rcw && after.writes_rmw == before.writes_rmw &&
                  after.writes_degraded == before.writes_degraded,
              "resync counted as user writes");
        CHECK(after.corrected_reads > before.corrected_reads, "slot %d: the read error was not corrected", d);
        CHECK(mismatches(&f, a) == 0, "mismatches left after the resync");
        fx_verify_all(&f, a, "after the resync");
        uraid_close(a);
    }
    fx_verify_omitting(&f, 0, 0, "reopened");
    fx_destroy(&f);
    harness_end();
}

/* RAID-6 missing a data member: the resync rebuilds that data from P and
 * rewrites Q from it, so P and Q rebuild the same data afterwards. Without
 * the resync, reading with P's member gone too gives wrong data. */
static void test_resync_degraded_raid6(void)
{
    harness_begin("resync: RAID-6 missing a data member: Q made to agree with P");
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 6, 5, 64 * K, 4u << 20, &rng, 0, NULL)) {
        harness_end();
        return;
    }
    uint64_t s = 0;
    int p = -1, q = -1;
    for (; s < 16; s++) { /* a stripe where slot 0 holds data */
        fx_parity_of(&f, s, &p, &q);
        if (p != 0 && q != 0)
            break;
    }
    tear(&f, q, s);
    uint8_t *buf = malloc(f.stripe_bytes);
    int only0[FX_MAXM] = {[0] = 1};
    a = fx_open(&f, only0, 0, 1);
    if (a) {
        uraid_close(a);
        /* the test can fail: with P gone as well the torn Q rebuilds wrong data */
        int omit[FX_MAXM] = {0};
        omit[0] = omit[p] = 1;
        struct uraid_array *b = fx_open(&f, omit, 0, 1);
        if (b) {
            CHECK(uraid_read(b, buf, f.stripe_bytes, s * f.stripe_bytes) == 0 &&
                      memcmp(buf, f.model + s * f.stripe_bytes, f.stripe_bytes) != 0,
                  "the torn Q went unnoticed before the resync");
            uraid_close(b);
        }
    }
    a = fx_open(&f, only0, 0, 1);
    if (a) {
        uint64_t member_sectors = a->member_sectors;
        int rc = array_resync_range(a, 0, (uint32_t)(member_sectors / f.geom.chunk_sectors * f.geom.chunk_sectors));
        CHECK(rc == 0, "degraded resync: %s", uraid_strerror(rc));
        uraid_close(a);
    }
    fx_verify_omitting(&f, FX_SLOT(0) | FX_SLOT(p), 1, "slot 0 and stripe's P member missing after the resync");
    fx_verify_omitting(&f, FX_SLOT(0) | FX_SLOT(q), 1, "slot 0 and stripe's Q member missing after the resync");
    free(buf);
    fx_destroy(&f);
    harness_end();
}

/* What rows_gather reported, range by range. */
struct outcomes {
    int n, ok, failed_members;
    uint32_t rows[64];
};

static void note_outcome(void *ctx, struct stripe_rows *r, int rc, const unsigned char *failed)
{
    struct outcomes *o = ctx;
    if (o->n < 64)
        o->rows[o->n] = r->nrows;
    o->n++;
    o->ok += rc == 0;
    for (int m = 0; m < URAID_MAX_MEMBERS; m++)
        o->failed_members += failed[m];
}

/* Errors on two members of a RAID-5 stripe, in different 4 KiB pages: the
 * stripe as a whole has two blocks lost, each page only one. */
static void test_gather_pages(void)
{
    harness_begin("rows_gather: a stripe with errors on two members in different pages, page by page");
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 5, 4, 16 * K, 2u << 20, &rng, 1, &a)) {
        harness_end();
        return;
    }
    uint64_t s = 3;
    uint32_t c = f.geom.chunk_sectors;
    int d0, d1;
    uint64_t off0, off1;
    fx_locate(&f, fx_at(&f, s, 0, 0), &d0, &off0);
    fx_locate(&f, fx_at(&f, s, 1, 0), &d1, &off1);
    fx_inject(&f, a, d0, "read-eio", off0, 4 * K);          /* page 0 of data 0 */
    fx_inject(&f, a, d1, "read-eio", off1 + 8 * K, 4 * K);  /* page 2 of data 1 */
    uint8_t *mem = aligned_alloc(4096, (size_t)f.n * c * 512 + c * 512);
    struct stripe_batch b = {.start = s * c, .end = (s + 1) * c};
    for (int m = 0; m < f.n; m++)
        b.base[m] = mem + (size_t)m * c * 512;
    uint8_t *zero = mem + (size_t)f.n * c * 512;
    memset(zero, 0, c * 512);
    struct stripe_rows r;
    struct outcomes o = {0};
    uint16_t held[1];
    int nheld = stripe_lock_set(&a->locks, &s, 1, held);
    stripe_batch_read(a, &b, NULL);
    CHECK(!b.readok[d0] && !b.readok[d1], "the batch reads of slots %d and %d did not fail", d0, d1);
    int rc = stripe_batch_rows(a, &b, s, &r);
    unsigned char failed[URAID_MAX_MEMBERS] = {0};
    if (rc == 0)
        rc = rows_gather(a, &r, zero, b.readok, failed, note_outcome, &o);
    stripe_unlock_set(&a->locks, held, nheld);
    CHECK(rc == 0, "gather: %s", uraid_strerror(rc));
    CHECK(o.n == (int)(c / STRIPE_PAGE_ROWS) && o.ok == o.n, "%d ranges reported, %d rebuilt (want %u pages)", o.n,
          o.ok, c / STRIPE_PAGE_ROWS);
    CHECK(o.rows[0] == STRIPE_PAGE_ROWS, "first range %u rows", o.rows[0]);
    CHECK(failed[d0] && failed[d1], "failed members not collected");
    CHECK(o.failed_members == 2, "%d page reads failed (want 2: one page on each member)", o.failed_members);
    int bad = 0;
    for (int d = 0; d < f.k; d++) {
        int m = r.map.data_disk[d];
        bad |= memcmp(r.block[m], f.model + fx_at(&f, s, d, 0), f.chunk) != 0;
    }
    CHECK(!bad, "gathered data differs from what was written");
    free(mem);
    uraid_close(a);
    fx_destroy(&f);
    harness_end();
}

/* Two checks in a row on one open array use the same workers, which the
 * close stops (ThreadSanitizer runs this too). */
static void test_pool_kept(void)
{
    harness_begin("stripe workers: started by the first check, kept for the next, stopped at close");
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 6, 5, 64 * K, 4u << 20, &rng, 0, &a)) {
        harness_end();
        return;
    }
    CHECK(a->pool == NULL, "workers before any job");
    CHECK(mismatches(&f, a) == 0, "first check found mismatches");
    struct stripe_pool *first = a->pool;
    CHECK(first != NULL, "no workers after a check");
    CHECK(mismatches(&f, a) == 0, "second check found mismatches");
    CHECK(a->pool == first, "the second check started new workers");
    uraid_close(a);
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_stripe");
    rng_seed(&rng, harness_seed());
    fx_log_from_env();
    test_resync_read_error();
    test_resync_degraded_raid6();
    test_gather_pages();
    test_pool_kept();
    return harness_finish();
}
