/* The PPL's member flushes (ppl_int.h): run at once, and counted, so that
 * a header need not flush again a member whose writes a flush started
 * since (another unit's log flush, most often) has made durable. */
#include <errno.h>
#include <stdlib.h>

#include "array/dataio.h"
#include "log.h"
#include "stripe/ppl_int.h"

uint64_t ppl_flush_mark(const struct ppl_log *L, int s)
{
    return __atomic_load_n(&L->flush_started[s], __ATOMIC_ACQUIRE) + 1;
}

uint64_t ppl_flush_todo(const struct ppl_log *L, const struct ppl_member *m)
{
    uint64_t todo = 0;
    for (int s = 0; s < PPL_MAX_SLOTS; s++)
        if ((m->unflushed >> s & 1) && __atomic_load_n(&L->flushed[s], __ATOMIC_ACQUIRE) < m->need[s])
            todo |= 1ull << s;
    return todo;
}

static void note_flushed(struct ppl_log *L, int s, uint64_t n)
{
    uint64_t cur = __atomic_load_n(&L->flushed[s], __ATOMIC_ACQUIRE);
    while (cur < n && !__atomic_compare_exchange_n(&L->flushed[s], &cur, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
}

int ppl_flush(struct uraid_array *a, uint64_t mask, int *res)
{
    struct ppl_log *L = a->ppl;
    struct io_op ops[PPL_MAX_SLOTS];
    int slot[PPL_MAX_SLOTS];
    uint64_t num[PPL_MAX_SLOTS];
    int n = 0, rc = 0;
    for (int s = 0; s < PPL_MAX_SLOTS && mask >> s; s++) {
        if (!(mask >> s & 1))
            continue;
        if (res)
            res[s] = 0;
        struct member *dev = __atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE);
        if (!dev || !slot_ok(a, s) || dev->inline_io)
            continue;
        num[n] = __atomic_add_fetch(&L->flush_started[s], 1, __ATOMIC_ACQ_REL);
        slot[n] = s;
        ops[n++] = (struct io_op){.m = dev, .kind = IO_FLUSH};
    }
    if (n == 1)
        ops[0].result = member_flush(ops[0].m);
    else if (n)
        io_engine_run(a->io, ops, n);
    for (int i = 0; i < n; i++) {
        if (ops[i].result == 0)
            note_flushed(L, slot[i], num[i]);
        else if (!rc)
            rc = ops[i].result;
        if (res)
            res[slot[i]] = ops[i].result;
    }
    return rc;
}
