#!/bin/sh
# uraid grow --raid-devices N --add NEW...: RAID-5 4 -> 5 and RAID-6 5 -> 6
# members offline (and RAID-1 2 -> 4 mirrors, killed in their recovery and
# carried on; linear 2 -> 3 appended), through the uraid command, mdadm --examine as the judge of
# the superblocks:
#   1. refusals (one line, every member byte for byte unchanged): N not
#      larger, too few new members, a new member too small, too little head
#      room (says how much is missing), a RAID-1 mirror too small, a PPL
#      array, a reshape in progress asked again with other parameters;
#   2. a grow: the old bytes read back the same, the new space reads as
#      zeros, uraid check finds mismatch_cnt 0, mdadm --examine shows 5 Raid
#      Devices, the moved data offset and no Reshape line;
#   3. kill -9 during slow grows (throttled members) at random moments
#      (the seed is printed): mdadm --examine shows the reshape (Reshape
#      pos'n, Delta Devices) when it was recorded, other uraid commands
#      refuse the array with a pointer to --continue, and the same grow
#      again (or --continue) finishes it with every byte intact;
#   3b. SIGTERM stops a grow at a recorded position (--continue finishes
#      it); simulated power cuts at random member writes (unflushed writes
#      kept, torn or dropped), then the same grow again: every byte intact;
#   4. RAID-6 5 -> 6 with a kill in the middle.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
T=build/tests/test_reshape_geom
[ -x "$T" ] || { t_fail "build/tests/test_reshape_geom is built (make unit-tests)"; t_finish; exit 1; }
seed=${URAID_TEST_SEED:-$(date +%s)}
echo "seed $seed (URAID_TEST_SEED=$seed replays the kill moments)"

sums() { for f in "$@"; do sha256sum "$f"; done; }
# new_array DIR LEVEL N [create options]: members DIR/m0..m(N-1) of 16 MiB,
# random data written, its copy in DIR/data; sets M (members) and SZ (bytes)
new_array() {
    dir=$1 lvl=$2 n=$3; shift 3
    rm -rf "$dir"; mkdir -p "$dir"
    M="" i=0
    while [ $i -lt "$n" ]; do truncate -s 16M "$dir/m$i.img"; M="$M $dir/m$i.img"; i=$((i + 1)); done
    # shellcheck disable=SC2086
    $URAID create --level "$lvl" --raid-devices "$n" --chunk 64K --assume-clean --consistency-policy resync "$@" $M \
        >/dev/null 2>&1 || { t_fail "create RAID-$lvl in $dir"; return 1; }
    # shellcheck disable=SC2086
    kib=$($URAID detail $M 2>&1 | awk '/Array Size/ {print $4; exit}')
    SZ=$((${kib:-0} * 1024))
    head -c "$SZ" /dev/urandom >"$dir/data"
    # shellcheck disable=SC2086
    $URAID write $M <"$dir/data" || t_fail "write the data in $dir"
}
# same_data NAME DIR MEMBERS...: the first SZ bytes are the data, the rest zeros
same_data() {
    name=$1 dir=$2; shift 2
    kib=$($URAID detail "$@" 2>&1 | awk '/Array Size/ {print $4; exit}')
    [ -n "$kib" ] || { t_fail "$name: every byte as before, the new space zeros" "detail: no array size"; return; }
    total=$((kib * 1024))
    got=$($URAID cat "$@" | sha256sum | cut -d' ' -f1)
    want=$({ cat "$dir/data"; head -c $((total - SZ)) /dev/zero; } | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "$name: every byte as before, the new space zeros" ||
        t_fail "$name: every byte as before, the new space zeros" "sha $got, want $want"
}
checks_clean() {
    name=$1; shift
    out=$($URAID check "$@" 2>&1)
    case "$out" in *"mismatch_cnt 0"*) t_ok "$name: uraid check finds mismatch_cnt 0" ;;
        *) t_fail "$name: uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -1)" ;; esac
}
examine_done() { # NAME DEVICES OFFSET MEMBER...
    name=$1 devs=$2 off=$3; shift 3
    bad=""
    for m in "$@"; do
        x=$(mdadm --examine "$m" 2>&1)
        echo "$x" | grep -q "^ *Raid Devices : $devs\$" || bad="$bad [$m: Raid Devices]"
        echo "$x" | grep -q "^ *Data Offset : $off sectors" || bad="$bad [$m: $(echo "$x" | grep 'Data Offset')]"
        echo "$x" | grep -q "Reshape\|Delta Devices\|New Offset" && bad="$bad [$m: a reshape line]"
        echo "$x" | grep -q "Checksum : .* - correct" || bad="$bad [$m: checksum]"
    done
    [ -z "$bad" ] && t_ok "$name: mdadm --examine: $devs Raid Devices, Data Offset $off, no Reshape line" ||
        t_fail "$name: mdadm --examine: $devs Raid Devices, Data Offset $off, no Reshape line" "$bad"
}

# ---- 1. refusals -------------------------------------------------------------------------
d=$t_tmp/r
new_array "$d" 5 4
truncate -s 16M "$d/new.img" "$d/new2.img"; truncate -s 8M "$d/small.img"
all="$M $d/new.img $d/new2.img $d/small.img"
# shellcheck disable=SC2086
before=$(sums $all)
refuse() { # NAME WORDS COMMAND...: fails with one line containing WORDS, nothing written
    name=$1 words=$2; shift 2
    msg=$("$@" 2>&1); rc=$?
    # shellcheck disable=SC2086
    now=$(sums $all)
    if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] && printf '%s' "$msg" | grep -q -- "$words" &&
        [ "$now" = "$before" ]; then t_ok "refused, nothing changed: $name"
    else t_fail "refused, nothing changed: $name" "rc $rc: $msg"; fi
}
# shellcheck disable=SC2086
refuse "N not larger" "is the array's member count" $URAID grow $M --raid-devices 4 --add "$d/new.img"
# shellcheck disable=SC2086
refuse "too few new members" "needs 2 new members (--add), 1 given" $URAID grow $M --raid-devices 6 --add "$d/new.img"
# shellcheck disable=SC2086
refuse "a new member too small" "new member $d/small.img is too small: 16384 sectors" \
    $URAID grow $M --raid-devices 5 --add "$d/small.img"
# shellcheck disable=SC2086
refuse "a member left out" "give all 4 members" $URAID grow $d/m0.img $d/m1.img $d/m2.img --raid-devices 5 --add "$d/new.img"
# shellcheck disable=SC2086
refuse "an old member given as new" "same member\|already a member" $URAID grow $M --raid-devices 5 --add "$d/m0.img"
# shellcheck disable=SC2086
refuse "--continue with no reshape" "no reshape is in progress" $URAID grow --continue $M
# head room: the same members as if mdadm had made them with --data-offset=64K
dh=$t_tmp/h
new_array "$dh" 5 4
truncate -s 16M "$dh/new.img"
# shellcheck disable=SC2086
"$T" --data-offset 128 $M || t_fail "set a small data offset"
all="$M $dh/new.img"
# shellcheck disable=SC2086
before=$(sums $all)
# shellcheck disable=SC2086
refuse "too little head room" "48 sectors free before data_offset 128, 128 needed (one chunk): 80 sectors missing" \
    $URAID grow $M --raid-devices 5 --add "$dh/new.img"
# ---- RAID-1 gains mirrors: two new slots, recovered from the others ------------------------
dl=$t_tmp/l
new_array "$dl" 1 2
truncate -s 16M "$dl/new.img" "$dl/new2.img" "$dl/tiny.img"
truncate -s 1M "$dl/tiny.img"
all="$M $dl/new.img $dl/new2.img $dl/tiny.img"
# shellcheck disable=SC2086
before=$(sums $all)
# shellcheck disable=SC2086
refuse "RAID-1: a new mirror too small" "new member $dl/tiny.img is too small" \
    $URAID grow $M --raid-devices 3 --add "$dl/tiny.img"
# a kill -9 in the middle of the new mirrors' recovery (members at 4 MB/s), then the same grow again
R1="$M $dl/new.img $dl/new2.img"
lay=""; for f in $R1; do lay="$lay --member-layer $f:throttle=4M"; done
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 4 --add "$dl/new.img" "$dl/new2.img" $lay >/dev/null 2>&1 &
gp=$!
n=0; while ! mdadm --examine "$dl/new2.img" 2>/dev/null | grep -q "Recovery Offset" && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
sleep 0.5
kill -9 $gp 2>/dev/null; wait $gp 2>/dev/null
mdadm --examine "$dl/new2.img" 2>&1 | grep -q "Recovery Offset : " &&
    t_ok "RAID-1 2 -> 4: killed in the recovery, md's checkpoint on the new mirror" ||
    t_fail "RAID-1 2 -> 4: killed in the recovery" "$(mdadm --examine "$dl/new2.img" 2>&1 | grep -E 'Recovery|Role')"
# shellcheck disable=SC2086
out=$($URAID grow $M --raid-devices 4 --add "$dl/new.img" "$dl/new2.img" 2>&1)
case $out in *"4 mirrors, the new ones (a recovery carried on) recovered"*) t_ok "RAID-1: the same grow again carries the recovery on" ;;
    *) t_fail "RAID-1: the same grow again carries the recovery on" "$out" ;; esac
# shellcheck disable=SC2086
got=$($URAID cat "$dl/new.img" "$dl/new2.img" 2>/dev/null | sha256sum | cut -d' ' -f1)
[ "$got" = "$(sha256sum <"$dl/data" | cut -d' ' -f1)" ] && t_ok "RAID-1: the two new mirrors alone hold every byte" ||
    t_fail "RAID-1: the two new mirrors alone hold every byte"
# shellcheck disable=SC2086
checks_clean "RAID-1 2 -> 4" $R1
ex=$(mdadm --examine "$dl/new2.img" 2>&1)
echo "$ex" | grep -q "Raid Devices : 4" && echo "$ex" | grep -q "Array State : AAAA" &&
    ! echo "$ex" | grep -q "Recovery Offset" && t_ok "RAID-1: mdadm --examine: 4 devices, all active, no recovery left" ||
    t_fail "RAID-1: mdadm --examine" "$(echo "$ex" | grep -E 'Raid Devices|Array State|Recovery')"
# shellcheck disable=SC2086
t_mdadm_agrees "RAID-1 grown" $R1
# ---- linear gains a member: appended, nothing moved (md's linear_add) ----------------------
dn=$t_tmp/lin
rm -rf "$dn"; mkdir -p "$dn"
truncate -s 16M "$dn/m0.img"; truncate -s 24M "$dn/m1.img"; truncate -s 20M "$dn/new.img"; truncate -s 1M "$dn/tiny.img"
if $URAID create --level linear --raid-devices 2 "$dn/m0.img" "$dn/m1.img" >/dev/null 2>&1; then
    lsz=$(($($URAID detail "$dn/m0.img" "$dn/m1.img" | awk '/Array Size/ {print $4; exit}') * 1024))
    head -c "$lsz" /dev/urandom >"$dn/data"
    $URAID write "$dn/m0.img" "$dn/m1.img" <"$dn/data"
    all="$dn/m0.img $dn/m1.img $dn/tiny.img"
    # shellcheck disable=SC2086
    before=$(sums $all)
    refuse "linear: a new member with no room for data" "new member $dn/tiny.img is too small" \
        $URAID grow "$dn/m0.img" "$dn/m1.img" --raid-devices 3 --add "$dn/tiny.img"
    out=$($URAID grow "$dn/m0.img" "$dn/m1.img" --raid-devices 3 --add "$dn/new.img" 2>&1)
    case $out in *"linear: 3 members (appended, no data moved)"*) t_ok "linear 2 -> 3: grown ($out)" ;;
        *) t_fail "linear 2 -> 3: grown" "$out" ;; esac
    L="$dn/m0.img $dn/m1.img $dn/new.img"
    # shellcheck disable=SC2086
    nsz=$(($($URAID detail $L | awk '/Array Size/ {print $4; exit}') * 1024))
    ndata=$(($(mdadm --examine "$dn/new.img" | awk '/Avail Dev Size/ {print $5; exit}') * 512))
    [ "$nsz" -eq $((lsz + ndata)) ] && t_ok "linear: the array grew by the new member's data area ($ndata bytes)" ||
        t_fail "linear: the array grew by the new member's data area" "$lsz + $ndata != $nsz"
    # shellcheck disable=SC2086
    got=$($URAID cat $L | head -c "$lsz" | sha256sum | cut -d' ' -f1)
    [ "$got" = "$(sha256sum <"$dn/data" | cut -d' ' -f1)" ] && t_ok "linear: every old byte where it was" ||
        t_fail "linear: every old byte where it was"
    head -c 1048576 /dev/urandom >"$dn/tail"
    # shellcheck disable=SC2086
    $URAID write --offset "$lsz" $L <"$dn/tail" 2>/dev/null
    # shellcheck disable=SC2086
    got=$($URAID cat $L | tail -c +$((lsz + 1)) | head -c 1048576 | sha256sum | cut -d' ' -f1)
    [ "$got" = "$(sha256sum <"$dn/tail" | cut -d' ' -f1)" ] && t_ok "linear: a write past the old end reads back" ||
        t_fail "linear: a write past the old end reads back"
    ex=$(mdadm --examine "$dn/new.img" 2>&1; mdadm --examine "$dn/m0.img" 2>&1)
    echo "$ex" | grep -q "Device Role : Active device 2" && [ "$(echo "$ex" | grep -c 'Raid Devices : 3')" -eq 2 ] &&
        echo "$ex" | grep -q "Array State : AAA" && t_ok "linear: mdadm --examine: 3 devices, the new one slot 2" ||
        t_fail "linear: mdadm --examine" "$(echo "$ex" | grep -E 'Raid Devices|Role|Array State')"
    # shellcheck disable=SC2086
    t_mdadm_agrees "linear grown" $L
else
    t_fail "create linear of 2"
fi

dp=$t_tmp/p
rm -rf "$dp"; mkdir -p "$dp"
for i in 0 1 2 3 4; do truncate -s 16M "$dp/m$i.img"; done
$URAID create --level 5 --raid-devices 4 --chunk 64K --assume-clean "$dp/m0.img" "$dp/m1.img" "$dp/m2.img" \
    "$dp/m3.img" >/dev/null 2>&1
all="$dp/m0.img $dp/m1.img $dp/m2.img $dp/m3.img $dp/m4.img"
# shellcheck disable=SC2086
before=$(sums $all)
refuse "a PPL array" "partial parity log (ppl)" $URAID grow "$dp/m0.img" "$dp/m1.img" "$dp/m2.img" "$dp/m3.img" \
    --raid-devices 5 --add "$dp/m4.img"
db=$t_tmp/b
rm -rf "$db"; mkdir -p "$db"
for i in 0 1 2 3 4 5; do truncate -s 16M "$db/m$i.img"; done
$URAID create --level 5 --raid-devices 4 --chunk 64K --assume-clean --bitmap internal "$db/m0.img" "$db/m1.img" \
    "$db/m2.img" "$db/m3.img" >/dev/null 2>&1
all="$db/m0.img $db/m1.img $db/m2.img $db/m3.img $db/m4.img"
# shellcheck disable=SC2086
before=$(sums $all)
# a bitmap is kept through a restripe (grow_online.sh, grow_md.sh); not where it would have to change
refuse "RAID-5 with a bitmap to RAID-0" "RAID-5 with a write-intent bitmap becoming RAID-0 is not supported: remove" \
    $URAID grow "$db/m0.img" "$db/m1.img" "$db/m2.img" "$db/m3.img" --level 0
refuse "a shrink of a RAID-5 with a bitmap that must cut the member size" "which the write-intent bitmap would have to follow" \
    $URAID grow "$db/m0.img" "$db/m1.img" "$db/m2.img" "$db/m3.img" --raid-devices 3 --array-size 30M
$URAID create --level 1 --raid-devices 2 --bitmap internal "$db/m4.img" "$db/m5.img" >/dev/null 2>&1 ||
    t_fail "create RAID-1 with a bitmap"
truncate -s 16M "$db/m6.img"
all="$all $db/m5.img $db/m6.img"
# shellcheck disable=SC2086
before=$(sums $all)
refuse "RAID-1 with a bitmap gaining a mirror" "RAID-1 with a write-intent bitmap gaining members is not supported" \
    $URAID grow "$db/m4.img" "$db/m5.img" --raid-devices 3 --add "$db/m6.img"

# metadata 1.0 and 0.90: a restripe is refused (no room before the data: md needs a backup file; 1.1
# restripes as 1.2 does, grow_md.sh g)
for fmt in 1.0 0.90; do
    dm=$t_tmp/meta$fmt
    rm -rf "$dm"; mkdir -p "$dm"
    for i in 0 1 2 3 4; do truncate -s 16M "$dm/m$i.img"; done
    $URAID create --metadata $fmt --level 5 --raid-devices 4 --chunk 64K --assume-clean --consistency-policy resync \
        "$dm/m0.img" "$dm/m1.img" "$dm/m2.img" "$dm/m3.img" >/dev/null 2>&1 || t_fail "create a RAID-5 with metadata $fmt"
    all="$dm/m0.img $dm/m1.img $dm/m2.img $dm/m3.img $dm/m4.img"
    # shellcheck disable=SC2086
    before=$(sums $all)
    refuse "metadata $fmt" "growing an array with metadata $fmt is not supported yet" $URAID grow "$dm/m0.img" "$dm/m1.img" "$dm/m2.img" \
        "$dm/m3.img" --raid-devices 5 --add "$dm/m4.img"
done

# ---- 2. a grow ----------------------------------------------------------------------------
d=$t_tmp/g
new_array "$d" 5 4
truncate -s 16M "$d/m4.img"
# shellcheck disable=SC2086
out=$($URAID grow $M --raid-devices 5 --add "$d/m4.img" 2>&1)
M5="$M $d/m4.img"
case "$out" in *"reshape complete: 5 members, array size 61440 KiB (was 46080 KiB)"*) t_ok "RAID-5 4 -> 5: complete" ;;
    *) t_fail "RAID-5 4 -> 5: complete" "$out" ;; esac
# shellcheck disable=SC2086
same_data "RAID-5 4 -> 5" "$d" $M5
# shellcheck disable=SC2086
checks_clean "RAID-5 4 -> 5" $M5
# shellcheck disable=SC2086
examine_done "RAID-5 4 -> 5" 5 1536 $M5
# shellcheck disable=SC2086
t_mdadm_agrees "RAID-5 4 -> 5" $M5
# shellcheck disable=SC2086
before=$(sums $M5)
# shellcheck disable=SC2086
out=$($URAID grow $M --raid-devices 5 --add "$d/m4.img" 2>&1); rc=$?
# shellcheck disable=SC2086
if [ $rc = 0 ] && [ "$(sums $M5)" = "$before" ] && echo "$out" | grep -q "already has 5 members.*nothing to do"; then
    t_ok "the same grow again: nothing to do, nothing written"
else t_fail "the same grow again: nothing to do, nothing written" "rc $rc: $out"; fi

# ---- 3. kill -9 in the middle, then the same grow again -----------------------------------
# kill_grow NAME DIR EXTRA...: a slow grow killed after a random moment
trial=0
kill_grow() {
    name=$1 dir=$2; shift 2
    trial=$((trial + 1))
    ms=$(awk -v s="$seed" -v t="$trial" 'BEGIN { srand(s + t); print 700 + int(rand() * 2500) }')
    # shellcheck disable=SC2086
    $URAID grow $M "$@" --member-layer throttle=6M >/dev/null 2>"$dir/grow.err" &
    pid=$!
    sleep "$(awk -v m="$ms" 'BEGIN { print m / 1000 }')"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    x=$(mdadm --examine "$dir/m0.img" 2>&1)
    if echo "$x" | grep -q "Reshape pos'n" && echo "$x" | grep -q "Delta Devices : 1"; then
        t_ok "$name: killed after $ms ms: mdadm --examine shows the reshape ($(echo "$x" | sed -n "s/^ *Reshape pos'n : //p"))"
    else
        t_fail "$name: killed after $ms ms: mdadm --examine shows the reshape" "$(echo "$x" | grep -i 'feature\|reshape')"
    fi
}
for tr in 1 2 3; do
    d=$t_tmp/k$tr
    new_array "$d" 5 4
    truncate -s 16M "$d/m4.img"
    kill_grow "kill trial $tr" "$d" --raid-devices 5 --add "$d/m4.img"
    M5="$M $d/m4.img"
    # shellcheck disable=SC2086
    got=$($URAID cat $M5 2>"$d/cat.err" | sha256sum | cut -d' ' -f1)
    want=$(sha256sum <"$d/data" | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "kill trial $tr: uraid cat of the half-reshaped array reads the data (both geometries)" ||
        t_fail "kill trial $tr: uraid cat of the half-reshaped array reads the data (both geometries)" \
            "sha $got, want $want: $(cat "$d/cat.err")"
    # shellcheck disable=SC2086
    msg=$($URAID detail $M5 2>&1)
    echo "$msg" | grep -q "Reshape Status : [0-9]*% complete" && echo "$msg" | grep -q "Delta Devices : 1, (4->5)" &&
        t_ok "kill trial $tr: uraid detail shows mdadm's Reshape Status and Delta Devices" ||
        t_fail "kill trial $tr: uraid detail shows the reshape" "$(echo "$msg" | grep -i 'reshape\|delta\|devices')"
    if [ "$tr" = 3 ]; then
        # writes in mid-reshape land where the carried-on reshape finds them
        head -c "$SZ" /dev/urandom >"$d/data"
        # shellcheck disable=SC2086
        $URAID write $M5 <"$d/data" 2>"$d/write.err" && t_ok "kill trial $tr: uraid write of the half-reshaped array" ||
            t_fail "kill trial $tr: uraid write of the half-reshaped array" "$(cat "$d/write.err")"
    fi
    if [ "$tr" = 2 ]; then
        truncate -s 16M "$d/m5.img"
        all="$M5 $d/m5.img"
        # shellcheck disable=SC2086
        before=$(sums $all)
        # shellcheck disable=SC2086
        refuse "kill trial $tr: a reshape in progress asked with other parameters" "already in progress" \
            $URAID grow $M --raid-devices 6 --add "$d/m4.img" "$d/m5.img"
        # shellcheck disable=SC2086
        out=$($URAID grow --continue $M5 2>&1)
    else
        # shellcheck disable=SC2086
        out=$($URAID grow $M --raid-devices 5 --add "$d/m4.img" 2>&1)
    fi
    case "$out" in *"reshape carried on and complete: 5 members"*) t_ok "kill trial $tr: the grow carries on and completes" ;;
        *) t_fail "kill trial $tr: the grow carries on and completes" "$out" ;; esac
    # shellcheck disable=SC2086
    same_data "kill trial $tr" "$d" $M5
    # shellcheck disable=SC2086
    checks_clean "kill trial $tr" $M5
    # shellcheck disable=SC2086
    examine_done "kill trial $tr" 5 1536 $M5
done

# ---- 3b. SIGTERM records the position; power cuts at random member writes ----------------
d=$t_tmp/term
new_array "$d" 5 4
truncate -s 16M "$d/m4.img"
M5="$M $d/m4.img"
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$d/m4.img" --member-layer throttle=6M >/dev/null 2>"$d/grow.err" &
pid=$!
sleep 1.5
kill -TERM $pid; wait $pid; rc=$?
at=$(sed -n 's/.*stopped at array sector \([0-9]*\) of.*/\1/p' "$d/grow.err")
shown=$(mdadm --examine "$d/m0.img" 2>/dev/null | sed -n "s/^ *Reshape pos'n : \([0-9]*\).*/\1/p")
if [ "$rc" = 1 ] && [ -n "$at" ] && [ "$((at / 2))" = "$shown" ]; then
    t_ok "SIGTERM: the grow stops and records where (array sector $at, mdadm's Reshape pos'n ${shown}K)"
else t_fail "SIGTERM: the grow stops and records where" "rc $rc, '$(cat "$d/grow.err")', examine '$shown'"; fi
# shellcheck disable=SC2086
$URAID grow --continue $M5 >/dev/null 2>&1 || t_fail "SIGTERM: --continue"
# shellcheck disable=SC2086
same_data "SIGTERM, then --continue" "$d" $M5
for tr in 1 2 3; do
    d=$t_tmp/pc$tr
    new_array "$d" 5 4
    truncate -s 16M "$d/m4.img"
    M5="$M $d/m4.img"
    after=$(awk -v s="$seed" -v t="$tr" 'BEGIN { srand(s + 1000 + t); print 8 + int(rand() * 70) }')
    # shellcheck disable=SC2086
    out=$($URAID grow $M --raid-devices 5 --add "$d/m4.img" \
        --member-layer "powercut=pd,seed=$((seed + tr)),after=$after,keep=33,tear=33" 2>&1)
    case "$out" in *"complete"*) t_fail "power cut trial $tr (at member write $after): the grow was cut" "$out"; continue ;; esac
    # shellcheck disable=SC2086
    out=$($URAID grow $M --raid-devices 5 --add "$d/m4.img" 2>&1)
    case "$out" in *"complete: 5 members"*) t_ok "power cut trial $tr (at member write $after): the same grow again completes" ;;
        *) t_fail "power cut trial $tr (at member write $after): the same grow again completes" "$out" ;; esac
    # shellcheck disable=SC2086
    same_data "power cut trial $tr" "$d" $M5
    # shellcheck disable=SC2086
    checks_clean "power cut trial $tr" $M5
done

# ---- 4. RAID-6 5 -> 6 ----------------------------------------------------------------------
d=$t_tmp/six
new_array "$d" 6 5
truncate -s 16M "$d/m5.img"
kill_grow "RAID-6 5 -> 6" "$d" --raid-devices 6 --add "$d/m5.img"
M6="$M $d/m5.img"
# shellcheck disable=SC2086
out=$($URAID grow $M --raid-devices 6 --add "$d/m5.img" 2>&1)
case "$out" in *"complete: 6 members, array size 61440 KiB (was 46080 KiB)"*) t_ok "RAID-6 5 -> 6: complete" ;;
    *) t_fail "RAID-6 5 -> 6: complete" "$out" ;; esac
# shellcheck disable=SC2086
same_data "RAID-6 5 -> 6" "$d" $M6
# shellcheck disable=SC2086
checks_clean "RAID-6 5 -> 6" $M6
# shellcheck disable=SC2086
examine_done "RAID-6 5 -> 6" 6 1536 $M6
t_finish
