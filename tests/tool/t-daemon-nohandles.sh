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
#   - after SIGTERM (its status file then written whole): opens 0 after a
#     stamped data file's open (no open group), execs counted (the exec
#     group is made before the probe), data_prefetched 0, and no
#     open_by_handle_at() in the trace but the probe's (none: its
#     name_to_handle_at() failed first);
#   - SIGTERM ends the daemon with 0, no sanitizer report.
# Then with open_by_handle_at() alone failing EPERM (a policy refusing it):
# the message with that error, one call (the probe's), opens 0.
# Then with every open_by_handle_at() after the probe failing ENOMEM (an
# error that is not ESTALE, "deleted since"): the open group made, the data
# file's open seen and not read ahead, and every failed call counted
# (skip_handle), none dropped unseen.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need strace
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
stamp_data data

# Data files read whatever the device: READ_DATA=auto may leave them to the kernel
# (t-daemon-program).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\n' >on.conf
said="pbitmapd: cannot open files by handle (open_by_handle_at(2): a kernel without CONFIG_FHANDLE, or a policy refusing it): data files are not read ahead"
daemon_start on.conf -e trace=name_to_handle_at,open_by_handle_at \
	-e inject=name_to_handle_at,open_by_handle_at:error=ENOSYS -o strace.log
grep -qF "$said: Function not implemented" daemon.log || fail "no word of data files not read ahead: $(cat daemon.log)"
pass "no file handles: the log says data files are not read ahead, and why"

: <data || fail "cannot open data"
sleep 1.5	# an open group would have had the event, and counted it, by now
daemon_stop
read -r e o p <<<"$(counter execs) $(counter opens) $(counter data_prefetched)"
((e >= 1)) && [[ "$o $p" == "0 0" ]] ||
	fail "execs $e, opens $o, data_prefetched $p: want at least 1, 0, 0; $(cat daemon.log)"
n=$(grep -c "open_by_handle_at(" strace.log)
((n == 0)) || fail "the daemon called open_by_handle_at() $n times: $(cat strace.log)"
pass "execs watched ($e), opens not (0), open_by_handle_at() never called; SIGTERM: exit 0, no sanitizer report"

# A policy that lets handles be made but not opened (EPERM, as a seccomp
# filter or an LSM may answer): the probe opens the root's handle once.
daemon_start on.conf -e trace=open_by_handle_at -e inject=open_by_handle_at:error=EPERM -o strace2.log
grep -qF "$said: Operation not permitted" daemon.log || fail "open_by_handle_at() refused: no word of it: $(cat daemon.log)"
: <data || fail "cannot open data"
sleep 1.5
daemon_stop
o=$(counter opens) n=$(grep -c "open_by_handle_at(" strace2.log)
[[ "$o $n" == "0 1" ]] || fail "opens $o, open_by_handle_at() calls $n: want 0 and 1 (the probe's): $(cat strace2.log)"
pass "open_by_handle_at() refused (EPERM): said at start, the probe's one call, opens 0"

# The probe passes; every later call fails with an error other than ESTALE.
daemon_start on.conf -e trace=open_by_handle_at -e inject=open_by_handle_at:error=ENOMEM:when=2+ \
	-o strace3.log
if grep -qF "$said" daemon.log; then fail "the probe passed, yet the log says it did not: $(cat daemon.log)"; fi
: <data || fail "cannot open data"
sleep 1.5
daemon_stop
read -r o h p <<<"$(counter opens) $(counter skip_handle) $(counter data_prefetched)"
n=$(grep -c "open_by_handle_at(.*ENOMEM" strace3.log)
((o >= 1 && n >= 1 && h == n && p == 0)) ||
	fail "opens $o, skip_handle $h, failed calls $n, data_prefetched $p: want skip_handle = failed calls >= 1, nothing read: $(cat strace3.log)"
pass "open_by_handle_at() failing ENOMEM after the probe: all $n failures counted (skip_handle), data_prefetched 0"
