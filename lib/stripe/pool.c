/* The array's stripe workers: threads that share the CPU work of a batch
 * (checking parity, rebuilding rows) with the thread that asked for it.
 * Started at the first batch that wants them and kept until the array
 * closes (a new set of threads per batch cost a few percent on
 * memory-backed members). A batch is handed out by bumping `gen`; each
 * worker runs its part and counts itself done.
 *
 * States of the pool: IDLE (busy == 0, run_lock free) --stripe_pool_run-->
 *   RUNNING (run_lock held by the caller, busy = workers still on their
 *   part) --last worker done--> IDLE; --stripe_pool_stop--> STOPPED.
 *   Invariant: parts and fn are only read by workers while RUNNING. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "stripe/stripe.h"

#define MAX_WORKERS 3

struct stripe_pool;

struct worker_arg {
    struct stripe_pool *pool;
    int w;
};

struct stripe_pool {
    pthread_mutex_t run_lock;  /* one batch at a time */
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    uint64_t gen;
    int stop, busy, nworkers;
    void (*fn)(void *part);
    char *parts;
    size_t size;
    int nparts;
    pthread_t thread[MAX_WORKERS];
    struct worker_arg arg[MAX_WORKERS];
};

static void *worker_main(void *arg)
{
    const struct worker_arg *wa = arg;
    struct stripe_pool *p = wa->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->gen == seen)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop)
            break;
        seen = p->gen;
        int part = wa->w + 1;
        void (*fn)(void *) = p->fn;
        char *parts = p->parts;
        size_t size = p->size;
        int mine = part < p->nparts;
        pthread_mutex_unlock(&p->mu);
        if (mine)
            fn(parts + (size_t)part * size);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* One worker per processor beside the caller, at most MAX_WORKERS. */
static int workers_wanted(void)
{
    long v = sysconf(_SC_NPROCESSORS_ONLN);
    return v <= 1 ? 0 : v - 1 > MAX_WORKERS ? MAX_WORKERS : (int)v - 1;
}

struct stripe_pool *stripe_pool_start(void)
{
    struct stripe_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    int want = workers_wanted();
    for (int w = 0; w < want; w++) { /* fewer (even none) when threads cannot start */
        p->arg[w] = (struct worker_arg){p, w};
        if (pthread_create(&p->thread[w], NULL, worker_main, &p->arg[w]))
            break;
        p->nworkers++;
    }
    return p;
}

void stripe_pool_stop(struct stripe_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int w = 0; w < p->nworkers; w++)
        pthread_join(p->thread[w], NULL);
    pthread_mutex_destroy(&p->run_lock);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p);
}

int stripe_pool_parts(const struct stripe_pool *p) { return p ? p->nworkers + 1 : 1; }

void stripe_pool_run(struct stripe_pool *p, void (*fn)(void *part), void *parts, size_t size, int nparts)
{
    char *at = parts;
    if (!p || !p->nworkers || nparts <= 1 || pthread_mutex_trylock(&p->run_lock)) {
        for (int i = 0; i < nparts; i++)
            fn(at + (size_t)i * size);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->parts = at;
    p->size = size;
    p->nparts = nparts;
    p->busy = p->nworkers;
    p->gen++;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    fn(at);
    for (int i = p->nworkers + 1; i < nparts; i++) /* more parts than workers: the caller runs the rest */
        fn(at + (size_t)i * size);
    pthread_mutex_lock(&p->mu);
    while (p->busy)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->run_lock);
}
