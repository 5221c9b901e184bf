/* Portable 64-bit word implementation: eight bytes per operation, no SIMD.
 * The fallback on any x86-64 (and the one to beat for the vector code). */
#include <string.h>

#include "gf.h"
#include "impl.h"

static inline uint64_t ld(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline void st(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Multiply every byte of v by the constant c. */
static inline uint64_t mul_const(uint8_t c, uint64_t v)
{
    const uint8_t *row = gf_mul_table[c];
    uint64_t r = 0;
    for (int b = 0; b < 64; b += 8)
        r |= (uint64_t)row[(v >> b) & 0xff] << b;
    return r;
}

/* v * 2^e: a few doublings are cheaper than eight table look-ups. */
static inline uint64_t mul_pow2(int e, uint64_t v)
{
    if (e <= 3) {
        while (e-- > 0)
            v = gf_mul2_u64(v);
        return v;
    }
    return mul_const(gf_pow2(e), v);
}

static void int64_gen_p(int k, size_t len, const uint8_t *const *d, uint8_t *p)
{
    for (size_t i = 0; i < len; i += 32) {
        uint64_t a = ld(d[0] + i), b = ld(d[0] + i + 8), c = ld(d[0] + i + 16), e = ld(d[0] + i + 24);
        for (int j = 1; j < k; j++) {
            a ^= ld(d[j] + i);
            b ^= ld(d[j] + i + 8);
            c ^= ld(d[j] + i + 16);
            e ^= ld(d[j] + i + 24);
        }
        st(p + i, a);
        st(p + i + 8, b);
        st(p + i + 16, c);
        st(p + i + 24, e);
    }
}

static void int64_gen_pq(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q)
{
    for (size_t i = 0; i < len; i += 16) {
        uint64_t p0 = ld(d[k - 1] + i), p1 = ld(d[k - 1] + i + 8);
        uint64_t q0 = p0, q1 = p1;
        for (int j = k - 2; j >= 0; j--) {
            uint64_t x0 = ld(d[j] + i), x1 = ld(d[j] + i + 8);
            p0 ^= x0;
            p1 ^= x1;
            q0 = gf_mul2_u64(q0) ^ x0;
            q1 = gf_mul2_u64(q1) ^ x1;
        }
        if (p) {
            st(p + i, p0);
            st(p + i + 8, p1);
        }
        st(q + i, q0);
        st(q + i + 8, q1);
    }
}

static void int64_rmw(int n, const int *slots, size_t len, const uint8_t *const *old,
                      const uint8_t *const *neu, uint8_t *p, uint8_t *q)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t pacc = 0, qacc = 0;
        for (int j = n - 1; j >= 0; j--) {
            uint64_t delta = ld(old[j] + i) ^ ld(neu[j] + i);
            pacc ^= delta;
            if (q) {
                int gap = j == n - 1 ? 0 : slots[j + 1] - slots[j];
                qacc = mul_pow2(gap, qacc) ^ delta;
            }
        }
        st(p + i, ld(p + i) ^ pacc);
        if (q)
            st(q + i, ld(q + i) ^ mul_pow2(slots[0], qacc));
    }
}

static void int64_recov_2data(int k, size_t len, int x, int y, uint8_t *const *b)
{
    uint8_t ca, cb;
    gf_two_data_coefs(x, y, &ca, &cb);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t pd = 0, qd = 0;
        for (int j = k - 1; j >= 0; j--) {
            uint64_t v = (j == x || j == y) ? 0 : ld(b[j] + i);
            pd ^= v;
            qd = gf_mul2_u64(qd) ^ v;
        }
        pd ^= ld(b[k] + i);
        qd ^= ld(b[k + 1] + i);
        uint64_t dy = mul_const(ca, pd) ^ mul_const(cb, qd);
        st(b[y] + i, dy);
        st(b[x] + i, dy ^ pd);
    }
}

static void int64_recov_datap(int k, size_t len, int x, uint8_t *const *b)
{
    uint8_t inv_gx = gf_inverse[gf_pow2(x)];
    for (size_t i = 0; i < len; i += 8) {
        uint64_t pacc = 0, qd = 0;
        for (int j = k - 1; j >= 0; j--) {
            uint64_t v = j == x ? 0 : ld(b[j] + i);
            pacc ^= v;
            qd = gf_mul2_u64(qd) ^ v;
        }
        uint64_t dx = mul_const(inv_gx, qd ^ ld(b[k + 1] + i));
        st(b[x] + i, dx);
        st(b[k] + i, pacc ^ dx);
    }
}

static int always(void) { return 1; }

const struct parity_impl parity_impl_int64 = {
    .name = "int64",
    .desc = "portable 64-bit words",
    .valid = always,
    .gen_p = int64_gen_p,
    .gen_pq = int64_gen_pq,
    .rmw = int64_rmw,
    .recov_2data = int64_recov_2data,
    .recov_datap = int64_recov_datap,
};
