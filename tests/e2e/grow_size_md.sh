#!/bin/sh
# grow --size on metadata 0.90 and 1.0 (superblock at the member's end) and
# the real md (../shared/tools/md-oracle: md and mdadm in a QEMU guest):
#   a. uraid grows RAID-5 of 4 and RAID-1 of 2, each as 1.0 and 0.90, whose
#      member files grew in place (16 MiB of random bytes appended, as a
#      dd onto a bigger disk leaves them: the superblock is no longer where
#      md or uraid look, and `uraid detail` says to run grow --size); uraid
#      finds each superblock below the end and writes it where md looks
#      (md's super_1/super_90_rdev_size_change), then the new size and the
#      resync; md assembles all four, sees uraid's size, reads the pattern
#      over the old bytes and its check finds mismatch_cnt 0; the host's
#      mdadm --examine shows the new Super Offset (1.0) and size;
#   b. refusals write nothing (every member's sha256): a 1.0 array with a
#      write-intent bitmap (md cannot move it), a size larger than the
#      members hold;
#   c. md grows its own 1.0 and 0.90 RAID-5 and a 1.0 RAID-1 (created with
#      --size smaller than the disks, then mdadm --grow --size max): uraid
#      opens them at md's size and reads every byte as md does (sha256 of
#      the whole array), and uraid check finds mismatch_cnt 0; md's 1.0
#      superblock lands where uraid puts it (Super Offset, Avail Dev Size);
#   d. uraid killed (-9) in the new region's resync of a 1.0 RAID-5: md
#      assembles the members (superblocks at the new place, the new size,
#      resync_offset the old size), finishes the resync, reads the pattern
#      and its check finds mismatch_cnt 0;
#   e. every member of a 1.0 RAID-1 and a 0.90 RAID-5 replaced by a bigger
#      one (uraid replace), then the room used while served (grow
#      --control --size max): md assembles both at the new size, reads the
#      pattern and its check finds mismatch_cnt 0.
# Without a working md-oracle this suite fails (a "skipped" line says why).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
command -v mdadm >/dev/null 2>&1 || { t_fail "mdadm installed (run scripts/deps.sh)"; t_finish; exit 1; }
if ! oracle_ready; then
    echo "skipped: md-oracle cannot run here, so md's side is not proven (counted as failed)"
    t_finish
    exit 1
fi

sums() { for f in $M; do sha256sum "$f"; done | sha256sum | cut -d' ' -f1; }
size_of() { kib=$($URAID detail "$@" 2>/dev/null | awk '/Array Size/ {print $4; exit}'); echo $((${kib:-0} * 1024)); }
disks() { for f in "$@"; do printf ' --disk %s' "$f"; done; }
# The guest's verdict lines for an array: "MD size=N", "MD pattern OK", "MD mismatch_cnt=N", "MD stopped"
GUEST_VERIFY='wait_idle() { i=0; while [ "$(cat /sys/block/$1/md/sync_action)" != idle ] && [ $i -lt 300 ]; do sleep 1; i=$((i + 1)); done; }
verify() { # MD SEED OLD
    sleep 1; wait_idle $1
    echo "$1 size=$(blockdev --getsize64 /dev/$1)"
    mdpattern -s $2 -n $3 -c < /dev/$1 >/dev/null && echo "$1 pattern OK"
    echo check > /sys/block/$1/md/sync_action; sleep 1; wait_idle $1
    echo "$1 mismatch_cnt=$(cat /sys/block/$1/md/mismatch_cnt)"
    mdadm --stop /dev/$1 >/dev/null 2>&1 && echo "$1 stopped"
}'

# md_judge LOG LABEL MD LINE...: each "MD LINE" is a whole line of the guest's LOG
md_judge() {
    _log=$1 _label=$2 _md=$3; shift 3
    for _w in "$@"; do
        grep -q "^$_md $_w\$" "$_log" && t_ok "$_label: $_md $_w" ||
            t_fail "$_label: $_md $_w" "$(grep "^$_md" "$_log" | tr '\n' ' ') $(tail -n 3 "$_log")"
    done
}

# make DIR META LEVEL N SEED [POLICY [GROW]]: N members of 16 MiB, pattern SEED written, then GROW
# (16M; 0: none) random bytes appended to each; sets M, SZ (bytes before)
make_array() {
    dir=$1 meta=$2 lvl=$3 n=$4 s=$5 policy=${6:-resync} grow=${7:-16M}
    rm -rf "$dir"; mkdir -p "$dir"
    M="" i=0
    while [ $i -lt "$n" ]; do truncate -s 16M "$dir/m$i.img"; M="$M $dir/m$i.img"; i=$((i + 1)); done
    # shellcheck disable=SC2086
    $URAID create --metadata "$meta" --level "$lvl" --raid-devices "$n" --chunk 64K --assume-clean \
        --consistency-policy "$policy" $M >/dev/null 2>&1 || t_fail "create $meta RAID-$lvl in $dir"
    # shellcheck disable=SC2086
    SZ=$(size_of $M)
    # shellcheck disable=SC2086
    "$PATTERN" -s "$s" -n "$SZ" | $URAID write $M || t_fail "write pattern $s in $dir"
    for f in $M; do head -c "$grow" /dev/urandom >>"$f"; done
}

# ---- a. uraid grows; md assembles -----------------------------------------------------------
ALL="" ai=0
for c in "1.0 5 4 11" "0.90 5 4 12" "1.0 1 2 13" "0.90 1 2 14"; do
    set -- $c
    name="$1 RAID-$2"
    make_array "$t_tmp/a$ai" "$1" "$2" "$3" "$4"
    # shellcheck disable=SC2086
    out=$($URAID detail $M 2>&1 | tail -n 1)
    case "$out" in *"uraid grow MEMBERS... --size max"*) t_ok "$name: a member that grew: uraid detail says what to run" ;;
        *) t_fail "$name: a member that grew: uraid detail says what to run" "$out" ;; esac
    # shellcheck disable=SC2086
    out=$($URAID grow $M --size max 2>&1)
    case "$out" in *"the new region is in sync"*) t_ok "$name: uraid grow --size max: $out" ;;
        *) t_fail "$name: uraid grow --size max" "$out" ;; esac
    # shellcheck disable=SC2086
    new=$(size_of $M)
    # shellcheck disable=SC2086
    got=$($URAID cat $M | head -c "$SZ" | sha256sum | cut -d' ' -f1)
    [ "$new" -gt "$SZ" ] && [ "$got" = "$("$PATTERN" -s "$4" -n "$SZ" | sha256sum | cut -d' ' -f1)" ] &&
        t_ok "$name: $new bytes (was $SZ), the old bytes as written" || t_fail "$name: grown, the old bytes" "$new $got"
    x=$(mdadm --examine "${M##* }" 2>&1)
    if [ "$1" = 1.0 ]; then
        # md's place on a 32 MiB member: (65536 - 16) & ~7; room: less md's bitmap space (8) and the log (8)
        echo "$x" | grep -q "Super Offset : 65520 sectors" && echo "$x" | grep -q "Avail Dev Size : 65504 sectors" &&
            t_ok "$name: mdadm --examine: Super Offset 65520, Avail Dev Size 65504 (md's rdev_size_change)" ||
            t_fail "$name: mdadm --examine: the superblock at md's new place" "$(echo "$x" | grep -i 'offset\|size')"
    else
        k=$(( $2 == 1 ? 1 : $3 - 1 ))
        used=$(echo "$x" | sed -n 's/^ *Used Dev Size : \([0-9]*\).*/\1/p')
        [ "$used" = $((new / k / 1024)) ] && t_ok "$name: mdadm --examine reads the 0.90 superblock at the new end: Used Dev Size $used KiB" ||
            t_fail "$name: mdadm --examine reads the 0.90 superblock at the new end" "Used $used, want $((new / k / 1024))"
    fi
    eval "SZ$ai=$SZ NEW$ai=$new SEED$ai=$4"
    ALL="$ALL $M"
    ai=$((ai + 1))
done
# shellcheck disable=SC2086
"$ORACLE" --timeout 580 $(disks $ALL) -- - >"$t_tmp/a.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble /dev/md0 /dev/vd[a-d] && verify md0 $SEED0 $SZ0
mdadm --assemble /dev/md1 /dev/vd[e-h] && verify md1 $SEED1 $SZ1
mdadm --assemble /dev/md2 /dev/vd[ij] && verify md2 $SEED2 $SZ2
mdadm --assemble /dev/md3 /dev/vd[kl] && verify md3 $SEED3 $SZ3
GUEST
i=0
for name in "1.0 RAID-5" "0.90 RAID-5" "1.0 RAID-1" "0.90 RAID-1"; do
    eval "new=\$NEW$i"
    md_judge "$t_tmp/a.log" "$name: md assembles uraid's grown array" "md$i" "size=$new" "pattern OK" "mismatch_cnt=0" stopped
    i=$((i + 1))
done

# ---- b. refusals write nothing ----------------------------------------------------------------
make_array "$t_tmp/b1" 1.0 5 4 21 bitmap
# shellcheck disable=SC2086
t_refused "1.0 with a write-intent bitmap: refused, nothing written" "cannot move a bitmap" $URAID grow $M --size max
make_array "$t_tmp/b2" 1.0 5 4 22
# shellcheck disable=SC2086
t_refused "1.0: a size larger than the members hold: refused, nothing written" "more than the smallest member" \
    $URAID grow $M --size 40M
make_array "$t_tmp/b3" 0.90 5 4 23
# shellcheck disable=SC2086
t_refused "0.90: a smaller size: refused, nothing written" "smaller than the array" $URAID grow $M --size 8M

# ---- c. md grows its own; uraid reads it --------------------------------------------------------
mkdir -p "$t_tmp/c"
C=""
for j in 0 1 2 3 4 5 6 7 8 9; do truncate -s 32M "$t_tmp/c/d$j.img"; C="$C $t_tmp/c/d$j.img"; done
# shellcheck disable=SC2086
"$ORACLE" --timeout 580 $(disks $C) -- - >"$t_tmp/c.log" 2>&1 <<'GUEST'
exec 2>&1
wait_idle() { i=0; while [ "$(cat /sys/block/$1/md/sync_action)" != idle ] && [ $i -lt 300 ]; do sleep 1; i=$((i + 1)); done; }
mdgrow() { # MD SEED
    wait_idle $1
    old=$(blockdev --getsize64 /dev/$1)
    mdpattern -s $2 -n $old > /dev/$1
    sync
    mdadm --grow /dev/$1 --size max >/dev/null 2>&1 && echo "$1 grown"
    sleep 1; wait_idle $1
    echo "$1 old=$old size=$(blockdev --getsize64 /dev/$1)"
    echo "$1 sha=$(sha256sum < /dev/$1 | cut -d' ' -f1)"
    mdadm --stop /dev/$1 >/dev/null 2>&1 && echo "$1 stopped"
}
mdadm --create /dev/md0 --run --metadata=1.0 --level=5 --raid-devices=4 --chunk=64 --size=15360 --bitmap=none /dev/vd[a-d] >/dev/null 2>&1 && mdgrow md0 31
mdadm --create /dev/md1 --run --metadata=0.90 --level=5 --raid-devices=4 --chunk=64 --size=15360 --bitmap=none /dev/vd[e-h] >/dev/null 2>&1 && mdgrow md1 32
mdadm --create /dev/md2 --run --metadata=1.0 --level=1 --raid-devices=2 --size=15360 --bitmap=none /dev/vd[ij] >/dev/null 2>&1 && mdgrow md2 33
GUEST
set -- "$t_tmp/c/d0.img $t_tmp/c/d1.img $t_tmp/c/d2.img $t_tmp/c/d3.img" \
    "$t_tmp/c/d4.img $t_tmp/c/d5.img $t_tmp/c/d6.img $t_tmp/c/d7.img" "$t_tmp/c/d8.img $t_tmp/c/d9.img"
i=0
for name in "1.0 RAID-5" "0.90 RAID-5" "1.0 RAID-1"; do
    M=$1; shift
    line=$(grep "^md$i old=" "$t_tmp/c.log")
    old=$(echo "$line" | sed -n 's/.*old=\([0-9]*\).*/\1/p') mdsize=$(echo "$line" | sed -n 's/.*size=\([0-9]*\).*/\1/p')
    mdsha=$(sed -n "s/^md$i sha=//p" "$t_tmp/c.log")
    if ! grep -q "^md$i grown$" "$t_tmp/c.log" || ! grep -q "^md$i stopped$" "$t_tmp/c.log" || [ -z "$mdsize" ] ||
        [ "$mdsize" -le "${old:-0}" ]; then
        t_fail "$name: md grows its own array with mdadm --grow --size max" "$(grep "^md$i" "$t_tmp/c.log" | tr '\n' ' ') $(tail -n 3 "$t_tmp/c.log")"
        i=$((i + 1)); continue
    fi
    t_ok "$name: md grows its own array: $old -> $mdsize bytes"
    case "$name" in 1.0*)
        x=$(mdadm --examine "${M%% *}" 2>&1)
        echo "$x" | grep -q "Super Offset : 65520 sectors" && echo "$x" | grep -q "Avail Dev Size : 65504 sectors" &&
            t_ok "$name: md's own grow puts the superblock where uraid's does: Super Offset 65520, Avail Dev Size 65504" ||
            t_fail "$name: md's own grow: Super Offset 65520, Avail Dev Size 65504" "$(echo "$x" | grep -i 'offset\|avail')" ;;
    esac
    # shellcheck disable=SC2086
    [ "$(size_of $M)" = "$mdsize" ] && t_ok "$name: uraid opens md's grown array at md's size" ||
        t_fail "$name: uraid opens md's grown array at md's size" "$(size_of $M), md $mdsize"
    # shellcheck disable=SC2086
    got=$($URAID cat $M | sha256sum | cut -d' ' -f1)
    [ "$got" = "$mdsha" ] && t_ok "$name: uraid reads every byte of md's grown array as md does" ||
        t_fail "$name: uraid reads md's grown array byte for byte" "sha $got, md $mdsha"
    # shellcheck disable=SC2086
    out=$($URAID check $M 2>&1 | grep -o "mismatch_cnt [0-9]*" | tail -n 1)
    [ "$out" = "mismatch_cnt 0" ] && t_ok "$name: uraid check of md's grown array: mismatch_cnt 0" ||
        t_fail "$name: uraid check of md's grown array" "$out"
    i=$((i + 1))
done

# ---- d. uraid killed in the new region's resync: md assembles and finishes it ------------------
make_array "$t_tmp/k" 1.0 5 4 41 resync 112M
# shellcheck disable=SC2086
$URAID grow $M --size max >/dev/null 2>&1 &
pid=$!
n=0
while [ $n -lt 400 ]; do
    mdadm --examine "$t_tmp/k/m0.img" 2>/dev/null | grep -q "State : active" && break
    sleep 0.01; n=$((n + 1))
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
x=$(mdadm --examine "$t_tmp/k/m0.img" 2>&1)
if echo "$x" | grep -q "State : active" && echo "$x" | grep -q "Super Offset : 262128 sectors"; then
    t_ok "d: uraid killed in the new region's resync: the new place and size recorded, State active"
else
    t_fail "d: uraid killed in the new region's resync" "$(echo "$x" | grep -i 'state :\|offset\|array size')"
fi
# shellcheck disable=SC2086
"$ORACLE" --timeout 580 $(disks $M) -- - >"$t_tmp/d.log" 2>&1 <<GUEST
exec 2>&1
wait_idle() { i=0; while [ "\$(cat /sys/block/\$1/md/sync_action)" != idle ] && [ \$i -lt 300 ]; do sleep 1; i=\$((i + 1)); done; }
mdadm --assemble /dev/md0 /dev/vd[a-d] && {
    sleep 1; wait_idle md0
    echo "md0 size=\$(blockdev --getsize64 /dev/md0)"
    mdpattern -s 41 -n $SZ -c < /dev/md0 >/dev/null && echo "md0 pattern OK"
    echo check > /sys/block/md0/md/sync_action; sleep 1; wait_idle md0
    echo "md0 mismatch_cnt=\$(cat /sys/block/md0/md/mismatch_cnt)"
    mdadm --stop /dev/md0 >/dev/null 2>&1 && echo "md0 stopped"
}
GUEST
# 128 MiB members: md's room (262128 - 8 - 8 = 262112) in whole 128-sector chunks (262016), 3 data members
for w in "md0 size=$((262016 * 512 * 3))" "md0 pattern OK" "md0 mismatch_cnt=0" "md0 stopped"; do
    grep -q "^$w\$" "$t_tmp/d.log" && t_ok "d: md assembles the killed grow, resyncs from the checkpoint: $w" ||
        t_fail "d: md after the killed grow: $w" "$(grep '^md0' "$t_tmp/d.log" | tr '\n' ' ') $(tail -n 3 "$t_tmp/d.log")"
done
# ---- e. members replaced by bigger ones, the room used while served ------------------------------
# The issue's own story: every member of a 1.0 RAID-1 and a 0.90 RAID-5 replaced by a bigger disk
# (uraid replace: each new one's superblock at its own end, md's place), then `uraid grow --control
# PATH --size max` on the served array; md assembles the result
E=""
ei=0
for c in "1.0 1 2 51" "0.90 5 3 52"; do
    set -- $c
    d=$t_tmp/e$ei
    make_array "$d" "$1" "$2" "$3" "$4" resync 0
    i=0
    while [ $i -lt "$3" ]; do
        truncate -s 32M "$d/b$i.img"
        # shellcheck disable=SC2086
        out=$($URAID replace $M --old "$d/m$i.img" --with "$d/b$i.img" 2>&1) || t_fail "e: $1 RAID-$2: replace member $i" "$out"
        M=$(echo "$M" | sed "s|$d/m$i.img|$d/b$i.img|")
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    t_serve "$d" $M
    out=$($URAID grow --control "$d/ctl.sock" --size max 2>&1)
    case "$out" in *"resync started"*|*"in sync"*) t_ok "e: $1 RAID-$2, members replaced by bigger ones: served grow --size max: $out" ;;
        *) t_fail "e: $1 RAID-$2: served grow --size max" "$out" ;; esac
    t_wait_status "$d/ctl.sock" "resync finished"
    new=$(timeout 10 nbdinfo --size "nbd+unix:///?socket=$d/nbd.sock")
    kill -TERM $spid; wait $spid || t_fail "e: $1 RAID-$2: the server stops cleanly" "$(tail -3 "$d/server.err")"
    [ "$new" -gt "$SZ" ] 2>/dev/null && t_ok "e: $1 RAID-$2: $new bytes served (was $SZ)" || t_fail "e: $1 RAID-$2: bigger" "$new"
    eval "ESZ$ei=$SZ ENEW$ei=$new ESEED$ei=$4"
    E="$E $M"
    ei=$((ei + 1))
done
# shellcheck disable=SC2086
"$ORACLE" --timeout 580 $(disks $E) -- - >"$t_tmp/e.log" 2>&1 <<GUEST
exec 2>&1
$GUEST_VERIFY
mdadm --assemble /dev/md0 /dev/vd[ab] && verify md0 $ESEED0 $ESZ0
mdadm --assemble /dev/md1 /dev/vd[c-e] && verify md1 $ESEED1 $ESZ1
GUEST
i=0
for name in "1.0 RAID-1" "0.90 RAID-5"; do
    eval "new=\$ENEW$i"
    md_judge "$t_tmp/e.log" "e: $name: md assembles it" "md$i" "size=$new" "pattern OK" "mismatch_cnt=0"
    i=$((i + 1))
done
t_finish
