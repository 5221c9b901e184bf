#!/bin/sh
# md's superblock formats 0.90, 1.0 and 1.1 (besides 1.2) through the uraid
# command, judged by mdadm 4.2 on the host and the real md in the oracle:
#  1. per format: `uraid create --metadata F` says which it wrote; mdadm
#     --examine reads each member as that version and agrees with uraid
#     (t_mdadm_agrees) and `uraid examine` prints what mdadm prints; then
#     write, cat, check, repair, resync after a kill -9, rebuild onto a
#     spare, add, replace, serve (NBD), mount (FUSE) and the write-intent bitmap on every
#     format (0.90's included), the bad-block log on 1.x only;
#  2. refusals, one line each and every member byte unchanged: 0.90 with
#     more than 27 members or members over 2 TiB, a PPL on 1.0, a member
#     holding an old 0.90 superblock inside a 1.2 array's data (both named;
#     opened only as the --metadata the user gives), damaged 0.90 fields, a
#     0.90 superblock in big-endian byte order;
#  3. the md-written fixtures of tests/fixtures/md-formats read identically
#     (healthy and with a member left out) and examined as mdadm does;
#  4. the oracle, for 0.90, 1.0 and 1.1 x RAID-1/5/6/10 (RAID-10 x4 n2, f2, o2
#     for 0.90, 1.0, 1.1): md creates and writes,
#     uraid reads it identically, healthy and degraded; uraid creates and
#     writes (a RAID-5 with a bitmap too), md assembles it, its check finds
#     mismatch_cnt 0, and it reads the same bytes. Without the oracle, part 4
#     fails (it is not skipped).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

T="timeout 120"
t_need mdadm timeout sha256sum python3 xz

# t_refused's digest of the members: every file in $watch
watch=""
# shellcheck disable=SC2086
sums() { digest $watch; }
# digest FILE...: their bytes' sha256; for files over 1 GiB (sparse 2 TiB
# members) the first and last 2 MiB, where every md superblock, bitmap and
# log would go
digest() {
    for f in "$@"; do
        sz=$(stat -c %s "$f")
        if [ "$sz" -gt 1073741824 ]; then
            { head -c 2M "$f"; tail -c 2M "$f"; } | sha256sum
        else
            sha256sum <"$f"
        fi
    done | sha256sum
}

# examine_same NAME MEMBER [--metadata F]: uraid examine prints what mdadm
# --examine prints (less the device names mdadm looks up by major:minor,
# and uraid's own bitmap block after it).
examine_same() {
    name=$1 m=$2; shift 2
    mdadm --examine "$m" 2>&1 | sed 's|   /dev/[^ ]*$||' >"$t_tmp/ex.md"
    $URAID examine "$@" "$m" 2>&1 | sed '/Write-intent bitmap (as mdadm/,$d' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' \
        >"$t_tmp/ex.ur"
    if diff "$t_tmp/ex.md" "$t_tmp/ex.ur" >"$t_tmp/ex.diff"; then
        t_ok "$name"
    else
        t_fail "$name" "$(head -c 700 "$t_tmp/ex.diff")"
    fi
}

# agrees F NAME MEMBER...: t_mdadm_agrees for 1.x; for 0.90, whose mdadm
# --examine has no Device Role or Array State, the same judgement from its
# fields: checksum correct, UUID, Events and State the array's, and the
# "this" row's RaidDevice the slot uraid detail gives (spare: "spare").
agrees() {
    ag_f=$1 ag_name=$2; shift 2
    [ "$ag_f" = 0.90 ] || { t_mdadm_agrees "$ag_name" "$@"; return; }
    $URAID detail "$@" >"$t_tmp/ag.d" 2>&1 || { t_fail "$ag_name: mdadm agrees" "$(tail -1 "$t_tmp/ag.d")"; return; }
    ag_ev=$(awk '$1 == "Events" && $2 == ":" { print $3; exit }' "$t_tmp/ag.d")
    ag_st=$(awk '$1 == "State" && $2 == ":" { sub(",", "", $3); print $3; exit }' "$t_tmp/ag.d")
    ag_uu=$(awk '$1 == "UUID" && $2 == ":" { print $3; exit }' "$t_tmp/ag.d")
    ag_bad=""
    for ag_m in "$@"; do
        ag_row=$(awk -v p="$ag_m" 'seen && $NF == p { print $2, $3; exit } $1 == "Number" { seen = 1 }' "$t_tmp/ag.d")
        mdadm --examine "$ag_m" >"$t_tmp/ag.x" 2>&1 || { ag_bad="$ag_bad [$ag_m: mdadm failed]"; continue; }
        grep -q 'Checksum : .* - correct$' "$t_tmp/ag.x" || ag_bad="$ag_bad [$ag_m: checksum]"
        [ "$(sed -n 's/^ *UUID : //p' "$t_tmp/ag.x")" = "$ag_uu" ] || ag_bad="$ag_bad [$ag_m: uuid]"
        [ "$(sed -n 's/^ *Events : //p' "$t_tmp/ag.x")" = "$ag_ev" ] || ag_bad="$ag_bad [$ag_m: events]"
        [ "$(sed -n 's/^ *State : \([a-z]*\).*/\1/p' "$t_tmp/ag.x")" = "$ag_st" ] || ag_bad="$ag_bad [$ag_m: state]"
        ag_this=$(awk '$1 == "this" { print $5, $6, $7; exit }' "$t_tmp/ag.x")
        case $ag_row in
            "${ag_row%% *} active") [ "$ag_this" = "${ag_row%% *} active sync" ] ||
                ag_bad="$ag_bad [$ag_m: this row '$ag_this', uraid '$ag_row']" ;;
            *spare*) case $ag_this in *spare*) ;; *) ag_bad="$ag_bad [$ag_m: not a spare: '$ag_this']" ;; esac ;;
        esac
    done
    [ -z "$ag_bad" ] && t_ok "$ag_name: mdadm --examine agrees with uraid" ||
        t_fail "$ag_name: mdadm --examine agrees with uraid" "$ag_bad"
}

# reads NAME FILE: FILE (what a verb read back) is the whole of $d/want,
# which is never empty (a failed read gives an empty FILE: no pass).
reads() {
    if [ -s "$d/want" ] && [ -s "$2" ] && cmp -s "$2" "$d/want"; then t_ok "$1"; else
        t_fail "$1" "$(wc -c <"$2") bytes read, $(wc -c <"$d/want") written$(cmp "$2" "$d/want" 2>&1 | head -c 200)"
    fi
}

array_bytes() { echo $(($($URAID detail "$@" | awk '/Array Size/ {print $4; exit}') * 1024)); }

# ---- 1. every verb on each format ------------------------------------------------------------
for F in 1.0 1.1 0.90; do
    d=$t_tmp/v$F; mkdir -p "$d"
    for i in 0 1 2 3 4 5 6; do truncate -s 24M "$d/m$i.img"; done
    M="$d/m0.img $d/m1.img $d/m2.img $d/m3.img"
    want_version=$F; [ "$F" = 0.90 ] && want_version=0.90.00
    # mdadm's spellings: 0.9 for 0.90, 1.00 for 1.0, 1.01 for 1.1
    spell=$F; [ "$F" = 0.90 ] && spell=0.9; [ "$F" = 1.0 ] && spell=1.00; [ "$F" = 1.1 ] && spell=1.01
    # shellcheck disable=SC2086
    t_exits "$F: create --metadata $spell says metadata $F" 0 "metadata $F, 1 spare" \
        $URAID create --metadata $spell --level 5 --raid-devices 4 --spare-devices 1 --chunk 64K $M "$d/m4.img"
    t_exits "$F: mdadm --examine reads version $want_version" 0 "Version : $want_version\$" mdadm --examine "$d/m1.img"
    # shellcheck disable=SC2086
    agrees $F "$F: created" $M "$d/m4.img"
    examine_same "$F: uraid examine prints what mdadm --examine prints (active member)" "$d/m2.img"
    examine_same "$F: uraid examine prints what mdadm --examine prints (spare)" "$d/m4.img"
    if [ "$F" = 0.90 ]; then
        t_exits "$F: no bad-block log (0.90 has none)" 0 "" \
            sh -c "mdadm --examine '$d/m0.img' >'$t_tmp/bb' && grep -q 'Version : 0.90.00' '$t_tmp/bb' && ! grep -q 'Bad Block' '$t_tmp/bb'"
    else
        t_exits "$F: a bad-block log, as mdadm writes one" 0 "512 entries available" mdadm --examine "$d/m0.img"
    fi
    head -c 100M /dev/urandom >"$d/data"
    # shellcheck disable=SC2086
    size=$(array_bytes $M "$d/m4.img")
    head -c "$size" "$d/data" >"$d/want"
    # shellcheck disable=SC2086
    t_exits "$F: write" 0 "" $URAID write $M "$d/m4.img" <"$d/want"
    # shellcheck disable=SC2086
    $URAID cat $M "$d/m4.img" >"$d/got" 2>/dev/null
    reads "$F: cat reads what was written" "$d/got"
    # shellcheck disable=SC2086
    t_exits "$F: check finds nothing" 0 "mismatch_cnt 0" $URAID check $M "$d/m4.img"
    # shellcheck disable=SC2086
    t_exits "$F: repair finds nothing" 0 "mismatch_cnt 0" $URAID repair $M "$d/m4.img"
    # a writer killed mid-way leaves the array dirty; resync makes it consistent
    # shellcheck disable=SC2086
    $URAID write $M "$d/m4.img" --member-layer throttle=8M <"$d/want" >/dev/null 2>&1 &
    pid=$!
    # killed once the array is marked dirty on disk (the first write does it)
    n=0
    while ! mdadm --examine "$d/m0.img" 2>/dev/null | grep -q "State : active" && [ $n -lt 200 ] &&
        kill -0 $pid 2>/dev/null; do
        sleep 0.1; n=$((n + 1))
    done
    sleep 0.3
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    if mdadm --examine "$d/m0.img" | grep -q "State : active"; then
        t_ok "$F: a writer killed mid-way leaves it dirty (mdadm: active)"
    else t_fail "$F: a writer killed mid-way leaves it dirty (mdadm: active)"; fi
    # shellcheck disable=SC2086
    t_exits "$F: resync" 0 "" $URAID resync $M "$d/m4.img"
    # shellcheck disable=SC2086
    t_exits "$F: check after the resync" 0 "mismatch_cnt 0" $URAID check $M "$d/m4.img"
    t_exits "$F: clean again (mdadm)" 0 "State : clean" mdadm --examine "$d/m3.img"
    # rebuild: member 2 is lost, the spare takes its slot
    mv "$d/m2.img" "$d/lost.img"
    L="$d/m0.img $d/m1.img $d/m3.img $d/m4.img"
    # shellcheck disable=SC2086
    t_exits "$F: rebuild onto the spare" 0 "rebuilt" $URAID rebuild $L
    # shellcheck disable=SC2086
    $URAID cat $L >"$d/got" 2>/dev/null
    reads "$F: identical after the rebuild" "$d/got"
    # shellcheck disable=SC2086
    agrees $F "$F: rebuilt" $L
    examine_same "$F: examine after the rebuild" "$d/m4.img"
    # add a spare offline, then replace member 0 with it
    # shellcheck disable=SC2086
    t_exits "$F: add a spare" 0 "" $URAID add $L --spare "$d/m5.img"
    t_exits "$F: mdadm sees the new spare" 0 "spare" mdadm --examine "$d/m5.img"
    # shellcheck disable=SC2086
    t_exits "$F: replace member 0 with the spare" 0 "" $URAID replace $L "$d/m5.img" --old "$d/m0.img" --with "$d/m5.img"
    R="$d/m1.img $d/m3.img $d/m4.img $d/m5.img"
    # shellcheck disable=SC2086
    $URAID cat $R >"$d/got" 2>/dev/null
    reads "$F: identical after the replace" "$d/got"
    # shellcheck disable=SC2086
    agrees $F "$F: replaced" $R
    # serve over NBD and read it back
    if command -v nbdkit >/dev/null 2>&1 && command -v nbdcopy >/dev/null 2>&1; then
        sock=$t_tmp/nbd$F.sock
        # shellcheck disable=SC2086
        $URAID serve $R --socket "$sock" >"$t_tmp/serve.log" 2>&1 &
        spid=$!
        n=0
        while ! timeout 5 nbdinfo --size "nbd+unix:///?socket=$sock" >/dev/null 2>&1 && [ $n -lt 60 ]; do
            sleep 0.25; n=$((n + 1))
        done
        rm -f "$d/got"
        timeout 60 nbdcopy "nbd+unix:///?socket=$sock" "$d/got" 2>/dev/null
        kill -TERM $spid 2>/dev/null; wait $spid
        reads "$F: serve: NBD reads what was written" "$d/got"
        # shellcheck disable=SC2086
        agrees $F "$F: after serving" $R
    else
        t_fail "$F: serve" "nbdkit/nbdcopy not installed (scripts/deps.sh)"
    fi
    # mount: DIR/array over FUSE reads the same bytes
    if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1 && ! $URAID mount a b 2>&1 | grep -q "without FUSE"; then
        mnt=$t_tmp/mnt$F; mkdir -p "$mnt"
        # shellcheck disable=SC2086
        $URAID mount --foreground $R "$mnt" >"$t_tmp/mount.log" 2>&1 &
        mpid=$!
        n=0
        while [ ! -f "$mnt/array" ] && [ $n -lt 100 ] && kill -0 $mpid 2>/dev/null; do sleep 0.1; n=$((n + 1)); done
        rm -f "$d/got"
        timeout 60 cat "$mnt/array" >"$d/got" 2>/dev/null
        timeout 10 fusermount3 -u "$mnt"; wait $mpid
        reads "$F: mount: DIR/array reads what was written" "$d/got"
    else
        t_fail "$F: mount" "needs /dev/fuse, fusermount3 and a FUSE build"
    fi
    # the write-intent bitmap where md keeps it for this format
    B="$d/m0.img $d/lost.img $d/m6.img"
    # shellcheck disable=SC2086
    t_exits "$F: create RAID-1 with an internal bitmap" 0 "metadata $F" \
        $URAID create --force --metadata $F --level 1 --raid-devices 3 --bitmap internal $B
    if [ "$F" = 0.90 ]; then bm_line="Internal Bitmap : present"; else bm_line="Internal Bitmap : "; fi
    t_exits "$F: mdadm sees the bitmap" 0 "$bm_line" mdadm --examine "$d/lost.img"
    # (mdadm -X on a member file looks for a 1.2 bitmap only, even on md's own 1.0/1.1 members)
    t_exits "$F: uraid examine reads the bitmap" 0 "Bitmap : .* bits" $URAID examine "$d/m6.img"
    # shellcheck disable=SC2086
    t_exits "$F: write through the bitmap" 0 "" sh -c "head -c 4M '$d/data' | $URAID write $B"
    # shellcheck disable=SC2086
    t_exits "$F: the bitmap array opens (uuid and events agree)" 0 "UUUU\|UUU" $URAID detail $B
    examine_same "$F: examine of a bitmap member" "$d/m6.img"
done

# ---- 2. refusals ------------------------------------------------------------------------------
d=$t_tmp/refuse; mkdir -p "$d"
all=""
i=0; while [ $i -lt 28 ]; do truncate -s 4M "$d/r$i.img"; all="$all $d/r$i.img"; i=$((i + 1)); done
watch=$all
# shellcheck disable=SC2086
t_refused "0.90: 28 members refused" "at most 27 members" $URAID create --metadata 0.90 --level 5 --raid-devices 28 $all
# shellcheck disable=SC2086
t_refused "0.90: 26 members + 2 spares refused" "at most 27 members" \
    $URAID create --metadata 0.90 --level 6 --raid-devices 26 --spare-devices 2 $all
for i in 0 1 2; do truncate -s 2049G "$d/big$i.img"; done
watch="$d/big0.img $d/big1.img $d/big2.img"
t_refused "0.90: members over 2 TiB refused for RAID-5" "at most 2 TiB" \
    $URAID create --metadata 0.90 --level 5 --raid-devices 3 $watch
t_refused "0.90: members over 2 TiB refused for RAID-1" "at most 2 TiB" \
    $URAID create --metadata 0.90 --level 1 --raid-devices 3 $watch
rm -f "$d"/big*.img
watch="$d/r0.img $d/r1.img $d/r2.img"
t_refused "ppl on metadata 1.0 refused" "needs --metadata 1.2" \
    $URAID create --metadata 1.0 --level 5 --raid-devices 3 --consistency-policy ppl $watch
t_refused "unknown metadata refused" "unknown metadata '1.3'" $URAID create --metadata 1.3 --level 5 --raid-devices 3 $watch
t_refused "--metadata on a verb that opens: unknown refused" "needs one of 0.90" $URAID detail --metadata ddf $watch

# an old 0.90 superblock left at the end of disks reused for a 1.2 array
a=$t_tmp/amb; mkdir -p "$a"
for i in 0 1 2 3; do truncate -s 24M "$a/m$i.img"; done
A="$a/m0.img $a/m1.img $a/m2.img $a/m3.img"
# shellcheck disable=SC2086
$URAID create --metadata 0.90 --level 5 --raid-devices 4 --chunk 64K $A >/dev/null 2>&1
old_uuid=$(mdadm --examine "$a/m0.img" | sed -n 's/^ *UUID : //p')
# shellcheck disable=SC2086
t_exits "a 0.90 array's members reused for 1.2 (--force)" 0 "metadata 1.2" \
    $URAID create --force --assume-clean --metadata 1.2 --level 5 --raid-devices 4 --chunk 64K $A
watch=$A
# shellcheck disable=SC2086
t_refused "both superblocks named, nothing opened" "holds two md superblocks: metadata 1.2 at sector 8 .* and metadata 0.90 at sector 49024 .*--metadata 1.2 or --metadata 0.90" \
    $URAID cat $A
t_refused "examine names both too" "holds two md superblocks" $URAID examine "$a/m1.img"
# shellcheck disable=SC2086
t_refused "create over them names both" "holds two md superblocks" $URAID create --level 1 --raid-devices 4 $A
# shellcheck disable=SC2086
t_exits "opened as the 1.2 the user names" 0 "Version : 1.2" $URAID detail --metadata 1.2 $A
# shellcheck disable=SC2086
t_exits "... or as the old 0.90" 0 "Version : 0.90" $URAID detail --metadata 0.90 $A
t_exits "examine --metadata 0.90 shows the old array" 0 "UUID : $old_uuid" $URAID examine --metadata 0.90 "$a/m2.img"

# mixed formats: a 1.0 member among 1.1 members of the same array (same UUID)
x=$t_tmp/mix; mkdir -p "$x"
for i in 0 1 2 3 4 5; do truncate -s 8M "$x/m$i.img"; done
# shellcheck disable=SC2086
$URAID create --metadata 1.1 --level 5 --raid-devices 3 --chunk 64K "$x/m0.img" "$x/m1.img" "$x/m2.img" >/dev/null 2>&1
# shellcheck disable=SC2086
$URAID create --metadata 1.0 --level 5 --raid-devices 3 --chunk 64K "$x/m3.img" "$x/m4.img" "$x/m5.img" >/dev/null 2>&1
python3 - "$x/m0.img" "$x/m5.img" <<'PY'
# give member 5 (1.0) the 1.1 array's UUID, checksum fixed: one array, two formats
import struct, sys
src, dst = sys.argv[1], sys.argv[2]
uuid = open(src, 'rb').read(32)[16:32]
f = open(dst, 'r+b'); f.seek(0, 2); n = f.tell() // 512
at = ((n - 16) & ~7) * 512
f.seek(at); sb = bytearray(f.read(4096))
sb[16:32] = uuid
max_dev = struct.unpack_from('<I', sb, 220)[0]
struct.pack_into('<I', sb, 216, 0)
s = sum(struct.unpack_from('<%dI' % ((256 + 2 * max_dev) // 4), sb, 0))
c = (s & 0xffffffff) + (s >> 32)
struct.pack_into('<I', sb, 216, c & 0xffffffff)
f.seek(at); f.write(sb)
PY
watch="$x/m0.img $x/m1.img $x/m5.img"
t_refused "mixed formats in one array refused" "has metadata 1.0 but .* has 1.1" $URAID cat $watch

# damaged 0.90 fields (checksum fixed, so the field itself is judged)
z=$t_tmp/dmg; mkdir -p "$z"
for i in 0 1 2; do truncate -s 8M "$z/m$i.img"; done
Z="$z/m0.img $z/m1.img $z/m2.img"
# shellcheck disable=SC2086
$URAID create --metadata 0.90 --level 5 --raid-devices 3 --chunk 64K $Z >/dev/null 2>&1
cp "$z/m1.img" "$z/good1.img"
patch0() { # MEMBER WORD_OFFSET VALUE [swap]: sets a 0.90 word, reseals the checksum
    python3 - "$@" <<'PY'
import struct, sys
path, off, val = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 0)
f = open(path, 'r+b'); f.seek(0, 2); n = f.tell() // 512
at = ((n & ~127) - 128) * 512
f.seek(at); sb = bytearray(f.read(4096))
if off >= 0:
    struct.pack_into('<I', sb, off, val)
struct.pack_into('<I', sb, 152, 0)
s = sum(struct.unpack_from('<1024I', sb, 0)); struct.pack_into('<I', sb, 152, ((s & 0xffffffff) + (s >> 32)) & 0xffffffff)
if len(sys.argv) > 4:
    sb = bytearray(b''.join(sb[i:i + 4][::-1] for i in range(0, 4096, 4)))
f.seek(at); f.write(sb)
PY
}
watch=$Z
patch0 "$z/m1.img" 40 0
t_refused "0.90 raid_disks 0 refused" "raid_disks 0 outside 1..27" $URAID cat $Z
cp "$z/good1.img" "$z/m1.img"; patch0 "$z/m1.img" 3968 30
t_refused "0.90 this_disk.number 30 refused" "this_disk.number 30" $URAID cat $Z
cp "$z/good1.img" "$z/m1.img"; patch0 "$z/m1.img" 32 999999
t_refused "0.90 size past the data refused" "larger than the member's data area" $URAID cat $Z
cp "$z/good1.img" "$z/m1.img"; patch0 "$z/m1.img" 200 1
t_refused "0.90 reserved word set refused" "reserved words" $URAID cat $Z
cp "$z/good1.img" "$z/m1.img"; patch0 "$z/m1.img" -1 0 swap
t_refused "0.90 in big-endian byte order refused" "big-endian" $URAID cat $Z
cp "$z/good1.img" "$z/m1.img"; patch0 "$z/m1.img" 40 3
python3 -c "
import sys; f = open(sys.argv[1], 'r+b'); f.seek(0, 2); n = f.tell() // 512
f.seek(((n & ~127) - 128) * 512 + 24); f.write(b'\x01')" "$z/m1.img"
t_refused "0.90 bad checksum refused" "bad 0.90 checksum" $URAID cat $Z

# ---- 3. the md-written fixtures -------------------------------------------------------------------
FX=tests/fixtures/md-formats
while read -r name meta level n chunk uuid seed size sha; do
    case $name in k-* | l-* | m-*) ;; *) continue ;; esac
    f=$t_tmp/fx/$name; mkdir -p "$f"
    P=""
    i=0; while [ $i -lt "${n#members=}" ]; do
        xz -dc "$FX/$name/slot$i.img.xz" >"$f/slot$i.img"; P="$P $f/slot$i.img"; i=$((i + 1))
    done
    # shellcheck disable=SC2086
    got=$($URAID cat $P 2>/dev/null | sha256sum | cut -c1-64)
    [ "$got" = "${sha#sha256=}" ] && t_ok "fixture $name: read as md wrote it" ||
        t_fail "fixture $name: read as md wrote it" "sha $got, MANIFEST ${sha#sha256=}"
    # shellcheck disable=SC2086,SC2046
    got=$($URAID cat $(echo $P | cut -d' ' -f2-) 2>/dev/null | sha256sum | cut -c1-64)
    [ "$got" = "${sha#sha256=}" ] && t_ok "fixture $name: read with slot 0 missing" ||
        t_fail "fixture $name: read with slot 0 missing"
    examine_same "fixture $name: examine prints what mdadm prints" "$f/slot1.img"
    : "$meta $level $chunk $uuid $seed $size"
done <"$FX/MANIFEST"

# ---- 4. the oracle: md and uraid, both ways ------------------------------------------------------
oracle_ready || { t_finish; exit 1; }
# make check: md writes RAID-1 and RAID-6 for uraid, uraid writes RAID-1 and the RAID-5
# with a bitmap for md; the long mode adds md's RAID-5 and uraid's RAID-5 and RAID-6
if t_long; then MD_LEVELS="1 5 6 10" UR_LEVELS="1 5 6 7 10"; else
    MD_LEVELS="1 6 10" UR_LEVELS="1 7 10"
    t_short_note "oracle part: md's RAID-5, uraid's RAID-5 and RAID-6 per format"
fi
for F in 0.90 1.0 1.1; do
    # RAID-10 x4, a different md layout per format
    case $F in 0.90) L10=n2 ;; 1.0) L10=f2 ;; *) L10=o2 ;; esac
    o=$t_tmp/or$F; mkdir -p "$o"
    # md creates and writes RAID-1 (vda,vdb), RAID-5 (vdc-vdf), RAID-6 (vdg-vdk)
    disks=""
    for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do truncate -s 20M "$o/d$i.img"; disks="$disks --disk $o/d$i.img"; done
    # shellcheck disable=SC2086
    "$ORACLE" --timeout 900 $disks -- - "$F" "$MD_LEVELS" "$L10" >"$o/md.out" 2>&1 <<'GUEST'
F=$1 LEVELS=$2 L10=$3
for a in $LEVELS; do
    case $a in
    1) mdadm --create /dev/md1 --run --metadata=$F --level=1 --raid-devices=2 /dev/vda /dev/vdb || exit 1 ;;
    5) mdadm --create /dev/md5 --run --metadata=$F --level=5 --chunk=64 --raid-devices=4 /dev/vd[c-f] || exit 1 ;;
    6) mdadm --create /dev/md6 --run --metadata=$F --level=6 --chunk=64 --raid-devices=5 /dev/vd[g-k] || exit 1 ;;
    10) mdadm --create /dev/md10 --run --metadata=$F --level=10 --layout=$L10 --chunk=64 --raid-devices=4 /dev/vd[l-o] || exit 1 ;;
    esac
done
for a in $LEVELS; do
    mdadm --wait /dev/md$a
    mdpattern -s 1$a -n $(blockdev --getsize64 /dev/md$a) > /dev/md$a
    sync; blockdev --flushbufs /dev/md$a
    echo "SIZE$a=$(blockdev --getsize64 /dev/md$a)"
done
GUEST
    for spec in "1:0 1" "5:2 3 4 5" "6:6 7 8 9 10" "10:11 12 13 14"; do
        lv=${spec%%:*}; idx=${spec#*:}
        case " $MD_LEVELS " in *" $lv "*) ;; *) continue ;; esac
        P=""; for i in $idx; do P="$P $o/d$i.img"; done
        size=$(sed -n "s/^SIZE$lv=//p" "$o/md.out")
        if [ -z "$size" ]; then
            t_fail "$F RAID-$lv: md created it" "$(tail -5 "$o/md.out")"; continue
        fi
        want=$("$PATTERN" -s "1$lv" -n "$size" | sha256sum | cut -c1-64)
        # shellcheck disable=SC2086
        got=$($URAID cat $P 2>"$o/err" | sha256sum | cut -c1-64)
        [ "$got" = "$want" ] && t_ok "$F RAID-$lv: md wrote it, uraid reads it identically" ||
            t_fail "$F RAID-$lv: md wrote it, uraid reads it identically" "$(tail -2 "$o/err")"
        # shellcheck disable=SC2086,SC2046
        got=$($URAID cat $(echo $P | cut -d' ' -f2-) 2>"$o/err" | sha256sum | cut -c1-64)
        [ "$got" = "$want" ] && t_ok "$F RAID-$lv: ... and with a member missing" ||
            t_fail "$F RAID-$lv: ... and with a member missing" "$(tail -2 "$o/err")"
        examine_same "$F RAID-$lv: uraid examine of md's member prints what mdadm prints" "$(echo $P | cut -d' ' -f2)"
    done

    # uraid creates and writes; md assembles, checks and reads
    u=$t_tmp/ur$F; mkdir -p "$u"
    disks=""
    for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17; do truncate -s 20M "$u/d$i.img"; disks="$disks --disk $u/d$i.img"; done
    ok=1
    # md7: a RAID-5 with the internal write-intent bitmap where this format keeps it
    for spec in "1:0 1" "5:2 3 4 5" "6:6 7 8 9 10" "7:11 12 13" "10:14 15 16 17"; do
        lv=${spec%%:*}; idx=${spec#*:}
        case " $UR_LEVELS " in *" $lv "*) ;; *) continue ;; esac
        P=""; n=0; for i in $idx; do P="$P $u/d$i.img"; n=$((n + 1)); done
        bm=""; level=$lv; [ "$lv" = 7 ] && bm="--bitmap internal" level=5
        [ "$lv" = 10 ] && bm="--layout $L10"
        # shellcheck disable=SC2086
        $URAID create --metadata $F --level $level --raid-devices $n --chunk 64K $bm $P >"$u/c.out" 2>&1 || ok=0
        # shellcheck disable=SC2086
        size=$(array_bytes $P)
        # shellcheck disable=SC2086
        "$PATTERN" -s "2$lv" -n "$size" | $URAID write $P 2>>"$u/c.out" || ok=0
        echo "$size" >"$u/size$lv"
    done
    [ $ok = 1 ] && t_ok "$F: uraid created and wrote its arrays ($UR_LEVELS; 7 = RAID-5 with a bitmap)" || t_fail "$F: uraid created and wrote its arrays ($UR_LEVELS)" "$(tail -3 "$u/c.out")"
    # shellcheck disable=SC2086
    "$ORACLE" --snapshot --timeout 900 $disks -- - "$UR_LEVELS" >"$u/md.out" 2>&1 <<'GUEST'
S() { cat /sys/block/md$1/md/$2; }
LEVELS=$1 ok=""
for a in $LEVELS; do
    case $a in
    1) mdadm --assemble /dev/md1 --run /dev/vda /dev/vdb ;;
    5) mdadm --assemble /dev/md5 --run /dev/vd[c-f] ;;
    6) mdadm --assemble /dev/md6 --run /dev/vd[g-k] ;;
    7) mdadm --assemble /dev/md7 --run /dev/vd[l-n] && echo "BITMAP7=$(cat /sys/block/md7/md/bitmap/location)" ;;
    10) mdadm --assemble /dev/md10 --run /dev/vd[o-r] ;;
    esac && ok="$ok $a" || echo "ASSEMBLE$a=fail"
done
for a in $ok; do
    echo "DEGRADED$a=$(S $a degraded)"
    echo check > /sys/block/md$a/md/sync_action
    sleep 0.2
    while [ "$(S $a sync_action)" != idle ]; do sleep 0.3; done
    echo "MISMATCH$a=$(S $a mismatch_cnt)"
    echo "SIZE$a=$(blockdev --getsize64 /dev/md$a)"
    echo "SHA$a=$(sha256sum < /dev/md$a | cut -c1-64)"
done
GUEST
    bml=$(sed -n 's/^BITMAP7=//p' "$u/md.out")
    # UR_LEVELS has 7 in both modes
    case $F in 1.0) bmw=-16 ;; *) bmw=+8 ;; esac
    [ "$bml" = "$bmw" ] && t_ok "$F: md runs uraid's bitmap where the format keeps it ($bml)" ||
        t_fail "$F: md runs uraid's bitmap where the format keeps it" "md says '$bml', want $bmw; the guest's last lines: $(tail -n 6 "$u/md.out" | tr '\n' ' ')"
    for lv in $UR_LEVELS; do
        label=RAID-$lv; [ "$lv" = 7 ] && label="RAID-5 with a bitmap"; [ "$lv" = 10 ] && label="RAID-10 $L10"
        size=$(cat "$u/size$lv")
        [ "$size" -gt 0 ] 2>/dev/null || size=1 # never the empty stream's sha
        want=$("$PATTERN" -s "2$lv" -n "$size" | sha256sum | cut -c1-64)
        mm=$(sed -n "s/^MISMATCH$lv=//p" "$u/md.out"); deg=$(sed -n "s/^DEGRADED$lv=//p" "$u/md.out")
        msize=$(sed -n "s/^SIZE$lv=//p" "$u/md.out"); msha=$(sed -n "s/^SHA$lv=//p" "$u/md.out")
        if [ "$deg" = 0 ] && [ "$mm" = 0 ] && [ "$msize" = "$size" ] && [ "$msha" = "$want" ]; then
            t_ok "$F $label: uraid wrote it; md assembles it whole, check finds 0, reads it identically"
        else
            t_fail "$F $label: uraid wrote it; md assembles it whole, check finds 0, reads it identically" \
                "degraded=$deg mismatch=$mm size md $msize uraid $size sha $([ "$msha" = "$want" ] && echo same || echo differs): $(grep -i "mdadm:\|ASSEMBLE" "$u/md.out" | head -3) $([ -z "$msize" ] && tail -n 4 "$u/md.out")"
        fi
    done
done
t_finish
