/* Assembly: every refusal of uraid_open, each with a negative errno and a
 * one-line reason naming the member, and every member file byte-for-byte
 * unchanged afterwards; stale members left out (events lag > 1) and one
 * event behind accepted; dirty + degraded refused without force and opened
 * with force without writing; opening writes nothing; a clean close after
 * writes records the array clean, an array found dirty stays dirty; and a
 * member left out of a degraded write that "crashed" before the clean
 * close (one event behind) is not taken back as in sync.
 *
 * Randomised data: prints its seed; URAID_TEST_SEED=N replays. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"
#include "meta/superblock.h"
#include "uraid.h"

static struct rng rng;
static char dir[256];

#define MEMBER_BYTES (3u << 20)
#define MAXM 8

/* ---- files ---------------------------------------------------------------- */

struct snap {
    int n;
    const char *path[MAXM * 2];
    uint8_t *data[MAXM * 2];
    size_t len[MAXM * 2];
};

static uint8_t *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct stat st;
    fstat(fd, &st);
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *len = got;
    return buf;
}

static void spit(const char *path, const uint8_t *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0, "open %s", path);
    if (fd < 0)
        return;
    CHECK(ftruncate(fd, (off_t)len) == 0);
    CHECK(pwrite(fd, data, len, 0) == (ssize_t)len);
    close(fd);
}

static void snap_take(struct snap *s, const char *const *paths, int n)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    for (int i = 0; i < n; i++) {
        s->path[i] = paths[i];
        s->data[i] = slurp(paths[i], &s->len[i]);
    }
}

static void snap_free(struct snap *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->data[i]);
    s->n = 0;
}

/* CHECKs that every file still holds exactly what the snapshot recorded. */
static void snap_same(const struct snap *s, const char *when)
{
    for (int i = 0; i < s->n; i++) {
        size_t len;
        uint8_t *now = slurp(s->path[i], &len);
        CHECK(now && len == s->len[i], "%s: %s changed size (%zu -> %zu)", when, s->path[i], s->len[i], len);
        if (now && len == s->len[i] && memcmp(now, s->data[i], len)) {
            size_t at = 0;
            while (now[at] == s->data[i][at])
                at++;
            CHECK(0, "%s: %s changed (first at byte %zu)", when, s->path[i], at);
        }
        free(now);
    }
}

static void snap_restore(const struct snap *s)
{
    for (int i = 0; i < s->n; i++)
        spit(s->path[i], s->data[i], s->len[i]);
}

/* Encodes sb (with a fresh checksum) into the member's superblock. */
static void sb_put(const char *path, const struct md_sb *sb)
{
    uint8_t buf[MD_SB_BYTES];
    CHECK(md_sb_encode(sb, buf) == 0);
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, buf, sizeof buf, 4096) == (ssize_t)sizeof buf, "write sb %s", path);
    if (fd >= 0)
        close(fd);
}

/* ---- arrays ----------------------------------------------------------------- */

struct arr {
    int level, n;
    char path[MAXM][300];
    const char *p[MAXM];
    uint8_t *data; /* what the array holds */
    uint64_t size;
};

static void arr_make(struct arr *A, const char *name, int level, int n)
{
    memset(A, 0, sizeof *A);
    A->level = level;
    A->n = n;
    for (int i = 0; i < n; i++) {
        snprintf(A->path[i], sizeof A->path[i], "%s/%s%d.img", dir, name, i);
        A->p[i] = A->path[i];
        int fd = open(A->path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        CHECK(fd >= 0 && ftruncate(fd, MEMBER_BYTES) == 0, "member %s", A->path[i]);
        if (fd >= 0)
            close(fd);
    }
    struct uraid_create_params cp = {
        .level = level, .raid_devices = n, .chunk_bytes = 8192, .layout = -1, .name = name, .homehost = "test",
        .consistency_policy = URAID_POLICY_RESYNC, /* md's rules without a log (test_ppl.c has the PPL's) */
    };
    char why[512];
    int rc = uraid_create(A->p, n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "create %s: %d (%s)", name, rc, why);
    struct uraid_array *a;
    rc = uraid_open(A->p, n, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "open %s: %d (%s)", name, rc, why);
    if (rc)
        return;
    A->size = uraid_size(a);
    A->data = calloc(1, A->size);
    uraid_close(a);
}

static void arr_free(struct arr *A)
{
    for (int i = 0; i < A->n; i++)
        unlink(A->path[i]);
    free(A->data);
    A->data = NULL;
}

/* Writes a few random ranges through an open array and into the model. */
static void arr_scribble(struct arr *A, struct uraid_array *a)
{
    for (int i = 0; i < 8; i++) {
        uint64_t len = (1 + rng_below(&rng, 64)) * 512;
        uint64_t off = rng_below(&rng, (A->size - len) / 512) * 512;
        uint8_t *buf = malloc(len);
        rng_fill(&rng, buf, len);
        int rc = uraid_write(a, buf, len, off);
        CHECK(rc == 0, "write %llu at %llu: %d", (unsigned long long)len, (unsigned long long)off, rc);
        memcpy(A->data + off, buf, len);
        free(buf);
    }
}

static void arr_verify(struct arr *A, struct uraid_array *a)
{
    uint8_t *buf = malloc(A->size);
    int rc = uraid_read(a, buf, A->size, 0);
    CHECK(rc == 0, "read the whole array: %d", rc);
    CHECK(rc || !memcmp(buf, A->data, A->size), "array contents differ from what was written");
    free(buf);
}

/* Open, scribble, close with the given members. */
static void arr_write_with(struct arr *A, const char *const *paths, int n)
{
    struct uraid_array *a;
    char why[512];
    int rc = uraid_open(paths, n, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "open: %d (%s)", rc, why);
    if (rc)
        return;
    arr_scribble(A, a);
    CHECK(uraid_close(a) == 0);
}

/* uraid_open must refuse with `err`, a reason containing every string in
 * `want` (NULL-terminated), and leave every file in `files` unchanged. */
static void expect_refusal(const char *const *paths, int n, const struct uraid_open_params *p, int err,
                           const char *const *files, int nfiles, const char *const *want)
{
    struct snap s;
    snap_take(&s, files, nfiles);
    struct uraid_array *a = NULL;
    char why[512];
    memset(why, 'x', sizeof why);
    int rc = uraid_open(paths, n, p, &a, why, sizeof why);
    CHECK(rc == err, "open returned %d (%s), expected %d", rc, rc ? why : "opened", err);
    CHECK(rc >= 0 || a == NULL, "a refused open must not hand out an array");
    if (rc == 0 && a)
        uraid_close(a);
    why[sizeof why - 1] = 0;
    CHECK(why[0] && !strchr(why, '\n') && strlen(why) < 400, "why is one line: '%s'", why);
    for (int i = 0; want && want[i]; i++)
        CHECK(strstr(why, want[i]) != NULL, "why '%s' does not mention '%s'", why, want[i]);
    printf("       refused (%d): %s\n", rc, why);
    snap_same(&s, "after the refused open");
    snap_free(&s);
}

/* ---- cases -------------------------------------------------------------------- */

static void test_open_writes_nothing(void)
{
    struct arr A;
    arr_make(&A, "quiet", 5, 4);
    struct snap s;
    snap_take(&s, A.p, A.n);
    for (int ro = 0; ro < 2; ro++) {
        struct uraid_open_params op = {.readonly = ro};
        struct uraid_array *a;
        char why[512];
        int rc = uraid_open(A.p, A.n, &op, &a, why, sizeof why);
        CHECK(rc == 0, "open: %d (%s)", rc, why);
        if (rc)
            continue;
        snap_same(&s, "while open");
        arr_verify(&A, a);
        struct uraid_array_info info;
        CHECK(uraid_get_info(a, &info) == 0 && info.clean && info.degraded == 0);
        CHECK(uraid_close(a) == 0);
        snap_same(&s, ro ? "after a read-only open and close" : "after open and close without writes");
    }
    snap_free(&s);
    arr_free(&A);
}

static void test_clean_close(void)
{
    struct arr A;
    arr_make(&A, "close", 6, 5);
    struct md_sb sb0, sb;
    CHECK(fx_read_sb_path(A.p[0], &sb0) == 0 && sb0.resync_offset == MD_RESYNC_CLEAN, "created clean");
    struct uraid_array *a;
    char why[512];
    CHECK(uraid_open(A.p, A.n, NULL, &a, why, sizeof why) == 0, "%s", why);
    arr_scribble(&A, a);
    for (int i = 0; i < A.n; i++)
        CHECK(fx_read_sb_path(A.p[i], &sb) == 0 && sb.resync_offset == 0 && sb.events == sb0.events + 1,
              "%s dirty on disk while written (resync_offset %llu, events %llu)", A.p[i],
              (unsigned long long)sb.resync_offset, (unsigned long long)sb.events);
    CHECK(uraid_close(a) == 0);
    for (int i = 0; i < A.n; i++)
        CHECK(fx_read_sb_path(A.p[i], &sb) == 0 && sb.resync_offset == MD_RESYNC_CLEAN && sb.events == sb0.events + 2,
              "%s clean after close (resync_offset %llu, events %llu)", A.p[i], (unsigned long long)sb.resync_offset,
              (unsigned long long)sb.events);
    CHECK(uraid_open(A.p, A.n, NULL, &a, why, sizeof why) == 0, "%s", why);
    arr_verify(&A, a);
    uraid_close(a);
    arr_free(&A);
}

static void test_different_arrays(void)
{
    struct arr A, B;
    arr_make(&A, "alpha", 5, 4);
    arr_make(&B, "beta", 5, 4);
    const char *files[] = {A.p[0], A.p[1], A.p[2], A.p[3], B.p[0], B.p[1], B.p[2], B.p[3]};
    const char *mix[] = {A.p[0], A.p[1], A.p[2], B.p[3]};
    const char *want[] = {B.p[3], "different array", NULL};
    expect_refusal(mix, 4, NULL, -EINVAL, files, 8, want);
    const char *mix2[] = {B.p[1], A.p[0], A.p[1], A.p[2], A.p[3]};
    const char *want2[] = {B.p[1], "different array", NULL};
    expect_refusal(mix2, 5, NULL, -EINVAL, files, 8, want2);
    arr_free(&A);
    arr_free(&B);
}

static void test_copied_member(void)
{
    struct arr A;
    arr_make(&A, "copy", 5, 4);
    char copy[320];
    snprintf(copy, sizeof copy, "%s/copy1-again.img", dir);
    size_t len;
    uint8_t *d = slurp(A.p[1], &len);
    spit(copy, d, len);
    free(d);
    const char *files[] = {A.p[0], A.p[1], A.p[2], A.p[3], copy};
    const char *with_copy[] = {A.p[0], A.p[1], A.p[2], copy};
    const char *want[] = {copy, A.p[1], "slot", NULL};
    expect_refusal(with_copy, 4, NULL, -EINVAL, files, 5, want);
    const char *all[] = {copy, A.p[0], A.p[1], A.p[2], A.p[3]};
    expect_refusal(all, 5, NULL, -EINVAL, files, 5, want);
    unlink(copy);
    arr_free(&A);
}

static void test_features_and_checksum(void)
{
    struct arr A;
    arr_make(&A, "feat", 6, 5);
    struct snap orig;
    snap_take(&orig, A.p, A.n);
    struct md_sb sb;
    /* a bit md does not know */
    CHECK(fx_read_sb_path(A.p[2], &sb) == 0);
    sb.feature_map |= 0x40000;
    sb_put(A.p[2], &sb);
    const char *want[] = {A.p[2], "feature", NULL};
    expect_refusal(A.p, A.n, NULL, -EOPNOTSUPP, A.p, A.n, want);
    snap_restore(&orig);
    /* a bit md knows but uraid cannot honour (a reshape in progress) */
    CHECK(fx_read_sb_path(A.p[4], &sb) == 0);
    sb.feature_map |= MD_FEATURE_RESHAPE_ACTIVE;
    sb_put(A.p[4], &sb);
    const char *want2[] = {A.p[4], "feature", NULL};
    expect_refusal(A.p, A.n, NULL, -EOPNOTSUPP, A.p, A.n, want2);
    snap_restore(&orig);
    /* one flipped byte in the set name, checksum left as it was */
    size_t len;
    uint8_t *d = slurp(A.p[1], &len);
    d[4096 + 32 + 3] ^= 0x20;
    spit(A.p[1], d, len);
    free(d);
    const char *want3[] = {A.p[1], "checksum", NULL};
    expect_refusal(A.p, A.n, NULL, -EBADMSG, A.p, A.n, want3);
    snap_restore(&orig);
    /* restored: opens again */
    struct uraid_array *a;
    char why[512];
    CHECK(uraid_open(A.p, A.n, NULL, &a, why, sizeof why) == 0, "%s", why);
    uraid_close(a);
    snap_free(&orig);
    arr_free(&A);
}

static void test_truncated(void)
{
    struct arr A;
    arr_make(&A, "short", 5, 3);
    struct md_sb sb;
    CHECK(fx_read_sb_path(A.p[1], &sb) == 0);
    /* one chunk short of data_offset + size */
    CHECK(truncate(A.p[1], (off_t)((sb.data_offset + sb.size - 16) * 512)) == 0);
    const char *want[] = {A.p[1], "smaller", NULL};
    expect_refusal(A.p, A.n, NULL, -EINVAL, A.p, A.n, want);
    /* so short that the superblock is gone */
    CHECK(truncate(A.p[2], 6000) == 0);
    const char *want2[] = {A.p[2], "too small", NULL};
    const char *two[] = {A.p[0], A.p[2]};
    expect_refusal(two, 2, NULL, -EINVAL, A.p, A.n, want2);
    arr_free(&A);
}

static void test_too_many_missing(void)
{
    static const struct { int level, n, give; } cases[] = {{0, 3, 2}, {4, 4, 2}, {5, 4, 2}, {5, 6, 3}, {6, 5, 2}, {6, 7, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct arr A;
        arr_make(&A, "few", cases[c].level, cases[c].n);
        /* give a random subset, shuffled */
        const char *given[MAXM];
        int idx[MAXM];
        for (int i = 0; i < A.n; i++)
            idx[i] = i;
        for (int i = A.n - 1; i > 0; i--) {
            int j = (int)rng_below(&rng, (uint64_t)i + 1), t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        for (int i = 0; i < cases[c].give; i++)
            given[i] = A.p[idx[i]];
        const char *want[] = {"missing", NULL};
        expect_refusal(given, cases[c].give, NULL, -ENODEV, A.p, A.n, want);
        arr_free(&A);
    }
    /* RAID-5: one member missing and one stale is one too many */
    struct arr A;
    arr_make(&A, "few", 5, 4);
    const char *without3[] = {A.p[0], A.p[1], A.p[2]};
    arr_write_with(&A, without3, 3); /* member 3 is now stale */
    const char *given[] = {A.p[3], A.p[1], A.p[2]};
    const char *want[] = {"missing", "stale", A.p[3], NULL};
    expect_refusal(given, 3, NULL, -ENODEV, A.p, A.n, want);
    arr_free(&A);
}

static void set_dirty(struct arr *A)
{
    for (int i = 0; i < A->n; i++) {
        struct md_sb sb;
        CHECK(fx_read_sb_path(A->p[i], &sb) == 0);
        sb.resync_offset = 0;
        sb_put(A->p[i], &sb);
    }
}

static void test_dirty_degraded(void)
{
    struct arr A;
    arr_make(&A, "dirty", 5, 4);
    arr_write_with(&A, A.p, A.n);
    set_dirty(&A);
    const char *three[] = {A.p[2], A.p[0], A.p[3]};
    const char *want[] = {"cleanly", "force", NULL};
    expect_refusal(three, 3, NULL, -EUCLEAN, A.p, A.n, want);

    /* with force it opens, reads right, and writes nothing (open or close) */
    struct snap s;
    snap_take(&s, A.p, A.n);
    struct uraid_open_params force = {.force = 1};
    struct uraid_array *a;
    char why[512];
    int rc = uraid_open(three, 3, &force, &a, why, sizeof why);
    CHECK(rc == 0, "forced open: %d (%s)", rc, why);
    if (rc == 0) {
        snap_same(&s, "after a forced open");
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(!info.clean && info.degraded == 1 && info.member[1].state == URAID_MEMBER_MISSING,
              "clean %d degraded %d slot 1 state %d", info.clean, info.degraded, info.member[1].state);
        arr_verify(&A, a);
        CHECK(uraid_close(a) == 0);
        snap_same(&s, "after a forced open and close");
    }
    snap_free(&s);

    /* dirty but not degraded opens without force; it stays dirty after
     * writes and a close: it must be resynced first */
    rc = uraid_open(A.p, A.n, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "dirty, not degraded: %d (%s)", rc, why);
    if (rc == 0) {
        arr_scribble(&A, a);
        arr_verify(&A, a);
        CHECK(uraid_close(a) == 0);
    }
    for (int i = 0; i < A.n; i++) {
        struct md_sb sb;
        CHECK(fx_read_sb_path(A.p[i], &sb) == 0 && sb.resync_offset != MD_RESYNC_CLEAN, "%s still dirty", A.p[i]);
    }

    /* writes through a forced dirty + degraded open: the member left out
     * missed them, so it must not come back in sync afterwards even though
     * the array was already dirty (no clean/dirty transition to bump events) */
    rc = uraid_open(three, 3, &force, &a, why, sizeof why);
    CHECK(rc == 0, "forced open: %d (%s)", rc, why);
    if (rc == 0) {
        arr_scribble(&A, a);
        CHECK(uraid_close(a) == 0);
    }
    const char *want2[] = {"cleanly", "force", A.p[1], NULL};
    expect_refusal(A.p, A.n, NULL, -EUCLEAN, A.p, A.n, want2);
    rc = uraid_open(A.p, A.n, &force, &a, why, sizeof why);
    CHECK(rc == 0, "forced open with every member: %d (%s)", rc, why);
    if (rc == 0) {
        struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.degraded == 1 && info.member[1].state == URAID_MEMBER_MISSING, "degraded %d, slot 1 state %d",
              info.degraded, info.member[1].state);
        arr_verify(&A, a);
        CHECK(uraid_close(a) == 0);
    }
    arr_free(&A);
}

/* Opens all of A's members and expects slot `stale_slot` left out as stale. */
static void expect_stale(struct arr *A, int stale_slot)
{
    struct snap s;
    snap_take(&s, A->p, A->n);
    const char *shuffled[MAXM];
    for (int i = 0; i < A->n; i++)
        shuffled[i] = A->p[(i + 2) % A->n];
    struct uraid_array *a;
    char why[512];
    int rc = uraid_open(shuffled, A->n, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "open with a stale member: %d (%s)", rc, why);
    if (rc)
        return;
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.degraded == 1, "degraded %d", info.degraded);
    CHECK(info.member[stale_slot].state == URAID_MEMBER_MISSING && info.member[stale_slot].path[0] == 0,
          "slot %d state %d path '%s'", stale_slot, info.member[stale_slot].state, info.member[stale_slot].path);
    int found = 0;
    for (int e = A->n; e < info.nmembers; e++)
        if (!strcmp(info.member[e].path, A->p[stale_slot]))
            found = info.member[e].state == URAID_MEMBER_STALE && info.member[e].slot == -1;
    CHECK(found && info.nmembers == A->n + 1, "%s reported as stale (%d entries)", A->p[stale_slot], info.nmembers);
    arr_verify(A, a);
    CHECK(uraid_close(a) == 0);
    snap_same(&s, "after opening with a stale member");
    snap_free(&s);
}

static void test_stale(void)
{
    struct arr A;
    arr_make(&A, "stale", 6, 5);
    arr_write_with(&A, A.p, A.n);
    struct snap orig;
    snap_take(&orig, A.p, A.n);
    struct md_sb sb;
    /* two events behind: stale */
    CHECK(fx_read_sb_path(A.p[2], &sb) == 0);
    sb.events -= 2;
    sb_put(A.p[2], &sb);
    expect_stale(&A, 2);
    snap_restore(&orig);
    /* one event behind: accepted */
    CHECK(fx_read_sb_path(A.p[3], &sb) == 0);
    sb.events -= 1;
    sb_put(A.p[3], &sb);
    struct uraid_array *a;
    char why[512];
    int rc = uraid_open(A.p, A.n, NULL, &a, why, sizeof why);
    CHECK(rc == 0, "one event behind: %d (%s)", rc, why);
    if (rc == 0) {
        static struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.degraded == 0 && info.member[3].state == URAID_MEMBER_IN_SYNC && info.nmembers == A.n,
              "degraded %d, slot 3 state %d", info.degraded, info.member[3].state);
        arr_verify(&A, a);
        uraid_close(a);
    }
    snap_restore(&orig);
    /* the real thing: member 4 misses writes, then comes back */
    const char *without4[] = {A.p[0], A.p[1], A.p[2], A.p[3]};
    arr_write_with(&A, without4, 4);
    expect_stale(&A, 4);
    snap_free(&orig);
    arr_free(&A);
}

/* A degraded write "crashes" before the clean close: the member that was
 * left out is then only one event behind, yet it missed the writes. md
 * rewrites dev_roles on every superblock update, so the others no longer
 * list it in its slot; it must not come back as in sync. */
static void test_crash_while_degraded(void)
{
    struct arr A;
    arr_make(&A, "crash", 5, 4);
    const char *without1[] = {A.p[0], A.p[2], A.p[3]};
    struct uraid_array *a;
    char why[512];
    CHECK(uraid_open(without1, 3, NULL, &a, why, sizeof why) == 0, "%s", why);
    arr_scribble(&A, a);
    struct snap crash; /* the members as a crash right now leaves them */
    snap_take(&crash, A.p, A.n);
    uraid_close(a);
    snap_restore(&crash);
    snap_free(&crash);
    const char *want[] = {"cleanly", "force", A.p[1], NULL};
    expect_refusal(A.p, A.n, NULL, -EUCLEAN, A.p, A.n, want);
    struct uraid_open_params force = {.force = 1};
    int rc = uraid_open(A.p, A.n, &force, &a, why, sizeof why);
    CHECK(rc == 0, "forced: %d (%s)", rc, why);
    if (rc == 0) {
        static struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.degraded == 1 && info.member[1].state == URAID_MEMBER_MISSING, "degraded %d slot 1 state %d",
              info.degraded, info.member[1].state);
        arr_verify(&A, a);
        uraid_close(a);
    }
    arr_free(&A);
}

/* md's super_1_load refuses a member whose data area (data_offset +
 * data_size) runs past its end: writes there would grow a file or fail. */
static void test_data_size_past_end(void)
{
    struct arr A;
    arr_make(&A, "dsize", 5, 4);
    struct md_sb sb;
    CHECK(fx_read_sb_path(A.p[2], &sb) == 0);
    sb.data_size += 64; /* the file keeps its size */
    sb_put(A.p[2], &sb);
    const char *want[] = {A.p[2], "smaller than its superblock says", NULL};
    expect_refusal(A.p, A.n, NULL, -EINVAL, A.p, A.n, want);
    arr_free(&A);
}

/* A bad-block log must lie between the superblock and data_offset: one
 * anywhere else would be written over the superblock or the data (or past
 * the end of the member) the first time a read error is recorded. */
static void test_bblog_misplaced(void)
{
    struct arr A;
    arr_make(&A, "bblog", 5, 4);
    struct snap orig;
    snap_take(&orig, A.p, A.n);
    struct md_sb sb;
    CHECK(fx_read_sb_path(A.p[1], &sb) == 0 && sb.bblog_offset > 0 && sb.bblog_size == 8);
    const int64_t to_data = (int64_t)sb.data_offset - (int64_t)sb.super_offset;
    const struct { int32_t offset; const char *reason; } cases[] = {
        {(int32_t)(to_data + 128), "would overwrite the data"},              /* inside the data area */
        {(int32_t)(to_data - 4), "would overwrite the data"},                /* its last 4 sectors are data */
        {-4, "would overwrite the superblock"},                              /* sectors 4..11 */
        {(int32_t)(MEMBER_BYTES / 512), "would overwrite the data (or lie past the end)"}, /* past the end */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct md_sb bad = sb;
        bad.bblog_offset = cases[c].offset;
        sb_put(A.p[1], &bad);
        const char *want[] = {A.p[1], "bad-block log", cases[c].reason, NULL};
        expect_refusal(A.p, A.n, NULL, -EINVAL, A.p, A.n, want);
        snap_restore(&orig);
    }
    /* the log right before the data, where mdadm puts it when the bitmap
     * space leaves no room after the superblock, is fine */
    struct md_sb last = sb;
    last.bblog_offset = (int32_t)(to_data - 8);
    sb_put(A.p[1], &last);
    struct uraid_array *a;
    char why[512];
    CHECK(uraid_open(A.p, A.n, NULL, &a, why, sizeof why) == 0, "log before the data: %s", why);
    if (a)
        uraid_close(a);
    snap_free(&orig);
    arr_free(&A);
}

/* A member whose role is past the slots but not spare or faulty (300 in
 * every roles table) is neither used nor a spare, as md ignores it: a
 * serving array (auto_rebuild) must not rebuild onto it. */
static void test_role_past_slots(void)
{
    struct arr A;
    arr_make(&A, "role", 5, 4);
    struct md_sb sb;
    CHECK(fx_read_sb_path(A.p[3], &sb) == 0);
    uint32_t dn = sb.dev_number;
    for (int i = 0; i < A.n; i++) {
        CHECK(fx_read_sb_path(A.p[i], &sb) == 0);
        sb.dev_roles[dn] = 300;
        sb_put(A.p[i], &sb);
    }
    struct snap s;
    snap_take(&s, A.p, A.n);
    struct uraid_open_params op = {.auto_rebuild = 1};
    struct uraid_array *a;
    char why[512];
    int rc = uraid_open(A.p, A.n, &op, &a, why, sizeof why);
    CHECK(rc == 0, "open: %d (%s)", rc, why);
    if (rc == 0) {
        static struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.degraded == 1 && info.member[3].state == URAID_MEMBER_MISSING && info.nmembers == A.n,
              "degraded %d, slot 3 state %d, %d entries (the member with role 300 is none of them)", info.degraded,
              info.member[3].state, info.nmembers);
        struct uraid_job_status st;
        uraid_job_status(a, &st);
        CHECK(st.kind == URAID_JOB_IDLE && !st.running, "no job started onto it (kind %d)", st.kind);
        char jwhy[300] = "";
        struct uraid_job_params jp = {.slot = -1};
        CHECK(uraid_job_start(a, URAID_JOB_RECOVER, &jp, jwhy, sizeof jwhy) != 0, "a recovery has no spare");
        arr_verify(&A, a);
        CHECK(uraid_close(a) == 0);
    }
    snap_same(&s, "after opening with a member md ignores");
    snap_free(&s);
    arr_free(&A);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_assembly");
    rng_seed(&rng, harness_seed());
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/uraid-assembly-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    static const struct { const char *name; void (*fn)(void); } tests[] = {
        {"opening (read-write or read-only) writes nothing", test_open_writes_nothing},
        {"a clean close after writes records clean, events +2", test_clean_close},
        {"members of two different arrays are refused", test_different_arrays},
        {"two members claiming one slot are refused", test_copied_member},
        {"unknown or unsupported feature bits and a bad checksum are refused", test_features_and_checksum},
        {"a member smaller than the recorded size is refused", test_truncated},
        {"more members missing than the level survives is refused", test_too_many_missing},
        {"dirty + degraded: refused, forced open writes nothing, dirty stays dirty", test_dirty_degraded},
        {"stale members are left out, one event behind is accepted", test_stale},
        {"a member left out of a crashed degraded write is not taken back", test_crash_while_degraded},
        {"a data area past the member's end is refused", test_data_size_past_end},
        {"a bad-block log over the superblock, the data or past the end is refused", test_bblog_misplaced},
        {"a member whose role is past the slots (not spare) is ignored, not rebuilt onto", test_role_past_slots},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        harness_begin(tests[i].name);
        tests[i].fn();
        harness_end();
    }
    rmdir(dir);
    return harness_finish();
}
