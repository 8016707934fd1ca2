#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""warm-launcher.py: what the userspace launcher costs a warm start.

The guest benchmark's `warm` condition never goes through the launcher, so
its warm cost is measured here, on whatever machine runs this (no patched
kernel needed): PAIRS interleaved pairs of CMD started directly and through
the launcher, in random order within each pair, everything cached (20
uncounted starts of each first).  Each start is posix_spawn + waitpid, timed
with perf_counter_ns.  --direct-via PROG starts the "direct" side through
PROG too (a static exec trampoline), to separate the cost of a second exec,
which any launcher pays, from the launcher's own work.

  warm-launcher.py [--pairs N] [--launcher PATH] [--direct-via PROG] -- CMD [ARG...]
"""

import argparse
import os
import random
import statistics
import sys
import time


def spawn(argv):
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        sys.exit(f"warm-launcher: {argv[0]}: exit status {status:#x}")
    return (time.perf_counter_ns() - start) / 1e3


def quartiles(values):
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--launcher", default="build/pbitmap-run")
    ap.add_argument("--direct-via", metavar="PROG")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("cmd", nargs="+")
    args = ap.parse_args()
    if args.pairs < 10:
        ap.error("--pairs: at least 10")
    launcher = os.path.abspath(args.launcher)
    direct = ([os.path.abspath(args.direct_via)] if args.direct_via else []) + args.cmd
    cmds = {"direct": direct, "launcher": [launcher, "--"] + args.cmd}
    for argv in cmds.values():
        for _ in range(20):
            spawn(argv)
    times = {name: [] for name in cmds}
    rng = random.Random(args.seed)
    for _ in range(args.pairs):
        order = list(cmds)
        rng.shuffle(order)
        for name in order:
            times[name].append(spawn(cmds[name]))
    diff = [b - a for a, b in zip(times["direct"], times["launcher"])]
    label = {"direct": "direct" + (f" (via {args.direct_via})" if args.direct_via else ""),
             "launcher": os.path.basename(launcher) + " --"}
    print(f"{args.pairs} interleaved pairs of: {' '.join(args.cmd)}")
    for name, values in times.items():
        q1, q3 = quartiles(values)
        print(f"  {label[name]:32s} median {statistics.median(values) / 1e3:7.2f} ms"
              f"  IQR [{q1 / 1e3:.2f}, {q3 / 1e3:.2f}]")
    q1, q3 = quartiles(diff)
    ratio = statistics.median(times["launcher"]) / statistics.median(times["direct"])
    print(f"  paired difference, launcher - direct: median {statistics.median(diff) / 1e3:+.2f} ms"
          f"  IQR [{q1 / 1e3:+.2f}, {q3 / 1e3:+.2f}]; ratio of medians {ratio:.3f}")
    try:
        from scipy.stats import wilcoxon
        print(f"  Wilcoxon signed-rank p (paired, normal approximation): {wilcoxon(diff).pvalue:.2g}")
    except ImportError:
        print("  (python3-scipy not installed: no p-value)")


if __name__ == "__main__":
    main()
