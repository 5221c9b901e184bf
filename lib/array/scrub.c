/* Check and repair (scrub): being written; until then the job refuses to start. */
#include <errno.h>

#include "array/array.h"
#include "log.h"

int scrub_prepare(struct uraid_array *a, struct array_job *j, const struct uraid_job_params *p, char *why,
                  size_t whylen)
{
    uraid_why(why, whylen, "check and repair are not available in this build yet");
    return -EOPNOTSUPP;
}

int scrub_step(struct uraid_array *a, struct array_job *j, uint64_t start, uint32_t nsec) { return -EOPNOTSUPP; }
