/* The 'isal' candidate: Intel ISA-L's routines wrapped in our contract, so the
 * timed choice and the benchmark compare against ISA-L in the same run.
 * Built only when libisal-dev is present (HAVE_ISAL).
 *
 * ISA-L's xor_gen/pq_gen need 32-byte-aligned pointers and at least two data
 * blocks; other shapes go to the portable code, so results never depend on
 * alignment. Its ec_encode_data takes any alignment and provides RMW deltas
 * and recovery with md's P and Q coefficients (rows 1,1,... and g^i). */
#ifdef HAVE_ISAL
#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>
#include <stdint.h>
#include <string.h>

#include "gf.h"
#include "impl.h"

static int aligned32(int n, const uint8_t *const *v)
{
    for (int i = 0; i < n; i++)
        if ((uintptr_t)v[i] & 31)
            return 0;
    return 1;
}

static void isal_gen_p(int k, size_t len, const uint8_t *const *d, uint8_t *p)
{
    void *v[URAID_PARITY_MAX_K_PLUS];
    if (k < 2 || ((uintptr_t)p & 31) || !aligned32(k, d)) {
        parity_impl_int64.gen_p(k, len, d, p);
        return;
    }
    memcpy(v, d, sizeof(void *) * k);
    v[k] = p;
    xor_gen(k + 1, (int)len, v);
}

static void isal_gen_pq(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q)
{
    void *v[URAID_PARITY_MAX_K_PLUS];
    if (k < 2 || !p || ((uintptr_t)p & 31) || ((uintptr_t)q & 31) || !aligned32(k, d)) {
        parity_impl_int64.gen_pq(k, len, d, p, q);
        return;
    }
    memcpy(v, d, sizeof(void *) * k);
    v[k] = p;
    v[k + 1] = q;
    pq_gen(k + 2, (int)len, v);
}

/* out[r] = sum over sources of coef[r * nsrc + s] * src[s], two rows. */
static void encode2(int nsrc, size_t len, unsigned char *coef, uint8_t **src, uint8_t **out)
{
    unsigned char tables[32 * 2 * URAID_PARITY_MAX_K_PLUS];
    ec_init_tables(nsrc, 2, coef, tables);
    ec_encode_data((int)len, nsrc, 2, tables, src, out);
}

static void isal_rmw(int n, const int *slots, size_t len, const uint8_t *const *old,
                     const uint8_t *const *neu, uint8_t *p, uint8_t *q)
{
    unsigned char tables[32 * 2];
    uint8_t *coding[2] = {p, q};
    int rows = q ? 2 : 1;
    for (int j = 0; j < n; j++) {
        unsigned char coef[2] = {1, gf_pow2(slots[j])};
        ec_init_tables(1, rows, coef, tables);
        /* ec_encode_data_update adds one source's contribution: remove the
         * old data, add the new */
        ec_encode_data_update((int)len, 1, rows, 0, tables, (unsigned char *)old[j], coding);
        ec_encode_data_update((int)len, 1, rows, 0, tables, (unsigned char *)neu[j], coding);
    }
}

static void isal_recov_2data(int k, size_t len, int x, int y, uint8_t *const *b)
{
    uint8_t a, c;
    gf_two_data_coefs(x, y, &a, &c);
    unsigned char coef[2 * URAID_PARITY_MAX_K_PLUS];
    uint8_t *src[URAID_PARITY_MAX_K_PLUS];
    int nsrc = k; /* k - 2 surviving data blocks, P and Q */
    int s = 0;
    /* D_y = a*P ^ c*Q ^ sum (a ^ c*g^i) D_i ; D_x = D_y ^ P ^ sum D_i */
    for (int i = 0; i < k; i++) {
        if (i == x || i == y)
            continue;
        uint8_t cy = a ^ gf_mul8(c, gf_pow2(i));
        coef[s] = cy;
        coef[nsrc + s] = cy ^ 1;
        src[s++] = b[i];
    }
    coef[s] = a;
    coef[nsrc + s] = a ^ 1;
    src[s++] = b[k];
    coef[s] = c;
    coef[nsrc + s] = c;
    src[s++] = b[k + 1];
    uint8_t *out[2] = {b[y], b[x]};
    encode2(nsrc, len, coef, src, out);
}

static void isal_recov_datap(int k, size_t len, int x, uint8_t *const *b)
{
    uint8_t inv = gf_inverse[gf_pow2(x)];
    unsigned char coef[2 * URAID_PARITY_MAX_K_PLUS];
    uint8_t *src[URAID_PARITY_MAX_K_PLUS];
    int nsrc = k; /* k - 1 surviving data blocks and Q */
    int s = 0;
    /* D_x = inv*Q ^ sum inv*g^i D_i ; P = D_x ^ sum D_i */
    for (int i = 0; i < k; i++) {
        if (i == x)
            continue;
        uint8_t cx = gf_mul8(inv, gf_pow2(i));
        coef[s] = cx;
        coef[nsrc + s] = cx ^ 1;
        src[s++] = b[i];
    }
    coef[s] = inv;
    coef[nsrc + s] = inv;
    src[s++] = b[k + 1];
    uint8_t *out[2] = {b[x], b[k]};
    encode2(nsrc, len, coef, src, out);
}

static int always(void) { return 1; }

const struct parity_impl parity_impl_isal = {
    .name = "isal",
    .desc = "Intel ISA-L 2.30 (xor_gen, pq_gen, ec_encode_data)",
    .valid = always,
    .gen_p = isal_gen_p,
    .gen_pq = isal_gen_pq,
    .rmw = isal_rmw,
    .recov_2data = isal_recov_2data,
    .recov_datap = isal_recov_datap,
};
#endif
