#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise kselftest KTAP output from rig/check.sh's guest log.

The log holds one run_tests per device class, each preceded by a line
"### aio-check class=C dev=D".  A test program's harness ends with
"# Totals: pass:P fail:F xfail:X xpass:Y skip:S error:E"; a program that
died before printing that is counted by its runner "not ok" line.
"""
import argparse
import re
import sys

SECTION = re.compile(r'^### aio-check class=(\S+) dev=(\S+)')
TOTALS = re.compile(r'Totals: pass:(\d+) fail:(\d+) xfail:(\d+) '
                    r'xpass:(\d+) skip:(\d+) error:(\d+)')
RUNNER = re.compile(r'^(not ok|ok) \d+ selftests: aio: (\S+)(.*)$')
CASE = re.compile(r'^#\s+(not ok|ok) \d+ (\S+)(.*)$')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('log')
    ap.add_argument('--vm-rc', type=int, default=0)
    ap.add_argument('--extra', action='append', default=[],
                    help='CLASS:PASSED:FAILED counted outside kselftest')
    args = ap.parse_args()
    try:
        lines = open(args.log, errors='replace').read().splitlines()
    except OSError:
        lines = []

    rows = []      # (class, program, pass, fail, skip)
    failures = []  # "class: what"
    cls = '?'
    prog_totals = None
    for line in lines:
        m = SECTION.match(line)
        if m:
            cls = m.group(1)
            continue
        m = CASE.match(line)
        if m and (m.group(1) == 'not ok') and '# SKIP' not in m.group(3):
            failures.append('%s: %s%s' % (cls, m.group(2), m.group(3)))
        m = TOTALS.search(line)
        if m:
            p, f, xf, xp, s, e = map(int, m.groups())
            prog_totals = (p + xf, f + xp + e, s)
            continue
        m = RUNNER.match(line)
        if m:
            prog = m.group(2)
            if prog_totals is None:
                # Died before its harness summary: crash, timeout, exit.
                skip = '# SKIP' in m.group(3)
                prog_totals = (0, 0, 1) if skip else \
                    (1, 0, 0) if m.group(1) == 'ok' else (0, 1, 0)
                if not skip and m.group(1) == 'not ok':
                    failures.append('%s: %s%s' % (cls, prog, m.group(3)))
            rows.append((cls,) + (prog,) + prog_totals)
            prog_totals = None

    for e in args.extra:
        c, p, f = e.split(':')
        if int(p) or int(f):
            rows.insert(0, (c, 'vm.sh', int(p), int(f), 0))
        if int(f):
            failures.append('%s: %s rig self-test(s) failed' % (c, f))

    print('\n%-8s %-14s %6s %6s %7s' % ('device', 'program', 'passed',
                                         'failed', 'skipped'))
    for r in rows:
        print('%-8s %-14s %6d %6d %7d' % r)
    passed = sum(r[2] for r in rows)
    failed = sum(r[3] for r in rows)
    skipped = sum(r[4] for r in rows)
    if args.vm_rc != 0:
        failed += 1
        failures.append('guest run failed (rig/vm.sh exit %d, see above)'
                        % args.vm_rc)
    if not rows:
        failed += 1
        failures.append('no test results in %s' % args.log)
    for f in failures:
        print('FAILED: ' + f)
    print('%d passed, %d failed, %d skipped' % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
