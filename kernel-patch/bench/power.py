#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""power.py: how many runs it takes to show "not slower by more than 5%".

  power.py [--disk DISK] [--margin F] [--workloads K] [--runs N,N,...]
           [--draws D] [--seed S] RESULTS.csv

Issue 25 asks that, on the unthrottled disk, `plan` be shown not slower
than `off` by more than 5%, with enough runs to detect 5%.  Whether a
number of runs is enough depends on how much cold starts spread, which
only a benchmark run measures.  This estimates it from one.

For each workload on DISK (default none), every condition's wall times
are divided by that condition's median and pooled: the shape of one
cold run's deviation from its median, assumed the same for every
condition.  For each N, two samples of N runs are drawn from the pool
with replacement and no shift between them (pbitmap neither faster nor
slower), and the bound report.py applies to `plan` against `slurp` is
applied: the upper end of the one-sided interval of the Hodges-Lehmann
shift (second sample minus first), at level 1 - alpha / K (alpha 0.05,
Bonferroni over the K workloads tested together; K defaults to the
workloads the CSV has on DISK), must be at most MARGIN (0.05) of the
first sample's median.  The power at N is the share of D draws (default
1000) that pass.  The interval's rank is the normal approximation of the
rank-sum distribution (stats.asymptotic_rank(), which report.py uses
beyond 64 runs in all), with the continuity correction and without a tie
correction: within one rank of the exact one, which would take a second or
more per draw;
when N is so small that no rank reaches the level, the bound is infinite
and the draw fails, as with the exact interval.

The estimate is only as good as the spread the run measured, and
slightly optimistic: dividing each condition's runs by their own median
makes them look closer together than the population they come from
(with 10 runs, by about a tenth of the inter-quartile range).

Prints, per workload: the pooled runs, their inter-quartile range and
standard deviation relative to the median, the power at each N, and the
smallest N given that reaches 80%.  Exit status 0; 1 on error (messages
as "power: FILE: message"); 2 on usage errors.
"""
import argparse
import csv
import math
import sys
from collections import defaultdict
from statistics import NormalDist

import numpy as np

import stats

ALPHA = stats.ALPHA
TARGET_POWER = 0.80


class PowerError(Exception):
    pass


def read_pools(path: str, disk: str) -> dict:
    """{workload: numpy array of wall time / condition median}."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise PowerError(f"{path}: {e.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise PowerError(f"{path}: not a results.csv ({e})") from None
    if not rows or not {"workload", "condition", "disk", "wall_s"} <= set(rows[0]):
        raise PowerError(f"{path}: not a results.csv (workload, condition, disk, wall_s)")
    groups = defaultdict(list)
    for line, r in enumerate(rows, 2):
        if None in r or None in r.values():
            raise PowerError(f"{path}: line {line}: not as many fields as the header")
        if r["disk"] != disk:
            continue
        try:
            t = float(r["wall_s"])
        except ValueError:
            raise PowerError(f"{path}: line {line}: wall_s {r['wall_s']!r} is not a number") from None
        if not (math.isfinite(t) and t > 0):
            raise PowerError(f"{path}: line {line}: wall_s {t} is not a positive, finite time")
        groups[(r["workload"], r["condition"])].append(t)
    if not groups:
        raise PowerError(f"{path}: no runs on disk {disk}")
    pools = defaultdict(list)
    for (w, _), times in groups.items():
        if len(times) < 2:
            continue
        pools[w].extend(np.array(times) / np.median(times))
    if not pools:
        raise PowerError(f"{path}: no condition on disk {disk} has two runs or more")
    return {w: np.array(v) for w, v in pools.items()}


def upper_bound(x: np.ndarray, y: np.ndarray, z: float) -> float:
    """Upper end of the one-sided interval of the shift y - x at the level
    whose normal quantile is z, as stats.shift_interval() approximates it
    (the q-th largest of the n*m differences); infinite when the samples
    are too small."""
    q = stats.asymptotic_rank(len(x), len(y), z)
    if q < 1:
        return math.inf
    d = np.sort(np.subtract.outer(y, x).ravel())
    return float(d[len(d) - q])


def power(pool: np.ndarray, n: int, margin: float, z: float, draws: int, rng) -> float:
    ok = 0
    for _ in range(draws):
        x, y = rng.choice(pool, n), rng.choice(pool, n)
        ok += upper_bound(x, y, z) <= margin * np.median(x)
    return ok / draws


def main() -> int:
    ap = argparse.ArgumentParser(
        prog="power.py",
        description="Power of the 5% non-inferiority test for wall time, "
                    "from the spread a benchmark run measured.")
    ap.add_argument("results", metavar="RESULTS.csv", help="make bench's results.csv")
    ap.add_argument("--disk", default="none", help="the disk model's rows (default none)")
    ap.add_argument("--margin", type=float, default=0.05,
                    help="how much slower may not be shown (default 0.05)")
    ap.add_argument("--workloads", type=int, metavar="K",
                    help="workloads tested together, Bonferroni (default: the CSV's on DISK)")
    ap.add_argument("--runs", default="10,50,100,200,300",
                    help="runs per condition to try (default 10,50,100,200,300)")
    ap.add_argument("--draws", type=int, default=1000, help="draws per N (default 1000)")
    ap.add_argument("--seed", type=int, default=20261127, help="random seed")
    args = ap.parse_args()
    try:
        runs = [int(v) for v in args.runs.split(",")]
    except ValueError:
        ap.error(f"--runs {args.runs}: expected numbers separated by commas")
    if any(n < 2 for n in runs):
        ap.error("--runs: every N must be at least 2")
    if not 0 < args.margin < 1:
        ap.error("--margin must be between 0 and 1")
    if args.draws < 1:
        ap.error("--draws must be at least 1")
    if args.workloads is not None and args.workloads < 1:
        ap.error("--workloads must be at least 1")
    try:
        pools = read_pools(args.results, args.disk)
    except PowerError as e:
        print(f"power: {e}", file=sys.stderr)
        return 1
    rng = np.random.default_rng(args.seed)
    k = args.workloads or len(pools)
    z = float(NormalDist().inv_cdf(1 - ALPHA / k))
    print(f"disk {args.disk}: power to show a condition not slower than another by more "
          f"than {args.margin:.0%} when it is not slower at all: one-sided level "
          f"1 - {ALPHA}/{k}, {args.draws} draws per N")
    for w in sorted(pools):
        pool = pools[w]
        q1, q3 = np.percentile(pool, [25, 75])
        sd = pool.std(ddof=1) if len(pool) > 1 else 0.0
        got = [(n, power(pool, n, args.margin, z, args.draws, rng)) for n in sorted(runs)]
        enough = next((n for n, p in got if p >= TARGET_POWER), None)
        reach = f"N={enough}" if enough else "none of these N"
        print(f"{w}: {len(pool)} runs, IQR {q3 - q1:.0%} and sd {sd:.0%} of the median; "
              + ", ".join(f"N={n} {p:.0%}" for n, p in got)
              + f"; {TARGET_POWER:.0%} at {reach}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
