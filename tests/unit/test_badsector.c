/* Bad sectors (issue 6): a read error is repaired, not punished.
 *   - a pending sector (unreadable until written): rebuilt, rewritten,
 *     re-read, counted in cnt_corrected_read, nothing listed;
 *   - a sector the member cannot keep (the rewrite fails, or the re-read
 *     still fails): recorded in its md bad-block log (BAD_BLOCKS set,
 *     mdadm --examine-badblocks lists it), the member stays in sync, reads
 *     of the range are rebuilt without touching it, also after a reopen;
 *   - a later successful write of the range takes it off the log;
 *   - a full log, or a member that is gone, fails the member;
 *   - a failed write is narrowed down (md's narrow_write_error): of a
 *     200-sector write whose sectors 100-199 fail, only those are listed;
 *   - a rebuild over sectors no other member can give (listed on the
 *     source, or unreadable there) goes on and lists them on the new
 *     member (md's rule), RAID-1/5/6; reads of them fail, a write takes
 *     them off; a new member with no room in its log stops the rebuild.
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
    rc = rc ? rc : md_bb_decode(area, (size_t)sb->bblog_size * 512, sb->bblog_shift, l);
    /* a log that cannot be read fails the case: the callers' checks of it
     * would be skipped otherwise */
    CHECK(rc == 0, "%s: the bad-block log cannot be read: %d", f->path[slot], rc);
    return rc;
}

/* The slot's log on disk holds exactly the n ranges want[] (member
 * sectors past data_offset), and mdadm --examine-badblocks lists each. */
static void expect_log(const struct fx *f, int slot, const struct md_bb_range *want, uint32_t n, const char *what)
{
    struct md_sb sb;
    struct md_bblist l;
    if (read_log(f, slot, &sb, &l) != 0) {
        CHECK(0, "%s: %s: the log of slot %d cannot be read", f->label, what, slot);
        return;
    }
    uint64_t d0 = f->data_offset / 512;
    int same = l.count == n && (n == 0) == !(sb.feature_map & MD_FEATURE_BAD_BLOCKS);
    for (uint32_t i = 0; i < n && same; i++)
        same = l.r[i].start == d0 + want[i].start && l.r[i].len == want[i].len;
    char got[256] = "";
    for (uint32_t i = 0; i < l.count && i < 6; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), " %llu+%llu", (unsigned long long)(l.r[i].start - d0),
                 (unsigned long long)l.r[i].len);
    CHECK(same, "%s: %s: slot %d lists %u ranges:%s (want %u, first %llu+%llu past data_offset)", f->label, what,
          slot, l.count, got, n, (unsigned long long)(n ? want[0].start : 0), (unsigned long long)(n ? want[0].len : 0));
    char cmd[400], out[4096], line[64];
    snprintf(cmd, sizeof cmd, "mdadm --examine-badblocks '%s' 2>&1", f->path[slot]);
    int st = harness_run(cmd, out, sizeof out);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(line, sizeof line, "%llu for %llu sectors", (unsigned long long)(d0 + want[i].start),
                 (unsigned long long)want[i].len);
        CHECK(st == 0 && strstr(out, line), "%s: %s: mdadm --examine-badblocks should list '%s': %s", f->label, what,
              line, out);
    }
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
    /* a repair that failed copied nothing: the checks below would pass on it */
    int jrc = uraid_job_wait(a, &js);
    CHECK(jrc == 0 && js.kind == URAID_JOB_REPAIR, "the repair ended with %d (%s)", jrc, js.why);
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

/* ---- narrowing a failed write --------------------------------------------------------- */

static void test_write_narrowed_mirror(void)
{
    harness_begin("RAID-1: a 200-sector write whose sectors 100-199 fail on a mirror lists only those (md narrows it)");
    struct fx f;
    struct uraid_array *a;
    if (fx_setup(&f, 1, 2, 64u << 10, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    uint64_t base = 512 * K; /* array bytes = member bytes past data_offset on RAID-1 */
    fx_inject(&f, a, 1, "write-eio", base + 100 * 512, 100 * 512);
    static uint8_t buf[200 * 512];
    rng_fill(&rng, buf, sizeof buf);
    CHECK(fx_write(&f, a, buf, sizeof buf, base) == 0, "the write must succeed: mirror 0 holds it");
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.member[1].state == URAID_MEMBER_IN_SYNC && info.member[1].bad_blocks == 1,
          "mirror 1: state %d, %u bad ranges", info.member[1].state, info.member[1].bad_blocks);
    fx_verify(&f, a, base, sizeof buf, "read back");
    CHECK(uraid_close(a) == 0);
    const struct md_bb_range want[] = {{base / 512 + 100, 100}};
    expect_log(&f, 1, want, 1, "after the write");
    /* mirror 1 alone: it took sectors 0-99 of the write; 100-199 fail */
    if (fx_open_with(&f, FX_SLOT(0), NULL, NULL, 0, NULL, &a) == 0) {
        fx_verify(&f, a, base, 100 * 512, "mirror 1 alone: the sectors it took");
        CHECK(uraid_read(a, buf, 100 * 512, base + 100 * 512) == -EIO, "listed sectors of the only mirror must fail");
        CHECK(uraid_close(a) == 0);
    }
out:
    fx_destroy(&f);
    harness_end();
}

static void test_rewrite_narrowed(void)
{
    harness_begin("RAID-5: a 200-sector rewrite of listed rows whose sectors 100-199 still fail leaves exactly those listed");
    struct fx f;
    struct uraid_array *a;
    if (fx_setup(&f, 5, 3, 256u << 10, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    uint64_t off = fx_at(&f, 2, 0, 0), mo;
    int m;
    fx_locate(&f, off, &m, &mo);
    fx_inject(&f, a, m, "read-eio", mo, 200 * 512);
    fx_inject(&f, a, m, "write-eio", mo, 200 * 512);
    fx_verify(&f, a, off, 200 * 512, "read over 200 sectors the member cannot keep");
    const struct md_bb_range all[] = {{mo / 512, 200}}, half[] = {{mo / 512 + 100, 100}};
    expect_log(&f, m, all, 1, "after the read");
    /* the disk remapped sectors 0-99 meanwhile; 100-199 still cannot be written */
    CHECK(uraid_inject(a, m, "clear") == 0);
    fx_inject(&f, a, m, "write-eio", mo + 100 * 512, 100 * 512);
    static uint8_t buf[200 * 512], back[100 * 512];
    rng_fill(&rng, buf, sizeof buf);
    CHECK(fx_write(&f, a, buf, sizeof buf, off) == 0);
    /* the write continues the fill's stream: it may be kept in memory
     * (stripe/gather.c) until a flush, and the log is read from the file */
    CHECK(uraid_flush(a) == 0);
    expect_log(&f, m, half, 1, "after the rewrite");
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.member[m].state == URAID_MEMBER_IN_SYNC, "slot %d state %d", m, info.member[m].state);
    fx_verify_all(&f, a, "after the rewrite");
    CHECK(fx_member_pread(&f, m, back, sizeof back, mo) == 0 && !memcmp(back, buf, sizeof back),
          "the member itself must hold sectors 0-99 of the write");
    CHECK(uraid_close(a) == 0);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- a rebuild over sectors no member can give ------------------------------------------ */

struct lost {
    uint64_t off, len; /* array bytes */
};

/* Reads the whole array: each lost range must fail, everything else read right. */
static void verify_lost(struct fx *f, struct uraid_array *a, const struct lost *lost, int nlost, const char *what)
{
    static uint8_t buf[64 * K];
    uint64_t at = 0;
    for (int i = 0; i <= nlost; i++) {
        uint64_t end = i < nlost ? lost[i].off : f->size;
        for (uint64_t p = at; p < end; p += 1024 * K)
            fx_verify(f, a, p, end - p < 1024 * K ? end - p : 1024 * K, what);
        if (i == nlost)
            break;
        int rc = uraid_read(a, buf, lost[i].len, lost[i].off);
        CHECK(rc == -EIO, "%s: %s: array bytes %llu+%llu were lost, but the read returned %d", f->label, what,
              (unsigned long long)lost[i].off, (unsigned long long)lost[i].len, rc);
        at = lost[i].off + lost[i].len;
    }
}

static int cmp_lost(const void *x, const void *y)
{
    const struct lost *p = x, *q = y;
    return p->off < q->off ? -1 : p->off > q->off;
}

/* Adds a spare and rebuilds slot t onto it; the fixture holds the spare in
 * slot t from then on. */
static int rebuild_onto_spare(struct fx *f, struct uraid_array *a, int t, char *spare, size_t len,
                              struct uraid_job_status *st)
{
    if (fx_make_file(f, "spare", spare, len) || fx_add_spare(f, a, spare))
        return -1;
    struct uraid_job_params jp = {.slot = -1, .speed_min_kib = 1u << 30};
    int rc = fx_job(f, a, URAID_JOB_RECOVER, &jp, st);
    fx_adopt(f, t, spare);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(rc == 0 && info.member[t].state == URAID_MEMBER_IN_SYNC && !info.degraded,
          "%s: after the rebuild: %d (%s), slot %d state %d, degraded %d", f->label, rc, st->why, t,
          info.member[t].state, info.degraded);
    return rc;
}

/* No slot lists anything any more. */
static void expect_no_lists(const struct fx *f, struct uraid_array *a, const char *what)
{
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    for (int s = 0; s < f->n; s++)
        CHECK(info.member[s].bad_blocks == 0, "%s: %s: slot %d still lists %u ranges", f->label, what, s,
              info.member[s].bad_blocks);
}

static void test_rebuild_mirror_lost(void)
{
    harness_begin("RAID-1: a rebuild over sectors no mirror can give goes on and lists exactly them on the new mirror");
    struct fx f;
    struct uraid_array *a;
    char spare[300];
    if (fx_setup(&f, 1, 2, 64u << 10, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    uint64_t listed = 256 * K, eio = 1024 * K + 3 * 512; /* array bytes = member bytes past data_offset */
    /* mirror 0 cannot keep a page: it lists it while mirror 1 still has it */
    fx_inject(&f, a, 0, "read-eio", listed, 4 * K);
    fx_inject(&f, a, 0, "write-eio", listed, 4 * K);
    fx_verify(&f, a, listed, 4 * K, "read over a page mirror 0 cannot keep");
    CHECK(uraid_close(a) == 0);
    /* mirror 1 is lost; mirror 0 has that page listed and 5 unlisted sectors it cannot read */
    if (fx_open_with(&f, FX_SLOT(1), "", NULL, 0, NULL, &a))
        goto out;
    fx_inject(&f, a, 0, "read-eio", eio, 5 * 512);
    struct uraid_job_status st;
    if (rebuild_onto_spare(&f, a, 1, spare, sizeof spare, &st) == 0) {
        const struct md_bb_range want[] = {{listed / 512, 8}, {eio / 512, 5}};
        expect_log(&f, 1, want, 2, "the new mirror after the rebuild");
        const struct lost lost[] = {{listed, 4 * K}, {eio, 5 * 512}};
        verify_lost(&f, a, lost, 2, "after the rebuild");
        /* the disk remapped them: a write takes them off both mirrors' lists */
        CHECK(uraid_inject(a, 0, "clear") == 0);
        static uint8_t buf[4 * K];
        for (int i = 0; i < 2; i++) {
            rng_fill(&rng, buf, lost[i].len);
            CHECK(fx_write(&f, a, buf, lost[i].len, lost[i].off) == 0);
        }
        expect_no_lists(&f, a, "after writing the lost sectors");
        fx_verify_all(&f, a, "after writing the lost sectors");
    }
    CHECK(uraid_close(a) == 0);
    expect_log(&f, 1, NULL, 0, "the new mirror after the writes");
    fx_verify_without_others(&f, 1, 1, "the new mirror alone");
out:
    fx_destroy(&f);
    harness_end();
}

/* The lost array ranges of stripe s, rows [row, row + 4 KiB): the data
 * chunks on the slots in bad[]. */
static int add_lost(const struct fx *f, uint64_t s, uint64_t row, const int *bad, int nbad, struct lost *out)
{
    int n = 0;
    for (int d = 0; d < f->k; d++) {
        int m;
        uint64_t mo;
        fx_locate(f, fx_at(f, s, d, row), &m, &mo);
        for (int i = 0; i < nbad; i++)
            if (m == bad[i]) {
                out[n++] = (struct lost){fx_at(f, s, d, row), 4 * K};
                break;
            }
    }
    return n;
}

static void test_rebuild_stripe_lost(int level, int n)
{
    harness_beginf("RAID-%d n=%d: a rebuild over rows with more blocks lost than the level survives goes on and lists "
                   "those 4 KiB on the new member",
                   level, n);
    struct fx f;
    struct uraid_array *a;
    char spare[300];
    if (fx_setup(&f, level, n, 64u << 10, 4u << 20, &rng, 1, &a) != 0)
        goto out;
    int t = 1, nsrc = level == 6 ? 2 : 1, src[2], dsrc = -1, ns = 0;
    /* the sources that lose rows besides t: data members of stripe 3, the first of which lists its rows */
    for (int d = 0; d < f.k && ns < nsrc; d++) {
        int m;
        uint64_t mo;
        fx_locate(&f, fx_at(&f, 3, d, 0), &m, &mo);
        if (m != t) {
            dsrc = ns ? dsrc : d;
            src[ns++] = m;
        }
    }
    uint64_t c = f.chunk;
    fx_inject(&f, a, src[0], "read-eio", 3 * c + 12 * K, 4 * K);
    fx_inject(&f, a, src[0], "write-eio", 3 * c + 12 * K, 4 * K);
    fx_verify(&f, a, fx_at(&f, 3, dsrc, 12 * K), 4 * K, "read over rows the source cannot keep");
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.member[src[0]].bad_blocks == 1, "the source lists %u ranges", info.member[src[0]].bad_blocks);
    CHECK(uraid_close(a) == 0);
    /* slot t is lost: stripe 3 rows 12K-16K listed on src[0] (RAID-6: unreadable on src[1] too);
     * stripe 5 rows 20K-24K unreadable on every source */
    if (fx_open_with(&f, FX_SLOT(t), "", NULL, 0, NULL, &a))
        goto out;
    for (int i = 0; i < nsrc; i++) {
        if (i)
            fx_inject(&f, a, src[i], "read-eio", 3 * c + 12 * K, 4 * K);
        fx_inject(&f, a, src[i], "read-eio", 5 * c + 20 * K, 4 * K);
    }
    if (level == 6) { /* stripe 7: two blocks lost in each row group, never three: all rebuilt */
        fx_inject(&f, a, src[0], "read-eio", 7 * c + 4 * K, 4 * K);
        fx_inject(&f, a, src[1], "read-eio", 7 * c + 40 * K, 4 * K);
    }
    struct uraid_job_status st;
    struct uraid_counters before = fx_counters(a);
    if (rebuild_onto_spare(&f, a, t, spare, sizeof spare, &st) == 0) {
        /* the survivors are read once; a source whose batch read failed is
         * read again stripe by stripe over that batch (2 MiB); in each stripe
         * with lost rows its chunk is read once more, page by page. Nothing is
         * read again to find out which pages were lost (the old code did,
         * reading 12.2 MB for RAID-5 here, 18.3 MB for RAID-6). */
        struct uraid_counters after = fx_counters(a);
        uint64_t rows = (uint64_t)st.total_sectors * 512, batch = 2u << 20, nhit = level == 6 ? 3 : 2;
        uint64_t bound = (uint64_t)(n - 1) * rows + (uint64_t)nsrc * batch + nhit * (uint64_t)nsrc * c;
        uint64_t got = after.member_read_bytes - before.member_read_bytes;
        CHECK(got <= bound, "%s: the rebuild read %llu bytes (bound %llu)", f.label, (unsigned long long)got,
              (unsigned long long)bound);
        const struct md_bb_range want[] = {{(3 * c + 12 * K) / 512, 8}, {(5 * c + 20 * K) / 512, 8}};
        expect_log(&f, t, want, 2, "the new member after the rebuild");
        int bad[3] = {t, src[0], nsrc > 1 ? src[1] : t};
        struct lost lost[2 * URAID_MAX_MEMBERS];
        int nl = add_lost(&f, 3, 12 * K, bad, nsrc + 1, lost);
        nl += add_lost(&f, 5, 20 * K, bad, nsrc + 1, lost + nl);
        qsort(lost, (size_t)nl, sizeof lost[0], cmp_lost);
        CHECK(nl > 0, "some data chunk must be on a member that lost rows");
        verify_lost(&f, a, lost, nl, "after the rebuild");
        /* the disks remapped them: full-stripe writes take them off every list
         * (RAID-6: also the rows of stripe 7 the sources could not keep) */
        for (int i = 0; i < nsrc; i++)
            CHECK(uraid_inject(a, src[i], "clear") == 0);
        uint8_t *buf = malloc(f.stripe_bytes);
        for (uint64_t s = 3; buf && s <= 7; s += 2) {
            rng_fill(&rng, buf, f.stripe_bytes);
            CHECK(fx_write(&f, a, buf, f.stripe_bytes, fx_at(&f, s, 0, 0)) == 0);
        }
        free(buf);
        expect_no_lists(&f, a, "after full-stripe writes");
        fx_verify_all(&f, a, "after full-stripe writes");
    }
    CHECK(uraid_close(a) == 0);
    fx_verify_without_others(&f, t, level == 6 ? 2 : 1, "with other members left out");
out:
    fx_destroy(&f);
    harness_end();
}

static void test_rebuild_no_room(void)
{
    harness_begin("RAID-1: a rebuild stops, saying why, when the new member's log has no room for what is lost");
    struct fx f;
    struct uraid_array *a;
    char spare[300];
    if (fx_setup(&f, 1, 2, 64u << 10, 16u << 20, &rng, 1, &a) != 0)
        goto out;
    CHECK(uraid_close(a) == 0);
    if (fx_open_with(&f, FX_SLOT(1), "", NULL, 0, NULL, &a))
        goto out;
    /* 600 separate unreadable sectors: more ranges than one log page holds */
    for (int i = 0; i < 600; i++)
        fx_inject(&f, a, 0, "read-eio", (uint64_t)i * 16 * K, 512);
    if (fx_make_file(&f, "spare", spare, sizeof spare) || fx_add_spare(&f, a, spare))
        goto close;
    struct uraid_job_params jp = {.slot = -1, .speed_min_kib = 1u << 30};
    struct uraid_job_status st;
    char why[256];
    CHECK(uraid_job_start(a, URAID_JOB_RECOVER, &jp, why, sizeof why) == 0, "start: %s", why);
    int rc = uraid_job_wait(a, &st);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(rc == -ENOSPC && strstr(st.why, spare) && strstr(st.why, "bad-block log"), "rebuild ended %d: '%s'", rc,
          st.why);
    CHECK(info.member[1].state == URAID_MEMBER_REBUILDING && info.degraded && info.member[1].bad_blocks == 512,
          "slot 1: state %d, degraded %d, %u ranges listed", info.member[1].state, info.degraded,
          info.member[1].bad_blocks);
close:
    CHECK(uraid_close(a) == 0);
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
    test_write_narrowed_mirror();
    test_rewrite_narrowed();
    test_rebuild_mirror_lost();
    test_rebuild_stripe_lost(5, 4);
    test_rebuild_stripe_lost(6, 5);
    test_rebuild_no_room();
    return harness_finish();
}
