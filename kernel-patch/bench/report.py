#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""report.py: the benchmark's tables and boxplots, drawn from its CSV alone.

  kernel-patch/bench/report.py RESULTS.csv [-o TABLE.md] [--plots DIR]
                               [--drop-bad-output] [--exec-csv EXEC.csv]
                               [--not-slower COND:DISK]

RESULTS.csv has one row per cold start, with the columns
  workload, condition, run, disk, read_requests, read_bytes, major_faults,
  cache_growth_kb, wall_s, output_ok
and optionally floor_requests (the fewest read requests that could bring in
the pages the run used, as the files lie on disk) and
physical_floor_requests (ceil of the bytes it used / 256 KiB), and
user_s and sys_s (the workload's CPU seconds, time(1)'s %U and %S); other
columns are ignored.  Nothing is re-run: a
figure can be re-drawn from the same CSV at any time, and the same CSV gives
the same table byte for byte.

TABLE.md (standard output without -o) holds, per disk model:
  - medians and inter-quartile ranges of every figure per (workload,
    condition), requests / floor and the physical floor when the CSV has
    them, and the cold / warm wall-time ratio when a `warm` condition
    exists;
  - every condition against `off`: ratio of medians, exact two-sided
    Wilcoxon rank-sum p-value (stats.py), its Holm-adjusted value and
    significance at stats.ALPHA, and the Hodges-Lehmann shift with its exact
    95% interval, for read requests and wall time;
and the 2008 comparison: time and memory change against `off`, laid out as
in Andi Kleen's 2008 talk, with the talk's figures beside ours; when the CSV
has `pressure` and `pressure-off`, a table of what pbitmap saves on a full
machine (pressure / pressure-off) beside what it saves after a drop
(full / off), and with `pressure-plan` the same for start-up plans
(pressure-plan / pressure-off beside plan / off); with `plan-probed` or
`plan`, issue 46's targets: the plan a user gets not slower than `off`,
`full` and `slurp` after a drop and than `pressure-off` and `pressure` on a
full machine, its requests over the physical floor and (--waits-csv) its
coverage.

--exec-csv EXEC.csv adds the warm-exec microbenchmark: rows of
  pbitmap (off|on|daemon), program (stamped|unstamped), repeat, execs,
  us_per_exec[, first_insn_us, daemon_cpu_us]
as median [q1, q3] microseconds per exec over the repeats, and on / off;
with the traced columns, also the median time from execve to the first
instruction and the daemon's CPU per exec.

--not-slower COND:DISK is the benchmark's own test: on disk model DISK, the
wall time of COND must not be longer than `off`'s beyond noise, for every
workload: the comparison is a failure when its Holm-adjusted p-value is
below stats.ALPHA and the Hodges-Lehmann shift is positive.  The verdict is
in the table; exit status 3 when it fails (everything is still written).

--plots DIR writes DIR/WORKLOAD.png per workload: one box per condition
(whiskers to the minimum and maximum, as seed 004's range=0, every run drawn
as a dot), wall time and read requests, one row per disk model; and
DIR/WORKLOAD-memory.png: wall time against page-cache growth, each
condition a point at its medians with interquartile bars, one panel per
disk model.

A run whose output_ok is false means the workload's output differed from
the reference: the report refuses such a CSV unless --drop-bad-output, which
leaves those runs out and lists them under the table.  Every output file is
written to a temporary name and renamed: never half-written.
"""
import argparse
import csv
import io
import math
import os
import sys
import tempfile
from collections import Counter, OrderedDict
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stats  # noqa: E402

PROG = "report"
BASELINE = "off"
WARM = "warm"
# Issue 12's conditions, in the order the tables list them; others follow in
# the order they first appear in the CSV.
CONDITION_ORDER = ("nora", "off", "slurp", "off-b", "slurp-b", "early", "exec", "full", "learned", "plan",
                   "plan-paced", "plan-probed", "plan-probed-nometa", "plan-probed-allmeta", "plan-probed-widemeta", "plan-probed-paced", "plan-probed-later", "plan-probed-meta", "plan-probed-dmeta", "plan-gap256", "user", "audit", "preload", "warm", "pressure-off", "pressure-off-cold", "pressure",
                   "pressure-plan", "pressure-plan-probed", "daemon", "daemon-nometa", "daemon-nometa-probed", "daemon-planleft-probed", "daemon-dataread-probed", "daemon-readall-probed", "pressure-daemon",
                   "daemon-b", "pressure-daemon-b", "daemon-probed", "pressure-daemon-probed",
                   "daemon-hold", "daemon-b-hold")
# A full machine (page cache full of another file, the workload's files
# evicted with fadvise): `pressure` is `full` there, `pressure-off` its `off`,
# `pressure-plan` is `plan` there.
PRESSURE = ("pressure", "pressure-off", "full")
PRESSURE_PLAN = ("pressure-plan", "plan")
# pbitmapd (issue 45): `daemon` after a drop, `pressure-daemon` on a full
# machine, on any kernel (its own learned tree), `daemon-b` and
# `pressure-daemon-b` in a boot of the series (the kernel's learned tree B,
# read from user space); its targets against that kernel's `off` (and, in a
# boot of the series, against `plan`): not slower (TARGET_SLOWER), and a cut
# in read requests at least TARGET_DAEMON_CUT of the kernel plan's.
DAEMON, PRESSURE_DAEMON = "daemon", "pressure-daemon"
# The warm-exec microbenchmark's states: nothing, the series' kernel
# prefetch (on), pbitmapd running (daemon).
EXEC_STATES = ("off", "on", "daemon")
# (daemon condition, its baseline, the series' plan in the same state)
DAEMON_PAIRS = ((DAEMON, BASELINE, "plan"), (PRESSURE_DAEMON, "pressure-off", "pressure-plan"),
                ("daemon-b", BASELINE, "plan"), ("pressure-daemon-b", "pressure-off", "pressure-plan"),
                ("daemon-nometa", BASELINE, "plan"), ("daemon-nometa-probed", BASELINE, "plan"),
                ("daemon-planleft-probed", BASELINE, "plan"),
                ("daemon-dataread-probed", BASELINE, "plan"),
                ("daemon-readall-probed", BASELINE, "plan"),
                ("daemon-probed", BASELINE, "plan"),
                ("pressure-daemon-probed", "pressure-off", "pressure-plan"),
                ("daemon-hold", BASELINE, "plan"), ("daemon-b-hold", BASELINE, "plan"))


def daemon_pairs(conditions) -> tuple:
    """DAEMON_PAIRS, and the bounds of the held execs and fixed join
    gaps the run has (daemon-holdN, daemon-b-holdN:
    PBITMAP_DAEMON_HOLD_EXEC_MS=N; daemon-gapN: PBITMAP_DAEMON_JOIN_GAP_KB=N)."""
    held = tuple((c, BASELINE, "plan") for c in conditions
                 if c.startswith(("daemon-hold", "daemon-b-hold"))
                 and c.rsplit("-hold", 1)[1].isdigit())
    gaps = tuple((c, BASELINE, "plan") for c in conditions
                 if c.startswith("daemon-gap") and c[len("daemon-gap"):].isdigit())
    return DAEMON_PAIRS + held + gaps
TARGET_DAEMON_CUT = 0.80
REQUIRED = ("workload", "condition", "run", "disk", "read_requests", "read_bytes",
            "major_faults", "cache_growth_kb", "wall_s", "output_ok")
FLOOR = "floor_requests"
PHYS_FLOOR = "physical_floor_requests"
# The workload's own CPU seconds (time(1)'s %U and %S; runs since
# 2026-12-01): exec's in-kernel work is the process's system time.
CPU_COLUMNS = ("user_s", "sys_s")


class Figure(NamedTuple):
    column: str
    label: str
    scale: float        # CSV unit -> shown unit
    decimals: int       # shown decimals (counts: 0, .5 shown as such)


FIGURES = (
    Figure("read_requests", "read req", 1, 0),
    Figure("read_bytes", "MiB read", 1 / 2**20, 1),
    Figure("major_faults", "maj flt", 1, 0),
    Figure("cache_growth_kb", "cache MiB", 1 / 1024, 1),
    Figure("wall_s", "wall s", 1, 2),
)
BY_COLUMN = {f.column: f for f in FIGURES}
# The figures tested against `off` (and plotted): what a reader decides on.
TESTED = ("read_requests", "wall_s")
NONNEGATIVE = ("read_requests", "read_bytes", "major_faults", "wall_s", FLOOR)

# Andi Kleen, "Predictive bitmaps: an experiment in speeding up Linux demand
# paging", 2008 (shared/seeds/001_ffa1689a76b5c3b7.txt, slides "mmap_slurp_all
# results" and "pbitmap results with early_fault").  Cold caches; mean [sd]
# per workload for the stock kernel (off), mmap_slurp_all=1 (our `slurp`) and
# pbitmap with early_fault (the synchronous 2008 design, our `early`).  The
# slides label the time "CPU" (seconds) and the memory "MEM" in "MB"
# (values such as 5787 are implausible as MB for gcc in 2008; the unit is
# kept as printed).  Changes are computed here from these means as
# (condition - off) / off; the slides print their own percentages
# (TALK_2008_PRINTED), some of which are relative to the new value or
# otherwise do not follow from the means (gdb pbitmap time "-0.05%" for
# 0.18 -> 0.17 s).
TALK_2008 = {
    "gcc": {"off": (1.57, 0.05, 5787, 143), "slurp": (1.42, 0.02, 6968, 130),
            "early": (1.46, 0.02, 6000, 87)},
    "emacs": {"off": (0.85, 0.05, 10834, 181), "slurp": (0.59, 0.05, 11968, 199),
              "early": (0.83, 0.01, 10875, 142)},
    "gdb": {"off": (0.18, 0.02, 2836, 130), "slurp": (0.12, 0.0, 4274, 86),
            "early": (0.17, 0.01, 2900, 181)},
}
TALK_2008_WORKLOAD = {"gcc": "gcc -O2 -S sched.i", "emacs": "emacs -batch", "gdb": "gdb -batch"}
TALK_2008_PRINTED = {
    ("gcc", "slurp"): ("-10%", "+17%"), ("gcc", "early"): ("-8%", "+3.5%"),
    ("emacs", "slurp"): ("-31%", "+10%"), ("emacs", "early"): ("-3.3%", "+1%"),
    ("gdb", "slurp"): ("none", "none"), ("gdb", "early"): ("-0.05%", "+2.2%"),
}


# Issue 25's targets for `plan`: not slower than `slurp` (the one-sided
# upper bound of the Hodges-Lehmann shift plan - slurp at most 5% of slurp's
# median), page cache at most 10% above `off`'s, and for the workloads named
# read requests at least 1.5x below `full`'s.
TARGET_SLOWER = 0.05
TARGET_CACHE = 1.10
TARGET_REQUESTS = 1.5
TARGET_REQUEST_WORKLOADS = ("gdb", "emacs")
# The disk without a throttle, where `plan` must not be slower than `off`.
UNTHROTTLED = "none"
# waits.csv (bench-job.sh, WAITS=1): one run per (workload, condition) under
# stap/waits.stp.
WAIT_COLUMNS = ("workload", "condition", "disk", "used_pages", "misses", "inflight_faults",
                "cached_faults", "wait_fault_miss_ms", "wait_fault_inflight_ms",
                "wait_pbitmap_record_ms", "wait_pbitmap_plan_ms", "wait_read_ms",
                "wait_exec_ms", "wait_mmap_ms", "wait_open_ms", "wait_stat_ms",
                "wait_other_ms", "skipped_probes", "output_ok", "miss_files")
TARGET_COVERAGE = 0.95
TARGET_COVERAGE_WORKLOADS = ("gdb", "emacs")
# Issue 46's targets for the plan a user gets: `plan-probed` (the join gap
# pbitmap-device-gap.service measures at boot) where the run has it, else
# `plan`; after a drop not slower than `off`, `full` and `slurp` (not run on
# the unthrottled disk), on a full machine not slower than `pressure-off`
# and `pressure` (`full` there); read requests at most TARGET_FLOOR x the
# physical floor for TARGET_REQUEST_WORKLOADS; coverage (waits.csv) at least
# TARGET_COVERAGE for every workload.
ORDER_STATES = (("plan-probed", "plan"), (("off", BASELINE), ("full", "full"), ("slurp", "slurp"))), \
    (("pressure-plan-probed", "pressure-plan"), (("off", "pressure-off"), ("full", "pressure")))
TARGET_FLOOR = 2.5


class CsvError(Exception):
    pass


def parse_bool(text: str, where: str) -> bool:
    t = text.strip().lower()
    if t in ("1", "true", "yes", "ok"):
        return True
    if t in ("0", "false", "no"):
        return False
    raise CsvError(f"{where}: output_ok must be 1/0, true/false or yes/no, not {text!r}")


def parse_number(text: str, column: str, where: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise CsvError(f"{where}: {column} is not a number: {text!r}") from None
    if not math.isfinite(v):
        raise CsvError(f"{where}: {column} is not finite: {text!r}")
    if column in NONNEGATIVE and v < 0:
        raise CsvError(f"{where}: {column} is negative: {text!r}")
    return v


def csv_rows(path: str, required) -> list:
    """(line number, row) of every data row of the CSV at `path`, which must
    have the `required` columns, each row all of them; CsvError (with the
    line number) otherwise.  Shared by the three CSVs the report reads."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or ())]
            if missing:
                raise CsvError(f"missing column(s): {', '.join(missing)}")
            rows = []
            for row in reader:
                if None in row or any(row[c] is None for c in required):
                    raise CsvError(f"line {reader.line_num}: wrong number of fields")
                rows.append((reader.line_num, row))
    except OSError as e:
        raise CsvError(e.strerror or str(e)) from None
    except csv.Error as e:
        raise CsvError(str(e)) from None
    return rows


def read_runs(path: str) -> list:
    """Every run as a dict; CsvError (with line number) on anything wrong."""
    runs, seen = [], {}
    for line, row in csv_rows(path, REQUIRED):
        where = f"line {line}"
        run = {c: row[c].strip() for c in ("workload", "condition", "run", "disk")}
        if not all(run.values()):
            raise CsvError(f"{where}: empty workload, condition, run or disk")
        for fig in FIGURES:
            run[fig.column] = parse_number(row[fig.column], fig.column, where)
        for col in (FLOOR, PHYS_FLOOR) + CPU_COLUMNS:
            value = (row.get(col) or "").strip()
            run[col] = parse_number(value, col, where) if value else None
        run["output_ok"] = parse_bool(row["output_ok"], where)
        run["line"] = line
        key = (run["disk"], run["workload"], run["condition"], run["run"])
        if key in seen:
            raise CsvError(f"{where}: run {run['run']} of {key[1]}/{key[2]} on disk "
                           f"{key[0]} already given on line {seen[key]}")
        seen[key] = line
        runs.append(run)
    if not runs:
        raise CsvError("no runs")
    return runs


def ordered(values, order=()) -> list:
    """Distinct values: those in `order` first, in its order, then the rest
    in order of first appearance."""
    seen = list(OrderedDict.fromkeys(values))
    return [v for v in order if v in seen] + [v for v in seen if v not in order]


# ---------------------------------------------------------------- formatting

def fmt(value: float, decimals: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if decimals == 0:           # counts: a median of two may end in .5
        return f"{value:.0f}" if value == round(value) else f"{value:.1f}"
    return f"{value:.{decimals}f}"


def fmt_p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def fmt_ratio(num: float, den: float) -> str:
    return f"{num / den:.2f}x" if den else "-"


def fmt_change(new: float, base: float) -> str:
    return f"{100 * (new - base) / base:+.1f}%" if base else "-"


def not_slower_cells(base: list, other: list, level: float) -> list:
    """Issue 25's wall-time target, `other` not slower than `base` by more
    than TARGET_SLOWER: the medians, the Hodges-Lehmann shift other - base
    with the upper end of its interval at `level` (two-sided; at 1 - 2 *
    alpha / k, a one-sided bound at 1 - alpha / k), and that end against
    TARGET_SLOWER of base's median, as table cells."""
    _, hi = stats.shift_interval(base, other, level=level)
    shift = stats.hodges_lehmann(base, other)
    median = stats.median_iqr(base).median
    approx = "" if stats.exact_feasible(len(base), len(other)) else ", normal approx."
    return [f"{fmt(median, 2)} / {fmt(stats.median_iqr(other).median, 2)}",
            f"{shift:+.3f} (<= {hi:+.3f}{approx})",
            f"{hi / median:+.1%} " + ("PASS" if hi <= TARGET_SLOWER * median else "FAIL")]


def cut_share(daemon: float, off: float, plan_off: float, plan: float) -> str:
    """pbitmapd's cut in read requests (1 - daemon / off) as a share of the
    kernel plan's (1 - plan / plan_off; the two pairs may come from
    different boots), with issue 45's verdict (at least TARGET_DAEMON_CUT),
    as a table cell; "-" where the plan cut nothing."""
    if not off or not plan_off or plan >= plan_off:
        return "-"
    cut, kcut = 1 - daemon / off, 1 - plan / plan_off
    return f"{cut / kcut:.2f} " + ("PASS" if cut >= TARGET_DAEMON_CUT * kcut else "FAIL")


def md_table(headers: list, rows: list) -> str:
    """A Markdown table padded so that it also reads as plain text: first
    columns (labels) left-aligned, the figures right-aligned."""
    labels = sum(1 for h in headers if h in ("workload", "condition", "kernel"))
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]

    def line(cells):
        out = [str(c).ljust(w) if i < labels else str(c).rjust(w)
               for i, (c, w) in enumerate(zip(cells, widths))]
        return "| " + " | ".join(out) + " |"
    rule = "|" + "|".join(("-" * (w + 2) if i < labels else "-" * (w + 1) + ":")
                          for i, w in enumerate(widths)) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in rows])


# ---------------------------------------------------------------- analysis

class Report:
    def __init__(self, runs: list, source: str, drop_bad: bool):
        self.source = source
        self.bad = [r for r in runs if not r["output_ok"]]
        if self.bad and not drop_bad:
            lines = ", ".join(str(r["line"]) for r in self.bad[:10])
            more = f" and {len(self.bad) - 10} more" if len(self.bad) > 10 else ""
            raise CsvError(f"{len(self.bad)} run(s) with output_ok false (line {lines}{more}): "
                           "the workload's output differed; fix the run or use --drop-bad-output")
        self.runs = [r for r in runs if r["output_ok"]]
        if not self.runs:
            raise CsvError("no run with output_ok true")
        self.disks = ordered(r["disk"] for r in self.runs)
        self.workloads = ordered(r["workload"] for r in self.runs)
        self.conditions = ordered((r["condition"] for r in self.runs), CONDITION_ORDER)
        self.cells = {}
        for r in self.runs:
            self.cells.setdefault((r["disk"], r["workload"], r["condition"]), []).append(r)
        self._compare()

    def values(self, disk, workload, condition, column) -> list:
        return [r[column] for r in self.cells.get((disk, workload, condition), ())]

    def summary(self, disk, workload, condition, column):
        v = self.values(disk, workload, condition, column)
        return stats.median_iqr(v) if v else None

    def present(self, disk, workload) -> list:
        return [c for c in self.conditions if (disk, workload, c) in self.cells]

    def _compare(self):
        """Every condition against off, for the tested figures.  Holm's
        adjustment runs within each (disk, workload) family: the question a
        table answers is which conditions change this workload on this
        disk, and a family that spanned the whole report would make a
        workload's verdict depend on how many others were run."""
        self.tests = OrderedDict()
        for disk in self.disks:
            for workload in self.workloads:
                if (disk, workload, BASELINE) not in self.cells:
                    continue
                family = []
                for cond in self.present(disk, workload):
                    if cond == BASELINE:
                        continue
                    for column in TESTED:
                        base = self.values(disk, workload, BASELINE, column)
                        other = self.values(disk, workload, cond, column)
                        t = self.tests[(disk, workload, cond, column)] = {
                            "test": stats.rank_sum_test(base, other),
                            "shift": stats.hodges_lehmann(base, other),
                            "interval": stats.shift_interval(base, other),
                        }
                        family.append(t)
                for t, adj in zip(family, stats.holm([t["test"].p for t in family])):
                    t["holm"] = adj
                    t["significant"] = adj < stats.ALPHA

    # ------------------------------------------------------------ tables

    def figures_table(self, disk) -> str:
        has_floor = any(r[FLOOR] is not None for r in self.runs if r["disk"] == disk)
        headers = ["workload", "condition", "runs"] + [f.label for f in FIGURES]
        has_phys = any(r[PHYS_FLOOR] is not None for r in self.runs if r["disk"] == disk)
        if has_floor:
            headers.append("req / floor")
        if has_phys:
            headers.append("physical floor")
        has_cpu = all(r[c] is not None for r in self.runs if r["disk"] == disk
                      for c in CPU_COLUMNS)
        if has_cpu:
            headers += ["user s", "sys s"]
        if WARM in self.conditions:
            headers.append("cold / warm")
        rows = []
        for workload in self.workloads:
            warm = self.summary(disk, workload, WARM, "wall_s")
            for cond in self.present(disk, workload):
                cell = self.cells[(disk, workload, cond)]
                row = [workload, cond, str(len(cell))]
                for fig in FIGURES:
                    s = self.summary(disk, workload, cond, fig.column)
                    row.append(f"{fmt(s.median * fig.scale, fig.decimals)} "
                               f"[{fmt(s.q1 * fig.scale, fig.decimals)}, "
                               f"{fmt(s.q3 * fig.scale, fig.decimals)}]")
                if has_floor:
                    ratios = [r["read_requests"] / r[FLOOR] for r in cell if r[FLOOR]]
                    row.append(f"{stats.median_iqr(ratios).median:.2f}" if ratios else "-")
                if has_phys:
                    pf = sorted({r[PHYS_FLOOR] for r in cell if r[PHYS_FLOOR] is not None})
                    row.append("/".join(fmt(v, 0) for v in pf) if pf else "-")
                if has_cpu:
                    for col in CPU_COLUMNS:
                        row.append(f"{stats.median_iqr([r[col] for r in cell]).median:.3f}")
                if WARM in self.conditions:
                    wall = self.summary(disk, workload, cond, "wall_s")
                    row.append(fmt_ratio(wall.median, warm.median) if warm else "-")
                rows.append(row)
        return md_table(headers, rows)

    def against_off_table(self, disk) -> str:
        headers = ["workload", "condition"]
        for column in TESTED:
            label = BY_COLUMN[column].label
            headers += [f"{label} x off", f"{label} p", f"{label} Holm p",
                        f"{label} shift [95% CI]"]
        rows = []
        for workload in self.workloads:
            for cond in self.present(disk, workload):
                if (disk, workload, cond, TESTED[0]) not in self.tests:
                    continue
                row = [workload, cond]
                for column in TESTED:
                    t = self.tests[(disk, workload, cond, column)]
                    fig = BY_COLUMN[column]
                    decimals = fig.decimals + 1 if fig.decimals else 0
                    base = self.summary(disk, workload, BASELINE, column).median
                    mine = self.summary(disk, workload, cond, column).median
                    lo, hi = t["interval"]
                    row += [fmt_ratio(mine, base), fmt_p(t["test"].p_value),
                            fmt_p(float(t["holm"])) + (" *" if t["significant"] else ""),
                            f"{fmt(t['shift'], decimals)} [{fmt(lo, decimals)}, {fmt(hi, decimals)}]"]
                rows.append(row)
        return md_table(headers, rows)

    def talk_2008_table(self, disk) -> str:
        headers = ["workload", "condition", "wall s", "time vs off", "cache MiB",
                   "memory vs off", "2008 time s", "2008 time vs off", "2008 MEM",
                   "2008 MEM vs off"]
        rows = []
        for workload in self.workloads:
            base_wall = self.summary(disk, workload, BASELINE, "wall_s")
            base_mem = self.summary(disk, workload, BASELINE, "cache_growth_kb")
            talk = TALK_2008.get(workload, {})
            for cond in self.present(disk, workload):
                wall = self.summary(disk, workload, cond, "wall_s").median
                mem = self.summary(disk, workload, cond, "cache_growth_kb").median
                row = [workload, cond, fmt(wall, 2),
                       fmt_change(wall, base_wall.median) if base_wall and cond != BASELINE else "",
                       fmt(mem / 1024, 1),
                       fmt_change(mem, base_mem.median) if base_mem and cond != BASELINE else ""]
                if cond in talk:
                    t_time, t_sd, t_mem, t_msd = talk[cond]
                    b_time, _, b_mem, _ = talk[BASELINE]
                    row += [f"{t_time:.2f} [sd {t_sd:.2f}]",
                            fmt_change(t_time, b_time) if cond != BASELINE else "",
                            f"{t_mem} [sd {t_msd}]",
                            fmt_change(t_mem, b_mem) if cond != BASELINE else ""]
                else:
                    row += ["", "", "", ""]
                rows.append(row)
        return md_table(headers, rows)

    def pressure_table(self, disk) -> str:
        """pressure / pressure-off beside full / off, and, when the run has
        them, pressure-plan / pressure-off beside plan / off: the prefetch's
        and the plan's gain on a full machine and after a drop, ratios of
        medians (a cell "-" when a condition is missing)."""
        on, off, dropped = PRESSURE
        plan_on, plan_dropped = PRESSURE_PLAN
        pairs = [(dropped, BASELINE), (on, off)]
        if any(plan_on in self.present(disk, w) for w in self.workloads):
            pairs += [(plan_dropped, BASELINE), (plan_on, off)]
        if any(PRESSURE_DAEMON in self.present(disk, w) for w in self.workloads):
            pairs += [(DAEMON, BASELINE), (PRESSURE_DAEMON, off)]
        columns = ("read_requests", "major_faults", "wall_s")
        headers = ["workload"]
        for column in columns:
            label = BY_COLUMN[column].label
            headers += [f"{label} {a} / {b}" for a, b in pairs]
        rows = []
        for workload in self.workloads:
            present = self.present(disk, workload)
            if off not in present or not {on, plan_on, PRESSURE_DAEMON} & set(present):
                continue
            row = [workload]
            for column in columns:
                for a, b in pairs:
                    sa, sb = (self.summary(disk, workload, c, column) for c in (a, b))
                    row.append(fmt_ratio(sa.median, sb.median) if sa and sb else "-")
            rows.append(row)
        return md_table(headers, rows) if rows else ""

    def not_slower(self, cond, disk) -> list:
        """(workload, passed, text) for every workload run under `cond` and
        `off` on `disk`: is `cond`'s wall time longer than off's beyond noise?"""
        verdicts = []
        for workload in self.workloads:
            t = self.tests.get((disk, workload, cond, "wall_s"))
            if t is None:
                continue
            lo, hi = t["interval"]
            slower = t["significant"] and t["shift"] > 0
            verdicts.append((workload, not slower,
                             f"{workload}: {cond} - off = {fmt(t['shift'], 3)} s "
                             f"[{fmt(lo, 3)}, {fmt(hi, 3)}], Holm p {fmt_p(float(t['holm']))}: "
                             + ("SLOWER beyond noise" if slower else "not slower beyond noise")))
        return verdicts

    def targets_table(self, disk) -> str:
        """Issue 25's targets for `plan` on `disk`, one row per workload run
        under plan, slurp, full and off.  The bound on plan - slurp is the
        upper end of the exact interval at level 1 - 2 * alpha / k (k the
        workloads in the table): a one-sided bound at 1 - alpha / k, the
        Bonferroni correction over the workloads, which Holm's step-down can
        only make less strict."""
        workloads = [w for w in self.workloads
                     if all((disk, w, c) in self.cells for c in ("plan", "slurp", "full", BASELINE))]
        if not workloads:
            return ""
        level = 1 - 2 * stats.ALPHA / len(workloads)
        rows = []
        for w in workloads:
            slurp = self.values(disk, w, "slurp", "wall_s")
            plan = self.values(disk, w, "plan", "wall_s")
            cache = self.summary(disk, w, "plan", "cache_growth_kb").median
            cache_off = self.summary(disk, w, BASELINE, "cache_growth_kb").median
            cache_ok = cache <= TARGET_CACHE * cache_off
            req_full = self.summary(disk, w, "full", "read_requests").median
            req_plan = self.summary(disk, w, "plan", "read_requests").median
            req_ratio = req_full / req_plan if req_plan else float("inf")
            req_cell = f"{req_ratio:.2f}x"
            if w in TARGET_REQUEST_WORKLOADS:
                req_cell += " PASS" if req_ratio >= TARGET_REQUESTS else " FAIL"
            rows.append([w] + not_slower_cells(slurp, plan, level) + [
                f"{cache / cache_off:.2f}x " + ("PASS" if cache_ok else "FAIL") if cache_off else "-",
                req_cell])
        return md_table(["workload", "wall s slurp / plan", "plan - slurp s (upper bound)",
                         f"bound / slurp (<= +{TARGET_SLOWER:.0%})",
                         f"cache plan / off (<= {TARGET_CACHE:.2f}x)",
                         f"req full / plan (>= {TARGET_REQUESTS}x for "
                         + ", ".join(TARGET_REQUEST_WORKLOADS) + ")"], rows)

    def daemon_table(self, disk) -> str:
        """pbitmapd against its kernel's `off` (and the kernel's `plan` when
        the same boot ran it), after a drop and, with `pressure-daemon`, on a
        full machine: medians of read requests and wall time, the request
        cut (1 - daemon / off) and, beside `plan`'s, its share of the
        kernel's (at least TARGET_DAEMON_CUT), the page cache it grew by
        against off's (what a wide join gap costs), and the wall-time bound
        of daemon - off as in targets_table(), Bonferroni over the rows of
        the same condition: each condition is its own question, and a trial
        condition run beside `daemon` (a fixed gap) must not widen its
        bounds."""
        rows_in = [(w, d, o, k) for d, o, k in daemon_pairs(self.conditions) for w in self.workloads
                   if (disk, w, d) in self.cells and (disk, w, o) in self.cells]
        if not rows_in:
            return ""
        per_condition = Counter(d for _, d, _, _ in rows_in)
        rows = []
        for w, d, o, k in rows_in:
            level = 1 - 2 * stats.ALPHA / per_condition[d]
            med = {c: self.summary(disk, w, c, "read_requests").median
                   for c in (d, o, k) if (disk, w, c) in self.cells}
            share = cut_share(med[d], med[o], med[o], med[k]) if k in med else "-"
            cache = [self.summary(disk, w, c, "cache_growth_kb").median for c in (d, o)]
            rows.append([w, d, f"{len(self.cells[(disk, w, d)])}",
                         " / ".join(fmt(med[c], 0) for c in (o, d, k) if c in med),
                         fmt_ratio(med[d], med[o]),
                         fmt_ratio(med[k], med[o]) if k in med else "-", share,
                         fmt_ratio(cache[0], cache[1])]
                        + not_slower_cells(self.values(disk, w, o, "wall_s"),
                                           self.values(disk, w, d, "wall_s"), level))
        return md_table(["workload", "condition", "runs", "read req off / daemon [/ plan]",
                         "req daemon / off", "req plan / off",
                         f"daemon's cut / plan's (>= {TARGET_DAEMON_CUT:.2f})",
                         "cache daemon / off", "wall s off / daemon", "daemon - off s (upper bound)",
                         f"bound / off (<= +{TARGET_SLOWER:.0%})"], rows)

    def unthrottled_table(self, disk=UNTHROTTLED) -> str:
        """Issue 25's target on the unthrottled disk: `plan` not slower than
        `off` by more than TARGET_SLOWER, one row per workload run under both.
        The same bound as targets_table(): the upper end of the interval at
        level 1 - 2 * alpha / k, k the workloads in the table."""
        workloads = [w for w in self.workloads
                     if all((disk, w, c) in self.cells for c in ("plan", BASELINE))]
        if not workloads:
            return ""
        level = 1 - 2 * stats.ALPHA / len(workloads)
        rows = []
        for w in workloads:
            off = self.values(disk, w, BASELINE, "wall_s")
            plan = self.values(disk, w, "plan", "wall_s")
            rows.append([w, f"{len(off)} / {len(plan)}"] + not_slower_cells(off, plan, level))
        return md_table(["workload", "runs off / plan", "wall s off / plan",
                         "plan - off s (upper bound)",
                         f"bound / off (<= +{TARGET_SLOWER:.0%})"], rows)

    def order_targets_table(self, disk, waits=None) -> str:
        """Issue 46's targets on `disk` (ORDER_STATES): one row per workload
        and state (after a drop, on a full machine) with a plan condition,
        the wall-time bound of plan - baseline against each baseline the
        run has (as in targets_table(): Bonferroni over the workloads, within
        each column of one state: each is its own question), requests over
        the physical floor and, from waits.csv, coverage."""
        rows_in = []
        for w in self.workloads:
            for plans, bases in ORDER_STATES:
                plan = next((c for c in plans if (disk, w, c) in self.cells), None)
                have = [(label, c) for label, c in bases if (disk, w, c) in self.cells
                        and not (c == "slurp" and disk == UNTHROTTLED)]
                if plan and have:
                    rows_in.append((w, plan, dict(have)))
        if not rows_in:
            return ""
        k = Counter((plan, label) for _, plan, have in rows_in for label in have)
        rows = []
        for w, plan, have in rows_in:
            wall = self.values(disk, w, plan, "wall_s")
            cells = [not_slower_cells(self.values(disk, w, have[label], "wall_s"), wall,
                                      1 - 2 * stats.ALPHA / k[plan, label])[2]
                     if label in have else "-" for label, _ in ORDER_STATES[0][1]]
            medians = " / ".join(fmt(self.summary(disk, w, have[label], "wall_s").median, 2)
                                 if label in have else "-" for label, _ in ORDER_STATES[0][1])
            ratios = [r["read_requests"] / r[PHYS_FLOOR] for r in self.cells[(disk, w, plan)]
                      if r[PHYS_FLOOR]]
            ratio = stats.median_iqr(ratios).median if ratios else None
            floor = f"{ratio:.2f}x" if ratios else "-"
            if ratios and w in TARGET_REQUEST_WORKLOADS:
                floor += " PASS" if ratio <= TARGET_FLOOR else " FAIL"
            cov = [coverage(r) for r in waits or ()
                   if (r["disk"], r["workload"], r["condition"]) == (disk, w, plan) and r["used_pages"]]
            cover = (f"{cov[0]:.1%} " + ("PASS" if cov[0] >= TARGET_COVERAGE else "FAIL")) if cov else "-"
            rows.append([w, plan, str(len(wall)), f"{medians} / {fmt(stats.median_iqr(wall).median, 2)}"]
                        + cells + [floor, cover])
        return md_table(["workload", "condition", "runs", "wall s off / full / slurp / plan"]
                        + [f"bound / {label} (<= +{TARGET_SLOWER:.0%})" for label, _ in ORDER_STATES[0][1]]
                        + [f"req / physical floor (<= {TARGET_FLOOR}x for "
                           + ", ".join(TARGET_REQUEST_WORKLOADS) + ")",
                           f"coverage (>= {TARGET_COVERAGE:.0%})"], rows)

    def markdown(self, exec_runs=None, not_slower=None, waits=None) -> str:
        out = io.StringIO()
        w = out.write
        ntests = len(self.tests)
        w(f"<!-- generated by kernel-patch/bench/report.py from {os.path.basename(self.source)}; "
          "edit the CSV or the generator, not this text -->\n\n")
        w(f"{len(self.runs)} cold starts: {len(self.workloads)} workload(s), "
          f"{len(self.conditions)} condition(s), {len(self.disks)} disk model(s).\n\n")
        w("Figures are medians over the runs with the inter-quartile range "
          "[q1, q3] (linear quartiles, as the boxplots draw them). Against "
          f"`{BASELINE}`: ratio of medians (condition / {BASELINE}); the exact "
          "two-sided Wilcoxon rank-sum p-value (the permutation distribution of "
          "the mid-rank sum, enumerated exactly, so exact with ties too); that "
          "p-value after Holm's step-down adjustment within its (disk, workload) "
          "family (read requests and wall time of every condition of the "
          f"workload on that disk; {ntests} comparisons in all), marked * when "
          f"below the significance level {stats.ALPHA}; the Hodges-Lehmann shift (median of the "
          f"condition - {BASELINE} differences) with its exact 95% interval "
          "(the shifts the exact test does not reject).\n")
        approx = sum(not t["test"].exact for t in self.tests.values())
        if approx:
            w(f"\n{approx} of the {ntests} comparisons have samples too large for the "
              "exact distribution (more than 64 runs in all): their p-values and "
              "intervals are the normal approximation's (stats.py: R's "
              "wilcox.test(exact=FALSE), and the exact interval's rank from the "
              "same approximation).\n")
        for disk in self.disks:
            w(f"\n### Disk: {disk}\n\n")
            w(self.figures_table(disk) + "\n")
            if any(k[0] == disk for k in self.tests):
                w(f"\nAgainst `{BASELINE}` ({disk}):\n\n")
                w(self.against_off_table(disk) + "\n")
        targets = [(disk, self.targets_table(disk)) for disk in self.disks]
        if any(t for _, t in targets):
            w("\n### Issue 25's targets: `plan` against `slurp`, `off` and `full`\n\n"
              "Wall time: medians of `slurp` and `plan`, the Hodges-Lehmann shift "
              "`plan` - `slurp` with the upper end of its exact interval at level "
              "1 - 2 alpha / k (one-sided, Bonferroni over the k workloads of the disk), "
              f"which must be at most +{TARGET_SLOWER:.0%} of `slurp`'s median; page-cache "
              f"growth of `plan` against `off` (medians, at most {TARGET_CACHE:.2f}x); read "
              f"requests of `full` over `plan` (medians, at least {TARGET_REQUESTS}x for "
              + " and ".join(TARGET_REQUEST_WORKLOADS) + ").\n")
            for disk, table in targets:
                if table:
                    w(f"\n{disk}:\n\n{table}\n")
        unthrottled = self.unthrottled_table()
        if unthrottled:
            w(f"\n### Issue 25's target on the unthrottled disk: `plan` not slower than "
              f"`{BASELINE}` by more than {TARGET_SLOWER:.0%}\n\n"
              f"Wall time on disk {UNTHROTTLED}: medians, the Hodges-Lehmann shift `plan` - "
              f"`{BASELINE}` with the upper end of its interval at level 1 - 2 alpha / k "
              "(one-sided, Bonferroni over the k workloads), which must be at most "
              f"+{TARGET_SLOWER:.0%} of `{BASELINE}`'s median. Whether the runs were enough "
              "to show it: `power.py` on the same CSV.\n\n" + unthrottled + "\n")
        order = [(disk, self.order_targets_table(disk, waits)) for disk in self.disks]
        if any(table for _, table in order):
            w("\n### Issue 46's targets: the plan a user gets against `off`, `full` and `slurp`\n\n"
              "The plan condition is `plan-probed` (the join gap the boot service measures) where "
              "the run has it, else `plan`; on a full machine `pressure-plan-probed` or "
              "`pressure-plan`, against `pressure-off` (its `off`) and `pressure` (its `full`). "
              "Wall time: medians, and for each baseline the upper end of the Hodges-Lehmann "
              "shift plan - baseline at level 1 - 2 alpha / k (one-sided, Bonferroni over the "
              f"k workloads of the column and state), at most +{TARGET_SLOWER:.0%} of the baseline's "
              f"median; `slurp` is no target on disk {UNTHROTTLED}. Read requests over the "
              "physical floor (ceil of the bytes used / 256 KiB; medians of the runs' ratios), at "
              f"most {TARGET_FLOOR}x for " + " and ".join(TARGET_REQUEST_WORKLOADS) + "; coverage "
              "from the run under `stap/waits.stp` (as in the waits table), at least "
              f"{TARGET_COVERAGE:.0%}.\n")
            for disk, table in order:
                if table:
                    w(f"\n{disk}:\n\n{table}\n")
        daemon = [(disk, self.daemon_table(disk)) for disk in self.disks]
        if any(table for _, table in daemon):
            w("\n### pbitmapd against the kernel it runs on\n\n"
              "`daemon` (`pressure-daemon` on a full machine) against the same boot's `off` "
              "(`pressure-off`): medians of read requests, the change, and in a boot of the "
              "series the kernel `plan`'s cut and the daemon's share of it (at least "
              f"{TARGET_DAEMON_CUT:.2f}); wall time: the Hodges-Lehmann shift daemon - off with "
              "the upper end of its interval at level 1 - 2 alpha / k (one-sided, Bonferroni "
              f"over the k rows of that condition), at most +{TARGET_SLOWER:.0%} of `off`'s median.\n")
            for disk, table in daemon:
                if table:
                    w(f"\n{disk}:\n\n{table}\n")
        if waits:
            w("\n### Where the cold starts wait (`stap/waits.stp`)\n\n" + waits_text(waits))
        w("\n### Beside the 2008 talk\n")
        w("\nTime and memory change against `off`, as in Andi Kleen's 2008 talk "
          "(\"Predictive bitmaps\", shared/seeds/001_*): ours are medians of wall "
          "time and page-cache growth; the talk's are means [sd] of cold runs "
          "of " + ", ".join(f"`{v}`" for v in TALK_2008_WORKLOAD.values()) +
          ", its \"pbitmap\" being pbitmap with early_fault (our `early`). The "
          "talk's changes are computed from its means; it prints " +
          "; ".join(f"{wl} {c} {t} / {m}" for (wl, c), (t, m) in TALK_2008_PRINTED.items()) +
          " (time / memory).\n")
        for disk in self.disks:
            w(f"\n{disk}:\n\n")
            w(self.talk_2008_table(disk) + "\n")
        pressure = [(disk, self.pressure_table(disk)) for disk in self.disks]
        if any(table for _, table in pressure):
            w("\n### A full machine: `pressure` against `pressure-off`\n\n"
              "The page cache full of another file's pages and the workload's files "
              "evicted with `POSIX_FADV_DONTNEED` instead of dropped: ratios of medians, "
              "pbitmap on / off there, beside the same after `drop_caches` "
              "(`full` / `off`); with `pressure-plan`, the start-up plans there "
              "(`pressure-plan` / `pressure-off`) beside `plan` / `off`.\n")
            for disk, table in pressure:
                if table:
                    w(f"\n{disk}, full machine:\n\n{table}\n")
        if not_slower:
            cond, disk = not_slower
            w(f"\n### The test: `{cond}` is not slower than `{BASELINE}` on disk {disk}\n\n")
            verdicts = self.not_slower(cond, disk)
            if not verdicts:
                w(f"No run of both `{cond}` and `{BASELINE}` on disk {disk}: nothing tested.\n")
            for _, passed, text in verdicts:
                w(f"- {'PASS' if passed else 'FAIL'}: {text}\n")
        if exec_runs:
            w("\n### Warm exec: what pbitmap costs an exec with everything cached\n\n")
            w(exec_table(exec_runs) + "\n")
        if self.bad:
            w(f"\nLeft out (--drop-bad-output): {len(self.bad)} run(s) whose output "
              "differed from the reference: " +
              ", ".join(f"{r['workload']}/{r['condition']}/{r['disk']} run {r['run']}"
                        for r in self.bad) + ".\n")
        return out.getvalue()

    # ------------------------------------------------------------ plots

    def plot(self, workload) -> bytes:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
        disks = [d for d in self.disks if self.present(d, workload)]
        width = max(6.0, 0.9 * max(len(self.present(d, workload)) for d in disks) + 2)
        fig, axes = plt.subplots(len(disks), len(TESTED), squeeze=False,
                                 figsize=(width * len(TESTED), 3.8 * len(disks)))
        jitter = np.random.default_rng(0)       # same CSV, same picture
        for row, disk in enumerate(disks):
            conds = self.present(disk, workload)
            for col, column in enumerate(TESTED):
                fig_ = BY_COLUMN[column]
                ax = axes[row][col]
                data = [np.asarray(self.values(disk, workload, c, column)) * fig_.scale
                        for c in conds]
                ax.boxplot(data, whis=(0, 100), showfliers=False, widths=0.6)
                ax.set_xticks(range(1, len(conds) + 1), conds)
                for i, d in enumerate(data, start=1):
                    ax.plot(i + jitter.uniform(-0.12, 0.12, d.size), d, "o",
                            markersize=3, alpha=0.6, color="tab:blue")
                if column == "read_requests":
                    # nora's thousands and warm's zero on one axis: linear
                    # up to 10, logarithmic above.
                    ax.set_yscale("symlog", linthresh=10)
                else:
                    # nora's tens of seconds would flatten every other box
                    # on a linear axis; wall times are never zero.
                    ax.set_yscale("log")
                ax.set_title(f"{workload}: {fig_.label} ({disk})")
                ax.set_ylabel(fig_.label)
                ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
        plt.close(fig)
        return buf.getvalue()

    def memory_points(self, disk, workload) -> list:
        """(condition, page-cache growth in MiB, wall time in s) per
        condition, each a stats.Summary (median and quartiles)."""
        out = []
        for cond in self.present(disk, workload):
            c = self.summary(disk, workload, cond, "cache_growth_kb")
            out.append((cond, stats.Summary(c.median / 1024, c.q1 / 1024, c.q3 / 1024),
                        self.summary(disk, workload, cond, "wall_s")))
        return out

    def plot_memory(self, workload) -> bytes:
        """Wall time against page-cache growth, one panel per disk model:
        each condition a point at its medians, its interquartile ranges as
        bars both ways.  The trade-off between reading more (slurp,
        preload) and reading what is needed is seen at a glance."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        disks = [d for d in self.disks if self.present(d, workload)]
        fig, axes = plt.subplots(1, len(disks), squeeze=False,
                                 figsize=(6.4 * len(disks), 4.8))
        for col, disk in enumerate(disks):
            ax = axes[0][col]
            for cond, cache, wall in self.memory_points(disk, workload):
                ax.errorbar(cache.median, wall.median,
                            xerr=[[cache.median - cache.q1], [cache.q3 - cache.median]],
                            yerr=[[wall.median - wall.q1], [wall.q3 - wall.median]],
                            fmt="o", capsize=3, markersize=4)
                ax.annotate(cond, (cache.median, wall.median), textcoords="offset points",
                            xytext=(4, 4), fontsize=8)
            ax.set_xlabel("page-cache growth, MiB (median, IQR)")
            ax.set_ylabel("wall time, s (median, IQR)")
            # nora's tens of seconds beside warm's fraction of one.
            ax.set_yscale("log")
            ax.set_title(f"{workload}: time against memory ({disk})")
            ax.grid(alpha=0.3)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
        plt.close(fig)
        return buf.getvalue()


EXEC_COLUMNS = ("pbitmap", "program", "repeat", "execs", "us_per_exec")


# Columns of the traced loops (bench-job.sh's exec_traced()), absent from
# CSVs written before them: the median time from execve's entry to the
# program's first instruction, and the daemon's CPU per exec.
EXEC_TRACED_COLUMNS = ("first_insn_us", "daemon_cpu_us")


def read_exec_runs(path: str) -> list:
    """The warm-exec microbenchmark's CSV: a list of (pbitmap, program, us,
    first_insn_us, daemon_cpu_us), the last two None in a CSV without them."""
    runs = []
    for line, row in csv_rows(path, EXEC_COLUMNS):
        where = f"line {line}"
        if row["pbitmap"] not in EXEC_STATES:
            raise CsvError(f"{where}: pbitmap is {row['pbitmap']!r}, not off, on or daemon")
        traced = [parse_number(row[c], c, where) if row.get(c) is not None else None
                  for c in EXEC_TRACED_COLUMNS]
        runs.append((row["pbitmap"], row["program"],
                     parse_number(row["us_per_exec"], "us_per_exec", where), *traced))
    if not runs:
        raise CsvError("no rows")
    return runs


def exec_table(runs: list) -> str:
    programs = ordered(r[1] for r in runs)
    traced = all(r[3] is not None for r in runs)
    rows = []
    for program in programs:
        base = first_base = None
        for state in EXEC_STATES:
            mine = [r for r in runs if r[0] == state and r[1] == program]
            if not mine:
                continue
            m = stats.median_iqr([r[2] for r in mine])
            base = m.median if state == "off" else base
            row = [program, state, str(len(mine)),
                   f"{m.median:.0f} [{m.q1:.0f}, {m.q3:.0f}]",
                   fmt_ratio(m.median, base) if state != "off" and base else ""]
            if traced:
                first = stats.median_iqr([r[3] for r in mine]).median
                first_base = first if state == "off" else first_base
                row += [f"{first:.0f}",
                        fmt_ratio(first, first_base) if state != "off" and first_base else "",
                        f"{stats.median_iqr([r[4] for r in mine]).median:.0f}"
                        if state == "daemon" else ""]
            rows.append(row)
    head = ["program", "pbitmap", "loops", "us per exec", "x off"]
    if traced:
        head += ["us execve to first instruction (traced)", "x off", "daemon CPU us per exec"]
    return md_table(head, rows)


def parse_by_cause(text: str, where: str) -> dict:
    """read_requests_by_cause: "cause:n ..." (waits.stp's requests, merged:n
    among them) as {cause: n}."""
    counts = {}
    for item in text.split():
        cause, sep, n = item.rpartition(":")
        if not sep or not cause or not n.isdigit() or cause in counts:
            raise CsvError(f"{where}: read_requests_by_cause: bad item {item!r}")
        counts[cause] = int(n)
    if "merged" not in counts:
        raise CsvError(f"{where}: read_requests_by_cause: no merged:N")
    return counts


# The requests table's columns: waits.stp's causes, grouped.
REQUEST_GROUPS = (("plan", ("pbitmap-plan",)), ("record", ("pbitmap-record",)),
                  ("fault", ("fault",)), ("read(2)", ("read",)), ("exec", ("exec",)),
                  ("mmap", ("mmap",)), ("open+stat", ("open", "stat")))


def requests_table(rows: list) -> str:
    """Read requests of the waits runs by cause, against the disk's count."""
    table = []
    named = {c for _, causes in REQUEST_GROUPS for c in causes} | {"other-tasks", "merged"}
    for r in rows:
        q = r["requests"]
        if q is None:
            continue
        counted = sum(n for c, n in q.items() if c != "merged") - q["merged"]
        table.append([r["workload"], r["condition"], f"{r['disk_read_requests']:.0f}", str(counted)]
                     + [str(sum(q.get(c, 0) for c in causes)) for _, causes in REQUEST_GROUPS]
                     + [str(sum(n for c, n in q.items() if c not in named)),
                        str(q.get("other-tasks", 0)), str(q["merged"])])
    if not table:
        return ""
    return md_table(["workload", "condition", "disk's count", "waits.stp's"]
                    + [name for name, _ in REQUEST_GROUPS]
                    + ["other calls", "other tasks", "merged after"], table)


def read_waits(path: str) -> list:
    """waits.csv: one dict per row, the numbers parsed."""
    rows = []
    for line, row in csv_rows(path, WAIT_COLUMNS):
        where = f"line {line}"
        r = dict(row)
        for c in WAIT_COLUMNS:
            if c in ("workload", "condition", "disk", "miss_files"):
                continue
            if c == "output_ok":
                r[c] = parse_bool(row[c], where)
            else:
                r[c] = parse_number(row[c], c, where)
        r["requests"] = None
        if row.get("read_requests_by_cause") is not None and row.get("disk_read_requests") is not None:
            r["disk_read_requests"] = parse_number(row["disk_read_requests"], "disk_read_requests", where)
            r["requests"] = parse_by_cause(row["read_requests_by_cause"], where)
        rows.append(r)
    if not rows:
        raise CsvError("no rows")
    return rows


def coverage(row: dict) -> float:
    """A waits.csv row's coverage: 1 - misses / pages used (pages used > 0)."""
    return 1 - row["misses"] / row["used_pages"]


def waits_text(rows: list) -> str:
    """The waits table of every disk: coverage, and the milliseconds a run
    spent blocked, by cause."""
    out = ["One cold run of each (workload, condition) under `stap/waits.stp`, after "
           "the timed runs (the probes cost time: these runs are not in the tables "
           "above), with only cpu0 online (since a879135; waits.csv files made before "
           "it are from two CPUs), so that no probe is skipped for a lock another "
           "vCPU holds while the host has stopped it. Coverage: 1 - misses / pages used, a miss being a first touch "
           "that found its page neither cached nor in flight (one `filemap_fault` "
           "that returned `VM_FAULT_MAJOR`), the pages used the workload's ground "
           "truth (demand paging without read-around). In flight: faults that found "
           "their page in the cache, not yet read, and waited. Then the time the run's "
           "tasks were blocked (uninterruptible), by what they were doing: a fault "
           "that missed, a fault on a page in flight, pbitmap's record read, "
           "pbitmap's plan at exec outside it (path lookups: metadata), read(2), "
           "the rest of exec, mmap, open and stat (their metadata), and anything "
           "else. Misses by file: the files with the most misses.\n"]
    skipped = [r for r in rows if r["skipped_probes"]]
    for disk in ordered(r["disk"] for r in rows):
        table = []
        for r in rows:
            if r["disk"] != disk:
                continue
            cov = coverage(r) if r["used_pages"] else float("nan")
            mark = ""
            if r["workload"] in TARGET_COVERAGE_WORKLOADS and r["condition"] == "plan":
                mark = " PASS" if cov >= TARGET_COVERAGE else " FAIL"
            ms = lambda c: f"{r[c]:.0f}"  # noqa: E731
            table.append([r["workload"], r["condition"], f"{r['used_pages']:.0f}",
                          f"{r['misses']:.0f}", f"{cov:.1%}{mark}", f"{r['inflight_faults']:.0f}",
                          ms("wait_fault_miss_ms"), ms("wait_fault_inflight_ms"),
                          ms("wait_pbitmap_record_ms"), ms("wait_pbitmap_plan_ms"),
                          ms("wait_read_ms"), ms("wait_exec_ms"), ms("wait_mmap_ms"),
                          f"{r['wait_open_ms'] + r['wait_stat_ms']:.0f}", ms("wait_other_ms"),
                          ("" if r["output_ok"] else "OUTPUT DIFFERED ")
                          + " ".join(r["miss_files"].split()[:4])])
        out.append(f"\n{disk} (coverage target for `plan`: at least {TARGET_COVERAGE:.0%} "
                   f"for {' and '.join(TARGET_COVERAGE_WORKLOADS)}):\n\n")
        out.append(md_table(["workload", "condition", "pages used", "misses", "coverage",
                             "in flight", "ms miss", "ms in flight", "ms record", "ms plan",
                             "ms read(2)", "ms exec", "ms mmap", "ms open+stat", "ms other",
                             "misses by file (pages)"], table) + "\n")
        requests = requests_table([r for r in rows if r["disk"] == disk])
        if requests:
            out.append(f"\n{disk}, read requests on the bench disk by what their submitter "
                       "was doing (`block:block_getrq`: the plan's batch, a record read, "
                       "a fault and the readahead it starts, read(2), ...; `merged after`: "
                       "requests merged into another once made, which the device never "
                       "saw), beside the disk's own count over the run "
                       "(`/sys/block/*/stat`):\n\n" + requests + "\n")
    if skipped:
        out.append("\nsystemtap skipped probes in " + ", ".join(
            f"{r['workload']}/{r['condition']}/{r['disk']} ({r['skipped_probes']:.0f})"
            for r in skipped) + ": those rows undercount.\n")
    return "".join(out)


def write_atomic(path: str, data: bytes):
    """Write to a temporary file beside `path`, sync, rename over it."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".report.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def safe_name(workload: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in workload)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="the benchmark's results CSV")
    ap.add_argument("-o", "--output", help="write the Markdown tables here (default: stdout)")
    ap.add_argument("--plots", metavar="DIR", help="write DIR/WORKLOAD.png boxplots")
    ap.add_argument("--drop-bad-output", action="store_true",
                    help="leave out runs with output_ok false instead of refusing the CSV")
    ap.add_argument("--exec-csv", metavar="EXEC.csv",
                    help="add the warm-exec microbenchmark's table")
    ap.add_argument("--waits-csv", metavar="WAITS.csv",
                    help="add the wait attribution table (bench-job.sh WAITS=1)")
    ap.add_argument("--not-slower", metavar="COND:DISK",
                    help="test that COND's wall time is not longer than off's on DISK")
    args = ap.parse_args(argv)
    not_slower = None
    if args.not_slower:
        if args.not_slower.count(":") != 1 or "" in args.not_slower.split(":"):
            ap.error(f"--not-slower {args.not_slower}: expected CONDITION:DISK")
        not_slower = tuple(args.not_slower.split(":"))
    try:
        report = Report(read_runs(args.csv), args.csv, args.drop_bad_output)
    except CsvError as e:
        print(f"{PROG}: {args.csv}: {e}", file=sys.stderr)
        return 1
    exec_runs = None
    if args.exec_csv:
        try:
            exec_runs = read_exec_runs(args.exec_csv)
        except CsvError as e:
            print(f"{PROG}: {args.exec_csv}: {e}", file=sys.stderr)
            return 1
    waits = None
    if args.waits_csv:
        try:
            waits = read_waits(args.waits_csv)
        except CsvError as e:
            print(f"{PROG}: {args.waits_csv}: {e}", file=sys.stderr)
            return 1
    # Everything is computed before anything is written.
    text = report.markdown(exec_runs, not_slower, waits)
    pictures = {}
    if args.plots:
        if not os.path.isdir(args.plots):
            print(f"{PROG}: {args.plots}: not a directory", file=sys.stderr)
            return 1
        for wl in report.workloads:
            base = os.path.join(args.plots, safe_name(wl))
            pictures[base + ".png"] = report.plot(wl)
            pictures[base + "-memory.png"] = report.plot_memory(wl)
    try:
        if args.output:
            write_atomic(args.output, text.encode())
        for path, data in pictures.items():
            write_atomic(path, data)
    except OSError as e:
        print(f"{PROG}: {e.filename or args.output}: {e.strerror}", file=sys.stderr)
        return 1
    if not args.output:
        sys.stdout.write(text)
    if not_slower:
        failed = [t for _, passed, t in report.not_slower(*not_slower) if not passed]
        for text in failed:
            print(f"{PROG}: FAIL: {text}", file=sys.stderr)
        if failed:
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
