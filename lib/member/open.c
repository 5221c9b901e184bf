/* Opening a member by name: the one place that decides which backend a
 * name means, so every verb (create, open, add, replace, examine, serve,
 * mount, bench) accepts the same kinds of member. (member_close and
 * member_zero, the same for every backend, stay in file.c.) */
#include <errno.h>

#include "log.h"
#include "member/member.h"

int member_open_why(const char *name, int readonly, struct member **out, char *why, size_t whylen)
{
    if (!name || !out) {
        uraid_why(why, whylen, "no member name");
        return -EINVAL;
    }
    if (member_is_nbd_uri(name))
        return member_open_nbd(name, readonly, out, why, whylen);
    int rc = member_open_file(name, readonly, out);
    if (rc)
        uraid_why(why, whylen, "%s", uraid_strerror(rc));
    return rc;
}

int member_open(const char *name, int readonly, struct member **out)
{
    return member_open_why(name, readonly, out, NULL, 0);
}
