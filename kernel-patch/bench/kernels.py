#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""kernels.py: pbitmapd on the kernels people run, beside the series.

    kernels.py [-o OUT.md] LABEL=results.csv ...

Each results.csv is one `make bench` run (BENCH_KERNEL= patched,
stock-6.12, stock-7.3), LABEL the kernel's name in the table.  The runs of
one CSV share a boot per disk; different CSVs are different boots, so only
ratios within a CSV are set side by side.  One table per disk, a row per
workload and machine state (after a drop: `off`, `daemon`, `plan`; full:
`pressure-off`, `pressure-daemon`, `pressure-plan`):

  - read requests: each kernel's `off` and `daemon` medians, and the
    series' `plan`;
  - the daemon's cut in read requests against its own kernel's `off`, as a
    share of the series' `plan` cut against the series' `off` (issue 45's
    target: at least 0.80), taken from the CSV labelled `patched` (the first
    CSV that has `plan`);
  - the wall-time bound of daemon - off on each kernel (the one-sided
    Hodges-Lehmann bound, Bonferroni over that kernel's rows of the same
    condition, as report.py's
    table of the same CSV): at most +5% of that kernel's `off`.
"""
import argparse
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
import stats  # noqa: E402



def load(spec):
    label, sep, path = spec.partition("=")
    if not sep or not label or not path:
        sys.exit(f"kernels: {spec}: give LABEL=results.csv")
    try:
        return label, report.Report(report.read_runs(path), path, drop_bad=False)
    except (OSError, report.CsvError) as e:
        sys.exit(f"kernels: {path}: {e}")


def table(kernels, disk):
    ref = next(((lbl, r) for lbl, r in kernels
                if any((disk, w, "plan") in r.cells for w in r.workloads)), None)
    rows_in = []
    for lbl, r in kernels:
        for dmn, off, plan in report.DAEMON_PAIRS:	# pbitmapd's conditions, as report.py's
            state = "after a drop" if off == report.BASELINE else "full machine"
            for w in r.workloads:
                if (disk, w, off) in r.cells and (disk, w, dmn) in r.cells:
                    rows_in.append((state, off, dmn, plan, lbl, r, w))
    if not rows_in:
        return ""
    # Bonferroni within each kernel's rows of one condition, as report.py's
    # table of that CSV
    per_kernel = Counter((row[4], row[2]) for row in rows_in)
    rows = []
    for state, off, dmn, plan, lbl, r, w in sorted(rows_in, key=lambda x: (x[6], x[0])):
        med = {c: r.summary(disk, w, c, "read_requests").median for c in (off, dmn)}
        share = "-"
        if ref and (disk, w, plan) in ref[1].cells and (disk, w, off) in ref[1].cells:
            poff = ref[1].summary(disk, w, off, "read_requests").median
            pplan = ref[1].summary(disk, w, plan, "read_requests").median
            share = report.cut_share(med[dmn], med[off], poff, pplan)
        rows.append([w, f"{dmn} ({state})", lbl,
                     f"{report.fmt(med[off], 0)} / {report.fmt(med[dmn], 0)}",
                     report.fmt_ratio(med[dmn], med[off]), share]
                    + report.not_slower_cells(r.values(disk, w, off, "wall_s"),
                                              r.values(disk, w, dmn, "wall_s"),
                                              1 - 2 * stats.ALPHA / per_kernel[lbl, dmn]))
    head = ["workload", "condition", "kernel", "read req off / daemon", "daemon / off",
            f"cut / {ref[0] if ref else 'patched'} plan's (>= {report.TARGET_DAEMON_CUT:.2f})",
            "wall s off / daemon", "daemon - off s (upper bound)",
            f"bound / off (<= +{report.TARGET_SLOWER:.0%})"]
    return report.md_table(head, rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csvs", nargs="+", metavar="LABEL=results.csv")
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    kernels = [load(spec) for spec in args.csvs]
    disks = report.ordered(d for _, r in kernels for d in r.disks)
    text = "".join(f"\n### {d}\n\n{t}\n" for d in disks for t in [table(kernels, d)] if t)
    if not text:
        sys.exit("kernels: no (workload, disk) with both off and daemon in any CSV")
    if args.output:
        with open(args.output, "w") as f:
            f.write(text.lstrip("\n"))
    else:
        sys.stdout.write(text.lstrip("\n"))


if __name__ == "__main__":
    main()
