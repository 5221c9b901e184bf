/* The 'avx512' candidate: AVX-512BW without GFNI (Skylake-SP .. Cascade
 * Lake, Zen 4 with GFNI disabled). Multiply by 2 is a byte add plus a masked
 * 0x1d where the top bit was set; multiply by any other constant is two
 * 16-entry nibble look-ups (vpshufb) from gf_nibble_lo/hi.
 *
 * Same structure as the GFNI kernels: blocks of U zmm, the loop over data
 * blocks innermost so accumulators stay in registers and every byte moves
 * once. len % 512 == 0, so blocks divide len exactly. */
#include <immintrin.h>

#include "gf.h"
#include "impl.h"

#define U 4  /* vectors per block */
#define UP 2 /* gen_p: vectors per data block per step, measured fastest */
#define BLK (64 * U)
#define INL static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

typedef __m512i vec;

INL vec ld(const uint8_t *p) { return _mm512_loadu_si512((const void *)p); }
INL void st(uint8_t *p, vec v) { _mm512_storeu_si512((void *)p, v); }
INL vec vxor(vec a, vec b) { return _mm512_xor_si512(a, b); }
INL vec xor3(vec a, vec b, vec c) { return _mm512_ternarylogic_epi64(a, b, c, 0x96); }

/* 2*v ^ x in four instructions: the reduction byte comes from a zero-masked
 * move (vpmovb2m gives the top bits as a mask), and one ternary XOR folds the
 * doubled value, the reduction and the next input. */
INL vec mul2_xor(vec v, vec x, vec c1d)
{
    __mmask64 top = _mm512_movepi8_mask(v);
    return xor3(_mm512_add_epi8(v, v), _mm512_maskz_mov_epi8(top, c1d), x);
}

struct mtab {
    vec lo, hi;
};

static inline struct mtab mtab(uint8_t c)
{
    struct mtab t;
    t.lo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)gf_nibble_lo[c]));
    t.hi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)gf_nibble_hi[c]));
    return t;
}

INL vec mulc(vec v, struct mtab t, vec m0f)
{
    vec lo = _mm512_and_si512(v, m0f);
    vec hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f);
    return vxor(_mm512_shuffle_epi8(t.lo, lo), _mm512_shuffle_epi8(t.hi, hi));
}

/* g^gap * v ^ x: up to three doublings are cheaper than a table multiply. */
INL vec mulpow_xor(vec v, int gap, vec x, vec c1d, vec m0f)
{
    if (gap > 3)
        return vxor(mulc(v, mtab(gf_pow2(gap)), m0f), x);
    for (; gap > 1; gap--)
        v = mul2_xor(v, _mm512_setzero_si512(), c1d);
    return mul2_xor(v, x, c1d);
}

/* One input per step with a plain XOR, two zmm per data block: faster and
 * less placement-dependent than vpternlogq over pairs of inputs (the loop is
 * load-bound; see bench/NOTES-kernels.md). */
static void avx512_gen_p(int k, size_t len, const uint8_t *const *d, uint8_t *p)
{
    for (size_t i = 0; i < len; i += UP * 64) {
        vec acc[UP];
        UNROLL
        for (int u = 0; u < UP; u++)
            acc[u] = ld(d[k - 1] + i + 64 * u);
        for (int j = k - 2; j >= 0; j--) {
            const uint8_t *s = d[j] + i;
            UNROLL
            for (int u = 0; u < UP; u++)
                acc[u] = vxor(acc[u], ld(s + 64 * u));
        }
        UNROLL
        for (int u = 0; u < UP; u++)
            st(p + i + 64 * u, acc[u]);
    }
}

static void avx512_gen_pq(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q)
{
    const vec c1d = _mm512_set1_epi8(0x1d);
    for (size_t i = 0; i < len; i += BLK) {
        vec pa[U], qa[U];
        UNROLL
        for (int u = 0; u < U; u++)
            pa[u] = qa[u] = ld(d[k - 1] + i + 64 * u);
        for (int j = k - 2; j >= 0; j--) {
            const uint8_t *s = d[j] + i;
            UNROLL
            for (int u = 0; u < U; u++) {
                vec x = ld(s + 64 * u);
                pa[u] = vxor(pa[u], x);
                qa[u] = mul2_xor(qa[u], x, c1d);
            }
        }
        if (p) {
            UNROLL
            for (int u = 0; u < U; u++)
                st(p + i + 64 * u, pa[u]);
        }
        UNROLL
        for (int u = 0; u < U; u++)
            st(q + i + 64 * u, qa[u]);
    }
}

/* One pass per block: P takes every delta, the Q accumulator is Horner over
 * the changed slots from the highest down (g^gap between neighbours), then
 * one multiply by g^slots[0]. P and Q are read and written once. */
static void avx512_rmw(int n, const int *slots, size_t len, const uint8_t *const *old,
                       const uint8_t *const *neu, uint8_t *p, uint8_t *q)
{
    const vec c1d = _mm512_set1_epi8(0x1d), m0f = _mm512_set1_epi8(0x0f);
    const struct mtab tlow = mtab(gf_pow2(slots[0]));
    for (size_t i = 0; i < len; i += BLK) {
        vec pa[U], qa[U];
        int j = n - 1;
        UNROLL
        for (int u = 0; u < U; u++)
            pa[u] = qa[u] = vxor(ld(old[j] + i + 64 * u), ld(neu[j] + i + 64 * u));
        for (j = n - 2; j >= 0; j--) {
            const uint8_t *o = old[j] + i, *w = neu[j] + i;
            int gap = slots[j + 1] - slots[j];
            UNROLL
            for (int u = 0; u < U; u++) {
                vec delta = vxor(ld(o + 64 * u), ld(w + 64 * u));
                pa[u] = vxor(pa[u], delta);
                if (q)
                    qa[u] = mulpow_xor(qa[u], gap, delta, c1d, m0f);
            }
        }
        UNROLL
        for (int u = 0; u < U; u++)
            st(p + i + 64 * u, vxor(ld(p + i + 64 * u), pa[u]));
        if (q) {
            UNROLL
            for (int u = 0; u < U; u++)
                st(q + i + 64 * u, vxor(ld(q + i + 64 * u), mulc(qa[u], tlow, m0f)));
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
        pa[u] = qa[u] = _mm512_setzero_si512();
    for (int j = k - 1; j >= 0; j--) {
        if (j == x || j == y) {
            UNROLL
            for (int u = 0; u < U; u++)
                qa[u] = mul2_xor(qa[u], _mm512_setzero_si512(), c1d);
            continue;
        }
        const uint8_t *s = b[j] + i;
        UNROLL
        for (int u = 0; u < U; u++) {
            vec v = ld(s + 64 * u);
            pa[u] = vxor(pa[u], v);
            qa[u] = mul2_xor(qa[u], v, c1d);
        }
    }
}

/* D_y = a*(P ^ Pxy) ^ b*(Q ^ Qxy), D_x = D_y ^ P ^ Pxy, fused in one pass. */
static void avx512_recov_2data(int k, size_t len, int x, int y, uint8_t *const *b)
{
    const vec c1d = _mm512_set1_epi8(0x1d), m0f = _mm512_set1_epi8(0x0f);
    uint8_t ca, cb;
    gf_two_data_coefs(x, y, &ca, &cb);
    const struct mtab ta = mtab(ca), tb = mtab(cb);
    for (size_t i = 0; i < len; i += BLK) {
        vec pa[U], qa[U];
        partial(k, x, y, b, i, pa, qa, c1d);
        UNROLL
        for (int u = 0; u < U; u++) {
            vec pd = vxor(pa[u], ld(b[k] + i + 64 * u));
            vec qd = vxor(qa[u], ld(b[k + 1] + i + 64 * u));
            vec dy = vxor(mulc(pd, ta, m0f), mulc(qd, tb, m0f));
            st(b[y] + i + 64 * u, dy);
            st(b[x] + i + 64 * u, vxor(dy, pd));
        }
    }
}

/* D_x = g^-x * (Q ^ Qx), then P = XOR of the other data ^ D_x. */
static void avx512_recov_datap(int k, size_t len, int x, uint8_t *const *b)
{
    const vec c1d = _mm512_set1_epi8(0x1d), m0f = _mm512_set1_epi8(0x0f);
    const struct mtab tinv = mtab(gf_inverse[gf_pow2(x)]);
    for (size_t i = 0; i < len; i += BLK) {
        vec pa[U], qa[U];
        partial(k, x, -1, b, i, pa, qa, c1d);
        UNROLL
        for (int u = 0; u < U; u++) {
            vec dx = mulc(vxor(qa[u], ld(b[k + 1] + i + 64 * u)), tinv, m0f);
            st(b[x] + i + 64 * u, dx);
            st(b[k] + i + 64 * u, vxor(pa[u], dx));
        }
    }
}

const struct parity_impl parity_impl_avx512 = {
    .name = "avx512",
    .desc = "AVX-512BW byte shuffles and shifts",
    .valid = cpu_has_avx512bw,
    .gen_p = avx512_gen_p,
    .gen_pq = avx512_gen_pq,
    .rmw = avx512_rmw,
    .recov_2data = avx512_recov_2data,
    .recov_datap = avx512_recov_datap,
};
