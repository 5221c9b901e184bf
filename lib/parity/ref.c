/* The reference implementation: one byte at a time, straight from the
 * definitions, with its own shift-and-add multiply instead of the shared
 * tables. It is the oracle every other implementation is tested against and
 * must stay obviously right; never optimise it. */
#include "impl.h"

static uint8_t ref_mul(uint8_t a, uint8_t b)
{
    unsigned r = 0, x = a;
    while (b) {
        if (b & 1)
            r ^= x;
        x <<= 1;
        if (x & 0x100)
            x ^= 0x11d;
        b >>= 1;
    }
    return (uint8_t)r;
}

static uint8_t ref_pow2(int e)
{
    uint8_t r = 1;
    for (int i = 0; i < e % 255; i++)
        r = ref_mul(r, 2);
    return r;
}

static uint8_t ref_inv(uint8_t a)
{
    /* a^254 = a^-1 in GF(2^8) */
    uint8_t r = 1;
    for (int i = 0; i < 254; i++)
        r = ref_mul(r, a);
    return r;
}

static void ref_gen_p(int k, size_t len, const uint8_t *const *d, uint8_t *p)
{
    for (size_t i = 0; i < len; i++) {
        uint8_t x = 0;
        for (int j = 0; j < k; j++)
            x ^= d[j][i];
        p[i] = x;
    }
}

static void ref_gen_pq(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q)
{
    for (size_t i = 0; i < len; i++) {
        uint8_t px = 0, qx = 0;
        for (int j = k - 1; j >= 0; j--) {
            px ^= d[j][i];
            qx = ref_mul(qx, 2) ^ d[j][i];
        }
        if (p)
            p[i] = px;
        q[i] = qx;
    }
}

static void ref_rmw(int n, const int *slots, size_t len, const uint8_t *const *old,
                    const uint8_t *const *neu, uint8_t *p, uint8_t *q)
{
    for (int j = 0; j < n; j++) {
        uint8_t coef = ref_pow2(slots[j]);
        for (size_t i = 0; i < len; i++) {
            uint8_t delta = old[j][i] ^ neu[j][i];
            p[i] ^= delta;
            if (q)
                q[i] ^= ref_mul(coef, delta);
        }
    }
}

/* Pd = P ^ (XOR of surviving data), Qd = Q ^ (sum of g^j * surviving data),
 * accumulated one whole block at a time into pd[] and qd[]. */
static void ref_partial_syndrome(int k, size_t len, int x, int y, uint8_t *const *b, uint8_t *pd, uint8_t *qd)
{
    for (size_t i = 0; i < len; i++) {
        pd[i] = b[k][i];
        qd[i] = b[k + 1][i];
    }
    for (int j = 0; j < k; j++) {
        if (j == x || j == y)
            continue;
        uint8_t coef = ref_pow2(j);
        for (size_t i = 0; i < len; i++) {
            pd[i] ^= b[j][i];
            qd[i] ^= ref_mul(coef, b[j][i]);
        }
    }
}

/* Uses b[x] and b[y] (lost, so free) as the Pd and Qd accumulators. */
static void ref_recov_2data(int k, size_t len, int x, int y, uint8_t *const *b)
{
    uint8_t a = ref_inv(ref_pow2(y - x) ^ 1);
    uint8_t c = ref_inv(ref_pow2(x) ^ ref_pow2(y));
    uint8_t *pd = b[x], *qd = b[y];
    ref_partial_syndrome(k, len, x, y, b, pd, qd);
    for (size_t i = 0; i < len; i++) {
        uint8_t dy = ref_mul(a, pd[i]) ^ ref_mul(c, qd[i]);
        b[x][i] = dy ^ pd[i];
        b[y][i] = dy;
    }
}

/* Uses b[k] (P, lost) and b[x] as the accumulators. */
static void ref_recov_datap(int k, size_t len, int x, uint8_t *const *b)
{
    uint8_t inv_gx = ref_inv(ref_pow2(x));
    uint8_t *qd = b[x], *p = b[k];
    for (size_t i = 0; i < len; i++) {
        qd[i] = b[k + 1][i];
        p[i] = 0;
    }
    for (int j = 0; j < k; j++) {
        if (j == x)
            continue;
        uint8_t coef = ref_pow2(j);
        for (size_t i = 0; i < len; i++) {
            qd[i] ^= ref_mul(coef, b[j][i]);
            p[i] ^= b[j][i];
        }
    }
    for (size_t i = 0; i < len; i++) {
        uint8_t dx = ref_mul(inv_gx, qd[i]);
        b[x][i] = dx;
        p[i] ^= dx;
    }
}

static int always(void) { return 1; }

const struct parity_impl parity_impl_ref = {
    .name = "ref",
    .desc = "byte-at-a-time reference (test oracle)",
    .valid = always,
    .gen_p = ref_gen_p,
    .gen_pq = ref_gen_pq,
    .rmw = ref_rmw,
    .recov_2data = ref_recov_2data,
    .recov_datap = ref_recov_datap,
};
