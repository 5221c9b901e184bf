/* The offline grow (reshape.c: members, checks, superblocks; reshape_copy.c:
 * the windows of stripes moved from the old geometry to the new). */
#ifndef URAID_ARRAY_RESHAPE_H
#define URAID_ARRAY_RESHAPE_H

#include "log.h"
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
    int appended;                   /* 1 linear, 2 RAID-1: members appended, nothing to move; 3 RAID-5 taken
                                     * over as RAID-6 (Q recovered onto the new member); 4 RAID-6 taken over
                                     * as RAID-5 (the Q member dropped) */
    int recovering[URAID_MAX_MEMBERS]; /* not in sync past the reshape position (md's recovery_offset) */
    int drop_q;                     /* RAID-6 -> RAID-5: after the restripe to the -6 layout, the takeover */
    int to_raid4;                   /* RAID-5 -> RAID-4: after the restripe to parity-last, the takeover */
    int to_raid0;                   /* RAID-5 -> RAID-0: the same, the parity member dropped */
    int written;                    /* a takeover wrote its superblocks itself */
    int resumed_mirrors;            /* RAID-1 grown before, its new mirrors still recovering */
    uint64_t from_before;           /* a shrink that cut the member size: the array sectors before */
    int nslots;                     /* slots holding members (a shrink: the old count, the leaving ones
                                     * last); 0: tmpl.raid_disks */
    int degraded_ok;                /* start: old slots may lack a member (a restripe within the level) */
    int drop_from;                  /* a RAID-1 losing its slots from here up: left out on purpose (0: none) */
    int gone[URAID_MAX_MEMBERS];    /* slot: its member failed during the reshape (or is missing): never read
                                     * or written again, its data rebuilt from the others (reshape_fail.c) */
    /* A member failed under a served array's reshape job: the array marks it (0 when it carries on
     * degraded, array_member_failed); NULL offline: grow_lose records it in the superblocks. */
    int (*lost)(void *ctx, int slot, int err);
    void *lost_ctx;
    /* A served array's job (reshape_job.c): told the array sectors [lo, hi)
     * whose old rows the read-ahead is about to read, before the reads go out,
     * so user writes there from then on drop them (reshape_io.c); NULL
     * offline, where nothing else writes the members. */
    void (*ahead)(void *ctx, uint64_t lo, uint64_t hi);
    void *ahead_ctx;
    /* Bad-block logs (md's, absolute member sectors) by member index, NULL when empty: the copy rebuilds
     * the old rows a log lists from the other members instead of reading them, and a window written
     * over a listed range takes it off (md: a write that succeeds clears the entry), written with the
     * next superblocks (bb_dirty). A served array's job sets bad instead: the array's own lists are
     * asked (ctx lost_ctx), and left as they are. */
    struct md_bblist *bb[URAID_MAX_MEMBERS];
    int bb_dirty[URAID_MAX_MEMBERS];
    int (*bad)(void *ctx, int slot, uint64_t sector, uint64_t len);
    uint8_t *bm;                    /* the write-intent bitmap (header + bits) as the reference held it */
    uint64_t bm_bytes;              /* 0: the array keeps none */
    const struct uraid_grow_params *p;
    char *why;
    size_t whylen;
};

/* reshape_bitmap.c: the write-intent bitmap through an offline reshape:
 * loaded from the reference member (0 when there is none, or a refusal);
 * before member i's superblock, its header's events set to the
 * template's (a fresh member: the whole bitmap); freed. */
int grow_bitmap_load(struct grow *gr);
int grow_bitmap_write(struct grow *gr, int i, int fresh);
void grow_bitmap_free(struct grow *gr);

/* Writes tmpl (with reshape_position = ckpt) to every member, after a
 * flush of every member so the data it vouches for is on disk. (reshape.c) */
int grow_checkpoint(struct grow *gr, uint64_t ckpt);
/* Every member left flushed, a failing one lost (reshape_fail.c); 0 or a refusal. */
int grow_flush_all(struct grow *gr);
/* The slots whose members get every superblock write. */
static inline int grow_slots(const struct grow *gr) { return gr->nslots ? gr->nslots : (int)gr->tmpl.raid_disks; }

/* reshape.c's helpers for reshape_level.c: a refusal line in gr->why
 * (returns rc); every member's superblock from tmpl, events + 1; member i
 * (given after --add) as a new member in `slot`; the restripe from `from`
 * (the first nold members hold it) to `to`. */
#define grow_say(gr, rc, ...) uraid_refuse((gr)->why, (gr)->whylen, (rc), __VA_ARGS__)
int grow_write_all(struct grow *gr);
int grow_write_one(struct grow *gr, int i); /* member i alone, tmpl's events */
int grow_new_member(struct grow *gr, int i, int slot);
int grow_plan_restripe(struct grow *gr, int nold, const struct layout_geom *from, const struct layout_geom *to);
/* Member i holds a superblock of the reference's array; "RAID-5" for 5. */
int grow_same_array(const struct grow *gr, int i);
const char *grow_level_text(int level);

/* reshape_check.c: the array as it is (every old member given, in sync, clean; or degraded, degraded_ok). */
int grow_check_old(struct grow *gr, int nold_given);
/* A refusal when the array's metadata keeps no room before its data
 * (1.0, 0.90): called by every planner that moves data. */
int grow_data_moves(struct grow *gr);
/* Member i's bad-block log into gr->bb[i] when it lists any; a refusal
 * where the grow could not rebuild the listed rows (no parity). */
int grow_bb_load(struct grow *gr, int i);
/* reshape_back.c: the start's record in tmpl (md's, either direction; pos
 * and ckpt at its start); a shrink to `to` (fewer members) planned,
 * nothing written. */
void grow_start_record(struct grow *gr, const struct layout_geom *from, const struct layout_geom *to);
int grow_plan_shrink(struct grow *gr, int nmembers, const struct layout_geom *to);

/* --level (reshape_level.c): md's level changes of RAID-5/6. Plans the
 * change into gr (a restripe, or appended 3/4 for a takeover) after
 * check_old and check_added passed; 0 or a refusal, nothing written. */
int grow_plan_level(struct grow *gr, int nold, int N);
/* The members reaching N - 1 slots after a restripe to a -6 layout:
 * RAID-6 taken over as RAID-5 (md's raid5_takeover_raid6). */
int grow_drop_q(struct grow *gr);
/* The members after a restripe to parity-last: RAID-5 taken over as RAID-4. */
int grow_to_raid4(struct grow *gr);
int grow_to_raid0(struct grow *gr);
/* reshape_raid0.c: a RAID-0 of N gaining members to N (more), as mdadm
 * grows one: a RAID-4 missing its parity reshaped, then taken back as a
 * RAID-0 (gr->to_raid0). grow_raid0_zone: the one zone's size per member
 * (md takes only a RAID-0 of equal members over), or a refusal. */
int grow_plan_raid0(struct grow *gr, int nold, int N);
int grow_raid0_zone(struct grow *gr, int nold, uint64_t *size);
/* A RAID-4 (R) whose parity slot, the last, no device holds: where a RAID-0's grow leads. */
int grow_raid4_parity_lost(const struct md_sb *R);
/* Every added member (gr->name[nold..]) holds data_offset + size sectors, or a refusal. */
int grow_added_fit(struct grow *gr, int nold, uint64_t size);
/* md's layout of the same data with Q on the last member, and back; -1: none. */
int layout_to_6(int layout5);
int layout_from_6(int layout6);

/* reshape_fail.c: a member lost in mid-reshape, as md's raid5 reshape goes
 * on degraded. grow_lose: slot's member failed with err (what: "reading",
 * ...); 0 when the old and the new geometry both keep redundancy for it
 * (the slot is gone, its role faulty in tmpl; offline the superblocks of
 * the others say so at once), else err with why set. grow_gone_count: the
 * gone slots below n. grow_rebuild_old: the gone old members' rows [r0, r1)
 * in b->old rebuilt from the others, stripe by stripe. */
struct grow_bufs;
int grow_lose(struct grow *gr, int slot, int err, const char *what);
int grow_gone_count(const struct grow *gr, int n);
int grow_rebuild_old(struct grow *gr, struct grow_bufs *b, uint64_t r0, uint64_t r1);
/* Slot s's member lists bad sectors in [lo, lo + len) (absolute member
 * sectors); grow_old_bad: some old member does in old rows [r0, r1). */
int grow_bad(const struct grow *gr, int s, uint64_t lo, uint64_t len);
int grow_old_bad(const struct grow *gr, uint64_t r0, uint64_t r1);
/* After new rows [lo, lo + len) (absolute) were written on every member
 * left: each log's entries there cleared (offline), to go out with the
 * next superblocks. An entry whose split would overflow the log stays
 * (its rows are rebuilt from the others, which is still right). */
void grow_bad_written(struct grow *gr, uint64_t lo, uint64_t len);
/* The logs cleared since the last write, each written before its member's
 * superblock (reshape_record.c); the lists freed (reshape.c's end). */
int grow_bb_write(struct grow *gr, int i);
void grow_bb_free(struct grow *gr);
/* Carrying a reshape on (R the newest record, nall its slots): the slots
 * no device holds in R's dev_roles (their member was marked faulty), in
 * lost[] when not NULL; grow_place_lost makes those of them without a
 * member (seen[s] 0) gone, or refuses when the level cannot bear it or a
 * member is being recovered. */
int grow_lost_slots(const struct md_sb *R, int nall, int *lost);
int grow_place_lost(struct grow *gr, const struct md_sb *R, int nall, const int *seen);
/* The member of slot s, or NULL when it is gone. */
static inline struct member *grow_dev(const struct grow *gr, int s) { return gr->gone[s] ? NULL : gr->dev[gr->at[s]]; }

/* A window's buffers and I/O engine (reshape_copy.c). */
struct grow_bufs {
    uint8_t *old[URAID_MAX_MEMBERS], *new[URAID_MAX_MEMBERS], *zero;
    uint64_t max_stripes;
    struct io_engine *io; /* every member's part of a window runs at once */
    /* The copy reads the next window's old rows [ahead_r0, ahead_r1) into
     * ahead[] while it builds and writes the current one (NULL: no
     * read-ahead). The online job drops them (both 0) when a user write
     * reached them before its window lock (grow->ahead). */
    uint8_t *ahead[URAID_MAX_MEMBERS];
    uint64_t ahead_r0, ahead_r1; /* empty when equal */
};
int grow_bufs_alloc(const struct reshape_geom *g, struct grow_bufs *b, int with_ahead);
void grow_bufs_free(struct grow_bufs *b);

/* New stripes [pos / stripe_data, + w): the old rows read, the new stripes
 * built and written (not flushed). 0 or an I/O error with why set. */
int grow_copy_window(struct grow *gr, struct grow_bufs *b, uint64_t pos, uint64_t w);

/* Moves the stripes from gr->pos to the end, checkpointing as
 * reshape_next says and at least every checkpoint_ms. 0, -EINTR when
 * stopped (position recorded) or an I/O error with why set. (reshape_copy.c) */
int grow_copy(struct grow *gr);

#endif
