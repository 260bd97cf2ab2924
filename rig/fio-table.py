#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Print IOPS and submission latency from fio --output-format=json files.

Usage: fio-table.py LABEL=FILE.json ...
"""
import json
import sys


def us(ns):
    return '%.1f' % (ns / 1000.0)


def main():
    hdr = ('device', 'job', 'IOPS', 'slat p50 us', 'p99 us', 'p99.9 us',
           'max us')
    rows = []
    for arg in sys.argv[1:]:
        label, path = arg.rsplit('=', 1)
        with open(path) as f:
            data = json.load(f)
        for job in data['jobs']:
            for ddir in ('read', 'write'):
                st = job[ddir]
                if not st['total_ios']:
                    continue
                slat = st['slat_ns']
                pct = slat.get('percentile', {})
                rows.append((label, job['jobname'], '%.0f' % st['iops'],
                             us(pct.get('50.000000', 0)),
                             us(pct.get('99.000000', 0)),
                             us(pct.get('99.900000', 0)),
                             us(slat['max'])))
    if not rows:
        print('fio-table.py: no I/O in the results', file=sys.stderr)
        return 1
    widths = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
    line = lambda r: '  '.join(str(c).rjust(w) if i > 1 else str(c).ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths)))
    print(line(hdr))
    print('  '.join('-' * w for w in widths))
    for r in rows:
        print(line(r))
    return 0


if __name__ == '__main__':
    sys.exit(main())
