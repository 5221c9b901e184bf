/* md RAID levels and layouts: pure address arithmetic, written from the
 * tables in docs (md-format.md section 2), not from md's or mdadm's code.
 *
 * Every layout is described by three O(1) rules for stripe s:
 *   place_pq():     which members hold P and Q;
 *   data_to_disk(): which member holds data index d;
 *   disk_to_data(): the inverse, so layout_unmap() needs no O(n) search.
 * The Q slot of a data member is also O(1) (q_slot_of_disk()). The tests
 * compare all of them with an independent, table-shaped transcription and
 * with arrays written by the real md. */
#include "layout.h"

#include "raid10.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include "uraid_parity.h"

/* RAID-4/5 feed k = n-1 blocks, md RAID-6 layouts k = n-2, DDF n. */
#define MAX_SLOTS 253
_Static_assert(MAX_SLOTS <= URAID_PARITY_MAX_K, "parity engine takes every slot count we allow");
_Static_assert(LAYOUT_MAX_DISKS <= INT16_MAX, "stripe_map uses int16_t member numbers");

static int is_ddf(const struct layout_geom *g)
{
    return g->level == 6 && g->layout >= LAYOUT_DDF_ZERO_RESTART &&
           g->layout <= LAYOUT_DDF_N_CONTINUE;
}

int layout_valid(int level, int layout)
{
    switch (level) {
    case 4:
        return 1; /* md ignores the field; mdadm writes 0 */
    case 10:
        return raid10_layout_check(LAYOUT_MAX_DISKS, layout, NULL, 0) == 0;
    case 5:
        return layout >= 0 && layout <= 5;
    case 6:
        return (layout >= 0 && layout <= 5) || (layout >= 8 && layout <= 10) ||
               (layout >= 16 && layout <= 20);
    default:
        return 0;
    }
}

static int fail(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t whylen, const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

int layout_check(const struct layout_geom *g, char *why, size_t whylen)
{
    if (!g)
        return fail(why, whylen, "no geometry");
    if (why && whylen)
        why[0] = '\0';
    int n = g->raid_disks;
    /* Minimums are md's and mdadm's: RAID-0 and RAID-1 run on one member
     * (mdadm wants --force), RAID-4/5 on two (RAID-5 with n = 2 is a mirror
     * in disguise, which mdadm allows), RAID-6 on four. */
    int min, max;
    switch (g->level) {
    case LAYOUT_LEVEL_LINEAR:
        /* no chunks: each member's whole data area in turn (linear.h) */
        if (n < 1 || n > LAYOUT_MAX_DISKS)
            return fail(why, whylen, "linear needs 1 to %d members, raid_disks is %d", LAYOUT_MAX_DISKS, n);
        return 0;
    case 10:
        if (n < 2 || n > LAYOUT_MAX_DISKS)
            return fail(why, whylen, "RAID-10 needs 2 to %d members, raid_disks is %d", LAYOUT_MAX_DISKS, n);
        if (raid10_layout_check(n, g->layout, why, whylen))
            return -EINVAL;
        min = 2;
        max = LAYOUT_MAX_DISKS;
        break;
    case 0:
    case 1:
        min = 1;
        max = LAYOUT_MAX_DISKS;
        break;
    case 4:
    case 5:
        min = 2;
        max = MAX_SLOTS + 1;
        break;
    case 6:
        min = 4;
        /* DDF feeds all n members to the parity engine. */
        max = (g->layout >= 8 && g->layout <= 10) ? MAX_SLOTS : MAX_SLOTS + 2;
        break;
    default:
        return fail(why, whylen, "unsupported RAID level %d (linear, 0, 1, 4, 5, 6 or 10)", g->level);
    }
    if (n < min)
        return fail(why, whylen, "RAID-%d needs at least %d members, raid_disks is %d", g->level,
                    min, n);
    if (n > max)
        return fail(why, whylen, "RAID-%d with this layout allows at most %d members, raid_disks is %d",
                    g->level, max, n);
    if ((g->level == 5 || g->level == 6) && !layout_valid(g->level, g->layout))
        return fail(why, whylen, "layout %d does not exist for RAID-%d", g->layout, g->level);
    if (g->level != 1) {
        uint32_t c = g->chunk_sectors;
        /* md's raid456 needs whole pages per chunk; power of two keeps the
         * address split a shift and a mask, as in md and mdadm. */
        if (c < LAYOUT_MIN_CHUNK_SECTORS)
            return fail(why, whylen, "chunk of %u sectors is below the 4 KiB minimum", c);
        if (c & (c - 1))
            return fail(why, whylen, "chunk of %u sectors is not a power of two", c);
    }
    return 0;
}

int layout_data_disks(const struct layout_geom *g)
{
    int rc = layout_check(g, NULL, 0);
    if (rc)
        return rc;
    switch (g->level) {
    case LAYOUT_LEVEL_LINEAR:
    case 0:
        return g->raid_disks;
    case 1:
    case 10: /* a RAID-10 "stripe" is one chunk with its copies (raid10.h) */
        return 1;
    case 6:
        return g->raid_disks - 2;
    default:
        return g->raid_disks - 1;
    }
}

int layout_parity_count(const struct layout_geom *g)
{
    int rc = layout_check(g, NULL, 0);
    if (rc)
        return rc;
    if (g->level == 10)
        return (g->layout & 0xff) * (g->layout >> 8 & 0xff) - 1; /* any copies - 1 members may go */
    return g->level == 6 ? 2 : (g->level <= 1) ? 0 : 1;
}

int layout_array_sectors(const struct layout_geom *g, uint64_t member_sectors,
                         uint64_t *array_sectors)
{
    if (g && (g->level == 10 || g->level == LAYOUT_LEVEL_LINEAR))
        return -EINVAL; /* raid10.h and linear.h map these */
    int k = layout_data_disks(g);
    if (k < 0)
        return k;
    if (!array_sectors)
        return -EINVAL;
    if (g->level == 1) {
        *array_sectors = member_sectors;
        return 0;
    }
    uint64_t used = member_sectors & ~(uint64_t)(g->chunk_sectors - 1);
    if (__builtin_mul_overflow(used, (uint64_t)k, array_sectors))
        return -EOVERFLOW;
    return 0;
}

/* ---- the per-layout rules (levels 4, 5, 6) ----------------------------- */

/* The layout number the rules switch on: RAID-4 is RAID-5 parity-last. */
static int alg_of(const struct layout_geom *g)
{
    return g->level == 4 ? LAYOUT_PARITY_LAST : g->layout;
}

/* P and Q members of stripe s (q = -1 for RAID-4/5). "Left" layouts move P
 * down from the last member, "right" ones up from member 0; the -6 layouts
 * rotate P over the first n-1 members only, Q sitting on the last. */
static void place_pq(const struct layout_geom *g, uint64_t s, int *p, int *q)
{
    int n = g->raid_disks;
    int sn = (int)(s % (uint64_t)n);
    int sn1 = (int)(s % (uint64_t)(n - 1));
    int alg = alg_of(g);
    if (g->level != 6) {
        *q = -1;
        switch (alg) {
        case LAYOUT_LEFT_ASYMMETRIC:
        case LAYOUT_LEFT_SYMMETRIC:
            *p = n - 1 - sn;
            break;
        case LAYOUT_RIGHT_ASYMMETRIC:
        case LAYOUT_RIGHT_SYMMETRIC:
            *p = sn;
            break;
        case LAYOUT_PARITY_FIRST:
            *p = 0;
            break;
        default: /* parity-last, RAID-4 */
            *p = n - 1;
            break;
        }
        return;
    }
    switch (alg) {
    case LAYOUT_LEFT_ASYMMETRIC:
    case LAYOUT_LEFT_SYMMETRIC:
    case LAYOUT_DDF_N_CONTINUE:
        *p = n - 1 - sn;
        break;
    case LAYOUT_RIGHT_ASYMMETRIC:
    case LAYOUT_RIGHT_SYMMETRIC:
    case LAYOUT_DDF_ZERO_RESTART:
        *p = sn;
        break;
    case LAYOUT_DDF_N_RESTART:
        /* (s+1) mod n without overflowing at s = UINT64_MAX */
        *p = n - 1 - (sn + 1) % n;
        break;
    case LAYOUT_PARITY_FIRST:
        *p = 0;
        break;
    case LAYOUT_PARITY_LAST:
        *p = n - 2;
        break;
    case LAYOUT_LEFT_ASYMMETRIC_6:
    case LAYOUT_LEFT_SYMMETRIC_6:
        *p = n - 2 - sn1;
        break;
    case LAYOUT_RIGHT_ASYMMETRIC_6:
    case LAYOUT_RIGHT_SYMMETRIC_6:
        *p = sn1;
        break;
    default: /* parity-first-6 */
        *p = 0;
        break;
    }
    switch (alg) {
    case LAYOUT_LEFT_ASYMMETRIC:
    case LAYOUT_RIGHT_ASYMMETRIC:
    case LAYOUT_DDF_ZERO_RESTART:
    case LAYOUT_DDF_N_RESTART:
        /* Q follows P, except that it restarts at member 0 instead of
         * wrapping the data round it. */
        *q = *p == n - 1 ? 0 : *p + 1;
        break;
    case LAYOUT_LEFT_SYMMETRIC:
    case LAYOUT_RIGHT_SYMMETRIC:
        *q = (*p + 1) % n;
        break;
    case LAYOUT_DDF_N_CONTINUE:
        *q = (*p + n - 1) % n; /* Q just before P */
        break;
    case LAYOUT_PARITY_FIRST:
        *q = 1;
        break;
    default: /* parity-last and every -6 layout */
        *q = n - 1;
        break;
    }
}

/* Member holding data index d (0 <= d < k). */
static int data_to_disk(const struct layout_geom *g, int p, int d)
{
    int n = g->raid_disks;
    int alg = alg_of(g);
    if (g->level != 6) {
        switch (alg) {
        case LAYOUT_LEFT_ASYMMETRIC:
        case LAYOUT_RIGHT_ASYMMETRIC:
            return d < p ? d : d + 1; /* data in member order, hopping over P */
        case LAYOUT_LEFT_SYMMETRIC:
        case LAYOUT_RIGHT_SYMMETRIC:
            return (p + 1 + d) % n; /* data starts after P and wraps */
        case LAYOUT_PARITY_FIRST:
            return d + 1;
        default:
            return d;
        }
    }
    switch (alg) {
    case LAYOUT_LEFT_ASYMMETRIC:
    case LAYOUT_RIGHT_ASYMMETRIC:
    case LAYOUT_DDF_ZERO_RESTART:
    case LAYOUT_DDF_N_RESTART:
        if (p == n - 1)
            return d + 1; /* Q took member 0 */
        return d < p ? d : d + 2;
    case LAYOUT_LEFT_SYMMETRIC:
    case LAYOUT_RIGHT_SYMMETRIC:
        return (p + 2 + d) % n;
    case LAYOUT_DDF_N_CONTINUE:
        return (p + 1 + d) % n;
    case LAYOUT_PARITY_FIRST:
        return d + 2;
    case LAYOUT_PARITY_LAST:
        return d;
    case LAYOUT_LEFT_ASYMMETRIC_6:
    case LAYOUT_RIGHT_ASYMMETRIC_6:
        return d < p ? d : d + 1;
    case LAYOUT_LEFT_SYMMETRIC_6:
    case LAYOUT_RIGHT_SYMMETRIC_6:
        return (p + 1 + d) % (n - 1);
    default: /* parity-first-6 */
        return d + 1;
    }
}

/* Data index on member `disk`, which is neither P nor Q. */
static int disk_to_data(const struct layout_geom *g, int p, int disk)
{
    int n = g->raid_disks;
    int alg = alg_of(g);
    if (g->level != 6) {
        switch (alg) {
        case LAYOUT_LEFT_ASYMMETRIC:
        case LAYOUT_RIGHT_ASYMMETRIC:
            return disk < p ? disk : disk - 1;
        case LAYOUT_LEFT_SYMMETRIC:
        case LAYOUT_RIGHT_SYMMETRIC:
            return (disk - p - 1 + n) % n;
        case LAYOUT_PARITY_FIRST:
            return disk - 1;
        default:
            return disk;
        }
    }
    switch (alg) {
    case LAYOUT_LEFT_ASYMMETRIC:
    case LAYOUT_RIGHT_ASYMMETRIC:
    case LAYOUT_DDF_ZERO_RESTART:
    case LAYOUT_DDF_N_RESTART:
        if (p == n - 1)
            return disk - 1;
        return disk < p ? disk : disk - 2;
    case LAYOUT_LEFT_SYMMETRIC:
    case LAYOUT_RIGHT_SYMMETRIC:
        return (disk - p - 2 + 2 * n) % n;
    case LAYOUT_DDF_N_CONTINUE:
        return (disk - p - 1 + n) % n;
    case LAYOUT_PARITY_FIRST:
        return disk - 2;
    case LAYOUT_PARITY_LAST:
        return disk;
    case LAYOUT_LEFT_ASYMMETRIC_6:
    case LAYOUT_RIGHT_ASYMMETRIC_6:
        return disk < p ? disk : disk - 1;
    case LAYOUT_LEFT_SYMMETRIC_6:
    case LAYOUT_RIGHT_SYMMETRIC_6:
        return (disk - p - 1 + (n - 1)) % (n - 1);
    default:
        return disk - 1;
    }
}

/* Q slot of data member `disk`. md numbers the data members in the order it
 * meets them walking up from Q+1 (wrapping), skipping P; so the slot is the
 * member's distance from Q+1, minus one if P lies in between. DDF uses the
 * member number itself. */
static int q_slot_of_disk(const struct layout_geom *g, int p, int q, int disk)
{
    if (is_ddf(g))
        return disk;
    int n = g->raid_disks;
    int off = (disk - q - 1 + 2 * n) % n;
    int offp = (p - q - 1 + 2 * n) % n;
    return off - (offp < off ? 1 : 0);
}

/* ---- public mapping ----------------------------------------------------- */

int layout_stripe(const struct layout_geom *g, uint64_t stripe, struct stripe_map *out)
{
    if (g && (g->level == 10 || g->level == LAYOUT_LEVEL_LINEAR))
        return -EINVAL; /* raid10.h and linear.h map these */
    int k = layout_data_disks(g);
    if (k < 0)
        return k;
    if (!out)
        return -EINVAL;
    int n = g->raid_disks;
    out->k = k;
    for (int i = 0; i < LAYOUT_MAX_DISKS; i++)
        out->data_disk[i] = out->q_slot[i] = out->slot_disk[i] = out->disk_role[i] = -1;

    if (g->level == 0 || g->level == 1) {
        out->p_disk = out->q_disk = -1;
        out->nslots = 0;
        if (g->level == 0) {
            for (int d = 0; d < n; d++)
                out->data_disk[d] = out->disk_role[d] = (int16_t)d;
        } else {
            out->data_disk[0] = 0;
            for (int m = 0; m < n; m++)
                out->disk_role[m] = 0; /* every member mirrors data 0 */
        }
        return 0;
    }

    int p, q;
    place_pq(g, stripe, &p, &q);
    out->p_disk = p;
    out->q_disk = q;
    out->nslots = is_ddf(g) ? n : k;
    out->disk_role[p] = -LAYOUT_ROLE_P;
    if (q >= 0)
        out->disk_role[q] = -LAYOUT_ROLE_Q;
    for (int d = 0; d < k; d++) {
        int disk = data_to_disk(g, p, d);
        int slot = g->level == 6 ? q_slot_of_disk(g, p, q, disk) : d;
        out->data_disk[d] = (int16_t)disk;
        out->disk_role[disk] = (int16_t)d;
        out->q_slot[d] = (int16_t)slot;
        out->slot_disk[slot] = (int16_t)disk;
    }
    return 0;
}

static unsigned chunk_shift(uint32_t c)
{
    return (unsigned)__builtin_ctz(c);
}

/* What layout_map and layout_unmap check first: the data member count, or
 * -EINVAL for a level mapped elsewhere. */
static int mapped_here(const struct layout_geom *g, const struct layout_addr *out)
{
    if (g && (g->level == 10 || g->level == LAYOUT_LEVEL_LINEAR))
        return -EINVAL; /* raid10.h and linear.h map these */
    int k = layout_data_disks(g);
    return k >= 0 && !out ? -EINVAL : k;
}

/* RAID-1: every member holds the array at the same sector. */
static void mirror_addr(struct layout_addr *out, int disk, uint64_t sector)
{
    out->stripe = sector;
    out->d = 0;
    out->disk = disk;
    out->chunk_off = 0;
    out->member_sector = sector;
    out->array_sector = sector;
}

int layout_map(const struct layout_geom *g, uint64_t array_sector, struct layout_addr *out)
{
    int k = mapped_here(g, out);
    if (k < 0)
        return k;
    out->array_sector = array_sector;
    out->role = LAYOUT_ROLE_DATA;
    if (g->level == 1) {
        mirror_addr(out, 0, array_sector);
        return 0;
    }
    unsigned sh = chunk_shift(g->chunk_sectors);
    uint64_t chunk = array_sector >> sh;
    uint32_t off = (uint32_t)(array_sector & (g->chunk_sectors - 1));
    uint64_t stripe = chunk / (uint64_t)k;
    int d = (int)(chunk % (uint64_t)k);
    out->stripe = stripe;
    out->d = d;
    out->chunk_off = off;
    /* stripe * c + off <= array_sector, so no overflow. */
    out->member_sector = (stripe << sh) + off;
    if (g->level == 0) {
        out->disk = d;
        return 0;
    }
    int p, q;
    place_pq(g, stripe, &p, &q);
    out->disk = data_to_disk(g, p, d);
    return 0;
}

int layout_unmap(const struct layout_geom *g, int disk, uint64_t member_sector,
                 struct layout_addr *out)
{
    int k = mapped_here(g, out);
    if (k < 0)
        return k;
    if (disk < 0 || disk >= g->raid_disks)
        return -EINVAL;
    out->disk = disk;
    out->member_sector = member_sector;
    out->role = LAYOUT_ROLE_DATA;
    if (g->level == 1) {
        mirror_addr(out, disk, member_sector);
        return 0;
    }
    unsigned sh = chunk_shift(g->chunk_sectors);
    uint64_t stripe = member_sector >> sh;
    uint32_t off = (uint32_t)(member_sector & (g->chunk_sectors - 1));
    out->stripe = stripe;
    out->chunk_off = off;
    int d;
    if (g->level == 0) {
        d = disk;
    } else {
        int p, q;
        place_pq(g, stripe, &p, &q);
        if (disk == p || disk == q) {
            out->role = disk == p ? LAYOUT_ROLE_P : LAYOUT_ROLE_Q;
            out->d = -1;
            out->array_sector = UINT64_MAX;
            return 0;
        }
        d = disk_to_data(g, p, disk);
    }
    out->d = d;
    uint64_t chunk;
    if (__builtin_mul_overflow(stripe, (uint64_t)k, &chunk) ||
        __builtin_add_overflow(chunk, (uint64_t)d, &chunk) || chunk > (UINT64_MAX >> sh)) {
        out->array_sector = UINT64_MAX;
        return -EOVERFLOW;
    }
    out->array_sector = (chunk << sh) + off;
    return 0;
}

/* ---- names -------------------------------------------------------------- */

#define L0 (1u << 0)
#define L5 (1u << 5)
#define L6 (1u << 6)

/* Long names first: layout_name() returns the first match. */
static const struct {
    const char *name;
    int layout;
    unsigned levels;
} names[] = {
    {"left-asymmetric", 0, L5 | L6},
    {"right-asymmetric", 1, L5 | L6},
    {"left-symmetric", 2, L5 | L6},
    {"right-symmetric", 3, L5 | L6},
    {"parity-first", 4, L5 | L6},
    {"parity-last", 5, L5 | L6},
    {"ddf-zero-restart", 8, L6},
    {"ddf-N-restart", 9, L6},
    {"ddf-N-continue", 10, L6},
    {"left-asymmetric-6", 16, L6},
    {"right-asymmetric-6", 17, L6},
    {"left-symmetric-6", 18, L6},
    {"right-symmetric-6", 19, L6},
    {"parity-first-6", 20, L6},
    {"la", 0, L5 | L6},
    {"ra", 1, L5 | L6},
    {"ls", 2, L5 | L6},
    {"rs", 3, L5 | L6},
    {"default", 2, L5 | L6},
    /* RAID-0: only multi-zone arrays need one (raid0.h) */
    {"original", 1, L0},
    {"alternate", 2, L0},
};

/* mdadm --examine's words for RAID-10 layouts (print_r10_layout), which
 * --detail prints too; names are given to create as n2, f2, o2 ... */
static const struct {
    const char *name;
    int layout;
} r10_names[] = {
    {"near=2", 0x102}, {"near=3", 0x103}, {"near=4", 0x104}, {"near=5", 0x105}, {"near=6", 0x106},
    {"far=2", 0x201}, {"far=3", 0x301}, {"far=4", 0x401}, {"far=5", 0x501}, {"far=6", 0x601},
    {"offset=2", 0x10201}, {"offset=3", 0x10301}, {"offset=4", 0x10401}, {"offset=5", 0x10501},
    {"offset=6", 0x10601}, {"near=2, far=2", 0x202}, {"near=2, offset=2", 0x10202},
};

int layout_from_name(int level, const char *name)
{
    if (!name)
        return -EINVAL;
    if (level == 10)
        return raid10_layout_from_name(name);
    if (level == 4)
        return (!strcasecmp(name, "parity-last") || !strcasecmp(name, "default")) ? 0 : -EINVAL;
    if (level != 0 && level != 5 && level != 6)
        return -EINVAL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((names[i].levels & (1u << level)) && !strcasecmp(names[i].name, name))
            return names[i].layout;
    return -EINVAL;
}

const char *layout_name(int level, int layout)
{
    if (level == 10) {
        for (size_t i = 0; i < sizeof r10_names / sizeof r10_names[0]; i++)
            if (r10_names[i].layout == layout)
                return r10_names[i].name;
        return NULL;
    }
    if (level == 4)
        return "parity-last";
    if (level != 0 && level != 5 && level != 6)
        return NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((names[i].levels & (1u << level)) && names[i].layout == layout)
            return names[i].name;
    return NULL;
}
