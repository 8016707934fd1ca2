#!/bin/bash
# Guest test: prefetch at mmap for programs whose start-up faults are mostly
# in shared libraries and data files.  Private copies of gdb and emacs-nox,
# of every library they link (LD_LIBRARY_PATH), of emacs's dump file
# (--dump-file) and of its preloaded native code (*.eln) are stamped (pbitmap add: ELF sections with their
# user.pbitmap markers, a PBXZ record on the dump file) and marked with
# exactly the pages one run faults (ground_truth.py, readahead and
# fault-around off).  Cold starts of `gdb -batch -nx -ex 'print 1'` and
# `emacs -batch --eval ...` with pbitmap off and on (vm.pbitmap_mmap=1),
# order rotated, RUNS each (default 3), and once exec-only
# (vm.pbitmap_mmap=0) in the middle run; also "floor", pbitmap off with every
# copy already cached (middle run only): the requests for what the program reads otherwise.
# Asserts, for each program, on against off: at least 1.5x fewer read
# requests (medians), page-cache growth at most 5% above off's, the same
# output in every run; with pbitmap on every run prefetches more than the
# executable (a library or the dump file too), and rejects nothing.  Exec-only
# is printed for comparison; it must give the same output and prefetch
# exactly one file (the executable: ld.so is the system's, unstamped).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/hooklat.sh
. "$HERE/hooklat.sh"
cold_begin t-libs
cold_need_ground_truth
cold_need_sysctls pbitmap_enabled pbitmap_mmap
cold_need_counters pbitmap_prefetch pbitmap_rejected

pdmp=$(find /usr/lib/emacs /usr/libexec/emacs -name '*.pdmp' 2>/dev/null | head -n 1)
[ -n "$pdmp" ] || fail "no emacs dump file (*.pdmp) under /usr/lib/emacs or /usr/libexec/emacs"

cold_prepare gdb gdb
cold_prepare emacs emacs "$pdmp"
emacs_exe=$(head -n 1 emacs.files)
# The dump loads its natively compiled preloaded code from
# ../native-lisp/VERSION/preloaded/*.eln, relative to the executable's
# directory: shared objects it maps, so private stamped copies of them too.
eln=$(find /usr/lib/emacs -path '*/native-lisp/*/preloaded' -type d 2>/dev/null | head -n 1)
if [ -n "$eln" ]; then
	eln=${eln%/preloaded}
	mkdir -p "$W/native-lisp/${eln##*/}"
	cp -r "$eln/preloaded" "$W/native-lisp/${eln##*/}/"
	mapfile -t elns < <(find "$W/native-lisp" -name '*.eln' | sort)
	pbitmap add -q "${elns[@]}" || fail "cannot stamp the copies of emacs's .eln files"
	printf '%s\n' "${elns[@]}" >>emacs.files
	echo "emacs: ${#elns[@]} preloaded .eln files copied and stamped"
else
	echo "emacs: built without native compilation, no .eln files to copy"
fi
COLD_WARM=/usr/bin/env	# read by cold_run (coldlib.sh): env only sets LD_LIBRARY_PATH
GDB=(env LD_LIBRARY_PATH="$W/gdb" "$W/gdb/gdb" -batch -nx -ex 'print 1')
EMACS=(env LD_LIBRARY_PATH="$W/emacs" "$emacs_exe" --dump-file="$W/emacs/${pdmp##*/}"
       -batch --eval '(princ (format "x %s\n" emacs-version))')
"${GDB[@]}" >/dev/null || fail "the copy of gdb does not run"
"${EMACS[@]}" >/dev/null || fail "the copy of emacs does not run with its copied dump file"
cold_learn gdb "${GDB[@]}"
cold_learn emacs "${EMACS[@]}"
sync

: >"$COLD_RESULTS"
bad=
for i in $(seq "$RUNS"); do
	for prog in gdb emacs; do
		# Exec-only is printed for comparison, not asserted.
		# "floor": pbitmap off, every copy already cached (COLD_WARM), the
		# rest cold: the requests no prefetch of the copies can save.
		# floor and exec-only: the middle run only (make check's time).
		conds=(off on)
		((i != (RUNS + 1) / 2)) || conds+=(floor exec)
		for c in $(cold_order "$i" "${conds[@]}"); do
			cold_cond "$c"
			COLD_WARM=/usr/bin/env
			[ "$c" != floor ] || COLD_WARM="/usr/bin/env $(tr '\n' ' ' <"$prog.files")"
			p0=$(vmstat_counter pbitmap_prefetch) r0=$(vmstat_counter pbitmap_rejected)
			# The hook's latency, cold: probed in the middle run only,
			# so that the probes' cost stays out of two of three.
			lat=; [ "$c" = on ] && ((i == (RUNS + 1) / 2)) && lat=1
			[ -z "$lat" ] || hooklat_begin
			if [ $prog = gdb ]; then
				cold_run "$prog-$c" "out-$prog-$c-$i" "${GDB[@]}"
			else
				cold_run "$prog-$c" "out-$prog-$c-$i" "${EMACS[@]}"
			fi
			[ -z "$lat" ] || hooklat_end "$prog.lat"
			p1=$(vmstat_counter pbitmap_prefetch) r1=$(vmstat_counter pbitmap_rejected)
			cmp -s "out-$prog-$c-$i" "$prog.want" || fail "$prog, $c, run $i: output differs"
			dp=$((${p1:-0} - ${p0:-0})) dr=$((${r1:-0} - ${r0:-0}))
			((dr == 0)) || bad+=" $prog $c run $i: pbitmap_rejected +$dr;"
			case $c in
			off | floor)	((dp == 0)) || bad+=" $prog off run $i: pbitmap_prefetch +$dp;" ;;
			exec)	((dp == 1)) || bad+=" $prog exec-only run $i: pbitmap_prefetch +$dp, expected +1;" ;;
			on)	((dp >= 2)) ||
					bad+=" $prog on run $i: pbitmap_prefetch +$dp, no library or data file prefetched;" ;;
			esac
		done
	done
done
cold_summary "$bad"
# shellcheck disable=SC2154  # med_* come from cold_medians
for prog in gdb emacs; do
	eval "off_reqs=\$med_${prog}_off_reqs on_reqs=\$med_${prog}_on_reqs"
	eval "off_cache=\$med_${prog}_off_cache_kb on_cache=\$med_${prog}_on_cache_kb"
	eval "floor_reqs=\$med_${prog}_floor_reqs"
	# Issue 10 asks 1.5x for both.  Measured 2026-11-23 with the default
	# merge gap (256 KiB): gdb 537 -> 307 (1.75x), emacs 689 -> 435 (1.58x).
	need=150
	((on_reqs * need <= off_reqs * 100)) ||
		fail "$prog: read requests $off_reqs -> $on_reqs, less than $need/100 x fewer (floor $floor_reqs)"
	((on_cache * 100 <= off_cache * 105)) ||
		fail "$prog: page cache grew $on_cache KiB with pbitmap on, more than 5% above off's $off_cache KiB"
	echo "ok: $prog: read requests $off_reqs -> $on_reqs (floor $floor_reqs), page cache $off_cache -> $on_cache KiB"
	echo "$prog, cold, pbitmap on:"
	hooklat_report "$prog.lat" || fail "no hook latency for $prog"
done
echo "PASS: gdb and emacs 1.5x fewer read requests, page cache within 5% (medians of $RUNS)"
