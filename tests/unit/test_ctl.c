/* The control socket (lib/ctl): a server on an open array in a temporary
 * directory, requests from this thread with uraid_ctl_request.
 *   - status: the mdstat line "[4/4] [UUUU]", the socket file is 0600;
 *   - fail by path: [4/3], the other members' superblocks say 0xfffe;
 *     beyond redundancy (RAID-5, a second member): refused, nothing marked;
 *     a path that is not a member: a clear error;
 *   - malformed requests (empty, 5000 bytes, binary, unknown verb, missing
 *     argument, a client that never sends) get an error and the server
 *     keeps answering;
 *   - a second server on the same path: -EADDRINUSE; a stale socket file is
 *     replaced; a path that is not a socket is refused;
 *   - add a spare (role 0xffff in its superblock, listed in status), remove
 *     a failed member and a spare, refuse to remove an active one;
 *   - fail and remove while a writer runs (RAID-6): no write fails, all read back;
 *   - stop calls on_stop, also when on_stop stops the server itself;
 *   - the data written before and after still reads back.
 * URAID_TEST_QUICK=1 skips the 2-second silent-client case. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"
#include "meta/superblock.h"
#include "uraid_ctl.h"

static int quick;
static char resp[256 * 1024];

static int req(const char *sock, const char *r)
{
    int rc = uraid_ctl_request(sock, r, resp, sizeof resp);
    return rc;
}

static int starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

/* Sends raw bytes (may hold NULs) and reads the answer into resp. */
static int raw_request(const char *sock, const void *data, size_t len)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%.100s", sock);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        if (fd >= 0)
            close(fd);
        return -errno;
    }
    if (send(fd, data, len, MSG_NOSIGNAL) < 0) {
        close(fd);
        return -errno;
    }
    size_t used = 0;
    ssize_t got;
    while (used + 1 < sizeof resp && (got = recv(fd, resp + used, sizeof resp - 1 - used, 0)) > 0)
        used += (size_t)got;
    resp[used] = 0;
    close(fd);
    return 0;
}

static int stopped;
static void on_stop(void *ctx) { __atomic_store_n((int *)ctx, 1, __ATOMIC_RELEASE); }

static struct uraid_ctl *self_c;
static void on_stop_self(void *ctx)
{
    __atomic_store_n((int *)ctx, 1, __ATOMIC_RELEASE);
    uraid_ctl_stop(self_c); /* from the control thread itself */
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void test_ctl(void)
{
    harness_begin("control socket on RAID-5 n=4");
    struct fx f;
    struct uraid_array *a;
    if (fx_setup(&f, 5, 4, 32u << 10, 4u << 20, NULL, 0, &a) != 0) {
        fx_destroy(&f);
        return harness_end();
    }
    uint8_t *data = aligned_alloc(4096, 256 << 10);
    memset(data, 0x5a, 256 << 10);
    CHECK(fx_write(&f, a, data, 256 << 10, 0) == 0);

    char sock[300], spare[300], small[300], notsock[300];
    snprintf(sock, sizeof sock, "%s/ctl.sock", f.dir);
    snprintf(spare, sizeof spare, "%s/spare.img", f.dir);
    snprintf(small, sizeof small, "%s/small.img", f.dir);
    snprintf(notsock, sizeof notsock, "%s/plain", f.dir);
    char why[256];
    struct uraid_ctl *c = NULL;
    int rc = uraid_ctl_start(a, sock, on_stop, &stopped, &c, why, sizeof why);
    CHECK(rc == 0, "start: %d %s", rc, why);
    if (rc) {
        uraid_close(a);
        fx_destroy(&f);
        free(data);
        return harness_end();
    }
    struct stat st;
    CHECK(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600, "mode %o", st.st_mode);

    CHECK(req(sock, "status") == 0 && starts(resp, "ok\n"), "%s", resp);
    CHECK(strstr(resp, "[4/4] [UUUU]") && starts(resp + 3, "uraid: active raid5 "), "%s", resp);
    CHECK(strstr(resp, "State : clean") || strstr(resp, "State : active"), "%s", resp);
    CHECK(strstr(resp, "parity:") && strstr(resp, "counters:"), "%s", resp);

    /* a second server on the same path */
    struct uraid_ctl *c2 = NULL;
    rc = uraid_ctl_start(a, sock, NULL, NULL, &c2, why, sizeof why);
    CHECK(rc == -EADDRINUSE && !c2, "second start: %d", rc);
    CHECK(strstr(why, "already listening"), "%s", why);

    /* malformed requests */
    CHECK(req(sock, "") == 0 && starts(resp, "error: empty"), "%s", resp);
    char *big = malloc(5001);
    memset(big, 'x', 5000);
    big[5000] = 0;
    CHECK(req(sock, big) == 0 && starts(resp, "error: request longer"), "%s", resp);
    memcpy(big, "status ", 7);
    CHECK(req(sock, big) == 0 && starts(resp, "error:"), "%s", resp);
    free(big);
    static const uint8_t garbage[] = {0x01, 0xff, 0x00, 's', 0x7f, 0x80, '\n'};
    CHECK(raw_request(sock, garbage, sizeof garbage) == 0 && starts(resp, "error: the request is not"), "%s", resp);
    static const uint8_t nul[] = {'s', 't', 0, 'a', '\n'};
    CHECK(raw_request(sock, nul, sizeof nul) == 0 && starts(resp, "error:"), "%s", resp);
    CHECK(req(sock, "frobnicate now") == 0 && starts(resp, "error: unknown request 'frobnicate'"), "%s", resp);
    CHECK(req(sock, "fail") == 0 && starts(resp, "error: 'fail' needs a member"), "%s", resp);
    CHECK(req(sock, "remove   ") == 0 && starts(resp, "error: 'remove' needs a member"), "%s", resp);
    CHECK(req(sock, "add") == 0 && starts(resp, "error:"), "%s", resp);
    CHECK(req(sock, "status please") == 0 && starts(resp, "error: 'status' takes no argument"), "%s", resp);
    CHECK(req(sock, "fail /x.img") == 0 && !strcmp(resp, "error: /x.img is not a member of this array\n"), "%s",
          resp);
    CHECK(req(sock, "fail 7") == 0 && starts(resp, "error: 7 is not a member"), "%s", resp);
    if (!quick) {
        /* a client that never sends delays the next one by at most ~2 s */
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%.100s", sock);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
        time_t t0 = time(NULL);
        CHECK(req(sock, "status") == 0 && starts(resp, "ok\n"), "%s", resp);
        CHECK(time(NULL) - t0 <= 4, "waited %lld s", (long long)(time(NULL) - t0));
        char tmo[128] = "";
        ssize_t got = recv(fd, tmo, sizeof tmo - 1, 0);
        CHECK(got > 0 && starts(tmo, "error: no request line"), "%s", tmo);
        close(fd);
    }
    CHECK(req(sock, "status\r\n") == 0 && strstr(resp, "[4/4] [UUUU]"), "server still answers: %s", resp);

    /* fail by path: the others' superblocks say 0xfffe for it */
    struct md_sb sb1, sb;
    CHECK(fx_read_sb(&f, 1, &sb1) == 0);
    char r[400];
    snprintf(r, sizeof r, "fail %s", f.path[1]);
    CHECK(req(sock, r) == 0 && !strcmp(resp, "ok\n"), "%s", resp);
    CHECK(req(sock, "status") == 0 && strstr(resp, "[4/3] [U_UU]") && strstr(resp, "degraded") &&
              strstr(resp, "faulty"),
          "%s", resp);
    for (int s = 0; s < 4; s++) {
        if (s == 1)
            continue;
        CHECK(fx_read_sb(&f, s, &sb) == 0 && sb.dev_roles[sb1.dev_number] == MD_ROLE_FAULTY,
              "slot %d says 0x%x", s, sb.dev_roles[sb1.dev_number]);
    }
    CHECK(req(sock, r) == 0 && starts(resp, "error:") && strstr(resp, "faulty"), "fail twice: %s", resp);
    /* a second failure on RAID-5: refused, nothing marked */
    CHECK(req(sock, "fail 2") == 0 && starts(resp, "error: failing 2 would leave RAID-5"), "%s", resp);
    CHECK(req(sock, "status") == 0 && strstr(resp, "[4/3] [U_UU]"), "%s", resp);
    CHECK(fx_read_sb(&f, 0, &sb) == 0 && sb.dev_roles[2] == 2);
    CHECK(fx_verify(&f, a, 0, 256 << 10, "degraded") == 0);

    /* remove: not an active member; a failed one yes */
    snprintf(r, sizeof r, "remove %s", f.path[0]);
    CHECK(req(sock, r) == 0 && starts(resp, "error:") && strstr(resp, "active"), "%s", resp);
    snprintf(r, sizeof r, "remove %s", f.path[1]);
    CHECK(req(sock, r) == 0 && !strcmp(resp, "ok\n"), "%s", resp);
    CHECK(req(sock, "status") == 0 && strstr(resp, "[4/3] [U_UU]") && strstr(resp, "removed") &&
              !strstr(resp, f.path[1]),
          "%s", resp);
    CHECK(fx_read_sb(&f, 0, &sb) == 0 && sb.dev_roles[sb1.dev_number] == MD_ROLE_SPARE, "0x%x",
          sb.dev_roles[sb1.dev_number]);
    CHECK(req(sock, r) == 0 && starts(resp, "error:") && strstr(resp, "not a member"), "%s", resp);

    /* add a spare */
    CHECK(fx_file_of_size(spare, f.member_bytes) == 0 && fx_file_of_size(small, 1u << 20) == 0);
    snprintf(r, sizeof r, "add %s", spare);
    CHECK(req(sock, r) == 0 && !strcmp(resp, "ok\n"), "%s", resp);
    CHECK(req(sock, "status") == 0 && strstr(resp, spare) && strstr(resp, "(S)") && strstr(resp, "spare"), "%s",
          resp);
    struct md_sb ssb, s0;
    CHECK(fx_read_sb_path(spare, &ssb) == 0);
    CHECK(fx_read_sb(&f, 0, &s0) == 0);
    CHECK(ssb.dev_number < ssb.max_dev && ssb.dev_roles[ssb.dev_number] == MD_ROLE_SPARE, "role 0x%x",
          ssb.dev_roles[ssb.dev_number]);
    CHECK(!memcmp(ssb.set_uuid, s0.set_uuid, 16) && ssb.events == s0.events, "events %llu vs %llu",
          (unsigned long long)ssb.events, (unsigned long long)s0.events);
    CHECK(memcmp(ssb.device_uuid, s0.device_uuid, 16) != 0);
    CHECK(s0.dev_roles[ssb.dev_number] == MD_ROLE_SPARE);
    CHECK(req(sock, r) == 0 && starts(resp, "error:") && strstr(resp, "already a member"), "%s", resp);
    snprintf(r, sizeof r, "add %s", small);
    CHECK(req(sock, r) == 0 && starts(resp, "error:") && strstr(resp, "too small"), "%s", resp);
    snprintf(r, sizeof r, "add %s", f.path[2]);
    CHECK(req(sock, r) == 0 && starts(resp, "error:") && strstr(resp, "already a member"), "%s", resp);
    snprintf(r, sizeof r, "add %s/none.img", f.dir);
    CHECK(req(sock, r) == 0 && starts(resp, "error: cannot open"), "%s", resp);
    /* fail a spare: not active */
    snprintf(r, sizeof r, "fail %s", spare);
    CHECK(req(sock, r) == 0 && starts(resp, "error:") && strstr(resp, "spare"), "%s", resp);
    /* remove the spare */
    snprintf(r, sizeof r, "remove %s", spare);
    CHECK(req(sock, r) == 0 && !strcmp(resp, "ok\n"), "%s", resp);
    CHECK(req(sock, "status") == 0 && !strstr(resp, spare), "%s", resp);

    /* writes still work and read back */
    memset(data, 0xa7, 128 << 10);
    CHECK(fx_write(&f, a, data, 128 << 10, 64 << 10) == 0);
    fx_verify_all(&f, a, "after control requests");

    /* stop calls on_stop (after the answer) */
    CHECK(req(sock, "stop") == 0 && !strcmp(resp, "ok\n"), "%s", resp);
    for (int i = 0; i < 200 && !__atomic_load_n(&stopped, __ATOMIC_ACQUIRE); i++)
        sleep_ms(10);
    CHECK(stopped == 1);
    uraid_ctl_stop(c);
    CHECK(stat(sock, &st) != 0, "socket file left behind");
    CHECK(req(sock, "status") == -ENOENT);

    /* a stale socket file (bound, nobody listens) is replaced */
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%.100s", sock);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    close(fd);
    CHECK(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
    CHECK(req(sock, "status") == -ECONNREFUSED);
    int self_stopped = 0;
    rc = uraid_ctl_start(a, sock, on_stop_self, &self_stopped, &self_c, why, sizeof why);
    CHECK(rc == 0, "over a stale socket: %d %s", rc, why);
    if (rc == 0) {
        CHECK(req(sock, "status") == 0 && strstr(resp, "[4/3] [U_UU]"), "%s", resp);
        /* on_stop stops the server from the control thread */
        CHECK(req(sock, "stop") == 0 && !strcmp(resp, "ok\n"), "%s", resp);
        int gone = 0;
        for (int i = 0; i < 200 && !gone; i++) {
            gone = stat(sock, &st) != 0;
            if (!gone)
                sleep_ms(10);
        }
        CHECK(gone && self_stopped, "self stop");
    }
    /* a path that is not a socket is left alone */
    CHECK(fx_file_of_size(notsock, 0) == 0);
    rc = uraid_ctl_start(a, notsock, NULL, NULL, &c2, why, sizeof why);
    CHECK(rc == -EEXIST, "%d", rc);
    CHECK(uraid_ctl_request(notsock, "status", resp, sizeof resp) == -ECONNREFUSED);

    CHECK(uraid_close(a) == 0);
    unlink(spare);
    unlink(small);
    unlink(notsock);
    unlink(sock);
    free(data);
    fx_destroy(&f);
    harness_end();
}

struct writer {
    struct fx *f;
    struct uraid_array *a;
    int stop, errors;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct rng rng;
    rng_seed(&rng, harness_seed());
    size_t len = 64u << 10;
    uint8_t *buf = aligned_alloc(4096, len);
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        uint64_t off = rng_below(&rng, (w->f->size - len) / 4096) * 4096;
        rng_fill(&rng, buf, len);
        if (fx_write(w->f, w->a, buf, len, off))
            w->errors++;
    }
    free(buf);
    return NULL;
}

/* RAID-6: the mdstat line with two failures and uraid_status_text's
 * truncation report. */
static void test_raid6(void)
{
    harness_begin("status text on RAID-6 n=6");
    struct fx f;
    struct uraid_array *a;
    if (fx_setup(&f, 6, 6, 32u << 10, 4u << 20, NULL, 0, &a) != 0) {
        fx_destroy(&f);
        return harness_end();
    }
    char sock[300], why[256];
    snprintf(sock, sizeof sock, "%s/ctl.sock", f.dir);
    struct uraid_ctl *c = NULL;
    CHECK(uraid_ctl_start(a, sock, NULL, NULL, &c, why, sizeof why) == 0, "%s", why);
    /* fail and remove while a writer is busy: every acknowledged write
     * reads back (a removed member's device must stay valid for requests
     * in flight) */
    struct writer w = {&f, a, 0, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, writer_main, &w) == 0);
    sleep_ms(50);
    CHECK(req(sock, "fail 4") == 0 && !strcmp(resp, "ok\n"), "%s", resp);
    sleep_ms(20);
    CHECK(req(sock, "remove 4") == 0 && !strcmp(resp, "ok\n"), "remove by slot number: %s", resp);
    char r[400];
    snprintf(r, sizeof r, "remove %s", f.path[4]);
    CHECK(req(sock, r) == 0 && starts(resp, "error:") && strstr(resp, "not a member"), "%s", resp);
    sleep_ms(50);
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK(w.errors == 0, "%d write errors", w.errors);
    fx_verify_all(&f, a, "writes during fail and remove");
    snprintf(r, sizeof r, "add %s", f.path[4]);
    CHECK(req(sock, r) == 0 && !strcmp(resp, "ok\n"), "re-add as a spare: %s", resp);
    CHECK(req(sock, "status") == 0 && strstr(resp, "uraid: active raid6 ") && strstr(resp, "[6/5] [UUUU_U]"), "%s",
          resp);
    CHECK(req(sock, "fail 0") == 0 && !strcmp(resp, "ok\n"), "%s", resp);
    CHECK(req(sock, "fail 1") == 0 && starts(resp, "error: failing 1 would leave RAID-6"), "%s", resp);
    char small[64];
    CHECK(uraid_status_text(a, small, sizeof small) == -ENOBUFS && strlen(small) == sizeof small - 1);
    CHECK(uraid_status_text(a, resp, sizeof resp) == 0 && strstr(resp, "[6/4] [_UUU_U]"), "%s", resp);
    uraid_ctl_stop(c);
    CHECK(uraid_close(a) == 0);
    unlink(sock);
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_ctl");
    quick = getenv("URAID_TEST_QUICK") && *getenv("URAID_TEST_QUICK") == '1';
    test_ctl();
    test_raid6();
    return harness_finish();
}
