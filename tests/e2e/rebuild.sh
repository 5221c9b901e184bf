#!/bin/sh
# Rebuild, resume and replace through the uraid command on member files:
# create with a spare (mdadm sees a spare), lose a member, `uraid rebuild`
# killed with SIGKILL halfway (mdadm sees the spare as "Active device N"
# with a Recovery Offset, as md writes it), run again: it resumes there and
# the array is whole and identical; `uraid replace` while the old member has
# read errors; the refusals, each one line with a non-zero exit.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

T="timeout 60"
for c in mdadm timeout sha256sum; do
    command -v "$c" >/dev/null 2>&1 || { t_fail "needs $c in PATH"; t_finish; exit 1; }
done
d() { echo "$t_tmp/d$1.img"; }
for i in 0 1 2 3 4 5 6; do truncate -s 48M "$(d $i)"; done
truncate -s 48M "$t_tmp/new.img"
members="$(d 0) $(d 1) $(d 2) $(d 3) $(d 4) $(d 5)"

# expect NAME STATUS PATTERN CMD...: exit status, and a line matching PATTERN ("" = any output)
expect() {
    name=$1 want=$2 pat=$3; shift 3
    $T "$@" >"$t_tmp/out" 2>&1
    got=$?
    if [ "$got" -eq "$want" ] && { [ -z "$pat" ] || grep -q -- "$pat" "$t_tmp/out"; }; then
        t_ok "$name"
    else
        t_fail "$name" "exit $got (want $want): $(head -c 600 "$t_tmp/out")"
    fi
}

expect "create RAID-6 with a spare" 0 "1 spare" $URAID create --level 6 --raid-devices 6 --spare-devices 1 \
    --chunk 64K $members "$(d 6)"
expect "mdadm: the spare" 0 "Device Role : spare" mdadm --examine "$(d 6)"
head -c 150M /dev/urandom >"$t_tmp/data"
expect "write data" 0 "" $URAID write $members "$(d 6)" <"$t_tmp/data"
want=$(sha256sum <"$t_tmp/data" | cut -c1-64)
expect "nothing to rebuild" 1 "^uraid rebuild: nothing to rebuild: every slot is in sync\$" \
    $URAID rebuild $members "$(d 6)"

# member 2 dies: its file is gone
rm -f "$(d 2)"
left="$(d 0) $(d 1) $(d 3) $(d 4) $(d 5)"
expect "no spare: one line" 1 "^uraid rebuild: no spare to rebuild onto: add one with 'uraid add'\$" \
    $URAID rebuild $left

# a slow rebuild (members throttled), killed halfway
$URAID rebuild $left "$(d 6)" --member-layer throttle=40M >"$t_tmp/kill.log" 2>&1 &
pid=$!
n=0
while [ $n -lt 100 ]; do
    sleep 0.1; n=$((n + 1))
    off=$(mdadm --examine "$(d 6)" 2>/dev/null | sed -n 's/.*Recovery Offset : \([0-9]*\) sectors.*/\1/p')
    [ -n "$off" ] && [ "$off" -gt 0 ] && break
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
mdadm --examine "$(d 6)" >"$t_tmp/ex" 2>&1
off=$(sed -n 's/.*Recovery Offset : \([0-9]*\) sectors.*/\1/p' "$t_tmp/ex")
if [ -n "$off" ] && [ "$off" -gt 0 ] && grep -q "Device Role : Active device 2" "$t_tmp/ex" &&
    grep -q "Feature Map : 0x2" "$t_tmp/ex"; then
    t_ok "killed rebuild: mdadm sees the checkpoint (Recovery Offset $off, Active device 2)"
else
    t_fail "checkpoint after SIGKILL" "$(cat "$t_tmp/kill.log" "$t_tmp/ex")"
fi
expect "status while half rebuilt: the member is rebuilding" 0 "spare rebuilding" $URAID detail $left "$(d 6)"
expect "half rebuilt: data still right (read degraded)" 0 "" sh -c \
    "$URAID cat $left $(d 6) | head -c 157286400 | sha256sum | grep -q $want"
expect "rebuild resumes and finishes" 0 "recovery finished" $URAID rebuild $left "$(d 6)" -v
grep -q "recovery of slot 2 onto $(d 6) from sector $off" "$t_tmp/out" && t_ok "it resumed at the checkpoint ($off)" \
    || t_fail "resume point" "$(cat "$t_tmp/out")"
expect "whole again [6/6]" 0 "\[6/6\] \[UUUUUU\]" $URAID detail $left "$(d 6)"
expect "mdadm: in sync, no recovery offset" 0 "Device Role : Active device 2" mdadm --examine "$(d 6)"
grep -q "Recovery Offset" "$t_tmp/out" && t_fail "recovery offset left behind" || t_ok "no recovery offset left"
now="$(d 0) $(d 1) $(d 6) $(d 3) $(d 4) $(d 5)"
expect "data identical with two other members left out" 0 "" sh -c \
    "$URAID cat $(d 0) $(d 1) $(d 6) $(d 3) | head -c 157286400 | sha256sum | grep -q $want"

# replace member 3 while it has read errors
expect "replace with read errors on the old member" 0 "replaced\|now holds slot 3" \
    $URAID replace $now --old "$(d 3)" --with "$t_tmp/new.img" --member-layer "$(d 3):read-eio=20971520+1048576"
expect "the new member holds slot 3" 0 "Device Role : Active device 3" mdadm --examine "$t_tmp/new.img"
expect "the old one is faulty in the others' superblocks" 0 "Array State : AAAAAA" mdadm --examine "$(d 0)"
final="$(d 0) $(d 1) $(d 6) $t_tmp/new.img $(d 4) $(d 5)"
expect "after replace: data identical without members 4 and 5" 0 "" sh -c \
    "$URAID cat $(d 0) $(d 1) $(d 6) $t_tmp/new.img | head -c 157286400 | sha256sum | grep -q $want"
t_mdadm_agrees "after rebuild and replace" $final
expect "replace: not a member" 2 "is not an active member" $URAID replace $final --old /x.img --with "$(d 3)"
expect "replace: missing --with" 2 "give the member to replace" $URAID replace $final --old "$(d 4)"
t_finish
