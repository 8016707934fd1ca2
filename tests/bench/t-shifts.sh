#!/bin/bash
# t-shifts: kernel-patch/bench/shifts.py, conditions against any baseline of
# one run:
#   - a SYNTHETIC CSV made up here: "slow" is every base run + 0.20 s (the
#     shift +0.200 s, a bound above +5%), "fast" every base run - 0.20 s (a
#     bound below -5%), with the medians of requests and MiB;
#   - a measured CSV of docs/bench/ gives the bound docs/BENCH.md quotes
#     (python3's daemon-probed against off on ebs, 2026-12-02: +14.4%);
#   - a missing baseline, a CSV without the columns and an ambiguous disk
#     are refused with a message, exit status 1.

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
SHIFTS=$BENCH_DIR/shifts.py
cd "$WORK" || fail "cd $WORK"

"$PYTHON" - <<'EOF2' || fail "cannot write the synthetic CSV"
import csv
head = ["workload", "condition", "run", "disk", "read_requests", "read_bytes",
        "major_faults", "cache_growth_kb", "wall_s", "output_ok"]
walls = [1.00, 1.02, 1.04, 1.06, 1.08, 1.10]
with open("one.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(head)
    for cond, req, d in (("base", 100, 0), ("slow", 80, 0.2), ("fast", 120, -0.2)):
        for i, wall in enumerate(walls, 1):
            w.writerow(["gdb", cond, i, "iops150", req, 2 * 2**20, 1, 1, round(wall + d, 3), "true"])
EOF2
out=$("$PYTHON" "$SHIFTS" one.csv base slow fast) || fail "shifts.py exited $?: $out"
grep -qx 'gdb on iops150: base 100 rq, 2.0 MiB, 1.050 s (6 runs)' <<<"$out" ||
	fail "the baseline's line: $out"
slow=$(grep '^  slow:' <<<"$out") fast=$(grep '^  fast:' <<<"$out")
[[ $slow == "  slow: 80 rq, 2.0 MiB, 1.250 s (6 runs); shift +0.200 s, bound +"* ]] ||
	fail "slow's line: $slow"
[[ $fast == "  fast: 120 rq, 2.0 MiB, 0.850 s (6 runs); shift -0.200 s, bound -"* ]] ||
	fail "fast's line: $fast"
b=${slow#*bound +}; b=${b%%.*}
((b > 5)) || fail "a run 0.2 s slower in every run gives a bound of +$b%: not shown slower"
b=${fast#*bound -}; b=${b%%.*}
((b > 5)) || fail "a run 0.2 s faster in every run gives a bound of -$b%: not shown faster"

measured=$TOP/docs/bench/results-pbitmapd-6.12-nometa-ebs-probed.csv
out=$("$PYTHON" "$SHIFTS" "$measured" off daemon-probed) || fail "shifts.py exited $? on $measured"
grep -q '^  daemon-probed: 99 rq, 6.6 MiB, 1.470 s (5 runs); shift -0.090 s, bound +14.4%, p 0.127$' \
	<<<"$out" || fail "python3's daemon-probed against off on ebs, not BENCH.md's +14.4%: $out"

for args in "one.csv nosuch slow" "$TOP/README.md base slow"; do
	# shellcheck disable=SC2086
	if err=$("$PYTHON" "$SHIFTS" $args 2>&1); then fail "shifts.py $args succeeded: $err"; fi
	[[ $err == "shifts.py: "* ]] || fail "shifts.py $args: no message of its own: $err"
done
sed 's/,iops150,/,ebs,/' one.csv | sed -n '2,4p' >>one.csv
if err=$("$PYTHON" "$SHIFTS" one.csv base slow 2>&1); then fail "two disks, no --disk: succeeded: $err"; fi
[[ $err == *"--disk one of ebs, iops150"* ]] || fail "two disks, no --disk: $err"
"$PYTHON" "$SHIFTS" --disk iops150 one.csv base slow >/dev/null || fail "--disk iops150 refused"
echo "PASS: shifts.py: bounds against any baseline, BENCH.md's figure, bad input refused"
