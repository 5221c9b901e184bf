/* md's linear level: see linear.h. */
#include "linear.h"

#include <errno.h>

#include "log.h"

int linear_init(struct linear_geom *g, int n, const uint64_t *data_sectors, uint32_t chunk_sectors, char *why,
                size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    if (!g || !data_sectors || n < 1 || n > LAYOUT_MAX_DISKS) {
        uraid_why(why, whylen, "linear needs 1 to %d members", LAYOUT_MAX_DISKS);
        return -EINVAL;
    }
    g->n = n;
    g->start[0] = 0;
    for (int i = 0; i < n; i++) {
        uint64_t s = chunk_sectors ? data_sectors[i] / chunk_sectors * chunk_sectors : data_sectors[i];
        if (s == 0) {
            uraid_why(why, whylen, "linear member in slot %d has no data area", i);
            return -EINVAL;
        }
        if (g->start[i] + s < g->start[i]) {
            uraid_why(why, whylen, "linear array larger than 2^64 sectors");
            return -EINVAL;
        }
        g->start[i + 1] = g->start[i] + s;
    }
    return 0;
}

int linear_map(const struct linear_geom *g, uint64_t array_sector, int *disk, uint64_t *member_sector,
               uint64_t *left)
{
    if (!g || array_sector >= g->start[g->n])
        return -EINVAL;
    /* binary search: the first member whose end is past the sector */
    int lo = 0, hi = g->n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (g->start[mid + 1] <= array_sector)
            lo = mid + 1;
        else
            hi = mid;
    }
    *disk = lo;
    *member_sector = array_sector - g->start[lo];
    *left = g->start[lo + 1] - array_sector;
    return 0;
}
