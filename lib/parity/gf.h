/* Read-only GF(2^8) tables (polynomial 0x11d, generator 2) and small helpers.
 * Pure data: no state, no I/O. */
#ifndef URAID_GF_H
#define URAID_GF_H

#include <stdint.h>

extern const uint8_t gf_exp[510];        /* gf_exp[i] = 2^i, i < 510 (doubled: no mod) */
extern const uint8_t gf_log[256];        /* gf_log[2^i] = i; gf_log[0] unused */
extern const uint8_t gf_inverse[256];        /* multiplicative inverse; gf_inverse[0] = 0 */
extern const uint8_t gf_mul_table[256][256];
extern const uint8_t gf_nibble_lo[256][16];
extern const uint8_t gf_nibble_hi[256][16];
extern const uint64_t gf_affine[256];

static inline uint8_t gf_mul8(uint8_t a, uint8_t b) { return gf_mul_table[a][b]; }

/* g^e for any e >= 0. */
static inline uint8_t gf_pow2(int e) { return gf_exp[e % 255]; }

/* Coefficients for rebuilding data slots x < y from Pd = P ^ Pxy and
 * Qd = Q ^ Qxy (md's raid6_gfexi / raid6_gfinv):
 *   D_y = a * Pd ^ b * Qd,  D_x = D_y ^ Pd. */
static inline void gf_two_data_coefs(int x, int y, uint8_t *a, uint8_t *b)
{
    *a = gf_inverse[gf_pow2(y - x) ^ 1];
    *b = gf_inverse[gf_pow2(x) ^ gf_pow2(y)];
}

/* 64-bit word multiply by 2: every byte doubled in GF(2^8). */
static inline uint64_t gf_mul2_u64(uint64_t v)
{
    uint64_t high = v & 0x8080808080808080ull;
    uint64_t reduce = (high >> 7) * 0x1d;
    return ((v << 1) & 0xfefefefefefefefeull) ^ reduce;
}

#endif
