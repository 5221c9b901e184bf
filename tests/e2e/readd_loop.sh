#!/bin/sh
# md's fail/remove/re-add loop on a serving array (`uraid mount --foreground
# --control`), 20 cycles each (6 in make check) on RAID-1, RAID-5 and RAID-6 (the last two
# with a write-intent bitmap, so the member comes back as a re-add), while a
# writer rewrites the array file through FUSE the whole time. Each cycle:
# `uraid fail`, `uraid remove`, `uraid add` of the same file, then the
# automatic recovery until [n/n]. At the end the writer stops, the server
# stops, and the array read back with `uraid cat` equals what the writer
# wrote last; `uraid check` says mismatch_cnt 0; mdadm --examine sees every
# slot active. Needs root, /dev/fuse, fusermount3 and mdadm: without them
# the test fails with the reason (never skips).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

mnt=$t_tmp/fuse
ctl=$t_tmp/ctl.sock
pid=""
wpid=""
T="timeout 30"
# make check: 6 cycles per level (a RAID-1 re-add is a full recovery at md's sync_speed_min
# while the writer runs); the long mode runs md's 20
if t_long; then CYCLES=${URAID_LOOP_CYCLES:-20}; else CYCLES=${URAID_LOOP_CYCLES:-6}; fi
[ "$CYCLES" -ge 20 ] || t_short_note "$CYCLES cycles per level instead of 20"

t_at_exit '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null'
t_at_exit 'timeout 10 fusermount3 -uz "$mnt" 2>/dev/null'
t_at_exit '[ -n "$wpid" ] && kill "$wpid" 2>/dev/null'

t_need mdadm timeout cmp
t_need_fuse
mkdir -p "$mnt"

BLK=65536
NBLK=96 # the writer's region: 6 MiB at the start of the array
head -c $((BLK * NBLK)) /dev/urandom >"$t_tmp/gen0"
head -c $((BLK * NBLK)) /dev/urandom >"$t_tmp/gen1"

# writer: generation g writes every block of gen(g % 2) in order, noting
# "g k" after each block; stops when $t_tmp/stop appears
writer() {
    g=0
    while [ ! -e "$t_tmp/stop" ]; do
        k=0
        while [ $k -lt $NBLK ] && [ ! -e "$t_tmp/stop" ]; do
            dd if="$t_tmp/gen$((g % 2))" of="$mnt/array" bs=$BLK skip=$k seek=$k count=1 conv=notrunc,fsync \
                2>/dev/null || { echo "dd failed at $g $k" >>"$t_tmp/werr"; }
            echo "$g $k" >"$t_tmp/wpos"
            k=$((k + 1))
        done
        g=$((g + 1))
    done
}

# expected FILE: what the writer's region must hold after it stopped at "g k"
expected() {
    read -r g k <"$t_tmp/wpos"
    cur="$t_tmp/gen$((g % 2))" prev="$t_tmp/gen$(((g + 1) % 2))"
    dd if="$cur" of="$1" bs=$BLK count=$((k + 1)) 2>/dev/null
    [ "$g" -gt 0 ] && dd if="$prev" of="$1" bs=$BLK skip=$((k + 1)) seek=$((k + 1)) 2>/dev/null
    [ "$g" -eq 0 ] && dd if=/dev/zero of="$1" bs=$BLK seek=$((k + 1)) count=$((NBLK - k - 1)) 2>/dev/null
    truncate -s $((BLK * NBLK)) "$1"
}

status_has() { $URAID status --control "$ctl" 2>/dev/null | grep -q "$1"; }

# loop LEVEL N SIZE [create options]: N members of SIZE
loop() {
    level=$1 n=$2 size=$3; shift 3
    members=""
    for i in $(seq 0 $((n - 1))); do
        rm -f "$t_tmp/m$i.img"; truncate -s "$size" "$t_tmp/m$i.img"; members="$members $t_tmp/m$i.img"
    done
    # shellcheck disable=SC2086
    $T $URAID create --level "$level" --raid-devices "$n" --chunk 64K --assume-clean "$@" $members \
        >"$t_tmp/create.log" 2>&1 || { t_fail "RAID-$level: create" "$(cat "$t_tmp/create.log")"; return; }
    # shellcheck disable=SC2086
    $URAID mount --foreground --control "$ctl" $members "$mnt" >"$t_tmp/daemon.log" 2>&1 &
    pid=$!
    w=0
    while [ ! -f "$mnt/array" ] && [ $w -lt 100 ]; do sleep 0.1; w=$((w + 1)); done
    [ -f "$mnt/array" ] || { t_fail "RAID-$level: serve" "$(cat "$t_tmp/daemon.log")"; return; }
    rm -f "$t_tmp/stop" "$t_tmp/wpos" "$t_tmp/werr"
    writer &
    wpid=$!
    bad="" c=0
    while [ $c -lt "$CYCLES" ] && [ -z "$bad" ]; do
        m="$t_tmp/m$((c % n)).img"
        $T $URAID fail --control "$ctl" "$m" >"$t_tmp/cyc" 2>&1 || bad="cycle $c: fail: $(cat "$t_tmp/cyc")"
        [ -z "$bad" ] && { $T $URAID remove --control "$ctl" "$m" >"$t_tmp/cyc" 2>&1 || bad="cycle $c: remove: $(cat "$t_tmp/cyc")"; }
        [ -z "$bad" ] && { $T $URAID add --control "$ctl" "$m" >"$t_tmp/cyc" 2>&1 || bad="cycle $c: add: $(cat "$t_tmp/cyc")"; }
        w=0
        until [ -n "$bad" ] || status_has "\[$n/$n\]" || [ $w -ge 600 ]; do sleep 0.1; w=$((w + 1)); done
        [ -z "$bad" ] && ! status_has "\[$n/$n\]" && bad="cycle $c: not whole after 60 s: $($URAID status --control "$ctl" | head -n 1)"
        [ -z "$bad" ] && [ "$(grep -c "$m" "$t_tmp/cyc")" -gt 1 ] && bad="cycle $c: $(cat "$t_tmp/cyc")"
        c=$((c + 1))
    done
    [ -z "$bad" ] && t_ok "RAID-$level n=$n: $CYCLES fail/remove/add cycles under writes, whole after each" \
        || t_fail "RAID-$level fail/remove/add loop" "$bad"
    $URAID status --control "$ctl" >"$t_tmp/st" 2>&1
    if grep -q "(F)" "$t_tmp/st"; then t_fail "RAID-$level: no phantom faulty entry" "$(head -n 1 "$t_tmp/st")"
    else t_ok "RAID-$level: no phantom faulty entry in the status"; fi
    touch "$t_tmp/stop"
    wait "$wpid"
    wpid=""
    [ -s "$t_tmp/werr" ] && t_fail "RAID-$level: writer" "$(head -n 3 "$t_tmp/werr")" || t_ok "RAID-$level: every write succeeded"
    $T $URAID stop --control "$ctl" >/dev/null 2>&1
    w=0
    while kill -0 "$pid" 2>/dev/null && [ $w -lt 100 ]; do sleep 0.1; w=$((w + 1)); done
    wait "$pid" && t_ok "RAID-$level: server exits cleanly" || t_fail "RAID-$level: server exit" "$(tail -n 3 "$t_tmp/daemon.log")"
    pid=""
    expected "$t_tmp/want"
    # shellcheck disable=SC2086
    $URAID cat $members 2>"$t_tmp/cat.err" | head -c $((BLK * NBLK)) >"$t_tmp/got"
    cmp -s "$t_tmp/want" "$t_tmp/got" && t_ok "RAID-$level: the data is what the writer wrote last ($(cat "$t_tmp/wpos"))" \
        || t_fail "RAID-$level: data" "$(cmp "$t_tmp/want" "$t_tmp/got" 2>&1 | head -n 1) $(cat "$t_tmp/cat.err")"
    # shellcheck disable=SC2086
    $T $URAID check $members >"$t_tmp/chk" 2>&1 && grep -q "mismatch_cnt 0" "$t_tmp/chk" \
        && t_ok "RAID-$level: uraid check: mismatch_cnt 0" || t_fail "RAID-$level: check" "$(tail -n 2 "$t_tmp/chk")"
    want_state=$(printf "%${n}s" | tr ' ' A)
    bad=""
    for m in $members; do mdadm --examine "$m" 2>&1 | grep -q "Array State : $want_state" || bad="$bad $m"; done
    [ -z "$bad" ] && t_ok "RAID-$level: mdadm --examine: every slot active" || t_fail "RAID-$level: Array State" "$bad"
}

# RAID-1's re-add is a whole recovery, paced at sync_speed_min while the
# writer runs (about 1 MB/s): its members are just big enough for the
# writer's region, so a cycle takes seconds, not half a minute
loop 1 2 8M
loop 5 4 24M --bitmap internal --bitmap-chunk 1M
loop 6 6 24M --bitmap internal --bitmap-chunk 1M
t_finish
