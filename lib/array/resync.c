/* Resync: after an unclean shutdown (the array found dirty, resync_offset
 * not MaxSector) parity may disagree with the data where writes were in
 * flight. md recomputes parity from the data over the whole array when
 * such an array starts; so does this job (array_resync_range, stripe by
 * stripe under the stripes' locks, while users go on). With a write-intent
 * bitmap that md would trust, only the chunks whose bits were set at open
 * are resynced (md's bitmap-guided resync), and their bits are cleared at
 * the end. When it finishes the array is no longer "opened dirty", and the
 * next clean close records it clean in every member. */
#include <errno.h>

#include "array/dataio.h"
#include "log.h"

static int resync_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec)
{
    int rc = array_resync_range(a, start, nsec);
    if (rc)
        job_fail(j, "member sectors %llu-%llu could not be resynced: %s", (unsigned long long)start,
                 (unsigned long long)(start + nsec - 1), uraid_strerror(rc));
    return rc;
}

static int resync_finish(struct uraid_array *a, struct array_job *j, int rc)
{
    if (rc)
        return rc;
    pthread_mutex_lock(&a->meta_lock);
    a->opened_dirty = 0; /* a clean close may now say so on disk */
    pthread_mutex_unlock(&a->meta_lock);
    wib_resync_done(a);
    uraid_log(URAID_LOG_INFO, "resync finished: parity agrees with the data again");
    return 0;
}

int resync_prepare(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                   size_t whylen)
{
    (void)p;
    if (!a->opened_dirty) {
        uraid_why(why, whylen, "nothing to resync: the array was shut down cleanly");
        return -EINVAL;
    }
    j->step = a->geom.level == 1 ? raid1_copy_step : a->r10 ? raid10_scrub_step : resync_step;
    if (a->r10)
        j->end = a->size_sectors; /* md's RAID-10 resync walks array sectors (so does resync_offset) */
    j->finish = resync_finish;
    if (a->bitmap)
        j->next = wib_next_needed;
    else if (!a->r10 && a->resync_from < j->end) /* md's checkpoint (e.g. a grown size: the new region) */
        j->start = a->geom.level == 1 ? a->resync_from / 128 * 128
                                      : a->resync_from / a->geom.chunk_sectors * a->geom.chunk_sectors;
    return 0;
}
