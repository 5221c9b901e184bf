#!/bin/sh
# RAID-10 (every md layout: n2, n3, f2, f3, o2, o3; several member counts;
# 4K and 64K chunks) and linear against the real md (../shared/tools/md-oracle),
# both ways, in ONE guest run:
#   A. md creates each array on loop files in the guest, fills it with
#      mdpattern, checks it (mismatch_cnt 0) and streams the members out;
#      uraid reads md's bytes (sha256 equal to md's and to the pattern),
#      whole and with as many members missing as the layout survives;
#      `uraid examine` agrees with the host's `mdadm --examine`;
#   B. uraid creates and writes the same shapes (n2x4m with its write-intent
#      bitmap, which md must run); md assembles them from one
#      disk (loop devices at each member's offset, --snapshot), runs a check
#      (mismatch_cnt 0 for RAID-10) and reads the bytes uraid wrote;
#      mdadm --examine agrees with uraid;
#   C. (a second run) uraid writes into md's RAID-10 that has md's write-intent
#      bitmap; md assembles it, checks it (mismatch_cnt 0, no dirty bit left)
#      and reads uraid's bytes.
# The oracle is built once per machine into $MDORACLE_HOME (outside the repository).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

oracle_ready || { t_finish; exit 1; }
d=$t_tmp
KIB=4164 # members: md's 1 MiB offset + 49 64K chunks + 4K, so each layout rounds its own way
# NAME:LEVEL:LAYOUT:MEMBERS:CHUNK_KIB:SEED[:bitmap], and the slots each may lose
CASES="n2x3a:10:n2:3:4:31 n2x3b:10:n2:3:64:32 n2x4a:10:n2:4:4:33 n2x4b:10:n2:4:64:34 f2x3a:10:f2:3:4:35
f2x3b:10:f2:3:64:36 f2x4a:10:f2:4:4:37 f2x4b:10:f2:4:64:38 o2x4a:10:o2:4:4:39 o2x4b:10:o2:4:64:40
n3x3a:10:n3:3:4:41 n3x3b:10:n3:3:64:42 o2x3b:10:o2:3:64:43 f3x4b:10:f3:4:64:44 o3x3a:10:o3:3:4:45
n2x5b:10:n2:5:64:46 lin3:linear:-:3:0:47 n2x4m:10:n2:4:64:48:bitmap"
# make check: one shape per layout (both chunk sizes, 3 to 5 members, linear, the bitmap);
# the long mode runs every shape above
if ! t_long; then
    all=$(echo $CASES | wc -w)
    CASES="n2x3a:10:n2:3:4:31 f2x4b:10:f2:4:64:38 o2x4a:10:o2:4:4:39 n3x3b:10:n3:3:64:42
o2x3b:10:o2:3:64:43 f3x4b:10:f3:4:64:44 o3x3a:10:o3:3:4:45 n2x5b:10:n2:5:64:46 lin3:linear:-:3:0:47
n2x4m:10:n2:4:64:48:bitmap"
    t_short_note "$(echo $CASES | wc -w) of $all shapes"
fi
lose() { # the largest set of slots each shape survives losing (md's enough())
    case $1 in
        n2x3*|f2x3*|o2x3*) echo 1 ;;
        n2x4*|f2x4*|o2x4*) echo "0 2" ;;
        n3x3*|o3x3*) echo "0 1" ;;
        f3x4*) echo "1 2" ;;
        n2x5*) echo "1 3" ;;
        *) echo "" ;;
    esac
}
field() { sed -n "s/^CASE $1 //p" "$d/md.err" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
sha() { sha256sum | cut -c1-64; }
size_of() { $URAID detail "$@" 2>/dev/null | awk '/Array Size/ {print $4 * 1024; exit}'; }
examine_agrees() { # examine_agrees NAME MEMBER: the fields both print, equal
    mdadm --examine "$2" >"$d/ex" 2>&1
    # uraid examine appends the bitmap as mdadm --examine-bitmap shows it (its own Events, State)
    $URAID examine "$2" 2>&1 | sed '/Write-intent bitmap/,$d' >"$d/ux"
    _bad=""
    for _f in "Raid Level" "Raid Devices" "Avail Dev Size" "Array Size" "Used Dev Size" "Data Offset" \
        "Super Offset" "Layout" "Chunk Size" "Rounding" "Device Role" "Array State" "Events" "State"; do
        [ "$(grep "^ *$_f :" "$d/ex")" = "$(grep "^ *$_f :" "$d/ux")" ] || _bad="$_bad [$_f]"
    done
    grep -q "Raid Level" "$d/ex" || _bad="$_bad [mdadm --examine failed: $(head -2 "$d/ex")]"
    [ -z "$_bad" ] && t_ok "$1: uraid examine agrees with mdadm --examine" \
        || t_fail "$1: uraid examine agrees with mdadm --examine" "differ:$_bad"
}

# ---- B's images: uraid creates and writes each shape -------------------------------
# all members, STRIDE KiB apart, in one disk: the guest puts loop devices there
STRIDE=12288
: >"$d/uraid.img"
bspec=""
idx=0
for c in $CASES; do
    IFS=: read -r name level layout n chunk seed bm <<E
$c
E
    m=""; i=0
    while [ $i -lt "$n" ]; do truncate -s 12M "$d/u-$name.$i"; m="$m $d/u-$name.$i"; i=$((i + 1)); done
    if [ "$level" = linear ]; then opts=""; else opts="--layout $layout --chunk ${chunk}K"; fi
    [ -z "$bm" ] || opts="$opts --bitmap internal"
    # shellcheck disable=SC2086
    if ! $URAID create --level "$level" $opts --raid-devices "$n" $m >"$d/create.log" 2>&1; then
        t_fail "uraid create $name" "$(cat "$d/create.log")"
        continue
    fi
    # shellcheck disable=SC2086
    usize=$(size_of $m)
    # shellcheck disable=SC2086
    "$PATTERN" -s $((seed + 100)) -n "$usize" | $URAID write $m 2>"$d/write.log" || t_fail "uraid write $name" "$(cat "$d/write.log")"
    echo "$usize $("$PATTERN" -s $((seed + 100)) -n "$usize" | sha)" >"$d/u-$name.want"
    for f in $m; do cat "$f" >>"$d/uraid.img"; done
    bspec="$bspec $name:$n:$idx:$level"
    idx=$((idx + n))
done

# ---- the guest: A (md writes) then B (md reads uraid's) ----------------------------
cat >"$d/guest.sh" <<'GUEST'
#!/bin/sh
# guest.sh KIB STRIDE_KIB "A-CASES" B-CASES...
KIB=$1 STRIDE=$2 ACASES=$3; shift 3
# shellcheck disable=SC2086
sh /mnt/files/guest_make.sh "$KIB" $ACASES || exit 1
exec 3>&1 1>&2
for c in "$@"; do
    IFS=: read -r name n idx level <<E
$c
E
    devs=""; i=0
    while [ $i -lt "$n" ]; do
        l=$(losetup -f) && losetup -o $(((idx + i) * STRIDE * 1024)) "$l" /dev/vda && devs="$devs $l"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    if ! mdadm --assemble /dev/md1 --run $devs; then
        echo "BCASE $name assemble-failed"
    else
        mm=-
        if [ "$level" != linear ]; then
            echo check > /sys/block/md1/md/sync_action
            while [ "$(cat /sys/block/md1/md/sync_action)" != idle ]; do sleep 0.2; done
            mm=$(cat /sys/block/md1/md/mismatch_cnt)
        fi
        echo "BCASE $name size=$(blockdev --getsize64 /dev/md1) sha256=$(dd if=/dev/md1 bs=1M 2>/dev/null | sha256sum | cut -d' ' -f1) mismatch=$mm bitmap=$(cat /sys/block/md1/md/bitmap/location 2>/dev/null || echo none) dirty=$(grep -A3 '^md1' /proc/mdstat | sed -n 's/.*bitmap: \([0-9]*\)\/.*/\1/p')"
        mdadm --stop /dev/md1
    fi
    for l in $devs; do losetup -d "$l"; done
done
exit 0
GUEST
# shellcheck disable=SC2086
"$ORACLE" --snapshot --mem 1G --timeout 600 --disk "$d/uraid.img" --file tests/fixtures/md10/guest_make.sh \
    -- "$d/guest.sh" $KIB $STRIDE "$(echo $CASES)" $bspec >"$d/md.bin" 2>"$d/md.err"
rc=$?
[ $rc -eq 0 ] && t_ok "one guest run: md made every array and read uraid's" \
    || t_fail "guest run" "exit $rc: $(grep -v '^mdadm' "$d/md.err" | tail -5)"

# ---- A: uraid reads md's arrays -------------------------------------------------------
blk=0
for c in $CASES; do
    IFS=: read -r name level layout n chunk seed bm <<E
$c
E
    m=""; i=0
    while [ $i -lt "$n" ]; do
        dd if="$d/md.bin" of="$d/m-$name.$i" bs=1024 skip=$((blk * KIB)) count=$KIB 2>/dev/null
        m="$m $d/m-$name.$i"; i=$((i + 1)); blk=$((blk + 1))
    done
    msize=$(field "$name" size) msha=$(field "$name" sha256) mmm=$(field "$name" mismatch)
    psha=$("$PATTERN" -s "$seed" -n "${msize:-0}" | sha)
    tag="md's $name ($level ${layout#-} x$n${chunk:+, ${chunk}K})"
    # shellcheck disable=SC2086
    got=$($URAID cat $m 2>"$d/err" | sha) usize=$(size_of $m)
    if [ -n "$msha" ] && [ "$got" = "$msha" ] && [ "$got" = "$psha" ] && [ "$usize" = "$msize" ]; then
        t_ok "$tag: uraid reads md's $msize bytes (md's check: mismatch_cnt $mmm)"
    else
        t_fail "$tag: uraid reads md's bytes" "md $msize $msha; uraid $usize $got; $(head -2 "$d/err")"
    fi
    gone=$(lose "$name")
    if [ -n "$gone" ]; then
        sub=""; i=0
        while [ $i -lt "$n" ]; do
            case " $gone " in *" $i "*) ;; *) sub="$sub $d/m-$name.$i" ;; esac
            i=$((i + 1))
        done
        # shellcheck disable=SC2086
        got=$($URAID cat $sub 2>"$d/err" | sha)
        [ "$got" = "$msha" ] && t_ok "$tag: the same without slot(s) $gone" \
            || t_fail "$tag: degraded read without $gone" "$(head -2 "$d/err")"
    fi
    examine_agrees "$tag" "$d/m-$name.0"
done

# ---- B: md reads uraid's arrays ------------------------------------------------------
for c in $CASES; do
    IFS=: read -r name level layout n chunk seed bm <<E
$c
E
    tag="uraid's $name ($level ${layout#-} x$n${bm:+, with a bitmap})"
    read -r usize usha <"$d/u-$name.want"
    line=$(grep "^BCASE $name " "$d/md.err")
    bsize=$(echo "$line" | sed -n 's/.* size=\([0-9]*\).*/\1/p')
    bsha=$(echo "$line" | sed -n 's/.* sha256=\([0-9a-f]*\).*/\1/p')
    bmm=$(echo "$line" | sed -n 's/.* mismatch=\([^ ]*\).*/\1/p')
    bloc=$(echo "$line" | sed -n 's/.* bitmap=\([^ ]*\).*/\1/p') bdirty=$(echo "$line" | sed -n 's/.* dirty=\([^ ]*\).*/\1/p')
    if [ -n "$bm" ]; then
        # md runs uraid's bitmap where mdadm puts it, and the clean stop left no dirty bit
        [ "$bloc" = +8 ] && [ "$bdirty" = 0 ] && t_ok "$tag: md runs uraid's bitmap (location +8, 0 dirty)" \
            || t_fail "$tag: md runs uraid's bitmap" "location '$bloc' dirty '$bdirty': '$line'"
    fi
    if [ "$bsize" = "$usize" ] && [ "$bsha" = "$usha" ] && { [ "$bmm" = 0 ] || [ "$level" = linear ]; }; then
        t_ok "$tag: md assembles it, reads the $usize bytes uraid wrote${bmm:+, check mismatch_cnt $bmm}"
    else
        t_fail "$tag: md reads it" "md: '$line'; uraid $usize $usha"
    fi
    examine_agrees "$tag" "$d/u-$name.0"
done
# ---- C: uraid writes into md's RAID-10 with a write-intent bitmap; md reads it -------
# (a second guest run: md made the array in the first)
m=""; i=0
while [ $i -lt 4 ]; do m="$m $d/m-n2x4m.$i"; i=$((i + 1)); done
head -c 1048576 /dev/urandom >"$d/patch"
# shellcheck disable=SC2086
$URAID write --offset 1048576 $m <"$d/patch" 2>"$d/err" || t_fail "uraid write into md's bitmap array" "$(cat "$d/err")"
# shellcheck disable=SC2086
msize=$(size_of $m)
{ "$PATTERN" -s 48 -n 1048576; cat "$d/patch"; "$PATTERN" -s 48 -o 2097152 -n $((msize - 2097152)); } | sha >"$d/c.want"
# shellcheck disable=SC2086
[ "$($URAID cat $m 2>/dev/null | sha)" = "$(cat "$d/c.want")" ] && t_ok "md's n2x4m (bitmap): uraid's write reads back" \
    || t_fail "md's n2x4m: uraid's write reads back"
"$ORACLE" --snapshot --timeout 300 --disk "$d/m-n2x4m.0" --disk "$d/m-n2x4m.1" --disk "$d/m-n2x4m.2" \
    --disk "$d/m-n2x4m.3" -- - >"$d/c.out" 2>"$d/c.err" <<'GUEST'
mdadm --assemble /dev/md0 --run /dev/vda /dev/vdb /dev/vdc /dev/vdd >&2 || exit 1
echo check > /sys/block/md0/md/sync_action
while [ "$(cat /sys/block/md0/md/sync_action)" != idle ]; do sleep 0.2; done
echo "mismatch=$(cat /sys/block/md0/md/mismatch_cnt) sha256=$(dd if=/dev/md0 bs=1M 2>/dev/null | sha256sum | cut -d' ' -f1)"
grep -A3 '^md0' /proc/mdstat | grep bitmap
GUEST
line=$(cat "$d/c.out")
case $line in
    *"mismatch=0 sha256=$(cat "$d/c.want")"*"bitmap: 0/"*)
        t_ok "md assembles md's bitmap RAID-10 after uraid's write: mismatch_cnt 0, uraid's bytes, no dirty bit" ;;
    *) t_fail "md reads md's bitmap RAID-10 after uraid's write" "'$line' want $(cat "$d/c.want"); $(tail -3 "$d/c.err")" ;;
esac
t_finish
