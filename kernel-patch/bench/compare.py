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
message; the output is written to a temporary name and renamed.
"""
import argparse
import csv
import os
import statistics
import sys
import tempfile

PROG = "compare.py"
COUNTS = [
    # column, heading, scale
    ("read_requests", "read req", 1),
    ("read_bytes", "MiB read", 1 / 2**20),
    ("major_faults", "maj flt", 1),
    ("cache_growth_kb", "cache MiB", 1 / 1024),
]
NEEDED = ["workload", "condition", "disk", "wall_s"] + [c for c, _, _ in COUNTS]


def die(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(1)


def load(path, disk):
    """{(workload, condition): {column: [values]}} for DISK's rows."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
            header = rows[0].keys() if rows else []
    except OSError as e:
        die(f"{path}: {e.strerror}")
    if not rows:
        die(f"{path}: no rows")
    missing = [c for c in NEEDED if c not in header]
    if missing:
        die(f"{path}: no column {', '.join(missing)}")
    out = {}
    for n, row in enumerate(rows, start=2):
        if row["disk"] != disk:
            continue
        cell = out.setdefault((row["workload"], row["condition"]), {})
        for col in NEEDED[3:]:
            try:
                cell.setdefault(col, []).append(float(row[col]))
            except ValueError:
                die(f"{path}: line {n}: {col} is not a number: {row[col]!r}")
    return out


def fmt(x):
    return f"{x:.0f}" if abs(x) >= 100 or x == int(x) else f"{x:.1f}"


def ratio(new, old):
    return f"{new / old:.2f}x" if old else "-"


def table(old, new, labels, wall):
    a, b = labels
    cols = []
    for _, head, _ in COUNTS:
        cols += [f"{head} {a}", f"{head} {b}", f"{head} {b}/{a}"]
    if wall:
        cols += [f"wall s {a}", f"wall s {b}", f"wall s {b}/{a}"]
    lines = ["| workload | condition | " + " | ".join(cols) + " |",
             "|---|---|" + "---:|" * len(cols)]
    keys = sorted(set(old) & set(new))
    for key in keys:
        cells = []
        specs = list(COUNTS) + ([("wall_s", "wall s", 1)] if wall else [])
        for col, _, scale in specs:
            mo = statistics.median(old[key][col]) * scale
            mn = statistics.median(new[key][col]) * scale
            cells += [f"{mo:.2f}" if col == "wall_s" else fmt(mo),
                      f"{mn:.2f}" if col == "wall_s" else fmt(mn), ratio(mn, mo)]
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
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.output)) or ".")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
