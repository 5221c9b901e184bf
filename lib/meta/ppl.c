/* md's PPL header codec, checksums and entry geometry (ppl.h). */
#include "meta/ppl.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "meta/le.h"

enum { OFF_SIGNATURE = 512, OFF_PADDING = 516, OFF_GENERATION = 520, OFF_COUNT = 528, OFF_CHECKSUM = 532,
       OFF_ENTRIES = 536 };

/* ---- CRC-32C (Castagnoli, reflected polynomial 0x82f63b78) --------------------------- */

static uint32_t crc_table[256];
static int crc_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
#define STREAM 1024u                 /* bytes per stream of crc_sse42 */
static uint32_t shift_table[4][256]; /* crc_sse42: shift by STREAM zero bytes */

static uint32_t crc_soft(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n--)
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int j = 0; j < 8; j++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[i] = c;
    }
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2");
    /* shift by STREAM zero bytes of each byte of the register */
    static const uint8_t zeros[STREAM];
    for (int j = 0; j < 4; j++)
        for (uint32_t b = 0; b < 256; b++)
            shift_table[j][b] = crc_soft(b << (8 * j), zeros, STREAM);
#endif
}

#if defined(__x86_64__)
/* The partial parity of every logged write, and each 4 KiB header, is
 * checksummed on the write path. The SSE4.2 instruction takes 8 bytes a
 * step but waits 3 cycles for the previous one: three streams of
 * STREAM bytes run side by side, then combine (crc(A|B) = shift(crc(A),
 * |B|) ^ crc(0, B), the shift by STREAM zero bytes being a fixed linear
 * map, applied with 4 tables of 256 entries). */
__attribute__((target("sse4.2"))) static uint32_t crc_sse42_1(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}

static uint32_t shift_stream(uint32_t c)
{
    return shift_table[0][c & 0xff] ^ shift_table[1][(c >> 8) & 0xff] ^ shift_table[2][(c >> 16) & 0xff] ^
           shift_table[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n >= 3 * STREAM) {
        uint64_t a = crc, b = 0, c = 0;
        for (size_t i = 0; i < STREAM; i += 8) {
            uint64_t x, y, z;
            memcpy(&x, p + i, 8);
            memcpy(&y, p + STREAM + i, 8);
            memcpy(&z, p + 2 * STREAM + i, 8);
            a = __builtin_ia32_crc32di(a, x);
            b = __builtin_ia32_crc32di(b, y);
            c = __builtin_ia32_crc32di(c, z);
        }
        crc = shift_stream(shift_stream((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c;
        p += 3 * STREAM;
        n -= 3 * STREAM;
    }
    return crc_sse42_1(crc, p, n);
}
#endif

uint32_t ppl_crc32c_raw(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
#if defined(__x86_64__)
    if (crc_hw)
        return crc_sse42(crc, p, n);
#endif
    return crc_soft(crc, p, n);
}

/* ---- header ------------------------------------------------------------------------ */

int ppl_header_encode(const struct ppl_header *h, uint8_t *out)
{
    if (h->entries_count > PPL_MAX_ENTRIES)
        return -EINVAL;
    memset(out, 0, PPL_HEADER_BYTES);
    memset(out, 0xff, PPL_RESERVED_BYTES);
    int folds = 0;
    for (uint32_t i = 0; i < h->entries_count; i++)
        folds |= h->folded[i] != 0 || h->folded2[i] != 0;
    if (folds) {
        memcpy(out, PPL_FOLD_MAGIC, PPL_FOLD_AT);
        for (uint32_t i = 0; i < h->entries_count; i++)
        {
            out[PPL_FOLD_AT + i] = h->folded[i] ? (uint8_t)(h->folded[i] - 1) : 0xff;
            out[PPL_FOLD2_AT + i] = h->folded2[i] ? (uint8_t)(h->folded2[i] - 1) : 0xff;
        }
    }
    le32_put(out + OFF_SIGNATURE, h->signature);
    le64_put(out + OFF_GENERATION, h->generation);
    le32_put(out + OFF_COUNT, h->entries_count);
    for (uint32_t i = 0; i < h->entries_count; i++) {
        uint8_t *e = out + OFF_ENTRIES + i * PPL_ENTRY_BYTES;
        le64_put(e, h->entry[i].data_sector);
        le32_put(e + 8, h->entry[i].pp_size);
        le32_put(e + 12, h->entry[i].data_size);
        le32_put(e + 16, h->entry[i].parity_disk);
        le32_put(e + 20, h->entry[i].checksum);
    }
    le32_put(out + OFF_CHECKSUM, ppl_crc32c(out, PPL_HEADER_BYTES));
    return 0;
}

static void say(char *why, size_t whylen, const char *msg)
{
    if (why && whylen)
        snprintf(why, whylen, "%s", msg);
}

int ppl_header_decode(const uint8_t *in, struct ppl_header *h, char *why, size_t whylen)
{
    memset(h, 0, sizeof *h);
    uint8_t copy[PPL_HEADER_BYTES];
    memcpy(copy, in, PPL_HEADER_BYTES);
    h->checksum = le32_get(in + OFF_CHECKSUM);
    le32_put(copy + OFF_CHECKSUM, 0);
    if (ppl_crc32c(copy, PPL_HEADER_BYTES) != h->checksum) {
        say(why, whylen, "PPL header checksum does not match");
        return -EBADMSG;
    }
    h->signature = le32_get(in + OFF_SIGNATURE);
    h->generation = le64_get(in + OFF_GENERATION);
    h->entries_count = le32_get(in + OFF_COUNT);
    if (h->entries_count > PPL_MAX_ENTRIES) {
        say(why, whylen, "PPL header lists more than 148 entries");
        return -EINVAL;
    }
    for (uint32_t i = 0; i < h->entries_count; i++) {
        const uint8_t *e = in + OFF_ENTRIES + i * PPL_ENTRY_BYTES;
        h->entry[i] = (struct ppl_entry){
            .data_sector = le64_get(e), .pp_size = le32_get(e + 8), .data_size = le32_get(e + 12),
            .parity_disk = le32_get(e + 16), .checksum = le32_get(e + 20),
        };
        /* md's own headers (all 0xff) fold nothing */
        if (!memcmp(in, PPL_FOLD_MAGIC, PPL_FOLD_AT) && in[PPL_FOLD_AT + i] < 0xff)
            h->folded[i] = (uint8_t)(in[PPL_FOLD_AT + i] + 1);
        if (!memcmp(in, PPL_FOLD_MAGIC, PPL_FOLD_AT) && in[PPL_FOLD2_AT + i] < 0xff)
            h->folded2[i] = (uint8_t)(in[PPL_FOLD2_AT + i] + 1);
    }
    return 0;
}

/* ---- geometry ---------------------------------------------------------------------- */

int ppl_entry_geom(const struct ppl_entry *e, uint32_t c, int k, struct ppl_entry_geom *g)
{
    if (!c || k < 1 || e->pp_size % 512 || e->data_size % 512 || !e->data_size)
        return -EINVAL;
    uint32_t pp = e->pp_size / 512, data = e->data_size / 512;
    g->first = e->data_sector;
    if (pp < c) {
        if (pp) {
            if (data % pp)
                return -EINVAL;
            g->data_disks = data / pp;
            g->strip_sectors = pp;
        } else {
            if (data % (uint32_t)k)
                return -EINVAL;
            g->data_disks = (uint32_t)k;
            g->strip_sectors = data / (uint32_t)k;
        }
        g->last = g->first + (uint64_t)(g->data_disks - 1) * c + g->strip_sectors;
    } else {
        g->data_disks = (uint32_t)k;
        g->strip_sectors = c;
        g->last = g->first + data;
    }
    uint64_t row = g->first % c, d = (g->first / c) % (uint64_t)k;
    if (!g->data_disks || g->data_disks > (uint32_t)k || !g->strip_sectors || row + g->strip_sectors > c ||
        (pp < c && d + g->data_disks > (uint64_t)k) || (pp >= c && (row || d * c + data > (uint64_t)k * c)))
        return -EINVAL;
    return 0;
}

int ppl_bands(uint32_t c, int k, uint64_t r0, uint64_t r1, struct ppl_band out[3])
{
    uint32_t d0 = (uint32_t)(r0 / c), d1 = (uint32_t)((r1 - 1) / c);
    uint32_t o = (uint32_t)(r0 % c), e = (uint32_t)((r1 - 1) % c + 1);
    (void)k;
    if (d0 == d1) {
        out[0] = (struct ppl_band){.d_lo = d0, .d_hi = d0, .row = o, .nrows = e - o};
        return 1;
    }
    /* rows split where the first chunk starts being written (o) and the
     * last one stops (e) */
    uint32_t cut[4] = {0, o < e ? o : e, o < e ? e : o, c};
    int n = 0;
    for (int i = 0; i < 3; i++) {
        uint32_t x = cut[i], y = cut[i + 1];
        if (x >= y)
            continue;
        uint32_t lo = x < o ? d0 + 1 : d0, hi = x >= e ? d1 - 1 : d1;
        if (lo <= hi)
            out[n++] = (struct ppl_band){.d_lo = lo, .d_hi = hi, .row = x, .nrows = y - x};
    }
    return n;
}

struct ppl_entry ppl_band_entry(const struct ppl_band *b, uint64_t stripe, uint32_t c, int k, uint32_t parity_disk)
{
    uint32_t m = b->d_hi - b->d_lo + 1;
    return (struct ppl_entry){
        .data_sector = (stripe * (uint64_t)k + b->d_lo) * c + b->row,
        .pp_size = m == (uint32_t)k ? 0 : b->nrows * 512u,
        .data_size = m * b->nrows * 512u,
        .parity_disk = parity_disk,
    };
}
