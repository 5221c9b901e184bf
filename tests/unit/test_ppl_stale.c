/* A partial write's partial parity left behind in the newest header on
 * disk must not be replayed over a later write of its stripe.
 *
 * The case (found by test_crash, raid5/healthy/ppl/powercut): a 4 KiB write
 * A of stripe X is in flight when a stream of whole stripes B writes its
 * header on X's parity log, listing the stripes after it whole (ahead,
 * ppl_ahead.c), X among them, and A's entry, still in flight. A ends and
 * leaves the list, but that header, the newest on disk, still lists A's
 * partial parity. A whole-stripe write C of X then found X listed ahead
 * and wrote with no log write of its own. After a crash, replay applied
 * B's whole entry, then A's partial parity, computed from X's data before
 * C: the parity no longer matched C's data (mismatch 8 after a healthy
 * array's power cut; on a degraded one, a missing chunk rebuilt wrong).
 *
 * The order is forced: A's data write is held in its member's fault layer
 * (stall-writes) once A's header is on disk; B runs to its end meanwhile;
 * A is let go; C runs. Then the members vanish (a crash with every write
 * on disk), the array is reopened (the PPL replayed), checked and read. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"

#define MEMBER_BYTES (3u << 20)
#define CHUNK (16u << 10)

static struct rng rng;

/* New data for [off, off+len) in the model (fx_write writes it from there). */
static void new_data(struct fx *f, uint64_t off, uint64_t len)
{
    rng_fill(&rng, f->model + off, len);
}

static void test_stale(int level, int n, uint64_t x)
{
    harness_beginf("RAID-%d ppl: a whole-stripe write after a partial one of stripe %llu, the newest header still "
                   "listing the partial one: a crash, replay, check clean and every byte read back",
                   level, (unsigned long long)x);
    struct fx f;
    fx_policy = URAID_POLICY_PPL;
    struct uraid_array *a = NULL;
    if (fx_setup(&f, level, n, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    struct uraid_open_params op = {0};
    if (fx_open_with(&f, 0, "", NULL, 0, &op, &a))
        goto out;
    /* A: 4 KiB in the middle of X's second chunk, its data write held; B: the stripe before X */
    uint64_t a_off = fx_at(&f, x, 1, 8192), a_len = 4096, b_off = (x - 1) * f.stripe_bytes;
    int a_slot, p_slot, q_slot;
    uint64_t a_member_off;
    fx_locate(&f, a_off, &a_slot, &a_member_off);
    fx_parity_of(&f, x, &p_slot, &q_slot);
    if (fx_inject(&f, a, a_slot, "stall-writes", a_member_off, a_len))
        goto out;
    new_data(&f, a_off, a_len);
    new_data(&f, b_off, f.stripe_bytes);
    struct fx_async_write wa;
    fx_write_start(&wa, &f, a, a_off, a_len);
    int waited = 0;
    while (!fx_ppl_lists(&f, p_slot, a_off / 512) && waited++ < 10000)
        usleep(1000);
    CHECK(waited < 10000, "A's header never reached slot %d's log", p_slot);
    int b_rc = fx_write(&f, a, f.model + b_off, f.stripe_bytes, b_off);
    CHECK(uraid_inject(a, a_slot, "clear") == 0);
    int a_rc = fx_write_join(&wa);
    CHECK(a_rc == 0 && b_rc == 0, "writes A %d, B %d", a_rc, b_rc);
    /* C: all of X */
    uint64_t c_off = x * f.stripe_bytes;
    new_data(&f, c_off, f.stripe_bytes);
    CHECK(fx_write(&f, a, f.model + c_off, f.stripe_bytes, c_off) == 0, "write C");
    for (int s = 0; s < n; s++)
        CHECK(uraid_inject(a, s, "vanish") == 0);
    uraid_close(a); /* fails: the members are gone; it only frees memory */
    a = NULL;
    if (fx_open_with(&f, 0, NULL, NULL, 0, NULL, &a))
        goto out;
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status st;
    if (fx_job(&f, a, URAID_JOB_CHECK, &jp, &st) == 0)
        CHECK(st.mismatch_sectors == 0, "after the replay, a check finds %llu sectors mismatched",
              (unsigned long long)st.mismatch_sectors);
    fx_verify_all(&f, a, "after the replay");
    CHECK(uraid_close(a) == 0);
    a = NULL;
out:
    if (a)
        uraid_close(a);
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_ppl_stale");
    rng_seed(&rng, harness_seed());
    fx_log_from_env();
    test_stale(5, 4, 14);
    test_stale(5, 4, 21);
    test_stale(6, 5, 14);
    return harness_finish();
}
