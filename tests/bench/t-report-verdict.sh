#!/bin/bash
# t-report-verdict: report.py's benchmark test (--not-slower COND:DISK) and
# its warm-exec table (--exec-csv), on SYNTHETIC CSVs made up here.
#   - full 6 runs all slower than off's 6 on disk "none" (p = 2/C(12,6),
#     significant after Holm): exit 3, a FAIL line on stderr and in the
#     table, the table still written;
#   - full's wall times interleaved with off's: exit 0, PASS;
#   - the same slower runs on another disk only: not tested there, PASS;
#   - the exec table: medians of the loops and the on / off and
#     daemon / off ratios (pbitmapd running: its state on a stock kernel);
#   - malformed --not-slower and exec CSVs are refused with a message.

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
REPORT=$BENCH_DIR/report.py
cd "$WORK" || fail "cd $WORK"

write_csv() {	# FILE DISK FULL_WALLS...
	local file=$1 disk=$2
	shift 2
	"$PYTHON" - "$file" "$disk" "$@" <<'EOF'
import csv, sys
path, disk, full = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3:]]
off = [1.00, 1.02, 1.04, 1.06, 1.08, 1.10]
with open(path, "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["workload", "condition", "run", "disk", "read_requests", "read_bytes",
                "major_faults", "cache_growth_kb", "wall_s", "output_ok"])
    for cond, walls in (("off", off), ("full", full)):
        for i, wall in enumerate(walls, start=1):
            w.writerow(["gdb", cond, i, disk, 100, 4096, 10, 40, wall, "true"])
EOF
}

verdict() {	# NAME DISK FULL_WALLS...: report NAME.csv with --not-slower full:none; sets RC
	local name=$1
	shift
	write_csv "$name.csv" "$@" || fail "cannot write $name.csv"
	RC=0
	"$PYTHON" "$REPORT" "$name.csv" -o "$name.md" --not-slower full:none 2>err || RC=$?
}
verdict slower none 1.20 1.21 1.22 1.23 1.24 1.25
((RC == 3)) || fail "full slower on none: exit $RC, not 3 ($(cat err))"
grep -q 'FAIL: gdb: full - off = 0.175 s' err || fail "no FAIL line on stderr: $(cat err)"
grep -q '^- FAIL: gdb: full - off = 0.175 s .*SLOWER beyond noise' slower.md ||
	fail "the table does not carry the failed verdict: $(grep -A3 'The test' slower.md)"
verdict mixed none 0.99 1.01 1.03 1.05 1.07 1.09
((RC == 0)) || fail "interleaved wall times: exit $RC ($(cat err))"
grep -q '^- PASS: gdb: full - off = -0.010 s .*not slower beyond noise' mixed.md ||
	fail "no PASS verdict: $(grep -A3 'The test' mixed.md)"
verdict other iops150 1.20 1.21 1.22 1.23 1.24 1.25
((RC == 0)) || fail "slower on iops150 only, tested on none: exit $RC ($(cat err))"
grep -q 'nothing tested' other.md || fail "the table does not say that nothing was tested on none"

cat >exec.csv <<'EOF'
pbitmap,program,repeat,execs,us_per_exec
off,stamped,1,1000,100.0
on,stamped,1,1000,110.0
off,stamped,2,1000,102.0
on,stamped,2,1000,114.0
off,stamped,3,1000,104.0
on,stamped,3,1000,112.0
off,unstamped,1,1000,90.0
on,unstamped,1,1000,90.0
daemon,unstamped,1,1000,99.0
EOF
"$PYTHON" "$REPORT" mixed.csv -o exec.md --exec-csv exec.csv 2>err || fail "--exec-csv: $(cat err)"
grep -Eq '^\| +stamped \| +on \| +3 \| +112 \[111, 113\] \| +1.10x \|' exec.md ||
	fail "stamped/on row (median 112 of 110, 112, 114; 112 / 102 = 1.10x): $(grep stamped exec.md)"
grep -Eq '^\| +unstamped \| +off \| +1 \| +90 \[90, 90\] \|' exec.md ||
	fail "unstamped/off row: $(grep unstamped exec.md)"
grep -Eq '^\| +unstamped \| +daemon \| +1 \| +99 \[99, 99\] \| +1.10x \|' exec.md ||
	fail "unstamped/daemon row (99 / 90 = 1.10x): $(grep unstamped exec.md)"
printf 'pbitmap,program,repeat,execs,us_per_exec\nmaybe,stamped,1,1000,90.0\n' >state.csv
rc=0
"$PYTHON" "$REPORT" mixed.csv -o x.md --exec-csv state.csv 2>err || rc=$?
((rc == 1)) && grep -q "pbitmap is 'maybe', not off, on or daemon" err ||
	fail "an exec CSV with state 'maybe': exit $rc, $(cat err)"
rm -f x.md

printf 'pbitmap,program,repeat\noff,stamped,1\n' >short.csv
rc=0
"$PYTHON" "$REPORT" mixed.csv -o x.md --exec-csv short.csv 2>err || rc=$?
((rc == 1)) && grep -q 'short.csv: missing column(s): execs, us_per_exec' err ||
	fail "an exec CSV without us_per_exec: exit $rc, $(cat err)"
[ ! -e x.md ] || fail "x.md was written although the exec CSV was refused"
rc=0
"$PYTHON" "$REPORT" mixed.csv --not-slower full 2>err >/dev/null || rc=$?
((rc == 2)) && grep -q 'expected CONDITION:DISK' err || fail "--not-slower full: exit $rc, $(cat err)"
echo "PASS: --not-slower fails a slower condition (exit 3) and passes noise; the exec table"
