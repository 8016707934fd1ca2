#!/bin/bash
# t-daemon-own-backlog: the opens of the daemon's own children are known as
# its own however far behind the open events it is when they exit.
#
# An exec child opens the files of its program's plan; its opens are the
# daemon's own (own_opens) and start nothing, or a data file the plan lists
# would be read twice at once.  A child is known as the daemon's until the
# events queued by its exit are read.  The daemon used to read at most 64
# buffers (READ_ROUNDS, some 8700 events on ext4) when a child ended and
# then forget it: behind a longer queue (a kernel build beside it: CI,
# stop 87), the child's opens were read later as a stranger's, whose
# pidfd was none by then (data_skip_gone), or who was read for.
#
# The daemon (ASan/UBSan, its queue 65536 events long: daemon_start), D,
# a stamped data file, and copies of /bin/sleep planned with D (running
# while the daemon looks: a program gone by then has its own pages read
# only):
#   - calm, run with the queue empty: its exec child's opens counted own
#     (own_opens up by k, at least 1);
#   - busy, run while the daemon is stopped (SIGSTOP) after cat has
#     opened 20000 files, then let go on: its exec child reads the plan
#     and exits long before its open of D is read.  own_opens must go up
#     by k again, no data file be read ahead, and the queue must not have
#     overflowed (queue_overflows).

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
need_local_dir "$d"
stamp_data D
for p in calm busy; do
	cp /bin/sleep "$p" && "$PBITMAP" add -q --plan-size 4K "$p" && "$PBITMAP" plan "$p" D ||
		fail "cannot plan $p"
done
mkdir many && (cd many && seq 20000 | xargs touch) || fail "cannot make many/"
sleep 2.1	# pbitmap's own opens of D: not "recent", but not to overlap either
# Data files read whatever the device: READ_DATA=auto may leave them to the kernel
# (t-daemon-program).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\nPBITMAP_DAEMON_READ_PROGRAM=yes\n' >on.conf
daemon_start on.conf

# own_opens once both the program's plan was read and its exec child's open of D counted
settle() {
	local p=$1 own0=$2 want=$3

	for _ in $(seq 300); do
		snap_own=$(counter own_opens)
		[[ $(planned "$d/$p") == 1 && $(counter pending) == 0 ]] &&
			{ [[ -z $want ]] || ((snap_own - own0 >= want)); } && break
		sleep 0.1
	done
}

own0=$(counter own_opens)
./calm 5 &
at_exit "kill $! 2>/dev/null"
settle calm "$own0" 1
sleep 1 && settle calm "$own0" 1	# more than one open: each counted by now
k=$((snap_own - own0))
((k >= 1)) || fail "calm's exec child's open of D not counted as the daemon's own: own_opens $own0 -> $snap_own: $(cat daemon.log)"

read -r own1 gone1 data1 <<<"$(counter own_opens) $(counter data_skip_gone) $(counter data_prefetched)"
at_exit "kill -CONT $DPID 2>/dev/null"
kill -STOP "$DPID"
cat many/* || { kill -CONT "$DPID"; fail "cat many/* failed"; }
./busy 10 &
at_exit "kill $! 2>/dev/null"
kill -CONT "$DPID"
settle busy "$own1" "$k"
read -r own2 gone2 data2 lost <<<"$(counter own_opens) $(counter data_skip_gone) $(counter data_prefetched) $(counter queue_overflows)"
((lost == 0)) || fail "the queue of open events overflowed $lost times, even at 65536: busy's opens may be among those lost"
((own2 - own1 == k)) ||
	fail "busy's exec child's opens behind 20000 others: own_opens up by $((own2 - own1)), want $k as for calm (data_skip_gone $gone1 -> $gone2): $(cat daemon.log)"
((data2 == data1)) || fail "a data file was read ahead for busy's exec child: data_prefetched $data1 -> $data2: $(cat daemon.log)"
pass "an exec child's $k open(s) behind 20000 queued events: the daemon's own, as with none queued; nothing read for it as a stranger"
daemon_stop
