/* uraid zero-superblock [--force] MEMBER...: mdadm --zero-superblock
 * (uraid_zero_superblock): every md superblock found on each member is
 * zeroed, or nothing is written on any member. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "uraid_admin.h"

int cmd_zero_superblock(int argc, char **argv);

int cmd_zero_superblock(int argc, char **argv)
{
    const char *members[URAID_MAX_MEMBERS];
    int n = 0, force = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: uraid zero-superblock [--force] MEMBER...\n"
                   "  erase the md superblock of each member, wherever its format (0.90, 1.0, 1.1, 1.2)\n"
                   "  keeps it; --force zeroes a damaged one too (mdadm --zero-superblock)\n");
            return 0;
        } else if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
            force = 1;
        } else if (a[0] == '-' && a[1]) {
            cli_error("zero-superblock", "unknown option '%s' (try 'uraid zero-superblock --help')", a);
            return 2;
        } else if (n < URAID_MAX_MEMBERS) {
            members[n++] = a;
        } else {
            cli_error("zero-superblock", "more than %d members", URAID_MAX_MEMBERS);
            return 2;
        }
    }
    if (!n) {
        cli_error("zero-superblock", "which members? (try 'uraid zero-superblock --help')");
        return 2;
    }
    char why[600];
    int rc = uraid_zero_superblock(members, n, force, why, sizeof why);
    if (rc) {
        cli_error("zero-superblock", "%s", why[0] ? why : uraid_strerror(rc));
        return 1;
    }
    printf("uraid: md superblock zeroed on %d member%s\n", n, n == 1 ? "" : "s");
    return 0;
}
