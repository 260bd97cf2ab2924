#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Medians of rig/overhead.sh's runs and the overhead targets.

Usage: overhead.py OUTDIR RUNS SEGS
"""
import json
import os
import statistics
import sys


def cpu_busy(path):
    """Busy jiffies in a /proc/stat 'cpu' line: all but idle and iowait."""
    with open(path) as f:
        v = [int(x) for x in f.read().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]


def run(outdir, job, mode, r, segs, hz):
    """IOPS and CPU seconds per I/O of one run: the sum of its slices."""
    sec = job.replace('nullb-', '') + ('-nowait' if mode == 'nw' else '')
    ios = msec = busy = 0
    for s in range(1, segs + 1):
        d = os.path.join(outdir, '%s-%s-%d-%d' % (job, mode, r, s))
        with open(os.path.join(d, 'fio.json')) as f:
            data = json.load(f)
        st = data['jobs'][0]['write' if job == 'randwrite' else 'read']
        if not st['total_ios']:
            raise ValueError('%s: no I/O' % d)
        ios += st['total_ios']
        msec += st['runtime']
        # Busy time of all CPUs around the slice's I/O, idle and iowait
        # excluded.
        busy += (cpu_busy(os.path.join(d, sec + '.postrun.txt')) -
                 cpu_busy(os.path.join(d, sec + '.prerun.txt')))
    return ios * 1000.0 / msec, busy / hz / ios


def aio_stat(outdir, job, mode, runs, segs):
    """aio.stat counters summed over the slices of a job and mode."""
    tot = {}
    for r in range(1, runs + 1):
        for s in range(1, segs + 1):
            d = os.path.join(outdir, '%s-%s-%d-%d' % (job, mode, r, s))
            val = []
            for n in ('aio.stat.0', 'aio.stat.1'):
                with open(os.path.join(d, n)) as f:
                    val.append(dict((k, int(v)) for k, v in
                                    (ln.split() for ln in f)))
            for k in val[1]:
                tot[k] = tot.get(k, 0) + val[1][k] - val[0].get(k, 0)
    return tot


def main():
    outdir, runs, segs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(os.path.join(outdir, 'clk_tck')) as f:
        hz = int(f.read())
    ok = True
    print('%-14s %-8s %8s %10s   %s' % ('job', 'offload', 'IOPS',
                                      'CPU us/IO', 'runs: IOPS'))
    res = {}
    # 'nw': offload=0 with the user's RWF_NOWAIT.
    modes = ['0', '1', 'nw']
    # The targets are NVMe's; nullb-randread (null_blk completing in
    # the submitter) is the CPU cost of the path alone, informational.
    targeted = ('randread', 'randwrite')
    jobs = targeted + ('nullb-randread',)
    for job in jobs:
        for mode in modes:
            iops, cpu = [], []
            for r in range(1, runs + 1):
                i, c = run(outdir, job, mode, r, segs, hz)
                iops.append(i)
                cpu.append(c * 1e6)
            res[job, mode] = (iops, cpu)
            print('%-14s %-8s %8.0f %10.1f   %s' % (
                job, mode, statistics.median(iops), statistics.median(cpu),
                ' '.join('%.0f' % x for x in iops)))
    print()
    # The modes of a run take turns slice by slice, so each run's pair
    # saw the same machine: the median of the per-run ratios is the
    # robust figure on a shared host, where the noise between runs is
    # larger than the targets.
    for job in jobs:
        (i0, c0), (i1, c1) = res[job, '0'], res[job, '1']
        ri = sorted(b / a for a, b in zip(i0, i1))
        rc = sorted(b / a for a, b in zip(c0, c1))
        di, dc = statistics.median(ri), statistics.median(rc)
        met_i, met_c = di >= 0.97, dc <= 1.10
        if job in targeted:
            ok = ok and met_i and met_c
            mi, mc = ('met' if met_i else 'MISSED',
                      'met' if met_c else 'MISSED')
        else:
            mi = mc = 'informational'
        print('%s: offload=1/offload=0 per run: IOPS %.3f (%.2f..%.2f, '
              'target >= 0.97: %s), CPU per I/O %.3f (%.2f..%.2f, '
              'target <= 1.10: %s); ratio of medians: IOPS %.3f, CPU %.3f' % (
                  job, di, ri[0], ri[-1], mi, dc, rc[0], rc[-1], mc,
                  statistics.median(i1) / statistics.median(i0),
                  statistics.median(c1) / statistics.median(c0)))
    # Where the cost is: NOWAIT itself below fs/aio.c (RWF_NOWAIT on
    # offload=0 against offload=0), and the offload's own bookkeeping
    # (offload=1 against RWF_NOWAIT: the same NOWAIT I/O, plus charging,
    # hand-off state, the ordering check).  Informational, no target.
    print()
    for job in jobs:
        (i0, c0), (i1, c1), (iw, cw) = (res[job, m] for m in modes)
        print('%s: RWF_NOWAIT/offload=0: IOPS %.3f, CPU %.3f; '
              'offload=1/RWF_NOWAIT: IOPS %.3f, CPU %.3f' % (
                  job,
                  statistics.median(b / a for a, b in zip(i0, iw)),
                  statistics.median(b / a for a, b in zip(c0, cw)),
                  statistics.median(b / a for a, b in zip(iw, i1)),
                  statistics.median(b / a for a, b in zip(cw, c1))))
    # Offload=1 should have done everything inline here: a punt is a
    # different cost, and would make these numbers mean something else.
    print()
    for job in jobs:
        st = aio_stat(outdir, job, '1', runs, segs)
        inline = st.get('inline', 0)
        # Every request is either inline or punted for one reason.
        punts = dict((k, v) for k, v in st.items()
                     if v and k.startswith('punt_'))
        total = inline + sum(punts.values())
        # reissue: those of the punts that came from a bio's completion.
        if st.get('reissue'):
            punts['reissue'] = st['reissue']
        print('%s: offload=1 aio.stat: %d inline of %d (%.2f%%)%s' % (
            job, inline, total, 100.0 * inline / max(total, 1),
            ''.join(', %s %d' % kv for kv in sorted(punts.items()))))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
