/* What the benchmarks share (bench_opts.c): option parsing of the array
 * benchmarks, wall-clock time, a median's sort, and member files. */
#ifndef URAID_CLI_BENCH_H
#define URAID_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>

struct uraid_array;

/* One run of a job on an open array (bench_array.c): `threads` threads for
 * `seconds`, each request `io` bytes; sequential jobs stream one region per
 * thread, random writes are io-aligned. MB/s; the first error in *error. */
enum { BENCH_SEQ_READ, BENCH_SEQ_WRITE, BENCH_RAND_WRITE };
double bench_array_rate(struct uraid_array *a, int kind, size_t io, int threads, double seconds, int *error);
/* Sequential: streams, each with depth requests in flight (threads taking
 * the stream's next request in turn). */
double bench_array_rate_qd(struct uraid_array *a, int kind, size_t io, int streams, int depth, double seconds,
                           int *error);

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
