/* Creating an array: every check first (geometry, members, sizes, existing
 * superblocks), then the superblocks and empty bad-block logs, then the
 * initial sync unless assume_clean.
 *
 * What we write follows mdadm 4.2 (docs/FORMAT.md): data_offset chosen by
 * mdadm's rule for the smallest member, "size" = the smallest member's room
 * rounded down to whole chunks, max_dev 128 (a 512-byte superblock), a bad-
 * block log of 8 sectors, and resync_offset = 0 until the sync is done.
 * An internal write-intent bitmap goes where mdadm puts it for 1.2 (sb + 8
 * sectors, feature bit BITMAP_OFFSET), with mdadm's chunk choice, on every
 * member. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "array/array.h"
#include "log.h"
#include "meta/bitmap.h"

#define SB_OFFSET_BYTES 4096u
#define SYNC_BYTES (8u << 20) /* per member per sync step */

static int random_bytes(uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0)
            return -errno;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int is_missing(const char *path) { return !strcmp(path, "missing"); }


/* Makes parity (or mirrors) consistent over the whole array, stripe rows in
 * large steps, reporting progress. Returns 0 or a negative errno. */
static int initial_sync(struct uraid_array *a, const struct uraid_create_params *p)
{
    int n = a->geom.raid_disks;
    uint64_t total = a->member_sectors, done = 0;
    uint32_t step = SYNC_BYTES / 512;
    if (a->geom.level != 1)
        step -= step % a->geom.chunk_sectors ? step % a->geom.chunk_sectors : 0;
    if (step == 0)
        step = a->geom.chunk_sectors;
    uint8_t *mem = aligned_alloc(4096, (size_t)(n + 1) * step * 512);
    if (!mem)
        return -ENOMEM;
    int rc = 0;
    while (done < total && rc == 0) {
        uint32_t nsec = total - done < step ? (uint32_t)(total - done) : step;
        if (a->geom.level == 1) {
            /* copy the first present mirror to the others */
            int src = -1;
            for (int m = 0; m < n && src < 0; m++)
                if (slot_ok(a, m))
                    src = m;
            rc = member_read(a->slot[src].dev, mem, (size_t)nsec * 512, (a->slot[src].data_offset + done) * 512);
            for (int m = 0; m < n && rc == 0; m++)
                if (m != src && slot_ok(a, m))
                    rc = member_write(a->slot[m].dev, mem, (size_t)nsec * 512, (a->slot[m].data_offset + done) * 512);
        } else {
            rc = array_resync_range(a, done, nsec);
        }
        done += nsec;
        if (p->progress)
            p->progress(p->progress_ctx, done, total);
    }
    free(mem);
    return rc;
}

/* mdadm 4.2's bitmap decision: internal when asked, or by default when the
 * members' used size is over 100 GiB (levels with redundancy); the chunk
 * as mdadm chooses it in the space data_offset reserved (sb + 8 up to the
 * bad-block log). Sets the feature bit and offset in every superblock and
 * fills *bm. */
static int choose_bitmap(struct uraid_array *a, const struct uraid_create_params *p, uint64_t smallest,
                         struct md_bitmap_sb *bm, int *with, char *why, size_t whylen)
{
    const uint64_t big = 100ull << 21; /* 100 GiB in sectors */
    *with = p->bitmap == URAID_BITMAP_INTERNAL ||
            (p->bitmap == URAID_BITMAP_DEFAULT && a->geom.level > 0 && a->member_sectors > big);
    if (!*with) {
        if (p->bitmap_chunk_bytes) {
            uraid_why(why, whylen, "--bitmap-chunk needs --bitmap internal%s",
                      a->geom.level == 0 ? " (and RAID-0 has none)" : "");
            return -EINVAL;
        }
        return 0;
    }
    const struct md_sb *sb = &a->sb;
    int64_t room = md_choose_bm_space(smallest);
    if (sb->bblog_offset > 8 && sb->bblog_offset - 8 < room)
        room = sb->bblog_offset - 8;
    if ((int64_t)(sb->data_offset - sb->super_offset) - 8 < room)
        room = (int64_t)(sb->data_offset - sb->super_offset) - 8;
    uint32_t chunk;
    char cwhy[200];
    int rc = md_bitmap_choose_chunk(a->member_sectors, room > 0 ? (uint32_t)room : 0, p->bitmap_chunk_bytes, &chunk,
                                    cwhy, sizeof cwhy);
    if (rc) {
        uraid_why(why, whylen, "%s", cwhy);
        return rc;
    }
    md_bitmap_init(bm, sb->set_uuid, sb->events, a->member_sectors, chunk);
    for (int i = 0; i < a->geom.raid_disks; i++)
        if (a->slot[i].dev) {
            a->slot[i].sb.feature_map |= MD_FEATURE_BITMAP_OFFSET;
            a->slot[i].sb.bitmap_offset = 8; /* mdadm: right after the 4 KiB superblock */
        }
    a->sb.feature_map |= MD_FEATURE_BITMAP_OFFSET;
    a->sb.bitmap_offset = 8;
    return 0;
}

/* Spares at create: the new array is opened and each spare added, which
 * gives it a free device number and role 0xffff as mdadm does. */
static int add_spares(const char *const *paths, int n, const char *const *spares, int nspares, int force, char *why,
                      size_t whylen)
{
    struct uraid_array *a;
    struct uraid_open_params op = {0};
    int rc = uraid_open(paths, n, &op, &a, why, whylen);
    if (rc)
        return rc;
    for (int i = 0; i < nspares && rc == 0; i++) {
        if (force) {
            /* an old superblock would make the add refuse it as another array's */
            struct member *m;
            uint8_t zero[MD_SB_BYTES] __attribute__((aligned(4096))) = {0};
            if (member_open(spares[i], 0, &m) == 0) {
                member_write(m, zero, sizeof zero, SB_OFFSET_BYTES);
                member_close(m);
            }
        }
        rc = uraid_add_spare(a, spares[i], why, whylen);
    }
    int crc = uraid_close(a);
    return rc ? rc : crc;
}

/* Members of different sizes make a multi-zone RAID-0 (raid0.h). mdadm
 * 4.2 then records its layout, "original" unless told otherwise, under the
 * RAID0_LAYOUT feature, without which md refuses to run it where the
 * layouts differ; equal members get the layout as given (0 by default) and
 * no feature bit. */
static int raid0_create_zones(struct uraid_array *a, int layout, char *why, size_t whylen)
{
    int n = a->geom.raid_disks;
    uint64_t sizes[URAID_MAX_MEMBERS];
    for (int i = 0; i < n; i++)
        sizes[i] = a->slot[i].sb.data_size;
    int zones = raid0_zone_count(n, sizes, a->geom.chunk_sectors);
    if (zones > 1 && layout < 0)
        layout = RAID0_LAYOUT_ORIGINAL;
    int named = layout == RAID0_LAYOUT_ORIGINAL || layout == RAID0_LAYOUT_ALTERNATE;
    struct raid0_zones *z = malloc(sizeof *z);
    if (!z)
        return -ENOMEM;
    char zwhy[300];
    int rc = raid0_zones_build(z, n, sizes, a->geom.chunk_sectors, named ? layout : RAID0_LAYOUT_ORIGINAL, zwhy,
                               sizeof zwhy);
    if (rc) {
        uraid_why(why, whylen, "%s", zwhy);
    } else if (z->layout_matters && !named) {
        uraid_why(why, whylen, "members of different sizes make a multi-zone RAID-0, which md runs only with "
                  "--layout original or alternate (not layout %d)", layout);
        rc = -EINVAL;
    }
    if (rc == 0)
        a->size_sectors = z->array_sectors;
    free(z);
    for (int i = 0; i < n && rc == 0; i++) {
        a->slot[i].sb.layout = layout < 0 ? 0 : (uint32_t)layout;
        if (zones > 1 && layout != 0)
            a->slot[i].sb.feature_map |= MD_FEATURE_RAID0_LAYOUT;
    }
    a->sb.layout = a->slot[0].sb.layout;
    a->sb.feature_map = a->slot[0].sb.feature_map;
    return rc;
}

int uraid_create(const char *const *paths, int n, const struct uraid_create_params *p, int force, char *why,
                 size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    if (!p || !paths) {
        uraid_why(why, whylen, "no parameters");
        return -EINVAL;
    }
    int nspares = p->spare_devices;
    if (nspares < 0 || n != p->raid_devices + nspares) {
        uraid_why(why, whylen, "%d members given for --raid-devices %d%s%.0d (use 'missing' for an empty slot)", n,
            p->raid_devices, nspares ? " + --spare-devices " : "", nspares);
        return -EINVAL;
    }
    const char *const *spares = paths + p->raid_devices;
    n = p->raid_devices;
    for (int i = 0; i < nspares; i++) {
        if (is_missing(spares[i])) {
            uraid_why(why, whylen, "a spare cannot be 'missing'");
            return -EINVAL;
        }
        for (int j = 0; j < n + i; j++)
            if (!strcmp(spares[i], paths[j])) {
                uraid_why(why, whylen, "member %s is given twice", spares[i]);
                return -EINVAL;
            }
    }
    if (n < 1 || n > URAID_MAX_MEMBERS) {
        uraid_why(why, whylen, "--raid-devices must be 1..%d", URAID_MAX_MEMBERS);
        return -EINVAL;
    }
    uint32_t chunk_bytes = p->chunk_bytes ? p->chunk_bytes : 512u * 1024;
    if (chunk_bytes < 4096 || (chunk_bytes & (chunk_bytes - 1))) {
        uraid_why(why, whylen, "chunk size must be a power of two of at least 4K, got %u bytes", chunk_bytes);
        return -EINVAL;
    }
    struct layout_geom g = {
        .level = p->level,
        .layout = p->layout >= 0 ? p->layout : (p->level == 5 || p->level == 6 ? LAYOUT_LEFT_SYMMETRIC : 0),
        .raid_disks = n,
        .chunk_sectors = chunk_bytes / 512,
    };
    if (g.level == 4)
        g.layout = 0; /* what mdadm writes; md ignores it for RAID-4 */
    char gwhy[160];
    if (layout_check(&g, gwhy, sizeof gwhy)) {
        uraid_why(why, whylen, "%s", gwhy);
        return -EINVAL;
    }
    int nparity = g.level == 1 ? n - 1 : layout_parity_count(&g);
    int nmissing = 0;
    uint8_t missing_flags[URAID_MAX_MEMBERS] = {0};
    for (int i = 0; i < n; i++) {
        missing_flags[i] = (uint8_t)is_missing(paths[i]);
        nmissing += is_missing(paths[i]);
        for (int j = 0; j < i; j++)
            if (!is_missing(paths[i]) && !strcmp(paths[i], paths[j])) {
                uraid_why(why, whylen, "member %s is given twice", paths[i]);
                return -EINVAL;
            }
    }
    if (p->bitmap == URAID_BITMAP_INTERNAL && g.level == 0) {
        uraid_why(why, whylen, "RAID-0 cannot have a write-intent bitmap (md refuses one: there is no redundancy to resync)");
        return -EINVAL;
    }
    if (nmissing > nparity) {
        uraid_why(why, whylen, "%d members are 'missing' but RAID-%d survives only %d", nmissing, g.level, nparity);
        return -EINVAL;
    }

    struct uraid_array *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    int rc = array_runtime_init(a, NULL);
    if (rc) {
        uraid_why(why, whylen, "cannot start the I/O engine: %s", uraid_strerror(rc));
        free(a);
        return rc;
    }
    a->geom = g;
    a->k = layout_data_disks(&g);
    a->nparity = nparity;
    uint64_t smallest = UINT64_MAX;
    for (int i = 0; i < n; i++) {
        a->slot[i].state = URAID_MEMBER_MISSING;
        if (is_missing(paths[i]))
            continue;
        char mwhy[300];
        rc = member_open_why(paths[i], 0, &a->slot[i].dev, mwhy, sizeof mwhy);
        if (rc) {
            uraid_why(why, whylen, "member %s: cannot open: %s", paths[i], mwhy);
            goto out;
        }
        a->slot[i].state = URAID_MEMBER_IN_SYNC;
        struct md_sb old;
        char owhy[200];
        if (!force && array_read_superblock(a->slot[i].dev, &old, owhy, sizeof owhy) == 0) {
            char name[33] = {0};
            memcpy(name, old.set_name, 32);
            uraid_why(why, whylen, "member %s already belongs to an md array (name '%s', RAID-%d); use --force to overwrite it",
                paths[i], name, old.level);
            rc = -EEXIST;
            goto out;
        }
        uint64_t sectors = a->slot[i].dev->size / 512;
        if (sectors < smallest)
            smallest = sectors;
    }
    /* spares are checked now and written after the array exists */
    for (int i = 0; i < nspares; i++) {
        struct member *m;
        char mwhy[300];
        rc = member_open_why(spares[i], 0, &m, mwhy, sizeof mwhy);
        if (rc) {
            uraid_why(why, whylen, "spare %s: cannot open: %s", spares[i], mwhy);
            goto out;
        }
        struct md_sb old;
        char owhy[200];
        int claimed = !force && array_read_superblock(m, &old, owhy, sizeof owhy) == 0;
        uint64_t sectors = m->size / 512;
        member_close(m);
        if (claimed) {
            uraid_why(why, whylen, "spare %s already belongs to an md array; use --force to overwrite it", spares[i]);
            rc = -EEXIST;
            goto out;
        }
        if (sectors < smallest && smallest != UINT64_MAX) {
            uraid_why(why, whylen, "spare %s (%llu sectors) is smaller than the smallest member (%llu sectors)",
                spares[i], (unsigned long long)sectors, (unsigned long long)smallest);
            rc = -ENOSPC;
            goto out;
        }
    }
    if (smallest == UINT64_MAX) {
        uraid_why(why, whylen, "every member is 'missing'");
        rc = -EINVAL;
        goto out;
    }
    /* the superblocks, as mdadm --create lays them out */
    struct md_sb_create_params cp = {
        .level = g.level,
        .layout = (uint32_t)g.layout,
        .chunk_sectors = g.level == 1 ? 0 : g.chunk_sectors,
        .raid_disks = (uint32_t)n,
        .dev_sectors = smallest,
        .name = p->name ? p->name : "0",
        .homehost = p->homehost,
        .ctime = (uint64_t)time(NULL),
        .missing = missing_flags,
        .assume_clean = p->assume_clean || nmissing,
    };
    if (p->uuid)
        memcpy(cp.uuid, p->uuid, 16);
    else if ((rc = random_bytes(cp.uuid, 16)) != 0) {
        uraid_why(why, whylen, "cannot get random bytes for the array UUID: %s", uraid_strerror(rc));
        goto out;
    }
    int first = -1;
    for (int i = 0; i < n; i++) {
        struct array_slot *sl = &a->slot[i];
        if (!sl->dev)
            continue;
        uint8_t dev_uuid[16];
        char swhy[200];
        if ((rc = random_bytes(dev_uuid, 16)) != 0)
            goto out;
        rc = md_sb_init(&sl->sb, &cp, (uint32_t)i, dev_uuid, sl->dev->size / 512, swhy, sizeof swhy);
        if (rc) {
            uraid_why(why, whylen, "member %s: %s", paths[i], swhy);
            goto out;
        }
        sl->data_offset = sl->sb.data_offset;
        if (first < 0)
            first = i;
    }
    a->sb = a->slot[first].sb;
    a->member_sectors = array_member_sectors(&a->sb, smallest);
    if (a->member_sectors < 2ull * (g.level == 1 ? 8 : g.chunk_sectors)) {
        uraid_why(why, whylen, "members are too small: the smallest has %llu sectors, which leaves no room for two chunks "
            "after the %llu-sector data offset", (unsigned long long)smallest,
            (unsigned long long)a->sb.data_offset);
        rc = -ENOSPC;
        goto out;
    }
    a->size_sectors = g.level == 1 ? a->member_sectors : a->member_sectors * (uint64_t)a->k;
    if (g.level == 0 && (rc = raid0_create_zones(a, p->layout, why, whylen)) != 0)
        goto out;
    a->dirty = a->sb.resync_offset != MD_RESYNC_CLEAN;
    struct md_bitmap_sb bm;
    int with_bitmap = 0;
    if ((rc = choose_bitmap(a, p, smallest, &bm, &with_bitmap, why, whylen)) != 0)
        goto out;

    /* every check passed: write */
    for (int i = 0; i < n; i++) {
        struct array_slot *sl = &a->slot[i];
        if (!sl->dev)
            continue;
        rc = array_write_new_member(sl->dev, &sl->sb);
        if (rc == 0)
            rc = member_flush(sl->dev);
        if (rc) {
            uraid_why(why, whylen, "member %s: cannot write the superblock: %s", paths[i], uraid_strerror(rc));
            goto out;
        }
    }
    if (with_bitmap && (rc = wib_write_fresh(a, &bm)) != 0) {
        uraid_why(why, whylen, "cannot write the write-intent bitmap: %s", uraid_strerror(rc));
        goto out;
    }
    if (a->dirty) {
        rc = initial_sync(a, p);
        if (rc) {
            uraid_why(why, whylen, "initial sync failed: %s (the array exists but is marked dirty)", uraid_strerror(rc));
            goto out;
        }
        a->sb.resync_offset = MD_RESYNC_CLEAN;
        rc = array_write_superblocks(a);
        if (rc == 0)
            a->dirty = 0;
        /* the bitmap's events follow the superblocks' */
        bm.events = bm.events_cleared = a->sb.events;
        if (rc == 0 && with_bitmap && (rc = wib_write_fresh(a, &bm)) != 0)
            uraid_why(why, whylen, "cannot write the write-intent bitmap: %s", uraid_strerror(rc));
    }
out:
    for (int i = 0; i < n; i++)
        member_close(a->slot[i].dev);
    array_runtime_fini(a);
    free(a);
    if (rc == 0 && nspares)
        rc = add_spares(paths, n, spares, nspares, force, why, whylen);
    return rc;
}
