#!/bin/sh
# uraid grow --size max (mdadm --grow --size max): the members of a RAID-5,
# a RAID-6 and a RAID-1 are replaced by bigger ones (the files grow, as a
# dd onto a bigger disk leaves them: 1.2 keeps its superblock at the start),
# then the array uses the room: the old bytes as before, the new region
# synced (the new room holds random garbage: uraid check finds mismatch_cnt
# 0 only after the sync), mdadm --examine shows the new Used Dev Size and a clean array and
# agrees with uraid. Refusals write nothing: members not bigger (nothing to
# do), a size larger than the smallest member holds, a smaller size, and
# one member left small uses only its room. A kill -9 during the new
# region's sync leaves md's record (resync from the old size), which
# `uraid resync` finishes, with and without a write-intent bitmap. RAID-6 and RAID-1 in the long mode (URAID_TEST_LONG=1).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
command -v mdadm >/dev/null 2>&1 || { t_fail "mdadm installed (run scripts/deps.sh)"; t_finish; exit 1; }

sums() { for f in $M; do sha256sum "$f"; done | sha256sum | cut -d' ' -f1; }

new_array() { # DIR LEVEL N [POLICY]
    d=$1 lvl=$2 n=$3 policy=${4:-resync}
    rm -rf "$d"; mkdir -p "$d"
    M="" i=0
    while [ $i -lt "$n" ]; do truncate -s 16M "$d/m$i.img"; M="$M $d/m$i.img"; i=$((i + 1)); done
    # shellcheck disable=SC2086
    $URAID create --level "$lvl" --raid-devices "$n" --chunk 64K --assume-clean --consistency-policy "$policy" $M \
        >/dev/null 2>&1 || { t_fail "create RAID-$lvl in $d"; return 1; }
    # shellcheck disable=SC2086
    SZ=$(( $($URAID detail $M | awk '/Array Size/ {print $4; exit}') * 1024 ))
    head -c "$SZ" /dev/urandom >"$d/data"
    # shellcheck disable=SC2086
    $URAID write $M <"$d/data" || t_fail "write the data in $d"
}

grown() { # NAME KIB_PER_MEMBER
    name=$1 per=$2
    # shellcheck disable=SC2086
    kib=$($URAID detail $M | awk '/Array Size/ {print $4; exit}')
    total=$((kib * 1024))
    # shellcheck disable=SC2086
    got=$($URAID cat $M | head -c "$SZ" | sha256sum | cut -d' ' -f1)
    want=$(sha256sum <"$d/data" | cut -d' ' -f1)
    [ "$total" -gt "$SZ" ] && [ "$got" = "$want" ] &&
        t_ok "$name: $total bytes (was $SZ): the old bytes as before" ||
        t_fail "$name: the array grew and reads as before" "size $total (was $SZ), sha $got want $want"
    # shellcheck disable=SC2086
    out=$($URAID check $M 2>&1)
    case "$out" in *"mismatch_cnt 0"*) t_ok "$name: uraid check finds mismatch_cnt 0 (the new region synced)" ;;
        *) t_fail "$name: uraid check finds mismatch_cnt 0" "$(echo "$out" | tail -n 1)" ;; esac
    x=$(mdadm --examine "$d/m0.img" 2>&1)
    used=$(echo "$x" | sed -n 's/^ *Used Dev Size : \([0-9]*\).*/\1/p')
    # mdadm leaves the line out when the whole room is used
    [ -n "$used" ] || used=$(echo "$x" | sed -n 's/^ *Avail Dev Size : \([0-9]*\).*/\1/p')
    state=$(echo "$x" | sed -n 's/^ *State : \([a-z]*\).*/\1/p')
    [ "$used" = "$((per * 2))" ] && [ "$state" = clean ] &&
        t_ok "$name: mdadm --examine: Used Dev Size $used sectors, State clean" ||
        t_fail "$name: mdadm --examine: Used Dev Size $((per * 2)), clean" "Used $used, State $state"
    # shellcheck disable=SC2086
    t_mdadm_agrees "$name" $M
}

cases="5 4"
[ -n "${URAID_TEST_LONG:-}" ] && cases="5 4,6 5,1 2"
IFS_SAVE=$IFS
IFS=,
for case in $cases; do
    IFS=$IFS_SAVE
    lvl=${case% *} n=${case#* }
    d=$t_tmp/r$lvl
    new_array "$d" "$lvl" "$n"
    # shellcheck disable=SC2086
    out=$($URAID grow $M --size max 2>&1)
    before=$(sums)
    case "$out" in *"nothing to do"*) t_ok "RAID-$lvl: members not bigger: nothing to do ($out)" ;;
        *) t_fail "RAID-$lvl: members not bigger: nothing to do" "$out" ;; esac
    [ "$before" = "$(sums)" ] || t_fail "RAID-$lvl: nothing to do wrote something"
    # the members replaced by bigger ones: all 32 MiB but the last, 24 MiB; the
    # new room holds old garbage (random), so only a sync makes its parity agree
    for f in $M; do head -c 16M /dev/urandom >>"$f"; done
    last=${M##* }
    truncate -s 24M "$last"
    # shellcheck disable=SC2086
    t_refused "RAID-$lvl: --size larger than the smallest member holds" "more than the smallest member" \
        $URAID grow $M --size 30M
    # shellcheck disable=SC2086
    t_refused "RAID-$lvl: a smaller --size" "shrinking is not supported" $URAID grow $M --size 8M
    # shellcheck disable=SC2086
    out=$($URAID grow $M --size max 2>&1)
    case "$out" in *"the new region is in sync"*) t_ok "RAID-$lvl: uraid grow --size max: $out" ;;
        *) t_fail "RAID-$lvl: uraid grow --size max" "$out" ;; esac
    # 24 MiB less the data offset (1 MiB), in whole chunks (RAID-1: 64 KiB)
    grown "RAID-$lvl" $((23 * 1024))
done

# a kill -9 during the new region's sync: md's record says resync from the old size (with a
# bitmap: the new region's bits are set too, so the bitmap-driven resync covers it)
kill_case() { # POLICY
    name="kill ($1)"
    d=$t_tmp/kill-$1
    new_array "$d" 5 4 "$1"
    for f in $M; do head -c 48M /dev/urandom >>"$f"; done
    # shellcheck disable=SC2086
    $URAID grow $M --size max --member-layer throttle=40M >/dev/null 2>&1 &
    pid=$!
    n=0
    while [ $n -lt 200 ]; do
        mdadm --examine "$d/m0.img" 2>/dev/null | grep -q "Array Size : 193536 KiB" && break
        sleep 0.02; n=$((n + 1))
    done
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    x=$(mdadm --examine "$d/m0.img" 2>&1)
    if ! echo "$x" | grep -q "Array Size : 193536 KiB"; then
        t_fail "$name: the new size is recorded" "$(echo "$x" | grep -i 'size\|state')"
    elif echo "$x" | grep -q "State : active"; then
        t_ok "$name: the new size is recorded and the array is not clean (md's resync checkpoint: the old size)"
        # shellcheck disable=SC2086
        $URAID resync $M >"$t_tmp/resync.out" 2>&1 && t_ok "$name: uraid resync finishes the new region" ||
            t_fail "$name: uraid resync" "$(tail -n 1 "$t_tmp/resync.out")"
    else
        t_fail "$name: killed during the sync" "the sync had finished before the kill ($(echo "$x" | grep 'State :' | tr -s ' '))"
    fi
    grown "$name" $((63 * 1024))
}
kill_case resync
kill_case bitmap
t_finish
