/* uraid assemble: mdadm --assemble's way of naming an array, by who it is
 * (--uuid, --name, or --scan over /etc/uraid.conf) instead of by its
 * members in slot order. The members are found by their superblocks
 * (cli_discover: shared with every verb that takes members) and the
 * array is then served as `uraid serve` serves it: the options pass
 * through to that code. With --list it prints the members it found, one
 * per line in slot order, for a script or another verb. */
#include <string.h>

#include "cli.h"
#include "uraid_conf.h"

static int usage(void)
{
    printf("usage: uraid assemble --scan [--config FILE] [--uuid UUID | --name NAME] [SERVE-OPTIONS]\n"
           "       uraid assemble --uuid UUID | --name NAME [--config FILE] DEVICE-OR-GLOB... [SERVE-OPTIONS]\n"
           "       uraid assemble ... --list\n"
           "  Finds the array's members among block devices, files and NBD URIs by their superblocks\n"
           "  (with --scan or no devices: the config's devices= or DEVICE lines; default config\n"
           "  " URAID_CONF_DEFAULT "), leaves out members of other arrays and stale ones (one line\n"
           "  each), then serves the array as 'uraid serve' does (SERVE-OPTIONS: --socket PATH,\n"
           "  --port N, --control PATH, --speed-limit SPEED, --no-rebuild, --no-resync,\n"
           "  --event-cmd PROG, --force, --member-layer [MEMBER:]SPEC).\n"
           "  --list  print the members found, one per line in slot order (spares last), and exit\n");
    return 0;
}

/* Prints the members found; serving options make no sense here. */
static int list_members(int argc, char **argv)
{
    struct cli_members mem;
    struct uraid_open_params op = {0};
    int rc = cli_parse_members("assemble", argc, argv, &mem, &op, NULL);
    if (rc)
        return rc < 0 ? 0 : rc;
    for (int i = 0; i < mem.n; i++)
        printf("%s\n", mem.path[i]);
    return 0;
}

int cmd_assemble(int argc, char **argv)
{
    int list = 0, named = 0, out = 1, dashdash = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && (!strcmp(a, "-h") || !strcmp(a, "--help")))
            return usage();
        dashdash |= !strcmp(a, "--");
        if (!dashdash) {
            named |= !strcmp(a, "--scan") || !strcmp(a, "-s") || !strcmp(a, "--uuid") || !strcmp(a, "--name") ||
                     !strcmp(a, "--config");
            if (!strcmp(a, "--list")) {
                list = 1;
                continue; /* taken out: the member parser does not know it */
            }
        }
        argv[out++] = argv[i];
    }
    argc = out;
    argv[argc] = NULL;
    if (!named) {
        cli_error("assemble", "say which array: --scan (the config's), --uuid UUID or --name NAME "
                              "(members in slot order are for 'uraid serve MEMBERS...')");
        return 2;
    }
    return list ? list_members(argc, argv) : cmd_serve(argc, argv);
}
