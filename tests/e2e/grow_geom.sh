#!/bin/sh
# uraid grow --chunk SIZE / --layout NAME (alone or with --raid-devices N
# --add NEW) on RAID-4/5/6 offline, mdadm --examine as the judge of the
# superblocks:
#   1. refusals (one line, every member byte for byte unchanged): a chunk
#      that does not divide the member size, too little head room for the
#      larger chunk (says how much is missing), a layout the level has not,
#      a level change not supported;
#   2. restripes: RAID-5 chunk 64K -> 128K, chunk 128K -> 32K with the
#      layout left-symmetric -> right-asymmetric, RAID-6 5 -> 6 members with
#      chunk 64K -> 256K and layout left-symmetric -> left-symmetric-6, RAID-4
#      chunk 64K -> 16K, RAID-4 4 -> 5 members: every byte as before, uraid check mismatch_cnt 0,
#      mdadm --examine shows the new chunk and layout, no Reshape line;
#      the same grow again: nothing to do, nothing written;
#   3. kill -9 during slow restripes (throttled members) at random moments
#      (the seed is printed): mdadm --examine shows New Chunksize, uraid cat
#      reads every byte of the half-restriped array (both geometries), the
#      same grow again finishes it with every byte intact (3 trials; 12 with
#      URAID_TEST_LONG=1);
#   4. --level: RAID-5 4 -> RAID-6 5 (restriped to left-symmetric, and taken
#      over as left-symmetric-6 with --layout preserve, Q recovered), RAID-6
#      5 -> RAID-5 4 (restriped to left-symmetric-6 first, and the takeover
#      alone), the Q member a spare after; refusals (RAID-5 -> 6 without one
#      new member, RAID-6 -> 5 with one, RAID-1 of 3 -> 5, RAID-5 -> 10); kill -9
#      in the middle of each restripe and the same grow again;
#   5. RAID-4 <-> RAID-5 (parity-last taken over both ways; left-symmetric
#      restriped), RAID-1 of 2 <-> RAID-5 of 2 (the superblocks alone), RAID-0
#      of 3 -> RAID-5 and RAID-4 of 4 (parity recovered onto the new member,
#      a kill -9 in that recovery and the same grow again), RAID-4 of 4 and
#      RAID-5 of 4 (left-symmetric: restriped to parity-last first, killed
#      once in the middle) -> RAID-0 of 3, the parity member a spare;
#      refusals: RAID-0 of unequal members, RAID-0 -> 5 without a new member;
#   6. a chunk restripe killed offline, then served (uraid serve): the
#      server's reshape job carries it on and ends it with the new chunk in
#      every superblock; every byte as before, check clean.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
T=build/tests/test_reshape_geom
[ -x "$T" ] || { t_fail "build/tests/test_reshape_geom is built (make unit-tests)"; t_finish; exit 1; }
seed=${URAID_TEST_SEED:-$(date +%s)}
echo "seed $seed (URAID_TEST_SEED=$seed replays the kill moments)"

sums() { for f in "$@"; do sha256sum "$f"; done; }
# new_array DIR LEVEL N CHUNK [create options]: members DIR/m0..m(N-1) of
# 16 MiB, random data written, its copy in DIR/data; sets M and SZ (bytes)
new_array() {
    dir=$1 lvl=$2 n=$3 ch=$4; shift 4
    rm -rf "$dir"; mkdir -p "$dir"
    M="" i=0
    while [ $i -lt "$n" ]; do truncate -s 16M "$dir/m$i.img"; M="$M $dir/m$i.img"; i=$((i + 1)); done
    # shellcheck disable=SC2086
    $URAID create --level "$lvl" --raid-devices "$n" --chunk "$ch" --assume-clean --consistency-policy resync "$@" $M \
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
examine_geom() { # NAME DEVICES CHUNK LAYOUT MEMBER...: mdadm's words for the new geometry
    name=$1 devs=$2 ch=$3 lay=$4; shift 4
    bad=""
    for m in "$@"; do
        x=$(mdadm --examine "$m" 2>&1)
        echo "$x" | grep -q "^ *Raid Devices : $devs\$" || bad="$bad [$m: Raid Devices]"
        echo "$x" | grep -q "^ *Chunk Size : $ch\$" || bad="$bad [$m: $(echo "$x" | grep 'Chunk Size')]"
        [ -z "$lay" ] || echo "$x" | grep -q "^ *Layout : $lay\$" || bad="$bad [$m: $(echo "$x" | grep 'Layout')]"
        echo "$x" | grep -q "Reshape\|Delta Devices\|New Offset\|New Chunk\|New Layout" && bad="$bad [$m: a reshape line]"
        echo "$x" | grep -q "Checksum : .* - correct" || bad="$bad [$m: checksum]"
    done
    [ -z "$bad" ] && t_ok "$name: mdadm --examine: $devs Raid Devices, Chunk Size $ch${lay:+, Layout $lay}, no Reshape line" ||
        t_fail "$name: mdadm --examine: $devs Raid Devices, Chunk Size $ch, Layout $lay" "$bad"
}
refuse() { # NAME WORDS COMMAND...: fails with one line containing WORDS, nothing written
    name=$1 words=$2; shift 2
    msg=$("$@" 2>&1); rc=$?
    # shellcheck disable=SC2086
    now=$(sums $all)
    if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] && printf '%s' "$msg" | grep -q -- "$words" &&
        [ "$now" = "$before" ]; then t_ok "refused, nothing changed: $name"
    else t_fail "refused, nothing changed: $name" "rc $rc: $msg"; fi
}

# ---- 1. refusals -------------------------------------------------------------------------
d=$t_tmp/r
new_array "$d" 5 4 64K
all=$M
# shellcheck disable=SC2086
before=$(sums $all)
# shellcheck disable=SC2086
refuse "a chunk that does not divide the member size" "not a multiple of the new chunk (2048 KiB)" \
    $URAID grow $M --chunk 2M
# shellcheck disable=SC2086
refuse "a layout RAID-5 has not" "RAID-5 has no layout 'left-symmetric-6'" $URAID grow $M --layout left-symmetric-6
# shellcheck disable=SC2086
refuse "a level change not supported" "changing RAID-5 to RAID-10 is not supported" $URAID grow $M --level 10
# shellcheck disable=SC2086
refuse "a level md has not" "changing RAID-5 to RAID-7 is not supported" $URAID grow $M --level 7
# shellcheck disable=SC2086
refuse "a bad chunk" "bad chunk size '48K'" $URAID grow $M --chunk 48K
dh=$t_tmp/h
new_array "$dh" 5 4 64K
# shellcheck disable=SC2086
"$T" --data-offset 256 $M || t_fail "set a small data offset"
all=$M
# shellcheck disable=SC2086
before=$(sums $all)
# shellcheck disable=SC2086
# too little head room for the larger chunk, but room past the data (the data offset moved down left it):
# md's way then, backwards (new_offset > 0, the data moves up)
# (the superblock alone moved: what the array holds now is what must read back)
# shellcheck disable=SC2086
$URAID cat $M >"$dh/data"
# shellcheck disable=SC2086
out=$($URAID grow $M --chunk 128K 2>&1)
case "$out" in *"complete: 4 members"*"moved up"*) t_ok "a chunk change without head room goes backwards, into the room past the data" ;;
    *) t_fail "a chunk change without head room goes backwards" "$(echo "$out" | tail -1)" ;; esac
# shellcheck disable=SC2086
same_data "backwards chunk change" "$dh" $M
# shellcheck disable=SC2086
checks_clean "backwards chunk change" $M
# shellcheck disable=SC2086
examine_geom "backwards chunk change" 4 128K "" $M

# ---- 2. restripes -------------------------------------------------------------------------
# restripe NAME DIR DEVICES CHUNK LAYOUT MEMBERS -- GROW-OPTIONS...
restripe() {
    name=$1 dir=$2 devs=$3 ch=$4 lay=$5; shift 5
    mem=""
    while [ "$1" != "--" ]; do mem="$mem $1"; shift; done
    shift
    # shellcheck disable=SC2086
    out=$($URAID grow $M "$@" 2>&1)
    case "$out" in *"reshape complete: $devs members"*) t_ok "$name: complete ($out)" ;;
        *) t_fail "$name: complete" "$out" ;; esac
    # shellcheck disable=SC2086
    same_data "$name" "$dir" $mem
    # shellcheck disable=SC2086
    checks_clean "$name" $mem
    # shellcheck disable=SC2086
    examine_geom "$name" "$devs" "$ch" "$lay" $mem
    # shellcheck disable=SC2086
    t_mdadm_agrees "$name" $mem
}
d=$t_tmp/c1
new_array "$d" 5 4 64K
# shellcheck disable=SC2086
restripe "RAID-5 chunk 64K -> 128K" "$d" 4 128K left-symmetric $M -- --chunk 128K
# shellcheck disable=SC2086
before=$(sums $M)
# (the superblock alone moved: what the array holds now is what must read back)
# shellcheck disable=SC2086
$URAID cat $M >"$dh/data"
# shellcheck disable=SC2086
out=$($URAID grow $M --chunk 128K 2>&1); rc=$?
# shellcheck disable=SC2086
if [ $rc = 0 ] && [ "$(sums $M)" = "$before" ] && echo "$out" | grep -q "already has 4 members, chunk 128 KiB.*nothing to do"; then
    t_ok "the same grow again: nothing to do, nothing written"
else t_fail "the same grow again: nothing to do, nothing written" "rc $rc: $out"; fi
d=$t_tmp/c2
new_array "$d" 5 4 128K
# shellcheck disable=SC2086
restripe "RAID-5 chunk 128K -> 32K, left-symmetric -> right-asymmetric" "$d" 4 32K right-asymmetric $M -- \
    --chunk 32K --layout right-asymmetric
d=$t_tmp/c3
new_array "$d" 6 5 64K
truncate -s 16M "$d/m5.img"
# shellcheck disable=SC2086
restripe "RAID-6 5 -> 6 members, chunk 64K -> 256K, layout -> left-symmetric-6" "$d" 6 256K left-symmetric-6 \
    $M "$d/m5.img" -- --raid-devices 6 --add "$d/m5.img" --chunk 256K --layout left-symmetric-6
d=$t_tmp/c4
new_array "$d" 4 4 64K
# shellcheck disable=SC2086
restripe "RAID-4 chunk 64K -> 16K" "$d" 4 16K "" $M -- --chunk 16K
d=$t_tmp/c5
new_array "$d" 4 4 64K
truncate -s 16M "$d/m4.img"
# shellcheck disable=SC2086
restripe "RAID-4 4 -> 5 members" "$d" 5 64K "" $M "$d/m4.img" -- --raid-devices 5 --add "$d/m4.img"

# ---- 3. kill -9 in the middle, then the same grow again -----------------------------------
trials=3
t_long && trials=12
t_short_note "3 of 12 kill trials"
tr=0
while [ $tr -lt $trials ]; do
    tr=$((tr + 1))
    d=$t_tmp/k$tr
    case $((tr % 3)) in
        1) new_array "$d" 5 4 64K; opts="--chunk 256K" newc=256K ;;
        2) new_array "$d" 5 4 128K; opts="--chunk 32K --layout left-asymmetric" newc=32K ;;
        0) new_array "$d" 6 5 64K; opts="--layout right-symmetric --chunk 128K" newc=128K ;;
    esac
    ms=$(awk -v s="$seed" -v t="$tr" 'BEGIN { srand(s + t); print 500 + int(rand() * 2500) }')
    # shellcheck disable=SC2086
    $URAID grow $M $opts --member-layer throttle=4M >/dev/null 2>"$d/grow.err" &
    pid=$!
    sleep "$(awk -v m="$ms" 'BEGIN { print m / 1000 }')"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    x=$(mdadm --examine "$d/m0.img" 2>&1)
    if echo "$x" | grep -q "Reshape pos'n" && echo "$x" | grep -q "New Chunksize"; then
        t_ok "kill trial $tr ($opts): killed after $ms ms: mdadm --examine shows the reshape ($(echo "$x" | sed -n "s/^ *Reshape pos'n : //p"))"
    else
        t_fail "kill trial $tr ($opts): killed after $ms ms: mdadm --examine shows the reshape" \
            "$(echo "$x" | grep -i 'feature\|reshape\|chunk'; cat "$d/grow.err")"
    fi
    # shellcheck disable=SC2086
    got=$($URAID cat $M 2>"$d/cat.err" | sha256sum | cut -d' ' -f1)
    want=$(sha256sum <"$d/data" | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "kill trial $tr: uraid cat of the half-restriped array reads the data (both geometries)" ||
        t_fail "kill trial $tr: uraid cat of the half-restriped array reads the data" "sha $got, want $want: $(cat "$d/cat.err")"
    # shellcheck disable=SC2086
    msg=$($URAID detail $M 2>&1)
    echo "$msg" | grep -q "Reshape Status : [0-9]*% complete" && echo "$msg" | grep -q "New Chunksize : $newc\$" &&
        ! echo "$msg" | grep -q "Delta Devices" &&
        t_ok "kill trial $tr: uraid detail shows mdadm's Reshape Status and New Chunksize $newc" ||
        t_fail "kill trial $tr: uraid detail shows the reshape" "$(echo "$msg" | grep -i 'reshape\|chunk\|layout\|delta')"
    # shellcheck disable=SC2086
    out=$($URAID grow $M $opts 2>&1)
    case "$out" in *"reshape carried on and complete"*) t_ok "kill trial $tr: the same grow again carries on and completes" ;;
        *) t_fail "kill trial $tr: the same grow again carries on and completes" "$out" ;; esac
    # shellcheck disable=SC2086
    same_data "kill trial $tr" "$d" $M
    # shellcheck disable=SC2086
    checks_clean "kill trial $tr" $M
done

# ---- 4. --level ----------------------------------------------------------------------------
examine_level() { # NAME LEVEL DEVICES LAYOUT MEMBER...
    name=$1 lvl=$2 devs=$3 lay=$4; shift 4
    bad=""
    for m in "$@"; do
        x=$(mdadm --examine "$m" 2>&1)
        echo "$x" | grep -q "^ *Raid Level : raid$lvl\$" || bad="$bad [$m: $(echo "$x" | grep 'Raid Level')]"
        echo "$x" | grep -q "^ *Raid Devices : $devs\$" || bad="$bad [$m: Raid Devices]"
        [ -z "$lay" ] || echo "$x" | grep -q "^ *Layout : $lay\$" || bad="$bad [$m: $(echo "$x" | grep 'Layout')]"
        echo "$x" | grep -q "Reshape\|Delta Devices\|New Offset\|New Layout\|Recovery Offset" && bad="$bad [$m: a reshape line]"
        echo "$x" | grep -q "Checksum : .* - correct" || bad="$bad [$m: checksum]"
    done
    [ -z "$bad" ] && t_ok "$name: mdadm --examine: raid$lvl, $devs Raid Devices${lay:+, Layout $lay}, no Reshape or Recovery line" ||
        t_fail "$name: mdadm --examine: raid$lvl, $devs devices, $lay" "$bad"
}
is_spare() { # NAME MEMBER
    mdadm --examine "$2" 2>&1 | grep -q "Device Role : spare" && t_ok "$1: the Q member is a spare now" ||
        t_fail "$1: the Q member is a spare now" "$(mdadm --examine "$2" 2>&1 | grep -E 'Role|Level')"
}
d=$t_tmp/lr
new_array "$d" 5 4 64K
truncate -s 16M "$d/m4.img" "$d/m5.img"
all="$M $d/m4.img $d/m5.img"
# shellcheck disable=SC2086
before=$(sums $all)
# shellcheck disable=SC2086
refuse "RAID-5 -> 6 without a new member" "needs 1 new member (--add), 0 given" $URAID grow $M --level 6
# shellcheck disable=SC2086
refuse "RAID-5 -> 6 with two new members" "md turns a RAID-5 of 4 members into a RAID-6 of 5" \
    $URAID grow $M --level 6 --raid-devices 6 --add "$d/m4.img" "$d/m5.img"
# shellcheck disable=SC2086
refuse "RAID-5 -> 6 in a layout RAID-6 has not" "RAID-6 has no layout 'sideways'" \
    $URAID grow $M --level 6 --raid-devices 5 --add "$d/m4.img" --layout sideways
d1=$t_tmp/l1
new_array "$d1" 1 2 64K
all=$M
# shellcheck disable=SC2086
before=$(sums $all)
# shellcheck disable=SC2086
refuse "RAID-1 -> RAID-0" "changing RAID-1 to RAID-0 is not supported" $URAID grow $M --level 0
d1=$t_tmp/l13
new_array "$d1" 1 3 64K
all=$M
# shellcheck disable=SC2086
before=$(sums $all)
# shellcheck disable=SC2086
refuse "RAID-1 of 3 -> RAID-5" "with 2 members only (the array has 3)" $URAID grow $M --level 5
d6=$t_tmp/l6r
new_array "$d6" 6 5 64K
truncate -s 16M "$d6/new.img"
all="$M $d6/new.img"
# shellcheck disable=SC2086
before=$(sums $all)
# shellcheck disable=SC2086
refuse "RAID-6 -> 5 with a new member" "md turns a RAID-6 of 5 members into a RAID-5 of 4" \
    $URAID grow $M --level 5 --raid-devices 5 --add "$d6/new.img"

# level NAME DIR OUT-WORDS LEVEL DEVICES LAYOUT MEMBERS -- GROW-OPTIONS...
level() {
    name=$1 dir=$2 words=$3 lvl=$4 devs=$5 lay=$6; shift 6
    mem=""
    while [ "$1" != "--" ]; do mem="$mem $1"; shift; done
    shift
    # shellcheck disable=SC2086
    out=$($URAID grow $M "$@" 2>&1)
    case "$out" in *"$words"*) t_ok "$name: done ($(echo "$out" | tail -1))" ;; *) t_fail "$name: done" "$out" ;; esac
    # shellcheck disable=SC2086
    same_data "$name" "$dir" $mem
    # shellcheck disable=SC2086
    checks_clean "$name" $mem
    # shellcheck disable=SC2086
    examine_level "$name" "$lvl" "$devs" "$lay" $mem
}
d=$t_tmp/l56
new_array "$d" 5 4 64K
truncate -s 16M "$d/m4.img"
# shellcheck disable=SC2086
level "RAID-5 4 -> RAID-6 5, restriped" "$d" "reshape complete: 5 members" 6 5 left-symmetric $M "$d/m4.img" -- \
    --level 6 --raid-devices 5 --add "$d/m4.img"
M6="$M $d/m4.img"
# shellcheck disable=SC2086
before=$(sums $M6)
# shellcheck disable=SC2086
out=$($URAID grow $M --level 6 --raid-devices 5 --add "$d/m4.img" 2>&1); rc=$?
# shellcheck disable=SC2086
[ $rc = 0 ] && [ "$(sums $M6)" = "$before" ] && echo "$out" | grep -q "nothing to do" &&
    t_ok "RAID-5 -> 6: the same grow again: nothing to do, nothing written" ||
    t_fail "RAID-5 -> 6: the same grow again: nothing to do, nothing written" "rc $rc: $out"
M=$M6
# shellcheck disable=SC2086
level "RAID-6 5 -> RAID-5 4, restriped to left-symmetric-6 first" "$d" "reshape complete: 4 members" 5 4 left-symmetric \
    $d/m0.img $d/m1.img $d/m2.img $d/m3.img -- --level 5
is_spare "RAID-6 -> 5" "$d/m4.img"
d=$t_tmp/lt
new_array "$d" 5 4 64K
truncate -s 16M "$d/m4.img"
# shellcheck disable=SC2086
level "RAID-5 4 -> RAID-6 5, taken over (--layout preserve)" "$d" "Q recovered onto the new member" 6 5 \
    left-symmetric-6 $M "$d/m4.img" -- --level 6 --raid-devices 5 --add "$d/m4.img" --layout preserve
M="$M $d/m4.img"
# shellcheck disable=SC2086
level "RAID-6 5 (left-symmetric-6) -> RAID-5 4, taken over" "$d" "the Q member is a spare now" 5 4 left-symmetric \
    $d/m0.img $d/m1.img $d/m2.img $d/m3.img -- --level 5
is_spare "RAID-6 -> 5 taken over" "$d/m4.img"

ltrials=2
t_long && ltrials=8
tr=0
while [ $tr -lt $ltrials ]; do
    tr=$((tr + 1))
    d=$t_tmp/lk$tr
    new_array "$d" 5 4 64K
    truncate -s 16M "$d/m4.img"
    M4=$M M5="$M $d/m4.img"
    for step in 6 5; do
        if [ $step = 6 ]; then M=$M4; opts="--level 6 --raid-devices 5 --add $d/m4.img"; mem=$M5
        else M=$M5; opts="--level 5"; mem=$M4; fi
        ms=$(awk -v s="$seed" -v t="$tr$step" 'BEGIN { srand(s + t); print 500 + int(rand() * 2000) }')
        # shellcheck disable=SC2086
        $URAID grow $M $opts --member-layer throttle=4M >/dev/null 2>"$d/grow.err" &
        pid=$!
        sleep "$(awk -v m="$ms" 'BEGIN { print m / 1000 }')"
        kill -9 $pid 2>/dev/null
        wait $pid 2>/dev/null
        x=$(mdadm --examine "$d/m0.img" 2>&1)
        echo "$x" | grep -q "Reshape pos'n" && echo "$x" | grep -q "New Layout" &&
            t_ok "level kill trial $tr, -> RAID-$step: killed after $ms ms, mdadm --examine shows the reshape" ||
            t_fail "level kill trial $tr, -> RAID-$step: killed after $ms ms, mdadm --examine shows the reshape" \
                "$(echo "$x" | grep -i 'level\|reshape\|layout'; cat "$d/grow.err")"
        # shellcheck disable=SC2086
        out=$($URAID grow $M $opts 2>&1)
        case "$out" in *"reshape carried on and complete"*) t_ok "level kill trial $tr, -> RAID-$step: the same grow again completes" ;;
            *) t_fail "level kill trial $tr, -> RAID-$step: the same grow again completes" "$out" ;; esac
        # shellcheck disable=SC2086
        same_data "level kill trial $tr, -> RAID-$step" "$d" $mem
        # shellcheck disable=SC2086
        checks_clean "level kill trial $tr, -> RAID-$step" $mem
    done
done

# ---- 5. RAID-4 <-> 5, RAID-1 <-> 5, RAID-0 <-> 4/5 ----------------------------------------
d=$t_tmp/l45
new_array "$d" 4 4 64K
# shellcheck disable=SC2086
level "RAID-4 -> RAID-5, taken over" "$d" "the RAID-4 taken over, nothing moved" 5 4 parity-last $M -- --level 5
# shellcheck disable=SC2086
level "RAID-5 (parity-last) -> RAID-4, taken over" "$d" "the RAID-5 taken over, nothing moved" 4 4 "" $M -- --level 4
# shellcheck disable=SC2086
level "RAID-4 -> RAID-5 left-symmetric, restriped" "$d" "reshape complete: 4 members (RAID-5 now)" 5 4 \
    left-symmetric $M -- --level 5 --layout left-symmetric
# shellcheck disable=SC2086
level "RAID-5 left-symmetric -> RAID-4, restriped to parity-last first" "$d" "reshape complete: 4 members (RAID-4 now)" \
    4 4 "" $M -- --level 4
d=$t_tmp/l15
new_array "$d" 1 2 64K
# shellcheck disable=SC2086
level "RAID-1 of 2 -> RAID-5 of 2" "$d" "the RAID-1 taken over, nothing moved" 5 2 left-symmetric $M -- --level 5
# shellcheck disable=SC2086
level "RAID-5 of 2 -> RAID-1 of 2" "$d" "the RAID-5 taken over, nothing moved" 1 2 "" $M -- --level 1
d=$t_tmp/l0r
rm -rf "$d"; mkdir -p "$d"
truncate -s 16M "$d/m0.img" "$d/m1.img" "$d/new.img"; truncate -s 24M "$d/m2.img"
$URAID create --level 0 --raid-devices 3 --chunk 64K "$d/m0.img" "$d/m1.img" "$d/m2.img" >/dev/null 2>&1 ||
    t_fail "create a RAID-0 of unequal members"
all="$d/m0.img $d/m1.img $d/m2.img $d/new.img"
# shellcheck disable=SC2086
before=$(sums $all)
refuse "RAID-0 of unequal members -> RAID-5" "md takes only a RAID-0 of equal members (one zone) over" \
    $URAID grow "$d/m0.img" "$d/m1.img" "$d/m2.img" --level 5 --raid-devices 4 --add "$d/new.img"
refuse "RAID-0 -> RAID-5 without a new member" "needs 1 new member (--add), 0 given" \
    $URAID grow "$d/m0.img" "$d/m1.img" "$d/m2.img" --level 5
for lv in 5 4; do
    d=$t_tmp/l0$lv
    rm -rf "$d"; mkdir -p "$d"
    M="" i=0
    while [ $i -lt 3 ]; do truncate -s 16M "$d/m$i.img"; M="$M $d/m$i.img"; i=$((i + 1)); done
    truncate -s 16M "$d/m3.img"
    # shellcheck disable=SC2086
    $URAID create --level 0 --raid-devices 3 --chunk 64K $M >/dev/null 2>&1 || t_fail "create RAID-0 in $d"
    # shellcheck disable=SC2086
    SZ=$(($($URAID detail $M | awk '/Array Size/ {print $4; exit}') * 1024))
    head -c "$SZ" /dev/urandom >"$d/data"
    # shellcheck disable=SC2086
    $URAID write $M <"$d/data" || t_fail "write the data in $d"
    lay=parity-last
    [ $lv = 4 ] && lay=""
    if [ $lv = 5 ]; then
        # a kill -9 in the parity's recovery, then the same grow again
        # shellcheck disable=SC2086
        $URAID grow $M --level 5 --raid-devices 4 --add "$d/m3.img" --member-layer throttle=4M >/dev/null 2>&1 &
        gp=$!
        n=0; while ! mdadm --examine "$d/m3.img" 2>/dev/null | grep -q "Recovery Offset" && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
        sleep 0.5
        kill -9 $gp 2>/dev/null; wait $gp 2>/dev/null
        mdadm --examine "$d/m3.img" 2>&1 | grep -q "Recovery Offset : " &&
            t_ok "RAID-0 -> RAID-5: killed in the parity's recovery, md's checkpoint on the new member" ||
            t_fail "RAID-0 -> RAID-5: killed in the parity's recovery" "$(mdadm --examine "$d/m3.img" 2>&1 | grep -E 'Recovery|Role|Level')"
        words="(a recovery carried on) recovered onto the new member"
    else
        words="parity recovered onto the new member"
    fi
    # shellcheck disable=SC2086
    level "RAID-0 of 3 -> RAID-$lv of 4" "$d" "$words" $lv 4 "$lay" $M "$d/m3.img" -- --level $lv --raid-devices 4 \
        --add "$d/m3.img"
done

for from in 4 5; do
    d=$t_tmp/l${from}0
    new_array "$d" $from 4 64K
    if [ $from = 5 ]; then
        # shellcheck disable=SC2086
        $URAID grow $M --level 0 --member-layer throttle=4M >/dev/null 2>&1 &
        gp=$!
        sleep 1
        kill -9 $gp 2>/dev/null; wait $gp 2>/dev/null
        mdadm --examine "$d/m0.img" 2>&1 | grep -q "New Layout : parity-last" &&
            t_ok "RAID-5 -> RAID-0: killed in the restripe to parity-last" ||
            t_fail "RAID-5 -> RAID-0: killed in the restripe to parity-last" "$(mdadm --examine "$d/m0.img" | grep -i 'reshape\|layout')"
        words="reshape carried on and complete: 3 members (RAID-0 now)"
    else
        words="RAID-0: 3 members (the RAID-4 taken over, nothing moved)"
    fi
    # shellcheck disable=SC2086
    out=$($URAID grow $M --level 0 2>&1)
    case "$out" in *"$words"*) t_ok "RAID-$from of 4 -> RAID-0 of 3: done ($(echo "$out" | tail -1))" ;;
        *) t_fail "RAID-$from of 4 -> RAID-0 of 3: done" "$out" ;; esac
    R0="$d/m0.img $d/m1.img $d/m2.img"
    # shellcheck disable=SC2086
    got=$($URAID cat $R0 | head -c "$SZ" | sha256sum | cut -d' ' -f1)
    [ "$got" = "$(sha256sum <"$d/data" | cut -d' ' -f1)" ] && t_ok "RAID-$from -> RAID-0: every byte as before" ||
        t_fail "RAID-$from -> RAID-0: every byte as before" "$got"
    x=$(mdadm --examine "$d/m0.img" 2>&1)
    echo "$x" | grep -q "Raid Level : raid0" && echo "$x" | grep -q "Raid Devices : 3\$" && ! echo "$x" | grep -q Reshape &&
        mdadm --examine "$d/m3.img" 2>&1 | grep -q "Device Role : spare" &&
        t_ok "RAID-$from -> RAID-0: mdadm --examine: raid0, 3 devices, the parity member a spare" ||
        t_fail "RAID-$from -> RAID-0: mdadm --examine" "$(echo "$x" | grep -E 'Level|Devices|Reshape')"
done

# ---- 6. a killed chunk restripe carried on by the server ---------------------------------
d=$t_tmp/srv
new_array "$d" 5 4 64K
# shellcheck disable=SC2086
$URAID grow $M --chunk 128K --member-layer throttle=4M >/dev/null 2>&1 &
pid=$!
sleep 1.5
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
mdadm --examine "$d/m0.img" 2>&1 | grep -q "New Chunksize : 128K" && t_ok "served: killed offline mid-restripe" ||
    t_fail "served: killed offline mid-restripe" "$(mdadm --examine "$d/m0.img" 2>&1 | grep -i 'reshape\|chunk')"
# shellcheck disable=SC2086
$URAID serve $M --socket "$d/nbd.sock" --control "$d/ctl.sock" 2>"$d/server.err" &
spid=$!
n=0
while [ $n -lt 240 ]; do
    mdadm --examine "$d/m0.img" 2>/dev/null | grep -q "Reshape" || break
    sleep 0.25; n=$((n + 1))
done
line=$(timeout 10 $URAID status --control "$d/ctl.sock" 2>&1 | tail -n 1)
kill -TERM $spid; wait $spid
[ $n -lt 240 ] && t_ok "served: the server's reshape job ended the restripe ($line)" ||
    t_fail "served: the server's reshape job ended the restripe" "$line; $(tail -3 "$d/server.err")"
# shellcheck disable=SC2086
same_data "served" "$d" $M
# shellcheck disable=SC2086
checks_clean "served" $M
# shellcheck disable=SC2086
examine_geom "served" 4 128K left-symmetric $M
t_finish
