#!/bin/bash
# t-power: kernel-patch/bench/power.py, the runs the 5% non-inferiority test
# needs.  A synthetic results.csv:
#   - "tight": every run within 0.5% of its median: 10 runs reach 100%;
#   - "wide": runs spread by +-40%: 10 runs reach well below 80%, 300 runs
#     at least 30 points more than 10 runs;
#   - rows of another disk are not read (a wild one there changes nothing);
#   - the same seed prints the same figures;
#   - bad input: a missing file, a CSV without wall_s, a disk with no runs,
#     a wall time that is no number (exit 1, "power: FILE: ..."); bad
#     --runs, --margin, --draws (exit 2).

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
POWER=$BENCH_DIR/power.py
cd "$WORK" || fail "cd $WORK"

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

# Bad input.
rc=0; "$PYTHON" "$POWER" missing.csv 2>err >/dev/null || rc=$?
((rc == 1)) && grep -q '^power: missing.csv: No such file or directory' err ||
	fail "a missing file: exit $rc, $(cat err)"
printf 'workload,condition,disk\ngdb,off,none\n' >nowall.csv
rc=0; "$PYTHON" "$POWER" nowall.csv 2>err >/dev/null || rc=$?
((rc == 1)) && grep -q '^power: nowall.csv: not a results.csv' err ||
	fail "no wall_s column: exit $rc, $(cat err)"
rc=0; "$PYTHON" "$POWER" --disk latency r.csv 2>err >/dev/null || rc=$?
((rc == 1)) && grep -q '^power: r.csv: no runs on disk latency' err ||
	fail "a disk with no runs: exit $rc, $(cat err)"
printf 'workload,condition,run,disk,wall_s\ngdb,off,1,none,fast\n' >nan.csv
rc=0; "$PYTHON" "$POWER" nan.csv 2>err >/dev/null || rc=$?
((rc == 1)) && grep -q "^power: nan.csv: line 2: wall_s 'fast' is not a number" err ||
	fail "a wall time that is no number: exit $rc, $(cat err)"
for bad in "--runs 10,x" "--runs 1" "--margin 0" "--margin 1.5" "--draws 0"; do
	rc=0
	# shellcheck disable=SC2086  # the option and its value, split on purpose
	"$PYTHON" "$POWER" $bad r.csv 2>err >/dev/null || rc=$?
	((rc == 2)) || fail "$bad: exit $rc, want 2 ($(cat err))"
done
echo "PASS: power: tight and wide spreads, other disks ignored, repeatable, bad input"
