#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Medians of rig/overhead.sh's runs and the overhead targets.

Usage: overhead.py OUTDIR RUNS SEGS
       overhead.py --icount OUTDIR RUNS
"""
import glob
import json
import os
import statistics
import sys


def read_slice_stat(path):
    """Busy jiffies and aio.stat counters in a slice's pre/postrun output.

    The first line is /proc/stat's 'cpu' line; busy is all but idle and
    iowait.  The rest is the root cgroup's aio.stat.
    """
    with open(path) as f:
        lines = f.read().splitlines()
    v = [int(x) for x in lines[0].split()[1:]]
    stat = dict((k, int(n)) for k, n in (ln.split() for ln in lines[1:]))
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7], stat


def slices(outdir, job, mode, r, segs):
    """fio's numbers and the pre/postrun figures of a run's slices."""
    d = os.path.join(outdir, '%s-%d' % (job, r))
    with open(os.path.join(d, 'fio.json')) as f:
        jobs = dict((j['jobname'], j) for j in json.load(f)['jobs'])
    for s in range(1, segs + 1):
        name = '%s-%s-%d-%d' % (job, mode, r, s)
        st = jobs[name]['write' if job.endswith('randwrite') else 'read']
        if not st['total_ios']:
            raise ValueError('%s: no I/O' % name)
        pre = read_slice_stat(os.path.join(d, name + '.prerun.txt'))
        post = read_slice_stat(os.path.join(d, name + '.postrun.txt'))
        yield st, pre, post


def run(outdir, job, mode, r, segs, hz):
    """I/Os, seconds and busy CPU seconds of each slice of a run."""
    return [(st['total_ios'], st['runtime'] / 1000.0, (post[0] - pre[0]) / hz)
            for st, pre, post in slices(outdir, job, mode, r, segs)]


def iops_cpu(sl):
    """IOPS and CPU seconds per I/O of slices taken together."""
    ios = sum(x[0] for x in sl)
    return ios / sum(x[1] for x in sl), sum(x[2] for x in sl) / ios


def paired(a, b):
    """A run's b/a ratios of IOPS and of CPU per I/O.

    Slice s of each mode ran within seconds of the others' slice s; the
    host's speed changes between regimes that last several seconds (up
    to 40% apart for the same job), so compare those neighbours, and take
    the median over a run's slices, which a regime change inside one set
    of neighbours does not move.
    """
    ri = [iops_cpu([y])[0] / iops_cpu([x])[0] for x, y in zip(a, b)]
    rc = [iops_cpu([y])[1] / iops_cpu([x])[1] for x, y in zip(a, b)]
    return statistics.median(ri), statistics.median(rc)


def aio_stat(outdir, job, mode, runs, segs):
    """aio.stat counters summed over the slices of a job and mode."""
    tot = {}
    for r in range(1, runs + 1):
        for _, pre, post in slices(outdir, job, mode, r, segs):
            for k in post[1]:
                tot[k] = tot.get(k, 0) + post[1][k] - pre[1].get(k, 0)
    return tot


def icount(outdir, runs):
    """The -icount boot: IOPS of each mode on null_blk, and their ratios.

    Guest time there is instructions executed, so a mode's runs agree to
    a fraction of a percent and 1/IOPS is instructions per I/O.
    """
    modes = ['0', '1', 'nw']
    print('null_blk under -icount (guest time = instructions; CPU-bound, '
          'no device time):')
    for rw in ('randread', 'randwrite'):
        iops = {}
        for m in modes:
            v = []
            for path in glob.glob(os.path.join(outdir, 'icount-%s-%s-*.json'
                                               % (rw, m))):
                with open(path) as f:
                    j = json.load(f)['jobs'][0]
                v.append(j['read' if rw == 'randread' else 'write']['iops'])
            if len(v) != 2 * runs:
                raise ValueError('%s %s: %d runs, not %d' % (rw, m, len(v),
                                                            2 * runs))
            iops[m] = v
        med = dict((m, statistics.median(iops[m])) for m in modes)
        spread = max((max(v) - min(v)) / statistics.median(v)
                     for v in iops.values())
        print('%s: IOPS offload=0 %.0f, offload=1 %.0f, RWF_NOWAIT %.0f '
              '(runs spread at most %.2f%%)' % (rw, med['0'], med['1'],
                                                med['nw'], 100 * spread))
        print('%s: offload=1/offload=0 %.4f (the IOPS any device keeps at '
              'least); RWF_NOWAIT/offload=0 %.4f, offload=1/RWF_NOWAIT '
              '%.4f' % (rw, med['1'] / med['0'], med['nw'] / med['0'],
                        med['1'] / med['nw']))
    return 0


def main():
    if sys.argv[1] == '--icount':
        return icount(sys.argv[2], int(sys.argv[3]))
    outdir, runs, segs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(os.path.join(outdir, 'clk_tck')) as f:
        hz = int(f.read())
    ok = True
    # 'nw': offload=0 with the user's RWF_NOWAIT.
    modes = ['0', '1', 'nw']
    # The targets are NVMe's; the null_blk jobs (completing in the
    # submitter: no device time, no emulation) are the CPU cost of the
    # path alone, informational.
    targeted = ('randread', 'randwrite')
    jobs = targeted + ('nullb-randread', 'nullb-randwrite')
    data = dict(((job, m, r), run(outdir, job, m, r, segs, hz))
                for job in jobs for m in modes for r in range(1, runs + 1))
    print('All slices of a mode together (informational: the host\'s '
          'speed drifts):')
    print('%-15s %-8s %8s %10s   %s' % ('job', 'offload', 'IOPS',
                                       'CPU us/IO', 'runs: IOPS'))
    for job in jobs:
        for m in modes:
            v = [iops_cpu(data[job, m, r]) for r in range(1, runs + 1)]
            print('%-15s %-8s %8.0f %10.1f   %s' % (
                job, m, statistics.median(i for i, _ in v),
                statistics.median(c for _, c in v) * 1e6,
                ' '.join('%.0f' % i for i, _ in v)))
    print()
    print('Paired: per run, the median over its slices of each slice\'s '
          'ratio to its neighbour; median of the runs:')
    for job in jobs:
        pr = [paired(data[job, '0', r], data[job, '1', r])
              for r in range(1, runs + 1)]
        ri = sorted(i for i, _ in pr)
        rc = sorted(c for _, c in pr)
        di, dc = statistics.median(ri), statistics.median(rc)
        met_i, met_c = di >= 0.97, dc <= 1.10
        if job in targeted:
            ok = ok and met_i and met_c
            mi, mc = ('met' if met_i else 'MISSED',
                      'met' if met_c else 'MISSED')
        else:
            mi = mc = 'informational'
        print('%s: offload=1/offload=0: IOPS %.3f (runs %s; target >= 0.97: '
              '%s), CPU per I/O %.3f (runs %s; target <= 1.10: %s)' % (
                  job, di, ' '.join('%.3f' % x for x in ri), mi,
                  dc, ' '.join('%.3f' % x for x in rc), mc))
    # Where the cost is: NOWAIT itself below fs/aio.c (RWF_NOWAIT on
    # offload=0 against offload=0), and the offload's own bookkeeping
    # (offload=1 against RWF_NOWAIT: the same NOWAIT I/O, plus charging,
    # hand-off state, the ordering check).  Informational, no target.
    print()
    for job in jobs:
        a = [paired(data[job, '0', r], data[job, 'nw', r])
             for r in range(1, runs + 1)]
        b = [paired(data[job, 'nw', r], data[job, '1', r])
             for r in range(1, runs + 1)]
        print('%s: RWF_NOWAIT/offload=0: IOPS %.3f, CPU %.3f; '
              'offload=1/RWF_NOWAIT: IOPS %.3f, CPU %.3f' % (
                  job,
                  statistics.median(i for i, _ in a),
                  statistics.median(c for _, c in a),
                  statistics.median(i for i, _ in b),
                  statistics.median(c for _, c in b)))
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
