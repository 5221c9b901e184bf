#!/bin/sh
# uraid grow and the real md (../shared/tools/md-oracle, Linux 6.1's md and
# mdadm 4.2 in a QEMU guest) taking each other's reshape over:
#   a. md assembles arrays uraid grew (RAID-5 4 -> 5 with a member listing
#      bad blocks over garbage, RAID-6 5 -> 6, linear 2 -> 3, RAID-1 2 -> 3
#      mirrors), reads
#      every old byte as written and zeros in the new space, and its check
#      finds mismatch_cnt 0;
#   b. uraid killed in the middle of a RAID-5 4 -> 5 grow: md assembles the
#      members, carries the reshape on to the end, reads every byte, finds
#      mismatch_cnt 0; the host's mdadm --examine then shows 5 devices and no
#      reshape, and uraid reads the same bytes;
#   c. md's own grow (mdadm --grow --raid-devices=5) cut off in the middle
#      (the guest powers off without stopping the array): uraid --continue
#      finishes it, every byte reads back, uraid check finds mismatch_cnt 0;
#   d. md assembles what uraid's --level, --chunk and --layout made (RAID-5
#      4 -> RAID-6 5 restriped to left-symmetric, RAID-5 chunk 64K -> 128K
#      and left-symmetric -> right-asymmetric, RAID-5 -> RAID-6 taken over
#      as left-symmetric-6 with Q recovered, RAID-6 5 -> RAID-5 4 with the Q
#      member a spare): every byte, mismatch_cnt 0, md's level, layout and
#      chunk in sysfs; and uraid killed in the middle of a RAID-5 -> RAID-6
#      restripe and of a chunk 64K -> 256K restripe: md assembles, carries
#      each on to the end, reads every byte, mismatch_cnt 0; md also
#      assembles uraid's RAID-4 -> RAID-5 left-symmetric (restriped), RAID-1
#      of 2 -> RAID-5 of 2, RAID-0 of 3 -> RAID-5 of 4 (parity recovered) and
#      RAID-5 of 4 -> RAID-0 of 3 (restriped to parity-last, then taken over);
#   e. with md's write-intent bitmap: md assembles a RAID-5 uraid grew 4 -> 5
#      and one whose grow uraid was killed in, carries that one on, and finds
#      each member's bitmap current (its events the superblock's: md takes
#      an older one as stale and resyncs the whole array), every byte,
#      mismatch_cnt 0; md's own grow of such an array cut off mid-reshape is
#      finished by uraid grow --continue, every byte, the bitmap current;
#   f. --size max with a write-intent bitmap whose bits no longer fit: uraid
#      and md, each on a copy of the same array, double the bitmap chunk
#      alike; md reads and checks uraid's result (mismatch_cnt 0), uraid reads
#      md's and finds what md's own check finds (md 6.1 leaves part of the new
#      region unsynced), then repairs it;
#   g. metadata 1.1 (the superblock at sector 0, the data offset moved down
#      as with 1.2): md assembles a RAID-5 uraid grew 4 -> 5 and a RAID-5
#      uraid turned into a RAID-6 of 5, and carries on a grow uraid was
#      killed in; uraid finishes md's own cut-off grow of a 1.1 array;
#   h. RAID-0 3 -> 5 (mdadm's way: a RAID-4 missing its parity reshaped,
#      then taken back): md assembles uraid's result and reads every byte;
#      md carries on a RAID-0 grow uraid was killed in (it ends a RAID-4
#      missing its parity; mdadm --grow --level=0 then takes it back) and
#      reads every byte; uraid finishes md's own RAID-0 grow cut off
#      mid-reshape, every byte;
#   i. a served RAID-1 of 2 grown to 3 mirrors through its control socket
#      (uraid grow --control ... --raid-devices 3 --add NEW) while nbdcopy
#      writes through NBD: the new mirror recovered while it serves, the
#      export the data written; md assembles the 3 mirrors (none degraded),
#      reads every byte and its check finds mismatch_cnt 0;
#   j. a served linear array of 2 grown to 4 through its control socket
#      (uraid grow --control ... --raid-devices 4 --add NEW NEW) while
#      nbdcopy writes through NBD: md assembles the 4 members, its size is
#      the old one plus the new data areas, it reads every byte written
#      and the new members' zeros;
#   k. a served RAID-0 of 3 grown to 5 through its control socket while
#      nbdcopy writes (a RAID-4 missing its parity reshaped, then taken
#      back): md assembles the 5 members as a RAID-0 and reads every byte;
#      and one whose server was killed with -9 in mid-reshape: md assembles
#      the RAID-4 missing its parity, carries the reshape on, reads every
#      byte, and mdadm --grow --level=0 takes it back to a RAID-0 of 5;
#   l. a served RAID-1 of 2 taken over as a RAID-5 of 2 and back through
#      its control socket (uraid grow --control ... --level 5 / --level 1)
#      while nbdcopy writes the data again and again: md assembles the
#      result of 1 -> 5 -> 1 -> 5 (raid5, left-symmetric, md's 64K chunk)
#      and of 1 -> 5 -> 1 (raid1), and one whose server was killed with -9
#      right after the takeover, nbdcopy writing: each reads every byte and
#      md's check finds mismatch_cnt 0;
#   m. a served RAID-5 parity-last of 4 and a served RAID-4 of 4 taken over
#      as RAID-0 of 3 through the control socket (--level 0) while nbdcopy
#      writes the data again and again, the second server killed with -9
#      right after: md assembles the data members of each as a RAID-0 of 3
#      of the same size and reads every byte;
#   n. a served RAID-0 of 3 taken over as a RAID-5 parity-last of 4 with a
#      new member recovered into the parity slot (--level 5 --add NEW)
#      while nbdcopy writes, and one whose server was killed with -9 in
#      that recovery: md assembles each (carrying the recovery on), reads
#      every byte, and its check finds mismatch_cnt 0;
#   o. metadata 0.90 and 1.0 (superblocks at the members' ends): md
#      assembles a 0.90 RAID-1 uraid grew to 3 mirrors, a 1.0 linear array
#      grown to 3 members and a served 1.0 RAID-1 that gained a mirror:
#      every byte, its size, mismatch_cnt 0 where there are mirrors;
#   p. metadata 0.90 and 1.0: the level changes that move no data (0.90
#      RAID-5 of 4 -> RAID-6 of 5 left-symmetric-6, 1.0 RAID-0 of 3 ->
#      RAID-5 of 4, 0.90 RAID-1 of 2 -> RAID-5 of 2, 1.0 RAID-5
#      parity-last of 4 -> RAID-0 of 3): md assembles each at its new
#      level and layout, reads every byte, mismatch_cnt 0 with parity;
#   q. a RAID-0's chunk changed 64K -> 128K (mdadm's way, through a RAID-4
#      missing its parity): md assembles the result (raid0, 128K, every
#      byte), and carries on one uraid was killed in, then mdadm --grow
#      --level=0 takes it back: every byte;
#   r. a served RAID-5 -> RAID-0 takeover cut off in its superblock batch
#      (two data members written and one not; every data member and not
#      the parity member): md refuses both mixes rather than read them,
#      and assembles the RAID-0 from the data members of the second,
#      every byte; uraid refuses both with one line.
# g and h run in the long mode only (URAID_TEST_LONG=1, make check-long).
# Without a working md-oracle this suite fails (a "skipped" line says why).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
if ! oracle_ready; then
    echo "skipped: md-oracle cannot run here, so md's side of the reshape is not proven (counted as failed)"
    t_finish
    exit 1
fi
OLD=47185920 NEW=62914560 # bytes of the 64K-chunk arrays: 3 x 15 MiB of data before, 4 x 15 MiB after

size_of() { kib=$($URAID detail "$@" 2>/dev/null | awk '/Array Size/ {print $4; exit}'); echo $((${kib:-0} * 1024)); }
# make DIR LEVEL N SEED [CHUNK [POLICY [BITMAP_CHUNK]]]: N members of 16 MiB with pattern SEED written; sets M and SZ (bytes);
# the superblock format is $META (1.2 unless set)
make_array() {
    dir=$1 lvl=$2 n=$3 s=$4 chunk=${5:-64K} policy=${6:-resync} bchunk=${7:-256K}
    mkdir -p "$dir"
    M="" i=0
    while [ $i -lt "$n" ]; do truncate -s 16M "$dir/m$i.img"; M="$M $dir/m$i.img"; i=$((i + 1)); done
    truncate -s 16M "$dir/m$n.img"
    bmc=""
    [ "$policy" = bitmap ] && bmc="--bitmap-chunk $bchunk"
    # shellcheck disable=SC2086
    $URAID create --level "$lvl" --raid-devices "$n" --chunk "$chunk" --assume-clean --consistency-policy "$policy" \
        --metadata "${META:-1.2}" $bmc --name oracle $M >/dev/null 2>&1 || t_fail "create RAID-$lvl in $dir"
    # shellcheck disable=SC2086
    SZ=$(size_of $M)
    # shellcheck disable=SC2086
    "$PATTERN" -s "$s" -n "$SZ" | $URAID write $M || t_fail "write pattern $s in $dir"
}
disks() { for f in "$@"; do printf ' --disk %s' "$f"; done; }
# The guest's verdict lines for an array: "NAME pattern OK", "NAME zeros OK", "NAME mismatch_cnt=N"
GUEST_VERIFY='verify() { # MD SEED OLD NEW (bytes)
    mdpattern -s $2 -n $3 -c < /dev/$1 >/dev/null && echo "$1 pattern OK"
    z=$(dd if=/dev/$1 bs=4096 skip=$(($3 / 4096)) 2>/dev/null | tr -d "\000" | wc -c)
    [ "$(blockdev --getsize64 /dev/$1)" = "$4" ] && [ "$z" = 0 ] && echo "$1 zeros OK"
    echo check > /sys/block/$1/md/sync_action; sleep 1
    while [ "$(cat /sys/block/$1/md/sync_action)" != idle ]; do sleep 1; done
    echo "$1 mismatch_cnt=$(cat /sys/block/$1/md/mismatch_cnt)"
}
wait_idle() { i=0; while [ "$(cat /sys/block/$1/md/sync_action)" != idle ] && [ $i -lt 300 ]; do sleep 1; i=$((i + 1)); done; }'
judge() { # NAME MD LOG
    name=$1 md=$2 log=$3
    for w in "$md pattern OK" "$md zeros OK" "$md mismatch_cnt=0"; do
        grep -q "^$w\$" "$log" && t_ok "$name: md: $w" || t_fail "$name: md: $w" "$(tail -3 "$log")"
    done
}
# md_says SECTION LOG LINE...: each LINE is a whole line of the guest's LOG
md_says() {
    _sec=$1 _log=$2; shift 2
    for _w in "$@"; do
        grep -q "^$_w\$" "$_log" && t_ok "$_sec: md: $_w" ||
            t_fail "$_sec: md: $_w" "$(grep "^${_w%% *}" "$_log" | head -3; tail -3 "$_log")"
    done
}
uraid_reads() { # NAME SEED MEMBERS...
    name=$1 s=$2; shift 2
    got=$($URAID cat "$@" | sha256sum | cut -d' ' -f1)
    want=$({ "$PATTERN" -s "$s" -n "$OLD"; head -c $((NEW - OLD)) /dev/zero; } | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "$name: uraid reads every byte" || t_fail "$name: uraid reads every byte" "$got"
    out=$($URAID check "$@" 2>&1)
    case "$out" in *"mismatch_cnt 0"*) t_ok "$name: uraid check finds mismatch_cnt 0" ;;
        *) t_fail "$name: uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -1)" ;; esac
}

# ---- a. md reads what uraid grew -----------------------------------------------------------
# RAID-5 with 64K chunks, RAID-6 with mdadm's default 512K chunk (its data moves 4 chunks)
make_array "$t_tmp/a5" 5 4 51; A5="$M $t_tmp/a5/m4.img"; OLD5=$SZ
# one of its members lists bad blocks (a read error whose rewrite failed: md's bad-block log) holding
# garbage: the grow rebuilds those rows from the others, and clears the entry when new rows cover it
BB=$t_tmp/a5/m1.img
# shellcheck disable=SC2086
$URAID repair --member-layer "$BB:read-eio=3M+8K,write-eio=3M+8K" $M >/dev/null 2>&1
mdadm --examine-badblocks "$BB" 2>&1 | grep -q "6144 for 16 sectors" && t_ok "a: member 1 lists sectors 6144-6159 bad" ||
    t_fail "a: member 1 lists sectors 6144-6159 bad" "$(mdadm --examine-badblocks "$BB" 2>&1 | tail -2)"
dd if=/dev/urandom of="$BB" bs=512 seek=6144 count=16 conv=notrunc 2>/dev/null
make_array "$t_tmp/a6" 6 5 52 512K; A6="$M $t_tmp/a6/m5.img"; OLD6=$SZ
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 6 --add "$t_tmp/a6/m5.img" >/dev/null 2>&1 || t_fail "a: uraid grows RAID-6 5 -> 6"
# shellcheck disable=SC2086
$URAID grow $t_tmp/a5/m0.img $t_tmp/a5/m1.img $t_tmp/a5/m2.img $t_tmp/a5/m3.img --raid-devices 5 \
    --add "$t_tmp/a5/m4.img" >/dev/null 2>&1 || t_fail "a: uraid grows RAID-5 4 -> 5"
mdadm --examine-badblocks "$BB" 2>&1 | grep -q "list is empty" && t_ok "a: the grow wrote over the listed sectors: the entry is gone" ||
    t_fail "a: the grow wrote over the listed sectors: the entry is gone" "$(mdadm --examine-badblocks "$BB" 2>&1 | tail -2)"
# linear of 2 gains a third member (appended, no data moved)
mkdir -p "$t_tmp/al"
AL="$t_tmp/al/m0.img $t_tmp/al/m1.img $t_tmp/al/m2.img"
truncate -s 16M $AL
$URAID create --level linear --raid-devices 2 "$t_tmp/al/m0.img" "$t_tmp/al/m1.img" >/dev/null 2>&1 ||
    t_fail "a: create linear of 2"
OLDL=$(size_of "$t_tmp/al/m0.img" "$t_tmp/al/m1.img")
"$PATTERN" -s 53 -n "$OLDL" | $URAID write "$t_tmp/al/m0.img" "$t_tmp/al/m1.img" || t_fail "a: write linear"
$URAID grow "$t_tmp/al/m0.img" "$t_tmp/al/m1.img" --raid-devices 3 --add "$t_tmp/al/m2.img" >/dev/null 2>&1 ||
    t_fail "a: uraid grows linear 2 -> 3"
# RAID-1 of 2 gains a third mirror (recovered by uraid before md sees it)
make_array "$t_tmp/a1" 1 2 54; A1="$M $t_tmp/a1/m2.img"; OLD1=$SZ
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 3 --add "$t_tmp/a1/m2.img" >/dev/null 2>&1 || t_fail "a: uraid grows RAID-1 2 -> 3"
# shellcheck disable=SC2086
NEW5=$(size_of $A5) NEW6=$(size_of $A6) NEWL=$(size_of $AL)
# shellcheck disable=SC2086
"$ORACLE" --snapshot --timeout 500 $(disks $A5 $A6 $AL $A1) -- - >"$t_tmp/a.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble /dev/md0 /dev/vd[a-e] || exit 1
mdadm --assemble /dev/md1 /dev/vd[f-k] || exit 1
mdadm --assemble /dev/md2 /dev/vd[l-n] && {
    mdpattern -s 53 -n $OLDL -c < /dev/md2 >/dev/null && echo "md2 pattern OK"
    [ "\$(blockdev --getsize64 /dev/md2)" = "$NEWL" ] && echo "md2 size OK"
}
verify md0 51 $OLD5 $NEW5
verify md1 52 $OLD6 $NEW6
mdadm --assemble /dev/md3 /dev/vd[o-q] && echo "md3 raid_disks=\$(cat /sys/block/md3/md/raid_disks) degraded=\$(cat /sys/block/md3/md/degraded)" &&
    verify md3 54 $OLD1 $OLD1
GUEST
judge "a: RAID-5 grown 4 -> 5 by uraid" md0 "$t_tmp/a.log"
judge "a: RAID-6 (512K chunk) grown 5 -> 6 by uraid" md1 "$t_tmp/a.log"
judge "a: RAID-1 grown 2 -> 3 mirrors by uraid" md3 "$t_tmp/a.log"
grep -q "^md3 raid_disks=3 degraded=0\$" "$t_tmp/a.log" && t_ok "a: RAID-1 grown: md runs 3 mirrors, none degraded" ||
    t_fail "a: RAID-1 grown: md runs 3 mirrors" "$(grep md3 "$t_tmp/a.log" | head -3)"
for w in "md2 pattern OK" "md2 size OK"; do
    grep -q "^$w\$" "$t_tmp/a.log" && t_ok "a: linear grown 2 -> 3 by uraid: md: $w ($NEWL bytes)" ||
        t_fail "a: linear grown 2 -> 3 by uraid: md: $w" "$(grep -i 'md2\|mdadm' "$t_tmp/a.log" | tail -3)"
done

# ---- b. uraid killed mid-reshape, md carries it on ---------------------------------------
d=$t_tmp/b
make_array "$d" 5 4 53; B="$M $d/m4.img"
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$d/m4.img" --member-layer throttle=6M >/dev/null 2>&1 &
pid=$!
sleep 2
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
pos=$(mdadm --examine "$d/m0.img" 2>/dev/null | sed -n "s/^ *Reshape pos'n : //p")
[ -n "$pos" ] && t_ok "b: uraid killed mid-reshape (Reshape pos'n $pos)" || t_fail "b: uraid killed mid-reshape" "no Reshape line"
# shellcheck disable=SC2086
"$ORACLE" --timeout 500 $(disks $B) -- - >"$t_tmp/b.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble /dev/md0 /dev/vd[a-e] || exit 1
grep -q reshape /proc/mdstat && echo "md0 reshaping"
wait_idle md0
verify md0 53 $OLD $NEW
GUEST
grep -q "^md0 reshaping$" "$t_tmp/b.log" && t_ok "b: md carries the reshape on" || t_fail "b: md carries the reshape on" "$(tail -3 "$t_tmp/b.log")"
judge "b: uraid's interrupted grow finished by md" md0 "$t_tmp/b.log"
x=$(mdadm --examine "$d/m0.img" 2>&1)
if echo "$x" | grep -q "Raid Devices : 5" && ! echo "$x" | grep -q "Reshape"; then t_ok "b: mdadm --examine: 5 devices, no reshape"
else t_fail "b: mdadm --examine: 5 devices, no reshape" "$(echo "$x" | grep -i 'devices\|reshape')"; fi
# shellcheck disable=SC2086
uraid_reads "b: after md finished" 53 $B

# ---- c. md's grow cut off, uraid carries it on --------------------------------------------
d=$t_tmp/c
make_array "$d" 5 4 54; C="$M $d/m4.img"
# shellcheck disable=SC2086
"$ORACLE" --no-stop --timeout 500 $(disks $C) -- - >"$t_tmp/c.log" 2>&1 <<'GUEST'
exec 2>&1
mdadm --assemble /dev/md0 /dev/vd[a-d] || exit 1
echo 500 > /sys/block/md0/md/sync_speed_max
mdadm /dev/md0 --add /dev/vde || exit 1
mdadm --grow /dev/md0 --raid-devices=5 || exit 1
sleep 6
grep reshape /proc/mdstat
GUEST
pos=$(mdadm --examine "$d/m0.img" 2>/dev/null | sed -n "s/^ *Reshape pos'n : //p")
[ -n "$pos" ] && t_ok "c: md's grow cut off mid-reshape (Reshape pos'n $pos)" ||
    t_fail "c: md's grow cut off mid-reshape" "$(tail -3 "$t_tmp/c.log")"
# shellcheck disable=SC2086
out=$($URAID grow --continue $C 2>&1)
case "$out" in *"carried on and complete: 5 members"*) t_ok "c: uraid grow --continue finishes md's reshape" ;;
    *) t_fail "c: uraid grow --continue finishes md's reshape" "$out" ;; esac
# shellcheck disable=SC2086
uraid_reads "c: md's grow finished by uraid" 54 $C

# ---- d. --level, --chunk, --layout: md reads what uraid made, and carries on its killed ones ----
geom_line='geom() { echo "$1 level=$(cat /sys/block/$1/md/level) layout=$(cat /sys/block/$1/md/layout) chunk=$(cat /sys/block/$1/md/chunk_size) raid_disks=$(cat /sys/block/$1/md/raid_disks) degraded=$(cat /sys/block/$1/md/degraded)"; }'
seen_geom() { # NAME LOG LINE
    grep -q "^$3\$" "$2" && t_ok "$1: md: $3" || t_fail "$1: md: $3" "$(grep "^${3%% *} " "$2" | head -2)"
}
mem4() { echo "$1/m0.img $1/m1.img $1/m2.img $1/m3.img"; }
make_array "$t_tmp/d0" 5 4 61; D0="$M $t_tmp/d0/m4.img"
# shellcheck disable=SC2086
$URAID grow $M --level 6 --raid-devices 5 --add "$t_tmp/d0/m4.img" >/dev/null 2>&1 || t_fail "d: uraid turns RAID-5 into RAID-6"
make_array "$t_tmp/d1" 5 4 62; D1=$M
# shellcheck disable=SC2086
$URAID grow $M --chunk 128K --layout right-asymmetric >/dev/null 2>&1 || t_fail "d: uraid restripes to chunk 128K, right-asymmetric"
make_array "$t_tmp/d2" 5 4 63; D2="$M $t_tmp/d2/m4.img"
# shellcheck disable=SC2086
$URAID grow $M --level 6 --raid-devices 5 --add "$t_tmp/d2/m4.img" --layout preserve >/dev/null 2>&1 ||
    t_fail "d: uraid takes RAID-5 over as RAID-6 (left-symmetric-6)"
make_array "$t_tmp/d5" 6 5 64; D5="$M"
# shellcheck disable=SC2086
$URAID grow $M --level 5 >/dev/null 2>&1 || t_fail "d: uraid turns RAID-6 into RAID-5"
# shellcheck disable=SC2086
"$ORACLE" --snapshot --timeout 600 $(disks $D0 $D1 $D2 $D5) -- - >"$t_tmp/d.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
$geom_line
mdadm --assemble /dev/md0 /dev/vd[a-e] && geom md0 && verify md0 61 $OLD $OLD
mdadm --assemble /dev/md1 /dev/vd[f-i] && geom md1 && verify md1 62 $OLD $OLD
mdadm --assemble /dev/md2 /dev/vd[j-n] && geom md2 && verify md2 63 $OLD $OLD
mdadm --assemble /dev/md5 /dev/vd[o-s] && geom md5 && verify md5 64 $OLD $OLD
mdadm --examine /dev/vds | grep -i "role"
GUEST
judge "d: RAID-5 4 turned into RAID-6 5 by uraid" md0 "$t_tmp/d.log"
seen_geom "d: RAID-5 -> RAID-6" "$t_tmp/d.log" "md0 level=raid6 layout=2 chunk=65536 raid_disks=5 degraded=0"
judge "d: RAID-5 restriped to chunk 128K, right-asymmetric by uraid" md1 "$t_tmp/d.log"
seen_geom "d: chunk and layout" "$t_tmp/d.log" "md1 level=raid5 layout=1 chunk=131072 raid_disks=4 degraded=0"
judge "d: RAID-5 taken over as RAID-6 by uraid" md2 "$t_tmp/d.log"
seen_geom "d: takeover" "$t_tmp/d.log" "md2 level=raid6 layout=18 chunk=65536 raid_disks=5 degraded=0"
judge "d: RAID-6 5 turned into RAID-5 4 by uraid" md5 "$t_tmp/d.log"
seen_geom "d: RAID-6 -> RAID-5" "$t_tmp/d.log" "md5 level=raid5 layout=2 chunk=65536 raid_disks=4 degraded=0"
# uraid killed mid-restripe, md carries on
make_array "$t_tmp/k6" 5 4 65; K6="$M $t_tmp/k6/m4.img"
# shellcheck disable=SC2086
$URAID grow $M --level 6 --raid-devices 5 --add "$t_tmp/k6/m4.img" --member-layer throttle=4M >/dev/null 2>&1 &
pid=$!
make_array "$t_tmp/kc" 5 4 66; KC=$M
# shellcheck disable=SC2086
$URAID grow $M --chunk 256K --member-layer throttle=4M >/dev/null 2>&1 &
pid2=$!
sleep 3
kill -9 $pid $pid2 2>/dev/null; wait $pid $pid2 2>/dev/null
for k in k6 kc; do
    pos=$(mdadm --examine "$t_tmp/$k/m0.img" 2>/dev/null | sed -n "s/^ *Reshape pos'n : //p")
    [ -n "$pos" ] && t_ok "d: uraid killed mid-restripe ($k: Reshape pos'n $pos)" ||
        t_fail "d: uraid killed mid-restripe ($k)" "no Reshape line"
done
make_array "$t_tmp/e45" 4 4 67; E45=$M
# shellcheck disable=SC2086
$URAID grow $M --level 5 --layout left-symmetric >/dev/null 2>&1 || t_fail "d: uraid turns RAID-4 into RAID-5 left-symmetric"
make_array "$t_tmp/e15" 1 2 68; E15=$M OLD15=$SZ
# shellcheck disable=SC2086
$URAID grow $M --level 5 >/dev/null 2>&1 || t_fail "d: uraid turns RAID-1 of 2 into RAID-5 of 2"
mkdir -p "$t_tmp/e05"
E05="$t_tmp/e05/m0.img $t_tmp/e05/m1.img $t_tmp/e05/m2.img"
# shellcheck disable=SC2086
truncate -s 16M $E05 "$t_tmp/e05/m3.img"
# shellcheck disable=SC2086
$URAID create --level 0 --raid-devices 3 --chunk 64K --name oracle $E05 >/dev/null 2>&1 || t_fail "d: create RAID-0"
# shellcheck disable=SC2086
"$PATTERN" -s 69 -n "$OLD" | $URAID write $E05 || t_fail "d: write RAID-0"
# shellcheck disable=SC2086
$URAID grow $E05 --level 5 --raid-devices 4 --add "$t_tmp/e05/m3.img" >/dev/null 2>&1 ||
    t_fail "d: uraid turns RAID-0 of 3 into RAID-5 of 4"
E05="$E05 $t_tmp/e05/m3.img"
make_array "$t_tmp/e50" 5 4 70; E50="$t_tmp/e50/m0.img $t_tmp/e50/m1.img $t_tmp/e50/m2.img"
# shellcheck disable=SC2086
$URAID grow $M --level 0 >/dev/null 2>&1 || t_fail "d: uraid turns RAID-5 of 4 into RAID-0 of 3"
# shellcheck disable=SC2086
"$ORACLE" --timeout 600 $(disks $K6 $KC $E45 $E15 $E05 $E50) -- - >"$t_tmp/dk.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
$geom_line
mdadm --assemble /dev/md0 /dev/vd[a-e] && { grep -q reshape /proc/mdstat && echo "md0 reshaping"; }
mdadm --assemble /dev/md1 /dev/vd[f-i] && { grep -A3 md1 /proc/mdstat | grep -q reshape && echo "md1 reshaping"; }
wait_idle md0; wait_idle md1
geom md0; verify md0 65 $OLD $OLD
geom md1; verify md1 66 $OLD $OLD
mdadm --assemble /dev/md2 /dev/vd[j-m] && geom md2 && verify md2 67 $OLD $OLD
mdadm --assemble /dev/md3 /dev/vd[n-o] && geom md3 && verify md3 68 $OLD15 $OLD15
mdadm --assemble /dev/md4 /dev/vd[p-s] && geom md4 && verify md4 69 $OLD $OLD
mdadm --assemble /dev/md5 /dev/vd[t-v] && echo "md5 level=\$(cat /sys/block/md5/md/level) raid_disks=\$(cat /sys/block/md5/md/raid_disks)" &&
    mdpattern -s 70 -n $OLD -c < /dev/md5 >/dev/null && echo "md5 pattern OK"
GUEST
grep -q "^md0 reshaping$" "$t_tmp/dk.log" && t_ok "d: md carries uraid's RAID-5 -> RAID-6 restripe on" ||
    t_fail "d: md carries uraid's RAID-5 -> RAID-6 restripe on" "$(tail -5 "$t_tmp/dk.log")"
grep -q "^md1 reshaping$" "$t_tmp/dk.log" && t_ok "d: md carries uraid's chunk restripe on" ||
    t_fail "d: md carries uraid's chunk restripe on" "$(tail -5 "$t_tmp/dk.log")"
judge "d: uraid's interrupted RAID-5 -> RAID-6 finished by md" md0 "$t_tmp/dk.log"
seen_geom "d: RAID-5 -> RAID-6 finished by md" "$t_tmp/dk.log" "md0 level=raid6 layout=2 chunk=65536 raid_disks=5 degraded=0"
judge "d: uraid's interrupted chunk change finished by md" md1 "$t_tmp/dk.log"
seen_geom "d: chunk change finished by md" "$t_tmp/dk.log" "md1 level=raid5 layout=2 chunk=262144 raid_disks=4 degraded=0"
judge "d: RAID-4 turned into RAID-5 left-symmetric by uraid" md2 "$t_tmp/dk.log"
seen_geom "d: RAID-4 -> RAID-5" "$t_tmp/dk.log" "md2 level=raid5 layout=2 chunk=65536 raid_disks=4 degraded=0"
judge "d: RAID-1 of 2 turned into RAID-5 of 2 by uraid" md3 "$t_tmp/dk.log"
seen_geom "d: RAID-1 -> RAID-5" "$t_tmp/dk.log" "md3 level=raid5 layout=2 chunk=65536 raid_disks=2 degraded=0"
judge "d: RAID-0 of 3 turned into RAID-5 of 4 by uraid" md4 "$t_tmp/dk.log"
seen_geom "d: RAID-0 -> RAID-5" "$t_tmp/dk.log" "md4 level=raid5 layout=5 chunk=65536 raid_disks=4 degraded=0"
seen_geom "d: RAID-5 of 4 -> RAID-0 of 3 by uraid" "$t_tmp/dk.log" "md5 level=raid0 raid_disks=3"
seen_geom "d: RAID-5 of 4 -> RAID-0 of 3 by uraid" "$t_tmp/dk.log" "md5 pattern OK"

# ---- e. a write-intent bitmap through the reshape ---------------------------------------------
# the guest's line for an array's bitmap: "MD bitmap events=E sb events=S" (first member) and
# "MD bitmap stale" when md's log says it took the bitmap as out of date
GUEST_BITMAP='bitmap_line() { # MD DEV
    echo "$1 bitmap events=$(mdadm -X $2 | awk "/ Events :/ {print \$3; exit}") sb events=$(mdadm -E $2 | awk "/ Events :/ {print \$3; exit}")"
    if dmesg | grep -qi "bitmap.*out of date\|bitmap.*stale"; then echo "$1 bitmap stale"; fi
}'
bitmap_judge() { # NAME MD LOG
    l=$(grep "^$2 bitmap events=" "$3" | tail -1)
    e1=$(echo "$l" | awk '{print $3}'); e2=$(echo "$l" | awk '{print $5}')
    [ -n "$e1" ] && [ "$e1" = "$e2" ] && ! grep -q "^$2 bitmap stale$" "$3" &&
        t_ok "$1: md finds the bitmap current ($l)" || t_fail "$1: md finds the bitmap current" "$l $(grep stale "$3")"
}
make_array "$t_tmp/e1" 5 4 71 64K bitmap; EB1="$M $t_tmp/e1/m4.img"
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$t_tmp/e1/m4.img" >/dev/null 2>&1 || t_fail "e: uraid grows a RAID-5 with a bitmap"
# shellcheck disable=SC2086
t_bitmap_current "e: uraid's grow" $EB1
make_array "$t_tmp/e2" 5 4 72 64K bitmap; EB2="$M $t_tmp/e2/m4.img"
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$t_tmp/e2/m4.img" --member-layer throttle=6M >/dev/null 2>&1 &
pid=$!
sleep 2
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
pos=$(mdadm --examine "$t_tmp/e2/m0.img" 2>/dev/null | sed -n "s/^ *Reshape pos'n : //p")
[ -n "$pos" ] && t_ok "e: uraid killed mid-grow of a RAID-5 with a bitmap (Reshape pos'n $pos)" ||
    t_fail "e: uraid killed mid-grow with a bitmap" "no Reshape line"
# shellcheck disable=SC2086
"$ORACLE" --timeout 500 $(disks $EB1 $EB2) -- - >"$t_tmp/e.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
$GUEST_BITMAP
mdadm --assemble /dev/md0 /dev/vd[a-e] && bitmap_line md0 /dev/vda && verify md0 71 $OLD $NEW
mdadm --assemble /dev/md1 /dev/vd[f-j] && { grep -A3 md1 /proc/mdstat | grep -q reshape && echo "md1 reshaping"; }
wait_idle md1
bitmap_line md1 /dev/vdf
verify md1 72 $OLD $NEW
GUEST
judge "e: RAID-5 with a bitmap grown 4 -> 5 by uraid" md0 "$t_tmp/e.log"
bitmap_judge "e: uraid's grow" md0 "$t_tmp/e.log"
grep -q "^md1 reshaping$" "$t_tmp/e.log" && t_ok "e: md carries uraid's interrupted grow with a bitmap on" ||
    t_fail "e: md carries uraid's interrupted grow with a bitmap on" "$(tail -5 "$t_tmp/e.log")"
judge "e: uraid's interrupted grow with a bitmap finished by md" md1 "$t_tmp/e.log"
bitmap_judge "e: the grow md finished" md1 "$t_tmp/e.log"
# md's own grow of an array with a bitmap, cut off
make_array "$t_tmp/e3" 5 4 73 64K bitmap; EB3="$M $t_tmp/e3/m4.img"
# shellcheck disable=SC2086
"$ORACLE" --no-stop --timeout 500 $(disks $EB3) -- - >"$t_tmp/e3.log" 2>&1 <<'GUEST'
exec 2>&1
mdadm --assemble /dev/md0 /dev/vd[a-d] || exit 1
echo 500 > /sys/block/md0/md/sync_speed_max
mdadm /dev/md0 --add /dev/vde || exit 1
mdadm --grow /dev/md0 --raid-devices=5 || exit 1
sleep 6
grep reshape /proc/mdstat
GUEST
pos=$(mdadm --examine "$t_tmp/e3/m0.img" 2>/dev/null | sed -n "s/^ *Reshape pos'n : //p")
[ -n "$pos" ] && t_ok "e: md's grow of a RAID-5 with a bitmap cut off (Reshape pos'n $pos)" ||
    t_fail "e: md's grow with a bitmap cut off" "$(tail -3 "$t_tmp/e3.log")"
# shellcheck disable=SC2086
out=$($URAID grow --continue $EB3 2>&1)
case "$out" in *"carried on and complete: 5 members"*) t_ok "e: uraid grow --continue finishes md's grow with a bitmap" ;;
    *) t_fail "e: uraid grow --continue finishes md's grow with a bitmap" "$out" ;; esac
# shellcheck disable=SC2086
uraid_reads "e: md's grow with a bitmap finished by uraid" 73 $EB3
# shellcheck disable=SC2086
t_bitmap_current "e: md's grow finished by uraid" $EB3
# ---- f. --size max with a write-intent bitmap (md_bitmap_resize) -----------------------------
# Two copies of one RAID-5 of 4 x 16 MiB, bitmap chunk 4 KiB (3840 bits in 1 KiB), each member
# then 32 MiB with random bytes past the old end: uraid grows copy 1, md grows copy 2
# (mdadm --grow --size max in the guest). 31 MiB in 4 KiB chunks would not fit the bitmap's
# two sectors, so both must double the chunk to 8 KiB; md reads uraid's, uraid reads md's.
make_array "$t_tmp/f1" 5 4 81 64K bitmap 4K
rm -f "$t_tmp/f1/m4.img"
OLDF=$SZ FM1=$M
mkdir -p "$t_tmp/f2"
FM2=""
for f in $FM1; do
    head -c 16M /dev/urandom >>"$f"
    cp "$f" "$t_tmp/f2/${f##*/}"
    FM2="$FM2 $t_tmp/f2/${f##*/}"
done
# shellcheck disable=SC2086
out=$($URAID grow $FM1 --size max 2>&1)
case "$out" in *"the new region is in sync"*) t_ok "f: uraid grow --size max with a bitmap: $out" ;;
    *) t_fail "f: uraid grow --size max with a bitmap" "$out" ;; esac
# shellcheck disable=SC2086
NEWF=$(size_of $FM1)
bm_chunk() { $URAID examine "$1" 2>&1 | sed -n '/Write-intent bitmap/,$p' | awk '/Chunksize/ {print $3 $4; exit}'; }
bm_sync() { $URAID examine "$1" 2>&1 | sed -n '/Write-intent bitmap/,$p' | awk '/Sync Size/ {print $4; exit}'; }
c1=$(bm_chunk "$t_tmp/f1/m0.img")
[ "$c1" = 8KB ] && t_ok "f: uraid's bitmap chunk doubled to 8 KB (Sync Size $(bm_sync "$t_tmp/f1/m0.img"))" ||
    t_fail "f: uraid's bitmap chunk doubled to 8 KB" "$c1"
# shellcheck disable=SC2086
t_bitmap_current "f: uraid's --size max" $FM1
# shellcheck disable=SC2086
"$ORACLE" --timeout 500 $(disks $FM1 $FM2) -- - >"$t_tmp/f.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_BITMAP
wait_idle() { i=0; while [ "\$(cat /sys/block/\$1/md/sync_action)" != idle ] && [ \$i -lt 300 ]; do sleep 1; i=\$((i + 1)); done; }
mdadm --assemble /dev/md0 /dev/vd[a-d] && {
    mdpattern -s 81 -n $OLDF -c < /dev/md0 >/dev/null && echo "md0 pattern OK"
    echo "md0 size=\$(blockdev --getsize64 /dev/md0) chunk=\$(mdadm -X /dev/vda | awk '/Chunksize/ {print \$3 \$4}')"
    bitmap_line md0 /dev/vda
    echo check > /sys/block/md0/md/sync_action; sleep 1; wait_idle md0
    echo "md0 mismatch_cnt=\$(cat /sys/block/md0/md/mismatch_cnt)"
    mdadm --stop /dev/md0
}
mdadm --assemble /dev/md1 /dev/vd[e-h] && mdadm --grow /dev/md1 --size max && {
    sleep 1; wait_idle md1
    echo check > /sys/block/md1/md/sync_action; sleep 1; wait_idle md1
    echo "md1 mismatch_cnt=\$(cat /sys/block/md1/md/mismatch_cnt)"
    echo "md1 size=\$(blockdev --getsize64 /dev/md1) chunk=\$(mdadm -X /dev/vde | awk '/Chunksize/ {print \$3 \$4}')"
    mdadm --stop /dev/md1 && echo "md1 stopped"
}
GUEST
grep -q "^md0 pattern OK$" "$t_tmp/f.log" && t_ok "f: md reads the old bytes of uraid's grown array" ||
    t_fail "f: md reads the old bytes of uraid's grown array" "$(tail -3 "$t_tmp/f.log")"
grep -q "^md0 size=$NEWF chunk=8KB$" "$t_tmp/f.log" && t_ok "f: md sees the new size ($NEWF) and the 8 KB bitmap chunk" ||
    t_fail "f: md sees the new size and chunk" "$(grep '^md0 size' "$t_tmp/f.log")"
bitmap_judge "f: uraid's --size max" md0 "$t_tmp/f.log"
grep -q "^md0 mismatch_cnt=0$" "$t_tmp/f.log" && t_ok "f: md's check of uraid's grown array: mismatch_cnt 0" ||
    t_fail "f: md's check of uraid's grown array: mismatch_cnt 0" "$(grep '^md0 mismatch' "$t_tmp/f.log")"
grep -q "^md1 size=$NEWF chunk=8KB$" "$t_tmp/f.log" && grep -q "^md1 stopped$" "$t_tmp/f.log" &&
    t_ok "f: md's --size max of the same array: the same size and chunk as uraid's" ||
    t_fail "f: md's --size max: the same size and chunk as uraid's" "$(grep '^md1' "$t_tmp/f.log" | tr '\n' ' ') $(tail -3 "$t_tmp/f.log")"
# shellcheck disable=SC2086
got=$($URAID cat $FM2 | head -c "$OLDF" | sha256sum | cut -d' ' -f1)
[ "$got" = "$("$PATTERN" -s 81 -n "$OLDF" | sha256sum | cut -d' ' -f1)" ] &&
    t_ok "f: uraid reads the old bytes of md's grown array" || t_fail "f: uraid reads md's grown array" "$got"
# md 6.1's md_bitmap_resize marks the new space NEEDED only from the end of the old counters'
# last page (here 16 MiB of member data), so its resync passes over the new region below it (15-16
# MiB: md's own check counts 2048). uraid's check must find what md's does, and repair it.
mdm=$(sed -n 's/^md1 mismatch_cnt=//p' "$t_tmp/f.log")
# shellcheck disable=SC2086
out=$($URAID check $FM2 2>&1 | grep -o "mismatch_cnt [0-9]*" | tail -n 1)
case "$out" in *"mismatch_cnt ${mdm:-none}") t_ok "f: uraid check of md's grown array finds what md's finds ($out)" ;;
    *) t_fail "f: uraid check of md's grown array finds md's mismatch_cnt ${mdm:-?}" "$out" ;; esac
# shellcheck disable=SC2086
$URAID repair $FM2 >/dev/null 2>&1
# shellcheck disable=SC2086
out=$($URAID check $FM2 2>&1 | grep -o "mismatch_cnt [0-9]*" | tail -n 1)
case "$out" in *"mismatch_cnt 0") t_ok "f: uraid repair, then check: mismatch_cnt 0" ;;
    *) t_fail "f: uraid repair of md's grown array, then check: mismatch_cnt 0" "$out" ;; esac
c2=$(bm_chunk "$t_tmp/f2/m0.img")
[ "$c2" = 8KB ] && t_ok "f: uraid reads md's resized bitmap: chunk 8 KB" || t_fail "f: md's resized bitmap chunk" "$c2"
# ---- g. metadata 1.1 ----------------------------------------------------------------------
# (long mode only: metadata 1.1 restripes as 1.2 does; a, b and d cover 1.2 in make check)
if t_long; then
META=1.1
make_array "$t_tmp/g5" 5 4 71; G5="$M $t_tmp/g5/m4.img"
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$t_tmp/g5/m4.img" >/dev/null 2>&1 || t_fail "g: uraid grows 1.1 RAID-5 4 -> 5"
make_array "$t_tmp/g6" 5 4 72; G6="$M $t_tmp/g6/m4.img"; OLDG6=$SZ
# shellcheck disable=SC2086
$URAID grow $M --level 6 --raid-devices 5 --add "$t_tmp/g6/m4.img" >/dev/null 2>&1 ||
    t_fail "g: uraid turns 1.1 RAID-5 of 4 into RAID-6 of 5"
d=$t_tmp/gk
make_array "$d" 5 4 73; GK="$M $d/m4.img"
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$d/m4.img" --member-layer throttle=6M >/dev/null 2>&1 &
pid=$!
sleep 2
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Version : 1.1" && echo "$x" | grep -q "Reshape pos'n" &&
    t_ok "g: uraid killed mid-grow of a 1.1 array (Reshape pos'n)" || t_fail "g: uraid killed mid-grow of a 1.1 array" "$x"
# shellcheck disable=SC2086
"$ORACLE" --timeout 500 $(disks $G5 $G6 $GK) -- - >"$t_tmp/g.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble /dev/md0 /dev/vd[a-e] || exit 1
verify md0 71 $OLD $NEW
mdadm --assemble /dev/md1 /dev/vd[f-j] || exit 1
echo "md1 level=\$(cat /sys/block/md1/md/level) raid_disks=\$(cat /sys/block/md1/md/raid_disks)"
verify md1 72 $OLDG6 $OLDG6
mdadm --assemble /dev/md2 /dev/vd[k-o] || exit 1
grep -A2 md2 /proc/mdstat | grep -q reshape && echo "md2 reshaping"
wait_idle md2
verify md2 73 $OLD $NEW
GUEST
judge "g: 1.1 RAID-5 grown 4 -> 5 by uraid" md0 "$t_tmp/g.log"
judge "g: 1.1 RAID-5 of 4 -> RAID-6 of 5 by uraid" md1 "$t_tmp/g.log"
grep -q "^md1 level=raid6 raid_disks=5\$" "$t_tmp/g.log" && t_ok "g: md runs it as RAID-6 of 5" ||
    t_fail "g: md runs it as RAID-6 of 5" "$(grep md1 "$t_tmp/g.log" | head -3)"
grep -q "^md2 reshaping\$" "$t_tmp/g.log" && t_ok "g: md carries uraid's killed 1.1 grow on" ||
    t_fail "g: md carries uraid's killed 1.1 grow on" "$(tail -3 "$t_tmp/g.log")"
judge "g: uraid's killed 1.1 grow finished by md" md2 "$t_tmp/g.log"
d=$t_tmp/gc
make_array "$d" 5 4 74; GC="$M $d/m4.img"
# shellcheck disable=SC2086
"$ORACLE" --no-stop --timeout 500 $(disks $GC) -- - >"$t_tmp/gc.log" 2>&1 <<'GUEST'
exec 2>&1
mdadm --assemble /dev/md0 /dev/vd[a-d] || exit 1
echo 500 > /sys/block/md0/md/sync_speed_max
mdadm /dev/md0 --add /dev/vde || exit 1
mdadm --grow /dev/md0 --raid-devices=5 || exit 1
sleep 6
grep reshape /proc/mdstat
GUEST
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Version : 1.1" && echo "$x" | grep -q "Reshape pos'n" &&
    t_ok "g: md's grow of a 1.1 array cut off mid-reshape" || t_fail "g: md's grow of a 1.1 array cut off" "$(tail -3 "$t_tmp/gc.log")"
# shellcheck disable=SC2086
out=$($URAID grow --continue $GC 2>&1)
case "$out" in *"carried on and complete: 5 members"*) t_ok "g: uraid grow --continue finishes md's 1.1 reshape" ;;
    *) t_fail "g: uraid grow --continue finishes md's 1.1 reshape" "$out" ;; esac
# shellcheck disable=SC2086
uraid_reads "g: md's 1.1 grow finished by uraid" 74 $GC
META=1.2
else
    t_short_note "g (metadata 1.1) runs in the long mode"
fi
# ---- h. RAID-0 3 -> 5 ----------------------------------------------------------------------
r0_array() { # DIR SEED: RAID-0 of 3 (16 MiB members) with pattern SEED, two new members; sets M, SZ
    dir=$1; mkdir -p "$dir"
    M="$dir/m0.img $dir/m1.img $dir/m2.img"
    truncate -s 16M "$dir/m0.img" "$dir/m1.img" "$dir/m2.img" "$dir/m3.img" "$dir/m4.img"
    # shellcheck disable=SC2086
    $URAID create --level 0 --raid-devices 3 --chunk 64K --name oracle $M >/dev/null 2>&1 || t_fail "create RAID-0 in $dir"
    # shellcheck disable=SC2086
    SZ=$(size_of $M)
    # shellcheck disable=SC2086
    "$PATTERN" -s "$2" -n "$SZ" | $URAID write $M || t_fail "write pattern $2 in $dir"
}
# r0_killed SECTION WHAT DIR: mdadm --examine of DIR/m0.img shows md's record of a RAID-0 grow cut
# off (a RAID-4 reshaping)
r0_killed() {
    _x=$(mdadm --examine "$3/m0.img" 2>&1)
    echo "$_x" | grep -q "Raid Level : raid4" && echo "$_x" | grep -q "Reshape pos'n" &&
        t_ok "$1: $2 (a RAID-4 reshaping, as md records it)" ||
        t_fail "$1: $2" "$(echo "$_x" | grep -E 'Level|Reshape|Array State')"
}
# r0_md SECTION DONE SEED OLD KILLED KSEED KOLD: md assembles DONE (5 members, a finished RAID-0 grow,
# pattern SEED over OLD bytes), carries on the cut-off grow KILLED (pattern KSEED over KOLD), takes it
# back to RAID-0 and reads both; md's lines judged under SECTION
r0_md() {
    # shellcheck disable=SC2046,SC2086
    "$ORACLE" --timeout 500 $(disks $2 $5) -- - >"$t_tmp/$1.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble /dev/md0 /dev/vd[a-e] || exit 1
echo "md0 level=\$(cat /sys/block/md0/md/level) raid_disks=\$(cat /sys/block/md0/md/raid_disks)"
mdpattern -s $3 -n $4 -c < /dev/md0 >/dev/null && echo "md0 pattern OK"
mdadm --assemble --run /dev/md1 /dev/vd[f-j] || exit 1
grep -A2 md1 /proc/mdstat | grep -q reshape && echo "md1 reshaping"
wait_idle md1
echo "md1 after level=\$(cat /sys/block/md1/md/level) raid_disks=\$(cat /sys/block/md1/md/raid_disks) degraded=\$(cat /sys/block/md1/md/degraded)"
mdpattern -s $6 -n $7 -c < /dev/md1 >/dev/null && echo "md1 pattern OK"
mdadm --grow /dev/md1 --level=0 && echo "md1 to raid0: level=\$(cat /sys/block/md1/md/level) raid_disks=\$(cat /sys/block/md1/md/raid_disks)"
mdpattern -s $6 -n $7 -c < /dev/md1 >/dev/null && echo "md1 raid0 pattern OK"
GUEST
    md_says "$1" "$t_tmp/$1.log" "md0 level=raid0 raid_disks=5" "md0 pattern OK" "md1 reshaping" \
        "md1 after level=raid4 raid_disks=6 degraded=1" "md1 pattern OK" "md1 to raid0: level=raid0 raid_disks=5" \
        "md1 raid0 pattern OK"
}
r0_reads() { # NAME SEED OLD MEMBERS...: uraid reads the pattern and zeros up to the reshaped size
    name=$1 s=$2 old=$3; shift 3
    got=$($URAID cat "$@" | head -c $((old / 3 * 5)) | sha256sum | cut -d' ' -f1)
    want=$({ "$PATTERN" -s "$s" -n "$old"; head -c $((old / 3 * 2)) /dev/zero; } | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "$name: uraid reads every byte" || t_fail "$name: uraid reads every byte" "$got"
}
# (long mode only: RAID-0 growth is proven with md by k, served, and q)
if t_long; then
r0_array "$t_tmp/h" 81; H="$M $t_tmp/h/m3.img $t_tmp/h/m4.img"; OLDH=$SZ
# shellcheck disable=SC2086
out=$($URAID grow $M --raid-devices 5 --add "$t_tmp/h/m3.img" "$t_tmp/h/m4.img" 2>&1) ||
    t_fail "h: uraid grows RAID-0 3 -> 5" "$out"
mdadm --examine "$t_tmp/h/m0.img" 2>&1 | grep -q "Raid Level : raid0" && t_ok "h: uraid's grow ends a RAID-0" ||
    t_fail "h: uraid's grow ends a RAID-0" "$(mdadm --examine "$t_tmp/h/m0.img" 2>&1 | grep -E 'Level|Devices')"
d=$t_tmp/hk
r0_array "$d" 82; HK="$M $d/m3.img $d/m4.img"; OLDHK=$SZ
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$d/m3.img" "$d/m4.img" --member-layer throttle=6M >/dev/null 2>&1 &
pid=$!
sleep 2
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
r0_killed h "uraid killed mid RAID-0 grow" "$d"
r0_md h "$H" 81 "$OLDH" "$HK" 82 "$OLDHK"
# shellcheck disable=SC2086
r0_reads "h: uraid's RAID-0 grow" 81 "$OLDH" $H
# shellcheck disable=SC2086
r0_reads "h: the killed grow finished by md, taken back by mdadm" 82 "$OLDHK" $HK
d=$t_tmp/hc
r0_array "$d" 83; HC="$M $d/m3.img $d/m4.img"; OLDHC=$SZ
# shellcheck disable=SC2086
# The power cut is sysrq's reset: a guest powered off without stopping the array fails the recovering
# member on its way down (md then marks it faulty in the others' superblocks), which no power cut does
"$ORACLE" --no-stop --timeout 300 $(disks $HC) -- - >"$t_tmp/hc.log" 2>&1 <<'GUEST'
exec 2>&1
mdadm --assemble /dev/md0 /dev/vd[a-c] || exit 1
# the RAID-4 that mdadm makes of it is a new personality: the system-wide limit holds it
echo 100 > /proc/sys/dev/raid/speed_limit_min; echo 500 > /proc/sys/dev/raid/speed_limit_max
mdadm --grow /dev/md0 --raid-devices=5 --add /dev/vdd /dev/vde &
sleep 8
grep -A3 md0 /proc/mdstat
echo 1 > /proc/sys/kernel/sysrq; echo b > /proc/sysrq-trigger
GUEST
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Raid Level : raid4" && echo "$x" | grep -q "Reshape pos'n" &&
    t_ok "h: md's RAID-0 grow cut off mid-reshape (a RAID-4 reshaping)" ||
    t_fail "h: md's RAID-0 grow cut off mid-reshape" "$(echo "$x" | grep -E 'Level|Reshape|Array State'; tail -5 "$t_tmp/hc.log")"
# shellcheck disable=SC2086
out=$($URAID grow $M --raid-devices 5 --add "$d/m3.img" "$d/m4.img" 2>&1)
case "$out" in *"RAID-0 now"*) t_ok "h: uraid finishes md's RAID-0 grow ($(echo "$out" | tail -1))" ;;
    *) t_fail "h: uraid finishes md's RAID-0 grow" "$out" ;; esac
# shellcheck disable=SC2086
r0_reads "h: md's RAID-0 grow finished by uraid" 83 "$OLDHC" $HC
else
    t_short_note "h (offline RAID-0 3 -> 5 with md) runs in the long mode"
fi
# ---- i. a served RAID-1 gains a mirror ------------------------------------------------------
d=$t_tmp/i
mkdir -p "$d"
truncate -s 16M "$d/m0.img" "$d/m1.img" "$d/m2.img"
$URAID create --level 1 --raid-devices 2 --assume-clean --name oracle "$d/m0.img" "$d/m1.img" >/dev/null 2>&1 ||
    t_fail "i: create RAID-1 of 2"
SZI=$(size_of "$d/m0.img" "$d/m1.img")
"$PATTERN" -s 91 -n "$SZI" >"$d/data"
t_serve "$d" "$d/m0.img" "$d/m1.img"
uri=$suri
timeout 60 nbdcopy "$d/data" "$uri" &
cp=$!
out=$($URAID grow --control "$d/ctl.sock" --raid-devices 3 --add "$d/m2.img" 2>&1) &&
    t_ok "i: uraid grow --control adds a mirror while nbdcopy writes ($out)" || t_fail "i: uraid grow --control adds a mirror" "$out"
wait $cp && t_ok "i: nbdcopy wrote the data across the grow" || t_fail "i: nbdcopy wrote the data across the grow"
t_wait_status "$d/ctl.sock" "recovery finished"
echo "$st" | grep -q "\[3/3\] \[UUU\]" && t_ok "i: the server's status: 3 mirrors in sync, the recovery finished" ||
    t_fail "i: the server's status: 3 mirrors in sync, the recovery finished" "$st"
got=$(timeout 60 nbdcopy "$uri" - | sha256sum | cut -d' ' -f1)
[ "$got" = "$(sha256sum <"$d/data" | cut -d' ' -f1)" ] && t_ok "i: the export reads the data" ||
    t_fail "i: the export reads the data" "$got"
kill -TERM $spid; wait $spid || t_fail "i: the server stopped cleanly" "$(tail -3 "$d/server.err")"
# shellcheck disable=SC2046,SC2086
"$ORACLE" --timeout 300 $(disks "$d/m0.img" "$d/m1.img" "$d/m2.img") -- - >"$t_tmp/i.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble /dev/md0 /dev/vd[a-c] || exit 1
echo "md0 raid_disks=\$(cat /sys/block/md0/md/raid_disks) degraded=\$(cat /sys/block/md0/md/degraded)"
verify md0 91 $SZI $SZI
GUEST
md_says i "$t_tmp/i.log" "md0 raid_disks=3 degraded=0" "md0 pattern OK" "md0 mismatch_cnt=0"
# ---- j. a served linear array gains 2 members ------------------------------------------------
d=$t_tmp/j
mkdir -p "$d"
truncate -s 16M "$d/m0.img" "$d/m1.img" "$d/m3.img"
truncate -s 8M "$d/m2.img"
$URAID create --level linear --raid-devices 2 --name oracle "$d/m0.img" "$d/m1.img" >/dev/null 2>&1 ||
    t_fail "j: create linear of 2"
SZJ=$(size_of "$d/m0.img" "$d/m1.img")
"$PATTERN" -s 101 -n "$SZJ" >"$d/data"
t_serve "$d" "$d/m0.img" "$d/m1.img"
uri=$suri
timeout 60 nbdcopy "$d/data" "$uri" &
cp=$!
out=$($URAID grow --control "$d/ctl.sock" --raid-devices 4 --add "$d/m2.img" "$d/m3.img" 2>&1) &&
    t_ok "j: uraid grow --control appends 2 members while nbdcopy writes ($out)" ||
    t_fail "j: uraid grow --control appends 2 members" "$out"
wait $cp && t_ok "j: nbdcopy wrote the data across the grow" || t_fail "j: nbdcopy wrote the data across the grow"
NEWJ=$(timeout 10 nbdinfo --size "$uri")
kill -TERM $spid; wait $spid || t_fail "j: the server stopped cleanly" "$(tail -3 "$d/server.err")"
# shellcheck disable=SC2046,SC2086
"$ORACLE" --timeout 300 $(disks "$d/m0.img" "$d/m1.img" "$d/m2.img" "$d/m3.img") -- - >"$t_tmp/j.log" 2>&1 <<GUEST
exec 2>&1
mdadm --assemble /dev/md0 /dev/vd[a-d] || exit 1
echo "md0 level=\$(cat /sys/block/md0/md/level) raid_disks=\$(cat /sys/block/md0/md/raid_disks) size=\$(blockdev --getsize64 /dev/md0)"
mdpattern -s 101 -n $SZJ -c < /dev/md0 >/dev/null && echo "md0 pattern OK"
z=\$(dd if=/dev/md0 bs=4096 skip=$((SZJ / 4096)) 2>/dev/null | tr -d "\000" | wc -c)
[ "\$z" = 0 ] && echo "md0 zeros OK"
GUEST
md_says j "$t_tmp/j.log" "md0 level=linear raid_disks=4 size=$NEWJ" "md0 pattern OK" "md0 zeros OK"
# ---- k. a served RAID-0 gains 2 members -----------------------------------------------------
# k_serve DIR SEED SPEED: RAID-0 of 3 with pattern SEED served (sync speed SPEED), grown to 5 through the
# control socket while nbdcopy writes the pattern again; sets KM (the 5 members), KSZ, spid, kuri, kctl
k_serve() {
    r0_array "$1" "$2"
    KM="$M $1/m3.img $1/m4.img" KSZ=$SZ kctl=$1/ctl.sock kuri="nbd+unix:///?socket=$1/nbd.sock"
    "$PATTERN" -s "$(($2 + 1000))" -n "$SZ" >"$1/data" # (another pattern: md must read what went through NBD)
    # shellcheck disable=SC2086
    t_serve "$1" $M --speed-limit "$3"
    timeout 60 nbdcopy "$1/data" "$kuri" &
    cp=$!
    out=$($URAID grow --control "$kctl" --raid-devices 5 --add "$1/m3.img" "$1/m4.img" 2>&1) &&
        t_ok "k: uraid grow --control starts a RAID-0's reshape while nbdcopy writes ($out)" ||
        t_fail "k: uraid grow --control starts a RAID-0's reshape" "$out"
    wait $cp && t_ok "k: nbdcopy wrote the data across the grow" || t_fail "k: nbdcopy wrote the data across the grow"
}
d=$t_tmp/k
k_serve "$d" 111 4M
KD="$KM" OLDK=$KSZ
t_wait_status "$kctl" "reshape finished"
echo "$st" | grep -q "reshape finished" && t_ok "k: the served reshape finished" || t_fail "k: the served reshape finished" "$st"
kill -TERM $spid; wait $spid || t_fail "k: the server stopped cleanly" "$(tail -3 "$d/server.err")"
mdadm --examine "$d/m0.img" 2>&1 | grep -q "Raid Level : raid0" && t_ok "k: the served grow ends a RAID-0" ||
    t_fail "k: the served grow ends a RAID-0" "$(mdadm --examine "$d/m0.img" 2>&1 | grep -E 'Level|Devices|Reshape')"
d=$t_tmp/kk
k_serve "$d" 112 1M
KK="$KM" OLDKK=$KSZ
sleep 1
kill -KILL $spid; wait $spid 2>/dev/null
r0_killed k "the server killed in mid-reshape" "$d"
r0_md k "$KD" 1111 "$OLDK" "$KK" 1112 "$OLDKK"
# shellcheck disable=SC2086
r0_reads "k: the served RAID-0 grow" 1111 "$OLDK" $KD
# shellcheck disable=SC2086
r0_reads "k: the killed served grow finished by md, taken back by mdadm" 1112 "$OLDKK" $KK
# ---- l. a served RAID-1 of 2 taken over as a RAID-5 of 2, and back ------------------------------------
# l_serve DIR SEED: a RAID-1 of 2 with pattern SEED written, served; nbdcopy writes the same pattern again and
# again while the level changes (whatever a kill cuts off, the bytes stay the pattern's); sets LSZ, lctl, spid, cp
l_serve() {
    mkdir -p "$1"
    truncate -s 16M "$1/m0.img" "$1/m1.img"
    $URAID create --level 1 --raid-devices 2 --assume-clean --name oracle "$1/m0.img" "$1/m1.img" >/dev/null 2>&1 ||
        t_fail "l: create RAID-1 of 2 in $1"
    LSZ=$(size_of "$1/m0.img" "$1/m1.img")
    "$PATTERN" -s "$2" -n "$LSZ" >"$1/data"
    $URAID write "$1/m0.img" "$1/m1.img" <"$1/data" || t_fail "l: write pattern $2 in $1"
    lctl=$1/ctl.sock
    luri="nbd+unix:///?socket=$1/nbd.sock"
    t_serve "$1" "$1/m0.img" "$1/m1.img"
    (i=0; while [ $i -lt 15 ]; do timeout 60 nbdcopy "$1/data" "$luri" || exit 1; i=$((i + 1)); done) &
    cp=$!
}
l_level() { # NAME LEVEL: the takeover through the control socket while nbdcopy writes
    out=$($URAID grow --control "$lctl" --level "$2" 2>&1) && t_ok "l: $1 while nbdcopy writes ($out)" ||
        t_fail "l: $1 while nbdcopy writes" "$out"
    sleep 0.2
}
l_stop() { # NAME
    wait $cp && t_ok "l: $1: nbdcopy wrote the data again and again across the switches" ||
        t_fail "l: $1: nbdcopy wrote the data across the switches"
    got=$(timeout 60 nbdcopy "$luri" - | sha256sum | cut -d' ' -f1)
    [ "$got" = "$(sha256sum <"$d/data" | cut -d' ' -f1)" ] && t_ok "l: $1: the export reads the data" ||
        t_fail "l: $1: the export reads the data" "$got"
    kill -TERM $spid; wait $spid || t_fail "l: $1: the server stopped cleanly" "$(tail -3 "$d/server.err")"
}
d=$t_tmp/l5
l_serve "$d" 121
L5=$d LSZ5=$LSZ
l_level "RAID-1 -> RAID-5" 5
l_level "RAID-5 -> RAID-1" 1
l_level "RAID-1 -> RAID-5 again" 5
l_stop "ends a RAID-5"
d=$t_tmp/l1
l_serve "$d" 122
L1=$d LSZ1=$LSZ
l_level "RAID-1 -> RAID-5" 5
l_level "RAID-5 -> RAID-1" 1
l_stop "ends a RAID-1"
d=$t_tmp/lk
l_serve "$d" 123
LK=$d LSZK=$LSZ
l_level "RAID-1 -> RAID-5 (then kill -9)" 5
kill -KILL $spid; wait $spid 2>/dev/null
wait $cp 2>/dev/null
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Raid Level : raid5" && t_ok "l: the server killed after the takeover, nbdcopy writing: raid5 recorded" ||
    t_fail "l: the server killed after the takeover: raid5 recorded" "$(echo "$x" | grep -E 'Level|State')"
got=$($URAID cat "$d/m0.img" "$d/m1.img" | sha256sum | cut -d' ' -f1)
[ "$got" = "$(sha256sum <"$d/data" | cut -d' ' -f1)" ] && t_ok "l: uraid reads every byte of the killed one" ||
    t_fail "l: uraid reads every byte of the killed one" "$got"
# shellcheck disable=SC2046
"$ORACLE" --timeout 300 $(disks "$L5/m0.img" "$L5/m1.img" "$L1/m0.img" "$L1/m1.img" "$LK/m0.img" "$LK/m1.img") -- - \
    >"$t_tmp/l.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
geom() { echo "\$1 level=\$(cat /sys/block/\$1/md/level) raid_disks=\$(cat /sys/block/\$1/md/raid_disks) degraded=\$(cat /sys/block/\$1/md/degraded) layout=\$(cat /sys/block/\$1/md/layout 2>/dev/null) chunk=\$(cat /sys/block/\$1/md/chunk_size 2>/dev/null)"; }
mdadm --assemble /dev/md0 /dev/vd[ab] && geom md0 && verify md0 121 $LSZ5 $LSZ5
mdadm --assemble /dev/md1 /dev/vd[cd] && geom md1 && verify md1 122 $LSZ1 $LSZ1
mdadm --assemble --run /dev/md2 /dev/vd[ef] && wait_idle md2 && geom md2 && verify md2 123 $LSZK $LSZK
GUEST
md_says l "$t_tmp/l.log" "md0 level=raid5 raid_disks=2 degraded=0 layout=2 chunk=65536" "md0 pattern OK" "md0 mismatch_cnt=0" \
    "md1 level=raid1 raid_disks=2 degraded=0 layout=0 chunk=0" "md1 pattern OK" "md1 mismatch_cnt=0" \
    "md2 level=raid5 raid_disks=2 degraded=0 layout=2 chunk=65536" "md2 pattern OK" "md2 mismatch_cnt=0"
# ---- m. a served RAID-5 parity-last of 4 taken over as a RAID-0 of 3 ----------------------------------
# m_serve DIR SEED LEVEL: a RAID-LEVEL (parity-last) of 4 with pattern SEED written, served, nbdcopy writing the
# same pattern again and again, --level 0 through the control socket; sets MSZ, spid, cp
m_serve() {
    mkdir -p "$1"
    for i in 0 1 2 3; do truncate -s 16M "$1/m$i.img"; done
    lay=""
    [ "$3" = 5 ] && lay="--layout parity-last"
    # shellcheck disable=SC2086
    $URAID create --level "$3" --raid-devices 4 --chunk 64K --assume-clean --consistency-policy resync $lay \
        --name oracle "$1/m0.img" "$1/m1.img" "$1/m2.img" "$1/m3.img" >/dev/null 2>&1 || t_fail "m: create RAID-$3 in $1"
    MSZ=$(size_of "$1/m0.img" "$1/m1.img" "$1/m2.img" "$1/m3.img")
    "$PATTERN" -s "$2" -n "$MSZ" >"$1/data"
    $URAID write "$1/m0.img" "$1/m1.img" "$1/m2.img" "$1/m3.img" <"$1/data" || t_fail "m: write pattern $2 in $1"
    muri="nbd+unix:///?socket=$1/nbd.sock"
    t_serve "$1" "$1/m0.img" "$1/m1.img" "$1/m2.img" "$1/m3.img"
    (i=0; while [ $i -lt 6 ]; do timeout 60 nbdcopy "$1/data" "$muri" || exit 1; i=$((i + 1)); done) &
    cp=$!
    sleep 0.2
    out=$($URAID grow --control "$1/ctl.sock" --level 0 2>&1) && t_ok "m: RAID-$3 of 4 -> RAID-0 of 3 while nbdcopy writes ($out)" ||
        t_fail "m: RAID-$3 of 4 -> RAID-0 of 3 while nbdcopy writes" "$out"
}
d=$t_tmp/m5
m_serve "$d" 131 5
M5=$d MSZ5=$MSZ
wait $cp && t_ok "m: nbdcopy wrote the data again and again across the takeover" || t_fail "m: nbdcopy across the takeover"
kill -TERM $spid; wait $spid || t_fail "m: the server stopped cleanly" "$(tail -3 "$d/server.err")"
d=$t_tmp/mk
m_serve "$d" 132 4
MK=$d MSZK=$MSZ
kill -KILL $spid; wait $spid 2>/dev/null
wait $cp 2>/dev/null
mdadm --examine "$d/m0.img" 2>&1 | grep -q "Raid Level : raid0" && t_ok "m: the server killed after the takeover: raid0 recorded" ||
    t_fail "m: the server killed after the takeover: raid0 recorded" "$(mdadm --examine "$d/m0.img" 2>&1 | grep Level)"
# shellcheck disable=SC2046
"$ORACLE" --timeout 300 $(disks "$M5/m0.img" "$M5/m1.img" "$M5/m2.img" "$MK/m0.img" "$MK/m1.img" "$MK/m2.img") -- - \
    >"$t_tmp/m.log" 2>&1 <<GUEST
exec 2>&1
mdadm --assemble /dev/md0 /dev/vd[abc] &&
    echo "md0 level=\$(cat /sys/block/md0/md/level) raid_disks=\$(cat /sys/block/md0/md/raid_disks) size=\$(blockdev --getsize64 /dev/md0)"
mdpattern -s 131 -n $MSZ5 -c < /dev/md0 >/dev/null && echo "md0 pattern OK"
mdadm --assemble /dev/md1 /dev/vd[def] &&
    echo "md1 level=\$(cat /sys/block/md1/md/level) raid_disks=\$(cat /sys/block/md1/md/raid_disks) size=\$(blockdev --getsize64 /dev/md1)"
mdpattern -s 132 -n $MSZK -c < /dev/md1 >/dev/null && echo "md1 pattern OK"
GUEST
md_says m "$t_tmp/m.log" "md0 level=raid0 raid_disks=3 size=$MSZ5" "md0 pattern OK" "md1 level=raid0 raid_disks=3 size=$MSZK" "md1 pattern OK"
# ---- n. a served RAID-0 of 3 taken over as a RAID-5 parity-last of 4 ----------------------------------
# n_serve DIR SEED SPEED: a RAID-0 of 3 with pattern SEED written, served (recovery speed SPEED), nbdcopy writing
# the same pattern again and again; --level 5 --add m3 through the control socket; sets NSZ, spid, cp, nctl
n_serve() {
    mkdir -p "$1"
    for i in 0 1 2 3; do truncate -s 16M "$1/m$i.img"; done
    $URAID create --level 0 --raid-devices 3 --chunk 64K --name oracle "$1/m0.img" "$1/m1.img" "$1/m2.img" \
        >/dev/null 2>&1 || t_fail "n: create RAID-0 of 3 in $1"
    NSZ=$(size_of "$1/m0.img" "$1/m1.img" "$1/m2.img")
    "$PATTERN" -s "$2" -n "$NSZ" >"$1/data"
    $URAID write "$1/m0.img" "$1/m1.img" "$1/m2.img" <"$1/data" || t_fail "n: write pattern $2 in $1"
    nuri="nbd+unix:///?socket=$1/nbd.sock" nctl=$1/ctl.sock
    t_serve "$1" "$1/m0.img" "$1/m1.img" "$1/m2.img" --speed-limit "$3"
    (i=0; while [ $i -lt 4 ]; do timeout 60 nbdcopy "$1/data" "$nuri" || exit 1; i=$((i + 1)); done) &
    cp=$!
    sleep 0.2
    out=$($URAID grow --control "$nctl" --level 5 --add "$1/m3.img" 2>&1) &&
        t_ok "n: RAID-0 of 3 -> RAID-5 of 4 with a new member while nbdcopy writes ($out)" ||
        t_fail "n: RAID-0 of 3 -> RAID-5 of 4 while nbdcopy writes" "$out"
}
d=$t_tmp/n5
n_serve "$d" 141 8M
N5=$d NSZ5=$NSZ
wait $cp && t_ok "n: nbdcopy wrote the data across the takeover and the recovery" || t_fail "n: nbdcopy across the takeover"
t_wait_status "$nctl" "recovery finished"
echo "$st" | grep -q "recovery finished" && t_ok "n: the parity member recovered while served" ||
    t_fail "n: the parity member recovered while served" "$st"
kill -TERM $spid; wait $spid || t_fail "n: the server stopped cleanly" "$(tail -3 "$d/server.err")"
d=$t_tmp/nk
n_serve "$d" 142 1M
NK=$d NSZK=$NSZ
sleep 1
kill -KILL $spid; wait $spid 2>/dev/null
wait $cp 2>/dev/null
x=$(mdadm --examine "$d/m3.img" 2>&1)
echo "$x" | grep -q "Raid Level : raid5" && echo "$x" | grep -q "Recovery Offset" &&
    t_ok "n: the server killed in the parity's recovery (raid5, the new member's recovery offset recorded)" ||
    t_fail "n: the server killed in the parity's recovery" "$(echo "$x" | grep -E 'Level|Recovery|Role')"
# shellcheck disable=SC2046
"$ORACLE" --timeout 400 $(disks "$N5/m0.img" "$N5/m1.img" "$N5/m2.img" "$N5/m3.img" "$NK/m0.img" "$NK/m1.img" \
    "$NK/m2.img" "$NK/m3.img") -- - >"$t_tmp/n.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
geom() { echo "\$1 level=\$(cat /sys/block/\$1/md/level) layout=\$(cat /sys/block/\$1/md/layout) raid_disks=\$(cat /sys/block/\$1/md/raid_disks) degraded=\$(cat /sys/block/\$1/md/degraded)"; }
mdadm --assemble /dev/md0 /dev/vd[a-d] && geom md0 && verify md0 141 $NSZ5 $NSZ5
mdadm --assemble /dev/md1 /dev/vd[e-h] && sleep 1 && wait_idle md1 && geom md1 && verify md1 142 $NSZK $NSZK
GUEST
md_says n "$t_tmp/n.log" "md0 level=raid5 layout=5 raid_disks=4 degraded=0" "md0 pattern OK" "md0 mismatch_cnt=0" \
    "md1 level=raid5 layout=5 raid_disks=4 degraded=0" "md1 pattern OK" "md1 mismatch_cnt=0"
# ---- o. metadata 0.90 and 1.0: RAID-1 and linear gain members --------------------------------
# a 0.90 RAID-1 of 2 grown offline to 3 mirrors, a 1.0 RAID-1 of 2 grown to 3 while served, a 1.0
# linear of 2 grown offline to 3 (each new member a little bigger: its superblock at its own end)
o_make() { # DIR LEVEL META SEED: 2 members of 16M and a new one of 17M, the pattern written; sets OSZ
    mkdir -p "$1"
    truncate -s 16M "$1/m0.img" "$1/m1.img"
    truncate -s 17M "$1/m2.img"
    $URAID create --level "$2" --raid-devices 2 --metadata "$3" --assume-clean "$1/m0.img" "$1/m1.img" >/dev/null 2>&1 ||
        t_fail "o: create $2 metadata $3"
    OSZ=$(size_of "$1/m0.img" "$1/m1.img")
    "$PATTERN" -s "$4" -n "$OSZ" | $URAID write "$1/m0.img" "$1/m1.img" || t_fail "o: write $2 metadata $3"
}
o_make "$t_tmp/o1" 1 0.90 151; OSZ1=$OSZ
$URAID grow "$t_tmp/o1/m0.img" "$t_tmp/o1/m1.img" --raid-devices 3 --add "$t_tmp/o1/m2.img" >/dev/null 2>&1 &&
    t_ok "o: uraid grows a 0.90 RAID-1 to 3 mirrors" || t_fail "o: uraid grows a 0.90 RAID-1 to 3 mirrors"
o_make "$t_tmp/o2" linear 1.0 152; OSZ2=$OSZ
$URAID grow "$t_tmp/o2/m0.img" "$t_tmp/o2/m1.img" --raid-devices 3 --add "$t_tmp/o2/m2.img" >/dev/null 2>&1 &&
    t_ok "o: uraid grows a 1.0 linear array to 3 members" || t_fail "o: uraid grows a 1.0 linear array to 3 members"
ONEW2=$(size_of "$t_tmp/o2/m0.img" "$t_tmp/o2/m1.img" "$t_tmp/o2/m2.img")
d=$t_tmp/o3
o_make "$d" 1 1.0 153; OSZ3=$OSZ
t_serve "$d" "$d/m0.img" "$d/m1.img"
out=$($URAID grow --control "$d/ctl.sock" --raid-devices 3 --add "$d/m2.img" 2>&1) &&
    t_ok "o: a served 1.0 RAID-1 gains a mirror ($out)" || t_fail "o: a served 1.0 RAID-1 gains a mirror" "$out"
t_wait_status "$d/ctl.sock" "recovery finished"
echo "$st" | grep -q "recovery finished" && t_ok "o: the new mirror recovered while served" ||
    t_fail "o: the new mirror recovered while served" "$st"
kill -TERM $spid; wait $spid || t_fail "o: the server stopped cleanly" "$(tail -3 "$d/server.err")"
# shellcheck disable=SC2046
"$ORACLE" --timeout 300 $(disks "$t_tmp/o1/m0.img" "$t_tmp/o1/m1.img" "$t_tmp/o1/m2.img" "$t_tmp/o2/m0.img" \
    "$t_tmp/o2/m1.img" "$t_tmp/o2/m2.img" "$d/m0.img" "$d/m1.img" "$d/m2.img") -- - >"$t_tmp/o.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble /dev/md0 /dev/vd[a-c] && echo "md0 raid_disks=\$(cat /sys/block/md0/md/raid_disks) degraded=\$(cat /sys/block/md0/md/degraded)" &&
    verify md0 151 $OSZ1 $OSZ1
mdadm --assemble /dev/md1 /dev/vd[d-f] && {
    echo "md1 level=\$(cat /sys/block/md1/md/level) raid_disks=\$(cat /sys/block/md1/md/raid_disks) size=\$(blockdev --getsize64 /dev/md1)"
    mdpattern -s 152 -n $OSZ2 -c < /dev/md1 >/dev/null && echo "md1 pattern OK"
}
mdadm --assemble /dev/md2 /dev/vd[g-i] && echo "md2 raid_disks=\$(cat /sys/block/md2/md/raid_disks) degraded=\$(cat /sys/block/md2/md/degraded)" &&
    verify md2 153 $OSZ3 $OSZ3
GUEST
md_says o "$t_tmp/o.log" "md0 raid_disks=3 degraded=0" "md0 pattern OK" "md0 mismatch_cnt=0" "md1 level=linear raid_disks=3 size=$ONEW2" \
    "md1 pattern OK" "md2 raid_disks=3 degraded=0" "md2 pattern OK" "md2 mismatch_cnt=0"
# ---- p. metadata 0.90 and 1.0: the level changes that move no data ------------------------------
p_make() { # DIR LEVEL N META SEED [LAYOUT]: N members of 16M and one new, the pattern written; sets PM, PSZ
    mkdir -p "$1"
    PM="" i=0
    while [ $i -lt "$3" ]; do truncate -s 16M "$1/m$i.img"; PM="$PM $1/m$i.img"; i=$((i + 1)); done
    truncate -s 16M "$1/m$3.img"
    # shellcheck disable=SC2086
    $URAID create --level "$2" --raid-devices "$3" --chunk 64K --metadata "$4" --assume-clean \
        --consistency-policy resync ${6:+--layout $6} $PM >/dev/null 2>&1 || t_fail "p: create RAID-$2 metadata $4"
    # shellcheck disable=SC2086
    PSZ=$(size_of $PM)
    # shellcheck disable=SC2086
    "$PATTERN" -s "$5" -n "$PSZ" | $URAID write $PM || t_fail "p: write RAID-$2 metadata $4"
}
p_grow() { # NAME ARGS...: uraid grow, which must succeed
    name=$1; shift
    out=$($URAID grow "$@" 2>&1) && t_ok "p: $name: $out" || t_fail "p: $name" "$out"
}
p_make "$t_tmp/p1" 5 4 0.90 161; P1="$PM $t_tmp/p1/m4.img"; PSZ1=$PSZ
# shellcheck disable=SC2086
p_grow "0.90 RAID-5 of 4 -> RAID-6 of 5 (the data in place, Q recovered)" $PM --level 6 --layout left-symmetric-6 \
    --add "$t_tmp/p1/m4.img"
p_make "$t_tmp/p2" 0 3 1.0 162; P2="$PM $t_tmp/p2/m3.img"; PSZ2=$PSZ
# shellcheck disable=SC2086
p_grow "1.0 RAID-0 of 3 -> RAID-5 of 4 (parity recovered)" $PM --level 5 --raid-devices 4 --add "$t_tmp/p2/m3.img"
p_make "$t_tmp/p3" 1 2 0.90 163; P3=$PM; PSZ3=$PSZ
# shellcheck disable=SC2086
p_grow "0.90 RAID-1 of 2 -> RAID-5 of 2" $PM --level 5
p_make "$t_tmp/p4" 5 4 1.0 164 parity-last; P4="$PM"; PSZ4=$PSZ
# shellcheck disable=SC2086
p_grow "1.0 RAID-5 parity-last of 4 -> RAID-0 of 3" $PM --level 0
P4D="$t_tmp/p4/m0.img $t_tmp/p4/m1.img $t_tmp/p4/m2.img"
# shellcheck disable=SC2046,SC2086
"$ORACLE" --timeout 400 $(disks $P1 $P2 $P3 $P4D) -- - >"$t_tmp/p.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
geom() { echo "\$1 level=\$(cat /sys/block/\$1/md/level) layout=\$(cat /sys/block/\$1/md/layout 2>/dev/null) raid_disks=\$(cat /sys/block/\$1/md/raid_disks) degraded=\$(cat /sys/block/\$1/md/degraded 2>/dev/null)"; }
mdadm --assemble /dev/md0 /dev/vd[a-e] && geom md0 && verify md0 161 $PSZ1 $PSZ1
mdadm --assemble /dev/md1 /dev/vd[f-i] && geom md1 && verify md1 162 $PSZ2 $PSZ2
mdadm --assemble /dev/md2 /dev/vd[jk] && geom md2 && verify md2 163 $PSZ3 $PSZ3
mdadm --assemble /dev/md3 /dev/vd[l-n] && geom md3 && mdpattern -s 164 -n $PSZ4 -c < /dev/md3 >/dev/null && echo "md3 pattern OK"
GUEST
md_says p "$t_tmp/p.log" "md0 level=raid6 layout=18 raid_disks=5 degraded=0" "md0 pattern OK" "md0 mismatch_cnt=0" \
    "md1 level=raid5 layout=5 raid_disks=4 degraded=0" "md1 pattern OK" "md1 mismatch_cnt=0" \
    "md2 level=raid5 layout=2 raid_disks=2 degraded=0" "md2 pattern OK" "md2 mismatch_cnt=0" \
    "md3 level=raid0 layout=-1 raid_disks=3 degraded=" "md3 pattern OK"
# ---- q. a RAID-0's chunk changed (mdadm's way: through a RAID-4 missing its parity) -------------
make_array "$t_tmp/q1" 0 3 171; Q1=$M QSZ=$SZ
# shellcheck disable=SC2086
out=$($URAID grow $Q1 --chunk 128K 2>&1) && t_ok "q: uraid changes a RAID-0's chunk 64K -> 128K" ||
    t_fail "q: uraid changes a RAID-0's chunk" "$out"
make_array "$t_tmp/q2" 0 3 172; Q2=$M
# shellcheck disable=SC2086
$URAID grow $Q2 --chunk 128K --member-layer throttle=6M >/dev/null 2>&1 &
pid=$!
sleep 2
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
x=$(mdadm --examine "$t_tmp/q2/m0.img" 2>&1)
echo "$x" | grep -q "Reshape pos'n" && echo "$x" | grep -q "Raid Level : raid4" &&
    t_ok "q: uraid killed in it: md's record of a RAID-4 reshape" ||
    t_fail "q: uraid killed in the RAID-0's chunk change" "$(echo "$x" | grep -i 'level\|reshape\|chunk')"
# shellcheck disable=SC2046,SC2086
"$ORACLE" --timeout 500 $(disks $Q1 $Q2) -- - >"$t_tmp/q.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble /dev/md0 /dev/vd[a-c] && echo "md0 level=\$(cat /sys/block/md0/md/level) chunk=\$(cat /sys/block/md0/md/chunk_size)" &&
    mdpattern -s 171 -n $QSZ -c < /dev/md0 >/dev/null && echo "md0 pattern OK"
mdadm --assemble --run /dev/md1 /dev/vd[d-f] && { grep -q reshape /proc/mdstat && echo "md1 reshaping"; wait_idle md1
    mdadm --grow /dev/md1 --level=0 >/dev/null 2>&1; sleep 1
    echo "md1 level=\$(cat /sys/block/md1/md/level) chunk=\$(cat /sys/block/md1/md/chunk_size)"
    mdpattern -s 172 -n $QSZ -c < /dev/md1 >/dev/null && echo "md1 pattern OK"; }
GUEST
md_says q "$t_tmp/q.log" "md0 level=raid0 chunk=131072" "md0 pattern OK" "md1 reshaping" "md1 level=raid0 chunk=131072" "md1 pattern OK"
# ---- r. a served RAID-5 -> RAID-0 takeover cut off in its superblock batch -----------------------
# The batch writes the data members' superblocks (RAID-0), then the parity member's (a spare). Cut
# states made by putting back a member's superblock from before the server started (a few events
# older than a real cut's, which the same grow heals: test_takeover_raid0_online.c): (1) two data
# members written, one not; (2) every data member written, the parity member not. md must refuse
# what does not agree, never read a mix; with the data members alone in (2) it assembles the RAID-0,
# every byte.
d=$t_tmp/r
make_array "$d" 5 4 181 64K; RM=$M RSZ=$SZ
# shellcheck disable=SC2086
$URAID grow $RM --layout parity-last >/dev/null 2>&1 || t_fail "r: restripe to parity-last first"
for i in 0 1 2 3; do dd if="$d/m$i.img" of="$d/sb$i" bs=4096 skip=1 count=1 2>/dev/null; done
# shellcheck disable=SC2086
t_serve "$d" $RM
out=$($URAID grow --control "$d/ctl.sock" --level 0 2>&1) && t_ok "r: a served RAID-5 parity-last taken over as RAID-0" ||
    t_fail "r: the served takeover" "$out"
kill -TERM $spid; wait $spid || t_fail "r: the server stopped cleanly" "$(tail -3 "$d/server.err")"
mkdir -p "$d/c1" "$d/c2"
for i in 0 1 2 3; do cp "$d/m$i.img" "$d/c1/m$i.img"; cp "$d/m$i.img" "$d/c2/m$i.img"; done
for i in 2 3; do dd if="$d/sb$i" of="$d/c1/m$i.img" bs=4096 seek=1 conv=notrunc 2>/dev/null; done
dd if="$d/sb3" of="$d/c2/m3.img" bs=4096 seek=1 conv=notrunc 2>/dev/null
for c in c1 c2; do
    # shellcheck disable=SC2086
    out=$($URAID cat "$d/$c/m0.img" "$d/$c/m1.img" "$d/$c/m2.img" "$d/$c/m3.img" 2>&1 >/dev/null)
    case "$out" in *"disagrees"*) t_ok "r: $c: uraid refuses the mixed superblocks with one line" ;;
        *) t_fail "r: $c: uraid refuses the mixed superblocks" "$out" ;; esac
done
# shellcheck disable=SC2046
"$ORACLE" --timeout 300 $(disks "$d/c1/m0.img" "$d/c1/m1.img" "$d/c1/m2.img" "$d/c1/m3.img" "$d/c2/m0.img" \
    "$d/c2/m1.img" "$d/c2/m2.img" "$d/c2/m3.img") -- - >"$t_tmp/r.log" 2>&1 <<GUEST
exec 2>&1
mdadm --assemble /dev/md0 /dev/vd[a-d] 2>/dev/null && echo "md0 assembled" || echo "md0 refused"
mdadm --assemble /dev/md1 /dev/vd[e-h] 2>/dev/null && echo "md1 assembled" || echo "md1 refused"
mdadm --stop /dev/md0 /dev/md1 >/dev/null 2>&1
mdadm --assemble /dev/md2 /dev/vd[efg] && echo "md2 level=\$(cat /sys/block/md2/md/level)" &&
    mdpattern -s 181 -n $RSZ -c < /dev/md2 >/dev/null && echo "md2 pattern OK"
GUEST
md_says r "$t_tmp/r.log" "md0 refused" "md1 refused" "md2 level=raid0" "md2 pattern OK"
t_finish
