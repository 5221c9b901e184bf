/* md v1.2 superblock codec: random round trips, every member the real md
 * wrote (../shared/fixtures/md, checked against its MANIFEST and against
 * mdadm's own checksum verdict), each kernel rejection rule, mdadm's
 * data_offset rule, md_sb_init against what mdadm wrote, the bitmap header,
 * and mdadm 4.2 examining members we create (the oracle).
 * Run from the project root. Randomised: prints its seed. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "meta/bitmap.h"
#include "meta/le.h"
#include "meta/superblock.h"

static struct rng rng;
static const char *fixtures = "../shared/fixtures/md";
static char tmpdir[] = "/tmp/uraid-test-sb.XXXXXX";

/* ---- helpers ------------------------------------------------------------ */

/* Runs cmd, returns its exit status and up to outlen-1 bytes of output. */
static int run(const char *cmd, char *out, size_t outlen)
{
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(out, outlen, "popen failed");
        return -1;
    }
    size_t n = fread(out, 1, outlen - 1, f);
    out[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int read_file(const char *path, uint8_t *buf, size_t len, off_t at)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    ssize_t n = pread(fd, buf, len, at);
    close(fd);
    return n == (ssize_t)len ? 0 : -EIO;
}

/* Text after "Key : " in mdadm --examine output, up to the end of line. */
static int examine_field(const char *out, const char *key, char *val, size_t vallen)
{
    char pat[64];
    snprintf(pat, sizeof pat, "%s : ", key);
    const char *p = strstr(out, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    size_t n = strcspn(p, "\n");
    if (n >= vallen)
        n = vallen - 1;
    memcpy(val, p, n);
    val[n] = 0;
    return 0;
}

/* ---- random round trip -------------------------------------------------- */

static void random_sb(struct md_sb *sb)
{
    memset(sb, 0, sizeof *sb);
    rng_fill(&rng, sb->set_uuid, 16);
    rng_fill(&rng, sb->device_uuid, 16);
    rng_fill(&rng, sb->set_name, 32);
    /* a PPL area has rules of its own (md_sb_check_ppl, test_ppl.c) */
    sb->feature_map = (uint32_t)rng_below(&rng, MD_FEATURE_ALL + 1) &
                      ~(MD_FEATURE_NEW_OFFSET | MD_FEATURE_PPL | MD_FEATURE_MULTIPLE_PPLS);
    sb->ctime = rng_next(&rng);
    sb->level = (int32_t)rng_next(&rng);
    sb->layout = (uint32_t)rng_next(&rng);
    sb->size = rng_next(&rng);
    sb->chunksize = (uint32_t)rng_next(&rng);
    sb->raid_disks = (uint32_t)rng_next(&rng);
    sb->bitmap_offset = (int32_t)rng_next(&rng);
    sb->new_level = (uint32_t)rng_next(&rng);
    sb->reshape_position = rng_next(&rng);
    sb->delta_disks = (int32_t)rng_next(&rng);
    sb->new_layout = (uint32_t)rng_next(&rng);
    sb->new_chunk = (uint32_t)rng_next(&rng);
    sb->new_offset = (int32_t)rng_next(&rng);
    sb->super_offset = MD_SB_V12_SECTOR;
    sb->max_dev = 1 + (uint32_t)rng_below(&rng, MD_SB_MAX_DEV);
    sb->dev_number = (uint32_t)rng_below(&rng, sb->max_dev);
    sb->data_offset = MD_SB_V12_SECTOR + md_sb_sectors(sb->max_dev) + rng_below(&rng, 1ull << 40);
    sb->data_size = 10 + (rng_next(&rng) >> 1);
    sb->recovery_offset = rng_next(&rng);
    sb->cnt_corrected_read = (uint32_t)rng_next(&rng);
    sb->devflags = (uint8_t)rng_next(&rng);
    sb->bblog_shift = (uint8_t)rng_next(&rng);
    /* the log where md_sb_check_bblog wants it: between the superblock and the data */
    uint64_t room = sb->data_offset - (MD_SB_V12_SECTOR + md_sb_sectors(sb->max_dev));
    uint64_t size = rng_below(&rng, 9);
    sb->bblog_size = (uint16_t)(size < room ? size : room);
    uint64_t span = room - sb->bblog_size;
    uint64_t at = rng_below(&rng, (span < (1u << 30) ? span : (1u << 30)) + 1);
    sb->bblog_offset = (int32_t)(md_sb_sectors(sb->max_dev) + at);
    sb->utime = rng_next(&rng);
    sb->events = rng_next(&rng);
    sb->resync_offset = rng_next(&rng);
    for (uint32_t i = 0; i < sb->max_dev; i++)
        sb->dev_roles[i] = (uint16_t)rng_next(&rng);
}

static void test_round_trip(void)
{
    uint8_t buf[MD_SB_BYTES];
    for (int r = 0; r < 3000; r++) {
        struct md_sb a, b;
        random_sb(&a);
        if (r == 0)
            a.max_dev = MD_SB_MAX_DEV;   /* the 4 KiB edge */
        if (r == 1)
            a.max_dev = 1;               /* a trailing u16 in the checksum */
        if (a.dev_number >= a.max_dev)
            a.dev_number = 0;
        for (uint32_t i = a.max_dev; i < MD_SB_MAX_DEV; i++)
            a.dev_roles[i] = 0;          /* what the decoder leaves there */
        CHECK(md_sb_encode(&a, buf) == 0);
        char why[200] = "";
        int rc = md_sb_decode(buf, MD_SB_V12_SECTOR, &b, why, sizeof why);
        CHECK(rc == 0, "round %d: decode %d: %s", r, rc, why);
        if (rc)
            return;
        CHECK(b.sb_csum == md_sb_checksum(buf, a.max_dev));
        CHECK(le32_get(buf + 216) == b.sb_csum, "checksum stored LE at byte 216");
        a.sb_csum = b.sb_csum;
        /* random_sb memsets first and decode memsets first: memcmp is exact */
        CHECK(!memcmp(&a, &b, sizeof a), "round %d: round trip differs", r);
        for (size_t i = md_sb_len(a.max_dev); i < MD_SB_BYTES; i++)
            if (buf[i]) {
                CHECK(0, "byte %zu past the superblock is 0x%02x", i, buf[i]);
                break;
            }
    }
    struct md_sb big;
    random_sb(&big);
    big.max_dev = MD_SB_MAX_DEV + 1;
    CHECK(md_sb_encode(&big, buf) == -EINVAL, "max_dev 1921 refused by the encoder");
}

/* Fixed-layout spot checks: a hand-placed value lands at the documented byte. */
static void test_layout_bytes(void)
{
    struct md_sb sb;
    memset(&sb, 0, sizeof sb);
    sb.max_dev = 128;
    sb.super_offset = 8;
    sb.data_offset = 2048;
    sb.data_size = 100;
    sb.level = -1;
    sb.bblog_offset = -8;
    sb.events = 0x0102030405060708ull;
    sb.dev_roles[5] = 0xabcd;
    uint8_t b[MD_SB_BYTES];
    CHECK(md_sb_encode(&sb, b) == 0);
    CHECK(le32_get(b) == MD_SB_MAGIC && b[0] == 0xfc && b[3] == 0xa9, "magic bytes fc 4e 2b a9");
    CHECK(le32_get(b + 4) == 1);
    CHECK(le32_get(b + 72) == 0xffffffffu, "level -1 at 72");
    CHECK(le32_get(b + 188) == 0xfffffff8u, "bblog_offset -8 at 188");
    CHECK(b[200] == 8 && b[207] == 1, "events LE at 200");
    CHECK(le64_get(b + 128) == 2048 && le64_get(b + 144) == 8);
    CHECK(le16_get(b + 256 + 10) == 0xabcd, "dev_roles[5] at 266");
}

/* ---- the fixtures ------------------------------------------------------- */

struct member_fact {
    char path[160];
    unsigned dev_number, role, feature_map;
    uint64_t events;
};

struct array_fact {
    char name[80];
    int level;
    unsigned layout, chunk_sectors, raid_disks;
    uint64_t size, data_size, data_offset;
    char uuid[40], setname[40];
    unsigned bblog_size, bblog_shift;
    int bblog_at;
    int bitmap_at;                 /* -1: none */
    int nmembers;
    struct member_fact m[8];
};

/* Parses MANIFEST into facts; returns the number of arrays. */
static int parse_manifest(struct array_fact *a, int max)
{
    char path[256];
    snprintf(path, sizeof path, "%s/MANIFEST", fixtures);
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    char line[1024];
    int n = -1;
    while (fgets(line, sizeof line, f)) {
        struct array_fact *c = n >= 0 ? &a[n] : NULL;
        char s[200];
        if (sscanf(line, "=== %79s ===", s) == 1) {
            if (++n >= max)
                break;
            memset(&a[n], 0, sizeof a[n]);
            snprintf(a[n].name, sizeof a[n].name, "%.79s", s);
            a[n].bitmap_at = -1;
            continue;
        }
        if (!c)
            continue;
        unsigned u, v;
        const char *p;
        if (sscanf(line, "  slot %u: %159s", &u, s) == 2 && c->nmembers < 8) {
            struct member_fact *m = &c->m[c->nmembers];
            snprintf(m->path, sizeof m->path, "%.159s", s);
            p = strstr(line, "sb dev_number");
            unsigned long long ev;
            if (p && sscanf(p, "sb dev_number %u, role %u, events %llu, feature_map 0x%x", &m->dev_number, &m->role,
                            &ev, &m->feature_map) == 4) {
                m->events = ev;
                c->nmembers++;
            }
        } else if ((p = strrchr(line, '(')) && !strncmp(line, "level:", 6)) {
            sscanf(p, "(%d)", &c->level);
        } else if (!strncmp(line, "layout:", 7) && (p = strrchr(line, '('))) {
            const char *q = strpbrk(p, "0123456789");
            c->layout = q ? (unsigned)atoi(q) : 0;
        } else if (!strncmp(line, "chunk:", 6)) {
            if ((p = strstr(line, "bytes (")))
                sscanf(p, "bytes (%u sectors)", &c->chunk_sectors);
            else
                c->chunk_sectors = 0;
        } else if (sscanf(line, "raid devices: %u", &u) == 1) {
            c->raid_disks = u;
        } else if (!strncmp(line, "per-member used size", 20) && (p = strstr(line, "): "))) {
            unsigned long long x, y;
            if (sscanf(p, "): %llu sectors; data_size %llu sectors", &x, &y) == 2) {
                c->size = x;
                c->data_size = y;
            }
        } else if (!strncmp(line, "data offset: ", 13)) {
            c->data_offset = strtoull(line + 13, NULL, 10);
        } else if (sscanf(line, "array uuid: %39s name: %39s", c->uuid, c->setname) == 2) {
        } else if (sscanf(line, "bad-block log: %u sectors at sb+%u sectors (shift %u)", &c->bblog_size, &v,
                          &c->bblog_shift) == 3) {
            c->bblog_at = (int)v;
        } else if (sscanf(line, "internal bitmap: at sb+%u sectors", &v) == 1) {
            c->bitmap_at = (int)v;
        }
    }
    fclose(f);
    return n + 1 > max ? max : n + 1;
}

static int unpack(const char *rel, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%s", tmpdir, rel);
    for (char *p = out + strlen(tmpdir) + 1; *p; p++)
        if (*p == '/')
            *p = '_';
    size_t l = strlen(out);
    if (l > 3 && !strcmp(out + l - 3, ".xz"))
        out[l - 3] = 0;
    char cmd[768], msg[256];
    snprintf(cmd, sizeof cmd, "xz -dc '%s/%s' > '%s' 2>&1", fixtures, rel, out);
    return run(cmd, msg, sizeof msg);
}

static void test_fixtures(void)
{
    static struct array_fact arrays[16];
    int na = parse_manifest(arrays, 16);
    CHECK(na >= 7, "MANIFEST at %s/MANIFEST: %d arrays (run from the project root; ../shared must exist)", fixtures,
          na);
    int members = 0;
    for (int i = 0; i < na; i++) {
        struct array_fact *A = &arrays[i];
        CHECK(A->nmembers == (int)A->raid_disks, "%s: %d member lines", A->name, A->nmembers);
        for (int j = 0; j < A->nmembers; j++) {
            struct member_fact *M = &A->m[j];
            char img[512], what[256];
            snprintf(what, sizeof what, "%.159s", M->path);
            if (unpack(M->path, img, sizeof img) != 0) {
                CHECK(0, "%s: xz -dc failed", what);
                continue;
            }
            uint8_t raw[MD_SB_BYTES];
            struct md_sb sb;
            char why[200] = "";
            CHECK(read_file(img, raw, sizeof raw, 4096) == 0, "%s: read", what);
            int rc = md_sb_decode(raw, MD_SB_V12_SECTOR, &sb, why, sizeof why);
            CHECK(rc == 0, "%s: decode: %s", what, why);
            if (rc)
                continue;
            members++;
            char u[MD_UUID_TEXT];
            md_uuid_text(sb.set_uuid, u);
            CHECK(!strcmp(u, A->uuid), "%s: uuid %s, MANIFEST %s", what, u, A->uuid);
            CHECK(!strncmp(sb.set_name, A->setname, 32), "%s: name %.32s", what, sb.set_name);
            CHECK(sb.level == A->level, "%s: level %d want %d", what, sb.level, A->level);
            CHECK(sb.layout == A->layout, "%s: layout %u want %u", what, sb.layout, A->layout);
            CHECK(sb.chunksize == A->chunk_sectors, "%s: chunk %u want %u", what, sb.chunksize, A->chunk_sectors);
            CHECK(sb.raid_disks == A->raid_disks, "%s: raid_disks %u", what, sb.raid_disks);
            CHECK(sb.size == A->size && sb.data_size == A->data_size, "%s: size %llu data_size %llu", what,
                  (unsigned long long)sb.size, (unsigned long long)sb.data_size);
            CHECK(sb.data_offset == A->data_offset && sb.super_offset == 8, "%s: data_offset %llu", what,
                  (unsigned long long)sb.data_offset);
            CHECK(sb.bblog_size == A->bblog_size && sb.bblog_shift == A->bblog_shift &&
                      sb.bblog_offset == A->bblog_at,
                  "%s: bblog %u sectors at %d shift %u", what, sb.bblog_size, sb.bblog_offset, sb.bblog_shift);
            if (A->bitmap_at >= 0)
                CHECK((sb.feature_map & MD_FEATURE_BITMAP_OFFSET) && sb.bitmap_offset == A->bitmap_at,
                      "%s: bitmap at %d", what, sb.bitmap_offset);
            CHECK(sb.dev_number == M->dev_number && sb.dev_roles[sb.dev_number] == M->role, "%s: dev %u role %u",
                  what, sb.dev_number, sb.dev_roles[sb.dev_number]);
            CHECK(sb.events == M->events, "%s: events %llu want %llu", what, (unsigned long long)sb.events,
                  (unsigned long long)M->events);
            CHECK(sb.feature_map == M->feature_map, "%s: feature_map 0x%x want 0x%x", what, sb.feature_map,
                  M->feature_map);
            CHECK(sb.max_dev == 128, "%s: mdadm's max_dev 128 (got %u)", what, sb.max_dev);

            /* Re-encoding md's superblock gives md's bytes back. */
            uint8_t again[MD_SB_BYTES];
            CHECK(md_sb_encode(&sb, again) == 0);
            CHECK(!memcmp(again, raw, MD_SB_BYTES), "%s: re-encodes byte for byte", what);

            /* Our checksum is the one mdadm computes (and calls correct). */
            char cmd[700], out[8192], val[128];
            snprintf(cmd, sizeof cmd, "mdadm --examine '%s' 2>&1", img);
            int st = run(cmd, out, sizeof out);
            CHECK(st == 0, "%s: mdadm --examine exit %d (mdadm is installed by scripts/deps.sh): %.200s", what, st,
                  out);
            char want[64];
            snprintf(want, sizeof want, "%x - correct", sb.sb_csum);
            CHECK(examine_field(out, "Checksum", val, sizeof val) == 0 && !strcmp(val, want),
                  "%s: mdadm says checksum '%s', we computed %08x", what, examine_field(out, "Checksum", val, sizeof val) ? "?" : val,
                  sb.sb_csum);

            /* The bitmap header, where there is one (fixture g). */
            if (sb.feature_map & MD_FEATURE_BITMAP_OFFSET) {
                uint8_t bh[MD_BITMAP_HEADER_BYTES], bh2[MD_BITMAP_HEADER_BYTES];
                struct md_bitmap_sb bm;
                off_t at = (off_t)(sb.super_offset + (uint64_t)(int64_t)sb.bitmap_offset) * 512;
                CHECK(read_file(img, bh, sizeof bh, at) == 0);
                rc = md_bitmap_decode(bh, &bm, why, sizeof why);
                CHECK(rc == 0, "%s: bitmap: %s", what, why);
                /* MANIFEST (mdadm -X): Version 4, Events 19, Events Cleared 1,
                 * Chunksize 64 MB, Daemon 5s, Sync Size 3072 KiB, 1 bit */
                CHECK(bm.version == 4 && bm.events == sb.events && bm.events_cleared == 1, "%s: bitmap v%u ev %llu",
                      what, bm.version, (unsigned long long)bm.events);
                CHECK(!memcmp(bm.uuid, sb.set_uuid, 16), "%s: bitmap uuid", what);
                CHECK(bm.chunksize == 64u << 20 && bm.daemon_sleep == 5 && bm.sync_size == 6144 &&
                          md_bitmap_bits(&bm) == 1,
                      "%s: bitmap chunk %u sync %llu", what, bm.chunksize, (unsigned long long)bm.sync_size);
                CHECK(bm.state == 0 && bm.write_behind == 0, "%s: bitmap state OK", what);
                md_bitmap_encode(&bm, bh2);
                CHECK(!memcmp(bh, bh2, sizeof bh), "%s: bitmap header re-encodes byte for byte", what);
                bh[0] ^= 1;
                CHECK(md_bitmap_decode(bh, &bm, why, sizeof why) == -EINVAL, "bitmap magic checked");
            }
            unlink(img);
        }
    }
    CHECK(members >= 30, "decoded %d fixture members", members);
}

/* ---- rejection rules ---------------------------------------------------- */

static void resum(uint8_t *b)
{
    le32_put(b + 216, md_sb_checksum(b, le32_get(b + 220)));
}

static void expect(const uint8_t *good, uint64_t at, void (*mutate)(uint8_t *), int want, const char *reason,
                   const char *what)
{
    uint8_t buf[MD_SB_BYTES];
    memcpy(buf, good, sizeof buf);
    if (mutate)
        mutate(buf);
    struct md_sb sb;
    char why[200] = "";
    int rc = md_sb_decode(buf, at, &sb, why, sizeof why);
    CHECK(rc == want, "%s: rc %d want %d (%s)", what, rc, want, why);
    CHECK(strstr(why, reason) != NULL, "%s: reason '%s' lacks '%s'", what, why, reason);
}

static void m_magic(uint8_t *b) { b[0] ^= 1; }
static void m_zero(uint8_t *b) { memset(b, 0, MD_SB_BYTES); }
static void m_csum(uint8_t *b) { b[100] ^= 0x40; }
static void m_csum_role(uint8_t *b) { b[256 + 2 * 127] ^= 1; } /* last role is summed too */
static void m_feature(uint8_t *b) { b[9] |= 0x20; resum(b); }  /* bit 13 */
static void m_pad0(uint8_t *b) { b[12] = 1; resum(b); }
static void m_pad3(uint8_t *b) { b[255] = 1; resum(b); }
static void m_max_dev(uint8_t *b) { le32_put(b + 220, 1921); }
static void m_version(uint8_t *b) { b[4] = 2; resum(b); }
static void m_data_size(uint8_t *b) { le64_put(b + 136, 9); resum(b); }
static void m_data_offset(uint8_t *b) { le64_put(b + 128, 8); resum(b); }
static void m_dev_number(uint8_t *b) { le32_put(b + 160, 128); resum(b); }
static void m_past_sb(uint8_t *b) { b[MD_SB_BYTES - 1] = 0x55; } /* not covered: still fine */
/* the fixture's log: 8 sectors at sb + 16, data at 2048 (bblog_offset at byte 188, size at 186) */
static void m_bblog_in_data(uint8_t *b) { le32_put(b + 188, 2048 + 64 - 8); resum(b); }
static void m_bblog_into_data(uint8_t *b) { le32_put(b + 188, 2048 - 8 - 7); resum(b); } /* last sector is data */
static void m_bblog_over_sb(uint8_t *b) { le32_put(b + 188, (uint32_t)-4); resum(b); }
static void m_bblog_before_sb(uint8_t *b) { le32_put(b + 188, (uint32_t)-8); resum(b); }
static void m_bblog_far(uint8_t *b) { le32_put(b + 188, 0x7fffff00); resum(b); }  /* past any 4 MiB member */
static void m_bblog_listed_nowhere(uint8_t *b) { b[8] |= 8; le32_put(b + 188, 0); resum(b); }
static void m_bblog_two_pages(uint8_t *b) { b[8] |= 8; le16_put(b + 186, 16); resum(b); }
static void m_bblog_last(uint8_t *b) { le32_put(b + 188, 2048 - 8 - 8); resum(b); } /* right before the data: fine */

/* One change to a good superblock each: the sector it is read at, the
 * change, the error and the reason decode must give. */
static const struct {
    uint64_t at;
    void (*mutate)(uint8_t *);
    int want;
    const char *reason, *what;
} rejections[] = {
    {8, m_magic, -EINVAL, "no md superblock (magic 0xa92b4efd", "wrong magic"},
    {8, m_zero, -EINVAL, "no md superblock (magic 0x00000000", "zeroed"},
    {8, m_csum, -EBADMSG, "bad checksum (stored 0x36df393b, computed 0x", "bad checksum"},
    {8, m_csum_role, -EBADMSG, "bad checksum", "role bytes are checksummed"},
    {8, m_feature, -EOPNOTSUPP, "unknown feature bits 0x2000", "unknown feature bit"},
    {8, m_pad0, -EINVAL, "non-zero reserved", "pad0 not zero"},
    {8, m_pad3, -EINVAL, "non-zero reserved", "pad3 not zero"},
    {0, NULL, -EINVAL, "read at sector 0", "super_offset mismatch (v1.1 position)"},
    {8, m_max_dev, -EINVAL, "max_dev 1921", "max_dev too large"},
    {8, m_version, -EINVAL, "major version 2", "major version 2"},
    {8, m_data_size, -EINVAL, "data_size 9", "data_size < 10"},
    {8, m_data_offset, -EINVAL, "overlaps the superblock", "data_offset inside the superblock"},
    {8, m_dev_number, -EINVAL, "dev_number 128", "dev_number past dev_roles"},
    {8, m_bblog_in_data, -EINVAL, "sectors 2112..2119 (offset 2104, 8 sectors) would overwrite the data",
     "bad-block log inside the data area"},
    {8, m_bblog_into_data, -EINVAL, "would overwrite the data", "bad-block log whose last sector is data"},
    {8, m_bblog_over_sb, -EINVAL, "would overwrite the superblock", "bad-block log over the superblock"},
    {8, m_bblog_before_sb, -EINVAL, "before the superblock", "bad-block log before the superblock"},
    {8, m_bblog_far, -EINVAL, "would overwrite the data", "bad-block log far past the data offset"},
    {8, m_bblog_listed_nowhere, -EINVAL, "one page", "BAD_BLOCKS set with no log offset"},
    {8, m_bblog_two_pages, -EINVAL, "one page", "BAD_BLOCKS set with a log of two pages"},
};

static void test_rejections(void)
{
    struct md_sb sb;
    uint8_t raw[MD_SB_BYTES];
    char img[512];
    if (unpack("a-raid5-ls-n4-c64k/slot0.img.xz", img, sizeof img) || read_file(img, raw, sizeof raw, 4096)) {
        CHECK(0, "fixture a slot 0 readable from %s", fixtures);
        return;
    }
    unlink(img);
    CHECK(md_sb_decode(raw, 8, &sb, NULL, 0) == 0, "the fixture is good (why may be NULL)");
    for (size_t i = 0; i < sizeof rejections / sizeof rejections[0]; i++)
        expect(raw, rejections[i].at, rejections[i].mutate, rejections[i].want, rejections[i].reason,
               rejections[i].what);
    uint8_t ok[MD_SB_BYTES];
    memcpy(ok, raw, sizeof ok);
    m_past_sb(ok);
    CHECK(md_sb_decode(ok, 8, &sb, NULL, 0) == 0, "bytes past 256 + 2*max_dev are not the superblock's");
    memcpy(ok, raw, sizeof ok);
    m_bblog_last(ok);
    CHECK(md_sb_decode(ok, 8, &sb, NULL, 0) == 0 && md_sb_bblog_sector(&sb) == 2040,
          "a bad-block log in the last 8 sectors before the data is where mdadm may put it");
}

/* ---- mdadm's choices for a new member ------------------------------------ */

static void test_data_offset(void)
{
    const uint64_t MiB = 2048, GiB = 2048ull * 1024;
    struct { uint64_t dev; uint32_t chunk; uint64_t want; } t[] = {
        {64 * MiB, 1024, 4096},        {8 * GiB, 1024, 18432},      {100 * GiB, 1024, 133120},
        {128 * GiB, 1024, 264192},     {4096 * GiB, 1024, 264192},  {200 * GiB, 1024, 264192},
        /* the fixtures: 4 MiB members; 24 + 8 + headroom 256 (2 chunks of 64K) -> 2048 */
        {4 * MiB, 128, 2048},          {4 * MiB, 64, 2048},         {4 * MiB, 0, 2048},
    };
    for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint64_t got = md_choose_data_offset(t[i].dev, t[i].chunk);
        CHECK(got == t[i].want, "%llu sectors, chunk %u: data_offset %llu want %llu",
              (unsigned long long)t[i].dev, t[i].chunk, (unsigned long long)got, (unsigned long long)t[i].want);
    }
    CHECK(md_choose_bm_space(100) == 0 && md_choose_bm_space(8 * GiB) == 8 &&
          md_choose_bm_space(8 * GiB + 1) == 128 && md_choose_bm_space(200 * GiB) == 256);
    CHECK(md_choose_max_dev(0) == 128 && md_choose_max_dev(128) == 128 && md_choose_max_dev(129) == 384 &&
          md_choose_max_dev(1000) == 1152 && md_choose_max_dev(1920) == 1920);
    char n[32];
    CHECK(md_sb_make_name("test", "box", n) == 0 && !strcmp(n, "box:test"));
    CHECK(md_sb_make_name("a:b", "box", n) == 0 && !strcmp(n, "a:b"), "a name with ':' is kept");
    CHECK(md_sb_make_name("test", "", n) == 0 && !strcmp(n, "test"), "no homehost");
    CHECK(md_sb_make_name("0123456789012345678901234567", "host", n) == 0 &&
          !strcmp(n, "0123456789012345678901234567"), "too long with the host: name alone");
    CHECK(md_sb_make_name("", "h", n) == -EINVAL && md_sb_make_name("01234567890123456789012345678901", "", n) ==
          -EINVAL, "empty and 32-byte names refused");
    char host[64] = "";
    gethostname(host, sizeof host);
    CHECK(md_sb_make_name("x", NULL, n) == 0 && !strncmp(n, host, strlen(host)), "NULL homehost: hostname");
}

/* md_sb_init reproduces what mdadm wrote for fixture a (apart from what
 * md changed while running: events, utime). */
static void test_init_like_mdadm(void)
{
    char img[512];
    uint8_t raw[MD_SB_BYTES];
    struct md_sb md, ours;
    for (int slot = 0; slot < 4; slot++) {
        char rel[80];
        snprintf(rel, sizeof rel, "a-raid5-ls-n4-c64k/slot%d.img.xz", slot);
        if (unpack(rel, img, sizeof img) || read_file(img, raw, sizeof raw, 4096) ||
            md_sb_decode(raw, 8, &md, NULL, 0)) {
            CHECK(0, "fixture %s", rel);
            return;
        }
        unlink(img);
        struct md_sb_create_params p = {
            .level = 5, .layout = 2, .chunk_sectors = 128, .raid_disks = 4, .dev_sectors = 8192,
            .name = "0", .homehost = "mdoracle", .ctime = md.ctime, .assume_clean = 1,
        };
        memcpy(p.uuid, md.set_uuid, 16);
        char why[200] = "";
        int rc = md_sb_init(&ours, &p, (uint32_t)slot, md.device_uuid, 8192, why, sizeof why);
        CHECK(rc == 0, "md_sb_init: %s", why);
        ours.events = md.events;
        ours.utime = md.utime;
        uint8_t a[MD_SB_BYTES];
        md_sb_encode(&ours, a);
        CHECK(!memcmp(a, raw, MD_SB_BYTES), "slot %d: md_sb_init + events/utime gives mdadm's bytes", slot);
    }
    /* RAID-0 (fixture f): size 0, no bitmap space, log right after the sb */
    struct md_sb_create_params p0 = {
        .level = 0, .layout = 1, .chunk_sectors = 128, .raid_disks = 3, .dev_sectors = 8192, .name = "0",
        .homehost = "mdoracle",
    };
    uint8_t du[16] = {1};
    CHECK(md_sb_init(&ours, &p0, 2, du, 8192, NULL, 0) == 0);
    CHECK(ours.size == 0 && ours.data_size == 6144 && ours.bblog_offset == 8 && ours.data_offset == 2048 &&
          ours.resync_offset == MD_RESYNC_CLEAN && ours.dev_roles[2] == 2 && ours.dev_roles[3] == MD_ROLE_SPARE);
    /* a missing slot stays 0xffff; a larger member keeps its own data_size */
    uint8_t missing[4] = {0, 0, 1, 0};
    struct md_sb_create_params p6 = {
        .level = 6, .layout = 2, .chunk_sectors = 128, .raid_disks = 4, .dev_sectors = 131072,
        .name = "t", .homehost = "", .missing = missing,
    };
    CHECK(md_sb_init(&ours, &p6, 3, du, 140000, NULL, 0) == 0);
    CHECK(ours.dev_roles[0] == 0 && ours.dev_roles[2] == MD_ROLE_SPARE && ours.dev_roles[3] == 3);
    CHECK(ours.data_offset == 2048 && ours.size == 131072 - 2048 && ours.data_size == 140000 - 2048 &&
          ours.resync_offset == 0 && !strcmp(ours.set_name, "t"));
    /* spares take device numbers past the slots: max_dev must hold them too */
    struct md_sb_create_params wide = p6;
    wide.raid_disks = 127;
    wide.missing = NULL;
    CHECK(md_sb_init(&ours, &wide, 3, du, 140000, NULL, 0) == 0 && ours.max_dev == 128, "127 slots: max_dev 128");
    wide.spares = 2;
    CHECK(md_sb_init(&ours, &wide, 3, du, 140000, NULL, 0) == 0 && ours.max_dev == 384 &&
              ours.dev_roles[128] == MD_ROLE_SPARE,
          "127 slots + 2 spares: max_dev %u, want 384", ours.max_dev);
    /* refusals */
    char why[200] = "";
    CHECK(md_sb_init(&ours, &p6, 4, du, 140000, why, sizeof why) == -EINVAL && why[0], "slot past raid_disks");
    CHECK(md_sb_init(&ours, &p6, 0, du, 100000, why, sizeof why) == -EINVAL, "member smaller than dev_sectors");
    p6.dev_sectors = 2050;
    CHECK(md_sb_init(&ours, &p6, 0, du, 2050, why, sizeof why) == -EINVAL, "no room after the data offset");
}

/* uraid's RAID-6 PPL (feature bit 31, docs/FORMAT.md 5b): md_sb_init sets
 * it instead of PPL on RAID-6, the decoder reads it back, and refuses it on
 * another level or beside md's PPL bits. */
static void test_ppl_q_bit(void)
{
    uint8_t du[16] = {1}, raw[MD_SB_BYTES];
    struct md_sb ours, back;
    struct md_sb_create_params p6 = {
        .level = 6, .layout = 2, .chunk_sectors = 128, .raid_disks = 5, .dev_sectors = 1 << 20,
        .name = "q", .homehost = "", .ppl = 1,
    };
    char why[200] = "";
    CHECK(md_sb_init(&ours, &p6, 1, du, 1 << 20, why, sizeof why) == 0, "RAID-6 ppl: %s", why);
    CHECK(ours.feature_map == MD_FEATURE_PPL_Q, "RAID-6 ppl: feature_map 0x%x, want 0x80000000", ours.feature_map);
    CHECK(md_sb_ppl_offset(&ours) == 8 && md_sb_ppl_size(&ours) == MD_PPL_SECTORS && ours.data_offset == 4096,
          "RAID-6 ppl: area 8 + %u, data at %llu", md_sb_ppl_size(&ours), (unsigned long long)ours.data_offset);
    CHECK(md_sb_encode(&ours, raw) == 0 && md_sb_decode(raw, 8, &back, why, sizeof why) == 0, "decode: %s", why);
    CHECK(md_sb_has_ppl(&back) && md_sb_has_ppl_q(&back) && back.feature_map == 0x80000000u,
          "decoded feature_map 0x%x", back.feature_map);
    struct md_sb_create_params p5 = p6;
    p5.level = 5;
    p5.layout = 2;
    CHECK(md_sb_init(&ours, &p5, 1, du, 1 << 20, NULL, 0) == 0 && ours.feature_map == MD_FEATURE_PPL,
          "RAID-5 ppl keeps md's bit 10 (0x%x)", ours.feature_map);
    struct md_sb bad = back;
    bad.level = 5;
    md_sb_encode(&bad, raw);
    why[0] = 0;
    CHECK(md_sb_decode(raw, 8, &back, why, sizeof why) == -EINVAL && strstr(why, "RAID-6 only"),
          "bit 31 on RAID-5 refused: %s", why);
    bad.level = 6;
    bad.feature_map |= MD_FEATURE_PPL;
    md_sb_encode(&bad, raw);
    why[0] = 0;
    CHECK(md_sb_decode(raw, 8, &back, why, sizeof why) == -EINVAL && strstr(why, "beside md's PPL bits"),
          "bit 31 beside bit 10 refused: %s", why);
    bad.feature_map = MD_FEATURE_PPL_Q | 0x40000000u;
    md_sb_encode(&bad, raw);
    CHECK(md_sb_decode(raw, 8, &back, why, sizeof why) == -EOPNOTSUPP, "bit 30 stays unknown");
}

/* ---- the oracle: mdadm 4.2 reads what we write ---------------------------- */

/* Writes a sparse member: superblock at byte 4096 and the bad-block log
 * area (log, or 0xff = empty, as md leaves a used log). Returns the
 * superblock checksum through *csum. */
static int write_member(const char *path, const struct md_sb *sb, uint64_t dev_sectors, const uint8_t *log,
                        uint32_t *csum)
{
    uint8_t buf[MD_SB_BYTES], ff[4096];
    if (md_sb_encode(sb, buf))
        return -EINVAL;
    *csum = le32_get(buf + 216);
    memset(ff, 0xff, sizeof ff);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0)
        return -errno;
    int ok = ftruncate(fd, (off_t)dev_sectors * 512) == 0 && pwrite(fd, buf, sizeof buf, 4096) == (ssize_t)sizeof buf &&
             pwrite(fd, log ? log : ff, 4096, (off_t)(sb->super_offset + (uint64_t)(int64_t)sb->bblog_offset) * 512) ==
                 4096;
    close(fd);
    return ok ? 0 : -EIO;
}

static void test_mdadm_examine(void)
{
    char out[8192], cmd[700], val[200];
    int st = run("mdadm --version 2>&1", out, sizeof out);
    CHECK(st == 0 && strstr(out, "mdadm - v"), "mdadm must be installed (scripts/deps.sh): %s", out);
    if (st)
        return;
    const uint64_t dev_sectors = 64 * 2048;  /* 64 MiB sparse files */
    uint8_t missing[5] = {0, 0, 0, 0, 1};
    struct md_sb_create_params p = {
        .level = 6, .layout = 2, .chunk_sectors = 128, .raid_disks = 5, .dev_sectors = dev_sectors,
        .name = "test", .homehost = "uraidbox", .ctime = 1796000000, .assume_clean = 1, .missing = missing,
    };
    for (int i = 0; i < 16; i++)
        p.uuid[i] = (uint8_t)(0xa0 + i);
    for (int i = 0; i < 4; i++) {
        struct md_sb sb;
        uint8_t du[16];
        rng_fill(&rng, du, sizeof du);
        char why[200] = "", path[600];
        CHECK(md_sb_init(&sb, &p, (uint32_t)i, du, dev_sectors, why, sizeof why) == 0, "%s", why);
        sb.events = 7;
        snprintf(path, sizeof path, "%s/m%d.img", tmpdir, i);
        uint32_t sum = 0;
        CHECK(write_member(path, &sb, dev_sectors, NULL, &sum) == 0, "write %s", path);
        snprintf(cmd, sizeof cmd, "mdadm --examine '%s' 2>&1", path);
        st = run(cmd, out, sizeof out);
        CHECK(st == 0, "mdadm --examine m%d: exit %d: %s", i, st, out);
        struct { const char *key, *want; } w[] = {
            {"Magic", "a92b4efc"}, {"Version", "1.2"}, {"Feature Map", "0x0"},
            {"Array UUID", "a0a1a2a3:a4a5a6a7:a8a9aaab:acadaeaf"}, {"Name", "uraidbox:test"},
            {"Raid Level", "raid6"}, {"Raid Devices", "5"}, {"Avail Dev Size", "129024 sectors (63.00 MiB 66.06 MB)"},
            {"Data Offset", "2048 sectors"}, {"Super Offset", "8 sectors"}, {"State", "clean"},
            {"Layout", "left-symmetric"}, {"Chunk Size", "64K"}, {"Events", "7"},
            {"Array State", "AAAA. ('A' == active, '.' == missing, 'R' == replacing)"},
            {"Bad Block Log", "512 entries available at offset 16 sectors"},
        };
        for (unsigned k = 0; k < sizeof w / sizeof w[0]; k++) {
            int rc = examine_field(out, w[k].key, val, sizeof val);
            CHECK(rc == 0 && !strncmp(val, w[k].want, strlen(w[k].want)), "m%d: mdadm '%s : %s', want '%s'", i,
                  w[k].key, rc ? "(absent)" : val, w[k].want);
        }
        char role[40], csum[40];
        snprintf(role, sizeof role, "Active device %d", i);
        CHECK(examine_field(out, "Device Role", val, sizeof val) == 0 && !strcmp(val, role), "m%d role '%s'", i, val);
        snprintf(csum, sizeof csum, "%x - correct", sum);
        CHECK(examine_field(out, "Checksum", val, sizeof val) == 0 && !strcmp(val, csum), "m%d checksum '%s' want '%s'",
              i, val, csum);
        CHECK(examine_field(out, "Device UUID", val, sizeof val) == 0, "m%d device uuid", i);
        char du_text[MD_UUID_TEXT];
        md_uuid_text(du, du_text);
        CHECK(!strcmp(val, du_text), "m%d device uuid %s want %s", i, val, du_text);
        snprintf(cmd, sizeof cmd, "mdadm --examine-badblocks '%s' 2>&1", path);
        st = run(cmd, out, sizeof out);
        CHECK(st == 0 && strstr(out, "Bad-blocks list is empty in") && !strstr(out, " for "),
              "empty log: mdadm --examine-badblocks says: %s", out);
    }
    /* Not yet synced: resync_offset 0 reads as "State : active". */
    struct md_sb sb;
    uint8_t du[16] = {9};
    p.assume_clean = 0;
    p.missing = NULL;
    md_sb_init(&sb, &p, 4, du, dev_sectors, NULL, 0);
    char path[600];
    snprintf(path, sizeof path, "%s/m4.img", tmpdir);
    uint32_t sum;
    CHECK(write_member(path, &sb, dev_sectors, NULL, &sum) == 0);
    snprintf(cmd, sizeof cmd, "mdadm --examine '%s' 2>&1", path);
    st = run(cmd, out, sizeof out);
    CHECK(st == 0 && examine_field(out, "State", val, sizeof val) == 0 && !strcmp(val, "active"), "state '%s'", val);
    CHECK(strstr(out, "Array State : AAAAA") != NULL, "%s", out);
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/m%d.img", tmpdir, i);
        unlink(path);
    }
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_superblock");
    rng_seed(&rng, harness_seed());
    if (!mkdtemp(tmpdir)) {
        CHECK(0, "mkdtemp %s", tmpdir);
        return harness_finish();
    }
    harness_begin("encode/decode round trip of random superblocks");
    test_round_trip();
    harness_end();
    harness_begin("on-disk bytes at the documented offsets");
    test_layout_bytes();
    harness_end();
    harness_begin("every member md wrote decodes with MANIFEST's facts and mdadm's checksum");
    test_fixtures();
    harness_end();
    harness_begin("each kernel rejection rule gives its errno and a reason");
    test_rejections();
    harness_end();
    harness_begin("data_offset, bitmap space, max_dev and name as mdadm 4.2 chooses");
    test_data_offset();
    harness_end();
    harness_begin("md_sb_init writes what mdadm wrote for the fixtures");
    test_init_like_mdadm();
    harness_end();
    harness_begin("RAID-6 PPL: feature bit 31 set, decoded, refused off RAID-6");
    test_ppl_q_bit();
    harness_end();
    harness_begin("mdadm --examine reads the members we create");
    test_mdadm_examine();
    harness_end();
    rmdir(tmpdir);
    return harness_finish();
}
