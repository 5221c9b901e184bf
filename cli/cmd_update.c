/* uraid update --update=WHAT MEMBERS...: mdadm's --update= on an array
 * that is not running (uraid_update). mdadm applies these while it
 * assembles; uraid's assemble serves the array, whose server keeps its own
 * copy of the superblocks, so they are a verb of their own among the
 * offline ones (grow, rebuild, resync), taking the whole member list. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cli.h"
#include "uraid_admin.h"
#include "uraid_conf.h"

int cmd_update(int argc, char **argv);

static void usage(FILE *out)
{
    fprintf(out, "usage: uraid update --update=WHAT [--name NEW] [--uuid UUID] MEMBER...\n"
                 "  WHAT: name (--name NEW), uuid (--uuid UUID, random if not given), resync (mark dirty:\n"
                 "        the next open resyncs), no-bitmap, bbl, no-bbl, revert-reshape (turn a reshape in\n"
                 "        progress around; 'uraid grow --continue' then moves the data back) (mdadm --update=)\n"
                 "  (the array must not be running; every member of the array is needed)\n");
}

/* The value of --opt=V or --opt V; NULL after printing an error. */
static const char *value(int argc, char **argv, int *i, const char *opt)
{
    const char *a = argv[*i];
    size_t n = strlen(opt);
    if (a[n] == '=')
        return a + n + 1;
    if (*i + 1 < argc)
        return argv[++*i];
    cli_error("update", "%s needs a value", opt);
    return NULL;
}

static int is_opt(const char *a, const char *opt)
{
    size_t n = strlen(opt);
    return !strncmp(a, opt, n) && (a[n] == 0 || a[n] == '=');
}

int cmd_update(int argc, char **argv)
{
    struct uraid_update u = {.what = -1};
    const char *members[URAID_MAX_MEMBERS], *what = NULL, *uuid = NULL;
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (is_opt(a, "--update") || !strcmp(a, "-U")) {
            if (!(what = value(argc, argv, &i, a[1] == 'U' ? "-U" : "--update")))
                return 2;
        } else if (is_opt(a, "--name") || !strcmp(a, "-N")) {
            if (!(u.name = value(argc, argv, &i, a[1] == 'N' ? "-N" : "--name")))
                return 2;
        } else if (is_opt(a, "--uuid") || !strcmp(a, "-u")) {
            if (!(uuid = value(argc, argv, &i, a[1] == 'u' ? "-u" : "--uuid")))
                return 2;
        } else if (a[0] == '-' && a[1]) {
            cli_error("update", "unknown option '%s' (try 'uraid update --help')", a);
            return 2;
        } else if (n < URAID_MAX_MEMBERS) {
            members[n++] = a;
        } else {
            cli_error("update", "more than %d members", URAID_MAX_MEMBERS);
            return 2;
        }
    }
    if (!what || (u.what = uraid_update_parse(what)) < 0) {
        cli_error("update", "--update must be name, uuid, resync, no-bitmap, bbl, no-bbl or revert-reshape, got '%s'",
                  what ? what : "");
        return 2;
    }
    if (!n) {
        cli_error("update", "which members? (try 'uraid update --help')");
        return 2;
    }
    if (u.what == URAID_UPDATE_NAME && (!u.name || !*u.name || strlen(u.name) > 31)) {
        cli_error("update", "--update=name needs --name NEW (1 to 31 characters)");
        return 2;
    }
    if (u.what != URAID_UPDATE_NAME && u.name) {
        cli_error("update", "--name goes with --update=name only");
        return 2;
    }
    if (uuid && u.what != URAID_UPDATE_UUID) {
        cli_error("update", "--uuid goes with --update=uuid only");
        return 2;
    }
    if (uuid && uraid_conf_parse_uuid(uuid, u.uuid)) {
        cli_error("update", "--uuid '%s' is not a UUID (32 hex digits, with ':', '-' or '.' between them)", uuid);
        return 2;
    }
    if (u.what == URAID_UPDATE_UUID && !uuid && getrandom(u.uuid, sizeof u.uuid, 0) != (ssize_t)sizeof u.uuid) {
        cli_error("update", "cannot get random bytes for a new UUID");
        return 1;
    }
    char why[600];
    int rc = uraid_update(members, n, &u, why, sizeof why);
    if (rc) {
        cli_error("update", "%s", why[0] ? why : uraid_strerror(rc));
        return 1;
    }
    char text[URAID_UUID_TEXT];
    uraid_uuid_text(u.uuid, text);
    printf("uraid: update %s done on %d members%s%s\n", what, n, u.what == URAID_UPDATE_UUID ? ": UUID " : "",
           u.what == URAID_UPDATE_UUID ? text : "");
    return 0;
}
