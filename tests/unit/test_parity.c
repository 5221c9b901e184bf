/* Every registered parity implementation against the byte-wise reference:
 * generation, read-modify-write, every single and double recovery, check,
 * odd shapes and misaligned buffers, and the selection override.
 * Randomised: prints its seed; URAID_TEST_SEED=N replays.
 * URAID_TEST_QUICK=1 (used for the sanitizer build) shrinks the sizes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "uraid_parity.h"

static struct rng rng;
static int quick;
static int ref_index;

/* A stripe of k data blocks plus P and Q, each at a chosen misalignment. */
struct stripe {
    int k;
    size_t len;
    uint8_t *mem[URAID_PARITY_MAX_K + 2];
    uint8_t *b[URAID_PARITY_MAX_K + 2];
};

static void stripe_alloc(struct stripe *s, int k, size_t len, int misalign)
{
    s->k = k;
    s->len = len;
    for (int i = 0; i < k + 2; i++) {
        size_t off = misalign ? rng_below(&rng, 64) : 0;
        s->mem[i] = aligned_alloc(64, len + 64);
        s->b[i] = s->mem[i] + off;
        rng_fill(&rng, s->b[i], len);
    }
}

static void stripe_free(struct stripe *s)
{
    for (int i = 0; i < s->k + 2; i++)
        free(s->mem[i]);
}

static int find(const char *name)
{
    for (int i = 0; i < uraid_parity_impl_count(); i++)
        if (!strcmp(uraid_parity_impl_name(i), name))
            return i;
    return -1;
}

/* Reference P and Q for the stripe's current data. */
static void ref_pq(const struct stripe *s, uint8_t *p, uint8_t *q)
{
    int rc = uraid_gen_pq_with(ref_index, s->k, s->len, (const void *const *)s->b, p, q);
    CHECK(rc == 0, "ref gen_pq rc %d", rc);
}

static size_t pick_len(int k)
{
    /* Total bytes bounded so the slow reference stays quick. */
    static const size_t lens[] = {512, 1024, 1536, 2560, 4096, 4608, 65536 + 512, 262144, 1048576};
    size_t budget = quick ? (1u << 20) : (16u << 20);
    for (;;) {
        size_t len = lens[rng_below(&rng, sizeof lens / sizeof lens[0])];
        if (len * (size_t)k <= budget || len == 512)
            return len;
    }
}

static void test_generation(int impl)
{
    static int ks[64];
    int nks = 0;
    for (int k = 1; k <= 40; k++)
        ks[nks++] = k;
    ks[nks++] = 64;
    ks[nks++] = 128;
    ks[nks++] = 253;
    for (int t = 0; t < nks; t++) {
        int k = ks[t];
        for (int misalign = 0; misalign <= 1; misalign++) {
            struct stripe s;
            size_t len = pick_len(k);
            stripe_alloc(&s, k, len, misalign);
            uint8_t *rp = malloc(len), *rq = malloc(len);
            ref_pq(&s, rp, rq);
            int rc = uraid_gen_p_with(impl, k, len, (const void *const *)s.b, s.b[k]);
            CHECK(rc == 0 && !memcmp(s.b[k], rp, len), "gen_p k=%d len=%zu misalign=%d", k, len, misalign);
            memset(s.b[k], 0, len);
            rc = uraid_gen_pq_with(impl, k, len, (const void *const *)s.b, s.b[k], s.b[k + 1]);
            CHECK(rc == 0 && !memcmp(s.b[k], rp, len), "gen_pq P k=%d len=%zu misalign=%d", k, len, misalign);
            CHECK(rc == 0 && !memcmp(s.b[k + 1], rq, len), "gen_pq Q k=%d len=%zu misalign=%d", k, len,
                  misalign);
            free(rp);
            free(rq);
            stripe_free(&s);
        }
    }
    /* the full 1 MiB length with a mid-size k regardless of the random pick */
    struct stripe s;
    stripe_alloc(&s, 6, 1u << 20, 1);
    uint8_t *rp = malloc(s.len), *rq = malloc(s.len);
    ref_pq(&s, rp, rq);
    uraid_gen_pq_with(impl, 6, s.len, (const void *const *)s.b, s.b[6], s.b[7]);
    CHECK(!memcmp(s.b[6], rp, s.len) && !memcmp(s.b[7], rq, s.len), "gen_pq 1 MiB");
    free(rp);
    free(rq);
    stripe_free(&s);
}

static void test_rmw(int impl)
{
    int rounds = quick ? 40 : 300;
    for (int r = 0; r < rounds; r++) {
        int k = 1 + (int)rng_below(&rng, r % 10 == 0 ? 253 : 24);
        size_t len = 512 * (1 + rng_below(&rng, quick ? 4 : 16));
        struct stripe s;
        stripe_alloc(&s, k, len, (int)rng_below(&rng, 2));
        ref_pq(&s, s.b[k], s.b[k + 1]);
        int slots[URAID_PARITY_MAX_K], n = 0;
        const void *olds[URAID_PARITY_MAX_K];
        const void *news[URAID_PARITY_MAX_K];
        uint8_t *fresh[URAID_PARITY_MAX_K];
        for (int j = 0; j < k; j++)
            if (rng_below(&rng, 3) == 0 || (j == k - 1 && n == 0))
                slots[n++] = j;
        for (int j = 0; j < n; j++) {
            fresh[j] = malloc(len);
            rng_fill(&rng, fresh[j], len);
            if (rng_below(&rng, 8) == 0)
                memcpy(fresh[j], s.b[slots[j]], len); /* unchanged slot */
            olds[j] = s.b[slots[j]];
            news[j] = fresh[j];
        }
        int raid6 = (int)rng_below(&rng, 2);
        int rc = uraid_rmw_with(impl, n, slots, len, olds, news, s.b[k], raid6 ? s.b[k + 1] : NULL);
        CHECK(rc == 0, "rmw rc %d", rc);
        uint8_t *q_before = malloc(len);
        memcpy(q_before, s.b[k + 1], len);
        for (int j = 0; j < n; j++)
            memcpy(s.b[slots[j]], fresh[j], len);
        uint8_t *rp = malloc(len), *rq = malloc(len);
        ref_pq(&s, rp, rq);
        CHECK(!memcmp(s.b[k], rp, len), "rmw P k=%d n=%d len=%zu", k, n, len);
        if (raid6)
            CHECK(!memcmp(s.b[k + 1], rq, len), "rmw Q k=%d n=%d first slot %d len=%zu", k, n, slots[0], len);
        for (int j = 0; j < n; j++)
            free(fresh[j]);
        free(q_before);
        free(rp);
        free(rq);
        stripe_free(&s);
    }
}

/* Lose the blocks in lost[], recover, compare with the originals. */
static void recover_case(int impl, struct stripe *s, int raid6, int nlost, const int *lost)
{
    int k = s->k;
    uint8_t *saved[2];
    for (int i = 0; i < nlost; i++) {
        saved[i] = malloc(s->len);
        memcpy(saved[i], s->b[lost[i]], s->len);
        memset(s->b[lost[i]], 0xa5, s->len);
    }
    int rc = uraid_recover_with(impl, k, s->len, (void *const *)s->b, raid6, nlost, lost);
    CHECK(rc == 0, "recover rc %d", rc);
    for (int i = 0; i < nlost; i++) {
        CHECK(!memcmp(saved[i], s->b[lost[i]], s->len), "recover k=%d raid6=%d lost {%d,%d} block %d len=%zu", k,
              raid6, lost[0], nlost > 1 ? lost[1] : -1, lost[i], s->len);
        memcpy(s->b[lost[i]], saved[i], s->len);
        free(saved[i]);
    }
}

static void test_recovery(int impl)
{
    int kmax = quick ? 12 : 32;
    for (int k = 1; k <= kmax; k++) {
        struct stripe s;
        stripe_alloc(&s, k, 512 * (1 + (k % 3)), k & 1);
        ref_pq(&s, s.b[k], s.b[k + 1]);
        for (int a = 0; a < k + 2; a++) {
            int one[1] = {a};
            recover_case(impl, &s, 1, 1, one);
            if (a <= k)
                recover_case(impl, &s, 0, 1, one);
            for (int b = a + 1; b < k + 2; b++) {
                int two[2] = {b, a}; /* unordered on purpose */
                recover_case(impl, &s, 1, 2, two);
            }
        }
        stripe_free(&s);
    }
    static const int big[] = {40, 64, 128, 253};
    for (unsigned t = 0; t < sizeof big / sizeof big[0]; t++) {
        int k = big[t];
        struct stripe s;
        stripe_alloc(&s, k, quick ? 512 : 4096, 1);
        ref_pq(&s, s.b[k], s.b[k + 1]);
        for (int r = 0; r < (quick ? 6 : 40); r++) {
            int a = (int)rng_below(&rng, k + 2), b;
            do
                b = (int)rng_below(&rng, k + 2);
            while (b == a);
            int two[2] = {a, b};
            recover_case(impl, &s, 1, 2, two);
        }
        stripe_free(&s);
    }
}

static void test_check(int impl)
{
    int rounds = quick ? 30 : 200;
    for (int r = 0; r < rounds; r++) {
        int k = 1 + (int)rng_below(&rng, 30);
        size_t len = 512 * (1 + rng_below(&rng, 12));
        int sectors = (int)(len / 512);
        struct stripe s;
        stripe_alloc(&s, k, len, (int)rng_below(&rng, 2));
        ref_pq(&s, s.b[k], s.b[k + 1]);
        uint8_t verdict[64];
        int16_t slot[64];
        int raid6 = (int)rng_below(&rng, 2);
        int bad = uraid_check_with(impl, k, len, (const void *const *)s.b, raid6, verdict, slot);
        CHECK(bad == 0, "clean stripe reports %d bad sectors", bad);

        /* one corrupted byte in one block */
        int victim = (int)rng_below(&rng, k + (raid6 ? 2 : 1));
        size_t pos = rng_below(&rng, len);
        uint8_t flip = (uint8_t)(1 + rng_below(&rng, 255));
        s.b[victim][pos] ^= flip;
        bad = uraid_check_with(impl, k, len, (const void *const *)s.b, raid6, verdict, slot);
        int sec = (int)(pos / 512);
        CHECK(bad == 1, "single corruption: %d bad sectors", bad);
        uint8_t want = !raid6 ? URAID_CHECK_P_BAD
                       : victim == k ? URAID_CHECK_P_BAD
                       : victim == k + 1 ? URAID_CHECK_Q_BAD
                                         : URAID_CHECK_DATA_BAD;
        CHECK(verdict[sec] == want, "k=%d raid6=%d victim %d verdict %d want %d", k, raid6, victim, verdict[sec],
              want);
        if (want == URAID_CHECK_DATA_BAD)
            CHECK(slot[sec] == victim, "located slot %d, corrupted %d", slot[sec], victim);
        for (int i = 0; i < sectors; i++)
            if (i != sec)
                CHECK(verdict[i] == URAID_CHECK_OK, "sector %d flagged", i);

        /* a second block corrupted at another byte of the same sector */
        if (raid6 && k >= 1) {
            int other;
            do
                other = (int)rng_below(&rng, k + 2);
            while (other == victim);
            size_t pos2 = (size_t)sec * 512 + (pos % 512 + 1 + rng_below(&rng, 510)) % 512;
            s.b[other][pos2] ^= (uint8_t)(1 + rng_below(&rng, 255));
            bad = uraid_check_with(impl, k, len, (const void *const *)s.b, raid6, verdict, slot);
            CHECK(bad == 1 && verdict[sec] == URAID_CHECK_MULTI_BAD,
                  "double corruption (blocks %d,%d) verdict %d", victim, other, verdict[sec]);
        }
        stripe_free(&s);
    }
}

static void test_bad_arguments(void)
{
    uint8_t buf[4][512];
    const void *d[2] = {buf[0], buf[1]};
    CHECK(uraid_gen_p(0, 512, d, buf[2]) == -EINVAL);
    CHECK(uraid_gen_p(254, 512, d, buf[2]) == -EINVAL);
    CHECK(uraid_gen_p(2, 100, d, buf[2]) == -EINVAL);
    CHECK(uraid_gen_pq(2, 512, d, buf[2], NULL) == -EINVAL);
    int slots[2] = {3, 1};
    CHECK(uraid_rmw(2, slots, 512, d, d, buf[2], buf[3]) == -EINVAL, "slots not increasing");
    void *b[4] = {buf[0], buf[1], buf[2], buf[3]};
    int lost[2] = {1, 1};
    CHECK(uraid_recover(2, 512, b, 1, 2, lost) == -EINVAL, "same block twice");
    int lost3[1] = {3};
    CHECK(uraid_recover(2, 512, b, 0, 1, lost3) == -EINVAL, "RAID-5 has no Q");
}

static void test_override(void)
{
    CHECK(uraid_parity_force("no-such-impl") == -ENOENT);
    CHECK(uraid_parity_force("int64") == 0);
    for (int op = 0; op < URAID_OP_COUNT; op++)
        CHECK(!strcmp(uraid_parity_chosen(op), "int64"), "op %d uses %s", op, uraid_parity_chosen(op));
    for (int i = 0; i < uraid_parity_impl_count(); i++)
        if (!uraid_parity_impl_valid(i))
            CHECK(uraid_parity_force(uraid_parity_impl_name(i)) == -ENOTSUP, "%s", uraid_parity_impl_name(i));
    CHECK(uraid_parity_force(NULL) == 0);
    for (int op = 0; op < URAID_OP_COUNT; op++) {
        const char *name = uraid_parity_chosen(op);
        CHECK(name && strcmp(name, "ref") != 0, "timed choice for op %d is %s", op, name ? name : "(none)");
    }
}

/* The cases every implementation the CPU can run goes through. */
static const struct {
    const char *what;
    void (*run)(int impl);
} cases[] = {
    {"gen_p/gen_pq vs reference", test_generation},
    {"rmw equals regeneration", test_rmw},
    {"every single and double recovery", test_recovery},
    {"check locates corruption", test_check},
};

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_parity");
    rng_seed(&rng, harness_seed());
    quick = getenv("URAID_TEST_QUICK") != NULL;
    ref_index = find("ref");
    CHECK(ref_index >= 0, "reference implementation registered");

    for (int i = 0; i < uraid_parity_impl_count(); i++) {
        const char *name = uraid_parity_impl_name(i);
        if (!uraid_parity_impl_valid(i)) {
            printf("skip %s: this CPU cannot run it\n", name);
            continue;
        }
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            harness_beginf("%s: %s", name, cases[c].what);
            cases[c].run(i);
            harness_end();
        }
    }
    harness_begin("bad arguments are refused");
    test_bad_arguments();
    harness_end();
    harness_begin("forced override and timed choice");
    test_override();
    harness_end();
    return harness_finish();
}
