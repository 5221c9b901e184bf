/* Exact member I/O counts of the data path (uraid_get_counters): which
 * method each write uses (full stripe, read-modify-write, reconstruct-write
 * by md's fewest-reads rule) and how many member reads and writes it costs,
 * healthy and degraded, and what reads cost (direct, reconstructed). After
 * every measured call the data is read back and compared with a model.
 *
 * Counters cover data and parity only; each array gets a warm-up write
 * first anyway (the first write of an open marks the array dirty through
 * superblock writes). Randomised data: prints its seed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array_fixture.h"
#include "harness.h"

static struct rng rng;

#define KIB 4096u
#define CHUNK (64u << 10)

struct expect {
    long reads, writes;        /* member I/Os */
    long read_bytes, write_bytes; /* -1 = not checked */
    long full, rmw, rcw, degraded, reconstructions;
};

static void check_counts(struct fx *f, struct uraid_array *a, const char *what, const struct expect *e)
{
    struct uraid_counters c;
    uraid_get_counters(a, &c);
    printf("  %-58s reads %llu writes %llu (full %llu rmw %llu rcw %llu degraded %llu, reconstructions %llu)\n",
           what, (unsigned long long)c.member_reads, (unsigned long long)c.member_writes,
           (unsigned long long)c.writes_full_stripe, (unsigned long long)c.writes_rmw,
           (unsigned long long)c.writes_rcw, (unsigned long long)c.writes_degraded,
           (unsigned long long)c.reconstructions);
    CHECK(c.member_reads == (uint64_t)e->reads, "%s: %s: %llu member reads, expected %ld", f->label, what,
          (unsigned long long)c.member_reads, e->reads);
    CHECK(c.member_writes == (uint64_t)e->writes, "%s: %s: %llu member writes, expected %ld", f->label, what,
          (unsigned long long)c.member_writes, e->writes);
    if (e->read_bytes >= 0)
        CHECK(c.member_read_bytes == (uint64_t)e->read_bytes, "%s: %s: %llu bytes read, expected %ld", f->label,
              what, (unsigned long long)c.member_read_bytes, e->read_bytes);
    if (e->write_bytes >= 0)
        CHECK(c.member_write_bytes == (uint64_t)e->write_bytes, "%s: %s: %llu bytes written, expected %ld",
              f->label, what, (unsigned long long)c.member_write_bytes, e->write_bytes);
    CHECK(c.writes_full_stripe == (uint64_t)e->full && c.writes_rmw == (uint64_t)e->rmw &&
              c.writes_rcw == (uint64_t)e->rcw && c.writes_degraded == (uint64_t)e->degraded,
          "%s: %s: full/rmw/rcw/degraded %llu/%llu/%llu/%llu, expected %ld/%ld/%ld/%ld", f->label, what,
          (unsigned long long)c.writes_full_stripe, (unsigned long long)c.writes_rmw,
          (unsigned long long)c.writes_rcw, (unsigned long long)c.writes_degraded, e->full, e->rmw, e->rcw,
          e->degraded);
    CHECK(c.reconstructions == (uint64_t)e->reconstructions, "%s: %s: %llu reconstructions, expected %ld",
          f->label, what, (unsigned long long)c.reconstructions, e->reconstructions);
    CHECK(c.corrected_reads == 0 && c.member_failures == 0, "%s: %s: corrected %llu failures %llu", f->label, what,
          (unsigned long long)c.corrected_reads, (unsigned long long)c.member_failures);
}

/* Writes len random bytes at off with the counters reset first, checks the
 * counts, then reads the range (and the whole stripe around it) back. */
static void measured_write(struct fx *f, struct uraid_array *a, uint64_t off, size_t len, const char *what,
                           const struct expect *e)
{
    uint8_t *buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
    rng_fill(&rng, buf, len);
    uraid_reset_counters(a);
    int rc = fx_write(f, a, buf, len, off);
    CHECK(rc == 0, "%s: %s: write %llu+%zu: %d", f->label, what, (unsigned long long)off, len, rc);
    check_counts(f, a, what, e);
    free(buf);
    uint64_t s0 = off / f->stripe_bytes * f->stripe_bytes;
    uint64_t s1 = (off + len + f->stripe_bytes - 1) / f->stripe_bytes * f->stripe_bytes;
    fx_verify(f, a, s0, s1 - s0, what);
}

static void measured_read(struct fx *f, struct uraid_array *a, uint64_t off, size_t len, const char *what,
                          const struct expect *e)
{
    uraid_reset_counters(a);
    fx_verify(f, a, off, len, what);
    check_counts(f, a, what, e);
}

/* A stripe whose data index d sits on member `slot` (or whose P does, d < 0). */
static uint64_t stripe_with(const struct fx *f, int d, int slot)
{
    for (uint64_t s = 0; s < 64; s++) {
        int p, q, m;
        uint64_t mo;
        fx_parity_of(f, s, &p, &q);
        if (d < 0 && p == slot)
            return s;
        if (d >= 0) {
            fx_locate(f, fx_at(f, s, d, 0), &m, &mo);
            if (m == slot)
                return s;
        }
    }
    CHECK(0, "%s: no stripe with data %d on member %d", f->label, d, slot);
    return 0;
}

static void test_raid6_16(void)
{
    harness_begin("raid6 16 members: rmw 3+3, full stripe, rcw of k-1 chunks, reads");
    struct fx f;
    if (fx_create(&f, 6, 16, CHUNK, 4u << 20) == 0) {
        struct uraid_array *a = fx_open(&f, NULL, 0, 0);
        if (a) {
            fx_fill(&f, a, &rng);
            long k = f.k;
            measured_write(&f, a, fx_at(&f, 0, 3, 8192), KIB, "4 KiB write",
                           &(struct expect){3, 3, 3 * KIB, 3 * KIB, 0, 1, 0, 0, 0});
            measured_write(&f, a, fx_at(&f, 1, 0, 0), f.stripe_bytes, "full-stripe write",
                           &(struct expect){0, 16, 0, 16L * CHUNK, 1, 0, 0, 0, 0});
            measured_write(&f, a, fx_at(&f, 2, 0, 0), (k - 1) * CHUNK, "write of all data chunks but one",
                           &(struct expect){1, 15, CHUNK, 15L * CHUNK, 0, 0, 1, 0, 0});
            measured_write(&f, a, fx_at(&f, 3, 1, 0), (k - 1) * CHUNK, "write of all data chunks but the first",
                           &(struct expect){1, 15, CHUNK, 15L * CHUNK, 0, 0, 1, 0, 0});
            /* stripe 4: data 5..13 (rcw reads 5 < rmw 9 + 2), stripe 5 whole,
             * stripe 6: data 0..4 (rmw reads 5 + 2 < rcw 9) */
            measured_write(&f, a, fx_at(&f, 4, 5, 0), 2 * f.stripe_bytes, "two stripes' worth from data 5",
                           &(struct expect){5 + 7, 11 + 16 + 7, 12L * CHUNK, 34L * CHUNK, 1, 1, 1, 0, 0});
            measured_read(&f, a, fx_at(&f, 5, 7, 4096), KIB, "4 KiB read", &(struct expect){1, 0, KIB, 0, 0, 0, 0, 0, 0});
            measured_read(&f, a, fx_at(&f, 5, 0, 0), f.stripe_bytes, "one-stripe read",
                          &(struct expect){k, 0, k * CHUNK, 0, 0, 0, 0, 0, 0});
            CHECK(uraid_close(a) == 0);
        }
        /* degraded: the member holding data 0 of stripe 6 is left out */
        int slot, omit[FX_MAXM] = {0};
        uint64_t mo;
        fx_locate(&f, fx_at(&f, 6, 0, 0), &slot, &mo);
        omit[slot] = 1;
        a = fx_open(&f, omit, 0, 0);
        if (a) {
            uint8_t warm[KIB] = {1};
            CHECK(fx_write(&f, a, warm, KIB, fx_at(&f, 7, 2, 0)) == 0);
            measured_read(&f, a, fx_at(&f, 6, 0, 8192), KIB, "degraded read of the missing chunk",
                          &(struct expect){15, 0, 15 * KIB, 0, 0, 0, 0, 0, 1});
            fx_verify_all(&f, a, "degraded read of everything");
            CHECK(uraid_close(a) == 0);
        }
    }
    harness_end();
    fx_destroy(&f);
}

static void test_raid5(int n, long exp_rmw, long exp_rcw)
{
    char name[96];
    snprintf(name, sizeof name, "raid5 %d members: 4 KiB write 2+2 (%s); degraded data and P", n,
             exp_rmw ? "rmw" : "rcw");
    harness_begin(name);
    struct fx f;
    if (fx_create(&f, 5, n, CHUNK, 4u << 20) == 0) {
        struct uraid_array *a = fx_open(&f, NULL, 0, 0);
        long k = f.k;
        if (a) {
            fx_fill(&f, a, &rng);
            measured_write(&f, a, fx_at(&f, 0, 1, 4096), KIB, "4 KiB write",
                           &(struct expect){2, 2, 2 * KIB, 2 * KIB, 0, exp_rmw, exp_rcw, 0, 0});
            measured_write(&f, a, fx_at(&f, 1, 0, 0), f.stripe_bytes, "full-stripe write",
                           &(struct expect){0, n, 0, (long)n * CHUNK, 1, 0, 0, 0, 0});
            measured_write(&f, a, fx_at(&f, 2, 1, 0), (k - 1) * CHUNK, "write of all data chunks but one",
                           &(struct expect){1, n - 1, CHUNK, (long)(n - 1) * CHUNK, 0, 0, 1, 0, 0});
            measured_read(&f, a, fx_at(&f, 3, 0, 0), 8 * KIB, "8 KiB read", &(struct expect){1, 0, 8 * KIB, 0, 0, 0, 0, 0, 0});
            CHECK(uraid_close(a) == 0);
        }
        /* the member holding data 0 of stripe s is missing */
        int slot, omit[FX_MAXM] = {0};
        uint64_t mo;
        uint64_t s = 5;
        fx_locate(&f, fx_at(&f, s, 0, 0), &slot, &mo);
        omit[slot] = 1;
        a = fx_open(&f, omit, 0, 0);
        if (a) {
            uint8_t warm[KIB] = {2};
            uint64_t sp = stripe_with(&f, -1, slot); /* a stripe whose P is on the missing member */
            CHECK(fx_write(&f, a, warm, KIB, fx_at(&f, sp + n, 1, 0)) == 0);
            measured_write(&f, a, fx_at(&f, s, 0, 4096), KIB, "degraded: 4 KiB to the missing member",
                           &(struct expect){k - 1, 1, (k - 1) * KIB, KIB, 0, 0, 1, 0, 0});
            measured_read(&f, a, fx_at(&f, s, 0, 0), 16 * KIB, "degraded read of the missing chunk",
                          &(struct expect){n - 1, 0, (long)(n - 1) * 16 * KIB, 0, 0, 0, 0, 0, 1});
            measured_read(&f, a, fx_at(&f, s, 1, 0), 16 * KIB, "degraded array, read of a present chunk",
                          &(struct expect){1, 0, 16 * KIB, 0, 0, 0, 0, 0, 0});
            measured_write(&f, a, fx_at(&f, sp, 1, 8192), 2 * KIB, "degraded: P missing, 2 KiB",
                           &(struct expect){0, 1, 0, 2 * KIB, 0, 0, 1, 0, 0});
            measured_write(&f, a, fx_at(&f, sp, 0, 0), 2 * CHUNK, "degraded: P missing, two chunks",
                           &(struct expect){0, 2, 0, 2 * CHUNK, 0, 0, 1, 0, 0});
            fx_verify_all(&f, a, "degraded read of everything");
            CHECK(uraid_close(a) == 0);
        }
    }
    harness_end();
    fx_destroy(&f);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_io_counts");
    /* each count is of one write on its own: no stream's pieces kept for the next (stripe/gather.c) */
    setenv("URAID_GATHER_US", "0", 1);
    rng_seed(&rng, harness_seed());
    test_raid6_16();
    test_raid5(4, 0, 1); /* k = 3: rmw 2 reads = rcw 2 reads, md takes rcw on a tie */
    test_raid5(6, 1, 0); /* k = 5: rmw 2 < rcw 4 */
    return harness_finish();
}
