#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh: build the aio selftests, boot the patched kernel and run them
# once per device class (NVMe, SD flash, null_blk), then print a summary
# ending in "N passed, N failed, N skipped".  Exits non-zero on any
# failure, including a kernel splat or a guest that died.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
kernel=${KERNEL:-patched}
src=$top/build/${kernel%-debug}/linux
kst=$top/build/$kernel/kselftest
# A slower kernel (make check-debug) gets longer test timeouts: the
# harness's per-test one is compiled in, the runner's per-program one is
# overridden in the guest.
scale=${TIMEOUT_SCALE:-1}
ksft_cflags=
ksft_env=
if [ "$scale" != 1 ]; then
	ksft_cflags="-DAIO_DEV_TEST_TIMEOUT=$((300 * scale))"
	ksft_env="kselftest_override_timeout=$((600 * scale))"
fi
classes=${CLASSES:-nvme flash nullb}
export NAME=${NAME:-check}

# The tests build against this tree's uapi (linux/ext4.h is newer than
# the host's, and carries the series' ioctls), exported by "make headers"
# into the kernel's object directory as kselftest expects.
obj=$top/build/$kernel/obj
echo "  HDRS    build/$kernel/obj/usr/include"
make -s -C "$src" O="$obj" headers >/dev/null ||
	{ echo "check.sh: make headers failed" >&2; exit 1; }
khdr="KHDR_INCLUDES=-isystem$obj/usr/include"
echo "  KSFT    build tools/testing/selftests/aio"
make -s -C "$src/tools/testing/selftests" TARGETS=aio O="$kst" "$khdr" USERCFLAGS="$ksft_cflags" all >/dev/null ||
	{ echo "check.sh: selftests do not build" >&2; exit 1; }

# The rig must be able to fail: a failing guest command and a kernel
# WARN, during the command or after it (power-off), must each fail a
# run, and a clean run must pass.
rig_pass=0 rig_fail=0
# rigtest pass|fail WHAT WHY COMMAND: WHY, for a run that must fail, is
# what vm.sh must say: failing for another reason (a timeout, say) is
# not the failure under test.
rigtest() {
	local want=$1 what=$2 why=$3 rc err
	shift 3
	err=$(KERNEL=$kernel NAME=rig-selftest QUIET=1 TIMEOUT=300 "$top/rig/vm.sh" "$@" 2>&1 >/dev/null)
	rc=$?
	if { [ "$want" = pass ] && [ $rc = 0 ]; } ||
	   { [ "$want" = fail ] && [ $rc != 0 ] && grep -qF -- "$why" <<<"$err"; }; then
		echo "  ok      rig: $what"
		rig_pass=$((rig_pass + 1))
	else
		echo "  not ok  rig: $what (vm.sh exit $rc: $(tail -n 1 <<<"$err"))"
		rig_fail=$((rig_fail + 1))
	fi
}
if [ "${RIG_SELFTEST:-1}" = 1 ]; then
	rigtest pass "a clean guest command passes" "" true
	rigtest fail "a failing guest command fails the run" \
		"guest command exited with 1" false
	rigtest fail "a kernel WARNING in the guest log fails the run" \
		"kernel reported a problem:" \
		'echo "WARNING: CPU: 0 PID: 1 at rig/selftest.c:1 injected by check.sh" >/dev/kmsg'
	rigtest fail "a kernel WARNING after the guest command fails the run" \
		"kernel reported a problem after the command:" \
		'echo "WARNING: CPU: 0 PID: 1 at rig/selftest.c:2 injected by check.sh" >/tmp/out/kmsg-at-exit'
fi

cmd="set -e; for c in $classes; do
	case \$c in nvme) d=/dev/nvme0n1 ;; flash) d=/dev/mmcblk0 ;; nullb) d=/dev/nullb0 ;; esac
	echo \"### aio-check class=\$c dev=\$d\"
	s=\$(date +%s)
	$ksft_env AIO_TEST_DEV=\$d AIO_TEST_CLASS=\$c make -s -C $src/tools/testing/selftests TARGETS=aio O=$kst $khdr run_tests
	echo \"### aio-check-time class=\$c seconds=\$((\$(date +%s) - s))\"
done${CHECK_EPILOGUE:+; $CHECK_EPILOGUE}"
echo "  RUN     aio selftests on: $classes"
KERNEL=$kernel QUIET=${QUIET:-1} TIMEOUT=$((2700 * scale)) "$top/rig/vm.sh" "$cmd"
vmrc=$?
# How long each class took, against the guest's timeout.
sed -n 's/^### aio-check-time class=\(.*\) seconds=\(.*\)/  TIME    \1: \2 s/p' \
	"$top/build/vm/$NAME/out/cmd.log" 2>/dev/null
echo "  TIME    guest timeout $((2700 * scale)) s"
python3 "$top/rig/ksft-summary.py" "$top/build/vm/$NAME/out/cmd.log" --vm-rc "$vmrc" \
	--extra "rig:$rig_pass:$rig_fail"
