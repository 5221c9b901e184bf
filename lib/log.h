/* Internal logging: modules report through the callback installed with
 * uraid_set_log(); the library itself never prints. */
#ifndef URAID_LOG_H
#define URAID_LOG_H

#include "uraid.h"

void uraid_log(enum uraid_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int uraid_log_enabled(enum uraid_log_level level);

/* Formats a one-line reason into why (when why is not NULL and whylen > 0):
 * the message a refusal hands back to the caller. */
void uraid_why(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* uraid_why, then rc: a refusal's one line and its errno in one call. The
 * arguments may point into why (the line is formatted aside first). */
int uraid_refuse(char *why, size_t whylen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
