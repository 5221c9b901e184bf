/* md's rmw_level (uraid_set_rmw_level): the member reads and writes of a
 * partial-stripe write under each level, on RAID-5 and RAID-6, healthy and
 * degraded, counted by uraid_get_counters:
 *   0  reconstruct-write only: the data blocks the write leaves are read,
 *      never old data and parity; a stripe missing one of those is rebuilt;
 *   1  (default) fewer reads wins, reconstruct-write on a tie;
 *   2  read-modify-write on a tie too (md's PARITY_PREFER_RMW).
 * After each level's writes the data is read back against a model and a
 * check finds mismatch_cnt 0. The level can change between writes of an
 * open array, and a bad level is refused. Randomised data: prints its seed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array_fixture.h"
#include "harness.h"
#include "stripe/cache.h"

static struct rng rng;

#define KIB 4096u
#define CHUNK (64u << 10)

struct want {
    long reads, writes, rmw, rcw, degraded;
};

/* A write of len bytes at off (in stripe s) under `level`. */
static void write_counted(struct fx *f, struct uraid_array *a, int level, uint64_t s, uint64_t off, size_t len,
                          const char *what, const struct want *w)
{
    CHECK(uraid_set_rmw_level(a, level) == 0 && uraid_get_rmw_level(a) == level);
    uint8_t *buf = aligned_alloc(4096, len);
    rng_fill(&rng, buf, len);
    uraid_reset_counters(a);
    stripe_cache_clear(stripe_cache_of(a)); /* each count is of a write from cold: no block cached */
    CHECK(fx_write(f, a, buf, len, off) == 0, "%s: %s: write", f->label, what);
    struct uraid_counters c;
    uraid_get_counters(a, &c);
    printf("  %-44s rmw_level %d: reads %llu writes %llu (rmw %llu rcw %llu degraded %llu)\n", what, level,
           (unsigned long long)c.member_reads, (unsigned long long)c.member_writes,
           (unsigned long long)c.writes_rmw, (unsigned long long)c.writes_rcw,
           (unsigned long long)c.writes_degraded);
    CHECK(c.member_reads == (uint64_t)w->reads && c.member_writes == (uint64_t)w->writes,
          "%s: %s, rmw_level %d: %llu reads %llu writes, expected %ld and %ld", f->label, what, level,
          (unsigned long long)c.member_reads, (unsigned long long)c.member_writes, w->reads, w->writes);
    CHECK(c.writes_rmw == (uint64_t)w->rmw && c.writes_rcw == (uint64_t)w->rcw &&
              c.writes_degraded == (uint64_t)w->degraded,
          "%s: %s, rmw_level %d: rmw/rcw/degraded %llu/%llu/%llu, expected %ld/%ld/%ld", f->label, what, level,
          (unsigned long long)c.writes_rmw, (unsigned long long)c.writes_rcw,
          (unsigned long long)c.writes_degraded, w->rmw, w->rcw, w->degraded);
    free(buf);
    fx_verify(f, a, fx_at(f, s, 0, 0), f->stripe_bytes, what);
}

static void expect_clean(struct fx *f, struct uraid_array *a, const char *what)
{
    struct uraid_job_params fast = {.speed_max_kib = 0};
    struct uraid_job_status st;
    CHECK(fx_job(f, a, URAID_JOB_CHECK, &fast, &st) == 0);
    CHECK(st.mismatch_sectors == 0, "%s: %s: mismatch_cnt %llu", f->label, what,
          (unsigned long long)st.mismatch_sectors);
}

/* One geometry: for each level, the writes with the counts md would make. */
struct level_case {
    int level, n;
    const char *what;
    int data_blocks;                  /* 1: 4 KiB in data 1; else that many whole chunks from data 0 */
    struct want want[3];              /* by rmw_level */
};

static void run_case(const struct level_case *c)
{
    harness_beginf("RAID-%d of %d: %s, rmw_level 0, 1, 2", c->level, c->n, c->what);
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, c->level, c->n, CHUNK, 2u << 20, &rng, 0, &a) == 0 && a) {
        CHECK(uraid_get_rmw_level(a) == URAID_RMW_FEWEST_READS, "the default is md's: 1");
        /* the first write of an open marks the array dirty: not counted */
        uint8_t warm[KIB] = {1};
        CHECK(fx_write(&f, a, warm, KIB, fx_at(&f, 8, 0, 0)) == 0);
        for (int level = 0; level < 3; level++) {
            uint64_t s = (uint64_t)level + 1;
            if (c->data_blocks == 1)
                write_counted(&f, a, level, s, fx_at(&f, s, 1, 8192), KIB, c->what, &c->want[level]);
            else
                write_counted(&f, a, level, s, fx_at(&f, s, 0, 0), (size_t)c->data_blocks * CHUNK, c->what,
                              &c->want[level]);
        }
        expect_clean(&f, a, c->what);
        CHECK(uraid_close(a) == 0);
        fx_verify_omitting(&f, 0, 0, "reopened");
    }
    fx_destroy(&f);
    harness_end();
}

/* Degraded RAID-5: the member of an unwritten data block is missing, so
 * reconstruct-write cannot run: level 0 rebuilds the stripe, 1 and 2 use
 * read-modify-write (old data + P, 2 reads). */
static void test_degraded(void)
{
    harness_begin("degraded RAID-5 of 5: rmw_level 0 rebuilds where reconstruct-write cannot run");
    /* level 0: every readable block of the rows (data 0, 1, 2, P), data 3
     * rebuilt from them, then data 1 and P written */
    static const struct want w[3] = {{4, 2, 0, 0, 1}, {2, 2, 1, 0, 0}, {2, 2, 1, 0, 0}};
    for (int level = 0; level < 3; level++) {
        struct fx f;
        if (fx_setup(&f, 5, 5, CHUNK, 2u << 20, &rng, 0, NULL) == 0) {
            int slot, omit[FX_MAXM] = {0};
            uint64_t mo;
            fx_locate(&f, fx_at(&f, 1, 3, 0), &slot, &mo); /* data 3: not written */
            omit[slot] = 1;
            struct uraid_array *a = fx_open(&f, omit, 0, 0);
            if (a) {
                uint8_t warm[KIB] = {1};
                CHECK(fx_write(&f, a, warm, KIB, fx_at(&f, 8, 1, 0)) == 0);
                write_counted(&f, a, level, 1, fx_at(&f, 1, 1, 8192), KIB, "4 KiB write, data 3 missing",
                              &w[level]);
                fx_verify_all(&f, a, "degraded, everything");
                CHECK(uraid_close(a) == 0);
            }
        }
        fx_destroy(&f);
    }
    harness_end();
}

static void test_runtime(void)
{
    harness_begin("rmw_level: refused outside 0..2, changed between writes of an open array");
    struct fx f;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, 6, 6, CHUNK, 2u << 20, &rng, 0, &a) == 0 && a) {
        CHECK(uraid_set_rmw_level(a, 3) == -EINVAL && uraid_set_rmw_level(a, -1) == -EINVAL);
        CHECK(uraid_get_rmw_level(a) == 1, "a refused level changes nothing");
        uint8_t warm[KIB] = {1};
        CHECK(fx_write(&f, a, warm, KIB, fx_at(&f, 8, 0, 0)) == 0);
        /* RAID-6 of 6, 4 KiB: a tie (3 reads either way) */
        write_counted(&f, a, 2, 5, fx_at(&f, 5, 1, 8192), KIB, "tie, then prefer rmw", &(struct want){3, 3, 1, 0, 0});
        write_counted(&f, a, 1, 5, fx_at(&f, 5, 1, 8192), KIB, "tie, back to fewest reads",
                      &(struct want){3, 3, 0, 1, 0});
        expect_clean(&f, a, "runtime changes");
        CHECK(uraid_close(a) == 0);
    }
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_rmw_level");
    /* each count is of one write on its own: no stream's pieces kept for the next (stripe/gather.c) */
    setenv("URAID_GATHER_US", "0", 1);
    rng_seed(&rng, harness_seed());
    fx_log_from_env();
    /* reads, writes, rmw, rcw, degraded; by level 0, 1, 2 */
    static const struct level_case cases[] = {
        /* k 4, one block: rmw 1+1 = 2 reads < rcw 3 */
        {5, 5, "4 KiB write", 1, {{3, 2, 0, 1, 0}, {2, 2, 1, 0, 0}, {2, 2, 1, 0, 0}}},
        /* k 3, one block: rmw 2 = rcw 2, a tie */
        {5, 4, "4 KiB write (a tie)", 1, {{2, 2, 0, 1, 0}, {2, 2, 0, 1, 0}, {2, 2, 1, 0, 0}}},
        /* k 4, three whole chunks: rmw 3+1 = 4 > rcw 1: rcw at every level */
        {5, 5, "three chunks", 3, {{1, 4, 0, 1, 0}, {1, 4, 0, 1, 0}, {1, 4, 0, 1, 0}}},
        /* RAID-6 k 6, one block: rmw 1+2 = 3 < rcw 5 */
        {6, 8, "4 KiB write", 1, {{5, 3, 0, 1, 0}, {3, 3, 1, 0, 0}, {3, 3, 1, 0, 0}}},
        /* RAID-6 k 4, one block: rmw 3 = rcw 3, a tie */
        {6, 6, "4 KiB write (a tie)", 1, {{3, 3, 0, 1, 0}, {3, 3, 0, 1, 0}, {3, 3, 1, 0, 0}}},
        /* RAID-6 k 6, two whole chunks: rmw 2+2 = 4 = rcw 6-2, a tie */
        {6, 8, "two chunks (a tie)", 2, {{4, 4, 0, 1, 0}, {4, 4, 0, 1, 0}, {4, 4, 1, 0, 0}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    test_degraded();
    test_runtime();
    return harness_finish();
}
