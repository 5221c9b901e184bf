/* NBD members far away (lib/member/nbd.c, nbd_loop.c) against real nbdkit
 * servers started here, each with --exit-with-parent:
 *   - pipelining: a batch of the I/O engine on one member with a 50 ms
 *     round trip (delay filter) has more than 4 requests at the server at
 *     once, counted by nbdkit's log filter; data identical; an IO_FLUSH of the
 *     engine (the member's own submit) reaches the server, a write with fua
 *     carries NBD's FUA flag;
 *   - a stalled server (SIGSTOP): a request fails the member after its
 *     timeout (,timeout=1s after the URI) instead of hanging; the member
 *     stays failed after the server resumes; opening it again works and
 *     reads what was written; opening a stalled server times out too;
 *   - a killed server: -ENXIO once the timeout has passed, not before, and
 *     for good;
 *   - a short outage: the server killed with a batch in flight and started
 *     again on the same socket within the timeout: the batch completes on
 *     a new connection with the right data, and the member goes on.
 * A SIGALRM bounds the whole run: a hang is a failure, not a stuck test.
 * nbdkit is installed by scripts/deps.sh: its absence is a failure. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "nbdkit_proc.h"
#include "io/engine.h"
#include "uraid.h"
#include "member/member.h"

#define KiB 1024u
#define MiB (1u << 20)

static struct rng rng;
static char dir[64];

/* The backend's messages, printed and counted: a test can tell an outage
 * it rode out from a member it failed. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int n_lost, n_back, n_failed;

static void log_fn(void *ctx, enum uraid_log_level level, const char *msg)
{
    (void)ctx;
    (void)level;
    pthread_mutex_lock(&log_mu);
    n_lost += strstr(msg, "connection lost") != NULL;
    n_back += strstr(msg, "open again") != NULL;
    n_failed += strstr(msg, "the member is failed;") != NULL;
    printf("  log: %s\n", msg);
    pthread_mutex_unlock(&log_mu);
}

/* SIGSTOP, and wait until the whole server has stopped: kill returns
 * before, and a thread already running could still answer. */
static void stop_server(pid_t pid)
{
    int st;
    kill(pid, SIGSTOP);
    waitpid(pid, &st, WUNTRACED);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The most requests nbdkit's log filter saw started and not yet returned
 * at once, and how many were started. */
static int max_concurrent(const char *log, int *started)
{
    FILE *f = fopen(log, "r");
    char line[512];
    int cur = 0, max = 0;
    *started = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, " Read id=") || strstr(line, " Write id=")) {
            (*started)++;
            if (++cur > max)
                max = cur;
        } else if (strstr(line, "...Read id=") || strstr(line, "...Write id=")) {
            cur--;
        }
    }
    if (f)
        fclose(f);
    return max;
}

/* 1 when a line of nbdkit's log contains what. */
static int log_has(const char *log, const char *what)
{
    FILE *f = fopen(log, "r");
    char line[512];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return found;
}

/* A batch of n ops of len bytes each at distinct offsets on m. */
static int run_batch(struct io_engine *e, struct member *m, enum io_kind kind, uint8_t *buf, int n, size_t len)
{
    struct io_op ops[64];
    for (int i = 0; i < n; i++)
        ops[i] = (struct io_op){.m = m, .kind = kind, .buf = buf + (size_t)i * len, .len = len,
                                .offset = (uint64_t)i * 2 * len};
    return io_engine_run(e, ops, n);
}

static void test_pipelined(struct io_engine *e)
{
    char sock[96], uri[160], log[96], logarg[128];
    snprintf(sock, sizeof sock, "%s/pipe.sock", dir);
    snprintf(log, sizeof log, "%s/pipe.log", dir);
    snprintf(logarg, sizeof logarg, "logfile=%s", log);
    const char *args[] = {"--filter=log", "--filter=delay", "memory", "64M", logarg, "delay-read=50ms",
                          "delay-write=50ms", NULL};
    pid_t pid = nbdkit_start(sock, args);
    CHECK(pid > 0, "nbdkit --filter=log --filter=delay memory (is nbdkit installed? scripts/deps.sh)");
    snprintf(uri, sizeof uri, "nbd+unix:///?socket=%s", sock);
    struct member *m = NULL;
    char why[300];
    CHECK(member_open_why(uri, 0, &m, why, sizeof why) == 0, "%s", why);
    enum { N = 48, LEN = 64 * KiB };
    uint8_t *a = malloc((size_t)N * LEN), *b = malloc((size_t)N * LEN);
    if (m && a && b) {
        rng_fill(&rng, a, (size_t)N * LEN);
        double t0 = now_s();
        CHECK(run_batch(e, m, IO_WRITE, a, N, LEN) == 0);
        double t1 = now_s();
        CHECK(run_batch(e, m, IO_READ, b, N, LEN) == 0);
        double t2 = now_s();
        CHECK(!memcmp(a, b, (size_t)N * LEN), "data read back differs");
        printf("  %d writes of 64 KiB in %.0f ms, %d reads in %.0f ms (50 ms per request at the server)\n", N,
               (t1 - t0) * 1e3, N, (t2 - t1) * 1e3);
        /* a flush through the engine (the member's own submit) reaches the server */
        struct io_op fl = {.m = m, .kind = IO_FLUSH};
        CHECK(io_engine_run(e, &fl, 1) == 0 && fl.result == 0, "flush: %d", fl.result);
        /* and a write with fua set carries NBD's FUA flag */
        struct io_op fw = {.m = m, .kind = IO_WRITE, .buf = a, .len = 4096, .offset = 0, .fua = 1};
        CHECK(io_engine_run(e, &fw, 1) == 0 && fw.result == 0, "FUA write: %d", fw.result);
    }
    if (m)
        member_close(m);
    nbdkit_stop(pid, SIGTERM);
    int started, maxc = max_concurrent(log, &started);
    printf("  the server saw at most %d requests at once (%d in all)\n", maxc, started);
    CHECK(started >= 2 * N, "the log filter saw %d requests, expected %d", started, 2 * N);
    CHECK(log_has(log, " Flush id="), "the engine's IO_FLUSH never reached the server");
    CHECK(log_has(log, "fua=1"), "the engine's FUA write reached the server without the FUA flag");
    /* One synchronous request per connection would be at most 4. */
    CHECK(maxc > 4, "at most %d requests in flight on the member", maxc);
    free(a);
    free(b);
}

static void test_stalled(struct io_engine *e)
{
    char sock[96], uri[200], img[96];
    snprintf(sock, sizeof sock, "%s/stall.sock", dir);
    snprintf(img, sizeof img, "%s/stall.img", dir);
    FILE *f = fopen(img, "w");
    CHECK(f && !ftruncate(fileno(f), 16 * MiB));
    if (f)
        fclose(f);
    const char *args[] = {"file", img, NULL};
    pid_t pid = nbdkit_start(sock, args);
    CHECK(pid > 0, "nbdkit file");
    snprintf(uri, sizeof uri, "nbd+unix:///?socket=%s,timeout=1s", sock);
    struct member *m = NULL;
    char why[300];
    CHECK(member_open_why(uri, 0, &m, why, sizeof why) == 0, "%s", why);
    uint8_t a[64 * KiB], b[64 * KiB];
    rng_fill(&rng, a, sizeof a);
    if (m) {
        CHECK(member_write(m, a, sizeof a, MiB) == 0 && member_flush(m) == 0);
        stop_server(pid);
        double t0 = now_s();
        int rc = member_read(m, b, sizeof b, MiB);
        double dt = now_s() - t0;
        CHECK(rc == -ENXIO, "a read from a stopped server: %d", rc);
        CHECK(dt >= 0.9 && dt < 10, "the member failed after %.2f s with a 1 s timeout", dt);
        t0 = now_s();
        CHECK(run_batch(e, m, IO_READ, b, 1, sizeof b) == -ENXIO);
        CHECK(member_write(m, a, sizeof a, 0) == -ENXIO && member_flush(m) == -ENXIO);
        CHECK(now_s() - t0 < 0.5, "a failed member answers at once (%.2f s)", now_s() - t0);
        kill(pid, SIGCONT);
        usleep(100000);
        CHECK(member_read(m, b, sizeof b, MiB) == -ENXIO, "the member stays failed after the server resumes");
        member_close(m);
        m = NULL;
        /* Added again (what uraid add does): a new connection, the data there. */
        CHECK(member_open_why(uri, 0, &m, why, sizeof why) == 0, "%s", why);
        if (m) {
            CHECK(member_read(m, b, sizeof b, MiB) == 0 && !memcmp(a, b, sizeof a), "data after re-opening");
            member_close(m);
        }
        /* Opening a stopped server: the handshake never comes. */
        stop_server(pid);
        t0 = now_s();
        m = NULL;
        rc = member_open_why(uri, 0, &m, why, sizeof why);
        dt = now_s() - t0;
        CHECK(rc == -ETIMEDOUT && strstr(why, "handshake"), "open of a stopped server: %d %s", rc, why);
        CHECK(dt >= 0.9 && dt < 10, "open gave up after %.2f s", dt);
        if (!rc)
            member_close(m);
    }
    nbdkit_stop(pid, SIGKILL);
}

static void test_killed(void)
{
    char sock[96], uri[200];
    snprintf(sock, sizeof sock, "%s/kill.sock", dir);
    const char *args[] = {"memory", "16M", NULL};
    pid_t pid = nbdkit_start(sock, args);
    CHECK(pid > 0, "nbdkit memory");
    snprintf(uri, sizeof uri, "nbd+unix:///?socket=%s,timeout=1s", sock);
    struct member *m = NULL;
    CHECK(member_open(uri, 0, &m) == 0);
    if (m) {
        uint8_t b[4096];
        CHECK(member_read(m, b, sizeof b, 0) == 0);
        nbdkit_stop(pid, SIGKILL);
        double t0 = now_s();
        int rc = member_read(m, b, sizeof b, 0);
        double dt = now_s() - t0;
        CHECK(rc == -ENXIO, "read after the server died: %d", rc);
        /* It kept reconnecting for the timeout, then gave up. */
        CHECK(dt >= 0.9 && dt < 10, "-ENXIO after %.2f s with a 1 s timeout", dt);
        pid = nbdkit_start(sock, args);
        CHECK(pid > 0);
        CHECK(member_read(m, b, sizeof b, 0) == -ENXIO, "failed for good, even with the server back");
        member_close(m);
    }
    nbdkit_stop(pid, SIGTERM);
}

/* A batch run on another thread: the server must be restarted from the
 * main thread, as nbdkit's --exit-with-parent follows the thread that
 * started it. */
struct batch_job {
    struct io_engine *e;
    struct member *m;
    enum io_kind kind;
    uint8_t *buf;
    int n;
    size_t len;
    int rc;
    double secs;
};

static void *batch_main(void *arg)
{
    struct batch_job *j = arg;
    double t0 = now_s();
    j->rc = run_batch(j->e, j->m, j->kind, j->buf, j->n, j->len);
    j->secs = now_s() - t0;
    return NULL;
}

/* Runs the batch while the server is killed 50 ms in (its requests are at
 * the server, which delays each by 200 ms) and started again down_ms
 * later. Returns the new server's pid. */
static pid_t batch_across_outage(struct batch_job *j, pid_t pid, const char *sock, const char *const *args,
                                 int down_ms)
{
    pthread_t th;
    pthread_create(&th, NULL, batch_main, j);
    usleep(50000);
    nbdkit_stop(pid, SIGKILL);
    usleep((useconds_t)down_ms * 1000);
    pid = nbdkit_start(sock, args);
    pthread_join(th, NULL);
    return pid;
}

static void test_outage(struct io_engine *e)
{
    char sock[96], uri[200], img[96];
    snprintf(sock, sizeof sock, "%s/out.sock", dir);
    snprintf(img, sizeof img, "%s/out.img", dir);
    FILE *f = fopen(img, "w");
    CHECK(f && !ftruncate(fileno(f), 16 * MiB));
    if (f)
        fclose(f);
    const char *args[] = {"--filter=delay", "file", img, "delay-read=200ms", "delay-write=200ms", NULL};
    pid_t pid = nbdkit_start(sock, args);
    CHECK(pid > 0, "nbdkit --filter=delay file");
    snprintf(uri, sizeof uri, "nbd+unix:///?socket=%s,timeout=5s", sock);
    struct member *m = NULL;
    char why[300];
    CHECK(member_open_why(uri, 0, &m, why, sizeof why) == 0, "%s", why);
    enum { N = 16, LEN = 64 * KiB };
    uint8_t *a = malloc((size_t)N * LEN), *b = malloc((size_t)N * LEN);
    if (m && a && b) {
        rng_fill(&rng, a, (size_t)N * LEN);
        CHECK(run_batch(e, m, IO_WRITE, a, N, LEN) == 0 && member_flush(m) == 0);
        memset(b, 0, (size_t)N * LEN);
        struct batch_job j = {.e = e, .m = m, .kind = IO_READ, .buf = b, .n = N, .len = LEN};
        int lost = n_lost, failed = n_failed;
        pid = batch_across_outage(&j, pid, sock, args, 500);
        CHECK(pid > 0, "nbdkit restarted");
        CHECK(j.rc == 0, "a batch across a 0.5 s outage: %d", j.rc);
        CHECK(!memcmp(a, b, (size_t)N * LEN), "data read across the outage differs");
        CHECK(j.secs >= 0.5, "the batch finished in %.2f s, before the server was back", j.secs);
        CHECK(n_lost > lost && n_back > 0 && n_failed == failed, "lost %d, back %d, failed %d", n_lost - lost,
              n_back, n_failed - failed);
        printf("  %d reads in flight when the server was killed: all answered after %.2f s\n", N, j.secs);
        /* The member goes on: a write and a read after the outage. */
        rng_fill(&rng, a, LEN);
        CHECK(member_write(m, a, LEN, 8 * MiB) == 0 && member_read(m, b, LEN, 8 * MiB) == 0 && !memcmp(a, b, LEN));
        /* A second outage, with writes in flight this time. */
        rng_fill(&rng, a, (size_t)N * LEN);
        j = (struct batch_job){.e = e, .m = m, .kind = IO_WRITE, .buf = a, .n = N, .len = LEN};
        pid = batch_across_outage(&j, pid, sock, args, 300);
        CHECK(j.rc == 0, "writes across an outage: %d", j.rc);
        CHECK(run_batch(e, m, IO_READ, b, N, LEN) == 0 && !memcmp(a, b, (size_t)N * LEN),
              "the writes sent again landed");
    }
    if (m)
        member_close(m);
    free(a);
    free(b);
    nbdkit_stop(pid, SIGTERM);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_nbd_far");
    rng_seed(&rng, harness_seed());
    signal(SIGPIPE, SIG_IGN);
    uraid_set_log(log_fn, NULL, URAID_LOG_INFO);
    alarm(240); /* a request that hangs forever must not hang the suite */
    snprintf(dir, sizeof dir, "/tmp/uraid-nbdfar-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp: %s", strerror(errno));
        return harness_finish();
    }
    struct io_engine *e = NULL;
    CHECK(io_engine_create(NULL, &e) == 0);
    if (e) {
        harness_begin("NBD member far away: a batch has more than 4 requests at the server at once");
        test_pipelined(e);
        harness_end();
        harness_begin("NBD member: a stopped server fails the member after its timeout, for good; open times out");
        test_stalled(e);
        harness_end();
        harness_begin("NBD member: a killed server is -ENXIO once the timeout has passed");
        test_killed();
        harness_end();
        harness_begin("NBD member: an outage shorter than the timeout is sent again on a new connection");
        test_outage(e);
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
