#!/bin/sh
# A rebuild over sectors no other member can give, through the uraid command
# (md's rule, issue 10): `uraid rebuild` goes on, exits 0 with the slot in
# sync, and the sectors lost are in the new member's md bad-block log, as
# `mdadm --examine-badblocks` lists them; reading them fails, the rest of
# the array is intact, and writing them takes them off the log. RAID-1 (a
# source range unreadable), RAID-5 (a second block lost in a stripe) and
# RAID-6 (three blocks lost in a stripe).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

T="timeout 60"
t_need mdadm timeout sha256sum cmp dd

# data_offset SPARE: md's Data Offset of a member, in sectors
data_offset() { mdadm --examine "$1" 2>/dev/null | sed -n 's/^ *Data Offset : \([0-9]*\) sectors.*/\1/p'; }

# run_case LEVEL N LOST LOSTLEN AOFF FAULT...: members d0..d(N-1) and a
# spare; the last member is lost and rebuilt onto the spare while each FAULT
# (I:SECTOR+BYTES: member dI cannot read BYTES at member sector SECTOR past
# data_offset) holds; then LOSTLEN sectors at member sector LOST must be
# listed on the spare, the 4 KiB at array byte AOFF (in them) must fail to
# read, and writing it takes the range off the log.
run_case() {
    level=$1 n=$2 lost=$3 lostlen=$4 aoff=$5
    shift 5
    dir=$t_tmp/r$level
    mkdir -p "$dir"
    members=""
    i=0
    while [ $i -lt "$n" ]; do truncate -s 48M "$dir/d$i.img"; members="$members $dir/d$i.img"; i=$((i + 1)); done
    truncate -s 48M "$dir/spare.img"
    last=$dir/d$((n - 1)).img
    t_exits "RAID-$level: create with a spare" 0 "" $URAID create --level "$level" --raid-devices "$n" \
        --spare-devices 1 --chunk 64K $members "$dir/spare.img"
    head -c $((20 << 20)) /dev/urandom >"$dir/data"
    t_exits "RAID-$level: write data" 0 "" $URAID write $members "$dir/spare.img" <"$dir/data"
    dofs=$(data_offset "$dir/d0.img")
    layers=""
    for f in "$@"; do
        slot=${f%%:*} rest=${f#*:}
        sector=${rest%%+*} bytes=${rest#*+}
        layers="$layers --member-layer $dir/d$slot.img:read-eio=$(((dofs + sector) * 512))+$bytes"
    done
    rm -f "$last"
    left=$(echo $members | sed "s| $last||")
    t_exits "RAID-$level: the rebuild goes on over sectors no member can give" 0 "" \
        $URAID rebuild $left "$dir/spare.img" $layers
    t_exits "RAID-$level: whole again" 0 "\[$n/$n\]" $URAID detail $left "$dir/spare.img"
    listed="$((dofs + lost)) for $lostlen sectors"
    mdadm --examine-badblocks "$dir/spare.img" >"$t_tmp/bb" 2>&1
    if grep -q "^ *$listed\$" "$t_tmp/bb" && [ "$(grep -c "for .* sectors" "$t_tmp/bb")" -eq 1 ]; then
        t_ok "RAID-$level: mdadm --examine-badblocks lists exactly $listed on the new member"
    else
        t_fail "RAID-$level: mdadm --examine-badblocks lists exactly $listed on the new member" "$(cat "$t_tmp/bb")"
    fi
    t_exits "RAID-$level: mdadm: the new member is active" 0 "Device Role : Active device $((n - 1))" \
        mdadm --examine "$dir/spare.img"
    # while the sources still cannot read them, reading them fails, with an
    # I/O error for a range that holds them; what came out before the error
    # is the array's data (cat reads 4 MiB at a time, so often nothing)
    $T $URAID cat $left "$dir/spare.img" $layers >"$dir/image" 2>"$dir/lost.err"
    st=$?
    got=$(wc -c <"$dir/image")
    range=$(sed -n 's/^uraid cat: cannot read array bytes \([0-9]*\)-\([0-9]*\): Input\/output error$/\1 \2/p' "$dir/lost.err")
    # shellcheck disable=SC2086
    set -- $range
    if [ $st -ne 0 ] && [ -n "$2" ] && [ "$1" -le "$aoff" ] && [ "$aoff" -le "$2" ] && [ "$got" -le "$1" ] &&
        cmp -s -n "$got" "$dir/image" "$dir/data"; then
        t_ok "RAID-$level: reading the lost sectors fails (exit $st, I/O error for bytes $1-$2, after $got bytes of right data)"
    else
        t_fail "RAID-$level: read over the lost sectors" "exit $st, $got bytes: $(tail -c 300 "$dir/lost.err")"
    fi
    # the disks remapped them: written again, off the log, the whole array reads right
    dd if="$dir/data" of="$dir/piece" bs=4096 skip=$((aoff / 4096)) count=1 2>/dev/null
    t_exits "RAID-$level: write over the lost sectors" 0 "" $URAID write --offset "$aoff" $left "$dir/spare.img" \
        <"$dir/piece"
    mdadm --examine-badblocks "$dir/spare.img" >"$t_tmp/bb" 2>&1
    if grep -qx "Bad-blocks list is empty in $dir/spare.img" "$t_tmp/bb" && ! grep -q "for .* sectors" "$t_tmp/bb"; then
        t_ok "RAID-$level: the write took them off the log"
    else
        t_fail "RAID-$level: the write took them off the log" "$(cat "$t_tmp/bb")"
    fi
    $T $URAID cat $left "$dir/spare.img" 2>"$dir/err" | head -c $((20 << 20)) >"$dir/image"
    cmp -s "$dir/image" "$dir/data" && t_ok "RAID-$level: the array reads right again" \
        || t_fail "RAID-$level: the array reads right again" "$(head -c 300 "$dir/err")"
}

# RAID-1: 5 sectors at member sector 2051 unreadable on the only source:
# exactly those are listed (array byte = member byte past data_offset)
run_case 1 2 2051 5 $((2048 * 512)) 0:2051+2560
# Left-symmetric layouts, 64K chunks (128 sectors), the last member lost
# (P of stripe 0). RAID-5 n=4: stripe 0's data chunks are d0 d1 d2; d0
# cannot read rows 40-47 (array bytes 20480+4096), a second block lost in
# those rows: md lists the 4 KiB unit
run_case 5 4 40 8 20480 0:40+4096
# RAID-6 n=5: stripe 0 is Q on d0, data on d1 d2 d3, P on d4; d1 and d2
# cannot read rows 40-47: three blocks lost there
run_case 6 5 40 8 20480 1:40+4096 2:40+4096
t_finish
