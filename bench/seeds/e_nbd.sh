# The same figures with the array served over NBD (`uraid serve`: nbdkit
# with the uraid plugin, on a unix socket) and fio's nbd engine, as
# bench/fio_nbd.sh does: the 4-disk RAID-5's streams and write (000, 002)
# and the 10-disk RAID-6's 4 KiB random writes (003); CPU per MB moved of
# the server (uraid serve and its nbdkit) beside the FUSE daemon's.

# serve_up NAME: `uraid serve` of NAME's members with the disk layer;
# sets SOCK and SPID (the process doing the work: nbdkit)
serve_up() {
    d=$W/$1
    SOCK=$d/nbd.sock
    # shellcheck disable=SC2046
    "$URAID" serve --socket "$SOCK" --control "$d/ctl" --member-layer "$DISK" $(cat "$d/members") \
        >"$d/serve.log" 2>&1 &
    p=$!
    s_push pid "$p"
    n=0
    while ! timeout 5 nbdinfo --size "nbd+unix:///?socket=$SOCK" >/dev/null 2>&1; do
        kill -0 "$p" 2>/dev/null || die "uraid serve $1: $(tail -n 1 "$d/serve.log")"
        n=$((n + 1)); [ $n -lt 100 ] || die "uraid serve $1 did not answer"
        sleep 0.2
    done
    SPID=$(pgrep -P "$p" | head -n 1 || true)
    [ -n "$SPID" ] || SPID=$p
}

# nbd_fio NAME ARGS...: "MBps(read+write) IOPS(read+write) client% daemon_us_per_MB"
nbd_fio() {
    nm=$1; shift
    set -- $(time_cpu "$SPID" fio_run "$nm" --ioengine=nbd --uri="nbd+unix:///?socket=$SOCK" --name=n "$@")
    secs=$1 cpu=$2
    set -- $(cat "$W/last.out")
    awk -v r="$1" -v w="$2" -v ri="$3" -v wi="$4" -v cl="$5" -v c="$cpu" -v s="$secs" \
        'BEGIN { mb = r + w; printf "%.1f %.0f %.1f %.0f\n", mb, ri + wi, cl, (mb * s > 0 ? c * 1e6 / (mb * s) : 0) }'
}

exp_nbd() {
    : >"$OUT/data/nbd.tsv"
    mk=$(s_mark)
    serve_up r5x4
    for s in $STREAMS; do
        set -- $(nbd_fio "nbd-st$s" --rw=read --bs=1M --iodepth=2 --numjobs="$s" --size="${F4}M" \
            --offset_increment="${F4}M" --runtime="$T" --time_based)
        printf 'stream\t%s\t%s\t%s\t%s\t%s\n' "$s" "$1" "$2" "$3" "$4" >>"$OUT/data/nbd.tsv"
    done
    set -- $(nbd_fio nbd-w --rw=write --bs=1M --iodepth=2 --numjobs=1 --size="${F4}M" --runtime="$T" --time_based)
    printf 'write\t1\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$OUT/data/nbd.tsv"
    s_undo_since "$mk"
    mk=$(s_mark)
    serve_up r6x10
    for lvl in 1 0; do
        "$URAID" rmw-level --control "$W/r6x10/ctl" "$lvl" >/dev/null || die "uraid rmw-level $lvl (NBD) failed"
        set -- $(nbd_fio "nbd-rmw$lvl" --rw=randwrite --bs=4K --iodepth=1 --numjobs=8 --runtime="$T" --time_based \
            --norandommap --randrepeat=0)
        printf 'rmw%s\t8\t%s\t%s\t%s\t%s\n' "$lvl" "$1" "$2" "$3" "$4" >>"$OUT/data/nbd.tsv"
    done
    s_undo_since "$mk"
    lim=$((3 * DISK_MBPS))
    {
        echo "## Over NBD: the same arrays served by \`uraid serve\`, fio's nbd engine"
        echo
        echo "The 4-disk RAID-5 of 002 and the 10-disk RAID-6 of 003 (the same member files), served on"
        echo "a unix socket; fio on the NBD export directly (no file system: NBD has no kernel client"
        echo "here without the nbd module), ${T} s each. CPU: the nbdkit process serving the array"
        echo "(it runs the uraid plugin), beside the FUSE daemon's in the tables above."
        echo
        row "figure" "jobs" "MB/s" "IOPS" "ratio to the limit" "FUSE + ext4 figure" "fio usr+sys %" "server CPU us/MB"
        sep 8
        while IFS='	' read -r k j mb io cl cpu; do
            case $k in
                stream) what="RAID-5 x4, streaming read"; l=$lim
                        fz=$(awk -v s="$j" '$1 == s { printf "%.1f", $2 }' "$OUT/data/streams.tsv") ;;
                write) what="RAID-5 x4, streaming write"; l=$lim
                       fz=- ;;
                rmw1) what="RAID-6 x10, random 4K write, rmw 1"; l=$(awk -v ms="$RAND4K_MS" 'BEGIN { printf "%.0f", 10 * 1000 / ms / 6 }')
                      fz=$(awk -F'\t' '$1 == "4K" { print $3 " IOPS" }' "$OUT/data/rmw.tsv") ;;
                rmw0) what="RAID-6 x10, random 4K write, rmw 0"; l=$(awk -v ms="$RAND4K_MS" 'BEGIN { printf "%.0f", 10 * 1000 / ms / 10 }')
                      fz=$(awk -F'\t' '$1 == "4K" { print $6 " IOPS" }' "$OUT/data/rmw.tsv") ;;
            esac
            case $k in rmw*) r=$(ratio "$io" "$l") ;; *) r=$(ratio "$mb" "$l") ;; esac
            row "$what" "$j" "$mb" "$io" "$r" "$fz" "$cl" "$cpu"
        done <"$OUT/data/nbd.tsv"
        echo
    } >"$OUT/parts/60-nbd.md"
}
