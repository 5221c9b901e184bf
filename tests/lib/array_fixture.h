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

/* The consistency policy fx_create gives arrays without a bitmap: resync
 * (what the tests written before PPL expect) unless a test sets it. */
extern int fx_policy;

/* Creates members and the array (assume_clean: all zeros is consistent);
 * the model starts all zero. */
int fx_create(struct fx *f, int level, int n, uint32_t chunk, uint64_t member_bytes);
/* The same with an internal write-intent bitmap of bitmap_chunk bytes per
 * bit (0: none). */
int fx_create_bitmap(struct fx *f, int level, int n, uint32_t chunk, uint64_t member_bytes, uint64_t bitmap_chunk);

/* fx_create, then the array opened (sim: a fault layer per member) and
 * filled from r (r == NULL: left all zeros). a == NULL: closed again;
 * otherwise *a is the open array. */
int fx_setup(struct fx *f, int level, int n, uint32_t chunk, uint64_t member_bytes, struct rng *r, int sim,
             struct uraid_array **a);

/* Opens the members not listed in omit[] (omit may be NULL; omit[s] != 0
 * leaves slot s out). sim: give every member a fault layer (spec ""). */
struct uraid_array *fx_open(struct fx *f, const int *omit, int sim, int force);

/* A slot set for the helpers below: FX_SLOT(0) | FX_SLOT(5). */
#define FX_SLOT(s) (1u << (s))

/* Opens with the caller's parameters (op may be NULL): the members not in
 * omit, then the nextra paths in extra (spares). spec != NULL gives every
 * one of them a fault layer set up with spec. */
int fx_open_with(struct fx *f, unsigned omit, const char *spec, const char *const *extra, int nextra,
                 struct uraid_open_params *op, struct uraid_array **a);

/* The fixture's slot is held by path from now on (a rebuilt or replaced
 * member). */
void fx_adopt(struct fx *f, int slot, const char *path);

/* Opens with the members in omit left out (force: as fx_open), reads the
 * whole array against the model and closes it. */
void fx_verify_omitting(struct fx *f, unsigned omit, int force, const char *what);

/* The same with the lowest `count` slots other than `slot` left out: the
 * array can only be read right if slot's member holds its data. */
void fx_verify_without_others(struct fx *f, int slot, int count, const char *what);

/* Adds path as a spare. */
int fx_add_spare(struct fx *f, struct uraid_array *a, const char *path);

/* Injects "kind=OFF+len" into slot's fault layer, OFF being member_off past
 * data_offset (kind: read-eio, pending, write-eio, ...). */
int fx_inject(const struct fx *f, struct uraid_array *a, int slot, const char *kind, uint64_t member_off,
              uint64_t len);

/* Job start (jp may be NULL) and wait, each CHECKed to return 0; fx_job
 * does both. */
int fx_job_start(const struct fx *f, struct uraid_array *a, enum uraid_job_kind kind,
                 const struct uraid_job_params *jp);
int fx_job_wait(const struct fx *f, struct uraid_array *a, struct uraid_job_status *st);
int fx_job(const struct fx *f, struct uraid_array *a, enum uraid_job_kind kind, const struct uraid_job_params *jp,
           struct uraid_job_status *st);

struct uraid_counters fx_counters(struct uraid_array *a);

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
int fx_member_pwrite(const struct fx *f, int slot, const void *buf, size_t len, uint64_t off);
int fx_read_sb(const struct fx *f, int slot, struct md_sb *sb);
/* Raw copy of a member's superblock area (4 KiB at byte 4096). */
int fx_sb_bytes(const struct fx *f, int slot, uint8_t out[MD_SB_BYTES]);
/* The v1.2 superblock of any member file; no CHECK (a test may expect none). */
int fx_read_sb_path(const char *path, struct md_sb *sb);

/* Where array byte `off` lives: member slot and byte past data_offset. */
void fx_locate(const struct fx *f, uint64_t off, int *slot, uint64_t *member_off);
/* Parity members of stripe `stripe` (q = -1 for RAID-5). */
void fx_parity_of(const struct fx *f, uint64_t stripe, int *p, int *q);

/* A file of the fixture's member size in its directory (a spare, a
 * replacement); its path in out. */
int fx_make_file(const struct fx *f, const char *name, char *out, size_t len);
/* A file of `bytes` zero bytes at path (created or truncated). */
int fx_file_of_size(const char *path, uint64_t bytes);

/* URAID_TEST_VERBOSE=1: the library's log (INFO and up) on stdout. */
void fx_log_from_env(void);

void fx_destroy(struct fx *f);

#endif
