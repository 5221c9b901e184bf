/* Reshape geometry (reshape_geom.h): pure arithmetic, no I/O. */
#include "reshape_geom.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "meta/superblock.h"

static int refuse(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t whylen, const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

int reshape_geom_init(struct reshape_geom *g, const struct layout_geom *from, const struct layout_geom *to,
                      uint64_t member_sectors, uint64_t shift, char *why, size_t whylen)
{
    return reshape_geom_init_dir(g, from, to, member_sectors, shift, 0, why, whylen);
}

int reshape_sb_backwards(const struct md_sb *sb)
{
    return sb->delta_disks < 0 || (sb->delta_disks == 0 && (sb->feature_map & MD_FEATURE_RESHAPE_BACKWARDS));
}

uint64_t reshape_sb_shift(const struct md_sb *sb)
{
    return sb->new_offset < 0 ? (uint64_t)-(int64_t)sb->new_offset : (uint64_t)sb->new_offset;
}

int reshape_geom_init_dir(struct reshape_geom *g, const struct layout_geom *from, const struct layout_geom *to,
                          uint64_t member_sectors, uint64_t shift, int backwards, char *why, size_t whylen)
{
    char lwhy[160];
    if (layout_check(from, lwhy, sizeof lwhy) || layout_check(to, lwhy, sizeof lwhy))
        return refuse(why, whylen, "%s", lwhy);
    if (from->level < 4 || from->level > 6 || to->level != from->level)
        return refuse(why, whylen, "only RAID-4/5/6 restripe here, within one level (level %d to %d)", from->level,
                      to->level);
    int fk = layout_data_disks(from), tk = layout_data_disks(to);
    int same_layout = to->layout == from->layout || from->level == 4;
    if (to->raid_disks == from->raid_disks && to->chunk_sectors == from->chunk_sectors && same_layout)
        return refuse(why, whylen, "the new geometry is the old one: nothing to restripe");
    if (!backwards && (to->raid_disks < from->raid_disks || tk < fk))
        return refuse(why, whylen, "the new member count (%d) must not be smaller than the old (%d)", to->raid_disks,
                      from->raid_disks);
    if (backwards && (to->raid_disks > from->raid_disks || tk > fk))
        return refuse(why, whylen, "a backwards reshape cannot gain members (%d to %d)", from->raid_disks,
                      to->raid_disks);
    uint32_t u = from->chunk_sectors > to->chunk_sectors ? from->chunk_sectors : to->chunk_sectors;
    if (!member_sectors || member_sectors % u)
        return refuse(why, whylen, "member size %llu is not a positive multiple of the chunk (%u sectors)",
                      (unsigned long long)member_sectors, u);
    if (shift < reshape_min_shift(u) || shift % 8)
        return refuse(why, whylen, "a data offset shift of %llu sectors is not a multiple of 8 of at least one chunk "
                      "(%u sectors)", (unsigned long long)shift, u);
    g->from = *from;
    g->to = *to;
    g->from_k = fk;
    g->to_k = tk;
    g->unit = u;
    g->member_sectors = member_sectors;
    g->shift = shift;
    g->backwards = !!backwards;
    return 0;
}

uint64_t reshape_begin(const struct reshape_geom *g) { return g->backwards ? reshape_to_sectors(g) : 0; }
uint64_t reshape_end(const struct reshape_geom *g) { return g->backwards ? 0 : reshape_to_sectors(g); }
uint64_t reshape_new_off(const struct reshape_geom *g, uint64_t old_off)
{
    return g->backwards ? old_off + g->shift : old_off - g->shift;
}

uint64_t reshape_old_safe_end(const struct reshape_geom *g, uint64_t pos)
{
    uint64_t old_unit_data = (uint64_t)g->from_k * g->unit;
    uint64_t row = (pos + old_unit_data - 1) / old_unit_data * g->unit;
    return row < g->member_sectors ? row : g->member_sectors;
}

uint64_t reshape_back_floor(const struct reshape_geom *g, uint64_t ckpt)
{
    uint64_t end = reshape_old_safe_end(g, ckpt);
    return end > g->shift ? (end - g->shift + g->unit - 1) / g->unit : 0;
}

/* Backwards: units below pos down to the floor ckpt allows. */
static uint64_t window_back(const struct reshape_geom *g, uint64_t pos, uint64_t ckpt, uint64_t max_stripes)
{
    uint64_t top = pos / reshape_stripe_data(g), floor = reshape_back_floor(g, ckpt);
    if (pos > ckpt || pos > reshape_to_sectors(g))
        return 0;
    uint64_t w = top > floor ? top - floor : 0;
    return w < max_stripes ? w : max_stripes;
}

uint64_t reshape_from_sectors(const struct reshape_geom *g) { return g->member_sectors * (uint64_t)g->from_k; }
uint64_t reshape_to_sectors(const struct reshape_geom *g) { return g->member_sectors * (uint64_t)g->to_k; }
uint64_t reshape_stripe_data(const struct reshape_geom *g) { return (uint64_t)g->to_k * g->unit; }
uint64_t reshape_stripes(const struct reshape_geom *g) { return g->member_sectors / g->unit; }

uint64_t reshape_old_safe_row(const struct reshape_geom *g, uint64_t pos)
{
    uint64_t old_unit_data = (uint64_t)g->from_k * g->unit;
    uint64_t row = pos / old_unit_data * g->unit;
    return row < g->member_sectors ? row : g->member_sectors;
}

uint64_t reshape_window(const struct reshape_geom *g, uint64_t pos, uint64_t ckpt, uint64_t max_stripes)
{
    if (g->backwards)
        return window_back(g, pos, ckpt, max_stripes);
    uint64_t c = g->unit, first = pos / reshape_stripe_data(g), left = reshape_stripes(g) - first;
    if (pos < ckpt || first >= reshape_stripes(g))
        return 0;
    /* the last new row that may be written ends at old row safe + shift:
     * below it the old layout holds nothing the position on disk still
     * sends a reader to */
    uint64_t limit = (reshape_old_safe_row(g, ckpt) + g->shift) / c;
    uint64_t w = limit > first ? limit - first : 0;
    if (reshape_old_safe_row(g, ckpt) >= g->member_sectors)
        w = left; /* every old row is free: the old data is all below ckpt */
    if (w > left)
        w = left;
    return w < max_stripes ? w : max_stripes;
}

enum reshape_move reshape_next(const struct reshape_geom *g, uint64_t pos, uint64_t ckpt, uint64_t max_stripes,
                               uint64_t *stripes)
{
    *stripes = 0;
    uint64_t first = pos / reshape_stripe_data(g);
    if (g->backwards ? pos == 0 : first >= reshape_stripes(g))
        return RESHAPE_DONE;
    uint64_t left = g->backwards ? first : reshape_stripes(g) - first;
    uint64_t want = left < max_stripes ? left : max_stripes;
    uint64_t w = reshape_window(g, pos, ckpt, want);
    if (w < want && pos != ckpt)
        return RESHAPE_CHECKPOINT;
    *stripes = w;
    return w ? RESHAPE_COPY : RESHAPE_CHECKPOINT;
}

int reshape_position_ok(const struct reshape_geom *g, uint64_t pos, char *why, size_t whylen)
{
    uint64_t sd = reshape_stripe_data(g);
    if (pos % sd)
        return refuse(why, whylen, "reshape position %llu is not on a unit boundary (%llu sectors)",
                      (unsigned long long)pos, (unsigned long long)sd);
    if (pos > reshape_to_sectors(g))
        return refuse(why, whylen, "reshape position %llu is past the end of the array (%llu sectors)",
                      (unsigned long long)pos, (unsigned long long)reshape_to_sectors(g));
    uint64_t new_row = pos / sd * g->unit;
    /* md's raid5_run: here_new * chunk + min_offset_diff <= here_old * chunk reads where it writes */
    if (g->backwards && pos && new_row + g->shift <= pos / ((uint64_t)g->from_k * g->unit) * g->unit)
        return refuse(why, whylen, "reshape position %llu: the new rows would overtake the old ones", (unsigned long long)pos);
    if (g->backwards)
        return 0;
    if (new_row >= reshape_old_safe_row(g, pos) + g->shift && pos < reshape_from_sectors(g))
        return refuse(why, whylen, "reshape position %llu: the new rows would overtake the old ones", (unsigned long long)pos);
    return 0;
}

uint64_t reshape_choose_shift(uint64_t headroom, uint32_t chunk_sectors)
{
    /* whole chunks, as mdadm's choices are (md itself needs only sectors) */
    uint64_t want = 4ull * chunk_sectors;
    uint64_t s = want < headroom ? want : headroom / chunk_sectors * chunk_sectors;
    return s >= reshape_min_shift(chunk_sectors) ? s : 0;
}
