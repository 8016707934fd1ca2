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
which any launcher pays, from the launcher's own work.  Medians and
quartiles are stats.median_iqr's, as in every table of the benchmark.

  warm-launcher.py [--pairs N] [--launcher PATH] [--direct-via PROG] -- CMD [ARG...]
"""

import argparse
import os
import random
import sys
import time

from scipy.stats import wilcoxon

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stats  # noqa: E402


def spawn(argv):
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        sys.exit(f"warm-launcher: {argv[0]}: exit status {status:#x}")
    return (time.perf_counter_ns() - start) / 1e3


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
    summary = {name: stats.median_iqr(values) for name, values in times.items()}
    for name, s in summary.items():
        print(f"  {label[name]:32s} median {s.median / 1e3:7.2f} ms"
              f"  IQR [{s.q1 / 1e3:.2f}, {s.q3 / 1e3:.2f}]")
    d = stats.median_iqr(diff)
    ratio = summary["launcher"].median / summary["direct"].median
    print(f"  paired difference, launcher - direct: median {d.median / 1e3:+.2f} ms"
          f"  IQR [{d.q1 / 1e3:+.2f}, {d.q3 / 1e3:+.2f}]; ratio of medians {ratio:.3f}")
    print(f"  Wilcoxon signed-rank p (paired, normal approximation): {wilcoxon(diff).pvalue:.2g}")


if __name__ == "__main__":
    main()
