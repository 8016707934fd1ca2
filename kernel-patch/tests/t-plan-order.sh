#!/bin/bash
# Guest test: a learned start-up plan keeps the order in which start-up
# first touched its ranges, across files and within them, the
# executable's own among them, and the batch at exec goes out in that
# order (Documentation/mm/pbitmap.rst, "Start-up plans").
#
# Built in the guest: libone.so and libtwo.so, 2 MiB of read-only data
# each, and prog, linked with both, with 1 MiB of data of its own (above
# the readahead window: exec looks its record up), whose main() touches
# one page of libtwo's data, then one of its own, then one of libone's,
# then another of libtwo's, then another of libone's: the order of the
# mappings (prog, libone, libtwo) is not the order of the touches.  The touched pages lie 150
# pages apart or more, so that no gap the device's cost model pays for
# joins two of them into one run.  The three files are stamped and marked
# with the pages one cold run faults (ground_truth.py); prog gets an empty
# plan area, and one run with vm.pbitmap_learn=1 learns its plan.
#
# Asserted:
#   - the learned plan lists prog itself, libone.so and libtwo.so, and has
#     an order table (pbitmap show --json) in which the steps holding the
#     five pages come in the order main() touched them;
#   - the next cold start follows the plan (one plan run, its three files
#     opened, no plan rejected): the pbitmap_plan_read events put the
#     runs holding the five pages in that order; prog's own pages are
#     among the runs, and exec's mapping of prog prefetched nothing of its
#     own (no pbitmap_prefetch event for prog): it stood aside for the plan;
#   - the program's output is the same as without pbitmap;
#   - a stale order: prog replaced by a copy (a new inode, the record and
#     its plan copied along), so that the plan's entry for the executable
#     no longer matches: it is skipped (pbitmap_plan_skip_mismatch 1), the
#     copy's mapping prefetches its own pages (it no longer stands aside),
#     and the copy's cold starts make no more read requests than those of
#     a copy whose plan was cleared (medians of RUNS, default 3, order
#     rotated).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-plan-order
cold_need_ground_truth
cold_need_counters pbitmap_plan_exec pbitmap_plan_files pbitmap_plan_reject_order \
	pbitmap_plan_reject_header pbitmap_plan_reject_canonical
cold_missing
T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T" || fail "cannot mount tracefs"
for ev in pbitmap_plan_read pbitmap_prefetch; do
	[ -d "$T/events/pbitmap/$ev" ] || fail "the kernel has no $ev tracepoint"
done
trace_off() {
	echo 0 >"$T/events/pbitmap/pbitmap_plan_read/enable" 2>/dev/null
	echo 0 >"$T/events/pbitmap/pbitmap_prefetch/enable" 2>/dev/null
	return 0
}
trap 'trace_off; learn_reset; cold_reset; cd /; rm -rf "$W"' EXIT

for n in one two; do
	cat >"$n.c" <<EOF
__attribute__((aligned(4096))) const unsigned char blob_$n[2 << 20] = { 1 };
unsigned long touch_$n(unsigned long page)
{
	return ((const volatile unsigned char *)blob_$n)[page << 12];
}
EOF
	gcc -O1 -shared -fPIC -o "lib$n.so" "$n.c" || fail "cannot build lib$n.so"
done
cat >prog.c <<'EOF'
#include <stdio.h>
unsigned long touch_one(unsigned long page), touch_two(unsigned long page);
__attribute__((aligned(4096))) const unsigned char blob_prog[1 << 20] = { 1 };
int main(void)
{
	unsigned long s = touch_two(360);

	s += ((const volatile unsigned char *)blob_prog)[100 << 12];
	s += touch_one(150);
	s += touch_two(180);
	s += touch_one(300);
	printf("order %lu\n", s);
	return 0;
}
EOF
gcc -O1 -o prog prog.c -L"$W" -lone -ltwo -Wl,-rpath,"$W" || fail "cannot build prog"
rm -f ./*.c
./prog >want.out || fail "prog does not run"

# The file page of page P of blob_N, from the symbol's address and the
# PT_LOAD segment holding it.
file_page() {
	python3 - "$1" "blob_$2" "$3" <<'PY'
import subprocess, sys
lib, sym, page = sys.argv[1], sys.argv[2], int(sys.argv[3])
addr = None
for line in subprocess.run(["readelf", "-sW", lib], capture_output=True, text=True,
                           check=True).stdout.splitlines():
    f = line.split()
    if len(f) >= 8 and f[7] == sym:
        addr = int(f[1], 16)
for line in subprocess.run(["readelf", "-lW", lib], capture_output=True, text=True,
                           check=True).stdout.splitlines():
    f = line.split()
    if f and f[0] == "LOAD":
        off, va, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
        if va <= addr < va + filesz:
            print((addr - va + off) // 4096 + page)
            sys.exit(0)
sys.exit("%s: no segment holds %s" % (lib, sym))
PY
}
# The touches of main(), in order: file, page of the file.
touches=()
for t in two:360 prog:100 one:150 two:180 one:300; do
	n=${t%%:*} f=lib${t%%:*}.so
	[ "$n" != prog ] || f=prog
	p=$(file_page "$f" "$n" "${t##*:}") || fail "cannot find blob_$n in $f"
	touches+=("$W/$f:$p")
done
(($(stat -c %s prog) > $(cat /sys/block/vda/queue/read_ahead_kb) * 1024)) ||
	fail "prog is $(stat -c %s prog) bytes, not above the readahead window"
echo "touches, in order: ${touches[*]}"

printf '%s\n' "$W/prog" "$W/libone.so" "$W/libtwo.so" >order.files
pbitmap add -q libone.so libtwo.so || fail "cannot stamp the libraries"
pbitmap add -q --plan-size 16K prog || fail "cannot stamp prog with a plan area"
cold_learn order ./prog
sync

# Learn the plan from one cold run.
learn_one_run ./prog
pbitmap show --json prog >plan.json || fail "pbitmap show prog"
python3 - plan.json "$W/prog" "${touches[@]}" <<'PY' || fail "the learned plan: $(pbitmap show prog | sed -n '/plan/,$p')"
import json, sys
rec = json.load(open(sys.argv[1]))[0]
prog, touches = sys.argv[2], [t.rsplit(":", 1) for t in sys.argv[3:]]
plan = rec.get("plan")
if not plan:
    sys.exit("no plan learned")
paths = [f["path"] for f in plan["files"]]
for p in [prog] + sorted({t[0] for t in touches}):
    if p not in paths:
        sys.exit("the plan does not list %s: %s" % (p, paths))
order = plan.get("order")
if not order:
    sys.exit("the plan has no order table")
if sorted(order) != list(range(len(plan["steps"]))):
    sys.exit("the order table is no permutation of the %d steps" % len(plan["steps"]))
place = {s: i for i, s in enumerate(order)}
seen = []
for path, page in touches:
    f = paths.index(path)
    held = [i for i, (file, start, nr) in enumerate(plan["steps"])
            if file == f and start <= int(page) < start + nr]
    if len(held) != 1:
        sys.exit("%s page %s: in steps %s" % (path, page, held))
    seen.append(place[held[0]])
if seen != sorted(seen) or len(set(seen)) != len(seen):
    sys.exit("the touched pages' steps come at %s in the order table, not in touch order" % seen)
print("learned order: the touched pages' steps at positions %s of %d" % (seen, len(order)))
PY

# Follow it, tracing what the batch submits and what the mappings prefetch.
prog_ino=$(stat -c %i prog)
echo 8192 >"$T/buffer_size_kb"
echo >"$T/trace"
echo 1 >"$T/events/pbitmap/pbitmap_plan_read/enable"
echo 1 >"$T/events/pbitmap/pbitmap_prefetch/enable"
echo 1 >"$T/tracing_on"
p0=$(vmstat_counter pbitmap_plan_exec)
f0=$(vmstat_counter pbitmap_plan_files)
r0=$(($(vmstat_counter pbitmap_plan_reject_order) + $(vmstat_counter pbitmap_plan_reject_header) +
	$(vmstat_counter pbitmap_plan_reject_canonical)))
cold_run followed followed.out ./prog
trace_off
cp "$T/trace" followed.trace
cmp -s followed.out want.out || fail "the run following the plan: $(cat followed.out)"
[ "$(vmstat_delta pbitmap_plan_exec "$p0")" = 1 ] ||
	fail "plan_exec $(vmstat_delta pbitmap_plan_exec "$p0"), want 1"
[ "$(vmstat_delta pbitmap_plan_files "$f0")" -ge 3 ] ||
	fail "plan_files $(vmstat_delta pbitmap_plan_files "$f0"), want at least 3 (prog and its libraries)"
r1=$(($(vmstat_counter pbitmap_plan_reject_order) + $(vmstat_counter pbitmap_plan_reject_header) +
	$(vmstat_counter pbitmap_plan_reject_canonical)))
[ "$r1" = "$r0" ] || fail "a plan was rejected ($((r1 - r0)))"
python3 - followed.trace "$prog_ino" "${touches[@]}" <<'PY' || fail "the batch's order: $(grep -c pbitmap_plan_read followed.trace) runs"
import os, re, sys
lines = open(sys.argv[1]).read().splitlines()
prog_ino, touches = int(sys.argv[2]), [t.rsplit(":", 1) for t in sys.argv[3:]]
runs = [tuple(int(x) for x in m.groups()) for m in
        (re.search(r"pbitmap_plan_read: dev=\S+ ino=(\d+) start=(\d+) end=(\d+) rank=(\d+)", l)
         for l in lines) if m]
if not runs:
    sys.exit("no pbitmap_plan_read event")
if not any(r[0] == prog_ino for r in runs):
    sys.exit("the batch read none of prog's pages (ino %d): %s" % (prog_ino, runs))
own = [l for l in lines if "pbitmap_prefetch:" in l and " ino=%d " % prog_ino in l]
if own:
    sys.exit("exec's mapping of prog prefetched its pages itself: %s" % own)
at = []
for path, page in touches:
    ino, page = os.stat(path).st_ino, int(page)
    hit = [i for i, r in enumerate(runs) if r[0] == ino and r[1] <= page < r[2]]
    if len(hit) != 1:
        sys.exit("%s page %d: in runs %s of %s" % (path, page, hit, runs))
    at.append(hit[0])
if at != sorted(at) or len(set(at)) != len(at):
    sys.exit("the runs holding the touched pages went out as runs %s of %d, not in touch order"
             % (at, len(runs)))
ranks = [r[3] for r in runs]
if ranks != sorted(ranks):
    sys.exit("runs submitted out of rank order: %s" % ranks)
print("batch: %d runs in rank order, the touched pages' at %s, prog's own among them" % (len(runs), at))
PY
echo "ok: the learned plan keeps first-touch order, prog's pages among its steps; the batch follows it"

# A stale order: the executable's entry no longer matches.
cp --preserve=xattr prog prog.new && mv prog.new prog
cp --preserve=xattr prog prog-noplan
pbitmap plan --clear prog-noplan || fail "pbitmap plan --clear"
sync
stale_ino=$(stat -c %i prog)
for i in $(seq 1 "$RUNS"); do
	for c in $(cold_order "$i" stale noplan); do
		case $c in
		stale)
			s0=$(vmstat_counter pbitmap_plan_skip_mismatch)
			echo >"$T/trace"
			echo 1 >"$T/events/pbitmap/pbitmap_prefetch/enable"
			cold_run stale stale.out ./prog
			trace_off
			[ "$(vmstat_delta pbitmap_plan_skip_mismatch "$s0")" = 1 ] ||
				fail "stale plan: plan_skip_mismatch $(vmstat_delta pbitmap_plan_skip_mismatch "$s0"), want 1 (the executable's entry)"
			grep -q "pbitmap_prefetch: .* ino=$stale_ino " "$T/trace" ||
				fail "stale plan: the executable's mapping prefetched nothing of its own"
			;;
		noplan)	cold_run noplan noplan.out ./prog-noplan ;;
		esac
		cmp -s "$c.out" want.out || fail "$c run $i: $(cat "$c.out")"
	done
done
cold_medians
((med_stale_reqs <= med_noplan_reqs)) ||
	fail "a stale plan made $med_stale_reqs read requests, no plan $med_noplan_reqs"
echo "ok: a stale order ($med_stale_reqs read requests) costs no more than no plan ($med_noplan_reqs)"
cold_reset
echo "PASS: t-plan-order"
