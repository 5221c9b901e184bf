/* NBD members: a sequential stream's next piece held for its neighbour,
 * and one thread serving several members (lib/member/nbd_loop.c, held;
 * nbd_threads.c), against real nbdkit servers started here (delay filter
 * for a round trip, log filter counting the requests at the server):
 *   - pieces of a stream submitted one by one, each in its own submission
 *     (as front requests arrive), while the stream has a request in
 *     flight: the later ones reach the server merged into one request
 *     (URAID_NBD_HOLD=0, the build without holding, sends one per piece);
 *     the bytes read back are the bytes written;
 *   - a flush submitted while a piece is held: the piece is sent with the
 *     flush (answered a round trip after it), not at the hold's end;
 *   - a request that continues no stream (random) and one of a stream with
 *     nothing in flight (a client with one request out) are sent at once:
 *     each at the server as its own request, answered within the round
 *     trip, not after a hold;
 *   - three members opened: one thread more in the process, not three; all
 *     three served at once, data right; closed: the thread is gone; with
 *     URAID_NBD_THREADS=3, three threads.
 * Timings only bound what a hold would add (100 ms on a 100 ms round
 * trip), never a speed. A SIGALRM bounds the run. nbdkit is installed by
 * scripts/deps.sh: its absence is a failure. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "nbdkit_proc.h"
#include "io/engine.h"
#include "uraid.h"
#include "member/member.h"

#define KiB 1024u
#define MiB (1u << 20)
#define LEN (64 * KiB)

static struct rng rng;
static char dir[64];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static long log_mark(const char *log)
{
    FILE *f = fopen(log, "r");
    long end = 0;
    if (f && !fseek(f, 0, SEEK_END))
        end = ftell(f);
    if (f)
        fclose(f);
    return end;
}

/* The log lines since mark that start a request (" Write id=", " Flush
 * id=", ...): their kinds in order ('W', 'R', 'F') into kinds (at most
 * max) and their offsets; returns how many. */
static int requests(const char *log, long mark, char *kinds, unsigned long *offs, int max)
{
    FILE *f = fopen(log, "r");
    char line[512];
    int n = 0;
    if (f && fseek(f, mark, SEEK_SET)) {
        fclose(f);
        f = NULL;
    }
    while (f && fgets(line, sizeof line, f) && n < max) {
        char k = strstr(line, " Write id=") ? 'W' : strstr(line, " Read id=") ? 'R' : strstr(line, " Flush id=") ? 'F' : 0;
        if (!k)
            continue;
        const char *o = strstr(line, "offset=");
        kinds[n] = k;
        offs[n] = o ? strtoul(o + 7, NULL, 16) : 0;
        n++;
    }
    if (f)
        fclose(f);
    return n;
}

struct server {
    pid_t pid;
    char sock[96], log[96];
    struct member *m;
};

/* nbdkit memory with the log filter outermost and delay_ms on reads and
 * writes; the member opened on it (with the environment as it is now). */
static int server_open(struct server *s, const char *name, int delay_ms)
{
    char logarg[128], dr[48], dw[48], uri[160], why[300];
    snprintf(s->sock, sizeof s->sock, "%s/%s.sock", dir, name);
    snprintf(s->log, sizeof s->log, "%s/%s.log", dir, name);
    snprintf(logarg, sizeof logarg, "logfile=%s", s->log);
    snprintf(dr, sizeof dr, "delay-read=%dms", delay_ms);
    snprintf(dw, sizeof dw, "delay-write=%dms", delay_ms);
    const char *args[] = {"--filter=log", "--filter=delay", "memory", "64M", logarg, dr, dw, NULL};
    s->pid = nbdkit_start(s->sock, args);
    s->m = NULL;
    CHECK(s->pid > 0, "nbdkit --filter=log --filter=delay memory (is nbdkit installed? scripts/deps.sh)");
    if (s->pid <= 0)
        return -1;
    snprintf(uri, sizeof uri, "nbd+unix:///?socket=%s", s->sock);
    int rc = member_open_why(uri, 0, &s->m, why, sizeof why);
    CHECK(rc == 0, "%s", why);
    return rc;
}

static void server_close(struct server *s)
{
    if (s->m)
        member_close(s->m);
    s->m = NULL;
    if (s->pid > 0)
        nbdkit_stop(s->pid, SIGTERM);
}

/* One request submitted on its own, as a front request's piece is. */
struct piece {
    struct member_aio aio;
    double submitted, answered;
    int rc, done;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void piece_done(struct member_aio *a, int rc)
{
    struct piece *p = a->ctx;
    pthread_mutex_lock(&mu);
    p->answered = now_s();
    p->rc = rc;
    p->done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static int submit(struct member *m, struct piece *p, int kind, void *buf, size_t len, uint64_t off)
{
    *p = (struct piece){.aio = {.done = piece_done, .ctx = p}, .submitted = now_s()};
    int rc = m->ops->submit(m, kind, buf, len, off, &p->aio);
    CHECK(rc == 0, "submit at %llu: %s", (unsigned long long)off, strerror(-rc));
    if (rc)
        p->done = 1;
    return rc;
}

static void wait_pieces(struct piece *p, int n)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n; i++)
        while (!p[i].done)
            pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n; i++)
        CHECK(p[i].rc == 0, "piece %d: %s", i, strerror(-p[i].rc));
}

/* A warm-up request: the member learns its round trip. */
static void warm_up(struct member *m)
{
    uint8_t b[4096] = {0};
    CHECK(member_write(m, b, sizeof b, 32 * MiB) == 0, "warm-up write");
}

/* A then B, C, D adjacent, each submitted alone 2 ms apart while A is in
 * flight; returns the writes the server saw; the bytes are checked. */
static int stream_of_four(struct server *s)
{
    uint8_t *w = malloc(4 * LEN), *r = malloc(4 * LEN);
    struct piece p[4];
    int n = -1;
    if (!w || !r) {
        CHECK(0, "out of memory");
        goto out;
    }
    rng_fill(&rng, w, 4 * LEN);
    warm_up(s->m);
    long mark = log_mark(s->log);
    for (int i = 0; i < 4; i++) {
        submit(s->m, &p[i], MEMBER_AIO_WRITE, w + (size_t)i * LEN, LEN, MiB + (uint64_t)i * LEN);
        sleep_ms(2);
    }
    wait_pieces(p, 4);
    char kinds[16];
    unsigned long offs[16];
    n = requests(s->log, mark, kinds, offs, 16);
    CHECK(member_read(s->m, r, 4 * LEN, MiB) == 0 && !memcmp(w, r, 4 * LEN),
          "the stream's bytes did not read back");
out:
    free(w);
    free(r);
    return n;
}

static void test_stream_merged(void)
{
    struct server s;
    setenv("URAID_NBD_HOLD", "30000", 1); /* 30 ms: well above the submissions' spread */
    if (server_open(&s, "stream", 100) == 0) {
        int n = stream_of_four(&s);
        printf("  4 pieces of a stream, submitted one by one: %d writes at the server\n", n);
        CHECK(n >= 2 && n <= 3, "%d writes at the server for 4 pieces (expected the held ones merged: 2)", n);
    }
    server_close(&s);
    setenv("URAID_NBD_HOLD", "0", 1);
    if (server_open(&s, "nohold", 100) == 0) {
        int n = stream_of_four(&s);
        printf("  the same with URAID_NBD_HOLD=0: %d writes at the server\n", n);
        CHECK(n == 4, "%d writes at the server without holding (expected one per piece: 4)", n);
    }
    server_close(&s);
    unsetenv("URAID_NBD_HOLD");
}

static void test_flush(void)
{
    struct server s;
    setenv("URAID_NBD_HOLD", "200000", 1); /* the hold is then the round trip: 100 ms */
    if (server_open(&s, "flush", 100) == 0) {
        uint8_t *w = malloc(2 * LEN);
        struct piece p[3];
        if (w) {
            rng_fill(&rng, w, 2 * LEN);
            warm_up(s.m);
            long mark = log_mark(s.log);
            submit(s.m, &p[0], MEMBER_AIO_WRITE, w, LEN, 4 * MiB);
            sleep_ms(2);
            submit(s.m, &p[1], MEMBER_AIO_WRITE, w + LEN, LEN, 4 * MiB + LEN); /* held */
            sleep_ms(5);
            submit(s.m, &p[2], MEMBER_AIO_FLUSH, NULL, 0, 0);
            wait_pieces(p, 3);
            char kinds[16];
            unsigned long offs[16];
            int n = requests(s.log, mark, kinds, offs, 16);
            int b_at = -1, f_at = -1;
            for (int i = 0; i < n; i++) {
                if (kinds[i] == 'W' && offs[i] == 4 * MiB + LEN && b_at < 0)
                    b_at = i;
                if (kinds[i] == 'F' && f_at < 0)
                    f_at = i;
            }
            /* The log's order of two requests sent together is the order
             * nbdkit's threads got to them, so the proof is the time: held
             * to its end, the piece would be answered a hold (100 ms) plus
             * a round trip after its submission, long after the flush. */
            double b_after_f = p[1].answered - p[2].submitted;
            printf("  at the server: %.*s; the held write answered %.0f ms after the flush was submitted (held to "
                   "its end: ~200 ms)\n", n, kinds, b_after_f * 1e3);
            CHECK(b_at >= 0 && f_at >= 0, "the write or the flush never reached the server");
            CHECK(b_after_f < 0.17, "the held write was sent %.0f ms after the flush: held past it", b_after_f * 1e3);
        } else {
            CHECK(0, "out of memory");
        }
        free(w);
    }
    server_close(&s);
    unsetenv("URAID_NBD_HOLD");
}

static void test_not_held(void)
{
    struct server s;
    setenv("URAID_NBD_HOLD", "200000", 1);
    if (server_open(&s, "random", 100) == 0) {
        uint8_t *w = malloc(3 * LEN);
        struct piece p[3];
        if (w) {
            rng_fill(&rng, w, 3 * LEN);
            warm_up(s.m);
            /* a stream with nothing in flight: its next piece goes at once */
            submit(s.m, &p[0], MEMBER_AIO_WRITE, w, LEN, 8 * MiB);
            wait_pieces(p, 1);
            submit(s.m, &p[1], MEMBER_AIO_WRITE, w + LEN, LEN, 8 * MiB + LEN);
            wait_pieces(p + 1, 1);
            double alone = p[1].answered - p[1].submitted;
            /* random: continues no stream, while another request is in flight */
            submit(s.m, &p[0], MEMBER_AIO_WRITE, w, LEN, 12 * MiB);
            sleep_ms(2);
            submit(s.m, &p[2], MEMBER_AIO_WRITE, w + 2 * LEN, LEN, 20 * MiB + 4096);
            wait_pieces(p, 1);
            wait_pieces(p + 2, 1);
            double rnd = p[2].answered - p[2].submitted;
            printf("  answered after %.0f ms (stream, nothing in flight) and %.0f ms (random); a hold would add "
                   "100 ms to a 100 ms round trip\n", alone * 1e3, rnd * 1e3);
            CHECK(alone < 0.17, "the next piece of an idle stream waited %.0f ms: held", alone * 1e3);
            CHECK(rnd < 0.17, "a random request waited %.0f ms: held", rnd * 1e3);
        } else {
            CHECK(0, "out of memory");
        }
        free(w);
    }
    server_close(&s);
    unsetenv("URAID_NBD_HOLD");
}

static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Three members opened: how many threads that added; one engine batch on
 * all three (a write each, then a read each), bytes checked; closed. */
static int three_members(struct io_engine *e, const char *tag, int *after_close)
{
    struct server s[3];
    int before = threads_now(), added = -1, ok = 1;
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s%d", tag, i);
        ok &= server_open(&s[i], name, 5) == 0;
    }
    if (ok) {
        added = threads_now() - before;
        uint8_t *w = malloc(3 * LEN), *r = calloc(3, LEN);
        struct io_op ops[3];
        if (w && r) {
            rng_fill(&rng, w, 3 * LEN);
            for (int i = 0; i < 3; i++)
                ops[i] = (struct io_op){.m = s[i].m, .kind = IO_WRITE, .buf = w + (size_t)i * LEN, .len = LEN,
                                        .offset = (uint64_t)i * MiB};
            CHECK(io_engine_run(e, ops, 3) == 0, "writes on three members");
            for (int i = 0; i < 3; i++)
                ops[i] = (struct io_op){.m = s[i].m, .kind = IO_READ, .buf = r + (size_t)i * LEN, .len = LEN,
                                        .offset = (uint64_t)i * MiB};
            CHECK(io_engine_run(e, ops, 3) == 0, "reads on three members");
            CHECK(!memcmp(w, r, 3 * LEN), "three members read back other bytes");
        } else {
            CHECK(0, "out of memory");
        }
        free(w);
        free(r);
    }
    for (int i = 0; i < 3; i++)
        server_close(&s[i]);
    *after_close = threads_now() - before;
    return added;
}

static void test_threads(struct io_engine *e)
{
    int gone;
    int added = three_members(e, "one", &gone);
    printf("  3 members opened: %d thread(s) more; after closing them: %d\n", added, gone);
    CHECK(added == 1, "3 NBD members added %d threads (expected 1)", added);
    CHECK(gone == 0, "%d threads left after closing the members", gone);
    setenv("URAID_NBD_THREADS", "3", 1);
    added = three_members(e, "three", &gone);
    printf("  with URAID_NBD_THREADS=3: %d thread(s) more; after closing them: %d\n", added, gone);
    CHECK(added == 3, "URAID_NBD_THREADS=3: %d threads (expected 3)", added);
    CHECK(gone == 0, "%d threads left after closing the members", gone);
    unsetenv("URAID_NBD_THREADS");
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_nbd_hold");
    rng_seed(&rng, harness_seed());
    signal(SIGPIPE, SIG_IGN);
    alarm(120);
    snprintf(dir, sizeof dir, "/tmp/uraid-nbdhold-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp: %s", strerror(errno));
        return harness_finish();
    }
    struct io_engine *e = NULL;
    CHECK(io_engine_create(NULL, &e) == 0);
    if (e) {
        harness_begin("NBD member: a stream's pieces submitted one by one are held and merged");
        test_stream_merged();
        harness_end();
        harness_begin("NBD member: a held piece is sent with a flush, not held past it");
        test_flush();
        harness_end();
        harness_begin("NBD member: random requests and idle streams are not held");
        test_not_held();
        harness_end();
        harness_begin("NBD members: one thread serves several members");
        test_threads(e);
        harness_end();
        io_engine_destroy(e);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {
        /* leftovers in /tmp are harmless */
    }
    return harness_finish();
}
