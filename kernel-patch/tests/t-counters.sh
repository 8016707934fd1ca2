#!/bin/bash
# Guest test: with vm.pbitmap_enabled=0, exec does no pbitmap work at all
# (the /proc/vmstat counters stay still while a stamped program runs); with
# it on, the same exec reads the section header table and submits a prefetch.
set -euo pipefail
W=/var/tmp/t-counters
rm -rf "$W" && mkdir -p "$W" && cd "$W"
fail() { echo "FAIL: $*"; exit 1; }

counter() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
snapshot() {
	for k in pbitmap_shdr_read pbitmap_prefetch pbitmap_pages_submitted \
		 pbitmap_pages_marked pbitmap_rejected; do
		printf '%s=%s ' "$k" "$(counter $k)"
	done
}

[ -n "$(counter pbitmap_shdr_read)" ] || fail "no pbitmap counters in /proc/vmstat"
printf '#include <stdio.h>\nint main(void) { puts("counted"); return 0; }\n' >p.c
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
s0=$(counter pbitmap_shdr_read); p0=$(counter pbitmap_prefetch); m0=$(counter pbitmap_pages_marked)
[ "$(./p)" = counted ] || fail "program output changed with pbitmap on"
s1=$(counter pbitmap_shdr_read); p1=$(counter pbitmap_prefetch); m1=$(counter pbitmap_pages_marked)
echo 0 >/proc/sys/vm/pbitmap_enabled
echo "on: shdr_read +$((s1 - s0)) prefetch +$((p1 - p0)) pages_marked +$((m1 - m0))"
((s1 > s0)) || fail "section header table not read with pbitmap on"
((p1 > p0)) || fail "no prefetch started for a stamped program"
((m1 - m0 >= 2)) || fail "fewer pages marked than the 2 set"
echo "PASS: off: counters still; on: read and prefetched"
