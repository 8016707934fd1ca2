#!/bin/bash
# t-daemon-plan: the order pbitmapd reads a start-up plan in (docs/FORMAT.md,
# "Start-up plan"), and a program its own plan lists, under ASan/UBSan on
# this host's kernel, its posix_fadvise() calls seen by strace.
#
# Copies of /bin/sleep planned with the same files: A, a copy of libc
# marked at pages 0-1, 3-4 and 200-201, and B, a small unstamped file (one
# step, whole).  The steps: 0 = A 0-1, 1 = A 3-4, 2 = A 200-201, 3 = B.
# Across the 64 KiB gap steps 0 and 1 join into one run, A 0-4; step 2
# is too far to join.
#   - without an order table, the daemon reads the runs in the steps' own
#     order: A 0-4, A 200-201, B;
#   - with a metadata table (kernel-patch/tests/craft-meta.py: a kernel's,
#     which the daemon ignores), the same: A 0-4, A 200-201, B;
#   - with the order table 3,1,2,0 (tests/lib/plan_order.py), by rank (a
#     run's smallest position in the table), the first-needed first: B
#     (rank 0), A 0-4 (rank 1: step 1's, though step 0 comes last), A
#     200-201 (rank 2);
#   - a plan that lists its own executable (as learned plans do; its entry
#     given the executable's identity by tests/lib/plan_identity.py): self,
#     marked at pages 0-1, planned as self, A, B with the order table
#     4,0,1,2,3 (step 0 = self 0-1, then A's three, 4 = B).  The program's
#     own pages are read once, by the plan, in their place in the order: B,
#     self 0-1, A 0-4, A 200-201 (not self 0-1 first and again);
#   - stale, planned the same way, then replaced by a copy of itself (a new
#     inode at the same path): the plan's entry no longer matches, the
#     daemon reads the program's own pages first, as without such an
#     entry, and the plan skips the entry: stale 0-1, B, A 0-4, A 200-201;
#   - exec-only, planned as self, mode 0711, run by nobody: the plan lists
#     it, but its user may not open it by its path (as the kernel, the
#     daemon opens a plan's files as the exec'ing user): the plan reads
#     the rest, and the program's own pages are read after it: B, A 0-4, A
#     200-201, exec-only 0-1;
#   - with-data, a copy of bash planned with D, a stamped data file (pages
#     10-20), opening D 1 s in: the daemon's exec child opens D to read the
#     plan first, and that open is its own (own_opens), not an opener's:
#     the one data-file read of D is the program's, logged with its pid (a
#     data child started by the exec child's open read D beside it, and
#     the program's open, "recent" then, started none);
#   - PBITMAP_DAEMON_READ_PLAN=no: self again, under a second daemon: its
#     plan's files are left to the kernel, and its own pages are read as
#     without a plan (READ_PROGRAM=yes): self 0-1 only; its log line says
#     "plan left to the kernel", and plans_to_kernel counts it;
#   - each program's record is read (pread64) by a reader that has taken
#     the exec'ing user first (setresuid: root, or nobody for exec-only):
#     a record is its owner's to craft, and not decoded as the daemon;
#   - each program's log line says "plan"; SIGTERM ends the daemon with 0
#     and no sanitizer report (not a leak check: LeakSanitizer does not
#     run under ptrace; t-daemon has one).

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/daemon.sh"
need timeout stat strace ldd setpriv
[[ $(id -u) == 0 ]] || fail "must run as root: pbitmapd watches filesystems with fanotify"

d=$(tmpdir)
chmod 755 "$(dirname "$d")" "$d"	# for nobody, who runs exec-only
cd "$d" || fail "cd $d"
[[ $(stat -f -c %T "$d") != tmpfs ]] ||
	fail "$d is on tmpfs, which pbitmapd does not watch; set TMPDIR to a directory on a disk"

libc=$(ldd /bin/sleep | awk '/libc\.so/ { print $3 }')
[[ -f $libc ]] || fail "no libc in ldd /bin/sleep: $(ldd /bin/sleep)"
cp "$libc" A.so && head -c 10000 /dev/urandom >B || fail "cp"
(($(stat -c %s A.so) > 202 * 4096)) || fail "libc is smaller than 202 pages"
"$PBITMAP" add -q A.so && "$PBITMAP" set -q --pages 0-1,3-4,200-201 A.so || fail "cannot stamp A.so"
for p in in-order with-meta by-table; do
	cp /bin/sleep "$p" || fail "cp"
	"$PBITMAP" add -q --plan-size 4K "$p" && "$PBITMAP" plan "$p" A.so B || fail "cannot plan $p"
done
python3 "$TOP/tests/lib/plan_order.py" by-table 3,1,2,0 || fail "cannot add the order table"
python3 "$TOP/kernel-patch/tests/craft-meta.py" with-meta --uuid 0123456789abcdef0123456789abcdef \
	--range 100:8 --range 200:3:1 >/dev/null || fail "cannot add a metadata table"
for p in self stale exec-only; do
	cp /bin/sleep "$p" && "$PBITMAP" add -q --plan-size 4K "$p" &&
		"$PBITMAP" set -q --pages 0-1 "$p" && "$PBITMAP" plan "$p" "$p" A.so B ||
		fail "cannot plan $p"
	python3 "$TOP/tests/lib/plan_order.py" "$p" 4,0,1,2,3 &&
		python3 "$TOP/tests/lib/plan_identity.py" "$p" 0 ||
		fail "cannot give $p's plan an order table and its own identity"
done
ino=$(stat -c %i stale)
cp --preserve=xattr stale stale.new && mv stale.new stale || fail "cannot replace stale"
[[ $(stat -c %i stale) != "$ino" ]] || fail "stale's copy kept its inode"
chmod 711 exec-only || fail "chmod exec-only"
expect_status 0 "$PBITMAP" verify in-order with-meta by-table self stale exec-only
programs=(in-order with-meta by-table self stale exec-only)
head -c $((4 << 20)) /dev/urandom >D && "$PBITMAP" add -q D && "$PBITMAP" set -q --pages 10-20 D &&
	cp "$(command -v bash)" with-data && "$PBITMAP" add -q --plan-size 4K with-data &&
	"$PBITMAP" plan with-data A.so D || fail "cannot stamp D and plan with-data"

# The program's own pages whatever this host's disk (auto: t-daemon-program).
# Cached ranges read too (SKIP_CACHED=no): the test watches the reads of files
# its programs have just read themselves (the default: t-prefetch-cached).
# Data files read whatever the device: READ_DATA=auto may leave them to the kernel
# (t-daemon-program).
printf 'PBITMAP_DAEMON=yes\nPBITMAP_DAEMON_LEARN=no\nPBITMAP_DAEMON_READ_DATA=yes\nPBITMAP_DAEMON_JOIN_GAP_KB=64\nPBITMAP_DAEMON_READ_PROGRAM=yes\nPBITMAP_DAEMON_SKIP_CACHED=no\n' >on.conf
daemon_start on.conf -f -qq -y -e trace=fadvise64,pread64,setresuid -o trace
for p in "${programs[@]}"; do
	as=()
	[[ $p == exec-only ]] && as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	# running while the daemon takes it: 5 s, as under strace -f and ASan on
	# a loaded host the daemon once took more than 2 s to look (CI simulation
	# of 3132ca2: "stale: gone; its own pages only")
	"${as[@]}" "./$p" 5 || fail "$p does not run under the daemon"
done
for _ in $(seq 200); do
	n=0
	for p in "${programs[@]}"; do [[ $(planned "$d/$p") == 1 ]] && n=$((n + 1)); done
	((n == ${#programs[@]})) && break
	sleep 0.1
done
for p in "${programs[@]}"; do
	[[ $(planned "$d/$p") == 1 ]] || fail "$p was not read ahead through its plan: $(cat daemon.log)"
done
# with-data: the data file's one read is its opener's, not the exec child's.
# It holds D open until killed: an opener gone before the daemon takes its
# event is skipped (data_skip_gone, t-daemon-opener), and under make check
# the ASan daemon under strace -f once took more than 3 s (CI, stop 80)
./with-data -c 'sleep 1; exec 3<D; while sleep 0.2; do :; done' &
tpid=$!
at_exit "kill $tpid"
data_reads() { grep "^pbitmapd: $d/D: opened by pid " daemon.log; }
for _ in $(seq 200); do
	[[ $(planned "$d/with-data") == 1 && -n $(data_reads) ]] && break
	sleep 0.1
done
kill "$tpid" || fail "with-data exited before it was killed"
[[ $(planned "$d/with-data") == 1 ]] || fail "with-data was not read ahead through its plan: $(cat daemon.log)"
[[ $(data_reads) == "pbitmapd: $d/D: opened by pid $tpid: data file, "* && $(data_reads | wc -l) == 1 ]] ||
	fail "D: want one data-file read, opened by with-data (pid $tpid); got: $(data_reads); counters: $(tr "\n" " " <status)"
# the status file is rewritten as children end: the exec child's may be later
for _ in $(seq 30); do
	own=$(awk '$1 == "own_opens" { print $2 }' status)
	((own >= 1)) && break
	sleep 0.1
done
((own >= 1)) || fail "the exec child's open of D not counted as the daemon's own: own_opens '$own'"
pass "a data file its program's plan lists: read once, for its opener (pid $tpid); the daemon's own opens ($own) start nothing"
daemon_stop

# "PID fadvise64(FD</path>, OFFSET, LENGTH, POSIX_FADV_WILLNEED) = 0": the
# reads of A.so, B, self, stale and exec-only, in order, as "NAME OFFSET
# LENGTH" lines per process.
reads() {
	python3 - trace "$d" <<'EOF'
import re, sys
per_pid = {}
names = [sys.argv[2] + "/" + n for n in ("A.so", "B", "self", "stale", "exec-only")]
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) +fadvise64\(\d+<([^>]*)>, (\d+), (\d+), POSIX_FADV_WILLNEED\) = 0", line)
    if m and m.group(2) in names:
        per_pid.setdefault(m.group(1), []).append(
            "%s %s %s" % (m.group(2).rsplit("/", 1)[1], m.group(3), m.group(4)))
for reads in per_pid.values():
    print(";".join(reads))
EOF
}
got=$(reads) || fail "cannot parse the trace"
# want_read CASE READS: one process of the daemon read exactly READS.
want_read() {
	grep -qxF "$2" <<<"$got" || fail "$1: want '$2', the processes read: $got"
}
want_read "without an order table" "A.so 0 20480;A.so 819200 8192;B 0 12288"
# in-order's and with-meta's
[[ $(grep -cxF "A.so 0 20480;A.so 819200 8192;B 0 12288" <<<"$got") == 2 ]] ||
	fail "a plan with a metadata table: want its files read as without one, the processes read: $got"
want_read "with the order table 3,1,2,0" "B 0 12288;A.so 0 20480;A.so 819200 8192"
# "PID setresuid(U, U, U" and "PID pread64(FD</path>, ...": each
# program's record read by a process that had taken a user first (the
# exec'ing one: root, or nobody for exec-only), not with the daemon's
# privileges.
python3 - trace "$d" "${programs[@]}" <<'EOF' || fail "a program's record read before its reader took the user's identity"
import re, sys
trace, d, programs = sys.argv[1], sys.argv[2], sys.argv[3:]
became, seen, bad = {}, set(), []
for line in open(trace):
    m = re.match(r"(\d+) +setresuid\((\d+), \2, \2\b", line)  # its start: "<unfinished ...>" under -f
    if m:
        became[m.group(1)] = m.group(2)
        continue
    m = re.match(r"(\d+) +pread64\(\d+<%s/([^>]*)>" % re.escape(d), line)
    if m and m.group(2) in programs:
        seen.add(m.group(2))
        want = "65534" if m.group(2) == "exec-only" else "0"
        if became.get(m.group(1)) != want:
            bad.append("%s read by %s as %s" % (m.group(2), m.group(1), became.get(m.group(1), "the daemon")))
missing = [p for p in programs if p not in seen]
if bad or missing:
    sys.exit("records read with the daemon's privileges: %s; not read at all: %s" % (bad, missing))
EOF
pass "pbitmapd reads a plan's runs in the steps' order without a table (a metadata table or not), by the table's ranks with one"
pass "each program's record read as its exec'ing user (nobody for exec-only), not as the daemon"
want_read "a plan listing its executable (its pages once, in order)" \
	"B 0 12288;self 0 8192;A.so 0 20480;A.so 819200 8192"
want_read "a stale entry for the executable" "stale 0 8192;B 0 12288;A.so 0 20480;A.so 819200 8192"
want_read "a plan that cannot open its executable" \
	"B 0 12288;A.so 0 20480;A.so 819200 8192;exec-only 0 8192"
pass "an executable its plan lists is read once, in the plan's order; first when its entry is stale," \
	"after the plan when the plan cannot open it"

# READ_PLAN=no: nothing of the plan's, the program's own pages still
{ cat on.conf; echo PBITMAP_DAEMON_READ_PLAN=no; } >left.conf
daemon_start left.conf -f -qq -y -e trace=fadvise64 -o trace
./self 5 || fail "self does not run under the daemon"	# 5 s: as above
left() { grep -c "^pbitmapd: $d/self: pid [0-9]*: plan left to the kernel, " daemon.log; }
for _ in $(seq 200); do [[ $(left) == 1 ]] && break; sleep 0.1; done
[[ $(left) == 1 ]] || fail "self's plan was not left to the kernel: $(cat daemon.log status)"
for _ in $(seq 30); do
	n=$(awk '$1 == "plans_to_kernel" { print $2 }' status)
	((n == 1)) && break
	sleep 0.1
done
((n == 1)) || fail "plans_to_kernel '$n', want 1: $(cat status)"
daemon_stop
got=$(reads) || fail "cannot parse the trace"
[[ $got == "self 0 8192" ]] || fail "READ_PLAN=no: want 'self 0 8192' read, the processes read: $got"
pass "PBITMAP_DAEMON_READ_PLAN=no: the plan's files left to the kernel, the program's own pages read"
