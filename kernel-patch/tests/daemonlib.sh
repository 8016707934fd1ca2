# Sourced by the stock-kernel guest tests of pbitmapd (t-daemon.sh, t-daemon-hold.sh,
# t-daemon-learn.sh, t-daemon-learn-plan.sh) with W set: their work
# directory, made afresh; fail(); NOBODY; the checks that this is a stock
# kernel (a patched one with DAEMON_KERNEL=patched: t-daemon-kernel-meta.sh)
# and pbitmapd is at hand; cached and evict (a file's bytes in the
# page cache, and out of it); and for the learning tests, a daemon with its
# status file in $W (start_daemon, stop_daemon, counter, settle).
HERE=$(cd "$(dirname "$0")" && pwd)
PBITMAPD=$HERE/pbitmapd
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W" && cd "$W"
fail() { echo "FAIL: $*" >&2; [ -f "$W/daemon.log" ] && tail -n 20 "$W/daemon.log" >&2; exit 1; }
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

if [ "${DAEMON_KERNEL:-stock}" = patched ]; then
	[ -e /proc/sys/vm/pbitmap_enabled ] ||
		fail "this kernel ($(uname -r)) has no pbitmap patch: the test wants the series' kernel"
else
	[ ! -e /proc/sys/vm/pbitmap_enabled ] ||
		fail "this kernel ($(uname -r)) has the pbitmap patch: the test wants Debian's stock kernel"
fi
[ -x "$PBITMAPD" ] || fail "no pbitmapd beside the test ($PBITMAPD): make vm-check copies it"

cached() { fincore -nb -o RES "$1" | tr -d ' '; }
# evict FILE...: written back first (DONTNEED leaves dirty pages), then out
evict() {
	python3 -c 'import os, sys
for f in sys.argv[1:]:
    fd = os.open(f, os.O_RDONLY); os.fdatasync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$@"
	for f in "$@"; do [ "$(cached "$f")" = 0 ] || fail "cannot evict $f: $(cached "$f") bytes stay"; done
}

DPID=
# The children's CPU limit is raised to their alarm's 10 s: under TCG, with
# one host thread running both vCPUs, the guest charges a child the time
# the other vCPU ran, and a busy host's gaps too.  cc1's exec child took
# 0.3-1.5 s of its 2 idle, and was killed once in CI (child_cpu_us 4955131,
# skip_failed 1: "cc1 run 2: the daemon prefetched nothing").
start_daemon() {	# CONF [OPTION...]: pbitmapd with $W/CONF, once its status is written
	grep -q '^PBITMAP_DAEMON_CHILD_CPU_S=' "$W/$1" || echo PBITMAP_DAEMON_CHILD_CPU_S=10 >>"$W/$1"
	rm -f "$W/status"
	"$PBITMAPD" -S "$W/state" "${@:2}" -c "$W/$1" -s "$W/status" 2>>"$W/daemon.log" &
	DPID=$!
	for _ in $(seq 100); do [ -s "$W/status" ] && return 0; sleep 0.1; done
	fail "pbitmapd wrote no status file in 10 s"
}
# A daemon killed with -9 while it followed a learned run (fault-around off
# then, by default) leaves fault_around_bytes changed and the value found
# kept beside its status file: put back here, so that the guest's later
# tests fault as it booted.
stop_daemon() {
	[ -z "$DPID" ] || { kill "$DPID" 2>/dev/null; wait "$DPID" || true; DPID=; }
	[ ! -e "$W/fault-around-bytes" ] || "$PBITMAPD" --restore-fault-around -s "$W/status" ||
		fail "cannot put fault_around_bytes back: $(cat "$W/fault-around-bytes")"
}
# snap: every counter of the daemon's status file, into C[NAME].  Read by
# bash itself: the tests read counters thousands of times, and an awk
# started each time costs a guest under TCG more CPU than the daemon spends
# on the exec it counts.  Where many are read at once (t-daemon's crafted
# plans: a dozen for each of 74 execs), one snap in the shell itself saves
# the subshell each $(counter NAME) forks.
declare -A C
snap() {
	local k v
	C=()
	while read -r k v _; do C[$k]=$v; done <"$W/status"
}
# counter NAME: its value in the status file (nothing if it has none).
counter() { snap; echo "${C[$1]-}"; }
# settle NAME MIN: no child at work, and counter NAME at least MIN (60 s at
# most: a writer's renamed copy of cc1, 30-40 MB read at 150 requests a
# second and synced, may take a loaded host's guest more than 20 s; the
# daemon allows a writer 120)
settle() {
	for _ in $(seq 600); do
		[ "$(counter pending)" = 0 ] && [ "$(counter "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	fail "after 60 s: $1 $(counter "$1"), wanted $2; pending $(counter pending); the status file:
$(tr '\n' ' ' <"$W/status")"
}

# make_walker: ./walker, a program that given "walk [S]" stats 240 files in
# the 24 directories of ./tree (made here, new) and then sleeps S seconds
# (a learned run must still run when the daemon takes its exec's event: a
# process gone by then is not followed, learn_lost; a warm walk ends in
# milliseconds), and given anything else exits at once; the metadata
# lists' tests (t-daemon-meta.sh, t-daemon-kernel-meta.sh).
make_walker() {
	printf '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <sys/stat.h>\n#include <unistd.h>\nint main(int c, char **v)\n{\n\tstruct stat st;\n\tchar p[64];\n\tint n = 0;\n\n\tif (c < 2 || strcmp(v[1], "walk"))\n\t\treturn 0;\n\tfor (int d = 0; d < 24; d++)\n\t\tfor (int f = 0; f < 10; f++) {\n\t\t\tsnprintf(p, sizeof(p), "tree/d%%d/f%%d", d, f);\n\t\t\tn += !stat(p, &st);\n\t\t}\n\tif (c > 2)\n\t\tsleep(atoi(v[2]));\n\treturn n != 240;\n}\n' >walker.c
	gcc -O1 -o walker walker.c || fail "cannot build the walker"
	for d in $(seq 0 23); do
		mkdir -p "tree/d$d"
		for f in $(seq 0 9); do echo "$d $f" >"tree/d$d/f$f"; done
	done
}
# walker_disk: DISK, the disk that holds $W (its /sys/block/DISK/stat
# counts the walk's read requests).
walker_disk() {
	local src
	src=$(findmnt -no SOURCE --target "$W")
	DISK=$(lsblk -no PKNAME "$src" 2>/dev/null || true)
	[ -n "$DISK" ] || DISK=$(basename "$src")
	[ -r "/sys/block/$DISK/stat" ] || fail "no /sys/block/$DISK/stat for $W's disk"
}
# walk_reads: WALK, the read requests of "./walker walk" on DISK, counted
# once the reads in flight (the daemon's WILLNEEDs) have completed.
walk_reads() {
	local r0 r1 _i inflight
	for _i in $(seq 100); do
		read -r inflight _ <"/sys/block/$DISK/inflight"
		[ "$inflight" = 0 ] && break
		sleep 0.05
	done
	read -r r0 _ <"/sys/block/$DISK/stat"
	./walker walk || fail "the walker failed"
	read -r r1 _ <"/sys/block/$DISK/stat"
	WALK=$((r1 - r0))
}
