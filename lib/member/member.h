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

/* A request started with member_ops.submit: done(a, rc) is called exactly
 * once when it ends (rc 0 or a negative errno), from any thread, possibly
 * before submit returns. ctx is the caller's. */
struct member_aio {
    void (*done)(struct member_aio *a, int rc);
    void *ctx;
};

/* MEMBER_AIO_FLUSH: what member_flush does (buf, len and offset unused).
 * MEMBER_AIO_WRITE_FUA: a write that is durable when it completes (NBD's
 * FUA flag), one round trip instead of a write and a flush. */
enum member_aio_kind {
    MEMBER_AIO_READ = 0,
    MEMBER_AIO_WRITE = 1,
    MEMBER_AIO_ZERO = 2,
    MEMBER_AIO_FLUSH = 3,
    MEMBER_AIO_WRITE_FUA = 4,
};
/* Or'd into submit's kind: more requests of the same batch follow on this
 * member, the backend may hold this one until the last (Linux's plugging),
 * so that it sees adjacent requests together and can merge them. The last
 * one of the batch on the backend (any member with the same submit; NBD
 * serves all its members from one thread) comes without it. */
#define MEMBER_AIO_PLUG 0x100

struct member_ops {
    const char *kind; /* "file", "blockdev", ... */
    int (*read)(struct member *m, void *buf, size_t len, uint64_t offset);
    int (*write)(struct member *m, const void *buf, size_t len, uint64_t offset);
    int (*flush)(struct member *m);
    void (*close)(struct member *m);
    /* Optional: a file descriptor the I/O engine may hand to io_uring for
     * this exact request (the backend decides, e.g. an O_DIRECT descriptor
     * only for aligned buffers), or -1 to go through read/write. Layers
     * (fault, throttle) leave it NULL so every request passes through them. */
    int (*direct_fd)(struct member *m, const void *buf, size_t len, uint64_t offset, int write);
    /* Optional: the range reads as zeros afterwards without a data transfer
     * (a hole punched in a file, BLKZEROOUT on a device). -EOPNOTSUPP, or
     * NULL, makes member_zero write zeros instead. */
    int (*zero)(struct member *m, size_t len, uint64_t offset);
    /* Optional: starts a request (enum member_aio_kind; buf unused for a
     * zero) and returns without waiting, so that one thread can have a
     * whole batch in flight on a member with a round trip per request (NBD).
     * 0: started, a->done will be called. A negative errno: not started
     * (too large, not offered), a->done will not be called, and the caller
     * runs it through read/write/zero instead. */
    int (*submit)(struct member *m, int kind, void *buf, size_t len, uint64_t offset, struct member_aio *a);
    /* Optional: a write that is durable when it returns (md's REQ_FUA):
     * that write only, not the writes before it that no flush has covered
     * yet. NULL: member_write_fua writes, then flushes. */
    int (*write_fua)(struct member *m, const void *buf, size_t len, uint64_t offset);
};

struct member {
    const struct member_ops *ops;
    char *path;          /* as the user named it, for messages */
    uint64_t size;       /* bytes */
    int readonly;
    int inline_io;       /* requests cost a memcpy and never block (tmpfs, ramfs):
                          * the I/O engine runs them on the caller's thread, as a
                          * hand-off to another thread would cost more than the copy */
    int seeks;           /* moving to another offset costs time (a rotational
                          * disk, a file on one, the disk model with a head):
                          * the array reads streams ahead only from such members
                          * (readahead.c); elsewhere that would add a copy */
    int write_through;   /* no volatile write cache: a completed write is on the
                          * medium (the disk model). The PPL then never flushes
                          * it, as md flushes only members whose queue says
                          * "write back" (raid5-ppl.c's wb_cache_on). 0, the
                          * safe default, for files (the page cache) and every
                          * layer that keeps writes in memory (power cut) */
    int power_sim;       /* a power-cut layer is this one or below it: its cut
                          * keeps only what flushes covered, so nothing above
                          * it may claim write_through */
    void *priv;          /* the backend's state */
};

/* Opens a member by name: an NBD URI (member_is_nbd_uri) through the NBD
 * backend, anything else as a file or block device. Returns 0 or a negative
 * errno. member_open_why also puts a one-line reason (without the name) in
 * why: libnbd's words for a URI that does not parse or connect. */
int member_open(const char *name, int readonly, struct member **out);
int member_open_why(const char *name, int readonly, struct member **out, char *why, size_t whylen);

/* Opens a regular file or block device. Returns 0 or a negative errno
 * (-ENOENT, -EACCES, -EISDIR for a directory, -EBUSY ...). */
int member_open_file(const char *path, int readonly, struct member **out);

/* 1 if name is an NBD URI (nbd://, nbds://, nbd+unix://, nbd+vsock://,
 * nbds+unix:// ...: the schemes of the NBD URI spec). */
int member_is_nbd_uri(const char *name);

/* Opens an NBD export (lib/member/nbd.c) named by a URI as libnbd's
 * nbd_connect_uri reads it: nbd://HOST[:PORT][/EXPORT],
 * nbd+unix:///[EXPORT]?socket=PATH, nbds:// with TLS, optionally followed
 * by member options (member_nbd_options): "URI,timeout=5s". Many requests
 * in flight per connection (libnbd's asynchronous calls, driven by one
 * thread per member), on up to 4 connections (URAID_NBD_CONNECTIONS) when
 * the server allows multi-conn, else one.
 * Returns 0; -EROFS for a read-only export opened for writing; the connect
 * errno (-ECONNREFUSED, -ENOENT, -EINVAL for a malformed URI or option,
 * -ETIMEDOUT ...); -EPROTONOSUPPORT when built without libnbd.
 * Read/write/flush/zero return -EIO for an error the server reports; a lost
 * connection is reopened and its requests sent again as long as each is
 * younger than the timeout; a request unanswered for longer fails the
 * member: -ENXIO from then on, for good (md's semantics: it comes back only
 * by being added again, which opens it anew). zero is the server's
 * write-zeroes when it offers one. */
int member_open_nbd(const char *uri, int readonly, struct member **out, char *why, size_t whylen);

/* The options after an NBD member's URI (lib/member/spec.c):
 *   "nbd://host/export,timeout=5s"   fail the member when a request has
 *                                    had no answer for 5 s (0: never);
 *                                    30 s when not given, as Linux's nbd
 * Copies the URI without them into uri (urilen bytes). Returns 0, or
 * -EINVAL (an unknown key, a bad value) / -E2BIG with a reason in why. */
#define NBD_DEFAULT_TIMEOUT_MS 30000u
struct nbd_member_opts {
    uint32_t timeout_ms; /* 0: no timeout */
};
int member_nbd_options(const char *name, char *uri, size_t urilen, struct nbd_member_opts *o, char *why,
                       size_t whylen);

static inline int member_read(struct member *m, void *buf, size_t len, uint64_t off)
{
    return m->ops->read(m, buf, len, off);
}

static inline int member_write(struct member *m, const void *buf, size_t len, uint64_t off)
{
    return m->ops->write(m, buf, len, off);
}

static inline int member_flush(struct member *m) { return m->ops->flush(m); }

/* A write durable when it returns (member_ops.write_fua): one request where
 * the member has FUA (NBD's flag, RWF_DSYNC on a file), else the write and
 * a flush. It is not a flush: earlier writes may still be in a cache. */
static inline int member_write_fua(struct member *m, const void *buf, size_t len, uint64_t off)
{
    if (m->ops->write_fua)
        return m->ops->write_fua(m, buf, len, off);
    int rc = member_write(m, buf, len, off);
    return rc ? rc : member_flush(m);
}

void member_close(struct member *m);

/* Makes [off, off + len) read as zeros: the backend's zero op where it has
 * one, else zeros written in pieces. Returns 0 or a negative errno. */
int member_zero(struct member *m, size_t len, uint64_t off);

/* File descriptor for io_uring, or -1 (see member_ops.direct_fd). */
static inline int member_direct_fd(struct member *m, const void *buf, size_t len, uint64_t off, int write)
{
    return m->ops->direct_fd ? m->ops->direct_fd(m, buf, len, off, write) : -1;
}

/* ---- Layers for tests, benchmarks and simulation (stack on any member) ----
 * Each wrap takes ownership of `inner` (closing the layer closes it) and
 * keeps inner's path and size. */

/* Fault injection (lib/member/fault.c). Rules apply to byte ranges:
 * reads and/or writes there fail with `err`, or writes there are silently
 * dropped (reported as success, data not written). */
/* FAULT_HEAL (with FAULT_READ): the part of the range a successful write
 * covers reads again, as a disk remaps a pending sector when written. */
/* FAULT_STALL_WRITE: writes there wait until the rules are cleared
 * (member_fault_clear), as a request a disk holds: a test stops one write
 * of a request in flight while the rest of the array goes on. */
enum fault_what { FAULT_READ = 1, FAULT_WRITE = 2, FAULT_DROP_WRITE = 4, FAULT_HEAL = 8, FAULT_STALL_WRITE = 16 };

struct fault_rule {
    unsigned what;          /* FAULT_* bits */
    uint64_t start, len;    /* bytes on the member */
    int err;                /* negative errno for FAULT_READ/WRITE (default -EIO) */
};

int member_fault_wrap(struct member *inner, struct member **out);
/* Runtime control (thread-safe; m must be a fault layer, else -EINVAL). */
int member_fault_add(struct member *m, const struct fault_rule *r);
int member_fault_clear(struct member *m);
int member_fault_vanish(struct member *m);            /* every later call fails -ENXIO */
int member_fault_latency(struct member *m, uint32_t usec); /* added to every request */
/* Counts of requests the layer failed, dropped or stalled (for tests). */
uint64_t member_fault_hits(struct member *m);

/* Throttling (lib/member/throttle.c): a simulated disk. Each request costs
 * latency + positioning + len / bytes_per_sec. A disk with a head (seek_usec
 * or rpm not 0) pays, for a request not starting where the last one ended,
 *     1 ms + (seek - 1 ms) * sqrt(distance / member size) + half a turn
 * (track-to-track is 1 ms, or seek when smaller) and serves one request at a
 * time: in arrival order with qd 1, nearest-first among the qd oldest
 * waiting with qd > 1 (NCQ). A disk without a head serves qd requests at
 * once, their transfers sharing the bandwidth. */
#define DISK_QD_MAX 256
struct disk_model {
    uint64_t bytes_per_sec; /* 0 = unlimited */
    uint32_t latency_usec;  /* every request */
    uint32_t seek_usec;     /* full stroke; 0 = no seek */
    uint32_t rpm;           /* 0 = no rotation */
    uint32_t qd;            /* 1..DISK_QD_MAX */
};
int member_disk_wrap(struct member *inner, const struct disk_model *d, struct member **out);
/* "hdd-7200", "hdd-5400", "sata-ssd", "nvme" (parameters and their sources
 * in throttle.c); -ENOENT for another name. */
int member_disk_preset(const char *name, struct disk_model *out);
/* member_disk_wrap with only a bandwidth and a latency, qd 1. */
int member_throttle_wrap(struct member *inner, uint64_t bytes_per_sec, uint32_t latency_usec, struct member **out);

/* Applies a layer spec from the command line (lib/member/spec.c), wrapping
 * *m in place:
 *   "throttle=60M"            60 MB/s (K/M/G are powers of 1000 for rates)
 *   "throttle=150M,latency=100us"
 *   "disk=hdd-7200,qd=32"     a preset of the disk model, keys override it
 *   "seek=15ms,rpm=7200,throttle=180M"
 *   "latency=2ms"
 *   "read-eio=1M+64K"         reads of bytes [1 MiB, 1 MiB + 64 KiB) fail with EIO
 *   "write-eio=0+4K", "drop-writes=8M+1M", "vanish"
 *   "badmap=d1.map"           a GNU ddrescue mapfile (ddrescue.h): reads of
 *                             every byte not rescued ('+') fail with EIO
 *   "powercut=pd,seed=7,after=500,keep=33,tear=33"
 *                             a power-cut simulation in domain pd (powercut.h):
 *                             at the cut (here the 500th member write of the
 *                             domain) each write not yet flushed is kept,
 *                             torn at sector granularity or dropped
 * Several specs are separated by ';'. Returns 0, or -EINVAL (or the errno of
 * opening a mapfile) with a one-line reason in why. */
int member_apply_spec(struct member **m, const char *spec, char *why, size_t whylen);

/* One --member-layer argument: "SPEC" for every member or "MEMBER:SPEC" for
 * the member of that name (a name may contain ':', as NBD URIs do). Appends
 * SPEC, joined by ';', to texts[i] (n strings of textlen bytes each, the
 * form uraid_open_params.member_sim takes). Returns 0, -ENOENT when the
 * part before ':' names no member, -E2BIG when a text would overflow; why
 * says which. */
int member_layer_add(const char *arg, const char *const *names, int n, char *texts, size_t textlen, char *why,
                     size_t whylen);

#endif
