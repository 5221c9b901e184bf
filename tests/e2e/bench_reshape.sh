#!/bin/sh
# uraid bench reshape as a user runs it: a grow (RAID-5 4 -> 5), a shrink
# (RAID-5 5 -> 4, and RAID-6 6 -> 5) and an online grow with user reads
# measured before and during it, on throttled tmpfs members, each
# printing its JSON line with the member counts, a positive speed, a raw
# member rate and a ratio between 0 and 1.5 (the model keeps a member at its
# rate, so a ratio far above 1 means the limit is wrong); a bad argument is
# refused with the usage and exit 2, and no member file is left behind.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

# json_ok NAME FROM TO JSON
json_ok() {
    echo "$4" | jq -e --argjson f "$2" --argjson t "$3" \
        '.bench == "reshape" and .from == $f and .to == $t and .array_mbps > 0 and .raw_member_mbps > 0
         and .ratio > 0.05 and .ratio < 1.5' >/dev/null \
        && t_ok "$1: $(echo "$4" | jq -r '"\(.array_mbps) MB/s, ratio \(.ratio)"')" || t_fail "$1" "$4"
}

out=$($URAID bench reshape --size 64M --runs 1 --rate 150M --dir "$t_tmp" --json 2>&1)
json_ok "grow RAID-5 4 -> 5" 4 5 "$out"
out=$($URAID bench reshape --shrink --size 64M --runs 1 --rate 150M --dir "$t_tmp" --json 2>&1)
json_ok "shrink RAID-5 5 -> 4" 5 4 "$out"
out=$($URAID bench reshape --shrink --level 6 --members 5 --size 64M --runs 1 --rate 150M --dir "$t_tmp" --json 2>&1)
json_ok "shrink RAID-6 6 -> 5" 6 5 "$out"
out=$($URAID bench reshape --online --size 64M --runs 1 --rate 150M --dir "$t_tmp" --json 2>&1)
json_ok "online grow RAID-5 4 -> 5" 4 5 "$out"
echo "$out" | jq -e '.mode == "online" and .user_mbps_before > 0 and .user_mbps_during > 0' >/dev/null \
    && t_ok "online: user reads before and during ($(echo "$out" | jq -r '"\(.user_mbps_before) -> \(.user_mbps_during) MB/s"'))" \
    || t_fail "online: user reads measured" "$out"
t_exits "--online with --shrink: refused, exit 2" 2 "give --online or --shrink" $URAID bench reshape --online --shrink
[ -z "$(ls "$t_tmp" | grep uraid-bench-reshape)" ] && t_ok "no member file left" || t_fail "member files left" "$(ls "$t_tmp")"
t_exits "a bad argument: usage, exit 2" 2 "usage: uraid bench reshape" $URAID bench reshape --no-such
t_finish
