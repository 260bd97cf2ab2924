#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo.sh: boot the patched kernel and run rig/fio/demo.fio (libaio,
# 4 KiB O_DIRECT random read and write, 32 in flight) on the NVMe and
# SD flash devices; print IOPS and submission latency per device.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${KERNEL:-patched}
export NAME=${NAME:-demo}
runtime=${RUNTIME:-10}
cmd="set -e; for d in nvme:/dev/nvme0n1 flash:/dev/mmcblk0; do
	echo \"### fio \${d%%:*} \${d#*:}\"
	fio --output-format=json --output=/tmp/out/fio-\${d%%:*}.json \
		--filename=\${d#*:} --runtime=$runtime $top/rig/fio/demo.fio
done
echo \"fs.aio-offload: \$(cat /proc/sys/fs/aio-offload 2>/dev/null || echo 'absent (stock behaviour)')\""
echo "  DEMO    fio libaio on NVMe and SD flash ($kernel kernel, ${runtime}s per job)"
KERNEL=$kernel QUIET=1 "$top/rig/vm.sh" "$cmd" || exit 1
out=$top/build/vm/$NAME/out
echo
echo "Kernel: $(grep -m1 -o 'aio-guest: [^,]*' "$top/build/vm/$NAME/console.log" | cut -d' ' -f2)," \
	"$(grep -m1 '^fs.aio-offload' "$out/cmd.log")"
python3 "$top/rig/fio-table.py" nvme="$out/fio-nvme.json" flash="$out/fio-flash.json"
