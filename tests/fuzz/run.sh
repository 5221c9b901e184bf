#!/bin/sh
# Builds the lib/meta decoders and the uraid.conf parser (lib/conf) under
# libFuzzer + ASan + UBSan and fuzzes them for SECONDS seconds in all
# (default 60, a third each): fuzz_superblock (md v1.x, bad-block logs,
# bitmap headers) from the md fixtures (../shared/fixtures/md and the 1.0/1.1
# members of tests/fixtures/md-formats), fuzz_super0 (md 0.90) from the 0.90
# members of tests/fixtures/md-formats, fuzz_conf from uraid.conf examples.
# Last line: "fuzz_superblock: 3 passed, 0 failed" (one per target).
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
    tests/fuzz/fuzz_superblock.c lib/meta/superblock.c lib/meta/badblocks.c lib/meta/bitmap.c lib/log.c \
    -o "$OUT/fuzz_superblock" || fail "build failed"
clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Iinclude -Ilib -D_GNU_SOURCE \
    tests/fuzz/fuzz_super0.c lib/meta/super0.c lib/meta/superblock.c lib/log.c \
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
# inputs that once failed (tests/fuzz/regress0: a 0.90 member whose own
# descriptor was empty read back as slot 0's), run again every time
cp tests/fuzz/regress0/* "$OUT/corpus0/" || fail "cannot copy tests/fuzz/regress0"

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
# an mdadm.conf-like file; a third of the time, as its own target.
clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Iinclude -D_GNU_SOURCE tests/fuzz/fuzz_conf.c lib/conf/conf.c -o "$OUT/fuzz_conf" || fail "build of fuzz_conf failed"
mkdir -p "$OUT/conf_corpus"
printf 'DEVICE /srv/*.img nbd+unix:///x?socket=/run/x.sock\nARRAY /dev/md/data metadata=1.2 UUID=3aaa0122:29827cfa:5331ad66:ca767371\n   name=host:data level=raid5 num-devices=4 spares=1 devices=/a,/b\n# c\nMAILADDR root\nPROGRAM /bin/true\nMONITORDELAY 5\n' \
    >"$OUT/conf_corpus/seed1"
printf "ARRAY name='a b' devices=\"/x y\"\n\tuuid=00000000-0000-0000-0000-000000000001\nCREATE owner=root\nmai a@b\nMAILFROM x <y>\n" >"$OUT/conf_corpus/seed2"
conf_seconds=$(( (SECONDS_TO_RUN + 2) / 3 ))
(cd "$OUT" && ./fuzz_conf -max_total_time="$conf_seconds" -max_len=8192 -timeout=10 -print_final_stats=1 \
    conf_corpus) >"$OUT/fuzz_conf.log" 2>&1 \
    || { tail -n 20 "$OUT/fuzz_conf.log"; fail "fuzz_conf failed; see $OUT/fuzz_conf.log and $OUT/crash-*"; }
tail -n 3 "$OUT/fuzz_conf.log"
SECONDS_TO_RUN=$(( SECONDS_TO_RUN > 2 * conf_seconds ? (SECONDS_TO_RUN - conf_seconds) / 2 : 1 )) # each of the two below

passed=1 # fuzz_conf, above (a failure there exits)
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
