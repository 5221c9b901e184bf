/* CPU feature detection: an instruction set is usable only if CPUID says the
 * CPU has it *and* the OS saves the matching register state (XCR0), or a
 * context switch would corrupt the vector registers. */
#include <cpuid.h>
#include <stdatomic.h>
#include <stdint.h>

#include "impl.h"

static uint64_t read_xcr0(void)
{
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

struct cpu_bits {
    int osxsave, avx, avx2, avx512f, avx512bw, avx512vl, gfni;
    uint64_t xcr0;
};

static struct cpu_bits read_cpu(void)
{
    struct cpu_bits c = {0};
    unsigned a, b, cx, d;
    if (!__get_cpuid(1, &a, &b, &cx, &d))
        return c;
    c.osxsave = (cx >> 27) & 1;
    c.avx = (cx >> 28) & 1;
    if (__get_cpuid_max(0, 0) >= 7) {
        __cpuid_count(7, 0, a, b, cx, d);
        c.avx2 = (b >> 5) & 1;
        c.avx512f = (b >> 16) & 1;
        c.avx512bw = (b >> 30) & 1;
        c.avx512vl = (b >> 31) & 1;
        c.gfni = (cx >> 8) & 1;
    }
    if (c.osxsave)
        c.xcr0 = read_xcr0();
    return c;
}

/* XCR0 bits: 1 SSE, 2 AVX (YMM upper), 5-7 opmask, ZMM_Hi256, Hi16_ZMM. */
static int ymm_enabled(const struct cpu_bits *c) { return c->osxsave && (c->xcr0 & 0x6) == 0x6; }
static int zmm_enabled(const struct cpu_bits *c) { return ymm_enabled(c) && (c->xcr0 & 0xe0) == 0xe0; }

enum { HAS_AVX2 = 1, HAS_AVX512BW = 2, HAS_GFNI_AVX512 = 4, PROBED = 8 };

/* CPUID traps to the hypervisor in a VM (tens of microseconds), and valid()
 * is asked on every call through the *_with entry points, so the answer is
 * computed once. Racing first callers compute the same value. */
static _Atomic unsigned features;

static unsigned probe(void)
{
    unsigned f = atomic_load_explicit(&features, memory_order_relaxed);
    if (f & PROBED)
        return f;
    struct cpu_bits c = read_cpu();
    f = PROBED;
    if (c.avx && c.avx2 && ymm_enabled(&c))
        f |= HAS_AVX2;
    if (c.avx512f && c.avx512bw && c.avx512vl && zmm_enabled(&c)) {
        f |= HAS_AVX512BW;
        if (c.gfni)
            f |= HAS_GFNI_AVX512;
    }
    atomic_store_explicit(&features, f, memory_order_relaxed);
    return f;
}

int cpu_has_avx2(void) { return !!(probe() & HAS_AVX2); }
int cpu_has_avx512bw(void) { return !!(probe() & HAS_AVX512BW); }
int cpu_has_gfni_avx512(void) { return !!(probe() & HAS_GFNI_AVX512); }
