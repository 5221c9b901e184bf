/* Randomised model test of the array API: every level and layout (RAID-0,
 * RAID-1, RAID-4, RAID-5 layouts 0-5, RAID-6 layouts 0-5, 8-10, 16-20), a
 * few member counts and chunk sizes each. Members are sparse files in a
 * mkdtemp directory; the array is created with its initial sync. Random
 * reads and writes (multiples of 512, crossing chunk and stripe boundaries,
 * up to a few stripes long, misaligned buffers) are compared with a plain
 * in-memory copy of the array. Between rounds the array is closed and
 * reopened: members in shuffled order, members removed up to the level's
 * redundancy (reads only, so they come back in sync, or with writes, after
 * which they are stale for good: md's rule), stale members given anyway
 * (assembly must leave them out), read-only opens.
 *
 * Prints its seed; URAID_TEST_SEED=N replays. URAID_TEST_QUICK=1 (the
 * sanitizer build) shrinks the work; URAID_TEST_LONG=1 is a soak run
 * (URAID_TEST_LONG=N repeats the whole suite N times with new configs). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"
#include "meta/superblock.h"
#include "uraid.h"

static struct rng rng;
static int quick, longrun;
/* what the run exercised, printed at the end */
static struct {
    unsigned long opens, degraded_opens, stale_given, readonly_opens, writes, degraded_writes, reads, degraded_reads;
} st;
static int cur_degraded;

struct cfg {
    int level, layout, n;
    uint32_t chunk;
    uint64_t member_bytes;
};

struct model {
    struct cfg c;
    char dir[256];
    char path[16][300];
    int gone[16];          /* missed writes while left out: stale for good */
    uint8_t *data;         /* what the array holds */
    uint64_t size;
    uint64_t stripe_bytes; /* k * chunk (RAID-1: chunk) */
    char label[160];
    int failed;            /* stop this config after the first broken step */
};

static int redundancy(int level, int n)
{
    return level == 0 ? 0 : level == 1 ? n - 1 : level == 6 ? 2 : 1;
}

static int data_disks(int level, int n)
{
    return level == 0 ? n : level == 1 ? 1 : level == 6 ? n - 2 : n - 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail_step(struct model *m) { m->failed = 1; }

/* ---- I/O against the array and the model ------------------------------------ */

static void pick_range(struct model *m, uint64_t *off, uint64_t *len)
{
    uint64_t chunk = m->c.chunk, stripe = m->stripe_bytes, size = m->size;
    uint64_t l;
    switch (rng_below(&rng, 5)) {
    case 0: l = (1 + rng_below(&rng, 8)) * 512; break;
    case 1: l = (1 + rng_below(&rng, 2 * chunk / 512)) * 512; break;
    case 2: l = (1 + rng_below(&rng, 3 * stripe / 512)) * 512; break;
    case 3: l = (1 + rng_below(&rng, 3)) * (rng_below(&rng, 2) ? chunk : stripe); break;
    default: l = (1 + rng_below(&rng, stripe / 512)) * 512; break;
    }
    uint64_t o;
    switch (rng_below(&rng, 4)) {
    case 0: o = rng_below(&rng, size / 512) * 512; break;
    case 1: /* just before a chunk boundary */
        o = rng_below(&rng, size / chunk) * chunk;
        o = o >= 512 * 4 ? o - 512 * rng_below(&rng, 4) : o;
        break;
    case 2: o = rng_below(&rng, size / stripe) * stripe; break;
    default: /* just before a stripe boundary */
        o = (1 + rng_below(&rng, size / stripe)) * stripe - 512 * (1 + rng_below(&rng, 8));
        break;
    }
    if (o >= size)
        o = size - 512;
    if (l > size - o)
        l = size - o;
    *off = o;
    *len = l;
}

static void compare(struct model *m, const uint8_t *got, uint64_t off, uint64_t len, const char *what)
{
    if (!memcmp(got, m->data + off, len))
        return;
    uint64_t i = 0;
    while (got[i] == m->data[off + i])
        i++;
    CHECK(0, "%s: %s of %llu bytes at %llu differs first at array byte %llu (chunk %llu, +%llu)", m->label, what,
          (unsigned long long)len, (unsigned long long)off, (unsigned long long)(off + i),
          (unsigned long long)((off + i) / m->c.chunk), (unsigned long long)((off + i) % m->c.chunk));
    fail_step(m);
}

/* One read or write (random data) from a buffer misaligned half of the
 * time, since callers' buffers need not be aligned; the model follows a
 * write, a read is compared with it. */
static int do_io(struct uraid_array *a, struct model *m, uint64_t off, uint64_t len, int write)
{
    size_t mis = rng_below(&rng, 2) ? 0 : 1 + rng_below(&rng, 63);
    uint8_t *mem = malloc(len + 64), *buf = mem + mis;
    if (write)
        rng_fill(&rng, buf, len);
    int rc = write ? uraid_write(a, buf, len, off) : uraid_read(a, buf, len, off);
    unsigned long *count = write ? &st.writes : &st.reads, *degraded = write ? &st.degraded_writes : &st.degraded_reads;
    ++*count;
    *degraded += cur_degraded > 0;
    CHECK(rc == 0, "%s: %s %llu at %llu: %d", m->label, write ? "write" : "read", (unsigned long long)len,
          (unsigned long long)off, rc);
    if (rc)
        fail_step(m);
    else if (write)
        memcpy(m->data + off, buf, len);
    else
        compare(m, buf, off, len, "read");
    free(mem);
    return rc;
}

/* Reads the whole array in random-sized pieces. */
static void verify_all(struct uraid_array *a, struct model *m)
{
    uint64_t off = 0;
    while (off < m->size && !m->failed) {
        uint64_t len = (1 + rng_below(&rng, 4 * m->stripe_bytes / 512)) * 512;
        if (len > m->size - off)
            len = m->size - off;
        do_io(a, m, off, len, 0);
        off += len;
    }
}

/* ---- superblocks on disk ----------------------------------------------------- */

/* After a clean close: every member still in the array is clean and at the
 * same events; every stale member lags by more than one. */
static void check_superblocks(struct model *m)
{
    struct md_sb sb;
    uint64_t events = 0;
    for (int s = 0; s < m->c.n; s++) {
        if (m->gone[s])
            continue;
        int rc = fx_read_sb_path(m->path[s], &sb);
        CHECK(rc == 0, "%s: superblock of %s: %d", m->label, m->path[s], rc);
        if (rc)
            continue;
        CHECK(sb.resync_offset == MD_RESYNC_CLEAN, "%s: %s not clean after close (resync_offset %llu)", m->label,
              m->path[s], (unsigned long long)sb.resync_offset);
        if (!events)
            events = sb.events;
        CHECK(sb.events == events, "%s: %s events %llu, others %llu", m->label, m->path[s],
              (unsigned long long)sb.events, (unsigned long long)events);
    }
    for (int s = 0; s < m->c.n; s++)
        if (m->gone[s] && fx_read_sb_path(m->path[s], &sb) == 0)
            CHECK(sb.events + 1 < events, "%s: stale %s events %llu, array %llu", m->label, m->path[s],
                  (unsigned long long)sb.events, (unsigned long long)events);
}

/* ---- one configuration ------------------------------------------------------- */

static void shuffle(const char **v, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(&rng, (uint64_t)i + 1);
        const char *t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* Opens with the given removals and checks what assembly made of it. */
static struct uraid_array *open_round(struct model *m, const int *removed, int give_gone, int readonly)
{
    const char *given[16];
    int ng = 0;
    for (int s = 0; s < m->c.n; s++)
        if ((!removed[s] && !m->gone[s]) || (m->gone[s] && give_gone))
            given[ng++] = m->path[s];
    shuffle(given, ng);
    struct uraid_open_params op = {.readonly = readonly};
    struct uraid_array *a = NULL;
    char why[512];
    int rc = uraid_open(given, ng, &op, &a, why, sizeof why);
    CHECK(rc == 0, "%s: open with %d members: %d (%s)", m->label, ng, rc, why);
    if (rc) {
        fail_step(m);
        return NULL;
    }
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    int expect_degraded = 0;
    for (int s = 0; s < m->c.n; s++) {
        int in = !removed[s] && !m->gone[s];
        expect_degraded += !in;
        enum uraid_member_state want = in ? URAID_MEMBER_IN_SYNC : URAID_MEMBER_MISSING;
        CHECK(info.member[s].slot == s && info.member[s].state == want, "%s: slot %d state %d, expected %d",
              m->label, s, info.member[s].state, want);
        if (in)
            CHECK(!strcmp(info.member[s].path, m->path[s]), "%s: slot %d is %s, expected %s", m->label, s,
                  info.member[s].path, m->path[s]);
    }
    cur_degraded = expect_degraded;
    st.opens++;
    st.degraded_opens += expect_degraded > 0;
    st.readonly_opens += readonly;
    CHECK(info.degraded == expect_degraded, "%s: degraded %d, expected %d", m->label, info.degraded,
          expect_degraded);
    CHECK(info.clean == 1, "%s: not clean at open", m->label);
    CHECK(!m->size || info.size_bytes == m->size, "%s: size %llu, was %llu", m->label, (unsigned long long)info.size_bytes,
          (unsigned long long)m->size);
    int stale = 0;
    for (int e = m->c.n; e < info.nmembers; e++) {
        CHECK(info.member[e].state == URAID_MEMBER_STALE && info.member[e].slot == -1,
              "%s: extra member %s state %d slot %d", m->label, info.member[e].path, info.member[e].state,
              info.member[e].slot);
        stale++;
    }
    int expect_stale = 0;
    for (int s = 0; s < m->c.n; s++)
        expect_stale += m->gone[s] && give_gone;
    st.stale_given += expect_stale > 0;
    CHECK(stale == expect_stale, "%s: %d stale members reported, %d given", m->label, stale, expect_stale);
    return a;
}

static int make_members(struct model *m)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(m->dir, sizeof m->dir, "%s/uraid-model-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(m->dir))
        return -errno;
    for (int s = 0; s < m->c.n; s++) {
        snprintf(m->path[s], sizeof m->path[s], "%s/m%d.img", m->dir, s);
        int fd = open(m->path[s], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0)
            return -errno;
        int rc = ftruncate(fd, (off_t)m->c.member_bytes) ? -errno : 0;
        close(fd);
        if (rc)
            return rc;
    }
    return 0;
}

static void remove_members(struct model *m)
{
    for (int s = 0; s < m->c.n; s++)
        unlink(m->path[s]);
    rmdir(m->dir);
}

static void run_config(const struct cfg *c, int rounds, int ops)
{
    static struct model mm;
    struct model *m = &mm;
    memset(m, 0, sizeof *m);
    m->c = *c;
    snprintf(m->label, sizeof m->label, "RAID-%d layout %d n=%d chunk %uK member %lluK", c->level, c->layout, c->n,
             c->chunk / 1024, (unsigned long long)(c->member_bytes / 1024));
    harness_begin(m->label);
    int rc = make_members(m);
    CHECK(rc == 0, "%s: members: %d", m->label, rc);
    if (rc) {
        harness_end();
        return;
    }
    const char *paths[16];
    for (int s = 0; s < c->n; s++)
        paths[s] = m->path[s];
    struct uraid_create_params cp = {
        .level = c->level,
        .raid_devices = c->n,
        .chunk_bytes = c->chunk,
        .layout = c->level >= 5 ? c->layout : 0,
        .name = "model",
        .homehost = "test",
        .assume_clean = 0,
    };
    char why[512];
    rc = uraid_create(paths, c->n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "%s: create: %d (%s)", m->label, rc, why);
    if (rc)
        goto out;

    int removed[16] = {0};
    struct uraid_array *a = open_round(m, removed, 0, 0);
    if (!a)
        goto out;
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    m->size = info.size_bytes;
    m->stripe_bytes = (uint64_t)data_disks(c->level, c->n) * c->chunk;
    if (c->level == 1)
        m->stripe_bytes = c->chunk;
    CHECK(info.level == c->level && info.raid_devices == c->n, "%s: info level %d n %d", m->label, info.level,
          info.raid_devices);
    if (c->level >= 5)
        CHECK(info.layout == c->layout, "%s: info layout %d", m->label, info.layout);
    if (c->level != 1)
        CHECK(info.chunk_bytes == c->chunk, "%s: info chunk %u", m->label, info.chunk_bytes);
    CHECK(m->size >= 2 * m->stripe_bytes && m->size % 512 == 0, "%s: size %llu", m->label,
          (unsigned long long)m->size);
    m->size = m->size / 512 * 512;
    m->data = calloc(1, m->size);
    verify_all(a, m); /* a new array reads as zeros */
    rc = uraid_close(a);
    CHECK(rc == 0, "%s: close: %d", m->label, rc);

    int red = redundancy(c->level, c->n);
    for (int round = 0; round < rounds && !m->failed; round++) {
        int ngone = 0;
        for (int s = 0; s < c->n; s++)
            ngone += m->gone[s];
        int avail = red - ngone, r = 0;
        memset(removed, 0, sizeof removed);
        /* the second-to-last round always runs as degraded as the level allows, with writes */
        int last_stand = round == rounds - 2;
        if (avail > 0 && (last_stand || rng_below(&rng, 2)))
            r = last_stand ? avail : 1 + (int)rng_below(&rng, (uint64_t)avail);
        for (int i = 0; i < r;) {
            int s = (int)rng_below(&rng, (uint64_t)c->n);
            if (!removed[s] && !m->gone[s]) {
                removed[s] = 1;
                i++;
            }
        }
        int writes = r == 0 || last_stand || rng_below(&rng, 3) == 0;
        int readonly = !writes || rng_below(&rng, 8) == 0;
        if (readonly && r == 0 && rng_below(&rng, 2))
            readonly = 0, writes = 1;
        int give_gone = ngone && rng_below(&rng, 2);
        a = open_round(m, removed, give_gone, readonly);
        if (!a)
            break;
        if (round == 0 || rng_below(&rng, 3) == 0 || r || give_gone)
            verify_all(a, m);
        int wrote = 0;
        for (int i = 0; i < ops && !m->failed; i++) {
            uint64_t off, len;
            pick_range(m, &off, &len);
            if ((i == 0 || rng_below(&rng, 2)) && writes && !readonly) {
                wrote |= do_io(a, m, off, len, 1) == 0;
            } else if (readonly && rng_below(&rng, 16) == 0) {
                uint8_t b[512] = {0};
                rc = uraid_write(a, b, sizeof b, off);
                CHECK(rc == -EROFS, "%s: write to a read-only array: %d", m->label, rc);
            } else {
                do_io(a, m, off, len, 0);
            }
        }
        if (wrote) {
            uraid_get_info(a, &info);
            CHECK(info.clean == 0, "%s: not dirty after a write", m->label);
        }
        rc = uraid_close(a);
        CHECK(rc == 0, "%s: close: %d", m->label, rc);
        if (wrote)
            for (int s = 0; s < c->n; s++)
                m->gone[s] |= removed[s];
        check_superblocks(m);
    }
    /* finally everything once more, with every member given */
    if (!m->failed) {
        memset(removed, 0, sizeof removed);
        int ngone = 0;
        for (int s = 0; s < c->n; s++)
            ngone += m->gone[s];
        a = open_round(m, removed, ngone > 0, 1);
        if (a) {
            verify_all(a, m);
            CHECK(uraid_close(a) == 0);
        }
    }
out:
    free(m->data);
    remove_members(m);
    harness_end();
}

/* ---- the configurations ------------------------------------------------------ */

struct level_spec {
    int level, nlo, nhi;
    const int *layouts;
    int nlayouts;
    int reps;
};

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_array_model");
    rng_seed(&rng, harness_seed());
    quick = getenv("URAID_TEST_QUICK") != NULL;
    const char *lv = getenv("URAID_TEST_LONG");
    longrun = lv && *lv ? atoi(lv) : 0;
    if (longrun == 1)
        longrun = 10;

    static const int zero[] = {0};
    static const int raid5[] = {0, 1, 2, 3, 4, 5};
    static const int raid6[] = {0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20};
    const struct level_spec specs[] = {
        {0, 2, 4, zero, 1, 3},
        {1, 2, 4, zero, 1, 3},
        {4, 3, 6, zero, 1, 3},
        {5, 3, 7, raid5, 6, 2},
        {6, 4, 8, raid6, 14, 2},
    };
    static const uint32_t chunks[] = {4096, 8192, 65536};
    int rounds = quick ? 6 : longrun ? 16 : 10;
    int ops = quick ? 30 : longrun ? 150 : 80;
    int passes = longrun ? longrun : 1;
    double t0 = now();
    for (int pass = 0; pass < passes; pass++) {
        for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
            const struct level_spec *sp = &specs[i];
            int span = sp->nhi - sp->nlo + 1;
            int nbase = (int)rng_below(&rng, (uint64_t)span);
            for (int l = 0; l < sp->nlayouts; l++) {
                int reps = quick && sp->nlayouts > 1 ? 1 : sp->reps;
                for (int rep = 0; rep < reps; rep++) {
                    struct cfg c = {
                        .level = sp->level,
                        .layout = sp->layouts[l],
                        /* walk the member counts so every count of a level is met */
                        .n = sp->nlo + (nbase + l * sp->reps + rep) % span,
                        .chunk = chunks[rng_below(&rng, 3)],
                    };
                    uint64_t mib = quick ? 2 : 2 + rng_below(&rng, longrun ? 7 : 5);
                    /* sometimes a size that is not a whole number of chunks */
                    c.member_bytes = (mib << 20) + (rng_below(&rng, 2) ? 512 * rng_below(&rng, 200) : 0);
                    run_config(&c, rounds, ops);
                }
            }
        }
    }
    printf("test_array_model: %.1f s; %lu opens (%lu degraded, %lu with stale members given, %lu read-only), "
           "%lu writes (%lu degraded), %lu reads (%lu degraded)\n",
           now() - t0, st.opens, st.degraded_opens, st.stale_given, st.readonly_opens, st.writes, st.degraded_writes,
           st.reads, st.degraded_reads);
    return harness_finish();
}
