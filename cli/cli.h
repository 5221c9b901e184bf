/* Shared helpers for the uraid command: every verb lives in its own
 * cmd_<verb>.c and is listed in the table in uraid.c. */
#ifndef URAID_CLI_H
#define URAID_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "uraid.h"

/* Options every verb accepts before or after its own (parsed in uraid.c):
 * -v/--verbose, --parity NAME. */
struct cli_globals {
    int verbose;
    const char *parity;
};
extern struct cli_globals cli;

/* Prints "uraid VERB: message" on stderr (one line). */
void cli_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses "4096", "64K", "1M", "2G" (powers of 1024) into bytes. Returns 0 or -EINVAL. */
int cli_parse_size(const char *text, uint64_t *bytes);

/* Formats bytes as "64K", "1M", ... (exact when possible). */
const char *cli_format_size(uint64_t bytes, char *buf, size_t len);

/* Applies --parity / URAID_PARITY and runs the parity selection; prints a
 * one-line error and returns non-zero if the forced routine cannot run. */
int cli_setup_parity(const char *verb);

int cmd_selftest(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif
