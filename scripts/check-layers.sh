#!/bin/sh
# make layers: the library's direction (docs/ARCHITECTURE.md "Layers").
# Every C file and header belongs to one layer (the table below, first
# matching row); a file may include headers of its own layer and of the
# layers below it, never above, and a layer with an "only" list may include
# nothing else (front-ends: the public headers in include/). Pure math and
# formats may not include system I/O headers either. One line per violation
# names the file, the include and both layers; exit 1 when there is any.
#
#   sh scripts/check-layers.sh [ROOT]      (ROOT: the tree to check, default
#                                           the one this script is in)
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2

# path prefix (first match wins) | layer | rank (higher = above) | only:
# the only headers it may include ("-": any of its rank or below)
LAYERS_TABLE='
tests/                 tests   9  -
cli/                   front   8  cli/ fuse/fuse_server.h include/
fuse/                  front   8  fuse/ include/
plugins/               front   8  plugins/ include/
include/uraid_ctl.h    api     7  -
include/uraid_admin.h  api     7  -
lib/ctl/               api     7  -
lib/admin/             api     7  -
lib/array/job          jobs    5  -
lib/array/rebuild      jobs    5  -
lib/array/resync       jobs    5  -
lib/array/scrub        jobs    5  -
lib/jobs/              jobs    5  -
lib/array/dataio       stripe  4  -
lib/array/badsector.c  stripe  4  -
lib/stripe/            stripe  4  -
lib/array/             array   6  -
lib/io/                io      3  -
lib/member/            member  2  -
lib/parity/            math    1  -
lib/conf/              math    1  -
lib/meta/              math    1  -
lib/layout.            math    1  -
lib/raid0.             math    1  -
lib/raid10.            math    1  -
lib/linear.            math    1  -
lib/reshape_geom.      math    1  -
lib/log.               base    0  -
include/               base    0  -
'

# Allowed exceptions: a file or a whole layer | the header it may include
# (as resolved) although it lies above | why. Each is an upward include that
# work in progress elsewhere removes.
LAYERS_EXCEPTIONS='
stripe  lib/array/array.h  the stripe handler reads the shared state of the array (struct uraid_array: slot table, geometry, locks, engine) as raid5.c reads r5conf; a state struct of its own below the array would remove this
jobs    lib/array/array.h  the job runner (job.c) takes the job lock of the array and writes superblocks through array.c; the I/O path reaches the jobs only through array_notify
'

# Headers the math layer may not include: it does no I/O.
LAYERS_NO_IO='fcntl.h sys/uio.h sys/ioctl.h sys/stat.h sys/mman.h aio.h liburing.h libnbd.h linux/fs.h'

files=$(find cli fuse plugins include lib tests -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)
[ -n "$files" ] || { echo "layers: no sources under $(pwd)" >&2; exit 2; }

# "path:line:text" for every #include, then the list of files (to resolve)
# shellcheck disable=SC2086
{
    echo "$files" | sed 's/^/F /'
    grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' $files | sed 's/^/I /'
} | LAYERS_TABLE=$LAYERS_TABLE LAYERS_EXCEPTIONS=$LAYERS_EXCEPTIONS LAYERS_NO_IO=$LAYERS_NO_IO awk '
function classify(path,    i) {
    for (i = 1; i <= nrows; i++)
        if (substr(path, 1, length(prefix[i])) == prefix[i])
            return i;
    return 0;
}
function dirname(p,    d) {
    d = p;
    if (!sub(/\/[^\/]*$/, "", d))
        return ".";
    return d;
}
# the header the compiler would find: the includer'\''s directory, then the
# -I directories of the Makefile
function resolve(from, name, quoted,    c, n, k) {
    n = 0;
    if (quoted)
        cand[++n] = dirname(from) "/" name;
    cand[++n] = "include/" name;
    cand[++n] = "lib/" name;
    cand[++n] = "tests/lib/" name;
    cand[++n] = "fuse/" name;
    for (k = 1; k <= n; k++) {
        c = cand[k];
        while (sub(/\/\.\//, "/", c)) {}
        while (sub(/[^\/.][^\/]*\/\.\.\//, "", c)) {}
        if (c in exists)
            return c;
    }
    return "";
}
function only_ok(row, hdr,    lst, n, k) {
    if (only[row] == "-")
        return 1;
    n = split(only[row], lst, " ");
    for (k = 1; k <= n; k++)
        if (substr(hdr, 1, length(lst[k])) == lst[k])
            return 1;
    return 0;
}
function excepted(file, lay, hdr) {
    if ((file " " hdr) in exc) { used[file " " hdr] = 1; return 1; }
    if ((lay " " hdr) in exc) { used[lay " " hdr] = 1; return 1; }
    return 0;
}
BEGIN {
    nrows = 0;
    n = split(ENVIRON["LAYERS_TABLE"], lines, "\n");
    for (i = 1; i <= n; i++) {
        nf = split(lines[i], f, " ");
        if (nf < 4 || f[1] ~ /^#/)
            continue;
        nrows++;
        prefix[nrows] = f[1]; layer[nrows] = f[2]; rank[nrows] = f[3];
        only[nrows] = f[4];
        for (k = 5; k <= nf; k++)
            only[nrows] = only[nrows] " " f[k];
    }
    n = split(ENVIRON["LAYERS_EXCEPTIONS"], lines, "\n");
    nexc = 0;
    for (i = 1; i <= n; i++) {
        if (split(lines[i], f, " ") < 3)
            continue;
        exc[f[1] " " f[2]] = 1;
        excname[++nexc] = f[1] " " f[2];
    }
    split(ENVIRON["LAYERS_NO_IO"], lst, " ");
    for (k in lst)
        noio[lst[k]] = 1;
    bad = 0; nfiles = 0; nincl = 0;
}
$1 == "F" {
    exists[$2] = 1;
    nfiles++;
    if (!classify($2)) {
        print $2 ": not in the layer table (add its directory to scripts/check-layers.sh)";
        bad++;
    }
    next;
}
$1 == "I" {
    line = substr($0, 3);
    # path:lineno:text
    file = line; sub(/:.*/, "", file);
    rest = substr(line, length(file) + 2);
    lineno = rest; sub(/:.*/, "", lineno);
    text = substr(rest, length(lineno) + 2);
    quoted = text ~ /include[ \t]*"/;
    name = text;
    if (quoted) {
        sub(/^[^"]*"/, "", name); sub(/".*$/, "", name);
    } else {
        sub(/^[^<]*</, "", name); sub(/>.*$/, "", name);
    }
    row = classify(file);
    if (!row)
        next;
    nincl++;
    hdr = resolve(file, name, quoted);
    if (hdr == "") {
        if (quoted) {
            printf "%s:%s: #include \"%s\" is no header of this tree (layer %s)\n", file, lineno, name, layer[row];
            bad++;
        } else if (layer[row] == "math" && (name in noio)) {
            printf "%s:%s: #include <%s> is a system I/O header: layer math does no I/O\n", file, lineno, name;
            bad++;
        }
        next;
    }
    hrow = classify(hdr);
    if (!hrow)
        next; # reported above as a file outside the table
    shown = quoted ? "\"" name "\"" : "<" name ">";
    if (!only_ok(row, hdr)) {
        if (excepted(file, layer[row], hdr)) next;
        printf "%s:%s: #include %s (%s, layer %s) from layer %s, which may include only %s\n",
               file, lineno, shown, hdr, layer[hrow], layer[row], only[row];
        bad++;
    } else if (rank[hrow] + 0 > rank[row] + 0) {
        if (excepted(file, layer[row], hdr)) next;
        printf "%s:%s: #include %s (%s, layer %s) from layer %s: %s is above %s\n",
               file, lineno, shown, hdr, layer[hrow], layer[row], layer[hrow], layer[row];
        bad++;
    }
}
END {
    for (i = 1; i <= nexc; i++)
        if (!(excname[i] in used))
            print "layers: note: exception \"" excname[i] "\" no longer needed: remove it from scripts/check-layers.sh";
    if (bad) {
        printf "layers: %d violation%s (%d files, %d includes; docs/ARCHITECTURE.md \"Layers\")\n",
               bad, bad == 1 ? "" : "s", nfiles, nincl;
        exit 1;
    }
    printf "layers: ok (%d files, %d includes, %d allowed exceptions)\n", nfiles, nincl, nexc;
}'
