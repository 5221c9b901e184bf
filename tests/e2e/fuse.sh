#!/bin/sh
# uraid mount: a RAID-6 served through FUSE carries a real ext4 through a loop
# device (--direct-io=on): files written, fsck clean, read back identical with
# a member missing, and after the daemon is killed -9 mid-write the array
# reopens dirty with everything synced before the kill intact; mdadm --examine
# agrees with uraid on the members after the kill and at the end. Needs root,
# /dev/fuse, loop devices, fusermount3 and e2fsprogs: without them the test
# fails with the reason (never skips). Every step is bounded by `timeout`.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

mnt=$t_tmp/fuse
ext=$t_tmp/ext4
ctl=$t_tmp/ctl.sock
loop=""
pid=""
T="timeout 20"

# Undo everything in reverse order, lazily: a FUSE daemon killed under a
# mounted loop device must not leave a hung mount behind.
cleanup() {
    timeout 10 umount -l "$ext" 2>/dev/null
    [ -n "$loop" ] && timeout 10 losetup -d "$loop" 2>/dev/null
    timeout 10 fusermount3 -uz "$mnt" 2>/dev/null
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    rm -rf "$t_tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

need() {
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || { t_fail "needs $c in PATH"; t_finish; exit 1; }
    done
}
need losetup mkfs.ext4 fsck.ext4 fusermount3 sha256sum timeout
[ "$(id -u)" -eq 0 ] || { t_fail "needs root (loop devices, mount)"; t_finish; exit 1; }
[ -c /dev/fuse ] || { t_fail "needs /dev/fuse"; t_finish; exit 1; }
if ! $URAID mount --help >/dev/null 2>&1 || $URAID mount a b 2>&1 | grep -q "without FUSE"; then
    t_fail "build/uraid has FUSE support (libfuse3-dev at build time)"; t_finish; exit 1
fi

mkdir -p "$mnt" "$ext"
members=""
for i in 0 1 2 3 4 5; do
    truncate -s 64M "$t_tmp/d$i.img"
    members="$members $t_tmp/d$i.img"
done
# resync, not the default ppl: the kill -9 below checks md's rule (a dirty array is resynced)
# shellcheck disable=SC2086
$T $URAID create --level 6 --raid-devices 6 --chunk 64K --consistency-policy resync $members >"$t_tmp/create.log" 2>&1 \
    && t_ok "create RAID-6 on 6 x 64 MiB" || { t_fail "create" "$(cat "$t_tmp/create.log")"; t_finish; exit 1; }

# start_daemon MEMBERS...: foreground daemon in the background, waits for DIR/array
start_daemon() {
    $URAID mount --foreground --control "$ctl" "$@" "$mnt" >"$t_tmp/daemon.log" 2>&1 &
    pid=$!
    n=0
    while [ ! -f "$mnt/array" ] && [ $n -lt 100 ]; do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1; n=$((n + 1))
    done
    [ -f "$mnt/array" ]
}

stop_daemon() { # unmount and wait for a clean exit
    timeout 10 fusermount3 -u "$mnt" || return 1
    n=0
    while kill -0 "$pid" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
    wait "$pid"; st=$?
    pid=""
    return $st
}

attach() { # attach [-r]: loop device on DIR/array with direct I/O
    loop=$($T losetup --direct-io=on $1 -f --show "$mnt/array") && [ -b "$loop" ]
}
detach() { timeout 10 losetup -d "$loop" && loop=""; }

# shellcheck disable=SC2086
start_daemon $members && t_ok "mount: $mnt/array appears" \
    || { t_fail "mount" "$(cat "$t_tmp/daemon.log")"; t_finish; exit 1; }
size=$(stat -c %s "$mnt/array")
kib=$($T $URAID detail $members 2>/dev/null | sed -n 's/^ *Array Size : \([0-9]*\).*/\1/p')
[ -n "$kib" ] && [ "$size" -eq $((kib * 1024)) ] && t_ok "array file has the array's size ($size)" \
    || t_fail "array size" "file $size, detail ${kib}K"
$T cat "$mnt/status" >"$t_tmp/status" 2>&1
grep -q '\[6/6\] \[UUUUUU\]' "$t_tmp/status" && t_ok "status readable, shows [6/6] [UUUUUU]" \
    || t_fail "status" "$(cat "$t_tmp/status")"
$T $URAID status --control "$ctl" 2>&1 | grep -q '\[6/6\] \[UUUUUU\]' && t_ok "uraid status over the control socket" \
    || t_fail "uraid status --control" "$($URAID status --control "$ctl" 2>&1)"
# misaligned I/O through the file itself (direct_io passes it through unchanged)
printf 'uraid-odd-offset' | $T dd of="$mnt/array" bs=1 seek=100000001 conv=notrunc status=none
got=$($T dd if="$mnt/array" bs=1 skip=100000001 count=16 status=none)
[ "$got" = "uraid-odd-offset" ] && t_ok "misaligned write and read of the array file" \
    || t_fail "misaligned I/O" "got '$got'"

# punching a hole (what a loop device sends for discard) zeroes the range,
# misaligned edges included, and gives the member files their blocks back
alloc() { du -k -c $members | tail -1 | cut -f1; }
head -c 3145728 /dev/urandom >"$t_tmp/punch.bin"
$T dd if="$t_tmp/punch.bin" of="$mnt/array" bs=1M seek=8 conv=notrunc status=none
before=$(alloc)
if $T fallocate -p -o $((8 * 1048576 + 1000)) -l 2000000 "$mnt/array" 2>"$t_tmp/punch.log"; then
    { head -c 1000 "$t_tmp/punch.bin"; head -c 2000000 /dev/zero
      tail -c $((3145728 - 2001000)) "$t_tmp/punch.bin"; } >"$t_tmp/punch.want"
    $T dd if="$mnt/array" bs=1M skip=8 count=3 status=none >"$t_tmp/punch.got"
    cmp -s "$t_tmp/punch.got" "$t_tmp/punch.want" && t_ok "fallocate -p: the range reads as zeros, its edges kept" \
        || t_fail "punched range" "$(cmp "$t_tmp/punch.got" "$t_tmp/punch.want" 2>&1)"
    after=$(alloc)
    head -c 65536 /dev/urandom >"$t_tmp/holes"
    if ! fallocate -p -o 0 -l 65536 "$t_tmp/holes" 2>/dev/null; then
        echo "     (skip: the file system of $t_tmp has no holes, so zeros are written)"
    elif [ $((before - after)) -ge 1024 ]; then
        t_ok "punch gave the members $((before - after)) KiB back"
    else
        t_fail "members' allocation after the punch" "before ${before}K after ${after}K"
    fi
else
    t_fail "fallocate -p on $mnt/array" "$(cat "$t_tmp/punch.log")"
fi

if ! attach; then
    t_fail "losetup --direct-io=on on $mnt/array"; t_finish; exit 1
fi
[ "$(cat "/sys/block/${loop#/dev/}/loop/dio" 2>/dev/null)" = 1 ] && t_ok "losetup --direct-io=on $loop (dio=1)" \
    || t_fail "loop device uses direct I/O" "dio=$(cat "/sys/block/${loop#/dev/}/loop/dio" 2>&1)"
$T mkfs.ext4 -q -F "$loop" >"$t_tmp/mkfs.log" 2>&1 && t_ok "mkfs.ext4 on the loop device" \
    || { t_fail "mkfs.ext4" "$(cat "$t_tmp/mkfs.log")"; t_finish; exit 1; }
$T mount "$loop" "$ext" && t_ok "mount ext4" || { t_fail "mount ext4"; t_finish; exit 1; }

# 200 files of random sizes (0..256 KiB) in 10 directories
i=0
while [ $i -lt 200 ]; do
    d="$ext/dir$((i % 10))"
    mkdir -p "$d"
    len=$(od -An -N3 -tu4 /dev/urandom | tr -d ' ')
    head -c $((len % 262144)) /dev/urandom >"$d/f$i"
    i=$((i + 1))
done
(cd "$ext" && find . -type f | sort | xargs sha256sum) >"$t_tmp/sums"
[ "$(wc -l <"$t_tmp/sums")" -eq 200 ] && t_ok "200 files written" || t_fail "files written"
# free space trimmed through the loop device; parity must still agree
rm -rf "$ext/dir9"
$T fstrim -v "$ext" >"$t_tmp/fstrim.log" 2>&1 && grep -q trimmed "$t_tmp/fstrim.log" \
    && t_ok "fstrim: $(cat "$t_tmp/fstrim.log")" || t_fail "fstrim" "$(cat "$t_tmp/fstrim.log")"
(cd "$ext" && find . -type f | sort | xargs sha256sum) >"$t_tmp/sums"
$T $URAID check --control "$ctl" --wait >"$t_tmp/scrub.log" 2>&1 && grep -q "mismatch_cnt 0" "$t_tmp/scrub.log" \
    && t_ok "check after the trims: mismatch_cnt 0" || t_fail "check after trims" "$(cat "$t_tmp/scrub.log")"
$T umount "$ext" && t_ok "umount ext4" || t_fail "umount ext4"
$T fsck.ext4 -fn "$loop" >"$t_tmp/fsck.log" 2>&1 && t_ok "fsck.ext4 -fn clean" \
    || t_fail "fsck.ext4" "$(tail -5 "$t_tmp/fsck.log")"
detach && t_ok "loop detached" || t_fail "losetup -d"
stop_daemon && t_ok "fusermount3 -u: daemon exits 0" || t_fail "daemon exit" "$(cat "$t_tmp/daemon.log")"
$T $URAID detail $members 2>&1 | grep -q 'State : clean$' && t_ok "array closed clean" \
    || t_fail "clean after unmount" "$($URAID detail $members 2>&1 | grep State)"

# SIGTERM closes the array clean; daemonised mount (the default) works.
# (Before the kill -9 below: after a crash the array stays "active" until a
# resync, as in md, so "clean" can only be checked here.)
# shellcheck disable=SC2086
if $T $URAID mount $members "$mnt" 2>"$t_tmp/bg.log" && [ -f "$mnt/array" ]; then
    t_ok "daemonised mount returns with $mnt/array in place"
    dpid=$(pgrep -n -f "uraid mount .*$mnt" || true)
    # rewrite one sector with what it holds (the ext4 stays intact): the array turns active
    $T dd if="$mnt/array" bs=512 skip=8 count=1 status=none | $T dd of="$mnt/array" bs=512 seek=8 conv=notrunc status=none
    $T cat "$mnt/status" | grep -q 'State : active' && t_ok "status shows active after a write" \
        || t_fail "status after a write" "$(cat "$mnt/status")"
    if [ -n "$dpid" ] && kill -TERM "$dpid"; then
        n=0
        while kill -0 "$dpid" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
        kill -0 "$dpid" 2>/dev/null && t_fail "SIGTERM: daemon still running" || t_ok "SIGTERM: daemon exits"
        timeout 10 fusermount3 -uz "$mnt" 2>/dev/null
        $T $URAID detail $members 2>&1 | grep -q 'State : clean$' && t_ok "SIGTERM: array closed clean" \
            || t_fail "clean after SIGTERM" "$($URAID detail $members 2>&1 | grep State)"
    else
        t_fail "daemon pid found"
    fi
else
    t_fail "daemonised mount" "$(cat "$t_tmp/bg.log")"
fi
# Degraded: member d3 left out; ext4 read-only, every file identical.
deg=$(echo $members | tr ' ' '\n' | grep -v d3.img | tr '\n' ' ')
# shellcheck disable=SC2086
if start_daemon $deg && attach -r && $T mount -o ro,noload "$loop" "$ext"; then
    t_ok "degraded: mounted with one member missing"
    (cd "$ext" && $T sha256sum -c --quiet "$t_tmp/sums") >"$t_tmp/check.log" 2>&1 \
        && t_ok "degraded: all $(wc -l <"$t_tmp/sums") sha256sums identical" || t_fail "degraded sums" "$(head -5 "$t_tmp/check.log")"
    $T cat "$mnt/status" | grep -q '\[6/5\]' && t_ok "degraded: status shows [6/5]" \
        || t_fail "degraded status" "$(cat "$mnt/status")"
else
    t_fail "degraded mount" "$(cat "$t_tmp/daemon.log")"
fi
timeout 10 umount "$ext"; detach
# stopped through the control socket this time: the daemon unmounts itself
if $T $URAID stop --control "$ctl" >/dev/null 2>&1; then
    n=0
    while kill -0 "$pid" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
    wait "$pid" && ! grep -q " $mnt " /proc/mounts && t_ok "uraid stop: daemon unmounts and exits 0" \
        || t_fail "uraid stop" "$(cat "$t_tmp/daemon.log")"
    pid=""
else
    t_fail "uraid stop --control"; stop_daemon
fi

# kill -9 during writes: synced data survives, the array reopens dirty.
# shellcheck disable=SC2086
if start_daemon $members && attach && $T mount "$loop" "$ext"; then
    head -c 8M /dev/urandom >"$t_tmp/synced"
    cp "$t_tmp/synced" "$ext/synced" && $T sync
    want=$(sha256sum <"$t_tmp/synced")
    # files synced one after another: the page cache cannot absorb it all
    # before the kill, as one 64 MiB dd could on a quiet machine
    # (eight names over again: the file system never fills; why a dd stopped
    # goes to writer.log, shown if the writer was not running at the kill)
    (timeout 20 sh -c 'i=0; while dd if=/dev/urandom of="$1/busy$((i % 8))" bs=1M count=4 conv=fsync status=none; do
        i=$((i + 1)); done; echo "writer stopped after $i files"; df -k "$1"' sh "$ext" >"$t_tmp/writer.log" 2>&1) &
    writer=$!
    sleep 1
    # the kill must land while the writer still writes (else it tests a clean close)
    busy=$(kill -0 "$writer" 2>/dev/null && echo yes)
    kill -9 "$pid" && killed=yes || killed=""
    wait "$pid" 2>/dev/null
    pid=""
    wait "$writer" 2>/dev/null
    # the kernel side is dead: detach and unmount lazily, never wait on it
    timeout 10 umount -l "$ext"
    timeout 10 losetup -d "$loop"; loop=""
    timeout 10 fusermount3 -uz "$mnt"
    [ -n "$busy" ] && [ -n "$killed" ] && t_ok "daemon killed -9 during writes" \
        || t_fail "daemon killed -9 during writes" "writer running: ${busy:-no}, kill -9: ${killed:-failed}; $(tr '\n' ' ' <"$t_tmp/writer.log"); daemon: $(tail -3 "$t_tmp/daemon.log" | tr '\n' ' ')"
    $T $URAID detail $members >"$t_tmp/detail" 2>&1
    grep -q 'State : active' "$t_tmp/detail" && t_ok "after the kill: detail shows State : active (dirty)" \
        || t_fail "dirty after kill" "$(grep State "$t_tmp/detail")"
    # shellcheck disable=SC2086
    t_mdadm_agrees "after the kill" $members
    # shellcheck disable=SC2086
    if start_daemon $members && attach && $T mount "$loop" "$ext"; then
        t_ok "after the kill: array opens and ext4 mounts"
        # md's rule: an array that was not shut down cleanly is resynced when it starts
        n=0
        until grep -q "background: resync finished" "$mnt/status" 2>/dev/null || [ $n -ge 300 ]; do
            sleep 0.1; n=$((n + 1))
        done
        grep -q "background: resync finished" "$mnt/status" && t_ok "after the kill: resynced by itself" \
            || t_fail "resync after the kill" "$(grep -i "background\|State :" "$mnt/status")"
        got=$(sha256sum <"$ext/synced")
        [ "$got" = "$want" ] && t_ok "data synced before the kill intact" || t_fail "synced data" "$got"
        (cd "$ext" && $T sha256sum -c --quiet "$t_tmp/sums") >"$t_tmp/check.log" 2>&1 \
            && t_ok "after the kill: the $(wc -l <"$t_tmp/sums") files intact" || t_fail "files after kill" "$(head -5 "$t_tmp/check.log")"
        timeout 10 umount "$ext"
        $T fsck.ext4 -fn "$loop" >"$t_tmp/fsck.log" 2>&1 && t_ok "after the kill: fsck.ext4 -fn clean" \
            || t_fail "fsck after kill" "$(tail -5 "$t_tmp/fsck.log")"
        detach
        stop_daemon && t_ok "after the kill: clean shutdown" || t_fail "daemon exit" "$(cat "$t_tmp/daemon.log")"
        $T $URAID detail $members 2>&1 | grep -q "State : clean\$" && t_ok "after the resync and a stop: clean" \
            || t_fail "clean after resync" "$($URAID detail $members 2>&1 | grep 'State :')"
    else
        t_fail "reopen after kill" "$(cat "$t_tmp/daemon.log")"
    fi
else
    t_fail "mount for the kill test" "$(cat "$t_tmp/daemon.log")"
fi
# shellcheck disable=SC2086
t_mdadm_agrees "at the end" $members

t_finish
