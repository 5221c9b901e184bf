#!/bin/sh
# uraid grow with members failing (lib/array/reshape_fail.c), through the
# uraid command, mdadm --examine as the judge of the superblocks:
#   1. a member fails during the grow (--member-layer read-eio / write-eio
#      on a range the reshape reaches halfway): the grow goes on degraded
#      as md's does and says so; every byte as before, mdadm --examine
#      shows the new member count, no Reshape line and the failed slot
#      missing in Array State ('.'), the failed member's own superblock is
#      behind; a rebuild onto a spare makes it whole, check clean; RAID-6
#      with two members failing;
#   2. kill -9 in the middle of a throttled grow after a member failed:
#      mdadm --examine shows the reshape and the failed slot missing; the
#      same grow again (the member still failing) finishes; every byte;
#   3. an array already degraded (written with a member missing, md's
#      '.' in Array State) grows; a member only left out is refused, every
#      member byte for byte unchanged.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
seed=${URAID_TEST_SEED:-$(date +%s)}
echo "seed $seed (URAID_TEST_SEED=$seed replays the kill moment)"

sums() { for f in "$@"; do sha256sum "$f"; done; }
# new_array DIR LEVEL N: members DIR/m0..m(N-1) of 16 MiB, random data, its copy in DIR/data; M, SZ
new_array() {
    dir=$1 lvl=$2 n=$3
    rm -rf "$dir"; mkdir -p "$dir"
    M="" i=0
    while [ $i -lt "$n" ]; do truncate -s 16M "$dir/m$i.img"; M="$M $dir/m$i.img"; i=$((i + 1)); done
    # shellcheck disable=SC2086
    $URAID create --level "$lvl" --raid-devices "$n" --chunk 64K --assume-clean --consistency-policy resync $M \
        >/dev/null 2>&1 || { t_fail "create RAID-$lvl in $dir"; return 1; }
    # shellcheck disable=SC2086
    kib=$($URAID detail $M 2>&1 | awk '/Array Size/ {print $4; exit}')
    SZ=$((${kib:-0} * 1024))
    head -c "$SZ" /dev/urandom >"$dir/data"
    # shellcheck disable=SC2086
    $URAID write $M <"$dir/data" || t_fail "write the data in $dir"
}
same_data() { # NAME DIR MEMBERS...
    name=$1 dir=$2; shift 2
    kib=$($URAID detail "$@" 2>&1 | awk '/Array Size/ {print $4; exit}')
    [ -n "$kib" ] || { t_fail "$name: every byte as before, the new space zeros" "detail: no array size"; return; }
    got=$($URAID cat "$@" | sha256sum | cut -d' ' -f1)
    want=$({ cat "$dir/data"; head -c $((kib * 1024 - SZ)) /dev/zero; } | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "$name: every byte as before, the new space zeros" ||
        t_fail "$name: every byte as before, the new space zeros" "sha $got, want $want"
}
# examine_degraded NAME DEVICES STATE MEMBER: Raid Devices, Array State (e.g. AA.AA), no Reshape line
examine_degraded() {
    x=$(mdadm --examine "$4" 2>&1)
    if echo "$x" | grep -q "^ *Raid Devices : $2\$" && echo "$x" | grep -q "Array State : $3 " &&
        ! echo "$x" | grep -q "Reshape pos\|Delta Devices"; then t_ok "$1: mdadm --examine: $2 devices, $3"
    else t_fail "$1: mdadm --examine: $2 devices, $3" "$(echo "$x" | grep -E 'Raid Devices|Array State|Reshape')"; fi
}
# rebuild_clean NAME SPARE MEMBERS...: a rebuild onto SPARE, then check clean
rebuild_clean() {
    name=$1 sp=$2; shift 2
    truncate -s 16M "$sp"
    out=$($URAID rebuild "$@" --spare "$sp" 2>&1) || { t_fail "$name: rebuild onto a spare" "$out"; return; }
    out=$($URAID check "$@" "$sp" 2>&1)
    case "$out" in *"mismatch_cnt 0"*) t_ok "$name: rebuilt onto a spare, uraid check finds mismatch_cnt 0" ;;
        *) t_fail "$name: rebuilt onto a spare, uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -1)" ;; esac
}

# ---- 1. a member fails during the grow -----------------------------------------------------
d=$t_tmp/a
new_array "$d" 5 4
truncate -s 16M "$d/m4.img"
# shellcheck disable=SC2086
out=$($URAID grow $M --raid-devices 5 --add "$d/m4.img" --member-layer "$d/m1.img:read-eio=8M+64K" 2>&1)
rc=$?
case "$rc:$out" in 0:*"failed while reading"*"goes on degraded"*) t_ok "RAID-5 4 -> 5, m1 fails reading: the grow goes on degraded" ;;
    *) t_fail "RAID-5 4 -> 5, m1 fails reading: the grow goes on degraded" "rc $rc: $out" ;; esac
A="$d/m0.img $d/m2.img $d/m3.img $d/m4.img"
# shellcheck disable=SC2086
same_data "RAID-5 4 -> 5 degraded" "$d" $A
examine_degraded "RAID-5 4 -> 5 degraded" 5 "A.AAA" "$d/m0.img"
ev0=$(mdadm --examine "$d/m0.img" | awk '/Events/ {print $3}'); ev1=$(mdadm --examine "$d/m1.img" | awk '/Events/ {print $3}')
[ "${ev1:-0}" -lt "${ev0:-0}" ] && t_ok "the failed member's own superblock is behind (events $ev1 < $ev0)" ||
    t_fail "the failed member's own superblock is behind" "events $ev1, the array's $ev0"
# shellcheck disable=SC2086
rebuild_clean "RAID-5 4 -> 5 degraded" "$d/sp.img" $A
# RAID-6 5 -> 6: an old member fails reading, the new one writing
d=$t_tmp/b
new_array "$d" 6 5
truncate -s 16M "$d/m5.img"
# shellcheck disable=SC2086
out=$($URAID grow $M --raid-devices 6 --add "$d/m5.img" --member-layer "$d/m0.img:read-eio=6M+64K" \
    --member-layer "$d/m5.img:write-eio=10M+64K" 2>&1)
rc=$?
[ $rc -eq 0 ] && t_ok "RAID-6 5 -> 6, two members fail: the grow finishes degraded" ||
    t_fail "RAID-6 5 -> 6, two members fail: the grow finishes degraded" "rc $rc: $out"
B="$d/m1.img $d/m2.img $d/m3.img $d/m4.img"
# shellcheck disable=SC2086
same_data "RAID-6 5 -> 6 degraded by two" "$d" $B
examine_degraded "RAID-6 5 -> 6 degraded by two" 6 ".AAAA." "$d/m1.img"
truncate -s 16M "$d/sp.img"
# shellcheck disable=SC2086
out=$($URAID rebuild $B --spare "$d/sp.img" 2>&1)
case "$out" in *"recovery finished"*"still has no member in sync"*|*"still has no member in sync"*"recovery finished"*)
    t_ok "RAID-6 5 -> 6: the first spare rebuilt, one slot still missing" ;;
    *) t_fail "RAID-6 5 -> 6: the first spare rebuilt, one slot still missing" "$out" ;; esac
# shellcheck disable=SC2086
rebuild_clean "RAID-6 5 -> 6, second spare" "$d/sp2.img" $B "$d/sp.img"

# ---- 2. kill -9 after a member failed ------------------------------------------------------
d=$t_tmp/k
new_array "$d" 5 4
truncate -s 16M "$d/m4.img"
lay="--member-layer $d/m2.img:read-eio=4M+64K"
for f in $M "$d/m4.img"; do lay="$lay --member-layer $f:throttle=8M"; done
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$d/m4.img" $lay >"$t_tmp/k.out" 2>&1 &
gp=$!
n=0; while ! grep -q "goes on degraded" "$t_tmp/k.out" && [ $n -lt 300 ]; do sleep 0.05; n=$((n + 1)); done
sleep "0.$(( (seed % 5) + 2 ))"
kill -9 $gp 2>/dev/null; wait $gp 2>/dev/null
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Reshape pos'n" && echo "$x" | grep -q "Array State : AA.AA " &&
    t_ok "killed after m2 failed: mdadm --examine shows the reshape and slot 2 missing" ||
    t_fail "killed after m2 failed: mdadm --examine shows the reshape and slot 2 missing" \
        "$(echo "$x" | grep -E "Reshape|Array State"; tail -2 "$t_tmp/k.out")"
# shellcheck disable=SC2086
out=$($URAID grow $M --raid-devices 5 --add "$d/m4.img" --member-layer "$d/m2.img:read-eio=4M+64K" 2>&1) &&
    t_ok "the same grow again finishes it degraded" || t_fail "the same grow again finishes it degraded" "$out"
K="$d/m0.img $d/m1.img $d/m3.img $d/m4.img"
# shellcheck disable=SC2086
same_data "killed after a failure, carried on" "$d" $K
examine_degraded "killed after a failure, carried on" 5 "AA.AA" "$d/m0.img"
# shellcheck disable=SC2086
rebuild_clean "killed after a failure" "$d/sp.img" $K

# ---- 3. an array already degraded ----------------------------------------------------------
d=$t_tmp/g
new_array "$d" 5 4
truncate -s 16M "$d/m4.img"
# written with m2 missing: md's superblocks of the others say slot 2 is missing
head -c 65536 /dev/urandom >"$d/blk"
$URAID write "$d/m0.img" "$d/m1.img" "$d/m3.img" <"$d/blk" || t_fail "a degraded write"
dd if="$d/blk" of="$d/data" conv=notrunc status=none
all="$M $d/m4.img"
# shellcheck disable=SC2086
before=$(sums $all)
msg=$($URAID grow "$d/m0.img" "$d/m3.img" "$d/m2.img" --raid-devices 5 --add "$d/m4.img" 2>&1); rc=$?
# shellcheck disable=SC2086
[ $rc -ne 0 ] && echo "$msg" | grep -q "give all 4 members" && [ "$(sums $all)" = "$before" ] &&
    t_ok "refused, nothing changed: a degraded array with an in-sync member left out" ||
    t_fail "refused, nothing changed: a degraded array with an in-sync member left out" "rc $rc: $msg"
out=$($URAID grow "$d/m0.img" "$d/m1.img" "$d/m3.img" --raid-devices 5 --add "$d/m4.img" 2>&1) &&
    t_ok "RAID-5 4 -> 5 already degraded: grown" || t_fail "RAID-5 4 -> 5 already degraded: grown" "$out"
G="$d/m0.img $d/m1.img $d/m3.img $d/m4.img"
# shellcheck disable=SC2086
same_data "RAID-5 4 -> 5 already degraded" "$d" $G
examine_degraded "RAID-5 4 -> 5 already degraded" 5 "AA.AA" "$d/m4.img"
# shellcheck disable=SC2086
rebuild_clean "RAID-5 4 -> 5 already degraded" "$d/sp.img" $G
t_finish
