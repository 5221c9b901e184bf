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

say "Done. 'uraid bench parity' without options runs the full table (k = 4, 8, 16; chunks 4K, 64K, 512K)."
