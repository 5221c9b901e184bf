#!/bin/sh
# uraid bench seeds --quick (the smoke test of the seeds' experiments):
# the command runs every experiment on simulated disks and writes
# report.md, whose every table has its rows, each with a positive figure
# where one is measured, nothing "nan" or "inf", and four PNG plots that
# file(1) reads as PNG images; scenario 2 read every byte back; a bad
# argument is refused with one line and writes no report. Needs root,
# /dev/fuse, loop devices, btrfs, fio, bonnie++, gnuplot: without them the
# test fails with the reason (never skips).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

out=$t_tmp/report
start=$(date +%s)
if timeout 900 $URAID bench seeds --quick --out "$out" >"$t_tmp/run.log" 2>&1; then
    t_ok "uraid bench seeds --quick ($(( $(date +%s) - start )) s)"
else
    t_fail "uraid bench seeds --quick" "$(tail -n 3 "$t_tmp/run.log")"; t_finish; exit 1
fi
r=$out/report.md
[ -s "$r" ] && t_ok "report.md written" || { t_fail "report.md written"; t_finish; exit 1; }

# rows HEADING COL: the data rows of the first table under the heading
# (## or ###) that starts with HEADING, one per line, and how many of them
# have a positive number in column COL (1-based, cells between the '|')
rows() {
    awk -v h="$1" -v col="$2" '
        /^#/ { insec = index($0, h) == 1; intab = 0; seen = seen || insec; next }
        insec && /^\|/ { if (!intab) { intab = 1; hdr = 1; next }
                         if (hdr) { hdr = 0; next }   # the --- line
                         n++; split($0, c, "|"); v = c[col + 1]; gsub(/ /, "", v)
                         if (v ~ /^[0-9]+(\.[0-9]+)?$/ && v + 0 > 0) good++; next }
        insec && intab && !/^\|/ { insec = 0 }
        END { printf "%d %d\n", n, good }' "$r"
}
# check HEADING COL WANT: WANT rows, every one with a positive figure
check() {
    set -- "$1" "$2" "$3" $(rows "$1" "$2")
    if [ "$4" -eq "$3" ] && [ "$5" -eq "$3" ]; then
        t_ok "table '$1': $3 rows, each with a figure"
    else
        t_fail "table '$1'" "$4 rows ($3 expected), $5 with a positive figure in column $2"
    fi
}
check "## 000, 003: the parity" 3 4
check "## 000: concurrent" 2 2
check "## 002: dd" 2 6
check "## 003: random writes" 2 3
check "### bonnie++" 2 5
check "### tiobench" 3 8
check "### Scenario 2" 2 1
check "## Over NBD" 3 5
grep -q '^Goal: two readers >= 0.9 of one: [0-9]*\.[0-9]* (median of the rounds' "$r" \
    && t_ok "000's goal line: the median of the rounds' two / one" || t_fail "000's goal line" "$(grep '^Goal: two' "$r")"
grep -q '^raid6: using algorithm [a-z0-9-]* gen() [0-9]* MB/s$' "$r" \
    && t_ok "the kernel's 'raid6: using algorithm' line" || t_fail "raid6: using algorithm line" "$(grep raid6 "$r" | head -n 3)"
awk '/^### Scenario 2/ { s = 1 } s && /^\| [0-9]/ { print; exit }' "$r" | grep -q '| yes | \[15/15\] \[U\{15\}\] |$' \
    && t_ok "scenario 2: the file read back as written, the array still [15/15]" \
    || t_fail "scenario 2" "$(awk '/^### Scenario 2/ { s = 1 } s && /^\| [0-9]/ { print; exit }' "$r")"
if grep -inE '(^|[^a-z])(-?nan|inf)([^a-z]|$)' "$r" >"$t_tmp/nan"; then
    t_fail "no nan or inf in the report" "$(head -n 3 "$t_tmp/nan")"
else
    t_ok "no nan or inf in the report"
fi
for p in streams rmw tio bonnie; do
    if file "$out/$p.png" 2>/dev/null | grep -q 'PNG image data, [0-9]* x [0-9]*'; then
        grep -q "($p.png)" "$r" && t_ok "$p.png is a PNG, linked from the report" || t_fail "$p.png linked from the report"
    else
        t_fail "$p.png is a PNG" "$(file "$out/$p.png" 2>&1)"
    fi
done

# a bad argument: one line, exit 2, no report
$URAID bench seeds --quick --frobnicate --out "$t_tmp/bad" >"$t_tmp/bad.out" 2>&1
st=$?
[ "$st" -eq 2 ] && [ "$(wc -l <"$t_tmp/bad.out")" -eq 1 ] && [ ! -e "$t_tmp/bad" ] \
    && t_ok "an unknown argument is refused with one line: $(cat "$t_tmp/bad.out")" \
    || t_fail "unknown argument" "exit $st: $(cat "$t_tmp/bad.out")"
t_finish
