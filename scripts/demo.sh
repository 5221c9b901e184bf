#!/bin/sh
# make demo: uraid's main job in about a minute, explained as it runs.
set -eu
cd "$(dirname "$0")/.."
U=$PWD/build/uraid

say() { printf '\n== %s\n' "$*"; }

work=$(mktemp -d /tmp/uraid-demo.XXXXXX)
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

say "uraid is a software RAID engine in user space that keeps Linux md's on-disk format."
echo "   First it checks its parity routines (RAID-5's XOR, RAID-6's P+Q over GF(2^8)) against a"
echo "   slow, obviously-correct reference, and picks the fastest one for this CPU."
$U selftest

say "Step 1: a RAID-6 array of six 256 MiB sparse files (any two members may fail), with md's"
echo "   write-intent bitmap: after a crash only the regions being written are resynced."
for i in 0 1 2 3 4 5; do truncate -s 256M "$work/disk$i.img"; done
$U create --level 6 --raid-devices 6 --chunk 64K --bitmap internal --bitmap-chunk 4M --name demo "$work"/disk?.img
$U detail "$work"/disk?.img | sed -n '/Raid Level/p;/Array Size/p;/Layout/p;/Status/p'

say "Step 2: serve it as a network block device (NBD) through nbdkit, with a control socket,"
echo "   and a program that hears every event (what mdadm --monitor would mail an administrator)."
sock="$work/nbd.sock"
ctl="$work/control.sock"
printf '#!/bin/sh\necho "   [event] $1 ${3:+$(basename "$3") }- $URAID_DETAIL" >>"%s"\n' "$work/events.log" >"$work/event.sh"
chmod +x "$work/event.sh"
$U serve --socket "$sock" --control "$ctl" --event-cmd "$work/event.sh" "$work"/disk?.img 2>"$work/server.log" &
server=$!
i=0
until nbdinfo --size "nbd+unix:///?socket=$sock" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "the server did not start:"; cat "$work/server.log"; exit 1; }
    sleep 0.1
done
echo "   nbdinfo sees a disk of $(nbdinfo --size "nbd+unix:///?socket=$sock") bytes."

say "Step 3: copy 300 MiB of random data onto it with nbdcopy (what qemu or mkfs would do)."
head -c 300M /dev/urandom > "$work/data"
want=$(sha256sum < "$work/data" | cut -d' ' -f1)
nbdcopy "$work/data" "nbd+unix:///?socket=$sock"
echo "   written; sha256 of the data: ${want%????????????????????????????????????????????????}..."

say "Step 4: two disks fail. We tell the running server, as an administrator would."
$U fail --control "$ctl" "$work/disk1.img"
$U fail --control "$ctl" "$work/disk4.img"
$U status --control "$ctl" | head -4

say "Step 5: read everything back through NBD. Every chunk on the failed disks is rebuilt from P and Q."
nbdcopy "nbd+unix:///?socket=$sock" - | head -c 300M > "$work/back"
got=$(sha256sum < "$work/back" | cut -d' ' -f1)
if [ "$got" = "$want" ]; then
    echo "   read back: sha256 ${got%????????????????????????????????????????????????}... identical to what was written."
else
    echo "   MISMATCH: $got"
    exit 1
fi

say "Step 6: the status of the running array (like /proc/mdstat and mdadm --detail), and the events so far:"
$U status --control "$ctl"
cat "$work/events.log" 2>/dev/null

say "Step 7: two new disks arrive. 'uraid add' hands them to the server, which rebuilds onto them by itself."
for i in 6 7; do truncate -s 256M "$work/disk$i.img"; done
wait_whole() { # until the status line shows $1, printing the progress line now and then
    n=0
    until $U status --control "$ctl" | grep -q "$1"; do
        [ $((n % 5)) -eq 0 ] && $U status --control "$ctl" | grep -m1 "recovery =" | sed 's/^/   /' || true
        n=$((n + 1))
        [ $n -lt 600 ] || { echo "   the rebuild did not finish"; exit 1; }
        sleep 0.2
    done
}
$U add --control "$ctl" "$work/disk6.img"
wait_whole "\[6/5\]"
$U status --control "$ctl" | head -1 | sed 's/^/   /'
$U add --control "$ctl" "$work/disk7.img"
wait_whole "\[6/6\]"
$U status --control "$ctl" | sed -n '1p;/background:/p' | sed 's/^/   /'

say "Step 8: verify the whole array in the background, like md's 'check' (parity against data):"
$U check --control "$ctl" --wait | sed 's/^/   /'
sleep 0.2 # the event program runs in the background
echo "   events since the failures:"
tail -n +3 "$work/events.log" 2>/dev/null

say "Step 9: stop the server. The array is closed cleanly; Linux md's own mdadm reads the members:"
$U stop --control "$ctl"
wait "$server" 2>/dev/null || true
server=""
if command -v mdadm >/dev/null 2>&1; then
    mdadm --examine "$work/disk6.img" | sed -n '/Raid Level/p;/Internal Bitmap/p;/^ *State :/p;/Device Role/p;/Events/p;/Array State/p'
fi
echo "   its write-intent bitmap after the clean stop (nothing left to resync):"
$U examine "$work/disk6.img" | sed -n '/Chunksize/p;/Bitmap :/p'

say "Step 10: how fast the parity routines are here (k = 8 data chunks of 64 KiB):"
$U bench parity --k 8 --chunk 64K

say "Done. 'make check' runs every test; README.md lists the commands."
