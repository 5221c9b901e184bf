/* uraid check|repair: md's sync_action check and repair.
 *
 *   uraid check [--speed-limit SPEED] [--force] [--member-layer ...] MEMBER...
 *       opens the array, reads every stripe, prints mismatch_cnt and where
 *       parity disagrees (member file and sector, and which block is wrong
 *       on RAID-6); repair also rewrites the one wrong block (RAID-5: P).
 *   uraid check|repair --control PATH [--wait]
 *       asks a serving array to do it in the background; --wait follows
 *       its progress and prints the result and findings the same way.
 *
 * Progress goes to stderr (one redrawn line on a terminal, a plain line
 * every few seconds otherwise); the result and findings go to stdout.
 * Exit status: 0 nothing found (repair: everything found was repaired),
 * 3 mismatches found (repair: some left unrepaired: MULTI, unreadable, or
 * a failed rewrite), 1 an error, 2 a usage error. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "uraid_ctl.h"

#define EXIT_FOUND 3
#define RESPONSE_BYTES (256 * 1024)

struct check_opts {
    uint64_t speed_kib;
    const char *control;
    int wait;
};

static int check_parse(const char *verb, int argc, char **argv, int *i, void *ctx)
{
    struct check_opts *o = ctx;
    const char *a = argv[*i];
    if (!strcmp(a, "--speed-limit")) {
        if (*i + 1 >= argc || cli_parse_speed(verb, argv[*i + 1], &o->speed_kib))
            return -1;
        (*i)++;
        return 1;
    }
    if (!strcmp(a, "--control")) {
        if (*i + 1 >= argc) {
            cli_error(verb, "--control needs a socket path");
            return -1;
        }
        o->control = argv[++*i];
        return 1;
    }
    if (!strncmp(a, "--control=", 10)) {
        o->control = a + 10;
        return 1;
    }
    if (!strcmp(a, "--wait")) {
        o->wait = 1;
        return 1;
    }
    return 0;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* ---- on member files ------------------------------------------------------------- */

static int run_local(const char *verb, enum uraid_job_kind kind, const struct cli_members *mem,
                     struct uraid_open_params *op, const struct check_opts *o)
{
    struct uraid_array *a;
    if (cli_open_array(verb, mem, op, &a))
        return 1;
    struct uraid_job_params jp = {.slot = -1, .speed_max_kib = o->speed_kib};
    char why[512];
    int rc = uraid_job_start(a, kind, &jp, why, sizeof why);
    if (rc) {
        cli_error(verb, "%s", why[0] ? why : uraid_strerror(rc));
        uraid_close(a);
        return 1;
    }
    struct uraid_job_status st;
    rc = cli_wait_job(verb, a, &st);
    printf("%s %s after %.1fs: mismatch_cnt %llu", verb, rc == 0 ? "finished" : rc == -ECANCELED ? "stopped" : "failed",
           (double)st.elapsed_ms / 1000.0, (unsigned long long)st.mismatch_sectors);
    if (kind == URAID_JOB_REPAIR)
        printf(", repaired %llu sectors", (unsigned long long)st.repaired_sectors);
    printf("\n");
    char *text = malloc(RESPONSE_BYTES);
    int trc = text ? uraid_findings_text(a, text, RESPONSE_BYTES) : -ENOMEM;
    if (text)
        fputs(text, stdout);
    if (trc == -ENOBUFS)
        printf("(more findings not listed)\n");
    free(text);
    /* anything found but not repaired decides the exit status */
    size_t left = st.nfindings;
    struct uraid_finding *all = malloc(sizeof *all * (st.nfindings ? st.nfindings : 1));
    if (all) {
        size_t nf = uraid_job_findings(a, all, st.nfindings);
        left = 0;
        for (size_t i = 0; i < nf; i++)
            left += !all[i].repaired;
        free(all);
    }
    int crc = uraid_close(a);
    if (cli_interrupted()) {
        cli_error(verb, "interrupted; the array was closed cleanly");
        return 130;
    }
    if (rc) {
        cli_error(verb, "%s", st.why[0] ? st.why : uraid_strerror(rc));
        return 1;
    }
    if (crc) {
        cli_error(verb, "closing the array: %s", uraid_strerror(crc));
        return 1;
    }
    return left ? EXIT_FOUND : 0;
}

/* ---- through a serving array's control socket ---------------------------------- */

static int request(const char *verb, const char *path, const char *req, char *resp)
{
    int rc = uraid_ctl_request(path, req, resp, RESPONSE_BYTES);
    if (rc == -ENOENT || rc == -ECONNREFUSED) {
        cli_error(verb, "no server is listening on %s", path);
        return 1;
    }
    if (rc && rc != -EMSGSIZE) {
        cli_error(verb, "%s: %s", path, uraid_strerror(rc));
        return 1;
    }
    if (strncmp(resp, "ok", 2) || (resp[2] && resp[2] != '\n')) {
        char *nl = strchr(resp, '\n');
        if (nl)
            *nl = 0;
        cli_error(verb, "%s", !strncmp(resp, "error: ", 7) ? resp + 7 : resp);
        return 1;
    }
    return 0;
}

/* The status text's last line: the background job's progress or result. */
static const char *last_line(char *text)
{
    size_t l = strlen(text);
    while (l && text[l - 1] == '\n')
        text[--l] = 0;
    char *nl = strrchr(text, '\n');
    return nl ? nl + 1 : text;
}

static int run_remote(const char *verb, const struct check_opts *o)
{
    char *resp = malloc(RESPONSE_BYTES);
    if (!resp) {
        cli_error(verb, "out of memory");
        return 1;
    }
    int status = request(verb, o->control, verb, resp);
    if (status || !o->wait) {
        if (!status)
            printf("%s started on the serving array; follow it with 'uraid status --control %s'\n", verb,
                   o->control);
        free(resp);
        return status;
    }
    struct cli_progress pr;
    cli_progress_init(&pr);
    char line[512] = "";
    for (;;) {
        sleep_ms(pr.tty ? 300 : 500);
        if ((status = request(verb, o->control, "status", resp)) != 0)
            break;
        snprintf(line, sizeof line, "%s", last_line(resp));
        if (!strncmp(line, "background:", 11))
            break; /* finished, stopped or failed */
        cli_progress_show(&pr, verb, line);
    }
    cli_progress_end(&pr);
    if (status == 0) {
        printf("%s\n", line);
        const char *mc = strstr(line, "mismatch_cnt ");
        unsigned long long mism = mc ? strtoull(mc + 13, NULL, 10) : 0;
        status = request(verb, o->control, "findings", resp);
        if (status == 0) {
            fputs(resp + 3, stdout);
            int unrepaired = 0;
            for (const char *p = resp + 3; *p;) {
                const char *e = strchrnul(p, '\n');
                unrepaired |= e - p < 10 || strncmp(e - 10, ", repaired", 10) != 0;
                p = *e ? e + 1 : e;
            }
            if (strstr(line, " failed") || strstr(line, " stopped"))
                status = 1;
            else if (!strcmp(verb, "check") ? mism > 0 || unrepaired : unrepaired)
                status = EXIT_FOUND;
        }
    }
    free(resp);
    return status;
}

static int check_or_repair(const char *verb, enum uraid_job_kind kind, int argc, char **argv)
{
    struct check_opts o = {0};
    /* --control needs no members: look for it before the member parser */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--control") || !strncmp(argv[i], "--control=", 10)) {
            for (int j = 1; j < argc; j++) {
                int k = j;
                int r = check_parse(verb, argc, argv, &k, &o);
                if (r < 0)
                    return 2;
                if (r == 0) {
                    cli_error(verb, "with --control only --wait is accepted, not '%s'", argv[j]);
                    return 2;
                }
                j = k;
            }
            if (o.speed_kib) {
                cli_error(verb, "--speed-limit applies to member files; a serving array uses its own limit");
                return 2;
            }
            return run_remote(verb, &o);
        }
    /* no members (at most --wait): the serving array's default socket */
    int only_wait = 1;
    for (int i = 1; i < argc; i++)
        only_wait &= !strcmp(argv[i], "--wait");
    if (only_wait) {
        static char found[512];
        int st = cli_default_control(verb, found, sizeof found);
        if (st)
            return st;
        o.control = found;
        o.wait = argc > 1;
        return run_remote(verb, &o);
    }
    struct cli_members mem;
    struct uraid_open_params op = {0};
    struct cli_extra extra = {.parse = check_parse, .ctx = &o,
                              .usage = "[--speed-limit SPEED] | --control PATH [--wait]"};
    int rc = cli_parse_members(verb, argc, argv, &mem, &op, &extra);
    if (rc < 0)
        return 0;
    if (rc)
        return rc;
    if (o.wait) {
        cli_error(verb, "--wait goes with --control (on member files %s always waits)", verb);
        return 2;
    }
    return run_local(verb, kind, &mem, &op, &o);
}

int cmd_check(int argc, char **argv) { return check_or_repair("check", URAID_JOB_CHECK, argc, argv); }
int cmd_repair(int argc, char **argv) { return check_or_repair("repair", URAID_JOB_REPAIR, argc, argv); }
