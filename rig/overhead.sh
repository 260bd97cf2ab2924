#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# overhead.sh: what AIO offloading costs where nothing would block.  One
# boot of the patched kernel; fio libaio 4k O_DIRECT randread and
# randwrite, iodepth 32, on the raw NVMe namespace, with fs.aio-offload
# 0 and 1.  Per run and mode: IOPS, and CPU per I/O from /proc/stat (all
# CPUs, so that work done by offload workers or in interrupts counts,
# which fio's own CPU numbers miss).  Prints medians over RUNS runs and
# checks them against the targets: offload=1 IOPS within 3% of
# offload=0, CPU per I/O within 10%.
#
# Alternating, finely: on these shared 2-core hosts two 10 s runs in a
# row differ by up to 15%, more than the targets, and the difference
# drifts.  So one run of a mode is SEGS slices of SEG seconds, and the
# modes take turns slice by slice, in an order that puts every mode in
# every position equally often (SEGS=6: all six orders once), so
# neither drift nor being first after a job change favours one mode.
# /proc/stat is read by fio itself right before and after the I/O of a
# slice (exec_prerun/exec_postrun), so fio's start-up is not counted.
#
# A third job, randread on null_blk completing in the submitter (no
# device time, no emulation), shows the CPU cost of the path alone:
# there IOPS is CPU-bound.  Informational, no target.
#
# aio.stat of the root cgroup around each slice tells whether offload=1
# really ran inline (a punt would be a different cost from the one
# measured here).
#
# A third mode, "nw" (offload=0, fio's nowait=1: the user's RWF_NOWAIT,
# which the offload code leaves alone), tells what NOWAIT itself costs
# in the block layer and page cache, apart from the offload bookkeeping.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
export NAME=${NAME:-overhead}
runs=${RUNS:-5}
segs=${SEGS:-6}
seg=${SEG:-2}
out=$top/build/vm/$NAME/out

cmd="set -e
[ -f /proc/sys/fs/aio-offload ] || { echo 'no fs.aio-offload: not the patched kernel'; exit 1; }
cd /tmp
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
orders=('0 1 nw' '1 nw 0' 'nw 0 1' '0 nw 1' '1 0 nw' 'nw 1 0')
i=0
for r in \$(seq $runs); do
	echo \"run \$r/$runs\"
	for job in randread randwrite nullb-randread; do
		dev=/dev/nvme0n1
		[ \$job = nullb-randread ] && dev=/dev/nullb0
		for s in \$(seq $segs); do
			for m in \${orders[i++ % 6]}; do
				sec=\${job#nullb-}; [ \$m = nw ] && sec=\$sec-nowait
				case \$m in 1) echo 1 ;; *) echo 0 ;; esac >/proc/sys/fs/aio-offload
				d=/tmp/out/\$job-\$m-\$r-\$s
				mkdir \$d
				cat /sys/fs/cgroup/aio.stat >\$d/aio.stat.0
				(cd \$d && fio --output-format=json --output=fio.json \
					--section=\$sec --filename=\$dev \
					--runtime=$seg $top/rig/fio/overhead.fio)
				cat /sys/fs/cgroup/aio.stat >\$d/aio.stat.1
			done
		done
	done
done
getconf CLK_TCK >/tmp/out/clk_tck"
echo "  OVERHEAD fio libaio on NVMe, $runs runs x 2 jobs x offload 0/1/0+RWF_NOWAIT, $segs x ${seg}s slices each"
NULLB="null_blk.irqmode=0 null_blk.hw_queue_depth=64" \
	KERNEL=patched-perf QUIET=1 "$top/rig/vm.sh" "$cmd" || exit 1
python3 "$top/rig/overhead.py" "$out" "$runs" "$segs"
