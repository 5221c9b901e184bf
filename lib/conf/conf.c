/* uraid.conf parser (include/uraid_conf.h, docs/uraid.conf.5): the text is
 * cut into logical lines of words, and each line's keyword decides what
 * its words mean. Pure: no I/O, no globals, every string in conf->arena. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "uraid_conf.h"

#define MAX_WORDS 256 /* words of one logical line */

struct parser {
    struct uraid_conf *conf;
    char *why;
    size_t whylen;
    int line;                     /* physical line being read */
    int start;                    /* physical line the logical line began on */
    int nwords;
    const char *words[MAX_WORDS];
    int mailaddr_line, program_line, delay_line;
};

static int fail(struct parser *p, int err, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(struct parser *p, int err, int line, const char *fmt, ...)
{
    if (p->why && p->whylen) {
        int n = snprintf(p->why, p->whylen, "line %d: ", line);
        if (n >= 0 && (size_t)n < p->whylen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->why + n, p->whylen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return err;
}

/* Room for n more bytes in the arena, or NULL. */
static char *arena_take(struct uraid_conf *c, size_t n)
{
    if (n > sizeof c->arena - c->arena_used)
        return NULL;
    char *s = c->arena + c->arena_used;
    c->arena_used += n;
    return s;
}

static const char *arena_dup(struct uraid_conf *c, const char *s, size_t n)
{
    char *d = arena_take(c, n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* ---- words ---------------------------------------------------------------- */

/* The words of one physical line [s, e) appended to p->words. */
static int split_words(struct parser *p, const char *s, const char *e)
{
    while (s < e) {
        if (*s == ' ' || *s == '\t' || *s == '\r') {
            s++;
            continue;
        }
        if (*s == '#')
            return 0;
        if (p->nwords >= MAX_WORDS)
            return fail(p, -E2BIG, p->line, "more than %d words on one line", MAX_WORDS);
        /* the word is at most as long as its source text */
        char *w = arena_take(p->conf, (size_t)(e - s) + 1), *o = w;
        if (!w)
            return fail(p, -E2BIG, p->line, "the file's text passes %d bytes", URAID_CONF_ARENA);
        while (s < e && *s != ' ' && *s != '\t' && *s != '\r') {
            if (*s == '"' || *s == '\'') {
                const char *q = memchr(s + 1, *s, (size_t)(e - s - 1));
                if (!q)
                    return fail(p, -EINVAL, p->line, "the quote %c is not closed on this line", *s);
                memcpy(o, s + 1, (size_t)(q - s - 1));
                o += q - s - 1;
                s = q + 1;
            } else {
                *o++ = *s++;
            }
        }
        *o = 0;
        /* give back what the word did not use */
        p->conf->arena_used = (size_t)(o + 1 - p->conf->arena);
        p->words[p->nwords++] = w;
    }
    return 0;
}

/* ---- values --------------------------------------------------------------- */

int uraid_conf_parse_uuid(const char *text, uint8_t uuid[16])
{
    if (!text)
        return -EINVAL;
    uint8_t u[16] = {0};
    int digits = 0;
    for (const char *s = text; *s; s++) {
        int v;
        if (*s >= '0' && *s <= '9')
            v = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            v = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            v = *s - 'A' + 10;
        else if (*s == ':' || *s == '.' || *s == '-' || *s == ' ')
            continue;
        else
            return -EINVAL;
        if (digits >= 32)
            return -EINVAL;
        u[digits / 2] = (uint8_t)(u[digits / 2] | v << (digits % 2 ? 0 : 4));
        digits++;
    }
    if (digits != 32)
        return -EINVAL;
    memcpy(uuid, u, 16);
    return 0;
}

int uraid_conf_parse_level(const char *text)
{
    static const struct {
        const char *name;
        int level;
    } names[] = {{"linear", -1}, {"raid0", 0},  {"0", 0},        {"stripe", 0},     {"raid1", 1}, {"1", 1},
                 {"mirror", 1},  {"raid4", 4},  {"4", 4},        {"raid5", 5},      {"5", 5},     {"raid6", 6},
                 {"6", 6},       {"raid10", 10}, {"10", 10},     {"multipath", -4}, {"mp", -4},   {"faulty", -5}};
    for (size_t i = 0; text && i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(text, names[i].name))
            return names[i].level;
    return -100;
}

/* A whole decimal number in [lo, hi], or -1. */
static long parse_int(const char *s, long lo, long hi)
{
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno || *end || v < lo || v > hi ? -1 : v;
}

/* ---- ARRAY lines ---------------------------------------------------------- */

static int array_devices(struct parser *p, struct uraid_conf_array *a, const char *list)
{
    for (const char *s = list; *s;) {
        size_t n = strcspn(s, ",");
        if (n == 0)
            return fail(p, -EINVAL, p->start, "devices= has an empty entry ('%s')", list);
        if (a->ndevices >= URAID_CONF_MAX_ARRAY_DEVICES)
            return fail(p, -E2BIG, p->start, "devices= lists more than %d entries", URAID_CONF_MAX_ARRAY_DEVICES);
        const char *d = arena_dup(p->conf, s, n);
        if (!d)
            return fail(p, -E2BIG, p->start, "the file's text passes %d bytes", URAID_CONF_ARENA);
        a->devices[a->ndevices++] = d;
        s += n + (s[n] == ',');
    }
    return 0;
}

/* One key=value of an ARRAY line. */
static int array_tag(struct parser *p, struct uraid_conf_array *a, const char *w, unsigned *seen)
{
    static const char *const ignored[] = {"metadata", "super-minor", "auto", "bitmap", "spare-group",
                                          "container", "member"};
    static const char *const keys[] = {"uuid", "name", "devices", "level", "num-devices", "spares"};
    const char *eq = strchr(w, '=');
    size_t klen = (size_t)(eq - w);
    const char *v = eq + 1;
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
        if (strlen(ignored[i]) == klen && !strncasecmp(w, ignored[i], klen))
            return 0;
    size_t k = 0;
    while (k < sizeof keys / sizeof keys[0] && !(strlen(keys[k]) == klen && !strncasecmp(w, keys[k], klen)))
        k++;
    if (k == sizeof keys / sizeof keys[0])
        return fail(p, -EINVAL, p->start, "unknown ARRAY tag '%.*s' (uraid reads uuid=, name=, devices=, level=, "
                                          "num-devices=, spares=)", (int)klen, w);
    if (*seen & 1u << k)
        return fail(p, -EINVAL, p->start, "%s= is given twice on one ARRAY line", keys[k]);
    *seen |= 1u << k;
    long n;
    switch (k) {
    case 0:
        if (uraid_conf_parse_uuid(v, a->uuid))
            return fail(p, -EINVAL, p->start, "UUID '%s' is not 32 hex digits (like 3aaa0122:29827cfa:5331ad66:ca767371)", v);
        a->has_uuid = 1;
        return 0;
    case 1:
        if (!*v || strlen(v) > 32)
            return fail(p, -EINVAL, p->start, "name= must be 1 to 32 characters (md keeps 32), not '%s'", v);
        a->name = v;
        return 0;
    case 2:
        return array_devices(p, a, v);
    case 3:
        a->level = uraid_conf_parse_level(v);
        if (a->level == -100)
            return fail(p, -EINVAL, p->start, "level '%s' is not one of md's levels (raid0 ... raid10, linear)", v);
        return 0;
    case 4:
        if ((n = parse_int(v, 1, URAID_MAX_MEMBERS)) < 0)
            return fail(p, -EINVAL, p->start, "num-devices '%s' is not a number from 1 to %d", v, URAID_MAX_MEMBERS);
        a->raid_devices = (int)n;
        return 0;
    default:
        if ((n = parse_int(v, 0, URAID_MAX_MEMBERS)) < 0)
            return fail(p, -EINVAL, p->start, "spares '%s' is not a number from 0 to %d", v, URAID_MAX_MEMBERS);
        a->spares = (int)n;
        return 0;
    }
}

static int line_array(struct parser *p)
{
    struct uraid_conf *c = p->conf;
    if (c->narrays >= URAID_CONF_MAX_ARRAYS)
        return fail(p, -E2BIG, p->start, "more than %d ARRAY lines", URAID_CONF_MAX_ARRAYS);
    struct uraid_conf_array *a = &c->array[c->narrays];
    memset(a, 0, sizeof *a);
    a->line = p->start;
    a->level = -100;
    a->spares = -1;
    int i = 1;
    if (i < p->nwords && !strchr(p->words[i], '='))
        a->devname = p->words[i++];
    unsigned seen = 0;
    for (; i < p->nwords; i++) {
        const char *w = p->words[i];
        if (!strchr(w, '=') || w[0] == '=')
            return fail(p, -EINVAL, p->start, "'%s' on an ARRAY line is not a tag (give tags as KEY=VALUE)", w);
        int rc = array_tag(p, a, w, &seen);
        if (rc)
            return rc;
    }
    if (!a->has_uuid && !a->name)
        return fail(p, -EINVAL, p->start, "ARRAY%s%s names no array: give UUID= or name= (uraid examine --scan "
                                          "prints both)", a->devname ? " " : "", a->devname ? a->devname : "");
    c->narrays++;
    return 0;
}

/* ---- keywords ------------------------------------------------------------- */

enum kw { KW_DEVICE, KW_ARRAY, KW_MAILADDR, KW_MAILFROM, KW_PROGRAM, KW_MONITORDELAY, KW_IGNORED, KW_NONE };

static enum kw keyword(const char *w)
{
    /* mdadm's order, so that a short prefix means what it means to mdadm */
    static const struct {
        const char *name;
        enum kw kw;
    } kws[] = {{"DEVICE", KW_DEVICE},           {"ARRAY", KW_ARRAY},          {"MAILADDR", KW_MAILADDR},
               {"MAILFROM", KW_MAILFROM},       {"PROGRAM", KW_PROGRAM},      {"CREATE", KW_IGNORED},
               {"HOMEHOST", KW_IGNORED},        {"HOMECLUSTER", KW_IGNORED},  {"AUTO", KW_IGNORED},
               {"POLICY", KW_IGNORED},          {"PART-POLICY", KW_IGNORED},  {"SYSFS", KW_IGNORED},
               {"MONITORDELAY", KW_MONITORDELAY}, {"ENCRYPTION_NO_VERIFY", KW_IGNORED}};
    size_t n = strlen(w);
    if (n < 3)
        return KW_NONE;
    for (size_t i = 0; i < sizeof kws / sizeof kws[0]; i++)
        if (n <= strlen(kws[i].name) && !strncasecmp(w, kws[i].name, n))
            return kws[i].kw;
    return KW_NONE;
}

/* A keyword that takes one word, given once. */
static int one_word(struct parser *p, const char **dst, int *line_seen, const char *kw)
{
    if (p->nwords != 2)
        return fail(p, -EINVAL, p->start, "%s takes one word, not %d", kw, p->nwords - 1);
    if (*line_seen)
        return fail(p, -EINVAL, p->start, "%s is given again (first on line %d)", kw, *line_seen);
    *line_seen = p->start;
    *dst = p->words[1];
    return 0;
}

static int line_mailfrom(struct parser *p)
{
    size_t n = 0;
    for (int i = 1; i < p->nwords; i++)
        n += strlen(p->words[i]) + 1;
    if (n == 0)
        return fail(p, -EINVAL, p->start, "MAILFROM needs an address");
    char *s = arena_take(p->conf, n);
    if (!s)
        return fail(p, -E2BIG, p->start, "the file's text passes %d bytes", URAID_CONF_ARENA);
    s[0] = 0;
    for (int i = 1; i < p->nwords; i++) {
        if (i > 1)
            strcat(s, " ");
        strcat(s, p->words[i]);
    }
    p->conf->mailfrom = s;
    return 0;
}

static int end_line(struct parser *p)
{
    if (p->nwords == 0)
        return 0;
    struct uraid_conf *c = p->conf;
    int rc = 0;
    switch (keyword(p->words[0])) {
    case KW_DEVICE:
        for (int i = 1; i < p->nwords && !rc; i++) {
            if (c->ndevices >= URAID_CONF_MAX_DEVICES)
                rc = fail(p, -E2BIG, p->start, "DEVICE lines name more than %d devices", URAID_CONF_MAX_DEVICES);
            else
                c->devices[c->ndevices++] = p->words[i];
        }
        break;
    case KW_ARRAY: rc = line_array(p); break;
    case KW_MAILADDR: rc = one_word(p, &c->mailaddr, &p->mailaddr_line, "MAILADDR"); break;
    case KW_MAILFROM: rc = line_mailfrom(p); break;
    case KW_PROGRAM: rc = one_word(p, &c->program, &p->program_line, "PROGRAM"); break;
    case KW_MONITORDELAY: {
        const char *v = NULL;
        rc = one_word(p, &v, &p->delay_line, "MONITORDELAY");
        long d = rc ? 0 : parse_int(v, 1, 86400);
        if (!rc && d < 0)
            rc = fail(p, -EINVAL, p->start, "MONITORDELAY '%s' is not a number of seconds from 1 to 86400", v);
        if (!rc)
            c->monitor_delay = (int)d;
        break;
    }
    case KW_IGNORED: break;
    case KW_NONE:
        rc = fail(p, -EINVAL, p->start, "unknown keyword '%s' (uraid reads DEVICE, ARRAY, MAILADDR, MAILFROM, "
                                        "PROGRAM, MONITORDELAY)", p->words[0]);
        break;
    }
    p->nwords = 0;
    return rc;
}

int uraid_conf_parse(const char *text, size_t len, struct uraid_conf *conf, char *why, size_t whylen)
{
    if (!conf || (!text && len))
        return -EINVAL;
    memset(conf, 0, sizeof *conf);
    struct parser p = {.conf = conf, .why = why, .whylen = whylen};
    if (why && whylen)
        why[0] = 0;
    const char *s = text, *end = text + len;
    int rc = 0;
    while (!rc && s < end) {
        const char *e = memchr(s, '\n', (size_t)(end - s));
        if (!e)
            e = end;
        p.line++;
        if (memchr(s, 0, (size_t)(e - s)))
            rc = fail(&p, -EINVAL, p.line, "a NUL byte: this is not a text file");
        const char *f = s;
        while (!rc && f < e && (*f == ' ' || *f == '\t' || *f == '\r'))
            f++;
        if (rc || f == e || *f == '#') {
            /* blank or a comment: neither starts nor ends a logical line */
        } else if (f != s) {
            if (p.nwords == 0)
                rc = fail(&p, -EINVAL, p.line, "a continued line (it starts with a blank) with no keyword before it");
            else
                rc = split_words(&p, s, e);
        } else {
            rc = end_line(&p);
            p.start = p.line;
            if (!rc)
                rc = split_words(&p, s, e);
        }
        s = e + 1;
    }
    if (!rc)
        rc = end_line(&p);
    if (rc)
        memset(conf, 0, offsetof(struct uraid_conf, arena));
    return rc;
}

/* ---- lookups -------------------------------------------------------------- */

int uraid_conf_name_matches(const char *wanted, const char *sb_name)
{
    if (!wanted || !sb_name || !*wanted)
        return 0;
    if (!strcmp(wanted, sb_name))
        return 1;
    const char *ws = strchr(wanted, ':'), *ss = strchr(sb_name, ':');
    if (ss && !ws && !strcmp(ss + 1, wanted))
        return 1;
    return ws && !ss && !strcmp(ws + 1, sb_name);
}

const struct uraid_conf_array *uraid_conf_find(const struct uraid_conf *conf, const char *name, const uint8_t *uuid)
{
    for (int i = 0; conf && i < conf->narrays; i++) {
        const struct uraid_conf_array *a = &conf->array[i];
        if (a->has_uuid && uuid) {
            if (!memcmp(a->uuid, uuid, 16))
                return a;
            continue; /* both UUIDs known and different: not this line, whatever its name */
        }
        const char *n = a->name;
        if (!n && a->devname && !strncmp(a->devname, "/dev/md/", 8))
            n = a->devname + 8;
        if (n && name && (uraid_conf_name_matches(n, name) || uraid_conf_name_matches(name, n)))
            return a;
    }
    return NULL;
}
