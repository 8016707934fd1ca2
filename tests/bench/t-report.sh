#!/bin/bash
# t-report: kernel-patch/bench/report.py on a small SYNTHETIC CSV (made up
# here, not measured): the tables carry the medians, quartiles, ratios,
# requests/floor, cold/warm, exact p-values with Holm's adjustment, the
# Hodges-Lehmann shift and the 2008 talk's figures; issue 25's targets, on
# the unthrottled disk too, with the normal approximation beyond 64 runs
# in all; two non-empty PNGs per
# workload (boxplots, and time against memory with its points checked);
# the same CSV re-draws the same table and pictures; a CSV with a missing
# column or a run whose output differed is refused with a clear message
# and leaves the previous output untouched; a daemon-gapN condition gets
# its bound against off; issue 46's targets for plan-probed after a drop
# and on a full machine, without slurp on the unthrottled disk; the
# workload's CPU seconds as two columns where the CSV has them.

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
REPORT=$BENCH_DIR/report.py
cd "$WORK" || fail "cd $WORK"

# synth.py: a SYNTHETIC results CSV's rows (add()) and the CSV written
# (write()), for synthetic.csv and the gap CSVs below.
cat >synth.py <<'EOF'
import csv
rows = []
def add(wl, cond, reqs, walls, cache_kb, floor, ok=1):
    for i, (r, w) in enumerate(zip(reqs, walls), start=1):
        rows.append([wl, cond, i, "iops150", r, 32 * 2**20, r + 5, cache_kb, w, floor,
                     80 if floor else "", ok])
def write(path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["workload", "condition", "run", "disk", "read_requests", "read_bytes",
                    "major_faults", "cache_growth_kb", "wall_s", "floor_requests",
                    "physical_floor_requests", "output_ok"])
        w.writerows(rows)
EOF

# SYNTHETIC data, chosen so that every expected figure is known by hand:
# gcc, 6 runs of off/slurp/full/warm with a request floor of 125; python3,
# 5 runs of off/full without a floor.  All on one disk model, "iops150".
"$PYTHON" - <<'EOF' || fail "cannot write the synthetic CSV"
from synth import add, write
add("gcc", "off",   [300, 310, 320, 330, 340, 350], [2.0, 2.1, 2.2, 2.3, 2.4, 2.5], 40960, 125)
add("gcc", "slurp", [60, 70, 70, 70, 80, 90], [1.5, 1.6, 1.6, 1.7, 1.8, 1.9], 51200, 125)
add("gcc", "full",  [150, 155, 160, 165, 170, 175], [2.2, 2.25, 2.3, 2.35, 2.4, 2.45], 30720, 125)
add("gcc", "warm",  [0, 0, 1, 0, 2, 0], [0.5, 0.5, 0.5, 0.6, 0.6, 0.6], 0, 125)
add("python3", "off",  [80, 82, 84, 86, 88], [0.60, 0.70, 0.65, 0.62, 0.68], 8192, "")
add("python3", "full", [40, 41, 42, 43, 44], [0.61, 0.66, 0.59, 0.64, 0.63], 4096, "")
write("synthetic.csv")
EOF

mkdir plots
"$PYTHON" "$REPORT" synthetic.csv -o table.md --plots plots 2>err ||
	fail "report.py failed: $(cat err)"
[[ ! -s err ]] || fail "report.py printed on stderr: $(cat err)"
cat table.md

"$PYTHON" - table.md "$BENCH_DIR" <<'EOF' || fail "table contents (see above)"
import statistics, sys
from fractions import Fraction
from math import comb
sys.path.insert(0, sys.argv[2])
import stats

text = open(sys.argv[1]).read()
sections = {}          # heading line -> rows
current = None
for line in text.splitlines():
    if line.startswith("### ") or line.endswith(":"):
        current = line
    elif line.startswith("| ") and current and not line.startswith("| workload"):
        cells = [c.strip() for c in line.strip("|").split("|")]
        sections.setdefault(current, {})[(cells[0], cells[1])] = cells
errors = []
def want(section, key, column, expected):
    rows = sections.get(section)
    if rows is None:
        errors.append(f"no section {section!r}")
    elif key not in rows:
        errors.append(f"{section}: no row {key}")
    elif rows[key][column] != expected:
        errors.append(f"{section} {key} column {column}: {rows[key][column]!r}, expected {expected!r}")

fig = "### Disk: iops150"
# runs, read req, MiB read, maj flt, cache MiB, wall s, req / floor,
# physical floor, cold / warm
want(fig, ("gcc", "off"), 2, "6")
want(fig, ("gcc", "off"), 3, "325 [312.5, 337.5]")
want(fig, ("gcc", "off"), 4, "32.0 [32.0, 32.0]")
want(fig, ("gcc", "off"), 5, "330 [317.5, 342.5]")
want(fig, ("gcc", "off"), 6, "40.0 [40.0, 40.0]")
want(fig, ("gcc", "off"), 7, "2.25 [2.12, 2.38]")
want(fig, ("gcc", "off"), 8, "2.60")            # median of 300/125 ... 350/125
want(fig, ("gcc", "off"), 9, "80")              # the physical floor, as given
want(fig, ("gcc", "off"), 10, "4.09x")          # 2.25 / 0.55
want(fig, ("gcc", "slurp"), 3, "70 [70, 77.5]")
want(fig, ("gcc", "full"), 8, "1.30")           # 162.5 / 125
want(fig, ("gcc", "warm"), 10, "1.00x")
want(fig, ("python3", "off"), 3, "84 [82, 86]")
want(fig, ("python3", "off"), 8, "-")           # no floor given
want(fig, ("python3", "off"), 9, "-")           # no physical floor given
want(fig, ("python3", "off"), 10, "-")          # no warm runs

# Against off: 8 comparisons (gcc: 3 conditions, python3: 1; x 2 figures).
vs = "Against `off` (iops150):"
want(vs, ("gcc", "full"), 2, "0.50x")           # 162.5 / 325
want(vs, ("gcc", "slurp"), 2, "0.22x")          # 70 / 325
# Holm runs within each (disk, workload) family.  gcc: 6 comparisons (3
# conditions x 2 figures).  No overlap, 6 against 6: p = 2/C(12,6) = 0.00216;
# five such, and Holm multiplies the smallest by 6: 0.013.
assert Fraction(2, comb(12, 6)) * 6 < Fraction(1, 50)
for cond in ("slurp", "full", "warm"):
    want(vs, ("gcc", cond), 3, "0.002")
    want(vs, ("gcc", cond), 4, "0.013 *")
want(vs, ("gcc", "slurp"), 7, "0.002")
want(vs, ("gcc", "slurp"), 8, "0.013 *")
# python3: 2 comparisons.  Requests: no overlap, 5 against 5: p = 2/252,
# the smaller of the two, Holm factor 2: 0.0159.
want(vs, ("python3", "full"), 3, "0.008")
want(vs, ("python3", "full"), 4, "0.016 *")
# Overlapping wall times: the p the module computes, not significant.
off_wall = [0.60, 0.70, 0.65, 0.62, 0.68]
full_wall = [0.61, 0.66, 0.59, 0.64, 0.63]
p = stats.rank_sum_test(off_wall, full_wall).p_value
want(vs, ("python3", "full"), 7, f"{p:.3f}")
cell = sections[vs][("python3", "full")][8]
if cell.endswith("*") or float(cell) < p:
    errors.append(f"python3 full wall Holm p {cell!r} (raw {p:.3f}) marked significant or below raw")
# Hodges-Lehmann shift of requests: median of the 36 differences full - off.
off_req = [300, 310, 320, 330, 340, 350]
full_req = [150, 155, 160, 165, 170, 175]
hl = statistics.median(f - o for o in off_req for f in full_req)
shift = sections[vs][("gcc", "full")][5]
if not shift.startswith(f"{hl:g} ["):
    errors.append(f"gcc full request shift {shift!r}, expected {hl:g} [lo, hi]")
lo, hi = (float(v) for v in shift.split("[")[1].rstrip("]").split(","))
if not lo <= hl <= hi < 0:
    errors.append(f"gcc full request interval {shift!r} does not hold {hl} below 0")
if ("gcc", "off") in sections[vs]:
    errors.append("off compared with itself")

# Beside the 2008 talk: our change, the talk's means and its change.
talk = "iops150:"
want(talk, ("gcc", "slurp"), 3, "-26.7%")       # 1.65 vs 2.25
want(talk, ("gcc", "slurp"), 5, "+25.0%")       # 50 vs 40 MiB
want(talk, ("gcc", "off"), 6, "1.57 [sd 0.05]")
want(talk, ("gcc", "slurp"), 7, "-9.6%")        # 1.42 vs 1.57
want(talk, ("gcc", "slurp"), 9, "+20.4%")       # 6968 vs 5787
want(talk, ("gcc", "full"), 6, "")              # the talk had no such condition
want(talk, ("python3", "off"), 6, "")
if "significance level 0.05" not in text or "Holm" not in text:
    errors.append("the method (level, Holm) is not stated")
for e in errors:
    print("table:", e)
sys.exit(1 if errors else 0)
EOF
echo "ok: table figures"

for png in gcc.png python3.png gcc-memory.png python3-memory.png; do
	[[ -s plots/$png ]] || fail "plots/$png missing or empty"
	[[ $(head -c 8 "plots/$png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
		fail "plots/$png is not a PNG"
done
[[ $(find plots -type f | wc -l) == 4 ]] || fail "expected 4 files in plots/: $(ls -a plots)"
# The time-against-memory picture's points: gcc off's page cache 40 MiB in
# every run, its wall times 2.0..2.5 s (median 2.25, quartiles 2.125, 2.375).
"$PYTHON" - "$REPORT" <<'EOF' || fail "memory_points"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("report", sys.argv[1])
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)
r = report.Report(report.read_runs("synthetic.csv"), "synthetic.csv", False)
pts = {c: (m, w) for c, m, w in r.memory_points("iops150", "gcc")}
assert list(pts) == ["off", "slurp", "full", "warm"], list(pts)
m, w = pts["off"]
assert (m.median, m.q1, m.q3) == (40.0, 40.0, 40.0), m
assert abs(w.median - 2.25) < 1e-9 and abs(w.q1 - 2.125) < 1e-9 and abs(w.q3 - 2.375) < 1e-9, w
assert pts["slurp"][0].median == 50.0 and pts["warm"][0].median == 0.0
EOF
echo "ok: two PNGs per workload (boxplots; time against memory, its points checked)"

# Re-drawn from the same CSV: byte for byte the same table and pictures.
mkdir plots2
"$PYTHON" "$REPORT" synthetic.csv --plots plots2 >table2.md || fail "second run failed"
cmp table.md table2.md || fail "the table differs between two runs on the same CSV"
for png in gcc.png python3.png gcc-memory.png python3-memory.png; do
	cmp "plots/$png" "plots2/$png" || fail "$png differs between two runs"
done
echo "ok: re-drawn identically"

# Refused input: clear message, exit 1, previous output left as it was.
echo "previous table" >kept.md
cut -d, -f1-8,10- synthetic.csv >no-wall.csv
"$PYTHON" "$REPORT" no-wall.csv -o kept.md 2>err && fail "a CSV without wall_s was accepted"
grep -qx "report: no-wall.csv: missing column(s): wall_s" err || fail "message: $(cat err)"
[[ $(cat kept.md) == "previous table" ]] || fail "kept.md changed on a refused CSV"

sed '5s/,1$/,0/' synthetic.csv >bad-output.csv
"$PYTHON" "$REPORT" bad-output.csv -o kept.md 2>err && fail "a run with output_ok 0 was accepted"
grep -q "^report: bad-output.csv: 1 run(s) with output_ok false (line 5)" err || fail "message: $(cat err)"
[[ $(cat kept.md) == "previous table" ]] || fail "kept.md changed on a refused CSV"
"$PYTHON" "$REPORT" bad-output.csv --drop-bad-output -o kept.md 2>err || fail "--drop-bad-output: $(cat err)"
grep -q "^Left out (--drop-bad-output): 1 run(s) .*: gcc/off/iops150 run 4\.$" kept.md ||
	fail "--drop-bad-output does not list the run left out"
grep -q "^| gcc      | off       |    5 |" kept.md || fail "--drop-bad-output kept the run"

sed '3s/,310,/,x10,/' synthetic.csv >bad-number.csv
"$PYTHON" "$REPORT" bad-number.csv 2>err >/dev/null && fail "a non-numeric count was accepted"
grep -qx "report: bad-number.csv: line 3: read_requests is not a number: 'x10'" err ||
	fail "message: $(cat err)"
[[ -z $(find . -name '.report.*') ]] || fail "temporary files left behind"
echo "ok: bad input refused"

# A full machine: with `pressure` and `pressure-off` in the CSV, their ratio
# beside full / off (SYNTHETIC figures; medians 100/60, 200/100, 90/80).
"$PYTHON" - <<'EOF2' || fail "cannot write the pressure CSV"
import csv
with open("pressure.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["workload", "condition", "run", "disk", "read_requests", "read_bytes",
                "major_faults", "cache_growth_kb", "wall_s", "output_ok"])
    for cond, reqs, wall in (("off", 100, 1.0), ("full", 60, 0.5), ("pressure-off", 90, 1.2),
                             ("pressure", 80, 1.0)):
        for run, d in enumerate((-1, 0, 1), start=1):
            w.writerow(["gdb", cond, run, "iops150", reqs + d, 2**20, reqs // 2, 1024, wall, 1])
EOF2
"$PYTHON" "$REPORT" pressure.csv -o pressure.md 2>err || fail "report.py on pressure.csv: $(cat err)"
grep -q '^### A full machine: .pressure. against .pressure-off.' pressure.md ||
	fail "no full-machine section: $(cat pressure.md)"
grep -qE '^\| gdb +\| +0\.60x \| +0\.89x \| +0\.60x \| +0\.89x \| +0\.50x \| +0\.83x \|$' pressure.md ||
	fail "full-machine ratios: $(grep -A4 'iops150, full machine' pressure.md)"
"$PYTHON" "$REPORT" synthetic.csv | grep -q 'full machine' && fail "a full-machine section without pressure runs"
# With `pressure-plan` and `plan` too, their pair follows (SYNTHETIC: plan
# 50 requests, 0.4 s; pressure-plan 45, 0.9 s).
"$PYTHON" - <<'EOF2' || fail "cannot write the pressure-plan CSV"
import csv
rows = list(csv.reader(open("pressure.csv")))
with open("pressure-plan.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerows(rows)
    for cond, reqs, wall in (("plan", 50, 0.4), ("pressure-plan", 45, 0.9)):
        for run, d in enumerate((-1, 0, 1), start=1):
            w.writerow(["gdb", cond, run, "iops150", reqs + d, 2**20, reqs // 2, 1024, wall, 1])
EOF2
"$PYTHON" "$REPORT" pressure-plan.csv -o pressure-plan.md 2>err ||
	fail "report.py on pressure-plan.csv: $(cat err)"
grep -q '^| workload | read req full / off | read req pressure / pressure-off | read req plan / off | read req pressure-plan / pressure-off |' pressure-plan.md ||
	fail "full-machine headers with plans: $(grep -A2 'iops150' pressure-plan.md | tail -n 3)"
grep -qE '^\| gdb +\| +0\.60x \| +0\.89x \| +0\.50x \| +0\.50x \| +0\.60x \| +0\.89x \| +0\.50x \| +0\.49x \| +0\.50x \| +0\.83x \| +0\.40x \| +0\.75x \|$' pressure-plan.md ||
	fail "full-machine ratios with plans: $(grep '^| gdb' pressure-plan.md)"
echo "ok: full-machine table"

# Issue 25's targets (SYNTHETIC): gdb's plan is clearly faster than slurp
# (0.50 s against 1.00 s) with 1.05x off's page cache and half full's
# requests; python3's plan is clearly slower (1.50 s) with 1.20x off's cache.
"$PYTHON" - <<'EOF2' || fail "cannot write the targets CSV"
import csv
with open("targets.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["workload", "condition", "run", "disk", "read_requests", "read_bytes",
                "major_faults", "cache_growth_kb", "wall_s", "output_ok"])
    cells = {("gdb", "off"): (400, 1000, 2.0), ("gdb", "slurp"): (300, 5000, 1.0),
             ("gdb", "full"): (300, 1000, 1.4), ("gdb", "plan"): (150, 1050, 0.5),
             ("python3", "off"): (100, 1000, 1.0), ("python3", "slurp"): (80, 3000, 0.5),
             ("python3", "full"): (60, 1000, 0.8), ("python3", "plan"): (50, 1200, 1.5)}
    for (wl, cond), (reqs, cache, wall) in cells.items():
        for run, d in enumerate((-0.02, -0.01, 0, 0.01, 0.02, 0.03), start=1):
            w.writerow([wl, cond, run, "ebs", reqs, 2**20, 1, cache, wall + d, 1])
EOF2
"$PYTHON" "$REPORT" targets.csv -o targets.md 2>err || fail "report.py on targets.csv: $(cat err)"
sed -n '/^### Issue 25/,/^###  *Beside/p' targets.md
grep -qE '^\| gdb +\| +1\.0[01] / 0\.5[01] +\| +-0\.500 \(<= -0\.4[0-9]+\) +\| +-4[0-9]\.[0-9]% PASS +\| +1\.05x PASS +\| +2\.00x PASS +\|$' targets.md ||
	fail "gdb's targets row: $(grep -E '^\| gdb +\| +[0-9.]+ /' targets.md)"
grep -qE '^\| python3 +\| +0\.5[01] / 1\.5[01] +\| +\+1\.000 \(<= \+1\.0[0-9]+\) +\| +\+[0-9.]+% FAIL +\| +1\.20x FAIL +\| +1\.20x +\|$' targets.md ||
	fail "python3's targets row: $(grep -E '^\| python3 +\| +[0-9.]+ /' targets.md)"
"$PYTHON" "$REPORT" synthetic.csv | grep -q "Issue 25's targets" && fail "a targets section without plan runs"
echo "ok: targets table"

# Issue 25's target on the unthrottled disk (SYNTHETIC, 40 runs each: 80 in
# all, beyond stats.py's exact limit of 64, so the normal approximation): gdb's
# plan 0.4 s faster than off, python3's 0.2 s slower; rows of another disk
# are not in that table.
"$PYTHON" - <<'EOF2' || fail "cannot write the unthrottled CSV"
import csv
with open("unthrottled.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["workload", "condition", "run", "disk", "read_requests", "read_bytes",
                "major_faults", "cache_growth_kb", "wall_s", "output_ok"])
    for wl, cond, disk, wall in (("gdb", "off", "none", 2.0), ("gdb", "plan", "none", 1.6),
                                 ("python3", "off", "none", 1.0), ("python3", "plan", "none", 1.2),
                                 ("emacs", "off", "ebs", 1.0), ("emacs", "plan", "ebs", 9.0)):
        for run in range(40):
            w.writerow([wl, cond, run + 1, disk, 100, 2**20, 1, 1000, wall + (run - 19.5) / 100, 1])
EOF2
"$PYTHON" "$REPORT" unthrottled.csv -o unthrottled.md 2>err || fail "report.py on unthrottled.csv: $(cat err)"
sed -n '/^### Issue 25.s target on the unthrottled/,/^### \(Issue 46\|Beside\)/p' unthrottled.md
grep -qE '^\| gdb +\| +40 / 40 +\| +2\.00 / 1\.60 +\| +-0\.400 \(<= -0\.3[0-9]+, normal approx\.\) +\| +-1[0-9]\.[0-9]% PASS +\|$' unthrottled.md ||
	fail "gdb's unthrottled row: $(grep -E '^\| gdb +\| +40' unthrottled.md)"
grep -qE '^\| python3 +\| +40 / 40 +\| +1\.00 / 1\.20 +\| +\+0\.200 \(<= \+0\.2[0-9]+, normal approx\.\) +\| +\+2[0-9]\.[0-9]% FAIL +\|$' unthrottled.md ||
	fail "python3's unthrottled row: $(grep -E '^\| python3 +\| +40' unthrottled.md)"
sed -n '/^### Issue 25.s target on the unthrottled/,/^### \(Issue 46\|Beside\)/p' unthrottled.md | grep -q '^| emacs' &&
	fail "the unthrottled table has a row of disk ebs"
grep -q '^6 of the 6 comparisons have samples too large for the exact distribution' unthrottled.md ||
	fail "the normal approximation not said: $(grep -i 'approximation' unthrottled.md)"
grep -q 'unthrottled disk' targets.md && fail "an unthrottled section without runs on disk none"
grep -q 'too large for the exact' targets.md && fail "6 runs against 6 said to be approximated"
echo "ok: unthrottled table"

# The wait attribution table (SYNTHETIC waits.csv): coverage = 1 - misses /
# pages used, the target marked for gdb and emacs under plan; a missing
# column is refused and nothing written.
{
	echo "workload,condition,run,disk,used_pages,misses,inflight_faults,cached_faults,wait_fault_miss_ms,wait_fault_inflight_ms,wait_pbitmap_record_ms,wait_pbitmap_plan_ms,wait_read_ms,wait_exec_ms,wait_mmap_ms,wait_open_ms,wait_stat_ms,wait_other_ms,sleep_ms,stap_wall_ms,skipped_probes,output_ok,miss_files"
	echo "gdb,off,0,ebs,1000,400,30,5,2000.4,100,0,0,10,50,0,5,6,1,0,3000,0,true,libLLVM.so:200 gdb:100"
	echo "gdb,plan,0,ebs,1000,20,300,5,100,800,40,30,10,50,0,5,6,1,0,2000,0,true,gdb:20"
	echo "emacs,plan,0,ebs,1000,100,300,5,100,800,40,30,10,50,0,5,6,1,0,2000,3,true,emacs:100"
} >waits.csv
"$PYTHON" "$REPORT" targets.csv --waits-csv waits.csv -o waits.md 2>err || fail "report.py --waits-csv: $(cat err)"
sed -n '/^### Where the cold starts wait/,/^### Beside/p' waits.md
grep -qE '^\| gdb +\| off +\| +1000 +\| +400 +\| +60\.0% +\| +30 +\| +2000 +\| +100 +\| +0 +\| +0 +\| +10 +\| +50 +\| +0 +\| +11 +\| +1 +\| +libLLVM.so:200 gdb:100 +\|$' waits.md ||
	fail "gdb off's waits row: $(grep '^| gdb *| off' waits.md)"
grep -qE '^\| gdb +\| plan +\| +1000 +\| +20 +\| +98\.0% PASS ' waits.md || fail "gdb plan's coverage: $(grep '^| gdb *| plan' waits.md)"
grep -qE '^\| emacs +\| plan +\| +1000 +\| +100 +\| +90\.0% FAIL ' waits.md || fail "emacs plan's coverage: $(grep '^| emacs *| plan' waits.md)"
grep -q 'skipped probes in emacs/plan/ebs (3)' waits.md || fail "skipped probes not reported"
cut -d, -f1-5 waits.csv >short.csv
cp waits.md before.md
"$PYTHON" "$REPORT" targets.csv --waits-csv short.csv -o waits.md 2>err && fail "a waits CSV without its columns was accepted"
grep -q 'short.csv: missing column(s): misses, inflight_faults' err || fail "unclear error: $(cat err)"
cmp -s waits.md before.md || fail "a refused waits CSV changed the output"
grep -q 'read requests on the bench disk' waits.md && fail "a requests table without requests columns"
# With the requests by cause (waits.stp's requests lines): grouped, the
# traced tasks' other calls summed, what was merged after taken off.
{
	head -n 1 waits.csv | sed 's/$/,disk_read_requests,read_requests_by_cause/'
	sed -n 2p waits.csv | sed 's/$/,118,pbitmap-plan:90 fault:20 open:3 stat:2 readlink:1 syscall-5:2 other-tasks:1 merged:1/'
	sed -n 3p waits.csv | sed 's/$/,0,merged:0/'
} >waits-req.csv
"$PYTHON" "$REPORT" targets.csv --waits-csv waits-req.csv -o waits-req.md 2>err || fail "report.py with requests: $(cat err)"
sed -n '/read requests on the bench disk/,/^$/p;/^| workload *| condition *| disk.s count/,/^$/p' waits-req.md
grep -qE '^\| gdb +\| off +\| +118 +\| +118 +\| +90 +\| +0 +\| +20 +\| +0 +\| +0 +\| +0 +\| +5 +\| +3 +\| +1 +\| +1 +\|$' waits-req.md ||
	fail "gdb off's requests row: $(grep -E '^\| gdb +\| off +\| +118' waits-req.md)"
grep -qE '^\| gdb +\| plan +\| +0 +\| +0( +\| +0){10} +\|$' waits-req.md ||
	fail "gdb plan's requests row: $(grep -E '^\| gdb +\| plan +\| +0' waits-req.md)"
for bad in 'fault:x merged:0' 'fault:1' 'fault:1 fault:2 merged:0' ':3 merged:0'; do
	{ head -n 1 waits-req.csv; sed -n 2p waits.csv | sed "s/\$/,5,$bad/"; } >bad-req.csv
	"$PYTHON" "$REPORT" targets.csv --waits-csv bad-req.csv -o waits-req.md 2>err &&
		fail "read_requests_by_cause '$bad' was accepted"
	grep -q 'bad-req.csv: line 2: read_requests_by_cause' err || fail "unclear error for '$bad': $(cat err)"
done
echo "ok: waits table"

# The warm-exec table: SYNTHETIC loops, with the traced columns
# (bench-job.sh's exec_traced()) and without (CSVs written before them).
cat >exec.csv <<'CSV'
pbitmap,program,repeat,execs,us_per_exec,first_insn_us,daemon_cpu_us
off,stamped,1,1000,900.0,400,0
off,stamped,2,1000,920.0,420,0
daemon,stamped,1,1000,990.0,440,7000
daemon,stamped,2,1000,1010.0,460,9000
off,unstamped,1,1000,880.0,380,0
daemon,unstamped,1,1000,880.0,399,500
CSV
"$PYTHON" "$REPORT" synthetic.csv --exec-csv exec.csv -o exec.md 2>err || fail "report.py --exec-csv: $(cat err)"
sed -n '/^### Warm exec/,/^$/p;/^| *program *| pbitmap/,/^$/p' exec.md
grep -qE '^\| +stamped +\| +daemon +\| +2 +\| +1000 \[995, 1005\] +\| +1\.10x +\| +450 +\| +1\.10x +\| +8000 +\|$' exec.md ||
	fail "stamped daemon's warm-exec row: $(grep -E '^\| +stamped +\| +daemon' exec.md)"
grep -qE '^\| +unstamped +\| +daemon +\| +1 +\| +880 \[880, 880\] +\| +1\.00x +\| +399 +\| +1\.05x +\| +500 +\|$' exec.md ||
	fail "unstamped daemon's warm-exec row: $(grep -E '^\| +unstamped +\| +daemon' exec.md)"
cut -d, -f1-5 exec.csv >exec-old.csv
"$PYTHON" "$REPORT" synthetic.csv --exec-csv exec-old.csv -o exec-old.md 2>err || fail "report.py, an exec CSV without traced columns: $(cat err)"
grep -q 'first instruction' exec-old.md && fail "traced columns in a table of a CSV without them"
grep -qE '^\| +stamped +\| +daemon +\| +2 +\| +1000 \[995, 1005\] +\| +1\.10x +\|$' exec-old.md ||
	fail "stamped daemon's row without traced columns: $(grep -E '^\| +stamped +\| +daemon' exec-old.md)"
sed 's/^daemon,unstamped,1,1000,880.0,399,500$/daemon,unstamped,1,1000,880.0,x,500/' exec.csv >exec-bad.csv
"$PYTHON" "$REPORT" synthetic.csv --exec-csv exec-bad.csv -o exec-bad.md 2>err && fail "first_insn_us 'x' was accepted"
grep -q 'exec-bad.csv: line 7' err || fail "unclear error for first_insn_us 'x': $(cat err)"
echo "ok: warm-exec table"

# A fixed join gap of pbitmapd's (daemon-gapN) gets its row in the table of
# the daemon's bound against off, with its page cache against off's; a name
# that is not daemon-gap and digits does not.  gap2.csv: the same with
# `daemon` beside them (below).
"$PYTHON" - <<'PY' || fail "cannot write the gap CSVs"
from synth import add, write
add("python3", "off", [80, 82, 84, 86, 88], [0.60, 0.70, 0.65, 0.62, 0.68], 4096, "")
add("python3", "daemon-gap512", [40, 41, 42, 43, 44], [0.30, 0.31, 0.32, 0.33, 0.34], 10240, "")
add("python3", "daemon-gapx", [40, 41, 42, 43, 44], [0.30, 0.31, 0.32, 0.33, 0.34], 10240, "")
write("gap.csv")
add("python3", "daemon", [50, 51, 52, 53, 54], [0.40, 0.41, 0.42, 0.43, 0.44], 8192, "")
write("gap2.csv")
PY
"$PYTHON" "$REPORT" gap.csv -o gap.md 2>err || fail "report.py gap.csv: $(cat err)"
row=$(sed -n '/^### pbitmapd against the kernel it runs on/,/^### /p' gap.md | grep -E '^\| +python3 +\| +daemon-gap512 ')
[[ $row =~ \|\ +84\ /\ 42\ +\|\ +0\.50x\ .*\|\ +2\.50x\ +\|.*PASS\ +\|$ ]] ||
	fail "daemon-gap512's bound row (requests 84 / 42, 0.50x; page cache 2.50x off's): '$row'"
sed -n '/^### pbitmapd against the kernel it runs on/,/^### /p' gap.md | grep -q 'daemon-gapx' &&
	fail "daemon-gapx has a bound row"
# Bonferroni within a condition's rows: `daemon` run beside it leaves
# daemon-gap512's bound as it was (over two rows it would be wider).
"$PYTHON" "$REPORT" gap2.csv -o gap2.md 2>err || fail "report.py gap2.csv: $(cat err)"
row2=$(sed -n '/^### pbitmapd against the kernel it runs on/,/^### /p' gap2.md | grep -E '^\| +python3 +\| +daemon-gap512 ')
[ "$(tr -s ' ' <<<"$row2")" = "$(tr -s ' ' <<<"$row")" ] ||
	fail "daemon-gap512's row changed with daemon beside it: '$row' against '$row2'"
echo "ok: a daemon-gapN condition's bound against off"

# Issue 46's targets (SYNTHETIC, 6 runs each): gdb's plan-probed on iops150
# is faster than off, full and slurp after a drop; on a full machine faster
# than pressure-off but 20% slower than pressure (its full); 2.00x the
# physical floor; coverage 94.0% from waits.csv.  On the unthrottled disk
# slurp is no target ("-") even where it ran.  A CSV with neither plan nor
# plan-probed has no such section.
"$PYTHON" - <<'EOF2' || fail "cannot write the order CSV"
import csv
with open("order.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["workload", "condition", "run", "disk", "read_requests", "read_bytes",
                "major_faults", "cache_growth_kb", "wall_s", "physical_floor_requests", "output_ok"])
    cells = {("iops150", "off"): (400, 2.0), ("iops150", "full"): (300, 1.4),
             ("iops150", "slurp"): (300, 1.0), ("iops150", "plan-probed"): (200, 0.5),
             ("iops150", "pressure-off"): (400, 3.0), ("iops150", "pressure"): (300, 1.0),
             ("iops150", "pressure-plan-probed"): (200, 1.2),
             ("none", "off"): (400, 1.0), ("none", "slurp"): (300, 0.5),
             ("none", "plan-probed"): (200, 0.9)}
    for (disk, cond), (reqs, wall) in cells.items():
        for run, d in enumerate((-0.02, -0.01, 0, 0.01, 0.02, 0.03), start=1):
            w.writerow(["gdb", cond, run, disk, reqs, 2**20, 1, 1000, wall + d, 100, 1])
EOF2
{
	head -n 1 waits.csv
	echo "gdb,plan-probed,0,iops150,1000,60,300,5,100,800,40,30,10,50,0,5,6,1,0,2000,0,true,gdb:60"
} >order-waits.csv
"$PYTHON" "$REPORT" order.csv --waits-csv order-waits.csv -o order.md 2>err || fail "report.py on order.csv: $(cat err)"
sed -n "/^### Issue 46's targets/,/^### [^I]/p" order.md
section=$(sed -n "/^### Issue 46's targets/,/^### [^I]/p" order.md)
grep -qE '^\| gdb +\| plan-probed +\| +6 +\| +2\.00 / 1\.40 / 1\.00 / 0\.5[01] +\| +-[0-9.]+% PASS +\| +-[0-9.]+% PASS +\| +-[0-9.]+% PASS +\| +2\.00x PASS +\| +94\.0% FAIL +\|$' <<<"$section" ||
	fail "gdb's row after a drop: $(grep -E '^\| gdb +\| plan-probed' <<<"$section")"
grep -qE '^\| gdb +\| pressure-plan-probed +\| +6 +\| +3\.00 / 1\.00 / - / 1\.2[01] +\| +-[0-9.]+% PASS +\| +\+2[0-9]\.[0-9]% FAIL +\| +- +\| +2\.00x PASS +\| +- +\|$' <<<"$section" ||
	fail "gdb's row on a full machine: $(grep -E '^\| gdb +\| pressure-plan-probed' <<<"$section")"
grep -qE '^\| gdb +\| plan-probed +\| +6 +\| +1\.00 / - / - / 0\.9[01] +\| +-[0-9.]+% PASS +\| +- +\| +- +\|' <<<"$(sed -n '/^none:/,$p' <<<"$section")" ||
	fail "gdb's row on the unthrottled disk (no slurp target): $(sed -n '/^none:/,$p' <<<"$section" | grep -E '^\| gdb')"
"$PYTHON" "$REPORT" synthetic.csv | grep -q "Issue 46's targets" && fail "an issue 46 section without plan runs"
echo "ok: issue 46's targets"

# The workload's CPU seconds (user_s, sys_s): two columns of medians where
# every run of the disk has them; none in a CSV without them.
"$PYTHON" - <<'EOF2' || fail "cannot write cpu.csv"
import csv
with open("cpu.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["workload", "condition", "run", "disk", "read_requests", "read_bytes",
                "major_faults", "cache_growth_kb", "wall_s", "output_ok", "user_s", "sys_s"])
    for run, (u, s) in enumerate(((0.20, 0.05), (0.30, 0.07), (0.25, 0.06)), start=1):
        w.writerow(["python3", "off", run, "none", 100, 2**20, 1, 1000, 0.5, 1, u, s])
        w.writerow(["python3", "plan", run, "none", 50, 2**20, 1, 1000, 0.6, 1, u, s + 0.04])
EOF2
"$PYTHON" "$REPORT" cpu.csv -o cpu.md 2>err || fail "report.py on cpu.csv: $(cat err)"
grep -qE '^\| workload +\|.*\| user s +\| sys s +\|' cpu.md || fail "no CPU columns: $(grep '| workload' cpu.md | head -1)"
grep -qE '^\| python3 +\| plan +\|.*\| +0\.250 +\| +0\.100 +\|$' cpu.md ||
	fail "plan's CPU medians: $(grep -E '^\| python3 +\| plan ' cpu.md | head -1)"
grep -q '| user s' table.md && fail "CPU columns in a table whose CSV has none"
echo "ok: CPU seconds"
