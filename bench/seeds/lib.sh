# Shared by bench/seeds/*.sh (sourced by run.sh): arrays of simulated disks
# served the way a user would use them -- `uraid mount` (FUSE) + a loop
# device + a file system -- and the bookkeeping that undoes it all on exit.
#
# Variables from run.sh: URAID, W (scratch directory), OUT (report
# directory), QUICK (1 or 0), DISK (the member layer of every simulated disk).

say() { echo "seeds: $*" >&2; }
die() { echo "seeds: $*" >&2; exit 1; }

# Everything set up is recorded here, undone in reverse by s_cleanup.
S_UNDO=$W/undo
: >"$S_UNDO"
s_push() { echo "$*" >>"$S_UNDO"; }
# shellcheck disable=SC2317  # called by the EXIT trap
s_cleanup() {
    set +e
    [ -f "$S_UNDO" ] || return 0
    tac "$S_UNDO" | while read -r kind arg; do
        case $kind in
            umount) timeout 30 umount "$arg" 2>/dev/null || timeout 10 umount -l "$arg" 2>/dev/null ;;
            loop) # only if it is still ours: a freed loop device may be someone else's now
                  set -- $arg
                  [ "$(losetup -n -O BACK-FILE "$1" 2>/dev/null | sed 's/ *$//')" = "$2" ] && timeout 10 losetup -d "$1" 2>/dev/null ;;
            fuse) timeout 10 fusermount3 -u "$arg" 2>/dev/null || timeout 10 fusermount3 -uz "$arg" 2>/dev/null ;;
            rmdir) [ -d "$arg" ] && rmdir "$arg" 2>/dev/null ;;
            pid) kill -TERM "$arg" 2>/dev/null; n=0
                 while kill -0 "$arg" 2>/dev/null && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
                 kill -9 "$arg" 2>/dev/null ;;
        esac
    done
    : >"$S_UNDO"
}
# s_undo_since MARK: undo (in reverse) what was pushed after line MARK
s_mark() { wc -l <"$S_UNDO"; }
s_undo_since() {
    head -n "$1" "$S_UNDO" >"$S_UNDO.keep"
    tail -n +"$(($1 + 1))" "$S_UNDO" >"$S_UNDO.tail"
    mv "$S_UNDO.tail" "$S_UNDO"
    s_cleanup
    mv "$S_UNDO.keep" "$S_UNDO"
}

# bytes SIZE (64M, 1G, 4096)
bytes() {
    case $1 in
        *[Gg]) echo $(( ${1%?} * 1073741824 )) ;;
        *[Mm]) echo $(( ${1%?} * 1048576 )) ;;
        *[Kk]) echo $(( ${1%?} * 1024 )) ;;
        *) echo $(( $1 )) ;;
    esac
}

# arr_create NAME LEVEL RAID_DEVICES SPARES CHUNK MEMBER_SIZE: member files
# $W/NAME/m0..; RAID-4/5/6 without a journal or bitmap, as the seeds' md
# arrays were (resync policy), created clean.
arr_create() {
    _name=$1 _level=$2 _n=$3 _spares=$4 _chunk=$5 _size=$6
    _d=$W/$_name
    mkdir -p "$_d"
    members=""
    _i=0
    while [ $_i -lt $((_n + _spares)) ]; do
        truncate -s "$_size" "$_d/m$_i"
        members="$members $_d/m$_i"
        _i=$((_i + 1))
    done
    echo "$members" >"$_d/members"
    extra=""
    case $_level in 4|5|6) extra="--consistency-policy resync --bitmap none" ;; esac
    [ "$_spares" -gt 0 ] && extra="$extra --spare-devices $_spares"
    [ "$_level" = linear ] || extra="$extra --chunk $_chunk"
    # shellcheck disable=SC2086
    $URAID create --level "$_level" --raid-devices "$_n" $extra --assume-clean $members \
        >"$_d/create.log" 2>&1 || die "uraid create $_name: $(tail -n 1 "$_d/create.log")"
}

# arr_mount NAME [UARGS...]: `uraid mount` of NAME's members with every
# member a simulated disk ($DISK) plus UARGS, a loop device on DIR/array
# (direct I/O: no second page cache); its path in $W/NAME/loop.
arr_mount() {
    _name=$1; shift
    _d=$W/$_name
    mkdir -p "$_d/fuse"
    # shellcheck disable=SC2046
    $URAID mount --foreground --control "$_d/ctl" --member-layer "$DISK" "$@" \
        ${AM_MEMBERS:-$(cat "$_d/members")} "$_d/fuse" >"$_d/mount.log" 2>&1 &
    _pid=$!
    s_push pid "$_pid"
    s_push fuse "$_d/fuse"
    _n=0
    while [ ! -f "$_d/fuse/array" ] && [ $_n -lt 300 ]; do
        kill -0 "$_pid" 2>/dev/null || die "uraid mount $_name: $(tail -n 1 "$_d/mount.log")"
        sleep 0.1; _n=$((_n + 1))
    done
    [ -f "$_d/fuse/array" ] || die "uraid mount $_name: no $_d/fuse/array after 30 s"
    echo "$_pid" >"$_d/pid"
    _loop=$(timeout 30 losetup --direct-io=on -f --show "$_d/fuse/array") || die "losetup on $_d/fuse/array failed"
    s_push loop "$_loop $_d/fuse/array"
    echo "$_loop" >"$_d/loop"
}

# fs_ext4 NAME STRIDE_KIB DATA_MEMBERS: ext4 on NAME's loop device, mounted
# on $W/NAME/fs, told the geometry (stride, stripe width) as mkfs does for md
fs_ext4() {
    _d=$W/$1
    _loop=$(cat "$_d/loop")
    stride=$(($2 / 4))
    opts="lazy_itable_init=1,lazy_journal_init=1,nodiscard"
    [ "$stride" -gt 0 ] && opts="$opts,stride=$stride,stripe_width=$((stride * $3))"
    timeout 300 mkfs.ext4 -q -F -E "$opts" "$_loop" >"$_d/mkfs.log" 2>&1 || die "mkfs.ext4 on $1: $(tail -n 1 "$_d/mkfs.log")"
    mkdir -p "$_d/fs"
    timeout 60 mount -o noinit_itable "$_loop" "$_d/fs" || die "mount ext4 of $1 failed"
    s_push umount "$_d/fs"
}

# cpu_ticks PID: user+system clock ticks of PID and its threads so far
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
TICK=$(getconf CLK_TCK)

# dd_read FILE_OR_DEV BS COUNT [SKIP]: MB/s (1e6 bytes) of an O_DIRECT read
dd_read() {
    out=$(dd if="$1" of=/dev/null bs="$2" count="$3" skip="${4:-0}" iflag=direct 2>&1) || { echo 0; return; }
    echo "$out" | awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "copied,") { s = $(i + 1) }; print $1 / s / 1e6 }'
}

# dd_write FILE BS COUNT: MB/s of an O_DIRECT write (fsync'd)
dd_write() {
    out=$(dd if=/dev/zero of="$1" bs="$2" count="$3" oflag=direct conv=fsync 2>&1) || { echo 0; return; }
    echo "$out" | awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "copied,") { s = $(i + 1) }; print $1 / s / 1e6 }'
}

# ratio A B: A / B with 2 decimals ("-" when B is 0)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'; }
f1() { awk -v a="$1" 'BEGIN { printf "%.1f\n", a }'; }

# fio_run NAME ARGS...: fio with JSON output in $W/fio-NAME.json; prints
# "read_MBps write_MBps read_iops write_iops cpu" (cpu: fio's usr+sys %,
# the client's CPU per job) of the group.
fio_run() {
    fname=$1; shift
    timeout 600 fio --output-format=json --group_reporting "$@" >"$W/fio-$fname.json" 2>"$W/fio-$fname.err" \
        || { say "fio $fname failed: $(tail -n 2 "$W/fio-$fname.err")"; echo "0 0 0 0 0"; return; }
    # the nbd engine prints "fio: connected to NBD server" before the JSON
    sed -n '/^{/,$p' "$W/fio-$fname.json" | jq -r '.jobs[0] |
        "\(.read.bw_bytes / 1e6) \(.write.bw_bytes / 1e6) \(.read.iops) \(.write.iops) \(.usr_cpu + .sys_cpu)"' \
        || { say "fio $fname: no JSON result"; echo "0 0 0 0 0"; }
}

# time_cpu PID CMD...: runs CMD; prints "SECONDS CPU_SECONDS_OF_PID" after
# the command's own output went to $W/last.out
time_cpu() {
    tpid=$1; shift
    c0=$(cpu_ticks "$tpid"); t0=$(date +%s.%N)
    "$@" >"$W/last.out" 2>&1
    t1=$(date +%s.%N); c1=$(cpu_ticks "$tpid")
    awk -v a="$t0" -v b="$t1" -v c="$c0" -v d="$c1" -v k="$TICK" 'BEGIN { printf "%.3f %.3f\n", b - a, (d - c) / k }'
}

# md table helpers: row CELLS... ("| a | b |")
row() { printf '|'; for c in "$@"; do printf ' %s |' "$c"; done; printf '\n'; }
# sep N: the header separator of an N-column table
sep() { printf '|'; _i=0; while [ $_i -lt "$1" ]; do printf -- '---|'; _i=$((_i + 1)); done; printf '\n'; }
