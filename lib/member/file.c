/* Regular files and block devices through pread/pwrite. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "member/member.h"

struct file_priv {
    int fd;
};

static int file_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    struct file_priv *f = m->priv;
    uint8_t *p = buf;
    while (len) {
        ssize_t r = pread(f->fd, p, len, (off_t)off);
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

static int file_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    struct file_priv *f = m->priv;
    const uint8_t *p = buf;
    if (m->readonly)
        return -EROFS;
    while (len) {
        ssize_t r = pwrite(f->fd, p, len, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static int file_flush(struct member *m)
{
    struct file_priv *f = m->priv;
    if (m->readonly)
        return 0;
    return fdatasync(f->fd) ? -errno : 0;
}

static void file_close(struct member *m)
{
    struct file_priv *f = m->priv;
    close(f->fd);
    free(f);
}

static const struct member_ops file_ops = {
    .kind = "file",
    .read = file_read,
    .write = file_write,
    .flush = file_flush,
    .close = file_close,
};

int member_open_file(const char *path, int readonly, struct member **out)
{
    int fd = open(path, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
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
    m->ops = &file_ops;
    m->path = name;
    m->size = size;
    m->readonly = readonly;
    m->priv = f;
    *out = m;
    return 0;
}

void member_close(struct member *m)
{
    if (!m)
        return;
    m->ops->close(m);
    free(m->path);
    free(m);
}
