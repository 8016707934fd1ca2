#!/bin/bash
# t-stats: the unit tests of kernel-patch/bench/stats.py (test_stats.py):
# exact Wilcoxon rank-sum p-values with and without ties (hand cases, seed
# 004's 2/C(40,20), brute-force enumeration, scipy, published R output),
# Hodges-Lehmann shift and its exact interval, Holm, median/IQR.

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"

"$PYTHON" "$TOP/tests/bench/test_stats.py" >"$WORK/log" 2>&1
rc=$?
cat "$WORK/log"
((rc == 0)) || fail "unit tests failed (exit status $rc)"
# unittest exits 0 when it found no test at all: an empty run proves nothing.
ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$WORK/log")
[[ ${ran:-0} -ge 20 ]] || fail "expected at least 20 unit tests, ran ${ran:-none}"
echo "ok: $ran unit tests"
