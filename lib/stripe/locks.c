#include "stripe/stripe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void stripe_locks_init(struct stripe_locks *l)
{
    for (int i = 0; i < STRIPE_LOCKS; i++)
        pthread_mutex_init(&l->m[i], NULL);
    memset(l->gen, 0, sizeof l->gen);
}

void stripe_locks_destroy(struct stripe_locks *l)
{
    for (int i = 0; i < STRIPE_LOCKS; i++)
        pthread_mutex_destroy(&l->m[i]);
}

static int cmp_u16(const void *a, const void *b)
{
    return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

int stripe_lock_set(struct stripe_locks *l, const uint64_t *stripes, int n, uint16_t *held)
{
    for (int i = 0; i < n; i++)
        held[i] = (uint16_t)(stripes[i] % STRIPE_LOCKS);
    qsort(held, (size_t)n, sizeof held[0], cmp_u16);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || held[u - 1] != held[i])
            held[u++] = held[i];
    for (int i = 0; i < u; i++)
        pthread_mutex_lock(&l->m[held[i]]);
    return u;
}

void stripe_unlock_set(struct stripe_locks *l, const uint16_t *held, int nheld)
{
    for (int i = nheld - 1; i >= 0; i--)
        pthread_mutex_unlock(&l->m[held[i]]);
}

void stripe_lock_all(struct stripe_locks *l)
{
    for (int i = 0; i < STRIPE_LOCKS; i++)
        pthread_mutex_lock(&l->m[i]);
}

void stripe_unlock_all(struct stripe_locks *l)
{
    for (int i = STRIPE_LOCKS - 1; i >= 0; i--)
        pthread_mutex_unlock(&l->m[i]);
}

enum write_method write_choose(const struct write_choice_in *in, int *reads)
{
    const struct stripe_map *map = in->map;
    int all_covered = 1, parity_present = 0;
    for (int d = 0; d < in->k; d++)
        all_covered &= in->covered[d];
    if (map->p_disk >= 0 && !in->unavailable[map->p_disk])
        parity_present++;
    if (map->q_disk >= 0 && !in->unavailable[map->q_disk])
        parity_present++;
    if (all_covered) {
        *reads = 0;
        return WRITE_FULL;
    }
    if (parity_present == 0) {
        /* no parity to keep up to date: only the rows of partly written
         * blocks that the write does not cover need reading */
        *reads = 0;
        for (int d = 0; d < in->k; d++)
            *reads += in->written[d] && !in->covered[d] && !in->unavailable[map->data_disk[d]];
        return WRITE_RCW;
    }
    /* a block the stripe cache holds costs no read */
    int rmw = 0, rcw = 0;
    for (int d = 0; d < in->k; d++) {
        int m = map->data_disk[d], cost = !(in->cached && in->cached[m]);
        if (in->written[d])
            rmw = in->unavailable[m] || rmw == INT_MAX ? INT_MAX : rmw + cost;
        if (!in->covered[d])
            rcw = in->unavailable[m] || rcw == INT_MAX ? INT_MAX : rcw + cost;
    }
    int par[2] = {map->p_disk, map->q_disk};
    for (int i = 0; i < 2 && rmw != INT_MAX; i++)
        if (par[i] >= 0 && !in->unavailable[par[i]])
            rmw += !(in->cached && in->cached[par[i]]);
    if (in->rmw_level == URAID_RMW_RCW_ONLY)
        rmw = INT_MAX; /* as if the old data could not be read */
    if (rmw == INT_MAX && rcw == INT_MAX) {
        *reads = in->n;
        return WRITE_REBUILD;
    }
    if (rmw < rcw || (rmw == rcw && in->rmw_level == URAID_RMW_PREFER)) {
        *reads = rmw;
        return WRITE_RMW;
    }
    *reads = rcw;
    return WRITE_RCW;
}
