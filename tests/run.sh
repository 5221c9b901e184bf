#!/bin/bash
# Runs every test of `make check` and ends with one line "N passed, N failed".
# Each test program (unit binaries, their ASan+UBSan builds, the threaded
# ones under TSan, tests/e2e/*.sh) prints its own "suite: N passed, N failed"
# line; this sums them. A program that crashes or prints no such line counts
# as one failure.
#
# Tests run URAID_TEST_JOBS at a time (default 2, the CPUs of the machines
# this runs on; 1 runs them one after the other). Many of them wait on
# something other than the CPU (members throttled to disk speeds, a job
# paced at sync_speed_min, a QEMU guest booting), so two at once is close
# to twice as fast. Three were faster still (20-21 minutes against 23-26,
# 2026-12-07), but on a loaded host an md-oracle guest then went without
# CPU long enough for its kernel to stall (grow_md failed so, once in
# three runs): not the default. Every test has its own directory (mktemp in
# tests/lib/e2e.sh and the harness), the md-oracle guest is built once under
# a lock (oracle_ready), and install.sh serializes its dpkg -i with flock.
# The slowest tests start first (SLOW below, from the last timings), so the
# run does not end with one long test alone. A result line is printed as
# each test ends, so the order of lines varies; the totals do not.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${URAID_TEST_JOBS:-2}
logdir=$BUILD/test-logs
resdir=$logdir/results
rm -rf "$resdir"
mkdir -p "$logdir" "$resdir"

# e2e tests that take a minute or more, slowest first (seconds measured on
# an otherwise idle 2-CPU machine): started before everything else.
SLOW="readd_loop bench_seeds md_raid10 md_formats nbd ublk raid10 md_oracle grow grow_md grow_level_online md_raid0 ppl bitmap install nbd_members"

# run_one NAME COMMAND...: runs one test into its log; writes "pass fail
# secs" to the results directory and prints its result line.
run_one() {
    name=$1; shift
    key=$(echo "$name" | tr '/ ' '__')
    log="$logdir/$key.log"
    start=$(date +%s)
    "$@" >"$log" 2>&1
    status=$?
    secs=$(( $(date +%s) - start ))
    line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(echo "$line" | awk '{for (i = 2; i <= NF; i++) if ($i == "passed,") print $(i - 1)}')
    f=$(echo "$line" | awk '{for (i = 1; i < NF; i++) if ($i == "passed,") print $(i + 1)}')
    [ -n "$p" ] || { p=0; f=1; }
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    echo "$p $f $secs" >"$resdir/$key"
    if [ "$f" -eq 0 ]; then
        printf '  ok    %-40s %4d passed  (%ds)\n' "$name" "$p" "$secs"
    else
        { printf '  FAIL  %-40s %4d passed, %d failed  (%ds; log %s)\n' "$name" "$p" "$f" "$secs" "$log"
          grep -E 'FAIL|: \[|ERROR|error|Sanitizer' "$log" | head -n 20 | sed 's/^/        /'; }
    fi
}

# Queue lines are "NAME<TAB>COMMAND WORDS..." (no word has a space).
queue=()
add() { queue+=("$1"$'\t'"${*:2}"); }

for s in $SLOW; do
    [ -f "tests/e2e/$s.sh" ] && add "$s" sh "tests/e2e/$s.sh"
done
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] && add "$(basename "$t")" "$t"
done
for t in "$BUILD"/san/tests/test_*; do
    [ -x "$t" ] && add "san/$(basename "$t")" env URAID_TEST_QUICK=1 "$t"
done
# the lock-all of a member swap holds more mutexes than TSan's deadlock
# detector tracks; data races are what this run is for
for t in "$BUILD"/tsan/tests/test_*; do
    [ -x "$t" ] && add "tsan/$(basename "$t")" env URAID_TEST_QUICK=1 TSAN_OPTIONS=detect_deadlocks=0 "$t"
done
for t in tests/e2e/*.sh; do
    [ -f "$t" ] || continue
    n=$(basename "$t" .sh)
    case " $SLOW " in *" $n "*) continue ;; esac
    add "$n" sh "$t"
done

echo "${#queue[@]} test programs, $JOBS at a time:"
running=0
for entry in "${queue[@]}"; do
    name=${entry%%$'\t'*}
    read -r -a cmd <<<"${entry#*$'\t'}"
    if [ "$running" -ge "$JOBS" ]; then
        wait -n
        running=$((running - 1))
    fi
    run_one "$name" "${cmd[@]}" &
    running=$((running + 1))
done
wait

total_pass=0
total_fail=0
count=0
for r in "$resdir"/*; do
    [ -f "$r" ] || continue
    read -r p f _ <"$r"
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    count=$((count + 1))
done
# a test that died without writing its result (the runner was killed) is a failure
[ "$count" -eq "${#queue[@]}" ] || total_fail=$((total_fail + ${#queue[@]} - count))
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
