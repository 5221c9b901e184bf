/* md RAID-10 placement: written from md's rules as raid10.h states them;
 * tests/unit/test_raid10.c compares it with arrays md itself wrote. */
#include "raid10.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

int raid10_layout_check(int raid_disks, int layout, char *why, size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    int nc = layout & 0xff, fc = layout >> 8 & 0xff;
    if (layout < 0 || layout >> 17) {
        uraid_why(why, whylen, "RAID-10 layout 0x%x uses md's far sets (bits 17-18), which uraid does not handle",
                  (unsigned)layout);
        return -EINVAL;
    }
    if (nc < 1 || fc < 1 || nc * fc < 2) {
        uraid_why(why, whylen, "RAID-10 layout 0x%x keeps %d copies: md needs near and far counts of at least 1 and "
                  "2 copies or more", (unsigned)layout, nc * fc);
        return -EINVAL;
    }
    if (nc * fc > raid_disks || nc * fc > RAID10_MAX_COPIES) {
        uraid_why(why, whylen, "RAID-10 layout 0x%x keeps %d copies but the array has %d members (at most %d copies)",
                  (unsigned)layout, nc * fc, raid_disks, RAID10_MAX_COPIES);
        return -EINVAL;
    }
    return 0;
}

int raid10_geom_init(struct raid10_geom *g, int raid_disks, int layout, uint32_t chunk_sectors,
                     uint64_t member_sectors, char *why, size_t whylen)
{
    int rc = raid10_layout_check(raid_disks, layout, why, whylen);
    if (rc)
        return rc;
    if (chunk_sectors < 8 || (chunk_sectors & (chunk_sectors - 1))) {
        uraid_why(why, whylen, "RAID-10 needs a power-of-two chunk of 4 KiB or more (this one is %u sectors)",
                  chunk_sectors);
        return -EINVAL;
    }
    memset(g, 0, sizeof *g);
    g->raid_disks = raid_disks;
    g->near = layout & 0xff;
    g->far = layout >> 8 & 0xff;
    g->offset = !!(layout & RAID10_OFFSET_BIT);
    g->copies = g->near * g->far;
    g->chunk_sectors = chunk_sectors;
    uint64_t n = (uint64_t)raid_disks, per_region = member_sectors / chunk_sectors / (uint64_t)g->far;
    if (per_region > UINT64_MAX / n) {
        uraid_why(why, whylen, "RAID-10 members of %llu sectors: the array would pass 2^64 sectors",
                  (unsigned long long)member_sectors);
        return -EOVERFLOW;
    }
    uint64_t chunks = per_region * n / (uint64_t)g->near;
    if (chunks == 0) {
        uraid_why(why, whylen, "RAID-10 members of %llu sectors hold no whole chunk of every copy",
                  (unsigned long long)member_sectors);
        return -EINVAL;
    }
    uint64_t copies_total;
    if (__builtin_mul_overflow(chunks, (uint64_t)g->copies, &copies_total) ||
        __builtin_mul_overflow(chunks, (uint64_t)chunk_sectors, &g->array_sectors) || copies_total > UINT64_MAX - n) {
        uraid_why(why, whylen, "RAID-10 members of %llu sectors: the array would pass 2^64 sectors",
                  (unsigned long long)member_sectors);
        return -EOVERFLOW;
    }
    uint64_t used = (copies_total + n - 1) / n;
    g->dev_sectors = used * chunk_sectors;
    g->stride = g->offset ? chunk_sectors : used / (uint64_t)g->far * chunk_sectors;
    return 0;
}

int raid10_map(const struct raid10_geom *g, uint64_t array_sector, struct raid10_copy *out)
{
    if (!g || !out || array_sector >= g->array_sectors)
        return -EINVAL;
    uint64_t c = g->chunk_sectors, n = (uint64_t)g->raid_disks;
    uint64_t p = array_sector / c * (uint64_t)g->near, row = p / n;
    int dev = (int)(p % n);
    if (g->offset)
        row *= (uint64_t)g->far;
    uint64_t sector = row * c + array_sector % c;
    int slot = 0;
    for (int i = 0; i < g->near; i++) {
        int d = dev;
        uint64_t s = sector;
        out[slot++] = (struct raid10_copy){.disk = d, .sector = s};
        for (int f = 1; f < g->far; f++) {
            d = (d + g->near) % g->raid_disks;
            s += g->stride;
            out[slot++] = (struct raid10_copy){.disk = d, .sector = s};
        }
        if (++dev == g->raid_disks) {
            dev = 0;
            sector += c;
        }
    }
    return 0;
}

int raid10_unmap(const struct raid10_geom *g, int disk, uint64_t member_sector, uint64_t *array_sector)
{
    if (!g || !array_sector || disk < 0 || disk >= g->raid_disks)
        return -EINVAL;
    if (member_sector >= g->dev_sectors)
        return -ENOENT;
    uint64_t c = g->chunk_sectors, n = (uint64_t)g->raid_disks, chunk, s = member_sector;
    int64_t dev = disk;
    if (g->offset) {
        /* rows come in groups of fc: row r is far copy r % fc */
        chunk = s / c;
        int64_t f = (int64_t)(chunk % (uint64_t)g->far);
        chunk /= (uint64_t)g->far;
        dev = ((dev - f * g->near) % (int64_t)n + (int64_t)n) % (int64_t)n;
    } else {
        /* region f holds far copy f, nc members further on */
        while (s >= g->stride) {
            s -= g->stride;
            dev = ((dev - g->near) % (int64_t)n + (int64_t)n) % (int64_t)n;
        }
        chunk = s / c;
    }
    uint64_t q = (chunk * n + (uint64_t)dev) / (uint64_t)g->near;
    uint64_t sector = q * c + member_sector % c;
    if (sector >= g->array_sectors)
        return -ENOENT;
    /* positions past the last full far region, or a near copy's slot in a
     * row's tail, can name a chunk whose copies lie elsewhere: confirm */
    struct raid10_copy cp[RAID10_MAX_COPIES];
    raid10_map(g, sector, cp);
    for (int i = 0; i < g->copies; i++)
        if (cp[i].disk == disk && cp[i].sector == member_sector) {
            *array_sector = sector;
            return 0;
        }
    return -ENOENT;
}

int raid10_survives(const struct raid10_geom *g, const unsigned char *missing)
{
    int first = 0;
    do {
        int alive = 0;
        for (int i = 0, d = first; i < g->copies; i++, d = (d + 1) % g->raid_disks)
            alive += !missing[d];
        if (!alive)
            return 0;
        first = (first + g->near) % g->raid_disks;
    } while (first != 0);
    return 1;
}

int raid10_layout_from_name(const char *name)
{
    if (!name)
        return -EINVAL;
    if (!strcasecmp(name, "default"))
        return 0x102;
    char kind = (char)tolower((unsigned char)name[0]);
    char *end;
    long count = name[0] ? strtol(name + 1, &end, 10) : 0;
    if (!name[0] || !isdigit((unsigned char)name[1]) || *end || count < 1 || count > 255)
        return -EINVAL;
    switch (kind) {
    case 'n': return (int)count | 0x100;
    case 'f': return 1 | (int)count << 8;
    case 'o': return 1 | (int)count << 8 | RAID10_OFFSET_BIT;
    default: return -EINVAL;
    }
}

const char *raid10_layout_name(int layout, char *buf, size_t len)
{
    int nc = layout & 0xff, fc = layout >> 8 & 0xff;
    if (layout < 0 || layout >> 17 || nc < 1 || fc < 1 || !buf)
        return NULL;
    char kind = layout & RAID10_OFFSET_BIT ? 'o' : 'f';
    if (fc == 1)
        snprintf(buf, len, "n%d", nc);
    else if (nc == 1)
        snprintf(buf, len, "%c%d", kind, fc);
    else
        snprintf(buf, len, "n%d%c%d", nc, kind, fc);
    return buf;
}
