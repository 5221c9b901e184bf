/* uraid create --level L --raid-devices N [--chunk SIZE] [--layout NAME]
 *              [--bitmap internal|none] [--bitmap-chunk SIZE]
 *              [--consistency-policy resync|bitmap|ppl] [--metadata 0.90|1.0|1.1|1.2]
 *              [--name NAME] [--assume-clean] [--force] MEMBERS...
 * Options follow mdadm: a plain --chunk number is KiB; 'missing' leaves a
 * slot empty. Without --assume-clean, parity is made consistent before the
 * command returns, with a progress line on a terminal. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "uraid_admin.h"

#define LEVEL_UNSET (-100)

static int parse_level(const char *s)
{
    if (!strncmp(s, "raid", 4))
        s += 4;
    if (!strcmp(s, "0") || !strcmp(s, "stripe"))
        return 0;
    if (!strcmp(s, "1") || !strcmp(s, "mirror"))
        return 1;
    if (!strcmp(s, "4"))
        return 4;
    if (!strcmp(s, "5"))
        return 5;
    if (!strcmp(s, "6"))
        return 6;
    if (!strcmp(s, "10"))
        return 10;
    if (!strcmp(s, "linear"))
        return -1; /* md's number for linear */
    return LEVEL_UNSET;
}

/* "RAID-5" or "linear", for messages. */
static const char *level_text(int level, char *buf, size_t len)
{
    if (level == -1)
        return "linear";
    snprintf(buf, len, "RAID-%d", level);
    return buf;
}

/* A size with a suffix, or a plain number of KiB (mdadm's unit for --chunk
 * and --bitmap-chunk). 0 or -1. */
static int parse_kib_size(const char *val, uint64_t *bytes)
{
    const char *last = val + strlen(val) - 1;
    int plain = *val && *last >= '0' && *last <= '9';
    if (cli_parse_size(val, bytes) || (plain && *bytes > (1ull << 40)))
        return -1;
    if (plain)
        *bytes *= 1024;
    return 0;
}

/* Which consistency policy the new array got, and why, read back from
 * its first member's superblock. */
static void print_policy(const char *const *members, int n, const struct uraid_create_params *p)
{
    struct uraid_examine e;
    char why[320];
    int i = 0;
    while (i < n && !strcmp(members[i], "missing"))
        i++;
    if (i == n || uraid_examine(members[i], &e, why, sizeof why))
        return;
    const char *pol = e.has_ppl ? "ppl" : e.has_bitmap ? "bitmap" : "resync";
    const char *because = "";
    if (p->consistency_policy)
        because = " (as asked)";
    else if (e.has_ppl_q)
        because = " (the default for RAID-6: writes are logged, partial P and partial Q, so that a crash cannot "
                  "leave parity stale; md cannot assemble this array until 'uraid grow --consistency-policy=bitmap' "
                  "or '=resync' switches it)";
    else if (e.has_ppl)
        because = " (the default for RAID-5: writes are logged so that a crash cannot leave parity stale)";
    else if ((p->level == 5 || p->level == 6) && strcmp(e.version, "1.2"))
        because = " (not ppl: uraid keeps its partial parity log with metadata 1.2 only)";
    else if (p->level == 5 || p->level == 6)
        because = " (not ppl: the members have no room for its 1 MiB log, the chunk is too large, or a bitmap "
                  "was asked for)";
    else if (p->level == 4)
        because = " (mdadm's default: md has no partial parity log for RAID-4)";
    printf("uraid: consistency policy: %s%s\n", pol, because);
}

struct progress {
    int tty;
    time_t start;
    int last_pct;
};

static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct progress *pr = ctx;
    int pct10 = total ? (int)(done * 1000 / total) : 1000;
    if (pct10 == pr->last_pct)
        return;
    pr->last_pct = pct10;
    double secs = difftime(time(NULL), pr->start);
    double kps = secs > 0 ? done * 512.0 / 1024 / secs : 0;
    if (pr->tty) {
        int bar = pct10 / 50;
        char b[21];
        for (int i = 0; i < 20; i++)
            b[i] = i < bar ? '=' : i == bar ? '>' : '.';
        b[20] = 0;
        fprintf(stderr, "\r[%s]  resync = %5.1f%% (%llu/%llu) speed=%.0fK/sec ", b, pct10 / 10.0,
                (unsigned long long)(done / 2), (unsigned long long)(total / 2), kps);
        if (done >= total)
            fputc('\n', stderr);
    }
}

int cmd_create(int argc, char **argv)
{
    struct uraid_create_params p = {.level = LEVEL_UNSET, .layout = -1};
    int force = 0;
    const char *members[URAID_MAX_MEMBERS];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
        char opt[64];
        if (eq) {
            snprintf(opt, sizeof opt, "%.*s", (int)(eq - a), a);
            val = eq + 1;
            a = opt;
        }
#define TAKE()                                                                  \
    do {                                                                        \
        if (!val) {                                                             \
            cli_error("create", "%s needs a value", a);                         \
            return 2;                                                           \
        }                                                                       \
        if (!eq)                                                                \
            i++;                                                                \
    } while (0)
        if (!strcmp(a, "--level") || !strcmp(a, "-l")) {
            TAKE();
            p.level = parse_level(val);
            if (p.level == LEVEL_UNSET) {
                cli_error("create", "unknown level '%s' (use linear, 0, 1, 4, 5, 6 or 10)", val);
                return 2;
            }
        } else if (!strcmp(a, "--raid-devices") || !strcmp(a, "-n")) {
            TAKE();
            char *end;
            long v = strtol(val, &end, 10);
            if (*end || v < 1 || v > URAID_MAX_MEMBERS) {
                cli_error("create", "--raid-devices must be 1..%d, got '%s'", URAID_MAX_MEMBERS, val);
                return 2;
            }
            p.raid_devices = (int)v;
        } else if (!strcmp(a, "--spare-devices") || !strcmp(a, "-x")) {
            TAKE();
            char *end;
            long v = strtol(val, &end, 10);
            if (*end || v < 0 || v > URAID_MAX_MEMBERS) {
                cli_error("create", "--spare-devices must be 0..%d, got '%s'", URAID_MAX_MEMBERS, val);
                return 2;
            }
            p.spare_devices = (int)v;
        } else if (!strcmp(a, "--chunk") || !strcmp(a, "-c")) {
            TAKE();
            uint64_t bytes;
            if (parse_kib_size(val, &bytes)) {
                cli_error("create", "bad chunk size '%s' (examples: 64K, 512K, 1M; a plain number is KiB)", val);
                return 2;
            }
            if (bytes == 0) {
                /* the library reads 0 as "the default": say no, as mdadm does */
                cli_error("create", "chunk size 0 is no chunk size (examples: 64K, 512K, 1M; leave --chunk out for "
                          "512K)");
                return 2;
            }
            if (bytes > (1u << 30)) {
                cli_error("create", "chunk size %s is too large", val);
                return 2;
            }
            p.chunk_bytes = (uint32_t)bytes;
        } else if (!strcmp(a, "--layout") || !strcmp(a, "-p")) {
            TAKE();
            if (p.level == LEVEL_UNSET) {
                cli_error("create", "give --level before --layout");
                return 2;
            }
            p.layout = uraid_layout_from_name(p.level, val);
            if (p.layout < 0) {
                char lt[16];
                cli_error("create", "unknown layout '%s' for %s%s", val, level_text(p.level, lt, sizeof lt),
                          p.level == 10 ? " (mdadm's names: n2, n3, f2, f3, o2, o3)" : "");
                return 2;
            }
        } else if (!strcmp(a, "--bitmap") || !strcmp(a, "-b")) {
            TAKE();
            if (!strcmp(val, "internal"))
                p.bitmap = URAID_BITMAP_INTERNAL;
            else if (!strcmp(val, "none"))
                p.bitmap = URAID_BITMAP_NONE;
            else {
                cli_error("create", "--bitmap must be 'internal' or 'none' (an external bitmap file is not supported), "
                          "got '%s'", val);
                return 2;
            }
        } else if (!strcmp(a, "--consistency-policy") || !strcmp(a, "-k")) {
            TAKE();
            p.consistency_policy = uraid_policy_parse(val);
            if (p.consistency_policy < 0) {
                cli_error("create", "--consistency-policy must be resync, bitmap, ppl or journal, got '%s'", val);
                return 2;
            }
        } else if (!strcmp(a, "--bitmap-chunk")) {
            TAKE();
            if (parse_kib_size(val, &p.bitmap_chunk_bytes)) {
                cli_error("create", "bad bitmap chunk '%s' (examples: 64M, 128K; a plain number is KiB)", val);
                return 2;
            }
        } else if (!strcmp(a, "--metadata") || !strcmp(a, "-e")) {
            TAKE();
            p.metadata = val; /* checked by uraid_create, with md's limits of the format */
        } else if (!strcmp(a, "--name") || !strcmp(a, "-N")) {
            TAKE();
            p.name = val;
        } else if (!strcmp(a, "--assume-clean")) {
            p.assume_clean = 1;
        } else if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
            force = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: uraid create --level L --raid-devices N [--spare-devices M] [--chunk SIZE] [--layout NAME]\n"
                   "                    [--bitmap internal|none] [--bitmap-chunk SIZE]\n"
                   "                    [--consistency-policy resync|bitmap|ppl] (default: ppl for RAID-5 and RAID-6)\n"
                   "                    [--metadata 0.90|1.0|1.1|1.2] (default 1.2, as mdadm)\n"
                   "                    [--name NAME] [--assume-clean] [--force] MEMBER... ('missing' for an empty\n"
                   "                    slot; the last M members become spares; RAID-0 members of different sizes\n"
                   "                    make md's zones: --layout original (default) or alternate)\n");
            return 0;
        } else if (a[0] == '-' && a[1]) {
            cli_error("create", "unknown option '%s' (try 'uraid create --help')", a);
            return 2;
        } else {
            if (n >= URAID_MAX_MEMBERS) {
                cli_error("create", "too many members");
                return 2;
            }
            members[n++] = a;
        }
#undef TAKE
    }
    if (p.level == LEVEL_UNSET) {
        cli_error("create", "--level is required (linear, 0, 1, 4, 5, 6 or 10)");
        return 2;
    }
    if (p.raid_devices == 0) {
        cli_error("create", "--raid-devices is required");
        return 2;
    }
    if (cli_setup_parity("create"))
        return 1;
    struct progress pr = {.tty = isatty(STDERR_FILENO), .start = time(NULL), .last_pct = -1};
    p.progress = show_progress;
    p.progress_ctx = &pr;
    char why[512];
    int rc = uraid_create(members, n, &p, force, why, sizeof why);
    if (rc) {
        cli_error("create", "%s", why[0] ? why : uraid_strerror(rc));
        return 1;
    }
    char lt[16];
    printf("uraid: array created (%s, %d members, metadata %s%s", level_text(p.level, lt, sizeof lt),
           n - p.spare_devices, uraid_metadata_name(p.metadata), p.assume_clean ? ", parity not synced: --assume-clean" : "");
    if (p.spare_devices)
        printf(", %d spare%s", p.spare_devices, p.spare_devices > 1 ? "s" : "");
    printf(")\n");
    print_policy(members, n, &p);
    return 0;
}
