/* Events for whoever watches the array, with mdadm --monitor's names: Fail,
 * FailSpare, SpareActive, DegradedArray, RebuildStarted, RebuildFinished.
 * With an event program (uraid_open_params.event_program; `uraid serve`
 * and `uraid mount --event-cmd PROG`), each event runs
 *     PROG EVENT ARRAY [MEMBER]
 * as mdadm runs its PROGRAM, with URAID_EVENT, URAID_ARRAY, URAID_UUID,
 * URAID_MEMBER and URAID_DETAIL in the environment. The program runs on a
 * detached thread of its own, so the data path and the jobs never wait for
 * it (they may hold stripe locks when something fails). Every event is
 * also logged. */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "array/array.h"
#include "log.h"

extern char **environ;

/* Programs still running, in every array of the process. */
static int events_running;

struct event_run {
    char *argv[5];
    char **envp;
    char text[4][300];
    char env[5][340];
};

static void *run_program(void *arg)
{
    struct event_run *r = arg;
    pid_t pid;
    int rc = posix_spawnp(&pid, r->argv[0], NULL, NULL, r->argv, r->envp);
    if (rc) {
        uraid_log(URAID_LOG_ERROR, "event program %s: cannot run it: %s", r->argv[0], strerror(rc));
    } else {
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            uraid_log(URAID_LOG_WARN, "event program %s %s: exit status %d", r->argv[0], r->argv[1],
                      WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
    free(r->envp);
    free(r);
    __atomic_sub_fetch(&events_running, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* The name mdadm would show for the array: its name, else its UUID. */
static void array_label(const struct uraid_array *a, char *out, size_t len, char uuid[MD_UUID_TEXT])
{
    md_uuid_text(a->sb.set_uuid, uuid);
    size_t n = strnlen(a->sb.set_name, sizeof a->sb.set_name);
    if (n)
        snprintf(out, len, "%.*s", (int)n, a->sb.set_name);
    else
        snprintf(out, len, "%s", uuid);
}

void array_event(struct uraid_array *a, const char *event, const char *member, const char *detail)
{
    char name[64], uuid[MD_UUID_TEXT];
    array_label(a, name, sizeof name, uuid);
    uraid_log(URAID_LOG_INFO, "event %s on array %s%s%s%s%s", event, name, member ? ", member " : "",
              member ? member : "", detail && *detail ? ": " : "", detail ? detail : "");
    if (!a->event_program)
        return;
    struct event_run *r = calloc(1, sizeof *r);
    size_t nenv = 0;
    while (environ && environ[nenv])
        nenv++;
    char **envp = r ? calloc(nenv + 6, sizeof *envp) : NULL;
    if (!envp) {
        uraid_log(URAID_LOG_ERROR, "event %s: no memory to run %s", event, a->event_program);
        free(r);
        return;
    }
    r->envp = envp;
    const char *args[4] = {a->event_program, event, name, member};
    for (int i = 0; i < (member ? 4 : 3); i++) {
        snprintf(r->text[i], sizeof r->text[i], "%s", args[i]);
        r->argv[i] = r->text[i];
    }
    /* the process's environment, with this event's facts in place of any inherited ones */
    size_t ne = 0;
    for (size_t i = 0; i < nenv; i++)
        if (strncmp(environ[i], "URAID_", 6))
            envp[ne++] = environ[i];
    const char *keys[5] = {"URAID_EVENT", "URAID_ARRAY", "URAID_UUID", "URAID_MEMBER", "URAID_DETAIL"};
    const char *vals[5] = {event, name, uuid, member ? member : "", detail ? detail : ""};
    for (int i = 0; i < 5; i++) {
        snprintf(r->env[i], sizeof r->env[i], "%s=%s", keys[i], vals[i]);
        envp[ne++] = r->env[i];
    }
    __atomic_add_fetch(&events_running, 1, __ATOMIC_ACQUIRE);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &at, run_program, r);
    pthread_attr_destroy(&at);
    if (rc) {
        uraid_log(URAID_LOG_ERROR, "event %s: cannot start %s: %s", event, a->event_program, strerror(rc));
        __atomic_sub_fetch(&events_running, 1, __ATOMIC_RELEASE);
        free(envp);
        free(r);
    }
}

void array_events_drain(void)
{
    /* a plugin's code must stay loaded while its threads run; a stuck
     * program is left behind after 10 s rather than holding up the close */
    for (int i = 0; i < 1000 && __atomic_load_n(&events_running, __ATOMIC_ACQUIRE); i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
