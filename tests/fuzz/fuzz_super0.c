/* libFuzzer target for the md 0.90 superblock (lib/meta/super0.c).
 * Properties:
 *  - md_sb0_decode never crashes on any 4 KiB (shorter inputs are padded
 *    with zeros) and always terminates its reason;
 *  - a superblock that decodes re-encodes to the very input bytes (0.90
 *    has no byte the decoder lets pass unchecked: reserved words must be 0);
 *  - through struct md_sb and back (md_sb0_to_sb, md_sb0_from_sb) it
 *    reaches a fixed point after one step: the table md's super_90_sync
 *    would write, which reads back to the same roles;
 *  - the input with a correct checksum patched in gets the same treatment,
 *    so the checks behind the checksum get fuzzed too.
 * Built and run by tests/fuzz/run.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meta/super0.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void through_sb(const struct md_sb0 *s, uint64_t at)
{
    static struct md_sb a, a2;
    static struct md_sb0 b, b2;
    static uint8_t e1[MD_SB0_BYTES], e2[MD_SB0_BYTES];
    char why[256];
    if (md_sb0_to_sb(s, at, &a, why, sizeof why) != 0 || md_sb0_from_sb(&a, &b, why, sizeof why) != 0)
        return;
    md_sb0_encode(&b, e1);
    if (md_sb0_decode(e1, &b2, why, sizeof why) != 0)
        abort();                /* what we write must read back */
    if (md_sb0_to_sb(&b2, at, &a2, why, sizeof why) != 0 || md_sb0_from_sb(&a2, &b2, why, sizeof why) != 0)
        abort();
    md_sb0_encode(&b2, e2);
    if (memcmp(e1, e2, sizeof e1) != 0)
        abort();
    if (memcmp(a2.dev_roles, a.dev_roles, sizeof a.dev_roles) && memcmp(a2.set_uuid, a.set_uuid, 16))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t in[MD_SB0_BYTES], enc[MD_SB0_BYTES];
    static struct md_sb0 s;
    char why[256];

    memset(in, 0, sizeof in);
    memcpy(in, data, size < sizeof in ? size : sizeof in);
    /* the member's data area ends at the superblock: vary it with the input */
    uint64_t at = size > MD_SB0_BYTES ? (uint64_t)data[MD_SB0_BYTES] << 16 : 8064;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            uint32_t c = md_sb0_checksum(in);
            for (int i = 0; i < 4; i++)
                in[152 + i] = (uint8_t)(c >> (8 * i));
        }
        memset(why, 0x55, sizeof why);
        int rc = md_sb0_decode(in, &s, why, sizeof why);
        if (rc != 0 && memchr(why, 0, sizeof why) == NULL)
            abort();
        if (rc != 0)
            continue;
        md_sb0_encode(&s, enc);
        if (memcmp(enc, in, sizeof in) != 0)
            abort();
        through_sb(&s, at);
    }
    return 0;
}
