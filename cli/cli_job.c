/* Waiting for a background job in the foreground: a progress bar redrawn
 * in place on a terminal, a plain line every few seconds otherwise (logs,
 * pipes), and the job's outcome at the end. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_wait_job(const char *verb, struct uraid_array *a, struct uraid_job_status *out)
{
    int tty = isatty(STDERR_FILENO);
    struct uraid_job_status st;
    time_t last = 0;
    for (;;) {
        uraid_job_status(a, &st);
        if (!st.running)
            break;
        time_t now = time(NULL);
        char line[256];
        uraid_job_progress_line(&st, line, sizeof line);
        if (tty) {
            fprintf(stderr, "\r      %s\033[K", line);
        } else if (now - last >= 5) {
            fprintf(stderr, "uraid %s: %s\n", verb, line);
            last = now;
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    uraid_job_wait(a, &st);
    if (tty)
        fprintf(stderr, "\r\033[K");
    if (out)
        *out = st;
    return st.result;
}
