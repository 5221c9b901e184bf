/* The 'gfni-nt' candidate: the GFNI kernels with non-temporal stores for the
 * gen_p/gen_pq outputs. When the data streams from DRAM, the parity written
 * is not read again soon; streaming stores skip the read-for-ownership of
 * each destination line and leave the cache to the data. When the stripe is
 * in cache they lose (the output must go all the way to memory), so the timed
 * choice keeps 'gfni' there. rmw and recovery read or are followed by reads of
 * what they write, so they use ordinary stores, like 'gfni'. */
#include "gfni_gen.h"

/* The k-specialised 4-zmm loops (gfni_gen.h) when the outputs are 64-byte
 * aligned and k has one; otherwise the shared loop, which itself falls back
 * to ordinary stores for misaligned outputs. */
static void gfni_nt_gen_p(int k, size_t len, const uint8_t *const *d, uint8_t *p)
{
    if (gk_nt_ok(p, p) && gg_gen_p(k, len, d, p)) {
        _mm_sfence(); /* streaming stores are weakly ordered: publish them */
        return;
    }
    gk_gen_p(k, len, d, p, 1);
}

static void gfni_nt_gen_pq(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q)
{
    if (gk_nt_ok(p ? p : q, q) && gg_gen_pq(k, len, d, p, q)) {
        _mm_sfence();
        return;
    }
    gk_gen_pq(k, len, d, p, q, 1);
}

static void gfni_nt_rmw(int n, const int *slots, size_t len, const uint8_t *const *old,
                        const uint8_t *const *neu, uint8_t *p, uint8_t *q)
{
    gk_rmw(n, slots, len, old, neu, p, q);
}

static void gfni_nt_recov_2data(int k, size_t len, int x, int y, uint8_t *const *b)
{
    gk_recov_2data(k, len, x, y, b);
}

static void gfni_nt_recov_datap(int k, size_t len, int x, uint8_t *const *b)
{
    gk_recov_datap(k, len, x, b);
}

const struct parity_impl parity_impl_gfni_nt = {
    .name = "gfni-nt",
    .desc = "AVX-512 + GFNI, non-temporal parity stores (for data from DRAM)",
    .valid = cpu_has_gfni_avx512,
    .gen_p = gfni_nt_gen_p,
    .gen_pq = gfni_nt_gen_pq,
    .rmw = gfni_nt_rmw,
    .recov_2data = gfni_nt_recov_2data,
    .recov_datap = gfni_nt_recov_datap,
};
