/* Helpers for the verbs that open an array from its members. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "uraid_admin.h"

int cli_parse_members(const char *verb, int argc, char **argv, struct cli_members *mem,
                      struct uraid_open_params *op, const struct cli_extra *extra)
{
    memset(mem, 0, sizeof *mem);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: uraid %s [--force] [--metadata 0.90|1.0|1.1|1.2] [--member-layer [MEMBER:]SPEC] %s MEMBER...\n"
                   "  --metadata opens only superblocks of that md format (needed when a member holds two)\n"
                   "  --member-layer simulates disks and faults: throttle=60M[,latency=100us], latency=2ms,\n"
                   "                 read-eio=OFF+LEN, write-eio=OFF+LEN, drop-writes=OFF+LEN, badmap=MAPFILE,\n"
                   "                 vanish (';' joins)\n",
                   verb, extra ? extra->usage : "");
            return -1; /* help printed: the verb exits 0 */
        }
        if (extra) {
            int r = extra->parse(verb, argc, argv, &i, extra->ctx);
            if (r < 0)
                return 2;
            if (r > 0)
                continue;
        }
        if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
            op->force = 1;
        } else if (!strcmp(a, "--metadata") || !strcmp(a, "-e")) {
            if (i + 1 >= argc || !strcmp(uraid_metadata_name(argv[i + 1]), "?")) {
                cli_error(verb, "--metadata needs one of 0.90, 1.0, 1.1, 1.2 (or mdadm's 0.9, 1, default)%s%s",
                          i + 1 < argc ? ", got " : "", i + 1 < argc ? argv[i + 1] : "");
                return 2;
            }
            op->metadata = argv[++i];
        } else if (!strcmp(a, "--member-layer")) {
            if (i + 1 >= argc) {
                cli_error(verb, "--member-layer needs a spec, e.g. 'throttle=60M' or 'MEMBER:read-eio=1M+64K'");
                return 2;
            }
            if (mem->nlayers < URAID_MAX_MEMBERS)
                mem->layer_arg[mem->nlayers++] = argv[++i];
        } else if (!strcmp(a, "--")) {
            for (i++; i < argc; i++)
                mem->path[mem->n++] = argv[i];
            break;
        } else if (a[0] == '-' && a[1]) {
            cli_error(verb, "unknown option '%s' (try 'uraid %s --help')", a, verb);
            return 2;
        } else {
            if (mem->n >= URAID_MAX_MEMBERS) {
                cli_error(verb, "too many members (at most %d)", URAID_MAX_MEMBERS);
                return 2;
            }
            mem->path[mem->n++] = a;
        }
    }
    if (mem->n == 0) {
        cli_error(verb, "no members given (usage: uraid %s %s MEMBER...)", verb, extra ? extra->usage : "");
        return 2;
    }
    for (int i = 0; i < mem->n; i++)
        for (int j = i + 1; j < mem->n; j++)
            if (!strcmp(mem->path[i], mem->path[j])) {
                cli_error(verb, "member %s is given twice", mem->path[i]);
                return 2;
            }
    /* simulation layers: "SPEC" for every member, "MEMBER:SPEC" for one */
    for (int l = 0; l < mem->nlayers; l++) {
        char why[300];
        if (uraid_member_layer_add(mem->layer_arg[l], mem->path, mem->n, mem->sim_text[0], sizeof mem->sim_text[0], why,
                             sizeof why)) {
            cli_error(verb, "--member-layer '%s': %s", mem->layer_arg[l], why);
            return 2;
        }
    }
    if (mem->nlayers) {
        for (int i = 0; i < mem->n; i++)
            mem->sim[i] = mem->sim_text[i];
        op->member_sim = mem->sim;
    }
    return 0;
}

int cli_open_array(const char *verb, const struct cli_members *mem, const struct uraid_open_params *op,
                   struct uraid_array **out)
{
    if (cli_setup_parity(verb))
        return 1;
    char why[512];
    int rc = uraid_open(mem->path, mem->n, op, out, why, sizeof why);
    if (rc) {
        cli_error(verb, "%s", why[0] ? why : uraid_strerror(rc));
        return 1;
    }
    return 0;
}

int cli_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}
