/* The list of a parity member's log when a unit ends (ppl_end) and its
 * part may not linger.
 *
 * The case (found by a served write to six nbdkit exports 2 ms away: the
 * serving nbdkit died of SIGSEGV in unkeep, about one run in twenty):
 * ppl_end looked up the link to its part (the previous part's next), then
 * asked ppl_linger whether the part may stay. To make room, ppl_linger
 * takes out kept parts (unkeep), and the one it took out was the part just
 * before: the link now pointed into a part on the list of parts to free.
 * No room was left anyway, so ppl_end unlinked its part through that stale
 * link: the list still led to the part it then freed, and the freed list
 * ran on into live parts.
 *
 * Here the list is built by hand in that state: a pinned lingering part
 * filling the lingering room, then a kept one (covered, idle, unpinned),
 * then the ending unit's part. After ppl_end the list must hold the
 * pinned part alone.
 *
 * And the room stripes are listed ahead in (ppl.c, AHEAD_ROOM): a
 * whole-stripe write of a RAID-6 with PPL lists the stripes after it in
 * the logs' headers while the logs have room, and only its own stripe
 * when other units in flight hold half of every log's entries (they are
 * counted in by hand), so that units never wait for room that listing
 * ahead took. The headers are read from the member files.
 *
 * And a unit whose stripes a header on its way lists (ppl_ahead.c,
 * lister_wait): RAID-5, a whole-stripe write A of stripe X with the log
 * on X's parity member held (stall-writes over the log area), so A's
 * unit has not all its headers on disk; a whole-stripe write B of X+1
 * meanwhile finds A's part listing X+1 in its own log, waits for it
 * instead of writing a header, and is covered once the stall is let go:
 * one unit logged, one covered after waiting, every byte read back. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array/array.h"
#include "array_fixture.h"
#include "harness.h"
#include "meta/ppl.h"
#include "meta/superblock.h"
#include "stripe/ppl.h"
#include "stripe/ppl_int.h"

#define MEMBER_BYTES (3u << 20)
#define CHUNK (16u << 10)

static struct rng rng;

static struct ppl_part *part_new(uint32_t nentries)
{
    struct ppl_part *p = calloc(1, sizeof *p);
    if (!p)
        abort();
    p->nentries = nentries;
    return p;
}

static void test_unkept_neighbour(void)
{
    harness_begin("a unit's part that may not linger leaves the list when the kept part before it is taken out");
    struct uraid_array *a = calloc(1, sizeof *a);
    struct ppl_log *L = calloc(1, sizeof *L);
    if (!a || !L)
        abort();
    a->ppl = L;
    L->a = a;
    pthread_mutex_init(&L->res_mu, NULL);
    pthread_cond_init(&L->res_cv, NULL);
    pthread_mutex_init(&L->fl_mu, NULL);
    pthread_cond_init(&L->fl_work, NULL);
    pthread_cond_init(&L->fl_ended, NULL);
    struct ppl_member *m = &L->m[0];
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->list_mu, NULL);
    pthread_cond_init(&m->departed, NULL);

    /* more entries than the lingering room holds: nothing unkeep may take */
    struct ppl_part *pinned = part_new(PPL_MAX_ENTRIES);
    pinned->lingering = 1;
    pinned->pins = 1;
    /* kept: lingering, covered (it wrote no slot), idle, unpinned */
    struct ppl_part *kept = part_new(1);
    kept->lingering = 1;
    kept->idle = 1;
    kept->ahead = 1;
    /* the ending unit's part: whole stripes, its header on disk */
    struct ppl_part *mine = part_new(2);
    mine->seq = 3;
    pinned->seq = 1;
    kept->seq = 2;
    m->written_seq = 3;
    m->link_seq = 3;
    pinned->next = kept;
    kept->next = mine;
    m->inflight = pinned;
    m->lingering = pinned->nentries + kept->nentries;
    m->entries = pinned->nentries + kept->nentries + mine->nentries;

    struct ppl_unit u = {.held = 1, .parts = mine, .reserved = 1};
    ppl_end(a, &u);

    CHECK(m->inflight == pinned, "the pinned part heads the list");
    CHECK(pinned->next == NULL, "the list after the pinned part: %p (kept %p, the unit's %p, both freed)",
          (void *)pinned->next, (void *)kept, (void *)mine);
    CHECK(m->lingering == pinned->nentries, "lingering entries %u, want %u", m->lingering, pinned->nentries);
    CHECK(m->entries == pinned->nentries, "reserved entries %u, want %u", m->entries, pinned->nentries);
    CHECK(u.parts == NULL && !u.reserved, "the unit let go of its logs");
    free(pinned);
    free(L);
    free(a);
    harness_end();
}

/* A RAID-`level` of n members with a PPL, opened (NULL on failure, already
 * reported); ppl_array_done reads every byte back, closes and removes it. */
static struct uraid_array *ppl_array(struct fx *f, int level, int n)
{
    struct uraid_array *a = NULL;
    struct uraid_open_params op = {0};
    fx_policy = URAID_POLICY_PPL;
    if (fx_setup(f, level, n, CHUNK, MEMBER_BYTES, &rng, 0, NULL) == 0)
        fx_open_with(f, 0, "", NULL, 0, &op, &a);
    fx_policy = URAID_POLICY_RESYNC;
    return a;
}

static void ppl_array_done(struct fx *f, struct uraid_array *a)
{
    if (a) {
        fx_verify_all(f, a, "after the writes");
        CHECK(uraid_close(a) == 0);
    }
    fx_destroy(f);
}

/* Some header in some member's log area lists an entry at array sector
 * `sector`. */
static int listed(struct fx *f, int n, uint64_t sector)
{
    int found = 0;
    for (int s = 0; s < n && !found; s++)
        found = fx_ppl_lists(f, s, sector);
    return found;
}

/* Writes stripe x whole with `busy` entries counted into every log as
 * if other units held them; returns how many of the 4 stripes after x
 * some header lists. */
static int listed_after(struct fx *f, struct uraid_array *a, int n, uint64_t x, uint32_t busy)
{
    for (int s = 0; s < n; s++)
        __atomic_add_fetch(&a->ppl->m[s].entries, busy, __ATOMIC_ACQ_REL);
    uint64_t off = x * f->stripe_bytes;
    rng_fill(&rng, f->model + off, f->stripe_bytes);
    CHECK(fx_write(f, a, f->model + off, f->stripe_bytes, off) == 0, "write stripe %llu", (unsigned long long)x);
    for (int s = 0; s < n; s++)
        __atomic_sub_fetch(&a->ppl->m[s].entries, busy, __ATOMIC_ACQ_REL);
    CHECK(listed(f, n, off / 512), "stripe %llu itself is in no header", (unsigned long long)x);
    int after = 0;
    for (uint64_t j = x + 1; j <= x + 4; j++)
        after += listed(f, n, j * f->stripe_bytes / 512);
    return after;
}

static void test_ahead_room(void)
{
    harness_begin("RAID-6 ppl: a whole stripe lists the stripes after it while the logs have room, not when half "
                  "of every log is held by units in flight");
    const int n = 6;
    struct fx f;
    struct uraid_array *a = ppl_array(&f, 6, n);
    if (a) {
        /* far apart: nothing the first write listed is near the second */
        int crowded = listed_after(&f, a, n, 40, PPL_MAX_ENTRIES / 2);
        int roomy = listed_after(&f, a, n, 10, 0);
        printf("  stripes after the written one listed: %d of 4 with half of every log held, %d of 4 without\n",
               crowded, roomy);
        CHECK(crowded == 0, "%d stripes listed ahead although half of every log was held", crowded);
        CHECK(roomy == 4, "only %d of the 4 stripes after it listed ahead with the logs empty", roomy);
    }
    ppl_array_done(&f, a);
    harness_end();
}

/* Waits up to 10 s for *v to reach want. */
static int wait_for(const uint64_t *v, uint64_t want)
{
    for (int i = 0; i < 100000 && __atomic_load_n(v, __ATOMIC_ACQUIRE) < want; i++)
        usleep(100);
    return __atomic_load_n(v, __ATOMIC_ACQUIRE) >= want;
}

static void test_coming(void)
{
    harness_begin("RAID-5 ppl: a whole stripe listed by a header on its way waits for it instead of writing its own");
    const int n = 4;
    const uint64_t x = 20;
    struct fx f;
    struct uraid_array *a = ppl_array(&f, 5, n);
    if (a) {
        int p, q;
        fx_parity_of(&f, x, &p, &q);
        struct md_sb sb;
        char spec[96];
        CHECK(fx_read_sb(&f, p, &sb) == 0);
        snprintf(spec, sizeof spec, "stall-writes=%llu+%llu", (unsigned long long)md_sb_ppl_sector(&sb) * 512,
                 (unsigned long long)md_sb_ppl_size(&sb) * 512);
        CHECK(uraid_inject(a, p, spec) == 0, "inject %s on slot %d", spec, p);
        struct fx_async_write wa, wb;
        rng_fill(&rng, f.model + x * f.stripe_bytes, 2 * f.stripe_bytes);
        fx_write_start(&wa, &f, a, x * f.stripe_bytes, f.stripe_bytes);
        CHECK(wait_for(&a->ppl->units_logged, 1), "A never began its log writes");
        usleep(2000); /* A's other logs written, the one on slot p held */
        fx_write_start(&wb, &f, a, (x + 1) * f.stripe_bytes, f.stripe_bytes);
        int waited = 0;
        for (int i = 0; i < 100000 && !(waited = __atomic_load_n(&a->ppl->waiting, __ATOMIC_ACQUIRE)); i++)
            usleep(100);
        CHECK(waited, "B never waited for A's header");
        CHECK(uraid_inject(a, p, "clear") == 0);
        int a_rc = fx_write_join(&wa), b_rc = fx_write_join(&wb);
        CHECK(a_rc == 0 && b_rc == 0, "writes A %d, B %d", a_rc, b_rc);
        uint64_t logged = a->ppl->units_logged, covered = a->ppl->units_covered, after = a->ppl->units_waited;
        printf("  units logged %llu, covered %llu (after waiting %llu)\n", (unsigned long long)logged,
               (unsigned long long)covered, (unsigned long long)after);
        CHECK(logged == 1 && covered == 1 && after == 1, "logged %llu, covered %llu, after waiting %llu: want 1, 1, 1",
              (unsigned long long)logged, (unsigned long long)covered, (unsigned long long)after);
    }
    ppl_array_done(&f, a);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "ppl_linger");
    rng_seed(&rng, harness_seed());
    fx_log_from_env();
    test_unkept_neighbour();
    test_ahead_room();
    test_coming();
    return harness_finish();
}
