/* Waiting for a background job in the foreground: a progress line redrawn
 * in place on a terminal, a plain line every few seconds otherwise (logs,
 * pipes); Ctrl-C or SIGTERM stops the job at its next batch (a rebuild
 * keeps its checkpoint) instead of killing the process mid-write. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define PLAIN_EVERY_MS 5000

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

int cli_interrupted(void) { return interrupted != 0; }

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cli_progress_init(struct cli_progress *p)
{
    p->tty = isatty(STDERR_FILENO);
    p->last_ms = now_ms() - PLAIN_EVERY_MS; /* the first plain line at once */
    p->width = 0;
}

void cli_progress_show(struct cli_progress *p, const char *verb, const char *line)
{
    if (p->tty) {
        size_t l = strlen(line);
        fprintf(stderr, "\r%s%*s", line, p->width > l ? (int)(p->width - l) : 0, "");
        p->width = l;
    } else if (now_ms() - p->last_ms >= PLAIN_EVERY_MS) {
        fprintf(stderr, "uraid %s: %s\n", verb, line);
        p->last_ms = now_ms();
    }
    fflush(stderr);
}

void cli_progress_end(struct cli_progress *p)
{
    if (p->tty && p->width)
        fprintf(stderr, "\r%*s\r", (int)p->width, "");
    p->width = 0;
}

int cli_wait_job(const char *verb, struct uraid_array *a, struct uraid_job_status *out)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct cli_progress pr;
    cli_progress_init(&pr);
    struct uraid_job_status st;
    for (;;) {
        uraid_job_status(a, &st);
        if (!st.running)
            break;
        if (interrupted) {
            uraid_job_cancel(a);
            continue;
        }
        char line[256];
        uraid_job_progress_line(&st, line, sizeof line);
        cli_progress_show(&pr, verb, line);
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    cli_progress_end(&pr);
    uraid_job_wait(a, &st);
    if (out)
        *out = st;
    return st.result;
}
