/* uraid detail MEMBERS...: the array the way `mdadm --detail` shows it, plus
 * /proc/mdstat's [n/m] [UU_U] status. Opens read-only: writes nothing. */
#include <string.h>
#include <time.h>

#include "cli.h"
#include "uraid_admin.h"

void cli_print_uuid(const uint8_t *u)
{
    char text[URAID_UUID_TEXT];
    uraid_uuid_text(u, text);
    fputs(text, stdout);
}

const char *cli_human_size(uint64_t bytes, char *buf, size_t len)
{
    /* mdadm's human_size: " (9.00 MiB 9.44 MB)", nothing below 5000 KiB,
     * MiB up to 2 GiB, GiB up to 2 TiB, then TiB; hundredths rounded half
     * up from integers (printf's %.2f would round 6.125 down) */
    if (bytes < 5000 * 1024) {
        buf[0] = 0;
        return buf;
    }
    static const char *bin[] = {"MiB", "GiB", "TiB"}, *dec[] = {"MB", "GB", "TB"};
    int u = bytes < (2ull << 30) ? 0 : bytes < (2ull << 40) ? 1 : 2;
    unsigned __int128 b = bytes;
    uint64_t cbin = (uint64_t)((b * 200 / ((unsigned __int128)1 << (20 + 10 * u)) + 1) / 2);
    uint64_t step = u == 0 ? 1000000ull / 200 : u == 1 ? 1000000000ull / 200 : 1000000000000ull / 200;
    uint64_t cdec = (bytes / step + 1) / 2;
    snprintf(buf, len, " (%llu.%02llu %s %llu.%02llu %s)", (unsigned long long)(cbin / 100),
             (unsigned long long)(cbin % 100), bin[u], (unsigned long long)(cdec / 100), (unsigned long long)(cdec % 100),
             dec[u]);
    return buf;
}

const char *cli_time(uint64_t secs, char *buf, size_t len)
{
    time_t t = (time_t)(secs & 0xffffffffffull);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%a %b %e %H:%M:%S %Y", &tm);
    return buf;
}

int cmd_detail(int argc, char **argv)
{
    struct cli_members mem;
    struct uraid_open_params op = {.readonly = 1};
    int rc = cli_parse_members("detail", argc, argv, &mem, &op, NULL);
    if (rc)
        return rc < 0 ? 0 : rc;
    op.readonly = 1;
    struct uraid_array *a;
    if (cli_open_array("detail", &mem, &op, &a))
        return 1;
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    char h[64], t[64], cs[16];
    int active = 0, spare = 0, failed = 0, total = 0, rebuilt_pct = -1;
    for (int i = 0; i < info.nmembers; i++) {
        const struct uraid_member_info *m = &info.member[i];
        if (m->state == URAID_MEMBER_IN_SYNC)
            active++;
        else if (m->state == URAID_MEMBER_SPARE || m->state == URAID_MEMBER_REBUILDING)
            spare++; /* mdadm counts a member being rebuilt as a spare */
        if (m->state == URAID_MEMBER_REBUILDING && info.member_data_sectors)
            rebuilt_pct = (int)(m->recovery_offset_sectors * 100 / info.member_data_sectors);
        else if (m->state == URAID_MEMBER_FAULTY || m->state == URAID_MEMBER_STALE)
            failed++;
        if (m->path[0])
            total++;
    }
    printf("           Version : %s\n", info.metadata);
    printf("     Creation Time : %s\n", cli_time(info.ctime, t, sizeof t));
    if (info.level == -1)
        printf("        Raid Level : linear\n");
    else
        printf("        Raid Level : raid%d\n", info.level);
    printf("        Array Size : %llu%s\n", (unsigned long long)(info.size_bytes / 1024),
           cli_human_size(info.size_bytes, h, sizeof h));
    if (info.level > 0)
        printf("     Used Dev Size : %llu%s\n", (unsigned long long)(info.member_data_sectors / 2),
               cli_human_size(info.member_data_sectors * 512, h, sizeof h));
    printf("      Raid Devices : %d\n", info.raid_devices);
    printf("     Total Devices : %d\n", total);
    printf("       Persistence : Superblock is persistent\n\n");
    if (info.bitmap)
        printf("     Intent Bitmap : Internal\n\n");
    printf("       Update Time : %s\n", cli_time(info.utime, t, sizeof t));
    /* mid RAID-5 -> 6 restripe the new Q member is recovered by the reshape itself (mdadm: "reshaping") */
    printf("             State : %s%s%s\n", info.clean ? "clean" : "active", info.degraded ? ", degraded" : "",
           info.reshape_total_sectors ? ", reshaping (stopped: resume with 'uraid grow --continue' or 'uraid serve')"
           : rebuilt_pct >= 0 ? ", recovering (stopped: resume with 'uraid rebuild')" : "");
    printf("    Active Devices : %d\n", active);
    printf("   Working Devices : %d\n", active + spare);
    printf("    Failed Devices : %d\n", failed);
    printf("     Spare Devices : %d\n\n", spare);
    /* mid-reshape mdadm shows the recorded (old) layout and chunk, the new ones below */
    int reshaping = info.reshape_total_sectors != 0;
    int layout = reshaping ? info.reshape_from_layout : info.layout;
    uint32_t chunk = reshaping ? info.reshape_from_chunk_bytes : info.chunk_bytes;
    if (info.level == 4 || info.level == 5 || info.level == 6 || info.level == 10 || (info.level == 0 && info.layout))
        printf("            Layout : %s\n", uraid_layout_name(info.level, layout));
    if (info.level == -1)
        printf("          Rounding : %uK\n\n", (unsigned)(chunk / 1024));
    else if (info.level != 1)
        printf("        Chunk Size : %s\n\n", cli_format_size(chunk, cs, sizeof cs));
    printf("Consistency Policy : %s\n", uraid_policy_name(info.consistency_policy));
    if (info.md_refuses)
        printf("       md Assembly : refused (partial Q logged on RAID-6) until 'uraid grow "
               "--consistency-policy=bitmap|resync' switches it\n");
    printf("\n");
    if (rebuilt_pct >= 0)
        printf("    Rebuild Status : %d%% complete\n\n", rebuilt_pct);
    if (reshaping) {
        uint64_t done = info.reshape_backwards ? info.reshape_total_sectors - info.reshape_position_sectors
                                               : info.reshape_position_sectors; /* a shrink counts down */
        printf("    Reshape Status : %d%% complete\n", (int)(done * 100 / info.reshape_total_sectors));
        if (info.reshape_delta)
            printf("     Delta Devices : %d, (%d->%d)\n", info.reshape_delta, info.raid_devices - info.reshape_delta,
                   info.raid_devices);
        if (layout != info.layout && info.level != 4)
            printf("        New Layout : %s\n", uraid_layout_name(info.level, info.layout));
        if (chunk != info.chunk_bytes)
            printf("     New Chunksize : %s\n", cli_format_size(info.chunk_bytes, cs, sizeof cs));
        printf("\n");
    }
    printf("              Name : %s\n", info.name);
    printf("              UUID : ");
    cli_print_uuid(info.uuid);
    printf("\n            Events : %llu\n\n", (unsigned long long)info.events);
    printf("            Status : [%d/%d] [", info.raid_devices, info.raid_devices - info.degraded);
    for (int s = 0; s < info.raid_devices; s++)
        putchar(info.member[s].state == URAID_MEMBER_IN_SYNC ? 'U' : '_');
    printf("]\n\n");
    printf("    Number   RaidDevice State\n");
    for (int i = 0; i < info.nmembers; i++) {
        const struct uraid_member_info *m = &info.member[i];
        char num[16], slot[16];
        snprintf(num, sizeof num, m->dev_number >= 0 ? "%d" : "-", m->dev_number);
        snprintf(slot, sizeof slot, m->slot >= 0 ? "%d" : "-", m->slot);
        const char *state = m->state == URAID_MEMBER_IN_SYNC   ? "active sync"
                            : m->state == URAID_MEMBER_MISSING ? "removed"
                            : m->state == URAID_MEMBER_SPARE   ? "spare"
                            : m->state == URAID_MEMBER_FAULTY  ? "faulty"
                            : m->state == URAID_MEMBER_REBUILDING ? "spare rebuilding"
                                                               : "stale (left out)";
        printf("    %6s   %10s %-18s %s\n", num, slot, state, m->path);
    }
    uraid_close(a);
    return 0;
}
