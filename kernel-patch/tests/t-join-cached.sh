#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# t-join-cached: a prefetch reads no gap to join pages already cached.
#
# Runs of marked pages are joined across the gaps between them, which are
# read to save a request (vm.pbitmap_merge_gap_kb).  That pays only where
# pages on both sides of a gap are read: a gap between marked pages that
# are cached already is read for nothing (a second gdb started after
# memory pressure, while the first ran, read 21.5 MiB with a 1 MiB gap
# where 11.4 were needed: kernel-patch/bench/second-instance.sh).  0027.
#
# A data file of 8 MiB is stamped with two runs, pages 0-15 and 128-143,
# and mapped with a fixed gap of 1024 KiB, which joins them.  Three copies,
# so that no mapping falls in another's repeat window, each evicted first
# (POSIX_FADV_DONTNEED, checked with mincore):
#   cold      nothing cached: the joined run, 144 pages, is submitted
#   both      both runs cached (read with readahead off): nothing submitted
#   first     the first run cached: the second run's 16 pages submitted,
#             not the gap before it
# Each asserts pbitmap_pages_submitted exactly, pbitmap_pages_cached 0 (no
# page of a run read is cached, and the pages trimmed off are not read),
# and the pages mincore then finds in each run, the gap and the rest
# (tests/lib/resident.py).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-join-cached
gap_was=$(cat /proc/sys/vm/pbitmap_merge_gap_kb 2>/dev/null || echo -1)
cleanup() {
	cold_reset
	echo "$gap_was" >/proc/sys/vm/pbitmap_merge_gap_kb 2>/dev/null || true
	cd /
	rm -rf "$W"
}
trap cleanup EXIT
cold_need_sysctls pbitmap_enabled pbitmap_mmap pbitmap_merge_gap_kb
cold_need_counters pbitmap_prefetch pbitmap_pages_submitted pbitmap_pages_cached
cold_missing
[ "$(getconf PAGESIZE)" = 4096 ] || fail "the test's page numbers assume 4 KiB pages"

[ -f "$HERE/resident.py" ] || fail "no resident.py beside the tests (make vm-check copies tests/lib/resident.py)"
[ -f "$HERE/pagecache.py" ] || fail "no pagecache.py beside the tests (make vm-check copies tests/lib/pagecache.py)"
pages() { python3 "$HERE/pagecache.py" "$@"; }
# The pages cached of the first run, the gap, the second run and the rest
# (resident.py maps the file to ask mincore(): called with pbitmap off).
resident() { python3 "$HERE/resident.py" "$1" 0-15 16-127 128-143 144-2047; }

head -c 8M /dev/urandom >data || fail "cannot write the data file"
pbitmap add -q --page-shift 12 data || fail "pbitmap add failed"
pbitmap set --pages 0-15,128-143 data || fail "pbitmap set failed"
for c in cold both first; do cp --preserve=xattr data "data-$c" || fail "cannot copy data"; done
sync
echo 1024 >/proc/sys/vm/pbitmap_merge_gap_kb

# case NAME CACHED-PAGES WANT-SUBMITTED WANT-CACHED WANT-RESIDENT
case_run() {
	local f=data-$1 s0 c0 p0 s c p resident
	cold_cond off
	pages evict "$f"
	[ "$(resident "$f")" = "0 0 0 0" ] || fail "$1: $f not evicted: $(resident "$f")"
	for r in $2; do pages cache "$f" "$r"; done
	cold_cond on
	s0=$(vmstat_counter pbitmap_pages_submitted) c0=$(vmstat_counter pbitmap_pages_cached)
	p0=$(vmstat_counter pbitmap_prefetch)
	pages map "$f"
	reads_settle
	s=$(vmstat_delta pbitmap_pages_submitted "$s0") c=$(vmstat_delta pbitmap_pages_cached "$c0")
	p=$(vmstat_delta pbitmap_prefetch "$p0")
	cold_cond off
	resident=$(resident "$f")
	echo "$1: cached before ${2:-nothing}; prefetches $p, pages submitted $s, found cached $c; resident after (run, gap, run, rest): $resident"
	[ "$p" = 1 ] || fail "$1: $p prefetches for one mapping, not 1"
	[ "$s" = "$3" ] || fail "$1: $s pages submitted, not $3"
	[ "$c" = "$4" ] || fail "$1: $c pages found cached, not $4"
	[ "$resident" = "$5" ] || fail "$1: resident after the mapping: $resident, not $5"
}
case_run cold "" 144 0 "16 112 16 0"
case_run both "0-15 128-143" 0 0 "16 0 16 0"
case_run first "0-15" 16 0 "16 0 16 0"
echo "PASS: a 1024 KiB gap joins two runs into 144 pages read cold; with both runs cached nothing is read, with the first cached only the second's 16 pages"
