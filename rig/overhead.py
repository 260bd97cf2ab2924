#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Medians of rig/overhead.sh's runs and the overhead targets.

Usage: overhead.py OUTDIR RUNS
"""
import json
import os
import statistics
import sys


def run(outdir, job, mode, r, hz):
    base = os.path.join(outdir, '%s-%s-%d' % (job, mode, r))
    with open(base + '.json') as f:
        data = json.load(f)
    st = data['jobs'][0]['read' if job == 'randread' else 'write']
    ios = st['total_ios']
    if not ios:
        raise ValueError('%s: no I/O' % base)
    with open(base + '.cpu0') as f:
        b0, t0 = map(int, f.read().split())
    with open(base + '.cpu1') as f:
        b1, t1 = map(int, f.read().split())
    # Busy time of all CPUs over the whole fio run (no ramp time, so
    # every I/O in the window is counted), idle and iowait excluded.
    return st['iops'], (b1 - b0) / hz, ios


def main():
    outdir, runs = sys.argv[1], int(sys.argv[2])
    with open(os.path.join(outdir, 'clk_tck')) as f:
        hz = int(f.read())
    ok = True
    print('%-10s %-8s %8s %10s   %s' % ('job', 'offload', 'IOPS',
                                      'CPU us/IO', 'runs: IOPS'))
    res = {}
    # 'nw': offload=0 with the user's RWF_NOWAIT (older runs lack it).
    modes = ['0', '1']
    if os.path.exists(os.path.join(outdir, 'randread-nw-1.json')):
        modes.append('nw')
    for job in ('randread', 'randwrite'):
        for mode in modes:
            iops, cpu = [], []
            for r in range(1, runs + 1):
                i, busy, ios = run(outdir, job, mode, r, hz)
                iops.append(i)
                cpu.append(busy * 1e6 / ios)
            res[job, mode] = (iops, cpu)
            print('%-10s %-8s %8.0f %10.1f   %s' % (
                job, mode, statistics.median(iops), statistics.median(cpu),
                ' '.join('%.0f' % x for x in iops)))
    print()
    # Runs of the two modes alternate, so each run's pair saw the same
    # machine: the median of the per-run ratios is the robust figure on
    # a shared host, where run-to-run noise is larger than the targets.
    for job in ('randread', 'randwrite'):
        (i0, c0), (i1, c1) = res[job, '0'], res[job, '1']
        ri = sorted(b / a for a, b in zip(i0, i1))
        rc = sorted(b / a for a, b in zip(c0, c1))
        di, dc = statistics.median(ri), statistics.median(rc)
        met_i, met_c = di >= 0.97, dc <= 1.10
        ok = ok and met_i and met_c
        print('%s: offload=1/offload=0 per run: IOPS %.3f (%.2f..%.2f, '
              'target >= 0.97: %s), CPU per I/O %.3f (%.2f..%.2f, '
              'target <= 1.10: %s); ratio of medians: IOPS %.3f, CPU %.3f' % (
                  job, di, ri[0], ri[-1], 'met' if met_i else 'MISSED',
                  dc, rc[0], rc[-1], 'met' if met_c else 'MISSED',
                  statistics.median(i1) / statistics.median(i0),
                  statistics.median(c1) / statistics.median(c0)))
    if 'nw' not in modes:
        return 0 if ok else 1
    # Where the cost is: NOWAIT itself below fs/aio.c (RWF_NOWAIT on
    # offload=0 against offload=0), and the offload's own bookkeeping
    # (offload=1 against RWF_NOWAIT: the same NOWAIT I/O, plus charging,
    # hand-off state, the ordering check).  Informational, no target.
    print()
    for job in ('randread', 'randwrite'):
        (i0, c0), (i1, c1), (iw, cw) = (res[job, m] for m in modes)
        print('%s: RWF_NOWAIT/offload=0: IOPS %.3f, CPU %.3f; '
              'offload=1/RWF_NOWAIT: IOPS %.3f, CPU %.3f' % (
                  job,
                  statistics.median(b / a for a, b in zip(i0, iw)),
                  statistics.median(b / a for a, b in zip(c0, cw)),
                  statistics.median(b / a for a, b in zip(iw, i1)),
                  statistics.median(b / a for a, b in zip(cw, c1))))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
