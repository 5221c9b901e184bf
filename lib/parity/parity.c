/* Parity engine front end: the registry of implementations, the timed choice
 * of the fastest per operation, argument checks, and the operations that are
 * compositions of kernel calls (recovery cases, check).
 *
 * Selection state machine (per process):
 *   UNSELECTED --first call / uraid_parity_init--> SELECTED (timed or forced)
 *   SELECTED --uraid_parity_force(name)--> SELECTED (forced)
 * Timed selection times each operation on its first use, not all four at
 * once: a command that reads a healthy array computes no parity and pays
 * nothing, a writer pays for gen_pq (and rmw) only, and a served array's
 * first write no longer stalls behind the recovery routines' probe. The
 * chosen index per operation lives in an atomic int so the hot path takes
 * no lock once that operation's choice is made. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gf.h"
#include "impl.h"
#include "log.h"
#include "uraid_parity.h"

static const struct parity_impl *const registry[] = {
    &parity_impl_ref,
    &parity_impl_int64,
    &parity_impl_avx2,
    &parity_impl_avx512,
    &parity_impl_gfni,
    &parity_impl_gfni_nt,
#ifdef HAVE_ISAL
    &parity_impl_isal,
#endif
};
#define REGISTRY_SIZE ((int)(sizeof registry / sizeof registry[0]))

static pthread_mutex_t select_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int selected = 0;               /* 0 until the first selection ran */
static atomic_int chosen[URAID_OP_COUNT];
static atomic_int decided[URAID_OP_COUNT];    /* 1 once chosen[op] holds a timed or forced choice */
static double chosen_mbps[URAID_OP_COUNT];
static int forced_index = -1;

static const char *const op_names[URAID_OP_COUNT] = {"gen_p", "gen_pq", "rmw", "recov"};

const char *uraid_parity_op_name(enum uraid_parity_op op)
{
    return (unsigned)op < URAID_OP_COUNT ? op_names[op] : "?";
}

int uraid_parity_impl_count(void) { return REGISTRY_SIZE; }

static int index_ok(int i) { return i >= 0 && i < REGISTRY_SIZE; }

const char *uraid_parity_impl_name(int i) { return index_ok(i) ? registry[i]->name : NULL; }
const char *uraid_parity_impl_desc(int i) { return index_ok(i) ? registry[i]->desc : NULL; }
int uraid_parity_impl_valid(int i) { return index_ok(i) && registry[i]->valid(); }

static int find_impl(const char *name)
{
    for (int i = 0; i < REGISTRY_SIZE; i++)
        if (!strcmp(registry[i]->name, name))
            return i;
    return -1;
}

/* ---- timed probe ---------------------------------------------------------- */

#define PROBE_K 8
#define PROBE_LEN (64 * 1024)
#define PROBE_NS 500000L /* per implementation, operation and trial */
#define PROBE_TRIALS 3

struct probe_bufs {
    uint8_t *block[PROBE_K + 2];
    uint8_t *alt[2];
};

static double now_ns(void)
{
    struct timespec ts;
    /* CPU time of this thread: a busy neighbour on a shared machine does not
     * count against the candidate that happened to be running. */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void probe_once(const struct parity_impl *im, enum uraid_parity_op op, struct probe_bufs *b)
{
    const uint8_t *const *data = (const uint8_t *const *)b->block;
    static const int slots[1] = {3};
    switch (op) {
    case URAID_OP_GEN_P:
        im->gen_p(PROBE_K, PROBE_LEN, data, b->block[PROBE_K]);
        break;
    case URAID_OP_GEN_PQ:
        im->gen_pq(PROBE_K, PROBE_LEN, data, b->block[PROBE_K], b->block[PROBE_K + 1]);
        break;
    case URAID_OP_RMW: {
        const uint8_t *old[1] = {b->block[3]}, *neu[1] = {b->alt[0]};
        im->rmw(1, slots, PROBE_LEN, old, neu, b->block[PROBE_K], b->block[PROBE_K + 1]);
        break;
    }
    case URAID_OP_RECOV:
        im->recov_2data(PROBE_K, PROBE_LEN, 2, 5, b->block);
        break;
    default:
        break;
    }
}

/* Bytes an operation reads as input per call: the unit of every parity
 * throughput figure (probe and benchmark alike). rmw of one slot reads old
 * data, new data, P and Q; two-data recovery reads k - 2 data blocks, P
 * and Q. */
static double probe_input_bytes(enum uraid_parity_op op)
{
    return op == URAID_OP_RMW ? 4.0 * PROBE_LEN : (double)PROBE_K * PROBE_LEN;
}

/* Input MB/s of one trial of one implementation for one operation. */
static double probe_mbps(const struct parity_impl *im, enum uraid_parity_op op, struct probe_bufs *b)
{
    long iters = 0;
    double start = now_ns(), elapsed;
    do {
        probe_once(im, op, b);
        iters++;
        elapsed = now_ns() - start;
    } while (elapsed < PROBE_NS);
    return (double)iters * probe_input_bytes(op) / elapsed * 1e3;
}

/* Times every valid implementation of op and keeps the fastest; under
 * select_lock. */
static void time_op(enum uraid_parity_op op)
{
    struct probe_bufs b;
    size_t n = PROBE_K + 4;
    uint8_t *mem = aligned_alloc(64, n * PROBE_LEN);
    if (!mem) {
        /* Without probe memory the portable code is a safe, correct choice. */
        atomic_store(&chosen[op], find_impl("int64"));
        return;
    }
    for (size_t i = 0; i < n * PROBE_LEN; i++)
        mem[i] = (uint8_t)(i * 131 + (i >> 9));
    for (int i = 0; i < PROBE_K + 2; i++)
        b.block[i] = mem + (size_t)i * PROBE_LEN;
    b.alt[0] = mem + (size_t)(PROBE_K + 2) * PROBE_LEN;
    b.alt[1] = mem + (size_t)(PROBE_K + 3) * PROBE_LEN;

    /* Trials take turns across candidates, so a burst of noise from a
     * neighbour lands on all of them rather than on one; each keeps its
     * best (least-disturbed) trial. */
    double mbps[64] = {0};
    for (int trial = 0; trial < PROBE_TRIALS; trial++)
        for (int i = 0; i < REGISTRY_SIZE; i++) {
            /* The reference is the oracle, never a contender. */
            if (registry[i] == &parity_impl_ref || !registry[i]->valid())
                continue;
            if (trial == 0)
                probe_once(registry[i], op, &b); /* warm: the probe measures cache-resident speed */
            double v = probe_mbps(registry[i], op, &b);
            if (v > mbps[i])
                mbps[i] = v;
        }
    int best = find_impl("int64");
    for (int i = 0; i < REGISTRY_SIZE; i++) {
        if (mbps[i] > 0)
            uraid_log(URAID_LOG_DEBUG, "parity: %-7s %-10s %9.0f MB/s", op_names[op], registry[i]->name, mbps[i]);
        if (mbps[i] > mbps[best])
            best = i;
    }
    atomic_store(&chosen[op], best);
    chosen_mbps[op] = mbps[best];
    uraid_log(URAID_LOG_INFO, "parity: %s using %s (%.0f MB/s)", op_names[op], registry[best]->name, mbps[best]);
    free(mem);
}

/* Timed selection from now on: each operation timed at its next use. */
static void select_by_timing(void)
{
    for (int op = 0; op < URAID_OP_COUNT; op++)
        atomic_store(&decided[op], 0);
}

static int apply_force_locked(const char *name)
{
    int i = find_impl(name);
    if (i < 0) {
        uraid_log(URAID_LOG_DEBUG, "parity: unknown implementation '%s'", name);
        return -ENOENT;
    }
    if (!registry[i]->valid()) {
        uraid_log(URAID_LOG_DEBUG, "parity: implementation '%s' cannot run on this CPU", name);
        return -ENOTSUP;
    }
    forced_index = i;
    for (int op = 0; op < URAID_OP_COUNT; op++) {
        atomic_store(&chosen[op], i);
        chosen_mbps[op] = 0;
        atomic_store(&decided[op], 1);
    }
    uraid_log(URAID_LOG_INFO, "parity: forced to %s", name);
    return 0;
}

int uraid_parity_init(void)
{
    if (atomic_load(&selected))
        return 0;
    pthread_mutex_lock(&select_lock);
    int rc = 0;
    if (!atomic_load(&selected)) {
        const char *env = getenv("URAID_PARITY");
        if (forced_index >= 0) {
            /* uraid_parity_force() already decided */
        } else if (env && *env) {
            rc = apply_force_locked(env);
        } else {
            select_by_timing();
        }
        if (rc == 0)
            atomic_store(&selected, 1);
    }
    pthread_mutex_unlock(&select_lock);
    return rc;
}

int uraid_parity_force(const char *name)
{
    pthread_mutex_lock(&select_lock);
    int rc;
    if (!name || !*name) {
        forced_index = -1;
        select_by_timing();
        atomic_store(&selected, 1);
        rc = 0;
    } else {
        rc = apply_force_locked(name);
        if (rc == 0)
            atomic_store(&selected, 1);
    }
    pthread_mutex_unlock(&select_lock);
    return rc;
}

static const struct parity_impl *impl_for(enum uraid_parity_op op)
{
    if (!atomic_load_explicit(&selected, memory_order_acquire) && uraid_parity_init() != 0)
        return NULL;
    if (!atomic_load_explicit(&decided[op], memory_order_acquire)) {
        pthread_mutex_lock(&select_lock);
        if (!atomic_load(&decided[op])) {
            time_op(op);
            atomic_store(&decided[op], 1);
        }
        pthread_mutex_unlock(&select_lock);
    }
    return registry[atomic_load_explicit(&chosen[op], memory_order_relaxed)];
}

const char *uraid_parity_chosen(enum uraid_parity_op op)
{
    if ((unsigned)op >= URAID_OP_COUNT)
        return NULL;
    const struct parity_impl *im = impl_for(op);
    return im ? im->name : NULL;
}

double uraid_parity_chosen_mbps(enum uraid_parity_op op)
{
    if ((unsigned)op >= URAID_OP_COUNT || !impl_for(op))
        return 0;
    pthread_mutex_lock(&select_lock);
    double v = chosen_mbps[op];
    pthread_mutex_unlock(&select_lock);
    return v;
}

/* ---- argument checks ------------------------------------------------------- */

static int shape_ok(int k, size_t len)
{
    return k >= 1 && k <= URAID_PARITY_MAX_K && len > 0 && len % URAID_PARITY_LEN_ALIGN == 0;
}

static int ptrs_ok(int n, const void *const *p)
{
    if (!p)
        return 0;
    for (int i = 0; i < n; i++)
        if (!p[i])
            return 0;
    return 1;
}

/* ---- operations, given an implementation ------------------------------------ */

static int do_gen_p(const struct parity_impl *im, int k, size_t len, const void *const *data, void *p)
{
    if (!im)
        return -ENOTSUP;
    if (!shape_ok(k, len) || !ptrs_ok(k, data) || !p)
        return -EINVAL;
    im->gen_p(k, len, (const uint8_t *const *)data, p);
    return 0;
}

static int do_gen_pq(const struct parity_impl *im, int k, size_t len, const void *const *data, void *p,
                     void *q)
{
    if (!im)
        return -ENOTSUP;
    if (!shape_ok(k, len) || !ptrs_ok(k, data) || !p || !q)
        return -EINVAL;
    im->gen_pq(k, len, (const uint8_t *const *)data, p, q);
    return 0;
}

static int do_rmw(const struct parity_impl *im, int n, const int *slots, size_t len,
                  const void *const *old_data, const void *const *new_data, void *p, void *q)
{
    if (!im)
        return -ENOTSUP;
    if (!shape_ok(n, len) || !slots || !ptrs_ok(n, old_data) || !ptrs_ok(n, new_data) || !p)
        return -EINVAL;
    for (int j = 0; j < n; j++)
        if (slots[j] < 0 || slots[j] >= URAID_PARITY_MAX_K || (j && slots[j] <= slots[j - 1]))
            return -EINVAL;
    im->rmw(n, slots, len, (const uint8_t *const *)old_data, (const uint8_t *const *)new_data, p, q);
    return 0;
}

/* The recovery cases (k data slots, P at k, Q at k+1):
 *   one data, P intact      -> XOR of P and the other data (RAID-5 style)
 *   P / Q / P+Q             -> regenerate from the data
 *   data + Q                -> data from P, then Q
 *   data + P                -> recov_datap (data from Q, then P)
 *   two data                -> recov_2data */
static int do_recover(const struct parity_impl *rec, const struct parity_impl *gen, int k, size_t len,
                      void *const *blocks, int raid6, int nlost, const int *lost)
{
    if (!rec || !gen)
        return -ENOTSUP;
    int nblocks = k + (raid6 ? 2 : 1);
    if (!shape_ok(k, len) || !ptrs_ok(nblocks, (const void *const *)blocks) || !lost)
        return -EINVAL;
    if (nlost < 1 || nlost > (raid6 ? 2 : 1))
        return -EINVAL;
    int a = lost[0], b = nlost == 2 ? lost[1] : -1;
    if (a < 0 || a >= nblocks || (nlost == 2 && (b < 0 || b >= nblocks || b == a)))
        return -EINVAL;
    if (b >= 0 && b < a) {
        int t = a;
        a = b;
        b = t;
    }
    uint8_t *const *bl = (uint8_t *const *)blocks;
    const uint8_t *const *data = (const uint8_t *const *)bl;
    int P = k, Q = k + 1;

    if (a < k && (b < 0 || b == Q)) {
        /* rebuild data a from P and the other data: P takes a's place as a source */
        const uint8_t *src[URAID_PARITY_MAX_K];
        for (int j = 0; j < k; j++)
            src[j] = j == a ? bl[P] : bl[j];
        gen->gen_p(k, len, src, bl[a]);
        if (b == Q)
            gen->gen_pq(k, len, data, NULL, bl[Q]);
        return 0;
    }
    if (a < k && b == P) {
        rec->recov_datap(k, len, a, bl);
        return 0;
    }
    if (a < k && b < k) {
        rec->recov_2data(k, len, a, b, bl);
        return 0;
    }
    /* only parity lost */
    if (a == P && b == Q)
        gen->gen_pq(k, len, data, bl[P], bl[Q]);
    else if (a == P)
        gen->gen_p(k, len, data, bl[P]);
    else
        gen->gen_pq(k, len, data, NULL, bl[Q]);
    return 0;
}

#define CHECK_PIECE 4096

static uint8_t diagnose_sector(int k, const uint8_t *pd, const uint8_t *qd, int raid6, int16_t *slot)
{
    int p_bad = 0, q_bad = 0;
    for (int i = 0; i < 512; i++) {
        p_bad |= pd[i];
        q_bad |= raid6 ? qd[i] : 0;
    }
    *slot = -1;
    if (!p_bad && !q_bad)
        return URAID_CHECK_OK;
    if (!raid6 || !q_bad)
        return URAID_CHECK_P_BAD;
    if (!p_bad)
        return URAID_CHECK_Q_BAD;
    /* Both differ: a single bad data slot z gives Px = e and Qx = g^z * e at
     * every byte, so log(Qx) - log(Px) must be the same z everywhere. */
    int z = -1;
    for (int i = 0; i < 512; i++) {
        if (!pd[i] && !qd[i])
            continue;
        if (!pd[i] || !qd[i])
            return URAID_CHECK_MULTI_BAD;
        int zi = (gf_log[qd[i]] - gf_log[pd[i]] + 255) % 255;
        if (z >= 0 && zi != z)
            return URAID_CHECK_MULTI_BAD;
        z = zi;
    }
    if (z >= k)
        return URAID_CHECK_MULTI_BAD;
    *slot = (int16_t)z;
    return URAID_CHECK_DATA_BAD;
}

static int do_check(const struct parity_impl *im, int k, size_t len, const void *const *blocks, int raid6,
                    uint8_t *verdict, int16_t *bad_slot)
{
    if (!im)
        return -ENOTSUP;
    int nblocks = k + (raid6 ? 2 : 1);
    if (!shape_ok(k, len) || !ptrs_ok(nblocks, blocks))
        return -EINVAL;
    const uint8_t *const *bl = (const uint8_t *const *)blocks;
    uint8_t pbuf[CHECK_PIECE] __attribute__((aligned(64)));
    uint8_t qbuf[CHECK_PIECE] __attribute__((aligned(64)));
    const uint8_t *src[URAID_PARITY_MAX_K];
    int bad = 0;
    for (size_t off = 0; off < len; off += CHECK_PIECE) {
        size_t piece = len - off < CHECK_PIECE ? len - off : CHECK_PIECE;
        for (int j = 0; j < k; j++)
            src[j] = bl[j] + off;
        if (raid6)
            im->gen_pq(k, piece, src, pbuf, qbuf);
        else
            im->gen_p(k, piece, src, pbuf);
        for (size_t s = 0; s < piece; s += 512) {
            size_t sector = (off + s) / 512;
            int16_t slot = -1;
            uint8_t v = URAID_CHECK_OK;
            int same = !memcmp(pbuf + s, bl[k] + off + s, 512) &&
                       (!raid6 || !memcmp(qbuf + s, bl[k + 1] + off + s, 512));
            if (!same) {
                for (int i = 0; i < 512; i++) {
                    pbuf[s + i] ^= bl[k][off + s + i];
                    if (raid6)
                        qbuf[s + i] ^= bl[k + 1][off + s + i];
                }
                v = diagnose_sector(k, pbuf + s, qbuf + s, raid6, &slot);
                bad++;
            }
            if (verdict)
                verdict[sector] = v;
            if (bad_slot)
                bad_slot[sector] = slot;
        }
    }
    return bad;
}

/* ---- public entry points ----------------------------------------------------- */

int uraid_gen_p(int k, size_t len, const void *const *data, void *p)
{
    return do_gen_p(impl_for(URAID_OP_GEN_P), k, len, data, p);
}

int uraid_gen_pq(int k, size_t len, const void *const *data, void *p, void *q)
{
    return do_gen_pq(impl_for(URAID_OP_GEN_PQ), k, len, data, p, q);
}

int uraid_rmw(int n, const int *slots, size_t len, const void *const *old_data,
              const void *const *new_data, void *p, void *q)
{
    return do_rmw(impl_for(URAID_OP_RMW), n, slots, len, old_data, new_data, p, q);
}

int uraid_recover(int k, size_t len, void *const *blocks, int raid6, int nlost, const int *lost)
{
    return do_recover(impl_for(URAID_OP_RECOV), impl_for(URAID_OP_GEN_PQ), k, len, blocks, raid6, nlost,
                      lost);
}

int uraid_check(int k, size_t len, const void *const *blocks, int raid6, uint8_t *verdict,
                int16_t *bad_slot)
{
    return do_check(impl_for(URAID_OP_GEN_PQ), k, len, blocks, raid6, verdict, bad_slot);
}

static const struct parity_impl *impl_at(int i)
{
    return uraid_parity_impl_valid(i) ? registry[i] : NULL;
}

int uraid_gen_p_with(int impl, int k, size_t len, const void *const *data, void *p)
{
    return do_gen_p(impl_at(impl), k, len, data, p);
}

int uraid_gen_pq_with(int impl, int k, size_t len, const void *const *data, void *p, void *q)
{
    return do_gen_pq(impl_at(impl), k, len, data, p, q);
}

int uraid_rmw_with(int impl, int n, const int *slots, size_t len, const void *const *old_data,
                   const void *const *new_data, void *p, void *q)
{
    return do_rmw(impl_at(impl), n, slots, len, old_data, new_data, p, q);
}

int uraid_recover_with(int impl, int k, size_t len, void *const *blocks, int raid6, int nlost,
                       const int *lost)
{
    return do_recover(impl_at(impl), impl_at(impl), k, len, blocks, raid6, nlost, lost);
}

int uraid_check_with(int impl, int k, size_t len, const void *const *blocks, int raid6, uint8_t *verdict,
                     int16_t *bad_slot)
{
    return do_check(impl_at(impl), k, len, blocks, raid6, verdict, bad_slot);
}

uint8_t uraid_gf_mul(uint8_t a, uint8_t b) { return gf_mul8(a, b); }
uint8_t uraid_gf_pow2(int exponent) { return exponent < 0 ? 0 : gf_pow2(exponent); }
