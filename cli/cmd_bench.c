/* uraid bench TARGET: benchmarks that print ratios to references measured in
 * the same run (never pass/fail timing). */
#include <string.h>

#include "cli.h"

int bench_parity(int argc, char **argv);
int bench_array(int argc, char **argv);
int bench_rebuild(int argc, char **argv);
int bench_scrub(int argc, char **argv);
int bench_reshape(int argc, char **argv);
int bench_seeds(int argc, char **argv);
int bench_policy(int argc, char **argv);

int cmd_bench(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        printf("usage: uraid bench parity [--json] [--k N] [--chunk SIZE] [--impl NAME]\n"
               "       uraid bench array [--level 5|6] [--members N] [--throttle] [--json] ... (--help)\n"
               "       uraid bench policy [--level 5|6] [--rounds N] [--member-layer SPEC] ... (--help)\n"
               "       uraid bench rebuild [--level 5|6] [--members N] [--rate 150M] [--json] ... (--help)\n"
               "       uraid bench scrub [--level 5|6] [--members N] [--throttle MB_PER_S] [--json] ... (--help)\n"
               "       uraid bench reshape [--level 5|6] [--members N] [--rate 150M] [--json] ... (--help)\n"
               "       uraid bench seeds [--quick] [--out DIR] (--help)\n");
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "parity"))
        return bench_parity(argc - 1, argv + 1);
    if (!strcmp(argv[1], "array"))
        return bench_array(argc - 1, argv + 1);
    if (!strcmp(argv[1], "policy"))
        return bench_policy(argc - 1, argv + 1);
    if (!strcmp(argv[1], "rebuild"))
        return bench_rebuild(argc - 1, argv + 1);
    if (!strcmp(argv[1], "scrub"))
        return bench_scrub(argc - 1, argv + 1);
    if (!strcmp(argv[1], "reshape"))
        return bench_reshape(argc - 1, argv + 1);
    if (!strcmp(argv[1], "seeds"))
        return bench_seeds(argc - 1, argv + 1);
    cli_error("bench", "unknown benchmark '%s' (available: parity, array, policy, rebuild, scrub, reshape, seeds)", argv[1]);
    return 2;
}
