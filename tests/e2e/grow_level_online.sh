#!/bin/sh
# --level on a served array (issue 12): arrays served over NBD (uraid serve,
# nbdkit's socket) change level through their control socket (`uraid grow
# --control PATH --level L ...`) while a client writes and reads back
# through NBD (qemu-io patterns, each read back with -P):
#   1. refusals first, each one line and every member byte for byte as
#      before (sha256): --level 6 on an array with a partial parity log
#      (md reshapes none), --level 6 without a new member, with --raid-devices
#      6, --level 1 on 4 members (md takes only a RAID-5 of 2 over as
#      RAID-1) and --level 0 (a takeover uraid makes only offline);
#      then RAID-5 4 -> RAID-6 5 in mdadm's default form (the takeover and
#      the restripe to left-symmetric as one reshape, Q following it), a
#      second request refused while it runs, `uraid status` showing md's
#      reshape line, writes going on;
#   2. that RAID-6 -> RAID-5 (a restripe to left-symmetric-6, then Q
#      dropped: the fifth member a spare), writes going on;
#   3. RAID-5 -> RAID-6 --layout preserve (the takeover; Q recovered by the
#      recovery job, `uraid status` showing md's recovery line), writes going
#      on, the server killed with -9 during the recovery and restarted (it
#      carries the recovery on); then RAID-6 (-6 layout) -> RAID-5 (the
#      takeover);
#   4. RAID-4 -> RAID-5 (parity-last: the takeover), RAID-5 -> RAID-4
#      (takeover), RAID-4 -> RAID-5 left-symmetric (restripe), RAID-5
#      left-symmetric -> RAID-4 (restripe, then the takeover), writes going on;
#   5. kill -9 of the server in the middle of an online RAID-5 -> 6 restripe
#      (a write in flight): mdadm --examine shows the recorded position and
#      level 6, the restarted server carries the reshape on by itself, and
#      on a copy of the killed state so does the offline uraid grow --continue;
#   5b. a RAID-1 of 2 taken over as a RAID-5 of 2 and back (md's
#      raid5_takeover_raid1, raid1_takeover: no data moves), refusals
#      first, writes at each level, the server killed with -9 right after
#      a switch with a write in flight and restarted (its resync runs); the
#      members' data areas equal, then the offline grow takes it back to
#      RAID-1 (grow_md.sh l has md assemble such arrays);
#   5c. a RAID-5 parity-last of 4 taken over as a RAID-0 of 3 (md's
#      raid0_takeover_raid45: the parity member a spare), refusals first,
#      writes, kill -9 with a write in flight, served again with every
#      member; and a RAID-4 missing its parity member taken over;
#   5d. a RAID-0 of 3 taken over as a RAID-5 parity-last of 4, a new member
#      recovered into the parity slot while writes go on, the server
#      killed with -9 in that recovery and restarted without --force (it
#      carries the recovery on); and a RAID-0 taken over as a RAID-4 of 4
#      missing its parity;
#   6. the real md (../shared/tools/md-oracle): it assembles the results of
#      1 and 3 and a copy of 5 taken right after the kill (md carries that
#      reshape on), reads every byte as uraid served it, its check finds
#      mismatch_cnt 0, and its sysfs says raid6, left-symmetric, 5 disks.
# After every change: the export is the data and every write made
# meanwhile, `uraid check` finds mismatch_cnt 0, mdadm --examine shows the
# new level, layout and raid devices and no reshape. Seeded (printed).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

PLUGIN=build/nbdkit-uraid-plugin.so
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null
    for p in $(pgrep -f "nbdkit.*$t_tmp" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$t_tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
for tool in nbdkit nbdinfo nbdcopy qemu-io mdadm; do
    command -v "$tool" >/dev/null 2>&1 || { t_fail "$tool installed (run scripts/deps.sh)"; t_finish; exit 1; }
done
[ -f "$PLUGIN" ] || { t_fail "$PLUGIN built"; t_finish; exit 1; }

seed=${URAID_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "grow_level_online: seed $seed (replay with URAID_TEST_SEED=$seed)"
rounds=10
[ -n "${URAID_TEST_LONG:-}" ] && rounds=40

sock=$t_tmp/nbd.sock ctl=$t_tmp/ctl.sock
uri="nbd+unix:///?socket=$sock"

# new_array DIR LEVEL [LAYOUT [POLICY]]: 4 members of 16 MiB (64K chunk, resync policy) and m4, m5 to add; the data written
new_array() {
    d=$1 policy=${4:-resync}
    rm -rf "$d"; mkdir -p "$d"
    M=""
    for i in 0 1 2 3; do truncate -s 16M "$d/m$i.img"; M="$M $d/m$i.img"; done
    truncate -s 16M "$d/m4.img" "$d/m5.img"
    lay=""
    [ -n "${3:-}" ] && lay="--layout $3"
    # shellcheck disable=SC2086
    $URAID create --level "$2" --raid-devices 4 --chunk 64K --assume-clean --consistency-policy "$policy" $lay $M >/dev/null 2>&1 ||
        { t_fail "create RAID-$2 in $d"; return 1; }
    # shellcheck disable=SC2086
    SZ=$(( $($URAID detail $M | awk '/Array Size :/ {print $4}') * 1024 ))
    head -c "$SZ" /dev/urandom >"$d/model"
    # shellcheck disable=SC2086
    $URAID write $M <"$d/model" || t_fail "write the data in $d"
}

start_server() { # ARGS...
    # shellcheck disable=SC2086
    $URAID serve $M --socket "$sock" --control "$ctl" "$@" 2>>"$t_tmp/server.err" &
    server_pid=$!
    n=0
    while ! timeout 5 nbdinfo --size "$uri" >/dev/null 2>&1; do
        n=$((n + 1))
        { [ $n -ge 60 ] || ! kill -0 "$server_pid" 2>/dev/null; } && return 1
        sleep 0.25
    done
}

stop_server() {
    kill -TERM "$server_pid"
    wait "$server_pid"
    rc=$?
    server_pid=""
    return $rc
}

kill_server() {
    for p in $(pgrep -P "$server_pid"); do kill -KILL "$p"; done
    kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=""
}

bg_line() { timeout 10 $URAID status --control "$ctl" 2>&1 | tail -n 1; }

wait_for() { # PATTERN SECONDS: the status's last line matches
    n=0
    while [ $n -lt $(($2 * 4)) ]; do
        case "$(bg_line)" in *$1*) return 0 ;; esac
        sleep 0.25; n=$((n + 1))
    done
    return 1
}

# one_write N: a pattern byte at a random 4 KiB-aligned range, in the model too, read back with qemu-io's check
one_write() {
    r=$(awk -v s="$seed" -v n="$1" -v sz="$SZ" 'BEGIN { srand(s * 1000 + n);
        len = (1 + int(rand() * 64)) * 4096; off = int(rand() * (sz - len) / 4096) * 4096;
        printf "%d %d %d\n", off, len, 1 + int(rand() * 254) }')
    off=${r%% *}; rest=${r#* }; len=${rest%% *}; pat=${rest#* }
    qemu-io -f raw -c "write -P $pat $off $len" "$uri" >"$t_tmp/qio.out" 2>&1 || return 1
    head -c "$len" /dev/zero | tr '\000' "\\$(printf '%03o' "$pat")" |
        dd of="$d/model" bs=4096 seek=$((off / 4096)) conv=notrunc status=none
    qemu-io -f raw -c "read -P $pat $off $len" "$uri" >"$t_tmp/qio.out" 2>&1 || return 1
    ! grep -q "Pattern verification failed" "$t_tmp/qio.out"
}

# writes NAME BASE WHAT: $rounds writes, counting those made while the status line shows WHAT
writes() {
    bad=0 i=0 during=0
    while [ $i -lt "$rounds" ]; do
        case "$(bg_line)" in *"$3 ="*) during=$((during + 1)) ;; esac
        one_write "$(($2 + i))" || bad=$((bad + 1))
        i=$((i + 1))
    done
    [ $bad -eq 0 ] && [ $during -ge 3 ] && t_ok "$1: $rounds writes through NBD, each read back, $during while the $3 ran" ||
        t_fail "$1: writes during the $3" "$bad of $rounds failed, $during during: $(cat "$t_tmp/qio.out")"
}

export_matches() { # NAME
    timeout 60 nbdcopy "$uri" "$t_tmp/out" || { t_fail "$1: nbdcopy the export"; return; }
    want=$(sha256sum <"$d/model" | cut -d' ' -f1) got=$(sha256sum <"$t_tmp/out" | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "$1: the export is the data and every write made meanwhile" ||
        t_fail "$1: the export is the data and every write made meanwhile" "sha $got, want $want"
    rm -f "$t_tmp/out"
}

members_sha() { for f in $M "$d/m4.img" "$d/m5.img"; do sha256sum "$f"; done; }

refused() { # NAME GROW-ARGS...: one line, exit 1, no member byte changed
    name=$1; shift
    before=$(members_sha)
    out=$(timeout 20 $URAID grow --control "$ctl" "$@" 2>&1)
    rc=$?
    [ "$rc" -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && [ "$before" = "$(members_sha)" ] &&
        t_ok "refused, nothing written: $name ($out)" || t_fail "refused, nothing written: $name" "rc $rc: $out"
}

# settled NAME LEVEL LAYOUT DEVICES MEMBERS...: (served array stopped) check and mdadm --examine
settled() {
    name=$1 lv=$2 ly=$3 nd=$4; shift 4
    out=$($URAID check "$@" 2>&1)
    case "$out" in *"mismatch_cnt 0"*) t_ok "$name: uraid check finds mismatch_cnt 0" ;;
        *) t_fail "$name: uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -n 1)" ;; esac
    x=$(mdadm --examine "$1" 2>&1)
    if echo "$x" | grep -q "Raid Level : raid$lv\$" && echo "$x" | grep -q "Raid Devices : $nd\$" &&
        { [ "$lv" = 4 ] || echo "$x" | grep -q "Layout : $ly\$"; } && ! echo "$x" | grep -q "Reshape"; then
        t_ok "$name: mdadm --examine: raid$lv, $ly, $nd devices, no reshape"
    else
        t_fail "$name: mdadm --examine: raid$lv, $ly, $nd devices, no reshape" \
            "$(echo "$x" | grep -i 'level\|layout\|devices\|reshape' | tr '\n' ' ')"
    fi
}

# change NAME WHAT FINISHED GROW-ARGS...: the level change started while serving, writes, the end, the export
change() {
    name=$1 what=$2 fin=$3; shift 3
    out=$(timeout 20 $URAID grow --control "$ctl" "$@" 2>&1)
    case "$out" in *"level change"*started*) t_ok "$name: uraid grow --control $* ($out)" ;;
        *) t_fail "$name: uraid grow --control $*" "$out" ;; esac
    [ -n "$what" ] && writes "$name" "$((seq * 100))" "$what"
    seq=$((seq + 1))
    [ -z "$fin" ] || { wait_for "$fin" 120 && t_ok "$name: $(bg_line)" || t_fail "$name: $fin" "$(bg_line)"; }
    export_matches "$name"
}
seq=1

# ---- 1. RAID-5 -> RAID-6, mdadm's default form (takeover + restripe) ------------------------------
d=$t_tmp/l
new_array "$d" 5 "" ppl
start_server || { t_fail "serve" "$(cat "$t_tmp/server.err")"; t_finish; exit 1; }
refused "--level 6 on an array with a partial parity log" --level 6 --add "$d/m4.img"
stop_server || t_fail "1: the PPL array's server stops cleanly"
d=$t_tmp/a
new_array "$d" 5
start_server --speed-limit 1M || { t_fail "serve" "$(cat "$t_tmp/server.err")"; t_finish; exit 1; }
refused "--level 6 without a new member" --level 6
refused "--level 6 --raid-devices 6 with one new member" --level 6 --raid-devices 6 --add "$d/m4.img"
refused "--level 6 with two new members" --level 6 --add "$d/m4.img" "$d/m5.img"
refused "--level 1 on a RAID-5 of 4 (md takes only a RAID-5 of 2 over as RAID-1)" --level 1
refused "--level 0 on a left-symmetric RAID-5 (md takes only parity-last over)" --level 0
refused "--level 6 --layout bogus" --level 6 --layout bogus --add "$d/m4.img"
out=$(timeout 20 $URAID grow --control "$ctl" --level 6 --raid-devices 5 --add "$d/m4.img" 2>&1)
case "$out" in *"level change RAID-5 -> RAID-6 started (5 members now, restriping)"*) t_ok "1: $out" ;;
    *) t_fail "1: uraid grow --control --level 6 --raid-devices 5 --add NEW" "$out" ;; esac
out=$(timeout 20 $URAID grow --control "$ctl" --level 6 --raid-devices 6 --add "$d/m5.img" 2>&1)
case "$out" in *"already in progress"*) t_ok "1: a second request is refused: $out" ;;
    *) t_fail "1: a second request is refused" "$out" ;; esac
line=""
wait_for "finish=" 20 && line=$(bg_line)
echo "$line" | grep -Eq 'reshape = [0-9]+\.[0-9]% \([0-9]+/[0-9]+\) finish=[0-9.]+min speed=[0-9]+K/sec' &&
    t_ok "1: uraid status: $line" || t_fail "1: uraid status shows md's reshape line" "$(bg_line)"
writes "1" 100 reshape
wait_for "reshape finished" 120 && t_ok "1: $(bg_line)" || t_fail "1: the reshape finishes" "$(bg_line)"
export_matches "1: RAID-5 -> RAID-6"
stop_server || t_fail "1: the server stops cleanly" "$(tail -n 3 "$t_tmp/server.err")"
M="$M $d/m4.img"
# shellcheck disable=SC2086
settled "1: RAID-5 -> RAID-6" 6 left-symmetric 5 $M
x=$(mdadm --examine "$d/m4.img" 2>&1)
echo "$x" | grep -q "Device Role : Active device 4" && ! echo "$x" | grep -q "Recovery Offset" &&
    t_ok "1: the new member is active device 4, in sync" || t_fail "1: the new member in sync" "$(echo "$x" | grep -i 'role\|recovery')"
ORA=$t_tmp/ora1 ORA_SZ=$SZ
mkdir -p "$ORA"
for f in $M; do cp "$f" "$ORA/"; done
cp "$d/model" "$ORA/model"

# ---- 2. that RAID-6 -> RAID-5: restripe to the -6 layout, then Q dropped ----------------------------
start_server --speed-limit 1M || t_fail "2: serve" "$(tail -n 3 "$t_tmp/server.err")"
change "2: RAID-6 -> RAID-5" reshape "reshape finished" --level 5
stop_server || t_fail "2: the server stops cleanly"
# shellcheck disable=SC2086
settled "2: RAID-6 -> RAID-5" 5 left-symmetric 4 $M
mdadm --examine "$d/m4.img" 2>&1 | grep -q "Device Role : spare" && t_ok "2: the Q member is a spare" ||
    t_fail "2: the Q member is a spare" "$(mdadm --examine "$d/m4.img" 2>&1 | grep -i role)"

# ---- 3. RAID-5 -> RAID-6 preserve (takeover, Q recovered; killed once), and back --------------------
d=$t_tmp/p
new_array "$d" 5
start_server --speed-limit 1M || t_fail "3: serve" "$(tail -n 3 "$t_tmp/server.err")"
out=$(timeout 20 $URAID grow --control "$ctl" --level 6 --layout preserve --add "$d/m4.img" 2>&1)
case "$out" in *"level change RAID-5 -> RAID-6 started (5 members now)"*) t_ok "3: $out" ;;
    *) t_fail "3: uraid grow --control --level 6 --layout preserve --add NEW" "$out" ;; esac
line=""
wait_for "finish=" 20 && line=$(bg_line)
echo "$line" | grep -Eq 'recovery = [0-9]+\.[0-9]% \([0-9]+/[0-9]+\) finish=[0-9.]+min speed=[0-9]+K/sec' &&
    t_ok "3: uraid status: $line" || t_fail "3: uraid status shows md's recovery line" "$(bg_line)"
writes "3: RAID-5 -> RAID-6 preserve" 300 recovery
kill_server
M="$M $d/m4.img"
x=$(mdadm --examine "$d/m4.img" 2>&1)
echo "$x" | grep -q "Recovery Offset" && echo "$x" | grep -q "Raid Level : raid6" &&
    t_ok "3: killed during Q's recovery: mdadm --examine: raid6, $(echo "$x" | grep 'Recovery Offset' | tr -s ' ')" ||
    t_fail "3: killed during Q's recovery" "$(echo "$x" | grep -i 'level\|recovery\|state' | tr '\n' ' ')"
start_server || t_fail "3: serve after the kill" "$(tail -n 3 "$t_tmp/server.err")"
wait_for "recovery finished" 120 && t_ok "3: restarted, the recovery carried on: $(bg_line)" ||
    t_fail "3: the restarted server carries the recovery on" "$(bg_line)"
export_matches "3: RAID-5 -> RAID-6 preserve, killed and carried on"
stop_server || t_fail "3: the server stops cleanly"
# shellcheck disable=SC2086
settled "3: RAID-5 -> RAID-6 preserve" 6 left-symmetric-6 5 $M
ORP=$t_tmp/ora3
mkdir -p "$ORP"
for f in $M; do cp "$f" "$ORP/"; done
cp "$d/model" "$ORP/model"
start_server --speed-limit 1M || t_fail "3: serve again" "$(tail -n 3 "$t_tmp/server.err")"
change "3: RAID-6 (-6 layout) -> RAID-5" "" "" --level 5
one_write 3000 && t_ok "3: a write after the takeover, read back" || t_fail "3: a write after the takeover"
export_matches "3: after the takeover and a write"
stop_server || t_fail "3: the server stops cleanly"
# shellcheck disable=SC2086
settled "3: RAID-6 (-6 layout) -> RAID-5" 5 left-symmetric 4 $M

# ---- 4. RAID-4 <-> RAID-5 ----------------------------------------------------------------------------
d=$t_tmp/f
new_array "$d" 4
start_server --speed-limit 1M || t_fail "4: serve" "$(tail -n 3 "$t_tmp/server.err")"
change "4: RAID-4 -> RAID-5 parity-last" "" "" --level 5
change "4: RAID-5 parity-last -> RAID-4" "" "" --level 4
change "4: RAID-4 -> RAID-5 left-symmetric" reshape "reshape finished" --level 5 --layout left-symmetric
stop_server || t_fail "4: the server stops cleanly"
# shellcheck disable=SC2086
settled "4: RAID-4 -> RAID-5 left-symmetric" 5 left-symmetric 4 $M
start_server --speed-limit 1M || t_fail "4: serve again" "$(tail -n 3 "$t_tmp/server.err")"
change "4: RAID-5 left-symmetric -> RAID-4" reshape "reshape finished" --level 4
stop_server || t_fail "4: the server stops cleanly"
# shellcheck disable=SC2086
settled "4: RAID-5 left-symmetric -> RAID-4" 4 parity-last 4 $M

# ---- 5. kill -9 in the middle of an online RAID-5 -> 6 restripe ---------------------------------------
d=$t_tmp/k
new_array "$d" 5
start_server --speed-limit 1M || t_fail "5: serve" "$(tail -n 3 "$t_tmp/server.err")"
out=$(timeout 20 $URAID grow --control "$ctl" --level 6 --add "$d/m4.img" 2>&1)
case "$out" in *started*) t_ok "5: $out" ;; *) t_fail "5: grow --control --level 6" "$out" ;; esac
i=0
ms=$(awk -v s="$seed" 'BEGIN { srand(s); print 2 + int(rand() * 4) }')
while [ $i -lt "$ms" ]; do one_write "$((5000 + i))" || t_fail "5: write $i"; i=$((i + 1)); done
qemu-io -f raw -c "write -P 7 0 4M" "$uri" >/dev/null 2>&1 &
wpid=$!
sleep 0.3
kill_server
inflight=""
if wait "$wpid"; then
    head -c 4194304 /dev/zero | tr '\000' '\007' | dd of="$d/model" conv=notrunc status=none
    t_ok "5: the write in flight was acknowledged before the kill"
else
    t_ok "5: the write in flight was cut off by the kill"
    inflight=1
fi
x=$(mdadm --examine "$d/m0.img" 2>&1)
pos=$(echo "$x" | sed -n "s/^ *Reshape pos'n : //p")
[ -n "$pos" ] && echo "$x" | grep -q "Raid Level : raid6" && t_ok "5: mdadm --examine: raid6, the reshape at $pos" ||
    t_fail "5: mdadm --examine shows the reshape" "$(echo "$x" | grep -i 'level\|reshape' | tr '\n' ' ')"
M="$M $d/m4.img"
ORK=$t_tmp/ora5 CONT=$t_tmp/cont5
mkdir -p "$ORK" "$CONT"
for f in $M; do cp "$f" "$ORK/"; cp "$f" "$CONT/"; done
start_server || { t_fail "5: serve again" "$(tail -n 3 "$t_tmp/server.err")"; }
wait_for "resync finished" 120 && t_ok "5: restarted, the reshape carried on, then the resync: $(bg_line)" ||
    t_fail "5: the restarted server carries the reshape on" "$(bg_line)"
if [ -n "$inflight" ]; then
    # a cut-off write may have landed in part: take what the array says for its range, nothing else
    timeout 30 nbdcopy "$uri" "$t_tmp/now"
    dd if="$t_tmp/now" of="$d/model" bs=1M count=4 conv=notrunc status=none
    rm -f "$t_tmp/now"
fi
export_matches "5: after the kill"
stop_server || t_fail "5: the server stops cleanly"
# shellcheck disable=SC2086
settled "5: killed RAID-5 -> RAID-6, carried on" 6 left-symmetric 5 $M
cp "$d/model" "$ORK/model"
# the same killed state carried on offline
MC=$(for f in $M; do printf ' %s/%s' "$CONT" "$(basename "$f")"; done)
# shellcheck disable=SC2086
out=$($URAID grow --continue $MC 2>&1)
case "$out" in *"carried on and complete: 5 members"*) t_ok "5: offline, uraid grow --continue finishes the killed one" ;;
    *) t_fail "5: uraid grow --continue finishes the killed one" "$out" ;; esac
# shellcheck disable=SC2086
got=$($URAID cat $MC | sha256sum | cut -d' ' -f1) want=$(sha256sum <"$d/model" | cut -d' ' -f1)
[ "$got" = "$want" ] && t_ok "5: offline: every acknowledged byte" || t_fail "5: offline: every acknowledged byte" "$got"
# shellcheck disable=SC2086
settled "5: killed, carried on offline" 6 left-symmetric 5 $MC

# ---- 5b. RAID-1 of 2 <-> RAID-5 of 2 (md's raid5_takeover_raid1, raid1_takeover) -----------------------
d=$t_tmp/m
rm -rf "$d"; mkdir -p "$d"
truncate -s 16M "$d/m0.img" "$d/m1.img" "$d/m2.img" "$d/m3.img" "$d/m4.img" "$d/m5.img"
M="$d/m0.img $d/m1.img"
# shellcheck disable=SC2086
$URAID create --level 1 --raid-devices 2 --assume-clean $M >/dev/null 2>&1 || t_fail "5b: create RAID-1 of 2"
# shellcheck disable=SC2086
SZ=$(( $($URAID detail $M | awk '/Array Size :/ {print $4}') * 1024 ))
head -c "$SZ" /dev/urandom >"$d/model"
# shellcheck disable=SC2086
$URAID write $M <"$d/model" || t_fail "5b: write the data"
start_server || t_fail "5b: serve" "$(tail -n 3 "$t_tmp/server.err")"
refused "5b: --level 5 --raid-devices 3" --level 5 --raid-devices 3
refused "5b: --level 5 with a new member" --level 5 --add "$d/m2.img"
refused "5b: --level 5 --layout right-asymmetric (md's takeover is left-symmetric)" --level 5 --layout right-asymmetric
refused "5b: --level 5 --chunk 8M (does not divide the size)" --level 5 --chunk 8M
refused "5b: --level 0" --level 0
change "5b: RAID-1 -> RAID-5" "" "" --level 5
x=$(bg_line; timeout 10 $URAID status --control "$ctl" 2>&1)
case "$x" in *raid5*) t_ok "5b: the server's status says raid5" ;; *) t_fail "5b: the server's status says raid5" "$x" ;; esac
i=0; while [ $i -lt "$rounds" ]; do one_write "$((7000 + i))" || t_fail "5b: write $i as RAID-5"; i=$((i + 1)); done
export_matches "5b: writes as RAID-5"
refused "5b: --level 1 --layout left-symmetric" --level 1 --layout left-symmetric
change "5b: RAID-5 -> RAID-1" "" "" --level 1
i=0; while [ $i -lt "$rounds" ]; do one_write "$((7100 + i))" || t_fail "5b: write $i as RAID-1"; i=$((i + 1)); done
export_matches "5b: writes as RAID-1"
change "5b: RAID-1 -> RAID-5 again" "" "" --level 5
# a kill -9 right after the switch, a write in flight: the restarted server serves the RAID-5
qemu-io -f raw -c "write -P 9 0 4M" "$uri" >/dev/null 2>&1 &
wpid=$!
sleep 0.3
kill_server
if wait "$wpid"; then
    head -c 4194304 /dev/zero | tr '\000' '\011' | dd of="$d/model" conv=notrunc status=none
    t_ok "5b: the write in flight was acknowledged before the kill"
else
    t_ok "5b: the write in flight was cut off by the kill"
fi
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Raid Level : raid5" && echo "$x" | grep -q "Raid Devices : 2" && echo "$x" | grep -q "Layout : left-symmetric" &&
    t_ok "5b: mdadm --examine after the kill: raid5, left-symmetric, 2 devices" ||
    t_fail "5b: mdadm --examine after the kill" "$(echo "$x" | grep -i 'level\|layout\|devices\|chunk' | tr '\n' ' ')"
start_server || t_fail "5b: serve after the kill" "$(tail -n 3 "$t_tmp/server.err")"
wait_for "resync finished" 60 && t_ok "5b: restarted after the kill, resynced: $(bg_line)" ||
    t_fail "5b: restarted after the kill, resynced" "$(bg_line)"
# a cut-off write may have landed in part: its range is what the array says, the rest the model
timeout 30 nbdcopy "$uri" "$t_tmp/now"
dd if="$t_tmp/now" of="$d/model" bs=1M count=4 conv=notrunc status=none
rm -f "$t_tmp/now"
export_matches "5b: after the kill"
stop_server || t_fail "5b: the server stops cleanly"
# shellcheck disable=SC2086
settled "5b: RAID-1 -> 5 -> 1 -> 5 online, killed" 5 left-symmetric 2 $M
doff=$(mdadm --examine "$d/m0.img" 2>&1 | sed -n 's/^ *Data Offset : \([0-9]*\) sectors.*/\1/p')
[ -n "$doff" ] && cmp -s -n "$SZ" -i "$((doff * 512))" "$d/m0.img" "$d/m1.img" &&
    t_ok "5b: the two members' data areas hold the same bytes (a 2-member RAID-5's parity is its data)" ||
    t_fail "5b: the two members' data areas hold the same bytes" "data offset '$doff'"
# the offline grow takes the array back to RAID-1
# shellcheck disable=SC2086
out=$($URAID grow $M --level 1 2>&1) && t_ok "5b: offline uraid grow --level 1 after ($out)" || t_fail "5b: offline --level 1" "$out"
# shellcheck disable=SC2086
got=$($URAID cat $M | sha256sum | cut -d' ' -f1)
[ "$got" = "$(sha256sum <"$d/model" | cut -d' ' -f1)" ] && t_ok "5b: the offline RAID-1 reads every byte" ||
    t_fail "5b: the offline RAID-1 reads every byte" "$got"

# ---- 5c. RAID-4 / RAID-5 parity-last -> RAID-0 (md's raid0_takeover_raid45) -----------------------------
d=$t_tmp/z
new_array "$d" 5 parity-last
start_server || t_fail "5c: serve" "$(tail -n 3 "$t_tmp/server.err")"
refused "5c: --level 0 --raid-devices 4" --level 0 --raid-devices 4
refused "5c: --level 0 with a new member" --level 0 --add "$d/m4.img"
refused "5c: --level 0 --chunk 128K" --level 0 --chunk 128K
change "5c: RAID-5 parity-last of 4 -> RAID-0 of 3" "" "" --level 0
i=0; while [ $i -lt "$rounds" ]; do one_write "$((7200 + i))" || t_fail "5c: write $i as RAID-0"; i=$((i + 1)); done
export_matches "5c: writes as RAID-0"
qemu-io -f raw -c "write -P 11 0 4M" "$uri" >/dev/null 2>&1 &
wpid=$!
sleep 0.3
kill_server
if wait "$wpid"; then
    head -c 4194304 /dev/zero | tr '\000' '\013' | dd of="$d/model" conv=notrunc status=none
    t_ok "5c: the write in flight was acknowledged before the kill"
else
    t_ok "5c: the write in flight was cut off by the kill"
fi
x=$(mdadm --examine "$d/m0.img" 2>&1) y=$(mdadm --examine "$d/m3.img" 2>&1)
echo "$x" | grep -q "Raid Level : raid0" && echo "$x" | grep -q "Raid Devices : 3" && echo "$y" | grep -q "Device Role : spare" &&
    t_ok "5c: mdadm --examine: raid0 of 3, the parity member a spare" ||
    t_fail "5c: mdadm --examine: raid0 of 3, the parity member a spare" "$(echo "$x$y" | grep -i 'level\|devices\|role' | tr '\n' ' ')"
start_server || t_fail "5c: serve after the kill" "$(tail -n 3 "$t_tmp/server.err")"
timeout 30 nbdcopy "$uri" "$t_tmp/now"
dd if="$t_tmp/now" of="$d/model" bs=1M count=4 conv=notrunc status=none
rm -f "$t_tmp/now"
export_matches "5c: after the kill, served with every member"
stop_server || t_fail "5c: the server stops cleanly"
d=$t_tmp/z4
rm -rf "$d"; mkdir -p "$d"
for i in 0 1 2 3 4 5; do truncate -s 16M "$d/m$i.img"; done
M="$d/m0.img $d/m1.img $d/m2.img"
# shellcheck disable=SC2086
$URAID create --level 4 --raid-devices 4 --chunk 64K --assume-clean --consistency-policy resync $M missing >/dev/null 2>&1 ||
    t_fail "5c: create RAID-4 missing its parity"
# shellcheck disable=SC2086
SZ=$(( $($URAID detail $M | awk '/Array Size :/ {print $4}') * 1024 ))
head -c "$SZ" /dev/urandom >"$d/model"
# shellcheck disable=SC2086
$URAID write $M <"$d/model" || t_fail "5c: write the data"
start_server || t_fail "5c: serve the RAID-4" "$(tail -n 3 "$t_tmp/server.err")"
change "5c: RAID-4 missing its parity -> RAID-0 of 3" "" "" --level 0
one_write 7300 && t_ok "5c: a write to the RAID-0, read back" || t_fail "5c: a write to the RAID-0"
export_matches "5c: the RAID-0"
stop_server || t_fail "5c: the server stops cleanly"
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Raid Level : raid0" && echo "$x" | grep -q "Raid Devices : 3" &&
    t_ok "5c: mdadm --examine: raid0 of 3" || t_fail "5c: mdadm --examine: raid0 of 3" "$(echo "$x" | grep -i 'level\|devices')"

# ---- 5d. RAID-0 -> RAID-5 parity-last / RAID-4 (md's raid45_takeover_raid0) -----------------------------
d=$t_tmp/r0
rm -rf "$d"; mkdir -p "$d"
for i in 0 1 2 3 4 5; do truncate -s 16M "$d/m$i.img"; done
truncate -s 1M "$d/small.img"
M="$d/m0.img $d/m1.img $d/m2.img"
# shellcheck disable=SC2086
$URAID create --level 0 --raid-devices 3 --chunk 64K $M >/dev/null 2>&1 || t_fail "5d: create RAID-0 of 3"
# shellcheck disable=SC2086
SZ=$(( $($URAID detail $M | awk '/Array Size :/ {print $4}') * 1024 ))
head -c "$SZ" /dev/urandom >"$d/model"
# shellcheck disable=SC2086
$URAID write $M <"$d/model" || t_fail "5d: write the data"
start_server --speed-limit 1M || t_fail "5d: serve" "$(tail -n 3 "$t_tmp/server.err")"
refused "5d: --level 5 --raid-devices 5" --level 5 --raid-devices 5
refused "5d: --level 5 with two new members" --level 5 --add "$d/m3.img" "$d/m4.img"
refused "5d: --level 5 --layout left-symmetric (md's takeover is parity-last)" --level 5 --layout left-symmetric
refused "5d: --level 5 with a new member too small" --level 5 --add "$d/small.img"
change "5d: RAID-0 of 3 -> RAID-5 of 4, a new member recovered as the parity" recovery "" --level 5 --add "$d/m3.img"
# kill -9 during the parity's recovery, a write in flight: the restarted server carries the recovery on
qemu-io -f raw -c "write -P 13 0 4M" "$uri" >/dev/null 2>&1 &
wpid=$!
sleep 0.3
kill_server
if wait "$wpid"; then
    head -c 4194304 /dev/zero | tr '\000' '\015' | dd of="$d/model" conv=notrunc status=none
    t_ok "5d: the write in flight was acknowledged before the kill"
else
    t_ok "5d: the write in flight was cut off by the kill"
fi
x=$(mdadm --examine "$d/m3.img" 2>&1)
echo "$x" | grep -q "Raid Level : raid5" && echo "$x" | grep -q "Recovery Offset" &&
    t_ok "5d: killed in the recovery: mdadm --examine shows raid5 and the new member's recovery offset" ||
    t_fail "5d: killed in the recovery: mdadm --examine" "$(echo "$x" | grep -i 'level\|recovery\|role' | tr '\n' ' ')"
M="$M $d/m3.img"
start_server || t_fail "5d: serve after the kill (no --force)" "$(tail -n 3 "$t_tmp/server.err")"
# the recovery carried on, then the resync the kill left owed (or the other way round)
wait_for "finished" 120 && sleep 1 && wait_for "finished" 120 && t_ok "5d: restarted, its jobs ran: $(bg_line)" ||
    t_fail "5d: the restarted server carries the recovery on" "$(bg_line)"
timeout 30 nbdcopy "$uri" "$t_tmp/now"
dd if="$t_tmp/now" of="$d/model" bs=1M count=4 conv=notrunc status=none
rm -f "$t_tmp/now"
export_matches "5d: after the kill"
stop_server || t_fail "5d: the server stops cleanly"
# shellcheck disable=SC2086
settled "5d: RAID-0 -> RAID-5 online, killed in the recovery" 5 parity-last 4 $M
x=$(mdadm --examine "$d/m3.img" 2>&1)
echo "$x" | grep -q "Device Role : Active device 3" && ! echo "$x" | grep -q "Recovery Offset" &&
    t_ok "5d: the new member is the parity slot, recovered" ||
    t_fail "5d: the new member is the parity slot, recovered" "$(echo "$x" | grep -i 'role\|recovery' | tr '\n' ' ')"
# RAID-0 -> RAID-4 with no new member: the parity slot stays missing
d=$t_tmp/r04
rm -rf "$d"; mkdir -p "$d"
for i in 0 1 2 3 4 5; do truncate -s 16M "$d/m$i.img"; done
M="$d/m0.img $d/m1.img $d/m2.img"
# shellcheck disable=SC2086
$URAID create --level 0 --raid-devices 3 --chunk 64K $M >/dev/null 2>&1 || t_fail "5d: create RAID-0 of 3"
# shellcheck disable=SC2086
SZ=$(( $($URAID detail $M | awk '/Array Size :/ {print $4}') * 1024 ))
head -c "$SZ" /dev/urandom >"$d/model"
# shellcheck disable=SC2086
$URAID write $M <"$d/model" || t_fail "5d: write the data"
start_server || t_fail "5d: serve" "$(tail -n 3 "$t_tmp/server.err")"
change "5d: RAID-0 of 3 -> RAID-4 of 4 missing its parity" "" "" --level 4
one_write 7400 && t_ok "5d: a write to the RAID-4, read back" || t_fail "5d: a write to the RAID-4"
export_matches "5d: the RAID-4 missing its parity"
stop_server || t_fail "5d: the server stops cleanly"
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Raid Level : raid4" && echo "$x" | grep -q "Raid Devices : 4" && echo "$x" | grep -q "Array State : AAA\." &&
    t_ok "5d: mdadm --examine: raid4 of 4, the parity slot missing" ||
    t_fail "5d: mdadm --examine: raid4 of 4, the parity slot missing" "$(echo "$x" | grep -i 'level\|devices\|state' | tr '\n' ' ')"

# ---- 6. the real md reads the results ------------------------------------------------------------------
if ! oracle_ready; then
    echo "skipped: md-oracle cannot run here, so md's side is not proven (counted as failed)"
    t_finish
    exit 1
fi
want1=$(sha256sum <"$ORA/model" | cut -d' ' -f1) want5=$(sha256sum <"$ORK/model" | cut -d' ' -f1)
want3=$(sha256sum <"$ORP/model" | cut -d' ' -f1)
disks=""
for f in "$ORA"/m?.img "$ORK"/m?.img "$ORP"/m?.img; do disks="$disks --disk $f"; done
# shellcheck disable=SC2086
"$ORACLE" --timeout 900 $disks -- - >"$t_tmp/md.log" 2>&1 <<GUEST
exec 2>&1
geom() { echo "\$1 level=\$(cat /sys/block/\$1/md/level) layout=\$(cat /sys/block/\$1/md/layout) raid_disks=\$(cat /sys/block/\$1/md/raid_disks) degraded=\$(cat /sys/block/\$1/md/degraded)"; }
wait_idle() { i=0; while [ "\$(cat /sys/block/\$1/md/sync_action)" != idle ] && [ \$i -lt 600 ]; do sleep 1; i=\$((i + 1)); done; }
verify() {
    echo "\$1 sha \$(head -c $ORA_SZ /dev/\$1 | sha256sum | cut -d' ' -f1)"
    echo check > /sys/block/\$1/md/sync_action; sleep 1; wait_idle \$1
    echo "\$1 mismatch_cnt=\$(cat /sys/block/\$1/md/mismatch_cnt)"
    geom \$1
}
mdadm --assemble /dev/md0 /dev/vd[a-e] || echo "md0 not assembled"
mdadm --assemble --run /dev/md1 /dev/vd[f-j] || echo "md1 not assembled"
grep -q reshape /proc/mdstat && echo "md1 reshaping"
mdadm --assemble /dev/md2 /dev/vd[k-o] || echo "md2 not assembled"
wait_idle md1
verify md0
verify md1
verify md2
GUEST
l=$t_tmp/md.log
grep -q "^md0 sha $want1\$" "$l" && t_ok "6: md reads every byte of the online RAID-5 -> RAID-6" ||
    t_fail "6: md reads every byte of the online RAID-5 -> RAID-6" "$(grep -v '^$' "$l" | tail -n 5 | tr '\n' ' ')"
grep -q "^md0 mismatch_cnt=0\$" "$l" && t_ok "6: md's check of it: mismatch_cnt 0" || t_fail "6: md's check of md0" "$(grep md0 "$l")"
grep -q "^md0 level=raid6 layout=2 raid_disks=5 degraded=0\$" "$l" && t_ok "6: md: raid6, left-symmetric, 5 disks" ||
    t_fail "6: md: raid6, left-symmetric, 5 disks" "$(grep '^md0 level' "$l")"
grep -q "^md1 reshaping\$" "$l" && t_ok "6: md carries the killed reshape on" || t_fail "6: md carries the killed reshape on" "$(grep md1 "$l" | head -3)"
grep -q "^md1 sha $want5\$" "$l" && t_ok "6: md reads every acknowledged byte of the killed one" ||
    t_fail "6: md reads every byte of the killed one" "$(grep '^md1' "$l" | tr '\n' ' ')"
grep -q "^md1 mismatch_cnt=0\$" "$l" && t_ok "6: md's check of it: mismatch_cnt 0" || t_fail "6: md's check of md1" "$(grep md1 "$l")"
grep -q "^md1 level=raid6 layout=2 raid_disks=5 degraded=0\$" "$l" && t_ok "6: md: raid6, left-symmetric, 5 disks" ||
    t_fail "6: md: raid6, left-symmetric, 5 disks (md1)" "$(grep '^md1 level' "$l")"
grep -q "^md2 sha $want3\$" "$l" && t_ok "6: md reads every byte of the online takeover (left-symmetric-6)" ||
    t_fail "6: md reads every byte of the online takeover" "$(grep '^md2' "$l" | tr '\n' ' ')"
grep -q "^md2 mismatch_cnt=0\$" "$l" && t_ok "6: md's check of it: mismatch_cnt 0" || t_fail "6: md's check of md2" "$(grep md2 "$l")"
grep -q "^md2 level=raid6 layout=18 raid_disks=5 degraded=0\$" "$l" && t_ok "6: md: raid6, left-symmetric-6, 5 disks" ||
    t_fail "6: md: raid6, left-symmetric-6, 5 disks (md2)" "$(grep '^md2 level' "$l")"
t_finish
