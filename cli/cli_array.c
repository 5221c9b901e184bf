/* Helpers for the verbs that open an array from its members. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "uraid_admin.h"
#include "uraid_conf.h"

/* The config's ARRAY line for the array id names, or its only one. */
static int conf_array(const char *verb, const char *file, const struct uraid_conf *c, struct cli_identity *id,
                      const struct uraid_conf_array **out)
{
    *out = NULL;
    if (!id->has_uuid && !id->name) {
        if (c->narrays != 1) {
            cli_error(verb, "%s has %d ARRAY lines: name the array with --name or --uuid", file, c->narrays);
            return 2;
        }
        *out = &c->array[0];
    } else {
        *out = uraid_conf_find(c, id->name, id->has_uuid ? id->uuid : NULL);
    }
    const struct uraid_conf_array *a = *out;
    if (!a)
        return 0;
    if (!id->has_uuid && a->has_uuid) {
        memcpy(id->uuid, a->uuid, 16);
        id->has_uuid = 1;
    }
    if (!id->name)
        id->name = a->name;
    id->level = a->level;
    id->raid_devices = a->raid_devices;
    id->conf_line = a->line;
    return 0;
}

/* --uuid/--name/--scan: the plain arguments are where to look, not the
 * members; with none, the config file says where. */
static int identify(const char *verb, struct cli_members *mem, int keep_last)
{
    struct cli_identity *id = &mem->id;
    const char *last = keep_last && mem->n ? mem->path[--mem->n] : NULL;
    static const char *pattern[URAID_MAX_MEMBERS];
    int npat = mem->n;
    memcpy(pattern, mem->path, sizeof pattern[0] * (size_t)npat);
    if (id->scan || id->config || npat == 0) {
        const char *file = id->config ? id->config : URAID_CONF_DEFAULT;
        /* kept to the end: the identity and the patterns point into it */
        struct uraid_conf *c;
        if (cli_load_conf(verb, file, &c))
            return 1;
        const struct uraid_conf_array *a;
        int rc = conf_array(verb, file, c, id, &a);
        if (rc)
            return rc;
        const char *const *from = a && a->ndevices ? a->devices : c->devices;
        int nfrom = a && a->ndevices ? a->ndevices : c->ndevices;
        for (int i = 0; npat == 0 && i < nfrom && i < URAID_MAX_MEMBERS; i++)
            pattern[i] = from[i];
        if (npat == 0)
            npat = nfrom < URAID_MAX_MEMBERS ? nfrom : URAID_MAX_MEMBERS;
        if (npat == 0)
            pattern[npat++] = "partitions"; /* mdadm's DEVICE default */
    }
    int rc = cli_discover(verb, id, pattern, npat, mem);
    if (!rc && last)
        mem->path[mem->n++] = last;
    return rc;
}

int cli_parse_members(const char *verb, int argc, char **argv, struct cli_members *mem,
                      struct uraid_open_params *op, const struct cli_extra *extra)
{
    memset(mem, 0, sizeof *mem);
    mem->id.level = -100;
    mem->rmw_level = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: uraid %s [--force] [--metadata 0.90|1.0|1.1|1.2] [--member-layer [MEMBER:]SPEC] [--rmw-level 0|1|2] %s MEMBER...\n"
                   "       uraid %s [options] --uuid UUID | --name NAME [--config FILE] [DEVICE-OR-GLOB...]\n"
                   "       uraid %s [options] --scan [--config FILE] [--uuid UUID | --name NAME]\n"
                   "  --metadata      opens only superblocks of that md format (needed when a member holds two)\n"
                   "  --uuid, --name  the array's members are found among the devices, globs and NBD URIs given\n"
                   "                  (none: the config's devices= or DEVICE lines) by their superblocks;\n"
                   "                  stale members and other arrays' are left out with one line each\n"
                   "  --scan          the array (if the config has one only) and where to look come from\n"
                   "                  the config file (--config FILE, default " URAID_CONF_DEFAULT ")\n"
                   "  --member-layer simulates disks and faults: throttle=60M[,latency=100us],\n"
                   "                 disk=hdd-7200|hdd-5400|sata-ssd|nvme[,seek=MSEC][,rpm=N][,qd=N], latency=2ms,\n"
                   "                 read-eio=OFF+LEN, write-eio=OFF+LEN, drop-writes=OFF+LEN,\n"
                   "                 stall-writes=OFF+LEN, badmap=MAPFILE, vanish (';' joins)\n"
                   "  --rmw-level    md's rmw_level for partial-stripe writes: 0 reconstruct-write only,\n"
                   "                 1 fewest reads (default), 2 read-modify-write on a tie\n",
                   verb, extra ? extra->usage : "", verb, verb);
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
        } else if (!strcmp(a, "--uuid") || !strcmp(a, "--name") || !strcmp(a, "--config")) {
            if (i + 1 >= argc) {
                cli_error(verb, "%s needs a value", a);
                return 2;
            }
            const char *v = argv[++i];
            if (a[2] == 'u' && uraid_conf_parse_uuid(v, mem->id.uuid)) {
                cli_error(verb, "--uuid '%s' is not an array UUID (32 hex digits, as 'uraid examine' prints it)", v);
                return 2;
            }
            /* a UUID given as the name (uraid@UUID.service) names the array by UUID */
            if (a[2] == 'u' || (a[2] == 'n' && uraid_conf_parse_uuid(v, mem->id.uuid) == 0))
                mem->id.has_uuid = 1;
            else if (a[2] == 'n')
                mem->id.name = v;
            else
                mem->id.config = v;
        } else if (!strcmp(a, "--scan") || !strcmp(a, "-s")) {
            mem->id.scan = 1;
        } else if (!strcmp(a, "--metadata") || !strcmp(a, "-e")) {
            if (i + 1 >= argc || !strcmp(uraid_metadata_name(argv[i + 1]), "?")) {
                cli_error(verb, "--metadata needs one of 0.90, 1.0, 1.1, 1.2 (or mdadm's 0.9, 1, default)%s%s",
                          i + 1 < argc ? ", got " : "", i + 1 < argc ? argv[i + 1] : "");
                return 2;
            }
            op->metadata = argv[++i];
        } else if (!strcmp(a, "--rmw-level")) {
            const char *v = i + 1 < argc ? argv[i + 1] : "";
            if (strlen(v) != 1 || v[0] < '0' || v[0] > '2') {
                cli_error(verb, "--rmw-level needs 0 (reconstruct-write only), 1 (fewest reads) or 2 (prefer "
                                "read-modify-write)%s%s",
                          *v ? ", got " : "", v);
                return 2;
            }
            mem->rmw_level = v[0] - '0';
            i++;
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
    struct cli_identity *id = &mem->id;
    if (id->has_uuid || id->name || id->scan || id->config) {
        /* mount's last argument is its directory, not where to look */
        int rc = identify(verb, mem, !strcmp(verb, "mount"));
        if (rc)
            return rc;
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
    if (mem->rmw_level >= 0)
        uraid_set_rmw_level(*out, mem->rmw_level); /* 0..2: checked when parsed */
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
