/* uraid bench scrub: a check of a healthy array beside the raw read rate of
 * the same member bytes, measured in the same run.
 *
 *   raw:   one thread per member preads its data area (1 MiB requests),
 *          all members at once: the aggregate rate they can deliver;
 *   check: uraid_job_start(CHECK) on the same members, no speed limit.
 * Figures are MB/s of member bytes (10^6 bytes/s; a check reads every
 * member's data area once); ratio = check / raw, where raw is the mean of
 * a raw pass just before and one just after that check; the run with the
 * median ratio of 5 is shown.
 * "cpu ratio" = CPU time of the raw passes / CPU time of the check (the
 * check's includes opening and closing the array): the ratio a machine
 * with every core free for the benchmark would show, when the rates are
 * bound by the CPU (memory-backed members) and the machine is shared.
 * --throttle N also runs the members simulated at N MB/s each (the
 * reference is then n x N: disks, not memory, set the pace). */
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
#define RUNS 5
#define REQ (1u * MiB)

struct sopts {
    int members, level, json;
    uint64_t member_bytes, chunk, throttle_mb;
    const char *dir;
};

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct reader {
    const char *path;
    uint64_t off, len;
    int error;
};

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    uint8_t *buf = aligned_alloc(4096, REQ);
    int fd = open(r->path, O_RDONLY);
    if (!buf || fd < 0) {
        r->error = -EIO;
    } else {
        for (uint64_t o = 0; o < r->len; o += REQ) {
            size_t l = r->len - o < REQ ? (size_t)(r->len - o) : REQ;
            if (pread(fd, buf, l, (off_t)(r->off + o)) != (ssize_t)l) {
                r->error = -EIO;
                break;
            }
        }
    }
    if (fd >= 0)
        close(fd);
    free(buf);
    return NULL;
}

/* MB/s of all members' data areas read in parallel. */
static double raw_read(char paths[][256], int n, uint64_t off, uint64_t len)
{
    pthread_t t[URAID_MAX_MEMBERS];
    struct reader r[URAID_MAX_MEMBERS];
    double t0 = bench_now_s();
    for (int i = 0; i < n; i++) {
        r[i] = (struct reader){.path = paths[i], .off = off, .len = len};
        pthread_create(&t[i], NULL, reader_main, &r[i]);
    }
    int err = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        err |= r[i].error;
    }
    return err ? -1 : (double)len * n / (bench_now_s() - t0) / 1e6;
}

/* MB/s of member bytes a check reads; -1 on an error or a mismatch. */
static double check_once(char paths[][256], int n, const char *sim, uint64_t *mismatch)
{
    const char *p[URAID_MAX_MEMBERS], *s[URAID_MAX_MEMBERS];
    for (int i = 0; i < n; i++) {
        p[i] = paths[i];
        s[i] = sim;
    }
    struct uraid_open_params op = {.member_sim = sim ? s : NULL};
    struct uraid_array *a;
    char why[512];
    if (uraid_open(p, n, &op, &a, why, sizeof why)) {
        cli_error("bench scrub", "%s", why);
        return -1;
    }
    struct uraid_job_status st;
    double t0 = bench_now_s();
    int rc = uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why);
    if (rc == 0)
        rc = uraid_job_wait(a, &st);
    double secs = bench_now_s() - t0;
    if (rc)
        cli_error("bench scrub", "check: %s", why[0] ? why : uraid_strerror(rc));
    *mismatch = rc ? 0 : st.mismatch_sectors;
    uraid_close(a);
    return rc ? -1 : (double)st.total_sectors * 512.0 * n / secs / 1e6;
}

/* cpu: CPU time of the reference / CPU time of the check for the same
 * bytes (0 when not measured): what the ratio would be with every core free. */
static void row(const struct sopts *o, const char *test, double ours, double ref, double cpu, int *first)
{
    if (o->json) {
        printf("%s\n    {\"level\": %d, \"members\": %d, \"test\": \"%s\", \"mbps\": %.1f, \"ref_mbps\": %.1f, "
               "\"ratio\": %.3f, \"cpu_ratio\": %.3f}",
               *first ? "" : ",", o->level, o->members, test, ours, ref, ref > 0 ? ours / ref : 0, cpu);
        *first = 0;
    } else {
        printf("  RAID-%d n=%d %-26s %9.1f MB/s   reference %9.1f   ratio %.2f", o->level, o->members, test, ours,
               ref, ref > 0 ? ours / ref : 0);
        if (cpu > 0)
            printf("   cpu ratio %.2f", cpu);
        printf("\n");
    }
    fflush(stdout);
}

/* Creates and fills members of member_bytes and an array on them. */
static int make_array(const struct sopts *o, const char *tag, uint64_t member_bytes, char paths[][256])
{
    const char *pp[URAID_MAX_MEMBERS];
    for (int i = 0; i < o->members; i++) {
        snprintf(paths[i], 256, "%s/uraid-bench-scrub-%s-%d-%d.img", o->dir, tag, (int)getpid(), i);
        int fd = open(paths[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)member_bytes)) {
            cli_error("bench scrub", "cannot create %s: %s", paths[i], strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
        close(fd);
        pp[i] = paths[i];
    }
    struct uraid_create_params cp = {.level = o->level, .raid_devices = o->members, .chunk_bytes = (uint32_t)o->chunk,
                                     .layout = -1, .name = "bench", .assume_clean = 1};
    char why[512];
    if (uraid_create(pp, o->members, &cp, 1, why, sizeof why)) {
        cli_error("bench scrub", "%s", why);
        return -1;
    }
    /* real data and parity in every byte: holes would read as free zero pages */
    struct uraid_array *a;
    if (uraid_open(pp, o->members, NULL, &a, why, sizeof why)) {
        cli_error("bench scrub", "%s", why);
        return -1;
    }
    uint8_t *buf = aligned_alloc(4096, 4 * MiB);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; buf && i < 4 * MiB / 8; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(buf + i * 8, &x, 8);
    }
    int rc = buf ? 0 : -ENOMEM;
    uint64_t size = uraid_size(a);
    for (uint64_t off = 0; rc == 0 && off < size; off += 4 * MiB) {
        buf[off / MiB % 4096] ^= 1; /* not the same 4 MiB everywhere */
        rc = uraid_write(a, buf, size - off < 4 * MiB ? (size_t)(size - off) : 4 * MiB, off);
    }
    free(buf);
    int crc = uraid_close(a);
    if (rc || crc)
        cli_error("bench scrub", "filling the array: %s", uraid_strerror(rc ? rc : crc));
    return rc || crc ? -1 : 0;
}

static void remove_members(const struct sopts *o, char paths[][256])
{
    for (int i = 0; i < o->members; i++)
        unlink(paths[i]);
}

static int run(const struct sopts *o, int throttled, int *first)
{
    char paths[URAID_MAX_MEMBERS][256];
    uint64_t mb = throttled ? 64 * MiB : o->member_bytes;
    int status = 0;
    if (make_array(o, throttled ? "thr" : "fast", mb, paths)) {
        remove_members(o, paths);
        return 1;
    }
    /* the data area the check reads: from data_offset, whole chunks */
    struct uraid_array *a;
    const char *pp[URAID_MAX_MEMBERS];
    for (int i = 0; i < o->members; i++)
        pp[i] = paths[i];
    char why[512];
    struct uraid_array_info *info = malloc(sizeof *info);
    if (!info || uraid_open(pp, o->members, NULL, &a, why, sizeof why)) {
        free(info);
        remove_members(o, paths);
        return 1;
    }
    uraid_get_info(a, info);
    uint64_t off = info->member[0].data_offset_sectors * 512;
    uint64_t len = info->member_data_sectors / (o->chunk / 512) * o->chunk;
    uraid_close(a);
    free(info);
    char sim[64];
    snprintf(sim, sizeof sim, "throttle=%lluM", (unsigned long long)o->throttle_mb);
    /* the machine's load drifts: each run's check sits between two raw
     * passes and is compared with their mean; the median run is shown */
    double ours[RUNS], ref[RUNS], ratio[RUNS], cpu[RUNS];
    uint64_t mism = 0, m = 0;
    for (int r = 0; r < RUNS && status == 0; r++) {
        double c0 = cpu_s();
        double before = throttled ? (double)o->throttle_mb * o->members : raw_read(paths, o->members, off, len);
        double c1 = cpu_s();
        ours[r] = check_once(paths, o->members, throttled ? sim : NULL, &m);
        double c2 = cpu_s();
        double after = throttled ? before : raw_read(paths, o->members, off, len);
        double c3 = cpu_s();
        cpu[r] = throttled ? 0 : (c1 - c0 + c3 - c2) / 2 / (c2 - c1);
        ref[r] = (before + after) / 2;
        mism += m;
        if (ours[r] < 0 || before < 0 || after < 0)
            status = 1;
        ratio[r] = ours[r] / ref[r];
    }
    if (status == 0) {
        int med = 0; /* the run with the median ratio */
        for (int r = 0; r < RUNS; r++) {
            int below = 0;
            for (int q = 0; q < RUNS; q++)
                below += ratio[q] < ratio[r] || (ratio[q] == ratio[r] && q < r);
            if (below == RUNS / 2)
                med = r;
        }
        char name[64];
        if (throttled)
            snprintf(name, sizeof name, "check, members at %lluM/s", (unsigned long long)o->throttle_mb);
        else
            snprintf(name, sizeof name, "check vs parallel pread");
        row(o, name, ours[med], ref[med], cpu[med], first);
    }
    if (mism) {
        cli_error("bench scrub", "a healthy array reported mismatch_cnt %llu", (unsigned long long)mism);
        status = 1;
    }
    remove_members(o, paths);
    return status;
}

int bench_scrub(int argc, char **argv)
{
    struct sopts o = {.members = 6, .level = 6, .member_bytes = 256 * MiB, .chunk = 65536, .dir = "/dev/shm"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if (!strcmp(a, "--level") && v && (!strcmp(v, "5") || !strcmp(v, "6"))) {
            o.level = atoi(argv[++i]);
        } else if (!strcmp(a, "--throttle") && v && atoi(v) > 0) {
            o.throttle_mb = (uint64_t)atoi(argv[++i]);
        } else if (bench_shape_option(a, v, &o.members, &o.member_bytes, &o.chunk, &o.dir)) {
            i++;
        } else {
            return bench_usage_or_bad("bench scrub", a,
                                      "usage: uraid bench scrub [--level 5|6] [--members N] [--chunk SIZE] "
                                      "[--size MEMBER_SIZE]\n"
                                      "                         [--dir DIR] [--throttle MB_PER_S] [--json]\n");
        }
    }
    if (cli_setup_parity("bench scrub"))
        return 1;
    int first = 1;
    if (o.json)
        printf("{\n  \"unit\": \"MB/s of member bytes (10^6 bytes/s), median-ratio run of 5\",\n  \"parity\": \"%s\",\n"
               "  \"results\": [",
               uraid_parity_chosen(URAID_OP_GEN_PQ));
    else
        printf("uraid scrub benchmark: RAID-%d, %d members of %llu MiB in %s, chunk %lluK, median-ratio run of 5\n"
               "(MB/s of member bytes read; ratio = check / reference)\n",
               o.level, o.members, (unsigned long long)(o.member_bytes / MiB), o.dir,
               (unsigned long long)(o.chunk / 1024));
    int status = run(&o, 0, &first);
    if (status == 0 && o.throttle_mb)
        status = run(&o, 1, &first);
    if (o.json)
        printf("\n  ]\n}\n");
    return status;
}
