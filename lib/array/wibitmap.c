/* md's internal write-intent bitmap, kept up to date while the array is
 * written (see wibitmap.h for the chunk states). The bitmap lock guards the
 * page buffers and every change of the ONDISK and WANT flags; writes whose
 * chunks are already ONDISK only touch their chunk's counter.
 * Lock order: meta_lock, then the bitmap lock; a member that fails a bitmap
 * write is marked faulty only after the bitmap lock is released, because
 * that takes meta_lock and writes superblocks (and with them our header). */
#include "array/wibitmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array/array.h"
#include "log.h"
#include "meta/bitmap.h"

#define W_COUNT 0x00ffffffu
#define W_AGE1 0x01000000u
#define W_AGE 0x03000000u
#define W_NEEDED 0x10000000u
#define W_WANT 0x20000000u
#define W_ONDISK 0x40000000u
#define PAGE 4096u
#define CHUNKS_PER_MD_PAGE 2048u /* md's counters: 4 KiB of 16-bit counters */

struct wibitmap {
    struct md_bitmap_sb hdr;   /* what page 0 carries; events follow the superblocks */
    uint64_t chunk_sectors, nbits;
    uint64_t base;             /* byte offset of the bitmap on every member (sb + bitmap_offset) */
    uint32_t *w;               /* one word per chunk (atomics) */
    size_t area, npages;
    uint8_t *buf;              /* header + bits, npages * PAGE */
    uint8_t *page_dirty;
    /* the member each slot held when it last got every page: a member new in
     * a slot (spare, replacement) gets a full copy before its first update */
    struct member *copy[URAID_MAX_MEMBERS];
    pthread_mutex_t lock;
    int stale_at_open;
    uint64_t daemon_ms;
    pthread_t thr;
    int thr_started, stop;
    pthread_mutex_t dmu;
    pthread_cond_t dcv;
};

static uint64_t chunk_of(const struct wibitmap *wb, uint64_t sector)
{
    uint64_t c = sector / wb->chunk_sectors;
    return c < wb->nbits ? c : wb->nbits - 1;
}

static size_t page_of_bit(uint64_t b) { return (size_t)((MD_BITMAP_HEADER_BYTES + b / 8) / PAGE); }

static size_t page_len(const struct wibitmap *wb, size_t p)
{
    size_t off = p * PAGE;
    return wb->area - off < PAGE ? wb->area - off : PAGE;
}

/* Page p of the buffer from the words (ONDISK or WANT = bit set). */
static void fill_page(struct wibitmap *wb, size_t p)
{
    uint8_t *pg = wb->buf + p * PAGE;
    memset(pg, 0, PAGE);
    size_t first = p * PAGE;
    if (p == 0) {
        md_bitmap_encode(&wb->hdr, pg);
        first = MD_BITMAP_HEADER_BYTES;
    }
    uint64_t b0 = (uint64_t)(first - MD_BITMAP_HEADER_BYTES) * 8, b1 = (uint64_t)((p + 1) * PAGE - MD_BITMAP_HEADER_BYTES) * 8;
    if (b1 > wb->nbits)
        b1 = wb->nbits;
    uint8_t *bits = wb->buf + MD_BITMAP_HEADER_BYTES;
    for (uint64_t b = b0; b < b1; b++)
        if (__atomic_load_n(&wb->w[b], __ATOMIC_ACQUIRE) & (W_ONDISK | W_WANT))
            md_bitmap_put(bits, b, 1);
}

static int slot_carries_bitmap(struct uraid_array *a, int s, struct member **dev)
{
    *dev = __atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE);
    enum uraid_member_state st = __atomic_load_n(&a->slot[s].state, __ATOMIC_ACQUIRE);
    return *dev && (st == URAID_MEMBER_IN_SYNC || st == URAID_MEMBER_REBUILDING);
}

/* Writes the dirty pages (every page to a member without a full copy) to
 * every working member (a shrink's leaving ones too: md writes its bitmap to
 * every member it holds) and flushes them. Under the bitmap lock. Returns how
 * many members took them; failed[s] gets the error of each that did not. */
static int write_pages(struct uraid_array *a, struct wibitmap *wb, int *failed)
{
    int need_full = 0;
    struct member *dev;
    for (int s = 0; s < array_nslots(a); s++)
        if (slot_carries_bitmap(a, s, &dev) && wb->copy[s] != dev)
            need_full = 1;
    for (size_t p = 0; p < wb->npages; p++)
        if (need_full || wb->page_dirty[p])
            fill_page(wb, p);
    int written = 0;
    for (int s = 0; s < array_nslots(a); s++) {
        if (!slot_carries_bitmap(a, s, &dev))
            continue;
        int full = wb->copy[s] != dev, rc = 0;
        for (size_t p = 0; p < wb->npages && rc == 0; p++)
            if (full || wb->page_dirty[p])
                rc = member_write(dev, wb->buf + p * PAGE, page_len(wb, p), wb->base + p * PAGE);
        if (rc == 0)
            rc = member_flush(dev);
        if (rc) {
            failed[s] = rc;
            wb->copy[s] = NULL;
        } else {
            wb->copy[s] = dev;
            written++;
        }
    }
    memset(wb->page_dirty, 0, wb->npages);
    return written;
}

/* After the bitmap lock is released: members that could not take the
 * bitmap are failed like any member that fails a write. */
static void report_failed(struct uraid_array *a, const struct wibitmap *wb, const int *failed)
{
    for (int s = 0; s < array_nslots(a); s++)
        if (failed[s]) {
            struct member *dev = __atomic_load_n(&a->slot[s].dev, __ATOMIC_ACQUIRE);
            uraid_log(URAID_LOG_ERROR, "member %s: cannot write its write-intent bitmap at sector %llu: %s",
                      dev ? dev->path : "?", (unsigned long long)(wb->base / 512), uraid_strerror(failed[s]));
            array_member_failed(a, s, failed[s], "writing its write-intent bitmap");
        }
}

static int array_degraded(struct uraid_array *a)
{
    for (int s = 0; s < a->geom.raid_disks; s++)
        if (!slot_ok(a, s))
            return 1;
    return 0;
}

/* ---- the write path -------------------------------------------------------- */

/* One more write in chunk word *w if its bit is on disk; the idle age
 * starts again. 0 when the slow path must set the bit first. */
static int hot_inc(uint32_t *w)
{
    uint32_t old = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    for (;;) {
        if (!(old & W_ONDISK))
            return 0;
        uint32_t nw = (old & ~W_AGE) + 1;
        if (__atomic_compare_exchange_n(w, &old, nw, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return 1;
    }
}

uint64_t wib_area_bytes(struct uraid_array *a)
{
    return a->bitmap ? a->bitmap->area : 0;
}

/* A reshape's old geometry (a->parent) writes under the parent's bitmap:
 * its bits index member sectors past the data offset in either geometry,
 * as md's sh->sector does. */
int wib_start_write(struct uraid_array *a, uint64_t start, uint64_t end)
{
    if (a->parent)
        a = a->parent;
    struct wibitmap *wb = a->bitmap;
    if (!wb || end <= start)
        return 0;
    uint64_t c0 = chunk_of(wb, start), c1 = chunk_of(wb, end - 1), c = c0;
    while (c <= c1 && hot_inc(&wb->w[c]))
        c++;
    if (c > c1)
        return 0;
    int failed[URAID_MAX_MEMBERS] = {0}, written = 1, any = 0;
    pthread_mutex_lock(&wb->lock);
    for (uint64_t i = c; i <= c1; i++)
        if (!(__atomic_load_n(&wb->w[i], __ATOMIC_ACQUIRE) & W_ONDISK)) {
            __atomic_or_fetch(&wb->w[i], W_WANT, __ATOMIC_ACQ_REL);
            wb->page_dirty[page_of_bit(i)] = 1;
            any = 1;
        }
    if (any)
        written = write_pages(a, wb, failed);
    /* under the lock the daemon cannot clear ONDISK, so the counts taken
     * here keep the bits set until these writes end */
    for (uint64_t i = c; i <= c1; i++) {
        uint32_t old = __atomic_load_n(&wb->w[i], __ATOMIC_ACQUIRE), nw;
        do
            nw = written ? ((old & ~(W_WANT | W_AGE)) | W_ONDISK) + 1 : old & ~W_WANT;
        while (!__atomic_compare_exchange_n(&wb->w[i], &old, nw, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    }
    pthread_mutex_unlock(&wb->lock);
    report_failed(a, wb, failed);
    if (written)
        return 0;
    for (uint64_t i = c0; i < c; i++)
        __atomic_sub_fetch(&wb->w[i], 1, __ATOMIC_ACQ_REL);
    uraid_log(URAID_LOG_ERROR, "no member took the write-intent bitmap for member sectors %llu-%llu: the write is "
              "refused; check the members, then reopen the array",
              (unsigned long long)start, (unsigned long long)(end - 1));
    return -EIO;
}

void wib_end_write(struct uraid_array *a, uint64_t start, uint64_t end)
{
    if (a->parent)
        a = a->parent;
    struct wibitmap *wb = a->bitmap;
    if (!wb || end <= start)
        return;
    for (uint64_t c = chunk_of(wb, start), c1 = chunk_of(wb, end - 1); c <= c1; c++)
        __atomic_sub_fetch(&wb->w[c], 1, __ATOMIC_ACQ_REL);
}

/* ---- clearing ---------------------------------------------------------------- */

/* Clears the bits of chunks without writes in flight or a pending resync:
 * at once with force, else after they stayed idle across two passes (md
 * clears after one to two daemon_sleep periods). Never while the array is
 * degraded: a member that comes back needs the bits to catch up. */
static int clear_pass(struct uraid_array *a, struct wibitmap *wb, int force)
{
    if (array_degraded(a))
        return 0;
    int failed[URAID_MAX_MEMBERS] = {0};
    uint64_t n = 0;
    pthread_mutex_lock(&wb->lock);
    for (uint64_t c = 0; c < wb->nbits; c++) {
        uint32_t old = __atomic_load_n(&wb->w[c], __ATOMIC_ACQUIRE);
        if (!(old & W_ONDISK) || (old & (W_COUNT | W_NEEDED | W_WANT)))
            continue;
        if (!force && (old & W_AGE) < W_AGE1) {
            __atomic_compare_exchange_n(&wb->w[c], &old, old + W_AGE1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        } else if (__atomic_compare_exchange_n(&wb->w[c], &old, old & ~(W_ONDISK | W_AGE), 0, __ATOMIC_ACQ_REL,
                                               __ATOMIC_ACQUIRE)) {
            wb->page_dirty[page_of_bit(c)] = 1;
            n++;
        }
    }
    int rc = 0;
    if (n) {
        /* md's events_cleared: the events at which bits were last cleared */
        wb->hdr.events_cleared = wb->hdr.events;
        wb->page_dirty[0] = 1;
        rc = write_pages(a, wb, failed) ? 0 : -EIO;
    }
    pthread_mutex_unlock(&wb->lock);
    report_failed(a, wb, failed);
    return rc;
}

static void *daemon_main(void *arg)
{
    struct uraid_array *a = arg;
    struct wibitmap *wb = a->bitmap;
    pthread_mutex_lock(&wb->dmu);
    while (!wb->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + wb->daemon_ms * 1000000ull;
        ts.tv_sec += (time_t)(ns / 1000000000ull);
        ts.tv_nsec = (long)(ns % 1000000000ull);
        pthread_cond_timedwait(&wb->dcv, &wb->dmu, &ts);
        if (wb->stop)
            break;
        pthread_mutex_unlock(&wb->dmu);
        clear_pass(a, wb, 0);
        pthread_mutex_lock(&wb->dmu);
    }
    pthread_mutex_unlock(&wb->dmu);
    return NULL;
}

static void daemon_start(struct uraid_array *a, struct wibitmap *wb)
{
    if (pthread_create(&wb->thr, NULL, daemon_main, a) == 0)
        wb->thr_started = 1;
    else
        uraid_log(URAID_LOG_WARN, "cannot start the bitmap daemon: bits are cleared only at close");
}

static void daemon_stop(struct wibitmap *wb)
{
    if (!wb->thr_started)
        return;
    pthread_mutex_lock(&wb->dmu);
    wb->stop = 1;
    pthread_cond_signal(&wb->dcv);
    pthread_mutex_unlock(&wb->dmu);
    pthread_join(wb->thr, NULL);
    wb->thr_started = 0;
}

int wib_clear_idle(struct uraid_array *a)
{
    return a->bitmap ? clear_pass(a, a->bitmap, 1) : 0;
}

void wib_write_header(struct uraid_array *a)
{
    struct wibitmap *wb = a->bitmap;
    if (!wb || a->readonly)
        return;
    int failed[URAID_MAX_MEMBERS] = {0};
    pthread_mutex_lock(&wb->lock);
    wb->hdr.events = a->sb.events; /* the caller holds meta_lock */
    if (wb->hdr.events_cleared > wb->hdr.events)
        wb->hdr.events_cleared = wb->hdr.events;
    wb->page_dirty[0] = 1;
    write_pages(a, wb, failed);
    pthread_mutex_unlock(&wb->lock);
    /* meta_lock is held: the superblock writes that follow meet the same
     * member and fail it through their own path */
    for (int s = 0; s < array_nslots(a); s++)
        if (failed[s])
            uraid_log(URAID_LOG_ERROR, "member %s: cannot write its write-intent bitmap header: %s",
                      a->slot[s].dev ? a->slot[s].dev->path : "?", uraid_strerror(failed[s]));
}

/* ---- resync ---------------------------------------------------------------------- */

int wib_next_needed(struct uraid_array *a, uint64_t pos, uint64_t *run_start, uint64_t *run_end)
{
    struct wibitmap *wb = a->bitmap;
    if (!wb)
        return 0;
    uint64_t c = pos / wb->chunk_sectors;
    while (c < wb->nbits && !(__atomic_load_n(&wb->w[c], __ATOMIC_ACQUIRE) & W_NEEDED))
        c++;
    if (c >= wb->nbits)
        return 0;
    uint64_t e = c;
    while (e < wb->nbits && (__atomic_load_n(&wb->w[e], __ATOMIC_ACQUIRE) & W_NEEDED))
        e++;
    *run_start = c * wb->chunk_sectors;
    *run_end = e * wb->chunk_sectors;
    if (*run_start < pos)
        *run_start = pos;
    return 1;
}

/* The chunks a re-added member may have missed: every bit set (on disk or
 * being set) or with writes in flight, or still NEEDED by a resync. */
static int chunk_dirty(uint32_t w) { return (w & (W_ONDISK | W_WANT | W_COUNT | W_NEEDED)) != 0; }

int wib_next_dirty(struct uraid_array *a, uint64_t pos, uint64_t *run_start, uint64_t *run_end)
{
    struct wibitmap *wb = a->bitmap;
    if (!wb)
        return 0;
    uint64_t c = pos / wb->chunk_sectors;
    while (c < wb->nbits && !chunk_dirty(__atomic_load_n(&wb->w[c], __ATOMIC_ACQUIRE)))
        c++;
    if (c >= wb->nbits)
        return 0;
    uint64_t e = c;
    while (e < wb->nbits && chunk_dirty(__atomic_load_n(&wb->w[e], __ATOMIC_ACQUIRE)))
        e++;
    *run_start = c * wb->chunk_sectors;
    *run_end = e * wb->chunk_sectors;
    if (*run_start < pos)
        *run_start = pos;
    return 1;
}

void wib_resync_done(struct uraid_array *a)
{
    struct wibitmap *wb = a->bitmap;
    if (!wb)
        return;
    for (uint64_t c = 0; c < wb->nbits; c++)
        __atomic_and_fetch(&wb->w[c], ~W_NEEDED, __ATOMIC_ACQ_REL);
    clear_pass(a, wb, 1);
}

/* ---- opening, creating, info --------------------------------------------------- */

static struct wibitmap *wib_alloc(uint64_t nbits)
{
    struct wibitmap *wb = calloc(1, sizeof *wb);
    if (!wb)
        return NULL;
    wb->nbits = nbits;
    wb->area = md_bitmap_area_bytes(nbits);
    wb->npages = (wb->area + PAGE - 1) / PAGE;
    wb->w = calloc(nbits ? nbits : 1, sizeof *wb->w);
    wb->buf = aligned_alloc(PAGE, wb->npages * PAGE);
    wb->page_dirty = calloc(wb->npages, 1);
    if (!wb->w || !wb->buf || !wb->page_dirty) {
        free(wb->w);
        free(wb->buf);
        free(wb->page_dirty);
        free(wb);
        return NULL;
    }
    memset(wb->buf, 0, wb->npages * PAGE);
    pthread_mutex_init(&wb->lock, NULL);
    pthread_mutex_init(&wb->dmu, NULL);
    pthread_cond_init(&wb->dcv, NULL);
    return wb;
}

static void wib_destroy(struct wibitmap *wb)
{
    if (!wb)
        return;
    pthread_mutex_destroy(&wb->lock);
    pthread_mutex_destroy(&wb->dmu);
    pthread_cond_destroy(&wb->dcv);
    free(wb->w);
    free(wb->buf);
    free(wb->page_dirty);
    free(wb);
}

/* Reads and decodes one member's bitmap header. */
static int read_copy(struct member *m, uint64_t base, struct md_bitmap_sb *hdr, char *reason, size_t rlen)
{
    uint8_t head[512] __attribute__((aligned(4096)));
    int rc = member_read(m, head, sizeof head, base);
    if (rc) {
        uraid_why(reason, rlen, "cannot read it: %s", uraid_strerror(rc));
        return rc;
    }
    return md_bitmap_decode(head, hdr, reason, rlen);
}

int wib_open(struct uraid_array *a, const struct uraid_open_params *p, char *why, size_t whylen)
{
    if (!(a->sb.feature_map & MD_FEATURE_BITMAP_OFFSET) || a->geom.level <= 0)
        return 0;
    uint64_t base = (a->sb.super_offset + (uint64_t)(int64_t)a->sb.bitmap_offset) * 512;
    struct md_bitmap_sb hdr, h;
    int have = -1;
    char reason[200] = "";
    for (int s = 0; s < a->geom.raid_disks; s++) {
        if (!slot_ok(a, s))
            continue;
        int rc = read_copy(a->slot[s].dev, base, &h, reason, sizeof reason);
        if (rc && rc != -EINVAL) {
            /* md reads the bitmap from any member that can: another copy serves */
            uraid_log(URAID_LOG_WARN, "member %s: %s (its write-intent bitmap at sector %llu); using the other copies",
                      a->slot[s].dev->path, reason, (unsigned long long)(base / 512));
            continue;
        }
        if (rc) {
            uraid_why(why, whylen, "member %s: its write-intent bitmap at sector %llu is unusable: %s; remove the "
                      "bitmap (mdadm --grow --bitmap=none) or leave the member out", a->slot[s].dev->path,
                      (unsigned long long)(base / 512), reason);
            return rc;
        }
        uint8_t want[16];
        md_sb_bitmap_uuid(&a->sb, want);
        if (memcmp(h.uuid, want, 16)) {
            uraid_why(why, whylen, "member %s: its write-intent bitmap belongs to another array (UUID differs)",
                      a->slot[s].dev->path);
            return -EINVAL;
        }
        if (have < 0 || h.events > hdr.events) {
            hdr = h;
            have = s;
        }
    }
    if (have < 0)
        return 0; /* no member in sync: nothing to trust, nothing to write */
    uint64_t chunk_sectors = hdr.chunksize / 512;
    /* md's RAID-10 bitmap counts array sectors (resync_max_sectors), the others member sectors */
    uint64_t span = a->r10 ? a->size_sectors : a->member_sectors;
    uint64_t nbits = (span + chunk_sectors - 1) / chunk_sectors;
    struct wibitmap *wb = wib_alloc(nbits ? nbits : 1);
    if (!wb) {
        uraid_why(why, whylen, "out of memory for the write-intent bitmap");
        return -ENOMEM;
    }
    wb->hdr = hdr;
    wb->hdr.sync_size = span; /* md keeps it in step with the array on load */
    wb->chunk_sectors = chunk_sectors;
    wb->base = base;
    /* every in-sync copy's bits: a bit set on any member is a write that may not have finished */
    uint8_t *tmp = aligned_alloc(PAGE, wb->npages * PAGE);
    if (!tmp) {
        wib_destroy(wb);
        uraid_why(why, whylen, "out of memory for the write-intent bitmap");
        return -ENOMEM;
    }
    for (int s = 0; s < a->geom.raid_disks; s++) {
        if (!slot_ok(a, s))
            continue;
        if (member_read(a->slot[s].dev, tmp, wb->area, base))
            continue; /* warned above, or a read error now: the other copies serve */
        for (uint64_t b = 0; b < nbits; b++)
            if (md_bitmap_test(tmp + MD_BITMAP_HEADER_BYTES, b))
                wb->w[b] = W_ONDISK;
    }
    free(tmp);
    wb->stale_at_open = hdr.events < a->sb.events || hdr.events > a->sb.events + 1 ||
                        (hdr.state & MD_BITMAP_STATE_STALE);
    if (wb->stale_at_open) {
        uraid_log(URAID_LOG_WARN,
                  "the write-intent bitmap is out of date (events %llu, superblocks %llu%s): %s",
                  (unsigned long long)hdr.events, (unsigned long long)a->sb.events,
                  (hdr.state & MD_BITMAP_STATE_STALE) ? ", marked stale" : "",
                  a->opened_dirty ? "the resync covers the whole array" : "its bits are cleared");
        for (uint64_t b = 0; b < nbits; b++)
            wb->w[b] = a->opened_dirty ? W_ONDISK : 0;
        wb->hdr.state &= ~MD_BITMAP_STATE_STALE;
        wb->hdr.events = a->sb.events;
        if (wb->hdr.events_cleared > wb->hdr.events)
            wb->hdr.events_cleared = wb->hdr.events;
        memset(wb->page_dirty, 1, wb->npages);
    }
    if (a->opened_dirty)
        for (uint64_t b = 0; b < nbits; b++)
            if (wb->w[b] & W_ONDISK)
                wb->w[b] |= W_NEEDED;
    a->bitmap = wb;
    if (a->readonly)
        return 0;
    if (wb->stale_at_open) {
        int failed[URAID_MAX_MEMBERS] = {0};
        pthread_mutex_lock(&wb->lock);
        write_pages(a, wb, failed);
        pthread_mutex_unlock(&wb->lock);
        report_failed(a, wb, failed);
    }
    wb->daemon_ms = p && p->bitmap_daemon_ms ? p->bitmap_daemon_ms
                                             : (uint64_t)(hdr.daemon_sleep ? hdr.daemon_sleep : MD_BITMAP_DAEMON_SLEEP) * 1000;
    daemon_start(a, wb);
    return 0;
}

void wib_free(struct uraid_array *a)
{
    struct wibitmap *wb = a->bitmap;
    if (!wb)
        return;
    daemon_stop(wb);
    a->bitmap = NULL;
    wib_destroy(wb);
}

/* The bitmap of a member size grown to new_span: the old bits in chunks of
 * new_chunk sectors, the new region's chunks set and NEEDED. */
static struct wibitmap *resized(const struct wibitmap *old, uint64_t old_span, uint64_t new_span, uint64_t new_chunk)
{
    struct wibitmap *wb = wib_alloc((new_span + new_chunk - 1) / new_chunk);
    if (!wb)
        return NULL;
    wb->hdr = old->hdr;
    wb->hdr.chunksize = (uint32_t)(new_chunk * 512);
    wb->hdr.sync_size = new_span;
    wb->chunk_sectors = new_chunk;
    wb->base = old->base;
    wb->daemon_ms = old->daemon_ms;
    for (uint64_t c = 0; c < old->nbits; c++)
        if (chunk_dirty(__atomic_load_n(&old->w[c], __ATOMIC_ACQUIRE)))
            wb->w[c * old->chunk_sectors / new_chunk] |= W_ONDISK;
    for (uint64_t c = old_span / new_chunk; c < wb->nbits; c++)
        wb->w[c] = W_ONDISK | W_NEEDED;
    memset(wb->page_dirty, 1, wb->npages);
    return wb;
}

int wib_resize(struct uraid_array *a, uint64_t new_span, char *why, size_t whylen)
{
    struct wibitmap *old = a->bitmap;
    if (!old || new_span <= a->member_sectors)
        return 0;
    uint64_t chunk = md_bitmap_resize_chunk(old->chunk_sectors, a->member_sectors, new_span);
    struct wibitmap *wb = resized(old, a->member_sectors, new_span, chunk);
    if (!wb) {
        uraid_why(why, whylen, "out of memory for the resized write-intent bitmap");
        return -ENOMEM;
    }
    int failed[URAID_MAX_MEMBERS] = {0}, rc = 0;
    pthread_mutex_lock(&wb->lock);
    write_pages(a, wb, failed); /* every member: none has a copy of this one yet */
    pthread_mutex_unlock(&wb->lock);
    for (int s = 0; s < a->geom.raid_disks && rc == 0; s++)
        if ((rc = failed[s]) != 0)
            uraid_why(why, whylen, "member %s: cannot write the resized write-intent bitmap at sector %llu: %s",
                      a->slot[s].dev->path, (unsigned long long)(wb->base / 512), uraid_strerror(rc));
    if (rc) {
        wib_destroy(wb);
        return rc;
    }
    if (chunk != old->chunk_sectors)
        uraid_log(URAID_LOG_INFO, "write-intent bitmap chunk %llu KiB -> %llu KiB to cover %llu KiB per member in "
                  "its %zu bytes", (unsigned long long)(old->chunk_sectors / 2), (unsigned long long)(chunk / 2),
                  (unsigned long long)(new_span / 2), old->area);
    daemon_stop(old);
    a->bitmap = wb;
    wib_destroy(old);
    daemon_start(a, wb);
    return 0;
}

void wib_get_info(struct uraid_array *a, struct wib_info *info)
{
    memset(info, 0, sizeof *info);
    struct wibitmap *wb = a->bitmap;
    if (!wb)
        return;
    info->present = 1;
    info->bits = wb->nbits;
    info->pages = (wb->nbits + CHUNKS_PER_MD_PAGE - 1) / CHUNKS_PER_MD_PAGE;
    info->stale_at_open = wb->stale_at_open;
    pthread_mutex_lock(&wb->lock);
    info->chunk_bytes = wb->hdr.chunksize;
    info->events = wb->hdr.events;
    info->events_cleared = wb->hdr.events_cleared;
    pthread_mutex_unlock(&wb->lock);
    uint64_t used_page = UINT64_MAX;
    for (uint64_t c = 0; c < wb->nbits; c++) {
        uint32_t w = __atomic_load_n(&wb->w[c], __ATOMIC_ACQUIRE);
        info->dirty += (w & W_ONDISK) != 0;
        if ((w & (W_ONDISK | W_COUNT)) && c / CHUNKS_PER_MD_PAGE != used_page) {
            used_page = c / CHUNKS_PER_MD_PAGE;
            info->pages_used++;
        }
    }
}

int wib_write_fresh(struct uraid_array *a, const struct md_bitmap_sb *hdr)
{
    uint64_t chunk_sectors = hdr->chunksize / 512;
    struct wibitmap *wb = wib_alloc((hdr->sync_size + chunk_sectors - 1) / chunk_sectors);
    if (!wb)
        return -ENOMEM;
    wb->hdr = *hdr;
    wb->chunk_sectors = chunk_sectors;
    wb->base = (a->sb.super_offset + (uint64_t)(int64_t)a->sb.bitmap_offset) * 512;
    int failed[URAID_MAX_MEMBERS] = {0}, rc = 0;
    write_pages(a, wb, failed);
    for (int s = 0; s < a->geom.raid_disks && rc == 0; s++)
        rc = failed[s];
    wib_destroy(wb);
    return rc;
}
