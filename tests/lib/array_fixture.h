/* Test fixture for array-level tests: member files in a temporary
 * directory, an array created on them, an in-memory model of its contents,
 * opening with or without simulation layers, and direct access to member
 * files (bytes past data_offset, superblocks) to check what reached them.
 * Every helper reports through CHECK and returns 0 or a negative errno. */
#ifndef URAID_TEST_ARRAY_FIXTURE_H
#define URAID_TEST_ARRAY_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "layout.h"
#include "meta/superblock.h"
#include "uraid.h"

#define FX_MAXM 16

struct fx {
    char dir[256];
    int level, n;
    uint32_t chunk;                   /* bytes */
    uint64_t member_bytes;
    char path[FX_MAXM][300];
    struct layout_geom geom;
    int k;                            /* data chunks per stripe */
    uint64_t stripe_bytes;            /* k * chunk */
    uint64_t size;                    /* array bytes */
    uint64_t data_offset;             /* bytes, the same on every member */
    uint8_t *model;                   /* what the array must hold */
    char label[96];
};

/* Creates members and the array (assume_clean: all zeros is consistent);
 * the model starts all zero. */
int fx_create(struct fx *f, int level, int n, uint32_t chunk, uint64_t member_bytes);
/* The same with an internal write-intent bitmap of bitmap_chunk bytes per
 * bit (0: none). */
int fx_create_bitmap(struct fx *f, int level, int n, uint32_t chunk, uint64_t member_bytes, uint64_t bitmap_chunk);

/* Opens the members not listed in omit[] (omit may be NULL; omit[s] != 0
 * leaves slot s out). sim: give every member a fault layer (spec ""). */
struct uraid_array *fx_open(struct fx *f, const int *omit, int sim, int force);

/* uraid_write and the model together; returns uraid_write's result (the
 * model is only updated on success). */
int fx_write(struct fx *f, struct uraid_array *a, const void *buf, size_t len, uint64_t off);

/* Fills the whole array with random data from r (full-stripe writes). */
void fx_fill(struct fx *f, struct uraid_array *a, struct rng *r);

/* Array offset of data index d, byte `in` of its chunk, in stripe s. */
static inline uint64_t fx_at(const struct fx *f, uint64_t s, int d, uint64_t in)
{
    return s * f->stripe_bytes + (uint64_t)d * f->chunk + in;
}

/* Reads [off, off + len) and compares with the model; returns the read's
 * result, CHECK-fails (naming `what`) on a mismatch. */
int fx_verify(struct fx *f, struct uraid_array *a, uint64_t off, uint64_t len, const char *what);

/* Reads the whole array in 1 MiB pieces and compares with the model. */
void fx_verify_all(struct fx *f, struct uraid_array *a, const char *what);

/* Member file access, bypassing the array: bytes at member data sector
 * offset `off` (bytes, past data_offset), and the superblock. */
int fx_member_pread(const struct fx *f, int slot, void *buf, size_t len, uint64_t off);
int fx_read_sb(const struct fx *f, int slot, struct md_sb *sb);
/* Raw copy of a member's superblock area (4 KiB at byte 4096). */
int fx_sb_bytes(const struct fx *f, int slot, uint8_t out[MD_SB_BYTES]);

/* Where array byte `off` lives: member slot and byte past data_offset. */
void fx_locate(const struct fx *f, uint64_t off, int *slot, uint64_t *member_off);
/* Parity members of stripe `stripe` (q = -1 for RAID-5). */
void fx_parity_of(const struct fx *f, uint64_t stripe, int *p, int *q);

/* A file of the fixture's member size in its directory (a spare, a
 * replacement); its path in out. */
int fx_make_file(const struct fx *f, const char *name, char *out, size_t len);

/* URAID_TEST_VERBOSE=1: the library's log (INFO and up) on stdout. */
void fx_log_from_env(void);

void fx_destroy(struct fx *f);

#endif
