/* grow --size on metadata 0.90 and 1.0 (lib/array/resize_place.c): the
 * superblock at the member's end moves when the member grows.
 *   - members grown in place (random bytes appended): an open finds no
 *     superblock and says to run grow --size; a refusal (too big) leaves
 *     every member byte for byte as it was;
 *   - a kill in the middle of the placement (two of four members placed,
 *     resize_place_superblocks on those two): the placed ones carry their
 *     superblock at md's new place with the old size and events, the
 *     others still at the old place; the grow run again finds every one,
 *     finishes, and the array reads as written, checks clean, and says
 *     the new size and clean in every superblock;
 *   - served: the members grown again, their superblocks placed at the
 *     new ends, grow --size on the served array (uraid_grow_size_online);
 *   - RAID-1 1.0 whose member was replaced by a bigger one (a spare added
 *     and recovered: its superblock at its own end) and whose other member
 *     grew in place: the grow uses both.
 * Seeded (printed by the harness). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array/resize.h"
#include "harness.h"
#include "meta/superblock.h"
#include "uraid.h"
#include "uraid_grow.h"

#define MB (1u << 20)

struct set {
    char dir[64];
    char path[6][128];
    const char *p[6];
    int n;
    uint64_t size;
    uint8_t *model;
};

static int make(struct set *s, const char *meta, int level, int n, struct rng *r)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/uraid-gsp.XXXXXX");
    if (!mkdtemp(s->dir))
        return -errno;
    s->n = n;
    for (int i = 0; i < n; i++) {
        char dir[sizeof s->dir]; /* a copy: snprintf's source must not lie in its destination's object */
        memcpy(dir, s->dir, sizeof dir);
        snprintf(s->path[i], sizeof s->path[i], "%s/m%d.img", dir, i);
        s->p[i] = s->path[i];
        if (truncate(s->path[i], 0) && errno != ENOENT)
            return -errno;
        int fd = open(s->path[i], O_CREAT | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, 8 * MB))
            return -errno;
        close(fd);
    }
    struct uraid_create_params cp = {.level = level, .raid_devices = n, .chunk_bytes = 64 << 10, .layout = -1,
                                     .assume_clean = 1, .consistency_policy = URAID_POLICY_RESYNC, .metadata = meta};
    char why[300] = "";
    int rc = uraid_create(s->p, n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create %s RAID-%d: %s", meta, level, why);
    struct uraid_array *a = NULL;
    if (rc || (rc = uraid_open(s->p, n, NULL, &a, why, sizeof why)) != 0)
        return rc ? rc : -EIO;
    s->size = uraid_size(a);
    s->model = aligned_alloc(4096, s->size);
    rng_fill(r, s->model, s->size);
    CHECK((rc = uraid_write(a, s->model, s->size, 0)) == 0, "write the data: %d", rc);
    CHECK(uraid_close(a) == 0);
    return rc;
}

static void grow_in_place(const char *path, struct rng *r)
{
    uint8_t *junk = malloc(MB);
    FILE *fp = fopen(path, "a");
    for (int i = 0; fp && i < 8; i++) {
        rng_fill(r, junk, MB);
        fwrite(junk, 1, MB, fp);
    }
    CHECK(fp && fclose(fp) == 0, "grow %s", path);
    free(junk);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    rewind(fp);
    uint8_t *b = malloc(*len);
    if (b && fread(b, 1, *len, fp) != *len) {
        free(b);
        b = NULL;
    }
    fclose(fp);
    return b;
}

/* The superblock md would find on path (its end), or -ENOENT. */
static int sb_at_end(const char *path, int format, struct md_sb *sb)
{
    size_t len = 0;
    uint8_t *b = slurp(path, &len);
    if (!b)
        return -EIO;
    uint64_t at = md_format_sb_sector(format, len / 512);
    char why[200];
    int rc = -ENOENT;
    if (format == MD_FMT_1_0 && md_sb_decode(b + at * 512, at, sb, why, sizeof why) == 0)
        rc = 0;
    if (format == MD_FMT_0_90 && b[at * 512] == 0xfc && b[at * 512 + 1] == 0x4e)
        rc = 0; /* the 0.90 magic a92b4efc, little-endian */
    free(b);
    return rc;
}

static void grown_ok(struct set *s, const char *label)
{
    struct uraid_array *a = NULL;
    char why[300] = "";
    CHECK(uraid_open(s->p, s->n, NULL, &a, why, sizeof why) == 0, "%s: open after the grow: %s", label, why);
    if (!a)
        return;
    uint8_t *buf = aligned_alloc(4096, s->size);
    CHECK(uraid_size(a) > s->size && uraid_read(a, buf, s->size, 0) == 0 && !memcmp(buf, s->model, s->size),
          "%s: size %llu (was %llu), the old bytes as written", label, (unsigned long long)uraid_size(a),
          (unsigned long long)s->size);
    free(buf);
    struct uraid_job_status st;
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0 && uraid_job_wait(a, &st) == 0 &&
              st.mismatch_sectors == 0, "%s: check after the grow: mismatch %llu %s", label,
          (unsigned long long)st.mismatch_sectors, st.why);
    CHECK(uraid_close(a) == 0);
}

static void cleanup(struct set *s)
{
    for (int i = 0; i < s->n; i++)
        unlink(s->path[i]);
    for (int i = s->n; i < 6; i++)
        if (s->path[i][0])
            unlink(s->path[i]);
    rmdir(s->dir);
    free(s->model);
}

/* Served: the members grown again and their superblocks placed at their
 * new ends with the size unchanged (as members replaced by bigger ones
 * carry them), a served grow --size uses the room: a write into the new
 * region during its resync reads back, the old bytes stay, a check finds
 * nothing, and every superblock at its end says the new size, clean. */
static void grown_online(struct set *s, int format, const char *meta, struct rng *r)
{
    for (int i = 0; i < s->n; i++)
        grow_in_place(s->path[i], r);
    char why[400] = "";
    int rc = resize_place_superblocks(s->p, s->n, 0, why, sizeof why);
    CHECK(rc == 0, "%s: place the superblocks at the new ends: %d %s", meta, rc, why);
    struct uraid_array *a = NULL;
    CHECK(uraid_open(s->p, s->n, NULL, &a, why, sizeof why) == 0, "%s: open: %s", meta, why);
    if (!a)
        return;
    uint64_t before = uraid_size(a), from = 0;
    rc = uraid_grow_size_online(a, 0, &from, why, sizeof why);
    CHECK(rc == 0 && uraid_size(a) > before && from * 512 == before, "%s: served grow --size max: %d %s, %llu -> %llu",
          meta, rc, why, (unsigned long long)before, (unsigned long long)uraid_size(a));
    static uint8_t piece[64 << 10] __attribute__((aligned(4096))), back[64 << 10] __attribute__((aligned(4096)));
    rng_fill(r, piece, sizeof piece);
    if (rc == 0)
        CHECK(uraid_write(a, piece, sizeof piece, before) == 0 && uraid_read(a, back, sizeof back, before) == 0 &&
                  !memcmp(piece, back, sizeof back), "%s: a write into the new region reads back", meta);
    struct uraid_job_status st;
    uraid_job_wait(a, &st);
    CHECK(rc || (st.kind == URAID_JOB_RESYNC && st.result == 0), "%s: the new region's resync: %d %s", meta,
          st.result, st.why);
    uint8_t *buf = aligned_alloc(4096, s->size);
    CHECK(buf && uraid_read(a, buf, s->size, 0) == 0 && !memcmp(buf, s->model, s->size), "%s: the old bytes", meta);
    free(buf);
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0 && uraid_job_wait(a, &st) == 0 &&
              st.mismatch_sectors == 0, "%s: check after the served grow: mismatch %llu %s", meta,
          (unsigned long long)st.mismatch_sectors, st.why);
    uint64_t grown = uraid_size(a);
    CHECK(uraid_close(a) == 0);
    struct md_sb sb;
    for (int i = 0; i < s->n; i++) {
        int found = sb_at_end(s->path[i], format, &sb) == 0;
        CHECK(found, "%s: member %d: superblock at its end after the served grow", meta, i);
        if (found && format == MD_FMT_1_0)
            CHECK(sb.size * 3 * 512 == grown && sb.resync_offset == MD_RESYNC_CLEAN,
                  "%s: member %d: size %llu, resync_offset %llx", meta, i, (unsigned long long)sb.size,
                  (unsigned long long)sb.resync_offset);
    }
}

static void test_kill_in_placement(const char *meta, int format, struct rng *r)
{
    harness_beginf("metadata %s RAID-5 of 4 grown in place: refusal, a kill after two members placed, the rest; then "
                   "grown again and served", meta);
    struct set s = {0};
    if (make(&s, meta, 5, 4, r))
        goto out;
    for (int i = 0; i < 4; i++)
        grow_in_place(s.path[i], r);
    struct uraid_array *a = NULL;
    char why[400] = "";
    int rc = uraid_open(s.p, 4, NULL, &a, why, sizeof why);
    CHECK(rc != 0 && strstr(why, "uraid grow MEMBERS... --size max"), "%s: open of grown members: %d %s", meta, rc,
          why);
    if (a)
        uraid_close(a);
    size_t len[4];
    uint8_t *before[4];
    for (int i = 0; i < 4; i++)
        before[i] = slurp(s.path[i], &len[i]);
    rc = uraid_grow_size(s.p, 4, 64 * MB / 512, NULL, why, sizeof why);
    CHECK(rc == -ENOSPC, "%s: --size 64M: %d %s", meta, rc, why);
    for (int i = 0; i < 4; i++) {
        size_t l = 0;
        uint8_t *now = slurp(s.path[i], &l);
        CHECK(now && l == len[i] && !memcmp(now, before[i], l), "%s: member %d changed by a refusal", meta, i);
        free(now);
        free(before[i]);
    }
    /* the kill: members 0 and 1 placed, 2 and 3 not */
    rc = resize_place_superblocks(s.p, 2, 0, why, sizeof why);
    CHECK(rc == 0, "%s: place two members: %d %s", meta, rc, why);
    struct md_sb sb;
    for (int i = 0; i < 4; i++) {
        int found = sb_at_end(s.path[i], format, &sb) == 0;
        CHECK(found == (i < 2), "%s: member %d: superblock at md's new place: %d", meta, i, found);
        if (found && format == MD_FMT_1_0)
            CHECK(sb.events < 10 && sb.data_size == resize_md_room(MD_FMT_1_0, 16 * MB / 512),
                  "%s: member %d: events %llu, data_size %llu at the new place", meta, i,
                  (unsigned long long)sb.events, (unsigned long long)sb.data_size);
    }
    rc = uraid_grow_size(s.p, 4, 0, NULL, why, sizeof why);
    CHECK(rc == 0, "%s: the grow run again: %d %s", meta, rc, why);
    for (int i = 0; i < 4; i++)
        CHECK(sb_at_end(s.path[i], format, &sb) == 0, "%s: member %d: superblock at its end", meta, i);
    grown_ok(&s, meta);
    grown_online(&s, format, meta, r);
out:
    cleanup(&s);
    harness_end();
}

static void test_bigger_spare(struct rng *r)
{
    harness_begin("metadata 1.0 RAID-1: one member replaced by a bigger one (recovered), the other grown in place");
    struct set s = {0};
    if (make(&s, "1.0", 1, 2, r))
        goto out;
    char dir[sizeof s.dir];
    memcpy(dir, s.dir, sizeof dir);
    snprintf(s.path[2], sizeof s.path[2], "%s/big.img", dir);
    int fd = open(s.path[2], O_CREAT | O_RDWR, 0600);
    CHECK(fd >= 0 && ftruncate(fd, 16 * MB) == 0);
    if (fd >= 0)
        close(fd);
    struct uraid_open_params op = {.force = 1};
    struct uraid_array *a = NULL;
    char why[400] = "";
    const char *one[1] = {s.path[0]};
    CHECK(uraid_open(one, 1, &op, &a, why, sizeof why) == 0, "open without member 1: %s", why);
    if (!a)
        goto out;
    CHECK(uraid_add_spare(a, s.path[2], why, sizeof why) == 0, "add the bigger spare: %s", why);
    struct uraid_job_status st;
    int rc = uraid_job_start(a, URAID_JOB_RECOVER, NULL, why, sizeof why);
    CHECK(rc == 0 || rc == -EBUSY, "recover onto it: %s", why);
    uraid_job_wait(a, &st);
    CHECK(st.result == 0, "recovery: %s", st.why);
    CHECK(uraid_close(a) == 0);
    struct md_sb sb;
    CHECK(sb_at_end(s.path[2], MD_FMT_1_0, &sb) == 0, "the bigger member's superblock at its own end");
    s.p[1] = s.path[2];
    grow_in_place(s.path[0], r);
    rc = uraid_grow_size(s.p, 2, 0, NULL, why, sizeof why);
    CHECK(rc == 0, "grow: %d %s", rc, why);
    grown_ok(&s, "1.0 RAID-1 bigger spare");
out:
    cleanup(&s);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_grow_size_place");
    struct rng r;
    rng_seed(&r, harness_seed());
    test_kill_in_placement("1.0", MD_FMT_1_0, &r);
    test_kill_in_placement("0.90", MD_FMT_0_90, &r);
    test_bigger_spare(&r);
    return harness_finish();
}
