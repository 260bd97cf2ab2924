#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# demo-guest.sh: the guest's half of rig/demo.sh.  fio results go to
# /tmp/out (the host's build/vm/$NAME/out).  Environment: TOP (the
# repository), RUNTIME (s per fio job), SHIM (bench/vcsw-shim.c, built).
set -e
out=/tmp/out
knob=/proc/sys/fs/aio-offload
modes=stock
[ -f $knob ] && modes='0 1'
for d in nvme:/dev/nvme0n1 flash:/dev/mmcblk0; do
	for m in $modes; do
		[ "$m" = stock ] || echo "$m" >$knob
		echo "### fio ${d%%:*} ${d#*:} offload=$m"
		fio --output-format=json --output=$out/fio-${d%%:*}-$m.json \
			--filename=${d#*:} --runtime="$RUNTIME" "$TOP/rig/fio/demo.fio"
	done
done
echo "modes: $modes" >$out/modes

# ext4's extent pin: random overwrites of a file of one-block extents on
# NVMe, cold after a remount (bench scenario S4n), unpinned then pinned
# (the shim pins the file when fio opens it), offload on.  aio.stat
# before and after each run says where the writes went.
[ -f $knob ] && grep -q ext4 /proc/filesystems || exit 0
mnt=/tmp/demo-mnt
mkdir -p $mnt
mkfs.ext4 -q -F -E nodiscard /dev/nvme0n1
mount /dev/nvme0n1 $mnt
# One shared preallocation, so that the two files' blocks interleave.
echo 1000000 >/sys/fs/ext4/nvme0n1/mb_stream_req
"$TOP/bench/fragment.py" $mnt/f $mnt/g 32
rm $mnt/g
filefrag $mnt/f >$out/pin-extents
echo 1 >$knob
for p in unpinned pinned; do
	umount $mnt
	mount /dev/nvme0n1 $mnt
	echo 3 >/proc/sys/vm/drop_caches
	echo "### fio ext4 file $p"
	pin=
	[ $p = pinned ] && pin=1
	cp /sys/fs/cgroup/aio.stat $out/aio-$p.0
	SHIM_PIN=$pin LD_PRELOAD=$SHIM fio --output-format=json \
		--output=$out/fio-ext4-$p.json "$TOP/bench/common.fio" \
		--ioengine=libaio --runtime="$RUNTIME" --filename=$mnt/f \
		--size=32m --rw=randwrite
	cp /sys/fs/cgroup/aio.stat $out/aio-$p.1
done
umount $mnt
