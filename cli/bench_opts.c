/* What the benchmarks share (cli/bench.h): the shape of the member files
 * and the end of the option loop of the array benchmarks, wall-clock time,
 * a median's sort, member files. */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "uraid_admin.h"

#define MiB (1024u * 1024u)

/* --members N (4 to 32), --size MEMBER_SIZE (16 MiB at least), --chunk SIZE
 * (a power of two, 4 KiB at least), --dir DIR: 1 when `a` is one of them
 * and its value v is good (stored; the caller skips v), else 0. */
int bench_shape_option(const char *a, const char *v, int *members, uint64_t *member_bytes, uint64_t *chunk,
                       const char **dir)
{
    uint64_t x;
    if (!v)
        return 0;
    if (!strcmp(a, "--members") && atoi(v) >= 4 && atoi(v) <= 32)
        *members = atoi(v);
    else if (!strcmp(a, "--size") && !cli_parse_size(v, &x) && x >= 16 * MiB)
        *member_bytes = x;
    else if (!strcmp(a, "--chunk") && !cli_parse_size(v, &x) && x >= 4096 && !(x & (x - 1)))
        *chunk = x;
    else if (!strcmp(a, "--dir"))
        *dir = v;
    else
        return 0;
    return 1;
}

/* An option no case of the loop took: -h/--help prints usage (exit 0),
 * anything else is refused (exit 2). */
int bench_usage_or_bad(const char *cmd, const char *a, const char *usage)
{
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        fputs(usage, stdout);
        return 0;
    }
    cli_error(cmd, "bad or incomplete option '%s' (try --help)", a);
    return 2;
}

double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int bench_make_file(const char *path, uint64_t bytes)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -errno;
    int rc = ftruncate(fd, (off_t)bytes) ? -errno : 0;
    uint8_t *z = calloc(1, MiB);
    for (uint64_t off = 0; rc == 0 && z && off < bytes; off += MiB)
        if (pwrite(fd, z, MiB, (off_t)off) != (ssize_t)MiB)
            rc = -EIO;
    if (!z)
        rc = -ENOMEM;
    free(z);
    close(fd);
    return rc;
}

double bench_member_rate(const char *path, const char *rate, uint64_t bytes, int write_half)
{
    char spec[64], why[300];
    snprintf(spec, sizeof spec, "throttle=%s", rate);
    struct uraid_member *m;
    if (uraid_member_open(path, !write_half, spec, &m, why, sizeof why))
        return 0;
    const uint64_t req = 2u << 20;
    double mbps = 0;
    uint8_t *buf = aligned_alloc(4096, req);
    if (buf) {
        memset(buf, 0, req);
        uint64_t span = (write_half ? bytes / 2 : bytes) / req * req, moved = 0, off;
        double t0 = bench_now_s();
        for (off = 0; off < span && !uraid_member_read(m, buf, req, off + 2 * req); off += req)
            moved += req;
        for (off = 0; write_half && off < span && !uraid_member_write(m, buf, req, off + 2 * req); off += req)
            moved += req;
        mbps = (double)moved / 1e6 / (bench_now_s() - t0);
    }
    free(buf);
    uraid_member_close(m);
    return mbps;
}
