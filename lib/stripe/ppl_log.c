/* The PPL's log writes (ppl_int.h: ppl_write_logs): a unit's parts
 * linked into the logs it needs, and headers written until every log lists
 * them, as md's ppl_submit_iounit writes an io_unit's header before the
 * stripes' member writes. Each log is written by one writer at a time
 * (ppl_member.mu), its headers chained one after another in the area. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"
#include "meta/ppl.h"
#include "stripe/ppl_int.h"

/* A part of the list is in a header on disk and its unit's member writes
 * may be out. Under list_mu. A part whose unit still waits for another
 * log has no write out, and it does not go out while the header that
 * starts the area over is being written (m->restarting, parts_out): if
 * that header tears, the unit never writes. */
static int any_written(const struct ppl_member *m)
{
    for (const struct ppl_part *p = m->inflight; p; p = p->next)
        if (p->out && p->seq <= m->written_seq)
            return 1;
    return 0;
}

/* Slot s's header listing every part in flight there, then their partial
 * parity, written with FUA; part `seq` is then on disk. Writers queue
 * on m->mu: one that finds its part already written by the writer before
 * it (which listed it) writes nothing, so under load one header write
 * serves several units (md's io_unit gathers stripes the same way).
 *
 * Each header goes after the previous one (md's chain of headers, which
 * its recovery walks to the newest): a power cut that tears a header then
 * leaves the previous one whole, and it lists every unit whose writes are
 * out. The chain restarts at the area's start when the area is used up;
 * a torn header there would break the chain, so it is written only once
 * no unit listed before has writes out, and no unit it lists sends its
 * writes until it is on disk (m->restarting, parts_out: such a unit may
 * have found its part here written and be waiting for another log). The
 * units with writes out are waited for with the log
 * let go (a unit whose part another writer's header listed takes it only
 * to see so); each is past this log, and the logs are taken lowest slot
 * first, so they finish. Returns with m->mu and m->list_mu held, 1 when
 * part `seq` is on disk already, and the header's place and partial
 * parity bytes; with try set, -EBUSY (nothing held) instead of waiting. */
static int claim_log(struct ppl_log *L, int s, uint64_t seq, int try, uint64_t *off, uint64_t *pp)
{
    struct ppl_member *m = &L->m[s];
    uint64_t area = (uint64_t)m->sectors * SECTOR;
    for (;;) {
        if (!try)
            pthread_mutex_lock(&m->mu);
        else if (pthread_mutex_trylock(&m->mu))
            return -EBUSY;
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
        /* lingering parts leave (their members flushed before this header) */
        struct ppl_part *gone = NULL;
        ppl_sweep(L, m, 1, &gone);
        ppl_free_swept(L, s, gone);
        if (!any_written(m)) {
            *off = 0;
            m->restarting = 1; /* until finish_header: parts_out waits */
            return 0;
        }
        pthread_mutex_unlock(&m->mu);
        if (try) {
            pthread_mutex_unlock(&m->list_mu);
            return -EBUSY;
        }
        m->wrapping++;
        while (any_written(m) && m->written_seq < seq) {
            pthread_cond_wait(&m->departed, &m->list_mu);
            gone = NULL; /* parts pinned before may linger now */
            ppl_sweep(L, m, 1, &gone);
            ppl_free_swept(L, s, gone);
        }
        m->wrapping--;
        pthread_mutex_unlock(&m->list_mu);
    }
}

/* One log write of a unit's batch (write_logs): prepared with its
 * member's log held, which stays held until the write is done. */
struct log_write {
    int s;
    uint64_t off, upto, departed;
    size_t len;
    uint8_t *buf;
};

/* What a batch's headers need flushed first: the members that departed
 * parts wrote (a power cut must not leave an unflushed write that no log
 * covers), and per member the flush number that covers them. */
struct departed {
    uint64_t todo;
    uint64_t need[PPL_MAX_SLOTS];
};

/* Slot s's header listing every part in flight there, then their partial
 * parity, into w->buf. Returns 1 when prepared (the log stays held), 0
 * when part `seq` is on disk already (a header another writer wrote
 * listed it), or a negative errno (nothing held; -EBUSY: the log is busy
 * and try was set). */
static int prepare_header(struct uraid_array *a, int s, uint64_t seq, struct log_write *w, int try,
                          struct departed *d)
{
    struct ppl_log *L = a->ppl;
    struct ppl_member *m = &L->m[s];
    uint64_t pp;
    int c = claim_log(L, s, seq, try, &w->off, &pp);
    if (c < 0)
        return c;
    if (c) {
        pthread_mutex_unlock(&m->list_mu);
        pthread_mutex_unlock(&m->mu);
        return 0;
    }
    struct ppl_part *gone = NULL;
    ppl_sweep(L, m, 0, &gone);
    /* the header's length is what it lists after every sweep (claim_log's
     * at the area's restart too): md finds the next header at this one's
     * offset + 4 KiB + its entries' pp_size */
    pp = 0;
    for (struct ppl_part *p = m->inflight; p; p = p->next)
        pp += p->pp_bytes;
    struct ppl_header *h = calloc(1, sizeof *h);
    w->s = s;
    w->upto = m->link_seq;
    w->len = PPL_HEADER_BYTES + (size_t)pp;
    w->buf = h ? aligned_alloc(4096, (w->len + 4095) / 4096 * 4096) : NULL;
    uint8_t *at = w->buf + PPL_HEADER_BYTES;
    for (struct ppl_part *p = m->inflight; p && w->buf; p = p->next) {
        memcpy(&h->entry[h->entries_count], p->e, p->nentries * sizeof p->e[0]);
        for (uint32_t i = 0; i < p->nentries; i++) {
            h->folded[h->entries_count + i] = p->folded[2 * i];
            h->folded2[h->entries_count + i] = p->folded[2 * i + 1];
        }
        h->entries_count += p->nentries;
        memcpy(at, p->pp, p->pp_bytes);
        at += p->pp_bytes;
    }
    if (w->buf) {
        /* slots a flush since (the flusher's, most often) has covered are left out */
        w->departed = ppl_flush_todo(L, m, d->need);
        d->todo |= w->departed;
        m->unflushed = 0;
        ppl_left_composed(m);
    }
    pthread_mutex_unlock(&m->list_mu);
    ppl_free_swept(L, s, gone);
    int rc = w->buf ? 0 : -ENOMEM;
    if (rc == 0) {
        h->signature = L->signature;
        h->generation = __atomic_add_fetch(&L->generation, 1, __ATOMIC_RELAXED);
        rc = ppl_header_encode(h, w->buf);
    }
    free(h);
    if (rc) {
        pthread_mutex_lock(&m->list_mu);
        if (w->buf) {
            m->unflushed |= w->departed;
            ppl_left_written(m, 0);
        }
        if (w->off == 0 && m->restarting) {
            m->restarting = 0;
            pthread_cond_broadcast(&m->departed);
        }
        pthread_mutex_unlock(&m->list_mu);
        pthread_mutex_unlock(&m->mu);
        free(w->buf);
        return rc;
    }
    return 1;
}

/* The log write w done with result rc: its parts are on disk (or, on a
 * failure, the members to flush are kept for the next header); the log
 * is let go. */
static void finish_header(struct uraid_array *a, struct log_write *w, int rc)
{
    struct ppl_member *m = &a->ppl->m[w->s];
    if (rc && rc != -ECANCELED)
        uraid_log(URAID_LOG_ERROR, "member %s: cannot write its PPL at sector %llu: %s", a->slot[w->s].dev->path,
                  (unsigned long long)(m->start + w->off / SECTOR), uraid_strerror(rc));
    pthread_mutex_lock(&m->list_mu);
    if (rc == 0) {
        m->written_seq = w->upto; /* claim_log's waiters read it under list_mu */
        pthread_cond_broadcast(&m->departed);
        m->next_off = w->off + w->len;
    } else {
        m->unflushed |= w->departed;
    }
    ppl_left_written(m, rc == 0);
    if (w->off == 0 && m->restarting) {
        m->restarting = 0;
        pthread_cond_broadcast(&m->departed);
    }
    pthread_mutex_unlock(&m->list_mu);
    pthread_mutex_unlock(&m->mu);
    free(w->buf);
}

/* The batch w[0..nw) written side by side with FUA, after the members
 * that departed parts wrote are flushed; each log let go. A FUA write (md
 * writes its PPL with REQ_FUA) makes only itself durable: one request
 * instead of a write and a flush, and it is counted as no flush
 * (ppl_flush.c), so the departed writes still need their flushes. */
/* Zeros the size of a header, for wipe_restarts (only ever read). */
static uint8_t zero_header[PPL_HEADER_BYTES] __attribute__((aligned(4096)));

/* Before a header that starts an area over: the header at the area's
 * start (the first of the chain being overwritten) wiped, with FUA. A cut
 * that tore the new header could otherwise drop all its header sectors
 * and keep the ones after them: the old first header would stay sound,
 * the one after it torn, and replay would take that old header for the
 * newest and replay its entries, whose partial parity the writes since
 * (listed in the headers the tear cut off) have made stale: a RAID-6
 * missing a member lost sectors so (docs/CRASH.md, session 14). With the
 * old header gone, a torn restart reads as one (restart_torn: no write
 * out, nothing to replay). Returns 0 or the first failure. */
static int wipe_restarts(struct uraid_array *a, const struct log_write *w, int nw)
{
    struct ppl_log *L = a->ppl;
    struct io_op ops[PPL_MAX_SLOTS];
    int n = 0, rc = 0;
    for (int i = 0; i < nw; i++)
        if (w[i].off == 0)
            ops[n++] = (struct io_op){.m = a->slot[w[i].s].dev, .kind = IO_WRITE, .buf = zero_header,
                                      .len = PPL_HEADER_BYTES, .offset = L->m[w[i].s].start * SECTOR, .fua = 1};
    if (n)
        io_engine_run(a->io, ops, n);
    for (int i = 0; i < n && rc == 0; i++)
        rc = ops[i].result;
    return rc;
}

static int run_batch(struct uraid_array *a, struct log_write *w, int nw, struct departed *d)
{
    struct ppl_log *L = a->ppl;
    struct io_op ops[PPL_MAX_SLOTS];
    int rc = 0;
    if (!nw)
        return 0;
    ppl_flush_departed(a, d->todo, d->need);
    d->todo = 0;
    /* the departed units' writes are durable before the headers that
     * listed them are wiped */
    rc = wipe_restarts(a, w, nw);
    if (rc) {
        for (int i = 0; i < nw; i++)
            finish_header(a, &w[i], rc);
        return rc;
    }
    for (int i = 0; i < nw; i++)
        ops[i] = (struct io_op){.m = a->slot[w[i].s].dev, .kind = IO_WRITE, .buf = w[i].buf, .len = w[i].len,
                                .offset = L->m[w[i].s].start * SECTOR + w[i].off, .fua = 1};
    io_engine_run(a->io, ops, nw);
    for (int i = 0; i < nw; i++) {
        rc = rc ? rc : ops[i].result;
        finish_header(a, &w[i], ops[i].result);
    }
    return rc;
}

/* The unit's parts, linked into every log it needs at once, so that a
 * writer of one of those logs now or next lists them too (group commit:
 * a unit queued behind a busy log usually finds its part written by the
 * header before its turn). Parts are not "out" yet (any_written). */
static struct ppl_part *part_of(struct ppl_unit *u, int s)
{
    struct ppl_part *part = u->parts;
    while (part && part->slot != s)
        part = part->unit_next;
    return part;
}

static void link_parts(struct ppl_log *L, struct ppl_unit *u)
{
    for (struct ppl_part *part = u->parts; part; part = part->unit_next) {
        struct ppl_member *m = &L->m[part->slot];
        pthread_mutex_lock(&m->list_mu);
        part->seq = ++m->link_seq;
        part->next = m->inflight;
        m->inflight = part;
        pthread_mutex_unlock(&m->list_mu);
    }
}

/* Every log written: the unit's member writes may go out. */
static void parts_out(struct ppl_log *L, struct ppl_unit *u)
{
    for (struct ppl_part *part = u->parts; part; part = part->unit_next) {
        struct ppl_member *m = &L->m[part->slot];
        pthread_mutex_lock(&m->list_mu);
        /* A header that starts this area over is being written: it lists
         * this part, but it overwrites the headers that listed it before,
         * and claim_log let it start because this unit had no write out
         * (any_written). Were the unit's writes to go out now and that
         * header tear, replay would find no sound header at the area's
         * start and replay nothing here (restart_torn), nor the other
         * parity's folded entries of this unit: a RAID-6 missing a member
         * lost a whole chunk so (docs/CRASH.md, session 14). So the unit
         * waits for it; the writer holds no other log while it writes it
         * (ppl_write_logs), so it ends. */
        if (m->restarting)
            uraid_log(URAID_LOG_DEBUG, "ppl: a unit waits for the header restarting slot %d's log", part->slot);
        while (m->restarting)
            pthread_cond_wait(&m->departed, &m->list_mu);
        part->out = 1;
        pthread_cond_broadcast(&m->departed); /* units waiting for a lister (ppl_ahead.c) */
        pthread_mutex_unlock(&m->list_mu);
    }
}

/* A part of stripes ahead only (none the unit writes has its parity on
 * this log) whose log is busy: taken out rather than waited for. It only
 * saves later units a log write (ppl_ahead.c), and nothing pins it yet
 * (its unit is not out). A header another writer made meanwhile may list
 * it: whole entries of stripes nobody writes cost replay time only. */
static void drop_ahead(struct ppl_log *L, struct ppl_unit *u, struct ppl_part *part)
{
    struct ppl_member *m = &L->m[part->slot];
    pthread_mutex_lock(&m->list_mu);
    struct ppl_part **link = ppl_link_of(m, part);
    if (link)
        *link = part->next;
    pthread_cond_broadcast(&m->departed);
    pthread_mutex_unlock(&m->list_mu);
    for (struct ppl_part **pp = &u->parts; *pp; pp = &(*pp)->unit_next)
        if (*pp == part) {
            *pp = part->unit_next;
            break;
        }
    __atomic_sub_fetch(&m->entries, part->nentries, __ATOMIC_ACQ_REL);
    u->held &= ~(1ull << part->slot);
    free(part);
    ppl_wake_reservers(L);
}

/* The batch so far written (rc 0), or let go unwritten (rc set); *nw 0 after. */
static int end_batch(struct uraid_array *a, struct log_write *w, int *nw, struct departed *d, int rc)
{
    if (rc == 0)
        rc = run_batch(a, w, *nw, d);
    else
        for (int i = 0; i < *nw; i++)
            finish_header(a, &w[i], -ECANCELED);
    *nw = 0;
    return rc;
}

/* The unit's parts linked into their logs (link_parts), then every log
 * that does not list them yet written: first every log free now, as one
 * batch (P's and Q's logs of a RAID-6 stripe side by side); then the logs
 * that were busy, lowest slot first, each waited for only with nothing
 * held, the free ones after it joining its batch; a busy log the unit
 * needs only for stripes ahead is not waited for (drop_ahead). By then
 * the busy logs' writers have often listed the unit's parts, linked
 * before their headers were made. No writer holds one log while it waits for another (RAID-6
 * units, which need two, would otherwise queue behind each other). All
 * before any data or parity write of the unit. */
int ppl_write_logs(struct uraid_array *a, struct ppl_unit *u)
{
    struct ppl_log *L = a->ppl;
    struct log_write w[PPL_MAX_SLOTS];
    int nw = 0, rc = 0;
    uint64_t busy = 0;
    struct departed d = {0};
    link_parts(L, u);
    for (struct ppl_part *part = u->parts; part && rc == 0; part = part->unit_next) {
        int r = prepare_header(a, part->slot, part->seq, &w[nw], 1, &d);
        if (r == -EBUSY)
            busy |= 1ull << part->slot;
        else if (r < 0)
            rc = r;
        else
            nw += r;
    }
    rc = end_batch(a, w, &nw, &d, rc);
    for (int s = 0; s < PPL_MAX_SLOTS && rc == 0 && busy >> s; s++) {
        if (!(busy >> s & 1))
            continue;
        struct ppl_part *part = part_of(u, s);
        if (!part->written) {
            drop_ahead(L, u, part);
            continue;
        }
        uint64_t seq = part->seq;
        int r = prepare_header(a, s, seq, &w[nw], nw > 0, &d);
        if (r == -EBUSY) {
            rc = end_batch(a, w, &nw, &d, 0);
            r = rc ? rc : prepare_header(a, s, seq, &w[nw], 0, &d);
        }
        if (r < 0)
            rc = r;
        else
            nw += r;
    }
    rc = end_batch(a, w, &nw, &d, rc);
    if (rc == 0)
        parts_out(L, u);
    return rc;
}
