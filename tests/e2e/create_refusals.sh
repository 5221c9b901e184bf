#!/bin/sh
# uraid create with 'missing' and spares as mdadm takes them (the last
# --spare-devices names are spares, 'missing' is an empty active slot), read
# back by the real mdadm --examine; every refused create is one stderr line
# and leaves every file byte for byte as it was, whatever the argument that
# is wrong; and `uraid add MEMBERS... --spare A B` adds both.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

d="$t_tmp"
fresh() { for f in "$@"; do rm -f "$d/$f.img"; truncate -s 32M "$d/$f.img"; done; }
sums() { sha256sum "$d"/*.img | sha256sum | cut -d' ' -f1; }
role() { mdadm --examine "$1" 2>/dev/null | sed -n 's/^ *Device Role : //p'; }
astate() { mdadm --examine "$1" 2>/dev/null | sed -n 's/^ *Array State : \([^ ]*\).*/\1/p'; }

# t_refused NAME PATTERN COMMAND...: exit status non-zero, one stderr
# line matching PATTERN, and no file in $d changed.

# ---- missing plus spares, as mdadm lays them out ---------------------------
fresh m0 m1 m2
if $URAID create --level 1 --raid-devices 3 --spare-devices 2 "$d/m0.img" missing missing "$d/m1.img" "$d/m2.img" \
    >/dev/null 2>"$t_tmp/err"; then
    t_ok "create RAID-1 n=3 with two slots missing and two spares"
else
    t_fail "create RAID-1 n=3 with two slots missing and two spares" "$(cat "$t_tmp/err")"
fi
[ "$(role "$d/m0.img")" = "Active device 0" ] && [ "$(role "$d/m1.img")" = spare ] && [ "$(role "$d/m2.img")" = spare ] \
    && [ "$(astate "$d/m0.img")" = "A.." ] && [ "$(astate "$d/m2.img")" = "A.." ] \
    && t_ok "mdadm --examine: m0 active device 0, m1 and m2 spares, Array State A.." \
    || t_fail "mdadm --examine of the RAID-1" "roles '$(role "$d/m0.img")' '$(role "$d/m1.img")' '$(role "$d/m2.img")', state $(astate "$d/m0.img")"
t_mdadm_agrees "RAID-1 with missing slots and spares" "$d/m0.img" "$d/m1.img" "$d/m2.img"
$URAID detail "$d/m0.img" "$d/m1.img" "$d/m2.img" >"$t_tmp/detail" 2>&1
grep -q '\[3/1\] \[U__\]' "$t_tmp/detail" && [ "$(grep -c ' spare ' "$t_tmp/detail")" -eq 2 ] \
    && t_ok "uraid detail: [3/1] [U__] and two spares" || t_fail "uraid detail of the RAID-1" "$(cat "$t_tmp/detail")"

fresh r0 r1 r3
if $URAID create --level 5 --raid-devices 3 --spare-devices 1 --chunk 64K "$d/r0.img" "$d/r1.img" missing "$d/r3.img" \
    >/dev/null 2>"$t_tmp/err"; then
    t_ok "create RAID-5 n=3 with one slot missing and a spare"
else
    t_fail "create RAID-5 n=3 with one slot missing and a spare" "$(cat "$t_tmp/err")"
fi
[ "$(role "$d/r3.img")" = spare ] && [ "$(astate "$d/r0.img")" = "AA." ] \
    && t_ok "mdadm --examine: r3 a spare, Array State AA." \
    || t_fail "mdadm --examine of the RAID-5" "r3 '$(role "$d/r3.img")', state $(astate "$d/r0.img")"
t_mdadm_agrees "RAID-5 with a missing slot and a spare" "$d/r0.img" "$d/r1.img" "$d/r3.img"
head -c 3M /dev/urandom >"$d/data"
$URAID write --offset 1M "$d/r0.img" "$d/r1.img" "$d/r3.img" <"$d/data" 2>"$t_tmp/err" \
    && $URAID rebuild "$d/r0.img" "$d/r1.img" "$d/r3.img" >/dev/null 2>>"$t_tmp/err" \
    && got=$($URAID cat "$d/r3.img" "$d/r1.img" | dd bs=1M skip=1 count=3 iflag=fullblock 2>/dev/null | sha256sum) \
    && [ "$got" = "$(sha256sum <"$d/data")" ] && [ "$(role "$d/r3.img")" = "Active device 2" ] \
    && t_ok "the spare rebuilds into the empty slot: data read back without r0, mdadm: active device 2" \
    || t_fail "rebuild onto the created spare" "$(cat "$t_tmp/err") role '$(role "$d/r3.img")'"
t_mdadm_agrees "RAID-5 after the rebuild" "$d/r0.img" "$d/r1.img" "$d/r3.img"

# ---- refusals: one line, nothing written ------------------------------------
# each on members without a superblock (so that no refusal hides behind
# "already belongs to an md array" left by an earlier one) but not empty
refuse() {
    for f in a0 a1 a2 s0; do fresh "$f"; printf 'not a member %s' "$f" | dd of="$d/$f.img" bs=1 seek=8192 conv=notrunc 2>/dev/null; done
    t_refused "$@"
}
truncate -s 8M "$d/small.img"
mkdir -p "$d/sub"
A="$d/a0.img $d/a1.img $d/a2.img"
refuse "create: a spare that does not exist (after missing slots)" "spare .*nosuch.img: cannot open" \
    $URAID create --level 1 --raid-devices 3 --spare-devices 2 "$d/a0.img" missing missing "$d/a1.img" "$d/nosuch.img"
refuse "create: a spare smaller than the members" "smaller than the smallest member" \
    $URAID create --level 5 --raid-devices 3 --spare-devices 1 $A "$d/small.img"
refuse "create: a spare given as 'missing'" "a spare cannot be 'missing'" \
    $URAID create --level 5 --raid-devices 3 --spare-devices 1 $A missing
refuse "create: a spare that is a member under another name" "given twice" \
    $URAID create --level 5 --raid-devices 3 --spare-devices 1 $A "$d/sub/../a1.img"
refuse "create: a member given twice under two names" "given twice" \
    $URAID create --level 5 --raid-devices 3 "$d/a0.img" "$d/a1.img" "$d/sub/../a0.img"
refuse "create: --chunk 0" "chunk size 0" \
    $URAID create --level 5 --raid-devices 3 --chunk 0 $A
refuse "create: RAID-0 with a spare" "RAID-0 cannot have spares" \
    $URAID create --level 0 --raid-devices 3 --spare-devices 1 $A "$d/s0.img"
refuse "create: fewer names than --raid-devices + --spare-devices" "members given for --raid-devices" \
    $URAID create --level 5 --raid-devices 3 --spare-devices 2 $A "$d/s0.img"
# a spare of another array: every active member checks out, the spare does not
fresh b0 b1 b2
$URAID create --level 5 --raid-devices 3 --assume-clean "$d/b0.img" "$d/b1.img" "$d/b2.img" >/dev/null 2>&1
refuse "create: a spare that belongs to another array" "spare .*b2.img already belongs to an md array" \
    $URAID create --level 5 --raid-devices 3 --spare-devices 1 "$d/a0.img" missing "$d/a2.img" "$d/b2.img"

# ---- uraid add MEMBERS... --spare A B ----------------------------------------
fresh c0 c1 c2 n0 n1
$URAID create --level 5 --raid-devices 3 --assume-clean "$d/c0.img" "$d/c1.img" "$d/c2.img" >/dev/null 2>&1
if $URAID add "$d/c0.img" "$d/c1.img" "$d/c2.img" --spare "$d/n0.img" "$d/n1.img" >"$t_tmp/out" 2>"$t_tmp/err"; then
    [ "$(grep -c 'added as a spare' "$t_tmp/out")" -eq 2 ] && [ "$(role "$d/n0.img")" = spare ] \
        && [ "$(role "$d/n1.img")" = spare ] \
        && t_ok "add --spare A B: both added (mdadm: two spares)" \
        || t_fail "add --spare A B" "$(cat "$t_tmp/out") roles '$(role "$d/n0.img")' '$(role "$d/n1.img")'"
else
    t_fail "add --spare A B" "$(cat "$t_tmp/err")"
fi
t_mdadm_agrees "after add --spare A B" "$d/c0.img" "$d/c1.img" "$d/c2.img" "$d/n0.img" "$d/n1.img"
t_finish
