/* Partial P and partial Q (ppl_int.h): the RAID-6 PPL's arithmetic. Q's
 * member logs sum g^i * D_i over the blocks a write leaves alone, which
 * is Q ^ the same sum over the blocks it modifies: the parity engine's
 * read-modify-write with the modified blocks as the "old" data and zeros
 * as the "new" (docs/FORMAT.md 5b). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta/superblock.h"
#include "stripe/ppl_int.h"
#include "uraid_parity.h"

/* The "new" data of the RMW: zeros, as long as the largest area */
#define ZERO_BYTES ((size_t)MD_PPL_SECTORS * 512)
static const uint8_t zeros[ZERO_BYTES] __attribute__((aligned(64)));

int ppl_partial_pq(const uint8_t *P, const uint8_t *Q, int n, const int *slots, const uint8_t *const *blk,
                   size_t len, uint8_t *pp, uint8_t *pq)
{
    if (len > ZERO_BYTES || n < 0 || n > PPL_MAX_SLOTS)
        return -EINVAL;
    if (pp && (pq || n == 0))
        memcpy(pp, P, len);
    if (pq)
        memcpy(pq, Q, len);
    if (n == 0 || (!pp && !pq))
        return 0;
    if (!pq) {
        const void *src[PPL_MAX_SLOTS + 1];
        src[0] = P;
        for (int j = 0; j < n; j++)
            src[j + 1] = blk[j];
        return uraid_gen_p(n + 1, len, src, pp);
    }
    /* the engine wants its slots strictly increasing */
    int s[PPL_MAX_SLOTS];
    const void *old[PPL_MAX_SLOTS], *neu[PPL_MAX_SLOTS];
    for (int j = 0; j < n; j++) {
        int i = j;
        while (i > 0 && s[i - 1] > slots[j]) {
            s[i] = s[i - 1];
            old[i] = old[i - 1];
            i--;
        }
        s[i] = slots[j];
        old[i] = blk[j];
        neu[j] = zeros;
    }
    for (int j = 1; j < n; j++)
        if (s[j] == s[j - 1])
            return -EINVAL;
    uint8_t *scratch = pp ? NULL : malloc(len);
    if (!pp && !scratch)
        return -ENOMEM;
    int rc = uraid_rmw(n, s, len, old, neu, pp ? pp : scratch, pq);
    free(scratch);
    return rc;
}
