#!/bin/sh
# The array commands as a user runs them, and what they do with bad input:
# every refusal is one line on stderr, a non-zero exit, and no member changed.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

d="$t_tmp"
for i in 0 1 2 3; do truncate -s 32M "$d/m$i.img"; done
truncate -s 1M "$d/tiny.img"
head -c 4M /dev/urandom > "$d/notarray.img"

sums() { sha256sum "$d"/*.img | sha256sum | cut -d' ' -f1; }

# t_refused NAME PATTERN COMMAND...: one stderr line matching PATTERN,
# exit status non-zero, and every member file unchanged.

t_refused "create: unknown level" "unknown level" $URAID create --level 7 --raid-devices 4 "$d"/m?.img
t_refused "create: chunk not a power of two" "chunk size must be a power of two" \
    $URAID create --level 5 --raid-devices 4 --chunk 48K "$d"/m?.img
t_refused "create: member count mismatch" "members given for --raid-devices" \
    $URAID create --level 5 --raid-devices 5 "$d"/m?.img
t_refused "create: too many missing" "survives only" \
    $URAID create --level 5 --raid-devices 4 "$d/m0.img" "$d/m1.img" missing missing
t_refused "create: member too small" "too small" \
    $URAID create --level 5 --raid-devices 4 "$d/m0.img" "$d/m1.img" "$d/m2.img" "$d/tiny.img"
t_refused "create: member given twice" "given twice" \
    $URAID create --level 5 --raid-devices 4 "$d/m0.img" "$d/m1.img" "$d/m1.img" "$d/m3.img"
t_refused "create: missing file" "cannot open" \
    $URAID create --level 5 --raid-devices 4 "$d/m0.img" "$d/m1.img" "$d/m2.img" "$d/nosuch.img"
t_refused "create: unknown layout" "unknown layout" \
    $URAID create --level 6 --raid-devices 4 --layout sideways "$d"/m?.img

if $URAID create --level 5 --raid-devices 4 --chunk 64K --name cli "$d"/m?.img >/dev/null 2>&1; then
    t_ok "create RAID-5"
else
    t_fail "create RAID-5"
fi
t_refused "create over an existing array without --force" "already belongs to an md array" \
    $URAID create --level 5 --raid-devices 4 "$d"/m?.img
t_refused "examine a file that is not a member" "no md superblock" $URAID examine "$d/notarray.img"
t_refused "detail with a foreign file among the members" "no md superblock" \
    $URAID detail "$d/m0.img" "$d/m1.img" "$d/notarray.img"
t_refused "detail with no members" "no members given" $URAID detail
t_refused "cat with a member given twice" "given twice" $URAID cat "$d/m0.img" "$d/m0.img" "$d/m1.img"
t_refused "unknown option" "unknown option" $URAID detail --frobnicate "$d"/m?.img
t_refused "write past the end" "does not fit" sh -c "head -c 1M /dev/zero | $URAID write --offset 95M $d/m0.img $d/m1.img $d/m2.img $d/m3.img"
t_refused "bad member layer spec" "bad layer spec" $URAID cat --member-layer 'throttle=9Q' "$d"/m?.img

# write and read back through the commands, whole and degraded
head -c 5M /dev/urandom > "$d/data"
if $URAID write --offset 1M "$d"/m?.img < "$d/data" 2>"$t_tmp/err"; then
    got=$($URAID cat "$d/m3.img" "$d/m0.img" "$d/m2.img" | dd bs=1M skip=1 count=5 iflag=fullblock 2>/dev/null | sha256sum)
    [ "$got" = "$(sha256sum < "$d/data")" ] && t_ok "write then cat (degraded, shuffled)" || t_fail "write then cat"
else
    t_fail "write" "$(cat "$t_tmp/err")"
fi
$URAID detail "$d"/m?.img > "$t_tmp/detail" 2>&1
grep -q 'State : clean' "$t_tmp/detail" && grep -q '\[4/4\] \[UUUU\]' "$t_tmp/detail" \
    && t_ok "detail after a clean close: clean, [UUUU]" || t_fail "detail" "$(cat "$t_tmp/detail")"
# mdadm agrees on what we wrote: roles, state, events, checksums
t_mdadm_agrees "after write and cat" "$d"/m?.img
t_finish
