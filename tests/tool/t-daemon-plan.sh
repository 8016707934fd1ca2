#!/bin/bash
# t-daemon-plan: the order pbitmapd reads a start-up plan in (docs/FORMAT.md,
# "Start-up plan"), under ASan/UBSan on this host's kernel, its
# posix_fadvise() calls seen by strace.
#
# Two copies of /bin/sleep planned with the same files: A, a copy of libc
# marked at pages 0-1, 3-4 and 200-201, and B, a small unstamped file (one
# step, whole).  The steps: 0 = A 0-1, 1 = A 3-4, 2 = A 200-201, 3 = B.
# Across the 64 KiB gap steps 0 and 1 join into one run, A 0-4; step 2
# is too far to join.
#   - without an order table, the daemon reads the runs in the steps' own
#     order: A 0-4, A 200-201, B;
#   - with the order table 3,1,2,0 (tests/lib/plan_order.py), by rank (a
#     run's smallest position in the table), the first-needed first: B
#     (rank 0), A 0-4 (rank 1: step 1's, though step 0 comes last), A
#     200-201 (rank 2);
#   - each program's log line says "plan"; SIGTERM ends the daemon with 0
#     and no sanitizer report (not a leak check: LeakSanitizer does not
#     run under ptrace; t-daemon has one).

source "$(dirname "$0")/../lib.sh"
need timeout stat strace ldd
PBITMAPD=$TOP/build/asan/pbitmapd
[[ -x $PBITMAPD ]] || fail "no $PBITMAPD (make build/asan/pbitmapd)"
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
cd "$d" || fail "cd $d"
[[ $(stat -f -c %T "$d") != tmpfs ]] ||
	fail "$d is on tmpfs, which pbitmapd does not watch; set TMPDIR to a directory on a disk"

libc=$(ldd /bin/sleep | awk '/libc\.so/ { print $3 }')
[[ -f $libc ]] || fail "no libc in ldd /bin/sleep: $(ldd /bin/sleep)"
cp "$libc" A.so && head -c 10000 /dev/urandom >B || fail "cp"
(($(stat -c %s A.so) > 202 * 4096)) || fail "libc is smaller than 202 pages"
"$PBITMAP" add -q A.so && "$PBITMAP" set -q --pages 0-1,3-4,200-201 A.so || fail "cannot stamp A.so"
for p in in-order by-table; do
	cp /bin/sleep "$p" || fail "cp"
	"$PBITMAP" add -q --plan-size 4K "$p" && "$PBITMAP" plan "$p" A.so B || fail "cannot plan $p"
done
python3 "$TOP/tests/lib/plan_order.py" by-table 3,1,2,0 || fail "cannot add the order table"
expect_status 0 "$PBITMAP" verify in-order by-table

printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_JOIN_GAP_KB=64\n' >on.conf
# LeakSanitizer does not work under ptrace: the leak check is t-daemon's.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -f -qq -y -e trace=fadvise64 -o trace "$PBITMAPD" -v -c on.conf -s "$d/status" 2>daemon.log &
spid=$!
at_exit "kill $spid"
for _ in $(seq 200); do [[ -s status ]] && break; sleep 0.1; done
[[ -s status ]] || fail "pbitmapd wrote no status in 20 s: $(cat daemon.log)"
dpid=$(awk '$1 == "pid" { print $2 }' status)
for p in in-order by-table; do
	"./$p" 2 || fail "$p does not run under the daemon"	# running while the daemon takes it
done
planned() { grep -c "^pbitmapd: $d/$1: pid [0-9]*: plan, " daemon.log; }
for _ in $(seq 200); do
	[[ $(planned in-order) == 1 && $(planned by-table) == 1 ]] && break
	sleep 0.1
done
for p in in-order by-table; do
	[[ $(planned "$p") == 1 ]] || fail "$p was not read ahead through its plan: $(cat daemon.log)"
done
kill -TERM "$dpid"
rc=0
wait "$spid" || rc=$?
((rc == 0)) || fail "pbitmapd exited with $rc on SIGTERM: $(cat daemon.log)"
if grep -q "Sanitizer" daemon.log; then fail "sanitizer report: $(cat daemon.log)"; fi

# "PID fadvise64(FD</path>, OFFSET, LENGTH, POSIX_FADV_WILLNEED) = 0": the
# reads of A.so and B, in order, as "NAME OFFSET LENGTH" lines per process.
reads() {
	python3 - trace "$d" <<'EOF'
import re, sys
per_pid = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) +fadvise64\(\d+<([^>]*)>, (\d+), (\d+), POSIX_FADV_WILLNEED\) = 0", line)
    if m and m.group(2) in (sys.argv[2] + "/A.so", sys.argv[2] + "/B"):
        per_pid.setdefault(m.group(1), []).append(
            "%s %s %s" % (m.group(2).rsplit("/", 1)[1], m.group(3), m.group(4)))
for reads in per_pid.values():
    print(";".join(reads))
EOF
}
got=$(reads) || fail "cannot parse the trace"
in_order="A.so 0 20480;A.so 819200 8192;B 0 12288"
by_table="B 0 12288;A.so 0 20480;A.so 819200 8192"
grep -qxF "$in_order" <<<"$got" ||
	fail "without an order table: want '$in_order', the processes read: $got"
grep -qxF "$by_table" <<<"$got" ||
	fail "with the order table 3,1,2,0: want '$by_table', the processes read: $got"
pass "pbitmapd reads a plan's runs in the steps' order without a table, by the table's ranks with one"
