/* md RAID-0 zones: written from md's rules as raid0.h states them; the
 * tests compare with a transcription of md's zone loop and with arrays
 * md itself wrote. */
#include "raid0.h"

#include <errno.h>
#include <string.h>

#include "log.h"

int raid0_zone_count(int n, const uint64_t *data_sectors, uint32_t chunk_sectors)
{
    if (n < 1 || n > LAYOUT_MAX_DISKS || !data_sectors || chunk_sectors == 0)
        return -EINVAL;
    int count = 0;
    for (int s = 0; s < n; s++) {
        uint64_t size = data_sectors[s] / chunk_sectors;
        int seen = 0;
        for (int t = 0; t < s && !seen; t++)
            seen = data_sectors[t] / chunk_sectors == size;
        count += !seen;
    }
    return count;
}

int raid0_zones_build(struct raid0_zones *z, int n, const uint64_t *data_sectors, uint32_t chunk_sectors,
                      int layout, char *why, size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    int nzones = raid0_zone_count(n, data_sectors, chunk_sectors);
    if (!z || nzones < 0) {
        uraid_why(why, whylen, "RAID-0 needs 1 to %d members and a chunk", LAYOUT_MAX_DISKS);
        return -EINVAL;
    }
    uint32_t c = chunk_sectors;
    for (int s = 0; s < n; s++)
        if (data_sectors[s] < c) {
            uraid_why(why, whylen, "slot %d holds %llu data sectors, less than one %u-sector chunk", s,
                      (unsigned long long)data_sectors[s], c);
            return -EINVAL;
        }
    memset(z, 0, sizeof *z);
    z->raid_disks = n;
    z->nzones = nzones;
    z->chunk_sectors = c;
    for (int s = 0; s < n; s++)
        z->slot_sectors[s] = data_sectors[s] / c * c;
    /* Zone 1 holds the members larger than the smallest. With one of them
     * every later zone has one too, and a one-member zone reads the same in
     * both layouts: md then ignores the field (and so needs none). */
    uint64_t smallest = UINT64_MAX;
    for (int s = 0; s < n; s++)
        if (z->slot_sectors[s] < smallest)
            smallest = z->slot_sectors[s];
    int beyond = 0;
    for (int s = 0; s < n; s++)
        beyond += z->slot_sectors[s] > smallest;
    z->layout_matters = beyond > 1;
    if (z->layout_matters && layout != RAID0_LAYOUT_ORIGINAL && layout != RAID0_LAYOUT_ALTERNATE) {
        uraid_why(why, whylen,
                  "multi-zone RAID-0 (members of different sizes) records no layout, so its data could be in either "
                  "md layout and md refuses it too: if Linux 3.14 or later wrote it run 'mdadm --assemble "
                  "--update=layout-alternate', if older '--update=layout-original'");
        return -EINVAL;
    }
    z->layout = z->layout_matters ? layout : RAID0_LAYOUT_ORIGINAL;
    /* each zone takes the members still larger than where it starts, up to
     * the smallest of them */
    uint64_t at = 0, dev_start = 0;
    for (int i = 0; i < nzones; i++) {
        struct raid0_zone *zn = &z->zone[i];
        uint64_t top = UINT64_MAX;
        for (int s = 0; s < n; s++) {
            if (z->slot_sectors[s] <= dev_start)
                continue;
            z->zone_slot[i][zn->nb++] = (int16_t)s;
            if (z->slot_sectors[s] < top)
                top = z->slot_sectors[s];
        }
        zn->start = at;
        zn->dev_start = dev_start;
        zn->end = at + (top - dev_start) * (uint64_t)zn->nb;
        zn->shift = z->layout == RAID0_LAYOUT_ORIGINAL ? (int)(at / c % (uint64_t)zn->nb) : 0;
        at = zn->end;
        dev_start = top;
    }
    z->array_sectors = at;
    return 0;
}

int raid0_map(const struct raid0_zones *z, uint64_t array_sector, struct raid0_addr *out)
{
    if (!z || !out || array_sector >= z->array_sectors)
        return -EINVAL;
    /* few zones (distinct sizes): a binary search is not worth it */
    int i = 0;
    while (array_sector >= z->zone[i].end)
        i++;
    const struct raid0_zone *zn = &z->zone[i];
    uint32_t c = z->chunk_sectors;
    uint64_t off = array_sector - zn->start, q = off / c;
    out->zone = i;
    out->chunk_off = (uint32_t)(off % c);
    out->slot = z->zone_slot[i][(q + (uint64_t)zn->shift) % (uint64_t)zn->nb];
    out->member_sector = zn->dev_start + q / (uint64_t)zn->nb * c + out->chunk_off;
    return 0;
}

int raid0_unmap(const struct raid0_zones *z, int slot, uint64_t member_sector, uint64_t *array_sector)
{
    if (!z || !array_sector || slot < 0 || slot >= z->raid_disks || member_sector >= z->slot_sectors[slot])
        return -EINVAL;
    /* zone i covers member sectors [dev_start(i), dev_start(i + 1)) of each of its members */
    int i = z->nzones - 1;
    while (z->zone[i].dev_start > member_sector)
        i--;
    const struct raid0_zone *zn = &z->zone[i];
    int idx = 0;
    while (z->zone_slot[i][idx] != slot)
        idx++;
    uint32_t c = z->chunk_sectors;
    uint64_t off = member_sector - zn->dev_start, nb = (uint64_t)zn->nb;
    uint64_t q = off / c * nb + ((uint64_t)idx + nb - (uint64_t)zn->shift) % nb;
    *array_sector = zn->start + q * c + off % c;
    return 0;
}
