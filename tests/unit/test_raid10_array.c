/* RAID-10 arrays through the library, with threads (run it under ASan and
 * TSan too): for n2 x3, f2 x4, o2 x3, n3 x4 and f3 x3, every member behind
 * a fault layer:
 *   - random writes over the whole array read back equal to a model;
 *   - pending sectors on slot 0 (reads fail until written) are served by
 *     another copy and the copy rewritten (corrected reads counted);
 *   - slot 1 vanishes under a write: the array goes on degraded and reads
 *     the same;
 *   - a spare is added and rebuilt while two threads write their own thirds
 *     of the array and a third thread reads the last third and compares;
 *   - a check after it finds no mismatch; the model equals the array;
 *   - reopened without the rebuilt slot's neighbours where the layout
 *     allows it, the rebuilt copy serves the same bytes.
 * Random data and offsets print their seed (URAID_TEST_SEED=N replays).
 * The rebuild's checkpoint moving up chunk by chunk under the chunk's
 * locks is what keeps a writer from skipping a copy the rebuild already
 * passed (without it f2 and f3 arrays lose writes here). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "uraid.h"

#define MEMBER_BYTES (12u << 20)
#define MAXN 4

struct shape {
    const char *name;
    int layout, n;
    uint32_t chunk;
    int gone[2]; /* the slots to drop at the end beside slot 1's partners, -1 = none */
};

struct ctx {
    char dir[128], path[MAXN + 1][200];
    const char *paths[MAXN + 1];
    struct uraid_array *a;
    uint8_t *model;
    uint64_t size;
};

struct worker {
    struct ctx *c;
    uint64_t lo, hi;
    struct rng r;
    int writes, rc;
    int *stop; /* atomic */
};

static int make_member(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    int rc = ftruncate(fileno(f), MEMBER_BYTES) ? -errno : 0;
    fclose(f);
    return rc;
}

static int open_array(struct ctx *c, const int *skip, int n)
{
    const char *paths[MAXN + 1], *sims[MAXN + 1];
    int k = 0;
    for (int s = 0; s <= n; s++)
        if (!skip[s] && c->paths[s]) {
            paths[k] = c->paths[s];
            sims[k++] = "latency=0us";
        }
    struct uraid_open_params op = {.member_sim = sims};
    char why[400] = "";
    int rc = uraid_open(paths, k, &op, &c->a, why, sizeof why);
    CHECK(rc == 0, "open: %s", why);
    return rc;
}

static void rand_write(struct ctx *c, struct rng *r, uint64_t lo, uint64_t hi, int *rc)
{
    uint64_t span = (hi - lo) / 512;
    uint64_t off = lo + rng_next(r) % span * 512;
    uint64_t len = (1 + rng_next(r) % 256) * 512;
    if (off + len > hi)
        len = hi - off;
    static __thread uint8_t buf[256 * 512];
    rng_fill(r, buf, len);
    int w = uraid_write(c->a, buf, len, off);
    if (w == 0)
        memcpy(c->model + off, buf, len);
    else if (!*rc)
        *rc = w;
}

static void *writer(void *arg)
{
    struct worker *w = arg;
    while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE) && w->rc == 0) {
        rand_write(w->c, &w->r, w->lo, w->hi, &w->rc);
        w->writes++;
    }
    return NULL;
}

static void *reader(void *arg)
{
    struct worker *w = arg;
    static __thread uint8_t buf[1 << 20];
    while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE) && w->rc == 0) {
        uint64_t off = w->lo + rng_next(&w->r) % ((w->hi - w->lo) / 4096) * 4096;
        uint64_t len = w->hi - off < sizeof buf ? w->hi - off : sizeof buf;
        int rc = uraid_read(w->c->a, buf, len, off);
        if (rc || memcmp(buf, w->c->model + off, len))
            w->rc = rc ? rc : -EILSEQ;
        w->writes++;
    }
    return NULL;
}

static int verify(struct ctx *c, const char *what)
{
    uint8_t *buf = malloc(c->size);
    int rc = buf ? uraid_read(c->a, buf, c->size, 0) : -ENOMEM;
    CHECK(rc == 0, "%s: read %d", what, rc);
    int same = rc == 0 && !memcmp(buf, c->model, c->size);
    CHECK(same, "%s: the array differs from the model", what);
    free(buf);
    return same ? 0 : -EILSEQ;
}

static int wait_job(struct ctx *c, const char *what, struct uraid_job_status *st)
{
    int rc = uraid_job_wait(c->a, st);
    CHECK(rc == 0 && st->result == 0, "%s: job %d (%s)", what, rc ? rc : st->result, st->why);
    return rc ? rc : st->result;
}

static void run_shape(const struct shape *sh, struct rng *r)
{
    struct ctx c = {0};
    snprintf(c.dir, sizeof c.dir, "/tmp/uraid-r10a-XXXXXX");
    harness_beginf("%s: writes, read errors, a lost member, a rebuild under writers, check", sh->name);
    CHECK(mkdtemp(c.dir) != NULL);
    char dir[sizeof c.dir]; /* a copy: gcc -O1 cannot tell c.dir and c.path[] apart (-Wrestrict) */
    memcpy(dir, c.dir, sizeof dir);
    for (int s = 0; s <= sh->n; s++) {
        snprintf(c.path[s], sizeof c.path[s], "%s/m%d.img", dir, s);
        c.paths[s] = c.path[s];
        CHECK(make_member(c.path[s]) == 0);
    }
    struct uraid_create_params cp = {.level = 10, .raid_devices = sh->n, .chunk_bytes = sh->chunk,
                                      .layout = sh->layout, .assume_clean = 1, .bitmap = URAID_BITMAP_NONE};
    char why[400] = "";
    int rc = uraid_create(c.paths, sh->n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    int skip[MAXN + 1] = {0};
    skip[sh->n] = 1; /* the spare, added later */
    if (rc == 0)
        rc = open_array(&c, skip, sh->n);
    if (rc) {
        harness_end();
        return;
    }
    c.size = uraid_size(c.a);
    c.model = calloc(1, c.size);
    int wrc = 0;
    for (int i = 0; i < 300 && wrc == 0; i++)
        rand_write(&c, r, 0, c.size, &wrc);
    CHECK(wrc == 0, "writes: %d", wrc);
    verify(&c, "after the writes");

    /* read errors on slot 0 over its first MiB of data: other copies serve */
    struct uraid_counters before, after;
    uraid_get_counters(c.a, &before);
    char spec[96];
    snprintf(spec, sizeof spec, "pending=%u+%u", 1u << 20, 1u << 20); /* reads fail until rewritten */
    CHECK(uraid_inject(c.a, 0, spec) == 0);
    verify(&c, "with read errors on slot 0");
    uraid_get_counters(c.a, &after);
    CHECK(after.corrected_reads > before.corrected_reads, "no corrected read counted");

    /* slot 1 vanishes: the next writes fail it */
    CHECK(uraid_inject(c.a, 1, "vanish") == 0);
    for (int i = 0; i < 50 && wrc == 0; i++)
        rand_write(&c, r, 0, c.size, &wrc);
    CHECK(wrc == 0, "degraded writes: %d", wrc);
    struct uraid_array_info info;
    CHECK(uraid_get_info(c.a, &info) == 0 && info.degraded, "slot 1 not failed");
    verify(&c, "degraded");

    /* a spare, rebuilt while two writers and a reader run */
    CHECK(uraid_add_spare(c.a, c.path[sh->n], why, sizeof why) == 0, "add: %s", why);
    /* no floor under the writers' load: the rebuild runs at full speed */
    struct uraid_job_params jp = {.slot = -1, .speed_min_kib = 1u << 30};
    rc = uraid_job_start(c.a, URAID_JOB_RECOVER, &jp, why, sizeof why);
    CHECK(rc == 0, "recover: %s", why);
    int stop = 0;
    uint64_t third = c.size / 3 / 4096 * 4096;
    struct worker w[3] = {
        {.c = &c, .lo = 0, .hi = third, .r = {rng_next(r) | 1}, .stop = &stop},
        {.c = &c, .lo = third, .hi = 2 * third, .r = {rng_next(r) | 1}, .stop = &stop},
        {.c = &c, .lo = 2 * third, .hi = c.size, .r = {rng_next(r) | 1}, .stop = &stop},
    };
    pthread_t th[3];
    pthread_create(&th[0], NULL, writer, &w[0]);
    pthread_create(&th[1], NULL, writer, &w[1]);
    pthread_create(&th[2], NULL, reader, &w[2]);
    struct uraid_job_status st;
    if (rc == 0)
        wait_job(&c, "recovery", &st);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK(w[0].rc == 0 && w[1].rc == 0 && w[2].rc == 0, "workers: %d %d %d", w[0].rc, w[1].rc, w[2].rc);
    CHECK(w[0].writes > 0 && w[2].writes > 0, "the workers ran during the rebuild");
    verify(&c, "after the rebuild");
    rc = uraid_job_start(c.a, URAID_JOB_CHECK, NULL, why, sizeof why);
    CHECK(rc == 0, "check: %s", why);
    if (rc == 0 && wait_job(&c, "check", &st) == 0)
        CHECK(st.mismatch_sectors == 0, "check found %llu mismatched sectors",
              (unsigned long long)st.mismatch_sectors);
    CHECK(uraid_close(c.a) == 0);

    /* the rebuilt member (the spare, in slot 1) with slot 1's partners gone */
    memset(skip, 0, sizeof skip);
    skip[1] = 1;
    for (int i = 0; i < 2; i++)
        if (sh->gone[i] >= 0)
            skip[sh->gone[i]] = 1;
    if (open_array(&c, skip, sh->n) == 0) {
        verify(&c, "from the rebuilt copy");
        uraid_close(c.a);
    }
    for (int s = 0; s <= sh->n; s++)
        unlink(c.path[s]);
    rmdir(c.dir);
    free(c.model);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "raid10_array");
    struct rng r;
    rng_seed(&r, harness_seed());
    /* gone: members dropped at the end beside the old slot 1, as many as
     * md's enough() allows, so the rebuilt copy must serve */
    static const struct shape shapes[] = {
        {"n2 x3, 4K chunks", 0x102, 3, 4096, {0, -1}},
        {"f2 x4, 64K chunks", 0x201, 4, 65536, {0, 2}},
        {"o2 x3, 4K chunks", 0x10201, 3, 4096, {2, -1}},
        {"n3 x4, 64K chunks", 0x103, 4, 65536, {0, 2}},
        {"f3 x3, 4K chunks", 0x301, 3, 4096, {0, 2}},
    };
    /* URAID_TEST_QUICK (the sanitizer runs): the first three shapes */
    size_t count = getenv("URAID_TEST_QUICK") ? 3 : sizeof shapes / sizeof shapes[0];
    for (size_t i = 0; i < count; i++)
        run_shape(&shapes[i], &r);
    return harness_finish();
}
