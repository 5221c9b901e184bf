/* Write-zeroes (uraid_write_zeroes): the range reads as zeros on every
 * level, parity stays consistent (a check finds nothing), whole stripes
 * cost no member reads and give file members their blocks back, and it
 * works degraded and with a member failing under it.
 * Prints its seed; URAID_TEST_SEED=N replays. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"

static struct rng rng;
#define K 1024u

/* uraid_write_zeroes and the model together. */
static int zero(struct fx *f, struct uraid_array *a, uint64_t off, uint64_t len)
{
    int rc = uraid_write_zeroes(a, (size_t)len, off);
    CHECK(rc == 0, "%s: zero %llu+%llu: %d", f->label, (unsigned long long)off, (unsigned long long)len, rc);
    if (rc == 0)
        memset(f->model + off, 0, (size_t)len);
    return rc;
}

static uint64_t check_mismatches(struct uraid_array *a)
{
    char why[256];
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status st = {0};
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, &jp, why, sizeof why) == 0, "check: %s", why);
    /* a check that stopped on an error found nothing: "0 mismatches" would pass */
    int rc = uraid_job_wait(a, &st);
    CHECK(rc == 0 && st.result == 0 && st.done_sectors == st.total_sectors, "check ended %d (%s) at %llu of %llu", rc,
          st.why, (unsigned long long)st.done_sectors, (unsigned long long)st.total_sectors);
    return st.mismatch_sectors;
}

/* 1 when the fixture's file system punches holes (else zeros are written
 * and the members keep their blocks: nothing to measure). */
static int has_holes(const struct fx *f)
{
    char path[300];
    snprintf(path, sizeof path, "%s/holes", f->dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    static const char page[4096];
    int ok = fd >= 0 && write(fd, page, sizeof page) == (ssize_t)sizeof page &&
             fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, sizeof page) == 0;
    if (fd >= 0)
        close(fd);
    unlink(path);
    return ok;
}

static uint64_t allocated_bytes(const struct fx *f)
{
    uint64_t total = 0;
    for (int s = 0; s < f->n; s++) {
        struct stat st;
        if (stat(f->path[s], &st) == 0)
            total += (uint64_t)st.st_blocks * 512u;
    }
    return total;
}

/* Random ranges (partial stripes, whole stripes, both) zeroed on a full
 * array; the data, a check, and the members' allocation afterwards. */
static void test_ranges(int level, int n)
{
    char name[128];
    snprintf(name, sizeof name, "RAID-%d n=%d: random ranges read as zeros, parity consistent", level, n);
    harness_begin(name);
    struct fx f;
    if (fx_create(&f, level, n, 64u << 10, 4u << 20) != 0)
        goto out;
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    fx_fill(&f, a, &rng);
    for (int i = 0; i < 12; i++) {
        uint64_t len = (1 + rng_below(&rng, 3 * f.stripe_bytes / 512)) * 512;
        uint64_t off = rng_below(&rng, (f.size - len) / 512 + 1) * 512;
        zero(&f, a, off, len);
    }
    fx_verify_all(&f, a, "after zeroing random ranges");
    if (level != 0)
        CHECK(check_mismatches(a) == 0, "%s: a check after zeroing finds mismatches", f.label);

    /* whole stripes: no member read, and holes in the member files (the
     * range written afresh first: the random ranges above may have holed it) */
    uint64_t off = f.stripe_bytes * 4, len = f.stripe_bytes * 16;
    uint8_t *fresh = malloc(len);
    if (fresh) {
        rng_fill(&rng, fresh, len);
        CHECK(fx_write(&f, a, fresh, len, off) == 0);
        free(fresh);
    }
    uint64_t before = allocated_bytes(&f);
    struct uraid_counters c;
    uraid_reset_counters(a);
    zero(&f, a, off, len);
    uraid_get_counters(a, &c);
    CHECK(c.member_reads == 0, "%s: whole stripes zeroed with %llu member reads", f.label,
          (unsigned long long)c.member_reads);
    uint64_t after = allocated_bytes(&f);
    uint64_t freed_min = len / 2; /* every level gives back at least the data's blocks; allow for rounding */
    if (has_holes(&f))
        CHECK(before > after && before - after >= freed_min,
              "%s: members hold %llu bytes before, %llu after (want %llu less)", f.label, (unsigned long long)before,
              (unsigned long long)after, (unsigned long long)freed_min);
    else
        printf("  %s: allocation not checked: %s's file system has no holes\n", f.label, f.dir);
    fx_verify_all(&f, a, "after zeroing whole stripes");
    CHECK(uraid_close(a) == 0);

    /* the zeros are on the members, not only in what the array computes */
    if (level >= 5) {
        int omit[FX_MAXM] = {0};
        for (int s = 0; s < (level == 6 ? 2 : 1); s++)
            omit[(s * 2 + 1) % n] = 1;
        a = fx_open(&f, omit, 0, 0);
        if (a) {
            fx_verify_all(&f, a, "with members left out");
            uraid_close(a);
        }
    }
out:
    fx_destroy(&f);
    harness_end();
}

/* Degraded: the missing member's chunks are implied by the others, so a
 * zeroed stripe must read as zeros with one more member left out. */
static void test_degraded(void)
{
    harness_begin("RAID-6 n=6 with a member missing: zeroed ranges read as zeros with another left out too");
    struct fx f;
    if (fx_create(&f, 6, 6, 64u << 10, 4u << 20) != 0)
        goto out;
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    fx_fill(&f, a, &rng);
    CHECK(uraid_close(a) == 0);
    int omit[FX_MAXM] = {0, 0, 1};
    a = fx_open(&f, omit, 0, 0);
    if (!a)
        goto out;
    zero(&f, a, f.stripe_bytes * 2 + 3 * 512, f.stripe_bytes * 5);
    zero(&f, a, 7 * K, 9 * K);
    fx_verify_all(&f, a, "degraded, after zeroing");
    CHECK(uraid_close(a) == 0);
    int omit2[FX_MAXM] = {0, 0, 1, 0, 1};
    a = fx_open(&f, omit2, 0, 0);
    if (a) {
        fx_verify_all(&f, a, "two members left out");
        uraid_close(a);
    }
out:
    fx_destroy(&f);
    harness_end();
}

/* A member that cannot be zeroed is failed like one that cannot be
 * written; the array goes on degraded and the range still reads as zeros. */
static void test_member_fails(void)
{
    harness_begin("RAID-5 n=4: a member failing the zeroing is marked faulty, the zeros stay readable");
    struct fx f;
    if (fx_create(&f, 5, 4, 64u << 10, 4u << 20) != 0)
        goto out;
    struct uraid_array *a = fx_open(&f, NULL, 1, 0);
    if (!a)
        goto out;
    fx_fill(&f, a, &rng);
    char spec[64];
    snprintf(spec, sizeof spec, "write-eio=%llu+%llu", (unsigned long long)(f.data_offset + 3 * f.chunk),
             (unsigned long long)f.chunk);
    CHECK(uraid_inject(a, 1, spec) == 0);
    zero(&f, a, 2 * f.stripe_bytes, 4 * f.stripe_bytes);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.member[1].state == URAID_MEMBER_FAULTY, "%s: member 1 state %d after a failed zeroing", f.label,
          info.member[1].state);
    fx_verify_all(&f, a, "degraded after a failed zeroing");
    CHECK(uraid_close(a) == 0);
out:
    fx_destroy(&f);
    harness_end();
}

static void test_bad_input(void)
{
    harness_begin("bad input: unaligned or out-of-range zeroing is refused and changes nothing");
    struct fx f;
    if (fx_create(&f, 6, 5, 64u << 10, 4u << 20) != 0)
        goto out;
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    fx_fill(&f, a, &rng);
    CHECK(uraid_write_zeroes(a, 1000, 0) == -EINVAL);
    CHECK(uraid_write_zeroes(a, 512, 100) == -EINVAL);
    CHECK(uraid_write_zeroes(a, 1024, f.size - 512) == -ENOSPC);
    fx_verify_all(&f, a, "after refused requests");
    CHECK(uraid_close(a) == 0);
out:
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    fx_log_from_env();
    harness_init(argc, argv, "test_zero");
    rng_seed(&rng, harness_seed());
    test_ranges(0, 3);
    test_ranges(1, 2);
    test_ranges(5, 4);
    test_ranges(6, 6);
    test_degraded();
    test_member_fails();
    test_bad_input();
    return harness_finish();
}
