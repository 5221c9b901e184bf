#include "nbdkit_proc.h"

#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t nbdkit_start(const char *sock, const char *const *args)
{
    char pidfile[4200];
    snprintf(pidfile, sizeof pidfile, "%s.pid", sock);
    const char *av[26] = {"nbdkit", "-f", "--exit-with-parent", "-P", pidfile, "--unix", sock};
    int n = 7;
    for (int i = 0; args[i] && n < 25; i++)
        av[n++] = args[i];
    av[n] = NULL;
    unlink(sock);
    unlink(pidfile);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execvp("nbdkit", (char **)av);
        _exit(127);
    }
    for (int i = 0; pid > 0 && i < 400; i++) {
        struct stat st;
        if (stat(pidfile, &st) == 0 && st.st_size > 0)
            return pid;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return -1;
        usleep(25000);
    }
    return -1;
}

void nbdkit_stop(pid_t pid, int sig)
{
    if (pid > 0) {
        kill(pid, SIGCONT);
        kill(pid, sig);
        waitpid(pid, NULL, 0);
    }
}
