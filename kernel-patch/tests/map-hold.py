#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""map-hold.py [--hold READY GO] FILE...: map files as a learner and count.

Maps each FILE read-only and shared and reads its first byte (a fault
in the start-up window the exec of this interpreter opened), then prints
how much pbitmap_learn_sets and pbitmap_learn_skip_full (/proc/vmstat)
moved meanwhile, as "sets N full M".  The counters are read by this
process, with no exec of its own in between, so another program's
learning cannot move them unseen by the caller's phases.  With --hold,
it then writes a line to the FIFO READY and keeps the mappings until a
line can be read from the FIFO GO, so that its sets stay pending while
the caller runs another learner.
"""
import mmap
import os
import sys


def counters():
    want = {"pbitmap_learn_sets": 0, "pbitmap_learn_skip_full": 0}
    with open("/proc/vmstat") as f:
        for line in f:
            key, value = line.split()
            if key in want:
                want[key] = int(value)
    return want


def main(argv):
    hold = None
    if len(argv) > 3 and argv[1] == "--hold":
        hold, argv = argv[2:4], argv[3:]
    if len(argv) < 2:
        sys.exit(__doc__)
    before = counters()
    maps = []
    for name in argv[1:]:
        with open(name, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)
        m[0]
        maps.append(m)
    after = counters()
    print("sets %d full %d" % (after["pbitmap_learn_sets"] - before["pbitmap_learn_sets"],
                               after["pbitmap_learn_skip_full"] - before["pbitmap_learn_skip_full"]),
          flush=True)
    if hold:
        # GO read-write first: a line written to it before the read waits.
        go = os.fdopen(os.open(hold[1], os.O_RDWR))
        with open(hold[0], "w") as ready:
            ready.write("ready\n")
        go.readline()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
