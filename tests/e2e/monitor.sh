#!/bin/sh
# uraid monitor (issue 14 item 3): mdadm --monitor's events, seen through
# the control socket of a real `uraid serve`, reported to a program that
# records its arguments. A member failed through the socket, removed, a
# spare added and rebuilt (slowed with --speed-limit so that every 20%
# step is seen) and the server stopped must call the program with exactly
# TestMessage, Fail MEMBER, RebuildStarted, Rebuild20/40/60/80,
# SpareActive SPARE, RebuildFinished, DeviceDisappeared, in that order
# (mdadm's names and argument order: EVENT ARRAY [MEMBER]). A monitor
# watching a directory sees a new server as NewArray, with DegradedArray
# and SparesMissing (the config's spares=) at first sight; --oneshot checks
# once and exits. --mail without a sendmail says so in one line. (FailSpare
# and the other cases a served array cannot be brought to on purpose are in
# tests/unit/test_monitor.c, on status texts.)
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

T="timeout 60"
sock=$t_tmp/nbd.sock
ctl=$t_tmp/ctl.sock
uri="nbd+unix:///?socket=$sock"
log=$t_tmp/events.log
server_pid=""
mon_pid=""
t_at_exit '[ -n "$mon_pid" ] && kill -9 "$mon_pid" 2>/dev/null'
t_at_exit '[ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null'
t_need nbdkit nbdinfo timeout

d() { echo "$t_tmp/d$1.img"; }
for i in 0 1 2 3 4; do truncate -s 32M "$(d $i)"; done
# shellcheck disable=SC2086
$T $URAID create --level 5 --raid-devices 4 --chunk 64K --name mon "$(d 0)" "$(d 1)" "$(d 2)" "$(d 3)" \
    >"$t_tmp/create.log" 2>&1 && t_ok "create a 4-member RAID-5" \
    || { t_fail "create" "$(cat "$t_tmp/create.log")"; t_finish; exit 1; }

cat >"$t_tmp/rec.sh" <<EOS
#!/bin/sh
echo "\$*" >>"$log"
echo "\$URAID_EVENT|\$URAID_ARRAY|\$URAID_MEMBER|\$URAID_CONTROL" >>"$log.env"
EOS
chmod +x "$t_tmp/rec.sh"

start_server() { # CONTROL MEMBERS...
    c=$1; shift
    $URAID serve "$@" --socket "$sock" --control "$c" --speed-limit 3M 2>>"$t_tmp/server.err" &
    server_pid=$!
    n=0
    while ! timeout 5 nbdinfo --size "$uri" >/dev/null 2>&1; do
        n=$((n + 1))
        if [ $n -ge 60 ] || ! kill -0 "$server_pid" 2>/dev/null; then return 1; fi
        sleep 0.25
    done
}
stop_server() { # CONTROL
    $T $URAID stop --control "$1" >/dev/null 2>&1
    wait "$server_pid"; rc=$?; server_pid=""
    return $rc
}
# wait_log PATTERN [SECONDS]: the log gets a line matching it
wait_log() {
    n=0
    while ! grep -q -- "$1" "$log" 2>/dev/null; do
        n=$((n + 1)); [ $n -ge $((${2:-20} * 4)) ] && return 1
        sleep 0.25
    done
}

start_server "$ctl" "$(d 0)" "$(d 1)" "$(d 2)" "$(d 3)" && t_ok "uraid serve with a control socket" \
    || { t_fail "serve" "$(cat "$t_tmp/server.err")"; t_finish; exit 1; }
name=$($URAID status --control "$ctl" | sed -n 's/^ *Name : //p')

# ---- the whole story, one monitor ----
$URAID monitor --program "$t_tmp/rec.sh" --delay 0.2 --test "$ctl" >"$t_tmp/mon.out" 2>"$t_tmp/mon.err" &
mon_pid=$!
wait_log "^TestMessage" && t_ok "--test: TestMessage at start" || t_fail "TestMessage" "$(cat "$t_tmp/mon.err")"
$T $URAID fail --control "$ctl" "$(d 2)" >/dev/null 2>&1
wait_log "^Fail " && t_ok "a failed member: Fail" || t_fail "Fail" "$(cat "$log")"
$T $URAID remove --control "$ctl" "$(d 2)" >/dev/null 2>&1
$T $URAID add --control "$ctl" "$(d 4)" >/dev/null 2>&1
wait_log "^RebuildFinished" 90 && t_ok "the added spare is rebuilt" || t_fail "rebuild" "$(cat "$log")"
stop_server "$ctl"
wait_log "^DeviceDisappeared" && t_ok "the server stopped: DeviceDisappeared" || t_fail "DeviceDisappeared" "$(cat "$log")"
kill "$mon_pid"; wait "$mon_pid"; rc=$?; mon_pid=""
[ "$rc" -eq 0 ] && t_ok "SIGTERM stops the monitor: exit 0" || t_fail "monitor exit $rc" "$(cat "$t_tmp/mon.err")"
cat >"$t_tmp/want" <<EOF
TestMessage $name
Fail $name $(d 2)
RebuildStarted $name
Rebuild20 $name
Rebuild40 $name
Rebuild60 $name
Rebuild80 $name
SpareActive $name $(d 4)
RebuildFinished $name
DeviceDisappeared $name
EOF
if cmp -s "$t_tmp/want" "$log"; then
    t_ok "the program got exactly the expected events, in order ($(wc -l <"$log") calls)"
else
    t_fail "events in order" "$(diff "$t_tmp/want" "$log" | tr '\n' ' ')"
fi
grep -q "^Fail|$name|$(d 2)|$ctl$" "$log.env" && t_ok "URAID_EVENT, URAID_ARRAY, URAID_MEMBER, URAID_CONTROL are set" \
    || t_fail "environment" "$(head -3 "$log.env")"
[ "$(grep -c '^uraid monitor: ' "$t_tmp/mon.out")" -eq 10 ] && t_ok "every event is also printed on stdout" \
    || t_fail "stdout" "$(cat "$t_tmp/mon.out")"

# ---- a directory of sockets and a config: NewArray, DegradedArray, SparesMissing ----
mkdir "$t_tmp/ctl.d"
cat >"$t_tmp/uraid.conf" <<EOF
ARRAY /dev/md/mon name=$name spares=1
PROGRAM $t_tmp/rec.sh
EOF
rm -f "$log" "$log.env"
$URAID monitor --config "$t_tmp/uraid.conf" --delay 0.2 "$t_tmp/ctl.d" >"$t_tmp/mon.out" 2>"$t_tmp/mon.err" &
mon_pid=$!
sleep 1
# slot 2 is d4 now; served without d0: degraded, no spare
start_server "$t_tmp/ctl.d/mon.sock" "$(d 1)" "$(d 4)" "$(d 3)" || t_fail "serve degraded" "$(tail -3 "$t_tmp/server.err")"
wait_log "^SparesMissing" && t_ok "a server appearing in the directory is seen" || t_fail "NewArray" "$(cat "$log" "$t_tmp/mon.err")"
printf 'NewArray %s\nDegradedArray %s\nSparesMissing %s\n' "$name" "$name" "$name" | cmp -s - "$log" \
    && t_ok "NewArray, DegradedArray, SparesMissing (config spares=1, PROGRAM from the config)" \
    || t_fail "first sight events" "$(cat "$log")"
kill "$mon_pid"; wait "$mon_pid"; mon_pid=""

# ---- --oneshot: one look, then exit ----
rm -f "$log"
$T $URAID monitor --oneshot --config "$t_tmp/uraid.conf" --program "$t_tmp/rec.sh" "$t_tmp/ctl.d/mon.sock" \
    >"$t_tmp/mon.out" 2>&1; rc=$?
printf 'DegradedArray %s\nSparesMissing %s\n' "$name" "$name" | cmp -s - "$log" && [ "$rc" -eq 0 ] \
    && t_ok "--oneshot: DegradedArray and SparesMissing, exit 0" || t_fail "--oneshot (exit $rc)" "$(cat "$log" "$t_tmp/mon.out")"
stop_server "$t_tmp/ctl.d/mon.sock"

# ---- a socket named before its server starts, which starts rebuilding ----
truncate -s 32M "$t_tmp/d5.img"
$T $URAID add "$(d 1)" "$(d 4)" "$(d 3)" --spare "$t_tmp/d5.img" >"$t_tmp/out" 2>&1 || t_fail "add a spare offline" "$(cat "$t_tmp/out")"
rm -f "$log"
$URAID monitor --program "$t_tmp/rec.sh" --delay 0.2 "$ctl" >"$t_tmp/mon.out" 2>"$t_tmp/mon.err" &
mon_pid=$!
sleep 0.5
start_server "$ctl" "$(d 1)" "$(d 4)" "$(d 3)" "$t_tmp/d5.img" || t_fail "serve with a spare" "$(tail -3 "$t_tmp/server.err")"
wait_log "^RebuildFinished" 60
kill "$mon_pid"; wait "$mon_pid"; mon_pid=""
sed '/^Rebuild[0-9]/d' "$log" >"$t_tmp/got"
printf 'NewArray %s\nDegradedArray %s\nRebuildStarted %s\nSpareActive %s %s\nRebuildFinished %s\n' "$name" "$name" \
    "$name" "$name" "$t_tmp/d5.img" "$name" | cmp -s - "$t_tmp/got" \
    && t_ok "first seen rebuilding: NewArray, DegradedArray, RebuildStarted, then SpareActive, RebuildFinished" \
    || t_fail "first sight while rebuilding" "$(cat "$log")"
grep -q "no array answers there" "$t_tmp/mon.err" && t_ok "a named socket with no server yet: one line, then watched" \
    || t_fail "socket not there yet" "$(cat "$t_tmp/mon.err")"
stop_server "$ctl"

# ---- mail and bad input ----
if [ -x /usr/sbin/sendmail ]; then
    $T $URAID monitor --oneshot --mail root "$t_tmp/none.sock" >"$t_tmp/out" 2>&1
    ! grep -q "no /usr/sbin/sendmail" "$t_tmp/out" && t_ok "--mail with a sendmail present: no warning" \
        || t_fail "--mail with sendmail" "$(cat "$t_tmp/out")"
else
    $T $URAID monitor --oneshot --mail root "$t_tmp/none.sock" >"$t_tmp/out" 2>&1
    [ "$(grep -c 'no /usr/sbin/sendmail on this machine: mail to root is not sent' "$t_tmp/out")" -eq 1 ] \
        && t_ok "--mail without a sendmail: one clear line" || t_fail "--mail without sendmail" "$(cat "$t_tmp/out")"
fi
$T $URAID monitor --delay abc "$ctl" >"$t_tmp/out" 2>&1
[ $? -eq 2 ] && [ "$(wc -l <"$t_tmp/out")" -eq 1 ] && grep -q "delay 'abc'" "$t_tmp/out" \
    && t_ok "--delay abc: one line, exit 2" || t_fail "--delay abc" "$(cat "$t_tmp/out")"
$T $URAID monitor --oneshot >"$t_tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "nothing to watch" "$t_tmp/out" && t_ok "nothing to watch: one line, exit 2" \
    || t_fail "no sockets" "$(cat "$t_tmp/out")"
t_finish
