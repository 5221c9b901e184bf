/* Creating an array: every check first (arguments, then every member and
 * spare opened: sizes, names of one file, existing superblocks), then the
 * superblocks (the spares' too) and empty bad-block logs, then the initial
 * sync unless assume_clean.
 *
 * What we write follows mdadm 4.2 (docs/FORMAT.md): data_offset chosen by
 * mdadm's rule for the smallest member, "size" = the smallest member's room
 * rounded down to whole chunks, max_dev 128 (a 512-byte superblock) unless
 * more device numbers are needed, a bad-block log of 8 sectors, and
 * resync_offset = 0 until the sync is done. An internal write-intent bitmap
 * goes where mdadm puts it for 1.2 (sb + 8 sectors, feature bit
 * BITMAP_OFFSET), with mdadm's chunk choice, on every active member. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "array/dataio.h"
#include "log.h"
#include "meta/bitmap.h"
#include "meta/ppl.h"
#include "meta/super0.h"
#include "stripe/ppl.h"

#define SYNC_BYTES (8u << 20) /* per member per sync step */

int array_random_bytes(uint8_t *p, size_t n)
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
    uint64_t total = a->r10 ? a->size_sectors : a->member_sectors, done = 0;
    uint32_t step = SYNC_BYTES / SECTOR;
    if (a->geom.level != 1)
        step -= step % a->geom.chunk_sectors ? step % a->geom.chunk_sectors : 0;
    if (step == 0)
        step = a->geom.chunk_sectors;
    uint8_t *mem = aligned_alloc(4096, (size_t)(n + 1) * step * SECTOR);
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
            rc = member_read(a->slot[src].dev, mem, (size_t)nsec * SECTOR, (a->slot[src].data_offset + done) * SECTOR);
            for (int m = 0; m < n && rc == 0; m++)
                if (m != src && slot_ok(a, m))
                    rc = member_write(a->slot[m].dev, mem, (size_t)nsec * SECTOR,
                                      (a->slot[m].data_offset + done) * SECTOR);
        } else if (a->r10) {
            /* md's RAID-10 resync: each chunk's first copy onto the others */
            struct array_job j = {.kind = URAID_JOB_RESYNC};
            pthread_mutex_init(&j.found_lock, NULL);
            rc = raid10_scrub_step(a, &j, done, nsec);
            pthread_mutex_destroy(&j.found_lock);
            free(j.found);
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
static int choose_bitmap(struct uraid_array *a, const struct uraid_create_params *p, int mode, uint64_t smallest,
                         struct md_bitmap_sb *bm, int *with, char *why, size_t whylen)
{
    const uint64_t big = 100ull << 21; /* 100 GiB in sectors */
    *with = mode == URAID_BITMAP_INTERNAL ||
            (mode == URAID_BITMAP_DEFAULT && a->geom.level > 0 && a->member_sectors > big);
    if (!*with) {
        if (p->bitmap_chunk_bytes) {
            uraid_why(why, whylen, "--bitmap-chunk needs --bitmap internal%s",
                      a->geom.level == 0 ? " (and RAID-0 has none)" : "");
            return -EINVAL;
        }
        return 0;
    }
    const struct md_sb *sb = &a->sb;
    int64_t room = md_choose_bm_space(smallest), at = 8;
    if (sb->format == MD_FMT_1_0) {
        /* 1.0: the bitmap ends where the log starts, before the superblock */
        room = (int64_t)(sb->super_offset + (uint64_t)(int64_t)sb->bblog_offset - sb->data_offset - sb->data_size);
        at = sb->bblog_offset - room;
    } else if (sb->format == MD_FMT_0_90) {
        room = MD_SB0_BITMAP_SECTORS; /* 0.90: the rest of its 64 KiB */
        at = MD_SB0_BITMAP_OFFSET;
    } else {
        if (sb->bblog_offset > 8 && sb->bblog_offset - 8 < room)
            room = sb->bblog_offset - 8;
        if ((int64_t)(sb->data_offset - sb->super_offset) - 8 < room)
            room = (int64_t)(sb->data_offset - sb->super_offset) - 8;
    }
    /* RAID-10's bitmap covers the array's sectors: mdadm sizes it as the
     * used size x members / copies (md keeps it in step on load) */
    uint64_t span = a->r10 ? a->member_sectors * (uint64_t)a->geom.raid_disks / (uint64_t)a->r10->copies
                           : a->member_sectors;
    uint32_t chunk;
    char cwhy[200];
    int rc = md_bitmap_choose_chunk(span, room > 0 ? (uint32_t)room : 0, p->bitmap_chunk_bytes, &chunk,
                                    cwhy, sizeof cwhy);
    if (rc) {
        uraid_why(why, whylen, "%s", cwhy);
        return rc;
    }
    uint8_t bm_uuid[16];
    md_sb_bitmap_uuid(sb, bm_uuid);
    md_bitmap_init(bm, bm_uuid, sb->events, span, chunk);
    /* mdadm: right after the 4 KiB superblock (1.1, 1.2, 0.90), right
     * before the bad-block log (1.0); the same offset on every member */
    for (int i = 0; i < a->geom.raid_disks; i++)
        if (a->slot[i].dev) {
            a->slot[i].sb.feature_map |= MD_FEATURE_BITMAP_OFFSET;
            a->slot[i].sb.bitmap_offset = (int32_t)at;
        }
    a->sb.feature_map |= MD_FEATURE_BITMAP_OFFSET;
    a->sb.bitmap_offset = (int32_t)at;
    return 0;
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

/* ---- the steps of uraid_create ------------------------------------------------
 *
 * check_args -> open_members -> plan_superblocks -> write_members ->
 * sync_new_array, each 0 or a negative errno with one line in why. The
 * first three read and check only: a refusal leaves every member as it was.
 * Spares are the last spare_devices names (mdadm's --spare-devices); a spare
 * gets the device number of its place in the list, as mdadm gives it, and
 * role 0xffff. */

struct create_plan {
    const struct uraid_create_params *p;
    const char *const *paths;   /* raid_devices names in slot order, "missing" for an empty slot */
    const char *const *spares;  /* the nspares names after them */
    int n, nspares, force;
    struct layout_geom g;
    int nparity, nmissing;
    uint8_t missing[URAID_MAX_MEMBERS];
    uint64_t smallest;          /* sectors of the smallest active member */
    struct uraid_array *a;      /* slot[]: the active members; extra[]: the spares */
    struct md_bitmap_sb bm;
    int with_bitmap;
    int bitmap_mode;            /* URAID_BITMAP_*: the bitmap argument as the policy settles it */
    int policy;                 /* URAID_POLICY_*: DEFAULT until open_members settles it */
    int format;                 /* enum md_format of --metadata */
    int runtime;                /* array_runtime_init ran: fini must too */
    char *why;
    size_t whylen;
};

/* One line in why, and err. */
#define refuse(c, err, ...) (uraid_why((c)->why, (c)->whylen, __VA_ARGS__), (err))

/* Names given twice, also under another path to the same file: writing one
 * member's superblock over another's would leave neither. */
static int check_names(struct create_plan *c)
{
    const char *const *all = c->paths; /* the spares follow the active names */
    int total = c->n + c->nspares;
    for (int i = 0; i < total; i++) {
        if (is_missing(all[i]))
            continue;
        for (int j = 0; j < i; j++)
            if (!is_missing(all[j]) && array_same_file(all[i], all[j]))
                return strcmp(all[i], all[j])
                           ? refuse(c, -EINVAL, "member %s is given twice (also as %s)", all[i], all[j])
                           : refuse(c, -EINVAL, "member %s is given twice", all[i]);
    }
    return 0;
}

static int check_geometry(struct create_plan *c)
{
    const struct uraid_create_params *p = c->p;
    uint32_t chunk_bytes = p->chunk_bytes ? p->chunk_bytes : 512u * 1024;
    if (chunk_bytes < 4096 || (chunk_bytes & (chunk_bytes - 1)))
        return refuse(c, -EINVAL, "chunk size must be a power of two of at least 4K, got %u bytes", chunk_bytes);
    int dflt = p->level == 5 || p->level == 6 ? LAYOUT_LEFT_SYMMETRIC : p->level == 10 ? 0x102 : 0; /* mdadm's n2 */
    c->g = (struct layout_geom){
        .level = p->level,
        .layout = p->layout >= 0 ? p->layout : dflt,
        .raid_disks = c->n,
        /* mdadm gives linear no chunk ("Rounding : 0K"): whole data areas */
        .chunk_sectors = p->level == LAYOUT_LEVEL_LINEAR ? 0 : chunk_bytes / SECTOR,
    };
    if (c->g.level == 4)
        c->g.layout = 0; /* what mdadm writes; md ignores it for RAID-4 */
    char gwhy[160];
    if (layout_check(&c->g, gwhy, sizeof gwhy))
        return refuse(c, -EINVAL, "%s", gwhy);
    c->nparity = c->g.level == 1 ? c->n - 1 : layout_parity_count(&c->g);
    return 0;
}

/* RAID-10 with 'missing' slots: md's enough() must hold for them. */
static int raid10_missing_ok(const struct create_plan *c)
{
    if (c->g.level != 10)
        return 1;
    struct raid10_geom g = {.raid_disks = c->n, .near = c->g.layout & 0xff,
                            .copies = (c->g.layout & 0xff) * (c->g.layout >> 8 & 0xff)};
    return raid10_survives(&g, c->missing);
}

/* The largest chunk whose partial parity fits mdadm's 1 MiB log with its
 * header (uraid logs a stripe's partial parity in one write). */
#define PPL_MAX_CHUNK_SECTORS (MD_PPL_SECTORS - PPL_HEADER_SECTORS)

/* --consistency-policy against the level and --bitmap, as mdadm checks it. */
static int check_policy(struct create_plan *c)
{
    const struct uraid_create_params *p = c->p;
    int pol = p->consistency_policy, bm = p->bitmap;
    c->policy = pol;
    c->bitmap_mode = bm;
    if (pol < URAID_POLICY_DEFAULT || pol > URAID_POLICY_JOURNAL)
        return refuse(c, -EINVAL, "unknown consistency policy %d", pol);
    if (pol == URAID_POLICY_JOURNAL)
        return refuse(c, -EOPNOTSUPP, "--consistency-policy=journal is not supported yet (it needs a write journal "
                                      "device); use ppl, bitmap or resync");
    if (pol == URAID_POLICY_PPL) {
        if (c->g.level != 5 && c->g.level != 6)
            return refuse(c, -EINVAL, "--consistency-policy=ppl needs RAID-5 or RAID-6: md keeps a partial parity "
                                      "log for RAID-5 only, uraid also for RAID-6 (this is RAID-%d)", c->g.level);
        if (bm == URAID_BITMAP_INTERNAL || p->bitmap_chunk_bytes)
            return refuse(c, -EINVAL, "--consistency-policy=ppl and a write-intent bitmap exclude each other (md "
                                      "keeps one or the other)");
        if (c->n > 64)
            return refuse(c, -EINVAL, "--consistency-policy=ppl allows at most 64 members (md's limit)");
        if (c->g.chunk_sectors > PPL_MAX_CHUNK_SECTORS)
            return refuse(c, -EINVAL, "--consistency-policy=ppl needs a chunk of at most %u KiB (a chunk's partial "
                                      "parity must fit the 1 MiB log), got %u KiB", PPL_MAX_CHUNK_SECTORS / 2,
                          c->g.chunk_sectors / 2);
        c->bitmap_mode = URAID_BITMAP_NONE;
    } else if (pol == URAID_POLICY_BITMAP) {
        if (c->g.level == 0)
            return refuse(c, -EINVAL, "RAID-0 cannot have a write-intent bitmap (md refuses one: there is no "
                                      "redundancy to resync)");
        if (bm == URAID_BITMAP_NONE)
            return refuse(c, -EINVAL, "--consistency-policy=bitmap and --bitmap none contradict each other");
        c->bitmap_mode = URAID_BITMAP_INTERNAL;
    } else if (pol == URAID_POLICY_RESYNC) {
        if (bm == URAID_BITMAP_INTERNAL)
            return refuse(c, -EINVAL, "--consistency-policy=resync and --bitmap internal contradict each other");
        c->bitmap_mode = URAID_BITMAP_NONE;
    }
    return 0;
}

/* The default policy once the members' size is known: ppl for RAID-5 and
 * RAID-6 (uraid's partial Q log, which md cannot assemble until `uraid
 * grow --consistency-policy` switches it) when nothing asks for a bitmap
 * and the members have room for the log, else mdadm's bitmap rule (bitmap
 * or resync). */
static void settle_policy(struct create_plan *c)
{
    if (c->policy != URAID_POLICY_DEFAULT)
        return;
    uint64_t need = md_choose_data_offset_space(c->smallest, c->g.chunk_sectors, MD_PPL_SECTORS) +
                    2ull * c->g.chunk_sectors + 10;
    if ((c->g.level == 5 || c->g.level == 6) && c->format == MD_FMT_1_2 && c->bitmap_mode != URAID_BITMAP_INTERNAL && !c->p->bitmap_chunk_bytes && c->n <= 64 &&
        c->g.chunk_sectors <= PPL_MAX_CHUNK_SECTORS && c->smallest >= need) {
        c->policy = URAID_POLICY_PPL;
        c->bitmap_mode = URAID_BITMAP_NONE;
    }
}

/* --metadata: mdadm's spellings ("1" and none mean 1.2, as mdadm
 * creates), and what 0.90 cannot hold: more than 27 device numbers, a PPL
 * (uraid keeps md's PPL area after a 1.2 superblock only). */
static int check_format(struct create_plan *c)
{
    const struct uraid_create_params *p = c->p;
    int rc = array_parse_metadata(p->metadata, &c->format, c->why, c->whylen);
    if (rc)
        return rc;
    if (c->format == MD_FMT_ANY || c->format == MD_FMT_ANY1)
        c->format = MD_FMT_1_2;
    if (c->format == MD_FMT_0_90 && c->n + c->nspares > (int)MD_SB0_DISKS)
        return refuse(c, -EINVAL, "metadata 0.90 holds at most %u members, spares included (%d given); use "
                                  "metadata 1.x", MD_SB0_DISKS, c->n + c->nspares);
    if (c->format != MD_FMT_1_2 && p->consistency_policy == URAID_POLICY_PPL)
        return refuse(c, -EINVAL, "--consistency-policy=ppl needs --metadata 1.2 (uraid keeps md's PPL area after "
                                  "a 1.2 superblock only)");
    return 0;
}

/* 0.90 records each member's used size in 32-bit KiB: md refuses members
 * over 2 TiB for the levels that use the size (all but RAID-0). */
static int check_format_size(struct create_plan *c)
{
    if (c->format != MD_FMT_0_90 || c->g.level <= 0)
        return 0;
    uint64_t used = md_format_sb_sector(MD_FMT_0_90, c->smallest);
    if (used != UINT64_MAX && used > MD_SB0_MAX_MEMBER_SECTORS)
        return refuse(c, -EINVAL, "metadata 0.90 allows members of at most 2 TiB for RAID-%d (md's limit), but "
                                  "each member would use %llu sectors (%llu GiB); use metadata 1.x", c->g.level,
                      (unsigned long long)used, (unsigned long long)(used >> 21));
    return 0;
}

/* Every argument, before any member is opened. */
static int check_args(struct create_plan *c)
{
    const struct uraid_create_params *p = c->p;
    if (c->nspares < 0 || c->n != p->raid_devices)
        return refuse(c, -EINVAL, "%d members given for --raid-devices %d%s%.0d (use 'missing' for an empty slot)",
                      c->n + c->nspares, p->raid_devices, c->nspares ? " + --spare-devices " : "", c->nspares);
    if (c->n < 1 || c->n > URAID_MAX_MEMBERS || c->n + c->nspares > URAID_MAX_MEMBERS)
        return refuse(c, -EINVAL, "--raid-devices must be 1..%d (spares included)", URAID_MAX_MEMBERS);
    for (int i = 0; i < c->nspares; i++)
        if (is_missing(c->spares[i]))
            return refuse(c, -EINVAL, "a spare cannot be 'missing' (the last %d names are the spares)", c->nspares);
    int rc = check_names(c);
    if (rc == 0)
        rc = check_geometry(c);
    if (rc == 0)
        rc = check_format(c);
    if (rc)
        return rc;
    for (int i = 0; i < c->n; i++) {
        c->missing[i] = (uint8_t)is_missing(c->paths[i]);
        c->nmissing += c->missing[i];
    }
    if (c->nmissing == c->n)
        return refuse(c, -EINVAL, "every member is 'missing'");
    if (c->nmissing > c->nparity && c->g.level != 10)
        return refuse(c, -EINVAL, "%d members are 'missing' but RAID-%d survives only %d", c->nmissing, c->g.level,
                      c->nparity);
    if (!raid10_missing_ok(c))
        return refuse(c, -EINVAL, "the 'missing' slots would hold every copy of some chunks: md's RAID-10 needs one "
                      "copy of each (leave out members that are not neighbours)");
    if (c->g.level == LAYOUT_LEVEL_LINEAR && (p->bitmap == URAID_BITMAP_INTERNAL || c->nspares))
        return refuse(c, -EINVAL, "linear cannot have a write-intent bitmap or spares (md: no redundancy)");
    if (c->g.level == 0 && p->bitmap == URAID_BITMAP_INTERNAL)
        return refuse(c, -EINVAL,
                      "RAID-0 cannot have a write-intent bitmap (md refuses one: there is no redundancy to resync)");
    if (c->g.level == 0 && c->nspares)
        return refuse(c, -EINVAL, "RAID-0 cannot have spares (md has no slot to rebuild them into)");
    return check_policy(c);
}

/* Opens path into sl and refuses a member of another array (unless force). */
static int open_one(struct create_plan *c, const char *path, const char *what, struct array_slot *sl)
{
    char mwhy[300];
    int rc = member_open_why(path, 0, &sl->dev, mwhy, sizeof mwhy);
    if (rc)
        return refuse(c, rc, "%s %s: cannot open: %s", what, path, mwhy);
    struct md_sb old;
    char owhy[200];
    int found = c->force ? -ENOENT : array_read_superblock(sl->dev, &old, owhy, sizeof owhy);
    if (found == -ENOTUNIQ)
        return refuse(c, -EEXIST, "%s; use --force to overwrite both", owhy);
    if (found == 0) {
        char name[33] = {0};
        memcpy(name, old.set_name, 32);
        return refuse(c, -EEXIST,
                      "%s %s already belongs to an md array (name '%s', RAID-%d); use --force to overwrite it", what,
                      path, name, old.level);
    }
    return 0;
}

/* Every member and spare opened and checked; nothing written. */
static int open_members(struct create_plan *c)
{
    struct uraid_array *a = c->a;
    c->smallest = UINT64_MAX;
    for (int i = 0; i < c->n; i++) {
        a->slot[i].state = URAID_MEMBER_MISSING;
        if (c->missing[i])
            continue;
        int rc = open_one(c, c->paths[i], "member", &a->slot[i]);
        if (rc)
            return rc;
        a->slot[i].state = URAID_MEMBER_IN_SYNC;
        if (a->slot[i].dev->size / SECTOR < c->smallest)
            c->smallest = a->slot[i].dev->size / SECTOR;
    }
    for (int i = 0; i < c->nspares; i++) {
        struct array_slot *sl = &a->extra[a->nextra++];
        sl->state = URAID_MEMBER_SPARE;
        int rc = open_one(c, c->spares[i], "spare", sl);
        if (rc)
            return rc;
        uint64_t sectors = sl->dev->size / SECTOR;
        if (sectors < c->smallest)
            return refuse(c, -ENOSPC, "spare %s (%llu sectors) is smaller than the smallest member (%llu sectors)",
                          c->spares[i], (unsigned long long)sectors, (unsigned long long)c->smallest);
    }
    return 0;
}

/* The superblock of sl, the member of device number dn (a slot, or a spare
 * past the slots), as mdadm --create lays it out. */
static int init_member_sb(struct create_plan *c, const struct md_sb_create_params *cp, struct array_slot *sl,
                          uint32_t dn)
{
    uint8_t dev_uuid[16];
    char swhy[200];
    int rc = array_random_bytes(dev_uuid, 16);
    if (rc)
        return refuse(c, rc, "cannot get random bytes for a device UUID: %s", uraid_strerror(rc));
    /* md_sb_init knows raid slots only: a spare is laid out as slot 0 and
     * renumbered (its role stays 0xffff, md_sb_init's default) */
    rc = md_sb_init(&sl->sb, cp, dn < (uint32_t)c->n ? dn : 0, dev_uuid, sl->dev->size / SECTOR, swhy, sizeof swhy);
    if (rc)
        return refuse(c, rc, "member %s: %s", sl->dev->path, swhy);
    sl->sb.dev_number = dn;
    sl->data_offset = sl->sb.data_offset;
    return 0;
}

/* The array-wide fields the later steps chose (RAID-0 layout, bitmap) go
 * into the spares' superblocks too. */
static void spares_follow(struct uraid_array *a)
{
    for (int e = 0; e < a->nextra; e++) {
        struct md_sb *sb = &a->extra[e].sb;
        sb->feature_map = a->sb.feature_map;
        sb->bitmap_offset = a->sb.bitmap_offset;
        sb->layout = a->sb.layout;
    }
}

static int make_uuid(struct create_plan *c, uint8_t uuid[16])
{
    if (c->p->uuid) {
        memcpy(uuid, c->p->uuid, 16);
        return 0;
    }
    int rc = array_random_bytes(uuid, 16);
    return rc ? refuse(c, rc, "cannot get random bytes for the array UUID: %s", uraid_strerror(rc)) : 0;
}

/* Every superblock and the bitmap, in memory; nothing written. */
static int plan_superblocks(struct create_plan *c)
{
    const struct uraid_create_params *p = c->p;
    struct uraid_array *a = c->a;
    struct md_sb_create_params cp = {
        .level = c->g.level,
        .layout = (uint32_t)c->g.layout,
        .chunk_sectors = c->g.level == 1 ? 0 : c->g.chunk_sectors,
        .raid_disks = (uint32_t)c->n,
        .spares = (uint32_t)c->nspares,
        .dev_sectors = c->smallest,
        .name = p->name ? p->name : "0",
        .homehost = p->homehost,
        .ctime = (uint64_t)time(NULL),
        .missing = c->missing,
        .assume_clean = p->assume_clean || c->nmissing,
        .ppl = c->policy == URAID_POLICY_PPL,
        .format = c->format,
    };
    int rc = make_uuid(c, cp.uuid), first = -1;
    for (int i = 0; i < c->n && rc == 0; i++)
        if (a->slot[i].dev && (rc = init_member_sb(c, &cp, &a->slot[i], (uint32_t)i)) == 0 && first < 0)
            first = i;
    for (int e = 0; e < a->nextra && rc == 0; e++)
        rc = init_member_sb(c, &cp, &a->extra[e], (uint32_t)(c->n + e));
    if (rc)
        return rc;
    a->geom = c->g;
    a->k = layout_data_disks(&c->g);
    a->nparity = c->nparity;
    if (c->g.level == 10) {
        /* mdadm 4.2 gives RAID-10 members a size in whole chunks times the far copies */
        uint64_t unit = (uint64_t)c->g.chunk_sectors * (uint64_t)(c->g.layout >> 8 & 0xff);
        for (int i = 0; i < c->n; i++)
            a->slot[i].sb.size -= a->slot[i].sb.size % unit;
        for (int e = 0; e < a->nextra; e++)
            a->extra[e].sb.size -= a->extra[e].sb.size % unit;
    }
    a->sb = a->slot[first].sb;
    a->member_sectors = array_member_sectors(&a->sb, c->smallest);
    if (c->g.level == LAYOUT_LEVEL_LINEAR)
        return array_open_linear(a, a->slot[first].dev->path, c->why, c->whylen);
    if (a->member_sectors < 2ull * (c->g.level == 1 ? 8 : c->g.chunk_sectors))
        return refuse(c, -ENOSPC,
                      "members are too small: the smallest has %llu sectors, which leaves no room for two chunks "
                      "after the %llu-sector data offset",
                      (unsigned long long)c->smallest, (unsigned long long)a->sb.data_offset);
    a->size_sectors = c->g.level == 1 ? a->member_sectors : a->member_sectors * (uint64_t)a->k;
    if (c->g.level == 10 && (rc = array_open_raid10(a, a->member_sectors, a->slot[first].dev->path, c->why,
                                                    c->whylen)) != 0)
        return rc;
    if (a->r10) {
        a->size_sectors = a->r10->array_sectors;
        a->nparity = c->nparity;
    }
    if (c->g.level == 0 && (rc = raid0_create_zones(a, p->layout, c->why, c->whylen)) != 0)
        return rc;
    a->dirty = a->sb.resync_offset != MD_RESYNC_CLEAN;
    rc = choose_bitmap(a, p, c->bitmap_mode, c->smallest, &c->bm, &c->with_bitmap, c->why, c->whylen);
    spares_follow(a);
    return rc;
}

/* mdadm's write_init_ppl1: the whole PPL area zeroed, then an empty
 * header (no entries, generation 0) at its start. */
static int write_empty_ppl(struct member *m, const struct md_sb *sb)
{
    if (!md_sb_has_ppl(sb))
        return 0;
    uint8_t hdr[PPL_HEADER_BYTES] __attribute__((aligned(4096)));
    struct ppl_header h = {.signature = ppl_signature(sb->set_uuid)};
    ppl_header_encode(&h, hdr);
    uint64_t at = (uint64_t)md_sb_ppl_sector(sb) * SECTOR;
    int rc = member_zero(m, (size_t)md_sb_ppl_size(sb) * SECTOR, at);
    return rc ? rc : member_write(m, hdr, sizeof hdr, at);
}

static int write_one(struct create_plan *c, struct array_slot *sl)
{
    int rc = array_write_new_member(sl->dev, &sl->sb);
    if (rc == 0)
        rc = write_empty_ppl(sl->dev, &sl->sb);
    if (rc == 0)
        rc = member_flush(sl->dev);
    return rc ? refuse(c, rc, "member %s: cannot write the superblock: %s", sl->dev->path, uraid_strerror(rc)) : 0;
}

/* The first step that writes: superblocks, empty bad-block logs, bitmap. */
static int write_members(struct create_plan *c)
{
    struct uraid_array *a = c->a;
    int rc = 0;
    for (int i = 0; i < c->n && rc == 0; i++)
        if (a->slot[i].dev)
            rc = write_one(c, &a->slot[i]);
    for (int e = 0; e < a->nextra && rc == 0; e++)
        rc = write_one(c, &a->extra[e]);
    if (rc == 0 && c->with_bitmap && (rc = wib_write_fresh(a, &c->bm)) != 0)
        rc = refuse(c, rc, "cannot write the write-intent bitmap: %s", uraid_strerror(rc));
    return rc;
}

/* Parity made consistent, then the array recorded clean. */
static int sync_new_array(struct create_plan *c)
{
    struct uraid_array *a = c->a;
    int rc = initial_sync(a, c->p);
    if (rc)
        return refuse(c, rc, "initial sync failed: %s (the array exists but is marked dirty)", uraid_strerror(rc));
    a->sb.resync_offset = MD_RESYNC_CLEAN;
    rc = array_write_superblocks(a);
    if (rc)
        return refuse(c, rc, "cannot record the array clean after its initial sync: %s", uraid_strerror(rc));
    a->dirty = 0;
    /* the bitmap's events follow the superblocks' */
    c->bm.events = c->bm.events_cleared = a->sb.events;
    if (c->with_bitmap && (rc = wib_write_fresh(a, &c->bm)) != 0)
        return refuse(c, rc, "cannot write the write-intent bitmap: %s", uraid_strerror(rc));
    return 0;
}

static void plan_free(struct create_plan *c)
{
    if (!c)
        return;
    if (c->a) {
        for (int i = 0; i < URAID_MAX_MEMBERS; i++)
            member_close(c->a->slot[i].dev);
        for (int e = 0; e < c->a->nextra; e++)
            member_close(c->a->extra[e].dev);
        if (c->runtime)
            array_runtime_fini(c->a);
        free(c->a->r10);
        free(c->a->lin);
        free(c->a);
    }
    free(c);
}

int uraid_create(const char *const *paths, int n, const struct uraid_create_params *p, int force, char *why,
                 size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    if (!p || !paths) {
        uraid_why(why, whylen, "no parameters");
        return -EINVAL;
    }
    struct create_plan *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    *c = (struct create_plan){.p = p, .paths = paths, .force = force, .why = why, .whylen = whylen,
                              .nspares = p->spare_devices, .n = n - p->spare_devices};
    c->spares = paths + (c->n > 0 ? c->n : 0);
    int rc = check_args(c);
    if (rc == 0 && !(c->a = calloc(1, sizeof *c->a)))
        rc = refuse(c, -ENOMEM, "out of memory");
    if (rc == 0) {
        c->runtime = 1;
        if ((rc = array_runtime_init(c->a, NULL)) != 0)
            rc = refuse(c, rc, "cannot start the I/O engine: %s", uraid_strerror(rc));
    }
    if (rc == 0)
        rc = open_members(c);
    if (rc == 0)
        rc = check_format_size(c);
    if (rc == 0) {
        settle_policy(c);
        rc = plan_superblocks(c);
    }
    if (rc == 0)
        rc = write_members(c);
    if (rc == 0 && c->a->dirty)
        rc = sync_new_array(c);
    plan_free(c);
    return rc;
}
