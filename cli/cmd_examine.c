/* uraid examine MEMBER...: each member's superblock the way
 * `mdadm --examine` prints it, then its write-intent bitmap the way
 * `mdadm --examine-bitmap` (-X) does. Reads only. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "uraid_admin.h"

/* The metadata= of --scan: uraid_examine reads md v1.2 (as "Version"
 * below); a member of another format is not examined at all. */

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

/* The bitmap with the labels of mdadm -X. */
static int print_bitmap(const struct uraid_examine *e)
{
    if (e->bitmap_err) {
        cli_error("examine", "%s", e->bitmap_why);
        return 1;
    }
    const struct uraid_examine_bitmap *bm = &e->bitmap;
    char cs[32];
    chunk_text(bm->chunk_bytes, cs, sizeof cs);
    printf("\n  Write-intent bitmap (as mdadm --examine-bitmap):\n");
    printf("           Magic : %08x\n", bm->magic);
    printf("         Version : %u\n", bm->version);
    printf("            UUID : ");
    cli_print_uuid(bm->uuid);
    printf("\n          Events : %llu\n", (unsigned long long)bm->events);
    printf("  Events Cleared : %llu\n", (unsigned long long)bm->events_cleared);
    printf("           State : %s\n", bm->stale ? "Out of date" : "OK");
    printf("       Chunksize : %s\n", cs);
    printf("          Daemon : %us flush period\n", bm->daemon_sleep_s);
    printf("      Write Mode : %s\n", bm->write_behind ? "Allow write behind" : "Normal");
    printf("       Sync Size : %llu\n", (unsigned long long)(bm->sync_sectors / 2));
    printf("          Bitmap : %llu bits (chunks), %llu dirty (%.1f%%)\n", (unsigned long long)bm->bits,
           (unsigned long long)bm->dirty_bits, bm->bits ? 100.0 * (double)bm->dirty_bits / (double)bm->bits : 0.0);
    return 0;
}

/* mdadm's "  (local to host H)" after a name "H:..." of this machine. */
static const char *local_host(const char *name, char *buf, size_t len)
{
    char host[256] = "";
    const char *colon = strchr(name, ':');
    buf[0] = 0;
    if (colon && gethostname(host, sizeof host) == 0 && strlen(host) == (size_t)(colon - name) &&
        !strncmp(name, host, (size_t)(colon - name)))
        snprintf(buf, len, "  (local to host %s)", host);
    return buf;
}

/* One row of 0.90's descriptor table, in mdadm's columns and words (the
 * device name mdadm looks up by major:minor is left out). */
static void print_desc(const char *label, const struct uraid_examine_desc *d)
{
    printf("%4s %5u   %5u    %5u    %5d     ", label, d->number, d->major, d->minor, (int)d->raid_disk);
    uint32_t st = d->state & ~((1u << 9) | (1u << 10));
    if (st & 1u)
        printf(" faulty");
    if (st & 2u)
        printf(" active");
    if (st & 4u)
        printf(" sync");
    if (st & 8u)
        printf(" removed");
    if (d->state & (1u << 9))
        printf(" write-mostly");
    if (d->state & (1u << 10))
        printf(" failfast");
    if (st == 0)
        printf(" spare");
    printf("\n");
}

/* What mdadm --examine prints for a 0.90 superblock (super0.c). */
static int print_v090(const char *path, const struct uraid_examine *e)
{
    const struct uraid_examine0 *v = &e->v0;
    char t[64], h[64], cs[16], nb[16];
    printf("%s:\n", path);
    printf("          Magic : a92b4efc\n");
    printf("        Version : %s\n", e->version);
    printf("           UUID : ");
    cli_print_uuid(e->array_uuid);
    printf("\n  Creation Time : %s\n", cli_time(e->ctime, t, sizeof t));
    printf("     Raid Level : raid%d\n", e->level);
    if (e->used_dev_sectors)
        printf("  Used Dev Size : %llu%s\n", (unsigned long long)(e->used_dev_sectors / 2),
               cli_human_size(e->used_dev_sectors * 512, h, sizeof h));
    if (e->array_sectors)
        printf("     Array Size : %llu%s\n", (unsigned long long)(e->array_sectors / 2),
               cli_human_size(e->array_sectors * 512, h, sizeof h));
    printf("   Raid Devices : %d\n", e->raid_devices);
    printf("  Total Devices : %u\n", v->total);
    printf("Preferred Minor : %u\n\n", v->preferred_minor);
    printf("    Update Time : %s\n", cli_time(e->utime, t, sizeof t));
    printf("          State : %s%s\n", e->clean ? "clean" : "active", v->errors ? ", errors" : "");
    if (e->has_bitmap)
        printf("Internal Bitmap : present\n");
    printf(" Active Devices : %u\n", v->active);
    printf("Working Devices : %u\n", v->working);
    printf(" Failed Devices : %u\n", v->failed);
    printf("  Spare Devices : %u\n", v->spare);
    printf("       Checksum : %x - correct\n", e->checksum);
    printf("         Events : %llu\n\n", (unsigned long long)e->events);
    if (e->layout_name)
        printf("         Layout : %s\n", e->layout_name);
    if (e->level != 1)
        printf("     Chunk Size : %s\n", cli_format_size(e->chunk_bytes, cs, sizeof cs));
    printf("\n      Number   Major   Minor   RaidDevice State\n");
    print_desc("this", &v->this_disk);
    printf("\n");
    for (int d = 0; d < v->ndisks; d++) {
        snprintf(nb, sizeof nb, "%4d", d);
        print_desc(nb, &v->disks[d]);
    }
    return e->has_bitmap ? print_bitmap(e) : 0;
}

static int examine_one(const char *path, const char *metadata)
{
    static struct uraid_examine e;
    char why[512];
    if (uraid_examine_as(path, metadata, &e, why, sizeof why)) {
        cli_error("examine", "%s", why);
        return 1;
    }
    if (e.v090)
        return print_v090(path, &e);
    char t[64], h[64], cs[16];
    printf("%s:\n", path);
    printf("          Magic : a92b4efc\n");
    printf("        Version : %s\n", e.version);
    printf("    Feature Map : 0x%x\n", e.feature_map);
    printf("     Array UUID : ");
    cli_print_uuid(e.array_uuid);
    char lh[300];
    printf("\n           Name : %s%s\n", e.name, local_host(e.name, lh, sizeof lh));
    printf("  Creation Time : %s\n", cli_time(e.ctime, t, sizeof t));
    if (e.level == -1)
        printf("     Raid Level : linear\n");
    else
        printf("     Raid Level : raid%d\n", e.level);
    printf("   Raid Devices : %d\n\n", e.raid_devices);
    printf(" Avail Dev Size : %llu sectors%s\n", (unsigned long long)e.avail_dev_sectors,
           cli_human_size(e.avail_dev_sectors * 512, h, sizeof h));
    if (e.array_sectors)
        printf("     Array Size : %llu KiB%s\n", (unsigned long long)(e.array_sectors / 2),
               cli_human_size(e.array_sectors * 512, h, sizeof h));
    if (e.used_dev_sectors != e.avail_dev_sectors && e.level != 0) /* mdadm: none for RAID-0, 0 for linear */
        printf("  Used Dev Size : %llu sectors%s\n", (unsigned long long)e.used_dev_sectors,
               cli_human_size(e.used_dev_sectors * 512, h, sizeof h));
    if (e.data_offset_sectors || strcmp(e.version, "1.0")) /* mdadm leaves 1.0's offset 0 out */
        printf("    Data Offset : %llu sectors\n", (unsigned long long)e.data_offset_sectors);
    printf("   Super Offset : %llu sectors\n", (unsigned long long)e.super_offset_sectors);
    if (e.has_recovery_offset)
        printf("Recovery Offset : %llu sectors\n", (unsigned long long)e.recovery_offset_sectors);
    printf("   Unused Space : before=%llu sectors, after=%llu sectors\n", (unsigned long long)e.space_before,
           (unsigned long long)e.space_after);
    printf("          State : %s\n", e.clean ? "clean" : "active");
    printf("    Device UUID : ");
    cli_print_uuid(e.device_uuid);
    printf("\n\n");
    if (e.has_bitmap)
        printf("Internal Bitmap : %d sectors from superblock\n", e.bitmap_offset_sectors);
    else if (e.has_ppl) /* mdadm prints the offset as an unsigned 16-bit number */
        printf("            PPL : %u sectors at offset %d sectors from superblock\n", e.ppl_sectors,
               (int)(uint16_t)e.ppl_offset_sectors);
    if (e.has_ppl_q)
        printf("          PPL Q : partial Q logged too (RAID-6, feature 0x80000000): md cannot assemble the array "
               "until 'uraid grow --consistency-policy=bitmap|resync' switches it\n");
    printf("    Update Time : %s\n", cli_time(e.utime, t, sizeof t));
    if (e.has_bblog)
        printf("  Bad Block Log : %u entries available at offset %d sectors%s\n", e.bblog_entries,
               e.bblog_offset_sectors, e.bad_blocks_present ? " - bad blocks present." : "");
    printf("       Checksum : %x - correct\n", e.checksum);
    printf("         Events : %llu\n\n", (unsigned long long)e.events);
    if (e.layout_name)
        printf("         Layout : %s\n", e.layout_name);
    if (e.level == -1) /* mdadm: a linear array's chunk only rounds each member */
        printf("       Rounding : %uK\n", e.chunk_bytes / 1024);
    else if (e.level != 1)
        printf("     Chunk Size : %s\n", cli_format_size(e.chunk_bytes, cs, sizeof cs));
    printf("\n"); /* mdadm ends the block with a blank line, RAID-1's too */
    if (e.role == URAID_ROLE_SPARE)
        printf("   Device Role : spare\n");
    else if (e.role == URAID_ROLE_FAULTY)
        printf("   Device Role : faulty\n");
    else
        printf("   Device Role : Active device %d\n", e.role);
    printf("   Array State : %s ('A' == active, '.' == missing, 'R' == replacing)\n", e.array_state);
    return e.has_bitmap ? print_bitmap(&e) : 0;
}

/* ---- --scan: mdadm --examine --scan's ARRAY lines ----------------------- */

static const char *level_text(int level)
{
    static const char *const raid[] = {"raid0", "raid1", NULL, NULL, "raid4", "raid5", "raid6"};
    if (level >= 0 && level <= 6 && raid[level])
        return raid[level];
    return level == 10 ? "raid10" : level == -1 ? "linear" : level == -4 ? "multipath" : "-unknown-";
}

/* mdadm's device name: /dev/md/NAME, without the "homehost:" part. */
static void print_devname(const char *name)
{
    const char *colon = strchr(name, ':');
    printf("ARRAY /dev/md/%s ", colon ? colon + 1 : name);
}

/* One array: the members of f[] sharing f[first]'s UUID. */
static void print_array(const struct cli_found *f, int n, int first)
{
    const struct cli_found *a = &f[first];
    char u[URAID_UUID_TEXT];
    uraid_uuid_text(a->uuid, u);
    int spares = 0;
    for (int i = first; i < n; i++)
        spares += f[i].ok && !memcmp(f[i].uuid, a->uuid, 16) && f[i].role == URAID_ROLE_SPARE;
    if (a->md_minor >= 0) /* 0.90: mdadm names the array by its preferred minor, no metadata= or name= */
        printf("ARRAY /dev/md%d", a->md_minor);
    else
        print_devname(a->name);
    if (cli.verbose)
        printf(" level=%s", level_text(a->level));
    if (a->md_minor < 0)
        printf(" metadata=%s", a->metadata);
    if (cli.verbose)
        printf(" num-devices=%d", a->raid_devices);
    printf(" UUID=%s", u);
    if (a->md_minor < 0)
        printf(" name=%s", a->name);
    printf("\n");
    if (!spares && !cli.verbose)
        return;
    printf("  ");
    if (spares)
        printf(" spares=%d", spares);
    if (cli.verbose) {
        printf("%s devices=", spares ? "  " : "");
        const char *sep = "";
        for (int i = first; i < n; i++)
            if (f[i].ok && !memcmp(f[i].uuid, a->uuid, 16)) {
                printf("%s%s", sep, f[i].path);
                sep = ",";
            }
    }
    printf("\n");
}

/* Every array whose members are among the patterns, the one found last
 * first (as mdadm lists them); what carries no superblock is said with -v. */
static int examine_scan(const char *const *pattern, int npattern)
{
    static const char *const partitions[] = {"partitions"};
    struct cli_found *f;
    int n = cli_scan_candidates("examine", npattern ? pattern : partitions, npattern ? npattern : 1, &f);
    if (n < 0)
        return 1;
    int arrays = 0;
    for (int i = 0; i < n; i++)
        if (!f[i].ok && (cli.verbose || f[i].named))
            fprintf(stderr, "uraid examine: %s: %s\n", f[i].path, f[i].why);
    for (int i = n - 1; i >= 0; i--) {
        if (!f[i].ok)
            continue;
        int seen = 0; /* printed where its first member is */
        for (int j = 0; j < i && !seen; j++)
            seen = f[j].ok && !memcmp(f[j].uuid, f[i].uuid, 16);
        if (!seen) {
            print_array(f, n, i);
            arrays++;
        }
    }
    cli_found_free(f, n);
    if (!arrays)
        cli_error("examine", "no md superblock on any of the %d devices looked at", n);
    return arrays ? 0 : 1;
}

int cmd_examine(int argc, char **argv)
{
    int status = 0, any = 0;
    const char *metadata = NULL;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--scan") || !strcmp(argv[i], "-s")) {
            for (int j = i; j + 1 < argc; j++)
                argv[j] = argv[j + 1];
            argc--;
            for (int j = 1; j < argc; j++)
                if (argv[j][0] == '-' && argv[j][1]) {
                    cli_error("examine", "unknown option '%s' with --scan", argv[j]);
                    return 2;
                }
            return examine_scan((const char *const *)argv + 1, argc - 1);
        }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: uraid examine [--metadata 0.90|1.0|1.1|1.2] MEMBER...\n"
                   "       uraid [-v] examine --scan [DEVICE-OR-GLOB...]   mdadm.conf ARRAY lines of the arrays\n"
                   "                                                     found (default: /proc/partitions)\n");
            return 0;
        }
        if ((!strcmp(argv[i], "--metadata") || !strcmp(argv[i], "-e")) && i + 1 < argc) {
            metadata = argv[++i];
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("examine", "unknown option '%s'", argv[i]);
            return 2;
        }
        any = 1;
        status |= examine_one(argv[i], metadata);
    }
    if (!any) {
        cli_error("examine", "no members given (usage: uraid examine MEMBER...)");
        return 2;
    }
    return status;
}
