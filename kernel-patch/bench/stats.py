# SPDX-License-Identifier: GPL-2.0-or-later
"""Statistics for the cold-start benchmark (issue 12, method of seed 004).

Benchmark figures are small samples (10-20 runs per condition) of counts that
tie often (read requests, major faults) and of skewed times, so everything
here is rank based, and exact for samples of that size:

- rank_sum_test(x, y): the exact two-sided Wilcoxon rank-sum (Mann-Whitney)
  test, correct with ties.  It is a permutation test on mid-ranks: under the
  null hypothesis every way of choosing which n of the N = n + m pooled values
  carry the label x is equally likely, so the p-value is the number of such
  choices whose rank sum W is at least as far from its mean as the observed
  one, |W - E[W]| >= |w - E[W]|, divided by C(N, n).  The count comes from a
  dynamic programme over tie groups on doubled mid-ranks (integers, so sums
  and comparisons are exact) and the p-value is an exact Fraction.  This is
  the two-sided definition of R's exactRankTests::wilcox.exact (the package
  seed 004 uses).  scipy's exact mode is not used: it assumes no ties.
- hodges_lehmann(x, y): the shift estimate, median of all y_j - x_i.
- shift_interval(x, y): its exact confidence interval, by inverting the test
  (see the function).  Without ties it equals R's
  wilcox.test(y, x, conf.int=TRUE, exact=TRUE) interval.
- median_iqr(values), holm(pvalues), and ALPHA, the significance level.

Exact up to 64 runs in all (32 against 32; EXACT_MAX_RUNS); beyond that,
the normal approximation (method "auto", the default), because the exact
programme grows steeply with the runs and then runs on Python integers
(report.py's exact interval at 300 against 300 was stopped after four
minutes).  The approximate test is R's wilcox.test(exact=FALSE,
correct=TRUE): mean and tie-corrected variance of the rank sum, continuity
correction (scipy's mannwhitneyu(method="asymptotic") gives the same p).
The approximate interval is [d_(q), d_(nm+1-q)], the exact interval's form
with its rank q from the same normal approximation (asymptotic_rank()),
without a tie correction: within one rank of the exact interval, on either
side (tested at 10 and 30 against as many).  Results say which they
are (RankSumResult.exact).

A difference is called significant when its p-value (after Holm's
adjustment, when several are read together) is below ALPHA.
"""
from fractions import Fraction
from functools import lru_cache
from math import ceil, comb, erfc, sqrt
from statistics import NormalDist
from typing import NamedTuple, Sequence

import numpy as np

# Significance level of every test in the benchmark report: significant
# means p < ALPHA (after Holm's adjustment when several tests are read
# together).
ALPHA = 0.05

# How a test or an interval is computed: "exact", "asymptotic", or "auto"
# (exact when exact_feasible(), else asymptotic).
METHODS = ("auto", "exact", "asymptotic")


class RankSumResult(NamedTuple):
    """The rank-sum test of x against y."""
    n: int              # size of x
    m: int              # size of y
    w: float            # rank sum of x, mid-ranks (1-based) in the pooled sample
    u: float            # Mann-Whitney U of y: #(y_j > x_i) + #(y_j == x_i) / 2
    ties: bool          # whether the pooled sample has tied values
    p: Fraction         # two-sided p-value: a Fraction when exact, else a float
    exact: bool = True  # False: the normal approximation (large samples)

    @property
    def p_value(self) -> float:
        return float(self.p)


class Summary(NamedTuple):
    """Median and quartiles (numpy's default linear interpolation, R type 7,
    as matplotlib's boxplot draws them)."""
    median: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1


def _check_sample(name: str, values: Sequence[float]) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name}: need a non-empty list of numbers")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: values must be finite")
    return a


def _tie_groups(pooled: Sequence) -> tuple:
    """Sizes of the runs of equal values of the sorted pooled sample, in
    order.  The null distribution of the rank sum depends only on these."""
    sizes = []
    previous = object()
    for v in sorted(pooled):
        if sizes and v == previous:
            sizes[-1] += 1
        else:
            sizes.append(1)
        previous = v
    return tuple(sizes)


def doubled_midranks(pooled: Sequence) -> list:
    """Twice the mid-rank (1-based) of every value, as integers: a run of t
    equal values after `start` smaller ones has mid-rank start + (t + 1) / 2,
    doubled 2 * start + t + 1."""
    order = sorted(range(len(pooled)), key=lambda i: pooled[i])
    ranks = [0] * len(pooled)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and pooled[order[end + 1]] == pooled[order[start]]:
            end += 1
        doubled = 2 * start + (end - start + 1) + 1
        for k in range(start, end + 1):
            ranks[order[k]] = doubled
        start = end + 1
    return ranks


# "auto" is exact up to this many runs in all (32 against 32): the counts
# then fit int64 (C(64, 32) < 2**62) and the interval's search, a dynamic
# programme per gap between differences, takes about a second.  Beyond,
# unbalanced samples too get slow (10 against 300 took 12-24 s).
EXACT_MAX_RUNS = 64


def _fits_int64(n: int, total: int) -> bool:
    """Whether rank_sum_counts() can count n of total in int64."""
    return comb(total, min(n, total // 2)) < 2**62


def exact_feasible(n: int, m: int) -> bool:
    """Whether "auto" is exact for n against m runs (EXACT_MAX_RUNS; the
    same for m against n)."""
    return n + m <= EXACT_MAX_RUNS


def _method(method: str, n: int, m: int) -> bool:
    """True for exact, False for the normal approximation."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    return method == "exact" or (method == "auto" and exact_feasible(n, m))


def asymptotic_rank(n: int, m: int, z: float) -> int:
    """q of the normal-approximation interval: its ends are the q-th
    smallest and the q-th largest of the n*m pairwise differences, at the
    level whose normal quantile (one end's) is z.  The exact interval's q
    is the smallest u with P(U <= u) >= alpha (R's qwilcox); here that
    probability is the normal one with the continuity correction,
    q = ceil(nm/2 - 1/2 - z sqrt(nm(N+1)/12)).  Below 1 when the samples
    are too small for any rank to reach the level."""
    return ceil(n * m / 2 - 0.5 - z * sqrt(n * m * (n + m + 1) / 12))


@lru_cache(maxsize=4096)
def rank_sum_counts(group_sizes: tuple, n: int) -> np.ndarray:
    """Null distribution of the doubled mid-rank sum of n values drawn
    without replacement from a pooled sample with the given tie groups:
    counts[s] is the number of the C(N, n) subsets whose doubled rank sum is
    s.  One pass per tie group: taking j of a group's t members adds j times
    its doubled mid-rank, in C(t, j) ways.  Polynomial: O(groups * n * N^2).
    Counts are int64 when C(N, k) fits for every k <= n, Python ints
    (exact, slower) otherwise."""
    total = sum(group_sizes)
    if not 0 < n <= total:
        raise ValueError(f"cannot choose {n} of {total} values")
    max_sum = total * (total + 1)       # all doubled ranks together
    dtype = np.int64 if _fits_int64(n, total) else object
    counts = np.zeros((n + 1, max_sum + 1), dtype=dtype)  # [taken, doubled sum]
    counts[0, 0] = 1
    start = 0
    for t in group_sizes:
        doubled = 2 * start + t + 1
        nxt = counts.copy()                             # take none of this group
        for j in range(1, min(t, n) + 1):
            shift = j * doubled
            nxt[j:, shift:] += comb(t, j) * counts[:n + 1 - j, :max_sum + 1 - shift]
        counts = nxt
        start += t
    result = counts[n]
    if int(result.sum()) != comb(total, n):             # cannot happen; guards the DP
        raise AssertionError("rank-sum distribution does not sum to C(N, n)")
    result.setflags(write=False)
    return result


def _two_sided_count(counts: np.ndarray, n: int, total: int, observed2: int) -> int:
    """Number of subsets whose doubled rank sum is at least as far from its
    mean n * (N + 1) as observed2 is."""
    mean2 = n * (total + 1)
    dev = abs(observed2 - mean2)
    sums = np.arange(counts.size)
    extreme = np.abs(sums - mean2) >= dev
    return int(counts[extreme].sum())


def _rank_sum_p(x: Sequence, y: Sequence) -> tuple:
    """(exact two-sided p, doubled rank sum of x, tie groups) for any
    mutually comparable values (floats or Fractions).  The distribution is
    counted for the smaller sample (the p-value is the same either way),
    which keeps the counts in int64 whenever exact_feasible() says so."""
    pooled = list(x) + list(y)
    ranks = doubled_midranks(pooled)
    observed2 = sum(ranks[:len(x)])
    groups = _tie_groups(pooled)
    n = min(len(x), len(y))
    counted2 = observed2 if n == len(x) else sum(ranks[len(x):])
    counts = rank_sum_counts(groups, n)
    hits = _two_sided_count(counts, n, len(pooled), counted2)
    return Fraction(hits, comb(len(pooled), n)), observed2, groups


def _rank_sum_p_normal(x: Sequence, y: Sequence) -> tuple:
    """(two-sided p of the normal approximation, doubled rank sum of x, tie
    groups): R's wilcox.test(exact=FALSE, correct=TRUE)."""
    pooled = list(x) + list(y)
    n, total = len(x), len(pooled)
    m = total - n
    observed2 = sum(doubled_midranks(pooled)[:n])
    groups = _tie_groups(pooled)
    ties = sum(t**3 - t for t in groups)
    variance = n * m / 12 * ((total + 1) - (ties / (total * (total - 1)) if total > 1 else 0))
    if variance <= 0:                   # every value the same
        return 1.0, observed2, groups
    deviation = max(abs(observed2 - n * (total + 1)) / 2 - 0.5, 0.0)
    return erfc(deviation / sqrt(variance) / sqrt(2)), observed2, groups


def rank_sum_test(x: Sequence[float], y: Sequence[float],
                  method: str = "auto") -> RankSumResult:
    """Two-sided Wilcoxon rank-sum test of x against y, exact or, for large
    samples, the normal approximation (see the module docstring).
    Symmetric: rank_sum_test(y, x) has the same p."""
    xa, ya = _check_sample("x", x), _check_sample("y", y)
    n, m = xa.size, ya.size
    exact = _method(method, n, m)
    p, observed2, groups = (_rank_sum_p if exact else _rank_sum_p_normal)(
        xa.tolist(), ya.tolist())
    # Rank sum of y = U_y + m(m+1)/2 holds with mid-ranks too.
    w = observed2 / 2
    u = (n + m) * (n + m + 1) / 2 - w - m * (m + 1) / 2
    return RankSumResult(n, m, w, u, len(groups) < n + m, p, exact)


def hodges_lehmann(x: Sequence[float], y: Sequence[float]) -> float:
    """Hodges-Lehmann estimate of the shift from x to y: the median of the
    n * m differences y_j - x_i (negative: y is smaller)."""
    xa, ya = _check_sample("x", x), _check_sample("y", y)
    return float(np.median(np.subtract.outer(ya, xa)))


def shift_interval(x: Sequence[float], y: Sequence[float],
                   level: float = 1 - ALPHA, method: str = "auto") -> tuple:
    """Confidence interval (lo, hi) for the shift d in "y - d is
    distributed as x", by inverting the exact rank-sum test; for large
    samples (method "auto"), the normal approximation's interval of the
    module docstring.

    The test of (x, y - d) changes only where d crosses one of the pairwise
    differences y_j - x_i.  Between two consecutive distinct differences no
    x equals a y - d, and the p-value there is the exact permutation p-value
    of (x, y - d) with its own mid-ranks (ties within x or within y are kept:
    their place among the other sample, hence the null distribution, can
    differ from one gap to the next, and each gap gets its own).  The interval
    is the closure of the gaps the test does not reject (p >= 1 - level):
    its ends are pairwise differences.  The finitely many d equal to a
    difference, where an x and a y - d tie, are tested only when every gap
    is rejected (constant samples): then the interval is the range of those
    accepted, and empty, (nan, nan), when none is.
    Without ties this is R's wilcox.test(y, x, conf.int=TRUE) interval
    [d_(k), d_(nm+1-k)], k = qwilcox(alpha/2, m, n) (checked by the tests);
    where R clamps k to 1 because the samples are too small to reach the
    level, the bound here is infinite, which is what the data support.
    exactRankTests::wilcox.exact differs with ties: it uses the permutation
    distribution of the tie pattern at d = 0 for every d."""
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    xa, ya = _check_sample("x", x), _check_sample("y", y)
    if not _method(method, xa.size, ya.size):
        q = asymptotic_rank(xa.size, ya.size, NormalDist().inv_cdf(1 - (1 - level) / 2))
        if q < 1:
            return -np.inf, np.inf
        d = np.sort(np.subtract.outer(ya, xa).ravel())
        return float(d[q - 1]), float(d[d.size - q])
    alpha = Fraction(1 - level).limit_denominator(10**9)
    # Exact arithmetic: the binary values of the floats, as Fractions.
    xf = [Fraction(v) for v in xa.tolist()]
    yf = [Fraction(v) for v in ya.tolist()]
    cuts = sorted({yj - xi for yj in yf for xi in xf})

    def accepted(gap: int) -> bool:
        """Whether the test keeps the shifts strictly inside gap number
        `gap`: 0 is below cuts[0], len(cuts) above cuts[-1]."""
        if gap == 0:
            d = cuts[0] - 1
        elif gap == len(cuts):
            d = cuts[-1] + 1
        else:
            d = (cuts[gap - 1] + cuts[gap]) / 2
        p, _, _ = _rank_sum_p(xf, [v - d for v in yf])
        return p >= alpha

    gaps = len(cuts) + 1
    low = next((g for g in range(gaps) if accepted(g)), None)
    if low is None:
        # Every gap rejected: the samples are so tied that only a shift equal
        # to a difference, which ties x and y - d, keeps them together (two
        # constant samples, e.g. 0 read requests in every warm run).  Test
        # those shifts; the interval is the range of the accepted ones.
        # None may be: no location shift fits samples of different shapes
        # (20 runs of 145 read requests against 15 of 107 and 5 of 108; at
        # d = -37.5 the 145s fall between the 107s and the 108s, at -38 or
        # -37 they tie one group and lie beyond the other).  The interval
        # is then empty: NaN ends, printed "-", and no bound they decide
        # is met.
        kept = [c for c in cuts if _rank_sum_p(xf, [v - c for v in yf])[0] >= alpha]
        if not kept:
            return float("nan"), float("nan")
        return float(kept[0]), float(kept[-1])
    high = next(g for g in reversed(range(gaps)) if accepted(g))
    lo = float(cuts[low - 1]) if low > 0 else -np.inf
    hi = float(cuts[high]) if high < len(cuts) else np.inf
    return lo, hi


def median_iqr(values: Sequence[float]) -> Summary:
    a = _check_sample("values", values)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return Summary(float(med), float(q1), float(q3))


def holm(pvalues: Sequence) -> list:
    """Holm's step-down adjustment: the i-th smallest of m p-values becomes
    max over j <= i of min(1, (m - j + 1) * p_(j)).  A hypothesis is rejected
    at level ALPHA when its adjusted p-value is below ALPHA; this controls
    the family-wise error rate for any dependence between the tests.
    Returns the adjusted values in the input's order (Fractions stay exact)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [None] * m
    running = 0
    for step, i in enumerate(order):
        running = max(running, min(1, (m - step) * pvalues[i]))
        adjusted[i] = running
    return adjusted
