#!/bin/bash
# t-daemon-stop: at SIGTERM the daemon gives its children at work 5 s
# (STOP_WAIT_MS) to end and report before it exits.  Before, they died
# with it (PR_SET_PDEATHSIG): a reader's counts never reached the status
# file, and a learned write was lost.
#
# The daemon (ASan/UBSan) under strace, each posix_fadvise() of its
# children delayed by fault injection, so that a reader is at work when
# SIGTERM comes:
#   - delayed 1.5 s: A opened, SIGTERM once its reader is pending; the
#     daemon exits 0 after the reader's end, not before (at least 1 s
#     later), with data_prefetched 1, pending 0, skip_failed 0;
#   - delayed 6 s: B opened, SIGTERM; the reader is killed 5 s later and
#     counted (skip_failed 1, data_prefetched 0, pending 0), the daemon
#     exits 0 in under 8 s (strace holds back the killed child's end
#     until its delay is over: about 6 s);
#   - the second daemon holds execs (PBITMAP_DAEMON_HOLD_EXEC_MS=100:
#     permission events), and two execs while it waits after SIGTERM (a
#     sleep 0.3 and a true) take under 2 s: its groups are closed at the
#     signal (left open and no longer read, they held every exec on the
#     machine for the wait's 5 s).

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need strace
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
stamp_data A B
sleep 2.1	# pbitmap's own opens of them are not the daemon's
# Data files read whatever the device: READ_DATA=auto may leave them to the kernel
# (t-daemon-program).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\n' >on.conf
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\nPBITMAP_DAEMON_HOLD_EXEC_MS=100\n' >hold.conf
logged() { grep -c "^pbitmapd: $d/$1: opened by pid [0-9]*: data file, 1 extents" daemon.log; }

# SIGTERM while a reader works: DPID's exit, in ms after the signal
stop_during_read() {
	local file=$1 t0 t1

	: <"$file" || fail "cannot open $file"
	# its reader started (the status file is written as one starts); up
	# to 20 s, as the other daemon tests wait: a clean-clone make check
	# beside the kernel build once saw none in 4 s (1903d59)
	for _ in $(seq 1000); do [[ $(counter pending) == 1 ]] && break; sleep 0.02; done
	[[ $(counter pending) == 1 ]] ||
		fail "no reader started for $file in 20 s: $(cat daemon.log); counters: $(tr "\n" " " <status)"
	t0=$(date +%s%N)
	kill -TERM "$DPID"
	# execs while it waits: not events any more (held, they waited for its exit)
	t1=$EPOCHREALTIME
	sleep 0.3
	/bin/true
	EXEC_MS=$(((${EPOCHREALTIME/./} - ${t1/./}) / 1000))
	wait "$DAEMON_JOB" || fail "pbitmapd exited with $? on SIGTERM: $(cat daemon.log)"
	t1=$(date +%s%N)
	if grep -q "Sanitizer" daemon.log; then fail "sanitizer report: $(cat daemon.log)"; fi
	STOP_MS=$(((t1 - t0) / 1000000))
}

daemon_start on.conf -f -e trace=fadvise64 -e inject=fadvise64:delay_enter=1500000 -o strace.log
stop_during_read A
read -r p f n <<<"$(counter data_prefetched) $(counter skip_failed) $(counter pending)"
((STOP_MS >= 1000 && p == 1 && f == 0 && n == 0)) && (($(logged A) == 1)) ||
	fail "a reader at work at SIGTERM: exit after $STOP_MS ms, data_prefetched $p, skip_failed $f, pending $n: want at least 1000 ms, 1, 0, 0 (its report kept): $(cat daemon.log)"
pass "SIGTERM while a reader works: the daemon waited for it ($STOP_MS ms) and counted it (data_prefetched 1, pending 0)"

daemon_start hold.conf -f -e trace=fadvise64 -e inject=fadvise64:delay_enter=6000000 -o strace.log
stop_during_read B
read -r p f n <<<"$(counter data_prefetched) $(counter skip_failed) $(counter pending)"
((STOP_MS < 8000 && p == 0 && f == 1 && n == 0)) ||
	fail "a reader still at work 5 s after SIGTERM: exit after $STOP_MS ms, data_prefetched $p, skip_failed $f, pending $n: want under 8000 ms, 0, 1, 0: $(cat daemon.log)"
((EXEC_MS < 2000)) || fail "sleep 0.3 and true while the daemon (holding execs) waited after SIGTERM took $EXEC_MS ms: want under 2000"
pass "a reader still at work 5 s after SIGTERM is killed and counted (exit after $STOP_MS ms, skip_failed 1, pending 0); sleep 0.3 and true meanwhile took $EXEC_MS ms"
