/* uraid status|fail|remove|add|stop|idle|frozen|rmw-level [--control PATH] [MEMBER|LEVEL]: requests to
 * the control socket of a serving array (include/uraid_ctl.h), like
 * `mdadm --manage` and `cat /proc/mdstat` for md. The socket is PATH, else
 * $URAID_CONTROL, else the one socket in URAID_CTL_DEFAULT_DIR (/run/uraid,
 * where servers started without --control put theirs, one per array: with
 * a single array serving, no option is needed; with several, the command
 * names them and asks for --control). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "uraid_ctl.h"

#define RESPONSE_BYTES (256 * 1024)

/* What a request takes after the verb. */
enum ctl_arg { ARG_NONE, ARG_MEMBER, ARG_LEVEL };

static void usage(FILE *out, const char *verb, enum ctl_arg member)
{
    fprintf(out,
            "usage: uraid %s [--control PATH]%s\n"
            "  --control PATH   the serving array's control socket (default: $URAID_CONTROL,\n"
            "                   else the only socket in %s)\n",
            verb, member == ARG_MEMBER ? " MEMBER" : member == ARG_LEVEL ? " [LEVEL]" : "", URAID_CTL_DEFAULT_DIR);
    if (member == ARG_MEMBER)
        fprintf(out, "  MEMBER           a member path as given when the array was opened, or its raid slot number\n");
    if (member == ARG_LEVEL)
        fprintf(out, "  LEVEL            md's rmw_level: 0 reconstruct-write only, 1 fewest reads, 2 read-modify-write\n"
                     "                   on a tie; without it the level in use is printed\n");
}

/* The one socket in URAID_CTL_DEFAULT_DIR: 0 with its path, -ENOENT when
 * there is none, -EEXIST with the names listed when there are several. */
static int default_socket(char *out, size_t len)
{
    DIR *d = opendir(URAID_CTL_DEFAULT_DIR);
    if (!d)
        return -ENOENT;
    int n = 0;
    char names[400] = "";
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char p[512];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", URAID_CTL_DEFAULT_DIR, e->d_name);
        if (lstat(p, &st) || !S_ISSOCK(st.st_mode))
            continue;
        if (n++ == 0)
            snprintf(out, len, "%s", p);
        size_t u = strlen(names);
        snprintf(names + u, sizeof names - u, "%s%s", u ? ", " : "", e->d_name);
    }
    closedir(d);
    if (n > 1)
        snprintf(out, len, "%s", names);
    return n == 0 ? -ENOENT : n > 1 ? -EEXIST : 0;
}

const char *cli_default_socket_of(struct uraid_array *a, char *buf, size_t len)
{
    if ((mkdir(URAID_CTL_DEFAULT_DIR, 0700) && errno != EEXIST) || access(URAID_CTL_DEFAULT_DIR, W_OK))
        return NULL;
    static struct uraid_array_info info; /* ~80 KiB; called once, before any worker */
    if (uraid_get_info(a, &info))
        return NULL;
    int k = snprintf(buf, len, "%s/", URAID_CTL_DEFAULT_DIR);
    for (int i = 0; i < 16; i++)
        k += snprintf(buf + k, len - (size_t)k, "%02x", info.uuid[i]);
    snprintf(buf + k, len - (size_t)k, ".sock");
    return buf;
}

int cli_default_control(const char *verb, char *out, size_t len)
{
    const char *env = getenv("URAID_CONTROL");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return 0;
    }
    int rc = default_socket(out, len);
    if (rc == -ENOENT) {
        cli_error(verb, "no server is listening in %s (give --control PATH)", URAID_CTL_DEFAULT_DIR);
        return 1;
    }
    if (rc) {
        cli_error(verb, "several arrays serve in %s (%s): give --control PATH", URAID_CTL_DEFAULT_DIR, out);
        return 2;
    }
    return 0;
}

/* One request; prints the answer (status text on stdout, errors as one line
 * on stderr). Exit status 0 for "ok", 1 for an error response or no server. */
static int control(const char *verb, int argc, char **argv, enum ctl_arg member)
{
    const char *path = getenv("URAID_CONTROL");
    if (path && !*path)
        path = NULL;
    const char *arg = NULL;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout, verb, member);
            return 0;
        } else if (!strcmp(o, "--control")) {
            if (i + 1 >= argc) {
                cli_error(verb, "--control needs a socket path");
                return 2;
            }
            path = argv[++i];
        } else if (!strncmp(o, "--control=", 10)) {
            path = o + 10;
        } else if (o[0] == '-' && o[1] && strcmp(o, "--") != 0) {
            cli_error(verb, "unknown option '%s' (try 'uraid %s --help')", o, verb);
            return 2;
        } else {
            if (!strcmp(o, "--") && i + 1 < argc)
                o = argv[++i];
            if (!member || arg) {
                cli_error(verb, "unexpected argument '%s' (try 'uraid %s --help')", o, verb);
                return 2;
            }
            arg = o;
        }
    }
    if (member == ARG_MEMBER && !arg) {
        cli_error(verb, "which member? (usage: uraid %s [--control PATH] MEMBER)", verb);
        return 2;
    }
    if (arg && strpbrk(arg, "\n\r")) {
        cli_error(verb, "a member path cannot contain a newline");
        return 2;
    }
    char req[4200];
    if (snprintf(req, sizeof req, "%s%s%s", verb, arg ? " " : "", arg ? arg : "") >= 4096) {
        cli_error(verb, "member path too long");
        return 2;
    }
    static char found[512];
    if (!path) {
        int st = cli_default_control(verb, found, sizeof found);
        if (st)
            return st;
        path = found;
    }
    char *resp = malloc(RESPONSE_BYTES);
    if (!resp) {
        cli_error(verb, "out of memory");
        return 1;
    }
    int rc = uraid_ctl_request(path, req, resp, RESPONSE_BYTES);
    int status = 1;
    if (rc == -ENOENT || rc == -ECONNREFUSED) {
        cli_error(verb, "no server is listening on %s", path);
    } else if (rc && rc != -EMSGSIZE) {
        cli_error(verb, "%s: %s", path, uraid_strerror(rc));
    } else if (!strncmp(resp, "ok", 2) && (resp[2] == '\n' || !resp[2])) {
        fputs(resp + (resp[2] ? 3 : 2), stdout);
        status = 0;
    } else {
        /* "error: reason": one line, without our own newline doubling */
        char *nl = strchr(resp, '\n');
        if (nl)
            *nl = 0;
        cli_error(verb, "%s", !strncmp(resp, "error: ", 7) ? resp + 7 : resp);
    }
    free(resp);
    return status;
}

int cmd_status(int argc, char **argv) { return control("status", argc, argv, ARG_NONE); }
int cmd_fail(int argc, char **argv) { return control("fail", argc, argv, ARG_MEMBER); }
int cmd_remove(int argc, char **argv) { return control("remove", argc, argv, ARG_MEMBER); }
int cmd_rmw_level(int argc, char **argv) { return control("rmw-level", argc, argv, ARG_LEVEL); }
int cmd_add(int argc, char **argv)
{
    /* members of an array that is not running, with the new ones as --spare
     * (or a former member as --re-add) */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--spare") || !strcmp(argv[i], "--re-add"))
            return cmd_add_offline(argc, argv);
    return control("add", argc, argv, ARG_MEMBER);
}
int cmd_stop(int argc, char **argv) { return control("stop", argc, argv, ARG_NONE); }
int cmd_idle(int argc, char **argv) { return control("idle", argc, argv, ARG_NONE); }
int cmd_frozen(int argc, char **argv) { return control("frozen", argc, argv, ARG_NONE); }
