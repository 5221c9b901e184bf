/* uraid monitor's events (cli/monitor_state.c) from status texts in the
 * control socket's format (lib/ctl/status.c), for the changes a served
 * array cannot be brought to on purpose from outside (tests/e2e/monitor.sh
 * covers the rest with a real server): a rebuilding spare turning faulty
 * (FailSpare), an active member failed and removed between two looks
 * (Fail), progress jumping past several steps (mdadm reports the last
 * one only, never 100), a check ending with mismatches (RebuildFinished's
 * component), an array going away (DeviceDisappeared, once). The first
 * status text is a real one: uraid_status_text of an open array. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_fixture.h"
#include "harness.h"
#include "uraid_ctl.h"

#include "../../cli/monitor_state.c"

static char got[4096];

static void record(void *ctx, const struct mon_array *a, const char *event, const char *member)
{
    size_t n = strlen(got);
    snprintf(got + n, sizeof got - n, "%s %s%s%s\n", event, a->label, member ? " " : "", member ? member : "");
}

/* A status text like status.c's: rows "SLOT:STATE:PATH" joined by ';', the
 * background line last. */
static const char *status(const char *rows, const char *background)
{
    static char t[8192];
    int o = snprintf(t, sizeof t, "uraid: active raid5 [4/3] [UU_U]\n        Name : host:t\n        UUID : "
                                  "01234567:89abcdef:01234567:89abcdef\n  Raid Level : raid5\nRaid Devices : 4\n"
                                  "\n  Slot  DevNum  State          Events  Corrected  Path\n");
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", rows);
    for (char *r = strtok(copy, ";"); r; r = strtok(NULL, ";")) {
        char slot[8], state[32], path[64];
        if (sscanf(r, "%7[^:]:%31[^:]:%63s", slot, state, path) == 3)
            o += snprintf(t + o, sizeof t - (size_t)o, "  %4s  %6s  %-12s %8d  %9d  %s\n", slot, slot, state, 7, 0, path);
    }
    snprintf(t + o, sizeof t - (size_t)o, "\ncounters: member reads 0\nio engine: threads\n%s\n", background);
    return t;
}

static struct mon_array arr;
static struct mon_state st;

static void step(const char *text, int first_pass, const char *want, const char *what)
{
    got[0] = 0;
    struct mon_events ev = {.report = record, .increment = 20, .first_pass = first_pass, .spares_wanted = -1};
    if (text) {
        int rc = mon_parse_status(text, &st);
        CHECK(rc == 0, "%s: the status text parses", what);
    }
    mon_update(&arr, text ? &st : NULL, &ev);
    CHECK(!strcmp(got, want), "%s: got '%s', want '%s'", what, got, want);
}

static const char *healthy = "0:active sync:a;1:active sync:b;2:active sync:c;3:active sync:d";

static void test_real_status(void)
{
    harness_begin("a real status text parses: members, spares, the background line");
    struct fx f;
    static char text[65536];
    struct uraid_array *a = NULL;
    if (fx_create(&f, 5, 4, 65536, 8u << 20) == 0 && (a = fx_open(&f, NULL, 0, 0)) != NULL) {
        CHECK(uraid_status_text(a, text, sizeof text) == 0);
        CHECK(mon_parse_status(text, &st) == 0, "%s", text);
        CHECK(st.raid_devices == 4 && st.degraded == 0 && st.nmembers == 4 && st.level == 5 && !st.running);
        CHECK(st.m[2].slot == 2 && st.m[2].state == MS_SYNC && !strcmp(st.m[2].path, f.path[2]), "'%s'", st.m[2].path);
        CHECK(strlen(st.uuid) == 35);
        uraid_close(a);
    }
    fx_destroy(&f);
    CHECK(mon_parse_status("error: no\n", &st) != 0, "not a status text");
    harness_end();
}

static void test_events(void)
{
    harness_begin("FailSpare, Fail between looks, progress steps, mismatches, DeviceDisappeared");
    memset(&arr, 0, sizeof arr);
    step(status(healthy, "background: idle"), 1, "", "first look at a whole array: nothing");
    step(status("0:active sync:a;1:active sync:b;2:active sync:c;-:spare:e", "background: idle"), 0,
         "Fail host:t d\n", "d failed and was removed between two looks");
    step(status("0:active sync:a;1:active sync:b;2:active sync:c;3:spare rebuilding:e",
                "[=>..................]  recovery = 7.5% (1/2)"), 0, "RebuildStarted host:t\n", "rebuild starts");
    step(status("0:active sync:a;1:active sync:b;2:active sync:c;3:spare rebuilding:e",
                "[=========>..........]  recovery = 65.0% (1/2)"), 0, "Rebuild60 host:t\n",
         "7% -> 65%: only the last step passed");
    step(status("0:active sync:a;1:active sync:b;2:active sync:c;3:faulty:e",
                "[====================]  recovery = 100.0% (2/2)"), 0, "Rebuild80 host:t\nFailSpare host:t e\n",
         "the rebuilding spare fails at 100%: Rebuild80 (never 100), FailSpare");
    step(status("0:active sync:a;1:active sync:b;2:active sync:c;3:faulty:e", "background: recovery failed after 1.0s"),
         0, "RebuildFinished host:t\n", "the job ends");
    step(status("0:active sync:a;1:active sync:b;2:active sync:c;3:faulty:e",
                "[>...................]  check = 1.0% (1/2)"), 0, "RebuildStarted host:t\n", "a check starts");
    step(status("0:active sync:a;1:active sync:b;2:active sync:c;3:faulty:e",
                "background: check finished after 2.0s, mismatch_cnt 16, repaired 0 sectors"),
         0, "RebuildFinished host:t  mismatches found: 16 (on raid level 5)\n", "a check with mismatches ends");
    step(NULL, 0, "DeviceDisappeared host:t\n", "no answer");
    step(NULL, 0, "", "still no answer: said once");
    step(status(healthy, "background: idle"), 0, "NewArray host:t\n", "back: a new array");
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_monitor");
    test_real_status();
    test_events();
    return harness_finish();
}
