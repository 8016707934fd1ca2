#!/bin/bash
# Benchmark (guest job; `make bench`): cold starts of gcc -O2 -S sched.i
# (kernel/sched/core.c preprocessed from the test-bed kernel, passed in beside
# this script), gdb -batch, python3 -c pass and emacs -batch under four
# conditions, side by side in one run:
#   off     demand paging (vm.pbitmap_enabled=0)
#   slurp   vm.mmap_slurp_all=1, every file mapping read whole at mmap
#   early   pbitmap with vm.pbitmap_early_fault=1 (the 2008 synchronous mode)
#   async   pbitmap, asynchronous prefetch at exec (the default design)
# The executables are stamped and learned with `pbitmap record` first (the
# image is attached read-only-snapshot, so stamping system files is safe).
# Every (workload, condition) pair runs RUNS times (default 5), all in one
# shuffled order, page cache dropped before each.  Prints medians of read
# requests and bytes (/sys/block/vda/stat), major faults (time -f %F), wall
# time, and page-cache growth (Cached in /proc/meminfo), and ratios to "off".
set -euo pipefail
RUNS=${RUNS:-5}
W=/var/tmp/bench
JOB=$PWD
rm -rf "$W" && mkdir -p "$W" && cd "$W"
# A real translation unit: cc1 then runs its optimisation passes, not just the
# parser, so its learned pages are those of real work.  Without the file (a
# plain `vm --job`), fall back to a one-line C file and say so.
if [ -f "$JOB/sched.i" ]; then
	cp "$JOB/sched.i" gcc-input.i
	gcc_desc="gcc -O2 -S sched.i ($(wc -l <gcc-input.i) lines)"
else
	printf 'int square(int x) { return x * x; }\n' >gcc-input.i
	gcc_desc="gcc -O2 -S of a one-line file (sched.i not given)"
fi

gcc_real=$(readlink -f /usr/bin/gcc)
declare -A cmd=(
	[gcc]="$gcc_real -O2 -S -w gcc-input.i -o $W/out.s"
	[gdb]="/usr/bin/gdb -batch"
	[python3]="/usr/bin/python3 -c pass"
	[emacs]="$(readlink -f /usr/bin/emacs) -batch"
)
pbitmap add -q "$gcc_real" "$(gcc -print-prog-name=cc1)" /usr/bin/gdb \
	"$(readlink -f /usr/bin/python3)" "$(readlink -f /usr/bin/emacs)"

set_condition() {
	local en=0 early=0 slurp=0
	case $1 in
	slurp) slurp=1 ;;
	early) en=1 early=1 ;;
	async) en=1 ;;
	esac
	echo $en >/proc/sys/vm/pbitmap_enabled
	echo $early >/proc/sys/vm/pbitmap_early_fault
	echo $slurp >/proc/sys/vm/mmap_slurp_all
}

set_condition off
for w in gcc gdb python3 emacs; do
	# shellcheck disable=SC2086
	pbitmap record -q -- ${cmd[$w]} >/dev/null 2>&1 || true
done
echo "learned bitmaps ($gcc_desc):"
pbitmap show "$gcc_real" "$(gcc -print-prog-name=cc1)" /usr/bin/gdb \
	"$(readlink -f /usr/bin/python3)" "$(readlink -f /usr/bin/emacs)" |
	awk '/^\// { f = $1 } /^  prefetch/ { print "  " f, $2, $3, $4, $5, $6 }'

cached_kb() { awk '$1 == "Cached:" { print $2 }' /proc/meminfo; }
cold() {	# workload condition
	local r0 s0 r1 s1 c0 c1 maj wall
	set_condition "$2"
	sync; echo 3 >/proc/sys/vm/drop_caches
	c0=$(cached_kb)
	read -r r0 _ s0 _ </sys/block/vda/stat
	# shellcheck disable=SC2086
	/usr/bin/time -o time.out -f '%F %e' ${cmd[$1]} >/dev/null 2>&1 </dev/null || true
	read -r r1 _ s1 _ </sys/block/vda/stat
	c1=$(cached_kb)
	read -r maj wall <time.out
	echo "$1 $2 $((r1 - r0)) $(((s1 - s0) * 512)) $maj $wall $(((c1 - c0) * 1024))" >>results
}

: >results
for w in gcc gdb python3 emacs; do
	for c in off slurp early async; do
		for _ in $(seq "$RUNS"); do echo "$w $c"; done
	done
done | shuf >order
while read -r w c; do cold "$w" "$c"; done <order
set_condition off
cp results "${RESULTS:-.}/coldstart.txt" 2>/dev/null || true

python3 - results "$RUNS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    w, c, reqs, nbytes, maj, wall, growth = line.split()
    rows.setdefault((w, c), []).append((int(reqs), int(nbytes), int(maj), float(wall), int(growth)))
print("cold starts, medians of %s runs each, shuffled order; disk: virtio, QEMU throttling.iops-total" % sys.argv[2])
print("%-8s %-6s %9s %9s %9s %8s %11s   %s" % ("workload", "cond", "read req", "MiB read",
      "maj flt", "wall s", "cache MiB", "vs off: req / wall / cache"))
for w in ("gcc", "gdb", "python3", "emacs"):
    base = [statistics.median(x) for x in zip(*rows[(w, "off")])]
    for c in ("off", "slurp", "early", "async"):
        m = [statistics.median(x) for x in zip(*rows[(w, c)])]
        rel = "%5.2fx / %+5.0f%% / %+5.0f%%" % (
            base[0] / m[0] if m[0] else float("inf"),
            100 * (m[3] - base[3]) / base[3] if base[3] else 0,
            100 * (m[4] - base[4]) / base[4] if base[4] else 0)
        print("%-8s %-6s %9d %9.1f %9d %8.2f %11.1f   %s" % (w, c, m[0], m[1] / 2**20, m[2],
              m[3], m[4] / 2**20, rel if c != "off" else ""))
PY
