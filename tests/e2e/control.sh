#!/bin/sh
# uraid status/fail/remove/add/stop against a serving array's control socket
# (`uraid mount --foreground --control PATH` is the server): exit status 0
# only on "ok", one-line errors, md's view (mdadm --examine, compared with
# uraid detail by t_mdadm_agrees) of a failed member and of an added spare,
# while served and after stop. Needs root, /dev/fuse, fusermount3 and mdadm:
# without them the test fails with the reason (never skips).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

mnt=$t_tmp/fuse
ctl=$t_tmp/ctl.sock
pid=""
T="timeout 20"

t_at_exit '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null'
t_at_exit 'timeout 10 fusermount3 -uz "$mnt" 2>/dev/null'

t_need mdadm timeout
t_need_fuse

# expect NAME STATUS PATTERN CMD...: exit status and a line matching
# PATTERN ("" = no output at all, as for a successful fail/remove/add/stop)
expect() {
    name=$1 want=$2 pat=$3; shift 3
    $T "$@" >"$t_tmp/out" 2>&1
    got=$?
    if [ -z "$pat" ]; then matched=$([ ! -s "$t_tmp/out" ] && echo 1); else matched=$(grep -q -- "$pat" "$t_tmp/out" && echo 1); fi
    if [ "$got" -eq "$want" ] && [ -n "$matched" ]; then
        t_ok "$name"
    else
        t_fail "$name" "exit $got (want $want): $(head -c 600 "$t_tmp/out")"
    fi
}

# without a server
expect "no server: one line, exit 1" 1 "^uraid status: no server is listening on $t_tmp/none.sock\$" \
    $URAID status --control "$t_tmp/none.sock"
expect "fail without a member: exit 2" 2 "which member" $URAID fail --control "$ctl"
expect "unknown option: exit 2" 2 "unknown option '--bogus'" $URAID status --bogus
expect "stop takes no member: exit 2" 2 "unexpected argument" $URAID stop --control "$ctl" x

mkdir -p "$mnt"
for i in 0 1 2 3; do truncate -s 16M "$t_tmp/d$i.img"; done
truncate -s 16M "$t_tmp/spare.img"
truncate -s 1M "$t_tmp/small.img"
d() { echo "$t_tmp/d$1.img"; }
$T $URAID create --level 5 --raid-devices 4 --chunk 64K "$(d 0)" "$(d 1)" "$(d 2)" "$(d 3)" >"$t_tmp/create.log" 2>&1 \
    || { t_fail "create" "$(cat "$t_tmp/create.log")"; t_finish; exit 1; }

$URAID mount --foreground --control "$ctl" "$(d 0)" "$(d 1)" "$(d 2)" "$(d 3)" "$mnt" >"$t_tmp/daemon.log" 2>&1 &
pid=$!
n=0
while [ ! -S "$ctl" ] && [ $n -lt 100 ]; do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1; n=$((n + 1))
done
[ -S "$ctl" ] || { t_fail "server" "$(cat "$t_tmp/daemon.log")"; t_finish; exit 1; }
[ "$(stat -c %a "$ctl")" = 600 ] && t_ok "control socket is 0600" || t_fail "socket mode" "$(stat -c %a "$ctl")"

expect "status [4/4] [UUUU]" 0 "^uraid: active raid5 .*\[4/4\] \[UUUU\]" $URAID status --control "$ctl"
expect "URAID_CONTROL names the socket" 0 "\[4/4\] \[UUUU\]" env URAID_CONTROL="$ctl" $URAID status
expect "fail a member" 0 "" $URAID fail --control "$ctl" "$(d 1)"
expect "status [4/3] [U_UU], degraded" 0 "\[4/3\] \[U_UU\]" $URAID status --control "$ctl"
grep -q "State : clean, degraded\|State : active, degraded" "$t_tmp/out" && t_ok "state says degraded" \
    || t_fail "state degraded" "$(cat "$t_tmp/out")"
t_mdadm_agrees "served, d1 failed" "$(d 0)" "$(d 1)" "$(d 2)" "$(d 3)"
expect "second failure refused (RAID-5)" 1 "^uraid fail: failing $(d 2) would leave RAID-5" \
    $URAID fail --control "$ctl" "$(d 2)"
expect "not a member" 1 "^uraid fail: /x.img is not a member of this array\$" $URAID fail --control "$ctl" /x.img
expect "remove an active member refused" 1 "active member: fail it first" $URAID remove --control "$ctl" "$(d 0)"
expect "remove the failed member" 0 "" $URAID remove --control "$ctl" "$(d 1)"
expect "add a spare" 0 "" $URAID add --control "$ctl" "$t_tmp/spare.img"
# the serving array rebuilds onto the spare by itself (md's behaviour)
n=0
until $URAID status --control "$ctl" 2>/dev/null | grep -q "\[4/4\] \[UUUU\]" || [ $n -ge 200 ]; do
    sleep 0.1; n=$((n + 1))
done
expect "the spare is rebuilt into the slot by itself" 0 "spare.img\[1\] .*\[4/4\] \[UUUU\]" \
    $URAID status --control "$ctl"
grep -q "background: recovery finished" "$t_tmp/out" && t_ok "status reports the finished recovery" \
    || t_fail "recovery line" "$(cat "$t_tmp/out")"
expect "mdadm: the new member's role" 0 "Device Role : Active device 1" mdadm --examine "$t_tmp/spare.img"
t_mdadm_agrees "served, spare rebuilt in" "$(d 0)" "$t_tmp/spare.img" "$(d 2)" "$(d 3)"
expect "too small a spare refused" 1 "too small" $URAID add --control "$ctl" "$t_tmp/small.img"
expect "the same spare twice refused" 1 "already a member" $URAID add --control "$ctl" "$t_tmp/spare.img"
expect "stop" 0 "" $URAID stop --control "$ctl"
n=0
while kill -0 "$pid" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
if kill -0 "$pid" 2>/dev/null; then
    t_fail "server exits after stop"
else
    wait "$pid" && t_ok "server exits cleanly after stop" || t_fail "server exit status" "$(cat "$t_tmp/daemon.log")"
    pid=""
fi
expect "after stop: no server" 1 "no server is listening on $ctl" $URAID status --control "$ctl"
expect "reassembles whole with the rebuilt member" 0 "\[4/4\]" \
    $URAID detail "$(d 0)" "$(d 2)" "$(d 3)" "$t_tmp/spare.img"
t_mdadm_agrees "after stop" "$(d 0)" "$(d 2)" "$(d 3)" "$t_tmp/spare.img"
t_finish
