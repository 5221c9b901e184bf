/* uraid write [--offset BYTES] MEMBERS... < data: writes stdin into the
 * array at the offset, keeping parity consistent (works degraded).
 *
 * WRITERS pieces of WRITE_BUF of stdin are written at once (pipeline.c;
 * stdin is read in order). Pieces are disjoint, and the array orders
 * writes to one stripe by its locks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pipeline.h"

#define WRITE_BUF (4u << 20)
#define WRITERS 4

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

struct write_state {
    struct uraid_array *a;
    uint64_t offset, size; /* where the input starts; the array's bytes */
    uint64_t off;          /* where the next piece goes; under the pipeline's lock */
};

/* The next piece of stdin: pieces are read in order, under the lock. */
static int claim(void *ctx, struct cli_piece *pc, char *why, size_t whylen)
{
    struct write_state *s = ctx;
    size_t have = 0;
    while (have < WRITE_BUF) {
        ssize_t r = read(STDIN_FILENO, pc->buf + have, WRITE_BUF - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
    }
    pc->at = s->off;
    pc->len = have;
    size_t whole = have % 512 ? have - have % 512 + 512 : have;
    if (s->off + whole > s->size) {
        snprintf(why, whylen, "input does not fit: the array holds %llu bytes from offset %llu",
                 (unsigned long long)(s->size - s->offset), (unsigned long long)s->offset);
        return 1;
    }
    s->off += whole;
    return 0;
}

static int write_piece(void *ctx, struct cli_piece *pc, char *why, size_t whylen)
{
    struct write_state *s = ctx;
    size_t have = pc->len;
    if (have % 512) {
        /* the tail of the input: pad the last sector with what is on disk */
        size_t whole = have - have % 512;
        uint8_t sector[512];
        if (pc->at + whole + 512 <= s->size && uraid_read(s->a, sector, 512, pc->at + whole) == 0)
            memcpy(pc->buf + have, sector + have % 512, 512 - have % 512);
        else
            memset(pc->buf + have, 0, 512 - have % 512);
        have = whole + 512;
    }
    int rc = uraid_write(s->a, pc->buf, have, pc->at);
    if (rc)
        snprintf(why, whylen, "cannot write array bytes %llu-%llu: %s", (unsigned long long)pc->at,
                 (unsigned long long)(pc->at + have - 1), uraid_strerror(rc));
    return rc ? 1 : 0;
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
    struct write_state s = {.a = a, .offset = offset, .size = uraid_size(a), .off = offset};
    struct cli_pipeline p = {.verb = "write", .workers = WRITERS, .piece = WRITE_BUF, .ctx = &s,
                             .claim = claim, .work = write_piece};
    int status = cli_pipeline_run(&p);
    rc = uraid_close(a);
    if (rc && !status) {
        cli_error("write", "closing the array: %s", uraid_strerror(rc));
        status = 1;
    }
    return status;
}
