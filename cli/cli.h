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

/* A background-work speed limit per member: a plain number is KiB/s (md's
 * sync_speed_max unit), a number with a suffix is bytes/s (150M). Prints
 * a one-line error and returns -1 when it is not one. */
int cli_parse_speed(const char *verb, const char *text, uint64_t *kib);

/* Formats bytes as "64K", "1M", ... (exact when possible). */
const char *cli_format_size(uint64_t bytes, char *buf, size_t len);

/* Applies --parity / URAID_PARITY and runs the parity selection; prints a
 * one-line error and returns non-zero if the forced routine cannot run. */
int cli_setup_parity(const char *verb);

int cmd_selftest(int argc, char **argv);
int cmd_rebuild(int argc, char **argv);
int cmd_replace(int argc, char **argv);
int cmd_add_offline(int argc, char **argv);
int cmd_resync(int argc, char **argv);

/* The control socket of a serving array when no --control PATH is given:
 * $URAID_CONTROL, else the only socket in URAID_CTL_DEFAULT_DIR. Returns
 * 0, or an exit status after a one-line error (none, or several). */
int cli_default_control(const char *verb, char *out, size_t len);
/* Where a serving array's control socket goes by default:
 * URAID_CTL_DEFAULT_DIR/<uuid as hex>.sock, the directory made (0700) if
 * need be. NULL when it cannot be made or written (serving does not
 * depend on it). */
const char *cli_default_socket_of(struct uraid_array *a, char *buf, size_t len);

/* Waits for the array's background job, showing its progress on stderr;
 * SIGINT/SIGTERM cancel the job (cli_interrupted() then says so). Returns
 * the job's result and its final status in out (may be NULL). */
int cli_wait_job(const char *verb, struct uraid_array *a, struct uraid_job_status *out);
int cli_interrupted(void);

/* A progress line on stderr: redrawn in place on a terminal, printed as
 * "uraid VERB: line" every few seconds otherwise. */
struct cli_progress {
    int tty;
    int64_t last_ms;
    size_t width;
};
void cli_progress_init(struct cli_progress *p);
void cli_progress_show(struct cli_progress *p, const char *verb, const char *line);
void cli_progress_end(struct cli_progress *p);
int cmd_bench(int argc, char **argv);
/* An array named by who it is rather than by its members (--uuid, --name,
 * --scan): the members are then found among devices, globs and URIs by
 * their superblocks (cli_discover). Filled by cli_parse_members. */
struct cli_identity {
    int has_uuid;
    uint8_t uuid[16];
    const char *name;
    int scan;             /* --scan: the array and its devices come from the config file */
    const char *config;   /* --config FILE (NULL: URAID_CONF_DEFAULT) */
    int level;            /* from the config's level=; -100 when not known */
    int raid_devices;     /* from its num-devices=; 0 when not known */
    int conf_line;        /* the config line these came from, 0 for none */
};

struct cli_members {
    int n;
    const char *path[URAID_MAX_MEMBERS];
    struct cli_identity id;
    int by_identity;      /* the paths were found by cli_discover */
    /* --member-layer SPEC (every member) or --member-layer MEMBER:SPEC */
    const char *layer_all;
    int nlayers;
    const char *layer_arg[URAID_MAX_MEMBERS];
    const char *sim[URAID_MAX_MEMBERS];   /* per path, built by cli_parse_members */
    char sim_text[URAID_MAX_MEMBERS][256];
    int rmw_level;        /* --rmw-level N, -1 when not given (cli_open_array applies it) */
};

/* A verb's own options, parsed before the shared ones: parse() returns 1 if
 * it consumed argv[*i] (advancing *i past any value), 0 if not its option,
 * -1 after printing an error. */
struct cli_extra {
    int (*parse)(const char *verb, int argc, char **argv, int *i, void *ctx);
    void *ctx;
    const char *usage;
};

/* Parses [--force] [extra options] MEMBER... Returns 0, -1 when --help was
 * printed (exit 0), or an exit status after a one-line error. */
int cli_parse_members(const char *verb, int argc, char **argv, struct cli_members *mem,
                      struct uraid_open_params *op, const struct cli_extra *extra);

/* Candidates for members: every path a glob matches, "partitions" (each
 * device of /proc/partitions), NBD URIs and paths as given, each file or
 * device once, each examined (read-only). */
struct cli_found {
    char *path;
    int named;            /* given as such, not found by a glob or "partitions" */
    int ok;               /* carries an md superblock (why says otherwise) */
    char why[320];
    uint8_t uuid[16];
    char name[33];
    int level, raid_devices, role;
    uint64_t events;
    char metadata[8];     /* mdadm.conf's metadata=: 1.2, 1.1, 1.0 or 0.90 */
    int md_minor;         /* 0.90's preferred minor (its arrays have no name), else -1 */
};
/* Returns how many (in *out, cli_found_free them), or -1 after a one-line error. */
int cli_scan_candidates(const char *verb, const char *const *pattern, int npattern, struct cli_found **out);
void cli_found_free(struct cli_found *f, int n);

/* Reads and parses a config file (include/uraid_conf.h); *out is malloc'd.
 * Returns 0 or 1 after a one-line error naming the file (and line). */
struct uraid_conf;
int cli_load_conf(const char *verb, const char *path, struct uraid_conf **out);

/* Finds the members of the array id names among the patterns (none: the
 * config file's devices= or DEVICE lines for it), leaving out with one
 * line each the members of other arrays and the stale ones (events
 * behind), and puts them in mem->path in slot order, spares last.
 * Returns 0 or an exit status after a one-line error. */
int cli_discover(const char *verb, struct cli_identity *id, const char *const *pattern, int npattern,
                 struct cli_members *mem);

/* Runs the parity selection and opens the array; prints the one-line reason
 * on failure and returns non-zero. */
int cli_open_array(const char *verb, const struct cli_members *mem, const struct uraid_open_params *op,
                   struct uraid_array **out);

int cli_write_all(int fd, const void *buf, size_t len);

int cmd_create(int argc, char **argv);
int cmd_grow(int argc, char **argv);
int cmd_examine(int argc, char **argv);
int cmd_detail(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_write(int argc, char **argv);
/* cmd_salvage.c: exit 0 all recovered, 3 sectors lost, 1 error, 2 usage */
int cmd_salvage(int argc, char **argv);
/* cmd_control.c: requests to a serving array's control socket */
int cmd_status(int argc, char **argv);
int cmd_fail(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_add(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_rmw_level(int argc, char **argv);
int cmd_idle(int argc, char **argv);
int cmd_frozen(int argc, char **argv);
int cmd_serve(int argc, char **argv);
/* cmd_assemble.c: find an array's members by UUID, name or config, then serve it */
int cmd_assemble(int argc, char **argv);
/* cmd_monitor.c: mdadm --monitor over the control sockets of serving arrays */
int cmd_monitor(int argc, char **argv);
/* cmd_check.c: check and repair (exit 3 when mismatches are found/left) */
int cmd_check(int argc, char **argv);
int cmd_repair(int argc, char **argv);
int cmd_mount(int argc, char **argv);

void cli_print_uuid(const uint8_t *u);
const char *cli_human_size(uint64_t bytes, char *buf, size_t len);
const char *cli_time(uint64_t secs, char *buf, size_t len);


#endif
