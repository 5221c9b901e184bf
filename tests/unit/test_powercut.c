/* The power-cut simulation layer (lib/member/powercut.c) on its own, over
 * member files: the image a cut leaves (the flushed state, then the
 * surviving sectors of the later writes in order), flushed writes never
 * lost, a completed FUA write kept (and no flush), a seed replaying the
 * same bytes, the armed trigger, every request failing after the cut,
 * concurrent writers, and the spec parser. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "member/member.h"
#include "member/powercut.h"

#define MB (256u << 10) /* member bytes */
#define SEC 512u

static struct rng rng;
static char dir[256];
static int domain_no;

static void make_file(const char *path, const uint8_t *img)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(fd >= 0 && pwrite(fd, img, MB, 0) == (ssize_t)MB, "cannot write %s", path);
    if (fd >= 0)
        close(fd);
}

static void read_file(const char *path, uint8_t *img)
{
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && pread(fd, img, MB, 0) == (ssize_t)MB, "cannot read %s", path);
    if (fd >= 0)
        close(fd);
}

/* A new domain with a name of its own, and nm members over files holding base[i]. */
static struct powercut_domain *open_domain(int nm, uint64_t seed, unsigned keep, unsigned tear, uint8_t **base,
                                           struct member **m, char (*path)[300], char *name, size_t namelen)
{
    snprintf(name, namelen, "pc%d", ++domain_no);
    struct powercut_domain *d = NULL;
    CHECK(powercut_domain_get(name, seed, keep, tear, &d) == 1, "domain %s", name);
    for (int i = 0; i < nm; i++) {
        snprintf(path[i], 300, "%s/%s-m%d.img", dir, name, i);
        make_file(path[i], base[i]);
        struct member *f = NULL;
        CHECK(member_open_file(path[i], 0, &f) == 0, "open %s", path[i]);
        CHECK(member_powercut_wrap(f, d, &m[i]) == 0);
    }
    return d;
}

/* ---- the image a cut leaves ------------------------------------------------------------ */

struct wr {
    int member;
    uint64_t off;
    size_t len;
    uint64_t seq;  /* the member's write number */
    int zero;
    uint8_t *data;
};

/* A random sequence on two members: writes and zeroed ranges, overlapping,
 * with one flush of member 0 in the middle. Leaves in `flushed` each
 * member's image at its last flush and in w[] the writes since. */
static int run_sequence(struct member **m, uint64_t seed, uint8_t **flushed, struct wr *w, int max)
{
    struct rng r;
    rng_seed(&r, seed);
    uint64_t seq[2] = {0, 0};
    int n = 0;
    for (int i = 0; i < max; i++) {
        struct wr x = {.member = (int)rng_below(&r, 2)};
        size_t nsec = 1 + (size_t)rng_below(&r, 24);
        x.len = nsec * SEC;
        x.off = rng_below(&r, MB / SEC - nsec) * SEC;
        x.zero = rng_below(&r, 8) == 0;
        x.seq = seq[x.member]++;
        int rc;
        if (x.zero) {
            rc = member_zero(m[x.member], x.len, x.off);
        } else {
            x.data = malloc(x.len);
            rng_fill(&r, x.data, x.len);
            rc = member_write(m[x.member], x.data, x.len, x.off);
        }
        CHECK(rc == 0, "write %d: %d", i, rc);
        if (i == max / 2) {
            /* member 0's writes so far are durable: fold them into its flushed image */
            CHECK(member_flush(m[0]) == 0);
            CHECK(member_powercut_pending(m[0]) == 0, "%llu writes pending after a flush",
                  (unsigned long long)member_powercut_pending(m[0]));
            int k = 0;
            for (int j = 0; j < n; j++) {
                if (w[j].member == 0) {
                    if (w[j].zero)
                        memset(flushed[0] + w[j].off, 0, w[j].len);
                    else
                        memcpy(flushed[0] + w[j].off, w[j].data, w[j].len);
                    free(w[j].data);
                } else {
                    w[k++] = w[j];
                }
            }
            n = k;
            if (x.member == 0) {
                if (x.zero)
                    memset(flushed[0] + x.off, 0, x.len);
                else
                    memcpy(flushed[0] + x.off, x.data, x.len);
                free(x.data);
                continue;
            }
        }
        w[n++] = x;
    }
    return n;
}

/* The image the cut must leave: the flushed image, then each surviving
 * sector of the later writes, oldest first. */
static void expected_image(uint8_t **img, const struct wr *w, int n, uint64_t seed, unsigned keep, unsigned tear)
{
    for (int j = 0; j < n; j++)
        for (uint32_t s = 0; s < w[j].len / SEC; s++)
            if (powercut_sector_survives(seed, (unsigned)w[j].member, w[j].seq, s, keep, tear)) {
                uint8_t *dst = img[w[j].member] + w[j].off + (uint64_t)s * SEC;
                if (w[j].zero)
                    memset(dst, 0, SEC);
                else
                    memcpy(dst, w[j].data + (size_t)s * SEC, SEC);
            }
}

/* Runs the sequence, cuts, and returns the images the members hold after it. */
static void cut_trial(uint64_t seed, unsigned keep, unsigned tear, uint8_t **base, uint8_t **after,
                      struct powercut_stats *st, int check_expected)
{
    struct member *m[2];
    char path[2][300], name[32];
    struct powercut_domain *d = open_domain(2, seed, keep, tear, base, m, path, name, sizeof name);
    uint8_t *flushed[2] = {malloc(MB), malloc(MB)};
    memcpy(flushed[0], base[0], MB);
    memcpy(flushed[1], base[1], MB);
    enum { MAXW = 120 };
    struct wr *w = calloc(MAXW, sizeof *w);
    int n = run_sequence(m, seed * 31 + 7, flushed, w, MAXW);
    CHECK(powercut_cut(d) == 0);
    powercut_get_stats(d, st);
    CHECK(st->cut_kept + st->cut_dropped + st->cut_torn == (uint64_t)n, "%llu+%llu+%llu decisions for %d writes",
          (unsigned long long)st->cut_kept, (unsigned long long)st->cut_dropped, (unsigned long long)st->cut_torn, n);
    CHECK(st->pending_writes == 0 && st->cut_errors == 0);
    for (int i = 0; i < 2; i++) {
        member_close(m[i]);
        read_file(path[i], after[i]);
        unlink(path[i]);
    }
    if (check_expected) {
        expected_image(flushed, w, n, seed, keep, tear);
        for (int i = 0; i < 2; i++) {
            size_t at = 0;
            while (at < MB && after[i][at] == flushed[i][at])
                at++;
            CHECK(at == MB, "seed %llu keep %u tear %u: member %d differs from the expected image first at byte %zu",
                  (unsigned long long)seed, keep, tear, i, at);
        }
    }
    for (int j = 0; j < n; j++)
        free(w[j].data);
    free(w);
    free(flushed[0]);
    free(flushed[1]);
    powercut_domain_forget(name);
}

static void new_base(uint8_t **base)
{
    for (int i = 0; i < 2; i++) {
        base[i] = malloc(MB);
        rng_fill(&rng, base[i], MB);
    }
}

static void test_image(void)
{
    harness_begin("a cut leaves the flushed image plus the surviving sectors of later writes, in order");
    uint8_t *base[2], *after[2] = {malloc(MB), malloc(MB)};
    new_base(base);
    static const unsigned odds[][2] = {{30, 40}, {100, 0}, {0, 0}, {0, 100}, {50, 0}};
    for (size_t o = 0; o < sizeof odds / sizeof odds[0]; o++) {
        uint64_t seed = rng_next(&rng);
        struct powercut_stats st;
        cut_trial(seed, odds[o][0], odds[o][1], base, after, &st, 1);
        if (o == 0)
            CHECK(st.cut_kept && st.cut_dropped && st.cut_torn && st.torn_sectors_kept && st.torn_sectors_lost,
                  "with keep 30 tear 40 a cut of 100 writes should keep, drop and tear some: %llu %llu %llu",
                  (unsigned long long)st.cut_kept, (unsigned long long)st.cut_dropped,
                  (unsigned long long)st.cut_torn);
        if (o == 1)
            CHECK(!st.cut_dropped && !st.cut_torn, "keep=100 dropped or tore a write");
        if (o == 2)
            CHECK(!st.cut_kept && !st.cut_torn, "keep=0 tear=0 kept a write");
    }
    for (int i = 0; i < 2; i++) {
        free(base[i]);
        free(after[i]);
    }
    harness_end();
}

static void test_replay(void)
{
    harness_begin("the same seed replays the same bytes; another seed gives others");
    uint8_t *base[2], *a[2] = {malloc(MB), malloc(MB)}, *b[2] = {malloc(MB), malloc(MB)};
    new_base(base);
    uint64_t seed = rng_next(&rng);
    struct powercut_stats st;
    cut_trial(seed, 33, 33, base, a, &st, 0);
    cut_trial(seed, 33, 33, base, b, &st, 0);
    CHECK(!memcmp(a[0], b[0], MB) && !memcmp(a[1], b[1], MB), "seed %llu: two runs left different bytes",
          (unsigned long long)seed);
    cut_trial(seed + 1, 33, 33, base, b, &st, 0);
    CHECK(memcmp(a[0], b[0], MB) || memcmp(a[1], b[1], MB), "seeds %llu and %llu left the same bytes",
          (unsigned long long)seed, (unsigned long long)seed + 1);
    for (int i = 0; i < 2; i++) {
        free(base[i]);
        free(a[i]);
        free(b[i]);
    }
    harness_end();
}

/* ---- flushed data, the trigger, after the cut --------------------------------------------- */

static void test_flushed_survives(void)
{
    harness_begin("flushed writes survive a cut that drops everything; unflushed ones are gone");
    uint8_t *base[2], *img = malloc(MB), *a = malloc(64 * SEC), *b = malloc(16 * SEC);
    new_base(base);
    rng_fill(&rng, a, 64 * SEC);
    rng_fill(&rng, b, 16 * SEC);
    struct member *m[1];
    char path[1][300], name[32];
    struct powercut_domain *d = open_domain(1, rng_next(&rng), 0, 0, base, m, path, name, sizeof name);
    CHECK(member_write(m[0], a, 64 * SEC, 8192) == 0);
    CHECK(member_powercut_pending(m[0]) == 1);
    CHECK(member_flush(m[0]) == 0);
    CHECK(member_powercut_pending(m[0]) == 0);
    CHECK(member_write(m[0], b, 16 * SEC, 8192 + 4096) == 0);
    CHECK(member_write(m[0], b, 16 * SEC, 100 * 1024) == 0);
    CHECK(powercut_cut(d) == 0);
    member_close(m[0]);
    read_file(path[0], img);
    CHECK(!memcmp(img + 8192, a, 64 * SEC), "a flushed write was lost");
    CHECK(!memcmp(img, base[0], 8192) && !memcmp(img + 8192 + 64 * SEC, base[0] + 8192 + 64 * SEC,
                                                  MB - 8192 - 64 * SEC),
          "an unflushed write survived a drop-everything cut");
    unlink(path[0]);
    powercut_domain_forget(name);
    free(base[0]);
    free(base[1]);
    free(img);
    free(a);
    free(b);
    harness_end();
}

/* A completed FUA write survives a cut that drops everything, over the
 * unflushed write before it that it overwrote, under the unflushed write
 * after it that overwrote part of it; it flushes nothing else; and the
 * FUA write the cut interrupts is not acknowledged and may be lost. */
static void test_fua(void)
{
    harness_begin("a FUA write survives a cut that drops everything; it is no flush; the one the cut hits may be lost");
    uint8_t *base[2], *img = malloc(MB), *a = malloc(32 * SEC), *b = malloc(16 * SEC), *c = malloc(4 * SEC),
            *e = malloc(8 * SEC), *want = malloc(MB);
    new_base(base);
    rng_fill(&rng, a, 32 * SEC);
    rng_fill(&rng, b, 16 * SEC);
    rng_fill(&rng, c, 4 * SEC);
    rng_fill(&rng, e, 8 * SEC);
    struct member *m[1];
    char path[1][300], name[32];
    struct powercut_domain *d = open_domain(1, rng_next(&rng), 0, 0, base, m, path, name, sizeof name);
    CHECK(member_write(m[0], a, 32 * SEC, 8192) == 0);               /* A: plain */
    CHECK(member_write_fua(m[0], b, 16 * SEC, 8192 + 4096) == 0);    /* B: FUA, inside A */
    CHECK(member_write(m[0], c, 4 * SEC, 8192 + 4096 + 2048) == 0);  /* C: plain, inside B */
    CHECK(member_powercut_pending(m[0]) == 2, "%llu writes pending, want the two plain ones",
          (unsigned long long)member_powercut_pending(m[0]));
    struct powercut_stats st;
    powercut_get_stats(d, &st);
    CHECK(st.fua_writes == 1 && st.flushes == 0, "%llu FUA writes, %llu flushes (want 1, 0)",
          (unsigned long long)st.fua_writes, (unsigned long long)st.flushes);
    /* the next write cuts: a FUA write that never completes */
    powercut_arm(d, 1);
    CHECK(member_write_fua(m[0], e, 8 * SEC, 200 * 1024) == -ENXIO, "the cutting FUA write was acknowledged");
    CHECK(powercut_is_cut(d));
    powercut_get_stats(d, &st);
    CHECK(st.cut_durable == 1 && st.cut_kept == 0 && st.cut_dropped == 3, "at the cut: %llu durable, %llu kept, %llu dropped",
          (unsigned long long)st.cut_durable, (unsigned long long)st.cut_kept, (unsigned long long)st.cut_dropped);
    member_close(m[0]);
    read_file(path[0], img);
    memcpy(want, base[0], MB);
    memcpy(want + 8192 + 4096, b, 16 * SEC); /* A and C dropped, B kept whole */
    CHECK(!memcmp(img, want, MB), "the image after the cut is not the flushed state plus the FUA write");
    unlink(path[0]);
    powercut_domain_forget(name);
    free(base[0]);
    free(base[1]);
    free(img);
    free(a);
    free(b);
    free(c);
    free(e);
    free(want);
    harness_end();
}

static void test_trigger_and_after(void)
{
    harness_begin("armed: the N-th write cuts and fails; afterwards every request fails with ENXIO");
    uint8_t *base[2], buf[4096];
    new_base(base);
    rng_fill(&rng, buf, sizeof buf);
    struct member *m[2];
    char path[2][300], name[32];
    struct powercut_domain *d = open_domain(2, 5, 100, 0, base, m, path, name, sizeof name);
    powercut_arm(d, 5);
    for (int i = 0; i < 4; i++)
        CHECK(member_write(m[i % 2], buf, sizeof buf, (uint64_t)i * 4096) == 0, "write %d before the trigger", i);
    CHECK(!powercut_is_cut(d));
    CHECK(member_write(m[0], buf, sizeof buf, 65536) == -ENXIO, "the armed write should fail");
    CHECK(powercut_is_cut(d));
    CHECK(member_write(m[1], buf, sizeof buf, 0) == -ENXIO);
    CHECK(member_read(m[1], buf, sizeof buf, 0) == -ENXIO);
    CHECK(member_flush(m[0]) == -ENXIO);
    CHECK(member_zero(m[0], 4096, 0) == -ENXIO);
    CHECK(powercut_cut(d) == -EALREADY);
    struct powercut_stats st;
    powercut_get_stats(d, &st);
    CHECK(st.cut_kept == 5 && st.writes == 5, "kept %llu of %llu", (unsigned long long)st.cut_kept,
          (unsigned long long)st.writes);
    uint8_t *img = malloc(MB);
    for (int i = 0; i < 2; i++) {
        member_close(m[i]);
        read_file(path[i], img);
        unlink(path[i]);
        if (i == 0)
            CHECK(!memcmp(img + 65536, buf, sizeof buf), "keep=100: the write that cut is not on the medium");
    }
    powercut_domain_forget(name);
    free(img);
    free(base[0]);
    free(base[1]);
    harness_end();
}

/* ---- concurrent writers ------------------------------------------------------------------- */

#define NT 4
#define TSECS 64 /* sectors of each thread's region, on each member */

struct worker {
    struct member **m;
    int t;
    uint64_t seed;
    /* per member and sector of its region: the last write number there, and the
     * last one known durable (a flush of that member completed after it) */
    int32_t last[2][TSECS], durable[2][TSECS];
    int writes;
};

/* Sector content: thread, write number and sector, so a read says who wrote it. */
static void sector_of(uint8_t *p, int t, int32_t wno, int mem, int s)
{
    memset(p, 0, SEC);
    snprintf((char *)p, SEC, "t%d w%d m%d s%d", t, (int)wno, mem, s);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct rng r;
    rng_seed(&r, w->seed);
    uint8_t buf[8 * SEC];
    for (int32_t wno = 1;; wno++) {
        int mem = (int)rng_below(&r, 2), ns = 1 + (int)rng_below(&r, 8), s0 = (int)rng_below(&r, TSECS - ns + 1);
        for (int i = 0; i < ns; i++)
            sector_of(buf + i * SEC, w->t, wno, mem, s0 + i);
        uint64_t off = ((uint64_t)w->t * TSECS + (uint64_t)s0) * SEC;
        if (member_write(w->m[mem], buf, (size_t)ns * SEC, off))
            break;
        w->writes++;
        for (int i = 0; i < ns; i++)
            w->last[mem][s0 + i] = wno;
        if (rng_below(&r, 4) == 0) {
            if (member_flush(w->m[mem]))
                break;
            memcpy(w->durable[mem], w->last[mem], sizeof w->last[mem]);
        }
    }
    return NULL;
}

static void test_threads(void)
{
    harness_begin("concurrent writers and flushes on two members, cut at a random write");
    uint8_t *base[2];
    for (int i = 0; i < 2; i++)
        base[i] = calloc(1, MB); /* zeros: "never written" */
    struct member *m[2];
    char path[2][300], name[32];
    uint64_t seed = rng_next(&rng);
    struct powercut_domain *d = open_domain(2, seed, 33, 33, base, m, path, name, sizeof name);
    powercut_arm(d, 200 + rng_below(&rng, 400));
    static struct worker w[NT];
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) {
        memset(&w[t], 0, sizeof w[t]);
        w[t] = (struct worker){.m = m, .t = t, .seed = seed + (uint64_t)t};
        pthread_create(&th[t], NULL, worker_main, &w[t]);
    }
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    CHECK(powercut_is_cut(d));
    uint8_t *img = malloc(MB), want[SEC];
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        member_close(m[i]);
        read_file(path[i], img);
        unlink(path[i]);
        for (int t = 0; t < NT; t++)
            for (int s = 0; s < TSECS; s++) {
                const uint8_t *got = img + ((uint64_t)t * TSECS + (uint64_t)s) * SEC;
                int wt, wno, wm, ws, ok;
                if (got[0] == 0)
                    ok = !memcmp(got, base[i], SEC) && w[t].durable[i][s] == 0;
                else if (sscanf((const char *)got, "t%d w%d m%d s%d", &wt, &wno, &wm, &ws) == 4) {
                    sector_of(want, wt, wno, wm, ws);
                    ok = !memcmp(got, want, SEC) && wt == t && wm == i && ws == s && wno >= w[t].durable[i][s];
                } else
                    ok = 0;
                if (!ok && bad++ < 5)
                    CHECK(0, "member %d thread %d sector %d: '%.24s' (durable write %d)", i, t, s, (const char *)got,
                          (int)w[t].durable[i][s]);
            }
    }
    CHECK(bad == 0, "%d sectors hold neither their flushed value nor a later write", bad);
    powercut_domain_forget(name);
    free(img);
    free(base[0]);
    free(base[1]);
    harness_end();
}

/* ---- the spec ----------------------------------------------------------------------------- */

static void test_spec(void)
{
    harness_begin("powercut specs: applied, armed once per domain, and bad ones refused leaving the member as it was");
    char path[300];
    snprintf(path, sizeof path, "%s/spec.img", dir);
    uint8_t *zero = calloc(1, MB), buf[4096] = {1};
    make_file(path, zero);
    struct member *m = NULL, *m2 = NULL;
    char why[256];
    CHECK(member_open_file(path, 0, &m) == 0);
    CHECK(member_apply_spec(&m, "powercut=specdom,seed=9,after=3,keep=0,tear=0; latency=0us", why, sizeof why) == 0,
          "%s", why);
    CHECK(m && !strcmp(m->ops->kind, "fault"), "the fault spec after ';' is on top");
    CHECK(member_open_file(path, 0, &m2) == 0);
    CHECK(member_apply_spec(&m2, "powercut=specdom,after=1000", why, sizeof why) == 0, "%s", why);
    CHECK(m2 && !strcmp(m2->ops->kind, "powercut"));
    struct powercut_domain *d = powercut_domain_find("specdom");
    CHECK(d != NULL, "the spec's domain is not registered");
    CHECK(member_write(m2, buf, sizeof buf, 0) == 0 && member_write(m, buf, sizeof buf, 4096) == 0);
    CHECK(member_write(m, buf, sizeof buf, 8192) == -ENXIO, "after=3 of the first member (not 1000) counts");
    CHECK(d && powercut_is_cut(d));
    member_close(m);
    member_close(m2);
    powercut_domain_forget("specdom");
    CHECK(powercut_domain_find("specdom") == NULL);

    static const char *const bad[] = {
        "powercut=",          "powercut=a b",        "powercut=x,keep=101", "powercut=x,keep=60,tear=50",
        "powercut=x,bogus=1", "powercut=x,latency=1ms", "powercut=x,seed=-1", "powercut=x,seed",
        "powercut=x,after=5,after=6", "powercut=x;read-eio=zz",
    };
    CHECK(member_open_file(path, 0, &m) == 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct member *before = m;
        why[0] = 0;
        int rc = member_apply_spec(&m, bad[i], why, sizeof why);
        CHECK(rc == -EINVAL && why[0] && m == before && !strcmp(m->ops->kind, "file"), "'%s': %d (%s)", bad[i], rc,
              why);
        CHECK(powercut_domain_find("x") == NULL, "'%s' made a domain although it was refused", bad[i]);
    }
    CHECK(member_apply_spec(&m, "powercut", why, sizeof why) == 0 && !strcmp(m->ops->kind, "powercut"), "%s", why);
    member_close(m);
    powercut_domain_forget("default");
    unlink(path);
    free(zero);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_powercut");
    rng_seed(&rng, harness_seed());
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/uraid-pc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_image();
    test_replay();
    test_flushed_survives();
    test_fua();
    test_trigger_and_after();
    test_threads();
    test_spec();
    rmdir(dir);
    return harness_finish();
}
