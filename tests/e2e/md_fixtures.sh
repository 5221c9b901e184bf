#!/bin/sh
# Arrays written by the real Linux md (../shared/fixtures/md, see its MANIFEST):
# uraid reads each one byte-identically (members given in reverse order),
# healthy and with as many members left out as the level survives; the
# degraded fixture with its stale member; the bad-block fixture; and
# `uraid examine` agrees with `mdadm --examine`, `uraid detail` with MANIFEST,
# and with every member's mdadm --examine (roles, stale member, events).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

FIX=../shared/fixtures/md
if [ ! -f "$FIX/MANIFEST" ]; then
    t_fail "fixtures present at $FIX"; t_finish; exit 1
fi

field() { # field FIXTURE "label:" -> rest of that MANIFEST line in the fixture's block
    awk -v name="=== $1 ===" -v label="$2" '
        $0 == name {inside = 1; next}
        /^=== / {inside = 0}
        inside && index($0, label) == 1 {print substr($0, length(label) + 2); exit}' "$FIX/MANIFEST"
}

sha_of() { $URAID cat "$@" 2>"$t_tmp/cat.err" | sha256sum | cut -d' ' -f1; }

# Compare the fields both tools print for one member.
compare_examine() {
    img=$1
    $URAID examine "$img" >"$t_tmp/ours" 2>&1 || { t_fail "uraid examine $img" "$(cat "$t_tmp/ours")"; return; }
    mdadm --examine "$img" >"$t_tmp/theirs" 2>&1 || { t_fail "mdadm --examine $img (mdadm installed?)"; return; }
    bad=""
    for key in "Magic" "Version" "Feature Map" "Array UUID" "Name" "Raid Level" "Raid Devices" "Array Size" \
               "Data Offset" "Super Offset" "State" "Device UUID" "Internal Bitmap" "Bad Block Log" "Checksum" \
               "Events" "Layout" "Chunk Size" "Device Role" "Array State"; do
        theirs=$(grep -m1 "^ *$key : " "$t_tmp/theirs" | sed 's/^[^:]*: //; s/ *(local to host.*//')
        ours=$(grep -m1 "^ *$key : " "$t_tmp/ours" | sed 's/^[^:]*: //')
        [ "$theirs" = "$ours" ] || bad="$bad [$key: mdadm '$theirs' uraid '$ours']"
    done
    [ -z "$bad" ] && t_ok "examine $(basename "$(dirname "$img")")/$(basename "$img") matches mdadm --examine" \
        || t_fail "examine $img matches mdadm" "$bad"
}

for dir in "$FIX"/*/; do
    name=$(basename "$dir")
    [ "$name" = regen ] && continue
    want=$(field "$name" "array sha256 (as md returns it):")
    level=$(field "$name" "level:" | cut -d' ' -f1)
    ndev=$(field "$name" "raid devices:")
    work="$t_tmp/$name"; mkdir -p "$work"
    members=""
    for x in "$dir"*.img.xz; do
        out="$work/$(basename "$x" .xz)"
        xz -dc "$x" > "$out"
        members="$out $members"   # reverse order: the superblocks must decide the slots
    done
    # shellcheck disable=SC2086
    got=$(sha_of $members)
    [ "$got" = "$want" ] && t_ok "$name: uraid cat equals md's content" \
        || t_fail "$name: uraid cat" "got $got want $want: $(cat "$t_tmp/cat.err")"
    # shellcheck disable=SC2086
    $URAID detail $members >"$t_tmp/detail" 2>&1
    # (an empty MANIFEST field would make the pattern match any level)
    if [ -n "$level" ] && [ -n "$ndev" ] && grep -q "Raid Level : $level\$" "$t_tmp/detail" &&
        grep -q "Raid Devices : $ndev\$" "$t_tmp/detail"; then
        t_ok "$name: detail shows $level with $ndev devices"
    else
        t_fail "$name: detail shows '$level' with '$ndev' devices (MANIFEST)" "$(cat "$t_tmp/detail")"
    fi
    compare_examine "$(echo $members | cut -d' ' -f1)"
    # shellcheck disable=SC2086
    t_mdadm_agrees "$name" $members

    # Leave members out up to what the level survives.
    set -- $members
    case "$level" in
        raid5|raid1) drop=1 ;;
        raid6) drop=2 ;;
        *) drop=0 ;;
    esac
    case "$name" in
        d-*) drop=0 ;;  # already degraded
        g-*) drop=1 ;;  # members 1 and 4 have bad blocks: two missing plus one bad is beyond RAID-6
    esac
    if [ $drop -gt 0 ]; then
        shift "$drop"
        got=$(sha_of "$@")
        [ "$got" = "$want" ] && t_ok "$name: identical with $drop member(s) missing" \
            || t_fail "$name: $drop missing" "got $got: $(cat "$t_tmp/cat.err")"
    fi
done

# The degraded fixture: slot 2 is stale (events 19 vs 24); it must be left out.
d="$t_tmp/d-raid5-ls-n4-c64k-degraded"
$URAID detail "$d"/slot*.img >"$t_tmp/detail" 2>&1
grep -q 'Status : \[4/3\] \[UU_U\]' "$t_tmp/detail" && grep -q 'stale' "$t_tmp/detail" \
    && t_ok "degraded fixture: stale member left out, [UU_U]" || t_fail "degraded fixture detail" "$(cat "$t_tmp/detail")"
# Without the stale member it opens the same way.
got=$(sha_of "$d/slot0.img" "$d/slot1.img" "$d/slot3.img")
[ "$got" = "$(field d-raid5-ls-n4-c64k-degraded "array sha256 (as md returns it):")" ] \
    && t_ok "degraded fixture without its stale member" || t_fail "degraded fixture without stale member"
# Two members missing is more than RAID-5 survives: one clear line, non-zero exit.
out=$($URAID cat "$d/slot0.img" "$d/slot1.img" 2>&1 >/dev/null); rc=$?
[ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q 'missing' \
    && t_ok "too many missing: one-line error" || t_fail "too many missing" "rc=$rc $out"

t_finish
