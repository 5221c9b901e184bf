#!/bin/sh
# Proof against the real Linux md (Debian's kernel in QEMU, ../shared/tools/md-oracle):
#   1. uraid creates and writes RAID-5 and RAID-6 arrays; md assembles them
#      (--snapshot: the images stay untouched), its scrub finds mismatch_cnt 0,
#      and md returns exactly the bytes uraid wrote;
#   2. md creates and writes a RAID-6 array; uraid reads it identically, healthy
#      and with two members missing;
#   3. a uraid rebuild onto a spare, killed halfway: md assembles the members,
#      takes the spare as the slot being recovered from uraid's checkpoint
#      (recovery_offset), finishes the recovery, scrubs with mismatch_cnt 0 and
#      returns the bytes uraid wrote.
# The oracle is built once per machine into $MDORACLE_HOME (outside the repository).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

# the wrapper tests reach the oracle through: a second run only when the guest
# died before its script started (a fake oracle: fails as told, then runs the script)
wrapper_try() { # $1 how the first run fails: early | late | script
    fake=$t_tmp/fake-oracle; : >"$t_tmp/runs"
    cat >"$fake" <<FAKE
#!/bin/sh
echo run >>"$t_tmp/runs"
script=\$(cat)
if [ "\$(wc -l <"$t_tmp/runs")" = 1 ]; then
    case $1 in
    early) echo "md-oracle: accel=tcg total=3.00s" >&2; echo "md-oracle: guest did not report an exit status (qemu rc=134)" >&2; exit 125 ;;
    late) echo "md-oracle: accel=tcg boot=2.00s (guest kernel 1.0s) total=3.00s" >&2; exit 125 ;;
    script) echo "md-oracle: accel=tcg boot=2.00s (guest kernel 1.0s) script=1.00s total=3.00s" >&2; exit 3 ;;
    esac
fi
echo "md-oracle: accel=tcg boot=2.00s (guest kernel 1.0s) total=3.00s" >&2
sh -c "\$script"
FAKE
    chmod +x "$fake"
    out=$(echo 'echo guest-ran' | MDORACLE_REAL=$fake tests/lib/oracle/md-oracle --disk x 2>/dev/null); rc=$?
    echo "$rc $(wc -l <"$t_tmp/runs") $out"
}
got=$(wrapper_try early)
[ "$got" = "0 2 guest-ran" ] && t_ok "oracle wrapper: a guest that died before its script runs once more" ||
    t_fail "oracle wrapper: a guest that died before its script runs once more" "rc runs output: $got"
got=$(wrapper_try late)
[ "$got" = "125 1 " ] && t_ok "oracle wrapper: a guest that died after its script started is reported, not rerun" ||
    t_fail "oracle wrapper: a guest that died after its script started is reported, not rerun" "rc runs output: $got"
got=$(wrapper_try script)
[ "$got" = "3 1 " ] && t_ok "oracle wrapper: the script's own exit status passes through" ||
    t_fail "oracle wrapper: the script's own exit status passes through" "rc runs output: $got"

oracle_ready || { t_finish; exit 1; }

# uraid writes, md reads: $1 level, $2 members, $3 layout, $4 seed
uraid_to_md() {
    level=$1 n=$2 layout=$3 seed=$4
    name="RAID-$level $layout n=$n: uraid writes, md assembles, checks and reads"
    dir="$t_tmp/u$level$layout"; mkdir -p "$dir"
    disks=""; args=""
    i=0
    while [ $i -lt "$n" ]; do
        truncate -s 24M "$dir/d$i.img"; disks="$disks $dir/d$i.img"; args="$args --disk $dir/d$i.img"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    # RAID-6's default (uraid's PPL with partial Q) is one md refuses by design (ppl.sh proves it):
    # here md must run the array, so RAID-6 asks for resync, as mdadm's default for small members
    pol=""; [ "$level" = 6 ] && pol="--consistency-policy resync"
    # shellcheck disable=SC2086
    $URAID create --level "$level" --raid-devices "$n" --chunk 64K --layout "$layout" --name oracle $pol $disks \
        >"$dir/create.log" 2>&1 || { t_fail "$name" "create: $(cat "$dir/create.log")"; return; }
    # shellcheck disable=SC2086
    size_kib=$($URAID detail $disks 2>/dev/null | awk '/Array Size/ {print $4; exit}')
    [ -n "$size_kib" ] || { t_fail "$name" "no array size from uraid detail"; return; }
    size=$((size_kib * 1024))
    # shellcheck disable=SC2086
    "$PATTERN" -s "$seed" -n "$size" | $URAID write $disks 2>"$dir/write.log" \
        || { t_fail "$name" "write: $(cat "$dir/write.log")"; return; }
    want=$("$PATTERN" -s "$seed" -n "$size" | sha256sum | cut -d' ' -f1)
    # shellcheck disable=SC2086
    before=$(cat $disks | sha256sum)
    # shellcheck disable=SC2086
    got=$("$ORACLE" --snapshot --timeout 300 $args -- - 2>"$dir/oracle.err" <<'GUEST' | tee "$dir/oracle.out" | sha256sum | cut -d' ' -f1
exec 2>/dev/console
mdadm --assemble /dev/md0 --run /dev/vd? >&2 || exit 1
echo check > /sys/block/md0/md/sync_action
while [ "$(cat /sys/block/md0/md/sync_action)" != idle ]; do sleep 0.2; done
cat /sys/block/md0/md/mismatch_cnt > /tmp/mm
[ "$(cat /tmp/mm)" = 0 ] || { echo "mismatch_cnt=$(cat /tmp/mm)" >&2; exit 3; }
dd if=/dev/md0 bs=1M 2>/dev/null
GUEST
)
    rc=$?
    if [ "$got" = "$want" ]; then
        t_ok "$name"
    else
        t_fail "$name" "md returned sha256 $got, uraid wrote $want (oracle rc $rc; $(tail -3 "$dir/oracle.err"))"
    fi
    # the images were not touched by md (--snapshot): byte for byte (that
    # uraid detail still opens them, all this checked before, says nothing
    # of what md wrote)
    # shellcheck disable=SC2086
    [ "$(cat $disks | sha256sum)" = "$before" ] && t_ok "$name: md left the members byte for byte as they were" \
        || t_fail "$name: md left the members byte for byte as they were" "a member changed under --snapshot"
    # shellcheck disable=SC2086
    $URAID detail $disks >/dev/null 2>&1 || t_fail "$name: members still open in uraid after md ran"
}

uraid_to_md 5 4 left-symmetric 42
uraid_to_md 6 6 left-symmetric 43
uraid_to_md 6 5 right-asymmetric 44

# md writes, uraid reads
name="RAID-6 created and written by md, read by uraid (healthy and two missing)"
dir="$t_tmp/md6"; mkdir -p "$dir"
args=""; disks=""
for i in 0 1 2 3 4 5; do
    truncate -s 24M "$dir/d$i.img"; args="$args --disk $dir/d$i.img"; disks="$disks $dir/d$i.img"
done
# shellcheck disable=SC2086
"$ORACLE" --timeout 300 $args -- - >"$dir/oracle.out" 2>&1 <<'GUEST'
mdadm --create /dev/md0 --level=6 --raid-devices=6 --chunk=64 --metadata=1.2 --assume-clean --run /dev/vd[a-f] || exit 1
size=$(blockdev --getsize64 /dev/md0)
mdpattern -s 77 -n $size > /dev/md0
sync
echo "size=$size"
mdadm --stop /dev/md0
GUEST
size=$(sed -n 's/^size=//p' "$dir/oracle.out")
if [ -z "$size" ]; then
    t_fail "$name" "md did not create the array: $(tail -5 "$dir/oracle.out")"
else
    want=$("$PATTERN" -s 77 -n "$size" | sha256sum | cut -d' ' -f1)
    # shellcheck disable=SC2086
    got=$($URAID cat $disks | sha256sum | cut -d' ' -f1)
    got2=$($URAID cat "$dir/d5.img" "$dir/d0.img" "$dir/d3.img" "$dir/d2.img" | sha256sum | cut -d' ' -f1)
    if [ "$got" = "$want" ] && [ "$got2" = "$want" ]; then
        t_ok "$name"
    else
        t_fail "$name" "want $want, healthy $got, two missing $got2"
    fi
fi

# uraid's rebuild checkpoint, resumed by md
name="RAID-6: a uraid rebuild killed halfway is resumed by md from recovery_offset"
dir="$t_tmp/rb"; mkdir -p "$dir"
for i in 0 1 2 3 4 5 6; do truncate -s 24M "$dir/d$i.img"; done
# shellcheck disable=SC2086
if $URAID create --level 6 --raid-devices 6 --spare-devices 1 --chunk 64K --name oracle --consistency-policy resync \
    "$dir"/d0.img "$dir"/d1.img "$dir"/d2.img "$dir"/d3.img "$dir"/d4.img "$dir"/d5.img "$dir"/d6.img \
    >"$dir/create.log" 2>&1; then
    left="$dir/d0.img $dir/d1.img $dir/d3.img $dir/d4.img $dir/d5.img $dir/d6.img"
    # shellcheck disable=SC2086
    size=$(($($URAID detail $left 2>/dev/null | awk '/Array Size/ {print $4; exit}') * 1024))
    # shellcheck disable=SC2086
    "$PATTERN" -s 91 -n "$size" | $URAID write $left 2>"$dir/write.log"
    want=$("$PATTERN" -s 91 -n "$size" | sha256sum | cut -d' ' -f1)
    # member 2 is gone; the rebuild onto d6 is slowed down and killed after its first checkpoint
    # shellcheck disable=SC2086
    $URAID rebuild $left --member-layer throttle=8M >"$dir/rebuild.log" 2>&1 &
    rpid=$!
    n=0 off=""
    while [ $n -lt 100 ]; do
        sleep 0.1; n=$((n + 1))
        off=$(mdadm --examine "$dir/d6.img" 2>/dev/null | sed -n 's/.*Recovery Offset : \([0-9]*\) sectors.*/\1/p')
        [ -n "$off" ] && [ "$off" -gt 0 ] && break
    done
    kill -9 $rpid 2>/dev/null
    wait $rpid 2>/dev/null
    off=$(mdadm --examine "$dir/d6.img" 2>/dev/null | sed -n 's/.*Recovery Offset : \([0-9]*\) sectors.*/\1/p')
    args=""
    for f in $left; do args="$args --disk $f"; done
    # shellcheck disable=SC2086
    got=$("$ORACLE" --snapshot --timeout 300 --console "$dir/console.log" $args -- - 2>"$dir/oracle.err" <<'GUEST' | tee "$dir/oracle.out" | sha256sum | cut -d' ' -f1
exec 2>/dev/console
# read-only first: md has loaded the spare's recovery_offset but not moved on
mdadm --assemble /dev/md0 --run --readonly /dev/vd? >&2 || exit 1
echo "recovery_start=$(cat /sys/block/md0/md/dev-vdf/recovery_start)" >/dev/console
mdadm --readwrite /dev/md0 >&2 || exit 1
while [ "$(cat /sys/block/md0/md/sync_action)" != idle ] || ! grep -q '\[UUUUUU\]' /proc/mdstat; do sleep 0.2; done
echo check > /sys/block/md0/md/sync_action
while [ "$(cat /sys/block/md0/md/sync_action)" != idle ]; do sleep 0.2; done
[ "$(cat /sys/block/md0/md/mismatch_cnt)" = 0 ] || { echo "mismatch_cnt=$(cat /sys/block/md0/md/mismatch_cnt)" >&2; exit 3; }
dd if=/dev/md0 bs=1M 2>/dev/null
GUEST
)
    if [ -z "$off" ] || [ "$off" -eq 0 ]; then
        t_fail "$name" "no checkpoint before the kill: $(cat "$dir/rebuild.log")"
    elif [ "$got" = "$want" ]; then
        t_ok "$name (checkpoint at sector $off)"
        # md took the checkpoint: the new member's recovery_start is uraid's recovery_offset
        tr -d '\r' <"$dir/console.log" | grep -q "^recovery_start=$off\$" \
            && t_ok "md resumed the recovery at uraid's checkpoint (recovery_start $off)" \
            || t_fail "md's recovery_start" "$(grep -a "recovery_start\|md0" "$dir/console.log" | head -5)"
    else
        t_fail "$name" "md returned $got, uraid wrote $want ($(tail -5 "$dir/oracle.err"))"
    fi
else
    t_fail "$name" "create: $(cat "$dir/create.log")"
fi

t_finish
