#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>

static const char *suite_name = "test";
static uint64_t seed;
static int passed, failed, skipped;
static const char *current;
static int current_failures;
static int total_check_failures;
static int orphan_failures; /* CHECKs failed outside any case */

void harness_init(int argc, char **argv, const char *suite)
{
    suite_name = suite;
    const char *env = getenv("URAID_TEST_SEED");
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--seed"))
            env = argv[i + 1];
    if (env && *env)
        seed = strtoull(env, NULL, 0);
    else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
    }
    printf("%s: seed %llu (replay with URAID_TEST_SEED=%llu)\n", suite, (unsigned long long)seed,
           (unsigned long long)seed);
    fflush(stdout);
}

uint64_t harness_seed(void) { return seed; }

void harness_begin(const char *name)
{
    /* a case left open would have its failures reset below and pass */
    if (current)
        harness_end();
    current = name;
    current_failures = 0;
}

void harness_beginf(const char *fmt, ...)
{
    static char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    harness_begin(name);
}

int harness_run(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, len - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void harness_skip(const char *why)
{
    if (current && current_failures) {
        harness_end();
        return;
    }
    if (!current)
        return;
    skipped++;
    printf("skip %s: %s\n", current, why);
    fflush(stdout);
    current = NULL;
    current_failures = 0;
}

void harness_end(void)
{
    if (!current)
        return; /* no case open (ended by harness_skip): failures outside cases count at the finish */
    if (current_failures) {
        failed++;
        printf("FAIL %s\n", current);
    } else {
        passed++;
        printf("ok   %s\n", current);
    }
    fflush(stdout);
    current = NULL;
    current_failures = 0;
}

void harness_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    total_check_failures++;
    current_failures++;
    if (!current)
        orphan_failures++;
    /* Only the first few messages of a case: one bug can fail thousands of checks. */
    if (current_failures > 5)
        return;
    va_list ap;
    va_start(ap, fmt);
    printf("  %s:%d: [%s] CHECK(%s) ", file, line, current ? current : "?", cond);
    vprintf(fmt, ap);
    printf(" (seed %llu)\n", (unsigned long long)seed);
    va_end(ap);
}

int harness_finish(void)
{
    if (current)
        harness_end();
    /* a failed CHECK outside any case (setup, teardown) fails the run too */
    if (orphan_failures) {
        failed++;
        printf("FAIL %d check(s) outside any case\n", orphan_failures);
    }
    if (skipped)
        printf("%s: %d skipped (not counted as passed)\n", suite_name, skipped);
    printf("%s: %d passed, %d failed\n", suite_name, passed, failed);
    return failed ? 1 : 0;
}

void rng_fill(struct rng *r, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len >= 8) {
        uint64_t v = rng_next(r);
        memcpy(p, &v, 8);
        p += 8;
        len -= 8;
    }
    if (len) {
        uint64_t v = rng_next(r);
        memcpy(p, &v, len);
    }
}

int harness_check_failures(void)
{
    return total_check_failures;
}
