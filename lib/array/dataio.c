/* Member I/O for the data path and background work: batches counted in
 * the array's counters and handed to the I/O engine (with a replace's
 * mirrored writes added), and per-thread scratch buffers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array/dataio.h"

/* ---- per-thread scratch memory: no allocation on the I/O path once warm --- */

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

/* Two per-thread areas: member buffers, and the write planner's stripe
 * descriptors (large: one stripe map each). Both grow, never shrink. */
enum { SCRATCH_BUFFERS = 0, SCRATCH_PLANS = 1, SCRATCH_AREAS = 2 };

struct scratch {
    size_t size[SCRATCH_AREAS];
    uint8_t *mem[SCRATCH_AREAS];
};

static void scratch_free(void *p)
{
    struct scratch *s = p;
    for (int i = 0; i < SCRATCH_AREAS; i++)
        free(s->mem[i]);
    free(s);
}

static void scratch_key_init(void) { pthread_key_create(&scratch_key, scratch_free); }

static uint8_t *scratch_area(int area, size_t size)
{
    pthread_once(&scratch_once, scratch_key_init);
    struct scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            return NULL;
        pthread_setspecific(scratch_key, s);
    }
    if (s->size[area] < size) {
        free(s->mem[area]);
        s->mem[area] = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
        s->size[area] = s->mem[area] ? size : 0;
    }
    return s->mem[area];
}

uint8_t *array_scratch(size_t size) { return scratch_area(SCRATCH_BUFFERS, size); }

uint8_t *array_scratch_plans(size_t size) { return scratch_area(SCRATCH_PLANS, size); }

/* ---- counters and member I/O -------------------------------------------------- */

static void count_ops(struct uraid_array *a, const struct io_op *ops, int n)
{
    for (int i = 0; i < n; i++) {
        if (ops[i].kind == IO_READ) {
            __atomic_add_fetch(&a->counters.member_reads, 1, __ATOMIC_RELAXED);
            __atomic_add_fetch(&a->counters.member_read_bytes, ops[i].len, __ATOMIC_RELAXED);
        } else {
            __atomic_add_fetch(&a->counters.member_writes, 1, __ATOMIC_RELAXED);
            __atomic_add_fetch(&a->counters.member_write_bytes, ops[i].len, __ATOMIC_RELAXED);
        }
    }
}

/* While a replace runs, writes to its source member below the copy's
 * checkpoint also go to the replacement (stripe locks keep the checkpoint
 * from moving under a writer). Returns the count of mirrored ops added. */
static int mirror_for_replace(struct uraid_array *a, struct io_op *ops, int n, struct io_op *extra)
{
    int src = __atomic_load_n(&a->replace_source, __ATOMIC_ACQUIRE), nx = 0;
    if (src < 0)
        return 0;
    const struct array_slot *from = &a->slot[src], *to = &a->replacement;
    uint64_t done = __atomic_load_n(&to->recovered, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        if (ops[i].kind == IO_READ || ops[i].m != from->dev)
            continue;
        uint64_t msec = ops[i].offset / SECTOR - from->data_offset;
        if (msec >= done)
            continue;
        /* the part below the checkpoint (a RAID-1 write may straddle it;
         * the writer's locks keep it from moving) */
        extra[nx] = ops[i];
        extra[nx].m = to->dev;
        extra[nx].offset = (to->data_offset + msec) * SECTOR;
        if (msec + ops[i].len / SECTOR > done)
            extra[nx].len = (size_t)(done - msec) * SECTOR;
        nx++;
    }
    return nx;
}

void array_run_ops(struct uraid_array *a, struct io_op *ops, int n)
{
    if (n == 0)
        return;
    count_ops(a, ops, n);
    if (__atomic_load_n(&a->replace_source, __ATOMIC_ACQUIRE) < 0) {
        io_engine_run(a->io, ops, n);
        return;
    }
    struct io_op *all = malloc(sizeof *all * (size_t)n * 2);
    if (!all) {
        __atomic_store_n(&a->replacement_failed, 1, __ATOMIC_RELEASE);
        io_engine_run(a->io, ops, n);
        return;
    }
    memcpy(all, ops, sizeof *all * (size_t)n);
    int nx = mirror_for_replace(a, ops, n, all + n);
    io_engine_run(a->io, all, n + nx);
    memcpy(ops, all, sizeof *all * (size_t)n);
    for (int i = 0; i < nx; i++)
        if (all[n + i].result)
            __atomic_store_n(&a->replacement_failed, 1, __ATOMIC_RELEASE);
    free(all);
}

struct io_op array_op(struct uraid_array *a, int m, enum io_kind kind, void *buf, uint32_t nsec,
                      uint64_t member_sector)
{
    struct io_op op = {
        .m = __atomic_load_n(&a->slot[m].dev, __ATOMIC_ACQUIRE),
        .kind = kind,
        .buf = buf,
        .len = (size_t)nsec * SECTOR,
        .offset = (__atomic_load_n(&a->slot[m].data_offset, __ATOMIC_RELAXED) + member_sector) * SECTOR,
    };
    return op;
}


int array_map(const struct uraid_array *a, uint64_t sector, struct layout_addr *ad)
{
    if (!a->r0)
        return layout_map(&a->geom, sector, ad);
    struct raid0_addr z;
    int rc = raid0_map(a->r0, sector, &z);
    if (rc)
        return rc;
    *ad = (struct layout_addr){
        .array_sector = sector,
        .stripe = z.member_sector / a->geom.chunk_sectors,
        .d = z.slot,
        .disk = z.slot,
        .role = LAYOUT_ROLE_DATA,
        .chunk_off = z.chunk_off,
        .member_sector = z.member_sector,
    };
    return 0;
}
