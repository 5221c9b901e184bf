# Seeds 000 and 002 on one 4-disk RAID-5 (64 KiB chunk): dd streaming read
# of a file against one member and all members in parallel (002), and
# concurrent streaming readers against one (000, fio on files of ext4).
exp_stream() {
    n=$(( $(bytes "$M4") / 1048576 / 2 )) # MiB read from each raw disk
    # the raw disks: one-member linear arrays, the same layer and path
    for i in 0 1 2 3; do arr_create d$i linear 1 0 0 "$M4"; done
    mk=$(s_mark)
    for i in 0 1 2 3; do arr_mount d$i; done
    one=$(dd_read "$(cat "$W/d0/loop")" 1M "$n")
    pids=""
    for i in 0 1 2 3; do dd_read "$(cat "$W/d$i/loop")" 1M "$n" >"$W/par$i" & pids="$pids $!"; done
    # shellcheck disable=SC2086  # only the readers: the daemons are children too
    wait $pids
    par=$(cat "$W"/par0 "$W"/par1 "$W"/par2 "$W"/par3 | awk '{ s += $1 } END { print s }')
    s_undo_since "$mk"

    arr_create r5x4 5 4 0 64K "$M4"
    mk=$(s_mark)
    arr_mount r5x4
    pid=$(cat "$W/r5x4/pid")
    loop=$(cat "$W/r5x4/loop")
    fs_ext4 r5x4 64 3
    # md sets an array's read-ahead to at least two stripes; the same here
    blockdev --setra $((2 * 3 * 128)) "$loop"
    wr=0
    j=0
    for s in $STREAMS; do j=$s; done
    i=0
    while [ $i -lt "$j" ]; do
        w=$(dd_write "$W/r5x4/fs/s.$i.0" 1M "$F4"); [ $i -eq 0 ] && wr=$w
        i=$((i + 1))
    done
    sync
    set -- $(time_cpu "$pid" dd if="$W/r5x4/fs/s.0.0" of=/dev/null bs=1M)
    ddbuf=$(awk -v s="$1" -v mb="$F4" 'BEGIN { printf "%.1f", mb * 1048576 / s / 1e6 }')
    ddbuf_cpu=$(awk -v c="$2" -v mb="$F4" 'BEGIN { printf "%.0f", c * 1e6 / (mb * 1.048576) }')
    dddir=$(dd_read "$W/r5x4/fs/s.0.0" 4M $((F4 / 4)))
    rawarr=$(dd_read "$loop" 4M $((F4 / 4)))
    limit=$((3 * DISK_MBPS))
    {
        echo "## 002: dd streaming read of a 4-disk RAID-5 against its disks"
        echo
        echo "Seed 002: each disk read 57 MB/s with dd, the 4-disk RAID-5 58 MB/s. Here: ${M4} members,"
        echo "64 KiB chunk, ext4 on the array, a ${F4} MiB file written with \`dd oflag=direct\`; the raw"
        echo "disk figures read the simulated disks through the same FUSE + loop path."
        echo
        row "what" "MB/s" "physical limit" "ratio" "seed 002"
        sep 5
        row "one disk, dd of its block device" "$(f1 "$one")" "$DISK_MBPS" "$(ratio "$one" "$DISK_MBPS")" "57"
        row "4 disks in parallel, dd each" "$(f1 "$par")" "$((4 * DISK_MBPS))" "$(ratio "$par" $((4 * DISK_MBPS)))" "-"
        row "array, dd of a file (buffered, read-ahead 2 stripes)" "$ddbuf" "$limit" "$(ratio "$ddbuf" "$limit")" "58"
        row "array, dd iflag=direct bs=4M of the file" "$(f1 "$dddir")" "$limit" "$(ratio "$dddir" "$limit")" "-"
        row "array, dd iflag=direct bs=4M of the block device" "$(f1 "$rawarr")" "$limit" "$(ratio "$rawarr" "$limit")" "-"
        row "array, dd oflag=direct bs=1M write of the file" "$(f1 "$wr")" "$limit" "$(ratio "$wr" "$limit")" "-"
        echo
        echo "Goal: the array's streaming read through the file system >= 0.9 x 3 x one disk:"
        echo "buffered dd $(ratio "$ddbuf" "$(awk -v o="$one" 'BEGIN { print 3 * o }')") and direct dd"
        echo "$(ratio "$dddir" "$(awk -v o="$one" 'BEGIN { print 3 * o }')") of 3 x the disk measured here ($(f1 "$one") MB/s)."
        echo "The FUSE daemon spent $ddbuf_cpu us of CPU per MB of the buffered read."
        echo
    } >"$OUT/parts/30-dd.md"
    printf 'one_disk\t%s\nparallel\t%s\nddbuf\t%s\ndddirect\t%s\n' "$one" "$par" "$ddbuf" "$dddir" >"$OUT/data/dd.tsv"

    # 000: streaming readers at once, each on its own file. One and two
    # readers alternate for STREAM_ROUNDS rounds (a run of T seconds swings
    # by a tenth with where the files' ends fall and the machine's load);
    # the table has each count's median and the goal the median of the
    # rounds' two / one.
    : >"$OUT/data/streams-rounds.tsv"
    r=1
    while [ $r -le "$STREAM_ROUNDS" ]; do
        for s in $STREAMS; do
            case $s in 1|2) ;; *) [ $r -eq 1 ] || continue ;; esac
            set -- $(time_cpu "$pid" fio_run "st$s" --directory="$W/r5x4/fs" --name=s --rw=read --bs=1M --direct=1 \
                --ioengine=libaio --iodepth=2 --numjobs="$s" --size="${F4}M" --runtime="$T" --time_based)
            set -- $(cat "$W/last.out") "$1" "$2"
            cpu=$(awk -v c="$7" -v mb="$1" -v t="$6" 'BEGIN { if (mb * t > 0) printf "%.0f", c * 1e6 / (mb * t); else print 0 }')
            printf '%s\t%s\t%s\t%s\t%s\n' "$s" "$1" "$5" "$cpu" "$r" >>"$OUT/data/streams-rounds.tsv"
        done
        r=$((r + 1))
    done
    : >"$OUT/data/streams.tsv"
    for s in $STREAMS; do
        awk -F'\t' -v s="$s" '$1 == s { print $2, $3, $4 }' "$OUT/data/streams-rounds.tsv" | sort -n |
            awk -v s="$s" '{ mb[NR] = $1; cl[NR] = $2; c[NR] = $3 } END { m = int((NR + 1) / 2); printf "%s\t%s\t%s\t%s\n", s, mb[m], cl[m], c[m] }' \
            >>"$OUT/data/streams.tsv"
    done
    one_s=$(awk 'NR == 1 { print $2 }' "$OUT/data/streams.tsv")
    # each round's two readers / one, and their median
    pairs=$(awk -F'\t' '$1 == 1 { one[$5] = $2 } $1 == 2 { two[$5] = $2 }
        END { for (r in one) if (one[r] > 0 && (r in two)) printf "%.2f\n", two[r] / one[r] }' \
        "$OUT/data/streams-rounds.tsv" | sort -n | tr '\n' ' ' | sed 's/ $//')
    pair_med=$(echo "$pairs" | tr ' ' '\n' | grep . | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    {
        echo "## 000: concurrent streaming readers on a 4-disk RAID-5"
        echo
        echo "Seed 000: one bonnie++ read the RAID-5 at 104 MB/s, two at once 52 MB/s in total (0.5)."
        echo "Here: fio, N jobs each reading its own ${F4} MiB file of the ext4 (1 MiB requests,"
        echo "O_DIRECT, 2 in flight each), ${T} s; one and two readers alternately, $STREAM_ROUNDS rounds"
        echo "(medians below), three and four readers once."
        echo
        row "readers" "total MB/s" "/ one reader" "physical limit" "ratio" "fio usr+sys %" "daemon CPU us/MB" "seed 000"
        sep 8
        while read -r s mb cl cpu; do
            seed=-; [ "$s" = 1 ] && seed=104; [ "$s" = 2 ] && seed="52 (0.50)"
            row "$s" "$(f1 "$mb")" "$(ratio "$mb" "$one_s")" "$limit" "$(ratio "$mb" "$limit")" "$(f1 "$cl")" "$cpu" "$seed"
        done <"$OUT/data/streams.tsv"
        echo
        echo "Goal: two readers >= 0.9 of one: $pair_med (median of the rounds' ratios: $pairs)."
        echo
    } >"$OUT/parts/20-streams.md"
    s_undo_since "$mk"
}
