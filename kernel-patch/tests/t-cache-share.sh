#!/bin/bash
# Guest test: one user's stamped files cannot push another user's parsed
# records out of the record cache beyond their share (issue 22, finding 3).
#
# The cache keeps at most 1024 entries and 4 MiB of extents (mm/pbitmap/
# cache.c).  A victim (uid 1001) maps 40 stamped data files whose records
# mark 4 pages (one extent each); then an attacker (uid 1002) maps 200
# files whose records mark every other page of 4096 (2048 extents, the
# most an entry keeps: about 33 KiB each, 6.5 MiB in all, so the 4 MiB cap
# binds).  The attacker's mapping must evict entries (pbitmap_cache_evict
# grows: the cap did bind), and the victim's second mapping of its 40 files
# must find all 40 in the cache: 40 hits and no miss for the victim's pid
# (pbitmap_lookup tracepoint).  Before per-user shares, the oldest entries went first: the
# victim's.  Only the first page of each file is mapped, so the test reads
# no data; the files are sparse.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/cachelib.sh
. "$HERE/cachelib.sh"
cold_begin t-cache-share
trap 'trace_lookups_off; cold_reset; cd /; rm -rf "$W"' EXIT
chmod 755 "$W"
cold_need_sysctls pbitmap_enabled pbitmap_mmap
cold_need_counters pbitmap_cache_evict
cold_missing
VICTIM=1001 ATTACKER=1002

cache_build
stamp_sparse small 1M 0-3
clone_stamped small v 40
pages=$(seq -s, 0 2 4094)
stamp_sparse big 16M "$pages"
clone_stamped big a 200

cold_cond on
trace_lookups_on
# poke UID PASS FILE...: map FILEs as UID; prints its pid's hits and misses.
poke() {
	local uid=$1 pass=$2 pid
	shift 2
	setpriv --reuid="$uid" --regid="$uid" --clear-groups ./cache-poke map -1 "$@" >"$pass.out" ||
		fail "$pass: cannot map the files"
	read -r _ pid <"$pass.out"
	echo "$(trace_lookups "$pid" hit) $(trace_lookups "$pid" miss)"
}
e0=$(vmstat_counter pbitmap_cache_evict)
read -r h1 m1 <<<"$(poke $VICTIM first v.*)"
echo "victim, first mapping: $h1 hits, $m1 misses"
((m1 == 40)) || fail "the victim's first mapping of 40 files missed $m1 times, expected 40"
e1=$(vmstat_counter pbitmap_cache_evict)
read -r h2 m2 <<<"$(poke $ATTACKER attacker a.*)"
e2=$(vmstat_counter pbitmap_cache_evict)
echo "attacker, 200 records of 2048 extents: $m2 misses, $((e2 - e1)) entries evicted"
((e2 - e1 > 0)) || fail "no entry was evicted: the 4 MiB cap did not bind (2048-extent records expected)"
read -r h3 m3 <<<"$(poke $VICTIM second v.*)"
e3=$(vmstat_counter pbitmap_cache_evict)
echo "victim, second mapping: $h3 hits, $m3 misses, $((e3 - e2)) entries evicted"
((h3 == 40 && m3 == 0)) ||
	fail "the attacker's files pushed the victim's entries out: $m3 of 40 missed"
trace_lookups_off
cold_reset
echo "PASS: 40 of the victim's entries kept while the attacker's 200 large records evicted $((e2 - e1)) of its own"
