#!/bin/sh
# Serving over NBD (issue 5): `uraid serve` runs nbdkit with the uraid
# plugin; real clients use the export. A 6-member RAID-6 of 64 MiB sparse
# files: nbdinfo's size equals `uraid detail`'s; nbdcopy and qemu-img copy
# images in and out unchanged; fio (8 connections, random writes of 4k-512k,
# crc32c verify) passes, also while a member fails on a write error mid-run;
# `uraid fail --control` mid-run likewise, and `uraid stop` stops it;
# SIGTERM leaves a clean array; after each server mdadm --examine agrees with
# uraid on roles, faulty members and events (t_mdadm_agrees); a second
# server on a live socket, bad options and bad members are refused with one
# line and leave the members untouched. Every step is bounded by `timeout`.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

PLUGIN=build/nbdkit-uraid-plugin.so
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$t_tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Needs everything: scripts/deps.sh installs these, so absence is a failure.
for tool in nbdkit nbdinfo nbdcopy qemu-img fio mdadm; do
    command -v "$tool" >/dev/null 2>&1 || { t_fail "$tool installed (run scripts/deps.sh)"; t_finish; exit 1; }
done
[ -f "$PLUGIN" ] || { t_fail "$PLUGIN built (make all with nbdkit-plugin-dev)"; t_finish; exit 1; }

sock=$t_tmp/nbd.sock
uri="nbd+unix:///?socket=$sock"
m=""
for i in 0 1 2 3 4 5; do
    truncate -s 64M "$t_tmp/d$i"
    m="$m $t_tmp/d$i"
done
# shellcheck disable=SC2086
if timeout 60 $URAID create --level 6 --raid-devices 6 $m >"$t_tmp/create.out" 2>&1; then
    t_ok "create a 6-member RAID-6"
else
    t_fail "create" "$(cat "$t_tmp/create.out")"; t_finish; exit 1
fi

members_sha() { for f in $m; do sha256sum "$f"; done | sha256sum | cut -d' ' -f1; }

# bad_input NAME ARGS...: `uraid serve ARGS` must fail at once with a
# one-line message and leave every member as it was.
bad_input() {
    name=$1; shift
    before=$(members_sha)
    timeout 20 env ${serve_env:-} $URAID serve "$@" >"$t_tmp/bad.out" 2>&1
    rc=$?
    lines=$(wc -l <"$t_tmp/bad.out")
    after=$(members_sha)
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$lines" -eq 1 ] && [ "$before" = "$after" ] && [ ! -e "$sock" ]; then
        t_ok "refused: $name ($(cat "$t_tmp/bad.out"))"
    else
        t_fail "refused: $name" "rc=$rc lines=$lines members $( [ "$before" = "$after" ] && echo same || echo CHANGED): $(cat "$t_tmp/bad.out")"
    fi
}
head -c 8M /dev/urandom >"$t_tmp/notarray"
# shellcheck disable=SC2086
bad_input "unknown option" --frobnicate $m --socket "$sock"
# shellcheck disable=SC2086
bad_input "missing member file" $m "$t_tmp/nosuch" --socket "$sock"
# shellcheck disable=SC2086
bad_input "a member given twice" $m "$t_tmp/d0" --socket "$sock"
# shellcheck disable=SC2086
bad_input "a non-array file" $m "$t_tmp/notarray" --socket "$sock"
# shellcheck disable=SC2086
bad_input "--socket and --port together" $m --socket "$sock" --port 10809
# shellcheck disable=SC2086
serve_env=PATH=/nonexistent bad_input "nbdkit missing" $m --socket "$sock"
serve_env=""
grep -q "nbdkit is not installed: apt-get install nbdkit" "$t_tmp/bad.out" && t_ok "missing nbdkit is named" \
    || t_fail "missing nbdkit is named" "$(cat "$t_tmp/bad.out")"

# start_server ARGS...: serves the array on $sock in the background and
# waits (at most 15 s) until nbdinfo answers.
start_server() {
    # shellcheck disable=SC2086
    $URAID serve $m --socket "$sock" "$@" 2>>"$t_tmp/server.err" &
    server_pid=$!
    n=0
    while ! timeout 5 nbdinfo --size "$uri" >/dev/null 2>&1; do
        n=$((n + 1))
        if [ $n -ge 60 ] || ! kill -0 "$server_pid" 2>/dev/null; then
            return 1
        fi
        sleep 0.25
    done
}

# stop_server: SIGTERM; the server must exit 0 within 20 s and remove its socket.
stop_server() {
    kill -TERM "$server_pid"
    n=0
    while kill -0 "$server_pid" 2>/dev/null && [ $n -lt 80 ]; do sleep 0.25; n=$((n + 1)); done
    if kill -0 "$server_pid" 2>/dev/null; then
        kill -KILL "$server_pid"; wait "$server_pid"; server_pid=""
        return 1
    fi
    wait "$server_pid"
    rc=$?
    server_pid=""
    [ "$rc" -eq 0 ] && [ ! -e "$sock" ]
}

if start_server; then
    t_ok "uraid serve answers nbdinfo on $sock"
else
    t_fail "uraid serve starts" "$(cat "$t_tmp/server.err")"; t_finish; exit 1
fi

# shellcheck disable=SC2086
want=$(( $($URAID detail $m | awk '/Array Size :/ {print $4}') * 1024 ))
got=$(timeout 10 nbdinfo --size "$uri")
[ "$got" = "$want" ] && t_ok "nbdinfo size $got = uraid detail Array Size x 1024" \
    || t_fail "nbdinfo size" "nbdinfo $got, detail $want"
timeout 10 nbdinfo "$uri" >"$t_tmp/info" 2>&1
grep -q "can_multi_conn: true" "$t_tmp/info" && grep -q "can_fua: true" "$t_tmp/info" \
    && grep -q "can_flush: true" "$t_tmp/info" && t_ok "export offers flush, FUA and multi-conn" \
    || t_fail "export flags" "$(cat "$t_tmp/info")"
grep -q "can_trim: true" "$t_tmp/info" && grep -q "can_zero: true" "$t_tmp/info" \
    && t_ok "export offers trim and zero" || t_fail "trim/zero flags" "$(cat "$t_tmp/info")"

# A second server on the same live socket is refused and the first keeps serving.
# shellcheck disable=SC2086
timeout 20 $URAID serve $m --socket "$sock" >"$t_tmp/second.out" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "already listening" "$t_tmp/second.out" && timeout 5 nbdinfo --size "$uri" >/dev/null 2>&1; then
    t_ok "second server on a live socket refused"
else
    t_fail "second server on a live socket refused" "rc=$rc $(cat "$t_tmp/second.out")"
fi

sha() { sha256sum "$1" | cut -d' ' -f1; }
size=$got

# nbdcopy 100 MiB in, the whole export out. The image has a hole, which
# nbdcopy sends as zero requests (uraid_write_zeroes on the server).
head -c 100M /dev/urandom >"$t_tmp/in.img"
fallocate -p -o 40M -l 17M "$t_tmp/in.img"
start=$(date +%s%N)
if timeout 60 nbdcopy "$t_tmp/in.img" "$uri" 2>"$t_tmp/err" && timeout 60 nbdcopy "$uri" "$t_tmp/out.img" 2>>"$t_tmp/err"; then
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    head -c 100M "$t_tmp/out.img" >"$t_tmp/out100.img"
    [ "$(sha "$t_tmp/in.img")" = "$(sha "$t_tmp/out100.img")" ] && [ "$(stat -c %s "$t_tmp/out.img")" = "$size" ] \
        && t_ok "nbdcopy 100 MiB in and the export out: identical (${ms} ms for both)" \
        || t_fail "nbdcopy round trip" "data differs"
else
    t_fail "nbdcopy" "$(cat "$t_tmp/err")"
fi

# qemu-img reads the export (the same bytes nbdcopy read) and writes an image into it.
if timeout 60 qemu-img convert -f raw -O raw "$uri" "$t_tmp/qemu-out.img" 2>"$t_tmp/err"; then
    [ "$(sha "$t_tmp/qemu-out.img")" = "$(sha "$t_tmp/out.img")" ] && t_ok "qemu-img convert from the export: identical" \
        || t_fail "qemu-img convert from the export" "data differs"
else
    t_fail "qemu-img convert from the export" "$(cat "$t_tmp/err")"
fi
head -c 64M /dev/urandom >"$t_tmp/q-in.img"
if timeout 60 qemu-img convert -n -f raw -O raw "$t_tmp/q-in.img" "$uri" 2>"$t_tmp/err" \
    && timeout 60 nbdcopy "$uri" "$t_tmp/q-back.img" 2>>"$t_tmp/err"; then
    head -c 64M "$t_tmp/q-back.img" >"$t_tmp/q-back64.img"
    [ "$(sha "$t_tmp/q-in.img")" = "$(sha "$t_tmp/q-back64.img")" ] && t_ok "qemu-img convert into the export: read back identical" \
        || t_fail "qemu-img convert into the export" "data differs"
else
    t_fail "qemu-img convert into the export" "$(cat "$t_tmp/err")"
fi
rm -f "$t_tmp"/*.img

# fio: 8 jobs, each on its own connection and 30 MiB region, random writes of
# 4k-512k, every block verified by crc32c after the write phase.
run_fio() {
    timeout 90 fio --name=nbd --ioengine=nbd --uri="$uri" --rw=randwrite --bsrange=4k-512k --numjobs=8 \
        --iodepth=4 --size=30M --offset_increment=30M --verify=crc32c --verify_fatal=1 --do_verify=1 --verify_state_save=0 \
        --runtime=40 --group_reporting --output-format=terse >"$t_tmp/fio.out" 2>&1
}
start=$(date +%s%N)
if run_fio; then
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    t_ok "fio randwrite 8 jobs x 30 MiB, crc32c verify passes (${ms} ms)"
else
    t_fail "fio verify" "$(tail -n 5 "$t_tmp/fio.out")"
fi

if stop_server; then t_ok "SIGTERM stops the server (exit 0, socket removed)"; else t_fail "server stops on SIGTERM" "$(tail -n 3 "$t_tmp/server.err")"; fi

# shellcheck disable=SC2086
$URAID detail $m >"$t_tmp/detail" 2>&1
grep -q "State : clean$" "$t_tmp/detail" && grep -q "\[6/6\] \[UUUUUU\]" "$t_tmp/detail" \
    && t_ok "after the server stops: State : clean [UUUUUU]" || t_fail "clean after stop" "$(cat "$t_tmp/detail")"
# shellcheck disable=SC2086
t_mdadm_agrees "after SIGTERM" $m
# shellcheck disable=SC2086
$URAID check $m >"$t_tmp/check" 2>&1 && grep -q "mismatch_cnt 0" "$t_tmp/check" \
    && t_ok "parity consistent after writes, zeroes and trims: check finds mismatch_cnt 0" \
    || t_fail "check after serving" "$(tail -3 "$t_tmp/check")"

# A member that fails on a write error in the middle of the fio run (a
# simulated disk error past the first 8 MiB of d3's data): the engine fails
# it, every write still lands and verifies, and the stopped array records
# the member faulty.
if start_server --member-layer "$t_tmp/d3:write-eio=24M+8M"; then
    if run_fio; then
        t_ok "fio verify passes while member d3 fails on a write error mid-run"
    else
        t_fail "fio verify with a failing member" "$(tail -n 5 "$t_tmp/fio.out")"
    fi
    stop_server || t_fail "server stops on SIGTERM (failing member)"
    # shellcheck disable=SC2086
    $URAID detail $m >"$t_tmp/detail" 2>&1
    grep -q "\[6/5\]" "$t_tmp/detail" && t_ok "the failed member is recorded: [6/5]" \
        || t_fail "failed member recorded" "$(grep -E 'State :|Status' "$t_tmp/detail")"
    # shellcheck disable=SC2086
    t_mdadm_agrees "d3 failed on a write error" $m
else
    t_fail "serve with a fault layer" "$(tail -n 3 "$t_tmp/server.err")"
fi

# The control socket: on a fresh array, `uraid fail --control` takes a member
# out while fio writes (members throttled so the run lasts a few seconds),
# fio still verifies, `uraid status` shows [6/5], and `uraid stop` shuts the
# server down cleanly.
m=""
for i in 0 1 2 3 4 5; do
    rm -f "$t_tmp/d$i"; truncate -s 64M "$t_tmp/d$i"
    m="$m $t_tmp/d$i"
done
ctl=$t_tmp/ctl.sock
# shellcheck disable=SC2086
timeout 60 $URAID create --level 6 --raid-devices 6 --assume-clean $m >/dev/null 2>&1 || t_fail "second create"
if start_server --control "$ctl" --member-layer "throttle=40M"; then
    run_fio &
    fio_pid=$!
    sleep 1.5
    if timeout 20 $URAID fail --control "$ctl" "$t_tmp/d2" >"$t_tmp/fail.out" 2>&1; then
        kill -0 "$fio_pid" 2>/dev/null && t_ok "uraid fail --control d2 while fio runs" \
            || t_fail "fail was mid-run" "fio had already finished; slow the members down"
    else
        t_fail "uraid fail --control" "$(cat "$t_tmp/fail.out")"
    fi
    if wait "$fio_pid"; then
        t_ok "fio verify passes with d2 failed mid-run"
    else
        t_fail "fio verify with d2 failed mid-run" "$(tail -n 5 "$t_tmp/fio.out")"
    fi
    timeout 20 $URAID status --control "$ctl" >"$t_tmp/status" 2>&1
    grep -q "\[6/5\]" "$t_tmp/status" && t_ok "uraid status --control shows [6/5]" \
        || t_fail "uraid status --control" "$(cat "$t_tmp/status")"
    timeout 20 $URAID stop --control "$ctl" >"$t_tmp/stop.out" 2>&1 || t_fail "uraid stop --control" "$(cat "$t_tmp/stop.out")"
    n=0
    while kill -0 "$server_pid" 2>/dev/null && [ $n -lt 80 ]; do sleep 0.25; n=$((n + 1)); done
    if kill -0 "$server_pid" 2>/dev/null; then
        t_fail "uraid stop --control stops the server"
    else
        wait "$server_pid"; rc=$?; server_pid=""
        [ $rc -eq 0 ] && [ ! -e "$sock" ] && [ ! -e "$ctl" ] && t_ok "uraid stop --control: server exits 0, both sockets removed" \
            || t_fail "uraid stop --control" "rc=$rc $(ls "$t_tmp")"
    fi
    # shellcheck disable=SC2086
    $URAID detail $m >"$t_tmp/detail" 2>&1
    grep -q "\[6/5\]" "$t_tmp/detail" && grep -q "State : clean, degraded" "$t_tmp/detail" \
        && t_ok "after stop: clean, degraded [6/5]" || t_fail "after stop" "$(grep -E 'State :|Status' "$t_tmp/detail")"
    # shellcheck disable=SC2086
    t_mdadm_agrees "d2 failed through the control socket" $m
else
    t_fail "serve with --control" "$(tail -n 3 "$t_tmp/server.err")"
fi

t_finish
