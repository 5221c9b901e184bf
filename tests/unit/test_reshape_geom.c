/* The reshape geometry (lib/reshape_geom.c) and the order the engine
 * follows, on a model of the members: every sector carries a tag (array
 * sector + 1 for data, 0 unwritten). A grow is replayed with the engine's
 * own moves (reshape_next) and, before every write, the model checks that
 * the target is not a sector a restart would need (under the position then
 * on disk: new locations below it, old locations at or above it), so a
 * kill -9 or a power cut that keeps any subset of the writes since the last
 * flush loses nothing. Reads are checked to find the right tag; runs are
 * cut off at random points and resumed from the position on disk; the end
 * state is the new layout with zeros past the old data. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "meta/superblock.h"
#include "reshape_geom.h"

#define MAXM 12

struct model {
    struct reshape_geom g;
    int64_t *disk[MAXM]; /* tags by physical sector (relative to the new data offset) */
    uint64_t len;        /* sectors per member in the model */
    uint64_t ckpt;       /* on disk */
    int bad;
};

/* physical index of an old row / new row: relative to the lower data offset */
static uint64_t old_base(const struct model *m) { return m->g.backwards ? 0 : m->g.shift; }
static uint64_t new_base(const struct model *m) { return m->g.backwards ? m->g.shift : 0; }
static uint64_t phys_old(const struct model *m, uint64_t row) { return row + old_base(m); }
static uint64_t phys_new(const struct model *m, uint64_t row) { return row + new_base(m); }

static void where_old(const struct model *m, uint64_t x, int *disk, uint64_t *phys)
{
    struct layout_addr ad;
    layout_map(&m->g.from, x, &ad);
    *disk = ad.disk;
    *phys = phys_old(m, ad.member_sector);
}

static void where_new(const struct model *m, uint64_t x, int *disk, uint64_t *phys)
{
    struct layout_addr ad;
    layout_map(&m->g.to, x, &ad);
    *disk = ad.disk;
    *phys = phys_new(m, ad.member_sector);
}

/* Whether array sector x lives in the new geometry under ckpt. */
static int in_new(const struct model *m, uint64_t x) { return m->g.backwards ? x >= m->ckpt : x < m->ckpt; }

/* The sectors that survive the reshape: the smaller of the two sizes. */
static uint64_t kept(const struct model *m)
{
    uint64_t f = reshape_from_sectors(&m->g), t = reshape_to_sectors(&m->g);
    return f < t ? f : t;
}

/* A sector a restart from ckpt reads: an array sector's location in the
 * geometry the position on disk sends a reader to. */
static int needed(const struct model *m, int disk, uint64_t phys)
{
    uint64_t ob = old_base(m), nb = new_base(m);
    if (phys < ob + m->g.member_sectors && phys >= ob && disk < m->g.from.raid_disks) {
        struct layout_addr ad;
        layout_unmap(&m->g.from, disk, phys - ob, &ad);
        if (ad.role == LAYOUT_ROLE_DATA && !in_new(m, ad.array_sector) && ad.array_sector < kept(m))
            return 1;
    }
    if (phys < nb + m->g.member_sectors && phys >= nb && disk < m->g.to.raid_disks) {
        struct layout_addr ad;
        layout_unmap(&m->g.to, disk, phys - nb, &ad);
        if (ad.role == LAYOUT_ROLE_DATA && in_new(m, ad.array_sector) && ad.array_sector < kept(m))
            return 1;
    }
    return 0;
}

static void model_write(struct model *m, int disk, uint64_t phys, int64_t tag)
{
    if (needed(m, disk, phys) && !m->bad) {
        CHECK(0, "write to member %d phys %llu clobbers a sector needed from checkpoint %llu", disk,
              (unsigned long long)phys, (unsigned long long)m->ckpt);
        m->bad = 1;
    }
    m->disk[disk][phys] = tag;
}

/* Every array sector readable where a restart from ckpt would look. */
static void check_recoverable(struct model *m)
{
    for (uint64_t x = 0; x < kept(m) && !m->bad; x++) {
        int d;
        uint64_t p;
        if (in_new(m, x))
            where_new(m, x, &d, &p);
        else
            where_old(m, x, &d, &p);
        if (m->disk[d][p] != (int64_t)x + 1) {
            CHECK(0, "sector %llu lost at checkpoint %llu", (unsigned long long)x, (unsigned long long)m->ckpt);
            m->bad = 1;
        }
    }
}

/* One window: every source read first (checked), then the new stripes written. */
static void copy_window(struct model *m, uint64_t pos, uint64_t w)
{
    uint64_t sd = reshape_stripe_data(&m->g), old = reshape_from_sectors(&m->g);
    uint64_t n = w * sd;
    int64_t *tags = malloc(n * sizeof *tags);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t x = pos + i;
        int d;
        uint64_t p;
        tags[i] = 0;
        if (x >= old)
            continue;
        where_old(m, x, &d, &p);
        tags[i] = m->disk[d][p];
        if (tags[i] != (int64_t)x + 1 && !m->bad) {
            CHECK(0, "read of sector %llu found tag %lld", (unsigned long long)x, (long long)tags[i]);
            m->bad = 1;
        }
    }
    for (uint64_t i = 0; i < n; i++) {
        int d;
        uint64_t p;
        where_new(m, pos + i, &d, &p);
        model_write(m, d, p, tags[i]);
    }
    /* parity rows of the new stripes in these units: tagged -1 */
    uint64_t c = m->g.to.chunk_sectors, per = m->g.unit / c;
    for (uint64_t s = pos / sd * per; s < (pos / sd + w) * per; s++) {
        struct stripe_map sm;
        layout_stripe(&m->g.to, s, &sm);
        for (uint32_t o = 0; o < c; o++) {
            model_write(m, sm.p_disk, phys_new(m, s * m->g.to.chunk_sectors + o), -1);
            if (sm.q_disk >= 0)
                model_write(m, sm.q_disk, phys_new(m, s * m->g.to.chunk_sectors + o), -1);
        }
    }
    free(tags);
}

/* Runs the engine's moves from the position on disk; stops after `cut`
 * moves (-1: to the end). Returns 1 when done. */
static int run(struct model *m, long cut, uint64_t max_stripes)
{
    uint64_t pos = m->ckpt;
    for (long moves = 0; !m->bad; moves++) {
        if (cut >= 0 && moves >= cut)
            return 0; /* killed: what was written since the checkpoint may be any subset */
        uint64_t w;
        enum reshape_move mv = reshape_next(&m->g, pos, m->ckpt, max_stripes, &w);
        if (mv == RESHAPE_DONE)
            return 1;
        if (mv == RESHAPE_CHECKPOINT) {
            CHECK(pos != m->ckpt, "a checkpoint that does not move (pos %llu)", (unsigned long long)pos);
            char why[200];
            CHECK(reshape_position_ok(&m->g, pos, why, sizeof why) == 0, "md would refuse %llu: %s",
                  (unsigned long long)pos, why);
            if (pos == m->ckpt)
                return 1;
            m->ckpt = pos; /* after a flush of every data write */
            check_recoverable(m);
            continue;
        }
        uint64_t n = w * reshape_stripe_data(&m->g);
        CHECK(!m->g.backwards || n <= pos, "a window of %llu below position %llu", (unsigned long long)n,
              (unsigned long long)pos);
        copy_window(m, m->g.backwards ? pos - n : pos, w);
        pos = m->g.backwards ? pos - n : pos + n;
    }
    return 1;
}

static void check_final(struct model *m)
{
    uint64_t old = reshape_from_sectors(&m->g);
    for (uint64_t x = 0; x < reshape_to_sectors(&m->g) && !m->bad; x++) {
        int d;
        uint64_t p;
        where_new(m, x, &d, &p);
        int64_t want = x < old ? (int64_t)x + 1 : 0;
        if (m->disk[d][p] != want) {
            CHECK(0, "after the reshape sector %llu has tag %lld, want %lld", (unsigned long long)x,
                  (long long)m->disk[d][p], (long long)want);
            m->bad = 1;
        }
    }
}

static int pick_layout(struct rng *r, int level)
{
    static const int l5[] = {0, 1, 2, 3, 4, 5}, l6[] = {0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20};
    return level == 5 ? l5[rng_below(r, 6)] : level == 6 ? l6[rng_below(r, 14)] : 0;
}

/* A random restripe: more members, another chunk, another layout, or any
 * of them together (md's RAID-5 -> RAID-6 way is RAID-6 in a -6 layout
 * to another RAID-6 layout on as many members: among the draws). */
static void one_trial(struct rng *r)
{
    struct layout_geom from = {0}, to;
    int levels[] = {4, 5, 6};
    from.level = levels[rng_below(r, 3)];
    from.layout = pick_layout(r, from.level);
    from.raid_disks = from.level == 6 ? 4 + (int)rng_below(r, 4) : 3 + (int)rng_below(r, 5);
    from.chunk_sectors = 8u << rng_below(r, 3);
    to = from;
    int kind = (int)rng_below(r, 4); /* 0 members, 1 chunk, 2 layout, 3 all */
    int back = (int)rng_below(r, 2), minm = from.level == 6 ? 4 : 3;
    if (back && from.raid_disks <= minm)
        from.raid_disks = minm + 1 + (int)rng_below(r, 3), to.raid_disks = from.raid_disks;
    if (kind == 0 || kind == 3 || rng_below(r, 4) == 0)
        to.raid_disks = back ? from.raid_disks - 1 - (int)rng_below(r, (uint64_t)(from.raid_disks - minm))
                             : from.raid_disks + 1 + (int)rng_below(r, 3);
    if (kind == 1 || kind == 3)
        while (to.chunk_sectors == from.chunk_sectors)
            to.chunk_sectors = 8u << rng_below(r, 4);
    if ((kind == 2 || kind == 3) && from.level != 4)
        while (to.layout == from.layout)
            to.layout = pick_layout(r, from.level);
    if (kind == 2 && from.level == 4)
        to.chunk_sectors = from.chunk_sectors * 2; /* RAID-4 has one layout */
    uint64_t c = from.chunk_sectors > to.chunk_sectors ? from.chunk_sectors : to.chunk_sectors;
    uint64_t msec = c * (4 + rng_below(r, 40));
    uint64_t shift = (c + 8 * rng_below(r, (3 * c) / 8 + 1)) & ~7ull;
    uint64_t max_stripes = 1 + rng_below(r, 8);
    struct model m = {0};
    char why[200];
    harness_beginf("restripe %s RAID-%d layout %d->%d members %d->%d chunk %u->%u size %llu shift %llu window %llu",
                   back ? "backwards" : "forwards", from.level, from.layout, to.layout, from.raid_disks, to.raid_disks, from.chunk_sectors,
                   to.chunk_sectors, (unsigned long long)msec, (unsigned long long)shift, (unsigned long long)max_stripes);
    int rc = reshape_geom_init_dir(&m.g, &from, &to, msec, shift, back, why, sizeof why);
    CHECK(rc == 0, "%s", why);
    if (rc) {
        harness_end();
        return;
    }
    m.len = msec + shift;
    m.ckpt = reshape_begin(&m.g);
    int nd = to.raid_disks > from.raid_disks ? to.raid_disks : from.raid_disks;
    for (int d = 0; d < nd; d++)
        m.disk[d] = calloc(m.len, sizeof *m.disk[d]);
    for (uint64_t x = 0; x < reshape_from_sectors(&m.g); x++) {
        int d;
        uint64_t p;
        where_old(&m, x, &d, &p);
        m.disk[d][p] = (int64_t)x + 1;
    }
    /* a few kills at random moves, each resumed from the position on disk */
    int kills = (int)rng_below(r, 4);
    for (int k = 0; k < kills && !m.bad; k++)
        if (run(&m, (long)rng_below(r, 12), max_stripes))
            break;
    run(&m, -1, max_stripes);
    check_final(&m);
    for (int d = 0; d < nd; d++)
        free(m.disk[d]);
    harness_end();
}

static void fixed_cases(void)
{
    harness_begin("choose_shift: 4 chunks, the whole chunks the room holds when less, 0 below one chunk");
    CHECK(reshape_choose_shift(1968, 128) == 512);
    CHECK(reshape_choose_shift(1968, 1024) == 1024);
    CHECK(reshape_choose_shift(4016, 1024) == 3072);
    CHECK(reshape_choose_shift(1000, 1024) == 0);
    CHECK(reshape_choose_shift(1029, 1024) == 1024);
    CHECK(reshape_choose_shift(1030, 128) == 512);
    CHECK(reshape_choose_shift(300, 128) == 256);
    CHECK(reshape_choose_shift(127, 128) == 0);
    harness_end();

    harness_begin("RAID-5 4->5, chunk 128, shift 512: windows and safe rows");
    struct layout_geom f = {5, 2, 4, 128}, t = {5, 2, 5, 128};
    struct reshape_geom g;
    char why[200];
    CHECK(reshape_geom_init(&g, &f, &t, 128 * 100, 512, why, sizeof why) == 0, "%s", why);
    CHECK(reshape_from_sectors(&g) == 3 * 12800 && reshape_to_sectors(&g) == 4 * 12800);
    CHECK(reshape_stripe_data(&g) == 512 && reshape_stripes(&g) == 100);
    CHECK(reshape_window(&g, 0, 0, 1000) == 4, "first window %llu", (unsigned long long)reshape_window(&g, 0, 0, 1000));
    /* at position 4 stripes (2048 sectors) the old stripe is 2048/384 = 5: row 640 */
    CHECK(reshape_old_safe_row(&g, 2048) == 640);
    CHECK(reshape_window(&g, 2048, 2048, 1000) == (640 + 512) / 128 - 4);
    CHECK(reshape_window(&g, 2048, 0, 1000) == 0);
    uint64_t w;
    CHECK(reshape_next(&g, 2048, 0, 8, &w) == RESHAPE_CHECKPOINT && w == 0);
    CHECK(reshape_next(&g, 0, 0, 8, &w) == RESHAPE_COPY && w == 4);
    CHECK(reshape_next(&g, 100 * 512, 0, 8, &w) == RESHAPE_DONE);
    CHECK(reshape_position_ok(&g, 100, why, sizeof why) == -EINVAL);
    CHECK(reshape_position_ok(&g, 2048, why, sizeof why) == 0);
    harness_end();

    harness_begin("geometries refused");
    struct layout_geom one = {1, 0, 2, 0}, one3 = {1, 0, 3, 0}, t4 = {5, 2, 4, 128}, t3 = {5, 2, 3, 128},
                       tc = {5, 2, 5, 256}, t6 = {6, 2, 5, 128};
    CHECK(reshape_geom_init(&g, &one, &one3, 1280, 512, why, sizeof why) == -EINVAL);
    CHECK(reshape_geom_init(&g, &f, &t4, 1280, 512, why, sizeof why) == -EINVAL && strstr(why, "nothing"));
    CHECK(reshape_geom_init(&g, &f, &t3, 1280, 512, why, sizeof why) == -EINVAL && strstr(why, "smaller"));
    CHECK(reshape_geom_init(&g, &f, &t6, 1280, 512, why, sizeof why) == -EINVAL && strstr(why, "level"));
    /* a chunk change: units of the larger chunk, shift and size in them */
    CHECK(reshape_geom_init(&g, &f, &tc, 1408, 512, why, sizeof why) == -EINVAL && strstr(why, "multiple"));
    CHECK(reshape_geom_init(&g, &f, &tc, 1536, 128, why, sizeof why) == -EINVAL && strstr(why, "shift"));
    CHECK(reshape_geom_init(&g, &f, &tc, 1536, 256, why, sizeof why) == 0, "%s", why);
    CHECK(g.unit == 256 && reshape_stripe_data(&g) == 4 * 256 && reshape_stripes(&g) == 6);
    CHECK(reshape_old_safe_row(&g, 4 * 256) == 256); /* old unit data 3 * 256: sector 1024 is in unit 1 */
    CHECK(reshape_geom_init(&g, &f, &t, 1280, 64, why, sizeof why) == -EINVAL && strstr(why, "shift"));
    CHECK(reshape_geom_init(&g, &f, &t, 1300, 512, why, sizeof why) == -EINVAL);
    harness_end();
}

/* For tests/e2e/grow.sh: `--data-offset SECTORS MEMBER...` rewrites each
 * member's superblock with that data_offset (data_size following), as
 * mdadm --create --data-offset would have made it: an array with too
 * little head room for a grow. Only the superblock changes. */
static int set_data_offset_main(int argc, char **argv)
{
    uint64_t off = strtoull(argv[0], NULL, 0);
    for (int i = 1; i < argc; i++) {
        uint8_t buf[MD_SB_BYTES];
        struct md_sb sb;
        char why[200];
        int fd = open(argv[i], O_RDWR);
        if (fd < 0 || pread(fd, buf, sizeof buf, MD_SB_V12_BYTES) != (ssize_t)sizeof buf ||
            md_sb_decode(buf, MD_SB_V12_SECTOR, &sb, why, sizeof why)) {
            fprintf(stderr, "%s: cannot read its superblock\n", argv[i]);
            return 1;
        }
        sb.data_size = sb.data_size + sb.data_offset - off;
        sb.data_offset = off;
        if (md_sb_encode(&sb, buf) || pwrite(fd, buf, sizeof buf, MD_SB_V12_BYTES) != (ssize_t)sizeof buf) {
            fprintf(stderr, "%s: cannot write its superblock\n", argv[i]);
            return 1;
        }
        close(fd);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 3 && !strcmp(argv[1], "--data-offset"))
        return set_data_offset_main(argc - 2, argv + 2);
    harness_init(argc, argv, "reshape_geom");
    fixed_cases();
    struct rng r;
    rng_seed(&r, harness_seed());
    int trials = getenv("URAID_TEST_QUICK") ? 150 : 600;
    for (int i = 0; i < trials; i++)
        one_trial(&r);
    return harness_finish();
}
