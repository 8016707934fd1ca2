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
one() {	# LABEL FILES CMD-OF-INSTANCE-1 -- CMD-OF-INSTANCE-2
	local label=$1 list=$2 pe0 pf0 s0 c0 s1 c1 t0 t1 r0 r1 se0 se1 bg before
	local -a first=() second=()
	shift 2
	while [ "$1" != -- ]; do first+=("$1"); shift; done
	shift
	second=("$@")
	sync; echo 3 >/proc/sys/vm/drop_caches; sleep 1
	"${first[@]}" >/dev/null 2>&1 &
	bg=$!
	sleep 8; settle
	cat /var/tmp/fill >/dev/null
	before=$(resident_kib "$list")
	s0=$(vmstat_counter pbitmap_pages_submitted) c0=$(vmstat_counter pbitmap_pages_cached)
	pe0=$(vmstat_counter pbitmap_plan_exec)
	read -r r0 _ se0 _ </sys/block/vda/stat
	t0=${EPOCHREALTIME/./}
	"${second[@]}" >/dev/null 2>&1
	t1=${EPOCHREALTIME/./}
	settle
	read -r r1 _ se1 _ </sys/block/vda/stat
	s1=$(vmstat_counter pbitmap_pages_submitted) c1=$(vmstat_counter pbitmap_pages_cached)
	echo "$label resident-before-KiB $before requests $((r1 - r0)) KiB $(((se1 - se0) / 2)) submitted $((s1 - s0)) cached $((c1 - c0)) ms $(((t1 - t0) / 1000)) plans $(($(vmstat_counter pbitmap_plan_exec) - pe0))"
	kill -9 "$bg" 2>/dev/null || true; pkill -9 -x sleep || true
	wait "$bg" 2>/dev/null || true
}
py=$(readlink -f /usr/bin/python3)
for i in $(seq "$RUNS"); do
	one "gdb run$i" files.gdb /usr/bin/gdb -batch -ex 'shell sleep 120' -- /usr/bin/gdb -batch
	one "python3 run$i" "files.$(basename "$py")" "$py" -c 'import time; time.sleep(120)' -- "$py" -c pass
done
echo 0 >/proc/sys/vm/pbitmap_enabled
rm -f /var/tmp/fill
echo "PASS: t-shared-join"
