#!/bin/bash
# t-daemon-busy: a stamped file skipped because every reader was busy
# (PBITMAP_DAEMON_MAX_PARALLEL) is not "recent".  Recent files (read ahead
# in the same or the previous second) are skipped, so that a program's own
# open of a file its exec's reader just read starts no second reader; a
# file that was not read must not be kept out by that rule.
#
# The daemon (ASan/UBSan) with one reader at a time, under strace, each
# posix_fadvise() of its children delayed 400 ms (fault injection), so
# that a reader is still at work when the next open comes:
#   - A opened: read (its reader busy 400 ms);
#   - B opened at once: skipped, skip_busy;
#   - A's reader done, B opened again, well within 2 s: read;
#   - after SIGTERM: data_prefetched 2, skip_busy at least 1, B's read
#     logged once (B kept out as "recent" would be read 0 times); exit 0,
#     no sanitizer report.  skip_recent is not asked: it counts every
#     file on the filesystem, and under make check the package tests
#     beside this one can exec a stamped program again within 2 s
#     (t-shipped's pbt-ship was in t-daemon-opener's log when CI saw
#     skip_recent 2 there).

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need strace
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
stamp_data A B
sleep 2.1	# pbitmap's own opens of them are not the daemon's: none yet, but to be sure
# Data files read whatever the device: READ_DATA=auto may leave them to the kernel
# (t-daemon-program).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\nPBITMAP_DAEMON_MAX_PARALLEL=1\n' >one.conf
daemon_start one.conf -f -e trace=fadvise64 -e inject=fadvise64:delay_enter=400000 -o strace.log

: <A || fail "cannot open A"
sleep 0.1
: <B || fail "cannot open B"
read_logged() { grep -c "^pbitmapd: $d/$1: opened by pid [0-9]*: data file, 1 extents" daemon.log; }
for _ in $(seq 100); do (($(read_logged A) == 1)) && break; sleep 0.05; done
(($(read_logged A) == 1)) || fail "A was not read ahead: $(cat daemon.log)"
sleep 0.6	# A's reader reaped (under strace and ASan): the one slot free
: <B || fail "cannot open B"
sleep 1.5
daemon_stop
read -r p b <<<"$(counter data_prefetched) $(counter skip_busy)"
((p == 2 && b >= 1)) && (($(read_logged B) == 1)) ||
	fail "data_prefetched $p, skip_busy $b, B read $(read_logged B) times: want 2, at least 1, once: $(cat daemon.log)"
pass "a file skipped while the readers were busy (skip_busy $b) is read at its next open, about a second later (data_prefetched 2, B read once)"
