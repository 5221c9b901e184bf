#!/bin/sh
# make demo: what uraid does today, explained as it runs.
set -eu
cd "$(dirname "$0")/.."
U=build/uraid

say() { printf '\n== %s\n' "$*"; }

say "uraid computes RAID-5 parity (P, an XOR) and RAID-6 parity (P and Q over GF(2^8)) exactly as Linux md does."
echo "   It carries several implementations of the same math and picks the fastest for this CPU at start-up."
say "Step 1: the self-test. Every implementation this CPU can run is compared with a slow, obviously-correct"
echo "   byte-at-a-time reference on many stripe shapes, including rebuilding every pair of lost blocks."
$U -v selftest

say "Step 2: the benchmark (k = 8 data chunks of 64 KiB; 'cache' reuses one stripe, 'dram' streams over 1 GiB)."
echo "   Figures are GB/s of input per CPU-second; r and m compare with a plain read and memcpy of the same buffers."
$U bench parity --k 8 --chunk 64K

say "Step 3: an md-compatible RAID-6 array of six 64 MiB sparse files, created and filled by uraid."
work=$(mktemp -d /tmp/uraid-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
for i in 0 1 2 3 4 5; do truncate -s 64M "$work/d$i.img"; done
$U create --level 6 --raid-devices 6 --chunk 64K --name demo "$work"/d?.img
size=$(( $($U detail "$work"/d?.img | awk '/Array Size/ {print $4}') * 1024 ))
head -c "$size" /dev/urandom > "$work/data"
$U write "$work"/d?.img < "$work/data"
echo "   wrote $size bytes of random data; sha256 $(sha256sum < "$work/data" | cut -c1-16)..."
$U detail "$work"/d?.img | sed -n '/Raid Level/p;/Array Size/p;/State :/p;/Layout/p;/Status/p'

say "Step 4: the members carry Linux md's own superblock format, so mdadm reads them:"
if command -v mdadm >/dev/null 2>&1; then
    mdadm --examine "$work/d2.img" | sed -n '/Raid Level/p;/Layout/p;/Device Role/p;/Array State/p;/Checksum/p'
else
    echo "   (mdadm is not installed; 'make check' installs it and compares every field)"
fi

say "Step 5: lose two of the six members. RAID-6 rebuilds their chunks from P and Q on every read:"
got=$($U cat "$work/d5.img" "$work/d0.img" "$work/d3.img" "$work/d1.img" | sha256sum | cut -c1-16)
echo "   read back without d2 and d4: sha256 $got..."
if [ "$got" = "$(sha256sum < "$work/data" | cut -c1-16)" ]; then echo "   identical to what was written."; else echo "   MISMATCH"; exit 1; fi

say "Done. 'uraid bench parity' without options runs the full table (k = 4, 8, 16; chunks 4K, 64K, 512K)."
