/* Start-up self-test: an implementation is compared with the byte-wise
 * reference on a fixed set of shapes and failures (deterministic data), so
 * a server can refuse to run when parity would be wrong on this CPU. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uraid_parity.h"

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill(uint64_t *s, uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = mix(s);
        memcpy(p + i, &v, 8);
    }
}

static int find_ref(void)
{
    for (int i = 0; i < uraid_parity_impl_count(); i++)
        if (!strcmp(uraid_parity_impl_name(i), "ref"))
            return i;
    return -1;
}

struct st {
    int impl, ref, cases, failed;
    char *why;
    size_t whylen;
};

static void fail(struct st *t, const char *what, int k, size_t len)
{
    if (!t->failed && t->why)
        snprintf(t->why, t->whylen, "%s differs from the reference (k=%d, %zu bytes)", what, k, len);
    t->failed++;
}

/* One stripe shape: generation, rmw of a few slots, every single and double
 * recovery (all pairs for small k, a spread of pairs otherwise), check. */
static void run_shape(struct st *t, int k, size_t len, uint8_t **b, uint8_t **orig, uint8_t *ref_p,
                      uint8_t *ref_q, uint8_t *spare, uint64_t *seed)
{
    const void *const *data = (const void *const *)b;
    for (int i = 0; i < k; i++)
        fill(seed, b[i], len);
    uraid_gen_pq_with(t->ref, k, len, data, ref_p, ref_q);

    t->cases += 2;
    if (uraid_gen_p_with(t->impl, k, len, data, b[k]) || memcmp(b[k], ref_p, len))
        fail(t, "gen_p", k, len);
    if (uraid_gen_pq_with(t->impl, k, len, data, b[k], b[k + 1]) || memcmp(b[k], ref_p, len) ||
        memcmp(b[k + 1], ref_q, len))
        fail(t, "gen_pq", k, len);

    /* rmw: change the last slot (and slot 0 when there are two) */
    int slots[2] = {0, k - 1}, n = k > 1 ? 2 : 1;
    if (n == 1)
        slots[0] = 0;
    fill(seed, spare, len);
    const void *olds[2] = {b[slots[0]], b[slots[n - 1]]};
    const void *news[2] = {spare, spare};
    t->cases++;
    if (uraid_rmw_with(t->impl, n, slots, len, olds, news, b[k], b[k + 1]) == 0) {
        for (int j = 0; j < n; j++)
            memcpy(b[slots[j]], spare, len);
        uraid_gen_pq_with(t->ref, k, len, data, ref_p, ref_q);
        if (memcmp(b[k], ref_p, len) || memcmp(b[k + 1], ref_q, len))
            fail(t, "rmw", k, len);
    } else {
        fail(t, "rmw", k, len);
    }
    memcpy(b[k], ref_p, len);
    memcpy(b[k + 1], ref_q, len);

    /* recovery: lose one or two blocks, rebuild, compare with the originals */
    for (int i = 0; i < k + 2; i++)
        memcpy(orig[i], b[i], len);
    int step = k + 2 <= 12 ? 1 : (k + 2) / 7;
    for (int x = 0; x < k + 2; x += step) {
        for (int y = x; y < k + 2; y += step) {
            int lost[2] = {x, y}, nlost = x == y ? 1 : 2;
            memset(b[x], 0, len);
            memset(b[y], 0, len);
            t->cases++;
            int rc = uraid_recover_with(t->impl, k, len, (void *const *)b, 1, nlost, lost);
            if (rc || memcmp(b[x], orig[x], len) || memcmp(b[y], orig[y], len))
                fail(t, "recover", k, len);
            memcpy(b[x], orig[x], len);
            memcpy(b[y], orig[y], len);
        }
    }

    t->cases++;
    int16_t slot[256];
    uint8_t verdict[256];
    b[k - 1][len / 2] ^= 0x5a;
    int bad = uraid_check_with(t->impl, k, len, data, 1, verdict, slot);
    if (bad != 1 || verdict[len / 2 / 512] != URAID_CHECK_DATA_BAD || slot[len / 2 / 512] != k - 1)
        fail(t, "check", k, len);
    b[k - 1][len / 2] ^= 0x5a;
}

int uraid_parity_selftest(int impl, char *why, size_t whylen)
{
    static const int ks[] = {1, 2, 3, 4, 5, 8, 16, 31, 64, 253};
    static const size_t lens[] = {512, 4608, 65536};
    struct st t = {.impl = impl, .ref = find_ref(), .why = why, .whylen = whylen};
    if (why && whylen)
        why[0] = 0;
    if (t.ref < 0 || impl < 0 || impl >= uraid_parity_impl_count())
        return -EINVAL;
    if (!uraid_parity_impl_valid(impl))
        return -ENOTSUP;
    size_t maxlen = 65536;
    /* the largest shape is capped at 1 MiB of data below */
    size_t area = (size_t)(URAID_PARITY_MAX_K + 2) * 512 + (1u << 20) + 2 * maxlen;
    uint8_t *mem = aligned_alloc(64, 2 * area + 3 * maxlen);
    if (!mem)
        return -ENOMEM;
    uint8_t *b[URAID_PARITY_MAX_K + 2], *orig[URAID_PARITY_MAX_K + 2];
    uint64_t seed = 0x5eed;
    for (unsigned ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        for (unsigned li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            int k = ks[ki];
            size_t len = lens[li];
            if ((size_t)k * len > (1u << 20))
                len = 512; /* keep the byte-wise reference quick for wide stripes */
            /* odd offsets on purpose: the contract allows any alignment */
            size_t stride = len + 64;
            for (int i = 0; i < k + 2; i++) {
                b[i] = mem + (size_t)i * stride + (size_t)((i * 8) % 64);
                orig[i] = mem + area + (size_t)i * stride;
            }
            uint8_t *ref_p = mem + 2 * area;
            uint8_t *ref_q = ref_p + maxlen;
            uint8_t *spare = ref_q + maxlen;
            run_shape(&t, k, len, b, orig, ref_p, ref_q, spare, &seed);
        }
    }
    free(mem);
    return t.failed;
}
