/* The workload of the crash trials (tests/unit/test_crash.c) and the model
 * that judges what an array holds after a crash.
 *
 * Writers: several threads write to an open array through the public API
 * (4 KiB random, chunk-sized, partial-stripe and full-stripe writes) and
 * flush now and then. Two writes never cover one sector at the same time
 * (a writer claims its sectors first), so the writes of a sector form one
 * sequence. Every sector a write carries says which write and which array
 * sector it is (cw_sector), so a read tells who wrote it.
 *
 * Journal: each write is recorded as issued before it is made and as
 * acknowledged after it returned; each flush as started and as completed.
 * In the process (a power cut) the records go to memory; from a child that
 * is killed (kill -9) they go down a pipe, 24 bytes each, so every record
 * written before the kill reaches the parent whole and in order.
 *
 * Model: a write acknowledged before the start of a completed flush is
 * durable. After a crash each sector must hold
 *   - never written by the trial: its base value (write 0), exactly;
 *   - with a durable write: that write or a later one of its sequence;
 *   - written, none durable: the base value or any write of its sequence;
 * whole sectors only: a torn write shows as some sectors new, some old. */
#ifndef URAID_TEST_CRASH_WORKLOAD_H
#define URAID_TEST_CRASH_WORKLOAD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "uraid.h"

#define CW_SECTOR 512u

enum cw_rec_type { CW_ISSUE = 1, CW_ACK, CW_FLUSH_START, CW_FLUSH_DONE, CW_END };

struct cw_rec {
    uint32_t type, id; /* write id (from 1) or flush id */
    uint64_t off;      /* ISSUE: array bytes */
    uint32_t len, pad;
};

struct cw_journal {
    int fd;                /* >= 0: records go down this pipe; else to memory */
    pthread_mutex_t lock;  /* one order for all records */
    struct cw_rec *v;
    size_t n, cap;
    uint32_t next_write, next_flush;
};

void cw_journal_init(struct cw_journal *j, int fd);
void cw_journal_free(struct cw_journal *j);
/* Appends a record read from a pipe (the parent's side). */
int cw_journal_add(struct cw_journal *j, const struct cw_rec *r);
/* The journal's length now (under its lock): at a power cut, where what the
 * dead process's clients saw ends. cw_journal_cut drops the records after. */
size_t cw_journal_mark(struct cw_journal *j);
void cw_journal_cut(struct cw_journal *j, size_t n);

/* Where the journal stood at a power cut: cw_mark_cut is the
 * powercut_on_cut callback (ctx: a struct cw_cut_mark with j set). Nothing
 * the process acknowledged after the cut was ever seen by a client. */
struct cw_cut_mark {
    struct cw_journal *j;
    size_t at;
    int set;
};
void cw_mark_cut(void *ctx);

/* The 512 bytes write `id` puts at array sector `sector` in a trial of `seed`
 * (id 0: the base value every sector starts with). */
void cw_sector(uint64_t seed, uint32_t id, uint64_t sector, uint8_t *out);

struct cw_params {
    struct uraid_array *a;
    uint64_t seed;
    uint64_t size, chunk, stripe; /* array bytes, chunk and stripe bytes */
    int threads, writes_per_thread;
    unsigned flush_one_in;        /* a writer flushes after about one write in this many */
    /* The shared stream (tests/unit/test_ppl_cut6.c narrows the mix to
     * it): stream_in8 of 8 writes are its next piece (0: 4, half), each
     * stream_piece bytes (0: 3/4 stripe), or with stream_random a random
     * number of 4 KiB up to two stripes, so its cuts fall on every row. */
    unsigned stream_in8;
    uint64_t stream_piece;
    int stream_random;
    /* The writers' choices from this seed (0: seed, which also names the
     * data): a test that keeps one base image for many trials varies them. */
    uint64_t pick_seed;
};

/* Runs the writers to the end (a writer stops at its first error, as a
 * dying process does) and returns the number of writes acknowledged. */
int cw_run(const struct cw_params *p, struct cw_journal *j);

/* Fills the whole array with base values (full-stripe writes). */
int cw_fill_base(struct uraid_array *a, uint64_t seed, uint64_t size, uint64_t stripe);

struct cw_verdict {
    uint64_t writes_issued, writes_acked, writes_durable, flushes_done;
    uint64_t lost_sectors;        /* a durable write lost (an older value or garbage) */
    uint64_t damaged_sectors;     /* never written, and not the base value */
    uint64_t bad_sectors;         /* written, none durable, and neither base nor one of its writes */
    uint64_t unreadable_sectors;  /* the read failed (counted in the three above as well) */
    uint64_t first_bad_sector;    /* the first sector of any kind above, or UINT64_MAX */
    char first_bad[160];          /* what it held, for the message */
};

/* Reads the whole array and judges it against the journal. */
int cw_judge(struct uraid_array *a, uint64_t seed, uint64_t size, const struct cw_journal *j, struct cw_verdict *v);

#endif
