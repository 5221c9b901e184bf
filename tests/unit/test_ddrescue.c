/* GNU ddrescue mapfiles: the parser (lib/member/ddrescue.c) and the
 * badmap=PATH layer spec built on it (lib/member/spec.c).
 *   - maps as ddrescue writes them (finished, mid-rescue with every status,
 *     decimal numbers, no pass number, CRLF, comments after blanks): the
 *     unreadable ranges are exactly the bytes outside '+' blocks, merged;
 *   - the member size: ranges clipped to it, the unmapped tail unreadable;
 *   - malformed maps: each refused with one line naming the file and line;
 *   - badmap= on a member file: reads inside the bad ranges fail with EIO,
 *     reads outside return the file's bytes; a bad map leaves the member
 *     unwrapped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "member/ddrescue.h"
#include "member/member.h"

static char tmpdir[256];

struct want {
    uint64_t start, len;
};

static int parse(const char *text, uint64_t size, struct ddrescue_map *m, char *why, size_t whylen)
{
    return ddrescue_parse(text, strlen(text), "t.map", size, m, why, whylen);
}

/* Parses text and checks the unreadable ranges against want[]. */
static void expect_ranges(const char *what, const char *text, uint64_t size, const struct want *want, size_t n,
                          uint64_t end)
{
    struct ddrescue_map m;
    char why[256];
    int rc = parse(text, size, &m, why, sizeof why);
    CHECK(rc == 0, "%s: rc %d: %s", what, rc, why);
    if (rc)
        return;
    CHECK(m.nbad == n, "%s: %zu ranges, want %zu", what, m.nbad, n);
    for (size_t i = 0; i < n && i < m.nbad; i++)
        CHECK(m.bad[i].start == want[i].start && m.bad[i].len == want[i].len,
              "%s: range %zu is 0x%llx+0x%llx, want 0x%llx+0x%llx", what, i, (unsigned long long)m.bad[i].start,
              (unsigned long long)m.bad[i].len, (unsigned long long)want[i].start, (unsigned long long)want[i].len);
    CHECK(m.end == end, "%s: end 0x%llx, want 0x%llx", what, (unsigned long long)m.end, (unsigned long long)end);
    ddrescue_free(&m);
}

static void test_good_maps(void)
{
    expect_ranges("finished rescue",
                  "# Mapfile. Created by GNU ddrescue version 1.27\n"
                  "# current_pos  current_status  current_pass\n"
                  "0x773FF0000     +               1\n"
                  "#      pos        size  status\n"
                  "0x00000000  0x774000000  +\n",
                  0, NULL, 0, 0x774000000ull);

    /* every non-'+' status is unreadable; neighbours merge */
    static const struct want mid[] = {{0x10000, 0x20000}, {0x40000, 0x1000}, {0x50000, 0x30000}};
    expect_ranges("mid-rescue, every status",
                  "# Command line: ddrescue /dev/sdb d1.img d1.map\n"
                  "0x00020000 * 2\n"
                  "0x00000000 0x00010000 +\n"
                  "0x00010000 0x00010000 *\n"
                  "0x00020000 0x00010000 /\n"
                  "0x00030000 0x00010000 +\n"
                  "0x00040000 0x00001000 -\n"
                  "0x00041000 0x0000F000 +\n"
                  "0x00050000 0x00010000 ?\n"
                  "0x00060000 0x00020000 -\n",
                  0, mid, 3, 0x80000);

    /* old mapfiles: no pass number; decimal numbers; CRLF; tabs; comments after blanks */
    static const struct want dec[] = {{1024, 512}};
    expect_ranges("decimal, CRLF, no pass, trailing comments",
                  "# old logfile\r\n"
                  "\r\n"
                  "0\t?   # resumed here\r\n"
                  "0 1024 +\r\n"
                  "1024\t512\t-  # one bad sector\r\n"
                  "1536 2560 +",
                  0, dec, 1, 4096);

    /* the member size: ranges clipped to it, and what the map never reached is unreadable */
    static const struct want tail[] = {{0x1000, 0x1000}, {0x3000, 0x5000}};
    expect_ranges("map shorter than the member",
                  "0x0 + 1\n0x0 0x1000 +\n0x1000 0x1000 -\n0x2000 0x1000 +\n", 0x8000, tail, 2, 0x3000);
    static const struct want clip[] = {{0x1000, 0x1000}};
    expect_ranges("map longer than the member",
                  "0x0 + 1\n0x0 0x1000 +\n0x1000 0x4000 -\n0x5000 0x1000 +\n", 0x2000, clip, 1, 0x6000);

    /* gaps between blocks were never rescued */
    static const struct want gap[] = {{0x1000, 0x2000}};
    expect_ranges("gap between blocks", "0 + 1\n0 0x1000 +\n0x2000 0x1000 ?\n0x3000 0x1000 +\n", 0, gap, 1, 0x4000);
    static const struct want lead[] = {{0, 0x200}};
    expect_ranges("first block after 0", "0 + 1\n0x200 0x200 +\n", 0, lead, 1, 0x400);

    struct ddrescue_map m;
    CHECK(parse("0 + 1\n0 0x1000 +\n0x1000 0x200 -\n0x1200 0x600 *\n", 0, &m, NULL, 0) == 0);
    CHECK(ddrescue_bad_bytes(&m) == 0x800);
    ddrescue_free(&m);
    CHECK(m.bad == NULL && m.nbad == 0, "free leaves an empty map");
}

/* A malformed map: -EINVAL and one line naming the file and line. */
static void expect_error(const char *what, const char *text, const char *where, const char *reason)
{
    struct ddrescue_map m = {.nbad = 99};
    char why[256] = "";
    int rc = parse(text, 0, &m, why, sizeof why);
    CHECK(rc == -EINVAL, "%s: rc %d", what, rc);
    CHECK(strstr(why, where) != NULL, "%s: message '%s' should contain '%s'", what, why, where);
    CHECK(strstr(why, reason) != NULL, "%s: message '%s' should contain '%s'", what, why, reason);
    CHECK(!strchr(why, '\n'), "%s: one line", what);
    CHECK(m.bad == NULL && m.nbad == 0, "%s: nothing returned", what);
}

/* Malformed maps: what, the text, where the message points, its reason. */
static const struct {
    const char *what, *text, *where, *reason;
} bad_maps[] = {
    {"empty", "", "mapfile t.map:", "no status line"},
    {"only comments", "# a\n  # b\n\n", "mapfile t.map:", "no status line"},
    {"no blocks", "# x\n0x0 + 1\n", "mapfile t.map:", "no data blocks"},
    {"status line with a block's fields", "0 0x100 +\n", "t.map line 1", "not a ddrescue status"},
    {"unknown status in the status line", "0 X 1\n0 1 +\n", "t.map line 1", "not a ddrescue status"},
    {"pass not a number", "0 + x\n0 1 +\n", "t.map line 1", "pass number"},
    {"pass zero", "0 + 0\n0 1 +\n", "t.map line 1", "pass number"},
    {"block status unknown", "# c\n0 + 1\n0 0x200 +\n0x200 0x200 F\n", "t.map line 4", "block status 'F'"},
    {"block with two fields", "0 + 1\n0 0x200\n", "t.map line 2", "got 2 fields"},
    {"block with four fields", "0 + 1\n0 0x200 + extra\n", "t.map line 2", "got 4 fields"},
    {"negative size", "0 + 1\n0 -512 +\n", "t.map line 2", "not a size"},
    {"garbage after a number", "0 + 1\n0x10zz 512 +\n", "t.map line 2", "not a position"},
    {"comment glued to a status", "0 + 1\n0 512 +#c\n", "t.map line 2", "block status '+#c'"},
    {"size 0", "0 + 1\n0 0 +\n", "t.map line 2", "size 0"},
    {"overlap", "0 + 1\n0 0x400 +\n0x200 0x400 -\n", "t.map line 3", "overlaps"},
    {"descending", "0 + 1\n0x400 0x200 +\n0 0x200 -\n", "t.map line 3", "ascending"},
    {"wraps 2^64", "0 + 1\n0xFFFFFFFFFFFFFF00 0x200 +\n", "t.map line 2", "2^64"},
    {"number too large", "0 + 1\n0 0x1FFFFFFFFFFFFFFFF +\n", "t.map line 2", "not a size"},
};

static void test_bad_maps(void)
{
    for (size_t i = 0; i < sizeof bad_maps / sizeof bad_maps[0]; i++)
        expect_error(bad_maps[i].what, bad_maps[i].text, bad_maps[i].where, bad_maps[i].reason);
    char bin[] = "0 + 1\n0 0x200 +\n\x01\x02\x00zz";
    struct ddrescue_map m;
    char why[256];
    CHECK(ddrescue_parse(bin, sizeof bin - 1, "bin.map", 0, &m, why, sizeof why) == -EINVAL &&
              strstr(why, "bin.map line 3") && strstr(why, "NUL"),
          "binary data: %s", why);
    CHECK(ddrescue_parse("0 + 1\n0 1 +\n", 12, "x", 0, NULL, NULL, 0) == -EINVAL, "no output");
}

static int write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

/* badmap= through member_apply_spec on a real file. */
static void test_badmap_layer(void)
{
    char img[300], map[300], badmap[300], spec[700], why[512];
    snprintf(img, sizeof img, "%s/d.img", tmpdir);
    snprintf(map, sizeof map, "%s/d.map", tmpdir);
    snprintf(badmap, sizeof badmap, "%s/bad.map", tmpdir);
    enum { size = 256 * 1024 };
    uint8_t *data = malloc(size), *buf = malloc(size);
    for (size_t i = 0; i < size; i++)
        data[i] = (uint8_t)(i * 7 + (i >> 9));
    CHECK(write_file(img, data, size) == 0);
    /* bad: [64K, 64K+512) and [128K, 136K); the map stops at 192K, so [192K, 256K) too */
    const char *text = "# test\n0x10000 - 1\n0 0x10000 +\n0x10000 0x200 -\n0x10200 0xFE00 +\n"
                       "0x20000 0x2000 *\n0x22000 0xE000 +\n";
    CHECK(write_file(map, text, strlen(text)) == 0);
    CHECK(write_file(badmap, "0 + 1\n0 0x200 +\n0x100 0x200 -\n", 30) == 0);

    struct member *m;
    CHECK(member_open_file(img, 1, &m) == 0);
    struct member *orig = m;
    snprintf(spec, sizeof spec, "badmap=%s", badmap);
    int rc = member_apply_spec(&m, spec, why, sizeof why);
    CHECK(rc == -EINVAL && m == orig, "a malformed map leaves the member as it was (rc %d)", rc);
    CHECK(strstr(why, "bad.map line 3") && strstr(why, "overlaps"), "message: %s", why);
    snprintf(spec, sizeof spec, "badmap=%s/nosuch.map", tmpdir);
    rc = member_apply_spec(&m, spec, why, sizeof why);
    CHECK(rc == -ENOENT && m == orig && strstr(why, "nosuch.map"), "missing map: %d %s", rc, why);
    rc = member_apply_spec(&m, "throttle=1G,badmap=x", why, sizeof why);
    CHECK(rc == -EINVAL && m == orig, "badmap beside throttle refused: %s", why);

    snprintf(spec, sizeof spec, "latency=0us;badmap=%s", map);
    rc = member_apply_spec(&m, spec, why, sizeof why);
    CHECK(rc == 0 && m != orig && !strcmp(m->ops->kind, "fault"), "applied: %d %s", rc, why);
    if (rc == 0) {
        static const struct {
            uint64_t off;
            size_t len;
            int err;
        } cases[] = {
            {0, 65536, 0},          {0, 65536 + 512, -EIO}, {65536, 512, -EIO},      {65536 - 512, 512, 0},
            {65536 + 512, 512, 0},  {65536 + 512, 65024, 0}, {131072 - 512, 1024, -EIO}, {131072 + 8192, 4096, 0},
            {131072 + 4096, 4096, -EIO}, {196608 - 512, 512, 0}, {196608, 512, -EIO},  {size - 512, 512, -EIO},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            memset(buf, 0xee, cases[i].len);
            rc = member_read(m, buf, cases[i].len, cases[i].off);
            CHECK(rc == cases[i].err, "read %zu at %llu: %d, want %d", cases[i].len, (unsigned long long)cases[i].off,
                  rc, cases[i].err);
            if (rc == 0)
                CHECK(!memcmp(buf, data + cases[i].off, cases[i].len), "read at %llu: wrong bytes",
                      (unsigned long long)cases[i].off);
        }
        CHECK(member_fault_hits(m) == 6, "hits %llu", (unsigned long long)member_fault_hits(m));
    }
    member_close(m);
    free(data);
    free(buf);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_ddrescue");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/uraid-ddrescue.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    harness_begin("mapfiles as ddrescue writes them: unreadable = outside '+' blocks");
    test_good_maps();
    harness_end();
    harness_begin("malformed mapfiles: one line naming the file and line");
    test_bad_maps();
    harness_end();
    harness_begin("badmap= layer: reads of unrescued bytes fail with EIO");
    test_badmap_layer();
    harness_end();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return harness_finish();
}
