/* libFuzzer target for the md metadata decoders (lib/meta). Properties:
 *  - md_sb_decode never crashes on any 4 KiB (shorter inputs are padded
 *    with zeros; the read position comes from the input's last byte);
 *  - a superblock that decodes re-encodes to bytes that decode to the same
 *    struct, and re-encoding that gives the same bytes (one fixed point);
 *  - the bad-block log and bitmap header decoders survive the same bytes,
 *    and a decoded bad-block list survives encode + decode unchanged.
 * Built and run by tests/fuzz/run.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/superblock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t in[MD_SB_BYTES], enc[MD_SB_BYTES], enc2[MD_SB_BYTES];
    static struct md_sb a, b;
    static struct md_bblist l, l2;
    char why[256];

    memset(in, 0, sizeof in);
    memcpy(in, data, size < sizeof in ? size : sizeof in);
    /* Mostly sector 8 (v1.2), sometimes 0 (v1.1) or a v1.0-like position. */
    uint64_t at = 8;
    if (size > MD_SB_BYTES)
        at = data[MD_SB_BYTES] % 3 == 0 ? 0 : data[MD_SB_BYTES] % 3 == 1 ? 8 : 1000000;

    /* Twice: as given, and with a correct checksum patched in, so the
     * checks behind the checksum get fuzzed too. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            uint32_t max_dev = (uint32_t)in[220] | (uint32_t)in[221] << 8 | (uint32_t)in[222] << 16 |
                               (uint32_t)in[223] << 24;
            if (max_dev > MD_SB_MAX_DEV)
                break;
            uint32_t c = md_sb_checksum(in, max_dev);
            for (int i = 0; i < 4; i++)
                in[216 + i] = (uint8_t)(c >> (8 * i));
        }
        memset(why, 0x55, sizeof why);
        int rc = md_sb_decode(in, at, &a, why, sizeof why);
        if (memchr(why, 0, sizeof why) == NULL && rc != 0)
            abort();                /* a reason is always terminated */
        if (rc != 0)
            continue;
        if (md_sb_encode(&a, enc) != 0)
            abort();
        if (md_sb_decode(enc, at, &b, why, sizeof why) != 0)
            abort();
        if (memcmp(&a, &b, sizeof a) != 0)
            abort();
        if (md_sb_encode(&b, enc2) != 0 || memcmp(enc, enc2, sizeof enc) != 0)
            abort();
        /* The informative bytes are the input's own. */
        if (memcmp(enc, in, md_sb_len(a.max_dev)) != 0)
            abort();
    }

    uint8_t shift = size ? data[0] % 11 : 0;
    if (md_bb_decode(in, sizeof in, shift, &l) == 0) {
        int n = md_bb_encode(&l, enc, sizeof enc);
        if (n >= 0) {
            if (md_bb_decode(enc, sizeof enc, shift, &l2) != 0)
                abort();
            if (l2.count != l.count || memcmp(l2.r, l.r, l.count * sizeof l.r[0]) != 0)
                abort();
        }
        if (l.count) {
            uint64_t fb, bl;
            if (md_bb_check(&l, l.r[0].start, 1, &fb, &bl) != 1 || fb != l.r[0].start || bl != 1)
                abort();
        }
    }

    struct md_bitmap_sb bm, bm2;
    if (md_bitmap_decode(in, &bm, why, sizeof why) == 0) {
        md_bitmap_encode(&bm, enc);
        if (memcmp(enc, in, MD_BITMAP_HEADER_BYTES) != 0)
            abort();
        if (md_bitmap_decode(enc, &bm2, why, sizeof why) != 0 || memcmp(&bm, &bm2, sizeof bm) != 0)
            abort();
        (void)md_bitmap_bits(&bm);
    }
    return 0;
}
