/* liburaid: a user-space RAID engine that keeps the Linux md on-disk format.
 *
 * Conventions for every call in liburaid:
 *   - Functions return 0 (or a count where documented) on success and a
 *     negative errno on failure. uraid_strerror() names uraid's own codes.
 *   - The library never prints. Messages go to the log callback set with
 *     uraid_set_log(); without one they are dropped.
 *   - Sizes are in bytes unless a name ends in _sectors (512-byte units).
 */
#ifndef URAID_H
#define URAID_H

#include <stdarg.h>

#include "uraid_parity.h"

#ifdef __cplusplus
extern "C" {
#endif

enum uraid_log_level { URAID_LOG_ERROR = 0, URAID_LOG_WARN = 1, URAID_LOG_INFO = 2, URAID_LOG_DEBUG = 3 };

typedef void (*uraid_log_fn)(void *ctx, enum uraid_log_level level, const char *message);

/* Installs a process-wide log callback (NULL removes it). Messages above
 * max_level are not formatted. Thread-safe; the callback may be called from
 * any thread and must not call back into liburaid. */
void uraid_set_log(uraid_log_fn fn, void *ctx, enum uraid_log_level max_level);

/* Text for a negative return value (errno or uraid-specific). */
const char *uraid_strerror(int err);

/* Version string of the library. */
const char *uraid_version(void);

#ifdef __cplusplus
}
#endif
#endif
