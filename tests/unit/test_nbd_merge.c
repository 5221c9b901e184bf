/* NBD members: adjacent requests merged (lib/member/nbd_loop.c, merge_run),
 * against real nbdkit servers started here, requests counted at the server
 * by nbdkit's log filter:
 *   - a batch of the I/O engine of adjacent 64 KiB writes (and then reads)
 *     on one member reaches the server as fewer, larger requests, none
 *     above the merge limit (2 MiB); each op's buffer, scattered in memory,
 *     gets its own bytes back;
 *   - a batch of ops with gaps between them is never merged: one request
 *     per op at the server; mixed adjacent runs and gaps: every op right;
 *   - with URAID_NBD_MERGE=0 adjacent ops are not merged either (the
 *     variant without the change, which the first check fails against);
 *   - an error the server gives a merged request (the error filter) fails
 *     every op in it with -EIO, and the member goes on afterwards.
 * How many ops a merged request takes depends on how many the member's
 * thread finds queued (the engine queues a batch in a tight loop and the
 * thread may wake after the first), so the test asks for fewer than half as
 * many requests as ops, not an exact count. nbdkit is installed by
 * scripts/deps.sh: its absence is a failure. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "nbdkit_proc.h"
#include "io/engine.h"
#include "uraid.h"
#include "member/member.h"

#define KiB 1024u
#define MiB (1u << 20)
#define LEN (64 * KiB)
#define N 48

static struct rng rng;
static char dir[64];

/* Where the log ends now: the next count starts there (truncating the
 * file under nbdkit would leave a hole its next line lands after). */
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

/* Reads and writes nbdkit's log filter saw started since mark, and the
 * largest count. */
static int count_requests(const char *log, long mark, unsigned long *largest)
{
    FILE *f = fopen(log, "r");
    char line[512];
    int n = 0;
    *largest = 0;
    if (f && fseek(f, mark, SEEK_SET)) {
        fclose(f);
        f = NULL;
    }
    while (f && fgets(line, sizeof line, f)) {
        if (!strstr(line, " Read id=") && !strstr(line, " Write id="))
            continue;
        n++;
        const char *c = strstr(line, "count=");
        unsigned long v = c ? strtoul(c + 6, NULL, 16) : 0;
        if (v > *largest)
            *largest = v;
    }
    if (f)
        fclose(f);
    return n;
}

struct server {
    pid_t pid;
    char sock[96], log[96], inject[96];
    struct member *m;
};

static int server_open(struct server *s, const char *name)
{
    char logarg[128], injarg[128], uri[160], why[300];
    snprintf(s->sock, sizeof s->sock, "%s/%s.sock", dir, name);
    snprintf(s->log, sizeof s->log, "%s/%s.log", dir, name);
    snprintf(s->inject, sizeof s->inject, "%s/%s.inject", dir, name);
    snprintf(logarg, sizeof logarg, "logfile=%s", s->log);
    snprintf(injarg, sizeof injarg, "error-file=%s", s->inject);
    /* the log filter outermost: it sees the requests as they came */
    const char *args[] = {"--filter=log", "--filter=error", "memory", "64M", logarg, injarg, "error-rate=100%",
                          "error=EIO", NULL};
    s->pid = nbdkit_start(s->sock, args);
    s->m = NULL;
    CHECK(s->pid > 0, "nbdkit --filter=log --filter=error memory (is nbdkit installed? scripts/deps.sh)");
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
    if (s->pid > 0)
        nbdkit_stop(s->pid, SIGTERM);
}

/* n ops of LEN on m: op i at offset off[i], its buffer bufs[i]. */
static int run_ops(struct io_engine *e, struct member *m, enum io_kind kind, uint8_t **bufs, const uint64_t *off,
                   int n, int *results)
{
    struct io_op ops[N];
    for (int i = 0; i < n; i++)
        ops[i] = (struct io_op){.m = m, .kind = kind, .buf = bufs[i], .len = LEN, .offset = off[i]};
    int rc = io_engine_run(e, ops, n);
    for (int i = 0; i < n; i++)
        results[i] = ops[i].result;
    return rc;
}

/* Buffers for n ops in one allocation, in an order of their own, so that a
 * merged read scattered to the wrong op shows. */
static uint8_t **scattered_bufs(uint8_t *area, int n)
{
    uint8_t **b = malloc(sizeof *b * (size_t)n);
    int perm[N];
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng_next(&rng) % (uint64_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; b && i < n; i++)
        b[i] = area + (size_t)perm[i] * LEN;
    return b;
}

static int all_zero(const int *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i])
            return 0;
    return 1;
}

/* Writes then reads n ops at off[], checks every op's bytes; returns the
 * requests the server saw for the writes and for the reads. */
static void write_read(struct io_engine *e, struct server *s, const uint64_t *off, int n, int *nw, int *nr,
                       unsigned long *largest)
{
    uint8_t *a = malloc((size_t)n * LEN), *b = calloc((size_t)n, LEN);
    uint8_t **wa = a ? scattered_bufs(a, n) : NULL, **rb = b ? scattered_bufs(b, n) : NULL;
    int res[N];
    *nw = *nr = -1;
    if (!wa || !rb) {
        CHECK(0, "out of memory");
        goto out;
    }
    rng_fill(&rng, a, (size_t)n * LEN);
    unsigned long lw, lr;
    long mark = log_mark(s->log);
    CHECK(run_ops(e, s->m, IO_WRITE, wa, off, n, res) == 0 && all_zero(res, n), "writes failed");
    *nw = count_requests(s->log, mark, &lw);
    mark = log_mark(s->log);
    CHECK(run_ops(e, s->m, IO_READ, rb, off, n, res) == 0 && all_zero(res, n), "reads failed");
    *nr = count_requests(s->log, mark, &lr);
    *largest = lw > lr ? lw : lr;
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += memcmp(wa[i], rb[i], LEN) != 0;
    CHECK(!bad, "%d of %d ops read back other bytes than they wrote", bad, n);
out:
    free(wa);
    free(rb);
    free(a);
    free(b);
}

static void test_adjacent(struct io_engine *e)
{
    struct server s;
    if (server_open(&s, "adj") == 0) {
        uint64_t off[N];
        for (int i = 0; i < N; i++)
            off[i] = MiB + (uint64_t)i * LEN; /* 3 MiB in all: the limit splits it */
        int nw, nr;
        unsigned long largest = 0;
        write_read(e, &s, off, N, &nw, &nr, &largest);
        printf("  %d adjacent ops of 64 KiB: %d writes and %d reads at the server, the largest %lu KiB\n", N, nw,
               nr, largest / KiB);
        CHECK(nw > 0 && nw < N / 2, "%d writes at the server for %d adjacent ops", nw, N);
        CHECK(nr > 0 && nr < N / 2, "%d reads at the server for %d adjacent ops", nr, N);
        CHECK(nw >= 2 && nr >= 2, "3 MiB in one request: the 2 MiB limit was not kept");
        CHECK(largest > LEN && largest <= 2 * MiB, "the largest request was %lu bytes", largest);
    }
    server_close(&s);
}

static void test_gaps(struct io_engine *e)
{
    struct server s;
    if (server_open(&s, "gap") == 0) {
        uint64_t off[N];
        for (int i = 0; i < N; i++)
            off[i] = (uint64_t)i * (LEN + 4096); /* 4 KiB between ops */
        int nw, nr;
        unsigned long largest = 0;
        write_read(e, &s, off, N, &nw, &nr, &largest);
        printf("  %d ops 4 KiB apart: %d writes and %d reads at the server\n", N, nw, nr);
        CHECK(nw == N && nr == N && largest == LEN, "ops with gaps merged: %d writes, %d reads, largest %lu", nw,
              nr, largest);
        /* runs of adjacent ops with gaps between them, in a shuffled order */
        for (int i = 0; i < N; i++)
            off[i] = 16 * MiB + (uint64_t)(i / 4) * 8 * LEN + (uint64_t)(i % 4) * LEN;
        for (int i = N - 1; i > 0; i--) {
            int j = (int)(rng_next(&rng) % (uint64_t)(i + 1));
            uint64_t t = off[i];
            off[i] = off[j];
            off[j] = t;
        }
        write_read(e, &s, off, N, &nw, &nr, &largest);
        printf("  %d ops in runs of 4, shuffled: %d writes and %d reads at the server, the largest %lu KiB\n", N,
               nw, nr, largest / KiB);
        CHECK(nw >= N / 4 && nr >= N / 4 && largest <= 4 * LEN, "merged across a gap: largest %lu", largest);
    }
    server_close(&s);
}

static void test_merge_off(struct io_engine *e)
{
    setenv("URAID_NBD_MERGE", "0", 1);
    struct server s;
    int rc = server_open(&s, "off");
    unsetenv("URAID_NBD_MERGE");
    if (rc == 0) {
        uint64_t off[N];
        for (int i = 0; i < N; i++)
            off[i] = (uint64_t)i * LEN;
        int nw, nr;
        unsigned long largest = 0;
        write_read(e, &s, off, N, &nw, &nr, &largest);
        printf("  URAID_NBD_MERGE=0: %d writes and %d reads at the server\n", nw, nr);
        CHECK(nw == N && nr == N, "URAID_NBD_MERGE=0 still merged: %d writes, %d reads", nw, nr);
    }
    server_close(&s);
}

static void test_error(struct io_engine *e)
{
    struct server s;
    if (server_open(&s, "err") == 0) {
        uint64_t off[N];
        uint8_t *area = calloc(N, LEN);
        uint8_t **bufs = area ? scattered_bufs(area, N) : NULL;
        int res[N];
        for (int i = 0; i < N; i++)
            off[i] = (uint64_t)i * LEN;
        if (bufs) {
            CHECK(run_ops(e, s.m, IO_WRITE, bufs, off, N, res) == 0);
            FILE *f = fopen(s.inject, "w");
            CHECK(f != NULL, "cannot create %s", s.inject);
            if (f)
                fclose(f);
            long mark = log_mark(s.log);
            for (int k = 0; k < 2; k++) {
                enum io_kind kind = k ? IO_WRITE : IO_READ;
                run_ops(e, s.m, kind, bufs, off, N, res);
                int eio = 0;
                for (int i = 0; i < N; i++)
                    eio += res[i] == -EIO;
                CHECK(eio == N, "%s: %d of %d ops got -EIO from a server failing every request", k ? "writes" : "reads",
                      eio, N);
            }
            unsigned long largest;
            int n = count_requests(s.log, mark, &largest);
            printf("  %d failed requests at the server for 2 x %d ops, the largest %lu KiB\n", n, N, largest / KiB);
            CHECK(largest > LEN, "no merged request was failed (largest %lu)", largest);
            unlink(s.inject);
            CHECK(run_ops(e, s.m, IO_READ, bufs, off, N, res) == 0 && all_zero(res, N),
                  "the member did not go on after the errors");
        } else {
            CHECK(0, "out of memory");
        }
        free(bufs);
        free(area);
    }
    server_close(&s);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_nbd_merge");
    rng_seed(&rng, harness_seed());
    signal(SIGPIPE, SIG_IGN);
    alarm(120); /* a request that hangs must not hang the suite */
    snprintf(dir, sizeof dir, "/tmp/uraid-nbdmerge-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp: %s", strerror(errno));
        return harness_finish();
    }
    struct io_engine *e = NULL;
    CHECK(io_engine_create(NULL, &e) == 0);
    if (e) {
        harness_begin("NBD member: adjacent ops go to the server as fewer requests, each op its own bytes");
        test_adjacent(e);
        harness_end();
        harness_begin("NBD member: ops with gaps between them are not merged");
        test_gaps(e);
        harness_end();
        harness_begin("NBD member: URAID_NBD_MERGE=0 sends one request per op");
        test_merge_off(e);
        harness_end();
        harness_begin("NBD member: an error on a merged request fails every op in it");
        test_error(e);
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
