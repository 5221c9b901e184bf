# Helpers for shell end-to-end tests (sourced). Each test calls t_begin/t_ok/
# t_fail and ends with t_finish, which prints "suite: N passed, N failed".
# Commands are run from the project root; the uraid binary is build/uraid.
URAID=${URAID:-build/uraid}
# tests/lib/bin/sha256sum: the same digests, 10x faster (see the script)
if command -v openssl >/dev/null 2>&1; then PATH=$(pwd)/tests/lib/bin:$PATH; export PATH; fi
t_passed=0
t_failed=0
t_suite=${t_suite:-$(basename "$0" .sh)}
t_tmp=$(mktemp -d "/tmp/uraid-${t_suite}.XXXXXX")

# t_at_exit 'COMMAND': run when the test exits (the last one given first),
# then $t_tmp is removed unless URAID_TEST_KEEP is set. COMMAND is evaluated
# then, so it sees the final value of a variable set later (a server's pid).
t_at_exit_cmds=""
t_at_exit() { t_at_exit_cmds="$1
$t_at_exit_cmds"; }
_t_exit() {
    eval "$t_at_exit_cmds"
    [ -n "${URAID_TEST_KEEP:-}" ] || rm -rf "$t_tmp"
}
trap _t_exit EXIT
trap 'exit 1' INT TERM

t_ok() { t_passed=$((t_passed + 1)); echo "ok   $1"; }
t_fail() { t_failed=$((t_failed + 1)); echo "FAIL $1${2:+: $2}"; }

# t_expect NAME CONDITION-COMMAND...: passes if the command succeeds.
# (POSIX sh has no local variables: a helper's own names start with _ so
# that they never overwrite a caller's $name, $want, ...)
t_expect() {
    _te_name=$1; shift
    if "$@" >/dev/null 2>&1; then t_ok "$_te_name"; else t_fail "$_te_name"; fi
}

# t_exits NAME STATUS PATTERN CMD...: CMD (under $T when the script sets
# it, e.g. T="timeout 60") exits with STATUS and its output (stdout and
# stderr, left in $t_tmp/out) has a line matching PATTERN ("" = any output).
t_exits() {
    _tx_name=$1 _tx_want=$2 _tx_pat=$3; shift 3
    ${T:-} "$@" >"$t_tmp/out" 2>&1
    _tx_got=$?
    if [ "$_tx_got" -eq "$_tx_want" ] && { [ -z "$_tx_pat" ] || grep -q -- "$_tx_pat" "$t_tmp/out"; }; then
        t_ok "$_tx_name"
    else
        t_fail "$_tx_name" "exit $_tx_got (want $_tx_want): $(head -c 800 "$t_tmp/out")"
    fi
}

# t_refused NAME PATTERN CMD...: CMD fails (under $T when set) with exactly
# one line of output (stdout and stderr) matching PATTERN, and the caller's
# `sums` (its digest of every member) prints the same before and after: a
# refusal writes nothing.
t_refused() {
    _tr_name=$1 _tr_pat=$2; shift 2
    _tr_before=$(sums)
    ${T:-} "$@" >"$t_tmp/out" 2>&1
    _tr_got=$?
    _tr_after=$(sums)
    _tr_lines=$(grep -c . "$t_tmp/out")
    if [ "$_tr_got" -ne 0 ] && [ "$_tr_lines" -eq 1 ] && grep -q -- "$_tr_pat" "$t_tmp/out" &&
        [ "$_tr_before" = "$_tr_after" ]; then
        t_ok "$_tr_name"
    else
        t_fail "$_tr_name" "exit $_tr_got, $_tr_lines lines, members $([ "$_tr_before" = "$_tr_after" ] && echo same || echo CHANGED): $(head -c 600 "$t_tmp/out")"
    fi
}

# t_long: true in the long mode (`make check-long`, URAID_TEST_LONG=1),
# which runs the full matrices that make check samples. A test that leaves
# cases to the long mode says so with t_short_note (not counted as passed).
t_long() { [ "${URAID_TEST_LONG:-0}" = 1 ]; }
t_short_note() { t_long || echo "note $t_suite: short mode: $1 (make check-long runs them)"; }

# t_need COMMAND...: the suite fails at once (one line naming it) unless
# every command is on PATH: a missing tool is never a skipped pass.
t_need() {
    for _tn_c in "$@"; do
        command -v "$_tn_c" >/dev/null 2>&1 || { t_fail "needs $_tn_c in PATH"; t_finish; exit 1; }
    done
}

# t_need_fuse: the same for mounting an array with FUSE (root, /dev/fuse,
# fusermount3).
t_need_fuse() {
    t_need fusermount3
    [ "$(id -u)" -eq 0 ] || { t_fail "needs root (FUSE mount)"; t_finish; exit 1; }
    [ -c /dev/fuse ] || { t_fail "needs /dev/fuse"; t_finish; exit 1; }
}

t_finish() {
    echo "$t_suite: $t_passed passed, $t_failed failed"
    [ "$t_failed" -eq 0 ]
}

# t_mdadm_agrees NAME MEMBER...: md's reading of the members' superblocks
# (`mdadm --examine`, a decoder independent of ours) agrees with the array
# uraid assembles from them (`uraid detail`, the view `uraid status` gives
# of a serving array). Meant for an array at rest; it also works while one
# is served, since detail opens the members read-only and reports what their
# superblocks say (so it shows whether the server has written them):
#   - every member: checksum correct, Array UUID the array's, listed by detail;
#   - an in-sync member: Device Role "Active device N" for detail's slot N;
#     Events and State (clean/active) the array's; Array State (A/.) the
#     same as detail's [U_] status, so both agree which slots are faulty
#     or missing;
#   - a spare: Device Role "spare" and the array's Events;
#   - a faulty or stale member: Events behind the array's (md leaves it out
#     for that reason too).
# Give every member the array has: one left out is missing to uraid but not
# in md's superblocks. One ok/FAIL line; a failure lists every disagreement.
_ma_f() { sed -n "s/^ *$1 : \\([^ ]*\\).*/\\1/p" "$_ma_x" | head -n 1; }
# t_bitmap_current NAME MEMBER...: every member's write-intent bitmap carries its superblock's
# events (md takes an older bitmap as stale and resyncs the whole array)
t_bitmap_current() {
    _bn=$1; shift
    _bad=""
    for _f in "$@"; do
        _x=$($URAID examine "$_f" 2>&1)
        _sbe=$(echo "$_x" | awk '/^ *Events :/ {print $3; exit}')
        _bme=$(echo "$_x" | sed -n '/Write-intent bitmap/,$p' | awk '/^ *Events :/ {print $3; exit}')
        [ -n "$_sbe" ] && [ "$_sbe" = "$_bme" ] || _bad="$_bad $_f: superblock events '$_sbe', bitmap '$_bme';"
    done
    [ -z "$_bad" ] && t_ok "$_bn: every member's bitmap carries its superblock's events" ||
        t_fail "$_bn: bitmap events follow the superblocks" "$_bad"
}

t_mdadm_agrees() {
    _ma_name=$1; shift
    _ma_d=$t_tmp/agree.detail
    if ! $URAID detail "$@" >"$_ma_d" 2>&1 && ! $URAID detail --force "$@" >"$_ma_d" 2>&1; then
        t_fail "$_ma_name: mdadm --examine agrees with uraid" "uraid detail: $(tail -n 1 "$_ma_d")"
        return 1
    fi
    _ma_events=$(awk '$1 == "Events" && $2 == ":" { print $3; exit }' "$_ma_d")
    _ma_state=$(awk '$1 == "State" && $2 == ":" { sub(",", "", $3); print $3; exit }' "$_ma_d")
    _ma_uuid=$(awk '$1 == "UUID" && $2 == ":" { print $3; exit }' "$_ma_d")
    _ma_status=$(sed -n 's/^ *Status : \[[0-9]*\/[0-9]*\] \[\([U_]*\)\]$/\1/p' "$_ma_d" | tr U_ A.)
    _ma_bad=""
    [ -n "$_ma_events" ] && [ -n "$_ma_state" ] && [ -n "$_ma_uuid" ] && [ -n "$_ma_status" ] \
        || _ma_bad=" uraid detail printed no Events/State/UUID/Status"
    _ma_n=0
    for _ma_m in "$@"; do
        _ma_n=$((_ma_n + 1))
        # detail's row for this path: "NUMBER SLOT STATE... PATH"
        _ma_row=$(awk -v p="$_ma_m" 'seen && $NF == p { $1 = ""; $NF = ""; print; exit }
            $1 == "Number" && $2 == "RaidDevice" { seen = 1 }' "$_ma_d")
        _ma_slot=$(echo "$_ma_row" | awk '{ print $1 }')
        _ma_ustate=$(echo "$_ma_row" | awk '{ print $2 }')
        _ma_x=$t_tmp/agree.examine
        if ! mdadm --examine "$_ma_m" >"$_ma_x" 2>&1; then
            _ma_bad="$_ma_bad [$_ma_m: mdadm --examine: $(tail -n 1 "$_ma_x")]"
            continue
        fi
        _ma_role=$(sed -n 's/^ *Device Role : //p' "$_ma_x")
        _ma_mev=$(_ma_f Events)
        _ma_w="$_ma_m ($_ma_ustate${_ma_slot:+ slot $_ma_slot})"
        grep -q '^ *Checksum : .* - correct$' "$_ma_x" || _ma_bad="$_ma_bad [$_ma_w: checksum not correct]"
        [ "$(_ma_f 'Array UUID')" = "$_ma_uuid" ] \
            || _ma_bad="$_ma_bad [$_ma_w: Array UUID mdadm $(_ma_f 'Array UUID'), uraid $_ma_uuid]"
        case $_ma_ustate in
            active)
                [ "$_ma_role" = "Active device $_ma_slot" ] \
                    || _ma_bad="$_ma_bad [$_ma_w: mdadm role '$_ma_role']"
                [ "$_ma_mev" = "$_ma_events" ] || _ma_bad="$_ma_bad [$_ma_w: mdadm events $_ma_mev, uraid $_ma_events]"
                [ "$(_ma_f State)" = "$_ma_state" ] || _ma_bad="$_ma_bad [$_ma_w: mdadm state $(_ma_f State), uraid $_ma_state]"
                [ "$(_ma_f 'Array State')" = "$_ma_status" ] \
                    || _ma_bad="$_ma_bad [$_ma_w: mdadm Array State $(_ma_f 'Array State'), uraid $_ma_status]" ;;
            spare)
                [ "$_ma_role" = spare ] || _ma_bad="$_ma_bad [$_ma_w: mdadm role '$_ma_role']"
                [ "$_ma_mev" = "$_ma_events" ] || _ma_bad="$_ma_bad [$_ma_w: mdadm events $_ma_mev, uraid $_ma_events]" ;;
            faulty|stale)
                [ -n "$_ma_mev" ] && [ -n "$_ma_events" ] && [ "$_ma_mev" -lt "$_ma_events" ] \
                    || _ma_bad="$_ma_bad [$_ma_w: mdadm events $_ma_mev not behind the array's $_ma_events]" ;;
            *)
                _ma_bad="$_ma_bad [$_ma_m: not listed by uraid detail]" ;;
        esac
    done
    if [ -z "$_ma_bad" ]; then
        t_ok "$_ma_name: mdadm --examine agrees with uraid detail ($_ma_n members, events $_ma_events, [$_ma_status])"
    else
        t_fail "$_ma_name: mdadm --examine agrees with uraid detail" "${_ma_bad# }"
        return 1
    fi
}

# t_serve DIR ARGS...: `uraid serve ARGS` (members and options) in the
# background on DIR/nbd.sock with control socket DIR/ctl.sock, its errors in
# DIR/server.err; returns once the export answers (or after 15 s), with spid,
# suri (the export's URI) and sctl (the control socket) set.
t_serve() {
    _sd=$1; shift
    sctl=$_sd/ctl.sock suri="nbd+unix:///?socket=$_sd/nbd.sock"
    $URAID serve "$@" --socket "$_sd/nbd.sock" --control "$sctl" 2>"$_sd/server.err" &
    spid=$!
    _n=0
    while ! timeout 5 nbdinfo --size "$suri" >/dev/null 2>&1 && [ $_n -lt 60 ]; do sleep 0.25; _n=$((_n + 1)); done
}

# t_wait_status CTL TEXT: waits up to a minute for a served array's status
# (`uraid status --control CTL`) to say TEXT; fails after that. The last
# status read is left in $st.
t_wait_status() {
    _n=0
    while [ $_n -lt 240 ]; do
        st=$(timeout 10 $URAID status --control "$1" 2>&1)
        echo "$st" | grep -q "$2" && return 0
        sleep 0.25; _n=$((_n + 1))
    done
    return 1
}

# The md oracle (../shared/tools/md-oracle: the real md in QEMU), built once
# per machine into $MDORACLE_HOME when a test first needs it, whichever test
# runs first. Sets ORACLE and PATTERN; on failure records it and returns 1.
oracle_ready() {
    # through tests/lib/oracle/md-oracle: one more run when QEMU dies in the firmware
    ORACLE=$(pwd)/tests/lib/oracle/md-oracle
    export MDORACLE_HOME="${MDORACLE_HOME:-$HOME/.cache/md-oracle}" MDORACLE_ACCEL="${MDORACLE_ACCEL:-tcg}"
    PATTERN="$MDORACLE_HOME/out/mdpattern"
    [ -x ../shared/tools/md-oracle/md-oracle ] || { t_fail "md-oracle present at ../shared/tools/md-oracle"; return 1; }
    oracle_build >"$t_tmp/oracle-build.log" 2>&1 \
        || { t_fail "md-oracle build" "$(tail -5 "$t_tmp/oracle-build.log")"; return 1; }
}

# oracle_build [BUILD.SH OPTIONS]: builds the guest in $MDORACLE_HOME unless it
# is there. Under one lock for every guest: tests run two at a time
# (tests/run.sh), and two builds would race for the same directory and for
# apt's lock (--install-deps).
oracle_build() {
    [ -f "$MDORACLE_HOME/out/vmlinux" ] && return 0
    mkdir -p "$MDORACLE_HOME"
    (
        flock -w 3600 8 || { echo "oracle_build: no lock on /tmp/uraid-oracle-build.lock in an hour" >&2; exit 1; }
        [ -f "$MDORACLE_HOME/out/vmlinux" ] && exit 0
        ../shared/tools/md-oracle/build.sh --install-deps "$@"
    ) 8>/tmp/uraid-oracle-build.lock
}
