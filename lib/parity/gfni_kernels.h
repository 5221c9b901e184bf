/* AVX-512 + GFNI parity kernels shared by gfni.c (ordinary stores) and
 * gfni_nt.c (non-temporal stores for gen_p/gen_pq outputs). Private to those
 * two files, which are compiled with the same -mavx512* -mgfni flags.
 *
 * Every multiplication by a constant c is one vgf2p8affineqb with the 8x8 bit
 * matrix gf_affine[c]: multiplication by a constant is linear over GF(2), so
 * this works for md's polynomial 0x11d, unlike vgf2p8mulb (fixed to 0x11b).
 *
 * Blocks of a few zmm are processed with the loop over data blocks innermost:
 * accumulators stay in registers, each input byte is read once and each
 * output byte written once. len % 512 == 0, so blocks divide len exactly.
 * Loads are unaligned (no penalty when the data is aligned).
 *
 * Block sizes per operation were measured (bench/NOTES-kernels.md): on the
 * Zen 5 development machine wider blocks win for some buffer placements and
 * lose up to 35% for others (depending on buffer addresses modulo 4 KiB);
 * the choices below were the fastest over several placements. */
#ifndef URAID_GFNI_KERNELS_H
#define URAID_GFNI_KERNELS_H

#include <immintrin.h>
#include <stdint.h>

#include "gf.h"
#include "impl.h"

#define GK_UP 2   /* zmm per block: gen_p */
#define GK_UPQ 1  /* gen_pq */
#define GK_U 4    /* rmw and recovery */
#define GK_BLK (64 * GK_U)
#define GK_INLINE static inline __attribute__((always_inline))
#define GK_UNROLL _Pragma("GCC unroll 8")

GK_INLINE __m512i gk_ld(const uint8_t *p) { return _mm512_loadu_si512((const void *)p); }

/* nt is a compile-time constant at every call site (the bodies below are
 * always inlined), so the branch disappears. */
GK_INLINE void gk_st(uint8_t *p, __m512i v, int nt)
{
    if (nt)
        _mm512_stream_si512((void *)p, v);
    else
        _mm512_storeu_si512((void *)p, v);
}

GK_INLINE __m512i gk_mul(__m512i x, __m512i m) { return _mm512_gf2p8affine_epi64_epi8(x, m, 0); }
GK_INLINE __m512i gk_mat(uint8_t c) { return _mm512_set1_epi64((long long)gf_affine[c]); }
GK_INLINE __m512i gk_xor3(__m512i a, __m512i b, __m512i c)
{
    return _mm512_ternarylogic_epi64(a, b, c, 0x96);
}

/* Streaming stores need 64-byte aligned destinations; misaligned ones take
 * the ordinary-store path (same results, cache-polluting). */
static inline int gk_nt_ok(const uint8_t *p, const uint8_t *q)
{
    return !((uintptr_t)p & 63) && !((uintptr_t)q & 63);
}

/* ---- gen_p ---------------------------------------------------------------- */

/* One input per step with a plain XOR and two zmm per data block: measured
 * faster and less placement-dependent than vpternlogq over pairs of inputs,
 * which touches two streams per step (bench/NOTES-kernels.md). The loop is
 * load-bound, so the XOR count does not matter. */
GK_INLINE void gk_gen_p_body(int k, size_t len, const uint8_t *const *d, uint8_t *p, int nt)
{
    for (size_t i = 0; i < len; i += 64 * GK_UP) {
        __m512i acc[GK_UP];
        GK_UNROLL
        for (int u = 0; u < GK_UP; u++)
            acc[u] = gk_ld(d[k - 1] + i + 64 * u);
        for (int j = k - 2; j >= 0; j--) {
            const uint8_t *s = d[j] + i;
            GK_UNROLL
            for (int u = 0; u < GK_UP; u++)
                acc[u] = _mm512_xor_si512(acc[u], gk_ld(s + 64 * u));
        }
        GK_UNROLL
        for (int u = 0; u < GK_UP; u++)
            gk_st(p + i + 64 * u, acc[u], nt);
    }
}

/* ---- gen_pq --------------------------------------------------------------- */

/* Horner from the top slot, two slots per step:
 *   q = 4*q ^ 2*D_j ^ D_{j-1}, p ^= D_j ^ D_{j-1}
 * two affines and two ternary XORs per pair instead of two affines and four
 * XORs, and the two affines are independent (shorter dependency chain). */
GK_INLINE void gk_gen_pq_body(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q,
                              int nt)
{
    const __m512i m2 = gk_mat(2), m4 = gk_mat(4);
    for (size_t i = 0; i < len; i += (64 * GK_UPQ)) {
        __m512i pa[GK_UPQ], qa[GK_UPQ];
        int j = k - 1;
        GK_UNROLL
        for (int u = 0; u < GK_UPQ; u++)
            pa[u] = qa[u] = gk_ld(d[j] + i + 64 * u);
        for (j = k - 2; j >= 1; j -= 2) {
            const uint8_t *a = d[j] + i, *b = d[j - 1] + i;
            GK_UNROLL
            for (int u = 0; u < GK_UPQ; u++) {
                __m512i x = gk_ld(a + 64 * u), y = gk_ld(b + 64 * u);
                pa[u] = gk_xor3(pa[u], x, y);
                qa[u] = gk_xor3(gk_mul(qa[u], m4), gk_mul(x, m2), y);
            }
        }
        if (j == 0) {
            GK_UNROLL
            for (int u = 0; u < GK_UPQ; u++) {
                __m512i x = gk_ld(d[0] + i + 64 * u);
                pa[u] = _mm512_xor_si512(pa[u], x);
                qa[u] = _mm512_xor_si512(gk_mul(qa[u], m2), x);
            }
        }
        if (p) {
            GK_UNROLL
            for (int u = 0; u < GK_UPQ; u++)
                gk_st(p + i + 64 * u, pa[u], nt);
        }
        GK_UNROLL
        for (int u = 0; u < GK_UPQ; u++)
            gk_st(q + i + 64 * u, qa[u], nt);
    }
}

static inline void gk_gen_p(int k, size_t len, const uint8_t *const *d, uint8_t *p, int nt)
{
    if (nt && gk_nt_ok(p, p)) {
        gk_gen_p_body(k, len, d, p, 1);
        _mm_sfence(); /* streaming stores are weakly ordered: publish them */
    } else {
        gk_gen_p_body(k, len, d, p, 0);
    }
}

static inline void gk_gen_pq(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q,
                             int nt)
{
    if (nt && gk_nt_ok(p ? p : q, q)) {
        gk_gen_pq_body(k, len, d, p, q, 1);
        _mm_sfence();
    } else {
        gk_gen_pq_body(k, len, d, p, q, 0);
    }
}

/* ---- rmw ------------------------------------------------------------------ */

/* One pass per block: delta_j = old_j ^ new_j folded into P directly and into
 * a Q accumulator by Horner over the changed slots, highest first; the gap to
 * the next lower changed slot is one affine with g^gap, and the final
 * g^slots[0] one more. P and Q are each read and written once. */
static inline void gk_rmw(int n, const int *slots, size_t len, const uint8_t *const *old,
                          const uint8_t *const *neu, uint8_t *p, uint8_t *q)
{
    uint64_t gap[URAID_PARITY_MAX_K];
    for (int j = 0; j + 1 < n; j++)
        gap[j] = gf_affine[gf_pow2(slots[j + 1] - slots[j])];
    const __m512i mlow = gk_mat(gf_pow2(slots[0]));

    for (size_t i = 0; i < len; i += GK_BLK) {
        __m512i pa[GK_U], qa[GK_U];
        int j = n - 1;
        GK_UNROLL
        for (int u = 0; u < GK_U; u++)
            pa[u] = qa[u] = _mm512_xor_si512(gk_ld(old[j] + i + 64 * u), gk_ld(neu[j] + i + 64 * u));
        for (j = n - 2; j >= 0; j--) {
            const uint8_t *o = old[j] + i, *w = neu[j] + i;
            const __m512i m = _mm512_set1_epi64((long long)gap[j]);
            GK_UNROLL
            for (int u = 0; u < GK_U; u++) {
                __m512i x = gk_ld(o + 64 * u), y = gk_ld(w + 64 * u);
                pa[u] = gk_xor3(pa[u], x, y);
                if (q)
                    qa[u] = gk_xor3(gk_mul(qa[u], m), x, y);
            }
        }
        GK_UNROLL
        for (int u = 0; u < GK_U; u++)
            _mm512_storeu_si512((void *)(p + i + 64 * u),
                                _mm512_xor_si512(gk_ld(p + i + 64 * u), pa[u]));
        if (q) {
            GK_UNROLL
            for (int u = 0; u < GK_U; u++)
                _mm512_storeu_si512((void *)(q + i + 64 * u),
                                    _mm512_xor_si512(gk_ld(q + i + 64 * u), gk_mul(qa[u], mlow)));
        }
    }
}

/* ---- recovery ------------------------------------------------------------- */

/* The surviving data slots of a stripe as a list, lowest first, with the
 * affine matrix for g^(gap to the next listed slot): Horner over the list
 * gives sum g^(s - s_0) D_s, so lost slots cost nothing in the inner loop. */
struct gk_survivors {
    int m;
    int low; /* s_0, or 0 when m == 0 */
    const uint8_t *ptr[URAID_PARITY_MAX_K];
    uint64_t gap[URAID_PARITY_MAX_K];
};

static inline void gk_survivors_init(struct gk_survivors *sv, int k, int x, int y,
                                     uint8_t *const *b)
{
    int prev = -1;
    sv->m = 0;
    sv->low = 0;
    for (int j = 0; j < k; j++) {
        if (j == x || j == y)
            continue;
        if (sv->m)
            sv->gap[sv->m - 1] = gf_affine[gf_pow2(j - prev)];
        else
            sv->low = j;
        sv->ptr[sv->m++] = b[j];
        prev = j;
    }
}

/* pa = XOR of survivors, qa = Horner sum relative to s_0 (both zero if none). */
GK_INLINE void gk_partial(const struct gk_survivors *sv, size_t i, __m512i *pa, __m512i *qa)
{
    int j = sv->m - 1;
    if (j < 0) {
        GK_UNROLL
        for (int u = 0; u < GK_U; u++)
            pa[u] = qa[u] = _mm512_setzero_si512();
        return;
    }
    GK_UNROLL
    for (int u = 0; u < GK_U; u++)
        pa[u] = qa[u] = gk_ld(sv->ptr[j] + i + 64 * u);
    for (j--; j >= 0; j--) {
        const uint8_t *s = sv->ptr[j] + i;
        const __m512i m = _mm512_set1_epi64((long long)sv->gap[j]);
        GK_UNROLL
        for (int u = 0; u < GK_U; u++) {
            __m512i x = gk_ld(s + 64 * u);
            pa[u] = _mm512_xor_si512(pa[u], x);
            qa[u] = _mm512_xor_si512(gk_mul(qa[u], m), x);
        }
    }
}

/* D_y = a*Pd ^ b*Qd with Qd = Q ^ g^s0 * acc, so D_y = a*Pd ^ b*Q ^ (b*g^s0)*acc:
 * three affines per byte after the partial sums, no second pass. */
static inline void gk_recov_2data(int k, size_t len, int x, int y, uint8_t *const *b)
{
    struct gk_survivors sv;
    uint8_t ca, cb;
    gk_survivors_init(&sv, k, x, y, b);
    gf_two_data_coefs(x, y, &ca, &cb);
    const __m512i ma = gk_mat(ca), mb = gk_mat(cb), mc = gk_mat(gf_mul8(cb, gf_pow2(sv.low)));
    const uint8_t *pp = b[k], *qq = b[k + 1];
    uint8_t *dx = b[x], *dy = b[y];

    for (size_t i = 0; i < len; i += GK_BLK) {
        __m512i pa[GK_U], qa[GK_U];
        gk_partial(&sv, i, pa, qa);
        GK_UNROLL
        for (int u = 0; u < GK_U; u++) {
            __m512i pd = _mm512_xor_si512(pa[u], gk_ld(pp + i + 64 * u));
            __m512i vy = gk_xor3(gk_mul(pd, ma), gk_mul(gk_ld(qq + i + 64 * u), mb), gk_mul(qa[u], mc));
            _mm512_storeu_si512((void *)(dy + i + 64 * u), vy);
            _mm512_storeu_si512((void *)(dx + i + 64 * u), _mm512_xor_si512(vy, pd));
        }
    }
}

/* D_x = g^-x * (Q ^ g^s0 * acc); P = XOR of survivors ^ D_x. */
static inline void gk_recov_datap(int k, size_t len, int x, uint8_t *const *b)
{
    struct gk_survivors sv;
    gk_survivors_init(&sv, k, x, -1, b);
    uint8_t inv = gf_inverse[gf_pow2(x)];
    const __m512i mq = gk_mat(inv), mc = gk_mat(gf_mul8(inv, gf_pow2(sv.low)));
    const uint8_t *qq = b[k + 1];
    uint8_t *dx = b[x], *pp = b[k];

    for (size_t i = 0; i < len; i += GK_BLK) {
        __m512i pa[GK_U], qa[GK_U];
        gk_partial(&sv, i, pa, qa);
        GK_UNROLL
        for (int u = 0; u < GK_U; u++) {
            __m512i v = _mm512_xor_si512(gk_mul(gk_ld(qq + i + 64 * u), mq), gk_mul(qa[u], mc));
            _mm512_storeu_si512((void *)(dx + i + 64 * u), v);
            _mm512_storeu_si512((void *)(pp + i + 64 * u), _mm512_xor_si512(pa[u], v));
        }
    }
}

#endif
