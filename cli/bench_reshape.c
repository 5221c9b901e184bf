/* uraid bench reshape: how fast an offline grow (RAID-5 of 4 -> 5 members by
 * default) moves the data when every member is a simulated disk (the
 * throttle layer: one request at a time at RATE bytes/s), beside what such
 * members can do, measured in the same run.
 *
 * The limit: the grow must read every data block once (D bytes, the array's
 * size: D / n from each of the n old members, parity need not be read) and
 * write every stripe of the new geometry, the new space past D included (it
 * is written as zeros with their parity, as md writes it, so that it checks
 * clean): D' / (n + 1 - p) on each of the n + 1 members for the grown size
 * D', and a member does one request at a time. So an old member has
 * D / n + D' / (n + 1 - p) bytes to move at its measured rate, and that is
 * the least time the grow can take; ratio = that time / the grow's time.
 * With --shrink (N + 1 members to N, md's backwards reshape; the member
 * size is cut by one chunk for its room and the array keeps D' = what N
 * members then hold): each old member reads D' / (N + 1) of data and each
 * staying member writes D' / (N - p), the least time being D' / (N + 1) +
 * D' / (N - p) at the member rate.
 * Goal (issue 12): >= 0.8. (Before 2026-12-02's third session the limit
 * left the new space out: D / (n + 1 - p), ratios 6/7 of today's for a
 * RAID-5 4 -> 5.)
 * Members are tmpfs files (--dir, default /dev/shm). */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "uraid.h"
#include "uraid_admin.h"
#include "uraid_grow.h"

#define MiB (1024u * 1024u)

struct gopts {
    int level, members, runs, json, shrink, online;
    uint64_t member_bytes;
    const char *rate, *dir;
};


/* The array sectors a shrink of the array on member p[0] to `to` members
 * keeps: the member size cut by one chunk (room for the backwards reshape,
 * as uraid grow cuts it), in whole chunks, times the data members. */
static uint64_t shrink_keeps(const struct gopts *o, const char *member, int to)
{
    struct uraid_examine ex;
    char why[512];
    if (uraid_examine(member, &ex, why, sizeof why)) {
        cli_error("bench reshape", "%s", why);
        return 0;
    }
    uint64_t c = ex.chunk_bytes / 512, used = ex.used_dev_sectors ? ex.used_dev_sectors : ex.avail_dev_sectors;
    uint64_t per = used / c * c;
    return per > c ? (per - c) * (uint64_t)(to - (o->level == 6 ? 2 : 1)) : 0;
}

/* One reshape: a grow from o->members to o->members + 1, or with
 * o->shrink from o->members + 1 to o->members. Its time in seconds; the
 * array's bytes before the grow (kept by the shrink) in *data. */
static double one_reshape(const struct gopts *o, char paths[][256], double *data, int *status)
{
    int n = o->members, created = o->shrink ? n + 1 : n;
    const char *p[URAID_MAX_MEMBERS], *sim[URAID_MAX_MEMBERS];
    char spec[64];
    snprintf(spec, sizeof spec, "throttle=%s", o->rate);
    for (int i = 0; i <= n; i++) {
        p[i] = paths[i];
        sim[i] = spec;
    }
    /* a grow keeps no bitmap or PPL (md reshapes neither): resync policy */
    struct uraid_create_params cp = {.level = o->level, .raid_devices = created, .chunk_bytes = 512 * 1024,
                                     .layout = -1, .name = "bench", .assume_clean = 1,
                                     .consistency_policy = URAID_POLICY_RESYNC};
    char why[512];
    if (uraid_create(p, created, &cp, 1, why, sizeof why)) {
        cli_error("bench reshape", "%s", why);
        *status = 1;
        return 0;
    }
    struct uraid_grow_params gp = {.raid_devices = o->shrink ? n : n + 1, .member_sim = sim};
    if (o->shrink && !(gp.array_sectors = shrink_keeps(o, p[0], n))) {
        *status = 1;
        return 0;
    }
    struct uraid_grow_result res;
    double t0 = bench_now_s();
    int rc = o->shrink ? uraid_grow_members(p, n + 1, NULL, 0, &gp, &res, why, sizeof why)
                       : uraid_grow_members(p, n, p + n, 1, &gp, &res, why, sizeof why);
    double t = bench_now_s() - t0;
    if (rc) {
        cli_error("bench reshape", "%s", why);
        *status = 1;
        return 0;
    }
    *data = (double)(o->shrink ? res.to_sectors : res.from_sectors) * 512;
    return t;
}

/* --online: user reads beside the reshape. READERS threads read 64 KiB at
 * random places of the array, one request each at a time. */
#define READERS 4
#define READ_BYTES (64u * 1024u)

struct reader {
    struct uraid_array *a;
    uint64_t blocks;       /* of READ_BYTES in the array */
    volatile int *stop;
    uint64_t bytes;        /* read so far (atomic) */
    unsigned seed;
    pthread_t thread;
};

static void *reader_run(void *arg)
{
    struct reader *r = arg;
    void *buf = aligned_alloc(4096, READ_BYTES);
    while (buf && !*r->stop) {
        uint64_t off = (uint64_t)rand_r(&r->seed) % r->blocks * READ_BYTES;
        if (uraid_read(r->a, buf, READ_BYTES, off) == 0)
            __atomic_add_fetch(&r->bytes, READ_BYTES, __ATOMIC_RELAXED);
    }
    free(buf);
    return NULL;
}

static uint64_t readers_bytes(struct reader *r)
{
    uint64_t sum = 0;
    for (int i = 0; i < READERS; i++)
        sum += __atomic_load_n(&r[i].bytes, __ATOMIC_RELAXED);
    return sum;
}

/* The grow of one_reshape on the open array while READERS read: the
 * reshape's time; the readers' MB/s before it (2 s) and during it. The
 * background speed floor is lifted (md keeps 1 MB/s per member under user
 * I/O, sync_speed_min): this measures what the two cost each other. */
static double one_online(const struct gopts *o, char paths[][256], double *data, double *before, double *during,
                         int *status)
{
    int n = o->members;
    const char *p[URAID_MAX_MEMBERS], *sim[URAID_MAX_MEMBERS];
    char spec[64], why[512];
    snprintf(spec, sizeof spec, "throttle=%s", o->rate);
    for (int i = 0; i <= n; i++)
        p[i] = paths[i], sim[i] = spec;
    struct uraid_create_params cp = {.level = o->level, .raid_devices = n, .chunk_bytes = 512 * 1024, .layout = -1,
                                     .name = "bench", .assume_clean = 1, .consistency_policy = URAID_POLICY_RESYNC};
    struct uraid_open_params op = {.member_sim = sim, .sync_speed_min_kib = 100ull << 20};
    struct uraid_array *a = NULL;
    if (uraid_create(p, n, &cp, 1, why, sizeof why) || uraid_open(p, n, &op, &a, why, sizeof why)) {
        cli_error("bench reshape", "%s", why);
        *status = 1;
        return 0;
    }
    *data = (double)uraid_size(a);
    volatile int stop = 0;
    struct reader rd[READERS];
    for (int i = 0; i < READERS; i++) {
        rd[i] = (struct reader){.a = a, .blocks = uraid_size(a) / READ_BYTES, .stop = &stop, .seed = 7u + (unsigned)i};
        pthread_create(&rd[i].thread, NULL, reader_run, &rd[i]);
    }
    double t0 = bench_now_s();
    uint64_t b0 = readers_bytes(rd);
    usleep(2000 * 1000);
    double t1 = bench_now_s();
    uint64_t b1 = readers_bytes(rd);
    const char *added[1] = {p[n]};
    int rc = uraid_grow_online(a, n + 1, added, 1, why, sizeof why);
    struct uraid_job_status st = {0};
    while (rc == 0 && uraid_job_status(a, &st) == 0 && st.running)
        usleep(20 * 1000);
    double t2 = bench_now_s();
    uint64_t b2 = readers_bytes(rd);
    stop = 1;
    for (int i = 0; i < READERS; i++)
        pthread_join(rd[i].thread, NULL);
    if (rc == 0 && st.result)
        rc = st.result, snprintf(why, sizeof why, "%s", st.why);
    int crc = uraid_close(a);
    if (rc || crc) {
        cli_error("bench reshape", "%s", rc ? why : uraid_strerror(crc));
        *status = 1;
        return 0;
    }
    *before = (double)(b1 - b0) / 1e6 / (t1 - t0);
    *during = (double)(b2 - b1) / 1e6 / (t2 - t1);
    return t2 - t1;
}

/* The least time the members allow (the file comment): bytes per member
 * at the raw rate. */
static double member_limit_s(const struct gopts *o, double data, double raw_mbps)
{
    int n = o->members, par = o->level == 6 ? 2 : 1;
    double per_member;
    if (o->shrink) { /* read the kept data from n + 1 members, write it to n */
        per_member = data / (n + 1) + data / (n - par);
    } else {
        double grown = data * (n + 1 - par) / (n - par); /* the same members, one more of them */
        per_member = data / n + grown / (n + 1 - par);
    }
    return per_member / 1e6 / raw_mbps;
}

static int parse(int argc, char **argv, struct gopts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t bytes;
        if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--shrink")) {
            o->shrink = 1;
        } else if (!strcmp(a, "--online")) {
            o->online = 1;
        } else if (!strcmp(a, "--level") && v) {
            o->level = atoi(v);
            i++;
        } else if (!strcmp(a, "--members") && v) {
            o->members = atoi(v);
            i++;
        } else if (!strcmp(a, "--runs") && v) {
            o->runs = atoi(v);
            i++;
        } else if (!strcmp(a, "--rate") && v) {
            o->rate = v;
            i++;
        } else if (!strcmp(a, "--dir") && v) {
            o->dir = v;
            i++;
        } else if (!strcmp(a, "--size") && v && cli_parse_size(v, &bytes) == 0 && bytes >= 32 * MiB) {
            o->member_bytes = bytes;
            i++;
        } else {
            printf("usage: uraid bench reshape [--level 5|6] [--members N] [--shrink | --online] [--size BYTES]\n"
                   "                           [--rate RATE] [--runs N] [--dir DIR] [--json]\n"
                   "  grows a RAID-5/6 of N members (default 4) by one (--shrink: shrinks one of N + 1 to N;\n"
                   "  --online: grows it while it is open, with 4 threads reading 64 KiB at random before and\n"
                   "  during the reshape), every member throttled to RATE (default 150M), beside the\n"
                   "  read+write rate of one such member measured in the same run.\n");
            return strcmp(a, "--help") && strcmp(a, "-h") ? 2 : 0;
        }
    }
    if ((o->level != 5 && o->level != 6) || o->members < 3 || o->members > 31 || o->runs < 1 || o->runs > 9) {
        cli_error("bench reshape", "need --level 5 or 6, 3..31 members, 1..9 runs");
        return 2;
    }
    if (o->online && o->shrink) {
        cli_error("bench reshape", "--online measures a grow: give --online or --shrink, not both");
        return 2;
    }
    return -1;
}

int bench_reshape(int argc, char **argv)
{
    struct gopts o = {.level = 5, .members = 4, .runs = 3, .member_bytes = 256ull * MiB, .rate = "150M",
                      .dir = "/dev/shm"};
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (cli_setup_parity("bench reshape"))
        return 1;
    char paths[URAID_MAX_MEMBERS + 1][256];
    int status = 0, n = o.members;
    for (int i = 0; i <= n && status == 0; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/uraid-bench-reshape-%d-%d.img", o.dir, (int)getpid(), i);
        if (bench_make_file(paths[i], o.member_bytes)) {
            cli_error("bench reshape", "cannot create %s", paths[i]);
            status = 1;
        }
    }
    double ratio[9], speed[9], raw[9], before[9], during[9];
    int runs = 0;
    for (int r = 0; r < o.runs && status == 0; r++) {
        raw[r] = bench_member_rate(paths[n], o.rate, o.member_bytes - 8 * MiB, 1);
        double data = 0, t = o.online ? one_online(&o, paths, &data, &before[r], &during[r], &status)
                                      : one_reshape(&o, paths, &data, &status);
        if (status || t <= 0 || raw[r] <= 0)
            break;
        double limit = member_limit_s(&o, data, raw[r]);
        speed[r] = data / 1e6 / t;
        ratio[r] = limit / t;
        runs++;
        if (!o.json)
            printf("  run %d: %.0f MB of data moved in %.2f s (%.1f MB/s of array data); member limit %.2f s "
                   "(raw member %.1f MB/s read+write); ratio %.2f\n",
                   r + 1, data / 1e6, t, speed[r], limit, raw[r], ratio[r]);
        if (!o.json && o.online)
            printf("         user reads (%d x 64 KiB random): %.1f MB/s before, %.1f MB/s during the reshape (%.2f)\n",
                   READERS, before[r], during[r], before[r] > 0 ? during[r] / before[r] : 0);
    }
    for (int i = 0; i <= n; i++)
        unlink(paths[i]);
    if (status || runs == 0)
        return 1;
    qsort(ratio, (size_t)runs, sizeof ratio[0], bench_cmp_double);
    qsort(speed, (size_t)runs, sizeof speed[0], bench_cmp_double);
    qsort(raw, (size_t)runs, sizeof raw[0], bench_cmp_double);
    qsort(before, (size_t)runs, sizeof before[0], bench_cmp_double);
    qsort(during, (size_t)runs, sizeof during[0], bench_cmp_double);
    int from = o.shrink ? n + 1 : n, to = o.shrink ? n : n + 1, mid = runs / 2;
    if (o.json) {
        printf("{\"bench\": \"reshape\", \"mode\": \"%s\", \"level\": %d, \"from\": %d, \"to\": %d, \"rate\": \"%s\", "
               "\"member_bytes\": %llu, \"array_mbps\": %.1f, \"raw_member_mbps\": %.1f, \"ratio\": %.3f",
               o.online ? "online" : "offline", o.level, from, to, o.rate, (unsigned long long)o.member_bytes,
               speed[mid], raw[mid], ratio[mid]);
        if (o.online)
            printf(", \"user_mbps_before\": %.1f, \"user_mbps_during\": %.1f", before[mid], during[mid]);
        printf("}\n");
    } else {
        printf("reshape RAID-%d %d -> %d members%s, members throttled to %s: median %.1f MB/s of array data, raw member "
               "%.1f MB/s, ratio to the members' limit %.2f (goal 0.80)\n",
               o.level, from, to, o.online ? " online" : "", o.rate, speed[mid], raw[mid], ratio[mid]);
        if (o.online)
            printf("user reads: median %.1f MB/s before, %.1f MB/s during the reshape\n", before[mid], during[mid]);
    }
    return 0;
}
