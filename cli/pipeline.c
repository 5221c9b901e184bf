/* Pieces of a stream moved to or from the array by several threads at once
 * (uraid cat, uraid write): one request at a time left every member idle
 * while the piece went to or came from the pipe, and members far away (NBD)
 * idle for a round trip per piece.
 *
 * Each worker, in a loop: claim the next piece under the lock (the claims
 * are in stream order: uraid write reads stdin there), do its array I/O
 * unlocked while the others do theirs, then emit it in claim order (uraid
 * cat writes stdout there). The first failure stops every worker; its
 * message is the one printed. */
#include "pipeline.h"

#include <pthread.h>
#include <stdlib.h>

#include "cli.h"

struct run {
    const struct cli_pipeline *p;
    pthread_mutex_t mu;  /* everything below, and every claim */
    pthread_cond_t turn; /* emitted moved on, or stopped */
    uint64_t claimed;    /* pieces claimed so far */
    uint64_t emitted;    /* pieces emitted so far */
    int ended;           /* nothing more to claim: the end or a failure */
    int status;          /* the first failure's; nonzero stops every worker */
};

/* No more claims; with a status, the pieces in flight are dropped too.
 * Under r->mu. */
static void stop(struct run *r, int status, const char *why)
{
    if (status && !r->status) {
        r->status = status;
        if (why[0])
            cli_error(r->p->verb, "%s", why);
    }
    r->ended = 1;
    pthread_cond_broadcast(&r->turn);
}

/* One piece through work and emit; 0 or the failure's status. With an
 * emit, a failed piece too waits for its turn, so that every piece before
 * it is emitted first. */
static int one_piece(struct run *r, struct cli_piece *pc, char *why, size_t whylen)
{
    int rc = r->p->work(r->p->ctx, pc, why, whylen);
    if (!r->p->emit)
        return rc; /* no order to keep */
    pthread_mutex_lock(&r->mu);
    while (!r->status && r->emitted != pc->seq)
        pthread_cond_wait(&r->turn, &r->mu);
    int gone = r->status != 0;
    pthread_mutex_unlock(&r->mu);
    if (gone)
        return 0; /* another piece failed first */
    return rc ? rc : r->p->emit(r->p->ctx, pc, why, whylen);
}

static void *worker_main(void *arg)
{
    struct run *r = arg;
    char why[512];
    struct cli_piece pc = {.buf = aligned_alloc(4096, r->p->piece)};
    pthread_mutex_lock(&r->mu);
    if (!pc.buf)
        stop(r, 1, "out of memory");
    while (!r->ended) {
        why[0] = 0;
        int rc = r->p->claim(r->p->ctx, &pc, why, sizeof why);
        if (rc || pc.len == 0) {
            stop(r, rc, why);
            break;
        }
        pc.seq = r->claimed++;
        pthread_mutex_unlock(&r->mu);
        rc = one_piece(r, &pc, why, sizeof why);
        pthread_mutex_lock(&r->mu);
        if (rc) {
            stop(r, rc, why);
            break;
        }
        r->emitted++; /* in order when there is an emit: it waited for its turn */
        pthread_cond_broadcast(&r->turn);
    }
    pthread_mutex_unlock(&r->mu);
    free(pc.buf);
    return NULL;
}

int cli_pipeline_run(const struct cli_pipeline *p)
{
    struct run r = {.p = p};
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.turn, NULL);
    pthread_t t[CLI_PIPELINE_MAX];
    int n = 0, want = p->workers < CLI_PIPELINE_MAX ? p->workers : CLI_PIPELINE_MAX;
    while (n < want && pthread_create(&t[n], NULL, worker_main, &r) == 0)
        n++;
    if (n == 0)
        worker_main(&r); /* no threads to be had: the same loop, one piece at a time */
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_cond_destroy(&r.turn);
    pthread_mutex_destroy(&r.mu);
    return r.status;
}
