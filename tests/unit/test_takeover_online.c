/* A served RAID-1 of two members taken over as a RAID-5 of two and back
 * (lib/array/grow_takeover_online.c, md's raid5_takeover_raid1 and
 * raid1_takeover on a running array): writer threads write and read back
 * their slices while the level goes 1 -> 5 -> 1 -> 5 (the last switch
 * after the RAID-1 writes: nothing the RAID-5 read-ahead or stripe cache
 * kept from before may be served). After each switch: the level, md's
 * chunk (64 KiB halved until it divides the size) and left-symmetric
 * layout, every byte the model's, both members' data areas equal byte for
 * byte (a 2-member RAID-5's parity is its data), every member at one
 * event count; the same after a reopen. A stream's partial stripes kept
 * in memory at the switch to RAID-1 are written first, not over the
 * RAID-1 writes after it. Refusals (a new member, another
 * count, another layout, a chunk that does not divide the size, a layout
 * for RAID-1, read-only, three mirrors, a degraded mirror, a partial
 * parity log, a job running) write nothing: every member byte for byte. A
 * switch cut off between the members' superblock writes (one member's
 * superblock put back as it was) is opened at the newer level, and the
 * offline grow takes it on. A kill -9 at a seeded moment while the level
 * switches back and forth under a writer: the next open serves it (level
 * 1 or 5), its resync makes the members equal, every acknowledged byte is
 * there (the write in flight old or new), and the offline grow then
 * changes its level. Seeded (printed by the harness). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array/array.h" /* (a->gather: how many stripes were kept) */
#include "array_fixture.h"
#include "harness.h"
#include "stripe/gather.h"
#include "uraid.h"
#include "uraid_grow.h"

#define BLK 4096
#define MEMBER_BYTES (9u << 20)

struct setup {
    int n;
    char dir[128], path[4][160];
    const char *paths[4];
    uint8_t *model; /* shared with a child */
    uint64_t bytes;
    struct fx_inflight *pend; /* the child's write in flight: either content may be on the members */
};

static int make_setup(struct setup *s, int n, int level, const char *const *paths, int policy, struct rng *r)
{
    char why[300];
    s->n = n;
    int rc = fx_tmpdir(s->dir, sizeof s->dir, "tko");
    if (rc || (rc = fx_member_files(s->dir, s->path, s->paths, 4, NULL, MEMBER_BYTES)))
        return rc;
    struct uraid_create_params cp = {.level = level, .raid_devices = n, .layout = -1, .chunk_bytes = 64u << 10,
                                     .assume_clean = 1, .consistency_policy = policy};
    rc = uraid_create(paths ? paths : s->paths, n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    if (rc == 0)
        rc = fx_open_fill(s->paths, n, 0, r, &s->model, &s->bytes, why, sizeof why);
    if (s->model)
        s->pend = fx_shared_map(sizeof *s->pend);
    CHECK(rc == 0, "open: %s", why);
    return rc;
}

static void drop_setup(struct setup *s)
{
    for (int i = 0; i < 4; i++)
        unlink(s->path[i]);
    rmdir(s->dir);
    fx_shared_free(s->model, s->bytes);
    fx_shared_free(s->pend, sizeof *s->pend);
}

static uint8_t *snapshot(const struct setup *s)
{
    return fx_files_snapshot(s->paths, 4, NULL, MEMBER_BYTES, NULL);
}

/* md's chunk for a RAID-1 of `sectors` taken over: 64 KiB halved until it divides the size. */
static uint32_t md_chunk_bytes(uint64_t sectors)
{
    uint32_t c = 128;
    while (c > 8 && sectors % c)
        c >>= 1;
    return c * 512;
}

/* The array's bytes are the model's (the pending write's blocks either way). */
static void check_bytes(struct uraid_array *a, const struct setup *s, const char *what)
{
    fx_check_model(a, s->model, s->bytes, s->pend, what);
}

/* Both members' data areas equal byte for byte (mirrors, or data and its parity). */
static void check_members_equal(const struct setup *s, uint64_t data_offset_bytes, const char *what)
{
    uint8_t *img = snapshot(s);
    uint64_t len = s->bytes;
    CHECK(img && !memcmp(img + data_offset_bytes, img + MEMBER_BYTES + data_offset_bytes, len),
          "%s: the two members' data areas differ", what);
    free(img);
}

static void check_level_as(struct uraid_array *a, const struct setup *s, int level, int one_behind, const char *what)
{
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    int same = 1, insync = 0;
    for (int i = 0; i < info.nmembers; i++) {
        same &= info.member[i].events == info.events ||
                (one_behind && info.member[i].events + 1 == info.events);
        insync += info.member[i].slot >= 0 && info.member[i].state == URAID_MEMBER_IN_SYNC;
    }
    uint32_t chunk = level == 5 ? md_chunk_bytes(s->bytes / 512) : 0;
    CHECK(info.level == level && info.raid_devices == 2 && insync == 2 && same && info.size_bytes == s->bytes &&
          (level == 1 || (info.chunk_bytes == chunk && info.layout == 2)),
          "%s: RAID-%d of %d (%d in sync, events alike %d), %llu bytes, chunk %u, layout %d (expected RAID-%d, chunk "
          "%u, left-symmetric)", what, info.level, info.raid_devices, insync, same,
          (unsigned long long)info.size_bytes, info.chunk_bytes, info.layout, level, chunk);
}

static void check_level(struct uraid_array *a, const struct setup *s, int level, const char *what)
{
    check_level_as(a, s, level, 0, what);
}

static uint64_t data_offset_bytes(struct uraid_array *a)
{
    return fx_data_offset_sectors(a) * 512;
}

static int takeover(struct uraid_array *a, int level, char *why, size_t whylen)
{
    return uraid_grow_online_level(a, level, 0, 0, NULL, NULL, 0, why, whylen);
}

static void switch_case(struct rng *r, uint64_t seed)
{
    struct setup s = {0};
    harness_begin("RAID-1 of 2 -> RAID-5 -> RAID-1 -> RAID-5 while it serves, with writers");
    int rc = make_setup(&s, 2, 1, NULL, URAID_POLICY_RESYNC, r);
    char why[400];
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        enum { NW = 3 };
        struct fx_writer w[NW];
        pthread_t t[NW];
        int stop = 0, failures = 0;
        uint64_t slice = s.bytes / NW / BLK * BLK;
        for (int i = 0; i < NW; i++)
            w[i] = (struct fx_writer){.a = a, .model = s.model, .lo = slice * (uint64_t)i,
                                      .hi = slice * (uint64_t)(i + 1), .seed = seed + (uint64_t)i, .stop = &stop};
        fx_writers_start(w, t, NW);
        static const int to[] = {5, 1, 5};
        for (int k = 0; k < 3; k++) {
            int before[NW];
            for (int i = 0; i < NW; i++)
                before[i] = __atomic_load_n(&w[i].rounds, __ATOMIC_RELAXED);
            for (int i = 0; i < NW; i++) /* every writer at work across each switch */
                while (__atomic_load_n(&w[i].rounds, __ATOMIC_RELAXED) < before[i] + 20)
                    usleep(1000);
            rc = takeover(a, to[k], why, sizeof why);
            CHECK(rc == 0, "--level %d: %s", to[k], why);
            check_level(a, &s, to[k], "switched");
        }
        usleep(30000);
        failures = fx_writers_stop(w, t, NW, &stop);
        for (int i = 0; i < NW; i++)
            CHECK(w[i].rounds > 0, "writer %d wrote nothing", i);
        CHECK(failures == 0, "%d writes or read-backs failed", failures);
        check_bytes(a, &s, "after the switches");
        uint64_t doff = data_offset_bytes(a);
        rc = takeover(a, 5, why, sizeof why);
        CHECK(rc == -EALREADY, "--level 5 on the RAID-5: %d %s", rc, why);
        CHECK(uraid_close(a) == 0);
        check_members_equal(&s, doff, "closed");
        rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "reopen: %s", why);
        if (rc == 0) {
            check_level(a, &s, 5, "reopened");
            check_bytes(a, &s, "reopened");
            struct uraid_array_info info;
            uraid_get_info(a, &info);
            CHECK(info.clean, "the RAID-5 is recorded dirty after a clean close");
            uraid_close(a);
        }
    }
    drop_setup(&s);
    harness_end();
}

/* One refusal set on an array made by `level`, n, paths, policy. */
static void refuse_on(int level, int n, const char *const *paths, int policy, struct rng *r,
                      void (*ask)(struct uraid_array *, struct setup *))
{
    struct setup s = {0};
    char why[400];
    int rc = make_setup(&s, n, level, paths, policy, r);
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, n, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    uint8_t *before = rc == 0 ? snapshot(&s) : NULL;
    if (rc == 0) {
        ask(a, &s);
        CHECK(uraid_close(a) == 0);
        struct uraid_open_params ro = {.readonly = 1};
        if ((rc = uraid_open(s.paths, n, &ro, &a, why, sizeof why)) == 0) {
            fx_refuse_level(a, level == 1 ? 5 : 1, 0, 0, NULL, NULL, 0, -EROFS, "read-only");
            uraid_close(a);
        }
        CHECK(rc == 0, "open read-only: %s", why);
        uint8_t *after = snapshot(&s);
        CHECK(before && after && !memcmp(before, after, 4ull * MEMBER_BYTES), "a refused --level changed a member");
        free(after);
    }
    free(before);
    drop_setup(&s);
}

static void ask_mirrors(struct uraid_array *a, struct setup *s)
{
    uint64_t sectors = s->bytes / 512;
    uint32_t bad = 16;
    while (sectors % bad == 0)
        bad <<= 1; /* a chunk that does not divide the size */
    fx_refuse_level(a, 5, 0, 0, NULL, s->paths + 2, 1, -EINVAL, "keeps the 2 members");
    fx_refuse_level(a, 5, 3, 0, NULL, NULL, 0, -EINVAL, "keeps the 2 members");
    fx_refuse_level(a, 5, 0, 0, "right-asymmetric", NULL, 0, -EOPNOTSUPP, "left-symmetric RAID-5");
    fx_refuse_level(a, 5, 0, 0, "bogus", NULL, 0, -EOPNOTSUPP, "left-symmetric RAID-5");
    fx_refuse_level(a, 5, 0, bad, NULL, NULL, 0, -EINVAL, "is not a multiple of the chunk given");
    fx_refuse_level(a, 6, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "not supported");
    char why[300];
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "check: %s", why);
    fx_refuse_level(a, 5, 0, 0, NULL, NULL, 0, -EBUSY, "");
    struct uraid_job_status st;
    uraid_job_cancel(a);
    uraid_job_wait(a, &st);
}

static void ask_three(struct uraid_array *a, struct setup *s)
{
    (void)s;
    fx_refuse_level(a, 5, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "with 2 members only (the array has 3)");
}

static void ask_degraded(struct uraid_array *a, struct setup *s)
{
    (void)s;
    fx_refuse_level(a, 5, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "slot 1 is not in sync");
}

static void ask_raid5(struct uraid_array *a, struct setup *s)
{
    (void)s;
    fx_refuse_level(a, 1, 0, 0, "left-symmetric", NULL, 0, -EINVAL, "RAID-1 has no layout or chunk");
    fx_refuse_level(a, 1, 0, 256, NULL, NULL, 0, -EINVAL, "RAID-1 has no layout or chunk");
    fx_refuse_level(a, 1, 3, 0, NULL, NULL, 0, -EINVAL, "keeps the 2 members");
}

static void ask_ppl(struct uraid_array *a, struct setup *s)
{
    (void)s;
    fx_refuse_level(a, 1, 0, 0, NULL, NULL, 0, -EOPNOTSUPP, "partial parity log");
}

static void refusals(struct rng *r)
{
    harness_begin("refused RAID-1 <-> RAID-5 takeovers write nothing");
    refuse_on(1, 2, NULL, URAID_POLICY_RESYNC, r, ask_mirrors);
    refuse_on(1, 3, NULL, URAID_POLICY_RESYNC, r, ask_three);
    refuse_on(5, 2, NULL, URAID_POLICY_RESYNC, r, ask_raid5);
    refuse_on(5, 2, NULL, URAID_POLICY_PPL, r, ask_ppl);
    harness_end();
}

static void degraded(struct rng *r)
{
    harness_begin("a degraded RAID-1 of 2: refused, nothing written");
    /* created with its second slot missing: the paths the setup makes, the second replaced */
    struct setup t = {0};
    int rc = make_setup(&t, 2, 1, NULL, URAID_POLICY_RESYNC, r); /* (for its files) */
    if (rc == 0) {
        const char *paths[2] = {t.paths[2], "missing"};
        struct uraid_create_params cp = {.level = 1, .raid_devices = 2, .layout = -1,
                                         .consistency_policy = URAID_POLICY_RESYNC};
        char why[300];
        struct uraid_array *a = NULL;
        rc = uraid_create(paths, 2, &cp, 1, why, sizeof why);
        CHECK(rc == 0, "create degraded: %s", why);
        if (rc == 0 && (rc = uraid_open(t.paths + 2, 1, NULL, &a, why, sizeof why)) == 0) {
            uint8_t *before = snapshot(&t);
            ask_degraded(a, &t);
            uraid_close(a);
            uint8_t *after = snapshot(&t);
            CHECK(before && after && !memcmp(before, after, 4ull * MEMBER_BYTES), "a refused --level changed a member");
            free(before);
            free(after);
        }
        CHECK(rc == 0, "%s", why);
    }
    drop_setup(&t);
    harness_end();
}

static void cut_off(int to, struct rng *r)
{
    harness_beginf("RAID-%d -> RAID-%d cut off between the members' superblocks: the open and the offline grow",
                   to == 5 ? 1 : 5, to);
    struct setup s = {0};
    char why[400];
    int rc = make_setup(&s, 2, to == 5 ? 1 : 5, NULL, URAID_POLICY_RESYNC, r);
    struct uraid_array *a = NULL;
    uint8_t old_sb[4096];
    if (rc == 0 && (rc = fx_sb_area(s.paths[1], old_sb, 0)) == 0 &&
        (rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) == 0) {
        rc = takeover(a, to, why, sizeof why);
        CHECK(rc == 0, "--level %d: %s", to, why);
        uraid_close(a);
        rc = fx_sb_area(s.paths[1], old_sb, 1); /* member 1 missed the last writes: the old level */
        CHECK(rc == 0);
    }
    if (rc == 0 && (rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) == 0) {
        check_level_as(a, &s, to, 1, "opened after the cut-off"); /* (member 1 one event behind) */
        check_bytes(a, &s, "opened after the cut-off");
        uraid_close(a);
    } else {
        CHECK(rc == 0, "open after the cut-off: %s", why);
    }
    /* the offline grow, back to the old level, takes the cut-off one on */
    if (rc == 0 && (rc = fx_sb_area(s.paths[1], old_sb, 1)) == 0) {
        struct uraid_grow_params gp = {.level_set = 1, .level = to == 5 ? 1 : 5};
        struct uraid_grow_result res;
        rc = uraid_grow_members(s.paths, 2, NULL, 0, &gp, &res, why, sizeof why);
        CHECK(rc == 0 && res.level == gp.level, "the offline --level %d after the cut-off: %d %s (level %d)", gp.level,
              rc, why, res.level);
        if ((rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) == 0) {
            check_level(a, &s, gp.level, "the offline grow's");
            check_bytes(a, &s, "the offline grow's");
            uraid_close(a);
        }
        CHECK(rc == 0, "open: %s", why);
    }
    drop_setup(&s);
    harness_end();
}

/* The child: a writer (one write at a time, recorded as in flight first),
 * the level switched 5 -> 1 -> 5 ... until SIGKILL after delay_us. */
static void child_run(struct setup *s, uint64_t seed, unsigned delay_us)
{
    char why[400];
    struct uraid_array *a = NULL;
    if (uraid_open(s->paths, 2, NULL, &a, why, sizeof why))
        _exit(3);
    struct fx_killer k = {.a = a, .model = s->model, .bytes = s->bytes, .seed = seed, .pend = s->pend};
    fx_kill_writer_start(&k);
    fx_switch_levels_until_killed(a, 5, 1, seed, delay_us);
}

static void killed(struct rng *r, uint64_t seed)
{
    unsigned delay_us = 2000 + (unsigned)rng_below(r, 60000); /* where the kill falls */
    harness_beginf("kill -9 %u us into switching RAID-1 <-> RAID-5 under a writer: the open, then the offline grow",
                   delay_us);
    struct setup s = {0};
    char why[400];
    int rc = make_setup(&s, 2, 1, NULL, URAID_POLICY_RESYNC, r);
    pid_t child = rc == 0 ? fork() : -1;
    if (child == 0)
        child_run(&s, seed, delay_us);
    if (child > 0) {
        int wst = 0;
        waitpid(child, &wst, 0);
        CHECK(WIFSIGNALED(wst), "the child was not killed (status %d)", WEXITSTATUS(wst));
        struct uraid_array *a = NULL;
        int level = -1;
        struct uraid_open_params op = {.force = 1};
        rc = uraid_open(s.paths, 2, &op, &a, why, sizeof why);
        CHECK(rc == 0, "open after the kill: %s", why);
        if (rc == 0) {
            struct uraid_array_info info;
            uraid_get_info(a, &info);
            level = info.level;
            CHECK(level == 1 || level == 5, "after the kill: RAID-%d", level);
            CHECK(!info.clean, "the array killed while writing is recorded clean");
            rc = uraid_job_start(a, URAID_JOB_RESYNC, NULL, why, sizeof why);
            struct uraid_job_status st;
            if (rc == -EBUSY || rc == 0)
                uraid_job_wait(a, &st), rc = 0;
            CHECK(rc == 0, "resync: %s", why);
            check_level(a, &s, level, "opened after the kill");
            check_bytes(a, &s, "opened after the kill");
            uint64_t doff = data_offset_bytes(a);
            CHECK(uraid_close(a) == 0);
            check_members_equal(&s, doff, "resynced after the kill");
        }
        if (rc == 0) {
            struct uraid_grow_params gp = {.level_set = 1, .level = level == 5 ? 1 : 5};
            struct uraid_grow_result res;
            rc = uraid_grow_members(s.paths, 2, NULL, 0, &gp, &res, why, sizeof why);
            CHECK(rc == 0, "the offline --level %d after: %s", gp.level, why);
            if (rc == 0 && (rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) == 0) {
                check_level(a, &s, gp.level, "offline after the kill");
                check_bytes(a, &s, "offline after the kill");
                uraid_close(a);
            }
        }
    }
    drop_setup(&s);
    harness_end();
}

/* A stream's partial stripes kept in memory (stripe/gather.c) when the
 * RAID-5 becomes RAID-1: written at the switch, so the RAID-1 writes that
 * follow are not overwritten by them when their time would have run out. */
static void kept_case(struct rng *r)
{
    harness_begin("RAID-5 of 2 -> RAID-1 with a stream's partial stripes kept: written first, not over later writes");
    struct setup s = {0};
    char why[400];
    setenv("URAID_GATHER_US", "1500000", 1);
    int rc = make_setup(&s, 2, 5, NULL, URAID_POLICY_RESYNC, r);
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        enum { PIECE = 16 << 10, PIECES = 11 }; /* 16 KiB pieces of a 64 KiB chunk: the last stripes partial */
        uint8_t old[PIECE * PIECES], later[PIECE * PIECES];
        rng_fill(r, old, sizeof old);
        rng_fill(r, later, sizeof later);
        for (int i = 0; i < PIECES && rc == 0; i++)
            rc = uraid_write(a, old + i * PIECE, PIECE, (uint64_t)i * PIECE);
        struct gather_stats gs = {0};
        gather_stats(__atomic_load_n(&a->gather, __ATOMIC_ACQUIRE), &gs);
        CHECK(rc == 0 && gs.open > 0, "the stream's write %d, %llu stripes kept open", rc,
              (unsigned long long)gs.open);
        rc = takeover(a, 1, why, sizeof why);
        CHECK(rc == 0, "--level 1: %s", why);
        CHECK(uraid_write(a, later, sizeof later, 0) == 0, "the RAID-1 write");
        memcpy(s.model, later, sizeof later);
        usleep(2000000); /* past the kept stripes' time */
        check_bytes(a, &s, "after the kept stripes' time");
        CHECK(uraid_close(a) == 0);
        if ((rc = uraid_open(s.paths, 2, NULL, &a, why, sizeof why)) == 0) {
            check_bytes(a, &s, "reopened");
            uraid_close(a);
        }
    }
    unsetenv("URAID_GATHER_US");
    drop_setup(&s);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "takeover_online");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    switch_case(&r, seed);
    kept_case(&r);
    refusals(&r);
    degraded(&r);
    cut_off(5, &r);
    cut_off(1, &r);
    killed(&r, seed);
    killed(&r, seed + 1);
    return harness_finish();
}
