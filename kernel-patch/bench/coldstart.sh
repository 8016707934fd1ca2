#!/bin/bash
# Benchmark (guest job; `make bench`): cold starts of gcc -O2 -S sched.i
# (kernel/sched/core.c preprocessed from the test-bed kernel, passed in beside
# this script), gdb -batch, python3 -c pass and emacs -batch under five
# conditions, side by side in one run:
#   off     demand paging (vm.pbitmap_enabled=0)
#   slurp   vm.mmap_slurp_all=1, every file mapping read whole at mmap
#   early   the 2008 synchronous mode: vm.pbitmap_early_fault=1 with
#           vm.pbitmap_mmap=0 (the executable's marked pages mapped at exec)
#   exec    vm.pbitmap_mmap=0: asynchronous prefetch of what exec maps only
#           (the executable and its ELF interpreter)
#   mmap    vm.pbitmap_mmap=1: asynchronous prefetch at every mapping of a
#           stamped file (executable, interpreter, libraries, data files)
# What is stamped, in place (the image is attached as a QEMU snapshot: nothing
# persists past this boot): each workload's executable and every library ldd
# lists for it (ld.so included); for gcc also cc1 and its libraries (-S: as
# is not run); for emacs its dump file (*.pdmp, a data file: the record goes
# in its user.pbitmap attribute) and the preloaded native code (*.eln).
# The bitmaps are ground truth, not `pbitmap record`: ground_truth.py (beside
# this script) measures the pages each workload faults, with readahead and
# fault-around off; a file several workloads use (libc, ld.so, ...) gets the
# union of their pages; stamp-truth.py marks exactly those pages.
# Every (workload, condition) pair runs RUNS times (default 5), all in one
# shuffled order, page cache dropped before each.  Prints medians of read
# requests and bytes (/sys/block/vda/stat), major faults (time -f %F), wall
# time, and page-cache growth (Cached in /proc/meminfo), and ratios to "off".
set -euo pipefail
JOB=$PWD
# RUNS from the environment, else from the file "runs" beside the job
# (make bench RUNS=N writes it: the guest sees no host variable), else 5.
[ -n "${RUNS:-}" ] || { [ ! -f "$JOB/runs" ] || read -r RUNS <"$JOB/runs"; }
RUNS=${RUNS:-5}
W=/var/tmp/bench
GROUND_TRUTH=$JOB/ground_truth.py
STAMP_TRUTH=$JOB/stamp-truth.py
die() { echo "coldstart: $*" >&2; exit 1; }
for f in "$GROUND_TRUTH" "$STAMP_TRUTH"; do
	[ -f "$f" ] || die "no ${f##*/} beside the job (make bench passes tests/lib/ground_truth.py and kernel-patch/tests/stamp-truth.py)"
done
for s in pbitmap_enabled pbitmap_mmap pbitmap_early_fault mmap_slurp_all; do
	[ -w /proc/sys/vm/$s ] || die "the kernel has no vm.$s"
done
t_start=$EPOCHSECONDS
rm -rf "$W" && mkdir -p "$W" && cd "$W"
# A real translation unit: cc1 then runs its optimisation passes, not just the
# parser.  Without the file (a plain `vm --job`), fall back to a one-line C
# file and say so.
if [ -f "$JOB/sched.i" ]; then
	cp "$JOB/sched.i" gcc-input.i
	gcc_desc="gcc -O2 -S sched.i ($(wc -l <gcc-input.i) lines)"
else
	printf 'int square(int x) { return x * x; }\n' >gcc-input.i
	gcc_desc="gcc -O2 -S of a one-line file (sched.i not given)"
fi

gcc_real=$(readlink -f /usr/bin/gcc)
cc1=$(readlink -f "$(gcc -print-prog-name=cc1)")
python_real=$(readlink -f /usr/bin/python3)
emacs_real=$(readlink -f /usr/bin/emacs)
declare -A cmd=(
	[gcc]="$gcc_real -O2 -S -w gcc-input.i -o $W/out.s"
	[gdb]="/usr/bin/gdb -batch"
	[python3]="$python_real -c pass"
	[emacs]="$emacs_real -batch"
)
workloads=(gcc gdb python3 emacs)
conditions=(off slurp early exec mmap)

set_condition() {
	local en=0 early=0 slurp=0 mmap=1
	case $1 in
	off) ;;
	slurp) slurp=1 ;;
	early) en=1 early=1 mmap=0 ;;
	exec) en=1 mmap=0 ;;
	mmap) en=1 ;;
	*) die "unknown condition $1" ;;
	esac
	echo $en >/proc/sys/vm/pbitmap_enabled
	echo $mmap >/proc/sys/vm/pbitmap_mmap
	echo $early >/proc/sys/vm/pbitmap_early_fault
	echo $slurp >/proc/sys/vm/mmap_slurp_all
}
set_condition off
trap 'set_condition off' EXIT

# --- The stamped set.  ldd prints "soname => /path (addr)" per library and
# "/path (addr)" for ld.so; LIBNAME remembers the name each file is loaded
# by, for the private runtime below.
declare -A LIBNAME=()
ldd_files() {	# EXE: EXE and the real paths of its libraries, one a line
	local name path
	readlink -f "$1"
	while read -r name path; do
		path=$(readlink -f "$path")
		LIBNAME[$path]=${name##*/}
		echo "$path"
	done < <(ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }
		$1 ~ /^\// { print $1, $1 }')
}
pdmp=$(find /usr/lib/emacs /usr/libexec/emacs -name '*.pdmp' 2>/dev/null | head -n 1)
[ -n "$pdmp" ] || die "no emacs dump file (*.pdmp) under /usr/lib/emacs or /usr/libexec/emacs"
mapfile -t eln < <(find /usr/lib/emacs -path '*/native-lisp/*/preloaded/*.eln' 2>/dev/null | sort)
declare -A files=()
# Command substitutions run in a subshell: fill LIBNAME in this shell first.
for exe in "$gcc_real" "$cc1" /usr/bin/gdb "$python_real" "$emacs_real"; do
	ldd_files "$exe" >/dev/null
done
files[gcc]=$(ldd_files "$gcc_real"; ldd_files "$cc1")
files[gdb]=$(ldd_files /usr/bin/gdb)
files[python3]=$(ldd_files "$python_real")
files[emacs]=$(ldd_files "$emacs_real"; printf '%s\n' "$(readlink -f "$pdmp")" "${eln[@]}")
mapfile -t all < <(printf '%s\n' "${files[@]}" | sort -u)

# --- The ground truth needs the stamped files cold, but ground_truth.py is
# Python: python3 maps libc, ld.so, libm, libz, ... and what it maps stays
# cached.  So it runs from unstamped private copies of python3, its
# interpreter and every library of the stamped set (a dlopen finds them
# first through --library-path), never mapping a system file of the set;
# the workload it starts is an ordinary exec of the system files.  Copied
# before stamping: `pbitmap add` replaces each file by a new inode, which
# only processes started afterwards map (this shell keeps the old ones).
rt=$W/rt
mkdir -p "$rt"
ldd_files "$python_real" >/dev/null
for f in "${!LIBNAME[@]}"; do cp "$f" "$rt/${LIBNAME[$f]}"; done
cp "$python_real" "$rt/"
rt_python=("$rt/ld-linux-x86-64.so.2" --library-path "$rt" --argv0 "$python_real" "$rt/${python_real##*/}")
"${rt_python[@]}" -c 'pass' || die "the private copy of python3 does not run"

stamp_status=0
pbitmap add -q "${all[@]}" || stamp_status=$?
((stamp_status == 0)) || die "pbitmap add of the ${#all[@]} files failed (status $stamp_status)"
for w in "${workloads[@]}"; do
	gt=()
	while read -r f; do gt+=(-f "$f"); done <<<"${files[$w]}"
	# shellcheck disable=SC2086  # the command is split as the cold runs split it
	"${rt_python[@]}" "$GROUND_TRUTH" --require-cold -o "$w.truth" "${gt[@]}" -- ${cmd[$w]} \
		>/dev/null 2>"$w.truth.err" </dev/null ||
		die "ground truth of $w: $(tail -n 5 "$w.truth.err")"
done
# One truth for all: per file, the union of the pages the workloads faulted.
python3 - truth.json "${workloads[@]/%/.truth}" <<'PY'
import json, sys
merged, files = None, {}
for name in sys.argv[2:]:
    t = json.load(open(name))
    if merged is None:
        merged = dict(t, command=[], files=[])
    merged["command"].append(t["command"])
    merged["exit_status"] = max(merged["exit_status"], t["exit_status"])
    for f in t["files"]:
        m = files.setdefault(f["path"], dict(path=f["path"], size=f["size"],
                                             cached_before=0, pages=set()))
        m["cached_before"] = max(m["cached_before"], f["cached_before"])
        for first, last in f["pages"]:
            m["pages"].update(range(first, last + 1))
for m in files.values():
    pages, ranges = sorted(m["pages"]), []
    for p in pages:
        if ranges and ranges[-1][1] == p - 1:
            ranges[-1][1] = p
        else:
            ranges.append([p, p])
    merged["files"].append(dict(m, count=len(pages), pages=ranges))
json.dump(merged, open(sys.argv[1], "w"))
PY
mapfile -t touched < <(python3 -c '
import json, sys
for f in json.load(open(sys.argv[1]))["files"]:
    print(("+" if f["count"] else "-") + f["path"])' truth.json)
marked=() unused=()
for f in "${touched[@]}"; do
	if [ "${f:0:1}" = + ]; then marked+=("${f:1}"); else unused+=("${f:1}"); fi
done
# A stamped file nothing faults would still cost the kernel its record read.
((${#unused[@]} == 0)) || pbitmap strip -q "${unused[@]}" || die "pbitmap strip failed"
echo "${#unused[@]} files of the set faulted by no workload: left unstamped" >stripped.txt
((${#unused[@]} == 0)) || printf '  %s\n' "${unused[@]}" >>stripped.txt
python3 "$STAMP_TRUTH" truth.json "${marked[@]}" >stamped.txt || die "stamp-truth.py failed"
sync
t_stamped=$EPOCHSECONDS

echo "ground truth ($gcc_desc); files stamped in place with the pages faulted:"
python3 - truth.json "${workloads[@]/%/.truth}" <<'PY'
import json, sys
def summary(name):
    fs = json.load(open(name))["files"]
    used = [f for f in fs if f["count"]]
    pages = sum(f["count"] for f in used)
    return "%3d of %3d files faulted, %6d pages (%5.1f MiB)" % (
        len(used), len(fs), pages, pages * 4096 / 2**20)
for name in sys.argv[2:]:
    print("  %-8s %s" % (name[:-len(".truth")], summary(name)))
print("  %-8s %s" % ("union", summary(sys.argv[1])))
PY
head -n 1 stripped.txt | sed 's/^/  /'

# --- The cold starts.  Between dropping the caches and reading the counters
# nothing but shell builtins runs: any program started there would map the
# stamped libc and ld.so and, with pbitmap on, prefetch them uncounted.
cached_kb() {	# sets KB to Cached: of /proc/meminfo
	local k v
	while read -r k v _; do [ "$k" = Cached: ] && { KB=$v; return; }; done </proc/meminfo
	die "no Cached: in /proc/meminfo"
}
vmstat_get() {	# NAME: sets VAL to the /proc/vmstat counter NAME
	local k v
	VAL=0
	while read -r k v; do [ "$k" = "$1" ] && { VAL=$v; return; }; done </proc/vmstat
}
# Reads still in flight (an asynchronous prefetch that outlived the program)
# belong to the run that started them: wait for them, up to 5 s, builtins only.
drain() {
	local r w t0=${EPOCHREALTIME/./}
	while read -r r w </sys/block/vda/inflight && ((r + w > 0)); do
		((${EPOCHREALTIME/./} - t0 < 5000000)) || return 0
	done
}
cold() {	# workload condition
	local r0 s0 r1 s1 c0 c1 p0 p1 maj wall status line last=
	set_condition off
	drain
	sync; echo 3 >/proc/sys/vm/drop_caches
	set_condition "$2"
	cached_kb; c0=$KB
	vmstat_get pbitmap_prefetch; p0=$VAL
	read -r r0 _ s0 _ </sys/block/vda/stat
	# shellcheck disable=SC2086
	/usr/bin/time -o time.out -f '%F %e %x' ${cmd[$1]} >/dev/null 2>&1 </dev/null || true
	drain
	read -r r1 _ s1 _ </sys/block/vda/stat
	cached_kb; c1=$KB
	vmstat_get pbitmap_prefetch; p1=$VAL
	# time writes "Command exited with non-zero status N" first on failure.
	while read -r line; do last=$line; done <time.out
	read -r maj wall status <<<"$last"
	echo "$1 $2 $((r1 - r0)) $(((s1 - s0) * 512)) $maj $wall $(((c1 - c0) * 1024)) $status $((p1 - p0))" >>"$results"
}

# The rows and the progress go straight to $RESULTS (the host can follow
# them; a run cut short keeps what it measured), by shell builtins only.
results=${RESULTS:-$W}/coldstart-results
: >"$results"
for w in "${workloads[@]}"; do
	for c in "${conditions[@]}"; do
		for _ in $(seq "$RUNS"); do echo "$w $c"; done
	done
done | shuf >order
vmstat_get pbitmap_rejected; rejected0=$VAL
n=0 total=$(wc -l <order)
while read -r w c; do
	cold "$w" "$c"
	n=$((n + 1))
	echo "$n of $total done, $((EPOCHSECONDS - t_stamped)) s" >"${RESULTS:-$W}/coldstart-progress"
done <order
set_condition off
vmstat_get pbitmap_rejected; rejected=$((VAL - rejected0))
t_end=$EPOCHSECONDS
for f in stamped.txt stripped.txt truth.json; do cp "$f" "${RESULTS:-.}/coldstart-$f" 2>/dev/null || true; done

python3 - "$results" "$RUNS" <<'PY'
import statistics, sys
rows, failed, prefetches = {}, {}, {}
for line in open(sys.argv[1]):
    w, c, reqs, nbytes, maj, wall, growth, status, pf = line.split()
    rows.setdefault((w, c), []).append((int(reqs), int(nbytes), int(maj), float(wall), int(growth)))
    failed[(w, c)] = failed.get((w, c), 0) + (status != "0")
    prefetches.setdefault((w, c), []).append(int(pf))
conds = ("off", "slurp", "early", "exec", "mmap")
print("cold starts, medians of %s runs each, shuffled order; disk: virtio, QEMU throttling.iops-total" % sys.argv[2])
print("%-8s %-6s %9s %9s %9s %8s %11s   %s" % ("workload", "cond", "read req", "MiB read",
      "maj flt", "wall s", "cache MiB", "vs off: req / wall / cache"))
for w in ("gcc", "gdb", "python3", "emacs"):
    base = [statistics.median(x) for x in zip(*rows[(w, "off")])]
    for c in conds:
        m = [statistics.median(x) for x in zip(*rows[(w, c)])]
        rel = "%5.2fx / %+5.0f%% / %+5.0f%%" % (
            base[0] / m[0] if m[0] else float("inf"),
            100 * (m[3] - base[3]) / base[3] if base[3] else 0,
            100 * (m[4] - base[4]) / base[4] if base[4] else 0)
        print("%-8s %-6s %9d %9.1f %9d %8.2f %11.1f   %s" % (w, c, m[0], m[1] / 2**20, m[2],
              m[3], m[4] / 2**20, rel if c != "off" else ""))
print("mappings that started a prefetch (vmstat pbitmap_prefetch), median per run:")
for w in ("gcc", "gdb", "python3", "emacs"):
    print("  %-8s %s" % (w, "  ".join("%s %d" % (c, statistics.median(prefetches[(w, c)]))
                                      for c in conds)))
bad = ["%s/%s: %d" % (w, c, n) for (w, c), n in sorted(failed.items()) if n]
print("runs whose workload exited non-zero: %s" % (", ".join(bad) or "none"))
PY
echo "records rejected by the kernel during the runs (vmstat pbitmap_rejected): $rejected"
echo "duration: $((t_end - t_start)) s ($((t_stamped - t_start)) s ground truth and stamping," \
	"$((t_end - t_stamped)) s for $total cold starts)"
