/* Regular files and block devices through pread/pwrite.
 *
 * Two descriptors per member: a buffered one that always works, and an
 * O_DIRECT one when the filesystem or device accepts it. A request whose
 * buffer address, length and offset are all multiples of the member's
 * alignment goes through O_DIRECT (no page-cache copy, no double caching of
 * member data the array already caches); anything else, such as a
 * 4-KiB superblock read into a stack buffer, goes through the page cache.
 * Mixing the two on one file is coherent in Linux: a direct read first
 * writes back dirty cached pages of its range and a direct write invalidates
 * them. Only concurrent overlapping requests could race, and the array's
 * stripe locks never issue those. */
#include <errno.h>
#include <stdio.h>
#include <sys/sysmacros.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "member/member.h"

struct file_priv {
    int fd;        /* buffered; always open */
    int dfd;       /* O_DIRECT, or -1 when the filesystem refuses it */
    size_t align;  /* O_DIRECT alignment of buffer, length and offset (a power of two) */
    int no_dsync;  /* atomic: pwritev2 refused RWF_DSYNC once */
};

/* The descriptor for one transfer: O_DIRECT only when everything is aligned
 * (the kernel returns EINVAL otherwise). Asked again on every loop iteration,
 * so a short direct transfer that leaves the rest misaligned finishes buffered. */
static int pick_fd(const struct file_priv *f, const void *buf, size_t len, uint64_t off)
{
    uint64_t mask = f->align - 1;
    if (f->dfd >= 0 && len && !(((uintptr_t)buf | len | off) & mask))
        return f->dfd;
    return f->fd;
}

static int file_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    struct file_priv *f = m->priv;
    uint8_t *p = buf;
    while (len) {
        ssize_t r = pread(pick_fd(f, p, len, off), p, len, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0) /* past the end of a file: the member is shorter than recorded */
            return -EIO;
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* pwrite, or with flags (RWF_DSYNC) pwritev2: the whole range or an error. */
static int write_all(struct file_priv *f, const uint8_t *p, size_t len, uint64_t off, int flags)
{
    while (len) {
        struct iovec iov = {.iov_base = (void *)p, .iov_len = len};
        int fd = pick_fd(f, p, len, off);
        ssize_t r = flags ? pwritev2(fd, &iov, 1, (off_t)off, flags) : pwrite(fd, p, len, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0) /* a device refusing to grow: never loop forever */
            return -ENOSPC;
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static int file_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    if (m->readonly)
        return -EROFS;
    return write_all(m->priv, buf, len, off, 0);
}

static int file_flush(struct member *m);

/* RWF_DSYNC: the kernel makes this write durable (a FUA write to the
 * device, or a flush where it has no FUA; on a filesystem, the file's
 * metadata the write needs too) before it returns, without writing back
 * the file's other dirty pages. A kernel without it (before 4.7, EINVAL or
 * EOPNOTSUPP) gets a write and fdatasync. */
static int file_write_fua(struct member *m, const void *buf, size_t len, uint64_t off)
{
    struct file_priv *f = m->priv;
    if (m->readonly)
        return -EROFS;
    int rc = __atomic_load_n(&f->no_dsync, __ATOMIC_RELAXED) ? -EOPNOTSUPP : write_all(f, buf, len, off, RWF_DSYNC);
    if (rc != -EOPNOTSUPP && rc != -EINVAL && rc != -ENOSYS)
        return rc;
    __atomic_store_n(&f->no_dsync, 1, __ATOMIC_RELAXED);
    rc = write_all(f, buf, len, off, 0);
    return rc ? rc : file_flush(m);
}

static int file_direct_fd(struct member *m, const void *buf, size_t len, uint64_t off, int write)
{
    /* A read-only member has no writable descriptor: -1 sends the write to
     * file_write, which refuses it with -EROFS. */
    if (write && m->readonly)
        return -1;
    return pick_fd(m->priv, buf, len, off);
}

static int file_flush(struct member *m)
{
    struct file_priv *f = m->priv;
    if (m->readonly)
        return 0;
    return fdatasync(f->fd) ? -errno : 0;
}

/* Files get a hole (the blocks are given back, as a thin image wants);
 * a filesystem without holes answers EOPNOTSUPP and gets zeros written. */
static int file_zero(struct member *m, size_t len, uint64_t off)
{
    struct file_priv *f = m->priv;
    if (m->readonly)
        return -EROFS;
    if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
        return 0;
    return errno == ENOSYS ? -EOPNOTSUPP : -errno;
}

static int blockdev_zero(struct member *m, size_t len, uint64_t off)
{
    struct file_priv *f = m->priv;
    if (m->readonly)
        return -EROFS;
    uint64_t range[2] = {off, len};
    if (ioctl(f->fd, BLKZEROOUT, range) == 0)
        return 0;
    return errno == ENOTTY || errno == EINVAL ? -EOPNOTSUPP : -errno;
}

static void file_close(struct member *m)
{
    struct file_priv *f = m->priv;
    if (f->dfd >= 0)
        close(f->dfd);
    close(f->fd);
    free(f);
}

static const struct member_ops file_ops = {
    .kind = "file",
    .read = file_read,
    .write = file_write,
    .flush = file_flush,
    .close = file_close,
    .direct_fd = file_direct_fd,
    .zero = file_zero,
    .write_fua = file_write_fua,
};

static const struct member_ops blockdev_ops = {
    .kind = "blockdev",
    .read = file_read,
    .write = file_write,
    .flush = file_flush,
    .close = file_close,
    .direct_fd = file_direct_fd,
    .zero = blockdev_zero,
    .write_fua = file_write_fua,
};

/* The alignment O_DIRECT needs on this member, or 0 when the filesystem
 * says it has no O_DIRECT for this file. Block devices report their logical
 * block size; filesystems that know report it through statx (Linux 6.1+);
 * others get the classic 512 and the probe in open_direct decides. */
static size_t direct_align(int fd, int blockdev)
{
    size_t a = 512;
    if (blockdev) {
        int lbs = 0;
        if (!ioctl(fd, BLKSSZGET, &lbs) && lbs > 0)
            a = (size_t)lbs;
    }
#ifdef STATX_DIOALIGN
    struct statx sx;
    if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) && (sx.stx_mask & STATX_DIOALIGN)) {
        if (!sx.stx_dio_offset_align && !blockdev)
            return 0; /* the filesystem says: no O_DIRECT for this file */
        if (sx.stx_dio_offset_align > a)
            a = sx.stx_dio_offset_align;
        if (sx.stx_dio_mem_align > a)
            a = sx.stx_dio_mem_align;
    }
#endif
    /* One alignment for buffer, length and offset keeps pick_fd trivial; the
     * array's chunk I/O is page-aligned anyway. */
    size_t p2 = 512;
    while (p2 < a)
        p2 <<= 1;
    return p2;
}

/* Opens the O_DIRECT descriptor if the filesystem accepts it and an aligned
 * read through it really works (some filesystems accept the flag at open and
 * fail every request with EINVAL). Returns -1 when O_DIRECT is unusable. */
static int memory_backed(int fd)
{
    struct statfs fs;
    return fstatfs(fd, &fs) == 0 && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
}

/* 1 when the block device holding fd (or fd itself, a block device) is
 * rotational, as its queue says in sysfs (a partition's queue is its disk's). */
static int rotational(const struct stat *st)
{
    dev_t dev = S_ISBLK(st->st_mode) ? st->st_rdev : st->st_dev;
    char path[96];
    for (int up = 0; up < 2; up++) {
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u/%squeue/rotational", major(dev), minor(dev),
                 up ? "../" : "");
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        int c = fgetc(f);
        fclose(f);
        return c == '1';
    }
    return 0;
}

static int open_direct(const char *path, int flags, int fd, int blockdev, size_t *align)
{
    /* On tmpfs and ramfs the page cache is the storage: O_DIRECT saves no
     * copy there, and it makes io_uring hand every request to its worker
     * threads (a context switch each) instead of completing it inline. */
    if (!blockdev && memory_backed(fd))
        return -1;
    size_t a = direct_align(fd, blockdev);
    if (!a)
        return -1;
    int dfd = open(path, flags | O_DIRECT);
    if (dfd < 0)
        return -1; /* EINVAL from a filesystem without O_DIRECT (older tmpfs): buffered only */
    /* The path was opened twice: both must be the same file, or a rename in
     * between would split one member across two files. */
    struct stat a_st, b_st;
    if (fstat(fd, &a_st) || fstat(dfd, &b_st) || a_st.st_dev != b_st.st_dev || a_st.st_ino != b_st.st_ino ||
        a_st.st_rdev != b_st.st_rdev) {
        close(dfd);
        return -1;
    }
    void *probe = NULL;
    if (posix_memalign(&probe, a, a)) {
        close(dfd);
        return -1;
    }
    ssize_t r;
    do
        r = pread(dfd, probe, a, 0);
    while (r < 0 && errno == EINTR);
    free(probe);
    if (r < 0) {
        close(dfd);
        return -1;
    }
    *align = a;
    return dfd;
}

int member_open_file(const char *path, int readonly, struct member **out)
{
    int flags = (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC;
    int fd = open(path, flags);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st)) {
        int e = -errno;
        close(fd);
        return e;
    }
    uint64_t size;
    if (S_ISREG(st.st_mode)) {
        size = (uint64_t)st.st_size;
    } else if (S_ISBLK(st.st_mode)) {
        if (ioctl(fd, BLKGETSIZE64, &size)) {
            int e = -errno;
            close(fd);
            return e;
        }
    } else {
        close(fd);
        return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    }
    struct member *m = calloc(1, sizeof *m);
    struct file_priv *f = calloc(1, sizeof *f);
    char *name = strdup(path);
    if (!m || !f || !name) {
        free(m);
        free(f);
        free(name);
        close(fd);
        return -ENOMEM;
    }
    f->fd = fd;
    f->align = 512;
    f->dfd = open_direct(path, flags, fd, S_ISBLK(st.st_mode), &f->align);
    m->ops = S_ISBLK(st.st_mode) ? &blockdev_ops : &file_ops;
    m->path = name;
    m->size = size;
    m->readonly = readonly;
    m->inline_io = !S_ISBLK(st.st_mode) && memory_backed(fd);
    m->seeks = !m->inline_io && rotational(&st);
    m->priv = f;
    *out = m;
    return 0;
}

int member_zero(struct member *m, size_t len, uint64_t off)
{
    if (m->readonly)
        return -EROFS;
    int rc = m->ops->zero ? m->ops->zero(m, len, off) : -EOPNOTSUPP;
    if (rc != -EOPNOTSUPP)
        return rc;
    /* aligned, so the O_DIRECT descriptor takes it */
    static const uint8_t zeros[256 << 10] __attribute__((aligned(4096)));
    for (size_t done = 0; done < len && rc == 0;) {
        size_t n = len - done < sizeof zeros ? len - done : sizeof zeros;
        rc = member_write(m, zeros, n, off + done);
        done += n;
    }
    return rc == -EOPNOTSUPP ? -EIO : rc;
}

void member_close(struct member *m)
{
    if (!m)
        return;
    m->ops->close(m);
    free(m->path);
    free(m);
}
