/* Minimal test harness: CHECK() records a failure with file:line and a
 * message, test binaries end with harness_finish(), which prints the closing
 * line "N passed, N failed" and returns the exit status.
 * Randomised tests take their seed from harness_seed(): URAID_TEST_SEED (or
 * argv "--seed N") replays a run; the seed is always printed. */
#ifndef URAID_TEST_HARNESS_H
#define URAID_TEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>

void harness_init(int argc, char **argv, const char *suite);
uint64_t harness_seed(void);
int harness_finish(void);

/* One named test case: passes if no CHECK inside it failed. */
void harness_begin(const char *name);
/* The same with a printf-made name (kept until the next one). */
void harness_beginf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void harness_end(void);
/* Ends the current case as skipped (a check this machine cannot run): it
 * prints "skip NAME: why" and counts as neither passed nor failed; a case
 * that already failed a CHECK ends failed. A harness_end() after it does
 * nothing. */
void harness_skip(const char *why);

/* Runs a shell command, its output (stdout, NUL-terminated, cut to fit) in
 * out; returns its exit status, or -1 if it did not exit. */
int harness_run(const char *cmd, char *out, size_t len);

/* CHECKs failed so far in the run (a test counting which step failed). */
int harness_check_failures(void);

void harness_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* CHECK(condition) or CHECK(condition, "printf format", args...). */
#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond))                                                      \
            harness_fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__);      \
    } while (0)

/* Deterministic PRNG (xorshift64*) so a seed replays a run exactly. */
struct rng { uint64_t s; };
static inline uint64_t rng_next(struct rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}
static inline uint64_t rng_below(struct rng *r, uint64_t n) { return rng_next(r) % n; }
static inline void rng_seed(struct rng *r, uint64_t seed) { r->s = seed ? seed : 0x9e3779b97f4a7c15ull; }
void rng_fill(struct rng *r, void *buf, size_t len);

#endif
