#!/bin/bash
# t-daemon-mount-race: a filesystem mounted over a plan's file after
# pbitmapd's reader checked the name and before it opens the file is not
# entered.  The reader walks a name one component at a time and checks
# each is on a local filesystem (confine.c); its last open was by name,
# and followed a mount placed there meanwhile (a user's FUSE mount over a
# file they own: that open would ask the FUSE server, and wait on it).
# The open now refuses to cross a mount (openat2(), RESOLVE_NO_XDEV).
#
# prog, a copy of /bin/sleep, planned with F, a file of this directory.
# The daemon (ASan/UBSan) runs under strace, every statx() it makes held
# 300 ms on its way out (strace -e inject=statx:delay_exit); a poller
# (tests/lib/race_poll.py) watches the daemon's processes and stops
# (SIGSTOP) the one held in the statx() of F itself (its descriptor names
# F: the walk's check of the last component); the test bind-mounts a tmpfs
# file G over F and lets it go on (SIGCONT).  Then:
#   - the reader's open of F fails with EXDEV, and no open of F returns a
#     descriptor (the old openat() by name returned G's, and only the
#     check after it refused G);
#   - F is not read (no fadvise64 of it) and is counted in skip_fs.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need strace mount umount /usr/bin/python3
[[ $(id -u) == 0 ]] || fail "must run as root: a mount, and pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
need_local_dir "$d"
cp /bin/sleep prog && head -c 10000 /dev/urandom >F && mkdir g && mount -t tmpfs g g &&
	at_exit "umount $d/g" && head -c 10000 /dev/urandom >g/G || fail "cannot make prog, F and g/G"
"$PBITMAP" add -q --plan-size 4K prog && "$PBITMAP" plan prog F || fail "cannot plan prog"

# Data files read whatever the device: READ_DATA=auto may leave them to the kernel
# (t-daemon-program).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\nPBITMAP_DAEMON_READ_PLAN=yes\n' >on.conf
# -ff: a file per process (trace.PID).  Into one file, strace splits a call
# that another process's call interrupts into "<unfinished ...>" and
# "<... resumed>" lines, and the open's name and its result were on two
# lines (make check under load, 2026-12-07).
daemon_start on.conf -ff -qq -yy -e trace=statx,openat,openat2,fadvise64 \
	-e inject=statx:delay_exit=300000 -o trace
/usr/bin/python3 "$TOP/tests/lib/race_poll.py" "$DAEMON_JOB" "$d/F" 60 >poll.out 2>&1 &
poller=$!
./prog 10 &
at_exit "kill $! 2>/dev/null"
wait "$poller" || fail "the reader was never held in F's statx: $(cat poll.out)"
reader=$(cat poll.out)
mount --bind g/G F && at_exit "umount $d/F" || { kill -CONT "$reader"; fail "cannot bind-mount g/G over F"; }
kill -CONT "$reader" || fail "cannot continue the reader $reader"
# opens_of_F [PATTERN]: the traced opens of F but the walk's O_PATH ones, those
# whose line goes on to match PATTERN (a line is written before its call returns)
opens_of_F() { grep -hE "(openat|openat2)\([^)]*\"F\"${1:-}" trace.* 2>/dev/null | grep -v O_PATH || true; }
for _ in $(seq 200); do
	done_opens=$(opens_of_F '.*\) = ')
	[[ -n $done_opens && $(counter pending) == 0 ]] && break
	sleep 0.1
done
daemon_stop
# the walk's O_PATH opens of F came before the mount: the reader's open is the other
opens=$(opens_of_F)
[[ -n $opens ]] || fail "the reader never opened F: $(cat trace.* | wc -l) lines traced; $(cat daemon.log)"
grep -qE "openat2\([^)]*\"F\".* = -1 EXDEV" <<<"$opens" ||
	fail "the reader's open of F did not fail with EXDEV: $opens"
! grep -qE "\"F\".* = [0-9]+<" <<<"$opens" || fail "an open of F returned a descriptor, after G was mounted over it: $opens"
! grep -qhE "fadvise64\([0-9]+<$d/F>" trace.* || fail "F was read"
(($(counter skip_fs) == 1)) || fail "skip_fs $(counter skip_fs), wanted 1 (F): $(cat daemon.log)"
pass "a tmpfs file mounted over a plan's file between the reader's check and its open: not entered" \
	"(openat2 EXDEV), not read, skip_fs 1"
