/* The findings of the last check or repair as text, one line each: what the
 * control socket's "findings" returns and what `uraid check` prints. A line
 * names the member file and its sector (counted from the start of the
 * member, data_offset included) so it can be looked at with dd. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uraid_ctl.h"

static const char *what(const struct uraid_finding *f)
{
    switch (f->kind) {
    case URAID_FOUND_P: return "parity (P) block wrong";
    case URAID_FOUND_Q: return "Q block wrong";
    case URAID_FOUND_DATA: return "data block wrong";
    case URAID_FOUND_MULTI: return "more than one block disagrees (or the wrong one cannot be told)";
    case URAID_FOUND_UNREADABLE: return "unreadable: more blocks lost than the level survives";
    case URAID_FOUND_MIRROR: return "this mirror differs from the first";
    }
    return "?";
}

void uraid_finding_line(const struct uraid_finding *f, const char *path, uint64_t data_offset_sectors, int repair,
                        char *buf, size_t len)
{
    const char *how = f->repaired ? ", repaired"
                    : f->kind == URAID_FOUND_MULTI || f->kind == URAID_FOUND_UNREADABLE ? ", not repaired"
                    : repair ? ", NOT repaired (the rewrite failed)" : "";
    if (f->slot >= 0 && path && *path)
        snprintf(buf, len, "stripe %llu: member %s sector %llu (slot %d), %u sectors: %s%s",
                 (unsigned long long)f->stripe, path, (unsigned long long)(data_offset_sectors + f->member_sector),
                 f->slot, f->nsec, what(f), how);
    else
        snprintf(buf, len, "stripe %llu: member sectors %llu-%llu past data_offset: %s%s",
                 (unsigned long long)f->stripe, (unsigned long long)f->member_sector,
                 (unsigned long long)(f->member_sector + f->nsec - 1), what(f), how);
}

int uraid_findings_text(struct uraid_array *a, char *buf, size_t buflen)
{
    if (!buflen)
        return -ENOBUFS;
    buf[0] = 0;
    struct uraid_job_status st;
    uraid_job_status(a, &st);
    if (!st.nfindings)
        return 0;
    struct uraid_array_info *info = malloc(sizeof *info);
    struct uraid_finding *f = malloc(sizeof *f * st.nfindings);
    if (!info || !f) {
        free(info);
        free(f);
        return -ENOMEM;
    }
    size_t n = uraid_job_findings(a, f, st.nfindings);
    int rc = uraid_get_info(a, info);
    size_t used = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *path = NULL;
        uint64_t off = 0;
        for (int m = 0; m < info->nmembers; m++)
            if (info->member[m].slot == f[i].slot && f[i].slot >= 0) {
                path = info->member[m].path;
                off = info->member[m].data_offset_sectors;
                break;
            }
        char line[512];
        uraid_finding_line(&f[i], path, off, st.kind == URAID_JOB_REPAIR, line, sizeof line);
        size_t l = strlen(line);
        if (used + l + 2 > buflen) {
            rc = -ENOBUFS;
            break;
        }
        memcpy(buf + used, line, l);
        buf[used + l] = '\n';
        used += l + 1;
        buf[used] = 0;
    }
    free(info);
    free(f);
    return rc;
}
