#!/bin/bash
# Guest test: the largest record the kernel reads costs a bounded number of
# requests and never holds the CPU (issue 22, finding 6).
#
# craft-big.py makes a sound stamped library with a 4 MiB record (16 planes
# over 8 GiB of sparse content, a run every other granule: the longest
# extent walk a record can ask for).  After drop_caches, a program maps its
# first page (nothing marked there: no prefetch); the mmap() call parses
# the record.  The root disk's reads during that call must be the section
# (the record's two slots, 8 MiB, read ahead whole) and little else: two
# more requests (the inode's block, the mapping program's own faults), each
# at most a readahead window.  So at most 8 MiB + 2 * read_ahead_kb, in at
# most 2 * ceil(8 MiB / max_sectors_kb) + 2 * 2 requests (the two extra
# reads may be split as the section's windows are), plus one per extent
# beyond the first that the section lies in (filefrag: a request never spans
# two).
# Why twice: each readahead window of max_sectors_kb goes out as one or two
# requests, split where its folios' boundaries fall (traced with
# block_rq_issue in two boots: the same 8 MiB went out as 8 and as 12
# requests, every one of them readahead of the section, nothing else; a
# third, untraced boot made 14; a fourth read 84 KiB besides).  The
# record was read a page at a time before, about 1024 synchronous requests.
# The parse must be kept
# (pbitmap_cache_miss +1, no rejection).  On a kernel with the soft-lockup
# detector (the debug kernel of make vm-debug-check), kernel.watchdog_thresh
# is lowered to 1 s, so that a walk which does not yield for 2 s is
# reported, and dmesg must gain no "soft lockup".
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/cachelib.sh
. "$HERE/cachelib.sh"
cold_begin t-record-4m
cold_need_sysctls pbitmap_enabled pbitmap_mmap
cold_need_counters pbitmap_cache_miss pbitmap_rejected
cold_missing
thresh=
if zgrep -q '^CONFIG_SOFTLOCKUP_DETECTOR=y' /proc/config.gz; then
	thresh=$(cat /proc/sys/kernel/watchdog_thresh) || fail "no kernel.watchdog_thresh"
	trap 'echo $thresh >/proc/sys/kernel/watchdog_thresh; cold_reset; cd /; rm -rf "$W"' EXIT
fi
lockups() { dmesg | grep -c 'soft lockup' || true; }
# No program runs between the two snapshots: bash builtins only.
reads() { local r s _; read -r r _ s _ </sys/block/vda/stat; echo "$r $s"; }
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

cache_build
printf 'const char pad[256 << 10] = { 1 };\nint big_value(void) { return pad[0]; }\n' >lib.c
gcc -O2 -shared -fPIC -o lib.so lib.c || fail "cannot build lib.so"
pbitmap add -q lib.so || fail "cannot stamp lib.so"
python3 "$HERE/craft-big.py" lib.so big.so || fail "craft-big.py"
pbitmap verify -q big.so || fail "the tool does not accept the crafted 4 MiB record"
sync
max_kb=$(cat /sys/block/vda/queue/max_sectors_kb)
# The extents the section lies in: a request never spans two.  How many
# depends on the free space the guest image has left.  record_section in a
# command substitution, which waits for its python3: still exiting, that
# python3 faulted its pages back in during the measured call below on the
# debug kernel (6 requests, 408 KiB, past the byte bound).
section=$(record_section big.so) || fail "big.so: no record section (pbitmap show --json)"
read -r sec_off sec_size <<<"$section"
extents=$(filefrag -e -b1 big.so | awk -v a="$sec_off" -v b="$((sec_off + sec_size))" -F'[ :.]+' '
	$2 ~ /^[0-9]+$/ { lo = $3; hi = $4 + 1; if (lo < b && hi > a) n++ } END { print n + 0 }')
((extents >= 1)) || fail "filefrag shows no extent under the section of big.so"
# Two slots of 4 MiB and the 512-byte alignment between them (8193 KiB).
bound=$((2 * ((8193 + max_kb - 1) / max_kb) + extents - 1 + 2 * 2))
bytes_bound=$(((8193 + 2 * $(cat /sys/block/vda/queue/read_ahead_kb)) * 1024))

cold_cond on
[ -z "$thresh" ] || echo 1 >/proc/sys/kernel/watchdog_thresh
l0=$(lockups)
echo 3 >/proc/sys/vm/drop_caches
coproc POKE { ./cache-poke wait-map -1 big.so; }
poke_pid=$POKE_PID	# bash unsets POKE_PID when the coprocess ends
read -r _ pid <&"${POKE[0]}"
read -r ready <&"${POKE[0]}"
[ "$ready" = ready ] || fail "cache-poke did not start: $ready"
m0=$(vmstat_counter pbitmap_cache_miss)
j0=$(vmstat_counter pbitmap_rejected)
read -r r0 s0 < <(reads)
t0=$(now_ms)
echo go >&"${POKE[1]}"
read -r done <&"${POKE[0]}"
t1=$(now_ms)
read -r r1 s1 < <(reads)
m1=$(vmstat_counter pbitmap_cache_miss)
j1=$(vmstat_counter pbitmap_rejected)
wait "$poke_pid" || fail "cache-poke failed"
[ "$done" = done ] || fail "cache-poke did not map big.so: $done"
[ -z "$thresh" ] || echo "$thresh" >/proc/sys/kernel/watchdog_thresh
l1=$(lockups)
echo "cold mmap of a file with a 4 MiB record: $((r1 - r0)) read requests, $(((s1 - s0) * 512)) bytes (bounds $bound and $bytes_bound at max_sectors_kb $max_kb, the section in $extents extent(s)), $((t1 - t0)) ms, miss +$((m1 - m0)), rejected +$((j1 - j0))"
((m1 - m0 == 1 && j1 - j0 == 0)) || fail "the record was not parsed and kept (miss +$((m1 - m0)), rejected +$((j1 - j0)))"
((r1 - r0 <= bound)) || fail "$((r1 - r0)) read requests for one 4 MiB record, at most $bound expected"
(((s1 - s0) * 512 <= bytes_bound)) ||
	fail "$(((s1 - s0) * 512)) bytes read for one 4 MiB record, at most $bytes_bound expected"
if [ -n "$thresh" ]; then
	((l1 == l0)) || fail "soft lockup during the walk: $(dmesg | grep -A5 'soft lockup' | head -n 20)"
	echo "soft-lockup detector on (watchdog_thresh 1 s): nothing reported"
else
	echo "this kernel has no soft-lockup detector: make vm-debug-check runs this test with one"
fi
cold_reset
echo "PASS: a 4 MiB record read in $((r1 - r0)) requests"
