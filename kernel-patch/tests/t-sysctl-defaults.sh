#!/bin/bash
# The pbitmap sysctls exist with their defaults: vm.pbitmap_enabled,
# vm.pbitmap_early_fault and vm.mmap_slurp_all are 0, and
# vm.pbitmap_max_prefetch_kb exists.  (Fails until the patches adding them
# are in kernel-patch/series.)
set -uo pipefail
bad=0
for s in pbitmap_enabled pbitmap_early_fault mmap_slurp_all; do
	f=/proc/sys/vm/$s
	if [ ! -e "$f" ]; then
		echo "FAIL: $f does not exist"; bad=1; continue
	fi
	v=$(cat "$f")
	if [ "$v" != 0 ]; then
		echo "FAIL: vm.$s is $v, want 0"; bad=1
	else
		echo "ok: vm.$s = 0"
	fi
done
f=/proc/sys/vm/pbitmap_max_prefetch_kb
if [ -e "$f" ]; then
	echo "ok: vm.pbitmap_max_prefetch_kb = $(cat "$f")"
else
	echo "FAIL: $f does not exist"; bad=1
fi
exit $bad
