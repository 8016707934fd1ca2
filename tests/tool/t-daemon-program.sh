#!/bin/bash
# t-daemon-program: PBITMAP_DAEMON_READ_PROGRAM=auto,
# PBITMAP_DAEMON_READ_LIBRARIES=auto and PBITMAP_DAEMON_READ_DATA=auto, the
# defaults.  A stamped program's own pages are left to the kernel where its
# device's read-ahead window is at least the device's largest request (its
# faults read the file in requests as large as the daemon's, and a second
# reader beside them splits both), and read where the window is narrower;
# so are its libraries' when it has no plan, and stamped data files' at
# their open and in a plan; the other files of its plan are read either
# way.  The daemon (ASan/UBSan) under strace, its posix_fadvise() calls seen.
#
# Two loop-mounted ext4 images: narrow (read_ahead_kb half of
# max_sectors_kb, as 6.12 has it) and wide (read_ahead_kb twice
# max_sectors_kb, as 7.x gives a rotational disk).
#   - narrow/prog, a copy of /bin/sleep with pages 0-1 marked: read;
#   - wide/prog, the same: not read;
#   - wide/planned, planned as itself (its entry given its identity, as
#     learned plans are) and B: B read, planned not;
#   - narrow/uses and wide/uses, built here, each linked (DT_RUNPATH) to
#     a stamped libpbtest.so beside it, pages 0-1 of both marked: narrow's
#     program and library read, wide's neither;
#   - narrow/D and wide/D, stamped data files (pages 0-1), each opened by
#     a process: narrow's read, wide's not (the log says so), with a join
#     gap of 1024 KiB (a request as dear as a megabyte: the rule's bound);
#     at the default 256 KiB, wide/D read too;
#   - wide/P and narrow/P, stamped data files in wide/planned's plan, never
#     opened: each judged by its own device, wide/P not read, narrow/P read
#     (its log line: 1 data file left);
#   - program_to_kernel counts the three wide programs,
#     libraries_to_kernel the two without a plan, data_to_kernel wide/D and
#     wide/P; the log names the wide device.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need mkfs.ext4 mount findmnt truncate strace gcc
[[ $(id -u) == 0 ]] || fail "must run as root: loop mounts, and pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
for fs in narrow wide; do
	truncate -s 32M $fs.img && mkfs.ext4 -q -F $fs.img && mkdir $fs || fail "cannot make $fs.img"
	mount -o loop $fs.img $fs || fail "cannot loop-mount $fs.img"
	q=/sys/block/$(basename "$(findmnt -n -o SOURCE "$d/$fs")")/queue
	max=$(<$q/max_sectors_kb) || fail "no $q/max_sectors_kb"
	((max >= 8)) || fail "$q/max_sectors_kb is $max"
	ra=$((max / 2))
	[[ $fs == wide ]] && ra=$((max * 2))
	echo $ra >$q/read_ahead_kb && [[ $(<$q/read_ahead_kb) == "$ra" ]] ||
		fail "cannot set $q/read_ahead_kb to $ra"
	cp /bin/sleep $fs/prog && "$PBITMAP" add -q $fs/prog && "$PBITMAP" set -q --pages 0-1 $fs/prog ||
		fail "cannot stamp $fs/prog"
done
# 16 KiB of data: pages 0-1 are in the file whatever the linker's layout
printf 'static const char pad[16384] __attribute__((used)) = { 1 };\nint pbtest(void) { return pad[0] - 1; }\n' >lib.c
printf '#include <unistd.h>\nint pbtest(void);\nint main(void) { sleep(2); return pbtest(); }\n' >uses.c
for fs in narrow wide; do
	gcc -shared -fPIC -o $fs/libpbtest.so lib.c &&
		gcc -o $fs/uses uses.c -L$fs -lpbtest -Wl,--enable-new-dtags,-rpath,"$d/$fs" ||
		fail "cannot build $fs/uses and $fs/libpbtest.so"
	for f in uses libpbtest.so; do
		"$PBITMAP" add -q $fs/$f && "$PBITMAP" set -q --pages 0-1 $fs/$f || fail "cannot stamp $fs/$f"
	done
done
for f in narrow/D wide/D wide/P narrow/P; do
	head -c 10000 /dev/urandom >$f && "$PBITMAP" add -q $f && "$PBITMAP" set -q --pages 0-1 $f ||
		fail "cannot stamp the data file $f"
done
head -c 10000 /dev/urandom >wide/B && cp /bin/sleep wide/planned &&
	"$PBITMAP" add -q --plan-size 4K wide/planned && "$PBITMAP" set -q --pages 0-1 wide/planned &&
	"$PBITMAP" plan wide/planned wide/planned wide/B wide/P narrow/P &&
	python3 "$TOP/tests/lib/plan_identity.py" wide/planned 0 || fail "cannot plan wide/planned"

# five programs at once: more than the default 4 children, which would skip the fifth
# Cached ranges read too (SKIP_CACHED=no): the test watches the reads of files
# its programs have just read themselves (the default: t-prefetch-cached).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_MAX_PARALLEL=8\nPBITMAP_DAEMON_SKIP_CACHED=no\n' >on.conf
# data files are left only where a request costs as much as a megabyte read
{ cat on.conf; echo PBITMAP_DAEMON_JOIN_GAP_KB=1024; } >wide-gap.conf
daemon_start wide-gap.conf -ff -qq -y -e trace=fadvise64 -o trace
grep -q "^pbitmapd: $d/wide: watching execs (.*; the kernel's window is as wide)" daemon.log ||
	fail "the log does not say wide's window is as wide as its requests: $(cat daemon.log)"
if grep -q "^pbitmapd: $d/narrow: watching execs (.*; the kernel's window is as wide)" daemon.log; then
	fail "the log says narrow's window is as wide as its requests: $(cat daemon.log)"
fi

progs=(narrow/prog wide/prog wide/planned narrow/uses wide/uses)
pids=()
for p in "${progs[@]}"; do ./$p 2 & pids+=($!); done	# running while the daemon takes them
for f in narrow/D wide/D; do sleep 2 <$f & pids+=($!); done	# their openers, still there
for pid in "${pids[@]}"; do wait "$pid" || fail "a program did not run under the daemon"; done
handled() { grep -c "^pbitmapd: $d/$1: pid [0-9]*: " daemon.log; }
opened() { grep -c "^pbitmapd: $d/$1: opened by pid [0-9]*: data file${2-, }" daemon.log; }
for _ in $(seq 100); do
	n=0
	for p in "${progs[@]}"; do [[ $(handled "$p") == 1 ]] && n=$((n + 1)); done
	((n == ${#progs[@]})) && [[ $(opened narrow/D) == 1 ]] &&
		[[ $(opened wide/D " left to the kernel$") == 1 ]] && (($(counter data_to_kernel) >= 2)) &&
		[[ $(counter pending) == 0 ]] && break
	sleep 0.1
done
for p in "${progs[@]}"; do
	[[ $(handled "$p") == 1 ]] || fail "$p was not handled once: $(cat daemon.log)"
done
daemon_stop

# "fadvise64(FD</path>, OFFSET, LENGTH, POSIX_FADV_WILLNEED) = 0", a file per
# process (-ff: the three children's calls at once, none cut in two)
reads() { cat trace.* | sed -n "s|^fadvise64([0-9]*<$d/$1>, \([0-9]*\), \([0-9]*\), POSIX_FADV_WILLNEED) = 0|\1 \2|p"; }
[[ $(reads narrow/prog) == "0 8192" ]] ||
	fail "narrow/prog: want its pages 0-1 read (0 8192), read: '$(reads narrow/prog)'"
[[ -z $(reads wide/prog) ]] || fail "wide/prog: want nothing read, read: '$(reads wide/prog)'"
[[ -z $(reads wide/planned) ]] || fail "wide/planned: want nothing read, read: '$(reads wide/planned)'"
[[ $(reads wide/B) == "0 12288" ]] || fail "wide/B: want it read whole (0 12288), read: '$(reads wide/B)'"
pass "a program's own pages read where the window is narrower than a request, left to the kernel" \
	"where it is as wide, with or without a plan; the plan's other files read"
for f in uses libpbtest.so; do
	[[ $(reads narrow/$f) == "0 8192" ]] ||
		fail "narrow/$f: want its pages 0-1 read (0 8192), read: '$(reads narrow/$f)'"
	[[ -z $(reads wide/$f) ]] || fail "wide/$f: want nothing read, read: '$(reads wide/$f)'"
done
pass "without a plan, a library's pages read where the window is narrower, left to the kernel where it is as wide"
# The counters are the machine's (other tests' stamped programs may run on
# this host's disk meanwhile): each of ours is told apart by its log line.
said() { grep -c "^pbitmapd: $d/$1: pid [0-9]*: $2, " daemon.log; }
for p in wide/prog wide/uses; do
	[[ $(said $p "libraries left to the kernel") == 1 ]] ||
		fail "$p: want its libraries left to the kernel: $(cat daemon.log)"
done
[[ $(said narrow/uses "per-file bitmaps") == 1 ]] || fail "narrow/uses: want per-file bitmaps: $(cat daemon.log)"
[[ $(said wide/planned plan) == 1 ]] || fail "wide/planned: want its plan: $(cat daemon.log)"
(($(counter program_to_kernel) >= 3 && $(counter libraries_to_kernel) >= 2)) ||
	fail "program_to_kernel, libraries_to_kernel: want at least 3 and 2, got: $(tr '\n' ' ' <status)"
pass "program_to_kernel counts the three, libraries_to_kernel the two without a plan; the log says which"
for f in narrow/D narrow/P; do
	[[ $(reads $f) == "0 8192" ]] || fail "$f: want its pages 0-1 read (0 8192), read: '$(reads $f)'"
done
[[ $(opened narrow/D) == 1 ]] || fail "narrow/D: want it read at its open once: $(cat daemon.log)"
for f in wide/D wide/P; do
	[[ -z $(reads $f) ]] || fail "$f: want nothing read, read: '$(reads $f)'"
done
[[ $(opened wide/D) == 0 && $(opened wide/D " left to the kernel$") == 1 ]] ||
	fail "wide/D: want it left to the kernel at its open, once: $(cat daemon.log)"
[[ $(said wide/planned "plan") == 1 ]] &&
	grep -q "^pbitmapd: $d/wide/planned: pid [0-9]*: plan, .*, 1 data files left to the kernel$" daemon.log ||
	fail "wide/planned: want its plan's wide/P left, narrow/P read: $(cat daemon.log)"
(($(counter data_to_kernel) >= 2)) || fail "data_to_kernel: want at least 2, got: $(tr '\n' ' ' <status)"
pass "a data file read at its open where the window is narrower, left to the kernel where it is" \
	"as wide, at its open and in a plan (judged by its own device); data_to_kernel counts both"

# The default gap (256 KiB): requests not that dear, wide/D read at its open.
daemon_start on.conf -ff -qq -y -e trace=fadvise64 -o trace256
sleep 2 <wide/D &
wait $! || fail "the opener of wide/D did not run"
for _ in $(seq 100); do
	[[ $(opened wide/D) == 1 && $(counter pending) == 0 ]] && break
	sleep 0.1
done
daemon_stop
got=$(cat trace256.* | sed -n "s|^fadvise64([0-9]*<$d/wide/D>, \([0-9]*\), \([0-9]*\), POSIX_FADV_WILLNEED) = 0|\1 \2|p")
[[ $got == "0 8192" && $(opened wide/D) == 1 ]] ||
	fail "wide/D at the default gap: want its pages 0-1 read at its open (0 8192), read: '$got': $(cat daemon.log)"
pass "at the default join gap (256 KiB) a data file on the wide device is read at its open"
