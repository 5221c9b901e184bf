/* md RAID-10 placement (lib/raid10.c) and the linear level (lib/linear.c)
 * against arrays the real md wrote (tests/fixtures/md10, regen.sh there):
 * each fixture is filled with "secpat plain" (array sector S holds LE64(S)
 * || LE64(SEED) repeated 32 times), so every member sector says which array
 * sector md put there. For every fixture: the size md reported equals
 * raid10_geom_init's (or the linear sum); every copy raid10_map names holds
 * its sector; every member sector in use unmaps to the sector it holds, and
 * every one raid10_unmap calls empty is zero on disk (md never wrote it).
 * Then md's enough() rule and mdadm's layout names, and a random round
 * trip over many geometries (seed printed; URAID_TEST_SEED=N replays).
 * Members are unpacked with `xz -dc`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "linear.h"
#include "meta/superblock.h"
#include "raid10.h"

#define FIXDIR "tests/fixtures/md10"
#define MAXM 8

struct fixture {
    char name[32], level[16], layout[8];
    int n;
    unsigned chunk_kib;
    uint64_t seed, size;
    uint8_t *img[MAXM];
    size_t len[MAXM];
    struct md_sb sb[MAXM];
};

static uint8_t *unpack(const char *path, size_t *len)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "xz -dc '%s'", path);
    FILE *f = popen(cmd, "r");
    if (!f)
        return NULL;
    size_t cap = 8u << 20, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    if (pclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static int sector_is(const uint8_t *p, uint64_t s, uint64_t seed)
{
    for (int i = 0; i < 32; i++) {
        uint64_t a, b;
        memcpy(&a, p + i * 16, 8);
        memcpy(&b, p + i * 16 + 8, 8);
        if (a != s || b != seed)
            return 0;
    }
    return 1;
}

static int sector_zero(const uint8_t *p)
{
    for (int i = 0; i < 512; i++)
        if (p[i])
            return 0;
    return 1;
}

static int load(struct fixture *f)
{
    for (int i = 0; i < f->n; i++) {
        char path[256], why[160];
        snprintf(path, sizeof path, FIXDIR "/%s/slot%d.img.xz", f->name, i);
        f->img[i] = unpack(path, &f->len[i]);
        if (!f->img[i] || f->len[i] < 8192 + 4096)
            return -EIO;
        if (md_sb_decode(f->img[i] + 4096, 8, &f->sb[i], why, sizeof why)) {
            fprintf(stderr, "%s slot %d: %s\n", f->name, i, why);
            return -EINVAL;
        }
    }
    return 0;
}

static const uint8_t *at(const struct fixture *f, int m, uint64_t member_sector)
{
    uint64_t off = (f->sb[m].data_offset + member_sector) * 512;
    return off + 512 <= f->len[m] ? f->img[m] + off : NULL;
}

static void check_raid10(struct fixture *f)
{
    harness_beginf("md's %s (RAID-10 %s, %d members, %u KiB chunk): every copy where raid10_map says", f->name,
                   f->layout, f->n, f->chunk_kib);
    struct raid10_geom g;
    char why[200];
    int rc = raid10_geom_init(&g, f->n, (int)f->sb[0].layout, f->sb[0].chunksize, f->sb[0].size, why, sizeof why);
    CHECK(rc == 0, "%s", why);
    CHECK(raid10_layout_from_name(f->layout) == (int)f->sb[0].layout, "name %s, md wrote 0x%x", f->layout,
          f->sb[0].layout);
    CHECK(g.array_sectors * 512 == f->size, "size %llu, md %llu", (unsigned long long)g.array_sectors * 512,
          (unsigned long long)f->size);
    uint64_t bad = 0;
    for (uint64_t s = 0; rc == 0 && s < g.array_sectors && bad < 5; s++) {
        struct raid10_copy cp[RAID10_MAX_COPIES];
        CHECK(raid10_map(&g, s, cp) == 0);
        for (int i = 0; i < g.copies; i++) {
            const uint8_t *p = at(f, cp[i].disk, cp[i].sector);
            if (!p || !sector_is(p, s, f->seed)) {
                bad++;
                CHECK(0, "array sector %llu copy %d: member %d sector %llu does not hold it", (unsigned long long)s,
                      i, cp[i].disk, (unsigned long long)cp[i].sector);
            }
        }
    }
    harness_end();

    harness_beginf("md's %s: every member sector unmaps to what it holds, the empty ones are zero", f->name);
    bad = 0;
    uint64_t used = 0;
    for (int m = 0; m < f->n && rc == 0; m++)
        for (uint64_t ms = 0; ms < f->sb[m].data_size && bad < 5; ms++) {
            const uint8_t *p = at(f, m, ms);
            if (!p)
                break;
            uint64_t s;
            int r = raid10_unmap(&g, m, ms, &s);
            if (r == 0)
                used++;
            if ((r == 0 && !sector_is(p, s, f->seed)) || (r == -ENOENT && !sector_zero(p)) || (r && r != -ENOENT)) {
                bad++;
                CHECK(0, "member %d sector %llu: unmap %d -> %llu, disk disagrees", m, (unsigned long long)ms, r,
                      r ? 0ull : (unsigned long long)s);
            }
        }
    CHECK(used == g.array_sectors * (uint64_t)g.copies, "%llu positions in use, %llu expected",
          (unsigned long long)used, (unsigned long long)(g.array_sectors * (uint64_t)g.copies));
    harness_end();
}

static void check_linear(struct fixture *f)
{
    harness_beginf("md's %s (linear, %d members): the data areas in slot order", f->name, f->n);
    struct linear_geom g;
    uint64_t ds[MAXM];
    for (int i = 0; i < f->n; i++)
        ds[i] = f->sb[i].data_size;
    char why[160];
    CHECK(f->sb[0].level == -1, "level %d", f->sb[0].level);
    int rc = linear_init(&g, f->n, ds, f->sb[0].chunksize, why, sizeof why);
    CHECK(rc == 0, "%s", why);
    CHECK(linear_array_sectors(&g) * 512 == f->size, "size %llu, md %llu",
          (unsigned long long)linear_array_sectors(&g) * 512, (unsigned long long)f->size);
    uint64_t bad = 0;
    for (uint64_t s = 0; rc == 0 && s < linear_array_sectors(&g) && bad < 5; s++) {
        int d;
        uint64_t ms, left;
        CHECK(linear_map(&g, s, &d, &ms, &left) == 0);
        const uint8_t *p = at(f, d, ms);
        if (!p || !sector_is(p, s, f->seed) || left == 0) {
            bad++;
            CHECK(0, "array sector %llu: member %d sector %llu", (unsigned long long)s, d, (unsigned long long)ms);
        }
    }
    int d;
    uint64_t ms, left;
    CHECK(linear_map(&g, linear_array_sectors(&g), &d, &ms, &left) == -EINVAL);
    harness_end();
}

static void check_rules(void)
{
    harness_begin("md's enough(): which members RAID-10 can lose");
    struct raid10_geom g;
    CHECK(raid10_geom_init(&g, 4, 0x102, 128, 1 << 16, NULL, 0) == 0);
    unsigned char miss[8] = {0};
    CHECK(raid10_survives(&g, miss));
    miss[0] = miss[2] = 1;
    CHECK(raid10_survives(&g, miss), "n2 x4 without 0 and 2 keeps a copy of each pair");
    miss[2] = 0;
    miss[1] = 1;
    CHECK(!raid10_survives(&g, miss), "n2 x4 without 0 and 1 lost a pair");
    CHECK(raid10_geom_init(&g, 3, 0x102, 128, 1 << 16, NULL, 0) == 0);
    memset(miss, 0, sizeof miss);
    miss[1] = 1;
    CHECK(raid10_survives(&g, miss));
    miss[2] = 1;
    CHECK(!raid10_survives(&g, miss), "n2 x3 cannot lose two");
    CHECK(raid10_geom_init(&g, 4, 0x201, 128, 1 << 16, NULL, 0) == 0);
    memset(miss, 0, sizeof miss);
    miss[0] = miss[2] = 1;
    CHECK(raid10_survives(&g, miss), "f2 x4 without 0 and 2");
    miss[2] = 0;
    miss[3] = 1;
    CHECK(!raid10_survives(&g, miss), "f2 x4 without 3 and 0 (neighbours)");
    harness_end();

    harness_begin("mdadm's layout names and md's refusals");
    char buf[16];
    CHECK(raid10_layout_from_name("n2") == 0x102 && raid10_layout_from_name("F2") == 0x201 &&
          raid10_layout_from_name("o3") == 0x10301 && raid10_layout_from_name("default") == 0x102);
    CHECK(raid10_layout_from_name("x2") < 0 && raid10_layout_from_name("n") < 0 && raid10_layout_from_name("n2x") < 0);
    CHECK(!strcmp(raid10_layout_name(0x102, buf, sizeof buf), "n2"));
    CHECK(!strcmp(raid10_layout_name(0x10201, buf, sizeof buf), "o2"));
    CHECK(!strcmp(raid10_layout_name(0x202, buf, sizeof buf), "n2f2"));
    CHECK(raid10_layout_check(3, 0x103, NULL, 0) == 0 && raid10_layout_check(3, 0x104, NULL, 0) == -EINVAL);
    CHECK(raid10_layout_check(4, 0x20201, NULL, 0) == -EINVAL, "far sets refused");
    CHECK(raid10_layout_check(4, 0x101, NULL, 0) == -EINVAL, "one copy refused");
    struct raid10_geom big;
    CHECK(raid10_geom_init(&big, 4, 0x102, 8, UINT64_MAX, NULL, 0) == -EOVERFLOW, "2^64 sectors refused");
    CHECK(raid10_geom_init(&big, 200, 0x201, 8, UINT64_MAX, NULL, 0) == -EOVERFLOW);
    CHECK(raid10_geom_init(&big, 4, 0x102, 6, 1 << 20, NULL, 0) == -EINVAL, "a chunk not a power of two");
    harness_end();
}

/* Random geometries (mixed near and far too): map and unmap agree, no two copies share a member, and
 * every used position belongs to exactly one copy. */
static void check_random(void)
{
    struct rng r;
    uint64_t seed = harness_seed();
    r.s = seed;
    harness_beginf("random RAID-10 geometries: map and unmap are inverse (seed %llu)", (unsigned long long)seed);
    for (int t = 0; t < 300; t++) {
        int n = 2 + (int)(rng_next(&r) % 7), nc = 1 + (int)(rng_next(&r) % 3), fc = 1 + (int)(rng_next(&r) % 3);
        if (nc * fc > n || nc * fc < 2)
            continue;
        /* near > 1 with offset: md moves a near copy that wraps one chunk
         * down, into the far copies' rows, so positions can collide there
         * (mdadm's names never make that word) */
        int layout = nc | fc << 8 | (fc > 1 && nc == 1 && rng_next(&r) % 2 ? RAID10_OFFSET_BIT : 0);
        uint32_t c = 8u << (rng_next(&r) % 3);
        uint64_t ms = c * (2 + rng_next(&r) % 20) + rng_next(&r) % c;
        struct raid10_geom g;
        if (raid10_geom_init(&g, n, layout, c, ms, NULL, 0))
            continue;
        CHECK(g.dev_sectors <= ms, "n %d layout 0x%x: uses %llu of %llu", n, layout,
              (unsigned long long)g.dev_sectors, (unsigned long long)ms);
        uint64_t hits = 0;
        for (uint64_t s = 0; s < g.array_sectors; s += 3) {
            struct raid10_copy cp[RAID10_MAX_COPIES];
            raid10_map(&g, s, cp);
            for (int i = 0; i < g.copies; i++) {
                uint64_t back = UINT64_MAX;
                CHECK(cp[i].sector < g.dev_sectors && raid10_unmap(&g, cp[i].disk, cp[i].sector, &back) == 0 &&
                          back == s,
                      "n %d layout 0x%x c %u sector %llu copy %d", n, layout, c, (unsigned long long)s, i);
                for (int k = 0; k < i; k++)
                    CHECK(cp[k].disk != cp[i].disk, "two copies on member %d", cp[i].disk);
            }
        }
        for (int m = 0; m < n; m++)
            for (uint64_t x = 0; x < g.dev_sectors; x++) {
                uint64_t s;
                hits += raid10_unmap(&g, m, x, &s) == 0;
            }
        CHECK(hits == g.array_sectors * (uint64_t)g.copies, "n %d layout 0x%x: %llu positions", n, layout,
              (unsigned long long)hits);
    }
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "raid10");
    FILE *cases = fopen(FIXDIR "/CASES", "r");
    harness_begin("the md-written fixtures are present");
    CHECK(cases, "no " FIXDIR "/CASES (run from the project root)");
    harness_end();
    char line[512];
    while (cases && fgets(line, sizeof line, cases)) {
        struct fixture f = {0};
        char sha[80], mm[8];
        unsigned long long seed, size;
        if (sscanf(line, "%31s %15s %7s %d %u %llu %llu %79s %7s", f.name, f.level, f.layout, &f.n, &f.chunk_kib, &seed,
                   &size, sha, mm) != 9 || f.n > MAXM)
            continue;
        f.seed = seed;
        f.size = size;
        harness_beginf("fixture %s unpacks and its superblocks decode", f.name);
        int rc = load(&f);
        CHECK(rc == 0, "rc %d", rc);
        harness_end();
        if (rc == 0 && !strcmp(f.level, "linear"))
            check_linear(&f);
        else if (rc == 0)
            check_raid10(&f);
        for (int i = 0; i < f.n; i++)
            free(f.img[i]);
    }
    if (cases)
        fclose(cases);
    check_rules();
    check_random();
    return harness_finish();
}
