#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# vm.sh [command...]: boot build/$KERNEL/obj's bzImage in QEMU (TCG) with
# the host root read-only over 9p and three block devices:
#   /dev/nvme0n1  NVMe namespace, sparse file build/vm/$NAME/nvme.img
#   /dev/mmcblk0  SD card on SDHCI (flash), build/vm/$NAME/sd.img
#   /dev/nullb0   null_blk, 1 tag, completions held 2 ms by a timer
# With a command, run it in the guest (cwd = the host's cwd) and exit with
# its status; without one, give an interactive shell.  The console goes
# to build/vm/$NAME/console.log.  A panic, oops, WARN, BUG, lockdep or
# KASAN report in the guest kernel log fails the run even if the command
# succeeded.
#
# Environment: KERNEL=patched|stock (default patched), NAME (default
# $KERNEL), TIMEOUT seconds (default 1800), GUEST_ENV (extra "K=V ..."),
# KERNEL_ARGS (extra kernel parameters),
# NULLB (null_blk module parameters), QUIET=1 (console to the log only),
# ACCEL (QEMU -accel, default tcg,thread=multi), QEMU_EXTRA (more QEMU
# options, word-split).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${KERNEL:-patched}
name=${NAME:-$kernel}
timeout=${TIMEOUT:-1800}
image=$top/build/$kernel/obj/arch/x86/boot/bzImage
dir=$top/build/vm/$name
out=$dir/out
log=$dir/console.log
nullb=${NULLB:-null_blk.hw_queue_depth=1 null_blk.irqmode=2 null_blk.completion_nsec=2000000}

[ -f "$image" ] || { echo "vm.sh: $image missing (make kernel)" >&2; exit 2; }
mkdir -p "$dir"
rm -rf "$out"
mkdir -p "$out"
# Fresh, zeroed, sparse media every boot: tests never see stale data.
for img in nvme:1G sd:512M; do
	rm -f "$dir/${img%%:*}.img"
	truncate -s "${img#*:}" "$dir/${img%%:*}.img"
done

if [ $# -gt 0 ]; then
	{
		echo "cd $(printf %q "$PWD") || exit 125"
		echo "export AIO_RIG=1 ${GUEST_ENV:-}"
		echo "( $* )"
		echo 'rc=$?'
		echo 'dmesg >/tmp/out/dmesg.txt'
		echo 'exit $rc'
	} >"$out/cmd.sh"
	stdin=/dev/null
else
	stdin=/dev/stdin
fi

append="root=/dev/root rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=262144"
append+=" ro console=ttyS0 panic=-1 init=$top/rig/guest-init.sh $nullb"
# KERNEL_ARGS: more kernel parameters (make check-debug: see check-debug.sh).
append+="${KERNEL_ARGS:+ $KERNEL_ARGS}"

qemu=(qemu-system-x86_64 -accel "${ACCEL:-tcg,thread=multi}" -cpu max -smp 2 -m 2G
	-nographic -no-reboot -nic none -kernel "$image" -append "$append"
	-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
	-device virtio-9p-pci,fsdev=root,mount_tag=/dev/root
	-fsdev local,id=out,path="$out",security_model=none
	-device virtio-9p-pci,fsdev=out,mount_tag=out
	-drive file="$dir/nvme.img",if=none,id=nvm,format=raw,cache=none
	-device nvme,serial=aiorig0,drive=nvm
	-device sdhci-pci -drive file="$dir/sd.img",if=none,id=sdcard,format=raw
	-device sd-card,drive=sdcard ${QEMU_EXTRA:-})

echo "  VM      $kernel kernel, log build/vm/$name/console.log"
if [ "${QUIET:-0}" = 1 ]; then
	timeout -k 10 "$timeout" "${qemu[@]}" <"$stdin" >"$log" 2>&1
else
	timeout -k 10 "$timeout" "${qemu[@]}" <"$stdin" 2>&1 | tee "$log"
fi
qrc=${PIPESTATUS[0]}

fail() {
	echo "vm.sh: FAIL: $*" >&2
	echo "---- last 40 lines of build/vm/$name/console.log ----" >&2
	tail -n 40 "$log" >&2
	exit 1
}
[ "$qrc" = 124 ] && fail "guest did not finish within ${timeout}s"
[ $# -eq 0 ] && exit 0
[ -f "$out/rc" ] || fail "guest died before the command finished (qemu exit $qrc)"
# Only kernel messages are scanned: test output may say "WARNING:" too.
klog=$out/dmesg.txt
[ -f "$klog" ] || klog=$log
splat='Kernel panic|Oops|BUG:|WARNING:|INFO: |KASAN|UBSAN|general protection fault|Call Trace:'
# splats FILE WHAT: fail the run if FILE holds a kernel splat.
splats() {
	grep -qE "$splat" "$1" || return 0
	echo "vm.sh: FAIL: kernel reported a problem$2:" >&2
	grep -nE -A12 "$splat" "$1" | head -n 60 >&2
	exit 1
}
splats "$klog" ""
# dmesg.txt ends before the power-off: after the guest's "command exited"
# line (init logs it once the command's processes are gone) the console
# carries only kernel messages, so a splat there (in device shutdown, or
# init dying before the power-off) fails the run too.  The tail goes
# through a file: grep -q closing a pipe early would fail the pipeline
# under pipefail and hide the match.
after=$out/after-command.log
sed -n '/aio-guest: command exited with/,$p' "$log" >"$after"
[ -s "$after" ] || fail "no \"command exited\" line on the console"
splats "$after" " after the command"
rc=$(cat "$out/rc")
[ "$rc" = 0 ] || { echo "vm.sh: guest command exited with $rc" >&2; exit "$rc"; }
exit 0
