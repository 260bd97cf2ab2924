#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo.sh: boot the patched kernel and run rig/fio/demo.fio (libaio,
# 4 KiB O_DIRECT random read and write, 32 in flight) on the NVMe and
# SD flash devices; print IOPS and submission latency per device, with
# fs.aio-offload=0 (stock behaviour) and =1 side by side where the kernel
# has the knob.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${KERNEL:-patched}
export NAME=${NAME:-demo}
runtime=${RUNTIME:-10}
cmd="set -e; knob=/proc/sys/fs/aio-offload
modes=stock; [ -f \$knob ] && modes='0 1'
for d in nvme:/dev/nvme0n1 flash:/dev/mmcblk0; do
	for m in \$modes; do
		[ \$m = stock ] || echo \$m >\$knob
		echo \"### fio \${d%%:*} \${d#*:} offload=\$m\"
		fio --output-format=json --output=/tmp/out/fio-\${d%%:*}-\$m.json \
			--filename=\${d#*:} --runtime=$runtime $top/rig/fio/demo.fio
	done
done
echo \"modes: \$modes\" >/tmp/out/modes"
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
