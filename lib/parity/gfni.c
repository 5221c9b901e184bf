/* The 'gfni' candidate: AVX-512 with GFNI affine multiplies and ordinary
 * stores, the fastest choice when the stripe is in cache. The kernels live in
 * gfni_kernels.h, shared with the non-temporal variant in gfni_nt.c. */
#include "gfni_kernels.h"

static void gfni_gen_p(int k, size_t len, const uint8_t *const *d, uint8_t *p)
{
    gk_gen_p(k, len, d, p, 0);
}

static void gfni_gen_pq(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q)
{
    gk_gen_pq(k, len, d, p, q, 0);
}

static void gfni_rmw(int n, const int *slots, size_t len, const uint8_t *const *old,
                     const uint8_t *const *neu, uint8_t *p, uint8_t *q)
{
    gk_rmw(n, slots, len, old, neu, p, q);
}

static void gfni_recov_2data(int k, size_t len, int x, int y, uint8_t *const *b)
{
    gk_recov_2data(k, len, x, y, b);
}

static void gfni_recov_datap(int k, size_t len, int x, uint8_t *const *b)
{
    gk_recov_datap(k, len, x, b);
}

const struct parity_impl parity_impl_gfni = {
    .name = "gfni",
    .desc = "AVX-512 + GFNI affine multiplies",
    .valid = cpu_has_gfni_avx512,
    .gen_p = gfni_gen_p,
    .gen_pq = gfni_gen_pq,
    .rmw = gfni_rmw,
    .recov_2data = gfni_recov_2data,
    .recov_datap = gfni_recov_datap,
};
