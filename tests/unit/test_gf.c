/* The generated GF(2^8) tables against the field's definition (0x11d), and a
 * few known answers of md's P/Q so a wrong polynomial or slot order cannot
 * hide behind an equally wrong reference. */
#include <string.h>

#include "harness.h"
#include "parity/gf.h"
#include "uraid_parity.h"

static uint8_t slow_mul(uint8_t a, uint8_t b)
{
    unsigned r = 0, x = a;
    for (; b; b >>= 1, x <<= 1) {
        if (x & 0x100)
            x ^= 0x11d;
        if (b & 1)
            r ^= x;
    }
    return (uint8_t)r;
}

/* What vgf2p8affineqb computes for one byte: bit i = parity(row (7-i) & x). */
static uint8_t affine_apply(uint64_t m, uint8_t x)
{
    uint8_t r = 0;
    for (int i = 0; i < 8; i++)
        r |= (uint8_t)(__builtin_parity((unsigned)(((m >> (8 * (7 - i))) & 0xff) & x)) << i);
    return r;
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_gf");

    harness_begin("multiplication table equals shift-and-add over 0x11d");
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++)
            CHECK(gf_mul8((uint8_t)a, (uint8_t)b) == slow_mul((uint8_t)a, (uint8_t)b), "%d*%d", a, b);
    harness_end();

    harness_begin("exp/log/inverse tables");
    uint8_t v = 1;
    for (int i = 0; i < 510; i++) {
        CHECK(gf_exp[i] == v, "exp[%d]", i);
        v = slow_mul(v, 2);
        if (i == 254)
            v = 1;
    }
    for (int a = 1; a < 256; a++) {
        CHECK(gf_exp[gf_log[a]] == a, "log[%d]", a);
        CHECK(slow_mul((uint8_t)a, gf_inverse[a]) == 1, "inverse of %d", a);
    }
    harness_end();

    harness_begin("nibble (pshufb) and affine (GFNI) tables multiply by their constant");
    for (int c = 0; c < 256; c++)
        for (int x = 0; x < 256; x++) {
            uint8_t want = slow_mul((uint8_t)c, (uint8_t)x);
            CHECK((gf_nibble_lo[c][x & 15] ^ gf_nibble_hi[c][x >> 4]) == want, "nibble c=%d x=%d", c, x);
            CHECK(affine_apply(gf_affine[c], (uint8_t)x) == want, "affine c=%d x=%d", c, x);
        }
    harness_end();

    harness_begin("known md answers: P is XOR, Q = sum 2^slot * D");
    {
        uint8_t d[3][512], p[512], q[512];
        memset(d[0], 1, 512);
        memset(d[1], 1, 512);
        memset(d[2], 1, 512);
        const void *src[3] = {d[0], d[1], d[2]};
        CHECK(uraid_gen_pq(3, 512, src, p, q) == 0);
        CHECK(p[0] == 1 && q[0] == 7, "P=%d Q=%d (want 1, 1^2^4=7)", p[0], q[0]);
        /* slot 8: 2^8 = 0x1d, the reduction by 0x11d in action */
        uint8_t z[9][512];
        const void *src9[9];
        for (int i = 0; i < 9; i++) {
            memset(z[i], i == 8 ? 1 : 0, 512);
            src9[i] = z[i];
        }
        CHECK(uraid_gen_pq(9, 512, src9, p, q) == 0);
        CHECK(q[100] == 0x1d, "Q=0x%02x want 0x1d", q[100]);
    }
    harness_end();
    return harness_finish();
}
