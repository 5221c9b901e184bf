/* Layer specs from the command line, e.g.
 *     --member-layer 'throttle=60M,latency=100us;read-eio=1M+64K'
 * ';' separates specs and each spec becomes one layer on top of the previous
 * one, in order. Inside a spec, ',' separates items:
 *   - a spec with throttle=RATE, disk=PRESET, seek=TIME, rpm=N or qd=N is a
 *     simulated disk (member_disk_wrap, the model in throttle.c): disk= takes
 *     a preset (hdd-7200, hdd-5400, sata-ssd, nvme) and the other keys, in
 *     any order, override its values; latency=TIME is then the disk's
 *     per-request latency;
 *   - any other spec is a fault-injection layer: latency=TIME (added to every
 *     request, requests still run concurrently, like a slow link),
 *     read-eio=OFF+LEN (reads fail, for good), pending=OFF+LEN (reads fail
 *     until the range is written: a disk's pending sector, remapped on
 *     write), write-eio=OFF+LEN, drop-writes=OFF+LEN, stall-writes=OFF+LEN
 *     (writes there wait until the rules are cleared: a test's hold on one
 *     write in flight), vanish,
 *     badmap=PATH (a GNU ddrescue mapfile of this member's image: reads of
 *     every byte it does not list as rescued fail with EIO; PATH may not
 *     contain ',' or ';').
 *     Consecutive fault specs share one fault layer.
 *   - a spec starting with powercut[=NAME] is a power-cut simulation layer
 *     (powercut.h) in the domain NAME ("default" without one), with
 *     seed=N (the decisions' seed, default 0), after=N (the cut comes
 *     during the N-th member write of the domain; none by itself without
 *     it), keep=PCT and tear=PCT (the odds that a write not yet flushed is
 *     kept whole or torn at the cut; the rest are dropped; default 33 and
 *     33). It takes no other key. Members naming one domain share the
 *     first one's seed, odds and trigger.
 * Sizes are bytes with binary suffixes (4096, 64K, 1M, 2G, 1T; "KiB" and
 * "K" are the same); rates are bytes per second with decimal suffixes, like
 * disk datasheets (60M = 60,000,000 B/s; "60MB/s" and "57Mi" work too);
 * times need a unit (ns, us, ms, s).
 *
 * The whole string is checked before any layer is applied, so a typo in the
 * third spec does not leave *m half-wrapped. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "member/ddrescue.h"
#include "log.h"
#include "member/member.h"
#include "member/powercut.h"

#define ITEM_MAX 256
#define MAPFILE_MAX (64u << 20) /* far above any real mapfile; stops a wrong path eating memory */

struct layer {
    int throttle;           /* a simulated disk, else a fault layer */
    int has_rate, has_latency, has_disk, has_seek, has_rpm, has_qd;
    uint64_t rate;          /* bytes per second */
    uint32_t latency_usec, seek_usec, rpm, qd;
    struct disk_model preset;
};

/* Keys that make a spec a simulated disk. */
static int is_disk_item(const char *it)
{
    static const char *const keys[] = {"throttle", "disk", "seek", "rpm", "qd"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        size_t n = strlen(keys[i]);
        if (!strncmp(it, keys[i], n) && (it[n] == '=' || !it[n]))
            return 1;
    }
    return 0;
}

static int fail(char *why, size_t whylen, const char *item, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *why, size_t whylen, const char *item, const char *fmt, ...)
{
    if (why && whylen) {
        char reason[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof reason, fmt, ap);
        va_end(ap);
        snprintf(why, whylen, "bad layer spec '%s': %s", item, reason);
    }
    return -EINVAL;
}

/* Strict unsigned decimal (or 0x hex) integer: no sign, no spaces. Sets
 * *end past the digits. Returns -1 on no digits or overflow. */
static int parse_uint(const char *s, uint64_t *v, const char **end)
{
    int base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (!isxdigit((unsigned char)s[0]) || (base == 10 && !isdigit((unsigned char)s[0])))
        return -1;
    errno = 0;
    char *e;
    unsigned long long x = strtoull(s, &e, base);
    if (errno)
        return -1;
    *v = x;
    *end = e;
    return 0;
}

/* Byte count: INTEGER[K|M|G|T][i][B], binary multiples. */
static int parse_size(const char *s, uint64_t *out, const char **msg)
{
    uint64_t v;
    const char *e;
    if (parse_uint(s, &v, &e)) {
        *msg = "expected a byte count such as 4096, 64K or 1M";
        return -1;
    }
    int shift = 0;
    switch (toupper((unsigned char)*e)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    }
    if (shift) {
        e++;
        if (*e == 'i')
            e++;
    }
    if (*e == 'B')
        e++;
    if (*e) {
        *msg = "unknown size suffix (use K, M, G or T: powers of 1024)";
        return -1;
    }
    if (shift && v > (UINT64_MAX >> shift)) {
        *msg = "size too large";
        return -1;
    }
    *out = v << shift;
    return 0;
}

/* Non-negative decimal with an optional fraction ("1.5"); strtod alone would
 * also take signs, spaces, "inf" and hex floats. */
static int parse_decimal(const char *s, double *v, const char **end)
{
    if (!isdigit((unsigned char)s[0]))
        return -1;
    const char *p = s;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p))
            p++;
    }
    char num[64];
    if ((size_t)(p - s) >= sizeof num)
        return -1;
    memcpy(num, s, (size_t)(p - s));
    num[p - s] = 0;
    *v = strtod(num, NULL);
    *end = p;
    return isfinite(*v) ? 0 : -1;
}

/* Bytes per second: NUMBER[K|M|G|T (x1000) or Ki|Mi|Gi|Ti (x1024)][B][/s]. */
static int parse_rate(const char *s, uint64_t *out, const char **msg)
{
    double v;
    const char *e;
    if (parse_decimal(s, &v, &e)) {
        *msg = "expected a rate in bytes per second such as 60M (60 MB/s) or 500K";
        return -1;
    }
    double mult = 1;
    int exp = 0;
    switch (toupper((unsigned char)*e)) {
    case 'K': exp = 1; break;
    case 'M': exp = 2; break;
    case 'G': exp = 3; break;
    case 'T': exp = 4; break;
    }
    if (exp) {
        e++;
        int binary = *e == 'i';
        if (binary)
            e++;
        for (int i = 0; i < exp; i++)
            mult *= binary ? 1024 : 1000;
    }
    if (*e == 'B')
        e++;
    if (!strcmp(e, "/s"))
        e += 2;
    if (*e) {
        *msg = "unknown rate suffix (use K, M, G: bytes per second, powers of 1000)";
        return -1;
    }
    v *= mult;
    if (v >= 18446744073709551615.0) {
        *msg = "rate too large";
        return -1;
    }
    *out = (uint64_t)(v + 0.5);
    return 0;
}

/* Time: NUMBER followed by ns, us, ms or s; returned in microseconds. */
static int parse_time_usec(const char *s, uint32_t *out, const char **msg)
{
    double v;
    const char *e;
    if (parse_decimal(s, &v, &e)) {
        *msg = "expected a time such as 100us or 2ms";
        return -1;
    }
    double usec;
    if (!strcmp(e, "ns"))
        usec = v / 1000;
    else if (!strcmp(e, "us"))
        usec = v;
    else if (!strcmp(e, "ms"))
        usec = v * 1000;
    else if (!strcmp(e, "s"))
        usec = v * 1000000;
    else if (!*e && v == 0)
        usec = 0;
    else {
        *msg = *e ? "unknown time unit (use ns, us, ms or s)" : "a time needs a unit (ns, us, ms or s)";
        return -1;
    }
    if (usec > 4294967295.0) {
        *msg = "time too large (at most 4294 s)";
        return -1;
    }
    *out = (uint32_t)(usec + 0.5);
    if (!*out && v > 0)
        *out = 1; /* a requested delay never rounds to none */
    return 0;
}

/* OFF+LEN, both sizes, LEN > 0, and starting inside the member. */
static int parse_range(const char *s, uint64_t member_size, uint64_t *start, uint64_t *len, const char **msg)
{
    const char *plus = strchr(s, '+');
    char off[64];
    if (!plus || (size_t)(plus - s) >= sizeof off) {
        *msg = "expected OFFSET+LENGTH such as 1M+64K";
        return -1;
    }
    memcpy(off, s, (size_t)(plus - s));
    off[plus - s] = 0;
    if (parse_size(off, start, msg) || parse_size(plus + 1, len, msg))
        return -1;
    if (!*len) {
        *msg = "the range is empty (LENGTH is 0)";
        return -1;
    }
    if (member_size && *start >= member_size) {
        *msg = "the range starts at or past the member's end";
        return -1;
    }
    return 0;
}

/* Reads and parses a ddrescue mapfile for a member of size_bytes. Errors
 * name the file (and line) in why, without the "bad layer spec" prefix:
 * the mapfile, not the spec, is what the user must fix. */
static int load_badmap(const char *path, uint64_t size_bytes, struct ddrescue_map *map, char *why, size_t whylen)
{
    memset(map, 0, sizeof *map); /* callers free it on every path */
    FILE *f = fopen(path, "rb");
    if (!f) {
        int err = errno;
        if (why && whylen)
            snprintf(why, whylen, "cannot open mapfile %s: %s", path, strerror(err));
        return -err;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? 2 * cap : 65536;
            char *n = ncap <= MAPFILE_MAX ? realloc(text, ncap) : NULL;
            if (!n) {
                rc = ncap <= MAPFILE_MAX ? -ENOMEM : -EFBIG;
                break;
            }
            text = n;
            cap = ncap;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                rc = -EIO;
            break;
        }
    }
    fclose(f);
    if (rc && why && whylen)
        snprintf(why, whylen, "cannot read mapfile %s: %s", path,
                 rc == -EFBIG ? "larger than 64 MiB, not a ddrescue mapfile" : strerror(-rc));
    if (!rc)
        rc = ddrescue_parse(text, len, path, size_bytes, map, why, whylen);
    free(text);
    return rc;
}

/* Every byte the map does not list as rescued becomes a read-EIO rule: the
 * array then sees exactly the errors the failing disk gave ddrescue. */
static int apply_badmap(struct member **m, const struct ddrescue_map *map)
{
    struct member *top = *m;
    int rc = 0;
    if (strcmp(top->ops->kind, "fault")) {
        rc = member_fault_wrap(top, &top);
        if (rc)
            return rc;
        *m = top;
    }
    for (size_t i = 0; i < map->nbad && !rc; i++) {
        struct fault_rule r = {.what = FAULT_READ, .start = map->bad[i].start, .len = map->bad[i].len, .err = -EIO};
        rc = member_fault_add(top, &r);
    }
    return rc;
}

static void trim(char **s)
{
    while (isspace((unsigned char)**s))
        (*s)++;
    char *e = *s + strlen(*s);
    while (e > *s && isspace((unsigned char)e[-1]))
        *--e = 0;
}

/* A power-cut spec: "powercut[=NAME],seed=N,after=N,keep=PCT,tear=PCT". */
struct powercut_spec {
    char name[64];
    uint64_t seed, after, keep, tear;
};

static int parse_percent(const char *val, uint64_t *out, const char **msg)
{
    const char *e;
    if (parse_uint(val, out, &e) || *e || *out > 100) {
        *msg = "expected a percentage 0..100";
        return -1;
    }
    return 0;
}

static int parse_powercut(char *spec, struct powercut_spec *ps, char *why, size_t whylen, const char *orig)
{
    *ps = (struct powercut_spec){.name = "default", .keep = 33, .tear = 33};
    char *save = NULL;
    unsigned seen = 0;
    for (char *it = strtok_r(spec, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        trim(&it);
        char *eq = strchr(it, '=');
        const char *val = eq ? eq + 1 : "";
        size_t klen = eq ? (size_t)(eq - it) : strlen(it);
        static const char *const keys[] = {"powercut", "seed", "after", "keep", "tear"};
        unsigned k = 0;
        while (k < 5 && !(klen == strlen(keys[k]) && !strncmp(it, keys[k], klen)))
            k++;
        if (k == 5)
            return fail(why, whylen, it,
                        "a powercut spec takes only seed, after, keep and tear; put other layers in a spec of their "
                        "own after ';'");
        if (seen & (1u << k))
            return fail(why, whylen, it, "%s given twice in one spec", keys[k]);
        seen |= 1u << k;
        if (k && (!eq || !*val))
            return fail(why, whylen, it, "expected %s=VALUE", keys[k]);
        const char *msg = NULL, *e = NULL;
        if (k == 0) {
            if (!eq)
                continue;
            size_t n = strlen(val);
            if (!n || n >= sizeof ps->name || strcspn(val, " \t:") != n)
                return fail(why, whylen, it, "the domain name must be 1..63 characters without spaces or ':'");
            memcpy(ps->name, val, n + 1);
        } else if (k == 1 || k == 2) {
            if (parse_uint(val, k == 1 ? &ps->seed : &ps->after, &e) || *e)
                return fail(why, whylen, it, "expected a number");
        } else if (parse_percent(val, k == 3 ? &ps->keep : &ps->tear, &msg)) {
            return fail(why, whylen, it, "%s", msg);
        }
    }
    if (ps->keep + ps->tear > 100)
        return fail(why, whylen, orig, "keep + tear is %llu%%, more than 100%%",
                    (unsigned long long)(ps->keep + ps->tear));
    return 0;
}

static int do_powercut(struct member **m, char *spec, int apply, char *why, size_t whylen)
{
    char orig[ITEM_MAX * 4];
    snprintf(orig, sizeof orig, "%s", spec);
    struct powercut_spec ps;
    int rc = parse_powercut(spec, &ps, why, whylen, orig);
    if (rc || !apply)
        return rc;
    struct powercut_domain *d;
    rc = powercut_domain_get(ps.name, ps.seed, (unsigned)ps.keep, (unsigned)ps.tear, &d);
    if (rc < 0)
        return rc;
    if (rc == 1 && ps.after) /* the domain's first member arms it, once */
        powercut_arm(d, ps.after);
    struct member *top = *m;
    rc = member_powercut_wrap(top, d, &top);
    if (!rc)
        *m = top;
    return rc;
}

static int is_powercut_spec(const char *s)
{
    return !strncmp(s, "powercut", 8) && (!s[8] || s[8] == '=' || s[8] == ',' || s[8] == ' ');
}

/* disk=NAME, seek=TIME (a bare number is milliseconds), rpm=N, qd=N. */
static int disk_item(struct layer *L, const char *it, size_t klen, const char *val, char *why, size_t whylen)
{
    const char *msg = NULL, *e;
    uint64_t v;
#define IS(k) (klen == strlen(k) && !strncmp(it, k, klen))
    int *seen = IS("disk") ? &L->has_disk : IS("seek") ? &L->has_seek : IS("rpm") ? &L->has_rpm : &L->has_qd;
    if (*seen)
        return fail(why, whylen, it, "%.*s given twice in one spec", (int)klen, it);
    *seen = 1;
    if (IS("disk")) {
        if (member_disk_preset(val, &L->preset))
            return fail(why, whylen, it, "unknown disk (use hdd-7200, hdd-5400, sata-ssd or nvme)");
    } else if (IS("seek")) {
        char t[64];
        int bare = isdigit((unsigned char)val[strlen(val) - 1]);
        snprintf(t, sizeof t, "%s%s", val, bare ? "ms" : "");
        if (parse_time_usec(t, &L->seek_usec, &msg))
            return fail(why, whylen, it, "%s (the full-stroke seek: 15ms, or 15 for milliseconds)", msg);
    } else if (IS("rpm")) {
        if (parse_uint(val, &v, &e) || *e || v > 100000)
            return fail(why, whylen, it, "expected revolutions per minute, 0 to 100000 (0: no rotation)");
        L->rpm = (uint32_t)v;
    } else {
        if (parse_uint(val, &v, &e) || *e || v < 1 || v > DISK_QD_MAX)
            return fail(why, whylen, it, "expected a queue depth from 1 to %d", DISK_QD_MAX);
        L->qd = (uint32_t)v;
    }
#undef IS
    return 0;
}

/* One ';'-separated spec (modifiable copy). With apply, wraps *m; without,
 * only checks. Errors name the item at fault. */
static int do_spec(struct member **m, char *spec, int apply, char *why, size_t whylen)
{
    struct layer L = {0};
    char *save = NULL;
    char orig[ITEM_MAX * 4];
    snprintf(orig, sizeof orig, "%s", spec);
    /* First pass: is it a throttle spec? That decides what latency means. */
    {
        char copy[ITEM_MAX * 4];
        snprintf(copy, sizeof copy, "%s", spec);
        for (char *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
            trim(&it);
            if (is_disk_item(it))
                L.throttle = 1;
        }
    }
    struct member *top = *m;
    uint64_t size = top->size;
    int vanish = 0;
    save = NULL;
    for (char *it = strtok_r(spec, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        trim(&it);
        if (!*it)
            return fail(why, whylen, orig, "empty item");
        char *eq = strchr(it, '=');
        const char *val = eq ? eq + 1 : NULL;
        size_t klen = eq ? (size_t)(eq - it) : strlen(it);
        const char *msg = NULL;
#define KEY(k) (klen == strlen(k) && !strncmp(it, k, klen))
        if (KEY("vanish")) {
            if (val)
                return fail(why, whylen, it, "vanish takes no value");
            if (L.throttle)
                return fail(why, whylen, it, "vanish cannot share a spec with throttle; separate them with ';'");
            vanish = 1;
            continue;
        }
        if (!val || !*val)
            return fail(why, whylen, it,
                        "expected KEY=VALUE (disk, throttle, latency, seek, rpm, qd, read-eio, pending, write-eio, "
                        "drop-writes, stall-writes, badmap, vanish)");
        if (KEY("throttle")) {
            if (L.has_rate)
                return fail(why, whylen, it, "throttle given twice in one spec");
            if (parse_rate(val, &L.rate, &msg))
                return fail(why, whylen, it, "%s", msg);
            L.has_rate = 1;
        } else if (KEY("latency")) {
            if (L.has_latency)
                return fail(why, whylen, it, "latency given twice in one spec");
            if (parse_time_usec(val, &L.latency_usec, &msg))
                return fail(why, whylen, it, "%s", msg);
            L.has_latency = 1;
        } else if (KEY("disk") || KEY("seek") || KEY("rpm") || KEY("qd")) {
            if (disk_item(&L, it, klen, val, why, whylen))
                return -EINVAL;
        } else if (KEY("read-eio") || KEY("pending") || KEY("write-eio") || KEY("drop-writes") ||
                   KEY("stall-writes")) {
            struct fault_rule r = {0};
            if (L.throttle)
                return fail(why, whylen, it, "fault rules cannot share a spec with throttle; separate them with ';'");
            if (parse_range(val, size, &r.start, &r.len, &msg)) {
                if (msg && strstr(msg, "past the member's end"))
                    return fail(why, whylen, it, "%s (%llu bytes)", msg, (unsigned long long)size);
                return fail(why, whylen, it, "%s", msg);
            }
            r.what = KEY("read-eio")    ? FAULT_READ
                     : KEY("pending")   ? FAULT_READ | FAULT_HEAL
                     : KEY("write-eio") ? FAULT_WRITE
                     : KEY("drop-writes") ? FAULT_DROP_WRITE
                                          : FAULT_STALL_WRITE;
            r.err = -EIO;
            if (apply) {
                int rc = 0;
                if (strcmp(top->ops->kind, "fault"))
                    rc = member_fault_wrap(top, &top);
                if (!rc)
                    *m = top;
                if (!rc)
                    rc = member_fault_add(top, &r);
                if (rc)
                    return rc;
            }
        } else if (KEY("badmap")) {
            if (L.throttle)
                return fail(why, whylen, it, "badmap cannot share a spec with throttle; separate them with ';'");
            struct ddrescue_map map = {0};
            int rc = load_badmap(val, size, &map, why, whylen);
            if (!rc && apply)
                rc = apply_badmap(m, &map);
            if (!rc)
                top = *m;
            ddrescue_free(&map);
            if (rc)
                return rc;
        } else {
            return fail(why, whylen, it,
                        "unknown key (use disk, throttle, latency, seek, rpm, qd, read-eio, pending, write-eio, "
                        "drop-writes, stall-writes, badmap, vanish; "
                        "or a spec of its own starting with powercut)");
        }
#undef KEY
    }
    if (!apply)
        return 0;
    int rc = 0;
    if (L.throttle) {
        /* the preset first, then every key given, wherever it stood */
        struct disk_model d = L.has_disk ? L.preset : (struct disk_model){.qd = 1};
        if (L.has_rate)
            d.bytes_per_sec = L.rate;
        if (L.has_latency)
            d.latency_usec = L.latency_usec;
        if (L.has_seek)
            d.seek_usec = L.seek_usec;
        if (L.has_rpm)
            d.rpm = L.rpm;
        if (L.has_qd)
            d.qd = L.qd;
        rc = member_disk_wrap(top, &d, &top);
        if (!rc)
            *m = top;
        return rc;
    }
    if ((L.has_latency || vanish) && strcmp(top->ops->kind, "fault")) {
        rc = member_fault_wrap(top, &top);
        if (rc)
            return rc;
        *m = top;
    }
    if (L.has_latency)
        rc = member_fault_latency(top, L.latency_usec);
    if (!rc && vanish)
        rc = member_fault_vanish(top);
    return rc;
}

static int run_all(struct member **m, const char *spec, int apply, char *why, size_t whylen)
{
    char *copy = strdup(spec);
    if (!copy)
        return -ENOMEM;
    int rc = 0, any = 0;
    char *save = NULL;
    for (char *s = strtok_r(copy, ";", &save); s && !rc; s = strtok_r(NULL, ";", &save)) {
        trim(&s);
        if (!*s)
            continue; /* "a;;b" and a trailing ';' are harmless */
        if (strlen(s) >= ITEM_MAX * 4)
            rc = fail(why, whylen, "...", "spec too long");
        else if (is_powercut_spec(s))
            rc = do_powercut(m, s, apply, why, whylen);
        else
            rc = do_spec(m, s, apply, why, whylen);
        any = 1;
    }
    if (!rc && !any)
        rc = fail(why, whylen, spec, "no layer given");
    free(copy);
    return rc;
}

int member_apply_spec(struct member **m, const char *spec, char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = 0;
    if (!m || !*m || !spec)
        return fail(why, whylen, spec ? spec : "(null)", "no member or no spec");
    /* Check everything first: a bad spec leaves *m exactly as it was. */
    int rc = run_all(m, spec, 0, why, whylen);
    if (rc)
        return rc;
    rc = run_all(m, spec, 1, why, whylen);
    if (rc && why && whylen && !why[0])
        snprintf(why, whylen, "applying layer spec '%s': %s", spec, strerror(-rc));
    return rc;
}

int member_layer_add(const char *arg, const char *const *names, int n, char *texts, size_t textlen, char *why,
                     size_t whylen)
{
    /* The longest member name followed by ':' wins: NBD URIs contain ':'
     * themselves, so the first ':' does not end the name. */
    int target = -1;
    size_t best = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (len > best && !strncmp(arg, names[i], len) && arg[len] == ':') {
            target = i;
            best = len;
        }
    }
    const char *colon = strchr(arg, ':');
    if (colon && target < 0) {
        uraid_why(why, whylen, "'%.*s' is not one of the members given", (int)(colon - arg), arg);
        return -ENOENT;
    }
    const char *spec = target >= 0 ? arg + best + 1 : arg;
    for (int i = 0; i < n; i++) {
        if (target >= 0 && i != target)
            continue;
        char *t = texts + (size_t)i * textlen;
        size_t used = strlen(t);
        int w = snprintf(t + used, textlen - used, "%s%s", used ? ";" : "", spec);
        if (w < 0 || (size_t)w >= textlen - used) {
            t[used] = 0;
            uraid_why(why, whylen, "layer specs for member %s are too long", names[i]);
            return -E2BIG;
        }
    }
    return 0;
}

/* ---- options after an NBD member's URI: "URI,timeout=5s" ----
 * They ride on the member's name so that every verb (create, serve, add,
 * the control socket) and mdadm.conf-like lists carry them without a flag
 * of their own, and a member re-added by the same name gets the same ones.
 * Options are taken from the end: each trailing ",KEY=VALUE" whose KEY is a
 * lowercase word is an option (an unknown one is refused, so a typo is not
 * sent to the server as part of the URI); the rest is the URI. */
static int nbd_option(const char *item, struct nbd_member_opts *o, unsigned *seen, char *why, size_t whylen)
{
    const char *eq = strchr(item, '=');
    size_t klen = (size_t)(eq - item);
    const char *val = eq + 1, *msg = NULL;
    if (klen == 7 && !strncmp(item, "timeout", 7)) {
        uint32_t usec;
        if (*seen & 1)
            msg = "given twice";
        *seen |= 1;
        if (msg || parse_time_usec(val, &usec, &msg)) {
            uraid_why(why, whylen, "bad NBD member option '%s': %s", item, msg);
            return -EINVAL;
        }
        o->timeout_ms = usec && usec < 1000 ? 1 : usec / 1000;
        return 0;
    }
    uraid_why(why, whylen, "unknown NBD member option '%.*s' (the options after a URI: timeout=TIME)", (int)klen,
              item);
    return -EINVAL;
}

/* "KEY=..." with KEY one or more of [a-z-]: the shape of an option. */
static int looks_like_option(const char *s)
{
    const char *p = s;
    while ((*p >= 'a' && *p <= 'z') || *p == '-')
        p++;
    return p > s && *p == '=';
}

int member_nbd_options(const char *name, char *uri, size_t urilen, struct nbd_member_opts *o, char *why,
                       size_t whylen)
{
    uraid_why(why, whylen, "%s", "");
    *o = (struct nbd_member_opts){.timeout_ms = NBD_DEFAULT_TIMEOUT_MS};
    size_t end = strlen(name);
    unsigned seen = 0;
    for (;;) {
        const char *comma = NULL;
        for (const char *p = name; p < name + end; p++)
            if (*p == ',')
                comma = p;
        if (!comma || !looks_like_option(comma + 1))
            break;
        char item[ITEM_MAX];
        size_t n = (size_t)(name + end - comma - 1);
        if (n >= sizeof item) {
            uraid_why(why, whylen, "an NBD member option is too long (%zu bytes)", n);
            return -EINVAL;
        }
        memcpy(item, comma + 1, n);
        item[n] = 0;
        int rc = nbd_option(item, o, &seen, why, whylen);
        if (rc)
            return rc;
        end = (size_t)(comma - name);
    }
    if (end >= urilen) {
        uraid_why(why, whylen, "the URI is too long (%zu bytes)", end);
        return -E2BIG;
    }
    memcpy(uri, name, end);
    uri[end] = 0;
    return 0;
}
