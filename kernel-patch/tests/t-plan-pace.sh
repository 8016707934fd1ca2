#!/bin/bash
# Guest test: a start-up plan's batch can be paced (Documentation/mm/
# pbitmap.rst, "Start-up plans"): with vm.pbitmap_plan_inflight_kb=-1 (the
# bound from the device's cost model) exec submits only what fits in
# flight, a worker submits the rest as the device serves it, in the plan's
# order, and stops when the program is gone; by default (0) the batch is
# submitted whole at exec.
#
# Built in the guest: libbig.so, 16 MiB of read-only data, and prog, which
# touches 100 of its pages, 40 pages apart (wider than any gap the guest
# disk's cost model joins), from the last to the first: 100 runs, in an
# order that is not the file's.  Stamped and marked with the pages one
# cold run faults; prog gets a plan area and one learning run its plan.
#
# Asserted (the first two with vm.pbitmap_plan_inflight_kb=-1):
#   - a cold start following the plan is paced (pbitmap_plan_paced 1): exec
#     itself submits at least one run and fewer than all, at most
#     PBITMAP_INFLIGHT_SLOTS (16); a kworker submits every other run; all
#     runs go out in rank order; the pbitmap_plan_paced event says every
#     run was submitted and nothing stopped it; the output is right;
#   - a cold start killed (SIGKILL) once its exec handed the batch to the
#     worker: given an argument, prog kills itself half-way, once it has
#     touched 50 of its pages, when the worker has submitted some runs and
#     can be at most what it keeps in flight ahead of them, so that runs
#     are left (100 runs at the guest disk's 150 requests a second take
#     about 0.7 s): the worker stops (pbitmap_plan_pace_stopped 1, its
#     event stopped=1, fewer runs done than the batch has), and the vda
#     reads in flight drain.  A shell
#     that watched pbitmap_plan_paced and then sent the SIGKILL was too
#     slow on a loaded host: prog ran to its end first (make check of
#     f0ec2cd);
#   - vm.pbitmap_plan_inflight_kb is 0 by default, and then nothing is
#     paced: exec submits every run (pbitmap_plan_paced 0, no run from a
#     kworker).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-plan-pace
cold_need_ground_truth
cold_need_counters pbitmap_plan_exec pbitmap_plan_paced pbitmap_plan_pace_stopped
cold_need_sysctls pbitmap_plan_inflight_kb
cold_missing
T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T" || fail "cannot mount tracefs"
for ev in pbitmap_plan_read pbitmap_plan_paced; do
	[ -d "$T/events/pbitmap/$ev" ] || fail "the kernel has no $ev tracepoint"
done
trace_on() {
	echo >"$T/trace"
	echo 1 >"$T/events/pbitmap/pbitmap_plan_read/enable"
	echo 1 >"$T/events/pbitmap/pbitmap_plan_paced/enable"
	echo 1 >"$T/tracing_on"
}
trace_off() {
	echo 0 >"$T/events/pbitmap/pbitmap_plan_read/enable" 2>/dev/null
	echo 0 >"$T/events/pbitmap/pbitmap_plan_paced/enable" 2>/dev/null
	return 0
}
inflight0=$(cat /proc/sys/vm/pbitmap_plan_inflight_kb)
[ "$inflight0" = 0 ] || fail "vm.pbitmap_plan_inflight_kb is $inflight0 at boot, not 0 (pacing off)"
trap 'trace_off; echo "$inflight0" >/proc/sys/vm/pbitmap_plan_inflight_kb; learn_reset; cold_reset; cd /; rm -rf "$W"' EXIT

cat >big.c <<'EOF'
__attribute__((aligned(4096))) const unsigned char blob[16 << 20] = { 1 };
unsigned long touch(unsigned long page)
{
	return ((const volatile unsigned char *)blob)[page << 12];
}
EOF
gcc -O1 -shared -fPIC -o libbig.so big.c || fail "cannot build libbig.so"
cat >prog.c <<'EOF'
#include <signal.h>
#include <stdio.h>
unsigned long touch(unsigned long page);
int main(int argc, char **argv)
{
	unsigned long s = 0;
	int i;

	(void)argv;
	for (i = 99; i >= 0; i--) {
		if (argc > 1 && i == 49)	/* half-way through the batch */
			raise(SIGKILL);
		s += touch(i * 40);
	}
	printf("pace %lu\n", s);
	return 0;
}
EOF
gcc -O1 -o prog prog.c -L"$W" -lbig -Wl,-rpath,"$W" || fail "cannot build prog"
rm -f ./*.c
./prog >want.out || fail "prog does not run"

printf '%s\n' "$W/prog" "$W/libbig.so" >pace.files
pbitmap add -q libbig.so || fail "cannot stamp libbig.so"
pbitmap add -q --plan-size 16K prog || fail "cannot stamp prog with a plan area"
cold_learn pace ./prog
sync
learn_one_run ./prog
pbitmap show prog | grep -qE "^ *plan +[0-9]+ files" || fail "no plan learned: $(pbitmap show prog)"

# check_trace FILE PACED: the batch's runs, who submitted them, and the
# pbitmap_plan_paced event; PACED is yes, no or stopped.
check_trace() {
	python3 - "$1" "$2" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
paced = sys.argv[2]
runs = []
for l in lines:
    m = re.match(r"\s*(\S+)-\d+\s.*pbitmap_plan_read: .* rank=(\d+)", l)
    if m:
        runs.append((m.group(1), int(m.group(2))))
ends = [re.search(r"runs=(\d+) done=(\d+) pages=\d+ stopped=(\d)", l)
        for l in lines if "pbitmap_plan_paced:" in l]
ends = [tuple(int(x) for x in m.groups()) for m in ends if m]
if not runs:
    sys.exit("no pbitmap_plan_read event")
ranks = [r for _, r in runs]
if ranks != sorted(ranks):
    sys.exit("runs submitted out of rank order: %s" % ranks)
at_exec = sum(1 for who, _ in runs if who == "prog")
workers = sum(1 for who, _ in runs if who.startswith("kworker"))
if at_exec + workers != len(runs):
    sys.exit("runs submitted by others than prog and a kworker: %s" % sorted({w for w, _ in runs}))
if paced == "no":
    if workers or ends:
        sys.exit("paced with vm.pbitmap_plan_inflight_kb=0: %d runs from a kworker, events %s"
                 % (workers, ends))
    print("unpaced: all %d runs submitted at exec" % len(runs))
    sys.exit(0)
if not 1 <= at_exec <= 16 or at_exec >= len(runs):
    sys.exit("exec submitted %d of %d runs, want 1 to 16 and not all" % (at_exec, len(runs)))
if len(ends) != 1:
    sys.exit("%d pbitmap_plan_paced events, want 1" % len(ends))
nr, done, stopped = ends[0]
if paced == "yes" and (stopped or done != nr or nr != len(runs)):
    sys.exit("paced batch: runs=%d done=%d stopped=%d, %d runs traced" % (nr, done, stopped, len(runs)))
if paced == "stopped" and (not stopped or done >= nr):
    sys.exit("killed program's batch: runs=%d done=%d stopped=%d" % (nr, done, stopped))
print("paced: %d runs at exec, %d by a kworker, event runs=%d done=%d stopped=%d"
      % (at_exec, workers, nr, done, stopped))
PY
}

# Paced, with the bound from the device.
echo -1 >/proc/sys/vm/pbitmap_plan_inflight_kb
trace_on
p0=$(vmstat_counter pbitmap_plan_exec)
q0=$(vmstat_counter pbitmap_plan_paced)
s0=$(vmstat_counter pbitmap_plan_pace_stopped)
cold_run paced paced.out ./prog
sleep 1	# the worker's event, after the program's own end
trace_off
cp "$T/trace" paced.trace
cmp -s paced.out want.out || fail "the paced run: $(cat paced.out)"
[ "$(vmstat_delta pbitmap_plan_exec "$p0")" = 1 ] || fail "the plan was not followed"
[ "$(vmstat_delta pbitmap_plan_paced "$q0")" = 1 ] ||
	fail "plan_paced $(vmstat_delta pbitmap_plan_paced "$q0"), want 1"
[ "$(vmstat_delta pbitmap_plan_pace_stopped "$s0")" = 0 ] || fail "the paced batch stopped"
check_trace paced.trace yes || fail "the paced batch"
echo "ok: exec submits what fits in flight, a worker the rest, in the plan's order"

# Killed while the worker has runs left.
sleep 1.1	# past the repeat window
sync
echo 3 >/proc/sys/vm/drop_caches
trace_on
p0=$(vmstat_counter pbitmap_plan_exec)
s0=$(vmstat_counter pbitmap_plan_pace_stopped)
q0=$(vmstat_counter pbitmap_plan_paced)
rc=0
./prog killed >/dev/null || rc=$?
[ "$rc" = 137 ] || fail "prog killed: exit status $rc, want 137 (SIGKILL)"
[ "$(vmstat_delta pbitmap_plan_paced "$q0")" = 1 ] ||
	fail "the killed run's batch was not paced (pbitmap_plan_paced +$(vmstat_delta pbitmap_plan_paced "$q0"))"
reads_settle
sleep 1
trace_off
cp "$T/trace" killed.trace
[ "$(vmstat_delta pbitmap_plan_exec "$p0")" = 1 ] || fail "the killed run did not follow the plan"
[ "$(vmstat_delta pbitmap_plan_pace_stopped "$s0")" = 1 ] ||
	fail "plan_pace_stopped $(vmstat_delta pbitmap_plan_pace_stopped "$s0"), want 1"
check_trace killed.trace stopped || fail "the killed program's batch"
echo "ok: the worker stops when the program is killed"

# No pacing: the default.
echo 0 >/proc/sys/vm/pbitmap_plan_inflight_kb
sleep 1.1
trace_on
q0=$(vmstat_counter pbitmap_plan_paced)
cold_run unpaced unpaced.out ./prog
trace_off
cp "$T/trace" unpaced.trace
cmp -s unpaced.out want.out || fail "the unpaced run: $(cat unpaced.out)"
[ "$(vmstat_delta pbitmap_plan_paced "$q0")" = 0 ] ||
	fail "plan_paced $(vmstat_delta pbitmap_plan_paced "$q0") with vm.pbitmap_plan_inflight_kb=0"
check_trace unpaced.trace no || fail "the unpaced batch"
echo "$inflight0" >/proc/sys/vm/pbitmap_plan_inflight_kb
cold_medians
cold_reset
echo "PASS: t-plan-pace"
