/* GNU ddrescue mapfiles: which bytes of a disk image were rescued.
 *
 * A mapfile is text: comments ('#' at the start of a line or after blank
 * space, to the end of the line), then a status line "POS STATUS [PASS]",
 * then one line per block, "POS SIZE STATUS", in ascending order. Numbers
 * are C-style (0x... hex, leading 0 octal, else decimal) and in bytes. A
 * block's status is '+' (rescued) or one of '?' (not tried), '*' (not
 * trimmed), '/' (not scraped), '-' (bad sector).
 *
 * Only bytes inside '+' blocks count as readable: every other status, gaps
 * between blocks and anything past the last block are reported unreadable,
 * since ddrescue never produced good data for them.
 *
 * Pure: the caller reads the file; nothing here does I/O. */
#ifndef URAID_MEMBER_DDRESCUE_H
#define URAID_MEMBER_DDRESCUE_H

#include <stddef.h>
#include <stdint.h>

struct ddrescue_range {
    uint64_t start, len; /* bytes */
};

struct ddrescue_map {
    struct ddrescue_range *bad; /* sorted, non-overlapping, adjacent ranges merged */
    size_t nbad;
    uint64_t end;               /* end of the last block: the bytes the map describes */
};

/* Parses `len` bytes of mapfile text. `name` is used in messages only.
 * size_bytes: the image's size; when non-zero, ranges are clipped to it and
 * [end, size_bytes) is unreadable (the rescue never reached it); 0 reports
 * only what the blocks say.
 * Returns 0, -EINVAL with one line in why ("mapfile NAME line N: reason"),
 * or -ENOMEM. On error *out is left empty. */
int ddrescue_parse(const char *text, size_t len, const char *name, uint64_t size_bytes, struct ddrescue_map *out,
                   char *why, size_t whylen);

void ddrescue_free(struct ddrescue_map *m);

/* Bytes of [0, size) covered by unreadable ranges. */
uint64_t ddrescue_bad_bytes(const struct ddrescue_map *m);

#endif
