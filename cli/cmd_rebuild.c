/* uraid rebuild MEMBERS... : fill the failed or missing slot of an array
 * that is not running from one of its spares, in the foreground, resuming
 * from a checkpoint an interrupted rebuild left (recovery_offset).
 * uraid replace MEMBERS... --old MEMBER --with NEW : copy a working member
 * onto NEW (a spare, added if it is not one yet), then retire the old one.
 * uraid add MEMBERS... --spare NEW... : add spares to an array that is not
 * running (a serving array takes 'uraid add --control PATH NEW').
 * uraid add MEMBERS... --re-add OLD... : put former members back into their
 * slots and rebuild only what the write-intent bitmap marks as written
 * since they left (md's --re-add); a full rebuild when it cannot tell.
 * uraid resync MEMBERS... : after an unclean shutdown, parity recomputed
 * from the data (what md does when it starts such an array). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct job_opts {
    uint64_t speed_max_kib;
    const char *spare[URAID_MAX_MEMBERS];
    int nspare;
    int spares_follow;   /* add: every name after --spare is a spare (--spare NEW...) */
    const char *old;
    const char *with;
    const char *readd[URAID_MAX_MEMBERS];
    int nreadd;
};

/* The name argv[*i] into list, and with `follow` every name after it up
 * to the next option (add's --spare NEW... and --re-add OLD...). */
static int take_names(const char *verb, const char *what, int argc, char **argv, int *i, int follow,
                      const char **list, int *n)
{
    do {
        if (*n >= URAID_MAX_MEMBERS) {
            cli_error(verb, "too many %s", what);
            return -1;
        }
        list[(*n)++] = argv[*i];
    } while (follow && *i + 1 < argc && argv[*i + 1][0] != '-' && ++*i);
    return 1;
}

static int parse_job_opt(const char *verb, int argc, char **argv, int *i, void *ctx)
{
    struct job_opts *o = ctx;
    const char *a = argv[*i];
    int takes = !strcmp(a, "--speed-limit") || !strcmp(a, "--spare") || !strcmp(a, "--with") || !strcmp(a, "--old") ||
                !strcmp(a, "--re-add");
    if (!takes)
        return 0;
    if (*i + 1 >= argc) {
        cli_error(verb, "%s needs a value", a);
        return -1;
    }
    const char *v = argv[++*i];
    if (!strcmp(a, "--speed-limit")) {
        if (cli_parse_speed(verb, v, &o->speed_max_kib))
            return -1;
    } else if (!strcmp(a, "--spare")) {
        return take_names(verb, "spares", argc, argv, i, o->spares_follow, o->spare, &o->nspare);
    } else if (!strcmp(a, "--re-add")) {
        return take_names(verb, "members to re-add", argc, argv, i, o->spares_follow, o->readd, &o->nreadd);
    } else if (!strcmp(a, "--with")) {
        o->with = v;
    } else {
        o->old = v;
    }
    return 1;
}

static int run_job(const char *verb, struct uraid_array *a, enum uraid_job_kind kind, struct uraid_job_params *jp)
{
    char why[300];
    int rc = uraid_job_start(a, kind, jp, why, sizeof why);
    if (rc) {
        cli_error(verb, "%s", why[0] ? why : uraid_strerror(rc));
        return 1;
    }
    struct uraid_job_status st;
    rc = cli_wait_job(verb, a, &st);
    if (rc == -ECANCELED) {
        cli_error(verb, "interrupted at %.1f%%; run it again to resume",
                  st.total_sectors ? 100.0 * (double)st.done_sectors / (double)st.total_sectors : 0.0);
        return 1;
    }
    if (rc) {
        cli_error(verb, "%s", st.why[0] ? st.why : uraid_strerror(rc));
        return 1;
    }
    double mib = (double)(st.done_sectors) / 2048.0, secs = (double)st.elapsed_ms / 1000.0;
    printf("uraid %s: %s finished: %.0f MiB per member in %.1f s (%.0f MB/s per member)\n", verb,
           uraid_job_name(kind), mib, secs, secs > 0 ? mib * 1.048576 / secs : 0.0);
    if (kind == URAID_JOB_RESYNC)
        printf("uraid %s: %llu of %llu sectors per member resynced%s\n", verb, (unsigned long long)st.worked_sectors,
               (unsigned long long)st.total_sectors,
               st.worked_sectors < st.total_sectors ? " (the dirty chunks of the write-intent bitmap)" : "");
    if (kind == URAID_JOB_RECOVER) {
        printf("uraid %s: slot%s", verb, st.ntargets > 1 ? "s" : "");
        for (int i = 0; i < st.ntargets; i++)
            printf("%s %d", i ? (i + 1 == st.ntargets ? " and" : ",") : "", st.targets[i]);
        printf(" rebuilt; %llu of %llu sectors per member worked on\n", (unsigned long long)st.worked_sectors,
               (unsigned long long)st.total_sectors);
    }
    return 0;
}

/* After a rebuild: slots no spare could fill are said, and make it fail
 * (the array is not whole). */
static int still_missing(const char *verb, struct uraid_array *a)
{
    struct uraid_array_info *info = malloc(sizeof *info);
    if (!info)
        return 1;
    uraid_get_info(a, info);
    int left = 0;
    for (int s = 0; s < info->raid_devices; s++)
        if (info->member[s].state != URAID_MEMBER_IN_SYNC) {
            cli_error(verb, "slot %d still has no member in sync: add a spare with --spare NEW and run it again", s);
            left++;
        }
    free(info);
    return left ? 1 : 0;
}

static int open_for_job(const char *verb, int argc, char **argv, struct cli_members *mem, struct job_opts *o,
                        struct uraid_array **a, const char *usage)
{
    struct uraid_open_params op = {0};
    struct cli_extra ex = {.parse = parse_job_opt, .ctx = o, .usage = usage};
    int rc = cli_parse_members(verb, argc, argv, mem, &op, &ex);
    if (rc)
        return rc < 0 ? -1 : rc;
    op.sync_speed_max_kib = o->speed_max_kib;
    return cli_open_array(verb, mem, &op, a) ? 1 : 0;
}

static int add_spares(const char *verb, struct uraid_array *a, const struct job_opts *o)
{
    for (int i = 0; i < o->nspare; i++) {
        char why[300];
        int rc = uraid_add_spare(a, o->spare[i], why, sizeof why);
        if (rc) {
            cli_error(verb, "%s", why[0] ? why : uraid_strerror(rc));
            return 1;
        }
        printf("uraid %s: %s added as a spare\n", verb, o->spare[i]);
    }
    return 0;
}

/* --re-add: each member back into its slot (or a spare when the bitmap
 * cannot tell), then one recovery for all of them. */
static int readd(const char *verb, struct uraid_array *a, const struct job_opts *o)
{
    for (int i = 0; i < o->nreadd; i++) {
        char why[400];
        int rc = uraid_readd(a, o->readd[i], why, sizeof why);
        if (rc < 0) {
            cli_error(verb, "%s", why[0] ? why : uraid_strerror(rc));
            return 1;
        }
        printf("uraid %s: %s\n", verb, why);
    }
    struct uraid_job_params jp = {.slot = -1};
    return run_job(verb, a, URAID_JOB_RECOVER, &jp);
}

int cmd_rebuild(int argc, char **argv)
{
    struct cli_members mem;
    struct job_opts o = {0};
    struct uraid_array *a;
    int rc = open_for_job("rebuild", argc, argv, &mem, &o, &a,
                          "[--spare NEW]... [--speed-limit SPEED]");
    if (rc)
        return rc < 0 ? 0 : rc;
    int status = add_spares("rebuild", a, &o);
    struct uraid_job_params jp = {.slot = -1, .spare = o.nspare ? o.spare[0] : NULL};
    if (status == 0)
        status = run_job("rebuild", a, URAID_JOB_RECOVER, &jp);
    if (status == 0) /* every hole with a spare was filled: say which are left */
        status = still_missing("rebuild", a);
    rc = uraid_close(a);
    if (rc && !status) {
        cli_error("rebuild", "closing the array: %s", uraid_strerror(rc));
        status = 1;
    }
    return status;
}

int cmd_replace(int argc, char **argv)
{
    struct cli_members mem;
    struct job_opts o = {0};
    struct uraid_array *a;
    const char *usage = "--old MEMBER --with NEW [--speed-limit SPEED]";
    int rc = open_for_job("replace", argc, argv, &mem, &o, &a, usage);
    if (rc)
        return rc < 0 ? 0 : rc;
    int status = 0;
    if (!o.old || !o.with) {
        cli_error("replace", "give the member to replace and its replacement: uraid replace MEMBERS... %s", usage);
        status = 2;
    }
    int slot = -1, is_spare = 0;
    if (status == 0) {
        struct uraid_array_info *info = malloc(sizeof *info);
        if (info) {
            uraid_get_info(a, info);
            for (int i = 0; i < info->nmembers; i++) {
                if (!strcmp(info->member[i].path, o.old) && info->member[i].slot >= 0)
                    slot = info->member[i].slot;
                if (!strcmp(info->member[i].path, o.with) && info->member[i].state == URAID_MEMBER_SPARE)
                    is_spare = 1;
            }
            free(info);
        }
        if (slot < 0) {
            cli_error("replace", "%s is not an active member of this array", o.old);
            status = 2;
        }
    }
    if (status == 0 && !is_spare) {
        o.spare[0] = o.with;
        o.nspare = 1;
        status = add_spares("replace", a, &o);
    }
    struct uraid_job_params jp = {.slot = slot, .spare = o.with};
    if (status == 0)
        status = run_job("replace", a, URAID_JOB_REPLACE, &jp);
    if (status == 0)
        printf("uraid replace: %s now holds slot %d; %s is marked faulty\n", o.with, slot, o.old);
    rc = uraid_close(a);
    if (rc && !status) {
        cli_error("replace", "closing the array: %s", uraid_strerror(rc));
        status = 1;
    }
    return status;
}

int cmd_add_offline(int argc, char **argv)
{
    struct cli_members mem;
    struct job_opts o = {.spares_follow = 1};
    struct uraid_array *a;
    int rc = open_for_job("add", argc, argv, &mem, &o, &a, "--spare NEW... | --re-add OLD...");
    if (rc)
        return rc < 0 ? 0 : rc;
    int status = o.nspare || o.nreadd ? add_spares("add", a, &o) : 2;
    if (!o.nspare && !o.nreadd)
        cli_error("add", "give the new members with --spare NEW (or former ones with --re-add OLD)");
    if (status == 0 && o.nreadd)
        status = readd("add", a, &o);
    rc = uraid_close(a);
    if (rc && !status) {
        cli_error("add", "closing the array: %s", uraid_strerror(rc));
        status = 1;
    }
    return status;
}

int cmd_resync(int argc, char **argv)
{
    struct cli_members mem;
    struct job_opts o = {0};
    struct uraid_array *a;
    int rc = open_for_job("resync", argc, argv, &mem, &o, &a, "[--speed-limit SPEED]");
    if (rc)
        return rc < 0 ? 0 : rc;
    struct uraid_job_params jp = {.slot = -1};
    int status = run_job("resync", a, URAID_JOB_RESYNC, &jp);
    rc = uraid_close(a);
    if (rc && !status) {
        cli_error("resync", "closing the array: %s", uraid_strerror(rc));
        status = 1;
    }
    if (status == 0)
        printf("uraid resync: the array is clean\n");
    return status;
}
