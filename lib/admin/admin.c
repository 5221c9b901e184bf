/* The rest of include/uraid_admin.h: names, UUID text, --member-layer
 * arguments and members opened outside an array, each a thin wrapper that
 * keeps lib/'s internal headers away from the front-ends. */
#include <errno.h>
#include <stdlib.h>

#include "layout.h"
#include "log.h"
#include "member/member.h"
#include "meta/superblock.h"
#include "uraid_admin.h"

_Static_assert(URAID_UUID_TEXT == MD_UUID_TEXT, "one UUID text length");

const char *uraid_layout_name(int level, int layout) { return layout_name(level, layout); }

int uraid_layout_from_name(int level, const char *name) { return name ? layout_from_name(level, name) : -EINVAL; }

void uraid_uuid_text(const uint8_t uuid[16], char out[URAID_UUID_TEXT]) { md_uuid_text(uuid, out); }

int uraid_member_layer_add(const char *arg, const char *const *names, int n, char *texts, size_t textlen, char *why,
                           size_t whylen)
{
    return member_layer_add(arg, names, n, texts, textlen, why, whylen);
}

struct uraid_member {
    struct member *m;
};

int uraid_member_open(const char *name, int readonly, const char *layer_spec, struct uraid_member **out, char *why,
                      size_t whylen)
{
    struct uraid_member *u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
    char reason[300];
    int rc = member_open_why(name, readonly, &u->m, reason, sizeof reason);
    if (rc) {
        uraid_why(why, whylen, "member %s: cannot open: %s", name, reason);
        free(u);
        return rc;
    }
    if (layer_spec && layer_spec[0]) {
        rc = member_apply_spec(&u->m, layer_spec, reason, sizeof reason);
        if (rc) {
            uraid_why(why, whylen, "member %s: %s", name, reason);
            member_close(u->m);
            free(u);
            return rc;
        }
    }
    *out = u;
    return 0;
}

uint64_t uraid_member_size(const struct uraid_member *m) { return m->m->size; }

int uraid_member_read(struct uraid_member *m, void *buf, size_t len, uint64_t offset)
{
    if (len > m->m->size || offset > m->m->size - len)
        return -EINVAL;
    return member_read(m->m, buf, len, offset);
}

int uraid_member_write(struct uraid_member *m, const void *buf, size_t len, uint64_t offset)
{
    if (len > m->m->size || offset > m->m->size - len)
        return -EINVAL;
    return member_write(m->m, buf, len, offset);
}

void uraid_member_close(struct uraid_member *m)
{
    if (!m)
        return;
    member_close(m->m);
    free(m);
}
