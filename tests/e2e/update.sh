#!/bin/sh
# uraid update --update=WHAT and uraid zero-superblock (mdadm --update= and
# --zero-superblock) on arrays made with uraid create, mdadm --examine as the
# judge of the superblocks:
#   1. metadata 1.2 RAID-5 with a bitmap and a bad-block log: name, uuid
#      (given and random; the bitmap's UUID with it), no-bbl, bbl,
#      no-bitmap, resync; after each, mdadm --examine shows the change on
#      every member and agrees with uraid detail, and uraid cat reads the
#      same bytes as before;
#   2. metadata 1.0 RAID-1 (name, no-bbl, bbl, resync) and 0.90 RAID-5 with
#      a bitmap (uuid, no-bitmap, resync; name refused: 0.90 has none);
#   3. refusals, every member byte for byte unchanged: a member left out,
#      no-bbl while the log lists a bad block, zero-superblock on a file
#      with no superblock (also as the last of several members), a damaged
#      superblock without --force, both verbs on an array being served;
#   4. zero-superblock on 1.2, 1.0 and 0.90 members (and --force on a
#      damaged one): mdadm --examine finds no superblock afterwards.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
command -v mdadm >/dev/null || { t_fail "mdadm is installed"; t_finish; exit 1; }

sums() { for f in "$@"; do sha256sum "$f"; done; }
# new_array DIR LEVEL N [create options]: members DIR/m0..m(N-1) of 16 MiB
# with random data written; sets M (members) and DATA (the array's sha256)
new_array() {
    dir=$1 lvl=$2 n=$3; shift 3
    rm -rf "$dir"; mkdir -p "$dir"
    M="" i=0
    while [ $i -lt "$n" ]; do truncate -s 16M "$dir/m$i.img"; M="$M $dir/m$i.img"; i=$((i + 1)); done
    # shellcheck disable=SC2086
    $URAID create --level "$lvl" --raid-devices "$n" --assume-clean "$@" $M >/dev/null 2>&1 ||
        { t_fail "create RAID-$lvl $* in $dir"; return 1; }
    # shellcheck disable=SC2086
    kib=$($URAID detail $M 2>&1 | awk '/Array Size/ {print $4; exit}')
    # shellcheck disable=SC2086
    head -c $((${kib:-0} * 1024)) /dev/urandom | $URAID write $M || t_fail "write the data in $dir"
    # shellcheck disable=SC2086
    DATA=$($URAID cat $M | sha256sum | cut -d' ' -f1)
}
# every_member PATTERN MEMBERS...: mdadm --examine of each member matches
every_member() {
    _pat=$1; shift
    for _m in "$@"; do mdadm --examine "$_m" 2>&1 | grep -Eq "$_pat" || return 1; done
}
no_member() {
    _pat=$1; shift
    for _m in "$@"; do mdadm --examine "$_m" 2>&1 | grep -Eq "$_pat" && return 1; done
    return 0
}
# updated NAME PATTERN|!PATTERN UPDATE-ARGS...: the update succeeds, every
# member's mdadm --examine matches (or, with !, lacks) PATTERN, mdadm agrees
# with uraid detail (t_mdadm_agrees reads 1.x fields: not for 0.90, whose
# uraid detail opening is checked by uraid cat) and uraid cat reads the same data
updated() {
    name=$1 pat=$2; shift 2
    # shellcheck disable=SC2086
    if ! out=$($URAID update "$@" $M 2>&1); then t_fail "$name" "$out"; return; fi
    case "$pat" in
    !*) # shellcheck disable=SC2086
        no_member "${pat#!}" $M || { t_fail "$name: mdadm --examine has no '${pat#!}'"; return; } ;;
    *) # shellcheck disable=SC2086
        every_member "$pat" $M || { t_fail "$name: mdadm --examine shows '$pat' on every member" \
            "$(mdadm --examine $M 2>&1 | grep -E 'Name|UUID|Feature|Bad Block|State :|Bitmap' | head -8)"; return; } ;;
    esac
    # shellcheck disable=SC2086
    got=$($URAID cat $M 2>"$t_tmp/cat.err" | sha256sum | cut -d' ' -f1)
    [ "$got" = "$DATA" ] || { t_fail "$name: the array reads the same" "$(tail -n 1 "$t_tmp/cat.err")"; return; }
    t_ok "$name"
    # shellcheck disable=SC2086
    if [ -z "${no_agree:-}" ]; then
        # shellcheck disable=SC2086
        t_mdadm_agrees "$name" $M
    else
        # shellcheck disable=SC2086
        $URAID detail $M >"$t_tmp/detail" 2>&1 && grep -q "Raid Level" "$t_tmp/detail" &&
            t_ok "$name: uraid detail opens the array" || t_fail "$name: uraid detail" "$(tail -n 1 "$t_tmp/detail")"
    fi
}
# refused NAME MESSAGE CMD...: exit 1 (or $want_rc), MESSAGE in its one line, no byte of
# any member in $M (or $R) changed
refused() {
    name=$1 msg=$2; shift 2
    # shellcheck disable=SC2086
    sums $M $R >"$t_tmp/before"
    "$@" >"$t_tmp/out" 2>&1; rc=$?
    # shellcheck disable=SC2086
    sums $M $R >"$t_tmp/after"
    if [ "$rc" -eq "${want_rc:-1}" ] && grep -q -- "$msg" "$t_tmp/out" && [ "$(wc -l <"$t_tmp/out")" -eq 1 ] &&
        cmp -s "$t_tmp/before" "$t_tmp/after"; then
        t_ok "$name: refused with one line, no byte changed"
    else
        t_fail "$name: refused with one line, no byte changed" "exit $rc: $(cat "$t_tmp/out")$(cmp -s \
            "$t_tmp/before" "$t_tmp/after" || echo ' (members changed)')"
    fi
}
# set_bad_block MEMBER: a v1.x superblock made to list one bad block, as md
# writes it (feature BAD_BLOCKS, an entry in the log, checksum redone)
set_bad_block() {
    python3 - "$1" <<'EOF'
import struct, sys
f = open(sys.argv[1], 'r+b')
at = 4096  # metadata 1.2
f.seek(at); sb = bytearray(f.read(4096))
fm = struct.unpack_from('<I', sb, 8)[0] | 8
struct.pack_into('<I', sb, 8, fm)
bboff = struct.unpack_from('<i', sb, 0xbc)[0]
f.seek(at + bboff * 512)
f.write(struct.pack('<Q', (100 << 10) | 8))  # sector 100, 8 sectors
max_dev = struct.unpack_from('<I', sb, 0xdc)[0]
struct.pack_into('<I', sb, 0xd8, 0)
n = 256 + 2 * max_dev
s = sum(struct.unpack_from('<%dI' % (n // 4), sb, 0))
s = (s & 0xffffffff) + (s >> 32)
struct.pack_into('<I', sb, 0xd8, s & 0xffffffff)
f.seek(at); f.write(sb)
EOF
}

host=$(hostname)
R=""
# ---- 1. metadata 1.2 RAID-5, bitmap and bad-block log ----
d=$t_tmp/v12
new_array "$d" 5 3 --chunk 64K --bitmap internal --name old
updated "1.2: --update=name" "Name : $host:newname" --update=name --name newname
U=01234567:89abcdef:fedcba98:76543210
updated "1.2: --update=uuid --uuid U" "Array UUID : $U" --update=uuid --uuid $U
# shellcheck disable=SC2086
$URAID examine $M | awk '/Write-intent bitmap/ {b = 1} b && /UUID :/ {print $3; b = 0}' | sort -u >"$t_tmp/bmu"
[ "$(cat "$t_tmp/bmu")" = "$U" ] && t_ok "1.2: the bitmap's UUID follows on every member" ||
    t_fail "1.2: the bitmap's UUID follows" "$(cat "$t_tmp/bmu")"
updated "1.2: --update=uuid (random)" "!Array UUID : $U" --update=uuid
# shellcheck disable=SC2086
n=$(mdadm --examine $M | sed -n 's/^ *Array UUID : //p' | sort -u | wc -l)
[ "$n" -eq 1 ] && t_ok "1.2: one random UUID on every member" || t_fail "1.2: one random UUID" "$n UUIDs"
updated "1.2: --update=no-bbl" "!Bad Block Log" --update=no-bbl
updated "1.2: --update=bbl" "Bad Block Log : 512 entries available" --update=bbl
updated "1.2: --update=no-bitmap" "Feature Map : 0x0" --update=no-bitmap
# shellcheck disable=SC2086
no_member "Internal Bitmap" $M && t_ok "1.2: no Internal Bitmap line after no-bitmap" ||
    t_fail "1.2: no Internal Bitmap line after no-bitmap"

# ---- 3. refusals on it ----
set -- $M
refused "a member left out" "all 3 members are needed" $URAID update --update=name --name x "$1" "$2"
want_rc=2 refused "--update=name too long (usage: exit 2)" "1 to 31 characters" $URAID update --update=name \
    --name 0123456789012345678901234567890123 $M
truncate -s 16M "$t_tmp/blank.img"
head -c 1M /dev/urandom | dd of="$t_tmp/blank.img" conv=notrunc 2>/dev/null
R=$t_tmp/blank.img
refused "zero-superblock: a file with no superblock" "no md superblock" $URAID zero-superblock "$t_tmp/blank.img"
refused "zero-superblock: the last of several has none (none written)" "blank.img: no md superblock" \
    $URAID zero-superblock $M "$t_tmp/blank.img"
R=""
# a served array: its control socket (in /run/uraid) names its UUID
sock=$t_tmp/nbd.sock
if mkdir -p /run/uraid 2>/dev/null && [ -w /run/uraid ] && command -v nbdkit >/dev/null; then
    # shellcheck disable=SC2086
    $URAID serve $M --socket "$sock" --no-resync >"$t_tmp/serve.log" 2>&1 &
    spid=$!
    n=0; while ! nbdinfo --size "nbd+unix:///?socket=$sock" >/dev/null 2>&1 && [ $n -lt 80 ]; do sleep 0.25; n=$((n + 1)); done
    sleep 1
    refused "update of a served array" "is being served" $URAID update --update=name --name busy $M
    refused "zero-superblock of a served member" "is being served" $URAID zero-superblock "$1"
    kill "$spid"; wait "$spid"
else
    t_fail "serving refusal: needs root (/run/uraid) and nbdkit: not tested"
fi
set_bad_block "$1"
mdadm --examine "$1" | grep -q "bad blocks present" || t_fail "a bad block listed" "$(mdadm --examine "$1" | tail -5)"
refused "--update=no-bbl while the log lists a bad block" "lists bad blocks" $URAID update --update=no-bbl $M
# damage: the checksum of m1 wrong
printf 'X' | dd of="$2" bs=1 seek=$((4096 + 100)) conv=notrunc 2>/dev/null
refused "zero-superblock: a damaged superblock without --force" "force" $URAID zero-superblock "$2"
out=$($URAID zero-superblock --force "$2" 2>&1) && ! mdadm --examine "$2" >/dev/null 2>&1 &&
    mdadm --examine "$2" 2>&1 | grep -q "No md superblock detected" && t_ok "zero-superblock --force: a damaged one zeroed" ||
    t_fail "zero-superblock --force" "$out"

# ---- 1 (end). resync, then zero-superblock ----
d=$t_tmp/v12b
new_array "$d" 5 3 --chunk 64K --bitmap internal
updated "1.2: --update=resync (State active)" "State : active" --update=resync
out=$($URAID zero-superblock $M 2>&1) && no_member "Magic" $M && every_member "No md superblock detected" $M &&
    t_ok "1.2: zero-superblock, then mdadm --examine finds none" || t_fail "1.2: zero-superblock" "$out"

# ---- 2. metadata 1.0 RAID-1 ----
d=$t_tmp/v10
new_array "$d" 1 2 --metadata 1.0 --name boot
updated "1.0: --update=name" "Name : $host:efi" --update=name --name efi
updated "1.0: --update=no-bbl" "!Bad Block Log" --update=no-bbl
updated "1.0: --update=bbl" "Bad Block Log : 512 entries available at offset -8" --update=bbl
updated "1.0: --update=resync" "State : active" --update=resync
out=$($URAID zero-superblock $M 2>&1) && every_member "No md superblock detected" $M &&
    t_ok "1.0: zero-superblock, then mdadm --examine finds none" || t_fail "1.0: zero-superblock" "$out"

# ---- 2. metadata 1.1 RAID-1; a RAID-5 with a PPL (its header's signature follows the UUID) ----
d=$t_tmp/v11
new_array "$d" 1 2 --metadata 1.1
updated "1.1: --update=name" "Name : $host:one" --update=name --name one
out=$($URAID zero-superblock $M 2>&1) && every_member "No md superblock detected" $M &&
    t_ok "1.1: zero-superblock, then mdadm --examine finds none" || t_fail "1.1: zero-superblock" "$out"
d=$t_tmp/ppl
rm -rf "$d"; mkdir -p "$d"
M="$d/p0.img $d/p1.img $d/p2.img"
# shellcheck disable=SC2086
truncate -s 32M $M
# shellcheck disable=SC2086
$URAID create --level 5 --raid-devices 3 --assume-clean --consistency-policy ppl $M >/dev/null 2>&1 ||
    t_fail "create a PPL RAID-5"
# shellcheck disable=SC2086
head -c 4M /dev/urandom | $URAID write $M
# shellcheck disable=SC2086
DATA=$($URAID cat $M | sha256sum | cut -d' ' -f1)
updated "PPL RAID-5: --update=uuid" "Array UUID : $U" --update=uuid --uuid $U
head -c 1M /dev/urandom >"$t_tmp/more"
# shellcheck disable=SC2086
out=$($URAID write --offset 8M $M <"$t_tmp/more" 2>&1) &&
    # shellcheck disable=SC2086
    $URAID cat $M | tail -c +$((8 * 1048576 + 1)) | head -c 1048576 | cmp -s - "$t_tmp/more" &&
    t_ok "PPL RAID-5: written through its log after the new UUID" || t_fail "PPL RAID-5: a write after the new UUID" "$out"

# ---- 2. metadata 0.90 RAID-5 with a bitmap ----
no_agree=1
d=$t_tmp/v090
new_array "$d" 5 3 --metadata 0.90 --chunk 64K --bitmap internal
refused "0.90: --update=name (0.90 keeps no name)" "keeps no array name" $URAID update --update=name --name x $M
refused "0.90: --update=bbl (0.90 has no log)" "no bad-block log" $URAID update --update=bbl $M
updated "0.90: --update=uuid" "UUID : $U" --update=uuid --uuid $U
updated "0.90: --update=no-bitmap" "!Internal Bitmap" --update=no-bitmap
updated "0.90: --update=resync" "State : active" --update=resync
out=$($URAID zero-superblock $M 2>&1) && every_member "No md superblock detected" $M &&
    t_ok "0.90: zero-superblock, then mdadm --examine finds none" || t_fail "0.90: zero-superblock" "$out"
t_finish
