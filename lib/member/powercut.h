/* Power-cut simulation (lib/member/powercut.c), in the spirit of SQLite's
 * crash tests (test6.c): a layer over any member that remembers every write
 * since the member's last completed flush, and at a simulated power cut
 * decides for each of them, from a seed, whether it reached the medium
 * whole (kept), not at all (dropped) or torn: each of its 512-byte sectors
 * kept or dropped on its own. A write covered by a completed flush is never
 * touched, nor is a completed FUA write (member_write_fua): that write alone
 * is durable, the unflushed writes before it are not. After the cut every
 * request to every member of the domain fails with -ENXIO: the process is
 * "dead", and a test reopens the files afresh.
 *
 * Members share a power domain (all the disks of one machine): one cut hits
 * them all at the same instant. A domain is named; the spec
 * "powercut=NAME,seed=N[,after=N][,keep=PCT][,tear=PCT]" (spec.c) puts a
 * member in it, and a test finds it by name to arm or pull the plug.
 *
 * The layer writes through: the inner member always holds the newest data
 * (reads go straight to it), and each remembered write keeps the bytes it
 * replaced. At the cut the layer rolls every member back to its state at the
 * last flush and then replays the surviving sectors in the order the writes
 * were made, so a sector ends with the newest write that survived, or the
 * flushed value if none did. Memory: twice the bytes written since the last
 * flush (a zeroed range: once), so it is for tests and demos, not for
 * serving real data. */
#ifndef URAID_MEMBER_POWERCUT_H
#define URAID_MEMBER_POWERCUT_H

#include <stdint.h>

#include "member/member.h"

struct powercut_domain;

/* The domain named `name`, made with seed, keep_pct and tear_pct if it does
 * not exist yet (later callers share the first one's odds and seed). The
 * registry keeps a domain until powercut_domain_forget, so a test can read
 * its statistics after the array that used it is gone (a pointer from get
 * or find stays valid until then). Returns 1 when it
 * made the domain, 0 when it found it, -EINVAL
 * (empty name, keep_pct + tear_pct > 100) or -ENOMEM. */
int powercut_domain_get(const char *name, uint64_t seed, unsigned keep_pct, unsigned tear_pct,
                        struct powercut_domain **out);
/* The domain of that name, or NULL. */
struct powercut_domain *powercut_domain_find(const char *name);
/* Drops the registry's hold: the domain is freed when its last member closes. */
void powercut_domain_forget(const char *name);

/* Wraps inner (taking ownership) as the next member of domain d. Members are
 * numbered in the order they join; the number goes into each decision, so a
 * replay must open its members in the same order. */
int member_powercut_wrap(struct member *inner, struct powercut_domain *d, struct member **out);

/* The cut happens during the after_writes-th member write counted from now
 * (that write is applied, may survive or not, and fails); 0 disarms. */
void powercut_arm(struct powercut_domain *d, uint64_t after_writes);
/* Pulls the plug now. Returns 0, or -EALREADY after an earlier cut. */
int powercut_cut(struct powercut_domain *d);
int powercut_is_cut(struct powercut_domain *d);
/* fn(ctx) runs at the instant of the cut, before any member is touched, on
 * the thread that cuts, with the domain locked (it must not call back into
 * the domain). A test uses it to mark what its client had seen by then:
 * nothing the process acknowledged after the cut was ever seen by anyone. */
void powercut_on_cut(struct powercut_domain *d, void (*fn)(void *ctx), void *ctx);

/* fn(ctx, member, off, len, fua) runs before each write (not a zeroed
 * range) reaches member `member` (its join number), on the writing
 * thread, with nothing locked: it may sleep (a slow write), and when it
 * returns 1 the cut happens during this write (as if armed for it): a
 * test aims the cut at one kind of write, e.g. a log header. Set it
 * while no member I/O is in flight (it is read without the lock). */
void powercut_on_write(struct powercut_domain *d,
                       int (*fn)(void *ctx, unsigned member_ix, uint64_t off, size_t len, int fua), void *ctx);

struct powercut_stats {
    uint64_t writes, zeroes, flushes;  /* requests that reached the medium */
    uint64_t fua_writes;               /* of the writes, FUA ones (member_write_fua): they
                                        * survive a cut once completed, and are no flush */
    uint64_t pending_writes;           /* not yet covered by a flush, now (0 after the cut) */
    uint64_t pending_bytes;
    /* at the cut: remembered writes kept, dropped, torn, and sectors of
     * torn writes that survived / were lost */
    uint64_t cut_kept, cut_dropped, cut_torn;
    uint64_t cut_durable;              /* completed FUA writes put back (never dropped or torn) */
    uint64_t torn_sectors_kept, torn_sectors_lost;
    uint64_t cut_errors;               /* inner I/O errors while applying the cut */
};
void powercut_get_stats(struct powercut_domain *d, struct powercut_stats *st);

/* Writes (and zeroed ranges) on m not yet covered by a completed flush;
 * m must be a powercut layer (else 0). */
uint64_t member_powercut_pending(struct member *m);

/* The decision itself, a pure function of its arguments: 1 if sector
 * `sector` (0 = the first of the write) of the seq-th write (counted from 0
 * since the member joined) of member `member_ix` survives a cut. Exposed so
 * tests can compute the image a cut must leave. */
int powercut_sector_survives(uint64_t seed, unsigned member_ix, uint64_t seq, uint32_t sector, unsigned keep_pct,
                             unsigned tear_pct);

#endif
