/* md's partial parity log (PPL, md-format.md 1.9; md_p.h, raid5-ppl.c):
 * the 4 KiB header with its entries, the checksums, and the geometry md's
 * recovery derives from an entry. Pure functions: no I/O. The run-time log
 * is lib/stripe/ppl.c; docs/FORMAT.md describes every byte.
 *
 * Header (little-endian): bytes 0..511 0xff; 512 signature (crc32c of the
 * array UUID); 516 zero padding; 520 generation; 528 entries_count; 532
 * checksum (crc32c of the 4096 bytes with this field 0); 536 up to 148
 * entries of 24 bytes: data_sector (array sector of the first modified
 * block), pp_size and data_size (bytes), parity_disk (raid slot), checksum
 * (crc32c of the entry's partial parity). The partial parity of the
 * entries follows the header, in entry order. "crc32c" is the standard
 * CRC-32C (what the kernel writes as ~crc32c_le(~0, ...)).
 *
 * uraid's one extension (docs/FORMAT.md "PPL"), in the reserved bytes md
 * fills with 0xff and never reads (its checksum covers them): when an
 * entry's partial parity also carries the new data of a modified block
 * whose member was missing (that block exists only in parity), bytes 0..7
 * hold PPL_FOLD_MAGIC and byte 8 + i the raid slot folded into entry i
 * (0xff: none), byte 156 + i a second one (RAID-6 missing two members,
 * both modified by the entry; 0xff: none). A header without a folded entry
 * is byte for byte md's. */
#ifndef URAID_META_PPL_H
#define URAID_META_PPL_H

#include <stddef.h>
#include <stdint.h>

#define PPL_HEADER_BYTES 4096u
#define PPL_HEADER_SECTORS 8u
#define PPL_RESERVED_BYTES 512u
#define PPL_MAX_ENTRIES 148u
#define PPL_ENTRY_BYTES 24u
#define PPL_FOLD_MAGIC "uraidPF1"
#define PPL_FOLD_AT 8u
#define PPL_FOLD2_AT (PPL_FOLD_AT + PPL_MAX_ENTRIES) /* RAID-6: a second folded slot per entry */

struct ppl_entry {
    uint64_t data_sector;  /* array sector (512-byte units for md's own metadata) */
    uint32_t pp_size;      /* bytes of partial parity; 0: every data block modified */
    uint32_t data_size;    /* bytes of modified data (all modified blocks together) */
    uint32_t parity_disk;  /* raid slot holding the stripe's parity (and this log) */
    uint32_t checksum;     /* crc32c of the partial parity (0 when pp_size is 0) */
};

struct ppl_header {
    uint32_t signature;
    uint64_t generation;
    uint32_t entries_count;
    uint32_t checksum;     /* decode: as stored (verified) */
    struct ppl_entry entry[PPL_MAX_ENTRIES];
    /* 1 + the raid slot of a missing member whose new data entry i's
     * partial parity carries (it was not written: parity holds it), 0:
     * none, as md means every entry */
    uint8_t folded[PPL_MAX_ENTRIES];
    uint8_t folded2[PPL_MAX_ENTRIES]; /* the same for a second block (RAID-6), 0: none */
};

/* The kernel's crc32c_le(crc, p, n): no inversion at either end. */
uint32_t ppl_crc32c_raw(uint32_t crc, const void *p, size_t n);
/* Standard CRC-32C of p[0..n): ~ppl_crc32c_raw(~0, p, n). */
static inline uint32_t ppl_crc32c(const void *p, size_t n) { return ~ppl_crc32c_raw(~0u, p, n); }

/* md's signature of an array: CRC-32C of its 16-byte set_uuid. */
static inline uint32_t ppl_signature(const uint8_t uuid[16]) { return ppl_crc32c(uuid, 16); }

/* Encodes h (entries_count <= PPL_MAX_ENTRIES) into out[4096] with a fresh
 * checksum; h->checksum is ignored. -EINVAL for too many entries. */
int ppl_header_encode(const struct ppl_header *h, uint8_t *out);

/* Decodes in[4096]: -EBADMSG for a bad checksum, -EINVAL for more than 148
 * entries or a non-0xff reserved area (not a header), with a reason. */
int ppl_header_decode(const uint8_t *in, struct ppl_header *h, char *why, size_t whylen);

/* What md's ppl_recover_entry makes of an entry on an array of k data
 * blocks per stripe and chunks of chunk_sectors: rows [0, strip_sectors)
 * from data_sector on, data index disks [0, data_disks) counted from the
 * first one (array sector first + row + d * chunk), each row's parity =
 * partial parity row ^ those blocks; array sectors at or past last take no
 * part. -EINVAL for an entry md could not have meant (sizes not whole
 * sectors, a data_size the blocks do not divide, a range past one stripe). */
struct ppl_entry_geom {
    uint64_t first, last;
    uint32_t data_disks, strip_sectors;
};
int ppl_entry_geom(const struct ppl_entry *e, uint32_t chunk_sectors, int k, struct ppl_entry_geom *g);

/* A write of data sectors [r0, r1) of one stripe (relative to its first
 * data sector, 0 <= r0 < r1 <= k * chunk) as md would log it: bands of rows
 * in which the same data indexes [d_lo, d_hi] are modified, at most 3
 * (rows above the first written sector of the first chunk, the rows of
 * every chunk between, the rows below the end of the last). Returns the
 * number of bands. */
struct ppl_band {
    uint32_t d_lo, d_hi;   /* data indexes, inclusive */
    uint32_t row, nrows;   /* rows (sectors within the chunk) */
};
int ppl_bands(uint32_t chunk_sectors, int k, uint64_t r0, uint64_t r1, struct ppl_band out[3]);

/* The entry for band b of stripe `stripe` (pp_size 0 when every data index
 * is modified), parity on raid slot parity_disk; checksum left 0. */
struct ppl_entry ppl_band_entry(const struct ppl_band *b, uint64_t stripe, uint32_t chunk_sectors, int k,
                                uint32_t parity_disk);

#endif
