#!/bin/bash
# t-kernels: kernels.py (pbitmapd on each kernel beside the series' plan) and
# report.py's pbitmapd table, on SYNTHETIC CSVs made up here:
#   - the series' boot: off 200 requests, plan 100, daemon 120 (a cut of 40%
#     against plan's 50%: 0.80, PASS); a stock boot: off 150, daemon 130
#     (13% against 50%: 0.27, FAIL);
#   - the wall-time bound: the stock daemon's runs all 20% slower than its
#     off's: FAIL; the series' daemon 5% faster: PASS;
#   - a CSV without daemon rows is no row; a bad LABEL=CSV is refused.

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
cd "$WORK" || fail "cd $WORK"

write_csv() {	# FILE COND:REQUESTS:WALL_SCALE...
	"$PYTHON" - "$@" <<'EOF'
import csv, sys
path, specs = sys.argv[1], sys.argv[2:]
walls = [1.00, 1.02, 1.04, 1.06, 1.08, 1.10]
with open(path, "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["workload", "condition", "run", "disk", "read_requests", "read_bytes",
                "major_faults", "cache_growth_kb", "wall_s", "output_ok"])
    for spec in specs:
        cond, req, scale = spec.split(":")
        for i, wall in enumerate(walls, start=1):
            w.writerow(["gdb", cond, i, "iops150", int(req), 4096, 10, 40,
                        round(wall * float(scale) + (0.005 if cond != "off" else 0), 3), "true"])
EOF
}
write_csv patched.csv off:200:1 plan:100:0.8 daemon:120:0.95 || fail "cannot write patched.csv"
write_csv stock.csv off:150:1 daemon:130:1.2 || fail "cannot write stock.csv"
write_csv nodaemon.csv off:150:1 || fail "cannot write nodaemon.csv"
"$PYTHON" "$BENCH_DIR/kernels.py" -o k.md patched=patched.csv stock-6.12=stock.csv 7.3=nodaemon.csv 2>err ||
	fail "kernels.py failed: $(cat err)"
cat k.md
row() { grep -E "^\| gdb +\| daemon \\(after a drop\\) +\| $1 +\|" k.md || fail "no row for $1: $(cat k.md)"; }
r=$(row patched)
[[ $r =~ \|\ +200\ /\ 120\ \|\ +0\.60x\ \|\ +0\.80\ PASS\ \| ]] || fail "patched row: $r"
[[ $r =~ PASS\ \|$ ]] || fail "patched daemon 5% faster than off, not PASS: $r"
r=$(row stock-6.12)
[[ $r =~ \|\ +150\ /\ 130\ \|\ +0\.87x\ \|\ +0\.27\ FAIL\ \| ]] || fail "stock row: $r"
[[ $r =~ FAIL\ \|$ ]] || fail "stock daemon 20% slower than its off, not FAIL: $r"
! grep -qE '\| 7\.3 +\|' k.md || fail "a row for the CSV without daemon runs: $(cat k.md)"
rc=0
"$PYTHON" "$BENCH_DIR/kernels.py" patched.csv 2>err || rc=$?
((rc != 0)) && grep -q 'give LABEL=results.csv' err || fail "a CSV without a label: exit $rc, $(cat err)"
# report.py's table, in the series' boot: the same share.
"$PYTHON" "$BENCH_DIR/report.py" patched.csv -o p.md 2>err || fail "report.py failed: $(cat err)"
grep -q '^### pbitmapd against the kernel it runs on' p.md || fail "no pbitmapd table: $(cat p.md)"
grep -qE '^\| gdb +\| daemon +\| +6 \| +200 / 120 / 100 \| +0\.60x \| +0\.50x \| +0\.80 PASS \|' p.md ||
	fail "report.py's pbitmapd row: $(grep -A4 'pbitmapd against' p.md)"
echo "PASS: kernels.py and report.py's pbitmapd table"
