/* uraid selftest: every parity routine this CPU can run, checked against the
 * byte-wise reference; one line per routine; exit status 1 on any failure. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_selftest(int argc, char **argv)
{
    if (argc > 1) {
        if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
            printf("usage: uraid selftest\n  checks every parity routine against the reference\n");
            return 0;
        }
        cli_error("selftest", "unexpected argument '%s'", argv[1]);
        return 2;
    }
    if (cli_setup_parity("selftest"))
        return 1;
    int failures = 0;
    printf("parity self-test against the byte-wise reference:\n");
    for (int i = 0; i < uraid_parity_impl_count(); i++) {
        const char *name = uraid_parity_impl_name(i);
        if (!uraid_parity_impl_valid(i)) {
            printf("  %-8s skipped: this CPU cannot run it (%s)\n", name, uraid_parity_impl_desc(i));
            continue;
        }
        char why[160];
        int rc = uraid_parity_selftest(i, why, sizeof why);
        if (rc == 0) {
            printf("  %-8s ok      %s\n", name, uraid_parity_impl_desc(i));
        } else {
            failures++;
            printf("  %-8s FAILED  %s\n", name, rc < 0 ? uraid_strerror(rc) : why);
        }
    }
    printf("chosen:");
    for (int op = 0; op < URAID_OP_COUNT; op++)
        printf(" %s=%s", uraid_parity_op_name(op), uraid_parity_chosen(op));
    printf("%s\n", cli.parity || getenv("URAID_PARITY") ? " (forced)" : "");
    return failures ? 1 : 0;
}
