#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static uraid_log_fn log_fn;
static void *log_ctx;
static enum uraid_log_level log_max = URAID_LOG_WARN;

void uraid_set_log(uraid_log_fn fn, void *ctx, enum uraid_log_level max_level)
{
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_ctx = ctx;
    log_max = max_level;
    pthread_mutex_unlock(&log_lock);
}

int uraid_log_enabled(enum uraid_log_level level)
{
    pthread_mutex_lock(&log_lock);
    int on = log_fn && level <= log_max;
    pthread_mutex_unlock(&log_lock);
    return on;
}

void uraid_log(enum uraid_log_level level, const char *fmt, ...)
{
    pthread_mutex_lock(&log_lock);
    uraid_log_fn fn = log_fn;
    void *ctx = log_ctx;
    int on = fn && level <= log_max;
    pthread_mutex_unlock(&log_lock);
    if (!on)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fn(ctx, level, msg);
}

void uraid_why(char *why, size_t whylen, const char *fmt, ...)
{
    if (!why || !whylen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
}

int uraid_refuse(char *why, size_t whylen, int rc, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    uraid_why(why, whylen, "%s", line);
    return rc;
}

const char *uraid_strerror(int err)
{
    if (err >= 0)
        return "success";
    return strerror(-err);
}

const char *uraid_version(void) { return "0.1.0"; }
