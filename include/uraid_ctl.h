/* The control socket of a serving array (issue 5): one process owns an
 * array; other `uraid` commands act on it through a Unix socket.
 *
 * Protocol: one request line, one response, then the server closes the
 * connection. Requests (text, '\n'-terminated, at most 4096 bytes):
 *   status             -> "ok\n" + the status text (like /proc/mdstat + mdadm --detail)
 *   fail MEMBER        -> mark the member (path as given at open) faulty
 *   remove MEMBER      -> forget a faulty or spare member
 *   add MEMBER         -> open MEMBER and keep it as a spare
 *   stop               -> ask the owner to stop serving (clean shutdown)
 * Responses start with "ok" or "error: <one line>". Malformed requests get an
 * error and never stop the server. Only root or the socket's owner may
 * connect (SO_PEERCRED), and the socket file is created 0600. */
#ifndef URAID_CTL_H
#define URAID_CTL_H

#include "uraid.h"

#ifdef __cplusplus
extern "C" {
#endif

struct uraid_ctl;

/* Default socket directory when a command gets no --control PATH. */
#define URAID_CTL_DEFAULT_DIR "/run/uraid"

/* Starts serving requests for array `a` on socket `path` in a background
 * thread. Refuses (-EADDRINUSE) a path where a live server answers; removes
 * a stale socket file left by a dead one. on_stop (may be NULL) is called
 * from the control thread when a client sends "stop". */
int uraid_ctl_start(struct uraid_array *a, const char *path, void (*on_stop)(void *ctx), void *ctx,
                    struct uraid_ctl **out, char *why, size_t whylen);

/* Stops the control thread and removes the socket file. */
void uraid_ctl_stop(struct uraid_ctl *c);

/* Client side: sends one request and returns the response in buf (NUL-
 * terminated). Returns 0, or a negative errno (-ENOENT/-ECONNREFUSED when
 * no server listens). */
int uraid_ctl_request(const char *path, const char *request, char *buf, size_t buflen);

/* The status text of an array (what "status" returns, and DIR/status of a
 * FUSE mount): state, [n/m] [UU_U], members, counters, background work. */
int uraid_status_text(struct uraid_array *a, char *buf, size_t buflen);

#ifdef __cplusplus
}
#endif
#endif
