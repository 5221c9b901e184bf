#!/bin/sh
# Shrinking RAID-5/6 (uraid grow --raid-devices N smaller --array-size SIZE:
# md's backwards reshape) and reverting a reshape (uraid update
# --update=revert-reshape), on the host and with the real md
# (../shared/tools/md-oracle, Linux 6.1's md in a QEMU guest; one boot):
#   h. refusals write nothing (no --array-size, one too big, --add with a
#      shrink): every member byte for byte; a shrink 4 -> 3 complete, read
#      back, checked clean, the leaving member a spare (host mdadm
#      --examine), the same grow again "nothing to do"; a shrink killed
#      halfway reads back its kept bytes, and --continue finishes it;
#   r. a RAID-5 4 -> 5 grow killed halfway, reverted by uraid, carried on by
#      uraid: every byte as before the grow, 4 members and a spare;
#   md (one guest): md assembles a shrink uraid was killed in and finishes
#      it (every kept byte, mismatch_cnt 0); md assembles the reverted grow
#      and moves the data back; md reads a RAID-6 5 -> 4 shrink uraid
#      finished; md starts a shrink itself (sysfs, as mdadm would with the
#      kernel's reshape_direction) and is cut off (the guest powers off with
#      the array running): uraid --continue finishes it byte for byte;
#      md finishes a chunk change uraid ran backwards (no head room: md's
#      BACKWARDS bit with delta_disks 0) and was killed in;
#   mdadm (a second guest): its --update=revert-reshape on the same killed
#      grow writes the record uraid's revert wrote, and uraid carries it on.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
t_need mdadm
if ! oracle_ready; then
    echo "skipped: md-oracle cannot run here, so md's side of the shrink is not proven (counted as failed)"
    t_finish
    exit 1
fi

size_of() { kib=$($URAID detail "$@" 2>/dev/null | awk '/Array Size/ {print $4; exit}'); echo $((${kib:-0} * 1024)); }
# make_array DIR LEVEL N SEED [CHUNK] [EXTRA]: N members of 16 MiB (EXTRA more files), pattern SEED written;
# sets M (the N members) and SZ (bytes)
make_array() {
    dir=$1 lvl=$2 n=$3 s=$4 chunk=${5:-64K} extra=${6:-0}
    mkdir -p "$dir"
    M="" i=0
    while [ $i -lt $((n + extra)) ]; do
        truncate -s 16M "$dir/m$i.img"
        [ $i -lt "$n" ] && M="$M $dir/m$i.img"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    $URAID create --level "$lvl" --raid-devices "$n" --chunk "$chunk" --assume-clean --consistency-policy resync \
        --name oracle $M >/dev/null 2>&1 || t_fail "create RAID-$lvl in $dir"
    # shellcheck disable=SC2086
    SZ=$(size_of $M)
    # shellcheck disable=SC2086
    "$PATTERN" -s "$s" -n "$SZ" | $URAID write $M || t_fail "write pattern $s in $dir"
}
sums() { for f in "$@"; do sha256sum "$f" | cut -d' ' -f1; done; }
# reads NAME SEED BYTES MEMBERS...: the array's first BYTES are pattern SEED, and uraid's check is clean
reads() {
    name=$1 s=$2 n=$3; shift 3
    got=$($URAID cat "$@" 2>/dev/null | head -c "$n" | sha256sum | cut -d' ' -f1)
    want=$("$PATTERN" -s "$s" -n "$n" | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "$name: uraid reads every kept byte ($n)" || t_fail "$name: uraid reads every kept byte"
}
clean() {
    name=$1; shift
    out=$($URAID check "$@" 2>&1)
    case "$out" in *"mismatch_cnt 0"*) t_ok "$name: uraid check finds mismatch_cnt 0" ;;
        *) t_fail "$name: uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -1)" ;; esac
}
reshape_pos() { mdadm --examine "$1" 2>/dev/null | sed -n "s/^ *Reshape pos'n : \([0-9]*\).*/\1/p"; }
# kill_mid DIR GROW-ARGS...: runs uraid grow throttled and kills it once the members record a reshape
# position other than the one they held before (a --continue's first checkpoint comes after its first
# window, a second or more at 3M/s: killed sooner it would record nothing new); prints the position
kill_mid() {
    dir=$1; shift
    p0=$(reshape_pos "$dir/m0.img")
    $URAID grow "$@" --member-layer throttle=3M >/dev/null 2>&1 &
    pid=$!
    i=0
    while [ $i -lt 60 ]; do
        sleep 0.25
        p=$(reshape_pos "$dir/m0.img")
        [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$p0" ] && [ $i -ge 6 ] && break
        i=$((i + 1))
    done
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    reshape_pos "$dir/m0.img"
}

# ---- h. on the host ---------------------------------------------------------------------
d=$t_tmp/h
make_array "$d" 5 4 91
H=$M
# the new size: one 64K unit per member cut (no room past the data), 2 data members
cap=$($URAID grow $H --raid-devices 3 2>&1 | sed -n 's/.*give --array-size \([0-9]*\)K.*/\1/p')
[ -n "$cap" ] && t_ok "h: the refusal names the size to give (${cap}K)" || t_fail "h: the refusal names the size"
KEEP=$((cap * 1024))
before=$(sums $H)
# shellcheck disable=SC2086
out=$($URAID grow $H --raid-devices 3 2>&1); rc=$?
case "$rc:$out" in 1:*"file system"*"--array-size"*) t_ok "h: a shrink without --array-size is refused" ;;
    *) t_fail "h: a shrink without --array-size is refused" "$rc $out" ;; esac
# shellcheck disable=SC2086
out=$($URAID grow $H --raid-devices 3 --array-size $((cap + 4))K 2>&1); rc=$?
case "$rc:$out" in 1:*"more than 3 members hold"*) t_ok "h: an --array-size past the new size is refused" ;;
    *) t_fail "h: an --array-size past the new size is refused" "$rc $out" ;; esac
truncate -s 16M "$d/new.img"
# shellcheck disable=SC2086
out=$($URAID grow $H --raid-devices 3 --array-size ${cap}K --add "$d/new.img" 2>&1); rc=$?
case "$rc:$out" in 1:*"takes no new members"*) t_ok "h: a shrink with --add is refused" ;;
    *) t_fail "h: a shrink with --add is refused" "$rc $out" ;; esac
# shellcheck disable=SC2086
[ "$(sums $H)" = "$before" ] && t_ok "h: the refusals wrote nothing (every member byte for byte)" ||
    t_fail "h: the refusals wrote nothing"
# shellcheck disable=SC2086
out=$($URAID grow $H --raid-devices 3 --array-size ${cap}K 2>&1)
case "$out" in *"complete: 3 members"*"moved up"*) t_ok "h: uraid shrinks RAID-5 4 -> 3" ;;
    *) t_fail "h: uraid shrinks RAID-5 4 -> 3" "$(echo "$out" | tail -1)" ;; esac
reads "h: shrunk" 91 "$KEEP" $H
clean "h: shrunk" "$d/m0.img" "$d/m1.img" "$d/m2.img"
x0=$(mdadm --examine "$d/m0.img" 2>&1) x3=$(mdadm --examine "$d/m3.img" 2>&1)
if echo "$x0" | grep -q "Raid Devices : 3" && ! echo "$x0" | grep -q Reshape && echo "$x3" | grep -q "Device Role : spare"
then t_ok "h: mdadm --examine: 3 devices, no reshape, the fourth member a spare"
else t_fail "h: mdadm --examine after the shrink" "$(echo "$x0$x3" | grep -i 'devices\|reshape\|role')"; fi
# shellcheck disable=SC2086
out=$($URAID grow $H --raid-devices 3 --array-size ${cap}K 2>&1); rc=$?
case "$rc:$out" in 0:*"nothing to do"*) t_ok "h: the same shrink again: nothing to do" ;;
    *) t_fail "h: the same shrink again: nothing to do" "$rc $out" ;; esac
# killed halfway: the kept bytes read back mid-reshape, --continue finishes
d=$t_tmp/hk
make_array "$d" 5 4 92
HK=$M
# shellcheck disable=SC2086
pos=$(kill_mid "$d" $HK --raid-devices 3 --array-size ${cap}K)
x=$(mdadm --examine "$d/m0.img" 2>&1)
if [ -n "$pos" ] && echo "$x" | grep -q "Delta Devices : -1 (4->3)"; then t_ok "h: uraid killed mid-shrink (Reshape pos'n $pos, delta -1)"
else t_fail "h: uraid killed mid-shrink" "$(echo "$x" | grep -i 'reshape\|delta\|feature')"; fi
# shellcheck disable=SC2086
reads "h: mid-shrink" 92 "$KEEP" $HK
# shellcheck disable=SC2086
out=$($URAID grow --continue $HK 2>&1)
case "$out" in *"carried on and complete: 3 members"*) t_ok "h: uraid grow --continue finishes the shrink" ;;
    *) t_fail "h: uraid grow --continue finishes the shrink" "$(echo "$out" | tail -1)" ;; esac
reads "h: shrink finished" 92 "$KEEP" "$d/m0.img" "$d/m1.img" "$d/m2.img"
clean "h: shrink finished" "$d/m0.img" "$d/m1.img" "$d/m2.img"

# X: a shrink uraid is killed in, for md
d=$t_tmp/x
make_array "$d" 5 4 93
X=$M
# shellcheck disable=SC2086
pos=$(kill_mid "$d" $X --raid-devices 3 --array-size ${cap}K)
[ -n "$pos" ] && t_ok "md: uraid killed mid-shrink for md (Reshape pos'n $pos)" || t_fail "md: uraid killed mid-shrink for md"
# Y: a RAID-6 5 -> 4 shrink (chunk 512K -> 256K) uraid finished, for md to read
d=$t_tmp/y
make_array "$d" 6 5 94 512K
Y=$M
capy=$($URAID grow $Y --raid-devices 4 --chunk 256K 2>&1 | sed -n 's/.*give --array-size \([0-9]*\)K.*/\1/p')
# shellcheck disable=SC2086
out=$($URAID grow $Y --raid-devices 4 --chunk 256K --array-size "${capy:-0}K" 2>&1)
case "$out" in *"complete: 4 members"*) t_ok "md: uraid shrinks RAID-6 5 -> 4, chunk 512K -> 256K" ;;
    *) t_fail "md: uraid shrinks RAID-6 5 -> 4" "$(echo "$out" | tail -1)" ;; esac
KEEPY=$((${capy:-0} * 1024))

# V: a chunk change with no head room (data offset 256) goes backwards (md's BACKWARDS bit, delta 0), killed, for md
d=$t_tmp/v
mkdir -p "$d"
V="$d/m0.img $d/m1.img $d/m2.img $d/m3.img"
# shellcheck disable=SC2086
truncate -s 16M $V
# shellcheck disable=SC2086
$URAID create --level 5 --raid-devices 4 --chunk 64K --assume-clean --consistency-policy resync --name oracle $V \
    >/dev/null 2>&1 || t_fail "create V"
# shellcheck disable=SC2086
build/tests/test_reshape_geom --data-offset 256 $V || t_fail "V: set a small data offset"
# shellcheck disable=SC2086
SZV=$(size_of $V)
# shellcheck disable=SC2086
"$PATTERN" -s 97 -n "$SZV" | $URAID write $V || t_fail "V: write"
# shellcheck disable=SC2086
pos=$(kill_mid "$d" $V --chunk 128K)
x=$(mdadm --examine "$d/m0.img" 2>&1)
# 0x64: RESHAPE_ACTIVE | RESHAPE_BACKWARDS | NEW_OFFSET, as md's super_1_sync writes a delta-0 backwards reshape
if [ -n "$pos" ] && echo "$x" | grep -q "Feature Map : 0x64$"; then
    t_ok "md: uraid killed in a backwards chunk change (Reshape pos'n $pos, the BACKWARDS bit)"
else t_fail "md: uraid killed in a backwards chunk change" "$(echo "$x" | grep -i 'feature\|reshape\|chunk\|offset')"; fi

# ---- r. a grow killed halfway, reverted ------------------------------------------------------
# revert_grow DIR: kills a RAID-5 4 -> 5 grow until its position lies on a stripe of the old geometry
# (mdadm's rule), then reverts it; 0 when reverted, 2 when the grow got past the old size first (uraid
# would still revert it, from the old size, but mdadm refuses a position past it that is not on an
# old stripe, and the guest below runs mdadm's revert on the same members)
revert_grow() {
    dir=$1 tries=0
    # shellcheck disable=SC2086
    kill_mid "$dir" $dir/m0.img $dir/m1.img $dir/m2.img $dir/m3.img --raid-devices 5 --add "$dir/m4.img" >/dev/null
    while [ $tries -lt 12 ]; do
        p=$(reshape_pos "$dir/m0.img")
        [ -n "$p" ] && [ $((p * 2)) -ge $((OLDR / 512)) ] && return 2
        # the state before the revert, for mdadm's own revert in the guest
        rm -rf "$dir.pre"; mkdir -p "$dir.pre"; cp "$dir"/m[0-4].img "$dir.pre/"
        # shellcheck disable=SC2086
        $URAID update --update=revert-reshape $dir/m[0-4].img >"$dir/revert.log" 2>&1 && return 0
        grep -q -e "not on a stripe" -e "does not record the same reshape" "$dir/revert.log" || return 1 # a kill between two members' superblock writes: carry on, as the message says
        # shellcheck disable=SC2086
        kill_mid "$dir" --continue $dir/m[0-4].img >/dev/null
        tries=$((tries + 1))
    done
    return 1
}
d=$t_tmp/r
fresh=0
while :; do
    make_array "$d" 5 4 95 64K 1
    OLDR=$SZ
    revert_grow "$d"; rc=$?
    [ $rc = 2 ] && [ $fresh -lt 3 ] || break
    fresh=$((fresh + 1)); rm -rf "$d"
done
[ $fresh -gt 0 ] && echo "r: the grow got past the old size before a position on an old stripe $fresh time(s); started again"
if [ $rc = 0 ]; then t_ok "r: a RAID-5 4 -> 5 grow killed halfway is reverted"
else t_fail "r: a grow killed halfway is reverted" "$(tail -1 "$d/revert.log")"; fi
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Delta Devices : -1 (5->4)" && t_ok "r: mdadm --examine: a reshape 5 -> 4 in progress" ||
    t_fail "r: mdadm --examine: a reshape 5 -> 4" "$(echo "$x" | grep -i 'reshape\|delta\|devices')"
# the fields of the record mdadm's revert must write the same (events and times aside)
record() { mdadm --examine "$1" 2>&1 | grep -E "Feature Map|Raid Devices|Data Offset|New Offset|Reshape pos|Delta Devices|Layout|Chunk Size|New Layout|New Chunk|Avail Dev Size|Device Role"; }
record "$d/m0.img" >"$t_tmp/uraid-revert.txt"
record "$d/m4.img" >>"$t_tmp/uraid-revert.txt"
mkdir -p "$t_tmp/w"
cp "$d"/m[0-4].img "$t_tmp/w/"
W="$t_tmp/w/m0.img $t_tmp/w/m1.img $t_tmp/w/m2.img $t_tmp/w/m3.img $t_tmp/w/m4.img"
# shellcheck disable=SC2086
out=$($URAID grow --continue $d/m[0-4].img 2>&1)
case "$out" in *"carried on and complete: 4 members"*) t_ok "r: uraid carries the reverted reshape back to 4 members" ;;
    *) t_fail "r: uraid carries the reverted reshape back" "$(echo "$out" | tail -1)" ;; esac
R4="$d/m0.img $d/m1.img $d/m2.img $d/m3.img"
# shellcheck disable=SC2086
[ "$(size_of $R4)" = "$OLDR" ] && t_ok "r: the array has its old size again ($OLDR)" || t_fail "r: old size" "$(size_of $R4)"
# shellcheck disable=SC2086
reads "r: reverted" 95 "$OLDR" $R4
# shellcheck disable=SC2086
clean "r: reverted" $R4

# ---- md: one guest --------------------------------------------------------------------------
d=$t_tmp/z
mkdir -p "$d"
Z="$d/m0.img $d/m1.img $d/m2.img $d/m3.img"
# shellcheck disable=SC2086
truncate -s 16M $Z
KEEPZ=$((14336 * 2 * 1024))
disks() { for f in "$@"; do printf ' --disk %s' "$f"; done; }
# shellcheck disable=SC2086
"$ORACLE" --no-stop --timeout 590 $(disks $X $W $Y $Z $V) -- - >"$t_tmp/md.log" 2>&1 <<GUEST
exec 2>&1
verify() { # MD SEED BYTES: pattern, size, check
    mdpattern -s \$2 -n \$3 -c < /dev/\$1 >/dev/null && echo "\$1 pattern OK"
    [ "\$(blockdev --getsize64 /dev/\$1)" = "\$3" ] && echo "\$1 size OK"
    echo check > /sys/block/\$1/md/sync_action; sleep 1
    while [ "\$(cat /sys/block/\$1/md/sync_action)" != idle ]; do sleep 1; done
    echo "\$1 mismatch_cnt=\$(cat /sys/block/\$1/md/mismatch_cnt)"
}
wait_idle() { i=0; while [ "\$(cat /sys/block/\$1/md/sync_action)" != idle ] && [ \$i -lt 300 ]; do sleep 1; i=\$((i + 1)); done; }
mdadm --assemble /dev/md0 /dev/vd[a-d] && { grep -A3 '^md0' /proc/mdstat | grep -q reshape && echo "md0 reshaping"; }
mdadm --assemble /dev/md1 /dev/vd[e-i] && { grep -A3 '^md1' /proc/mdstat | grep -q reshape && echo "md1 reshaping"; }
wait_idle md0; wait_idle md1
echo "md0 raid_disks=\$(cat /sys/block/md0/md/raid_disks)"; verify md0 93 $KEEP
echo "md1 raid_disks=\$(cat /sys/block/md1/md/raid_disks)"; verify md1 95 $OLDR
mdadm --assemble /dev/md2 /dev/vd[j-n] && echo "md2 raid_disks=\$(cat /sys/block/md2/md/raid_disks) chunk=\$(cat /sys/block/md2/md/chunk_size)" && verify md2 94 $KEEPY
mdadm --assemble /dev/md4 /dev/vd[s-v] && { grep -A3 '^md4' /proc/mdstat | grep -q reshape && echo "md4 reshaping"; }
wait_idle md4
echo "md4 chunk=\$(cat /sys/block/md4/md/chunk_size)"; verify md4 97 $SZV
mdadm --stop /dev/md0 /dev/md1 /dev/md2 /dev/md4
# md's own shrink, cut off: room past the data (--size), then what mdadm asks of the kernel
mdadm --create /dev/md3 --level=5 --chunk=64 --metadata=1.2 --raid-devices=4 --size=14336 --assume-clean --run \
    /dev/vd[o-r] || exit 1
mdpattern -s 96 -n \$(blockdev --getsize64 /dev/md3) > /dev/md3; sync
S=/sys/block/md3/md
echo 200 > \$S/sync_speed_max
mdadm --grow /dev/md3 --array-size=$((KEEPZ / 1024)) || exit 1
echo backwards > \$S/reshape_direction
for v in vdo vdp vdq vdr; do echo \$((\$(cat \$S/dev-\$v/offset) + 256)) > \$S/dev-\$v/new_offset || exit 1; done
echo 3 > \$S/raid_disks && echo reshape > \$S/sync_action || exit 1
sleep 6
grep -A3 '^md3' /proc/mdstat | grep -q reshape && echo "md3 reshaping"
GUEST
# md_said WHAT MD LINE...: the guest printed each LINE (MD's lines) as it is
md_said() {
    _ms_what=$1 _ms_md=$2; shift 2
    for _ms_w in "$@"; do
        grep -q "^$_ms_md $_ms_w\$" "$t_tmp/md.log" && t_ok "md: $_ms_what: $_ms_md $_ms_w" ||
            t_fail "md: $_ms_what: $_ms_md $_ms_w" "$(grep -i "$_ms_md\|raid" "$t_tmp/md.log" | tail -3)"
    done
}
md_said "uraid's killed shrink finished by md" md0 reshaping raid_disks=3 "pattern OK" "size OK" mismatch_cnt=0
md_said "the reverted grow moved back by md" md1 reshaping raid_disks=4 "pattern OK" "size OK" mismatch_cnt=0
md_said "uraid's RAID-6 5 -> 4 shrink" md2 "raid_disks=4 chunk=262144" "pattern OK" "size OK" mismatch_cnt=0
md_said "uraid's backwards chunk change finished by md" md4 reshaping chunk=131072 "pattern OK" "size OK" \
    mismatch_cnt=0
grep -q "^md3 reshaping$" "$t_tmp/md.log" && t_ok "md: md's shrink cut off mid-reshape" ||
    t_fail "md: md's shrink cut off mid-reshape" "$(tail -5 "$t_tmp/md.log")"
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Delta Devices : -1 (4->3)" && t_ok "md: md's record: $(echo "$x" | grep -i "reshape pos" | tr -s ' ')" ||
    t_fail "md: md's record of the shrink" "$(echo "$x" | grep -i 'reshape\|delta\|feature')"
# shellcheck disable=SC2086
out=$($URAID grow --continue $Z 2>&1)
case "$out" in *"carried on and complete: 3 members"*) t_ok "md: uraid --continue finishes md's shrink" ;;
    *) t_fail "md: uraid --continue finishes md's shrink" "$(echo "$out" | tail -1)" ;; esac
reads "md: md's shrink finished by uraid" 96 "$KEEPZ" "$d/m0.img" "$d/m1.img" "$d/m2.img"
clean "md: md's shrink finished by uraid" "$d/m0.img" "$d/m1.img" "$d/m2.img"
x=$(mdadm --examine "$t_tmp/x/m0.img" 2>&1)
if echo "$x" | grep -q "Raid Devices : 3" && ! echo "$x" | grep -q "Reshape"; then t_ok "md: after md's end: 3 devices, no reshape"
else t_fail "md: after md's end: 3 devices, no reshape" "$(echo "$x" | grep -i 'devices\|reshape')"; fi

# ---- mdadm's own revert (a second guest): the same record as uraid's, and uraid carries it on ----
U="$t_tmp/r.pre/m0.img $t_tmp/r.pre/m1.img $t_tmp/r.pre/m2.img $t_tmp/r.pre/m3.img $t_tmp/r.pre/m4.img"
# shellcheck disable=SC2086
"$ORACLE" --timeout 300 $(disks $U) -- - >"$t_tmp/mdr.log" 2>&1 <<'GUEST'
exec 2>&1
mdadm --assemble /dev/md0 --update=revert-reshape --freeze-reshape /dev/vd[a-e] && echo "reverted by mdadm"
mdadm --stop /dev/md0
GUEST
grep -q "^reverted by mdadm$" "$t_tmp/mdr.log" && t_ok "md: mdadm --assemble --update=revert-reshape on the killed grow" ||
    t_fail "md: mdadm's revert" "$(tail -3 "$t_tmp/mdr.log")"
{ record "$t_tmp/r.pre/m0.img"; record "$t_tmp/r.pre/m4.img"; } >"$t_tmp/mdadm-revert.txt"
# md starts the reverted reshape at assembly (--freeze-reshape holds only external metadata): its
# position has moved down by the time the array stops; every other field must be the same
if cmp -s "$t_tmp/uraid-revert.txt" "$t_tmp/mdadm-revert.txt" ||
    diff "$t_tmp/uraid-revert.txt" "$t_tmp/mdadm-revert.txt" | grep '^[<>]' | grep -vq "Reshape pos'n"; then
    t_fail "md: mdadm's revert writes uraid's record" "$(diff "$t_tmp/uraid-revert.txt" "$t_tmp/mdadm-revert.txt" | tr '\n' ' ')"
else t_ok "md: mdadm's revert writes uraid's record ($(grep -c . "$t_tmp/uraid-revert.txt") fields of a member and an added one; md moved the position on)"; fi
pu=$(sed -n "s/.*Reshape pos'n : \([0-9]*\).*/\1/p" "$t_tmp/uraid-revert.txt" | head -1)
pm=$(sed -n "s/.*Reshape pos'n : \([0-9]*\).*/\1/p" "$t_tmp/mdadm-revert.txt" | head -1)
[ -n "$pm" ] && [ "$pm" -le "$pu" ] && t_ok "md: mdadm's revert kept the position ($pu), md carried it backwards to $pm before the stop" ||
    t_fail "md: md carried mdadm's revert backwards" "uraid's $pu, md's $pm"
# shellcheck disable=SC2086
out=$($URAID grow --continue $U 2>&1)
case "$out" in *"carried on and complete: 4 members"*) t_ok "md: uraid carries mdadm's revert on" ;;
    *) t_fail "md: uraid carries mdadm's revert on" "$(echo "$out" | tail -1)" ;; esac
reads "md: mdadm's revert finished by uraid" 95 "$OLDR" "$t_tmp/r.pre/m0.img" "$t_tmp/r.pre/m1.img" \
    "$t_tmp/r.pre/m2.img" "$t_tmp/r.pre/m3.img"
t_finish
