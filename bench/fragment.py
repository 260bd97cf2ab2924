#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""fragment.py FILE OTHER MIB: write FILE (MIB MiB) with one-block extents.

Writes FILE and OTHER block by block in turns with O_DIRECT, so that each
allocation takes the block after the other file's last one.  Run it with
ext4's mb_stream_req raised above the file size: requests then come from
the filesystem's shared group preallocation, in the order they are made,
instead of a preallocation per file that would keep each file's blocks
together (ext4's goal allocation also fills gaps left within one file,
so writing a file's odd blocks, then its even ones, does not fragment).
"""
import mmap
import os
import sys

BLK = 4096


def main():
    path, other, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
    buf = mmap.mmap(-1, BLK)  # page aligned, as O_DIRECT wants
    buf.write(b"\xa5" * BLK)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT
    fds = [os.open(p, flags, 0o600) for p in (path, other)]
    for i in range(mib * (1 << 20) // BLK):
        for fd in fds:
            if os.pwrite(fd, buf, i * BLK) != BLK:
                sys.exit(f"fragment.py: short write at block {i}")
    for fd in fds:
        os.fsync(fd)
        os.close(fd)


if __name__ == "__main__":
    main()
