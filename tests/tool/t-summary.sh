#!/bin/bash
# t-summary: `add --stdin --summary`, the counting an rpm trigger reports,
# and the clean stop on SIGTERM that its time limit (timeout(1)) relies on.
#
# A list with two ELF programs, a shared library, a relocatable object (.o:
# passed over quietly in --stdin mode), a text file, a directory, a symlink, a
# duplicate, a missing path and the pbitmap binary under test itself (passed
# over: it cannot be written while it runs): the summary counts 3 stamped,
# 1 error, 4 passed over; run again, 3 already stamped; an unstamped program
# that is running is stamped (pbitmap replaces it by rename), a stamped one is
# "already stamped".
# Then a list fed through a FIFO that stays open: after three files, SIGTERM
# (as timeout(1) sends) stops pbitmap waiting for more, with one line saying
# so, the summary, exit 1, and the three files validly stamped.  And SIGTERM
# while busy with a list of 400 files: it stops after the file in hand, the
# summary's count is the number of stamped files, every other file untouched.
# Why: the trigger's summary is the only report a package install gives, and
# a time limit must never leave a half-stamped file.

source "$(dirname "$0")/../lib.sh"
need gcc mkfifo timeout

d=$(tmpdir)
printf 'int main(void) { return 0; }\n' >"$d/p.c"
printf '#include <unistd.h>\nint main(void) { pause(); return 0; }\n' >"$d/wait.c"
gcc -o "$d/prog1" "$d/p.c" && gcc -o "$d/prog2" "$d/p.c" && gcc -shared -fPIC -o "$d/libx.so" "$d/p.c" &&
	gcc -c -o "$d/obj.o" "$d/p.c" && gcc -o "$d/waiter" "$d/wait.c" || fail gcc
echo text >"$d/t.txt"
mkdir "$d/dir"
ln -s prog1 "$d/link"
printf '%s\n' "$d/prog1" "$d/prog2" "$d/libx.so" "$d/obj.o" "$d/t.txt" "$d/dir" "$d/link" \
	"$d/prog1" "$d/missing" "$PBITMAP" >"$d/list"
snapshot "$d/obj.o"
snapshot "$PBITMAP"

expect_status 1 "$PBITMAP" add --stdin -q --summary <"$d/list"
grep -qx "pbitmap: 3 files stamped, 0 already stamped, 0 skipped, 1 errors, 4 other paths passed over, in [0-9]*\.[0-9][0-9] s" "$ERR" ||
	fail "summary: $(cat "$ERR")"
[[ $(wc -l <"$ERR") == 2 ]] || fail "expected the missing path and the summary: $(cat "$ERR")"
assert_unchanged "$d/obj.o" "an object file in --stdin"
assert_unchanged "$PBITMAP" "pbitmap itself in --stdin"
pass "first run: $(tail -n 1 "$ERR")"

"$d/waiter" &
pid=$!
at_exit "kill $pid"
expect_status 1 "$PBITMAP" add --stdin -q --summary <"$d/list"
grep -q "^pbitmap: 0 files stamped, 3 already stamped, 0 skipped, 1 errors, 4 other" "$ERR" ||
	fail "second summary: $(cat "$ERR")"
# A running program is stamped: a new copy is renamed over it (pbitmap(1)).
expect_status 0 "$PBITMAP" add --stdin --summary < <(echo "$d/waiter")
grep -q "^pbitmap: 1 files stamped, 0 already stamped, 0 skipped, 0 errors" "$ERR" ||
	fail "an unstamped running program should be stamped: $(cat "$ERR")"
kill -0 "$pid" || fail "the running program died when its file was stamped"
kill "$pid"; wait "$pid" 2>/dev/null
"$d/waiter" &
pid=$!
at_exit "kill $pid"
sleep 0.2
expect_status 0 "$PBITMAP" add --stdin --summary < <(echo "$d/waiter")
grep -q "^pbitmap: 0 files stamped, 1 already stamped, 0 skipped, 0 errors" "$ERR" ||
	fail "a stamped running program: $(cat "$ERR")"
pass "again: 3 already stamped; a stamped running program is already stamped, not skipped"

# SIGTERM in the middle of a list.
for i in 1 2 3; do gcc -o "$d/s$i" "$d/p.c" || fail gcc; done
mkfifo "$d/fifo"
"$PBITMAP" add --stdin -q --summary <"$d/fifo" >"$d/out" 2>"$d/err" &
pb=$!
exec 7>"$d/fifo"
printf '%s\n' "$d/s1" "$d/s2" "$d/s3" >&7
for _ in $(seq 1 100); do
	n=0
	for i in 1 2 3; do "$PBITMAP" verify -q "$d/s$i" 2>/dev/null && n=$((n + 1)); done
	((n == 3)) && break
	sleep 0.1
done
((n == 3)) || fail "the first three files were not stamped"
kill -TERM "$pb"
wait "$pb"
rc=$?
exec 7>&-
[[ $rc == 1 ]] || fail "exit status $rc after SIGTERM, expected 1: $(cat "$d/err")"
grep -qx "pbitmap: stopped by signal 15 (Terminated): the rest of the list was not handled" "$d/err" ||
	fail "no stop line: $(cat "$d/err")"
grep -q "^pbitmap: 3 files stamped, 0 already stamped, 0 skipped, 0 errors" "$d/err" ||
	fail "summary after SIGTERM: $(cat "$d/err")"
for i in 1 2 3; do
	"$PBITMAP" verify -q "$d/s$i" || fail "s$i not validly stamped after the stop"
done
pass "SIGTERM: stopped cleanly after 3 files: $(tr '\n' ' ' <"$d/err")"

# SIGTERM while busy: a long list already in the pipe, the signal sent as
# soon as the first file is stamped, while the tool is working through the
# rest.  It must finish the file in hand and stop: exit 1, the stop line,
# a summary counting N stamped with 0 < N < the list, and each file either
# validly stamped (exactly N of them) or byte-identical to the original.
BUSY=400
mkdir "$d/busy"
gcc -o "$d/busy.orig" "$d/p.c" || fail gcc
for ((i = 0; i < BUSY; i++)); do cp "$d/busy.orig" "$d/busy/b$i" || fail cp; done
for ((i = 0; i < BUSY; i++)); do echo "$d/busy/b$i"; done >"$d/busy.list"
orig_size=$(stat -c %s "$d/busy.orig")
"$PBITMAP" add --stdin -q --summary <"$d/busy.list" >"$d/out" 2>"$d/err" &
pb=$!
for _ in $(seq 1 1000); do
	(($(stat -c %s "$d/busy/b0") > orig_size)) && break
	sleep 0.01
done
kill -TERM "$pb"
wait "$pb"
rc=$?
[[ $rc == 1 ]] || fail "busy: exit status $rc after SIGTERM, expected 1: $(cat "$d/err")"
grep -qx "pbitmap: stopped by signal 15 (Terminated): the rest of the list was not handled" "$d/err" ||
	fail "busy: no stop line: $(cat "$d/err")"
n=$(sed -n 's/^pbitmap: \([0-9]*\) files stamped, 0 already stamped, 0 skipped, 0 errors.*/\1/p' "$d/err")
[[ -n $n ]] || fail "busy: no summary after SIGTERM: $(cat "$d/err")"
((n > 0 && n < BUSY)) || fail "busy: $n of $BUSY files stamped: the signal did not arrive while it was busy"
stamped=0
for ((i = 0; i < BUSY; i++)); do
	if cmp -s "$d/busy/b$i" "$d/busy.orig"; then
		continue
	fi
	"$PBITMAP" verify -q "$d/busy/b$i" || fail "busy: b$i is neither the original nor validly stamped"
	stamped=$((stamped + 1))
done
((stamped == n)) || fail "busy: the summary says $n stamped, $stamped files are"
pass "SIGTERM while busy: stopped after $n of $BUSY files, each stamped or untouched"
