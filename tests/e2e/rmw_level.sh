#!/bin/sh
# md's rmw_level on every way of serving an array: `uraid mount --rmw-level`
# (4 KiB writes through the FUSE file, counted by `uraid status`: rmw or rcw
# as the level says), changed at run time with `uraid rmw-level --control`
# (md's sysfs rmw_level), `uraid serve --rmw-level` (handed to the nbdkit
# plugin as rmw_level=N, read back over the control socket), `uraid write
# --rmw-level`; bad levels refused with one line and nothing written; the
# data read back and `uraid check` clean at the end. Needs root, /dev/fuse,
# fusermount3, nbdkit and nbdcopy: without them the test fails with the
# reason (never skips).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

mnt=$t_tmp/fuse
ctl=$t_tmp/ctl.sock
sock=$t_tmp/nbd.sock
pid=""
T="timeout 20"

t_at_exit '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null'
t_at_exit 'timeout 10 fusermount3 -uz "$mnt" 2>/dev/null'

t_need nbdkit nbdcopy timeout
t_need_fuse

# waits for the control socket of the server started as $pid
wait_ctl() {
    n=0
    while [ ! -S "$ctl" ] && [ $n -lt 100 ]; do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1; n=$((n + 1))
    done
    [ -S "$ctl" ]
}

stop_server() {
    $T $URAID stop --control "$ctl" >/dev/null 2>&1
    n=0
    while kill -0 "$pid" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=""
    rm -f "$ctl"
}

# stripe-write counters of the serving array: "rmw R rcw C"
counts() {
    $T $URAID status --control "$ctl" | sed -n 's/.*stripe writes: full [0-9]*, rmw \([0-9]*\), rcw \([0-9]*\).*/rmw \1 rcw \2/p'
}

mkdir -p "$mnt"
m=""
for i in 0 1 2 3 4; do truncate -s 16M "$t_tmp/d$i.img"; m="$m $t_tmp/d$i.img"; done
$T $URAID create --level 5 --raid-devices 5 --chunk 64K --consistency-policy resync $m >"$t_tmp/create.log" 2>&1 \
    || { t_fail "create" "$(cat "$t_tmp/create.log")"; t_finish; exit 1; }
head -c 4M /dev/urandom >"$t_tmp/model"
$T $URAID write --rmw-level 0 $m <"$t_tmp/model" && t_ok "uraid write --rmw-level 0" || t_fail "write --rmw-level 0"

# refusals: one line, exit 2, nothing written
sum_before=$(cat $m | md5sum)
t_exits "write --rmw-level 3 refused" 2 "^uraid write: --rmw-level needs 0 (reconstruct-write only), 1 (fewest reads) or 2 (prefer read-modify-write), got 3\$" \
    $URAID write --rmw-level 3 $m </dev/null
t_exits "serve --rmw-level x refused" 2 "^uraid serve: --rmw-level needs 0" $URAID serve --rmw-level x --socket "$sock" $m
t_exits "mount --rmw-level without a value refused" 2 "^uraid mount: --rmw-level needs 0" $URAID mount $m "$mnt" --rmw-level
[ "$(cat $m | md5sum)" = "$sum_before" ] && t_ok "refusals wrote nothing" || t_fail "refusals changed the members"
t_exits "plugin rmw_level=5 refused" 1 "rmw_level=5: give 0" \
    nbdkit -U "$t_tmp/p.sock" "$(dirname "$URAID")/nbdkit-uraid-plugin.so" $(echo $m | sed 's/[^ ]*/member=&/g') rmw_level=5 --run true

# FUSE: 4 KiB writes, one data block of a 5-member RAID-5: rmw reads 2, rcw 3
$URAID mount --foreground --control "$ctl" --rmw-level 0 $m "$mnt" >"$t_tmp/daemon.log" 2>&1 &
pid=$!
if wait_ctl; then
    t_exits "mount --rmw-level 0: the level" 0 "^rmw_level 0\$" $URAID rmw-level --control "$ctl"
    head -c 4096 /dev/urandom >"$t_tmp/blk"
    dd if="$t_tmp/blk" of="$mnt/array" bs=4096 seek=1 conv=notrunc,fsync status=none
    dd if="$t_tmp/blk" of="$t_tmp/model" bs=4096 seek=1 conv=notrunc status=none
    c0=$(counts)
    t_exits "rmw-level 1 over the control socket" 0 "^rmw_level 1\$" $URAID rmw-level --control "$ctl" 1
    dd if="$t_tmp/blk" of="$mnt/array" bs=4096 seek=3 conv=notrunc,fsync status=none
    dd if="$t_tmp/blk" of="$t_tmp/model" bs=4096 seek=3 conv=notrunc status=none
    c1=$(counts)
    echo "  after a 4 KiB write at level 0: $c0; one more at level 1: $c1"
    case "$c0" in "rmw 0 rcw "[1-9]*) t_ok "level 0: reconstruct-write" ;; *) t_fail "level 0 counts" "$c0" ;; esac
    r1=${c1#rmw }; r1=${r1%% *}
    [ "${r1:-0}" -ge 1 ] && t_ok "level 1: read-modify-write" || t_fail "level 1 counts" "$c1"
    t_exits "rmw-level 4 refused" 1 "^uraid rmw-level: rmw-level takes 0 (reconstruct-write only), 1 (fewest reads) or 2" \
        $URAID rmw-level --control "$ctl" 4
    t_exits "the level stays 1" 0 "^rmw_level 1\$" $URAID rmw-level --control "$ctl"
    stop_server
else
    t_fail "mount" "$(cat "$t_tmp/daemon.log")"
fi

# NBD: serve hands the level to the plugin
$URAID serve --socket "$sock" --control "$ctl" --rmw-level 2 $m >"$t_tmp/serve.log" 2>&1 &
pid=$!
if wait_ctl; then
    t_exits "serve --rmw-level 2: the level" 0 "^rmw_level 2\$" $URAID rmw-level --control "$ctl"
    $T nbdcopy "nbd+unix:///?socket=$sock" - 2>/dev/null | head -c 4194304 | cmp -s - "$t_tmp/model" \
        && t_ok "served data as written" || t_fail "served data differs"
    stop_server
else
    t_fail "serve" "$(cat "$t_tmp/serve.log")"
fi

$T $URAID cat $m | head -c 4194304 | cmp -s - "$t_tmp/model" && t_ok "data read back" || t_fail "data differs"
t_exits "check: mismatch_cnt 0" 0 "mismatch_cnt 0" $URAID check $m
t_finish
