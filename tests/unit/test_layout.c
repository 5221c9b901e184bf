/* md levels and layouts (lib/layout.c) against an independent oracle, the
 * 5-member tables in ../shared/reference/layout-examples.txt and the Q slot
 * examples of md-format.md section 2; every layout a bijection between
 * array sectors and member data sectors, every member sector exactly one of
 * data/P/Q. The arrays written by the real md are in test_fixtures_layout.c.
 * Randomised parts print their seed; URAID_TEST_SEED=N replays.
 * URAID_TEST_QUICK=1 (sanitizer build) uses fewer member counts and chunks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "layout.h"
#include "uraid_parity.h"

static struct rng rng;
static int quick;

static const int raid5_layouts[] = {0, 1, 2, 3, 4, 5};
static const int raid6_layouts[] = {0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20};
#define NELEM(a) (int)(sizeof(a) / sizeof((a)[0]))

/* ---- oracle --------------------------------------------------------------
 * Written as md-format.md describes the layouts in words, not as the
 * library's formulas: P and Q from the table, then data laid either
 * "asymmetrically" (the non-parity members in ascending order) or
 * "symmetrically" (starting at a given member and walking upward, wrapping,
 * skipping P and Q). Q slots by an explicit walk from Q+1. */
struct oracle {
    int p, q, k, nslots;
    int data_disk[LAYOUT_MAX_DISKS];
    int q_slot[LAYOUT_MAX_DISKS];
};

static void oracle_row(int level, int alg, int n, uint64_t s, struct oracle *o)
{
    int p = -1, q = -1, start = -1; /* start < 0: ascending order */
    int sn = (int)(s % (uint64_t)n), sn1 = n > 1 ? (int)(s % (uint64_t)(n - 1)) : 0;
    if (level == 4)
        alg = 5, level = 5;
    if (level == 0 || level == 1) {
        o->p = o->q = -1;
        o->k = level == 0 ? n : 1;
        o->nslots = 0;
        for (int d = 0; d < o->k; d++)
            o->data_disk[d] = d, o->q_slot[d] = -1;
        return;
    }
    if (level == 5) {
        switch (alg) {
        case 0: p = n - 1 - sn; break;
        case 1: p = sn; break;
        case 2: p = n - 1 - sn; start = p + 1; break;
        case 3: p = sn; start = p + 1; break;
        case 4: p = 0; break;
        case 5: p = n - 1; break;
        }
    } else {
        switch (alg) {
        case 0: case 2: case 10: p = n - 1 - sn; break;
        case 1: case 3: case 8: p = sn; break;
        case 9: p = n - 1 - (int)((s + 1) % (uint64_t)n); break;
        case 4: case 20: p = 0; break;
        case 5: p = n - 2; break;
        case 16: case 18: p = n - 2 - sn1; break;
        case 17: case 19: p = sn1; break;
        }
        switch (alg) {
        case 0: case 1: case 8: case 9: q = p == n - 1 ? 0 : p + 1; break;
        case 2: case 3: q = (p + 1) % n; start = q + 1; break;
        case 10: q = (p + n - 1) % n; start = p + 1; break;
        case 4: q = 1; break;
        case 18: case 19: q = n - 1; start = p + 1; break;
        default: q = n - 1; break;
        }
        if (alg == 9 && s == UINT64_MAX) /* (s+1) wrapped to 0 above */
            p = n - 1 - (int)((s % (uint64_t)n + 1) % (uint64_t)n), q = p == n - 1 ? 0 : p + 1;
    }
    o->p = p;
    o->q = q;
    int d = 0;
    for (int i = 0; i < n; i++) {
        int m = start < 0 ? i : (start + i) % n;
        if (m != p && m != q)
            o->data_disk[d++] = m;
    }
    o->k = d;
    int ddf = level == 6 && alg >= 8 && alg <= 10;
    o->nslots = ddf ? n : d;
    for (int j = 0; j < d; j++) {
        if (level == 5 || ddf) {
            o->q_slot[j] = level == 5 ? j : o->data_disk[j];
            continue;
        }
        /* md: walk from the member after Q; the j-th data member met is slot j */
        int slot = 0;
        for (int i = 1; i <= n; i++) {
            int m = (q + i) % n;
            if (m == p || m == q)
                continue;
            if (m == o->data_disk[j])
                break;
            slot++;
        }
        o->q_slot[j] = slot;
    }
}

static struct layout_geom geom(int level, int layout, int n, uint32_t c)
{
    struct layout_geom g = {.level = level, .layout = layout, .raid_disks = n, .chunk_sectors = c};
    return g;
}

/* layout_stripe against the oracle, and the map's internal consistency. */
static void check_stripe(const struct layout_geom *g, uint64_t s)
{
    struct stripe_map m;
    struct oracle o;
    int rc = layout_stripe(g, s, &m);
    CHECK(rc == 0, "level %d layout %d n %d: rc %d", g->level, g->layout, g->raid_disks, rc);
    if (rc)
        return;
    oracle_row(g->level, g->layout, g->raid_disks, s, &o);
    int n = g->raid_disks;
    CHECK(m.p_disk == o.p && m.q_disk == o.q && m.k == o.k && m.nslots == o.nslots,
          "level %d layout %d n %d stripe %llu: P %d/%d Q %d/%d k %d/%d nslots %d/%d", g->level,
          g->layout, n, (unsigned long long)s, m.p_disk, o.p, m.q_disk, o.q, m.k, o.k, m.nslots,
          o.nslots);
    int seen_slot[LAYOUT_MAX_DISKS] = {0};
    for (int d = 0; d < m.k; d++) {
        CHECK(m.data_disk[d] == o.data_disk[d] && m.q_slot[d] == o.q_slot[d],
              "level %d layout %d n %d stripe %llu d %d: disk %d/%d slot %d/%d", g->level,
              g->layout, n, (unsigned long long)s, d, m.data_disk[d], o.data_disk[d], m.q_slot[d],
              o.q_slot[d]);
        if (g->level >= 4) {
            int j = m.q_slot[d];
            CHECK(j >= 0 && j < m.nslots && m.slot_disk[j] == m.data_disk[d], "slot_disk inverse");
            if (j >= 0 && j < m.nslots)
                seen_slot[j]++;
        }
        if (g->level != 1)
            CHECK(m.disk_role[m.data_disk[d]] == d, "disk_role inverse");
    }
    for (int j = 0; j < m.nslots; j++)
        CHECK(seen_slot[j] == 1 || (seen_slot[j] == 0 && m.slot_disk[j] < 0 && m.nslots == n),
              "slot %d used %d times", j, seen_slot[j]);
    if (m.p_disk >= 0)
        CHECK(m.disk_role[m.p_disk] == -LAYOUT_ROLE_P, "P role");
    if (m.q_disk >= 0)
        CHECK(m.disk_role[m.q_disk] == -LAYOUT_ROLE_Q, "Q role");
    if (g->level == 1)
        for (int i = 0; i < n; i++)
            CHECK(m.disk_role[i] == 0, "RAID-1 member %d mirrors data 0", i);
}

/* The geometries the exhaustive tests walk. */
static int member_counts(int level, int *out)
{
    int cnt = 0, lo = level == 6 ? 4 : (level == 4 || level == 5) ? 2 : 1;
    int hi = quick ? 16 : 20;
    for (int n = lo; n <= hi; n++)
        out[cnt++] = n;
    static const int big[] = {31, 32, 64, 127, 253, 254, 255, 256};
    for (int i = 0; i < NELEM(big); i++) {
        struct layout_geom g = geom(level, 2, big[i], 8);
        if (layout_check(&g, NULL, 0) == 0 && (!quick || big[i] < 64))
            out[cnt++] = big[i];
    }
    return cnt;
}

static int layouts_of(int level, const int **list)
{
    static const int none[] = {0};
    if (level == 5)
        return *list = raid5_layouts, NELEM(raid5_layouts);
    if (level == 6)
        return *list = raid6_layouts, NELEM(raid6_layouts);
    /* levels 0, 1 and 4 ignore the number: try a junk one too */
    static const int junk[] = {0, 1, 99};
    *list = level == 4 || level == 0 ? junk : none;
    return level == 4 || level == 0 ? NELEM(junk) : NELEM(none);
}

/* Calls fn on every geometry of the exhaustive walk with chunk size
 * `chunk` (sectors) that layout_check accepts (DDF stops at 253 members). */
static void for_each_geom(uint32_t chunk, void (*fn)(const struct layout_geom *))
{
    static const int levels[] = {0, 1, 4, 5, 6};
    int ns[64];
    for (int li = 0; li < NELEM(levels); li++) {
        const int *algs;
        int nalg = layouts_of(levels[li], &algs);
        int nn = member_counts(levels[li], ns);
        for (int a = 0; a < nalg; a++)
            for (int ni = 0; ni < nn; ni++) {
                struct layout_geom g = geom(levels[li], algs[a], ns[ni], chunk);
                if (layout_check(&g, NULL, 0) == 0)
                    fn(&g);
            }
    }
}

/* Two rotation periods and a few far-away stripes against the oracle. */
static void check_stripes(const struct layout_geom *g)
{
    for (uint64_t s = 0; s < (uint64_t)(2 * g->raid_disks + 3); s++)
        check_stripe(g, s);
    static const uint64_t far[] = {UINT64_MAX, UINT64_MAX - 1, 1ull << 40, (1ull << 63) + 12345};
    for (int i = 0; i < NELEM(far); i++)
        check_stripe(g, far[i]);
}

static void test_against_oracle(void)
{
    for_each_geom(128, check_stripes);
}

/* Every (member, member sector) of nstripes stripes is exactly one of data,
 * P or Q; the data ones map onto [0, nstripes*k*c) exactly once; and
 * layout_map is the inverse of layout_unmap. For large chunks only a few
 * offsets per chunk are walked (the mapping inside a chunk is linear). */
static void check_bijection(const struct layout_geom *g)
{
    int n = g->raid_disks, k = layout_data_disks(g), npar = layout_parity_count(g);
    uint32_t c = g->level == 1 ? 1 : g->chunk_sectors;
    uint32_t offs[16];
    int noff = 0;
    if (c <= 16)
        for (uint32_t o = 0; o < c; o++)
            offs[noff++] = o;
    else
        offs[noff++] = 0, offs[noff++] = 1, offs[noff++] = c / 2 + 3, offs[noff++] = c - 1;
    uint64_t nstripes = g->level == 1 ? 64 : (uint64_t)(2 * n + 1);
    uint64_t nchunks = nstripes * (uint64_t)k;
    unsigned char *seen = calloc(nchunks * (uint64_t)noff, 1);
    int fails = 0;
    for (uint64_t s = 0; s < nstripes; s++) {
        struct stripe_map m;
        layout_stripe(g, s, &m);
        for (int oi = 0; oi < noff; oi++) {
            int np = 0, nq = 0;
            for (int disk = 0; disk < n; disk++) {
                struct layout_addr a;
                uint64_t ms = s * c + offs[oi];
                int rc = layout_unmap(g, disk, ms, &a);
                if (rc || a.stripe != s || a.chunk_off != (g->level == 1 ? 0 : offs[oi]) ||
                    a.disk != disk || a.member_sector != ms) {
                    CHECK(0, "unmap level %d layout %d n %d disk %d sector %llu: rc %d", g->level,
                          g->layout, n, disk, (unsigned long long)ms, rc);
                    continue;
                }
                int expect_role = m.disk_role[disk] >= 0 ? LAYOUT_ROLE_DATA : -m.disk_role[disk];
                CHECK(a.role == expect_role, "unmap role %d, stripe map says %d", a.role,
                      expect_role);
                if (a.role == LAYOUT_ROLE_P) {
                    np++;
                    CHECK(a.d == -1 && a.array_sector == UINT64_MAX, "P has no array sector");
                    continue;
                }
                if (a.role == LAYOUT_ROLE_Q) {
                    nq++;
                    CHECK(a.d == -1 && a.array_sector == UINT64_MAX, "Q has no array sector");
                    continue;
                }
                CHECK(a.d == m.disk_role[disk], "unmap d %d, stripe map %d", a.d, m.disk_role[disk]);
                uint64_t chunk = a.array_sector / c;
                if (a.array_sector % c != offs[oi] || chunk >= nchunks) {
                    if (fails++ < 5)
                        CHECK(0, "level %d layout %d n %d: member %d sector %llu -> array %llu "
                              "out of range", g->level, g->layout, n, disk,
                              (unsigned long long)ms, (unsigned long long)a.array_sector);
                    continue;
                }
                /* RAID-1: every member holds every sector */
                if (g->level != 1 || disk == 0)
                    seen[chunk * noff + oi]++;
                struct layout_addr b;
                rc = layout_map(g, a.array_sector, &b);
                int mirror_ok = g->level == 1 && b.disk == 0;
                CHECK(rc == 0 && (b.disk == disk || mirror_ok) && b.member_sector == ms &&
                          b.stripe == s && b.d == a.d && b.role == LAYOUT_ROLE_DATA &&
                          b.array_sector == a.array_sector && b.chunk_off == a.chunk_off,
                      "map(unmap) level %d layout %d n %d member %d sector %llu: rc %d -> %d %llu",
                      g->level, g->layout, n, disk, (unsigned long long)ms, rc, b.disk,
                      (unsigned long long)b.member_sector);
            }
            CHECK(np == (npar >= 1) && nq == (npar == 2),
                  "level %d layout %d n %d stripe %llu: %d P and %d Q", g->level, g->layout, n,
                  (unsigned long long)s, np, nq);
        }
    }
    for (uint64_t i = 0; i < nchunks * (uint64_t)noff; i++)
        if (seen[i] != 1 && fails++ < 5)
            CHECK(0, "level %d layout %d n %d chunk %d: array sector %llu covered %d times",
                  g->level, g->layout, n, (int)c,
                  (unsigned long long)((i / noff) * c + offs[i % noff]), seen[i]);
    free(seen);
}

/* Large arrays: one chunk size is enough to cover a whole rotation
 * period at bounded cost. */
static void check_bijection_bounded(const struct layout_geom *g)
{
    if (g->raid_disks <= 20 || g->chunk_sectors == 1024)
        check_bijection(g);
}

static void test_bijection(void)
{
    static const uint32_t chunks_full[] = {8, 16, 128, 1024, 1u << 31};
    static const uint32_t chunks_quick[] = {8, 16, 1024};
    const uint32_t *chunks = quick ? chunks_quick : chunks_full;
    int nchunk = quick ? NELEM(chunks_quick) : NELEM(chunks_full);
    for (int ci = 0; ci < nchunk; ci++)
        for_each_geom(chunks[ci], check_bijection_bounded);
}

/* Far-away sectors round-trip, and addresses past 64 bits are refused. */
static void test_far_sectors(void)
{
    static const int levels[] = {0, 1, 4, 5, 6};
    for (int li = 0; li < NELEM(levels); li++) {
        const int *algs;
        int nalg = layouts_of(levels[li], &algs);
        for (int a = 0; a < nalg; a++)
            for (int t = 0; t < 2000; t++) {
                int n = 4 + (int)rng_below(&rng, 30);
                uint32_t c = 8u << rng_below(&rng, 20);
                struct layout_geom g = geom(levels[li], algs[a], n, c);
                uint64_t S = rng_next(&rng) >> rng_below(&rng, 8);
                if (t == 0)
                    S = UINT64_MAX;
                struct layout_addr x, y;
                int rc = layout_map(&g, S, &x);
                CHECK(rc == 0, "map rc %d", rc);
                rc = layout_unmap(&g, x.disk, x.member_sector, &y);
                CHECK(rc == 0 && y.array_sector == S && y.role == LAYOUT_ROLE_DATA && y.d == x.d &&
                          y.stripe == x.stripe,
                      "level %d layout %d n %d c %u S %llu: rc %d back %llu", g.level, g.layout, n,
                      c, (unsigned long long)S, rc, (unsigned long long)y.array_sector);
            }
    }
    /* The last member sector of a RAID-5 member has no 64-bit array sector
     * unless it is parity. */
    struct layout_geom g = geom(5, 2, 4, 8);
    int overflow = 0;
    for (int disk = 0; disk < 4; disk++) {
        struct layout_addr a;
        int rc = layout_unmap(&g, disk, UINT64_MAX, &a);
        if (rc == -EOVERFLOW)
            overflow++;
        else
            CHECK(rc == 0 && a.role == LAYOUT_ROLE_P, "disk %d rc %d role %d", disk, rc, a.role);
    }
    CHECK(overflow == 3, "3 data members overflow, got %d", overflow);
}

/* ---- the reference tables ------------------------------------------------ */

static void test_examples_file(void)
{
    const char *path = "../shared/reference/layout-examples.txt";
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s (run from the project root)", path);
    if (!f)
        return;
    char line[512];
    int level = -1, alg = -1, rows = 0, tables = 0;
    while (fgets(line, sizeof line, f)) {
        int lv, al;
        if (sscanf(line, " raid%d alg %d:", &lv, &al) == 2) {
            level = lv, alg = al, tables++;
            continue;
        }
        unsigned long long s;
        int used;
        if (sscanf(line, " s%llu:%n", &s, &used) != 1) {
            CHECK(line[0] == '\n' || line[0] == '#', "unparsed line: %s", line);
            continue;
        }
        CHECK(level >= 0, "row before any table header");
        char *tok[LAYOUT_MAX_DISKS];
        int n = 0;
        for (char *t = strtok(line + used, " \t\n"); t && n < LAYOUT_MAX_DISKS; t = strtok(NULL, " \t\n"))
            tok[n++] = t;
        struct layout_geom g = geom(level, alg, n, 8);
        struct stripe_map m;
        int rc = layout_stripe(&g, s, &m);
        CHECK(rc == 0, "raid%d alg %d n %d: rc %d", level, alg, n, rc);
        if (rc)
            continue;
        rows++;
        for (int disk = 0; disk < n; disk++) {
            char want[16];
            int r = m.disk_role[disk];
            if (r == -LAYOUT_ROLE_P)
                snprintf(want, sizeof want, "P");
            else if (r == -LAYOUT_ROLE_Q)
                snprintf(want, sizeof want, "Q");
            else /* the file numbers chunks over the whole array: D(s*k + d) */
                snprintf(want, sizeof want, "D%llu", s * (unsigned long long)m.k + (unsigned)r);
            CHECK(!strcmp(want, tok[disk]), "raid%d alg %d stripe %llu member %d: file %s, ours %s",
                  level, alg, s, disk, tok[disk], want);
        }
    }
    fclose(f);
    /* 6 RAID-5 + 14 RAID-6 layouts, 5 stripes each */
    CHECK(tables == 20 && rows == 100, "parsed %d tables, %d rows", tables, rows);
}

static void test_qslot_examples(void)
{
    /* md-format.md section 2: layout 0, n=5, stripe 2 "D6 D7 P Q D8":
     * D8 -> slot 0, D6 -> 1, D7 -> 2. */
    struct layout_geom g = geom(6, 0, 5, 8);
    struct stripe_map m;
    CHECK(layout_stripe(&g, 2, &m) == 0, "rc");
    CHECK(m.data_disk[0] == 0 && m.data_disk[1] == 1 && m.data_disk[2] == 4, "D6 D7 . . D8");
    CHECK(m.q_slot[0] == 1 && m.q_slot[1] == 2 && m.q_slot[2] == 0, "slots %d %d %d", m.q_slot[0],
          m.q_slot[1], m.q_slot[2]);
    CHECK(m.slot_disk[0] == 4 && m.slot_disk[1] == 0 && m.slot_disk[2] == 1, "slot_disk");
    /* layout 18, n=5, stripe 1 "D4 D5 P D3 Q": D4 -> 0, D5 -> 1, D3 -> 2. */
    g = geom(6, 18, 5, 8);
    CHECK(layout_stripe(&g, 1, &m) == 0, "rc");
    CHECK(m.data_disk[0] == 3 && m.data_disk[1] == 0 && m.data_disk[2] == 1, "D4 D5 P D3 Q");
    CHECK(m.q_slot[0] == 2 && m.q_slot[1] == 0 && m.q_slot[2] == 1, "slots %d %d %d", m.q_slot[0],
          m.q_slot[1], m.q_slot[2]);

    /* Which stripes have slot != d (md-format.md): layout 0: s mod n in
     * 2..n-2; layout 1: 1..n-3; layouts 18, 19: s mod (n-1) in 1..n-3;
     * never for 2, 3, 4, 5, 16, 17, 20. Checked here for every n. */
    for (int n = 4; n <= 24; n++)
        for (int a = 0; a < NELEM(raid6_layouts); a++) {
            int alg = raid6_layouts[a];
            if (alg >= 8 && alg <= 10)
                continue;
            g = geom(6, alg, n, 8);
            for (uint64_t s = 0; s < (uint64_t)(3 * n); s++) {
                CHECK(layout_stripe(&g, s, &m) == 0, "rc");
                int differs = 0;
                for (int d = 0; d < m.k; d++)
                    differs |= m.q_slot[d] != d;
                int sn = (int)(s % (uint64_t)n), sn1 = (int)(s % (uint64_t)(n - 1));
                int expect = alg == 0    ? sn >= 2 && sn <= n - 2
                             : alg == 1  ? sn >= 1 && sn <= n - 3
                             : alg == 18 || alg == 19 ? sn1 >= 1 && sn1 <= n - 3
                                                      : 0;
                CHECK(differs == expect, "layout %d n %d stripe %llu: slot != d is %d", alg, n,
                      (unsigned long long)s, differs);
            }
        }
    /* DDF: slot is the member number, P and Q are zero slots. */
    g = geom(6, 10, 5, 8);
    CHECK(layout_stripe(&g, 1, &m) == 0, "rc");
    CHECK(m.nslots == 5 && m.slot_disk[2] == -1 && m.slot_disk[3] == -1 && m.slot_disk[4] == 4 &&
              m.q_slot[0] == 4 && m.q_slot[1] == 0 && m.q_slot[2] == 1,
          "ddf-N-continue stripe 1 \"D4 D5 Q P D3\"");
}

/* Feeding the parity engine nslots blocks in slot order gives Q as its
 * definition says: sum of g^slot * D over md slots, or g^member over DDF. */
static void test_feed_parity_engine(void)
{
    enum { LEN = 512 };
    for (int a = 0; a < NELEM(raid6_layouts); a++)
        for (int n = 4; n <= 9; n++) {
            struct layout_geom g = geom(6, raid6_layouts[a], n, 8);
            struct oracle o;
            struct stripe_map m;
            uint64_t s = rng_below(&rng, 1000);
            layout_stripe(&g, s, &m);
            oracle_row(6, g.layout, n, s, &o);
            static uint8_t member[LAYOUT_MAX_DISKS][LEN], zero[LEN], p[LEN], q[LEN];
            const void *blocks[LAYOUT_MAX_DISKS];
            for (int i = 0; i < n; i++)
                rng_fill(&rng, member[i], LEN);
            for (int j = 0; j < m.nslots; j++)
                blocks[j] = m.slot_disk[j] < 0 ? zero : member[m.slot_disk[j]];
            CHECK(uraid_gen_pq(m.nslots, LEN, blocks, p, q) == 0, "gen_pq");
            int bad = 0;
            for (int b = 0; b < LEN; b++) {
                uint8_t wp = 0, wq = 0;
                for (int d = 0; d < o.k; d++) {
                    uint8_t v = member[o.data_disk[d]][b];
                    wp ^= v;
                    wq ^= uraid_gf_mul(uraid_gf_pow2(o.q_slot[d]), v);
                }
                bad += wp != p[b] || wq != q[b];
            }
            CHECK(bad == 0, "layout %d n %d stripe %llu: %d bytes differ", g.layout, n,
                  (unsigned long long)s, bad);
        }
}

/* ---- validation, names, sizes ------------------------------------------- */

static void expect_check(int level, int layout, int n, uint32_t c, int ok)
{
    struct layout_geom g = geom(level, layout, n, c);
    char why[128] = "untouched";
    int rc = layout_check(&g, why, sizeof why);
    if (ok)
        CHECK(rc == 0 && why[0] == '\0', "level %d layout %d n %d c %u: rc %d (%s)", level, layout,
              n, c, rc, why);
    else
        CHECK(rc == -EINVAL && why[0] && strcmp(why, "untouched") && !strchr(why, '\n'),
              "level %d layout %d n %d c %u should be refused: rc %d (%s)", level, layout, n, c, rc,
              why);
}

static void test_validation(void)
{
    expect_check(0, 0, 1, 8, 1);
    expect_check(0, 0, 0, 8, 0);
    expect_check(1, 0, 1, 0, 1); /* RAID-1 has no chunk */
    expect_check(1, 0, 0, 0, 0);
    expect_check(4, 0, 2, 8, 1);
    expect_check(4, 0, 1, 8, 0);
    expect_check(4, 77, 3, 8, 1); /* the field is ignored for RAID-4 */
    expect_check(5, 2, 2, 8, 1);
    expect_check(5, 2, 1, 8, 0);
    expect_check(6, 2, 4, 8, 1);
    expect_check(6, 2, 3, 8, 0);
    expect_check(5, 2, 254, 8, 1);
    expect_check(5, 2, 255, 8, 0);
    expect_check(6, 2, 255, 8, 1);
    expect_check(6, 2, 256, 8, 0);
    expect_check(6, 9, 253, 8, 1);
    expect_check(6, 9, 254, 8, 0);
    expect_check(0, 0, 256, 8, 1);
    expect_check(0, 0, 257, 8, 0);
    expect_check(2, 0, 4, 8, 0);
    expect_check(10, 0, 4, 8, 0);     /* no copies */
    expect_check(10, 0x102, 4, 8, 1); /* n2 */
    expect_check(10, 0x103, 2, 8, 0); /* n3 on 2 members */
    expect_check(10, 0x10201, 3, 4, 0); /* o2, chunk below 4 KiB */
    expect_check(-1, 0, 4, 0, 1);     /* linear: no chunk needed */
    expect_check(-2, 0, 4, 8, 0);
    expect_check(5, 2, 4, 4, 0);    /* below 4 KiB */
    expect_check(5, 2, 4, 0, 0);
    expect_check(5, 2, 4, 24, 0);   /* not a power of two */
    expect_check(0, 0, 4, 12, 0);
    expect_check(5, 2, 4, 1u << 31, 1);
    for (int l = -2; l < 40; l++) {
        int v5 = l >= 0 && l <= 5;
        int v6 = v5 || (l >= 8 && l <= 10) || (l >= 16 && l <= 20);
        expect_check(5, l, 4, 128, v5);
        expect_check(6, l, 5, 128, v6);
        CHECK(layout_valid(5, l) == v5 && layout_valid(6, l) == v6, "layout_valid %d", l);
    }
    struct stripe_map m;
    struct layout_addr a;
    struct layout_geom bad = geom(6, 7, 5, 8);
    CHECK(layout_stripe(&bad, 0, &m) == -EINVAL && layout_map(&bad, 0, &a) == -EINVAL &&
              layout_unmap(&bad, 0, 0, &a) == -EINVAL && layout_data_disks(&bad) == -EINVAL,
          "every call refuses a bad geometry");
    CHECK(layout_check(NULL, NULL, 0) == -EINVAL, "NULL geometry");
    struct layout_geom ok = geom(5, 2, 4, 8);
    CHECK(layout_unmap(&ok, 4, 0, &a) == -EINVAL && layout_unmap(&ok, -1, 0, &a) == -EINVAL,
          "member out of range");
    CHECK(layout_stripe(&ok, 0, NULL) == -EINVAL && layout_map(&ok, 0, NULL) == -EINVAL, "NULL out");
}

static void test_names(void)
{
    static const struct { const char *name; int level, number; } t[] = {
        {"left-asymmetric", 5, 0}, {"right-asymmetric", 5, 1}, {"left-symmetric", 5, 2},
        {"right-symmetric", 5, 3}, {"parity-first", 5, 4},    {"parity-last", 5, 5},
        {"la", 5, 0}, {"ra", 5, 1}, {"ls", 5, 2}, {"rs", 5, 3}, {"default", 5, 2},
        {"left-asymmetric", 6, 0}, {"right-asymmetric", 6, 1}, {"left-symmetric", 6, 2},
        {"right-symmetric", 6, 3}, {"parity-first", 6, 4},    {"parity-last", 6, 5},
        {"ddf-zero-restart", 6, 8}, {"ddf-N-restart", 6, 9},  {"ddf-N-continue", 6, 10},
        {"left-asymmetric-6", 6, 16}, {"right-asymmetric-6", 6, 17}, {"left-symmetric-6", 6, 18},
        {"right-symmetric-6", 6, 19}, {"parity-first-6", 6, 20}, {"ls", 6, 2}, {"default", 6, 2},
        {"LEFT-SYMMETRIC", 5, 2}, {"ddf-n-restart", 6, 9},
        {"parity-last", 4, 0}, {"default", 4, 0},
    };
    for (int i = 0; i < NELEM(t); i++)
        CHECK(layout_from_name(t[i].level, t[i].name) == t[i].number, "%s for RAID-%d", t[i].name,
              t[i].level);
    static const struct { const char *name; int level; } bad[] = {
        {"ddf-zero-restart", 5}, {"left-symmetric-6", 5}, {"parity-first-6", 5}, {"", 5},
        {"left-symmetric", 4}, {"left-symmetric", 0}, {"left-symmetric", 1}, {"symmetric", 6},
        {"left-symmetric ", 6},
    };
    for (int i = 0; i < NELEM(bad); i++)
        CHECK(layout_from_name(bad[i].level, bad[i].name) == -EINVAL, "'%s' refused for RAID-%d",
              bad[i].name, bad[i].level);
    CHECK(layout_from_name(5, NULL) == -EINVAL, "NULL name");
    /* Every valid number has a long name that maps back to it. */
    for (int level = 5; level <= 6; level++)
        for (int l = 0; l < 32; l++) {
            const char *nm = layout_name(level, l);
            CHECK(!!nm == layout_valid(level, l), "name of %d/%d", level, l);
            if (nm)
                CHECK(layout_from_name(level, nm) == l && strlen(nm) > 2, "%s round trip", nm);
        }
    CHECK(!strcmp(layout_name(4, 0), "parity-last") && !strcmp(layout_name(4, 5), "parity-last"),
          "RAID-4 is parity-last whatever the field says");
    CHECK(layout_name(0, 0) == NULL && layout_name(1, 0) == NULL, "RAID-0/1 have no layout");
    CHECK(!strcmp(layout_name(6, 9), "ddf-N-restart"), "mdadm's capitalisation");
}

static void test_sizes(void)
{
    static const struct { int level, n, k, par; } t[] = {
        {0, 3, 3, 0}, {1, 2, 1, 0}, {1, 5, 1, 0}, {4, 5, 4, 1}, {5, 2, 1, 1}, {5, 4, 3, 1},
        {6, 4, 2, 2}, {6, 16, 14, 2},
    };
    for (int i = 0; i < NELEM(t); i++) {
        struct layout_geom g = geom(t[i].level, 2, t[i].n, 128);
        CHECK(layout_data_disks(&g) == t[i].k && layout_parity_count(&g) == t[i].par,
              "level %d n %d", t[i].level, t[i].n);
    }
    uint64_t as;
    struct layout_geom g = geom(5, 2, 4, 128);
    CHECK(layout_array_sectors(&g, 6144 + 100, &as) == 0 && as == 18432, "RAID-5 rounds to chunks");
    g = geom(6, 2, 6, 128);
    CHECK(layout_array_sectors(&g, 6144, &as) == 0 && as == 24576, "fixture b size");
    g = geom(1, 0, 2, 0);
    CHECK(layout_array_sectors(&g, 6145, &as) == 0 && as == 6145, "RAID-1 keeps odd sizes");
    g = geom(0, 0, 3, 128);
    CHECK(layout_array_sectors(&g, 6144, &as) == 0 && as == 18432, "fixture f size");
    CHECK(layout_array_sectors(&g, UINT64_MAX, &as) == -EOVERFLOW, "overflow");
    /* RAID-4 is RAID-5 parity-last whatever its layout field holds. */
    struct layout_geom r4 = geom(4, 0, 5, 16), r5 = geom(5, 5, 5, 16);
    for (uint64_t S = 0; S < 5000; S += 7) {
        struct layout_addr a, b;
        layout_map(&r4, S, &a);
        layout_map(&r5, S, &b);
        CHECK(a.disk == b.disk && a.member_sector == b.member_sector, "RAID-4 sector %llu",
              (unsigned long long)S);
    }
    /* Left-symmetric reads run across all members in turn. */
    g = geom(5, 2, 7, 8);
    struct layout_addr prev, cur;
    layout_map(&g, 0, &prev);
    for (uint64_t ch = 1; ch < 200; ch++) {
        layout_map(&g, ch * 8, &cur);
        int next = (prev.disk + 1) % 7;
        CHECK(cur.disk == next, "chunk %llu on member %d after %d",
              (unsigned long long)ch, cur.disk, prev.disk);
        prev = cur;
    }
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_layout");
    rng_seed(&rng, harness_seed());
    quick = getenv("URAID_TEST_QUICK") != NULL;

    harness_begin("stripe maps equal the table-shaped oracle");
    test_against_oracle();
    harness_end();
    harness_begin("every layout is a bijection; every member sector is data, P or Q");
    test_bijection();
    harness_end();
    harness_begin("far sectors round-trip; 64-bit overflow refused");
    test_far_sectors();
    harness_end();
    harness_begin("maps equal ../shared/reference/layout-examples.txt");
    test_examples_file();
    harness_end();
    harness_begin("Q slot order: md-format.md examples and slot != d stripes");
    test_qslot_examples();
    harness_end();
    harness_begin("slot order feeds the parity engine to Q's definition");
    test_feed_parity_engine();
    harness_end();
    harness_begin("layout_check refuses what md refuses, with a reason");
    test_validation();
    harness_end();
    harness_begin("layout names <-> numbers");
    test_names();
    harness_end();
    harness_begin("data/parity counts, array size, RAID-4, sequential runs");
    test_sizes();
    harness_end();
    return harness_finish();
}
