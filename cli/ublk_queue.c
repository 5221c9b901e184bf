/* One ublk queue: a thread with its own io_uring. It hands every tag to the
 * kernel with FETCH_REQ; a completion means the block layer put a request
 * in that tag's descriptor; the thread serves it with the array API and
 * answers with COMMIT_AND_FETCH_REQ, which also fetches the tag's next
 * request. The kernel expects all commands of a queue from one task, so
 * the queue thread only passes tags: a few workers do the array I/O (many
 * requests in flight on the members) and hand the results back through a
 * list and an eventfd the ring reads. */
#include "ublk_server.h"

#ifdef HAVE_URING
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <linux/ublk_cmd.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef UBLK_U_IO_FETCH_REQ
#define UBLK_U_IO_FETCH_REQ _IOWR('u', UBLK_IO_FETCH_REQ, struct ublksrv_io_cmd)
#define UBLK_U_IO_COMMIT_AND_FETCH_REQ _IOWR('u', UBLK_IO_COMMIT_AND_FETCH_REQ, struct ublksrv_io_cmd)
#endif

static size_t page_round(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

int ublk_queue_init(struct ublk_queue *q)
{
    /* the descriptor area of queue q_id starts at a fixed stride, sized
     * for the deepest queue the driver allows */
    off_t off = UBLKSRV_CMD_BUF_OFFSET +
                (off_t)q->q_id * (off_t)page_round(UBLK_MAX_QUEUE_DEPTH * sizeof(struct ublksrv_io_desc));
    q->iod_len = page_round((size_t)q->depth * sizeof(struct ublksrv_io_desc));
    q->iod = mmap(NULL, q->iod_len, PROT_READ, MAP_SHARED | MAP_POPULATE, q->cdev_fd, off);
    if (q->iod == MAP_FAILED) {
        q->iod = NULL;
        return -errno;
    }
    /* anonymous memory: only the pages a request touches get backed */
    q->bufs = mmap(NULL, (size_t)q->depth * q->buf_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q->bufs == MAP_FAILED) {
        q->bufs = NULL;
        return -errno;
    }
    return 0;
}

static int queue_cmd(struct io_uring *ring, struct ublk_queue *q, int tag, uint32_t op, int32_t result)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe)
        return -EBUSY;
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = q->cdev_fd;
    sqe->cmd_op = op;
    sqe->user_data = (uint64_t)tag;
    struct ublksrv_io_cmd *cmd = (struct ublksrv_io_cmd *)&sqe->addr3;
    cmd->q_id = (uint16_t)q->q_id;
    cmd->tag = (uint16_t)tag;
    cmd->result = result;
    cmd->addr = (uint64_t)(uintptr_t)(q->bufs + (size_t)tag * q->buf_bytes);
    return 0;
}

/* The bytes done or a negative errno, as the driver wants the result. */
static int32_t serve_one(struct ublk_queue *q, int tag)
{
    const struct ublksrv_io_desc *iod = (const struct ublksrv_io_desc *)q->iod + tag;
    uint64_t off = iod->start_sector * 512;
    size_t len = (size_t)iod->nr_sectors * 512;
    char *buf = q->bufs + (size_t)tag * q->buf_bytes;
    int r;
    switch (ublksrv_get_op(iod)) {
    case UBLK_IO_OP_READ:
        if (len > q->buf_bytes)
            return -EINVAL;
        r = uraid_read(q->a, buf, len, off);
        break;
    case UBLK_IO_OP_WRITE:
        if (len > q->buf_bytes)
            return -EINVAL;
        r = uraid_write(q->a, buf, len, off);
        if (!r && (iod->op_flags & UBLK_IO_F_FUA))
            r = uraid_flush(q->a);
        break;
    case UBLK_IO_OP_FLUSH:
        return uraid_flush(q->a);
    case UBLK_IO_OP_DISCARD:
    case UBLK_IO_OP_WRITE_ZEROES:
        /* discard too: the array then reads zeros there, which keeps
         * parity consistent where a mere hole would not */
        r = uraid_write_zeroes(q->a, len, off);
        break;
    default:
        return -EOPNOTSUPP;
    }
    return r < 0 ? r : (int32_t)len;
}

#define WORKERS 4
#define EFD_TAG UINT64_MAX

struct ublk_pool {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint16_t *todo, *done; /* rings of tags, depth each */
    int todo_head, todo_n, done_n;
    int32_t *result;       /* per tag */
    int efd, quit, nworkers;
    uint64_t efd_buf;
    pthread_t worker[WORKERS];
};

static void *worker_main(void *arg)
{
    struct ublk_queue *q = arg;
    struct ublk_pool *p = q->pool;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (!p->quit && !p->todo_n)
            pthread_cond_wait(&p->cond, &p->lock);
        if (!p->todo_n) {
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
        int tag = p->todo[p->todo_head];
        p->todo_head = (p->todo_head + 1) % q->depth;
        p->todo_n--;
        pthread_mutex_unlock(&p->lock);
        int32_t r = serve_one(q, tag);
        pthread_mutex_lock(&p->lock);
        p->result[tag] = r;
        p->done[p->done_n++] = (uint16_t)tag;
        pthread_mutex_unlock(&p->lock);
        uint64_t one = 1;
        if (write(p->efd, &one, sizeof one) != sizeof one) {
            /* the counter cannot overflow at depth <= 4096: nothing lost */
        }
    }
}

static void pool_push(struct ublk_queue *q, int tag)
{
    struct ublk_pool *p = q->pool;
    pthread_mutex_lock(&p->lock);
    p->todo[(p->todo_head + p->todo_n) % q->depth] = (uint16_t)tag;
    p->todo_n++;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

static void arm_efd(struct io_uring *ring, struct ublk_pool *p)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe)
        return;
    io_uring_prep_read(sqe, p->efd, &p->efd_buf, sizeof p->efd_buf, 0);
    sqe->user_data = EFD_TAG;
}

/* Commits what the workers finished, each with its result. */
static void commit_done(struct io_uring *ring, struct ublk_queue *q)
{
    struct ublk_pool *p = q->pool;
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->done_n; i++)
        queue_cmd(ring, q, p->done[i], UBLK_U_IO_COMMIT_AND_FETCH_REQ, p->result[p->done[i]]);
    p->done_n = 0;
    pthread_mutex_unlock(&p->lock);
}

static int pool_start(struct ublk_queue *q)
{
    struct ublk_pool *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    q->pool = p;
    p->efd = -1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->todo = calloc((size_t)q->depth, sizeof *p->todo);
    p->done = calloc((size_t)q->depth, sizeof *p->done);
    p->result = calloc((size_t)q->depth, sizeof *p->result);
    if (!p->todo || !p->done || !p->result)
        return -ENOMEM;
    p->efd = eventfd(0, EFD_CLOEXEC);
    if (p->efd < 0)
        return -errno;
    for (; p->nworkers < WORKERS; p->nworkers++) {
        int r = pthread_create(&p->worker[p->nworkers], NULL, worker_main, q);
        if (r)
            return -r;
    }
    return 0;
}

static void pool_finish(struct ublk_queue *q)
{
    struct ublk_pool *p = q->pool;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nworkers; i++)
        pthread_join(p->worker[i], NULL);
    if (p->efd >= 0)
        close(p->efd);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    free(p->todo);
    free(p->done);
    free(p->result);
    free(p);
    q->pool = NULL;
}

static void *queue_main(void *arg)
{
    struct ublk_queue *q = arg;
    struct io_uring ring;
    /* room for a commit of every tag and the eventfd's read */
    int r = io_uring_queue_init(2 * (unsigned)q->depth, &ring, 0);
    if (r) {
        q->error = r;
        return NULL;
    }
    for (int t = 0; t < q->depth; t++)
        queue_cmd(&ring, q, t, UBLK_U_IO_FETCH_REQ, 0);
    arm_efd(&ring, q->pool);
    int active = q->depth;
    while (active > 0 && !__atomic_load_n(&q->stopping, __ATOMIC_ACQUIRE)) {
        r = io_uring_submit(&ring);
        if (r < 0 && r != -EINTR) {
            q->error = r;
            break;
        }
        struct io_uring_cqe *cqe;
        /* wakes now and then to see stopping: depending on the kernel the
         * fetches still queued are ended with ABORT or only by closing the
         * ring */
        struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000 * 1000};
        r = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
        if (r == -ETIME || r == -EINTR)
            continue;
        if (r < 0) {
            q->error = r;
            break;
        }
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            seen++;
            if (cqe->user_data == EFD_TAG) {
                commit_done(&ring, q);
                arm_efd(&ring, q->pool);
                continue;
            }
            int tag = (int)cqe->user_data;
            if (cqe->res == UBLK_IO_RES_OK)
                pool_push(q, tag);
            else
                active--; /* ABORT: the device is going away */
        }
        io_uring_cq_advance(&ring, seen);
    }
    /* closing the ring cancels whatever the kernel still holds */
    io_uring_queue_exit(&ring);
    return NULL;
}

int ublk_queue_start(struct ublk_queue *q)
{
    int r = pool_start(q);
    if (r)
        return r;
    r = pthread_create(&q->thread, NULL, queue_main, q);
    if (r)
        return -r;
    q->started = 1;
    return 0;
}

void ublk_queue_finish(struct ublk_queue *q)
{
    __atomic_store_n(&q->stopping, 1, __ATOMIC_RELEASE);
    if (q->started)
        pthread_join(q->thread, NULL);
    q->started = 0;
    pool_finish(q);
    if (q->bufs)
        munmap(q->bufs, (size_t)q->depth * q->buf_bytes);
    if (q->iod)
        munmap(q->iod, q->iod_len);
    q->bufs = NULL;
    q->iod = NULL;
}
#endif
