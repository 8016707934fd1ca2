#!/bin/bash
# Guest test: with vm.pbitmap_enabled=0, exec and mmap do no pbitmap work at
# all (the /proc/vmstat counters stay still while a stamped program runs); with
# it on, the same exec looks its record up once, submits a prefetch, and a
# second run finds the record in the kernel's cache.
set -euo pipefail
W=/var/tmp/t-counters
rm -rf "$W" && mkdir -p "$W" && cd "$W"
fail() { echo "FAIL: $*"; exit 1; }

counter() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
snapshot() {
	for k in pbitmap_cache_miss pbitmap_cache_hit pbitmap_prefetch \
		 pbitmap_pages_submitted pbitmap_pages_marked pbitmap_rejected \
		 pbitmap_unstamped pbitmap_hook_ns; do
		printf '%s=%s ' "$k" "$(counter $k)"
	done
}

[ -n "$(counter pbitmap_cache_miss)" ] || fail "no pbitmap counters in /proc/vmstat"
# 256 KiB of data: files no larger than the readahead window are not prefetched.
printf '#include <stdio.h>\nconst char pad[256 << 10] = { 1 };\nint main(void) { puts("counted"); return pad[0] - 1; }\n' >p.c
gcc -O2 -o p p.c
pbitmap add p
pbitmap set --pages 0-1 p

echo 0 >/proc/sys/vm/pbitmap_enabled
sync; echo 3 >/proc/sys/vm/drop_caches
before=$(snapshot)
for _ in 1 2 3; do [ "$(./p)" = counted ] || fail "program output changed"; done
after=$(snapshot)
echo "off: before: $before"
echo "off: after:  $after"
[ "$before" = "$after" ] || fail "pbitmap counters moved with vm.pbitmap_enabled=0"

echo 1 >/proc/sys/vm/pbitmap_enabled
sync; echo 3 >/proc/sys/vm/drop_caches
s0=$(counter pbitmap_cache_miss); p0=$(counter pbitmap_prefetch); m0=$(counter pbitmap_pages_marked)
[ "$(./p)" = counted ] || fail "program output changed with pbitmap on"
s1=$(counter pbitmap_cache_miss); p1=$(counter pbitmap_prefetch); m1=$(counter pbitmap_pages_marked)
h1=$(counter pbitmap_cache_hit)
[ "$(./p)" = counted ] || fail "program output changed with pbitmap on (second run)"
h2=$(counter pbitmap_cache_hit); s2=$(counter pbitmap_cache_miss)
echo 0 >/proc/sys/vm/pbitmap_enabled
echo "on: cache_miss +$((s1 - s0)) prefetch +$((p1 - p0)) pages_marked +$((m1 - m0)); second run: cache_hit +$((h2 - h1)) cache_miss +$((s2 - s1))"
((s1 > s0)) || fail "no record looked up with pbitmap on"
((p1 > p0)) || fail "no prefetch started for a stamped program"
((m1 - m0 >= 2)) || fail "fewer pages marked than the 2 set"
((h2 > h1)) || fail "the second run did not find the record in the cache"
echo "PASS: off: counters still; on: looked up, prefetched, then cached"
