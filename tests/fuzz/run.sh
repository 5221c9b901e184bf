#!/bin/sh
# Builds the lib/meta decoders under libFuzzer + ASan + UBSan and fuzzes them
# for SECONDS seconds each (default 60): fuzz_superblock (md v1.x, bad-block
# logs, bitmap headers) from the md fixtures (../shared/fixtures/md and the
# 1.0/1.1 members of tests/fixtures/md-formats), fuzz_super0 (md 0.90) from
# the 0.90 members of tests/fixtures/md-formats.
# Last line: "fuzz_superblock: 2 passed, 0 failed" (one per target).
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
clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Iinclude -Ilib -D_GNU_SOURCE \
    tests/fuzz/fuzz_super0.c lib/meta/super0.c lib/meta/superblock.c \
    -o "$OUT/fuzz_super0" || fail "build of fuzz_super0 failed"
mkdir -p "$OUT/corpus0"
FMT=tests/fixtures/md-formats
for xz in "$FMT"/*/*.img.xz; do
    [ -f "$xz" ] || fail "fixtures missing at $FMT"
    name=$(echo "$xz" | sed 's|.*/md-formats/||; s|/|_|g; s|\.img\.xz$||')
    img="$OUT/seed.img"
    xz -dc "$xz" > "$img" || fail "cannot unpack $xz"
    case $name in
        k-v090*) dd if="$img" of="$OUT/corpus0/$name.sb" bs=512 skip=8064 count=8 2>/dev/null ;;
        l-v10*) dd if="$img" of="$OUT/corpus/$name.sb" bs=512 skip=8176 count=8 2>/dev/null ;;
        *) dd if="$img" of="$OUT/corpus/$name.sb" bs=512 count=8 2>/dev/null ;;
    esac
    rm -f "$img"
done

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

passed=0
failed=0
for target in fuzz_superblock:corpus fuzz_super0:corpus0; do
    bin=${target%%:*}
    corpus=${target#*:}
    log="$OUT/$bin.log"
    (cd "$OUT" && ./"$bin" -max_total_time="$SECONDS_TO_RUN" -max_len=4200 -timeout=10 \
        -print_final_stats=1 "$corpus") > "$log" 2>&1
    rc=$?
    tail -n 15 "$log"
    if [ $rc -ne 0 ]; then
        echo "$bin: failed (exit $rc); see $log and $OUT/crash-*" >&2
        failed=$((failed + 1))
    else
        passed=$((passed + 1))
    fi
done
echo "fuzz_superblock: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
