#!/bin/sh
# uraid salvage as a user runs it: members are images of failing disks and
# GNU ddrescue mapfiles say which of their ranges were never rescued.
#   - within what each stripe survives (one member for RAID-5, two for
#     RAID-6, different members in different stripes, several members in
#     different rows of one chunk): the image equals the data written, exit 0;
#   - beyond it: exit 3, the report lists exactly the lost array sectors
#     (computed here from the left-symmetric layout, independently of the C
#     code), those sectors are zero in the image and every other byte equals
#     the data;
#   - members are never written (sha256 before and after every run);
#   - bad input (missing or malformed map, --map for a non-member, -o at a
#     member): one line on stderr, non-zero exit, no image written.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

d="$t_tmp"
CS=128                  # chunk sectors (64K)
MEMBER=8M

sums() { cat "$d"/m?.img | sha256sum | cut -d' ' -f1; }

# mkarray LEVEL N: members m0..m(N-1), array created and filled from $d/data.
mkarray() {
    rm -f "$d"/m?.img "$d"/*.map
    i=0
    while [ $i -lt "$2" ]; do truncate -s $MEMBER "$d/m$i.img"; i=$((i + 1)); done
    $URAID create --metadata "${META:-1.2}" --level "$1" --raid-devices "$2" --chunk 64K "$d"/m?.img >/dev/null 2>&1 || return 1
    # 0.90 keeps its superblock at the end: the data starts at sector 0 (and
    # mdadm --examine, so uraid examine, prints no Data Offset for it)
    DOFF=$($URAID examine "$d/m0.img" | awk '/Data Offset/ {print $4}')
    [ "${META:-}" = 0.90 ] && DOFF=0
    [ -n "$DOFF" ] || return 1
    SECTORS=$($URAID detail "$d"/m?.img | awk '/Array Size/ {print $4 * 2}')
    MSECT=$(($(stat -c %s "$d/m0.img") / 512 - DOFF))
    [ "${META:-}" = 0.90 ] && MSECT=$($URAID detail "$d"/m?.img | awk '/Used Dev Size/ {print $5 * 2}')
    head -c $((SECTORS * 512)) /dev/urandom > "$d/data"
    $URAID write "$d"/m?.img < "$d/data" 2>/dev/null
}

# mkmaps: reads "MEMBER REL_SECTOR NSECTORS" lines (sectors past the data
# offset) on stdin and writes a ddrescue mapfile $d/mM.map for each member
# named, the way ddrescue does: status line, then contiguous blocks covering
# the whole member, rescued ones '+', the rest cycling through - * / ?.
mkmaps() {
    rm -f "$d"/m?.map
    cat > "$d/bad.list"
    for m in $(awk '{print $1}' "$d/bad.list" | sort -un); do
        size=$(stat -c %s "$d/m$m.img")
        awk -v m="$m" '$1 == m {print $2, $3}' "$d/bad.list" | sort -n |
        awk -v doff="$DOFF" -v size="$size" '
            BEGIN { print "# Mapfile. Created by a test, in the format of GNU ddrescue 1.27"
                    print "# current_pos  current_status  current_pass"
                    print "0x00000000     -               1"
                    print "#      pos        size  status"
                    at = 0; split("- * / ?", st, " ") }
            { s = ($1 + doff) * 512; len = $2 * 512
              if (s > at) printf "0x%08X  0x%08X  +\n", at, s - at
              printf "0x%08X  0x%08X  %s\n", s, len, st[NR % 4 + 1]
              at = s + len }
            END { if (at < size) printf "0x%08X  0x%08X  +\n", at, size - at }' > "$d/m$m.map"
    done
}

# maps_args: --map options for every map written by mkmaps.
maps_args() {
    for f in "$d"/m?.map; do
        [ -f "$f" ] && printf ' --map %s=%s' "${f%.map}.img" "$f"
    done
}

# expected LEVEL N: the lost array sector ranges for $d/bad.list, from the
# left-symmetric layout: a row is lost where more members are bad than the
# level has parity; then every bad data block of that row is lost.
expected() {
    awk -v level="$1" -v n="$2" -v cs=$CS '
        { for (x = $2; x < $2 + $3; x++) { bad[x, $1] = 1; rows[x] = 1 } }
        END {
            np = level == 6 ? 2 : 1; k = n - np
            for (x in rows) {
                cnt = 0
                for (m = 0; m < n; m++) if ((x, m) in bad) cnt++
                if (cnt <= np) continue
                s = int(x / cs); r = x % cs; p = n - 1 - s % n; q = (p + 1) % n
                for (m = 0; m < n; m++) {
                    if (!((x, m) in bad) || m == p || (np == 2 && m == q)) continue
                    dd = (m - p - np + 2 * n) % n
                    print s * k * cs + dd * cs + r
                }
            }
        }' "$d/bad.list" | sort -n | awk '
        function out() { if (n0) printf "%d-%d (%d sector%s)\n", a, b, b - a + 1, b == a ? "" : "s" }
        { if (n0 && $1 == b + 1) b = $1; else { out(); a = $1; b = $1; n0 = 1 } }
        END { out() }'
}

# salvage NAME LEVEL N: runs salvage with the maps and checks exit status,
# report, image and members.
salvage() {
    name=$1 level=$2 n=$3
    expected "$level" "$n" > "$d/want"
    lost=$(awk '{sub(/\(/, "", $2); s += $2} END {print s + 0}' "$d/want")
    ranges=$(grep -c . "$d/want")
    [ "$ranges" -eq 1 ] && word=range || word=ranges
    echo "recovered $((SECTORS - lost)) of $SECTORS sectors; $ranges unrecoverable $word" >> "$d/want"
    [ "$lost" -eq 0 ] && want_rc=0 || want_rc=3
    before=$(sums)
    rm -f "$d/out.img"
    # shellcheck disable=SC2046
    $URAID salvage ${MEMBERS:-"$d"/m?.img} $(maps_args) -o "$d/out.img" >"$d/report" 2>"$d/err"; rc=$?
    after=$(sums)
    # the image the report promises: the data with the lost sectors zeroed
    cp "$d/data" "$d/model"
    grep -- '-' "$d/want" | tr -- '-(' '  ' | while read -r a b _; do
        dd if=/dev/zero of="$d/model" bs=512 seek="$a" count=$((b - a + 1)) conv=notrunc 2>/dev/null
    done
    why=""
    [ $rc -eq $want_rc ] || why="exit $rc, want $want_rc: $(cat "$d/err")"
    [ -z "$why" ] && ! cmp -s "$d/report" "$d/want" && why="report differs: $(diff "$d/want" "$d/report" | head -5 | tr '\n' '|')"
    [ -z "$why" ] && ! cmp -s "$d/out.img" "$d/model" && why="image differs: $(cmp "$d/out.img" "$d/model" 2>&1)"
    [ -z "$why" ] && [ "$before" != "$after" ] && why="a member changed"
    [ -z "$why" ] && [ -s "$d/err" ] && why="stderr not empty: $(head -2 "$d/err")"
    if [ -z "$why" ]; then t_ok "$name ($lost sectors lost)"; else t_fail "$name" "$why"; fi
}

# ---- RAID-5, 4 members: stripe s has P on member 3 - s mod 4 ----
if mkarray 5 4; then t_ok "RAID-5: create and fill"; else t_fail "RAID-5: create and fill"; fi

printf '1 %d %d\n1 %d %d\n1 %d %d\n' $((CS * 1)) $CS $((CS * 7 + 5)) 1 $((CS * 40)) $((CS * 3 + 17)) | mkmaps
salvage "RAID-5: one member's unrescued ranges, rebuilt from parity" 5 4
[ "$(grep -c '^0x' "$d/m1.map")" -ge 7 ] && t_ok "RAID-5: mapfile has the blocks" || t_fail "RAID-5: mapfile"

# every member bad somewhere, never two in one row; stripe 20 has bad
# members in different rows of one chunk, two of them (2 and 1, sectors 16
# and 17) inside one 4 KiB page, so even the data path's page-by-page
# rebuild fails there and only sector-sized reads recover it
cat <<EOF | mkmaps
0 $((CS * 2)) $CS
1 $((CS * 5 + 3)) 9
2 $((CS * 9)) $((CS * 2))
3 $((CS * 11 + 100)) 28
0 $((CS * 20)) 16
1 $((CS * 20 + 64)) 16
3 $((CS * 20 + 120)) 8
2 $((CS * 20 + 16)) 1
1 $((CS * 20 + 17)) 1
EOF
salvage "RAID-5: every member bad in different stripes and rows of one chunk" 5 4
# the same maps as layers under 'uraid cat': its reads fail at stripe 20,
# so the salvage above only recovered everything by bisecting
layers=""
for f in "$d"/m?.map; do layers="$layers --member-layer ${f%.map}.img:badmap=$f"; done
before=$(sums)
# shellcheck disable=SC2086
$URAID cat $layers "$d"/m?.img > "$d/cat.img" 2>"$d/err"; rc=$?
[ $rc -ne 0 ] && grep -q "cannot read array bytes" "$d/err" && [ "$before" = "$(sums)" ] \
    && t_ok "RAID-5: the same maps fail a plain 4 MiB read (cat)" || t_fail "RAID-5: cat with badmap layers" "rc=$rc"

# beyond RAID-5: two bad members in the same rows
cat <<EOF | mkmaps
0 $((CS * 30 + 10)) 10
1 $((CS * 30 + 15)) 10
2 $((CS * 31)) $CS
3 $((CS * 31 + 64)) 1
2 $((CS * 50)) $((CS * 2))
1 $((CS * 51)) 1
0 $((CS * 51 + 127)) 1
1 $((CS * 51 + 127)) 1
3 $((CS * 60)) 4
EOF
salvage "RAID-5: two members bad in the same rows" 5 4
grep -q '^[0-9]*-[0-9]* (1 sector)$' "$d/report" && t_ok "RAID-5: a single lost sector reported as '(1 sector)'" \
    || t_fail "RAID-5: single sector" "$(cat "$d/report")"

# --report FILE: the same report in the file, the summary on stdout
before=$(sums)
# shellcheck disable=SC2046
$URAID salvage "$d"/m?.img $(maps_args) -o "$d/out2.img" --report "$d/rep2" >"$d/stdout2" 2>"$d/err"; rc=$?
if [ $rc -eq 3 ] && cmp -s "$d/rep2" "$d/report" && [ "$(cat "$d/stdout2")" = "$(tail -n 1 "$d/report")" ] \
    && cmp -s "$d/out2.img" "$d/out.img" && [ "$before" = "$(sums)" ]; then
    t_ok "RAID-5: --report FILE"
else
    t_fail "RAID-5: --report FILE" "rc=$rc $(cat "$d/err")"
fi

# a degraded array (member 2 left out): a bad block is lost wherever the
# stripe's block on member 2 is data or parity, i.e. unless it is P itself
cat <<EOF | mkmaps
0 $((CS * 3)) $CS
1 $((CS * 70)) 3
3 $((CS * 71 + 60)) 2
EOF
echo "2 0 $MSECT" >> "$d/bad.list"
MEMBERS="$d/m0.img $d/m1.img $d/m3.img" salvage "RAID-5 degraded (member 2 left out)" 5 4

# ---- bad input: one line, non-zero, members untouched, no image ----
refuse() {
    name=$1 pattern=$2; shift 2
    before=$(sums)
    rm -f "$d/out.img"
    "$@" >"$d/out" 2>"$d/err"; rc=$?
    lines=$(grep -c . "$d/err")
    if [ $rc -ne 0 ] && [ $rc -ne 3 ] && [ "$lines" -eq 1 ] && grep -q -- "$pattern" "$d/err" \
        && [ "$before" = "$(sums)" ] && [ ! -e "$d/out.img" ]; then
        t_ok "$name"
    else
        t_fail "$name" "rc=$rc lines=$lines image=$([ -e "$d/out.img" ] && echo yes || echo no): $(cat "$d/err")"
    fi
}
printf '0 + 1\n0 0x100000 +\n0x80000 0x1000 -\n' > "$d/overlap.map"
printf '# nothing\n0 + 1\n0x0 0x800000 +\n0x800000 0x200 X\n' > "$d/badstatus.map"
refuse "missing map file" "cannot open mapfile .*nosuch.map" \
    $URAID salvage "$d"/m?.img --map "$d/m1.img=$d/nosuch.map" -o "$d/out.img"
refuse "malformed map: overlapping blocks (file and line named)" "overlap.map line 3" \
    $URAID salvage "$d"/m?.img --map "$d/m1.img=$d/overlap.map" -o "$d/out.img"
refuse "malformed map: unknown status (member named)" "member .*m2.img: mapfile .*badstatus.map line 4" \
    $URAID salvage "$d"/m?.img --map "$d/m2.img=$d/badstatus.map" -o "$d/out.img"
refuse "--map for a path that is not a member" "is not one of the members" \
    $URAID salvage "$d/m0.img" "$d/m1.img" "$d/m2.img" --map "$d/m3.img=$d/m0.map" -o "$d/out.img"
refuse "--map without '='" "expected MEMBER=MAPFILE" \
    $URAID salvage "$d"/m?.img --map "$d/m0.map" -o "$d/out.img"
refuse "no -o" "no output image" $URAID salvage "$d"/m?.img
before=$(sums)
$URAID salvage "$d"/m?.img -o "$d/m2.img" >"$d/out" 2>"$d/err"; rc=$?
[ $rc -ne 0 ] && [ "$(grep -c . "$d/err")" -eq 1 ] && grep -q "is the member" "$d/err" && [ "$before" = "$(sums)" ] \
    && t_ok "-o pointing at a member" || t_fail "-o pointing at a member" "rc=$rc $(cat "$d/err")"
ln -s "$d/m1.img" "$d/link.img"
$URAID salvage "$d"/m?.img -o "$d/link.img" >"$d/out" 2>"$d/err"; rc=$?
[ $rc -ne 0 ] && grep -q "is the member .*m1.img" "$d/err" && [ "$before" = "$(sums)" ] \
    && t_ok "-o at a symlink to a member" || t_fail "-o at a symlink to a member" "rc=$rc $(cat "$d/err")"
$URAID salvage "$d"/m?.img --map "$d/m0.img=$d/m0.map" -o "$d/m0.map" >"$d/out" 2>"$d/err"; rc=$?
[ $rc -ne 0 ] && grep -q "is the mapfile" "$d/err" && grep -q '^0x' "$d/m0.map" \
    && t_ok "-o at a mapfile" || t_fail "-o at a mapfile" "rc=$rc $(cat "$d/err")"

# ---- RAID-6, 5 members: P on member 4 - s mod 5, Q on the next ----
if mkarray 6 5; then t_ok "RAID-6: create and fill"; else t_fail "RAID-6: create and fill"; fi

cat <<EOF | mkmaps
1 $((CS * 4)) $((CS * 3))
3 $((CS * 5)) $((CS * 2 + 7))
1 $((CS * 80 + 1)) 2
3 $((CS * 80 + 2)) 2
EOF
salvage "RAID-6: two members' unrescued ranges, rebuilt from P and Q" 6 5

# four members bad in one stripe, at most two per row; every member somewhere
cat <<EOF | mkmaps
0 $((CS * 3)) 32
1 $((CS * 3 + 16)) 32
2 $((CS * 3 + 64)) 32
3 $((CS * 3 + 80)) 32
4 $((CS * 9)) $CS
2 $((CS * 9)) $CS
0 $((CS * 13 + 127)) 1
EOF
salvage "RAID-6: four members bad in one stripe, two per row at most" 6 5

cat <<EOF | mkmaps
0 $((CS * 7 + 8)) 8
1 $((CS * 7 + 8)) 8
2 $((CS * 7 + 12)) 8
4 $((CS * 20)) $((CS * 2))
0 $((CS * 21)) $CS
3 $((CS * 21 + 100)) 10
1 $((CS * 40)) 1
2 $((CS * 40)) 1
3 $((CS * 40)) 1
4 $((CS * 40)) 1
EOF
salvage "RAID-6: three or four members bad in the same rows" 6 5

t_mdadm_agrees "members after salvage (never written)" "$d"/m?.img

# ---- metadata 0.90 (superblock at the end, data from sector 0): RAID-5 of three
# failing-disk images, the array an old system left behind ----
if META=0.90 mkarray 5 3 && mdadm --examine "$d/m0.img" 2>/dev/null | grep -q "Version : 0.90.00"; then
    t_ok "0.90 RAID-5 x3: create and fill (mdadm: Version 0.90.00)"
else t_fail "0.90 RAID-5 x3: create and fill"; fi
# every image bad somewhere, never two in one row
cat <<EOF | mkmaps
0 $((CS * 1)) $CS
1 $((CS * 4 + 9)) 30
2 $((CS * 6)) $((CS * 2))
0 $((CS * 10 + 64)) 8
1 $((CS * 10 + 72)) 8
EOF
salvage "0.90 RAID-5 x3: three failing images, rebuilt from parity" 5 3
# two images bad in the same rows, and the last rows of the member (next to 0.90's superblock)
cat <<EOF | mkmaps
0 $((CS * 12 + 5)) 20
2 $((CS * 12 + 10)) 4
1 $((MSECT - 8)) 8
2 $((MSECT - 4)) 4
EOF
salvage "0.90 RAID-5 x3: two images bad in the same rows, lost sectors reported" 5 3
t_finish
