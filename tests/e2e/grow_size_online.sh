#!/bin/sh
# uraid grow --control PATH --size max (mdadm --grow --size on a running
# array): a RAID-5 served over NBD whose members were made bigger (random
# bytes appended, as a dd onto a bigger disk leaves them) uses the room
# while a client keeps writing and reading (qemu-io patterns, each read
# back): refusals first (too big, smaller, a check running, a reshape
# recorded) write nothing (every member's sha256 before and after); then
# the grow: the old bytes intact, a NEW connection sees the new size (an
# existing one keeps its size: NBD has no resize), `uraid status` shows
# md's "resync = x% (a/b)" from the old size and "State : active,
# resyncing", a write into the new region reads back, and after the
# resync `uraid check` finds mismatch_cnt 0 and mdadm --examine agrees
# (Used Dev Size, clean). The same through the array's default control
# socket when the members are named. Then a kill -9 of the server in the
# new region's sync: md's record (resync_offset = the old size, State
# active), and the restarted server finishes it (check clean). Then the
# same under `uraid mount` (FUSE): the mounted file's size follows within a
# second and a write past the old end reads back. Seeded (printed).
# URAID_TEST_LONG=1: more writes.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

PLUGIN=build/nbdkit-uraid-plugin.so
server_pid="" writer_pid=""
t_at_exit '[ -n "$writer_pid" ] && kill "$writer_pid" 2>/dev/null; [ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null; for p in $(pgrep -f "nbdkit.*$t_tmp" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done'
for tool in nbdkit nbdinfo nbdcopy qemu-io mdadm; do
    command -v "$tool" >/dev/null 2>&1 || { t_fail "$tool installed (run scripts/deps.sh)"; t_finish; exit 1; }
done
[ -f "$PLUGIN" ] || { t_fail "$PLUGIN built"; t_finish; exit 1; }

seed=${URAID_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "grow_size_online: seed $seed (replay with URAID_TEST_SEED=$seed)"
rounds=10
t_long && rounds=40

sock=$t_tmp/nbd.sock ctl=$t_tmp/ctl.sock
uri="nbd+unix:///?socket=$sock"

sums() { for f in $M; do sha256sum "$f"; done | sha256sum | cut -d' ' -f1; }

# new_array DIR GROW [POLICY]: 4 members of 16 MiB (RAID-5, chunk 64K;
# uraid's default policy, ppl, unless POLICY), the data written (the
# model), then GROW random bytes appended to every member (the data offset
# is 2 MiB: 16 MiB members keep 14 MiB each)
new_array() {
    d=$1 pol=${3:+--consistency-policy $3}
    rm -rf "$d"; mkdir -p "$d"
    M=""
    for i in 0 1 2 3; do truncate -s 16M "$d/m$i.img"; M="$M $d/m$i.img"; done
    # shellcheck disable=SC2086
    $URAID create --level 5 --raid-devices 4 --chunk 64K --assume-clean $pol $M >/dev/null 2>&1 ||
        { t_fail "create RAID-5 in $d"; return 1; }
    # shellcheck disable=SC2086
    SZ=$(( $($URAID detail $M | awk '/Array Size :/ {print $4}') * 1024 ))
    head -c "$SZ" /dev/urandom >"$d/model"
    # shellcheck disable=SC2086
    $URAID write $M <"$d/model" || t_fail "write the data in $d"
    for f in $M; do head -c "$2" /dev/urandom >>"$f"; done
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

status() { timeout 10 $URAID status --control "$ctl" 2>&1; }
bg_line() { status | tail -n 1; }
wait_for() { # PATTERN SECONDS: the status's last line matches
    n=0
    while [ $n -lt $(($2 * 4)) ]; do
        case "$(bg_line)" in *$1*) return 0 ;; esac
        sleep 0.25; n=$((n + 1))
    done
    return 1
}

# one_write N LIMIT: a pattern at a random 4 KiB-aligned range below LIMIT,
# in the model too, read back through NBD with qemu-io's pattern check
one_write() {
    r=$(awk -v s="$seed" -v n="$1" -v sz="$2" 'BEGIN { srand(s * 1000 + n);
        len = (1 + int(rand() * 64)) * 4096; off = int(rand() * (sz - len) / 4096) * 4096;
        printf "%d %d %d\n", off, len, 1 + int(rand() * 254) }')
    off=${r%% *}; rest=${r#* }; len=${rest%% *}; pat=${rest#* }
    qemu-io -f raw -c "write -P $pat $off $len" "$uri" >"$t_tmp/qio.$1" 2>&1 || return 1
    head -c "$len" /dev/zero | tr '\000' "\\$(printf '%03o' "$pat")" |
        dd of="$d/model" bs=4096 seek=$((off / 4096)) conv=notrunc status=none
    qemu-io -f raw -c "read -P $pat $off $len" "$uri" >"$t_tmp/qio.$1" 2>&1 || return 1
    ! grep -q "Pattern verification failed" "$t_tmp/qio.$1"
}

# a writer in the background: one_write in the old region until $t_tmp/stop
# appears; its failures counted in $t_tmp/wbad, its writes in $t_tmp/wn
writer() {
    i=0 bad=0
    while [ ! -e "$t_tmp/stop" ] || [ $i -lt "$rounds" ]; do
        one_write "$i" "$SZ" || bad=$((bad + 1))
        i=$((i + 1))
    done
    echo "$bad" >"$t_tmp/wbad"; echo "$i" >"$t_tmp/wn"
}

checks() { # NAME PER_KIB
    # shellcheck disable=SC2086
    out=$($URAID check $M 2>&1)
    case "$out" in *"mismatch_cnt 0"*) t_ok "$1: uraid check finds mismatch_cnt 0 (the new region synced)" ;;
        *) t_fail "$1: uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -n 1)" ;; esac
    x=$(mdadm --examine "$d/m0.img" 2>&1)
    used=$(echo "$x" | sed -n 's/^ *Used Dev Size : \([0-9]*\).*/\1/p')
    [ -n "$used" ] || used=$(echo "$x" | sed -n 's/^ *Avail Dev Size : \([0-9]*\).*/\1/p')
    state=$(echo "$x" | sed -n 's/^ *State : \([a-z]*\).*/\1/p')
    [ "$used" = "$(($2 * 2))" ] && [ "$state" = clean ] &&
        t_ok "$1: mdadm --examine: Used Dev Size $used sectors, State clean" ||
        t_fail "$1: mdadm --examine: Used Dev Size $(($2 * 2)), clean" "Used $used, State $state"
    # shellcheck disable=SC2086
    t_mdadm_agrees "$1" $M
}

# ---- 1. refusals, then the grow while a writer runs ----------------------------------------
d=$t_tmp/a
new_array "$d" 16M
if start_server --speed-limit 2M; then t_ok "serve the RAID-5 ($SZ bytes)"; else
    t_fail "serve" "$(cat "$t_tmp/server.err")"; t_finish; exit 1; fi
t_refused "refused, nothing written: --size larger than the members hold" "more than the smallest member" \
    timeout 20 $URAID grow --control "$ctl" --size 40M
t_refused "refused, nothing written: a smaller --size" "smaller than the array" \
    timeout 20 $URAID grow --control "$ctl" --size 8M
# shellcheck disable=SC2086
t_refused "refused: --control with the members named" "give --size alone" \
    timeout 20 $URAID grow --control "$ctl" --size max $M
timeout 20 $URAID check --control "$ctl" >/dev/null 2>&1
t_refused "refused, nothing written: a check running" "check is running" \
    timeout 20 $URAID grow --control "$ctl" --size max
timeout 20 $URAID idle --control "$ctl" >/dev/null 2>&1
wait_for "check stopped" 20 || wait_for "check finished" 1 || t_fail "the check stops" "$(bg_line)"
[ "$(timeout 10 nbdinfo --size "$uri")" = "$SZ" ] && t_ok "the export is still $SZ bytes" ||
    t_fail "the export's size after the refusals" "$(timeout 10 nbdinfo --size "$uri")"

rm -f "$t_tmp/stop"
writer &
writer_pid=$!
# a connection made before the grow, reading past the old end after it: NBD has no resize
qemu-io -f raw -c "sleep 3000" -c "read $SZ 4096" -c "read 0 4096" "$uri" >"$t_tmp/qio.old" 2>&1 &
old_pid=$!
sleep 1
out=$(timeout 20 $URAID grow --control "$ctl" --size max 2>&1)
case "$out" in *"resync started"*) t_ok "uraid grow --control --size max: $out" ;;
    *) t_fail "uraid grow --control --size max" "$out" ;; esac
new=$(timeout 10 nbdinfo --size "$uri")
# 32 MiB members: 30 MiB past the data offset, in whole chunks, 3 data members
[ "$new" = $((3 * 30 * 1048576)) ] && t_ok "a new NBD connection sees the new size ($new bytes, was $SZ)" ||
    t_fail "a new NBD connection sees the new size" "$new, want $((3 * 30 * 1048576))"
wait "$old_pid"
grep -q "read 4096/4096 bytes at offset 0" "$t_tmp/qio.old" && ! grep -q "bytes at offset $SZ" "$t_tmp/qio.old" &&
    t_ok "a connection made before the grow keeps its size (NBD has no resize): past the old end refused" ||
    t_fail "a connection made before the grow keeps its size" "$(tr '\n' ' ' <"$t_tmp/qio.old")"
line=$(bg_line)
st=$(status | sed -n 's/^ *State : //p')
echo "$line" | grep -Eq 'resync = [0-9]+\.[0-9]% \([0-9]+/30720\)' && t_ok "uraid status: $line" ||
    t_fail "uraid status shows md's resync line" "$line"
case "$st" in *resyncing*) t_ok "uraid status: State : $st" ;; *) t_fail "uraid status: State resyncing" "$st" ;; esac
# into the new region, read back
off=$((SZ + 4096 * 37)) nlen=$((1048576 * 5))
qemu-io -f raw -c "write -P 165 $off $nlen" -c "read -P 165 $off $nlen" "$uri" >"$t_tmp/qio.new" 2>&1 &&
    ! grep -q "verification failed" "$t_tmp/qio.new" && t_ok "a write into the new region reads back" ||
    t_fail "a write into the new region reads back" "$(tail -n 2 "$t_tmp/qio.new")"
touch "$t_tmp/stop"
wait "$writer_pid"; writer_pid=""
[ "$(cat "$t_tmp/wbad")" = 0 ] && t_ok "the writer: $(cat "$t_tmp/wn") writes in the old region, each read back" ||
    t_fail "the writer's writes" "$(cat "$t_tmp/wbad") of $(cat "$t_tmp/wn") failed"
wait_for "resync finished" 60 && t_ok "the new region's resync finishes: $(bg_line)" ||
    t_fail "the resync finishes" "$(bg_line)"
timeout 60 nbdcopy "$uri" "$t_tmp/out" || t_fail "nbdcopy the export"
got=$(head -c "$SZ" "$t_tmp/out" | sha256sum | cut -d' ' -f1)
[ "$got" = "$(sha256sum <"$d/model" | cut -d' ' -f1)" ] &&
    t_ok "the old bytes are the data and every write made during the grow" ||
    t_fail "the old bytes are as written" "sha $got"
want=$(head -c "$nlen" /dev/zero | tr '\000' '\245' | sha256sum | cut -d' ' -f1)
[ "$(dd if="$t_tmp/out" bs=4096 skip=$((off / 4096)) count=$((nlen / 4096)) status=none | sha256sum | cut -d' ' -f1)" = "$want" ] &&
    t_ok "the new region's write is there after the resync" || t_fail "the new region's write after the resync"
rm -f "$t_tmp/out"
stop_server && t_ok "the server stops cleanly" || t_fail "the server stops cleanly" "$(tail -n 3 "$t_tmp/server.err")"
checks "online" $((30 * 1024))

# ---- 2. the same through the default socket, the members named -----------------------------
d=$t_tmp/b
new_array "$d" 8M
# shellcheck disable=SC2086
$URAID serve $M --socket "$sock" 2>>"$t_tmp/server.err" &
server_pid=$!
n=0
while ! timeout 5 nbdinfo --size "$uri" >/dev/null 2>&1 && [ $n -lt 60 ]; do sleep 0.25; n=$((n + 1)); done
# shellcheck disable=SC2086
out=$(timeout 20 $URAID grow $M --size max 2>&1)
case "$out" in *"resync started"*) t_ok "uraid grow MEMBERS --size max on a served array goes to its server: $out" ;;
    *) t_fail "uraid grow MEMBERS --size max through the default socket" "$out" ;; esac
[ "$(timeout 10 nbdinfo --size "$uri")" = $((3 * 22 * 1048576)) ] && t_ok "a new connection sees $((3 * 22)) MiB" ||
    t_fail "the default socket's grow: new size" "$(timeout 10 nbdinfo --size "$uri")"
n=0
while [ $n -lt 120 ]; do
    # shellcheck disable=SC2086
    $URAID status $M 2>/dev/null | tail -n 1 | grep -q "resync finished" && break
    sleep 0.25; n=$((n + 1))
done
stop_server || t_fail "default socket: the server stops cleanly"
checks "default socket" $((22 * 1024))

# ---- 3. kill -9 in the new region's sync; the restart finishes it -----------------------------
d=$t_tmp/k
new_array "$d" 16M
start_server --speed-limit 1M || t_fail "kill: serve" "$(tail -n 3 "$t_tmp/server.err")"
out=$(timeout 20 $URAID grow --control "$ctl" --size max 2>&1)
case "$out" in *"resync started"*) ;; *) t_fail "kill: grow --control --size max" "$out" ;; esac
wait_for "resync = " 20 || t_fail "kill: the resync runs" "$(bg_line)"
sleep 1
for p in $(pgrep -P "$server_pid"); do kill -KILL "$p"; done
kill -KILL "$server_pid" 2>/dev/null
wait "$server_pid" 2>/dev/null
server_pid=""
x=$(mdadm --examine "$d/m0.img" 2>&1)
# resync_offset: 8 bytes at 208 in the 1.2 superblock (4 KiB in); mdadm --examine prints only the state
ro=$(od -An -tu8 -j $((4096 + 208)) -N8 "$d/m0.img" | tr -d ' ')
echo "$x" | grep -q "State : active" && [ "$ro" = $((14 * 2048)) ] &&
    t_ok "kill: mdadm --examine: State active; resync_offset $ro sectors (the old size: md's record)" ||
    t_fail "kill: md's record of the resync from the old size" "resync_offset $ro; $(echo "$x" | grep -i 'state :')"
start_server --speed-limit 1M || t_fail "kill: serve again" "$(tail -n 3 "$t_tmp/server.err")"
line=$(bg_line)
done=$(echo "$line" | sed -n 's/.*resync = [0-9.]*% (\([0-9]*\)\/30720).*/\1/p')
[ -n "$done" ] && [ "$done" -ge $((14 * 1024)) ] && t_ok "kill: the restarted server resyncs from the old size: $line" ||
    t_fail "kill: the restarted server resyncs from the old size (14336K)" "$line"
wait_for "resync finished" 120 && t_ok "kill: the resync finishes: $(bg_line)" || t_fail "kill: the resync finishes" "$(bg_line)"
timeout 60 nbdcopy "$uri" "$t_tmp/out" || t_fail "kill: nbdcopy the export"
[ "$(head -c "$SZ" "$t_tmp/out" | sha256sum | cut -d' ' -f1)" = "$(sha256sum <"$d/model" | cut -d' ' -f1)" ] &&
    t_ok "kill: the old bytes as before" || t_fail "kill: the old bytes as before"
rm -f "$t_tmp/out"
stop_server || t_fail "kill: the server stops cleanly"
checks "kill" $((30 * 1024))

# ---- 4. refused while a reshape is recorded --------------------------------------------------
d=$t_tmp/r
new_array "$d" 16M resync
truncate -s 32M "$d/m4.img"
start_server --speed-limit 1M || t_fail "reshape: serve"
out=$(timeout 20 $URAID grow --control "$ctl" --raid-devices 5 --add "$d/m4.img" 2>&1)
case "$out" in *started*) ;; *) t_fail "reshape: grow --control --raid-devices 5" "$out" ;; esac
timeout 20 $URAID frozen --control "$ctl" >/dev/null 2>&1
sleep 1
M="$M $d/m4.img"
t_refused "refused, nothing written: a reshape recorded" "reshape" timeout 20 $URAID grow --control "$ctl" --size max
stop_server || t_fail "reshape: the server stops cleanly"

# ---- 5. through FUSE: the file's size follows the array's -------------------------------------
if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
    t_fail "FUSE: needs root, /dev/fuse and fusermount3 to prove the mounted file grows"
else
    d=$t_tmp/f mnt=$t_tmp/mnt
    new_array "$d" 16M
    mkdir -p "$mnt"
    # shellcheck disable=SC2086
    $URAID mount --foreground --control "$ctl" $M "$mnt" >"$t_tmp/fuse.log" 2>&1 &
    fpid=$!
    t_at_exit '[ -n "$mnt" ] && timeout 10 fusermount3 -uz "$mnt" 2>/dev/null'
    n=0
    while [ ! -f "$mnt/array" ] && [ $n -lt 100 ] && kill -0 "$fpid" 2>/dev/null; do sleep 0.1; n=$((n + 1)); done
    [ "$(stat -c %s "$mnt/array" 2>/dev/null)" = "$SZ" ] && t_ok "FUSE: the file is $SZ bytes" ||
        t_fail "FUSE: the file's size before" "$(stat -c %s "$mnt/array" 2>&1) $(tail -n 2 "$t_tmp/fuse.log")"
    out=$(timeout 20 $URAID grow --control "$ctl" --size max 2>&1)
    case "$out" in *"resync started"*) ;; *) t_fail "FUSE: grow --control --size max" "$out" ;; esac
    sleep 1.5
    fsz=$(stat -c %s "$mnt/array")
    [ "$fsz" = $((3 * 30 * 1048576)) ] && t_ok "FUSE: the mounted file follows: $fsz bytes" ||
        t_fail "FUSE: the mounted file follows the new size" "$fsz"
    head -c 1048576 /dev/urandom >"$t_tmp/blk"
    dd if="$t_tmp/blk" of="$mnt/array" bs=65536 seek=$(((SZ + 1048576) / 65536)) conv=notrunc status=none &&
        [ "$(dd if="$mnt/array" bs=65536 skip=$(((SZ + 1048576) / 65536)) count=16 status=none | sha256sum)" = \
          "$(sha256sum <"$t_tmp/blk")" ] && t_ok "FUSE: a write past the old end reads back" ||
        t_fail "FUSE: a write past the old end reads back"
    n=0
    until timeout 10 $URAID status --control "$ctl" 2>&1 | tail -n 1 | grep -q "resync finished" || [ $n -ge 120 ]; do
        sleep 0.5; n=$((n + 1))
    done
    timeout 10 fusermount3 -u "$mnt"; wait "$fpid" && t_ok "FUSE: unmounted cleanly" || t_fail "FUSE: unmounted cleanly"
    mnt=""
    checks "FUSE" $((30 * 1024))
fi
t_finish
