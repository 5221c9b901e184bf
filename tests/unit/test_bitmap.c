/* The write-intent bitmap (lib/meta/bitmap.c, lib/array/wibitmap.c):
 *   - create: header as mdadm writes it on every member, mdadm's chunk
 *     choice and default, refusals (RAID-0, bad chunks) that write nothing;
 *   - bits before data: a writer killed mid-way while one member drops its
 *     data writes; every range where mirrors or parity disagree afterwards
 *     lies under a bit set on disk; a bitmap no member takes refuses the write;
 *   - a clean close clears every bit and leaves the events equal; the daemon
 *     clears idle bits while the array stays open;
 *   - crash then reopen: the resync works on the dirty chunks only (job
 *     status), a check then finds nothing; a stale bitmap means a full resync;
 *   - md's fixture g keeps working, its bitmap now maintained;
 *   - writers on many threads with a fast daemon (run under TSan too);
 *   - grow --size (uraid_grow_size) with a bitmap whose bits no longer fit:
 *     the chunk doubled as md's md_bitmap_resize chooses, sync_size and
 *     events on every member, the new region synced, a write past the old
 *     end marked in the new chunk.
 * The crashing writers are this binary exec'd afresh ("--writer"), never a
 * bare fork of a process that ran library threads. */
#include <errno.h>
#include <fcntl.h>
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
#include "meta/bitmap.h"
#include "uraid_grow.h"

#define MEMBER_BYTES (8u << 20)
#define BM_CHUNK (64u << 10)
#define RAID_CHUNK (64u << 10)

static struct rng rng;

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* A member's bitmap as it is on disk: header and bits (bits[] of cap bytes).
 * Every failure is a CHECK failure: no caller expects one, and a caller that
 * went on would look at the bits and header of an earlier read (or none). */
static int raw_bitmap(const struct fx *f, int slot, struct md_bitmap_sb *h, uint8_t *bits, size_t cap)
{
    memset(h, 0, sizeof *h);
    if (bits)
        memset(bits, 0xff, cap); /* "all dirty" until read: a failed read never looks clean */
    struct md_sb sb;
    if (fx_read_sb(f, slot, &sb))
        return -EIO;
    if (!(sb.feature_map & MD_FEATURE_BITMAP_OFFSET)) {
        CHECK(0, "%s: slot %d: no bitmap in the superblock (feature map 0x%x)", f->label, slot, sb.feature_map);
        return -ENOENT;
    }
    int fd = open(f->path[slot], O_RDONLY);
    if (fd < 0) {
        CHECK(0, "%s: slot %d: open: %s", f->label, slot, strerror(errno));
        return -EIO;
    }
    uint8_t head[MD_BITMAP_HEADER_BYTES];
    off_t at = (off_t)(sb.super_offset + (uint64_t)(int64_t)sb.bitmap_offset) * 512;
    int ok = pread(fd, head, sizeof head, at) == (ssize_t)sizeof head &&
             (!bits || pread(fd, bits, cap, at + MD_BITMAP_HEADER_BYTES) == (ssize_t)cap);
    close(fd);
    if (!ok) {
        CHECK(0, "%s: slot %d: the bitmap at byte %lld cannot be read", f->label, slot, (long long)at);
        return -EIO;
    }
    char why[200];
    int rc = md_bitmap_decode(head, h, why, sizeof why);
    CHECK(rc == 0, "%s: slot %d: bitmap: %s", f->label, slot, why);
    return rc;
}

/* Overwrites a member's bitmap events (bytes 24..31 of the header). */
static void patch_bitmap_events(const struct fx *f, int slot, uint64_t events)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(events >> (8 * i));
    int fd = open(f->path[slot], O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, le, 8, 8192 + 24) == 8);
    if (fd >= 0)
        close(fd);
}

/* ---- the crashing writer ------------------------------------------------------------ */

/* --writer SEED SPEC N PATH...: opens the array (SPEC, "-" for none, is the
 * member_sim of slot 1), then writes random ranges forever: the parent kills
 * it. --writer-at OFF LEN N PATH...: one write, then exit without closing. */
static int writer_main(int argc, char **argv)
{
    int loop = !strcmp(argv[1], "--writer");
    uint64_t a1 = strtoull(argv[2], NULL, 0), a2 = loop ? 0 : strtoull(argv[3], NULL, 0);
    const char *spec = loop ? argv[3] : "-";
    int n = atoi(argv[4]);
    if (n < 1 || n > FX_MAXM || argc < 5 + n)
        return 2;
    const char *specs[FX_MAXM];
    for (int i = 0; i < n; i++)
        specs[i] = i == 1 && strcmp(spec, "-") ? spec : "";
    struct uraid_open_params op = {.member_sim = specs};
    struct uraid_array *a;
    char why[256];
    if (uraid_open((const char **)argv + 5, n, &op, &a, why, sizeof why)) {
        fprintf(stderr, "writer: %s\n", why);
        return 1;
    }
    uint64_t size = uraid_size(a);
    size_t cap = a2 > (256u << 10) ? (a2 + 4095) / 4096 * 4096 : 256u << 10;
    uint8_t *buf = aligned_alloc(4096, cap + (64u << 10));
    if (!buf)
        return 1;
    if (!loop) {
        memset(buf, 0x5a, a2);
        if (uraid_write(a, buf, a2, a1))
            return 1;
        _exit(0);
    }
    struct rng r;
    rng_seed(&r, a1);
    rng_fill(&r, buf, 256u << 10);
    /* one write that surely reaches the dropping member, however few follow */
    if (uraid_write(a, buf, 256u << 10, 0))
        return 1;
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        /* the first half only: the other half's bits must stay clear */
        uint64_t len = (1 + rng_below(&r, 48)) * 4096, off = rng_below(&r, (size / 2 - len) / 4096) * 4096;
        if (uraid_write(a, buf + rng_below(&r, 16) * 4096, len, off))
            return 1;
        /* few enough writes that most chunks stay clean: a bit missing
         * under one of them would show */
        sleep_ms(10);
    }
}

static pid_t spawn(char **argv)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    return pid;
}

static void write_then_die(struct fx *f, uint64_t off, uint64_t len)
{
    char o[32], l[32], n[8];
    snprintf(o, sizeof o, "%llu", (unsigned long long)off);
    snprintf(l, sizeof l, "%llu", (unsigned long long)len);
    snprintf(n, sizeof n, "%d", f->n);
    char *argv[FX_MAXM + 6] = {(char *)"test_bitmap", (char *)"--writer-at", o, l, n};
    for (int s = 0; s < f->n; s++)
        argv[5 + s] = f->path[s];
    int st = 0;
    waitpid(spawn(argv), &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the writer failed (status %#x)", st);
    memset(f->model + off, 0x5a, len);
}

static void run_job(struct uraid_array *a, enum uraid_job_kind kind, struct uraid_job_status *st)
{
    char why[256];
    struct uraid_job_params jp = {.slot = -1};
    CHECK(uraid_job_start(a, kind, &jp, why, sizeof why) == 0, "%s: %s", uraid_job_name(kind), why);
    uraid_job_wait(a, st);
    CHECK(st->result == 0, "%s: %s", uraid_job_name(kind), st->why);
}

/* ---- create ------------------------------------------------------------------------ */

static void test_create(void)
{
    harness_begin("create: mdadm's bitmap on every member; default, chunk choice and refusals");
    struct fx f;
    if (fx_create_bitmap(&f, 5, 4, RAID_CHUNK, MEMBER_BYTES, BM_CHUNK) == 0) {
        for (int s = 0; s < f.n; s++) {
            struct md_sb sb;
            struct md_bitmap_sb h;
            uint8_t bits[64];
            fx_read_sb(&f, s, &sb);
            CHECK((sb.feature_map & MD_FEATURE_BITMAP_OFFSET) && sb.bitmap_offset == 8, "slot %d: feature 0x%x at %d",
                  s, sb.feature_map, sb.bitmap_offset);
            if (raw_bitmap(&f, s, &h, bits, sizeof bits) == 0) {
                CHECK(h.version == 4 && h.chunksize == BM_CHUNK && h.daemon_sleep == 5 && h.sync_size == sb.size &&
                          h.events == sb.events && !memcmp(h.uuid, sb.set_uuid, 16) && h.state == 0,
                      "slot %d: v%u chunk %u sleep %u sync %llu events %llu/%llu", s, h.version, h.chunksize,
                      h.daemon_sleep, (unsigned long long)h.sync_size, (unsigned long long)h.events,
                      (unsigned long long)sb.events);
                CHECK(md_bitmap_count(bits, 8 * sizeof bits) == 0, "slot %d: bits set after create", s);
            }
        }
    }
    fx_destroy(&f);
    /* mdadm's chunk choice: 64 MiB by default; the bits must fit the space */
    uint32_t c = 0;
    char why[256];
    CHECK(md_bitmap_choose_chunk(6144, 8, 0, &c, why, sizeof why) == 0 && c == 64u << 20, "default %u", c);
    CHECK(md_bitmap_choose_chunk(100ull << 30 >> 9, 8, 0, &c, why, sizeof why) == 0 && c == 64u << 20);
    /* 16 TiB in 256 sectors: 4 KiB chunks halved until under 1046528 bits -> 32 MiB, still 64 MiB default */
    CHECK(md_bitmap_choose_chunk(16ull << 40 >> 9, 256, 0, &c, why, sizeof why) == 0 && c == 64u << 20);
    CHECK(md_bitmap_choose_chunk(64ull << 40 >> 9, 256, 0, &c, why, sizeof why) == 0 && c == 128u << 20,
          "64 TiB: %u", c);
    CHECK(md_bitmap_choose_chunk(200u << 11, 8, 4096, &c, why, sizeof why) == -EINVAL && strstr(why, "too small"),
          "4K chunk for 200 MiB in 8 sectors: %s", why);
    CHECK(md_bitmap_choose_chunk(6144, 8, 3u << 12, &c, why, sizeof why) == -EINVAL && strstr(why, "power of two"));

    /* refusals write nothing */
    const char *tmp = getenv("TMPDIR");
    char dir[200], paths[3][260];
    snprintf(dir, sizeof dir, "%s/uraid-bm-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    const char *pp[3];
    for (int i = 0; i < 3; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/m%d.img", dir, i);
        pp[i] = paths[i];
        int fd = open(paths[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        /* sparse: just over 100 GiB, so mdadm's default turns the bitmap on */
        CHECK(fd >= 0 && ftruncate(fd, (off_t)(101ull << 30)) == 0);
        close(fd);
    }
    struct uraid_create_params cp = {.level = 0, .raid_devices = 3, .layout = -1, .assume_clean = 1,
                                     .bitmap = URAID_BITMAP_INTERNAL};
    CHECK(uraid_create(pp, 3, &cp, 0, why, sizeof why) == -EINVAL && strstr(why, "RAID-0"), "RAID-0: %s", why);
    cp.level = 5;
    cp.bitmap_chunk_bytes = 100u << 10;
    CHECK(uraid_create(pp, 3, &cp, 0, why, sizeof why) == -EINVAL && strstr(why, "power of two"), "%s", why);
    cp.bitmap_chunk_bytes = 4096; /* 101 GiB in 4 KiB bits does not fit 128 sectors */
    CHECK(uraid_create(pp, 3, &cp, 0, why, sizeof why) == -EINVAL && strstr(why, "too small"), "%s", why);
    struct fx g = {.n = 3};
    for (int i = 0; i < 3; i++) {
        memcpy(g.path[i], paths[i], sizeof paths[i]);
        uint8_t sbb[4096] = {0}, zero[4096] = {0};
        int fd = open(paths[i], O_RDONLY);
        CHECK(fd >= 0 && pread(fd, sbb, sizeof sbb, 4096) == 4096 && !memcmp(sbb, zero, sizeof zero),
              "a refused create wrote to %s", paths[i]);
        close(fd);
    }
    cp.bitmap = URAID_BITMAP_DEFAULT;
    cp.bitmap_chunk_bytes = 0;
    cp.level = 1; /* RAID-5's default policy is ppl, which has no bitmap */
    CHECK(uraid_create(pp, 3, &cp, 0, why, sizeof why) == 0, "%s", why);
    struct md_bitmap_sb h;
    CHECK(raw_bitmap(&g, 2, &h, NULL, 0) == 0 && h.chunksize == 64u << 20,
          "over 100 GiB: bitmap by default, 64 MiB chunk (%u)", h.chunksize);
    for (int i = 0; i < 3; i++)
        unlink(paths[i]);
    rmdir(dir);
    harness_end();
}

/* ---- bits before data ------------------------------------------------------------------ */

static int bit_set(const uint8_t *bits, uint64_t member_sector)
{
    return md_bitmap_test(bits, member_sector / (BM_CHUNK / 512));
}

static void test_bits_before_data(int level, int n)
{
    char name[128];
    snprintf(name, sizeof name, "RAID-%d n=%d: a writer killed mid-way, one member dropping writes: every "
             "disagreement is under a set bit", level, n);
    harness_begin(name);
    struct fx f;
    if (fx_create_bitmap(&f, level, n, RAID_CHUNK, MEMBER_BYTES, BM_CHUNK) != 0)
        goto out;
    char spec[96], seed[32], nn[8];
    snprintf(spec, sizeof spec, "drop-writes=%llu+%llu", (unsigned long long)f.data_offset,
             (unsigned long long)(f.member_bytes - f.data_offset));
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)rng_next(&rng));
    snprintf(nn, sizeof nn, "%d", f.n);
    char *argv[FX_MAXM + 6] = {(char *)"test_bitmap", (char *)"--writer", seed, spec, nn};
    for (int s = 0; s < f.n; s++)
        argv[5 + s] = f.path[s];
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 1);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(pfd[1]);
    char ready[8] = "";
    CHECK(read(pfd[0], ready, 6) == 6 && !strncmp(ready, "ready", 5), "the writer did not start");
    close(pfd[0]);
    sleep_ms(300);
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st), "the writer ended by itself (status %#x)", st);

    uint64_t nbits = (f.member_bytes - f.data_offset) / BM_CHUNK + 1;
    uint8_t bits[512] = {0};
    struct md_bitmap_sb h;
    if (raw_bitmap(&f, 0, &h, bits, sizeof bits))
        goto out;
    uint64_t dirty = md_bitmap_count(bits, nbits);
    CHECK(dirty > 0 && dirty < nbits - 1, "%s: %llu of %llu bits set", f.label, (unsigned long long)dirty,
          (unsigned long long)nbits);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    struct uraid_job_status js;
    run_job(a, URAID_JOB_CHECK, &js);
    static struct uraid_finding found[4096];
    size_t nf = uraid_job_findings(a, found, 4096);
    CHECK(nf > 0, "%s: the dropped writes left no disagreement to look at", f.label);
    size_t uncovered = 0;
    for (size_t i = 0; i < nf; i++)
        for (uint64_t s = found[i].member_sector; s < found[i].member_sector + found[i].nsec; s++)
            if (!bit_set(bits, s)) {
                if (!uncovered++)
                    CHECK(0, "%s: member sector %llu (slot %d) disagrees but its bit is clear", f.label,
                          (unsigned long long)s, found[i].slot);
                break;
            }
    CHECK(uncovered == 0, "%s: %zu of %zu findings outside the bitmap", f.label, uncovered, nf);
    uraid_close(a);
out:
    fx_destroy(&f);
    harness_end();
}

static void test_refused_without_bitmap(void)
{
    harness_begin("RAID-5: no member takes the bitmap -> the write fails and no data reaches a member");
    struct fx f;
    if (fx_create_bitmap(&f, 5, 4, RAID_CHUNK, MEMBER_BYTES, BM_CHUNK) != 0)
        goto out;
    const char *paths[FX_MAXM], *specs[FX_MAXM];
    for (int s = 0; s < f.n; s++) {
        paths[s] = f.path[s];
        specs[s] = "write-eio=8192+4096";
    }
    struct uraid_open_params op = {.member_sim = specs};
    struct uraid_array *a;
    char why[256];
    CHECK(uraid_open(paths, f.n, &op, &a, why, sizeof why) == 0, "%s", why);
    uint8_t *buf = aligned_alloc(4096, 65536);
    memset(buf, 0xa5, 65536);
    CHECK(uraid_write(a, buf, 65536, 3 * 65536) != 0, "the write went through without a bitmap on disk");
    uraid_close(a);
    uint8_t *back = malloc(f.member_bytes - f.data_offset);
    for (int s = 0; s < f.n; s++) {
        CHECK(fx_member_pread(&f, s, back, f.member_bytes - f.data_offset, 0) == 0);
        uint64_t i = 0;
        while (i < f.member_bytes - f.data_offset && !back[i])
            i++;
        CHECK(i == f.member_bytes - f.data_offset, "slot %d: data written at byte %llu", s, (unsigned long long)i);
    }
    free(back);
    free(buf);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- clean close and the daemon ------------------------------------------------------ */

/* A new bitmap array, opened with the bitmap daemon every daemon_ms. */
static struct uraid_array *create_and_open(struct fx *f, int level, int n, uint32_t daemon_ms)
{
    if (fx_create_bitmap(f, level, n, RAID_CHUNK, MEMBER_BYTES, BM_CHUNK) != 0)
        return NULL;
    const char *paths[FX_MAXM];
    for (int s = 0; s < f->n; s++)
        paths[s] = f->path[s];
    struct uraid_open_params op = {.bitmap_daemon_ms = daemon_ms};
    struct uraid_array *a = NULL;
    char why[256];
    CHECK(uraid_open(paths, f->n, &op, &a, why, sizeof why) == 0, "%s", why);
    return a;
}

static void test_clean_close(int level, int n)
{
    char name[128];
    snprintf(name, sizeof name, "RAID-%d n=%d: bits on disk after a write, cleared by the daemon while open, none "
             "after a clean close, events equal", level, n);
    harness_begin(name);
    struct fx f;
    struct uraid_array *a = create_and_open(&f, level, n, 200);
    if (!a)
        goto out;
    uint8_t *buf = aligned_alloc(4096, 8192);
    rng_fill(&rng, buf, 8192);
    uint64_t off = f.stripe_bytes * 7 + 4096;
    CHECK(fx_write(&f, a, buf, 8192, off) == 0);
    uint8_t bits[512];
    struct md_bitmap_sb h;
    struct md_sb sb;
    raw_bitmap(&f, n - 1, &h, bits, sizeof bits);
    fx_read_sb(&f, n - 1, &sb);
    uint64_t expect = level == 1 ? off / BM_CHUNK : 7;
    CHECK(md_bitmap_test(bits, expect) && md_bitmap_count(bits, 8 * sizeof bits) == 1,
          "%s: bit %llu not alone on disk right after the write", f.label, (unsigned long long)expect);
    CHECK(h.events == sb.events && sb.resync_offset != MD_RESYNC_CLEAN, "%s: events %llu/%llu while dirty", f.label,
          (unsigned long long)h.events, (unsigned long long)sb.events);
    int cleared = 0;
    for (int i = 0; i < 150 && !cleared; i++) {
        sleep_ms(20);
        raw_bitmap(&f, 0, &h, bits, sizeof bits);
        cleared = md_bitmap_count(bits, 8 * sizeof bits) == 0;
    }
    CHECK(cleared, "%s: the daemon did not clear an idle bit within 3 s", f.label);
    CHECK(fx_write(&f, a, buf, 8192, off + f.stripe_bytes * 20) == 0);
    CHECK(uraid_close(a) == 0);
    for (int s = 0; s < f.n; s++) {
        raw_bitmap(&f, s, &h, bits, sizeof bits);
        fx_read_sb(&f, s, &sb);
        CHECK(md_bitmap_count(bits, 8 * sizeof bits) == 0, "%s: slot %d: bits left after a clean close", f.label, s);
        CHECK(h.events == sb.events && h.events_cleared <= h.events && sb.resync_offset == MD_RESYNC_CLEAN,
              "%s: slot %d: bitmap events %llu, sb %llu", f.label, s, (unsigned long long)h.events,
              (unsigned long long)sb.events);
    }
    a = fx_open(&f, NULL, 0, 0);
    if (a) {
        fx_verify_all(&f, a, "after reopening");
        uraid_close(a);
    }
    free(buf);
out:
    fx_destroy(&f);
    harness_end();
}

static void test_degraded_keeps_bits(void)
{
    harness_begin("RAID-5 degraded: bits written while a member is missing stay set after a clean close");
    struct fx f;
    if (fx_create_bitmap(&f, 5, 4, RAID_CHUNK, MEMBER_BYTES, BM_CHUNK) != 0)
        goto out;
    int omit[FX_MAXM] = {0};
    omit[2] = 1;
    struct uraid_array *a = fx_open(&f, omit, 0, 0);
    if (!a)
        goto out;
    uint8_t buf[4096] = {1};
    CHECK(fx_write(&f, a, buf, sizeof buf, f.stripe_bytes * 5) == 0);
    CHECK(uraid_close(a) == 0);
    uint8_t bits[64];
    struct md_bitmap_sb h;
    struct md_sb sb;
    raw_bitmap(&f, 0, &h, bits, sizeof bits);
    fx_read_sb(&f, 0, &sb);
    CHECK(md_bitmap_test(bits, 5) && md_bitmap_count(bits, 8 * sizeof bits) == 1 && h.events == sb.events,
          "degraded: %llu bits set (bit 5: %d), events %llu/%llu", (unsigned long long)md_bitmap_count(bits, 512),
          md_bitmap_test(bits, 5), (unsigned long long)h.events, (unsigned long long)sb.events);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- crash, then resync of the dirty chunks ------------------------------------------- */

static void test_crash_resync(int level, int n, int stale)
{
    char name[160];
    snprintf(name, sizeof name, "RAID-%d n=%d: crash then reopen: %s, then a check finds nothing", level, n,
             stale ? "a stale bitmap (events too old) -> full resync" : "the resync covers the dirty chunks only");
    harness_begin(name);
    struct fx f;
    if (fx_create_bitmap(&f, level, n, RAID_CHUNK, MEMBER_BYTES, BM_CHUNK) != 0)
        goto out;
    /* two chunks' worth at stripe 10 (RAID-1: member bytes 10 * 64K) */
    uint64_t unit = level == 1 ? BM_CHUNK : f.stripe_bytes;
    write_then_die(&f, 10 * unit + 4096, unit + 8192);
    uint8_t bits[512];
    struct md_bitmap_sb h;
    struct md_sb sb;
    raw_bitmap(&f, 0, &h, bits, sizeof bits);
    fx_read_sb(&f, 0, &sb);
    CHECK(md_bitmap_count(bits, 8 * sizeof bits) == 2 && md_bitmap_test(bits, 10) && md_bitmap_test(bits, 11),
          "%s: %llu bits set after the crash, expected chunks 10 and 11", f.label,
          (unsigned long long)md_bitmap_count(bits, 8 * sizeof bits));
    CHECK(h.events == sb.events, "%s: bitmap events %llu, sb %llu after the crash", f.label,
          (unsigned long long)h.events, (unsigned long long)sb.events);
    /* tear chunk 11's stripe: its redundancy no longer matches the data */
    int p = 1, q;
    if (level != 1)
        fx_parity_of(&f, 11, &p, &q);
    uint8_t junk[4096];
    rng_fill(&rng, junk, sizeof junk);
    int fd = open(f.path[p], O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, junk, sizeof junk, (off_t)(f.data_offset + 11 * BM_CHUNK + 8192)) == 4096);
    close(fd);
    if (stale)
        for (int s = 0; s < f.n; s++)
            patch_bitmap_events(&f, s, sb.events - 1);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    struct uraid_job_status js;
    run_job(a, URAID_JOB_RESYNC, &js);
    uint64_t want = stale ? js.total_sectors : 2 * (BM_CHUNK / 512);
    CHECK(js.worked_sectors == want, "%s: the resync worked on %llu sectors of %llu, expected %llu", f.label,
          (unsigned long long)js.worked_sectors, (unsigned long long)js.total_sectors, (unsigned long long)want);
    run_job(a, URAID_JOB_CHECK, &js);
    CHECK(js.mismatch_sectors == 0, "%s: %llu sectors mismatch after the resync", f.label,
          (unsigned long long)js.mismatch_sectors);
    fx_verify_all(&f, a, "after the resync");
    CHECK(uraid_close(a) == 0);
    raw_bitmap(&f, n - 1, &h, bits, sizeof bits);
    fx_read_sb(&f, n - 1, &sb);
    CHECK(md_bitmap_count(bits, 8 * sizeof bits) == 0 && h.events == sb.events && h.state == 0 &&
              sb.resync_offset == MD_RESYNC_CLEAN,
          "%s: after resync and close: %llu bits, events %llu/%llu, state %u", f.label,
          (unsigned long long)md_bitmap_count(bits, 8 * sizeof bits), (unsigned long long)h.events,
          (unsigned long long)sb.events, h.state);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- md's own bitmap (fixture g) --------------------------------------------------------- */

static void test_fixture_g(void)
{
    harness_begin("fixture g (md RAID-6 with a bitmap): written by uraid, bit set on disk, cleared at close, events equal");
    const char *fixtures = getenv("URAID_FIXTURES") ? getenv("URAID_FIXTURES") : "../shared/fixtures/md";
    struct fx f = {.level = 6, .n = 6, .chunk = 65536, .k = 4, .stripe_bytes = 4 * 65536};
    snprintf(f.label, sizeof f.label, "fixture g");
    const char *tmp = getenv("TMPDIR");
    snprintf(f.dir, sizeof f.dir, "%s/uraid-g-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(f.dir) != NULL);
    char dir[sizeof f.dir]; /* a copy: gcc -O1 cannot tell f.dir and f.path[] apart (-Wrestrict) */
    memcpy(dir, f.dir, sizeof dir);
    const char *paths[6];
    for (int s = 0; s < 6; s++) {
        char cmd[1200];
        snprintf(f.path[s], sizeof f.path[s], "%.200s/m%d.img", dir, s);
        paths[s] = f.path[s];
        snprintf(cmd, sizeof cmd, "xz -dc '%s/g-raid6-ls-n6-c64k-bitmap-bbl/slot%d.img.xz' > '%s'", fixtures, s,
                 f.path[s]);
        CHECK(system(cmd) == 0, "fixture g: %s", cmd);
    }
    struct md_sb sb;
    struct md_bitmap_sb h;
    uint8_t bits[8];
    CHECK(fx_read_sb(&f, 0, &sb) == 0);
    f.data_offset = sb.data_offset * 512;
    struct uraid_array *a;
    char why[256];
    CHECK(uraid_open(paths, 6, NULL, &a, why, sizeof why) == 0, "%s", why);
    if (a) {
        uint8_t buf[4096];
        CHECK(uraid_read(a, buf, 4096, 8192) == 0 && uraid_write(a, buf, 4096, 8192) == 0);
        raw_bitmap(&f, 3, &h, bits, sizeof bits);
        fx_read_sb(&f, 3, &sb);
        CHECK(md_bitmap_test(bits, 0) && h.events == sb.events && h.chunksize == 64u << 20,
              "fixture g: bit 0 %d, events %llu/%llu", md_bitmap_test(bits, 0), (unsigned long long)h.events,
              (unsigned long long)sb.events);
        CHECK(uraid_close(a) == 0);
    }
    for (int s = 0; s < 6; s++) {
        raw_bitmap(&f, s, &h, bits, sizeof bits);
        fx_read_sb(&f, s, &sb);
        CHECK(!md_bitmap_test(bits, 0) && h.events == sb.events && sb.resync_offset == MD_RESYNC_CLEAN,
              "fixture g slot %d after close: bit %d, events %llu/%llu", s, md_bitmap_test(bits, 0),
              (unsigned long long)h.events, (unsigned long long)sb.events);
    }
    fx_destroy(&f);
    harness_end();
}

/* ---- many writers, a busy daemon --------------------------------------------------------- */

struct worker {
    struct fx *f;
    struct uraid_array *a;
    int id, nthreads, rounds;
    uint64_t seed;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct rng r;
    rng_seed(&r, w->seed);
    uint8_t *buf = aligned_alloc(4096, 65536);
    /* each thread owns every nthreads-th 64 KiB of the array, so the model stays exact */
    uint64_t slots = w->f->size / 65536 / (uint64_t)w->nthreads;
    for (int i = 0; i < w->rounds; i++) {
        uint64_t off = (rng_below(&r, slots) * (uint64_t)w->nthreads + (uint64_t)w->id) * 65536;
        uint64_t len = (1 + rng_below(&r, 16)) * 4096;
        rng_fill(&r, buf, len);
        CHECK(fx_write(w->f, w->a, buf, len, off) == 0);
        if (i % 16 == 15)
            sleep_ms(3); /* idle moments, so the daemon clears bits under the writers */
    }
    free(buf);
    return NULL;
}

static void test_threads(int level, int n)
{
    char name[128];
    snprintf(name, sizeof name, "RAID-%d n=%d: four writers with the daemon clearing every 5 ms; data intact, "
             "bitmap clean at close", level, n);
    harness_begin(name);
    struct fx f;
    struct uraid_array *a = create_and_open(&f, level, n, 5);
    if (!a)
        goto out;
    pthread_t t[4];
    struct worker w[4];
    int rounds = getenv("URAID_TEST_QUICK") ? 64 : 256;
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.f = &f, .a = a, .id = i, .nthreads = 4, .rounds = rounds, .seed = rng_next(&rng)};
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    fx_verify_all(&f, a, "after the writers");
    CHECK(uraid_close(a) == 0);
    uint8_t bits[512];
    struct md_bitmap_sb h;
    raw_bitmap(&f, 0, &h, bits, sizeof bits);
    CHECK(md_bitmap_count(bits, 8 * sizeof bits) == 0, "%s: bits left after close", f.label);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- grow --size ------------------------------------------------------------------- */

/* md_bitmap_resize's rule: the chunk doubles while the bits for span
 * sectors would not fit the sectors the bitmap fills now. */
static uint64_t md_resized_chunk(uint64_t chunk_bytes, uint64_t old_span, uint64_t new_span)
{
    uint64_t room = md_bitmap_area_bytes((old_span * 512 + chunk_bytes - 1) / chunk_bytes);
    while (md_bitmap_area_bytes((new_span * 512 + chunk_bytes - 1) / chunk_bytes) > room)
        chunk_bytes *= 2;
    return chunk_bytes;
}

/* uraid_grow_size on members replaced by bigger ones (random bytes past the
 * old end): every member's bitmap gets the doubled chunk and the new
 * sync_size with the superblock's events, the old bytes read as before, a
 * check finds the new region synced, and a write past the old end sets its
 * bit in the new chunk. */
static void test_grow_size(int level, int n)
{
    char name[128];
    snprintf(name, sizeof name, "RAID-%d n=%d: grow --size max with a 4 KiB-chunk bitmap that must double", level, n);
    harness_begin(name);
    struct fx f;
    if (fx_create_bitmap(&f, level, n, RAID_CHUNK, 8u << 20, 4096))
        goto out;
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    fx_fill(&f, a, &rng);
    CHECK(uraid_close(a) == 0);
    struct md_sb sb;
    fx_read_sb(&f, 0, &sb);
    uint64_t old_span = sb.size, old_size = f.size;
    uint8_t *junk = malloc(1 << 20);
    for (int s = 0; s < n; s++) {
        FILE *fp = fopen(f.path[s], "a");
        for (int i = 0; fp && i < 32; i++) {
            rng_fill(&rng, junk, 1 << 20);
            fwrite(junk, 1, 1 << 20, fp);
        }
        CHECK(fp && fclose(fp) == 0, "%s: slot %d: grow the member file", f.label, s);
    }
    free(junk);
    const char *paths[FX_MAXM];
    for (int s = 0; s < n; s++)
        paths[s] = f.path[s];
    struct uraid_grow_result res;
    char why[256] = "";
    CHECK(uraid_grow_size(paths, n, 0, &res, why, sizeof why) == 0, "%s: grow --size max: %s", f.label, why);
    fx_read_sb(&f, 0, &sb);
    uint64_t want = md_resized_chunk(4096, old_span, sb.size);
    printf("  member sectors %llu -> %llu, bitmap chunk 4096 -> %llu\n", (unsigned long long)old_span,
           (unsigned long long)sb.size, (unsigned long long)want);
    CHECK(sb.size > old_span && want > 4096, "%s: the size grew (%llu) and the chunk must double", f.label,
          (unsigned long long)sb.size);
    uint8_t bits[1024];
    for (int s = 0; s < n; s++) {
        struct md_bitmap_sb h;
        struct md_sb ms;
        raw_bitmap(&f, s, &h, bits, sizeof bits);
        fx_read_sb(&f, s, &ms);
        CHECK(h.chunksize == want && h.sync_size == ms.size && h.events == ms.events &&
                  ms.resync_offset == MD_RESYNC_CLEAN && md_bitmap_count(bits, 8 * sizeof bits) == 0,
              "%s: slot %d: bitmap chunk %u sync %llu events %llu bits %llu (sb size %llu events %llu)", f.label, s,
              h.chunksize, (unsigned long long)h.sync_size, (unsigned long long)h.events,
              (unsigned long long)md_bitmap_count(bits, 8 * sizeof bits), (unsigned long long)ms.size,
              (unsigned long long)ms.events);
    }
    a = NULL;
    CHECK(uraid_open(paths, n, NULL, &a, why, sizeof why) == 0, "%s: open after the grow: %s", f.label, why);
    if (!a)
        goto out;
    CHECK(uraid_size(a) == res.to_sectors * 512 && uraid_size(a) > old_size, "%s: size %llu", f.label,
          (unsigned long long)uraid_size(a));
    fx_verify(&f, a, 0, old_size, "the old bytes after the grow");
    struct uraid_job_status st;
    run_job(a, URAID_JOB_CHECK, &st);
    CHECK(st.mismatch_sectors == 0, "%s: mismatch_cnt %llu after the grow", f.label,
          (unsigned long long)st.mismatch_sectors);
    /* a write near the new end sets the bit of its member sector in the new chunk */
    uint8_t *buf = aligned_alloc(4096, 4096);
    rng_fill(&rng, buf, 4096);
    uint64_t off = uraid_size(a) - 4096;
    CHECK(uraid_write(a, buf, 4096, off) == 0);
    struct md_bitmap_sb h;
    raw_bitmap(&f, 0, &h, bits, sizeof bits);
    uint64_t member_sector = level == 1 ? off / 512 : off / f.stripe_bytes * (RAID_CHUNK / 512) +
                                                      off % RAID_CHUNK / 512;
    /* uraid marks the stripe's whole chunk row (RAID-1: the write's sectors) */
    uint64_t row = level == 1 ? member_sector : member_sector / (RAID_CHUNK / 512) * (RAID_CHUNK / 512);
    uint64_t lo = row * 512 / want, hi = level == 1 ? lo : (row + RAID_CHUNK / 512 - 1) * 512 / want;
    uint64_t outside = md_bitmap_count(bits, 8 * sizeof bits);
    for (uint64_t b = lo; b <= hi; b++)
        outside -= md_bitmap_test(bits, b);
    CHECK(md_bitmap_test(bits, member_sector * 512 / want) && outside == 0,
          "%s: the write at %llu: bit %llu of chunk %llu not set, or %llu bits set outside %llu-%llu", f.label,
          (unsigned long long)off, (unsigned long long)(member_sector * 512 / want), (unsigned long long)want,
          (unsigned long long)outside, (unsigned long long)lo, (unsigned long long)hi);
    free(buf);
    CHECK(uraid_close(a) == 0);
out:
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    if (argc > 4 && (!strcmp(argv[1], "--writer") || !strcmp(argv[1], "--writer-at")))
        return writer_main(argc, argv);
    fx_log_from_env();
    harness_init(argc, argv, "test_bitmap");
    rng_seed(&rng, harness_seed());
    test_create();
    test_bits_before_data(1, 2);
    test_bits_before_data(5, 4);
    test_bits_before_data(6, 6);
    test_refused_without_bitmap();
    test_clean_close(5, 4);
    test_clean_close(1, 2);
    test_degraded_keeps_bits();
    test_crash_resync(5, 4, 0);
    test_crash_resync(6, 6, 0);
    test_crash_resync(1, 3, 0);
    test_crash_resync(5, 4, 1);
    test_fixture_g();
    test_threads(5, 4);
    test_threads(6, 5);
    test_grow_size(5, 4);
    test_grow_size(1, 2);
    return harness_finish();
}
