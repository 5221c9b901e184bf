/* uraid serve --ublk: the array as a kernel block device /dev/ublkbN
 * through Linux's ublk driver (Documentation/block/ublk.rst). The control
 * path (cli/ublk_server.c) adds, sets up, starts, stops and deletes the
 * device with io_uring commands on /dev/ublk-control; each queue
 * (cli/ublk_queue.c) is one thread with its own ring that fetches requests
 * from /dev/ublkcN and answers them with the array API. */
#ifndef URAID_CLI_UBLK_SERVER_H
#define URAID_CLI_UBLK_SERVER_H

#include <pthread.h>
#include <stdint.h>

#include "cli.h"

/* what --queues and --depth may ask for (the kernel gives at most one
 * queue per CPU and takes depths up to 4096) */
#define UBLK_SERVE_MAX_QUEUES 16
#define UBLK_SERVE_MAX_DEPTH 4096

struct ublk_opts {
    int dev_id;    /* -1: the kernel picks */
    int nr_queues; /* 0: default */
    int depth;     /* 0: default */
    const char *control;
    int recover; /* take over the device a killed server left (needs dev_id) */
};

/* Opens the array with op, serves it until SIGINT/SIGTERM/SIGHUP or a
 * control client's "stop", then removes the device and closes the array.
 * Returns the verb's exit status. */
int ublk_serve(const struct cli_members *mem, const struct uraid_open_params *op, const struct ublk_opts *o);

/* One hardware queue: its ring, its descriptors (mapped from /dev/ublkcN)
 * and one data buffer per tag. */
struct ublk_queue {
    struct uraid_array *a;
    int cdev_fd;
    int q_id, depth;
    uint32_t buf_bytes;
    void *iod;      /* const struct ublksrv_io_desc[depth], shared with the kernel */
    size_t iod_len;
    char *bufs;     /* depth * buf_bytes */
    struct ublk_pool *pool; /* the workers that do the array I/O */
    pthread_t thread;
    int started;
    int stopping;          /* set (atomically) once STOP_DEV has returned */
    int error;             /* first ring error, negative errno */
};

/* Maps the descriptors and the buffers and starts the workers; 0 or a
 * negative errno. */
int ublk_queue_init(struct ublk_queue *q);
/* Starts the queue thread, which fetches every tag and serves until
 * stopping is set and the device is gone. */
int ublk_queue_start(struct ublk_queue *q);
/* Sets stopping, joins the threads and unmaps. */
void ublk_queue_finish(struct ublk_queue *q);

#endif
