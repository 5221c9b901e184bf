/* libFuzzer target for the uraid.conf parser (lib/conf/conf.c). Properties:
 *  - uraid_conf_parse never crashes or reads past the input on any bytes
 *    (the input is copied into a buffer of exactly its size, so ASan sees
 *    any read past its end), and a refusal always comes with a reason:
 *    one NUL-terminated line that starts with "line N: ";
 *  - on success every string points into the arena and is terminated, the
 *    counts are inside their limits, and parsing the same bytes again
 *    gives the same result (the parser keeps no state);
 *  - uraid_conf_find and uraid_conf_parse_uuid survive what was parsed.
 * Built and run by tests/fuzz/run.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uraid_conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const struct uraid_conf *c, const char *s)
{
    if (!s)
        return;
    if (s < c->arena || s >= c->arena + c->arena_used)
        abort();
    if (!memchr(s, 0, (size_t)(c->arena + c->arena_used - s)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct uraid_conf a, b;
    char why[300], why2[300];
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    memset(why, 0x55, sizeof why);
    int rc = uraid_conf_parse(text, size, &a, why, sizeof why);
    if (rc) {
        if (!memchr(why, 0, sizeof why) || strncmp(why, "line ", 5) || strchr(why, '\n'))
            abort();
    } else {
        if (a.ndevices > URAID_CONF_MAX_DEVICES || a.narrays > URAID_CONF_MAX_ARRAYS || a.arena_used > URAID_CONF_ARENA)
            abort();
        for (int i = 0; i < a.ndevices; i++)
            check_str(&a, a.devices[i]);
        for (int i = 0; i < a.narrays; i++) {
            const struct uraid_conf_array *x = &a.array[i];
            if (x->ndevices > URAID_CONF_MAX_ARRAY_DEVICES || (!x->has_uuid && !x->name))
                abort();
            check_str(&a, x->devname);
            check_str(&a, x->name);
            for (int j = 0; j < x->ndevices; j++)
                check_str(&a, x->devices[j]);
            if (uraid_conf_find(&a, x->name, x->has_uuid ? x->uuid : NULL) == NULL)
                abort(); /* a line is found by what it says */
        }
        check_str(&a, a.mailaddr);
        check_str(&a, a.mailfrom);
        check_str(&a, a.program);
    }
    int rc2 = uraid_conf_parse(text, size, &b, why2, sizeof why2);
    if (rc2 != rc || (rc == 0 && (a.narrays != b.narrays || a.ndevices != b.ndevices || a.arena_used != b.arena_used ||
                                  memcmp(a.arena, b.arena, a.arena_used))))
        abort();
    if (size < 200) {
        uint8_t u[16];
        char *z = malloc(size + 1);
        if (z) {
            memcpy(z, data, size);
            z[size] = 0;
            (void)uraid_conf_parse_uuid(z, u);
            (void)uraid_conf_parse_level(z);
            free(z);
        }
    }
    free(text);
    return 0;
}
