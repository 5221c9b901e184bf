/* /etc/uraid.conf: mdadm.conf's syntax for what uraid uses of it (docs/
 * uraid.conf.5). A pure parser: it reads a buffer the caller has loaded,
 * does no I/O and keeps no state, so the fuzz target (tests/fuzz/
 * fuzz_conf.c) can drive it with any bytes.
 *
 * Syntax (mdadm.conf(5)): one keyword per logical line, a physical line
 * that starts with a space or tab continuing the one before; '#' at the
 * start of a word comments out the rest of the physical line; lines that
 * are blank or only a comment neither start nor end a logical line; words
 * are separated by blanks and may hold '...' or "..." quoted parts.
 * Keywords are case-insensitive and may be shortened to three letters or
 * more (the first in mdadm's order wins: MAI is MAILADDR). */
#ifndef URAID_CONF_H
#define URAID_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "uraid.h"

#ifdef __cplusplus
extern "C" {
#endif

#define URAID_CONF_DEFAULT "/etc/uraid.conf"
#define URAID_CONF_MAX_ARRAYS 64
#define URAID_CONF_MAX_DEVICES 128       /* words on DEVICE lines, all lines together */
#define URAID_CONF_MAX_ARRAY_DEVICES 64  /* entries of one devices= list */
#define URAID_CONF_ARENA 65536           /* bytes of all strings of one file */

struct uraid_conf_array {
    int line;                     /* physical line the ARRAY keyword is on */
    const char *devname;          /* first word when it is no tag (/dev/md0, /dev/md/NAME), else NULL */
    int has_uuid;
    uint8_t uuid[16];
    const char *name;             /* name=, else NULL */
    int level;                    /* level= as md's number (raid5 -> 5, linear -> -1); -100 when none */
    int raid_devices;             /* num-devices=, 0 when none */
    int spares;                   /* spares=, -1 when none */
    int ndevices;
    const char *devices[URAID_CONF_MAX_ARRAY_DEVICES]; /* devices=, comma-separated names or globs */
};

struct uraid_conf {
    int ndevices;
    const char *devices[URAID_CONF_MAX_DEVICES]; /* DEVICE words: globs, URIs, "partitions", "containers" */
    int narrays;
    struct uraid_conf_array array[URAID_CONF_MAX_ARRAYS];
    const char *mailaddr;         /* MAILADDR (NULL: none) */
    const char *mailfrom;         /* MAILFROM */
    const char *program;          /* PROGRAM (mdadm's alert program) */
    int monitor_delay;            /* MONITORDELAY seconds, 0 when none */
    size_t arena_used;
    char arena[URAID_CONF_ARENA]; /* the strings above point in here */
};

/* Parses len bytes of text (need not be NUL-terminated) into *conf (which
 * must not be copied afterwards: its strings point into its arena).
 * Returns 0, or -EINVAL with one line in why naming the line and the
 * problem (an unknown keyword or ARRAY tag, a bad UUID, an unterminated
 * quote, a word after the tags...), or -E2BIG when a limit above is
 * passed. CREATE, HOMEHOST, HOMECLUSTER, AUTO, POLICY, PART-POLICY, SYSFS
 * and ENCRYPTION_NO_VERIFY lines, and ARRAY tags uraid has no use for
 * (metadata=, super-minor=, auto=, bitmap=, spare-group=, container=,
 * member=), are accepted and ignored, so an mdadm.conf parses. */
URAID_API int uraid_conf_parse(const char *text, size_t len, struct uraid_conf *conf, char *why, size_t whylen);

/* An array UUID as mdadm reads one: 32 hex digits, ':', '.', '-' and ' '
 * between them ignored. Returns 0 or -EINVAL. */
URAID_API int uraid_conf_parse_uuid(const char *text, uint8_t uuid[16]);

/* md's level number for "raid5", "5", "linear", "mirror", "stripe"...;
 * -100 when the text names none. */
URAID_API int uraid_conf_parse_level(const char *text);

/* 1 when the array name a user gave (wanted) names the array whose
 * superblock holds sb_name: the same, or the same after the "homehost:"
 * prefix of either (mdadm stores "host:name" and matches "name"). */
URAID_API int uraid_conf_name_matches(const char *wanted, const char *sb_name);

/* The ARRAY that names this array: its name= (or the NAME of a devname
 * /dev/md/NAME) matching name by uraid_conf_name_matches, or its UUID
 * equal to uuid (when uuid is not NULL). NULL when no line does. */
URAID_API const struct uraid_conf_array *uraid_conf_find(const struct uraid_conf *conf, const char *name,
                                                         const uint8_t *uuid);

#ifdef __cplusplus
}
#endif
#endif
