# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of kernel-patch/bench/stats.py (run by tests/bench/t-stats.sh).

The exact p-values are checked four independent ways: hand-computed cases,
a brute-force enumeration of every label assignment (ranks from scipy's
rankdata, sums in Fractions), scipy's exact Mann-Whitney distribution on
untied data, and published output of R's exactRankTests package.  The
normal approximation, which large samples get, against scipy's asymptotic
test and the exact interval where both are computable."""
import itertools
import os
import random
import statistics
import sys
import time
import unittest
from fractions import Fraction
from math import comb, isnan

import numpy as np
import scipy.stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "kernel-patch", "bench"))
import stats  # noqa: E402


def brute_force_p(x, y):
    """Two-sided p by enumerating all C(n+m, n) ways of labelling n of the
    pooled values x: P(|W - E[W]| >= |w - E[W]|), W the mid-rank sum."""
    pooled = list(x) + list(y)
    ranks = [Fraction(r) for r in scipy.stats.rankdata(pooled)]  # mid-ranks, k/2 exact
    n, total = len(x), len(pooled)
    mean = Fraction(n * (total + 1), 2)
    observed = abs(sum(ranks[:n]) - mean)
    hits = sum(1 for chosen in itertools.combinations(range(total), n)
               if abs(sum(ranks[i] for i in chosen) - mean) >= observed)
    return Fraction(hits, comb(total, n))


def brute_force_u_cdf(n, m):
    """P(U <= u) for untied samples, by enumeration: U = rank sum of the
    m y's minus m(m+1)/2."""
    total = n + m
    dist = [0] * (n * m + 1)
    for chosen in itertools.combinations(range(1, total + 1), m):
        dist[sum(chosen) - m * (m + 1) // 2] += 1
    return [Fraction(sum(dist[:u + 1]), comb(total, m)) for u in range(n * m + 1)]


def tied_sample(rng, size, levels):
    return [float(rng.randrange(levels)) for _ in range(size)]


class ExactPValue(unittest.TestCase):
    def test_seed004_no_overlap(self):
        # Seed 004: 20 runs per condition, no overlap: p = 2 / C(40, 20).
        low = [3.0 + i / 100 for i in range(20)]
        high = [4.0 + i / 100 for i in range(20)]
        for x, y in ((low, high), (high, low)):
            r = stats.rank_sum_test(x, y)
            self.assertEqual(r.p, Fraction(2, comb(40, 20)))
            self.assertAlmostEqual(r.p_value / 1.45e-11, 1, places=2)
        self.assertEqual(comb(40, 20), 137846528820)

    def test_hand_tiny(self):
        # Ranks of x over the 6 labellings: 3,4,5,5,6,7; E = 5; |3-5| = 2
        # is reached by 3 and 7: p = 2/6.
        r = stats.rank_sum_test([1, 2], [3, 4])
        self.assertEqual(r.p, Fraction(2, 6))
        self.assertEqual((r.w, r.u, r.ties), (3.0, 4.0, False))

    def test_hand_tied(self):
        # Pooled 1,2,2,2,3,4 -> mid-ranks 1,3,3,3,5,6; x = {1,2,2} has
        # W = 7, E = 10.5.  Of the 20 triples, W <= 7 only for {1,3,3}
        # (3 ways), W >= 14 only for {3,5,6} (3 ways): p = 6/20.
        r = stats.rank_sum_test([1, 2, 2], [2, 3, 4])
        self.assertEqual(r.p, Fraction(6, 20))
        self.assertEqual((r.w, r.ties), (7.0, True))
        # All values tied: every labelling has W = E, p = 1.
        self.assertEqual(stats.rank_sum_test([5, 5, 5], [5, 5]).p, 1)

    def test_against_brute_force_with_ties(self):
        rng = random.Random(12)
        checked_tied = 0
        for _ in range(400):
            total = rng.randint(2, 12)
            n = rng.randint(1, total - 1)
            pooled = tied_sample(rng, total, rng.randint(1, 6))
            x, y = pooled[:n], pooled[n:]
            r = stats.rank_sum_test(x, y)
            self.assertEqual(r.p, brute_force_p(x, y), (x, y))
            checked_tied += r.ties
        self.assertGreater(checked_tied, 300)   # the sample really is tied

    def test_against_scipy_exact_permutation_test(self):
        # scipy's permutation_test enumerates all C(16, 8) partitions
        # itself (n_resamples=inf): an independent exact computation.
        rng = random.Random(4)
        x = tied_sample(rng, 8, 5)
        y = [v + 1 for v in tied_sample(rng, 8, 5)]
        total = 16

        def deviation(a, b, axis):
            ranks = scipy.stats.rankdata(np.concatenate([a, b], axis=axis), axis=axis)
            return np.abs(ranks[..., :a.shape[axis]].sum(axis=axis) - 8 * (total + 1) / 2)
        res = scipy.stats.permutation_test((x, y), deviation, vectorized=True,
                                           n_resamples=np.inf, alternative="greater")
        self.assertAlmostEqual(stats.rank_sum_test(x, y).p_value, res.pvalue, delta=1e-12)

    def test_untied_against_scipy_mannwhitneyu_exact(self):
        rng = np.random.default_rng(7)
        for n, m in ((10, 10), (12, 15), (20, 20), (3, 17)):
            for _ in range(5):
                x = rng.normal(0, 1, n)
                y = rng.normal(0.7, 1, m)
                ours = stats.rank_sum_test(x, y)
                ref = scipy.stats.mannwhitneyu(x, y, method="exact")
                self.assertAlmostEqual(ours.p_value, ref.pvalue, delta=1e-12 + 1e-9 * ref.pvalue)

    def test_against_r_exactranktests(self):
        # Published output of R 3.6.0, exactRankTests 0.8
        # (tests/exactRankTests-Ex.Rout.save in that package).
        # Hollander & Wolfe (1973) p. 110: wilcox.exact(y, x, conf.int=TRUE)
        # prints p-value = 0.2544, 95% CI -0.76 0.15, difference -0.305.
        x = [0.8, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
        y = [1.15, 0.88, 0.90, 0.74, 1.21]
        self.assertEqual(round(stats.rank_sum_test(y, x).p_value, 4), 0.2544)
        self.assertAlmostEqual(stats.hodges_lehmann(x, y), -0.305, places=12)
        lo, hi = stats.shift_interval(x, y)
        self.assertAlmostEqual(lo, -0.76, places=12)
        self.assertAlmostEqual(hi, 0.15, places=12)
        # dperm example, a tied sample: pperm(sum(r[x]), r, 7) (one-sided,
        # P(W <= w)) prints 0.004351204.
        x = [0.5, 0.5, 0.6, 0.6, 0.7, 0.8, 0.9]
        y = [0.5, 1.0, 1.2, 1.2, 1.4, 1.5, 1.9, 2.0]
        pooled = x + y
        counts = stats.rank_sum_counts(stats._tie_groups(pooled), len(x))
        observed2 = sum(stats.doubled_midranks(pooled)[:len(x)])
        self.assertEqual(round(int(counts[:observed2 + 1].sum()) / comb(15, 7), 9), 0.004351204)

    def test_symmetric_in_x_and_y(self):
        rng = random.Random(3)
        for _ in range(30):
            x = tied_sample(rng, rng.randint(3, 10), 8)
            y = [v + rng.choice((0, 1, 2)) for v in tied_sample(rng, rng.randint(3, 10), 8)]
            self.assertEqual(stats.rank_sum_test(x, y).p, stats.rank_sum_test(y, x).p)
            self.assertEqual(stats.hodges_lehmann(x, y), -stats.hodges_lehmann(y, x))
            lo, hi = stats.shift_interval(x, y)
            self.assertEqual(stats.shift_interval(y, x), (-hi, -lo))

    def test_fast_enough_for_twenty_runs(self):
        rng = np.random.default_rng(1)
        x = rng.integers(300, 320, 20)          # counts: heavy ties
        y = rng.integers(290, 315, 20)
        start = time.monotonic()
        stats.rank_sum_test(x, y)
        stats.shift_interval(x, y)
        self.assertLess(time.monotonic() - start, 10)

    def test_bad_input(self):
        for bad in ([], [1.0, float("nan")], [[1, 2]]):
            with self.assertRaises(ValueError):
                stats.rank_sum_test(bad, [1.0, 2.0])


class HodgesLehmann(unittest.TestCase):
    def test_against_brute_force_median(self):
        rng = random.Random(5)
        for _ in range(100):
            x = [rng.uniform(0, 10) for _ in range(rng.randint(1, 12))]
            y = [rng.uniform(2, 12) for _ in range(rng.randint(1, 12))]
            diffs = [b - a for a in x for b in y]
            self.assertAlmostEqual(stats.hodges_lehmann(x, y), statistics.median(diffs), places=12)

    def test_hand(self):
        # Differences y - x: 3-1, 4-1, 3-2, 4-2 = 2, 3, 1, 2: median 2.
        self.assertEqual(stats.hodges_lehmann([1, 2], [3, 4]), 2.0)


class ShiftInterval(unittest.TestCase):
    def test_untied_equals_r_formula(self):
        # R's exact interval: k = qwilcox(alpha/2, n, m), the smallest u with
        # P(U <= u) >= alpha/2; [d_(k), d_(nm+1-k)] over the sorted
        # differences.  U's distribution by brute-force enumeration.
        rng = np.random.default_rng(9)
        cdfs = {}
        for _ in range(80):
            n = int(rng.integers(2, 7))
            m = int(rng.integers(2, 7))
            x = rng.normal(0, 1, n)
            y = rng.normal(1, 1, m)
            cdf = cdfs.setdefault((n, m), brute_force_u_cdf(n, m))
            k = next(u for u, p in enumerate(cdf) if p >= Fraction(1, 40))
            diffs = sorted(np.subtract.outer(y, x).ravel())
            want = (-np.inf, np.inf) if k == 0 else (diffs[k - 1], diffs[n * m - k])
            lo, hi = stats.shift_interval(x, y)
            self.assertAlmostEqual(lo, want[0], places=12)
            self.assertAlmostEqual(hi, want[1], places=12)

    def test_tied_equals_brute_force_inversion(self):
        # With ties: test every gap between consecutive distinct
        # differences with the brute-force p of (x, y - d), keep those with
        # p >= 0.05, and compare the hull.
        rng = random.Random(11)
        for _ in range(60):
            x = tied_sample(rng, rng.randint(3, 5), 4)
            y = [v + rng.choice((0, 1, 2)) for v in tied_sample(rng, rng.randint(3, 5), 4)]
            cuts = sorted({b - a for a in x for b in y})
            probes = [cuts[0] - 1] + [(a + b) / 2 for a, b in zip(cuts, cuts[1:])] + [cuts[-1] + 1]
            kept = [i for i, d in enumerate(probes)
                    if brute_force_p(x, [v - d for v in y]) >= Fraction(1, 20)]
            want = (cuts[kept[0] - 1] if kept[0] > 0 else -np.inf,
                    cuts[kept[-1]] if kept[-1] < len(cuts) else np.inf)
            self.assertEqual(stats.shift_interval(x, y), want, (x, y))

    def test_p_equal_to_alpha_is_kept(self):
        # Gaps of the differences of x = [0,0,1], y = [4,0,2,0,2,3,4]
        # (brute force): below -1 p = 1/60, in (-1, 0) p = 1/20 exactly,
        # ..., in (3, 4) p = 7/40, above 4 p = 1/120.  p = ALPHA is not
        # significant (as R's qwilcox rule), so (-1, 0) is inside.
        x, y = [0, 0, 1], [4, 0, 2, 0, 2, 3, 4]
        self.assertEqual(brute_force_p(x, [v + 0.5 for v in y]), Fraction(1, 20))
        self.assertEqual(stats.shift_interval(x, y), (-1.0, 4.0))

    def test_constant_samples(self):
        # Every warm run reads 0 requests, and so may another condition:
        # each gap between differences separates the samples completely
        # (p = 2/C(12,6) < ALPHA); only the shift equal to the one
        # difference keeps them together.  It must be the interval, not an
        # error.
        self.assertEqual(stats.shift_interval([0] * 6, [0] * 6), (0.0, 0.0))
        self.assertEqual(stats.shift_interval([100] * 6, [105] * 6), (5.0, 5.0))
        self.assertEqual(brute_force_p([100] * 6, [105 - 5.5] * 6), Fraction(2, comb(12, 6)))

    def test_no_shift_fits(self):
        # make bench, 2026-12-06, ebs: python3's read requests, 145 in all
        # 20 runs of off, 107 in 15 and 108 in 5 of plan-probed.  Between
        # the two differences the 145s fall between the 107s and 108s, at
        # either they tie one group and lie beyond the other: every shift
        # is rejected, and the interval is empty, not an error.
        x, y = [145] * 20, [107] * 15 + [108] * 5
        lo, hi = stats.shift_interval(x, y)
        self.assertTrue(isnan(lo) and isnan(hi), (lo, hi))
        self.assertEqual(stats.hodges_lehmann(x, y), -38.0)

    def test_covers_estimate(self):
        rng = np.random.default_rng(2)
        x = rng.integers(100, 130, 12)
        y = rng.integers(80, 110, 12)
        lo, hi = stats.shift_interval(x, y)
        self.assertLessEqual(lo, stats.hodges_lehmann(x, y))
        self.assertLessEqual(stats.hodges_lehmann(x, y), hi)
        self.assertLess(hi, 0)          # a 20-request shift on 12 runs is resolved


class LargeSamples(unittest.TestCase):
    """Beyond 64 runs in all, "auto" is the normal approximation."""

    def test_auto_switches_beyond_sixty_four_runs(self):
        rng = np.random.default_rng(4)
        for n, m, exact in ((20, 20, True), (32, 32, True), (10, 54, True), (10, 55, False),
                            (33, 33, False), (300, 300, False)):
            x, y = rng.normal(0, 1, n), rng.normal(0, 1, m)
            self.assertEqual(stats.rank_sum_test(x, y).exact, exact, (n, m))
            self.assertEqual(stats.rank_sum_test(y, x).exact, exact, (m, n))
            self.assertEqual(stats.exact_feasible(n, m), exact, (n, m))
            self.assertEqual(stats.exact_feasible(m, n), exact, (m, n))

    def test_p_equals_scipy_asymptotic_with_ties(self):
        rng = np.random.default_rng(6)
        for size in (5, 40, 300):
            x = rng.integers(0, 12, size).astype(float)
            y = rng.integers(2, 14, size + 3).astype(float)
            got = stats.rank_sum_test(x, y, method="asymptotic")
            want = scipy.stats.mannwhitneyu(x, y, method="asymptotic", use_continuity=True)
            self.assertFalse(got.exact)
            self.assertAlmostEqual(got.p, want.pvalue, delta=1e-12 + 1e-9 * want.pvalue)
        same = stats.rank_sum_test([3.0] * 40, [3.0] * 40)
        self.assertEqual(same.p, 1.0)

    def test_asymptotic_near_exact_at_thirty(self):
        # Where both are computable, the approximate interval's ends are
        # within one rank of the exact ones, and the p-values close.
        rng = np.random.default_rng(8)
        for _ in range(2):
            x, y = rng.normal(0, 1, 30), rng.normal(0.4, 1, 30)
            d = np.sort(np.subtract.outer(y, x).ravel())
            for level in (0.95, 0.975):
                exact = stats.shift_interval(x, y, level, method="exact")
                approx = stats.shift_interval(x, y, level, method="asymptotic")
                for e, a in zip(exact, approx):
                    self.assertLessEqual(abs(int(np.searchsorted(d, e)) - int(np.searchsorted(d, a))),
                                         1, (exact, approx))
            pe = float(stats.rank_sum_test(x, y, method="exact").p)
            pa = stats.rank_sum_test(x, y, method="asymptotic").p
            self.assertLess(abs(pe - pa), 0.1 * pe + 1e-4, (pe, pa))

    def test_interval_rank_by_hand(self):
        # 300 against 300, 95%: q = ceil(45000 - 0.5 - 1.959964 * sqrt(90000 * 601 / 12))
        # = ceil(45000 - 0.5 - 1.959964 * 2123.087) = ceil(40838.3) = 40839;
        # ends d_(40839) and d_(90000 + 1 - 40839) = d_(49162).
        x = np.arange(300.0)
        y = np.arange(300.0) * 1000 + 0.5       # distinct differences
        d = np.sort(np.subtract.outer(y, x).ravel())
        self.assertEqual(stats.asymptotic_rank(300, 300, 1.959963984540054), 40839)
        self.assertEqual(stats.shift_interval(x, y), (d[40838], d[49161]))

    def test_rank_equals_exact_where_checked(self):
        # Distinct differences: the exact interval's lower end is the
        # qwilcox rank (10 against 10 at 95%: 24; at 90%: 28).
        for n, level, want in ((10, 0.95, 24), (10, 0.90, 28)):
            x = np.arange(float(n))
            y = np.arange(float(n)) * 1000 + 0.5
            d = np.sort(np.subtract.outer(y, x).ravel())
            exact = stats.shift_interval(x, y, level, method="exact")
            self.assertEqual(exact, (d[want - 1], d[n * n - want]))
            self.assertEqual(stats.shift_interval(x, y, level, method="asymptotic"), exact)

    def test_fast_enough_for_three_hundred_runs(self):
        rng = np.random.default_rng(10)
        x, y = rng.integers(140, 160, 300), rng.integers(80, 95, 300)
        start = time.monotonic()
        r = stats.rank_sum_test(x, y)
        lo, hi = stats.shift_interval(x, y)
        self.assertLess(time.monotonic() - start, 10)
        self.assertLess(r.p, 1e-6)
        self.assertLess(hi, 0)

    def test_bad_method(self):
        with self.assertRaises(ValueError):
            stats.rank_sum_test([1.0, 2.0], [3.0], method="normal")
        with self.assertRaises(ValueError):
            stats.shift_interval([1.0, 2.0], [3.0], method="")


class Holm(unittest.TestCase):
    def test_hand(self):
        # Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06,
        # 0.04*1 = 0.04 -> max(0.06, 0.04) = 0.06.
        adjusted = stats.holm([Fraction(1, 100), Fraction(4, 100), Fraction(3, 100), Fraction(5, 1000)])
        self.assertEqual(adjusted, [Fraction(3, 100), Fraction(6, 100), Fraction(6, 100), Fraction(2, 100)])
        self.assertEqual([a < stats.ALPHA for a in adjusted], [True, False, False, True])

    def test_capped_at_one_and_monotone(self):
        self.assertEqual(stats.holm([0.5, 0.6]), [1, 1])
        self.assertEqual(stats.holm([0.04, 0.01]), [0.04, 0.02])
        self.assertEqual(stats.holm([]), [])


class Summaries(unittest.TestCase):
    def test_median_iqr(self):
        # R type 7: q1 at position 1 + 0.25 * 3 = 1.75 -> 1.75, q3 -> 3.25.
        s = stats.median_iqr([4, 1, 3, 2])
        self.assertEqual((s.median, s.q1, s.q3, s.iqr), (2.5, 1.75, 3.25, 1.5))

    def test_alpha(self):
        self.assertEqual(stats.ALPHA, 0.05)


if __name__ == "__main__":
    unittest.main(verbosity=2)
