#!/bin/sh
# Installs the Debian packages that building, testing and the demo need.
# Idempotent and quiet when everything is present; run as root on Debian.
set -eu

packages="gcc make pkg-config dpkg-dev debhelper fakeroot libisal-dev mdadm xz-utils jq clang libclang-rt-14-dev libtsan2 liburing-dev nbdkit nbdkit-plugin-dev libnbd-bin libnbd-dev fio qemu-utils libfuse3-dev fuse3 e2fsprogs util-linux btrfs-progs openssl gnuplot-nox bonnie++"

missing=""
for pkg in $packages; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    case "$status" in
        "install ok installed") ;;
        *) missing="$missing $pkg" ;;
    esac
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "deps.sh: missing Debian packages:$missing; run as root or install them with apt-get" >&2
    exit 1
fi
echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
