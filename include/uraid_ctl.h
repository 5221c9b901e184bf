/* The control socket of a serving array (issue 5): one process owns an
 * array; other `uraid` commands act on it through a Unix socket.
 *
 * Protocol: one request line, one response, then the server closes the
 * connection. Requests (text, '\n'-terminated, at most 4096 bytes):
 *   status             -> "ok\n" + the status text (like /proc/mdstat + mdadm --detail)
 *   fail MEMBER        -> mark the member (path as given at open) faulty
 *   remove MEMBER      -> forget a faulty or spare member
 *   add MEMBER         -> open MEMBER and keep it as a spare; a member that
 *                         left this array goes back into its slot when the
 *                         write-intent bitmap covers it (md's re-add: only
 *                         dirty chunks rebuilt), the "ok" then followed by
 *                         one line saying so, or saying why it is a spare
 *                         for a full rebuild instead
 *   stop               -> ask the owner to stop serving (clean shutdown)
 *   check              -> start a check in the background (md's sync_action
 *                         "check"): count and list parity mismatches
 *   repair             -> start a repair (sync_action "repair"): as check, and
 *                         rewrite the one wrong block of each mismatch
 *   idle               -> stop the running background job (sync_action "idle";
 *                         "ok" also when nothing runs); a recovery or resync
 *                         the array needs starts again from its checkpoint;
 *                         on a frozen array: thaw it
 *   frozen             -> stop the running job and start none by itself
 *                         (sync_action "frozen") until idle, check or repair
 *   findings           -> "ok\n" + the last check's or repair's findings, one
 *                         line each (uraid_findings_text); nothing when none
 * Progress and the result of check/repair are the "background:" line (the
 * last line) of the status text.
 * Responses start with "ok" or "error: <one line>". Malformed requests get an
 * error and never stop the server. Only root or the socket's owner may
 * connect (SO_PEERCRED), and the socket file is created 0600. */
#ifndef URAID_CTL_H
#define URAID_CTL_H

#include <stddef.h>
#include <stdint.h>

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
URAID_API int uraid_ctl_start(struct uraid_array *a, const char *path, void (*on_stop)(void *ctx), void *ctx,
                              struct uraid_ctl **out, char *why, size_t whylen);

/* Stops the control thread and removes the socket file. */
URAID_API void uraid_ctl_stop(struct uraid_ctl *c);

/* Client side: sends one request and returns the response in buf (NUL-
 * terminated). Returns 0, or a negative errno (-ENOENT/-ECONNREFUSED when
 * no server listens). */
URAID_API int uraid_ctl_request(const char *path, const char *request, char *buf, size_t buflen);

/* The status text of an array (what "status" returns, and DIR/status of a
 * FUSE mount): state, [n/m] [UU_U], members, counters, background work. */
URAID_API int uraid_status_text(struct uraid_array *a, char *buf, size_t buflen);

/* The findings of the current or last check/repair, one line each, e.g.
 * "stripe 5: member /srv/d2.img sector 2176 (slot 2), 8 sectors: data block
 * wrong, repaired" (the sector counts from the start of the member file).
 * Returns 0, or -ENOBUFS when buf was too small (the lines that fit are
 * there, each complete), -ENOMEM. */
URAID_API int uraid_findings_text(struct uraid_array *a, char *buf, size_t buflen);

/* One finding as such a line (without a newline): path and data offset of
 * the member in f->slot (path NULL or "" when the finding names no member);
 * repair: the finding comes from a repair (says what was not repaired). */
URAID_API void uraid_finding_line(const struct uraid_finding *f, const char *path, uint64_t data_offset_sectors,
                                  int repair, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
