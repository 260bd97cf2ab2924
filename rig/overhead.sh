#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# overhead.sh: what AIO offloading costs where nothing would block.  One
# boot of the patched kernel; fio libaio 4k O_DIRECT randread and
# randwrite, iodepth 32, on the raw NVMe namespace, RUNS times each with
# fs.aio-offload 0 and 1, alternating which goes first.  Per run: IOPS,
# and CPU per I/O from /proc/stat (all CPUs, so that work done by offload
# workers or in interrupts counts, which fio's own CPU numbers miss).
# Prints medians and checks them against the targets: offload=1 IOPS
# within 3% of offload=0, CPU per I/O within 10%.
#
# A third mode, "nw" (offload=0, fio's nowait=1: the user's RWF_NOWAIT,
# which the offload code leaves alone), tells what NOWAIT itself costs
# in the block layer and page cache, apart from the offload bookkeeping.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
export NAME=${NAME:-overhead}
runs=${RUNS:-5}
runtime=${RUNTIME:-10}
out=$top/build/vm/$NAME/out

cmd="set -e
[ -f /proc/sys/fs/aio-offload ] || { echo 'no fs.aio-offload: not the patched kernel'; exit 1; }
cpu() { awk '/^cpu /{b=\$2+\$3+\$4+\$7+\$8+\$9; print b, b+\$5+\$6}' /proc/stat; }
# Write the whole region once (the image is sparse on the host, and a
# first write there costs the host an allocation), then a warm-up run
# that is not counted.
echo 'precondition: write 512 MiB, warm up'
fio --name=fill --filename=/dev/nvme0n1 --rw=write --bs=1M --size=512m \
	--direct=1 --ioengine=libaio --iodepth=4 >/dev/null
fio --section=randwrite --filename=/dev/nvme0n1 --runtime=3 \
	$top/rig/fio/overhead.fio >/dev/null
# The raw device's page cache (partition scan at boot): NOWAIT direct
# writes look it up (filemap_range_has_page()), blocking ones do not.
grep Buffers /proc/meminfo
for r in \$(seq $runs); do
	order='0 1 nw'; [ \$((r % 2)) = 0 ] && order='nw 1 0'
	for job in randread randwrite; do
		for m in \$order; do
			sec=\$job; [ \$m = nw ] && sec=\$job-nowait
			case \$m in 1) echo 1 ;; *) echo 0 ;; esac >/proc/sys/fs/aio-offload
			f=/tmp/out/\$job-\$m-\$r
			echo \"run \$r/$runs \$job mode=\$m\"
			cpu >\$f.cpu0
			fio --output-format=json --output=\$f.json --section=\$sec \
				--filename=/dev/nvme0n1 --runtime=$runtime $top/rig/fio/overhead.fio
			cpu >\$f.cpu1
		done
	done
done
getconf CLK_TCK >/tmp/out/clk_tck"
echo "  OVERHEAD fio libaio on NVMe, $runs runs x 2 jobs x offload 0/1/0+RWF_NOWAIT, ${runtime}s each"
KERNEL=patched-perf QUIET=1 "$top/rig/vm.sh" "$cmd" || exit 1
python3 "$top/rig/overhead.py" "$out" "$runs"
