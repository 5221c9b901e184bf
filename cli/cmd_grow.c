/* uraid grow --consistency-policy=resync|ppl MEMBERS...
 * mdadm --grow --consistency-policy for an array that is not running:
 * every member's superblock switched (uraid_set_consistency_policy). An
 * array being served (its control socket answers) is refused: the server
 * keeps its own copy of the superblocks. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "uraid_admin.h"
#include "uraid_ctl.h"

/* 1 when a uraid server answers on the array's default control socket. */
static int being_served(const char *member)
{
    struct uraid_examine e;
    char why[320];
    if (uraid_examine(member, &e, why, sizeof why))
        return 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int k = snprintf(sa.sun_path, sizeof sa.sun_path, "%s/", URAID_CTL_DEFAULT_DIR);
    for (int i = 0; i < 16; i++)
        k += snprintf(sa.sun_path + k, sizeof sa.sun_path - (size_t)k, "%02x", e.array_uuid[i]);
    snprintf(sa.sun_path + k, sizeof sa.sun_path - (size_t)k, ".sock");
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int up = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return up;
}

int cmd_grow(int argc, char **argv)
{
    const char *members[URAID_MAX_MEMBERS];
    int n = 0, policy = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "--consistency-policy=", 21) || !strcmp(a, "--consistency-policy") || !strcmp(a, "-k")) {
            const char *val = strchr(a, '=') ? strchr(a, '=') + 1 : i + 1 < argc ? argv[++i] : NULL;
            policy = val ? uraid_policy_parse(val) : -1;
            if (policy < 0) {
                cli_error("grow", "--consistency-policy must be resync, bitmap, ppl or journal, got '%s'",
                          val ? val : "");
                return 2;
            }
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: uraid grow --consistency-policy resync|ppl MEMBER...   (the array must not be running;\n"
                   "       every member is needed; mdadm --grow --consistency-policy)\n");
            return 0;
        } else if (a[0] == '-' && a[1]) {
            cli_error("grow", "unknown option '%s' (uraid grow changes the consistency policy only: try --help)", a);
            return 2;
        } else if (n < URAID_MAX_MEMBERS) {
            members[n++] = a;
        }
    }
    if (!policy || !n) {
        cli_error("grow", "give --consistency-policy and the array's members (try 'uraid grow --help')");
        return 2;
    }
    if (being_served(members[0])) {
        cli_error("grow", "the array of %s is being served (its control socket answers): stop it first ('uraid stop')",
                  members[0]);
        return 1;
    }
    char why[512];
    int rc = uraid_set_consistency_policy(members, n, policy, why, sizeof why);
    if (rc == -EALREADY) {
        printf("uraid: %s; nothing changed\n", why);
        return 0;
    }
    if (rc) {
        cli_error("grow", "%s", why[0] ? why : uraid_strerror(rc));
        return 1;
    }
    printf("uraid: consistency policy is now %s on %d members\n", uraid_policy_name(policy), n);
    return 0;
}
