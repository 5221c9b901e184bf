/* uraid: the command-line front end. Dispatches to one cmd_<verb>.c per
 * subcommand; global options may appear anywhere before the verb's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "uraid_ctl.h"

/* cmd_update.c, cmd_zero.c */
int cmd_update(int argc, char **argv);
int cmd_zero_superblock(int argc, char **argv);

struct verb {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct verb verbs[] = {
    {"create", cmd_create, "create an array: --level L --raid-devices N [--spare-devices M] [--chunk SIZE] MEMBERS..."},
    {"grow", cmd_grow, "grow an array that is not running: MEMBERS... --raid-devices N --add NEW... (RAID-5/6), --continue "
                         "MEMBERS..., or --consistency-policy resync|bitmap|ppl MEMBERS..."},
    {"update", cmd_update, "change superblocks of an array that is not running (mdadm --update=): --update=name|uuid|resync|"
                             "no-bitmap|bbl|no-bbl [--name NEW] [--uuid U] MEMBERS..."},
    {"zero-superblock", cmd_zero_superblock, "erase the md superblock of each member (mdadm --zero-superblock): [--force] MEMBERS..."},
    {"examine", cmd_examine, "print each member's md superblock like mdadm --examine"},
    {"detail", cmd_detail, "print the array like mdadm --detail, with its [UU_U] state"},
    {"cat", cmd_cat, "write the array's contents to stdout (works degraded)"},
    {"write", cmd_write, "write stdin into the array [--offset BYTES] (works degraded)"},
    {"salvage", cmd_salvage, "copy an array of failing disks' images to IMAGE, listing lost sectors: [--map MEMBER=MAPFILE]... -o IMAGE"},
    {"serve", cmd_serve, "serve the array over NBD with nbdkit: [--socket PATH | --port N] [--control PATH] MEMBERS..."},
    {"assemble", cmd_assemble, "find an array's members by --uuid, --name or --scan (/etc/uraid.conf) and serve it, or --list them"},
    {"monitor", cmd_monitor, "watch serving arrays and report mdadm --monitor's events: [--scan] [--program PROG] [--mail ADDR] [--oneshot] [--test] [SOCKETS...]"},
    {"mount", cmd_mount, "serve the array as DIR/array and DIR/status over FUSE: MEMBERS... DIR [--foreground]"},
    {"status", cmd_status, "a serving array's state, members and counters: [--control PATH]"},
    {"fail", cmd_fail, "mark a member of a serving array faulty: [--control PATH] MEMBER"},
    {"remove", cmd_remove, "forget a faulty or spare member of a serving array: [--control PATH] MEMBER"},
    {"add", cmd_add, "add a spare: [--control PATH] NEW (serving array) or MEMBERS... --spare NEW..."},
    {"rebuild", cmd_rebuild, "rebuild a failed slot onto a spare: MEMBERS... [--spare NEW] [--speed-limit SPEED]"},
    {"replace", cmd_replace, "copy a working member onto a new one, then retire it: MEMBERS... --old M --with NEW"},
    {"resync", cmd_resync, "after an unclean shutdown, make parity agree with the data (md does it at start): MEMBERS..."},
    {"check", cmd_check, "count parity mismatches and list them: MEMBERS... | --control PATH [--wait] (exit 3: found)"},
    {"repair", cmd_repair, "check and rewrite the wrong block (RAID-6), parity (RAID-5) or mirror: MEMBERS... | --control PATH"},
    {"idle", cmd_idle, "stop a serving array's check, repair or rebuild; a needed rebuild restarts, a frozen array thaws (md's sync_action idle): [--control PATH]"},
    {"frozen", cmd_frozen, "stop a serving array's background work and start none until 'idle' (md's sync_action frozen): [--control PATH]"},
    {"stop", cmd_stop, "ask a serving array to shut down cleanly: [--control PATH]"},
    {"rmw-level", cmd_rmw_level, "a serving array's rmw_level (md's): [--control PATH] [0|1|2]"},
    {"selftest", cmd_selftest, "check every parity routine against the reference"},
    {"bench", cmd_bench, "benchmarks: 'uraid bench parity|array|rebuild|scrub' (each takes --help)"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: uraid [-v] [--parity NAME] VERB [OPTIONS] [ARGS]\n\nverbs:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(out, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(out, "\nglobal options:\n"
                 "  -v, --verbose     report the parity routine chosen and other decisions\n"
                 "  --parity NAME     force a parity routine (also URAID_PARITY=NAME)\n"
                 "  -h, --help        this text\n"
                 "  --version         print the version\n"
                 "\nstatus, fail, remove, add, idle, stop (and check/repair --control) talk to the control socket\n"
                 "of a serving array: "
                 "--control PATH, else $URAID_CONTROL, else the only socket in " URAID_CTL_DEFAULT_DIR "\n");
}

static void log_to_stderr(void *ctx, enum uraid_log_level level, const char *msg)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "uraid: %s: %s\n", names[level], msg);
}

/* Removes the global options from argv (wherever they are) and returns the
 * new argc, or -1 after printing an error. */
static int take_globals(int argc, char **argv)
{
    int out = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            cli.verbose++;
        } else if (!strcmp(a, "--parity")) {
            if (i + 1 >= argc) {
                cli_error(NULL, "--parity needs a routine name");
                return -1;
            }
            cli.parity = argv[++i];
        } else if (!strncmp(a, "--parity=", 9)) {
            cli.parity = a + 9;
        } else {
            argv[out++] = argv[i];
        }
    }
    argv[out] = NULL;
    return out;
}

int main(int argc, char **argv)
{
    argc = take_globals(argc, argv);
    if (argc < 0)
        return 2;
    if (cli.verbose)
        uraid_set_log(log_to_stderr, NULL, cli.verbose > 1 ? URAID_LOG_DEBUG : URAID_LOG_INFO);
    else
        uraid_set_log(log_to_stderr, NULL, URAID_LOG_WARN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *verb = argv[1];
    if (!strcmp(verb, "-h") || !strcmp(verb, "--help") || !strcmp(verb, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(verb, "--version")) {
        printf("uraid %s\n", uraid_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (!strcmp(verb, verbs[i].name))
            return verbs[i].run(argc - 1, argv + 1);
    cli_error(NULL, "unknown command '%s' (try 'uraid --help')", verb);
    return 2;
}
