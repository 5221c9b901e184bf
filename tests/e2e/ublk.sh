#!/bin/sh
# uraid serve --ublk in Linux 6.12 (the md-oracle guest built with
# --kernel-pkg 6.12, whose ublk_drv this machine's kernel lacks): a RAID-5
# of 3 member images made on the host, served as /dev/ublkb0 in the guest:
#   - the device's size is the array's; its queue limits are md's
#     (io_min = chunk, io_opt = chunk x data members, 4 KiB physical blocks);
#   - a pattern written with O_DIRECT reads back the same, also from 4
#     parallel writers; a write-back cache with FUA; blkdiscard zeroes;
#   - mkfs.ext4 picks stride = chunk/4K and stripe width = full stripe/4K by
#     itself; mount, write a file, umount; `uraid fail` of a member over the
#     control socket; the file reads back and e2fsck -fn is clean, degraded;
#   - `uraid stop` over the control socket removes /dev/ublkb0 and the
#     server exits 0; afterwards the host's `uraid cat` of the members gives
#     the bytes the guest read from /dev/ublkb0, and the array is clean;
#   - refusals (one line, no member byte changed): --ublk with --socket,
#     --id without --ublk, a bad --id, a taken --id, a kernel without ublk;
#   - a server killed with SIGKILL leaves its device number taken; the next
#     serve --ublk --id N removes it (its server is dead) and serves.
# Without a 6.12 guest (no Debian archive to fetch the kernel from, or its
# build fails) every check is reported as FAILED with the reason: a skip is
# never a pass.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

ORACLE=../shared/tools/md-oracle/md-oracle
export MDORACLE_HOME="${MDORACLE612_HOME:-$HOME/.cache/md-oracle-612}" MDORACLE_ACCEL="${MDORACLE_ACCEL:-tcg}"
d=$t_tmp
if [ ! -f "$MDORACLE_HOME/out/vmlinux" ]; then
    mkdir -p "$MDORACLE_HOME"
    ../shared/tools/md-oracle/build.sh --install-deps --kernel-pkg 6.12 >"$d/build.log" 2>&1 ||
        { t_fail "SKIPPED (counted as failed): no Linux 6.12 guest with ublk" "$(tail -3 "$d/build.log")"; t_finish; exit 1; }
fi
grep -q ublk_drv "$MDORACLE_HOME/out/VERSIONS" 2>/dev/null || grep -rqs ublk "$MDORACLE_HOME/build/rootfs/etc/mdoracle/modules.load" ||
    { t_fail "SKIPPED (counted as failed): the guest in $MDORACLE_HOME has no ublk_drv"; t_finish; exit 1; }

KVER=$(ls "$MDORACLE_HOME/kernel/lib/modules" | head -n 1)
# ext4 is a module in Debian's kernel and not in the oracle's initramfs
for m in fs/mbcache fs/jbd2/jbd2 lib/crc16 fs/ext4/ext4; do
    xz -dc "$MDORACLE_HOME/kernel/lib/modules/$KVER/kernel/$m.ko.xz" >"$d/$(basename $m).ko" ||
        { t_fail "ext4 modules of $KVER"; t_finish; exit 1; }
done

for i in 0 1 2; do truncate -s 24M "$d/m$i.img"; done
for i in 0 1 2; do truncate -s 8M "$d/k$i.img"; done
$URAID create --level 5 --raid-devices 3 --chunk 64K --assume-clean "$d/k0.img" "$d/k1.img" "$d/k2.img" >/dev/null 2>&1
$URAID create --level 5 --raid-devices 3 --chunk 64K --assume-clean "$d/m0.img" "$d/m1.img" "$d/m2.img" \
    >"$d/create.out" 2>&1 || { t_fail "uraid create" "$(cat "$d/create.out")"; t_finish; exit 1; }
size=$($URAID detail "$d/m0.img" "$d/m1.img" "$d/m2.img" | awk '/Array Size/ {print $4 * 1024; exit}')
chunk=65536 data=2

# ---- refusals on the host: one line each, no member byte changed ---------------
for i in 0 1 2; do cp "$d/m$i.img" "$d/ref$i.img"; done
refuse() { # refuse NAME WANT-RC PATTERN ARGS...
    _rn=$1 _rw=$2 _rp=$3; shift 3
    $URAID serve "$@" "$d/m0.img" "$d/m1.img" "$d/m2.img" >"$d/ref.out" 2>"$d/ref.err"
    _rc=$?
    _same=yes
    for i in 0 1 2; do cmp -s "$d/m$i.img" "$d/ref$i.img" || _same=no; done
    if [ $_rc = "$_rw" ] && [ "$(wc -l <"$d/ref.err")" = 1 ] && grep -q -- "$_rp" "$d/ref.err" && [ $_same = yes ]; then
        t_ok "$_rn"
    else
        t_fail "$_rn" "rc $_rc, members unchanged: $_same: $(cat "$d/ref.err")"
    fi
}
refuse "serve --ublk --socket: refused" 2 "not an NBD socket" --ublk --socket "$d/s"
refuse "serve --id without --ublk: refused" 2 "goes with --ublk" --id 1
refuse "serve --ublk --id x: refused" 2 "not a ublk device number" --ublk --id x
if [ ! -e /dev/ublk-control ]; then
    refuse "serve --ublk on a kernel without ublk (this host): refused, naming ublk_drv" 1 "modprobe ublk_drv" --ublk
fi

files=""
for f in mbcache jbd2 crc16 ext4; do files="$files --file $d/$f.ko"; done
# shellcheck disable=SC2086
timeout 900 "$ORACLE" --timeout 800 --mem 512M --bin "$URAID" --bin /usr/sbin/mke2fs --bin /usr/sbin/dumpe2fs \
    --bin /usr/sbin/e2fsck --file /etc/mke2fs.conf $files \
    --disk "$d/m0.img" --disk "$d/m1.img" --disk "$d/m2.img" \
    --disk "$d/k0.img" --disk "$d/k1.img" --disk "$d/k2.img" -- - >"$d/guest.out" 2>"$d/guest.err" <<'GUEST'
say() { echo "$*"; }
cp /mnt/files/mke2fs.conf /etc/mke2fs.conf
for m in mbcache jbd2 crc16 ext4; do insmod /mnt/files/$m.ko || say "insmod-failed $m"; done
uraid serve --ublk --id 0 --control /tmp/ctl /dev/vda /dev/vdb /dev/vdc >/tmp/serve.out 2>/tmp/serve.err &
pid=$!
i=0
while [ ! -b /dev/ublkb0 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -b /dev/ublkb0 ] || { say "no-device"; cat /tmp/serve.err; exit 0; }
# the device appears inside START_DEV, a moment before the server prints it
sleep 1
say "printed $(cat /tmp/serve.out)"
uraid serve --ublk --id 0 --control /tmp/ctl2 /dev/vda /dev/vdb /dev/vdc >/dev/null 2>/tmp/taken.err
say "taken rc=$? $(wc -l < /tmp/taken.err) $(grep -c 'ublk device 0 exists already and its server runs' /tmp/taken.err)"
say "size $(blockdev --getsize64 /dev/ublkb0)"
for f in minimum_io_size optimal_io_size physical_block_size logical_block_size; do
    say "$f $(cat /sys/block/ublkb0/queue/$f)"
done
mdpattern -s 7 -n 4M | dd of=/dev/ublkb0 bs=64K seek=3 oflag=direct 2>/dev/null
say "pattern $(dd if=/dev/ublkb0 bs=64K skip=3 count=64 iflag=direct 2>/dev/null | mdpattern -s 7 -n 4M -c >/dev/null 2>&1 && echo same || echo differs)"
# four writers at once, in 4 KiB requests: several requests in flight on each queue
writers=""
for k in 1 2 3 4; do
    mdpattern -s $((20 + k)) -n 1M | dd of=/dev/ublkb0 bs=4K seek=$((2048 + k * 256)) oflag=direct 2>/dev/null &
    writers="$writers $!"
done
for w in $writers; do wait "$w"; done
ok=0
for k in 1 2 3 4; do
    dd if=/dev/ublkb0 bs=4K skip=$((2048 + k * 256)) count=256 iflag=direct 2>/dev/null | mdpattern -s $((20 + k)) -n 1M -c >/dev/null 2>&1 && ok=$((ok + 1))
done
say "parallel $ok"
say "cache $(cat /sys/block/ublkb0/queue/write_cache) fua=$(cat /sys/block/ublkb0/queue/fua)"
# discard zeroes: the 1 MiB the first writer wrote reads back as zeros
if blkdiscard -o $((9 * 1048576)) -l 1048576 /dev/ublkb0 2>/tmp/discard.err; then
    say "discard $(dd if=/dev/ublkb0 bs=64K skip=144 count=16 iflag=direct 2>/dev/null | tr -d '\000' | wc -c)"
else
    say "discard failed $(cat /tmp/discard.err)"
fi
/usr/bin/mke2fs -F -q -t ext4 -b 4096 /dev/ublkb0 >/tmp/mkfs.out 2>&1 || { say "mkfs-failed"; cat /tmp/mkfs.out; }
say "stride $(/usr/bin/dumpe2fs -h /dev/ublkb0 2>/dev/null | sed -n 's/^RAID stride: *//p')"
say "stripe $(/usr/bin/dumpe2fs -h /dev/ublkb0 2>/dev/null | sed -n 's/^RAID stripe width: *//p')"
mkdir -p /mnt/x
if mount -t ext4 /dev/ublkb0 /mnt/x; then
    mdpattern -s 9 -n 3M > /mnt/x/file
    sync
    umount /mnt/x && say "umount ok"
    say "status $(uraid status --control /tmp/ctl 2>&1 | grep -c UUU)"
    # the file system goes on over a degraded array: its reads are rebuilt from parity
    uraid fail --control /tmp/ctl /dev/vdb >/dev/null 2>&1 && say "failed $(uraid status --control /tmp/ctl 2>&1 | grep -c 'U_U')"
    mount -t ext4 -o ro /dev/ublkb0 /mnt/x && say "file $(mdpattern -s 9 -n 3M -c < /mnt/x/file >/dev/null 2>&1 && echo same || echo differs)"
    umount /mnt/x
else
    say "mount-failed"
fi
/usr/bin/e2fsck -fn /dev/ublkb0 >/tmp/fsck.out 2>&1 && say "fsck clean" || { say "fsck rc=$?"; cat /tmp/fsck.out; }
say "sha $(dd if=/dev/ublkb0 bs=1M iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)"
uraid stop --control /tmp/ctl >/dev/null 2>&1 || say "stop-refused"
wait $pid
say "exit $?"
i=0
while [ -e /sys/block/ublkb0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -e /sys/block/ublkb0 ] || [ -e /dev/ublkc0 ] && say "gone no" || say "gone yes"
# a killed server leaves device 1 behind; serve --id 1 takes the number back
upb1() { i=0; while [ ! -b /dev/ublkb1 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; [ -b /dev/ublkb1 ]; }
uraid serve --ublk --id 1 --control /tmp/ctlk /dev/vdd /dev/vde /dev/vdf >/dev/null 2>/tmp/k1.err &
kpid=$!
upb1 && kill -9 $kpid
wait $kpid
sleep 1
say "leftover $([ -e /dev/ublkc1 ] && echo yes || echo no)"
uraid serve --ublk --id 1 --control /tmp/ctlk /dev/vdd /dev/vde /dev/vdf >/dev/null 2>/tmp/k2.err &
kpid=$!
upb1 && say "retaken $(grep -c 'removed ublk device 1, left behind by a server that died' /tmp/k2.err) $(blockdev --getsize64 /dev/ublkb1)"
kill -TERM $kpid
wait $kpid
say "kexit $?"
cat /tmp/serve.err /tmp/k1.err /tmp/k2.err >&2
exit 0
GUEST
rc=$?
get() { sed -n "s/^$1 //p" "$d/guest.out" | head -n 1; }
if [ $rc -ne 0 ] || grep -q "^no-device" "$d/guest.out"; then
    t_fail "guest ran uraid serve --ublk (rc $rc)" "$(cat "$d/guest.out" "$d/guest.err" | tail -n 6 | tr '\n' ' ')"
    t_finish; exit 1
fi
t_expect "serve --ublk printed /dev/ublkb0" [ "$(get printed)" = /dev/ublkb0 ]
t_expect "a second serve --ublk --id 0 is refused in one line (exit 1)" [ "$(get taken)" = "rc=1 1 1" ]
t_expect "blockdev --getsize64 = array size ($size)" [ "$(get size)" = "$size" ]
t_expect "minimum_io_size = chunk ($chunk)" [ "$(get minimum_io_size)" = $chunk ]
t_expect "optimal_io_size = chunk x $data ($((chunk * data)))" [ "$(get optimal_io_size)" = $((chunk * data)) ]
t_expect "physical_block_size 4096, logical 512" [ "$(get physical_block_size) $(get logical_block_size)" = "4096 512" ]
t_expect "O_DIRECT pattern reads back the same" [ "$(get pattern)" = same ]
t_expect "4 parallel O_DIRECT writers in 4 KiB requests: all 4 read back the same" [ "$(get parallel)" = 4 ]
t_expect "a write-back cache with FUA (got '$(get cache)')" [ "$(get cache)" = "write back fua=1" ]
t_expect "blkdiscard of 1 MiB: it reads back as zeros (got '$(get discard)' non-zero bytes)" [ "$(get discard)" = 0 ]
t_expect "mkfs.ext4 chose RAID stride $((chunk / 4096)) (got '$(get stride)')" [ "$(get stride)" = $((chunk / 4096)) ]
t_expect "mkfs.ext4 chose RAID stripe width $((chunk * data / 4096)) (got '$(get stripe)')" [ "$(get stripe)" = $((chunk * data / 4096)) ]
t_expect "mount, write a file, umount; the file reads back after a remount (degraded)" [ "$(get umount) $(get file)" = "ok same" ]
t_expect "e2fsck -fn clean (degraded)" [ "$(get fsck)" = clean ]
t_expect "uraid status over the control socket: [UUU]" [ "$(get status)" = 1 ]
t_expect "uraid fail /dev/vdb over the control socket: [U_U]" [ "$(get failed)" = 1 ]
t_expect "uraid stop: the server exits 0" [ "$(get exit)" = 0 ]
t_expect "the device is gone after the stop (/sys/block/ublkb0, /dev/ublkc0)" [ "$(get gone)" = yes ]
t_expect "a server killed with SIGKILL leaves /dev/ublkc1 behind" [ "$(get leftover)" = yes ]
ksize=$($URAID detail "$d/k0.img" "$d/k1.img" "$d/k2.img" | awk '/Array Size/ {print $4 * 1024; exit}')
t_expect "serve --ublk --id 1 then removes the leftover, says so, and serves ($ksize bytes)" [ "$(get retaken)" = "1 $ksize" ]
t_expect "... and stops cleanly on SIGTERM (exit 0)" [ "$(get kexit)" = 0 ]
host=$($URAID cat "$d/m0.img" "$d/m1.img" "$d/m2.img" 2>/dev/null | sha256sum | cut -d' ' -f1)
[ -n "$(get sha)" ] || host="(the guest read nothing)"
t_expect "host uraid cat of the members = what the guest read from the degraded /dev/ublkb0" [ "$host" = "$(get sha)" ]
t_expect "the array was closed clean" sh -c "$URAID detail '$d/m0.img' '$d/m1.img' '$d/m2.img' | grep -q 'State : clean'"
[ "$t_failed" -eq 0 ] || { echo "--- guest output"; cat "$d/guest.out"; echo "--- guest stderr"; tail -20 "$d/guest.err"; }
t_finish
