/* What the benchmarks share (bench_opts.c): option parsing of the array
 * benchmarks, wall-clock time, a median's sort, and member files. */
#ifndef URAID_CLI_BENCH_H
#define URAID_CLI_BENCH_H

#include <stdint.h>

int bench_shape_option(const char *a, const char *v, int *members, uint64_t *member_bytes, uint64_t *chunk,
                       const char **dir);
int bench_usage_or_bad(const char *cmd, const char *a, const char *usage);
/* Seconds on CLOCK_MONOTONIC. */
double bench_now_s(void);
/* qsort's comparison of doubles (for medians). */
int bench_cmp_double(const void *a, const void *b);
/* A member file of `bytes`, every page written (tmpfs pages allocated now,
 * so no measured pass pays for them). 0 or a negative errno. */
int bench_make_file(const char *path, uint64_t bytes);
/* MB/s of sequential 2 MiB requests through "throttle=RATE" on the member
 * at path, from 4 MiB in: `bytes` read, or (write_half) half of them read
 * and then the same range written, as a grow's members do both. 0 when the
 * member cannot be opened. */
double bench_member_rate(const char *path, const char *rate, uint64_t bytes, int write_half);

#endif
