#!/bin/sh
# NBD members far away, through a served array (`uraid serve --control`) the
# way users run one: a RAID-6 (write-intent bitmap) of six nbdkit file
# exports, each behind nbdkit's log filter (which logs every request's start
# and end) and delay filter (5 ms per request, a remote export's round trip),
# named "URI,timeout=3s". nbdcopy copies in and out.
#   - pipelining: data identical, and every member's log shows more than 4
#     requests at the server at once (one request per connection on 4
#     connections would be 4 at most);
#   - a member's server killed during a copy: the member is failed within
#     the timeout (plus slack), the copy completes, data identical;
#   - that server restarted: `uraid remove` and `uraid add` of the URI over
#     the control socket bring it back (a bitmap re-add), the array is whole
#     [6/6] again, data identical;
#   - a member's server stopped (SIGSTOP) during a read: the member is failed
#     after the timeout instead of hanging the array, the read completes,
#     data identical; resumed, removed and added again, whole;
#   - a member's server killed and restarted 0.5 s later during a copy: an
#     outage shorter than the timeout, ridden out: no member failed, [6/6];
#   - at rest, mdadm --examine of the files agrees with uraid.
# Every nbdkit runs with --exit-with-parent and is killed on exit; every
# step is bounded by `timeout`.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

pids=""
spid=""
cleanup() {
    for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
    [ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null
    for p in $pids $spid; do wait "$p" 2>/dev/null; done
    [ -n "${URAID_TEST_KEEP:-}" ] || rm -rf "$t_tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for tool in nbdkit nbdinfo nbdcopy mdadm; do
    command -v "$tool" >/dev/null 2>&1 || { t_fail "$tool installed (run scripts/deps.sh)"; t_finish; exit 1; }
done

TIMEOUT=3
uri() { echo "nbd+unix:///?socket=$t_tmp/$1.sock,timeout=${TIMEOUT}s"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

# member I: nbdkit for d$I in the background (sets pid_dI); waits until it answers.
member() {
    rm -f "$t_tmp/d$1.sock"
    nbdkit -f --exit-with-parent --unix "$t_tmp/d$1.sock" --filter=log --filter=delay file "$t_tmp/d$1" \
        logfile="$t_tmp/d$1.log" delay-read=5ms delay-write=5ms 2>>"$t_tmp/nbdkit.err" &
    eval "pid_d$1=\$!"
    pids="$pids $!"
    n=0
    while ! timeout 5 nbdinfo --size "nbd+unix:///?socket=$t_tmp/d$1.sock" >/dev/null 2>&1; do
        n=$((n + 1))
        [ $n -lt 40 ] || { t_fail "nbdkit d$1 starts" "$(tail -n 2 "$t_tmp/nbdkit.err")"; return 1; }
        sleep 0.25
    done
}

# The most requests a member's log shows started and not yet answered at once.
max_inflight() {
    awk '/ (Read|Write) id=/ { n++; if (n > max) max = n } /\.\.\.(Read|Write) id=/ { n-- } END { print max + 0 }' "$1"
}

files="" uris=""
for i in 0 1 2 3 4 5; do
    truncate -s 40M "$t_tmp/d$i"
    member "$i" || { t_finish; exit 1; }
    files="$files $t_tmp/d$i"
    uris="$uris $(uri "d$i")"
done
# shellcheck disable=SC2086
if ! timeout 60 $URAID create --level 6 --raid-devices 6 --chunk 64K --bitmap internal --assume-clean $uris >"$t_tmp/out" 2>&1; then
    t_fail "create a RAID-6 of six far NBD exports (URI,timeout=${TIMEOUT}s)" "$(cat "$t_tmp/out")"; t_finish; exit 1
fi

sock=$t_tmp/array.sock ctl=$t_tmp/ctl.sock
auri="nbd+unix:///?socket=$sock"
# shellcheck disable=SC2086
$URAID serve $uris --socket "$sock" --control "$ctl" 2>"$t_tmp/serve.err" &
spid=$!
n=0
while ! timeout 5 nbdinfo --size "$auri" >/dev/null 2>&1 && [ $n -lt 60 ] && kill -0 "$spid" 2>/dev/null; do
    sleep 0.25; n=$((n + 1))
done
status() { timeout 20 $URAID status --control "$ctl" 2>&1; }
# wait_status PATTERN SECONDS: polls the status until it matches; prints the seconds it took.
wait_status() {
    t0=$(date +%s%N)
    while :; do
        status | grep -q "$1" && { echo $((($(date +%s%N) - t0) / 1000000)); return 0; }
        [ $((($(date +%s%N) - t0) / 1000000000)) -lt "$2" ] || return 1
        sleep 0.1
    done
}
# readd I: remove and add the member by its URI over the control socket, then wait until whole.
readd() {
    timeout 20 $URAID remove --control "$ctl" "$(uri "d$1")" >"$t_tmp/ra" 2>&1 \
        && timeout 20 $URAID add --control "$ctl" "$(uri "d$1")" >>"$t_tmp/ra" 2>&1 \
        && wait_status "\[6/6\]" 60 >/dev/null
}

# ---- pipelining ----
head -c 24M /dev/urandom >"$t_tmp/in1"
if timeout 120 nbdcopy "$t_tmp/in1" "$auri" 2>"$t_tmp/err" && timeout 120 nbdcopy "$auri" "$t_tmp/out.img" 2>>"$t_tmp/err"; then
    head -c 24M "$t_tmp/out.img" >"$t_tmp/back"
    [ "$(sha "$t_tmp/in1")" = "$(sha "$t_tmp/back")" ] && t_ok "nbdcopy 24 MiB in and the export out through far members, identical" \
        || t_fail "nbdcopy round trip through far members" "data differs"
else
    t_fail "nbdcopy through far members" "$(cat "$t_tmp/err" "$t_tmp/serve.err" | tail -n 3)"
fi
counts="" few=0
for i in 0 1 2 3 4 5; do
    c=$(max_inflight "$t_tmp/d$i.log")
    counts="$counts d$i:$c"
    [ "$c" -gt 4 ] || few=1
done
[ $few -eq 0 ] && t_ok "every member had more than 4 requests at its server at once (most at once:$counts)" \
    || t_fail "more than 4 requests in flight per member" "most at once:$counts"

# ---- a server killed during a copy ----
# A member is only found dead by a request to it (as in md): the array is
# read as soon as the server is killed, so requests reach the dead member.
head -c 24M /dev/urandom >"$t_tmp/in2"
timeout 120 nbdcopy "$t_tmp/in2" "$auri" 2>"$t_tmp/err"; crc=$?
timeout 120 nbdcopy "$auri" "$t_tmp/out.img" 2>"$t_tmp/err" &
cpid=$!
sleep 0.2
kill -KILL "$pid_d1"
t_kill=$(date +%s%N)
wait "$pid_d1" 2>/dev/null
timeout 120 nbdcopy "$auri" "$t_tmp/out2.img" 2>>"$t_tmp/err" &
cpid2=$!
if wait_status "faulty .*$(uri d1)\$" $((TIMEOUT + 20)) >/dev/null; then
    total=$((($(date +%s%N) - t_kill) / 1000000))
    [ "$total" -le $(((TIMEOUT + 5) * 1000)) ] && t_ok "killed server: the member is failed ${total} ms after the kill (timeout ${TIMEOUT} s)" \
        || t_fail "killed server fails the member within the timeout" "${total} ms"
else
    t_fail "killed server: the member is failed" "$(status | grep "d1.sock")"
fi
wait "$cpid"; r1=$?
wait "$cpid2"; r2=$?
head -c 24M "$t_tmp/out.img" >"$t_tmp/back"
head -c 24M "$t_tmp/out2.img" >"$t_tmp/back2"
[ $crc -eq 0 ] && [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ "$(sha "$t_tmp/in2")" = "$(sha "$t_tmp/back")" ] \
    && [ "$(sha "$t_tmp/in2")" = "$(sha "$t_tmp/back2")" ] && status | grep -q "\[6/5\]" \
    && t_ok "the reads across the kill completed degraded [6/5], data identical" \
    || t_fail "reads across a killed member" "rc=$crc/$r1/$r2 $(tail -n 2 "$t_tmp/err") $(status | head -n 1)"

# ---- the server restarted: added again ----
member 1 || { t_finish; exit 1; }
if readd 1; then
    timeout 120 nbdcopy "$auri" "$t_tmp/out.img" 2>>"$t_tmp/err"
    head -c 24M "$t_tmp/out.img" >"$t_tmp/back"
    [ "$(sha "$t_tmp/in2")" = "$(sha "$t_tmp/back")" ] \
        && t_ok "restarted server: uraid remove + add of the URI over the control socket, whole [6/6], data identical ($(grep -o 're-added[^:]*' "$t_tmp/ra" | head -n 1))" \
        || t_fail "re-added member: data" "differs"
else
    t_fail "restarted server re-added" "$(cat "$t_tmp/ra") $(status | head -n 3)"
fi

# ---- a stalled server (SIGSTOP) during a read ----
kill -STOP "$pid_d2"
t_stop=$(date +%s%N)
timeout 120 nbdcopy "$auri" "$t_tmp/out.img" 2>"$t_tmp/err"
crc=$?
took=$((($(date +%s%N) - t_stop) / 1000000))
head -c 24M "$t_tmp/out.img" >"$t_tmp/back"
if [ $crc -eq 0 ] && [ "$(sha "$t_tmp/in2")" = "$(sha "$t_tmp/back")" ] && status | grep -q "faulty .*$(uri d2)\$"; then
    t_ok "stopped server: the member failed after the timeout, the read completed in ${took} ms, data identical"
else
    t_fail "stopped server fails the member" "rc=$crc took=${took}ms $(tail -n 2 "$t_tmp/err") $(status | grep d2.sock)"
fi
kill -CONT "$pid_d2"
# nbdkit 1.32 can die of an assertion (raw_send_socket: sock >= 0) when it
# resumes with the connections closed under it: then it is started again.
sleep 0.5
kill -0 "$pid_d2" 2>/dev/null || member 2 || { t_finish; exit 1; }
readd 2 && t_ok "the resumed server: removed and added again, whole [6/6]" \
    || t_fail "resumed server re-added" "$(cat "$t_tmp/ra") $(status | head -n 3)"

# ---- a short outage: killed and restarted within the timeout ----
# Writes and then reads run across the outage, so requests wait for the
# server to come back.
head -c 24M /dev/urandom >"$t_tmp/in3"
timeout 120 nbdcopy "$t_tmp/in3" "$auri" 2>"$t_tmp/err" &
cpid=$!
sleep 0.1
kill -KILL "$pid_d3"
wait "$pid_d3" 2>/dev/null
timeout 120 nbdcopy "$auri" "$t_tmp/out2.img" 2>>"$t_tmp/err" &
cpid2=$!
sleep 0.5
member 3 || { t_finish; exit 1; }
wait "$cpid"; crc=$?
wait "$cpid2"; r2=$?
timeout 120 nbdcopy "$auri" "$t_tmp/out.img" 2>>"$t_tmp/err"
head -c 24M "$t_tmp/out.img" >"$t_tmp/back"
lost=$(grep -c "d3.sock,timeout=${TIMEOUT}s: NBD connection lost" "$t_tmp/serve.err")
if [ $crc -eq 0 ] && [ $r2 -eq 0 ] && [ "$(sha "$t_tmp/in3")" = "$(sha "$t_tmp/back")" ] && status | grep -q "\[6/6\]" \
    && ! status | grep -q faulty && [ "$lost" -ge 1 ] && grep -q "d3.sock,timeout=${TIMEOUT}s: NBD connection open again" "$t_tmp/serve.err"; then
    t_ok "a server killed and back within the timeout: requests sent again on a new connection, no member failed, [6/6], data identical"
else
    t_fail "short outage ridden out" "rc=$crc/$r2 lost=$lost $(tail -n 2 "$t_tmp/err") $(status | head -n 8)"
fi

timeout 20 $URAID stop --control "$ctl" >/dev/null 2>&1
n=0
while kill -0 "$spid" 2>/dev/null && [ $n -lt 80 ]; do sleep 0.25; n=$((n + 1)); done
wait "$spid" 2>/dev/null || t_fail "uraid stop" "$(tail -n 3 "$t_tmp/serve.err")"
spid=""
# shellcheck disable=SC2086
t_mdadm_agrees "far members after kill, stall, outage and re-adds" $files

t_finish
