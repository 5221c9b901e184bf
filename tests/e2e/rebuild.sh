#!/bin/sh
# Rebuild, resume and replace through the uraid command on member files:
# create with a spare (mdadm sees a spare), lose a member, `uraid rebuild`
# killed with SIGKILL halfway (mdadm sees the spare as "Active device N"
# with a Recovery Offset, as md writes it), run again: it resumes there and
# the array is whole and identical; `uraid replace` while the old member has
# read errors; the refusals, each one line with a non-zero exit.
# Then a RAID-6 with two members lost and two spares: ONE `uraid rebuild`
# makes it whole (mdadm --examine: "Array State : AAAAAA" on every member);
# and `uraid add --re-add` of a member that missed some writes rebuilds only
# the chunks the write-intent bitmap marks.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

T="timeout 60"
t_need mdadm timeout cmp
d() { echo "$t_tmp/d$1.img"; }
for i in 0 1 2 3 4 5 6; do truncate -s 48M "$(d $i)"; done
truncate -s 48M "$t_tmp/new.img"
members="$(d 0) $(d 1) $(d 2) $(d 3) $(d 4) $(d 5)"

# same_data NAME FILE MEMBERS...: the array's first bytes (FILE's length)
# equal FILE; on a difference, where it starts and how many bytes differ,
# so an intermittent failure says which stripe and member to look at
same_data() {
    name=$1 file=$2; shift 2
    len=$(stat -c %s "$file")
    $T $URAID cat "$@" 2>"$t_tmp/cat.err" | head -c "$len" >"$t_tmp/got"
    if cmp -s "$t_tmp/got" "$file"; then
        t_ok "$name"
    else
        first=$(cmp "$t_tmp/got" "$file" 2>&1 | head -n 1)
        nbad=$(cmp -l "$t_tmp/got" "$file" 2>/dev/null | wc -l)
        t_fail "$name" "$(stat -c %s "$t_tmp/got") of $len bytes read; $first; $nbad bytes differ; $(head -c 300 "$t_tmp/cat.err")"
    fi
}

t_exits "create RAID-6 with a spare" 0 "1 spare" $URAID create --level 6 --raid-devices 6 --spare-devices 1 \
    --chunk 64K $members "$(d 6)"
t_exits "mdadm: the spare" 0 "Device Role : spare" mdadm --examine "$(d 6)"
head -c 150M /dev/urandom >"$t_tmp/data"
t_exits "write data" 0 "" $URAID write $members "$(d 6)" <"$t_tmp/data"
t_exits "check after the write: mismatch_cnt 0" 0 "mismatch_cnt 0" $URAID check $members "$(d 6)"
same_data "data written" "$t_tmp/data" $members "$(d 6)"
t_exits "nothing to rebuild" 1 "^uraid rebuild: nothing to rebuild: every slot is in sync\$" \
    $URAID rebuild $members "$(d 6)"

# member 2 dies: its file is gone
rm -f "$(d 2)"
left="$(d 0) $(d 1) $(d 3) $(d 4) $(d 5)"
t_exits "no spare: one line" 1 "^uraid rebuild: no spare to rebuild onto: add one with 'uraid add'\$" \
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
    grep -Eq "Feature Map : 0x(8000000)?2$" "$t_tmp/ex"; then
    t_ok "killed rebuild: mdadm sees the checkpoint (Recovery Offset $off, Active device 2)"
else
    t_fail "checkpoint after SIGKILL" "$(cat "$t_tmp/kill.log" "$t_tmp/ex")"
fi
t_exits "status while half rebuilt: the member is rebuilding" 0 "spare rebuilding" $URAID detail $left "$(d 6)"
same_data "half rebuilt: data still right (read degraded)" "$t_tmp/data" $left "$(d 6)"
t_exits "rebuild resumes and finishes" 0 "recovery finished" $URAID rebuild $left "$(d 6)" -v
grep -q "recovery of slot 2 onto $(d 6) from sector $off" "$t_tmp/out" && t_ok "it resumed at the checkpoint ($off)" \
    || t_fail "resume point" "$(cat "$t_tmp/out")"
t_exits "whole again [6/6]" 0 "\[6/6\] \[UUUUUU\]" $URAID detail $left "$(d 6)"
t_exits "mdadm: in sync, no recovery offset" 0 "Device Role : Active device 2" mdadm --examine "$(d 6)"
grep -q "Recovery Offset" "$t_tmp/out" && t_fail "recovery offset left behind" || t_ok "no recovery offset left"
now="$(d 0) $(d 1) $(d 6) $(d 3) $(d 4) $(d 5)"
same_data "data identical with two other members left out" "$t_tmp/data" "$(d 0)" "$(d 1)" "$(d 6)" "$(d 3)"

# replace member 3 while it has read errors
t_exits "replace with read errors on the old member" 0 "replaced\|now holds slot 3" \
    $URAID replace $now --old "$(d 3)" --with "$t_tmp/new.img" --member-layer "$(d 3):read-eio=20971520+1048576"
t_exits "the new member holds slot 3" 0 "Device Role : Active device 3" mdadm --examine "$t_tmp/new.img"
t_exits "the others' superblocks: every slot active" 0 "Array State : AAAAAA" mdadm --examine "$(d 0)"
final="$(d 0) $(d 1) $(d 6) $t_tmp/new.img $(d 4) $(d 5)"
same_data "after replace: data identical without members 4 and 5" "$t_tmp/data" "$(d 0)" "$(d 1)" "$(d 6)" "$t_tmp/new.img"
# with the old member given too: uraid lists it faulty, md's Events on it
# are behind the array's (the check the name above used to promise)
t_mdadm_agrees "after rebuild and replace, the old member faulty" $final "$(d 3)"
t_exits "replace: not a member" 2 "is not an active member" $URAID replace $final --old /x.img --with "$(d 3)"
t_exits "replace: missing --with" 2 "give the member to replace" $URAID replace $final --old "$(d 4)"

# RAID-6, two members lost, two spares: one rebuild fills both slots
for i in 0 1 2 3 4 5; do truncate -s 24M "$t_tmp/r$i.img"; done
truncate -s 24M "$t_tmp/sa.img"; truncate -s 24M "$t_tmp/sb.img"
r6="$t_tmp/r0.img $t_tmp/r1.img $t_tmp/r2.img $t_tmp/r3.img $t_tmp/r4.img $t_tmp/r5.img"
t_exits "create RAID-6 for two holes" 0 "" $URAID create --level 6 --raid-devices 6 --chunk 64K $r6
head -c 80M /dev/urandom >"$t_tmp/data6"
t_exits "write data" 0 "" $URAID write $r6 <"$t_tmp/data6"
rm -f "$t_tmp/r1.img" "$t_tmp/r4.img"
left6="$t_tmp/r0.img $t_tmp/r2.img $t_tmp/r3.img $t_tmp/r5.img"
t_exits "one rebuild fills both empty slots" 0 "slots 1 and 4 rebuilt" \
    $URAID rebuild $left6 --spare "$t_tmp/sa.img" --spare "$t_tmp/sb.img"
whole6="$t_tmp/r0.img $t_tmp/sa.img $t_tmp/r2.img $t_tmp/r3.img $t_tmp/sb.img $t_tmp/r5.img"
t_exits "whole after one rebuild [6/6]" 0 "\[6/6\] \[UUUUUU\]" $URAID detail $whole6
bad=""
for m in $whole6; do
    mdadm --examine "$m" 2>&1 | grep -q "Array State : AAAAAA" || bad="$bad $m"
done
[ -z "$bad" ] && t_ok "mdadm --examine: every slot active on every member" || t_fail "Array State" "not AAAAAA on:$bad"
same_data "data identical from the two rebuilt members and two others" "$t_tmp/data6" \
    "$t_tmp/sa.img" "$t_tmp/sb.img" "$t_tmp/r2.img" "$t_tmp/r3.img"
t_mdadm_agrees "after one rebuild of two slots" $whole6

# re-add with the write-intent bitmap: q3 misses one write, then comes back
for i in 0 1 2 3; do truncate -s 24M "$t_tmp/q$i.img"; done
q="$t_tmp/q0.img $t_tmp/q1.img $t_tmp/q2.img $t_tmp/q3.img"
t_exits "create RAID-5 with a bitmap" 0 "" $URAID create --level 5 --raid-devices 4 --chunk 64K \
    --bitmap internal --bitmap-chunk 1M $q
head -c 60M /dev/urandom >"$t_tmp/dq"
t_exits "write data" 0 "" $URAID write $q <"$t_tmp/dq"
head -c 65536 /dev/urandom >"$t_tmp/piece"
dd if="$t_tmp/piece" of="$t_tmp/dq" bs=65536 seek=300 conv=notrunc 2>/dev/null
t_exits "a write while q3 is away" 0 "" $URAID write --offset $((300 * 65536)) \
    "$t_tmp/q0.img" "$t_tmp/q1.img" "$t_tmp/q2.img" <"$t_tmp/piece"
t_exits "add --re-add: back into its slot" 0 "re-added to slot 3" \
    $URAID add "$t_tmp/q0.img" "$t_tmp/q1.img" "$t_tmp/q2.img" --re-add "$t_tmp/q3.img"
worked=$(sed -n 's/.*rebuilt; \([0-9]*\) of \([0-9]*\) sectors per member worked on.*/\1 \2/p' "$t_tmp/out")
set -- $worked
if [ -n "$1" ] && [ "$1" -gt 0 ] && [ $(($1 * 4)) -le "$2" ]; then
    t_ok "re-add rebuilt only the dirty chunks ($1 of $2 sectors)"
else
    t_fail "re-add worked sectors" "$(cat "$t_tmp/out")"
fi
t_exits "whole after the re-add [4/4]" 0 "\[4/4\] \[UUUU\]" $URAID detail $q
same_data "data identical from the re-added member and two others" "$t_tmp/dq" \
    "$t_tmp/q1.img" "$t_tmp/q2.img" "$t_tmp/q3.img"
t_exits "check after the re-add: mismatch_cnt 0" 0 "mismatch_cnt 0" $URAID check $q
# refused --re-add: exit 1, one line naming the reason, nothing written
# (the old pattern "did not hold a slot\|cannot\|not" matched any message)
refused_readd() {
    rname=$1 rpat=$2 file=$3
    before=$(cat $q "$file" | sha256sum)
    $T $URAID add $q --re-add "$file" >"$t_tmp/out" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && [ "$(grep -c . "$t_tmp/out")" -eq 1 ] && grep -q -- "$rpat" "$t_tmp/out" &&
        [ "$(cat $q "$file" | sha256sum)" = "$before" ]; then
        t_ok "$rname"
    else
        t_fail "$rname" "exit $rc, members $([ "$(cat $q "$file" | sha256sum)" = "$before" ] && echo unchanged || echo CHANGED): $(head -c 400 "$t_tmp/out")"
    fi
}
truncate -s 24M "$t_tmp/blank.img"
refused_readd "--re-add of a file that never was a member: one line" \
    "^uraid add: $t_tmp/blank.img did not hold a slot of this array: nothing to re-add" "$t_tmp/blank.img"
refused_readd "--re-add of another array's member: one line" \
    "^uraid add: $t_tmp/new.img belongs to another md array" "$t_tmp/new.img"
# a write error on the new member during the rebuild: md lists the failing
# blocks in its bad-block log and goes on (it fails the member only when
# they cannot be listed); the array reads back whole
for i in 0 1 2; do truncate -s 24M "$t_tmp/w$i.img"; done
truncate -s 24M "$t_tmp/ws.img"
w3="$t_tmp/w0.img $t_tmp/w1.img $t_tmp/w2.img"
t_exits "create RAID-5 for a spare with write errors" 0 "" $URAID create --level 5 --raid-devices 3 --chunk 64K \
    --consistency-policy resync $w3
head -c 40M /dev/urandom >"$t_tmp/dw"
t_exits "write data" 0 "" $URAID write $w3 <"$t_tmp/dw"
rm -f "$t_tmp/w2.img"
t_exits "add a spare" 0 "added as a spare" $URAID add "$t_tmp/w0.img" "$t_tmp/w1.img" --spare "$t_tmp/ws.img"
t_exits "rebuild onto a spare that fails a 4 KiB write: it goes on" 0 "slot 2 rebuilt" \
    $URAID rebuild "$t_tmp/w0.img" "$t_tmp/w1.img" "$t_tmp/ws.img" --member-layer "$t_tmp/ws.img:write-eio=8388608+4096"
grep -q "sectors 16384-16391 cannot be written; recorded in its bad-block log" "$t_tmp/out" \
    && t_ok "the failing blocks are named and listed" || t_fail "the failing blocks named" "$(cat "$t_tmp/out")"
t_exits "mdadm lists exactly them on the new member" 0 "^ *16384 for 8 sectors\$" mdadm --examine-badblocks "$t_tmp/ws.img"
t_exits "whole after the rebuild [3/3]" 0 "\[3/3\] \[UUU\]" $URAID detail "$t_tmp/w0.img" "$t_tmp/w1.img" "$t_tmp/ws.img"
same_data "data identical after a rebuild with a listed write error" "$t_tmp/dw" "$t_tmp/w0.img" "$t_tmp/w1.img" "$t_tmp/ws.img"
t_finish
