#!/bin/bash
# Guest test: learning is exact when file faults are handled under the
# per-VMA lock (6.7 onward) while another thread holds mmap_lock for
# writing.
#
# A 16 MiB data file on the root ext4, stamped empty (user.pbitmap), is
# mapped cold by vma-learn (vma-learn.c) with vm.pbitmap_learn=1: 8
# threads touch overlapping sets of its pages (thread i: from i/8 to
# (i+2)/8 of the file, every (5 + i % 3)-th page), another keeps mapping,
# reprotecting and unmapping anonymous memory (mmap_lock taken for
# writing).  A fault that finds its page cached
# completes under the VMA's lock; one that must wait for the read drops it
# (VM_FAULT_RETRY) and is retried under mmap_lock.  The learning hook in
# do_fault() runs only for faults that kept their lock.  Checks, after the
# flush: the learned generation is exactly the union of the pages the 8
# threads touched (none missing:
# no fault path skips the hook; none extra: fault-around is off while
# learning); /proc/vmstat's vma_lock_success + vma_lock_retry grew by at
# least the pages touched (every fault first tried the per-VMA lock;
# CONFIG_PER_VMA_LOCK_STATS), vma_lock_retry by at least one (the retry
# path was taken); and the record verifies.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-learn-vma-lock
VM=/proc/sys/vm
trap 'learn_reset; cold_reset; cd /; rm -rf "$W"' EXIT
cold_need_sysctls pbitmap_enabled pbitmap_learn pbitmap_learn_data_interval_s pbitmap_learn_flush \
	pbitmap_learn_window_ms
cold_need_counters pbitmap_learn_written vma_lock_success vma_lock_retry
cold_missing

gcc -std=c11 -O2 -Wall -Wextra -Werror -pthread -o vma-learn "$HERE/vma-learn.c" ||
	fail "cannot build vma-learn"
head -c 16M /dev/urandom >data || fail "cannot write the data file"
pbitmap add -q data || fail "cannot stamp the data file"
[ "$(getfattr --only-values -n user.pbitmap data | head -c 4)" = PBXZ ] ||
	fail "data carries no PBXZ record in user.pbitmap"

echo 1 >$VM/pbitmap_enabled
echo 1 >$VM/pbitmap_learn
echo 0 >$VM/pbitmap_learn_data_interval_s
# every fault of the cold run must fall in the window (10 s by default), on
# a 150-IOPS disk, on a guest a loaded host may slow several times
echo 60000 >$VM/pbitmap_learn_window_ms
sync
echo 3 >/proc/sys/vm/drop_caches
s0=$(vmstat_counter vma_lock_success)
r0=$(vmstat_counter vma_lock_retry)
w0=$(vmstat_counter pbitmap_learn_written)
out=$(./vma-learn data) || fail "vma-learn failed: $out"
s1=$(vmstat_counter vma_lock_success)
r1=$(vmstat_counter vma_lock_retry)
echo 1 >$VM/pbitmap_learn_flush || fail "cannot write vm.pbitmap_learn_flush"
w1=$(vmstat_counter pbitmap_learn_written)
echo "vma-learn: $out; vma_lock_success +$((s1 - s0)), vma_lock_retry +$((r1 - r0)); pbitmap_learn_written +$((w1 - w0))"
touched=${out#pages=}
touched=${touched%% *}

verdict=$(pbitmap show --json data | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
n = r["content_size"] // 4096
want = set()
for i in range(8):
    want |= set(range(i * n // 8, min(n, (i + 2) * n // 8), 5 + i % 3))
if r["page_size"] != 4096:
    sys.exit("granule of %d bytes, not one page" % r["page_size"])
got = set()
for a, b in [p for p in r["planes"] if p["age"] == 0][0]["ranges"]:
    got.update(range(a, b + 1))
print("runs=%d want=%d learned=%d missing=%d extra=%d" %
      (r["runs"], len(want), len(got), len(want - got), len(got - want)))') ||
	fail "cannot read the learned record: $verdict"
echo "$verdict"
eval "$verdict"
((runs == 1)) || fail "the run was not learned (runs $runs)"
((want == touched)) || fail "vma-learn touched $touched pages, the test expected $want"
((missing == 0)) || fail "$missing touched pages were not learned"
((extra == 0)) || fail "$extra pages learned that were never touched"
(((s1 - s0) + (r1 - r0) >= touched)) ||
	fail "only $((s1 - s0 + r1 - r0)) faults tried the per-VMA lock, fewer than the $touched pages touched"
((r1 - r0 >= 1)) || fail "no fault dropped its per-VMA lock for I/O (vma_lock_retry +0): the retry path was not tested"
pbitmap verify -q data || fail "the learned record does not verify"
echo "PASS: $want pages touched by 8 threads beside an mmap_lock writer, all learned exactly, $((s1 - s0)) faults completed under per-VMA locks, $((r1 - r0)) retried"
