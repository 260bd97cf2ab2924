# SPDX-License-Identifier: GPL-2.0
#
# Build, boot and test the io_submit() offload series on Debian's
# linux-source-6.12.  See README.md.  Every target installs what it
# needs (deps) first.  The scripts doing the work are in rig/.

SHELL := /bin/bash
.DEFAULT_GOAL := help

.PHONY: help deps tree kernel kernel-stock kernel-perf kernel-patched-perf \
	refresh patch-check vm vm-stock check check-debug kernel-debug demo \
	overhead bench series \
	checkpatch series-check clean

help:
	@echo "make demo          boot the patched kernel, run the fio libaio demo"
	@echo "make overhead      offload 0 vs 1 where nothing blocks: IOPS, CPU per I/O"
	@echo "make bench         stock vs patched vs io_uring, scenarios S1-S7 (QUICK=1: short)"
	@echo "make check         build, boot, run the aio selftests on NVMe, flash, null_blk"
	@echo "make check-debug   the same on KASAN/kmemleak/lockdep kernels, leaks vs stock"
	@echo "make kernel        build the patched kernel (build/patched/obj)"
	@echo "make kernel-stock  build the unpatched kernel (build/stock/obj)"
	@echo "make kernel-perf   both without lockdep, for bench (build/*-perf); overhead needs only the patched one"
	@echo "make vm [CMD=...]  boot the patched kernel; run CMD or get a shell"
	@echo "make vm-stock      the same with the stock kernel"
	@echo "make refresh       write edits in build/patched/linux back to the overlay"
	@echo "make patch-check   check every .patch applies to the pristine tarball"
	@echo "make series        export the patch series to build/series/patches"
	@echo "make checkpatch    run checkpatch.pl --strict on the series"
	@echo "make series-check  build the kernel at every step of the series"

deps:
	@rig/deps.sh

tree: deps
	@rig/tree.sh sync

kernel: tree
	@rig/kernel.sh patched

kernel-stock: deps
	@rig/tree.sh stock
	@rig/kernel.sh stock

# What bench and overhead measure: the same two trees without the lock
# debugging make check wants (rig/debug.config).
kernel-perf: kernel-patched-perf
	@rig/tree.sh stock
	@rig/kernel.sh stock-perf

# overhead boots only the patched kernel: no stock build for it.
kernel-patched-perf: tree
	@rig/kernel.sh patched-perf

refresh: deps
	@rig/tree.sh refresh

patch-check: deps
	@rig/tree.sh check

vm: kernel
	@rig/vm.sh $(CMD)

vm-stock: kernel-stock
	@KERNEL=stock rig/vm.sh $(CMD)

check: kernel
	@rig/check.sh

# KASAN, KFENCE, DEBUG_OBJECTS, DEBUG_LIST, kmemleak on top of lockdep:
# both trees, the stock one for kmemleak's baseline.  Not part of make
# check's time budget.
kernel-debug: tree
	@rig/kernel.sh patched-debug
	@rig/tree.sh stock
	@rig/kernel.sh stock-debug

check-debug: kernel-debug
	@rig/check-debug.sh

demo: kernel
	@rig/demo.sh

overhead: kernel-patched-perf
	@rig/overhead.sh

# QUICK=1 only shows the bench runs (CI asserts no numbers): it uses the
# make check kernels rather than building two more.
ifeq ($(QUICK),1)
bench: kernel kernel-stock
	@BENCH_STOCK=stock BENCH_PATCHED=patched rig/bench.sh
else
bench: kernel-perf
	@rig/bench.sh
endif

series: deps tree
	@rig/series.sh export

checkpatch: deps tree
	@rig/series.sh checkpatch

series-check: deps tree
	@rig/series.sh build

# Outputs only; the kernel trees' unrefreshed edits are kept.
clean:
	rm -rf build/patched/obj build/stock/obj build/series/obj build/vm \
		build/patched-perf build/stock-perf build/patched-debug \
		build/stock-debug \
		build/patched/kselftest build/stock/kselftest
