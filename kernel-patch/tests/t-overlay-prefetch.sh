#!/bin/bash
# Guest test: the kernel's prefetch at mmap through overlayfs.  An overlay's
# own inode cannot read pages: its ->mmap puts the real (lower or upper)
# file into the VMA, and the kernel prefetches from that file
# (pbitmap_real_file(), mm/pbitmap/prefetch.c).  In the lower layer, on the
# root ext4: a 64 MiB data file, stamped (PBXZ record in user.pbitmap) with
# exactly the pages `mmap-index clustered` faults (ground_truth.py, as in
# t-mmap-data), and a stamped private copy of ls with its libraries, stamped
# the same way.  The upper layer is on the root ext4 too (tmpfs is not
# prefetched: pbitmap_skipped_fs).  Cold runs through the overlay's paths,
# pbitmap off and on (vm.pbitmap_mmap=1), order rotated, RUNS each (default
# 3), medians:
#   data, lower:  at least 3x fewer read requests and 10x fewer major faults
#                 with pbitmap on; one pbitmap_prefetch per run, and the
#                 pbitmap_prefetch tracepoint names the lower file's inode;
#   ls, lower:    the executable and at least one library prefetched, the
#                 tracepoint naming the lower copy of libc; no more read
#                 requests, fewer major faults;
#   data, upper:  after `chmod` through the overlay copies the file up (data
#                 and user.* attributes), the same assertions as for lower,
#                 with the tracepoint naming the upper file's inode.
# Every run: the program's output is the ground-truth run's; nothing rejected.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/testbed-lib.sh
. "$HERE/testbed-lib.sh"
cold_begin t-overlay-prefetch
T=/sys/kernel/tracing
trap 'cold_reset; echo 0 >"$T/events/pbitmap/pbitmap_prefetch/enable" 2>/dev/null; tb_cleanup; cd /; rm -rf "$W"' EXIT
cold_need_ground_truth
cold_need_sysctls pbitmap_enabled pbitmap_mmap
cold_need_counters pbitmap_prefetch pbitmap_rejected
cold_missing
mountpoint -q "$T" || mount -t tracefs nodev "$T" || fail "cannot mount tracefs on $T"
[ -d "$T/events/pbitmap/pbitmap_prefetch" ] || fail "no pbitmap_prefetch tracepoint"

gcc -std=c11 -O2 -Wall -Wextra -Werror -o mmap-index "$HERE/mmap-index.c" ||
	fail "cannot build mmap-index"
# shellcheck disable=SC2034  # read by cold_run (coldlib.sh)
COLD_WARM="$W/mmap-index /usr/bin/env"
mkdir lower
head -c 64M /dev/urandom >lower/data || fail "cannot write the data file"
cold_private_copy "$W/lower/ls" ls
ls_files=("${COLD_COPIED[@]}")
pbitmap add -q lower/data "${ls_files[@]}" || fail "cannot stamp the lower files"
sync

# Stamped in the lower directory before it becomes a layer: changing a
# lower layer under a mounted overlay is undefined.
echo 0 >/proc/sys/vm/pbitmap_enabled
python3 "$HERE/ground_truth.py" --require-cold -o truth-data.json -f lower/data -- \
	./mmap-index clustered 42 lower/data >want-data || fail "ground truth of mmap-index"
python3 "$HERE/stamp-truth.py" truth-data.json lower/data || fail "cannot stamp lower/data"
gt=()
for f in "${ls_files[@]}"; do gt+=(-f "$f"); done
LS=(env LD_LIBRARY_PATH="$W/lower/ls" "$W/lower/ls/ls" -l /usr/share)
python3 "$HERE/ground_truth.py" --require-cold -o truth-ls.json "${gt[@]}" -- "${LS[@]}" \
	>want-ls || fail "ground truth of ls"
mapfile -t touched < <(python3 -c '
import json, sys
for f in json.load(open(sys.argv[1]))["files"]:
    if f["count"]:
        print(f["path"])' truth-ls.json)
python3 "$HERE/stamp-truth.py" truth-ls.json "${touched[@]}" || fail "cannot stamp the copy of ls"
sync

merged=$(tb_overlay "$W/lower") || fail "$merged"
upper=${merged%/merged}/upper
grep -q " $merged overlay " /proc/mounts || fail "no overlay mounted at $merged"
LS=(env LD_LIBRARY_PATH="$merged/ls" "$merged/ls/ls" -l /usr/share)
"${LS[@]}" | cmp -s - want-ls || fail "ls through the overlay prints other output than in the lower directory"

# traced_ino INO: the last run's prefetches include one of inode INO.
traced_ino() { grep -q " ino=$1 " "$T/trace"; }
# traced: the last run's prefetches, on one line (nothing if there were none).
traced() {
	sed -n 's/.* \(ino=[0-9]* name=[^ ]*\) .* \(requests=[0-9]* submitted=[0-9]*\).*/ \1 \2;/p' "$T/trace" |
		tr -d '\n'
}
echo 1 >"$T/events/pbitmap/pbitmap_prefetch/enable"

# runs NAME WANT INO CMD...: RUNS cold runs of CMD, off and on, labelled
# NAME-off and NAME-on; each prints WANT; with pbitmap on, the tracepoint
# must name inode INO and pbitmap_prefetch grow by at least MIN_PREFETCH
# (exactly that much when EXACT=1).  Problems are collected in $bad.
bad=
runs() {
	local name=$1 want=$2 ino=$3 i c p0 p1 r0 r1 dp
	shift 3
	for i in $(seq "$RUNS"); do
		for c in $(cold_order "$i" off on); do
			cold_cond "$c"
			echo >"$T/trace"
			p0=$(vmstat_counter pbitmap_prefetch) r0=$(vmstat_counter pbitmap_rejected)
			cold_run "$name-$c" "out-$name-$c-$i" "$@"
			p1=$(vmstat_counter pbitmap_prefetch) r1=$(vmstat_counter pbitmap_rejected)
			cmp -s "out-$name-$c-$i" "$want" || fail "$name-$c run $i: output differs from the ground-truth run"
			dp=$((p1 - p0))
			((r1 == r0)) || bad+=" $name-$c run $i: pbitmap_rejected +$((r1 - r0));"
			if [ "$c" = off ]; then
				((dp == 0)) || bad+=" $name-off run $i: pbitmap_prefetch +$dp;"
				continue
			fi
			((dp >= MIN_PREFETCH)) && { [ "$EXACT" = 0 ] || ((dp == MIN_PREFETCH)); } ||
				bad+=" $name-on run $i: pbitmap_prefetch +$dp, expected $([ "$EXACT" = 1 ] || echo "at least ")$MIN_PREFETCH;"
			traced_ino "$ino" ||
				bad+=" $name-on run $i: no prefetch of inode $ino traced:$(traced);"
			((i > 1)) || echo "$name-on run 1: pbitmap_prefetch +$dp:$(traced)"
		done
	done
}

: >"$COLD_RESULTS"
MIN_PREFETCH=1 EXACT=1 runs lower "$W/want-data" "$(stat -c %i lower/data)" \
	./mmap-index clustered 42 "$merged/data"
# exec maps ls itself, ld.so (the system's, unstamped) maps the libraries.
MIN_PREFETCH=2 EXACT=0 runs ls "$W/want-ls" "$(stat -c %i lower/ls/libc.so.6)" "${LS[@]}"

# Copy-up: a change of mode through the overlay copies the whole file to
# the upper layer (this kernel has no metacopy), with its user.* attributes
# (ovl_copy_xattr()).  The record still describes the copy: a PBXZ record
# holds its own content size, which the copy has, and the same bytes.  So
# the upper file is prefetched like the lower one was.
cold_cond off
chmod 0600 "$merged/data" || fail "chmod through the overlay failed"
[ -f "$upper/data" ] || fail "chmod did not copy data up to $upper"
cmp -s "$upper/data" lower/data || fail "the copied-up file differs from the lower one"
[ "$(getfattr --absolute-names --only-values -n user.pbitmap "$upper/data" | sha256sum)" = \
  "$(getfattr --only-values -n user.pbitmap lower/data | sha256sum)" ] ||
	fail "copy-up did not copy user.pbitmap: $(getfattr -d -m - "$upper/data" 2>&1 | tr '\n' ' ')"
echo "copy-up: $upper/data (inode $(stat -c %i "$upper/data")) holds the lower file's bytes and user.pbitmap"
MIN_PREFETCH=1 EXACT=1 runs upper "$W/want-data" "$(stat -c %i "$upper/data")" \
	./mmap-index clustered 42 "$merged/data"
cold_summary "$bad"

# shellcheck disable=SC2154  # med_* come from cold_medians
{
	for layer in lower upper; do
		eval "off_reqs=\$med_${layer}_off_reqs on_reqs=\$med_${layer}_on_reqs"
		eval "off_maj=\$med_${layer}_off_majflt on_maj=\$med_${layer}_on_majflt"
		((on_reqs * 3 <= off_reqs)) ||
			fail "data, $layer: read requests $off_reqs -> $on_reqs, less than 3x fewer"
		((on_maj * 10 <= off_maj)) ||
			fail "data, $layer: major faults $off_maj -> $on_maj, less than 10x fewer"
	done
	((med_ls_on_reqs <= med_ls_off_reqs)) ||
		fail "ls: more read requests with pbitmap on ($med_ls_off_reqs -> $med_ls_on_reqs)"
	((med_ls_on_majflt < med_ls_off_majflt)) ||
		fail "ls: major faults $med_ls_off_majflt -> $med_ls_on_majflt, not fewer"
	echo "PASS: through overlayfs, data from the lower layer: read requests $med_lower_off_reqs -> $med_lower_on_reqs," \
		"major faults $med_lower_off_majflt -> $med_lower_on_majflt; after copy-up, from the upper layer:" \
		"$med_upper_off_reqs -> $med_upper_on_reqs, $med_upper_off_majflt -> $med_upper_on_majflt;" \
		"ls: $med_ls_off_reqs -> $med_ls_on_reqs, $med_ls_off_majflt -> $med_ls_on_majflt (medians of $RUNS)"
}
