/* Rebuild and replace (issue 6), through the library on member files:
 *   - a failed member rebuilt onto a spare, the result readable with other
 *     members left out (so the spare really holds its slot's data);
 *   - a rebuild under concurrent random writes and reads, data verified;
 *   - a rebuild stopped halfway: the spare's superblock carries
 *     RECOVERY_OFFSET and its checkpoint; writes land meanwhile; a reopen
 *     finds it rebuilding and the next rebuild resumes at the checkpoint;
 *   - replace while the old member has read errors: the copy is whole, the
 *     old member ends faulty, redundancy was kept (writes during the copy
 *     land on both);
 *   - auto rebuild: a member fails on an array opened with auto_rebuild and
 *     a spare takes over by itself;
 *   - refusals (no spare, nothing to rebuild) and the speed limit.
 * Prints its seed; URAID_TEST_SEED=N replays (thread scheduling aside). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array_fixture.h"
#include "harness.h"
#include "meta/superblock.h"

static struct rng rng;
#define K 1024u
#define MEMBER_BYTES (8u << 20)

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A filled array with a fault layer on every member, open in *a, and a
 * member-sized file `name` beside it for a spare. */
static int setup_with_spare(struct fx *f, int level, int n, uint64_t member_bytes, const char *name, char spare[300],
                            struct uraid_array **a)
{
    int rc = fx_setup(f, level, n, 64u << 10, member_bytes, &rng, 1, a);
    if (rc == 0 && (rc = fx_make_file(f, name, spare, 300)) != 0)
        uraid_close(*a);
    return rc;
}

/* Closes the array after a rebuild onto `spare` for `slot`: the fixture
 * uses the spare as that member from now on, and the array must read right
 * with as many other members left out as the level survives. */
static void close_and_verify_rebuilt(struct fx *f, struct uraid_array *a, int slot, const char *spare, const char *what)
{
    CHECK(uraid_close(a) == 0);
    fx_adopt(f, slot, spare);
    fx_verify_without_others(f, slot, f->level == 6 ? 2 : 1, what);
}

/* Adds the spares, closes the array and opens it again as a server does:
 * the spares given as members, a fault layer on each, auto_rebuild. */
static struct uraid_array *reopen_serving(struct fx *f, struct uraid_array *a, const char *const *spares, int nspares,
                                          uint64_t speed_min_kib)
{
    for (int i = 0; i < nspares; i++)
        fx_add_spare(f, a, spares[i]);
    CHECK(uraid_close(a) == 0);
    struct uraid_open_params op = {.auto_rebuild = 1, .sync_speed_min_kib = speed_min_kib};
    return fx_open_with(f, 0, "", spares, nspares, &op, &a) ? NULL : a;
}

/* Polls until the job `kind` runs on `slot` (the array's monitor thread
 * starts it) or 5 s have passed; the last status in st. */
static void await_job(struct uraid_array *a, enum uraid_job_kind kind, int slot, struct uraid_job_status *st)
{
    for (int i = 0; i < 500; i++) {
        uraid_job_status(a, st);
        if (st->kind == kind && st->slot == slot)
            return;
        sleep_ms(10);
    }
}

static void fail_member_expect(struct fx *f, struct uraid_array *a, int slot, enum uraid_member_state expect)
{
    CHECK(uraid_inject(a, slot, "vanish") == 0);
    uint8_t buf[4096];
    rng_fill(&rng, buf, sizeof buf);
    /* a write to every member's chunk of stripe 0 reaches the vanished one */
    for (int d = 0; d < f->k; d++)
        CHECK(fx_write(f, a, buf, sizeof buf, fx_at(f, 0, d, 0)) == 0);
    struct uraid_array_info *info = malloc(sizeof *info);
    uraid_get_info(a, info);
    /* expect REBUILDING: a monitor thread may or may not have swapped the spare in yet */
    CHECK(info->member[slot].state == expect ||
              (expect == URAID_MEMBER_REBUILDING && info->member[slot].state == URAID_MEMBER_FAULTY),
          "slot %d state %d after vanishing", slot, info->member[slot].state);
    free(info);
}

static void fail_member(struct fx *f, struct uraid_array *a, int slot)
{
    fail_member_expect(f, a, slot, URAID_MEMBER_FAULTY);
}

/* setup_with_spare, then member `slot` failed and the spare added: ready
 * for its rebuild. */
static int setup_degraded(struct fx *f, int level, int n, uint64_t member_bytes, int slot, char spare[300],
                          struct uraid_array **a)
{
    int rc = setup_with_spare(f, level, n, member_bytes, "spare", spare, a);
    if (rc)
        return rc;
    fail_member(f, *a, slot);
    fx_add_spare(f, *a, spare);
    return 0;
}

static void test_recover(int level, int n)
{
    harness_beginf("recover: RAID-%d n=%d, failed member rebuilt onto a spare", level, n);
    struct fx f;
    char spare[300];
    struct uraid_array *a;
    if (setup_with_spare(&f, level, n, MEMBER_BYTES, "spare", spare, &a))
        goto out;
    char why[256] = "";
    CHECK(uraid_job_start(a, URAID_JOB_RECOVER, NULL, why, sizeof why) == -EINVAL && strstr(why, "nothing to rebuild"),
          "%s: in sync: '%s'", f.label, why);
    fail_member(&f, a, 2);
    CHECK(uraid_job_start(a, URAID_JOB_RECOVER, NULL, why, sizeof why) == -ENOENT && strstr(why, "no spare"),
          "%s: without a spare: '%s'", f.label, why);
    fx_add_spare(&f, a, spare);
    struct uraid_job_params jp = {.slot = -1, .speed_min_kib = 1u << 30};
    struct uraid_job_status st;
    if (fx_job(&f, a, URAID_JOB_RECOVER, &jp, &st) == 0) {
        CHECK(st.slot == 2 && st.done_sectors == st.total_sectors && st.total_sectors > 0);
        struct uraid_array_info *info = malloc(sizeof *info);
        uraid_get_info(a, info);
        CHECK(info->member[2].state == URAID_MEMBER_IN_SYNC && !strcmp(info->member[2].path, spare) &&
                  info->degraded == 0,
              "%s: slot 2 state %d path %s degraded %d", f.label, info->member[2].state, info->member[2].path,
              info->degraded);
        free(info);
        fx_verify_all(&f, a, "after the rebuild");
    }
    close_and_verify_rebuilt(&f, a, 2, spare, "rebuilt member with others left out");
    struct md_sb sb;
    if (fx_read_sb(&f, 2, &sb) == 0)
        CHECK(!(sb.feature_map & MD_FEATURE_RECOVERY_OFFSET) && sb.dev_roles[sb.dev_number] == 2,
              "%s: spare's superblock: features 0x%x role %u", f.label, sb.feature_map, sb.dev_roles[sb.dev_number]);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- rebuild while users write ------------------------------------------------------ */

struct load {
    struct fx *f;
    struct uraid_array *a;
    int stop;
    uint64_t seed;
    uint64_t lo, hi;   /* the writer's region (bytes); hi 0 = the whole array */
    int writes, errors;
};

static void *writer(void *arg)
{
    struct load *l = arg;
    struct rng r;
    rng_seed(&r, l->seed);
    uint8_t *buf = aligned_alloc(4096, 256 * K);
    uint8_t *back = aligned_alloc(4096, 256 * K);
    while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
        uint64_t lo = l->lo, hi = l->hi ? l->hi : l->f->size;
        size_t len = (size_t)(1 + rng_below(&r, 64)) * 4096;
        if (len > hi - lo)
            len = (size_t)(hi - lo);
        uint64_t off = lo + rng_below(&r, (hi - lo - len) / 4096 + 1) * 4096;
        rng_fill(&r, buf, len);
        if (fx_write(l->f, l->a, buf, len, off)) {
            l->errors++;
            continue;
        }
        l->writes++;
        if (uraid_read(l->a, back, len, off) || memcmp(back, buf, len))
            l->errors++;
    }
    free(buf);
    free(back);
    return NULL;
}

/* A team of writers, each on its own slice of the array (slices share
 * stripes at their edges). */
#define WRITERS 4
struct team {
    struct load l[WRITERS];
    pthread_t t[WRITERS];
};

static void team_start(struct team *tm, struct fx *f, struct uraid_array *a)
{
    uint64_t slice = f->size / WRITERS / 4096 * 4096;
    for (int i = 0; i < WRITERS; i++) {
        tm->l[i] = (struct load){.f = f, .a = a, .seed = rng_next(&rng), .lo = (uint64_t)i * slice,
                                 .hi = i == WRITERS - 1 ? f->size : (uint64_t)(i + 1) * slice};
        pthread_create(&tm->t[i], NULL, writer, &tm->l[i]);
    }
}

/* Stops the writers; their total writes and errors. */
static void team_stop(struct team *tm, int *writes, int *errors)
{
    *writes = *errors = 0;
    for (int i = 0; i < WRITERS; i++) {
        __atomic_store_n(&tm->l[i].stop, 1, __ATOMIC_RELEASE);
        pthread_join(tm->t[i], NULL);
        *writes += tm->l[i].writes;
        *errors += tm->l[i].errors;
    }
}

/* A team of writers reads back what it writes while the slot is rebuilt; on RAID-6 surviving members also get pending sectors (read
 * errors a rewrite heals) at random moments. */
static void test_recover_under_load(int level, int n)
{
    harness_beginf("recover: RAID-%d n=%d while 4 threads write and read%s", level, n,
                   level == 6 ? ", read errors injected" : "");
    struct fx f;
    char spare[300];
    struct uraid_array *a;
    if (setup_degraded(&f, level, n, MEMBER_BYTES, 0, spare, &a))
        goto out;
    struct team tm;
    team_start(&tm, &f, a);
    sleep_ms(20);
    /* slow enough that the writers meet the rebuild everywhere */
    struct uraid_job_params jp = {.slot = -1, .speed_max_kib = 16 * 1024, .speed_min_kib = 16 * 1024};
    fx_job_start(&f, a, URAID_JOB_RECOVER, &jp);
    struct uraid_job_status st;
    int injected = 0;
    for (;;) {
        uraid_job_status(a, &st);
        if (!st.running)
            break;
        if (level == 6) {
            /* one member only: with slot 0 gone, two blocks of a stripe is all RAID-6 survives */
            uint64_t off = rng_below(&rng, (f.member_bytes - f.data_offset) / 4096) * 4096;
            injected += fx_inject(&f, a, 1, "pending", off, 4096) == 0;
        }
        sleep_ms(5);
    }
    fx_job_wait(&f, a, &st);
    int writes, errors;
    team_stop(&tm, &writes, &errors);
    CHECK(errors == 0 && writes > 40, "%s: writers: %d writes, %d errors (%d read errors injected)", f.label, writes,
          errors, injected);
    for (int s = 1; s < n; s++)
        uraid_inject(a, s, "clear");
    fx_verify_all(&f, a, "after a rebuild under load");
    close_and_verify_rebuilt(&f, a, 0, spare, "rebuilt under load, others left out");
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- stop and resume ------------------------------------------------------------------ */

static void test_resume(int level, int n)
{
    harness_beginf("recover: RAID-%d n=%d stopped halfway resumes from recovery_offset", level, n);
    struct fx f;
    char spare[300];
    struct uraid_array *a;
    if (setup_degraded(&f, level, n, MEMBER_BYTES, 1, spare, &a))
        goto out;
    /* 2 MB/s: the 8 MiB member takes seconds; stop it near a third */
    struct uraid_job_params jp = {.slot = -1, .speed_max_kib = 2048};
    fx_job_start(&f, a, URAID_JOB_RECOVER, &jp);
    struct uraid_job_status st;
    for (int i = 0; i < 200; i++) {
        uraid_job_status(a, &st);
        if (st.done_sectors * 3 >= st.total_sectors)
            break;
        sleep_ms(20);
    }
    CHECK(uraid_job_cancel(a) == 0);
    uraid_job_status(a, &st);
    uint64_t stopped_at = st.done_sectors;
    CHECK(st.result == -ECANCELED && stopped_at > 0 && stopped_at < st.total_sectors,
          "%s: cancel: result %d at %llu of %llu", f.label, st.result, (unsigned long long)stopped_at,
          (unsigned long long)st.total_sectors);
    /* writes below and above the checkpoint while the slot is half rebuilt */
    uint8_t buf[64 * K];
    rng_fill(&rng, buf, sizeof buf);
    CHECK(fx_write(&f, a, buf, sizeof buf, fx_at(&f, 1, 0, 0)) == 0);
    CHECK(fx_write(&f, a, buf, sizeof buf, f.size - 4 * f.stripe_bytes) == 0);
    fx_verify_all(&f, a, "half rebuilt");
    CHECK(uraid_close(a) == 0);

    struct md_sb sb;
    fx_adopt(&f, 1, spare);
    if (fx_read_sb(&f, 1, &sb) == 0)
        CHECK((sb.feature_map & MD_FEATURE_RECOVERY_OFFSET) && sb.recovery_offset == stopped_at &&
                  sb.dev_roles[sb.dev_number] == 1,
              "%s: spare's superblock: features 0x%x recovery_offset %llu (stopped at %llu) role %u", f.label,
              sb.feature_map, (unsigned long long)sb.recovery_offset, (unsigned long long)stopped_at,
              sb.dev_roles[sb.dev_number]);
    a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    struct uraid_array_info *info = malloc(sizeof *info);
    uraid_get_info(a, info);
    CHECK(info->member[1].state == URAID_MEMBER_REBUILDING && info->member[1].recovery_offset_sectors == stopped_at,
          "%s: reopened: slot 1 state %d offset %llu", f.label, info->member[1].state,
          (unsigned long long)info->member[1].recovery_offset_sectors);
    free(info);
    fx_verify_all(&f, a, "reopened half rebuilt");
    fx_job_start(&f, a, URAID_JOB_RECOVER, NULL);
    uraid_job_status(a, &st);
    CHECK(st.done_sectors >= stopped_at, "%s: resumed at %llu, checkpoint %llu", f.label,
          (unsigned long long)st.done_sectors, (unsigned long long)stopped_at);
    fx_job_wait(&f, a, &st);
    close_and_verify_rebuilt(&f, a, 1, spare, "resumed rebuild, others left out");
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- replace ------------------------------------------------------------------------------- */

static void test_replace(int level, int n)
{
    harness_beginf("replace: RAID-%d n=%d with read errors on the old member", level, n);
    struct fx f;
    char spare[300];
    struct uraid_array *a;
    if (setup_with_spare(&f, level, n, MEMBER_BYTES, "new", spare, &a))
        goto out;
    int slot = n > 3 ? 3 : n - 1;
    fx_inject(&f, a, slot, "read-eio", 200 * K, 64 * K);
    fx_add_spare(&f, a, spare);
    struct team tm;
    team_start(&tm, &f, a);
    struct uraid_job_params jp = {.slot = slot, .spare = spare, .speed_max_kib = 16 * 1024,
                                  .speed_min_kib = 16 * 1024};
    struct uraid_job_status st;
    fx_job(&f, a, URAID_JOB_REPLACE, &jp, &st);
    int writes, errors;
    team_stop(&tm, &writes, &errors);
    CHECK(errors == 0 && writes > 10, "%s: writers: %d writes, %d errors", f.label, writes, errors);
    struct uraid_array_info *info = malloc(sizeof *info);
    uraid_get_info(a, info);
    CHECK(!strcmp(info->member[slot].path, spare) && info->member[slot].state == URAID_MEMBER_IN_SYNC &&
              info->degraded == 0,
          "%s: slot %d holds %s state %d", f.label, slot, info->member[slot].path, info->member[slot].state);
    int old_faulty = 0;
    for (int i = 0; i < info->nmembers; i++)
        old_faulty |= !strcmp(info->member[i].path, f.path[slot]) && info->member[i].state == URAID_MEMBER_FAULTY;
    CHECK(old_faulty, "%s: the old member is not marked faulty", f.label);
    free(info);
    fx_verify_all(&f, a, "after the replace");
    close_and_verify_rebuilt(&f, a, slot, spare, "replaced member, others left out");
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- automatic rebuild, speed limit ----------------------------------------------------------- */

static void test_auto_rebuild(void)
{
    harness_begin("auto rebuild: a member fails, the spare from create takes over by itself");
    struct fx f;
    char spare[300];
    struct uraid_array *a;
    if (setup_with_spare(&f, 6, 6, MEMBER_BYTES, "spare", spare, &a))
        goto out;
    const char *spares[] = {spare};
    a = reopen_serving(&f, a, spares, 1, 0);
    if (!a)
        goto out;
    struct uraid_job_status st;
    uraid_job_status(a, &st);
    CHECK(st.kind == URAID_JOB_IDLE, "a healthy array started a %s", uraid_job_name(st.kind));
    fail_member_expect(&f, a, 4, URAID_MEMBER_REBUILDING);
    await_job(a, URAID_JOB_RECOVER, 4, &st);
    CHECK(st.kind == URAID_JOB_RECOVER && st.slot == 4, "after the failure: job %s slot %d", uraid_job_name(st.kind),
          st.slot);
    fx_job_wait(&f, a, &st);
    fx_verify_all(&f, a, "after the automatic rebuild");
    close_and_verify_rebuilt(&f, a, 4, spare, "auto-rebuilt member, others left out");
out:
    fx_destroy(&f);
    harness_end();
}

static void test_speed_limit(void)
{
    harness_begin("speed limit: a rebuild at 4 MB/s takes at least the time that allows");
    struct fx f;
    char spare[300];
    struct uraid_array *a;
    if (setup_degraded(&f, 5, 4, 4u << 20, 1, spare, &a))
        goto out;
    struct uraid_job_params jp = {.slot = -1, .speed_max_kib = 4096};
    struct uraid_job_status st;
    fx_job(&f, a, URAID_JOB_RECOVER, &jp, &st);
    /* a lower bound only: a slow machine makes it longer, never shorter */
    double allowed_ms = (double)st.total_sectors / 2.0 / 4096.0 * 1000.0;
    CHECK((double)st.elapsed_ms >= 0.7 * allowed_ms, "%llu KiB in %llu ms at a 4096 KiB/s limit",
          (unsigned long long)st.total_sectors / 2, (unsigned long long)st.elapsed_ms);
    CHECK(uraid_close(a) == 0);
out:
    fx_destroy(&f);
    harness_end();
}

/* ---- resync after an unclean shutdown ------------------------------------------------------- */

/* A process that opens the array, writes (the array goes dirty on disk) and
 * dies without closing it. It rewrites the first stripe with the bytes the
 * array already holds, so the model stays right. It is this binary started
 * afresh (not a bare fork): a child forked from a process that has run
 * threads may not start threads of its own under ThreadSanitizer. */
static int crash_writer_main(int n, char **paths)
{
    struct uraid_array *a;
    if (uraid_open((const char **)paths, n, NULL, &a, NULL, 0))
        return 1;
    static struct uraid_array_info info;
    if (uraid_get_info(a, &info))
        return 1;
    /* RAID-1 has no chunk size: one 64 KiB block stands for its stripe */
    uint64_t stripe = info.level == 1 ? 65536u
                                      : (uint64_t)info.chunk_bytes * (uint64_t)(info.raid_devices - (info.level == 6 ? 2 : 1));
    uint8_t *buf = malloc(stripe);
    if (!buf || uraid_read(a, buf, stripe, 0) || uraid_write(a, buf, stripe, 0))
        return 1;
    _exit(0);
}

static void crash_while_writing(struct fx *f)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[FX_MAXM + 3];
        argv[0] = (char *)"test_rebuild";
        argv[1] = (char *)"--crash-writer";
        for (int s = 0; s < f->n; s++)
            argv[2 + s] = f->path[s];
        argv[2 + f->n] = NULL;
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the crashing writer failed (status %#x)", st);
}

static uint64_t run_check(const struct fx *f, struct uraid_array *a)
{
    struct uraid_job_params jp = {.slot = -1};
    struct uraid_job_status st = {0};
    fx_job(f, a, URAID_JOB_CHECK, &jp, &st);
    return st.mismatch_sectors;
}

static void test_resync(int level, int n)
{
    harness_beginf("resync: RAID-%d n=%d after a crash: a torn stripe made consistent, then clean", level, n);
    struct fx f;
    if (fx_setup(&f, level, n, 64u << 10, MEMBER_BYTES, &rng, 0, NULL) != 0)
        goto out;
    crash_while_writing(&f);
    /* the crash tore stripe 5: its P never got the new data's parity */
    int p, q;
    fx_parity_of(&f, 5, &p, &q);
    uint8_t junk[4096];
    rng_fill(&rng, junk, sizeof junk);
    CHECK(fx_member_pwrite(&f, p, junk, sizeof junk, 5 * f.chunk + 8192) == 0);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(!info.clean, "%s: not dirty after the crash", f.label);
    CHECK(run_check(&f, a) == 8, "%s: the torn page is not seen", f.label);
    char why[256];
    struct uraid_job_status st;
    fx_job(&f, a, URAID_JOB_RESYNC, NULL, &st);
    CHECK(run_check(&f, a) == 0, "%s: mismatches left after the resync", f.label);
    fx_verify_all(&f, a, "after the resync");
    CHECK(uraid_close(a) == 0);
    a = fx_open(&f, NULL, 0, 0);
    if (a) {
        uraid_get_info(a, &info);
        CHECK(info.clean, "%s: still dirty after a resync and a clean close", f.label);
        CHECK(uraid_job_start(a, URAID_JOB_RESYNC, NULL, why, sizeof why) == -EINVAL && strstr(why, "nothing to"),
              "%s: resync of a clean array: %s", f.label, why);
        CHECK(uraid_close(a) == 0);
    }

    /* a serving array (auto_rebuild) resyncs by itself */
    crash_while_writing(&f);
    struct uraid_open_params op = {.auto_rebuild = 1};
    if (fx_open_with(&f, 0, NULL, NULL, 0, &op, &a))
        goto out;
    uraid_job_status(a, &st);
    CHECK(st.kind == URAID_JOB_RESYNC, "%s: dirty array opened with auto_rebuild: job %s", f.label,
          uraid_job_name(st.kind));
    fx_job_wait(&f, a, &st);
    CHECK(uraid_close(a) == 0);
    a = fx_open(&f, NULL, 0, 0);
    if (a) {
        uraid_get_info(a, &info);
        CHECK(info.clean, "%s: dirty after the automatic resync", f.label);
        uraid_close(a);
    }
out:
    fx_destroy(&f);
    harness_end();
}

/* RAID-1: the resync copies the first mirror over the others. */
static void test_resync_mirror(void)
{
    harness_begin("resync: RAID-1 n=2 after a crash: the second mirror made equal to the first");
    struct fx f;
    if (fx_setup(&f, 1, 2, 64u << 10, MEMBER_BYTES, &rng, 0, NULL) != 0)
        goto out;
    crash_while_writing(&f);
    uint8_t junk[8192];
    rng_fill(&rng, junk, sizeof junk);
    CHECK(fx_member_pwrite(&f, 1, junk, sizeof junk, 3 * 65536) == 0);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    struct uraid_job_status st;
    fx_job(&f, a, URAID_JOB_RESYNC, NULL, &st);
    CHECK(uraid_close(a) == 0);
    if (fx_open_with(&f, FX_SLOT(0), NULL, NULL, 0, NULL, &a) == 0) {
        fx_verify_all(&f, a, "the second mirror alone after the resync");
        static struct uraid_array_info info;
        uraid_get_info(a, &info);
        CHECK(info.clean, "%s: dirty after the resync and a clean close", f.label);
        uraid_close(a);
    }
out:
    fx_destroy(&f);
    harness_end();
}

/* A serving array under load loses members one after the other: each
 * failure (seen by a writer, on the I/O path) makes the array's monitor
 * swap a spare in under every stripe lock and rebuild it, while the
 * writers go on; pending sectors come and go on the survivors. */
static void test_chaos(void)
{
    harness_begin("auto rebuild: RAID-6 n=6, two members vanish one after the other under four writers, two spares");
    struct fx f;
    char sp[2][300];
    struct uraid_array *a;
    if (setup_with_spare(&f, 6, 6, MEMBER_BYTES, "s0", sp[0], &a))
        goto out;
    if (fx_make_file(&f, "s1", sp[1], sizeof sp[1])) {
        uraid_close(a);
        goto out;
    }
    const char *spares[] = {sp[0], sp[1]};
    a = reopen_serving(&f, a, spares, 2, 8192);
    if (!a)
        goto out;
    struct team tm;
    team_start(&tm, &f, a);
    int victims[2] = {1 + (int)rng_below(&rng, 2), 3 + (int)rng_below(&rng, 3)};
    struct uraid_job_status st;
    for (int v = 0; v < 2; v++) {
        sleep_ms(30 + (int)rng_below(&rng, 60));
        CHECK(uraid_inject(a, victims[v], "vanish") == 0);
        /* the next write to it fails it; the monitor starts the rebuild */
        await_job(a, URAID_JOB_RECOVER, victims[v], &st);
        CHECK(st.kind == URAID_JOB_RECOVER && st.slot == victims[v], "slot %d: no rebuild started (job %s slot %d)",
              victims[v], uraid_job_name(st.kind), st.slot);
        if (v == 0) { /* a pending sector on a survivor while slot 1 or 2 is rebuilt */
            fx_inject(&f, a, 0, "pending", rng_below(&rng, 1000) * 4096, 4096);
        }
        fx_job_wait(&f, a, &st);
    }
    int writes, errors;
    team_stop(&tm, &writes, &errors);
    CHECK(errors == 0 && writes > 40, "writers: %d writes, %d errors", writes, errors);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    CHECK(info.degraded == 0, "degraded %d after two rebuilds", info.degraded);
    uraid_inject(a, 0, "clear");
    fx_verify_all(&f, a, "after two failures and two automatic rebuilds under load");
    /* the fixture now names the members that hold the slots */
    for (int s = 0; s < f.n; s++)
        fx_adopt(&f, s, info.member[s].path);
    CHECK(uraid_close(a) == 0);
    fx_verify_omitting(&f, FX_SLOT(0) | FX_SLOT(5), 0, "with two other members left out");
out:
    fx_destroy(&f);
    harness_end();
}

/* RAID-1 check and repair: mirrors compared with the first. */
static void test_mirror_check(void)
{
    harness_begin("check/repair: RAID-1 n=3, a differing mirror found page by page and repaired from the first");
    struct fx f;
    if (fx_setup(&f, 1, 3, 64u << 10, MEMBER_BYTES, &rng, 0, NULL) != 0)
        goto out;
    uint8_t junk[512];
    rng_fill(&rng, junk, sizeof junk);
    CHECK(fx_member_pwrite(&f, 2, junk, sizeof junk, 100 * 4096 + 512) == 0 &&
          fx_member_pwrite(&f, 2, junk, sizeof junk, 700 * 4096) == 0);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    if (!a)
        goto out;
    CHECK(run_check(&f, a) == 16, "%s: two differing pages not counted 8 each", f.label);
    struct uraid_finding found[4];
    size_t nf = uraid_job_findings(a, found, 4);
    CHECK(nf == 2 && found[0].slot == 2 && found[0].kind == URAID_FOUND_MIRROR && found[0].member_sector == 800 &&
              found[1].member_sector == 5600,
          "%s: %zu findings, first slot %d kind %d sector %llu", f.label, nf, nf ? found[0].slot : -1,
          nf ? (int)found[0].kind : -1, nf ? (unsigned long long)found[0].member_sector : 0ull);
    struct uraid_job_status st;
    struct uraid_job_params jp = {.slot = -1};
    fx_job(&f, a, URAID_JOB_REPAIR, &jp, &st);
    CHECK(st.repaired_sectors == 16, "%s: repaired %llu sectors", f.label, (unsigned long long)st.repaired_sectors);
    CHECK(run_check(&f, a) == 0, "%s: mismatches left after the repair", f.label);
    CHECK(uraid_close(a) == 0);
    fx_verify_omitting(&f, FX_SLOT(0) | FX_SLOT(1), 0, "the repaired mirror alone");
out:
    fx_destroy(&f);
    harness_end();
}

/* A dirty RAID-6 missing one member still has a parity to make
 * consistent: a serving array resyncs it by itself (md skips a resync only
 * when the array is degraded by as many members as its level survives),
 * then rebuilds onto the spare. serve --no-rebuild keeps spares idle but
 * still resyncs; --no-resync the reverse. */
static void test_resync_degraded(void)
{
    harness_begin("resync: dirty RAID-6 missing a member: resynced by itself, then rebuilt; --no-rebuild/--no-resync");
    struct fx f;
    char spare[320];
    if (fx_setup(&f, 6, 6, 64u << 10, MEMBER_BYTES, &rng, 0, NULL) != 0 || fx_make_file(&f, "spare", spare, sizeof spare))
        goto out;
    struct uraid_job_status st;
    struct uraid_array *a;
    /* --no-resync: nothing starts by itself */
    crash_while_writing(&f);
    struct uraid_open_params op = {.auto_rebuild = 1, .force = 1, .no_auto_resync = 1};
    if (fx_open_with(&f, FX_SLOT(0), NULL, NULL, 0, &op, &a))
        goto out;
    usleep(300 * 1000);
    uraid_job_status(a, &st);
    CHECK(st.kind == URAID_JOB_IDLE, "%s: no_auto_resync, yet job %s", f.label, uraid_job_name(st.kind));
    uraid_close(a);
    /* serving as md does: the degraded resync runs by itself */
    op.no_auto_resync = 0;
    if (fx_open_with(&f, FX_SLOT(0), NULL, NULL, 0, &op, &a))
        goto out;
    uraid_job_status(a, &st);
    CHECK(st.kind == URAID_JOB_RESYNC, "%s: dirty RAID-6 missing a member opened serving: job %s", f.label,
          uraid_job_name(st.kind));
    fx_job_wait(&f, a, &st);
    CHECK(st.result == 0, "%s: degraded resync: %s", f.label, st.why);
    CHECK(run_check(&f, a) == 0, "%s: mismatches after the degraded resync", f.label);
    static struct uraid_array_info info;
    uraid_close(a);
    a = fx_open(&f, (const int[FX_MAXM]){[0] = 1}, 0, 0);
    CHECK(a != NULL, "%s: still dirty (needs --force) after the degraded resync", f.label);
    if (a)
        uraid_close(a);
    /* --no-rebuild: resynced, but the spare stays a spare */
    crash_while_writing(&f);
    op.no_spare_rebuild = 1;
    const char *extra[1] = {spare};
    if (fx_open_with(&f, FX_SLOT(0), NULL, NULL, 0, &op, &a))
        goto out;
    CHECK(fx_add_spare(&f, a, spare) == 0);
    for (int i = 0; i < 50; i++) { /* the resync, and nothing after it */
        fx_job_wait(&f, a, &st);
        usleep(100 * 1000);
        uraid_job_status(a, &st);
        if (!st.running)
            break;
    }
    uraid_get_info(a, &info);
    CHECK(info.degraded == 1, "%s: no_spare_rebuild, yet %d slots degraded (last job %s)", f.label, info.degraded,
          uraid_job_name(st.kind));
    uraid_close(a);
    /* resynced: it opens degraded without --force now */
    a = fx_open(&f, (const int[FX_MAXM]){[0] = 1}, 0, 0);
    CHECK(a != NULL, "%s: no_spare_rebuild: still dirty after the serving open (the resync did not run)", f.label);
    if (a)
        uraid_close(a);
    /* both on: the resync, then the spare rebuilt: whole */
    crash_while_writing(&f);
    op.no_spare_rebuild = 0;
    if (fx_open_with(&f, FX_SLOT(0), NULL, extra, 1, &op, &a))
        goto out;
    for (int i = 0; i < 100; i++) {
        fx_job_wait(&f, a, &st);
        uraid_get_info(a, &info);
        if (!info.degraded && !st.running)
            break;
        usleep(100 * 1000);
    }
    CHECK(!info.degraded, "%s: still %d slots degraded after resync + recovery", f.label, info.degraded);
    CHECK(run_check(&f, a) == 0, "%s: mismatches after resync + recovery", f.label);
    fx_adopt(&f, 0, spare);
    fx_verify_all(&f, a, "after resync + recovery");
    uraid_close(a);
out:
    fx_destroy(&f);
    harness_end();
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--crash-writer"))
        return crash_writer_main(argc - 2, argv + 2);
    fx_log_from_env();
    harness_init(argc, argv, "test_rebuild");
    rng_seed(&rng, harness_seed());
    test_recover(1, 3);
    test_recover(5, 4);
    test_recover(6, 6);
    test_recover_under_load(1, 3);
    test_recover_under_load(5, 5);
    test_recover_under_load(6, 6);
    test_resume(1, 2);
    test_resume(5, 4);
    test_resume(6, 6);
    test_replace(1, 2);
    test_replace(5, 4);
    test_replace(6, 6);
    test_auto_rebuild();
    test_speed_limit();
    test_resync(5, 4);
    test_resync(6, 6);
    test_resync_degraded();
    test_resync_mirror();
    test_mirror_check();
    test_chaos();
    return harness_finish();
}
