#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn bench/guest.sh's raw results into results.json, results.md and
gnuplot PNGs (slat CDF per scenario, IOPS bars).

Usage: report.py RESDIR STOCK_KERNEL_DIR PATCHED_KERNEL_DIR

RESDIR/raw/<kernel>/<round>/<scenario>-<mode>-<engine>[-2].{json,cpu,vcsw}
Every cell is the median over the runs found; a cell without runs says
why.  The issue's targets are evaluated and marked met or missed.
"""
import datetime
import glob
import json
import os
import re
import statistics
import subprocess
import sys

SCEN = [
    ('S1n', 'random overwrite, ext4 on NVMe'),
    ('S1f', 'random overwrite, ext4 on SD flash'),
    ('S2', 'writes into unwritten extents + metadata load (NVMe)'),
    ('S2c', 'S2 with fio on vCPU 0, the metadata load on vCPU 1 (diagnostic)'),
    ('S3', 'writes into holes within i_size (NVMe)'),
    ('S4', 'overwrites of a fragmented file, cold extent tree, SD + dm-delay 2 ms'),
    ('S4n', 'overwrites of a fragmented file, cold extent tree (NVMe)'),
    ('S5n', 'ext4 on NVMe, nr_requests 4, iodepth 64 batches'),
    ('S5z', 'raw null_blk, 2 tags, 2 ms completions, iodepth 64'),
    ('S6', 'buffered random reads of a cold file (NVMe)'),
    ('S7', 'writes while the fs is frozen for 1 s (NVMe)'),
]
# Columns: label, kernel role, mode, engine.
COLS = [
    ('stock libaio', 'stock', 'stock', 'libaio'),
    ('stock io_uring', 'stock', 'stock', 'io_uring'),
    ('patched off libaio', 'patched', 'off', 'libaio'),
    ('patched on libaio', 'patched', 'on', 'libaio'),
    ('patched io_uring', 'patched', 'on', 'io_uring'),
    ('patched on + ext4 pin', 'patched', 'pin', 'libaio'),
    ('patched psync', 'patched', 'on', 'psync'),
]
# psync, the synchronous reference, runs where a plain pwrite/pread loop
# is what a user would otherwise write; it has no submission latency.
PSYNC_SCEN = ('S1n', 'S1f', 'S6')
PSYNC_NA = 'n/a: psync is run as a reference in S1 and S6 only'
PIN_SCEN = ('S1n', 'S2', 'S2c', 'S4n')
PIN_NA = 'n/a: the pin is run in S1n, S2, S2c and S4n (NVMe, ext4)'
PCTS = ['1.000000', '5.000000', '10.000000', '20.000000', '30.000000',
        '40.000000', '50.000000', '60.000000', '70.000000', '80.000000',
        '90.000000', '95.000000', '99.000000', '99.500000', '99.900000',
        '99.990000', '100.000000']


# /proc/stat's per-CPU fields, in order.
CPU_FIELDS = ('user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq',
              'steal')


def counters(base):
    """What guest.sh recorded around one run: aio.stat deltas, per-CPU
    /proc/stat deltas (ticks by field) and ext4's NOWAIT refusals by
    reason.  Missing files (older results, the stock kernel) give {}."""
    snaps = []
    for ext in ('.pre', '.post'):
        d = {}
        try:
            with open(base + ext) as f:
                for line in f:
                    w = line.split()
                    if w[0] == 'aio' and len(w) == 3:
                        d['aio.' + w[1]] = int(w[2])
                    elif re.match(r'cpu\d+$', w[0]):
                        d[w[0]] = [int(x) for x in w[1:1 + len(CPU_FIELDS)]]
        except (OSError, ValueError):
            return {}
        snaps.append(d)
    pre, post = snaps
    out = {'aio': {}, 'cpu': {}, 'eagain': {}}
    for k, v in post.items():
        if k not in pre:
            continue
        if k.startswith('aio.'):
            out['aio'][k[4:]] = v - pre[k]
        else:
            out['cpu'][k] = [b - a for a, b in zip(pre[k], v)]
    try:
        with open(base + '.eagain') as f:
            for line in f:
                w = line.split()
                if len(w) == 2:
                    out['eagain'][w[0]] = int(w[1])
    except (OSError, ValueError):
        pass
    return out


def one_run(base):
    """Metrics of one fio run, or (None, reason)."""
    if os.path.exists(base + '.err'):
        return None, open(base + '.err').read().strip()
    try:
        with open(base + '.json') as f:
            txt = f.read()
        # fio may print warnings before the JSON document.
        data = json.loads(txt[txt.index('{'):])
    except (OSError, ValueError) as e:
        return None, 'no fio result (%s)' % e
    job = data['jobs'][0]
    st = job['read'] if job['read']['total_ios'] else job['write']
    ios = st['total_ios']
    if not ios:
        return None, 'fio did no I/O'
    slat = st['slat_ns'].get('percentile', {})
    clat = st['clat_ns'].get('percentile', {})
    m = {
        'iops': st['iops'],
        'ios': ios,
        'slat_p50_us': slat.get('50.000000', 0) / 1e3,
        'slat_p99_us': slat.get('99.000000', 0) / 1e3,
        'slat_p999_us': slat.get('99.900000', 0) / 1e3,
        'slat_max_us': st['slat_ns']['max'] / 1e3,
        'clat_p99_us': clat.get('99.000000', 0) / 1e3,
        'slat_cdf_us': [slat.get(p, 0) / 1e3 for p in PCTS],
    }
    m['counters'] = counters(base)
    try:
        busy, hz = map(int, open(base + '.cpu').read().split())
        m['cpu_us_per_io'] = busy / hz * 1e6 / ios
    except (OSError, ValueError):
        m['cpu_us_per_io'] = None
    try:
        v = open(base + '.vcsw').read().split()
        m['submit_calls'] = int(v[1])
        m['submit_slept'] = int(v[3])
        m['submit_switches'] = int(v[5])
        # Newer shims: preempted calls, call-time p99.9 of all calls and
        # of those without any context switch ("quiet").
        kv = dict(zip(v[0::2], v[1::2]))
        if 'preempted' in kv:
            m['submit_preempted'] = int(kv['preempted'])
            m['call_p999_us'] = float(kv['p999_us'])
            m['quiet_calls'] = int(kv['quiet'])
            m['quiet_p999_us'] = float(kv['quiet_p999_us'])
        # A pin run whose file was not pinned measured nothing new.
        if '-pin-' in os.path.basename(base) and (
                int(kv.get('pinned', 0)) == 0 or int(kv.get('pin_failed', 0))):
            return None, ('the file was not pinned (%s pinned, %s failed)'
                          % (kv.get('pinned', 0), kv.get('pin_failed', 0)))
    except (OSError, ValueError, IndexError):
        m['submit_calls'] = None
    return m, None


def median_of(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def cell(resdir, kdir, scen, mode, eng):
    runs, why = [], []
    for base in sorted(glob.glob(os.path.join(resdir, 'raw', kdir, '*',
                                              '%s-%s-%s*.json' % (scen, mode, eng)))):
        m, reason = one_run(base[:-5])
        if m:
            runs.append(m)
        else:
            why.append(reason)
    for err in glob.glob(os.path.join(resdir, 'raw', kdir, '*',
                                      '%s-%s-%s*.err' % (scen, mode, eng))):
        why.append(open(err).read().strip())
    if not runs:
        return {'runs': 0, 'reason': why[0] if why else
                'not in this run (QUICK=1 or SCENARIOS)'}
    c = {'runs': len(runs)}
    for k in ('iops', 'slat_p50_us', 'slat_p99_us', 'slat_p999_us',
              'slat_max_us', 'clat_p99_us', 'cpu_us_per_io'):
        c[k] = median_of(runs, k)
    # Counters are summed over the rounds.
    for part in ('aio', 'cpu', 'eagain'):
        tot = {}
        for r in runs:
            for k, v in r['counters'].get(part, {}).items():
                if isinstance(v, list):
                    tot[k] = [a + b for a, b in zip(tot.get(k, [0] * len(v)), v)]
                else:
                    tot[k] = tot.get(k, 0) + v
        c[part] = tot
    c['slat_cdf_us'] = [statistics.median(r['slat_cdf_us'][i] for r in runs)
                        for i in range(len(PCTS))]
    if all(r.get('submit_calls') for r in runs):
        c['submit_slept_pct'] = statistics.median(
            100.0 * r['submit_slept'] / r['submit_calls'] for r in runs)
        c['submit_calls'] = sum(r['submit_calls'] for r in runs)
        c['submit_slept'] = sum(r['submit_slept'] for r in runs)
        if all('submit_preempted' in r for r in runs):
            c['submit_preempted_pct'] = statistics.median(
                100.0 * r['submit_preempted'] / r['submit_calls'] for r in runs)
            c['quiet_pct'] = statistics.median(
                100.0 * r['quiet_calls'] / r['submit_calls'] for r in runs)
            for k in ('call_p999_us', 'quiet_p999_us'):
                c[k] = median_of(runs, k)
    else:
        c['submit_slept_pct'] = None
        c['submit_reason'] = {
            'io_uring': 'not measured: fio 3.33 makes io_uring_enter an '
                        'inline syscall, which the shim cannot see',
            'psync': 'n/a: synchronous, no submission call',
        }.get(eng, 'no shim counts')
    return c


def kernel_version(resdir, kdir):
    for log in glob.glob(os.path.join(resdir, 'raw', kdir, '*', 'console.log')):
        m = re.search(r'aio-guest: (\S+),', open(log, errors='replace').read())
        if m:
            return m.group(1)
    return kdir


def fmt(v, nd=0):
    if v is None:
        return '-'
    return ('%%.%df' % nd) % v


def submission_calls(res):
    """Per-call view of libaio's io_submit() from the shim: how many calls
    slept or were preempted, and the call time p99.9 of all calls and of
    the quiet ones (neither slept nor preempted)."""
    rows = []
    for s, _ in SCEN:
        for lbl in ('stock libaio', 'patched off libaio', 'patched on libaio',
                    'patched on + ext4 pin'):
            cl = res[s][lbl]
            if cl.get('runs') and cl.get('call_p999_us') is not None:
                rows.append('| %s | %s | %.0f%% | %.0f%% | %.0f%% | %.1f | %.1f |' % (
                    s, lbl, cl['submit_slept_pct'], cl['submit_preempted_pct'],
                    cl['quiet_pct'], cl['call_p999_us'], cl['quiet_p999_us']))
    if not rows:
        return []
    return ['', '## Submission calls (libaio, from the shim)', '',
            'Per io_submit() call (fio submits up to 8 I/Os a call): '
            'slept = a voluntary context switch in the call; preempted = an '
            'involuntary one (another task took the CPU); quiet = neither. '
            'Call time p99.9 in us, of all calls and of the quiet ones.  '
            'On 2 vCPUs a scenario\'s own load, the workers and jbd2 compete '
            'with the submitter: the quiet column is the submission path '
            'without that.', '',
            '| scenario | column | slept | preempted | quiet | p99.9 | quiet p99.9 |',
            '|---|---|---|---|---|---|---|'] + rows


def where_it_went(res):
    """aio.stat and ext4's refusals per run, and the vCPUs' time: where
    the writes went (inline or to a worker, and why), and what shared the
    vCPUs with the submitter."""
    rows = []
    for s, _ in SCEN:
        for lbl, _, _, eng in COLS:
            cl = res[s][lbl]
            if not cl.get('runs') or eng == 'psync':
                continue
            aio, eag, cpu = cl.get('aio', {}), cl.get('eagain', {}), cl.get('cpu', {})
            if eng == 'libaio' and any(aio.values()):
                punts = {k[5:]: v for k, v in aio.items()
                         if k.startswith('punt_') and v}
                n = aio.get('inline', 0) + sum(punts.values())
                went = '%d / %d (%.1f%%)' % (aio.get('inline', 0), n,
                                             100.0 * aio.get('inline', 0) / n if n else 0)
                why = ', '.join('%s %d' % kv for kv in
                                sorted(punts.items(), key=lambda kv: -kv[1])) or '-'
            else:
                went, why = '-', '-'
            # guest.sh writes an overrun line wherever the event exists.
            traced = 'overrun' in eag
            lost = eag.get('overrun', 0)
            ref = ', '.join('%s %d' % kv for kv in
                            sorted(eag.items(), key=lambda kv: -kv[1])
                            if kv[0] != 'overrun')
            ref = ref or ('0' if traced else '-')
            if lost:
                ref += ' (%d events lost)' % lost
            vc = []
            for name in sorted(cpu):
                v = cpu[name]
                tot = sum(v) or 1
                idle = v[CPU_FIELDS.index('idle')] + v[CPU_FIELDS.index('iowait')]
                irq = v[CPU_FIELDS.index('irq')] + v[CPU_FIELDS.index('softirq')]
                vc.append('%s %.0f%% (irq %.0f%%)' % (
                    name, 100.0 * (tot - idle) / tot, 100.0 * irq / tot))
            rows.append('| %s | %s | %s | %s | %s | %s |' % (
                s, lbl, went, why, ref, ', '.join(vc) or '-'))
    if not rows:
        return []
    return ['', '## Where the requests and the vCPUs went', '',
            'Summed over the rounds.  inline: requests completed on the '
            'NOWAIT try, of all the offload counted (aio.stat of the root '
            'cgroup; libaio only: io_uring does not pass through it).  '
            'ext4 refusals: ext4:ext4_dio_nowait_eagain by reason (libaio '
            'and io_uring alike; the stock kernel has no such event).  '
            'vCPUs: busy time of each during the run, and the part of it '
            'in hard and soft interrupts.', '',
            '| scenario | column | inline | punted (reason) | ext4 refusals '
            '(reason) | vCPUs busy (irq+softirq) |',
            '|---|---|---|---|---|---|'] + rows


def targets(res):
    out = []

    def c(s, col):
        return res[s].get(col, {})
    for s, _ in SCEN[2:]:
        st, on, ur = (c(s, 'stock libaio'), c(s, 'patched on libaio'),
                      c(s, 'patched io_uring'))
        if not st.get('runs') or not on.get('runs'):
            out.append((s, 'all', 'not run', None))
            continue
        # S7 blocks in a handful of calls (those during the freeze), far
        # below p99.9: its figure is the worst slat, as the issue asks.
        key, name = (('slat_max_us', 'slat max') if s == 'S7'
                     else ('slat_p999_us', 'slat p99.9'))
        s1 = c('S1n', 'patched on libaio').get(key)
        if s == 'S7':
            blocks = (st.get('submit_slept') or 0) > 0
            why = 'stock slept in %d calls' % (st.get('submit_slept') or 0)
        else:
            blocks = (st.get('submit_slept_pct') or 0) > 1.0
            why = 'stock slept in %.0f%% of calls' % (st.get('submit_slept_pct') or 0)
        if blocks:
            r = st[key] / max(on[key], 1e-9)
            out.append((s, '%s >= 10x below stock (%s)' % (name, why),
                        '%.1fx' % r, r >= 10))
        else:
            out.append((s, '%s >= 10x below stock' % name,
                        'stock did not block here', None))
        if s1:
            r = on[key] / s1
            out.append((s, '%s <= 1.2x own S1n' % name, '%.2fx' % r, r <= 1.2))
            # Not a target: whether the tail is the submission path or
            # CPU sharing (the same ratio over calls no other task
            # interrupted; "Submission calls" below).
            q1 = c('S1n', 'patched on libaio').get('quiet_p999_us')
            if on.get('quiet_p999_us') and q1:
                r = on['quiet_p999_us'] / q1
                out.append((s, 'io_submit() time p99.9 of calls without a '
                            'context switch, vs own S1n (information)',
                            '%.2fx' % r, None))
        if ur.get('runs'):
            r = on[key] / max(ur[key], 1e-9)
            out.append((s, '%s <= io_uring (patched)' % name, '%.2fx' % r, r <= 1.0))
    st, on = c('S1n', 'stock libaio'), c('S1n', 'patched on libaio')
    off = c('S1n', 'patched off libaio')

    def vs_off(key):
        # The patched kernel with the offload off runs stock's code path:
        # how far it is from stock is what differs between the boots.
        if off.get('runs') and off.get(key) and st.get(key):
            return ' (patched off: %.3fx)' % (off[key] / st[key])
        return ''
    if st.get('runs') and on.get('runs'):
        r = on['iops'] / st['iops']
        out.append(('S1n', 'IOPS >= 0.97x stock', '%.3fx%s' % (r, vs_off('iops')),
                    r >= 0.97))
        if st.get('cpu_us_per_io') and on.get('cpu_us_per_io'):
            r = on['cpu_us_per_io'] / st['cpu_us_per_io']
            out.append(('S1n', 'CPU per I/O <= 1.1x stock', '%.3fx%s' % (
                r, vs_off('cpu_us_per_io')), r <= 1.1))
    # The ext4 pin (#21): S2 and S4n pinned against pinned S1n, and stock.
    p1 = c('S1n', 'patched on + ext4 pin')
    for s in ('S2', 'S2c', 'S4n'):
        pn, st = c(s, 'patched on + ext4 pin'), c(s, 'stock libaio')
        if not pn.get('runs') or not p1.get('runs'):
            out.append((s, 'with the ext4 pin', 'not run', None))
            continue
        r = pn['slat_p999_us'] / p1['slat_p999_us']
        out.append((s, 'with the ext4 pin: slat p99.9 <= 1.2x S1n pinned',
                    '%.2fx' % r, r <= 1.2))
        if st.get('runs'):
            r = pn['iops'] / st['iops']
            out.append((s, 'with the ext4 pin: IOPS >= stock', '%.3fx' % r,
                        r >= 1.0))
    return out


def plots(resdir, res):
    if subprocess.run(['which', 'gnuplot'], capture_output=True).returncode:
        print('report.py: gnuplot missing, no plots', file=sys.stderr)
        return []
    made = []
    cols = [c for c in COLS if c[1]]
    for s, title in SCEN:
        dat = os.path.join(resdir, 'cdf-%s.dat' % s)
        series = [c[0] for c in cols if res[s].get(c[0], {}).get('runs')
                  and c[3] != 'psync']
        if not series:
            continue
        with open(dat, 'w') as f:
            for i, p in enumerate(PCTS):
                f.write('%s %s\n' % (p, ' '.join(
                    '%g' % max(res[s][lbl]['slat_cdf_us'][i], 0.01)
                    for lbl in series)))
        png = os.path.join(resdir, 'slat-cdf-%s.png' % s)
        plot = ', '.join("'%s' using %d:1 with linespoints title '%s'" % (
            dat, i + 2, lbl) for i, lbl in enumerate(series))
        script = ('set terminal png size 900,600 noenhanced; set output "%s";'
                  'set title "%s: %s"; set logscale x; set xlabel "slat (us, log)";'
                  'set ylabel "percentile"; set key bottom right; set grid;'
                  'plot %s' % (png, s, title.replace('"', "'"), plot))
        subprocess.run(['gnuplot', '-e', script], check=True)
        made.append(png)
    dat = os.path.join(resdir, 'iops.dat')
    with open(dat, 'w') as f:
        f.write('scenario %s\n' % ' '.join('"%s"' % c[0] for c in cols))
        for s, _ in SCEN:
            f.write('%s %s\n' % (s, ' '.join(
                fmt(res[s].get(c[0], {}).get('iops'), 0).replace('-', '0')
                for c in cols)))
    png = os.path.join(resdir, 'iops.png')
    plot = ', '.join("'%s' using %d:xtic(1) title columnhead(%d)" % (dat, i + 2, i + 2)
                     for i in range(len(cols)))
    script = ('set terminal png size 1300,600 noenhanced; set output "%s"; set title "IOPS";'
              'set style data histogram; set style histogram clustered;'
              'set style fill solid border -1; set boxwidth 0.9; set key outside right top;'
              'set ylabel "IOPS"; set grid y; plot %s' % (png, plot))
    subprocess.run(['gnuplot', '-e', script], check=True)
    made.append(png)
    return made


def setup_facts(resdir, kd):
    """What guest.sh recorded about its setup (S4's extent count, S7's
    freeze times), one line per kernel and round."""
    out = []
    for role, kdir in kd.items():
        base = os.path.join(resdir, 'raw', kdir)
        if not os.path.isdir(base):
            continue
        for rnd in sorted(os.listdir(base)):
            for name in sorted(glob.glob(os.path.join(base, rnd, '*.info'))):
                with open(name) as f:
                    for line in f.read().split('\n'):
                        if line.strip():
                            out.append('- %s round %s: %s' % (
                                role, rnd, line.replace(resdir, '').strip()))
    return out


def main():
    resdir, kstock, kpatched = sys.argv[1:4]
    kd = {'stock': kstock, 'patched': kpatched}
    res = {}
    for s, _ in SCEN:
        res[s] = {}
        for lbl, role, mode, eng in COLS:
            if mode == 'pin' and s not in PIN_SCEN:
                res[s][lbl] = {'runs': 0, 'reason': PIN_NA}
            elif eng == 'psync' and s not in PSYNC_SCEN:
                res[s][lbl] = {'runs': 0, 'reason': PSYNC_NA}
            else:
                res[s][lbl] = cell(resdir, kd[role], s, mode, eng)
    versions = {r: kernel_version(resdir, d) for r, d in kd.items()}
    if not any(c.get('runs') for s in res.values() for c in s.values()):
        print('report.py: no results at all', file=sys.stderr)
        return 1
    tg = targets(res)
    when = datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC')
    with open(os.path.join(resdir, 'results.json'), 'w') as f:
        json.dump({'date': when, 'kernels': versions, 'scenarios': dict(SCEN),
                   'percentiles': PCTS, 'results': res,
                   'targets': [{'scenario': a, 'target': b, 'value': c,
                                'met': d} for a, b, c, d in tg]}, f, indent=1)
    lines = ['# make bench results', '',
             '%s; stock %s, patched %s; QEMU TCG, 2 vCPUs; fio 4k, iodepth 32 '
             'unless said; each cell the median over rounds (kernels alternating); '
             'both kernels built from the same config without lock debugging.'
             % (when, versions['stock'], versions['patched']), '',
             'Cell: IOPS / slat p50 / p99.9 / max (us) / clat p99 (us) / '
             'CPU us per I/O / % of submission calls that slept', '']
    cols = [c[0] for c in COLS]
    lines.append('| scenario | ' + ' | '.join(cols) + ' |')
    lines.append('|---' * (len(cols) + 1) + '|')
    for s, title in SCEN:
        row = []
        for lbl in cols:
            c = res[s][lbl]
            if not c.get('runs'):
                row.append(c.get('reason', 'not run'))
                continue
            slept = ('%.0f%%' % c['submit_slept_pct']
                     if c.get('submit_slept_pct') is not None else 'n/a')
            if lbl.endswith('psync'):
                # No submission step: the columns about it do not apply.
                row.append('%s / - / - / - / %s / %s / n/a' % (
                    fmt(c['iops']), fmt(c['clat_p99_us']),
                    fmt(c['cpu_us_per_io'])))
                continue
            row.append('%s / %s / %s / %s / %s / %s / %s' % (
                fmt(c['iops']), fmt(c['slat_p50_us'], 1), fmt(c['slat_p999_us'], 1),
                fmt(c['slat_max_us']), fmt(c['clat_p99_us']),
                fmt(c['cpu_us_per_io']), slept))
        lines.append('| %s: %s | %s |' % (s, title, ' | '.join(row)))
    lines += ['', 'io_uring sleeps in submission: not measured (fio 3.33 issues '
              'io_uring_enter as an inline syscall, which the LD_PRELOAD shim cannot see). '
              'psync (a plain pwrite/pread loop, S1 and S6 only) has no submission step: '
              'its cell is IOPS / - / - / - / clat p99 / CPU.',
              '', '## Targets', '', '| scenario | target | value | |', '|---|---|---|---|']
    for a, b, c, d in tg:
        lines.append('| %s | %s | %s | %s |' % (
            a, b, c, 'met' if d else ('MISSED' if d is False else '-')))
    lines += submission_calls(res)
    lines += where_it_went(res)
    info = setup_facts(resdir, kd)
    if info:
        lines += ['', '## Setup facts (from the guest)', ''] + info
    pngs = plots(resdir, res)
    lines += ['', 'Plots: ' + ', '.join(os.path.basename(p) for p in pngs)]
    with open(os.path.join(resdir, 'results.md'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
