/* Explicit little-endian loads and stores for the on-disk formats in
 * lib/meta. Byte by byte on purpose: the formats never depend on the host's
 * byte order or on the alignment of a field (compilers turn these into
 * single loads on little-endian hosts). */
#ifndef URAID_META_LE_H
#define URAID_META_LE_H

#include <stdint.h>

static inline uint16_t le16_get(const uint8_t *p) { return (uint16_t)(p[0] | (uint16_t)p[1] << 8); }

static inline uint32_t le32_get(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le64_get(const uint8_t *p) { return le32_get(p) | (uint64_t)le32_get(p + 4) << 32; }

static inline void le16_put(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void le32_put(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void le64_put(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#endif
