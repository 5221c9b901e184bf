/* nbdkit-uraid-plugin: serves one uraid array over NBD.
 *
 *   nbdkit build/nbdkit-uraid-plugin.so member=A member=B ... \
 *          [force=1] [layer=SPEC | layer=MEMBER:SPEC]... [control=PATH]
 *
 * ("member" is the magic key, so bare paths work too: `nbdkit PLUGIN A B C`.)
 *
 * A thin front-end (DESIGN.md habit 12): it translates NBD requests into
 * uraid_read / uraid_write / uraid_flush and engine errors into NBD errors.
 * Assembly, degraded reads, parity and member failure are the engine's
 * business; nothing here decides anything about RAID.
 *
 * control=PATH serves the control socket (include/uraid_ctl.h) for the
 * array this process owns, so `uraid fail/remove/add/status --control PATH`
 * act on the live array instead of opening the members a second time.
 *
 * Life cycle: the members are checked with a read-only open in get_ready,
 * so bad input fails before nbdkit binds a socket and the message reaches
 * the user's terminal. The array the server uses is opened in after_fork:
 * nbdkit forks into the background after get_ready (unless --foreground),
 * and the engine's worker threads and io_uring rings would not survive a
 * fork. It is closed in unload, which writes the clean state to every
 * member, so a server stopped with SIGTERM/SIGINT leaves a clean array. */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uraid.h"
#include "uraid_admin.h"
#include "uraid_ctl.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static const char *members[URAID_MAX_MEMBERS];
static int nmembers;
/* layer= arguments as given; resolved against members in config_complete
 * because nbdkit passes keys in command-line order and a MEMBER:SPEC layer
 * may come before its member= key. */
static const char *layer_arg[URAID_MAX_MEMBERS];
static int nlayers;
static char sim_text[URAID_MAX_MEMBERS][256];
static const char *sim[URAID_MAX_MEMBERS];
/* a serving array rebuilds onto spares by itself, as md does */
static struct uraid_open_params open_params = {.auto_rebuild = 1};
static const char *control_path;
static int rmw_level = -1; /* rmw_level=N; -1: the library's default */

static struct uraid_array *array;
static struct uraid_ctl *ctl;

/* Library messages: errors and warnings matter to whoever runs the server
 * (a stale member left out, a member failed on a write error), so they go
 * through nbdkit_error, which reaches stderr or syslog like nbdkit's own;
 * the rest only with -v. */
static void log_to_nbdkit(void *ctx, enum uraid_log_level level, const char *msg)
{
    if (level == URAID_LOG_ERROR)
        nbdkit_error("%s", msg);
    else if (level == URAID_LOG_WARN)
        nbdkit_error("warning: %s", msg);
    else
        nbdkit_debug("%s", msg);
}

static void uraid_plugin_load(void)
{
    uraid_set_log(log_to_nbdkit, NULL, URAID_LOG_DEBUG);
}

static int uraid_plugin_config(const char *key, const char *value)
{
    if (!strcmp(key, "member")) {
        if (nmembers >= URAID_MAX_MEMBERS) {
            nbdkit_error("too many members (at most %d)", URAID_MAX_MEMBERS);
            return -1;
        }
        for (int i = 0; i < nmembers; i++)
            if (!strcmp(members[i], value)) {
                nbdkit_error("member %s is given twice", value);
                return -1;
            }
        members[nmembers++] = value;
    } else if (!strcmp(key, "force")) {
        int r = nbdkit_parse_bool(value);
        if (r < 0)
            return -1;
        open_params.force = r;
    } else if (!strcmp(key, "layer")) {
        if (nlayers >= URAID_MAX_MEMBERS) {
            nbdkit_error("too many layer= keys");
            return -1;
        }
        layer_arg[nlayers++] = value;
    } else if (!strcmp(key, "control")) {
        control_path = value;
    } else if (!strcmp(key, "rebuild") || !strcmp(key, "resync")) {
        int r = nbdkit_parse_bool(value);
        if (r < 0)
            return -1;
        if (!strcmp(key, "rebuild"))
            open_params.no_spare_rebuild = !r;
        else
            open_params.no_auto_resync = !r;
    } else if (!strcmp(key, "speed_limit")) {
        int64_t bytes = nbdkit_parse_size(value);
        if (bytes < 1024) {
            nbdkit_error("speed_limit=%s: give bytes per second per member, at least 1K", value);
            return -1;
        }
        open_params.sync_speed_max_kib = (uint64_t)bytes / 1024;
    } else if (!strcmp(key, "event_cmd")) {
        open_params.event_program = value;
    } else if (!strcmp(key, "rmw_level")) {
        if (strlen(value) != 1 || value[0] < '0' || value[0] > '2') {
            nbdkit_error("rmw_level=%s: give 0 (reconstruct-write only), 1 (fewest reads) or 2 (prefer "
                         "read-modify-write)",
                         value);
            return -1;
        }
        rmw_level = value[0] - '0';
    } else {
        nbdkit_error("unknown parameter '%s' (expected member=, force=, layer=, control=, rebuild=, resync=, "
                     "speed_limit=, event_cmd=, rmw_level=)",
                     key);
        return -1;
    }
    return 0;
}

/* layer=SPEC applies to every member, layer=MEMBER:SPEC to that member
 * (the same rule as the CLI's --member-layer); specs are joined with ';',
 * the syntax uraid_open_params.member_sim takes. */
static int resolve_layers(void)
{
    for (int l = 0; l < nlayers; l++) {
        char why[300];
        if (uraid_member_layer_add(layer_arg[l], members, nmembers, sim_text[0], sizeof sim_text[0], why, sizeof why)) {
            nbdkit_error("layer=%s: %s", layer_arg[l], why);
            return -1;
        }
    }
    if (nlayers) {
        for (int i = 0; i < nmembers; i++)
            sim[i] = sim_text[i];
        open_params.member_sim = sim;
    }
    return 0;
}

static int uraid_plugin_config_complete(void)
{
    if (nmembers == 0) {
        nbdkit_error("no members given: use member=PATH (once per member)");
        return -1;
    }
    return resolve_layers();
}

/* Checks the members (every refusal uraid_open knows) without writing a
 * byte, while errors still reach the terminal and before a socket is bound. */
static int uraid_plugin_get_ready(void)
{
    struct uraid_open_params ro = open_params;
    struct uraid_array *probe;
    char why[512] = "";
    ro.readonly = 1;
    int rc = uraid_open(members, nmembers, &ro, &probe, why, sizeof why);
    if (rc) {
        nbdkit_error("%s", why[0] ? why : uraid_strerror(rc));
        return -1;
    }
    uraid_close(probe);
    return 0;
}

/* A "stop" request on the control socket: nbdkit then stops accepting,
 * finishes the requests in flight and calls unload, which closes the array
 * cleanly, the same path as SIGTERM. */
static void request_stop(void *ctx)
{
    nbdkit_shutdown();
}

static int uraid_plugin_after_fork(void)
{
    char why[512] = "";
    int rc = uraid_open(members, nmembers, &open_params, &array, why, sizeof why);
    if (rc) {
        nbdkit_error("%s", why[0] ? why : uraid_strerror(rc));
        return -1;
    }
    nbdkit_debug("array of %llu bytes on %d members, I/O engine %s", (unsigned long long)uraid_size(array),
                 nmembers, uraid_io_engine(array));
    if (rmw_level >= 0)
        uraid_set_rmw_level(array, rmw_level); /* 0..2: checked in config */
    if (control_path) {
        /* Started after the fork for the same reason as the array: its
         * thread would not survive it. */
        rc = uraid_ctl_start(array, control_path, request_stop, NULL, &ctl, why, sizeof why);
        if (rc) {
            nbdkit_error("control socket %s: %s", control_path, why[0] ? why : uraid_strerror(rc));
            return -1;
        }
    }
    return 0;
}

/* A clean close flushes and records the array clean in every member. */
static void uraid_plugin_unload(void)
{
    /* the control thread uses the array: stop it first */
    if (ctl) {
        uraid_ctl_stop(ctl);
        ctl = NULL;
    }
    if (array) {
        int rc = uraid_close(array);
        if (rc)
            nbdkit_error("closing the array: %s", uraid_strerror(rc));
        array = NULL;
    }
}

/* Every connection shares the one array: there is no per-connection state. */
static void *uraid_plugin_open(int readonly)
{
    if (!array)
        nbdkit_error("the array is not open");
    return array;
}

static int64_t uraid_plugin_get_size(void *handle)
{
    return (int64_t)uraid_size(handle);
}

/* The engine takes 512-byte multiples; advertising that lets clients that
 * honour NBD block size constraints align their requests. 4 KiB is preferred
 * because smaller writes cost a read-modify-write of whole member blocks. */
static int uraid_plugin_block_size(void *handle, uint32_t *minimum, uint32_t *preferred, uint32_t *maximum)
{
    *minimum = 512;
    *preferred = 4096;
    *maximum = 0xffffffff;
    return 0;
}

/* Safe because this process opens the array once and every connection uses
 * that one object: a read on any connection sees every write completed on
 * any other (the engine's stripe locks order them), and uraid_flush makes
 * every completed write durable on all members, whichever connection
 * issued it. That is exactly what NBD_FLAG_CAN_MULTI_CONN promises. */
static int uraid_plugin_can_multi_conn(void *handle)
{
    return 1;
}

static int uraid_plugin_can_flush(void *handle)
{
    return 1;
}

/* FUA is a write followed by uraid_flush (the engine has no per-write FUA). */
static int uraid_plugin_can_fua(void *handle)
{
    return NBDKIT_FUA_NATIVE;
}

/* Engine results are negative errnos; anything outside the errno range is
 * reported to the client as EIO. */
static int fail(int rc, const char *what, uint32_t count, uint64_t offset)
{
    int err = rc < 0 && -rc < 4096 ? -rc : EIO;
    nbdkit_error("uraid: %s of %u bytes at array offset %llu: %s (errno %d)", what, count,
                 (unsigned long long)offset, uraid_strerror(rc), err);
    nbdkit_set_error(err);
    return -1;
}

static int uraid_plugin_pread(void *handle, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
    int rc = uraid_read(handle, buf, count, offset);
    return rc ? fail(rc, "read", count, offset) : 0;
}

static int uraid_plugin_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
    int rc = uraid_write(handle, buf, count, offset);
    if (rc)
        return fail(rc, "write", count, offset);
    if (flags & NBDKIT_FLAG_FUA) {
        rc = uraid_flush(handle);
        if (rc)
            return fail(rc, "flush (FUA write)", count, offset);
    }
    return 0;
}

static int uraid_plugin_flush(void *handle, uint32_t flags)
{
    int rc = uraid_flush(handle);
    if (rc) {
        int err = -rc < 4096 ? -rc : EIO;
        nbdkit_error("uraid: flush: %s (errno %d)", uraid_strerror(rc), err);
        nbdkit_set_error(err);
        return -1;
    }
    return 0;
}

/* Trim and zero both become uraid_write_zeroes: whole stripes are zeroed
 * on every member without reads (file members get holes back), so a
 * trimmed range also reads as zeros, which NBD allows. No .extents: the
 * array does not track which ranges are holes. */
static int uraid_plugin_can_trim(void *handle)
{
    return 1;
}

static int uraid_plugin_can_zero(void *handle)
{
    return 1;
}

static int zero_range(void *handle, uint32_t count, uint64_t offset, uint32_t flags, const char *what)
{
    int rc = uraid_write_zeroes(handle, count, offset);
    if (rc)
        return fail(rc, what, count, offset);
    if (flags & NBDKIT_FLAG_FUA) {
        rc = uraid_flush(handle);
        if (rc)
            return fail(rc, "flush (FUA)", count, offset);
    }
    return 0;
}

static int uraid_plugin_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
    return zero_range(handle, count, offset, flags, "trim");
}

static int uraid_plugin_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
    return zero_range(handle, count, offset, flags, "zero");
}

static struct nbdkit_plugin plugin = {
    .name = "uraid",
    .longname = "uraid user-space RAID array (md v1.2 members)",
    .version = "0.1.0",
    .description = "Serves a uraid array (Linux md on-disk format) over NBD.",
    .magic_config_key = "member",
    .config_help = "member=PATH       a member file or block device (repeat; any order)\n"
                   "force=BOOL        open a dirty and degraded array\n"
                   "layer=[MEMBER:]SPEC  simulated disk/fault layer (see uraid --member-layer)\n"
                   "control=PATH      control socket (uraid fail/remove/add/status)\n"
                   "rebuild=BOOL      rebuild a spare into a failed slot by itself (default true)\n"
                   "resync=BOOL       resync an array found not shut down cleanly by itself (default true)\n"
                   "speed_limit=SIZE  background rebuild/scrub speed limit per member, per second\n"
                   "event_cmd=PROG    run 'PROG EVENT ARRAY [MEMBER]' on each event (mdadm --monitor's names)\n"
                   "rmw_level=N       md's rmw_level: 0 reconstruct-write only, 1 fewest reads (default),\n"
                   "                  2 read-modify-write on a tie",
    .load = uraid_plugin_load,
    .unload = uraid_plugin_unload,
    .config = uraid_plugin_config,
    .config_complete = uraid_plugin_config_complete,
    .get_ready = uraid_plugin_get_ready,
    .after_fork = uraid_plugin_after_fork,
    .open = uraid_plugin_open,
    .get_size = uraid_plugin_get_size,
    .block_size = uraid_plugin_block_size,
    .can_multi_conn = uraid_plugin_can_multi_conn,
    .can_flush = uraid_plugin_can_flush,
    .can_fua = uraid_plugin_can_fua,
    .pread = uraid_plugin_pread,
    .pwrite = uraid_plugin_pwrite,
    .flush = uraid_plugin_flush,
    .can_trim = uraid_plugin_can_trim,
    .can_zero = uraid_plugin_can_zero,
    .trim = uraid_plugin_trim,
    .zero = uraid_plugin_zero,
};

NBDKIT_REGISTER_PLUGIN(plugin)
