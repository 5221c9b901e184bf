/* md RAID-0 zones (lib/raid0.c) against an independent model of md's
 * raid0.c, for random small sets of member sizes: every mapping a bijection
 * between array sectors and the members' used sectors, zone boundaries on
 * chunks, the original and alternate layouts equal in zone 0 and different
 * exactly in the later zones md's rule says, and what md refuses refused.
 * The arrays written by the real md are in tests/e2e/md_raid0.sh.
 * Randomised parts print their seed; URAID_TEST_SEED=N replays. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "raid0.h"

#define MAXN 5
#define MAXCHUNKS 6
#define MAXC 16

static struct rng rng;

/* ---- model ----------------------------------------------------------------
 * Shaped as md's code reads, not as the library: zones from the sorted
 * distinct sizes; a sector's zone by walking zone ends; the member from
 * "sector_div(chunk, nb)" on the array chunk (original) or on the in-zone
 * chunk (alternate); the row from the in-zone offset. */
struct model {
    int nzones, nb[MAXN], dev[MAXN][MAXN];
    uint64_t zend[MAXN], dev_start[MAXN], total;
};

static void model_build(struct model *m, int n, const uint64_t *sizes, uint32_t c)
{
    uint64_t rounded[MAXN], distinct[MAXN];
    int nd = 0;
    for (int s = 0; s < n; s++) {
        rounded[s] = sizes[s] - sizes[s] % c;
        int j = 0;
        while (j < nd && distinct[j] != rounded[s])
            j++;
        if (j == nd)
            distinct[nd++] = rounded[s];
    }
    for (int i = 1; i < nd; i++) /* insertion sort, ascending */
        for (int j = i; j > 0 && distinct[j] < distinct[j - 1]; j--) {
            uint64_t t = distinct[j];
            distinct[j] = distinct[j - 1];
            distinct[j - 1] = t;
        }
    memset(m, 0, sizeof *m);
    m->nzones = nd;
    uint64_t end = 0;
    for (int z = 0; z < nd; z++) {
        m->dev_start[z] = z ? distinct[z - 1] : 0;
        for (int s = 0; s < n; s++)
            if (rounded[s] >= distinct[z])
                m->dev[z][m->nb[z]++] = s;
        end += (distinct[z] - m->dev_start[z]) * (uint64_t)m->nb[z];
        m->zend[z] = end;
    }
    m->total = end;
}

static void model_map(const struct model *m, int layout, uint32_t c, uint64_t sector, int *slot, uint64_t *msec)
{
    int z = 0;
    while (sector >= m->zend[z])
        z++;
    uint64_t zstart = z ? m->zend[z - 1] : 0, in_zone = sector - zstart;
    uint64_t pick = layout == RAID0_LAYOUT_ORIGINAL ? sector / c : in_zone / c;
    *slot = m->dev[z][pick % (uint64_t)m->nb[z]];
    *msec = in_zone / ((uint64_t)m->nb[z] * c) * c + sector % c + m->dev_start[z];
}

/* ---- checks ---------------------------------------------------------------- */

static void random_sizes(int n, uint32_t c, uint64_t *sizes)
{
    for (int s = 0; s < n; s++)
        sizes[s] = (1 + rng_below(&rng, MAXCHUNKS)) * c + rng_below(&rng, c);
}

static int check_one(int n, const uint64_t *sizes, uint32_t c, int layout)
{
    struct raid0_zones *z = malloc(sizeof *z);
    struct model m;
    char why[300];
    int failures = 0;
    if (!z)
        return 1;
    model_build(&m, n, sizes, c);
    int rc = raid0_zones_build(z, n, sizes, c, layout, why, sizeof why);
    CHECK(rc == 0, "n=%d c=%u layout=%d: %s", n, c, layout, why);
    if (rc) {
        free(z);
        return 1;
    }
    uint64_t sum = 0;
    for (int s = 0; s < n; s++)
        sum += sizes[s] / c * c;
    CHECK(z->array_sectors == sum && m.total == sum, "size %llu, model %llu, sum %llu",
          (unsigned long long)z->array_sectors, (unsigned long long)m.total, (unsigned long long)sum);
    CHECK(z->nzones == m.nzones && z->nzones == raid0_zone_count(n, sizes, c));
    int matters = m.nzones > 1 && m.nb[1] > 1;
    CHECK(z->layout_matters == matters && z->layout == (matters ? layout : RAID0_LAYOUT_ORIGINAL));
    for (int i = 0; i < z->nzones; i++) {
        const struct raid0_zone *zn = &z->zone[i];
        CHECK(zn->start % c == 0 && zn->end % c == 0 && zn->dev_start % c == 0 && zn->start < zn->end,
              "zone %d [%llu, %llu) dev_start %llu", i, (unsigned long long)zn->start, (unsigned long long)zn->end,
              (unsigned long long)zn->dev_start);
        CHECK(zn->start == (i ? z->zone[i - 1].end : 0) && zn->end == m.zend[i] && zn->dev_start == m.dev_start[i]);
        CHECK(zn->nb == m.nb[i]);
        for (int k = 0; k < zn->nb && k < m.nb[i]; k++)
            CHECK(z->zone_slot[i][k] == m.dev[i][k], "zone %d member %d", i, k);
    }
    static unsigned char used[MAXN][MAXCHUNKS * MAXC + MAXC];
    memset(used, 0, sizeof used);
    for (uint64_t s = 0; s < z->array_sectors && !failures; s++) {
        struct raid0_addr ad;
        int mslot;
        uint64_t msec, back = UINT64_MAX;
        rc = raid0_map(z, s, &ad);
        model_map(&m, layout, c, s, &mslot, &msec);
        int bad = rc != 0 || ad.slot != mslot || ad.member_sector != msec || ad.chunk_off != s % c ||
                  ad.member_sector >= z->slot_sectors[ad.slot] || used[ad.slot][ad.member_sector] ||
                  raid0_unmap(z, ad.slot, ad.member_sector, &back) != 0 || back != s;
        CHECK(!bad, "n=%d c=%u layout=%d sector %llu: slot %d sector %llu (model %d %llu), back %llu", n, c, layout,
              (unsigned long long)s, ad.slot, (unsigned long long)ad.member_sector, mslot, (unsigned long long)msec,
              (unsigned long long)back);
        failures += bad;
        if (!bad)
            used[ad.slot][ad.member_sector] = 1;
    }
    /* injective and as many array sectors as used member sectors: a bijection */
    for (int s = 0; s < n && !failures; s++)
        for (uint64_t x = 0; x < z->slot_sectors[s]; x++)
            failures += !used[s][x];
    CHECK(failures == 0, "n=%d c=%u layout=%d: a used member sector no array sector maps to", n, c, layout);
    struct raid0_addr ad;
    uint64_t back;
    CHECK(raid0_map(z, z->array_sectors, &ad) == -EINVAL);
    CHECK(raid0_unmap(z, 0, z->slot_sectors[0], &back) == -EINVAL);
    CHECK(raid0_unmap(z, n, 0, &back) == -EINVAL);
    free(z);
    return failures;
}

static void test_random_sets(void)
{
    int sets = 3000;
    for (int i = 0; i < sets; i++) {
        int n = 1 + (int)rng_below(&rng, MAXN);
        uint32_t c = rng_below(&rng, 2) ? 8 : 16;
        uint64_t sizes[MAXN];
        random_sizes(n, c, sizes);
        if (check_one(n, sizes, c, RAID0_LAYOUT_ORIGINAL) + check_one(n, sizes, c, RAID0_LAYOUT_ALTERNATE))
            return; /* the first failing set says enough */
    }
}

/* Zone 0 starts at 0, so both layouts agree there; in zone z they agree on
 * every sector when zone z starts at a multiple of nb chunks and on none
 * (nb > 1) otherwise: the member index moves by start/chunk mod nb. */
static void test_layouts_differ(void)
{
    struct raid0_zones *o = malloc(sizeof *o), *a = malloc(sizeof *a);
    int shifted_zones = 0;
    for (int i = 0; i < 2000 && o && a; i++) {
        int n = 2 + (int)rng_below(&rng, MAXN - 1);
        uint32_t c = 8;
        uint64_t sizes[MAXN];
        random_sizes(n, c, sizes);
        if (raid0_zones_build(o, n, sizes, c, RAID0_LAYOUT_ORIGINAL, NULL, 0) ||
            raid0_zones_build(a, n, sizes, c, RAID0_LAYOUT_ALTERNATE, NULL, 0)) {
            CHECK(0, "build failed");
            break;
        }
        for (int zi = 0; zi < o->nzones; zi++) {
            const struct raid0_zone *zn = &o->zone[zi];
            int differs = zn->nb > 1 && zn->start / c % (uint64_t)zn->nb != 0;
            CHECK(!(zi == 0 && differs));
            shifted_zones += differs;
            for (uint64_t s = zn->start; s < zn->end; s++) {
                struct raid0_addr x, y;
                raid0_map(o, s, &x);
                raid0_map(a, s, &y);
                int same = x.slot == y.slot && x.member_sector == y.member_sector;
                CHECK(same == !differs, "sizes set %d zone %d sector %llu: layouts %s", i, zi,
                      (unsigned long long)s, same ? "agree" : "differ");
                if (same != !differs)
                    goto out;
            }
        }
    }
out:
    CHECK(shifted_zones > 100, "only %d zones where the layouts differ: the sets are too tame", shifted_zones);
    free(o);
    free(a);
}

/* Sizes 1, 2, 2 chunks: zone 0 is chunks 0-2 over slots 0-2, zone 1 chunks
 * 3-4 over slots 1 and 2. md's original layout picks zone 1's member from
 * the array chunk (3 % 2 = 1: slot 2 first), the alternate one from the
 * in-zone chunk (0: slot 1 first). Remainders below a chunk are dropped. */
static void test_example(void)
{
    struct raid0_zones *z = malloc(sizeof *z);
    const uint64_t sizes[3] = {8 + 7, 16 + 3, 16};
    struct raid0_addr ad;
    if (!z)
        return;
    CHECK(raid0_zones_build(z, 3, sizes, 8, RAID0_LAYOUT_ORIGINAL, NULL, 0) == 0);
    CHECK(z->nzones == 2 && z->array_sectors == 40 && z->zone[1].start == 24 && z->zone[1].dev_start == 8);
    CHECK(raid0_map(z, 24, &ad) == 0 && ad.slot == 2 && ad.member_sector == 8);
    CHECK(raid0_map(z, 32 + 5, &ad) == 0 && ad.slot == 1 && ad.member_sector == 8 + 5);
    CHECK(raid0_zones_build(z, 3, sizes, 8, RAID0_LAYOUT_ALTERNATE, NULL, 0) == 0);
    CHECK(raid0_map(z, 24, &ad) == 0 && ad.slot == 1 && ad.member_sector == 8);
    CHECK(raid0_map(z, 32 + 5, &ad) == 0 && ad.slot == 2 && ad.member_sector == 8 + 5);
    free(z);
}

static void test_refusals(void)
{
    struct raid0_zones *z = malloc(sizeof *z);
    char why[300];
    const uint64_t multi[3] = {64, 128, 128}, equal[3] = {64, 64 + 7, 64 + 1};
    if (!z)
        return;
    /* no RAID0_LAYOUT feature (UNSET), layout 0 ("dangerous") or unknown */
    const int bad[] = {RAID0_LAYOUT_UNSET, 0, 3};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        CHECK(raid0_zones_build(z, 3, multi, 8, bad[i], why, sizeof why) == -EINVAL, "layout %d", bad[i]);
        CHECK(strstr(why, "multi-zone") && strstr(why, "--update=layout-alternate") && !strchr(why, '\n'),
              "reason: '%s'", why);
    }
    /* one zone, or zone 1 of one member: the layout does not matter, as md
     * forces the original */
    const uint64_t one_larger[3] = {64, 128, 64 + 7};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(raid0_zones_build(z, 3, equal, 8, bad[i], why, sizeof why) == 0, "%s", why);
        CHECK(z->nzones == 1 && z->layout == RAID0_LAYOUT_ORIGINAL && z->array_sectors == 3 * 64);
        CHECK(raid0_zones_build(z, 3, one_larger, 8, bad[i], why, sizeof why) == 0, "%s", why);
        CHECK(z->nzones == 2 && !z->layout_matters && z->layout == RAID0_LAYOUT_ORIGINAL && z->array_sectors == 256);
    }
    const uint64_t tiny[2] = {64, 7};
    CHECK(raid0_zones_build(z, 2, tiny, 8, RAID0_LAYOUT_ORIGINAL, why, sizeof why) == -EINVAL &&
          strstr(why, "slot 1"), "%s", why);
    CHECK(raid0_zones_build(z, 0, tiny, 8, RAID0_LAYOUT_ORIGINAL, why, sizeof why) == -EINVAL);
    CHECK(raid0_zones_build(z, 2, tiny, 0, RAID0_LAYOUT_ORIGINAL, why, sizeof why) == -EINVAL);
    CHECK(raid0_zone_count(3, multi, 8) == 2 && raid0_zone_count(3, equal, 8) == 1);
    free(z);
}

/* The largest array this module takes: every slot its own size. */
static void test_many_zones(void)
{
    struct raid0_zones *z = malloc(sizeof *z);
    static uint64_t sizes[LAYOUT_MAX_DISKS];
    if (!z)
        return;
    uint64_t sum = 0;
    for (int s = 0; s < LAYOUT_MAX_DISKS; s++) {
        sizes[s] = (uint64_t)(LAYOUT_MAX_DISKS - s) * 1024;
        sum += sizes[s];
    }
    CHECK(raid0_zones_build(z, LAYOUT_MAX_DISKS, sizes, 1024, RAID0_LAYOUT_ORIGINAL, NULL, 0) == 0);
    CHECK(z->nzones == LAYOUT_MAX_DISKS && z->array_sectors == sum && z->zone[LAYOUT_MAX_DISKS - 1].nb == 1);
    struct raid0_addr ad;
    uint64_t back;
    for (uint64_t s = 0; s < sum; s += 997) {
        int ok = raid0_map(z, s, &ad) == 0 && raid0_unmap(z, ad.slot, ad.member_sector, &back) == 0 && back == s;
        CHECK(ok, "sector %llu", (unsigned long long)s);
        if (!ok)
            break;
    }
    CHECK(raid0_map(z, sum - 1, &ad) == 0 && ad.slot == 0 && ad.member_sector == sizes[0] - 1);
    free(z);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_raid0");
    rng_seed(&rng, harness_seed());
    harness_begin("worked example: sizes 1, 2, 2 chunks in both layouts");
    test_example();
    harness_end();
    harness_begin("random size sets: bijection, md's model, chunk-aligned zones, both layouts");
    test_random_sets();
    harness_end();
    harness_begin("original and alternate differ exactly in the zones md shifts");
    test_layouts_differ();
    harness_end();
    harness_begin("refused: layout not 1 or 2 where the layouts differ, a slot below a chunk");
    test_refusals();
    harness_end();
    harness_begin("256 zones, one member each at the end");
    test_many_zones();
    harness_end();
    return harness_finish();
}
