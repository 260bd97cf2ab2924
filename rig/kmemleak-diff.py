#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""kmemleak-diff.py PATCHED STOCK: leaks in PATCHED's kmemleak report
whose backtrace STOCK's report (same config, booted alike) lacks.

A leak's signature is the first functions of its backtrace, without
offsets and addresses, so that the same leak in two boots compares
equal.  Prints a summary; exits 1 if there is a new one or PATCHED's
report is missing."""
import re
import sys

DEPTH = 6


def leaks(path):
    """Signatures of the leaks in a report: {signature: count}."""
    out = {}
    try:
        text = open(path, errors="replace").read()
    except OSError as e:
        return None, str(e)
    for block in re.split(r"\n(?=unreferenced object )", text):
        if not block.startswith("unreferenced object"):
            continue
        funcs = re.findall(r"^\s+(?:\[<[0-9a-f]+>\] )?([\w.]+)\+0x", block,
                           re.M)
        sig = " < ".join(funcs[:DEPTH]) or "(no backtrace)"
        out[sig] = out.get(sig, 0) + 1
    return out, None


def main():
    patched, err = leaks(sys.argv[1])
    if patched is None:
        print(f"kmemleak: no report from the patched kernel ({err})")
        return 1
    stock, err = leaks(sys.argv[2])
    if stock is None:
        print(f"kmemleak: no stock baseline ({err}); every leak counts")
        stock = {}
    new = {s: n for s, n in patched.items() if s not in stock}
    print(f"kmemleak: patched {sum(patched.values())} objects "
          f"({len(patched)} backtraces), stock {sum(stock.values())} "
          f"({len(stock)}); new in patched: {len(new)}")
    for sig, n in sorted(new.items()):
        print(f"  new leak x{n}: {sig}")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
