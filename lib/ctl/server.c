/* The control socket (include/uraid_ctl.h): one background thread accepts
 * on an AF_UNIX stream socket and serves one request per connection, one
 * connection at a time. Requests are rare and quick (a status text, a
 * member state change), so a single thread keeps them strictly ordered;
 * a client that connects and never sends is dropped after READ_TIMEOUT_MS
 * so it delays the others by at most that much.
 *
 * Thread states:
 *   RUNNING --uraid_ctl_stop (other thread)--> wakes by the pipe, exits, joined
 *   RUNNING --"stop" request--> answers "ok", calls on_stop, keeps serving
 *           until uraid_ctl_stop; if on_stop itself calls uraid_ctl_stop
 *           (from the control thread), the thread detaches and frees
 *           everything on its way out instead of joining itself. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "array/array.h"
#include "log.h"
#include "uraid_ctl.h"
#include "uraid_grow.h"

#define MAX_REQUEST 4096
#define READ_TIMEOUT_MS 2000
#define WRITE_TIMEOUT_MS 2000
#define CLIENT_TIMEOUT_MS 30000 /* a fail/add writes superblocks: give it time */
#define RESPONSE_BYTES (256 * 1024)

struct uraid_ctl {
    struct uraid_array *a;
    char *path;
    int fd;             /* listening socket */
    int wake[2];        /* pipe: uraid_ctl_stop wakes the thread */
    dev_t dev;          /* the socket file we bound, so stop unlinks only ours */
    ino_t ino;
    pthread_t thread;
    void (*on_stop)(void *ctx);
    void *ctx;
    int self_stop;      /* uraid_ctl_stop was called from the control thread */
    char *resp;         /* response buffer, RESPONSE_BYTES */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int make_addr(const char *path, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (!path || !*path || strlen(path) >= sizeof sa->sun_path)
        return -ENAMETOOLONG;
    memcpy(sa->sun_path, path, strlen(path));
    return 0;
}

/* Writes all of buf, waiting at most timeout_ms in total. */
static int send_all(int fd, const char *buf, size_t len, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    while (len) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            buf += w;
            len -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN)
            return -errno;
        int left = (int)(deadline - now_ms());
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, left) < 0 && errno != EINTR)
            return -errno;
    }
    return 0;
}

/* ---- server ------------------------------------------------------------------ */

/* Reads one request line into req (NUL-terminated, without the newline).
 * Returns its length, or a negative errno: -ETIMEDOUT, -EMSGSIZE (longer
 * than MAX_REQUEST), -ECONNRESET (closed before a whole line). A client
 * that closes its side after a line without '\n' is taken as that line. */
static int read_request(int fd, char *req)
{
    size_t used = 0;
    int64_t deadline = now_ms() + READ_TIMEOUT_MS;
    for (;;) {
        int left = (int)(deadline - now_ms());
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -ETIMEDOUT;
        ssize_t got = recv(fd, req + used, MAX_REQUEST + 1 - used, MSG_DONTWAIT);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got < 0)
            return -errno;
        if (got == 0) {
            req[used] = 0;
            return used ? (int)used : -ECONNRESET;
        }
        char *nl = memchr(req + used, '\n', (size_t)got);
        used += (size_t)got;
        if (nl) {
            *nl = 0;
            size_t n = (size_t)(nl - req);
            return n > MAX_REQUEST ? -EMSGSIZE : (int)n;
        }
        if (used > MAX_REQUEST)
            return -EMSGSIZE;
    }
}

/* Background work: check, repair, idle, frozen (md's sync_action) and findings. */
static void answer_grow(struct uraid_ctl *c, char *arg, char *out);
static void answer_grow_size(struct uraid_ctl *c, const char *arg, char *out);

static void answer_job(struct uraid_ctl *c, const char *verb, char *out)
{
    char why[512] = "";
    int rc = 0;
    if (!strcmp(verb, "findings")) {
        memcpy(out, "ok\n", 4);
        rc = uraid_findings_text(c->a, out + 3, RESPONSE_BYTES - 3);
        if (rc && rc != -ENOBUFS)
            snprintf(out, RESPONSE_BYTES, "error: cannot list the findings: %s\n", uraid_strerror(rc));
        return;
    }
    if (!strcmp(verb, "idle")) {
        rc = uraid_job_idle(c->a);
    } else if (!strcmp(verb, "frozen")) {
        rc = uraid_job_freeze(c->a);
    } else {
        struct uraid_job_params p = {.slot = -1};
        /* md: writing check or repair to sync_action thaws a frozen array */
        __atomic_store_n(&c->a->job.frozen, 0, __ATOMIC_RELEASE);
        rc = uraid_job_start(c->a, !strcmp(verb, "check") ? URAID_JOB_CHECK : URAID_JOB_REPAIR, &p, why, sizeof why);
    }
    if (rc)
        snprintf(out, RESPONSE_BYTES, "error: %s\n", why[0] ? why : uraid_strerror(rc));
    else
        snprintf(out, RESPONSE_BYTES, "ok\n");
}

/* "rmw-level" answers the level; "rmw-level N" sets it (md's sysfs
 * rmw_level): stripes planned from then on use it. */
static void answer_rmw_level(struct uraid_ctl *c, const char *arg, char *out)
{
    if (*arg && (strlen(arg) != 1 || uraid_set_rmw_level(c->a, arg[0] - '0'))) {
        snprintf(out, RESPONSE_BYTES,
                 "error: rmw-level takes 0 (reconstruct-write only), 1 (fewest reads) or 2 (prefer "
                 "read-modify-write), not '%.16s'\n",
                 arg);
        return;
    }
    snprintf(out, RESPONSE_BYTES, "ok\nrmw_level %d\n", uraid_get_rmw_level(c->a));
}

/* Answers one request into c->resp. Returns 1 when the request was "stop". */
static int answer(struct uraid_ctl *c, char *req, int len)
{
    char *out = c->resp;
    if (len > 0 && req[len - 1] == '\r')
        req[--len] = 0;
    for (int i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)req[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
            snprintf(out, RESPONSE_BYTES, "error: the request is not a line of text\n");
            return 0;
        }
    }
    if (memchr(req, 0, (size_t)len) || !len) {
        snprintf(out, RESPONSE_BYTES, "error: %s\n",
                 len ? "the request is not a line of text" : "empty request (try 'status')");
        return 0;
    }
    char *verb = req;
    while (*verb == ' ' || *verb == '\t')
        verb++;
    char *arg = verb + strcspn(verb, " \t");
    if (*arg) {
        *arg++ = 0;
        while (*arg == ' ' || *arg == '\t')
            arg++;
        /* a path may contain spaces: the argument is the rest, less trailing blanks */
        size_t al = strlen(arg);
        while (al && (arg[al - 1] == ' ' || arg[al - 1] == '\t'))
            arg[--al] = 0;
    }
    char why[512] = "";
    int rc;
    int takes_arg = !strcmp(verb, "fail") || !strcmp(verb, "remove") || !strcmp(verb, "add");
    if (!strcmp(verb, "check") || !strcmp(verb, "repair") || !strcmp(verb, "idle") || !strcmp(verb, "frozen") ||
        !strcmp(verb, "findings")) {
        if (*arg) {
            snprintf(out, RESPONSE_BYTES, "error: '%s' takes no argument\n", verb);
            return 0;
        }
        answer_job(c, verb, out);
        return 0;
    }
    if (!strcmp(verb, "status") || !strcmp(verb, "stop")) {
        if (*arg) {
            snprintf(out, RESPONSE_BYTES, "error: '%s' takes no argument\n", verb);
            return 0;
        }
        if (!strcmp(verb, "stop")) {
            snprintf(out, RESPONSE_BYTES, "ok\n");
            return 1;
        }
        memcpy(out, "ok\n", 3);
        rc = uraid_status_text(c->a, out + 3, RESPONSE_BYTES - 3);
        if (rc && rc != -ENOBUFS)
            snprintf(out, RESPONSE_BYTES, "error: cannot build the status: %s\n", uraid_strerror(rc));
        return 0;
    }
    if (!strcmp(verb, "grow")) {
        answer_grow(c, arg, out);
        return 0;
    }
    if (!strcmp(verb, "rmw-level")) {
        answer_rmw_level(c, arg, out);
        return 0;
    }
    if (!strcmp(verb, "grow-size")) {
        answer_grow_size(c, arg, out);
        return 0;
    }
    if (!takes_arg) {
        /* the verb is at most MAX_REQUEST bytes: quote a bounded part */
        snprintf(out, RESPONSE_BYTES, "error: unknown request '%.64s%s' (status, fail, remove, add, grow, grow-size, stop, check, repair, idle, frozen, findings, rmw-level)\n", verb,
                 strlen(verb) > 64 ? "..." : "");
        return 0;
    }
    if (!*arg) {
        snprintf(out, RESPONSE_BYTES, "error: '%s' needs a member path\n", verb);
        return 0;
    }
    if (!strcmp(verb, "fail"))
        rc = array_manage_fail(c->a, arg, why, sizeof why);
    else if (!strcmp(verb, "remove"))
        rc = array_manage_remove(c->a, arg, why, sizeof why);
    else
        rc = array_manage_add(c->a, arg, why, sizeof why);
    if (rc)
        snprintf(out, RESPONSE_BYTES, "error: %s\n", why[0] ? why : uraid_strerror(rc));
    else /* an add may say how it was taken (re-added, or a spare for a full rebuild) */
        snprintf(out, RESPONSE_BYTES, "ok\n%s%s", why, why[0] ? "\n" : "");
    return 0;
}

/* "grow N [chunk=SECTORS] [layout=NAME] [size=SECTORS] [level=L] NEW...":
 * mdadm --grow --raid-devices N [--chunk] [--layout] [--level] --add
 * NEW... on the serving array (uraid_grow_online_shrink, with level=
 * uraid_grow_online_level; N 0 keeps the count, or md's for the level;
 * size= is --array-size, what a shrink keeps); the reshape runs as its
 * job. Member names are separated by blanks. */
static void answer_grow(struct uraid_ctl *c, char *arg, char *out)
{
    char *save = NULL, *tok = strtok_r(arg, " \t", &save), *end = NULL;
    long n = tok ? strtol(tok, &end, 10) : 0;
    if (!tok || *end || n < 0 || n > URAID_MAX_MEMBERS) {
        snprintf(out, RESPONSE_BYTES, "error: 'grow' needs the new member count (1 to %d, 0 to keep it) and the new "
                 "members: grow N [chunk=SECTORS] [layout=NAME] NEW...\n", URAID_MAX_MEMBERS);
        return;
    }
    const char *added[URAID_MAX_MEMBERS], *layout = NULL;
    unsigned long chunk = 0;
    unsigned long long keep = 0;
    int nadd = 0, level = -1;
    while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
        if (!strncmp(tok, "size=", 5)) {
            keep = strtoull(tok + 5, &end, 10);
            if (*end || !keep) {
                snprintf(out, RESPONSE_BYTES, "error: 'grow': bad size '%.32s' (sectors)\n", tok + 5);
                return;
            }
            continue;
        }
        if (!strncmp(tok, "chunk=", 6)) {
            chunk = strtoul(tok + 6, &end, 10);
            if (*end || !chunk || chunk > (1u << 21)) {
                snprintf(out, RESPONSE_BYTES, "error: 'grow': bad chunk '%.32s' (sectors)\n", tok + 6);
                return;
            }
            continue;
        }
        if (!strncmp(tok, "level=", 6)) {
            level = (int)strtol(tok + 6, &end, 10);
            if (*end || tok[6] == 0 || level < 0 || level > 10) {
                snprintf(out, RESPONSE_BYTES, "error: 'grow': bad level '%.32s'\n", tok + 6);
                return;
            }
            continue;
        }
        if (!strncmp(tok, "layout=", 7)) {
            layout = tok + 7;
            continue;
        }
        if (nadd == URAID_MAX_MEMBERS) {
            snprintf(out, RESPONSE_BYTES, "error: more than %d new members\n", URAID_MAX_MEMBERS);
            return;
        }
        added[nadd++] = tok;
    }
    char why[512] = "";
    int was = c->a->geom.level, was_n = c->a->geom.raid_disks, rc = level >= 0 && keep ? -EINVAL : 0;
    if (rc)
        snprintf(why, sizeof why, "change the level and shrink in two runs");
    else if (level >= 0)
        rc = uraid_grow_online_level(c->a, level, (int)n, (uint32_t)chunk, layout, added, nadd, why, sizeof why);
    else
        rc = uraid_grow_online_shrink(c->a, (int)n, (uint32_t)chunk, layout, added, nadd, keep, why, sizeof why);
    if (rc)
        snprintf(out, RESPONSE_BYTES, "error: %s\n", why[0] ? why : uraid_strerror(rc));
    else if (level >= 0 && level != was)
        snprintf(out, RESPONSE_BYTES, "ok\nlevel change RAID-%d -> RAID-%d started (%d members now%s); follow it "
                 "with 'uraid status'\n", was, level, c->a->geom.raid_disks,
                 __atomic_load_n(&c->a->rs, __ATOMIC_ACQUIRE) ? ", restriping" : "");
    else if (chunk && was == 0) /* grow_raid0_online.c: mdadm's way */
        snprintf(out, RESPONSE_BYTES, "ok\nRAID-0 of %d: chunk change to %lu KiB started (the RAID-0 as a RAID-4 "
                 "missing its parity, a RAID-0 again at the end); follow it with 'uraid status'\n",
                 c->a->geom.raid_disks - 1, (unsigned long)(chunk / 2));
    else if (chunk || layout)
        snprintf(out, RESPONSE_BYTES, "ok\nreshape to %ld members%s%lu sectors%s%s started; follow it with "
                 "'uraid status'\n", n ? n : (long)c->a->geom.raid_disks, ", chunk ",
                 (unsigned long)c->a->geom.chunk_sectors, layout ? ", layout " : "", layout ? layout : "");
    else if (was == 0) /* grow_raid0_online.c: mdadm's way */
        snprintf(out, RESPONSE_BYTES, "ok\nreshape to %ld members started (the RAID-0 as a RAID-4 missing its parity, "
                 "a RAID-0 again at the end); follow it with 'uraid status'\n", n);
    else if (c->a->geom.level == LAYOUT_LEVEL_LINEAR) /* appended: nothing moves, nothing runs after */
        snprintf(out, RESPONSE_BYTES, "ok\nlinear of %d members: appended, no data moved; array size %llu KiB "
                 "(clients see it when they connect again)\n", c->a->geom.raid_disks,
                 (unsigned long long)(uraid_size(c->a) / 1024));
    else if (c->a->geom.level == 1 && n < was_n) /* mirrors dropped: their slots were empty */
        snprintf(out, RESPONSE_BYTES, "ok\nRAID-1 of %ld mirrors: the empty slots dropped, nothing moved\n", n);
    else if (c->a->geom.level == 1) /* mirrors: nothing moves, the new ones are recovered */
        snprintf(out, RESPONSE_BYTES, "ok\nRAID-1 of %ld mirrors: the new ones are being recovered; follow it with "
                 "'uraid status'\n", n);
    else
        snprintf(out, RESPONSE_BYTES, "ok\nreshape to %ld members started; follow it with 'uraid status'\n", n);
}

/* "grow-size max|SECTORS": mdadm --grow --size on the serving array
 * (uraid_grow_size_online, SECTORS per member); the new region's resync
 * runs as its job. */
static void answer_grow_size(struct uraid_ctl *c, const char *arg, char *out)
{
    char *end = NULL;
    unsigned long long want = strcmp(arg, "max") ? strtoull(arg, &end, 10) : 0;
    if (!*arg || (end && (*end || !want))) {
        snprintf(out, RESPONSE_BYTES, "error: 'grow-size' needs max or the size per member in sectors\n");
        return;
    }
    char why[512] = "";
    uint64_t from = 0;
    int rc = uraid_grow_size_online(c->a, want, &from, why, sizeof why);
    if (rc == -EALREADY)
        snprintf(out, RESPONSE_BYTES, "ok\n%s\n", why);
    else if (rc)
        snprintf(out, RESPONSE_BYTES, "error: %s\n", why[0] ? why : uraid_strerror(rc));
    else
        snprintf(out, RESPONSE_BYTES, "ok\narray size %llu KiB (was %llu KiB); the new region's resync started: follow "
                 "it with 'uraid status'\n", (unsigned long long)(uraid_size(c->a) / 1024),
                 (unsigned long long)(from / 2));
}

/* Only root or the socket's owner (this process's user) may act. */
static int peer_allowed(int fd)
{
    struct ucred cr;
    socklen_t l = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l))
        return 0;
    return cr.uid == 0 || cr.uid == geteuid();
}

static void serve_one(struct uraid_ctl *c, int fd, int *stop)
{
    static const char denied[] = "error: permission denied (only root or the socket's owner)\n";
    if (!peer_allowed(fd)) {
        send_all(fd, denied, sizeof denied - 1, WRITE_TIMEOUT_MS);
        return;
    }
    char req[MAX_REQUEST + 2];
    int len = read_request(fd, req);
    if (len == -ECONNRESET)
        return; /* nothing asked: nobody to answer (e.g. a liveness probe) */
    if (len == -ETIMEDOUT)
        snprintf(c->resp, RESPONSE_BYTES, "error: no request line within %d ms\n", READ_TIMEOUT_MS);
    else if (len == -EMSGSIZE)
        snprintf(c->resp, RESPONSE_BYTES, "error: request longer than %d bytes\n", MAX_REQUEST);
    else if (len < 0)
        return;
    else
        *stop = answer(c, req, len);
    send_all(fd, c->resp, strlen(c->resp), WRITE_TIMEOUT_MS);
}

static void ctl_free(struct uraid_ctl *c)
{
    struct stat st;
    /* a newer server may have replaced our file after we were stopped */
    if (c->path && stat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
        unlink(c->path);
    if (c->fd >= 0)
        close(c->fd);
    if (c->wake[0] >= 0)
        close(c->wake[0]);
    if (c->wake[1] >= 0)
        close(c->wake[1]);
    free(c->resp);
    free(c->path);
    free(c);
}

static void *ctl_thread(void *arg)
{
    struct uraid_ctl *c = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = c->wake[0], .events = POLLIN}};
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || p[1].revents)
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue; /* EAGAIN, ECONNABORTED, EMFILE...: try again at the next poll */
        int stop = 0;
        serve_one(c, fd, &stop);
        close(fd);
        if (stop) {
            uraid_log(URAID_LOG_INFO, "control socket %s: stop requested", c->path);
            if (c->on_stop)
                c->on_stop(c->ctx);
            if (__atomic_load_n(&c->self_stop, __ATOMIC_ACQUIRE))
                break;
        }
    }
    if (__atomic_load_n(&c->self_stop, __ATOMIC_ACQUIRE)) {
        pthread_detach(pthread_self());
        ctl_free(c);
    }
    return NULL;
}

/* 1 if a server answers on path (a connect succeeds). */
static int live_server(const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int live = connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0;
    close(fd);
    return live;
}

int uraid_ctl_start(struct uraid_array *a, const char *path, void (*on_stop)(void *ctx), void *ctx,
                    struct uraid_ctl **out, char *why, size_t whylen)
{
    struct sockaddr_un sa;
    uraid_why(why, whylen, "%s", "");
    if (!a || !out)
        return -EINVAL;
    if (make_addr(path, &sa)) {
        uraid_why(why, whylen, "control socket path '%s' is empty or too long (at most %zu bytes)", path ? path : "",
            sizeof sa.sun_path - 1);
        return -ENAMETOOLONG;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            uraid_why(why, whylen, "%s exists and is not a socket", path);
            return -EEXIST;
        }
        if (live_server(&sa)) {
            uraid_why(why, whylen, "a server is already listening on %s", path);
            return -EADDRINUSE;
        }
        /* nobody answers: left behind by a process that died */
        if (unlink(path) && errno != ENOENT) {
            int e = -errno;
            uraid_why(why, whylen, "cannot remove the stale socket %s: %s", path, uraid_strerror(e));
            return e;
        }
        uraid_log(URAID_LOG_INFO, "control socket %s: replaced a stale socket file", path);
    }
    struct uraid_ctl *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->fd = c->wake[0] = c->wake[1] = -1;
    c->a = a;
    c->on_stop = on_stop;
    c->ctx = ctx;
    c->path = strdup(path);
    c->resp = malloc(RESPONSE_BYTES);
    int rc = 0;
    if (!c->path || !c->resp) {
        rc = -ENOMEM;
        goto fail;
    }
    if (pipe2(c->wake, O_CLOEXEC)) {
        rc = -errno;
        uraid_why(why, whylen, "cannot create a pipe: %s", uraid_strerror(rc));
        goto fail;
    }
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c->fd < 0) {
        rc = -errno;
        uraid_why(why, whylen, "cannot create a socket: %s", uraid_strerror(rc));
        goto fail;
    }
    /* Linux creates the file with the socket inode's mode less the umask:
     * setting 0600 here (not the process-wide umask, which other threads
     * share) means the file never exists with wider permissions. */
    (void)fchmod(c->fd, 0600);
    if (bind(c->fd, (struct sockaddr *)&sa, sizeof sa)) {
        rc = -errno;
        uraid_why(why, whylen, "cannot bind the control socket %s: %s", path, uraid_strerror(rc));
        if (rc == -EADDRINUSE)
            uraid_why(why, whylen, "a server is already listening on %s", path);
        goto fail_nounlink;
    }
    /* the chmod is belt and braces: nothing can connect before listen() */
    if (chmod(path, 0600) || stat(path, &st)) {
        rc = -errno;
        uraid_why(why, whylen, "cannot set the mode of %s: %s", path, uraid_strerror(rc));
        unlink(path);
        goto fail_nounlink;
    }
    c->dev = st.st_dev;
    c->ino = st.st_ino;
    if (listen(c->fd, 16)) {
        rc = -errno;
        uraid_why(why, whylen, "cannot listen on %s: %s", path, uraid_strerror(rc));
        goto fail;
    }
    rc = -pthread_create(&c->thread, NULL, ctl_thread, c);
    if (rc) {
        uraid_why(why, whylen, "cannot start the control thread: %s", uraid_strerror(rc));
        goto fail;
    }
    uraid_log(URAID_LOG_INFO, "control socket listening on %s", path);
    *out = c;
    return 0;

fail_nounlink:
    free(c->path);
    c->path = NULL;
fail:
    ctl_free(c);
    return rc;
}

void uraid_ctl_stop(struct uraid_ctl *c)
{
    if (!c)
        return;
    if (pthread_equal(pthread_self(), c->thread)) {
        /* from on_stop: the thread frees everything as it leaves */
        __atomic_store_n(&c->self_stop, 1, __ATOMIC_RELEASE);
        return;
    }
    char b = 1;
    ssize_t w;
    do
        w = write(c->wake[1], &b, 1);
    while (w < 0 && errno == EINTR);
    pthread_join(c->thread, NULL);
    ctl_free(c);
}

/* ---- client ------------------------------------------------------------------ */

int uraid_ctl_request(const char *path, const char *request, char *buf, size_t buflen)
{
    struct sockaddr_un sa;
    if (!request || !buf || !buflen)
        return -EINVAL;
    buf[0] = 0;
    if (make_addr(path, &sa))
        return -ENAMETOOLONG;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        int e = -errno;
        close(fd);
        return e;
    }
    size_t rl = strlen(request);
    int rc = send_all(fd, request, rl, CLIENT_TIMEOUT_MS);
    if (rc == 0 && (!rl || request[rl - 1] != '\n'))
        rc = send_all(fd, "\n", 1, CLIENT_TIMEOUT_MS);
    /* the server may answer and close before reading a too-long request:
     * the answer is still there to read */
    if (rc == -EPIPE || rc == -ECONNRESET)
        rc = 0;
    size_t used = 0;
    int64_t deadline = now_ms() + CLIENT_TIMEOUT_MS;
    while (rc == 0) {
        if (used + 1 >= buflen) {
            rc = -EMSGSIZE; /* the text so far stays in buf */
            break;
        }
        int left = (int)(deadline - now_ms());
        if (left <= 0) {
            rc = -ETIMEDOUT;
            break;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r ? -errno : -ETIMEDOUT;
            break;
        }
        ssize_t got = recv(fd, buf + used, buflen - 1 - used, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            /* a server that closes without reading all of a too-long
             * request resets the connection after its answer */
            rc = errno == ECONNRESET && used ? 0 : -errno;
            break;
        }
        if (got == 0)
            break;
        used += (size_t)got;
    }
    buf[used] = 0;
    close(fd);
    if (rc == 0 && used == 0)
        rc = -ECONNRESET; /* the server closed without an answer */
    return rc;
}
