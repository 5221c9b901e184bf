/* uraid bench seeds [--quick] [--out DIR]: the linux-raid threads'
 * experiments on simulated disks (bench/seeds/run.sh, a shell driver of
 * fio, bonnie++, dd, mkfs and gnuplot). This finds the driver next to the
 * binary -- the source tree's bench/seeds/ for build/uraid, PREFIX/share/
 * uraid/seeds/ for an installed PREFIX/bin/uraid, or $URAID_SEEDS_DIR --
 * and execs it with this binary as the uraid to measure. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int usable(const char *dir, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/run.sh", dir);
    return n > 0 && (size_t)n < outlen && access(out, R_OK) == 0;
}

/* The driver's path into out; 0 or -ENOENT. */
static int find_driver(const char *exe, char *out, size_t outlen)
{
    const char *env = getenv("URAID_SEEDS_DIR");
    if (env && *env)
        return usable(env, out, outlen) ? 0 : -ENOENT;
    char bindir[PATH_MAX];
    snprintf(bindir, sizeof bindir, "%s", exe);
    char *slash = strrchr(bindir, '/');
    if (!slash)
        return -ENOENT;
    *slash = '\0';
    static const char *const rel[] = {"/../bench/seeds", "/../share/uraid/seeds"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof dir, "%s%s", bindir, rel[i]);
        if (usable(dir, out, outlen))
            return 0;
    }
    return -ENOENT;
}

int bench_seeds(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: uraid bench seeds [--quick] [--out DIR]\n"
                   "  runs the linux-raid threads' experiments (parity table, concurrent readers, dd\n"
                   "  streaming, rmw on/off random writes, bonnie++ and tiobench-shaped fio on a 15-disk\n"
                   "  RAID-5 beside btrfs, healthy, degraded and with unreadable chunks, and over NBD) on\n"
                   "  simulated disks; writes DIR/report.md and PNG plots (default DIR: seeds-report).\n"
                   "  --quick: small sizes, one-second runs (a few minutes). Needs root, FUSE, loop\n"
                   "  devices, fio, bonnie++, gnuplot, btrfs-progs (scripts/deps.sh).\n");
            return 0;
        }
        if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            i++;
        } else if (strcmp(argv[i], "--quick")) {
            cli_error("bench seeds", "unknown argument '%s' (expected --quick, --out DIR)", argv[i]);
            return 2;
        }
    }
    char exe[PATH_MAX], driver[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        cli_error("bench seeds", "cannot find this program's path (/proc/self/exe): %s", strerror(errno));
        return 1;
    }
    exe[n] = '\0';
    if (find_driver(exe, driver, sizeof driver)) {
        cli_error("bench seeds", "no bench/seeds/run.sh next to %s (nor in ../share/uraid/seeds); "
                  "set URAID_SEEDS_DIR to the directory holding run.sh", exe);
        return 1;
    }
    char **args = calloc((size_t)argc + 5, sizeof *args);
    if (!args) {
        cli_error("bench seeds", "out of memory");
        return 1;
    }
    int k = 0;
    args[k++] = "sh";
    args[k++] = driver;
    args[k++] = "--uraid";
    args[k++] = exe;
    for (int i = 1; i < argc; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    fflush(NULL);
    execv("/bin/sh", args);
    cli_error("bench seeds", "cannot run /bin/sh %s: %s", driver, strerror(errno));
    free(args);
    return 1;
}
