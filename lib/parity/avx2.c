/* The 'avx2' candidate: 256-bit AVX2 (Haswell and later, every x86-64 server
 * of the last decade). Multiply by 2 is a byte add plus 0x1d where the top
 * bit was set (signed compare against zero gives the mask), as in the
 * kernel's raid6 avx2 code; multiply by any other constant is two 16-entry
 * nibble look-ups (vpshufb) from gf_nibble_lo/hi.
 *
 * Same structure as the wider kernels: blocks of U ymm, the loop over data
 * blocks innermost so accumulators stay in registers (4 P + 4 Q + constants
 * fit the 16 ymm registers) and every byte moves once. len % 512 == 0, so
 * blocks divide len exactly. */
#include <immintrin.h>

#include "gf.h"
#include "impl.h"

#define U 4  /* vectors per block */
#define UP 1 /* gen_p: one vector per data block per step measured fastest */
#define W 32
#define BLK (W * U)
#define INL static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

typedef __m256i vec;

INL vec ld(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
INL void st(uint8_t *p, vec v) { _mm256_storeu_si256((__m256i *)p, v); }
INL vec vxor(vec a, vec b) { return _mm256_xor_si256(a, b); }
INL vec xor3(vec a, vec b, vec c) { return vxor(vxor(a, b), c); }
INL vec vzero(void) { return _mm256_setzero_si256(); }

/* 2*v ^ x: the signed compare turns each byte's top bit into a 0x00/0xff
 * mask selecting the 0x1d reduction. */
INL vec mul2_xor(vec v, vec x, vec c1d)
{
    vec top = _mm256_cmpgt_epi8(vzero(), v);
    return xor3(_mm256_add_epi8(v, v), _mm256_and_si256(top, c1d), x);
}

struct mtab {
    vec lo, hi;
};

static inline struct mtab mtab(uint8_t c)
{
    struct mtab t;
    t.lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)gf_nibble_lo[c]));
    t.hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)gf_nibble_hi[c]));
    return t;
}

INL vec mulc(vec v, struct mtab t, vec m0f)
{
    vec lo = _mm256_and_si256(v, m0f);
    vec hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m0f);
    return vxor(_mm256_shuffle_epi8(t.lo, lo), _mm256_shuffle_epi8(t.hi, hi));
}

/* g^gap * v ^ x: up to three doublings are cheaper than a table multiply. */
INL vec mulpow_xor(vec v, int gap, vec x, vec c1d, vec m0f)
{
    if (gap > 3)
        return vxor(mulc(v, mtab(gf_pow2(gap)), m0f), x);
    for (; gap > 1; gap--)
        v = mul2_xor(v, vzero(), c1d);
    return mul2_xor(v, x, c1d);
}

static void avx2_gen_p(int k, size_t len, const uint8_t *const *d, uint8_t *p)
{
    for (size_t i = 0; i < len; i += UP * W) {
        vec acc[UP];
        int j = k - 1;
        UNROLL
        for (int u = 0; u < UP; u++)
            acc[u] = ld(d[j] + i + W * u);
                for (j = k - 2; j >= 1; j -= 2) {
            const uint8_t *a = d[j] + i, *b = d[j - 1] + i;
            UNROLL
            for (int u = 0; u < UP; u++)
                acc[u] = xor3(acc[u], ld(a + W * u), ld(b + W * u));
        }
        if (j == 0) {
            UNROLL
            for (int u = 0; u < UP; u++)
                acc[u] = vxor(acc[u], ld(d[0] + i + W * u));
        }
        UNROLL
        for (int u = 0; u < UP; u++)
            st(p + i + W * u, acc[u]);
    }
}

static void avx2_gen_pq(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q)
{
    const vec c1d = _mm256_set1_epi8(0x1d);
    for (size_t i = 0; i < len; i += BLK) {
        vec pa[U], qa[U];
        UNROLL
        for (int u = 0; u < U; u++)
            pa[u] = qa[u] = ld(d[k - 1] + i + W * u);
        for (int j = k - 2; j >= 0; j--) {
            const uint8_t *s = d[j] + i;
            UNROLL
            for (int u = 0; u < U; u++) {
                vec x = ld(s + W * u);
                pa[u] = vxor(pa[u], x);
                qa[u] = mul2_xor(qa[u], x, c1d);
            }
        }
        if (p) {
            UNROLL
            for (int u = 0; u < U; u++)
                st(p + i + W * u, pa[u]);
        }
        UNROLL
        for (int u = 0; u < U; u++)
            st(q + i + W * u, qa[u]);
    }
}

/* One pass per block: P takes every delta, the Q accumulator is Horner over
 * the changed slots from the highest down (g^gap between neighbours), then
 * one multiply by g^slots[0]. P and Q are read and written once. */
static void avx2_rmw(int n, const int *slots, size_t len, const uint8_t *const *old,
                       const uint8_t *const *neu, uint8_t *p, uint8_t *q)
{
    const vec c1d = _mm256_set1_epi8(0x1d), m0f = _mm256_set1_epi8(0x0f);
    const struct mtab tlow = mtab(gf_pow2(slots[0]));
    for (size_t i = 0; i < len; i += BLK) {
        vec pa[U], qa[U];
        int j = n - 1;
        UNROLL
        for (int u = 0; u < U; u++)
            pa[u] = qa[u] = vxor(ld(old[j] + i + W * u), ld(neu[j] + i + W * u));
        for (j = n - 2; j >= 0; j--) {
            const uint8_t *o = old[j] + i, *w = neu[j] + i;
            int gap = slots[j + 1] - slots[j];
            UNROLL
            for (int u = 0; u < U; u++) {
                vec delta = vxor(ld(o + W * u), ld(w + W * u));
                pa[u] = vxor(pa[u], delta);
                if (q)
                    qa[u] = mulpow_xor(qa[u], gap, delta, c1d, m0f);
            }
        }
        UNROLL
        for (int u = 0; u < U; u++)
            st(p + i + W * u, vxor(ld(p + i + W * u), pa[u]));
        if (q) {
            UNROLL
            for (int u = 0; u < U; u++)
                st(q + i + W * u, vxor(ld(q + i + W * u), mulc(qa[u], tlow, m0f)));
        }
    }
}

/* Partial sums over the surviving data slots of one block: pa = XOR, qa =
 * sum g^j D_j with the lost slots x and y (y may be -1) as zero. Doubling
 * through a lost slot costs no load. */
INL void partial(int k, int x, int y, uint8_t *const *b, size_t i, vec *pa, vec *qa, vec c1d)
{
    UNROLL
    for (int u = 0; u < U; u++)
        pa[u] = qa[u] = vzero();
    for (int j = k - 1; j >= 0; j--) {
        if (j == x || j == y) {
            UNROLL
            for (int u = 0; u < U; u++)
                qa[u] = mul2_xor(qa[u], vzero(), c1d);
            continue;
        }
        const uint8_t *s = b[j] + i;
        UNROLL
        for (int u = 0; u < U; u++) {
            vec v = ld(s + W * u);
            pa[u] = vxor(pa[u], v);
            qa[u] = mul2_xor(qa[u], v, c1d);
        }
    }
}

/* D_y = a*(P ^ Pxy) ^ b*(Q ^ Qxy), D_x = D_y ^ P ^ Pxy, fused in one pass. */
static void avx2_recov_2data(int k, size_t len, int x, int y, uint8_t *const *b)
{
    const vec c1d = _mm256_set1_epi8(0x1d), m0f = _mm256_set1_epi8(0x0f);
    uint8_t ca, cb;
    gf_two_data_coefs(x, y, &ca, &cb);
    const struct mtab ta = mtab(ca), tb = mtab(cb);
    for (size_t i = 0; i < len; i += BLK) {
        vec pa[U], qa[U];
        partial(k, x, y, b, i, pa, qa, c1d);
        UNROLL
        for (int u = 0; u < U; u++) {
            vec pd = vxor(pa[u], ld(b[k] + i + W * u));
            vec qd = vxor(qa[u], ld(b[k + 1] + i + W * u));
            vec dy = vxor(mulc(pd, ta, m0f), mulc(qd, tb, m0f));
            st(b[y] + i + W * u, dy);
            st(b[x] + i + W * u, vxor(dy, pd));
        }
    }
}

/* D_x = g^-x * (Q ^ Qx), then P = XOR of the other data ^ D_x. */
static void avx2_recov_datap(int k, size_t len, int x, uint8_t *const *b)
{
    const vec c1d = _mm256_set1_epi8(0x1d), m0f = _mm256_set1_epi8(0x0f);
    const struct mtab tinv = mtab(gf_inverse[gf_pow2(x)]);
    for (size_t i = 0; i < len; i += BLK) {
        vec pa[U], qa[U];
        partial(k, x, -1, b, i, pa, qa, c1d);
        UNROLL
        for (int u = 0; u < U; u++) {
            vec dx = mulc(vxor(qa[u], ld(b[k + 1] + i + W * u)), tinv, m0f);
            st(b[x] + i + W * u, dx);
            st(b[k] + i + W * u, vxor(pa[u], dx));
        }
    }
}

const struct parity_impl parity_impl_avx2 = {
    .name = "avx2",
    .desc = "AVX2 byte shuffles and shifts",
    .valid = cpu_has_avx2,
    .gen_p = avx2_gen_p,
    .gen_pq = avx2_gen_pq,
    .rmw = avx2_rmw,
    .recov_2data = avx2_recov_2data,
    .recov_datap = avx2_recov_datap,
};
