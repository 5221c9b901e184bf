/* The simulated disks of --member-layer disk=PRESET (lib/member/throttle.c),
 * measured through the spec a user types: for each preset its streaming
 * rate, its random 4 KiB IOPS against the seek/rotation model for the very
 * offsets asked (a model without seeks is hundreds of times too fast and
 * fails), and its queue: qd 1 against the preset's qd with several threads
 * (nearest-first on a disk with a head, requests overlapping on an SSD).
 * Lower bounds are the model's promise (never faster than it says); upper
 * ones leave room for a loaded 2-core machine. Also: keys override the
 * preset, bad keys are refused with one line, data passes unchanged.
 * Randomised offsets: prints its seed; URAID_TEST_SEED=N replays. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "member/member.h"

#define MEMBER_BYTES (64u << 20)
#define T2T_MS 1.0

static struct rng rng;
static double loose = 1; /* URAID_TEST_QUICK (the sanitizer builds): upper bounds x1.5 */
static char path[96];
static uint8_t *shadow;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct member *open_disk(const char *spec)
{
    struct member *m = NULL;
    if (member_open_file(path, 0, &m))
        return NULL;
    char why[256];
    int rc = member_apply_spec(&m, spec, why, sizeof why);
    CHECK(rc == 0, "spec '%s': %s", spec, why);
    if (rc) {
        member_close(m);
        return NULL;
    }
    return m;
}

/* The documented cost of a request of len at off after one ending at head. */
static double model_ms(const struct disk_model *d, uint64_t head, uint64_t off, size_t len)
{
    double ms = d->latency_usec / 1e3;
    double rev_bytes = d->rpm ? d->bytes_per_sec * 60.0 / d->rpm : 0;
    if (off > head && off - head <= rev_bytes) /* the head waits on its track */
        ms += (off - head) * 1e3 / d->bytes_per_sec;
    else if ((d->seek_usec || d->rpm) && off != head) {
        double seek = d->seek_usec / 1e3, t2t = seek < T2T_MS ? seek : T2T_MS;
        double dist = off > head ? off - head : head - off;
        if (d->seek_usec)
            ms += t2t + (seek - t2t) * sqrt(dist / MEMBER_BYTES);
        if (d->rpm)
            ms += 30e3 / d->rpm;
    }
    if (d->bytes_per_sec)
        ms += len * 1e3 / d->bytes_per_sec;
    return ms;
}

struct job {
    struct member *m;
    size_t req;
    int n;
    uint64_t *offs; /* n offsets, or NULL for a stream from 0 */
    int rc;
};

static void *run_job(void *arg)
{
    struct job *j = arg;
    uint8_t *buf = malloc(j->req);
    j->rc = buf ? 0 : -ENOMEM;
    for (int i = 0; i < j->n && !j->rc; i++) {
        uint64_t off = j->offs ? j->offs[i] : (uint64_t)i * j->req % MEMBER_BYTES;
        j->rc = member_read(j->m, buf, j->req, off);
        /* the head of each request: a whole memcmp would slow a 3 GB/s stream */
        if (!j->rc && memcmp(buf, shadow + off, j->req < 4096 ? j->req : 4096))
            j->rc = -EILSEQ;
    }
    free(buf);
    return NULL;
}

/* Runs `threads` jobs at once; wall time in ms. */
static double run_jobs(struct job *jobs, int threads)
{
    pthread_t th[16];
    double t0 = now_ms();
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, run_job, &jobs[i]);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double ms = now_ms() - t0;
    for (int i = 0; i < threads; i++)
        CHECK(jobs[i].rc == 0, "thread %d: %s", i, strerror(-jobs[i].rc));
    return ms;
}

/* The same job on the plain file: what the machine itself needs for the
 * real I/O (a loaded machine copies 3 GB/s or not), which the layer cannot
 * hide: a request ends at its deadline or when its real I/O does. */
static double raw_ms(struct job j)
{
    CHECK(member_open_file(path, 0, &j.m) == 0);
    double ms = j.m ? run_jobs(&j, 1) : 0;
    member_close(j.m);
    return ms;
}

static uint64_t *random_offsets(int n, size_t req)
{
    uint64_t *o = malloc(sizeof *o * (size_t)n);
    for (int i = 0; i < n; i++)
        o[i] = rng_below(&rng, MEMBER_BYTES / req) * req;
    return o;
}

struct preset_case {
    const char *name;
    int seq_mib;         /* streamed in 1 MiB requests */
    int rand_n;          /* random 4 KiB reads, one thread */
    double iops_lo, iops_hi; /* what such a disk does at QD1 (throttle.c's sources) */
    double slow;         /* how much slower than the model the machine may be */
};

static void test_preset(const struct preset_case *c)
{
    char spec[64];
    snprintf(spec, sizeof spec, "disk=%s", c->name);
    struct disk_model d;
    CHECK(member_disk_preset(c->name, &d) == 0);
    struct member *m;
    double raw = 0, ms = 0;

    /* Streaming from offset 0 of a fresh disk, where the head starts: no
     * positioning. Never faster than the model; slower only as far as a
     * loaded machine makes it, which can stall a thread for a while: best
     * of three. */
    struct job j;
    double want = c->seq_mib * model_ms(&d, 0, 0, 1u << 20);
    for (int attempt = 0; attempt < 3; attempt++) {
        j = (struct job){NULL, 1u << 20, c->seq_mib, NULL, 0};
        raw = raw_ms(j);
        j.m = m = open_disk(spec);
        ms = m ? run_jobs(&j, 1) : 0;
        member_close(m);
        printf("  %s: stream %d MiB: %.1f MB/s (model %.1f MB/s, %.1f ms for %.1f; the file alone %.1f ms)\n",
               c->name, c->seq_mib, c->seq_mib * 1048576.0 / ms / 1e3, c->seq_mib * 1048576.0 / want / 1e3, ms,
               want, raw);
        CHECK(ms > want * 0.97, "%s stream: %.1f ms, the model says %.1f", c->name, ms, want);
        if (ms < (want + raw) * c->slow * loose)
            break;
    }
    CHECK(ms < (want + raw) * c->slow * loose, "%s stream: %.1f ms, the model says %.1f", c->name, ms, want);

    /* Random 4 KiB at QD1, from a fresh disk (head at 0), best of three. */
    uint64_t *offs = random_offsets(c->rand_n, 4096);
    uint64_t head = 0;
    want = 0;
    for (int i = 0; i < c->rand_n; i++) {
        want += model_ms(&d, head, offs[i], 4096);
        head = offs[i] + 4096;
    }
    double model_iops = c->rand_n * 1e3 / want;
    CHECK(model_iops > c->iops_lo && model_iops < c->iops_hi, "%s: the model's random 4 KiB QD1: %.0f IOPS",
          c->name, model_iops);
    for (int attempt = 0; attempt < 3; attempt++) {
        j = (struct job){NULL, 4096, c->rand_n, offs, 0};
        raw = raw_ms(j);
        j.m = m = open_disk(spec);
        ms = m ? run_jobs(&j, 1) : 0;
        member_close(m);
        printf("  %s: random 4 KiB QD1: %.0f IOPS (model %.0f; such disks %.0f-%.0f; the file alone %.1f ms)\n",
               c->name, c->rand_n * 1e3 / ms, model_iops, c->iops_lo, c->iops_hi, raw);
        CHECK(ms > want * 0.97, "%s random: %.1f ms, the model says %.1f", c->name, ms, want);
        if (ms < (want + raw) * c->slow * loose)
            break;
    }
    CHECK(ms < (want + raw) * c->slow * loose, "%s random: %.1f ms, the model says %.1f", c->name, ms, want);
    free(offs);
}

/* IOPS of `threads` threads of random requests of req bytes on spec. */
static double queue_iops(const char *spec, int threads, int per_thread, size_t req)
{
    struct member *m = open_disk(spec);
    if (!m)
        return 0;
    struct job jobs[16];
    for (int i = 0; i < threads; i++)
        jobs[i] = (struct job){m, req, per_thread, random_offsets(per_thread, req), 0};
    double ms = run_jobs(jobs, threads);
    for (int i = 0; i < threads; i++)
        free(jobs[i].offs);
    member_close(m);
    double iops = threads * per_thread * 1e3 / ms;
    printf("  %d threads of random %zu KiB, %s: %.0f IOPS\n", threads, req >> 10, spec, iops);
    return iops;
}

/* qd 1 against qd N, `threads` threads of random requests of req bytes;
 * extra: keys after the preset's (a longer latency, so that a machine that
 * cannot copy 3 GB/s still shows the queue). */
static void test_queue(const char *name, const char *extra, int threads, int per_thread, size_t req,
                       double min_gain)
{
    double iops[2] = {0, 0};
    struct disk_model d;
    CHECK(member_disk_preset(name, &d) == 0);
    if (*extra)
        CHECK(sscanf(extra, ",latency=%uus", &d.latency_usec) == 1);
    /* qd 1: one at a time, never better than the average request allows */
    double avg_ms = d.latency_usec / 1e3 + req * 1e3 / d.bytes_per_sec;
    if (d.seek_usec)
        avg_ms += T2T_MS + (d.seek_usec / 1e3 - T2T_MS) * 8 / 15 + (d.rpm ? 30e3 / d.rpm : 0);
    double cap = (double)d.bytes_per_sec / req, par = threads * 1e3 / avg_ms;
    /* a loaded machine compresses the gain: best of three */
    for (int attempt = 0; attempt < 3 && (attempt == 0 || iops[1] <= iops[0] * min_gain); attempt++) {
        char spec[96];
        snprintf(spec, sizeof spec, "disk=%s%s,qd=1", name, extra);
        iops[0] = queue_iops(spec, threads, per_thread, req);
        snprintf(spec, sizeof spec, "disk=%s%s,qd=%u", name, extra, d.qd > 1 ? d.qd : 32);
        iops[1] = queue_iops(spec, threads, per_thread, req);
        CHECK(iops[0] < 1e3 / avg_ms * 1.15, "%s qd 1: %.0f IOPS, one at a time allows %.0f", name, iops[0],
              1e3 / avg_ms);
        /* overlapping requests still share one channel */
        if (!d.seek_usec)
            CHECK(iops[1] < (cap < par ? cap : par) * 1.05, "%s: %.0f IOPS, the model allows %.0f", name, iops[1],
                  cap < par ? cap : par);
    }
    CHECK(iops[1] > iops[0] * min_gain, "%s: the queue gains x%.2f, expected more than x%.2f", name,
          iops[1] / iops[0], min_gain);
}

/* A stream that skips one 64 KiB chunk in two (a member's share of a RAID
 * stream passing over parity) waits for the skipped bytes on its track:
 * the transfer time of everything passed, not a seek and half a revolution
 * per chunk (5 ms each: eight times slower). A skip past a revolution's
 * worth of bytes still seeks. */
static void test_skip(void)
{
    struct disk_model d;
    CHECK(member_disk_preset("hdd-7200", &d) == 0);
    enum { N = 48, CHUNK = 65536 };
    uint64_t offs[N];
    for (int i = 0; i < N; i++)
        offs[i] = (uint64_t)i * 2 * CHUNK;
    double want = 0;
    for (int i = 0; i < N; i++)
        want += model_ms(&d, i ? offs[i - 1] + CHUNK : 0, offs[i], CHUNK);
    double seek_each = N * (T2T_MS + 30e3 / d.rpm);
    struct job j = {open_disk("disk=hdd-7200"), CHUNK, N, offs, 0};
    double raw = raw_ms(j);
    double ms = j.m ? run_jobs(&j, 1) : 0;
    member_close(j.m);
    printf("  hdd-7200, 64 KiB read, 64 KiB skipped, x%d: %.1f ms (model %.1f; a seek per chunk would be %.0f)\n", N,
           ms, want, seek_each);
    CHECK(ms > want * 0.97 && ms < (want + raw) * 2 * loose, "%.1f ms, the model says %.1f", ms, want);
    /* 4 MiB forward is more than a revolution (1.5 MB at 180 MB/s, 7200 rpm) */
    uint64_t far[2] = {0, 4u << 20};
    j = (struct job){open_disk("disk=hdd-7200"), CHUNK, 2, far, 0};
    ms = j.m ? run_jobs(&j, 1) : 0;
    member_close(j.m);
    want = model_ms(&d, 0, 0, CHUNK) + model_ms(&d, CHUNK, far[1], CHUNK);
    printf("  hdd-7200, a 4 MiB skip: %.1f ms (model %.1f)\n", ms, want);
    CHECK(ms > want * 0.97 && want > 30e3 / d.rpm, "%.1f ms, the model says %.1f", ms, want);
}

static void test_keys(void)
{
    /* throttle= overrides the preset's rate: 1 MiB at 120 MB/s, not 180 */
    struct member *m = open_disk("disk=hdd-7200,throttle=120M");
    struct job j = {m, 1u << 20, 12, NULL, 0};
    double want = 12 * 1048576.0 / 120e6 * 1e3;
    double ms = m ? run_jobs(&j, 1) : 0;
    printf("  disk=hdd-7200,throttle=120M: 12 MiB in %.1f ms (model %.1f)\n", ms, want);
    CHECK(ms > want * 0.97 && ms < want * 3);
    member_close(m);
    /* explicit keys without a preset: a 10 ms full stroke, no rotation */
    m = open_disk("seek=10,rpm=0,throttle=1G");
    uint8_t b[4096];
    double t0 = now_ms();
    CHECK(m && member_read(m, b, 4096, MEMBER_BYTES - 4096) == 0);
    ms = now_ms() - t0;
    want = T2T_MS + (10 - T2T_MS) * sqrt((MEMBER_BYTES - 4096.0) / MEMBER_BYTES);
    printf("  seek=10,rpm=0: a full stroke in %.2f ms (model %.2f)\n", ms, want);
    CHECK(ms > want * 0.97 && ms < want * 3);
    /* writes pass through and cost their time; flush stays put */
    memcpy(b, "diskmodel", 9);
    CHECK(m && member_write(m, b, 4096, 8192) == 0 && member_flush(m) == 0);
    memcpy(shadow + 8192, b, 4096);
    CHECK(m && member_read(m, b, 4096, 8192) == 0 && !memcmp(b, "diskmodel", 9));
    member_close(m);

    static const struct {
        const char *spec, *why;
    } bad[] = {
        {"disk=hdd-9000", "unknown disk (use hdd-7200, hdd-5400, sata-ssd or nvme)"},
        {"disk=nvme,qd=0", "expected a queue depth from 1 to 256"},
        {"qd=300", "expected a queue depth"},
        {"rpm=fast", "expected revolutions per minute"},
        {"seek=-3", "expected a time"},
        {"seek=5min", "unknown time unit"},
        {"disk=nvme,disk=hdd-7200", "disk given twice"},
        {"disk=hdd-7200,read-eio=0+4K", "cannot share a spec with throttle"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct member *f = NULL, *orig;
        CHECK(member_open_file(path, 0, &f) == 0);
        orig = f;
        char why[256] = "";
        int rc = member_apply_spec(&f, bad[i].spec, why, sizeof why);
        CHECK(rc == -EINVAL && strstr(why, bad[i].why) && f == orig, "'%s': rc %d, '%s'", bad[i].spec, rc, why);
        printf("  '%s' -> %s\n", bad[i].spec, why);
        member_close(f);
    }
}

int main(int argc, char **argv)
{
    harness_init(argc, argv, "test_diskmodel");
    rng_seed(&rng, harness_seed());
    if (getenv("URAID_TEST_QUICK"))
        loose = 1.5;
    snprintf(path, sizeof path, "/dev/shm/uraid-diskmodel-%d.img", (int)getpid());
    shadow = malloc(MEMBER_BYTES);
    rng_fill(&rng, shadow, MEMBER_BYTES);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && pwrite(fd, shadow, MEMBER_BYTES, 0) == MEMBER_BYTES, "create %s", path);
    if (fd >= 0)
        close(fd);

    static const struct preset_case cases[] = {
        {"hdd-7200", 24, 24, 60, 120, 2.0},
        {"hdd-5400", 16, 16, 40, 80, 2.0},
        {"sata-ssd", 64, 1500, 5000, 15000, 2.0},
        {"nvme", 256, 3000, 15000, 60000, 2.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        harness_beginf("disk=%s: streaming rate and random 4 KiB IOPS", cases[i].name);
        test_preset(&cases[i]);
        harness_end();
    }
    /* 8 waiting: the nearest is ~1/16 of the disk away, a third of the
     * average seek: x1.45 in the model */
    harness_begin("disk=hdd-7200: 8 threads, qd 1 in arrival order, qd 32 nearest first");
    test_queue("hdd-7200", "", 8, 8, 4096, 1.2);
    harness_end();
    /* 64 KiB: 80 us + 131 us at qd 1; overlapped, the 131 us transfers on
     * one channel: x1.6 in the model, at a rate this machine can copy */
    harness_begin("disk=sata-ssd: 4 threads of 64 KiB, qd 32 overlaps the latency, shares the channel");
    test_queue("sata-ssd", "", 4, 300, 65536, 1.3);
    harness_end();
    /* 8 threads at qd 64 run 8 at once: x8 in the model; with 20 us the
     * machine, not the model, would be the limit (~200k IOPS) */
    harness_begin("disk=nvme,latency=500us: 8 threads, qd 64 serves them at once");
    test_queue("nvme", ",latency=500us", 8, 100, 4096, 4.0);
    harness_end();
    harness_begin("disk=hdd-7200: a skip within a revolution waits on the track, a longer one seeks");
    test_skip();
    harness_end();
    harness_begin("disk keys: overrides, explicit seek, writes, bad keys refused");
    test_keys();
    harness_end();

    unlink(path);
    free(shadow);
    return harness_finish();
}
