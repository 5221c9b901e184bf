#include "array_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

int fx_create(struct fx *f, int level, int n, uint32_t chunk, uint64_t member_bytes)
{
    memset(f, 0, sizeof *f);
    f->level = level;
    f->n = n;
    f->chunk = chunk;
    f->member_bytes = member_bytes;
    snprintf(f->label, sizeof f->label, "RAID-%d n=%d chunk=%uK", level, n, chunk / 1024);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/uraid-fx-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) {
        CHECK(0, "mkdtemp %s: %s", f->dir, strerror(errno));
        return -errno;
    }
    const char *paths[FX_MAXM];
    char dir[sizeof f->dir]; /* a copy: gcc -O1 cannot tell f->dir and f->path[] apart (-Wrestrict) */
    memcpy(dir, f->dir, sizeof dir);
    for (int s = 0; s < n; s++) {
        snprintf(f->path[s], sizeof f->path[s], "%s/m%d.img", dir, s);
        paths[s] = f->path[s];
        int fd = open(f->path[s], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)member_bytes)) {
            CHECK(0, "member %s: %s", f->path[s], strerror(errno));
            if (fd >= 0)
                close(fd);
            return -EIO;
        }
        close(fd);
    }
    struct uraid_create_params cp = {.level = level, .raid_devices = n, .chunk_bytes = chunk, .layout = -1,
                                      .assume_clean = 1};
    char why[512] = "";
    int rc = uraid_create(paths, n, &cp, 0, why, sizeof why);
    CHECK(rc == 0, "%s: create: %d (%s)", f->label, rc, why);
    if (rc)
        return rc;
    struct md_sb sb;
    rc = fx_read_sb(f, 0, &sb);
    if (rc)
        return rc;
    f->data_offset = sb.data_offset * 512;
    f->geom = (struct layout_geom){.level = level, .layout = (int)sb.layout, .raid_disks = n,
                                   .chunk_sectors = sb.chunksize};
    f->k = layout_data_disks(&f->geom);
    f->stripe_bytes = (uint64_t)f->k * chunk;
    uint64_t sectors;
    /* RAID-0 superblocks leave size 0: the members' data size is what counts */
    layout_array_sectors(&f->geom, sb.size ? sb.size : sb.data_size, &sectors);
    f->size = sectors * 512;
    f->model = calloc(1, f->size);
    CHECK(f->model != NULL);
    return f->model ? 0 : -ENOMEM;
}

struct uraid_array *fx_open(struct fx *f, const int *omit, int sim, int force)
{
    const char *paths[FX_MAXM], *specs[FX_MAXM];
    int np = 0;
    for (int s = 0; s < f->n; s++)
        if (!omit || !omit[s]) {
            specs[np] = "";
            paths[np++] = f->path[s];
        }
    struct uraid_open_params op = {.force = force, .member_sim = sim ? specs : NULL};
    struct uraid_array *a = NULL;
    char why[512] = "";
    int rc = uraid_open(paths, np, &op, &a, why, sizeof why);
    CHECK(rc == 0, "%s: open with %d members: %d (%s)", f->label, np, rc, why);
    if (rc == 0)
        CHECK(uraid_size(a) == f->size, "%s: size %llu, expected %llu", f->label, (unsigned long long)uraid_size(a),
              (unsigned long long)f->size);
    return rc ? NULL : a;
}

int fx_write(struct fx *f, struct uraid_array *a, const void *buf, size_t len, uint64_t off)
{
    int rc = uraid_write(a, buf, len, off);
    if (rc == 0)
        memcpy(f->model + off, buf, len);
    return rc;
}

int fx_verify(struct fx *f, struct uraid_array *a, uint64_t off, uint64_t len, const char *what)
{
    uint8_t *buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
    int rc = uraid_read(a, buf, len, off);
    CHECK(rc == 0, "%s: %s: read %llu+%llu: %d", f->label, what, (unsigned long long)off, (unsigned long long)len,
          rc);
    if (rc == 0 && memcmp(buf, f->model + off, len)) {
        uint64_t i = 0;
        while (buf[i] == f->model[off + i])
            i++;
        CHECK(0, "%s: %s: read %llu+%llu differs first at array byte %llu (chunk %llu +%llu)", f->label, what,
              (unsigned long long)off, (unsigned long long)len, (unsigned long long)(off + i),
              (unsigned long long)((off + i) / f->chunk), (unsigned long long)((off + i) % f->chunk));
        rc = -EILSEQ;
    }
    free(buf);
    return rc;
}

void fx_verify_all(struct fx *f, struct uraid_array *a, const char *what)
{
    for (uint64_t off = 0; off < f->size; off += 1u << 20) {
        uint64_t len = f->size - off < (1u << 20) ? f->size - off : 1u << 20;
        if (fx_verify(f, a, off, len, what))
            return;
    }
}

int fx_member_pread(const struct fx *f, int slot, void *buf, size_t len, uint64_t off)
{
    int fd = open(f->path[slot], O_RDONLY);
    if (fd < 0)
        return -errno;
    ssize_t r = pread(fd, buf, len, (off_t)(f->data_offset + off));
    close(fd);
    return r == (ssize_t)len ? 0 : -EIO;
}

int fx_sb_bytes(const struct fx *f, int slot, uint8_t out[MD_SB_BYTES])
{
    int fd = open(f->path[slot], O_RDONLY);
    if (fd < 0)
        return -errno;
    ssize_t r = pread(fd, out, MD_SB_BYTES, 4096);
    close(fd);
    return r == (ssize_t)MD_SB_BYTES ? 0 : -EIO;
}

int fx_read_sb(const struct fx *f, int slot, struct md_sb *sb)
{
    uint8_t buf[MD_SB_BYTES];
    int rc = fx_sb_bytes(f, slot, buf);
    if (rc == 0)
        rc = md_sb_decode(buf, MD_SB_V12_SECTOR, sb, NULL, 0);
    CHECK(rc == 0, "superblock of %s: %d", f->path[slot], rc);
    return rc;
}

void fx_locate(const struct fx *f, uint64_t off, int *slot, uint64_t *member_off)
{
    struct layout_addr ad;
    layout_map(&f->geom, off / 512, &ad);
    *slot = ad.disk;
    *member_off = ad.member_sector * 512 + off % 512;
}

void fx_parity_of(const struct fx *f, uint64_t stripe, int *p, int *q)
{
    static __thread struct stripe_map map;
    layout_stripe(&f->geom, stripe, &map);
    *p = map.p_disk;
    *q = map.q_disk;
}

void fx_destroy(struct fx *f)
{
    for (int s = 0; s < f->n; s++)
        unlink(f->path[s]);
    if (f->dir[0])
        rmdir(f->dir);
    free(f->model);
    f->model = NULL;
}

void fx_fill(struct fx *f, struct uraid_array *a, struct rng *r)
{
    size_t len = 1u << 20;
    uint8_t *buf = aligned_alloc(4096, len);
    for (uint64_t off = 0; off < f->size; off += len) {
        size_t l = f->size - off < len ? (size_t)(f->size - off) : len;
        rng_fill(r, buf, l);
        int rc = fx_write(f, a, buf, l, off);
        CHECK(rc == 0, "%s: fill at %llu: %d", f->label, (unsigned long long)off, rc);
    }
    free(buf);
}

int fx_make_file(const struct fx *f, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", f->dir, name);
    int fd = open(out, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    int rc = fd >= 0 && ftruncate(fd, (off_t)f->member_bytes) == 0 ? 0 : -errno;
    if (fd >= 0)
        close(fd);
    CHECK(rc == 0, "cannot create %s: %s", out, strerror(-rc));
    return rc;
}

static void print_log(void *ctx, enum uraid_log_level level, const char *msg)
{
    (void)ctx;
    printf("    log%d: %s\n", level, msg);
}

void fx_log_from_env(void)
{
    const char *v = getenv("URAID_TEST_VERBOSE");
    if (v && *v && strcmp(v, "0"))
        uraid_set_log(print_log, NULL, URAID_LOG_INFO);
}
