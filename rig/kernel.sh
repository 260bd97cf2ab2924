#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kernel.sh patched|stock|series|patched-perf|stock-perf|patched-debug|
# stock-debug: configure and build bzImage out of tree (build/<which>/obj)
# with ccache, from build/<which>/linux (the -perf and -debug ones from
# the tree without the suffix).
#
# The config is allnoconfig plus rig/kernel.config plus the selftests'
# config fragment plus rig/debug.config (lockdep, atomic sleep checks)
# except for the -perf kernels, so that the kernels compared get the
# same options (the stock tree just has no CONFIG_AIO_OFFLOAD to set).
# The -debug kernels (make check-debug) add rig/debug-full.config.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
which=${1:?usage: kernel.sh patched|stock|series|patched-perf|stock-perf|patched-debug|stock-debug}
tree=${which%-perf}
tree=${tree%-debug}
src=$top/build/$tree/linux
obj=$top/build/$which/obj
[ -d "$src" ] || { echo "kernel.sh: $src missing" >&2; exit 1; }
mkdir -p "$obj"

# ccache keys on paths relative to the repo, so a fresh clone elsewhere
# (CI) and the other tree (stock vs patched) hit the same entries.
export CCACHE_BASEDIR=$top
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
export KBUILD_BUILD_TIMESTAMP='Thu Jan  1 00:00:00 UTC 2025'
export KBUILD_BUILD_USER=aio-rig KBUILD_BUILD_HOST=aio-rig
export KBUILD_BUILD_VERSION=1
kmake() { make -s -C "$src" O="$obj" CC="ccache gcc" HOSTCC="ccache gcc" LOCALVERSION=-$which "$@"; }

frag=$obj/rig.config
case $which in
*-perf) debug=(/dev/null) ;;
*-debug) debug=("$top/rig/debug.config" "$top/rig/debug-full.config") ;;
*) debug=("$top/rig/debug.config") ;;
esac
cat "$top/rig/kernel.config" "$top/tools/testing/selftests/aio/config" "${debug[@]}" >"$frag.new"
# A series step may add Kconfig symbols the old .config never saw.
[ "$which" = series ] && rm -f "$obj/.config"
if ! cmp -s "$frag.new" "$frag" || [ ! -f "$obj/.config" ]; then
	mv "$frag.new" "$frag"
	echo "  CONFIG  build/$which/obj/.config"
	kmake KCONFIG_ALLCONFIG="$frag" allnoconfig >/dev/null
	# Every line of the fragment must have taken: a typo or a missing
	# dependency would otherwise silently drop an option.
	missing=$(grep -E '^CONFIG_' "$frag" | sort -u | while read -r l; do
		# The stock tree (and early series steps) lack our symbols.
		case "$which:${l%%=*}" in
		patched:* | patched-perf:* | patched-debug:*) ;;
		*:CONFIG_AIO_OFFLOAD|*:CONFIG_CGROUP_AIO) continue ;;
		esac
		grep -qxF "$l" "$obj/.config" || echo "$l"
	done)
	if [ -n "$missing" ]; then
		echo "kernel.sh: options not set in .config:" $missing >&2
		exit 1
	fi
else
	rm -f "$frag.new"
fi
echo "  BUILD   build/$which (bzImage, -j$(($(nproc) + 1)))"
start=$(date +%s)
# The base builds warning-free with this config and Debian's gcc, so a
# warning is ours: fail, as upstream's W=1 / 0-day would flag it.  ccache
# replays a cached object's warnings, so this holds on rebuilds too.
kmake -j$(($(nproc) + 1)) bzImage 2> >(tee "$obj/build.err" >&2)
if grep -q 'warning:' "$obj/build.err"; then
	echo "kernel.sh: compiler warnings in build/$which (see above)" >&2
	rm -f "$obj/arch/x86/boot/bzImage"
	exit 1
fi
echo "  KERNEL  build/$which/obj/arch/x86/boot/bzImage ($(kmake -s kernelrelease), $(($(date +%s) - start)) s)"
