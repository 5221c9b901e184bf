/* The FUSE front-end: an open array served as DIR/array (one file, the
 * array's size) and DIR/status (read-only text), so the kernel can use it:
 * `losetup --direct-io=on -f --show DIR/array`. `uraid mount` (cli/
 * cmd_mount.c) opens the array, forks and detaches, and runs the control
 * socket; this module only translates FUSE requests.
 *
 * A thin front-end (DESIGN.md "thin front-ends"): every request is
 * translated into uraid_read / uraid_write / uraid_write_zeroes /
 * uraid_flush; nothing is decided here. The low-level libfuse API is used
 * rather than fuse_main because the high-level one mallocs a buffer (and a
 * path string) for every read, and the I/O path must not allocate once warm:
 * each FUSE worker thread keeps one aligned buffer for its whole life.
 * Compiled against include/ only, like every front-end. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)
#include <fuse_lowlevel.h>

#include "fuse_server.h"
#include "uraid_ctl.h"

enum { INO_ROOT = 1, INO_ARRAY = 2, INO_STATUS = 3 };
#define SECTOR URAID_SECTOR
/* Largest request the kernel sends (FUSE_MAX_MAX_PAGES = 256 pages) plus the
 * two edge sectors of a misaligned one. */
#define IOBUF_SIZE ((1u << 20) + 2 * 4096u)

struct fuse_server {
    struct uraid_array *a;
    /* Misaligned writes read-modify-write their edge sectors; they take this
     * exclusively so two of them sharing a sector (or an aligned write to
     * it) cannot interleave and lose bytes. Aligned writes share it. */
    pthread_rwlock_t rmw_lock;
    pthread_key_t buf_key;
    struct timespec mounted_at; /* every inode's times: nothing here has a history */
    struct fuse_session *se;
};

/* The calling worker's aligned buffer: allocated on its first request and
 * freed by the key's destructor when libfuse retires the thread. */
static uint8_t *thread_buf(struct fuse_server *m)
{
    uint8_t *b = pthread_getspecific(m->buf_key);
    if (!b) {
        if (posix_memalign((void **)&b, 4096, IOBUF_SIZE))
            return NULL;
        pthread_setspecific(m->buf_key, b);
    }
    return b;
}

/* Takes rmw_lock the way a request needs it: exclusively when it
 * read-modify-writes edge sectors, shared otherwise. */
static void lock_for_write(struct fuse_server *m, int misaligned)
{
    if (misaligned)
        pthread_rwlock_wrlock(&m->rmw_lock);
    else
        pthread_rwlock_rdlock(&m->rmw_lock);
}

/* DIR/status shows what `uraid status` shows (lib/ctl builds the text).
 * Returns the length, or -1. */
static int status_text(struct uraid_array *a, char *buf, size_t len)
{
    return uraid_status_text(a, buf, len) ? -1 : (int)strlen(buf);
}

#define STATUS_MAX 65536
/* How long the kernel may keep the array file's attributes: short, since a
 * served array may grow (uraid grow --size) and stat must then say so. */
#define ARRAY_ATTR_SECS 1.0

static int fill_attr(struct fuse_server *m, fuse_ino_t ino, struct stat *st)
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
        uint64_t size = uraid_size(m->a); /* not kept: a served array may grow (grow --size) */
        st->st_size = (off_t)size;
        st->st_blocks = (blkcnt_t)(size / 512);
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
    struct fuse_server *m = fuse_req_userdata(req);
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
    e.attr_timeout = e.ino == INO_ARRAY ? ARRAY_ATTR_SECS : 0.0;
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
        fuse_reply_attr(req, &st, ino == INO_STATUS ? 0.0 : ARRAY_ATTR_SECS);
}

/* The array is a fixed-size file: truncating it to its own size (what an
 * O_TRUNC open of a block-device-like file asks) is accepted, any other size
 * is refused rather than silently ignored. */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
    struct fuse_server *m = fuse_req_userdata(req);
    if (ino != INO_ARRAY) {
        fuse_reply_err(req, EPERM);
        return;
    }
    if ((to_set & FUSE_SET_ATTR_SIZE) && (uint64_t)attr->st_size != uraid_size(m->a)) {
        fuse_reply_err(req, EPERM);
        return;
    }
    struct stat st;
    fill_attr(m, ino, &st);
    fuse_reply_attr(req, &st, ARRAY_ATTR_SECS);
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
    struct fuse_server *m = fuse_req_userdata(req);
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
    struct fuse_server *m = fuse_req_userdata(req);
    if (ino == INO_STATUS) {
        const char *t = (const char *)(uintptr_t)fi->fh;
        size_t len = strlen(t);
        size_t o = (size_t)off < len ? (size_t)off : len;
        fuse_reply_buf(req, t + o, len - o < size ? len - o : size);
        return;
    }
    uint64_t uoff = (uint64_t)off, asize = uraid_size(m->a); /* read once: the array may grow meanwhile */
    if (uoff >= asize) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    if (size > asize - uoff)
        size = (size_t)(asize - uoff);
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
    struct fuse_server *m = fuse_req_userdata(req);
    uint64_t uoff = (uint64_t)off;
    if (ino != INO_ARRAY) {
        fuse_reply_err(req, EBADF);
        return;
    }
    if (size == 0) {
        fuse_reply_write(req, 0);
        return;
    }
    uint64_t asize = uraid_size(m->a); /* read once: the array may grow meanwhile */
    if (uoff >= asize) {
        fuse_reply_err(req, ENOSPC);
        return;
    }
    if (size > asize - uoff)
        size = (size_t)(asize - uoff); /* short write at the end, like a block device */
    uint64_t a0 = uoff & ~(uint64_t)(SECTOR - 1), a1 = (uoff + size + SECTOR - 1) & ~(uint64_t)(SECTOR - 1);
    int misaligned = a0 != uoff || a1 != uoff + size;
    uint8_t *b = thread_buf(m);
    if (!b || a1 - a0 > IOBUF_SIZE) {
        fuse_reply_err(req, b ? EINVAL : ENOMEM);
        return;
    }
    int rc = 0;
    lock_for_write(m, misaligned);
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
    struct fuse_server *m = fuse_req_userdata(req);
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
    uint64_t asize = uraid_size(m->a);
    if (uoff > asize || len > asize - uoff) {
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
    lock_for_write(m, misaligned);
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
    struct fuse_server *m = fuse_req_userdata(req);
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


int fuse_server_mount(struct uraid_array *a, const char *dir, struct fuse_server **out, char *why, size_t whylen)
{
    struct fuse_server *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    m->a = a;
    clock_gettime(CLOCK_REALTIME, &m->mounted_at);
    pthread_rwlock_init(&m->rmw_lock, NULL);
    pthread_key_create(&m->buf_key, free);
    char *fargv[] = {"uraid", "-ofsname=uraid,subtype=uraid", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(2, fargv);
    int rc = -EIO;
    m->se = fuse_session_new(&args, &mount_ops, sizeof mount_ops, m);
    if (!m->se) {
        snprintf(why, whylen, "cannot start a FUSE session");
        goto free_ctx;
    }
    if (fuse_session_mount(m->se, dir)) {
        snprintf(why, whylen, "cannot mount on %s (is /dev/fuse usable and fusermount3 installed?)", dir);
        goto destroy;
    }
    /* Handlers before anything can raise a stop (the control thread's
     * "stop" sends SIGTERM), so no stop ever meets the default action. */
    if (fuse_set_signal_handlers(m->se)) {
        snprintf(why, whylen, "cannot install signal handlers");
        fuse_session_unmount(m->se);
        goto destroy;
    }
    *out = m;
    return 0;
destroy:
    fuse_session_destroy(m->se);
free_ctx:
    pthread_key_delete(m->buf_key);
    pthread_rwlock_destroy(&m->rmw_lock);
    free(m);
    return rc;
}

int fuse_server_loop(struct fuse_server *m)
{
    struct fuse_loop_config *cfg = fuse_loop_cfg_create();
    if (!cfg)
        return -ENOMEM;
    /* workers stay alive between bursts so their buffers stay warm */
    fuse_loop_cfg_set_max_threads(cfg, 16);
    fuse_loop_cfg_set_idle_threads(cfg, 16);
    int rc = fuse_session_loop_mt(m->se, cfg);
    fuse_loop_cfg_destroy(cfg);
    return rc < 0 ? rc : 0;
}

void fuse_server_unmount(struct fuse_server *m)
{
    fuse_remove_signal_handlers(m->se);
    fuse_session_unmount(m->se);
    fuse_session_destroy(m->se);
    /* the loop has joined its workers: no thread uses the key or the lock */
    pthread_key_delete(m->buf_key);
    pthread_rwlock_destroy(&m->rmw_lock);
    free(m);
}
