/* The FUSE front-end (fuse/fuse_server.c): an open array served through
 * FUSE as DIR/array and DIR/status. Built when libfuse3 is present. */
#ifndef URAID_FUSE_SERVER_H
#define URAID_FUSE_SERVER_H

#include <stddef.h>

#include "uraid.h"

struct fuse_server;

/* Mounts the open array `a` on dir and installs the handlers that make
 * SIGTERM, SIGINT and SIGHUP end the loop. Returns 0, or a negative errno
 * with one line in why. The array stays the caller's. */
int fuse_server_mount(struct uraid_array *a, const char *dir, struct fuse_server **out, char *why, size_t whylen);

/* Serves requests on up to 16 worker threads until the file system is
 * unmounted or a stop signal arrives. Returns 0 or a negative errno. */
int fuse_server_loop(struct fuse_server *s);

/* Removes the signal handlers, unmounts and frees s (not the array). */
void fuse_server_unmount(struct fuse_server *s);

#endif
