/* uraid bench policy: the cost of the consistency policy ppl against bitmap,
 * A/B on the same members in the same run.
 *
 * The machine this runs on is shared and noisy: one pair of figures seconds
 * apart swings by 2x. So each round re-creates the array with one policy,
 * runs every test once, then re-creates it with the other policy on the
 * same members and runs them again (the order alternates from round to
 * round, so neither policy always runs on a warmer cache); the figure is
 * the ratio ppl / bitmap of that round, and the summary is the median of
 * the rounds' ratios. --member-layer SPEC puts every member behind a
 * simulated disk ("disk=hdd-7200", "throttle=500M,latency=80us"), where
 * the log's extra write and flushes cost time that tmpfs hides. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

#define MiB (1024u * 1024u)
#define MAX_ROUNDS 31
#define NTESTS 5

struct popts {
    int level, members, rounds, threads, seq_threads;
    int only;     /* a policy to run alone (for a profiler), 0: both */
    int test;     /* one test to run alone, -1: all */
    uint64_t member_bytes, chunk;
    double seconds;
    const char *dir, *layer;
};

struct ptest {
    char name[40];
    int kind, threads;
    size_t io;
    int depth;    /* requests in flight per stream */
};

static void make_tests(const struct popts *o, struct ptest *t)
{
    int parity = o->level == 6 ? 2 : 1;
    t[0] = (struct ptest){"seq write 1M", BENCH_SEQ_WRITE, o->seq_threads, MiB, 1};
    t[1] = (struct ptest){"seq write 1M QD4", BENCH_SEQ_WRITE, o->seq_threads, MiB, 4};
    t[2] = (struct ptest){"", BENCH_SEQ_WRITE, o->seq_threads, (size_t)4 * (size_t)(o->members - parity) * o->chunk, 1};
    snprintf(t[2].name, sizeof t[2].name, "full-stripe write %zuK", t[2].io / 1024);
    t[3] = (struct ptest){"", BENCH_RAND_WRITE, o->threads, 4096, 1};
    snprintf(t[3].name, sizeof t[3].name, "rand write 4K x%d", o->threads);
    t[4] = (struct ptest){"", BENCH_RAND_WRITE, o->threads, 65536, 1};
    snprintf(t[4].name, sizeof t[4].name, "rand write 64K x%d", o->threads);
}

/* The array re-created with `policy` on the members, opened (behind the
 * layer), every test run once into mbps[]. 0 or 1 (reported). */
static int run_policy(const struct popts *o, const char *const *paths, int policy, const struct ptest *t,
                      double *mbps)
{
    struct uraid_create_params cp = {.level = o->level, .raid_devices = o->members,
                                     .chunk_bytes = (uint32_t)o->chunk, .layout = -1, .name = "bench",
                                     .assume_clean = 1, .consistency_policy = policy};
    if (policy == URAID_POLICY_BITMAP)
        cp.bitmap = URAID_BITMAP_INTERNAL;
    char why[512];
    if (uraid_create(paths, o->members, &cp, 1, why, sizeof why)) {
        cli_error("bench policy", "%s", why);
        return 1;
    }
    const char *sim[URAID_MAX_MEMBERS];
    for (int i = 0; i < o->members; i++)
        sim[i] = o->layer;
    struct uraid_open_params op = {.member_sim = o->layer ? sim : NULL};
    struct uraid_array *a;
    if (uraid_open(paths, o->members, &op, &a, why, sizeof why)) {
        cli_error("bench policy", "%s", why);
        return 1;
    }
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    int err = info.consistency_policy == policy ? 0 : -1;
    if (err)
        cli_error("bench policy", "the array opened with policy %s, not %s",
                  uraid_policy_name(info.consistency_policy), uraid_policy_name(policy));
    /* the first write empties ppl's logs: not part of any figure */
    static uint8_t warm[4096] __attribute__((aligned(4096)));
    if (!err)
        err = uraid_write(a, warm, sizeof warm, 0);
    for (int i = 0; i < NTESTS && !err; i++)
        mbps[i] = o->test >= 0 && o->test != i ? 0 : bench_array_rate_qd(a, t[i].kind, t[i].io, t[i].threads, t[i].depth, o->seconds, &err);
    uraid_close(a);
    if (err > 0 || err < -1)
        cli_error("bench policy", "a write failed: %s", strerror(-err));
    return err ? 1 : 0;
}

static double median(const double *v, int n)
{
    double s[MAX_ROUNDS];
    memcpy(s, v, sizeof *v * (size_t)n);
    qsort(s, (size_t)n, sizeof s[0], bench_cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static int rounds(const struct popts *o, const char *const *paths)
{
    struct ptest t[NTESTS];
    make_tests(o, t);
    double ppl[NTESTS][MAX_ROUNDS], bm[NTESTS][MAX_ROUNDS], ratio[NTESTS][MAX_ROUNDS];
    for (int r = 0; r < o->rounds; r++) {
        double a[NTESTS], b[NTESTS];
        int first_ppl = r % 2 == 0;
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        int p1 = first_ppl ? URAID_POLICY_PPL : URAID_POLICY_BITMAP, p2 = p1 == URAID_POLICY_PPL ? URAID_POLICY_BITMAP
                                                                                               : URAID_POLICY_PPL;
        if ((!o->only || o->only == p1) && run_policy(o, paths, p1, t, first_ppl ? a : b))
            return 1;
        if ((!o->only || o->only == p2) && run_policy(o, paths, p2, t, first_ppl ? b : a))
            return 1;
        printf("round %d (%s first):\n", r + 1, first_ppl ? "ppl" : "bitmap");
        for (int i = 0; i < NTESTS; i++) {
            ppl[i][r] = a[i];
            bm[i][r] = b[i];
            ratio[i][r] = b[i] > 0 ? a[i] / b[i] : 0;
            printf("  %-22s ppl %9.1f MB/s   bitmap %9.1f MB/s   ratio %.2f\n", t[i].name, a[i], b[i], ratio[i][r]);
        }
        fflush(stdout);
    }
    printf("summary over %d rounds (ratio = ppl / bitmap of the same round):\n", o->rounds);
    for (int i = 0; i < NTESTS; i++) {
        printf("  %-22s ratios", t[i].name);
        for (int r = 0; r < o->rounds; r++)
            printf(" %.2f", ratio[i][r]);
        printf("   median %.2f   (median MB/s ppl %.1f, bitmap %.1f)\n", median(ratio[i], o->rounds),
               median(ppl[i], o->rounds), median(bm[i], o->rounds));
    }
    return 0;
}

static const char usage[] =
    "usage: uraid bench policy [--level 5|6] [--members N] [--chunk SIZE] [--size MEMBER_SIZE] [--dir DIR]\n"
    "                          [--rounds N] [--seconds S] [--threads N] [--seq-threads N] [--member-layer SPEC]\n"
    "                          [--only ppl|bitmap] [--test 1-5]  (one policy or one test alone, for a profiler)\n"
    "  ppl against bitmap on the same members, alternating, one ratio per round and their median;\n"
    "  --member-layer puts every member behind a simulated disk (disk=hdd-7200|sata-ssd|nvme,\n"
    "  throttle=RATE,latency=TIME: see uraid(1)).\n";

int bench_policy(int argc, char **argv)
{
    struct popts o = {.level = 5, .members = 6, .rounds = 5, .threads = 8, .seq_threads = 2,
                      .member_bytes = 256 * MiB, .chunk = 65536, .seconds = 1, .dir = "/dev/shm", .test = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--level") && v && (!strcmp(v, "5") || !strcmp(v, "6")))
            o.level = atoi(v);
        else if (!strcmp(a, "--rounds") && v && atoi(v) >= 1 && atoi(v) <= MAX_ROUNDS)
            o.rounds = atoi(v);
        else if (!strcmp(a, "--threads") && v && atoi(v) >= 1 && atoi(v) <= 64)
            o.threads = atoi(v);
        else if (!strcmp(a, "--seq-threads") && v && atoi(v) >= 1 && atoi(v) <= 64)
            o.seq_threads = atoi(v);
        else if (!strcmp(a, "--seconds") && v && atof(v) > 0)
            o.seconds = atof(v);
        else if (!strcmp(a, "--only") && v && (!strcmp(v, "ppl") || !strcmp(v, "bitmap")))
            o.only = uraid_policy_parse(v);
        else if (!strcmp(a, "--test") && v && atoi(v) >= 1 && atoi(v) <= NTESTS)
            o.test = atoi(v) - 1;
        else if (!strcmp(a, "--member-layer") && v)
            o.layer = v;
        else if (!bench_shape_option(a, v, &o.members, &o.member_bytes, &o.chunk, &o.dir))
            return bench_usage_or_bad("bench policy", a, usage);
        i++;
    }
    if (cli_setup_parity("bench policy"))
        return 1;
    char paths[URAID_MAX_MEMBERS][256];
    const char *pp[URAID_MAX_MEMBERS];
    int status = 0, made = 0;
    for (; made < o.members && status == 0; made++) {
        snprintf(paths[made], sizeof paths[made], "%s/uraid-bench-policy-%d-%d.img", o.dir, (int)getpid(), made);
        pp[made] = paths[made];
        int rc = bench_make_file(paths[made], o.member_bytes);
        if (rc) {
            cli_error("bench policy", "cannot create %s: %s", paths[made], strerror(-rc));
            status = 1;
        }
    }
    if (status == 0) {
        printf("uraid bench policy: RAID-%d, %d members of %llu MiB in %s, chunk %lluK, %.1f s per test, %d rounds%s%s\n",
               o.level, o.members, (unsigned long long)(o.member_bytes / MiB), o.dir,
               (unsigned long long)(o.chunk / 1024), o.seconds, o.rounds, o.layer ? ", members behind " : "",
               o.layer ? o.layer : "");
        status = rounds(&o, pp);
    }
    for (int i = 0; i < made; i++)
        unlink(paths[i]);
    return status;
}
