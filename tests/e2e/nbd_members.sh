#!/bin/sh
# Members that are NBD exports (lib/member/nbd.c). Real nbdkit servers on
# Unix sockets serve the members: a RAID-6 of six file exports is created,
# written and read back identical; mdadm --examine of the files behind the
# exports agrees with uraid (the md format is unchanged over NBD); examine
# names the URI; a RAID-5 mixes a plain file with memory exports (one over
# TLS); the array
# is served over NBD itself and nbdcopy copies in and out; the control
# socket lists the URIs and fails one by name; a member layer stacks on an
# NBD member; a member whose server reports EIO on a range is rebuilt and
# rewritten (corrected-read counters); a server's EIO never fails the
# member, while a server killed during a write does (the array goes on
# degraded, data intact) and is rebuilt onto a new export; an unreachable,
# malformed or read-only member is refused by create with one line naming
# it and nothing is written.
# Every nbdkit runs in the foreground with --exit-with-parent and is killed
# on exit; every step is bounded by `timeout`.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

pids=""
cleanup() {
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$t_tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for tool in nbdkit nbdinfo nbdcopy mdadm; do
    command -v "$tool" >/dev/null 2>&1 || { t_fail "$tool installed (run scripts/deps.sh)"; t_finish; exit 1; }
done
if timeout 10 $URAID examine "nbd+unix:///?socket=$t_tmp/none" 2>&1 | grep -q "built without libnbd"; then
    t_fail "uraid built with libnbd (scripts/deps.sh installs libnbd-dev; then make clean all)"; t_finish; exit 1
fi

uri() { echo "nbd+unix:///?socket=$t_tmp/$1.sock"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

# serve NAME NBDKIT-ARGS...: nbdkit in the background on $t_tmp/NAME.sock;
# waits (at most 10 s) until nbdinfo answers. Sets last_pid.
serve() {
    name=$1; shift
    rm -f "$t_tmp/$name.sock"
    nbdkit -f --exit-with-parent --unix "$t_tmp/$name.sock" "$@" 2>>"$t_tmp/nbdkit.err" &
    last_pid=$!
    pids="$pids $last_pid"
    n=0
    while ! timeout 5 nbdinfo --size "$(uri "$name")" >/dev/null 2>&1; do
        n=$((n + 1))
        if [ $n -ge 40 ] || ! kill -0 "$last_pid" 2>/dev/null; then
            t_fail "nbdkit $name starts" "$(tail -n 2 "$t_tmp/nbdkit.err")"
            return 1
        fi
        sleep 0.25
    done
}

# A RAID-6 of six nbdkit file exports.
files="" uris=""
for i in 0 1 2 3 4 5; do
    truncate -s 32M "$t_tmp/d$i"
    serve "d$i" file "$t_tmp/d$i" || { t_finish; exit 1; }
    eval "pid_d$i=\$last_pid"
    files="$files $t_tmp/d$i"
    uris="$uris $(uri "d$i")"
done
# shellcheck disable=SC2086
if timeout 60 $URAID create --level 6 --raid-devices 6 --consistency-policy resync $uris >"$t_tmp/out" 2>&1; then
    t_ok "create a RAID-6 of six NBD exports"
else
    t_fail "create a RAID-6 of six NBD exports" "$(cat "$t_tmp/out")"; t_finish; exit 1
fi
head -c 40M /dev/urandom >"$t_tmp/data"
# shellcheck disable=SC2086
timeout 60 $URAID write $uris <"$t_tmp/data" >"$t_tmp/out" 2>&1 || t_fail "uraid write" "$(cat "$t_tmp/out")"
# shellcheck disable=SC2086
timeout 60 $URAID cat $uris 2>"$t_tmp/out" | head -c 40M >"$t_tmp/back"
[ "$(sha "$t_tmp/data")" = "$(sha "$t_tmp/back")" ] && t_ok "40 MiB written with uraid write read back identical by uraid cat" \
    || t_fail "write/cat round trip over NBD" "$(cat "$t_tmp/out")"
# shellcheck disable=SC2086
$URAID detail $uris >"$t_tmp/detail" 2>&1
if grep -q "\[6/6\] \[UUUUUU\]" "$t_tmp/detail" && grep -q "active sync *$(uri d5)\$" "$t_tmp/detail"; then
    t_ok "uraid detail lists the URIs as members, [6/6]"
else
    t_fail "uraid detail of URI members" "$(cat "$t_tmp/detail")"
fi
# The files behind the exports, read by mdadm: the md format is unchanged.
# shellcheck disable=SC2086
t_mdadm_agrees "RAID-6 written over NBD, mdadm reads the files" $files

timeout 10 $URAID examine "$(uri d3)" >"$t_tmp/ex" 2>&1
mduuid=$(mdadm --examine "$t_tmp/d3" | sed -n 's/^ *Array UUID : //p')
if [ -n "$mduuid" ] && head -n 1 "$t_tmp/ex" | grep -qF "$(uri d3):" && grep -q "Array UUID : $mduuid" "$t_tmp/ex" \
    && grep -q "Device Role : Active device 3" "$t_tmp/ex"; then
    t_ok "uraid examine of an NBD member names the URI; UUID and role match mdadm's on its file"
else
    t_fail "uraid examine of an NBD member" "$(head -n 6 "$t_tmp/ex") (mdadm UUID $mduuid)"
fi

# A member layer on one NBD member (the URI contains ':' itself): reads of
# its pending range fail and are rebuilt from parity.
# shellcheck disable=SC2086
timeout 60 $URAID cat -v --member-layer "$(uri d1):pending=8M+64K" $uris 2>"$t_tmp/out" | head -c 40M >"$t_tmp/back"
if [ "$(sha "$t_tmp/data")" = "$(sha "$t_tmp/back")" ] && grep -q "member $(uri d1): read error at sector 16384 .*rebuilding" "$t_tmp/out"; then
    t_ok "--member-layer URI:pending=8M+64K stacks on an NBD member: the read error is rebuilt, data identical"
else
    t_fail "--member-layer on an NBD member" "$(grep -v 'info: parity' "$t_tmp/out" | head -n 3)"
fi

# nbdkit's error filter: once the trigger file exists (after the array is
# open: the superblock must read) the server answers every read of d4 with
# EIO. A medium error, not a vanished disk: reads are served from parity and
# d4 is not failed. (cat opens read-only, so nothing is rewritten.)
serve e4 --filter=error file "$t_tmp/d4" error-pread-rate=100% error-pread-file="$t_tmp/trigger" || { t_finish; exit 1; }
e4_pid=$last_pid
kill -TERM "$pid_d4"; wait "$pid_d4" 2>/dev/null
uris_e=$(echo "$uris" | sed "s|$(uri d4)|$(uri e4)|")
# shellcheck disable=SC2086
timeout 60 $URAID cat --member-layer throttle=10M $uris_e 2>"$t_tmp/out" | head -c 40M >"$t_tmp/back" &
cpid=$!
# the trigger once data flows (every superblock has been read), however
# long a loaded machine takes to get there
n=0
while [ $n -lt 300 ] && [ "$(stat -c %s "$t_tmp/back")" -eq 0 ] && kill -0 "$cpid" 2>/dev/null; do
    sleep 0.1; n=$((n + 1))
done
touch "$t_tmp/trigger"
wait "$cpid"
rm -f "$t_tmp/trigger"
if [ "$(sha "$t_tmp/data")" = "$(sha "$t_tmp/back")" ] && grep -q "member $(uri e4): read error at .*Input/output error" "$t_tmp/out" \
    && ! grep -q "faulty\|gone" "$t_tmp/out"; then
    t_ok "a server answering EIO (error filter): reads rebuilt from parity, data identical, the member not failed"
else
    t_fail "server EIO is a medium error" "$(grep -v 'info: parity' "$t_tmp/out" | head -n 3)"
fi
kill -TERM "$e4_pid"; wait "$e4_pid" 2>/dev/null
serve d4 file "$t_tmp/d4" || { t_finish; exit 1; }

# Serving the NBD-member array over NBD: nbdcopy in and out, the control
# socket names the URIs and fails one by name.
sock=$t_tmp/array.sock ctl=$t_tmp/ctl.sock
auri="nbd+unix:///?socket=$sock"
# serve_array MEMBER...: `uraid serve` on $sock with control $ctl in the
# background (spid); waits (at most 15 s) until nbdinfo answers.
serve_array() {
    $URAID serve "$@" --socket "$sock" --control "$ctl" 2>"$t_tmp/serve.err" &
    spid=$!
    pids="$pids $spid"
    n=0
    while ! timeout 5 nbdinfo --size "$auri" >/dev/null 2>&1 && [ $n -lt 60 ] && kill -0 "$spid" 2>/dev/null; do
        sleep 0.25; n=$((n + 1))
    done
}
# shellcheck disable=SC2086
serve_array $uris
head -c 24M /dev/urandom >"$t_tmp/in.img"
if timeout 60 nbdcopy "$t_tmp/in.img" "$auri" 2>"$t_tmp/err" && timeout 60 nbdcopy "$auri" "$t_tmp/out.img" 2>>"$t_tmp/err"; then
    head -c 24M "$t_tmp/out.img" >"$t_tmp/out24.img"
    [ "$(sha "$t_tmp/in.img")" = "$(sha "$t_tmp/out24.img")" ] && t_ok "uraid serve of NBD members: nbdcopy 24 MiB in and the export out, identical" \
        || t_fail "nbdcopy round trip" "data differs"
else
    t_fail "nbdcopy through uraid serve" "$(cat "$t_tmp/err" "$t_tmp/serve.err" | tail -n 3)"
fi
timeout 20 $URAID status --control "$ctl" >"$t_tmp/status" 2>&1
grep -q "active .*$(uri d0)\$" "$t_tmp/status" && t_ok "uraid status lists the URI members" \
    || t_fail "uraid status lists URIs" "$(cat "$t_tmp/status")"
if timeout 20 $URAID fail --control "$ctl" "$(uri d5)" >"$t_tmp/out" 2>&1 \
    && timeout 20 $URAID status --control "$ctl" >"$t_tmp/status" 2>&1 && grep -q "faulty .*$(uri d5)\$" "$t_tmp/status"; then
    t_ok "uraid fail --control URI fails that member by name"
else
    t_fail "uraid fail --control URI" "$(cat "$t_tmp/out") $(grep "$(uri d5)" "$t_tmp/status")"
fi
timeout 20 $URAID stop --control "$ctl" >/dev/null 2>&1
n=0
while kill -0 "$spid" 2>/dev/null && [ $n -lt 80 ]; do sleep 0.25; n=$((n + 1)); done
wait "$spid" 2>/dev/null && t_ok "uraid stop: the server exits 0" || t_fail "uraid stop" "$(tail -n 3 "$t_tmp/serve.err")"
# shellcheck disable=SC2086
t_mdadm_agrees "after d5 was failed by its URI" $files

# RAID-5: three nbdkit memory exports (one of them over TLS with a
# pre-shared key: an nbds+unix URI) and one plain file.
mixed=""
for i in 0 1; do
    serve "m$i" memory 32M || { t_finish; exit 1; }
    mixed="$mixed $(uri "m$i")"
done
echo "alice:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$t_tmp/keys.psk"
rm -f "$t_tmp/m2.sock"
nbdkit -f --exit-with-parent --unix "$t_tmp/m2.sock" --tls=require --tls-psk="$t_tmp/keys.psk" memory 32M 2>>"$t_tmp/nbdkit.err" &
pids="$pids $!"
tls="nbds+unix://alice@/?socket=$t_tmp/m2.sock&tls-psk-file=$t_tmp/keys.psk"
n=0
while ! timeout 5 nbdinfo --size "$tls" >/dev/null 2>&1 && [ $n -lt 40 ]; do sleep 0.25; n=$((n + 1)); done
mixed="$mixed $tls"
truncate -s 32M "$t_tmp/f3"
mixed="$mixed $t_tmp/f3"
head -c 20M /dev/urandom >"$t_tmp/data5"
# shellcheck disable=SC2086
if timeout 60 $URAID create --level 5 --raid-devices 4 $mixed >"$t_tmp/out" 2>&1 \
    && timeout 60 $URAID write $mixed <"$t_tmp/data5" >>"$t_tmp/out" 2>&1; then
    # shellcheck disable=SC2086
    timeout 60 $URAID cat $mixed 2>>"$t_tmp/out" | head -c 20M >"$t_tmp/back"
    [ "$(sha "$t_tmp/data5")" = "$(sha "$t_tmp/back")" ] && t_ok "RAID-5 of 3 memory exports (one over TLS, nbds+unix://) and a file: 20 MiB read back identical" \
        || t_fail "RAID-5 mixed round trip" "$(cat "$t_tmp/out")"
else
    t_fail "RAID-5 of memory exports and a file" "$(cat "$t_tmp/out")"
fi

# A member whose server answers EIO on one range until it is written (an
# nbdkit sh plugin: a disk's pending sector). Served: the read is rebuilt
# and written back, the control socket counts the corrected read.
cat >"$t_tmp/pending.sh" <<'EOF'
#!/bin/sh
case "$1" in
    get_size) stat -c %s "$FILE" ;;
    can_write|can_flush|flush) exit 0 ;;
    pread)
        if [ ! -e "$FILE.healed" ] && [ "$4" -lt $((BAD_OFF + BAD_LEN)) ] && [ $(($4 + $3)) -gt "$BAD_OFF" ]; then
            echo "EIO pending sector" >&2; exit 1
        fi
        dd if="$FILE" skip="$4" count="$3" iflag=skip_bytes,count_bytes status=none ;;
    pwrite)
        dd of="$FILE" seek="$4" conv=notrunc oflag=seek_bytes status=none || exit 1
        if [ "$4" -le "$BAD_OFF" ] && [ $(($4 + $3)) -ge $((BAD_OFF + BAD_LEN)) ]; then touch "$FILE.healed"; fi ;;
    *) exit 2 ;;
esac
EOF
chmod +x "$t_tmp/pending.sh"
p5=""
for i in 0 1 2 3; do
    truncate -s 16M "$t_tmp/p$i"
    p5="$p5 $t_tmp/p$i"
done
head -c 12M /dev/urandom >"$t_tmp/data6"
# shellcheck disable=SC2086
timeout 60 $URAID create --level 5 --raid-devices 4 $p5 >/dev/null 2>&1 && timeout 60 $URAID write $p5 <"$t_tmp/data6" >/dev/null 2>&1 \
    || t_fail "create the RAID-5 for the pending-sector member"
FILE=$t_tmp/p2 BAD_OFF=$((6 << 20)) BAD_LEN=4096 serve p2 sh "$t_tmp/pending.sh" || { t_finish; exit 1; }
p5n=$(echo "$p5" | sed "s|$t_tmp/p2|$(uri p2)|")
# shellcheck disable=SC2086
serve_array $p5n
timeout 60 nbdcopy "$auri" "$t_tmp/out.img" 2>"$t_tmp/err"
timeout 20 $URAID status --control "$ctl" >"$t_tmp/status" 2>&1
corr=$(awk -v u="$(uri p2)" '$NF == u { print $(NF - 1) }' "$t_tmp/status")
head -c 12M "$t_tmp/out.img" >"$t_tmp/back"
if [ "$(sha "$t_tmp/data6")" = "$(sha "$t_tmp/back")" ] && [ -e "$t_tmp/p2.healed" ] && [ "${corr:-0}" -ge 1 ] \
    && grep -q "\[4/4\]" "$t_tmp/status"; then
    t_ok "a range the server fails with EIO is rebuilt and rewritten: data identical, $corr corrected read(s) on the URI, [4/4]"
else
    t_fail "pending range over NBD" "corrected='$corr' healed=$([ -e "$t_tmp/p2.healed" ] && echo yes || echo no) $(cat "$t_tmp/err") $(grep -E 'Status|corrected' "$t_tmp/status")"
fi
timeout 20 $URAID stop --control "$ctl" >/dev/null 2>&1
wait "$spid" 2>/dev/null

# A member's nbdkit killed in the middle of a write (members throttled so the
# write lasts a few seconds): that member is failed once its requests have
# waited out the timeout (",timeout=2s" after the URIs, instead of the
# default 30 s), the write completes degraded, and the data reads back from
# the five left.
kuri() { echo "$(uri "$1"),timeout=2s"; }
k="" kfiles=""
for i in 0 1 2 3 4 5; do
    truncate -s 48M "$t_tmp/k$i"
    serve "k$i" file "$t_tmp/k$i" || { t_finish; exit 1; }
    eval "pid_k$i=\$last_pid"
    k="$k $(kuri "k$i")"
    kfiles="$kfiles $t_tmp/k$i"
done
head -c 160M /dev/urandom >"$t_tmp/data7"
# shellcheck disable=SC2086
timeout 60 $URAID create --level 6 --raid-devices 6 --assume-clean --consistency-policy resync $k >/dev/null 2>&1 || t_fail "create the RAID-6 to kill a member of"
# shellcheck disable=SC2086
timeout 120 $URAID write --member-layer throttle=25M $k <"$t_tmp/data7" >"$t_tmp/out" 2>&1 &
wpid=$!
# kill k2 once the write is under way (data reaching k0), not before it
# has opened every member: a loaded machine can take seconds to get there
n=0
while [ $n -lt 300 ] && [ "$(stat -c %b "$t_tmp/k0")" -lt 4096 ] && kill -0 "$wpid" 2>/dev/null; do
    sleep 0.1; n=$((n + 1))
done
if kill -0 "$wpid" 2>/dev/null; then
    kill -KILL "$pid_k2"
    t_ok "nbdkit of member k2 killed while uraid write runs"
else
    t_fail "kill a member mid-write" "the write had already finished; slow the members down"
fi
wait "$wpid"
wrc=$?
k5=$(echo "$k" | sed "s|$(kuri k2)||")
# shellcheck disable=SC2086
timeout 60 $URAID cat $k5 2>"$t_tmp/cat.err" | head -c 160M >"$t_tmp/back"
# shellcheck disable=SC2086
$URAID detail $k5 >"$t_tmp/detail" 2>&1
if [ $wrc -eq 0 ] && grep -q "member $(kuri k2) failed while writing .*marked faulty" "$t_tmp/out" \
    && [ "$(sha "$t_tmp/data7")" = "$(sha "$t_tmp/back")" ] && grep -q "\[6/5\]" "$t_tmp/detail"; then
    t_ok "the killed member is failed, the write completes degraded [6/5], 160 MiB read back identical"
else
    t_fail "member killed mid-write" "rc=$wrc $(grep -v 'info:' "$t_tmp/out" | head -n 3) $(cat "$t_tmp/cat.err") $(grep Status "$t_tmp/detail")"
fi
# shellcheck disable=SC2086
t_mdadm_agrees "k2 killed mid-write" $kfiles

# A new NBD export takes the killed member's place: rebuilt onto it.
truncate -s 48M "$t_tmp/k6"
serve k6 file "$t_tmp/k6" || { t_finish; exit 1; }
# shellcheck disable=SC2086
timeout 120 $URAID rebuild --spare "$(uri k6)" $k5 >"$t_tmp/out" 2>&1
# shellcheck disable=SC2086
timeout 60 $URAID cat $k5 "$(uri k6)" 2>>"$t_tmp/out" | head -c 160M >"$t_tmp/back"
# shellcheck disable=SC2086
$URAID detail $k5 "$(uri k6)" >"$t_tmp/detail" 2>&1
if [ "$(sha "$t_tmp/data7")" = "$(sha "$t_tmp/back")" ] && grep -q "\[6/6\]" "$t_tmp/detail" \
    && grep -q "active sync *$(uri k6)\$" "$t_tmp/detail"; then
    t_ok "uraid rebuild --spare URI: the new export takes the slot [6/6], data identical"
else
    t_fail "rebuild onto an NBD spare" "$(tail -n 2 "$t_tmp/out") $(grep Status "$t_tmp/detail")"
fi

# Bad members for create: one line naming the member, non-zero exit, and
# the other members (fresh exports) unchanged.
g="" gfiles=""
for i in 0 1 2 3 4; do
    truncate -s 16M "$t_tmp/g$i"
    serve "g$i" file "$t_tmp/g$i" || { t_finish; exit 1; }
    g="$g $(uri "g$i")"
    gfiles="$gfiles $t_tmp/g$i"
done
serve ro -r memory 16M || { t_finish; exit 1; }
members_sha() { for f in $gfiles; do sha256sum "$f"; done | sha256sum | cut -d' ' -f1; }
bad_member() {
    what=$1 bad=$2
    before=$(members_sha)
    # shellcheck disable=SC2086
    timeout 30 $URAID create --level 6 --raid-devices 6 $g "$bad" >"$t_tmp/bad.out" 2>&1
    rc=$?
    lines=$(wc -l <"$t_tmp/bad.out")
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$lines" -eq 1 ] && grep -qF "member $bad:" "$t_tmp/bad.out" \
        && grep -q "$3" "$t_tmp/bad.out" && [ "$before" = "$(members_sha)" ]; then
        t_ok "create refuses $what ($(cat "$t_tmp/bad.out"))"
    else
        t_fail "create refuses $what" "rc=$rc lines=$lines members $([ "$before" = "$(members_sha)" ] && echo same || echo CHANGED): $(cat "$t_tmp/bad.out")"
    fi
}
bad_member "an unreachable URI" "nbd+unix:///?socket=$t_tmp/nobody.sock" "No such file"
bad_member "an unreachable TCP URI" "nbd://127.0.0.1:1/" "refused"
bad_member "a malformed URI" "nbd://localhost:notaport/x" "parse"
bad_member "a URI without its socket" "nbd+unix:///?sockt=$t_tmp/x" "socket"
bad_member "a read-only export (nbdkit -r)" "$(uri ro)" "read-only"

t_finish
