/* The status text of an open array: what the control socket's "status"
 * returns and a FUSE mount's status file shows. /proc/mdstat's line first
 * (so scripts can grep "[4/3] [UU_U]"), then mdadm --detail's facts, the
 * members, the data path's counters and the parity routines in use. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "array/readahead.h"
#include "layout.h"
#include "uraid_ctl.h"

struct out {
    char *buf;
    size_t len, used;
    int truncated;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
    if (o->used >= o->len) {
        o->truncated = 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    if ((size_t)w >= o->len - o->used) {
        o->truncated = 1;
        o->used = o->len;
    } else {
        o->used += (size_t)w;
    }
}

static const char *member_state(const struct uraid_member_info *m)
{
    switch (m->state) {
    case URAID_MEMBER_IN_SYNC: return "active sync";
    case URAID_MEMBER_MISSING: return "removed";
    case URAID_MEMBER_FAULTY: return "faulty";
    case URAID_MEMBER_SPARE: return "spare";
    case URAID_MEMBER_STALE: return "stale";
    case URAID_MEMBER_REBUILDING: return "spare rebuilding";
    }
    return "?";
}

/* mdstat's flag after a member: (F) faulty, (S) spare, (R)-like for stale */
static const char *mdstat_flag(const struct uraid_member_info *m)
{
    switch (m->state) {
    case URAID_MEMBER_FAULTY: return "(F)";
    case URAID_MEMBER_SPARE: return "(S)";
    case URAID_MEMBER_STALE: return "(stale)";
    case URAID_MEMBER_REBUILDING: return "(R)";
    default: return "";
    }
}

int uraid_status_text(struct uraid_array *a, char *buf, size_t buflen)
{
    if (!a || !buf || !buflen)
        return -EINVAL;
    /* ~80 KiB: not on a thread's stack (FUSE and nbdkit threads are small) */
    struct uraid_array_info *ip = malloc(sizeof *ip);
    if (!ip)
        return -ENOMEM;
    /* member state changes (control requests) happen under meta_lock */
    pthread_mutex_lock(&a->meta_lock);
    array_info_locked(a, ip);
    int dirty_open = a->opened_dirty;
    pthread_mutex_unlock(&a->meta_lock);
    struct uraid_counters c;
    uraid_get_counters(a, &c);

    struct out o = {buf, buflen, 0, 0};
    int n = ip->raid_devices, active = 0, faulty = 0, spare = 0;
    for (int i = 0; i < ip->nmembers; i++) {
        active += ip->member[i].slot >= 0 && ip->member[i].state == URAID_MEMBER_IN_SYNC;
        faulty += ip->member[i].state == URAID_MEMBER_FAULTY;
        spare += ip->member[i].state == URAID_MEMBER_SPARE;
    }
    put(&o, "uraid: active%s raid%d", a->readonly ? " (read-only)" : "", ip->level);
    for (int i = 0; i < ip->nmembers; i++) {
        const struct uraid_member_info *m = &ip->member[i];
        if (!m->path[0])
            continue;
        if (m->slot >= 0)
            put(&o, " %s[%d]%s", m->path, m->slot, mdstat_flag(m));
        else
            put(&o, " %s%s", m->path, mdstat_flag(m));
    }
    put(&o, " [%d/%d] [", n, active);
    for (int s = 0; s < n; s++)
        put(&o, "%c", ip->member[s].state == URAID_MEMBER_IN_SYNC ? 'U' : '_');
    put(&o, "]\n");
    struct wib_info bi;
    wib_get_info(a, &bi);
    if (bi.present)
        put(&o, "      bitmap: %llu/%llu pages [%lluKB], %uKB chunk\n", (unsigned long long)bi.pages_used,
            (unsigned long long)bi.pages, (unsigned long long)bi.pages_used * 4, bi.chunk_bytes / 1024);

    char name[33] = {0};
    memcpy(name, ip->name, 32);
    put(&o, "        Name : %s\n", name);
    char uuid[MD_UUID_TEXT];
    md_uuid_text(ip->uuid, uuid);
    put(&o, "        UUID : %s\n", uuid);
    put(&o, "  Raid Level : raid%d\n", ip->level);
    put(&o, "  Array Size : %llu bytes\n", (unsigned long long)ip->size_bytes);
    put(&o, "Used Dev Size : %llu sectors\n", (unsigned long long)ip->member_data_sectors);
    if (ip->level != 1)
        put(&o, "  Chunk Size : %uK\n      Layout : %s\n", ip->chunk_bytes / 1024,
            layout_name(ip->level, ip->layout) ? layout_name(ip->level, ip->layout) : "-");
    struct uraid_job_status js;
    /* md's word while the resync runs (after a grown size too: the new region is synced) */
    int resyncing = dirty_open && uraid_job_status(a, &js) == 0 && js.running && js.kind == URAID_JOB_RESYNC;
    put(&o, "       State : %s%s%s%s\n", ip->clean ? "clean" : "active", ip->degraded ? ", degraded" : "",
        resyncing ? ", resyncing" : dirty_open ? ", not shut down cleanly (parity may be stale)" : "",
        a->readonly ? ", read-only" : "");
    put(&o, "      Events : %llu\n", (unsigned long long)ip->events);
    put(&o, "Raid Devices : %d\n Active Devices : %d\nFailed Devices : %d\n Spare Devices : %d\n", n, active,
        faulty, spare);
    put(&o, "\n  Slot  DevNum  State          Events  Corrected  Path\n");
    for (int i = 0; i < ip->nmembers; i++) {
        const struct uraid_member_info *m = &ip->member[i];
        char slot[12], dev[12];
        snprintf(slot, sizeof slot, m->slot >= 0 ? "%d" : "-", m->slot);
        snprintf(dev, sizeof dev, m->dev_number >= 0 ? "%d" : "-", m->dev_number);
        put(&o, "  %4s  %6s  %-12s %8llu  %9u  %s\n", slot, dev, member_state(m), (unsigned long long)m->events,
            m->corrected_reads, m->path[0] ? m->path : "-");
    }
    put(&o, "\ncounters: member reads %llu (%llu bytes), member writes %llu (%llu bytes)\n",
        (unsigned long long)c.member_reads, (unsigned long long)c.member_read_bytes,
        (unsigned long long)c.member_writes, (unsigned long long)c.member_write_bytes);
    put(&o, "          stripe writes: full %llu, rmw %llu, rcw %llu, degraded %llu\n",
        (unsigned long long)c.writes_full_stripe, (unsigned long long)c.writes_rmw, (unsigned long long)c.writes_rcw,
        (unsigned long long)c.writes_degraded);
    put(&o, "          reconstructions %llu, corrected reads %llu, member failures %llu\n",
        (unsigned long long)c.reconstructions, (unsigned long long)c.corrected_reads,
        (unsigned long long)c.member_failures);
    if (a->ra) {
        struct ra_stats rs;
        ra_get_stats(a->ra, &rs);
        put(&o, "          read-ahead: %llu MiB served, %llu windows (%llu by its thread), %llu dropped, %llu stale, "
                "%d streams, %zu of %zu MiB cached\n",
            (unsigned long long)(rs.hits >> 11), (unsigned long long)rs.fills, (unsigned long long)rs.async_fills,
            (unsigned long long)rs.dropped, (unsigned long long)rs.stale, rs.streams, rs.bytes >> 20,
            rs.budget >> 20);
    }
    put(&o, "parity:");
    for (int op = 0; op < URAID_OP_COUNT; op++) {
        double mbps = uraid_parity_chosen_mbps((enum uraid_parity_op)op);
        put(&o, "%s %s %s", op ? "," : "", uraid_parity_op_name((enum uraid_parity_op)op),
            uraid_parity_chosen((enum uraid_parity_op)op));
        if (mbps > 0)
            put(&o, " (%.0f MB/s)", mbps);
    }
    put(&o, "\nio engine: %s\n", uraid_io_engine(a));
    uraid_job_status(a, &js);
    char line[256];
    uraid_job_progress_line(&js, line, sizeof line);
    put(&o, "%s\n", line);
    free(ip);
    return o.truncated ? -ENOBUFS : 0;
}
