#!/bin/sh
# The served array against references, with fio, in one run (issue 5):
#
#   uraid   a 6-member RAID-6 (64 KiB chunk) of tmpfs files served by
#           `uraid serve` (nbdkit + the uraid plugin) on a unix socket;
#   file    nbdkit's own file plugin serving one tmpfs file of the array's
#           size: the same nbdkit and fio NBD path with no RAID behind it;
#   btrfs   btrfs with data and metadata raid6 on 6 loop devices backed by
#           tmpfs files of the member size, fio on a file in it (libaio,
#           O_DIRECT when the file system takes it); skipped, with the
#           reason, when it cannot run here.
#
# Each job shape (sequential 1 MiB read and write; random write of 4 KiB,
# 64 KiB, 512 KiB) runs on the three targets in turn, 8 fio jobs of
# iodepth 4, each on its own connection and its own region. Prints a table
# with the ratios and the goals, the parity routines the server chose and
# how busy the server processes were.
#
#   bench/fio_nbd.sh [--json]           (make bench-serve)
#   SECONDS_PER_JOB=2 bench/fio_nbd.sh  (a smoke run)
#
# Environment: SECONDS_PER_JOB (10), MEMBER_SIZE (1G: array 4 GiB),
# REGION (128M per fio job, 1 GiB in all), WORKDIR (/dev/shm).
# Needs fio, jq, nbdkit, nbdinfo, the built uraid and plugin; btrfs also
# needs root, loop devices and mkfs.btrfs (btrfs-progs). Everything it
# creates (servers, mounts, loop devices, files) is removed on exit and on
# Ctrl-C.
set -eu
cd "$(dirname "$0")/.." || exit 1

SECONDS_PER_JOB=${SECONDS_PER_JOB:-10}
MEMBER_SIZE=${MEMBER_SIZE:-1G}
REGION=${REGION:-128M}
WORKDIR=${WORKDIR:-/dev/shm}
URAID=${URAID:-build/uraid}
PLUGIN=build/nbdkit-uraid-plugin.so
NJOBS=8
IODEPTH=4

json=0
for a in "$@"; do
    case $a in
        --json) json=1 ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "fio_nbd.sh: unknown argument '$a' (expected --json)" >&2; exit 2 ;;
    esac
done

die() { echo "fio_nbd.sh: $*" >&2; exit 1; }
say() { echo "$*" >&2; }

for c in fio jq nbdkit nbdinfo awk; do
    command -v "$c" >/dev/null 2>&1 || die "$c is not installed (run scripts/deps.sh)"
done
[ -x "$URAID" ] || die "$URAID is not built (run make)"
[ -f "$PLUGIN" ] || die "$PLUGIN is not built (make with nbdkit-plugin-dev installed)"
case $SECONDS_PER_JOB in ''|*[!0-9]*|0) die "SECONDS_PER_JOB must be a positive whole number of seconds" ;; esac

work=$(mktemp -d "$WORKDIR/uraid-fio.XXXXXX") || die "cannot make a directory in $WORKDIR"
uraid_pid="" file_pid="" loops="" mounted=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    set +e
    for p in $uraid_pid $file_pid; do kill -TERM "$p" 2>/dev/null; done
    for p in $uraid_pid $file_pid; do wait "$p" 2>/dev/null; done
    [ -n "$mounted" ] && umount "$mounted"
    for l in $loops; do losetup -d "$l"; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# bytes SIZE: 1G, 512M, 64K or a plain byte count
bytes() {
    case $1 in
        *[Gg]) echo $(( ${1%?} * 1073741824 )) ;;
        *[Mm]) echo $(( ${1%?} * 1048576 )) ;;
        *[Kk]) echo $(( ${1%?} * 1024 )) ;;
        *) echo $(( $1 )) ;;
    esac
}
member_bytes=$(bytes "$MEMBER_SIZE")
region_bytes=$(bytes "$REGION")
array_bytes=$(( (member_bytes - 16777216) * 4 ))   # roughly: 4 data members, less the data offset
[ $((region_bytes * NJOBS)) -le $((array_bytes / 2)) ] \
    || die "REGION x $NJOBS ($((region_bytes * NJOBS)) bytes) must fit in half the array (MEMBER_SIZE=$MEMBER_SIZE)"

# wait_nbd SOCKET PID: until nbdinfo answers on SOCKET (at most 15 s)
wait_nbd() {
    n=0
    while ! timeout 5 nbdinfo --size "nbd+unix:///?socket=$1" >/dev/null 2>&1; do
        n=$((n + 1))
        kill -0 "$2" 2>/dev/null || return 1
        [ $n -lt 60 ] || return 1
        sleep 0.25
    done
}

# ---- uraid: RAID-6 of 6 tmpfs members, served by uraid serve --------------
say "setting up: uraid RAID-6 (6 x $MEMBER_SIZE tmpfs members, chunk 64K)"
members=""
for i in 0 1 2 3 4 5; do
    truncate -s "$MEMBER_SIZE" "$work/m$i"
    members="$members $work/m$i"
done
# shellcheck disable=SC2086
$URAID create --level 6 --raid-devices 6 --chunk 64K --assume-clean $members >"$work/create.log" 2>&1 \
    || die "uraid create failed: $(tail -n 1 "$work/create.log")"
usock=$work/uraid.sock
ctl=$work/ctl.sock
# shellcheck disable=SC2086
$URAID serve --socket "$usock" --control "$ctl" $members 2>"$work/uraid-serve.err" &
uraid_pid=$!
wait_nbd "$usock" "$uraid_pid" || die "uraid serve did not start: $(tail -n 1 "$work/uraid-serve.err")"
size=$(nbdinfo --size "nbd+unix:///?socket=$usock")
uraid_nbdkit=$(pgrep -P "$uraid_pid" | head -n 1 || true)

# ---- file: nbdkit's file plugin on one tmpfs file of the array's size -----
say "setting up: nbdkit file plugin on one tmpfs file of $size bytes"
truncate -s "$size" "$work/file.img"
fsock=$work/file.sock
nbdkit --foreground --exit-with-parent -U "$fsock" file "$work/file.img" 2>"$work/file-serve.err" &
file_pid=$!
wait_nbd "$fsock" "$file_pid" || die "nbdkit file plugin did not start: $(tail -n 1 "$work/file-serve.err")"

# ---- btrfs raid6 on 6 loop devices over tmpfs files ------------------------
btrfs_why=""
btrfs_direct=1
mnt=$work/btrfs
if [ "$(id -u)" -ne 0 ]; then
    btrfs_why="needs root (loop devices, mount)"
elif ! grep -qw btrfs /proc/filesystems && ! modprobe btrfs 2>/dev/null; then
    btrfs_why="this kernel has no btrfs"
elif ! command -v mkfs.btrfs >/dev/null 2>&1; then
    btrfs_why="mkfs.btrfs is not installed (apt-get install btrfs-progs)"
elif ! command -v losetup >/dev/null 2>&1; then
    btrfs_why="losetup is not installed (util-linux)"
fi
if [ -z "$btrfs_why" ]; then
    say "setting up: btrfs raid6 (data and metadata) on 6 loop devices of $MEMBER_SIZE over tmpfs"
    devopts=""
    for i in 0 1 2 3 4 5; do
        truncate -s "$MEMBER_SIZE" "$work/b$i"
        if ! l=$(losetup -f --show "$work/b$i" 2>"$work/losetup.err"); then
            btrfs_why="losetup: $(tail -n 1 "$work/losetup.err")"
            break
        fi
        loops="$loops $l"
        devopts="$devopts${devopts:+,}device=$l"
    done
fi
if [ -z "$btrfs_why" ]; then
    mkdir -p "$mnt"
    # shellcheck disable=SC2086
    if ! mkfs.btrfs -q -f -d raid6 -m raid6 $loops >"$work/mkfs.log" 2>&1; then
        btrfs_why="mkfs.btrfs: $(tail -n 1 "$work/mkfs.log")"
    elif ! mount -t btrfs -o "$devopts" "$(echo $loops | cut -d' ' -f1)" "$mnt" 2>"$work/mount.err"; then
        btrfs_why="mount: $(tail -n 1 "$work/mount.err")"
    else
        mounted=$mnt
    fi
fi
if [ -z "$btrfs_why" ]; then
    fallocate -l $((region_bytes * NJOBS)) "$mnt/fio.dat" 2>/dev/null || true
    if ! fio --name=probe --filename="$mnt/fio.dat" --ioengine=libaio --direct=1 --rw=write --bs=4k \
        --size=1M >"$work/probe.out" 2>&1; then
        btrfs_direct=0
        say "btrfs: O_DIRECT refused ($(grep -m1 -i err "$work/probe.out" || true)); buffered I/O with end_fsync"
    fi
fi
[ -n "$btrfs_why" ] && say "btrfs column skipped: $btrfs_why"

# ---- fio ------------------------------------------------------------------
# fio_run OUT TARGET ARGS...: one fio run against TARGET (uraid, file, btrfs)
fio_run() {
    out=$1 target=$2; shift 2
    case $target in
        uraid) set -- --ioengine=nbd --uri="nbd+unix:///?socket=$usock" "$@" ;;
        file) set -- --ioengine=nbd --uri="nbd+unix:///?socket=$fsock" "$@" ;;
        btrfs) set -- --ioengine=libaio --direct=$btrfs_direct --filename="$mnt/fio.dat" "$@"
               [ "$btrfs_direct" = 1 ] || set -- "$@" --end_fsync=1 ;;
    esac
    # --foreground: fio stays in our process group and sees Ctrl-C at once
    timeout --foreground $((SECONDS_PER_JOB * 3 + 120)) fio --name="$target" --numjobs=$NJOBS --iodepth=$IODEPTH \
        --size="$region_bytes" --offset_increment="$region_bytes" --group_reporting=1 \
        --output-format=json --output="$out" "$@" >"$out.err" 2>&1
}

# cpu_ticks PID: user + system clock ticks of a process so far (0 if gone)
cpu_ticks() {
    [ -n "$1" ] && awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
# busy_ticks: clock ticks all CPUs spent not idle (nor waiting for I/O) so far
busy_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
ncpu=$(getconf _NPROCESSORS_ONLN)
hz=$(getconf CLK_TCK)

targets="uraid file"
[ -z "$btrfs_why" ] && targets="$targets btrfs"

# Fill every target's working set once, so no measured job writes into holes.
for t in $targets; do
    say "prefill: $t ($NJOBS x $REGION)"
    fio_run "$work/prefill-$t.json" "$t" --rw=write --bs=1M \
        || die "prefill of $t failed: $(tail -n 1 "$work/prefill-$t.json.err")"
done

jobs="seqread:read:1M seqwrite:write:1M randwrite4k:randwrite:4k randwrite64k:randwrite:64k randwrite512k:randwrite:512k"
failed=0
results=$work/results.txt
: >"$results"
for j in $jobs; do
    name=${j%%:*} rest=${j#*:}
    rw=${rest%%:*} bs=${rest#*:}
    for t in $targets; do
        say "$name: $t ($NJOBS jobs x iodepth $IODEPTH, ${SECONDS_PER_JOB}s)"
        case $t in uraid) spid=$uraid_nbdkit ;; file) spid=$file_pid ;; *) spid="" ;; esac
        c0=$(cpu_ticks "$spid") m0=$(busy_ticks)
        t0=$(date +%s%N)
        if fio_run "$work/$name-$t.json" "$t" --rw="$rw" --bs="$bs" --time_based=1 \
            --runtime="$SECONDS_PER_JOB" --norandommap=1 --randrepeat=0; then
            c1=$(cpu_ticks "$spid") m1=$(busy_ticks)
            t1=$(date +%s%N)
            # MB/s = 10^6 bytes/s; CPU: % of one vCPU used by the server
            # process, and % of all vCPUs busy (fio, server, kernel, others)
            ns=$((t1 - t0))
            srv=$([ -n "$spid" ] && awk -v a="$c0" -v b="$c1" -v hz="$hz" -v ns=$ns \
                'BEGIN { printf "%.0f", (b - a) / hz / (ns / 1e9) * 100 }' || echo "-")
            busy=$(awk -v a="$m0" -v b="$m1" -v hz="$hz" -v ns=$ns -v n="$ncpu" \
                'BEGIN { printf "%.0f", (b - a) / hz / (ns / 1e9) / n * 100 }')
            jq -r '.jobs[0] | "\((.read.bw_bytes + .write.bw_bytes) / 1e6) \(.read.iops + .write.iops)"' \
                "$work/$name-$t.json" | while read -r mbps iops; do
                    printf '%s %s %.1f %.0f %s %s\n' "$name" "$t" "$mbps" "$iops" "$busy" "$srv"
                done >>"$results"
        else
            say "fio $name on $t failed: $(tail -n 1 "$work/$name-$t.json.err")"
            failed=1
            case $t in
                uraid) kill -0 "$uraid_pid" 2>/dev/null || die "uraid serve exited: $(tail -n 1 "$work/uraid-serve.err")" ;;
                file) kill -0 "$file_pid" 2>/dev/null || die "nbdkit (file) exited: $(tail -n 1 "$work/file-serve.err")" ;;
            esac
        fi
    done
done

# Parity routines the server chose at start-up, from its control socket.
parity=$(timeout 10 "$URAID" status --control "$ctl" 2>/dev/null | sed -n 's/^parity: //p')
ioeng=$(timeout 10 "$URAID" status --control "$ctl" 2>/dev/null | sed -n 's/^io engine: //p')

# get NAME TARGET FIELD: 3 MB/s, 4 IOPS, 5 machine busy %, 6 server CPU %
get() { awk -v n="$1" -v t="$2" -v f="$3" '$1 == n && $2 == t { print $f }' "$results"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
# meets RATIO MIN: yes/no/-
meets() { awk -v r="$1" -v m="$2" 'BEGIN { if (r == "-") print "-"; else print (r + 0 >= m ? "met" : "NOT met") }'; }

direct_txt=$([ "$btrfs_direct" = 1 ] && echo "libaio, direct=1" || echo "libaio, buffered + end_fsync")
if [ $json -eq 1 ]; then
    {
        printf '{"seconds_per_job": %s, "numjobs": %s, "iodepth": %s, "member_size": "%s", "region": "%s",' \
            "$SECONDS_PER_JOB" "$NJOBS" "$IODEPTH" "$MEMBER_SIZE" "$REGION"
        printf ' "array_bytes": %s, "parity": "%s", "io_engine": "%s",' "$size" "$parity" "$ioeng"
        printf ' "btrfs": %s, "results": [' \
            "$([ -n "$btrfs_why" ] && printf '{"skipped": "%s"}' "$btrfs_why" || printf '{"fio": "%s"}' "$direct_txt")"
        awk 'NR > 1 { printf "," } { printf "{\"job\": \"%s\", \"target\": \"%s\", \"mbps\": %s, \"iops\": %s, \"machine_busy_pct\": %s, \"server_cpu_pct\": %s}", $1, $2, $3, $4, $5, ($6 == "-" ? "null" : $6) }' "$results"
        printf ']}\n'
    } | jq .
else
    echo
    echo "fio: $NJOBS jobs x iodepth $IODEPTH, ${SECONDS_PER_JOB} s per job; array $size bytes (RAID-6, 6 x $MEMBER_SIZE tmpfs, chunk 64K);"
    echo "each job on its own $REGION region; MB/s = 10^6 bytes/s; uraid and file over NBD (unix socket);"
    if [ -n "$btrfs_why" ]; then echo "btrfs: skipped ($btrfs_why)"; else echo "btrfs raid6/raid6 on 6 loop devices over tmpfs, fio $direct_txt"; fi
    echo
    printf '%-14s %9s %8s %9s %6s %-12s %9s %7s %-12s\n' job "uraid" "IOPS" "file" ratio "goal" btrfs "u/btrfs" "goal"
    for j in $jobs; do
        n=${j%%:*}
        u=$(get "$n" uraid 3) f=$(get "$n" file 3) b=$(get "$n" btrfs 3)
        r=$(ratio "$u" "$f") rb=$(ratio "$u" "$b")
        case $n in
            seqread) g=">=0.90 $(meets "$r" 0.9)" ;;
            seqwrite) g=">=0.70 $(meets "$r" 0.7)" ;;
            randwrite4k) g=">=0.30 $(meets "$r" 0.3)" ;;
            *) g="" ;;
        esac
        gb=""
        [ "$n" = randwrite4k ] && gb=">=3x $(meets "$rb" 3)"
        printf '%-14s %9s %8s %9s %6s %-12s %9s %7s %-12s\n' "$n" "${u:--}" "$(get "$n" uraid 4)" "${f:--}" "$r" "$g" \
            "${b:--}" "$rb" "$gb"
    done
    echo
    echo "CPU: server process (nbdkit) in % of one vCPU / whole machine busy in % of its $ncpu vCPUs"
    printf '%-14s %13s %13s %13s\n' job uraid file btrfs
    for j in $jobs; do
        n=${j%%:*}
        printf '%-14s %13s %13s %13s\n' "$n" "$(get "$n" uraid 6)/$(get "$n" uraid 5)" \
            "$(get "$n" file 6)/$(get "$n" file 5)" "-/$(get "$n" btrfs 5)"
    done
    echo
    echo "uraid parity in use: ${parity:-unknown}"
    echo "uraid member I/O engine: ${ioeng:-unknown}"
fi
exit $failed
