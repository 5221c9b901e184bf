/* The contract every parity implementation (one file per instruction-set
 * family) fulfils. Each exports one const struct parity_impl; parity.c lists
 * them in its registry. Kernels are pure: no I/O, no allocation, no state.
 *
 * Shared preconditions (checked by parity.c before any kernel is called):
 *   1 <= k <= URAID_PARITY_MAX_K; len > 0 and len % 512 == 0; any alignment;
 *   outputs never overlap inputs.
 */
#ifndef URAID_PARITY_IMPL_H
#define URAID_PARITY_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "uraid_parity.h"

/* Room for k data pointers plus P and Q. */
#define URAID_PARITY_MAX_K_PLUS (URAID_PARITY_MAX_K + 2)

struct parity_impl {
    const char *name;
    const char *desc;
    /* 1 if this CPU and OS can run the code (CPUID + XSAVE state). */
    int (*valid)(void);

    /* p = d[0] ^ ... ^ d[k-1]. */
    void (*gen_p)(int k, size_t len, const uint8_t *const *d, uint8_t *p);

    /* p = XOR of d[], q = sum of g^i * d[i]. p may be NULL: then only q is
     * written (used when only Q was lost). */
    void (*gen_pq)(int k, size_t len, const uint8_t *const *d, uint8_t *p, uint8_t *q);

    /* For j < n: delta_j = old[j] ^ neu[j] of data slot slots[j] (strictly
     * increasing). p ^= XOR of delta_j; if q != NULL, q ^= sum of
     * g^slots[j] * delta_j. p and q are updated in place. */
    void (*rmw)(int n, const int *slots, size_t len, const uint8_t *const *old,
                const uint8_t *const *neu, uint8_t *p, uint8_t *q);

    /* b[0..k-1] data, b[k] = P, b[k+1] = Q. Rebuild data slots x < y
     * (writes b[x] and b[y]; b[x] and b[y] are not read). */
    void (*recov_2data)(int k, size_t len, int x, int y, uint8_t *const *b);

    /* b as above. Rebuild data slot x from Q and the other data, and P
     * (writes b[x] and b[k]; neither is read). */
    void (*recov_datap)(int k, size_t len, int x, uint8_t *const *b);
};

extern const struct parity_impl parity_impl_ref;
extern const struct parity_impl parity_impl_int64;
extern const struct parity_impl parity_impl_avx2;
extern const struct parity_impl parity_impl_avx512;
extern const struct parity_impl parity_impl_gfni;
extern const struct parity_impl parity_impl_gfni_nt;
extern const struct parity_impl parity_impl_isal;

/* CPU feature checks (cpu.c): CPUID bits and the OS's XSAVE state. */
int cpu_has_avx2(void);
int cpu_has_avx512bw(void);   /* AVX-512 F + BW + VL with ZMM state enabled */
int cpu_has_gfni_avx512(void);/* the above plus GFNI */

#endif
