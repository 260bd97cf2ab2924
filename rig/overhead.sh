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
# Alternating, finely: on these shared 2-core hosts the same job's IOPS
# differs by up to 20% between two 2 s stretches, more than the targets,
# and the difference drifts.  So one run of a mode is SEGS slices of SEG
# seconds, and the modes take turns slice by slice, in an order that puts
# every mode in every position equally often (SEGS=6: all six orders
# once), so neither drift nor being first after a job change favours one
# mode.  All slices of a run and job are stonewalled jobs of one fio
# process: starting fio under TCG takes seconds, which slices of their
# own spent on start-up instead of on measuring.  Each slice sets its
# mode and reads /proc/stat right before its I/O and again right after
# (exec_prerun/exec_postrun), so start-up is not counted.  The sysctl is
# 1 whenever a slice's io_setup() runs, so every context has its
# workers, and offload=0 slices measure the stock path.  The estimate
# is paired: per run, the median over slices of a slice's ratio to its
# neighbour of the other mode, so a slow stretch of the host touches
# both sides of a ratio instead of one mode's sum.
#
# Two more jobs, randread and randwrite on null_blk completing in the
# submitter (no device time, no emulation), show the CPU cost of the
# path alone: there IOPS is CPU-bound.  Informational, no target.
#
# aio.stat of the root cgroup around each slice tells whether offload=1
# really ran inline (a punt would be a different cost from the one
# measured here).
#
# A third mode, "nw" (offload=0, fio's nowait=1: the user's RWF_NOWAIT,
# which the offload code leaves alone), tells what NOWAIT itself costs
# in the block layer and page cache, apart from the offload bookkeeping.
#
# Then a second boot, deterministic: QEMU counts instructions (-icount,
# one TCG thread), so guest time is instructions executed, whatever the
# host does.  There, null_blk completing in the submitter (all CPU, no
# device time) gives IOPS that repeat to within ~0.3%: their ratio is
# the instructions the offload adds per I/O, exactly, and a lower bound
# for the IOPS ratio on any device, whose own time adds to both modes.
# NVMe is not measured there: its completions come from host threads,
# in host time, which -icount does not model.  Informational, no target.
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
{ cat $top/rig/fio/overhead.fio
  printf '%s\\n' filename=/dev/nvme0n1 '[warm]' rw=randwrite runtime=3
} >/tmp/warm.fio
fio /tmp/warm.fio >/dev/null
# The raw device's page cache (partition scan at boot): NOWAIT direct
# writes look it up (filemap_range_has_page()), blocking ones do not.
grep Buffers /proc/meminfo
# A slice's prerun (pre MODE) and postrun (post): CPU times, aio.stat.
cat >/tmp/slice.sh <<'EOS'
[ \$1 = pre ] && echo \$2 >/proc/sys/fs/aio-offload
grep '^cpu ' /proc/stat
cat /sys/fs/cgroup/aio.stat
[ \$1 = post ] && echo 1 >/proc/sys/fs/aio-offload
exit 0
EOS
orders=('0 1 nw' '1 nw 0' 'nw 0 1' '0 nw 1' '1 0 nw' 'nw 1 0')
i=0
echo 1 >/proc/sys/fs/aio-offload
for r in \$(seq $runs); do
	echo \"run \$r/$runs\"
	for job in randread randwrite nullb-randread nullb-randwrite; do
		dev=/dev/nvme0n1
		case \$job in nullb-*) dev=/dev/nullb0 ;; esac
		d=/tmp/out/\$job-\$r
		mkdir \$d
		{
			cat $top/rig/fio/overhead.fio
			echo \"filename=\$dev\"
			for s in \$(seq $segs); do
				for m in \${orders[i++ % 6]}; do
					echo \"[\$job-\$m-\$r-\$s]\"
					echo stonewall
					echo \"rw=\${job#nullb-}\"
					echo \"runtime=$seg\"
					[ \$m = nw ] && echo nowait=1
					echo \"exec_prerun=sh /tmp/slice.sh pre \${m/nw/0}\"
					echo 'exec_postrun=sh /tmp/slice.sh post'
				done
			done
		} >\$d/slices.fio
		(cd \$d && fio --output-format=json --output=fio.json slices.fio)
	done
done
getconf CLK_TCK >/tmp/out/clk_tck"
echo "  OVERHEAD fio libaio on NVMe, $runs runs x 4 jobs x offload 0/1/0+RWF_NOWAIT, $segs x ${seg}s slices each"
NULLB="null_blk.irqmode=0 null_blk.hw_queue_depth=64" \
	KERNEL=patched-perf QUIET=1 "$top/rig/vm.sh" "$cmd" || exit 1
python3 "$top/rig/overhead.py" "$out" "$runs" "$segs"
rc=$?

icmd="set -e
cd /tmp
k=0
for r in \$(seq $runs); do
	for m in 0 1 nw 1 0 nw; do
		k=\$((k + 1))
		s=\$m
		[ \$m = nw ] && s=0
		echo \$s >/proc/sys/fs/aio-offload
		for rw in randread randwrite; do
			{ cat $top/rig/fio/overhead.fio
			  echo filename=/dev/nullb0
			  echo \"[\$rw-\$m-\$k]\"
			  echo rw=\$rw
			  echo runtime=2
			  [ \$m = nw ] && echo nowait=1
			  true
			} >/tmp/icount.fio
			fio --output-format=json /tmp/icount.fio \\
				>/tmp/out/icount-\$rw-\$m-\$k.json
		done
	done
done"
echo "  OVERHEAD null_blk under QEMU -icount (instructions, not host time), $runs runs"
NAME=$NAME-icount ACCEL=tcg,thread=single QEMU_EXTRA="-icount shift=1,sleep=on" \
	NULLB="null_blk.irqmode=0 null_blk.hw_queue_depth=64" \
	KERNEL=patched-perf QUIET=1 "$top/rig/vm.sh" "$icmd" || exit 1
python3 "$top/rig/overhead.py" --icount "$top/build/vm/$NAME-icount/out" "$runs" ||
	exit 1
exit $rc
