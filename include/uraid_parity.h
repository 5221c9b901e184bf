/* uraid parity engine: RAID-5 P and RAID-6 P+Q, bit-compatible with Linux md.
 *
 * Math: GF(2^8) with polynomial 0x11d and generator g = {02}.
 *   P = D_0 ^ D_1 ^ ... ^ D_{k-1}
 *   Q = g^0*D_0 ^ g^1*D_1 ^ ... ^ g^{k-1}*D_{k-1}
 * where D_i is the data block in *Q slot* i (md's slot order; see the layout
 * module for how slots map to members).
 *
 * Contract shared by every call below:
 *   - k (number of data blocks) is 1..URAID_PARITY_MAX_K.
 *   - len is in bytes, a positive multiple of URAID_PARITY_LEN_ALIGN (512).
 *   - Buffers may have any alignment. 64-byte alignment is fastest; the isal
 *     candidate needs 32-byte alignment and falls back to portable code
 *     otherwise, so results never depend on alignment.
 *   - Output buffers must not overlap any input buffer unless a call says so.
 *   - Every call is thread-safe and reentrant. The first call (or
 *     uraid_parity_init) runs the timed selection once, under a lock.
 *   - Calls return 0 or a negative errno (-EINVAL for a bad argument,
 *     -ENOENT for an unknown implementation name, -ENOTSUP for one this CPU
 *     cannot run). Computations never fail once the arguments are valid.
 */
#ifndef URAID_PARITY_H
#define URAID_PARITY_H

#include <stddef.h>
#include <stdint.h>

#include "uraid.h" /* URAID_API; uraid.h includes this file too */

#ifdef __cplusplus
extern "C" {
#endif

#define URAID_PARITY_MAX_K 253
#define URAID_PARITY_LEN_ALIGN 512u

/* The operations that are timed and chosen independently. */
enum uraid_parity_op {
    URAID_OP_GEN_P = 0, /* P from k data blocks */
    URAID_OP_GEN_PQ,    /* P and Q from k data blocks */
    URAID_OP_RMW,       /* update P and Q for changed data slots */
    URAID_OP_RECOV,     /* rebuild two lost data blocks (and data + P) */
    URAID_OP_COUNT
};

URAID_API const char *uraid_parity_op_name(enum uraid_parity_op op);

/* --- Selection ----------------------------------------------------------
 * On first use every valid implementation is timed for a few milliseconds
 * per operation on a k = 8, 64 KiB shape and the fastest kept per
 * operation. The environment variable URAID_PARITY=name, or
 * uraid_parity_force(name) before first use, forces one implementation for
 * every operation. */

/* Runs the selection now (idempotent). Returns 0, or a negative errno when
 * URAID_PARITY names an unknown implementation (-ENOENT) or one that cannot
 * run on this machine (-ENOTSUP). */
URAID_API int uraid_parity_init(void);

/* Forces an implementation for all operations ("" or NULL returns to the
 * timed choice). May be called at any time; later calls use it. */
URAID_API int uraid_parity_force(const char *name);

/* Name of the implementation used for an operation (runs the selection). */
URAID_API const char *uraid_parity_chosen(enum uraid_parity_op op);

/* Throughput measured by the selection probe for the chosen implementation,
 * in MB/s of data processed (0 when forced, as nothing was timed). */
URAID_API double uraid_parity_chosen_mbps(enum uraid_parity_op op);

/* Implementation registry, for tests, benchmarks and `uraid selftest`. */
URAID_API int uraid_parity_impl_count(void);
URAID_API const char *uraid_parity_impl_name(int index);
URAID_API const char *uraid_parity_impl_desc(int index);
URAID_API int uraid_parity_impl_valid(int index); /* 1 if this CPU and OS can run it */

/* --- Operations with the chosen implementation -------------------------- */

/* p = XOR of data[0..k-1]. */
URAID_API int uraid_gen_p(int k, size_t len, const void *const *data, void *p);

/* p and q from data[0..k-1] (data[i] is Q slot i). */
URAID_API int uraid_gen_pq(int k, size_t len, const void *const *data, void *p, void *q);

/* Read-modify-write: n changed data slots, slots[] strictly increasing and
 * each < URAID_PARITY_MAX_K; old_data[j] and new_data[j] are slot slots[j]'s
 * old and new contents. p (and q unless NULL, which means RAID-5) are
 * updated in place so that they equal a regeneration from scratch with the
 * new data. old_data[j] may equal new_data[j] (no change). */
URAID_API int uraid_rmw(int n, const int *slots, size_t len, const void *const *old_data,
                        const void *const *new_data, void *p, void *q);

/* Rebuild lost blocks of a stripe in place. blocks[0..k-1] are the data
 * slots, blocks[k] is P and blocks[k+1] is Q (q == NULL means RAID-5, only
 * blocks[0..k] exist). lost[] lists nlost (1 or 2 for RAID-6, 1 for RAID-5)
 * distinct indexes into blocks[]; those buffers are overwritten with the
 * rebuilt contents, the others are read only. */
URAID_API int uraid_recover(int k, size_t len, void *const *blocks, int raid6, int nlost,
                            const int *lost);

/* Per-512-byte-sector verdict of uraid_check. */
enum uraid_check_verdict {
    URAID_CHECK_OK = 0,     /* P (and Q) agree with the data */
    URAID_CHECK_P_BAD,      /* only P disagrees */
    URAID_CHECK_Q_BAD,      /* only Q disagrees */
    URAID_CHECK_DATA_BAD,   /* exactly one data slot is wrong: see slot[] */
    URAID_CHECK_MULTI_BAD,  /* more than one block is wrong */
};

/* Recompute parity and compare. blocks[] as in uraid_recover (raid6 = 0:
 * only P is checked and any mismatch is reported as URAID_CHECK_P_BAD, since
 * RAID-5 cannot tell which block is wrong). verdict[] and bad_slot[] (may be
 * NULL) receive len/512 entries; bad_slot[s] is the wrong data slot when
 * verdict[s] is URAID_CHECK_DATA_BAD, else -1. Returns the number of
 * sectors that are not URAID_CHECK_OK, or a negative errno. Allocates a
 * scratch buffer of at most 8 KiB on the stack; never on the heap. */
URAID_API int uraid_check(int k, size_t len, const void *const *blocks, int raid6,
                          uint8_t *verdict, int16_t *bad_slot);

/* The same operations with one named implementation (tests, benchmarks). */
URAID_API int uraid_gen_p_with(int impl, int k, size_t len, const void *const *data, void *p);
URAID_API int uraid_gen_pq_with(int impl, int k, size_t len, const void *const *data, void *p,
                                void *q);
URAID_API int uraid_rmw_with(int impl, int n, const int *slots, size_t len,
                             const void *const *old_data, const void *const *new_data, void *p,
                             void *q);
URAID_API int uraid_recover_with(int impl, int k, size_t len, void *const *blocks, int raid6,
                                 int nlost, const int *lost);
URAID_API int uraid_check_with(int impl, int k, size_t len, const void *const *blocks, int raid6,
                               uint8_t *verdict, int16_t *bad_slot);

/* Compares implementation `impl` with the byte-wise reference on a fixed set
 * of shapes (k from 1 to 253, odd alignments), rmw, every single and double
 * recovery of small stripes and check. Returns the number of failed cases
 * (0 = good; `why` then says which operation and shape failed first), or a
 * negative errno (-ENOTSUP if this CPU cannot run it). Takes ~0.1-0.5 s. */
URAID_API int uraid_parity_selftest(int impl, char *why, size_t whylen);

/* GF(2^8) helpers (0x11d), exposed for tests and the layout module. */
URAID_API uint8_t uraid_gf_mul(uint8_t a, uint8_t b);
URAID_API uint8_t uraid_gf_pow2(int exponent); /* g^exponent, any exponent >= 0 */

#ifdef __cplusplus
}
#endif
#endif
