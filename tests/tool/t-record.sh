#!/bin/bash
# t-record: `pbitmap record` learns, by ptrace and /proc/PID/pagemap, exactly
# the pages a command touched, in every process and thread it makes.
#
# The test program has ten functions f0..f9, each alone in a 128 KiB-aligned
# slot of .text (the kernel's fault-around maps 64 KiB-aligned windows of
# cached pages, so nearer neighbours would be marked without being run);
# f9 is never checked because .fini follows it.  A mapped data file (record
# in its xattr) is learned too.  Its arguments say which
# functions to call and how: directly, in a thread, in a forked child, from
# a signal handler, after a window, after a group-stop...  For each run,
# `show --json` must mark the page of every function called and of none of
# the others.
# Also: the exit status of record is CMD's (exit code, 128+signal, 127 for
# an unknown command); SIGTERM sent to record reaches CMD; files without a
# bitmap are left alone; a second run is generation 2; --window samples
# after the window and lets CMD run on untraced.

source "$(dirname "$0")/../lib.sh"
need gcc nm readelf python3 timeout
exec 4>&2

d=$(tmpdir)
cd "$d" || fail "cd $d"

# ---- the test program ------------------------------------------------------

cat >prog.c <<'C'
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define F(n) __attribute__((noinline, aligned(131072), section(".text.f" #n))) \
	int f##n(int x) { volatile int a = x; for (int k = 0; k < 3; k++) a = a * 31 + n; return a; }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9)
static int (*const fs[])(int) = { f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 };
static volatile int sink;
static volatile sig_atomic_t handled;
static int on_usr1_fn;

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts))
		;
}
static void on_usr1(int sig) { (void)sig; sink += fs[on_usr1_fn](1); handled = 1; }
static void *thread_call(void *a) { sink += fs[(intptr_t)a](2); return NULL; }
static void *late_call(void *a) { msleep(300); sink += fs[(intptr_t)a](3); return NULL; }
static void *exit_call(void *a) { sink += fs[(intptr_t)a](4); exit(0); }

/* ARGS: call=N thread=N lastthread=N threadexit=N forkcall=N stopcall=N
 *       signal=N sleep=MS exit=CODE kill spawn PROG ARGS... */
int main(int argc, char **argv)
{
	int code = 0, die = 0;
	pthread_t t;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = strchr(a, '=');
		int n = v ? atoi(v + 1) : 0;
		pid_t p;
		int st;

		if (!strncmp(a, "call=", 5)) {
			sink += fs[n](i);
		} else if (!strncmp(a, "thread=", 7)) {
			pthread_create(&t, NULL, thread_call, (void *)(intptr_t)n);
			pthread_join(t, NULL);
		} else if (!strncmp(a, "lastthread=", 11)) {
			/* the leader leaves first; the thread runs f later, alone */
			pthread_create(&t, NULL, late_call, (void *)(intptr_t)n);
			pthread_exit(NULL);
		} else if (!strncmp(a, "threadexit=", 11)) {
			/* a thread other than the leader ends the process */
			pthread_create(&t, NULL, exit_call, (void *)(intptr_t)n);
			for (;;)
				pause();
		} else if (!strncmp(a, "forkcall=", 9)) {
			/* only the child runs f: its page tables are its own */
			if ((p = fork()) == 0) {
				sink += fs[n](5);
				_exit(0);
			}
			waitpid(p, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				code = 90;
		} else if (!strncmp(a, "stopcall=", 9)) {
			/* a group-stop seen by the real parent, then SIGCONT */
			if ((p = fork()) == 0) {
				raise(SIGSTOP);
				sink += fs[n](6);
				_exit(0);
			}
			if (waitpid(p, &st, WUNTRACED) != p || !WIFSTOPPED(st))
				code = 91;
			kill(p, SIGCONT);
			waitpid(p, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				code = 92;
		} else if (!strncmp(a, "signal=", 7)) {
			on_usr1_fn = n;
			signal(SIGUSR1, on_usr1);
			raise(SIGUSR1);
			if (!handled)
				code = 93;	/* the signal was swallowed */
		} else if (!strncmp(a, "sleep=", 6)) {
			msleep(n);
		} else if (!strncmp(a, "exit=", 5)) {
			code = n;
		} else if (!strcmp(a, "kill")) {
			die = 1;
		} else if (!strcmp(a, "spawn")) {
			if ((p = fork()) == 0) {
				execv(argv[i + 1], argv + i + 1);
				_exit(127);
			}
			waitpid(p, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				code = 94;
			break;
		}
	}
	if (die)
		raise(SIGTERM);
	return code;
}
C

# granules FILE: "N GRANULE" for each function fN of FILE (file offset >> 12).
granules() {
	python3 - "$1" <<'PY'
import subprocess, sys
prog = sys.argv[1]
loads = []
for line in subprocess.check_output(["readelf", "-lW", prog], text=True).splitlines():
    f = line.split()
    if f and f[0] == "LOAD":
        loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
for line in subprocess.check_output(["nm", prog], text=True).splitlines():
    f = line.split()
    if len(f) == 3 and f[2] in ["f%d" % i for i in range(10)]:
        v = int(f[0], 16)
        for off, vaddr, size in loads:
            if vaddr <= v < vaddr + size:
                print(f[2][1:], (off + v - vaddr) >> 12)
PY
}

# marked FILE: the granules marked in the newest generation, one a line.
marked() {
	"$PBITMAP" show --json "$1" | python3 -c '
import json, sys
for first, last in json.load(sys.stdin)[0]["planes"][0]["ranges"]:
    for n in range(first, last + 1):
        print(n)'
}

# expect_learned FILE "CALLED..." : the newest generation of FILE marks the
# page of each called fN and of no other fN (f9 excepted, see above).
expect_learned() {
	local f=$1 called=" $2 " n g m
	m=$(marked "$f") || fail "show --json $f"
	while read -r n g; do
		((n == 9)) && continue
		if [[ $called == *" $n "* ]]; then
			grep -qx "$g" <<<"$m" || fail "$f: f$n was called but its page $g is not marked (marked: $(echo $m))"
		else
			grep -qx "$g" <<<"$m" && fail "$f: f$n was not called but its page $g is marked"
		fi
	done < <(granules "$f")
	[[ -n $(granules "$f") ]] || fail "$f: no function found by nm"
}

# newprog NAME: a freshly built, stamped copy of the test program.
newprog() {
	gcc -O1 -pthread -o "$1" prog.c || fail "gcc"
	"$PBITMAP" add -q "$1" || fail "pbitmap add $1"
}

rec() {
	timeout -k 5 120 "$PBITMAP" record "$@"
}

# ---- direct calls, the note, generation counting ------------------------------

newprog p1
expect_status 0 rec -- ./p1 call=1 call=4 call=6
grep -qE "^pbitmap: $d/p1: generation 1: [0-9]+ of [0-9]+ pages$" "$ERR" ||
	fail "no 'generation 1: M of P pages' note: $(cat "$ERR")"
grep -q "libc" "$ERR" && fail "files without a bitmap are mentioned without -v: $(cat "$ERR")"
expect_learned p1 "1 4 6"
pass "direct calls: f1 f4 f6 marked, f0 f2 f3 f5 f7 f8 not"

expect_status 0 rec -v -- ./p1 call=2
grep -q "generation 2:" "$ERR" || fail "second run is not generation 2: $(cat "$ERR")"
grep -qE "libc\.so\.6: no bitmap" "$ERR" || fail "-v does not mention libc without a bitmap: $(cat "$ERR")"
expect_learned p1 "2"
[[ $("$PBITMAP" show --json p1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["runs"])') == 2 ]] ||
	fail "runs is not 2 after two records"
expect_status 0 rec -q -- ./p1 call=2
[[ -s $ERR ]] && fail "-q still prints: $(cat "$ERR")"
pass "generations count up; -v and -q"

# ---- exit status -----------------------------------------------------------------

expect_status 7 rec -- ./p1 exit=7
expect_status 143 rec -- ./p1 kill
expect_status 127 rec -- ./no-such-command
expect_status 2 "$PBITMAP" record
expect_status 2 "$PBITMAP" record --window nope -- ./p1
pass "exit status is CMD's (7, 128+SIGTERM, 127), usage errors 2"

# ---- threads ----------------------------------------------------------------------

newprog p2
expect_status 0 rec -- ./p2 thread=3
expect_learned p2 "3"
newprog p3
expect_status 0 rec -- ./p3 call=1 lastthread=5
expect_learned p3 "1 5"
newprog p4
expect_status 0 rec -- ./p4 threadexit=7
expect_learned p4 "7"
pass "threads: joined, outliving the leader, calling exit()"

# ---- processes ----------------------------------------------------------------------

newprog p5
expect_status 0 rec -- ./p5 forkcall=2 call=8
expect_learned p5 "2 8"
newprog parent
newprog child
expect_status 0 rec -- ./parent call=3 spawn ./child call=5 call=7
expect_learned parent "3"
expect_learned child "5 7"
pass "fork without exec, and fork + exec of a second stamped program"

# through a shell, which execs the program in a child (vfork/clone + exec)
newprog p6
expect_status 0 rec -- sh -c './p6 call=0; ./p6 call=8; exit 0'
expect_learned p6 "0 8"
pass "through sh: processes of processes, union of both"

# ---- signals and stops ----------------------------------------------------------------

newprog p7
expect_status 0 rec -- ./p7 signal=4
expect_learned p7 "4"
newprog p8
expect_status 0 rec -- ./p8 stopcall=6
expect_learned p8 "6"
pass "a handled signal is delivered; a group-stop is seen by the real parent"

newprog p9
# record itself, not a wrapper: the signal must reach CMD through record
"$PBITMAP" record -- ./p9 call=2 sleep=30000 call=3 >"$d/term.out" 2>&1 &
rpid=$!
(sleep 60; kill -KILL "$rpid") 2>/dev/null &
watchdog=$!
at_exit "kill $watchdog"
# wait until CMD runs p9's own code (its parent is record)
for _ in $(seq 100); do
	pgrep -x -P "$rpid" p9 >/dev/null && break
	sleep 0.1
done
pgrep -x -P "$rpid" p9 >/dev/null || fail "p9 did not start under record"
sleep 0.3
kill -TERM "$rpid"
wait "$rpid"
rc=$?
kill "$watchdog" 2>/dev/null
((rc == 143)) || fail "SIGTERM to record: exit status $rc, expected 143: $(cat "$d/term.out")"
expect_learned p9 "2"
pass "SIGTERM to record reaches CMD; what it did so far is learned"

# ---- --window ------------------------------------------------------------------------------

newprog w1
start=$(date +%s%N)
expect_status 5 rec --window 1 -- ./w1 call=1 sleep=2500 call=6 exit=5
ms=$((($(date +%s%N) - start) / 1000000))
((ms >= 2500)) || fail "--window: record returned after ${ms} ms, before CMD ended"
expect_learned w1 "1"
pass "--window 1: sampled after one second, f6 (called later) not marked; CMD ran on, status kept"

newprog w2
newprog w3
expect_status 0 rec --window 0.5 -- ./w2 call=2 spawn ./w3 call=4 sleep=1500 call=8
expect_learned w2 "2"
expect_learned w3 "4"
pass "--window with two processes: both sampled and let go"

# ---- a mapped data file: its record is in the user.pbitmap xattr ------------------------

# Python unmaps the file before it exits (t-record-unmap: learned then too).
[[ -x /usr/bin/python3.11 ]] || fail "missing /usr/bin/python3.11"
head -c 4194304 /dev/urandom >data.bin || fail "making data.bin"
"$PBITMAP" add -q data.bin || fail "pbitmap add data.bin"
expect_status 0 rec --window 0.5 -- /usr/bin/python3.11 -c '
import mmap, time
f = open("data.bin", "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
s = m[0] + m[300 * 4096]
time.sleep(1.5)'
m=$(marked data.bin) || fail "show --json data.bin"
grep -qx 0 <<<"$m" || fail "data.bin: page 0 was read but is not marked"
grep -qx 300 <<<"$m" || fail "data.bin: page 300 was read but is not marked"
grep -qx 600 <<<"$m" && fail "data.bin: page 600 was not read but is marked"
pass "a mapped data file learns into its xattr record"

# ---- files that carry no bitmap are not touched ---------------------------------------

gcc -O1 -pthread -o plain prog.c || fail "gcc"
snapshot plain
expect_status 0 rec -v -- ./plain call=1
assert_unchanged plain "record on a file without a bitmap"
grep -q "plain: no bitmap" "$ERR" || fail "-v does not say plain has no bitmap: $(cat "$ERR")"
pass "a file without a bitmap is left alone"
