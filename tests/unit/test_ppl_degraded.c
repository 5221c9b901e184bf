/* The partial parity log on a RAID-5 that is already degraded, at the
 * cases a power cut can leave that partial parity alone cannot recover
 * (test_crash finds them at random; here each is made on purpose):
 *
 *   - a write that modifies the missing member's chunk together with
 *     another data chunk in the same rows (partly, and a whole stripe):
 *     the missing chunk lives in parity only, so if parity lands and the
 *     other chunk's write does not, replay needs the missing chunk's new
 *     data, which the entry's partial parity carries (docs/FORMAT.md, PPL,
 *     "folded");
 *   - a later log write of the same member, cut while its partial parity
 *     was going out, lists a write whose member writes had started: its
 *     partial parity is taken from the earlier header that holds it whole;
 *   - a later log write whose header is torn: the header before it must
 *     still be there, whole (headers go one after the other, not over the
 *     one before).
 *
 * Each interrupted write is made by this binary started afresh
 * (--writes): one member drops its writes to one range (drop-writes), and
 * the process ends without closing the array. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"
#include "meta/ppl.h"
#include "meta/superblock.h"
#include "uraid.h"

#define MEMBER_BYTES (8u << 20)
#define CHUNK (64u << 10)
#define MAXW 4

static struct rng rng;
static char self_path[4096];

/* --writes DROPIDX DROPOFF DROPLEN SEED NW WOFF WLEN ... MEMBER...: the
 * opened member DROPIDX drops every write to its bytes [DROPOFF, +DROPLEN)
 * (DROPIDX -1: none); write i gets the data of seed + i; the process ends
 * without closing the array. */
static int writes_main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    int drop = atoi(argv[0]), nw = atoi(argv[4]);
    uint64_t seed = strtoull(argv[3], NULL, 0);
    if (nw < 1 || nw > MAXW || argc < 5 + 2 * nw + 3)
        return 2;
    char spec[128];
    snprintf(spec, sizeof spec, "drop-writes=%s+%s", argv[1], argv[2]);
    int np = argc - 5 - 2 * nw;
    const char *specs[FX_MAXM];
    for (int i = 0; i < np; i++)
        specs[i] = i == drop ? spec : "";
    struct uraid_open_params op = {.member_sim = specs};
    struct uraid_array *a;
    char why[512];
    if (uraid_open((const char **)argv + 5 + 2 * nw, np, &op, &a, why, sizeof why)) {
        fprintf(stderr, "writer: %s\n", why);
        return 1;
    }
    for (int i = 0; i < nw; i++) {
        uint64_t off = strtoull(argv[5 + 2 * i], NULL, 0), len = strtoull(argv[6 + 2 * i], NULL, 0);
        uint8_t *buf = malloc(len);
        struct rng r;
        rng_seed(&r, seed + (uint64_t)i);
        rng_fill(&r, buf, len);
        if (!buf || uraid_write(a, buf, len, off))
            return 1;
        free(buf);
    }
    _exit(0);
}

struct wr {
    uint64_t off, len;
};

/* Runs --writes on every member but slot `missing`; drop_slot (-1: none)
 * drops its writes to member bytes [drop_off, +drop_len) past data_offset.
 * The model gets every write, then `lost` (a range the dropped write
 * leaves as it was) back from `keep`. */
static int run_writes(struct fx *f, int missing, int drop_slot, uint64_t drop_off, uint64_t drop_len,
                      const struct wr *w, int nw, uint64_t seed)
{
    char num[5 + 2 * MAXW][32], *args[FX_MAXM + 20];
    int na = 0, idx = 0, drop = -1;
    for (int s = 0; s < f->n; s++) {
        if (s == missing)
            continue;
        if (s == drop_slot)
            drop = idx;
        idx++;
    }
    snprintf(num[0], 32, "%d", drop);
    snprintf(num[1], 32, "%llu", (unsigned long long)(f->data_offset + drop_off));
    snprintf(num[2], 32, "%llu", (unsigned long long)drop_len);
    snprintf(num[3], 32, "%llu", (unsigned long long)seed);
    snprintf(num[4], 32, "%d", nw);
    for (int i = 0; i < nw; i++) {
        snprintf(num[5 + 2 * i], 32, "%llu", (unsigned long long)w[i].off);
        snprintf(num[6 + 2 * i], 32, "%llu", (unsigned long long)w[i].len);
    }
    args[na++] = (char *)"test_ppl_degraded";
    args[na++] = (char *)"--writes";
    for (int i = 0; i < 5 + 2 * nw; i++)
        args[na++] = num[i];
    for (int s = 0; s < f->n; s++)
        if (s != missing)
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
    for (int i = 0; i < nw; i++) {
        struct rng r;
        rng_seed(&r, seed + (uint64_t)i);
        rng_fill(&r, f->model + w[i].off, w[i].len);
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* Opens without slot `missing` and without --force (the log must cover
 * the interrupted writes), reads everything against the model, rebuilds
 * the missing member onto a spare and checks: mismatch_cnt 0. */
static void reopen_and_verify(struct fx *f, int missing, const char *what)
{
    const char *paths[FX_MAXM];
    int np = 0;
    for (int s = 0; s < f->n; s++)
        if (s != missing)
            paths[np++] = f->path[s];
    struct uraid_array *a = NULL;
    char why[512] = "";
    int rc = uraid_open(paths, np, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "%s: %s: dirty + degraded PPL array not opened: %s", f->label, what, why);
    if (rc)
        return;
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.clean, "%s: %s: not clean after the replay", f->label, what);
    fx_verify_all(f, a, what);
    char spare[300];
    if (fx_make_file(f, "spare.img", spare, sizeof spare) == 0 && fx_add_spare(f, a, spare) == 0) {
        struct uraid_job_status st;
        fx_job(f, a, URAID_JOB_RECOVER, NULL, &st);
        struct uraid_job_params jp = {.slot = -1};
        fx_job(f, a, URAID_JOB_CHECK, &jp, &st);
        CHECK(st.mismatch_sectors == 0, "%s: %s: mismatch_cnt %llu after the rebuild", f->label, what,
              (unsigned long long)st.mismatch_sectors);
        fx_verify_all(f, a, what);
    }
    CHECK(uraid_close(a) == 0);
}

/* A write of data indexes 0 (on the missing member) and 1 in the same
 * rows of stripe S (whole: every index of the stripe), whose write to
 * index 1 never lands while parity does. */
static void test_missing_modified(int whole)
{
    harness_beginf("degraded RAID-5, a %s write that modifies the missing member's chunk and another in the same "
                   "rows, that chunk's write lost, parity landed: both read back as the replay left them",
                   whole ? "full-stripe" : "partial-stripe");
    struct fx f;
    fx_policy = URAID_POLICY_PPL;
    if (fx_setup(&f, 5, 4, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    const uint64_t S = 5;
    struct stripe_map map;
    layout_stripe(&f.geom, S, &map);
    int missing = map.data_disk[0], other = map.data_disk[1];
    /* partial: rows 16.. of index 0 and rows ..32 of index 1 (rows 16..32 hold both) */
    struct wr w = whole ? (struct wr){fx_at(&f, S, 0, 0), f.stripe_bytes}
                        : (struct wr){fx_at(&f, S, 0, 8192), CHUNK + 8192};
    uint8_t *keep = malloc(CHUNK);
    memcpy(keep, f.model + fx_at(&f, S, 1, 0), CHUNK);
    if (run_writes(&f, missing, other, S * CHUNK, CHUNK, &w, 1, rng_next(&rng)) == 0) {
        memcpy(f.model + fx_at(&f, S, 1, 0), keep, CHUNK); /* index 1 never got its new data */
        reopen_and_verify(&f, missing, "after the replay");
    }
    free(keep);
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

/* The chain of headers in one member's area (as md's recovery walks it):
 * offsets into the area; the area itself in *area. */
static int walk_chain(const char *path, uint8_t **area, uint64_t *start, uint64_t *bytes, uint64_t *off, int *n,
                      struct ppl_header *newest)
{
    struct md_sb sb;
    if (fx_read_sb_path(path, &sb) || !md_sb_has_ppl(&sb))
        return -EINVAL;
    *bytes = (uint64_t)md_sb_ppl_size(&sb) * 512;
    *start = (uint64_t)md_sb_ppl_sector(&sb) * 512;
    *area = malloc(*bytes);
    FILE *fp = fopen(path, "rb");
    int rc = *area && fp && fseek(fp, (long)*start, SEEK_SET) == 0 && fread(*area, 1, *bytes, fp) == *bytes ? 0 : -EIO;
    if (fp)
        fclose(fp);
    *n = 0;
    struct ppl_header *h = malloc(sizeof *h);
    for (uint64_t at = 0; rc == 0 && h && at + PPL_HEADER_BYTES <= *bytes;) {
        if (ppl_header_decode(*area + at, h, NULL, 0) || h->signature != ppl_signature(sb.set_uuid) ||
            (*n && newest->generation > h->generation))
            break;
        *newest = *h;
        off[(*n)++] = at;
        at += PPL_HEADER_BYTES;
        for (uint32_t e = 0; e < h->entries_count; e++)
            at += h->entry[e].pp_size;
    }
    free(h);
    return rc;
}

static int put_bytes(const char *path, const void *buf, size_t len, uint64_t at)
{
    FILE *fp = fopen(path, "r+b");
    int rc = fp && fseek(fp, (long)at, SEEK_SET) == 0 && fwrite(buf, 1, len, fp) == len ? 0 : -EIO;
    if (fp)
        fclose(fp);
    return rc;
}

/* A partial write of index 1 of stripe S, its parity lost (the missing
 * member's chunk 0 is then right only after a replay), and then what a cut
 * in a later log write of the parity member can leave:
 *   torn_pp: a header listing that write again, whole, with the partial
 *            parity after it torn;
 *   torn_hdr: a second write (stripe S + n, the same parity member) whose
 *            header is then torn. */
static void test_later_log_write(int torn_hdr)
{
    harness_beginf("degraded RAID-5, a later log write of the parity member cut in its %s: the write before it "
                   "still replays from the earlier header",
                   torn_hdr ? "header" : "partial parity");
    struct fx f;
    fx_policy = URAID_POLICY_PPL;
    uint8_t *area = NULL;
    if (fx_setup(&f, 5, 4, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    const uint64_t S = 5;
    struct stripe_map map;
    layout_stripe(&f.geom, S, &map);
    int missing = map.data_disk[0], p = map.p_disk;
    struct wr w[2] = {{fx_at(&f, S, 1, 8192), 4096}, {fx_at(&f, S + (uint64_t)f.n, 1, 0), 8192}};
    if (run_writes(&f, missing, p, S * CHUNK, CHUNK, w, torn_hdr ? 2 : 1, rng_next(&rng)))
        goto out;
    uint64_t start, bytes, off[512];
    int n = 0;
    static struct ppl_header newest;
    if (walk_chain(f.path[p], &area, &start, &bytes, off, &n, &newest) || n < 1) {
        CHECK(0, "%s: no PPL header on the parity member", f.label);
        goto out;
    }
    if (torn_hdr) {
        /* the second write's header must not have taken the first one's place */
        CHECK(n >= 2, "%s: the parity member's log holds %d header(s): the second log write replaced the first",
              f.label, n);
        uint8_t b = area[off[n - 1] + 600] ^ 0x5a; /* inside its entries: the checksum fails */
        CHECK(put_bytes(f.path[p], &b, 1, start + off[n - 1] + 600) == 0);
    } else {
        /* the same entries again, one generation on, after the newest header: their partial parity torn */
        uint64_t pp = 0;
        for (uint32_t e = 0; e < newest.entries_count; e++)
            pp += newest.entry[e].pp_size;
        uint64_t at = off[n - 1] + PPL_HEADER_BYTES + pp;
        CHECK(pp > 0 && at + PPL_HEADER_BYTES + pp < bytes, "%s: no room after the newest header", f.label);
        uint8_t *copy = malloc(PPL_HEADER_BYTES + pp);
        newest.generation++;
        ppl_header_encode(&newest, copy);
        memset(copy + PPL_HEADER_BYTES, 0x5a, pp);
        CHECK(put_bytes(f.path[p], copy, PPL_HEADER_BYTES + pp, start + at) == 0);
        free(copy);
    }
    reopen_and_verify(&f, missing, "after the replay");
out:
    free(area);
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
    harness_init(argc, argv, "test_ppl_degraded");
    rng_seed(&rng, harness_seed());
    test_missing_modified(0);
    test_missing_modified(1);
    test_later_log_write(0);
    test_later_log_write(1);
    return harness_finish();
}
