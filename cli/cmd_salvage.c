/* uraid salvage MEMBERS... [--map MEMBER=MAPFILE]... -o IMAGE [--report FILE]
 *
 * For members that are images of failing disks: GNU ddrescue's mapfile of
 * each image says which bytes were never rescued, and those reads fail (the
 * badmap= layer), so the array rebuilds them from the other members where
 * the stripe still has enough redundancy. The whole array is copied to
 * IMAGE; what cannot be rebuilt is written as zeros and listed by array
 * sector, so the user knows exactly which files to distrust.
 *
 * The array is opened read-only: the library then neither rewrites members
 * after read errors nor updates superblocks, and the members are opened
 * O_RDONLY, so a mistake here cannot make a failing disk's image worse.
 *
 * Exit status: 0 everything recovered, 3 some sectors lost (IMAGE and the
 * report are still complete), 1 an error (IMAGE is then incomplete), 2 a
 * usage error. 3 rather than 2 so a script can tell a lossy salvage from a
 * mistyped command. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define PIECE (4u << 20)   /* bytes per read when nothing fails */
#define SECTOR URAID_SECTOR
#define EXIT_LOST 3

struct salvage_opts {
    const char *image, *report;
    int nmaps;
    const char *map_member[URAID_MAX_MEMBERS], *map_file[URAID_MAX_MEMBERS];
};

struct lost {
    uint64_t start, n; /* array sectors */
};

struct salvage {
    struct uraid_array *a;
    uint64_t recovered;  /* sectors */
    struct lost *lost;
    size_t nlost, cap;
};

static int take_value(const char *verb, int argc, char **argv, int *i, const char *opt, const char **out)
{
    size_t ol = strlen(opt);
    const char *a = argv[*i];
    if (!strncmp(a, opt, ol) && a[ol] == '=') {
        *out = a + ol + 1;
        return 1;
    }
    if (strcmp(a, opt))
        return 0;
    if (*i + 1 >= argc) {
        cli_error(verb, "%s needs a value (try 'uraid %s --help')", opt, verb);
        return -1;
    }
    *out = argv[++*i];
    return 1;
}

static int parse_opt(const char *verb, int argc, char **argv, int *i, void *ctx)
{
    struct salvage_opts *o = ctx;
    const char *v = NULL;
    int r;
    if (!strcmp(argv[*i], "-o"))
        r = take_value(verb, argc, argv, i, "-o", &o->image);
    else if ((r = take_value(verb, argc, argv, i, "--output", &o->image)) != 0)
        ;
    else if ((r = take_value(verb, argc, argv, i, "--report", &o->report)) != 0)
        ;
    else if ((r = take_value(verb, argc, argv, i, "--map", &v)) == 1) {
        const char *eq = strrchr(v, '=');
        if (!eq || eq == v || !eq[1]) {
            cli_error(verb, "--map '%s': expected MEMBER=MAPFILE, e.g. --map d1.img=d1.map", v);
            return -1;
        }
        if (o->nmaps >= URAID_MAX_MEMBERS) {
            cli_error(verb, "too many --map options (at most %d)", URAID_MAX_MEMBERS);
            return -1;
        }
        char *member = strndup(v, (size_t)(eq - v));
        if (!member) {
            cli_error(verb, "out of memory");
            return -1;
        }
        o->map_member[o->nmaps] = member;
        o->map_file[o->nmaps++] = eq + 1;
    }
    return r;
}

static int same_file(const struct stat *x, const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_dev == x->st_dev && st.st_ino == x->st_ino;
}

/* The member index `path` names (by name, else by identity), or -1. */
static int member_index(const struct cli_members *mem, const char *path)
{
    for (int i = 0; i < mem->n; i++)
        if (!strcmp(mem->path[i], path))
            return i;
    struct stat st;
    if (stat(path, &st))
        return -1;
    for (int i = 0; i < mem->n; i++)
        if (same_file(&st, mem->path[i]))
            return i;
    return -1;
}

/* Refuses an output that would overwrite a member or a mapfile: salvage
 * must never touch what it salvages from. */
static int check_output(const char *verb, const char *what, const char *path, const struct cli_members *mem,
                        const struct salvage_opts *o)
{
    struct stat st;
    if (stat(path, &st))
        return 0; /* does not exist yet: cannot be a member */
    for (int i = 0; i < mem->n; i++)
        if (same_file(&st, mem->path[i])) {
            cli_error(verb, "%s %s is the member %s; salvage never writes to members: choose another file", what,
                      path, mem->path[i]);
            return -1;
        }
    for (int i = 0; i < o->nmaps; i++)
        if (same_file(&st, o->map_file[i])) {
            cli_error(verb, "%s %s is the mapfile of %s: choose another file", what, path, o->map_member[i]);
            return -1;
        }
    return 0;
}

/* Adds "badmap=MAPFILE" to the member_sim spec of each member given a map,
 * after any --member-layer spec. */
static int build_sim(const char *verb, struct cli_members *mem, const struct salvage_opts *o, char **text,
                     struct uraid_open_params *op)
{
    int seen[URAID_MAX_MEMBERS] = {0};
    for (int m = 0; m < o->nmaps; m++) {
        int i = member_index(mem, o->map_member[m]);
        if (i < 0) {
            cli_error(verb, "--map %s=%s: '%s' is not one of the members given", o->map_member[m], o->map_file[m],
                      o->map_member[m]);
            return -1;
        }
        if (seen[i]++) {
            cli_error(verb, "--map: member %s is given two mapfiles; merge them with ddrescuelog", mem->path[i]);
            return -1;
        }
        if (strpbrk(o->map_file[m], ",;")) {
            cli_error(verb, "--map %s: the mapfile's path may not contain ',' or ';'; rename or link it",
                      o->map_file[m]);
            return -1;
        }
        const char *prev = mem->nlayers ? mem->sim_text[i] : "";
        size_t len = strlen(prev) + strlen(o->map_file[m]) + 16;
        if (!(text[i] = malloc(len))) {
            cli_error(verb, "out of memory");
            return -1;
        }
        snprintf(text[i], len, "%s%sbadmap=%s", prev, *prev ? ";" : "", o->map_file[m]);
        mem->sim[i] = text[i];
    }
    if (o->nmaps) {
        for (int i = 0; i < mem->n; i++)
            if (!seen[i])
                mem->sim[i] = mem->nlayers ? mem->sim_text[i] : "";
        op->member_sim = mem->sim;
    }
    return 0;
}

static int note_lost(struct salvage *s, uint64_t sector, uint64_t n)
{
    if (s->nlost && s->lost[s->nlost - 1].start + s->lost[s->nlost - 1].n == sector) {
        s->lost[s->nlost - 1].n += n;
        return 0;
    }
    if (s->nlost == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        struct lost *l = realloc(s->lost, cap * sizeof *l);
        if (!l)
            return -ENOMEM;
        s->lost = l;
        s->cap = cap;
    }
    s->lost[s->nlost++] = (struct lost){sector, n};
    return 0;
}

/* Reads [sector, sector + nsec) into buf; on -EIO halves the range until
 * single sectors, so every sector the array can rebuild is kept even when a
 * larger read fails. That matters: a piece is rebuilt from the same rows of
 * every member, so bad rows on two members in different parts of one chunk
 * fail a big read of a RAID-5 while each row alone has only one bad block. */
static int salvage_span(struct salvage *s, uint8_t *buf, uint64_t sector, uint64_t nsec)
{
    int rc = uraid_read(s->a, buf, (size_t)(nsec * SECTOR), sector * SECTOR);
    if (rc == 0) {
        s->recovered += nsec;
        return 0;
    }
    if (rc != -EIO)
        return rc;
    if (nsec == 1) {
        memset(buf, 0, SECTOR);
        return note_lost(s, sector, 1);
    }
    uint64_t half = nsec / 2;
    rc = salvage_span(s, buf, sector, half);
    return rc ? rc : salvage_span(s, buf + half * SECTOR, sector + half, nsec - half);
}

static void drop_log(void *ctx, enum uraid_log_level level, const char *msg) {}

static void print_report(FILE *f, const struct salvage *s, uint64_t total)
{
    for (size_t i = 0; i < s->nlost; i++)
        fprintf(f, "%llu-%llu (%llu sector%s)\n", (unsigned long long)s->lost[i].start,
                (unsigned long long)(s->lost[i].start + s->lost[i].n - 1), (unsigned long long)s->lost[i].n,
                s->lost[i].n == 1 ? "" : "s");
}

static void print_summary(FILE *f, const struct salvage *s, uint64_t total)
{
    fprintf(f, "recovered %llu of %llu sectors; %zu unrecoverable range%s\n", (unsigned long long)s->recovered,
            (unsigned long long)total, s->nlost, s->nlost == 1 ? "" : "s");
}

/* Copies the whole array into fd. Returns 0 or a negative errno after a
 * message naming the array bytes or the image. */
static int copy_array(struct salvage *s, int fd, const char *image)
{
    uint64_t size = uraid_size(s->a), off = 0;
    uint8_t *buf = aligned_alloc(4096, PIECE);
    if (!buf) {
        cli_error("salvage", "out of memory");
        return -ENOMEM;
    }
    int rc = 0;
    while (off < size) {
        size_t n = size - off < PIECE ? (size_t)(size - off) : PIECE;
        rc = salvage_span(s, buf, off / SECTOR, n / SECTOR);
        if (rc) {
            cli_error("salvage", "array sectors %llu-%llu: %s; %s is incomplete", (unsigned long long)(off / SECTOR),
                      (unsigned long long)((off + n) / SECTOR - 1), uraid_strerror(rc), image);
            break;
        }
        if (cli_write_all(fd, buf, n)) {
            rc = -errno;
            cli_error("salvage", "writing %s at byte %llu: %s", image, (unsigned long long)off, strerror(errno));
            break;
        }
        off += n;
    }
    free(buf);
    if (!rc && fdatasync(fd) && errno != EINVAL && errno != EROFS) {
        rc = -errno;
        cli_error("salvage", "flushing %s: %s", image, strerror(errno));
    }
    return rc;
}

int cmd_salvage(int argc, char **argv)
{
    static const char *const verb = "salvage";
    struct salvage_opts o = {0};
    struct cli_members mem;
    struct uraid_open_params op = {.readonly = 1, .force = 1};
    struct cli_extra extra = {parse_opt, &o, "[--map MEMBER=MAPFILE]... -o IMAGE [--report FILE]"};
    char *simtext[URAID_MAX_MEMBERS] = {0};
    struct uraid_array *a = NULL;
    struct salvage s = {0};
    FILE *report = NULL;
    int fd = -1, status = 1;

    int rc = cli_parse_members(verb, argc, argv, &mem, &op, &extra);
    op.readonly = 1; /* whatever the options said: never write to members */
    if (rc) {
        status = rc < 0 ? 0 : rc;
        goto out;
    }
    status = 2;
    if (!o.image) {
        cli_error(verb, "no output image given (usage: uraid salvage MEMBERS... [--map MEMBER=MAPFILE]... -o IMAGE)");
        goto out;
    }
    if (o.report && !strcmp(o.report, o.image)) {
        cli_error(verb, "--report %s is also the output image: choose another file", o.report);
        goto out;
    }
    if (build_sim(verb, &mem, &o, simtext, &op) || check_output(verb, "output image", o.image, &mem, &o) ||
        (o.report && check_output(verb, "report", o.report, &mem, &o)))
        goto out;
    status = 1;
    if (cli_open_array(verb, &mem, &op, &a))
        goto out;
    /* opened: only now create the outputs, so a refusal leaves nothing behind */
    fd = open(o.image, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        cli_error(verb, "cannot create output image %s: %s", o.image, strerror(errno));
        goto out;
    }
    if (o.report && !(report = fopen(o.report, "w"))) {
        cli_error(verb, "cannot create report %s: %s", o.report, strerror(errno));
        goto out;
    }
    if (!cli.verbose) /* every read error would be logged; the report says it once, by array sector */
        uraid_set_log(drop_log, NULL, URAID_LOG_ERROR);
    s.a = a;
    if (copy_array(&s, fd, o.image))
        goto out;
    uint64_t total = uraid_size(a) / SECTOR;
    FILE *rf = report ? report : stdout;
    print_report(rf, &s, total);
    print_summary(rf, &s, total);
    if (report) {
        int bad = ferror(report);
        bad |= fclose(report) != 0;
        report = NULL;
        if (bad) {
            cli_error(verb, "writing report %s: %s", o.report, strerror(errno));
            goto out;
        }
        print_summary(stdout, &s, total);
    }
    if (fflush(stdout)) {
        cli_error(verb, "writing the report to stdout: %s", strerror(errno));
        goto out;
    }
    status = s.nlost ? EXIT_LOST : 0;
out:
    if (report)
        fclose(report);
    if (fd >= 0 && close(fd) && status != 1) {
        cli_error(verb, "closing %s: %s", o.image, strerror(errno));
        status = 1;
    }
    if (a)
        uraid_close(a); /* read-only: writes nothing */
    free(s.lost);
    for (int i = 0; i < URAID_MAX_MEMBERS; i++)
        free(simtext[i]);
    for (int i = 0; i < o.nmaps; i++)
        free((char *)o.map_member[i]);
    return status;
}
