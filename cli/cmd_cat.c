/* uraid cat MEMBERS... > image: the array's contents on stdout (degraded
 * arrays are reconstructed). Never writes to the members. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define CAT_BUF (4u << 20)

int cmd_cat(int argc, char **argv)
{
    struct cli_members mem;
    struct uraid_open_params op = {.readonly = 1};
    int rc = cli_parse_members("cat", argc, argv, &mem, &op, NULL);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (isatty(STDOUT_FILENO)) {
        cli_error("cat", "refusing to write array contents to a terminal; redirect stdout to a file");
        return 2;
    }
    struct uraid_array *a;
    if (cli_open_array("cat", &mem, &op, &a))
        return 1;
    uint64_t size = uraid_size(a), off = 0;
    uint8_t *buf = aligned_alloc(4096, CAT_BUF);
    int status = 0;
    while (buf && off < size) {
        size_t n = size - off < CAT_BUF ? (size_t)(size - off) : CAT_BUF;
        rc = uraid_read(a, buf, n, off);
        if (rc) {
            cli_error("cat", "cannot read array bytes %llu-%llu: %s", (unsigned long long)off,
                      (unsigned long long)(off + n - 1), uraid_strerror(rc));
            status = 1;
            break;
        }
        if (cli_write_all(STDOUT_FILENO, buf, n)) {
            cli_error("cat", "writing to stdout: %s", strerror(errno));
            status = 1;
            break;
        }
        off += n;
    }
    if (!buf) {
        cli_error("cat", "out of memory");
        status = 1;
    }
    free(buf);
    uraid_close(a);
    return status;
}
