/* Internal logging: modules report through the callback installed with
 * uraid_set_log(); the library itself never prints. */
#ifndef URAID_LOG_H
#define URAID_LOG_H

#include "uraid.h"

void uraid_log(enum uraid_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int uraid_log_enabled(enum uraid_log_level level);

#endif
