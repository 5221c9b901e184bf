/* A RAID-0 of members of different sizes through the array API, in both md
 * layouts: uraid_create records what mdadm does (layout, RAID0_LAYOUT
 * feature), the array is as large as the members' whole chunks summed,
 * random writes, write-zeroes and reads agree with an in-memory model, and
 * every byte sits on the member and at the offset md's zones say (checked
 * on the member files directly). Equal members keep one zone and no
 * feature bit. Prints its seed; URAID_TEST_SEED=N replays. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "raid0.h"
#include "uraid.h"
#include "meta/superblock.h"

#define N 4
#define CHUNK 4096u

static struct rng rng;

struct set {
    char dir[200], path[N][260];
    const char *paths[N];
    uint64_t bytes[N];
};

static int make_members(struct set *s, const uint64_t *bytes)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/uraid-raid0-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(s->dir))
        return -errno;
    char dir[sizeof s->dir];
    memcpy(dir, s->dir, sizeof dir); /* gcc's -Wrestrict sees s->path and s->dir as one object */
    for (int i = 0; i < N; i++) {
        snprintf(s->path[i], sizeof s->path[i], "%s/m%d.img", dir, i);
        s->paths[i] = s->path[i];
        s->bytes[i] = bytes[i];
        int fd = open(s->path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)bytes[i]) != 0)
            return -errno;
        close(fd);
    }
    return 0;
}

static void remove_members(struct set *s)
{
    for (int i = 0; i < N; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
}

static int read_sb(const char *path, struct md_sb *sb)
{
    uint8_t buf[4096];
    int fd = open(path, O_RDONLY);
    ssize_t got = fd >= 0 ? pread(fd, buf, sizeof buf, 4096) : -1;
    if (fd >= 0)
        close(fd);
    return got == (ssize_t)sizeof buf ? md_sb_decode(buf, 8, sb, NULL, 0) : -EIO;
}

static int all_zero(const char *path)
{
    uint8_t b[4096];
    ssize_t got;
    int fd = open(path, O_RDONLY), zero = fd >= 0;
    while (zero && (got = read(fd, b, sizeof b)) > 0)
        for (ssize_t i = 0; i < got; i++)
            zero &= b[i] == 0;
    if (fd >= 0)
        close(fd);
    return zero;
}

/* Every array sector's bytes, read from the member file md's zones name. */
static void check_members(struct set *s, const struct raid0_zones *z, const uint64_t *data_offset,
                          const uint8_t *model, const char *label)
{
    int fd[N];
    for (int i = 0; i < N; i++)
        fd[i] = open(s->path[i], O_RDONLY);
    uint8_t sector[512];
    for (uint64_t x = 0; x < z->array_sectors; x++) {
        struct raid0_addr ad;
        int ok = raid0_map(z, x, &ad) == 0 &&
                 pread(fd[ad.slot], sector, 512, (off_t)((data_offset[ad.slot] + ad.member_sector) * 512)) == 512 &&
                 memcmp(sector, model + x * 512, 512) == 0;
        CHECK(ok, "%s: array sector %llu not at slot %d member sector %llu", label, (unsigned long long)x, ad.slot,
              (unsigned long long)ad.member_sector);
        if (!ok)
            break;
    }
    for (int i = 0; i < N; i++)
        close(fd[i]);
}

/* layout: what uraid_create gets (-1: its default). */
static void run(const uint64_t *bytes, int layout, int want_layout, int want_feature, const char *label)
{
    struct set s;
    char why[512];
    if (make_members(&s, bytes) != 0) {
        CHECK(0, "%s: cannot make member files", label);
        return;
    }
    struct uraid_create_params cp = {.level = 0, .raid_devices = N, .chunk_bytes = CHUNK, .layout = layout,
                                     .name = "zones"};
    int rc = uraid_create(s.paths, N, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "%s: create: %s", label, why);
    struct md_sb sb[N];
    uint64_t sizes[N], data_offset[N], sum = 0;
    for (int i = 0; i < N && rc == 0; i++) {
        rc = read_sb(s.path[i], &sb[i]);
        CHECK(rc == 0, "%s: superblock of member %d", label, i);
        CHECK((int)sb[i].layout == want_layout && !!(sb[i].feature_map & MD_FEATURE_RAID0_LAYOUT) == want_feature,
              "%s: member %d layout %u feature map 0x%x", label, i, sb[i].layout, sb[i].feature_map);
        data_offset[i] = sb[i].data_offset;
        sizes[i] = bytes[i] / 512 - sb[i].data_offset;
        CHECK(sb[i].data_size == sizes[i], "%s: data_size %llu", label, (unsigned long long)sb[i].data_size);
        sum += sizes[i] / (CHUNK / 512) * (CHUNK / 512);
    }
    struct raid0_zones *z = malloc(sizeof *z);
    struct uraid_array *a = NULL;
    if (rc == 0 && z)
        rc = raid0_zones_build(z, N, sizes, CHUNK / 512, want_feature ? want_layout : RAID0_LAYOUT_UNSET, why,
                               sizeof why);
    if (rc == 0 && z)
        rc = uraid_open(s.paths, N, NULL, &a, why, sizeof why);
    CHECK(rc == 0 && z, "%s: open: %s", label, why);
    struct uraid_array_info info;
    uint8_t *model = rc == 0 && z ? calloc(1, sum * 512) : NULL, *buf = model ? malloc(sum * 512) : NULL;
    if (buf && uraid_get_info(a, &info) == 0) {
        CHECK(info.size_bytes == sum * 512 && z->array_sectors == sum, "%s: size %llu, members' chunks sum to %llu",
              label, (unsigned long long)info.size_bytes, (unsigned long long)sum * 512);
        uint64_t size = sum * 512;
        rng_fill(&rng, model, size);
        CHECK(uraid_write(a, model, size, 0) == 0, "%s: write all", label);
        for (int i = 0; i < 200; i++) {
            uint64_t off = rng_below(&rng, sum) * 512, len = (1 + rng_below(&rng, 48)) * 512;
            len = off + len > size ? size - off : len;
            if (rng_below(&rng, 3) == 0) {
                CHECK(uraid_write_zeroes(a, len, off) == 0, "%s: zero %llu+%llu", label, (unsigned long long)off,
                      (unsigned long long)len);
                memset(model + off, 0, len);
            } else {
                rng_fill(&rng, model + off, len);
                CHECK(uraid_write(a, model + off, len, off) == 0, "%s: write", label);
            }
        }
        /* a whole-array zeroing of the middle third, across zone boundaries */
        CHECK(uraid_write_zeroes(a, size / 3 / CHUNK * CHUNK, size / 3 / 512 * 512) == 0);
        memset(model + size / 3 / 512 * 512, 0, size / 3 / CHUNK * CHUNK);
        for (uint64_t off = 0; off < size;) {
            uint64_t len = (1 + rng_below(&rng, 64)) * 512;
            len = off + len > size ? size - off : len;
            CHECK(uraid_read(a, buf + off, len, off) == 0, "%s: read %llu", label, (unsigned long long)off);
            off += len;
        }
        CHECK(memcmp(buf, model, size) == 0, "%s: reads differ from what was written", label);
        CHECK(uraid_read(a, buf, 512, size) < 0, "%s: a read past the end is refused", label);
        CHECK(uraid_close(a) == 0, "%s: close", label);
        a = NULL;
        check_members(&s, z, data_offset, model, label);
    }
    uraid_close(a);
    free(buf);
    free(model);
    free(z);
    remove_members(&s);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_raid0_array");
    rng_seed(&rng, harness_seed());
    /* data areas after the 1 MiB offset: 768, 257, 1025, 512 KiB + 700 bytes:
     * four zones, zone 1 of three members shifted in the original layout */
    const uint64_t differ[N] = {(1024 + 768) << 10, (1024 + 257) << 10, (1024 + 1025) << 10, ((1024 + 512) << 10) + 700};
    const uint64_t equal[N] = {2 << 20, 2 << 20, (2 << 20) + 3000, 2 << 20};
    harness_begin("different sizes, default layout: original, feature bit, md's zones");
    run(differ, -1, RAID0_LAYOUT_ORIGINAL, 1, "default");
    harness_end();
    harness_begin("different sizes, --layout alternate");
    run(differ, RAID0_LAYOUT_ALTERNATE, RAID0_LAYOUT_ALTERNATE, 1, "alternate");
    harness_end();
    harness_begin("equal sizes (a remainder below a chunk): one zone, layout 0, no feature bit");
    run(equal, -1, 0, 0, "equal");
    harness_end();
    harness_begin("different sizes with layout 0 (md's 'dangerous') refused, nothing written");
    struct set s;
    char why[512];
    if (make_members(&s, differ) == 0) {
        struct uraid_create_params cp = {.level = 0, .raid_devices = N, .chunk_bytes = CHUNK, .layout = 0};
        CHECK(uraid_create(s.paths, N, &cp, 0, why, sizeof why) == -EINVAL && strstr(why, "--layout original"),
              "%s", why);
        for (int i = 0; i < N; i++)
            CHECK(all_zero(s.path[i]), "member %d was written", i);
        remove_members(&s);
    }
    harness_end();
    return harness_finish();
}
