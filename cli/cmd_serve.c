/* uraid serve MEMBERS... [--socket PATH | --port N] [--control PATH]
 *                        [--force] [--member-layer [MEMBER:]SPEC] [--rmw-level N]
 *
 * Serves the array over NBD by running nbdkit with the uraid plugin
 * (plugins/nbdkit-uraid-plugin.c) in the foreground: nbdkit speaks the
 * protocol, the plugin translates to the array API, and this verb only
 * checks the input, finds the two programs and looks after the child. Any
 * NBD client works: nbdinfo, nbdcopy, qemu-img, fio --ioengine=nbd,
 * nbd-client.
 *
 * The members are checked with a read-only open first, so a wrong path or a
 * non-array file gets the same one-line error as every other verb and
 * nothing is written. SIGINT, SIGTERM and SIGHUP are forwarded to nbdkit,
 * whose plugin then closes the array cleanly; the socket file is removed on
 * the way out. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "ublk_server.h"
#include "uraid_ctl.h"

#define PLUGIN_NAME "nbdkit-uraid-plugin.so"

struct serve_opts {
    const char *socket;
    const char *port;
    const char *control;
    const char *speed_limit;
    uint64_t speed_limit_kib;
    int no_rebuild, no_resync;
    const char *event_cmd;
    int ublk, recover;
    const char *ublk_id, *queues, *depth;
};

static int serve_parse(const char *verb, int argc, char **argv, int *i, void *ctx)
{
    struct serve_opts *o = ctx;
    const char *a = argv[*i], **dst = NULL;
    if (!strcmp(a, "--socket") || !strcmp(a, "-U"))
        dst = &o->socket;
    else if (!strcmp(a, "--port") || !strcmp(a, "-p"))
        dst = &o->port;
    else if (!strcmp(a, "--control"))
        dst = &o->control;
    else if (!strcmp(a, "--speed-limit"))
        dst = &o->speed_limit;
    else if (!strcmp(a, "--event-cmd"))
        dst = &o->event_cmd;
    else if (!strcmp(a, "--id"))
        dst = &o->ublk_id;
    else if (!strcmp(a, "--queues"))
        dst = &o->queues;
    else if (!strcmp(a, "--depth"))
        dst = &o->depth;
    else if (!strcmp(a, "--ublk") || !strcmp(a, "--recover")) {
        *(!strcmp(a, "--ublk") ? &o->ublk : &o->recover) = 1;
        return 1;
    }
    else if (!strcmp(a, "--no-rebuild") || !strcmp(a, "--no-resync")) {
        *(!strcmp(a, "--no-rebuild") ? &o->no_rebuild : &o->no_resync) = 1;
        return 1;
    } else
        return 0;
    if (*i + 1 >= argc) {
        cli_error(verb, "%s needs a value", a);
        return -1;
    }
    *dst = argv[++*i];
    return 1;
}

/* The plugin built next to this binary (build/), then the places a package
 * or `make install` would put it; URAID_NBDKIT_PLUGIN overrides. */
static int find_plugin(char *out, size_t len)
{
    const char *env = getenv("URAID_NBDKIT_PLUGIN");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            const char *rel[] = {"/", "/../lib/nbdkit/plugins/", "/../lib/x86_64-linux-gnu/nbdkit/plugins/"};
            for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
                int w = snprintf(out, len, "%s%s%s", exe, rel[i], PLUGIN_NAME);
                if (w > 0 && (size_t)w < len && access(out, R_OK) == 0)
                    return 0;
            }
        }
    }
    const char *dirs[] = {"/usr/local/lib/nbdkit/plugins", "/usr/lib/x86_64-linux-gnu/nbdkit/plugins",
                          "/usr/lib/nbdkit/plugins", "/usr/lib64/nbdkit/plugins"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(out, len, "%s/%s", dirs[i], PLUGIN_NAME);
        if (access(out, R_OK) == 0)
            return 0;
    }
    return -1;
}

static int have_program(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char dir[PATH_MAX];
    while (*path) {
        size_t n = strcspn(path, ":");
        int w = snprintf(dir, sizeof dir, "%.*s/%s", (int)n, path, name);
        if (n && w > 0 && (size_t)w < sizeof dir && access(dir, X_OK) == 0)
            return 1;
        path += n + (path[n] == ':');
    }
    return 0;
}

/* Refuses a socket path a live server answers on (two servers on one
 * array would corrupt it), removes a stale socket left by a dead one, and
 * never deletes a file that is not a socket. */
static int check_socket_path(const char *path)
{
    if (!path)
        return 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        cli_error("serve", "socket path %s is too long (at most %zu bytes)", path, sizeof sa.sun_path - 1);
        return -1;
    }
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        cli_error("serve", "%s exists and is not a socket; refusing to replace it", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        cli_error("serve", "socket: %s", strerror(errno));
        return -1;
    }
    int live = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    if (live) {
        cli_error("serve", "a server is already listening on %s", path);
        return -1;
    }
    unlink(path);
    return 0;
}

/* argv for nbdkit; every string it points at outlives the exec. */
static char **nbdkit_argv(const struct serve_opts *o, const char *plugin, const struct cli_members *mem,
                          const struct uraid_open_params *op)
{
    size_t max = 20 + 2 * (size_t)mem->n + (size_t)mem->nlayers;
    char **av = calloc(max, sizeof *av);
    if (!av)
        return NULL;
    size_t k = 0;
    av[k++] = "nbdkit";
    av[k++] = "--foreground";
    /* nbdkit dies with us even if we are killed with SIGKILL */
    av[k++] = "--exit-with-parent";
    if (cli.verbose)
        av[k++] = "--verbose";
    if (o->socket) {
        av[k++] = "--unix";
        av[k++] = (char *)o->socket;
    } else if (o->port) {
        av[k++] = "--port";
        av[k++] = (char *)o->port;
    }
    av[k++] = (char *)plugin;
    for (int i = 0; i < mem->n; i++)
        if (asprintf(&av[k++], "member=%s", mem->path[i]) < 0)
            return NULL;
    /* the raw [MEMBER:]SPEC strings: the plugin resolves them the same way */
    for (int i = 0; i < mem->nlayers; i++)
        if (asprintf(&av[k++], "layer=%s", mem->layer_arg[i]) < 0)
            return NULL;
    if (op->force)
        av[k++] = "force=1";
    if (o->control && asprintf(&av[k++], "control=%s", o->control) < 0)
        return NULL;
    if (o->speed_limit_kib && asprintf(&av[k++], "speed_limit=%llu", (unsigned long long)o->speed_limit_kib * 1024) < 0)
        return NULL;
    if (mem->rmw_level >= 0 && asprintf(&av[k++], "rmw_level=%d", mem->rmw_level) < 0)
        return NULL;
    if (o->no_rebuild)
        av[k++] = "rebuild=0";
    if (o->no_resync)
        av[k++] = "resync=0";
    if (o->event_cmd && asprintf(&av[k++], "event_cmd=%s", o->event_cmd) < 0)
        return NULL;
    av[k] = NULL;
    return av;
}

/* A count from 1 to max for option opt; 0 or -1 after saying why. */
static int parse_count(const char *opt, const char *v, int max, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || end == v || n < 1 || n > max) {
        cli_error("serve", "%s '%s' is not a count from 1 to %d", opt, v, max);
        return -1;
    }
    *out = (int)n;
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o = {0};
    struct cli_extra extra = {serve_parse, &o,
                              "[--socket PATH | --port N | --ublk [--id N [--recover]] [--queues N] [--depth N]] [--control PATH] [--speed-limit SPEED] [--no-rebuild] [--no-resync] "
                              "[--event-cmd PROG]"};
    struct cli_members mem;
    struct uraid_open_params op = {0};
    int rc = cli_parse_members("serve", argc, argv, &mem, &op, &extra);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (o.speed_limit && cli_parse_speed("serve", o.speed_limit, &o.speed_limit_kib))
        return 2;
    if (o.socket && o.port) {
        cli_error("serve", "give either --socket PATH or --port N, not both");
        return 2;
    }
    if (o.ublk && (o.socket || o.port)) {
        cli_error("serve", "--ublk serves a block device, not an NBD socket: leave out --socket and --port");
        return 2;
    }
    if ((o.ublk_id || o.queues || o.depth || o.recover) && !o.ublk) {
        cli_error("serve", "%s goes with --ublk (it is about the ublk device)",
                  o.ublk_id ? "--id N" : o.queues ? "--queues N" : o.depth ? "--depth N" : "--recover");
        return 2;
    }
    if (o.recover && (!o.ublk_id || o.queues || o.depth)) {
        cli_error("serve", "--recover takes the device back as it was made: give --id N, and no --queues or --depth");
        return 2;
    }
    int queues = 0, depth = 0;
    if (o.queues && parse_count("--queues", o.queues, UBLK_SERVE_MAX_QUEUES, &queues))
        return 2;
    if (o.depth && parse_count("--depth", o.depth, UBLK_SERVE_MAX_DEPTH, &depth))
        return 2;
    int ublk_id = -1;
    if (o.ublk_id) {
        char *end;
        long v = strtol(o.ublk_id, &end, 10);
        if (*end || end == o.ublk_id || v < 0 || v > 1000000) {
            cli_error("serve", "--id '%s' is not a ublk device number (0, 1, ...)", o.ublk_id);
            return 2;
        }
        ublk_id = (int)v;
    }
    if (o.port) {
        char *end;
        long p = strtol(o.port, &end, 10);
        if (*end || p < 1 || p > 65535) {
            cli_error("serve", "--port '%s' is not a TCP port number", o.port);
            return 2;
        }
    }
    if (!o.ublk && !have_program("nbdkit")) {
        cli_error("serve", "nbdkit is not installed: apt-get install nbdkit");
        return 1;
    }
    char plugin[PATH_MAX];
    if (!o.ublk && find_plugin(plugin, sizeof plugin)) {
        cli_error("serve", "cannot find %s next to the uraid binary or in nbdkit's plugin directories "
                           "(build it with 'make' after apt-get install nbdkit-plugin-dev, or set URAID_NBDKIT_PLUGIN)",
                  PLUGIN_NAME);
        return 1;
    }

    /* Every refusal of uraid_open, without writing a byte. */
    struct uraid_open_params probe_op = op;
    probe_op.readonly = 1;
    struct uraid_array *probe;
    if (cli_open_array("serve", &mem, &probe_op, &probe))
        return 1;
    /* Without --control the control socket goes where `uraid status/fail/...`
     * look when given no --control: URAID_CTL_DEFAULT_DIR, one socket per
     * array named by its UUID. Only when that directory can be made
     * (root): serving must not depend on it. */
    char default_ctl[128];
    if (!o.control)
        o.control = cli_default_socket_of(probe, default_ctl, sizeof default_ctl);
    uraid_close(probe);

    if (check_socket_path(o.socket) || check_socket_path(o.control))
        return 1;
    if (o.ublk) {
        /* in this process, with the background work the plugin asks for */
        struct ublk_opts uo = {.dev_id = ublk_id, .nr_queues = queues, .depth = depth, .control = o.control,
                              .recover = o.recover};
        op.auto_rebuild = 1;
        op.no_spare_rebuild = o.no_rebuild;
        op.no_auto_resync = o.no_resync;
        op.sync_speed_max_kib = o.speed_limit_kib;
        op.event_program = o.event_cmd;
        return ublk_serve(&mem, &op, &uo);
    }
    char **av = nbdkit_argv(&o, plugin, &mem, &op);
    if (!av) {
        cli_error("serve", "out of memory");
        return 1;
    }

    /* Signals are taken synchronously with sigwaitinfo, so forwarding them
     * and reaping the child happen in one plain loop. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old);

    if (o.socket)
        fprintf(stderr, "uraid serve: nbd+unix:///?socket=%s", o.socket);
    else
        fprintf(stderr, "uraid serve: nbd://localhost:%s", o.port ? o.port : "10809");
    fprintf(stderr, " (%d members%s%s; SIGINT/SIGTERM stops)\n", mem.n, o.control ? ", control " : "",
            o.control ? o.control : "");

    pid_t child = fork();
    if (child < 0) {
        cli_error("serve", "fork: %s", strerror(errno));
        return 1;
    }
    if (child == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL); /* the mask survives exec */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        execvp("nbdkit", av);
        fprintf(stderr, "uraid serve: cannot run nbdkit: %s\n", strerror(errno));
        _exit(127);
    }

    int status = 0, stopping = 0;
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&set, &si);
        if (sig < 0)
            continue; /* EINTR */
        if (sig != SIGCHLD) {
            /* the first signal asks nbdkit to stop; a second one insists */
            kill(child, stopping ? SIGKILL : SIGTERM);
            stopping = 1;
            continue;
        }
        pid_t w = waitpid(child, &status, WNOHANG);
        if (w == child)
            break;
    }
    /* nbdkit is gone: nobody can be serving on the sockets we checked were
     * free, so remove whatever a killed nbdkit left behind. */
    const char *leftovers[] = {o.socket, o.control};
    for (int i = 0; i < 2; i++) {
        struct stat st;
        if (leftovers[i] && lstat(leftovers[i], &st) == 0 && S_ISSOCK(st.st_mode))
            unlink(leftovers[i]);
    }
    if (WIFEXITED(status)) {
        if (WEXITSTATUS(status) && !stopping)
            cli_error("serve", "nbdkit exited with status %d", WEXITSTATUS(status));
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        if (stopping && WTERMSIG(status) == SIGTERM)
            return 0;
        cli_error("serve", "nbdkit was killed by signal %d", WTERMSIG(status));
        return 1;
    }
    return 1;
}
