/* Per-stripe recovery (issue 6): reads and rebuilds never give up on a
 * stripe while it has n - parity readable chunks, whichever members they
 * are on, even when no set of n - parity members is readable end to end.
 *
 * Exhaustive over the patterns of one stripe: with every subset of at most
 * `parity` members unreadable in a stripe (the subsets assigned to the
 * stripes in rotation, so every member is unreadable somewhere and every
 * subset meets every stripe position), the whole array reads back equal to
 * what was written. One more unreadable chunk in a stripe gives -EIO for
 * that stripe with a log line naming it and its sectors; every other
 * stripe still reads. Errors inside a chunk on different members in
 * different rows are rebuilt row group by row group. A rebuild onto a
 * spare meets one unreadable chunk per stripe (RAID-6 with a member gone)
 * and still fills the slot.
 * Prints its seed; URAID_TEST_SEED=N replays. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"

static struct rng rng;
#define K 1024u

static char logbuf[1 << 16];
static size_t loglen;
static void capture_log(void *ctx, enum uraid_log_level level, const char *msg)
{
    (void)ctx;
    if (level == URAID_LOG_ERROR && loglen + strlen(msg) + 2 < sizeof logbuf) {
        memcpy(logbuf + loglen, msg, strlen(msg));
        loglen += strlen(msg);
        logbuf[loglen++] = '\n';
        logbuf[loglen] = 0;
    }
}

static struct uraid_array *open_ro(struct fx *f)
{
    struct uraid_open_params op = {.readonly = 1};
    struct uraid_array *a;
    return fx_open_with(f, 0, "", NULL, 0, &op, &a) ? NULL : a;
}

/* Marks member `slot`'s chunk of stripe s unreadable (rows [r0, r1) of it). */
static void unreadable(struct uraid_array *a, const struct fx *f, int slot, uint64_t s, uint32_t r0, uint32_t r1,
                       const char *kind)
{
    fx_inject(f, a, slot, kind, s * f->chunk + (uint64_t)r0 * 512, (uint64_t)(r1 - r0) * 512);
}

/* Stripe s read whole and compared with the model: 0, the read's error,
 * or -EILSEQ. */
static int read_stripe(struct fx *f, struct uraid_array *a, uint8_t *buf, uint64_t s)
{
    int rc = uraid_read(a, buf, f->stripe_bytes, s * f->stripe_bytes);
    return rc ? rc : memcmp(buf, f->model + s * f->stripe_bytes, f->stripe_bytes) ? -EILSEQ : 0;
}

/* Every subset of at most p of n members, as bit masks. */
static int subsets(int n, int p, unsigned *out)
{
    int k = 0;
    for (unsigned mask = 0; mask < (1u << n); mask++)
        if (__builtin_popcount(mask) <= p)
            out[k++] = mask;
    return k;
}

static void test_patterns(int level, int n)
{
    int p = level == 6 ? 2 : 1;
    harness_beginf("RAID-%d n=%d: every pattern of up to %d unreadable chunks per stripe, all members hit", level, n,
                   p);
    struct fx f;
    struct uraid_array *a;
    if (fx_setup(&f, level, n, 4 * K, 2u << 20, &rng, 0, NULL) != 0)
        goto out;
    unsigned sub[64];
    int nsub = subsets(n, p, sub);
    uint64_t nstripes = f.size / f.stripe_bytes;
    uint64_t stripes = nstripes < 3 * (uint64_t)nsub ? nstripes : 3 * (uint64_t)nsub;
    uint8_t *buf = aligned_alloc(4096, f.stripe_bytes);
    int bad_runs = 0;
    for (int run = 0; run < nsub && bad_runs < 3; run++) {
        a = open_ro(&f);
        if (!a)
            break;
        unsigned hit = 0;
        for (uint64_t s = 0; s < stripes; s++) {
            unsigned mask = sub[(run + (int)s) % nsub];
            hit |= mask;
            for (int m = 0; m < n; m++)
                if (mask >> m & 1)
                    unreadable(a, &f, m, s, 0, 8, "read-eio");
        }
        CHECK(hit == (1u << n) - 1, "run %d: not every member is unreadable somewhere (0x%x)", run, hit);
        int failed = 0;
        for (uint64_t s = 0; s < stripes; s++) {
            int rc = read_stripe(&f, a, buf, s);
            if (rc) {
                CHECK(0, "%s: run %d: stripe %llu (unreadable mask 0x%x): read %d / data differs", f.label, run,
                      (unsigned long long)s, sub[(run + (int)s) % nsub], rc);
                failed = 1;
            }
        }
        bad_runs += failed;
        uraid_close(a);
    }

    /* one more unreadable chunk than the level survives, in one stripe */
    a = open_ro(&f);
    if (a) {
        uint64_t victim = stripes / 2;
        for (int m = 0; m <= p; m++)
            unreadable(a, &f, (m + (int)victim) % n, victim, 0, 8, "read-eio");
        for (int m = 0; m < n; m++) /* and the neighbours at the limit */
            if (m < p) {
                unreadable(a, &f, m, victim - 1, 0, 8, "read-eio");
                unreadable(a, &f, n - 1 - m, victim + 1, 0, 8, "read-eio");
            }
        loglen = 0;
        logbuf[0] = 0;
        uraid_set_log(capture_log, NULL, URAID_LOG_ERROR);
        int rc = uraid_read(a, buf, f.stripe_bytes, victim * f.stripe_bytes);
        uraid_set_log(NULL, NULL, URAID_LOG_ERROR);
        char want[64];
        snprintf(want, sizeof want, "stripe %llu, member sectors %llu-%llu", (unsigned long long)victim,
                 (unsigned long long)(victim * 8), (unsigned long long)(victim * 8 + 7));
        CHECK(rc == -EIO && strstr(logbuf, want), "%s: beyond redundancy: read %d, log: %s (want '%s')", f.label, rc,
              logbuf, want);
        for (uint64_t s = 0; s < nstripes; s++) {
            if (s == victim)
                continue;
            rc = read_stripe(&f, a, buf, s);
            CHECK(rc == 0, "%s: stripe %llu next to the lost one: %d", f.label, (unsigned long long)s, rc);
            if (rc)
                break;
        }
        uraid_close(a);
    }
    free(buf);
out:
    fx_destroy(&f);
    harness_end();
}

/* Errors in different rows of one chunk position on more members than the
 * level survives at once: each 4 KiB row group has at most `parity`. */
static void test_rows(int level, int n)
{
    int p = level == 6 ? 2 : 1;
    harness_beginf("RAID-%d n=%d: %d members unreadable in one stripe, in different rows", level, n, n - 1);
    struct fx f;
    if (fx_setup(&f, level, n, 64 * K, 4u << 20, &rng, 0, NULL) != 0)
        goto out;
    struct uraid_array *a = open_ro(&f);
    if (!a)
        goto out;
    uint64_t s = 3;
    /* member m loses rows [m*8*p', ...): groups of 8 rows, p members per group */
    for (int m = 0; m < n - 1; m++) {
        uint32_t group = (uint32_t)(m / p);
        unreadable(a, &f, m, s, group * 8, group * 8 + 8, "read-eio");
    }
    uint8_t *buf = aligned_alloc(4096, f.stripe_bytes);
    int rc = read_stripe(&f, a, buf, s);
    CHECK(rc == 0, "%s: stripe read: %d", f.label, rc);
    free(buf);
    uraid_close(a);
out:
    fx_destroy(&f);
    harness_end();
}

/* RAID-6 with a member gone, rebuilt onto a spare while every other member
 * has one unreadable (pending) chunk somewhere, one per stripe. */
static void test_rebuild_patterns(void)
{
    harness_begin("RAID-6 n=6: rebuild onto a spare with one unreadable chunk per stripe, every member in turn");
    struct fx f;
    if (fx_setup(&f, 6, 6, 4 * K, 2u << 20, &rng, 0, NULL) != 0)
        goto out;
    int gone = 2;
    char spare[300];
    fx_make_file(&f, "spare", spare, sizeof spare);
    struct uraid_open_params op = {.force = 1};
    struct uraid_array *a;
    if (fx_open_with(&f, FX_SLOT(gone), "", NULL, 0, &op, &a))
        goto out;
    uint64_t nstripes = f.size / f.stripe_bytes;
    int others[FX_MAXM], no = 0;
    for (int s = 0; s < f.n; s++)
        if (s != gone)
            others[no++] = s;
    for (uint64_t s = 0; s < nstripes; s++) /* slot numbers: the fault layers follow the raid slot */
        unreadable(a, &f, others[s % (uint64_t)no], s, 0, 8, "pending");
    fx_add_spare(&f, a, spare);
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status st;
    fx_job(&f, a, URAID_JOB_RECOVER, &jp, &st);
    CHECK(uraid_close(a) == 0);
    /* the new member holds its slot: read with two others left out */
    fx_adopt(&f, gone, spare);
    fx_verify_omitting(&f, FX_SLOT(0) | FX_SLOT(5), 0, "rebuilt past unreadable chunks");
out:
    fx_destroy(&f);
    harness_end();
}

/* A failed member's chunks still serve stripes not written since it failed
 * (and never a stripe written since: that chunk is stale), for reads and
 * for the rebuild onto its replacement. */
static void test_old_member(void)
{
    harness_begin("RAID-5 n=4: a failed member's current chunks fill in for read errors; stale ones never do");
    struct fx f;
    struct uraid_array *a;
    if (fx_setup(&f, 5, 4, 64 * K, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    char spec[64];
    snprintf(spec, sizeof spec, "write-eio=0+%llu", (unsigned long long)f.member_bytes);
    CHECK(uraid_inject(a, 1, spec) == 0);
    uint8_t *buf = aligned_alloc(4096, f.stripe_bytes);
    rng_fill(&rng, buf, f.stripe_bytes);
    CHECK(fx_write(&f, a, buf, f.stripe_bytes, 0) == 0); /* fails slot 1 */
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.member[1].state == URAID_MEMBER_FAULTY, "slot 1 state %d", info.member[1].state);
    CHECK(fx_write(&f, a, buf, f.stripe_bytes, 2 * f.stripe_bytes) == 0); /* degraded write of stripe 2 */
    for (uint64_t s = 0; s < 6; s++) /* pending: the corrections heal them (no bad-block entries) */
        unreadable(a, &f, 2, s, 0, 128, "pending");
    for (uint64_t s = 0; s < 6; s++) {
        int rc = read_stripe(&f, a, buf, s);
        if (s == 0 || s == 2)
            CHECK(rc == -EIO, "stripe %llu, written since slot 1 failed: read %d (its old chunk is stale)",
                  (unsigned long long)s, rc);
        else
            CHECK(rc == 0, "stripe %llu, untouched since slot 1 failed: read %d", (unsigned long long)s, rc);
    }
    /* the rebuild onto a spare uses it too, where it may */
    CHECK(uraid_inject(a, 2, "clear") == 0);
    for (uint64_t s = 3; s < 6; s++)
        unreadable(a, &f, 2, s, 0, 128, "pending");
    char spare[300];
    fx_make_file(&f, "spare", spare, sizeof spare);
    fx_add_spare(&f, a, spare);
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status st;
    fx_job(&f, a, URAID_JOB_RECOVER, &jp, &st);
    fx_verify_all(&f, a, "after the rebuild");
    CHECK(uraid_close(a) == 0);
    fx_adopt(&f, 1, spare);
    fx_verify_omitting(&f, FX_SLOT(3), 0, "rebuilt member with slot 3 left out");
    free(buf);
out:
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_perstripe");
    rng_seed(&rng, harness_seed());
    test_patterns(5, 4);
    test_patterns(5, 5);
    test_patterns(6, 5);
    test_patterns(6, 6);
    test_rows(5, 4);
    test_rows(6, 6);
    test_rebuild_patterns();
    test_old_member();
    return harness_finish();
}
