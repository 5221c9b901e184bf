/* A member failing in the middle of an offline grow (lib/array/
 * reshape_fail.c): the reshape goes on degraded, as md's raid5 reshape
 * does. Each member is given through the fault layer (member_sim specs:
 * read-eio / write-eio on a range the reshape reaches halfway). After the
 * grow: the failed member's role is faulty (0xfffe) in the others'
 * superblocks, the array opens degraded in the new geometry and reads
 * every old byte (zeros after), a spare recovers it and a check is clean.
 * RAID-5 4 -> 5 (an old member fails reading, the new one writing),
 * RAID-6 5 -> 6 with one and two failures, a chunk change; a second
 * failure on RAID-5 stops the grow with the first one recorded, and the
 * same grow again finishes degraded. Then a power cut at every member
 * write of a grow with a failure (the member stays failed): the same grow
 * again finishes and every byte reads back. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "member/powercut.h"
#include "meta/superblock.h"
#include "uraid.h"
#include "uraid_grow.h"

#define MEMBER_BYTES (4u << 20)
#define MAXM 9

struct setup {
    int level, nold, nnew;
    uint32_t new_chunk; /* sectors, 0: keep */
    int level_set, to_level; /* --level */
    int n_after;        /* raid devices after the grow, 0: nold + nnew */
    char dir[128], path[MAXM + 1][160]; /* the last: a spare */
    uint8_t *image[MAXM];
    uint8_t *data;
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

static int n_all(const struct setup *s) { return s->nold + s->nnew; }
static int n_after(const struct setup *s) { return s->n_after ? s->n_after : n_all(s); }

static int make_setup(struct setup *s, struct rng *r)
{
    char why[300];
    snprintf(s->dir, sizeof s->dir, "%s/uraid-test-rsfault.XXXXXX", access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
    if (!mkdtemp(s->dir))
        return -errno;
    uint8_t *zero = calloc(1, MEMBER_BYTES);
    for (int i = 0; i <= n_all(s); i++) {
        snprintf(s->path[i], sizeof s->path[i], "%s/m%d.img", s->dir, i);
        put_file(s->path[i], zero, MEMBER_BYTES);
    }
    free(zero);
    const char *paths[MAXM];
    for (int i = 0; i < n_all(s); i++)
        paths[i] = s->path[i];
    struct uraid_create_params cp = {.level = s->level, .raid_devices = s->nold, .chunk_bytes = 64 << 10,
                                     .layout = -1, .assume_clean = 1, .consistency_policy = URAID_POLICY_RESYNC};
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
    for (int i = 0; rc == 0 && i < n_all(s); i++) {
        s->image[i] = malloc(MEMBER_BYTES);
        rc = get_file(s->path[i], s->image[i], MEMBER_BYTES);
    }
    return rc;
}

static void restore(struct setup *s)
{
    uint8_t *zero = calloc(1, MEMBER_BYTES);
    for (int i = 0; i < n_all(s); i++)
        put_file(s->path[i], s->image[i], MEMBER_BYTES);
    put_file(s->path[n_all(s)], zero, MEMBER_BYTES);
    free(zero);
}

static void teardown(struct setup *s)
{
    for (int i = 0; i <= n_all(s); i++) {
        unlink(s->path[i]);
        if (i < n_all(s))
            free(s->image[i]);
    }
    rmdir(s->dir);
    free(s->data);
}

/* One grow with member i under spec[i] (NULL: none). */
static int grow(struct setup *s, const char *const *spec, char *why, size_t whylen)
{
    const char *paths[MAXM];
    for (int i = 0; i < n_all(s); i++)
        paths[i] = s->path[i];
    struct uraid_grow_params p = {.raid_devices = s->nnew ? n_all(s) : 0, .member_sim = spec,
                                  .chunk_sectors = s->new_chunk, .checkpoint_ms = 1u << 30,
                                  .level_set = s->level_set, .level = s->to_level};
    return uraid_grow_members(paths, s->nold, paths + s->nold, s->nnew, &p, NULL, why, whylen);
}

static int read_sb(const char *path, struct md_sb *sb)
{
    uint8_t *img = malloc(MEMBER_BYTES);
    char w[300];
    int rc = get_file(path, img, MEMBER_BYTES);
    if (rc == 0)
        rc = md_sb_decode(img + 4096, 8, sb, w, sizeof w);
    free(img);
    return rc;
}

/* Members failed[] (indexes) faulty in member `ref`'s superblock, the others
 * in slots, no reshape recorded. */
static void check_record(struct setup *s, int ref, const int *failed, int nfailed, const char *what)
{
    struct md_sb R, F;
    CHECK(read_sb(s->path[ref], &R) == 0, "%s: superblock of %s", what, s->path[ref]);
    CHECK(!(R.feature_map & MD_FEATURE_RESHAPE_ACTIVE), "%s: the reshape is still recorded", what);
    CHECK((int)R.raid_disks == n_after(s), "%s: raid_disks %u", what, R.raid_disks);
    for (int f = 0; f < nfailed; f++) {
        CHECK(read_sb(s->path[failed[f]], &F) == 0, "%s: failed member's own superblock", what);
        CHECK(F.dev_number < R.max_dev && R.dev_roles[F.dev_number] == MD_ROLE_FAULTY,
              "%s: member %d (device %u) has role 0x%x, not faulty", what, failed[f], F.dev_number,
              F.dev_number < R.max_dev ? R.dev_roles[F.dev_number] : 0);
    }
}

/* The array after: degraded (nfailed gone), every old byte and zeros after;
 * then a spare per failure recovered and a clean check. */
static void verify(struct setup *s, int nfailed, const char *what)
{
    const char *paths[MAXM];
    for (int i = 0; i < n_all(s); i++)
        paths[i] = s->path[i];
    char why[300];
    struct uraid_array *a = NULL;
    int rc = uraid_open(paths, n_all(s), NULL, &a, why, sizeof why);
    CHECK(rc == 0, "%s: open: %s", what, why);
    if (rc)
        return;
    struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.raid_devices == n_after(s), "%s: %d raid devices", what, info.raid_devices);
    CHECK(!!info.degraded == (nfailed > 0), "%s: degraded %d with %d failed", what, info.degraded, nfailed);
    uint8_t *buf = malloc(info.size_bytes);
    CHECK(uraid_read(a, buf, info.size_bytes, 0) == 0, "%s: read", what);
    CHECK(!memcmp(buf, s->data, s->old_bytes), "%s: the old bytes differ", what);
    int zeros = 1; /* a RAID-0 takes its size from the members' data_size (md's raid0): its end holds what was there */
    for (uint64_t i = s->old_bytes; info.level != 0 && i < info.size_bytes && zeros; i++)
        zeros = buf[i] == 0;
    CHECK(zeros, "%s: the new space is not zeros", what);
    struct uraid_job_status st;
    /* a failed member given back may serve as a spare itself: spares until it is whole */
    for (int f = 0; f < nfailed && (uraid_get_info(a, &info), info.degraded); f++) {
        /* the spare file, then (RAID-6, two failed) a failed member's own, wiped */
        const char *sp = s->path[n_all(s)];
        char wiped[200];
        if (f == 1) {
            snprintf(wiped, sizeof wiped, "%s/spare2.img", s->dir);
            uint8_t *zero = calloc(1, MEMBER_BYTES);
            put_file(wiped, zero, MEMBER_BYTES);
            free(zero);
            sp = wiped;
        }
        CHECK(uraid_add_spare(a, sp, why, sizeof why) == 0, "%s: add spare: %s", what, why);
        struct uraid_job_params jp = {.slot = -1};
        CHECK(uraid_job_start(a, URAID_JOB_RECOVER, &jp, why, sizeof why) == 0, "%s: recover: %s", what, why);
        uraid_job_wait(a, &st);
        CHECK(st.result == 0, "%s: recovery: %d %s", what, st.result, st.why);
    }
    uraid_get_info(a, &info);
    CHECK(!info.degraded, "%s: still degraded after the recovery", what);
    memset(buf, 0, info.size_bytes);
    CHECK(uraid_read(a, buf, info.size_bytes, 0) == 0 && !memcmp(buf, s->data, s->old_bytes),
          "%s: the bytes after the recovery differ", what);
    free(buf);
    if (info.level != 0) { /* RAID-0 has nothing to check */
        CHECK(uraid_job_start(a, URAID_JOB_CHECK, NULL, why, sizeof why) == 0, "%s: check: %s", what, why);
        uraid_job_wait(a, &st);
        CHECK(st.result == 0 && st.mismatch_sectors == 0, "%s: check: result %d, mismatch %llu", what, st.result,
              (unsigned long long)st.mismatch_sectors);
    }
    CHECK(uraid_close(a) == 0);
    char w2[200];
    snprintf(w2, sizeof w2, "%s/spare2.img", s->dir);
    unlink(w2);
}

struct fail {
    int member;
    const char *spec; /* e.g. "read-eio=2M+64K" */
};

/* A grow in which the members of f[] fail as their specs say. */
static void fail_case(int level, int nold, int nnew, uint32_t new_chunk, const struct fail *f, int nf, int expect_ok,
                      const char *what, struct rng *r)
{
    struct setup s = {.level = level, .nold = nold, .nnew = nnew, .new_chunk = new_chunk};
    harness_beginf("RAID-%d %d -> %d%s", level, nold, nold + nnew, what);
    int rc = make_setup(&s, r);
    CHECK(rc == 0, "setup");
    const char *spec[MAXM] = {0};
    int failed[MAXM];
    for (int i = 0; i < nf; i++) {
        spec[f[i].member] = f[i].spec;
        failed[i] = f[i].member;
    }
    char why[600];
    if (rc == 0) {
        rc = grow(&s, spec, why, sizeof why);
        if (expect_ok) {
            CHECK(rc == 0, "grow with %d failing: %s", nf, why);
            check_record(&s, failed[0] == 0 ? 1 : 0, failed, nf, what);
            verify(&s, nf, what);
        } else {
            /* RAID-5, a second failure: stopped, the first recorded; the same grow again (the second
             * member works again, the first stays failed) goes on degraded */
            CHECK(rc == -EIO && strstr(why, "no redundancy left"), "a second failure stops the grow: %d %s", rc, why);
            const char *again[MAXM] = {0};
            again[f[0].member] = f[0].spec;
            rc = grow(&s, again, why, sizeof why);
            CHECK(rc == 0, "the same grow again: %s", why);
            check_record(&s, 2, failed, 1, what);
            verify(&s, 1, what);
        }
    }
    harness_end();
    teardown(&s);
}

/* A level change whose restripe loses the members of f[]: the restripe
 * goes on degraded (md's reshape does); the takeover after it (RAID-6 ->
 * 5 drops the Q member, 5 -> 0 the parity member) runs when the new level
 * bears the loss (takeover_ok), else it is refused with one line and the
 * array stays whole at the restriped level. degraded_after: members the
 * array misses afterwards (a lost Q or parity member leaves none). */
static void level_case(int level, int nold, int nnew, int to_level, int n_after, const struct fail *f, int nf,
                       int takeover_ok, int degraded_after, const char *what, struct rng *r)
{
    struct setup s = {.level = level, .nold = nold, .nnew = nnew, .level_set = 1, .to_level = to_level,
                      .n_after = takeover_ok ? n_after : 0};
    harness_beginf("RAID-%d %d -> RAID-%d %d%s", level, nold, to_level, n_after, what);
    int rc = make_setup(&s, r);
    CHECK(rc == 0, "setup");
    const char *spec[MAXM] = {0};
    int failed[MAXM];
    for (int i = 0; i < nf; i++) {
        spec[f[i].member] = f[i].spec;
        failed[i] = f[i].member;
    }
    char why[600];
    if (rc == 0) {
        rc = grow(&s, spec, why, sizeof why);
        if (takeover_ok)
            CHECK(rc == 0, "grow with %d failing: %s", nf, why);
        else
            CHECK(rc == -EIO && strstr(why, "cannot run without") && strstr(why, s.path[failed[0]]),
                  "the takeover refused, naming the lost member: %d %s", rc, why);
        int ref = failed[0] == 0 ? 1 : 0;
        struct md_sb R;
        CHECK(read_sb(s.path[ref], &R) == 0 && (int)R.level == (takeover_ok ? to_level : level == 5 && to_level == 6 ? 6 : level),
              "%s: level %u after the grow", what, R.level);
        check_record(&s, ref, failed, nf, what);
        verify(&s, degraded_after, what);
    }
    harness_end();
    teardown(&s);
}

/* A power cut at every member write of a grow in which member `fm` fails as
 * `fspec` says; the member stays failed in the grow again. */
static void cut_case(int level, int nold, int nnew, int to_level, int fm, const char *fspec, const char *what,
                     struct rng *r, uint64_t seed)
{
    struct setup s = {.level = level, .nold = nold, .nnew = nnew, .level_set = to_level >= 0, .to_level = to_level};
    harness_beginf("RAID-%d %d -> %d%s: no cut", level, nold, nold + nnew, what);
    int rc = make_setup(&s, r);
    CHECK(rc == 0, "setup");
    char why[600], spec[MAXM][200];
    const char *sp[MAXM], *again[MAXM] = {0};
    again[fm] = fspec;
    uint64_t total = 0;
    if (rc == 0) {
        for (int i = 0; i < n_all(&s); i++) {
            snprintf(spec[i], sizeof spec[i], "powercut=rsfc,seed=1,after=0%s%s", i == fm ? ";" : "",
                     i == fm ? fspec : "");
            sp[i] = spec[i];
        }
        rc = grow(&s, sp, why, sizeof why);
        CHECK(rc == 0, "grow: %s", why);
        struct powercut_stats st;
        struct powercut_domain *d = powercut_domain_find("rsfc");
        if (d) {
            powercut_get_stats(d, &st);
            total = st.writes;
        }
        powercut_domain_forget("rsfc");
        CHECK(total > 10, "%llu member writes", (unsigned long long)total);
        int failed[1] = {fm};
        check_record(&s, fm == 0 ? 1 : 0, failed, 1, what);
    }
    harness_end();
    for (uint64_t after = 1; rc == 0 && after <= total; after++) {
        harness_beginf("RAID-%d %d -> %d%s: power cut at member write %llu of %llu", level, nold, nold + nnew, what,
                       (unsigned long long)after, (unsigned long long)total);
        restore(&s);
        char dom[32];
        snprintf(dom, sizeof dom, "rsfc%llu", (unsigned long long)after);
        for (int i = 0; i < n_all(&s); i++)
            snprintf(spec[i], sizeof spec[i], "powercut=%s,seed=%llu,after=%llu,keep=33,tear=33%s%s", dom,
                     (unsigned long long)(seed + after), (unsigned long long)after, i == fm ? ";" : "",
                     i == fm ? fspec : "");
        int cut = grow(&s, sp, why, sizeof why);
        powercut_domain_forget(dom);
        CHECK(cut != 0, "the grow finished through a cut at write %llu", (unsigned long long)after);
        int rc2 = grow(&s, again, why, sizeof why);
        CHECK(rc2 == 0 || rc2 == -EALREADY, "the same grow again: %d %s", rc2, why);
        if (rc2 == 0 || rc2 == -EALREADY)
            verify(&s, 1, "after the cut");
        harness_end();
    }
    teardown(&s);
}

/* md's 25raid456-reshape-while-recovery, offline: a recovery stopped
 * partway (the spare records recovery_offset) refuses the grow with one
 * line and nothing written, every member byte for byte; after the
 * recovery the grow goes through. */
static void recovery_refusal(int level, struct rng *r)
{
    struct setup s = {.level = level, .nold = 4, .nnew = 1};
    harness_beginf("RAID-%d: a grow with a recovery partway is refused, nothing written", level);
    int rc = make_setup(&s, r);
    CHECK(rc == 0, "setup");
    char why[600];
    static const char *lat[MAXM] = {"latency=0us", "latency=0us", "latency=0us", "latency=0us"};
    struct uraid_open_params op = {.sync_speed_max_kib = 1000, .sync_speed_min_kib = 1000, .member_sim = lat};
    struct uraid_array *a = NULL;
    const char *paths[MAXM] = {s.path[0], s.path[1], s.path[2], s.path[3]};
    if (rc == 0 && (rc = uraid_open(paths, 4, &op, &a, why, sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        CHECK(uraid_inject(a, 1, "vanish") == 0);
        memset(s.data, 0x5a, 4096);
        CHECK(uraid_write(a, s.data, 4096, 0) == 0, "the write that finds member 1 gone");
        CHECK(uraid_add_spare(a, s.path[5], why, sizeof why) == 0, "add: %s", why);
        struct uraid_job_params jp = {.slot = -1};
        CHECK(uraid_job_start(a, URAID_JOB_RECOVER, &jp, why, sizeof why) == 0, "recover: %s", why);
        usleep(300000);
        uraid_job_cancel(a);
        CHECK(uraid_close(a) == 0);
        /* slot 1 is the spare now, recovered partway */
        char t[160];
        memcpy(t, s.path[1], sizeof t);
        memcpy(s.path[1], s.path[5], sizeof t);
        memcpy(s.path[5], t, sizeof t);
        for (int i = 0; i < n_all(&s); i++)
            get_file(s.path[i], s.image[i], MEMBER_BYTES);
        rc = grow(&s, NULL, why, sizeof why);
        CHECK(rc == -EBUSY && strstr(why, "performing a recovery") && strstr(why, "cannot be reshaped"),
              "the grow with a recovery partway: %d %s", rc, why);
        uint8_t *buf = malloc(MEMBER_BYTES);
        for (int i = 0; i < n_all(&s); i++)
            CHECK(get_file(s.path[i], buf, MEMBER_BYTES) == 0 && !memcmp(buf, s.image[i], MEMBER_BYTES),
                  "the refused grow wrote to member %d", i);
        free(buf);
        const char *p4[MAXM] = {s.path[0], s.path[1], s.path[2], s.path[3]};
        rc = uraid_open(p4, 4, NULL, &a, why, sizeof why);
        CHECK(rc == 0, "open to finish the recovery: %s", why);
        if (rc == 0) {
            struct uraid_job_status st;
            CHECK(uraid_job_start(a, URAID_JOB_RECOVER, &jp, why, sizeof why) == 0, "carry the recovery on: %s", why);
            uraid_job_wait(a, &st);
            CHECK(st.result == 0, "the recovery: %s", st.why);
            CHECK(uraid_close(a) == 0);
            rc = grow(&s, NULL, why, sizeof why);
            CHECK(rc == 0, "the grow after the recovery: %s", why);
            if (rc == 0)
                verify(&s, 0, "grown after the recovery");
        }
    }
    harness_end();
    teardown(&s);
}

/* Growing an array already degraded (md's raid5_start_reshape takes one
 * that has not failed): members `lose` fail while served (marked faulty),
 * then the offline grow gets the members left (give_failed: the failed
 * ones too, whose stale superblocks are passed over) and goes on
 * degraded from the start. A member only left out (not recorded failed)
 * is refused, nothing written. */
static void degraded_grow(int level, int nold, int nnew, const int *lose, int nlose, int give_failed, const char *what,
                          struct rng *r)
{
    struct setup s = {.level = level, .nold = nold, .nnew = nnew};
    harness_beginf("RAID-%d %d -> %d already degraded%s", level, nold, nold + nnew, what);
    int rc = make_setup(&s, r);
    CHECK(rc == 0, "setup");
    char why[600];
    static const char *lat[MAXM] = {"latency=0us", "latency=0us", "latency=0us", "latency=0us", "latency=0us",
                                    "latency=0us"};
    struct uraid_array *a = NULL;
    const char *paths[MAXM];
    for (int i = 0; i < n_all(&s); i++)
        paths[i] = s.path[i];
    if (rc == 0 && (rc = uraid_open(paths, nold, &(struct uraid_open_params){.member_sim = lat}, &a, why,
                                    sizeof why)) != 0)
        CHECK(rc == 0, "open: %s", why);
    if (rc == 0) {
        for (int f = 0; f < nlose; f++) {
            CHECK(uraid_inject(a, lose[f], "vanish") == 0);
            memset(s.data + 8192 * f, 0x33 + f, 8192);
            CHECK(uraid_write(a, s.data + 8192 * f, 8192, 8192 * (uint64_t)f) == 0, "the write that finds %d gone",
                  lose[f]);
        }
        CHECK(uraid_close(a) == 0);
        for (int i = 0; i < n_all(&s); i++)
            get_file(s.path[i], s.image[i], MEMBER_BYTES);
        /* an in-sync member left out besides the failed: refused, nothing written */
        int keep = lose[0] == 0 ? 1 : 0;
        struct uraid_grow_params p = {.raid_devices = n_all(&s), .checkpoint_ms = 1u << 30};
        int left = 0;
        const char *sub[MAXM];
        for (int i = 0; i < nold; i++) {
            int failed = 0;
            for (int f = 0; f < nlose; f++)
                failed |= lose[f] == i;
            if (i != keep && !failed)
                sub[left++] = s.path[i];
        }
        for (int f = 0; f < nlose; f++)
            sub[left++] = s.path[lose[f]];
        rc = uraid_grow_members(sub, left, paths + nold, nnew, &p, NULL, why, sizeof why);
        /* RAID-6 missing one bears another: the refusal says the member was left out; else too few */
        int bears = level == 6 && nlose == 1;
        CHECK(rc == -EINVAL && strstr(why, bears ? "was not given" : "give all"), "a member left out: %d %s", rc, why);
        uint8_t *buf = malloc(MEMBER_BYTES);
        for (int i = 0; i < n_all(&s); i++)
            CHECK(get_file(s.path[i], buf, MEMBER_BYTES) == 0 && !memcmp(buf, s.image[i], MEMBER_BYTES),
                  "the refused grow wrote to member %d", i);
        free(buf);
        /* the grow: the members in sync (and the failed ones when give_failed) */
        left = 0;
        for (int i = 0; i < nold; i++) {
            int failed = 0;
            for (int f = 0; f < nlose; f++)
                failed |= lose[f] == i;
            if (!failed || give_failed)
                sub[left++] = s.path[i];
        }
        rc = uraid_grow_members(sub, left, paths + nold, nnew, &p, NULL, why, sizeof why);
        CHECK(rc == 0, "the degraded grow: %s", why);
        if (rc == 0) {
            check_record(&s, keep, lose, nlose, what);
            verify(&s, nlose, what);
        }
    }
    harness_end();
    teardown(&s);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "reshape_fault");
    struct rng r;
    uint64_t seed = harness_seed();
    rng_seed(&r, seed);
    degraded_grow(5, 4, 1, (int[]){2}, 1, 0, ", the failed member not given", &r);
    degraded_grow(5, 4, 1, (int[]){0}, 1, 1, ", the failed member given too", &r);
    degraded_grow(6, 4, 1, (int[]){1}, 1, 0, "", &r);
    degraded_grow(6, 5, 1, (int[]){0, 3}, 2, 1, " by two", &r);
    recovery_refusal(5, &r);
    recovery_refusal(6, &r);
    fail_case(5, 4, 1, 0, (struct fail[]){{1, "read-eio=2M+64K"}}, 1, 1, ", an old member fails reading halfway", &r);
    fail_case(5, 4, 1, 0, (struct fail[]){{4, "write-eio=2M+64K"}}, 1, 1, ", the new member fails writing halfway", &r);
    fail_case(5, 4, 1, 0, (struct fail[]){{2, "write-eio=1M+4K"}}, 1, 1, ", an old member fails writing early", &r);
    fail_case(5, 4, 0, 256, (struct fail[]){{0, "read-eio=2M+4K"}}, 1, 1, ", chunk 128K, member 0 fails reading", &r);
    fail_case(6, 5, 1, 0, (struct fail[]){{3, "read-eio=2M+256K"}}, 1, 1, ", one member fails", &r); /* 4 rows: a data chunk among them (the copy reads no old parity) */
    fail_case(6, 5, 1, 0, (struct fail[]){{0, "read-eio=1536K+4K"}, {5, "write-eio=3M+4K"}}, 2, 1,
              ", two members fail (an old one reading, the new one writing)", &r);
    fail_case(6, 5, 1, 0, (struct fail[]){{1, "read-eio=2M+4K"}, {2, "read-eio=2M+4K"}}, 2, 1,
              ", two members fail in the same window", &r);
    fail_case(5, 4, 1, 0, (struct fail[]){{1, "read-eio=1536K+4K"}, {3, "read-eio=3M+4K"}}, 2, 0,
              ", a second failure stops it", &r);
    /* level changes whose restripe loses a member (md's reshape goes on degraded) */
    level_case(5, 4, 1, 6, 5, (struct fail[]){{1, "read-eio=2M+64K"}}, 1, 1, 1,
               ", an old member fails reading halfway (the new Q member still recovering)", &r);
    level_case(5, 4, 1, 6, 5, (struct fail[]){{4, "write-eio=2M+64K"}}, 1, 1, 1,
               ", the new Q member fails writing halfway", &r);
    level_case(5, 4, 1, 6, 5, (struct fail[]){{0, "read-eio=1536K+4K"}, {4, "write-eio=3M+4K"}}, 2, 1, 2,
               ", an old member and the new Q member fail", &r);
    level_case(6, 5, 0, 5, 4, (struct fail[]){{1, "read-eio=2M+64K"}}, 1, 1, 1,
               ", a member fails: RAID-5 degraded, the Q member a spare", &r);
    level_case(6, 5, 0, 5, 4, (struct fail[]){{4, "write-eio=2M+64K"}}, 1, 1, 0,
               ", the member that keeps Q fails: RAID-5 whole", &r);
    level_case(6, 5, 0, 5, 4, (struct fail[]){{0, "read-eio=2M+4K"}, {2, "read-eio=2M+4K"}}, 2, 0, 2,
               ", two members fail: the takeover refused, RAID-6 degraded", &r);
    level_case(5, 4, 0, 4, 4, (struct fail[]){{2, "read-eio=2M+64K"}}, 1, 1, 1, ", a member fails", &r);
    level_case(5, 4, 0, 0, 3, (struct fail[]){{3, "write-eio=2M+64K"}}, 1, 1, 0,
               ", the parity member fails: RAID-0 whole", &r);
    level_case(5, 4, 0, 0, 3, (struct fail[]){{1, "read-eio=2M+64K"}}, 1, 0, 1,
               ", a data member fails: the takeover refused, RAID-5 degraded", &r);
    cut_case(5, 4, 1, -1, 1, "read-eio=2M+64K", ", an old member fails reading", &r, seed);
    /* the record of a lost member beside the new Q member still recovering, carried on */
    cut_case(5, 4, 1, 6, 2, "read-eio=2M+64K", ", RAID-6 now, an old member fails reading", &r, seed);
    if (!getenv("URAID_TEST_QUICK"))
        cut_case(6, 5, 1, -1, 5, "write-eio=2M+64K", ", the new member fails writing", &r, seed);
    return harness_finish();
}
