#!/bin/sh
# uraid bench seeds (make bench-seeds): the experiments of the linux-raid
# threads this project grew from, on arrays of simulated disks served as a
# user would use them (uraid mount -> loop device -> a file system), beside
# the same simulated disks used raw and under btrfs, and over NBD:
#
#   000  the parity routine table as the kernel prints it at boot, and
#        whether the routine chosen is the fastest;
#        two concurrent streaming readers against one (4-disk RAID-5)
#   002  dd streaming read of a 4-disk RAID-5 against one member and all
#        members in parallel
#   003  fio random writes 4K..512K, 8 threads, 10-disk RAID-6, 64K chunk,
#        rmw_level 1 and 0, beside the seed's own table
#   004  bonnie++ and a tiobench-shaped fio table on a 15-disk RAID-5 with
#        a spare beside btrfs raid5 and the raw disks, healthy and degraded;
#        scenario 2: scattered unreadable chunks on every member
#   NBD  the same figures with the array served over NBD, CPU per byte
#
# Writes DIR/report.md (every table, the seeds' figures, each figure's ratio
# to the simulated disks' physical limit) and DIR/*.png (gnuplot).
#
#   bench/seeds/run.sh [--quick] [--only "EXP ..."] [--out DIR] [--uraid PATH]
#
# --quick: small sizes and one-second runs (make check's smoke test).
# --only: just these experiments (parity stream rmw r5_15 nbd): their
# tables in DIR/report.md, no plots (to regenerate one part of a report).
# Environment: SEEDS_DISK (the member layer of every simulated disk,
# default disk=hdd-7200,throttle=60M,qd=32), SEEDS_WORKDIR (/dev/shm),
# SEEDS_SECONDS (each fio run, 8), SEEDS_STREAM_ROUNDS (rounds of one and
# two readers alternately, 3).
# Needs root, /dev/fuse, loop devices, fio, jq, bonnie++, gnuplot,
# mkfs.ext4, mkfs.btrfs, nbdkit (scripts/deps.sh installs them).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
QUICK=0
OUT=seeds-report
URAID=""
ONLY=""
while [ $# -gt 0 ]; do
    case $1 in
        --quick) QUICK=1 ;;
        --out) [ $# -ge 2 ] || { echo "seeds: --out needs a directory" >&2; exit 2; }; OUT=$2; shift ;;
        --only) [ $# -ge 2 ] || { echo "seeds: --only needs experiment names" >&2; exit 2; }; ONLY=$2; shift ;;
        --uraid) [ $# -ge 2 ] || { echo "seeds: --uraid needs a path" >&2; exit 2; }; URAID=$2; shift ;;
        -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "seeds: unknown argument '$1' (expected --quick, --only "EXP ...", --out DIR, --uraid PATH)" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$URAID" ]; then
    if [ -x "$here/../../build/uraid" ]; then URAID=$here/../../build/uraid; else URAID=$(command -v uraid || true); fi
fi
[ -n "$URAID" ] && [ -x "$URAID" ] || { echo "seeds: no uraid binary (build it, or pass --uraid PATH)" >&2; exit 1; }
URAID=$(cd "$(dirname "$URAID")" && pwd)/$(basename "$URAID")
for c in fio jq gnuplot bonnie++ losetup mkfs.ext4 mkfs.btrfs fusermount3 nbdkit blockdev sha256sum awk timeout; do
    command -v "$c" >/dev/null 2>&1 || { echo "seeds: $c is not installed (scripts/deps.sh installs what is needed)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "seeds: needs root (loop devices, mount)" >&2; exit 1; }
[ -c /dev/fuse ] || { echo "seeds: needs /dev/fuse" >&2; exit 1; }
grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || { echo "seeds: this kernel has no btrfs" >&2; exit 1; }

mkdir -p "$OUT" || { echo "seeds: cannot make $OUT" >&2; exit 1; }
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/parts" "$OUT/data"
mkdir -p "$OUT/parts" "$OUT/data"
W=$(mktemp -d "${SEEDS_WORKDIR:-/dev/shm}/uraid-seeds.XXXXXX") || { echo "seeds: no scratch directory" >&2; exit 1; }
. "$here/lib.sh"
trap 's_cleanup; rm -rf "$W"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

DISK=${SEEDS_DISK:-disk=hdd-7200,throttle=60M,qd=32}
# The simulated disk's media rate (MB/s, 1e6) and random 4 KiB time (ms),
# from the model's parameters (README: the disk model): the physical limit.
DISK_MBPS=$(echo "$DISK" | sed -n 's/.*throttle=\([0-9]*\)M.*/\1/p')
preset=$(echo "$DISK" | sed -n 's/.*disk=\([a-z0-9-]*\).*/\1/p')
case $preset in
    hdd-7200) seek=15 rpm=7200 r=180 ;;
    hdd-5400) seek=22 rpm=5400 r=120 ;;
    *) die "SEEDS_DISK must name an HDD preset (disk=hdd-7200 or disk=hdd-5400): the seeds' experiments are about seeks" ;;
esac
[ -n "$DISK_MBPS" ] || DISK_MBPS=$r
# average random request: 1 ms + (full stroke - 1 ms) x 8/15, half a revolution, the transfer
RAND4K_MS=$(awk -v s="$seek" -v rpm="$rpm" -v r="$DISK_MBPS" 'BEGIN { printf "%.2f", 1 + (s - 1) * 8 / 15 + 30000 / rpm + 4096 / (r * 1e3) }')

if [ "$QUICK" = 1 ]; then
    T=1 M4=96M F4=32 M10=64M RMW_BS="4K 64K 512K" M15=160M BON=96 TIO_T="1 8" TIO_MB=16 S2_MB=16 STREAMS="1 2" STREAM_ROUNDS=1
else
    T=${SEEDS_SECONDS:-8} M4=1G F4=384 M10=512M RMW_BS="4K 8K 16K 32K 64K 128K 256K 512K" M15=512M BON=512 \
        TIO_T="1 2 4 8" TIO_MB=256 S2_MB=256 STREAMS="1 2 3 4" \
        STREAM_ROUNDS=${SEEDS_STREAM_ROUNDS:-3}
fi
START=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
say "work in $W, report in $OUT (disk: $DISK, $DISK_MBPS MB/s, random 4K ${RAND4K_MS} ms)"

for e in ${ONLY:-parity stream rmw r5_15 nbd}; do
    [ -f "$here/e_$e.sh" ] || die "no experiment '$e' (parity stream rmw r5_15 nbd)"
    . "$here/e_$e.sh"
    say "experiment $e"
    "exp_$e"
done

LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
{
    echo "# The seeds' questions, answered on simulated disks"
    echo
    echo "Made by \`uraid bench seeds$( [ "$QUICK" = 1 ] && echo " --quick")\` on $START"
    echo "($(uname -srm); $(nproc) CPUs: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1);"
    echo "load average $LOAD0 at the start, $LOAD1 at the end: other jobs shared the machine)."
    echo
    echo "Every simulated disk is the member layer \`$DISK\`: $DISK_MBPS MB/s media rate, a random"
    echo "4 KiB request ${RAND4K_MS} ms (seek, half a revolution, transfer: README's disk model), one"
    echo "request at a time (with \`qd=32\` the disk picks the nearest of its 32 oldest waiting requests:"
    echo "NCQ, or the kernel's elevator that sorted the seeds' disks' requests). The physical limit of a figure is what these disks allow (e.g. (N-1) x"
    echo "$DISK_MBPS MB/s for a RAID-5 streaming read); *ratio* columns divide by it. Arrays are served"
    echo "as a user would use them: \`uraid mount\` (FUSE) -> \`losetup --direct-io=on\` -> ext4 (or"
    echo "btrfs), unless a table says otherwise. The raw disks and btrfs use the same simulated disks:"
    echo "each one a one-member \`linear\` uraid array with the same layer, mounted and looped the same"
    echo "way. CPU figures: the uraid process's user+system CPU per MB moved (the FUSE daemon or the"
    echo "NBD server), and the client's (fio's usr+sys, bonnie++'s %CP)."
    echo
} >"$OUT/parts/00-head.md"
cat "$OUT"/parts/*.md >"$OUT/report.md"
if [ -z "$ONLY" ]; then
    . "$here/plots.sh"
    make_plots
fi
rm -rf "$OUT/parts"
say "report: $OUT/report.md"
