/* md's partial parity log at run time: logging before a group's member
 * writes, and the replay of a dirty array's logs at open (ppl.h). */
#include "stripe/ppl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "array/dataio.h"
#include "log.h"
#include "meta/ppl.h"
#include "stripe/ppl_int.h"
#include "uraid_parity.h"

int ppl_supported(const struct md_sb *sb, char *why, size_t whylen)
{
    uint32_t room = md_sb_ppl_size(sb) > PPL_HEADER_SECTORS ? md_sb_ppl_size(sb) - PPL_HEADER_SECTORS : 0;
    if (sb->level != 5 && !(sb->level == 6 && md_sb_has_ppl_q(sb))) {
        uraid_why(why, whylen, "md keeps a partial parity log for RAID-5 only (this array is RAID-%d%s)", sb->level,
                  sb->level == 6 ? " without uraid's partial Q feature 0x80000000" : "");
        return -EOPNOTSUPP;
    }
    if (sb->raid_disks > PPL_MAX_SLOTS) {
        uraid_why(why, whylen, "md keeps a partial parity log for at most %d members (this array has %u)",
                  PPL_MAX_SLOTS, sb->raid_disks);
        return -EOPNOTSUPP;
    }
    if (room < sb->chunksize) {
        uraid_why(why, whylen,
                  "the PPL area of %u sectors cannot hold the partial parity of a %u KiB chunk (uraid needs the "
                  "header and one chunk: %u sectors)",
                  md_sb_ppl_size(sb), sb->chunksize / 2, sb->chunksize + PPL_HEADER_SECTORS);
        return -EOPNOTSUPP;
    }
    return 0;
}

int ppl_open(struct uraid_array *a, char *why, size_t whylen)
{
    if (!md_sb_has_ppl(&a->sb))
        return 0;
    int rc = ppl_supported(&a->sb, why, whylen);
    if (rc)
        return rc;
    struct ppl_log *L = calloc(1, sizeof *L);
    if (!L) {
        uraid_why(why, whylen, "out of memory");
        return -ENOMEM;
    }
    L->signature = ppl_signature(a->sb.set_uuid);
    /* tags of another run (its logs are emptied before this run's first
     * log write) must not look like this run's */
    if (getrandom(&L->tag, sizeof L->tag, 0) != sizeof L->tag)
        L->tag = (uint32_t)time(NULL) ^ (uint32_t)getpid() << 16;
    pthread_mutex_init(&L->clear_mu, NULL);
    pthread_mutex_init(&L->res_mu, NULL);
    pthread_cond_init(&L->res_cv, NULL);
    pthread_mutex_init(&L->fl_mu, NULL);
    pthread_cond_init(&L->fl_work, NULL);
    pthread_cond_init(&L->fl_ended, NULL);
    L->a = a;
    pthread_condattr_t ca; /* departed is waited on with a CLOCK_MONOTONIC deadline (ppl_ahead.c) */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (int s = 0; s < PPL_MAX_SLOTS; s++) {
        pthread_mutex_init(&L->m[s].mu, NULL);
        pthread_mutex_init(&L->m[s].list_mu, NULL);
        pthread_cond_init(&L->m[s].departed, &ca);
        /* each member's own area (mdadm gives them all the same one) */
        const struct md_sb *sb = s < a->geom.raid_disks && a->slot[s].dev ? &a->slot[s].sb : &a->sb;
        if (!md_sb_has_ppl(sb) || ppl_supported(sb, NULL, 0))
            sb = &a->sb;
        L->m[s].start = (uint64_t)md_sb_ppl_sector(sb);
        L->m[s].sectors = md_sb_ppl_size(sb);
        L->m[s].room = ((uint64_t)L->m[s].sectors - PPL_HEADER_SECTORS) * SECTOR;
    }
    pthread_condattr_destroy(&ca);
    a->ppl = L;
    return 0;
}

void ppl_close(struct uraid_array *a)
{
    struct ppl_log *L = a->ppl;
    if (!L)
        return;
    ppl_flusher_stop(L);
    uraid_log(URAID_LOG_INFO, "ppl: %llu units wrote a header (%llu with partial parity), %llu were covered by "
              "stripes logged ahead (%llu waits for a lister's header ended so)", (unsigned long long)L->units_logged,
              (unsigned long long)L->units_pp, (unsigned long long)L->units_covered,
              (unsigned long long)L->units_waited);
    for (int s = 0; s < PPL_MAX_SLOTS; s++) {
        for (struct ppl_part *p = L->m[s].inflight, *nx; p; p = nx) {
            nx = p->next; /* lingering parts: every unit has finished */
            free(p);
        }
        pthread_mutex_destroy(&L->m[s].mu);
        pthread_mutex_destroy(&L->m[s].list_mu);
        pthread_cond_destroy(&L->m[s].departed);
    }
    pthread_mutex_destroy(&L->clear_mu);
    pthread_mutex_destroy(&L->res_mu);
    pthread_cond_destroy(&L->res_cv);
    pthread_mutex_destroy(&L->fl_mu);
    pthread_cond_destroy(&L->fl_work);
    pthread_cond_destroy(&L->fl_ended);
    free(L);
    a->ppl = NULL;
}

/* ---- emptying -------------------------------------------------------------------- */

/* Slot s's area emptied as md leaves it: zeroed (no older header further
 * on may look newer), an empty header at its start. In an order a power
 * cut cannot make worse: the area after the first header is zeroed and
 * flushed first, and the header at the start, which a tear would leave
 * unreadable (the log would count as damaged), is written only when it is
 * not an empty one of generation 0 already (as a clean close or a replay
 * leaves it). Headers then go after it (write_header). */
static int empty_area(struct uraid_array *a, int s)
{
    struct ppl_log *L = a->ppl;
    struct member *dev = __atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE);
    if (!dev || !slot_ok(a, s))
        return 0;
    uint8_t hdr[PPL_HEADER_BYTES] __attribute__((aligned(4096)));
    struct ppl_header *h = calloc(1, sizeof *h);
    uint64_t at = L->m[s].start * SECTOR;
    int rc = h ? member_zero(dev, (size_t)L->m[s].sectors * SECTOR - PPL_HEADER_BYTES, at + PPL_HEADER_BYTES)
               : -ENOMEM;
    if (rc == 0)
        rc = member_flush(dev);
    int empty = rc == 0 && member_read(dev, hdr, sizeof hdr, at) == 0 && ppl_header_decode(hdr, h, NULL, 0) == 0 &&
                h->signature == L->signature && h->entries_count == 0 && h->generation == 0;
    if (rc == 0 && !empty) {
        memset(h, 0, sizeof *h);
        h->signature = L->signature;
        ppl_header_encode(h, hdr);
        rc = member_write(dev, hdr, sizeof hdr, at);
        if (rc == 0)
            rc = member_flush(dev);
    }
    if (rc == 0)
        L->m[s].next_off = PPL_HEADER_BYTES;
    else
        uraid_log(URAID_LOG_ERROR, "member %s: cannot empty its PPL at sector %llu: %s", dev->path,
                  (unsigned long long)L->m[s].start, uraid_strerror(rc));
    free(h);
    return rc;
}

int ppl_clear_all(struct uraid_array *a)
{
    int rc = 0;
    for (int s = 0; a->ppl && s < a->geom.raid_disks && rc == 0; s++)
        rc = empty_area(a, s);
    if (rc == 0 && a->ppl)
        __atomic_store_n(&a->ppl->cleared, 1, __ATOMIC_RELEASE);
    return rc;
}

/* Before the first log write since open: the areas emptied once. */
static int clear_once(struct uraid_array *a)
{
    struct ppl_log *L = a->ppl;
    if (__atomic_load_n(&L->cleared, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&L->clear_mu);
    int rc = __atomic_load_n(&L->cleared, __ATOMIC_ACQUIRE) ? 0 : ppl_clear_all(a);
    pthread_mutex_unlock(&L->clear_mu);
    return rc;
}

/* ---- logging ---------------------------------------------------------------------- */

/* What the log needs of one stripe: its map, the parity slots whose logs
 * hold its entries (P's; on RAID-6 also Q's; -1: that parity is not
 * written, so there is nothing for its log to protect) and the slots it
 * writes. */
struct plan {
    struct stripe_map map;
    int par[2];
    int nb;
    struct ppl_band b[3];
    uint8_t fold[3][2];     /* per band: ppl_header.folded and folded2 of its entries */
    uint64_t pp_bytes;      /* in each of the logs */
    uint64_t written;
};

/* The modified blocks of band b that are not written because their member
 * is out of sync (the block then lives in parity only), as 1 + slot in
 * fold[0..1] (0: none). Partial parity alone (the blocks the write leaves
 * alone) cannot recover such a row: replay would need the block as it is
 * now, and a power cut can keep the parity and tear the other blocks, so
 * that nothing on disk says what it was. Its new data goes into the
 * entry's partial parity. More than the level's parity count: the stripe
 * cannot be written anyway. */
static void band_fold(struct uraid_array *a, const struct ppl_stripe *ps, const struct stripe_map *map,
                      const struct ppl_band *b, uint8_t fold[2])
{
    uint32_t c = a->geom.chunk_sectors;
    uint64_t upto = ps->stripe * c + (ps->r ? ps->r->row + ps->r->nrows : c);
    int n = 0, f[2] = {0, 0};
    for (uint32_t d = b->d_lo; d <= b->d_hi; d++) {
        int m = map->data_disk[d];
        if ((!ps->r || ps->r->unavailable[m]) && !slot_ok_upto(a, m, upto)) {
            if (n < 2)
                f[n] = m + 1;
            n++;
        }
    }
    fold[0] = n <= a->nparity ? (uint8_t)f[0] : 0;
    fold[1] = n <= a->nparity ? (uint8_t)f[1] : 0;
}

/* Band i carries partial parity: it leaves a data block alone, or (a user
 * write; zeroing folds zeros, which need no bytes) a folded block's data. */
static int band_has_pp(const struct uraid_array *a, const struct ppl_stripe *ps, const struct plan *pl, int i)
{
    return pl->b[i].d_hi - pl->b[i].d_lo + 1 < (uint32_t)a->k || (pl->fold[i][0] && ps->r);
}

static int plan_stripe(struct uraid_array *a, const struct ppl_stripe *ps, struct plan *pl)
{
    uint32_t c = a->geom.chunk_sectors;
    if (ps->r)
        pl->map = ps->r->map;
    else if (layout_stripe(&a->geom, ps->stripe, &pl->map))
        return -EINVAL;
    uint64_t msec = ps->stripe * c;
    int any = 0;
    pl->written = 0;
    for (int j = 0; j < 2; j++) {
        int p = j ? pl->map.q_disk : pl->map.p_disk;
        int usable = p >= 0 && a->ppl->m[p].sectors &&
                     (ps->r ? !ps->r->unavailable[p] : slot_ok_upto(a, p, msec + c));
        pl->par[j] = usable ? p : -1;
        if (usable) {
            pl->written |= 1ull << p;
            any = 1;
        }
    }
    pl->nb = 0;
    if (!any)
        return 0;
    pl->nb = ppl_bands(c, a->k, ps->r0, ps->r1, pl->b);
    pl->pp_bytes = 0;
    for (int i = 0; i < pl->nb; i++) {
        band_fold(a, ps, &pl->map, &pl->b[i], pl->fold[i]);
        if (band_has_pp(a, ps, pl, i))
            pl->pp_bytes += (uint64_t)pl->b[i].nrows * SECTOR;
    }
    for (uint64_t d = ps->r0 / c; d <= (ps->r1 - 1) / c; d++)
        pl->written |= 1ull << pl->map.data_disk[d];
    return 0;
}

/* Band b's partial parity for the log of parity slot s (P's or Q's): the
 * parity ^ the band's new blocks (= the blocks the write leaves alone,
 * for Q each times g^its Q slot), into dst; a folded block is left out,
 * so that its new data stays in. */
static int band_pp(const struct stripe_rows *r, const struct plan *pl, const struct ppl_band *b,
                   const uint8_t fold[2], int s, uint8_t *dst)
{
    const uint8_t *blk[PPL_MAX_SLOTS];
    int qs[PPL_MAX_SLOTS];
    size_t off = (size_t)(b->row - r->row) * SECTOR, len = (size_t)b->nrows * SECTOR;
    int n = 0, is_q = s == pl->map.q_disk;
    for (uint32_t d = b->d_lo; d <= b->d_hi; d++) {
        int m = pl->map.data_disk[d];
        if (m == fold[0] - 1 || m == fold[1] - 1)
            continue;
        qs[n] = pl->map.q_slot[d];
        blk[n++] = r->block[m] + off;
    }
    const uint8_t *par = r->block[s] + off;
    return ppl_partial_pq(par, par, n, qs, blk, len, is_q ? NULL : dst, is_q ? dst : NULL);
}

/* Slot s's part of the unit: entries and partial parity of stripes
 * [0, n) whose P or Q lies there (parity_disk: s, the log's member). */
static int fill_part(struct uraid_array *a, const struct ppl_stripe *ps, const struct plan *pl, int n, int own,
                     uint32_t tag, struct ppl_part *part)
{
    uint32_t c = a->geom.chunk_sectors;
    uint8_t *pp = part->pp;
    int rc = 0, first = 1;
    for (int i = 0; i < n && rc == 0; i++) {
        if (pl[i].par[0] != part->slot && pl[i].par[1] != part->slot)
            continue;
        part->written |= pl[i].written;
        if (first)
            part->s_lo = part->s_hi = part->la_lo = part->la_hi = ps[i].stripe;
        first = 0;
        if (i < own) {
            part->s_lo = ps[i].stripe < part->s_lo ? ps[i].stripe : part->s_lo;
            part->s_hi = ps[i].stripe > part->s_hi ? ps[i].stripe : part->s_hi;
        }
        part->la_lo = ps[i].stripe < part->la_lo ? ps[i].stripe : part->la_lo;
        part->la_hi = ps[i].stripe > part->la_hi ? ps[i].stripe : part->la_hi;
        for (int j = 0; j < pl[i].nb && rc == 0; j++) {
            struct ppl_entry e = ppl_band_entry(&pl[i].b[j], ps[i].stripe, c, a->k,
                                                (uint32_t)part->slot | tag << PPL_TAG_SHIFT);
            if (band_has_pp(a, &ps[i], &pl[i], j))
                e.pp_size = pl[i].b[j].nrows * SECTOR; /* a full band with a folded block too */
            if (e.pp_size) {
                rc = band_pp(ps[i].r, &pl[i], &pl[i].b[j], pl[i].fold[j], part->slot, pp);
                e.checksum = ppl_crc32c(pp, e.pp_size);
                pp += e.pp_size;
            }
            part->folded[2 * part->nentries] = pl[i].fold[j][0];
            part->folded[2 * part->nentries + 1] = pl[i].fold[j][1];
            part->e[part->nentries++] = e;
        }
    }
    return rc;
}

/* Room in every log the unit needs, all at once (a unit waiting for one
 * log holds no room in another, so waiters never block each other). */
static void unreserve(struct ppl_log *L, uint64_t held, const uint32_t *entries, const uint64_t *pp)
{
    for (int s = 0; s < PPL_MAX_SLOTS; s++)
        if (held >> s & 1) {
            __atomic_sub_fetch(&L->m[s].entries, entries[s], __ATOMIC_ACQ_REL);
            __atomic_sub_fetch(&L->m[s].pp_bytes, pp[s], __ATOMIC_ACQ_REL);
        }
}

static int try_reserve(struct ppl_log *L, uint64_t held, const uint32_t *entries, const uint64_t *pp)
{
    int fits = 1;
    for (int s = 0; s < PPL_MAX_SLOTS; s++)
        if (held >> s & 1) {
            uint32_t e = __atomic_add_fetch(&L->m[s].entries, entries[s], __ATOMIC_ACQ_REL);
            uint64_t b = __atomic_add_fetch(&L->m[s].pp_bytes, pp[s], __ATOMIC_ACQ_REL);
            fits &= e <= PPL_MAX_ENTRIES && b <= L->m[s].room;
        }
    if (!fits)
        unreserve(L, held, entries, pp);
    return fits;
}

static void sweep_held(struct ppl_log *L, uint64_t held)
{
    for (int s = 0; s < PPL_MAX_SLOTS; s++) {
        struct ppl_part *gone = NULL;
        if (!(held >> s & 1))
            continue;
        pthread_mutex_lock(&L->m[s].list_mu);
        ppl_sweep(L, &L->m[s], 1, &gone);
        pthread_mutex_unlock(&L->m[s].list_mu);
        ppl_free_swept(L, s, gone);
    }
}

static void reserve(struct ppl_log *L, uint64_t held, const uint32_t *entries, const uint64_t *pp)
{
    if (try_reserve(L, held, entries, pp))
        return;
    /* lingering parts give their room back first (no new one lingers
     * while a unit waits for room) */
    __atomic_add_fetch(&L->waiters, 1, __ATOMIC_ACQ_REL);
    sweep_held(L, held);
    pthread_mutex_lock(&L->res_mu);
    while (!try_reserve(L, held, entries, pp)) {
        pthread_cond_wait(&L->res_cv, &L->res_mu);
        pthread_mutex_unlock(&L->res_mu);
        sweep_held(L, held); /* parts pinned before may linger now */
        pthread_mutex_lock(&L->res_mu);
    }
    __atomic_sub_fetch(&L->waiters, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&L->res_mu);
}

/* Stripes are listed ahead only while a log's reserved entries stay
 * within this: listing ahead only saves later units a log write, and a
 * full log makes units wait for room and sweeps every lingering part out
 * (their members flushed before the next header). A RAID-6 of six far NBD
 * members written by nbdcopy (16 units in flight, each listing about 11
 * entries in every log) waited for room so, and wrote its members 0.85 as
 * fast as with this bound, with 1.8 times the flushes. */
#define AHEAD_ROOM (PPL_MAX_ENTRIES / 2)

/* A unit of whole, consecutive stripes of a healthy array (a stream)
 * also lists the stripes after them whole (ppl_ahead.c): their plans go
 * after the unit's in pl, their entries are counted in entries[] and
 * held. Returns the stripes to list (own and ahead; *xs then holds them
 * all, to free), or a negative errno. */
static int plan_ahead(struct uraid_array *a, const struct ppl_stripe *ps, struct plan **plp, int take,
                      struct ppl_stripe **xs, uint32_t *entries, uint64_t *held)
{
    struct plan *pl = *plp;
    int par = a->geom.level == 6 ? 2 : 1;
    for (int i = 0; i < take; i++) {
        int ok = ps[i].stripe == ps[0].stripe + (uint64_t)i && pl[i].pp_bytes == 0 && pl[i].nb == 1;
        for (int j = 0; j < par && ok; j++)
            ok = pl[i].par[j] >= 0 && !pl[i].fold[0][0];
        if (!ok)
            return take;
    }
    uint64_t stripes = a->size_sectors / ((uint64_t)a->k * a->geom.chunk_sectors);
    int want = ppl_ahead_count(take), n = take;
    /* plans are large (a stripe map each): room for those ahead only now */
    pl = realloc(pl, sizeof *pl * (size_t)(take + want));
    if (!pl)
        return -ENOMEM;
    *plp = pl;
    *xs = malloc(sizeof **xs * (size_t)(take + want));
    if (!*xs)
        return -ENOMEM;
    memcpy(*xs, ps, sizeof *ps * (size_t)take);
    for (; n < take + want && ps[0].stripe + (uint64_t)n < stripes; n++) {
        struct ppl_stripe *x = &(*xs)[n];
        *x = (struct ppl_stripe){.stripe = ps[0].stripe + (uint64_t)n, .r0 = 0,
                                 .r1 = (uint64_t)a->k * a->geom.chunk_sectors};
        int ok = plan_stripe(a, x, &pl[n]) == 0 && pl[n].pp_bytes == 0 && pl[n].nb == 1 && !pl[n].fold[0][0];
        for (int j = 0; j < par && ok; j++) {
            int p = pl[n].par[j];
            ok = p >= 0 && entries[p] + 1 <= PPL_MAX_ENTRIES / 4 &&
                 __atomic_load_n(&a->ppl->m[p].entries, __ATOMIC_ACQUIRE) + entries[p] + 1 <= AHEAD_ROOM;
        }
        if (!ok)
            break;
        pl[n].written = 0; /* listed, not written */
        for (int j = 0; j < par; j++) {
            entries[pl[n].par[j]]++;
            *held |= 1ull << pl[n].par[j];
        }
    }
    return n;
}

int ppl_begin(struct uraid_array *a, const struct ppl_stripe *ps, int n, struct ppl_unit *u)
{
    struct ppl_log *L = a->ppl;
    u->held = 0;
    u->parts = NULL;
    u->reserved = 0;
    u->npin = 0;
    int rc = clear_once(a);
    struct plan *pl = rc ? NULL : calloc((size_t)n, sizeof *pl);
    if (rc == 0 && !pl)
        rc = -ENOMEM;
    uint32_t entries[PPL_MAX_SLOTS] = {0};
    uint64_t pp_bytes[PPL_MAX_SLOTS] = {0};
    uint32_t tag = a->geom.level == 6 ? __atomic_add_fetch(&L->tag, 1, __ATOMIC_RELAXED) & 0xffffffu : 0;
    int take = 0;
    for (; rc == 0 && take < n; take++) {
        if ((rc = plan_stripe(a, &ps[take], &pl[take])) != 0)
            break;
        int full = 0;
        for (int j = 0; j < 2; j++) {
            int p = pl[take].par[j];
            full |= p >= 0 && (entries[p] + (uint32_t)pl[take].nb > PPL_MAX_ENTRIES ||
                               pp_bytes[p] + pl[take].pp_bytes > L->m[p].room);
        }
        if (take && full)
            break; /* the rest goes in the next unit */
        for (int j = 0; j < 2; j++) {
            int p = pl[take].par[j];
            if (p < 0)
                continue;
            entries[p] += (uint32_t)pl[take].nb;
            pp_bytes[p] += pl[take].pp_bytes;
            u->held |= 1ull << p;
        }
    }
    struct ppl_stripe *xs = NULL;
    int nx = rc == 0 ? plan_ahead(a, ps, &pl, take, &xs, entries, &u->held) : take;
    if (nx < 0)
        rc = nx;
    for (int s = 0; rc == 0 && s < PPL_MAX_SLOTS; s++) {
        if (!(u->held >> s & 1))
            continue;
        struct ppl_part *part = calloc(1, sizeof *part + entries[s] * (sizeof part->e[0] + 2) + pp_bytes[s]);
        if (!part) {
            rc = -ENOMEM;
            break;
        }
        part->slot = s;
        part->pp_bytes = pp_bytes[s];
        part->folded = (uint8_t *)&part->e[entries[s]];
        part->pp = part->folded + 2 * entries[s];
        part->unit_next = u->parts;
        u->parts = part;
        rc = fill_part(a, xs ? xs : ps, pl, nx, take, tag, part);
        part->ahead = xs != NULL;
    }
    free(pl);
    free(xs);
    if (rc) {
        ppl_end(a, u);
        return rc;
    }
    /* stripes a header on disk lists already, logged ahead: no log write */
    if (ppl_cover(L, u)) {
        __atomic_add_fetch(&L->units_covered, 1, __ATOMIC_RELAXED);
        return take;
    }
    __atomic_add_fetch(&L->units_logged, 1, __ATOMIC_RELAXED);
    for (int s = 0; s < PPL_MAX_SLOTS; s++)
        if (pp_bytes[s]) {
            __atomic_add_fetch(&L->units_pp, 1, __ATOMIC_RELAXED);
            break;
        }
    reserve(L, u->held, entries, pp_bytes);
    u->reserved = 1;
    rc = ppl_write_logs(a, u);
    if (rc)
        ppl_end(a, u);
    return rc ? rc : take;
}

void ppl_end(struct uraid_array *a, struct ppl_unit *u)
{
    struct ppl_log *L = a->ppl;
    uint32_t entries[PPL_MAX_SLOTS] = {0};
    uint64_t pp[PPL_MAX_SLOTS] = {0}, wrote = 0;
    /* a part others pin gets their writes added (unpin), under list_mu */
    for (struct ppl_part *part = u->parts; part; part = part->unit_next) {
        struct ppl_member *m = &L->m[part->slot];
        pthread_mutex_lock(&m->list_mu);
        wrote |= part->written;
        pthread_mutex_unlock(&m->list_mu);
    }
    for (int i = 0; i < u->npin; i++)
        wrote |= u->pin_written[i];
    ppl_flush_kick(a, wrote);
    ppl_uncover(L, u);
    for (struct ppl_part *part = u->parts, *nx; part; part = nx) {
        nx = part->unit_next;
        struct ppl_member *m = &L->m[part->slot];
        pthread_mutex_lock(&m->list_mu);
        int stays = 0, listed = ppl_link_of(m, part) != NULL;
        struct ppl_part *gone = NULL;
        /* it keeps its room in the log while it lingers */
        if (listed && (stays = u->reserved && ppl_linger(L, m, part, &gone)) == 0 &&
            (stays = part->pins) != 0) /* units it covers still write */
            ppl_linger_pinned(L, m, part);
        if (listed && !stays) {
            /* found again: ppl_linger may have taken out the part before
             * it (unkeep), whose next pointed at it */
            struct ppl_part **link = ppl_link_of(m, part);
            *link = part->next;
            ppl_left_part(m, part);
            m->unflushed |= part->written;
            for (int j = 0; j < PPL_MAX_SLOTS; j++)
                if (part->written >> j & 1)
                    m->need[j] = ppl_flush_mark(L, j);
            pthread_cond_broadcast(&m->departed);
        }
        pthread_mutex_unlock(&m->list_mu);
        ppl_free_swept(L, part->slot, gone);
        if (stays)
            continue;
        entries[part->slot] = part->nentries;
        pp[part->slot] = part->pp_bytes;
        free(part);
    }
    if (u->reserved) {
        unreserve(L, u->held, entries, pp);
        ppl_wake_reservers(L);
    }
    u->parts = NULL;
    u->held = 0;
    u->reserved = 0;
}
