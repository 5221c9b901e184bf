/* A served linear array gaining members (lib/array/grow_linear.c, mdadm
 * --grow --raid-devices N --add NEW... on a running linear array): writer
 * threads write and read back their own slices of the array while it grows
 * from 2 members to 3 and to 4 (new members of other sizes, filled with
 * random bytes beforehand); a thread waits for the new size and writes
 * into the appended region. Then every byte matches the model (the
 * appended region: the new members' own bytes where nothing wrote), the
 * size is the old one plus the new members' data areas, and a reopen with
 * every member reads the same with N members at one event count. The same
 * grow again: nothing to do; a grow naming a member appended before (a
 * kill in between) adds only the others. Refusals (the same count, a count
 * that does not match the new members, fewer members, a member too small,
 * one named twice, an old member named as new, read-only)
 * write nothing: every member byte for byte. A kill -9 right after the
 * grow and a write into the appended region: the next open finds N
 * members and every acknowledged byte. Seeded (printed by the harness). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array/array.h"
#include "array_fixture.h"
#include "harness.h"
#include "uraid.h"
#include "uraid_grow.h"

#define MAXM 6
#define OLD_BYTES (8u << 20)

struct setup {
    int n, nadd;
    uint64_t size[MAXM];
    char dir[128], path[MAXM][160];
    const char *paths[MAXM];
    uint8_t *model; /* the whole grown array; shared with a child */
    uint64_t bytes, max_bytes, total;
};

static int make_member(struct setup *s, int i, struct rng *r)
{
    snprintf(s->path[i], sizeof s->path[i], "%s/m%d.img", s->dir, i);
    s->paths[i] = s->path[i];
    int fd = open(s->path[i], O_RDWR | O_CREAT | O_TRUNC, 0600), rc = 0;
    uint8_t *buf = malloc(1 << 20);
    for (uint64_t off = 0; fd >= 0 && buf && rc == 0 && off < s->size[i]; off += 1 << 20) {
        rng_fill(r, buf, 1 << 20);
        rc = pwrite(fd, buf, 1 << 20, (off_t)off) == 1 << 20 ? 0 : -EIO;
    }
    free(buf);
    if (fd < 0 || !buf)
        rc = -ENOMEM;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* n members of OLD_BYTES, nadd new ones of sizes[], a linear array of the
 * first n in format md, its bytes random and in the model. */
static int make_setup(struct setup *s, const uint64_t *sizes, const char *md, struct rng *r)
{
    char why[300];
    if (fx_tmpdir(s->dir, sizeof s->dir, "linear"))
        return -errno;
    s->total = 0;
    for (int i = 0; i < s->n + s->nadd; i++) {
        s->size[i] = i < s->n ? OLD_BYTES : sizes[i - s->n];
        s->total += s->size[i];
        int rc = make_member(s, i, r);
        CHECK(rc == 0, "member %d: %d", i, rc);
        if (rc)
            return rc;
    }
    struct uraid_create_params cp = {.level = -1, .raid_devices = s->n, .layout = -1, .metadata = md};
    int rc = uraid_create(s->paths, s->n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    s->max_bytes = s->total; /* more than the grown array */
    if (rc == 0)
        rc = fx_open_fill(s->paths, s->n, s->max_bytes, r, &s->model, &s->bytes, why, sizeof why);
    return rc;
}

/* The appended members' bytes past the data offset, as the model's tail
 * from `at` on (what the grown array reads where nothing wrote). */
static uint64_t model_append(struct setup *s, int from, int to, uint64_t at, uint64_t data_off)
{
    struct md_sb ref;
    CHECK(fx_read_sb_path(s->path[0], &ref) == 0, "superblock of %s", s->path[0]);
    for (int i = from; i < to; i++) {
        /* its data area: to its end (1.2, 1.1), or up to the tail before its superblock (1.0, 0.90) */
        struct md_sb placed = ref;
        array_place_member(&placed, &ref, s->size[i] / 512);
        uint64_t len = placed.data_size * 512;
        int fd = open(s->path[i], O_RDONLY);
        CHECK(fd >= 0 && pread(fd, s->model + at, len, (off_t)(data_off * 512)) == (ssize_t)len, "read member %d", i);
        if (fd >= 0)
            close(fd);
        at += len;
    }
    return at;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i < s->n + s->nadd; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    fx_shared_free(s->model, s->max_bytes);
}

static uint8_t *snapshot(const struct setup *s)
{
    return fx_files_snapshot(s->paths, s->n + s->nadd, s->size, 0, NULL);
}

/* N members at one event count, `bytes` long, every byte the model's. */
static void verify(struct uraid_array *a, const struct setup *s, int N, uint64_t bytes, const char *what)
{
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    int same = 1;
    for (int i = 0; i < info.nmembers; i++)
        same &= info.member[i].slot < 0 || info.member[i].events == info.member[0].events;
    CHECK(info.raid_devices == N && info.size_bytes == bytes && same, "%s: %d members, %llu bytes, events alike %d "
          "(expected %d, %llu)", what, info.raid_devices, (unsigned long long)info.size_bytes, same, N,
          (unsigned long long)bytes);
    fx_check_model(a, s->model, bytes, NULL, what);
}

static void grow_case(int nadd, const char *md, struct rng *r, uint64_t seed)
{
    static const uint64_t sizes[] = {6u << 20, 12u << 20};
    struct setup s = {.n = 2, .nadd = nadd};
    harness_beginf("linear 2 -> %d members (metadata %s) while it serves, with writers", 2 + nadd, md);
    int rc = make_setup(&s, sizes, md, r);
    char why[400];
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        uint64_t doff = fx_data_offset_sectors(a), grown = model_append(&s, 2, 2 + nadd, s.bytes, doff);
        enum { NW = 3 };
        struct fx_writer w[NW];
        pthread_t t[NW];
        int stop = 0;
        for (int i = 0; i < NW; i++) {
            int tail = i == NW - 1; /* writes the appended region once it is there */
            w[i] = (struct fx_writer){.a = a, .model = s.model, .lo = tail ? s.bytes : s.bytes / 2 * (uint64_t)i,
                                      .hi = tail ? grown : s.bytes / 2 * (uint64_t)(i + 1),
                                      .seed = seed + (uint64_t)i, .wait_for = tail ? grown : 0, .stop = &stop};
        }
        fx_writers_start(w, t, NW);
        usleep(20000);
        rc = uraid_grow_online(a, 2 + nadd, s.paths + 2, nadd, why, sizeof why);
        CHECK(rc == 0, "grow online: %s", why);
        usleep(50000);
        int failures = fx_writers_stop(w, t, NW, &stop);
        for (int i = 0; i < NW; i++)
            CHECK(w[i].rounds > 0, "writer %d wrote nothing", i);
        CHECK(failures == 0, "%d writes or read-backs failed", failures);
        verify(a, &s, 2 + nadd, grown, "grown");
        rc = uraid_grow_online(a, 2 + nadd, s.paths + 2, nadd, why, sizeof why);
        CHECK(rc == -EALREADY && strstr(why, "nothing to do"), "the same grow again: %d %s", rc, why);
        CHECK(uraid_close(a) == 0);
        rc = uraid_open(s.paths, 2 + nadd, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "reopen: %s", why);
        if (rc == 0) {
            verify(a, &s, 2 + nadd, grown, "reopened");
            uraid_close(a);
        }
    }
    drop_setup(&s);
    harness_end();
}

/* 2 -> 3, then 2 -> 4 naming the member appended already (as after a kill). */
static void again_case(struct rng *r)
{
    static const uint64_t sizes[] = {4u << 20, 5u << 20};
    struct setup s = {.n = 2, .nadd = 2};
    harness_begin("linear: a grow naming a member appended before adds only the others");
    int rc = make_setup(&s, sizes, NULL, r);
    char why[400];
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        uint64_t doff = fx_data_offset_sectors(a), grown = model_append(&s, 2, 4, s.bytes, doff);
        rc = uraid_grow_online(a, 3, s.paths + 2, 1, why, sizeof why);
        CHECK(rc == 0, "2 -> 3: %s", why);
        rc = uraid_grow_online(a, 4, s.paths + 2, 2, why, sizeof why);
        CHECK(rc == 0, "3 -> 4 naming both: %s", why);
        verify(a, &s, 4, grown, "grown twice");
        CHECK(uraid_close(a) == 0);
    }
    drop_setup(&s);
    harness_end();
}

static void refusals(struct rng *r)
{
    static const uint64_t sizes[] = {8u << 20, 512u << 10};
    struct setup s = {.n = 2, .nadd = 2};
    harness_begin("linear: refused grows write nothing");
    int rc = make_setup(&s, sizes, NULL, r);
    char why[400];
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    uint8_t *before = rc == 0 ? snapshot(&s) : NULL;
    if (rc == 0) {
        const char *twice[] = {s.paths[2], s.paths[2]}, *old[] = {s.paths[0]};
        fx_refuse_grow(a, 2, NULL, 0, -EALREADY, "nothing to do");
        fx_refuse_grow(a, 4, s.paths + 2, 1, -EINVAL, "needs 2 new members");
        fx_refuse_grow(a, 1, NULL, 0, -EINVAL, "would drop some");
        fx_refuse_grow(a, 3, s.paths + 3, 1, -ENOSPC, "is too small");
        fx_refuse_grow(a, 4, twice, 2, -EINVAL, "are the same member");
        fx_refuse_grow(a, 3, old, 1, -EINVAL, "members already");
        CHECK(uraid_close(a) == 0);
        struct uraid_open_params ro = {.readonly = 1};
        if ((rc = uraid_open(s.paths, 2, &ro, &a, why, sizeof why)) == 0) {
            fx_refuse_grow(a, 3, s.paths + 2, 1, -EROFS, "read-only");
            uraid_close(a);
        }
        CHECK(rc == 0, "open read-only: %s", why);
        uint8_t *after = snapshot(&s);
        CHECK(after && !memcmp(before, after, s.total), "a refused grow changed a member");
        free(after);
    }
    free(before);
    drop_setup(&s);
    harness_end();
}

/* kill -9 in a child right after the grow and a write past the old end
 * (after one before it: only the grow's own superblock writes say N). */
static void killed(struct rng *r)
{
    static const uint64_t sizes[] = {6u << 20, 3u << 20};
    struct setup s = {.n = 2, .nadd = 2};
    harness_begin("linear 2 -> 4: kill -9 after the grow and a write into the new region, then open");
    int rc = make_setup(&s, sizes, NULL, r);
    char why[400];
    uint64_t grown = 0;
    struct uraid_array *a = NULL;
    if (rc == 0 && uraid_open(s.paths, 2, NULL, &a, why, sizeof why) == 0) {
        grown = model_append(&s, 2, 4, s.bytes, fx_data_offset_sectors(a));
        uraid_close(a);
    }
    uint64_t off = s.bytes + (1u << 20), len = 256u << 10;
    pid_t child = rc == 0 ? fork() : -1;
    if (child == 0) {
        struct rng cr;
        rng_seed(&cr, 77);
        uint8_t *buf = malloc(len);
        rng_fill(&cr, buf, len);
        /* a write first: the array is dirty on disk, no later write rewrites the superblocks */
        if (uraid_open(s.paths, 2, NULL, &a, why, sizeof why) || uraid_write(a, s.model, len, 0) ||
            uraid_grow_online(a, 4, s.paths + 2, 2, why, sizeof why))
            _exit(3);
        if (uraid_write(a, buf, len, off) == 0)
            memcpy(s.model + off, buf, len);
        raise(SIGKILL);
    }
    if (child > 0) {
        int wst = 0;
        waitpid(child, &wst, 0);
        CHECK(WIFSIGNALED(wst), "the child was not killed (status %d)", wst);
        rc = uraid_open(s.paths, 4, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "open after the kill: %s", why);
        if (rc == 0) {
            verify(a, &s, 4, grown, "after the kill");
            CHECK(uraid_close(a) == 0);
        }
    }
    drop_setup(&s);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "grow_linear_online");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    grow_case(1, "1.2", &r, seed);
    grow_case(2, "1.2", &r, seed);
    grow_case(2, "1.1", &r, seed);
    grow_case(1, "1.0", &r, seed); /* superblocks at the members' ends: a new one's at its own */
    grow_case(2, "0.90", &r, seed);
    again_case(&r);
    refusals(&r);
    killed(&r);
    return harness_finish();
}
