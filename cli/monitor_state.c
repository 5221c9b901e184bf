/* uraid monitor's events from two status answers (cli/monitor.h). The
 * names, the argument order and when each is said follow mdadm --monitor:
 * DegradedArray, SparesMissing and TestMessage only when an array is first
 * seen; RebuildNN at fixed steps from 0; Fail for an active member that
 * became faulty (or vanished), FailSpare for a spare or rebuilding one.
 * Within one poll: progress first, then members, then the start or end of
 * the background job, the order in which the array itself goes through
 * them (a rebuilt spare turns active just before its job ends; a failed
 * member comes before the rebuild that replaces it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor.h"

/* "  Slot  DevNum  State          Events  Corrected  Path" rows. */
static int parse_member(const char *line, struct mon_member *m)
{
    static const struct {
        const char *text;
        enum mon_member_state st;
    } states[] = {{"active sync", MS_SYNC}, {"removed", MS_REMOVED},     {"faulty", MS_FAULTY},
                  {"spare rebuilding", MS_REBUILDING}, {"spare", MS_SPARE}, {"stale", MS_STALE}};
    char slot[16], dev[16];
    int used = 0;
    if (sscanf(line, " %15s %15s %n", slot, dev, &used) != 2 || !used)
        return -EINVAL;
    const char *r = line + used;
    size_t i = 0;
    while (i < sizeof states / sizeof states[0] && strncmp(r, states[i].text, strlen(states[i].text)))
        i++;
    if (i == sizeof states / sizeof states[0])
        return -EINVAL;
    r += strlen(states[i].text);
    unsigned long long events;
    unsigned corrected;
    int n = 0;
    if (sscanf(r, " %llu %u %n", &events, &corrected, &n) != 2 || !n)
        return -EINVAL;
    r += n;
    size_t len = strcspn(r, "\n");
    if (len >= sizeof m->path)
        len = sizeof m->path - 1;
    memcpy(m->path, r, len);
    m->path[len] = 0;
    if (!strcmp(m->path, "-"))
        m->path[0] = 0;
    m->slot = slot[0] == '-' ? -1 : atoi(slot);
    m->state = states[i].st;
    return 0;
}

/* The last line: mdstat's progress bar while a job runs, else what the
 * last one ended with. */
static void parse_background(const char *line, struct mon_state *s)
{
    if (line[0] == '[') {
        const char *eq = strstr(line, " = ");
        s->running = 1;
        s->percent = eq ? (int)strtod(eq + 3, NULL) : 0;
        return;
    }
    const char *mm = strstr(line, "mismatch_cnt ");
    if (mm)
        s->mismatches = strtoull(mm + 13, NULL, 10);
}

static void field(const char *line, const char *key, char *out, size_t len)
{
    const char *c = strstr(line, key);
    if (!c)
        return;
    c += strlen(key);
    size_t n = strcspn(c, "\n");
    if (n >= len)
        n = len - 1;
    memcpy(out, c, n);
    out[n] = 0;
}

int mon_parse_status(const char *text, struct mon_state *s)
{
    memset(s, 0, sizeof *s);
    s->level = -100;
    if (strncmp(text, "uraid: ", 7))
        return -EINVAL;
    int table = 0, have_uuid = 0;
    const char *last = text;
    for (const char *l = text; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] == '\n')) {
        if (l[0] != '\n' && l[0])
            last = l;
        if (table) {
            if (l[0] == '\n' || !l[0]) {
                table = 0;
            } else if (s->nmembers < URAID_MAX_MEMBERS && parse_member(l, &s->m[s->nmembers]) == 0) {
                const struct mon_member *m = &s->m[s->nmembers++];
                s->spares += m->state == MS_SPARE;
                s->degraded -= m->slot >= 0 && m->state == MS_SYNC;
            }
            continue;
        }
        if (!strncmp(l, "        Name : ", 15))
            field(l, "Name : ", s->name, sizeof s->name);
        else if (!strncmp(l, "        UUID : ", 15)) {
            field(l, "UUID : ", s->uuid, sizeof s->uuid);
            have_uuid = 1;
        } else if (!strncmp(l, "  Raid Level : raid", 19))
            s->level = atoi(l + 19);
        else if (!strncmp(l, "Raid Devices : ", 15)) {
            s->raid_devices = atoi(l + 15);
            s->degraded += s->raid_devices;
        } else if (!strncmp(l, "  Slot  DevNum  State", 21))
            table = 1;
    }
    if (!have_uuid || !s->raid_devices)
        return -EINVAL;
    parse_background(last, s);
    return 0;
}

/* ---- events ------------------------------------------------------------------- */

static const struct mon_member *find(const struct mon_state *s, const char *path)
{
    for (int i = 0; path[0] && i < s->nmembers; i++)
        if (!strcmp(s->m[i].path, path))
            return &s->m[i];
    return NULL;
}

static void say(const struct mon_array *a, const struct mon_events *ev, const char *event, const char *member)
{
    ev->report(ev->ctx, a, event, member);
}

static void first_sight(struct mon_array *a, const struct mon_state *cur, const struct mon_events *ev)
{
    if (!ev->first_pass)
        say(a, ev, "NewArray", NULL);
    if (ev->test)
        say(a, ev, "TestMessage", NULL);
    if (cur->degraded > 0)
        say(a, ev, "DegradedArray", NULL);
    if (ev->spares_wanted >= 0 && cur->spares < ev->spares_wanted)
        say(a, ev, "SparesMissing", NULL);
    if (cur->running)
        say(a, ev, "RebuildStarted", NULL);
    a->last_step = cur->running ? cur->percent / ev->increment * ev->increment : 0;
}

static void members_changed(const struct mon_array *a, const struct mon_state *prev, const struct mon_state *cur,
                            const struct mon_events *ev)
{
    for (int i = 0; i < cur->nmembers; i++) {
        const struct mon_member *c = &cur->m[i], *p = find(prev, c->path);
        if (!p)
            continue;
        if (c->state == MS_FAULTY && p->state == MS_SYNC)
            say(a, ev, "Fail", c->path);
        else if (c->state == MS_FAULTY && (p->state == MS_SPARE || p->state == MS_REBUILDING))
            say(a, ev, "FailSpare", c->path);
        else if (c->state == MS_SYNC && (p->state == MS_SPARE || p->state == MS_REBUILDING))
            say(a, ev, "SpareActive", c->path);
    }
    /* failed and removed between two looks */
    for (int i = 0; i < prev->nmembers; i++)
        if (prev->m[i].state == MS_SYNC && prev->m[i].slot >= 0 && !find(cur, prev->m[i].path))
            say(a, ev, "Fail", prev->m[i].path);
}

void mon_update(struct mon_array *a, const struct mon_state *cur, const struct mon_events *ev)
{
    if (!cur) {
        if (a->present)
            say(a, ev, "DeviceDisappeared", NULL);
        a->present = 0;
        return;
    }
    snprintf(a->uuid, sizeof a->uuid, "%s", cur->uuid);
    snprintf(a->label, sizeof a->label, "%s", cur->name[0] ? cur->name : cur->uuid);
    const struct mon_state *prev = &a->st;
    if (!a->present) {
        first_sight(a, cur, ev);
    } else {
        int inc = ev->increment;
        if (prev->running && cur->running) {
            /* mdadm's steps: the last one passed, never 100 (that is RebuildFinished) */
            int step = cur->percent / inc * inc;
            if (step >= 100)
                step = 99 / inc * inc;
            if (step > a->last_step) {
                char e[24];
                snprintf(e, sizeof e, "Rebuild%02d", step);
                say(a, ev, e, NULL);
                a->last_step = step;
            }
        }
        members_changed(a, prev, cur, ev);
        if (!prev->running && cur->running) {
            say(a, ev, "RebuildStarted", NULL);
            a->last_step = cur->percent / inc * inc;
        } else if (prev->running && !cur->running) {
            char cnt[80];
            snprintf(cnt, sizeof cnt, " mismatches found: %llu (on raid level %d)", (unsigned long long)cur->mismatches,
                     cur->level);
            say(a, ev, "RebuildFinished", cur->mismatches ? cnt : NULL);
        }
    }
    a->st = *cur;
    a->present = 1;
}
