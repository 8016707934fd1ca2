# shellcheck shell=bash
# kernel-patch/tests/coldlib.sh: cold-start measurements for the guest tests
# of the kernel's prefetch at mmap (t-mmap-data, t-unstamped, t-libs).
# Sourced.  Needs root, /usr/bin/time and /sys/block/vda/stat (the root disk).
#
#   cold_cond NAME          set the sysctls of a condition: off (pbitmap
#                           disabled), on (enabled, prefetch at mmap), exec
#                           (enabled, vm.pbitmap_mmap=0: executable and
#                           interpreter only)
#   cold_run LABEL OUT CMD...
#                           drop the page cache, read the files of
#                           $COLD_WARM (the measuring harness, not the
#                           workload), run CMD with stdout to OUT,
#                           append one line to $COLD_RESULTS: LABEL, major
#                           faults, read requests, bytes read, page-cache
#                           growth in KiB, wall seconds; with $COLD_EVICT
#                           set, that command (a function, word-split) is
#                           run instead of dropping the page cache
#   cold_summary PROBLEMS   cold_medians, then fail on missing features or PROBLEMS
#   cold_medians            print the table of medians per label and define
#                           med_LABEL_FIELD shell variables (fields: majflt
#                           reqs bytes cache_kb wall) for the assertions
#   cold_order I C...       the conditions C in the order of run I: rotated
#                           every run, so none always goes first
#   cold_need_sysctls S..., cold_need_counters C...
#                           note what the kernel lacks; cold_missing fails
#                           the test, naming it, once the figures that need
#                           no new kernel feature are printed
#   cold_private_copy DIR PROGRAM
#                           PROGRAM and its libraries copied into DIR
#   cold_prepare NAME PROGRAM [DATA_FILE]
#                           the private copy in $W/NAME (and DATA_FILE),
#                           stamped; the copies listed in NAME.files
#   cold_learn NAME CMD...  ground truth of one cold run of CMD over the
#                           copies; each copy it touched marked with exactly
#                           the pages it faulted (NAME.truth, NAME.want)
#   vmstat_counter NAME     a /proc/vmstat counter (empty if the kernel has none)
#   vmstat_snap ARRAY NAME...
#                           ARRAY[NAME] = each counter, from one read (vmstatlib.sh)
#   vmstat_diff OUT FROM TO OUT[NAME] = TO[NAME] - FROM[NAME] (vmstatlib.sh)
#   record_section FILE     "OFFSET SIZE" of FILE's record section (pbitmap
#                           show --json); non-zero status if there is none.
#                           Call it in a command substitution, which waits
#                           for the python3 it runs: a process substitution
#                           returns at the line, and an exiting python3 would
#                           fault pages in during what the caller measures next
#   learn_reset             learning off, its intervals and window at their
#                           defaults (the learning tests' EXIT traps)
#   learn_flush             write back what the kernel learned, now
#   learn_one_run CMD...    one cold run of CMD with vm.pbitmap_learn=1 and no
#                           learning interval, its sets written back, then
#                           learning reset; its stdout must equal want.out
#   runs_of FILE            the runs (generations written) of FILE's record
#   vmstat_delta NAME N     how much the /proc/vmstat counter NAME grew since
#                           it read N
#   cold_begin NAME         work in a fresh /var/tmp/NAME ($W); fail MSG

COLD_RESULTS=${COLD_RESULTS:-cold-results}
RUNS=${RUNS:-3}

cold_fail() { echo "FAIL: $*"; exit 1; }

# Fields of `pbitmap show --json` read by bash: a python3 started for each
# cost a TCG guest a second or more, and t-learn-rules asks a dozen times.
# The output is one compact JSON line per file, each name once in it.
record_section() {
	local j
	j=$(pbitmap show --json "$1") || return 1
	[[ $j =~ \"record_offset\":([0-9]+),.*\"section_size\":([0-9]+) ]] || return 1
	echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
}

learn_reset() {
	local vm=/proc/sys/vm
	echo 0 >$vm/pbitmap_learn 2>/dev/null
	echo 10000 >$vm/pbitmap_learn_window_ms 2>/dev/null
	echo 60 >$vm/pbitmap_learn_interval_s 2>/dev/null
	echo 21600 >$vm/pbitmap_learn_data_interval_s 2>/dev/null
	return 0
}

learn_flush() {
	echo 1 >/proc/sys/vm/pbitmap_learn_flush || fail "cannot write vm.pbitmap_learn_flush"
}

learn_one_run() {
	echo 0 >/proc/sys/vm/pbitmap_learn_interval_s
	echo 1 >/proc/sys/vm/pbitmap_learn
	cold_cond on
	cold_run learning learning.out "$@"
	learn_flush
	learn_reset
	cmp -s learning.out want.out || fail "the learning run: $(cat learning.out)"
}

runs_of() {
	local j
	j=$(pbitmap show --json "$1") && [[ $j =~ \"runs\":([0-9]+) ]] && echo "${BASH_REMATCH[1]}"
}
vmstat_delta() { echo $(($(vmstat_counter "$1") - $2)); }
# vmstat_grew NAME FROM SECONDS: /proc/vmstat's NAME above FROM, looked at
# every 0.1 s for SECONDS at most; 1 if it never was
vmstat_grew() {
	local _
	for _ in $(seq $(($3 * 10))); do
		[ "$(vmstat_delta "$1" "$2")" -gt 0 ] && return 0
		sleep 0.1
	done
	[ "$(vmstat_delta "$1" "$2")" -gt 0 ]
}

# cold_begin NAME: a fresh work directory /var/tmp/NAME, made current and
# kept in W; pbitmap off again whenever the test ends (fail, or the EXIT trap).
cold_begin() {
	W=/var/tmp/$1
	{ rm -rf "$W" && mkdir -p "$W" && cd "$W"; } || cold_fail "cannot make $W"
	# The copies are large and the guest's disk is shared by every test.
	trap 'cold_reset; cd /; rm -rf "$W"' EXIT
}
fail() { cold_reset; cold_fail "$@"; }

# cold_need_ground_truth: ground_truth.py must have come with the tests.
cold_need_ground_truth() {
	[ -f "$HERE/ground_truth.py" ] ||
		cold_fail "no ground_truth.py beside the tests (make vm-check copies tests/lib/ground_truth.py)"
}

# proc_lines, vmstat_snap, vmstat_counter
# shellcheck source=kernel-patch/tests/vmstatlib.sh
. "$(dirname "${BASH_SOURCE[0]}")/vmstatlib.sh"

# cold_need_counters C... / cold_need_sysctls S...: note each one the
# kernel lacks.  The test still measures what it can (the figures with
# pbitmap off are worth having from any kernel); cold_verdict fails it.
COLD_MISSING=
cold_need_counters() {
	local c
	for c in "$@"; do
		[ -n "$(vmstat_counter "$c")" ] || COLD_MISSING+=" counter $c,"
	done
}

cold_need_sysctls() {
	local s
	for s in "$@"; do
		[ -w "/proc/sys/vm/$s" ] || COLD_MISSING+=" sysctl vm.$s,"
	done
}

# cold_missing: fail now if the kernel lacks what was asked for.
cold_missing() {
	[ -z "$COLD_MISSING" ] ||
		cold_fail "the kernel has no${COLD_MISSING%,} (no prefetch at mmap)"
}

cold_cond() {
	case $1 in
	off)	echo 0 >/proc/sys/vm/pbitmap_enabled ;;
	on)	cold_mmap 1
		echo 1 >/proc/sys/vm/pbitmap_enabled ;;
	exec)	cold_mmap 0
		echo 1 >/proc/sys/vm/pbitmap_enabled ;;
	floor)	echo 0 >/proc/sys/vm/pbitmap_enabled ;;	# the caller warms the copies
	*)	cold_fail "cold_cond: unknown condition $1" ;;
	esac
}

# vm.pbitmap_mmap, where the kernel has it (cold_need_sysctls notes its absence).
cold_mmap() {
	[ ! -e /proc/sys/vm/pbitmap_mmap ] || echo "$1" >/proc/sys/vm/pbitmap_mmap
}

# Leave the guest as the next test expects it: pbitmap off, mmap prefetch
# and plans' look-ups (at exec) at their defaults.
cold_reset() {
	echo 0 >/proc/sys/vm/pbitmap_enabled 2>/dev/null
	echo 1 >/proc/sys/vm/pbitmap_mmap 2>/dev/null
	echo 0 >/proc/sys/vm/pbitmap_plan_lookup_later 2>/dev/null
	return 0
}

meminfo_cached_kb() {
	local k v
	while read -r k v _; do
		[ "$k" = Cached: ] && { echo "$v"; return 0; }
	done <<<"$(proc_lines /proc/meminfo)"
	cold_fail "no Cached: line in /proc/meminfo"
}

# reads_settle: wait (at most 10 s) until vda has no read in flight.  The
# stat file counts a request when it completes: readahead a run started
# and still in flight when the program exits would otherwise be counted in
# the next run, not in its own.
reads_settle() {
	local i ir _w
	for ((i = 0; i < 200; i++)); do
		read -r ir _w </sys/block/vda/inflight
		[ "$ir" = 0 ] && return 0
		sleep 0.05
	done
	cold_fail "vda still had $ir reads in flight after 10 s"
}

cold_run() {
	local label=$1 out=$2 r0 s0 r1 s1 c0 c1 maj wall rc=0
	shift 2
	sync
	if [ -n "${COLD_EVICT:-}" ]; then
		# shellcheck disable=SC2086  # a command and its arguments
		$COLD_EVICT || cold_fail "$label: $COLD_EVICT failed"
	else
		# Twice: drop_slab() stops once a pass frees few objects, and an
		# inode whose dentry went in its last pass stays, with the record
		# pbitmap parsed for it (suspected in t-plan's "without a plan 2
		# records read, want 3", CI of 0ac7013).
		echo 3 >/proc/sys/vm/drop_caches
		echo 3 >/proc/sys/vm/drop_caches
	fi
	# /usr/bin/time is the measuring tool, not the workload: its own cold
	# start (time, the system's ld.so and libc) is read before counting, the
	# same in every condition.
	/usr/bin/time -o /dev/null true
	# one cat for them all: t-libs' floor runs warm every copy
	# shellcheck disable=SC2086
	[ -z "${COLD_WARM:-}" ] || cat $COLD_WARM >/dev/null
	c0=$(meminfo_cached_kb)
	reads_settle
	read -r r0 _ s0 _ </sys/block/vda/stat
	/usr/bin/time -o "$out.time" -f '%F %e' "$@" >"$out" || rc=$?
	reads_settle
	read -r r1 _ s1 _ </sys/block/vda/stat
	c1=$(meminfo_cached_kb)
	[ $rc = 0 ] || cold_fail "$label: '$*' exited with status $rc: $(tail -n 3 "$out.time")"
	read -r maj wall <"$out.time"
	echo "$label $maj $((r1 - r0)) $(((s1 - s0) * 512)) $((c1 - c0)) $wall" >>"$COLD_RESULTS"
}

cold_order() {
	local i=$1 n k
	shift
	n=$#
	local -a c=("$@")
	for ((k = 0; k < n; k++)); do
		printf '%s ' "${c[(k + i) % n]}"
	done
}

# cold_summary PROBLEMS: after the runs: pbitmap off, the table of medians,
# then fail on what the kernel lacks or on PROBLEMS (the counter checks of
# the runs, collected so that the table is printed first).
cold_summary() {
	cold_reset
	cold_medians
	cold_missing
	[ -z "$1" ] || fail "$1"
}

cold_medians() {
	python3 - "$COLD_RESULTS" "$COLD_RESULTS.vars" <<'PY' || cold_fail "cannot summarise $COLD_RESULTS"
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, *v = line.split()
    rows.setdefault(label, []).append([int(x) for x in v[:4]] + [float(v[4])])
fields = ("majflt", "reqs", "bytes", "cache_kb", "wall")
print("%-18s %5s %12s %14s %10s %12s %8s" % ("medians", "runs", "major faults",
      "read requests", "MiB read", "cache MiB", "wall s"))
out = open(sys.argv[2], "w")
for label, v in rows.items():
    # median_low: an observed value, an integer for the counts
    m = [statistics.median_low(col) for col in zip(*v)]
    print("%-18s %5d %12d %14d %10.1f %12.1f %8.2f" % (label, len(v), m[0], m[1],
          m[2] / 2**20, m[3] / 1024, m[4]))
    for f, x in zip(fields, m):
        print("med_%s_%s=%s" % (label.replace("-", "_"), f, x), file=out)
PY
	# shellcheck disable=SC1090
	. "$COLD_RESULTS.vars"
}

# cold_private_copy DIR PROGRAM: copy PROGRAM's executable and every library
# ldd lists for it, except the interpreter (PT_INTERP names the system's),
# into DIR, without their extended attributes; the copy runs with
# LD_LIBRARY_PATH=DIR.  Tests stamp such copies, never the system's files:
# all guest tests share one boot.  Sets COLD_COPIED to the copied paths.
cold_private_copy() {
	local dir=$1 exe interp i libs=() real=() copy=()
	exe=$(readlink -f "$(command -v "$2")") || cold_fail "$2 not found in the guest"
	interp=$(readlink -f "$(readelf -l "$exe" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')")
	mkdir -p "$dir"
	COLD_COPIED=("$dir/${exe##*/}")
	# One readlink and one cp for them all (gdb has 57 libraries, and a
	# process costs a TCG guest tens of ms); cp -L copies each library's
	# file under the name ldd gives it (its soname).
	mapfile -t libs < <(ldd "$exe" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
	((${#libs[@]})) && mapfile -t real < <(readlink -f -- "${libs[@]}")
	((${#real[@]} == ${#libs[@]})) || cold_fail "cannot resolve the libraries of $exe"
	for i in "${!libs[@]}"; do
		[ "${real[i]}" = "$interp" ] && continue
		copy+=("${libs[i]}")
		COLD_COPIED+=("$dir/${libs[i]##*/}")
	done
	cp -L -- "$exe" "${copy[@]}" "$dir/" || cold_fail "cannot copy $exe and its libraries to $dir"
	# Every library must now resolve to the copy.
	local stray
	stray=$(LD_LIBRARY_PATH=$dir ldd "$dir/${exe##*/}" |
		awk -v d="$dir/" '$2 == "=>" && index($3, d) != 1 { print $1 }')
	[ -z "$stray" ] || cold_fail "libraries of the copy of $2 not taken from $dir: $stray"
	((${#COLD_COPIED[@]} > 1)) || cold_fail "$2 has no shared libraries to copy"
}

# cold_prepare NAME PROGRAM [DATA_FILE]: the private copy in $W/NAME, stamped.
cold_prepare() {
	local name=$1 prog=$2 f
	cold_private_copy "$W/$name" "$prog"
	[ $# -lt 3 ] || { cp "$3" "$W/$name/"; COLD_COPIED+=("$W/$name/${3##*/}"); }
	pbitmap add -q "${COLD_COPIED[@]}" || fail "cannot stamp the copies of $prog"
	# one getfattr: it fails when any file lacks the attribute; then which
	getfattr --only-values -n user.pbitmap -- "${COLD_COPIED[@]}" >/dev/null 2>&1 ||
		for f in "${COLD_COPIED[@]}"; do
			getfattr --only-values -n user.pbitmap "$f" >/dev/null 2>&1 ||
				fail "$f: no user.pbitmap attribute after pbitmap add (marker or record)"
		done
	printf '%s\n' "${COLD_COPIED[@]}" >"$name.files"
}

# cold_learn NAME CMD...: ground truth of one cold run of CMD (pbitmap off)
# over the copies; mark exactly the pages it faulted in each copy it touched.
cold_learn() {
	local name=$1 gt=() f touched=() files marked
	shift
	mapfile -t files <"$name.files"
	for f in "${files[@]}"; do gt+=(-f "$f"); done
	echo 0 >/proc/sys/vm/pbitmap_enabled
	python3 "$HERE/ground_truth.py" --require-cold -o "$name.truth" "${gt[@]}" -- "$@" \
		>"$name.want" || fail "ground truth of $name"
	# one python3 (a second or more under TCG): the pages, then the paths
	mapfile -t touched < <(python3 -c '
import json, sys
files = json.load(open(sys.argv[1]))["files"]
print(sum(f["count"] for f in files))
for f in files:
    if f["count"]:
        print(f["path"])' "$name.truth")
	((${#touched[@]})) || fail "cannot read $name.truth"
	marked=${touched[0]}
	touched=("${touched[@]:1}")
	python3 "$HERE/stamp-truth.py" "$name.truth" "${touched[@]}" >"$name.stamped" ||
		fail "cannot mark the pages of $name"
	echo "$name: ${#touched[@]} of ${#files[@]} copies faulted, $marked pages marked"
}
