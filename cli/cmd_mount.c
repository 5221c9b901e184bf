/* uraid mount MEMBERS... DIR: serves the array through FUSE as DIR/array (one
 * file, the array's size) and DIR/status (read-only text), so the kernel can
 * use it: `losetup --direct-io=on -f --show DIR/array`.
 *
 * A thin front-end (DESIGN.md "thin front-ends"): every request is
 * translated into uraid_read / uraid_write / uraid_flush; nothing is decided
 * here. The low-level libfuse API is used rather than fuse_main because the
 * high-level one mallocs a buffer (and a path string) for every read, and
 * the I/O path must not allocate once warm: each FUSE worker thread keeps
 * one aligned buffer for its whole life.
 *
 * Lifecycle: fork (unless --foreground) -> open the array in the child (the
 * engine's threads and io_uring rings would not survive a fork made after) ->
 * mount -> tell the waiting parent "ready" -> serve -> on unmount or
 * SIGTERM/SIGINT/SIGHUP leave the loop, unmount, close the array (which
 * writes the clean state). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "uraid_ctl.h"

#ifndef HAVE_FUSE3
int cmd_mount(int argc, char **argv)
{
    cli_error("mount", "this uraid was built without FUSE: install libfuse3-dev and fuse3 "
                       "(sh scripts/deps.sh) and rebuild with make");
    return 1;
}
#else

#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

enum { INO_ROOT = 1, INO_ARRAY = 2, INO_STATUS = 3 };
#define SECTOR 512u
/* Largest request the kernel sends (FUSE_MAX_MAX_PAGES = 256 pages) plus the
 * two edge sectors of a misaligned one. */
#define IOBUF_SIZE ((1u << 20) + 2 * 4096u)

struct mount_ctx {
    struct uraid_array *a;
    uint64_t size;
    /* Misaligned writes read-modify-write their edge sectors; they take this
     * exclusively so two of them sharing a sector (or an aligned write to
     * it) cannot interleave and lose bytes. Aligned writes share it. */
    pthread_rwlock_t rmw_lock;
    pthread_key_t buf_key;
    const char *control;
    struct timespec mounted_at; /* every inode's times: nothing here has a history */
};

/* The calling worker's aligned buffer: allocated on its first request and
 * freed by the key's destructor when libfuse retires the thread. */
static uint8_t *thread_buf(struct mount_ctx *m)
{
    uint8_t *b = pthread_getspecific(m->buf_key);
    if (!b) {
        if (posix_memalign((void **)&b, 4096, IOBUF_SIZE))
            return NULL;
        pthread_setspecific(m->buf_key, b);
    }
    return b;
}

/* DIR/status shows what `uraid status` shows (lib/ctl builds the text).
 * Returns the length, or -1. */
static int status_text(struct uraid_array *a, char *buf, size_t len)
{
    return uraid_status_text(a, buf, len) ? -1 : (int)strlen(buf);
}

#define STATUS_MAX 65536

static int fill_attr(struct mount_ctx *m, fuse_ino_t ino, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    st->st_mtim = st->st_ctim = st->st_atim = m->mounted_at;
    st->st_uid = getuid();
    st->st_gid = getgid();
    if (ino == INO_ROOT) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
    } else if (ino == INO_ARRAY) {
        st->st_mode = S_IFREG | 0600;
        st->st_nlink = 1;
        st->st_size = (off_t)m->size;
        st->st_blocks = (blkcnt_t)(m->size / 512);
        st->st_blksize = 4096;
    } else if (ino == INO_STATUS) {
        /* the real length, so tools that trust st_size read it all */
        char *t = malloc(STATUS_MAX);
        int n = t ? status_text(m->a, t, STATUS_MAX) : -1;
        free(t);
        if (n < 0)
            return -EIO;
        st->st_mode = S_IFREG | 0444;
        st->st_nlink = 1;
        st->st_size = n;
    } else {
        return -ENOENT;
    }
    return 0;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct mount_ctx *m = fuse_req_userdata(req);
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    if (parent != INO_ROOT)
        e.ino = 0;
    else if (!strcmp(name, "array"))
        e.ino = INO_ARRAY;
    else if (!strcmp(name, "status"))
        e.ino = INO_STATUS;
    if (!e.ino) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    int rc = fill_attr(m, e.ino, &e.attr);
    if (rc) {
        fuse_reply_err(req, -rc);
        return;
    }
    /* the array's attributes never change; the status length does */
    e.attr_timeout = e.ino == INO_ARRAY ? 3600.0 : 0.0;
    e.entry_timeout = 3600.0;
    fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct stat st;
    int rc = fill_attr(fuse_req_userdata(req), ino, &st);
    if (rc)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_attr(req, &st, ino == INO_STATUS ? 0.0 : 3600.0);
}

/* The array is a fixed-size file: truncating it to its own size (what an
 * O_TRUNC open of a block-device-like file asks) is accepted, any other size
 * is refused rather than silently ignored. */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
    struct mount_ctx *m = fuse_req_userdata(req);
    if (ino != INO_ARRAY) {
        fuse_reply_err(req, EPERM);
        return;
    }
    if ((to_set & FUSE_SET_ATTR_SIZE) && (uint64_t)attr->st_size != m->size) {
        fuse_reply_err(req, EPERM);
        return;
    }
    struct stat st;
    fill_attr(m, ino, &st);
    fuse_reply_attr(req, &st, 3600.0);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    if (ino != INO_ROOT) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    static const struct {
        const char *name;
        fuse_ino_t ino;
        mode_t mode;
    } ents[] = {{".", INO_ROOT, S_IFDIR}, {"..", INO_ROOT, S_IFDIR}, {"array", INO_ARRAY, S_IFREG},
                {"status", INO_STATUS, S_IFREG}};
    char buf[1024];
    size_t used = 0;
    for (size_t i = (size_t)off; i < sizeof ents / sizeof ents[0]; i++) {
        struct stat st = {.st_ino = ents[i].ino, .st_mode = ents[i].mode};
        size_t want = fuse_add_direntry(req, NULL, 0, ents[i].name, NULL, 0);
        if (used + want > size || used + want > sizeof buf)
            break;
        fuse_add_direntry(req, buf + used, sizeof buf - used, ents[i].name, &st, (off_t)(i + 1));
        used += want;
    }
    fuse_reply_buf(req, buf, used);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct mount_ctx *m = fuse_req_userdata(req);
    if (ino == INO_ROOT) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    /* direct_io: no page cache in front of the array (a loop device with
     * --direct-io=on would otherwise hold every block twice) */
    fi->direct_io = 1;
    if (ino == INO_ARRAY) {
        fi->keep_cache = 0;
        fuse_reply_open(req, fi);
        return;
    }
    if ((fi->flags & O_ACCMODE) != O_RDONLY) {
        fuse_reply_err(req, EACCES);
        return;
    }
    /* status: one snapshot per open, so a reader never sees two states mixed */
    char *t = malloc(STATUS_MAX);
    if (!t || status_text(m->a, t, STATUS_MAX) < 0) {
        free(t);
        fuse_reply_err(req, EIO);
        return;
    }
    fi->fh = (uint64_t)(uintptr_t)t;
    fuse_reply_open(req, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (ino == INO_STATUS)
        free((void *)(uintptr_t)fi->fh);
    fuse_reply_err(req, 0);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    struct mount_ctx *m = fuse_req_userdata(req);
    if (ino == INO_STATUS) {
        const char *t = (const char *)(uintptr_t)fi->fh;
        size_t len = strlen(t);
        size_t o = (size_t)off < len ? (size_t)off : len;
        fuse_reply_buf(req, t + o, len - o < size ? len - o : size);
        return;
    }
    uint64_t uoff = (uint64_t)off;
    if (uoff >= m->size) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    if (size > m->size - uoff)
        size = (size_t)(m->size - uoff);
    /* With direct_io the kernel passes the caller's offset and length
     * through unchanged (cat, head -c ...), so read the covering sectors and
     * reply from inside them. */
    uint64_t a0 = uoff & ~(uint64_t)(SECTOR - 1), a1 = (uoff + size + SECTOR - 1) & ~(uint64_t)(SECTOR - 1);
    uint8_t *b = thread_buf(m);
    if (!b || a1 - a0 > IOBUF_SIZE) {
        fuse_reply_err(req, b ? EINVAL : ENOMEM);
        return;
    }
    int rc = uraid_read(m->a, b, (size_t)(a1 - a0), a0);
    if (rc)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_buf(req, (const char *)b + (uoff - a0), size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    struct mount_ctx *m = fuse_req_userdata(req);
    uint64_t uoff = (uint64_t)off;
    if (ino != INO_ARRAY) {
        fuse_reply_err(req, EBADF);
        return;
    }
    if (size == 0) {
        fuse_reply_write(req, 0);
        return;
    }
    if (uoff >= m->size) {
        fuse_reply_err(req, ENOSPC);
        return;
    }
    if (size > m->size - uoff)
        size = (size_t)(m->size - uoff); /* short write at the end, like a block device */
    uint64_t a0 = uoff & ~(uint64_t)(SECTOR - 1), a1 = (uoff + size + SECTOR - 1) & ~(uint64_t)(SECTOR - 1);
    int misaligned = a0 != uoff || a1 != uoff + size;
    uint8_t *b = thread_buf(m);
    if (!b || a1 - a0 > IOBUF_SIZE) {
        fuse_reply_err(req, b ? EINVAL : ENOMEM);
        return;
    }
    int rc = 0;
    if (misaligned)
        pthread_rwlock_wrlock(&m->rmw_lock);
    else
        pthread_rwlock_rdlock(&m->rmw_lock);
    if (a0 != uoff)
        rc = uraid_read(m->a, b, SECTOR, a0);
    if (!rc && a1 != uoff + size && (a1 - SECTOR != a0 || a0 == uoff))
        rc = uraid_read(m->a, b + (a1 - SECTOR - a0), SECTOR, a1 - SECTOR);
    /* Always copied: FUSE's request buffer puts the data 80 bytes into a
     * page, and members only take the O_DIRECT path from aligned memory. */
    if (!rc) {
        memcpy(b + (uoff - a0), data, size);
        rc = uraid_write(m->a, b, (size_t)(a1 - a0), a0);
    }
    pthread_rwlock_unlock(&m->rmw_lock);
    if (rc)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_write(req, size);
}

/* Punching a hole or zeroing a range of DIR/array (what a loop device
 * sends for discard and write-zeroes: blkdiscard, fstrim, mkfs) zeroes it
 * in the array; whole stripes become holes in file members. The file's
 * size never changes, so plain allocation inside it is already done. */
static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t length,
                         struct fuse_file_info *fi)
{
    struct mount_ctx *m = fuse_req_userdata(req);
    uint64_t uoff = (uint64_t)off, len = (uint64_t)length;
    if (ino != INO_ARRAY) {
        fuse_reply_err(req, EBADF);
        return;
    }
    int zeroing = mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE);
    if (mode & ~(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE)) {
        fuse_reply_err(req, EOPNOTSUPP);
        return;
    }
    if (uoff > m->size || len > m->size - uoff) {
        fuse_reply_err(req, zeroing ? EINVAL : EFBIG); /* the array's size is fixed */
        return;
    }
    if (!zeroing || len == 0) {
        fuse_reply_err(req, 0);
        return;
    }
    /* the edge sectors a partial request touches are read, cleared in part and written */
    uint64_t a0 = (uoff + SECTOR - 1) & ~(uint64_t)(SECTOR - 1), a1 = (uoff + len) & ~(uint64_t)(SECTOR - 1);
    int misaligned = a0 != uoff || a1 != uoff + len;
    uint8_t *b = thread_buf(m);
    if (!b) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    int rc = 0;
    if (misaligned)
        pthread_rwlock_wrlock(&m->rmw_lock);
    else
        pthread_rwlock_rdlock(&m->rmw_lock);
    uint64_t edges[2][2] = {{uoff, a0 < uoff + len ? a0 : uoff + len}, {a1 > uoff ? a1 : uoff, uoff + len}};
    for (int e = 0; e < 2 && rc == 0; e++) {
        uint64_t from = edges[e][0], to = edges[e][1];
        if (from >= to || (e == 1 && edges[0][1] == to && edges[0][0] == from))
            continue;
        uint64_t sec = from & ~(uint64_t)(SECTOR - 1);
        rc = uraid_read(m->a, b, SECTOR, sec);
        if (rc == 0) {
            memset(b + (from - sec), 0, (size_t)(to - from));
            rc = uraid_write(m->a, b, SECTOR, sec);
        }
    }
    if (rc == 0 && a1 > a0)
        rc = uraid_write_zeroes(m->a, (size_t)(a1 - a0), a0);
    pthread_rwlock_unlock(&m->rmw_lock);
    fuse_reply_err(req, rc ? -rc : 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct mount_ctx *m = fuse_req_userdata(req);
    fuse_reply_err(req, ino == INO_ARRAY ? -uraid_flush(m->a) : 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    op_flush(req, ino, fi);
}

/* Requests must fit a worker's buffer with their two edge sectors; the
 * kernel never sends more than max_write (reads: its own 256-page limit,
 * which IOBUF_SIZE covers). */
static void op_init(void *userdata, struct fuse_conn_info *conn)
{
    if (conn->max_write > (1u << 20))
        conn->max_write = 1u << 20;
}

static const struct fuse_lowlevel_ops mount_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readdir = op_readdir,
    .open = op_open,
    .release = op_release,
    .read = op_read,
    .write = op_write,
    .flush = op_flush,
    .fsync = op_fsync,
    .fallocate = op_fallocate,
};

struct mount_opts {
    int foreground;
    const char *control;
    const char *event_cmd;
};

static int parse_mount_opt(const char *verb, int argc, char **argv, int *i, void *ctx)
{
    struct mount_opts *o = ctx;
    if (!strcmp(argv[*i], "--foreground") || !strcmp(argv[*i], "-F")) {
        o->foreground = 1;
        return 1;
    }
    if (!strcmp(argv[*i], "--control") || !strcmp(argv[*i], "--event-cmd")) {
        if (*i + 1 >= argc) {
            cli_error(verb, "%s needs a value", argv[*i]);
            return -1;
        }
        const char **dst = !strcmp(argv[*i], "--control") ? &o->control : &o->event_cmd;
        *dst = argv[++*i];
        return 1;
    }
    return 0;
}

static void log_to_syslog(void *ctx, enum uraid_log_level level, const char *msg)
{
    static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    syslog(prio[level], "%s", msg);
}

/* A control client's "stop": fuse_session_exit() alone only sets a flag the
 * loop's main thread checks when woken, so raise the signal that wakes it
 * and takes the same clean path as `kill -TERM`. */
static void on_ctl_stop(void *ctx)
{
    kill(getpid(), SIGTERM);
}

/* Without --control the socket goes where `uraid status/fail/...` look by
 * default (like `uraid serve`): URAID_CTL_DEFAULT_DIR/<uuid>.sock, only
 * when that directory can be made (root); serving must not depend on it. */
static const char *default_control(struct uraid_array *a, char *buf, size_t len)
{
    if ((mkdir(URAID_CTL_DEFAULT_DIR, 0700) && errno != EEXIST) || access(URAID_CTL_DEFAULT_DIR, W_OK))
        return NULL;
    static struct uraid_array_info info; /* ~80 KiB; called once, before any worker */
    if (uraid_get_info(a, &info))
        return NULL;
    int k = snprintf(buf, len, "%s/", URAID_CTL_DEFAULT_DIR);
    for (int i = 0; i < 16; i++)
        k += snprintf(buf + k, len - (size_t)k, "%02x", info.uuid[i]);
    snprintf(buf + k, len - (size_t)k, ".sock");
    return buf;
}

/* Runs in the process that serves (the child unless --foreground). `ready`
 * is the pipe to the waiting parent (-1 in the foreground): one byte is
 * written once the mount is up; errors before that go to stderr. */
static int serve(struct cli_members *mem, struct uraid_open_params *op, const char *dir, struct mount_opts *o,
                 int ready)
{
    /* PF_MEMALLOC_NOIO for this thread and every thread created after it
     * (engine workers, FUSE workers): the kernel's writeback may be waiting
     * on us, so our allocations must not wait on writeback. Root only. */
    if (prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) && errno != EPERM && errno != EINVAL)
        cli_error("mount", "warning: PR_SET_IO_FLUSHER: %s", strerror(errno));
    /* The engine's threads are created by uraid_open: keep the stop signals
     * away from them, so they reach the threads that can end the FUSE loop. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, &old);

    struct mount_ctx m = {.control = o->control};
    if (cli_open_array("mount", mem, op, &m.a))
        return 1;
    m.size = uraid_size(m.a);
    clock_gettime(CLOCK_REALTIME, &m.mounted_at);
    pthread_rwlock_init(&m.rmw_lock, NULL);
    pthread_key_create(&m.buf_key, free);

    char fsname[64];
    snprintf(fsname, sizeof fsname, "-ofsname=uraid,subtype=uraid");
    char *fargv[] = {"uraid", fsname, NULL};
    struct fuse_args args = FUSE_ARGS_INIT(2, fargv);
    int status = 1;
    struct fuse_session *se = fuse_session_new(&args, &mount_ops, sizeof mount_ops, &m);
    if (!se) {
        cli_error("mount", "cannot start a FUSE session");
        goto close_array;
    }
    if (fuse_session_mount(se, dir)) {
        cli_error("mount", "cannot mount on %s (is /dev/fuse usable and fusermount3 installed?)", dir);
        goto destroy;
    }
    /* Handlers before anything can raise a stop (the control thread's
     * "stop" sends SIGTERM), so no stop ever meets the default action. */
    if (fuse_set_signal_handlers(se)) {
        cli_error("mount", "cannot install signal handlers");
        goto unmount;
    }
    char default_ctl[128], why[512];
    const char *ctl_path = o->control ? o->control : default_control(m.a, default_ctl, sizeof default_ctl);
    struct uraid_ctl *ctl = NULL;
    /* started while the stop signals are still blocked: its thread keeps
     * them blocked too */
    if (ctl_path && uraid_ctl_start(m.a, ctl_path, on_ctl_stop, NULL, &ctl, why, sizeof why)) {
        cli_error("mount", "control socket %s: %s", ctl_path, why);
        fuse_remove_signal_handlers(se);
        goto unmount;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (ready >= 0) {
        /* detached like a mount helper: the parent reports success */
        uraid_set_log(log_to_syslog, NULL, cli.verbose ? URAID_LOG_INFO : URAID_LOG_WARN);
        openlog("uraid", LOG_PID, LOG_DAEMON);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
            if (null > 2)
                close(null);
        }
        if (chdir("/")) {
            /* nothing depends on the working directory any more */
        }
        char ok = 0;
        if (write(ready, &ok, 1) != 1) {
            /* parent gone: keep serving anyway */
        }
        close(ready);
    }
    struct fuse_loop_config *cfg = fuse_loop_cfg_create();
    /* workers stay alive between bursts so their buffers stay warm */
    fuse_loop_cfg_set_max_threads(cfg, 16);
    fuse_loop_cfg_set_idle_threads(cfg, 16);
    int rc = fuse_session_loop_mt(se, cfg);
    fuse_loop_cfg_destroy(cfg);
    status = rc < 0 ? 1 : 0;
    if (ctl)
        uraid_ctl_stop(ctl);
    fuse_remove_signal_handlers(se);
unmount:
    fuse_session_unmount(se);
destroy:
    fuse_session_destroy(se);
close_array:
    {
        int crc = uraid_close(m.a);
        if (crc) {
            cli_error("mount", "closing the array: %s", uraid_strerror(crc));
            status = 1;
        }
    }
    return status;
}

int cmd_mount(int argc, char **argv)
{
    struct cli_members mem;
    struct uraid_open_params op = {.auto_rebuild = 1}; /* a serving array rebuilds onto spares, as md does */
    struct mount_opts o = {0};
    struct cli_extra extra = {parse_mount_opt, &o, "[--control PATH] [--foreground] [--event-cmd PROG]"};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            /* the shared usage ends in MEMBER...; mount also takes DIR last */
            printf("usage: uraid mount [--force] [--member-layer [MEMBER:]SPEC] [--control PATH] [--foreground]\n"
                   "                   [--event-cmd PROG] MEMBER... DIR\n"
                   "  serves the array as DIR/array (a file of the array's size; reads and writes go to\n"
                   "  the array, fsync flushes it) and DIR/status (the array's state, read-only).\n"
                   "  Detaches once mounted unless --foreground; 'fusermount3 -u DIR' or SIGTERM\n"
                   "  stops serving and closes the array clean.\n"
                   "  --member-layer simulates disks and faults (see 'uraid detail --help').\n"
                   "  --event-cmd PROG runs 'PROG EVENT ARRAY [MEMBER]' on Fail, FailSpare, SpareActive,\n"
                   "  DegradedArray, RebuildStarted, RebuildFinished (mdadm --monitor's events).\n");
            return 0;
        }
    int rc = cli_parse_members("mount", argc, argv, &mem, &op, &extra);
    if (rc)
        return rc < 0 ? 0 : rc;
    op.event_program = o.event_cmd;
    if (mem.n < 2) {
        cli_error("mount", "need the members and a mount directory (uraid mount MEMBER... DIR)");
        return 2;
    }
    const char *dir_arg = mem.path[--mem.n];
    char dir[PATH_MAX];
    struct stat st;
    if (!realpath(dir_arg, dir) || stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        cli_error("mount", "%s is not a directory", dir_arg);
        return 2;
    }
    if (o.foreground)
        return serve(&mem, &op, dir, &o, -1);

    int pfd[2];
    if (pipe(pfd)) {
        cli_error("mount", "pipe: %s", strerror(errno));
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        cli_error("mount", "fork: %s", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        close(pfd[0]);
        setsid();
        _exit(serve(&mem, &op, dir, &o, pfd[1]));
    }
    close(pfd[1]);
    char ok;
    ssize_t n;
    do
        n = read(pfd[0], &ok, 1);
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    if (n == 1)
        return 0; /* mounted; the child serves on */
    int ws = 0;
    waitpid(pid, &ws, 0);
    return WIFEXITED(ws) && WEXITSTATUS(ws) ? WEXITSTATUS(ws) : 1;
}
#endif
