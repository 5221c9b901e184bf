/* The uraid.conf parser (lib/conf/conf.c) on the syntax mdadm.conf(5)
 * describes: continuation lines, comments, quotes, keyword abbreviations,
 * UUID spellings, ARRAY tags, and one clear line (with its line number)
 * for every kind of bad input. */
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "uraid_conf.h"

static struct uraid_conf conf;
static char why[400];

static int parse(const char *text) { return uraid_conf_parse(text, strlen(text), &conf, why, sizeof why); }

static void test_full_file(void)
{
    harness_begin("a file with every keyword, continuations, comments and quotes");
    const char *text = "# uraid.conf\n"
                       "DEVICE /srv/raid/*.img nbd+unix:///d0?socket=/run/d0.sock\n"
                       "dev   '/srv/other dir/*.img'   # a quoted blank\n"
                       "\n"
                       "ARRAY /dev/md/data metadata=1.2 UUID=3aaa0122:29827cfa:5331ad66:ca767371\n"
                       "# a comment between does not end the ARRAY line\n"
                       "   name=host:data level=raid5 num-devices=4 spares=1\n"
                       "\tdevices=/srv/raid/a.img,/srv/raid/b*.img\n"
                       "ARRAY name=scratch\n"
                       "MAILADDR root@localhost\n"
                       "MAILFROM uraid monitor <uraid@host>\n"
                       "PROG /usr/local/sbin/raid-alert\n"
                       "MONITORDELAY 30\n"
                       "CREATE owner=root group=disk mode=0660 auto=yes\n"
                       "HOMEHOST <system>\n";
    int rc = parse(text);
    CHECK(rc == 0, "rc %d: %s", rc, why);
    CHECK(conf.ndevices == 3, "%d device words", conf.ndevices);
    if (conf.ndevices == 3) {
        CHECK(!strcmp(conf.devices[0], "/srv/raid/*.img"));
        CHECK(!strcmp(conf.devices[1], "nbd+unix:///d0?socket=/run/d0.sock"));
        CHECK(!strcmp(conf.devices[2], "/srv/other dir/*.img"), "'%s'", conf.devices[2]);
    }
    CHECK(conf.narrays == 2, "%d arrays", conf.narrays);
    const struct uraid_conf_array *a = &conf.array[0];
    static const uint8_t u[16] = {0x3a, 0xaa, 0x01, 0x22, 0x29, 0x82, 0x7c, 0xfa,
                                  0x53, 0x31, 0xad, 0x66, 0xca, 0x76, 0x73, 0x71};
    CHECK(a->line == 5 && a->has_uuid && !memcmp(a->uuid, u, 16));
    CHECK(a->devname && !strcmp(a->devname, "/dev/md/data"));
    CHECK(a->name && !strcmp(a->name, "host:data"));
    CHECK(a->level == 5 && a->raid_devices == 4 && a->spares == 1, "level %d n %d spares %d", a->level,
          a->raid_devices, a->spares);
    CHECK(a->ndevices == 2 && !strcmp(a->devices[0], "/srv/raid/a.img") && !strcmp(a->devices[1], "/srv/raid/b*.img"));
    const struct uraid_conf_array *b = &conf.array[1];
    CHECK(b->line == 9 && !b->has_uuid && b->name && !strcmp(b->name, "scratch") && !b->devname);
    CHECK(b->level == -100 && b->raid_devices == 0 && b->spares == -1 && b->ndevices == 0);
    CHECK(conf.mailaddr && !strcmp(conf.mailaddr, "root@localhost"));
    CHECK(conf.mailfrom && !strcmp(conf.mailfrom, "uraid monitor <uraid@host>"));
    CHECK(conf.program && !strcmp(conf.program, "/usr/local/sbin/raid-alert"));
    CHECK(conf.monitor_delay == 30);

    CHECK(uraid_conf_find(&conf, "data", NULL) == a, "name without homehost");
    CHECK(uraid_conf_find(&conf, "host:data", NULL) == a);
    CHECK(uraid_conf_find(&conf, "otherhost:data", NULL) == NULL, "another homehost is another array");
    CHECK(uraid_conf_find(&conf, NULL, u) == a);
    uint8_t v[16];
    memcpy(v, u, 16);
    v[15] ^= 1;
    CHECK(uraid_conf_find(&conf, "data", v) == NULL, "the name matches but the UUID does not");
    CHECK(uraid_conf_find(&conf, "myhost:scratch", v) == b, "a line without UUID: the name decides");
    harness_end();
}

static void test_uuids(void)
{
    harness_begin("UUIDs as mdadm reads them");
    uint8_t u[16];
    CHECK(uraid_conf_parse_uuid("3aaa0122:29827cfa:5331ad66:ca767371", u) == 0);
    CHECK(uraid_conf_parse_uuid("3AAA0122-2982-7CFA-5331-AD66CA767371", u) == 0 && u[0] == 0x3a && u[15] == 0x71);
    CHECK(uraid_conf_parse_uuid("3aaa0122.29827cfa.5331ad66.ca767371", u) == 0);
    CHECK(uraid_conf_parse_uuid("3aaa0122:29827cfa:5331ad66:ca76737", u) == -EINVAL, "31 digits");
    CHECK(uraid_conf_parse_uuid("3aaa0122:29827cfa:5331ad66:ca7673711", u) == -EINVAL, "33 digits");
    CHECK(uraid_conf_parse_uuid("3aaa0122:29827cfa:5331ad66:ca76737g", u) == -EINVAL, "not hex");
    CHECK(uraid_conf_parse_uuid("", u) == -EINVAL);
    harness_end();
}

static void refused(const char *text, int err, const char *want)
{
    int rc = parse(text);
    CHECK(rc == err && strstr(why, want) && !strchr(why, '\n'), "'%s': rc %d, why '%s' (want '%s')", text, rc, why,
          want);
    CHECK(conf.narrays == 0 && conf.ndevices == 0 && !conf.program, "a refused file leaves nothing parsed");
}

static void test_refusals(void)
{
    harness_begin("bad input: one line naming the line and the problem");
    refused("FROB x\n", -EINVAL, "line 1: unknown keyword 'FROB'");
    refused("DE /dev/sda\n", -EINVAL, "unknown keyword 'DE'");
    refused("DEVICE /a\n  /b\n\nARRAY UUID=12\n", -EINVAL, "line 4: UUID '12' is not 32 hex digits");
    refused("ARRAY /dev/md0 level=raid5\n", -EINVAL, "line 1: ARRAY /dev/md0 names no array");
    refused("ARRAY name=a colour=blue\n", -EINVAL, "unknown ARRAY tag 'colour'");
    refused("ARRAY name=a name=b\n", -EINVAL, "name= is given twice");
    refused("ARRAY name=a level=raid7\n", -EINVAL, "level 'raid7'");
    refused("ARRAY name=a num-devices=0\n", -EINVAL, "num-devices '0'");
    refused("ARRAY name=a spares=x\n", -EINVAL, "spares 'x'");
    refused("ARRAY name=a devices=/a,,/b\n", -EINVAL, "empty entry");
    refused("ARRAY /dev/md0 name=a stray\n", -EINVAL, "'stray' on an ARRAY line is not a tag");
    refused("ARRAY name=abcdefghijklmnopqrstuvwxyz0123456\n", -EINVAL, "1 to 32 characters");
    refused("  name=a\nARRAY name=b\n", -EINVAL, "line 1: a continued line");
    refused("DEVICE '/a\n", -EINVAL, "line 1: the quote ' is not closed");
    refused("MAILADDR a@b c@d\n", -EINVAL, "MAILADDR takes one word, not 2");
    refused("PROGRAM /a\nPROGRAM /b\n", -EINVAL, "line 2: PROGRAM is given again (first on line 1)");
    refused("MONITORDELAY 0\n", -EINVAL, "MONITORDELAY '0'");
    int rc = uraid_conf_parse("DEVICE /a\nDEVICE a\0b\n", 21, &conf, why, sizeof why);
    CHECK(rc == -EINVAL && strstr(why, "line 2: a NUL byte") && conf.ndevices == 0, "rc %d %s", rc, why);
    harness_end();
}

static void test_edges(void)
{
    harness_begin("edges: empty file, no final newline, CRLF, limits");
    CHECK(parse("") == 0 && conf.narrays == 0);
    CHECK(uraid_conf_parse(NULL, 0, &conf, why, sizeof why) == 0);
    CHECK(parse("# nothing\n\n   \n") == 0);
    CHECK(parse("ARRAY name=x") == 0 && conf.narrays == 1, "no newline at the end: %s", why);
    CHECK(parse("ARRAY name=x\r\nDEVICE /a\r\n") == 0 && conf.ndevices == 1 && !strcmp(conf.devices[0], "/a"),
          "CRLF: %s", why);
    CHECK(parse("array name=x\nmai a@b\n") == 0 && conf.mailaddr && !strcmp(conf.mailaddr, "a@b"),
          "lower case, MAI is MAILADDR: %s", why);
    static char big[URAID_CONF_MAX_ARRAYS * 16 + 64];
    size_t o = 0;
    for (int i = 0; i <= URAID_CONF_MAX_ARRAYS; i++)
        o += (size_t)snprintf(big + o, sizeof big - o, "ARRAY name=a%d\n", i);
    int rc = parse(big);
    CHECK(rc == -E2BIG && strstr(why, "more than 64 ARRAY lines"), "rc %d %s", rc, why);
    CHECK(uraid_conf_parse_level("RAID6") == 6 && uraid_conf_parse_level("linear") == -1 &&
          uraid_conf_parse_level("mirror") == 1 && uraid_conf_parse_level("raid3") == -100);
    CHECK(uraid_conf_name_matches("data", "host:data") && uraid_conf_name_matches("host:data", "data") &&
          !uraid_conf_name_matches("a:data", "b:data") && !uraid_conf_name_matches("dat", "host:data"));
    harness_end();
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_conf");
    test_full_file();
    test_uuids();
    test_refusals();
    test_edges();
    return harness_finish();
}
