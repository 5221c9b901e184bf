/* uraid cat MEMBERS... > image: the array's contents on stdout (degraded
 * arrays are reconstructed). Never writes to the members.
 *
 * READERS pieces of CAT_BUF are read at once and go to stdout in turn
 * (pipeline.c). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pipeline.h"

#define CAT_BUF (4u << 20)
#define READERS 4

struct cat_state {
    struct uraid_array *a;
    uint64_t size;
    uint64_t next; /* the next piece to claim; under the pipeline's lock */
    int epipe;     /* stdout's reader went away (cat | head) */
};

static int claim(void *ctx, struct cli_piece *pc, char *why, size_t whylen)
{
    struct cat_state *s = ctx;
    (void)why, (void)whylen;
    pc->at = s->next;
    pc->len = s->size - s->next < CAT_BUF ? (size_t)(s->size - s->next) : CAT_BUF;
    s->next += pc->len;
    return 0;
}

static int read_piece(void *ctx, struct cli_piece *pc, char *why, size_t whylen)
{
    struct cat_state *s = ctx;
    int rc = uraid_read(s->a, pc->buf, pc->len, pc->at);
    if (rc)
        snprintf(why, whylen, "cannot read array bytes %llu-%llu: %s", (unsigned long long)pc->at,
                 (unsigned long long)(pc->at + pc->len - 1), uraid_strerror(rc));
    return rc ? 1 : 0;
}

static int to_stdout(void *ctx, struct cli_piece *pc, char *why, size_t whylen)
{
    struct cat_state *s = ctx;
    if (cli_write_all(STDOUT_FILENO, pc->buf, pc->len) == 0)
        return 0;
    if (errno == EPIPE) {
        s->epipe = 1; /* said by the signal, once the array is closed */
        return 1;
    }
    snprintf(why, whylen, "writing to stdout: %s", strerror(errno));
    return 1;
}

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
    /* A reader that goes away (cat | head) must not kill the process with
     * requests in flight on every connection: the array is closed first
     * (a clean NBD disconnect; nbdkit 1.32 aborts when a client with
     * requests in flight vanishes), then the signal is raised as before. */
    signal(SIGPIPE, SIG_IGN);
    struct cat_state s = {.a = a, .size = uraid_size(a)};
    struct cli_pipeline p = {.verb = "cat", .workers = READERS, .piece = CAT_BUF, .ctx = &s,
                             .claim = claim, .work = read_piece, .emit = to_stdout};
    int status = cli_pipeline_run(&p);
    uraid_close(a);
    if (s.epipe) {
        signal(SIGPIPE, SIG_DFL);
        raise(SIGPIPE);
    }
    return status;
}
