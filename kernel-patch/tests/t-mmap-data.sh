#!/bin/bash
# Guest test: the kernel's prefetch at mmap for a data file.  A 64 MiB file
# is read through a read-only mapping by mmap-index (mmap-index.c), once
# like index lookups (clustered: 300 reads in 30 clusters) and once at 300
# scattered pages.  Each mode has its own copy of the file, stamped
# (user.pbitmap, PBXZ) with exactly the pages that mode faults, measured by
# ground_truth.py with readahead and fault-around off.  Cold runs with
# pbitmap off and on (vm.pbitmap_enabled, vm.pbitmap_mmap=1), alternating,
# RUNS each (default 3), medians:
#   clustered: at least 3x fewer read requests and 10x fewer major faults;
#   scattered: at least 10x fewer major faults, no more read requests;
#   both: the output (a checksum of the bytes read) identical to the
#   ground-truth run's; one pbitmap_prefetch per run with pbitmap on, none
#   with it off; with the gap from the device (vm.pbitmap_merge_gap_kb -1),
#   the pages submitted at most the marked ones plus half a readahead window
#   per marked run (pbitmap_join_within()'s budget).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-mmap-data
cold_need_ground_truth
cold_need_sysctls pbitmap_enabled pbitmap_mmap pbitmap_merge_gap_kb
cold_need_counters pbitmap_prefetch pbitmap_pages_submitted pbitmap_pages_marked

gcc -std=c11 -O2 -Wall -Wextra -Werror -o mmap-index "$HERE/mmap-index.c" ||
	fail "cannot build mmap-index"
COLD_WARM=$W/mmap-index	# read by cold_run (coldlib.sh)
head -c 64M /dev/urandom >data-clustered || fail "cannot write the data file"
cp data-clustered data-scattered
sync

echo 0 >/proc/sys/vm/pbitmap_enabled
for mode in clustered scattered; do
	pbitmap add -q "data-$mode"
	python3 "$HERE/ground_truth.py" --require-cold -o "truth-$mode.json" -f "data-$mode" -- \
		./mmap-index "$mode" 42 "data-$mode" >"want-$mode" || fail "ground truth of the $mode run"
	python3 "$HERE/stamp-truth.py" "truth-$mode.json" "data-$mode" || fail "cannot stamp data-$mode"
	[ "$(getfattr --only-values -n user.pbitmap "data-$mode" | head -c 4)" = PBXZ ] ||
		fail "data-$mode carries no PBXZ record in user.pbitmap"
	# What an ideal prefetch would submit: the marked granules, runs closer
	# than the merge gap joined (printed, not asserted).  With the gap from
	# the device (-1), a rotational disk's, the most it joins.
	gap_kb=$(cat /proc/sys/vm/pbitmap_merge_gap_kb 2>/dev/null || echo -1)
	((gap_kb >= 0)) || gap_kb=256
	pbitmap show --json "data-$mode" | python3 -c '
import json, sys
r, gap = json.load(sys.stdin)[0], int(sys.argv[1]) << 10
ext, last = 0, None
for a, b in r["prefetch"]["ranges"]:
    if last is None or (a - last - 1) * r["page_size"] > gap:
        ext += 1
    last = b
print("%s: %d granules of %d KiB marked in %d ranges, %d extents once gaps <= %d KiB merge"
      % (sys.argv[2], r["prefetch"]["pages"], r["page_size"] >> 10,
         len(r["prefetch"]["ranges"]), ext, gap >> 10))' "$gap_kb" "data-$mode"
done

# The file's device's readahead window, in pages (a partition shares its disk's).
majmin=$(stat -c '%Hd:%Ld' data-clustered)
ra_kb=$(cat "/sys/dev/block/$majmin/queue/read_ahead_kb" 2>/dev/null ||
	cat "/sys/dev/block/$majmin/../queue/read_ahead_kb" 2>/dev/null) ||
	fail "no read_ahead_kb for the device $majmin of the data files"
ra_pages=$((ra_kb * 1024 / $(getconf PAGESIZE)))
gap_kb=$(cat /proc/sys/vm/pbitmap_merge_gap_kb)
declare -A runs
for mode in clustered scattered; do
	runs[$mode]=$(pbitmap show --json "data-$mode" |
		python3 -c 'import json, sys; print(len(json.load(sys.stdin)[0]["prefetch"]["ranges"]))')
done

checks_out() {		# label output-file mode
	cmp -s "$2" "want-$3" || fail "$1: output differs from the ground-truth run: $(cat "$2")"
}
: >"$COLD_RESULTS"
bad_prefetch=
for mode in clustered scattered; do
	for i in $(seq "$RUNS"); do
		for c in $(cold_order "$i" off on); do
			cold_cond "$c"
			p0=$(vmstat_counter pbitmap_prefetch)
			m0=$(vmstat_counter pbitmap_pages_marked) s0=$(vmstat_counter pbitmap_pages_submitted)
			cold_run "$mode-$c" "out-$mode-$c-$i" ./mmap-index "$mode" 42 "data-$mode"
			p1=$(vmstat_counter pbitmap_prefetch)
			m1=$(vmstat_counter pbitmap_pages_marked) s1=$(vmstat_counter pbitmap_pages_submitted)
			checks_out "$mode-$c run $i" "out-$mode-$c-$i" "$mode"
			want=0; [ "$c" = on ] && want=1
			[ "$((${p1:-0} - ${p0:-0}))" = $want ] ||
				bad_prefetch+=" $mode-$c run $i: pbitmap_prefetch ${p0:-none} -> ${p1:-none}, expected +$want;"
			[ "$c" = on ] || continue
			marked=$((m1 - m0)) submitted=$((s1 - s0))
			room=$((runs[$mode] * (ra_pages / 2)))
			bound="fixed gap ${gap_kb} KiB, no bound"
			((gap_kb >= 0)) || bound="gap from the device; at most marked + $room pages of gaps = $((marked + room))"
			echo "$mode run $i: $marked pages marked in ${runs[$mode]} runs, $submitted submitted ($bound)"
			if ((gap_kb < 0 && submitted > marked + room)); then
				bad_prefetch+=" $mode run $i: $submitted pages submitted for $marked marked in ${runs[$mode]} runs, more than half a readahead window ($ra_pages pages) per run;"
			fi
		done
	done
done
cold_summary "$bad_prefetch"

# shellcheck disable=SC2154  # med_* come from cold_medians
{
	((med_clustered_on_reqs * 3 <= med_clustered_off_reqs)) ||
		fail "clustered: read requests $med_clustered_off_reqs -> $med_clustered_on_reqs, less than 3x fewer"
	((med_clustered_on_majflt * 10 <= med_clustered_off_majflt)) ||
		fail "clustered: major faults $med_clustered_off_majflt -> $med_clustered_on_majflt, less than 10x fewer"
	((med_scattered_on_majflt * 10 <= med_scattered_off_majflt)) ||
		fail "scattered: major faults $med_scattered_off_majflt -> $med_scattered_on_majflt, less than 10x fewer"
	((med_scattered_on_reqs <= med_scattered_off_reqs)) ||
		fail "scattered: more read requests with pbitmap on ($med_scattered_off_reqs -> $med_scattered_on_reqs)"
	echo "PASS: clustered: read requests $med_clustered_off_reqs -> $med_clustered_on_reqs," \
		"major faults $med_clustered_off_majflt -> $med_clustered_on_majflt;" \
		"scattered: read requests $med_scattered_off_reqs -> $med_scattered_on_reqs," \
		"major faults $med_scattered_off_majflt -> $med_scattered_on_majflt (medians of $RUNS)"
}
