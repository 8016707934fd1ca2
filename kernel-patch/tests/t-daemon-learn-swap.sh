#!/bin/bash
# Guest test, on Debian's own 6.12 kernel (no pbitmap patch): a learned
# plan built as root reads nothing of a file a user's name leads to
# (learn.c, learn_plan(), root_owned()).
#
# With PBITMAP_DAEMON_LEARN=every, nobody's run of a root-owned program
# stamped --learn=every is written as root, its plan with it.  That plan
# is every user's: it names root's files on root's paths only, and a
# file of the user's own the run mapped is left out before root opens
# it.  Here the run maps its user's file u/d/f, then, as it exits,
# renames the directory d and leaves in its place a link to
# /root/t-secret, whose f (root's, 0600) has the same name.  The writer,
# root, must not read that f (the rule: nothing is read that the exec'ing
# user could not read), nor parse anything a user made:
#   - the program's generation and plan are written (learn_written +1);
#   - the log says u/d/f was left out of the plan, not being root's;
#   - not one byte of /root/t-secret/f is in the page cache after (it was
#     evicted before the run).
# A writer that opened the name as it found it read the secret's ELF
# header, and its attribute, as root; one that took the user's file into
# the plan opened (and, not swapped, parsed) it as root.
set -euo pipefail
W=/var/tmp/t-daemon-learn-swap
source "$(dirname "$0")/daemonlib.sh"
[ -e /sys/kernel/btf/vmlinux ] || fail "$(uname -r) has no BTF: learning cannot load"
R=/opt/t-daemon-learn-swap
S=/root/t-secret
rm -rf "$R" "$S" && mkdir -p -m 755 "$R" && mkdir -m 700 "$S"
trap 'stop_daemon; umount "$R/stick" 2>/dev/null || true; rm -rf "$R" "$S"' EXIT
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; "$@"; }

cat >swap.c <<'PROG'
/*
 * swap FILE DIR TARGET [swap]: map FILE, touch its 16 pages, and with
 * "swap" rename DIR (FILE's directory) and leave a link to TARGET in its
 * place as it exits.  A second asleep at each end: a run is followed if it
 * still runs when the daemon takes its exec, its file named if mapped when
 * the daemon takes the faults.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char old[4096];
	volatile const char *p;
	long s = 0;
	int fd;

	if (argc < 4)
		return 1;
	sleep(1);
	fd = open(argv[1], O_RDONLY);
	p = fd < 0 ? MAP_FAILED : mmap(0, 65536, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 1;
	for (int i = 0; i < 65536; i += 4096)
		s += p[i];
	sleep(1);
	snprintf(old, sizeof(old), "%s.old", argv[2]);
	if (argc > 4 && (rename(argv[2], old) || symlink(argv[3], argv[2])))
		return 2;
	printf("%ld\n", s);
	return 0;
}
PROG
gcc -O1 -o "$R/swap" swap.c || fail "cannot build the swapping program"
pbitmap add -q --learn=every "$R/swap" || fail "cannot stamp $R/swap"
head -c $((1 << 20)) /dev/urandom >"$S/f" && chmod 600 "$S/f"
mkdir u && chown 65534:65534 u
"${NOBODY[@]}" mkdir u/d && "${NOBODY[@]}" sh -c "head -c 65536 /dev/urandom >u/d/f" ||
	fail "nobody cannot make u/d/f"
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=every\nPBITMAP_DAEMON_LEARN_INTERVAL_S=0\n' >every.conf

start_daemon every.conf -v
[ "$(counter learning)" = 1 ] || fail "learning is not on ($(counter learning)): $(cat daemon.log)"
cold "${NOBODY[@]}" "$R/swap" "$W/u/d/f" "$W/u/d" "$S" >/dev/null ||
	fail "the program failed"	# its record read: from now on it is learned
settle execs 1
w0=$(counter learn_written)
evict "$S/f"
cold "${NOBODY[@]}" "$R/swap" "$W/u/d/f" "$W/u/d" "$S" swap >/dev/null || fail "the swapping run failed"
[ -L u/d ] || fail "the run left no link in place of u/d"
settle learn_written $((w0 + 1))
stop_daemon
grep -q "$W/u/d/f: left out of the plan: not root's" daemon.log ||
	fail "the log does not say u/d/f was left out of the plan: $(cat daemon.log)"
[ "$(cached "$S/f")" = 0 ] ||
	fail "the learned plan's writer, root, read $(cached "$S/f") bytes of $S/f, where nobody's name u/d/f led"
echo "a user's file swapped for a link to root's $S: the plan learned as root left it out, and read" \
	"not a byte of $S/f"

# A filesystem mounted nosuid is a user's to make (udisks mounts a user's
# USB stick so): its files are root's if it says so, and root does not
# write them for every user's runs.  An ext4 image mounted nosuid at
# $R/stick (its root directory root's, mode 755, as on a crafted stick)
# holds a copy of swap, stamped --learn=every: nobody's second run of it
# is not written (learn_written +0, learn_skip_policy +1: nobody's own
# pass finds it root's), where $R/swap's was.
truncate -s 64M stick.img && mkfs.ext4 -q -F stick.img && mkdir "$R/stick" &&
	mount -o loop,nosuid stick.img "$R/stick" && cp "$R/swap" "$R/stick/swap" &&
	pbitmap add -q --learn=every "$R/stick/swap" && "${NOBODY[@]}" sh -c "head -c 65536 /dev/urandom >u/f2" ||
	fail "cannot make the nosuid stick"
stick_runs() { pbitmap show --json "$R/stick/swap" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["runs"])'; }
r0=$(stick_runs)	# a copy of swap, learned above
start_daemon every.conf -v
"${NOBODY[@]}" "$R/stick/swap" "$W/u/f2" "$W/u" "$S" >/dev/null || fail "the stick's program failed"
settle execs 1	# its record read: from now on it is learned
w0=$(counter learn_written) p0=$(counter learn_skip_policy)
"${NOBODY[@]}" "$R/stick/swap" "$W/u/f2" "$W/u" "$S" >/dev/null || fail "the stick's program failed"
settle learn_skip_policy $((p0 + 1))
stop_daemon
[ "$(counter learn_written)" = "$w0" ] && [ "$(stick_runs)" = "$r0" ] ||
	fail "root wrote a --learn=every program on a filesystem mounted nosuid: learn_written" \
		"+$(($(counter learn_written) - w0)), its runs $r0 -> $(stick_runs)"
echo "a --learn=every program root's on a filesystem mounted nosuid: nobody's run not written as root"

# Every user's runs are written as root, and so of root's files only: a
# user's own program stamped --learn=every is not even followed in
# another user's runs (learners +0), where root's is (learners +1 above).
mkdir -m 755 v && chown 4242:4242 v && cp "$R/swap" v/swap && chown 4242:4242 v/swap &&
	setpriv --reuid=4242 --regid=4242 --clear-groups pbitmap add -q --learn=every v/swap ||
	fail "cannot make user 4242's v/swap"
start_daemon every.conf -v
"${NOBODY[@]}" v/swap "$W/u/f2" "$W/u" "$S" >/dev/null || fail "v/swap failed"	# its record read
settle execs 1
l0=$(counter learners)
"${NOBODY[@]}" v/swap "$W/u/f2" "$W/u" "$S" >/dev/null || fail "v/swap failed"
settle execs 2
stop_daemon
[ "$(counter learners)" = "$l0" ] ||
	fail "nobody's run of user 4242's --learn=every program was followed (learners $l0 -> $(counter learners))"
echo "a user's own --learn=every program: another user's run not followed"
echo "PASS: a learned plan's writer reads nothing a user's swapped name leads to on $(uname -r)"
