/* uraid's RAID-6 PPL (docs/FORMAT.md 5b): P's member logs partial P, Q's
 * member logs partial Q (sum of g^i * D_i over the blocks a write leaves
 * alone), and replay rewrites each parity from its own log.
 *
 *   - the arithmetic (ppl_partial_pq) against the reference parity
 *     (lib/parity/ref.c) for every block position, both ways: partial
 *     parity from the new parity, and parity back from the partial;
 *   - interrupted writes on an array, every data index of every stripe of
 *     a rotation (P and Q on every member), healthy and missing one or two
 *     members: one member's write dropped (the written chunk's, P's or
 *     Q's), the process ended without closing; then the array is opened
 *     without --force (the logs must cover the writes), every byte read
 *     back against the model (so chunks of missing members, rebuilt from
 *     the replayed parity, too), and when whole a check finds no mismatch.
 *
 * Each interrupted write is made by this binary started afresh (--writes,
 * as test_ppl_degraded). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"
#include "meta/bitmap.h"
#include "meta/ppl.h"
#include "meta/superblock.h"
#include "stripe/ppl_int.h"
#include "uraid.h"
#include "uraid_parity.h"

#define MEMBER_BYTES (4u << 20)
#define CHUNK (32u << 10)

static struct rng rng;
static char self_path[4096];

static int ref_impl(void)
{
    for (int i = 0; i < uraid_parity_impl_count(); i++)
        if (!strcmp(uraid_parity_impl_name(i), "ref"))
            return i;
    return -1;
}

/* ---- the arithmetic ------------------------------------------------------------- */

/* k data blocks; the write modifies the blocks in mask. Partial P and Q
 * from the new parity must be the reference P and Q of the untouched
 * blocks alone (modified ones zero), and back again. */
static void check_partial(int ref, int k, unsigned mask, size_t len)
{
    uint8_t *d[16] = {0}, *z[16] = {0}, P[4096], Q[4096], rp[4096], rq[4096], pp[4096], pq[4096], bp[4096], bq[4096];
    const uint8_t *blk[16];
    int slots[16], n = 0;
    for (int i = 0; i < k; i++) {
        d[i] = malloc(len);
        z[i] = calloc(1, len);
        rng_fill(&rng, d[i], len);
    }
    for (int i = 0; i < k; i++)
        if (!(mask >> i & 1))
            memcpy(z[i], d[i], len);
    uraid_gen_pq_with(ref, k, len, (const void *const *)d, P, Q);
    uraid_gen_pq_with(ref, k, len, (const void *const *)z, rp, rq); /* the untouched blocks only */
    /* from the top down: ppl_partial_pq sorts the slots */
    for (int i = k - 1; i >= 0; i--)
        if (mask >> i & 1) {
            slots[n] = i;
            blk[n++] = d[i];
        }
    int rc = ppl_partial_pq(P, Q, n, slots, blk, len, pp, pq);
    CHECK(rc == 0 && !memcmp(pp, rp, len) && !memcmp(pq, rq, len),
          "k %d modified 0x%x: partial P/Q differ from the reference parity of the untouched blocks (rc %d)", k,
          mask, rc);
    rc = ppl_partial_pq(pp, pq, n, slots, blk, len, bp, bq);
    CHECK(rc == 0 && !memcmp(bp, P, len) && !memcmp(bq, Q, len), "k %d modified 0x%x: replay does not give P/Q back",
          k, mask);
    /* one parity at a time, as when the other's member is missing */
    memset(bq, 0, len);
    rc = ppl_partial_pq(P, Q, n, slots, blk, len, NULL, bq);
    CHECK(rc == 0 && !memcmp(bq, rq, len), "k %d modified 0x%x: partial Q alone", k, mask);
    memset(bp, 0, len);
    rc = ppl_partial_pq(P, Q, n, slots, blk, len, bp, NULL);
    CHECK(rc == 0 && !memcmp(bp, rp, len), "k %d modified 0x%x: partial P alone", k, mask);
    for (int i = 0; i < k; i++) {
        free(d[i]);
        free(z[i]);
    }
}

static void test_math(void)
{
    harness_begin("partial P and Q against the reference parity: every block position, every set of modified "
                  "blocks (k = 2..6), both ways");
    int ref = ref_impl();
    CHECK(ref >= 0, "the reference parity implementation is registered");
    for (int k = 2; ref >= 0 && k <= 6; k++)
        for (unsigned mask = 0; mask < 1u << k; mask++)
            check_partial(ref, k, mask, mask & 1 ? 4096 : 512);
    harness_end();
}

/* The second folded slot per entry (bytes 156 + i) round-trips; a header
 * without folds keeps md's 0xff there. */
static void test_header_fold2(void)
{
    harness_begin("PPL header: a second folded slot per entry at byte 156 + i, 0xff without folds");
    static struct ppl_header h, back;
    static uint8_t out[PPL_HEADER_BYTES];
    memset(&h, 0, sizeof h);
    h.entries_count = 3;
    h.folded[1] = 4 + 1;
    h.folded2[1] = 2 + 1;
    h.folded2[2] = 0 + 1;
    CHECK(ppl_header_encode(&h, out) == 0 && !memcmp(out, PPL_FOLD_MAGIC, 8));
    CHECK(out[8] == 0xff && out[9] == 4 && out[10] == 0xff && out[156] == 0xff && out[157] == 2 && out[158] == 0,
          "fold bytes %02x %02x %02x / %02x %02x %02x", out[8], out[9], out[10], out[156], out[157], out[158]);
    CHECK(ppl_header_decode(out, &back, NULL, 0) == 0 && back.folded[1] == 5 && back.folded2[1] == 3 &&
          back.folded2[2] == 1 && !back.folded[0] && !back.folded2[0]);
    memset(&h, 0, sizeof h);
    h.entries_count = 3;
    ppl_header_encode(&h, out);
    int all = 1;
    for (int i = 0; i < 512; i++)
        all &= out[i] == 0xff;
    CHECK(all, "a header without folds has md's 0xff reserved bytes");
    harness_end();
}

/* ---- interrupted writes on an array --------------------------------------------- */

/* --writes SPECS SEED WOFF WLEN MEMBER...: SPECS "-" or "I:SPEC|I:SPEC..."
 * gives opened member I a fault layer (drop-writes=OFF+LEN,...); the array
 * gets one write of seed's data, and the process ends without closing it. */
static int writes_main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    int np = argc - 4;
    const char *specs[FX_MAXM];
    static char copy[1024];
    for (int i = 0; i < np; i++)
        specs[i] = "";
    snprintf(copy, sizeof copy, "%s", argv[0]);
    char *save = NULL;
    for (char *it = strtok_r(copy, "|", &save); it && strcmp(it, "-"); it = strtok_r(NULL, "|", &save)) {
        int i = atoi(it);
        char *colon = strchr(it, ':');
        if (i >= 0 && i < np && colon)
            specs[i] = colon + 1;
    }
    struct uraid_open_params op = {.member_sim = specs};
    struct uraid_array *a;
    char why[512];
    if (uraid_open((const char **)argv + 4, np, &op, &a, why, sizeof why)) {
        fprintf(stderr, "writer: %s\n", why);
        return 1;
    }
    uint64_t off = strtoull(argv[2], NULL, 0), len = strtoull(argv[3], NULL, 0);
    uint8_t *buf = malloc(len);
    struct rng r;
    rng_seed(&r, strtoull(argv[1], NULL, 0));
    rng_fill(&r, buf, len);
    if (!buf || uraid_write(a, buf, len, off))
        return 1;
    _exit(0);
}

/* The index among the opened members (those not in `missing`) of slot s. */
static int opened_index(const struct fx *f, unsigned missing, int s)
{
    int idx = 0;
    for (int i = 0; i < s; i++)
        idx += !(missing & FX_SLOT(i));
    return idx;
}

/* Runs --writes with SPECS on the members not in `missing`. */
static int run_write_specs(struct fx *f, unsigned missing, const char *specs, uint64_t off, uint64_t len,
                           uint64_t seed)
{
    char num[3][32], *args[FX_MAXM + 10];
    int na = 0;
    snprintf(num[0], 32, "%llu", (unsigned long long)seed);
    snprintf(num[1], 32, "%llu", (unsigned long long)off);
    snprintf(num[2], 32, "%llu", (unsigned long long)len);
    args[na++] = (char *)"test_ppl_raid6";
    args[na++] = (char *)"--writes";
    args[na++] = (char *)specs;
    for (int i = 0; i < 3; i++)
        args[na++] = num[i];
    for (int s = 0; s < f->n; s++)
        if (!(missing & FX_SLOT(s)))
            args[na++] = f->path[s];
    args[na] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execv(self_path, args);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the interrupted writer failed (%#x)", f->label, st);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* drop_slot (-1: none) drops its writes to member bytes [drop_off, +CHUNK)
 * past data_offset. */
static int run_write(struct fx *f, unsigned missing, int drop_slot, uint64_t drop_off, uint64_t off, uint64_t len,
                     uint64_t seed)
{
    char spec[128] = "-";
    if (drop_slot >= 0)
        snprintf(spec, sizeof spec, "%d:drop-writes=%llu+%u", opened_index(f, missing, drop_slot),
                 (unsigned long long)(f->data_offset + drop_off), CHUNK);
    return run_write_specs(f, missing, spec, off, len, seed);
}

/* Opened without `missing` and without --force, read back whole against
 * the model; a whole array is checked too. Returns the failures seen. */
static int reopen_and_verify(struct fx *f, unsigned missing, const char *what)
{
    const char *paths[FX_MAXM];
    int np = 0, bad = 0;
    for (int s = 0; s < f->n; s++)
        if (!(missing & FX_SLOT(s)))
            paths[np++] = f->path[s];
    struct uraid_array *a = NULL;
    char why[512] = "";
    int rc = uraid_open(paths, np, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "%s: %s: dirty PPL array not opened: %s", f->label, what, why);
    if (rc)
        return 1;
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.clean, "%s: %s: not clean after the replay", f->label, what);
    bad += !info.clean;
    bad += fx_verify(f, a, 0, f->size, what) != 0;
    if (__builtin_popcount(missing) < 2) { /* one missing: P rebuilds it, Q is checked against it */
        struct uraid_job_status st;
        struct uraid_job_params jp = {.slot = -1};
        fx_job(f, a, URAID_JOB_CHECK, &jp, &st);
        CHECK(st.mismatch_sectors == 0, "%s: %s: mismatch_cnt %llu after the replay", f->label, what,
              (unsigned long long)st.mismatch_sectors);
        bad += st.mismatch_sectors != 0;
    }
    CHECK(uraid_close(a) == 0);
    return bad;
}

enum drop { DROP_DATA, DROP_P, DROP_Q };
static const char *const drop_name[] = {"the written chunk's", "P's", "Q's"};

/* The drop that leaves the stripe inconsistent: a member that is present
 * and written (the data chunk when present, else a parity). */
static int drop_slot_for(const struct stripe_map *m, int d, unsigned missing, int which)
{
    int s = which == DROP_DATA ? m->data_disk[d] : which == DROP_P ? m->p_disk : m->q_disk;
    return missing & FX_SLOT(s) ? -1 : s;
}

/* With the members in `missing` left out for good, every (stripe, data
 * index) of a rotation meets them in every role: the written chunk's
 * (folded), another data chunk's (rebuilt from the replayed parity), P's
 * or Q's (that parity neither written nor logged; the other's log alone
 * replayed). */
static void test_interrupted(unsigned missing, const char *what)
{
    harness_beginf("RAID-6 ppl, %s: a write to every data index of every stripe of a rotation, one member's write "
                   "dropped, replayed without --force: every byte reads back%s", what,
                   __builtin_popcount(missing) < 2 ? ", no mismatch" : "");
    struct fx f;
    fx_policy = URAID_POLICY_PPL;
    int fails = 0;
    if (fx_setup(&f, 6, 6, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    for (uint64_t S = 0; S < (uint64_t)f.n && fails < 3; S++) {
        struct stripe_map map;
        layout_stripe(&f.geom, S, &map);
        for (int d = 0; d < f.k && fails < 3; d++) {
            int which = (int)((S + (uint64_t)d) % 3);
            int drop = drop_slot_for(&map, d, missing, which);
            if (drop < 0)
                drop = drop_slot_for(&map, d, missing, (which + 1) % 3);
            if (drop < 0)
                drop = drop_slot_for(&map, d, missing, (which + 2) % 3);
            /* rows 8 KiB.. of index d and, alternately, rows ..16 KiB of index d + 1 (three bands, the
             * middle one modifying both: two folded blocks when both members are missing) */
            uint64_t off = fx_at(&f, S, d, 8192), len = d + 1 < f.k && S % 2 ? CHUNK + 8192 : 8192;
            if (d == f.k - 1 && S % 2 == 0) { /* and a full-stripe write */
                off = fx_at(&f, S, 0, 0);
                len = f.stripe_bytes;
            } else if (d == 0 && S % 2 == 0) { /* and a whole chunk */
                off = fx_at(&f, S, 0, 0);
                len = CHUNK;
            }
            uint64_t seed = rng_next(&rng);
            uint8_t *keep = malloc(CHUNK);
            memcpy(keep, f.model + fx_at(&f, S, d, 0), CHUNK);
            if (run_write(&f, missing, drop, S * CHUNK, off, len, seed)) {
                free(keep);
                fails++;
                continue;
            }
            struct rng r;
            rng_seed(&r, seed);
            rng_fill(&r, f.model + off, len);
            if (drop == map.data_disk[d]) /* its chunk never got the new data */
                memcpy(f.model + fx_at(&f, S, d, 0), keep, CHUNK);
            free(keep);
            char w[160];
            snprintf(w, sizeof w, "stripe %llu index %d, missing 0x%x, %s write dropped", (unsigned long long)S, d,
                     missing, drop_name[drop == map.p_disk ? DROP_P : drop == map.q_disk ? DROP_Q : DROP_DATA]);
            fails += reopen_and_verify(&f, missing, w);
        }
    }
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

/* What the logs hold on disk: P's member's entry has the partial P of the
 * untouched blocks, Q's member's the partial Q, both byte for byte as the
 * reference parity computes them from the member files. */
static void test_log_bytes(void)
{
    harness_begin("RAID-6 ppl: P's member logs partial P, Q's member partial Q, as the reference parity computes "
                  "them from the member files");
    struct fx f;
    fx_policy = URAID_POLICY_PPL;
    int ref = ref_impl();
    if (fx_setup(&f, 6, 6, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    const uint64_t S = 3;
    struct stripe_map map;
    layout_stripe(&f.geom, S, &map);
    /* index 1, rows 8 KiB..16 KiB; drop nothing: the data lands, the log stays (no close) */
    if (run_write(&f, 0, -1, 0, fx_at(&f, S, 1, 8192), 8192, rng_next(&rng)))
        goto out;
    size_t len = 8192;
    uint8_t *blk[8], p[8192], q[8192];
    for (int d = 0; d < f.k; d++) {
        blk[d] = calloc(1, len);
        if (d != 1)
            fx_member_pread(&f, map.data_disk[d], blk[d], len, S * CHUNK + 8192);
    }
    uraid_gen_pq_with(ref, f.k, len, (const void *const *)blk, p, q);
    for (int j = 0; j < 2; j++) {
        int s = j ? map.q_disk : map.p_disk;
        struct md_sb sb;
        fx_read_sb(&f, s, &sb);
        uint8_t *area = malloc((size_t)md_sb_ppl_size(&sb) * 512);
        static struct ppl_header h;
        FILE *fp = fopen(f.path[s], "rb");
        int rd = fp && fseek(fp, (long)md_sb_ppl_sector(&sb) * 512, SEEK_SET) == 0 &&
                 fread(area, 512, md_sb_ppl_size(&sb), fp) == md_sb_ppl_size(&sb);
        if (fp)
            fclose(fp);
        /* the first log write follows the empty header at the area's start */
        int ok = rd && ppl_header_decode(area + PPL_HEADER_BYTES, &h, NULL, 0) == 0 && h.entries_count == 1;
        CHECK(ok, "%s: member %d (%s) has one entry after its empty header", f.label, s, j ? "Q" : "P");
        if (ok) {
            const struct ppl_entry *e = &h.entry[0];
            CHECK((e->parity_disk & 0xff) == (uint32_t)s && e->pp_size == len && e->data_size == len &&
                      e->data_sector == fx_at(&f, S, 1, 8192) / 512,
                  "%s: %s entry: parity_disk %u pp_size %u data_size %u sector %llu", f.label, j ? "Q" : "P",
                  e->parity_disk, e->pp_size, e->data_size, (unsigned long long)e->data_sector);
            CHECK(!memcmp(area + 2 * PPL_HEADER_BYTES, j ? q : p, len),
                  "%s: the %s log's partial parity is not the reference %s of the untouched blocks", f.label,
                  j ? "Q" : "P", j ? "Q" : "P");
        }
        free(area);
    }
    for (int d = 0; d < f.k; d++)
        free(blk[d]);
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

/* A write of the missing member's chunk (folded into both logs) cut
 * after P's log write landed and before Q's did: none of its member writes
 * went out (both logs come first). P's log alone must not be replayed:
 * its fold would make the missing chunk read back new from P and old from
 * Q. Made with drop-writes: Q's member drops everything from its log area
 * through stripe S, P's member drops its parity write of stripe S. */
static void test_one_log_only(void)
{
    harness_begin("RAID-6 ppl, missing one member: a write of its chunk whose Q log write never landed (nor its "
                  "data): P's log is not replayed alone, the chunk reads back old, P and Q agree");
    struct fx f;
    fx_policy = URAID_POLICY_PPL;
    if (fx_setup(&f, 6, 6, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    const uint64_t S = 4;
    struct stripe_map map;
    layout_stripe(&f.geom, S, &map);
    int m = map.data_disk[1];
    unsigned missing = FX_SLOT(m);
    struct md_sb sb;
    fx_read_sb(&f, map.q_disk, &sb);
    uint64_t qlog = (uint64_t)md_sb_ppl_sector(&sb) * 512, qend = f.data_offset + (S + 1) * CHUNK;
    char specs[256];
    snprintf(specs, sizeof specs, "%d:drop-writes=%llu+%llu|%d:drop-writes=%llu+%u",
             opened_index(&f, missing, map.q_disk), (unsigned long long)qlog, (unsigned long long)(qend - qlog),
             opened_index(&f, missing, map.p_disk), (unsigned long long)(f.data_offset + S * CHUNK), CHUNK);
    /* the model keeps the old chunk: none of the write reached a member */
    if (run_write_specs(&f, missing, specs, fx_at(&f, S, 1, 0), CHUNK, rng_next(&rng)) == 0)
        reopen_and_verify(&f, missing, "P's log without Q's");
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

/* ---- create's default, grow --consistency-policy ---------------------------------- */

static int set_policy(struct fx *f, int n, int policy, char *why, size_t len)
{
    const char *paths[FX_MAXM];
    for (int s = 0; s < n; s++)
        paths[s] = f->path[s];
    return uraid_set_consistency_policy(paths, n, policy, why, len);
}

/* Every member's bytes against `before` (a refusal must change none). */
static void same_bytes(const struct fx *f, const uint64_t *before, const char *what)
{
    for (int s = 0; s < f->n; s++)
        CHECK(fx_file_hash(f->path[s]) == before[s], "%s: member %d changed by a refusal", what, s);
}

static void hashes(const struct fx *f, uint64_t *out)
{
    for (int s = 0; s < f->n; s++)
        out[s] = fx_file_hash(f->path[s]);
}

/* The array opens with `policy`, holds the model and takes a write. */
static void opens_as(struct fx *f, int policy, const char *what)
{
    struct uraid_array *a = fx_open(f, NULL, 0, 0);
    CHECK(a != NULL, "%s: does not open", what);
    if (!a)
        return;
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.consistency_policy == policy && info.md_refuses == (policy == URAID_POLICY_PPL),
          "%s: policy %d (want %d), md_refuses %d", what, info.consistency_policy, policy, info.md_refuses);
    uint8_t buf[12288];
    rng_fill(&rng, buf, sizeof buf);
    CHECK(fx_write(f, a, buf, sizeof buf, 20480) == 0);
    fx_verify_all(f, a, what);
    CHECK(uraid_close(a) == 0);
}

static void test_grow(void)
{
    harness_begin("RAID-6: ppl (bit 31) by default; grow ppl -> bitmap -> resync -> ppl -> resync with areas "
                  "emptied, events raised; refusals change no byte");
    struct fx f;
    fx_policy = URAID_POLICY_DEFAULT;
    char why[512];
    struct md_sb sb, sb2;
    if (fx_setup(&f, 6, 5, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    CHECK(fx_read_sb(&f, 0, &sb) == 0 && sb.feature_map == MD_FEATURE_PPL_Q && md_sb_ppl_size(&sb) == 2048,
          "default RAID-6: feature map %#x", sb.feature_map);
    uint64_t before[FX_MAXM];
    hashes(&f, before);
    static const struct {
        int n, policy, rc;
        const char *words;
    } bad[] = {
        {5, URAID_POLICY_PPL, -EALREADY, "already ppl"},
        {5, URAID_POLICY_JOURNAL, -EOPNOTSUPP, "not supported yet"},
        {4, URAID_POLICY_BITMAP, -ENODEV, "all 5 members"},
        {4, URAID_POLICY_RESYNC, -ENODEV, "all 5 members"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        int rc = set_policy(&f, bad[i].n, bad[i].policy, why, sizeof why);
        CHECK(rc == bad[i].rc && strstr(why, bad[i].words), "case %zu: %d '%s'", i, rc, why);
    }
    same_bytes(&f, before, "RAID-6 ppl");
    /* dirty: refused until it is opened (and its log replayed) */
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (a) {
        uint8_t buf[4096] = {1};
        fx_write(&f, a, buf, sizeof buf, 0);
        hashes(&f, before);
        CHECK(set_policy(&f, 5, URAID_POLICY_BITMAP, why, sizeof why) == -EBUSY, "in use: %s", why);
        same_bytes(&f, before, "in use");
        CHECK(uraid_close(a) == 0);
    }
    fx_read_sb(&f, 0, &sb);
    CHECK(set_policy(&f, 5, URAID_POLICY_BITMAP, why, sizeof why) == 0, "ppl -> bitmap: %s", why);
    CHECK(fx_read_sb(&f, 3, &sb2) == 0 && sb2.feature_map == MD_FEATURE_BITMAP_OFFSET && sb2.bitmap_offset == 8 &&
              sb2.events == sb.events + 1,
          "bitmap: feature map %#x, offset %d, events %llu (was %llu)", sb2.feature_map, sb2.bitmap_offset,
          (unsigned long long)sb2.events, (unsigned long long)sb.events);
    uint8_t raw[4096];
    FILE *fp = fopen(f.path[3], "rb");
    int rd = fp && fseek(fp, (long)(sb2.super_offset + 8) * 512, SEEK_SET) == 0 && fread(raw, 1, sizeof raw, fp) == sizeof raw;
    uint8_t tail[512], zero[512] = {0};
    /* the old log's last sector: zeroed */
    rd = rd && fseek(fp, (long)(sb2.super_offset + 8 + 2047) * 512, SEEK_SET) == 0 && fread(tail, 1, 512, fp) == 512;
    if (fp)
        fclose(fp);
    struct md_bitmap_sb bm;
    CHECK(rd && md_bitmap_decode(raw, &bm, NULL, 0) == 0 && bm.events == sb2.events &&
              !memcmp(bm.uuid, sb2.set_uuid, 16) && bm.sync_size == sb2.size,
          "bitmap header at sb + 8 (events %llu, sync_size %llu)", (unsigned long long)bm.events,
          (unsigned long long)bm.sync_size);
    CHECK(!memcmp(tail, zero, 512), "the old PPL area is emptied");
    opens_as(&f, URAID_POLICY_BITMAP, "after ppl -> bitmap");
    hashes(&f, before);
    CHECK(set_policy(&f, 5, URAID_POLICY_PPL, why, sizeof why) == -EINVAL && strstr(why, "exclude"), "%s", why);
    same_bytes(&f, before, "bitmap -> ppl");
    CHECK(set_policy(&f, 5, URAID_POLICY_RESYNC, why, sizeof why) == 0, "bitmap -> resync: %s", why);
    CHECK(fx_read_sb(&f, 1, &sb) == 0 && sb.feature_map == 0, "resync: %#x", sb.feature_map);
    hashes(&f, before);
    CHECK(set_policy(&f, 5, URAID_POLICY_BITMAP, why, sizeof why) == -EOPNOTSUPP && strstr(why, "--bitmap"), "%s", why);
    same_bytes(&f, before, "resync -> bitmap");
    CHECK(set_policy(&f, 5, URAID_POLICY_PPL, why, sizeof why) == 0, "resync -> ppl: %s", why);
    CHECK(fx_read_sb(&f, 2, &sb) == 0 && sb.feature_map == MD_FEATURE_PPL_Q && md_sb_ppl_offset(&sb) == 8,
          "back to ppl: %#x", sb.feature_map);
    opens_as(&f, URAID_POLICY_PPL, "after resync -> ppl");
    CHECK(set_policy(&f, 5, URAID_POLICY_RESYNC, why, sizeof why) == 0, "ppl -> resync: %s", why);
    CHECK(fx_read_sb(&f, 2, &sb2) == 0 && sb2.feature_map == 0 && sb2.events > sb.events, "resync: %#x",
          sb2.feature_map);
    opens_as(&f, URAID_POLICY_RESYNC, "after ppl -> resync");
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

/* An earlier write of the same rows (finished) still listed in Q's log,
 * and a later one of them cut after P's log write: P's entry must not be
 * paired with Q's entry of the earlier write (the unit tag in parity_disk
 * tells them apart), else P would make the missing chunk read back as the
 * later write and Q as the earlier one. The first child writes the chunk and
 * exits without closing; the second (whose open replays and empties the
 * logs, except Q's, whose member drops every write to its log area and its
 * parity of stripe S) writes it again, its P parity write dropped too. */
static void test_same_rows_other_write(void)
{
    harness_begin("RAID-6 ppl, missing one member: Q's log still lists an earlier write of the same rows, the "
                  "later write cut after P's log: not paired, the chunk reads back as the earlier write");
    struct fx f;
    fx_policy = URAID_POLICY_PPL;
    if (fx_setup(&f, 6, 6, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    const uint64_t S = 4;
    struct stripe_map map;
    layout_stripe(&f.geom, S, &map);
    unsigned missing = FX_SLOT(map.data_disk[1]);
    uint64_t seed1 = rng_next(&rng), off = fx_at(&f, S, 1, 0);
    if (run_write_specs(&f, missing, "-", off, CHUNK, seed1))
        goto out;
    struct rng r;
    rng_seed(&r, seed1);
    rng_fill(&r, f.model + off, CHUNK); /* the earlier write finished */
    struct md_sb sb;
    fx_read_sb(&f, map.q_disk, &sb);
    uint64_t qlog = (uint64_t)md_sb_ppl_sector(&sb) * 512, qend = f.data_offset + (S + 1) * CHUNK;
    char specs[256];
    snprintf(specs, sizeof specs, "%d:drop-writes=%llu+%llu|%d:drop-writes=%llu+%u",
             opened_index(&f, missing, map.q_disk), (unsigned long long)qlog, (unsigned long long)(qend - qlog),
             opened_index(&f, missing, map.p_disk), (unsigned long long)(f.data_offset + S * CHUNK), CHUNK);
    if (run_write_specs(&f, missing, specs, off, CHUNK, rng_next(&rng)) == 0)
        reopen_and_verify(&f, missing, "an earlier write in Q's log");
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

int main(int argc, char **argv)
{
    ssize_t len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    self_path[len > 0 ? len : 0] = 0;
    if (argc > 2 && !strcmp(argv[1], "--writes"))
        return writes_main(argc - 2, argv + 2);
    fx_log_from_env();
    harness_init(argc, argv, "test_ppl_raid6");
    rng_seed(&rng, harness_seed());
    test_math();
    test_header_fold2();
    test_log_bytes();
    test_grow();
    test_one_log_only();
    test_same_rows_other_write();
    test_interrupted(0, "healthy");
    test_interrupted(FX_SLOT(2), "missing one member");
    test_interrupted(FX_SLOT(1) | FX_SLOT(2), "missing two neighbouring members");
    test_interrupted(FX_SLOT(0) | FX_SLOT(3), "missing two members apart");
    return harness_finish();
}
