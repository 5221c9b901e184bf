#include "array_fixture.h"

#include "array/array.h"
#include "member/member.h"
#include "meta/ppl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "uraid_grow.h"

int fx_policy = URAID_POLICY_RESYNC;
const char *fx_metadata; /* NULL: uraid_create's default (1.2) */

int fx_create(struct fx *f, int level, int n, uint32_t chunk, uint64_t member_bytes)
{
    return fx_create_bitmap(f, level, n, chunk, member_bytes, 0);
}

int fx_create_bitmap(struct fx *f, int level, int n, uint32_t chunk, uint64_t member_bytes, uint64_t bitmap_chunk)
{
    memset(f, 0, sizeof *f);
    f->level = level;
    f->n = n;
    f->chunk = chunk;
    f->member_bytes = member_bytes;
    snprintf(f->label, sizeof f->label, "RAID-%d n=%d chunk=%uK", level, n, chunk / 1024);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/uraid-fx-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) {
        CHECK(0, "mkdtemp %s: %s", f->dir, strerror(errno));
        return -errno;
    }
    const char *paths[FX_MAXM];
    char dir[sizeof f->dir]; /* a copy: gcc -O1 cannot tell f->dir and f->path[] apart (-Wrestrict) */
    memcpy(dir, f->dir, sizeof dir);
    for (int s = 0; s < n; s++) {
        snprintf(f->path[s], sizeof f->path[s], "%s/m%d.img", dir, s);
        paths[s] = f->path[s];
        int rc = fx_file_of_size(f->path[s], member_bytes);
        if (rc) {
            CHECK(0, "member %s: %s", f->path[s], strerror(-rc));
            return rc;
        }
    }
    struct uraid_create_params cp = {.level = level, .raid_devices = n, .chunk_bytes = chunk, .layout = -1,
                                      .assume_clean = 1,
                                      .bitmap = bitmap_chunk ? URAID_BITMAP_INTERNAL : URAID_BITMAP_NONE,
                                      .bitmap_chunk_bytes = bitmap_chunk,
                                      .consistency_policy = bitmap_chunk ? URAID_POLICY_BITMAP : fx_policy,
                                      .metadata = fx_metadata};
    char why[512] = "";
    int rc = uraid_create(paths, n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "%s: create: %d (%s)", f->label, rc, why);
    if (rc)
        return rc;
    struct md_sb sb;
    rc = fx_read_sb(f, 0, &sb);
    if (rc)
        return rc;
    f->data_offset = sb.data_offset * 512;
    f->geom = (struct layout_geom){.level = level, .layout = (int)sb.layout, .raid_disks = n,
                                   .chunk_sectors = sb.chunksize};
    f->k = layout_data_disks(&f->geom);
    f->stripe_bytes = (uint64_t)f->k * chunk;
    uint64_t sectors;
    /* RAID-0 superblocks leave size 0: the members' data size is what counts */
    layout_array_sectors(&f->geom, sb.size ? sb.size : sb.data_size, &sectors);
    if (level == LAYOUT_LEVEL_LINEAR) /* each member's data area, end to end (equal members here) */
        sectors = sb.data_size * (uint64_t)n;
    f->size = sectors * 512;
    f->model = calloc(1, f->size);
    CHECK(f->model != NULL);
    return f->model ? 0 : -ENOMEM;
}

int fx_setup(struct fx *f, int level, int n, uint32_t chunk, uint64_t member_bytes, struct rng *r, int sim,
             struct uraid_array **a)
{
    int rc = fx_create(f, level, n, chunk, member_bytes);
    if (rc)
        return rc;
    struct uraid_array *arr = fx_open(f, NULL, sim, 0);
    if (!arr)
        return -EIO;
    if (r)
        fx_fill(f, arr, r);
    if (a) {
        *a = arr;
        return 0;
    }
    rc = uraid_close(arr);
    CHECK(rc == 0, "%s: close after the fill: %d", f->label, rc);
    return rc;
}

int fx_open_with(struct fx *f, unsigned omit, const char *spec, const char *const *extra, int nextra,
                 struct uraid_open_params *op, struct uraid_array **a)
{
    const char *paths[FX_MAXM * 2], *specs[FX_MAXM * 2];
    int np = 0;
    for (int s = 0; s < f->n; s++)
        if (!(omit & FX_SLOT(s)))
            paths[np++] = f->path[s];
    for (int i = 0; i < nextra && np < FX_MAXM * 2; i++)
        paths[np++] = extra[i];
    for (int i = 0; i < np; i++)
        specs[i] = spec;
    struct uraid_open_params none = {0};
    if (!op)
        op = &none;
    op->member_sim = spec ? specs : NULL;
    char why[512] = "";
    *a = NULL;
    int rc = uraid_open(paths, np, op, a, why, sizeof why);
    op->member_sim = NULL; /* specs[] ends here */
    CHECK(rc == 0, "%s: open with %d members: %d (%s)", f->label, np, rc, why);
    if (rc == 0)
        CHECK(uraid_size(*a) == f->size, "%s: size %llu, expected %llu", f->label, (unsigned long long)uraid_size(*a),
              (unsigned long long)f->size);
    return rc;
}

struct uraid_array *fx_open(struct fx *f, const int *omit, int sim, int force)
{
    unsigned mask = 0;
    for (int s = 0; omit && s < f->n; s++)
        if (omit[s])
            mask |= FX_SLOT(s);
    struct uraid_open_params op = {.force = force};
    struct uraid_array *a;
    return fx_open_with(f, mask, sim ? "" : NULL, NULL, 0, &op, &a) ? NULL : a;
}

void fx_adopt(struct fx *f, int slot, const char *path)
{
    snprintf(f->path[slot], sizeof f->path[slot], "%s", path);
}

void fx_verify_omitting(struct fx *f, unsigned omit, int force, const char *what)
{
    struct uraid_open_params op = {.force = force};
    struct uraid_array *a;
    if (fx_open_with(f, omit, NULL, NULL, 0, &op, &a))
        return;
    fx_verify_all(f, a, what);
    CHECK(uraid_close(a) == 0, "%s: %s: close", f->label, what);
}

void fx_verify_without_others(struct fx *f, int slot, int count, const char *what)
{
    unsigned omit = 0;
    for (int s = 0; s < f->n && count; s++)
        if (s != slot) {
            omit |= FX_SLOT(s);
            count--;
        }
    fx_verify_omitting(f, omit, 0, what);
}

int fx_add_spare(struct fx *f, struct uraid_array *a, const char *path)
{
    char why[256] = "";
    int rc = uraid_add_spare(a, path, why, sizeof why);
    CHECK(rc == 0, "%s: add spare %s: %d (%s)", f->label, path, rc, why);
    return rc;
}

int fx_inject(const struct fx *f, struct uraid_array *a, int slot, const char *kind, uint64_t member_off,
              uint64_t len)
{
    char spec[96];
    snprintf(spec, sizeof spec, "%s=%llu+%llu", kind, (unsigned long long)(f->data_offset + member_off),
             (unsigned long long)len);
    int rc = uraid_inject(a, slot, spec);
    CHECK(rc == 0, "%s: inject '%s' on slot %d: %d", f->label, spec, slot, rc);
    return rc;
}

int fx_job_start(const struct fx *f, struct uraid_array *a, enum uraid_job_kind kind,
                 const struct uraid_job_params *jp)
{
    char why[256] = "";
    int rc = uraid_job_start(a, kind, jp, why, sizeof why);
    CHECK(rc == 0, "%s: start %s: %d (%s)", f->label, uraid_job_name(kind), rc, why);
    return rc;
}

int fx_job_wait(const struct fx *f, struct uraid_array *a, struct uraid_job_status *st)
{
    int rc = uraid_job_wait(a, st);
    CHECK(rc == 0, "%s: %s ended with %d (%s)", f->label, uraid_job_name(st->kind), rc, st->why);
    return rc;
}

int fx_job(const struct fx *f, struct uraid_array *a, enum uraid_job_kind kind, const struct uraid_job_params *jp,
           struct uraid_job_status *st)
{
    int rc = fx_job_start(f, a, kind, jp);
    return rc ? rc : fx_job_wait(f, a, st);
}

struct uraid_counters fx_counters(struct uraid_array *a)
{
    struct uraid_counters c;
    uraid_get_counters(a, &c);
    return c;
}

int fx_write(struct fx *f, struct uraid_array *a, const void *buf, size_t len, uint64_t off)
{
    int rc = uraid_write(a, buf, len, off);
    if (rc == 0)
        memcpy(f->model + off, buf, len);
    return rc;
}

int fx_verify(struct fx *f, struct uraid_array *a, uint64_t off, uint64_t len, const char *what)
{
    uint8_t *buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
    int rc = uraid_read(a, buf, len, off);
    CHECK(rc == 0, "%s: %s: read %llu+%llu: %d", f->label, what, (unsigned long long)off, (unsigned long long)len,
          rc);
    if (rc == 0 && memcmp(buf, f->model + off, len)) {
        uint64_t i = 0;
        while (buf[i] == f->model[off + i])
            i++;
        CHECK(0, "%s: %s: read %llu+%llu differs first at array byte %llu (chunk %llu +%llu)", f->label, what,
              (unsigned long long)off, (unsigned long long)len, (unsigned long long)(off + i),
              (unsigned long long)((off + i) / f->chunk), (unsigned long long)((off + i) % f->chunk));
        rc = -EILSEQ;
    }
    free(buf);
    return rc;
}

void fx_verify_all(struct fx *f, struct uraid_array *a, const char *what)
{
    for (uint64_t off = 0; off < f->size; off += 1u << 20) {
        uint64_t len = f->size - off < (1u << 20) ? f->size - off : 1u << 20;
        if (fx_verify(f, a, off, len, what))
            return;
    }
}

/* len bytes at member byte `at` (from the file's start), read or written. */
static int file_io(const char *path, void *buf, size_t len, uint64_t at, int write)
{
    int fd = open(path, write ? O_WRONLY : O_RDONLY);
    if (fd < 0)
        return -errno;
    ssize_t r = write ? pwrite(fd, buf, len, (off_t)at) : pread(fd, buf, len, (off_t)at);
    close(fd);
    return r == (ssize_t)len ? 0 : -EIO;
}

int fx_member_pread(const struct fx *f, int slot, void *buf, size_t len, uint64_t off)
{
    return file_io(f->path[slot], buf, len, f->data_offset + off, 0);
}

int fx_member_pwrite(const struct fx *f, int slot, const void *buf, size_t len, uint64_t off)
{
    return file_io(f->path[slot], (void *)buf, len, f->data_offset + off, 1);
}

int fx_sb_bytes(const struct fx *f, int slot, uint8_t out[MD_SB_BYTES])
{
    return file_io(f->path[slot], out, MD_SB_BYTES, 4096, 0);
}

int fx_read_sb_path(const char *path, struct md_sb *sb)
{
    struct member *m;
    char why[256];
    int rc = member_open_file(path, 1, &m); /* any format, where it keeps its superblock */
    if (rc == 0) {
        rc = array_read_superblock(m, sb, why, sizeof why);
        member_close(m);
    }
    return rc;
}

int fx_read_sb(const struct fx *f, int slot, struct md_sb *sb)
{
    int rc = fx_read_sb_path(f->path[slot], sb);
    CHECK(rc == 0, "superblock of %s: %d", f->path[slot], rc);
    return rc;
}

static void *async_write_main(void *arg)
{
    struct fx_async_write *w = arg;
    w->rc = fx_write(w->f, w->a, w->f->model + w->off, w->len, w->off);
    return NULL;
}

void fx_write_start(struct fx_async_write *w, struct fx *f, struct uraid_array *a, uint64_t off, uint64_t len)
{
    *w = (struct fx_async_write){.f = f, .a = a, .off = off, .len = len};
    if (pthread_create(&w->t, NULL, async_write_main, w)) {
        CHECK(0, "%s: no thread for a write", f->label);
        w->rc = -EAGAIN;
        w->f = NULL;
    }
}

int fx_write_join(struct fx_async_write *w)
{
    if (w->f)
        pthread_join(w->t, NULL);
    return w->rc;
}

int fx_ppl_lists(const struct fx *f, int slot, uint64_t sector)
{
    struct md_sb sb;
    if (fx_read_sb(f, slot, &sb) || !md_sb_has_ppl(&sb))
        return 0;
    uint64_t bytes = (uint64_t)md_sb_ppl_size(&sb) * 512;
    uint8_t *area = malloc(bytes);
    struct ppl_header *h = malloc(sizeof *h);
    /* the log lies before the data area (1.2): not fx_member_pread's */
    FILE *fp = fopen(f->path[slot], "rb");
    int found = 0;
    if (area && h && fp && fseek(fp, (long)md_sb_ppl_sector(&sb) * 512, SEEK_SET) == 0 &&
        fread(area, 1, bytes, fp) == bytes)
        for (uint64_t at = 0; at + PPL_HEADER_BYTES <= bytes && !found; at += 512)
            if (ppl_header_decode(area + at, h, NULL, 0) == 0)
                for (uint32_t e = 0; e < h->entries_count; e++)
                    found |= h->entry[e].data_sector == sector;
    if (fp)
        fclose(fp);
    free(area);
    free(h);
    return found;
}

void fx_locate(const struct fx *f, uint64_t off, int *slot, uint64_t *member_off)
{
    struct layout_addr ad;
    layout_map(&f->geom, off / 512, &ad);
    *slot = ad.disk;
    *member_off = ad.member_sector * 512 + off % 512;
}

void fx_parity_of(const struct fx *f, uint64_t stripe, int *p, int *q)
{
    static __thread struct stripe_map map;
    layout_stripe(&f->geom, stripe, &map);
    *p = map.p_disk;
    *q = map.q_disk;
}

void fx_destroy(struct fx *f)
{
    for (int s = 0; s < f->n; s++)
        unlink(f->path[s]);
    if (f->dir[0])
        rmdir(f->dir);
    free(f->model);
    f->model = NULL;
}

void fx_fill(struct fx *f, struct uraid_array *a, struct rng *r)
{
    size_t len = 1u << 20;
    uint8_t *buf = aligned_alloc(4096, len);
    for (uint64_t off = 0; off < f->size; off += len) {
        size_t l = f->size - off < len ? (size_t)(f->size - off) : len;
        rng_fill(r, buf, l);
        int rc = fx_write(f, a, buf, l, off);
        CHECK(rc == 0, "%s: fill at %llu: %d", f->label, (unsigned long long)off, rc);
    }
    /* the fill is what later checks take as on the members: the stripes
     * gathering still keeps in memory (stripe/gather.c) go out now */
    int rc = uraid_flush(a);
    CHECK(rc == 0, "%s: flush after the fill: %d", f->label, rc);
    free(buf);
}

int fx_file_of_size(const char *path, uint64_t bytes)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0)
        return -errno;
    int rc = ftruncate(fd, (off_t)bytes) ? -errno : 0;
    close(fd);
    return rc;
}

int fx_make_file(const struct fx *f, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", f->dir, name);
    int rc = fx_file_of_size(out, f->member_bytes);
    CHECK(rc == 0, "cannot create %s: %s", out, strerror(-rc));
    return rc;
}

static void print_log(void *ctx, enum uraid_log_level level, const char *msg)
{
    (void)ctx;
    printf("    log%d: %s\n", level, msg);
}

void fx_log_from_env(void)
{
    const char *v = getenv("URAID_TEST_VERBOSE");
    if (v && *v && strcmp(v, "0"))
        uraid_set_log(print_log, NULL, URAID_LOG_INFO);
}

/* Served-array helpers (see the header): what the grow and takeover tests
 * that serve while the array changes had each written for themselves. */

int fx_tmpdir(char *dir, size_t len, const char *tag)
{
    snprintf(dir, len, "%s/uraid-test-%s.XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm", tag);
    return mkdtemp(dir) ? 0 : -errno;
}

int fx_member_files(const char *dir, char (*path)[FX_PATH_LEN], const char **paths, int n, const uint64_t *sizes,
                    uint64_t each)
{
    for (int i = 0; i < n; i++) {
        snprintf(path[i], FX_PATH_LEN, "%s/m%d.img", dir, i);
        paths[i] = path[i];
        int rc = fx_file_of_size(path[i], sizes ? sizes[i] : each);
        if (rc)
            return rc;
    }
    return 0;
}

void *fx_shared_map(size_t len)
{
    return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
}

void fx_shared_free(void *p, size_t len)
{
    if (p)
        munmap(p, len);
}

int fx_open_fill(const char *const *paths, int n, uint64_t model_len, struct rng *r, uint8_t **model,
                 uint64_t *bytes, char *why, size_t whylen)
{
    struct uraid_array *a = NULL;
    int rc = uraid_open(paths, n, NULL, &a, why, whylen);
    if (rc)
        return rc;
    *bytes = uraid_size(a);
    *model = fx_shared_map(model_len ? model_len : *bytes);
    rng_fill(r, *model, *bytes);
    rc = uraid_write(a, *model, *bytes, 0);
    CHECK(rc == 0, "write");
    CHECK(uraid_close(a) == 0);
    return rc;
}

uint8_t *fx_files_snapshot(const char *const *paths, int n, const uint64_t *sizes, uint64_t each, uint64_t *total)
{
    uint64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += sizes ? sizes[i] : each;
    if (total)
        *total = sum;
    uint8_t *img = malloc(sum), *p = img;
    for (int i = 0; img && i < n; i++) {
        uint64_t len = sizes ? sizes[i] : each;
        int fd = open(paths[i], O_RDONLY);
        if (fd < 0 || pread(fd, p, len, 0) != (ssize_t)len)
            memset(p, 0xee, len);
        if (fd >= 0)
            close(fd);
        p += len;
    }
    return img;
}

void fx_check_model(struct uraid_array *a, const uint8_t *model, uint64_t bytes, const struct fx_inflight *pend,
                    const char *what)
{
    enum { BLK = 4096 };
    uint8_t *buf = malloc(bytes);
    int rc = buf ? uraid_read(a, buf, bytes, 0) : -ENOMEM;
    uint64_t at = 0;
    if (!pend) {
        while (rc == 0 && at < bytes && buf[at] == model[at])
            at++;
    } else {
        for (; rc == 0 && at < bytes; at += BLK) {
            if (!memcmp(buf + at, model + at, BLK))
                continue;
            if (at < pend->off || at >= pend->off + pend->len || memcmp(buf + at, pend->buf + (at - pend->off), BLK))
                break;
        }
    }
    CHECK(rc == 0 && at >= bytes, "%s: read %d, first difference at byte %llu of %llu", what, rc,
          (unsigned long long)at, (unsigned long long)bytes);
    free(buf);
}

void *fx_writer_main(void *arg)
{
    struct fx_writer *w = arg;
    struct rng r;
    rng_seed(&r, w->seed);
    uint8_t *buf = malloc(FX_MAXW), *back = malloc(FX_MAXW);
    while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE)) {
        if (w->wait_for && uraid_size(w->a) < w->wait_for) {
            usleep(1000);
            continue;
        }
        uint64_t len = (1 + rng_below(&r, 16)) * 4096;
        uint64_t off = w->lo + rng_below(&r, (w->hi - w->lo - len) / 4096 + 1) * 4096;
        rng_fill(&r, buf, len);
        if (uraid_write(w->a, buf, len, off) != 0) {
            w->failures++;
            continue;
        }
        memcpy(w->model + off, buf, len);
        if (uraid_read(w->a, back, len, off) != 0 || memcmp(back, buf, len))
            w->failures++;
        __atomic_add_fetch(&w->rounds, 1, __ATOMIC_RELAXED);
    }
    free(buf);
    free(back);
    return NULL;
}

void fx_writers_start(struct fx_writer *w, pthread_t *t, int nw)
{
    for (int i = 0; i < nw; i++)
        pthread_create(&t[i], NULL, fx_writer_main, &w[i]);
}

int fx_writers_stop(struct fx_writer *w, pthread_t *t, int nw, int *stop)
{
    int failures = 0;
    __atomic_store_n(stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < nw; i++) {
        pthread_join(t[i], NULL);
        failures += w[i].failures;
    }
    return failures;
}

void fx_writers_wait(struct fx_writer *w, int nw, int more)
{
    for (int i = 0; i < nw; i++) {
        int at = __atomic_load_n(&w[i].rounds, __ATOMIC_RELAXED);
        while (__atomic_load_n(&w[i].rounds, __ATOMIC_RELAXED) < at + more)
            usleep(1000);
    }
}

static void *kill_writer(void *arg)
{
    struct fx_killer *k = arg;
    struct rng r;
    rng_seed(&r, k->seed);
    for (;;) {
        uint64_t len = (1 + rng_below(&r, 16)) * 4096;
        uint64_t off = rng_below(&r, (k->bytes - len) / 4096 + 1) * 4096;
        struct fx_inflight *p = k->pend;
        __atomic_store_n(&p->len, 0, __ATOMIC_SEQ_CST); /* (a kill may fall between any two stores) */
        rng_fill(&r, p->buf, len);
        __atomic_store_n(&p->off, off, __ATOMIC_SEQ_CST);
        __atomic_store_n(&p->len, len, __ATOMIC_SEQ_CST);
        if (uraid_write(k->a, p->buf, len, off))
            _exit(4);
        memcpy(k->model + off, p->buf, len);
        __atomic_add_fetch(&p->writes, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

void fx_kill_writer_start(struct fx_killer *k)
{
    pthread_t t;
    pthread_create(&t, NULL, kill_writer, k);
    while (__atomic_load_n(&k->pend->writes, __ATOMIC_ACQUIRE) < 20)
        usleep(100);
}

_Noreturn void fx_switch_levels_until_killed(struct uraid_array *a, int even_level, int odd_level, uint64_t seed,
                                             unsigned delay_us)
{
    char why[400];
    struct rng r;
    rng_seed(&r, seed);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 1000000; i++) {
        if (uraid_grow_online_level(a, i % 2 ? odd_level : even_level, 0, 0, NULL, NULL, 0, why, sizeof why))
            _exit(5);
        usleep((unsigned)rng_below(&r, 400)); /* the writer gets in between */
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if ((uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000u + (uint64_t)(t1.tv_nsec - t0.tv_nsec) / 1000u >= delay_us)
            raise(SIGKILL);
    }
    _exit(6);
}

void fx_refuse_level(struct uraid_array *a, int level, int N, uint32_t chunk, const char *layout,
                     const char *const *added, int nadd, int want, const char *text)
{
    char why[400] = "";
    int rc = uraid_grow_online_level(a, level, N, chunk, layout, added, nadd, why, sizeof why);
    CHECK(rc == want && strstr(why, text) && !strchr(why, '\n'),
          "--level %d -n %d chunk %u layout %s, %d new: %d '%s' (expected %d, '%s')", level, N, chunk,
          layout ? layout : "-", nadd, rc, why, want, text);
}

void fx_refuse_grow(struct uraid_array *a, int N, const char *const *added, int nadd, int want, const char *text)
{
    char why[400] = "";
    int rc = uraid_grow_online(a, N, added, nadd, why, sizeof why);
    CHECK(rc == want && strstr(why, text) && !strchr(why, '\n'), "grow to %d with %d new: %d '%s' (expected %d, '%s')",
          N, nadd, rc, why, want, text);
}

int fx_sb_area(const char *path, uint8_t buf[4096], int put)
{
    int fd = open(path, O_RDWR);
    ssize_t n = fd < 0 ? -1 : put ? pwrite(fd, buf, 4096, 4096) : pread(fd, buf, 4096, 4096);
    if (fd >= 0)
        close(fd);
    return n == 4096 ? 0 : -EIO;
}

uint64_t fx_data_offset_sectors(struct uraid_array *a)
{
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    return info.member[0].data_offset_sectors;
}

uint64_t fx_file_hash(const char *path)
{
    FILE *fp = fopen(path, "rb");
    uint64_t h = 1469598103934665603ull;
    int c;
    while (fp && (c = fgetc(fp)) != EOF)
        h = (h ^ (uint64_t)c) * 1099511628211ull;
    if (fp)
        fclose(fp);
    return h;
}

struct uraid_array *fx_open_grown(const char *const *paths, int n, const uint8_t *model, uint64_t old_bytes,
                                  int want_degraded, const char *what)
{
    char why[512];
    struct uraid_array *a = NULL;
    int rc = uraid_open(paths, n, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "%s: open: %s", what, why);
    if (rc)
        return NULL;
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.raid_devices == n && info.degraded == want_degraded, "%s: %d members, %d not in sync (want %d, %d)",
          what, info.raid_devices, info.degraded, n, want_degraded);
    uint8_t *got = malloc(info.size_bytes);
    CHECK(got && info.size_bytes >= old_bytes && uraid_read(a, got, info.size_bytes, 0) == 0, "%s: read", what);
    if (got && info.size_bytes >= old_bytes) {
        CHECK(memcmp(got, model, old_bytes) == 0, "%s: every old byte as written", what);
        int zeros = 1;
        for (uint64_t i = old_bytes; i < info.size_bytes && zeros; i++)
            zeros = got[i] == 0;
        CHECK(zeros, "%s: the new space reads zeros", what);
    }
    free(got);
    return a;
}
