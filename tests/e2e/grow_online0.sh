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
#      metadata 1.0 is refused as the offline grow refuses it.
# Seeded (printed).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

PLUGIN=build/nbdkit-uraid-plugin.so
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null
    rm -rf "$t_tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
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
# metadata 1.0: its superblock at each member's end; refused online as offline
d=$t_tmp/lin10
mkdir -p "$d"
truncate -s 16M "$d/m0.img" "$d/m1.img" "$d/m2.img"
$URAID create --level linear --raid-devices 2 --metadata 1.0 "$d/m0.img" "$d/m1.img" >/dev/null 2>&1 ||
    t_fail "create linear of 2, metadata 1.0"
if start_server "$d/m0.img" "$d/m1.img"; then
    t_refused "1: metadata 1.0" "metadata 1.0" $URAID grow --control "$ctl" --raid-devices 3 --add "$d/m2.img"
    stop_server || t_fail "1: the 1.0 server stops cleanly"
else
    t_fail "serve the 1.0 linear array" "$(tail -n 3 "$t_tmp/server.err")"
fi
t_finish
