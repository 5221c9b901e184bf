#!/bin/sh
# Online growth of arrays without redundancy (issue 12):
#   1. a linear array of 2 served over NBD gains 2 members through its
#      control socket (`uraid grow --control PATH --raid-devices 4 --add
#      NEW NEW`) while nbdcopy writes the whole export: refusals first
#      (a count that does not match the new members, a member too small:
#      one line, every member byte for byte as before); the grow answers
#      at once (nothing moves); a new connection sees the longer export; a
#      write into the appended region reads back; the export is the data
#      written, then the new members' zeros, then that write; mdadm
#      --examine says 4 devices on every member; kill -9 of the server and
#      a restart with the 4 members: the same bytes. A linear array with
#      metadata 1.0 grows too, the new member's superblock at its own end.
#   2. a RAID-0 of 3 served over NBD gains 2 members the same way (mdadm's
#      way on a running RAID-0: a RAID-4 missing its parity reshaped, then
#      taken back) while qemu-io writes patterns at random offsets, each
#      read back: refusals first (one line, nothing written); `uraid
#      status` shows md's reshape line; at the end the export reads the data
#      and every write (zeros in the new space), mdadm --examine says
#      raid0 with 5 devices. Then kill -9 of the server in mid-reshape after
#      acknowledged writes: mdadm --examine shows a RAID-4 reshaping, the
#      restarted server carries it on by itself and takes it back to RAID-0,
#      every byte as written.
# Seeded (printed).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

server_pid=""
t_at_exit '[ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null'
for tool in nbdinfo nbdcopy qemu-io mdadm; do
    command -v "$tool" >/dev/null 2>&1 || { t_fail "$tool installed (run scripts/deps.sh)"; t_finish; exit 1; }
done

seed=${URAID_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "grow_online0: seed $seed (replay with URAID_TEST_SEED=$seed)"
sock=$t_tmp/nbd.sock ctl=$t_tmp/ctl.sock
uri="nbd+unix:///?socket=$sock"

start_server() { # MEMBERS...
    $URAID serve "$@" --socket "$sock" --control "$ctl" 2>>"$t_tmp/server.err" &
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
    _rc=$?
    server_pid=""
    return $_rc
}
sums() { cat "$d"/*.img | sha256sum; }
# export_is NAME FILE: the whole export is FILE
export_is() {
    timeout 60 nbdcopy "$uri" "$t_tmp/out" || { t_fail "$1: nbdcopy the export"; return; }
    got=$(sha256sum <"$t_tmp/out" | cut -d' ' -f1) want=$(sha256sum <"$2" | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "$1: the export ($(stat -c %s "$t_tmp/out") bytes) is what was written" ||
        t_fail "$1: the export is what was written" "sha $got ($(stat -c %s "$t_tmp/out") bytes), want $want ($(stat -c %s "$2") bytes)"
    rm -f "$t_tmp/out"
}

# ---- 1. linear 2 -> 4 while nbdcopy writes -----------------------------------------------------
d=$t_tmp/lin
mkdir -p "$d"
truncate -s 16M "$d/m0.img" "$d/m1.img" "$d/m3.img"
truncate -s 8M "$d/m2.img"
truncate -s 512K "$d/small.img"
$URAID create --level linear --raid-devices 2 "$d/m0.img" "$d/m1.img" >/dev/null 2>&1 || t_fail "create linear of 2"
if start_server "$d/m0.img" "$d/m1.img"; then t_ok "serve the linear array"; else
    t_fail "serve" "$(cat "$t_tmp/server.err")"; t_finish; exit 1; fi
SZ=$(timeout 10 nbdinfo --size "$uri")
head -c "$SZ" /dev/urandom >"$d/model"
T="timeout 20"
t_refused "1: --raid-devices 4 with one new member" "needs 2 new members" \
    $URAID grow --control "$ctl" --raid-devices 4 --add "$d/m2.img"
t_refused "1: a new member too small" "is too small" \
    $URAID grow --control "$ctl" --raid-devices 3 --add "$d/small.img"
timeout 60 nbdcopy "$d/model" "$uri" &
cp=$!
out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 4 --add "$d/m2.img" "$d/m3.img" 2>&1)
case "$out" in *"linear of 4 members: appended"*) t_ok "1: uraid grow --control appends 2 members ($out)" ;;
    *) t_fail "1: uraid grow --control appends 2 members" "$out" ;; esac
wait $cp && t_ok "1: nbdcopy wrote the whole export across the grow" || t_fail "1: nbdcopy wrote across the grow"
NEWSZ=$(timeout 10 nbdinfo --size "$uri")
dsz=$(mdadm --examine "$d/m2.img" 2>/dev/null | awk '/Avail Dev Size/ {print $5}')
dsz3=$(mdadm --examine "$d/m3.img" 2>/dev/null | awk '/Avail Dev Size/ {print $5}')
[ "$NEWSZ" = $((SZ + (dsz + dsz3) * 512)) ] && t_ok "1: a new connection sees $NEWSZ bytes (the new data areas appended)" ||
    t_fail "1: a new connection sees the longer export" "$NEWSZ, want $SZ + ($dsz + $dsz3) sectors"
head -c $((NEWSZ - SZ)) /dev/zero >>"$d/model"
off=$((SZ + 4 * 1048576)) len=$((2 * 1048576))
head -c "$len" /dev/urandom >"$d/tail"
qemu-io -f raw -c "write -P 165 $off $len" "$uri" >/dev/null 2>&1 &&
    qemu-io -f raw -c "read -P 165 $off $len" "$uri" 2>&1 | grep -q "read $len/$len" &&
    t_ok "1: a write into the appended region reads back" || t_fail "1: a write into the appended region reads back"
head -c "$len" /dev/zero | tr '\000' '\245' | dd of="$d/model" bs=4096 seek=$((off / 4096)) conv=notrunc status=none
export_is "1: grown" "$d/model"
n4=0
for m in m0 m1 m2 m3; do
    mdadm --examine "$d/$m.img" 2>/dev/null | grep -q "Raid Devices : 4\$" && n4=$((n4 + 1))
done
[ $n4 -eq 4 ] && t_ok "1: mdadm --examine: 4 devices on every member" ||
    t_fail "1: mdadm --examine: 4 devices on every member" "$n4 of 4"
kill -KILL "$server_pid"; wait "$server_pid" 2>/dev/null; server_pid=""
if start_server "$d/m0.img" "$d/m1.img" "$d/m2.img" "$d/m3.img"; then
    t_ok "1: kill -9, then serve the 4 members"
    export_is "1: after kill -9" "$d/model"
    stop_server && t_ok "1: the server stops cleanly" || t_fail "1: the server stops cleanly" "$(tail -n 3 "$t_tmp/server.err")"
else
    t_fail "1: serve the 4 members after kill -9" "$(tail -n 3 "$t_tmp/server.err")"
fi
# metadata 1.0: its superblock at each member's end; a new member's goes at its own end
d=$t_tmp/lin10
mkdir -p "$d"
truncate -s 16M "$d/m0.img" "$d/m1.img" "$d/m2.img"
$URAID create --level linear --raid-devices 2 --metadata 1.0 "$d/m0.img" "$d/m1.img" >/dev/null 2>&1 ||
    t_fail "create linear of 2, metadata 1.0"
if start_server "$d/m0.img" "$d/m1.img"; then
    out=$($URAID grow --control "$ctl" --raid-devices 3 --add "$d/m2.img" 2>&1) &&
        t_ok "1: a served metadata 1.0 linear array gains a member ($out)" ||
        t_fail "1: a served metadata 1.0 linear array gains a member" "$out"
    stop_server || t_fail "1: the 1.0 server stops cleanly"
    x=$(mdadm --examine "$d/m2.img" 2>&1)
    echo "$x" | grep -q "Version : 1.0" && echo "$x" | grep -q "Raid Devices : 3" &&
        t_ok "1: mdadm --examine: the new member holds a 1.0 superblock of 3 devices" ||
        t_fail "1: mdadm --examine: the new member holds a 1.0 superblock of 3 devices" "$x"
else
    t_fail "serve the 1.0 linear array" "$(tail -n 3 "$t_tmp/server.err")"
fi

# ---- 2. RAID-0 3 -> 5 while qemu-io writes ------------------------------------------------------
bg_line() { timeout 10 $URAID status --control "$ctl" 2>&1 | tail -n 1; }
wait_for() { # PATTERN SECONDS: the status's last line matches
    n=0
    while [ $n -lt $(($2 * 4)) ]; do
        case "$(bg_line)" in *$1*) return 0 ;; esac
        sleep 0.25; n=$((n + 1))
    done
    return 1
}
# one_write N: a pattern byte at a random 4 KiB-aligned range of the first $SZ bytes, in the model too,
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
# r0_array DIR: RAID-0 of 3 (16 MiB members, 64K chunk), m3 and m4 to add, random data written
r0_array() {
    d=$1
    mkdir -p "$d"
    truncate -s 16M "$d/m0.img" "$d/m1.img" "$d/m2.img" "$d/m3.img" "$d/m4.img"
    M="$d/m0.img $d/m1.img $d/m2.img"
    # shellcheck disable=SC2086
    $URAID create --level 0 --raid-devices 3 --chunk 64K $M >/dev/null 2>&1 || t_fail "create RAID-0 in $d"
    # shellcheck disable=SC2086
    SZ=$(( $($URAID detail $M | awk '/Array Size :/ {print $4}') * 1024 ))
    head -c "$SZ" /dev/urandom >"$d/model"
    # shellcheck disable=SC2086
    $URAID write $M <"$d/model" || t_fail "write the data in $d"
    GROWN=$((SZ / 3 * 5))
}
# r0_matches NAME: the export is GROWN bytes (md's takeover back records the RAID-4's member size as
# every data_size: the reshaped size), the model, then zeros
r0_matches() {
    timeout 60 nbdcopy "$uri" "$t_tmp/out" || { t_fail "$1: nbdcopy the export"; return; }
    got=$(sha256sum <"$t_tmp/out" | cut -d' ' -f1)
    want=$({ cat "$d/model"; head -c $((GROWN - SZ)) /dev/zero; } | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] && t_ok "$1: the export ($GROWN bytes) is the data and every write, then zeros" ||
        t_fail "$1: the export is the data and every write" "sha $got ($(stat -c %s "$t_tmp/out") bytes), want $want ($GROWN)"
    rm -f "$t_tmp/out"
}
r0_examined() { # NAME: every member says raid0 of 5, no reshape
    n5=0
    for m in m0 m1 m2 m3 m4; do
        x=$(mdadm --examine "$d/$m.img" 2>/dev/null)
        echo "$x" | grep -q "Raid Level : raid0" && echo "$x" | grep -q "Raid Devices : 5\$" &&
            ! echo "$x" | grep -q "Reshape" && n5=$((n5 + 1))
    done
    [ $n5 -eq 5 ] && t_ok "$1: mdadm --examine: raid0, 5 devices, no reshape, on every member" ||
        t_fail "$1: mdadm --examine: raid0 of 5 on every member" "$n5 of 5"
}
r0_array "$t_tmp/r0"
# shellcheck disable=SC2086
if start_server $M --speed-limit 2M; then t_ok "2: serve the RAID-0"; else
    t_fail "2: serve the RAID-0" "$(tail -n 3 "$t_tmp/server.err")"; t_finish; exit 1; fi
t_refused "2: --raid-devices 5 with one new member" "needs 2 new members" \
    $URAID grow --control "$ctl" --raid-devices 5 --add "$d/m3.img"
t_refused "2: an old member named as new" "already a member" \
    $URAID grow --control "$ctl" --raid-devices 4 --add "$d/m0.img"
out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 5 --add "$d/m3.img" "$d/m4.img" 2>&1)
case "$out" in *"reshape to 5 members started"*) t_ok "2: uraid grow --control starts the RAID-0's reshape" ;;
    *) t_fail "2: uraid grow --control starts the RAID-0's reshape" "$out" ;; esac
line=""
wait_for "finish=" 20 && line=$(bg_line)
echo "$line" | grep -Eq 'reshape = [0-9]+\.[0-9]% \([0-9]+/[0-9]+\) finish=[0-9.]+min speed=[0-9]+K/sec' &&
    t_ok "2: uraid status: $line" || t_fail "2: uraid status shows md's reshape line" "$(bg_line)"
bad=0 i=0 during=0
while [ $i -lt 12 ]; do
    case "$(bg_line)" in *"reshape ="*) during=$((during + 1)) ;; esac
    one_write "$i" || bad=$((bad + 1))
    i=$((i + 1))
done
[ $bad -eq 0 ] && t_ok "2: 12 writes through NBD, each read back" ||
    t_fail "2: writes during the reshape" "$bad of 12 failed: $(cat "$t_tmp/qio.out")"
[ $during -ge 8 ] && t_ok "2: $during of them while the reshape ran" ||
    t_fail "2: at least 8 writes while the reshape ran" "$during: $(bg_line)"
wait_for "reshape finished" 90 && t_ok "2: the reshape finishes: $(bg_line)" || t_fail "2: the reshape finishes" "$(bg_line)"
r0_matches "2: grown"
stop_server && t_ok "2: the server stops cleanly" || t_fail "2: the server stops cleanly" "$(tail -n 3 "$t_tmp/server.err")"
r0_examined "2: grown"
# kill -9 in mid-reshape, after acknowledged writes
r0_array "$t_tmp/r0k"
# shellcheck disable=SC2086
start_server $M --speed-limit 1M || t_fail "2: serve the second RAID-0" "$(tail -n 3 "$t_tmp/server.err")"
out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 5 --add "$d/m3.img" "$d/m4.img" 2>&1)
case "$out" in *started*) ;; *) t_fail "2: grow --control the second RAID-0" "$out" ;; esac
i=0
while [ $i -lt 4 ]; do one_write "$((100 + i))" || t_fail "2: write $i before the kill"; i=$((i + 1)); done
wait_for "reshape = " 10
kill -KILL "$server_pid"; wait "$server_pid" 2>/dev/null; server_pid=""
x=$(mdadm --examine "$d/m0.img" 2>&1)
echo "$x" | grep -q "Raid Level : raid4" && echo "$x" | grep -q "Reshape pos'n" &&
    t_ok "2: killed in mid-reshape: mdadm --examine shows a RAID-4 reshaping at $(echo "$x" | sed -n "s/^ *Reshape pos'n : //p")" ||
    t_fail "2: killed in mid-reshape: a RAID-4 reshaping" "$(echo "$x" | grep -E 'Level|Reshape|State')"
# shellcheck disable=SC2086
if start_server $M "$d/m3.img" "$d/m4.img"; then
    wait_for "reshape finished" 90 && t_ok "2: restarted, the reshape carried on: $(bg_line)" ||
        t_fail "2: the restarted server carries the reshape on" "$(bg_line)"
    r0_matches "2: after kill -9"
    stop_server || t_fail "2: the restarted server stops cleanly" "$(tail -n 3 "$t_tmp/server.err")"
    r0_examined "2: after kill -9"
else
    t_fail "2: serve the 5 members after kill -9" "$(tail -n 3 "$t_tmp/server.err")"
fi
t_finish
