/* The member backend interface: one small vtable, shaped like an nbdkit
 * plugin, so layers (fault injection, throttling) can stack on any backend.
 *
 * Offsets and lengths are in bytes. read/write transfer the whole range or
 * fail: they return 0 or a negative errno (-EIO for a medium error, -ENXIO
 * when the member has gone away). Every call may come from any thread and
 * calls on one member may run concurrently. */
#ifndef URAID_MEMBER_H
#define URAID_MEMBER_H

#include <stddef.h>
#include <stdint.h>

struct member;

struct member_ops {
    const char *kind; /* "file", "blockdev", ... */
    int (*read)(struct member *m, void *buf, size_t len, uint64_t offset);
    int (*write)(struct member *m, const void *buf, size_t len, uint64_t offset);
    int (*flush)(struct member *m);
    void (*close)(struct member *m);
};

struct member {
    const struct member_ops *ops;
    char *path;          /* as the user named it, for messages */
    uint64_t size;       /* bytes */
    int readonly;
    void *priv;          /* the backend's state */
};

/* Opens a regular file or block device. Returns 0 or a negative errno
 * (-ENOENT, -EACCES, -EISDIR for a directory, -EBUSY ...). */
int member_open_file(const char *path, int readonly, struct member **out);

static inline int member_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    return m->ops->read(m, buf, len, off);
}

static inline int member_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    return m->ops->write(m, buf, len, off);
}

static inline int member_flush(struct member *m) { return m->ops->flush(m); }

void member_close(struct member *m);

#endif
