#!/bin/bash
# t-compare: kernel-patch/bench/compare.py on two small SYNTHETIC CSVs (made
# up here, not measured): the medians of every count per kernel and their
# ratio, wall time only with --wall, conditions only one CSV has listed
# under the table, other disk models left out; a CSV with a missing column
# is refused with a clear message and the previous output is left alone.

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
COMPARE=$BENCH_DIR/compare.py
cd "$WORK" || fail "cd $WORK"

"$PYTHON" - <<'EOF' || fail "cannot write the synthetic CSVs"
import csv
head = ["workload", "condition", "run", "disk", "read_requests", "read_bytes",
        "major_faults", "cache_growth_kb", "wall_s", "output_ok"]
def write(name, rows):
    with open(name, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(head)
        w.writerows(rows)
old, new = [], []
# gdb off: requests 100, 110, 120 (median 110) against 50, 55, 60 (55).
for i, (a, b) in enumerate(zip([100, 110, 120], [50, 55, 60]), 1):
    old.append(["gdb", "off", i, "iops150", a, 10 * 2**20, 40, 2048, 2.0 + i / 10, "true"])
    new.append(["gdb", "off", i, "iops150", b, 5 * 2**20, 20, 1024, 1.0, "true"])
# A condition only OLD has, one only NEW has, and a row of another disk.
old.append(["gdb", "early", 1, "iops150", 90, 2**20, 10, 512, 1.5, "true"])
new.append(["gdb", "pressure", 1, "iops150", 30, 2**20, 5, 0, 0.5, "true"])
new.append(["gdb", "off", 9, "none", 9999, 2**30, 9999, 9999, 99, "true"])
write("old.csv", old)
write("new.csv", new)
with open("bad.csv", "w") as f:
    f.write("workload,condition,disk\ngdb,off,iops150\n")
EOF

"$PYTHON" "$COMPARE" old.csv new.csv --labels 6.1 6.12 -o table.md 2>err ||
	fail "compare.py failed: $(cat err)"
[[ ! -s err ]] || fail "compare.py printed on stderr: $(cat err)"
cat table.md
row=$(grep '^| gdb | off |' table.md) || fail "no gdb/off row"
want='| gdb | off | 110 | 55 | 0.50x | 10 | 5 | 0.50x | 40 | 20 | 0.50x | 2 | 1 | 0.50x |'
[[ $row == "$want" ]] || fail "gdb/off row is '$row', expected '$want'"
grep -q 'wall' table.md && fail "wall time shown without --wall"
grep -qx 'Only in 6.1: gdb early.' table.md || fail "the OLD-only condition is not listed"
grep -qx 'Only in 6.12: gdb pressure.' table.md || fail "the NEW-only condition is not listed"
grep -q 9999 table.md && fail "a row of another disk model leaked into the table"

"$PYTHON" "$COMPARE" old.csv new.csv --wall >wall.md 2>err || fail "--wall failed: $(cat err)"
grep -q '| 2.20 | 1.00 | 0.45x |$' <(grep '^| gdb | off |' wall.md) ||
	fail "--wall: expected median wall 2.20 -> 1.00 (0.45x): $(cat wall.md)"

cp table.md before.md
if "$PYTHON" "$COMPARE" old.csv bad.csv -o table.md 2>err; then
	fail "a CSV without the count columns was accepted"
fi
grep -q '^compare.py: bad.csv: missing column(s): .*read_requests' err ||
	fail "unclear message for a bad CSV: $(cat err)"
cmp -s table.md before.md || fail "a refused comparison changed the previous output"

if "$PYTHON" "$COMPARE" old.csv new.csv --disk latency 2>err; then
	fail "a disk model neither CSV has was accepted"
fi
grep -q 'no (workload, condition) on disk latency is in both CSVs' err ||
	fail "unclear message for an absent disk model: $(cat err)"
echo "ok: compare.py"
