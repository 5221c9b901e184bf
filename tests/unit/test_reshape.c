/* The offline grow (lib/array/reshape.c) under a simulated power cut at
 * every member write of a run, one trial per write: RAID-5 4 -> 6 and
 * RAID-6 4 -> 5 on small members; chunk 64K -> 128K with the layout to
 * right-asymmetric and RAID-5 4 -> RAID-6 5 (restripes on as many data
 * members), RAID-6 5 -> RAID-5 4 (a restripe to left-symmetric-6, then
 * the takeover), RAID-0 3 -> RAID-5 4 (a takeover, then the parity's
 * recovery), RAID-0 3 -> 5 and a RAID-0's chunk change (mdadm's way: a RAID-4 missing its parity
 * reshaped, then taken back). Each member is a power-cut layer
 * (member/powercut.h): at the cut, every write since that member's last
 * flush is kept, torn or dropped (seeded), and the process is "dead". Then
 * the same grow again must finish, and the array must read back every old
 * byte, zeros in the new space, and check clean (mismatch_cnt 0). The cut
 * falls in turn on the start's superblocks (including between the new
 * members' and the old ones'), every window and checkpoint, and the end's
 * superblocks (members left one event apart, some done and some still
 * reshaping). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "member/powercut.h"
#include "meta/superblock.h"
#include "uraid.h"
#include "uraid_admin.h"
#include "uraid_grow.h"

#define MEMBER_BYTES (4u << 20)
#define MAXM 8

/* What a grow asks besides the new members (uraid_grow_params). */
struct ask {
    uint32_t chunk_sectors;
    const char *layout;
    int level; /* -1: keep */
};

struct setup {
    int level, nold, nnew;
    int shrink_to;        /* a shrink to this many members (nnew 0) */
    uint64_t keep;        /* its --array-size, sectors */
    uint32_t chunk_kib;   /* at create; 0: 64 */
    struct ask ask;
    int nend;             /* members in the array after (RAID-6 -> 5: one fewer) */
    char dir[128], path[MAXM][160];
    uint8_t *image[MAXM]; /* the members before the grow */
    uint8_t *data;        /* the array's bytes before */
    uint64_t old_bytes;
};

static int put_file(const char *path, const uint8_t *buf, size_t len)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    int ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -EIO;
}

static int get_file(const char *path, uint8_t *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    int ok = fd >= 0 && read(fd, buf, len) == (ssize_t)len;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -EIO;
}

static int make_setup(struct setup *s, struct rng *r)
{
    char why[300];
    /* tmpfs when there is one: every flush of a member is an fsync */
    snprintf(s->dir, sizeof s->dir, "%s/uraid-test-reshape.XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
    if (!mkdtemp(s->dir))
        return -errno;
    int n = s->nold + s->nnew;
    uint8_t *zero = calloc(1, MEMBER_BYTES);
    for (int i = 0; i < n; i++) {
        snprintf(s->path[i], sizeof s->path[i], "%s/m%d.img", s->dir, i);
        put_file(s->path[i], zero, MEMBER_BYTES);
    }
    free(zero);
    const char *paths[MAXM];
    for (int i = 0; i < n; i++)
        paths[i] = s->path[i];
    struct uraid_create_params cp = {.level = s->level, .raid_devices = s->nold,
                                     .chunk_bytes = (s->chunk_kib ? s->chunk_kib : 64) << 10,
                                     .layout = -1, .assume_clean = 1, .consistency_policy = URAID_POLICY_RESYNC};
    if (s->level == 0)
        cp.consistency_policy = 0;
    int rc = uraid_create(paths, s->nold, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create: %s", why);
    struct uraid_array *a = NULL;
    if (rc == 0 && (rc = uraid_open(paths, s->nold, NULL, &a, why, sizeof why)) == 0) {
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        s->old_bytes = info.size_bytes;
        s->data = malloc(s->old_bytes);
        rng_fill(r, s->data, s->old_bytes);
        rc = uraid_write(a, s->data, s->old_bytes, 0);
        CHECK(rc == 0, "write");
        CHECK(uraid_close(a) == 0);
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        s->image[i] = malloc(MEMBER_BYTES);
        rc = get_file(s->path[i], s->image[i], MEMBER_BYTES);
    }
    return rc;
}

static void restore(struct setup *s)
{
    for (int i = 0; i < s->nold + s->nnew; i++)
        put_file(s->path[i], s->image[i], MEMBER_BYTES);
}

/* One grow; spec NULL: no layers. Returns its result; *writes the domain's
 * member writes (when spec names domain `dom`). */
static int grow(struct setup *s, const char *spec, const char *dom, uint64_t *writes, char *why, size_t whylen)
{
    const char *paths[MAXM], *sim[MAXM];
    for (int i = 0; i < s->nold + s->nnew; i++) {
        paths[i] = s->path[i];
        sim[i] = spec;
    }
    struct uraid_grow_params p = {.raid_devices = s->shrink_to ? s->shrink_to : s->nnew ? s->nold + s->nnew : 0,
                                  .array_sectors = s->keep, .member_sim = spec ? sim : NULL,
                                  .checkpoint_ms = 1u << 30, /* only the checkpoints the order needs: replayable */
                                  .chunk_sectors = s->ask.chunk_sectors, .layout = s->ask.layout,
                                  .level_set = s->ask.level >= 0, .level = s->ask.level};
    int rc = uraid_grow_members(paths, s->nold, paths + s->nold, s->nnew, &p, NULL, why, whylen);
    struct powercut_domain *d = dom ? powercut_domain_find(dom) : NULL;
    if (d && writes) {
        struct powercut_stats st;
        powercut_get_stats(d, &st);
        *writes = st.writes;
    }
    if (dom)
        powercut_domain_forget(dom);
    return rc;
}

/* Mid-reshape (after a cut, before the grow again): with every member the
 * array opens (unless the cut split the start's or the end's superblocks,
 * which the grow carries on) and reads every byte it kept. 1 when it opened. */
static int verify_cut(struct setup *s, const char *what)
{
    const char *paths[MAXM];
    for (int i = 0; i < s->nold + s->nnew; i++)
        paths[i] = s->path[i];
    char why[300];
    struct uraid_array *a = NULL;
    int rc = uraid_open(paths, s->nold + s->nnew, &(struct uraid_open_params){.readonly = 1}, &a, why, sizeof why);
    CHECK(rc == 0 || strstr(why, "carry it on") || strstr(why, "carries it on"), "%s: open: %s", what, why);
    if (rc)
        return 0;
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    uint64_t n = info.size_bytes < s->old_bytes ? info.size_bytes : s->old_bytes;
    uint8_t *buf = malloc(n);
    CHECK(uraid_read(a, buf, n, 0) == 0, "%s: read", what);
    CHECK(!memcmp(buf, s->data, n), "%s: the bytes kept differ mid-reshape", what);
    free(buf);
    CHECK(uraid_close(a) == 0);
    return 1;
}

/* Every old byte (those kept: a shrink drops the end), zeros after, and a clean check. */
static void verify(struct setup *s, const char *what)
{
    const char *paths[MAXM];
    int n = s->nend;
    for (int i = 0; i < n; i++)
        paths[i] = s->path[i];
    char why[300];
    struct uraid_array *a = NULL;
    int rc = uraid_open(paths, n, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "%s: open: %s", what, why);
    if (rc)
        return;
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.raid_devices == n, "%s: %d raid devices", what, info.raid_devices);
    uint8_t *buf = malloc(info.size_bytes);
    CHECK(uraid_read(a, buf, info.size_bytes, 0) == 0, "%s: read", what);
    CHECK(!memcmp(buf, s->data, info.size_bytes < s->old_bytes ? info.size_bytes : s->old_bytes),
          "%s: the old bytes differ", what);
    CHECK(!s->shrink_to || info.size_bytes >= s->keep * 512, "%s: %llu bytes, less than --array-size", what,
          (unsigned long long)info.size_bytes);
    /* a grown RAID-0 is the reshaped size (md's raid0_takeover_raid45 records the RAID-4's
     * member size as every data_size); an array taken over from RAID-5 is its data members' */
    uint64_t moved = info.level == 0 ? s->old_bytes / (uint64_t)s->nold * (uint64_t)n : info.size_bytes;
    int zeros = 1;
    for (uint64_t i = s->old_bytes; i < moved && zeros; i++)
        zeros = buf[i] == 0;
    CHECK(zeros, "%s: the new space is not zeros", what);
    free(buf);
    struct uraid_job_status st;
    if (info.level == 0) { /* no parity to check */
        CHECK(uraid_close(a) == 0);
        return;
    }
    CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "%s: check: %s", what, why);
    uraid_job_wait(a, &st);
    CHECK(st.result == 0 && st.mismatch_sectors == 0, "%s: check: result %d, mismatch %llu", what, st.result,
          (unsigned long long)st.mismatch_sectors);
    CHECK(uraid_close(a) == 0);
}

/* 1 when every member still holds what it held before (a refusal wrote nothing). */
static int unchanged(struct setup *s)
{
    uint8_t *buf = malloc(MEMBER_BYTES);
    int same = 1;
    for (int i = 0; i < s->nold + s->nnew && same; i++)
        same = get_file(s->path[i], buf, MEMBER_BYTES) == 0 && !memcmp(buf, s->image[i], MEMBER_BYTES);
    free(buf);
    return same;
}

/* A shrink's refusals (no --array-size, one too big), each writing nothing;
 * then s->keep = the new size, from a run that keeps it all. */
static int shrink_refusals(struct setup *s, char *why, size_t whylen)
{
    s->keep = 0;
    int rc = grow(s, NULL, NULL, NULL, why, whylen);
    CHECK(rc == -EINVAL && strstr(why, "--array-size") && strstr(why, "file system"), "no --array-size: %d %s", rc, why);
    CHECK(unchanged(s), "a refused shrink wrote to a member");
    const char *k = strstr(why, "give --array-size ");
    s->keep = k ? strtoull(k + 18, NULL, 10) * 2 : 0;
    CHECK(s->keep > 0, "the refusal names the size to give: %s", why);
    s->keep += 8;
    rc = grow(s, NULL, NULL, NULL, why, whylen);
    CHECK(rc == -ENOSPC && strstr(why, "more than"), "--array-size one sector block too big: %d %s", rc, why);
    CHECK(unchanged(s), "a refused shrink wrote to a member");
    s->keep -= 8;
    return s->keep ? 0 : -EINVAL;
}

static void every_cut(int level, int nold, int nnew, struct ask ask, int nend, const char *what, struct rng *r,
                      uint64_t seed)
{
    struct setup s = {.level = level, .nold = nold, .nnew = nnew, .ask = ask, .nend = nend};
    if (nend < nold && !nnew && ask.level < 0)
        s.shrink_to = nend;
    harness_beginf("RAID-%d %d -> %d%s: a grow without a cut", level, nold, nend, what);
    int rc = make_setup(&s, r);
    CHECK(rc == 0, "setup");
    uint64_t total = 0, opened = 0;
    char why[400];
    if (rc == 0 && s.shrink_to)
        rc = shrink_refusals(&s, why, sizeof why);
    if (rc == 0) {
        rc = grow(&s, "powercut=count,seed=1,after=0", "count", &total, why, sizeof why);
        CHECK(rc == 0, "grow: %s", why);
        CHECK(total > 10, "%llu member writes", (unsigned long long)total);
        verify(&s, "no cut");
    }
    harness_end();
    for (uint64_t after = 1; rc == 0 && after <= total; after++) {
        harness_beginf("RAID-%d %d -> %d%s: power cut at member write %llu of %llu", level, nold, nend, what,
                       (unsigned long long)after, (unsigned long long)total);
        restore(&s);
        char spec[160], dom[32];
        snprintf(dom, sizeof dom, "cut%llu", (unsigned long long)after);
        snprintf(spec, sizeof spec, "powercut=%s,seed=%llu,after=%llu,keep=33,tear=33", dom,
                 (unsigned long long)(seed + after), (unsigned long long)after);
        int cut = grow(&s, spec, dom, NULL, why, sizeof why);
        CHECK(cut != 0, "the grow finished through a cut at write %llu", (unsigned long long)after);
        if (s.shrink_to)
            opened += verify_cut(&s, "after the cut, before the grow again");
        /* -EALREADY: the writes the grow needed had landed before the cut
         * (the engine issues a batch's writes in parallel, so the order,
         * and which write is number `after`, varies from run to run; the
         * last ones may be a recovered member's final superblock, whose
         * loss leaves a recovery that the next open carries on): what
         * matters is that every byte reads back, which verify checks */
        int again = grow(&s, NULL, NULL, NULL, why, sizeof why);
        CHECK(again == 0 || again == -EALREADY, "the same grow again: %s", why);
        if (again == 0 || again == -EALREADY)
            verify(&s, "after the cut");
        harness_end();
    }
    if (s.shrink_to) {
        harness_beginf("RAID-%d %d -> %d%s: the array opened and read back after %llu of %llu cuts", level, nold, nend,
                       what, (unsigned long long)opened, (unsigned long long)total);
        /* refused: the cuts that split the start's or the end's superblock writes (one per member each) */
        CHECK(opened + 2 * (uint64_t)nold >= total, "only %llu of %llu cuts left an array that opens",
              (unsigned long long)opened, (unsigned long long)total);
        harness_end();
    }
    for (int i = 0; i < nold + nnew; i++) {
        unlink(s.path[i]);
        free(s.image[i]);
    }
    rmdir(s.dir);
    free(s.data);
}

/* Stops a grow at the first position past `at` that lies on a stripe of
 * both geometries (mdadm's revert needs one of the old geometry). */
struct stopper {
    volatile int stop;
    uint64_t at, align;
    int back; /* the position counts down: total - done */
};
static void stop_at(void *ctx, uint64_t done, uint64_t total)
{
    struct stopper *st = ctx;
    if (done >= st->at && (st->back ? total - done : done) % st->align == 0)
        st->stop = 1;
}

/* A reshape stopped partway (RAID-5 4 -> 5 before and past the old size;
 * a chunk change; a shrink), turned around by uraid update
 * --update=revert-reshape, carried on by the grow: the array is the one
 * before, every byte, clean. */
static void revert_case(int nold, int nnew, int shrink_to, uint32_t chunk_kib, uint32_t chunk, uint64_t at_permille,
                        const char *what, struct rng *r)
{
    struct setup s = {.level = 5, .nold = nold, .nnew = nnew, .ask = {chunk, NULL, -1}, .nend = nold,
                      .shrink_to = shrink_to, .chunk_kib = chunk_kib};
    harness_beginf("revert-reshape: %s, stopped at %llu/1000, reverted and carried on", what,
                   (unsigned long long)at_permille);
    int rc = make_setup(&s, r);
    CHECK(rc == 0, "setup");
    char why[400];
    const char *paths[MAXM];
    int n = nold + nnew;
    for (int i = 0; i < n; i++)
        paths[i] = s.path[i];
    uint64_t cu = chunk_kib * 2, newc = chunk ? chunk : cu, u = newc > cu ? newc : cu;
    int kold = nold - 1, knew = (shrink_to ? shrink_to : nold + nnew) - 1;
    uint64_t total = s.old_bytes / 512 / kold * knew, align = u * (uint64_t)kold * (uint64_t)knew;
    struct stopper st = {.at = total * at_permille / 1000, .align = align, .back = shrink_to != 0};
    if (shrink_to) {
        char w2[400];
        s.keep = 0;
        grow(&s, NULL, NULL, NULL, w2, sizeof w2); /* the refusal names the size */
        const char *k = strstr(w2, "give --array-size ");
        s.keep = k ? strtoull(k + 18, NULL, 10) * 2 : 0;
    }
    struct uraid_grow_params p = {.raid_devices = shrink_to ? shrink_to : nnew ? n : 0, .array_sectors = s.keep,
                                  .chunk_sectors = chunk, .progress = stop_at, .ctx = &st, .stop = &st.stop,
                                  .checkpoint_ms = 1u << 30};
    if (rc == 0) {
        rc = uraid_grow_members(paths, nold, paths + nold, nnew, &p, NULL, why, sizeof why);
        CHECK(rc == -EINTR, "the grow stops partway: %d %s", rc, why);
        uint8_t *img = malloc(MEMBER_BYTES);
        struct md_sb sb = {0};
        char w3[300] = "";
        CHECK(get_file(paths[0], img, MEMBER_BYTES) == 0 && md_sb_decode(img + 4096, 8, &sb, w3, sizeof w3) == 0 &&
              (sb.feature_map & MD_FEATURE_RESHAPE_ACTIVE), "the superblock records the reshape %s", w3);
        free(img);
        uint64_t P = sb.reshape_position, oldcap = s.old_bytes / 512;
        CHECK(P > 0 && P < total && (at_permille < 750 || shrink_to || P > oldcap) &&
              (at_permille > 750 || P < oldcap), "stopped at %llu of %llu (old size %llu)", (unsigned long long)P,
              (unsigned long long)total, (unsigned long long)oldcap);
    }
    struct uraid_update up = {.what = URAID_UPDATE_REVERT_RESHAPE};
    if (rc == -EINTR) {
        rc = uraid_update(paths, n, &up, why, sizeof why);
        CHECK(rc == 0, "revert: %s", why);
    }
    if (rc == 0) {
        struct uraid_grow_params c = {.resume_only = 1, .checkpoint_ms = 1u << 30};
        struct uraid_grow_result res;
        rc = uraid_grow_members(paths, n, NULL, 0, &c, &res, why, sizeof why);
        CHECK(rc == 0, "the reverted reshape carried on: %s", why);
        CHECK(rc || res.backwards == (shrink_to == 0), "direction: backwards %d", res.backwards);
    }
    if (rc == 0) {
        s.shrink_to = 0;
        uint64_t keep = s.old_bytes;
        if (shrink_to) /* a shrink dropped the end first: the bytes it kept come back */
            s.old_bytes = s.keep * 512;
        verify(&s, "after the revert");
        s.old_bytes = keep;
    }
    rc = uraid_update(paths, n, &up, why, sizeof why);
    CHECK(rc == -EINVAL && strstr(why, "no reshape"), "a second revert is refused: %d %s", rc, why);
    harness_end();
    for (int i = 0; i < n; i++) {
        unlink(s.path[i]);
        free(s.image[i]);
    }
    rmdir(s.dir);
    free(s.data);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "reshape");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    struct ask keep = {0, NULL, -1};
    every_cut(5, 4, 2, keep, 6, "", &r, seed);
    every_cut(5, 4, 0, (struct ask){256, "right-asymmetric", -1}, 4, ", chunk 128K right-asymmetric", &r, seed);
    every_cut(5, 4, 1, (struct ask){0, NULL, 6}, 5, ", RAID-6", &r, seed);
    every_cut(0, 3, 1, (struct ask){0, NULL, 5}, 4, ", RAID-5 (parity recovered)", &r, seed);
    every_cut(0, 3, 2, keep, 5, " (through a RAID-4 missing its parity)", &r, seed);
    every_cut(0, 3, 0, (struct ask){256, NULL, 0}, 3, ", chunk 128K (through a RAID-4 missing its parity)", &r, seed);
    every_cut(5, 4, 0, keep, 3, " (a shrink: backwards)", &r, seed);
    revert_case(4, 1, 0, 4, 0, 300, "RAID-5 4 -> 5 (chunk 4K)", &r);
    revert_case(4, 1, 0, 4, 0, 751, "RAID-5 4 -> 5 (chunk 4K) past the old size", &r);
    revert_case(4, 0, 0, 64, 256, 500, "RAID-5 chunk 64K -> 128K", &r);
    revert_case(4, 0, 3, 4, 0, 500, "RAID-5 4 -> 3 (chunk 4K)", &r);
    every_cut(6, 5, 0, (struct ask){64, NULL, -1}, 4, ", chunk 32K (a shrink: backwards)", &r, seed);
    if (!getenv("URAID_TEST_QUICK")) {
        every_cut(6, 4, 1, keep, 5, "", &r, seed);
        every_cut(6, 5, 0, (struct ask){0, NULL, 5}, 4, ", RAID-5 (restriped to left-symmetric-6 first)", &r, seed);
    }
    return harness_finish();
}
