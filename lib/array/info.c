/* The array's state as the CLI and the control socket print it
 * (uraid_get_info). */
#include <stdio.h>
#include <string.h>

#include "array/array.h"
#include "array/reshape.h"
#include "array/reshape_io.h"

/* Fills info; the caller holds meta_lock (members change under it). */
void array_info_locked(struct uraid_array *a, struct uraid_array_info *info)
{
    memset(info, 0, sizeof *info);
    const struct md_sb *R = &a->sb;
    info->level = a->geom.level;
    /* where the layouts agree md ignores RAID-0's field, and so does the report */
    info->layout = a->r0 ? (a->r0->layout_matters ? a->r0->layout : 0) : a->geom.layout;
    info->raid_devices = a->geom.raid_disks;
    info->chunk_bytes = a->geom.chunk_sectors * SECTOR;
    info->size_bytes = a->size_sectors * SECTOR;
    info->member_data_sectors = a->member_sectors;
    memcpy(info->uuid, R->set_uuid, 16);
    snprintf(info->metadata, sizeof info->metadata, "%s", md_format_name(R->format));
    memcpy(info->name, R->set_name, 32);
    info->ctime = R->ctime;
    info->utime = R->utime;
    info->events = R->events;
    info->clean = !a->dirty;
    info->bitmap = a->bitmap != NULL;
    info->consistency_policy = md_sb_has_ppl(R)                               ? URAID_POLICY_PPL
                               : (R->feature_map & MD_FEATURE_BITMAP_OFFSET) ? URAID_POLICY_BITMAP
                                                                             : URAID_POLICY_RESYNC;
    info->md_refuses = md_sb_has_ppl_q(R);
    int nm = 0;
    for (int s = 0; s < a->geom.raid_disks; s++) {
        struct uraid_member_info *mi = &info->member[nm++];
        const struct array_slot *sl = &a->slot[s];
        mi->slot = s;
        mi->state = sl->state;
        info->degraded += sl->state != URAID_MEMBER_IN_SYNC;
        /* a removed member's dev stays open until close (manage.c) */
        if (sl->dev && sl->state != URAID_MEMBER_MISSING) {
            snprintf(mi->path, sizeof mi->path, "%s", sl->dev->path);
            mi->dev_number = (int)sl->sb.dev_number;
            mi->events = sl->sb.events;
            mi->data_offset_sectors = sl->data_offset;
            mi->corrected_reads = sl->sb.cnt_corrected_read;
            if (sl->state == URAID_MEMBER_REBUILDING)
                mi->recovery_offset_sectors = __atomic_load_n(&sl->recovered, __ATOMIC_ACQUIRE);
            mi->bad_blocks = sl->badblocks ? sl->badblocks->count : 0;
        } else {
            mi->dev_number = -1;
        }
    }
    for (int e = 0; e < a->nextra && nm < URAID_MAX_MEMBERS; e++) {
        struct uraid_member_info *mi = &info->member[nm++];
        const struct array_slot *sl = &a->extra[e];
        mi->slot = -1;
        mi->state = sl->state;
        snprintf(mi->path, sizeof mi->path, "%s", sl->dev ? sl->dev->path : "");
        mi->dev_number = (int)sl->sb.dev_number;
        mi->events = sl->sb.events;
        mi->data_offset_sectors = sl->data_offset;
        mi->corrected_reads = sl->sb.cnt_corrected_read;
    }
    info->nmembers = nm;
    if (a->rs) {
        info->reshape_delta = a->sb.delta_disks;
        info->reshape_position_sectors = a->sb.reshape_position; /* what the superblocks say (meta_lock) */
        info->reshape_total_sectors = reshape_to_sectors(&a->rs->g);
        info->reshape_from_chunk_bytes = a->rs->g.from.chunk_sectors * SECTOR;
        info->reshape_from_layout = a->rs->g.from.layout;
        info->reshape_backwards = a->rs->g.backwards;
    }
}

int uraid_get_info(struct uraid_array *a, struct uraid_array_info *info)
{
    pthread_mutex_lock(&a->meta_lock);
    array_info_locked(a, info);
    pthread_mutex_unlock(&a->meta_lock);
    return 0;
}
