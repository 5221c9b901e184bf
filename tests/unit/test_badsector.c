/* Bad sectors (issue 6): a read error is repaired, not punished.
 *   - a pending sector (unreadable until written): rebuilt, rewritten,
 *     re-read, counted in cnt_corrected_read, nothing listed;
 *   - a sector the member cannot keep (the rewrite fails, or the re-read
 *     still fails): recorded in its md bad-block log (BAD_BLOCKS set,
 *     mdadm --examine-badblocks lists it), the member stays in sync, reads
 *     of the range are rebuilt without touching it, also after a reopen;
 *   - a later successful write of the range takes it off the log;
 *   - a full log, or a member that is gone, fails the member.
 * Prints its seed; URAID_TEST_SEED=N replays. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_fixture.h"
#include "harness.h"
#include "meta/badblocks.h"
#include "meta/superblock.h"

static struct rng rng;
#define K 1024u

/* The slot's bad-block log as stored on its member file. */
static int read_log(const struct fx *f, int slot, struct md_sb *sb, struct md_bblist *l)
{
    int rc = fx_read_sb(f, slot, sb);
    if (rc)
        return rc;
    FILE *fp = fopen(f->path[slot], "rb");
    uint8_t area[4096];
    int64_t at = (int64_t)sb->super_offset + sb->bblog_offset;
    rc = fp && fseek(fp, (long)at * 512, SEEK_SET) == 0 && fread(area, 1, sizeof area, fp) == sizeof area ? 0 : -EIO;
    if (fp)
        fclose(fp);
    return rc ? rc : md_bb_decode(area, (size_t)sb->bblog_size * 512, sb->bblog_shift, l);
}

static void test_bad_sector(int level, int n, const char *kind)
{
    char name[128];
    snprintf(name, sizeof name, "RAID-%d n=%d: %s under a read: rebuilt, recorded, member kept, cleared by a write",
             level, n, kind);
    harness_begin(name);
    struct fx f;
    struct uraid_array *a;
    if (fx_setup(&f, level, n, 64u << 10, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    uint64_t off = fx_at(&f, 5, 1, 0), mo;
    int m;
    fx_locate(&f, off, &m, &mo);
    uint64_t bad = mo + 20 * K; /* member bytes past data_offset */
    fx_inject(&f, a, m, "read-eio", bad, 4 * K);
    if (!strcmp(kind, "a sector that cannot be written"))
        fx_inject(&f, a, m, "write-eio", bad, 4 * K);
    uraid_reset_counters(a);
    fx_verify(&f, a, off, f.chunk, "read over the bad sector");
    struct uraid_counters c = fx_counters(a);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(c.member_failures == 0 && c.corrected_reads == 0 && info.member[m].state == URAID_MEMBER_IN_SYNC &&
              info.member[m].bad_blocks == 1,
          "%s: failures %llu corrected %llu state %d bad_blocks %u", f.label, (unsigned long long)c.member_failures,
          (unsigned long long)c.corrected_reads, info.member[m].state, info.member[m].bad_blocks);
    struct md_sb sb;
    struct md_bblist l;
    uint64_t abs = f.data_offset / 512 + bad / 512;
    if (read_log(&f, m, &sb, &l) == 0)
        CHECK((sb.feature_map & MD_FEATURE_BAD_BLOCKS) && l.count == 1 && l.r[0].start == abs && l.r[0].len == 8,
              "%s: on disk: features 0x%x, %u ranges, first %llu+%llu (want %llu+8)", f.label, sb.feature_map, l.count,
              (unsigned long long)(l.count ? l.r[0].start : 0), (unsigned long long)(l.count ? l.r[0].len : 0),
              (unsigned long long)abs);
    char cmd[400], out[4096], want[64];
    snprintf(cmd, sizeof cmd, "mdadm --examine-badblocks '%s' 2>&1", f.path[m]);
    snprintf(want, sizeof want, "%llu for 8 sectors", (unsigned long long)abs);
    int st = harness_run(cmd, out, sizeof out);
    CHECK(st == 0 && strstr(out, want), "%s: mdadm --examine-badblocks should list '%s': %s", f.label, want, out);

    /* a listed range is rebuilt without reading the member */
    uraid_reset_counters(a);
    fx_verify(&f, a, off + 16 * K, 16 * K, "read of the listed range");
    c = fx_counters(a);
    CHECK(c.reconstructions == 1, "%s: listed range: %llu reconstructions", f.label,
          (unsigned long long)c.reconstructions);
    CHECK(uraid_close(a) == 0);

    /* after a reopen the list is loaded and still used */
    a = fx_open(&f, NULL, 1, 0);
    if (!a)
        goto out;
    fx_inject(&f, a, m, "read-eio", bad, 4 * K); /* still bad: it must not even be read */
    uraid_reset_counters(a);
    fx_verify_all(&f, a, "reopened with a listed range");
    c = fx_counters(a);
    CHECK(c.corrected_reads == 0 && c.member_failures == 0, "%s: reopened: corrected %llu failures %llu", f.label,
          (unsigned long long)c.corrected_reads, (unsigned long long)c.member_failures);

    /* the disk remapped it: the next write of the range clears the entry */
    CHECK(uraid_inject(a, m, "clear") == 0);
    uint8_t buf[8 * K];
    rng_fill(&rng, buf, sizeof buf);
    CHECK(fx_write(&f, a, buf, sizeof buf, off + 18 * K) == 0);
    uraid_get_info(a, &info);
    CHECK(info.member[m].bad_blocks == 0, "%s: after the write: %u bad ranges", f.label, info.member[m].bad_blocks);
    fx_verify_all(&f, a, "after clearing");
    CHECK(uraid_close(a) == 0);
    if (read_log(&f, m, &sb, &l) == 0)
        CHECK(!(sb.feature_map & MD_FEATURE_BAD_BLOCKS) && l.count == 0, "%s: cleared on disk: features 0x%x, %u ranges",
              f.label, sb.feature_map, l.count);
    /* and the member really holds the data again */
    fx_verify_without_others(&f, m, level == 6 ? 2 : 1, "with other members left out");
out:
    fx_destroy(&f);
    harness_end();
}

static void test_pending(void)
{
    harness_begin("RAID-6: a pending sector is rewritten and verified, counted, not listed");
    struct fx f;
    struct uraid_array *a;
    if (fx_setup(&f, 6, 5, 64u << 10, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    uint64_t off = fx_at(&f, 2, 0, 0), mo;
    int m;
    fx_locate(&f, off, &m, &mo);
    fx_inject(&f, a, m, "pending", mo + 4 * K, 4 * K);
    uraid_reset_counters(a);
    fx_verify(&f, a, off, f.chunk, "read over a pending sector");
    struct uraid_counters c = fx_counters(a);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(c.corrected_reads == 1 && info.member[m].bad_blocks == 0 && info.member[m].corrected_reads == 1,
          "corrected %llu, bad ranges %u", (unsigned long long)c.corrected_reads, info.member[m].bad_blocks);
    uraid_reset_counters(a);
    fx_verify(&f, a, off, f.chunk, "read again");
    c = fx_counters(a);
    CHECK(c.reconstructions == 0, "the rewrite healed it: %llu reconstructions", (unsigned long long)c.reconstructions);
    CHECK(uraid_close(a) == 0);
out:
    fx_destroy(&f);
    harness_end();
}

/* RAID-1: no mirror reads the range whole (errors on each, in different
 * pages), yet every page is readable somewhere: a read returns it all, and
 * each mirror gets back what it lost (or keeps it on its bad-block list);
 * a page unreadable on every mirror fails alone. */
static void test_mirror_scattered(int n)
{
    char name[128];
    snprintf(name, sizeof name, "RAID-1 n=%d: errors on every mirror in different pages: read page by page, each mirror mended", n);
    harness_begin(name);
    struct fx f;
    struct uraid_array *a;
    if (fx_setup(&f, 1, n, 64u << 10, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    uint64_t base = 256 * K; /* array bytes = member bytes past data_offset on RAID-1 */
    /* mirror 0 cannot keep page 1 (it gets listed); every other mirror has a pending page of its own */
    fx_inject(&f, a, 0, "read-eio", base + 4 * K, 4 * K);
    fx_inject(&f, a, 0, "write-eio", base + 4 * K, 4 * K);
    for (int m = 1; m < n; m++)
        fx_inject(&f, a, m, "pending", base + (uint64_t)(8 + 2 * m) * K, 4 * K);
    uraid_reset_counters(a);
    fx_verify(&f, a, base, 64 * K, "read over errors on every mirror");
    struct uraid_counters c = fx_counters(a);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(c.member_failures == 0 && c.corrected_reads == (uint64_t)(n - 1) && info.member[0].bad_blocks == 1,
          "failures %llu, corrected %llu (want %d), mirror 0 lists %u ranges", (unsigned long long)c.member_failures,
          (unsigned long long)c.corrected_reads, n - 1, info.member[0].bad_blocks);
    for (int m = 0; m < n; m++)
        CHECK(info.member[m].state == URAID_MEMBER_IN_SYNC, "mirror %d state %d", m, info.member[m].state);
    /* the listed page now comes from another mirror; the healed ones read directly */
    uraid_reset_counters(a);
    fx_verify(&f, a, base, 64 * K, "read again");
    c = fx_counters(a);
    CHECK(c.corrected_reads == 0, "read again: corrected %llu", (unsigned long long)c.corrected_reads);

    /* a write mirror 0 cannot take leaves its copy stale and listed: a
     * repair must not copy that stale page over the others */
    fx_inject(&f, a, 0, "write-eio", base + 12 * K, 4 * K);
    uint8_t fresh[4 * K];
    rng_fill(&rng, fresh, sizeof fresh);
    CHECK(fx_write(&f, a, fresh, sizeof fresh, base + 12 * K) == 0);
    char why[256];
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status js = {0};
    CHECK(uraid_job_start(a, URAID_JOB_REPAIR, &jp, why, sizeof why) == 0, "repair: %s", why);
    uraid_job_wait(a, &js);
    fx_verify_all(&f, a, "after a repair with a stale listed page on the first mirror");
    uraid_get_info(a, &info);
    CHECK(info.member[0].bad_blocks == 2, "mirror 0 lists %u ranges (want 2)", info.member[0].bad_blocks);

    /* a page no mirror can read fails the read of it, and only of it */
    for (int m = 1; m < n; m++)
        fx_inject(&f, a, m, "read-eio", base + 4 * K, 4 * K);
    uint8_t buf[64 * K];
    CHECK(uraid_read(a, buf, sizeof buf, base) == -EIO, "a page lost on every mirror must fail the read");
    fx_verify(&f, a, base + 8 * K, 56 * K, "the pages after it");
    fx_verify(&f, a, base - 64 * K, 64 * K, "the range before it");
    CHECK(uraid_inject(a, 0, "clear") == 0);
    for (int m = 1; m < n; m++)
        CHECK(uraid_inject(a, m, "clear") == 0);

    /* writes over the listed pages take them off the list; each mirror alone then reads right */
    rng_fill(&rng, buf, 16 * K);
    CHECK(fx_write(&f, a, buf, 16 * K, base) == 0);
    uraid_get_info(a, &info);
    CHECK(info.member[0].bad_blocks == 0, "after the write: mirror 0 lists %u ranges", info.member[0].bad_blocks);
    CHECK(uraid_close(a) == 0);
    for (int keep = 0; keep < n; keep++) {
        char what[64];
        snprintf(what, sizeof what, "mirror %d alone", keep);
        fx_verify_omitting(&f, (FX_SLOT(n) - 1) & ~FX_SLOT(keep), 0, what);
    }
out:
    fx_destroy(&f);
    harness_end();
}

static void test_log_full(void)
{
    harness_begin("RAID-5: the member is failed only when its bad-block log is full");
    struct fx f;
    struct uraid_array *a;
    if (fx_setup(&f, 5, 3, 64u << 10, 16u << 20, &rng, 1, &a) != 0)
        goto out;
    int m = 1;
    /* 1000 unwritable sectors, one in every other 4 KiB page (pages are
     * what gets listed), two thirds of them in data chunks (reads never
     * touch parity): more separate ranges than one log page holds */
    for (int i = 0; i < 1000; i++) {
        fx_inject(&f, a, m, "read-eio", (uint64_t)i * 8 * K, 512);
        fx_inject(&f, a, m, "write-eio", (uint64_t)i * 8 * K, 512);
    }
    uraid_reset_counters(a);
    fx_verify_all(&f, a, "reads over 1000 bad sectors");
    struct uraid_counters c = fx_counters(a);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(c.member_failures == 1 && info.member[m].state == URAID_MEMBER_FAULTY,
          "failures %llu, slot %d state %d (bad ranges %u)", (unsigned long long)c.member_failures, m,
          info.member[m].state, info.member[m].bad_blocks);
    CHECK(uraid_close(a) == 0);
    struct md_sb sb;
    struct md_bblist l;
    if (read_log(&f, m, &sb, &l) == 0)
        CHECK(l.count == 512, "the log holds %u ranges when the member fails", l.count);
out:
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    fx_log_from_env();
    harness_init(argc, argv, "test_badsector");
    rng_seed(&rng, harness_seed());
    test_pending();
    test_bad_sector(5, 4, "a sector that cannot be written");
    test_bad_sector(6, 6, "a sector that cannot be written");
    test_bad_sector(5, 4, "a sector that still fails after the rewrite");
    test_bad_sector(6, 5, "a sector that still fails after the rewrite");
    test_mirror_scattered(2);
    test_mirror_scattered(3);
    test_log_full();
    return harness_finish();
}
