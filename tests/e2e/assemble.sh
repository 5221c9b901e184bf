#!/bin/sh
# Assembly by identity (issue 13 item 4): `uraid examine --scan` prints the
# ARRAY lines `mdadm --examine --scan` prints for the same members (with and
# without -v); `uraid assemble --uuid/--name/--scan` finds the members among
# files, globs and NBD URIs in any order, in slot order, leaving out other
# arrays' members and stale ones with one line each; the config file
# (/etc/uraid.conf syntax, here --config) names arrays and devices; the
# array is served as `uraid serve` serves it; every verb that takes members
# takes --name/--uuid too. Refusals say one line and change no member byte.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

T="timeout 60"
server_pid=""
nbd_pid=""
t_at_exit '[ -n "$nbd_pid" ] && kill -9 "$nbd_pid" 2>/dev/null'
t_at_exit '[ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null'
t_need nbdkit nbdinfo nbdcopy mdadm timeout

dir=$t_tmp/disks
mkdir -p "$dir"
for i in 0 1 2 3 4; do truncate -s 24M "$dir/a$i.img"; done
for i in 0 1; do truncate -s 16M "$dir/b$i.img"; done
for i in 0 1; do truncate -s 16M "$dir/c$i.img"; done
echo "not a member" >"$dir/notes.img"
# shellcheck disable=SC2086
$T $URAID create --level 5 --raid-devices 4 --spare-devices 1 --chunk 64K --name data \
    "$dir/a0.img" "$dir/a1.img" "$dir/a2.img" "$dir/a3.img" "$dir/a4.img" >"$t_tmp/out" 2>&1 \
    && $T $URAID create --level 1 --raid-devices 2 --name scratch "$dir/b0.img" "$dir/b1.img" >>"$t_tmp/out" 2>&1 \
    && $T $URAID create --level 1 --raid-devices 2 --name elsewhere:data "$dir/c0.img" "$dir/c1.img" \
        >>"$t_tmp/out" 2>&1 \
    && t_ok "three arrays: RAID-5 'data' with a spare, RAID-1 'scratch', RAID-1 'elsewhere:data'" \
    || { t_fail "create" "$(cat "$t_tmp/out")"; t_finish; exit 1; }
head -c 3M /dev/urandom >"$t_tmp/pattern"
$T $URAID write "$dir/a0.img" "$dir/a1.img" "$dir/a2.img" "$dir/a3.img" "$dir/a4.img" <"$t_tmp/pattern" >"$t_tmp/out" 2>&1 \
    || t_fail "write the pattern" "$(cat "$t_tmp/out")"
uuid=$(mdadm --examine "$dir/a0.img" | sed -n 's/^ *Array UUID : //p')
uuid_b=$(mdadm --examine "$dir/b0.img" | sed -n 's/^ *Array UUID : //p')

sums() { md5sum "$dir"/*.img; }
# refused NAME STATUS PATTERN CMD...: exit status, one line matching PATTERN, no member byte changed
refused() {
    name=$1 want=$2 pat=$3; shift 3
    sums >"$t_tmp/before"
    "$@" >"$t_tmp/r.out" 2>"$t_tmp/r.err"; rc=$?
    sums >"$t_tmp/after"
    if [ "$rc" -eq "$want" ] && grep -q -- "$pat" "$t_tmp/r.err" && [ "$(wc -l <"$t_tmp/r.err")" -eq 1 ] \
        && [ ! -s "$t_tmp/r.out" ] && cmp -s "$t_tmp/before" "$t_tmp/after"; then
        t_ok "refused: $name: $(cat "$t_tmp/r.err")"
    else
        t_fail "refused: $name" "exit $rc (want $want); stderr: $(cat "$t_tmp/r.err"); stdout: $(head -c 300 "$t_tmp/r.out")"
    fi
}

# ---- examine --scan, against mdadm's own ----
for v in "" -v; do
    # shellcheck disable=SC2086
    (cd "$dir" && mdadm --examine --scan $v a0.img a1.img a2.img a3.img a4.img b0.img b1.img c0.img c1.img) \
        >"$t_tmp/mdadm.scan" 2>&1
    # shellcheck disable=SC2086
    (cd "$dir" && "$OLDPWD/$URAID" $v examine --scan a0.img a1.img a2.img a3.img a4.img b0.img b1.img c0.img c1.img) \
        >"$t_tmp/uraid.scan" 2>&1
    if [ -s "$t_tmp/mdadm.scan" ] && cmp -s "$t_tmp/mdadm.scan" "$t_tmp/uraid.scan"; then
        t_ok "examine --scan ${v:+-v }prints what mdadm --examine --scan ${v:+-v }prints ($(grep -c ^ARRAY "$t_tmp/uraid.scan") arrays)"
    else
        t_fail "examine --scan ${v:+-v }= mdadm's" "$(diff "$t_tmp/mdadm.scan" "$t_tmp/uraid.scan")"
    fi
done
# each metadata format: mdadm names a 0.90 array by its minor, without metadata= and name=
fd=$t_tmp/formats
mkdir -p "$fd"
for fmt in 0.90 1.0 1.1; do
    for i in 0 1 2; do truncate -s 16M "$fd/$fmt-$i.img"; done
    $URAID create --metadata $fmt --level 5 --raid-devices 3 --consistency-policy resync --assume-clean \
        "$fd/$fmt-0.img" "$fd/$fmt-1.img" "$fd/$fmt-2.img" >/dev/null 2>&1 || t_fail "create with metadata $fmt"
done
for v in "" -v; do
    (cd "$fd" && mdadm --examine --scan $v ./*.img) >"$t_tmp/mdadm.scan" 2>&1
    (cd "$fd" && "$OLDPWD/$URAID" $v examine --scan ./*.img) >"$t_tmp/uraid.scan" 2>&1
    if [ "$(grep -c ^ARRAY "$t_tmp/mdadm.scan")" -eq 3 ] && cmp -s "$t_tmp/mdadm.scan" "$t_tmp/uraid.scan"; then
        t_ok "examine --scan ${v:+-v }on metadata 0.90, 1.0 and 1.1 arrays prints what mdadm prints"
    else
        t_fail "examine --scan ${v:+-v }of each format = mdadm's" "$(diff "$t_tmp/mdadm.scan" "$t_tmp/uraid.scan")"
    fi
done
$URAID -v examine --scan "$dir/*.img" >"$t_tmp/glob.scan" 2>"$t_tmp/glob.err"
[ "$(grep -c '^ARRAY' "$t_tmp/glob.scan")" -eq 3 ] && grep -q "devices=$dir/a0.img,$dir/a1.img,$dir/a2.img,$dir/a3.img,$dir/a4.img$" "$t_tmp/glob.scan" \
    && grep -q "notes.img" "$t_tmp/glob.err" \
    && t_ok "examine --scan over a glob: three ARRAY lines, the file without a superblock said with -v" \
    || t_fail "examine --scan glob" "$(cat "$t_tmp/glob.scan" "$t_tmp/glob.err")"

# ---- assemble --list: members in slot order, whatever the order given ----
$T $URAID assemble --uuid "$uuid" --list "$dir/a3.img" "$dir/a4.img" "$dir/b0.img" "$dir/a1.img" "$dir/a0.img" \
    "$dir/a2.img" >"$t_tmp/list" 2>"$t_tmp/list.err"
printf '%s\n' "$dir/a0.img" "$dir/a1.img" "$dir/a2.img" "$dir/a3.img" "$dir/a4.img" >"$t_tmp/want"
cmp -s "$t_tmp/list" "$t_tmp/want" && t_ok "assemble --uuid --list: members in slot order, the spare last" \
    || t_fail "--list slot order" "$(cat "$t_tmp/list")"
grep -q "left out $dir/b0.img: a member of another array (UUID $uuid_b, name '.*:scratch')" "$t_tmp/list.err" \
    && [ "$(wc -l <"$t_tmp/list.err")" -eq 1 ] && t_ok "a member of another array is left out with one line" \
    || t_fail "foreign member line" "$(cat "$t_tmp/list.err")"
$T $URAID assemble --name "$(hostname):data" --list "$dir/*.img" >"$t_tmp/list" 2>"$t_tmp/list.err"
cmp -s "$t_tmp/list" "$t_tmp/want" && [ "$(grep -c 'another array' "$t_tmp/list.err")" -eq 4 ] \
    && t_ok "assemble --name HOST:data over a glob: the same five; four other members said" \
    || t_fail "--name over a glob" "$(cat "$t_tmp/list" "$t_tmp/list.err")"
$T $URAID assemble --name "$uuid" --list "$dir/*.img" >"$t_tmp/list" 2>/dev/null
cmp -s "$t_tmp/list" "$t_tmp/want" && t_ok "--name UUID names the array by UUID (uraid@UUID.service)" \
    || t_fail "--name UUID" "$(cat "$t_tmp/list")"
refused "a name two arrays carry (data, elsewhere:data)" 2 "name 'data' is two arrays: UUID" \
    $T $URAID assemble --name data --list "$dir/*.img"
refused "an array none of the devices belongs to" 1 "no member of the array with name 'nosuch' among 1 device looked at" \
    $T $URAID assemble --name nosuch --list "$dir/n*.img"
refused "a bad UUID" 2 "--uuid '1234' is not an array UUID" $T $URAID assemble --uuid 1234 --list "$dir/*.img"
refused "assemble without saying which array" 2 "say which array" $T $URAID assemble "$dir/a0.img"

# ---- other verbs take --name/--uuid too ----
$T $URAID detail --name "$(hostname):data" "$dir/a*.img" >"$t_tmp/detail" 2>&1 \
    && grep -q "Status : \[4/4\] \[UUUU\]" "$t_tmp/detail" && t_ok "detail --name over a glob" \
    || t_fail "detail --name" "$(tail -3 "$t_tmp/detail")"
$T $URAID cat --uuid "$uuid" "$dir/*.img" 2>/dev/null | head -c 3145728 | cmp -s - "$t_tmp/pattern" \
    && t_ok "cat --uuid over a glob reads what was written" || t_fail "cat --uuid"

# mount's last argument stays its directory
mkdir -p "$t_tmp/mnt"
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1; then
    $URAID mount --foreground --uuid "$uuid" "$dir/*.img" "$t_tmp/mnt" >"$t_tmp/out" 2>&1 &
    mount_pid=$!
    n=0; while [ ! -e "$t_tmp/mnt/array" ] && [ $n -lt 40 ]; do sleep 0.25; n=$((n + 1)); done
    head -c 3145728 "$t_tmp/mnt/array" 2>/dev/null | cmp -s - "$t_tmp/pattern" \
        && grep -q "\[4/4\] \[UUUU\]" "$t_tmp/mnt/status" \
        && t_ok "mount --uuid GLOB DIR: the members found, DIR mounted, the data read" \
        || t_fail "mount --uuid" "$(cat "$t_tmp/out"; head -1 "$t_tmp/mnt/status" 2>&1)"
    timeout 20 fusermount3 -u "$t_tmp/mnt" 2>/dev/null
    wait "$mount_pid" # the array closed clean
else
    t_fail "mount --uuid: needs /dev/fuse and fusermount3 (not tested)"
fi

# ---- NBD URIs among the candidates ----
nbdkit -f --exit-with-parent --unix "$t_tmp/a1.sock" file "$dir/a1.img" 2>"$t_tmp/nbdkit.err" &
nbd_pid=$!
n=0; while ! nbdinfo --size "nbd+unix:///?socket=$t_tmp/a1.sock" >/dev/null 2>&1 && [ $n -lt 40 ]; do sleep 0.25; n=$((n + 1)); done
a1uri="nbd+unix:///?socket=$t_tmp/a1.sock"
$T $URAID assemble --uuid "$uuid" --list "$dir/a[023].img" "$a1uri" >"$t_tmp/list" 2>&1
printf '%s\n' "$dir/a0.img" "$a1uri" "$dir/a2.img" "$dir/a3.img" | cmp -s - "$t_tmp/list" \
    && t_ok "an NBD URI is examined and placed in its slot (the '?' of the URI is no glob)" \
    || t_fail "NBD URI member" "$(cat "$t_tmp/list")"
kill "$nbd_pid"; wait "$nbd_pid" 2>/dev/null; nbd_pid=""

# ---- the config file ----
conf=$t_tmp/uraid.conf
cat >"$conf" <<EOF
# what 'uraid examine --scan' printed, and where to look
DEVICE $dir/a*.img
   $dir/b*.img   # the continuation of the DEVICE line
ARRAY /dev/md/data metadata=1.2 UUID=$uuid
    name=$(hostname):data level=raid5 num-devices=4
ARRAY /dev/md/scratch name=scratch
EOF
$T $URAID assemble --scan --config "$conf" --name data --list >"$t_tmp/list" 2>"$t_tmp/list.err"
cmp -s "$t_tmp/list" "$t_tmp/want" && [ "$(grep -c 'another array' "$t_tmp/list.err")" -eq 2 ] \
    && t_ok "assemble --scan --config --name data: found through the DEVICE lines" \
    || t_fail "--scan --name" "$(cat "$t_tmp/list" "$t_tmp/list.err")"
$T $URAID assemble --config "$conf" --name scratch --list >"$t_tmp/list" 2>/dev/null
printf '%s\n' "$dir/b0.img" "$dir/b1.img" | cmp -s - "$t_tmp/list" \
    && t_ok "an ARRAY line with name= only: its UUID is the members'" || t_fail "name-only line" "$(cat "$t_tmp/list")"
$T $URAID detail --config "$conf" --uuid "$uuid_b" >"$t_tmp/detail" 2>&1 && grep -q "Raid Level : raid1" "$t_tmp/detail" \
    && t_ok "detail --config --uuid: no devices given, the config's DEVICE lines" || t_fail "detail --config" "$(tail -2 "$t_tmp/detail")"
refused "--scan with two ARRAY lines and no name" 2 "has 2 ARRAY lines: name the array" \
    $T $URAID assemble --scan --config "$conf" --list
printf 'DEVICE %s/*.img\nARRAY name=%s:data devices=%s/a0.img,%s/a1.img,%s/a[23].img\n' "$dir" "$(hostname)" "$dir" "$dir" "$dir" >"$t_tmp/one.conf"
$T $URAID assemble --scan --config "$t_tmp/one.conf" --list >"$t_tmp/list" 2>"$t_tmp/list.err"
printf '%s\n' "$dir/a0.img" "$dir/a1.img" "$dir/a2.img" "$dir/a3.img" | cmp -s - "$t_tmp/list" && [ ! -s "$t_tmp/list.err" ] \
    && t_ok "--scan with one ARRAY line: that array, looked for in its devices= only" \
    || t_fail "devices=" "$(cat "$t_tmp/list" "$t_tmp/list.err")"
printf 'ARRAY name=data level=raid6\n' >"$t_tmp/bad.conf"
refused "the config's level disagrees with the members" 2 "is RAID level 5, but line 1 of the config says level 6" \
    $T $URAID assemble --config "$t_tmp/bad.conf" --name data --list "$dir/a*.img"
printf 'DEVICE %s/*\nARRAY /dev/md0\n  UUID=%s\nARRAY name=x colour=red\n' "$dir" "$uuid" >"$t_tmp/bad.conf"
refused "a config with an unknown ARRAY tag" 1 "bad.conf: line 4: unknown ARRAY tag 'colour'" \
    $T $URAID assemble --scan --config "$t_tmp/bad.conf" --list
refused "a config that is missing" 1 "cannot read $t_tmp/none.conf: No such file" \
    $T $URAID assemble --scan --config "$t_tmp/none.conf" --list

# ---- assemble serves: over NBD, the data as written ----
sock=$t_tmp/nbd.sock ctl=$t_tmp/ctl.sock
$URAID assemble --scan --config "$conf" --name data --socket "$sock" --control "$ctl" 2>"$t_tmp/serve.err" &
server_pid=$!
n=0; while ! nbdinfo --size "nbd+unix:///?socket=$sock" >/dev/null 2>&1 && [ $n -lt 60 ]; do sleep 0.25; n=$((n + 1)); done
nbdcopy "nbd+unix:///?socket=$sock" - 2>/dev/null | head -c 3145728 | cmp -s - "$t_tmp/pattern" \
    && t_ok "assemble --scan --name data serves the array over NBD; it reads what was written" \
    || t_fail "assemble serves" "$(cat "$t_tmp/serve.err")"
$T $URAID status --control "$ctl" >"$t_tmp/status" 2>&1 && grep -q "\[4/4\] \[UUUU\]" "$t_tmp/status" \
    && grep -q "a4.img(S)" "$t_tmp/status" && t_ok "the control socket answers: four in sync, the spare kept" \
    || t_fail "status" "$(head -3 "$t_tmp/status")"
$T $URAID stop --control "$ctl" >/dev/null 2>&1
wait "$server_pid"; rc=$?; server_pid=""
[ "$rc" -eq 0 ] && t_ok "stopped: exit 0" || t_fail "serve exit $rc" "$(tail -3 "$t_tmp/serve.err")"

# ---- assemble --scan --check (the monthly timer): a check on every serving array of the config ----
# A served array's control socket is /run/uraid/<uuid>.sock by default; the
# server gets that path explicitly so that no other test's socket is used.
hex=$(echo "$uuid" | tr -d :)
rctl=/run/uraid/$hex.sock
if mkdir -p /run/uraid 2>/dev/null && [ -w /run/uraid ]; then
    $URAID serve "$dir/a0.img" "$dir/a1.img" "$dir/a2.img" "$dir/a3.img" "$dir/a4.img" --socket "$sock" --control "$rctl" \
        --speed-limit 1M 2>"$t_tmp/serve.err" &
    server_pid=$!
    n=0; while ! nbdinfo --size "nbd+unix:///?socket=$sock" >/dev/null 2>&1 && [ $n -lt 60 ]; do sleep 0.25; n=$((n + 1)); done
    $T $URAID assemble --scan --config "$conf" --check >"$t_tmp/check.out" 2>&1; rc=$?
    $T $URAID status --control "$rctl" 2>&1 | tail -n 1 >"$t_tmp/bg"
    grep -q "^uraid assemble: $(hostname):data: check started" "$t_tmp/check.out" \
        && grep -q "^uraid assemble: scratch (line 6): not serving, not checked" "$t_tmp/check.out" && [ "$rc" -eq 0 ] \
        && grep -q "check = " "$t_tmp/bg" \
        && t_ok "assemble --scan --check: the serving array checks, the other is said not serving" \
        || t_fail "--check (exit $rc)" "$(cat "$t_tmp/check.out" "$t_tmp/bg")"
    $T $URAID stop --control "$rctl" >/dev/null 2>&1
    wait "$server_pid"; server_pid=""
else
    t_fail "assemble --scan --check: /run/uraid is not writable here (needs root): not tested"
fi

# ---- a stale member: left out, the array served degraded ----
$T $URAID write "$dir/a0.img" "$dir/a2.img" "$dir/a3.img" "$dir/a4.img" <"$t_tmp/pattern" >"$t_tmp/out" 2>&1 \
    || t_fail "degraded write" "$(cat "$t_tmp/out")"
ev=$(mdadm --examine "$dir/a0.img" | sed -n 's/^ *Events : //p')
$T $URAID assemble --uuid "$uuid" --list "$dir/a*.img" >"$t_tmp/list" 2>"$t_tmp/list.err"
ev1=$(mdadm --examine "$dir/a1.img" | sed -n 's/^ *Events : //p')
printf '%s\n' "$dir/a0.img" "$dir/a2.img" "$dir/a3.img" "$dir/a4.img" | cmp -s - "$t_tmp/list" \
    && grep -q "left out $dir/a1.img: stale (events $ev1, the array's $ev)" "$t_tmp/list.err" \
    && [ "$(wc -l <"$t_tmp/list.err")" -eq 1 ] \
    && t_ok "a member written without (events $ev1 < $ev) is left out as stale, with one line" \
    || t_fail "stale member" "$(cat "$t_tmp/list" "$t_tmp/list.err")"
$T $URAID detail --uuid "$uuid" "$dir/a*.img" >"$t_tmp/detail" 2>/dev/null \
    && grep -q "Status : \[4/3\]" "$t_tmp/detail" && ! grep -q "a1.img" "$t_tmp/detail" \
    && t_ok "detail --uuid: degraded, without the stale member" || t_fail "detail degraded" "$(grep Status "$t_tmp/detail")"
t_mdadm_agrees "at the end (RAID-5 'data')" "$dir/a0.img" "$dir/a1.img" "$dir/a2.img" "$dir/a3.img" "$dir/a4.img"
t_finish
