/* The layout module against arrays written by the real Linux md
 * (../shared/fixtures/md, see its README.md and MANIFEST).
 *
 * For every fixture: the geometry comes from MANIFEST; every array sector
 * must sit where layout_map() says, holding the "secpat plain" pattern
 * (array sector S = LE64(S) || LE64(SEED) repeated 32 times); every P and Q
 * on disk must equal uraid_gen_pq() of the stripe's data fed in the stripe
 * map's Q slot order. Fixture c (RAID-6 right-asymmetric) has stripes where
 * slot != d, so it proves the Q coefficient order; the test also shows that
 * the naive order (slot = d) disagrees with md there.
 * Special cases from the README: d has a stale member (slot 2, still holding
 * the first seed everywhere) and two seeds in the live array; g has bad
 * blocks, whose sectors are skipped.
 * Missing fixtures fail loudly. Members are unpacked with `xz -dc` into a
 * mkdtemp directory under /tmp, which is removed again. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "layout.h"
#include "uraid_parity.h"

#define FIXDIR "../shared/fixtures/md"
#define MAX_FIX 16
#define MAX_SLOTS 16
#define MAX_RANGES 4

extern char **environ;

struct fixture {
    char name[128];
    int nslots;
    char path[MAX_SLOTS][256];
    int stale[MAX_SLOTS];
    int level, layout, raid_disks;
    uint32_t chunk_sectors;
    uint64_t array_sectors, data_size, data_offset;
    uint64_t seed;                     /* first seed written over the whole array */
    int nranges;                       /* live content by byte range, when it changed */
    uint64_t r_lo[MAX_RANGES], r_hi[MAX_RANGES], r_seed[MAX_RANGES];
    int nbb;                           /* bad-block log entries (absolute member sectors) */
    int bb_slot[MAX_RANGES];
    uint64_t bb_start[MAX_RANGES], bb_len[MAX_RANGES];
    uint8_t *img[MAX_SLOTS];
    size_t img_len[MAX_SLOTS];
};

static struct fixture fx[MAX_FIX];
static int nfx;

/* ---- MANIFEST ----------------------------------------------------------- */

static void parse_line(struct fixture *f, char *line)
{
    int i;
    char path[256];
    unsigned long long a, b, c;
    unsigned u;
    if (sscanf(line, " slot %d: %255s (raw", &i, path) == 2 && i >= 0 && i < MAX_SLOTS &&
        strstr(path, ".img.xz")) {
        snprintf(f->path[i], sizeof f->path[i], "%s", path);
        f->stale[i] = strstr(line, "STALE") != NULL;
        if (i + 1 > f->nslots)
            f->nslots = i + 1;
    } else if (sscanf(line, "level: raid%d", &i) == 1) {
        f->level = i;
    } else if (!strncmp(line, "layout: ", 8)) {
        char name[64];
        if (sscanf(line, "layout: %63s (%d)", name, &i) == 2) {
            f->layout = i;
            /* mdadm's name and md's number must agree through our table */
            int byname = layout_from_name(f->level, name);
            CHECK(byname == i, "%s: layout name %s gives %d, MANIFEST says %d", f->name, name,
                  byname, i);
        } else {
            f->layout = 0; /* RAID-0/1: "n/a", md ignores the field */
        }
    } else if (sscanf(line, "chunk: %llu bytes (%u sectors)", &a, &u) == 2) {
        f->chunk_sectors = u;
    } else if (sscanf(line, "raid devices: %d", &i) == 1) {
        f->raid_disks = i;
    } else if (sscanf(line, "array size: %llu bytes (%llu sectors)", &a, &b) == 2) {
        f->array_sectors = b;
    } else if (!strncmp(line, "per-member used size", 20) && strstr(line, "data_size ")) {
        if (sscanf(strstr(line, "data_size "), "data_size %llu", &a) == 1)
            f->data_size = a;
    } else if (sscanf(line, "data offset: %llu sectors", &a) == 1) {
        f->data_offset = a;
    } else if (!strncmp(line, "pattern: secpat plain", 21)) {
        char *s = strstr(line, "seed ");
        if (s && sscanf(s, "seed %llu", &a) == 1)
            f->seed = a;
        /* d: "Array content now: bytes [0, X) = seed A, bytes [X, Y) = seed B" */
        char *r = strstr(line, "Array content now:");
        while (r && (r = strstr(r, "bytes [")) && f->nranges < MAX_RANGES) {
            if (sscanf(r, "bytes [%llu, %llu) = seed %llu", &a, &b, &c) == 3) {
                f->r_lo[f->nranges] = a / 512;
                f->r_hi[f->nranges] = b / 512;
                f->r_seed[f->nranges++] = c;
            }
            r += 7;
        }
    } else if (sscanf(line, "bad blocks recorded by md on slot %d (%*[^)]): %llu for %llu sectors",
                      &i, &a, &b) == 3 && f->nbb < MAX_RANGES) {
        f->bb_slot[f->nbb] = i;
        f->bb_start[f->nbb] = a;
        f->bb_len[f->nbb++] = b;
    }
}

static int load_manifest(void)
{
    FILE *m = fopen(FIXDIR "/MANIFEST", "r");
    CHECK(m != NULL, "cannot open %s/MANIFEST (run from the project root)", FIXDIR);
    if (!m)
        return -ENOENT;
    char line[4096];
    struct fixture *f = NULL;
    while (fgets(line, sizeof line, m)) {
        char name[128];
        if (sscanf(line, "=== %127s ===", name) == 1 && nfx < MAX_FIX) {
            f = &fx[nfx++];
            memset(f, 0, sizeof *f);
            f->level = -1;
            snprintf(f->name, sizeof f->name, "%s", name);
        } else if (f) {
            parse_line(f, line);
        }
    }
    fclose(m);
    CHECK(nfx == 7, "MANIFEST lists %d arrays, README says 7", nfx);
    return 0;
}

/* ---- unpacking ------------------------------------------------------------ */

static int unpack(const char *xzpath, const char *out, uint8_t **buf, size_t *len)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char *argv[] = {"xz", "-dc", (char *)xzpath, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "xz", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        return -rc;
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
        return -EIO;
    int fd = open(out, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        if (fd >= 0)
            close(fd);
        return -errno;
    }
    *len = (size_t)st.st_size;
    *buf = malloc(*len ? *len : 1);
    size_t got = 0;
    while (*buf && got < *len) {
        ssize_t r = read(fd, *buf + got, *len - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    unlink(out);
    if (!*buf || got != *len) {
        free(*buf);
        *buf = NULL;
        return -EIO;
    }
    return 0;
}

static int unpack_fixture(struct fixture *f, const char *tmp)
{
    for (int i = 0; i < f->nslots; i++) {
        char src[512], dst[512];
        snprintf(src, sizeof src, "%s/%s", FIXDIR, f->path[i]);
        snprintf(dst, sizeof dst, "%s/slot%d.img", tmp, i);
        int rc = unpack(src, dst, &f->img[i], &f->img_len[i]);
        CHECK(rc == 0, "%s: xz -dc %s failed: %d", f->name, src, rc);
        if (rc)
            return rc;
    }
    return 0;
}

static void free_fixture(struct fixture *f)
{
    for (int i = 0; i < f->nslots; i++) {
        free(f->img[i]);
        f->img[i] = NULL;
    }
}

/* ---- expected content --------------------------------------------------- */

static uint64_t live_seed(const struct fixture *f, uint64_t S)
{
    for (int i = 0; i < f->nranges; i++)
        if (S >= f->r_lo[i] && S < f->r_hi[i])
            return f->r_seed[i];
    return f->seed;
}

static void secpat(uint8_t *out, uint64_t S, uint64_t seed)
{
    for (int i = 0; i < 32; i++)
        for (int b = 0; b < 8; b++) {
            out[16 * i + b] = (uint8_t)(S >> (8 * b));
            out[16 * i + 8 + b] = (uint8_t)(seed >> (8 * b));
        }
}

static int in_badblock(const struct fixture *f, int slot, uint64_t abs_sector)
{
    for (int i = 0; i < f->nbb; i++)
        if (f->bb_slot[i] == slot && abs_sector >= f->bb_start[i] &&
            abs_sector < f->bb_start[i] + f->bb_len[i])
            return 1;
    return 0;
}

static const uint8_t *member_sector(const struct fixture *f, int slot, uint64_t msec)
{
    uint64_t off = (f->data_offset + msec) * 512;
    if (!f->img[slot] || off + 512 > f->img_len[slot])
        return NULL;
    return f->img[slot] + off;
}

/* Every array sector where layout_map() puts it (every mirror for RAID-1);
 * the stale member's data sectors hold the first seed everywhere. */
static void check_data(const struct fixture *f, const struct layout_geom *g)
{
    uint8_t want[512];
    uint64_t checked = 0, skipped_bb = 0, stale_checked = 0;
    int bad = 0;
    for (uint64_t S = 0; S < f->array_sectors; S++) {
        struct layout_addr a;
        int rc = layout_map(g, S, &a);
        if (rc) {
            CHECK(0, "%s: map %llu rc %d", f->name, (unsigned long long)S, rc);
            return;
        }
        int lo = g->level == 1 ? 0 : a.disk, hi = g->level == 1 ? f->nslots - 1 : a.disk;
        for (int m = lo; m <= hi; m++) {
            if (in_badblock(f, m, f->data_offset + a.member_sector)) {
                skipped_bb++;
                continue;
            }
            const uint8_t *got = member_sector(f, m, a.member_sector);
            secpat(want, S, f->stale[m] ? f->seed : live_seed(f, S));
            if (!got || memcmp(got, want, 512)) {
                if (bad++ < 5)
                    CHECK(0, "%s: array sector %llu not at member %d sector %llu%s", f->name,
                          (unsigned long long)S, m, (unsigned long long)a.member_sector,
                          f->stale[m] ? " (stale member, first seed)" : "");
                continue;
            }
            if (f->stale[m])
                stale_checked++;
            else
                checked++;
        }
    }
    uint64_t expect_bb = 0;
    for (int i = 0; i < f->nbb; i++)
        expect_bb += f->bb_len[i];
    CHECK(skipped_bb == expect_bb, "%s: skipped %llu bad-block sectors, log has %llu", f->name,
          (unsigned long long)skipped_bb, (unsigned long long)expect_bb);
    printf("  %s: %llu array sectors, %llu member data sectors match md%s", f->name,
           (unsigned long long)f->array_sectors, (unsigned long long)checked,
           stale_checked ? "" : "\n");
    if (stale_checked)
        printf(", %llu on the stale member hold the first seed\n",
               (unsigned long long)stale_checked);
}

/* P and Q of every stripe against the parity engine fed in slot order.
 * Data comes from the expected pattern (its placement was proved by
 * check_data), so this isolates P's placement, Q's placement and Q's
 * coefficient order. Also counts stripes where slot = d order would give a
 * different Q, to show the fixture can tell the orders apart. */
static void check_parity(const struct fixture *f, const struct layout_geom *g)
{
    uint32_t c = g->chunk_sectors;
    size_t len = (size_t)c * 512;
    uint64_t nstripes = f->data_size / c;
    int n = g->raid_disks;
    uint8_t *blk = malloc(len * (size_t)n * 2 + len * 4);
    uint8_t *zero = calloc(1, len);
    uint8_t *p = blk + len * (size_t)n * 2, *q = p + len, *p2 = q + len, *q2 = p2 + len;
    const void *slots[LAYOUT_MAX_DISKS], *naive[LAYOUT_MAX_DISKS];
    int bad = 0, naive_differs = 0, slot_ne_d = 0;
    uint64_t pchecked = 0, qchecked = 0;
    for (uint64_t s = 0; s < nstripes; s++) {
        struct stripe_map m;
        CHECK(layout_stripe(g, s, &m) == 0, "stripe");
        /* two views: the live array, and what the stale member last saw */
        for (int view = 0; view < 2; view++) {
            int stale_view = view == 1;
            int have_stale = 0;
            for (int i = 0; i < f->nslots; i++)
                have_stale |= f->stale[i];
            if (stale_view && !have_stale)
                break;
            for (int d = 0; d < m.k; d++) {
                uint8_t *b = blk + len * (size_t)m.data_disk[d];
                for (uint32_t o = 0; o < c; o++) {
                    uint64_t S = (s * (uint64_t)m.k + (uint64_t)d) * c + o;
                    secpat(b + (size_t)o * 512, S, stale_view ? f->seed : live_seed(f, S));
                }
                naive[d] = b;
            }
            for (int j = 0; j < m.nslots; j++)
                slots[j] = m.slot_disk[j] < 0 ? zero : blk + len * (size_t)m.slot_disk[j];
            if (g->level == 6) {
                uraid_gen_pq(m.nslots, len, slots, p, q);
                uraid_gen_pq(m.k, len, naive, p2, q2);
            } else {
                uraid_gen_p(m.nslots, len, slots, p);
            }
            for (int d = 0; d < m.k; d++)
                slot_ne_d += !stale_view && m.q_slot[d] != d;
            if (!stale_view && g->level == 6 && memcmp(q, q2, len))
                naive_differs++;
            for (int which = 0; which < 2; which++) {
                int disk = which ? m.q_disk : m.p_disk;
                if (disk < 0 || f->stale[disk] != stale_view)
                    continue;
                const uint8_t *want = which ? q : p;
                for (uint32_t o = 0; o < c; o++) {
                    uint64_t msec = s * c + o;
                    if (in_badblock(f, disk, f->data_offset + msec))
                        continue;
                    const uint8_t *got = member_sector(f, disk, msec);
                    if (!got || memcmp(got, want + (size_t)o * 512, 512)) {
                        if (bad++ < 5)
                            CHECK(0, "%s: stripe %llu %c on member %d sector %llu differs "
                                  "from gen_pq in slot order", f->name, (unsigned long long)s,
                                  which ? 'Q' : 'P', disk, (unsigned long long)msec);
                        break;
                    }
                }
                if (which)
                    qchecked++;
                else
                    pchecked++;
            }
        }
    }
    CHECK(pchecked >= nstripes - nstripes / (uint64_t)n - 1, "%s: only %llu P blocks checked",
          f->name, (unsigned long long)pchecked);
    printf("  %s: %llu stripes, %llu P and %llu Q blocks equal the parity engine in slot order",
           f->name, (unsigned long long)nstripes, (unsigned long long)pchecked,
           (unsigned long long)qchecked);
    if (g->level == 6)
        printf("; slot != d in %d data blocks; slot = d order would get Q wrong in %d stripes",
               slot_ne_d, naive_differs);
    printf("\n");
    if (g->level == 6 && (g->layout == 0 || g->layout == 1 || g->layout == 18 || g->layout == 19))
        CHECK(naive_differs > 0, "%s: this fixture should tell Q orders apart", f->name);
    free(blk);
    free(zero);
}

/* README (g): the two bad blocks hold array 4 KiB blocks 165 and 359. */
static void check_badblock_positions(const struct fixture *f, const struct layout_geom *g)
{
    static const uint64_t blocks[] = {165, 359};
    CHECK(f->nbb == 2, "%s: MANIFEST lists %d bad blocks, README 2", f->name, f->nbb);
    for (int i = 0; i < f->nbb && i < 2; i++) {
        struct layout_addr a;
        int rc = layout_unmap(g, f->bb_slot[i], f->bb_start[i] - f->data_offset, &a);
        CHECK(rc == 0 && a.role == LAYOUT_ROLE_DATA && a.array_sector == blocks[i] * 8,
              "%s: bad block on slot %d at %llu holds array sector %llu, README says block %llu",
              f->name, f->bb_slot[i], (unsigned long long)f->bb_start[i],
              (unsigned long long)a.array_sector, (unsigned long long)blocks[i]);
    }
}

static void run_fixture(struct fixture *f)
{
    struct layout_geom g = {.level = f->level, .layout = f->layout, .raid_disks = f->raid_disks,
                            .chunk_sectors = f->chunk_sectors};
    char why[128];
    int rc = layout_check(&g, why, sizeof why);
    CHECK(rc == 0, "%s: geometry refused: %s", f->name, why);
    CHECK(f->nslots == f->raid_disks && f->seed && f->data_offset && f->data_size,
          "%s: MANIFEST block incomplete (%d slots, seed %llu)", f->name, f->nslots,
          (unsigned long long)f->seed);
    if (rc)
        return;
    uint64_t size;
    rc = layout_array_sectors(&g, f->data_size, &size);
    CHECK(rc == 0 && size == f->array_sectors, "%s: array size %llu, md says %llu", f->name,
          (unsigned long long)size, (unsigned long long)f->array_sectors);

    char tmp[] = "/tmp/uraid-fixture-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL, "mkdtemp: %s", strerror(errno));
    rc = unpack_fixture(f, tmp);
    rmdir(tmp);
    if (rc == 0) {
        check_data(f, &g);
        if (g.level >= 4)
            check_parity(f, &g);
        if (f->nbb)
            check_badblock_positions(f, &g);
    }
    free_fixture(f);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_fixtures_layout");
    harness_begin("MANIFEST of the md fixtures");
    load_manifest();
    harness_end();
    for (int i = 0; i < nfx; i++) {
        char label[200];
        snprintf(label, sizeof label, "md fixture %.127s: data, P and Q where layout says", fx[i].name);
        harness_begin(label);
        run_fixture(&fx[i]);
        harness_end();
    }
    return harness_finish();
}
