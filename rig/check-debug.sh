#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-debug.sh: make check on the -debug kernels (KASAN, KFENCE,
# lockdep, DEBUG_OBJECTS, DEBUG_LIST, kmemleak; rig/debug-full.config),
# with the test timeouts scaled for the slower kernel, then a kmemleak
# scan.  QEMU boot leaves kmemleak reports of its own, so the stock
# kernel of the same config is booted too, runs aio_basic and is
# scanned; a leak whose backtrace the stock kernel does not show fails
# the run.  Prints make check's "N passed, N failed, N skipped" line for
# each of its two boots and the leak comparison.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
scale=${TIMEOUT_SCALE:-4}
scan='mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
for i in 1 2; do echo scan >/sys/kernel/debug/kmemleak; sleep 5; done
cat /sys/kernel/debug/kmemleak >/tmp/out/kmemleak.txt'
rc=0
# This kernel under TCG can leave the RCU grace-period kthread unscheduled
# for over the default 21 s stall timeout while stop_machine() runs at
# boot (seen on the stock kernel of the same config too): a stall report
# would count as a splat.
stall=rcupdate.rcu_cpu_stall_timeout=300

KERNEL_ARGS=$stall GUEST_ENV="AIO_RIG_ABSENT=/dev/mmcblk0" \
	KERNEL=patched-debug NAME=check-debug TIMEOUT_SCALE=$scale RIG_SELFTEST=0 \
	CLASSES="nvme nullb" CHECK_EPILOGUE="$scan" "$top/rig/check.sh" || rc=1

# Under TCG this kernel evaluates the ACPI _PRT method so slowly that
# ACPICA gives up (AE_AML_LOOP_TIMEOUT): legacy PCI interrupts then have
# no route and the SD controller never sees its card (NVMe, with MSI-X,
# is unaffected).  pci=noacpi routes them by the BIOS's table, but that
# boot comes up in PIC mode with one CPU, so the flash class gets a boot
# of its own, and the rig's CPU check is told; the nvme/nullb boot has no
# SD card, and the rig's device check is told that.
KERNEL_ARGS="pci=noacpi $stall" GUEST_ENV="AIO_RIG_CPUS=1" KERNEL=patched-debug \
	NAME=check-debug-flash TIMEOUT_SCALE=$scale RIG_SELFTEST=0 \
	CLASSES=flash CHECK_EPILOGUE="$scan" "$top/rig/check.sh" || rc=1

# The stock tree has no aio selftests: run the binary check.sh built
# (user space; it tests stock behaviour on a stock kernel).
basic=$top/build/patched-debug/kselftest/kselftest/aio/aio_basic
echo "  RUN     stock-debug: aio_basic on NVMe, then the kmemleak baseline"
KERNEL_ARGS=$stall KERNEL=stock-debug NAME=check-debug-stock QUIET=1 \
	TIMEOUT=$((1800 * scale)) \
	"$top/rig/vm.sh" "AIO_TEST_DEV=/dev/nvme0n1 AIO_TEST_CLASS=nvme $basic >/dev/null; $scan" ||
	echo "check-debug.sh: the stock-debug run failed (baseline may be incomplete)" >&2

for name in check-debug check-debug-flash; do
	python3 "$top/rig/kmemleak-diff.py" \
		"$top/build/vm/$name/out/kmemleak.txt" \
		"$top/build/vm/check-debug-stock/out/kmemleak.txt" || rc=1
done
exit $rc
