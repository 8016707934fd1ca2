#!/bin/bash
# t-daemon-script: a stamped script's own pages are read as the user who
# exec'd it.  The kernel opens a script for its exec whatever its mode,
# and the daemon gets that descriptor; a script of mode 0711 may be
# exec'd by a user who may not read it (its interpreter then fails to).
# The daemon once read its record as root and its pages with it: it read
# for a user what that user could not read.  Now the record is read with
# the user's filesystem identity, by that descriptor.
#
# Two root-owned scripts of 64 KiB, pages 0-7 marked (user.pbitmap),
# exec'd by nobody; the daemon (ASan/UBSan) under strace:
#   - readable, mode 0755: its own pages read (one extent, 32768 bytes,
#     by fadvise64), so the other case is not passed by a daemon that
#     reads no script;
#   - exec-only, mode 0711: nothing of it read (no fadvise64 of it), "not
#     read ahead" said.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need strace setpriv
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
chmod 755 "$(dirname "$d")" "$d"	# for nobody
cd "$d" || fail "cd $d"
for s in readable exec-only; do
	{ printf '#!/bin/sh\nexit 0\n'; for _ in $(seq 1000); do printf '# %061d\n' 0; done; } >$s &&
		"$PBITMAP" add -q $s && "$PBITMAP" set -q --pages 0-7 $s || fail "cannot stamp $s"
done
chmod 0755 readable && chmod 0711 exec-only || fail "chmod"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
sleep 2.1	# pbitmap's own opens: not the daemon's, but not "recent" either

printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\n' >on.conf
daemon_start on.conf -f -qq -y -e trace=fadvise64 -o trace
"${NOBODY[@]}" ./readable || fail "nobody cannot run ./readable"
! "${NOBODY[@]}" ./exec-only 2>/dev/null || fail "nobody's sh read ./exec-only (mode $(stat -c %a exec-only))"
said() { grep -c "^pbitmapd: $d/$1: pid [0-9]*: $2" daemon.log; }
for _ in $(seq 100); do
	(($(said readable "a script") == 1 && $(said exec-only "") == 1)) && [[ $(counter pending) == 0 ]] && break
	sleep 0.1
done
daemon_stop
(($(said readable "a script: its own pages, 1 files, 1 extents, 32768 bytes") == 1)) ||
	fail "./readable's own pages were not read: $(cat daemon.log)"
grep -qE "fadvise64\([0-9]+<$d/readable>, 0, 32768, POSIX_FADV_WILLNEED\) = 0" trace ||
	fail "no fadvise64 of ./readable's pages 0-7: $(cat trace)"
pass "a readable script exec'd by nobody: its own pages read (32768 bytes)"
(($(said exec-only "not read ahead") == 1)) || fail "./exec-only: want 'not read ahead' said: $(cat daemon.log)"
! grep -q "fadvise64([0-9]*<$d/exec-only>" trace || fail "./exec-only was read: $(grep exec-only trace)"
pass "an exec-only script exec'd by nobody: nothing of it read"
