/* uraid cat MEMBERS... > image: the array's contents on stdout (degraded
 * arrays are reconstructed). Never writes to the members.
 *
 * READERS threads each read the next CAT_BUF of the array while the others
 * do, and put theirs on stdout in turn: one read at a time left the members
 * idle while a piece went to stdout, and members far away (NBD) idle for a
 * round trip per piece. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define CAT_BUF (4u << 20)
#define READERS 4

struct reader_state {
    struct uraid_array *a;
    uint64_t size;
    pthread_mutex_t mu;      /* everything below */
    pthread_cond_t turn;     /* out moved on */
    uint64_t next;           /* the next piece to read */
    uint64_t out;            /* the next piece to go to stdout */
    int failed;
    int epipe;               /* stdout's reader went away (cat | head) */
};

/* The first failure is reported; every reader stops. Under s->mu. */
static void fail(struct reader_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct reader_state *s, const char *fmt, ...)
{
    if (!s->failed) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        cli_error("cat", "%s", msg);
    }
    s->failed = 1;
    pthread_cond_broadcast(&s->turn);
}

static void *reader_main(void *arg)
{
    struct reader_state *s = arg;
    uint8_t *buf = aligned_alloc(4096, CAT_BUF);
    pthread_mutex_lock(&s->mu);
    if (!buf)
        fail(s, "out of memory");
    while (!s->failed && s->next < s->size) {
        uint64_t off = s->next;
        size_t n = s->size - off < CAT_BUF ? (size_t)(s->size - off) : CAT_BUF;
        s->next += n;
        pthread_mutex_unlock(&s->mu);
        int rc = uraid_read(s->a, buf, n, off);
        pthread_mutex_lock(&s->mu);
        while (!s->failed && s->out != off)
            pthread_cond_wait(&s->turn, &s->mu);
        if (s->failed)
            break;
        if (rc) {
            fail(s, "cannot read array bytes %llu-%llu: %s", (unsigned long long)off,
                 (unsigned long long)(off + n - 1), uraid_strerror(rc));
            break;
        }
        /* stdout is written by the piece's owner in turn; the others go on
         * reading meanwhile */
        pthread_mutex_unlock(&s->mu);
        int wr = cli_write_all(STDOUT_FILENO, buf, n);
        int err = errno;
        pthread_mutex_lock(&s->mu);
        if (wr && err == EPIPE && !s->failed) {
            s->epipe = s->failed = 1; /* said by the signal, once the array is closed */
            pthread_cond_broadcast(&s->turn);
            break;
        }
        if (wr) {
            fail(s, "writing to stdout: %s", strerror(err));
            break;
        }
        s->out += n;
        pthread_cond_broadcast(&s->turn);
    }
    pthread_mutex_unlock(&s->mu);
    free(buf);
    return NULL;
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
    struct reader_state s = {.a = a, .size = uraid_size(a)};
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.turn, NULL);
    pthread_t t[READERS];
    int n = 0;
    while (n < READERS && pthread_create(&t[n], NULL, reader_main, &s) == 0)
        n++;
    if (n == 0)
        reader_main(&s);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_cond_destroy(&s.turn);
    pthread_mutex_destroy(&s.mu);
    uraid_close(a);
    if (s.epipe) {
        signal(SIGPIPE, SIG_DFL);
        raise(SIGPIPE);
    }
    return s.failed;
}
