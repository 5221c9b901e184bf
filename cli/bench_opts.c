/* Option parsing that the array benchmarks (bench array, bench scrub)
 * share: the shape of the member files and the end of the option loop.
 * Declared where used, as cmd_bench.c declares the benchmarks. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MiB (1024u * 1024u)

int bench_shape_option(const char *a, const char *v, int *members, uint64_t *member_bytes, uint64_t *chunk,
                       const char **dir);
int bench_usage_or_bad(const char *cmd, const char *a, const char *usage);

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
