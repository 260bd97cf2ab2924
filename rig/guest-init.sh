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
	echo "aio-guest: command exited with $rc"
	echo "$rc" >/tmp/out/rc
else
	echo "aio-guest: interactive shell; 'exit' powers off"
	setsid -c bash -l </dev/ttyS0 >/dev/ttyS0 2>&1
fi
sync
umount /tmp/out
echo o >/proc/sysrq-trigger
# Wait for the power-off with a builtin: /bin/sleep is on the 9p root,
# which may already be gone (a debug kernel's slow power-off saw it die
# of SIGBUS, and init's exit then panicked).
while :; do read -r -t 1 _ </dev/console; done 2>/dev/null
