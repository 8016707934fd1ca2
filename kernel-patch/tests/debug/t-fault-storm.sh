#!/bin/bash
# Debug-kernel test (make vm-debug-check): pbitmap's allocation and read
# helpers fail at random during a storm of stamped starts (issue 22).
#
# fail_function makes pbitmap_alloc() return NULL and pbitmap_read_file()
# return -EIO (both are marked ALLOW_ERROR_INJECTION).  Which call fails is
# chosen per process through /proc/thread-self/fail-nth: every start and
# every mapping process gets a random N in 1..4, and the N-th call of either
# helper in it fails.  Meanwhile 4 workers each start, 40 times, a program
# linked against a stamped library and map 20 stamped data files; the
# inodes are dropped every 5 rounds so that records are parsed again.
# Every program must print what it prints with pbitmap off, every mapping
# must succeed, and dmesg must gain no WARNING, BUG, KASAN, Oops or lockdep
# report.  Then, the record cache emptied, one mapping of the library with
# fail-nth 1 (the attribute's buffer) and one with fail-nth 3 (the
# record's read) must each be counted once (pbitmap_reject_nomem,
# pbitmap_reject_io), and the program still prints the right output.
# Last, with the cache emptied (vm.pbitmap_enabled=0), kmemleak must report
# no object allocated under a pbitmap function.
#
# fail-nth rather than fail_function's probability, and the kprobe on
# ftrace (config-kasan.fragment: FUNCTION_TRACER, KPROBES_ON_FTRACE):
# through int3, which counts as NMI context, should_fail() ignores
# fail-nth (in_task() is false) and with a probability draws a random
# number under crngs.lock, which lockdep on 6.12 reports ("inconsistent
# {INITIAL USE} -> {IN-NMI} usage") even with prove_locking off, and then
# turns itself off for the rest of the boot.  The test checks that the
# probes are on ftrace and fails saying so otherwise.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/cachelib.sh
. "$HERE/cachelib.sh"
cold_begin t-fault-storm
D=/sys/kernel/debug
mountpoint -q $D || mount -t debugfs none $D || fail "cannot mount debugfs"
F=$D/fail_function
[ -d $F ] || fail "no $F (CONFIG_FAIL_FUNCTION; make vm-debug-check boots the debug kernel)"
[ -f $D/kmemleak ] || fail "no $D/kmemleak (CONFIG_DEBUG_KMEMLEAK)"
cold_need_sysctls pbitmap_enabled pbitmap_mmap
cold_need_counters pbitmap_reject_nomem pbitmap_reject_io pbitmap_cache_miss
cold_missing
[ -f /proc/thread-self/fail-nth ] || fail "no /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION)"
injection_off() {
	echo >$F/inject 2>/dev/null
	return 0
}
# Run "$@" with the N-th call of an injected helper failing in it: fail-nth
# belongs to the task and survives exec.
fail_nth() {
	local n=$1
	shift
	(echo "$n" >/proc/thread-self/fail-nth && exec "$@")
}
trap 'injection_off; cold_reset; cd /; rm -rf "$W"' EXIT
problems() { dmesg | grep -cE 'WARNING:|\bBUG\b|KASAN|Oops|cut here|circular locking|lock state|possible recursive' || true; }

cache_build
printf 'const char pad[256 << 10] = { 1 };\nint storm_value(void) { return 41 + pad[0]; }\n' >lib.c
printf '#include <stdio.h>\nint storm_value(void);\nint main(void) { printf("storm %%d\\n", storm_value()); return 0; }\n' >user.c
gcc -O2 -shared -fPIC -o libstorm.so lib.c || fail "cannot build libstorm.so"
gcc -O2 -o user user.c -L. -lstorm || fail "cannot build the program"
pbitmap add -q libstorm.so user || fail "cannot stamp"
pbitmap set -q --pages 0-40 libstorm.so || fail "cannot mark libstorm.so"
for i in $(seq 0 19); do
	stamp_sparse "d.$i" 1M "$(shuf -i 0-255 -n 100 | sort -n | paste -sd,)"
done
want=$(LD_LIBRARY_PATH=$W ./user)
[ "$want" = "storm 42" ] || fail "the program prints '$want'"
sync

echo clear >$D/kmemleak
k0=$(problems)
n0=$(vmstat_counter pbitmap_reject_nomem)
i0=$(vmstat_counter pbitmap_reject_io)
c0=$(vmstat_counter pbitmap_cache_miss)
cold_cond on
echo pbitmap_alloc >$F/inject || fail "cannot inject into pbitmap_alloc (not annotated for error injection?)"
echo pbitmap_read_file >>$F/inject || fail "cannot inject into pbitmap_read_file"
echo "0x$(printf %x -5)" >$F/pbitmap_read_file/retval || fail "cannot set the injected error (-EIO)"
# No failure but the ones fail-nth asks for.
echo 0 >$F/probability
echo 0 >$F/verbose
for fn in pbitmap_alloc pbitmap_read_file; do
	grep -E "[[:space:]]$fn\+0x[0-9a-f]+[[:space:]].*\[FTRACE\]" $D/kprobes/list >/dev/null ||
		fail "the fail_function probe on $fn is not on ftrace (int3: fail-nth is ignored there): $(grep "$fn" $D/kprobes/list)"
done

worker() {
	local r out
	for r in $(seq 1 40); do
		((r % 5 != 0)) || echo 2 >/proc/sys/vm/drop_caches
		out=$(LD_LIBRARY_PATH=$W fail_nth $((RANDOM % 4 + 1)) ./user) ||
			{ echo "round $r: exit $?"; return 1; }
		[ "$out" = "$want" ] || { echo "round $r: printed '$out'"; return 1; }
		fail_nth $((RANDOM % 4 + 1)) ./cache-poke map d.* >/dev/null ||
			{ echo "round $r: mapping failed"; return 1; }
	done
}
pids=()
for w in 1 2 3 4; do
	worker >"worker.$w" 2>&1 &
	pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=1; done
((bad == 0)) || { injection_off; fail "a start or mapping failed under injection: $(cat worker.*)"; }
n1=$(vmstat_counter pbitmap_reject_nomem)
i1=$(vmstat_counter pbitmap_reject_io)
c1=$(vmstat_counter pbitmap_cache_miss)
echo "160 starts and 3200 mappings under injection: $((c1 - c0)) parses, reject_nomem +$((n1 - n0)), reject_io +$((i1 - i0))"
((n1 > n0)) || fail "no allocation failure reached pbitmap (reject_nomem +0)"

# Each failure by itself, on a mapping that must parse: the cache
# emptied, the stamped library mapped by cache-poke, which sets fail-nth
# after its own exec.  A lookup allocates the attribute's buffer (1st
# call), then the record's (2nd), then reads the record (3rd).
for nth in 1 3; do
	echo 0 >/proc/sys/vm/pbitmap_enabled
	echo 1 >/proc/sys/vm/pbitmap_enabled
	n2=$(vmstat_counter pbitmap_reject_nomem)
	i2=$(vmstat_counter pbitmap_reject_io)
	./cache-poke map -f $nth libstorm.so >/dev/null || fail "the mapping with fail-nth $nth failed"
	n3=$(vmstat_counter pbitmap_reject_nomem)
	i3=$(vmstat_counter pbitmap_reject_io)
	echo "fail-nth $nth: reject_nomem +$((n3 - n2)), reject_io +$((i3 - i2))"
	if ((nth == 1)); then
		((n3 == n2 + 1 && i3 == i2)) || fail "fail-nth 1 (the attribute's buffer): expected reject_nomem +1, reject_io +0"
	else
		((i3 == i2 + 1 && n3 == n2)) || fail "fail-nth 3 (the record's read): expected reject_io +1, reject_nomem +0"
	fi
done
out=$(LD_LIBRARY_PATH=$W ./user) || fail "the program failed after the injections"
[ "$out" = "$want" ] || fail "the program printed '$out' after the injections"
injection_off
k1=$(problems)
((k1 == k0)) || fail "kernel problems under injection: $(dmesg | grep -E -A10 'WARNING:|\bBUG\b|KASAN|Oops|lock state' | head -n 40)"

# Leaks: the cache emptied, two scans (an object must be unreferenced for
# one full scan and older than 5 s to be reported).
echo 0 >/proc/sys/vm/pbitmap_enabled
sleep 6
echo scan >$D/kmemleak
sleep 1
echo scan >$D/kmemleak
leaks=$(cat $D/kmemleak)
nleaks=$(grep -c '^unreferenced object' <<<"$leaks" || true)
ours=$(awk '/^unreferenced object/ { obj = $0 } /pbitmap/ { print obj }' <<<"$leaks" | sort -u)
echo "kmemleak: $nleaks unreferenced objects in all, $(grep -c . <<<"$ours" || true) with a pbitmap frame"
[ -z "$ours" ] || fail "kmemleak reports objects allocated under pbitmap: $(grep -B2 -A20 pbitmap <<<"$leaks" | head -n 60)"
cold_reset
echo "PASS: 160 starts and 3200 mappings under injected failures, no kernel problem, no pbitmap leak"
