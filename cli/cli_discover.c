/* Finding an array's members by who they are (mdadm --assemble --uuid /
 * --scan): candidates come from globs, /proc/partitions, NBD URIs, the
 * config file's DEVICE and devices= entries; each is examined read-only
 * and kept when its superblock names the array. Members of other arrays
 * and stale ones (events behind the newest) are left out with one line
 * each, so a user sees why a disk was not taken. Only the public API is
 * used (uraid_examine), so every metadata format it learns is found too. */
#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "uraid_admin.h"
#include "uraid_conf.h"

#define MAX_CANDIDATES 4096
#define CONF_MAX_BYTES (1 << 20)

int cli_load_conf(const char *verb, const char *path, struct uraid_conf **out)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_error(verb, "cannot read %s: %s%s", path, strerror(errno),
                  errno == ENOENT ? " (write one: 'uraid examine --scan DEVICES' prints its ARRAY lines)" : "");
        return 1;
    }
    char *text = malloc(CONF_MAX_BYTES);
    struct uraid_conf *c = malloc(sizeof *c);
    size_t n = text ? fread(text, 1, CONF_MAX_BYTES, f) : 0;
    int rc = 1;
    char why[400];
    if (!text || !c)
        cli_error(verb, "out of memory");
    else if (ferror(f))
        cli_error(verb, "cannot read %s: %s", path, strerror(errno));
    else if (n == CONF_MAX_BYTES)
        cli_error(verb, "%s is larger than %d bytes: not a config file", path, CONF_MAX_BYTES);
    else if (uraid_conf_parse(text, n, c, why, sizeof why))
        cli_error(verb, "%s: %s", path, why);
    else
        rc = 0;
    fclose(f);
    free(text);
    if (rc)
        free(c);
    else
        *out = c;
    return rc;
}

/* ---- candidates ----------------------------------------------------------- */

struct cand_list {
    struct cli_found *f;
    int n;
    dev_t dev[MAX_CANDIDATES];
    ino_t ino[MAX_CANDIDATES];
};

static int is_uri(const char *p) { return strstr(p, "://") != NULL; }

/* One candidate, unless it is a file or device already in the list. */
static int add_candidate(const char *verb, struct cand_list *l, const char *path, int named)
{
    struct stat st;
    dev_t dev = 0;
    ino_t ino = 0;
    if (!is_uri(path) && stat(path, &st) == 0) {
        dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
        ino = S_ISBLK(st.st_mode) ? 0 : st.st_ino;
        for (int i = 0; i < l->n; i++)
            if (l->ino[i] == ino && l->dev[i] == dev && (dev || ino))
                return 0;
    }
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->f[i].path, path))
            return 0;
    if (l->n >= MAX_CANDIDATES) {
        cli_error(verb, "more than %d devices to look at: give narrower patterns", MAX_CANDIDATES);
        return -1;
    }
    struct cli_found *c = &l->f[l->n];
    memset(c, 0, sizeof *c);
    c->path = strdup(path);
    if (!c->path) {
        cli_error(verb, "out of memory");
        return -1;
    }
    c->named = named;
    l->dev[l->n] = dev;
    l->ino[l->n] = ino;
    l->n++;
    return 0;
}

/* mdadm's "DEVICE partitions": every device /proc/partitions lists. */
static int add_partitions(const char *verb, struct cand_list *l)
{
    FILE *f = fopen("/proc/partitions", "r");
    if (!f)
        return 0;
    char line[256], name[128], path[160];
    int rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        unsigned major, minor;
        unsigned long long blocks;
        if (sscanf(line, " %u %u %llu %127s", &major, &minor, &blocks, name) == 4) {
            snprintf(path, sizeof path, "/dev/%s", name);
            rc = add_candidate(verb, l, path, 0);
        }
    }
    fclose(f);
    return rc;
}

static int add_pattern(const char *verb, struct cand_list *l, const char *p)
{
    if (!strcmp(p, "partitions"))
        return add_partitions(verb, l);
    if (!strcmp(p, "containers"))
        return 0; /* mdadm's IMSM/DDF containers: uraid has none */
    if (is_uri(p) || !strpbrk(p, "*?["))
        return add_candidate(verb, l, p, 1);
    glob_t g;
    int rc = glob(p, 0, NULL, &g);
    if (rc == GLOB_NOMATCH) {
        if (cli.verbose)
            fprintf(stderr, "uraid %s: %s matches nothing\n", verb, p);
        return 0;
    }
    if (rc) {
        cli_error(verb, "cannot expand %s", p);
        return -1;
    }
    int r = 0;
    for (size_t i = 0; !r && i < g.gl_pathc; i++) {
        struct stat st;
        /* a glob over /dev or a directory of images: only what can hold a superblock */
        if (stat(g.gl_pathv[i], &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
            r = add_candidate(verb, l, g.gl_pathv[i], 0);
    }
    globfree(&g);
    return r;
}

void cli_found_free(struct cli_found *f, int n)
{
    for (int i = 0; f && i < n; i++)
        free(f[i].path);
    free(f);
}

int cli_scan_candidates(const char *verb, const char *const *pattern, int npattern, struct cli_found **out)
{
    struct cand_list *l = calloc(1, sizeof *l);
    struct cli_found *f = l ? calloc(MAX_CANDIDATES, sizeof *f) : NULL;
    static struct uraid_examine e; /* ~2 KiB plus the bitmap: once at a time */
    if (!f) {
        free(l);
        cli_error(verb, "out of memory");
        return -1;
    }
    l->f = f;
    int rc = 0;
    for (int i = 0; !rc && i < npattern; i++)
        rc = add_pattern(verb, l, pattern[i]);
    for (int i = 0; !rc && i < l->n; i++) {
        struct cli_found *c = &f[i];
        if (uraid_examine(c->path, &e, c->why, sizeof c->why))
            continue;
        c->ok = 1;
        memcpy(c->uuid, e.array_uuid, 16);
        memcpy(c->name, e.name, sizeof c->name);
        c->level = e.level;
        snprintf(c->metadata, sizeof c->metadata, "%.4s", e.version); /* "0.90.00" -> 0.90 */
        c->md_minor = e.v090 ? (int)e.v0.preferred_minor : -1;
        c->raid_devices = e.raid_devices;
        c->role = e.role;
        c->events = e.events;
    }
    int n = l->n;
    free(l);
    if (rc) {
        cli_found_free(f, n);
        return -1;
    }
    *out = f;
    return n;
}

/* ---- one array's members -------------------------------------------------- */

static int id_matches(const struct cli_identity *id, const struct cli_found *c)
{
    if (id->has_uuid)
        return !memcmp(id->uuid, c->uuid, 16);
    return uraid_conf_name_matches(id->name, c->name);
}

static const char *id_text(const struct cli_identity *id, char *buf, size_t len)
{
    char u[URAID_UUID_TEXT];
    if (id->has_uuid) {
        uraid_uuid_text(id->uuid, u);
        snprintf(buf, len, "UUID %s", u);
    } else {
        snprintf(buf, len, "name '%s'", id->name ? id->name : "");
    }
    return buf;
}

/* A name can match several arrays: refused, naming them, rather than guessed. */
static int one_uuid(const char *verb, struct cli_identity *id, const struct cli_found *f, int n)
{
    const struct cli_found *first = NULL;
    for (int i = 0; i < n; i++) {
        if (!f[i].ok || !id_matches(id, &f[i]))
            continue;
        if (!first) {
            first = &f[i];
        } else if (memcmp(first->uuid, f[i].uuid, 16)) {
            char a[URAID_UUID_TEXT], b[URAID_UUID_TEXT];
            uraid_uuid_text(first->uuid, a);
            uraid_uuid_text(f[i].uuid, b);
            cli_error(verb, "name '%s' is two arrays: UUID %s (%s) and UUID %s (%s); give --uuid", id->name, a,
                      first->path, b, f[i].path);
            return 2;
        }
    }
    if (first && !id->has_uuid) {
        memcpy(id->uuid, first->uuid, 16);
        id->has_uuid = 1;
    }
    return 0;
}

/* mdadm's slot order: active slots by number, then spares, then the rest. */
static int slot_key(const struct cli_found *c) { return c->role >= 0 ? c->role : URAID_MAX_MEMBERS - c->role; }

static int by_slot(const void *pa, const void *pb)
{
    const struct cli_found *a = *(const struct cli_found *const *)pa, *b = *(const struct cli_found *const *)pb;
    int ka = slot_key(a), kb = slot_key(b);
    return ka != kb ? (ka < kb ? -1 : 1) : strcmp(a->path, b->path);
}

/* The members found, stale ones and those of other arrays left out. */
static int keep_members(const char *verb, const struct cli_identity *id, struct cli_found *f, int n,
                        struct cli_members *mem)
{
    uint64_t newest = 0;
    char u[URAID_UUID_TEXT];
    for (int i = 0; i < n; i++)
        if (f[i].ok && id_matches(id, &f[i]) && f[i].events > newest)
            newest = f[i].events;
    static struct cli_found *keep[URAID_MAX_MEMBERS];
    int nk = 0;
    for (int i = 0; i < n; i++) {
        struct cli_found *c = &f[i];
        if (!c->ok) {
            if (c->named || cli.verbose)
                fprintf(stderr, "uraid %s: left out %s: %s\n", verb, c->path, c->why);
        } else if (!id_matches(id, c)) {
            uraid_uuid_text(c->uuid, u);
            fprintf(stderr, "uraid %s: left out %s: a member of another array (UUID %s, name '%s')\n", verb, c->path,
                    u, c->name);
        } else if (c->events + 1 < newest) {
            /* md's own rule: one event of lag is a write the member missed the end of */
            fprintf(stderr, "uraid %s: left out %s: stale (events %llu, the array's %llu); 'uraid add' it back "
                            "once the array runs\n", verb, c->path, (unsigned long long)c->events,
                    (unsigned long long)newest);
        } else if (nk >= URAID_MAX_MEMBERS) {
            cli_error(verb, "more than %d members found", URAID_MAX_MEMBERS);
            return 2;
        } else if (id->level != -100 && c->level != id->level) {
            cli_error(verb, "%s is RAID level %d, but line %d of the config says level %d: fix the ARRAY line",
                      c->path, c->level, id->conf_line, id->level);
            return 2;
        } else if (id->raid_devices && c->raid_devices != id->raid_devices) {
            cli_error(verb, "%s is of an array of %d devices, but line %d of the config says num-devices=%d",
                      c->path, c->raid_devices, id->conf_line, id->raid_devices);
            return 2;
        } else {
            keep[nk++] = c;
        }
    }
    qsort(keep, (size_t)nk, sizeof keep[0], by_slot);
    mem->n = 0;
    for (int i = 0; i < nk; i++) {
        mem->path[mem->n++] = keep[i]->path;
        keep[i]->path = NULL; /* now the members': they live as long as the process */
    }
    return 0;
}

int cli_discover(const char *verb, struct cli_identity *id, const char *const *pattern, int npattern,
                 struct cli_members *mem)
{
    struct cli_found *f = NULL;
    int n = cli_scan_candidates(verb, pattern, npattern, &f);
    if (n < 0)
        return 1;
    int rc = one_uuid(verb, id, f, n);
    if (!rc)
        rc = keep_members(verb, id, f, n, mem);
    if (!rc && mem->n == 0) {
        char t[80];
        cli_error(verb, "no member of the array with %s among %d device%s looked at%s", id_text(id, t, sizeof t), n,
                  n == 1 ? "" : "s", cli.verbose ? "" : " (-v lists each)");
        rc = 1;
    }
    cli_found_free(f, n);
    mem->by_identity = 1;
    return rc;
}
