#!/bin/sh
# The write-intent bitmap against the real tools:
#   1. `mdadm -X` (examine-bitmap, on a read-only loop device) agrees with
#      `uraid examine` on every member of a uraid-created bitmap array
#      (chunk, bits, dirty count, events, events cleared, sync size), after a
#      clean stop (0 dirty) and after a SIGKILL during writes (dirty > 0, and
#      the bitmap's events those of the superblock);
#   2. refusals: --bitmap on RAID-0, a chunk that is not a power of two or too
#      small for the space: one line, nothing written; small members get no
#      bitmap by default (mdadm's rule);
#   3. md oracle (a): uraid RAID-5 and RAID-6 with a bitmap, SIGKILLed mid-write;
#      md assembles them and loads uraid's dirty bits (mdstat "bitmap: N/M
#      pages" with N > 0 at once, and no "out of date -- forcing full
#      recovery"), resyncs, and its check finds mismatch_cnt 0. (Linux 6.1
#      logs no count of the bits it loaded, so the pages are the evidence.);
#   4. md oracle (b): md writes an array with a bitmap and the guest powers off
#      with writes in flight (--no-stop); uraid reads md's bits like mdadm -X,
#      resyncs only the dirty chunks, its check finds nothing, and md accepts
#      the bitmap uraid leaves after a clean stop.
# Needs root for loop devices (mdadm -X does not read plain files).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

[ "$(id -u)" -eq 0 ] || { t_fail "needs root (loop devices for mdadm -X)"; t_finish; exit 1; }

# bm_fields FILE: "chunk bits dirty events cleared sync" from -X style output
bm_fields() {
    awk '$1 == "Chunksize" { c = $3 $4 } $1 == "Events" && $2 == ":" { e = $3 }
         $1 == "Events" && $2 == "Cleared" { ec = $4 } $1 == "Sync" { s = $4 }
         $1 == "Bitmap" && $2 == ":" { b = $3; d = $6 }
         END { print c, b, d, e, ec, s }' "$1"
}

# agree NAME MEMBER...: mdadm -X and uraid examine print the same bitmap on
# each member; sets $dirty to the first member's dirty count
agree() {
    aname=$1; shift
    bad="" dirty="" dmax=0 dsum=0
    for m in "$@"; do
        loop=$(losetup -r -f --show "$m") || { bad="$bad [$m: losetup failed]"; continue; }
        mdadm -X "$loop" >"$t_tmp/x" 2>&1
        mdadm --examine "$loop" >"$t_tmp/e" 2>&1
        losetup -d "$loop"
        $URAID examine "$m" >"$t_tmp/u" 2>&1 || bad="$bad [$m: uraid examine: $(tail -n 1 "$t_tmp/u")]"
        x=$(bm_fields "$t_tmp/x") u=$(bm_fields "$t_tmp/u")
        sbev=$(awk '$1 == "Events" && $2 == ":" { print $3; exit }' "$t_tmp/e")
        # all six fields from both (bm_fields prints five blanks for none, so
        # "-n" alone passed when neither tool printed a bitmap)
        # shellcheck disable=SC2086
        [ "$(echo $x | wc -w)" -eq 6 ] && [ "$x" = "$u" ] || bad="$bad [$m: mdadm -X '$x', uraid '$u']"
        set -- $x
        [ -n "$sbev" ] && [ "$4" = "$sbev" ] || bad="$bad [$m: bitmap events $4, superblock $sbev]"
        [ -n "$dirty" ] || dirty=$3
        [ -n "$3" ] && { [ "$3" -gt "$dmax" ] && dmax=$3; dsum=$((dsum + $3)); }
    done
    if [ -z "$bad" ]; then t_ok "$aname"; else t_fail "$aname" "$bad"; fi
}

dir=$t_tmp/a; mkdir -p "$dir"
for i in 0 1 2 3; do truncate -s 24M "$dir/d$i.img"; done
D="$dir/d0.img $dir/d1.img $dir/d2.img $dir/d3.img"
# shellcheck disable=SC2086
$URAID create --level 5 --raid-devices 4 --chunk 64K --bitmap internal --bitmap-chunk 256K $D >"$dir/c.log" 2>&1 \
    || t_fail "create with --bitmap internal" "$(cat "$dir/c.log")"
# shellcheck disable=SC2086
head -c 8M /dev/urandom | $URAID write $D 2>"$dir/w.log" || t_fail "write" "$(cat "$dir/w.log")"
# shellcheck disable=SC2086
agree "RAID-5, clean stop: mdadm -X agrees with uraid examine on every member" $D
[ "$dirty" = 0 ] && t_ok "clean stop leaves 0 dirty bits" || t_fail "clean stop leaves 0 dirty bits" "dirty $dirty"
# shellcheck disable=SC2086
$URAID detail $D >"$dir/detail" 2>&1
grep -q "^ *Intent Bitmap : Internal$" "$dir/detail" && grep -q "^Consistency Policy : bitmap$" "$dir/detail" \
    && t_ok "detail says 'Intent Bitmap : Internal', 'Consistency Policy : bitmap' as mdadm --detail does" \
    || t_fail "detail's bitmap lines" "$(cat "$dir/detail")"

# 20 MiB at 2 MB/s per member (RAID-5 of 4: 6.7 MB each) takes 3.4 s at best,
# however many requests uraid write keeps in flight: still writing at 2 s
# shellcheck disable=SC2086
head -c 20M /dev/urandom | $URAID write --member-layer throttle=2M $D 2>/dev/null &
wpid=$!
sleep 2
kill -9 $wpid 2>/dev/null
wait $wpid 2>/dev/null
# shellcheck disable=SC2086
agree "RAID-5, SIGKILL during writes: mdadm -X agrees with uraid examine" $D
[ -n "$dirty" ] && [ "$dirty" -gt 0 ] && t_ok "SIGKILL leaves dirty bits ($dirty)" \
    || t_fail "SIGKILL leaves dirty bits" "dirty '$dirty'"
# shellcheck disable=SC2086
out=$($URAID resync $D 2>&1)
echo "$out" | grep -q "sectors per member resynced (the dirty chunks" && t_ok "uraid resync covers the dirty chunks only" \
    || t_fail "uraid resync covers the dirty chunks only" "$(echo "$out" | tail -n 2)"
# shellcheck disable=SC2086
$URAID check $D 2>&1 | grep -q "mismatch_cnt 0" && t_ok "check after the bitmap resync: mismatch_cnt 0" \
    || t_fail "check after the bitmap resync: mismatch_cnt 0"
# shellcheck disable=SC2086
agree "after the resync: mdadm -X agrees, 0 dirty" $D
[ "$dirty" = 0 ] && t_ok "resync cleared the bits" || t_fail "resync cleared the bits" "dirty $dirty"

# refusals and the default
r=$t_tmp/r; mkdir -p "$r"
for i in 0 1 2; do truncate -s 24M "$r/d$i.img"; done
R="$r/d0.img $r/d1.img $r/d2.img"
refused() { # NAME EXPECT ARGS...
    n=$1 want=$2; shift 2
    # shellcheck disable=SC2086
    if $URAID create "$@" $R >"$r/o" 2>&1; then t_fail "$n" "created"; return; fi
    lines=$(wc -l <"$r/o")
    if [ "$lines" -eq 1 ] && grep -q "$want" "$r/o" && ! mdadm --examine "$r/d0.img" >/dev/null 2>&1; then
        t_ok "$n"
    else
        t_fail "$n" "$(cat "$r/o")"
    fi
}
refused "RAID-0 --bitmap internal refused in one line, nothing written" "RAID-0" --level 0 --raid-devices 3 --bitmap internal
refused "--bitmap-chunk 100K refused (not a power of two)" "power of two" --level 5 --raid-devices 3 --bitmap internal --bitmap-chunk 100K
for i in 0 1 2; do truncate -s 200M "$r/d$i.img"; done
refused "--bitmap-chunk 4K refused on 200M members (the bits do not fit 8 sectors)" "too small" --level 5 --raid-devices 3 --bitmap internal --bitmap-chunk 4 --assume-clean
refused "--bitmap-chunk without a bitmap refused" "needs --bitmap internal" --level 5 --raid-devices 3 --bitmap-chunk 64M
# shellcheck disable=SC2086
# (RAID-1: RAID-5's default policy is ppl, which keeps no bitmap)
$URAID create --level 1 --raid-devices 3 $R >/dev/null 2>&1
mdadm --examine "$r/d0.img" 2>/dev/null | grep -q "Feature Map : 0x0" \
    && t_ok "members under 100 GiB: no bitmap by default (mdadm's rule)" \
    || t_fail "members under 100 GiB: no bitmap by default" "$(mdadm --examine "$r/d0.img" 2>&1 | grep Feature)"

# ---- the md oracle ---------------------------------------------------------------------
oracle_ready || { t_finish; exit 1; }

# (a) uraid crashes, md resyncs from uraid's bitmap: $1 level, $2 members
uraid_crash_to_md() {
    level=$1 n=$2
    name="md oracle: RAID-$level n=$n with uraid's bitmap after a SIGKILL: md trusts it, resyncs, mismatch_cnt 0"
    d=$t_tmp/o$level; mkdir -p "$d"
    disks="" args=""
    i=0
    while [ $i -lt "$n" ]; do
        truncate -s 24M "$d/d$i.img"; disks="$disks $d/d$i.img"; args="$args --disk $d/d$i.img"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    $URAID create --level "$level" --raid-devices "$n" --chunk 64K --bitmap internal --bitmap-chunk 128K $disks \
        >"$d/c.log" 2>&1 || { t_fail "$name" "create: $(cat "$d/c.log")"; return; }
    # 30 MiB at 3 MB/s per member (10 MB each on RAID-5 n=4 and RAID-6 n=5):
    # 3.3 s at best however many requests uraid write keeps in flight, so
    # still writing at 2 s
    # shellcheck disable=SC2086
    head -c 30M /dev/urandom | $URAID write --member-layer throttle=3M $disks 2>/dev/null &
    wpid=$!
    sleep 2
    kill -9 $wpid 2>/dev/null
    wait $wpid 2>/dev/null
    # shellcheck disable=SC2086
    udirty=$($URAID examine $disks 2>/dev/null | awk '$1 == "Bitmap" && $2 == ":" { print $3 "/" $6; exit }')
    # shellcheck disable=SC2086
    "$ORACLE" --snapshot --timeout 300 $args -- - >"$d/oracle.out" 2>&1 <<'GUEST'
mdadm --assemble /dev/md0 --run /dev/vd? || exit 1
grep 'bitmap:' /proc/mdstat | sed 's/^ */loaded /'
dmesg | grep -E 'bitmap|md0' | sed 's/^/dmesg: /'
while [ "$(cat /sys/block/md0/md/sync_action)" != idle ]; do sleep 0.2; done
grep -A3 '^md0' /proc/mdstat | sed 's/^/mdstat: /'
echo check > /sys/block/md0/md/sync_action
while [ "$(cat /sys/block/md0/md/sync_action)" != idle ]; do sleep 0.2; done
echo "mismatch_cnt=$(cat /sys/block/md0/md/mismatch_cnt)"
GUEST
    pages=$(sed -n 's/^loaded bitmap: \([0-9]*\)\/.*/\1/p' "$d/oracle.out" | head -n 1)
    bad=""
    grep -q "out of date" "$d/oracle.out" && bad="$bad [md: bitmap out of date]"
    grep -q "^mismatch_cnt=0$" "$d/oracle.out" || bad="$bad [$(grep mismatch_cnt "$d/oracle.out" || echo 'no check result')]"
    [ -n "$pages" ] && [ "$pages" -gt 0 ] || bad="$bad [md loaded no dirty bit: '$(grep '^loaded' "$d/oracle.out")', uraid had $udirty]"
    case $udirty in */0|"") bad="$bad [uraid left no dirty bit to test with]" ;; esac
    if [ -z "$bad" ]; then t_ok "$name ($udirty bits/dirty)"; else t_fail "$name" "$bad; $(tail -n 5 "$d/oracle.out")"; fi
}
uraid_crash_to_md 5 4
uraid_crash_to_md 6 5

# (b) md writes with its bitmap and loses power mid-write; uraid takes over
name="md oracle: md's bitmap after a power cut mid-write: uraid reads it as mdadm -X, resyncs the dirty chunks, md accepts uraid's bitmap"
d=$t_tmp/mdb; mkdir -p "$d"
disks="" args=""
for i in 0 1 2 3; do truncate -s 24M "$d/d$i.img"; disks="$disks $d/d$i.img"; args="$args --disk $d/d$i.img"; done
# shellcheck disable=SC2086
"$ORACLE" --no-stop --timeout 300 $args -- - >"$d/oracle1.out" 2>&1 <<'GUEST'
mdadm --create /dev/md0 --level=5 --raid-devices=4 --chunk=64 --metadata=1.2 --bitmap=internal --bitmap-chunk=128 --assume-clean --run /dev/vd[a-d] || exit 1
dd if=/dev/urandom of=/dev/md0 bs=64k count=2000 oflag=direct 2>/dev/null &
sleep 1
echo "powering off with writes in flight"
GUEST
# shellcheck disable=SC2086
agree "md's bitmap after a power cut: mdadm -X agrees with uraid examine" $disks
# md may cut the power between writing one member's bitmap page and the
# next's: uraid takes the union of the copies, at least the fullest one and
# at most all of them together
mddirty=$dmax mdsum=$dsum
# shellcheck disable=SC2086
out=$($URAID resync $disks 2>&1)
worked=$(echo "$out" | sed -n 's/.*: \([0-9]*\) of \([0-9]*\) sectors per member resynced.*/\1 \2/p')
# shellcheck disable=SC2086
set -- $worked
bad=""
[ -n "$mddirty" ] && [ "$mddirty" -gt 0 ] || bad="$bad [md left no dirty bit ($mddirty): $(tail -n 3 "$d/oracle1.out")]"
[ -n "$1" ] && [ "$1" -ge $((mddirty * 256)) ] && [ "$1" -le $((mdsum * 256)) ] && [ "$1" -lt "$2" ] \
    || bad="$bad [uraid resynced '$1' of '$2' sectors for $mddirty-$mdsum dirty 128K chunks: $(echo "$out" | tail -n 3)]"
# shellcheck disable=SC2086
$URAID check $disks 2>&1 | grep -q "mismatch_cnt 0" || bad="$bad [uraid check found mismatches]"
# shellcheck disable=SC2086
"$ORACLE" --snapshot --timeout 300 $args -- - >"$d/oracle2.out" 2>&1 <<'GUEST'
mdadm --assemble /dev/md0 --run /dev/vd? || exit 1
grep 'bitmap:' /proc/mdstat | sed 's/^ */loaded /'
dmesg | grep -E 'bitmap' | sed 's/^/dmesg: /'
echo check > /sys/block/md0/md/sync_action
while [ "$(cat /sys/block/md0/md/sync_action)" != idle ]; do sleep 0.2; done
echo "mismatch_cnt=$(cat /sys/block/md0/md/mismatch_cnt)"
GUEST
grep -q "out of date" "$d/oracle2.out" && bad="$bad [md: uraid's bitmap out of date]"
grep -q "^mismatch_cnt=0$" "$d/oracle2.out" || bad="$bad [md check: $(grep mismatch "$d/oracle2.out" || tail -n 3 "$d/oracle2.out")]"
grep -q "^loaded bitmap: 0/" "$d/oracle2.out" || bad="$bad [md should find uraid's bitmap clean: $(grep -E '^loaded|mdadm' "$d/oracle2.out")]"
if [ -z "$bad" ]; then t_ok "$name ($mddirty dirty bits)"; else t_fail "$name" "$bad"; fi

t_finish
