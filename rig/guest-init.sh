#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# PID 1 of the test guest.  The host's root is "/" read-only over 9p;
# this gives it writable /tmp and /run, mounts the rig's share (tag
# "out", the host's build/vm/out) at /tmp/out, runs /tmp/out/cmd.sh if
# present (else an interactive shell), stores its exit status in
# /tmp/out/rc and powers off.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp TERM=${TERM:-linux} LANG=C

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
# What udev would add: tools (the kselftest runner) write to /dev/stdout.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
# The rig may live under the host's /tmp (a CI clone): keep that visible
# through the guest's own /tmp.
top=$(cd "$(dirname "$0")/.." && pwd)
case $top in /tmp/*)
	mkdir -p /run/host-tmp
	mount --bind /tmp /run/host-tmp ;;
esac
mount -t tmpfs -o mode=1777 tmpfs /tmp
case $top in /tmp/*)
	mkdir -p "$top"
	mount --bind "/run/host-tmp/${top#/tmp/}" "$top" ;;
esac
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mkdir -p /tmp/out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /tmp/out
hostname aio-guest

echo "aio-guest: $(uname -r), $(nproc) CPUs, $(grep MemTotal /proc/meminfo)"
cd /tmp
if [ -f /tmp/out/cmd.sh ]; then
	bash /tmp/out/cmd.sh </dev/null 2>&1 | tee /tmp/out/cmd.log
	rc=${PIPESTATUS[0]}
else
	echo "aio-guest: interactive shell; 'exit' powers off"
	setsid -c bash -l </dev/ttyS0 >/dev/ttyS0 2>&1
fi
# Nothing but init may run from here on: a process the command left
# behind, dying as the power-off takes the 9p root away, would be
# reparented to init and wake it (and could print after the line below).
kill -KILL -1 2>/dev/null
read -r -t 1 _ </dev/console 2>/dev/null
if [ -n "${rc:-}" ]; then
	# Through the kernel log, so that the line reaches the console whole:
	# vm.sh scans what follows it for splats.
	{ echo "aio-guest: command exited with $rc" >/dev/kmsg; } 2>/dev/null ||
		echo "aio-guest: command exited with $rc"
	echo "$rc" >/tmp/out/rc
	# check.sh's test of that scan: a line the command left for the
	# kernel log once it has ended.
	[ -f /tmp/out/kmsg-at-exit ] && cat /tmp/out/kmsg-at-exit >/dev/kmsg
fi
sync
umount /tmp/out
# Power off with reboot(2) in a child, not sysrq-o: sysrq queues the
# power-off to a worker and returns, and init kept running from the 9p
# root while the power-off shut the 9p device down under it.  On a debug
# kernel that died of SIGBUS on a page fault into bash ("Attempted to
# kill init").  reboot(2) shuts the devices down inside the syscall of
# the caller, which never returns to user space, while init sleeps in
# wait().  perl is loaded before anything goes away.  (x86-64's reboot is
# syscall 169; the magic numbers are LINUX_REBOOT_MAGIC1/2 and
# LINUX_REBOOT_CMD_POWER_OFF.)
perl -e 'syscall(169, 0xfee1dead, 672274793, 0x4321fedc);
	print STDERR "aio-guest: reboot(2) failed: $!\n"'
# Only if that failed: sysrq, and wait for it with a builtin.
echo o >/proc/sysrq-trigger
while :; do read -r -t 1 _ </dev/console; done 2>/dev/null
