/* Test fixture for array-level tests: member files in a temporary
 * directory, an array created on them, an in-memory model of its contents,
 * opening with or without simulation layers, and direct access to member
 * files (bytes past data_offset, superblocks) to check what reached them.
 * Every helper reports through CHECK and returns 0 or a negative errno. */
#ifndef URAID_TEST_ARRAY_FIXTURE_H
#define URAID_TEST_ARRAY_FIXTURE_H

#include <pthread.h>
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
/* The superblock format fx_create gives (mdadm's spellings; NULL: 1.2). */
extern const char *fx_metadata;

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
/* 1 when some sound header in slot's PPL area lists an entry at array
 * sector `sector` (any header of the chain, not only the newest). */
int fx_ppl_lists(const struct fx *f, int slot, uint64_t sector);
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

/* Served-array helpers. The tests that change an array while it serves
 * (grow, takeover: test_grow_*_online, test_grow_mirrors,
 * test_takeover_*) keep their own member files and a model of the array
 * shared with a forked child (a kill -9 case), not a struct fx; these are
 * the pieces they had each written again. */

#define FX_PATH_LEN 160     /* the member paths those tests keep */
#define FX_MAXW (64u << 10) /* the largest write a served writer makes */

/* A new temporary directory "uraid-test-TAG.XXXXXX" in /dev/shm (/tmp
 * when /dev/shm is not writable): the member files of one case. */
int fx_tmpdir(char *dir, size_t len, const char *tag);

/* n zero-filled member files dir/m<i>.img, sizes[i] bytes each (sizes
 * NULL: `each` bytes); paths[i] points at path[i]. Returns 0 or -errno. */
int fx_member_files(const char *dir, char (*path)[FX_PATH_LEN], const char **paths, int n, const uint64_t *sizes,
                    uint64_t each);

/* Memory shared with forked children (the model a killed child writes
 * into), zeroed; fx_shared_free takes NULL. */
void *fx_shared_map(size_t len);
void fx_shared_free(void *p, size_t len);

/* Opens the array on paths, maps a shared model of model_len bytes (0: the
 * array's size), fills the array's bytes in it with random data from r,
 * writes them to the array and closes it. *bytes: the array's size; why:
 * uraid_open's reason when it fails. Returns 0 or the first error. */
int fx_open_fill(const char *const *paths, int n, uint64_t model_len, struct rng *r, uint8_t **model,
                 uint64_t *bytes, char *why, size_t whylen);

/* Every file's bytes one after the other (sizes[i] bytes of file i, or
 * `each` with sizes NULL; an unreadable one as 0xee bytes), to compare
 * after a refusal; *total (may be NULL): their length. NULL: no memory. */
uint8_t *fx_files_snapshot(const char *const *paths, int n, const uint64_t *sizes, uint64_t each, uint64_t *total);

/* A write a killed child had in flight: its 4 KiB blocks may read either
 * the model's or buf's bytes (shared memory, fx_shared_map). */
struct fx_inflight {
    uint64_t off, len, writes;
    uint8_t buf[FX_MAXW];
};

/* Reads the array's first `bytes` and CHECKs them against model ("WHAT:
 * read RC, first difference at byte N of BYTES"); with pend, block by
 * block, a block in pend's write may hold its bytes instead. */
void fx_check_model(struct uraid_array *a, const uint8_t *model, uint64_t bytes, const struct fx_inflight *pend,
                    const char *what);

/* One fx_write of [off, off + len) from the model in a thread of its own:
 * fx_write_start, then fx_write_join for its result. */
struct fx_async_write {
    struct fx *f;
    struct uraid_array *a;
    uint64_t off, len;
    int rc;
    pthread_t t;
};
void fx_write_start(struct fx_async_write *w, struct fx *f, struct uraid_array *a, uint64_t off, uint64_t len);
int fx_write_join(struct fx_async_write *w);

/* A writer thread (fx_writer_main): random 4 KiB-multiple writes in
 * [lo, hi) copied into model and read back until *stop; with wait_for,
 * only once the array is that big. failures: writes or read-backs that
 * failed; rounds: writes made and read back. */
struct fx_writer {
    struct uraid_array *a;
    uint8_t *model;
    uint64_t lo, hi, seed, wait_for;
    int *stop;
    int failures, rounds;
};
void *fx_writer_main(void *arg);
void fx_writers_start(struct fx_writer *w, pthread_t *t, int nw);
/* Sets *stop, joins them; returns their failures added up. */
int fx_writers_stop(struct fx_writer *w, pthread_t *t, int nw, int *stop);
/* Until every writer has made `more` rounds more (each counted from its
 * own turn). */
void fx_writers_wait(struct fx_writer *w, int nw, int more);

/* A killed child's writer (fx_kill_writer_start): one write at a time
 * over the whole array, recorded in pend before it goes out and in model
 * once acknowledged; a failed write ends the process (_exit(4)). */
struct fx_killer {
    struct uraid_array *a;
    uint8_t *model;
    uint64_t bytes, seed;
    struct fx_inflight *pend;
};
/* Starts it and returns once 20 writes were acknowledged. */
void fx_kill_writer_start(struct fx_killer *k);
/* In a child: the level switched online between even_level (first) and
 * odd_level, a random pause under 400 us after each, until SIGKILL once
 * delay_us have passed; a refused switch: _exit(5). */
_Noreturn void fx_switch_levels_until_killed(struct uraid_array *a, int even_level, int odd_level, uint64_t seed,
                                             unsigned delay_us);

/* uraid_grow_online_level, CHECKed to return `want` with `text` in a
 * one-line reason. */
void fx_refuse_level(struct uraid_array *a, int level, int N, uint32_t chunk, const char *layout,
                     const char *const *added, int nadd, int want, const char *text);
/* uraid_grow_online, the same. */
void fx_refuse_grow(struct uraid_array *a, int N, const char *const *added, int nadd, int want, const char *text);

/* A grown array opened from paths[0..n) and checked: n members, want_degraded
 * of them not in sync, its first old_bytes the model's, zeros after. The
 * open array (NULL when it did not open), for more checks. */
struct uraid_array *fx_open_grown(const char *const *paths, int n, const uint8_t *model, uint64_t old_bytes,
                                  int want_degraded, const char *what);

/* The 1.2 superblock area of a member file (4 KiB from 4 KiB) read into
 * buf, or (put) buf written over it: a superblock write cut off. */
int fx_sb_area(const char *path, uint8_t buf[4096], int put);

/* Member 0's data offset in sectors, as the array reports it. */
uint64_t fx_data_offset_sectors(struct uraid_array *a);

/* FNV-1a of a whole file (a missing one hashes as empty): a member left
 * unchanged by a refused open or create. */
uint64_t fx_file_hash(const char *path);

#endif
