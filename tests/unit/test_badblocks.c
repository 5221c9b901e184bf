/* md bad-block log: the range list against a per-sector model under random
 * add/clear/check, encode/decode round trips, exact entry bytes, limits,
 * the two bad blocks md recorded in fixture g (as MANIFEST says), and
 * mdadm --examine-badblocks listing a log we write (the oracle).
 * Run from the project root. Randomised: prints its seed. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "meta/badblocks.h"
#include "meta/le.h"
#include "meta/superblock.h"

static struct rng rng;
static const char *fixtures = "../shared/fixtures/md";
static char tmpdir[] = "/tmp/uraid-test-bb.XXXXXX";

static int invariants_ok(const struct md_bblist *l)
{
    uint64_t unit = 1ull << l->shift;
    for (uint32_t i = 0; i < l->count; i++) {
        if (!l->r[i].len || l->r[i].start % unit || l->r[i].len % unit)
            return 0;
        if (i && l->r[i - 1].start + l->r[i - 1].len >= l->r[i].start)
            return 0;      /* sorted, not overlapping, not touching */
    }
    return 1;
}

/* ---- the list against a model -------------------------------------------- */

#define SPACE 4096

static void model_vs_list(uint8_t shift)
{
    static uint8_t model[SPACE];
    struct md_bblist l;
    memset(model, 0, sizeof model);
    md_bb_init(&l, shift);
    uint64_t unit = 1ull << shift;
    for (int op = 0; op < 4000; op++) {
        uint64_t s = rng_below(&rng, SPACE - 64);
        uint64_t n = 1 + rng_below(&rng, rng_below(&rng, 4) ? 8 : 64);
        int what = (int)rng_below(&rng, 3);
        if (what == 0) {
            CHECK(md_bb_add(&l, s, n) == 0);
            for (uint64_t x = s / unit * unit; x < (s + n + unit - 1) / unit * unit; x++)
                model[x] = 1;   /* a partly bad unit is bad */
        } else if (what == 1) {
            CHECK(md_bb_clear(&l, s, n) == 0);
            for (uint64_t x = (s + unit - 1) / unit * unit; x + unit <= s + n; x += unit)
                memset(model + x, 0, unit);   /* whole units only */
        } else {
            uint64_t fb = 0, bl = 0;
            int got = md_bb_check(&l, s, n, &fb, &bl);
            int want = 0;
            uint64_t wfb = 0, wbl = 0;
            for (uint64_t x = s; x < s + n; x++)
                if (model[x]) {
                    if (!want)
                        wfb = x;
                    want = 1;
                    wbl++;
                } else if (want)
                    break;
            CHECK(got == want, "check %llu+%llu: %d want %d", (unsigned long long)s, (unsigned long long)n, got,
                  want);
            if (got && want)
                CHECK(fb == wfb && bl == wbl, "first bad %llu+%llu want %llu+%llu", (unsigned long long)fb,
                      (unsigned long long)bl, (unsigned long long)wfb, (unsigned long long)wbl);
        }
        CHECK(invariants_ok(&l), "invariants after op %d", op);
        /* the list equals the model, sector by sector */
        static uint8_t from_list[SPACE];
        memset(from_list, 0, sizeof from_list);
        for (uint32_t i = 0; i < l.count; i++)
            memset(from_list + l.r[i].start, 1, l.r[i].len);
        if (memcmp(from_list, model, SPACE)) {
            CHECK(0, "shift %u: list differs from the model after op %d", shift, op);
            return;
        }
        /* and it survives the log */
        if (op % 50 == 0) {
            uint8_t area[4096];
            struct md_bblist back;
            int n_ent = md_bb_encode(&l, area, sizeof area);
            CHECK(n_ent == (int)md_bb_entries_needed(&l), "encode: %d", n_ent);
            CHECK(md_bb_decode(area, sizeof area, shift, &back) == 0);
            CHECK(back.count == l.count && !memcmp(back.r, l.r, l.count * sizeof l.r[0]), "log round trip");
        }
    }
}

static void test_model(void)
{
    model_vs_list(0);
    model_vs_list(3);
}

/* ---- exact bytes, merging, limits ----------------------------------------- */

static void test_bytes_and_limits(void)
{
    struct md_bblist l, back;
    uint8_t area[4096];
    md_bb_init(&l, 0);
    CHECK(md_bb_add(&l, 100, 8) == 0 && md_bb_add(&l, 108, 4) == 0 && l.count == 1 && l.r[0].len == 12,
          "touching ranges merge");
    CHECK(md_bb_add(&l, 90, 20) == 0 && l.count == 1 && l.r[0].start == 90 && l.r[0].len == 22, "overlap merges");
    CHECK(md_bb_add(&l, 5000, 1100) == 0 && l.count == 2);
    CHECK(md_bb_entries_needed(&l) == 4, "1100 sectors take 3 entries of <= 512");
    CHECK(md_bb_encode(&l, area, sizeof area) == 4);
    CHECK(le64_get(area) == (90ull << 10 | 22), "entry 0 = (start << 10) | len, LE");
    CHECK(le64_get(area + 8) == (5000ull << 10 | 512) && le64_get(area + 16) == (5512ull << 10 | 512) &&
          le64_get(area + 24) == (6024ull << 10 | 76), "a long range split in 512-sector pieces");
    for (int i = 32; i < 4096; i++)
        if (area[i] != 0xff) {
            CHECK(0, "byte %d after the entries is 0x%02x, want 0xff", i, area[i]);
            break;
        }
    CHECK(md_bb_decode(area, sizeof area, 0, &back) == 0 && back.count == 2 && back.r[1].len == 1100,
          "split entries merge back");
    CHECK(md_bb_clear(&l, 5100, 10) == 0 && l.count == 3 && l.r[1].len == 100 && l.r[2].start == 5110,
          "clear in the middle splits");
    CHECK(md_bb_clear(&l, 0, 100000) == 0 && l.count == 0, "clear everything");
    CHECK(md_bb_add(&l, 1, 0) == -EINVAL && md_bb_add(&l, UINT64_MAX, 2) == -EINVAL, "len 0 / overflow");

    /* zeroed area (md leaves a new member's log zeroed), terminator */
    memset(area, 0, sizeof area);
    CHECK(md_bb_decode(area, sizeof area, 0, &back) == 0 && back.count == 0, "a zeroed area is empty");
    memset(area, 0xff, sizeof area);
    le64_put(area, 7ull << 10 | 1);
    le64_put(area + 16, 9ull << 10 | 1);   /* after the terminator: ignored */
    CHECK(md_bb_decode(area, sizeof area, 0, &back) == 0 && back.count == 1 && back.r[0].start == 7);
    le64_put(area, 3ull << 10 | 2);
    CHECK(md_bb_decode(area, sizeof area, 3, &back) == 0 && back.r[0].start == 24 && back.r[0].len == 16,
          "shift 3: units of 8 sectors");
    CHECK(md_bb_decode(area, sizeof area, 10, &back) == -EINVAL, "shift 10 refused");

    /* shift: add widens, clear narrows */
    md_bb_init(&l, 3);
    CHECK(md_bb_add(&l, 9, 1) == 0 && l.r[0].start == 8 && l.r[0].len == 8);
    CHECK(md_bb_clear(&l, 9, 7) == 0 && l.count == 1, "a partial unit is not cleared");
    CHECK(md_bb_clear(&l, 8, 8) == 0 && l.count == 0);

    /* full list: -ENOSPC and unchanged */
    md_bb_init(&l, 0);
    for (int i = 0; i < MD_BB_MAX_RANGES; i++)
        CHECK(md_bb_add(&l, (uint64_t)i * 10, 1) == 0);
    CHECK(md_bb_add(&l, 100000, 1) == -ENOSPC && l.count == MD_BB_MAX_RANGES, "list full");
    CHECK(md_bb_add(&l, 11, 1) == 0 && l.count == MD_BB_MAX_RANGES, "merging still works when full");
    CHECK(md_bb_clear(&l, 0, 1) == 0 && md_bb_add(&l, 100000, 1) == 0);
    md_bb_init(&back, 0);
    CHECK(md_bb_add(&back, 0, 10) == 0 && md_bb_add(&back, 20, 10) == 0 && md_bb_clear(&back, 3, 2) == 0);
    CHECK(md_bb_encode(&l, area, sizeof area) == MD_BB_MAX_RANGES, "512 entries fill a page, no terminator");
    CHECK(md_bb_encode(&l, area, 1024) == -ENOSPC, "do not fit in 2 sectors");
    /* splitting in a full list */
    md_bb_init(&l, 0);
    for (int i = 0; i < MD_BB_MAX_RANGES; i++)
        md_bb_add(&l, (uint64_t)i * 10, 5);
    CHECK(md_bb_clear(&l, 1, 2) == -ENOSPC && l.count == MD_BB_MAX_RANGES && l.r[0].len == 5,
          "a split that does not fit leaves the list unchanged");
}

/* ---- fixture g: what md recorded ------------------------------------------ */

static void test_fixture_g(void)
{
    /* MANIFEST: "bad blocks recorded by md on slot N (...): S for L sectors" */
    char path[300], line[512];
    snprintf(path, sizeof path, "%s/MANIFEST", fixtures);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "MANIFEST at %s (run from the project root; ../shared must exist)", path);
    if (!f)
        return;
    unsigned want_slot[8];
    unsigned long long want_start[8], want_len[8];
    int nwant = 0;
    while (fgets(line, sizeof line, f) && nwant < 8) {
        const char *p = strstr(line, "bad blocks recorded by md on slot ");
        const char *q = strstr(line, "): ");
        if (p == line && q && sscanf(line, "bad blocks recorded by md on slot %u", &want_slot[nwant]) == 1 &&
            sscanf(q, "): %llu for %llu sectors", &want_start[nwant], &want_len[nwant]) == 2)
            nwant++;
    }
    fclose(f);
    CHECK(nwant == 2, "MANIFEST lists %d recorded bad blocks, expected 2", nwant);
    for (unsigned slot = 0; slot < 6; slot++) {
        char cmd[700], out[256], img[400];
        snprintf(img, sizeof img, "%s/g%u.img", tmpdir, slot);
        snprintf(cmd, sizeof cmd, "xz -dc '%s/g-raid6-ls-n6-c64k-bitmap-bbl/slot%u.img.xz' > '%s' 2>&1", fixtures,
                 slot, img);
        CHECK(harness_run(cmd, out, sizeof out) == 0, "unpack slot %u: %s", slot, out);
        uint8_t raw[MD_SB_BYTES], area[4096], again[4096];
        struct md_sb sb;
        int fd = open(img, O_RDONLY);
        CHECK(fd >= 0 && pread(fd, raw, sizeof raw, 4096) == (ssize_t)sizeof raw);
        CHECK(md_sb_decode(raw, 8, &sb, NULL, 0) == 0, "slot %u superblock", slot);
        off_t at = (off_t)(sb.super_offset + (uint64_t)(int64_t)sb.bblog_offset) * 512;
        size_t bytes = (size_t)sb.bblog_size * 512;
        CHECK(bytes == sizeof area && pread(fd, area, bytes, at) == (ssize_t)bytes);
        close(fd);
        unlink(img);
        struct md_bblist l;
        md_bb_init(&l, sb.bblog_shift);
        if (sb.feature_map & MD_FEATURE_BAD_BLOCKS)
            CHECK(md_bb_decode(area, bytes, sb.bblog_shift, &l) == 0);
        int expected = -1;
        for (int i = 0; i < nwant; i++)
            if (want_slot[i] == slot)
                expected = i;
        if (expected < 0) {
            CHECK(l.count == 0, "slot %u: no bad blocks (feature_map 0x%x)", slot, sb.feature_map);
            continue;
        }
        CHECK(l.count == 1 && l.r[0].start == want_start[expected] && l.r[0].len == want_len[expected],
              "slot %u: %u ranges, first %llu+%llu; MANIFEST %llu for %llu", slot, l.count,
              (unsigned long long)(l.count ? l.r[0].start : 0), (unsigned long long)(l.count ? l.r[0].len : 0),
              want_start[expected], want_len[expected]);
        CHECK(md_bb_check(&l, sb.data_offset + 296, 1, NULL, NULL) == (slot == 1), "slot 1's block at data+296");
        CHECK(md_bb_encode(&l, again, sizeof again) == 1 && !memcmp(again, area, sizeof area),
              "slot %u: re-encoding gives md's log page byte for byte", slot);
    }
}

/* ---- the oracle: mdadm --examine-badblocks --------------------------------- */

static void test_mdadm(void)
{
    char out[4096], cmd[700];
    int st = harness_run("mdadm --version 2>&1", out, sizeof out);
    CHECK(st == 0 && strstr(out, "mdadm - v"), "mdadm must be installed (scripts/deps.sh): %s", out);
    if (st)
        return;
    const uint64_t dev_sectors = 64 * 2048;
    struct md_sb_create_params p = {
        .level = 5, .layout = 2, .chunk_sectors = 128, .raid_disks = 3, .dev_sectors = dev_sectors,
        .name = "bb", .homehost = "", .ctime = 1796000000, .assume_clean = 1,
    };
    p.uuid[0] = 0x42;
    uint8_t du[16] = {0x77};
    struct md_sb sb;
    CHECK(md_sb_init(&sb, &p, 1, du, dev_sectors, NULL, 0) == 0);
    struct md_bblist l;
    md_bb_init(&l, 0);
    md_bb_add(&l, 100000, 1000);
    md_bb_add(&l, 5000, 8);
    md_bb_add(&l, 2055, 1);
    uint8_t area[4096], raw[MD_SB_BYTES];
    CHECK(md_bb_encode(&l, area, (size_t)sb.bblog_size * 512) == 4);
    sb.feature_map |= MD_FEATURE_BAD_BLOCKS;   /* md's rule: set while the list is not empty */
    CHECK(md_sb_encode(&sb, raw) == 0);
    char img[300];
    snprintf(img, sizeof img, "%s/bb.img", tmpdir);
    int fd = open(img, O_CREAT | O_RDWR | O_TRUNC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)dev_sectors * 512) == 0);
    CHECK(pwrite(fd, raw, sizeof raw, 4096) == (ssize_t)sizeof raw);
    CHECK(pwrite(fd, area, sizeof area, (off_t)(8 + sb.bblog_offset) * 512) == (ssize_t)sizeof area);
    close(fd);
    snprintf(cmd, sizeof cmd, "mdadm --examine-badblocks '%s' 2>&1", img);
    st = harness_run(cmd, out, sizeof out);
    CHECK(st == 0, "mdadm --examine-badblocks exit %d: %s", st, out);
    const char *want[] = {"2055 for 1 sectors", "5000 for 8 sectors", "100000 for 512 sectors",
                          "100512 for 488 sectors"};
    const char *prev = out;
    for (int i = 0; i < 4; i++) {
        const char *at = strstr(out, want[i]);
        CHECK(at != NULL && at >= prev, "mdadm lists '%s' in order: %s", want[i], out);
        if (at)
            prev = at;
    }
    snprintf(cmd, sizeof cmd, "mdadm --examine '%s' 2>&1", img);
    st = harness_run(cmd, out, sizeof out);
    CHECK(st == 0 && strstr(out, "bad blocks present") && strstr(out, "- correct") && strstr(out, "Feature Map : 0x8"),
          "mdadm --examine: %s", out);
    unlink(img);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_badblocks");
    rng_seed(&rng, harness_seed());
    if (!mkdtemp(tmpdir)) {
        CHECK(0, "mkdtemp");
        return harness_finish();
    }
    harness_begin("add/clear/check agree with a per-sector model (shift 0 and 3)");
    test_model();
    harness_end();
    harness_begin("entry bytes, merging, splitting, units and limits");
    test_bytes_and_limits();
    harness_end();
    harness_begin("fixture g: the bad blocks md recorded, as MANIFEST says");
    test_fixture_g();
    harness_end();
    harness_begin("mdadm --examine-badblocks lists the log we write");
    test_mdadm();
    harness_end();
    rmdir(tmpdir);
    return harness_finish();
}
