# Seed 004: software RAID-5 of 15 disks with a spare under bonnie++ and
# tiobench, healthy and degraded. Here beside btrfs raid5 on the same kind
# of simulated disks and the raw disks' limit; plus scenario 2: scattered
# unreadable chunks on every member, every byte still read.

# bonnie LABEL DIR PID: bonnie++ block write, rewrite, read (1 MiB chunks)
# -> data/bonnie.tsv: label, MB/s and %CP of each, daemon us/MB. Its seek
# test is off (-s SIZE:CHUNK:0): the report has no column for it, and on
# the simulated disks its 8192 random seeks took most of bonnie++'s time
# and most of the daemon CPU charged to the bytes moved. bonnie++
# 2.00a's -D opens only the write phase O_DIRECT (strace: rewrite and read
# reopen without it), so with far more RAM than the file its rewrite and
# read came from the page cache ("+++++"). A memory cgroup of half the file
# made btrfs raid5 degraded thrash for minutes; instead, while bonnie++
# runs, its file's clean pages are dropped every 0.2 s (dd iflag=nocache
# count=0: posix_fadvise DONTNEED of that file only), so what it reads
# comes from the array, as with a file of twice the RAM -- except on
# btrfs raid5 degraded, whose rewrite then reads so slowly that bonnie++
# ran past 12 minutes (its columns stay page-cache figures; the report
# says so).
bonnie() {
    b0=$(cpu_ticks "$3")
    case $1 in btrfs-degraded) nodrop=1 ;; *) nodrop=0 ;; esac
    ( [ "$nodrop" = 1 ] && exit 0
      while :; do
          for f in "$2"/Bonnie.*; do [ -f "$f" ] && dd if="$f" iflag=nocache count=0 2>/dev/null; done
          sleep 0.2
      done ) &
    dropper=$!
    timeout 1200 bonnie++ -d "$2" -s "$BON:1048576:0" -r $((BON / 2)) -n 0 -f -D -x 1 -q -u root -m "$1" \
        >"$W/bonnie-$1.csv" 2>"$W/bonnie-$1.err" || say "bonnie++ $1 failed: $(tail -n 1 "$W/bonnie-$1.err")"
    kill "$dropper" 2>/dev/null; wait "$dropper" 2>/dev/null || true
    b1=$(cpu_ticks "$3")
    tail -n 1 "$W/bonnie-$1.csv" | awk -F, -v l="$1" -v c="$((b1 - b0))" -v k="$TICK" -v mb="$BON" '
        # KB/s to MB/s; "+++++" is bonnie++ saying a test ran too briefly to time
        function mbs(x) { return x ~ /^[0-9.]+$/ ? sprintf("%.1f", x * 1.024 / 1e3) : (x ~ /\+/ ? "+++++" : "-") }
        function v(x) { return x ~ /^[0-9.]+$/ ? x : "-" }
        { printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\n", l, mbs($12), v($13), mbs($14), v($15),
                 mbs($18), v($19), c / k * 1e6 / (mb * 1.048576 * 4) }' >>"$OUT/data/bonnie.tsv"
}

# tio LABEL DIR PID: tiobench's four tests (sequential write and read in
# 1 MiB requests, random write and read of 4 KiB) for each thread count,
# the threads sharing TIO_MB -> data/tio.tsv
tio() {
    for t in $TIO_T; do
        sz=$((TIO_MB / t))
        c0=$(cpu_ticks "$3")
        set -- "$1" "$2" "$3" $(fio_run "tio-$1-w$t" --directory="$2" --name="t$t" --rw=write --bs=1M --direct=1 \
            --ioengine=psync --numjobs="$t" --size="${sz}M" --end_fsync=1)
        sw=$5
        set -- "$1" "$2" "$3" $(fio_run "tio-$1-r$t" --directory="$2" --name="t$t" --rw=read --bs=1M --direct=1 \
            --ioengine=psync --numjobs="$t" --size="${sz}M" --runtime="$T" --time_based)
        sr=$4
        set -- "$1" "$2" "$3" $(fio_run "tio-$1-rw$t" --directory="$2" --name="t$t" --rw=randwrite --bs=4K --direct=1 \
            --ioengine=psync --numjobs="$t" --size="${sz}M" --runtime="$T" --time_based --norandommap)
        rw=$5
        set -- "$1" "$2" "$3" $(fio_run "tio-$1-rr$t" --directory="$2" --name="t$t" --rw=randread --bs=4K --direct=1 \
            --ioengine=psync --numjobs="$t" --size="${sz}M" --runtime="$T" --time_based --norandommap)
        rr=$4 cl=$8
        c1=$(cpu_ticks "$3")
        printf '%s\t%s\t%.1f\t%.1f\t%.2f\t%.2f\t%.1f\n' "$1" "$t" "$sw" "$sr" "$rw" "$rr" "$cl" >>"$OUT/data/tio.tsv"
        rm -f "$2"/t"$t".*
    done
}

# scenario 2: the healthy array remounted with unreadable 64 KiB chunks on
# every member, no two in one stripe; a file written before is read back.
scenario2() {
    arr_create s2x15 5 15 1 64K "$M15"
    d=$W/s2x15
    mk=$(s_mark)
    arr_mount s2x15
    fs_ext4 s2x15 64 14
    head -c $((S2_MB * 1048576)) /dev/urandom >"$W/s2.ref"
    sha256sum "$W/s2.ref" | cut -d' ' -f1 >"$W/s2.sha"
    dd if="$W/s2.ref" of="$d/fs/s2.bin" bs=1M oflag=direct conv=fsync status=none
    rm -f "$W/s2.ref"
    s_undo_since "$mk"
    doff=$("$URAID" examine "$d/m0" 2>/dev/null | sed -n 's/^ *Data Offset : \([0-9]*\) sectors.*/\1/p')
    [ -n "$doff" ] || die "uraid examine $d/m0: no Data Offset"
    msize=$(bytes "$M15")
    rows=$(( (msize - doff * 512) / 65536 - 1 ))
    # one GNU ddrescue mapfile per member: '-' (bad) for its chunk rows,
    # '+' elsewhere (the badmap layer: README, "Bad sectors")
    : >"$W/s2.args"
    nbad=0
    i=0
    while [ $i -lt 15 ]; do
        awk -v first=$((i * 3)) -v rows="$rows" -v base=$((doff * 512)) -v size="$msize" '
            BEGIN { print "# scenario 2"; print "0x0 +"; pos = 0
                    for (r = first; r < rows; r += 45) { s = base + r * 65536
                        printf "0x%x 0x%x +\n", pos, s - pos; printf "0x%x 0x10000 -\n", s; pos = s + 65536; n++ }
                    printf "0x%x 0x%x +\n", pos, size - pos; print n > "/dev/stderr" }' \
            >"$W/s2-m$i.map" 2>"$W/s2-m$i.n"
        nbad=$((nbad + $(cat "$W/s2-m$i.n")))
        echo "--member-layer $d/m$i:badmap=$W/s2-m$i.map" >>"$W/s2.args"
        i=$((i + 1))
    done
    mk=$(s_mark)
    # shellcheck disable=SC2046
    arr_mount s2x15 $(cat "$W/s2.args")
    loop=$(cat "$d/loop")
    timeout 60 mount -o ro,noload "$loop" "$d/fs" || die "mount ext4 of s2x15 with unreadable chunks failed"
    s_push umount "$d/fs"
    set -- $(time_cpu "$(cat "$d/pid")" sha256sum "$d/fs/s2.bin")
    got=$(cut -d' ' -f1 "$W/last.out")
    s2mb=$(awk -v s="$1" -v mb="$S2_MB" 'BEGIN { printf "%.1f", mb * 1.048576 / s }')
    st=$("$URAID" status --control "$d/ctl" 2>&1 | grep -oE '\[[0-9]+/[0-9]+\] \[[U_]+\]' | head -n 1)
    "$URAID" status --control "$d/ctl" >"$W/s2.status" 2>&1 || true
    s_undo_since "$mk"
    rm -f "$d"/m*
    {
        echo "### Scenario 2: scattered unreadable chunks on every member"
        echo
        echo "A fresh array of the same shape, ext4 on it, remounted with $nbad unreadable 64 KiB chunks (\`--member-layer"
        echo "MEMBER:badmap=MAPFILE\`, a ddrescue map per member): on every one of the 15 members one chunk row in 45, no two in a"
        echo "stripe, over the whole member. A ${S2_MB} MiB file of random bytes written before is read"
        echo "back through ext4 (mounted read-only)."
        echo
        row "unreadable chunks" "file read MB/s" "sha256 as written" "array afterwards"
        sep 4
        if [ "$got" = "$(cat "$W/s2.sha")" ]; then ok=yes; else ok="NO (got $got)"; fi
        row "$nbad" "$s2mb" "$ok" "${st:-?}"
        echo
    } >"$OUT/parts/52-scenario2.md"
}

exp_r5_15() {
    : >"$OUT/data/bonnie.tsv"
    : >"$OUT/data/tio.tsv"
    arr_create r5x15 5 15 1 64K "$M15"
    d=$W/r5x15
    mk=$(s_mark)
    arr_mount r5x15
    fs_ext4 r5x15 64 14
    pid=$(cat "$d/pid")
    bonnie uraid "$d/fs" "$pid"
    tio uraid "$d/fs" "$pid"
    s_undo_since "$mk"
    # degraded: member 3 missing, the spare left out so nothing rebuilds
    mk=$(s_mark)
    AM_MEMBERS=$(tr ' ' '\n' <"$d/members" | grep -v -e '/m3$' -e '/m15$' | tr '\n' ' ')
    arr_mount r5x15
    AM_MEMBERS=""
    timeout 60 mount "$(cat "$d/loop")" "$d/fs" || die "mount ext4 of the degraded r5x15 failed"
    s_push umount "$d/fs"
    bonnie uraid-degraded "$d/fs" "$(cat "$d/pid")"
    tio uraid-degraded "$d/fs" "$(cat "$d/pid")"
    s_undo_since "$mk"
    rm -f "$d"/m*
    scenario2

    # btrfs raid5 (metadata raid1) on 15 simulated disks, and their raw rate
    loops="" mk=$(s_mark)
    i=0
    while [ $i -lt 15 ]; do
        arr_create b$i linear 1 0 0 "$M15"; arr_mount b$i; loops="$loops $(cat "$W/b$i/loop")"; i=$((i + 1))
    done
    n=$(( $(bytes "$M15") / 1048576 / 4 ))
    i=0
    pids=""
    for l in $loops; do dd_read "$l" 1M "$n" >"$W/raw$i" & pids="$pids $!"; i=$((i + 1)); done
    # shellcheck disable=SC2086  # only the readers: the daemons are children too
    wait $pids
    raw15=$(cat "$W"/raw* | awk '{ s += $1 } END { printf "%.1f", s }')
    # shellcheck disable=SC2086
    timeout 120 mkfs.btrfs -f -q -K -d raid5 -m raid1 $loops >"$W/mkfs.btrfs.log" 2>&1 \
        || die "mkfs.btrfs raid5: $(tail -n 1 "$W/mkfs.btrfs.log")"
    mkdir -p "$W/btrfs"
    btrfs device scan >/dev/null 2>&1 || true
    devs=$(echo $loops | sed 's|\([^ ]*\)|device=\1|g; s| |,|g')
    set -- $loops
    timeout 60 mount -o "nodiscard,$devs" "$1" "$W/btrfs" || die "mount btrfs failed"
    s_push umount "$W/btrfs"
    bonnie btrfs "$W/btrfs" "$(cat "$W/b0/pid")"
    tio btrfs "$W/btrfs" "$(cat "$W/b0/pid")"
    timeout 60 umount "$W/btrfs"
    # degraded: disk 3 gone (its loop device detached, its daemon stopped)
    timeout 10 losetup -d "$(cat "$W/b3/loop")"
    timeout 10 fusermount3 -u "$W/b3/fuse"
    btrfs device scan --forget >/dev/null 2>&1 || true
    devs=$(echo $loops | tr ' ' '\n' | grep -vx "$(cat "$W/b3/loop")" | sed 's|^|device=|' | paste -sd, -)
    timeout 60 mount -o "degraded,nodiscard,$devs" "$1" "$W/btrfs" || die "mount -o degraded btrfs failed"
    bonnie btrfs-degraded "$W/btrfs" "$(cat "$W/b0/pid")"
    tio btrfs-degraded "$W/btrfs" "$(cat "$W/b0/pid")"
    s_undo_since "$mk"
    rm -f "$W"/b*/m0

    lim=$((14 * DISK_MBPS))
    {
        echo "## 004: a 15-disk RAID-5 with a spare: bonnie++ and tiobench, healthy and degraded"
        echo
        echo "Seed 004 compared md RAID-5 with a 3ware card under bonnie++ and tiobench, healthy and"
        echo "degraded (its figures are not quoted in the issue; not repeated here). Here: 15 + 1 spare"
        echo "simulated disks of ${M15}, 64 KiB chunk, ext4; btrfs raid5 (metadata raid1) on 15 of the"
        echo "same disks; degraded = one member missing (uraid: member 3 and the spare left out, so"
        echo "nothing rebuilds; btrfs: disk 3's loop device detached, \`mount -o degraded\`). The raw"
        echo "disks: the 15 read with dd in parallel, $raw15 MB/s in all; the physical limit of a"
        echo "streaming transfer is 14 x $DISK_MBPS = $lim MB/s (14 data disks)."
        echo
        echo "### bonnie++ ($BON MiB, \`-f -D\`: block I/O only, 1 MiB chunks)"
        echo
        row "target" "block write MB/s" "%CP" "ratio" "rewrite MB/s" "%CP" "block read MB/s" "%CP" "ratio" "daemon CPU us/MB"
        sep 10
        while IFS='	' read -r l pw pc rw rc gr gc cpu; do
            case $l in btrfs*) cpu=-;; esac
            row "$l" "$pw" "$pc" "$(ratio "$pw" "$lim")" "$rw" "$rc" "$gr" "$gc" "$(ratio "$gr" "$lim")" "$cpu"
        done <"$OUT/data/bonnie.tsv"
        row "raw disks (limit)" "$lim" "-" "1.00" "$((lim / 2))" "-" "$lim" "-" "1.00" "-"
        echo
        echo "(rewrite reads and writes every block: half the streaming limit. \"+++++\": bonnie++ found"
        echo "the test too short to time. bonnie++ 2.00a's -D makes only the write phase O_DIRECT: rewrite"
        echo "and block read go through the page cache; the driver drops the file's clean pages every 0.2 s"
        echo "while bonnie++ runs, so they read from the array, as with a file of twice the RAM; not on"
        echo "btrfs degraded, whose rewrite then takes over 12 minutes: its read and rewrite are the page cache's.)"
        echo
        echo "### tiobench-shaped fio (threads share ${TIO_MB} MiB; 1 MiB sequential, 4 KiB random, ${T} s each)"
        echo
        echo "Random 4 KiB limits: a read is one random request: 15 disks x $(awk -v ms="$RAND4K_MS" 'BEGIN { printf "%.0f", 1000 / ms }')/s,"
        echo "but only as many requests run as there are threads; a RAID-5 write is 2 reads + 2 writes."
        echo
        row "target" "threads" "seq write MB/s" "ratio" "seq read MB/s" "ratio" "rand write MB/s" "rand read MB/s" "rand read limit" "fio usr+sys %"
        sep 10
        while IFS='	' read -r l t sw sr rw rr cl; do
            rl=$(awk -v t="$t" -v ms="$RAND4K_MS" 'BEGIN { n = t < 15 ? t : 15; printf "%.2f", n * 1000 / ms * 4096 / 1e6 }')
            row "$l" "$t" "$sw" "$(ratio "$sw" "$lim")" "$sr" "$(ratio "$sr" "$lim")" "$rw" "$rr" "$rl" "$cl"
        done <"$OUT/data/tio.tsv"
        echo
    } >"$OUT/parts/50-r5x15.md"
}
