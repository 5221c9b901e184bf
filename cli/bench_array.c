/* uraid bench array: the array through the library beside its raw members,
 * measured in the same run.
 *
 * For each level (RAID-5, RAID-6) on n member files (default 6, in /dev/shm):
 *   raw:   the member files read and written directly, one thread per member
 *          (sequential 1 MiB pread/pwrite), and random writes by 8 threads
 *          spread over the members;
 *   ours:  the same request sizes through uraid_read/uraid_write, healthy and
 *          with one member missing; with --bitmap also healthy with md's
 *          internal write-intent bitmap (same members, same run), so its
 *          cost shows beside the figures without one.
 * Each figure is MB/s (10^6 bytes/s of array data, wall clock), the median
 * of three runs; the ratio is ours / (raw x (n - parity) / n), the share of
 * the members' bandwidth that can carry data.
 * --throttle runs the seed's scenario instead: 4 members simulated at
 * 60 MB/s each, RAID-5, 64 KiB chunk, one streaming reader. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

#define MiB (1024u * 1024u)

struct bopts {
    int members, threads, seq_threads, json, no_uring, throttle, bitmap, policy;
    int rmw_level; /* -1: the library's default */
    uint64_t member_bytes, chunk, bitmap_chunk;
    double seconds;
    const char *dir;
};

/* ---- one measured job: T threads running a loop until the deadline ---- */

enum job_kind { SEQ_READ, SEQ_WRITE, RAND_WRITE };

struct job {
    enum job_kind kind;
    size_t io;            /* bytes per request */
    int threads;
    int depth;            /* sequential: threads per stream (its requests in flight), 0 or 1: one */
    uint64_t pos[64];     /* atomic: each stream's next offset in its region (depth > 1) */
    double seconds;
    /* target: an array, or raw member fds */
    struct uraid_array *a;
    uint64_t size;        /* bytes addressable */
    int nfds;
    int *fds;
    uint64_t fd_size;
    /* results */
    uint64_t bytes;
    int error;
};

struct worker {
    struct job *j;
    int id;
    uint64_t bytes;
    int error;
};

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct job *j = w->j;
    uint8_t *buf = aligned_alloc(4096, j->io);
    if (!buf) {
        w->error = -ENOMEM;
        return NULL;
    }
    memset(buf, 0x5a + w->id, j->io);
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1);
    double end = bench_now_s() + j->seconds;
    /* sequential jobs: each stream (depth threads taking its next request
     * in turn, like fio's iodepth) has its own region (or its own member) */
    int depth = j->depth > 1 ? j->depth : 1, stream = w->id / depth;
    uint64_t region = j->a ? j->size / (uint64_t)((j->threads + depth - 1) / depth) : j->fd_size;
    region -= region % j->io;
    uint64_t pos = 0;
    int fd = j->a ? -1 : j->fds[w->id % j->nfds];
    while (bench_now_s() < end) {
        for (int batch = 0; batch < 8; batch++) {
            uint64_t off;
            if (j->kind == RAND_WRITE) {
                uint64_t span = (j->a ? j->size : j->fd_size) / j->io;
                off = xorshift(&seed) % span * j->io;
                if (!j->a)
                    fd = j->fds[xorshift(&seed) % (uint64_t)j->nfds];
            } else if (depth > 1) {
                off = (j->a ? region * (uint64_t)stream : 0) +
                      __atomic_fetch_add(&j->pos[stream], j->io, __ATOMIC_RELAXED) % region;
            } else {
                off = (j->a ? region * (uint64_t)w->id : 0) + pos;
                pos = (pos + j->io) % region;
            }
            int rc;
            if (j->a)
                rc = j->kind == SEQ_READ ? uraid_read(j->a, buf, j->io, off) : uraid_write(j->a, buf, j->io, off);
            else
                rc = (j->kind == SEQ_READ ? pread(fd, buf, j->io, (off_t)off) : pwrite(fd, buf, j->io, (off_t)off)) ==
                             (ssize_t)j->io
                         ? 0
                         : -EIO;
            if (rc) {
                w->error = rc;
                free(buf);
                return NULL;
            }
            w->bytes += j->io;
        }
    }
    free(buf);
    return NULL;
}

/* MB/s of one run of the job. */
static double run_job(struct job *j)
{
    pthread_t t[64];
    struct worker w[64];
    int n = j->threads > 64 ? 64 : j->threads;
    double start = bench_now_s();
    for (int i = 0; i < n; i++) {
        w[i] = (struct worker){.j = j, .id = i};
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        bytes += w[i].bytes;
        if (w[i].error && !j->error)
            j->error = w[i].error;
    }
    return bytes / (bench_now_s() - start) / 1e6;
}

double bench_array_rate(struct uraid_array *a, int kind, size_t io, int threads, double seconds, int *error)
{
    return bench_array_rate_qd(a, kind, io, threads, 1, seconds, error);
}

double bench_array_rate_qd(struct uraid_array *a, int kind, size_t io, int streams, int depth, double seconds,
                           int *error)
{
    struct job j = {.a = a, .size = uraid_size(a), .seconds = seconds, .io = io, .threads = streams * depth,
                    .depth = depth, .kind = kind == BENCH_SEQ_READ ? SEQ_READ : kind == BENCH_SEQ_WRITE ? SEQ_WRITE : RAND_WRITE};
    double v = run_job(&j);
    if (j.error && error && !*error)
        *error = j.error;
    return v;
}

static double median3(struct job *j)
{
    double v[3];
    for (int r = 0; r < 3; r++)
        v[r] = run_job(j);
    qsort(v, 3, sizeof v[0], bench_cmp_double);
    return v[1];
}

/* ---- set-up ------------------------------------------------------------------- */

/* Members are written in full first: the raw figures would otherwise pay
 * for allocating the files' blocks, which the array's runs never do. */
static int make_members(const struct bopts *o, const char *tag, int n, char paths[][256], int *fds)
{
    uint8_t *buf = malloc(MiB);
    if (!buf)
        return -1;
    memset(buf, 0, MiB);
    for (int i = 0; i < n; i++) {
        snprintf(paths[i], 256, "%s/uraid-bench-%s-%d-%d.img", o->dir, tag, (int)getpid(), i);
        fds[i] = open(paths[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fds[i] < 0) {
            cli_error("bench array", "cannot create %s: %s", paths[i], strerror(errno));
            free(buf);
            return -1;
        }
        for (uint64_t off = 0; off < o->member_bytes; off += MiB)
            if (pwrite(fds[i], buf, MiB, (off_t)off) != (ssize_t)MiB) {
                cli_error("bench array", "cannot fill %s: %s", paths[i], strerror(errno));
                free(buf);
                return -1;
            }
    }
    free(buf);
    return 0;
}

static void remove_members(int n, char paths[][256], int *fds)
{
    for (int i = 0; i < n; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        unlink(paths[i]);
    }
}

static int open_array(const struct bopts *o, char paths[][256], int n, int skip, const char *const *sim,
                      struct uraid_array **a)
{
    const char *p[URAID_MAX_MEMBERS];
    const char *s[URAID_MAX_MEMBERS];
    int m = 0;
    for (int i = 0; i < n; i++)
        if (i != skip) {
            s[m] = sim ? sim[i] : NULL;
            p[m++] = paths[i];
        }
    struct uraid_open_params op = {.member_sim = sim ? s : NULL, .no_uring = o->no_uring};
    char why[512];
    int rc = uraid_open(p, m, &op, a, why, sizeof why);
    if (rc)
        cli_error("bench array", "%s", why);
    else if (o->rmw_level >= 0)
        uraid_set_rmw_level(*a, o->rmw_level);
    return rc;
}

static void print_row(const struct bopts *o, int level, const char *state, const char *test, double ours,
                      double raw, double ideal, int *first)
{
    if (o->json) {
        printf("%s\n    {\"level\": %d, \"state\": \"%s\", \"test\": \"%s\", \"mbps\": %.1f, \"raw_mbps\": %.1f, "
               "\"ideal_mbps\": %.1f, \"ratio\": %.3f}",
               *first ? "" : ",", level, state, test, ours, raw, ideal, ideal > 0 ? ours / ideal : 0);
        *first = 0;
    } else {
        printf("  RAID-%d %-9s %-22s %9.1f MB/s   raw %9.1f   ideal %9.1f   ratio %.2f\n", level, state, test, ours,
               raw, ideal, ideal > 0 ? ours / ideal : 0);
    }
    fflush(stdout);
}

static int bench_level(const struct bopts *o, int level, int *first)
{
    int n = o->members, parity = level == 6 ? 2 : 1;
    char paths[URAID_MAX_MEMBERS][256];
    int fds[URAID_MAX_MEMBERS];
    for (int i = 0; i < n; i++)
        fds[i] = -1;
    int status = 0;
    if (make_members(o, level == 6 ? "r6" : "r5", n, paths, fds)) {
        remove_members(n, paths, fds);
        return 1;
    }
    /* raw member figures, measured in this run */
    struct job raw = {.threads = n, .seconds = o->seconds, .nfds = n, .fds = fds, .fd_size = o->member_bytes};
    raw.kind = SEQ_WRITE;
    raw.io = MiB;
    double raw_seq_write = median3(&raw);
    raw.kind = SEQ_READ;
    double raw_seq_read = median3(&raw);
    double raw_rand[3];
    size_t rand_sizes[3] = {4096, 65536, 524288};
    for (int i = 0; i < 3; i++) {
        struct job r = {.kind = RAND_WRITE, .io = rand_sizes[i], .threads = o->threads, .seconds = o->seconds,
                        .nfds = n, .fds = fds, .fd_size = o->member_bytes};
        raw_rand[i] = median3(&r);
    }
    const char *pp[URAID_MAX_MEMBERS];
    for (int i = 0; i < n; i++)
        pp[i] = paths[i];
    struct uraid_create_params cp = {.level = level, .raid_devices = n, .chunk_bytes = (uint32_t)o->chunk,
                                     .layout = -1, .name = "bench", .assume_clean = 1,
                                     .consistency_policy = o->policy};
    char why[512];
    if (uraid_create(pp, n, &cp, 1, why, sizeof why)) {
        cli_error("bench array", "%s", why);
        remove_members(n, paths, fds);
        return 1;
    }
    double share = (double)(n - parity) / n;
    /* healthy, [healthy with a bitmap,] degraded: the bitmap run re-creates
     * the array on the same members, so only the bitmap differs */
    for (int run = 0; run <= 2 && status == 0; run++) {
        int degraded = run == 2, bm = run == 1;
        if (bm && !o->bitmap)
            continue;
        if (bm) {
            struct uraid_create_params bp = cp;
            bp.bitmap = URAID_BITMAP_INTERNAL;
            bp.bitmap_chunk_bytes = o->bitmap_chunk;
            bp.consistency_policy = URAID_POLICY_BITMAP;
            if (uraid_create(pp, n, &bp, 1, why, sizeof why)) {
                cli_error("bench array", "%s", why);
                status = 1;
                break;
            }
        }
        struct uraid_array *a;
        if (open_array(o, paths, n, degraded ? 0 : -1, NULL, &a)) {
            status = 1;
            break;
        }
        /* the healthy run is named by its policy (ppl is RAID-5's default) */
        static struct uraid_array_info info;
        uraid_get_info(a, &info);
        const char *state = degraded ? "degraded" : bm ? "bitmap" : uraid_policy_name(info.consistency_policy);
        if (run == 0 && *first && !o->json)
            printf("  parity: gen_p=%s gen_pq=%s rmw=%s recov=%s; member I/O: %s\n",
                   uraid_parity_chosen(URAID_OP_GEN_P), uraid_parity_chosen(URAID_OP_GEN_PQ),
                   uraid_parity_chosen(URAID_OP_RMW), uraid_parity_chosen(URAID_OP_RECOV), uraid_io_engine(a));
        struct job j = {.a = a, .size = uraid_size(a), .seconds = o->seconds, .io = MiB, .threads = o->seq_threads};
        j.kind = SEQ_WRITE;
        double w = median3(&j);
        print_row(o, level, state, "seq write 1M", w, raw_seq_write, raw_seq_write * share, first);
        /* whole stripes per request: no member reads at all */
        struct job fj = j;
        fj.io = (size_t)4 * (size_t)(n - parity) * o->chunk;
        double fw = median3(&fj);
        char fname[40];
        snprintf(fname, sizeof fname, "full-stripe write %zuK", fj.io / 1024);
        print_row(o, level, state, fname, fw, raw_seq_write, raw_seq_write * share, first);
        j.kind = SEQ_READ;
        double r = median3(&j);
        print_row(o, level, state, "seq read 1M", r, raw_seq_read, raw_seq_read * share, first);
        for (int i = 0; i < 3; i++) {
            struct job rj = {.a = a, .size = uraid_size(a), .seconds = o->seconds, .io = rand_sizes[i],
                             .threads = o->threads, .kind = RAND_WRITE};
            double v = median3(&rj);
            char name[40];
            snprintf(name, sizeof name, "rand write %zuK x%d", rand_sizes[i] / 1024, o->threads);
            print_row(o, level, state, name, v, raw_rand[i], raw_rand[i] * share, first);
            if (rj.error)
                status = 1;
        }
        if (j.error)
            status = 1;
        uraid_close(a);
    }
    remove_members(n, paths, fds);
    return status;
}

/* The seed's scenario: 4 members at 60 MB/s, RAID-5, 64 KiB chunk. */
static int bench_throttled(const struct bopts *o, int *first)
{
    struct bopts t = *o;
    t.members = 4;
    t.member_bytes = 64 * MiB;
    char paths[4][256];
    int fds[4] = {-1, -1, -1, -1};
    if (make_members(&t, "thr", 4, paths, fds))
        return 1;
    const char *pp[4] = {paths[0], paths[1], paths[2], paths[3]};
    struct uraid_create_params cp = {.level = 5, .raid_devices = 4, .chunk_bytes = 65536, .layout = -1,
                                     .name = "bench", .assume_clean = 1};
    char why[512];
    int status = 0;
    if (uraid_create(pp, 4, &cp, 1, why, sizeof why)) {
        cli_error("bench array", "%s", why);
        status = 1;
    }
    const char *sim[4] = {"throttle=60M", "throttle=60M", "throttle=60M", "throttle=60M"};
    struct uraid_array *a = NULL;
    if (status == 0 && open_array(&t, paths, 4, -1, sim, &a) == 0) {
        struct job j = {.a = a, .size = uraid_size(a), .seconds = o->seconds, .io = 4 * MiB, .threads = 1,
                        .kind = SEQ_READ};
        double r = median3(&j);
        print_row(o, 5, "throttled", "stream read 4M", r, 4 * 60.0, 3 * 60.0, first);
        if (j.error)
            status = 1;
        uraid_close(a);
    } else {
        status = 1;
    }
    remove_members(4, paths, fds);
    return status;
}

int bench_array(int argc, char **argv)
{
    struct bopts o = {.members = 6, .threads = 8, .seq_threads = 2, .member_bytes = 256 * MiB, .chunk = 65536, .seconds = 2,
                      .dir = "/dev/shm", .rmw_level = -1};
    int levels[2] = {5, 6}, nlevels = 2;
    uint64_t x;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if (!strcmp(a, "--throttle")) {
            o.throttle = 1;
        } else if (!strcmp(a, "--bitmap")) {
            o.bitmap = 1;
        } else if (!strcmp(a, "--bitmap-chunk") && v && !cli_parse_size(v, &x) && x >= 4096 && !(x & (x - 1))) {
            o.bitmap = 1;
            o.bitmap_chunk = x;
            i++;
        } else if (!strcmp(a, "--consistency-policy") && v && uraid_policy_parse(v) > 0) {
            o.policy = uraid_policy_parse(v);
            i++;
        } else if (!strcmp(a, "--rmw-level") && v && strlen(v) == 1 && v[0] >= '0' && v[0] <= '2') {
            o.rmw_level = v[0] - '0';
            i++;
        } else if (!strcmp(a, "--no-uring")) {
            o.no_uring = 1;
        } else if (!strcmp(a, "--level") && v && (!strcmp(v, "5") || !strcmp(v, "6"))) {
            levels[0] = atoi(v);
            nlevels = 1;
            i++;
        } else if (!strcmp(a, "--threads") && v && atoi(v) >= 1 && atoi(v) <= 64) {
            o.threads = atoi(v);
            i++;
        } else if (!strcmp(a, "--seq-threads") && v && atoi(v) >= 1 && atoi(v) <= 64) {
            o.seq_threads = atoi(v);
            i++;
        } else if (!strcmp(a, "--seconds") && v && atof(v) > 0) {
            o.seconds = atof(v);
            i++;
        } else if (bench_shape_option(a, v, &o.members, &o.member_bytes, &o.chunk, &o.dir)) {
            i++;
        } else {
            return bench_usage_or_bad(
                "bench array", a,
                "usage: uraid bench array [--level 5|6] [--members N] [--chunk SIZE] [--size MEMBER_SIZE]\n"
                "                         [--threads N] [--seq-threads N] [--seconds S] [--dir DIR] [--no-uring] [--json]\n"
                "                         [--rmw-level 0|1|2]  (md's rmw_level for the partial-stripe writes)\n"
                "                         [--bitmap [--bitmap-chunk SIZE]]  (also healthy with a write-intent bitmap)\n"
                "                         [--consistency-policy resync|bitmap|ppl]  (the healthy run's; default: create's)\n"
                "       uraid bench array --throttle   (4 members at 60 MB/s, RAID-5, streaming read)\n");
        }
    }
    if (cli_setup_parity("bench array"))
        return 1;
    int first = 1, status = 0;
    if (o.json)
        printf("{\n  \"unit\": \"MB/s (10^6 bytes/s), median of 3 runs\",\n  \"parity\": \"%s\",\n  \"results\": [",
               uraid_parity_chosen(URAID_OP_GEN_PQ));
    else
        printf("uraid array benchmark: %d members of %llu MiB in %s, chunk %lluK, %.0f s per run, median of 3\n"
               "(ratio = ours / (raw x (n - parity) / n))\n",
               o.throttle ? 4 : o.members, (unsigned long long)(o.member_bytes / MiB), o.dir,
               (unsigned long long)(o.chunk / 1024), o.seconds);
    if (o.throttle)
        status = bench_throttled(&o, &first);
    else
        for (int l = 0; l < nlevels && status == 0; l++)
            status = bench_level(&o, levels[l], &first);
    if (o.json)
        printf("\n  ]\n}\n");
    return status;
}
