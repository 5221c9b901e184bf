/* uraid grow for an array that is not running (mdadm --grow's options):
 *   --consistency-policy=resync|ppl MEMBERS...: every member's superblock
 *     switched (uraid_set_consistency_policy);
 *   MEMBERS... --raid-devices N --add NEW...: RAID-5/6 restriped onto more
 *     members in the foreground (uraid_grow_members), recorded as md records
 *     a reshape; the same command again, or --continue MEMBERS..., carries
 *     on one that was stopped or killed (by uraid or md).
 * An array being served (its control socket answers) is refused: the server
 * keeps its own copy of the superblocks. With --control PATH the serving
 * array grows itself (uraid_grow_online over the control socket; with
 * --level, uraid_grow_online_level); --size goes to the server by itself
 * when the array's default socket answers. */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "uraid_admin.h"
#include "uraid_ctl.h"
#include "uraid_grow.h"

/* 1 when a uraid server answers on the array's default control socket
 * (its path in path, which may be NULL). */
static int served_at(const char *member, char *path, size_t len)
{
    struct uraid_examine e;
    char why[320];
    if (uraid_examine(member, &e, why, sizeof why))
        return 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int k = snprintf(sa.sun_path, sizeof sa.sun_path, "%s/", URAID_CTL_DEFAULT_DIR);
    for (int i = 0; i < 16; i++)
        k += snprintf(sa.sun_path + k, sizeof sa.sun_path - (size_t)k, "%02x", e.array_uuid[i]);
    snprintf(sa.sun_path + k, sizeof sa.sun_path - (size_t)k, ".sock");
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int up = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    if (up && path)
        snprintf(path, len, "%s", sa.sun_path);
    return up;
}

static int being_served(const char *member)
{
    return served_at(member, NULL, 0);
}

static volatile int grow_stop;
static void on_signal(int sig)
{
    (void)sig;
    grow_stop = 1;
}

struct grow_view {
    struct cli_progress pr;
    struct timespec t0;
    uint64_t first;
};

/* md's /proc/mdstat line: "reshape = 12.6% (x/y) finish=1.2min speed=...K/sec" */
static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct grow_view *v = ctx;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double secs = (double)(now.tv_sec - v->t0.tv_sec) + (double)(now.tv_nsec - v->t0.tv_nsec) / 1e9;
    if (!v->first)
        v->first = done;
    double kib_s = secs > 0 ? (double)(done - v->first) / 2.0 / secs : 0;
    double left = kib_s > 0 ? (double)(total - done) / 2.0 / kib_s / 60.0 : 0;
    char line[200];
    int o = snprintf(line, sizeof line, "reshape = %.1f%% (%llu/%lluK)",
                     total ? 100.0 * (double)done / (double)total : 100.0, (unsigned long long)(done / 2),
                     (unsigned long long)(total / 2));
    /* nothing measured yet (the first window): say nothing rather than 0 */
    if (kib_s >= 1 && o > 0 && (size_t)o < sizeof line)
        snprintf(line + o, sizeof line - (size_t)o, " finish=%.1fmin speed=%.0fK/sec", left, kib_s);
    cli_progress_show(&v->pr, "grow", line);
}

struct grow_args {
    const char *members[URAID_MAX_MEMBERS], *added[URAID_MAX_MEMBERS], *layer[URAID_MAX_MEMBERS];
    int n, nadd, nlayer, raid_devices, resume, policy;
    const char *control;     /* --control PATH: the serving array grows online */
    const char *size;        /* --size max|SIZE */
    const char *chunk, *layout, *level; /* --chunk, --layout, --level */
    const char *array_size;  /* --array-size SIZE: what a shrink keeps */
};

/* --chunk's value: a size with a suffix or a plain number of KiB (mdadm's
 * unit), as sectors; 0 after an error printed. */
static uint32_t chunk_sectors(const char *val)
{
    uint64_t bytes = 0;
    const char *last = *val ? val + strlen(val) - 1 : val;
    int plain = *val && *last >= '0' && *last <= '9';
    if (cli_parse_size(val, &bytes) || !bytes || (plain && bytes > (1u << 20)))
        bytes = 0;
    else if (plain)
        bytes *= 1024;
    if (!bytes || bytes % 4096 || bytes > (1u << 30) || (bytes & (bytes - 1))) {
        cli_error("grow", "bad chunk size '%s' (a power of two from 4K: 64K, 512K, 1M; a plain number is KiB)", val);
        return 0;
    }
    return (uint32_t)(bytes / 512);
}

/* --array-size's value in sectors (a plain number is KiB, as mdadm's);
 * -1 after an error printed. */
static int array_size_sectors(const char *v, uint64_t *out)
{
    uint64_t bytes = 0;
    const char *last = v + strlen(v) - 1;
    if (cli_parse_size(v, &bytes) || !bytes) {
        cli_error("grow", "bad --array-size '%s' (a size: 900M, 12G; a plain number is KiB)", v);
        return -1;
    }
    if (*last >= '0' && *last <= '9')
        bytes *= 1024; /* mdadm's unit */
    if (bytes % 512) {
        cli_error("grow", "--array-size '%s' is not a whole number of sectors", v);
        return -1;
    }
    *out = bytes / 512;
    return 0;
}

/* --level's value: 4, 5, 6, raid5, ... ; -1 after an error printed. */
static int level_number(const char *val)
{
    const char *v = !strncasecmp(val, "raid", 4) ? val + 4 : val;
    char *end;
    long l = strtol(v, &end, 10);
    if (!*v || *end || l < 0 || l > 10) {
        cli_error("grow", "bad level '%s' (4, 5, 6, or raid4, raid5, raid6)", val);
        return -1;
    }
    return (int)l;
}

/* 1 consumed, 0 not a reshape option, -1 error printed */
static int parse_reshape_opt(struct grow_args *g, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--continue")) {
        g->resume = 1;
        return 1;
    }
    if (!strcmp(a, "--size") || !strcmp(a, "-z") || !strncmp(a, "--size=", 7)) {
        g->size = a[6] == '=' ? a + 7 : *i + 1 < argc ? argv[++*i] : "";
        return 1;
    }
    if (!strcmp(a, "--array-size") || !strcmp(a, "-Z") || !strncmp(a, "--array-size=", 13)) {
        g->array_size = a[12] == '=' ? a + 13 : *i + 1 < argc ? argv[++*i] : "";
        if (!*g->array_size) {
            cli_error("grow", "--array-size needs a size (a plain number is KiB, as mdadm's)");
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--control") || !strncmp(a, "--control=", 10)) {
        g->control = a[9] == '=' ? a + 10 : *i + 1 < argc ? argv[++*i] : "";
        if (!*g->control) {
            cli_error("grow", "--control needs the serving array's socket path");
            return -1;
        }
        return 1;
    }
    static const struct { const char *name, *shortname; size_t off; } geo[] = {
        {"--chunk", "-c", offsetof(struct grow_args, chunk)},
        {"--layout", "-p", offsetof(struct grow_args, layout)},
        {"--level", "-l", offsetof(struct grow_args, level)},
    };
    for (size_t k = 0; k < sizeof geo / sizeof geo[0]; k++) {
        size_t nl = strlen(geo[k].name);
        if (strcmp(a, geo[k].name) && strcmp(a, geo[k].shortname) && (strncmp(a, geo[k].name, nl) || a[nl] != '='))
            continue;
        const char *val = a[nl] == '=' ? a + nl + 1 : *i + 1 < argc ? argv[++*i] : "";
        if (!*val) {
            cli_error("grow", "%s needs a value", geo[k].name);
            return -1;
        }
        *(const char **)((char *)g + geo[k].off) = val;
        return 1;
    }
    if (!strcmp(a, "--add") || !strcmp(a, "-a")) {
        while (*i + 1 < argc && argv[*i + 1][0] != '-' && g->n + g->nadd < URAID_MAX_MEMBERS)
            g->added[g->nadd++] = argv[++*i];
        return 1;
    }
    if (!strcmp(a, "--member-layer")) {
        if (*i + 1 >= argc) {
            cli_error("grow", "--member-layer needs a spec, e.g. 'throttle=60M' or 'MEMBER:latency=2ms'");
            return -1;
        }
        if (g->nlayer < URAID_MAX_MEMBERS)
            g->layer[g->nlayer++] = argv[++*i];
        return 1;
    }
    if (!strncmp(a, "--raid-devices=", 15) || !strcmp(a, "--raid-devices") || !strcmp(a, "-n")) {
        const char *val = strchr(a, '=') ? strchr(a, '=') + 1 : *i + 1 < argc ? argv[++*i] : "";
        char *end;
        long v = strtol(val, &end, 10);
        if (!*val || *end || v < 1 || v > URAID_MAX_MEMBERS) {
            cli_error("grow", "--raid-devices must be a member count from 1 to %d, got '%s'", URAID_MAX_MEMBERS, val);
            return -1;
        }
        g->raid_devices = (int)v;
        return 1;
    }
    return 0;
}

static int run_reshape(struct grow_args *g)
{
    int geo = g->chunk || g->layout || g->level;
    if (!g->resume && !geo && !g->raid_devices) {
        cli_error("grow", "give --raid-devices N and the new members (--add NEW...), fewer members with "
                  "--array-size, --chunk, --layout, --level, or --continue");
        return 2;
    }
    uint64_t keep = 0;
    if (g->array_size && array_size_sectors(g->array_size, &keep))
        return 2;
    uint32_t csec = 0;
    int level = -1;
    if ((g->chunk && !(csec = chunk_sectors(g->chunk))) || (g->level && (level = level_number(g->level)) < 0))
        return 2;
    const char *names[2 * URAID_MAX_MEMBERS];
    int nn = 0;
    for (int i = 0; i < g->n; i++)
        names[nn++] = g->members[i];
    for (int i = 0; i < g->nadd; i++)
        names[nn++] = g->added[i];
    static char texts[2 * URAID_MAX_MEMBERS][256];
    const char *sim[2 * URAID_MAX_MEMBERS];
    for (int l = 0; l < g->nlayer; l++) {
        char why[300];
        if (uraid_member_layer_add(g->layer[l], names, nn, texts[0], sizeof texts[0], why, sizeof why)) {
            cli_error("grow", "--member-layer '%s': %s", g->layer[l], why);
            return 2;
        }
    }
    for (int i = 0; i < nn; i++)
        sim[i] = texts[i];
    if (being_served(g->members[0])) {
        cli_error("grow", "the array of %s is being served (its control socket answers): stop it first ('uraid stop')",
                  g->members[0]);
        return 1;
    }
    if (cli_setup_parity("grow"))
        return 1;
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct grow_view v = {0};
    cli_progress_init(&v.pr);
    clock_gettime(CLOCK_MONOTONIC, &v.t0);
    struct uraid_grow_params p = {.raid_devices = g->raid_devices, .resume_only = g->resume,
                                  .member_sim = g->nlayer ? sim : NULL, .progress = show_progress, .ctx = &v,
                                  .stop = &grow_stop, .chunk_sectors = csec, .layout = g->layout,
                                  .level_set = level >= 0, .level = level, .array_sectors = keep};
    struct uraid_grow_result res;
    char why[512];
    int rc = uraid_grow_members(g->members, g->n, g->added, g->nadd, &p, &res, why, sizeof why);
    cli_progress_end(&v.pr);
    if (rc == -EALREADY) {
        printf("uraid: %s\n", why);
        return 0;
    }
    if (rc) {
        cli_error("grow", "%s", why[0] ? why : uraid_strerror(rc));
        return 1;
    }
    if (res.appended == 3) {
        printf("uraid: RAID-%d: %d members (taken over, the data in place), %s %srecovered onto the new member\n",
               res.level, res.raid_devices, res.level == 6 ? "Q" : "parity", res.resumed ? "(a recovery carried on) " : "");
        return 0;
    }
    if (res.appended == 4) {
        printf("uraid: RAID-%d: %d members (the RAID-%d taken over, nothing moved)%s\n", res.level, res.raid_devices,
               res.from_level, res.from_level == 6 ? ", the Q member is a spare now" : "");
        return 0;
    }
    if (res.appended == 5) {
        printf("uraid: RAID-1: %d mirrors (the empty slots dropped, nothing moved)\n", res.raid_devices);
        return 0;
    }
    if (res.appended == 2) {
        printf("uraid: RAID-1: %d mirrors, the new ones %srecovered from the others\n", res.raid_devices,
               res.resumed ? "(a recovery carried on) " : "");
        return 0;
    }
    if (res.appended) {
        printf("uraid: linear: %d members (appended, no data moved), array size %llu KiB (was %llu KiB)\n",
               res.raid_devices, (unsigned long long)(res.to_sectors / 2), (unsigned long long)(res.from_sectors / 2));
        return 0;
    }
    char lv[64] = "";
    if (res.level != res.from_level)
        snprintf(lv, sizeof lv, " (RAID-%d now)", res.level);
    printf("uraid: reshape %s: %d members%s, array size %llu KiB (was %llu KiB); data offset moved %s %llu sectors%s\n",
           res.resumed ? "carried on and complete" : "complete", res.raid_devices, lv,
           (unsigned long long)(res.to_sectors / 2), (unsigned long long)(res.from_sectors / 2),
           res.backwards ? "up" : "down", (unsigned long long)res.shift,
           res.backwards && res.from_sectors > res.to_sectors ? " (backwards; the members left are spares)" : "");
    return 0;
}

/* --control: the request "grow N NEW..." to the server, which restripes
 * while it serves (the new members named as the server will open them). */
static int run_online(const struct grow_args *g)
{
    int geo = g->chunk || g->layout || g->level;
    if (g->n || g->resume || g->nlayer || (!geo && !g->raid_devices)) {
        cli_error("grow", "with --control give --raid-devices N and the new members (--add NEW...), fewer (RAID-4/5/6 "
                  "with --array-size), --chunk, --layout or --level only: the server has the others (a reshape it "
                  "was serving is carried on by itself)");
        return 2;
    }
    int level = g->level ? level_number(g->level) : -1;
    if (g->level && level < 0)
        return 2;
    uint64_t keep = 0;
    if (g->array_size && array_size_sectors(g->array_size, &keep))
        return 2;
    uint32_t csec = 0;
    if (g->chunk && !(csec = chunk_sectors(g->chunk)))
        return 2;
    if (g->layout && strpbrk(g->layout, " \t")) {
        cli_error("grow", "bad layout '%s'", g->layout);
        return 2;
    }
    char req[4096];
    int o = snprintf(req, sizeof req, "grow %d", g->raid_devices);
    if (csec)
        o += snprintf(req + o, sizeof req - (size_t)o, " chunk=%u", csec);
    if (g->layout)
        o += snprintf(req + o, sizeof req - (size_t)o, " layout=%s", g->layout);
    if (keep)
        o += snprintf(req + o, sizeof req - (size_t)o, " size=%llu", (unsigned long long)keep);
    if (level >= 0)
        o += snprintf(req + o, sizeof req - (size_t)o, " level=%d", level);
    for (int i = 0; i < g->nadd && o > 0 && (size_t)o < sizeof req; i++) {
        char abs[4096];
        const char *name = strstr(g->added[i], "://") || !realpath(g->added[i], abs) ? g->added[i] : abs;
        if (strpbrk(name, " \t")) {
            cli_error("grow", "new member '%s': a name with blanks cannot go through the control socket", name);
            return 2;
        }
        o += snprintf(req + o, sizeof req - (size_t)o, " %s", name);
    }
    if (o <= 0 || (size_t)o >= sizeof req) {
        cli_error("grow", "too many or too long member names for one request");
        return 2;
    }
    char resp[4096];
    int rc = uraid_ctl_request(g->control, req, resp, sizeof resp);
    if (rc) {
        cli_error("grow", "%s: %s", g->control,
                  rc == -ENOENT || rc == -ECONNREFUSED ? "no server is listening there" : uraid_strerror(rc));
        return 1;
    }
    if (strncmp(resp, "ok", 2)) {
        resp[strcspn(resp, "\n")] = 0;
        cli_error("grow", "%s", !strncmp(resp, "error: ", 7) ? resp + 7 : resp);
        return 1;
    }
    const char *msg = resp[2] == '\n' ? resp + 3 : "";
    printf("uraid: %s", *msg ? msg : "reshape started\n");
    return 0;
}

/* The request "grow-size max|SECTORS" to the server at path: mdadm --grow
 * --size on a running array. */
static int size_online(const char *path, uint64_t sectors)
{
    char req[64], resp[1024];
    if (sectors)
        snprintf(req, sizeof req, "grow-size %llu", (unsigned long long)sectors);
    else
        snprintf(req, sizeof req, "grow-size max");
    int rc = uraid_ctl_request(path, req, resp, sizeof resp);
    if (rc) {
        cli_error("grow", "%s: %s", path,
                  rc == -ENOENT || rc == -ECONNREFUSED ? "no server is listening there" : uraid_strerror(rc));
        return 1;
    }
    if (strncmp(resp, "ok", 2)) {
        resp[strcspn(resp, "\n")] = 0;
        cli_error("grow", "%s", !strncmp(resp, "error: ", 7) ? resp + 7 : resp);
        return 1;
    }
    printf("uraid: %s", resp[2] == '\n' && resp[3] ? resp + 3 : "the size changed\n");
    return 0;
}

/* --size max|SIZE: the members' room used (mdadm's KiB when no suffix); on
 * a served array (--control, or its default socket answers) by its server. */
static int run_size(const struct grow_args *g)
{
    uint64_t sectors = 0, v = 0;
    const char *t = g->size, *last = *t ? t + strlen(t) - 1 : t;
    if (strcmp(t, "max")) {
        if (cli_parse_size(t, &v) || !v) {
            cli_error("grow", "--size must be 'max' or a size per member (KiB, or with a suffix: 512M, 2G), got '%s'", t);
            return 2;
        }
        sectors = *last >= '0' && *last <= '9' ? v * 2 : v / 512;
    }
    if (g->raid_devices || g->nadd || g->resume || g->policy || g->chunk || g->layout || g->level ||
        g->array_size || (g->control && g->n)) {
        cli_error("grow", g->control ? "with --control give --size alone: the server has the members"
                                     : "change the size alone (--size with the array's members only)");
        return 2;
    }
    if (g->control)
        return size_online(g->control, sectors);
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    if (served_at(g->members[0], path, sizeof path)) /* as mdadm grows a running array */
        return size_online(path, sectors);
    if (cli_setup_parity("grow"))
        return 1;
    struct uraid_grow_result res;
    char why[512];
    int rc = uraid_grow_size(g->members, g->n, sectors, &res, why, sizeof why);
    if (rc == -EALREADY) {
        printf("uraid: %s\n", why);
        return 0;
    }
    if (rc) {
        cli_error("grow", "%s", why[0] ? why : uraid_strerror(rc));
        return 1;
    }
    printf("uraid: array size %llu KiB (was %llu KiB); the new region is in sync\n",
           (unsigned long long)(res.to_sectors / 2), (unsigned long long)(res.from_sectors / 2));
    return 0;
}

int cmd_grow(int argc, char **argv)
{
    struct grow_args g = {0};
    int reshape = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = parse_reshape_opt(&g, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r > 0) {
            reshape = 1;
            continue;
        }
        if (!strncmp(a, "--consistency-policy=", 21) || !strcmp(a, "--consistency-policy") || !strcmp(a, "-k")) {
            const char *val = strchr(a, '=') ? strchr(a, '=') + 1 : i + 1 < argc ? argv[++i] : NULL;
            g.policy = val ? uraid_policy_parse(val) : -1;
            if (g.policy < 0) {
                cli_error("grow", "--consistency-policy must be resync, bitmap, ppl or journal, got '%s'",
                          val ? val : "");
                return 2;
            }
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: uraid grow --consistency-policy resync|bitmap|ppl MEMBER...\n"
                   "       uraid grow MEMBER... --raid-devices N --add NEW... [--member-layer [MEMBER:]SPEC]\n"
                   "       uraid grow MEMBER... [--raid-devices N --add NEW...] [--chunk SIZE] [--layout NAME]\n"
                   "                  [--level L]\n"
                   "       uraid grow MEMBER... --raid-devices N --array-size SIZE   (N smaller: a shrink)\n"
                   "       uraid grow --continue MEMBER...\n"
                   "       uraid grow --control PATH [--raid-devices N --add NEW...] [--chunk SIZE] [--layout NAME]\n"
                   "                  [--level L]\n"
                   "       uraid grow MEMBER... --size max|SIZE\n"
                   "       uraid grow --control PATH --size max|SIZE\n"
                   "  (without --control the array must not be running and every member is needed; with it the\n"
                   "   serving array restripes while it serves: follow it with 'uraid status'; mdadm --grow)\n");
            return 0;
        } else if (a[0] == '-' && a[1]) {
            cli_error("grow", "unknown option '%s' (try 'uraid grow --help')", a);
            return 2;
        } else if (g.n < URAID_MAX_MEMBERS) {
            g.members[g.n++] = a;
        }
    }
    if (g.control && g.size)
        return run_size(&g);
    if (g.control)
        return run_online(&g);
    if (g.size && g.n)
        return run_size(&g);
    if (reshape && g.policy) {
        cli_error("grow", "change the consistency policy and the member count in two runs");
        return 2;
    }
    if (reshape && g.n)
        return run_reshape(&g);
    int policy = g.policy, n = g.n;
    const char **members = g.members;
    if (!policy || !n) {
        cli_error("grow", "give --consistency-policy or --raid-devices and the array's members (try 'uraid grow --help')");
        return 2;
    }
    if (being_served(members[0])) {
        cli_error("grow", "the array of %s is being served (its control socket answers): stop it first ('uraid stop')",
                  members[0]);
        return 1;
    }
    char why[512];
    int rc = uraid_set_consistency_policy(members, n, policy, why, sizeof why);
    if (rc == -EALREADY) {
        printf("uraid: %s; nothing changed\n", why);
        return 0;
    }
    if (rc) {
        cli_error("grow", "%s", why[0] ? why : uraid_strerror(rc));
        return 1;
    }
    printf("uraid: consistency policy is now %s on %d members\n", uraid_policy_name(policy), n);
    return 0;
}
