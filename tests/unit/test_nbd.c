/* The NBD member backend against real nbdkit servers (started here, each
 * with --exit-with-parent): which names are URIs, open errors (no server,
 * malformed URI, read-only export, member options after the URI), size,
 * round trips from 8 threads at once, flush, write zeroes, a server's EIO (error filter) reported as
 * -EIO with the member still usable, a killed server as -ENXIO for good,
 * and --member-layer target names that contain ':'.
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
#include "member/member.h"

#define MiB (1u << 20)

static struct rng rng;
static char dir[64];

static void test_names(void)
{
    CHECK(member_is_nbd_uri("nbd://host"));
    CHECK(member_is_nbd_uri("nbds://host:10809/export"));
    CHECK(member_is_nbd_uri("nbd+unix:///?socket=/run/x.sock"));
    CHECK(member_is_nbd_uri("nbds+unix:///e?socket=/x"));
    CHECK(member_is_nbd_uri("nbd+vsock:///"));
    CHECK(!member_is_nbd_uri("/dev/sdb"));
    CHECK(!member_is_nbd_uri("./nbd://x"));
    CHECK(!member_is_nbd_uri("nbd"));
    CHECK(!member_is_nbd_uri("nbd:/x"));
    CHECK(!member_is_nbd_uri("nbd0.img"));
    CHECK(!member_is_nbd_uri("http://host/x"));

    /* "MEMBER:SPEC" where MEMBER holds ':' itself */
    const char *names[] = {"/tmp/a", "nbd+unix:///?socket=/s0", "nbd+unix:///?socket=/s0x"};
    char texts[3][64] = {{0}};
    char why[200];
    CHECK(member_layer_add("nbd+unix:///?socket=/s0:read-eio=1M+4K", names, 3, texts[0], sizeof texts[0], why,
                           sizeof why) == 0, "%s", why);
    CHECK(!strcmp(texts[1], "read-eio=1M+4K") && !texts[0][0] && !texts[2][0], "%s|%s|%s", texts[0], texts[1],
          texts[2]);
    CHECK(member_layer_add("throttle=60M", names, 3, texts[0], sizeof texts[0], why, sizeof why) == 0);
    CHECK(!strcmp(texts[0], "throttle=60M") && !strcmp(texts[1], "read-eio=1M+4K;throttle=60M"), "%s", texts[1]);
    CHECK(member_layer_add("nbd://other:vanish", names, 3, texts[0], sizeof texts[0], why, sizeof why) == -ENOENT);
    CHECK(strstr(why, "not one of the members") != NULL, "%s", why);
}

static void test_open_errors(void)
{
    struct member *m = NULL;
    char why[300], uri[128];
    snprintf(uri, sizeof uri, "nbd+unix:///?socket=%s/none.sock", dir);
    CHECK(member_open_why(uri, 0, &m, why, sizeof why) == -ENOENT, "%s", why);
    CHECK(strstr(why, "is the NBD server running") != NULL, "%s", why);
    CHECK(member_open_why("nbd://localhost:notaport/", 0, &m, why, sizeof why) == -EINVAL, "%s", why);
    CHECK(strstr(why, "nbd://HOST") != NULL, "%s", why);
    CHECK(member_open("nbdx://host/", 1, &m) == -EINVAL);

    char sock[96];
    snprintf(sock, sizeof sock, "%s/ro.sock", dir);
    const char *args[] = {"-r", "memory", "4M", NULL};
    pid_t pid = nbdkit_start(sock, args);
    CHECK(pid > 0, "nbdkit -r memory (is nbdkit installed? scripts/deps.sh)");
    snprintf(uri, sizeof uri, "nbd+unix:///?socket=%s", sock);
    CHECK(member_open_why(uri, 0, &m, why, sizeof why) == -EROFS, "%s", why);
    CHECK(strstr(why, "read-only") != NULL, "%s", why);
    /* options after the URI: checked before anything is opened */
    char bad[200];
    snprintf(bad, sizeof bad, "%s,timout=5s", uri);
    CHECK(member_open_why(bad, 1, &m, why, sizeof why) == -EINVAL, "%s", why);
    CHECK(strstr(why, "unknown NBD member option 'timout'") && strstr(why, "timeout=TIME"), "%s", why);
    snprintf(bad, sizeof bad, "%s,timeout=5", uri);
    CHECK(member_open_why(bad, 1, &m, why, sizeof why) == -EINVAL, "%s", why);
    CHECK(strstr(why, "'timeout=5'") && strstr(why, "unit"), "%s", why);
    snprintf(bad, sizeof bad, "%s,timeout=1s,timeout=2s", uri);
    CHECK(member_open_why(bad, 1, &m, why, sizeof why) == -EINVAL && strstr(why, "twice"), "%s", why);
    struct nbd_member_opts o;
    char plain[200];
    CHECK(member_nbd_options("nbd://h/e,timeout=250ms", plain, sizeof plain, &o, why, sizeof why) == 0 &&
          !strcmp(plain, "nbd://h/e") && o.timeout_ms == 250, "%s %u", plain, o.timeout_ms);
    CHECK(member_nbd_options("nbd://h/e,timeout=0", plain, sizeof plain, &o, why, sizeof why) == 0 &&
          o.timeout_ms == 0, "timeout=0 is no timeout");
    CHECK(member_nbd_options("nbd://h/a,b", plain, sizeof plain, &o, why, sizeof why) == 0 &&
          !strcmp(plain, "nbd://h/a,b") && o.timeout_ms == NBD_DEFAULT_TIMEOUT_MS, "a ',' that starts no option");
    snprintf(bad, sizeof bad, "%s,timeout=2s", uri);
    CHECK(member_open_why(bad, 1, &m, why, sizeof why) == 0, "%s", why);
    if (m)
        member_close(m);
    m = NULL;
    CHECK(member_open(uri, 1, &m) == 0);
    if (m) {
        CHECK(m->size == 4 * MiB && !strcmp(m->ops->kind, "nbd") && !strcmp(m->path, uri));
        uint8_t b[4096];
        CHECK(member_write(m, b, sizeof b, 0) == -EROFS);
        CHECK(member_read(m, b, sizeof b, 4 * MiB - 4096) == 0);
        member_close(m);
    }
    nbdkit_stop(pid, SIGTERM);
}

struct worker {
    struct member *m;
    uint64_t base, len;
    uint64_t seed;
    int bad;
};

/* Writes its own region in random pieces, reads every piece back. */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct rng r;
    rng_seed(&r, w->seed);
    uint8_t *a = malloc(256 * 1024), *b = malloc(256 * 1024);
    for (uint64_t off = 0; off < w->len && a && b;) {
        size_t n = (size_t)(1 + rng_below(&r, 64)) * 4096;
        if (off + n > w->len)
            n = (size_t)(w->len - off);
        rng_fill(&r, a, n);
        if (member_write(w->m, a, n, w->base + off) || member_read(w->m, b, n, w->base + off) || memcmp(a, b, n))
            w->bad++;
        off += n;
    }
    free(a);
    free(b);
    return NULL;
}

static void test_parallel_io(void)
{
    char sock[96], uri[128];
    snprintf(sock, sizeof sock, "%s/mem.sock", dir);
    const char *args[] = {"memory", "64M", NULL};
    pid_t pid = nbdkit_start(sock, args);
    CHECK(pid > 0, "nbdkit memory");
    /* a short timeout: the killed server below fails the member in 1 s */
    snprintf(uri, sizeof uri, "nbd+unix:///?socket=%s,timeout=1s", sock);
    struct member *m = NULL;
    char why[300];
    CHECK(member_open_why(uri, 0, &m, why, sizeof why) == 0, "%s", why);
    if (m) {
        CHECK(m->size == 64 * MiB && !strcmp(m->path, uri), "%s", m->path);
        enum { T = 8 };
        struct worker w[T];
        pthread_t th[T];
        for (int i = 0; i < T; i++) {
            w[i] = (struct worker){.m = m, .base = (uint64_t)i * 8 * MiB, .len = 4 * MiB, .seed = rng_next(&rng)};
            pthread_create(&th[i], NULL, worker_main, &w[i]);
        }
        int bad = 0;
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            bad += w[i].bad;
        }
        CHECK(bad == 0, "%d pieces failed or differed", bad);
        CHECK(member_flush(m) == 0);
        /* write zeroes: the server's own (nbdkit memory offers it) */
        uint8_t *z = malloc(MiB);
        if (z) {
            CHECK(member_zero(m, MiB, 8 * MiB) == 0);
            CHECK(member_read(m, z, MiB, 8 * MiB) == 0);
            size_t nz = 0;
            for (size_t i = 0; i < MiB; i++)
                nz += z[i] != 0;
            CHECK(nz == 0, "%zu bytes not zero after member_zero", nz);
            free(z);
        }
        /* past the end: the server (or libnbd) refuses, the member stays */
        uint8_t b[4096];
        CHECK(member_read(m, b, sizeof b, 64 * MiB) < 0);
        CHECK(member_read(m, b, sizeof b, 0) == 0);
        /* the server goes away: -ENXIO once the timeout has passed (the
         * member reconnects meanwhile), and it stays gone */
        nbdkit_stop(pid, SIGKILL);
        pid = -1;
        int rc = member_read(m, b, sizeof b, 0);
        CHECK(rc == -ENXIO, "read after the server died: %d", rc);
        CHECK(member_write(m, b, sizeof b, 0) == -ENXIO);
        CHECK(member_flush(m) == -ENXIO);
        member_close(m);
    }
    nbdkit_stop(pid, SIGTERM);
}

static void test_server_eio(void)
{
    char sock[96], uri[128], trig[96], arg[128];
    snprintf(sock, sizeof sock, "%s/err.sock", dir);
    snprintf(trig, sizeof trig, "%s/trigger", dir);
    snprintf(arg, sizeof arg, "error-pread-file=%s", trig);
    const char *args[] = {"--filter=error", "memory", "8M", "error-pread-rate=100%", arg, NULL};
    pid_t pid = nbdkit_start(sock, args);
    CHECK(pid > 0, "nbdkit --filter=error memory");
    snprintf(uri, sizeof uri, "nbd+unix:///?socket=%s", sock);
    struct member *m = NULL;
    CHECK(member_open(uri, 0, &m) == 0);
    if (m) {
        uint8_t a[8192], b[8192];
        rng_fill(&rng, a, sizeof a);
        CHECK(member_write(m, a, sizeof a, MiB) == 0);
        FILE *f = fopen(trig, "w");
        CHECK(f != NULL);
        if (f)
            fclose(f);
        int rc = member_read(m, b, sizeof b, MiB);
        CHECK(rc == -EIO, "read with the error filter on: %d", rc);
        unlink(trig);
        CHECK(member_read(m, b, sizeof b, MiB) == 0 && !memcmp(a, b, sizeof a), "the member works again");
        member_close(m);
    }
    nbdkit_stop(pid, SIGTERM);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_nbd");
    rng_seed(&rng, harness_seed());
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof dir, "/tmp/uraid-nbd-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp: %s", strerror(errno));
        return harness_finish();
    }
    harness_begin("NBD names: which are URIs; layer targets containing ':'");
    test_names();
    harness_end();
    harness_begin("NBD open errors: no server, malformed URI, read-only export, bad member options");
    test_open_errors();
    harness_end();
    harness_begin("NBD member: 8 threads write and read back, flush, zero, a killed server is -ENXIO");
    test_parallel_io();
    harness_end();
    harness_begin("NBD member: a server's EIO (error filter) is -EIO and the member goes on");
    test_server_eio();
    harness_end();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {
        /* leftover sockets in /tmp are harmless */
    }
    return harness_finish();
}
