/* uraid_grow_size_online (mdadm --grow --size on a running array) with
 * requests in flight: members replaced by bigger ones (random bytes past
 * the old end), the array open, writer threads writing and reading back
 * their own slices of the old region while the main thread grows it; a
 * thread waits for the new size and writes into the new region. Then:
 * every thread's bytes as written, the new size, the new region's resync
 * job (URAID_JOB_RESYNC) run to its end, a check finds mismatch_cnt 0, the
 * superblocks say the new size and clean after the close, a reopen reads
 * the same. Refusals (too big, a job running, the same size again) change
 * nothing. RAID-5, RAID-6, RAID-1, and RAID-5 with a write-intent bitmap
 * whose chunk must double (wib_resize under the writers). Run under ASan
 * and TSan too (the Makefile's san and tsan builds). Seeded (printed by
 * the harness). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_fixture.h"
#include "harness.h"
#include "uraid_grow.h"

#define RAID_CHUNK (64u << 10)
#define MEMBER_BYTES (8u << 20)
#define GROW_BYTES (4u << 20)
#define WRITERS 3

struct writer {
    pthread_t t;
    struct fx *f;
    struct uraid_array *a;
    uint64_t lo, hi;          /* its slice of the old region (bytes) */
    uint32_t seed;
    int writes, bad;
    const int *stop;
};

/* A slice of the array no other thread writes: fx_write keeps the model. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    uint8_t *buf = aligned_alloc(4096, 64 << 10), *back = aligned_alloc(4096, 64 << 10);
    uint32_t x = w->seed;
    while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE) || w->writes < 8) {
        x = x * 1103515245u + 12345u;
        size_t len = (size_t)(1 + (x >> 8) % 16) * 4096;
        uint64_t off = w->lo + (uint64_t)((x >> 4) % ((w->hi - w->lo - len) / 4096 + 1)) * 4096;
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)(x >> (i % 24));
        if (fx_write(w->f, w->a, buf, len, off) || uraid_read(w->a, back, len, off) ||
            memcmp(back, w->f->model + off, len))
            w->bad++;
        w->writes++;
    }
    free(buf);
    free(back);
    return NULL;
}

struct tail_writer {
    pthread_t t;
    struct uraid_array *a;
    uint64_t old_size;
    uint8_t *data;            /* what it wrote past the old end */
    size_t len;
    int rc, waited;
    const int *stop;
};

/* Waits for the new size, then writes past the old end (the new region,
 * while its resync runs) and reads it back. */
static void *tail_main(void *arg)
{
    struct tail_writer *tw = arg;
    while (uraid_size(tw->a) <= tw->old_size && !__atomic_load_n(tw->stop, __ATOMIC_ACQUIRE))
        tw->waited++;
    if (uraid_size(tw->a) <= tw->old_size) {
        tw->rc = -ENOSPC;
        return NULL;
    }
    uint8_t *back = aligned_alloc(4096, tw->len);
    tw->rc = uraid_write(tw->a, tw->data, tw->len, tw->old_size + 8192);
    if (tw->rc == 0)
        tw->rc = uraid_read(tw->a, back, tw->len, tw->old_size + 8192);
    if (tw->rc == 0 && memcmp(back, tw->data, tw->len))
        tw->rc = -EILSEQ;
    free(back);
    return NULL;
}

static void grow_members(struct fx *f, struct rng *r)
{
    uint8_t *junk = malloc(1 << 20);
    for (int s = 0; s < f->n; s++) {
        FILE *fp = fopen(f->path[s], "a");
        for (unsigned i = 0; fp && i < GROW_BYTES >> 20; i++) {
            rng_fill(r, junk, 1 << 20);
            fwrite(junk, 1, 1 << 20, fp);
        }
        CHECK(fp && fclose(fp) == 0, "%s: slot %d: grow the member file", f->label, s);
    }
    free(junk);
}

/* Refusals while the array serves: nothing changes (size, superblocks). */
static void refusals(struct fx *f, struct uraid_array *a)
{
    struct md_sb before, after;
    char why[300] = "";
    fx_read_sb(f, 0, &before);
    int rc = uraid_grow_size_online(a, (uint64_t)(MEMBER_BYTES + GROW_BYTES) / 512 * 2, NULL, why, sizeof why);
    fx_read_sb(f, 0, &after);
    CHECK(rc == -ENOSPC && uraid_size(a) == f->size && !memcmp(&before, &after, sizeof before),
          "%s: a size past the members' room: rc %d (%s), size %llu", f->label, rc, why,
          (unsigned long long)uraid_size(a));
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "%s: start a check: %s", f->label, why);
    rc = uraid_grow_size_online(a, 0, NULL, why, sizeof why);
    fx_read_sb(f, 0, &after);
    CHECK(rc == -EBUSY && uraid_size(a) == f->size && !memcmp(&before, &after, sizeof before),
          "%s: a check running: rc %d (%s)", f->label, rc, why);
    uraid_job_cancel(a);
    struct uraid_job_status st;
    uraid_job_wait(a, &st);
}

static void test_online(int level, int n, uint64_t bitmap_chunk, struct rng *r)
{
    harness_beginf("RAID-%d n=%d%s: grow --size max online, %d writers and a tail writer", level, n,
                   bitmap_chunk ? " with a 4 KiB-chunk bitmap" : "", WRITERS);
    struct fx f;
    if (fx_create_bitmap(&f, level, n, RAID_CHUNK, MEMBER_BYTES, bitmap_chunk))
        goto out;
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    fx_fill(&f, a, r);
    CHECK(uraid_close(a) == 0);
    grow_members(&f, r);
    if (!(a = fx_open(&f, NULL, 0, 0)))
        goto out;
    refusals(&f, a);
    int stop = 0;
    struct writer w[WRITERS];
    uint64_t slice = f.size / WRITERS / 4096 * 4096;
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (struct writer){.f = &f, .a = a, .lo = slice * (uint64_t)i, .hi = slice * (uint64_t)(i + 1),
                               .seed = (uint32_t)rng_next(r), .stop = &stop};
        pthread_create(&w[i].t, NULL, writer_main, &w[i]);
    }
    struct tail_writer tw = {.a = a, .old_size = f.size, .len = 256 << 10, .stop = &stop};
    tw.data = aligned_alloc(4096, tw.len);
    rng_fill(r, tw.data, tw.len);
    pthread_create(&tw.t, NULL, tail_main, &tw);
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
    char why[300] = "";
    uint64_t from = 0;
    int rc = uraid_grow_size_online(a, 0, &from, why, sizeof why);
    CHECK(rc == 0, "%s: grow --size max online: %d %s", f.label, rc, why);
    uint64_t grown = uraid_size(a);
    rc = uraid_grow_size_online(a, 0, NULL, why, sizeof why);
    CHECK(rc == -EBUSY || rc == -EALREADY, "%s: the same again (its resync running, or ended): %d %s", f.label, rc,
          why);
    struct uraid_job_status st;
    uraid_job_wait(a, &st);
    CHECK(st.kind == URAID_JOB_RESYNC && st.result == 0, "%s: the new region's resync: kind %d result %d %s", f.label,
          st.kind, st.result, st.why);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    int writes = 0;
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(w[i].t, NULL);
        CHECK(w[i].bad == 0, "%s: writer %d: %d of %d writes did not read back", f.label, i, w[i].bad, w[i].writes);
        writes += w[i].writes;
    }
    pthread_join(tw.t, NULL);
    printf("  %d writes by the writers while the array grew and resynced, array %llu -> %llu bytes\n", writes,
           (unsigned long long)(from * 512), (unsigned long long)grown);
    CHECK(from * 512 == f.size && grown > f.size, "%s: size %llu -> %llu", f.label, (unsigned long long)(from * 512),
          (unsigned long long)grown);
    CHECK(tw.rc == 0, "%s: the write into the new region: %d", f.label, tw.rc);
    fx_verify(&f, a, 0, f.size, "the old region after the grow");
    struct uraid_job_status cs;
    fx_job(&f, a, URAID_JOB_CHECK, NULL, &cs);
    CHECK(cs.mismatch_sectors == 0, "%s: mismatch_cnt %llu after the new region's resync", f.label,
          (unsigned long long)cs.mismatch_sectors);
    CHECK(uraid_close(a) == 0);
    struct md_sb sb;
    for (int s = 0; s < n; s++) {
        fx_read_sb(&f, s, &sb);
        CHECK(sb.resync_offset == MD_RESYNC_CLEAN && (level == 1 ? sb.size * 512 == grown : sb.size > MEMBER_BYTES / 512),
              "%s: slot %d: size %llu, resync_offset %llx after the close", f.label, s, (unsigned long long)sb.size,
              (unsigned long long)sb.resync_offset);
    }
    const char *paths[FX_MAXM];
    for (int s = 0; s < n; s++)
        paths[s] = f.path[s];
    a = NULL;
    CHECK(uraid_open(paths, n, NULL, &a, why, sizeof why) == 0, "%s: reopen: %s", f.label, why);
    if (!a)
        goto out;
    CHECK(uraid_size(a) == grown, "%s: reopened at %llu bytes", f.label, (unsigned long long)uraid_size(a));
    fx_verify(&f, a, 0, f.size, "the old region after a reopen");
    uint8_t *back = aligned_alloc(4096, tw.len);
    CHECK(uraid_read(a, back, tw.len, tw.old_size + 8192) == 0 && !memcmp(back, tw.data, tw.len),
          "%s: the new region's write after a reopen", f.label);
    free(back);
    CHECK(uraid_close(a) == 0);
    free(tw.data);
out:
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    fx_log_from_env();
    harness_init(argc, argv, "test_grow_size_online");
    struct rng r;
    rng_seed(&r, harness_seed());
    test_online(5, 4, 0, &r);
    test_online(6, 5, 0, &r);
    test_online(1, 2, 0, &r);
    test_online(5, 4, 4096, &r);
    return harness_finish();
}
