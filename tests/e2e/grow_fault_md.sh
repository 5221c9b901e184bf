#!/bin/sh
# A member failing during uraid's grow, judged by the real md
# (../shared/tools/md-oracle, Linux 6.1's md and mdadm 4.2 in a QEMU guest):
#   a. uraid grew RAID-5 4 -> 5 while m1 failed reading, and RAID-6 5 -> 6
#      while two members failed (the reshape went on degraded): md
#      assembles the members left (degraded, --run), reads every old byte
#      and zeros in the new space; then md recovers onto spares it is given
#      and its check finds mismatch_cnt 0;
#   b. uraid killed in the middle of a RAID-5 4 -> 5 grow after m2 failed:
#      md assembles the members left, carries the degraded reshape on to the
#      end, reads every byte, recovers onto a spare, mismatch_cnt 0;
#   c. md's own grow, a member failed in it (mdadm --fail), cut off (the
#      guest powers off without stopping the array): uraid grow --continue
#      with every member (the failed one's stale superblock passed over)
#      finishes md's degraded reshape; every byte, a rebuild onto a spare,
#      uraid check finds mismatch_cnt 0;
#   d. level changes whose restripe lost a member: uraid's RAID-5 4 ->
#      RAID-6 5 (the new Q member still recovering) while m1 failed, and
#      RAID-6 5 -> RAID-5 4 while m1 failed (the Q member a spare after):
#      md assembles each, reads every byte, recovers, mismatch_cnt 0; and
#      uraid killed in the middle of a 5 -> 6 after m2 failed: md carries
#      the degraded restripe on, with the new member's recovery, to the end.
# Without a working md-oracle this suite fails (a "skipped" line says why).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
if ! oracle_ready; then
    echo "skipped: md-oracle cannot run here, so md's side is not proven (counted as failed)"
    
# ---- d. level changes whose restripe lost a member ------------------------------------------
make_array "$t_tmp/d5" 5 4 65; E5=$t_tmp/d5; OLDE5=$SZ
# shellcheck disable=SC2086
out=$($URAID grow $M --level 6 --raid-devices 5 --add "$E5/m4.img" --member-layer "$E5/m1.img:read-eio=8M+64K" 2>&1) ||
    t_fail "d: uraid RAID-5 4 -> RAID-6 5 while m1 fails" "$out"
make_array "$t_tmp/d6" 6 5 66; E6=$t_tmp/d6; OLDE6=$SZ
# shellcheck disable=SC2086
out=$($URAID grow $M --level 5 --member-layer "$E6/m1.img:read-eio=8M+64K" 2>&1) ||
    t_fail "d: uraid RAID-6 5 -> RAID-5 4 while m1 fails" "$out"
mdadm --examine "$E6/m4.img" 2>&1 | grep -q "Device Role : spare" && t_ok "d: RAID-6 -> 5: the Q member a spare" ||
    t_fail "d: RAID-6 -> 5: the Q member a spare" "$(mdadm --examine "$E6/m4.img" 2>&1 | grep -E 'Role|Level')"
# md0: m0 m2 m3 m4 (vda-vdd) + spare vde; md1: m0 m2 m3 and the old Q member m4, a spare now (vdf-vdi)
# shellcheck disable=SC2046,SC2086
"$ORACLE" --timeout 900 $(disks "$E5/m0.img" "$E5/m2.img" "$E5/m3.img" "$E5/m4.img" "$E5/sp0.img" \
    "$E6/m0.img" "$E6/m2.img" "$E6/m3.img" "$E6/m4.img") -- - >"$t_tmp/d.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble --run /dev/md0 /dev/vda /dev/vdb /dev/vdc /dev/vdd || exit 1
echo "md0 level=\$(cat /sys/block/md0/md/level) raid_disks=\$(cat /sys/block/md0/md/raid_disks) degraded=\$(cat /sys/block/md0/md/degraded)"
verify md0 65 $OLDE5
mdadm /dev/md0 --add /dev/vde; sleep 2; wait_idle md0
echo "md0 after recovery degraded=\$(cat /sys/block/md0/md/degraded)"
check md0
mdadm --assemble --run /dev/md1 /dev/vdf /dev/vdg /dev/vdh || exit 1
echo "md1 level=\$(cat /sys/block/md1/md/level) raid_disks=\$(cat /sys/block/md1/md/raid_disks) degraded=\$(cat /sys/block/md1/md/degraded)"
verify md1 66 $OLDE6
mdadm /dev/md1 --add /dev/vdi; sleep 2; wait_idle md1
echo "md1 after recovery degraded=\$(cat /sys/block/md1/md/degraded)"
check md1
verify md1 66 $OLDE6
GUEST
judge "d: RAID-5 4 -> RAID-6 5, m1 failed in the restripe" "$t_tmp/d.log" "md0 level=raid6 raid_disks=5 degraded=1" \
    "md0 pattern OK" "md0 after recovery degraded=0" "md0 mismatch_cnt=0"
judge "d: RAID-6 5 -> RAID-5 4, m1 failed in the restripe" "$t_tmp/d.log" "md1 level=raid5 raid_disks=4 degraded=1" \
    "md1 pattern OK" "md1 after recovery degraded=0" "md1 mismatch_cnt=0"

make_array "$t_tmp/dk" 5 4 67; DK=$t_tmp/dk; OLDK=$SZ
lay="--member-layer $DK/m2.img:read-eio=4M+64K"
for f in $M "$DK/m4.img"; do lay="$lay --member-layer $f:throttle=6M"; done
# shellcheck disable=SC2086
$URAID grow $M --level 6 --raid-devices 5 --add "$DK/m4.img" $lay >"$t_tmp/dk.out" 2>&1 &
gp=$!
n=0; while ! grep -q "goes on degraded" "$t_tmp/dk.out" && [ $n -lt 400 ]; do sleep 0.05; n=$((n + 1)); done
sleep 0.5
kill -9 $gp 2>/dev/null; wait $gp 2>/dev/null
x=$(mdadm --examine "$DK/m0.img" 2>&1)
echo "$x" | grep -q "Reshape pos'n" && echo "$x" | grep -q "Array State : AA.AA " &&
    t_ok "d: uraid killed mid 5 -> 6 restripe after m2 failed (Reshape pos'n, slot 2 missing)" ||
    t_fail "d: uraid killed mid 5 -> 6 restripe after m2 failed" "$(echo "$x" | grep -E "Reshape|Array State|Level"; cat "$t_tmp/dk.out")"
# shellcheck disable=SC2046,SC2086
"$ORACLE" --timeout 900 $(disks "$DK/m0.img" "$DK/m1.img" "$DK/m3.img" "$DK/m4.img" "$DK/sp0.img") -- - \
    >"$t_tmp/dk.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble --run /dev/md0 /dev/vda /dev/vdb /dev/vdc /dev/vdd || exit 1
p=\$(cat /sys/block/md0/md/reshape_position); [ "\$p" != none ] && echo "md0 assembled mid-reshape"
sleep 2; wait_idle md0
echo "md0 reshaped level=\$(cat /sys/block/md0/md/level) reshape_position=\$(cat /sys/block/md0/md/reshape_position) degraded=\$(cat /sys/block/md0/md/degraded)"
verify md0 67 $OLDK
mdadm /dev/md0 --add /dev/vde; sleep 2; wait_idle md0
echo "md0 after recovery degraded=\$(cat /sys/block/md0/md/degraded)"
check md0
GUEST
judge "d: md carries on uraid's degraded 5 -> 6 restripe" "$t_tmp/dk.log" "md0 assembled mid-reshape" \
    "md0 reshaped level=raid6 reshape_position=none degraded=1" "md0 pattern OK" "md0 after recovery degraded=0" \
    "md0 mismatch_cnt=0"
t_finish
    exit 1
fi

size_of() { kib=$($URAID detail "$@" 2>/dev/null | awk '/Array Size/ {print $4; exit}'); echo $((${kib:-0} * 1024)); }
# make DIR LEVEL N SEED: N members of 16 MiB with pattern SEED, one more (new) and two spares; M and SZ (bytes)
make_array() {
    dir=$1 lvl=$2 n=$3 s=$4
    mkdir -p "$dir"
    M="" i=0
    while [ $i -lt "$n" ]; do truncate -s 16M "$dir/m$i.img"; M="$M $dir/m$i.img"; i=$((i + 1)); done
    truncate -s 16M "$dir/m$n.img" "$dir/sp0.img" "$dir/sp1.img"
    # shellcheck disable=SC2086
    $URAID create --level "$lvl" --raid-devices "$n" --chunk 64K --assume-clean --consistency-policy resync \
        --name oracle $M >/dev/null 2>&1 || t_fail "create RAID-$lvl in $dir"
    # shellcheck disable=SC2086
    SZ=$(size_of $M)
    # shellcheck disable=SC2086
    "$PATTERN" -s "$s" -n "$SZ" | $URAID write $M || t_fail "write pattern $s in $dir"
}
disks() { for f in "$@"; do printf ' --disk %s' "$f"; done; }
GUEST_VERIFY='wait_idle() { i=0; while [ "$(cat /sys/block/$1/md/sync_action)" != idle ] && [ $i -lt 400 ]; do sleep 1; i=$((i + 1)); done; }
verify() { # MD SEED OLD (bytes): pattern, zeros after
    mdpattern -s $2 -n $3 -c < /dev/$1 >/dev/null && echo "$1 pattern OK"
    z=$(dd if=/dev/$1 bs=4096 skip=$(($3 / 4096)) 2>/dev/null | tr -d "\000" | wc -c)
    [ "$z" = 0 ] && echo "$1 zeros OK"
}
check() { echo check > /sys/block/$1/md/sync_action; sleep 1; wait_idle $1; echo "$1 mismatch_cnt=$(cat /sys/block/$1/md/mismatch_cnt)"; }'
judge() { # NAME LOG WORDS...
    name=$1 log=$2; shift 2
    for w in "$@"; do
        grep -q "^$w\$" "$log" && t_ok "$name: md: $w" || t_fail "$name: md: $w" "$(tail -4 "$log")"
    done
}

# ---- a. md reads uraid's degraded results ----------------------------------------------------
make_array "$t_tmp/a5" 5 4 61; D5=$t_tmp/a5; OLD5=$SZ
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$D5/m4.img" --member-layer "$D5/m1.img:read-eio=8M+64K" >/dev/null 2>&1 ||
    t_fail "a: uraid grows RAID-5 4 -> 5 while m1 fails"
make_array "$t_tmp/a6" 6 5 62; D6=$t_tmp/a6; OLD6=$SZ
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 6 --add "$D6/m5.img" --member-layer "$D6/m0.img:read-eio=6M+64K" \
    --member-layer "$D6/m3.img:write-eio=10M+64K" >/dev/null 2>&1 || t_fail "a: uraid grows RAID-6 5 -> 6 while two fail"
# md0: m0 m2 m3 m4 (vda-vdd) + spare vde; md1: m1 m2 m4 m5 (vdf-vdi) + spares vdj vdk
# shellcheck disable=SC2046,SC2086
"$ORACLE" --timeout 900 $(disks "$D5/m0.img" "$D5/m2.img" "$D5/m3.img" "$D5/m4.img" "$D5/sp0.img" \
    "$D6/m1.img" "$D6/m2.img" "$D6/m4.img" "$D6/m5.img" "$D6/sp0.img" "$D6/sp1.img") -- - >"$t_tmp/a.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble --run /dev/md0 /dev/vda /dev/vdb /dev/vdc /dev/vdd || exit 1
mdadm --assemble --run /dev/md1 /dev/vdf /dev/vdg /dev/vdh /dev/vdi || exit 1
echo "md0 raid_disks=\$(cat /sys/block/md0/md/raid_disks) degraded=\$(cat /sys/block/md0/md/degraded)"
echo "md1 raid_disks=\$(cat /sys/block/md1/md/raid_disks) degraded=\$(cat /sys/block/md1/md/degraded)"
verify md0 61 $OLD5
verify md1 62 $OLD6
mdadm /dev/md0 --add /dev/vde; mdadm /dev/md1 --add /dev/vdj /dev/vdk
sleep 2; wait_idle md0; wait_idle md1
echo "md0 after recovery degraded=\$(cat /sys/block/md0/md/degraded)"
echo "md1 after recovery degraded=\$(cat /sys/block/md1/md/degraded)"
check md0; check md1
verify md0 61 $OLD5
GUEST
judge "a: RAID-5 4 -> 5, m1 failed during uraid's grow" "$t_tmp/a.log" "md0 raid_disks=5 degraded=1" "md0 pattern OK" \
    "md0 zeros OK" "md0 after recovery degraded=0" "md0 mismatch_cnt=0"
judge "a: RAID-6 5 -> 6, two failed during uraid's grow" "$t_tmp/a.log" "md1 raid_disks=6 degraded=2" "md1 pattern OK" \
    "md1 zeros OK" "md1 after recovery degraded=0" "md1 mismatch_cnt=0"

# ---- b. uraid killed after the failure, md carries the degraded reshape on -------------------
make_array "$t_tmp/b" 5 4 63; DB=$t_tmp/b; OLDB=$SZ
lay="--member-layer $DB/m2.img:read-eio=4M+64K"
for f in $M "$DB/m4.img"; do lay="$lay --member-layer $f:throttle=6M"; done
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$DB/m4.img" $lay >"$t_tmp/b.out" 2>&1 &
gp=$!
n=0; while ! grep -q "goes on degraded" "$t_tmp/b.out" && [ $n -lt 400 ]; do sleep 0.05; n=$((n + 1)); done
sleep 0.5
kill -9 $gp 2>/dev/null; wait $gp 2>/dev/null
x=$(mdadm --examine "$DB/m0.img" 2>&1)
echo "$x" | grep -q "Reshape pos'n" && echo "$x" | grep -q "Array State : AA.AA " &&
    t_ok "b: uraid killed mid-reshape after m2 failed (Reshape pos'n, slot 2 missing)" ||
    t_fail "b: uraid killed mid-reshape after m2 failed" "$(echo "$x" | grep -E "Reshape|Array State")"
# shellcheck disable=SC2046,SC2086
"$ORACLE" --timeout 900 $(disks "$DB/m0.img" "$DB/m1.img" "$DB/m3.img" "$DB/m4.img" "$DB/sp0.img") -- - \
    >"$t_tmp/b.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble --run /dev/md0 /dev/vda /dev/vdb /dev/vdc /dev/vdd || exit 1
p=\$(cat /sys/block/md0/md/reshape_position); [ "\$p" != none ] && echo "md0 assembled mid-reshape"
sleep 2; wait_idle md0
echo "md0 reshaped raid_disks=\$(cat /sys/block/md0/md/raid_disks) reshape_position=\$(cat /sys/block/md0/md/reshape_position)"
verify md0 63 $OLDB
mdadm /dev/md0 --add /dev/vde; sleep 2; wait_idle md0
echo "md0 after recovery degraded=\$(cat /sys/block/md0/md/degraded)"
check md0
GUEST
judge "b: md carries on uraid's degraded reshape" "$t_tmp/b.log" "md0 assembled mid-reshape" "md0 reshaped raid_disks=5 reshape_position=none" \
    "md0 pattern OK" "md0 zeros OK" "md0 after recovery degraded=0" "md0 mismatch_cnt=0"

# ---- c. md's grow with a member failed in it, cut off; uraid carries it on -------------------
make_array "$t_tmp/c" 5 4 64; DC=$t_tmp/c; OLDC=$SZ
C="$M $DC/m4.img"
# shellcheck disable=SC2046,SC2086
"$ORACLE" --no-stop --timeout 600 $(disks $C) -- - >"$t_tmp/c.log" 2>&1 <<'GUEST'
exec 2>&1
mdadm --assemble /dev/md0 /dev/vd[a-d] || exit 1
echo 500 > /sys/block/md0/md/sync_speed_max
mdadm /dev/md0 --add /dev/vde || exit 1
mdadm --grow /dev/md0 --raid-devices=5 || exit 1
sleep 3
mdadm /dev/md0 --fail /dev/vdb && echo "vdb failed"
sleep 4
grep -A2 md0 /proc/mdstat
GUEST
x=$(mdadm --examine "$DC/m0.img" 2>&1)
echo "$x" | grep -q "Reshape pos'n" && echo "$x" | grep -q "Array State : A.AAA " &&
    t_ok "c: md's grow with m1 failed, cut off mid-reshape (Reshape pos'n, slot 1 missing)" ||
    t_fail "c: md's grow with m1 failed, cut off mid-reshape" "$(echo "$x" | grep -E "Reshape|Array State"; tail -3 "$t_tmp/c.log")"
# shellcheck disable=SC2086
out=$($URAID grow --continue $C 2>&1)
case "$out" in *"carried on and complete: 5 members"*) t_ok "c: uraid grow --continue finishes md's degraded reshape" ;;
    *) t_fail "c: uraid grow --continue finishes md's degraded reshape" "$out" ;; esac
CL="$DC/m0.img $DC/m2.img $DC/m3.img $DC/m4.img"
# shellcheck disable=SC2086
kib=$($URAID detail $CL 2>&1 | awk '/Array Size/ {print $4; exit}')
# shellcheck disable=SC2086
got=$($URAID cat $CL | sha256sum | cut -d' ' -f1)
want=$({ "$PATTERN" -s 64 -n "$OLDC"; head -c $((${kib:-0} * 1024 - OLDC)) /dev/zero; } | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] && t_ok "c: every byte of md's degraded reshape, finished by uraid" ||
    t_fail "c: every byte of md's degraded reshape, finished by uraid" "$got"
# shellcheck disable=SC2086
out=$($URAID rebuild $CL --spare "$DC/sp0.img" 2>&1) || t_fail "c: rebuild onto a spare" "$out"
# shellcheck disable=SC2086
out=$($URAID check $CL "$DC/sp0.img" 2>&1)
case "$out" in *"mismatch_cnt 0"*) t_ok "c: rebuilt onto a spare, uraid check finds mismatch_cnt 0" ;;
    *) t_fail "c: rebuilt onto a spare, uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -1)" ;; esac

# ---- d. level changes whose restripe lost a member ------------------------------------------
make_array "$t_tmp/d5" 5 4 65; E5=$t_tmp/d5; OLDE5=$SZ
# shellcheck disable=SC2086
out=$($URAID grow $M --level 6 --raid-devices 5 --add "$E5/m4.img" --member-layer "$E5/m1.img:read-eio=8M+64K" 2>&1) ||
    t_fail "d: uraid RAID-5 4 -> RAID-6 5 while m1 fails" "$out"
make_array "$t_tmp/d6" 6 5 66; E6=$t_tmp/d6; OLDE6=$SZ
# shellcheck disable=SC2086
out=$($URAID grow $M --level 5 --member-layer "$E6/m1.img:read-eio=8M+64K" 2>&1) ||
    t_fail "d: uraid RAID-6 5 -> RAID-5 4 while m1 fails" "$out"
mdadm --examine "$E6/m4.img" 2>&1 | grep -q "Device Role : spare" && t_ok "d: RAID-6 -> 5: the Q member a spare" ||
    t_fail "d: RAID-6 -> 5: the Q member a spare" "$(mdadm --examine "$E6/m4.img" 2>&1 | grep -E 'Role|Level')"
# md0: m0 m2 m3 m4 (vda-vdd) + spare vde; md1: m0 m2 m3 and the old Q member m4, a spare now (vdf-vdi)
# shellcheck disable=SC2046,SC2086
"$ORACLE" --timeout 900 $(disks "$E5/m0.img" "$E5/m2.img" "$E5/m3.img" "$E5/m4.img" "$E5/sp0.img" \
    "$E6/m0.img" "$E6/m2.img" "$E6/m3.img" "$E6/m4.img") -- - >"$t_tmp/d.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble --run /dev/md0 /dev/vda /dev/vdb /dev/vdc /dev/vdd || exit 1
echo "md0 level=\$(cat /sys/block/md0/md/level) raid_disks=\$(cat /sys/block/md0/md/raid_disks) degraded=\$(cat /sys/block/md0/md/degraded)"
verify md0 65 $OLDE5
mdadm /dev/md0 --add /dev/vde; sleep 2; wait_idle md0
echo "md0 after recovery degraded=\$(cat /sys/block/md0/md/degraded)"
check md0
mdadm --assemble --run /dev/md1 /dev/vdf /dev/vdg /dev/vdh || exit 1
echo "md1 level=\$(cat /sys/block/md1/md/level) raid_disks=\$(cat /sys/block/md1/md/raid_disks) degraded=\$(cat /sys/block/md1/md/degraded)"
verify md1 66 $OLDE6
mdadm /dev/md1 --add /dev/vdi; sleep 2; wait_idle md1
echo "md1 after recovery degraded=\$(cat /sys/block/md1/md/degraded)"
check md1
verify md1 66 $OLDE6
GUEST
judge "d: RAID-5 4 -> RAID-6 5, m1 failed in the restripe" "$t_tmp/d.log" "md0 level=raid6 raid_disks=5 degraded=1" \
    "md0 pattern OK" "md0 after recovery degraded=0" "md0 mismatch_cnt=0"
judge "d: RAID-6 5 -> RAID-5 4, m1 failed in the restripe" "$t_tmp/d.log" "md1 level=raid5 raid_disks=4 degraded=1" \
    "md1 pattern OK" "md1 after recovery degraded=0" "md1 mismatch_cnt=0"

make_array "$t_tmp/dk" 5 4 67; DK=$t_tmp/dk; OLDK=$SZ
lay="--member-layer $DK/m2.img:read-eio=4M+64K"
for f in $M "$DK/m4.img"; do lay="$lay --member-layer $f:throttle=6M"; done
# shellcheck disable=SC2086
$URAID grow $M --level 6 --raid-devices 5 --add "$DK/m4.img" $lay >"$t_tmp/dk.out" 2>&1 &
gp=$!
n=0; while ! grep -q "goes on degraded" "$t_tmp/dk.out" && [ $n -lt 400 ]; do sleep 0.05; n=$((n + 1)); done
sleep 0.5
kill -9 $gp 2>/dev/null; wait $gp 2>/dev/null
x=$(mdadm --examine "$DK/m0.img" 2>&1)
echo "$x" | grep -q "Reshape pos'n" && echo "$x" | grep -q "Array State : AA.AA " &&
    t_ok "d: uraid killed mid 5 -> 6 restripe after m2 failed (Reshape pos'n, slot 2 missing)" ||
    t_fail "d: uraid killed mid 5 -> 6 restripe after m2 failed" "$(echo "$x" | grep -E "Reshape|Array State|Level"; cat "$t_tmp/dk.out")"
# shellcheck disable=SC2046,SC2086
"$ORACLE" --timeout 900 $(disks "$DK/m0.img" "$DK/m1.img" "$DK/m3.img" "$DK/m4.img" "$DK/sp0.img") -- - \
    >"$t_tmp/dk.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble --run /dev/md0 /dev/vda /dev/vdb /dev/vdc /dev/vdd || exit 1
p=\$(cat /sys/block/md0/md/reshape_position); [ "\$p" != none ] && echo "md0 assembled mid-reshape"
sleep 2; wait_idle md0
echo "md0 reshaped level=\$(cat /sys/block/md0/md/level) reshape_position=\$(cat /sys/block/md0/md/reshape_position) degraded=\$(cat /sys/block/md0/md/degraded)"
verify md0 67 $OLDK
mdadm /dev/md0 --add /dev/vde; sleep 2; wait_idle md0
echo "md0 after recovery degraded=\$(cat /sys/block/md0/md/degraded)"
check md0
GUEST
judge "d: md carries on uraid's degraded 5 -> 6 restripe" "$t_tmp/dk.log" "md0 assembled mid-reshape" \
    "md0 reshaped level=raid6 reshape_position=none degraded=1" "md0 pattern OK" "md0 after recovery degraded=0" \
    "md0 mismatch_cnt=0"
t_finish
