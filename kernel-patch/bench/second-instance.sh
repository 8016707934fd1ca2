#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# second-instance.sh: a second instance of a program started while the
# first runs, after memory pressure; a guest job, not part of make check
# nor of make bench.  Run in the patched kernel's guest, as a test
# directory of the vm script (copy it there as t-second-instance.sh,
# with kernel-patch/tests/vmstatlib.sh and second-instance-lib.sh beside
# it):
#
#   kernel-patch/scripts/vm --tests DIR     (KERNEL=..., IMAGE=build/guest.img)
#
# Why: the benchmark runs programs from private copies of their files,
# which nothing else maps, so a drop or fill-evict leaves none of their
# pages cached.  On a running system a program's libraries, and the
# program itself when another instance runs, keep the pages in use
# mapped, and reclaim takes the pages around them first: the gaps a
# plan's joins read.  Here gdb's and python3's own files (the guest's
# root, a snapshot) are stamped in place, their bitmaps from `pbitmap
# record`, plans from `pbitmap plan`, with a fixed 1024 KiB join gap (what
# pbitmap-device-gap.service sets on the 150-IOPS disk).  Per run: drop
# the caches, start instance 1 in the background (gdb in `shell sleep`,
# python3 in time.sleep()), let it settle, read a sparse file of 1.25x
# MemTotal (reclaim takes what is not mapped), then time instance 2 and
# count its prefetch (pbitmap_pages_submitted, pbitmap_pages_cached) and
# vda's reads.  RUNS (3) runs of each program.  Prints one line per run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/vmstatlib.sh"
. "$HERE/second-instance-lib.sh"
RUNS=${RUNS:-3}
echo 0 >/proc/sys/vm/pbitmap_enabled
stamp /usr/bin/gdb /usr/bin/gdb -batch
stamp "$(readlink -f /usr/bin/python3)" "$(readlink -f /usr/bin/python3)" -c pass
sync
mem_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
truncate -s $((mem_kb * 1280)) /var/tmp/fill
echo 1 >/proc/sys/vm/pbitmap_mmap
echo 1024 >/proc/sys/vm/pbitmap_merge_gap_kb
echo 1 >/proc/sys/vm/pbitmap_enabled
S0= C0= PE0=
counters_before() {
	S0=$(vmstat_counter pbitmap_pages_submitted) C0=$(vmstat_counter pbitmap_pages_cached)
	PE0=$(vmstat_counter pbitmap_plan_exec)
}
counters_after() {
	echo "submitted $(($(vmstat_counter pbitmap_pages_submitted) - S0))" \
		"cached $(($(vmstat_counter pbitmap_pages_cached) - C0))" \
		"plans $(($(vmstat_counter pbitmap_plan_exec) - PE0))"
}
py=$(readlink -f /usr/bin/python3)
for i in $(seq "$RUNS"); do
	one "gdb run$i" files.gdb /usr/bin/gdb -batch -ex 'shell sleep 120' -- /usr/bin/gdb -batch
	one "python3 run$i" "files.$(basename "$py")" "$py" -c 'import time; time.sleep(120)' -- "$py" -c pass
done
echo 0 >/proc/sys/vm/pbitmap_enabled
rm -f /var/tmp/fill
echo "PASS: t-shared-join"
