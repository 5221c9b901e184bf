/* Power-cut simulation: see powercut.h for what it promises.
 *
 * Locks, outermost first: the registry lock (the list of domains and their
 * reference counts), a domain's lock (its member list, the cut and the cut's
 * statistics), a member's lock (its list of remembered writes). A write holds
 * its member's lock from the check for a cut through the inner write to the
 * record, so the cut, which takes every member's lock in turn after raising
 * the flag, sees each write either wholly recorded or not begun; and the
 * bytes a record keeps as "replaced" are exactly those the inner member held
 * before it. Reads take no lock: the inner member orders them against writes
 * as it always does. */
#include "member/powercut.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define SECTOR 512u
#define NAME_MAX_LEN 64

struct pc_write {
    uint64_t off;
    size_t len;
    uint64_t seq;        /* the member's write number, for the decision */
    uint8_t *old;        /* the bytes it replaced; NULL when they could not be read: kept */
    uint8_t *data;       /* what it wrote; NULL for a zeroed range */
    int durable;         /* a FUA write that completed: it survives any cut */
    struct pc_write *next;
};

struct pc_member {
    struct member *inner;
    struct powercut_domain *d;
    unsigned ix;                       /* join order in the domain */
    pthread_mutex_t lock;
    struct pc_write *head, *tail;      /* since the last flush, oldest first; under lock */
    uint64_t nrec;                     /* records in the list (FUA writes too); under lock */
    uint64_t npending, pending_bytes;  /* of them, those a cut may lose; under lock */
    uint64_t seq;                      /* writes so far; under lock */
    struct pc_member *dnext;           /* the domain's list, under the domain's lock */
};

struct powercut_domain {
    char name[NAME_MAX_LEN];
    uint64_t seed;
    unsigned keep_pct, tear_pct;
    pthread_mutex_t lock;
    struct pc_member *members;         /* under lock */
    unsigned next_ix;                  /* under lock */
    atomic_int cut;
    atomic_uint_fast64_t counted, target; /* arming: writes since powercut_arm, and the one that cuts */
    atomic_uint_fast64_t writes, zeroes, flushes, fua_writes;
    struct powercut_stats at_cut;      /* cut_* fields, under lock */
    void (*on_cut)(void *ctx);         /* under lock */
    void *on_cut_ctx;
    /* set while no member I/O is in flight (powercut_on_write) */
    int (*on_write)(void *ctx, unsigned member_ix, uint64_t off, size_t len, int fua);
    void *on_write_ctx;
    int refs, registered;              /* under registry_lock */
    struct powercut_domain *next;      /* the registry */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct powercut_domain *registry;

static const struct member_ops powercut_ops;

/* ---- the decision -------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

enum fate { KEEP, DROP, TEAR };

static uint64_t write_hash(uint64_t seed, unsigned member_ix, uint64_t seq)
{
    return mix64(mix64(seed ^ mix64((uint64_t)member_ix + 1)) ^ seq);
}

static enum fate fate_of(uint64_t h, unsigned keep_pct, unsigned tear_pct)
{
    unsigned u = (unsigned)(h % 100);
    return u < keep_pct ? KEEP : u < keep_pct + tear_pct ? TEAR : DROP;
}

static int torn_sector_survives(uint64_t h, uint32_t sector)
{
    return (int)(mix64(h + sector + 1) >> 63);
}

int powercut_sector_survives(uint64_t seed, unsigned member_ix, uint64_t seq, uint32_t sector, unsigned keep_pct,
                             unsigned tear_pct)
{
    uint64_t h = write_hash(seed, member_ix, seq);
    enum fate f = fate_of(h, keep_pct, tear_pct);
    return f == KEEP || (f == TEAR && torn_sector_survives(h, sector));
}

/* ---- the domain registry ------------------------------------------------------------- */

static struct powercut_domain *find_locked(const char *name)
{
    for (struct powercut_domain *d = registry; d; d = d->next)
        if (d->registered && !strcmp(d->name, name))
            return d;
    return NULL;
}

int powercut_domain_get(const char *name, uint64_t seed, unsigned keep_pct, unsigned tear_pct,
                        struct powercut_domain **out)
{
    if (!name || !*name || strlen(name) >= NAME_MAX_LEN || keep_pct + tear_pct > 100 || !out)
        return -EINVAL;
    pthread_mutex_lock(&registry_lock);
    struct powercut_domain *d = find_locked(name);
    int made = !d;
    if (!d && (d = calloc(1, sizeof *d)) != NULL) {
        snprintf(d->name, sizeof d->name, "%s", name);
        d->seed = seed;
        d->keep_pct = keep_pct;
        d->tear_pct = tear_pct;
        pthread_mutex_init(&d->lock, NULL);
        d->refs = 1; /* the registry's */
        d->registered = 1;
        d->next = registry;
        registry = d;
    }
    pthread_mutex_unlock(&registry_lock);
    *out = d;
    return d ? made : -ENOMEM;
}

struct powercut_domain *powercut_domain_find(const char *name)
{
    pthread_mutex_lock(&registry_lock);
    struct powercut_domain *d = name ? find_locked(name) : NULL;
    pthread_mutex_unlock(&registry_lock);
    return d;
}

/* Drops one reference; under registry_lock. */
static void put_locked(struct powercut_domain *d)
{
    if (--d->refs > 0)
        return;
    for (struct powercut_domain **p = &registry; *p; p = &(*p)->next)
        if (*p == d) {
            *p = d->next;
            break;
        }
    pthread_mutex_destroy(&d->lock);
    free(d);
}

void powercut_domain_forget(const char *name)
{
    pthread_mutex_lock(&registry_lock);
    struct powercut_domain *d = name ? find_locked(name) : NULL;
    if (d) {
        d->registered = 0; /* a new domain of that name may be made now */
        put_locked(d);
    }
    pthread_mutex_unlock(&registry_lock);
}

/* ---- the cut ------------------------------------------------------------------------- */

static void free_writes(struct pc_member *pm)
{
    for (struct pc_write *w = pm->head, *n; w; w = n) {
        n = w->next;
        free(w->old);
        free(w->data);
        free(w);
    }
    pm->head = pm->tail = NULL;
    pm->nrec = pm->npending = pm->pending_bytes = 0;
}

/* Writes bytes [from, to) of w (its data, or zeros). */
static int put_part(struct pc_member *pm, const struct pc_write *w, size_t from, size_t to)
{
    if (w->data)
        return member_write(pm->inner, w->data + from, to - from, w->off + from);
    return member_zero(pm->inner, to - from, w->off + from);
}

/* Replays the sectors of w that survive; counts them in st. */
static int replay(struct pc_member *pm, const struct pc_write *w, struct powercut_stats *st)
{
    const struct powercut_domain *d = pm->d;
    uint64_t h = write_hash(d->seed, pm->ix, w->seq);
    if (w->durable) {
        st->cut_durable++;
        return put_part(pm, w, 0, w->len);
    }
    enum fate f = w->old ? fate_of(h, d->keep_pct, d->tear_pct) : KEEP;
    if (uraid_log_enabled(URAID_LOG_DEBUG))
        uraid_log(URAID_LOG_DEBUG, "power cut in domain %s: member %u write %llu (%zu bytes at byte %llu) %s", d->name,
                  pm->ix, (unsigned long long)w->seq, w->len, (unsigned long long)w->off,
                  f == DROP ? "dropped" : f == KEEP ? "kept" : "torn");
    if (f == DROP) {
        st->cut_dropped++;
        return 0;
    }
    if (f == KEEP) {
        st->cut_kept++;
        return put_part(pm, w, 0, w->len);
    }
    st->cut_torn++;
    int rc = 0;
    size_t nsec = (w->len + SECTOR - 1) / SECTOR, run = 0;
    for (size_t s = 0; s <= nsec && !rc; s++) {
        int keep = s < nsec && torn_sector_survives(h, (uint32_t)s);
        if (keep)
            st->torn_sectors_kept++;
        else if (s < nsec)
            st->torn_sectors_lost++;
        if (keep)
            continue;
        if (s > run) /* sectors [run, s) survive */
            rc = put_part(pm, w, run * SECTOR, s * SECTOR < w->len ? s * SECTOR : w->len);
        run = s + 1;
    }
    return rc;
}

/* Leaves pm's medium as the cut finds it: rolled back to the last flush
 * (newest write first, each putting back what it replaced), then the
 * surviving sectors replayed oldest first. Under pm->lock. */
static void apply_cut(struct pc_member *pm, struct powercut_stats *st)
{
    size_t n = (size_t)pm->nrec, i = 0;
    struct pc_write **order = n ? calloc(n, sizeof *order) : NULL;
    if (n && !order) {
        st->cut_errors++; /* cannot roll back: everything stays as written */
        free_writes(pm);
        return;
    }
    for (struct pc_write *w = pm->head; w && i < n; w = w->next)
        order[i++] = w;
    for (i = n; i-- > 0;)
        if (order[i]->old && member_write(pm->inner, order[i]->old, order[i]->len, order[i]->off))
            st->cut_errors++;
    for (i = 0; i < n; i++)
        if (replay(pm, order[i], st))
            st->cut_errors++;
    if (n && member_flush(pm->inner))
        st->cut_errors++;
    free(order);
    free_writes(pm);
}

int powercut_cut(struct powercut_domain *d)
{
    pthread_mutex_lock(&d->lock);
    if (atomic_load(&d->cut)) {
        pthread_mutex_unlock(&d->lock);
        return -EALREADY;
    }
    atomic_store(&d->cut, 1);
    if (d->on_cut)
        d->on_cut(d->on_cut_ctx);
    struct powercut_stats *st = &d->at_cut;
    for (struct pc_member *pm = d->members; pm; pm = pm->dnext) {
        pthread_mutex_lock(&pm->lock);
        apply_cut(pm, st);
        pthread_mutex_unlock(&pm->lock);
    }
    uraid_log(URAID_LOG_INFO,
              "power cut in domain %s (seed %llu): of the writes since each member's last flush %llu kept, %llu "
              "dropped, %llu torn (%llu sectors kept, %llu lost)%s",
              d->name, (unsigned long long)d->seed, (unsigned long long)st->cut_kept,
              (unsigned long long)st->cut_dropped, (unsigned long long)st->cut_torn,
              (unsigned long long)st->torn_sectors_kept, (unsigned long long)st->torn_sectors_lost,
              st->cut_errors ? "; some could not be applied (member I/O errors)" : "");
    pthread_mutex_unlock(&d->lock);
    return 0;
}

int powercut_is_cut(struct powercut_domain *d) { return atomic_load(&d->cut); }

void powercut_on_cut(struct powercut_domain *d, void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&d->lock);
    d->on_cut = fn;
    d->on_cut_ctx = ctx;
    pthread_mutex_unlock(&d->lock);
}

void powercut_on_write(struct powercut_domain *d,
                       int (*fn)(void *ctx, unsigned member_ix, uint64_t off, size_t len, int fua), void *ctx)
{
    pthread_mutex_lock(&d->lock);
    d->on_write = fn;
    d->on_write_ctx = ctx;
    pthread_mutex_unlock(&d->lock);
}

void powercut_arm(struct powercut_domain *d, uint64_t after_writes)
{
    atomic_store(&d->target, 0);
    atomic_store(&d->counted, 0);
    atomic_store(&d->target, after_writes);
}

void powercut_get_stats(struct powercut_domain *d, struct powercut_stats *out)
{
    pthread_mutex_lock(&d->lock);
    struct powercut_stats st = d->at_cut;
    st.writes = atomic_load(&d->writes);
    st.zeroes = atomic_load(&d->zeroes);
    st.flushes = atomic_load(&d->flushes);
    st.fua_writes = atomic_load(&d->fua_writes);
    for (struct pc_member *pm = d->members; pm; pm = pm->dnext) {
        pthread_mutex_lock(&pm->lock);
        st.pending_writes += pm->npending;
        st.pending_bytes += pm->pending_bytes;
        pthread_mutex_unlock(&pm->lock);
    }
    pthread_mutex_unlock(&d->lock);
    *out = st;
}

uint64_t member_powercut_pending(struct member *m)
{
    if (!m || m->ops != &powercut_ops)
        return 0;
    struct pc_member *pm = m->priv;
    pthread_mutex_lock(&pm->lock);
    uint64_t n = pm->npending;
    pthread_mutex_unlock(&pm->lock);
    return n;
}

/* ---- the member ---------------------------------------------------------------------- */

static int pc_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    struct pc_member *pm = m->priv;
    if (atomic_load(&pm->d->cut))
        return -ENXIO;
    return member_read(pm->inner, buf, len, off);
}

/* Counts a write that reached the medium: 1 when it is the armed one,
 * which pulls the plug during it (it never completes, so even a FUA write
 * may then be lost or torn). */
static int count_hit(struct powercut_domain *d)
{
    uint64_t target = atomic_load(&d->target);
    return target && atomic_fetch_add(&d->counted, 1) + 1 == target;
}

/* A write (data != NULL) or a zeroed range, remembered with what it
 * replaced. A FUA write (fua) is remembered too, as durable: the cut rolls
 * every member back to its last flush and replays what survives in order,
 * so it must put the FUA write back after the unflushed writes before it
 * that it overwrote, and before the later ones that overwrite it. */
static int pc_modify(struct member *m, const void *data, size_t len, uint64_t off, int fua)
{
    struct pc_member *pm = m->priv;
    if (m->readonly)
        return -EROFS;
    struct pc_write *w = calloc(1, sizeof *w);
    uint8_t *old = malloc(len ? len : 1), *copy = data ? malloc(len ? len : 1) : NULL;
    if (!w || !old || (data && !copy)) {
        free(w);
        free(old);
        free(copy);
        return -ENOMEM;
    }
    if (copy)
        memcpy(copy, data, len);
    int cut_here = pm->d->on_write && data && !atomic_load(&pm->d->cut) &&
                   pm->d->on_write(pm->d->on_write_ctx, pm->ix, off, len, fua);
    pthread_mutex_lock(&pm->lock);
    int rc = atomic_load(&pm->d->cut) ? -ENXIO : 0;
    if (!rc && member_read(pm->inner, old, len, off)) {
        free(old); /* e.g. a read fault below: this write cannot be undone, so it survives any cut */
        old = NULL;
    }
    if (!rc)
        rc = !data ? member_zero(pm->inner, len, off)
             : fua ? member_write_fua(pm->inner, data, len, off)
                   : member_write(pm->inner, data, len, off);
    int cuts = 0;
    if (!rc) {
        cuts = count_hit(pm->d) || cut_here;
        int durable = fua && !cuts;
        *w = (struct pc_write){.off = off, .len = len, .seq = pm->seq++, .old = old, .data = copy, .durable = durable};
        if (pm->tail)
            pm->tail->next = w;
        else
            pm->head = w;
        pm->tail = w;
        pm->nrec++;
        pm->npending += !durable;
        pm->pending_bytes += durable ? 0 : len;
        w = NULL;
        old = copy = NULL;
    }
    pthread_mutex_unlock(&pm->lock);
    free(w);
    free(old);
    free(copy);
    if (rc)
        return rc;
    atomic_fetch_add(data ? &pm->d->writes : &pm->d->zeroes, 1);
    if (fua)
        atomic_fetch_add(&pm->d->fua_writes, 1);
    if (!cuts)
        return 0;
    powercut_cut(pm->d);
    return -ENXIO;
}

static int pc_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    return pc_modify(m, buf, len, off, 0);
}

static int pc_write_fua(struct member *m, const void *buf, size_t len, uint64_t off)
{
    return pc_modify(m, buf, len, off, 1);
}

static int pc_zero(struct member *m, size_t len, uint64_t off)
{
    return pc_modify(m, NULL, len, off, 0);
}

/* Everything written before the flush began is durable once it returns:
 * the remembered writes are forgotten only after the inner flush succeeded. */
static int pc_flush(struct member *m)
{
    struct pc_member *pm = m->priv;
    pthread_mutex_lock(&pm->lock);
    int rc = atomic_load(&pm->d->cut) ? -ENXIO : member_flush(pm->inner);
    if (!rc)
        free_writes(pm);
    pthread_mutex_unlock(&pm->lock);
    if (!rc)
        atomic_fetch_add(&pm->d->flushes, 1);
    return rc;
}

static void pc_close(struct member *m)
{
    struct pc_member *pm = m->priv;
    struct powercut_domain *d = pm->d;
    pthread_mutex_lock(&d->lock);
    for (struct pc_member **p = &d->members; *p; p = &(*p)->dnext)
        if (*p == pm) {
            *p = pm->dnext;
            break;
        }
    pthread_mutex_unlock(&d->lock);
    /* A close without a cut is a clean shutdown: what was written stays. */
    free_writes(pm);
    member_close(pm->inner);
    pthread_mutex_destroy(&pm->lock);
    free(pm);
    pthread_mutex_lock(&registry_lock);
    put_locked(d);
    pthread_mutex_unlock(&registry_lock);
}

/* direct_fd stays NULL: io_uring must not bypass the record of writes. */
static const struct member_ops powercut_ops = {
    .kind = "powercut",
    .read = pc_read,
    .write = pc_write,
    .flush = pc_flush,
    .zero = pc_zero,
    .close = pc_close,
    .write_fua = pc_write_fua,
};

int member_powercut_wrap(struct member *inner, struct powercut_domain *d, struct member **out)
{
    if (!inner || !d || !out)
        return -EINVAL;
    struct member *m = calloc(1, sizeof *m);
    struct pc_member *pm = calloc(1, sizeof *pm);
    char *name = strdup(inner->path ? inner->path : "");
    if (!m || !pm || !name) {
        free(m);
        free(pm);
        free(name);
        return -ENOMEM;
    }
    pthread_mutex_init(&pm->lock, NULL);
    pm->inner = inner;
    pm->d = d;
    pthread_mutex_lock(&registry_lock);
    d->refs++;
    pthread_mutex_unlock(&registry_lock);
    pthread_mutex_lock(&d->lock);
    pm->ix = d->next_ix++;
    pm->dnext = d->members;
    d->members = pm;
    pthread_mutex_unlock(&d->lock);
    m->ops = &powercut_ops;
    m->path = name;
    m->size = inner->size;
    m->readonly = inner->readonly;
    m->seeks = inner->seeks;
    m->power_sim = 1; /* write_through stays 0: the cut drops what no flush covered */
    m->priv = pm;
    *out = m;
    return 0;
}
