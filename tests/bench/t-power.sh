#!/bin/bash
# t-power: kernel-patch/bench/power.py, the runs the 5% non-inferiority test
# needs.
#   - the bound itself: for 10 against 10 runs with distinct differences,
#     the 73rd smallest difference at one-sided 95% (q = 28); for 30
#     against 30, the upper end of stats.py's exact 90% interval; for 2
#     against 2, no rank reaches the level: infinite;
#   - a synthetic results.csv: "tight", every run within 0.5% of its
#     median, reaches 100% at 10 runs; "wide", runs spread by +-40%, is
#     below 60% at 10 runs and at least 30 points higher at 300;
#   - the level: Bonferroni over the CSV's 2 workloads on the disk, or
#     --workloads K;
#   - rows of another disk are not read (a wild one there changes nothing);
#   - the same seed prints the same figures;
#   - bad input: a missing file, a CSV without wall_s, a short row, a
#     disk with no runs, a wall time that is no number or is infinite, no
#     condition with two runs (exit 1, "power: FILE: ..."); bad --runs,
#     --margin, --draws, --workloads (exit 2).

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
POWER=$BENCH_DIR/power.py
cd "$WORK" || fail "cd $WORK"

"$PYTHON" - "$BENCH_DIR" <<'EOF' || fail "the bound"
import math, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import power, stats
z95 = 1.6448536269514722
x = np.arange(10.0)
y = np.arange(10.0) * 10 + 0.5          # 100 distinct differences 10j + 0.5 - i
d = np.sort(np.subtract.outer(y, x).ravel())
assert stats.asymptotic_rank(10, 10, z95) == 28, stats.asymptotic_rank(10, 10, z95)
assert power.upper_bound(x, y, z95) == d[72], (power.upper_bound(x, y, z95), d[72])
rng = np.random.default_rng(3)
x, y = rng.normal(1, 0.2, 30), rng.normal(1, 0.2, 30)
exact = stats.shift_interval(x, y, level=0.90, method="exact")[1]
assert power.upper_bound(x, y, z95) == exact, (power.upper_bound(x, y, z95), exact)
assert power.upper_bound(np.array([1.0, 2.0]), np.array([1.0, 2.0]), z95) == math.inf
EOF

"$PYTHON" - <<'EOF' >r.csv || fail "cannot write r.csv"
import random
random.seed(1)
print("workload,condition,run,disk,wall_s")
for c, base in (("off", 2.0), ("plan", 1.5)):
    for k in range(1, 11):
        print(f"tight,{c},{k},none,{base * (1 + (k - 5.5) / 1000):.4f}")
        print(f"wide,{c},{k},none,{base * (1 + (k - 5.5) / 11.25):.4f}")
        print(f"tight,{c},{k},ebs,{base * random.uniform(0.1, 10):.4f}")
EOF

out=$("$PYTHON" "$POWER" --runs 10,300 --draws 200 r.csv 2>err) || fail "power.py: $(cat err)"
echo "$out"
tight=$(grep '^tight:' <<<"$out") || fail "no line for tight"
wide=$(grep '^wide:' <<<"$out") || fail "no line for wide"
pct() {	# LINE N: the power printed for N runs
	sed -n "s/.*N=$2 \([0-9]*\)%.*/\1/p" <<<"$1"
}
[[ $(pct "$tight" 10) = 100 ]] || fail "tight at N=10: $(pct "$tight" 10)%, want 100% ($tight)"
grep -q '80% at N=10$' <<<"$tight" || fail "tight should reach 80% at N=10: $tight"
grep -q '^tight: 20 runs,' <<<"$tight" || fail "tight pooled other rows than disk none's: $tight"
w10=$(pct "$wide" 10) w300=$(pct "$wide" 300)
[[ -n $w10 && -n $w300 ]] || fail "cannot read wide's figures: $wide"
((w10 < 60)) || fail "wide at N=10: $w10%, want below 60% ($wide)"
((w300 >= w10 + 30)) || fail "wide at N=300: $w300%, want at least $w10 + 30 ($wide)"
again=$("$PYTHON" "$POWER" --runs 10,300 --draws 200 r.csv 2>err) || fail "power.py again: $(cat err)"
[[ $again = "$out" ]] || fail "the same seed printed other figures"
grep -q 'one-sided level 1 - 0.05/2,' <<<"$out" || fail "not Bonferroni over the 2 workloads: $(head -1 <<<"$out")"
out4=$("$PYTHON" "$POWER" --workloads 4 --runs 10 --draws 10 r.csv 2>err) || fail "power.py --workloads 4: $(cat err)"
grep -q 'one-sided level 1 - 0.05/4,' <<<"$out4" || fail "--workloads 4: $(head -1 <<<"$out4")"

# Bad input.
rejects() {	# LABEL PATTERN ARGS...: power.py ARGS exits 1, its message matching ^PATTERN
	local label=$1 pattern=$2 rc=0
	shift 2
	"$PYTHON" "$POWER" "$@" 2>err >/dev/null || rc=$?
	((rc == 1)) && grep -q "^$pattern" err || fail "$label: exit $rc, $(cat err)"
}
rejects "a missing file" 'power: missing.csv: No such file or directory' missing.csv
printf 'workload,condition,disk\ngdb,off,none\n' >nowall.csv
rejects "no wall_s column" 'power: nowall.csv: not a results.csv' nowall.csv
rejects "a disk with no runs" 'power: r.csv: no runs on disk latency' --disk latency r.csv
printf 'workload,condition,run,disk,wall_s\ngdb,off,1,none,fast\n' >nan.csv
rejects "a wall time that is no number" "power: nan.csv: line 2: wall_s 'fast' is not a number" nan.csv
printf 'workload,condition,run,disk,wall_s\ngdb,off,1,none\n' >short.csv
rejects "a short row" 'power: short.csv: line 2: not as many fields as the header' short.csv
printf 'workload,condition,run,disk,wall_s\ngdb,off,1,none,inf\n' >inf.csv
rejects "an infinite wall time" 'power: inf.csv: line 2: wall_s inf is not a positive, finite time' inf.csv
printf 'workload,condition,run,disk,wall_s\ngdb,off,1,none,1.0\ngdb,plan,1,none,1.1\n' >one.csv
rejects "one run per condition" 'power: one.csv: no condition on disk none has two runs or more' one.csv
for bad in "--runs 10,x" "--runs 1" "--margin 0" "--margin 1.5" "--draws 0" "--workloads 0"; do
	rc=0
	# shellcheck disable=SC2086  # the option and its value, split on purpose
	"$PYTHON" "$POWER" $bad r.csv 2>err >/dev/null || rc=$?
	((rc == 2)) || fail "$bad: exit $rc, want 2 ($(cat err))"
done
echo "PASS: power: the bound, tight and wide spreads, the level, other disks ignored, repeatable, bad input"
