# The report's plots (gnuplot, PNG), from $OUT/data/*.tsv; each is named in
# report.md under its table.
make_plots() {
    dat=$OUT/data
    # seeds 003's own table, for the rmw plot
    printf '4K 115 141\n8K 225 275\n16K 434 536\n32K 751 1051\n64K 1339 1958\n128K 2673 3862\n256K 7685 7539\n512K 19556 19558\n' \
        >"$dat/rmw-seed.tsv"
    awk 'NR == FNR { s1[$1] = $2; s0[$1] = $3; next } { print $1, $2, $5, s1[$1], s0[$1] }' \
        "$dat/rmw-seed.tsv" "$dat/rmw.tsv" >"$dat/rmw-plot.tsv"
    awk -F'\t' '$1 == "stream" { print $2, $3 }' "$dat/nbd.tsv" >"$dat/nbd-streams.tsv"
    for l in uraid uraid-degraded btrfs btrfs-degraded; do
        awk -F'\t' -v l="$l" '$1 == l { print $2, $3, $4, $5, $6 }' "$dat/tio.tsv" >"$dat/tio-$l.tsv"
    done
    awk -F'\t' '{ print $1, $2, $4, $6 }' "$dat/bonnie.tsv" >"$dat/bonnie-plot.tsv"
    echo "raw-limit $((14 * DISK_MBPS)) $((7 * DISK_MBPS)) $((14 * DISK_MBPS))" >>"$dat/bonnie-plot.tsv"
    timeout 60 gnuplot >"$W/gnuplot.log" 2>&1 <<GP || die "gnuplot failed: $(tail -n 3 "$W/gnuplot.log")"
set terminal png size 800,480 noenhanced
set grid
set key top left
set output "$OUT/streams.png"
set title "000: concurrent streaming readers, 4-disk RAID-5 ($DISK)"
set xlabel "readers at once"; set ylabel "total MB/s"
set yrange [0:*]
set xtics 1
set yrange [0:$((3 * DISK_MBPS * 23 / 20))]
plot "$dat/streams.tsv" using 1:2 with linespoints lw 2 title "uraid mount + ext4", \
     "$dat/nbd-streams.tsv" using 1:2 with linespoints lw 2 title "uraid serve (NBD)", \
     $((3 * DISK_MBPS)) with lines dt 2 lw 2 title "limit: 3 x disk"
set output "$OUT/rmw.png"
set title "003: random writes, 10-disk RAID-6, 8 threads"
set xlabel "request size"; set ylabel "KB/s"
set logscale y
set yrange [*:*]
set xtics auto
plot "$dat/rmw-plot.tsv" using 0:2:xtic(1) with linespoints lw 2 title "uraid rmw 1", \
     "" using 0:3 with linespoints lw 2 title "uraid rmw 0", \
     "" using 0:4 with linespoints dt 2 title "seed rmw_level=1", \
     "" using 0:5 with linespoints dt 2 title "seed rmw_level=0"
unset logscale y
set output "$OUT/tio.png"
set title "004: tiobench-shaped sequential read, 15-disk RAID-5"
set xlabel "threads"; set ylabel "MB/s"
set yrange [0:*]
set logscale x 2
plot "$dat/tio-uraid.tsv" using 1:3 with linespoints lw 2 title "uraid", \
     "$dat/tio-uraid-degraded.tsv" using 1:3 with linespoints lw 2 title "uraid degraded", \
     "$dat/tio-btrfs.tsv" using 1:3 with linespoints lw 2 title "btrfs raid5", \
     "$dat/tio-btrfs-degraded.tsv" using 1:3 with linespoints lw 2 title "btrfs raid5 degraded", \
     $((14 * DISK_MBPS)) with lines dt 2 lw 2 title "limit: 14 x disk"
unset logscale x
set output "$OUT/bonnie.png"
set title "004: bonnie++ block I/O, 15-disk RAID-5"
set ylabel "MB/s"; set xlabel ""
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top right
set xtics auto
plot "$dat/bonnie-plot.tsv" using 2:xtic(1) title "block write", "" using 3 title "rewrite", "" using 4 title "block read"
GP
    {
        echo "## Plots"
        echo
        echo "![concurrent readers](streams.png) ![rmw](rmw.png)"
        echo
        echo "![tiobench read](tio.png) ![bonnie++](bonnie.png)"
        echo
    } >>"$OUT/report.md"
}
