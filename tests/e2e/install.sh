#!/bin/sh
# Installed like a package (issue 14 item 2). `make install` into a scratch
# root puts down every file (program, liburaid.so with its soname links,
# liburaid.a, headers, liburaid.pc, man pages uraid.1 and uraid.conf.5,
# bash completion, nbdkit plugin, systemd units); pkg-config's flags build a program against the installed headers
# and .so that opens an array `uraid create` made; the man page renders; the
# installed plugin loads; `make uninstall` leaves no file. Then `make deb`
# builds the packages, which are installed into this machine with dpkg -i
# (not --root: only a real install shows that the package's Depends resolve,
# that `man uraid` finds the page and that `nbdkit uraid member=...` finds
# the plugin in nbdkit's own directory), run, its systemd units checked by
# `systemd-analyze verify`, and purged leaving nothing.
# Needs root for dpkg -i; concurrent runs are serialized with flock.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/e2e.sh

root=$t_tmp/root
plugindir=$(nbdkit --dump-config 2>/dev/null | sed -n 's/^plugindir=//p')
[ -n "$plugindir" ] || { t_fail "nbdkit --dump-config names a plugindir"; t_finish; exit 1; }

# ---- make install into a scratch root ----
if make --no-print-directory install DESTDIR="$root" PREFIX=/usr >"$t_tmp/install.log" 2>&1; then
    t_ok "make install DESTDIR=\$tmp PREFIX=/usr"
else
    t_fail "make install" "$(tail -n 5 "$t_tmp/install.log")"; t_finish; exit 1
fi
missing=""
units="uraid@.service uraid-monitor.service uraid-check.service uraid-check.timer"
for f in usr/bin/uraid usr/lib/liburaid.so.0.1.0 usr/lib/liburaid.a usr/lib/pkgconfig/liburaid.pc \
    usr/share/man/man1/uraid.1 usr/share/man/man5/uraid.conf.5 usr/share/bash-completion/completions/uraid \
    usr/share/uraid/seeds/run.sh usr/share/uraid/seeds/lib.sh \
    $(for u in $units; do echo "usr/lib/systemd/system/$u"; done) \
    "${plugindir#/}/nbdkit-uraid-plugin.so" $(cd include && ls *.h | sed 's|^|usr/include/|') \
    $(cd docs && ls *.[1-8] | sed 's|^\(.*\.\)\([1-8]\)$|usr/share/man/man\2/\1\2|'); do
    [ -f "$root/$f" ] && [ -s "$root/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && t_ok "every file is installed" || t_fail "every file is installed" "missing:$missing"
[ -x "$root/usr/bin/uraid" ] && [ -x "$root/${plugindir#/}/nbdkit-uraid-plugin.so" ] \
    && t_ok "program and plugin are executable" || t_fail "program and plugin are executable"
soname=$(readelf -d "$root/usr/lib/liburaid.so.0.1.0" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = liburaid.so.0 ] && t_ok "liburaid.so.0.1.0 has soname liburaid.so.0" \
    || t_fail "soname" "got '$soname'"
[ -L "$root/usr/lib/liburaid.so.0" ] && [ "$(readlink -f "$root/usr/lib/liburaid.so.0")" = "$root/usr/lib/liburaid.so.0.1.0" ] \
    && [ -L "$root/usr/lib/liburaid.so" ] && [ "$(readlink -f "$root/usr/lib/liburaid.so")" = "$root/usr/lib/liburaid.so.0.1.0" ] \
    && t_ok "liburaid.so.0 and liburaid.so link to liburaid.so.0.1.0 (relative links)" \
    || t_fail "soname links" "$(ls -l "$root/usr/lib/")"
bash -n "$root/usr/share/bash-completion/completions/uraid" 2>"$t_tmp/bash.err" \
    && out=$(bash -c ". '$root/usr/share/bash-completion/completions/uraid'; COMP_WORDS=(uraid cre); COMP_CWORD=1; _uraid; echo \"\${COMPREPLY[*]}\"; COMP_WORDS=(uraid serve --no-r); COMP_CWORD=2; _uraid; echo \"\${COMPREPLY[*]}\"" 2>&1) \
    && [ "$out" = "create
--no-rebuild --no-resync" ] && t_ok "bash completion completes verbs and a verb's options" \
    || t_fail "bash completion" "$out $(cat "$t_tmp/bash.err")"

# ---- pkg-config and a program built against the installed files ----
pc() { PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/usr/lib/pkgconfig PKG_CONFIG_PATH=$root/usr/lib/pkgconfig pkg-config "$@"; }
# (pkg-config ends its line with a space)
cflags=$(pc --cflags liburaid 2>&1 | sed 's/ *$//'); libs=$(pc --libs liburaid 2>&1 | sed 's/ *$//')
[ "$cflags" = "-I$root/usr/include" ] && t_ok "pkg-config --cflags liburaid: $cflags" || t_fail "pkg-config --cflags" "$cflags"
[ "$libs" = "-L$root/usr/lib -luraid" ] && t_ok "pkg-config --libs liburaid: $libs" || t_fail "pkg-config --libs" "$libs"
[ "$(pc --modversion liburaid 2>&1)" = "$($URAID --version | awk '{print $2}')" ] \
    && t_ok "pkg-config --modversion is the program's version" || t_fail "modversion" "$(pc --modversion liburaid 2>&1)"
# Libs.private names the optional libraries this build used (the Makefile's conditions)
want="-lpthread -lm"
[ -f /usr/include/isa-l.h ] && want="$want -lisal"
[ -f /usr/include/liburing.h ] && want="$want -luring"
pkg-config --exists libnbd 2>/dev/null && want="$want $(pkg-config --libs libnbd | sed 's/ *$//')"
got=$(pc --static --libs liburaid | sed 's/ *$//')
[ "$got" = "-L$root/usr/lib -luraid $want" ] && t_ok "pkg-config --static --libs: $got" \
    || t_fail "Libs.private" "got '$got', want '-L$root/usr/lib -luraid $want'"

for i in 0 1 2; do truncate -s 8M "$t_tmp/m$i"; done
m="$t_tmp/m0 $t_tmp/m1 $t_tmp/m2"
head -c 65536 /dev/urandom >"$t_tmp/pattern"
# shellcheck disable=SC2086
$URAID create --level 5 --raid-devices 3 $m >"$t_tmp/create.out" 2>&1 \
    && $URAID write $m <"$t_tmp/pattern" >>"$t_tmp/create.out" 2>&1 \
    && t_ok "uraid create and write a 3-member RAID-5" || t_fail "create" "$(cat "$t_tmp/create.out")"
cat >"$t_tmp/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <uraid.h>
#include <uraid_admin.h>

/* Opens the array, prints its shape, writes its first 64 KiB to stdout. */
int main(int argc, char **argv)
{
    static struct uraid_array_info info;
    static char buf[65536];
    struct uraid_open_params p = {0};
    struct uraid_array *a;
    char why[256] = "";
    int rc = uraid_open((const char *const *)argv + 1, argc - 1, &p, &a, why, sizeof why);
    if (rc) {
        fprintf(stderr, "uraid_open: %s: %s\n", uraid_strerror(rc), why);
        return 1;
    }
    rc = uraid_get_info(a, &info);
    if (!rc)
        rc = uraid_read(a, buf, sizeof buf, 0);
    if (!rc && fwrite(buf, 1, sizeof buf, stdout) != sizeof buf)
        rc = -1;
    fprintf(stderr, "liburaid %s level %d raid_devices %d\n", uraid_version(), info.level, info.raid_devices);
    uraid_close(a);
    return rc ? 1 : 0;
}
EOF
# shellcheck disable=SC2086
if cc -std=gnu11 -Wall -Werror $cflags -o "$t_tmp/prog" "$t_tmp/prog.c" $libs >"$t_tmp/cc.out" 2>&1; then
    t_ok "a program builds with pkg-config's flags against the installed headers"
else
    t_fail "program builds" "$(head -n 5 "$t_tmp/cc.out")"
fi
readelf -d "$t_tmp/prog" 2>/dev/null | grep -q 'NEEDED.*\[liburaid.so.0\]' \
    && t_ok "the program needs liburaid.so.0 (linked with the .so, not the .a)" || t_fail "program NEEDED liburaid.so.0"
LD_LIBRARY_PATH=$root/usr/lib ldd "$t_tmp/prog" 2>&1 | grep -q "liburaid.so.0 => $root/usr/lib/liburaid.so.0 " \
    && t_ok "the installed liburaid.so.0 is the one loaded" || t_fail "loader finds the installed .so" "$(LD_LIBRARY_PATH=$root/usr/lib ldd "$t_tmp/prog" 2>&1)"
# shellcheck disable=SC2086
if LD_LIBRARY_PATH=$root/usr/lib "$t_tmp/prog" $m >"$t_tmp/prog.out" 2>"$t_tmp/prog.err" \
    && grep -q "^liburaid 0.1.0 level 5 raid_devices 3$" "$t_tmp/prog.err" && cmp -s "$t_tmp/prog.out" "$t_tmp/pattern"; then
    t_ok "the program opens the array through the installed liburaid.so and reads what uraid wrote"
else
    t_fail "program opens the array" "$(cat "$t_tmp/prog.err")"
fi

# ---- man page and plugin ----
MANWIDTH=80 man -l "$root/usr/share/man/man1/uraid.1" >"$t_tmp/man.out" 2>"$t_tmp/man.err"
grep -q "^NAME" "$t_tmp/man.out" && grep -q "^SYNOPSIS" "$t_tmp/man.out" && grep -q "uraid create" "$t_tmp/man.out" \
    && [ ! -s "$t_tmp/man.err" ] && t_ok "man -l renders the installed uraid.1 ($(wc -l <"$t_tmp/man.out") lines, no warnings)" \
    || t_fail "man -l renders uraid.1" "$(head -n 3 "$t_tmp/man.err")"
MANWIDTH=80 man -l "$root/usr/share/man/man5/uraid.conf.5" >"$t_tmp/man5.out" 2>"$t_tmp/man5.err"
grep -q "^NAME" "$t_tmp/man5.out" && grep -q "ARRAY" "$t_tmp/man5.out" && [ ! -s "$t_tmp/man5.err" ] \
    && t_ok "man -l renders the installed uraid.conf.5 ($(wc -l <"$t_tmp/man5.out") lines, no warnings)" \
    || t_fail "man -l renders uraid.conf.5" "$(head -n 3 "$t_tmp/man5.err")"
bad=""
for u in $units; do
    grep -q "^ExecStart=/usr/bin/uraid " "$root/usr/lib/systemd/system/$u" 2>/dev/null || case $u in *.timer) ;; *) bad="$bad $u" ;; esac
done
[ -z "$bad" ] && t_ok "the installed units run BINDIR's uraid (/usr/bin/uraid)" || t_fail "units' ExecStart" "$bad"
nbdkit --dump-plugin "$root/${plugindir#/}/nbdkit-uraid-plugin.so" >"$t_tmp/dump" 2>&1 \
    && grep -q '^name=uraid$' "$t_tmp/dump" && t_ok "nbdkit --dump-plugin loads the installed plugin" \
    || t_fail "installed plugin loads" "$(tail -n 3 "$t_tmp/dump")"

# ---- make uninstall ----
make --no-print-directory uninstall DESTDIR="$root" PREFIX=/usr >"$t_tmp/uninstall.log" 2>&1 \
    && t_ok "make uninstall" || t_fail "make uninstall" "$(tail -n 3 "$t_tmp/uninstall.log")"
left=$(find "$root" ! -type d | sed "s|^$root||")
[ -z "$left" ] && t_ok "make uninstall leaves no file behind" || t_fail "uninstall leaves no file" "$left"

# ---- make deb, dpkg -i, run, purge ----
start=$(date +%s)
if make --no-print-directory deb >"$t_tmp/deb.log" 2>&1; then
    t_ok "make deb ($(( $(date +%s) - start )) s)"
else
    t_fail "make deb" "$(tail -n 8 "$t_tmp/deb.log")"; t_finish; exit 1
fi
deb=$(ls build/deb/uraid_*.deb 2>/dev/null | head -n 1)
devdeb=$(ls build/deb/liburaid-dev_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] && [ -n "$devdeb" ] && t_ok "make deb built $(basename "$deb") and $(basename "$devdeb")" \
    || { t_fail "packages built" "$(ls build/deb)"; t_finish; exit 1; }
dpkg-deb -c "$deb" >"$t_tmp/c"; dpkg-deb -c "$devdeb" >>"$t_tmp/c"
missing=""
for f in ./usr/bin/uraid ./usr/lib/x86_64-linux-gnu/liburaid.so.0.1.0 ./usr/lib/x86_64-linux-gnu/liburaid.so.0 \
    ./usr/lib/x86_64-linux-gnu/liburaid.so ./usr/lib/x86_64-linux-gnu/liburaid.a ./usr/include/uraid.h \
    ./usr/lib/x86_64-linux-gnu/pkgconfig/liburaid.pc ./usr/share/man/man1/uraid.1.gz \
    ./usr/share/bash-completion/completions/uraid "./${plugindir#/}/nbdkit-uraid-plugin.so" \
    ./usr/share/man/man5/uraid.conf.5.gz $(for u in $units; do echo "./lib/systemd/system/$u"; done); do
    grep -q " $f\( ->.*\)\?$" "$t_tmp/c" || missing="$missing $f"
done
[ -z "$missing" ] && t_ok "dpkg-deb -c lists program, library, headers, man pages, completion, plugin and systemd units" \
    || t_fail "dpkg-deb -c" "missing:$missing"

exec 9>/tmp/uraid-install-test.lock
flock -w 600 9 || { t_fail "lock /tmp/uraid-install-test.lock"; t_finish; exit 1; }
if dpkg-query -W -f='${Status}' uraid 2>/dev/null | grep -q installed; then
    # not ours to remove: refuse rather than replace someone's install
    t_fail "no uraid package installed before the test" "dpkg -P uraid liburaid-dev first"; t_finish; exit 1
fi
trap 'dpkg -P liburaid-dev uraid >/dev/null 2>&1; rm -rf "$t_tmp"' EXIT
if dpkg -i "$deb" "$devdeb" >"$t_tmp/dpkg.log" 2>&1; then
    t_ok "dpkg -i installs both packages into the machine"
else
    t_fail "dpkg -i" "$(tail -n 5 "$t_tmp/dpkg.log")"; t_finish; exit 1
fi
dpkg -L uraid liburaid-dev | while read -r f; do [ -d "$f" ] || echo "$f"; done >"$t_tmp/files"
v=$(/usr/bin/uraid --version 2>&1)
[ "$v" = "uraid 0.1.0" ] && t_ok "installed /usr/bin/uraid --version: $v" || t_fail "uraid --version" "$v"
man -w uraid 2>/dev/null | grep -q '^/usr/share/man/man1/uraid.1.gz$' && t_ok "man uraid finds the installed page" \
    || t_fail "man -w uraid" "$(man -w uraid 2>&1)"
# nbdkit finds the plugin by its short name in its own plugin directory
# shellcheck disable=SC2086,SC2046
timeout 60 nbdkit -U - uraid $(echo $m | sed 's/[^ ]*/member=&/g') --run 'nbdcopy "$uri" -' 2>"$t_tmp/nbdkit.err" \
    | head -c 65536 >"$t_tmp/nbd.out"
cmp -s "$t_tmp/nbd.out" "$t_tmp/pattern" && t_ok "nbdkit uraid member=... serves the array through the installed plugin" \
    || t_fail "nbdkit uraid member=..." "$(tail -n 3 "$t_tmp/nbdkit.err")"
pkg-config --libs liburaid 2>&1 | grep -q -- '-luraid' && t_ok "pkg-config finds the installed liburaid.pc" \
    || t_fail "pkg-config liburaid (installed)" "$(pkg-config --libs liburaid 2>&1)"
# the units, installed where systemd looks, verified by systemd itself
# (man: references included, now that the pages are installed)
if command -v systemd-analyze >/dev/null 2>&1; then
    systemd-analyze verify uraid@data.service uraid-monitor.service uraid-check.service uraid-check.timer \
        >"$t_tmp/verify.out" 2>&1; rc=$?
    [ "$rc" -eq 0 ] && [ ! -s "$t_tmp/verify.out" ] \
        && t_ok "systemd-analyze verify: uraid@data.service, uraid-monitor.service, uraid-check.service and .timer, no complaint" \
        || t_fail "systemd-analyze verify (exit $rc)" "$(head -n 5 "$t_tmp/verify.out")"
    cal=$(sed -n 's/^OnCalendar=//p' /lib/systemd/system/uraid-check.timer)
    next=$(systemd-analyze calendar --iterations=12 "$cal" 2>&1 | sed -n 's/^ *\(Next elapse\|Iter\. #[0-9]*\): \(...\) [0-9]*-[0-9]*-\([0-9]*\) .*/\2 \3/p')
    [ "$(echo "$next" | wc -l)" -eq 12 ] && ! echo "$next" | grep -qv '^Sun 0[1-7]$' \
        && t_ok "uraid-check.timer: the first Sunday of each month ($cal; next 12: $(echo $next | tr '\n' ' '))" \
        || t_fail "timer calendar" "$cal: $next"
else
    t_fail "systemd-analyze is not installed: the units are not verified (apt-get install systemd)"
fi
# The units' commands, as systemd would run them (no systemd runs here):
# uraid@UUID.service's ExecStart with %i/%I filled in serves the array of a
# config written for the test, uraid-check.service's starts its check, and
# uraid-monitor.service's (with --oneshot --test) sees it.
if [ -e /etc/uraid.conf ]; then
    t_fail "the units' commands: /etc/uraid.conf exists and is not this test's to replace; not run"
else
    u=$(mdadm --examine "$t_tmp/m0" | sed -n 's/^ *Array UUID : //p')
    printf 'DEVICE %s/m*\nARRAY UUID=%s\n' "$t_tmp" "$u" >/etc/uraid.conf
    made_run=""; [ -d /run/uraid/nbd ] || { mkdir -p /run/uraid/nbd && made_run=1; }
    cmd=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/uraid@.service | sed "s/%[iI]/$u/g")
    # shellcheck disable=SC2086
    $cmd 2>"$t_tmp/unit.err" &
    unit_pid=$!
    n=0; while ! nbdinfo --size "nbd+unix:///?socket=/run/uraid/nbd/$u.sock" >/dev/null 2>&1 && [ $n -lt 60 ]; do sleep 0.25; n=$((n + 1)); done
    nbdcopy "nbd+unix:///?socket=/run/uraid/nbd/$u.sock" - 2>/dev/null | head -c 65536 | cmp -s - "$t_tmp/pattern" \
        && t_ok "uraid@UUID.service's command ($cmd) serves the array of /etc/uraid.conf" \
        || t_fail "uraid@.service's command" "$cmd: $(tail -n 3 "$t_tmp/unit.err")"
    check=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/uraid-check.service)
    $check >"$t_tmp/check.out" 2>&1 && grep -q "check started" "$t_tmp/check.out" \
        && t_ok "uraid-check.service's command ($check) starts the check" || t_fail "uraid-check's command" "$(cat "$t_tmp/check.out")"
    mon=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/uraid-monitor.service)
    $mon --oneshot --test >"$t_tmp/mon.out" 2>&1 && grep -q "^uraid monitor: TestMessage " "$t_tmp/mon.out" \
        && t_ok "uraid-monitor.service's command ($mon, with --oneshot --test) watches it" \
        || t_fail "uraid-monitor's command" "$(cat "$t_tmp/mon.out")"
    kill "$unit_pid"; wait "$unit_pid"; rc=$?
    [ "$rc" -eq 0 ] && t_ok "SIGTERM (systemctl stop) ends the served array: exit 0" || t_fail "unit stop: exit $rc" "$(tail -n 3 "$t_tmp/unit.err")"
    rm -f /etc/uraid.conf
    [ -n "$made_run" ] && rmdir /run/uraid/nbd 2>/dev/null
fi
[ -L /etc/systemd/system/multi-user.target.wants/uraid-monitor.service ] \
    && [ -L /etc/systemd/system/timers.target.wants/uraid-check.timer ] \
    && t_ok "the package enables uraid-monitor.service and uraid-check.timer (as mdadm's does its monitor and check)" \
    || t_fail "units enabled" "$(ls /etc/systemd/system/*.wants/ 2>&1 | grep uraid)"
if dpkg -P liburaid-dev uraid >"$t_tmp/purge.log" 2>&1; then
    t_ok "dpkg -P removes both packages"
else
    t_fail "dpkg -P" "$(tail -n 3 "$t_tmp/purge.log")"
fi
left=""
while read -r f; do [ -e "$f" ] || [ -L "$f" ] && left="$left $f"; done <"$t_tmp/files"
[ -s "$t_tmp/files" ] && [ -z "$left" ] && t_ok "purge leaves none of the package's $(wc -l <"$t_tmp/files") files" \
    || t_fail "purge leaves nothing" "left:$left"
left=$(find /etc/systemd/system -name 'uraid*' 2>/dev/null)
[ -z "$left" ] && t_ok "purge removes the units' enablement links" || t_fail "enablement links left" "$left"
t_finish
