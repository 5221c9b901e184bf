/* Assembly (opening an array from its members) and closing; superblock
 * updates and the dirty mark are in sbupdate.c, the info the CLI prints in
 * info.c.
 *
 * Assembly rules (md's, md-format.md 1.5): the member with the highest
 * events is the reference; a member more than one event behind is stale and
 * left out; the reference's dev_roles decide each member's slot. Every check
 * runs before anything is written, and opening writes nothing at all: the
 * first write marks the array dirty. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array/array.h"
#include "log.h"
#include "array/reshape.h"
#include "array/reshape_io.h"
#include "array/readahead.h"
#include "stripe/ppl.h"

/* ---- opening ----------------------------------------------------------------- */

int array_same_file(const char *x, const char *y)
{
    if (!strcmp(x, y))
        return 1;
    struct stat sx, sy;
    if (stat(x, &sx) || stat(y, &sy))
        return 0; /* an NBD URI, or a name that does not exist (yet) */
    if (S_ISBLK(sx.st_mode) && S_ISBLK(sy.st_mode))
        return sx.st_rdev == sy.st_rdev;
    return sx.st_dev == sy.st_dev && sx.st_ino == sy.st_ino;
}

static int same_array(const struct md_sb *x, const struct md_sb *y)
{
    return !memcmp(x->set_uuid, y->set_uuid, 16);
}

static int same_geometry(const struct md_sb *x, const struct md_sb *y)
{
    return x->level == y->level && x->layout == y->layout && x->chunksize == y->chunksize &&
           x->raid_disks == y->raid_disks && x->size == y->size;
}

static const char *level_name(int level)
{
    switch (level) {
    case 0: return "RAID-0";
    case 1: return "RAID-1";
    case 4: return "RAID-4";
    case 5: return "RAID-5";
    case 6: return "RAID-6";
    case 10: return "RAID-10";
    case LAYOUT_LEVEL_LINEAR: return "linear";
    default: return "this level";
    }
}

/* 1 when the slot being recovered is a -6 layout's last, which holds Q
 * alone (RAID-5 -> 6's new member; during a reshape in the old layout):
 * md's raid5_run counts it in dirty_parity_disks, no reason to refuse a
 * dirty start, since no data is rebuilt from it. */
static int q_recovering(const struct uraid_array *a)
{
    const struct md_sb *R = &a->sb;
    int old = (int)R->raid_disks - (R->feature_map & MD_FEATURE_RESHAPE_ACTIVE ? R->delta_disks : 0);
    /* RAID-4 and RAID-5 parity-last outside a reshape: the last member holds only parity too (md's
     * only_parity; a RAID-0 taken over, grow_takeover_raid0.c, recovering its parity member) */
    int parity_last = (R->level == 4 || (R->level == 5 && R->layout == LAYOUT_PARITY_LAST)) &&
                      !(R->feature_map & MD_FEATURE_RESHAPE_ACTIVE);
    if (!parity_last && (R->level != 6 || layout_from_6((int)R->layout) < 0))
        return 0;
    if (old < 1 || old > URAID_MAX_MEMBERS)
        return 0;
    return a->slot[old - 1].dev && a->slot[old - 1].state == URAID_MEMBER_REBUILDING;
}

/* Features this engine can honour. Others (a backwards reshape, journal,
 * cluster) change how data is laid out or written, so opening would be
 * unsafe. PPL is kept by lib/stripe/ppl.c; a forwards reshape by
 * reshape_io.c (which refuses the kinds it does not serve). */
/* RESHAPE_BACKWARDS is array_reshape_open's (reshape_io.c) */
#define UNSUPPORTED_FEATURES (MD_FEATURE_JOURNAL | MD_FEATURE_CLUSTERED | MD_FEATURE_REPLACEMENT)

/* Loads a member's bad-block log when its superblock says it is not empty. */
static int load_badblocks(struct array_slot *sl, char *why, size_t whylen)
{
    int rc = array_read_bblog(sl->dev, &sl->sb, &sl->badblocks, why, whylen);
    if (rc == 0 && sl->badblocks && sl->badblocks->count)
        uraid_log(URAID_LOG_INFO, "member %s: %u bad-block ranges listed; they are rebuilt from the other members",
                  sl->dev->path, sl->badblocks->count);
    return rc;
}

/* Wraps a member in the simulation layers of its member_sim spec: always a
 * fault layer first (so faults can be injected at run time), then whatever
 * the spec adds on top (throttling, latency, fault rules). */
static int open_sim_layers(struct member **dev, struct member **fault, const char *spec, char *why, size_t whylen)
{
    if (!spec)
        return 0;
    int rc = member_fault_wrap(*dev, dev);
    if (rc) {
        uraid_why(why, whylen, "member %s: cannot add a fault layer: %s", (*dev)->path, uraid_strerror(rc));
        return rc;
    }
    *fault = *dev;
    if (!*spec)
        return 0;
    char reason[256];
    rc = member_apply_spec(dev, spec, reason, sizeof reason);
    if (rc)
        uraid_why(why, whylen, "member %s: %s", (*dev)->path, reason);
    return rc;
}

int array_open_added(struct uraid_array *a, const char *path, struct member **dev, struct member **fault, char *why,
                     size_t whylen)
{
    char mwhy[300];
    struct member *f = NULL;
    *dev = NULL;
    int rc = member_open_why(path, 0, dev, mwhy, sizeof mwhy);
    if (rc)
        return uraid_why(why, whylen, "cannot open %s: %s", path, mwhy), rc;
    if (a->added_sim && (rc = open_sim_layers(dev, &f, a->added_sim, mwhy, sizeof mwhy)) != 0) {
        member_close(*dev);
        *dev = NULL;
        return uraid_why(why, whylen, "cannot open %s: %s", path, mwhy), rc;
    }
    if (fault)
        *fault = f;
    return 0;
}

static void free_array(struct uraid_array *a)
{
    if (!a)
        return;
    array_monitor_stop(a); /* it could start a job */
    ra_destroy(a->ra);     /* its thread reads the members */
    a->ra = NULL;
    if (a->job.thread_started)
        uraid_job_cancel(a); /* before its members close */
    array_monitor_destroy(a); /* no job thread left to kick it */
    wib_free(a);
    ppl_close(a);
    array_reshape_free(a->rs);
    a->rs = NULL;
    for (int s = 0; s < URAID_MAX_MEMBERS; s++) {
        member_close(a->slot[s].dev);
        free(a->slot[s].badblocks);
    }
    for (int e = 0; e < a->nextra; e++) {
        member_close(a->extra[e].dev);
        free(a->extra[e].badblocks);
    }
    free(a->degraded_written);
    free(a->r0);
    free(a->r10);
    free(a->lin);
    while (a->bb_retired) {
        struct bb_retired *r = a->bb_retired;
        a->bb_retired = r->next;
        free(r->list);
        free(r);
    }
    array_events_drain();
    free(a->event_program);
    array_runtime_fini(a);
    free(a->added_sim);
    free(a);
}

/* For the refusal messages: which slots have no in-sync member, naming the
 * member left out of each (stale or being rebuilt), e.g. "slot 1 missing,
 * slot 3 stale: /d3.img". */
static void describe_missing(const struct uraid_array *a, char *out, size_t len)
{
    size_t o = 0;
    out[0] = 0;
    for (int s = 0; s < a->geom.raid_disks && o < len; s++) {
        const struct array_slot *sl = &a->slot[s];
        if (sl->state == URAID_MEMBER_IN_SYNC)
            continue;
        const char *who = sl->dev ? sl->dev->path : NULL, *what = sl->dev ? "being rebuilt" : "missing";
        for (int e = 0; e < a->nextra && !who; e++) {
            const struct md_sb *esb = &a->extra[e].sb;
            /* a member left out still names, in its own superblock, the slot it held */
            if ((a->extra[e].state == URAID_MEMBER_STALE || a->extra[e].state == URAID_MEMBER_SPARE) &&
                esb->dev_number < esb->max_dev && esb->dev_roles[esb->dev_number] == s) {
                who = a->extra[e].dev->path;
                what = a->extra[e].state == URAID_MEMBER_STALE ? "stale" : "dropped while it was away";
            }
        }
        int w = snprintf(out + o, len - o, "%sslot %d %s%s%s", o ? ", " : "", s, what, who ? ": " : "",
                         who ? who : "");
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

/* RAID-0 stripes over zones when its members differ in size (raid0.h): the
 * size is theirs summed, not the smallest times n. Every slot is present
 * (RAID-0 runs only whole). */
static int open_zones(struct uraid_array *a, const char *ref, char *why, size_t whylen)
{
    uint64_t sizes[URAID_MAX_MEMBERS];
    for (int s = 0; s < a->geom.raid_disks; s++)
        sizes[s] = a->slot[s].sb.data_size;
    a->r0 = malloc(sizeof *a->r0);
    if (!a->r0) {
        uraid_why(why, whylen, "out of memory");
        return -ENOMEM;
    }
    /* md reads the layout field of RAID-0 only when this feature says it is set */
    int layout = a->sb.feature_map & MD_FEATURE_RAID0_LAYOUT ? (int)a->sb.layout : RAID0_LAYOUT_UNSET;
    char zwhy[300];
    int rc = raid0_zones_build(a->r0, a->geom.raid_disks, sizes, a->geom.chunk_sectors, layout, zwhy, sizeof zwhy);
    if (rc) {
        uraid_why(why, whylen, "member %s: %s", ref, zwhy);
        return rc;
    }
    a->size_sectors = a->r0->array_sectors;
    a->member_sectors = 0;
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (a->r0->slot_sectors[s] > a->member_sectors)
            a->member_sectors = a->r0->slot_sectors[s];
    return 0;
}

/* ---- the steps of uraid_open ----------------------------------------------------
 *
 * read_superblocks -> pick_reference -> set_geometry -> place_members ->
 * load_logs -> check_startable -> start_runtime, each 0 or a negative errno
 * with one line in why; none writes. A member's struct member stays in the
 * context until it is placed in the array, so one cleanup closes the rest. */

struct open_ctx {
    const char *const *paths;
    int n;
    const struct uraid_open_params *p;
    struct member **dev, **fault; /* by position in paths; NULL once placed */
    struct md_sb *sb;
    int format;                   /* enum md_format the user named, or MD_FMT_ANY */
    int ref;                      /* the member with the highest events */
    int missing;                  /* slots without an in-sync member */
    char gone[512];               /* which, for the messages */
    unsigned char shadowed[URAID_MAX_MEMBERS]; /* an older device that gave its device number to a newer one */
    char *why;
    size_t whylen;
};

/* md's super_1_load: the data area the superblock records must lie on the
 * member (data_offset + data_size), or writes would grow a file or fail. */
static int member_fits(const struct member *m, const struct md_sb *sb, char *why, size_t whylen)
{
    uint64_t sectors = m->size / SECTOR;
    if (sb->data_offset <= sectors && sectors - sb->data_offset >= sb->data_size)
        return 0;
    uraid_why(why, whylen,
              "member %s is smaller than its superblock says: %llu sectors, but data_offset %llu + data_size %llu "
              "(truncated? give it back its size, or add it again as a new member)",
              m->path, (unsigned long long)sectors, (unsigned long long)sb->data_offset,
              (unsigned long long)sb->data_size);
    return -EINVAL;
}

static int read_superblocks(struct open_ctx *o)
{
    for (int i = 0; i < o->n; i++) {
        char mwhy[300];
        int rc = member_open_why(o->paths[i], o->p->readonly, &o->dev[i], mwhy, sizeof mwhy);
        if (rc) {
            uraid_why(o->why, o->whylen, "member %s: cannot open: %s", o->paths[i], mwhy);
            return rc;
        }
        if (o->p->member_sim &&
            (rc = open_sim_layers(&o->dev[i], &o->fault[i], o->p->member_sim[i], o->why, o->whylen)) != 0)
            return rc;
        if ((rc = array_read_superblock_as(o->dev[i], o->format, &o->sb[i], o->why, o->whylen)) != 0)
            return rc;
        if (o->sb[i].feature_map & UNSUPPORTED_FEATURES) {
            uraid_why(o->why, o->whylen, "member %s: uses md features uraid does not support yet (feature map 0x%x)",
                      o->paths[i], o->sb[i].feature_map);
            return -EOPNOTSUPP;
        }
        if ((rc = member_fits(o->dev[i], &o->sb[i], o->why, o->whylen)) != 0)
            return rc;
    }
    return 0;
}

/* One array, one geometry, one member per device number; the reference is
 * the member with the highest events (md-format.md 1.5). */
/* Member i is one a newer member's superblock records as faulty: its own
 * may predate a reshape it failed in (md ignores such a member's record). */
static int stale_faulty(const struct open_ctx *o, int i)
{
    for (int j = 0; j < o->n; j++)
        if (o->sb[j].events > o->sb[i].events && o->sb[i].dev_number < o->sb[j].max_dev &&
            o->sb[j].dev_roles[o->sb[i].dev_number] == MD_ROLE_FAULTY)
            return 1;
    return 0;
}

/* Two members one event apart (size_step) whose levels differ as a
 * takeover of RAID-4/5/6 leaves them when its one superblock write was cut
 * off (reshape_level_online.c, reshape_level.c): the same chunk and size,
 * no reshape recorded, one member more or less (RAID-5 <-> 6, RAID-4/5 <->
 * RAID-0: the parity member dropped); or RAID-1 and RAID-5 of two members
 * of one size (grow_takeover_online.c). Nothing
 * moved, so the newest's level counts, as in md (mdadm assembles members
 * one event behind; the kernel takes the array's fields from the newest).
 * A new RAID-6 member that missed the write is a spare with its recovery
 * at 0 in its own superblock (take_over writes it so first): recovered. */
static int takeover_step(const struct md_sb *x, const struct md_sb *y)
{
    int dn = (int)x->raid_disks - (int)y->raid_disks;
    if ((x->feature_map | y->feature_map) & MD_FEATURE_RESHAPE_ACTIVE)
        return 0;
    /* RAID-4/5 of n <-> RAID-0 of n - 1 (the parity member dropped, grow_takeover_online.c) */
    if ((x->level == 0) != (y->level == 0)) {
        const struct md_sb *z = x->level == 0 ? x : y, *p = x->level == 0 ? y : x;
        return (p->level == 4 || p->level == 5) && p->raid_disks == z->raid_disks + 1 &&
               p->chunksize == z->chunksize && p->size == z->size;
    }
    /* RAID-1 of 2 <-> RAID-5 of 2 (grow_takeover_online.c): only the chunk and layout differ */
    if (x->level + y->level == 6 && (x->level == 1 || y->level == 1))
        return x->raid_disks == 2 && y->raid_disks == 2 && x->size == y->size;
    return x->level >= 4 && x->level <= 6 && y->level >= 4 && y->level <= 6 && x->level != y->level &&
           x->chunksize == y->chunksize && x->size == y->size && dn >= -1 && dn <= 1;
}

static int pick_reference(struct open_ctx *o)
{
    const struct md_sb *sb = o->sb;
    o->ref = 0;
    int base = 0; /* the geometry every member must share: the first's, unless it failed before a reshape ended */
    for (int i = 1; i < o->n && stale_faulty(o, base); i++)
        base = i;
    for (int i = 0; i < o->n; i++) {
        if (!same_array(&sb[i], &sb[0])) {
            char u0[MD_UUID_TEXT], ui[MD_UUID_TEXT];
            md_uuid_text(sb[0].set_uuid, u0);
            md_uuid_text(sb[i].set_uuid, ui);
            uraid_why(o->why, o->whylen, "member %s belongs to a different array (UUID %s) than %s (UUID %s)",
                      o->paths[i], ui, o->paths[0], u0);
            return -EINVAL;
        }
        if (sb[i].format != sb[0].format) {
            uraid_why(o->why, o->whylen,
                      "member %s has metadata %s but %s has %s: md keeps one format per array (nothing was written)",
                      o->paths[i], md_format_name(sb[i].format), o->paths[0], md_format_name(sb[0].format));
            return -EINVAL;
        }
        /* a grow --size cut off between two superblock writes leaves members
         * one event apart with two sizes: the newest's counts (md's too) */
        struct md_sb resized = sb[i];
        resized.size = sb[base].size;
        int size_step = sb[i].events + 1 == sb[base].events || sb[base].events + 1 == sb[i].events;
        if (!same_geometry(&sb[i], &sb[base]) && !(size_step && same_geometry(&resized, &sb[base])) &&
            !(size_step && takeover_step(&sb[i], &sb[base])) && !stale_faulty(o, i)) {
            int reshape = size_step && ((sb[i].feature_map | sb[base].feature_map) & MD_FEATURE_RESHAPE_ACTIVE);
            uraid_why(o->why, o->whylen,
                      "member %s disagrees with %s about the array's level, layout, chunk, size or members%s",
                      o->paths[i], o->paths[base],
                      reshape ? " (a reshape's first or last superblock writes were cut off: run the same "
                                "'uraid grow' again, which carries it on)" : "");
            return -EINVAL;
        }
        for (int j = 0; j < i; j++)
            if (sb[i].dev_number == sb[j].dev_number && memcmp(sb[i].device_uuid, sb[j].device_uuid, 16) &&
                sb[i].events != sb[j].events) {
                /* two devices: a member that failed and was removed, its number given to the spare that
                 * replaced it; md's assembly leaves the older out as not fresh, and so does this */
                o->shadowed[sb[i].events < sb[j].events ? i : j] = 1;
            } else if (sb[i].dev_number == sb[j].dev_number) {
                uint16_t role = sb[i].dev_roles[sb[i].dev_number]; /* dev_number < max_dev: md_sb_decode */
                uraid_why(o->why, o->whylen,
                          "members %s and %s both claim slot %d (device number %u): one is a copy of the other; "
                          "give only one",
                          o->paths[j], o->paths[i], role <= MD_ROLE_MAX_ACTIVE ? (int)role : -1, sb[i].dev_number);
                return -EINVAL;
            }
        if (sb[i].events > sb[o->ref].events)
            o->ref = i;
    }
    return 0;
}

static int set_geometry(struct uraid_array *a, struct open_ctx *o)
{
    const struct md_sb *R = &o->sb[o->ref];
    a->sb = *R;
    a->geom.level = R->level;
    a->geom.layout = (int)R->layout;
    a->geom.raid_disks = (int)R->raid_disks;
    a->geom.chunk_sectors = R->chunksize;
    /* mid-reshape the array is its new geometry (reshape_io.h); the old one
     * sits beside it. md keeps chunksize and layout the old ones until the end */
    if ((R->feature_map & MD_FEATURE_RESHAPE_ACTIVE) && R->level >= 4 && R->level <= 6 &&
        R->new_level == (uint32_t)R->level && R->new_chunk) {
        a->geom.layout = (int)R->new_layout;
        a->geom.chunk_sectors = R->new_chunk;
    }
    char gwhy[160];
    int rc;
    if (layout_check(&a->geom, gwhy, sizeof gwhy)) {
        uraid_why(o->why, o->whylen, "member %s: %s", o->paths[o->ref], gwhy);
        return -EINVAL;
    }
    a->k = layout_data_disks(&a->geom);
    a->nparity = a->geom.level == 1 ? a->geom.raid_disks - 1 : layout_parity_count(&a->geom);
    if (a->geom.level == 10 && (rc = array_open_raid10(a, o->sb[o->ref].size, o->paths[o->ref], o->why, o->whylen)))
        return rc;
    uint64_t smallest_data = UINT64_MAX;
    for (int i = 0; i < o->n; i++)
        if (o->sb[i].data_size < smallest_data)
            smallest_data = o->sb[i].data_size;
    a->member_sectors = array_member_sectors(R, smallest_data + R->data_offset);
    if (a->geom.level == 1)
        a->size_sectors = R->size;
    else if (a->r10)
        a->size_sectors = a->r10->array_sectors;
    else if (a->geom.level == LAYOUT_LEVEL_LINEAR)
        a->size_sectors = 0; /* open_linear, once the members are placed */
    else
        a->size_sectors = a->member_sectors / a->geom.chunk_sectors * a->geom.chunk_sectors * (uint64_t)a->k;
    a->readonly = o->p->readonly;
    for (int s = 0; s < array_nslots(a); s++)
        a->slot[s].state = URAID_MEMBER_MISSING;
    return 0;
}

/* A role md has no use for: past the slots but not spare or faulty (a
 * journal role without the journal feature counts: md ignores it too). */
static int role_unusable(uint16_t role, int raid_disks)
{
    return role >= (uint16_t)raid_disks && role != MD_ROLE_SPARE && role != MD_ROLE_FAULTY;
}

/* Where member i goes (*out): a raid slot by the reference's dev_roles, or
 * the extra list (stale, faulty, spare); NULL when md would ignore it. */
static int member_place(struct uraid_array *a, struct open_ctx *o, int i, struct array_slot **out)
{
    *out = NULL;
    const struct md_sb *sb = &o->sb[i], *R = &o->sb[o->ref];
    uint16_t role = sb->dev_number < R->max_dev ? R->dev_roles[sb->dev_number] : MD_ROLE_SPARE;
    if (role_unusable(role, array_nslots(a))) {
        uraid_log(URAID_LOG_WARN,
                  "member %s: its role %u is no slot of this %d-member array and not a spare: ignored, as md "
                  "does (add it again to use it)",
                  o->paths[i], role, a->geom.raid_disks);
        return 0;
    }
    int stale = sb->events + 1 < R->events || o->shadowed[i];
    if (stale || role == MD_ROLE_FAULTY || role == MD_ROLE_SPARE) {
        struct array_slot *sl = &a->extra[a->nextra++];
        sl->state = stale ? URAID_MEMBER_STALE : role == MD_ROLE_FAULTY ? URAID_MEMBER_FAULTY : URAID_MEMBER_SPARE;
        if (stale)
            uraid_log(URAID_LOG_WARN,
                      "member %s is stale (events %llu, the array is at %llu): left out; rebuild it to reuse it",
                      o->paths[i], (unsigned long long)sb->events, (unsigned long long)R->events);
        *out = sl;
        return 0;
    }
    struct array_slot *sl = &a->slot[role];
    if (sl->dev) {
        uraid_why(o->why, o->whylen, "members %s and %s both claim slot %u", sl->dev->path, o->paths[i], role);
        return -EINVAL;
    }
    /* a member still being rebuilt is valid below its checkpoint only */
    if (sb->feature_map & MD_FEATURE_RECOVERY_OFFSET) {
        sl->state = URAID_MEMBER_REBUILDING;
        sl->recovered = sb->recovery_offset;
    } else {
        sl->state = URAID_MEMBER_IN_SYNC;
    }
    *out = sl;
    return 0;
}

static int place_members(struct uraid_array *a, struct open_ctx *o)
{
    for (int i = 0; i < o->n; i++) {
        struct array_slot *sl;
        int rc = member_place(a, o, i, &sl);
        if (rc)
            return rc;
        if (!sl)
            continue; /* ignored: closed with the context */
        sl->sb = o->sb[i];
        sl->data_offset = o->sb[i].data_offset;
        sl->dev = o->dev[i];
        sl->fault = o->fault[i];
        o->dev[i] = NULL;
        /* RAID-0 members may differ: each needs its own data area (md's check) */
        uint64_t need = sl->data_offset + (a->geom.level <= 0 ? sl->sb.data_size : a->member_sectors);
        if ((sl->state == URAID_MEMBER_IN_SYNC || sl->state == URAID_MEMBER_REBUILDING) &&
            sl->dev->size / SECTOR < need) {
            uraid_why(o->why, o->whylen, "member %s is smaller than the array needs (%llu sectors, needs %llu)",
                      sl->dev->path, (unsigned long long)(sl->dev->size / SECTOR), (unsigned long long)need);
            return -EINVAL;
        }
    }
    return 0;
}

static int load_logs(struct uraid_array *a, struct open_ctx *o)
{
    for (int s = 0; s < array_nslots(a); s++) {
        int rc = a->slot[s].dev ? load_badblocks(&a->slot[s], o->why, o->whylen) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

/* Enough members in sync, and not dirty + degraded unless forced. */
static int check_startable(struct uraid_array *a, struct open_ctx *o)
{
    /* in mid-reshape, a member recovering with the position (RAID-5 -> 6's
     * Q, a RAID-0 grow's first new member) is missing only in the old
     * geometry: array_reshape_open counts each geometry */
    int reshaping = !!(a->sb.feature_map & MD_FEATURE_RESHAPE_ACTIVE), counted = 0;
    for (int s = 0; s < array_nslots(a); s++) {
        o->missing += a->slot[s].state != URAID_MEMBER_IN_SYNC;
        counted += a->slot[s].state != URAID_MEMBER_IN_SYNC &&
                   !(reshaping && a->slot[s].dev && a->slot[s].state == URAID_MEMBER_REBUILDING);
    }
    describe_missing(a, o->gone, sizeof o->gone);
    if (a->r10 && !array_survives_without(a, -1)) {
        uraid_why(o->why, o->whylen,
                  "cannot start the RAID-10 array: members missing or out of date (%s) held every copy of some "
                  "chunks (md's RAID-10 needs one copy of each); add back the members listed",
                  o->gone);
        return -ENODEV;
    }
    if (counted > a->nparity) {
        uraid_why(o->why, o->whylen,
                  "cannot start the %s array: %d of %d members missing or out of date (%s), it survives %d",
                  level_name(a->geom.level), o->missing, a->geom.raid_disks, o->gone, a->nparity);
        return -ENODEV;
    }
    int rc = a->geom.level == 0 ? open_zones(a, o->paths[o->ref], o->why, o->whylen)
             : a->geom.level == LAYOUT_LEVEL_LINEAR ? array_open_linear(a, o->paths[o->ref], o->why, o->whylen)
                                                    : 0;
    if (rc)
        return rc;
    a->dirty = a->sb.resync_offset != MD_RESYNC_CLEAN;
    a->opened_dirty = a->dirty;
    /* md resumes a resync at its checkpoint; while this process may write,
     * a superblock it writes says "from the start" (md writes 0 while active) */
    if (a->dirty) {
        a->resync_from = a->sb.resync_offset;
        a->sb.resync_offset = 0;
    }
    if (a->geom.chunk_sectors) {
        a->nstripes = a->member_sectors / a->geom.chunk_sectors;
        size_t words = (size_t)(a->nstripes / 64 + 1);
        a->degraded_written = calloc(words, sizeof *a->degraded_written);
        if (!a->degraded_written) {
            uraid_why(o->why, o->whylen, "out of memory");
            return -ENOMEM;
        }
        /* the members left out missed writes we cannot know of */
        if (o->missing)
            memset(a->degraded_written, 0xff, words * sizeof *a->degraded_written);
    }
    /* with a PPL the log decides (ppl_start): md starts such an array */
    int ppl_covers = md_sb_has_ppl(&a->sb) && !a->readonly;
    if (a->dirty && o->missing > q_recovering(a) && a->nparity && !o->p->force && !ppl_covers) {
        uraid_why(o->why, o->whylen,
                  "the array was not shut down cleanly and is degraded (%s): parity may be stale, so data could "
                  "be rebuilt wrong; use --force to open it anyway",
                  o->gone);
        return -EUCLEAN;
    }
    return 0;
}

static int start_runtime(struct uraid_array *a, struct open_ctx *o)
{
    int rc = wib_open(a, o->p, o->why, o->whylen);
    if (rc)
        return rc;
    if (o->p->event_program && *o->p->event_program && !a->readonly &&
        !(a->event_program = strdup(o->p->event_program))) {
        uraid_why(o->why, o->whylen, "out of memory");
        return -ENOMEM;
    }
    if (o->missing) {
        char detail[600];
        snprintf(detail, sizeof detail, "%d of %d members missing or out of date (%s)", o->missing,
                 a->geom.raid_disks, o->gone);
        array_event(a, "DegradedArray", NULL, detail);
    }
    return 0;
}

static void open_ctx_free(struct open_ctx *o)
{
    if (o->dev)
        for (int i = 0; i < o->n; i++)
            member_close(o->dev[i]);
    free(o->dev);
    free(o->fault);
    free(o->sb);
}

/* One spec for every member given: what a member added later is opened with. */
static int keep_added_sim(struct uraid_array *a, const struct open_ctx *o)
{
    const char *const *sim = o->p->member_sim;
    for (int i = 0; sim && i < o->n; i++)
        if (!sim[i] || strcmp(sim[i], sim[0]))
            return 0;
    if (sim && !(a->added_sim = strdup(sim[0])))
        return -ENOMEM;
    return 0;
}

int uraid_open(const char *const *paths, int n, const struct uraid_open_params *p, struct uraid_array **out,
               char *why, size_t whylen)
{
    static const struct uraid_open_params defaults;
    uraid_why(why, whylen, "%s", "");
    if (!paths || n < 1 || n > URAID_MAX_MEMBERS || !out) {
        uraid_why(why, whylen, "no members given");
        return -EINVAL;
    }
    struct open_ctx o = {
        .paths = paths, .n = n, .p = p ? p : &defaults,
        .why = why, .whylen = whylen,
        .dev = calloc((size_t)n, sizeof *o.dev), .fault = calloc((size_t)n, sizeof *o.fault),
        .sb = calloc((size_t)n, sizeof *o.sb),
    };
    struct uraid_array *a = calloc(1, sizeof *a);
    int rc = 0;
    if (a)
        a->rmw_level = URAID_RMW_FEWEST_READS; /* md's default */
    if (!o.dev || !o.fault || !o.sb || !a) {
        rc = -ENOMEM;
        uraid_why(o.why, o.whylen, "out of memory");
    } else if ((rc = array_runtime_init(a, o.p)) != 0) {
        uraid_why(o.why, o.whylen, "cannot start the I/O engine: %s", uraid_strerror(rc));
    }
    if (rc == 0)
        rc = array_parse_metadata(o.p->metadata, &o.format, o.why, o.whylen);
    if (rc == 0 && (rc = keep_added_sim(a, &o)) != 0)
        uraid_why(o.why, o.whylen, "out of memory");
    if (rc == 0)
        rc = read_superblocks(&o);
    if (rc == 0)
        rc = pick_reference(&o);
    if (rc == 0)
        rc = set_geometry(a, &o);
    if (rc == 0)
        rc = place_members(a, &o);
    if (rc == 0)
        rc = load_logs(a, &o);
    if (rc == 0)
        rc = check_startable(a, &o);
    if (rc == 0)
        rc = start_runtime(a, &o);
    if (rc == 0)
        rc = array_ppl_start(a, o.missing, o.gone, o.p->force, o.why, o.whylen);
    if (rc == 0)
        rc = array_reshape_open(a, o.missing, o.why, o.whylen);
    open_ctx_free(&o);
    if (rc) {
        free_array(a);
        return rc;
    }
    *out = a;
    array_maybe_auto_rebuild(a);
    return 0;
}

int uraid_close(struct uraid_array *a)
{
    if (!a)
        return 0;
    array_monitor_stop(a);
    if (a->job.thread_started)
        uraid_job_cancel(a); /* a rebuild saves its checkpoint */
    int rc = uraid_flush(a);
    /* md's stop clears every bit it can before the clean superblocks go out */
    if (rc == 0 && !a->readonly)
        rc = wib_clear_idle(a);
    /* An array that was found dirty stays dirty until a resync has made its
     * parity trustworthy again: closing must not hide an unclean shutdown. */
    int mark_clean = a->dirty && !a->opened_dirty;
    /* Corrected read errors are counted in each member's superblock
     * (cnt_corrected_read, as md does); an open that only read never
     * marked the array dirty, so without this the counts of its
     * corrections would be lost at close. */
    /* every write is flushed: the log covers nothing any more */
    if (rc == 0 && !a->readonly && a->ppl && mark_clean)
        rc = ppl_clear_all(a);
    if (rc == 0 && !a->readonly && (mark_clean || a->corrected_unsaved)) {
        if (mark_clean)
            a->sb.resync_offset = MD_RESYNC_CLEAN;
        rc = array_write_superblocks(a);
    }
    free_array(a);
    return rc;
}
