#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh: the submission-latency benchmark (bench/).  Boots the stock
# and the patched kernel in turn, RUNS rounds each, alternating which
# goes first, runs bench/guest.sh in each boot, then bench/report.py
# writes build/bench/results.{json,md} and the PNG plots.
#
# Environment: QUICK=1 (short: 1 round, 2 s runs, fewer scenarios),
# RUNS, RUNTIME, SCENARIOS, BENCH_STOCK / BENCH_PATCHED (kernel dirs
# under build/, default stock-perf and patched-perf: no lockdep),
# BENCH_KEEP=1 (keep the other scenarios' results of the last run and
# report them all).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
res=$top/build/bench
if [ "${QUICK:-0}" = 1 ]; then
	runs=${RUNS:-1} runtime=${RUNTIME:-2} scen=${SCENARIOS:-S1n S5 S6 S7}
else
	runs=${RUNS:-3} runtime=${RUNTIME:-5} scen=${SCENARIOS:-S1n S1f S2 S2c S3 S4 S4n S5 S6 S7 S1n}
fi
kernels="${BENCH_STOCK:-stock-perf} ${BENCH_PATCHED:-patched-perf}"
for k in $kernels; do
	[ -f "$top/build/$k/obj/arch/x86/boot/bzImage" ] ||
		{ echo "bench.sh: no kernel in build/$k (make kernel-perf)" >&2; exit 1; }
done

# BENCH_KEEP=1: rerun some SCENARIOS into the results of an earlier run.
[ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$res"
mkdir -p "$res/raw"
gcc -O2 -Wall -shared -fPIC -o "$res/vcsw.so" "$top/bench/vcsw-shim.c" -ldl ||
	{ echo "bench.sh: cannot build the shim" >&2; exit 1; }

start=$(date +%s)
echo "  BENCH   $runs round(s) x {$kernels}, ${runtime}s per fio run, scenarios: $scen"
failed=0
for r in $(seq "$runs"); do
	order=$kernels
	[ $((r % 2)) = 0 ] && order=$(echo $kernels | awk '{print $2, $1}')
	for k in $order; do
		name=bench-$k
		echo "  ROUND   $r/$runs $k ($(($(date +%s) - start)) s so far)"
		# null_blk with 2 tags and 2 ms completions for S5.
		KERNEL=$k NAME=$name QUIET=1 TIMEOUT=3000 \
			NULLB="null_blk.hw_queue_depth=2 null_blk.irqmode=2 null_blk.completion_nsec=2000000" \
			"$top/rig/vm.sh" "BENCH_DIR=$top/bench OUT=/tmp/out/r ROUND=$r/$runs RUNTIME=$runtime SCENARIOS='$scen' SHIM=$res/vcsw.so bash $top/bench/guest.sh" \
			>"$res/raw/vm-$k-$r.log" 2>&1 &
		vm=$!
		# A progress line per fio run, from the guest's log as it grows.
		sleep 2
		tail -n +1 -F --pid=$vm "$top/build/vm/$name/out/cmd.log" 2>/dev/null |
			sed -un 's/^bench: /          /p'
		wait $vm
		rc=$?
		[ "$rc" = 0 ] || { echo "bench.sh: round $r on $k: vm.sh exit $rc" >&2; failed=1; }
		mkdir -p "$res/raw/$k/$r"
		cp -r "$top/build/vm/$name/out/r/." "$res/raw/$k/$r/" 2>/dev/null
		cp "$top/build/vm/$name/console.log" "$res/raw/$k/$r/console.log"
	done
done
echo "  REPORT  build/bench ($(($(date +%s) - start)) s of runs)"
python3 "$top/bench/report.py" "$res" $kernels || exit 1
exit $failed
