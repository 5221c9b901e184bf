/* uraid mount MEMBERS... DIR: serves the array through FUSE as DIR/array
 * and DIR/status (the FUSE front-end itself is fuse/fuse_server.c). This
 * verb parses the options and runs the server's lifecycle:
 *
 * fork (unless --foreground) -> open the array in the child (the engine's
 * threads and io_uring rings would not survive a fork made after) -> mount
 * -> start the control socket -> tell the waiting parent "ready" -> serve ->
 * on unmount or SIGTERM/SIGINT/SIGHUP leave the loop, unmount, close the
 * array (which writes the clean state). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "uraid_ctl.h"

#ifndef HAVE_FUSE3
int cmd_mount(int argc, char **argv)
{
    cli_error("mount", "this uraid was built without FUSE: install libfuse3-dev and fuse3 "
                       "(sh scripts/deps.sh) and rebuild with make");
    return 1;
}
#else

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <syslog.h>

#include "fuse_server.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

struct mount_opts {
    int foreground;
    const char *control;
    const char *event_cmd;
};

static int parse_mount_opt(const char *verb, int argc, char **argv, int *i, void *ctx)
{
    struct mount_opts *o = ctx;
    if (!strcmp(argv[*i], "--foreground") || !strcmp(argv[*i], "-F")) {
        o->foreground = 1;
        return 1;
    }
    if (!strcmp(argv[*i], "--control") || !strcmp(argv[*i], "--event-cmd")) {
        if (*i + 1 >= argc) {
            cli_error(verb, "%s needs a value", argv[*i]);
            return -1;
        }
        const char **dst = !strcmp(argv[*i], "--control") ? &o->control : &o->event_cmd;
        *dst = argv[++*i];
        return 1;
    }
    return 0;
}

static void log_to_syslog(void *ctx, enum uraid_log_level level, const char *msg)
{
    static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    syslog(prio[level], "%s", msg);
}

/* A control client's "stop": fuse_session_exit() alone only sets a flag the
 * loop's main thread checks when woken, so raise the signal that wakes it
 * and takes the same clean path as `kill -TERM`. */
static void on_ctl_stop(void *ctx)
{
    kill(getpid(), SIGTERM);
}


/* Detached like a mount helper: messages go to syslog, the standard
 * streams to /dev/null, and the parent waiting on `ready` reports success. */
static void detach(int ready)
{
    uraid_set_log(log_to_syslog, NULL, cli.verbose ? URAID_LOG_INFO : URAID_LOG_WARN);
    openlog("uraid", LOG_PID, LOG_DAEMON);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        if (null > 2)
            close(null);
    }
    if (chdir("/")) {
        /* nothing depends on the working directory any more */
    }
    char ok = 0;
    if (write(ready, &ok, 1) != 1) {
        /* parent gone: keep serving anyway */
    }
    close(ready);
}

/* Runs in the process that serves (the child unless --foreground). `ready`
 * is the pipe to the waiting parent (-1 in the foreground): one byte is
 * written once the mount is up; errors before that go to stderr. */
static int serve(struct cli_members *mem, struct uraid_open_params *op, const char *dir, struct mount_opts *o,
                 int ready)
{
    /* PF_MEMALLOC_NOIO for this thread and every thread created after it
     * (engine workers, FUSE workers): the kernel's writeback may be waiting
     * on us, so our allocations must not wait on writeback. Root only. */
    if (prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) && errno != EPERM && errno != EINVAL)
        cli_error("mount", "warning: PR_SET_IO_FLUSHER: %s", strerror(errno));
    /* The engine's threads are created by uraid_open: keep the stop signals
     * away from them, so they reach the threads that can end the FUSE loop. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, &old);

    struct uraid_array *a;
    if (cli_open_array("mount", mem, op, &a))
        return 1;
    int status = 1;
    char default_ctl[128], why[512];
    struct fuse_server *fs;
    if (fuse_server_mount(a, dir, &fs, why, sizeof why)) {
        cli_error("mount", "%s", why);
        goto close_array;
    }
    const char *ctl_path = o->control ? o->control : cli_default_socket_of(a, default_ctl, sizeof default_ctl);
    struct uraid_ctl *ctl = NULL;
    /* started while the stop signals are still blocked: its thread keeps
     * them blocked too */
    if (ctl_path && uraid_ctl_start(a, ctl_path, on_ctl_stop, NULL, &ctl, why, sizeof why)) {
        cli_error("mount", "control socket %s: %s", ctl_path, why);
        goto unmount;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (ready >= 0)
        detach(ready);
    status = fuse_server_loop(fs) < 0 ? 1 : 0;
    if (ctl)
        uraid_ctl_stop(ctl);
unmount:
    fuse_server_unmount(fs);
close_array:
    {
        int crc = uraid_close(a);
        if (crc) {
            cli_error("mount", "closing the array: %s", uraid_strerror(crc));
            status = 1;
        }
    }
    return status;
}

int cmd_mount(int argc, char **argv)
{
    struct cli_members mem;
    struct uraid_open_params op = {.auto_rebuild = 1}; /* a serving array rebuilds onto spares, as md does */
    struct mount_opts o = {0};
    struct cli_extra extra = {parse_mount_opt, &o, "[--control PATH] [--foreground] [--event-cmd PROG]"};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            /* the shared usage ends in MEMBER...; mount also takes DIR last */
            printf("usage: uraid mount [--force] [--member-layer [MEMBER:]SPEC] [--control PATH] [--foreground]\n"
                   "                   [--event-cmd PROG] MEMBER... DIR\n"
                   "  serves the array as DIR/array (a file of the array's size; reads and writes go to\n"
                   "  the array, fsync flushes it) and DIR/status (the array's state, read-only).\n"
                   "  Detaches once mounted unless --foreground; 'fusermount3 -u DIR' or SIGTERM\n"
                   "  stops serving and closes the array clean.\n"
                   "  --member-layer simulates disks and faults (see 'uraid detail --help').\n"
                   "  --event-cmd PROG runs 'PROG EVENT ARRAY [MEMBER]' on Fail, FailSpare, SpareActive,\n"
                   "  DegradedArray, RebuildStarted, RebuildFinished (mdadm --monitor's events).\n");
            return 0;
        }
    int rc = cli_parse_members("mount", argc, argv, &mem, &op, &extra);
    if (rc)
        return rc < 0 ? 0 : rc;
    op.event_program = o.event_cmd;
    if (mem.n < 2) {
        cli_error("mount", "need the members and a mount directory (uraid mount MEMBER... DIR)");
        return 2;
    }
    const char *dir_arg = mem.path[--mem.n];
    char dir[PATH_MAX];
    struct stat st;
    if (!realpath(dir_arg, dir) || stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        cli_error("mount", "%s is not a directory", dir_arg);
        return 2;
    }
    if (o.foreground)
        return serve(&mem, &op, dir, &o, -1);

    int pfd[2];
    if (pipe(pfd)) {
        cli_error("mount", "pipe: %s", strerror(errno));
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        cli_error("mount", "fork: %s", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        close(pfd[0]);
        setsid();
        _exit(serve(&mem, &op, dir, &o, pfd[1]));
    }
    close(pfd[1]);
    char ok;
    ssize_t n;
    do
        n = read(pfd[0], &ok, 1);
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    if (n == 1)
        return 0; /* mounted; the child serves on */
    int ws = 0;
    waitpid(pid, &ws, 0);
    return WIFEXITED(ws) && WEXITSTATUS(ws) ? WEXITSTATUS(ws) : 1;
}
#endif
