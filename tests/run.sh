#!/bin/sh
# Runs every test of `make check` and ends with one line "N passed, N failed".
# Each test program (unit binaries, their ASan+UBSan builds, the threaded
# ones under TSan, tests/e2e/*.sh)
# prints its own "suite: N passed, N failed" line; this sums them. A program
# that crashes or prints no such line counts as one failure.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
logdir=$BUILD/test-logs
mkdir -p "$logdir"
total_pass=0
total_fail=0

run_one() {
    name=$1; shift
    log="$logdir/$(echo "$name" | tr '/ ' '__').log"
    start=$(date +%s)
    "$@" >"$log" 2>&1
    status=$?
    secs=$(( $(date +%s) - start ))
    line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(echo "$line" | awk '{for (i = 2; i <= NF; i++) if ($i == "passed,") print $(i - 1)}')
    f=$(echo "$line" | awk '{for (i = 1; i < NF; i++) if ($i == "passed,") print $(i + 1)}')
    [ -n "$p" ] || { p=0; f=1; }
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    if [ "$f" -eq 0 ]; then
        printf '  ok    %-40s %4d passed  (%ds)\n' "$name" "$p" "$secs"
    else
        printf '  FAIL  %-40s %4d passed, %d failed  (%ds; log %s)\n' "$name" "$p" "$f" "$secs" "$log"
        grep -E 'FAIL|: \[|ERROR|error|Sanitizer' "$log" | head -n 20 | sed 's/^/        /'
    fi
}

echo "unit tests:"
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] && run_one "$(basename "$t")" "$t"
done
echo "unit tests under ASan+UBSan:"
for t in "$BUILD"/san/tests/test_*; do
    [ -x "$t" ] && run_one "san/$(basename "$t")" env URAID_TEST_QUICK=1 "$t"
done
echo "multi-threaded unit tests under ThreadSanitizer:"
for t in "$BUILD"/tsan/tests/test_*; do
    # the lock-all of a member swap holds more mutexes than TSan's deadlock
    # detector tracks; data races are what this run is for
    [ -x "$t" ] && run_one "tsan/$(basename "$t")" env URAID_TEST_QUICK=1 TSAN_OPTIONS=detect_deadlocks=0 "$t"
done
if ls tests/e2e/*.sh >/dev/null 2>&1; then
    echo "end-to-end tests:"
    for t in tests/e2e/*.sh; do
        run_one "$(basename "$t" .sh)" sh "$t"
    done
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
