/* uraid write [--offset BYTES] MEMBERS... < data: writes stdin into the
 * array at the offset, keeping parity consistent (works degraded). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define WRITE_BUF (4u << 20)

static int extra_option(const char *verb, int argc, char **argv, int *i, void *ctx)
{
    uint64_t *offset = ctx;
    if (!strcmp(argv[*i], "--offset")) {
        if (*i + 1 >= argc || cli_parse_size(argv[*i + 1], offset)) {
            cli_error(verb, "--offset needs a size in bytes (e.g. 4096, 1M)");
            return -1;
        }
        (*i)++;
        return 1;
    }
    return 0;
}

int cmd_write(int argc, char **argv)
{
    struct cli_members mem;
    struct uraid_open_params op = {0};
    uint64_t offset = 0;
    struct cli_extra extra = {extra_option, &offset, "[--offset BYTES]"};
    int rc = cli_parse_members("write", argc, argv, &mem, &op, &extra);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (offset % 512) {
        cli_error("write", "--offset must be a multiple of 512 bytes");
        return 2;
    }
    struct uraid_array *a;
    if (cli_open_array("write", &mem, &op, &a))
        return 1;
    uint64_t size = uraid_size(a), off = offset;
    uint8_t *buf = aligned_alloc(4096, WRITE_BUF);
    int status = 0;
    for (;;) {
        size_t have = 0;
        while (have < WRITE_BUF) {
            ssize_t r = read(STDIN_FILENO, buf + have, WRITE_BUF - have);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            have += (size_t)r;
        }
        if (have == 0)
            break;
        if (have % 512) {
            /* the tail of the input: pad the last sector with what is on disk */
            size_t whole = have - have % 512;
            uint8_t sector[512];
            if (off + whole + 512 <= size && uraid_read(a, sector, 512, off + whole) == 0)
                memcpy(buf + have, sector + have % 512, 512 - have % 512);
            else
                memset(buf + have, 0, 512 - have % 512);
            have = whole + 512;
        }
        if (off + have > size) {
            cli_error("write", "input does not fit: the array holds %llu bytes from offset %llu",
                      (unsigned long long)(size - offset), (unsigned long long)offset);
            status = 1;
            break;
        }
        rc = uraid_write(a, buf, have, off);
        if (rc) {
            cli_error("write", "cannot write array bytes %llu-%llu: %s", (unsigned long long)off,
                      (unsigned long long)(off + have - 1), uraid_strerror(rc));
            status = 1;
            break;
        }
        off += have;
    }
    free(buf);
    rc = uraid_close(a);
    if (rc && !status) {
        cli_error("write", "closing the array: %s", uraid_strerror(rc));
        status = 1;
    }
    return status;
}
