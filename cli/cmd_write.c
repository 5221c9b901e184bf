/* uraid write [--offset BYTES] MEMBERS... < data: writes stdin into the
 * array at the offset, keeping parity consistent (works degraded).
 *
 * WRITERS threads each take the next WRITE_BUF of stdin in turn (the reads
 * are sequential, under a lock) and write it while the others read and
 * write theirs: one request at a time left every member idle while the
 * next piece was read and its parity computed, and members far away (NBD)
 * idle for a round trip per piece. Pieces are disjoint, and the array
 * orders writes to one stripe by its locks. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

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

struct writer_state {
    struct uraid_array *a;
    uint64_t offset, size;  /* where the input starts; the array's bytes */
    pthread_mutex_t mu;     /* stdin, off, done, status */
    uint64_t off;           /* where the next piece goes */
    int done;               /* end of input, or a failure: no more pieces */
    int status;
};

/* The next piece of stdin into buf: its length (0 at the end) and place.
 * Under s->mu. */
static size_t read_piece(struct writer_state *s, uint8_t *buf, uint64_t *at)
{
    size_t have = 0;
    while (have < WRITE_BUF) {
        ssize_t r = read(STDIN_FILENO, buf + have, WRITE_BUF - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
    }
    *at = s->off;
    size_t whole = have % 512 ? have - have % 512 + 512 : have;
    if (s->off + whole > s->size) {
        cli_error("write", "input does not fit: the array holds %llu bytes from offset %llu",
                  (unsigned long long)(s->size - s->offset), (unsigned long long)s->offset);
        s->status = 1;
        return 0;
    }
    s->off += whole;
    return have;
}

static void *writer_main(void *arg)
{
    struct writer_state *s = arg;
    uint8_t *buf = aligned_alloc(4096, WRITE_BUF);
    pthread_mutex_lock(&s->mu);
    if (!buf) {
        cli_error("write", "out of memory");
        s->status = 1;
        s->done = 1;
    }
    while (!s->done) {
        uint64_t off;
        size_t have = read_piece(s, buf, &off);
        if (have < WRITE_BUF)
            s->done = 1; /* the input ended (a pipe's short read is retried above) */
        pthread_mutex_unlock(&s->mu);
        int rc = 0;
        if (have % 512) {
            /* the tail of the input: pad the last sector with what is on disk */
            size_t whole = have - have % 512;
            uint8_t sector[512];
            if (off + whole + 512 <= s->size && uraid_read(s->a, sector, 512, off + whole) == 0)
                memcpy(buf + have, sector + have % 512, 512 - have % 512);
            else
                memset(buf + have, 0, 512 - have % 512);
            have = whole + 512;
        }
        if (have)
            rc = uraid_write(s->a, buf, have, off);
        pthread_mutex_lock(&s->mu);
        if (rc) {
            if (!s->status)
                cli_error("write", "cannot write array bytes %llu-%llu: %s", (unsigned long long)off,
                          (unsigned long long)(off + have - 1), uraid_strerror(rc));
            s->status = 1;
            s->done = 1;
        }
    }
    pthread_mutex_unlock(&s->mu);
    free(buf);
    return NULL;
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
    struct writer_state s = {.a = a, .offset = offset, .size = uraid_size(a), .off = offset};
    pthread_mutex_init(&s.mu, NULL);
    pthread_t t[WRITERS];
    int n = 0;
    while (n < WRITERS && pthread_create(&t[n], NULL, writer_main, &s) == 0)
        n++;
    if (n == 0)
        writer_main(&s);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_mutex_destroy(&s.mu);
    rc = uraid_close(a);
    if (rc && !s.status) {
        cli_error("write", "closing the array: %s", uraid_strerror(rc));
        s.status = 1;
    }
    return s.status;
}
