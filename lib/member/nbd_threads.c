/* The threads that serve NBD members (see nbd.c, nbd_loop.c).
 *
 * One thread serves every NBD member of the process by default (up to
 * URAID_NBD_THREADS, 1-16, members spread over them, the least busy
 * first): each turn it runs every member's turn, then polls all their
 * sockets and one eventfd at once. A thread per member cost a wake-up of
 * each member's thread for every engine batch (a stripe write touches
 * every member) and as many context switches per completion round; on a
 * machine with few processors, shared with the servers themselves, that
 * was CPU the array's copies and parity needed. A thread exists while it
 * has members: the first attach starts it, the last detach stops it.
 *
 * Locks: the registry's (reg_mu) orders attach and detach; each thread's
 * own (mu) guards its member list and the finished flags, which the thread
 * copies at the start of each turn. A member's requests are under its own
 * lock (nbd.c), never taken with these. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "member/nbd_conn.h"

#ifdef HAVE_LIBNBD

#define NBD_THREADS_MAX 16

struct nbd_thread {
    pthread_t tid;
    int efd;                 /* every member's wake-up (its p->efd) */
    atomic_int kicked;       /* efd written since the turn began */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* a member finished */
    struct nbd_priv **members;
    int n, cap;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct nbd_thread *threads[NBD_THREADS_MAX];

/* URAID_NBD_THREADS (1..16) for measuring, else 1. */
static int threads_wanted(void)
{
    const char *s = getenv("URAID_NBD_THREADS");
    int n = s && *s ? atoi(s) : 1;
    return n >= 1 && n <= NBD_THREADS_MAX ? n : 1;
}

static void wake(struct nbd_thread *t)
{
    uint64_t one = 1;
    ssize_t w = write(t->efd, &one, sizeof one);
    (void)w; /* fails only when the counter is full: readable anyway */
}

/* Cleared before the turn takes the members' queues, so a request queued
 * after its member's intake finds it clear and wakes the thread again. */
void nbd_thread_kick(struct nbd_thread *t)
{
    if (!atomic_exchange(&t->kicked, 1))
        wake(t);
}

/* Takes p off t's list and tells its closer (under t->mu). */
static void let_go(struct nbd_thread *t, struct nbd_priv *p)
{
    for (int i = 0; i < t->n; i++)
        if (t->members[i] == p) {
            t->members[i] = t->members[--t->n];
            break;
        }
    p->finished = 1;
    pthread_cond_broadcast(&t->cv);
}

/* Room for the members' sockets and the eventfd. */
struct fds {
    struct pollfd *pfd;
    struct nbd_conn **who;
    int cap;
};

static int fds_room(struct fds *f, int n)
{
    if (n <= f->cap)
        return 0;
    struct pollfd *pfd = realloc(f->pfd, (size_t)n * sizeof *pfd);
    if (pfd)
        f->pfd = pfd;
    struct nbd_conn **who = pfd ? realloc(f->who, (size_t)n * sizeof *who) : NULL;
    if (!who)
        return -ENOMEM;
    f->who = who;
    f->cap = n;
    return 0;
}

static void *thread_main(void *arg)
{
    struct nbd_thread *t = arg;
    struct nbd_priv **list = NULL;
    int list_cap = 0;
    struct fds f = {0};
    for (;;) {
        pthread_mutex_lock(&t->mu);
        int n = t->n;
        if (!n) {
            pthread_mutex_unlock(&t->mu);
            break; /* the last member was detached */
        }
        if (n > list_cap) {
            struct nbd_priv **l = realloc(list, (size_t)n * sizeof *l);
            if (l) {
                list = l;
                list_cap = n;
            }
        }
        if (n > list_cap)
            n = list_cap; /* out of memory: the others wait for the next turn */
        memcpy(list, t->members, (size_t)n * sizeof *list);
        pthread_mutex_unlock(&t->mu);

        atomic_store(&t->kicked, 0);
        uint64_t now = nbd_now_ns();
        int64_t sleep = -1;
        for (int i = 0; i < n; i++) {
            int64_t s = -1;
            if (nbd_loop_turn(list[i], now, &s)) {
                nbd_loop_finish(list[i]);
                pthread_mutex_lock(&t->mu);
                let_go(t, list[i]);
                pthread_mutex_unlock(&t->mu);
                list[i] = NULL;
                sleep = 0; /* the list changed: look again */
                continue;
            }
            if (s >= 0 && (sleep < 0 || s < sleep))
                sleep = s;
        }
        int k = 0;
        if (!fds_room(&f, 1 + n * NBD_MAX_CONNS)) {
            f.pfd[k] = (struct pollfd){.fd = t->efd, .events = POLLIN};
            f.who[k++] = NULL;
            for (int i = 0; i < n; i++)
                if (list[i])
                    k += nbd_loop_fds(list[i], f.pfd + k, f.who + k);
        } else {
            sleep = 1000000; /* out of memory: try again in a millisecond */
        }
        struct timespec ts = {.tv_sec = sleep / 1000000000, .tv_nsec = sleep % 1000000000};
        if (ppoll(f.pfd, (nfds_t)k, sleep < 0 ? NULL : &ts, NULL) > 0) {
            if (f.pfd[0].revents & POLLIN) {
                uint64_t v;
                ssize_t r = read(t->efd, &v, sizeof v);
                (void)r;
            }
            for (int j = 1; j < k; j++)
                if (f.pfd[j].revents)
                    nbd_loop_notify(f.who[j], f.pfd[j].revents);
        }
        now = nbd_now_ns();
        for (int i = 0; i < n; i++)
            if (list[i])
                nbd_loop_check(list[i], now);
    }
    free(list);
    free(f.pfd);
    free(f.who);
    return NULL;
}

static void thread_free(struct nbd_thread *t)
{
    close(t->efd);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->members);
    free(t);
}

/* A new thread with p as its first member (under reg_mu). */
static struct nbd_thread *thread_new(struct nbd_priv *p, int *err)
{
    struct nbd_thread *t = calloc(1, sizeof *t);
    struct nbd_priv **m = calloc(4, sizeof *m);
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!t || !m || efd < 0) {
        *err = efd < 0 ? -errno : -ENOMEM;
        if (efd >= 0)
            close(efd);
        free(t);
        free(m);
        return NULL;
    }
    t->efd = efd;
    t->members = m;
    t->cap = 4;
    t->members[t->n++] = p;
    p->efd = efd;
    p->thr = t;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    *err = -pthread_create(&t->tid, NULL, thread_main, t);
    if (*err) {
        thread_free(t);
        p->thr = NULL;
        p->efd = -1;
        return NULL;
    }
    return t;
}

/* Adds p to the running thread t (under reg_mu). */
static int thread_add(struct nbd_thread *t, struct nbd_priv *p)
{
    pthread_mutex_lock(&t->mu);
    int rc = 0;
    if (t->n == t->cap) {
        struct nbd_priv **m = realloc(t->members, (size_t)t->cap * 2 * sizeof *m);
        if (m) {
            t->members = m;
            t->cap *= 2;
        } else {
            rc = -ENOMEM;
        }
    }
    if (!rc) {
        p->efd = t->efd;
        p->thr = t;
        t->members[t->n++] = p;
    }
    pthread_mutex_unlock(&t->mu);
    if (!rc)
        wake(t);
    return rc;
}

int nbd_thread_attach(struct nbd_priv *p)
{
    int want = threads_wanted(), rc = 0, slot = -1;
    struct nbd_thread *best = NULL;
    int best_n = 0;
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < NBD_THREADS_MAX; i++) {
        struct nbd_thread *t = threads[i];
        if (!t) {
            if (slot < 0 && i < want)
                slot = i;
            continue;
        }
        pthread_mutex_lock(&t->mu);
        int n = t->n;
        pthread_mutex_unlock(&t->mu);
        if (!best || n < best_n) {
            best = t;
            best_n = n;
        }
    }
    if (slot >= 0) {
        threads[slot] = thread_new(p, &rc);
    } else {
        rc = thread_add(best, p);
    }
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

void nbd_thread_detach(struct nbd_priv *p)
{
    struct nbd_thread *t = p->thr;
    pthread_mutex_lock(&reg_mu);
    wake(t);
    pthread_mutex_lock(&t->mu);
    while (!p->finished)
        pthread_cond_wait(&t->cv, &t->mu);
    int left = t->n;
    pthread_mutex_unlock(&t->mu);
    if (!left) {
        /* no member can be added meanwhile: attach takes reg_mu */
        pthread_join(t->tid, NULL);
        for (int i = 0; i < NBD_THREADS_MAX; i++)
            if (threads[i] == t)
                threads[i] = NULL;
        thread_free(t);
    }
    p->thr = NULL;
    p->efd = -1;
    pthread_mutex_unlock(&reg_mu);
}

#endif /* HAVE_LIBNBD */
