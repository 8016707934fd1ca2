# shellcheck shell=bash
# Sourced by guest tests: the latency pbitmap adds to exec and mmap, from a
# kprobe and a kretprobe on __pbitmap_mmap (the hook vm_mmap_pgoff() calls
# after dropping mmap_lock; with vm.pbitmap_enabled=0 a static key skips
# it, so it adds nothing).  Both probes cost a little themselves, more so
# under TCG: the figures are an upper bound.
#
#   hooklat_begin          start collecting (clears what was collected)
#   hooklat_end FILE       stop; append one line per call to FILE:
#                          "pid microseconds"
#   hooklat_report FILE    print p50, p99 and max per call and, per process
#                          (an exec and everything its process mapped),
#                          the sum of its calls
HOOKLAT_T=/sys/kernel/tracing

hooklat_begin() {
	local t=$HOOKLAT_T
	mountpoint -q "$t" || mount -t tracefs none "$t" ||
		{ echo "FAIL: hooklat: cannot mount tracefs"; exit 1; }
	if [ ! -d "$t/events/kprobes/pbitmap_hook_in" ]; then
		if ! { echo 'p:pbitmap_hook_in __pbitmap_mmap' >>"$t/kprobe_events" &&
		       echo 'r:pbitmap_hook_out __pbitmap_mmap' >>"$t/kprobe_events"; }; then
			echo "FAIL: hooklat: cannot probe __pbitmap_mmap (CONFIG_KPROBE_EVENTS?)"
			exit 1
		fi
	fi
	echo global >"$t/trace_clock"
	echo 8192 >"$t/buffer_size_kb"
	echo >"$t/trace"
	echo 1 >"$t/events/kprobes/pbitmap_hook_in/enable"
	echo 1 >"$t/events/kprobes/pbitmap_hook_out/enable"
	echo 1 >"$t/tracing_on"
}

hooklat_end() {
	local t=$HOOKLAT_T
	echo 0 >"$t/events/kprobes/pbitmap_hook_in/enable"
	echo 0 >"$t/events/kprobes/pbitmap_hook_out/enable"
	python3 - "$t/trace" >>"$1" <<'PY'
import re, sys
rx = re.compile(r'-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): pbitmap_hook_(in|out):')
start = {}
for line in open(sys.argv[1]):
    m = rx.search(line)
    if not m:
        continue
    pid, ts, ev = m.group(1), float(m.group(2)), m.group(3)
    if ev == "in":
        start[pid] = ts
    elif pid in start:
        print(pid, "%.1f" % ((ts - start.pop(pid)) * 1e6))
PY
	echo >"$t/trace"
}

hooklat_report() {
	python3 - "$1" <<'PY'
import sys
calls, per = [], {}
for line in open(sys.argv[1]):
    pid, us = line.split()
    calls.append(float(us))
    per[pid] = per.get(pid, 0.0) + float(us)
if not calls:
    sys.exit("FAIL: hooklat: no call of __pbitmap_mmap was seen")
def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]
procs = list(per.values())
print("hook latency per mmap: %d calls, p50 %.0f us, p99 %.0f us, max %.0f us" %
      (len(calls), q(calls, .5), q(calls, .99), max(calls)))
print("hook latency per process: %d processes, p50 %.0f us, p99 %.0f us, max %.0f us" %
      (len(procs), q(procs, .5), q(procs, .99), max(procs)))
PY
}
