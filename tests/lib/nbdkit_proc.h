/* nbdkit servers for tests: started on a unix socket, stopped and reaped. */
#ifndef URAID_TEST_NBDKIT_PROC_H
#define URAID_TEST_NBDKIT_PROC_H

#include <sys/types.h>

/* Starts `nbdkit -f --exit-with-parent -P SOCK.pid --unix SOCK ARGS...`
 * (ARGS NULL-terminated, at most 18) and waits, at most 10 s, for its pid
 * file, written once it accepts connections (the socket file appears
 * before it listens). Returns the pid or -1. */
pid_t nbdkit_start(const char *sock, const char *const *args);

/* Sends sig (after SIGCONT, in case the test stopped it) and reaps it. */
void nbdkit_stop(pid_t pid, int sig);

#endif
