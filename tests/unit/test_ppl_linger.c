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
 * pinned part alone. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/array.h"
#include "harness.h"
#include "stripe/ppl.h"
#include "stripe/ppl_int.h"

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

int main(int argc, char **argv)
{
    harness_init(argc, argv, "ppl_linger");
    test_unkept_neighbour();
    return harness_finish();
}
