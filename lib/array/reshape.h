/* The offline grow (reshape.c: members, checks, superblocks; reshape_copy.c:
 * the windows of stripes moved from the old geometry to the new). */
#ifndef URAID_ARRAY_RESHAPE_H
#define URAID_ARRAY_RESHAPE_H

#include "array/array.h"
#include "reshape_geom.h"
#include "uraid_grow.h"

struct grow {
    int n;                          /* names given: members, then added */
    const char *name[URAID_MAX_MEMBERS];
    struct member *dev[URAID_MAX_MEMBERS];
    struct md_sb sb[URAID_MAX_MEMBERS];
    int sb_ok[URAID_MAX_MEMBERS];   /* a superblock of this array was read */
    int is_added[URAID_MAX_MEMBERS];  /* given after --add */
    int fresh[URAID_MAX_MEMBERS];     /* gets a new member's superblock at the next write */
    int ref;                        /* the highest events */
    int at[URAID_MAX_MEMBERS];      /* new raid slot -> index of its member */
    struct md_sb tmpl;              /* the array-wide fields every member gets */
    struct reshape_geom g;
    uint64_t old_off;               /* every member's data_offset before */
    uint64_t pos, ckpt;             /* reached; on disk */
    int appended;                   /* 1 linear, 2 RAID-1: members appended, nothing to move */
    int resumed_mirrors;            /* RAID-1 grown before, its new mirrors still recovering */
    const struct uraid_grow_params *p;
    char *why;
    size_t whylen;
};

/* Writes tmpl (with reshape_position = ckpt) to every member, after a
 * flush of every member so the data it vouches for is on disk. (reshape.c) */
int grow_checkpoint(struct grow *gr, uint64_t ckpt);

/* A window's buffers and I/O engine (reshape_copy.c). */
struct grow_bufs {
    uint8_t *old[URAID_MAX_MEMBERS], *new[URAID_MAX_MEMBERS], *zero;
    uint64_t max_stripes;
    struct io_engine *io; /* every member's part of a window runs at once */
};
int grow_bufs_alloc(const struct reshape_geom *g, struct grow_bufs *b);
void grow_bufs_free(struct grow_bufs *b);

/* New stripes [pos / stripe_data, + w): the old rows read, the new stripes
 * built and written (not flushed). 0 or an I/O error with why set. */
int grow_copy_window(struct grow *gr, struct grow_bufs *b, uint64_t pos, uint64_t w);

/* Moves the stripes from gr->pos to the end, checkpointing as
 * reshape_next says and at least every checkpoint_ms. 0, -EINTR when
 * stopped (position recorded) or an I/O error with why set. (reshape_copy.c) */
int grow_copy(struct grow *gr);

#endif
