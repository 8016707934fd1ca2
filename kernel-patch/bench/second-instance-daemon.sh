#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# second-instance-daemon.sh: second-instance.sh for pbitmapd on Debian's
# own 6.12 (no pbitmap patch): a second instance of a program started
# while the first runs, after memory pressure, with pbitmapd's
# PBITMAP_DAEMON_SKIP_CACHED=yes (a range whose pages are all cached left
# out before ranges are joined) against =no, alternately in one boot.  A
# guest job, not part of make check nor of make bench: copy it into a test
# directory as t-second-instance-daemon.sh with build/pbitmapd and
# second-instance-lib.sh beside it, and run the stock kernel on it:
#
#   KERNEL=build/stock/vmlinuz INITRD=build/stock/initrd.img \
#     VM_RELEASE=$(cat build/stock/release) VM_TCG_THREAD=single \
#     kernel-patch/scripts/vm --tests DIR
#
# gdb's and python3's own files (the guest's root, a snapshot) are stamped
# in place, their bitmaps from `pbitmap record`, plans from `pbitmap
# plan`; pbitmapd with a fixed 1024 KiB join gap (what
# pbitmap-device-gap.service sets on the 150-IOPS disk) and learning off.
# Per run: drop the caches, start instance 1 in the background, let it
# settle, read a sparse file of 1.25x MemTotal, then time instance 2 and
# count vda's reads and what the daemon asked for (its extents and bytes).
# Every program runs as root, who owns the files: cachestat(2) answers.
# RUNS (3) runs of each program under each setting.  One line per run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PBITMAPD=$HERE/pbitmapd
. "$HERE/second-instance-lib.sh"
W=/var/tmp/second-instance-daemon
RUNS=${RUNS:-3}
[ ! -e /proc/sys/vm/pbitmap_enabled ] || { echo "FAIL: $(uname -r) has the pbitmap patch: run Debian's"; exit 1; }
[ -x "$PBITMAPD" ] || { echo "FAIL: no pbitmapd beside the job"; exit 1; }
rm -rf "$W" && mkdir -p "$W" && cd "$W"
counter() { awk -v k="$1" '$1 == k { print $2 }' status; }
DPID=
start_daemon() {	# SKIP_CACHED
	printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_JOIN_GAP_KB=1024\nPBITMAP_DAEMON_CHILD_CPU_S=10\nPBITMAP_DAEMON_SKIP_CACHED=%s\n' \
		"$1" >d.conf
	rm -f status
	"$PBITMAPD" -c d.conf -s "$W/status" 2>>daemon.log &
	DPID=$!
	for _ in $(seq 100); do [ -s status ] && return 0; sleep 0.1; done
	echo "FAIL: pbitmapd wrote no status"; exit 1
}
stop_daemon() { [ -z "$DPID" ] || { kill "$DPID"; wait "$DPID" || true; DPID=; }; }
trap stop_daemon EXIT
stamp /usr/bin/gdb /usr/bin/gdb -batch
stamp "$(readlink -f /usr/bin/python3)" "$(readlink -f /usr/bin/python3)" -c pass
sync
mem_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
truncate -s $((mem_kb * 1280)) /var/tmp/fill
E0= B0=
counters_before() {	# the status file is written at most once a second
	sleep 1.1
	E0=$(counter extents) B0=$(counter bytes)
}
counters_after() {
	sleep 1.1
	echo "daemon-extents $(($(counter extents) - E0)) daemon-KiB $((($(counter bytes) - B0) / 1024))"
}
py=$(readlink -f /usr/bin/python3)
for i in $(seq "$RUNS"); do
	for skip in yes no; do
		start_daemon "$skip"
		one "gdb run$i skip-cached=$skip" files.gdb /usr/bin/gdb -batch -ex 'shell sleep 120' -- /usr/bin/gdb -batch
		one "python3 run$i skip-cached=$skip" "files.$(basename "$py")" "$py" -c 'import time; time.sleep(120)' -- "$py" -c pass
		stop_daemon
	done
done
rm -f /var/tmp/fill
echo "PASS: t-second-instance-daemon"
