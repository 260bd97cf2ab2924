#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest.sh: one round of the benchmark inside the rig's guest (run by
# rig/bench.sh through rig/vm.sh).  For every scenario: set it up, then
# run fio once per mode (stock kernel: "stock"; patched: fs.aio-offload
# "off" and "on", and for some "pin": on, the file pinned) with libaio,
# and once with io_uring.  Results go to
# $OUT/<scenario>-<mode>-<engine>.{json,cpu,vcsw}.  S1 and S6 also run
# psync, the synchronous reference.
#
# Environment: BENCH_DIR (this directory), OUT, RUNTIME (s), SCENARIOS,
# ROUND ("i/n", for the progress lines), SHIM (the LD_PRELOAD .so).
set -uo pipefail

dir=${BENCH_DIR:?}
out=${OUT:?}
rt=${RUNTIME:-5}
mkdir -p "$out"
knob=/proc/sys/fs/aio-offload
if [ -f $knob ]; then modes="off on"; else modes=stock; fi
# What io_uring and psync runs are filed under: the offload's sysctl does
# not touch them, so one run per kernel.
other=$([ "$modes" = stock ] && echo stock || echo on)
mnt=/tmp/bench-mnt
mkdir -p $mnt

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }

# Where a run's writes went and where its CPU time went: the root
# cgroup's aio.stat (patched kernel) and the per-CPU lines of /proc/stat,
# before and after, and the reasons ext4 gave for its NOWAIT refusals
# (its tracepoint, which fires only on a refusal).
tr=/sys/kernel/tracing
ev=$tr/events/ext4/ext4_dio_nowait_eagain/enable
# No comm recording: it would hook every context switch.
[ -w $ev ] && { echo 4096 >$tr/buffer_size_kb; echo 0 >$tr/options/record-cmd; }
snap() {	# snap FILE
	{ [ -r /sys/fs/cgroup/aio.stat ] && sed 's/^/aio /' /sys/fs/cgroup/aio.stat
	  grep '^cpu[0-9]' /proc/stat; } >"$1"
}
trace_on() { [ -w $ev ] && { echo >$tr/trace; echo 1 >$ev; }; }
trace_off() {	# trace_off FILE: "reason N" lines, and events lost
	[ -w $ev ] || return 0
	echo 0 >$ev
	{ grep -o 'reason [a-z_]*' $tr/trace | sort | uniq -c | awk '{print $3, $1}'
	  echo "overrun $(cat $tr/per_cpu/cpu*/stats | awk '/^overrun/{s+=$2} END{print s+0}')"
	} >"$1"
}

# fio_run NAME ENGINE MODE [fio args...]: one measured fio run.
fio_run() {
	local name=$1 eng=$2 mode=$3 b0 b1 f
	shift 3
	f=$out/$name-$mode-$eng
	# A scenario run twice in a round (S1n, first and last) keeps both.
	[ -e "$f.json" ] && f=$f-2
	case $mode in off) echo 0 >$knob ;; on|pin) echo 1 >$knob ;; esac
	# "pin": the shim pins the file fio opens (EXT4_IOC_PIN_EXTENTS).
	local pin=
	[ "$mode" = pin ] && pin=1
	echo "bench: round $ROUND $(uname -r) $name $mode $eng"
	rm -f "$f.vcsw"
	snap "$f.pre"
	trace_on
	b0=$(busy)
	SHIM_PIN=$pin VCSW_OUT=$f.vcsw LD_PRELOAD=$SHIM fio --output-format=json \
		--output="$f.json" --ioengine="$eng" --runtime="$rt" \
		"$dir/common.fio" "$@" >"$f.log" 2>&1 || echo "fio failed: $(tail -1 "$f.log")" >"$f.err"
	b1=$(busy)
	trace_off "$f.eagain"
	snap "$f.post"
	echo "$((b1 - b0)) $(getconf CLK_TCK)" >"$f.cpu"
}

# The scenarios also run with the file pinned (patched kernel, libaio):
# ext4's extent pin matters where a write's mapping may not be cached.
pin_scen=" S1n S2 S2c S4n "
modes_of() {	# modes_of NAME: the libaio modes NAME runs in
	if [ "$modes" != stock ] && [ -z "${pin_scen##* $1 *}" ]; then
		echo "$modes pin"
	else
		echo "$modes"
	fi
}

# every NAME SETUP FIO-ARGS...: SETUP before each measured run.
every() {
	local name=$1 setup=$2 m
	shift 2
	for m in $(modes_of "$name"); do
		$setup
		fio_run "$name" libaio "$m" "$@"
	done
	$setup
	fio_run "$name" io_uring "$other" "$@"
}

# psync NAME SETUP FIO-ARGS...: the synchronous reference (one pwrite or
# pread at a time, no submission queue: fio reports no slat for it).
psync() {
	local name=$1 setup=$2
	shift 2
	$setup
	fio_run "$name" psync "$other" "$@"
}

fresh_fs() {	# fresh_fs DEV
	umount $mnt 2>/dev/null
	mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$1" && mount "$1" $mnt
}
written() {	# written FILE MIB: on disk, not cached
	dd if=/dev/zero of="$1" bs=1M count="$2" status=none conv=fsync
	echo 3 >/proc/sys/vm/drop_caches
}
nop() { :; }
drop() { echo 3 >/proc/sys/vm/drop_caches; }

s1() {	# random overwrite of a written file: nothing should block
	local dev=$1 tag=$2
	fresh_fs "$dev" && written $mnt/f 256
	every "S1$tag" drop --filename=$mnt/f --size=256m --rw=randwrite
	psync "S1$tag" drop --filename=$mnt/f --size=256m --rw=randwrite
}
s2() {	# s2 NAME [SPLIT]: writes into unwritten extents while jbd2 is kept busy
	# SPLIT (S2c): fio on CPU 0, the metadata process on CPU 1, as a
	# database keeps its submitting threads on cores of their own.  A
	# diagnostic: how much of S2's tail is the two sharing a vCPU.
	local name=$1 split=${2:-} fcpu= mcpu=
	[ -n "$split" ] && fcpu=--cpus_allowed=0 mcpu="taskset -c 1"
	fresh_fs /dev/nvme0n1
	prep() { rm -f $mnt/f; fallocate -l 256M $mnt/f; sync; }
	# Create, rename, fsync (a journal commit each round) and delete
	# small files, in one process: a shell loop forking three programs
	# per round spent the guest's two CPUs on fork and exec, so that the
	# submitter's tail measured CPU sharing on both kernels, and it
	# committed a few times a second at most.
	meta() {
		mkdir -p $mnt/meta
		$mcpu python3 -c '
import os, sys
d, stop = sys.argv[1] + "/meta", sys.argv[1] + "/stop"
i = 0
while not os.path.exists(stop):
    a, b = "%s/a%d" % (d, i), "%s/b%d" % (d, i)
    fd = os.open(a, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"x")
    os.rename(a, b)
    os.fsync(fd)
    os.close(fd)
    if i >= 50:
        os.unlink("%s/b%d" % (d, i - 50))
    i += 1
print(sys.argv[2], "metadata rounds:", i)
' $mnt "$name" >>"$out/$name.info" &
	}
	local m
	for m in $(modes_of "$name") io_uring; do
		prep; rm -f $mnt/stop; meta
		case $m in
		io_uring) fio_run "$name" io_uring "$other" $fcpu \
			--filename=$mnt/f --size=256m --rw=randwrite ;;
		*) fio_run "$name" libaio "$m" $fcpu --filename=$mnt/f --size=256m --rw=randwrite ;;
		esac
		touch $mnt/stop; wait
	done
}
s3() {	# writes into holes within i_size
	fresh_fs /dev/nvme0n1
	hole() { rm -f $mnt/f; truncate -s 256M $mnt/f; sync; }
	every S3 hole --filename=$mnt/f --size=256m --rw=randwrite
}
s4() {	# overwrites of a fragmented file, cold extent tree, slow flash
	umount $mnt 2>/dev/null
	dmsetup remove slow 2>/dev/null
	# Set up on the bare SD card, with the file and another written in
	# turns (bench/fragment.py): the file gets one-block extents.
	fresh_fs /dev/mmcblk0 || return
	echo 1000000 >/sys/fs/ext4/mmcblk0/mb_stream_req
	"$dir/fragment.py" $mnt/f $mnt/g 32 || { umount $mnt; return; }
	rm $mnt/g
	echo "S4 extents: $(filefrag $mnt/f)" >"$out/S4.info"
	umount $mnt
	echo "0 $(blockdev --getsz /dev/mmcblk0) delay /dev/mmcblk0 0 2" | dmsetup create slow || return
	dmsetup mknodes slow	# no udev in the guest
	cold() { umount $mnt 2>/dev/null; mount /dev/mapper/slow $mnt && drop; }
	every S4 cold --filename=$mnt/f --size=32m --rw=randwrite
	umount $mnt; dmsetup remove slow
}
s4n() {	# overwrites of a fragmented file, cold extent tree, NVMe
	fresh_fs /dev/nvme0n1 || return
	echo 1000000 >/sys/fs/ext4/nvme0n1/mb_stream_req
	"$dir/fragment.py" $mnt/f $mnt/g 32 || return
	rm $mnt/g
	echo "S4n extents: $(filefrag $mnt/f)" >"$out/S4n.info"
	cold() { umount $mnt; mount /dev/nvme0n1 $mnt && drop; }
	every S4n cold --filename=$mnt/f --size=32m --rw=randwrite
}
s5() {	# tag starvation: ext4 on NVMe with 4 requests; raw null_blk, 2 tags
	local q=/sys/block/nvme0n1/queue/nr_requests old
	fresh_fs /dev/nvme0n1 && written $mnt/f 256
	old=$(cat $q); echo 4 >$q
	every S5n drop --filename=$mnt/f --size=256m --rw=randwrite --iodepth=64 --iodepth_batch_submit=64
	echo "$old" >$q
	every S5z nop --filename=/dev/nullb0 --size=256m --rw=randread --iodepth=64 --iodepth_batch_submit=64
}
s6() {	# buffered random reads of a cold file
	fresh_fs /dev/nvme0n1 && written $mnt/f 256
	every S6 drop --filename=$mnt/f --size=256m --rw=randread --direct=0
	psync S6 drop --filename=$mnt/f --size=256m --rw=randread --direct=0
}
s7() {	# writes while the fs is frozen for 1 s
	fresh_fs /dev/nvme0n1 && written $mnt/f 64
	# Frozen for 1 s once fio is writing (its startup takes seconds).
	# The rig's kernel has no /proc/PID/io (TASK_IO_ACCOUNTING), so
	# "writing" is 1 MiB more written to the device since fio started.
	freeze() {
		( st=/sys/block/nvme0n1/stat w0=
		  for _ in $(seq 600); do
			if [ -z "$w0" ]; then
				pgrep -x fio >/dev/null && w0=$(awk '{print $7}' $st)
			elif [ $(($(awk '{print $7}' $st) - w0)) -gt 2048 ]; then
				break
			fi
			sleep 0.05
		  done
		  sleep 0.5; fsfreeze -f $mnt; echo "S7 frozen at $(date +%T.%N)" >>"$out/S7.info"
		  sleep 1; fsfreeze -u $mnt; echo "S7 thawed at $(date +%T.%N)" >>"$out/S7.info" ) &
	}
	every S7 freeze --filename=$mnt/f --size=64m --rw=randwrite
	wait
}

for s in ${SCENARIOS:-S1n S1f S2 S2c S3 S4 S4n S5 S6 S7}; do
	case $s in
	S1n) s1 /dev/nvme0n1 n ;;
	S1f) s1 /dev/mmcblk0 f ;;
	S2) s2 S2 ;; S2c) s2 S2c split ;; S3) s3 ;; S4) s4 ;; S4n) s4n ;; S5) s5 ;; S6) s6 ;; S7) s7 ;;
	esac
done
umount $mnt 2>/dev/null
[ -f $knob ] && echo 1 >$knob
exit 0
