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
#     --id or --queues without --ublk, a bad --id or --depth, --recover
#     without --id, a taken --id, a kernel without ublk;
#   - --queues 1 --depth 8 make one hardware queue of 8 tags;
#   - a server killed with SIGKILL in the middle of writes leaves the disk
#     (ublk's user recovery): the writer waits; serve without --recover is
#     refused naming it, and so is --recover with another array's members;
#     serve --ublk --id N --recover takes the device back,
#     the writes finish, and all of them read back (in the guest and with the
#     host's uraid cat);
#   - the kernel's own NBD client in the same guest: `uraid serve --socket`
#     (nbdkit with the uraid plugin) and `qemu-nbd --connect /dev/nbd0`;
#     mkfs.ext4, mount, write, remount and read back, e2fsck clean; the host's
#     `uraid cat` of those members gives the bytes the guest read from /dev/nbd0.
# Every wait in the guest is bounded: a hang fails the test naming what hung,
# with the kernel stacks of the server's threads and of every task in D state.
# Without a 6.12 guest (no Debian archive to fetch the kernel from, or its
# build fails) every check is reported as FAILED with the reason: a skip is
# never a pass.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh

ORACLE=$(pwd)/tests/lib/oracle/md-oracle # one more run when QEMU dies in the firmware
export MDORACLE_HOME="${MDORACLE612_HOME:-$HOME/.cache/md-oracle-612}" MDORACLE_ACCEL="${MDORACLE_ACCEL:-tcg}"
d=$t_tmp
oracle_build --kernel-pkg 6.12 >"$d/build.log" 2>&1 ||
    { t_fail "SKIPPED (counted as failed): no Linux 6.12 guest with ublk" "$(tail -3 "$d/build.log")"; t_finish; exit 1; }
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
for i in 0 1 2; do truncate -s 24M "$d/n$i.img"; done
$URAID create --level 5 --raid-devices 3 --chunk 64K --assume-clean "$d/n0.img" "$d/n1.img" "$d/n2.img" >/dev/null 2>&1
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
refuse "serve --queues without --ublk: refused" 2 "goes with --ublk" --queues 2
refuse "serve --ublk --depth 5000: refused" 2 "not a count from 1 to 4096" --ublk --depth 5000
refuse "serve --ublk --recover without --id: refused" 2 "give --id N" --ublk --recover
if [ ! -e /dev/ublk-control ]; then
    refuse "serve --ublk on a kernel without ublk (this host): refused, naming ublk_drv" 1 "modprobe ublk_drv" --ublk
fi

files=""
for f in mbcache jbd2 crc16 ext4; do files="$files --file $d/$f.ko"; done
# the NBD part: nbdkit with the uraid plugin (found next to /usr/bin/uraid in
# the guest) and qemu-nbd (qemu-utils: md-oracle's build.sh installs QEMU
# without it, so a fresh machine gets it here)
if ! command -v qemu-nbd >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends qemu-utils \
        >"$d/qemu-utils.log" 2>&1 || true
fi
nbdbins=""
for p in "$(dirname "$URAID")/nbdkit-uraid-plugin.so" "$(command -v nbdkit)" "$(command -v qemu-nbd)"; do
    [ -n "$p" ] && [ -e "$p" ] && nbdbins="$nbdbins --bin $p"
done
# shellcheck disable=SC2086
timeout 760 "$ORACLE" --timeout 700 --console "$d/console.log" --mem 512M --bin "$URAID" --bin /usr/sbin/mke2fs --bin /usr/sbin/dumpe2fs \
    --bin /usr/sbin/e2fsck --file /etc/mke2fs.conf $files $nbdbins \
    --disk "$d/m0.img" --disk "$d/m1.img" --disk "$d/m2.img" \
    --disk "$d/k0.img" --disk "$d/k1.img" --disk "$d/k2.img" \
    --disk "$d/n0.img" --disk "$d/n1.img" --disk "$d/n2.img" -- - >"$d/guest.out" 2>"$d/guest.err" <<'GUEST'
say() { echo "$*"; }
exec 3>&1
# Every wait is bounded: a hang says "hang WHAT" and prints the kernel
# stacks of the server's threads and of every task in D state.
hang() {
    echo "hang $*" >&3
    for _t in /proc/[0-9]*/task/[0-9]*; do
        _c=$(cat $_t/comm 2>/dev/null) _s=$(sed -n 's/^State:\s*\(.\).*/\1/p' $_t/status 2>/dev/null)
        case "$_s:$_c" in D:*|?:uraid*|?:iou-*) ;; *) continue ;; esac
        _k=$(sed 's/^\[<0>\] //; s/+0x.*//' $_t/stack 2>/dev/null | grep -v -e ret_from_fork -e entry_SYSCALL -e do_syscall | head -n 14 | tr '\n' ' ')
        echo "stack ${_t#/proc/} $_c $_s: $_k" >&3
    done
}
# lim SECONDS CMD...: CMD with a time limit
lim() { _ls=$1; shift; timeout "$_ls" "$@"; _lr=$?; case $_lr in 124|143) hang "$*";; esac; return $_lr; }
alive() { _st=$(cut -d' ' -f3 /proc/$1/stat 2>/dev/null); [ -n "$_st" ] && [ "$_st" != Z ]; }
# reap PID SECONDS: wait for a background process, at most SECONDS
reap() {
    _ri=0
    while alive "$1" && [ $_ri -lt $(($2 * 10)) ]; do sleep 0.1; _ri=$((_ri + 1)); done
    if alive "$1"; then hang "process $1 still running after $2 s"; kill -9 "$1"; return 255; fi
    wait "$1"
}
cp /mnt/files/mke2fs.conf /etc/mke2fs.conf
for m in mbcache jbd2 crc16 ext4; do insmod /mnt/files/$m.ko || say "insmod-failed $m"; done
uraid serve --ublk --id 0 --control /tmp/ctl /dev/vda /dev/vdb /dev/vdc >/tmp/serve.out 2>/tmp/serve.err &
pid=$!
# printed OUT DEV: the server printed its device, i.e. its START_DEV returned
# (the node appears earlier, while START_DEV still reads the partition table)
printed() {
    _pi=0
    while ! grep -q "$2" "$1" 2>/dev/null && [ $_pi -lt 900 ]; do sleep 0.1; _pi=$((_pi + 1)); done
    grep -q "$2" "$1" || { hang "serve --ublk did not print $2 within 90 s"; return 1; }
}
printed /tmp/serve.out /dev/ublkb0 || { say "no-device"; cat /tmp/serve.err; exit 0; }
say "printed $(cat /tmp/serve.out)"
lim 60 uraid serve --ublk --id 0 --control /tmp/ctl2 /dev/vda /dev/vdb /dev/vdc >/dev/null 2>/tmp/taken.err
say "taken rc=$? $(wc -l < /tmp/taken.err) $(grep -c 'ublk device 0 exists already and its server runs' /tmp/taken.err)"
say "size $(lim 30 blockdev --getsize64 /dev/ublkb0)"
for f in minimum_io_size optimal_io_size physical_block_size logical_block_size; do
    say "$f $(cat /sys/block/ublkb0/queue/$f)"
done
mdpattern -s 7 -n 4M | lim 120 dd of=/dev/ublkb0 bs=64K seek=3 oflag=direct 2>/dev/null
say "pattern $(lim 120 dd if=/dev/ublkb0 bs=64K skip=3 count=64 iflag=direct 2>/dev/null | mdpattern -s 7 -n 4M -c >/dev/null 2>&1 && echo same || echo differs)"
# four writers at once, in 4 KiB requests: several requests in flight on each queue
writers=""
for k in 1 2 3 4; do
    mdpattern -s $((20 + k)) -n 1M | lim 120 dd of=/dev/ublkb0 bs=4K seek=$((2048 + k * 256)) oflag=direct 2>/dev/null &
    writers="$writers $!"
done
for w in $writers; do reap "$w" 150; done
ok=0
for k in 1 2 3 4; do
    lim 120 dd if=/dev/ublkb0 bs=4K skip=$((2048 + k * 256)) count=256 iflag=direct 2>/dev/null | mdpattern -s $((20 + k)) -n 1M -c >/dev/null 2>&1 && ok=$((ok + 1))
done
say "parallel $ok"
say "cache $(cat /sys/block/ublkb0/queue/write_cache) fua=$(cat /sys/block/ublkb0/queue/fua)"
# discard zeroes: the 1 MiB the first writer wrote reads back as zeros
if lim 120 blkdiscard -o $((9 * 1048576)) -l 1048576 /dev/ublkb0 2>/tmp/discard.err; then
    say "discard $(lim 120 dd if=/dev/ublkb0 bs=64K skip=144 count=16 iflag=direct 2>/dev/null | tr -d '\000' | wc -c)"
else
    say "discard failed $(cat /tmp/discard.err)"
fi
lim 300 /usr/bin/mke2fs -F -q -t ext4 -b 4096 /dev/ublkb0 >/tmp/mkfs.out 2>&1 || { say "mkfs-failed"; cat /tmp/mkfs.out; }
say "stride $(lim 60 /usr/bin/dumpe2fs -h /dev/ublkb0 2>/dev/null | sed -n 's/^RAID stride: *//p')"
say "stripe $(lim 60 /usr/bin/dumpe2fs -h /dev/ublkb0 2>/dev/null | sed -n 's/^RAID stripe width: *//p')"
mkdir -p /mnt/x
if lim 120 mount -t ext4 /dev/ublkb0 /mnt/x; then
    mdpattern -s 9 -n 3M > /mnt/x/file
    lim 120 sync
    lim 120 umount /mnt/x && say "umount ok"
    say "status $(lim 30 uraid status --control /tmp/ctl 2>&1 | grep -c UUU)"
    # the file system goes on over a degraded array: its reads are rebuilt from parity
    lim 30 uraid fail --control /tmp/ctl /dev/vdb >/dev/null 2>&1 && say "failed $(lim 30 uraid status --control /tmp/ctl 2>&1 | grep -c 'U_U')"
    lim 120 mount -t ext4 -o ro /dev/ublkb0 /mnt/x && say "file $(mdpattern -s 9 -n 3M -c < /mnt/x/file >/dev/null 2>&1 && echo same || echo differs)"
    lim 120 umount /mnt/x
else
    say "mount-failed"
fi
lim 300 /usr/bin/e2fsck -fn /dev/ublkb0 >/tmp/fsck.out 2>&1 && say "fsck clean" || { say "fsck rc=$?"; cat /tmp/fsck.out; }
say "sha $(lim 300 dd if=/dev/ublkb0 bs=1M iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)"
lim 30 uraid stop --control /tmp/ctl >/dev/null 2>&1 || say "stop-refused"
reap $pid 120
say "exit $?"
i=0
while [ -e /sys/block/ublkb0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -e /sys/block/ublkb0 ] || [ -e /dev/ublkc0 ] && say "gone no" || say "gone yes"
# ---- SIGKILL in the middle of writes, and user recovery: the disk stays,
# the writer waits, serve --recover takes the device back and the writes
# finish. The server is killed once it has printed its device: a server
# killed while its START_DEV still reads the partition table wedges Linux
# 6.12's ublk for good (START_DEV holds the device's mutex and waits for a
# read the dead server's queues never answer; the hung-task detector then
# names uraid and its iou-wrk thread), which is the kernel's to fix.
uraid serve --ublk --id 1 --queues 1 --depth 8 --control /tmp/ctlk /dev/vdd /dev/vde /dev/vdf >/tmp/k1.out 2>/tmp/k1.err &
kpid=$!
printed /tmp/k1.out /dev/ublkb1
say "mq $(ls /sys/block/ublkb1/mq 2>/dev/null | wc -l) $(cat /sys/block/ublkb1/mq/0/nr_tags 2>/dev/null)"
# 64 writes of 64 KiB, one dd each: the kill comes after the 8th or so
( for k in $(seq 0 63); do
    mdpattern -s 31 -o $((k * 65536)) -n 64K | dd of=/dev/ublkb1 bs=64K seek=$k oflag=direct 2>/dev/null || exit 1
    echo $k > /tmp/wprog
  done ) &
wpid=$!
i=0
while [ "$(cat /tmp/wprog 2>/dev/null || echo 0)" -lt 8 ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
kill -9 $kpid
say "killed at $(cat /tmp/wprog 2>/dev/null)"
reap $kpid 120
sleep 1
say "midwrite $(alive $wpid && [ "$(cat /tmp/wprog)" -lt 63 ] && echo yes || echo no)"
say "kept $([ -e /sys/block/ublkb1 ] && [ -b /dev/ublkb1 ] && echo yes || echo no)"
lim 60 uraid serve --ublk --id 1 --control /tmp/ctlk /dev/vdd /dev/vde /dev/vdf >/dev/null 2>/tmp/k2.err
say "plain rc=$? $(wc -l < /tmp/k2.err) $(grep -c 'serve it with --ublk --id 1 --recover' /tmp/k2.err)"
# the members of another array (another size) are refused before the driver is told anything
lim 60 uraid serve --ublk --id 1 --recover --control /tmp/ctlw /dev/vdg /dev/vdh /dev/vdi >/dev/null 2>/tmp/kw.err
say "wrongrec rc=$? $(wc -l < /tmp/kw.err) $(grep -c 'other members' /tmp/kw.err)"
uraid serve --ublk --id 1 --recover --control /tmp/ctlk /dev/vdd /dev/vde /dev/vdf >/tmp/k3.out 2>/tmp/k3.err &
kpid=$!
printed /tmp/k3.out /dev/ublkb1 && say "reprinted $(cat /tmp/k3.out) $(grep -c 'recovered (3 members, 1 queues of depth 8' /tmp/k3.err)"
reap $wpid 300
say "writer $? $(cat /tmp/wprog)"
say "recovered $(lim 60 dd if=/dev/ublkb1 bs=64K count=64 iflag=direct 2>/dev/null | mdpattern -s 31 -n 4M -c >/dev/null 2>&1 && echo same || echo differs)"
say "ksize $(lim 30 blockdev --getsize64 /dev/ublkb1)"
kill -TERM $kpid
reap $kpid 120
say "kexit $?"
i=0
while [ -e /sys/block/ublkb1 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
say "kgone $([ -e /sys/block/ublkb1 ] || [ -e /dev/ublkc1 ] && echo no || echo yes)"
# ---- the kernel's own NBD client over `uraid serve` (NBD through nbdkit):
# qemu-nbd --connect hands /dev/nbd0 to Linux's nbd driver
if [ -x /usr/bin/qemu-nbd ] && [ -x /usr/bin/nbdkit ]; then
    mkdir -p /var/lock /mnt/n
    uraid serve --socket /tmp/nbd.sock --control /tmp/ctln /dev/vdg /dev/vdh /dev/vdi >/dev/null 2>/tmp/nserve.err &
    npid=$!
    i=0
    while [ ! -S /tmp/nbd.sock ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    if lim 120 qemu-nbd --connect /dev/nbd0 -f raw 'nbd+unix:///?socket=/tmp/nbd.sock' 2>/tmp/qnbd.err; then
        i=0
        while [ "$(cat /sys/block/nbd0/size)" = 0 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
        say "nbdsize $(lim 30 blockdev --getsize64 /dev/nbd0)"
        lim 300 /usr/bin/mke2fs -F -q -t ext4 -b 4096 /dev/nbd0 >/tmp/nmkfs.out 2>&1 || { say "nbd-mkfs-failed"; cat /tmp/nmkfs.out; }
        if lim 120 mount -t ext4 /dev/nbd0 /mnt/n; then
            mdpattern -s 11 -n 5M > /mnt/n/file
            lim 120 umount /mnt/n && say "numount ok"
            lim 120 mount -t ext4 -o ro /dev/nbd0 /mnt/n && say "nfile $(mdpattern -s 11 -n 5M -c < /mnt/n/file >/dev/null 2>&1 && echo same || echo differs)"
            lim 120 umount /mnt/n
        else
            say "nbd-mount-failed"
        fi
        lim 300 /usr/bin/e2fsck -fn /dev/nbd0 >/tmp/nfsck.out 2>&1 && say "nfsck clean" || { say "nfsck rc=$?"; cat /tmp/nfsck.out; }
        say "nsha $(lim 300 dd if=/dev/nbd0 bs=1M iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)"
        lim 60 qemu-nbd --disconnect /dev/nbd0 >/dev/null 2>&1 && say "ndisconnect ok"
    else
        say "qemu-nbd-failed $(cat /tmp/qnbd.err)"
    fi
    kill -TERM $npid
    reap $npid 120
    say "nexit $?"
else
    say "no-qemu-nbd"
fi
cat /tmp/serve.err /tmp/k1.err /tmp/k2.err /tmp/k3.err /tmp/nserve.err >&2
exit 0
GUEST
rc=$?
get() { sed -n "s/^$1 //p" "$d/guest.out" | head -n 1; }
if [ $rc -ne 0 ] || grep -q "^no-device" "$d/guest.out"; then
    t_fail "guest ran uraid serve --ublk (rc $rc)" "$(cat "$d/guest.out" "$d/guest.err" | tail -n 6 | tr '\n' ' ')"
    echo "--- guest output"; cat "$d/guest.out"
    echo "--- guest kernel console"; grep -v '^\s*$' "$d/console.log" 2>/dev/null | tail -n 80
    t_finish; exit 1
fi
t_expect "no wait in the guest hit its limit (got: $(sed -n 's/^hang //p' "$d/guest.out" | tr '\n' ';'))" \
    sh -c "! grep -q '^hang ' '$d/guest.out'"
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
t_expect "serve --ublk --queues 1 --depth 8: 1 hardware queue of 8 tags (got '$(get mq)')" [ "$(get mq)" = "1 8" ]
t_expect "SIGKILL of the server during writes (after write $(get killed) of 64): the writer waits, neither done nor failed" \
    [ "$(get midwrite)" = yes ]
t_expect "... and /dev/ublkb1 stays (user recovery)" [ "$(get kept)" = yes ]
t_expect "serve --ublk --id 1 without --recover is refused in one line, naming --recover (exit 1)" [ "$(get plain)" = "rc=1 1 1" ]
t_expect "serve --ublk --id 1 --recover with another array's members is refused in one line (exit 1; got '$(get wrongrec)')" \
    [ "$(get wrongrec)" = "rc=1 1 1" ]
t_expect "serve --ublk --id 1 --recover takes it back as made (1 queue of depth 8) and prints /dev/ublkb1" \
    [ "$(get reprinted)" = "/dev/ublkb1 1" ]
t_expect "the writer then finishes all 64 writes (exit 0)" [ "$(get writer)" = "0 63" ]
t_expect "the recovered device reads back all 4 MiB written across the kill" [ "$(get recovered)" = same ]
ksize=$($URAID detail "$d/k0.img" "$d/k1.img" "$d/k2.img" | awk '/Array Size/ {print $4 * 1024; exit}')
t_expect "... with the array's size ($ksize)" [ "$(get ksize)" = "$ksize" ]
t_expect "the recovered server stops on SIGTERM (exit 0) and the device is gone" [ "$(get kexit) $(get kgone)" = "0 yes" ]
kdata=$($URAID cat "$d/k0.img" "$d/k1.img" "$d/k2.img" 2>/dev/null | head -c 4194304 | sha256sum | cut -d' ' -f1)
t_expect "host uraid cat of those members: the 4 MiB the writer wrote" [ "$kdata" = "$("$MDORACLE_HOME/out/mdpattern" -s 31 -n 4M | sha256sum | cut -d' ' -f1)" ]
host=$($URAID cat "$d/m0.img" "$d/m1.img" "$d/m2.img" 2>/dev/null | sha256sum | cut -d' ' -f1)
[ -n "$(get sha)" ] || host="(the guest read nothing)"
t_expect "host uraid cat of the members = what the guest read from the degraded /dev/ublkb0" [ "$host" = "$(get sha)" ]
t_expect "the array was closed clean" sh -c "$URAID detail '$d/m0.img' '$d/m1.img' '$d/m2.img' | grep -q 'State : clean'"
# the kernel's NBD client
if grep -q '^no-qemu-nbd' "$d/guest.out"; then
    t_fail "SKIPPED (counted as failed): kernel NBD client: no qemu-nbd or nbdkit on this machine (apt-get install qemu-utils nbdkit)"
else
    nsize=$($URAID detail "$d/n0.img" "$d/n1.img" "$d/n2.img" | awk '/Array Size/ {print $4 * 1024; exit}')
    t_expect "kernel NBD: qemu-nbd --connect /dev/nbd0 to uraid serve --socket; its size is the array's ($nsize, got '$(get nbdsize)'$(sed -n 's/^qemu-nbd-failed/: qemu-nbd failed/p' "$d/guest.out"))" \
        [ "$(get nbdsize)" = "$nsize" ]
    t_expect "kernel NBD: mkfs.ext4, mount, write 5 MiB, umount; the file reads back after a remount" [ "$(get numount) $(get nfile)" = "ok same" ]
    t_expect "kernel NBD: e2fsck -fn clean" [ "$(get nfsck)" = clean ]
    t_expect "kernel NBD: qemu-nbd --disconnect, then the server stops on SIGTERM (exit 0)" [ "$(get ndisconnect) $(get nexit)" = "ok 0" ]
    nhost=$($URAID cat "$d/n0.img" "$d/n1.img" "$d/n2.img" 2>/dev/null | sha256sum | cut -d' ' -f1)
    [ -n "$(get nsha)" ] || nhost="(the guest read nothing)"
    t_expect "kernel NBD: host uraid cat of the members = what the guest read from /dev/nbd0" [ "$nhost" = "$(get nsha)" ]
    t_expect "kernel NBD: the array was closed clean" sh -c "$URAID detail '$d/n0.img' '$d/n1.img' '$d/n2.img' | grep -q 'State : clean'"
fi
[ "$t_failed" -eq 0 ] || { echo "--- guest output"; cat "$d/guest.out"; echo "--- guest stderr"; tail -20 "$d/guest.err"
    echo "--- guest kernel console (blocked tasks, if any)"; grep -v '^\s*$' "$d/console.log" 2>/dev/null | tail -n 80; }
t_finish
