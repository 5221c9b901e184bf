#!/bin/sh
# Consistency policies and md's partial parity log (PPL), through the uraid
# command and the real md (../shared/tools/md-oracle):
#   1. create picks ppl for RAID-5 and says so; detail and examine show it as
#      mdadm does (the host's mdadm --examine reads the same PPL line); RAID-6
#      gets uraid's PPL with partial Q (feature bit 31), and says md cannot
#      assemble it until switched;
#   2. refusals (bad names, journal, ppl on RAID-1, ppl with a bitmap) change
#      no byte of any member; grow resync <-> ppl works;
#   3. uraid dies in the middle of a partial-stripe write to RAID-5 whose
#      parity never landed: md assembles the members (all of them, and
#      degraded without the member whose chunk the write left alone),
#      replays uraid's PPL, reads every byte as expected and finds
#      mismatch_cnt 0 after a check;
#   4. md writes a PPL RAID-5 in the guest; its newest log's stripes are torn
#      on the host (parity junk, array dirty, as md's power cut would leave
#      them): uraid replays md's PPL, reads every byte as expected, degraded
#      too, and its check finds no mismatch;
#   5. md refuses to assemble a RAID-6 with uraid's PPL (bit 31) and, after
#      `uraid grow --consistency-policy=bitmap`, assembles it with every byte
#      as written (one guest boot for both).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
T=build/tests/test_ppl
[ -x "$T" ] || { t_fail "build/tests/test_ppl is built (make unit-tests)"; t_finish; exit 1; }

sums() { for f in "$@"; do sha256sum "$f"; done; }

# ---- 1. create, detail, examine -----------------------------------------------------------
d="$t_tmp/c"; mkdir -p "$d"
for i in 0 1 2 3; do truncate -s 16M "$d/m$i.img"; done
M="$d/m0.img $d/m1.img $d/m2.img $d/m3.img"
# shellcheck disable=SC2086
out=$($URAID create --level 5 --raid-devices 4 --chunk 64K --assume-clean $M 2>&1)
case "$out" in *"consistency policy: ppl (the default for RAID-5"*) t_ok "create: RAID-5 gets ppl and says so" ;;
    *) t_fail "create: RAID-5 gets ppl and says so" "$out" ;; esac
# shellcheck disable=SC2086
t_expect "detail: Consistency Policy : ppl" sh -c "$URAID detail $M | grep -q '^Consistency Policy : ppl\$'"
ours=$($URAID examine "$d/m1.img" | grep ' PPL : ')
theirs=$(mdadm --examine "$d/m1.img" 2>/dev/null | grep ' PPL : ')
if [ -n "$ours" ] && [ "$ours" = "$theirs" ]; then t_ok "examine: the PPL line as mdadm --examine prints it ($ours)"
else t_fail "examine: the PPL line as mdadm --examine prints it" "uraid '$ours', mdadm '$theirs'"; fi
fm=$(mdadm --examine "$d/m1.img" 2>/dev/null | sed -n 's/.*Feature Map : //p')
[ "$fm" = 0x400 ] && t_ok "mdadm reads feature map 0x400 (PPL)" || t_fail "mdadm reads feature map 0x400 (PPL)" "$fm"
for i in 4 5 6 7; do truncate -s 16M "$d/m$i.img"; done
M6="$d/m4.img $d/m5.img $d/m6.img $d/m7.img"
# shellcheck disable=SC2086
out=$($URAID create --level 6 --raid-devices 4 --chunk 64K --assume-clean $M6 2>&1)
case "$out" in *"consistency policy: ppl (the default for RAID-6"*"md cannot assemble"*)
    t_ok "create: RAID-6 gets ppl (partial Q) and says md cannot assemble it" ;;
    *) t_fail "create: RAID-6 gets ppl (partial Q) and says md cannot assemble it" "$out" ;; esac
fm=$(mdadm --examine "$d/m5.img" 2>/dev/null | sed -n 's/.*Feature Map : //p')
[ "$fm" = 0x80000000 ] && t_ok "RAID-6 ppl: mdadm reads feature map 0x80000000" || t_fail "RAID-6 ppl: feature map" "$fm"
# shellcheck disable=SC2086
t_expect "RAID-6 detail: Consistency Policy : ppl, md Assembly : refused" sh -c \
    "$URAID detail $M6 | grep -A1 '^Consistency Policy : ppl\$' | grep -q 'md Assembly : refused.*--consistency-policy=bitmap|resync'"
t_expect "RAID-6 examine: the PPL Q line" sh -c "$URAID examine $d/m6.img | grep -q 'PPL Q : .*md cannot assemble'"

# ---- 2. refusals change nothing; grow ------------------------------------------------------
# shellcheck disable=SC2086
before=$(sums $M $M6)
refuse() { # NAME WORDS COMMAND...: fails with one line containing WORDS
    name=$1 words=$2; shift 2
    msg=$("$@" 2>&1); rc=$?
    # shellcheck disable=SC2086
    now=$(sums $M $M6)
    if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] && printf '%s' "$msg" | grep -q -- "$words" &&
        [ "$now" = "$before" ]; then t_ok "refused, nothing changed: $name"
    else t_fail "refused, nothing changed: $name" "rc $rc: $msg"; fi
}
# shellcheck disable=SC2086
refuse "create --consistency-policy=bogus" "must be resync, bitmap, ppl or journal" \
    $URAID create --level 5 --raid-devices 4 --consistency-policy=bogus --force $M
# shellcheck disable=SC2086
refuse "create --consistency-policy=journal" "not supported yet" \
    $URAID create --level 5 --raid-devices 4 --consistency-policy=journal --force $M
# shellcheck disable=SC2086
refuse "create ppl on RAID-1" "RAID-5 only" $URAID create --level 1 --raid-devices 2 --consistency-policy=ppl --force $d/m0.img $d/m1.img
# shellcheck disable=SC2086
refuse "create ppl with a bitmap" "exclude each other" \
    $URAID create --level 5 --raid-devices 4 --consistency-policy=ppl --bitmap internal --force $M
# shellcheck disable=SC2086
refuse "grow --consistency-policy=nonsense" "must be resync" $URAID grow --consistency-policy=nonsense $M
# shellcheck disable=SC2086
refuse "grow RAID-6 to journal" "not supported yet" $URAID grow --consistency-policy=journal $M6
# shellcheck disable=SC2086
refuse "grow with a member left out" "all 4 members" $URAID grow --consistency-policy=resync $d/m0.img $d/m1.img $d/m2.img
# shellcheck disable=SC2086
if $URAID grow --consistency-policy=resync $M >/dev/null && $URAID detail $M | grep -q '^Consistency Policy : resync$' &&
    $URAID grow --consistency-policy ppl $M >/dev/null && $URAID detail $M | grep -q '^Consistency Policy : ppl$' &&
    [ "$(mdadm --examine "$d/m2.img" 2>/dev/null | sed -n 's/.*Feature Map : //p')" = 0x400 ]; then
    t_ok "grow: ppl -> resync -> ppl, as md reads it"
else t_fail "grow: ppl -> resync -> ppl, as md reads it"; fi

# ---- 3. uraid's PPL replayed by md -----------------------------------------------------------
oracle_ready || { t_finish; exit 1; }
name="uraid dies mid-write (parity lost): md replays uraid's PPL"
d="$t_tmp/u"; mkdir -p "$d"
for i in 0 1 2 3; do truncate -s 24M "$d/m$i.img"; done
M="$d/m0.img $d/m1.img $d/m2.img $d/m3.img"
# shellcheck disable=SC2086
$URAID create --level 5 --raid-devices 4 --chunk 64K --name oracle $M >/dev/null 2>&1 || t_fail "$name" "create"
# shellcheck disable=SC2086
size=$(($($URAID detail $M | awk '/Array Size/ {print $4; exit}') * 1024))
# shellcheck disable=SC2086
"$PATTERN" -s 61 -n "$size" | $URAID write $M 2>/dev/null || t_fail "$name" "write"
# shellcheck disable=SC2086
info=$("$T" --torn-stripe 7 4242 "$d/new.bin" $M) || t_fail "$name" "torn write: $info"
off=$(echo "$info" | sed -n 's/.*offset=\([0-9]*\).*/\1/p')
miss=$(echo "$info" | sed -n 's/.*missing=\([0-9]*\).*/\1/p')
# without it the "degraded" run below would get every member and prove nothing
case "$miss" in [0-3]) ;; *) t_fail "$name: the torn stripe names the member to leave out" "$info"; miss=0 ;; esac
"$PATTERN" -s 61 -n "$size" >"$d/want.img"
dd if="$d/new.bin" of="$d/want.img" bs=4096 seek=$((off / 4096)) conv=notrunc 2>/dev/null
want=$(sha256sum <"$d/want.img" | cut -d' ' -f1)
state=$(mdadm --examine "$d/m0.img" | sed -n 's/^ *State : //p')
[ "$state" = active ] || t_fail "$name" "the array is not dirty after the crash ($state)"
all="" deg=""
for i in 0 1 2 3; do all="$all --disk $d/m$i.img"; [ "$i" = "$miss" ] || deg="$deg --disk $d/m$i.img"; done
# shellcheck disable=SC2086
got=$("$ORACLE" --snapshot --timeout 300 $deg -- - 2>"$d/deg.err" <<'GUEST' | sha256sum | cut -d' ' -f1
exec 2>/dev/console
mdadm --assemble /dev/md0 --run /dev/vd? >&2 || exit 1
dd if=/dev/md0 bs=1M 2>/dev/null
GUEST
)
if [ "$got" = "$want" ]; then t_ok "$name: degraded (slot $miss left out), every byte as expected"
else t_fail "$name: degraded (slot $miss left out), every byte as expected" "sha $got, want $want; $(tail -3 "$d/deg.err")"; fi
# shellcheck disable=SC2086
got=$("$ORACLE" --snapshot --timeout 300 $all -- - 2>"$d/all.err" <<'GUEST' | sha256sum | cut -d' ' -f1
exec 2>/dev/console
mdadm --assemble /dev/md0 --run /dev/vd? >&2 || exit 1
echo check > /sys/block/md0/md/sync_action
while [ "$(cat /sys/block/md0/md/sync_action)" != idle ]; do sleep 0.2; done
[ "$(cat /sys/block/md0/md/mismatch_cnt)" = 0 ] || { echo "mismatch_cnt=$(cat /sys/block/md0/md/mismatch_cnt)" >&2; exit 3; }
dd if=/dev/md0 bs=1M 2>/dev/null
GUEST
)
if [ "$got" = "$want" ]; then t_ok "$name: whole, mismatch_cnt 0 after md's check, every byte as expected"
else t_fail "$name: whole, mismatch_cnt 0 after md's check, every byte as expected" "sha $got; $(tail -3 "$d/all.err")"; fi

# ---- 4. md's PPL replayed by uraid -----------------------------------------------------------
name="md's PPL (power cut mid-write) replayed by uraid"
d="$t_tmp/m"; mkdir -p "$d"
args=""
for i in 0 1 2 3; do truncate -s 24M "$d/m$i.img"; args="$args --disk $d/m$i.img"; done
M="$d/m0.img $d/m1.img $d/m2.img $d/m3.img"
# shellcheck disable=SC2086
"$ORACLE" --timeout 300 $args -- - >"$d/oracle.out" 2>&1 <<'GUEST'
mdadm --create /dev/md0 --level=5 --raid-devices=4 --chunk=64 --metadata=1.2 --consistency-policy=ppl \
      --assume-clean --run /dev/vd[a-d] || exit 1
size=$(blockdev --getsize64 /dev/md0)
mdpattern -s 71 -n $size > /dev/md0
sync
# one 4 KiB write into each of stripes 0-3 (64 KiB chunks, 3 data chunks a
# stripe), so that each member's newest log is a partial-stripe write; none
# writes to member 1, the one the degraded check leaves out
for blk in 5 53 101 165; do
    mdpattern -s 72 -o $((blk * 4096)) -n 4096 | dd of=/dev/md0 bs=4096 seek=$blk oflag=direct conv=notrunc 2>/dev/null
done
sync
echo "size=$size"
mdadm --examine /dev/vda | grep -E 'Feature Map|PPL'
mdadm --stop /dev/md0
GUEST
size=$(sed -n 's/^size=//p' "$d/oracle.out")
if [ -z "$size" ]; then
    t_fail "$name" "md did not create the array: $(tail -5 "$d/oracle.out")"
else
    "$PATTERN" -s 71 -n "$size" >"$d/want.img"
    for blk in 5 53 101 165; do
        "$PATTERN" -s 72 -o $((blk * 4096)) -n 4096 | dd of="$d/want.img" bs=4096 seek=$blk conv=notrunc 2>/dev/null
    done
    want=$(sha256sum <"$d/want.img" | cut -d' ' -f1)
    mkdir -p "$d/copy"
    # shellcheck disable=SC2086
    torn=$("$T" --md-tear $M | sed -n 's/^torn=//p')
    [ -n "$torn" ] && [ "$torn" -gt 0 ] || t_fail "$name" "no entry in md's newest PPL headers to tear ($torn)"
    cp "$d"/m*.img "$d/copy/"
    # degraded: member 1 left out, whose chunks of the torn stripes only
    # the replayed parity can give back
    # shellcheck disable=SC2086
    $URAID write --offset 0 "$d/copy/m0.img" "$d/copy/m2.img" "$d/copy/m3.img" </dev/null >"$d/replay.log" 2>&1 \
        || t_fail "$name" "degraded open: $(cat "$d/replay.log")"
    got=$($URAID cat "$d/copy/m0.img" "$d/copy/m2.img" "$d/copy/m3.img" 2>"$d/cat.err" | sha256sum | cut -d' ' -f1)
    if [ "$got" = "$want" ]; then t_ok "$name: degraded, $torn entries, every byte as expected"
    else t_fail "$name: degraded, $torn entries, every byte as expected" "sha $got, want $want; $(cat "$d/replay.log" "$d/cat.err")"; fi
    # shellcheck disable=SC2086
    chk=$($URAID check $M 2>&1)
    # shellcheck disable=SC2086
    got=$($URAID cat $M 2>/dev/null | sha256sum | cut -d' ' -f1)
    if [ "$got" = "$want" ] && printf '%s\n' "$chk" | grep -q 'mismatch_cnt 0$'; then
        t_ok "$name: whole, check finds no mismatch, every byte as expected"
    else t_fail "$name: whole, check finds no mismatch, every byte as expected" "sha $got; $chk"; fi
fi

# ---- 5. RAID-6 with partial Q: md refuses it, then takes it after grow to bitmap ------------------
name="RAID-6 ppl (bit 31)"
d="$t_tmp/q"; mkdir -p "$d/a"
args=""
for i in 0 1 2 3; do truncate -s 24M "$d/m$i.img"; done
M="$d/m0.img $d/m1.img $d/m2.img $d/m3.img"
# shellcheck disable=SC2086
$URAID create --level 6 --raid-devices 4 --chunk 64K --name oracle $M >/dev/null 2>&1 || t_fail "$name" "create"
# shellcheck disable=SC2086
size=$(($($URAID detail $M | awk '/Array Size/ {print $4; exit}') * 1024))
# shellcheck disable=SC2086
"$PATTERN" -s 81 -n "$size" | $URAID write $M 2>/dev/null || t_fail "$name" "write"
want=$("$PATTERN" -s 81 -n "$size" | sha256sum | cut -d' ' -f1)
cp "$d"/m*.img "$d/a/"
# shellcheck disable=SC2086
$URAID grow --consistency-policy=bitmap $M >"$d/grow.log" 2>&1 || t_fail "$name" "grow to bitmap: $(cat "$d/grow.log")"
for i in 0 1 2 3; do args="$args --disk $d/a/m$i.img"; done
for i in 0 1 2 3; do args="$args --disk $d/m$i.img"; done
# shellcheck disable=SC2086
"$ORACLE" --snapshot --timeout 300 $args -- - >"$d/oracle.out" 2>"$d/oracle.err" <<'GUEST'
if mdadm --assemble /dev/md0 --run /dev/vda /dev/vdb /dev/vdc /dev/vdd >/dev/null 2>&1; then echo "bit31=assembled"
else echo "bit31=refused"; fi
mdadm --stop /dev/md0 >/dev/null 2>&1
mdadm --assemble /dev/md1 --run /dev/vde /dev/vdf /dev/vdg /dev/vdh >/dev/null 2>&1 || { echo "bitmap=refused"; exit 1; }
echo "bitmap=assembled"
grep -q bitmap /proc/mdstat && echo "mdstat=bitmap"
echo "sha=$(dd if=/dev/md1 bs=1M 2>/dev/null | sha256sum | cut -d' ' -f1)"
GUEST
grep -q '^bit31=refused$' "$d/oracle.out" && t_ok "$name: md refuses to assemble it" ||
    t_fail "$name: md refuses to assemble it" "$(cat "$d/oracle.out" "$d/oracle.err" | tail -5)"
got=$(sed -n 's/^sha=//p' "$d/oracle.out")
if grep -q '^bitmap=assembled$' "$d/oracle.out" && grep -q '^mdstat=bitmap$' "$d/oracle.out" && [ "$got" = "$want" ]; then
    t_ok "$name: after uraid grow --consistency-policy=bitmap md assembles it (bitmap), every byte as written"
else t_fail "$name: after grow to bitmap md assembles it, every byte as written" "sha $got, want $want; $(tail -5 "$d/oracle.out")"; fi
t_finish
