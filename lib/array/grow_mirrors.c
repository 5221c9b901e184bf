/* A served RAID-1 gaining mirrors (mdadm --grow --raid-devices N --add
 * NEW... on a running RAID-1: uraid_grow_online and the control socket's
 * grow come here for RAID-1), as md's raid1_reshape does it:
 *   1. every check first (RAID-1, N more mirrors than now, one new member
 *      per new slot, no job running); a refusal writes nothing;
 *   2. the new members added as spares (their superblocks, then every
 *      member's: manage.c's add);
 *   3. with no request in flight (geom_lock held for writing) and no job
 *      running (job_lock): raid_disks = N, the new slots empty (the array
 *      degraded, as raid1_reshape leaves it), every superblock written
 *      (events + 1);
 *   4. the recovery job puts the spares into the empty slots (rebuild.c),
 *      as md's recovery does after raid1_reshape.
 * A kill after 3 leaves md's record: N slots, the new members spares; the
 * next open (uraid's, whose monitor recovers them, or md's) fills them. A
 * kill between 2 and 3 leaves spares of the old array: the same grow again
 * finds them (a member already a spare is not added twice). */
#include <errno.h>
#include <string.h>

#include "array/array.h"
#include "array/job.h"
#include "log.h"
#include "uraid_grow.h"

struct mirrors {
    int N;
};

static int spare_named(struct uraid_array *a, const char *path)
{
    int slot, extra;
    pthread_mutex_lock(&a->meta_lock);
    int found = array_find_member(a, path, &slot, &extra) == 0 && extra >= 0 &&
                a->extra[extra].state == URAID_MEMBER_SPARE;
    pthread_mutex_unlock(&a->meta_lock);
    return found;
}

/* Step 3: under job_lock with no job running. */
static int widen(struct uraid_array *a, void *ctx)
{
    const struct mirrors *m = ctx;
    pthread_rwlock_wrlock(&a->geom_lock); /* the requests in flight end first */
    pthread_mutex_lock(&a->meta_lock);
    int from = a->geom.raid_disks;
    for (int s = from; s < m->N; s++) {
        memset(&a->slot[s], 0, sizeof a->slot[s]);
        a->slot[s].state = URAID_MEMBER_MISSING;
    }
    a->geom.raid_disks = m->N;
    a->sb.raid_disks = (uint32_t)m->N;
    a->nparity = m->N - 1;
    pthread_mutex_unlock(&a->meta_lock);
    int rc = array_write_superblocks(a);
    pthread_rwlock_unlock(&a->geom_lock);
    if (rc == 0)
        uraid_log(URAID_LOG_INFO, "RAID-1: %d mirrors (was %d); the new ones are recovered from the others", m->N, from);
    return rc;
}

/* A working member is in slot s: a mirror md would not drop (failed or removed it may go). */
static int slot_holds_member(const struct uraid_array *a, int s)
{
    return a->slot[s].dev && a->slot[s].state != URAID_MEMBER_MISSING && a->slot[s].state != URAID_MEMBER_FAULTY;
}

/* Fewer mirrors (md's raid1_reshape): the slots from N up, empty, dropped
 * with no request in flight; under job_lock with no job running. */
static int narrow(struct uraid_array *a, void *ctx)
{
    const struct mirrors *m = ctx;
    pthread_rwlock_wrlock(&a->geom_lock);
    pthread_mutex_lock(&a->meta_lock);
    int from = a->geom.raid_disks, rc = 0;
    for (int s = m->N; s < from && rc == 0; s++)
        if (slot_holds_member(a, s))
            rc = -EBUSY; /* a member came back meanwhile */
    if (rc == 0) {
        md_sb_drop_slots(&a->sb, (uint32_t)m->N);
        a->geom.raid_disks = m->N;
        a->nparity = m->N - 1;
    }
    pthread_mutex_unlock(&a->meta_lock);
    if (rc == 0)
        rc = array_write_superblocks(a);
    pthread_rwlock_unlock(&a->geom_lock);
    if (rc == 0)
        uraid_log(URAID_LOG_INFO, "RAID-1: %d mirrors (was %d); the empty slots dropped", m->N, from);
    return rc;
}

static int drop_mirrors(struct uraid_array *a, int N, int nadded, char *why, size_t whylen)
{
    int n = a->geom.raid_disks, insync = 0;
    if (N < 1 || nadded)
        return uraid_why(why, whylen, "a RAID-1 of %d mirrors takes no new member", N), -EINVAL;
    for (int s = 0; s < n; s++) {
        if (s >= N && slot_holds_member(a, s))
            return uraid_why(why, whylen, "slot %d holds mirror %s: md drops a mirror only from an empty slot; fail "
                             "and remove it first (uraid fail, uraid remove), then --raid-devices %d", s,
                             a->slot[s].dev ? a->slot[s].dev->path : "?", N), -EBUSY;
        insync += s < N && slot_ok(a, s);
    }
    if (!insync)
        return uraid_why(why, whylen, "no mirror in slots 0-%d holds the data: --raid-devices %d would leave none",
                         N - 1, N), -EINVAL;
    int rc = array_job_refuse_running(a, why, whylen);
    struct mirrors m = {.N = N};
    if (rc == 0)
        rc = array_job_exclusive(a, narrow, &m, why, whylen);
    if (rc == -EBUSY && !why[0])
        uraid_why(why, whylen, "a member came back into the slots to drop: fail and remove it first");
    return rc;
}

int array_grow_mirrors_online(struct uraid_array *a, int N, const char *const *added, int nadded, char *why,
                              size_t whylen)
{
    int n = a->geom.raid_disks;
    if (a->readonly)
        return uraid_why(why, whylen, "the array is open read-only"), -EROFS;
    if (N < n)
        return drop_mirrors(a, N, nadded, why, whylen);
    if (N == n)
        return uraid_why(why, whylen, "the RAID-1 has %d mirrors already: nothing to do", n), -EALREADY;
    if (nadded != N - n)
        return uraid_why(why, whylen, "--raid-devices %d needs %d new member%s (--add), %d given", N, N - n,
                         N - n == 1 ? "" : "s", nadded), -EINVAL;
    if (N > URAID_MAX_MEMBERS || N > (int)a->sb.max_dev)
        return uraid_why(why, whylen, "RAID-1 of %d mirrors: at most %d", N, URAID_MAX_MEMBERS), -EINVAL;
    int rc = array_job_refuse_running(a, why, whylen);
    for (int i = 0; rc == 0 && i < nadded; i++) {
        if (!spare_named(a, added[i])) /* (added before a kill, or by hand) */
            rc = uraid_add_spare(a, added[i], why, whylen);
        rc = rc < 0 ? rc : 0;
    }
    struct mirrors m = {.N = N};
    if (rc == 0)
        rc = array_job_exclusive(a, widen, &m, why, whylen);
    if (rc)
        return rc;
    char jwhy[256];
    struct uraid_job_params jp = {.slot = -1};
    rc = uraid_job_start(a, URAID_JOB_RECOVER, &jp, jwhy, sizeof jwhy);
    if (rc == -EBUSY)
        rc = 0; /* the monitor started it first */
    if (rc)
        uraid_why(why, whylen, "RAID-1 has %d mirrors now, but their recovery did not start: %s (add the new members "
                  "again as spares, or run 'uraid rebuild')", N, jwhy);
    return rc;
}
