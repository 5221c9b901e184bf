/* GNU ddrescue mapfile parser (format in ddrescue.h).
 *
 * Strict where a mistake would hide lost data: a block that goes backwards
 * or overlaps the previous one, an unknown status, a stray token, a number
 * with a sign or garbage after it are all errors naming the line, because
 * guessing what a damaged map meant could report bad sectors as good. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "member/ddrescue.h"

#define MAX_TOKENS 4 /* one more than a line may hold, to catch extra tokens */

struct parser {
    const char *name;
    unsigned line;
    char *why;
    size_t whylen;
    struct ddrescue_map map;
    size_t cap;
};

static int bad(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct parser *p, const char *fmt, ...)
{
    if (p->why && p->whylen) {
        char reason[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof reason, fmt, ap);
        va_end(ap);
        if (p->line)
            snprintf(p->why, p->whylen, "mapfile %s line %u: %s", p->name, p->line, reason);
        else
            snprintf(p->why, p->whylen, "mapfile %s: %s", p->name, reason);
    }
    return -EINVAL;
}

/* Adds [start, end) to the unreadable list, merging with the last range
 * when they touch (the blocks arrive in order, so only the last can). */
static int add_bad(struct parser *p, uint64_t start, uint64_t end)
{
    if (start >= end)
        return 0;
    struct ddrescue_map *m = &p->map;
    if (m->nbad) {
        struct ddrescue_range *last = &m->bad[m->nbad - 1];
        if (last->start + last->len == start) {
            last->len += end - start;
            return 0;
        }
    }
    if (m->nbad == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        struct ddrescue_range *n = realloc(m->bad, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        m->bad = n;
        p->cap = cap;
    }
    m->bad[m->nbad++] = (struct ddrescue_range){.start = start, .len = end - start};
    return 0;
}

/* A non-negative C-style integer filling the whole token; strtoull alone
 * would take a sign, leading blanks, or stop early at garbage. */
static int parse_number(const char *tok, uint64_t *v)
{
    if (!isdigit((unsigned char)tok[0]))
        return -1;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(tok, &end, 0);
    if (errno || *end)
        return -1;
    *v = x;
    return 0;
}

/* Splits one line (modifiable, NUL-terminated) into blank-separated tokens,
 * dropping a comment. Returns the count, at most MAX_TOKENS. */
static int tokenize(char *line, char *tok[MAX_TOKENS])
{
    int n = 0;
    char *s = line;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\v' || *s == '\f')
            s++;
        if (!*s || *s == '#') /* '#' here is at a line start or after a blank */
            return n;
        if (n == MAX_TOKENS)
            return n;
        tok[n++] = s;
        while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\v' && *s != '\f')
            s++;
        if (*s)
            *s++ = 0;
    }
}

static int single_char(const char *tok, const char *allowed)
{
    return tok[0] && !tok[1] && strchr(allowed, tok[0]);
}

static int status_line(struct parser *p, char **tok, int n)
{
    uint64_t v;
    if (n < 2 || n > 3)
        return bad(p, "expected the status line 'POSITION STATUS [PASS]', got %d fields", n);
    if (parse_number(tok[0], &v))
        return bad(p, "status line: '%.40s' is not a position (a number such as 0x1000)", tok[0]);
    if (!single_char(tok[1], "?*/-FG+"))
        return bad(p, "status line: '%.40s' is not a ddrescue status (one of ? * / - F G +)", tok[1]);
    if (n == 3 && (strspn(tok[2], "0123456789") != strlen(tok[2]) || parse_number(tok[2], &v) || v == 0))
        return bad(p, "status line: '%.40s' is not a pass number (a positive decimal)", tok[2]);
    return 0;
}

static int block_line(struct parser *p, char **tok, int n, uint64_t *cursor, uint64_t limit)
{
    uint64_t pos, size;
    if (n != 3)
        return bad(p, "expected a block 'POSITION SIZE STATUS', got %d fields", n);
    if (parse_number(tok[0], &pos))
        return bad(p, "'%.40s' is not a position (a number such as 0x1000)", tok[0]);
    if (parse_number(tok[1], &size))
        return bad(p, "'%.40s' is not a size (a number such as 0x200)", tok[1]);
    if (!single_char(tok[2], "?*/-+"))
        return bad(p, "block status '%.40s' is not one of + ? * / -", tok[2]);
    if (size == 0)
        return bad(p, "block at %s has size 0", tok[0]);
    if (size > UINT64_MAX - pos)
        return bad(p, "block at %s of size %s runs past 2^64 bytes", tok[0], tok[1]);
    if (pos < *cursor)
        return bad(p, "block at %s overlaps or comes before the previous one (which ends at 0x%llx); "
                      "blocks must be in ascending order",
                   tok[0], (unsigned long long)*cursor);
    uint64_t end = pos + size;
    uint64_t lo = *cursor, gap_end = pos, bad_end = tok[2][0] == '+' ? pos : end;
    if (limit) {
        lo = lo < limit ? lo : limit;
        gap_end = gap_end < limit ? gap_end : limit;
        bad_end = bad_end < limit ? bad_end : limit;
    }
    int rc = add_bad(p, lo, gap_end); /* a gap was never rescued */
    if (!rc && tok[2][0] != '+')
        rc = add_bad(p, gap_end, bad_end);
    *cursor = end;
    p->map.end = end;
    return rc;
}

int ddrescue_parse(const char *text, size_t len, const char *name, uint64_t size_bytes, struct ddrescue_map *out,
                   char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = 0;
    if (!out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    struct parser p = {.name = name ? name : "(unnamed)", .why = why, .whylen = whylen};
    if (!text)
        return bad(&p, "no text");
    char *buf = NULL;
    size_t bufcap = 0;
    int rc = 0, seen_status = 0;
    uint64_t cursor = 0;
    size_t at = 0;
    while (at < len && rc == 0) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t linelen = nl ? (size_t)(nl - (text + at)) : len - at;
        p.line++;
        if (memchr(text + at, 0, linelen)) {
            rc = bad(&p, "contains a NUL byte: not a ddrescue mapfile");
            break;
        }
        if (linelen + 1 > bufcap) {
            char *n = realloc(buf, linelen + 1);
            if (!n) {
                rc = -ENOMEM;
                break;
            }
            buf = n;
            bufcap = linelen + 1;
        }
        memcpy(buf, text + at, linelen);
        buf[linelen] = 0;
        at += linelen + (nl ? 1 : 0);
        char *tok[MAX_TOKENS];
        int n = tokenize(buf, tok);
        if (n == 0)
            continue;
        if (!seen_status) {
            rc = status_line(&p, tok, n);
            seen_status = 1;
        } else {
            rc = block_line(&p, tok, n, &cursor, size_bytes);
        }
    }
    free(buf);
    if (rc == 0 && !seen_status) {
        p.line = 0;
        rc = bad(&p, "no status line: empty, or only comments (is it a ddrescue mapfile?)");
    } else if (rc == 0 && !p.map.end) {
        p.line = 0;
        rc = bad(&p, "no data blocks after the status line: the map says nothing about the image");
    }
    if (rc == 0 && size_bytes && cursor < size_bytes)
        rc = add_bad(&p, cursor, size_bytes); /* the rescue never got this far */
    if (rc) {
        free(p.map.bad);
        return rc;
    }
    *out = p.map;
    return 0;
}

void ddrescue_free(struct ddrescue_map *m)
{
    if (!m)
        return;
    free(m->bad);
    memset(m, 0, sizeof *m);
}

uint64_t ddrescue_bad_bytes(const struct ddrescue_map *m)
{
    uint64_t sum = 0;
    for (size_t i = 0; m && i < m->nbad; i++)
        sum += m->bad[i].len;
    return sum;
}
