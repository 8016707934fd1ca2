#!/bin/bash
# The pbitmap sysctls exist with their defaults: vm.pbitmap_enabled,
# vm.pbitmap_early_fault and vm.mmap_slurp_all are 0, vm.pbitmap_mmap is 1,
# vm.pbitmap_merge_gap_kb is -1 (the gap from each device's cost),
# vm.pbitmap_max_prefetch_kb is 32768, vm.pbitmap_plan_lookup_later is 0 and
# vm.pbitmap_plan_meta is 1 (a table read wherever its rules allow) (as
# Documentation/admin-guide/sysctl/vm.rst says).
set -uo pipefail
bad=0
for sv in pbitmap_enabled=0 pbitmap_early_fault=0 mmap_slurp_all=0 pbitmap_mmap=1 \
	  pbitmap_merge_gap_kb=-1 pbitmap_max_prefetch_kb=32768 pbitmap_plan_lookup_later=0 \
	  pbitmap_plan_meta=1; do
	s=${sv%=*} want=${sv#*=}
	f=/proc/sys/vm/$s
	if [ ! -e "$f" ]; then
		echo "FAIL: $f does not exist"; bad=1; continue
	fi
	v=$(cat "$f")
	if [ "$v" != "$want" ]; then
		echo "FAIL: vm.$s is $v, want $want"; bad=1
	else
		echo "ok: vm.$s = $v"
	fi
done
exit $bad
