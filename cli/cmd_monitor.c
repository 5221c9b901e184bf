/* uraid monitor: mdadm --monitor for arrays served by uraid. Every --delay
 * seconds it asks each serving array's control socket for its status
 * (the protocol has no event stream: one request, one answer) and turns
 * what changed since the last answer into mdadm's events, with mdadm's
 * names and argument order:
 *     PROGRAM EVENT ARRAY [MEMBER]
 * ARRAY is the array's name (its UUID when it has none), as `uraid serve
 * --event-cmd` names it, so one alert script serves both. Mail goes
 * through /usr/sbin/sendmail for the events mdadm mails (Fail, FailSpare,
 * DegradedArray, SparesMissing, TestMessage). Every event is also printed
 * on stdout, one line each, for the journal. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "monitor.h"
#include "uraid_conf.h"
#include "uraid_ctl.h"

#define SENDMAIL "/usr/sbin/sendmail"
#define MAX_ARRAYS 256
#define MAX_SOURCES 64

extern char **environ;

struct monitor {
    const char *program, *mail, *mailfrom;
    int oneshot, test, increment, scan, have_sendmail;
    double delay;
    const struct uraid_conf *conf;
    int nsources;
    const char *source[MAX_SOURCES];  /* sockets and directories of sockets */
    int narrays;
    struct mon_array *array[MAX_ARRAYS];
    int pass;                         /* polls done */
    char *buf;                        /* a status answer */
};

static volatile sig_atomic_t stopping;
static void on_signal(int sig) { stopping = sig; }

/* ---- reporting -------------------------------------------------------------- */

/* mdadm mails only the events someone must act on. */
static int mailed(const char *event)
{
    return !strncmp(event, "Fail", 4) || !strcmp(event, "DegradedArray") || !strcmp(event, "SparesMissing") ||
           !strcmp(event, "TestMessage");
}

static void send_mail(struct monitor *m, const struct mon_array *a, const char *event, const char *member)
{
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    FILE *p = popen(SENDMAIL " -t", "w");
    if (!p) {
        cli_error("monitor", "cannot run %s: %s", SENDMAIL, strerror(errno));
        return;
    }
    fprintf(p, "From: %s\nTo: %s\nSubject: %s event on %s:%s\n\n", m->mailfrom ? m->mailfrom : "uraid monitoring <root>",
            m->mail, event, a->label, host);
    fprintf(p, "This is an automatically generated mail message from uraid monitor running on %s.\n\n"
               "A %s event had been detected on array %s (control socket %s).\n\n",
            host, event, a->label, a->sock);
    if (member)
        fprintf(p, "It could be related to member %s.\n\n", member);
    fprintf(p, "The array's status:\n%s\n", a->last_status);
    int rc = pclose(p);
    if (rc)
        cli_error("monitor", "%s -t exited with status %d: the mail about %s on %s may not have gone", SENDMAIL,
                  WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, event, a->label);
}

/* Runs PROGRAM EVENT ARRAY [MEMBER] and waits, so events arrive in order. */
static void run_program(struct monitor *m, const struct mon_array *a, const char *event, const char *member)
{
    char *argv[5] = {(char *)m->program, (char *)event, (char *)a->label, (char *)member, NULL};
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + 6, sizeof *envp);
    if (!envp)
        return;
    char env[5][PATH_MAX + 32];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "URAID_", 6))
            envp[k++] = environ[i];
    snprintf(env[0], sizeof env[0], "URAID_EVENT=%s", event);
    snprintf(env[1], sizeof env[1], "URAID_ARRAY=%s", a->label);
    snprintf(env[2], sizeof env[2], "URAID_UUID=%s", a->uuid);
    snprintf(env[3], sizeof env[3], "URAID_MEMBER=%s", member ? member : "");
    snprintf(env[4], sizeof env[4], "URAID_CONTROL=%s", a->sock);
    for (int i = 0; i < 5; i++)
        envp[k++] = env[i];
    pid_t pid;
    int rc = posix_spawnp(&pid, m->program, NULL, NULL, argv, envp);
    free(envp);
    if (rc) {
        cli_error("monitor", "cannot run %s: %s", m->program, strerror(rc));
        return;
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        cli_error("monitor", "%s %s %s: exit status %d", m->program, event, a->label,
                  WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static void report(void *ctx, const struct mon_array *a, const char *event, const char *member)
{
    struct monitor *m = ctx;
    printf("uraid monitor: %s %s%s%s\n", event, a->label, member ? " " : "", member ? member : "");
    fflush(stdout);
    if (m->program)
        run_program(m, a, event, member);
    if (m->mail && m->have_sendmail && mailed(event))
        send_mail(m, a, event, member);
}

/* ---- the arrays ------------------------------------------------------------- */

static struct mon_array *array_of(struct monitor *m, const char *sock)
{
    for (int i = 0; i < m->narrays; i++)
        if (!strcmp(m->array[i]->sock, sock))
            return m->array[i];
    if (m->narrays >= MAX_ARRAYS)
        return NULL;
    struct mon_array *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    snprintf(a->sock, sizeof a->sock, "%s", sock);
    m->array[m->narrays++] = a;
    return a;
}

/* The sockets in a directory (URAID_CTL_DEFAULT_DIR: one per serving array). */
static void add_dir(struct monitor *m, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &st) == 0 && S_ISSOCK(st.st_mode)) {
            struct mon_array *a = array_of(m, p);
            if (a)
                a->found_in_dir = 1;
        }
    }
    closedir(d);
}

/* The config's spares= for SparesMissing: its ARRAY line by UUID, else name. */
static int wanted_spares(const struct monitor *m, const struct mon_state *s)
{
    uint8_t u[16];
    const struct uraid_conf_array *c =
        m->conf ? uraid_conf_find(m->conf, s->name, uraid_conf_parse_uuid(s->uuid, u) ? NULL : u) : NULL;
    return c ? c->spares : -1;
}

static void poll_once(struct monitor *m)
{
    static struct mon_state cur; /* ~70 KiB */
    for (int i = 0; i < m->nsources; i++) {
        struct stat st;
        if (stat(m->source[i], &st) == 0 && S_ISDIR(st.st_mode))
            add_dir(m, m->source[i]);
        else
            array_of(m, m->source[i]);
    }
    for (int i = 0; i < m->narrays && !stopping; i++) {
        struct mon_array *a = m->array[i];
        int rc = uraid_ctl_request(a->sock, "status", m->buf, MON_STATUS_BYTES);
        int ok = rc == 0 && !strncmp(m->buf, "ok\n", 3) && mon_parse_status(m->buf + 3, &cur) == 0;
        if (!ok && m->pass == 0 && !a->found_in_dir)
            cli_error("monitor", "%s: no array answers there (%s); watching it", a->sock,
                      rc ? strerror(-rc) : "not a status answer");
        struct mon_events ev = {.report = report, .ctx = m, .increment = m->increment, .test = m->test,
                                .first_pass = m->pass == 0, .spares_wanted = ok ? wanted_spares(m, &cur) : -1};
        if (ok)
            snprintf(a->last_status, sizeof a->last_status, "%s", m->buf + 3);
        mon_update(a, ok ? &cur : NULL, &ev);
    }
    m->pass++;
}

/* ---- options ---------------------------------------------------------------- */

static int usage(void)
{
    printf("usage: uraid monitor [--scan] [--config FILE] [--program PROG] [--mail ADDR] [--oneshot] [--test]\n"
           "                     [--delay SECS] [--increment N] [CONTROL-SOCKET-OR-DIRECTORY...]\n"
           "  Watches serving arrays through their control sockets and reports mdadm --monitor's\n"
           "  events: Fail, FailSpare, DegradedArray, SparesMissing, SpareActive, RebuildStarted,\n"
           "  RebuildNN (every --increment percent, default 20), RebuildFinished, DeviceDisappeared,\n"
           "  NewArray, TestMessage (--test: once per array at start). Each runs 'PROG EVENT ARRAY\n"
           "  [MEMBER]', is mailed to ADDR (Fail*, Degraded, SparesMissing, Test) through " SENDMAIL ",\n"
           "  and printed on stdout.\n"
           "  --scan        every array serving in " URAID_CTL_DEFAULT_DIR ", PROGRAM, MAILADDR, MONITORDELAY and\n"
           "                spares= from the config (--config FILE, default " URAID_CONF_DEFAULT ")\n"
           "  --oneshot     check once and exit (mdadm's cron use)\n"
           "  --delay SECS  between checks (default: MONITORDELAY, else 60)\n");
    return 0;
}

static int parse_args(struct monitor *m, int argc, char **argv, const char **config)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL, *val = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage() - 1;
        if (!strcmp(a, "--scan") || !strcmp(a, "-s"))
            m->scan = 1;
        else if (!strcmp(a, "--oneshot") || !strcmp(a, "-1"))
            m->oneshot = 1;
        else if (!strcmp(a, "--test") || !strcmp(a, "-t"))
            m->test = 1;
        else if (!strcmp(a, "--program") || !strcmp(a, "--alert") || !strcmp(a, "-p"))
            dst = &m->program;
        else if (!strcmp(a, "--mail") || !strcmp(a, "-m"))
            dst = &m->mail;
        else if (!strcmp(a, "--config") || !strcmp(a, "-c"))
            dst = config;
        else if (!strcmp(a, "--delay") || !strcmp(a, "-d") || !strcmp(a, "--increment") || !strcmp(a, "-r"))
            dst = &val;
        else if (a[0] == '-' && a[1]) {
            cli_error("monitor", "unknown option '%s' (try 'uraid monitor --help')", a);
            return 2;
        } else if (m->nsources >= MAX_SOURCES) {
            cli_error("monitor", "more than %d sockets and directories", MAX_SOURCES);
            return 2;
        } else {
            m->source[m->nsources++] = a;
        }
        if (!dst)
            continue;
        if (i + 1 >= argc) {
            cli_error("monitor", "%s needs a value", a);
            return 2;
        }
        *dst = argv[++i];
        if (val) {
            char *end;
            double v = strtod(val, &end);
            int delay = a[2] == 'd' || a[1] == 'd';
            if (*end || !(delay ? v >= 0.05 && v <= 86400 : v >= 1 && v <= 99 && v == (int)v)) {
                cli_error("monitor", delay ? "--delay '%s' is not a number of seconds from 0.05 to 86400"
                                           : "--increment '%s' is not a whole percent from 1 to 99", val);
                return 2;
            }
            if (delay)
                m->delay = v;
            else
                m->increment = (int)v;
        }
    }
    return 0;
}

/* Config, defaults and the checks that need them all. */
static int setup(struct monitor *m, const char *config)
{
    struct uraid_conf *c = NULL;
    if (config || m->scan) {
        const char *file = config ? config : URAID_CONF_DEFAULT;
        /* --scan without a config file is fine: the sockets are where they are */
        if ((config || access(file, F_OK) == 0) && cli_load_conf("monitor", file, &c))
            return 1;
    }
    m->conf = c;
    if (c) {
        m->program = m->program ? m->program : c->program;
        m->mail = m->mail ? m->mail : c->mailaddr;
        m->mailfrom = c->mailfrom;
        if (!m->delay && c->monitor_delay)
            m->delay = c->monitor_delay;
    }
    if (!m->delay)
        m->delay = 60;
    if (!m->increment)
        m->increment = 20;
    if (m->scan && m->nsources < MAX_SOURCES)
        m->source[m->nsources++] = URAID_CTL_DEFAULT_DIR;
    if (m->nsources == 0) {
        cli_error("monitor", "nothing to watch: give control sockets (or their directory) or --scan");
        return 2;
    }
    m->have_sendmail = access(SENDMAIL, X_OK) == 0;
    if (m->mail && !m->have_sendmail)
        cli_error("monitor", "no %s on this machine: mail to %s is not sent (install an MTA, or use --program)",
                  SENDMAIL, m->mail);
    return 0;
}

static void sleep_for(double secs)
{
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    while (!stopping && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int cmd_monitor(int argc, char **argv)
{
    static struct monitor m;
    const char *config = NULL;
    int rc = parse_args(&m, argc, argv, &config);
    if (rc)
        return rc < 0 ? 0 : rc;
    rc = setup(&m, config);
    if (rc)
        return rc;
    m.buf = malloc(MON_STATUS_BYTES);
    if (!m.buf) {
        cli_error("monitor", "out of memory");
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    do {
        poll_once(&m);
        if (!m.oneshot)
            sleep_for(m.delay);
    } while (!m.oneshot && !stopping);
    for (int i = 0; i < m.narrays; i++)
        free(m.array[i]);
    free(m.buf);
    return 0;
}
