#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# docs/bench/2026-11-30-wide-gap-daemon.md, section 6: a 256 MiB file read four ways, requests counted.
set -u
cd /mnt/job
gcc -O2 -o /tmp/rd rd.c || exit 1
F=/var/tmp/big
dd if=/dev/urandom of=$F bs=1M count=256 status=none; sync
DEV=$(lsblk -no PKNAME $(findmnt -no SOURCE /var/tmp) 2>/dev/null); DEV=${DEV:-vda}
grep -H . /sys/block/$DEV/queue/{read_ahead_kb,max_sectors_kb,max_segments,max_segment_size} | tee $RESULTS/out.txt
uname -r >> $RESULTS/out.txt
for mode in willneed populate read sparse willneed populate read sparse; do
	sync; echo 3 > /proc/sys/vm/drop_caches; sleep 1
	read -r r0 m0 s0 _ < /sys/block/$DEV/stat
	/tmp/rd $mode $F >/dev/null
	sleep 3
	read -r r1 m1 s1 _ < /sys/block/$DEV/stat
	c=$(awk '/^Cached:/{print $2}' /proc/meminfo)
	echo "$mode requests=$((r1-r0)) merged=$((m1-m0)) MiB=$(((s1-s0)/2048)) KiB/request=$(( (s1-s0)/2/((r1-r0)>0?(r1-r0):1) ))" | tee -a $RESULTS/out.txt
done
rm -f $F
