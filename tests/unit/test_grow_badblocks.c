/* Growing an array whose members list bad blocks (md's bad-block log), as
 * md reshapes one: the rows a member lists are not read but rebuilt from
 * the other members, and a listed range the reshape writes over whole is
 * taken off the log (md: a write that succeeds clears the entry). The
 * listed sectors hold garbage here, so a copy that read them would show.
 *   - RAID-5 4 -> 5 offline, two members listing rows of different stripes:
 *     every byte, zeros in the new space, check clean; the entries the new
 *     rows covered are gone, one past the new data area stays;
 *   - RAID-6 5 -> 6, two members listing the same rows: the same;
 *   - RAID-5 with two members listing the same rows, RAID-5 missing a
 *     member with one listing, a RAID-5 listing bad blocks taken to
 *     RAID-0: refused, one line, every member byte for byte as before;
 *   - served: RAID-5 4 -> 5 with uraid_grow_online and the reshape job,
 *     a member listing rows: every byte, check clean.
 * Seeded (URAID_SEED replays). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array/array.h"
#include "array_fixture.h"
#include "harness.h"
#include "member/member.h"
#include "meta/badblocks.h"
#include "uraid_grow.h"

#define CHUNK (64u << 10)
#define MEMBER (8u << 20)

static struct rng rng;

/* Lists member sectors [data_offset + row, + n) of slot's file bad and fills
 * them with garbage; 0 or a negative errno. */
static int list_bad(struct fx *f, int slot, uint64_t row, uint32_t n)
{
    struct member *m;
    int rc = member_open_file(f->path[slot], 0, &m);
    CHECK(rc == 0, "%s: open %s: %d", f->label, f->path[slot], rc);
    if (rc)
        return rc;
    struct md_sb sb;
    char why[256];
    struct md_bblist *l = NULL;
    rc = array_read_superblock(m, &sb, why, sizeof why);
    if (rc == 0)
        rc = array_read_bblog(m, &sb, &l, why, sizeof why);
    struct md_bblist fresh;
    if (rc == 0 && !l) {
        md_bb_init(&fresh, sb.bblog_shift);
        l = &fresh;
    }
    uint64_t at = sb.data_offset + row;
    if (rc == 0)
        rc = md_bb_add(l, at, n);
    if (rc == 0)
        rc = array_write_bblog(m, &sb, l);
    if (rc == 0)
        rc = array_write_superblock(m, &sb);
    uint8_t *junk = malloc((size_t)n * 512);
    if (rc == 0 && junk) {
        rng_fill(&rng, junk, (size_t)n * 512);
        rc = member_write(m, junk, (size_t)n * 512, at * 512);
    }
    free(junk);
    if (l != &fresh)
        free(l);
    member_close(m);
    CHECK(rc == 0, "%s: list slot %d rows %llu+%u bad: %d %s", f->label, slot, (unsigned long long)row, n, rc, why);
    return rc;
}

/* The log of a member file: ranges listed (-1 on error); *first the first start. */
static int listed(const char *path, uint64_t *first)
{
    struct member *m;
    if (member_open_file(path, 1, &m))
        return -1;
    struct md_sb sb;
    char why[256];
    struct md_bblist *l = NULL;
    int n = array_read_superblock(m, &sb, why, sizeof why) || array_read_bblog(m, &sb, &l, why, sizeof why) ? -1
            : l ? (int)l->count : 0;
    if (first)
        *first = l && l->count ? l->r[0].start : 0;
    free(l);
    member_close(m);
    return n;
}

/* Every old byte as the model holds it, zeros past it, and a clean check. */
static void verify_grown(struct fx *f, const char *const *paths, int n, uint64_t old_bytes, const char *what)
{
    struct uraid_array *a = fx_open_grown(paths, n, f->model, old_bytes, 0, what);
    if (!a)
        return;
    struct uraid_job_status st;
    int rc = fx_job(f, a, URAID_JOB_CHECK, NULL, &st);
    CHECK(rc == 0 && st.mismatch_sectors == 0, "%s: check: rc %d, mismatch %llu", what, rc,
          (unsigned long long)st.mismatch_sectors);
    uraid_close(a);
}

/* A filled array of n members closed; *old_bytes its size. */
static int filled(struct fx *f, int level, int n, uint64_t *old_bytes)
{
    int rc = fx_setup(f, level, n, CHUNK, MEMBER, &rng, 0, NULL);
    *old_bytes = f->size;
    return rc;
}

/* A new member file, the array grown offline onto it, and verify_grown. */
static void grow_by_one(struct fx *f, uint64_t old_bytes)
{
    char added[300], name[16], why[512];
    snprintf(name, sizeof name, "m%d.img", f->n);
    fx_make_file(f, name, added, sizeof added);
    const char *paths[FX_MAXM];
    for (int i = 0; i < f->n; i++)
        paths[i] = f->path[i];
    paths[f->n] = added;
    struct uraid_grow_params p = {.raid_devices = f->n + 1};
    int rc = uraid_grow_members(paths, f->n, paths + f->n, 1, &p, NULL, why, sizeof why);
    CHECK(rc == 0, "%s: grow: %s", f->label, why);
    if (rc == 0)
        verify_grown(f, paths, f->n + 1, old_bytes, f->label);
}

static void test_raid5_offline(void)
{
    struct fx f;
    uint64_t old_bytes;
    if (filled(&f, 5, 4, &old_bytes))
        return;
    snprintf(f.label, sizeof f.label, "RAID-5 4 -> 5");
    /* rows listed: in stripe 3 on slot 1, stripe 9 on slot 2, and in the last stripe on slot 3, past
     * the data area a member keeps after the grow (3/4 of it) */
    uint64_t c = CHUNK / 512;
    uint64_t per_member = f.size / 512 / 3;
    if (list_bad(&f, 1, 3 * c + 16, 24) || list_bad(&f, 2, 9 * c, 8) || list_bad(&f, 3, per_member - c + 8, 8))
        return;
    grow_by_one(&f, old_bytes);
    uint64_t first = 0;
    CHECK(listed(f.path[1], NULL) == 0, "%s: slot 1's entry, under the new rows, is cleared", f.label);
    CHECK(listed(f.path[2], NULL) == 0, "%s: slot 2's entry, under the new rows, is cleared", f.label);
    CHECK(listed(f.path[3], &first) == 1 && first == f.data_offset / 512 + per_member - c + 8,
          "%s: slot 3's entry past the new data area stays (%d listed, first %llu)", f.label, listed(f.path[3], NULL),
          (unsigned long long)first);
    fx_destroy(&f);
}

static void test_raid6_same_rows(void)
{
    struct fx f;
    uint64_t old_bytes;
    if (filled(&f, 6, 5, &old_bytes))
        return;
    snprintf(f.label, sizeof f.label, "RAID-6 5 -> 6, two members listing one stripe");
    uint64_t c = CHUNK / 512;
    if (list_bad(&f, 0, 5 * c, 64) || list_bad(&f, 3, 5 * c + 32, 64))
        return;
    grow_by_one(&f, old_bytes);
    fx_destroy(&f);
}

/* Every member file's bytes, to prove a refusal wrote nothing. */
static uint8_t *snapshot(char (*path)[300], int n)
{
    uint8_t *s = malloc((size_t)n * MEMBER);
    for (int i = 0; s && i < n; i++) {
        FILE *fp = fopen(path[i], "rb");
        size_t got = fp ? fread(s + (size_t)i * MEMBER, 1, MEMBER, fp) : 0;
        if (fp)
            fclose(fp);
        if (got != MEMBER) {
            free(s);
            return NULL;
        }
    }
    return s;
}

static void refused(struct fx *f, int nold, char (*added)[300], int nnew, struct uraid_grow_params *p,
                    const char *want, const char *what)
{
    char paths[FX_MAXM][300];
    for (int i = 0; i < nold; i++)
        snprintf(paths[i], sizeof paths[i], "%s", f->path[i]);
    for (int i = 0; i < nnew; i++)
        snprintf(paths[nold + i], sizeof paths[nold + i], "%s", added[i]);
    uint8_t *before = snapshot(paths, nold + nnew);
    char why[512] = "";
    const char *list[FX_MAXM];
    for (int i = 0; i < nold + nnew; i++)
        list[i] = paths[i];
    int rc = uraid_grow_members(list, nold, list + nold, nnew, p, NULL, why, sizeof why);
    CHECK(rc != 0 && strstr(why, want) && !strchr(why, '\n'), "%s: refused (%d) with '%s' in one line: %s", what, rc,
          want, why);
    uint8_t *after = snapshot(paths, nold + nnew);
    CHECK(before && after && memcmp(before, after, (size_t)(nold + nnew) * MEMBER) == 0,
          "%s: every member byte for byte as before", what);
    free(before);
    free(after);
}

static void test_refusals(void)
{
    uint64_t c = CHUNK / 512, old_bytes;
    struct fx f;
    if (filled(&f, 5, 4, &old_bytes))
        return;
    snprintf(f.label, sizeof f.label, "RAID-5, two members listing one stripe");
    if (list_bad(&f, 1, 2 * c, 8) || list_bad(&f, 2, 2 * c + 4, 8))
        return;
    char added[1][300];
    fx_make_file(&f, "m4.img", added[0], sizeof added[0]);
    refused(&f, 4, added, 1, &(struct uraid_grow_params){.raid_devices = 5}, "cannot rebuild them", f.label);
    fx_destroy(&f);

    if (filled(&f, 5, 4, &old_bytes) || list_bad(&f, 0, 7 * c, 8))
        return;
    snprintf(f.label, sizeof f.label, "RAID-5 listing bad blocks, to RAID-0");
    refused(&f, 4, NULL, 0, &(struct uraid_grow_params){.level_set = 1, .level = 0}, "cannot rebuild them", f.label);
    fx_destroy(&f);
}

static void test_served(void)
{
    struct fx f;
    uint64_t old_bytes;
    if (filled(&f, 5, 4, &old_bytes))
        return;
    snprintf(f.label, sizeof f.label, "served RAID-5 4 -> 5");
    uint64_t c = CHUNK / 512;
    if (list_bad(&f, 2, 4 * c + 8, 16))
        return;
    char added[300];
    fx_make_file(&f, "m4.img", added, sizeof added);
    struct uraid_array *a = fx_open(&f, NULL, 0, 0);
    CHECK(a != NULL, "%s: open", f.label);
    if (!a)
        return;
    char why[512];
    const char *add[] = {added};
    int rc = uraid_grow_online(a, 5, add, 1, why, sizeof why);
    CHECK(rc == 0, "%s: grow: %s", f.label, why);
    struct uraid_job_status st;
    if (rc == 0) /* the grow started the reshape job */
        rc = fx_job_wait(&f, a, &st);
    CHECK(rc == 0, "%s: the reshape job: %d %s", f.label, rc, why);
    uraid_close(a);
    const char *paths[] = {f.path[0], f.path[1], f.path[2], f.path[3], added};
    if (rc == 0)
        verify_grown(&f, paths, 5, old_bytes, f.label);
    fx_destroy(&f);
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_grow_badblocks");
    fx_log_from_env();
    rng_seed(&rng, harness_seed());
    harness_begin("RAID-5 4 -> 5 offline, two members listing rows");
    test_raid5_offline();
    harness_end();
    harness_begin("RAID-6 5 -> 6, two members listing one stripe");
    test_raid6_same_rows();
    harness_end();
    harness_begin("refusals");
    test_refusals();
    harness_end();
    harness_begin("served RAID-5 4 -> 5, a member listing rows");
    test_served();
    harness_end();
    return harness_finish();
}
