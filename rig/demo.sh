#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo.sh: boot the patched kernel and run rig/fio/demo.fio (libaio,
# 4 KiB O_DIRECT random read and write, 32 in flight) on the NVMe and
# SD flash devices; print IOPS and submission latency per device, with
# fs.aio-offload=0 (stock behaviour) and =1 side by side where the kernel
# has the knob.  On the patched kernel, also ext4's extent pin: random
# overwrites of a file of one-block extents on NVMe, cold after a
# remount, unpinned and pinned, with where the writes went (aio.stat).
# The guest's half is rig/demo-guest.sh.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${KERNEL:-patched}
export NAME=${NAME:-demo}
runtime=${RUNTIME:-10}
shim=$top/build/demo/vcsw.so
mkdir -p "$top/build/demo"
gcc -O2 -Wall -shared -fPIC -o "$shim" "$top/bench/vcsw-shim.c" -ldl ||
	{ echo "demo.sh: cannot build bench/vcsw-shim.c" >&2; exit 1; }
cmd="TOP=$top RUNTIME=$runtime SHIM=$shim bash $top/rig/demo-guest.sh"
echo "  DEMO    fio libaio on NVMe and SD flash ($kernel kernel, ${runtime}s per job)"
KERNEL=$kernel QUIET=1 "$top/rig/vm.sh" "$cmd" || exit 1
out=$top/build/vm/$NAME/out
args=()
for d in nvme flash; do
	for m in $(sed 's/^modes: //' "$out/modes"); do
		case $m in
		stock) args+=("$d=$out/fio-$d-$m.json") ;;
		*) args+=("$d offload=$m=$out/fio-$d-$m.json") ;;
		esac
	done
done
echo
echo "Kernel $(grep -m1 -o 'aio-guest: [^,]*' "$top/build/vm/$NAME/console.log" | cut -d' ' -f2)" \
	"in QEMU TCG, 2 vCPUs; slat = time inside io_submit() per I/O"
python3 "$top/rig/fio-table.py" "${args[@]}"
[ -f "$out/pin-extents" ] || exit 0
echo
echo "ext4 on NVMe, offload on: $(sed 's/.*: //' "$out/pin-extents"), remounted"
echo "(cold extent tree), random 4 KiB overwrites; unpinned, then pinned"
python3 "$top/rig/fio-table.py" "file unpinned=$out/fio-ext4-unpinned.json" \
	"file pinned=$out/fio-ext4-pinned.json"
for p in unpinned pinned; do
	# aio.stat deltas: inline, and every punt_* reason summed.
	paste "$out/aio-$p.0" "$out/aio-$p.1" | awk -v p="$p" '
		$1 == "inline" { inl = $4 - $2 }
		$1 ~ /^punt_/ { punt += $4 - $2; if ($4 > $2) why = why " " $1 "=" $4 - $2 }
		END { printf "  %-9s %d writes inline, %d handed to a worker%s\n",
			p, inl, punt, why ? " (" substr(why, 2) ")" : "" }'
done
