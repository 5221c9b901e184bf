#!/bin/sh
# Events for a monitor, as mdadm --monitor's PROGRAM gets them: a serving
# array (`uraid serve --event-cmd PROG`) runs `PROG EVENT ARRAY [MEMBER]`
# with URAID_* in its environment. A member failed through the control
# socket gives Fail; the spare taking its slot RebuildStarted,
# SpareActive and RebuildFinished; a check RebuildStarted and
# RebuildFinished with its mismatch_cnt; a restart with a member missing
# DegradedArray. A program that fails is logged, and serving goes on.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

T="timeout 60"
sock=$t_tmp/nbd.sock
ctl=$t_tmp/ctl.sock
uri="nbd+unix:///?socket=$sock"
log=$t_tmp/events.log
server_pid=""
t_at_exit '[ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null'
t_need nbdkit nbdinfo mdadm timeout

d() { echo "$t_tmp/d$1.img"; }
for i in 0 1 2 3 4; do truncate -s 32M "$(d $i)"; done
m="$(d 0) $(d 1) $(d 2) $(d 3)"
# shellcheck disable=SC2086
$T $URAID create --level 5 --raid-devices 4 --spare-devices 1 --chunk 64K --name events $m "$(d 4)" \
    >"$t_tmp/create.log" 2>&1 && t_ok "create RAID-5 with a spare" \
    || { t_fail "create" "$(cat "$t_tmp/create.log")"; t_finish; exit 1; }

cat >"$t_tmp/ev.sh" <<EOS
#!/bin/sh
echo "\$1 \$2 \${3:-} | \$URAID_EVENT \$URAID_UUID | \$URAID_DETAIL" >>"$log"
EOS
chmod +x "$t_tmp/ev.sh"

start_server() { # MEMBERS...
    $URAID serve "$@" --socket "$sock" --control "$ctl" --event-cmd "$t_tmp/ev.sh" 2>>"$t_tmp/server.err" &
    server_pid=$!
    n=0
    while ! timeout 5 nbdinfo --size "$uri" >/dev/null 2>&1; do
        n=$((n + 1))
        if [ $n -ge 60 ] || ! kill -0 "$server_pid" 2>/dev/null; then return 1; fi
        sleep 0.25
    done
}
stop_server() {
    $T $URAID stop --control "$ctl" >/dev/null 2>&1
    n=0
    while kill -0 "$server_pid" 2>/dev/null && [ $n -lt 80 ]; do sleep 0.25; n=$((n + 1)); done
    # still serving 20 s after the stop: a failure, not a wait without end
    if kill -0 "$server_pid" 2>/dev/null; then
        kill -9 "$server_pid"; wait "$server_pid"; server_pid=""
        echo "still serving 20 s after uraid stop" >>"$t_tmp/server.err"
        return 1
    fi
    wait "$server_pid"; rc=$?; server_pid=""
    return $rc
}
# wait_event PATTERN: the log gets a line matching it within 20 s
wait_event() {
    n=0
    while ! grep -q -- "$1" "$log" 2>/dev/null; do
        n=$((n + 1)); [ $n -ge 80 ] && return 1
        sleep 0.25
    done
}
expect_event() { # NAME PATTERN
    if wait_event "$2"; then t_ok "$1: $(grep -- "$2" "$log" | head -1)"; else t_fail "$1" "log: $(cat "$log" 2>&1)"; fi
}

# shellcheck disable=SC2086
start_server $m "$(d 4)" && t_ok "serving with --event-cmd" \
    || { t_fail "serve" "$(cat "$t_tmp/server.err")"; t_finish; exit 1; }
[ ! -s "$log" ] && t_ok "a whole array starts without events" || t_fail "events at start" "$(cat "$log")"
uuid=$(mdadm --examine "$(d 0)" | sed -n 's/^ *Array UUID : //p')

$T $URAID fail --control "$ctl" "$(d 2)" >"$t_tmp/out" 2>&1 || t_fail "uraid fail" "$(cat "$t_tmp/out")"
expect_event "Fail names the array and the member" "^Fail [^ ]*events $(d 2) | Fail $uuid | failed on an administrator's request"
expect_event "the spare's rebuild starts" "^RebuildStarted [^ ]*events  | RebuildStarted $uuid | recovery"
expect_event "the spare becomes active" "^SpareActive [^ ]*events $(d 4) | SpareActive $uuid | rebuilt into slot 2"
expect_event "the rebuild finishes" "^RebuildFinished [^ ]*events  | .* | recovery finished"
n=$(grep -c . "$log")
[ "$n" -eq 4 ] && t_ok "four events, no others" || t_fail "event count" "$(cat "$log")"

$T $URAID check --control "$ctl" --wait >"$t_tmp/out" 2>&1
expect_event "a check reports its end with mismatch_cnt" "^RebuildFinished [^ ]*events  | .* | check finished, mismatch_cnt 0"

stop_server && t_ok "stop: exit 0" || t_fail "stop" "$(tail -3 "$t_tmp/server.err")"

# restarted without d0: DegradedArray; a program that fails is logged, serving goes on
rm -f "$log"
printf '#!/bin/sh\necho "$1" >>"%s"\nexit 3\n' "$log" >"$t_tmp/ev.sh"
start_server "$(d 1)" "$(d 3)" "$(d 4)" && t_ok "serving degraded" || t_fail "serve degraded" "$(tail -3 "$t_tmp/server.err")"
expect_event "DegradedArray at start" "^DegradedArray"
timeout 10 nbdinfo --size "$uri" >/dev/null 2>&1 && t_ok "still serving after the program failed" \
    || t_fail "serving after a failed event program"
stop_server && t_ok "stop after the failing program: exit 0" || t_fail "stop after the failing program" "$(tail -3 "$t_tmp/server.err")"
grep -q "event program .* exit status 3" "$t_tmp/server.err" && t_ok "the program's failure is logged" \
    || t_fail "failed event program logged" "$(tail -5 "$t_tmp/server.err")"

# bad input: the option needs a value
$T $URAID serve $m --event-cmd >"$t_tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "needs a value" "$t_tmp/out" && t_ok "--event-cmd without a program: one line, exit 2" \
    || t_fail "--event-cmd without a value" "$(cat "$t_tmp/out")"
# shellcheck disable=SC2086
t_mdadm_agrees "at the end" $m "$(d 4)"
t_finish
