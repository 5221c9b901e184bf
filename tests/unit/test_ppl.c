/* md's partial parity log: the codec (checksums, header bytes, what md's
 * recovery makes of an entry), the policy choice at create and its
 * refusals, and crashes in the middle of writes to a degraded RAID-5:
 * with the PPL every byte the interrupted write did not touch reads back
 * right after the reopen, without it (resync) it does not.
 *
 * Helper modes (this binary exec'd afresh, never a bare fork, so that
 * ThreadSanitizer allows the child's threads):
 *   --torn-write SLOT_DROP OFF LEN SEED MEMBER...  open the members, drop
 *       every write to member bytes [OFF, OFF+LEN) of slot SLOT_DROP (its
 *       parity), write LEN bytes of seeded data at array byte... (see
 *       torn_main), exit without closing: an interrupted write whose
 *       parity never landed
 *   --writer SEED MEMBER...  random writes until killed */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"
#include "meta/ppl.h"
#include "meta/superblock.h"
#include "uraid.h"

#define MEMBER_BYTES (8u << 20)
#define CHUNK (64u << 10)

static struct rng rng;

/* ---- codec ---------------------------------------------------------------------------- */

static void test_crc(void)
{
    harness_begin("crc32c: the standard check value, the kernel's raw form, md's signature");
    CHECK(ppl_crc32c("123456789", 9) == 0xe3069283u, "crc32c(\"123456789\") = %08x", ppl_crc32c("123456789", 9));
    CHECK(ppl_crc32c_raw(~0u, "123456789", 9) == ~0xe3069283u);
    /* the running form md uses for an entry's partial parity, page by page */
    uint8_t buf[8192];
    rng_fill(&rng, buf, sizeof buf);
    uint32_t whole = ppl_crc32c(buf, sizeof buf);
    uint32_t run = ~ppl_crc32c_raw(ppl_crc32c_raw(~0u, buf, 4096), buf + 4096, 4096);
    CHECK(whole == run, "crc in two pages %08x, whole %08x", run, whole);
    static const size_t big[] = {3071, 3072, 4096, 5000, 6144, 8192};
    for (size_t t = 0; t < 40 + sizeof big / sizeof big[0]; t++) { /* every tail length, the 3-stream path */
        size_t n = t < 40 ? t : big[t - 40];
        uint32_t c = ~0u;
        for (size_t i = 0; i < n; i++) {
            c ^= buf[i];
            for (int j = 0; j < 8; j++)
                c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        }
        CHECK(ppl_crc32c(buf, n) == ~c, "length %zu", n);
    }
    harness_end();
}

static void test_header(void)
{
    harness_begin("PPL header: md's byte layout, round trip, damage found");
    struct ppl_header h = {.signature = 0x12345678u, .generation = 0x1122334455667788ull, .entries_count = 148};
    for (uint32_t i = 0; i < h.entries_count; i++)
        h.entry[i] = (struct ppl_entry){.data_sector = rng_next(&rng), .pp_size = (uint32_t)rng_next(&rng),
                                        .data_size = (uint32_t)rng_next(&rng), .parity_disk = i % 7,
                                        .checksum = (uint32_t)rng_next(&rng)};
    uint8_t b[PPL_HEADER_BYTES];
    CHECK(ppl_header_encode(&h, b) == 0);
    int ff = 1;
    for (int i = 0; i < 512; i++)
        ff &= b[i] == 0xff;
    CHECK(ff, "bytes 0..511 are not all 0xff");
    CHECK(b[512] == 0x78 && b[515] == 0x12, "signature at byte 512, little-endian");
    CHECK(b[516] == 0 && b[519] == 0, "padding");
    CHECK(b[520] == 0x88 && b[527] == 0x11, "generation at byte 520");
    CHECK(b[528] == 148 && b[529] == 0, "entries_count at byte 528");
    CHECK(b[536] == (uint8_t)h.entry[0].data_sector && b[536 + 24] == (uint8_t)h.entry[1].data_sector,
          "entries of 24 bytes at byte 536");
    CHECK(b[536 + 16] == 0 && b[536 + 24 + 16] == 1, "parity_disk at entry byte 16");
    uint8_t z[PPL_HEADER_BYTES];
    memcpy(z, b, sizeof z);
    memset(z + 532, 0, 4);
    uint32_t sum = (uint32_t)b[532] | (uint32_t)b[533] << 8 | (uint32_t)b[534] << 16 | (uint32_t)b[535] << 24;
    CHECK(ppl_crc32c(z, sizeof z) == sum, "checksum = crc32c of the header with the field zero");
    struct ppl_header d;
    CHECK(ppl_header_decode(b, &d, NULL, 0) == 0);
    CHECK(d.signature == h.signature && d.generation == h.generation && d.entries_count == 148 &&
          !memcmp(d.entry, h.entry, sizeof h.entry));
    b[4000] ^= 1;
    CHECK(ppl_header_decode(b, &d, NULL, 0) == -EBADMSG, "a flipped bit is not seen");
    h.entries_count = 149;
    CHECK(ppl_header_encode(&h, b) == -EINVAL);
    uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    CHECK(ppl_signature(uuid) == ppl_crc32c(uuid, 16));
    harness_end();
}

/* Random writes within a stripe: the bands cover exactly the blocks the
 * write modifies, each a rectangle md's recovery reads back as the same
 * cells. */
static void test_bands(void)
{
    harness_begin("bands: md's recovery of each entry covers exactly the modified cells");
    for (int t = 0; t < 3000; t++) {
        uint32_t c = 8u << rng_below(&rng, 4);
        int k = 1 + (int)rng_below(&rng, 6);
        uint64_t ss = (uint64_t)k * c, r0 = rng_below(&rng, ss), r1 = r0 + 1 + rng_below(&rng, ss - r0);
        uint64_t stripe = rng_below(&rng, 1000);
        struct ppl_band b[3];
        int nb = ppl_bands(c, k, r0, r1, b);
        static unsigned char cover[6 * 64];
        memset(cover, 0, sizeof cover);
        int bad = nb < 1 || nb > 3;
        for (int i = 0; i < nb && !bad; i++) {
            struct ppl_entry e = ppl_band_entry(&b[i], stripe, c, k, 3);
            struct ppl_entry_geom g;
            if (ppl_entry_geom(&e, c, k, &g)) {
                bad = 1;
                break;
            }
            bad |= (e.pp_size == 0) != (b[i].d_hi - b[i].d_lo + 1 == (uint32_t)k);
            /* the cells md's ppl_recover_entry reads for this entry */
            for (uint32_t row = 0; row < g.strip_sectors; row++)
                for (uint32_t d = 0; d < g.data_disks; d++) {
                    uint64_t at = g.first + row + (uint64_t)d * c;
                    if (at >= g.last)
                        continue;
                    uint64_t rel = at - stripe * ss;
                    bad |= rel >= ss || cover[rel]++;
                }
        }
        for (uint64_t x = 0; x < ss && !bad; x++)
            bad |= cover[x] != (x >= r0 && x < r1);
        CHECK(!bad, "c=%u k=%d write [%llu,%llu): bands do not match the write", c, k, (unsigned long long)r0,
              (unsigned long long)r1);
        if (bad)
            break;
    }
    harness_end();
}

/* ---- create and its refusals ------------------------------------------------------------ */

static int try_create(struct fx *f, int level, int n, int policy, int bitmap, char *why, size_t len)
{
    const char *paths[FX_MAXM];
    for (int s = 0; s < n; s++)
        paths[s] = f->path[s];
    struct uraid_create_params cp = {.level = level, .raid_devices = n, .layout = -1, .assume_clean = 1,
                                      .chunk_bytes = CHUNK, .bitmap = bitmap, .consistency_policy = policy};
    return uraid_create(paths, n, &cp, 1, why, len);
}

static void test_create_policy(void)
{
    harness_begin("create: ppl by default on RAID-5 in mdadm's layout; refusals change no byte");
    struct fx f;
    fx_policy = URAID_POLICY_DEFAULT;
    if (fx_create(&f, 5, 4, CHUNK, MEMBER_BYTES))
        goto out;
    struct md_sb sb;
    CHECK(fx_read_sb(&f, 0, &sb) == 0);
    CHECK(sb.feature_map == MD_FEATURE_PPL, "feature map %#x", sb.feature_map);
    CHECK(md_sb_ppl_offset(&sb) == 8 && md_sb_ppl_size(&sb) == 2048, "PPL %d+%u", md_sb_ppl_offset(&sb),
          md_sb_ppl_size(&sb));
    CHECK(sb.data_offset == 4096 && sb.bblog_offset == 2056, "data_offset %llu, bblog at %d",
          (unsigned long long)sb.data_offset, sb.bblog_offset);
    /* the empty header mdadm writes */
    uint8_t hdr[PPL_HEADER_BYTES];
    FILE *fp = fopen(f.path[1], "rb");
    CHECK(fp && fseek(fp, 16 * 512, SEEK_SET) == 0 && fread(hdr, 1, sizeof hdr, fp) == sizeof hdr);
    if (fp)
        fclose(fp);
    struct ppl_header h;
    CHECK(ppl_header_decode(hdr, &h, NULL, 0) == 0 && h.entries_count == 0 && h.generation == 0 &&
          h.signature == ppl_signature(sb.set_uuid), "empty header");
    static const struct {
        int level, n, policy, bitmap;
        const char *words;
    } bad[] = {
        {1, 2, URAID_POLICY_PPL, 0, "RAID-5 only"},
        {4, 4, URAID_POLICY_PPL, 0, "RAID-5 only"},
        {5, 4, URAID_POLICY_PPL, URAID_BITMAP_INTERNAL, "exclude each other"},
        {5, 4, URAID_POLICY_JOURNAL, 0, "not supported yet"},
        {5, 4, URAID_POLICY_BITMAP, URAID_BITMAP_NONE, "contradict"},
        {5, 4, URAID_POLICY_RESYNC, URAID_BITMAP_INTERNAL, "contradict"},
        {0, 3, URAID_POLICY_BITMAP, 0, "RAID-0"},
        {5, 4, 9, 0, "unknown consistency policy"},
    };
    uint64_t before[FX_MAXM];
    for (int s = 0; s < 4; s++)
        before[s] = fx_file_hash(f.path[s]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char why[512] = "";
        int rc = try_create(&f, bad[i].level, bad[i].n, bad[i].policy, bad[i].bitmap, why, sizeof why);
        CHECK(rc < 0 && strstr(why, bad[i].words), "RAID-%d policy %d bitmap %d: %d '%s'", bad[i].level,
              bad[i].policy, bad[i].bitmap, rc, why);
    }
    for (int s = 0; s < 4; s++)
        CHECK(fx_file_hash(f.path[s]) == before[s], "member %d changed by a refused create", s);
    /* RAID-6 gets uraid's PPL with partial Q (bit 31); an explicit resync has no feature bit */
    char why[512] = "";
    CHECK(try_create(&f, 6, 4, URAID_POLICY_DEFAULT, 0, why, sizeof why) == 0, "%s", why);
    CHECK(fx_read_sb(&f, 0, &sb) == 0 && sb.feature_map == MD_FEATURE_PPL_Q, "RAID-6 default: feature map %#x",
          sb.feature_map);
    CHECK(try_create(&f, 5, 4, URAID_POLICY_RESYNC, 0, why, sizeof why) == 0, "%s", why);
    CHECK(fx_read_sb(&f, 0, &sb) == 0 && sb.feature_map == 0 && sb.data_offset == 2048, "RAID-5 resync: %#x %llu",
          sb.feature_map, (unsigned long long)sb.data_offset);
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

/* ---- crashes in the middle of writes ------------------------------------------------------ */

static char self_path[4096];

/* Runs this binary afresh with args; returns its wait status. */
static int run_child(char **args, int kill_after_ms)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execv(self_path, args);
        _exit(127);
    }
    if (kill_after_ms > 0) {
        struct timespec ts = {kill_after_ms / 1000, (long)(kill_after_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

/* --torn-write WOFF WLEN SEED DROPIDX DROPOFF DROPLEN MEMBER...: the
 * write's parity (member DROPIDX's bytes [DROPOFF, +DROPLEN)) never lands,
 * and the process ends without closing the array. */
static int torn_main(int argc, char **argv)
{
    if (argc < 7)
        return 2;
    uint64_t woff = strtoull(argv[0], NULL, 0), wlen = strtoull(argv[1], NULL, 0);
    uint64_t seed = strtoull(argv[2], NULL, 0);
    int drop = atoi(argv[3]), np = argc - 6;
    char spec[128];
    snprintf(spec, sizeof spec, "drop-writes=%s+%s", argv[4], argv[5]);
    const char *specs[FX_MAXM];
    for (int i = 0; i < np; i++)
        specs[i] = i == drop ? spec : "";
    struct uraid_open_params op = {.member_sim = specs};
    struct uraid_array *a;
    char why[512];
    if (uraid_open((const char **)argv + 6, np, &op, &a, why, sizeof why)) {
        fprintf(stderr, "torn writer: %s\n", why);
        return 1;
    }
    uint8_t *buf = malloc(wlen);
    struct rng r;
    rng_seed(&r, seed);
    rng_fill(&r, buf, wlen);
    if (uraid_write(a, buf, wlen, woff))
        return 1;
    _exit(0);
}

/* --writer SEED MISSING MEMBER...: random writes to chunks of the present
 * members only, until killed. */
static int writer_main(int argc, char **argv)
{
    uint64_t seed = strtoull(argv[0], NULL, 0);
    int missing = atoi(argv[1]), np = argc - 2;
    const char *specs[FX_MAXM];
    for (int i = 0; i < np; i++)
        specs[i] = "latency=200us";
    struct uraid_open_params op = {.member_sim = specs};
    struct uraid_array *a;
    char why[512];
    if (uraid_open((const char **)argv + 2, np, &op, &a, why, sizeof why)) {
        fprintf(stderr, "writer: %s\n", why);
        return 1;
    }
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    struct layout_geom g = {.level = info.level, .layout = info.layout, .raid_disks = info.raid_devices,
                            .chunk_sectors = info.chunk_bytes / 512};
    int k = layout_data_disks(&g);
    uint64_t nstripes = info.member_data_sectors / g.chunk_sectors;
    struct rng r;
    rng_seed(&r, seed);
    uint8_t *buf = malloc(info.chunk_bytes);
    for (;;) {
        uint64_t s = rng_below(&r, nstripes);
        struct stripe_map map;
        layout_stripe(&g, s, &map);
        int d = (int)rng_below(&r, (uint64_t)k);
        if (map.data_disk[d] == missing)
            continue;
        uint32_t blocks = info.chunk_bytes / 4096, b0 = (uint32_t)rng_below(&r, blocks);
        uint32_t nb = 1 + (uint32_t)rng_below(&r, blocks - b0);
        rng_fill(&r, buf, (size_t)nb * 4096);
        uint64_t off = (s * (uint64_t)k + (uint64_t)d) * info.chunk_bytes + (uint64_t)b0 * 4096;
        if (uraid_write(a, buf, (size_t)nb * 4096, off))
            return 1;
    }
}

static uint64_t run_check(const struct fx *f, struct uraid_array *a)
{
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status st = {0};
    fx_job(f, a, URAID_JOB_CHECK, &jp, &st);
    return st.mismatch_sectors;
}

/* The member left out rebuilt onto a new file, then a check. */
static void rebuild_and_check(struct fx *f, struct uraid_array *a, const char *what)
{
    char spare[300];
    if (fx_make_file(f, "spare.img", spare, sizeof spare) || fx_add_spare(f, a, spare))
        return;
    struct uraid_job_status st;
    fx_job(f, a, URAID_JOB_RECOVER, NULL, &st);
    uint64_t mm = run_check(f, a);
    CHECK(mm == 0, "%s: %s: mismatch_cnt %llu after the rebuild", f->label, what, (unsigned long long)mm);
    fx_verify_all(f, a, what);
}

/* A partial-stripe write to a degraded RAID-5 whose parity write never
 * landed before the process died: the untouched chunk of the missing
 * member lives only in parity. */
static void test_torn(int policy)
{
    harness_beginf("torn write, degraded RAID-5, policy %s: the missing member's chunk %s", uraid_policy_name(policy),
                   policy == URAID_POLICY_PPL ? "reads back right without --force" : "is damaged (the write hole)");
    struct fx f;
    fx_policy = policy;
    if (fx_setup(&f, 5, 4, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    const uint64_t S = 5;
    struct stripe_map map;
    layout_stripe(&f.geom, S, &map);
    int X = map.data_disk[0], p = map.p_disk;
    uint64_t woff = fx_at(&f, S, 1, 8192), wlen = 4096, seed = rng_next(&rng);
    char *args[FX_MAXM + 10], a0[32], a1[32], a2[32], a3[32], a4[32], a5[32];
    int na = 0, idx = 0, drop = -1;
    args[na++] = (char *)"test_ppl";
    args[na++] = (char *)"--torn-write";
    snprintf(a0, sizeof a0, "%llu", (unsigned long long)woff);
    snprintf(a1, sizeof a1, "%llu", (unsigned long long)wlen);
    snprintf(a2, sizeof a2, "%llu", (unsigned long long)seed);
    for (int s = 0; s < f.n; s++)
        if (s != X && s == p)
            drop = idx++;
        else if (s != X)
            idx++;
    snprintf(a3, sizeof a3, "%d", drop);
    snprintf(a4, sizeof a4, "%llu", (unsigned long long)(f.data_offset + S * CHUNK));
    snprintf(a5, sizeof a5, "%u", CHUNK);
    char *nums[] = {a0, a1, a2, a3, a4, a5};
    for (int i = 0; i < 6; i++)
        args[na++] = nums[i];
    for (int s = 0; s < f.n; s++)
        if (s != X)
            args[na++] = f.path[s];
    args[na] = NULL;
    int st = run_child(args, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the torn writer failed (%#x)", st);
    struct rng r;
    rng_seed(&r, seed);
    rng_fill(&r, f.model + woff, wlen);
    const char *paths[FX_MAXM];
    int np = 0;
    for (int s = 0; s < f.n; s++)
        if (s != X)
            paths[np++] = f.path[s];
    struct uraid_array *a = NULL;
    char why[512] = "";
    int rc = uraid_open(paths, np, NULL, &a, why, sizeof why);
    if (policy == URAID_POLICY_PPL) {
        CHECK(rc == 0, "%s: dirty + degraded PPL array not opened: %s", f.label, why);
        if (rc)
            goto out;
        static struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.clean && info.consistency_policy == URAID_POLICY_PPL, "%s: not clean after the replay",
              f.label);
        fx_verify_all(&f, a, "after the PPL replay, degraded");
        rebuild_and_check(&f, a, "after the PPL replay");
        CHECK(uraid_close(a) == 0);
    } else {
        CHECK(rc == -EUCLEAN, "%s: dirty + degraded array opened without --force: %d", f.label, rc);
        if (rc == 0)
            uraid_close(a);
        struct uraid_open_params op = {.force = 1};
        if (uraid_open(paths, np, &op, &a, why, sizeof why)) {
            CHECK(0, "%s: forced open: %s", f.label, why);
            goto out;
        }
        uint8_t *got = malloc(CHUNK);
        CHECK(uraid_read(a, got, CHUNK, fx_at(&f, S, 0, 0)) == 0);
        CHECK(memcmp(got, f.model + fx_at(&f, S, 0, 0), CHUNK) != 0,
              "%s: without a log the missing chunk still read right: the test cannot tell", f.label);
        free(got);
        uraid_close(a);
    }
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

/* Random partial-stripe writes from a process killed at a random moment;
 * the chunks of the missing member are never written, so they must read
 * back as they were. Returns the sectors that did not. */
static uint64_t kill_trial(int policy, uint64_t seed, int kill_ms)
{
    struct fx f;
    uint64_t damaged = 0;
    fx_policy = policy;
    if (fx_setup(&f, 5, 4, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    const int X = 2;
    char *args[FX_MAXM + 6], sa[32], xa[8];
    int na = 0;
    args[na++] = (char *)"test_ppl";
    args[na++] = (char *)"--writer";
    snprintf(sa, sizeof sa, "%llu", (unsigned long long)seed);
    snprintf(xa, sizeof xa, "%d", X);
    args[na++] = sa;
    args[na++] = xa;
    const char *paths[FX_MAXM];
    int np = 0;
    for (int s = 0; s < f.n; s++)
        if (s != X) {
            args[na++] = f.path[s];
            paths[np++] = f.path[s];
        }
    args[na] = NULL;
    int st = run_child(args, kill_ms);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the writer ended before the kill (%#x)", st);
    struct uraid_open_params op = {.force = policy != URAID_POLICY_PPL};
    struct uraid_array *a;
    char why[512] = "";
    if (uraid_open(paths, np, &op, &a, why, sizeof why)) {
        CHECK(0, "%s: reopen after the kill: %s", f.label, why);
        goto out;
    }
    uint8_t *got = malloc(CHUNK);
    uint64_t nstripes = (f.member_bytes - f.data_offset) / CHUNK;
    for (uint64_t s = 0; s < nstripes && got; s++) {
        struct stripe_map map;
        layout_stripe(&f.geom, s, &map);
        int dx = map.disk_role[X];
        if (dx < 0)
            continue; /* the missing member holds this stripe's parity */
        uint64_t at = fx_at(&f, s, dx, 0);
        if (at + CHUNK > f.size)
            continue;
        if (uraid_read(a, got, CHUNK, at)) { /* a chunk the array cannot give back is damaged too */
            damaged += CHUNK / 512;
            continue;
        }
        for (uint32_t i = 0; i < CHUNK; i += 512)
            damaged += memcmp(got + i, f.model + at + i, 512) != 0;
    }
    free(got);
    if (policy == URAID_POLICY_PPL && damaged == 0)
        /* the written chunks are whatever the kill left: the model follows the array */
        CHECK(uraid_read(a, f.model, f.size, 0) == 0);
    if (policy == URAID_POLICY_PPL && damaged == 0)
        rebuild_and_check(&f, a, "after a kill -9 and the PPL replay");
    uraid_close(a);
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    return damaged;
}

static void test_kills(int trials)
{
    harness_beginf("kill -9 during writes to a degraded RAID-5: %d trials per policy", trials);
    uint64_t with = 0, without = 0;
    int torn_without = 0;
    for (int t = 0; t < trials; t++) {
        uint64_t seed = rng_next(&rng);
        int ms = 40 + (int)rng_below(&rng, 200);
        uint64_t d = kill_trial(URAID_POLICY_PPL, seed, ms);
        CHECK(d == 0, "ppl: trial %d (kill after %d ms): %llu untouched sectors damaged", t, ms,
              (unsigned long long)d);
        with += d;
        d = kill_trial(URAID_POLICY_RESYNC, seed, ms);
        without += d;
        torn_without += d != 0;
    }
    printf("# kill -9 trials: ppl %llu damaged sectors; resync %llu damaged sectors in %d of %d trials\n",
           (unsigned long long)with, (unsigned long long)without, torn_without, trials);
    harness_end();
}

/* ---- threads ------------------------------------------------------------------------------ */

struct thr {
    struct fx *f;
    struct uraid_array *a;
    int id, nthreads, iters, err;
    uint64_t seed;
};

/* Each thread owns every nthreads-th stripe: their writes (partial and
 * whole stripes) never overlap, so the model stays exact, while their
 * parity lands on every member's log at once. */
static void *thr_main(void *arg)
{
    struct thr *t = arg;
    struct fx *f = t->f;
    struct rng r;
    rng_seed(&r, t->seed);
    uint64_t nstripes = f->size / f->stripe_bytes;
    for (int i = 0; i < t->iters && !t->err; i++) {
        uint64_t s = rng_below(&r, nstripes / (uint64_t)t->nthreads) * (uint64_t)t->nthreads + (uint64_t)t->id;
        uint64_t b0 = rng_below(&r, f->stripe_bytes / 4096), nb = 1 + rng_below(&r, f->stripe_bytes / 4096 - b0);
        if (rng_below(&r, 8) == 0)
            b0 = 0, nb = f->stripe_bytes / 4096;
        uint64_t off = s * f->stripe_bytes + b0 * 4096, len = nb * 4096;
        rng_fill(&r, f->model + off, len); /* this thread's own bytes of the model */
        t->err = uraid_write(t->a, f->model + off, len, off);
    }
    return NULL;
}

static void test_threads(void)
{
    harness_begin("ppl: four writer threads, every log at once: data exact, no mismatch, clean reopen");
    struct fx f;
    fx_policy = URAID_POLICY_PPL;
    struct uraid_array *a;
    if (fx_setup(&f, 5, 5, CHUNK, MEMBER_BYTES, &rng, 0, &a))
        goto out;
    struct thr t[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (struct thr){.f = &f, .a = a, .id = i, .nthreads = 4, .iters = 150, .seed = rng_next(&rng)};
        pthread_create(&th[i], NULL, thr_main, &t[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(t[i].err == 0, "thread %d: write failed %d", i, t[i].err);
    }
    fx_verify_all(&f, a, "after the threads");
    CHECK(run_check(&f, a) == 0, "%s: mismatches after concurrent logged writes", f.label);
    CHECK(uraid_close(a) == 0);
    fx_verify_omitting(&f, FX_SLOT(1), 0, "reopened without slot 1");
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

/* ---- grow --consistency-policy ------------------------------------------------------------ */

static int set_policy(struct fx *f, int n, int policy, char *why, size_t len)
{
    const char *paths[FX_MAXM];
    for (int s = 0; s < n; s++)
        paths[s] = f->path[s];
    return uraid_set_consistency_policy(paths, n, policy, why, len);
}

static int set_dirty(struct fx *f, int dirty)
{
    for (int s = 0; s < f->n; s++) {
        struct md_sb sb;
        uint8_t buf[MD_SB_BYTES];
        if (fx_read_sb(f, s, &sb))
            return -EIO;
        sb.resync_offset = dirty ? 0 : MD_RESYNC_CLEAN;
        FILE *fp = fopen(f->path[s], "r+b");
        int ok = fp && md_sb_encode(&sb, buf) == 0 && fseek(fp, MD_SB_V12_BYTES, SEEK_SET) == 0 &&
                 fwrite(buf, 1, sizeof buf, fp) == sizeof buf;
        if (fp)
            fclose(fp);
        if (!ok)
            return -EIO;
    }
    return 0;
}

static void test_grow(void)
{
    harness_begin("grow --consistency-policy: ppl <-> resync; refusals change no byte");
    struct fx f;
    fx_policy = URAID_POLICY_DEFAULT;
    if (fx_setup(&f, 5, 4, CHUNK, MEMBER_BYTES, &rng, 0, NULL))
        goto out;
    uint64_t before[FX_MAXM];
    for (int s = 0; s < 4; s++)
        before[s] = fx_file_hash(f.path[s]);
    char why[512];
    static const struct {
        int n, policy, dirty, rc;
        const char *words;
    } bad[] = {
        {4, URAID_POLICY_PPL, 0, -EALREADY, "already ppl"},
        {4, URAID_POLICY_JOURNAL, 0, -EOPNOTSUPP, "not supported yet"},
        {3, URAID_POLICY_RESYNC, 0, -ENODEV, "all 4 members"},
        {4, URAID_POLICY_RESYNC, 1, -EBUSY, "not shut down cleanly"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (bad[i].dirty)
            CHECK(set_dirty(&f, 1) == 0);
        uint64_t mid[FX_MAXM];
        for (int s = 0; s < 4; s++)
            mid[s] = fx_file_hash(f.path[s]);
        why[0] = 0;
        int rc = set_policy(&f, bad[i].n, bad[i].policy, why, sizeof why);
        CHECK(rc == bad[i].rc && strstr(why, bad[i].words), "case %zu: %d '%s'", i, rc, why);
        for (int s = 0; s < 4; s++)
            CHECK(fx_file_hash(f.path[s]) == mid[s], "case %zu: member %d changed by a refusal", i, s);
        if (bad[i].dirty)
            CHECK(set_dirty(&f, 0) == 0);
    }
    for (int s = 0; s < 4; s++)
        CHECK(fx_file_hash(f.path[s]) == before[s], "member %d changed", s);
    CHECK(set_policy(&f, 4, URAID_POLICY_RESYNC, why, sizeof why) == 0, "to resync: %s", why);
    struct md_sb sb;
    CHECK(fx_read_sb(&f, 2, &sb) == 0 && !(sb.feature_map & MD_FEATURE_PPL), "feature map %#x", sb.feature_map);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (a) {
        static struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.consistency_policy == URAID_POLICY_RESYNC);
        fx_verify_all(&f, a, "after grow to resync");
        uraid_close(a);
    }
    CHECK(set_policy(&f, 4, URAID_POLICY_PPL, why, sizeof why) == 0, "back to ppl: %s", why);
    CHECK(fx_read_sb(&f, 1, &sb) == 0 && sb.feature_map == MD_FEATURE_PPL && md_sb_ppl_offset(&sb) == 8 &&
              md_sb_ppl_size(&sb) == 2048,
          "feature map %#x, PPL %d+%u", sb.feature_map, md_sb_ppl_offset(&sb), md_sb_ppl_size(&sb));
    a = fx_open(&f, NULL, 0, 0);
    if (a) {
        uint8_t buf[8192];
        rng_fill(&rng, buf, sizeof buf);
        CHECK(fx_write(&f, a, buf, sizeof buf, 12288) == 0);
        fx_verify_all(&f, a, "after grow back to ppl");
        uraid_close(a);
    }
    fx_destroy(&f);
    /* RAID-1 cannot have a PPL; a resync RAID-5 on small members has no room, nor for a bitmap */
    fx_policy = URAID_POLICY_RESYNC;
    if (fx_create(&f, 1, 2, CHUNK, MEMBER_BYTES))
        goto out;
    CHECK(set_policy(&f, 2, URAID_POLICY_PPL, why, sizeof why) == -EINVAL && strstr(why, "RAID-5 only"), "%s", why);
    fx_destroy(&f);
    if (fx_create(&f, 5, 4, CHUNK, MEMBER_BYTES))
        goto out;
    for (int s = 0; s < 4; s++)
        before[s] = fx_file_hash(f.path[s]);
    CHECK(set_policy(&f, 4, URAID_POLICY_PPL, why, sizeof why) == -ENOSPC && strstr(why, "not enough space"), "%s",
          why);
    CHECK(set_policy(&f, 4, URAID_POLICY_BITMAP, why, sizeof why) == -EOPNOTSUPP && strstr(why, "--bitmap"), "%s",
          why);
    for (int s = 0; s < 4; s++)
        CHECK(fx_file_hash(f.path[s]) == before[s], "member %d changed by a refusal", s);
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

/* ---- helpers for tests/e2e/ppl.sh (md-oracle) ------------------------------------------------ */

/* --torn-stripe S SEED OUT MEMBER... (every member, slot order): the
 * torn write of test_torn on stripe S, data written to OUT; prints
 * "offset=N len=N missing=SLOT parity=SLOT" (missing: the member whose
 * chunk of S the write leaves alone). */
static int torn_stripe_main(int argc, char **argv)
{
    uint64_t S = strtoull(argv[0], NULL, 0), seed = strtoull(argv[1], NULL, 0);
    const char *out = argv[2];
    int n = argc - 3;
    struct md_sb sb;
    if (n < 3 || fx_read_sb_path(argv[3], &sb))
        return 2;
    struct layout_geom g = {.level = sb.level, .layout = (int)sb.layout, .raid_disks = (int)sb.raid_disks,
                            .chunk_sectors = sb.chunksize};
    struct stripe_map map;
    layout_stripe(&g, S, &map);
    int k = layout_data_disks(&g);
    uint64_t chunk = (uint64_t)sb.chunksize * 512, woff = (S * (uint64_t)k + 1) * chunk + 8192, wlen = 4096;
    char a0[32], a1[32], a2[32], a3[32], a4[32], a5[32];
    snprintf(a0, sizeof a0, "%llu", (unsigned long long)woff);
    snprintf(a1, sizeof a1, "%llu", (unsigned long long)wlen);
    snprintf(a2, sizeof a2, "%llu", (unsigned long long)seed);
    snprintf(a3, sizeof a3, "%d", map.p_disk);
    snprintf(a4, sizeof a4, "%llu", (unsigned long long)((sb.data_offset + S * sb.chunksize) * 512));
    snprintf(a5, sizeof a5, "%llu", (unsigned long long)chunk);
    char *args[FX_MAXM + 10] = {(char *)"test_ppl", (char *)"--torn-write", a0, a1, a2, a3, a4, a5};
    for (int i = 0; i < n; i++)
        args[8 + i] = argv[3 + i];
    args[8 + n] = NULL;
    int st = run_child(args, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        return 1;
    uint8_t *buf = malloc(wlen);
    struct rng r;
    rng_seed(&r, seed);
    rng_fill(&r, buf, wlen);
    FILE *fp = fopen(out, "wb");
    if (!fp || fwrite(buf, 1, wlen, fp) != wlen)
        return 1;
    fclose(fp);
    printf("offset=%llu len=%llu missing=%d parity=%d\n", (unsigned long long)woff, (unsigned long long)wlen,
           map.data_disk[0], map.p_disk);
    return 0;
}

/* --md-tear MEMBER...: what md's power cut in the middle of its writes
 * could leave: the parity rows every entry of each member's newest PPL
 * header covers overwritten with junk, and the array marked dirty. Prints
 * the entries torn. */
static int md_tear_main(int argc, char **argv)
{
    int torn = 0;
    for (int i = 0; i < argc; i++) {
        struct md_sb sb;
        if (fx_read_sb_path(argv[i], &sb) || !md_sb_has_ppl(&sb))
            return 2;
        uint64_t bytes = (uint64_t)md_sb_ppl_size(&sb) * 512, start = (uint64_t)md_sb_ppl_sector(&sb) * 512;
        uint8_t *area = malloc(bytes);
        FILE *fp = fopen(argv[i], "r+b");
        if (!area || !fp || fseek(fp, (long)start, SEEK_SET) || fread(area, 1, bytes, fp) != bytes)
            return 1;
        struct ppl_header h, best = {0};
        int found = 0;
        for (uint64_t off = 0; off + PPL_HEADER_BYTES <= bytes;) {
            if (ppl_header_decode(area + off, &h, NULL, 0) || h.signature != ppl_signature(sb.set_uuid) ||
                (found && best.generation > h.generation))
                break;
            best = h;
            found = 1;
            off += PPL_HEADER_BYTES;
            for (uint32_t e = 0; e < h.entries_count; e++)
                off += h.entry[e].pp_size;
        }
        struct layout_geom g = {.level = 5, .layout = (int)sb.layout, .raid_disks = (int)sb.raid_disks,
                                .chunk_sectors = sb.chunksize};
        int k = layout_data_disks(&g);
        for (uint32_t e = 0; found && e < best.entries_count; e++) {
            struct ppl_entry_geom eg;
            if (ppl_entry_geom(&best.entry[e], sb.chunksize, k, &eg))
                continue;
            uint64_t stripe = eg.first / ((uint64_t)k * sb.chunksize);
            uint64_t msec = sb.data_offset + stripe * sb.chunksize + eg.first % sb.chunksize;
            static uint8_t junk[512];
            memset(junk, 0x5a, sizeof junk);
            for (uint32_t r = 0; r < eg.strip_sectors; r++)
                if (fseek(fp, (long)((msec + r) * 512), SEEK_SET) || fwrite(junk, 1, 512, fp) != 512)
                    return 1;
            torn++;
        }
        sb.resync_offset = 0;
        uint8_t sbuf[MD_SB_BYTES];
        if (md_sb_encode(&sb, sbuf) || fseek(fp, MD_SB_V12_BYTES, SEEK_SET) ||
            fwrite(sbuf, 1, sizeof sbuf, fp) != sizeof sbuf)
            return 1;
        fclose(fp);
        free(area);
    }
    printf("torn=%d\n", torn);
    return 0;
}

int main(int argc, char **argv)
{
    ssize_t len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    self_path[len > 0 ? len : 0] = 0;
    if (argc > 2 && !strcmp(argv[1], "--torn-write"))
        return torn_main(argc - 2, argv + 2);
    if (argc > 2 && !strcmp(argv[1], "--writer"))
        return writer_main(argc - 2, argv + 2);
    if (argc > 5 && !strcmp(argv[1], "--torn-stripe"))
        return torn_stripe_main(argc - 2, argv + 2);
    if (argc > 2 && !strcmp(argv[1], "--md-tear"))
        return md_tear_main(argc - 2, argv + 2);
    fx_log_from_env();
    harness_init(argc, argv, "test_ppl");
    rng_seed(&rng, harness_seed());
    test_crc();
    test_header();
    test_bands();
    test_create_policy();
    test_torn(URAID_POLICY_PPL);
    test_torn(URAID_POLICY_RESYNC);
    test_grow();
    test_threads();
    const char *quick = getenv("URAID_TEST_QUICK");
    test_kills(quick && *quick == '1' ? 2 : 6);
    return harness_finish();
}
