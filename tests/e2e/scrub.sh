#!/bin/sh
# uraid check / repair on member files and through a serving array's control
# socket: silent corruption written into member files with dd is listed with
# the right member file, sector and block kind; exit statuses 0 (nothing
# found), 3 (found, or left unrepaired), 1 (error); repair restores the data
# exactly (RAID-6) and leaves a page with two wrong blocks alone. Needs nbdkit
# for the serving part: without it the test fails with the reason.
#
# Geometry used below: RAID-6, 6 members, left-symmetric, chunk 64K (128
# sectors), data_offset 2048 sectors. Stripe s has P on member 5 - s % 6, Q
# on the next one, the data on the ones after Q.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

ctl=$t_tmp/ctl.sock
pid=""
T="timeout 60"
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && sleep 0.5 && kill -9 "$pid" 2>/dev/null
    rm -rf "$t_tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# corrupt MEMBER SECTOR COUNT: random bytes over COUNT sectors of a member file
corrupt() { head -c $(($3 * 512)) /dev/urandom | dd of="$1" bs=512 seek="$2" conv=notrunc status=none; }
d() { echo "$t_tmp/d$1.img"; }
DO=2048   # data_offset, sectors
C=128     # chunk, sectors

for i in 0 1 2 3 4 5; do truncate -s 16M "$(d $i)"; done
M="$(d 0) $(d 1) $(d 2) $(d 3) $(d 4) $(d 5)"
$T $URAID create --level 6 --raid-devices 6 --chunk 64K --consistency-policy resync $M >"$t_tmp/log" 2>&1 || { t_fail create "$(cat "$t_tmp/log")"; t_finish; exit 1; }
head -c 60M /dev/urandom >"$t_tmp/data"
$URAID write $M <"$t_tmp/data" 2>"$t_tmp/log" || { t_fail write "$(cat "$t_tmp/log")"; t_finish; exit 1; }
# same_data NAME: the array reads back byte for byte as the data written
# (not as an earlier read of it: a read failing or wrong both times agrees)
same_data() {
    $T $URAID cat $M 2>"$t_tmp/cat.err" | head -c "$(stat -c %s "$t_tmp/data")" >"$t_tmp/got"
    if cmp "$t_tmp/got" "$t_tmp/data" >"$t_tmp/cmp" 2>&1; then
        t_ok "$1"
    else
        t_fail "$1" "$(stat -c %s "$t_tmp/got") bytes read; $(head -n 1 "$t_tmp/cmp"); $(head -c 200 "$t_tmp/cat.err")"
    fi
}
same_data "the data written reads back"

t_exits "healthy: exit 0, mismatch_cnt 0" 0 "mismatch_cnt 0" $URAID check $M
t_exits "usage error: exit 2" 2 "unknown option" $URAID check --bogus $M
t_exits "not an array: exit 1" 1 "uraid check:" $URAID check "$t_tmp/data"

# stripe 1: P on 4, Q on 5, data 0..3: a page of data index 0 (member 0)
corrupt "$(d 0)" $((DO + C + 8)) 8
t_exits "data chunk: exit 3, member and sector listed" 3 \
    "^stripe 1: member $(d 0) sector $((DO + C + 8)) (slot 0), 8 sectors: data block wrong\$" $URAID check $M
grep -q "^check finished.*mismatch_cnt 8\$" "$t_tmp/out" && t_ok "mismatch_cnt 8 (one 4 KiB page)" || t_fail "mismatch_cnt" "$(cat "$t_tmp/out")"
t_exits "repair: the data block, exit 0" 0 "sector $((DO + C + 8)) (slot 0), 8 sectors: data block wrong, repaired\$" $URAID repair $M
same_data "data restored exactly"
t_exits "check after repair: exit 0" 0 "mismatch_cnt 0" $URAID check $M

# P of stripe 2 (member 3) and Q of stripe 4 (member 2), one byte range each
corrupt "$(d 3)" $((DO + 2 * C + 40)) 1
corrupt "$(d 2)" $((DO + 4 * C + 120)) 3
t_exits "P found" 3 "^stripe 2: member $(d 3) sector $((DO + 2 * C + 40)) (slot 3), 8 sectors: parity (P) block wrong\$" $URAID check $M
grep -q "^stripe 4: member $(d 2) sector $((DO + 4 * C + 120)) (slot 2), 8 sectors: Q block wrong\$" "$t_tmp/out" \
    && t_ok "Q found" || t_fail "Q found" "$(cat "$t_tmp/out")"
t_exits "repair P and Q" 0 "Q block wrong, repaired" $URAID repair $M
t_exits "check after repair: clean" 0 "mismatch_cnt 0" $URAID check $M
same_data "data unchanged by the parity repair"

# serving: check, status, repair and findings through the control socket
if command -v nbdkit >/dev/null 2>&1; then
    corrupt "$(d 1)" $((DO + 3 * C + 64)) 8   # stripe 3: P 2, Q 3, data 4 5 0 1: member 1 is data index 3
    $URAID serve --socket "$t_tmp/nbd.sock" --control "$ctl" --member-layer throttle=15M $M >"$t_tmp/serve.log" 2>&1 &
    pid=$!
    n=0
    while [ ! -S "$ctl" ] && [ $n -lt 100 ]; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; n=$((n + 1)); done
    if [ -S "$ctl" ]; then
        t_exits "serving: check starts" 0 "check started" $URAID check --control "$ctl"
        t_exits "serving: a second job is refused" 1 "already running" $URAID repair --control "$ctl"
        # the speed is shown once measured (no "speed=0K/sec" before): wait for it
        n=0
        until $URAID status --control "$ctl" 2>/dev/null | grep -q "check = .*speed=\|check finished" || [ $n -ge 50 ]; do
            sleep 0.1; n=$((n + 1))
        done
        t_exits "serving: status shows progress" 0 "check = .*speed=" $URAID status --control "$ctl"
        t_expect "serving: idle stops it" $URAID idle --control "$ctl"
        t_exits "serving: status says stopped" 0 "background: check stopped" $URAID status --control "$ctl"
        t_exits "serving: check --wait: exit 3, member listed" 3 \
            "^stripe 3: member $(d 1) sector $((DO + 3 * C + 64)) (slot 1), 8 sectors: data block wrong\$" \
            $URAID check --control "$ctl" --wait
        t_exits "serving: status shows the result" 0 "background: check finished .*mismatch_cnt 8" $URAID status --control "$ctl"
        t_exits "serving: repair --wait: exit 0" 0 "data block wrong, repaired" $URAID repair --control "$ctl" --wait
        t_exits "serving: clean after repair" 0 "mismatch_cnt 0" $URAID check --control "$ctl" --wait
        t_exits "serving: check --wait finds the socket in URAID_CONTROL" 0 "mismatch_cnt 0" \
            env URAID_CONTROL="$ctl" $URAID check --wait
        $URAID stop --control "$ctl" >/dev/null 2>&1
        n=0
        while kill -0 "$pid" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
        kill -0 "$pid" 2>/dev/null && t_fail "server stops" || { pid=""; t_ok "server stops"; }
        same_data "serving: data restored exactly"
    else
        t_fail "serve" "$(cat "$t_tmp/serve.log")"
    fi
else
    t_fail "needs nbdkit in PATH for the serving part"
fi

# two blocks of one page: reported, not repaired, left as is
corrupt "$(d 2)" $((DO + 5 * C + 16)) 1   # stripe 5: P 0, Q 1, data 2 3 4 5
corrupt "$(d 3)" $((DO + 5 * C + 18)) 1
before=$(cat "$(d 2)" "$(d 3)" | md5sum)
t_exits "two blocks wrong: exit 3, not repaired" 3 "more than one block disagrees.*not repaired" $URAID repair $M
[ "$(cat "$(d 2)" "$(d 3)" | md5sum)" = "$before" ] && t_ok "MULTI page left as is" || t_fail "MULTI page changed"

# RAID-5: reported as parity; repair rewrites P
for i in 0 1 2 3; do truncate -s 8M "$t_tmp/r$i.img"; done
R="$t_tmp/r0.img $t_tmp/r1.img $t_tmp/r2.img $t_tmp/r3.img"
$T $URAID create --level 5 --raid-devices 4 --chunk 64K --consistency-policy resync $R >"$t_tmp/log" 2>&1 \
    && head -c 16M /dev/urandom | $URAID write $R 2>>"$t_tmp/log" \
    && t_ok "RAID-5: create and write" || t_fail "RAID-5: create and write" "$(tail -n 2 "$t_tmp/log")"
corrupt "$t_tmp/r0.img" $((DO + C + 8)) 8   # stripe 1: RAID-5 left-symmetric P on member 2
t_exits "RAID-5: reported as P" 3 "^stripe 1: member $t_tmp/r2.img sector $((DO + C + 8)) (slot 2), 8 sectors: parity (P) block wrong\$" $URAID check $R
t_exits "RAID-5: repair rewrites P" 0 "parity (P) block wrong, repaired" $URAID repair $R
t_exits "RAID-5: consistent after repair" 0 "mismatch_cnt 0" $URAID check $R
# shellcheck disable=SC2086
t_mdadm_agrees "RAID-6 after check and repair" $M
# shellcheck disable=SC2086
t_mdadm_agrees "RAID-5 after repair" $R
t_finish
