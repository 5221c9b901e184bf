/* uraid monitor's view of one array (cli/monitor_state.c): the status
 * text of its control socket parsed, and what changed between two
 * answers turned into mdadm --monitor's events. No I/O: cmd_monitor.c
 * asks the sockets and runs the alert program. */
#ifndef URAID_CLI_MONITOR_H
#define URAID_CLI_MONITOR_H

#include <limits.h>
#include <stdint.h>

#include "uraid.h"

#define MON_STATUS_BYTES (256 * 1024)

enum mon_member_state { MS_SYNC, MS_REMOVED, MS_FAULTY, MS_SPARE, MS_STALE, MS_REBUILDING };

struct mon_member {
    char path[256];      /* "" for an empty slot */
    int slot;            /* -1 for spares and stale members */
    enum mon_member_state state;
};

/* One status answer. */
struct mon_state {
    char name[64], uuid[40];
    int level, raid_devices, degraded, spares;
    int nmembers;
    struct mon_member m[URAID_MAX_MEMBERS];
    int running;         /* a background job (recovery, resync, check, ...) runs */
    int percent;         /* its progress, whole percent */
    uint64_t mismatches; /* the last check's or repair's mismatch_cnt */
};

/* What the monitor remembers of an array between polls. */
struct mon_array {
    char sock[PATH_MAX];
    int found_in_dir;    /* found by scanning a directory (not named) */
    int present;         /* it answered last time */
    char label[64];      /* the name events carry: the array's name, else its UUID */
    char uuid[40];
    int last_step;       /* the last RebuildNN reported */
    char last_status[16384];
    struct mon_state st; /* the last answer */
};

struct mon_events {
    void (*report)(void *ctx, const struct mon_array *a, const char *event, const char *member);
    void *ctx;
    int increment;       /* RebuildNN every this many percent */
    int test;            /* TestMessage at first sight */
    int first_pass;      /* the monitor's first look: no NewArray */
    int spares_wanted;   /* the config's spares= for this array, -1 when none */
};

/* Parses the text after "ok\n" of a "status" answer. 0, or -EINVAL when it
 * is not one. */
int mon_parse_status(const char *text, struct mon_state *out);

/* Reports the events between the last answer and cur (NULL: no answer
 * this time), then remembers cur. */
void mon_update(struct mon_array *a, const struct mon_state *cur, const struct mon_events *ev);

#endif
