/* The member I/O engine: runs a batch of member reads and writes in
 * parallel and returns when all of them have completed.
 *
 * Two ways to run a batch, chosen per request:
 *   - io_uring (liburing): requests whose member exposes a file descriptor
 *     for that range (member_ops.direct_fd) are submitted together on the
 *     calling thread's ring and reaped together;
 *   - the member's own asynchronous submit (member_ops.submit, NBD):
 *     started from the calling thread, completed by the member's thread;
 *   - a thread pool: every other request (layered members: fault injection,
 *     throttling; or io_uring unavailable) runs on worker threads, so a
 *     batch on n members keeps n members busy at once.
 * Many threads may call io_engine_run at the same time; each call waits only
 * for its own requests. No allocation on the request path after warm-up. */
#ifndef URAID_IO_ENGINE_H
#define URAID_IO_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "member/member.h"

/* IO_ZERO: the range reads as zeros afterwards (member_zero); buf unused.
 * IO_FLUSH: member_flush (buf, len and offset unused), so the flushes of
 * several members run at once: through the member's own submit where it
 * has one (NBD: no pool thread in between), else on the pool's threads. */
enum io_kind { IO_READ = 0, IO_WRITE = 1, IO_ZERO = 2, IO_FLUSH = 3 };

struct io_op {
    struct member *m;
    enum io_kind kind;
    void *buf;
    size_t len;        /* bytes */
    uint64_t offset;   /* bytes */
    int fua;           /* IO_WRITE: durable when done (NBD's FUA flag; else a flush after it) */
    int result;        /* out: 0 or a negative errno */
    struct member_aio aio; /* the engine's, while the op is in flight */
    int async;             /* the engine's: started through member_ops.submit */
};

struct io_engine;

struct io_engine_params {
    int workers;       /* thread-pool size; 0 = a default (2 x members, at most 64) */
    int use_uring;     /* 1 = use io_uring where possible (default), 0 = threads only */
};

/* Returns 0 or a negative errno. io_uring being unavailable is not an
 * error: the engine then runs everything on the thread pool. */
int io_engine_create(const struct io_engine_params *p, struct io_engine **out);
void io_engine_destroy(struct io_engine *e);

/* Issues ops[0..n-1] together and waits for all. Each op's result is set.
 * Returns 0 if all succeeded, else the first failing op's negative errno
 * (callers look at each result to decide what to reconstruct). */
int io_engine_run(struct io_engine *e, struct io_op *ops, int n);

/* "io_uring" or "threads": what the engine uses for plain file members. */
const char *io_engine_kind(const struct io_engine *e);

#endif
