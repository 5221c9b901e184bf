#!/bin/sh
# The parity commands as a user runs them: selftest, the forced override
# (environment and option), clear errors, and bench --json's shape.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

out=$($URAID selftest 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q '^  ref  *ok' && echo "$out" | grep -q '^  int64  *ok'; then
    t_ok "selftest passes and lists every routine"
else
    t_fail "selftest passes and lists every routine" "rc=$rc: $out"
fi
n_ok=$(echo "$out" | grep -c ' ok ')
n_listed=$(echo "$out" | grep -cE ' (ok|skipped|FAILED) ')
[ "$n_ok" -ge 2 ] && [ "$n_listed" -ge 3 ] && t_ok "selftest: one line per routine ($n_ok ok of $n_listed)" || t_fail "selftest lines" "$out"

out=$(URAID_PARITY=int64 $URAID selftest 2>&1)
echo "$out" | grep -q 'chosen: gen_p=int64 gen_pq=int64 rmw=int64 recov=int64 (forced)' \
    && t_ok "URAID_PARITY=int64 forces the routine" || t_fail "URAID_PARITY forces" "$out"

out=$($URAID --parity int64 -v selftest 2>&1)
echo "$out" | grep -q 'forced to int64' && echo "$out" | grep -q 'gen_pq=int64' \
    && t_ok "--parity int64 forces the routine and -v logs it" || t_fail "--parity forces" "$out"

out=$(URAID_PARITY=no-such $URAID selftest 2>&1); rc=$?
[ $rc -ne 0 ] && [ "$(echo "$out" | grep -c .)" -eq 1 ] && echo "$out" | grep -q "unknown parity routine 'no-such'" \
    && t_ok "unknown routine: one-line error, non-zero exit" || t_fail "unknown routine error" "rc=$rc: $out"

# A routine this CPU cannot run (if any) must be refused clearly.
skipped=$($URAID selftest 2>/dev/null | awk '$2 == "skipped:" {print $1; exit}')
if [ -n "$skipped" ]; then
    out=$($URAID --parity "$skipped" selftest 2>&1); rc=$?
    [ $rc -ne 0 ] && echo "$out" | grep -q "cannot run on this CPU" && t_ok "unsupported routine refused" \
        || t_fail "unsupported routine refused" "$out"
else
    echo "     (skip: every routine runs on this CPU, so no refusal to check; not counted as passed)"
fi

out=$($URAID -v selftest 2>&1)
echo "$out" | grep -q 'info: parity: gen_pq using' && t_ok "-v logs the timed choice once" || t_fail "-v logs choice" "$out"
[ "$(echo "$out" | grep -c 'gen_pq using')" -eq 1 ] || t_fail "choice logged exactly once"

$URAID bench parity --json --k 4 --chunk 4K > "$t_tmp/bench.json" 2>"$t_tmp/bench.err"; rc=$?
if [ $rc -eq 0 ] && jq -e '
      (.results | length) > 0 and
      all(.results[]; has("impl") and has("op") and has("k") and has("chunk_bytes") and
          (.resident == "cache" or .resident == "dram") and (.gbps > 0)) and
      ([.results[].op] | unique) == ["gen_p","gen_pq","recov","rmw"] and
      (.shapes | length) == 2 and all(.shapes[]; .memcpy_gbps > 0 and .read_gbps > 0)
    ' "$t_tmp/bench.json" >/dev/null; then
    t_ok "bench parity --json has results and memcpy per shape"
else
    t_fail "bench parity --json shape" "rc=$rc $(head -c 300 "$t_tmp/bench.json") $(cat "$t_tmp/bench.err")"
fi
if jq -e '[.results[].impl] | index("isal")' "$t_tmp/bench.json" >/dev/null; then
    t_ok "bench includes the isal column"
else
    t_fail "bench includes the isal column (libisal-dev is a build dependency)"
fi

out=$($URAID bench parity --k 999 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q -- '--k must be' && t_ok "bad --k refused" || t_fail "bad --k" "$out"
out=$($URAID bench parity --chunk 1000 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q -- '--chunk must be' && t_ok "bad --chunk refused" || t_fail "bad --chunk" "$out"
out=$($URAID frobnicate 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "unknown command 'frobnicate'" && t_ok "unknown verb" || t_fail "unknown verb" "$out"

t_finish
