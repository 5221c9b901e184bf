#!/bin/sh
# RAID-10 and linear through the uraid command on member files. First the
# md-written fixtures (tests/fixtures/md10): uraid reads md's bytes, whole
# and without slot 1.
# For every md RAID-10 layout (n2, n3, f2, f3, o2, o3) with several member
# counts and both 4K and 64K chunks: create, write random data, read it back
# sha256-equal; mdadm --examine agrees (level, layout, chunk, md's array
# size, roles and events); with a member's file gone (and for n2 x4 and f2
# x4 two members that are not neighbours) the array reads the same, takes a
# write, rebuilds onto a spare (mdadm: "Active device N") and a check says
# mismatch_cnt 0; a copy corrupted in its far/second place is found by check
# and mended by repair (the first copy is md's reference); replace; the
# refusals (two neighbours missing, unknown layout) are one line each and
# change no member byte. Then serve + control socket: fail, refused fail of
# the last copy, remove, add a spare that rebuilds while served. Linear:
# create (members of different sizes), write, read, mdadm --examine, a
# missing member refused.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

T="timeout 120"
t_need mdadm timeout sha256sum nbdcopy nbdinfo xz
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$t_tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

sha() { sha256sum | cut -c1-64; }
size_of() { $URAID detail "$@" 2>/dev/null | awk '/Array Size/ {print $4 * 1024; exit}'; }
sums() { for f in "$@"; do sha256sum <"$f"; done; }

# mdadm --examine of member $1 shows level raid10, layout word $2, chunk $3,
# and the array size mdadm derives (size * members / copies)
examine_ok() {
    mdadm --examine "$1" >"$t_tmp/ex" 2>&1 || return 1
    grep -q "Raid Level : raid10" "$t_tmp/ex" && grep -q "Layout : $2\$" "$t_tmp/ex" &&
        grep -q "Chunk Size : $3\$" "$t_tmp/ex" || return 1
    $URAID examine "$1" >"$t_tmp/ux" 2>&1 || return 1
    for f in "Array Size" "Used Dev Size" "Layout" "Chunk Size" "Raid Devices" "Data Offset"; do
        [ "$(grep "^ *$f :" "$t_tmp/ex")" = "$(grep "^ *$f :" "$t_tmp/ux")" ] || return 1
    done
}

# one_layout LAYOUT N CHUNK WORD [GONE2]: the whole host-side round; GONE2
# is a second slot to take away with slot 0 (not a neighbour of it)
one_layout() {
    lay=$1 n=$2 chunk=$3 word=$4 gone2=$5
    tag="$lay x$n ${chunk}"
    p=$t_tmp/$lay-$n-$chunk
    m=""; i=0
    while [ $i -lt "$n" ]; do truncate -s 12M "$p.$i"; m="$m $p.$i"; i=$((i + 1)); done
    truncate -s 12M "$p.s"
    # shellcheck disable=SC2086
    if ! $T $URAID create --level 10 --layout "$lay" --chunk "$chunk" --raid-devices "$n" $m >"$t_tmp/out" 2>&1; then
        t_fail "$tag: create" "$(cat "$t_tmp/out")"
        return
    fi
    # shellcheck disable=SC2086
    size=$(size_of $m)
    head -c "$size" /dev/urandom >"$p.data"
    want=$(sha <"$p.data")
    # shellcheck disable=SC2086
    $T $URAID write $m <"$p.data" >/dev/null 2>&1
    # shellcheck disable=SC2086
    got=$($T $URAID cat $m 2>/dev/null | sha)
    # shellcheck disable=SC2086
    if [ "$got" = "$want" ] && examine_ok "$p.0" "$word" "$chunk" && t_mdadm_agrees "$tag" $m >/dev/null; then
        t_ok "$tag: $size bytes written and read back; mdadm --examine agrees (Layout : $word)"
    else
        t_fail "$tag: write, read, mdadm agrees" "sha $got want $want; $(head -c 400 "$t_tmp/ex")"
    fi
    # check on the whole array
    # shellcheck disable=SC2086
    t_exits "$tag: check mismatch_cnt 0" 0 "mismatch_cnt 0" $URAID check $m
    # slot 0 (and gone2) lost
    rm -f "$p.0"
    left=""; i=1
    while [ $i -lt "$n" ]; do
        [ "$i" = "$gone2" ] || left="$left $p.$i"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    got=$($T $URAID cat $left 2>"$t_tmp/err" | sha)
    lost="slot 0${gone2:+ and $gone2}"
    [ "$got" = "$want" ] && t_ok "$tag: reads the same without $lost" \
        || t_fail "$tag: degraded read without $lost" "$(head -3 "$t_tmp/err")"
    # a degraded write in the middle
    head -c 1048576 /dev/urandom >"$p.patch"
    dd if="$p.patch" of="$p.data" bs=1M seek=3 conv=notrunc 2>/dev/null
    want=$(sha <"$p.data")
    # shellcheck disable=SC2086
    $T $URAID write --offset 3145728 $left <"$p.patch" >/dev/null 2>&1
    # shellcheck disable=SC2086
    got=$($T $URAID cat $left 2>/dev/null | sha)
    [ "$got" = "$want" ] && t_ok "$tag: a degraded write reads back" || t_fail "$tag: degraded write"
    # rebuild slot 0 (and gone2) from the surviving copies
    spares="--spare $p.s"
    if [ -n "$gone2" ]; then truncate -s 12M "$p.t"; spares="$spares --spare $p.t"; fi
    # shellcheck disable=SC2086
    t_exits "$tag: rebuild onto the spare${gone2:+s}" 0 "recovery finished" $URAID rebuild $left $spares -v
    all="$left $p.s${gone2:+ $p.t}"
    # shellcheck disable=SC2086
    got=$($T $URAID cat $all 2>/dev/null | sha)
    role=$(mdadm --examine "$p.s" 2>/dev/null | sed -n 's/^ *Device Role : //p')
    [ "$got" = "$want" ] && [ "$role" = "Active device 0" ] && t_ok "$tag: rebuilt: same bytes, the spare is slot 0" \
        || t_fail "$tag: rebuilt" "sha $got role '$role'"
    # shellcheck disable=SC2086
    t_exits "$tag: check after the rebuild: mismatch_cnt 0" 0 "mismatch_cnt 0" $URAID check $all
    # shellcheck disable=SC2086
    t_mdadm_agrees "$tag rebuilt" $all >"$t_tmp/agree" || cat "$t_tmp/agree"
    # the array without the rebuilt member's partners: only the new copy serves
    if [ "$n" -ge 4 ] && [ -z "$gone2" ]; then
        sub=""; i=1
        for f in $left; do [ $i -eq 1 ] || sub="$sub $f"; i=$((i + 1)); done
        # shellcheck disable=SC2086
        got=$($T $URAID cat $p.s $sub 2>/dev/null | sha)
        [ "$got" = "$want" ] && t_ok "$tag: the rebuilt copy alone serves its chunks" || t_fail "$tag: rebuilt copy"
    fi
}

# ---- the md-written fixtures (tests/fixtures/md10): uraid reads md's bytes ------
while read -r name level layout n chunk seed size want mm; do
    m=""; i=0
    while [ $i -lt "$n" ]; do
        xz -dc "tests/fixtures/md10/$name/slot$i.img.xz" >"$t_tmp/fx-$name.$i" && m="$m $t_tmp/fx-$name.$i"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    got=$($URAID cat $m 2>"$t_tmp/err" | sha) usize=$(size_of $m)
    [ "$got" = "$want" ] && [ "$usize" = "$size" ] && t_ok "md's fixture $name ($level $layout x$n): uraid reads md's bytes" \
        || t_fail "md's fixture $name" "$usize bytes sha $got, md $size $want; $(head -2 "$t_tmp/err")"
    if [ "$level" = 10 ]; then
        # without slot 1 (every layout here keeps a copy elsewhere)
        sub=""; i=0
        for f in $m; do [ $i -eq 1 ] || sub="$sub $f"; i=$((i + 1)); done
        # shellcheck disable=SC2086
        got=$($URAID cat $sub 2>/dev/null | sha)
        [ "$got" = "$want" ] && t_ok "md's fixture $name: the same without slot 1" || t_fail "md's fixture $name degraded"
    fi
done <tests/fixtures/md10/CASES

one_layout n2 3 64K near=2
one_layout n2 4 4K near=2 2
one_layout n2 5 64K near=2
one_layout n3 3 4K near=3
one_layout n3 4 64K near=3
one_layout f2 3 64K far=2
one_layout f2 4 4K far=2 2
one_layout f2 5 64K far=2
one_layout f3 4 64K far=3
one_layout o2 3 4K offset=2
one_layout o2 4 64K offset=2
one_layout o3 3 64K offset=3

# ---- repair: md's reference is the first copy; a later copy is mended ------------
p=$t_tmp/rp
for i in 0 1 2; do truncate -s 12M "$p.$i"; done
$URAID create --level 10 --layout f2 --chunk 64K --raid-devices 3 "$p.0" "$p.1" "$p.2" >/dev/null 2>&1
size=$(size_of "$p.0" "$p.1" "$p.2")
head -c "$size" /dev/urandom >"$p.data"
$URAID write "$p.0" "$p.1" "$p.2" <"$p.data" >/dev/null 2>&1
want=$(sha <"$p.data")
# far copies live in the second half of each member's data (1 MiB offset)
dd if=/dev/urandom of="$p.1" bs=4096 seek=$(((1048576 + 8 * 1048576) / 4096)) count=3 conv=notrunc 2>/dev/null
t_exits "f2 x3: check finds the corrupted far copy (exit 3)" 3 "mismatch_cnt 24" $URAID check "$p.0" "$p.1" "$p.2"
t_exits "f2 x3: repair rewrites it" 0 "repaired 24 sectors" $URAID repair "$p.0" "$p.1" "$p.2"
t_exits "f2 x3: check after repair: mismatch_cnt 0" 0 "mismatch_cnt 0" $URAID check "$p.0" "$p.1" "$p.2"
got=$($URAID cat "$p.0" "$p.1" "$p.2" 2>/dev/null | sha)
[ "$got" = "$want" ] && t_ok "f2 x3: repaired array holds the data" || t_fail "f2 x3: data after repair"
# a read error on a copy: served from another, the bad copy rewritten
got=$($URAID cat --member-layer "$p.0:read-eio=$((2048 * 512 + 65536))+65536" "$p.0" "$p.1" "$p.2" 2>"$t_tmp/err" | sha)
[ "$got" = "$want" ] && grep -q "read error" "$t_tmp/err" && t_ok "f2 x3: a read error is served by the other copy" \
    || t_fail "f2 x3: read error" "$(head -3 "$t_tmp/err")"
# replace
truncate -s 12M "$p.new"
t_exits "f2 x3: replace slot 1" 0 "now holds slot 1" $URAID replace --old "$p.1" --with "$p.new" "$p.0" "$p.1" "$p.2"
got=$($URAID cat "$p.0" "$p.new" "$p.2" 2>/dev/null | sha)
[ "$got" = "$want" ] && t_ok "f2 x3: replaced: same bytes" || t_fail "f2 x3: replace"
t_exits "f2 x3: check after replace" 0 "mismatch_cnt 0" $URAID check "$p.0" "$p.new" "$p.2"

# ---- a degraded check compares the copies that are left (md's way) ---------------
g=$t_tmp/dg
for i in 0 1 2 3; do truncate -s 12M "$g.$i"; done
$URAID create --level 10 --layout n2 --chunk 64K --raid-devices 4 "$g.0" "$g.1" "$g.2" "$g.3" >/dev/null 2>&1
size=$(size_of "$g.0" "$g.1" "$g.2" "$g.3")
head -c "$size" /dev/urandom | $URAID write "$g.0" "$g.1" "$g.2" "$g.3" >/dev/null 2>&1
doff=$($URAID examine "$g.3" | awk '/Data Offset/ {print $4}')
# n2 x4: slots 0+1 and 2+3 hold the same chunks; 3 pages of slot 3 (pair intact) and of
# slot 1 (its partner, slot 0, left out: nothing to compare it with) corrupted
for m in 1 3; do
    dd if=/dev/urandom of="$g.$m" bs=4096 seek=$(((doff * 512 + 1048576) / 4096)) count=3 conv=notrunc 2>/dev/null
done
t_exits "n2 x4 without slot 0: check compares the pairs left, finds slot 3's pages (exit 3)" 3 "mismatch_cnt 24" \
    $URAID check "$g.1" "$g.2" "$g.3"
before=$(sums "$g.1" "$g.2" "$g.3")
t_exits "n2 x4 without slot 0: repair refused (no way to tell the right copy)" 1 "repair needs every member in sync" \
    $URAID repair "$g.1" "$g.2" "$g.3"
t_exits "n2 x4 without slots 0 and 2: check refused, no chunk has two copies" 1 "no chunk left with two copies" \
    $URAID check "$g.1" "$g.3"
[ "$(sums "$g.1" "$g.2" "$g.3")" = "$before" ] && t_ok "degraded refusals changed no member byte" \
    || t_fail "degraded refusals changed members"

# ---- refusals: one line, no member byte changed ---------------------------------
q=$t_tmp/q
for i in 0 1 2 3; do truncate -s 12M "$q.$i"; done
$URAID create --level 10 --layout n2 --raid-devices 4 "$q.0" "$q.1" "$q.2" "$q.3" >/dev/null 2>&1
before=$(sums "$q.0" "$q.1" "$q.2" "$q.3")
t_exits "n2 x4 without slots 2 and 3 (a pair): refused" 1 "every copy of some chunks" $URAID cat "$q.0" "$q.1"
t_exits "create with an unknown layout: refused" 2 "unknown layout 'x2' for RAID-10" \
    $URAID create --level 10 --layout x2 --raid-devices 4 "$q.0" "$q.1" "$q.2" "$q.3"
t_exits "create with 'missing' neighbours: refused" 1 "every copy" \
    $URAID create --level 10 --layout n2 --raid-devices 4 --force missing missing "$q.2" "$q.3"
t_exits "create f3 on 2 members: refused" 1 "3 copies but the array has 2 members" \
    $URAID create --level 10 --layout f3 --raid-devices 2 --force "$q.0" "$q.1"
[ "$(sums "$q.0" "$q.1" "$q.2" "$q.3")" = "$before" ] && t_ok "refusals changed no member byte" \
    || t_fail "refusals changed members"

# ---- a write-intent bitmap (md's, over the array's sectors) -----------------------
b=$t_tmp/bm
for i in 0 1 2 3; do truncate -s 12M "$b.$i"; done
t_exits "create f2 x4 with --bitmap internal" 0 "consistency policy: bitmap" \
    $URAID create --level 10 --layout f2 --raid-devices 4 --bitmap internal --bitmap-chunk 512K "$b.0" "$b.1" "$b.2" "$b.3"
asize=$($URAID detail "$b.0" "$b.1" "$b.2" "$b.3" | awk '/Array Size/ {print $4; exit}')
t_exits "mdadm: an internal bitmap 8 sectors from the superblock" 0 "Internal Bitmap : 8 sectors from superblock" \
    mdadm --examine "$b.1"
t_exits "the bitmap's Sync Size is the array's ($asize KiB, mdadm's RAID-10 rule)" 0 "Sync Size : $asize\$" \
    $URAID examine "$b.2"
head -c 2097152 /dev/urandom >"$b.patch"
$URAID write --offset 1048576 "$b.0" "$b.1" "$b.2" "$b.3" <"$b.patch" >/dev/null 2>&1
# a degraded write marks its bitmap chunk; the re-added member catches up from the bitmap alone
cp "$b.3" "$b.old3"
$URAID write --offset 4194304 "$b.0" "$b.1" "$b.2" <"$b.patch" >/dev/null 2>&1
t_exits "bitmap: the write without slot 3 left dirty bits" 0 "[1-9][0-9]* dirty" $URAID examine "$b.0"
cp "$b.old3" "$b.3"
$T $URAID add "$b.0" "$b.1" "$b.2" --re-add "$b.3" >"$t_tmp/out" 2>&1
worked=$(sed -n 's/.*rebuilt; \([0-9]*\) of \([0-9]*\) sectors per member worked on.*/\1 \2/p' "$t_tmp/out")
[ -n "$worked" ] && [ "${worked% *}" -gt 0 ] && [ "${worked% *}" -lt "${worked#* }" ] &&
    t_ok "re-add of slot 3 rebuilds only the bitmap's dirty chunks ($worked sectors)" ||
    t_fail "re-add of slot 3 rebuilds only the bitmap's dirty chunks" "'$worked': $(tail -2 "$t_tmp/out")"
t_exits "check after the re-add: mismatch_cnt 0" 0 "mismatch_cnt 0" $URAID check "$b.0" "$b.1" "$b.2" "$b.3"
{ head -c 1048576 /dev/zero; cat "$b.patch"; head -c 1048576 /dev/zero; cat "$b.patch"; } | sha >"$b.want"
got=$($URAID cat "$b.0" "$b.1" "$b.2" "$b.3" 2>/dev/null | head -c 6291456 | sha)
[ "$got" = "$(cat "$b.want")" ] && t_ok "bitmap: both writes read back after the re-add" || t_fail "bitmap: data after re-add"
# without slot 2, the chunks whose other copy is on slot 3 come from the re-added member
got=$($URAID cat "$b.0" "$b.1" "$b.3" 2>/dev/null | head -c 6291456 | sha)
[ "$got" = "$(cat "$b.want")" ] && t_ok "bitmap: the re-added member's copies hold the write (read without slot 2)" \
    || t_fail "bitmap: re-added member's copies"

# ---- served: fail, remove, add through the control socket -----------------------
s=$t_tmp/sv
for i in 0 1 2 3 4; do truncate -s 12M "$s.$i"; done
$URAID create --level 10 --layout o2 --chunk 4K --raid-devices 4 "$s.0" "$s.1" "$s.2" "$s.3" >/dev/null 2>&1
ctl=$t_tmp/ctl.sock sock=$t_tmp/nbd.sock
uri="nbd+unix:///?socket=$sock"
$URAID serve --socket "$sock" --control "$ctl" "$s.0" "$s.1" "$s.2" "$s.3" >"$t_tmp/serve.log" 2>&1 &
server_pid=$!
n=0
while { [ ! -S "$ctl" ] || [ ! -S "$sock" ]; } && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
size=$(nbdinfo --size "$uri" 2>/dev/null)
head -c "${size:-0}" /dev/urandom >"$s.data"
want=$(sha <"$s.data")
nbdcopy "$s.data" "$uri" 2>/dev/null
t_exits "served o2 x4: fail slot 0" 0 "" $URAID fail --control "$ctl" "$s.0"
t_exits "served: failing slot 1 too (its partner) refused" 1 "without any copy" $URAID fail --control "$ctl" "$s.1"
t_exits "served: fail slot 2" 0 "" $URAID fail --control "$ctl" "$s.2"
t_exits "served: status [4/2] [_U_U]" 0 "\[4/2\] \[_U_U\]" $URAID status --control "$ctl"
got=$(nbdcopy "$uri" - 2>/dev/null | sha)
[ "$got" = "$want" ] && t_ok "served: reads the same with two members failed" || t_fail "served: degraded read"
t_exits "served: remove slot 0" 0 "" $URAID remove --control "$ctl" "$s.0"
t_exits "served: add a spare" 0 "" $URAID add --control "$ctl" "$s.4"
n=0
until $URAID status --control "$ctl" 2>/dev/null | grep -q "\[4/3\] \[UU_U\]" || [ $n -ge 300 ]; do
    sleep 0.1; n=$((n + 1))
done
t_exits "served: the spare rebuilt into slot 0" 0 "\[4/3\] \[UU_U\]" $URAID status --control "$ctl"
got=$(nbdcopy "$uri" - 2>/dev/null | sha)
[ "$got" = "$want" ] && t_ok "served: same bytes after the rebuild" || t_fail "served: after rebuild"
t_exits "served: stop" 0 "" $URAID stop --control "$ctl"
wait "$server_pid" 2>/dev/null
server_pid=""
got=$($URAID cat "$s.4" "$s.1" "$s.3" 2>/dev/null | sha)
[ "$got" = "$want" ] && t_ok "stopped: the rebuilt spare and the others read the same" || t_fail "stopped: read"

# ---- linear ------------------------------------------------------------------------
l=$t_tmp/lin
truncate -s 8M "$l.0"; truncate -s 12M "$l.1"; truncate -s 5M "$l.2"
t_exits "linear: create, members of different sizes" 0 "linear, 3 members" \
    $URAID create --level linear --raid-devices 3 "$l.0" "$l.1" "$l.2"
size=$(size_of "$l.0" "$l.1" "$l.2")
ds=0
for i in 0 1 2; do
    av=$(mdadm --examine "$l.$i" 2>/dev/null | sed -n 's/^ *Avail Dev Size : \([0-9]*\) sectors.*/\1/p')
    ds=$((ds + ${av:-0} * 512))
done
[ "$size" = "$ds" ] && t_ok "linear: size is the data areas summed ($size bytes)" || t_fail "linear size $size vs $ds"
head -c "$size" /dev/urandom >"$l.data"
$URAID write "$l.0" "$l.1" "$l.2" <"$l.data" >/dev/null 2>&1
got=$($URAID cat "$l.0" "$l.1" "$l.2" 2>/dev/null | sha)
[ "$got" = "$(sha <"$l.data")" ] && t_ok "linear: written and read back" || t_fail "linear: read back"
mdadm --examine "$l.1" >"$t_tmp/ex" 2>&1
$URAID examine "$l.1" >"$t_tmp/ux" 2>&1
ok=1
for f in "Raid Level" "Raid Devices" "Avail Dev Size" "Used Dev Size" "Rounding" "Data Offset" "Device Role"; do
    [ "$(grep "^ *$f :" "$t_tmp/ex")" = "$(grep "^ *$f :" "$t_tmp/ux")" ] && [ -n "$(grep "^ *$f :" "$t_tmp/ex")" ] \
        || ok=0
done
[ $ok = 1 ] && t_ok "linear: mdadm --examine agrees with uraid examine" || t_fail "linear examine" "$(diff "$t_tmp/ex" "$t_tmp/ux")"
t_exits "linear without a member: refused" 1 "cannot start the linear array" $URAID cat "$l.0" "$l.2"
t_exits "linear check: no redundancy" 1 "no redundancy" $URAID check "$l.0" "$l.1" "$l.2"
t_finish
