#!/bin/sh
# RAID-0 with members of different sizes (md's zones) against the real md
# (../shared/tools/md-oracle), both layouts:
#   1. md creates and fills 4- and 3-member arrays with --layout=original and
#      --layout=alternate (sizes chosen so a later zone is shifted, where the
#      layouts differ); uraid shows md's size and `uraid cat` md's sha256;
#   2. uraid creates the same shapes (default layout and --layout alternate)
#      and writes them; md assembles them (--snapshot) and reads the same
#      bytes with the same size in mdadm --detail; the two layouts left
#      different member bytes; mdadm --examine agrees with uraid detail;
#   3. refusals, one line each and no member changed: a multi-zone array md
#      wrote with --layout=dangerous (no layout recorded), a member missing,
#      --layout left-symmetric for RAID-0.
# The oracle is built once per machine into $MDORACLE_HOME (outside the repository).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

oracle_ready || { t_finish; exit 1; }
d=$t_tmp

# Data sizes after md's 1 MiB offset, in 64 KiB chunks: 4 members 240, 112,
# 304, 176 (+20 KiB md drops): zone 1 (3 members) starts at chunk 448, shift
# 1 in the original layout; 3 members 176, 113, 304: zone 1 (2 members)
# starts at chunk 339, shift 1.
mkset() { # mkset PREFIX SIZE... -> PREFIX0.img, PREFIX1.img, ...
    _p=$1; shift; _i=0
    for _s in "$@"; do truncate -s "$_s" "$d/$_p$_i.img"; _i=$((_i + 1)); done
}
FOUR="16M 8M 20M 12308K"
THREE="12M 8256K 20M"
# shellcheck disable=SC2086
{ mkset o $FOUR; mkset a $THREE; mkset x 8M 12M 16M; mkset u $FOUR; mkset v $FOUR; }
field() { sed -n "s/^$1 //p" "$d/md.out"; }
size_of() { echo $(($($URAID detail "$@" 2>/dev/null | awk '/Array Size/ {print $4; exit}') * 1024)); }

# ---- 1. md writes, uraid reads --------------------------------------------------
"$ORACLE" --timeout 300 --disk "$d/o0.img" --disk "$d/o1.img" --disk "$d/o2.img" --disk "$d/o3.img" \
    --disk "$d/a0.img" --disk "$d/a1.img" --disk "$d/a2.img" --disk "$d/x0.img" --disk "$d/x1.img" --disk "$d/x2.img" \
    -- - >"$d/md.out" 2>"$d/md.err" <<'GUEST'
fill() { # fill MD LAYOUT SEED DEVICES...
    md=$1 layout=$2 seed=$3; shift 3
    mdadm --create "$md" --level=0 --layout="$layout" --chunk=64 --metadata=1.2 --raid-devices=$# --run "$@" >&2 || return
    size=$(blockdev --getsize64 "$md")
    mdpattern -s "$seed" -n "$size" > "$md"
    sync
    echo "$layout $size $(dd if="$md" bs=1M 2>/dev/null | sha256sum | cut -d' ' -f1)"
    mdadm --stop "$md" >&2
}
fill /dev/md0 original 11 /dev/vda /dev/vdb /dev/vdc /dev/vdd
fill /dev/md1 alternate 12 /dev/vde /dev/vdf /dev/vdg
# what kernels before 5.4 made: no layout recorded; this md refuses to run it
mdadm --create /dev/md2 --level=0 --layout=dangerous --chunk=64 --metadata=1.2 --raid-devices=3 --run \
    /dev/vdh /dev/vdi /dev/vdj >&2
grep -q '^md2 : active' /proc/mdstat && echo "dangerous-started yes"
mdadm --stop /dev/md2 >&2 2>/dev/null
exit 0
GUEST
for set in "original o 4" "alternate a 3"; do
    # shellcheck disable=SC2086
    set -- $set
    layout=$1 p=$2 n=$3
    members=""; i=0
    while [ $i -lt "$n" ]; do members="$members $d/$p$i.img"; i=$((i + 1)); done
    name="md --layout=$layout, $n members of different sizes: uraid reads md's bytes"
    # shellcheck disable=SC2046
    set -- $(field "$layout")
    if [ -z "$2" ]; then
        t_fail "$name" "md made no array: $(tail -3 "$d/md.err")"
        continue
    fi
    # shellcheck disable=SC2086
    ours=$(size_of $members) sha=$($URAID cat $members 2>"$d/cat.err" | sha256sum | cut -d' ' -f1)
    # shellcheck disable=SC2086
    lay=$($URAID detail $members 2>/dev/null | awk '$1 == "Layout" {print $3}')
    if [ "$ours" = "$1" ] && [ "$sha" = "$2" ] && [ "$lay" = "$layout" ]; then
        t_ok "$name ($1 bytes, sha256 ${2%"${2#????????}"}...)"
    else
        t_fail "$name" "md: $1 bytes sha256 $2; uraid: $ours bytes sha256 $sha layout '$lay' $(cat "$d/cat.err")"
    fi
    # shellcheck disable=SC2086
    t_mdadm_agrees "md's $layout array" $members
done

# ---- 2. uraid writes, md reads --------------------------------------------------
# shellcheck disable=SC2086
$URAID create --level 0 --raid-devices 4 --chunk 64K --name zones $d/u?.img >"$d/create.log" 2>&1 &&
    $URAID create --level 0 --raid-devices 4 --chunk 64K --layout alternate --name zones $d/v?.img >>"$d/create.log" 2>&1 \
    || t_fail "uraid create, members of different sizes" "$(cat "$d/create.log")"
# shellcheck disable=SC2086
usize=$(size_of $d/u?.img) vsize=$(size_of $d/v?.img)
# shellcheck disable=SC2086
"$PATTERN" -s 21 -n "$usize" | $URAID write $d/u?.img 2>"$d/write.log" &&
    "$PATTERN" -s 21 -n "$vsize" | $URAID write $d/v?.img 2>>"$d/write.log" \
    || t_fail "uraid write, multi-zone" "$(cat "$d/write.log")"
want=$("$PATTERN" -s 21 -n "$usize" | sha256sum | cut -d' ' -f1)
# the shifted zone puts other chunks on slot 0 and 2: the layouts are not the
# same bytes past the 1 MiB data offset (superblocks differ anyway: UUIDs)
if [ "$usize" = "$vsize" ] && ! cmp -s -i 1048576 "$d/u0.img" "$d/v0.img" && cmp -s -i 1048576 "$d/u1.img" "$d/v1.img"
then
    t_ok "uraid's original and alternate layouts: same size, slot 0 differs, slot 1 (zone 0 only) equal"
else
    t_fail "uraid's original and alternate layouts" "sizes $usize / $vsize; slot 0 equal or slot 1 not"
fi
"$ORACLE" --snapshot --timeout 300 --disk "$d/u0.img" --disk "$d/u1.img" --disk "$d/u2.img" --disk "$d/u3.img" \
    --disk "$d/v0.img" --disk "$d/v1.img" --disk "$d/v2.img" --disk "$d/v3.img" \
    -- - >"$d/md.out" 2>"$d/md.err" <<'GUEST'
show() { # show MD DEVICES...
    md=$1; shift
    mdadm --assemble "$md" --run "$@" >&2 || return
    d=$(mdadm --detail "$md")
    echo "$(basename "$md") $(blockdev --getsize64 "$md") $(dd if="$md" bs=1M 2>/dev/null | sha256sum | cut -d' ' -f1)" \
        "$(echo "$d" | awk '/Array Size/ {print $4}') $(echo "$d" | awk '$1 == "Layout" {print $3}')"
    mdadm --stop "$md" >&2
}
show /dev/md0 /dev/vda /dev/vdb /dev/vdc /dev/vdd
show /dev/md1 /dev/vde /dev/vdf /dev/vdg /dev/vdh
exit 0
GUEST
for set in "md0 u original $usize" "md1 v alternate $vsize"; do
    # shellcheck disable=SC2086
    set -- $set
    md=$1 p=$2 layout=$3 size=$4
    name="uraid's $layout multi-zone array: md assembles it and reads the bytes uraid wrote"
    # shellcheck disable=SC2046
    set -- $(field "$md")
    if [ "$1" = "$size" ] && [ "$2" = "$want" ] && [ "$((${3:-0} * 1024))" = "$size" ] && [ "$4" = "$layout" ]; then
        t_ok "$name ($size bytes, mdadm --detail layout $4)"
    else
        t_fail "$name" "md: '$*'; uraid: $size bytes sha256 $want ($(tail -3 "$d/md.err"))"
    fi
    # shellcheck disable=SC2086
    t_mdadm_agrees "uraid's $layout array" $d/$p?.img
done

# ---- 3. refusals ----------------------------------------------------------------
sums() { cat "$d"/*.img | sha256sum; }
refused() { # refused NAME PATTERN COMMAND...: one line, non-zero, nothing written
    name=$1 pattern=$2; shift 2
    before=$(sums); "$@" </dev/null >/dev/null 2>"$d/err"; rc=$?
    if [ $rc -ne 0 ] && [ "$(grep -c . "$d/err")" = 1 ] && grep -q -- "$pattern" "$d/err" && [ "$(sums)" = "$before" ]; then
        t_ok "$name"
    else
        t_fail "$name" "rc=$rc, members $([ "$(sums)" = "$before" ] && echo unchanged || echo CHANGED): $(cat "$d/err")"
    fi
}
if [ "$(field dangerous-started)" = "" ] && mdadm --examine "$d/x0.img" >/dev/null 2>&1; then
    refused "md's multi-zone array without a layout: refused like md, saying how to record one" \
        "update=layout-" $URAID cat "$d/x0.img" "$d/x1.img" "$d/x2.img"
    refused "... and not written either" "update=layout-" $URAID write "$d/x0.img" "$d/x1.img" "$d/x2.img"
else
    t_fail "md refuses a multi-zone array without a layout" "md: '$(field dangerous-started)' $(tail -3 "$d/md.err")"
fi
refused "multi-zone RAID-0 with a member missing: cat refused" "missing" $URAID cat "$d/o0.img" "$d/o1.img" "$d/o3.img"
refused "multi-zone RAID-0 with a member missing: write refused" "missing" \
    $URAID write "$d/o0.img" "$d/o2.img" "$d/o3.img"
mkset w 8M 16M 12M
refused "create --layout left-symmetric for RAID-0 refused" "unknown layout" \
    $URAID create --level 0 --raid-devices 3 --layout left-symmetric "$d"/w?.img
t_finish
