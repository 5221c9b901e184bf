/* md's chain of PPL headers across the area's restarts: after writes of
 * every shape from several threads (a stream of whole stripes, whose
 * entries linger and are logged ahead, beside 4 KiB and partial-stripe
 * writes with partial parity) have filled each member's log area several
 * times over, md's recovery walk (ppl_load_distributed: from the area's
 * start, next header at this one + 4 KiB + its entries' pp_size, while the
 * checksum, the signature and a rising generation hold, reading only where
 * a header fits before the area's last 4 KiB) must reach the newest header
 * the area holds: a header whose length did not match its entries would
 * end md's walk early, and md would replay a stale header. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_fixture.h"
#include "harness.h"
#include "meta/ppl.h"
#include "meta/superblock.h"
#include "uraid.h"

#define MEMBER_BYTES (6u << 20)
#define CHUNK (16u << 10)
#define THREADS 3

static struct rng rng;

struct thr {
    struct fx *f;
    struct uraid_array *a;
    int id, iters, err;
    uint64_t seed;
};

/* Thread 0 streams whole stripes, two per write, through the first half
 * of the array, again and again; the others write 4 KiB and partial
 * stripes at random in every (THREADS-1)-th stripe of the second half. */
static void *thr_main(void *arg)
{
    struct thr *t = arg;
    struct fx *f = t->f;
    struct rng r;
    rng_seed(&r, t->seed);
    uint64_t nstripes = f->size / f->stripe_bytes, half = nstripes / 2, next = 0;
    for (int i = 0; i < t->iters && !t->err; i++) {
        uint64_t off, len;
        if (t->id == 0) {
            if (next + 2 > half)
                next = 0;
            off = next * f->stripe_bytes;
            len = 2 * f->stripe_bytes;
            next += 2;
        } else {
            uint64_t per = (nstripes - half) / (THREADS - 1);
            uint64_t s = half + rng_below(&r, per) * (THREADS - 1) + (uint64_t)(t->id - 1);
            uint64_t b0 = rng_below(&r, f->stripe_bytes / 4096);
            uint64_t nb = rng_below(&r, 2) ? 1 : 1 + rng_below(&r, f->stripe_bytes / 4096 - b0);
            off = s * f->stripe_bytes + b0 * 4096;
            len = nb * 4096;
        }
        rng_fill(&r, f->model + off, len);
        t->err = uraid_write(t->a, f->model + off, len, off);
    }
    return NULL;
}

/* md's walk of slot s's area (in *area, `bytes` long): the newest header's
 * generation; and, scanning every sector, the highest generation of any
 * sound header and whether one lies at the start with generation > 0 (the
 * chain restarted there). */
static int walk(struct fx *f, int s, uint64_t *md_newest, uint64_t *any_newest, int *restarted, int *chain)
{
    struct md_sb sb;
    if (fx_read_sb(f, s, &sb) || !md_sb_has_ppl(&sb))
        return -EINVAL;
    uint64_t size = md_sb_ppl_size(&sb), bytes = size * 512;
    uint8_t *area = malloc(bytes);
    struct ppl_header *h = malloc(sizeof *h);
    FILE *fp = fopen(f->path[s], "rb");
    int rc = area && h && fp && fseek(fp, (long)md_sb_ppl_sector(&sb) * 512, SEEK_SET) == 0 &&
                     fread(area, 1, bytes, fp) == bytes
                 ? 0
                 : -EIO;
    if (fp)
        fclose(fp);
    uint32_t sig = ppl_signature(sb.set_uuid);
    uint64_t prev = 0;
    int have = 0;
    *chain = 0;
    for (uint64_t at = 0; rc == 0 && at < size - PPL_HEADER_BYTES / 512;) {
        if (ppl_header_decode(area + at * 512, h, NULL, 0) || h->signature != sig || (have && prev > h->generation))
            break;
        prev = h->generation;
        have = 1;
        (*chain)++;
        at += PPL_HEADER_BYTES / 512;
        for (uint32_t e = 0; e < h->entries_count; e++)
            at += h->entry[e].pp_size / 512;
    }
    *md_newest = prev;
    *any_newest = 0;
    *restarted = 0;
    for (uint64_t at = 0; rc == 0 && at + PPL_HEADER_BYTES <= bytes; at += 512)
        if (ppl_header_decode(area + at, h, NULL, 0) == 0 && h->signature == sig) {
            *any_newest = h->generation > *any_newest ? h->generation : *any_newest;
            *restarted |= at == 0 && h->generation > 0;
        }
    free(area);
    free(h);
    return rc;
}

static void test_chain(int level, int n)
{
    harness_beginf("RAID-%d ppl, %d members: md's walk of each log reaches its newest header after the area "
                   "restarted", level, n);
    struct fx f;
    fx_policy = URAID_POLICY_PPL;
    struct uraid_array *a;
    if (fx_setup(&f, level, n, CHUNK, MEMBER_BYTES, &rng, 0, &a))
        goto out;
    struct thr t[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        t[i] = (struct thr){.f = &f, .a = a, .id = i, .iters = 700, .seed = rng_next(&rng)};
        pthread_create(&th[i], NULL, thr_main, &t[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK(t[i].err == 0, "thread %d: write failed %d", i, t[i].err);
    }
    int restarts = 0;
    for (int s = 0; s < n; s++) {
        uint64_t md_newest, any_newest;
        int restarted, chain;
        CHECK(walk(&f, s, &md_newest, &any_newest, &restarted, &chain) == 0, "slot %d: cannot read its area", s);
        printf("  slot %d: md's walk %d headers, newest generation %llu; the area's newest %llu%s\n", s, chain,
               (unsigned long long)md_newest, (unsigned long long)any_newest, restarted ? " (restarted)" : "");
        CHECK(md_newest == any_newest, "slot %d: md's walk ends at generation %llu, the area holds %llu", s,
              (unsigned long long)md_newest, (unsigned long long)any_newest);
        restarts += restarted;
    }
    CHECK(restarts == n, "only %d of %d logs restarted at the area's start: the test did not reach the case", restarts,
          n);
    fx_verify_all(&f, a, "after the writes");
    CHECK(uraid_close(a) == 0);
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_ppl_chain");
    rng_seed(&rng, harness_seed());
    fx_log_from_env();
    test_chain(5, 4);
    test_chain(6, 5);
    return harness_finish();
}
