/* liburaid administration: what an mdadm-like tool needs beyond the array
 * API of uraid.h. A member's superblock and write-intent bitmap as
 * `mdadm --examine` shows them, md's layout names, UUIDs as mdadm prints
 * them, the --member-layer syntax, and a raw member for benchmarks. The
 * front-ends (cli/, plugins/, fuse/) see the library only through
 * include/; this header is what they used to take from lib/.
 * Same conventions as uraid.h (0 or a negative errno, one line in why). */
#ifndef URAID_ADMIN_H
#define URAID_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "uraid.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Examine: one member's md metadata, read-only ----------------------- */

/* Device Role beside a slot number (>= 0). */
enum { URAID_ROLE_SPARE = -1, URAID_ROLE_FAULTY = -2 };

/* md's write-intent bitmap header and bits (mdadm --examine-bitmap). */
struct uraid_examine_bitmap {
    uint32_t magic, version;
    uint8_t uuid[16];
    uint64_t events, events_cleared;
    int stale;                    /* state says "Out of date" */
    uint32_t chunk_bytes;         /* member bytes per bit */
    uint32_t daemon_sleep_s;
    int write_behind;
    uint64_t sync_sectors;        /* per member */
    uint64_t bits, dirty_bits;
};

/* The md superblock (0.90 or 1.x) of one member, the fields mdadm --examine prints. */
struct uraid_examine {
    uint32_t feature_map;
    uint8_t array_uuid[16], device_uuid[16];
    char name[33];
    uint64_t ctime, utime;        /* seconds since the epoch */
    int level, layout, raid_devices;
    const char *layout_name;      /* what mdadm prints as Layout; NULL: no line */
    uint32_t chunk_bytes;
    uint64_t avail_dev_sectors;   /* data_size */
    uint64_t used_dev_sectors;    /* size: per member in use (0 for RAID-0, as mdadm writes) */
    uint64_t array_sectors;       /* 0 when the superblock records no size */
    uint64_t data_offset_sectors, super_offset_sectors;
    int has_recovery_offset;
    uint64_t recovery_offset_sectors;
    int clean;                    /* resync_offset says the array was shut down clean */
    int has_bitmap;
    int32_t bitmap_offset_sectors; /* from the superblock */
    int has_ppl;                  /* feature PPL (or MULTIPLE_PPLS): md's partial parity log */
    int has_ppl_q;                /* uraid's RAID-6 PPL (feature 0x80000000): md cannot assemble it */
    int32_t ppl_offset_sectors;   /* from the superblock */
    uint32_t ppl_sectors;
    int has_bblog, bad_blocks_present;
    uint32_t bblog_entries;
    int32_t bblog_offset_sectors; /* from the superblock */
    uint32_t checksum;            /* as stored (verified) */
    uint64_t events;
    int role;                     /* slot, URAID_ROLE_SPARE or URAID_ROLE_FAULTY */
    char array_state[URAID_MAX_MEMBERS + 1]; /* per slot: 'A' active, '.' missing */
    /* has_bitmap: bitmap_err is 0 and bitmap filled, or a negative errno
     * with the one-line reason (naming member and sector) in bitmap_why. */
    int bitmap_err;
    char bitmap_why[320];
    struct uraid_examine_bitmap bitmap;
    char version[10];             /* as mdadm prints it: "1.2", "1.1", "1.0", "0.90.00" */
    uint64_t space_before, space_after; /* 1.x: mdadm's "Unused Space" around the data, sectors */
    /* metadata 0.90 (v090 set): what mdadm prints instead of the 1.x fields */
    int v090;
    struct uraid_examine0 {
        uint32_t total, preferred_minor, active, working, failed, spare;
        int errors;               /* state bit "errors" */
        struct uraid_examine_desc {
            uint32_t number, major, minor, raid_disk, state; /* md_p.h MD_DISK_* bits */
        } this_disk, disks[27];
        int ndisks;               /* table rows mdadm prints: raid_disks + spare_disks (at most 27) */
    } v0;
};

/* Reads the superblock (and bitmap) of one member, never writing. Returns
 * 0, or a negative errno with one line naming the member in why (cannot
 * open, no md superblock, bad checksum ...). */
URAID_API int uraid_examine(const char *member, struct uraid_examine *out, char *why, size_t whylen);
/* The same, looking only for md format `metadata` (mdadm's spellings; NULL
 * finds it): a member holding two superblocks is refused until it is named. */
URAID_API int uraid_examine_as(const char *member, const char *metadata, struct uraid_examine *out, char *why,
                               size_t whylen);

/* ---- Names ---------------------------------------------------------------- */

/* mdadm's long name of a layout ("left-symmetric", "parity-last",
 * "original" ...), or NULL when the level has no such layout. */
URAID_API const char *uraid_layout_name(int level, int layout);
/* md's layout number (>= 0) for a name: mdadm's long names, "ls"/"la"/
 * "rs"/"ra", "default", any case; -EINVAL for none. */
URAID_API int uraid_layout_from_name(int level, const char *name);

/* A UUID as mdadm prints it: 8 hex digits, ':', ... (35 characters). */
#define URAID_UUID_TEXT 36
URAID_API void uraid_uuid_text(const uint8_t uuid[16], char out[URAID_UUID_TEXT]);

/* ---- Members outside an array ------------------------------------------- */

/* One --member-layer argument: "SPEC" for every member or "MEMBER:SPEC" for
 * the member of that name (names may contain ':', as NBD URIs do). Appends
 * SPEC, joined by ';', to texts[i] (n strings of textlen bytes each: the
 * form uraid_open_params.member_sim takes). Returns 0, -ENOENT when the
 * part before ':' names no member, -E2BIG when a text would overflow. */
URAID_API int uraid_member_layer_add(const char *arg, const char *const *names, int n, char *texts, size_t textlen,
                                     char *why, size_t whylen);

/* A member opened on its own (a file, block device or NBD URI), with the
 * simulation layers of a member_sim spec on top (layer_spec NULL or "" for
 * none): benchmarks compare an array with its raw members this way. */
struct uraid_member;
URAID_API int uraid_member_open(const char *name, int readonly, const char *layer_spec, struct uraid_member **out,
                                char *why, size_t whylen);
/* Bytes. */
URAID_API uint64_t uraid_member_size(const struct uraid_member *m);
/* The whole range or a negative errno; O_DIRECT needs buf 4 KiB aligned. */
URAID_API int uraid_member_read(struct uraid_member *m, void *buf, size_t len, uint64_t offset);
/* The same for a write (refused with -EROFS on a member opened read-only). */
URAID_API int uraid_member_write(struct uraid_member *m, const void *buf, size_t len, uint64_t offset);
URAID_API void uraid_member_close(struct uraid_member *m);

/* ---- Superblock updates on an array that is not running ---------------- */

/* mdadm's --update= forms uraid knows. */
enum uraid_update_what {
    URAID_UPDATE_NAME,      /* the array name (1.x): name */
    URAID_UPDATE_UUID,      /* the array UUID: uuid (the bitmap's and PPL's with it) */
    URAID_UPDATE_RESYNC,    /* mark dirty: the next open resyncs */
    URAID_UPDATE_NO_BITMAP, /* drop the internal write-intent bitmap */
    URAID_UPDATE_BBL,       /* add an empty bad-block log where there is room (1.x) */
    URAID_UPDATE_NO_BBL,    /* drop the bad-block log; refused while it lists blocks */
    URAID_UPDATE_REVERT_RESHAPE /* turn a RAID-4/5/6 reshape in progress around (mdadm's revert-reshape):
                                 * 'uraid grow --continue' (or md) then moves the data back */
};
struct uraid_update {
    int what;               /* enum uraid_update_what */
    const char *name;       /* URAID_UPDATE_NAME: 1 to 31 bytes (HOST: put before it as mdadm) */
    uint8_t uuid[16];       /* URAID_UPDATE_UUID */
};
/* mdadm's name ("name", "uuid", "resync", "no-bitmap", "bbl", "no-bbl", "revert-reshape")
 * into enum uraid_update_what, or -1. */
URAID_API int uraid_update_parse(const char *name);
/* Applies u to every member's superblock (all of the array's slots must be
 * given; spares may be): every member read and every check passed before
 * the first write. Refuses a member of an array a uraid serves, a block
 * device held exclusively, and a new UUID for a PPL array not shut down
 * cleanly (its log would be disowned). Returns 0 or a negative errno with one line in why. */
URAID_API int uraid_update(const char *const *members, int n, const struct uraid_update *u, char *why,
                           size_t whylen);
/* mdadm --zero-superblock: zeroes the superblock block of every md format
 * found on each member. Refuses (nothing written on any member) one with no
 * md superblock, one whose superblock is damaged unless force, and one in
 * use as uraid_update does. */
URAID_API int uraid_zero_superblock(const char *const *members, int n, int force, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif
