#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""compare.py: two benchmark CSVs side by side, on counts (two kernels).

  kernel-patch/bench/compare.py OLD.csv NEW.csv [--labels OLD NEW]
                                [--disk DISK] [--wall] [-o TABLE.md]

OLD.csv and NEW.csv are results CSVs of make bench (the columns report.py
reads).  For every (workload, condition) that both have on disk model DISK
(default iops150), the table gives the median of each count in OLD and in
NEW and NEW / OLD: read requests, MiB read, major faults, page-cache growth
(MiB).  Counts are what two runs made on different days can be compared on:
under TCG the wall time of a run depends on the host's load that day.  With
--wall the median wall times and their ratio are added too; use it only for
two CSVs measured back to back on one machine.

A (workload, condition) that only one CSV has is listed under the table, not
silently dropped.  A CSV with a missing column is refused with a clear
message; the output is written to a temporary name and renamed.  The CSV
reading, the figures and the atomic write are report.py's.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

PROG = "compare.py"
# The counts of report.py's figures, then wall time (only with --wall).
COUNTS = [f for f in report.FIGURES if f.column != "wall_s"]
WALL = [f for f in report.FIGURES if f.column == "wall_s"]


def die(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(1)


def load(path, disk):
    """{(workload, condition): {column: [values]}} for DISK's rows."""
    try:
        runs = report.read_runs(path)
    except report.CsvError as e:
        die(f"{path}: {e}")
    out = {}
    for run in runs:
        if run["disk"] != disk:
            continue
        cell = out.setdefault((run["workload"], run["condition"]), {})
        for fig in report.FIGURES:
            cell.setdefault(fig.column, []).append(run[fig.column])
    return out


def fmt(x):
    return f"{x:.0f}" if abs(x) >= 100 or x == int(x) else f"{x:.1f}"


def table(old, new, labels, wall):
    a, b = labels
    cols = []
    specs = COUNTS + (WALL if wall else [])
    for fig in specs:
        cols += [f"{fig.label} {a}", f"{fig.label} {b}", f"{fig.label} {b}/{a}"]
    lines = ["| workload | condition | " + " | ".join(cols) + " |",
             "|---|---|" + "---:|" * len(cols)]
    keys = sorted(set(old) & set(new))
    for key in keys:
        cells = []
        for fig in specs:
            mo = statistics.median(old[key][fig.column]) * fig.scale
            mn = statistics.median(new[key][fig.column]) * fig.scale
            cells += [f"{mo:.2f}" if fig in WALL else fmt(mo),
                      f"{mn:.2f}" if fig in WALL else fmt(mn), report.fmt_ratio(mn, mo)]
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
    only = [(lab, k) for lab, d, o in ((a, old, new), (b, new, old)) for k in sorted(d) if k not in o]
    if only:
        lines.append("")
        for lab, (wl, cond) in only:
            lines.append(f"Only in {lab}: {wl} {cond}.")
    return "\n".join(lines) + "\n", len(keys)


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("old", help="results CSV of the first kernel")
    ap.add_argument("new", help="results CSV of the second kernel")
    ap.add_argument("--labels", nargs=2, metavar=("OLD", "NEW"), default=["old", "new"])
    ap.add_argument("--disk", default="iops150", help="disk model (default iops150)")
    ap.add_argument("--wall", action="store_true",
                    help="add wall times (only for CSVs measured back to back)")
    ap.add_argument("-o", "--output", help="write the table here (default: stdout)")
    args = ap.parse_args(argv)
    old, new = load(args.old, args.disk), load(args.new, args.disk)
    text, n = table(old, new, args.labels, args.wall)
    if n == 0:
        die(f"no (workload, condition) on disk {args.disk} is in both CSVs")
    if not args.output:
        sys.stdout.write(text)
        return 0
    report.write_atomic(args.output, text.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
