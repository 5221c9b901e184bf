/* A PPL whose header at the area's start tore while the log was starting
 * over (a power cut during that one write): the chain after it is older,
 * and by the restart rule (lib/stripe/ppl_log.c: the area starts over only
 * once no part in a header has writes out) no write was out, so a dirty
 * array missing a member opens without --force and reads back whole. A log
 * with no sound header anywhere is still damage: the same open is refused
 * and changes nothing on any member.
 *
 * The state is made the way a crash leaves it: writes through fault layers,
 * every member vanishing before a clean close (the array stays dirty, each
 * log a chain of headers), then the first 4 KiB of one member's area
 * overwritten with junk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_fixture.h"
#include "harness.h"
#include "meta/ppl.h"
#include "meta/superblock.h"

#define MEMBER_BYTES (3u << 20)
#define CHUNK (16u << 10)

static struct rng rng;

/* Slot s's log area: its place in the member file and, with junk_all, junk
 * over the whole area instead of its first header only. */
static int tear_area(struct fx *f, int s, int junk_all, int *later_sound)
{
    struct md_sb sb;
    if (fx_read_sb(f, s, &sb) || !md_sb_has_ppl(&sb))
        return -EINVAL;
    uint64_t start = (uint64_t)md_sb_ppl_sector(&sb) * 512, bytes = (uint64_t)md_sb_ppl_size(&sb) * 512;
    uint8_t *area = malloc(bytes);
    struct ppl_header *h = malloc(sizeof *h);
    FILE *fp = fopen(f->path[s], "r+b");
    int rc = area && h && fp && fseek(fp, (long)start, SEEK_SET) == 0 && fread(area, 1, bytes, fp) == bytes ? 0 : -EIO;
    *later_sound = 0;
    for (uint64_t off = 512; rc == 0 && off + PPL_HEADER_BYTES <= bytes; off += 512)
        *later_sound |= ppl_header_decode(area + off, h, NULL, 0) == 0 && h->signature == ppl_signature(sb.set_uuid);
    rng_fill(&rng, area, junk_all ? bytes : PPL_HEADER_BYTES);
    if (rc == 0 && (fseek(fp, (long)start, SEEK_SET) || fwrite(area, 1, junk_all ? bytes : PPL_HEADER_BYTES, fp) !=
                                                               (junk_all ? bytes : PPL_HEADER_BYTES)))
        rc = -EIO;
    if (fp)
        fclose(fp);
    free(area);
    free(h);
    return rc;
}

/* Random 4 KiB writes through fault layers, then every member gone before
 * the close: a dirty array whose logs hold chains of headers. */
static int crash_after_writes(struct fx *f)
{
    struct uraid_open_params op = {0};
    struct uraid_array *a;
    if (fx_open_with(f, 0, "", NULL, 0, &op, &a))
        return -EIO;
    int rc = 0;
    for (int i = 0; i < 60 && rc == 0; i++) {
        uint64_t off = rng_below(&rng, f->size / 4096) * 4096;
        rng_fill(&rng, f->model + off, 4096);
        rc = fx_write(f, a, f->model + off, 4096, off);
    }
    for (int s = 0; s < f->n; s++)
        CHECK(uraid_inject(a, s, "vanish") == 0);
    uraid_close(a); /* fails: the members are gone; it only frees memory */
    return rc;
}

static void test_restart(int level, int n, int junk_all)
{
    harness_beginf("RAID-%d ppl, dirty, missing a member: %s", level,
                   junk_all ? "a log with no sound header is damage: opening needs --force, nothing written"
                            : "a log whose header at its start tore while starting over opens without --force");
    struct fx f;
    fx_policy = URAID_POLICY_PPL;
    if (fx_setup(&f, level, n, CHUNK, MEMBER_BYTES, &rng, 0, NULL) || crash_after_writes(&f))
        goto out;
    int torn = 0, missing = 1, later_sound = 0;
    CHECK(tear_area(&f, torn, junk_all, &later_sound) == 0, "cannot tear slot %d's log", torn);
    if (!junk_all)
        CHECK(later_sound, "slot %d's log held no header after its start: the case was not made", torn);
    const char *paths[FX_MAXM];
    uint64_t before[FX_MAXM];
    int np = 0;
    for (int s = 0; s < f.n; s++)
        if (s != missing) {
            before[np] = fx_file_hash(f.path[s]);
            paths[np++] = f.path[s];
        }
    struct uraid_array *a = NULL;
    char why[512] = "";
    int rc = uraid_open(paths, np, NULL, &a, why, sizeof why);
    if (junk_all) {
        CHECK(rc == -EUCLEAN && strstr(why, "--force"), "open: %d (%s)", rc, why);
        for (int i = 0; i < np; i++)
            CHECK(fx_file_hash(paths[i]) == before[i], "%s changed by a refused open", paths[i]);
        printf("  refused: %s\n", why);
        goto out;
    }
    CHECK(rc == 0, "dirty + degraded array with a torn restart not opened: %s", why);
    if (rc)
        goto out;
    fx_verify_all(&f, a, "after the replay");
    char spare[300];
    if (fx_make_file(&f, "spare.img", spare, sizeof spare) == 0 && fx_add_spare(&f, a, spare) == 0) {
        struct uraid_job_status st;
        fx_job(&f, a, URAID_JOB_RECOVER, NULL, &st);
        struct uraid_job_params jp = {.slot = -1};
        fx_job(&f, a, URAID_JOB_CHECK, &jp, &st);
        CHECK(st.mismatch_sectors == 0, "mismatch_cnt %llu after the rebuild", (unsigned long long)st.mismatch_sectors);
        fx_verify_all(&f, a, "after the rebuild");
    }
    CHECK(uraid_close(a) == 0);
out:
    fx_destroy(&f);
    fx_policy = URAID_POLICY_RESYNC;
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_ppl_restart");
    rng_seed(&rng, harness_seed());
    fx_log_from_env();
    test_restart(5, 4, 0);
    test_restart(5, 4, 1);
    test_restart(6, 5, 0);
    test_restart(6, 5, 1);
    return harness_finish();
}
