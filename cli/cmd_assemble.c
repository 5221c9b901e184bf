/* uraid assemble: mdadm --assemble's way of naming an array, by who it is
 * (--uuid, --name, or --scan over /etc/uraid.conf) instead of by its
 * members in slot order. The members are found by their superblocks
 * (cli_discover: shared with every verb that takes members) and the
 * array is then served as `uraid serve` serves it: the options pass
 * through to that code. With --list it prints the members it found, one
 * per line in slot order, for a script or another verb. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "uraid_admin.h"
#include "uraid_conf.h"
#include "uraid_ctl.h"

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
           "  --list  print the members found, one per line in slot order (spares last), and exit\n"
           "  --check with --scan: start a check (md's sync_action check) on every array of the config\n"
           "          that is serving (its control socket in " URAID_CTL_DEFAULT_DIR "); the monthly timer runs it\n");
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

/* The UUID of a config line: its UUID=, else its members' (found as assemble finds them). */
static int line_uuid(const struct uraid_conf *c, const struct uraid_conf_array *l, uint8_t uuid[16])
{
    if (l->has_uuid) {
        memcpy(uuid, l->uuid, 16);
        return 0;
    }
    struct cli_identity id = {.name = l->name, .level = -100};
    static struct cli_members mem;
    static const char *const partitions[] = {"partitions"};
    const char *const *pat = l->ndevices ? l->devices : c->ndevices ? c->devices : partitions;
    int n = l->ndevices ? l->ndevices : c->ndevices ? c->ndevices : 1;
    memset(&mem, 0, sizeof mem);
    if (cli_discover("assemble", &id, pat, n, &mem))
        return -ENOENT;
    memcpy(uuid, id.uuid, 16);
    return 0;
}

/* --scan --check: Debian's monthly checkarray for the arrays uraid serves. */
static int check_all(int argc, char **argv)
{
    const char *file = URAID_CONF_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            file = argv[++i];
        else if (strcmp(argv[i], "--scan") && strcmp(argv[i], "-s")) {
            cli_error("assemble", "--check takes only --scan and --config FILE, not '%s'", argv[i]);
            return 2;
        }
    }
    struct uraid_conf *c;
    if (cli_load_conf("assemble", file, &c))
        return 1;
    int status = 0;
    char *buf = malloc(4096);
    for (int i = 0; buf && i < c->narrays; i++) {
        const struct uraid_conf_array *l = &c->array[i];
        uint8_t u[16];
        char label[URAID_UUID_TEXT + 40], sock[128];
        int k = snprintf(sock, sizeof sock, "%s/", URAID_CTL_DEFAULT_DIR);
        if (line_uuid(c, l, u)) {
            status = 1;
            continue;
        }
        uraid_uuid_text(u, label);
        if (l->name)
            snprintf(label, sizeof label, "%s", l->name);
        for (int b = 0; b < 16; b++)
            k += snprintf(sock + k, sizeof sock - (size_t)k, "%02x", u[b]);
        snprintf(sock + k, sizeof sock - (size_t)k, ".sock");
        int rc = uraid_ctl_request(sock, "check", buf, 4096);
        if (rc == -ENOENT || rc == -ECONNREFUSED) {
            printf("uraid assemble: %s (line %d): not serving, not checked\n", label, l->line);
        } else if (rc || strncmp(buf, "ok", 2)) {
            buf[strcspn(buf, "\n")] = 0;
            cli_error("assemble", "%s: the check did not start: %s", label, rc ? uraid_strerror(rc) : buf);
            status = 1;
        } else {
            printf("uraid assemble: %s: check started (follow it with 'uraid status --control %s')\n", label, sock);
        }
    }
    free(buf);
    free(c);
    return status;
}

int cmd_assemble(int argc, char **argv)
{
    int list = 0, named = 0, out = 1, dashdash = 0, check = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && (!strcmp(a, "-h") || !strcmp(a, "--help")))
            return usage();
        dashdash |= !strcmp(a, "--");
        if (!dashdash) {
            named |= !strcmp(a, "--scan") || !strcmp(a, "-s") || !strcmp(a, "--uuid") || !strcmp(a, "--name") ||
                     !strcmp(a, "--config");
            if (!strcmp(a, "--list") || !strcmp(a, "--check")) {
                *(a[2] == 'l' ? &list : &check) = 1;
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
    if (check)
        return check_all(argc, argv);
    return list ? list_members(argc, argv) : cmd_serve(argc, argv);
}
