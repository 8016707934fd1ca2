#!/bin/bash
# t-daemon: pbitmapd's command line, settings and counters, and the daemon
# itself under ASan/UBSan on this host's kernel (the stock-kernel guest's
# t-daemon, kernel-patch/tests, tests what it does for programs).
#
#   - --help, --version, a usage error (2); --check-enabled: 0 with
#     PBITMAP_DAEMON=yes, 1 with no or without the file, 255 when the file
#     does not parse; each bad setting (an unknown PBITMAP_DAEMON_* name, a
#     value out of range or not a number, a line without '=') is an error
#     naming the file and line, exit 1; the triggers' settings (PBITMAP_LEARN
#     ...) and quoted values are accepted; disabled, it exits 0 saying so.
#   - pbitmap status: no status file is an error (1) that says so; a file
#     of a process that is gone prints "not running" and its counters (1);
#     not a status file, an error.
#   - The ASan build watching this host's filesystems logs its join gap at
#     start-up (the default: no gap recorded at boot) and makes its state
#     directory (--state-dir) root's alone, mode 0700; a stamped copy of
#     /bin/sleep running 1 s, exec'd 3 times (2.5 s apart), is read ahead
#     3 times, its own marked pages and its libraries' (per-file bitmaps,
#     its own log lines: other tests' programs run beside it under make
#     check), and an unstamped one is
#     counted as unstamped and never read ahead; metadata lists of the
#     stamped program that are not to be read (another filesystem's ID,
#     runs not as the daemon writes them, another version) are not, each
#     counted in meta_stale and said why; a stamped 4 MiB data file
#     opened (and not read) has its marked pages 10-20 read ahead and pages
#     300-399 not, and that open's file was opened by its handle
#     (skip_handle +0 over it); pbitmap status says "running"; SIGTERM ends it with
#     status 0 and no sanitizer report.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"	# its daemon is started here; counter
need timeout stat
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"

# ---- command line and settings ---------------------------------------------

expect_status 0 "$PBITMAPD" --help
grep -q "^Usage: pbitmapd" "$OUT" || fail "--help: $(cat "$OUT")"
expect_status 0 "$PBITMAPD" --version
grep -q "^pbitmapd [0-9]" "$OUT" || fail "--version: $(cat "$OUT")"
expect_status 2 "$PBITMAPD" --no-such-option
expect_status 2 "$PBITMAPD" extra-argument
grep -q "unexpected argument 'extra-argument'" "$ERR" || fail "usage error: $(cat "$ERR")"

expect_status 1 "$PBITMAPD" --check-enabled -c "$d/absent.conf"
printf '# the triggers share the file\nPBITMAP_RESTAMP=yes\nPBITMAP_LEARN="every"\nPBITMAP_DAEMON = "yes"  # on\n' >on.conf
expect_status 0 "$PBITMAPD" --check-enabled -c on.conf
printf 'PBITMAP_DAEMON=no\n' >off.conf
expect_status 1 "$PBITMAPD" --check-enabled -c off.conf
expect_status 0 "$PBITMAPD" -c off.conf
grep -q "off.conf: PBITMAP_DAEMON=yes is not set: nothing to do" "$ERR" || fail "disabled: $(cat "$ERR")"
bad() {	# CONTENT MESSAGE
	printf '%b' "$1" >bad.conf
	expect_status 255 "$PBITMAPD" --check-enabled -c bad.conf
	expect_status 1 "$PBITMAPD" -c bad.conf
	grep -qF "pbitmapd: bad.conf: $2" "$ERR" || fail "'$1': expected '$2', got: $(cat "$ERR")"
}
bad 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_GAP=5\n' "line 2: unknown setting PBITMAP_DAEMON_GAP"
bad 'PBITMAP_DAEMON=maybe\n' "line 1: PBITMAP_DAEMON=maybe is not yes or no"
bad 'PBITMAP_DAEMON_JOIN_GAP_KB=-1\n' "line 1: PBITMAP_DAEMON_JOIN_GAP_KB: '-1' is not a number from 0 to 65536"
bad 'PBITMAP_DAEMON_BUDGET_MB=12x\n' "line 1: PBITMAP_DAEMON_BUDGET_MB: '12x' is not a number"
bad 'PBITMAP_DAEMON_BUDGET_MB=0\n' "line 1: PBITMAP_DAEMON_BUDGET_MB=0: at least 1"
bad 'PBITMAP_DAEMON_PRESSURE_PCT=101\n' "line 1: PBITMAP_DAEMON_PRESSURE_PCT: '101' is not a number from 0 to 100"
bad 'PBITMAP_DAEMON_MAX_PARALLEL=0\n' "line 1: PBITMAP_DAEMON_MAX_PARALLEL=0: at least 1"
bad '\nPBITMAP_DAEMON yes\n' "line 2: not NAME=VALUE"
bad 'PBITMAP_DAEMON_LEARN=always\n' "line 1: PBITMAP_DAEMON_LEARN=always is not no, owner or every"
bad 'PBITMAP_DAEMON_LEARN_INTERVAL_S=86401\n' "line 1: PBITMAP_DAEMON_LEARN_INTERVAL_S: '86401' is not a number from 0 to 86400"
bad 'PBITMAP_DAEMON_LEARN_WINDOW_MS=0\n' "line 1: PBITMAP_DAEMON_LEARN_WINDOW_MS=0: at least 1"
bad 'PBITMAP_DAEMON_LEARN_PLANS=maybe\n' "line 1: PBITMAP_DAEMON_LEARN_PLANS=maybe is not yes or no"
bad 'PBITMAP_DAEMON_LEARN_FAULT_AROUND=never\n' "line 1: PBITMAP_DAEMON_LEARN_FAULT_AROUND=never is not keep, windows or off"
bad 'PBITMAP_DAEMON_HOLD_EXEC_MS=1001\n' "line 1: PBITMAP_DAEMON_HOLD_EXEC_MS: '1001' is not a number from 0 to 1000"
bad 'PBITMAP_DAEMON_READ_PROGRAM=maybe\n' "line 1: PBITMAP_DAEMON_READ_PROGRAM=maybe is not auto, yes or no"
bad 'PBITMAP_DAEMON_READ_LIBRARIES=all\n' "line 1: PBITMAP_DAEMON_READ_LIBRARIES=all is not auto, yes or no"
bad 'PBITMAP_DAEMON_READ_PLAN=some\n' "line 1: PBITMAP_DAEMON_READ_PLAN=some is not auto, yes or no"
bad 'PBITMAP_DAEMON_READ_DATA=most\n' "line 1: PBITMAP_DAEMON_READ_DATA=most is not auto, yes or no"
bad 'PBITMAP_DAEMON_SKIP_CACHED=some\n' "line 1: PBITMAP_DAEMON_SKIP_CACHED=some is not yes or no"
bad 'PBITMAP_DAEMON_METADATA=some\n' "line 1: PBITMAP_DAEMON_METADATA=some is not auto, yes or no"
bad 'PBITMAP_DAEMON_CHILD_CPU_S=0\n' "line 1: PBITMAP_DAEMON_CHILD_CPU_S=0: at least 1"
bad 'PBITMAP_DAEMON_CHILD_CPU_S=11\n' "line 1: PBITMAP_DAEMON_CHILD_CPU_S: '11' is not a number from 0 to 10"
printf 'PBITMAP_DAEMON_LEARN_PLANS=no\nPBITMAP_DAEMON_LEARN_FAULT_AROUND=keep\nPBITMAP_DAEMON_READ_LIBRARIES=no\nPBITMAP_DAEMON_READ_PLAN=auto\n' >plans.conf
expect_status 0 "$PBITMAPD" --print-config -c plans.conf
grep -qx "PBITMAP_DAEMON_LEARN_PLANS no (setting)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_LEARN_FAULT_AROUND keep (setting)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_HOLD_EXEC_MS 0 (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_READ_PROGRAM auto (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_READ_LIBRARIES no (setting)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_READ_PLAN auto (setting)" "$OUT" || fail "--print-config: $(cat "$OUT")"
# fault-around off while a learned run is followed, unless told otherwise
: >empty.conf
expect_status 0 "$PBITMAPD" --print-config -c empty.conf
grep -qx "PBITMAP_DAEMON_LEARN_FAULT_AROUND windows (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
# metadata lists learned, and read where the join gap is wide, unless told otherwise
grep -qx "PBITMAP_DAEMON_METADATA auto (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_READ_LIBRARIES auto (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_READ_PLAN yes (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_READ_DATA auto (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_SKIP_CACHED yes (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
grep -qx "PBITMAP_DAEMON_CHILD_CPU_S 2 (default)" "$OUT" || fail "--print-config: $(cat "$OUT")"
printf 'PBITMAP_DAEMON_CHILD_CPU_S=10\n' >cpu.conf
expect_status 0 "$PBITMAPD" --print-config -c cpu.conf
grep -qx "PBITMAP_DAEMON_CHILD_CPU_S 10 (setting)" "$OUT" || fail "--print-config: $(cat "$OUT")"
for v in auto yes no; do
	printf 'PBITMAP_DAEMON_METADATA=%s\n' $v >meta.conf
	expect_status 0 "$PBITMAPD" --print-config -c meta.conf
	grep -qx "PBITMAP_DAEMON_METADATA $v (setting)" "$OUT" || fail "--print-config, METADATA=$v: $(cat "$OUT")"
done
# nothing kept (no daemon changed fault_around_bytes): nothing to put back
expect_status 0 "$PBITMAPD" --restore-fault-around -s "$d/status"
printf 'junk\n' >"$d/fault-around-bytes"
expect_status 1 "$PBITMAPD" --restore-fault-around -s "$d/status"
grep -q "fault-around-bytes: malformed" "$ERR" || fail "--restore-fault-around, junk: $(cat "$ERR")"
rm -f "$d/fault-around-bytes"
expect_status 2 "$PBITMAPD" --restore-fault-around --print-config
pass "command line; settings: enabled, disabled, the triggers' lines accepted, each bad line an error with its line"

# ---- pbitmap status ----------------------------------------------------------

expect_status 1 "$PBITMAP" status -s "$d/none"
grep -q "none: pbitmapd has not run since boot (no status file)" "$ERR" || fail "status, no file: $(cat "$ERR")"
sh -c 'exit 0' &
gone=$!
wait "$gone"
printf 'pid %d\npending 0\nlearning 1\nfault_around 2\nexecs 7\nunstamped 5\nprefetched 2\n' "$gone" >old.status
expect_status 1 "$PBITMAP" status -s old.status
grep -q "^pbitmapd: not running (pid $gone); its last counters:" "$OUT" || fail "status of a gone daemon: $(cat "$OUT")"
grep -Eq "^ +2  prefetched " "$OUT" || fail "status counters: $(cat "$OUT")"
grep -q "^learning: on (BPF" "$OUT" || fail "status, learning: $(cat "$OUT")"
grep -q "^fault-around: could not be turned off" "$OUT" || fail "status, fault-around: $(cat "$OUT")"
printf 'hello\n' >junk.status
expect_status 1 "$PBITMAP" status -s junk.status
grep -q "not a pbitmapd status file" "$ERR" || fail "status of junk: $(cat "$ERR")"
pass "pbitmap status: no file, a gone daemon's counters, not a status file"

# ---- the daemon, under ASan --------------------------------------------------

[[ $(stat -f -c %T "$d") != tmpfs ]] ||
	fail "$d is on tmpfs, which pbitmapd does not watch; set TMPDIR to a directory on a disk"
cp /bin/sleep stamped && cp /bin/sleep plain || fail "cp"
"$PBITMAP" add -q stamped || fail "pbitmap add"
"$PBITMAP" set -q --pages 0-3 stamped || fail "pbitmap set"
# No learning here: under make check the daemon would learn, and write
# into, the other tests' stamped files as they run (the guest test
# kernel-patch/tests/t-daemon-learn.sh learns, on a machine of its own).
printf 'PBITMAP_DAEMON_LEARN=no\n' >>on.conf
# The program's own pages, its libraries' and data files' whatever this
# host's disk (auto: t-daemon-program).
printf 'PBITMAP_DAEMON_READ_PROGRAM=yes\nPBITMAP_DAEMON_READ_LIBRARIES=yes\nPBITMAP_DAEMON_READ_DATA=yes\n' >>on.conf
# Cached ranges read too: a program's own pages are cached by its exec by
# the time the daemon reads them (the default: t-prefetch-cached).
printf 'PBITMAP_DAEMON_SKIP_CACHED=no\n' >>on.conf
# No gap measured at boot (t-device-gap tests that): the default, logged.
PBITMAP_RUNDIR=$d/run "$PBITMAPD" -v -c on.conf -s "$d/status" -S "$d/state" 2>daemon.log &
dpid=$!
at_exit "kill $dpid"
for _ in $(seq 100); do [[ -s status ]] && break; sleep 0.1; done
[[ -s status ]] || fail "pbitmapd wrote no status in 10 s: $(cat daemon.log)"
grep -Eqx "pbitmapd: join gap (64|256) KiB \(default\)" daemon.log || fail "no join gap logged at start-up: $(cat daemon.log)"
# its state directory (the metadata lists) made root's alone
[[ $(stat -c '%U %a' "$d/state") == "root 700" ]] || fail "state directory: $(stat -c '%U %a' "$d/state")"
# The stamped program's metadata list, as a learned run leaves one (the
# guest's t-daemon-meta learns lists and reads them: a host may not let
# even root open its disk), but each not one to read, for its own reason.
IFS=: read -r smaj smin < <(stat -c %Hd:%Ld stamped)
fsid=$(printf '%016x' "0x$(stat -f -c %i stamped)")
list="$d/state/metadata-$smaj:$smin-$(stat -c %i stamped)"
smtime=$(stat -c %.9Y stamped)
meta_list() {	# FSID [LINES]: the program's list, with that filesystem ID
	printf 'pbitmapd-metadata 1\ndevice %s\nfsid %s %s\nprogram %s %s %s\n%b' "$smaj:$smin" \
		"${1:0:8}" "${1:8:8}" "$(stat -c %s stamped)" "${smtime%.*}" "$((10#${smtime#*.}))" \
		"${2:-0 4 0\n10000 2 1\n}" >"$list"
}
for i in 1 2 3; do
	./stamped 1 && ./plain 0 || fail "the programs do not run under the daemon"
	sleep 2.5	# the same file is read ahead at most once in 2 s
done
# Its own lines: under make check, other tests' stamped programs run too,
# and the daemon reads them ahead as well (the counters are the machine's).
ours() { grep -c "^pbitmapd: $d/stamped: pid [0-9]*: per-file bitmaps, [1-9][0-9]* files" daemon.log; }
for _ in $(seq 100); do [[ $(ours) == 3 && $(counter pending) == 0 ]] && break; sleep 0.1; done
[[ $(ours) == 3 ]] || fail "3 execs of a stamped program, $(ours) read ahead with its libraries: $(cat daemon.log)"
(($(counter files) >= 3 && $(counter bytes) > 0 && $(counter unstamped) >= 3)) ||
	fail "counters: $(tr '\n' ' ' <status)"
if grep -q "$d/plain" daemon.log; then fail "an unstamped program was read ahead: $(cat daemon.log)"; fi
# a list of another filesystem (its ID), one whose runs are not as the
# daemon writes them, one of another version: not read, each said why
stale_run() {	# N REASON: the stamped program run once more, meta_stale then N
	sleep 2.1
	./stamped 0 || fail "the stamped program does not run"
	for _ in $(seq 100); do [[ $(counter meta_stale) == "$1" && $(counter pending) == 0 ]] && break; sleep 0.1; done
	[[ $(counter meta_stale) == "$1" && $(counter meta_read) == 0 && $(counter meta_bytes) == 0 ]] ||
		fail "$(head -c 200 "$list"): meta_stale $(counter meta_stale), meta_read $(counter meta_read)," \
			"meta_bytes $(counter meta_bytes); want $1, 0, 0"
	grep -qF "pbitmapd: $list: not read: $2" daemon.log || fail "no 'not read: $2': $(grep metadata daemon.log)"
}
meta_list 0000000100000002
stale_run 1 "another program's (its filesystem, size or time)"
meta_list "$fsid" '10 4 0\n12 1 0\n'	# overlapping runs
stale_run 2 "lines not as pbitmapd writes them"
printf 'pbitmapd-metadata 2\n' >"$list"
stale_run 3 "not a pbitmapd-metadata 1 list"
# a data file: read ahead when opened, its marked pages only
head -c $((4 << 20)) /dev/urandom >data || fail "cannot write data"
"$PBITMAP" add -q data && "$PBITMAP" set -q --pages 10-20 data || fail "cannot stamp data"
python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.fdatasync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' data
sleep 3	# pbitmap's own opens of it are "recent" for 2 s of the daemon's time
# Opened, nothing read, and held open: the daemon reads for an opener
# still there when it takes the event (t-daemon-opener), and under make
# check, beside three guests, it may take it a second late.
# skip_handle counted from here: the daemon watches / for the whole test,
# where other programs of make check run and exit beside it, and a
# short-lived file's event can outlive the file (make check of c88bb84:
# skip_handle 1, this file's open read ahead as wanted).
h0=$(counter skip_handle)
coproc OPENER { exec python3 -c 'import sys; f = open(sys.argv[1]); print(flush=True); sys.stdin.read()' data; }
read -r -t 10 -u "${OPENER[0]}" || fail "the opener of data did not start"
seen_data() { grep -c "^pbitmapd: $d/data: opened by pid [0-9]*: data file, 1 extents" daemon.log; }
for _ in $(seq 200); do (($(seen_data) >= 1)) && [[ $(counter pending) == 0 ]] && break; sleep 0.1; done
(($(seen_data) >= 1)) || fail "a stamped data file opened was not read ahead: $(cat daemon.log) $(tr '\n' ' ' <status)"
opener_in=${OPENER[1]}
exec {opener_in}>&-	# its end of input: it closes data and exits
wait "$OPENER_PID" || fail "the opener of data failed"
resident=$(python3 "$TOP/tests/lib/resident.py" data 10-20 300-399)
[[ $resident == "11 0" ]] || fail "the data file's pages 10-20 resident and 300-399 not: got '$resident' (of 11, of 100)"
# the open's file opened by its handle on this kernel (t-daemon-nohandles: when not)
[[ $(counter skip_handle) == "$h0" ]] ||
	fail "skip_handle $(counter skip_handle), $h0 before the open: open_by_handle_at() failed: $(cat daemon.log)"
expect_status 0 "$PBITMAP" status -s "$d/status"
grep -q "^pbitmapd: running (pid $dpid)" "$OUT" || fail "status: $(cat "$OUT")"
kill -TERM "$dpid"
rc=0
wait "$dpid" || rc=$?
((rc == 0)) || fail "pbitmapd exited with $rc on SIGTERM: $(cat daemon.log)"
if grep -q "Sanitizer" daemon.log; then fail "sanitizer report: $(cat daemon.log)"; fi
note "$(tr '\n' ' ' <status)"
pass "the daemon (ASan) on $(uname -r): a stamped program read ahead at each exec, an unstamped one never, a data file at its open; SIGTERM: 0"
