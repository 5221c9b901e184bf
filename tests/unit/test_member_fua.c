/* member_write_fua (member.h) in every member kind and layer: a write that
 * is durable when it returns, and no flush.
 *   - file: the op is the file's own (pwritev2 RWF_DSYNC), the data land,
 *     a read-only member refuses it;
 *   - fault and throttle layers: a FUA write passes through them as one
 *     (the power-cut layer underneath sees a FUA write and no flush, and
 *     the earlier unflushed write stays unflushed); the fault layer's
 *     dropped ranges stay unwritten;
 *   - NBD (a real nbdkit, its log filter as the witness): one write with
 *     NBD's FUA flag and no flush when the server offers FUA; a write and
 *     a flush when it does not (nbdkit's fua filter, its default fuamode=none).
 * nbdkit is installed by scripts/deps.sh: its absence is a failure. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "member/member.h"
#include "member/powercut.h"
#include "nbdkit_proc.h"

#define SIZE (1u << 20)

static struct rng rng;
static char dir[256];

static void make_file(const char *path)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(fd >= 0 && ftruncate(fd, SIZE) == 0, "cannot make %s", path);
    if (fd >= 0)
        close(fd);
}

static void test_file(void)
{
    harness_begin("file member: member_write_fua is the file's own FUA write (RWF_DSYNC) and lands");
    char path[300];
    snprintf(path, sizeof path, "%s/file.img", dir);
    make_file(path);
    struct member *m = NULL, *ro = NULL;
    uint8_t *a = aligned_alloc(4096, 8192), *b = aligned_alloc(4096, 8192);
    rng_fill(&rng, a, 8192);
    CHECK(member_open_file(path, 0, &m) == 0);
    if (m) {
        CHECK(m->ops->write_fua != NULL, "the file member has no FUA write of its own (a write and a flush)");
        /* aligned (O_DIRECT) and unaligned (buffered) */
        CHECK(member_write_fua(m, a, 8192, 65536) == 0);
        CHECK(member_write_fua(m, a + 1, 1000, 3) == 0);
        CHECK(member_read(m, b, 8192, 65536) == 0 && !memcmp(a, b, 8192), "the FUA write did not land");
        CHECK(member_read(m, b, 1000, 3) == 0 && !memcmp(a + 1, b, 1000), "the unaligned FUA write did not land");
        member_close(m);
    }
    CHECK(member_open_file(path, 1, &ro) == 0);
    if (ro) {
        CHECK(member_write_fua(ro, a, 4096, 0) == -EROFS, "a read-only member took a FUA write");
        member_close(ro);
    }
    unlink(path);
    free(a);
    free(b);
    harness_end();
}

/* fault over throttle over powercut over a file: the power-cut layer counts
 * what reaches it. */
static void test_layers(void)
{
    harness_begin("fault and throttle layers pass a FUA write down as one: no flush below, earlier writes unflushed");
    char path[300], name[32] = "fua-layers";
    snprintf(path, sizeof path, "%s/layers.img", dir);
    make_file(path);
    struct powercut_domain *d = NULL;
    struct member *f = NULL, *pc = NULL, *th = NULL, *top = NULL;
    CHECK(powercut_domain_get(name, 1, 0, 0, &d) == 1);
    CHECK(member_open_file(path, 0, &f) == 0 && member_powercut_wrap(f, d, &pc) == 0);
    struct disk_model dm = {.bytes_per_sec = 500000000, .latency_usec = 50, .qd = 4};
    CHECK(pc && member_disk_wrap(pc, &dm, &th) == 0 && member_fault_wrap(th, &top) == 0);
    uint8_t *a = malloc(16384), *b = malloc(16384), *z = calloc(1, 16384);
    rng_fill(&rng, a, 16384);
    if (top) {
        CHECK(member_write(top, a, 4096, 0) == 0);
        CHECK(member_write_fua(top, a + 4096, 4096, 8192) == 0);
        struct powercut_stats st;
        powercut_get_stats(d, &st);
        CHECK(st.fua_writes == 1 && st.flushes == 0, "below the layers: %llu FUA writes, %llu flushes (want 1, 0)",
              (unsigned long long)st.fua_writes, (unsigned long long)st.flushes);
        CHECK(member_powercut_pending(pc) == 1, "%llu writes unflushed, want the plain one only",
              (unsigned long long)member_powercut_pending(pc));
        CHECK(powercut_cut(d) == 0);
        member_close(top);
        top = NULL;
        struct member *check = NULL;
        CHECK(member_open_file(path, 0, &check) == 0);
        if (check) {
            CHECK(member_read(check, b, 4096, 0) == 0 && !memcmp(b, z, 4096), "an unflushed write survived the cut");
            CHECK(member_read(check, b, 4096, 8192) == 0 && !memcmp(b, a + 4096, 4096), "a FUA write was lost");
        }
        /* the fault layer's dropped range stays unwritten, the rest lands */
        struct fault_rule r = {.what = FAULT_DROP_WRITE, .start = 20480, .len = 4096};
        struct member *fl = NULL;
        CHECK(check && member_fault_wrap(check, &fl) == 0 && member_fault_add(fl, &r) == 0);
        if (fl) {
            CHECK(member_write_fua(fl, a, 12288, 16384) == 0);
            CHECK(member_read(fl, b, 12288, 16384) == 0 && !memcmp(b, a, 4096) && !memcmp(b + 4096, z, 4096) &&
                      !memcmp(b + 8192, a + 8192, 4096),
                  "a FUA write around a dropped range: wrong bytes");
            member_close(fl);
        } else if (check) {
            member_close(check);
        }
    }
    if (top)
        member_close(top);
    powercut_domain_forget(name);
    unlink(path);
    free(a);
    free(b);
    free(z);
    harness_end();
}

/* 1 when a line of nbdkit's log contains what. */
static int log_has(const char *log, const char *what)
{
    FILE *f = fopen(log, "r");
    char line[512];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return found;
}

static void test_nbd(int server_fua)
{
    harness_beginf("NBD member, server %s FUA: member_write_fua is %s", server_fua ? "with" : "without",
                   server_fua ? "one write with NBD's FUA flag, no flush" : "a write and a flush");
    char sock[300], uri[360], log[300], logarg[320], why[300];
    snprintf(sock, sizeof sock, "%s/nbd%d.sock", dir, server_fua);
    snprintf(log, sizeof log, "%s/nbd%d.log", dir, server_fua);
    snprintf(logarg, sizeof logarg, "logfile=%s", log);
    const char *with[] = {"--filter=log", "memory", "16M", logarg, NULL};
    const char *without[] = {"--filter=log", "--filter=fua", "memory", "16M", logarg, NULL};
    pid_t pid = nbdkit_start(sock, server_fua ? with : without);
    CHECK(pid > 0, "nbdkit --filter=log memory (is nbdkit installed? scripts/deps.sh)");
    snprintf(uri, sizeof uri, "nbd+unix:///?socket=%s", sock);
    struct member *m = NULL;
    uint8_t *a = malloc(8192), *b = malloc(8192);
    rng_fill(&rng, a, 8192);
    CHECK(pid > 0 && member_open_why(uri, 0, &m, why, sizeof why) == 0, "%s", why);
    if (m) {
        CHECK(member_write_fua(m, a, 8192, 4096) == 0);
        CHECK(member_read(m, b, 8192, 4096) == 0 && !memcmp(a, b, 8192), "the FUA write did not land");
        member_close(m);
    }
    if (pid > 0)
        nbdkit_stop(pid, SIGTERM);
    if (server_fua) {
        CHECK(log_has(log, "fua=1"), "the write reached the server without the FUA flag");
        CHECK(!log_has(log, " Flush id="), "a flush reached the server: the FUA write was a write and a flush");
    } else {
        CHECK(!log_has(log, "fua=1"), "a FUA flag went to a server that does not offer it");
        CHECK(log_has(log, " Flush id="), "no flush after the write on a server without FUA");
    }
    unlink(log);
    free(a);
    free(b);
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_member_fua");
    rng_seed(&rng, harness_seed());
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/uraid-fua-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_file();
    test_layers();
    test_nbd(1);
    test_nbd(0);
    rmdir(dir);
    return harness_finish();
}
