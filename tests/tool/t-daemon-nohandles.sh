#!/bin/bash
# t-daemon-nohandles: a kernel without open_by_handle_at(2) (built without
# CONFIG_FHANDLE, as the test bed's kernel was).  fanotify still reports an
# open's file by handle there, and pbitmapd opens that file by its handle:
# every open event would cost a call that fails with ENOSYS, and a stamped
# data file's open would be dropped unseen.  So pbitmapd asks once, at its
# start, and says so.
#
# Under strace, name_to_handle_at() and open_by_handle_at() fail with
# ENOSYS, as without CONFIG_FHANDLE:
#   - the log says data files are not read ahead, and why;
#   - execs are still watched (execs counts /bin/true's), opens are not
#     (opens 0 after a stamped data file's open), and nothing is read;
#   - SIGTERM ends the daemon with 0, no sanitizer report.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need strace
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
head -c $((1 << 20)) /dev/urandom >data && "$PBITMAP" add -q data &&
	"$PBITMAP" set -q --pages 0-7 data || fail "cannot stamp data"

printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\n' >on.conf
daemon_start on.conf -e trace=name_to_handle_at,open_by_handle_at \
	-e inject=name_to_handle_at,open_by_handle_at:error=ENOSYS -o strace.log
grep -qF "pbitmapd: this kernel has no open_by_handle_at(2) (CONFIG_FHANDLE): data files are not read ahead" \
	daemon.log || fail "no word of data files not read ahead: $(cat daemon.log)"
pass "no file handles: the log says data files are not read ahead, and why"

/bin/true && : <data || fail "cannot run /bin/true and open data"
for _ in $(seq 100); do (($(counter execs) >= 1)) && break; sleep 0.1; done
sleep 1.5	# the status file is written at most once a second
read -r e o p <<<"$(counter execs) $(counter opens) $(counter data_prefetched)"
((e >= 1)) && [[ "$o $p" == "0 0" ]] ||
	fail "execs $e, opens $o, data_prefetched $p: want at least 1, 0, 0; $(cat daemon.log)"
n=$(grep -c "open_by_handle_at(" strace.log)
((n == 0)) || fail "the daemon called open_by_handle_at() $n times: $(cat strace.log)"
pass "execs watched ($e), opens not (0), open_by_handle_at() never called"

daemon_stop
pass "SIGTERM: exit 0, no sanitizer report"
