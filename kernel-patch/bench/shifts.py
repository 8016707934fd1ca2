#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""shifts.py: conditions of one benchmark CSV against a baseline of the same run.

  kernel-patch/bench/shifts.py RESULTS.csv BASE COND [COND...] [--disk DISK]

report.py compares every condition with `off`; this compares them with any
condition of the same run (a kernel plan with and without pbitmapd's lists,
a plan against `slurp-b`).  For each workload that has BASE on DISK
(default: the only disk of the CSV), one line for BASE (median read
requests, MiB read, wall s, runs) and one per COND: its medians, the
Hodges-Lehmann shift of wall time COND - BASE, the upper end of its
one-sided interval at 1 - 0.05/k (k: the workloads, Bonferroni), as % of
BASE's median, and the exact two-sided rank-sum p.  A bound at most +5%
shows COND not slower than BASE by 5%.  The statistics are stats.py's.
"""
import argparse
import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stats  # noqa: E402

PROG = "shifts.py"
COLUMNS = ("workload", "condition", "disk", "read_requests", "read_bytes", "wall_s")


def die(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("base")
    ap.add_argument("conds", nargs="+", metavar="cond")
    ap.add_argument("--disk")
    a = ap.parse_args()
    try:
        with open(a.csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        die(f"{a.csv}: {e.strerror}")
    if not rows or any(c not in rows[0] for c in COLUMNS):
        die(f"{a.csv}: not a results CSV (wants the columns {', '.join(COLUMNS)})")
    disks = sorted({r["disk"] for r in rows})
    disk = a.disk or (disks[0] if len(disks) == 1 else None)
    if disk is None or disk not in disks:
        die(f"{a.csv}: --disk one of {', '.join(disks)}")
    rows = [r for r in rows if r["disk"] == disk]
    workloads = list(dict.fromkeys(r["workload"] for r in rows
                                   if r["condition"] == a.base))
    if not workloads:
        die(f"{a.csv}: no run of {a.base} on {disk}")

    def col(w, c, name):
        return [float(r[name]) for r in rows if r["workload"] == w and r["condition"] == c]

    def medians(w, c):
        return (f"{statistics.median(col(w, c, 'read_requests')):g} rq, "
                f"{statistics.median(col(w, c, 'read_bytes')) / 2**20:.1f} MiB, "
                f"{statistics.median(col(w, c, 'wall_s')):.3f} s ({len(col(w, c, 'wall_s'))} runs)")

    level = 1 - 2 * stats.ALPHA / len(workloads)	# two-sided, so one side is alpha / k
    for w in workloads:
        base = col(w, a.base, "wall_s")
        print(f"{w} on {disk}: {a.base} {medians(w, a.base)}")
        for c in a.conds:
            x = col(w, c, "wall_s")
            if len(x) < 2 or len(base) < 2:
                print(f"  {c}: fewer than 2 runs")
                continue
            _, hi = stats.shift_interval(base, x, level=level)
            print(f"  {c}: {medians(w, c)}; shift {stats.hodges_lehmann(base, x):+.3f} s, "
                  f"bound {100 * hi / statistics.median(base):+.1f}%, "
                  f"p {float(stats.rank_sum_test(base, x).p):.3g}")


if __name__ == "__main__":
    main()
