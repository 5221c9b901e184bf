/* Consistency policies: their names; mdadm --grow --consistency-policy
 * on an array that is not running (uraid_set_consistency_policy: every
 * member is read and every check passes before the first write); and the
 * PPL's part of opening an array (array_ppl_start). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array/array.h"
#include "log.h"
#include "meta/bitmap.h"
#include "meta/ppl.h"
#include "stripe/ppl.h"

static const char *const policy_names[] = {"default", "resync", "bitmap", "ppl", "journal"};

const char *uraid_policy_name(int policy)
{
    return policy >= 0 && policy <= URAID_POLICY_JOURNAL ? policy_names[policy] : "unknown";
}

int uraid_policy_parse(const char *name)
{
    for (int i = URAID_POLICY_RESYNC; name && i <= URAID_POLICY_JOURNAL; i++)
        if (!strcmp(name, policy_names[i]))
            return i;
    return -1;
}

static int sb_policy(const struct md_sb *sb)
{
    return md_sb_has_ppl(sb) ? URAID_POLICY_PPL
           : sb->feature_map & MD_FEATURE_BITMAP_OFFSET ? URAID_POLICY_BITMAP
                                                        : URAID_POLICY_RESYNC;
}

struct grow {
    int n;
    struct member *dev[URAID_MAX_MEMBERS];
    struct md_sb *sb;           /* n superblocks, then their new versions */
    struct md_bitmap_sb bm;     /* to bitmap: the header every member gets */
    char *why;
    size_t whylen;
};

#define refuse(g, err, ...) (uraid_why((g)->why, (g)->whylen, __VA_ARGS__), (err))

/* Every member opened and its superblock read: one array, clean, whole. */
static int read_members(struct grow *g, const char *const *paths)
{
    int seen[URAID_MAX_MEMBERS] = {0}, active = 0;
    for (int i = 0; i < g->n; i++) {
        char mwhy[300];
        int rc = member_open_why(paths[i], 0, &g->dev[i], mwhy, sizeof mwhy);
        if (rc)
            return refuse(g, rc, "member %s: cannot open: %s", paths[i], mwhy);
        if ((rc = array_read_superblock(g->dev[i], &g->sb[i], g->why, g->whylen)) != 0)
            return rc;
        const struct md_sb *sb = &g->sb[i], *s0 = &g->sb[0];
        if (memcmp(sb->set_uuid, s0->set_uuid, 16) || sb->level != s0->level || sb->raid_disks != s0->raid_disks)
            return refuse(g, -EINVAL, "member %s belongs to another array than %s", paths[i], paths[0]);
        if (sb->resync_offset != MD_RESYNC_CLEAN)
            return refuse(g, -EBUSY,
                          "member %s: the array is in use or was not shut down cleanly; open it with uraid (which "
                          "replays its log or resyncs it) and stop it cleanly first", paths[i]);
        uint16_t role = sb->dev_number < sb->max_dev ? sb->dev_roles[sb->dev_number] : MD_ROLE_SPARE;
        if (role < sb->raid_disks && !seen[role]++)
            active++;
    }
    if (active != (int)g->sb[0].raid_disks)
        return refuse(g, -ENODEV,
                      "all %u members are needed to change the policy (found %d): a member left out would keep "
                      "the old one", g->sb[0].raid_disks, active);
    return 0;
}

/* mdadm's room for a PPL on a v1.2 member (super1.c, update "ppl"): from
 * sb + 8 up to the bad-block log (or the data), at most 1 MiB. */
static int plan_ppl(struct grow *g, int i, struct md_sb *nsb)
{
    const struct md_sb *sb = &g->sb[i];
    int64_t end = sb->bblog_offset > 0 && sb->bblog_size ? sb->bblog_offset
                                                          : (int64_t)(sb->data_offset - sb->super_offset);
    int64_t space = end - 8, optimal = PPL_HEADER_SECTORS + (sb->chunksize > 256 ? sb->chunksize : 256);
    if (space < 16)
        return refuse(g, -ENOSPC, "member %s: not enough space to add a PPL (%lld sectors between the superblock "
                                  "and the %s; md needs 16)", g->dev[i]->path, (long long)(space > 0 ? space : 0),
                      end == sb->bblog_offset ? "bad-block log" : "data");
    space = space >= MD_PPL_SECTORS ? MD_PPL_SECTORS : space > optimal ? optimal : space;
    uint32_t need = sb->chunksize + PPL_HEADER_SECTORS;
    if (space < (int64_t)need)
        return refuse(g, -ENOSPC,
                      "member %s: %lld sectors for a PPL between the superblock and the %s; uraid logs a whole "
                      "chunk's partial parity at once, which for %u KiB chunks needs %u (an array created with "
                      "--consistency-policy=ppl has 1 MiB)",
                      g->dev[i]->path, (long long)(space > 0 ? space : 0),
                      end == sb->bblog_offset ? "bad-block log" : "data", sb->chunksize / 2, need);
    /* RAID-6: uraid's own bit, which md refuses (docs/FORMAT.md 5b) */
    nsb->feature_map |= sb->level == 6 ? MD_FEATURE_PPL_Q : MD_FEATURE_PPL;
    nsb->feature_map &= ~MD_FEATURE_MULTIPLE_PPLS;
    md_sb_set_ppl(nsb, 8, (uint16_t)space);
    char why[300];
    int rc = md_sb_check_ppl(nsb, why, sizeof why);
    return rc ? refuse(g, rc, "member %s: %s", g->dev[i]->path, why) : ppl_supported(nsb, g->why, g->whylen);
}

/* mdadm's internal bitmap (--grow --bitmap=internal) where the PPL was:
 * sb + 8 up to the bad-block log or the data, the chunk as mdadm chooses
 * it for that room. Every member gets the same header; the array is clean,
 * so no bit is set. */
static int plan_bitmap(struct grow *g, int i, struct md_sb *nsb)
{
    const struct md_sb *sb = &g->sb[i];
    int64_t end = sb->bblog_offset > 8 && sb->bblog_size ? sb->bblog_offset
                                                         : (int64_t)(sb->data_offset - sb->super_offset);
    int64_t room = end - 8;
    uint32_t chunk;
    char why[200];
    int rc = md_bitmap_choose_chunk(sb->size, room > 0 ? (uint32_t)room : 0, 0, &chunk, why, sizeof why);
    if (rc)
        return refuse(g, rc, "member %s: no room for a write-intent bitmap (%lld sectors after the superblock): %s",
                      g->dev[i]->path, (long long)(room > 0 ? room : 0), why);
    nsb->feature_map |= MD_FEATURE_BITMAP_OFFSET;
    nsb->bitmap_offset = 8;
    if (i == 0) {
        uint8_t uuid[16];
        md_sb_bitmap_uuid(nsb, uuid);
        md_bitmap_init(&g->bm, uuid, nsb->events, sb->size, chunk);
    } else if (chunk != g->bm.chunksize) {
        return refuse(g, -EINVAL, "member %s: its room gives a bitmap chunk of %u bytes, the first member's %u",
                      g->dev[i]->path, chunk, g->bm.chunksize);
    }
    return 0;
}

/* The new superblocks, in memory. */
static int plan_all(struct grow *g, int policy)
{
    const struct md_sb *s0 = &g->sb[0];
    int cur = sb_policy(s0);
    if (policy == URAID_POLICY_JOURNAL)
        return refuse(g, -EOPNOTSUPP, "consistency policy journal is not supported yet (it needs a write journal "
                                      "device)");
    /* from a PPL only: its area is the bitmap's room (mdadm: --grow --bitmap=internal) */
    if (policy == URAID_POLICY_BITMAP && cur != URAID_POLICY_PPL)
        return refuse(g, -EOPNOTSUPP, "mdadm changes to bitmap with --grow --bitmap=internal, not with "
                                      "--consistency-policy; uraid adds a bitmap only in place of a PPL");
    if (policy != URAID_POLICY_RESYNC && policy != URAID_POLICY_PPL && policy != URAID_POLICY_BITMAP)
        return refuse(g, -EINVAL, "unknown consistency policy %d", policy);
    if (policy == URAID_POLICY_PPL && cur == URAID_POLICY_BITMAP)
        return refuse(g, -EINVAL, "the array keeps a write-intent bitmap: a PPL and a bitmap exclude each other "
                                  "(change it to resync first, as mdadm --grow --bitmap=none does)");
    if (policy == URAID_POLICY_PPL && s0->level != 5 && s0->level != 6)
        return refuse(g, -EINVAL, "consistency policy ppl needs RAID-5 or RAID-6: md keeps a partial parity log for "
                                  "RAID-5 only, uraid also for RAID-6 (this is RAID-%d)", s0->level);
    if (policy == URAID_POLICY_PPL && s0->format != MD_FMT_1_2)
        return refuse(g, -EOPNOTSUPP, "consistency policy ppl needs metadata 1.2 here (this array has %s): uraid "
                                      "keeps md's PPL area after a 1.2 superblock only", md_format_name(s0->format));
    uint64_t events = 0;
    for (int i = 0; i < g->n; i++)
        events = g->sb[i].events > events ? g->sb[i].events : events;
    for (int i = 0; i < g->n; i++) {
        struct md_sb *nsb = &g->sb[g->n + i];
        *nsb = g->sb[i];
        /* mdadm's no-ppl and no-bitmap clear the feature bits only */
        nsb->feature_map &= ~(MD_FEATURE_PPL | MD_FEATURE_MULTIPLE_PPLS | MD_FEATURE_PPL_Q | MD_FEATURE_BITMAP_OFFSET);
        nsb->events = events + 1;
        nsb->utime = (uint64_t)time(NULL);
        int rc = policy == URAID_POLICY_PPL      ? plan_ppl(g, i, nsb)
                 : policy == URAID_POLICY_BITMAP ? plan_bitmap(g, i, nsb)
                                                 : 0;
        if (rc)
            return rc;
    }
    return 0;
}

/* Member i's old PPL area zeroed (leaving ppl: no stale log is left for
 * a later switch back to find), the new log emptied or the new bitmap
 * written: space nothing reads until the superblocks say so. */
static int write_areas(struct grow *g, int i)
{
    const struct md_sb *osb = &g->sb[i], *nsb = &g->sb[g->n + i];
    int rc = 0;
    if (md_sb_has_ppl(osb) && !md_sb_has_ppl(nsb))
        rc = member_zero(g->dev[i], (size_t)md_sb_ppl_size(osb) * SECTOR, (uint64_t)md_sb_ppl_sector(osb) * SECTOR);
    if (rc == 0 && md_sb_has_ppl(nsb)) {
        uint8_t hdr[PPL_HEADER_BYTES] __attribute__((aligned(4096)));
        struct ppl_header h = {.signature = ppl_signature(nsb->set_uuid)};
        ppl_header_encode(&h, hdr);
        uint64_t at = (uint64_t)md_sb_ppl_sector(nsb) * SECTOR;
        rc = member_zero(g->dev[i], (size_t)md_sb_ppl_size(nsb) * SECTOR, at);
        if (rc == 0)
            rc = member_write(g->dev[i], hdr, sizeof hdr, at);
    }
    if (rc == 0 && (nsb->feature_map & MD_FEATURE_BITMAP_OFFSET) && !(osb->feature_map & MD_FEATURE_BITMAP_OFFSET)) {
        uint64_t bytes = md_bitmap_area_bytes(md_bitmap_bits(&g->bm));
        uint8_t hdr[MD_BITMAP_HEADER_BYTES];
        uint64_t at = (nsb->super_offset + (uint64_t)(int64_t)nsb->bitmap_offset) * SECTOR;
        md_bitmap_encode(&g->bm, hdr);
        rc = member_zero(g->dev[i], (size_t)bytes, at);
        if (rc == 0)
            rc = member_write(g->dev[i], hdr, sizeof hdr, at);
    }
    return rc;
}

/* The areas first, then the superblocks. */
static int write_all(struct grow *g)
{
    for (int i = 0; i < g->n; i++) {
        const struct md_sb *nsb = &g->sb[g->n + i];
        int rc = write_areas(g, i);
        if (rc == 0)
            rc = array_write_superblock(g->dev[i], nsb);
        if (rc == 0)
            rc = member_flush(g->dev[i]);
        if (rc)
            return refuse(g, rc, "member %s: cannot write its superblock: %s (members before it have the new policy)",
                          g->dev[i]->path, uraid_strerror(rc));
    }
    return 0;
}

int uraid_set_consistency_policy(const char *const *paths, int n, int policy, char *why, size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    if (!paths || n < 1 || n > URAID_MAX_MEMBERS) {
        uraid_why(why, whylen, "no members given");
        return -EINVAL;
    }
    struct grow g = {.n = n, .why = why, .whylen = whylen, .sb = calloc(2 * (size_t)n, sizeof(struct md_sb))};
    int rc = g.sb ? read_members(&g, paths) : -ENOMEM;
    if (rc == 0 && sb_policy(&g.sb[0]) == policy)
        rc = refuse(&g, -EALREADY, "the array's consistency policy is already %s", uraid_policy_name(policy));
    if (rc == 0)
        rc = plan_all(&g, policy);
    if (rc == 0)
        rc = write_all(&g);
    for (int i = 0; i < n; i++)
        member_close(g.dev[i]);
    free(g.sb);
    return rc;
}

/* A PPL array: its log opened, and when the array was not shut down
 * cleanly, replayed as md's ppl_recover does. Parity then agrees with the
 * data in every stripe an interrupted write touched, so the array is
 * recorded clean (no resync) when every header and entry was sound; a
 * damaged log leaves it dirty, and then a degraded array needs --force as
 * without a log. Read-only opens neither write nor replay. */
int array_ppl_start(struct uraid_array *a, int missing, const char *gone, int force, char *why, size_t whylen)
{
    if (!md_sb_has_ppl(&a->sb) || a->readonly)
        return 0;
    int rc = ppl_open(a, why, whylen);
    if (rc || !a->dirty)
        return rc;
    int mismatch = 0, recovered = 0;
    if ((rc = ppl_replay(a, 0, &mismatch, &recovered)) != 0) {
        uraid_why(why, whylen, "cannot read the partial parity log: %s", uraid_strerror(rc));
        return rc;
    }
    if (mismatch && missing && !force) {
        uraid_why(why, whylen,
                  "the array was not shut down cleanly and is degraded (%s), and its partial parity log is damaged "
                  "(%d bad headers or entries): parity may be stale, so data could be rebuilt wrong; use --force "
                  "to open it anyway", gone, mismatch);
        return -EUCLEAN;
    }
    if ((rc = ppl_replay(a, 1, &mismatch, &recovered)) != 0) {
        uraid_why(why, whylen, "cannot replay the partial parity log: %s", uraid_strerror(rc));
        return rc;
    }
    uraid_log(URAID_LOG_INFO, "replayed %d partial parity log entries%s", recovered,
              mismatch ? "; some were damaged, so the array stays dirty" : "");
    /* md's ppl_init_log records the array clean only when it was dirty from
     * the start (recovery_cp 0): a checkpoint (a grown size's old end) keeps
     * its resync, since the log covers only the writes in flight */
    if (mismatch || a->resync_from)
        return 0;
    if ((rc = ppl_clear_all(a)) != 0) {
        uraid_why(why, whylen, "cannot empty the partial parity log after its replay: %s", uraid_strerror(rc));
        return rc;
    }
    pthread_mutex_lock(&a->meta_lock);
    a->sb.resync_offset = MD_RESYNC_CLEAN;
    a->dirty = a->opened_dirty = 0;
    pthread_mutex_unlock(&a->meta_lock);
    if ((rc = array_write_superblocks(a)) != 0)
        uraid_why(why, whylen, "cannot record the array clean after the log's replay: %s", uraid_strerror(rc));
    return rc;
}
