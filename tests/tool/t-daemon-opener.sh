#!/bin/bash
# t-daemon-opener: a data file is read ahead as its opener, or not at all.
# An open event says nothing of the open's mode: a user may open for
# writing only a file they may not read, and the daemon, root, must not
# read it into the page cache for them (issue 45: nothing is read that
# the user could not read).  Nor may it read for an opener it can no
# longer tell from another process with the same PID.
#
# The daemon (ASan/UBSan), three stamped 1 MiB files, pages 0-7 marked:
#   - wronly, root's, mode 0602, opened O_WRONLY by nobody (who stays
#     until the daemon is done):
#     nothing of it cached (fincore), skip_denied 1;
#   - open, mode 0644, opened O_RDONLY by user 4242: read ahead
#     (data_prefetched 1, its 8 pages cached), so the first case is not
#     passed by a daemon that reads nothing;
#   - the readable file's record decoded as nobody, not as 4242 (its
#     reader's last setresuid() before its fadvise64() is to 65534): the
#     opener is not the file's owner, whose record it is to craft;
#   - gone, opened by a shell that exits while the daemon is stopped
#     (SIGSTOP), then SIGCONT: the opener is gone when its event is read,
#     nothing read (data_skip_gone 1); opened again at once by this
#     shell, which stays: read (data_prefetched 1: a file not read is not
#     "recent", or this open would have been skipped as one and read
#     nothing).  skip_recent itself is not asked: it counts every file
#     on the filesystem, and under make check the package tests beside
#     this one can exec a stamped program again within 2 s (CI saw
#     skip_recent 2 here, with t-shipped's pbt-ship in the daemon's log);
#   - reused, root's, mode 0602, opened O_WRONLY by nobody, who exits
#     while the daemon is stopped; its PID then given to a root process
#     (ns_last_pid), and the daemon let go on: nothing read, none of it
#     cached, its open a gone opener's (data_skip_gone).  A daemon that looked the opener up by
#     PID (pidfd_open) read the file as root; the event's own pidfd
#     (FAN_REPORT_PIDFD) is the opener's, or none once it has exited.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need strace setpriv python3 fincore
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
chmod 755 "$(dirname "$d")" "$d"	# for nobody
cd "$d" || fail "cd $d"
stamp_data wronly open gone reused
chmod 0602 wronly reused && chmod 0644 open gone || fail "chmod"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
cached() { fincore -nb -o RES "$1"; }
sync && echo 1 >/proc/sys/vm/drop_caches
sleep 2.1	# pbitmap's own opens: not the daemon's, but not "recent" either
# Data files read whatever the device: READ_DATA=auto may leave them to the kernel
# (t-daemon-program).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\n' >on.conf

daemon_start on.conf -f -y -e trace=pidfd_open,setresuid,fadvise64 -o strace.log
# Each opener stays until the daemon is done with both (or 20 s): under
# make check the daemon may take an event a second late, and an opener
# gone by then is read for by no one (the last case).
"${NOBODY[@]}" /usr/bin/python3 -c 'import os, sys, time; os.open(sys.argv[1], os.O_WRONLY); time.sleep(20)' wronly &
wronly_pid=$!
# by another user than nobody, whom the record's decoding must not be
setpriv --reuid=4242 --regid=4242 --clear-groups /usr/bin/python3 -c \
	'import sys, time; open(sys.argv[1]); time.sleep(20)' open &
open_pid=$!
at_exit "kill $wronly_pid $open_pid 2>/dev/null"
for _ in $(seq 150); do
	[[ $(counter data_prefetched) == 1 && $(counter skip_denied) == 1 && $(counter pending) == 0 ]] && break
	sleep 0.1
done
kill "$wronly_pid" "$open_pid"; wait "$wronly_pid" "$open_pid" 2>/dev/null
read -r p s w o <<<"$(counter data_prefetched) $(counter skip_denied) $(cached wronly) $(cached open)"
((p == 1 && s == 1 && w == 0 && o >= 8 * 4096)) ||
	fail "data_prefetched $p, skip_denied $s, cached: wronly $w, open $o bytes; want 1, 1, 0, at least 32768: $(cat daemon.log)"
pass "opened for writing only by a user who may not read it: nothing read (skip_denied 1, 0 bytes cached); the readable file read ahead ($o bytes cached)"
daemon_stop
# "PID setresuid(U, U, U" (possibly <unfinished ...>), "PID fadvise64(FD</path/open>"
decoder=$(awk -v f="$d/open" '
	$2 ~ /^setresuid\(/ { split($2, a, /[(,]/); as[$1] = a[2] }
	$2 ~ /^fadvise64\(/ && index($2, "<" f ">") { print as[$1] }' strace.log | sort -u)
[[ $decoder == 65534 ]] ||
	fail "the readable file's reader was user '$decoder' when it read, want 65534 (nobody) only: $(cat strace.log)"
pass "its record decoded as nobody, not as its opener"

# From here the daemon runs without strace, and its files' caches are
# looked at while it is stopped: fincore's own open, read after fincore
# has exited, is a gone opener's (data_skip_gone), never a reader that
# would make the file "recent" or cache it.
daemon_start on.conf
at_exit "kill -CONT $DPID 2>/dev/null"
unseen_cached() { kill -STOP "$DPID"; cached "$1"; kill -CONT "$DPID"; }
# settled G P: data_skip_gone G and data_prefetched P, no reader left (10 s at most)
settled() {
	for _ in $(seq 100); do
		[[ $(counter data_skip_gone) == "$1" && $(counter data_prefetched) == "$2" && $(counter pending) == 0 ]] &&
			break
		sleep 0.1
	done
}
kill -STOP "$DPID"
sh -c ': <gone' || fail "cannot open gone"
kill -CONT "$DPID"
settled 1 0
read -r p g <<<"$(counter data_prefetched) $(counter data_skip_gone)"
c=$(unseen_cached gone)
((p == 0 && g == 1 && c == 0)) ||
	fail "data_prefetched $p, data_skip_gone $g, gone's cached bytes $c; want 0, 1, 0: $(cat daemon.log)"
pass "an opener gone before the daemon could take its identity: nothing read (data_skip_gone 1)"
settled 2 0	# fincore's
: <gone || fail "cannot open gone again"	# by this shell, which stays
settled 2 1
p=$(counter data_prefetched)
c=$(unseen_cached gone)
((p == 1 && c >= 8 * 4096)) ||
	fail "opened again: data_prefetched $p, cached $c bytes; want 1, at least 32768: $(cat daemon.log)"
pass "opened again by a process that stays: read ahead, not skipped as recent (data_prefetched 1, $c bytes cached)"
settled 3 1	# fincore's

# The opener's PID given to a root process before the daemon reads the
# event: the next PID is the one after ns_last_pid's, unless another
# process forks in between (tried again then).  One Python process does
# it all, reaping each child it forks before the next: a loop of
# "sleep &" and "kill $!" in this shell left it records of killed jobs
# whose PIDs its later children were given, and under make check (other
# processes forking, so tries missed) bash lost one ("wait_for: No
# record of process", CI of 84e9791).
kill -STOP "$DPID"
pids=$(/usr/bin/python3 - reused <<'EOF'
import os, sys, time
opener = os.fork()
if opener == 0:  # nobody: opens for writing, exits
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)
    os.open(sys.argv[1], os.O_WRONLY)
    os._exit(0)
if os.waitpid(opener, 0)[1] != 0:
    sys.exit("nobody cannot open %s for writing" % sys.argv[1])
for _ in range(50):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(opener - 1))
    child = os.fork()
    if child == 0:  # root, stays a minute at most; not the reader of our output
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        time.sleep(60)
        os._exit(0)
    if child == opener:
        print(opener, child)
        sys.exit(0)
    os.kill(child, 9)
    os.waitpid(child, 0)
sys.exit("PID %d was not given to a root process in 50 tries" % opener)
EOF
)
read -r opener reuser <<<"$pids"
[[ -n $reuser && $reuser == "$opener" ]] || fail "no root process with the PID of reused's opener (see above)"
at_exit '[[ -z $reuser ]] || kill "$reuser" 2>/dev/null'	# not once it is gone: not our child, its PID reusable
kill -CONT "$DPID"
settled 4 1
read -r p g <<<"$(counter data_prefetched) $(counter data_skip_gone)"
kill "$reuser" && reuser=
c=$(unseen_cached reused)
((p == 1 && g == 4 && c == 0)) ||
	fail "reused: data_prefetched $p, data_skip_gone $g, reused's cached bytes $c; want 1, 4, 0: $(cat daemon.log)"
daemon_stop
pass "an opener whose PID a root process has when the event is read: nothing read as root (its open a gone opener's, 0 bytes cached)"
