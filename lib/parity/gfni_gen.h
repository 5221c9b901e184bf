/* gen_p / gen_pq loops for 'gfni-nt' only (included by gfni_nt.c alone):
 * one loop per data-block count k, with the k data pointers in local
 * variables, four zmm (256 bytes) per step and streaming stores.
 *
 * Why a separate shape: measured from DRAM (bench/NOTES-kernels.md, rounds 2
 * and 3) it beats the shared gk_* loops by up to ~20% at k <= 12 and ~50% at
 * k = 16 (more lines of each stream in flight per step), never losing beyond
 * noise. In cache it loses (ordinary stores 5-12%, streaming ~30% on gen_p),
 * so 'gfni' keeps gk_*.
 *
 * Only called with 64-byte aligned outputs (streaming stores need them) and
 * len % 512 == 0, so a 256-byte step divides len exactly. Inputs may have any
 * alignment (unaligned loads). The caller issues the _mm_sfence(). */
#ifndef URAID_GFNI_GEN_H
#define URAID_GFNI_GEN_H

#include "gfni_kernels.h"

#define GG_U 4                 /* zmm per step */
#define GG_STEP (64 * GG_U)
#define GG_MAX_K 16            /* largest k with a specialised loop */
#define GG_UNROLL_K _Pragma("GCC unroll 16")

/* k is a compile-time constant at every call site (gg_gen_p_k is inlined into
 * one switch case per k), so the loops over j unroll completely and s[] lives
 * in registers (or a fixed stack slot), never re-read through d[]. */
GK_INLINE void gg_gen_p_k(const int k, size_t len, const uint8_t *const *d, uint8_t *p)
{
    const uint8_t *s[GG_MAX_K];
    GG_UNROLL_K
    for (int j = 0; j < k; j++)
        s[j] = d[j];
    for (size_t i = 0; i < len; i += GG_STEP) {
        __m512i acc[GG_U];
        GK_UNROLL
        for (int u = 0; u < GG_U; u++)
            acc[u] = gk_ld(s[k - 1] + i + 64 * u);
        GG_UNROLL_K
        for (int j = k - 2; j >= 0; j--) {
            GK_UNROLL
            for (int u = 0; u < GG_U; u++)
                acc[u] = _mm512_xor_si512(acc[u], gk_ld(s[j] + i + 64 * u));
        }
        GK_UNROLL
        for (int u = 0; u < GG_U; u++)
            _mm512_stream_si512((void *)(p + i + 64 * u), acc[u]);
    }
}

/* Same Horner as gk_gen_pq_body (two slots per step: q = 4q ^ 2*D_j ^ D_j-1),
 * four zmm wide. p may be NULL (only Q wanted): the test is loop-invariant and
 * always predicted, cheaper than a second copy of every specialisation. */
GK_INLINE void gg_gen_pq_k(const int k, size_t len, const uint8_t *const *d, uint8_t *p,
                           uint8_t *q)
{
    const __m512i m2 = gk_mat(2), m4 = gk_mat(4);
    const uint8_t *s[GG_MAX_K];
    GG_UNROLL_K
    for (int j = 0; j < k; j++)
        s[j] = d[j];
    for (size_t i = 0; i < len; i += GG_STEP) {
        __m512i pa[GG_U], qa[GG_U];
        GK_UNROLL
        for (int u = 0; u < GG_U; u++)
            pa[u] = qa[u] = gk_ld(s[k - 1] + i + 64 * u);
        GG_UNROLL_K
        for (int j = k - 2; j >= 1; j -= 2) {
            GK_UNROLL
            for (int u = 0; u < GG_U; u++) {
                __m512i x = gk_ld(s[j] + i + 64 * u), y = gk_ld(s[j - 1] + i + 64 * u);
                pa[u] = gk_xor3(pa[u], x, y);
                qa[u] = gk_xor3(gk_mul(qa[u], m4), gk_mul(x, m2), y);
            }
        }
        if (k % 2 == 0) { /* one slot left over: D_0 */
            GK_UNROLL
            for (int u = 0; u < GG_U; u++) {
                __m512i x = gk_ld(s[0] + i + 64 * u);
                pa[u] = _mm512_xor_si512(pa[u], x);
                qa[u] = _mm512_xor_si512(gk_mul(qa[u], m2), x);
            }
        }
        if (p) {
            GK_UNROLL
            for (int u = 0; u < GG_U; u++)
                _mm512_stream_si512((void *)(p + i + 64 * u), pa[u]);
        }
        GK_UNROLL
        for (int u = 0; u < GG_U; u++)
            _mm512_stream_si512((void *)(q + i + 64 * u), qa[u]);
    }
}

/* Bit k set: k uses the specialised loop; the others return 0 and the caller
 * runs the generic gk_* loop. The sets are the k where the shape measured
 * faster from DRAM (bench/NOTES-kernels.md, round 3); -D overrides them for
 * measurement only. */
#ifndef GG_P_MASK
#define GG_P_MASK 0x1fffcu  /* k = 2..16 */
#endif
#ifndef GG_PQ_MASK
#define GG_PQ_MASK 0x1fffcu
#endif

/* Specialisations compiled out of the masks cost nothing (the case folds to
 * return 0), so every k up to GG_MAX_K has a case. */
#define GG_CASES(X) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16)

static inline int gg_gen_p(int k, size_t len, const uint8_t *const *d, uint8_t *p)
{
    switch (k) {
#define GG_CASE_P(K)                      \
    case K:                               \
        if (!((GG_P_MASK >> K) & 1))      \
            return 0;                     \
        gg_gen_p_k(K, len, d, p);         \
        return 1;
        GG_CASES(GG_CASE_P)
#undef GG_CASE_P
    default:
        return 0;
    }
}

static inline int gg_gen_pq(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q)
{
    switch (k) {
#define GG_CASE_PQ(K)                     \
    case K:                               \
        if (!((GG_PQ_MASK >> K) & 1))     \
            return 0;                     \
        gg_gen_pq_k(K, len, d, p, q);     \
        return 1;
        GG_CASES(GG_CASE_PQ)
#undef GG_CASE_PQ
    default:
        return 0;
    }
}

#endif
