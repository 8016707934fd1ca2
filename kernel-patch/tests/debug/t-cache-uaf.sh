#!/bin/bash
# Debug-kernel test (make vm-debug-check, KASAN): the record cache's
# use-after-free reproducer (issue 22, finding 4).
#
# Before the fix, an entry could stay hashed after its mapping lost
# AS_PBITMAP_CACHED: two slow misses on one inode both added an entry, the
# LRU eviction of the first cleared the flag, the inode's eviction then did
# not find the second, and the next LRU eviction of that entry cleared a bit
# in the freed inode.  Here: 8 files, each mapped by two processes at the
# same moment right after the inodes were dropped (two slow misses each);
# 1100 other stamped files mapped (the oldest entries evicted); the 8 files
# unlinked (their inodes evicted); 1100 more mapped (every entry left
# evicted).  KASAN must report nothing (the runner also fails the run on
# any KASAN line in the console).
#
# Not in `make check`: slub_debug's poisoning does not cover ext4's inode
# cache (a cache with a constructor is never poisoned, mm/slub.c
# calculate_sizes()), so only KASAN sees a write into a freed inode; the
# KUnit case pbitmap_test_cache_two_slow_misses (t-kunit) covers the rule
# deterministically in `make check`.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/cachelib.sh
. "$HERE/cachelib.sh"
cold_begin t-cache-uaf
cold_need_sysctls pbitmap_enabled pbitmap_mmap
cold_need_counters pbitmap_cache_miss pbitmap_cache_evict
cold_missing
zgrep -q '^CONFIG_KASAN=y' /proc/config.gz ||
	fail "this kernel has no KASAN (make vm-debug-check boots build/kbuild-kasan)"
kasan() { dmesg | grep -c 'KASAN' || true; }

cache_build
for i in $(seq 0 7); do
	stamp_sparse "victim.$i" 1M "$(shuf -i 0-255 -n 100 | sort -n | paste -sd,)"
done
stamp_sparse other 1M 0-3
clone_stamped other o 1100
clone_stamped other p 1100
sync
k0=$(kasan)

cold_cond on
m0=$(vmstat_counter pbitmap_cache_miss)
echo 3 >/proc/sys/vm/drop_caches
at=$(($(date +%s) + 2))
for i in $(seq 0 7); do
	./cache-poke map -1 -a $at "victim.$i" >/dev/null &
	./cache-poke map -1 -a $at "victim.$i" >/dev/null &
done
wait || fail "a concurrent mapping failed"
m1=$(vmstat_counter pbitmap_cache_miss)
echo "concurrent mappings of 8 files after drop_caches: $((m1 - m0)) misses"
((m1 - m0 >= 8)) || fail "only $((m1 - m0)) misses for 8 uncached files"
e0=$(vmstat_counter pbitmap_cache_evict)
./cache-poke map -1 o.* >/dev/null || fail "cannot map the other files"
rm -f victim.*
sync
sleep 2	# the freed inodes pass their RCU grace period
./cache-poke map -1 p.* >/dev/null || fail "cannot map the second set"
e1=$(vmstat_counter pbitmap_cache_evict)
echo "2200 other stamped files mapped: $((e1 - e0)) entries evicted"
((e1 - e0 >= 1100)) || fail "only $((e1 - e0)) evictions: the victims' entries may not have reached the LRU's head"
echo 0 >/proc/sys/vm/pbitmap_enabled
k1=$(kasan)
((k1 == k0)) || fail "KASAN reported: $(dmesg | grep -A20 KASAN | head -n 40)"
cold_reset
echo "PASS: 16 concurrent misses, 2200 evicting adds, 8 unlinks: no KASAN report"
