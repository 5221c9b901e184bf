/* uraid examine MEMBER...: each member's superblock the way
 * `mdadm --examine` prints it, then its write-intent bitmap the way
 * `mdadm --examine-bitmap` (-X) does. Reads only. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "layout.h"
#include "member/member.h"
#include "meta/bitmap.h"
#include "meta/superblock.h"

int array_read_superblock(struct member *m, struct md_sb *sb, char *why, size_t whylen);

static void print_array_state(const struct md_sb *sb)
{
    /* one letter per raid slot: A active, . missing (from this member's view) */
    char state[URAID_MAX_MEMBERS + 1];
    int n = (int)sb->raid_disks < URAID_MAX_MEMBERS ? (int)sb->raid_disks : URAID_MAX_MEMBERS;
    memset(state, '.', (size_t)n);
    state[n] = 0;
    for (uint32_t d = 0; d < sb->max_dev; d++) {
        uint16_t r = sb->dev_roles[d];
        if (r < (uint16_t)n)
            state[r] = 'A';
    }
    printf("   Array State : %s ('A' == active, '.' == missing, 'R' == replacing)\n", state);
}

/* mdadm's human_chunksize: whole B, KB, MB or GB */
static void chunk_text(uint32_t bytes, char *out, size_t len)
{
    const char *unit[] = {"B", "KB", "MB", "GB"};
    int u = 0;
    while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(out, len, "%u %s", bytes, unit[u]);
}

/* The bitmap at sb + bitmap_offset, with the labels of mdadm -X. */
static int print_bitmap(struct member *m, const struct md_sb *sb)
{
    uint64_t at = (sb->super_offset + (uint64_t)(int64_t)sb->bitmap_offset) * 512;
    uint8_t head[512] __attribute__((aligned(4096)));
    struct md_bitmap_sb bm;
    char why[200];
    int rc = member_read(m, head, sizeof head, at);
    if (rc == 0)
        rc = md_bitmap_decode(head, &bm, why, sizeof why);
    else
        snprintf(why, sizeof why, "%s", uraid_strerror(rc));
    if (rc) {
        cli_error("examine", "member %s: write-intent bitmap at sector %llu: %s", m->path,
                  (unsigned long long)(at / 512), why);
        return 1;
    }
    uint64_t nbits = md_bitmap_bits(&bm), area = md_bitmap_area_bytes(nbits);
    uint8_t *buf = aligned_alloc(4096, (area + 4095) / 4096 * 4096);
    if (!buf || member_read(m, buf, area, at)) {
        free(buf);
        cli_error("examine", "member %s: cannot read the write-intent bitmap's %llu bits", m->path,
                  (unsigned long long)nbits);
        return 1;
    }
    uint64_t dirty = md_bitmap_count(buf + MD_BITMAP_HEADER_BYTES, nbits);
    free(buf);
    char cs[32];
    chunk_text(bm.chunksize, cs, sizeof cs);
    printf("\n  Write-intent bitmap (as mdadm --examine-bitmap):\n");
    printf("           Magic : %08x\n", MD_BITMAP_MAGIC);
    printf("         Version : %u\n", bm.version);
    printf("            UUID : ");
    cli_print_uuid(bm.uuid);
    printf("\n          Events : %llu\n", (unsigned long long)bm.events);
    printf("  Events Cleared : %llu\n", (unsigned long long)bm.events_cleared);
    printf("           State : %s\n", (bm.state & MD_BITMAP_STATE_STALE) ? "Out of date" : "OK");
    printf("       Chunksize : %s\n", cs);
    printf("          Daemon : %us flush period\n", bm.daemon_sleep);
    printf("      Write Mode : %s\n", bm.write_behind ? "Allow write behind" : "Normal");
    printf("       Sync Size : %llu\n", (unsigned long long)(bm.sync_size / 2));
    printf("          Bitmap : %llu bits (chunks), %llu dirty (%.1f%%)\n", (unsigned long long)nbits,
           (unsigned long long)dirty, nbits ? 100.0 * (double)dirty / (double)nbits : 0.0);
    return 0;
}

static int examine_one(const char *path)
{
    struct member *m;
    char why[300];
    int rc = member_open_why(path, 1, &m, why, sizeof why);
    if (rc) {
        cli_error("examine", "member %s: cannot open: %s", path, why);
        return 1;
    }
    struct md_sb sb;
    rc = array_read_superblock(m, &sb, why, sizeof why);
    if (rc) {
        cli_error("examine", "%s", why);
        member_close(m);
        return 1;
    }
    char t[64], h[64], cs[16];
    printf("%s:\n", path);
    printf("          Magic : a92b4efc\n");
    printf("        Version : 1.2\n");
    printf("    Feature Map : 0x%x\n", sb.feature_map);
    printf("     Array UUID : ");
    cli_print_uuid(sb.set_uuid);
    printf("\n           Name : %.32s\n", sb.set_name);
    printf("  Creation Time : %s\n", cli_time(sb.ctime, t, sizeof t));
    printf("     Raid Level : raid%d\n", sb.level);
    printf("   Raid Devices : %u\n\n", sb.raid_disks);
    printf(" Avail Dev Size : %llu sectors%s\n", (unsigned long long)sb.data_size,
           cli_human_size(sb.data_size * 512, h, sizeof h));
    struct layout_geom g = {sb.level, (int)sb.layout, (int)sb.raid_disks, sb.chunksize};
    uint64_t array_sectors = 0;
    /* like mdadm, no array size when the superblock records none (RAID-0) */
    if (sb.size && layout_array_sectors(&g, sb.size, &array_sectors) == 0)
        printf("     Array Size : %llu KiB%s\n", (unsigned long long)(array_sectors / 2),
               cli_human_size(array_sectors * 512, h, sizeof h));
    if (sb.size != sb.data_size)
        printf("  Used Dev Size : %llu sectors\n", (unsigned long long)sb.size);
    printf("    Data Offset : %llu sectors\n", (unsigned long long)sb.data_offset);
    printf("   Super Offset : %llu sectors\n", (unsigned long long)sb.super_offset);
    if (sb.feature_map & MD_FEATURE_RECOVERY_OFFSET)
        printf("Recovery Offset : %llu sectors\n", (unsigned long long)sb.recovery_offset);
    printf("          State : %s\n", sb.resync_offset == MD_RESYNC_CLEAN ? "clean" : "active");
    printf("    Device UUID : ");
    cli_print_uuid(sb.device_uuid);
    printf("\n\n");
    if (sb.feature_map & MD_FEATURE_BITMAP_OFFSET)
        printf("Internal Bitmap : %d sectors from superblock\n", sb.bitmap_offset);
    printf("    Update Time : %s\n", cli_time(sb.utime, t, sizeof t));
    if (sb.bblog_offset && sb.bblog_size)
        printf("  Bad Block Log : %u entries available at offset %d sectors%s\n", sb.bblog_size * 512u / 8,
               sb.bblog_offset, (sb.feature_map & MD_FEATURE_BAD_BLOCKS) ? " - bad blocks present." : "");
    printf("       Checksum : %x - correct\n", sb.sb_csum);
    printf("         Events : %llu\n\n", (unsigned long long)sb.events);
    if (sb.level == 4 || sb.level == 5 || sb.level == 6)
        printf("         Layout : %s\n", layout_name(sb.level, (int)sb.layout));
    else if (sb.level == 0 && (sb.feature_map & MD_FEATURE_RAID0_LAYOUT) && layout_name(0, (int)sb.layout))
        printf("         Layout : %s\n", layout_name(0, (int)sb.layout));
    if (sb.level != 1)
        printf("     Chunk Size : %s\n\n", cli_format_size((uint64_t)sb.chunksize * 512, cs, sizeof cs));
    uint16_t role = sb.dev_number < sb.max_dev ? sb.dev_roles[sb.dev_number] : MD_ROLE_SPARE;
    if (role == MD_ROLE_SPARE)
        printf("   Device Role : spare\n");
    else if (role == MD_ROLE_FAULTY)
        printf("   Device Role : faulty\n");
    else
        printf("   Device Role : Active device %u\n", role);
    print_array_state(&sb);
    rc = (sb.feature_map & MD_FEATURE_BITMAP_OFFSET) ? print_bitmap(m, &sb) : 0;
    member_close(m);
    return rc;
}

int cmd_examine(int argc, char **argv)
{
    int status = 0, any = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: uraid examine MEMBER...\n");
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("examine", "unknown option '%s'", argv[i]);
            return 2;
        }
        any = 1;
        status |= examine_one(argv[i]);
    }
    if (!any) {
        cli_error("examine", "no members given (usage: uraid examine MEMBER...)");
        return 2;
    }
    return status;
}
