#!/bin/bash
# t-daemon-fsid: two filesystems with one ID (a copied image keeps its
# UUID, and ext4's ID is made from it).  A fanotify event of a data file's
# open names the filesystem by that ID alone, so pbitmapd watches opens on
# the first of the two only and says so; an open on the first is read
# there, never as the other's file of the same inode number.
#
# Two ext4 images made with one UUID, mounted as one and two (in that
# order), each given D and then E (so D has one inode number in both, E
# another).  Stamped: two/D and one/E.  Opened: one/D, two/D, then one/E.
#   - one/E is read ahead, as one's file (its opener's pid in the log);
#   - neither D is: one/D is not stamped, and two's opens are not watched
#     (before the fix, every handle was opened on two: two/D read for its
#     own open, and one/E's handle not found there, ext4 giving each new
#     inode a random generation; copies of one image keep theirs, and on
#     the benchmark's disks a handle of one opened the other's file);
#   - the log says why two's opens are not watched; SIGTERM ends the
#     daemon with 0 and no sanitizer report (leaks included).

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need mkfs.ext4 mount umount truncate stat
[[ $(id -u) == 0 ]] || fail "must run as root: loop mounts, and pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
twin_ext4 one two
for fs in one two; do
	for f in D E; do head -c $((1 << 20)) /dev/urandom >$fs/$f || fail "cannot write $fs/$f"; done
done
[[ $(stat -f -c %i one) == "$(stat -f -c %i two)" ]] ||
	fail "one and two have different filesystem IDs: $(stat -f -c %i one) and $(stat -f -c %i two)"
for f in D E; do
	[[ $(stat -c %i one/$f) == "$(stat -c %i two/$f)" ]] ||
		fail "$f has different inode numbers on one and two: the case needs them equal"
done
"$PBITMAP" add -q two/D && "$PBITMAP" set -q --pages 0-7 two/D &&
	"$PBITMAP" add -q one/E && "$PBITMAP" set -q --pages 0-7 one/E || fail "cannot stamp two/D and one/E"

# Data files read whatever the device: READ_DATA=auto may leave them to the kernel
# (t-daemon-program).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\n' >on.conf
daemon_start on.conf
grep -qF "pbitmapd: $d/two: opens of data files not watched: it has the filesystem ID of $d/one " \
	daemon.log || fail "no word of two's opens not watched: $(cat daemon.log)"
pass "two filesystems of one ID: opens watched on the first, and the log says why not on the second"

# opened by this shell, which stays: an opener gone by the time the daemon
# looks at it is skipped whatever the file (t-daemon-opener)
: <one/D && : <two/D && : <one/E || fail "cannot open the files"
reads() { grep ": opened by pid " daemon.log; }
for _ in $(seq 100); do [[ -n $(reads) ]] && break; sleep 0.1; done
sleep 0.5	# the events are handled in order: none of D's is still to come
[[ $(reads) == "pbitmapd: $d/one/E: opened by pid "*": data file, 1 extents, 32768 bytes" ]] ||
	fail "want one read, of one/E; the daemon read: $(reads); log: $(cat daemon.log)"
pass "an open on the first filesystem is read there, not as the other's file of its inode number"

daemon_stop
pass "SIGTERM: exit 0, no sanitizer report"
