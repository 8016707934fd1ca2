#!/bin/bash
# t-daemon-script: a stamped script's own pages are read as the user who
# exec'd it.  The kernel opens a script for its exec whatever its mode,
# and the daemon gets that descriptor; a script of mode 0711 may be
# exec'd by a user who may not read it (its interpreter then fails to).
# The daemon once read its record as root and its pages with it: it read
# for a user what that user could not read.  Now the record is read with
# the user's filesystem identity, by that descriptor.
#
# Three root-owned scripts of 64 KiB, pages 0-7 marked (user.pbitmap),
# exec'd; their interpreter, python3 -c, sleeps 2 s without reading them
# (a process gone when its event is read is skipped, skip_gone, before
# any of this).  The daemon (ASan/UBSan) under strace:
#   - readable, mode 0755, exec'd by nobody: its own pages read (one
#     extent, 32768 bytes, by fadvise64), so the last case is not passed
#     by a daemon that reads no script;
#   - group, mode 0750, group 4242, exec'd by user 4243 of group 4242:
#     read (a daemon that read every script as nobody would not);
#   - exec-only, mode 0711, exec'd by nobody: nothing of it read (no
#     fadvise64 of it), "not read ahead" said.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need strace setpriv mkfs.ext4 mount umount truncate /usr/bin/python3
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
chmod 755 "$(dirname "$d")" "$d"	# for nobody
cd "$d" || fail "cd $d"
# The exec opens the script, and a reader of that open (a data file's)
# may come first: the scripts are put where opens are not watched, a
# second filesystem with the first's ID (t-daemon-fsid), so that what is
# tested is the exec's reader.
twin_ext4 one two
chmod 755 two || fail "chmod two"
for s in readable group exec-only; do
	{ printf '#!/usr/bin/python3 -cimport time; time.sleep(2)\n'; for _ in $(seq 1000); do printf '# %061d\n' 0; done; } >two/$s &&
		"$PBITMAP" add -q two/$s && "$PBITMAP" set -q --pages 0-7 two/$s || fail "cannot stamp $s"
done
chmod 0755 two/readable && chmod 0711 two/exec-only && chgrp 4242 two/group && chmod 0750 two/group ||
	fail "chmod"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
sleep 2.1	# pbitmap's own opens: not the daemon's, but not "recent" either

printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\n' >on.conf
daemon_start on.conf -f -qq -y -e trace=fadvise64 -o trace
"${NOBODY[@]}" two/readable || fail "nobody cannot run two/readable"
"${NOBODY[@]}" two/exec-only || fail "nobody cannot run two/exec-only"
setpriv --reuid=4243 --regid=4242 --clear-groups two/group || fail "user 4243 of group 4242 cannot run two/group"
said() { grep -c "^pbitmapd: $d/two/$1: pid [0-9]*: $2" daemon.log; }
read_readable() { grep -qE "fadvise64\([0-9]+<$d/two/readable>, 0, 32768, POSIX_FADV_WILLNEED\) = 0" trace; }
for _ in $(seq 100); do
	(($(said readable "") == 1 && $(said group "") == 1 && $(said exec-only "") == 1)) && [[ $(counter pending) == 0 ]] && break
	sleep 0.1
done
daemon_stop
grep -q "^pbitmapd: $d/two: opens of data files not watched" daemon.log ||
	fail "two's opens are watched: the case needs them not to be: $(cat daemon.log)"
(($(said readable "a script: its own pages, 1 files, 1 extents, 32768 bytes") == 1)) && read_readable || fail "no fadvise64 of two/readable's pages 0-7: $(cat daemon.log) $(cat trace)"
pass "a readable script exec'd by nobody: its own pages read (32768 bytes)"
(($(said group "a script: its own pages, 1 files, 1 extents, 32768 bytes") == 1)) ||
	fail "two/group, mode 0750, group 4242, exec'd by a user of that group: not read: $(cat daemon.log)"
pass "a script only its group may read, exec'd by a user of that group: read (not as nobody)"
(($(said exec-only "not read ahead") == 1)) || fail "two/exec-only: want 'not read ahead' said: $(cat daemon.log) $(tr '\n' ' ' <status)"
! grep -q "fadvise64([0-9]*<$d/two/exec-only>" trace || fail "two/exec-only was read: $(grep exec-only trace)"
pass "an exec-only script exec'd by nobody: nothing of it read"
