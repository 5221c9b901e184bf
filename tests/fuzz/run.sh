#!/bin/sh
# Builds the lib/meta decoders and the uraid.conf parser (lib/conf) under
# libFuzzer + ASan + UBSan and fuzzes them for SECONDS seconds (default 60,
# half for each), starting from the superblocks, bad-block
# logs and bitmap headers of the md fixtures (../shared/fixtures/md).
# Last line: "fuzz_superblock: 1 passed, 0 failed" or "0 passed, 1 failed".
# A crash input is kept in build/fuzz/ (crash-*) for replay:
#   build/fuzz/fuzz_superblock build/fuzz/crash-...
set -u
cd "$(dirname "$0")/../.."
SECONDS_TO_RUN=${1:-60}
OUT=build/fuzz
FIX=../shared/fixtures/md
mkdir -p "$OUT/corpus"

fail() {
    echo "fuzz_superblock: $*" >&2
    echo "fuzz_superblock: 0 passed, 1 failed"
    exit 1
}

command -v clang >/dev/null 2>&1 || fail "clang not found (scripts/deps.sh installs it)"
clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Iinclude -Ilib -D_GNU_SOURCE \
    tests/fuzz/fuzz_superblock.c lib/meta/superblock.c lib/meta/badblocks.c lib/meta/bitmap.c \
    -o "$OUT/fuzz_superblock" || fail "build failed"

# Seeds: from every fixture member, the 4 KiB superblock, the bad-block log
# page (sector 24) and the bitmap page (sector 16) when present.
[ -d "$FIX" ] || fail "fixtures missing at $FIX"
for xz in "$FIX"/*/*.img.xz; do
    name=$(echo "$xz" | sed 's|.*/fixtures/md/||; s|/|_|g; s|\.img\.xz$||')
    img="$OUT/seed.img"
    xz -dc "$xz" > "$img" || fail "cannot unpack $xz"
    dd if="$img" of="$OUT/corpus/$name.sb" bs=4096 skip=1 count=1 2>/dev/null
    dd if="$img" of="$OUT/corpus/$name.bbl" bs=512 skip=24 count=8 2>/dev/null
    dd if="$img" of="$OUT/corpus/$name.bitmap" bs=512 skip=16 count=8 2>/dev/null
    rm -f "$img"
done

# The uraid.conf parser: seeded with the examples of docs/uraid.conf.5 and
# an mdadm.conf-like file; half of the time, as its own target.
clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Iinclude -D_GNU_SOURCE tests/fuzz/fuzz_conf.c lib/conf/conf.c -o "$OUT/fuzz_conf" || fail "build of fuzz_conf failed"
mkdir -p "$OUT/conf_corpus"
printf 'DEVICE /srv/*.img nbd+unix:///x?socket=/run/x.sock\nARRAY /dev/md/data metadata=1.2 UUID=3aaa0122:29827cfa:5331ad66:ca767371\n   name=host:data level=raid5 num-devices=4 spares=1 devices=/a,/b\n# c\nMAILADDR root\nPROGRAM /bin/true\nMONITORDELAY 5\n' \
    >"$OUT/conf_corpus/seed1"
printf "ARRAY name='a b' devices=\"/x y\"\n\tuuid=00000000-0000-0000-0000-000000000001\nCREATE owner=root\nmai a@b\nMAILFROM x <y>\n" >"$OUT/conf_corpus/seed2"
conf_seconds=$(( (SECONDS_TO_RUN + 1) / 2 ))
(cd "$OUT" && ./fuzz_conf -max_total_time="$conf_seconds" -max_len=8192 -timeout=10 -print_final_stats=1 \
    conf_corpus) >"$OUT/fuzz_conf.log" 2>&1 \
    || { tail -n 20 "$OUT/fuzz_conf.log"; fail "fuzz_conf failed; see $OUT/fuzz_conf.log and $OUT/crash-*"; }
tail -n 3 "$OUT/fuzz_conf.log"
SECONDS_TO_RUN=$(( SECONDS_TO_RUN - conf_seconds > 1 ? SECONDS_TO_RUN - conf_seconds : 1 ))

log="$OUT/fuzz.log"
(cd "$OUT" && ./fuzz_superblock -max_total_time="$SECONDS_TO_RUN" -max_len=4200 -timeout=10 \
    -print_final_stats=1 corpus) > "$log" 2>&1
rc=$?
tail -n 15 "$log"
if [ $rc -ne 0 ]; then
    echo "fuzz_superblock: failed (exit $rc); see $log and $OUT/crash-*" >&2
    echo "fuzz_superblock: 0 passed, 1 failed"
    exit 1
fi
echo "fuzz_superblock: 1 passed, 0 failed"
