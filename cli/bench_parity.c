/* uraid bench parity: one row per operation, one column per implementation,
 * with a plain read and memcpy of the same buffers measured in the same run.
 *
 * Unit: GB/s of input bytes read by the operation per second of this
 * thread's CPU time (a busy neighbour on a shared machine then costs less
 * accuracy). gen_p, gen_pq: k data blocks; rmw (one slot): old data, new
 * data, P and Q; recov (two data blocks): k - 2 data blocks, P and Q.
 * Each figure is the median of RUNS runs of at least RUN_NS each.
 * "cache": one stripe reused; "dram": stripes rotate over a 1 GiB pool. */
#include <errno.h>
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cli.h"

#define RUNS 5
#define RUN_NS 4e6
#define POOL_BYTES (1ull << 30)

struct shape {
    int k;
    size_t chunk;
    int dram;
};

struct pool {
    uint8_t *mem;
    size_t bytes;
};

struct cursor {
    struct pool *pool;
    struct shape sh;
    size_t set_bytes; /* (k + 3) blocks: data, P, Q, one spare */
    size_t nsets, next;
};

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static uint8_t *next_set(struct cursor *c)
{
    if (!c->sh.dram)
        return c->pool->mem;
    uint8_t *p = c->pool->mem + c->next * c->set_bytes;
    c->next = (c->next + 1) % c->nsets;
    return p;
}

/* ---- reference figures: a plain read and memcpy of the same buffers ---- */

__attribute__((target("avx512f"))) static uint64_t read_avx512(const uint8_t *p, size_t len)
{
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    for (size_t i = 0; i < len; i += 256) {
        a = _mm512_xor_si512(a, _mm512_load_si512((const void *)(p + i)));
        b = _mm512_xor_si512(b, _mm512_load_si512((const void *)(p + i + 64)));
        c = _mm512_xor_si512(c, _mm512_load_si512((const void *)(p + i + 128)));
        d = _mm512_xor_si512(d, _mm512_load_si512((const void *)(p + i + 192)));
    }
    a = _mm512_xor_si512(_mm512_xor_si512(a, b), _mm512_xor_si512(c, d));
    return (uint64_t)_mm512_reduce_add_epi64(a);
}

__attribute__((target("avx2"))) static uint64_t read_avx2(const uint8_t *p, size_t len)
{
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i < len; i += 128) {
        a = _mm256_xor_si256(a, _mm256_load_si256((const void *)(p + i)));
        b = _mm256_xor_si256(b, _mm256_load_si256((const void *)(p + i + 32)));
        c = _mm256_xor_si256(c, _mm256_load_si256((const void *)(p + i + 64)));
        d = _mm256_xor_si256(d, _mm256_load_si256((const void *)(p + i + 96)));
    }
    a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
    return (uint64_t)_mm256_extract_epi64(a, 0) ^ (uint64_t)_mm256_extract_epi64(a, 2);
}

static uint64_t read_words(const uint8_t *p, size_t len)
{
    uint64_t x = 0;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        x ^= v;
    }
    return x;
}

static uint64_t (*pick_reader(void))(const uint8_t *, size_t)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return read_avx512;
    if (__builtin_cpu_supports("avx2"))
        return read_avx2;
    return read_words;
}

static volatile uint64_t sink;

enum ref_kind { REF_READ, REF_MEMCPY };

/* One call of the measured operation on the next stripe. impl < 0 means a
 * reference (plain read or memcpy) instead of a parity operation. */
static void one_call(struct cursor *c, int impl, int op, enum ref_kind ref,
                     uint64_t (*reader)(const uint8_t *, size_t))
{
    int k = c->sh.k;
    size_t len = c->sh.chunk;
    uint8_t *set = next_set(c);
    void *b[URAID_PARITY_MAX_K + 3];
    for (int i = 0; i < k + 3; i++)
        b[i] = set + (size_t)i * len;
    const void *const *data = (const void *const *)b;
    if (impl < 0 && ref == REF_READ) {
        uint64_t x = 0;
        for (int i = 0; i < k; i++)
            x ^= reader(b[i], len);
        sink = x;
    } else if (impl < 0) {
        /* copy the data blocks to as many blocks elsewhere */
        uint8_t *dst = c->sh.dram ? next_set(c) : set + (size_t)(k + 3) * len;
        for (int i = 0; i < k; i++)
            memcpy(dst + (size_t)i * len, b[i], len);
    } else if (op == URAID_OP_GEN_P) {
        uraid_gen_p_with(impl, k, len, data, b[k]);
    } else if (op == URAID_OP_GEN_PQ) {
        uraid_gen_pq_with(impl, k, len, data, b[k], b[k + 1]);
    } else if (op == URAID_OP_RMW) {
        int slot = k / 2;
        const void *old[1] = {b[slot]}, *neu[1] = {b[k + 2]};
        uraid_rmw_with(impl, 1, &slot, len, old, neu, b[k], b[k + 1]);
    } else {
        int lost[2] = {0, k - 1};
        uraid_recover_with(impl, k, len, b, 1, 2, lost);
    }
}

static double measure_once(struct cursor *c, int impl, int op, enum ref_kind ref,
                           uint64_t (*reader)(const uint8_t *, size_t))
{
    double bytes_per_call = op == URAID_OP_RMW && impl >= 0 ? 4.0 * c->sh.chunk : (double)c->sh.k * c->sh.chunk;
    /* Reading the clock costs about as much as a 4 KiB call: time batches of
     * calls that take ~50 us each instead of single calls. */
    long batch = 0;
    double t0 = cpu_ns();
    do {
        one_call(c, impl, op, ref, reader);
        batch++;
    } while (cpu_ns() - t0 < 5e4);
    long calls = 0;
    double start = cpu_ns(), elapsed;
    do {
        for (long i = 0; i < batch; i++)
            one_call(c, impl, op, ref, reader);
        calls += batch;
        elapsed = cpu_ns() - start;
    } while (elapsed < RUN_NS);
    return bytes_per_call * calls / elapsed; /* bytes per ns = GB/s */
}

static double measure(struct cursor *c, int impl, int op, enum ref_kind ref,
                      uint64_t (*reader)(const uint8_t *, size_t))
{
    double v[RUNS];
    for (int r = 0; r < RUNS; r++)
        v[r] = measure_once(c, impl, op, ref, reader);
    qsort(v, RUNS, sizeof v[0], bench_cmp_double);
    return v[RUNS / 2];
}

struct bench_opts {
    int json;
    int k;          /* 0 = 4, 8, 16 */
    size_t chunk;   /* 0 = 4K, 64K, 512K */
    const char *impl;
};

static int parse_opts(int argc, char **argv, struct bench_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--k") && val) {
            char *end;
            long k = strtol(val, &end, 10);
            if (*end || k < 2 || k > URAID_PARITY_MAX_K) {
                cli_error("bench parity", "--k must be 2..%d, got '%s'", URAID_PARITY_MAX_K, val);
                return -1;
            }
            o->k = (int)k;
            i++;
        } else if (!strcmp(a, "--chunk") && val) {
            uint64_t bytes;
            if (cli_parse_size(val, &bytes) || bytes < 512 || bytes % 512 || bytes > (64u << 20)) {
                cli_error("bench parity", "--chunk must be a multiple of 512 bytes up to 64M, got '%s'", val);
                return -1;
            }
            o->chunk = bytes;
            i++;
        } else if (!strcmp(a, "--impl") && val) {
            o->impl = val;
            i++;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: uraid bench parity [--json] [--k N] [--chunk SIZE] [--impl NAME]\n");
            return 1;
        } else {
            cli_error("bench parity", "unknown or incomplete option '%s'", a);
            return -1;
        }
    }
    return 0;
}

static const char *resident_name(int dram) { return dram ? "dram" : "cache"; }

int bench_parity(int argc, char **argv)
{
    struct bench_opts o = {0};
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc < 0 ? 2 : 0;
    if (cli_setup_parity("bench parity"))
        return 1;

    int impls[64], nimpl = 0;
    for (int i = 0; i < uraid_parity_impl_count() && nimpl < 64; i++) {
        const char *name = uraid_parity_impl_name(i);
        if (o.impl ? strcmp(name, o.impl) != 0 : !strcmp(name, "ref"))
            continue; /* the byte-wise reference is the oracle, too slow to tabulate by default */
        if (!uraid_parity_impl_valid(i)) {
            if (o.impl) {
                cli_error("bench parity", "routine '%s' cannot run on this CPU", o.impl);
                return 1;
            }
            continue;
        }
        impls[nimpl++] = i;
    }
    if (!nimpl) {
        cli_error("bench parity", "no parity routine named '%s' (see 'uraid selftest')", o.impl);
        return 2;
    }

    int ks[3] = {4, 8, 16}, nk = 3;
    size_t chunks[3] = {4096, 65536, 524288};
    int nchunk = 3;
    if (o.k) {
        ks[0] = o.k;
        nk = 1;
    }
    if (o.chunk) {
        chunks[0] = o.chunk;
        nchunk = 1;
    }

    size_t max_set = 0;
    for (int a = 0; a < nk; a++)
        for (int b = 0; b < nchunk; b++) {
            size_t s = (size_t)(ks[a] + 3) * chunks[b];
            if (s > max_set)
                max_set = s;
        }
    struct pool pool = {.bytes = POOL_BYTES < 4 * max_set ? 4 * max_set : POOL_BYTES};
    pool.mem = aligned_alloc(4096, pool.bytes);
    if (!pool.mem) {
        cli_error("bench parity", "cannot allocate %zu MiB of buffers", pool.bytes >> 20);
        return 1;
    }
    for (size_t i = 0; i < pool.bytes; i += 8) {
        uint64_t v = i * 0x9e3779b97f4a7c15ull;
        memcpy(pool.mem + i, &v, 8);
    }
    uint64_t (*reader)(const uint8_t *, size_t) = pick_reader();

    if (o.json) {
        printf("{\n  \"unit\": \"GB/s of input bytes per CPU second (median of %d runs)\",\n", RUNS);
        printf("  \"chosen\": {");
        for (int op = 0; op < URAID_OP_COUNT; op++)
            printf("%s\"%s\": \"%s\"", op ? ", " : "", uraid_parity_op_name(op), uraid_parity_chosen(op));
        printf("},\n  \"shapes\": [");
    } else {
        printf("uraid parity benchmark: GB/s of input bytes per CPU-second, median of %d runs\n", RUNS);
        printf("(gen_p, gen_pq: k data blocks; rmw of one slot: old + new data, P, Q; "
               "recov of two data blocks: k-2 data, P, Q)\n");
        printf("chosen at start-up:");
        for (int op = 0; op < URAID_OP_COUNT; op++)
            printf(" %s=%s", uraid_parity_op_name(op), uraid_parity_chosen(op));
        printf("\n");
    }

    /* results collected for the JSON array at the end */
    size_t max_results = (size_t)nk * nchunk * 2 * URAID_OP_COUNT * nimpl;
    struct result { int impl, op, k; size_t chunk; int dram; double gbps; } *res =
        calloc(max_results, sizeof *res);
    size_t nres = 0;
    int first_shape = 1;

    for (int dram = 0; dram <= 1; dram++) {
        for (int a = 0; a < nk; a++) {
            for (int b = 0; b < nchunk; b++) {
                struct cursor c = {.pool = &pool, .sh = {ks[a], chunks[b], dram}};
                c.set_bytes = (size_t)(c.sh.k + 3) * c.sh.chunk;
                c.nsets = pool.bytes / c.set_bytes;
                double rd = measure(&c, -1, 0, REF_READ, reader);
                double mc = measure(&c, -1, 0, REF_MEMCPY, reader);
                char cs[16];
                cli_format_size(c.sh.chunk, cs, sizeof cs);
                if (o.json) {
                    printf("%s\n    {\"k\": %d, \"chunk_bytes\": %zu, \"resident\": \"%s\", \"read_gbps\": %.2f, "
                           "\"memcpy_gbps\": %.2f}",
                           first_shape ? "" : ",", c.sh.k, c.sh.chunk, resident_name(dram), rd, mc);
                    first_shape = 0;
                } else {
                    printf("\nk=%d chunk=%s %s-resident: plain read %.1f GB/s, memcpy %.1f GB/s\n", c.sh.k, cs,
                           resident_name(dram), rd, mc);
                    printf("  %-7s", "op");
                    for (int i = 0; i < nimpl; i++)
                        printf(" %21s", uraid_parity_impl_name(impls[i]));
                    printf("\n");
                }
                for (int op = 0; op < URAID_OP_COUNT; op++) {
                    if (!o.json)
                        printf("  %-7s", uraid_parity_op_name(op));
                    for (int i = 0; i < nimpl; i++) {
                        double g = measure(&c, impls[i], op, REF_READ, reader);
                        res[nres++] = (struct result){impls[i], op, c.sh.k, c.sh.chunk, dram, g};
                        if (!o.json)
                            printf(" %7.1f (%4.2fr %4.2fm)", g, g / rd, g / mc);
                    }
                    if (!o.json) {
                        printf("\n");
                        fflush(stdout);
                    }
                }
            }
        }
    }
    if (o.json) {
        printf("\n  ],\n  \"results\": [");
        for (size_t i = 0; i < nres; i++)
            printf("%s\n    {\"impl\": \"%s\", \"op\": \"%s\", \"k\": %d, \"chunk_bytes\": %zu, "
                   "\"resident\": \"%s\", \"gbps\": %.2f}",
                   i ? "," : "", uraid_parity_impl_name(res[i].impl), uraid_parity_op_name(res[i].op), res[i].k,
                   res[i].chunk, resident_name(res[i].dram), res[i].gbps);
        printf("\n  ]\n}\n");
    } else {
        printf("\n(r = ratio to the plain read of the same buffers, m = ratio to memcpy of them)\n");
    }
    free(res);
    free(pool.mem);
    return 0;
}
