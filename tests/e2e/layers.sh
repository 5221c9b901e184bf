#!/bin/sh
# The library's direction (docs/ARCHITECTURE.md "Layers"):
#   - `make layers` (scripts/check-layers.sh) passes on this tree and fails,
#     with one line naming the file, the include and both layers, on a copy
#     with an upward include planted: lib/parity including the array, a
#     member including the I/O engine, the CLI and the FUSE front-end
#     including lib/ headers, the math layer including an I/O header;
#   - the front-ends are compiled without -Ilib, so the compiler refuses a
#     lib/ header in cli/ too;
#   - liburaid.so has the soname liburaid.so.0 (with the usual links in
#     build/) and exports exactly the URAID_API functions of include/;
#   - a program built against include/ only and linked with liburaid.so
#     (not the .a) opens an array made by `uraid create`, writes, reads back
#     and examines it; an internal function is not there to link.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/e2e.sh
CC=${CC:-cc}

out=$t_tmp/out
if sh scripts/check-layers.sh >"$out" 2>&1; then
    t_ok "make layers passes on the tree ($(tail -n 1 "$out"))"
else
    t_fail "make layers passes on the tree" "$(head -n 3 "$out" | tr '\n' ' ')"
fi

# A copy of the sources, to plant includes in.
tree=$t_tmp/tree
mkdir -p "$tree"
cp -R cli fuse plugins include lib tests scripts Makefile "$tree"/ 2>/dev/null
rm -rf "$tree/tests/e2e"

# plant FILE TEXT NAME PATTERN...: with FILE holding TEXT the check fails,
# and its output has one line matching every PATTERN; then FILE goes.
plant() {
    file=$1 text=$2 name=$3
    shift 3
    mkdir -p "$(dirname "$tree/$file")"
    printf '%s\n' "$text" >"$tree/$file"
    if sh "$tree/scripts/check-layers.sh" "$tree" >"$out" 2>&1; then
        t_fail "$name: the check fails" "it passed: $(tail -n 1 "$out")"
    else
        line=$(grep -F "$file:" "$out")
        miss=""
        for p in "$@"; do
            echo "$line" | grep -qF -- "$p" || miss="$miss '$p'"
        done
        if [ "$(echo "$line" | grep -c .)" -eq 1 ] && [ -z "$miss" ]; then
            t_ok "$name: the check fails with one line ($line)"
        else
            t_fail "$name: one line naming the file, the include and both layers" "missing$miss in: $(cat "$out")"
        fi
    fi
    rm -f "$tree/$file"
}

plant lib/parity/planted.c '#include "array/array.h"' "lib/parity includes the array" \
    'lib/parity/planted.c:1:' '"array/array.h"' 'layer array' 'layer math'
plant lib/member/planted.c '#include "io/engine.h"' "a member includes the I/O engine" \
    'lib/member/planted.c:1:' '"io/engine.h"' 'layer io' 'layer member'
plant lib/io/planted.h '#include "stripe/stripe.h"' "the I/O engine includes the stripe layer" \
    'lib/io/planted.h:1:' '"stripe/stripe.h"' 'layer stripe' 'layer io'
plant lib/stripe/planted.h '#include "array/job.h"' "the stripe layer includes the jobs (no exception covers it)" \
    'lib/stripe/planted.h:1:' '"array/job.h"' 'layer jobs' 'layer stripe'
plant lib/array/planted.c '#include "uraid_ctl.h"' "the array includes the control socket's API" \
    'lib/array/planted.c:1:' '"uraid_ctl.h"' 'layer api' 'layer array'
plant cli/planted.c '#include "array/array.h"' "the CLI includes the array" \
    'cli/planted.c:1:' '"array/array.h"' 'layer array' 'layer front'
plant fuse/planted.c '#include "layout.h"' "the FUSE front-end includes lib/layout.h" \
    'fuse/planted.c:1:' '"layout.h"' 'layer math' 'layer front'
plant plugins/planted.c '#include "member/member.h"' "the plugin includes the member layer" \
    'plugins/planted.c:1:' '"member/member.h"' 'layer member' 'layer front'
plant lib/meta/planted.c '#include <fcntl.h>' "the math layer includes an I/O header" \
    'lib/meta/planted.c:1:' '<fcntl.h>' 'layer math'
plant lib/newdir/planted.c '#include "log.h"' "a directory outside the table" \
    'lib/newdir/planted.c' 'not in the layer table'

if sh "$tree/scripts/check-layers.sh" "$tree" >"$out" 2>&1; then
    t_ok "the copy passes again once the planted files are gone"
else
    t_fail "the copy passes again once the planted files are gone" "$(head -n 3 "$out")"
fi

# The compiler enforces the front-ends' rule: cli/ is built without -Ilib.
printf '#include "cli.h"\n#include "layout.h"\nint planted(void) { return 0; }\n' >"$tree/cli/planted.c"
cmd=$(cd "$tree" && make -s -n build/cli/planted.o 2>/dev/null | grep -- ' -c cli/planted.c')
if [ -z "$cmd" ]; then
    t_fail "the Makefile compiles cli/ files" "make -n printed no compile command"
elif echo "$cmd" | grep -q -- '-Ilib'; then
    t_fail "cli/ is compiled without -Ilib" "$cmd"
elif (cd "$tree" && mkdir -p build/cli && eval "$cmd") >"$out" 2>&1; then
    t_fail "the compiler refuses lib/layout.h in cli/" "it compiled: $cmd"
elif ! grep -q 'layout\.h: No such file' "$out" || grep -q 'cli\.h: No such file' "$out"; then
    # a failure for another reason (cli.h not found, a syntax error) proves nothing
    t_fail "the compiler refuses lib/layout.h in cli/" "it failed, but not on layout.h: $(head -n 3 "$out" | tr '\n' ' ')"
else
    t_ok "cli/ is compiled without -Ilib: the compiler refuses lib/layout.h ($(grep -m1 -o 'layout.h: No such file[^"]*' "$out"))"
fi
rm -f "$tree/cli/planted.c"

# The shared library: soname, links, exports.
so=build/liburaid.so
if [ "$(readelf -d "$so" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" = liburaid.so.0 ] &&
   [ "$(readlink build/liburaid.so)" = liburaid.so.0 ] &&
   readlink build/liburaid.so.0 | grep -qx 'liburaid\.so\.0\.[0-9]*\.[0-9]*' &&
   [ -f "build/$(readlink build/liburaid.so.0)" ]; then
    t_ok "liburaid.so has the soname liburaid.so.0 (liburaid.so -> liburaid.so.0 -> $(readlink build/liburaid.so.0))"
else
    t_fail "liburaid.so has the soname liburaid.so.0 and its links" \
        "soname '$(readelf -d "$so" 2>/dev/null | sed -n 's/.*soname: //p')', links $(ls -l build/liburaid.so* 2>&1 | tr '\n' ' ')"
fi
# every function declared in include/ carries the export macro
unmarked=$(grep -nE '^[a-z][a-z0-9_ ]*[ *]+[a-z_][a-z0-9_]*\(' include/*.h | grep -v ':typedef ' | head -n 5 | tr '\n' ' ')
if [ -z "$unmarked" ]; then
    t_ok "every function declared in include/*.h is marked URAID_API"
else
    t_fail "every function declared in include/*.h is marked URAID_API" "$unmarked"
fi
nm -D --defined-only "$so" 2>/dev/null | awk '{ print $NF }' | sort >"$t_tmp/exported"
grep -h '^URAID_API ' include/*.h | sed -E 's/^URAID_API [^(]*[ *]([a-z_0-9]+)\(.*/\1/' | sort >"$t_tmp/declared"
others=$(grep -v '^uraid_' "$t_tmp/exported" | head -n 5 | tr '\n' ' ')
if [ -s "$t_tmp/exported" ] && [ -z "$others" ]; then
    t_ok "liburaid.so exports only uraid_* symbols ($(wc -l <"$t_tmp/exported") of them)"
else
    t_fail "liburaid.so exports only uraid_* symbols" "also: ${others:-nothing exported at all}"
fi
if [ -s "$t_tmp/declared" ] && cmp -s "$t_tmp/declared" "$t_tmp/exported"; then
    t_ok "the exports are exactly the URAID_API declarations of include/ ($(wc -l <"$t_tmp/declared"))"
else
    t_fail "the exports are exactly the URAID_API declarations of include/" \
        "$(diff "$t_tmp/declared" "$t_tmp/exported" | grep '^[<>]' | head -n 8 | tr '\n' ' ')"
fi

# A program of a library user: include/ only, linked with the .so.
cat >"$t_tmp/user.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uraid.h"
#include "uraid_admin.h"

int main(int argc, char **argv)
{
    char why[512];
    struct uraid_array *a;
    struct uraid_open_params op = {0};
    int rc = uraid_open((const char *const *)argv + 1, argc - 1, &op, &a, why, sizeof why);
    if (rc) {
        printf("open: %s\n", why);
        return 1;
    }
    size_t len = 1 << 20;
    unsigned char *w = aligned_alloc(4096, len), *r = aligned_alloc(4096, len);
    for (size_t i = 0; i < len; i++)
        w[i] = (unsigned char)(i * 7 + 3);
    rc = uraid_write(a, w, len, 65536);
    if (!rc)
        rc = uraid_read(a, r, len, 65536);
    int same = !rc && !memcmp(w, r, len);
    static struct uraid_array_info info;
    uraid_get_info(a, &info);
    if (uraid_close(a) || !same) {
        printf("write/read: %s\n", rc ? uraid_strerror(rc) : "data differ");
        return 1;
    }
    static struct uraid_examine e;
    if (uraid_examine(argv[1], &e, why, sizeof why)) {
        printf("examine: %s\n", why);
        return 1;
    }
    char uuid[URAID_UUID_TEXT];
    uraid_uuid_text(info.uuid, uuid);
    printf("liburaid %s: raid%d %s, %llu bytes, [%d/%d], uuid %s, examine: role %d events %llu\n",
           uraid_version(), info.level, uraid_layout_name(info.level, info.layout), (unsigned long long)info.size_bytes,
           info.raid_devices, info.raid_devices - info.degraded, uuid, e.role, (unsigned long long)e.events);
    free(w);
    free(r);
    return 0;
}
EOF
for i in 0 1 2 3; do truncate -s 16M "$t_tmp/d$i.img"; done
$URAID create --level 5 --raid-devices 4 --assume-clean "$t_tmp"/d0.img "$t_tmp"/d1.img "$t_tmp"/d2.img \
    "$t_tmp"/d3.img >"$out" 2>&1 || t_fail "uraid create" "$(tail -n 1 "$out")"
user=$t_tmp/user
if $CC -std=gnu11 -Wall -Werror -Iinclude -o "$user" "$t_tmp/user.c" -Lbuild -luraid \
    -Wl,-rpath,"$(pwd)/build" >"$out" 2>&1; then
    t_ok "a program using include/ only builds against liburaid.so"
else
    t_fail "a program using include/ only builds against liburaid.so" "$(head -n 3 "$out" | tr '\n' ' ')"
fi
if readelf -d "$user" 2>/dev/null | grep -q 'NEEDED.*\[liburaid\.so\.0\]' &&
   ! nm "$user" 2>/dev/null | grep -q ' T uraid_open$'; then
    t_ok "it needs liburaid.so.0 at run time (the library is not linked in)"
else
    t_fail "it needs liburaid.so.0 at run time" "$(readelf -d "$user" 2>&1 | grep NEEDED | tr '\n' ' ')"
fi
if "$user" "$t_tmp"/d0.img "$t_tmp"/d1.img "$t_tmp"/d2.img "$t_tmp"/d3.img >"$out" 2>&1 &&
   grep -q '^liburaid .*: raid5 left-symmetric, .* \[4/4\], .* examine: role 0 ' "$out"; then
    t_ok "it opens the array uraid create made, writes, reads back, examines ($(cat "$out"))"
else
    t_fail "it opens the array uraid create made, writes, reads back, examines" "$(cat "$out")"
fi
t_expect "the array is still consistent (uraid check)" $URAID check "$t_tmp"/d0.img "$t_tmp"/d1.img \
    "$t_tmp"/d2.img "$t_tmp"/d3.img

# An internal function is not exported, so a user cannot link to it.
printf '#include <stdint.h>\nuint64_t array_member_sectors(const void *sb, uint64_t s);\n%s\n' \
    'int main(void) { return (int)array_member_sectors(0, 0); }' >"$t_tmp/internal.c"
if $CC -o "$t_tmp/internal" "$t_tmp/internal.c" -Lbuild -luraid >"$out" 2>&1; then
    t_fail "an internal function cannot be linked from liburaid.so" "array_member_sectors linked"
elif grep -q 'undefined reference to .array_member_sectors' "$out"; then
    t_ok "an internal function cannot be linked from liburaid.so (array_member_sectors: undefined reference)"
else
    t_fail "an internal function cannot be linked from liburaid.so" "$(head -n 2 "$out" | tr '\n' ' ')"
fi

t_finish
