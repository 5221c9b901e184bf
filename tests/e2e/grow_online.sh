#!/bin/sh
# Online grow (issue 12): a RAID-5 served over NBD gains a member through
# its control socket (`uraid grow --control PATH --raid-devices 5 --add
# NEW`) while a client keeps writing and reading through NBD (qemu-io:
# patterns at random offsets, each read back with -P); `uraid status`
# shows md's "reshape = x% (a/b) finish=... speed=...K/sec" line; at the
# end the export reads the pattern plus every write made during the
# reshape (and zeros in the new space), `uraid check` finds mismatch_cnt 0
# and mdadm --examine agrees with the new geometry. Then kill -9 of the
# server in mid-reshape (writes in flight): mdadm --examine shows the
# recorded position, the restarted server carries the reshape on by itself
# from it, and every byte is as written. Then a chunk and layout change
# online (`uraid grow --control PATH --chunk 128K --layout
# right-asymmetric`, the same members) with writes going on, and one
# together with a new member. Then a shrink online (`--raid-devices 4
# --array-size SIZE` on a 5-member array with room past its data): the
# export is the new size at once, writes go on, every byte, check clean,
# the fifth member a spare. Then the same grow on an array with md's
# write-intent bitmap (kept through the reshape: the old geometry's writes
# set bits too), killed with -9 in mid-reshape with writes in flight: the
# restarted server carries it on, every byte is as written, check clean,
# and each member's bitmap carries its superblock's events (md would take
# an older one as stale and resync everything). Seeded (printed).
# URAID_TEST_LONG=1: more writes and kill trials.
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
echo "grow_online: seed $seed (replay with URAID_TEST_SEED=$seed)"
rounds=12 kills=1
[ -n "${URAID_TEST_LONG:-}" ] && rounds=60 kills=5

sock=$t_tmp/nbd.sock ctl=$t_tmp/ctl.sock
uri="nbd+unix:///?socket=$sock"

# new_array DIR [POLICY]: 4 members of 16 MiB (RAID-5, resync policy) and m4 to add; the data written
new_array() {
    d=$1 policy=${2:-resync}
    rm -rf "$d"; mkdir -p "$d"
    M=""
    for i in 0 1 2 3; do truncate -s 16M "$d/m$i.img"; M="$M $d/m$i.img"; done
    truncate -s 16M "$d/m4.img"
    bmc=""
    [ "$policy" = bitmap ] && bmc="--bitmap-chunk 256K" # many bits: each write sets its own
    # shellcheck disable=SC2086
    $URAID create --level 5 --raid-devices 4 --chunk 64K --assume-clean --consistency-policy "$policy" \
        $bmc $M >/dev/null 2>&1 || { t_fail "create RAID-5 in $d"; return 1; }
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

bg_line() { timeout 10 $URAID status --control "$ctl" 2>&1 | tail -n 1; }

# one_write N: a pattern byte at a random 4 KiB-aligned range, in the model too,
# then read back through NBD with qemu-io's pattern check
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

# export_matches NAME: the whole export is the model, then zeros
export_matches() {
    size=$(timeout 10 nbdinfo --size "$uri")
    timeout 60 nbdcopy "$uri" "$t_tmp/out" || { t_fail "$1: nbdcopy the export"; return; }
    want=$({ cat "$d/model"; head -c $((size - SZ)) /dev/zero; } | sha256sum | cut -d' ' -f1)
    got=$(sha256sum <"$t_tmp/out" | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "$1: the export ($size bytes) is the data and every write made during the reshape" ||
        t_fail "$1: the export is the data and every write made during the reshape" "sha $got, want $want"
    rm -f "$t_tmp/out"
}

after_checks() { # NAME
    # shellcheck disable=SC2086
    out=$($URAID check $M "$d/m4.img" 2>&1)
    case "$out" in *"mismatch_cnt 0"*) t_ok "$1: uraid check finds mismatch_cnt 0" ;;
        *) t_fail "$1: uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -n 1)" ;; esac
    x=$(mdadm --examine "$d/m0.img" 2>&1)
    if echo "$x" | grep -q "Raid Devices : 5" && echo "$x" | grep -q "Data Offset : 1536 sectors" &&
        ! echo "$x" | grep -q "Reshape"; then
        t_ok "$1: mdadm --examine: 5 Raid Devices, Data Offset 1536, no Reshape line"
    else
        t_fail "$1: mdadm --examine shows the new geometry" "$(echo "$x" | grep -i 'raid devices\|offset\|reshape')"
    fi
    # shellcheck disable=SC2086
    t_mdadm_agrees "$1" $M "$d/m4.img"
}

wait_for() { # PATTERN SECONDS: the status's last line matches
    n=0
    while [ $n -lt $(($2 * 4)) ]; do
        case "$(bg_line)" in *$1*) return 0 ;; esac
        sleep 0.25; n=$((n + 1))
    done
    return 1
}

# ---- 1. grow while serving, writes and reads going on -------------------------------------
d=$t_tmp/a
new_array "$d"
if start_server --speed-limit 2M; then t_ok "serve the RAID-5"; else
    t_fail "serve" "$(cat "$t_tmp/server.err")"; t_finish; exit 1; fi
before=$(sha256sum "$d/m4.img")
out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 6 --add "$d/m4.img" 2>&1)
rc=$?
[ "$rc" -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && [ "$before" = "$(sha256sum "$d/m4.img")" ] &&
    t_ok "refused, nothing written: --raid-devices 6 with one new member ($out)" ||
    t_fail "refused: --raid-devices 6 with one new member" "rc $rc: $out"
out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 5 --add "$d/m4.img" 2>&1)
case "$out" in *"reshape to 5 members started"*) t_ok "uraid grow --control starts the reshape" ;;
    *) t_fail "uraid grow --control starts the reshape" "$out" ;; esac
out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 5 --add "$d/m4.img" 2>&1)
case "$out" in *"already"*) t_ok "a second grow is refused: $out" ;; *) t_fail "a second grow is refused" "$out" ;; esac
line=""
wait_for "finish=" 20 && line=$(bg_line)
echo "$line" | grep -Eq 'reshape = [0-9]+\.[0-9]% \([0-9]+/[0-9]+\) finish=[0-9.]+min speed=[0-9]+K/sec' &&
    t_ok "uraid status: $line" || t_fail "uraid status shows md's reshape line" "$(bg_line)"
bad=0 i=0 during=0
while [ $i -lt $rounds ]; do
    case "$(bg_line)" in *"reshape ="*) during=$((during + 1)) ;; esac
    one_write "$i" || bad=$((bad + 1))
    i=$((i + 1))
done
[ $bad -eq 0 ] && t_ok "$rounds writes through NBD, each read back" ||
    t_fail "writes during the reshape" "$bad of $rounds failed: $(cat "$t_tmp/qio.out")"
[ $during -ge 8 ] && t_ok "$during of them while the reshape ran" ||
    t_fail "at least 8 writes while the reshape ran (slow it down)" "$during: $(bg_line)"
wait_for "reshape finished" 60 && t_ok "the reshape finishes: $(bg_line)" || t_fail "the reshape finishes" "$(bg_line)"
export_matches "online"
stop_server && t_ok "the server stops cleanly" || t_fail "the server stops cleanly" "$(tail -n 3 "$t_tmp/server.err")"
after_checks "online"

# ---- 2. kill -9 of the server in mid-reshape; restart carries it on ------------------------
k=0
while [ $k -lt $kills ]; do
    k=$((k + 1))
    d=$t_tmp/k$k
    new_array "$d"
    start_server --speed-limit 1M || { t_fail "kill $k: serve"; break; }
    out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 5 --add "$d/m4.img" 2>&1)
    case "$out" in *started*) ;; *) t_fail "kill $k: grow --control" "$out" ;; esac
    i=0
    ms=$(awk -v s="$seed" -v k="$k" 'BEGIN { srand(s + k); print 1 + int(rand() * 4) }')
    while [ $i -lt "$ms" ]; do one_write "$((1000 * k + i))" || t_fail "kill $k: write $i"; i=$((i + 1)); done
    # writes in flight when the process dies (the acknowledged ones are in the model)
    qemu-io -f raw -c "write -P 7 0 4M" "$uri" >/dev/null 2>&1 &
    wpid=$!
    sleep 0.3
    for p in $(pgrep -P "$server_pid"); do kill -KILL "$p"; done
    kill -KILL "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=""
    if wait "$wpid"; then # acknowledged before the kill: in the model
        head -c 4194304 /dev/zero | tr '\000' '\007' | dd of="$d/model" conv=notrunc status=none
        t_ok "kill $k: the write in flight was acknowledged before the kill"
    else
        t_ok "kill $k: the write in flight was cut off by the kill"
        inflight=1
    fi
    x=$(mdadm --examine "$d/m0.img" 2>&1)
    pos=$(echo "$x" | sed -n "s/^ *Reshape pos'n : //p")
    [ -n "$pos" ] && t_ok "kill $k: mdadm --examine shows the reshape at $pos" ||
        t_fail "kill $k: mdadm --examine shows the reshape" "$(echo "$x" | grep -i 'feature\|reshape')"
    M="$M $d/m4.img"
    start_server || { t_fail "kill $k: serve again" "$(tail -n 3 "$t_tmp/server.err")"; break; }
    wait_for "resync finished" 90 && t_ok "kill $k: restarted, the reshape carried on, then the resync: $(bg_line)" ||
        t_fail "kill $k: the restarted server carries the reshape on" "$(bg_line)"
    if [ -n "${inflight:-}" ]; then
        # a cut-off write may have landed in part: take what the array says for its range, nothing else
        timeout 30 nbdcopy "$uri" "$t_tmp/now"
        dd if="$t_tmp/now" of="$d/model" bs=1M count=4 conv=notrunc status=none
        rm -f "$t_tmp/now"
        inflight=""
    fi
    export_matches "kill $k"
    stop_server || t_fail "kill $k: the server stops cleanly"
    M=${M% *}
    after_checks "kill $k"
done

# ---- 3. chunk and layout changes online ------------------------------------------------------
for form in chunk both; do
    d=$t_tmp/g$form
    new_array "$d"
    start_server --speed-limit 1M || { t_fail "$form: serve"; break; }
    if [ $form = chunk ]; then
        opts="--chunk 128K --layout right-asymmetric" devs=4 ch=128K lay=right-asymmetric
    else
        opts="--raid-devices 5 --add $d/m4.img --chunk 32K" devs=5 ch=32K lay=left-symmetric
    fi
    # shellcheck disable=SC2086
    out=$(timeout 20 $URAID grow --control "$ctl" $opts 2>&1)
    case "$out" in *"started"*) t_ok "$form: uraid grow --control $opts starts the reshape ($out)" ;;
        *) t_fail "$form: uraid grow --control $opts starts the reshape" "$out" ;; esac
    bad=0 i=0 during=0
    while [ $i -lt "$rounds" ]; do
        case "$(bg_line)" in *"reshape ="*) during=$((during + 1)) ;; esac
        one_write "$((5000 + i))" || bad=$((bad + 1))
        i=$((i + 1))
    done
    [ $bad -eq 0 ] && [ $during -ge 4 ] && t_ok "$form: $rounds writes through NBD, each read back, $during while the reshape ran" ||
        t_fail "$form: writes during the reshape" "$bad of $rounds failed, $during during: $(cat "$t_tmp/qio.out")"
    wait_for "reshape finished" 90 && t_ok "$form: the reshape finishes: $(bg_line)" ||
        t_fail "$form: the reshape finishes" "$(bg_line)"
    export_matches "$form"
    stop_server || t_fail "$form: the server stops cleanly"
    [ $devs = 5 ] && M="$M $d/m4.img"
    # shellcheck disable=SC2086
    out=$($URAID check $M 2>&1)
    case "$out" in *"mismatch_cnt 0"*) t_ok "$form: uraid check finds mismatch_cnt 0" ;;
        *) t_fail "$form: uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -1)" ;; esac
    x=$(mdadm --examine "$d/m0.img" 2>&1)
    echo "$x" | grep -q "Chunk Size : $ch\$" && echo "$x" | grep -q "Layout : $lay\$" &&
        echo "$x" | grep -q "Raid Devices : $devs\$" && ! echo "$x" | grep -q "Reshape" &&
        t_ok "$form: mdadm --examine: $devs devices, chunk $ch, $lay, no reshape" ||
        t_fail "$form: mdadm --examine shows the new geometry" "$(echo "$x" | grep -i 'chunk\|layout\|devices\|reshape')"
done

# ---- 4. a shrink online (md's backwards reshape) -----------------------------------------------
# the offline grow 4 -> 5 leaves 512 sectors past the data on every member: room to shrink back
d=$t_tmp/s
new_array "$d"
# shellcheck disable=SC2086
$URAID grow $M --raid-devices 5 --add "$d/m4.img" >/dev/null 2>&1 || t_fail "shrink: the grow 4 -> 5 before"
M="$M $d/m4.img"
start_server --speed-limit 1M || t_fail "shrink: serve" "$(tail -n 3 "$t_tmp/server.err")"
# shellcheck disable=SC2086
before=$(for f in $M; do sha256sum "$f"; done)
out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 4 --array-size $((SZ / 1024 + 64))K 2>&1)
rc=$?
# shellcheck disable=SC2086
now=$(for f in $M; do sha256sum "$f"; done)
case "$rc:$out" in 1:*"more than 4 members hold"*) [ "$now" = "$before" ] &&
    t_ok "shrink: an --array-size past the new size is refused, nothing written" ||
    t_fail "shrink: the refusal wrote to a member" ;;
    *) t_fail "shrink: an --array-size past the new size is refused" "rc $rc: $out" ;; esac
out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 4 --array-size $((SZ / 1024))K 2>&1)
case "$out" in *"reshape to 4 members started"*) t_ok "shrink: uraid grow --control --raid-devices 4 --array-size starts it" ;;
    *) t_fail "shrink: uraid grow --control starts the shrink" "$out" ;; esac
[ "$(timeout 10 nbdinfo --size "$uri")" = "$SZ" ] && t_ok "shrink: the export is the new size at once ($SZ)" ||
    t_fail "shrink: the export is the new size" "$(timeout 10 nbdinfo --size "$uri")"
bad=0 i=0 during=0
while [ $i -lt "$rounds" ]; do
    case "$(bg_line)" in *"reshape ="*) during=$((during + 1)) ;; esac
    one_write "$((7000 + i))" || bad=$((bad + 1))
    i=$((i + 1))
done
[ $bad -eq 0 ] && [ $during -ge 4 ] && t_ok "shrink: $rounds writes through NBD, each read back, $during while it ran" ||
    t_fail "shrink: writes during the shrink" "$bad of $rounds failed, $during during: $(cat "$t_tmp/qio.out")"
wait_for "reshape finished" 90 && t_ok "shrink: the reshape finishes: $(bg_line)" || t_fail "shrink: it finishes" "$(bg_line)"
export_matches "shrink"
stop_server || t_fail "shrink: the server stops cleanly"
M4="$d/m0.img $d/m1.img $d/m2.img $d/m3.img"
# shellcheck disable=SC2086
out=$($URAID check $M4 2>&1)
case "$out" in *"mismatch_cnt 0"*) t_ok "shrink: uraid check finds mismatch_cnt 0" ;;
    *) t_fail "shrink: uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -1)" ;; esac
x=$(mdadm --examine "$d/m0.img" 2>&1) x4=$(mdadm --examine "$d/m4.img" 2>&1)
echo "$x" | grep -q "Raid Devices : 4\$" && echo "$x" | grep -q "Data Offset : 2048 sectors" && ! echo "$x" | grep -q Reshape &&
    echo "$x4" | grep -q "Device Role : spare" &&
    t_ok "shrink: mdadm --examine: 4 devices, data offset back at 2048, no reshape, the fifth member a spare" ||
    t_fail "shrink: mdadm --examine after the shrink" "$(echo "$x$x4" | grep -i 'devices\|offset\|reshape\|role')"

# ---- 5. with a write-intent bitmap: kill -9 mid-reshape, writes in flight ---------------------
d=$t_tmp/b
new_array "$d" bitmap
start_server --speed-limit 1M || t_fail "bitmap: serve" "$(tail -n 3 "$t_tmp/server.err")"
out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 5 --add "$d/m4.img" 2>&1)
case "$out" in *started*) t_ok "bitmap: uraid grow --control starts the reshape of an array with a bitmap" ;;
    *) t_fail "bitmap: grow --control starts the reshape" "$out" ;; esac
bad=0 i=0
while [ $i -lt 4 ]; do one_write "$((9000 + i))" || bad=$((bad + 1)); i=$((i + 1)); done
[ $bad -eq 0 ] && t_ok "bitmap: 4 writes during the reshape, each read back" || t_fail "bitmap: writes" "$bad failed"
qemu-io -f raw -c "write -P 9 4M 4M" "$uri" >/dev/null 2>&1 &
wpid=$!
sleep 0.3
for p in $(pgrep -P "$server_pid"); do kill -KILL "$p"; done
kill -KILL "$server_pid" 2>/dev/null
wait "$server_pid" 2>/dev/null
server_pid=""
inflight=""
if wait "$wpid"; then
    head -c 4194304 /dev/zero | tr '\000' '\011' | dd of="$d/model" bs=1M seek=4 conv=notrunc status=none
else
    inflight=1
fi
x=$(mdadm --examine "$d/m0.img" 2>&1)
pos=$(echo "$x" | sed -n "s/^ *Reshape pos'n : //p")
[ -n "$pos" ] && t_ok "bitmap: killed mid-reshape at $pos" || t_fail "bitmap: killed mid-reshape" "$(echo "$x" | grep -i reshape)"
M="$M $d/m4.img"
start_server || t_fail "bitmap: serve again" "$(tail -n 3 "$t_tmp/server.err")"
wait_for "resync finished" 90 && t_ok "bitmap: restarted, the reshape carried on, then the resync: $(bg_line)" ||
    t_fail "bitmap: the restarted server carries the reshape on" "$(bg_line)"
if [ -n "$inflight" ]; then
    timeout 30 nbdcopy "$uri" "$t_tmp/now"
    dd if="$t_tmp/now" of="$d/model" bs=1M skip=4 seek=4 count=4 conv=notrunc status=none
    rm -f "$t_tmp/now"
fi
export_matches "bitmap"
stop_server || t_fail "bitmap: the server stops cleanly"
M=${M% *}
after_checks "bitmap"
# shellcheck disable=SC2086
t_bitmap_current "bitmap (the new member's too)" $M "$d/m4.img"
t_finish
