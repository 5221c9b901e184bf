/* A small cache of recently written stripes' blocks (16 stripes), so the
 * second piece of a stripe written shortly after the first (a stream's
 * pieces that gather.c could not meet) reads nothing: the blocks the first
 * write read or wrote are still known.
 *
 * An entry holds, for rows [row, row + nrows) of one stripe, each member's
 * block that the write knew whole (written, read for a reconstruct-write,
 * or P/Q computed) and the stripe lock's seqlock count after the write. It
 * is used only while that count is unchanged: any later writer of a stripe
 * sharing the lock (a write, a resync, a repair, a zeroing, readahead's
 * rule) bumps it, so a stale entry is never read. It also records the
 * member each block came from, so a slot whose member was swapped is not
 * served. Full-stripe writes are not stored: nothing is left to read for
 * their stripe, and copying whole stripes would cost a stream its memory
 * bandwidth.
 *
 * Called under the stripe's lock only (the cache's own mutex orders
 * different stripes' writers). URAID_STRIPE_CACHE=1 turns it on. */
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "stripe/cache.h"

#define CACHE_ENTRIES 16

struct centry {
    int used;
    uint64_t stripe;
    uint32_t gen;             /* the lock's count the blocks are valid for */
    uint32_t row, nrows;
    uint64_t lru;
    uint8_t *mem;             /* raid_disks blocks of nrows */
    const struct member *dev[URAID_MAX_MEMBERS]; /* NULL: block not known */
};

struct stripe_cache {
    pthread_mutex_t mu;
    struct layout_geom geom;  /* the geometry the entries' stripe numbers mean */
    uint64_t tick;
    size_t block_bytes;       /* chunk bytes: the largest block */
    int n;
    struct centry e[CACHE_ENTRIES];
    struct stripe_cache_stats st;
};

static struct stripe_cache *cache_create(const struct uraid_array *a)
{
    /* Off unless asked for: gathering (gather.c) already writes a stream's
     * stripes whole, and on fast members the copy of every partial stripe
     * written cost random writes 25-40% (bench array, RAID-5 ppl on tmpfs,
     * 64K and 512K x8). */
    const char *v = getenv("URAID_STRIPE_CACHE");
    if (!v || strcmp(v, "1") != 0 || a->nparity == 0 || a->geom.level < 4 || a->r10 || a->lin)
        return NULL;
    struct stripe_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->mu, NULL);
    c->geom = a->geom;
    c->block_bytes = (size_t)a->geom.chunk_sectors * SECTOR;
    c->n = a->geom.raid_disks;
    return c;
}

struct stripe_cache *stripe_cache_of(struct uraid_array *a)
{
    if (a->parent || __atomic_load_n(&a->scache_off, __ATOMIC_RELAXED))
        return NULL;
    struct stripe_cache *c = __atomic_load_n(&a->scache, __ATOMIC_ACQUIRE);
    if (!c) {
        struct stripe_cache *made = cache_create(a), *none = NULL;
        if (!made) {
            __atomic_store_n(&a->scache_off, 1, __ATOMIC_RELAXED);
            return NULL;
        }
        if (!__atomic_compare_exchange_n(&a->scache, &none, made, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            stripe_cache_destroy(made); /* another writer made it first */
        c = __atomic_load_n(&a->scache, __ATOMIC_ACQUIRE);
    }
    /* a reshape moves data without the stripes' counts: from its start on
     * (another geometry, or the same one restored later) the entries mean
     * nothing, so the cache is off until the array is opened again */
    if (a->rs || memcmp(&c->geom, &a->geom, sizeof c->geom) != 0) {
        __atomic_store_n(&a->scache_off, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    return c;
}

void stripe_cache_destroy(struct stripe_cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < CACHE_ENTRIES; i++)
        free(c->e[i].mem);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void stripe_cache_clear(struct stripe_cache *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < CACHE_ENTRIES; i++)
        c->e[i].used = 0;
    memset(&c->st, 0, sizeof c->st);
    pthread_mutex_unlock(&c->mu);
}

void stripe_cache_stats(struct stripe_cache *c, struct stripe_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    *out = c->st;
    pthread_mutex_unlock(&c->mu);
}

static struct centry *find(struct stripe_cache *c, uint64_t stripe)
{
    for (int i = 0; i < CACHE_ENTRIES; i++)
        if (c->e[i].used && c->e[i].stripe == stripe)
            return &c->e[i];
    return NULL;
}

void stripe_cache_store(struct stripe_cache *c, const struct uraid_array *a, const struct stripe_rows *r,
                        const unsigned char *known, uint32_t gen)
{
    if (!c || c->n != a->geom.raid_disks || (size_t)r->nrows * SECTOR > c->block_bytes)
        return;
    size_t len = (size_t)r->nrows * SECTOR;
    pthread_mutex_lock(&c->mu);
    struct centry *e = find(c, r->stripe);
    for (int i = 0; !e && i < CACHE_ENTRIES; i++)
        if (!c->e[i].used)
            e = &c->e[i];
    if (!e) {
        e = &c->e[0];
        for (int i = 1; i < CACHE_ENTRIES; i++)
            if (c->e[i].lru < e->lru)
                e = &c->e[i];
    }
    if (!e->mem && !(e->mem = malloc(c->block_bytes * (size_t)c->n))) {
        e->used = 0;
        pthread_mutex_unlock(&c->mu);
        return;
    }
    e->used = 1;
    e->stripe = r->stripe;
    e->gen = gen;
    e->row = r->row;
    e->nrows = r->nrows;
    e->lru = ++c->tick;
    for (int m = 0; m < c->n; m++) {
        e->dev[m] = known[m] ? a->slot[m].dev : NULL;
        if (known[m])
            memcpy(e->mem + (size_t)m * c->block_bytes, r->block[m], len);
    }
    c->st.stored++;
    pthread_mutex_unlock(&c->mu);
}

/* The entry for stripe valid now (the caller holds its lock; bumped: its
 * own first bump made the count odd, one past the entry's). */
static struct centry *valid(struct stripe_cache *c, const struct uraid_array *a, uint64_t stripe, uint32_t bumped)
{
    struct centry *e = find(c, stripe);
    if (e && e->gen != stripe_gen(&a->locks, stripe) - bumped) {
        e->used = 0;
        e = NULL;
    }
    return e;
}

void stripe_cache_known(struct stripe_cache *c, const struct uraid_array *a, const struct stripe_rows *r,
                        unsigned char *known)
{
    memset(known, 0, URAID_MAX_MEMBERS);
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    struct centry *e = valid(c, a, r->stripe, 0);
    if (e && r->row >= e->row && r->row + r->nrows <= e->row + e->nrows)
        for (int m = 0; m < c->n; m++)
            known[m] = e->dev[m] && e->dev[m] == a->slot[m].dev;
    pthread_mutex_unlock(&c->mu);
}

int stripe_cache_read(struct stripe_cache *c, const struct uraid_array *a, const struct stripe_rows *r, int m,
                      void *dst)
{
    if (!c || m < 0 || m >= c->n)
        return 0;
    int hit = 0;
    pthread_mutex_lock(&c->mu);
    struct centry *e = valid(c, a, r->stripe, 1);
    if (e && e->dev[m] && e->dev[m] == a->slot[m].dev && r->row >= e->row &&
        r->row + r->nrows <= e->row + e->nrows) {
        memcpy(dst, e->mem + (size_t)m * c->block_bytes + (size_t)(r->row - e->row) * SECTOR,
               (size_t)r->nrows * SECTOR);
        e->lru = ++c->tick;
        c->st.hits++;
        hit = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}
