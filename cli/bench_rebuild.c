/* uraid bench rebuild: how fast a failed member is rebuilt onto a spare
 * when every member is a simulated disk (the throttle layer: one request at
 * a time at RATE bytes/s), beside the raw rate of one such member measured
 * in the same run (sequential 2 MiB reads through the same layer).
 * Goal (issue 6): the rebuild writes the new member at >= 0.9 of the
 * member rate. Members are tmpfs files (--dir, default /dev/shm). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "uraid_admin.h"

#define MiB (1024u * 1024u)

struct ropts {
    int level, members, runs, json;
    uint64_t member_bytes;
    const char *rate, *dir;
};


/* One rebuild: MB/s per member (bytes written to the new member / time). */
static double one_rebuild(const struct ropts *o, char paths[][256], int *status)
{
    int n = o->members;
    const char *p[URAID_MAX_MEMBERS];
    for (int i = 0; i <= n; i++)
        p[i] = paths[i];
    struct uraid_create_params cp = {.level = o->level, .raid_devices = n, .spare_devices = 1, .chunk_bytes = 512 * 1024,
                                     .layout = -1, .name = "bench", .assume_clean = 1};
    char why[512];
    if (uraid_create(p, n + 1, &cp, 1, why, sizeof why)) {
        cli_error("bench rebuild", "%s", why);
        *status = 1;
        return 0;
    }
    /* slot 1 is gone; the spare (last) takes its place */
    const char *use[URAID_MAX_MEMBERS], *sim[URAID_MAX_MEMBERS];
    char spec[64];
    snprintf(spec, sizeof spec, "throttle=%s", o->rate);
    int k = 0;
    for (int i = 0; i <= n; i++)
        if (i != 1) {
            sim[k] = spec;
            use[k++] = paths[i];
        }
    struct uraid_open_params op = {.member_sim = sim};
    struct uraid_array *a;
    if (uraid_open(use, k, &op, &a, why, sizeof why)) {
        cli_error("bench rebuild", "%s", why);
        *status = 1;
        return 0;
    }
    struct uraid_job_params jp = {.slot = -1};
    double mbps = 0;
    if (uraid_job_start(a, URAID_JOB_RECOVER, &jp, why, sizeof why) == 0) {
        struct uraid_job_status st;
        int rc = uraid_job_wait(a, &st);
        if (rc) {
            cli_error("bench rebuild", "rebuild failed: %s", st.why);
            *status = 1;
        } else {
            mbps = (double)st.total_sectors * 512 / 1e6 / ((double)st.elapsed_ms / 1000.0);
        }
    } else {
        cli_error("bench rebuild", "%s", why);
        *status = 1;
    }
    uraid_close(a);
    return mbps;
}

int bench_rebuild(int argc, char **argv)
{
    struct ropts o = {.level = 6, .members = 6, .runs = 3, .member_bytes = 512ull * MiB, .rate = "150M",
                      .dir = "/dev/shm"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t bytes;
        if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if (!strcmp(a, "--level") && v) {
            o.level = atoi(v);
            i++;
        } else if (!strcmp(a, "--members") && v) {
            o.members = atoi(v);
            i++;
        } else if (!strcmp(a, "--runs") && v) {
            o.runs = atoi(v);
            i++;
        } else if (!strcmp(a, "--rate") && v) {
            o.rate = v;
            i++;
        } else if (!strcmp(a, "--dir") && v) {
            o.dir = v;
            i++;
        } else if (!strcmp(a, "--size") && v && cli_parse_size(v, &bytes) == 0 && bytes >= 16 * MiB) {
            o.member_bytes = bytes;
            i++;
        } else {
            printf("usage: uraid bench rebuild [--level 5|6] [--members N] [--size BYTES] [--rate RATE] [--runs N]\n"
                   "                           [--dir DIR] [--json]\n"
                   "  rebuilds one member onto a spare, every member throttled to RATE (default 150M),\n"
                   "  beside the raw read rate of one such member measured in the same run.\n");
            return strcmp(a, "--help") && strcmp(a, "-h") ? 2 : 0;
        }
    }
    if ((o.level != 5 && o.level != 6) || o.members < 3 || o.members > 32 || o.runs < 1 || o.runs > 9) {
        cli_error("bench rebuild", "need --level 5 or 6, 3..32 members, 1..9 runs");
        return 2;
    }
    if (cli_setup_parity("bench rebuild"))
        return 1;
    char paths[URAID_MAX_MEMBERS + 1][256];
    int status = 0;
    for (int i = 0; i <= o.members && status == 0; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/uraid-bench-rebuild-%d-%d.img", o.dir, (int)getpid(), i);
        if (bench_make_file(paths[i], o.member_bytes)) {
            cli_error("bench rebuild", "cannot create %s", paths[i]);
            status = 1;
        }
    }
    double ours[9], raw[9];
    int runs = 0;
    for (int r = 0; r < o.runs && status == 0; r++) {
        raw[r] = bench_member_rate(paths[0], o.rate, o.member_bytes - 8 * MiB, 0);
        ours[r] = one_rebuild(&o, paths, &status);
        runs++;
        if (!o.json)
            printf("  run %d: rebuild %.1f MB/s per member, raw member %.1f MB/s, ratio %.2f\n", r + 1, ours[r],
                   raw[r], raw[r] > 0 ? ours[r] / raw[r] : 0);
    }
    for (int i = 0; i <= o.members; i++)
        unlink(paths[i]);
    if (status || runs == 0)
        return 1;
    qsort(ours, (size_t)runs, sizeof ours[0], bench_cmp_double);
    qsort(raw, (size_t)runs, sizeof raw[0], bench_cmp_double);
    double mo = ours[runs / 2], mr = raw[runs / 2];
    if (o.json)
        printf("{\"bench\": \"rebuild\", \"level\": %d, \"members\": %d, \"rate\": \"%s\", \"member_bytes\": %llu, "
               "\"parity\": \"%s\", \"rebuild_mbps\": %.1f, \"raw_member_mbps\": %.1f, \"ratio\": %.3f}\n",
               o.level, o.members, o.rate, (unsigned long long)o.member_bytes, uraid_parity_chosen(URAID_OP_RECOV),
               mo, mr, mr > 0 ? mo / mr : 0);
    else
        printf("rebuild RAID-%d n=%d, members throttled to %s, parity recovery %s: median %.1f MB/s per member, raw "
               "member %.1f MB/s, ratio %.2f (goal 0.90)\n",
               o.level, o.members, o.rate, uraid_parity_chosen(URAID_OP_RECOV), mo, mr, mr > 0 ? mo / mr : 0);
    return 0;
}
