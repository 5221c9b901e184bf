#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct cli_globals cli;

void cli_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "uraid%s%s: ", verb ? " " : "", verb ? verb : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_parse_size(const char *text, uint64_t *bytes)
{
    if (!text || !isdigit((unsigned char)*text))
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno)
        return -EINVAL;
    int shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 0: break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: return -EINVAL;
    }
    if (*end && end[1] && !(toupper((unsigned char)end[1]) == 'B' && !end[2]) &&
        !(toupper((unsigned char)end[1]) == 'I' && toupper((unsigned char)end[2]) == 'B' && !end[3]))
        return -EINVAL;
    if (shift && v > (~0ull >> shift))
        return -EINVAL;
    *bytes = (uint64_t)v << shift;
    return 0;
}

const char *cli_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "KMGT";
    int u = -1;
    uint64_t v = bytes;
    while (v >= 1024 && v % 1024 == 0 && u < 3) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%llu", (unsigned long long)v);
    else
        snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u]);
    return buf;
}

int cli_setup_parity(const char *verb)
{
    int rc = cli.parity ? uraid_parity_force(cli.parity) : uraid_parity_init();
    if (rc == -ENOENT) {
        const char *name = cli.parity ? cli.parity : getenv("URAID_PARITY");
        cli_error(verb, "unknown parity routine '%s' (see 'uraid selftest' for the list)", name ? name : "");
    } else if (rc == -ENOTSUP) {
        const char *name = cli.parity ? cli.parity : getenv("URAID_PARITY");
        cli_error(verb, "parity routine '%s' cannot run on this CPU (see 'uraid selftest')", name ? name : "");
    } else if (rc) {
        cli_error(verb, "parity engine failed to start: %s", uraid_strerror(rc));
    }
    return rc ? 1 : 0;
}

int cli_parse_speed(const char *verb, const char *text, uint64_t *kib)
{
    uint64_t v;
    const char *last = text && *text ? text + strlen(text) - 1 : "";
    int plain = *last >= '0' && *last <= '9';
    if (!text || cli_parse_size(text, &v) || v == 0 || (!plain && v < 1024)) {
        cli_error(verb, "bad speed limit '%s': KiB/s per member like md's sync_speed_max (150000), or bytes "
                        "with a suffix (150M)",
                  text ? text : "");
        return -1;
    }
    *kib = plain ? v : v / 1024;
    return 0;
}
