/* liburaid: a user-space RAID engine that keeps the Linux md on-disk format.
 *
 * Conventions for every call in liburaid:
 *   - Functions return 0 (or a count where documented) on success and a
 *     negative errno on failure. uraid_strerror() names uraid's own codes.
 *   - The library never prints. Messages go to the log callback set with
 *     uraid_set_log(); without one they are dropped.
 *   - Sizes are in bytes unless a name ends in _sectors (512-byte units).
 */
#ifndef URAID_H
#define URAID_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Marks the library's public functions: liburaid is built with
 * -fvisibility=hidden, so liburaid.so exports these and nothing else. */
#ifndef URAID_API
#if defined(__GNUC__)
#define URAID_API __attribute__((visibility("default")))
#else
#define URAID_API
#endif
#endif

#include "uraid_parity.h"

#ifdef __cplusplus
extern "C" {
#endif

enum uraid_log_level { URAID_LOG_ERROR = 0, URAID_LOG_WARN = 1, URAID_LOG_INFO = 2, URAID_LOG_DEBUG = 3 };

typedef void (*uraid_log_fn)(void *ctx, enum uraid_log_level level, const char *message);

/* Installs a process-wide log callback (NULL removes it). Messages above
 * max_level are not formatted. Thread-safe; the callback may be called from
 * any thread and must not call back into liburaid. */
URAID_API void uraid_set_log(uraid_log_fn fn, void *ctx, enum uraid_log_level max_level);

/* Text for a negative return value (errno or uraid-specific). */
URAID_API const char *uraid_strerror(int err);

/* Version string of the library. */
URAID_API const char *uraid_version(void);


/* ---- Arrays ----------------------------------------------------------------
 * An array is a set of member files or block devices carrying md v1.2
 * superblocks (4 KiB from the start of each member). Calls that can fail for
 * a reason a user must act on fill `why` (if not NULL) with one line naming
 * the member and the reason, e.g. "member /srv/d2.img: bad superblock
 * checksum (stored 0x1234, computed 0x5678)". */

#define URAID_MAX_MEMBERS 256
/* Bytes per sector: the unit of every _sectors field and of I/O alignment. */
#define URAID_SECTOR 512u

struct uraid_array;

enum { URAID_BITMAP_DEFAULT = 0, URAID_BITMAP_NONE = 1, URAID_BITMAP_INTERNAL = 2 };

/* mdadm's consistency policies (--consistency-policy): what makes parity
 * agree with the data again after an unclean shutdown.
 *   resync  the whole array is resynced (md's default without a bitmap)
 *   bitmap  the chunks the write-intent bitmap marks are resynced
 *   ppl     md's partial parity log (RAID-5): each write's partial parity
 *           is logged on its parity member first and replayed at open, so
 *           no resync is needed and a dirty, degraded array keeps the data
 *           its interrupted writes did not touch (the write hole is closed)
 *   journal a write journal device (not supported) */
enum uraid_policy {
    URAID_POLICY_DEFAULT = 0, /* create: ppl for RAID-5, else mdadm's bitmap rule */
    URAID_POLICY_RESYNC = 1,
    URAID_POLICY_BITMAP = 2,
    URAID_POLICY_PPL = 3,
    URAID_POLICY_JOURNAL = 4,
};

/* "resync", "bitmap", "ppl", "journal" (mdadm's words); "default" for 0. */
URAID_API const char *uraid_policy_name(int policy);
/* The md format uraid_create writes for a --metadata spelling: "1.2" for
 * NULL, "default" and "1"; "0.90" for "0.9" and "0"; ... "?" when unknown. */
URAID_API const char *uraid_metadata_name(const char *metadata);
/* The policy named (mdadm's words), or -1. */
URAID_API int uraid_policy_parse(const char *name);

struct uraid_create_params {
    int level;              /* -1 (linear), 0, 1, 4, 5, 6 or 10 */
    int raid_devices;       /* n: member slots, including "missing" ones */
    uint32_t chunk_bytes;   /* power of two >= 4096; 0 = 512 KiB (mdadm's default) */
    int layout;             /* md layout number; -1 = left-symmetric (RAID-5/6), n2 = 0x102 (RAID-10) */
    const char *name;       /* array name; NULL = "0" like mdadm's /dev/md0 */
    const char *homehost;   /* NULL = this machine's hostname */
    const uint8_t *uuid;    /* 16 bytes, NULL = random */
    int assume_clean;       /* skip the initial parity sync */
    int spare_devices;      /* the last spare_devices paths become spares (mdadm's --spare-devices) */
    /* md's internal write-intent bitmap (mdadm --bitmap): URAID_BITMAP_DEFAULT
     * chooses as mdadm 4.2 does (internal when the members' used size is
     * over 100 GiB and the level is 1, 4, 5 or 6; none otherwise). */
    int bitmap;
    uint64_t bitmap_chunk_bytes; /* power of two >= 4K; 0 = mdadm's choice (>= 64 MiB, fits the space) */
    /* enum uraid_policy. DEFAULT: ppl for RAID-5 (when the members have room
     * for mdadm's 1 MiB log and bitmap is not INTERNAL), else the bitmap
     * rule above. BITMAP and PPL exclude each other, as in mdadm. */
    int consistency_policy;
    /* md's superblock format, in mdadm's spellings: "1.2" (NULL, "default",
     * "1"), "1.1", "1.0", "0.90" ("0.9", "0"). 0.90 allows 27 members of at
     * most 2 TiB (RAID-1/4/5/6) and has no bad-block log. */
    const char *metadata;
    /* Called during the initial sync with sectors done and total (may be NULL). */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
};

/* Creates an array on `nmembers` paths in slot order; the path "missing"
 * leaves a slot empty (the array is then created degraded). Every member
 * must exist and be large enough; none may carry a superblock of a live
 * array unless force is set... nothing is written before every check has
 * passed. Without assume_clean, parity (or mirrors) is made consistent
 * before the call returns. Returns 0 or a negative errno. */
URAID_API int uraid_create(const char *const *members, int nmembers, const struct uraid_create_params *p,
                           int force, char *why, size_t whylen);

struct uraid_open_params {
    int force;     /* open a dirty + degraded array (parity may be stale) */
    int readonly;  /* never write to the members */
    /* Simulation layers for tests, benchmarks and demos (may be NULL): one
     * spec per path given to uraid_open, in the same order, NULL or "" for
     * none. Syntax: "throttle=60M[,latency=100us]", a disk model
     * "disk=hdd-7200|hdd-5400|sata-ssd|nvme[,throttle=RATE][,latency=TIME]
     * [,seek=MSEC][,rpm=N][,qd=N]" (README: the disk model), "latency=2ms",
     * "read-eio=OFF+LEN", "write-eio=OFF+LEN", "drop-writes=OFF+LEN",
     * "vanish", "badmap=PATH" (a GNU ddrescue mapfile of the member's
     * image: reads of every byte it does not list as rescued fail with EIO;
     * PATH without ',' or ';'), joined with ';' (offsets in member bytes). */
    const char *const *member_sim;
    /* Open only superblocks of this md format (mdadm's spellings, "1" = any
     * 1.x); NULL finds it. A member holding two (an old 0.90 superblock in
     * a 1.x array's data) is refused until this names one. */
    const char *metadata;
    int io_threads;    /* I/O engine worker threads; 0 = default */
    int no_uring;      /* 1 = thread pool only (io_uring is used when available) */
    /* 1 = md's background maintenance of a running array: rebuild a spare
     * into a failed or missing slot by itself whenever both exist (at
     * open, after an add, after a member fails), and resync an array found
     * not shut down cleanly (also while degraded, as long as it has
     * redundancy left to make consistent), as md does. */
    int auto_rebuild;
    int no_spare_rebuild; /* with auto_rebuild: spares wait for a `rebuild` request (serve --no-rebuild) */
    int no_auto_resync;   /* with auto_rebuild: a dirty array waits for a `resync` request (serve --no-resync) */
    uint64_t sync_speed_max_kib; /* background work speed limit, KiB/s per member; 0 = none */
    uint64_t sync_speed_min_kib; /* floor kept under user I/O; 0 = 1000 (md's default) */
    /* Run as `PROG EVENT ARRAY [MEMBER]` for every event, with mdadm
     * --monitor's names (Fail, FailSpare, SpareActive, DegradedArray,
     * RebuildStarted, RebuildFinished) and URAID_EVENT, URAID_ARRAY,
     * URAID_UUID, URAID_MEMBER, URAID_DETAIL in its environment; NULL for none. */
    const char *event_program;
    /* Write-intent bitmap: the daemon's period; a bit is cleared after its
     * chunk stayed idle for one to two periods. 0 = the bitmap's
     * daemon_sleep (mdadm writes 5 s). */
    uint32_t bitmap_daemon_ms;
};

/* Assembles an array from its members, given in any order: the superblocks
 * decide the slots. Refuses (without writing a byte) members of different
 * arrays, two members claiming one slot, unknown feature bits, bad
 * checksums, members smaller than the recorded size, more missing members
 * than the level survives, and a dirty + degraded array unless force. A
 * member whose events lag by more than one is stale: it is left out (the
 * array opens degraded if it can) and named in the log. */
URAID_API int uraid_open(const char *const *members, int nmembers, const struct uraid_open_params *p,
                         struct uraid_array **out, char *why, size_t whylen);

/* Adds a spare (md role 0xffff) to an open array: it must not belong to
 * another array and must be large enough. With auto_rebuild a recovery
 * onto it starts when a slot needs one. */
URAID_API int uraid_add_spare(struct uraid_array *a, const char *path, char *why, size_t whylen);

/* md's --re-add: a member that left this array (failed or removed) goes
 * back into its slot, and its recovery rebuilds only the chunks the
 * write-intent bitmap marks as written since (uraid_job_start RECOVER;
 * with auto_rebuild it starts by itself). When the bitmap cannot tell
 * (none, cleared since the member left, stale, or the member's events are
 * ahead), it is added as a spare for a full rebuild instead. Returns 1 for
 * a re-add, 0 for the spare, or a negative errno; `why` holds one line
 * saying which and why (also on success). */
URAID_API int uraid_readd(struct uraid_array *a, const char *path, char *why, size_t whylen);

/* Flushes, records the array as clean in every member and frees it. */
URAID_API int uraid_close(struct uraid_array *a);

/* Array size in bytes. */
URAID_API uint64_t uraid_size(const struct uraid_array *a);

/* Reads or writes len bytes at byte offset `offset`; both must be multiples
 * of 512 and inside the array. Writes keep P (and Q) consistent; reads of a
 * missing member's chunks are reconstructed. Returns 0 or a negative errno
 * (-EIO when the data cannot be read or rebuilt). */
URAID_API int uraid_read(struct uraid_array *a, void *buf, size_t len, uint64_t offset);
URAID_API int uraid_write(struct uraid_array *a, const void *buf, size_t len, uint64_t offset);

/* Makes [offset, offset + len) read as zeros (NBD trim/zero, fallocate
 * punch/zero). Whole stripes are zeroed on every member without reading
 * (file members get holes); partial stripes are written with zeros. Same
 * rules and errors as uraid_write. */
URAID_API int uraid_write_zeroes(struct uraid_array *a, size_t len, uint64_t offset);

/* Makes every completed write durable on the members. */
URAID_API int uraid_flush(struct uraid_array *a);

enum uraid_member_state {
    URAID_MEMBER_IN_SYNC = 0,
    URAID_MEMBER_MISSING,  /* slot without a device */
    URAID_MEMBER_FAULTY,   /* marked faulty */
    URAID_MEMBER_SPARE,
    URAID_MEMBER_STALE,    /* given but left out: its events lag */
    URAID_MEMBER_REBUILDING, /* in a slot, valid below recovery_offset only */
};

struct uraid_member_info {
    char path[256];         /* "" when missing */
    int slot;               /* raid slot, -1 for spares and stale members */
    int dev_number;         /* index in dev_roles, -1 when missing */
    enum uraid_member_state state;
    uint64_t events;
    uint64_t data_offset_sectors;
    uint32_t corrected_reads;
    uint64_t recovery_offset_sectors; /* REBUILDING: sectors past data_offset already rebuilt */
    uint32_t bad_blocks;              /* entries in its md bad-block log */
};

struct uraid_array_info {
    int level, layout, raid_devices; /* RAID-0: 1 or 2 where the layouts differ, else 0 */
    uint32_t chunk_bytes;
    uint64_t size_bytes;             /* array */
    uint64_t member_data_sectors;    /* "Used Dev Size" per member, sectors */
    uint8_t uuid[16];
    char name[33];
    char metadata[8];                /* md's superblock format: "1.2", "1.1", "1.0", "0.90" */
    uint64_t ctime, utime, events;
    int clean;                       /* 1 = resync_offset says fully in sync */
    int bitmap;                      /* 1 = md's internal write-intent bitmap is kept */
    int consistency_policy;          /* enum uraid_policy: RESYNC, BITMAP or PPL */
    int md_refuses;                  /* 1 = uraid's RAID-6 PPL (feature 0x80000000): md cannot assemble it */
    int degraded;                    /* number of slots not in sync */
    int nmembers;                    /* entries in member[]: slots first, then the rest */
    struct uraid_member_info member[URAID_MAX_MEMBERS];
    /* A reshape in progress (0 when none): members gained (raid_devices is
     * the new count), and the recorded position out of the new size, in
     * array sectors of the new geometry (mdadm --detail's Reshape Status). */
    int reshape_delta;
    uint64_t reshape_position_sectors, reshape_total_sectors;
    /* and the old geometry's chunk and layout (layout and chunk_bytes above
     * are the new ones the array is addressed by; mdadm shows the old as
     * Layout and Chunk Size, the new as New Layout and New Chunksize) */
    uint32_t reshape_from_chunk_bytes;
    int reshape_from_layout;
    int reshape_backwards;           /* md's backwards reshape (a shrink): the position counts down */
};

URAID_API int uraid_get_info(struct uraid_array *a, struct uraid_array_info *info);

/* mdadm --grow --consistency-policy on an array that is not running:
 * every member's superblock switched between resync and ppl (mdadm changes
 * only these two; bitmap comes and goes with --bitmap). To ppl: RAID-5, no
 * bitmap, room for the log between the superblock and the data or the
 * bad-block log; the log areas are emptied. Every check runs before the
 * first write; a refusal changes nothing on disk. Members in use by another
 * uraid process are refused (-EBUSY). Returns 0 or a negative errno with one
 * line in why. */
URAID_API int uraid_set_consistency_policy(const char *const *members, int nmembers, int policy, char *why,
                                           size_t whylen);

/* What the data path did since open (or the last reset). Member I/O counts
 * cover data and parity only, not superblock updates. */
struct uraid_counters {
    uint64_t member_reads, member_writes;
    uint64_t member_read_bytes, member_write_bytes;
    uint64_t reconstructions;     /* pieces served by rebuilding from the stripe */
    uint64_t corrected_reads;     /* read errors fixed by rewriting the member */
    uint64_t writes_full_stripe;  /* stripes written without reads */
    uint64_t writes_rmw;          /* read-modify-write */
    uint64_t writes_rcw;          /* reconstruct-write */
    uint64_t writes_degraded;     /* stripes that had to be rebuilt to be written */
    uint64_t member_failures;     /* members marked faulty */
};

URAID_API int uraid_get_counters(struct uraid_array *a, struct uraid_counters *c);

/* How partial-stripe writes of RAID-4/5/6 update parity, md's rmw_level:
 * 0 reconstruct-write only (read the data blocks the write leaves, never the
 * old data and parity; a stripe that cannot do that is rebuilt first),
 * 1 (the default) the method with fewer member reads, reconstruct-write on a
 * tie, 2 the same, but read-modify-write on a tie. Changeable while I/O
 * runs (each stripe is planned with the level of the moment); other levels
 * ignore it. uraid_set_rmw_level returns 0 or -EINVAL for another level. */
#define URAID_RMW_RCW_ONLY 0
#define URAID_RMW_FEWEST_READS 1
#define URAID_RMW_PREFER 2
URAID_API int uraid_set_rmw_level(struct uraid_array *a, int level);
URAID_API int uraid_get_rmw_level(struct uraid_array *a);
URAID_API void uraid_reset_counters(struct uraid_array *a);

/* Test and simulation hook: applies a member_sim spec (see
 * uraid_open_params) at run time to the member in raid slot `slot`; the
 * member must have been opened with a fault layer (any member_sim spec, e.g.
 * "latency=0us"). Returns 0, -EINVAL, or -ENODEV for an empty slot. */
URAID_API int uraid_inject(struct uraid_array *a, int slot, const char *spec);

/* ---- Background work: rebuild, replace, check, repair --------------------
 * At most one job runs per array (md's sync_action). It walks the members'
 * data areas from start to end in whole stripes, holding each stripe's lock
 * while it works on it, so user I/O goes on beside it. Its speed is held
 * under sync_speed_max (open params, or the job's own), and while user I/O
 * is active it backs off to sync_speed_min but never below it. */
enum uraid_job_kind {
    URAID_JOB_IDLE = 0,
    URAID_JOB_RECOVER,  /* rebuild a spare into a failed or missing slot */
    URAID_JOB_REPLACE,  /* copy a working member onto a spare, then retire it */
    URAID_JOB_CHECK,    /* read every stripe, count parity mismatches */
    URAID_JOB_REPAIR,   /* check and rewrite what is wrong */
    URAID_JOB_RESYNC,   /* after an unclean shutdown: parity recomputed from the data (md's resync) */
    URAID_JOB_RESHAPE,  /* a grow to more members in progress (uraid_grow_online; carried on at open) */
};

struct uraid_job_params {
    int slot;                   /* REPLACE: the slot to copy; RECOVER: -1 = any */
    const char *spare;          /* REPLACE/RECOVER: path of the spare to use; NULL = any */
    uint64_t speed_max_kib;     /* 0 = the array's sync_speed_max */
    uint64_t speed_min_kib;     /* 0 = the array's sync_speed_min */
};

/* One place a check or repair found parity disagreeing with the data. */
enum uraid_finding_kind {
    URAID_FOUND_P = 0,     /* P is wrong (RAID-5: parity disagrees; the data cannot be told apart) */
    URAID_FOUND_Q,         /* RAID-6: only Q is wrong */
    URAID_FOUND_DATA,      /* RAID-6: one data block is wrong (slot says which) */
    URAID_FOUND_MULTI,     /* RAID-6: more than one block disagrees: reported, not repaired */
    URAID_FOUND_UNREADABLE, /* the stripe could not be read or rebuilt */
    URAID_FOUND_MIRROR     /* RAID-1: this mirror differs from the first (repair copies the first over it) */
};

struct uraid_finding {
    uint64_t member_sector;   /* sectors past data_offset, first of the range */
    uint32_t nsec;            /* length of the range in sectors */
    uint64_t stripe;
    int slot;                 /* the member slot holding the wrong block, -1 if unknown */
    enum uraid_finding_kind kind;
    int repaired;             /* 1 when repair rewrote it */
};

struct uraid_job_status {
    enum uraid_job_kind kind;     /* IDLE when nothing has run since open */
    int running;                  /* 0 once finished, failed or cancelled */
    int result;                   /* 0, or a negative errno when it stopped on an error */
    char why[256];                /* the one-line reason when result != 0 */
    int slot;                     /* RECOVER/REPLACE: the slot being written */
    uint64_t done_sectors;        /* per member, past data_offset */
    uint64_t total_sectors;
    uint64_t speed_kib;           /* per member, over the last seconds */
    uint64_t elapsed_ms;
    uint64_t mismatch_sectors;    /* CHECK/REPAIR: like md's mismatch_cnt (512-byte sectors, counted per 4 KiB page) */
    uint64_t repaired_sectors;    /* REPAIR */
    uint64_t nfindings;           /* findings recorded (uraid_job_findings) */
    uint64_t worked_sectors;      /* per member, sectors the job worked on (a RESYNC guided by the
                                   * write-intent bitmap skips the clean chunks, and so does the
                                   * RECOVER of a re-added member) */
    int frozen;                   /* md's "frozen": no job starts by itself (uraid_job_freeze) */
    int ntargets;                 /* RECOVER: slots rebuilt together (slot is the first) */
    int targets[URAID_MAX_MEMBERS];
};

/* Starts a job in a background thread. -EBUSY if one is running, -EINVAL
 * when there is nothing to do (no spare, no failed slot, ...), with the
 * reason in why. */
URAID_API int uraid_job_start(struct uraid_array *a, enum uraid_job_kind kind, const struct uraid_job_params *p,
                              char *why, size_t whylen);
/* The current or last job. */
URAID_API int uraid_job_status(struct uraid_array *a, struct uraid_job_status *st);
/* Waits for the running job to end; returns its result. */
URAID_API int uraid_job_wait(struct uraid_array *a, struct uraid_job_status *st);
/* Stops the running job at the next stripe and waits: a rebuild keeps its
 * checkpoint (recovery_offset) and resumes from it later. */
URAID_API int uraid_job_cancel(struct uraid_array *a);
/* md's sync_action "frozen": stops the running job (a rebuild keeps its
 * checkpoint) and starts none by itself until uraid_job_idle. */
URAID_API int uraid_job_freeze(struct uraid_array *a);
/* md's sync_action "idle": stops the running job and thaws a frozen
 * array; with auto_rebuild a recovery or resync the array still needs
 * starts again at once, from its checkpoint. */
URAID_API int uraid_job_idle(struct uraid_array *a);
/* Copies up to max findings of the last check/repair; returns how many. */
URAID_API size_t uraid_job_findings(struct uraid_array *a, struct uraid_finding *out, size_t max);
/* Name of a job kind: "idle", "recovery", "replace", "check", "repair", "resync". */
URAID_API const char *uraid_job_name(enum uraid_job_kind kind);
/* /proc/mdstat's progress line for a running job, e.g.
 * "[====>................]  recovery = 21.6% (45312/209664) finish=0.2min speed=92364K/sec"
 * (sizes in KiB per member); for a finished one what it ended with. */
URAID_API void uraid_job_progress_line(const struct uraid_job_status *st, char *buf, size_t len);

/* The I/O engine in use: "io_uring" or "threads". */
URAID_API const char *uraid_io_engine(struct uraid_array *a);

#ifdef __cplusplus
}
#endif
#endif
