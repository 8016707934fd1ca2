# shellcheck shell=bash
# tests/lib/daemon.sh: the ASan/UBSan pbitmapd of the host tests
# (tests/tool/t-daemon*.sh), started in the current directory (daemon.log,
# status) and stopped with SIGTERM.  Sourced after ../lib.sh.
#
#   daemon_start CONF [STRACE_OPTION...]
#                  pbitmapd -v -c CONF, under strace with those options
#                  when given, its queues of events 65536 long; returns
#                  once its status file is written (20 s at most), DPID
#                  its pid
#   daemon_stop    SIGTERM: it must exit with 0 and no sanitizer report
#   counter NAME   its value in the status file (written at most once a
#                  second after an event that starts no reader)
#   planned PATH [TEXT]
#                  how many of the daemon's log lines say PATH's exec was
#                  read ahead through its plan ("PATH: pid N: plan, TEXT")
#   stamp_data FILE...
#                  each a data file of 1 MiB of random bytes, stamped with
#                  pages 0-7 marked (its user.pbitmap attribute)
#   need_local_dir DIR
#                  fails unless DIR is on a local block filesystem (the
#                  daemon watches only those)
#   twin_ext4 DIR...
#                  an ext4 image of 32 MiB for each, all of one UUID (so
#                  one filesystem ID), loop-mounted at each DIR (made) in
#                  that order, unmounted at exit

PBITMAPD=${PBITMAPD:-$TOP/build/asan/pbitmapd}
[[ -x $PBITMAPD ]] || fail "no $PBITMAPD (make build/asan/pbitmapd)"

DAEMON_JOB= DPID=
daemon_start() {
	local queued=/proc/sys/fs/fanotify/max_queued_events q0

	rm -f status	# a stopped daemon's: the wait below is for this one's
	# A queue of 65536 events, not 16384, for this daemon only (a group's
	# length is the sysctl's at its fanotify_init()): the host's opens
	# beside the test's (a kernel build, under make check) must not
	# overflow it while the ASan daemon is behind, or the test's own
	# events are lost (queue_overflows).
	q0=$(cat "$queued") && at_exit "echo $q0 >$queued" && echo 65536 >"$queued" ||
		fail "cannot lengthen $queued (Linux 5.13 or later, as root)"
	if (($# > 1)); then
		# Following forks, stopped only at the traced calls
		# (--seccomp-bpf): stopped at each of the few calls an open
		# event costs, the daemon fell behind a kernel build's opens
		# beside it, and the queue of events overflowed (CI, stop 87).
		local follow=()
		[[ " ${*:2} " == *" -f "* || " ${*:2} " == *" -ff "* ]] && follow=(--seccomp-bpf)
		# LeakSanitizer does not work under ptrace: the leak check is t-daemon's.
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
			strace "${follow[@]}" "${@:2}" "$PBITMAPD" -v -c "$1" -s "$PWD/status" 2>daemon.log &
	else
		"$PBITMAPD" -v -c "$1" -s "$PWD/status" 2>daemon.log &
	fi
	DAEMON_JOB=$!
	at_exit "kill $DAEMON_JOB"
	for _ in $(seq 200); do [[ -s status ]] && break; sleep 0.1; done
	[[ -s status ]] || fail "pbitmapd wrote no status in 20 s: $(cat daemon.log)"
	echo "$q0" >"$queued"
	DPID=$(awk '$1 == "pid" { print $2 }' status)
	# killed, strace detaches and leaves it running: a failed test's daemon
	# would read ahead, and open files, beside the next tests' daemons
	[[ $DPID == "$DAEMON_JOB" ]] || at_exit "kill $DPID"
}

daemon_stop() {
	local rc=0

	kill -TERM "$DPID"
	wait "$DAEMON_JOB" || rc=$?	# strace exits with its tracee's status
	((rc == 0)) || fail "pbitmapd exited with $rc on SIGTERM: $(cat daemon.log)"
	if grep -q "Sanitizer" daemon.log; then fail "sanitizer report: $(cat daemon.log)"; fi
}

counter() { awk -v k="$1" '$1 == k { print $2 }' status; }

planned() { grep -c "^pbitmapd: $1: pid [0-9]*: plan, ${2-}" daemon.log; }

stamp_data() {
	local f

	for f; do
		head -c $((1 << 20)) /dev/urandom >"$f" && "$PBITMAP" add -q "$f" &&
			"$PBITMAP" set -q --pages 0-7 "$f" || fail "cannot stamp $f"
	done
}

need_local_dir() {
	case $(stat -f -c %T "$1") in
	tmpfs | overlayfs) fail "$1 is on $(stat -f -c %T "$1"): the test needs a local block filesystem (set TMPDIR)" ;;
	esac
}

twin_ext4() {
	local fs uuid

	uuid=$(cat /proc/sys/kernel/random/uuid)
	for fs; do
		truncate -s 32M "$fs.img" && mkfs.ext4 -q -F -U "$uuid" "$fs.img" && mkdir "$fs" ||
			fail "cannot make $fs.img"
		mount -o loop "$fs.img" "$fs" && at_exit "umount $PWD/$fs" || fail "cannot loop-mount $fs.img"
	done
}
