/* The replay of a dirty array's PPL at open (ppl_replay, ppl.h), as md's
 * ppl_recover does on RAID-5; on RAID-6 each parity member's log rewrites
 * its own parity (partial P or partial Q, docs/FORMAT.md 5b). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"
#include "log.h"
#include "meta/ppl.h"
#include "stripe/ppl_int.h"

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

/* No sound header at the area's start, but one further on: the area was
 * starting over when the array stopped, and the header written at its
 * start tore. The chain restarts only once no part in a header has writes
 * out (ppl_log.c), and the units the torn header lists wait for it: no
 * write was out, nothing to replay. (md counts it as a mismatch.) The old
 * header at the start is wiped before such a header is written
 * (wipe_restarts), so a tear never leaves it sound with the headers after
 * it cut off. */
static int restart_torn(const uint8_t *area, uint64_t bytes, uint32_t signature)
{
    struct ppl_header *h = malloc(sizeof *h);
    int found = 0;
    for (uint64_t off = SECTOR; h && !found && off + PPL_HEADER_BYTES <= bytes; off += SECTOR)
        found = ppl_header_decode(area + off, h, NULL, 0) == 0 && h->signature == signature;
    free(h);
    return found;
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
                o->folded2[j] == h->folded2[i] &&
                ppl_crc32c(area + pp, x->pp_size) == e->checksum)
                found = area + pp;
            pp += x->pp_size;
        }
    }
    free(o);
    return found;
}

/* md's ppl_recover_entry for entry e of the log on slot s: for every row
 * the entry covers whose modified blocks can all be read, the parity slot
 * s holds (P, or on RAID-6 Q) = the partial parity (if any) ^ those blocks
 * as they are now (for Q each times g^its Q slot). A row with a modified
 * block on a missing member is skipped, as md skips it, unless that block
 * is one of the entry's folded ones (1 + slot in fold[]): its new data is
 * in the partial parity, so the row's parity then makes it read back new,
 * whichever of the other blocks and of the parity reached the disks.
 * Returns 0, or 1 when a read or the parity write failed. */
static int recover_entry(struct uraid_array *a, int s, const struct ppl_entry *e, const struct ppl_entry_geom *g,
                         const uint8_t *pp, const uint8_t fold[2])
{
    uint32_t c = a->geom.chunk_sectors, k = (uint32_t)a->k;
    uint64_t stripe = g->first / ((uint64_t)k * c), msec = stripe * c + g->first % c;
    uint32_t d0 = (uint32_t)((g->first / c) % k), rows = g->strip_sectors;
    struct stripe_map map;
    if (layout_stripe(&a->geom, stripe, &map) || (map.p_disk != s && map.q_disk != s))
        return 1;
    int is_q = map.q_disk == s;
    uint32_t lim[PPL_MAX_SLOTS];
    size_t len = (size_t)rows * SECTOR;
    /* [0] the parity to write, [1] the partial parity, then the blocks */
    uint8_t *mem = aligned_alloc(4096, ((g->data_disks + 2) * len + 4095) / 4096 * 4096); /* C11: a multiple */
    unsigned char *ok = calloc(rows, 1);
    struct io_op ops[PPL_MAX_SLOTS];
    int skipped = 0, nops = 0, nb = 0;
    if (!mem || !ok) {
        free(mem);
        free(ok);
        return -ENOMEM;
    }
    int opd[PPL_MAX_SLOTS], qs[PPL_MAX_SLOTS];
    const uint8_t *blk[PPL_MAX_SLOTS];
    memset(ok, 1, rows);
    memset(mem, 0, (g->data_disks + 2) * len);
    for (uint32_t d = 0; d < g->data_disks; d++) {
        uint64_t at = g->first + (uint64_t)d * c;
        lim[d] = at >= g->last ? 0 : g->last - at < rows ? (uint32_t)(g->last - at) : rows;
        if (!lim[d]) /* past the entry's end (and maybe past the stripe's last data index) */
            continue;
        int m = map.data_disk[d0 + d];
        qs[nb] = map.q_slot[d0 + d];
        blk[nb++] = mem + (d + 2) * len; /* zeros past lim[d], and for a folded or missing block */
        if (m == fold[0] - 1 || m == fold[1] - 1)
            continue;
        if (!slot_ok_upto(a, m, msec + lim[d])) {
            memset(ok, 0, lim[d]);
            continue;
        }
        opd[nops] = (int)d;
        ops[nops++] = array_op(a, m, IO_READ, mem + (d + 2) * len, lim[d], msec);
    }
    array_run_ops(a, ops, nops);
    for (int i = 0; i < nops; i++)
        if (ops[i].result) {
            memset(ok, 0, lim[opd[i]]);
            skipped = 1;
        }
    uint8_t *par = mem;
    if (e->pp_size)
        memcpy(mem + len, pp, len);
    int rc = ppl_partial_pq(mem + len, mem + len, nb, qs, blk, len, is_q ? NULL : par,
                            is_q ? par : NULL);
    for (uint32_t i = 0; i < rows && rc == 0;) {
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
    return rc ? rc : skipped;
}

/* One member's log as replay reads it: the area, its newest header and
 * the chain before it; entry i's partial parity (or NULL: not written
 * whole in any header, so its write never started). */
struct loaded {
    uint8_t *area;
    uint64_t bytes;
    struct ppl_header *h;
    int64_t *chain;
    int nchain;
    int64_t at;                 /* the newest header's offset, -1: none valid */
    int restarting;             /* none valid because the area's restart tore (restart_torn) */
    const uint8_t **pp;         /* per entry */
};

static void unload(struct loaded *ld)
{
    free(ld->area);
    free(ld->h);
    free(ld->chain);
    free(ld->pp);
    memset(ld, 0, sizeof *ld);
}

static int load_member(struct uraid_array *a, int s, struct loaded *ld)
{
    struct ppl_log *L = a->ppl;
    struct member *dev = a->slot[s].dev;
    ld->bytes = (uint64_t)L->m[s].sectors * SECTOR;
    ld->area = aligned_alloc(4096, ld->bytes);
    ld->h = malloc(sizeof *ld->h);
    ld->chain = malloc((ld->bytes / PPL_HEADER_BYTES + 1) * sizeof *ld->chain);
    ld->pp = calloc(PPL_MAX_ENTRIES, sizeof *ld->pp);
    ld->at = -1;
    int rc = ld->area && ld->h && ld->chain && ld->pp ? member_read(dev, ld->area, ld->bytes, L->m[s].start * SECTOR)
                                                      : -ENOMEM;
    if (rc) {
        uraid_log(URAID_LOG_ERROR, "member %s: cannot read its PPL at sector %llu: %s", dev->path,
                  (unsigned long long)L->m[s].start, uraid_strerror(rc));
        return rc;
    }
    ld->at = newest_header(ld->area, ld->bytes, L->signature, ld->h, ld->chain, &ld->nchain);
    ld->restarting = ld->at < 0 && restart_torn(ld->area, ld->bytes, L->signature);
    uint64_t pp = (uint64_t)ld->at + PPL_HEADER_BYTES;
    for (uint32_t i = 0; ld->at >= 0 && i < ld->h->entries_count; i++) {
        const struct ppl_entry *e = &ld->h->entry[i];
        if (pp + e->pp_size <= ld->bytes)
            ld->pp[i] = ppl_crc32c(ld->area + pp, e->pp_size) == e->checksum
                            ? ld->area + pp
                            : earlier_pp(ld->area, ld->bytes, ld->chain, ld->nchain, ld->h, i);
        pp += e->pp_size;
    }
    return 0;
}

/* RAID-6: a folded entry changes what its missing block reads back as, so
 * both parities must take it or neither. Both logs were written before any
 * of its member writes went out, so when the other parity's member is in
 * sync and its log has no sound copy of the entry, the write never started
 * (or it finished, and the parity on disk already holds it): not replayed. */
static int other_log_has(struct uraid_array *a, const struct loaded *all, int s, const struct ppl_entry *e,
                         const struct ppl_entry_geom *g, uint8_t f1, uint8_t f2)
{
    struct stripe_map map;
    uint64_t stripe = g->first / ((uint64_t)a->k * a->geom.chunk_sectors);
    if (a->geom.level != 6 || layout_stripe(&a->geom, stripe, &map))
        return 1;
    int t = map.p_disk == s ? map.q_disk : map.p_disk;
    if (t >= 0 && all[t].restarting)
        return 0; /* no write was out on that log's units (restart_torn) */
    if (t < 0 || !all[t].area || all[t].at < 0)
        return 1; /* that parity is missing: this log alone says what the stripe holds */
    const struct ppl_header *o = all[t].h;
    for (uint32_t j = 0; j < o->entries_count; j++) {
        const struct ppl_entry *x = &o->entry[j];
        if (x->data_sector == e->data_sector && x->data_size == e->data_size && x->pp_size == e->pp_size &&
            x->parity_disk == ((uint32_t)t | (e->parity_disk & ~PPL_SLOT_MASK)) && o->folded[j] == f1 &&
            o->folded2[j] == f2 && all[t].pp[j])
            return 1;
    }
    return 0;
}

/* Slot s's log (loaded): its newest header's entries checked and (with
 * apply) replayed. */
static int replay_member(struct uraid_array *a, const struct loaded *all, int s, int apply, int *mismatch,
                         int *recovered)
{
    const struct loaded *ld = &all[s];
    struct member *dev = a->slot[s].dev;
    const struct ppl_header *h = ld->h;
    if (ld->at < 0 && ld->restarting) {
        uraid_log(URAID_LOG_INFO, "member %s: the PPL at sector %llu was starting over when the array stopped "
                  "(the header at its start is torn, the ones after it older): no write was out, nothing to replay",
                  dev->path, (unsigned long long)a->ppl->m[s].start);
        return 0;
    }
    if (ld->at < 0) {
        uraid_log(URAID_LOG_WARN, "member %s: no valid PPL header at sector %llu", dev->path,
                  (unsigned long long)a->ppl->m[s].start);
        (*mismatch)++;
        return 0;
    }
    int rc = 0;
    uint64_t pp = (uint64_t)ld->at + PPL_HEADER_BYTES;
    for (uint32_t i = 0; i < h->entries_count && rc >= 0; i++) {
        const struct ppl_entry *e = &h->entry[i];
        struct ppl_entry_geom g;
        /* RAID-6: bits 8..31 are the unit's tag (PPL_TAG_SHIFT) */
        uint32_t slot = a->geom.level == 6 ? e->parity_disk & PPL_SLOT_MASK : e->parity_disk;
        int bad = pp + e->pp_size > ld->bytes || slot != (uint32_t)s ||
                  ppl_entry_geom(e, a->geom.chunk_sectors, a->k, &g) || g.first >= a->size_sectors;
        const uint8_t *ppd = ld->pp[i];
        int fold = h->folded[i] || h->folded2[i];
        if (!bad && (!ppd || (fold && !other_log_has(a, all, s, e, &g, h->folded[i], h->folded2[i])))) {
            uraid_log(URAID_LOG_INFO, "member %s: PPL entry %u (array sector %llu): %s, so its write never "
                      "started; nothing to replay", dev->path, i, (unsigned long long)e->data_sector,
                      ppd ? "the other parity's log does not hold it" : "partial parity not written whole");
        } else if (bad) {
            uraid_log(URAID_LOG_WARN, "member %s: PPL entry %u (array sector %llu) is damaged or does not fit the "
                      "array; not replayed", dev->path, i, (unsigned long long)e->data_sector);
            (*mismatch)++;
        } else if (apply) {
            if (uraid_log_enabled(URAID_LOG_DEBUG))
                uraid_log(URAID_LOG_DEBUG, "member %s: PPL header gen %llu at %lld entry %u/%u: array sector %llu, "
                          "%u sectors, pp %u, folded %u/%u, parity %#x: replayed", dev->path,
                          (unsigned long long)h->generation, (long long)ld->at, i, h->entries_count,
                          (unsigned long long)e->data_sector, e->data_size / SECTOR, e->pp_size, h->folded[i],
                          h->folded2[i], e->parity_disk);
            rc = recover_entry(a, s, e, &g, ppd, (const uint8_t[2]){h->folded[i], h->folded2[i]});
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
    return rc;
}

int ppl_replay(struct uraid_array *a, int apply, int *mismatch, int *recovered)
{
    *mismatch = *recovered = 0;
    if (!a->ppl)
        return 0;
    int n = a->geom.raid_disks, rc = 0;
    struct loaded *all = calloc((size_t)n, sizeof *all);
    if (!all)
        return -ENOMEM;
    /* every log read before any is replayed: a RAID-6 entry is checked against the other parity's */
    for (int s = 0; s < n && rc == 0; s++)
        if (a->slot[s].dev && slot_ok(a, s))
            rc = load_member(a, s, &all[s]);
    for (int s = 0; s < n && rc == 0; s++)
        if (a->slot[s].dev && slot_ok(a, s))
            rc = replay_member(a, all, s, apply, mismatch, recovered);
    for (int s = 0; s < n; s++)
        unload(&all[s]);
    free(all);
    return rc;
}
