/* md v1.2 superblock codec: round trips, the superblocks the real md wrote
 * (../shared/fixtures/md), every rejection rule, mdadm's data_offset rule,
 * and mdadm 4.2 itself reading superblocks we encode (mdadm --examine). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "meta/superblock.h"

static struct rng rng;
static const char *fixtures = "../shared/fixtures/md";

static void random_sb(struct md_sb *sb)
{
    memset(sb, 0, sizeof *sb);
    rng_fill(&rng, sb->set_uuid, 16);
    rng_fill(&rng, sb->device_uuid, 16);
    snprintf(sb->set_name, sizeof sb->set_name, "host:%u", (unsigned)rng_below(&rng, 1000));
    sb->feature_map = (uint32_t)rng_below(&rng, MD_FEATURE_ALL + 1);
    sb->ctime = rng_next(&rng);
    sb->level = (int32_t)rng_below(&rng, 7) - 1;
    sb->layout = (uint32_t)rng_below(&rng, 21);
    sb->size = rng_next(&rng) >> 8;
    sb->chunksize = 1u << rng_below(&rng, 20);
    sb->raid_disks = (uint32_t)rng_below(&rng, 300);
    sb->bitmap_offset = (int32_t)rng_next(&rng);
    sb->new_level = (uint32_t)rng_next(&rng);
    sb->reshape_position = rng_next(&rng);
    sb->delta_disks = (int32_t)rng_next(&rng);
    sb->new_layout = (uint32_t)rng_next(&rng);
    sb->new_chunk = (uint32_t)rng_next(&rng);
    sb->new_offset = (int32_t)rng_next(&rng);
    sb->super_offset = MD_SB_V12_SECTOR;
    sb->max_dev = (uint32_t)rng_below(&rng, MD_SB_MAX_DEV + 1);
    sb->dev_number = sb->max_dev ? (uint32_t)rng_below(&rng, sb->max_dev) : 0;
    if (!sb->max_dev)
        sb->max_dev = 1;
    sb->data_offset = 16 + rng_below(&rng, 1u << 20);
    sb->data_size = 10 + (rng_next(&rng) >> 10);
    sb->recovery_offset = rng_next(&rng);
    sb->cnt_corrected_read = (uint32_t)rng_next(&rng);
    sb->devflags = (uint8_t)rng_next(&rng);
    sb->bblog_shift = (uint8_t)rng_below(&rng, 4);
    sb->bblog_size = (uint16_t)rng_next(&rng);
    sb->bblog_offset = (int32_t)rng_next(&rng);
    sb->utime = rng_next(&rng);
    sb->events = rng_next(&rng);
    sb->resync_offset = rng_next(&rng);
    for (uint32_t i = 0; i < sb->max_dev; i++)
        sb->dev_roles[i] = (uint16_t)rng_next(&rng);
}

static void test_round_trip(void)
{
    uint8_t buf[MD_SB_BYTES];
    for (int r = 0; r < 2000; r++) {
        struct md_sb a, b;
        random_sb(&a);
        CHECK(md_sb_encode(&a, buf) == 0);
        char why[200];
        int rc = md_sb_decode(buf, MD_SB_V12_SECTOR, &b, why, sizeof why);
        CHECK(rc == 0, "decode: %s", why);
        if (rc)
            return;
        a.sb_csum = b.sb_csum;
        CHECK(!memcmp(&a, &b, sizeof a), "round trip differs (round %d)", r);
        /* bytes past the superblock are zero */
        for (size_t i = 256 + 2 * (size_t)a.max_dev; i < MD_SB_BYTES; i++)
            if (buf[i]) {
                CHECK(0, "byte %zu past the superblock is 0x%02x", i, buf[i]);
                break;
            }
    }
}

/* Superblock of a fixture member image (xz), decoded. */
static int fixture_sb(const char *rel, struct md_sb *sb, uint8_t raw[MD_SB_BYTES])
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "xz -dc '%s/%s' | head -c 8192", fixtures, rel);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -errno;
    uint8_t buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    pclose(f);
    if (n != sizeof buf)
        return -EIO;
    memcpy(raw, buf + 4096, MD_SB_BYTES);
    char why[200];
    int rc = md_sb_decode(raw, MD_SB_V12_SECTOR, sb, why, sizeof why);
    if (rc)
        printf("  %s: %s\n", rel, why);
    return rc;
}

struct fixture_fact {
    const char *member;
    int level, layout, raid_disks, role;
    uint32_t chunk;
    uint64_t events;
    uint32_t feature_map;
    uint8_t uuid_last;
};

static void test_fixtures(void)
{
    static const struct fixture_fact facts[] = {
        {"a-raid5-ls-n4-c64k/slot0.img.xz", 5, 2, 4, 0, 128, 19, 0, 0x0a},
        {"a-raid5-ls-n4-c64k/slot3.img.xz", 5, 2, 4, 3, 128, 19, 0, 0x0a},
        {"b-raid6-ls-n6-c64k/slot5.img.xz", 6, 2, 6, 5, 128, 19, 0, 0x0b},
        {"c-raid6-ra-n5-c32k/slot2.img.xz", 6, 1, 5, 2, 64, -1, 0, 0},
        {"e-raid1-n2/slot1.img.xz", 1, 0, 2, 1, 0, -1, 0, 0},
        {"f-raid0-n3-c64k/slot2.img.xz", 0, -1, 3, 2, 128, -1, 0, 0},
        {"g-raid6-ls-n6-c64k-bitmap-bbl/slot1.img.xz", 6, 2, 6, 1, 128, 19, 0x9, 0x10},
    };
    if (access(fixtures, R_OK) != 0) {
        CHECK(0, "fixtures missing at %s (run from the project root, with ../shared present)", fixtures);
        return;
    }
    for (unsigned i = 0; i < sizeof facts / sizeof facts[0]; i++) {
        const struct fixture_fact *f = &facts[i];
        struct md_sb sb;
        uint8_t raw[MD_SB_BYTES];
        int rc = fixture_sb(f->member, &sb, raw);
        CHECK(rc == 0, "%s decodes (rc %d)", f->member, rc);
        if (rc)
            continue;
        CHECK(sb.level == f->level, "%s level %d", f->member, sb.level);
        if (f->layout >= 0)
            CHECK((int)sb.layout == f->layout, "%s layout %u", f->member, sb.layout);
        CHECK((int)sb.raid_disks == f->raid_disks, "%s raid_disks", f->member);
        CHECK(sb.chunksize == f->chunk, "%s chunk %u", f->member, sb.chunksize);
        CHECK(sb.dev_roles[sb.dev_number] == f->role, "%s role %u", f->member, sb.dev_roles[sb.dev_number]);
        CHECK(sb.data_offset == 2048 && sb.super_offset == 8, "%s offsets", f->member);
        CHECK(!strncmp(sb.set_name, "mdoracle:0", 32), "%s name", f->member);
        if (f->events != (uint64_t)-1)
            CHECK(sb.events == f->events, "%s events %llu", f->member, (unsigned long long)sb.events);
        CHECK(sb.feature_map == f->feature_map, "%s feature map 0x%x", f->member, sb.feature_map);
        if (f->uuid_last)
            CHECK(sb.set_uuid[0] == 0x5f && sb.set_uuid[1] == 0xa1 && sb.set_uuid[15] == f->uuid_last, "%s uuid",
                  f->member);
        /* re-encoding md's superblock gives md's bytes */
        uint8_t again[MD_SB_BYTES];
        CHECK(md_sb_encode(&sb, again) == 0);
        CHECK(!memcmp(again, raw, 256 + 2 * sb.max_dev), "%s re-encodes byte for byte", f->member);
        /* mdadm reserves 8 sectors of bad-block log after superblock and bitmap space */
        CHECK(sb.bblog_size == 8 && sb.bblog_offset == (sb.level == 0 ? 8 : 16), "%s bblog %u at %d", f->member,
              sb.bblog_size, sb.bblog_offset);
    }
}

static void corrupt_and_expect(const uint8_t *good, void (*mutate)(uint8_t *), int want, const char *what)
{
    uint8_t buf[MD_SB_BYTES];
    memcpy(buf, good, sizeof buf);
    mutate(buf);
    struct md_sb sb;
    char why[200] = "";
    int rc = md_sb_decode(buf, MD_SB_V12_SECTOR, &sb, why, sizeof why);
    CHECK(rc == want, "%s: rc %d want %d (%s)", what, rc, want, why);
    CHECK(why[0] != 0, "%s: a reason is given", what);
}

static void resum(uint8_t *b)
{
    uint32_t max_dev = (uint32_t)b[220] | (uint32_t)b[221] << 8;
    uint32_t c = md_sb_checksum(b, max_dev);
    memcpy(b + 216, &c, 4);
}
static void m_magic(uint8_t *b) { b[0] ^= 1; }
static void m_csum(uint8_t *b) { b[100] ^= 0x40; }
static void m_feature(uint8_t *b) { b[9] |= 0x80; resum(b); }
static void m_pad0(uint8_t *b) { b[12] = 1; resum(b); }
static void m_pad3(uint8_t *b) { b[230] = 1; resum(b); }
static void m_super_offset(uint8_t *b) { b[144] = 0; resum(b); }
static void m_max_dev(uint8_t *b) { b[220] = 0x81; b[221] = 0x07; /* 1921 */ }
static void m_version(uint8_t *b) { b[4] = 2; resum(b); }
static void m_data_size(uint8_t *b) { memset(b + 136, 0, 8); b[136] = 5; resum(b); }

static void test_rejections(void)
{
    struct md_sb sb;
    uint8_t raw[MD_SB_BYTES];
    if (fixture_sb("a-raid5-ls-n4-c64k/slot0.img.xz", &sb, raw)) {
        CHECK(0, "fixture a readable");
        return;
    }
    corrupt_and_expect(raw, m_magic, -EINVAL, "wrong magic");
    corrupt_and_expect(raw, m_csum, -EBADMSG, "bad checksum");
    corrupt_and_expect(raw, m_feature, -EOPNOTSUPP, "unknown feature bit");
    corrupt_and_expect(raw, m_pad0, -EINVAL, "pad0 not zero");
    corrupt_and_expect(raw, m_pad3, -EINVAL, "pad3 not zero");
    corrupt_and_expect(raw, m_super_offset, -EINVAL, "super_offset mismatch");
    corrupt_and_expect(raw, m_max_dev, -EINVAL, "max_dev too large");
    corrupt_and_expect(raw, m_version, -EINVAL, "major version 2");
    corrupt_and_expect(raw, m_data_size, -EINVAL, "data_size < 10");
}

static void test_data_offset(void)
{
    const uint64_t GiB = 2ull * 1024 * 1024;
    CHECK(md_choose_data_offset(64 * 2048, 1024, 5) == 4096, "64 MiB: %llu",
          (unsigned long long)md_choose_data_offset(64 * 2048, 1024, 5));
    CHECK(md_choose_data_offset(8 * GiB, 1024, 5) == 18432, "8 GiB: %llu",
          (unsigned long long)md_choose_data_offset(8 * GiB, 1024, 5));
    CHECK(md_choose_data_offset(100 * GiB, 1024, 5) == 133120, "100 GiB: %llu",
          (unsigned long long)md_choose_data_offset(100 * GiB, 1024, 5));
    CHECK(md_choose_data_offset(128 * GiB, 1024, 5) == 264192);
    CHECK(md_choose_data_offset(4000 * GiB, 1024, 6) == 264192);
    /* the fixtures: 4 MiB members, 64 KiB chunk -> 2048 */
    CHECK(md_choose_data_offset(8192, 128, 5) == 2048);
    CHECK(md_choose_data_offset(8192, 128, 0) == 2048);
}

/* Writes members with our encoder and lets mdadm 4.2 examine them. */
static void test_mdadm_examine(void)
{
    char dir[] = "/tmp/uraid-sb.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    struct md_sb_create_params p = {
        .level = 6, .layout = 2, .chunk_sectors = 128, .raid_disks = 4, .name = "test", .homehost = "uraidhost",
        .ctime = 1796000000,
    };
    uint64_t dev_sectors = 64 * 2048;
    p.data_offset = md_choose_data_offset(dev_sectors, p.chunk_sectors, p.level);
    p.size = (dev_sectors - p.data_offset) / p.chunk_sectors * p.chunk_sectors;
    for (int i = 0; i < 16; i++)
        p.uuid[i] = (uint8_t)(0x10 + i);
    for (int i = 0; i < 4; i++)
        p.slot_present[i] = i != 2; /* slot 2 missing */
    for (int i = 0; i < 4; i++) {
        if (i == 2)
            continue;
        struct md_sb sb;
        md_sb_init_array(&sb, &p);
        uint8_t du[16] = {0xd0, (uint8_t)i};
        md_sb_init_member(&sb, (uint32_t)i, du, dev_sectors);
        sb.resync_offset = MD_RESYNC_CLEAN;
        sb.events = 5;
        if (i == 3)
            sb.feature_map |= MD_FEATURE_BAD_BLOCKS; /* the log is not empty */
        uint8_t buf[MD_SB_BYTES];
        CHECK(md_sb_encode(&sb, buf) == 0);
        char path[128];
        snprintf(path, sizeof path, "%s/m%d.img", dir, i);
        int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
        CHECK(fd >= 0 && ftruncate(fd, (off_t)dev_sectors * 512) == 0);
        CHECK(pwrite(fd, buf, sizeof buf, 4096) == (ssize_t)sizeof buf);
        uint8_t log[4096];
        memset(log, 0xff, sizeof log);
        if (i == 3) {
            /* one bad range: 8 sectors at member sector 5000 */
            uint64_t e = (5000ull << 10) | 8;
            memcpy(log, &e, 8);
        }
        CHECK(pwrite(fd, log, sizeof log, (off_t)(sb.super_offset + (uint64_t)sb.bblog_offset) * 512) == 4096);
        close(fd);
    }
    char cmd[256], out[8192];
    snprintf(cmd, sizeof cmd, "mdadm --examine %s/m1.img 2>&1", dir);
    FILE *f = popen(cmd, "r");
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    int status = f ? pclose(f) : -1;
    out[n] = 0;
    CHECK(status == 0, "mdadm --examine exit status %d (is mdadm installed? scripts/deps.sh installs it): %s", status,
          out);
    static const char *const want[] = {
        "Magic : a92b4efc", "Version : 1.2", "Array UUID : 10111213:14151617:18191a1b:1c1d1e1f",
        "Name : uraidhost:test", "Raid Level : raid6", "Raid Devices : 4", "Data Offset : 2048 sectors",
        "Super Offset : 8 sectors", "State : clean", "Layout : left-symmetric", "Chunk Size : 64K",
        "Device Role : Active device 1", "Array State : AA.A", "- correct", "Events : 5",
        "Bad Block Log : 512 entries available at offset 16 sectors",
    };
    for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK(strstr(out, want[i]) != NULL, "mdadm --examine shows '%s'", want[i]);

    snprintf(cmd, sizeof cmd, "mdadm --examine-badblocks %s/m1.img 2>&1; mdadm --examine-badblocks %s/m3.img 2>&1",
             dir, dir);
    f = popen(cmd, "r");
    n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    if (f)
        pclose(f);
    out[n] = 0;
    CHECK(strstr(out, "No bad-blocks list configured") == NULL, "%s", out);
    CHECK(strstr(out, "5000 for 8 sectors") != NULL, "bad block listed: %s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_superblock");
    rng_seed(&rng, harness_seed());
    harness_begin("encode/decode round trip of random superblocks");
    test_round_trip();
    harness_end();
    harness_begin("superblocks written by the real md decode with MANIFEST's facts");
    test_fixtures();
    harness_end();
    harness_begin("each kernel rejection rule gives its errno and a reason");
    test_rejections();
    harness_end();
    harness_begin("data_offset chosen as mdadm 4.2 does");
    test_data_offset();
    harness_end();
    harness_begin("mdadm --examine reads our superblocks and bad-block log");
    test_mdadm_examine();
    harness_end();
    return harness_finish();
}
