/* Check and repair (scrub): background jobs (job.c) that read every stripe
 * and compare its parity with its data, like md's sync_action check/repair.
 *
 * Per batch of stripes (under the stripes' locks, so a writer never shows a
 * half-updated stripe), split over the processors: one read per member for
 * each group of stripes, then per stripe uraid_check's per-sector verdicts,
 * grouped per 4 KiB page as md counts mismatch_cnt (8 sectors per page that
 * disagrees).
 *
 * What a page's verdicts mean:
 *   RAID-4/5: parity disagrees; which block is wrong cannot be told, so
 *     repair rewrites P (what md does).
 *   RAID-6: the syndromes name the one wrong block (a data chunk, P or Q);
 *     repair recomputes exactly that block from the others. A page where
 *     more than one block disagrees (or whose sectors blame different
 *     blocks) is MULTI: reported, never "fixed", since rewriting any block
 *     would only make a wrong stripe consistent.
 *   A stripe checked with one block rebuilt (a RAID-6 member missing or a
 *     read error) has one redundancy left: a mismatch there cannot be
 *     pinned on a block and is reported as MULTI.
 * Read errors are rebuilt from the stripe and rewritten (md corrects them
 * during check too); a stripe that cannot be read at all becomes an
 * UNREADABLE finding and the scrub goes on.
 *
 * States of one stripe: READ --(all read or rebuilt)--> CHECKED
 *   --(REPAIR and a single block wrong)--> REWRITTEN; READ --(too many
 *   blocks lost)--> UNREADABLE. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array/dataio.h"
#include "log.h"

#define PAGE_SECTORS STRIPE_PAGE_ROWS

struct scrub_part;

/* What one step works with, besides the stripe's rows. */
struct scrub_ctx {
    struct uraid_array *a;
    struct array_job *j;
    uint8_t *zero;            /* all-zero chunk, DDF layouts */
    uint8_t *verdict;         /* per sector of a chunk */
    int16_t *bad_slot;
    const uint16_t *held;     /* the batch's stripe locks, for the seqlock */
    int nheld;
    struct scrub_part *part;  /* where findings wait to be recorded in order */
};

static const char *kind_text(enum uraid_finding_kind k)
{
    switch (k) {
    case URAID_FOUND_P: return "P (parity) block wrong";
    case URAID_FOUND_Q: return "Q block wrong";
    case URAID_FOUND_DATA: return "data block wrong";
    case URAID_FOUND_MULTI: return "more than one block disagrees";
    case URAID_FOUND_UNREADABLE: return "stripe unreadable";
    case URAID_FOUND_MIRROR: return "mirror differs from the first";
    }
    return "?";
}

static void keep_finding(struct scrub_ctx *x, const struct uraid_finding *f);

static void record(struct scrub_ctx *x, const struct uraid_finding *f)
{
    struct uraid_array *a = x->a;
    keep_finding(x, f);
    const char *verb = uraid_job_name(x->j->kind);
    if (f->slot >= 0 && a->slot[f->slot].dev) {
        uraid_log(f->kind == URAID_FOUND_UNREADABLE ? URAID_LOG_ERROR : URAID_LOG_INFO,
                  "%s: stripe %llu: member %s sectors %llu-%llu (slot %d): %s%s", verb, (unsigned long long)f->stripe,
                  a->slot[f->slot].dev->path, (unsigned long long)(a->slot[f->slot].data_offset + f->member_sector),
                  (unsigned long long)(a->slot[f->slot].data_offset + f->member_sector + f->nsec - 1), f->slot,
                  kind_text(f->kind),
                  f->repaired ? ", repaired" : x->j->kind == URAID_JOB_REPAIR ? ", NOT repaired" : "");
    } else {
        uraid_log(f->kind == URAID_FOUND_UNREADABLE ? URAID_LOG_ERROR : URAID_LOG_WARN,
                  "%s: stripe %llu, member sectors %llu-%llu past data_offset: %s; not repaired (the wrong block "
                  "cannot be told: restore those array sectors from a backup)",
                  verb, (unsigned long long)f->stripe, (unsigned long long)f->member_sector,
                  (unsigned long long)(f->member_sector + f->nsec - 1), kind_text(f->kind));
    }
}

/* The block (member slot) a page's verdicts blame, or -1 when it is more
 * than one or cannot be told. */
static int page_culprit(const struct stripe_map *map, const uint8_t *v, const int16_t *bs, int *multi)
{
    int who = -1;
    *multi = 0;
    for (unsigned s = 0; s < PAGE_SECTORS; s++) {
        int m;
        switch (v[s]) {
        case URAID_CHECK_OK: continue;
        case URAID_CHECK_P_BAD: m = map->p_disk; break;
        case URAID_CHECK_Q_BAD: m = map->q_disk; break;
        case URAID_CHECK_DATA_BAD: m = bs[s] >= 0 && bs[s] < map->nslots ? map->slot_disk[bs[s]] : -1; break;
        default: m = -1;
        }
        if (m < 0 || (who >= 0 && m != who)) {
            *multi = 1;
            return -1;
        }
        who = m;
    }
    return who;
}

/* Recomputes member m's rows [off, off + nsec) of the stripe from the
 * others, in place, and writes them back. */
static int repair_block(struct scrub_ctx *x, struct stripe_rows *r, int m, uint32_t off, uint32_t nsec)
{
    struct uraid_array *a = x->a;
    size_t skip = (size_t)off * SECTOR;
    struct stripe_rows sub = *r;
    sub.row = r->row + off;
    sub.nrows = nsec;
    for (int d = 0; d < a->geom.raid_disks; d++)
        sub.block[d] = r->block[d] + skip;
    int rc = rows_recover(a, &sub, x->zero, &m, 1);
    if (rc)
        return rc;
    uint64_t msec = r->stripe * a->geom.chunk_sectors + r->row + off;
    struct io_op op = array_op(a, m, IO_WRITE, r->block[m] + skip, nsec, msec);
    /* readers that reuse unlocked reads must see the stripe change; they
     * compare the count under the lock, which this batch holds until every
     * part's bumps are done, so parts bumping at once do no harm */
    stripe_gen_bump(&a->locks, x->held, x->nheld);
    array_run_ops(a, &op, 1);
    stripe_gen_bump(&a->locks, x->held, x->nheld);
    if (op.result) {
        uraid_log(URAID_LOG_ERROR, "member %s: write error at sector %llu while repairing: %s",
                  a->slot[m].dev->path, (unsigned long long)(op.offset / SECTOR), uraid_strerror(op.result));
        array_member_failed(a, m, op.result, "rewriting a block that repair found wrong");
    }
    return op.result;
}

/* One run of consecutive pages blaming the same block: count, repair, record. */
static void settle_run(struct scrub_ctx *x, struct stripe_rows *r, int m, int multi, uint32_t first, uint32_t nsec)
{
    struct uraid_array *a = x->a;
    struct uraid_finding f = {.member_sector = r->stripe * a->geom.chunk_sectors + r->row + first, .nsec = nsec,
                              .stripe = r->stripe, .slot = multi ? -1 : m};
    f.kind = multi ? URAID_FOUND_MULTI
           : m == r->map.p_disk ? URAID_FOUND_P
           : m == r->map.q_disk ? URAID_FOUND_Q : URAID_FOUND_DATA;
    __atomic_add_fetch(&x->j->mismatch_sectors, nsec, __ATOMIC_RELAXED);
    if (x->j->kind == URAID_JOB_REPAIR && !multi && repair_block(x, r, m, first, nsec) == 0) {
        f.repaired = 1;
        __atomic_add_fetch(&x->j->repaired_sectors, nsec, __ATOMIC_RELAXED);
    }
    record(x, &f);
}

/* Compares the rows (all present, `reduced` if one was rebuilt) and settles
 * every page that disagrees. */
static void compare_rows(struct scrub_ctx *x, struct stripe_rows *r, int reduced)
{
    struct uraid_array *a = x->a;
    const struct stripe_map *map = &r->map;
    int nslots = map->nslots, raid6 = a->nparity == 2;
    const void *blocks[URAID_PARITY_MAX_K + 2];
    for (int s = 0; s < nslots; s++)
        blocks[s] = map->slot_disk[s] < 0 ? x->zero : r->block[map->slot_disk[s]];
    blocks[nslots] = r->block[map->p_disk];
    if (raid6)
        blocks[nslots + 1] = r->block[map->q_disk];
    int bad = uraid_check(nslots, (size_t)r->nrows * SECTOR, blocks, raid6, x->verdict, x->bad_slot);
    if (bad <= 0)
        return;
    int run_m = -1, run_multi = 0;
    uint32_t run_first = 0, run_len = 0;
    for (uint32_t p = 0; p < r->nrows; p += PAGE_SECTORS) {
        int multi, m = page_culprit(map, x->verdict + p, x->bad_slot + p, &multi);
        int wrong = multi || m >= 0;
        if (wrong && reduced) {
            multi = 1;
            m = -1;
        }
        if (run_len && (!wrong || m != run_m || multi != run_multi || p != run_first + run_len)) {
            settle_run(x, r, run_m, run_multi, run_first, run_len);
            run_len = 0;
        }
        if (!wrong)
            continue;
        if (!run_len) {
            run_first = p;
            run_m = m;
            run_multi = multi;
        }
        run_len += PAGE_SECTORS;
    }
    if (run_len)
        settle_run(x, r, run_m, run_multi, run_first, run_len);
}

/* A range of rows gathered (stripe.c's rows_gather): unreadable, or read
 * and rebuilt, with read errors corrected, then compared. */
static void scrub_outcome(void *ctx, struct stripe_rows *r, int rc, const unsigned char *failed)
{
    struct scrub_ctx *x = ctx;
    struct uraid_array *a = x->a;
    if (rc) {
        struct uraid_finding f = {.member_sector = r->stripe * a->geom.chunk_sectors + r->row, .nsec = r->nrows,
                                  .stripe = r->stripe, .slot = -1, .kind = URAID_FOUND_UNREADABLE};
        record(x, &f);
        return;
    }
    int lost = 0;
    for (int m = 0; m < a->geom.raid_disks; m++) {
        lost += r->unavailable[m];
        if (failed[m])
            array_correct_read_error(a, m, r->block[m], r->nrows, r->stripe * a->geom.chunk_sectors + r->row);
    }
    if (lost < a->nparity) /* else nothing is left to compare with */
        compare_rows(x, r, lost > 0);
}

/* One worker of a batch: it takes the batch's groups of stripes one after
 * the other from a shared counter, so a worker that the machine's other
 * load holds back leaves the rest to the others instead of making them wait
 * at the end of the batch. Findings are kept here and recorded in stripe
 * order once every part is done. */
#define PART_FINDINGS 64
/* Rows read per member at a time: small enough that a group of every
 * member's rows is still in the core's cache when it is checked (one
 * 2 MiB read per member left the check reading from DRAM: half the speed
 * on memory-backed members), large enough for disks to stream. */
#define SCRUB_GROUP_BYTES (128u << 10)

struct scrub_part {
    struct scrub_ctx x;
    uint64_t start, end;          /* the batch, member sectors */
    uint64_t *next_group;         /* shared: groups of the batch handed out so far */
    uint8_t *mem;                 /* member m's rows at mem + m * stride */
    size_t stride;
    int rc;
    size_t nfound;
    struct uraid_finding found[PART_FINDINGS];
};

/* Reads and checks stripes [start, end) of a part, a group at a time. */
static void part_run(void *arg)
{
    struct scrub_part *p = arg;
    struct uraid_array *a = p->x.a;
    uint32_t c = a->geom.chunk_sectors;
    uint64_t gsec = p->stride / SECTOR;
    int zeroed = 0;
    for (;;) {
        uint64_t g = p->start + __atomic_fetch_add(p->next_group, 1, __ATOMIC_RELAXED) * gsec;
        if (g >= p->end || p->rc)
            break;
        struct stripe_batch b = {.start = g, .end = g + gsec < p->end ? g + gsec : p->end};
        for (int m = 0; m < a->geom.raid_disks; m++)
            b.base[m] = p->mem + (size_t)m * p->stride;
        stripe_batch_read(a, &b, NULL);
        for (uint64_t s = g / c; s * c < b.end && p->rc == 0; s++) {
            struct stripe_rows r;
            if ((p->rc = stripe_batch_rows(a, &b, s, &r)) != 0)
                break;
            if (r.map.nslots != a->k && !zeroed) {
                memset(p->x.zero, 0, (size_t)c * SECTOR);
                zeroed = 1;
            }
            rows_gather(a, &r, p->x.zero, b.readok, NULL, scrub_outcome, &p->x);
        }
    }
}

/* Findings in the order the array holds them: by stripe, then where. */
static int finding_order(const void *l, const void *r)
{
    const struct uraid_finding *x = l, *y = r;
    if (x->stripe != y->stripe)
        return x->stripe < y->stripe ? -1 : 1;
    if (x->member_sector != y->member_sector)
        return x->member_sector < y->member_sector ? -1 : 1;
    return x->slot - y->slot;
}

int scrub_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec)
{
    int n = a->geom.raid_disks;
    uint32_t c = a->geom.chunk_sectors;
    uint64_t s0 = start / c, s1 = (start + nsec + c - 1) / c;
    int nstripes = (int)(s1 - s0);
    if (nstripes > 64)
        return -EINVAL;
    struct stripe_pool *pool = j->priv;
    int nparts = stripe_pool_parts(pool);
    size_t csize = (size_t)c * SECTOR;
    size_t group = csize >= SCRUB_GROUP_BYTES ? csize : SCRUB_GROUP_BYTES / csize * csize;
    /* per part: member rows of a group, a zero chunk, verdicts, blamed slots */
    size_t extra = (size_t)n * group + csize + ((size_t)c + 63) / 64 * 64 + (size_t)c * 2;
    struct scrub_part *parts = calloc((size_t)nparts, sizeof *parts);
    /* the job thread's scratch serves every part: one area, warm after the
     * first batch, whichever worker uses which part */
    uint8_t *mem = array_scratch((size_t)nparts * extra);
    if (!mem || !parts) {
        free(parts);
        return -ENOMEM;
    }
    uint64_t stripes[64];
    uint16_t held[64];
    for (int i = 0; i < nstripes; i++)
        stripes[i] = s0 + (uint64_t)i;
    int nheld = stripe_lock_set(&a->locks, stripes, nstripes, held);
    uint64_t next_group = 0;
    for (int p = 0; p < nparts; p++) {
        struct scrub_part *pt = &parts[p];
        uint8_t *own = mem + (size_t)p * extra;
        pt->mem = own;
        pt->stride = group;
        own += (size_t)n * group;
        pt->x = (struct scrub_ctx){.a = a, .j = j, .zero = own, .verdict = own + csize, .held = held,
                                   .nheld = nheld, .part = pt};
        pt->x.bad_slot = (int16_t *)(pt->x.verdict + ((size_t)c + 63) / 64 * 64);
        pt->start = start;
        pt->end = start + nsec;
        pt->next_group = &next_group;
    }
    stripe_pool_run(pool, part_run, parts, sizeof *parts, nparts);
    int rc = 0, nfound = 0;
    struct uraid_finding *found = NULL;
    for (int p = 0; p < nparts; p++) {
        nfound += (int)parts[p].nfound;
        if (parts[p].rc && !rc) {
            rc = parts[p].rc;
            job_fail(j, "stripes %llu-%llu: %s", (unsigned long long)s0, (unsigned long long)(s1 - 1),
                     uraid_strerror(rc));
        }
    }
    if (nfound && (found = malloc(sizeof *found * (size_t)nfound))) {
        nfound = 0;
        for (int p = 0; p < nparts; p++)
            for (size_t f = 0; f < parts[p].nfound; f++)
                found[nfound++] = parts[p].found[f];
        qsort(found, (size_t)nfound, sizeof *found, finding_order);
        for (int f = 0; f < nfound; f++)
            job_add_finding(j, &found[f]);
        free(found);
    } else {
        for (int p = 0; p < nparts; p++)
            for (size_t f = 0; f < parts[p].nfound; f++)
                job_add_finding(j, &parts[p].found[f]);
    }
    stripe_unlock_set(&a->locks, held, nheld);
    free(parts);
    return rc;
}

static void keep_finding(struct scrub_ctx *x, const struct uraid_finding *f)
{
    struct scrub_part *p = x->part;
    if (p && p->nfound < PART_FINDINGS)
        p->found[p->nfound++] = *f;
    else
        job_add_finding(x->j, f); /* out of order beyond PART_FINDINGS per part: rare */
}

static int scrub_finish(struct uraid_array *a, struct array_job *j, int rc)
{
    j->priv = NULL; /* the array's pool: it outlives the job */
    uint64_t mism = __atomic_load_n(&j->mismatch_sectors, __ATOMIC_RELAXED);
    uint64_t rep = __atomic_load_n(&j->repaired_sectors, __ATOMIC_RELAXED);
    if (rep)
        for (int m = 0; m < a->geom.raid_disks; m++)
            if (slot_ok(a, m)) {
                int f = member_flush(a->slot[m].dev);
                if (f && rc == 0) {
                    job_fail(j, "member %s: flush failed after the repair: %s", a->slot[m].dev->path,
                             uraid_strerror(f));
                    rc = f;
                }
            }
    uraid_log(URAID_LOG_INFO, "%s %s: mismatch_cnt %llu sectors, repaired %llu sectors%s",
              uraid_job_name(j->kind), rc == 0 ? "done" : "stopped early", (unsigned long long)mism,
              (unsigned long long)rep, mism && j->kind == URAID_JOB_CHECK ? " (run 'uraid repair' to fix them)" : "");
    return rc;
}

int scrub_prepare(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                  size_t whylen)
{
    (void)p;
    if (a->geom.level != 1 && a->geom.level != 4 && a->geom.level != 5 && a->geom.level != 6 && !a->r10) {
        uraid_why(why, whylen, "%s is only for RAID-1/4/5/6/10 (this array is RAID-%d)", uraid_job_name(j->kind),
                  a->geom.level);
        return -EOPNOTSUPP;
    }
    int missing = 0;
    pthread_mutex_lock(&a->meta_lock);
    for (int s = 0; s < a->geom.raid_disks; s++)
        missing += !slot_ok(a, s);
    pthread_mutex_unlock(&a->meta_lock);
    if (a->r10 && missing && !raid10_copies_to_compare(a)) {
        /* md compares whatever copies are left; with none left in pairs there is nothing */
        uraid_why(why, whylen,
                  "nothing can be checked: RAID-10 with %d member%s not in sync has no chunk left with two copies; "
                  "rebuild first (add a spare)",
                  missing, missing == 1 ? "" : "s");
        return -EINVAL;
    }
    if (!a->r10 && missing >= a->nparity) {
        uraid_why(why, whylen,
                  "nothing can be checked: RAID-%d with %d member%s not in sync has no redundancy left to compare; "
                  "rebuild first (add a spare)",
                  a->geom.level, missing, missing == 1 ? "" : "s");
        return -EINVAL;
    }
    if (missing && j->kind == URAID_JOB_REPAIR) {
        uraid_why(why, whylen,
                  "repair needs every member in sync (%d is not): with one redundancy left the wrong block cannot "
                  "be told; rebuild first, or run check",
                  missing);
        return -EINVAL;
    }
    j->step = a->geom.level == 1 ? raid1_scrub_step : a->r10 ? raid10_scrub_step : scrub_step;
    if (a->r10)
        j->end = a->size_sectors; /* md's RAID-10 check walks array sectors */
    j->finish = scrub_finish;
    /* checking costs CPU as well as the reads: each batch is shared by the
     * array's workers (each part's reads run on its own thread too, which
     * is where page-cache and tmpfs members do their copying); without
     * workers the job thread checks alone */
    j->priv = a->geom.level == 1 || a->r10 ? NULL : array_stripe_pool(a);
    j->checkpoint = NULL;
    return 0;
}
