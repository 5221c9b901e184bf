/* Flush and FUA on the NBD export mean durable. The nbdkit plugin (what
 * `uraid serve` runs) serves a RAID-5 whose members sit on power-cut layers
 * that drop every write not flushed when the power goes (layer=powercut=...,
 * keep=0,tear=0, cut at a member write after the writes below). A libnbd
 * client writes B and flushes, writes A with the FUA flag and no flush,
 * writes C with neither, then writes until the cut fails a write; the
 * server is killed with SIGKILL. Reopened afresh: A and B read back exactly
 * (the plugin maps both flush and FUA to uraid_flush), C and the rest hold
 * either their old or their new bytes, and a check finds no mismatch.
 * nbdkit and libnbd are installed by scripts/deps.sh: their absence is a
 * failure. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef HAVE_LIBNBD
#include <libnbd.h>
#endif

#include "array_fixture.h"
#include "harness.h"
#include "nbdkit_proc.h"

#define PLUGIN "build/nbdkit-uraid-plugin.so"

static struct rng rng;

#ifdef HAVE_LIBNBD
static pid_t start_server(const struct fx *f, const char *sock, const char *layer)
{
    char marg[FX_MAXM][320];
    const char *args[FX_MAXM + 3] = {PLUGIN};
    int n = 1;
    for (int s = 0; s < f->n; s++) {
        snprintf(marg[s], sizeof marg[s], "member=%s", f->path[s]);
        args[n++] = marg[s];
    }
    args[n++] = layer;
    args[n] = NULL;
    return nbdkit_start(sock, args);
}

/* Each 4 KiB of [off, off + len) holds either zeros (never reached the
 * members) or exactly what was written. */
static uint64_t neither_old_nor_new(struct uraid_array *a, const uint8_t *wrote, uint64_t off, uint64_t len)
{
    uint8_t *buf = aligned_alloc(4096, len), zero[4096] = {0};
    uint64_t bad = 0;
    if (uraid_read(a, buf, len, off))
        bad = len / 4096;
    else
        for (uint64_t i = 0; i < len; i += 4096)
            bad += memcmp(buf + i, zero, 4096) && memcmp(buf + i, wrote + i, 4096);
    free(buf);
    return bad;
}

static void test_fua_and_flush(void)
{
    harness_begin("NBD: a FUA write and a flushed write survive a power cut that drops everything unflushed");
    struct fx f;
    pid_t pid = -1;
    struct nbd_handle *h = NULL;
    char sock[320] = "", layer[160];
    uint8_t *A = malloc(64u << 10), *B = malloc(4096), *C = malloc(48u << 10), *D = malloc(4096);
    if (fx_create(&f, 5, 4, 64u << 10, 8u << 20))
        goto out;
    CHECK(access(PLUGIN, R_OK) == 0, PLUGIN " missing (make all with nbdkit-plugin-dev)");
    snprintf(sock, sizeof sock, "%s/nbd.sock", f.dir);
    uint64_t seed = rng_next(&rng);
    snprintf(layer, sizeof layer, "layer=powercut=nbd,seed=%llu,after=300,keep=0,tear=0", (unsigned long long)seed);
    pid = start_server(&f, sock, layer);
    CHECK(pid > 0, "nbdkit with the uraid plugin did not start (is nbdkit installed? scripts/deps.sh)");
    if (pid <= 0)
        goto out;
    h = nbd_create();
    CHECK(h && nbd_connect_unix(h, sock) == 0, "connect: %s", nbd_get_error());
    if (!h || nbd_aio_is_ready(h) != 1)
        goto out;
    CHECK(nbd_can_flush(h) == 1 && nbd_can_fua(h) == 1, "the export offers no flush or no FUA");
    rng_fill(&rng, A, 64u << 10);
    rng_fill(&rng, B, 4096);
    rng_fill(&rng, C, 48u << 10);
    rng_fill(&rng, D, 4096);
    CHECK(nbd_pwrite(h, B, 4096, 1u << 20, 0) == 0 && nbd_flush(h, 0) == 0, "B: %s", nbd_get_error());
    memcpy(f.model + (1u << 20), B, 4096);
    CHECK(nbd_pwrite(h, A, 64u << 10, 0, LIBNBD_CMD_FLAG_FUA) == 0, "A (FUA): %s", nbd_get_error());
    memcpy(f.model, A, 64u << 10);
    CHECK(nbd_pwrite(h, C, 48u << 10, 2u << 20, 0) == 0, "C: %s", nbd_get_error());
    int writes = 0, cut = 0;
    for (; writes < 1000 && !cut; writes++)
        /* 8 KiB apart: no stream, so none is kept in memory (stripe/gather.c)
         * and every one reaches the members */
        cut = nbd_pwrite(h, D, 4096, (3u << 20) + (uint64_t)writes * 8192, 0) != 0;
    CHECK(cut, "1000 writes after C and the power never went (after=300 member writes)");
    nbdkit_stop(pid, SIGKILL);
    pid = -1;
    nbd_close(h);
    h = NULL;

    struct uraid_open_params op = {0};
    struct uraid_array *a;
    if (fx_open_with(&f, 0, NULL, NULL, 0, &op, &a))
        goto out;
    struct uraid_job_status st;
    char why[256];
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    if (!info.clean) {
        int rc = uraid_job_start(a, URAID_JOB_RESYNC, NULL, why, sizeof why);
        CHECK(rc == 0, "resync after the cut: %d (%s)", rc, why);
        if (rc == 0)
            fx_job_wait(&f, a, &st);
    }
    fx_verify(&f, a, 0, 64u << 10, "the FUA write A");
    fx_verify(&f, a, 1u << 20, 4096, "the flushed write B");
    CHECK(neither_old_nor_new(a, C, 2u << 20, 48u << 10) == 0, "C holds bytes it never had");
    uint64_t bad = 0;
    for (int i = 0; i < writes; i++)
        bad += neither_old_nor_new(a, D, (3u << 20) + (uint64_t)i * 4096, 4096);
    CHECK(bad == 0, "%llu of the %d writes after C hold bytes they never had", (unsigned long long)bad, writes);
    struct uraid_job_params jp = {.slot = -1};
    fx_job(&f, a, URAID_JOB_CHECK, &jp, &st);
    CHECK(st.mismatch_sectors == 0, "%llu mismatched sectors after the resync",
          (unsigned long long)st.mismatch_sectors);
    CHECK(uraid_close(a) == 0);
    printf("  seed %llu: the power went during write %d after C\n", (unsigned long long)seed, writes);
out:
    if (h)
        nbd_close(h);
    if (pid > 0) {
        nbdkit_stop(pid, SIGKILL);
    }
    if (sock[0])
        unlink(sock);
    fx_destroy(&f);
    free(A);
    free(B);
    free(C);
    free(D);
    harness_end();
}
#endif

int main(int argc, char **argv)
{
    fx_log_from_env();
    harness_init(argc, argv, "test_flush_nbd");
    rng_seed(&rng, harness_seed());
#ifdef HAVE_LIBNBD
    test_fua_and_flush();
#else
    harness_begin("NBD flush and FUA");
    CHECK(0, "built without libnbd (scripts/deps.sh installs libnbd-dev)");
    harness_end();
#endif
    return harness_finish();
}
