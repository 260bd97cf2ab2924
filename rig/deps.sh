#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deps.sh: install the Debian packages the rig needs; quick when present.
# The kernel source is pinned: the overlay's patches are against it.
set -euo pipefail

src_pkg=linux-source-6.12
src_ver=6.12.118-1~deb12u1
pkgs=(build-essential bc bison flex libelf-dev libssl-dev ccache git patch
	python3 python3-ply python3-git xz-utils cpio kmod qemu-system-x86 fio libaio-dev liburing-dev
	e2fsprogs xfsprogs dmsetup util-linux procps gnuplot-nox jq)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed ||
		missing+=("$p")
done
[ "$(dpkg-query -W -f='${db:Status-Status} ${Version}' $src_pkg 2>/dev/null)" = "installed $src_ver" ] ||
	missing+=("$src_pkg=$src_ver")
[ ${#missing[@]} -eq 0 ] && exit 0

echo "  DEPS    apt-get install ${missing[*]}"
[ "$(id -u)" = 0 ] || { echo "deps.sh: need root for apt-get" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
