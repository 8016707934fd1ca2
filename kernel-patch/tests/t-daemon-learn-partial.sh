#!/bin/bash
# Guest test, on Debian's own 6.12 kernel (no pbitmap patch): a learned
# run some of whose faults the daemon dropped is not written (learn.c,
# on_fault(), learn_finish(); learn_skip_partial).
#
# The daemon keeps a run's pages in chunks of 16 MiB of a file, at most
# 1024 chunks a run (a user's 8 runs half of all).  It once took faults
# past that, from one run or from all runs together, as pages unused, and
# wrote the run anyway: one user's sparse faults made every other run of
# that moment write a generation that said its pages went unused, and
# aging drops such pages.  Here ./touch, stamped, maps F (stamped, 18 GiB,
# sparse) and reads one byte in each of N 16 MiB steps, run by root (the
# owner of both):
#   - N = 8: learned (learn_written +2, F and touch one run each), so the
#     case below is not passed by a daemon that learns nothing here;
#   - N = 1100, past one run's 1024 chunks: not written
#     (learn_skip_partial +1, learn_lost counts the dropped faults), F and
#     touch keep their one run.
set -euo pipefail
W=/var/tmp/t-daemon-learn-partial
source "$(dirname "$0")/daemonlib.sh"
[ -e /sys/kernel/btf/vmlinux ] || fail "$(uname -r) has no BTF: learning cannot load"
trap 'stop_daemon' EXIT
runs() { pbitmap show --json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["runs"])'; }

cat >touch.c <<'PROG'
/*
 * touch FILE N: map FILE and read a byte at each of N steps of 16 MiB; a
 * second asleep first (a run is followed if it still runs when the daemon
 * takes its exec), and a second after (the daemon names a run's new file
 * from the run's maps, learn.c's map_name(), which an exited process no
 * longer has: a daemon behind on its events, with this test's own polling
 * opening thousands of files, once took F's first fault after the exit
 * and counted F lost, learn_lost 1, in a stock-kernel guest run).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t step = (size_t)16 << 20, n = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	int fd = argc > 2 ? open(argv[1], O_RDONLY) : -1;
	const volatile char *p;
	long sum = 0;

	if (fd < 0 || !n)
		return 2;
	sleep(1);
	p = mmap(NULL, n * step, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 2;
	for (size_t i = 0; i < n; i++)
		sum += p[i * step];
	printf("%ld\n", sum);
	sleep(1);
	return 0;
}
PROG
gcc -O1 -o touch touch.c || fail "cannot build touch"
truncate -s 18G F && pbitmap add -q touch F || fail "cannot stamp touch and F"
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN_INTERVAL_S=0\n' >owner.conf
start_daemon owner.conf -v
[ "$(counter learning)" = 1 ] || fail "learning is not on ($(counter learning)): $(cat daemon.log)"
./touch F 1 >/dev/null || fail "touch failed"	# its record read: from now on, it is learned
settle execs 1

w0=$(counter learn_written)
./touch F 8 >/dev/null || fail "touch F 8 failed"
settle learn_written $((w0 + 2))
[ "$(runs F)" = 1 ] && [ "$(runs touch)" = 1 ] ||
	fail "8 steps: F has $(runs F) runs, touch $(runs touch); want 1 and 1"
echo "8 steps of 16 MiB: learned (F and touch one run each)"

p0=$(counter learn_skip_partial) l0=$(counter learn_lost) w0=$(counter learn_written)
./touch F 1100 >/dev/null || fail "touch F 1100 failed"
settle learn_skip_partial $((p0 + 1))
stop_daemon
[ "$(counter learn_written)" = "$w0" ] && [ "$(runs F)" = 1 ] && [ "$(runs touch)" = 1 ] ||
	fail "1100 steps, past a run's share: learn_written +$(($(counter learn_written) - w0)), F $(runs F) runs, touch $(runs touch); want +0, 1, 1"
lost=$(($(counter learn_lost) - l0))
[ "$lost" -ge 76 ] || fail "1100 steps: learn_lost +$lost, want at least 76 (1100 - 1024)"
echo "1100 steps: not written (learn_skip_partial +1, learn_lost +$lost)"
echo "PASS: a learned run whose faults were dropped is not written on $(uname -r)"
