#include "crash_workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MAGIC 0x7572616964637273ull /* "uraidcrs" */

/* ---- the journal ------------------------------------------------------------------------ */

void cw_journal_init(struct cw_journal *j, int fd)
{
    memset(j, 0, sizeof *j);
    j->fd = fd;
    pthread_mutex_init(&j->lock, NULL);
}

void cw_journal_free(struct cw_journal *j)
{
    free(j->v);
    j->v = NULL;
    j->n = j->cap = 0;
    pthread_mutex_destroy(&j->lock);
}

static int append(struct cw_journal *j, const struct cw_rec *r)
{
    if (j->n == j->cap) {
        size_t cap = j->cap ? 2 * j->cap : 1024;
        struct cw_rec *v = realloc(j->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        j->v = v;
        j->cap = cap;
    }
    j->v[j->n++] = *r;
    return 0;
}

int cw_journal_add(struct cw_journal *j, const struct cw_rec *r) { return append(j, r); }

size_t cw_journal_mark(struct cw_journal *j)
{
    pthread_mutex_lock(&j->lock);
    size_t n = j->n;
    pthread_mutex_unlock(&j->lock);
    return n;
}

void cw_journal_cut(struct cw_journal *j, size_t n)
{
    if (n < j->n)
        j->n = n;
}

/* Records r under the journal's lock; ISSUE and FLUSH_START get the next id.
 * Returns the id. */
static uint32_t put(struct cw_journal *j, struct cw_rec r)
{
    pthread_mutex_lock(&j->lock);
    if (r.type == CW_ISSUE)
        r.id = ++j->next_write;
    else if (r.type == CW_FLUSH_START)
        r.id = ++j->next_flush;
    if (j->fd >= 0) {
        /* one write(2) of 24 bytes down a pipe is atomic (PIPE_BUF) */
        ssize_t w = write(j->fd, &r, sizeof r);
        (void)w;
    } else {
        append(j, &r);
    }
    pthread_mutex_unlock(&j->lock);
    return r.id;
}

/* ---- sector contents -------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void cw_sector(uint64_t seed, uint32_t id, uint64_t sector, uint8_t *out)
{
    uint64_t head[3] = {MAGIC ^ seed, id, sector};
    memcpy(out, head, sizeof head);
    struct rng r;
    rng_seed(&r, mix64(seed ^ mix64(((uint64_t)id << 40) ^ sector)));
    rng_fill(&r, out + sizeof head, CW_SECTOR - sizeof head);
}

/* The write id `got` claims to be for `sector`, -1 when it is no sector of
 * this trial at all (garbage, another sector's data, a torn sector). */
static int64_t decode(uint64_t seed, uint64_t sector, const uint8_t *got, uint8_t *scratch)
{
    uint64_t head[3];
    memcpy(head, got, sizeof head);
    if (head[0] != (MAGIC ^ seed) || head[2] != sector || head[1] > UINT32_MAX)
        return -1;
    cw_sector(seed, (uint32_t)head[1], sector, scratch);
    return memcmp(scratch, got, CW_SECTOR) ? -1 : (int64_t)head[1];
}

int cw_fill_base(struct uraid_array *a, uint64_t seed, uint64_t size, uint64_t stripe)
{
    uint64_t step = stripe * ((1u << 20) / stripe ? (1u << 20) / stripe : 1);
    uint8_t *buf = aligned_alloc(4096, step);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    for (uint64_t off = 0; off < size && !rc; off += step) {
        uint64_t len = size - off < step ? size - off : step;
        for (uint64_t s = 0; s < len / CW_SECTOR; s++)
            cw_sector(seed, 0, off / CW_SECTOR + s, buf + s * CW_SECTOR);
        rc = uraid_write(a, buf, len, off);
    }
    free(buf);
    return rc;
}

/* ---- the writers ------------------------------------------------------------------------ */

struct shared {
    const struct cw_params *p;
    struct cw_journal *j;
    pthread_mutex_t claim;
    uint8_t *busy; /* per array sector, under claim */
    uint64_t stream_at; /* atomic: the shared stream's next offset (pick's case 4) */
};

struct writer {
    struct shared *sh;
    int t;
    int acked;
};

/* A write of a random shape: 4 KiB, a chunk, part of a stripe, whole
 * stripes, or (half of them) the next 3/4 stripe of one stream the writers share (so
 * several of its requests are in flight at once and their partial stripes
 * are gathered whole, stripe/gather.c). */
static void pick(struct shared *sh, struct rng *r, uint64_t *off, uint64_t *len)
{
    const struct cw_params *p = sh->p;
    uint64_t stripes = p->size / p->stripe, ssec = p->stripe / CW_SECTOR;
    unsigned in8 = p->stream_in8 ? p->stream_in8 : 4;
    uint64_t v = rng_below(r, 8);
    if (v >= 8 - in8) { /* the stream (4..7 by default) */
        if (p->stream_random)
            *len = (1 + rng_below(r, 2 * p->stripe / 4096)) * 4096;
        else
            *len = p->stream_piece ? p->stream_piece : (ssec * 3 / 4 ? ssec * 3 / 4 : 1) * CW_SECTOR;
        uint64_t span = p->stream_random ? p->size : p->size / *len * *len; /* whole pieces only */
        *off = __atomic_fetch_add(&sh->stream_at, *len, __ATOMIC_RELAXED) % span;
        if (*off + *len > p->size)
            *off = 0; /* a random piece past the end starts the stream over */
        return;
    }
    switch (v) {
    case 0:
        *len = 4096;
        *off = rng_below(r, p->size / 4096) * 4096;
        break;
    case 1:
        *len = p->chunk;
        *off = rng_below(r, p->size / p->chunk) * p->chunk;
        break;
    case 2: {
        uint64_t first = rng_below(r, ssec), n = 1 + rng_below(r, ssec - first);
        if (first == 0 && n == ssec)
            n--; /* partial: never the whole stripe */
        if (!n)
            n = 1;
        *off = rng_below(r, stripes) * p->stripe + first * CW_SECTOR;
        *len = n * CW_SECTOR;
        break;
    }
    default: {
        uint64_t n = stripes > 1 ? 1 + rng_below(r, 2) : 1, s = rng_below(r, stripes - n + 1);
        *off = s * p->stripe;
        *len = n * p->stripe;
    }
    }
}

/* Claims [off, off + len) if no write in flight covers any of it. */
static int claim(struct shared *sh, uint64_t off, uint64_t len, int take)
{
    uint64_t s0 = off / CW_SECTOR, n = len / CW_SECTOR;
    pthread_mutex_lock(&sh->claim);
    int free_ = 1;
    for (uint64_t s = 0; take && s < n && free_; s++)
        free_ = !sh->busy[s0 + s];
    if (free_)
        memset(sh->busy + s0, take ? 1 : 0, n);
    pthread_mutex_unlock(&sh->claim);
    return free_;
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct shared *sh = w->sh;
    const struct cw_params *p = sh->p;
    struct rng r;
    rng_seed(&r, mix64((p->pick_seed ? p->pick_seed : p->seed) ^ (uint64_t)(w->t + 1) * 0x51ed27ull));
    uint8_t *buf = aligned_alloc(4096, 2 * p->stripe + p->chunk);
    for (int i = 0; buf && i < p->writes_per_thread; i++) {
        uint64_t off, len;
        int tries = 0;
        do {
            pick(sh, &r, &off, &len);
            if (++tries % 16 == 0)
                sched_yield();
        } while (!claim(sh, off, len, 1));
        uint32_t id = put(sh->j, (struct cw_rec){.type = CW_ISSUE, .off = off, .len = (uint32_t)len});
        for (uint64_t s = 0; s < len / CW_SECTOR; s++)
            cw_sector(p->seed, id, off / CW_SECTOR + s, buf + s * CW_SECTOR);
        int rc = uraid_write(p->a, buf, len, off);
        if (rc == 0) {
            put(sh->j, (struct cw_rec){.type = CW_ACK, .id = id});
            w->acked++;
        }
        claim(sh, off, len, 0);
        if (rc)
            break;
        if (p->flush_one_in && rng_below(&r, p->flush_one_in) == 0) {
            uint32_t fid = put(sh->j, (struct cw_rec){.type = CW_FLUSH_START});
            if (uraid_flush(p->a))
                break;
            put(sh->j, (struct cw_rec){.type = CW_FLUSH_DONE, .id = fid});
        }
    }
    free(buf);
    return NULL;
}

int cw_run(const struct cw_params *p, struct cw_journal *j)
{
    struct shared sh = {.p = p, .j = j, .busy = calloc(1, p->size / CW_SECTOR)};
    struct writer w[16];
    pthread_t th[16];
    int n = p->threads < 16 ? p->threads : 16, acked = 0;
    if (!sh.busy)
        return -ENOMEM;
    pthread_mutex_init(&sh.claim, NULL);
    for (int t = 0; t < n; t++) {
        w[t] = (struct writer){.sh = &sh, .t = t};
        pthread_create(&th[t], NULL, writer_main, &w[t]);
    }
    for (int t = 0; t < n; t++) {
        pthread_join(th[t], NULL);
        acked += w[t].acked;
    }
    put(j, (struct cw_rec){.type = CW_END});
    pthread_mutex_destroy(&sh.claim);
    free(sh.busy);
    return acked;
}

/* ---- the judge -------------------------------------------------------------------------- */

struct wmeta {
    uint64_t off, len, issue_pos, ack_pos;
};

#define NONE UINT64_MAX

static void note_bad(struct cw_verdict *v, uint64_t s, const char *kind, int64_t id)
{
    if (v->first_bad_sector != UINT64_MAX)
        return;
    v->first_bad_sector = s;
    char held[48];
    if (id < 0)
        snprintf(held, sizeof held, "no write of this trial");
    else if (id == 0)
        snprintf(held, sizeof held, "its value from before the trial");
    else
        snprintf(held, sizeof held, "write %lld", (long long)id);
    snprintf(v->first_bad, sizeof v->first_bad, "%s at array sector %llu (it holds %s)", kind, (unsigned long long)s,
             held);
}

/* From the journal: per write its range and positions, per sector the
 * issue position of its last durable write (NONE) and whether any write
 * touched it. Returns the number of writes, or -ENOMEM. */
static int64_t model(const struct cw_journal *j, uint64_t nsec, struct wmeta **wm_out, uint64_t *dpos,
                     uint8_t *touched, struct cw_verdict *v)
{
    uint64_t nw = 0, nf = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (j->v[i].type == CW_ISSUE && j->v[i].id > nw)
            nw = j->v[i].id;
        if (j->v[i].type == CW_FLUSH_START && j->v[i].id > nf)
            nf = j->v[i].id;
    }
    struct wmeta *wm = calloc(nw + 1, sizeof *wm);
    uint64_t *fstart = calloc(nf + 1, sizeof *fstart);
    if (!wm || !fstart) {
        free(wm);
        free(fstart);
        return -ENOMEM;
    }
    uint64_t durable_cut = 0; /* writes acknowledged before this position are durable */
    for (size_t i = 0; i < j->n; i++) {
        const struct cw_rec *r = &j->v[i];
        if (r->type == CW_ISSUE) {
            wm[r->id] = (struct wmeta){.off = r->off, .len = r->len, .issue_pos = i, .ack_pos = NONE};
            v->writes_issued++;
        } else if (r->type == CW_ACK && r->id <= nw) {
            wm[r->id].ack_pos = i;
            v->writes_acked++;
        } else if (r->type == CW_FLUSH_START && r->id <= nf) {
            fstart[r->id] = i;
        } else if (r->type == CW_FLUSH_DONE && r->id <= nf) {
            if (fstart[r->id] > durable_cut)
                durable_cut = fstart[r->id];
            v->flushes_done++;
        }
    }
    for (uint64_t s = 0; s < nsec; s++)
        dpos[s] = NONE;
    /* issue order is each sector's write order: a sector is claimed until its write is acknowledged */
    for (size_t i = 0; i < j->n; i++) {
        const struct cw_rec *r = &j->v[i];
        if (r->type != CW_ISSUE)
            continue;
        const struct wmeta *w = &wm[r->id];
        int durable = w->ack_pos != NONE && w->ack_pos < durable_cut;
        v->writes_durable += durable;
        for (uint64_t s = w->off / CW_SECTOR; s < (w->off + w->len) / CW_SECTOR && s < nsec; s++) {
            touched[s] = 1;
            if (durable)
                dpos[s] = w->issue_pos;
        }
    }
    free(fstart);
    *wm_out = wm;
    return (int64_t)nw;
}

static void judge_sector(uint64_t seed, uint64_t s, const uint8_t *got, uint8_t *scratch, const struct wmeta *wm,
                         int64_t nw, uint64_t dpos, int touched, struct cw_verdict *v)
{
    int64_t id = decode(seed, s, got, scratch);
    int covers = id > 0 && id <= nw && wm[id].len && s >= wm[id].off / CW_SECTOR &&
                 s < (wm[id].off + wm[id].len) / CW_SECTOR;
    if (!touched) {
        if (id != 0) {
            v->damaged_sectors++;
            note_bad(v, s, "an untouched sector damaged", id);
        }
    } else if (dpos != NONE) {
        if (!covers || wm[id].issue_pos < dpos) {
            v->lost_sectors++;
            note_bad(v, s, "durable data lost", id);
        }
    } else if (id != 0 && !covers) {
        v->bad_sectors++;
        note_bad(v, s, "a written sector holds neither its old value nor a write's", id);
    }
}

int cw_judge(struct uraid_array *a, uint64_t seed, uint64_t size, const struct cw_journal *j, struct cw_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->first_bad_sector = UINT64_MAX;
    uint64_t nsec = size / CW_SECTOR, piece = 64u << 10;
    uint64_t *dpos = malloc(nsec * sizeof *dpos);
    uint8_t *touched = calloc(1, nsec), *buf = aligned_alloc(4096, piece), scratch[CW_SECTOR];
    struct wmeta *wm = NULL;
    int64_t nw = dpos && touched && buf ? model(j, nsec, &wm, dpos, touched, v) : -ENOMEM;
    int rc = nw < 0 ? (int)nw : 0;
    for (uint64_t off = 0; !rc && off < size; off += piece) {
        uint64_t len = size - off < piece ? size - off : piece;
        if (uraid_read(a, buf, len, off)) {
            memset(buf, 0xee, len); /* judged as garbage: whatever was to be there is gone */
            v->unreadable_sectors += len / CW_SECTOR;
        }
        for (uint64_t i = 0; i < len / CW_SECTOR; i++) {
            uint64_t s = off / CW_SECTOR + i;
            judge_sector(seed, s, buf + i * CW_SECTOR, scratch, wm, nw, dpos[s], touched[s], v);
        }
    }
    free(wm);
    free(dpos);
    free(touched);
    free(buf);
    return rc;
}

void cw_mark_cut(void *ctx)
{
    struct cw_cut_mark *m = ctx;
    m->at = cw_journal_mark(m->j);
    m->set = 1;
}
