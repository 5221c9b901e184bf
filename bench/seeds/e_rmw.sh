# Seed 003: fio random writes of 4K..512K, 8 threads, on a 10-disk RAID-6
# with a 64 KiB chunk, md's rmw_level 1 (read-modify-write when it reads
# less) and 0 (reconstruct-write only), switched at run time with
# `uraid rmw-level`. fio writes the array's block device (the loop device
# on the FUSE file), as the seed wrote its md device.
exp_rmw() {
    arr_create r6x10 6 10 0 64K "$M10"
    mk=$(s_mark)
    arr_mount r6x10
    pid=$(cat "$W/r6x10/pid")
    loop=$(cat "$W/r6x10/loop")
    : >"$OUT/data/rmw.tsv"
    for bs in $RMW_BS; do
        line=$bs
        for lvl in 1 0; do
            "$URAID" rmw-level --control "$W/r6x10/ctl" "$lvl" >/dev/null || die "uraid rmw-level $lvl failed"
            set -- $(time_cpu "$pid" fio_run "rmw$lvl-$bs" --filename="$loop" --name=w --rw=randwrite --bs="$bs" \
                --direct=1 --ioengine=psync --numjobs=8 --thread --runtime="$T" --time_based --norandommap --randrepeat=0)
            set -- $(cat "$W/last.out") "$1" "$2"
            kbs=$(awk -v mb="$2" 'BEGIN { printf "%.0f", mb * 1e3 }')
            cpu=$(awk -v c="$7" -v mb="$2" -v t="$6" 'BEGIN { if (mb * t > 0) printf "%.0f", c * 1e6 / (mb * t); else print 0 }')
            line="$line	$kbs	$(f1 "$4")	$cpu"
        done
        echo "$line" >>"$OUT/data/rmw.tsv"
    done
    s_undo_since "$mk"
    # The bound at 4K: every write is 3 reads + 3 writes (data, P, Q) with
    # rmw, 7 reads + 3 writes without (8 data disks: the other 7 data
    # blocks), each a random request of the disk model, 10 disks at once.
    iops1=$(awk -v ms="$RAND4K_MS" 'BEGIN { printf "%.0f", 10 * 1000 / ms / 6 }')
    iops0=$(awk -v ms="$RAND4K_MS" 'BEGIN { printf "%.0f", 10 * 1000 / ms / 10 }')
    {
        echo "## 003: random writes on a 10-disk RAID-6, rmw on and off"
        echo
        echo "Seed 003 (md's rmw for RAID-6, Markus Stockhausen, 2014): 10 x 7200 rpm disks, RAID-6,"
        echo "64K chunk, 8 threads of random writes for 300 s; its KB/s with skip_copy=1. Here:"
        echo "10 x ${M10} simulated disks, 8 fio threads (psync, O_DIRECT) on the array's block device,"
        echo "${T} s per figure."
        echo
        row "bs" "rmw 1 KB/s" "rmw 1 IOPS" "rmw 0 KB/s" "rmw 0 IOPS" "rmw 1 / rmw 0" "seed rmw 1" "seed rmw 0" "daemon CPU us/MB (rmw 1)"
        sep 9
        while IFS='	' read -r bs k1 i1 c1 k0 i0 c0; do
            case $bs in
                4K) s1=115 s0=141 ;; 8K) s1=225 s0=275 ;; 16K) s1=434 s0=536 ;; 32K) s1=751 s0=1051 ;;
                64K) s1=1339 s0=1958 ;; 128K) s1=2673 s0=3862 ;; 256K) s1=7685 s0=7539 ;; 512K) s1=19556 s0=19558 ;;
                *) s1=- s0=- ;;
            esac
            row "$bs" "$k1" "$i1" "$k0" "$i0" "$(ratio "$k1" "$k0")" "$s1" "$s0" "$c1"
        done <"$OUT/data/rmw.tsv"
        echo
        set -- $(awk -F'\t' '$1 == "4K" { print $3, $6 }' "$OUT/data/rmw.tsv")
        echo "Physical limit at 4K: a random request costs ${RAND4K_MS} ms on these disks; with rmw each"
        echo "write is 3 reads + 3 writes, so 10 disks allow $iops1 writes/s; without, 7 reads + 3 writes:"
        echo "$iops0/s. Measured: rmw 1 ${1:-0} IOPS ($(ratio "${1:-0}" "$iops1") of its bound; goal >= 0.8),"
        echo "rmw 0 ${2:-0} IOPS ($(ratio "${2:-0}" "$iops0") of its bound). The seed's rmw_level=1 column was *slower*"
        echo "than rmw_level=0 at every size up to 128K (0.82 at 4K); here rmw 1 / rmw 0 at 4K is $(ratio "${1:-0}" "${2:-1}")."
        echo
    } >"$OUT/parts/40-rmw.md"
}
