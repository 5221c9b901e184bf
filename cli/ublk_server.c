/* uraid serve --ublk: the control path of a ublk device and the server's
 * lifetime (see ublk_server.h).
 *
 * ADD_DEV (queues, depth, buffer size) -> open the array -> SET_PARAMS (the block limits md
 * sets: 512-byte logical and 4 KiB physical blocks, io_min = chunk, io_opt
 * = full stripe, discard) -> queue threads fetch every tag -> START_DEV
 * (the driver adds /dev/ublkbN) -> control socket -> wait for a stop
 * signal -> STOP_DEV (the disk goes away while the queues still serve its
 * last writeback) -> queues end -> DEL_DEV -> close the array (clean). */
#include "ublk_server.h"

#include <stdio.h>
#include <string.h>

#ifndef HAVE_URING
int ublk_serve(const struct cli_members *mem, const struct uraid_open_params *op, const struct ublk_opts *o)
{
    cli_error("serve", "--ublk needs io_uring: this uraid was built without liburing "
                       "(apt-get install liburing-dev, then make)");
    return 1;
}
#else

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/ublk_cmd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "uraid_ctl.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif
#ifndef UBLK_F_CMD_IOCTL_ENCODE
#define UBLK_F_CMD_IOCTL_ENCODE (1ULL << 6)
#endif
#define UBLK_CTRL(nr) _IOWR('u', nr, struct ublksrv_ctrl_cmd)

#define DEFAULT_QUEUES 2
#define DEFAULT_DEPTH 64
#define BUF_BYTES (512u * 1024)
#define MAX_QUEUES UBLK_SERVE_MAX_QUEUES

struct ublk_dev {
    int ctrl_fd, cdev_fd;
    struct io_uring ring; /* 128-byte SQEs: a control command does not fit in 16 bytes */
    struct ublksrv_ctrl_dev_info info;
    int added;
    struct ublk_queue q[MAX_QUEUES];
};

/* One control command, waited for; the driver's result (>= 0) or a
 * negative errno. */
static int ctrl_cmd(struct ublk_dev *d, unsigned nr, uint64_t addr, uint16_t len, uint64_t data0)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&d->ring);
    if (!sqe)
        return -EBUSY;
    memset(sqe, 0, 2 * sizeof *sqe);
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = d->ctrl_fd;
    sqe->cmd_op = UBLK_CTRL(nr);
    struct ublksrv_ctrl_cmd *c = (struct ublksrv_ctrl_cmd *)&sqe->addr3;
    c->dev_id = d->info.dev_id;
    c->queue_id = (uint16_t)-1;
    c->addr = addr;
    c->len = len;
    c->data[0] = data0;
    int r = io_uring_submit(&d->ring);
    if (r < 0)
        return r;
    struct io_uring_cqe *cqe;
    do
        r = io_uring_wait_cqe(&d->ring, &cqe);
    while (r == -EINTR);
    if (r < 0)
        return r;
    r = cqe->res;
    io_uring_cqe_seen(&d->ring, cqe);
    return r;
}

static int log2_exact(uint64_t v)
{
    if (!v || (v & (v - 1)))
        return -1;
    return __builtin_ctzll(v);
}

/* The limits md gives /dev/mdN, so mkfs finds stride and stripe width.
 * ublk passes io_min and io_opt as powers of two: a full stripe that is
 * not one (3 data members) cannot be announced, and io_opt then says the
 * chunk (mkfs sets stripe width = stride, never a wrong multiple). */
static int set_params(struct ublk_dev *d, struct uraid_array *a)
{
    struct uraid_array_info *info = calloc(1, sizeof *info);
    if (!info)
        return -ENOMEM;
    int r = uraid_get_info(a, info);
    if (r) {
        free(info);
        return r;
    }
    uint64_t member_bytes = info->member_data_sectors * 512;
    uint64_t data = member_bytes ? info->size_bytes / member_bytes : 1;
    struct ublk_params p = {.len = sizeof p, .types = UBLK_PARAM_TYPE_BASIC | UBLK_PARAM_TYPE_DISCARD};
    p.basic.attrs = UBLK_ATTR_VOLATILE_CACHE | UBLK_ATTR_FUA;
    p.basic.logical_bs_shift = 9;
    p.basic.physical_bs_shift = 12;
    p.basic.max_sectors = BUF_BYTES / 512;
    p.basic.dev_sectors = info->size_bytes / 512;
    int min_shift = log2_exact(info->chunk_bytes), opt_shift = log2_exact(info->chunk_bytes * (data ? data : 1));
    p.basic.io_min_shift = (uint8_t)(min_shift >= 12 ? min_shift : 12);
    p.basic.io_opt_shift = (uint8_t)(opt_shift >= 12 ? opt_shift : p.basic.io_min_shift);
    if (min_shift >= 0 && opt_shift < 0)
        fprintf(stderr, "uraid serve: a full stripe of %llu bytes is no power of two; /dev/ublkb%u announces "
                        "the chunk as optimal I/O size (ublk takes powers of two): give mkfs.ext4 -E stripe_width=%llu\n",
                (unsigned long long)info->chunk_bytes * data, d->info.dev_id,
                (unsigned long long)(info->chunk_bytes * data / 4096));
    p.discard.discard_granularity = 4096;
    p.discard.max_discard_sectors = 1u << 16;
    p.discard.max_write_zeroes_sectors = 1u << 16;
    p.discard.max_discard_segments = 1;
    free(info);
    return ctrl_cmd(d, UBLK_CMD_SET_PARAMS, (uint64_t)(uintptr_t)&p, sizeof p, 0);
}

/* Without udev nobody waits for the node: devtmpfs makes it shortly. */
static int open_cdev(struct ublk_dev *d)
{
    char path[64];
    snprintf(path, sizeof path, "/dev/ublkc%u", d->info.dev_id);
    for (int i = 0; i < 100; i++) {
        d->cdev_fd = open(path, O_RDWR | O_CLOEXEC);
        if (d->cdev_fd >= 0 || errno != ENOENT)
            break;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (d->cdev_fd < 0) {
        int e = -errno;
        cli_error("serve", "cannot open %s: %s", path, strerror(errno));
        return e;
    }
    return 0;
}

/* Before the array is opened: without ublk nothing is written. */
static int ctrl_open(struct ublk_dev *d)
{
    d->ctrl_fd = open("/dev/ublk-control", O_RDWR | O_CLOEXEC);
    if (d->ctrl_fd < 0) {
        cli_error("serve", "/dev/ublk-control: %s (ublk needs Linux 6.0+ with CONFIG_BLK_DEV_UBLK: modprobe ublk_drv, as root)",
                  strerror(errno));
        return -1;
    }
    int r = io_uring_queue_init(4, &d->ring, IORING_SETUP_SQE128);
    if (r) {
        cli_error("serve", "io_uring with 128-byte entries: %s (needs Linux 5.19+)", strerror(-r));
        return -1;
    }
    return 0;
}

/* A server killed before its DEL_DEV leaves the device number taken (the
 * disk gone, /dev/ublkcN still there). When its server is dead, delete it
 * so that --id N can be used again; 0 when it was removed. */
static int remove_leftover(struct ublk_dev *d)
{
    struct ublksrv_ctrl_dev_info old = {0};
    int r = ctrl_cmd(d, UBLK_CMD_GET_DEV_INFO, (uint64_t)(uintptr_t)&old, sizeof old, 0);
    if (r < 0)
        return -EEXIST;
    if (old.ublksrv_pid > 0 && (kill(old.ublksrv_pid, 0) == 0 || errno != ESRCH))
        return -EEXIST; /* its server lives: perhaps just starting */
    if (old.state == UBLK_S_DEV_QUIESCED)
        return -EAGAIN; /* the disk waits for a server: deleting it would fail its queued I/O */
    if (old.state != UBLK_S_DEV_DEAD)
        return -EEXIST;
    r = ctrl_cmd(d, UBLK_CMD_DEL_DEV, 0, 0, 0);
    if (r < 0)
        return r;
    /* the driver forgets the pid once the disk is gone */
    fprintf(stderr, "uraid serve: removed ublk device %u, left behind by a server that died\n", d->info.dev_id);
    return 0;
}

static int add_dev(struct ublk_dev *d, const struct ublk_opts *o)
{
    d->info.nr_hw_queues = (uint16_t)(o->nr_queues > 0 ? o->nr_queues : DEFAULT_QUEUES);
    d->info.queue_depth = (uint16_t)(o->depth > 0 ? o->depth : DEFAULT_DEPTH);
    d->info.max_io_buf_bytes = BUF_BYTES;
    d->info.dev_id = o->dev_id >= 0 ? (uint32_t)o->dev_id : (uint32_t)-1;
    d->info.ublksrv_pid = getpid();
    /* a killed server leaves the disk in place, its I/O queued (and what
     * it had in hand requeued) until serve --recover takes it back */
    d->info.flags = UBLK_F_CMD_IOCTL_ENCODE | UBLK_F_USER_RECOVERY | UBLK_F_USER_RECOVERY_REISSUE;
    int r = ctrl_cmd(d, UBLK_CMD_ADD_DEV, (uint64_t)(uintptr_t)&d->info, sizeof d->info, 0);
    if (r == -EEXIST && o->dev_id >= 0 && (r = remove_leftover(d)) == 0)
        r = ctrl_cmd(d, UBLK_CMD_ADD_DEV, (uint64_t)(uintptr_t)&d->info, sizeof d->info, 0);
    if (r < 0) {
        if (r == -EAGAIN)
            cli_error("serve", "/dev/ublkb%d was left by a server that died and waits for a new one: "
                               "serve it with --ublk --id %d --recover and the same members",
                      o->dev_id, o->dev_id);
        else if (r == -EEXIST)
            cli_error("serve", "ublk device %d exists already and its server runs: give another --id or none",
                      o->dev_id);
        else
            cli_error("serve", "ublk ADD_DEV: %s", strerror(-r));
        return -1;
    }
    d->added = 1;
    return 0;
}

/* --recover, before the array is opened: the device a killed server left
 * (QUIESCED, its server dead), taken over with the queues and depth it was
 * made with; its size in *sectors. */
static int recover_check(struct ublk_dev *d, const struct ublk_opts *o, uint64_t *sectors)
{
    d->info.dev_id = (uint32_t)o->dev_id;
    int r = ctrl_cmd(d, UBLK_CMD_GET_DEV_INFO, (uint64_t)(uintptr_t)&d->info, sizeof d->info, 0);
    if (r < 0) {
        cli_error("serve", "--recover: no ublk device %d (%s)", o->dev_id, strerror(-r));
        return -1;
    }
    int pid = d->info.ublksrv_pid;
    if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH)) {
        cli_error("serve", "--recover: the server of /dev/ublkb%d (pid %d) still runs", o->dev_id, pid);
        return -1;
    }
    if (d->info.state != UBLK_S_DEV_QUIESCED || !(d->info.flags & UBLK_F_USER_RECOVERY)) {
        cli_error("serve", "--recover: ublk device %d is not waiting for a server (state %s): serve it without --recover",
                  o->dev_id, d->info.state == UBLK_S_DEV_LIVE ? "live" : "stopped");
        return -1;
    }
    struct ublk_params p = {.len = sizeof p};
    r = ctrl_cmd(d, UBLK_CMD_GET_PARAMS, (uint64_t)(uintptr_t)&p, sizeof p, 0);
    if (r < 0) {
        cli_error("serve", "--recover: ublk GET_PARAMS of device %d: %s", o->dev_id, strerror(-r));
        return -1;
    }
    *sectors = p.basic.dev_sectors;
    return 0;
}

/* --recover, with the array open: the members must be the array the
 * device was made of (its size at least), then the driver forgets the dead
 * server's queues. */
static int recover_begin(struct ublk_dev *d, struct uraid_array *a, uint64_t sectors)
{
    struct uraid_array_info *info = calloc(1, sizeof *info);
    int r = info ? uraid_get_info(a, info) : -ENOMEM;
    uint64_t have = r ? 0 : info->size_bytes / 512;
    free(info);
    if (r || have != sectors) {
        if (r)
            cli_error("serve", "--recover: %s", strerror(-r));
        else
            cli_error("serve", "--recover: /dev/ublkb%u has %llu sectors, this array %llu: other members?",
                      d->info.dev_id, (unsigned long long)sectors, (unsigned long long)have);
        return -1;
    }
    /* busy until the dead server's rings and /dev/ublkcN are released */
    for (int i = 0; i < 100; i++) {
        r = ctrl_cmd(d, UBLK_CMD_START_USER_RECOVERY, 0, 0, 0);
        if (r != -EBUSY)
            break;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    /* EINVAL: an earlier --recover got this far and failed later; the
     * queues are reset already and take new fetches */
    if (r < 0 && r != -EINVAL) {
        cli_error("serve", "ublk START_USER_RECOVERY of device %u: %s", d->info.dev_id, strerror(-r));
        return -1;
    }
    return 0;
}

static int start_queues(struct ublk_dev *d, struct uraid_array *a)
{
    for (int i = 0; i < d->info.nr_hw_queues; i++) {
        struct ublk_queue *q = &d->q[i];
        *q = (struct ublk_queue){.a = a, .cdev_fd = d->cdev_fd, .q_id = i, .depth = d->info.queue_depth,
                                 .buf_bytes = d->info.max_io_buf_bytes};
        int r = ublk_queue_init(q);
        if (!r)
            r = ublk_queue_start(q);
        if (r) {
            cli_error("serve", "ublk queue %d: %s", i, strerror(-r));
            return -1;
        }
    }
    return 0;
}

/* Everything up from ADD_DEV, whatever got that far. */
static void teardown(struct ublk_dev *d, int started)
{
    if (started) {
        /* with user recovery STOP_DEV fails the writeback it triggers:
         * write the page cache back while the queues serve */
        char path[64];
        snprintf(path, sizeof path, "/dev/ublkb%u", d->info.dev_id);
        int bfd = open(path, O_RDONLY | O_CLOEXEC);
        if (bfd >= 0) {
            if (fsync(bfd))
                cli_error("serve", "fsync %s: %s", path, strerror(errno));
            close(bfd);
        }
        int r = ctrl_cmd(d, UBLK_CMD_STOP_DEV, 0, 0, 0);
        if (r < 0)
            cli_error("serve", "ublk STOP_DEV of /dev/ublkb%u: %s", d->info.dev_id, strerror(-r));
    }
    for (int i = 0; i < MAX_QUEUES; i++)
        ublk_queue_finish(&d->q[i]);
    if (d->cdev_fd >= 0)
        close(d->cdev_fd);
    /* DEL_DEV waits until /dev/ublkcN is closed: hence after the queues */
    if (d->added) {
        int r = ctrl_cmd(d, UBLK_CMD_DEL_DEV, 0, 0, 0);
        if (r < 0)
            cli_error("serve", "ublk DEL_DEV of device %u: %s", d->info.dev_id, strerror(-r));
    }
    if (d->ring.ring_fd > 0)
        io_uring_queue_exit(&d->ring);
    if (d->ctrl_fd >= 0)
        close(d->ctrl_fd);
}

static void on_ctl_stop(void *ctx)
{
    kill(getpid(), SIGTERM);
}

static int wait_for_stop(const sigset_t *set)
{
    for (;;) {
        int sig = sigwaitinfo(set, NULL);
        if (sig > 0)
            return sig;
    }
}

int ublk_serve(const struct cli_members *mem, const struct uraid_open_params *op, const struct ublk_opts *o)
{
    if (o->nr_queues > MAX_QUEUES || o->depth > UBLK_MAX_QUEUE_DEPTH) {
        cli_error("serve", "at most %d queues of depth %d", MAX_QUEUES, UBLK_MAX_QUEUE_DEPTH);
        return 2;
    }
    /* the kernel's writeback may wait on us: our allocations must not wait
     * on writeback (root only) */
    if (prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) && errno != EPERM && errno != EINVAL)
        cli_error("serve", "warning: PR_SET_IO_FLUSHER: %s", strerror(errno));
    /* blocked before any thread exists, so only sigwaitinfo below sees them */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, &old);

    struct ublk_dev *d = calloc(1, sizeof *d);
    if (!d) {
        cli_error("serve", "out of memory");
        return 1;
    }
    d->ctrl_fd = d->cdev_fd = -1;
    d->ring.ring_fd = -1;
    struct uraid_array *a;
    /* a taken --id is refused before the array is opened for writing */
    uint64_t rec_sectors = 0;
    if (ctrl_open(d) || (o->recover ? recover_check(d, o, &rec_sectors) : add_dev(d, o)) ||
        cli_open_array("serve", mem, op, &a)) {
        teardown(d, 0);
        free(d);
        return 1;
    }
    int status = 1, started = 0, r = 0;
    struct uraid_ctl *ctl = NULL;
    if (o->recover ? recover_begin(d, a, rec_sectors) : (r = set_params(d, a)) < 0) {
        if (!o->recover)
            cli_error("serve", "ublk SET_PARAMS: %s", strerror(-r));
        goto out;
    }
    if (open_cdev(d) || start_queues(d, a))
        goto out;
    /* returns once every queue has fetched all its tags; END_USER_RECOVERY
     * then also reissues the I/O the dead server left */
    unsigned cmd = o->recover ? UBLK_CMD_END_USER_RECOVERY : UBLK_CMD_START_DEV;
    if ((r = ctrl_cmd(d, cmd, 0, 0, (uint64_t)getpid())) < 0) {
        cli_error("serve", "ublk %s: %s", o->recover ? "END_USER_RECOVERY" : "START_DEV", strerror(-r));
        goto out;
    }
    d->added = started = 1;
    char why[512];
    if (o->control && uraid_ctl_start(a, o->control, on_ctl_stop, NULL, &ctl, why, sizeof why)) {
        cli_error("serve", "control socket %s: %s", o->control, why);
        goto out;
    }
    printf("/dev/ublkb%u\n", d->info.dev_id);
    fflush(stdout);
    fprintf(stderr, "uraid serve: /dev/ublkb%u%s (%d members, %u queues of depth %u%s%s; SIGINT/SIGTERM stops)\n",
            d->info.dev_id, o->recover ? " recovered" : "", mem->n, d->info.nr_hw_queues, d->info.queue_depth, o->control ? ", control " : "",
            o->control ? o->control : "");
    wait_for_stop(&set);
    status = 0;
out:
    if (ctl)
        uraid_ctl_stop(ctl);
    teardown(d, started);
    free(d);
    if (uraid_close(a) && !status) {
        cli_error("serve", "closing the array failed: its members may not be marked clean");
        status = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return status;
}
#endif
