#!/bin/sh
# An array whose members are NBD exports, against the same exports used
# directly, in one run:
#
#   raw     the six nbdkit exports written (from a tmpfs file) and read (to
#           null:) by six nbdcopy processes at once, each its own export:
#           what the exports and nbdkit can move with no RAID in between;
#   cli     `uraid write` of DATA bytes from a tmpfs file and `uraid cat` of
#           the whole array to /dev/null, on a RAID-6 of the six exports
#           (64 KiB chunk): four 4 MiB requests of the command in flight;
#   served  the same array served by `uraid serve` on a unix socket, DATA
#           copied in and the whole export out by nbdcopy (4 connections,
#           many requests in flight);
#   each with the NBD backend's default of up to 4 connections per member
#   (pipelined requests on each, a connection opened when the open ones
#   have 16 outstanding) and again with 1 (URAID_NBD_CONNECTIONS=1).
#
# The exports are nbdkit's file plugin on tmpfs files. ideal = raw x 4/6
# (two of six members' bytes are parity); ratio = array / ideal. For writes
# that is exact (the members write 6/4 of the data). For reads it is
# generous: a healthy RAID-6 read skips the parity chunks, so the members
# move only the data and the true ceiling is raw itself; array/raw is
# printed too. On a machine whose CPUs are the limit, raw (six nbdcopy and
# six nbdkit) and the array compete for the same CPUs, so both move with
# the load: compare runs made together. Each figure is the median of RUNS
# runs (3). URAID picks the binary (build/uraid), so an old build in another
# directory can be run alternately against a new one. Not a test: nothing
# here is checked.
#
#   bench/nbd_members.sh                      (about a minute)
#   MEMBER_SIZE=128M DATA=256M RUNS=1 bench/nbd_members.sh   (a smoke run)
#
# Environment: MEMBER_SIZE (256M), DATA (512M of array data written),
# RUNS (3), WORKDIR (/dev/shm), DELAY (e.g. 2ms: nbdkit's delay filter adds
# it to every read and write, a remote export's round trip, where the
# connection pool matters; none by default), POLICY (the array's
# --consistency-policy: RAID-6's default, ppl, when unset; resync leaves the
# log's cost out). Servers and files are removed on exit.
set -eu
cd "$(dirname "$0")/.." || exit 1

MEMBER_SIZE=${MEMBER_SIZE:-256M}
DATA=${DATA:-512M}
RUNS=${RUNS:-3}
WORKDIR=${WORKDIR:-/dev/shm}
URAID=${URAID:-build/uraid}

for tool in nbdkit nbdcopy nbdinfo; do
    command -v "$tool" >/dev/null 2>&1 || { echo "nbd_members.sh: $tool is not installed (scripts/deps.sh)" >&2; exit 1; }
done
[ -x "$URAID" ] || { echo "nbd_members.sh: build $URAID first (make)" >&2; exit 1; }

dir=$(mktemp -d "$WORKDIR/uraid-nbdbench.XXXXXX")
pids=""
cleanup() {
    for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

bytes() { numfmt --from=iec "$1"; }
now_ns() { date +%s%N; }
# mbps BYTES START_NS END_NS
mbps() { echo "$1 $2 $3" | awk '{ printf "%.0f", $1 / (($3 - $2) / 1e9) / 1e6 }'; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

uris=""
for i in 0 1 2 3 4 5; do
    truncate -s "$MEMBER_SIZE" "$dir/d$i"
    # shellcheck disable=SC2086
    nbdkit -f --exit-with-parent --unix "$dir/s$i" ${DELAY:+--filter=delay} file "$dir/d$i" \
        ${DELAY:+delay-read=$DELAY delay-write=$DELAY} &
    pids="$pids $!"
    uris="$uris nbd+unix:///?socket=$dir/s$i"
done
for u in $uris; do
    n=0
    until nbdinfo --size "$u" >/dev/null 2>&1; do
        n=$((n + 1)); [ $n -lt 100 ] || { echo "nbd_members.sh: nbdkit did not start" >&2; exit 1; }; sleep 0.1
    done
done

data=$(bytes "$DATA")
per=$((data / 4))
head -c "$data" /dev/urandom >"$dir/src"
head -c "$per" "$dir/src" >"$dir/slice"

raw_w="" raw_r="" a4_w="" a4_r="" a1_w="" a1_r="" s4_w="" s4_r="" s1_w="" s1_r=""
asock=$dir/array.sock
auri="nbd+unix:///?socket=$asock"
# serve_array CONNS: the array served in the background (sets spid)
serve_array() {
    # shellcheck disable=SC2086
    URAID_NBD_CONNECTIONS=$1 $URAID serve $uris --socket "$asock" 2>>"$dir/serve.err" &
    spid=$!
    n=0
    until nbdinfo --size "$auri" >/dev/null 2>&1; do
        n=$((n + 1)); [ $n -lt 100 ] || { echo "nbd_members.sh: uraid serve did not start: $(tail -n 2 "$dir/serve.err")" >&2; exit 1; }; sleep 0.1
    done
}
for run in $(seq 1 "$RUNS"); do
    # raw: six nbdcopy at once, each writing `per` bytes to its own export
    t0=$(now_ns)
    cpids=""
    for u in $uris; do nbdcopy "$dir/slice" "$u" & cpids="$cpids $!"; done
    for p in $cpids; do wait "$p"; done
    t1=$(now_ns)
    raw_w="$raw_w $(mbps $((per * 6)) "$t0" "$t1")"
    t0=$(now_ns)
    cpids=""
    for u in $uris; do nbdcopy --no-extents "$u" null: & cpids="$cpids $!"; done
    for p in $cpids; do wait "$p"; done
    t1=$(now_ns)
    raw_r="$raw_r $(mbps $(($(bytes "$MEMBER_SIZE") * 6)) "$t0" "$t1")"

    for conns in 4 1; do
        # shellcheck disable=SC2086
        URAID_NBD_CONNECTIONS=$conns $URAID create --force --level 6 --raid-devices 6 --chunk 64K --assume-clean \
            ${POLICY:+--consistency-policy $POLICY} $uris >/dev/null
        t0=$(now_ns)
        # shellcheck disable=SC2086
        URAID_NBD_CONNECTIONS=$conns $URAID write $uris <"$dir/src"
        t1=$(now_ns)
        w=$(mbps "$data" "$t0" "$t1")
        # shellcheck disable=SC2086
        size=$(( $($URAID detail $uris | awk '/Array Size :/ {print $4}') * 1024 ))
        t0=$(now_ns)
        # shellcheck disable=SC2086
        URAID_NBD_CONNECTIONS=$conns $URAID cat $uris >/dev/null
        t1=$(now_ns)
        r=$(mbps "$size" "$t0" "$t1")
        if [ "$conns" = 4 ]; then a4_w="$a4_w $w"; a4_r="$a4_r $r"; else a1_w="$a1_w $w"; a1_r="$a1_r $r"; fi
        serve_array "$conns"
        t0=$(now_ns)
        nbdcopy "$dir/src" "$auri"
        t1=$(now_ns)
        w=$(mbps "$data" "$t0" "$t1")
        t0=$(now_ns)
        nbdcopy --no-extents "$auri" null:
        t1=$(now_ns)
        r=$(mbps "$size" "$t0" "$t1")
        kill -TERM "$spid"; wait "$spid" || true
        if [ "$conns" = 4 ]; then s4_w="$s4_w $w"; s4_r="$s4_r $r"; else s1_w="$s1_w $w"; s1_r="$s1_r $r"; fi
    done
done

row() {
    # row NAME ARRAY_RUNS RAW_RUNS
    a=$(echo "$2" | median) r=$(echo "$3" | median)
    echo "$1 $a $r $2 | $3" | awk '{
        ideal = $3 * 4 / 6
        runs = ""; for (i = 4; i <= NF; i++) runs = runs " " $i
        printf "| %s | %d | %d | %d | %.2fx | %.2fx |%s |\n", $1, $2, $3, ideal, $2 / ideal, $2 / $3, runs }'
}
echo "RAID-6 of 6 nbdkit file exports on $WORKDIR ($MEMBER_SIZE each, chunk 64K${DELAY:+, delay $DELAY per request}${POLICY:+, policy $POLICY}), $DATA written, median of $RUNS"
echo "| test | array MB/s | raw MB/s | ideal | array/ideal | array/raw | runs (array | raw) |"
echo "|---|---|---|---|---|---|---|"
row "cli-seq-write,4-conns" "$a4_w" "$raw_w"
row "cli-seq-read,4-conns" "$a4_r" "$raw_r"
row "cli-seq-write,1-conn" "$a1_w" "$raw_w"
row "cli-seq-read,1-conn" "$a1_r" "$raw_r"
row "served-seq-write,4-conns" "$s4_w" "$raw_w"
row "served-seq-read,4-conns" "$s4_r" "$raw_r"
row "served-seq-write,1-conn" "$s1_w" "$raw_w"
row "served-seq-read,1-conn" "$s1_r" "$raw_r"
