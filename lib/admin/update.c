/* mdadm's --update= on an array that is not running (uraid_update), and
 * mdadm --zero-superblock (uraid_zero_superblock).
 *
 * Both read every member given and make every check before the first
 * write, so a refusal leaves each member as it was. A member of an array
 * that a uraid process serves is refused: uraid serve takes no lock on its
 * members, but it answers on a control socket in URAID_CTL_DEFAULT_DIR (or
 * $URAID_CONTROL), whose status names the array's UUID; a block device is
 * also opened O_EXCL, as mdadm does, which finds one that is mounted or
 * held by the kernel's md. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array/array.h"
#include "log.h"
#include "meta/bitmap.h"
#include "meta/ppl.h"
#include "uraid_admin.h"
#include "uraid_ctl.h"

#define refuse(why, whylen, err, ...) (uraid_why((why), (whylen), __VA_ARGS__), (err))

/* 1 when the status text of the server on socket `path` names `uuid`. */
static int serves(const char *path, const char *uuid)
{
    char *buf = malloc(65536);
    int hit = 0;
    if (buf && uraid_ctl_request(path, "status", buf, 65536) == 0) {
        const char *p = strstr(buf, "UUID : ");
        hit = p && !strncmp(p + 7, uuid, MD_UUID_TEXT - 1);
    }
    free(buf);
    return hit;
}

/* -EBUSY with a reason when a serving uraid has the array of `sb` open,
 * or `path` is a block device someone holds exclusively. */
static int in_use(const char *path, const struct md_sb *sb, char *why, size_t whylen)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISBLK(st.st_mode)) {
        int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
        if (fd < 0 && errno == EBUSY)
            return refuse(why, whylen, -EBUSY,
                          "member %s is in use (mounted, or held by md or another program): stop it first", path);
        if (fd >= 0)
            close(fd);
    }
    if (!sb)
        return 0;
    char uuid[MD_UUID_TEXT], sock[512];
    md_uuid_text(sb->set_uuid, uuid);
    const char *env = getenv("URAID_CONTROL");
    if (env && *env && serves(env, uuid))
        return refuse(why, whylen, -EBUSY, "member %s: array %s is being served (control socket %s): stop it "
                                           "first with 'uraid stop'", path, uuid, env);
    DIR *d = opendir(URAID_CTL_DEFAULT_DIR);
    int rc = 0;
    for (struct dirent *e; d && rc == 0 && (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".sock"))
            continue;
        snprintf(sock, sizeof sock, "%s/%s", URAID_CTL_DEFAULT_DIR, e->d_name);
        if (serves(sock, uuid))
            rc = refuse(why, whylen, -EBUSY, "member %s: array %s is being served (control socket %s): stop it "
                                             "first with 'uraid stop --control %s'", path, uuid, sock, sock);
    }
    if (d)
        closedir(d);
    return rc;
}

/* ---- zero-superblock -------------------------------------------------- */

/* 1 when the place format f keeps its superblock on m holds md's magic
 * (either byte order: a 0.90 superblock of another endianness too). */
static int has_magic(struct member *m, int f)
{
    uint8_t buf[MD_SB_BYTES] __attribute__((aligned(4096)));
    uint64_t at = md_format_sb_sector(f, m->size / SECTOR);
    if (at == UINT64_MAX || (at + MD_SB_BYTES / SECTOR) * SECTOR > m->size ||
        member_read(m, buf, sizeof buf, at * SECTOR))
        return 0;
    uint32_t magic = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 24;
    return magic == MD_SB_MAGIC || magic == __builtin_bswap32(MD_SB_MAGIC);
}

/* The places on m that hold md magic: bit f set for format f; *sb the
 * first decodable one (*ok set), reason for the first damaged one. */
static void find_superblocks(struct member *m, int *places, struct md_sb *sb, int *ok, char *reason, size_t len)
{
    *places = *ok = 0;
    reason[0] = 0;
    for (int f = 0; f < MD_FMT_COUNT; f++) {
        if (!has_magic(m, f))
            continue;
        *places |= 1 << f;
        char why[300];
        struct md_sb one;
        int rc = array_read_superblock_as(m, f, &one, why, sizeof why);
        if (rc == 0 && !*ok) {
            *sb = one;
            *ok = 1;
        } else if (rc && !reason[0]) {
            snprintf(reason, len, "%s", why);
        }
    }
}

static int zero_check(struct member *m, int force, int *places, char *why, size_t whylen)
{
    struct md_sb sb;
    int ok;
    char reason[300];
    find_superblocks(m, places, &sb, &ok, reason, sizeof reason);
    if (!*places)
        return refuse(why, whylen, -EINVAL, "member %s: no md superblock (Unrecognised md component device; "
                                            "nothing written)", m->path);
    if (reason[0] && !force)
        return refuse(why, whylen, -EUCLEAN, "%s; --force zeroes it anyway (nothing written)", reason);
    return in_use(m->path, ok ? &sb : NULL, why, whylen);
}

int uraid_zero_superblock(const char *const *paths, int n, int force, char *why, size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    if (!paths || n < 1 || n > URAID_MAX_MEMBERS)
        return refuse(why, whylen, -EINVAL, "no members given");
    struct member *dev[URAID_MAX_MEMBERS] = {0};
    int places[URAID_MAX_MEMBERS] = {0}, rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char mwhy[300];
        if ((rc = member_open_why(paths[i], 0, &dev[i], mwhy, sizeof mwhy)) != 0)
            rc = refuse(why, whylen, rc, "member %s: cannot open: %s", paths[i], mwhy);
        else
            rc = zero_check(dev[i], force, &places[i], why, whylen);
    }
    for (int i = 0; i < n && rc == 0; i++) {
        for (int f = 0; f < MD_FMT_COUNT && rc == 0; f++) {
            uint64_t at = md_format_sb_sector(f, dev[i]->size / SECTOR);
            if (!(places[i] & (1 << f)))
                continue;
            /* the whole superblock block, as mdadm's store of an empty superblock */
            uint8_t zero[MD_SB_BYTES] __attribute__((aligned(4096))) = {0};
            rc = member_write(dev[i], zero, sizeof zero, at * SECTOR);
            if (rc)
                rc = refuse(why, whylen, rc, "member %s: cannot zero the metadata %s superblock at sector %llu: %s",
                            paths[i], md_format_name(f), (unsigned long long)at, uraid_strerror(rc));
        }
        if (rc == 0 && (rc = member_flush(dev[i])) != 0)
            rc = refuse(why, whylen, rc, "member %s: cannot flush: %s", paths[i], uraid_strerror(rc));
    }
    for (int i = 0; i < n; i++)
        if (dev[i])
            member_close(dev[i]);
    return rc;
}

/* ---- update ------------------------------------------------------------ */

static const char *const update_names[] = {"name", "uuid", "resync", "no-bitmap", "bbl", "no-bbl",
                                           "revert-reshape"};

int uraid_update_parse(const char *name)
{
    for (int i = 0; name && i <= URAID_UPDATE_REVERT_RESHAPE; i++)
        if (!strcmp(name, update_names[i]))
            return i;
    return -1;
}

struct upd {
    int n;
    struct member *dev[URAID_MAX_MEMBERS];
    struct md_sb sb[URAID_MAX_MEMBERS], nsb[URAID_MAX_MEMBERS];
    int new_bblog[URAID_MAX_MEMBERS];
    const struct uraid_update *u;
    char *why;
    size_t whylen;
};

/* Every member opened and read: one array, all its slots, none in use. */
static int upd_read(struct upd *g, const char *const *paths)
{
    int seen[URAID_MAX_MEMBERS] = {0}, active = 0;
    for (int i = 0; i < g->n; i++) {
        char mwhy[300];
        int rc = member_open_why(paths[i], 0, &g->dev[i], mwhy, sizeof mwhy);
        if (rc)
            return refuse(g->why, g->whylen, rc, "member %s: cannot open: %s", paths[i], mwhy);
        if ((rc = array_read_superblock(g->dev[i], &g->sb[i], g->why, g->whylen)) != 0)
            return rc;
        const struct md_sb *sb = &g->sb[i], *s0 = &g->sb[0];
        if (memcmp(sb->set_uuid, s0->set_uuid, 16) || sb->level != s0->level || sb->raid_disks != s0->raid_disks)
            return refuse(g->why, g->whylen, -EINVAL, "member %s belongs to another array than %s", paths[i],
                          paths[0]);
        if ((rc = in_use(paths[i], sb, g->why, g->whylen)) != 0)
            return rc;
        /* a new UUID makes the PPL headers foreign: only an empty log may be rewritten */
        if (sb->resync_offset != MD_RESYNC_CLEAN && g->u->what == URAID_UPDATE_UUID && md_sb_has_ppl(sb))
            return refuse(g->why, g->whylen, -EBUSY,
                          "member %s: the array was not shut down cleanly and its partial parity log may hold "
                          "entries a new UUID would disown; open it with uraid (which replays the log) and stop it "
                          "cleanly first", paths[i]);
        uint16_t role = sb->dev_number < sb->max_dev ? sb->dev_roles[sb->dev_number] : MD_ROLE_SPARE;
        if (role < sb->raid_disks && !seen[role]++)
            active++;
    }
    /* the slots the newest superblock records as held: a degraded array's
     * failed or removed slot has no member to update (mdadm updates the
     * ones it assembles), but a member it still counts on must be given */
    int newest = 0, recorded = 0;
    for (int i = 1; i < g->n; i++)
        if (g->sb[i].events > g->sb[newest].events)
            newest = i;
    const struct md_sb *nb = &g->sb[newest];
    int held[URAID_MAX_MEMBERS] = {0};
    for (uint32_t d = 0; d < nb->max_dev && d < MD_SB_MAX_DEV; d++)
        if (nb->dev_roles[d] < nb->raid_disks && nb->dev_roles[d] < URAID_MAX_MEMBERS && !held[nb->dev_roles[d]]++)
            recorded++;
    if (active < recorded)
        return refuse(g->why, g->whylen, -ENODEV,
                      "all %d members the array counts on are needed to update it (found %d): a member left out "
                      "would keep the old superblock and be told apart from the others", recorded, active);
    return 0;
}

/* The sectors the bitmap takes after its offset (header and bits). */
static int bitmap_sectors(struct upd *g, int i, int64_t *out)
{
    uint8_t buf[4096] __attribute__((aligned(4096)));
    const struct md_sb *sb = &g->sb[i];
    uint64_t at = (uint64_t)((int64_t)sb->super_offset + sb->bitmap_offset) * SECTOR;
    struct md_bitmap_sb b;
    char why[200];
    int rc = member_read(g->dev[i], buf, sizeof buf, at);
    if (rc == 0)
        rc = md_bitmap_decode(buf, &b, why, sizeof why);
    else
        snprintf(why, sizeof why, "%s", uraid_strerror(rc));
    if (rc)
        return refuse(g->why, g->whylen, rc, "member %s: cannot read the bitmap at byte %llu: %s", g->dev[i]->path,
                      (unsigned long long)at, why);
    /* mdadm's calc_bitmap_size(.., 4096): whole 4 KiB blocks */
    *out = (int64_t)((md_bitmap_area_bytes(md_bitmap_bits(&b)) + 4095) / 4096 * 8);
    return 0;
}

/* mdadm's --update=bbl: an 8-sector log after the superblock (and bitmap
 * or PPL) at least 32 KiB from the superblock when there is room (1.1,
 * 1.2), or just before the superblock (1.0). */
static int plan_bbl(struct upd *g, int i, struct md_sb *nsb)
{
    const struct md_sb *sb = &g->sb[i];
    int64_t used = 0, start = 0, rc = 0;
    if (sb->bblog_offset && sb->bblog_size)
        return 0; /* already there, as mdadm leaves it */
    if (sb->feature_map & MD_FEATURE_BITMAP_OFFSET)
        rc = bitmap_sectors(g, i, &used);
    else if (md_sb_has_ppl(sb))
        used = md_sb_ppl_size(sb);
    if (rc)
        return (int)rc;
    int32_t at_off = sb->feature_map & MD_FEATURE_BITMAP_OFFSET ? sb->bitmap_offset
                     : md_sb_has_ppl(sb)                        ? md_sb_ppl_offset(sb)
                                                                : 0;
    int64_t room = (int64_t)sb->data_offset - (int64_t)sb->super_offset;
    if (sb->super_offset < sb->data_offset) {
        start = used && at_off > 0 ? at_off + used : 8;
        while (start < 8 + 64 && start + 16 <= room)
            start += 8;
        if (start + 8 > room)
            return refuse(g->why, g->whylen, -ENOSPC, "member %s: no room for a bad-block log between the "
                                                      "superblock and the data (nothing written)", g->dev[i]->path);
    } else {
        int64_t space = used && at_off < 0 ? -(int64_t)at_off - used
                                           : (int64_t)sb->super_offset - (int64_t)(sb->data_offset + sb->data_size);
        if (space < 8)
            return refuse(g->why, g->whylen, -ENOSPC, "member %s: no room for a bad-block log between the data "
                                                      "and the superblock (nothing written)", g->dev[i]->path);
        start = -8;
    }
    nsb->bblog_size = 8;
    nsb->bblog_shift = 0;
    nsb->bblog_offset = (int32_t)start;
    g->new_bblog[i] = 1;
    char why[300];
    if ((rc = md_sb_check_bblog(nsb, why, sizeof why)) != 0)
        return refuse(g->why, g->whylen, (int)rc, "member %s: %s", g->dev[i]->path, why);
    return 0;
}

/* mdadm's --update=revert-reshape (super1.c): the reshape recorded on the
 * members turned around, so that carrying it on moves the data back. The
 * old and new member counts, layouts and chunks swap, delta_disks is
 * negated (with none, the BACKWARDS bit flips: md infers the direction
 * from the sign otherwise), data_offset moves to where the new geometry's
 * data is and new_offset points back; reshape_position stays, so the
 * stripes on each side of it keep their geometry. One step beyond mdadm:
 * a grow reverted past the old size (its new rows there hold only the
 * zeros of the new space) starts from the old size, where md's backwards
 * reshape starts (md would trip over a position past the array's end). */
static int plan_revert(struct upd *g, int i)
{
    const struct md_sb *sb = &g->sb[i];
    struct md_sb *nsb = &g->nsb[i];
    if (!(sb->feature_map & MD_FEATURE_RESHAPE_ACTIVE))
        return refuse(g->why, g->whylen, -EINVAL, "member %s: no reshape in progress to revert", g->dev[i]->path);
    if (sb->level < 4 || sb->level > 6 || sb->new_level != (uint32_t)sb->level ||
        !(sb->feature_map & MD_FEATURE_NEW_OFFSET) || sb->new_offset == 0)
        return refuse(g->why, g->whylen, -EOPNOTSUPP, "member %s: uraid reverts RAID-4/5/6 reshapes within the level "
                      "that move the data offset (level %d -> %u, new offset %d)", g->dev[i]->path, sb->level,
                      sb->new_level, sb->new_offset);
    int np = sb->level == 6 ? 2 : 1, nold = (int)sb->raid_disks - sb->delta_disks;
    uint32_t unit = sb->chunksize > sb->new_chunk ? sb->chunksize : sb->new_chunk;
    if (!unit || nold <= np || sb->size % unit)
        return refuse(g->why, g->whylen, -EINVAL, "member %s: the reshape record is damaged (%d old members, chunk "
                      "%u -> %u)", g->dev[i]->path, nold, sb->chunksize, sb->new_chunk);
    uint64_t sd = (uint64_t)unit * (uint64_t)(nold - np), cap = sb->size * (uint64_t)(nold - np);
    uint64_t pos = sb->reshape_position < cap ? sb->reshape_position : cap;
    /* mdadm's check: the position must fall on a stripe of the geometry it goes back to */
    if (pos % sd)
        return refuse(g->why, g->whylen, -EINVAL, "member %s: reshape position %llu is not on a stripe of the old "
                      "geometry (%llu sectors): let the reshape go on a little ('uraid grow --continue', stopped "
                      "with Ctrl-C) and revert then", g->dev[i]->path, (unsigned long long)sb->reshape_position,
                      (unsigned long long)sd);
    nsb->reshape_position = pos;
    nsb->raid_disks = (uint32_t)nold;
    if (sb->delta_disks == 0)
        nsb->feature_map ^= MD_FEATURE_RESHAPE_BACKWARDS;
    else
        nsb->delta_disks = -sb->delta_disks;
    nsb->layout = sb->new_layout;
    nsb->new_layout = sb->layout;
    nsb->chunksize = sb->new_chunk;
    nsb->new_chunk = sb->chunksize;
    nsb->data_offset = (uint64_t)((int64_t)sb->data_offset + sb->new_offset);
    nsb->data_size = (uint64_t)((int64_t)sb->data_size - sb->new_offset);
    nsb->new_offset = -sb->new_offset;
    return 0;
}

/* revert-reshape: every member of both geometries, one record. */
static int revert_members(struct upd *g)
{
    const struct md_sb *s0 = &g->sb[0];
    int nall = (int)s0->raid_disks - (s0->delta_disks < 0 ? s0->delta_disks : 0), seen[URAID_MAX_MEMBERS] = {0};
    int got = 0;
    for (int i = 0; i < g->n; i++) {
        const struct md_sb *sb = &g->sb[i];
        uint16_t role = sb->dev_number < sb->max_dev ? sb->dev_roles[sb->dev_number] : MD_ROLE_SPARE;
        if (sb->events != s0->events || sb->reshape_position != s0->reshape_position ||
            sb->delta_disks != s0->delta_disks)
            return refuse(g->why, g->whylen, -EINVAL, "member %s does not record the same reshape as %s (events %llu, "
                          "position %llu; %s's %llu, %llu): carry it on once ('uraid grow --continue') so that every "
                          "member agrees, then revert", g->dev[i]->path, g->dev[0]->path,
                          (unsigned long long)sb->events, (unsigned long long)sb->reshape_position, g->dev[0]->path,
                          (unsigned long long)s0->events, (unsigned long long)s0->reshape_position);
        if (role < nall && role < URAID_MAX_MEMBERS && !seen[role]++)
            got++;
    }
    if (got < nall)
        return refuse(g->why, g->whylen, -ENODEV, "a reshape between %d and %u members is in progress: give all %d "
                      "members (%d given) so that none keeps the old record", (int)s0->raid_disks - s0->delta_disks,
                      s0->raid_disks, nall, got);
    return 0;
}

static int plan_one(struct upd *g, int i)
{
    const struct uraid_update *u = g->u;
    const struct md_sb *sb = &g->sb[i];
    struct md_sb *nsb = &g->nsb[i];
    *nsb = *sb;
    int v090 = sb->format == MD_FMT_0_90;
    switch (u->what) {
    case URAID_UPDATE_NAME:
        if (v090)
            return refuse(g->why, g->whylen, -EOPNOTSUPP, "metadata 0.90 keeps no array name (member %s)",
                          g->dev[i]->path);
        /* as mdadm: "HOST:NAME" with this machine's name unless NAME has a ':' or HOST: would not fit */
        if (md_sb_make_name(u->name, NULL, nsb->set_name) < 0)
            return refuse(g->why, g->whylen, -EINVAL, "name '%s' does not fit md's 32 bytes", u->name);
        return 0;
    case URAID_UPDATE_UUID:
        memcpy(nsb->set_uuid, u->uuid, 16);
        return 0;
    case URAID_UPDATE_RESYNC:
        nsb->resync_offset = 0;
        return 0;
    case URAID_UPDATE_NO_BITMAP:
        nsb->feature_map &= ~MD_FEATURE_BITMAP_OFFSET;
        if (!md_sb_has_ppl(sb))
            nsb->bitmap_offset = 0;
        return 0;
    case URAID_UPDATE_BBL:
        if (v090)
            return refuse(g->why, g->whylen, -EOPNOTSUPP, "metadata 0.90 has no bad-block log (member %s)",
                          g->dev[i]->path);
        return plan_bbl(g, i, nsb);
    case URAID_UPDATE_REVERT_RESHAPE: {
        int rc = i == 0 ? revert_members(g) : 0;
        return rc ? rc : plan_revert(g, i);
    }
    case URAID_UPDATE_NO_BBL:
        if (sb->feature_map & MD_FEATURE_BAD_BLOCKS)
            return refuse(g->why, g->whylen, -EBUSY,
                          "member %s: cannot remove an active bad-block log: it lists bad blocks (as mdadm, "
                          "nothing written; rewrite or replace the member first)", g->dev[i]->path);
        nsb->bblog_size = 0;
        nsb->bblog_shift = 0;
        nsb->bblog_offset = 0;
        return 0;
    }
    return refuse(g->why, g->whylen, -EINVAL, "unknown update %d", u->what);
}

/* What lives beside the superblock and carries the array's UUID or the
 * new log: written before the superblock that points at it. */
static int write_side(struct upd *g, int i)
{
    const struct md_sb *nsb = &g->nsb[i];
    struct member *m = g->dev[i];
    uint8_t buf[4096] __attribute__((aligned(4096)));
    int rc = 0;
    if (g->new_bblog[i]) {
        memset(buf, 0xff, sizeof buf); /* an empty log: every entry unused */
        rc = member_write(m, buf, sizeof buf, (uint64_t)md_sb_bblog_sector(nsb) * SECTOR);
    }
    if (rc == 0 && g->u->what == URAID_UPDATE_UUID && (nsb->feature_map & MD_FEATURE_BITMAP_OFFSET)) {
        /* md refuses a bitmap whose header names another array (mdadm's bitmap_update_uuid) */
        uint64_t at = (uint64_t)((int64_t)nsb->super_offset + nsb->bitmap_offset) * SECTOR;
        struct md_bitmap_sb b;
        char why[200];
        if ((rc = member_read(m, buf, sizeof buf, at)) == 0 && (rc = md_bitmap_decode(buf, &b, why, sizeof why)) == 0) {
            md_sb_bitmap_uuid(nsb, b.uuid);
            md_bitmap_encode(&b, buf);
            rc = member_write(m, buf, sizeof buf, at);
        }
    }
    if (rc == 0 && g->u->what == URAID_UPDATE_UUID && md_sb_has_ppl(nsb)) {
        /* the PPL header's signature is a CRC of the UUID; the array is clean, so the log is empty */
        uint8_t hdr[PPL_HEADER_BYTES] __attribute__((aligned(4096)));
        struct ppl_header h = {.signature = ppl_signature(nsb->set_uuid)};
        ppl_header_encode(&h, hdr);
        rc = member_write(m, hdr, sizeof hdr, (uint64_t)md_sb_ppl_sector(nsb) * SECTOR);
    }
    return rc;
}

int uraid_update(const char *const *paths, int n, const struct uraid_update *u, char *why, size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    if (!paths || n < 1 || n > URAID_MAX_MEMBERS || !u)
        return refuse(why, whylen, -EINVAL, "no members given");
    if (u->what == URAID_UPDATE_NAME && (!u->name || !*u->name || strlen(u->name) > 31))
        return refuse(why, whylen, -EINVAL, "--update=name needs --name NEW of 1 to 31 characters");
    struct upd *g = calloc(1, sizeof *g);
    if (!g)
        return refuse(why, whylen, -ENOMEM, "out of memory");
    *g = (struct upd){.n = n, .u = u, .why = why, .whylen = whylen};
    int rc = upd_read(g, paths);
    for (int i = 0; i < n && rc == 0; i++)
        rc = plan_one(g, i);
    for (int i = 0; i < n && rc == 0; i++) {
        rc = write_side(g, i);
        if (rc == 0)
            rc = array_write_superblock(g->dev[i], &g->nsb[i]);
        if (rc == 0)
            rc = member_flush(g->dev[i]);
        if (rc)
            rc = refuse(why, whylen, rc, "member %s: cannot write its superblock: %s (members before it are "
                                         "updated; run the same update again)", paths[i], uraid_strerror(rc));
    }
    for (int i = 0; i < n; i++)
        if (g->dev[i])
            member_close(g->dev[i]);
    free(g);
    return rc;
}
