/* md's partial parity log at run time: logging before a group's member
 * writes, and the replay of a dirty array's logs at open (ppl.h). */
#include "stripe/ppl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"
#include "meta/ppl.h"
#include "uraid_parity.h"

#define PPL_MAX_SLOTS 64 /* md's limit: a flush bitmap of one unsigned long */

struct ppl_part;

struct ppl_member {
    pthread_mutex_t mu;         /* log writes one at a time, in order; next_off */
    pthread_mutex_t list_mu;    /* the list, link_seq, unflushed; written_seq (changed under both) */
    pthread_cond_t departed;    /* a part left the list, or written_seq grew (under list_mu) */
    struct ppl_part *inflight;  /* parts of units whose member writes are in flight */
    uint64_t link_seq;          /* parts linked so far */
    uint64_t written_seq;       /* every part up to this one is in a header on disk */
    uint64_t next_off;          /* bytes into the area where the next header goes */
    uint64_t unflushed;         /* slots written by parts that left, not flushed since */
    uint32_t entries;           /* atomic: entries reserved by units in flight */
    uint64_t pp_bytes;          /* atomic: partial parity reserved */
    uint64_t start;             /* the area: member sector and length */
    uint32_t sectors;
    uint64_t room;              /* bytes of partial parity the area holds after its header */
};

struct ppl_log {
    uint32_t signature;
    uint64_t generation;   /* atomic: the last header's */
    int cleared;           /* atomic: the areas were emptied since open */
    pthread_mutex_t clear_mu;
    pthread_mutex_t res_mu;
    pthread_cond_t res_cv; /* room freed in some log */
    int waiters;           /* atomic: units waiting for room */
    struct ppl_member m[PPL_MAX_SLOTS];
};

int ppl_supported(const struct md_sb *sb, char *why, size_t whylen)
{
    uint32_t room = md_sb_ppl_size(sb) > PPL_HEADER_SECTORS ? md_sb_ppl_size(sb) - PPL_HEADER_SECTORS : 0;
    if (sb->level != 5) {
        uraid_why(why, whylen, "md keeps a partial parity log for RAID-5 only (this array is RAID-%d)", sb->level);
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
    pthread_mutex_init(&L->clear_mu, NULL);
    pthread_mutex_init(&L->res_mu, NULL);
    pthread_cond_init(&L->res_cv, NULL);
    for (int s = 0; s < PPL_MAX_SLOTS; s++) {
        pthread_mutex_init(&L->m[s].mu, NULL);
        pthread_mutex_init(&L->m[s].list_mu, NULL);
        pthread_cond_init(&L->m[s].departed, NULL);
        /* each member's own area (mdadm gives them all the same one) */
        const struct md_sb *sb = s < a->geom.raid_disks && a->slot[s].dev ? &a->slot[s].sb : &a->sb;
        if (!md_sb_has_ppl(sb) || ppl_supported(sb, NULL, 0))
            sb = &a->sb;
        L->m[s].start = (uint64_t)md_sb_ppl_sector(sb);
        L->m[s].sectors = md_sb_ppl_size(sb);
        L->m[s].room = ((uint64_t)L->m[s].sectors - PPL_HEADER_SECTORS) * SECTOR;
    }
    a->ppl = L;
    return 0;
}

void ppl_close(struct uraid_array *a)
{
    struct ppl_log *L = a->ppl;
    if (!L)
        return;
    for (int s = 0; s < PPL_MAX_SLOTS; s++) {
        pthread_mutex_destroy(&L->m[s].mu);
        pthread_mutex_destroy(&L->m[s].list_mu);
        pthread_cond_destroy(&L->m[s].departed);
    }
    pthread_mutex_destroy(&L->clear_mu);
    pthread_mutex_destroy(&L->res_mu);
    pthread_cond_destroy(&L->res_cv);
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

/* One unit's share of one member's log: its entries and their partial
 * parity, kept while the unit's member writes are in flight. Every header
 * written on that member meanwhile repeats them (md replays only a log's
 * newest header), so writers on one parity member overlap: each holds
 * the member's log only for its own log write. */
struct ppl_part {
    struct ppl_part *next;       /* the member's parts in flight */
    struct ppl_part *unit_next;  /* the unit's other parts */
    int slot;
    uint64_t seq;                /* its place in the member's list */
    uint32_t nentries;
    uint64_t pp_bytes;
    uint64_t written;            /* slots the unit's stripes write */
    uint8_t *folded;             /* per entry (ppl_header.folded), after e[] in the same allocation */
    uint8_t *pp;                 /* pp_bytes, after folded[] */
    struct ppl_entry e[];
};

/* What the log needs of one stripe: its map, the parity slot that holds
 * the log (-1: nothing to log) and the slots it writes. */
struct plan {
    struct stripe_map map;
    int p;
    int nb;
    struct ppl_band b[3];
    uint8_t fold[3];        /* per band: ppl_header.folded of its entry */
    uint64_t pp_bytes;
    uint64_t written;
};

/* 1 + the slot of the one modified block of band b that is not written
 * because its member is out of sync (the block then lives in parity only),
 * or 0. Partial parity alone (the blocks the write leaves alone) cannot
 * recover such a row: replay would need the block as it is now, and a
 * power cut can keep P and tear the other blocks, so that nothing on disk
 * says what it was. Its new data goes into the entry's partial parity. */
static uint8_t band_fold(struct uraid_array *a, const struct ppl_stripe *ps, const struct stripe_map *map,
                         const struct ppl_band *b)
{
    uint32_t c = a->geom.chunk_sectors;
    uint64_t upto = ps->stripe * c + (ps->r ? ps->r->row + ps->r->nrows : c);
    int fold = -1, n = 0;
    for (uint32_t d = b->d_lo; d <= b->d_hi; d++) {
        int m = map->data_disk[d];
        if ((!ps->r || ps->r->unavailable[m]) && !slot_ok_upto(a, m, upto)) {
            fold = m;
            n++;
        }
    }
    return n == 1 ? (uint8_t)(fold + 1) : 0; /* two: RAID-5 cannot write the stripe anyway */
}

/* Band i carries partial parity: it leaves a data block alone, or (a user
 * write; zeroing folds zeros, which need no bytes) its folded block's data. */
static int band_has_pp(const struct uraid_array *a, const struct ppl_stripe *ps, const struct plan *pl, int i)
{
    return pl->b[i].d_hi - pl->b[i].d_lo + 1 < (uint32_t)a->k || (pl->fold[i] && ps->r);
}

static int plan_stripe(struct uraid_array *a, const struct ppl_stripe *ps, struct plan *pl)
{
    uint32_t c = a->geom.chunk_sectors;
    if (ps->r)
        pl->map = ps->r->map;
    else if (layout_stripe(&a->geom, ps->stripe, &pl->map))
        return -EINVAL;
    pl->p = pl->map.p_disk;
    uint64_t msec = ps->stripe * c;
    int usable = pl->p >= 0 && a->ppl->m[pl->p].sectors &&
                 (ps->r ? !ps->r->unavailable[pl->p] : slot_ok_upto(a, pl->p, msec + c));
    if (!usable) {
        pl->p = -1; /* no parity is written: nothing for a log to protect */
        return 0;
    }
    pl->nb = ppl_bands(c, a->k, ps->r0, ps->r1, pl->b);
    pl->pp_bytes = 0;
    for (int i = 0; i < pl->nb; i++) {
        pl->fold[i] = band_fold(a, ps, &pl->map, &pl->b[i]);
        if (band_has_pp(a, ps, pl, i))
            pl->pp_bytes += (uint64_t)pl->b[i].nrows * SECTOR;
    }
    pl->written = 1ull << pl->p;
    for (uint64_t d = ps->r0 / c; d <= (ps->r1 - 1) / c; d++)
        pl->written |= 1ull << pl->map.data_disk[d];
    return 0;
}

/* Band b's partial parity: P ^ the band's new blocks (= the XOR of the
 * blocks the write leaves alone), into dst; a folded block (fold = 1 +
 * its slot) is left out of the XOR, so that its new data stays in. */
static int band_pp(const struct stripe_rows *r, const struct plan *pl, const struct ppl_band *b, int fold,
                   uint8_t *dst)
{
    const void *src[PPL_MAX_SLOTS + 1];
    size_t off = (size_t)(b->row - r->row) * SECTOR, len = (size_t)b->nrows * SECTOR;
    int n = 0;
    src[n++] = r->block[pl->p] + off;
    for (uint32_t d = b->d_lo; d <= b->d_hi; d++)
        if (pl->map.data_disk[d] != fold - 1)
            src[n++] = r->block[pl->map.data_disk[d]] + off;
    if (n == 1) {
        memcpy(dst, src[0], len);
        return 0;
    }
    return uraid_gen_p(n, len, src, dst);
}

/* Slot s's part of the unit: entries and partial parity of stripes
 * [0, n) whose parity lies there. */
static int fill_part(struct uraid_array *a, const struct ppl_stripe *ps, const struct plan *pl, int n,
                     struct ppl_part *part)
{
    uint32_t c = a->geom.chunk_sectors;
    uint8_t *pp = part->pp;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (pl[i].p != part->slot)
            continue;
        part->written |= pl[i].written;
        for (int j = 0; j < pl[i].nb && rc == 0; j++) {
            struct ppl_entry e = ppl_band_entry(&pl[i].b[j], ps[i].stripe, c, a->k, (uint32_t)part->slot);
            if (band_has_pp(a, &ps[i], &pl[i], j))
                e.pp_size = pl[i].b[j].nrows * SECTOR; /* a full band with a folded block too */
            if (e.pp_size) {
                rc = band_pp(ps[i].r, &pl[i], &pl[i].b[j], pl[i].fold[j], pp);
                e.checksum = ppl_crc32c(pp, e.pp_size);
                pp += e.pp_size;
            }
            part->folded[part->nentries] = pl[i].fold[j];
            part->e[part->nentries++] = e;
        }
    }
    return rc;
}

/* A flush, where the member has a cache to flush: memory-backed members
 * (tmpfs) hold their writes in the page cache, which is their storage. */
static int flush_member(struct member *dev)
{
    return dev->inline_io ? 0 : member_flush(dev);
}

/* The members written by parts that left a log (mask) are flushed before
 * a header that no longer lists them goes out: a power cut must not leave
 * an unflushed write no log covers. */
static void flush_departed(struct uraid_array *a, uint64_t todo)
{
    for (int j = 0; j < PPL_MAX_SLOTS && todo; j++) {
        if (!(todo >> j & 1))
            continue;
        todo &= ~(1ull << j);
        struct member *dev = __atomic_load_n(&a->slot[j].dev, __ATOMIC_ACQUIRE);
        int rc = dev && slot_ok(a, j) ? flush_member(dev) : 0;
        if (rc)
            uraid_log(URAID_LOG_WARN, "member %s: flush failed before its PPL was rewritten: %s", dev->path,
                      uraid_strerror(rc));
    }
}

/* A part of the list is in a header on disk: its unit's member writes may
 * be out. Under list_mu. */
static int any_written(const struct ppl_member *m)
{
    for (const struct ppl_part *p = m->inflight; p; p = p->next)
        if (p->seq <= m->written_seq)
            return 1;
    return 0;
}

/* Slot s's header listing every part in flight there, then their partial
 * parity, written and flushed; part `seq` is then on disk. Writers queue
 * on m->mu: one that finds its part already written by the writer before
 * it (which listed it) writes nothing, so under load one header write
 * serves several units (md's io_unit gathers stripes the same way).
 *
 * Each header goes after the previous one (md's chain of headers, which
 * its recovery walks to the newest): a power cut that tears a header then
 * leaves the previous one whole, and it lists every unit whose writes are
 * out. The chain restarts at the area's start when the area is used up;
 * a torn header there would break the chain, so it is written only once
 * no unit listed before has writes out. They are waited for with the log
 * let go (a unit whose part another writer's header listed takes it only
 * to see so); each is past this log, and the logs are taken lowest slot
 * first, so they finish. Returns with m->mu and m->list_mu held, 1 when
 * part `seq` is on disk already, and the header's place and partial
 * parity bytes. */
static int claim_log(struct ppl_member *m, uint64_t seq, uint64_t *off, uint64_t *pp)
{
    uint64_t area = (uint64_t)m->sectors * SECTOR;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        pthread_mutex_lock(&m->list_mu);
        if (m->written_seq >= seq)
            return 1;
        *pp = 0;
        for (struct ppl_part *p = m->inflight; p; p = p->next)
            *pp += p->pp_bytes;
        *off = m->next_off;
        /* md reads a header only where one more sector follows it */
        if (*off + PPL_HEADER_BYTES + *pp < area)
            return 0;
        if (!any_written(m)) {
            *off = 0;
            return 0;
        }
        pthread_mutex_unlock(&m->mu);
        while (any_written(m) && m->written_seq < seq)
            pthread_cond_wait(&m->departed, &m->list_mu);
        pthread_mutex_unlock(&m->list_mu);
    }
}

static int write_header(struct uraid_array *a, int s, uint64_t seq)
{
    struct ppl_log *L = a->ppl;
    struct ppl_member *m = &L->m[s];
    struct member *dev = a->slot[s].dev;
    uint64_t off, pp;
    if (claim_log(m, seq, &off, &pp)) {
        pthread_mutex_unlock(&m->list_mu);
        pthread_mutex_unlock(&m->mu);
        return 0;
    }
    struct ppl_header hs, *h = &hs;
    h->entries_count = 0;
    uint64_t upto = m->link_seq, departed = m->unflushed;
    m->unflushed = 0;
    size_t len = PPL_HEADER_BYTES + (size_t)pp;
    uint8_t *buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
    uint8_t *at = buf + PPL_HEADER_BYTES;
    for (struct ppl_part *p = m->inflight; p && buf; p = p->next) {
        memcpy(&h->entry[h->entries_count], p->e, p->nentries * sizeof p->e[0]);
        memcpy(&h->folded[h->entries_count], p->folded, p->nentries);
        h->entries_count += p->nentries;
        memcpy(at, p->pp, p->pp_bytes);
        at += p->pp_bytes;
    }
    pthread_mutex_unlock(&m->list_mu);
    h->signature = L->signature;
    h->generation = __atomic_add_fetch(&L->generation, 1, __ATOMIC_RELAXED);
    int rc = buf ? ppl_header_encode(h, buf) : -ENOMEM;
    if (rc == 0) {
        flush_departed(a, departed);
        struct io_op op = {.m = dev, .kind = IO_WRITE, .buf = buf, .len = len, .offset = m->start * SECTOR + off};
        io_engine_run(a->io, &op, 1);
        rc = op.result ? op.result : flush_member(dev);
        if (rc)
            uraid_log(URAID_LOG_ERROR, "member %s: cannot write its PPL at sector %llu: %s", dev->path,
                      (unsigned long long)(m->start + off / SECTOR), uraid_strerror(rc));
    }
    if (rc == 0) {
        pthread_mutex_lock(&m->list_mu);
        m->written_seq = upto; /* claim_log's waiters read it under list_mu */
        pthread_cond_broadcast(&m->departed);
        pthread_mutex_unlock(&m->list_mu);
        m->next_off = off + len;
    } else {
        pthread_mutex_lock(&m->list_mu);
        m->unflushed |= departed;
        pthread_mutex_unlock(&m->list_mu);
    }
    pthread_mutex_unlock(&m->mu);
    free(buf);
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

static void reserve(struct ppl_log *L, uint64_t held, const uint32_t *entries, const uint64_t *pp)
{
    if (try_reserve(L, held, entries, pp))
        return;
    pthread_mutex_lock(&L->res_mu);
    __atomic_add_fetch(&L->waiters, 1, __ATOMIC_ACQ_REL);
    while (!try_reserve(L, held, entries, pp))
        pthread_cond_wait(&L->res_cv, &L->res_mu);
    __atomic_sub_fetch(&L->waiters, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&L->res_mu);
}

int ppl_begin(struct uraid_array *a, const struct ppl_stripe *ps, int n, struct ppl_unit *u)
{
    struct ppl_log *L = a->ppl;
    u->held = 0;
    u->parts = NULL;
    int rc = clear_once(a);
    struct plan *pl = rc ? NULL : calloc((size_t)n, sizeof *pl);
    if (rc == 0 && !pl)
        rc = -ENOMEM;
    uint32_t entries[PPL_MAX_SLOTS] = {0};
    uint64_t pp_bytes[PPL_MAX_SLOTS] = {0};
    int take = 0;
    for (; rc == 0 && take < n; take++) {
        if ((rc = plan_stripe(a, &ps[take], &pl[take])) != 0)
            break;
        int p = pl[take].p;
        if (p < 0)
            continue;
        if (take && (entries[p] + (uint32_t)pl[take].nb > PPL_MAX_ENTRIES ||
                     pp_bytes[p] + pl[take].pp_bytes > L->m[p].room))
            break; /* the rest goes in the next unit */
        entries[p] += (uint32_t)pl[take].nb;
        pp_bytes[p] += pl[take].pp_bytes;
        u->held |= 1ull << p;
    }
    for (int s = 0; rc == 0 && s < PPL_MAX_SLOTS; s++) {
        if (!(u->held >> s & 1))
            continue;
        struct ppl_part *part = calloc(1, sizeof *part + entries[s] * (sizeof part->e[0] + 1) + pp_bytes[s]);
        if (!part) {
            rc = -ENOMEM;
            break;
        }
        part->slot = s;
        part->pp_bytes = pp_bytes[s];
        part->folded = (uint8_t *)&part->e[entries[s]];
        part->pp = part->folded + entries[s];
        part->unit_next = u->parts;
        u->parts = part;
        rc = fill_part(a, ps, pl, take, part);
    }
    free(pl);
    if (rc) {
        ppl_end(a, u);
        return rc;
    }
    reserve(L, u->held, entries, pp_bytes);
    u->reserved = 1;
    /* lowest slot first, one log at a time */
    for (int s = 0; s < PPL_MAX_SLOTS && rc == 0; s++) {
        struct ppl_part *part = u->parts;
        while (part && part->slot != s)
            part = part->unit_next;
        if (!part)
            continue;
        pthread_mutex_lock(&L->m[s].list_mu);
        part->seq = ++L->m[s].link_seq;
        part->next = L->m[s].inflight;
        L->m[s].inflight = part;
        pthread_mutex_unlock(&L->m[s].list_mu);
        rc = write_header(a, s, part->seq);
    }
    if (rc)
        ppl_end(a, u);
    return rc ? rc : take;
}

void ppl_end(struct uraid_array *a, struct ppl_unit *u)
{
    struct ppl_log *L = a->ppl;
    uint32_t entries[PPL_MAX_SLOTS] = {0};
    uint64_t pp[PPL_MAX_SLOTS] = {0};
    for (struct ppl_part *part = u->parts, *nx; part; part = nx) {
        nx = part->unit_next;
        struct ppl_member *m = &L->m[part->slot];
        pthread_mutex_lock(&m->list_mu);
        for (struct ppl_part **pp_ = &m->inflight; *pp_; pp_ = &(*pp_)->next)
            if (*pp_ == part) {
                *pp_ = part->next;
                m->unflushed |= part->written;
                pthread_cond_broadcast(&m->departed);
                break;
            }
        pthread_mutex_unlock(&m->list_mu);
        entries[part->slot] = part->nentries;
        pp[part->slot] = part->pp_bytes;
        free(part);
    }
    if (u->reserved) {
        unreserve(L, u->held, entries, pp);
        if (__atomic_load_n(&L->waiters, __ATOMIC_ACQUIRE)) {
            pthread_mutex_lock(&L->res_mu);
            pthread_cond_broadcast(&L->res_cv);
            pthread_mutex_unlock(&L->res_mu);
        }
    }
    u->parts = NULL;
    u->held = 0;
    u->reserved = 0;
}

/* ---- replay ------------------------------------------------------------------------ */

/* The newest header of one area as md's ppl_load_distributed finds it:
 * headers chained from the start (each followed by its partial parity),
 * while their checksums, signatures and generations hold. Returns its
 * offset in bytes, or -1 when the first is not valid; chain[0..*n) gets
 * the offsets of the chain's headers, oldest first. */
static int64_t newest_header(const uint8_t *area, uint64_t bytes, uint32_t signature, struct ppl_header *out,
                             int64_t *chain, int *n)
{
    struct ppl_header *h = malloc(sizeof *h);
    int64_t best = -1;
    uint64_t off = 0;
    *n = 0;
    while (h && off + PPL_HEADER_BYTES <= bytes) {
        if (ppl_header_decode(area + off, h, NULL, 0) || h->signature != signature ||
            (best >= 0 && out->generation > h->generation))
            break;
        *out = *h;
        best = (int64_t)off;
        chain[(*n)++] = best;
        uint64_t next = off + PPL_HEADER_BYTES;
        for (uint32_t i = 0; i < h->entries_count; i++)
            next += h->entry[i].pp_size;
        if (next <= off || next % SECTOR)
            break;
        off = next;
    }
    free(h);
    return best;
}

/* Entry i of the newest header h, whose partial parity did not land whole
 * (a kill or a power cut in that log write): a unit in flight is listed
 * again by every header written on its member while its writes are out,
 * so if its writes started, an earlier header of the chain, written whole
 * before they went out, holds the same entry with its partial parity
 * whole. Returns that copy, or NULL: the entry is new in this header, so
 * none of its writes was issued and its stripe is as it was. */
static const uint8_t *earlier_pp(const uint8_t *area, uint64_t bytes, const int64_t *chain, int n,
                                 const struct ppl_header *h, uint32_t i)
{
    const struct ppl_entry *e = &h->entry[i];
    struct ppl_header *o = malloc(sizeof *o);
    const uint8_t *found = NULL;
    for (int c = n - 2; c >= 0 && o && !found; c--) {
        if (ppl_header_decode(area + chain[c], o, NULL, 0))
            continue;
        uint64_t pp = (uint64_t)chain[c] + PPL_HEADER_BYTES;
        for (uint32_t j = 0; j < o->entries_count && !found && pp + o->entry[j].pp_size <= bytes; j++) {
            const struct ppl_entry *x = &o->entry[j];
            if (x->data_sector == e->data_sector && x->pp_size == e->pp_size && x->data_size == e->data_size &&
                x->parity_disk == e->parity_disk && x->checksum == e->checksum && o->folded[j] == h->folded[i] &&
                ppl_crc32c(area + pp, x->pp_size) == e->checksum)
                found = area + pp;
            pp += x->pp_size;
        }
    }
    free(o);
    return found;
}

/* md's ppl_recover_entry for entry e of the log on slot s: for every row
 * the entry covers whose modified blocks can all be read, parity = the
 * partial parity (if any) ^ those blocks as they are now. A row with a
 * modified block on a missing member is skipped, as md skips it, unless
 * that block is the entry's folded one (slot fold - 1): its new data is in
 * the partial parity, so the row's parity then makes it read back new,
 * whichever of the other blocks and of P reached the disks. Returns 0, or
 * 1 when a read or the parity write failed. */
static int recover_entry(struct uraid_array *a, int s, const struct ppl_entry *e, const struct ppl_entry_geom *g,
                         const uint8_t *pp, int fold)
{
    uint32_t c = a->geom.chunk_sectors, k = (uint32_t)a->k;
    uint64_t stripe = g->first / ((uint64_t)k * c), msec = stripe * c + g->first % c;
    uint32_t d0 = (uint32_t)((g->first / c) % k), rows = g->strip_sectors;
    struct stripe_map map;
    if (layout_stripe(&a->geom, stripe, &map) || map.p_disk != s)
        return 1;
    uint32_t lim[PPL_MAX_SLOTS];
    size_t len = (size_t)rows * SECTOR;
    uint8_t *mem = aligned_alloc(4096, ((g->data_disks + 1) * len + 4095) / 4096 * 4096); /* C11: a multiple */
    unsigned char *ok = calloc(rows, 1);
    struct io_op ops[PPL_MAX_SLOTS];
    int skipped = 0, nops = 0;
    if (!mem || !ok) {
        free(mem);
        free(ok);
        return -ENOMEM;
    }
    int opd[PPL_MAX_SLOTS];
    memset(ok, 1, rows);
    memset(mem, 0, (g->data_disks + 1) * len);
    for (uint32_t d = 0; d < g->data_disks; d++) {
        uint64_t at = g->first + (uint64_t)d * c;
        lim[d] = at >= g->last ? 0 : g->last - at < rows ? (uint32_t)(g->last - at) : rows;
        int m = map.data_disk[d0 + d];
        if (!lim[d] || m == fold - 1)
            continue;
        if (!slot_ok_upto(a, m, msec + lim[d])) {
            memset(ok, 0, lim[d]);
            continue;
        }
        opd[nops] = (int)d;
        ops[nops++] = array_op(a, m, IO_READ, mem + (d + 1) * len, lim[d], msec);
    }
    array_run_ops(a, ops, nops);
    for (int i = 0; i < nops; i++)
        if (ops[i].result) {
            memset(ok, 0, lim[opd[i]]);
            skipped = 1;
        }
    uint8_t *par = mem;
    if (e->pp_size)
        memcpy(par, pp, len);
    else
        memset(par, 0, len);
    for (uint32_t d = 0; d < g->data_disks; d++)
        for (size_t b = 0; b < (size_t)lim[d] * SECTOR; b++)
            par[b] ^= mem[(d + 1) * len + b];
    for (uint32_t i = 0; i < rows;) {
        uint32_t j = i;
        while (j < rows && ok[j] == ok[i] && (j < lim[0]) == (i < lim[0]))
            j++;
        if (ok[i] && i < lim[0]) {
            struct io_op w = array_op(a, s, IO_WRITE, par + (size_t)i * SECTOR, j - i, msec + i);
            array_run_ops(a, &w, 1);
            skipped |= w.result != 0;
        }
        i = j;
    }
    free(mem);
    free(ok);
    return skipped;
}

/* Slot s's log: read whole, its newest header's entries checked and (with
 * apply) replayed. */
static int replay_member(struct uraid_array *a, int s, int apply, int *mismatch, int *recovered)
{
    struct ppl_log *L = a->ppl;
    struct member *dev = a->slot[s].dev;
    uint64_t bytes = (uint64_t)L->m[s].sectors * SECTOR;
    uint8_t *area = aligned_alloc(4096, bytes);
    struct ppl_header *h = malloc(sizeof *h);
    int64_t *chain = malloc((bytes / PPL_HEADER_BYTES + 1) * sizeof *chain);
    int nchain = 0;
    int rc = area && h && chain ? member_read(dev, area, bytes, L->m[s].start * SECTOR) : -ENOMEM;
    if (rc) {
        uraid_log(URAID_LOG_ERROR, "member %s: cannot read its PPL at sector %llu: %s", dev->path,
                  (unsigned long long)L->m[s].start, uraid_strerror(rc));
        goto out;
    }
    int64_t at = newest_header(area, bytes, L->signature, h, chain, &nchain);
    if (at < 0) {
        uraid_log(URAID_LOG_WARN, "member %s: no valid PPL header at sector %llu", dev->path,
                  (unsigned long long)L->m[s].start);
        (*mismatch)++;
        goto out;
    }
    uint64_t pp = (uint64_t)at + PPL_HEADER_BYTES;
    for (uint32_t i = 0; i < h->entries_count && rc >= 0; i++) {
        const struct ppl_entry *e = &h->entry[i];
        struct ppl_entry_geom g;
        int bad = pp + e->pp_size > bytes || e->parity_disk != (uint32_t)s ||
                  ppl_entry_geom(e, a->geom.chunk_sectors, a->k, &g) || g.first >= a->size_sectors;
        const uint8_t *ppd = area + pp;
        if (!bad && ppl_crc32c(ppd, e->pp_size) != e->checksum)
            ppd = earlier_pp(area, bytes, chain, nchain, h, i);
        if (!bad && !ppd) {
            uraid_log(URAID_LOG_INFO, "member %s: PPL entry %u (array sector %llu): partial parity not written "
                      "whole, so its write never started; nothing to replay", dev->path, i,
                      (unsigned long long)e->data_sector);
        } else if (bad) {
            uraid_log(URAID_LOG_WARN, "member %s: PPL entry %u (array sector %llu) is damaged or does not fit the "
                      "array; not replayed", dev->path, i, (unsigned long long)e->data_sector);
            (*mismatch)++;
        } else if (apply) {
            rc = recover_entry(a, s, e, &g, ppd, h->folded[i]);
            *mismatch += rc > 0;
            *recovered += rc == 0;
        } else {
            (*recovered)++;
        }
        pp += e->pp_size;
    }
    if (rc > 0)
        rc = 0;
    if (rc == 0 && apply)
        rc = member_flush(dev);
out:
    free(area);
    free(h);
    free(chain);
    return rc;
}

int ppl_replay(struct uraid_array *a, int apply, int *mismatch, int *recovered)
{
    *mismatch = *recovered = 0;
    int rc = 0;
    for (int s = 0; a->ppl && s < a->geom.raid_disks && rc == 0; s++)
        if (a->slot[s].dev && slot_ok(a, s))
            rc = replay_member(a, s, apply, mismatch, recovered);
    return rc;
}
