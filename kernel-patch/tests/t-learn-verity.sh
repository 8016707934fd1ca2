#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# t-learn-verity: no learned write while fs-verity is being enabled.
#
# FS_IOC_ENABLE_VERITY hashes the file with the inode lock dropped, while
# IS_VERITY() is still false (fs/verity/enable.c); the learned write
# takes no write access (FOP_OVERWRITE_UNOPENED), so deny_write_access()
# does not stop it.  A byte written after the hash passed its page fails
# verification for good once the page is read again: EIO.
#
# On an ext4 with the verity feature, three rounds: a learner maps a
# stamped program with a 64 MiB section of its own (so that hashing takes
# seconds under TCG) and stays in its window; with the cache dropped,
# fsverity enable starts; once it is inside FS_IOC_ENABLE_VERITY
# (a kprobe on fsverity_ioctl_enable) and while it hashes (asserted: the flush returns
# before enable does) vm.pbitmap_learn_flush writes the pending set back.  Asserts:
# nothing written (pbitmap_learn_written +0) and the skip counted as
# integrity (pbitmap_learn_skip_integrity +1) each round; verity is on;
# after drop_caches the whole file reads without EIO.  Before the fix
# the write went in during the hash.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/testbed-lib.sh
. "$HERE/testbed-lib.sh"
cold_begin t-learn-verity
VM=/proc/sys/vm
trap 'learn_reset; cold_reset; tb_cleanup; cd /; rm -rf "$W"' EXIT
cold_need_sysctls pbitmap_enabled pbitmap_learn pbitmap_learn_interval_s pbitmap_learn_window_ms \
	pbitmap_learn_flush
cold_need_counters pbitmap_learn_written pbitmap_learn_sets pbitmap_learn_skip_integrity
cold_missing
command -v fsverity >/dev/null || fail "no fsverity in the guest (make-image installs it)"
command -v objcopy >/dev/null || fail "no objcopy in the guest (binutils)"

gcc -std=c11 -O2 -Wall -Wextra -Werror -o learn-pages "$HERE/learn-pages.c" ||
	fail "cannot build learn-pages"
head -c 64M /dev/urandom >bulk.bin
objcopy --add-section .bulk=bulk.bin --set-section-flags .bulk=readonly learn-pages big ||
	fail "objcopy cannot add a 64 MiB section to learn-pages"
truncate -s 400M fs.img
mkfs.ext4 -q -F -b 4096 -O verity fs.img || fail "mkfs.ext4 -O verity"
mkdir mnt && mount -o loop fs.img mnt || fail "cannot mount the verity-capable ext4"
tb_defer "umount '$W/mnt'"
tb_defer 'kill ${learner:-} ${enabler:-}; wait'
# A kprobe on fsverity_ioctl_enable() says when the hash begins: polling
# /proc/PID/syscall missed a round whose enabler never slept while polled
# ("running" hides the syscall) and ended before the poll saw it.
T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T" || fail "cannot mount tracefs"
echo 'p:t_learn_verity fsverity_ioctl_enable' >>$T/kprobe_events ||
	fail "cannot put a kprobe on fsverity_ioctl_enable"
tb_defer "echo 0 >$T/events/kprobes/t_learn_verity/enable; echo '-:t_learn_verity' >>$T/kprobe_events"
echo 1 >$T/events/kprobes/t_learn_verity/enable
echo 1 >$T/tracing_on
echo 1 >$VM/pbitmap_enabled
echo 1 >$VM/pbitmap_learn
echo 0 >$VM/pbitmap_learn_interval_s

# learner FILE: map FILE and touch its first 256 pages, then stay in the
# start-up window (not executed: FS_IOC_ENABLE_VERITY refuses a running
# program's file, ETXTBSY), so that its set is pending until the flush.
cat >learner.py <<'PY'
import mmap, sys, time
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
total = sum(m[i] for i in range(0, 256 * 4096, 4096))
open(sys.argv[2], "w").write("%d\n" % total)
time.sleep(600)
PY
echo 60000 >$VM/pbitmap_learn_window_ms
for round in 1 2 3; do
	f=mnt/big$round
	cp big $f && pbitmap add -q -g 4 $f || fail "round $round: cannot stamp $f"
	sync
	s0=$(vmstat_counter pbitmap_learn_sets)
	rm -f ready
	python3 learner.py $f ready &
	learner=$!
	for _ in $(seq 300); do
		[ -s ready ] && [ "$(($(vmstat_counter pbitmap_learn_sets) - s0))" -gt 0 ] && break
		sleep 0.1
	done
	[ "$(($(vmstat_counter pbitmap_learn_sets) - s0))" -gt 0 ] || fail "round $round: the learner made no set within 30 s"
	w0=$(vmstat_counter pbitmap_learn_written)
	i0=$(vmstat_counter pbitmap_learn_skip_integrity)
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(date +%s%N)
	echo >$T/trace
	fsverity enable $f >enable.out 2>&1 &
	enabler=$!
	# Flush once fsverity is inside FS_IOC_ENABLE_VERITY, not after a
	# fixed sleep: its own cold start after the drop took over a second
	# on a loaded host, and a flush before the ioctl may write.
	seen=""
	for _ in $(seq 600); do
		grep -q "fsverity-$enabler .*t_learn_verity:" $T/trace && seen=1 && break
		kill -0 $enabler 2>/dev/null || break
		sleep 0.05
	done
	if [ -z "$seen" ]; then
		st=0
		kill -0 $enabler 2>/dev/null || wait $enabler || st=$?
		fail "round $round: fsverity enable was not seen in FS_IOC_ENABLE_VERITY within 30 s" \
			"(exit $st after $((($(date +%s%N) - t0) / 1000000)) ms: $(cat enable.out))"
	fi
	sleep 0.3
	echo 1 >$VM/pbitmap_learn_flush
	t_flush=$(date +%s%N)
	kill -0 $enabler 2>/dev/null || fail "round $round: fsverity enable ended before the flush: the hash window was not tested"
	wait $enabler || fail "round $round: fsverity enable failed: $(cat enable.out)"
	t_end=$(date +%s%N)
	kill $learner && wait $learner 2>/dev/null || true
	written=$(($(vmstat_counter pbitmap_learn_written) - w0))
	integrity=$(($(vmstat_counter pbitmap_learn_skip_integrity) - i0))
	echo "round $round: flush at $(((t_flush - t0) / 1000000)) ms, enable done at $(((t_end - t0) / 1000000)) ms;" \
		"learn_written +$written, learn_skip_integrity +$integrity"
	fsverity measure $f >/dev/null || fail "round $round: verity is not on for $f"
	echo 3 >/proc/sys/vm/drop_caches
	cat $f >/dev/null 2>cat.err || fail "round $round: reading $f after enabling verity: $(cat cat.err)"
	[ "$written" = 0 ] || fail "round $round: the learned set was written while verity was being enabled"
	[ "$integrity" = 1 ] || fail "round $round: the skip was not counted as integrity (+$integrity)"
done
echo "PASS: 3 flushes during FS_IOC_ENABLE_VERITY's hash: nothing written, no EIO"
