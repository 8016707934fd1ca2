#!/bin/bash
# t-concurrency: writers never lose each other's updates, never corrupt a
# file, never make a concurrent exec fail, and a failed change leaves the
# file as it was.
#
#   1. 100 parallel `set --pages N` (N = 0..99) on one ELF program and on
#      one data file: all 100 pages are set (before the writers' lock:
#      27 to 95 of them).
#   2. 50 races of strip, re-stamp (add -g 6), set and strip on one file:
#      each end state is a valid stamp whose `undo` and `strip` give the
#      original bytes, or the original itself (before: 14 of 50 corrupt);
#      a stamp with its user.pbitmap marker, the original without one.
#   3. A re-stamp (add -g 16) of a 16 MB program on a full tmpfs fails with
#      exit 1 and leaves the stamped file byte-identical (before: exit 1
#      too, but the file was left unstamped, its learned pages lost).
#   4. A program executed at least 1000 times in a loop while it is
#      re-stamped 20 times and `set` 100 times: no exec fails (before:
#      318 of 1000 failed with ETXTBSY).
#   5. A shared lock held by another process (as any reader could take):
#      writers give up after PBITMAP_LOCK_TIMEOUT with exit 3 and change
#      nothing; readers are not held up.
#   6. A file in a directory the caller cannot write: exit 1, unchanged.
# Why: rpm triggers, `record` write-back and users' commands run at the
# same time on the same files (docs/FORMAT.md, "Locking").

source "$(dirname "$0")/../lib.sh"
need gcc objcopy python3 mount umount setpriv cmp getfattr
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
cat >"$d/p.c" <<'EOF'
static const char pad[600000] = { 1 };
int main(int argc, char **argv) { (void)argv; return pad[argc + 1]; }
EOF
gcc -O1 -o "$d/prog" "$d/p.c" || fail gcc
"$d/prog" || fail "the test program does not exit 0"
head -c 2000000 /dev/urandom >"$d/data"

# marked FILE: pages set in the newest generation.
marked() {
	"$PBITMAP" show --json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["planes"][0]["marked"])'
}

no_leftovers() {
	local left
	left=$(find "$1" -name '*.pbitmap-new')
	[[ -z $left ]] || fail "copies left behind: $left"
}

# ---- 1. parallel set -----------------------------------------------------------

for kind in prog data; do
	f=$d/par-$kind
	cp "$d/$kind" "$f"
	expect_status 0 "$PBITMAP" add "$f"
	pids=()
	for i in $(seq 0 99); do
		"$PBITMAP" set --pages "$i" "$f" 2>"$d/par-$kind.err$i" &
		pids+=($!)
	done
	failed=0
	for i in "${!pids[@]}"; do
		wait "${pids[i]}" || { failed=$((failed + 1)); cat "$d/par-$kind.err$i" >&2; }
	done
	((failed == 0)) || fail "$kind: $failed of 100 parallel set commands failed"
	expect_status 0 "$PBITMAP" verify "$f"
	n=$(marked "$f")
	((n == 100)) || fail "$kind: 100 parallel set --pages N left $n pages set, not 100"
	if [[ $kind == prog ]]; then
		$ELFCHECK stamp "$d/prog" "$f" >/dev/null || fail "$kind: bad layout after parallel set"
		$ELFCHECK marker "$f" >/dev/null || fail "$kind: bad user.pbitmap marker after parallel set"
		"$PBITMAP" undo "$f" | cmp -s - "$d/prog" || fail "$kind: undo after parallel set differs"
	else
		assert_cmp "$f" "$d/data"
	fi
	pass "$kind: 100 parallel set --pages N: all 100 pages set"
done
no_leftovers "$d"

# ---- 2. strip/add races ----------------------------------------------------------

stamped=0 original=0
for i in $(seq 1 50); do
	f=$d/race$i
	cp "$d/prog" "$f"
	expect_status 0 "$PBITMAP" add "$f"
	"$PBITMAP" strip "$f" 2>>"$d/race.err" &
	a=$!
	"$PBITMAP" add -g 6 "$f" 2>>"$d/race.err" &
	b=$!
	"$PBITMAP" set --pages 3 "$f" 2>>"$d/race.err" &
	c=$!
	"$PBITMAP" strip "$f" 2>>"$d/race.err" &
	e=$!
	wait $a || fail "race $i: strip failed: $(cat "$d/race.err")"
	wait $b || fail "race $i: add -g 6 failed: $(cat "$d/race.err")"
	# set fails (exit 1, "has no bitmap") exactly when a strip came first.
	wait $c || grep -q "has no bitmap" "$d/race.err" || fail "race $i: set failed: $(cat "$d/race.err")"
	wait $e || fail "race $i: the second strip failed: $(cat "$d/race.err")"
	: >"$d/race.err"
	if cmp -s "$f" "$d/prog"; then
		getfattr --absolute-names -n user.pbitmap "$f" >/dev/null 2>&1 &&
			fail "race $i: ended as the original, but with a user.pbitmap marker"
		original=$((original + 1))
	else
		# (verify checks the marker too)
		expect_status 0 "$PBITMAP" verify "$f"
		"$PBITMAP" undo "$f" | cmp -s - "$d/prog" || fail "race $i: undo does not give the original"
		expect_status 0 "$PBITMAP" strip "$f"
		assert_cmp "$f" "$d/prog"
		stamped=$((stamped + 1))
	fi
done
no_leftovers "$d"
note "50 races: $stamped ended stamped, $original ended as the original"
pass "50 strip/add/set/strip races: every end state valid and undo-exact"

# ---- 3. re-stamp on a full filesystem ------------------------------------------------

# 16 MiB of content: 16 generations need two pages more than 4, more than
# stripping the old stamp frees (which is how the old in-place re-stamp
# lost it).
head -c 16000000 /dev/urandom >"$d/blob"
objcopy --add-section .blob="$d/blob" "$d/prog" "$d/bigprog" || fail objcopy
m=$d/full
mkdir "$m"
mount -t tmpfs -o size=40m tmpfs "$m" || fail "cannot mount a tmpfs (the test needs root)"
cp "$d/bigprog" "$m/prog"
expect_status 0 "$PBITMAP" add "$m/prog"
expect_status 0 "$PBITMAP" set --pages 1-5 "$m/prog"
cp "$m/prog" "$d/stamped"
dd if=/dev/zero of="$m/fill" bs=4k 2>/dev/null
[[ $(df --output=avail -k "$m" | tail -1) -eq 0 ]] || fail "the tmpfs is not full"
snapshot "$m/prog"
expect_status 1 "$PBITMAP" add -g 16 "$m/prog"
grep -q "No space left on device" "$ERR" || fail "full disk: unexpected message: $(cat "$ERR")"
assert_unchanged "$m/prog" "a re-stamp that failed on a full disk"
assert_cmp "$m/prog" "$d/stamped"
expect_status 0 "$PBITMAP" verify "$m/prog"
[[ $(marked "$m/prog") == 5 ]] || fail "full disk: the learned pages are gone"
expect_status 1 "$PBITMAP" set --pages 7 "$m/prog"
assert_cmp "$m/prog" "$d/stamped"
no_leftovers "$m"
pass "re-stamp and set on a full filesystem fail and keep the old stamp byte-identical"
umount "$m"

# ---- 4. exec while writing ---------------------------------------------------------------

f=$d/exec
cp "$d/prog" "$f"
expect_status 0 "$PBITMAP" add "$f"
(
	n=0 bad=0
	while ((n < 1000)) || [[ ! -e $d/writer-done ]]; do
		"$f" 2>>"$d/exec.err" || bad=$((bad + 1))
		n=$((n + 1))
	done
	echo "$n $bad" >"$d/exec.count"
) &
loop=$!
for k in $(seq 0 99); do
	if ((k % 5 == 0)); then
		"$PBITMAP" add -g $((k % 10 ? 6 : 4)) "$f" || fail_later "re-stamp $k failed"
	fi
	"$PBITMAP" set --pages "$k" "$f" || fail_later "set $k failed"
done
touch "$d/writer-done"
wait $loop
read -r execs failed <"$d/exec.count"
note "$execs execs during 20 re-stamps and 100 sets: $failed failed"
((failed == 0)) || fail "$failed of $execs execs failed while the file was written: $(sort "$d/exec.err" | uniq -c)"
((execs >= 1000)) || fail "only $execs execs"
expect_status 0 "$PBITMAP" verify "$f"
n=$(marked "$f")
((n == 100)) || fail "after 100 sets amid re-stamps, $n pages are set, not 100"
pass "$execs execs while the program was re-stamped and set: none failed"

# ---- 5. a lock held by someone else ---------------------------------------------------------

f=$d/locked
cp "$d/prog" "$f"
expect_status 0 "$PBITMAP" add "$f"
# One process holding the lock (flock(1) would leave it to its child too).
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1])
fcntl.flock(f, fcntl.LOCK_SH)
open(sys.argv[2], "w").close()
time.sleep(60)' "$f" "$d/holding" &
holder=$!
at_exit "kill $holder"
for _ in $(seq 100); do
	[[ -e $d/holding ]] && break
	sleep 0.1
done
[[ -e $d/holding ]] || fail "the lock holder did not start"
snapshot "$f"
start=$SECONDS
PBITMAP_LOCK_TIMEOUT=2 expect_status 3 "$PBITMAP" set --pages 1 "$f"
grep -q "locked by another process" "$ERR" || fail "lock timeout: unexpected message: $(cat "$ERR")"
((SECONDS - start >= 2)) || fail "the writer gave up before the timeout"
PBITMAP_LOCK_TIMEOUT=1 expect_status 3 "$PBITMAP" strip "$f"
assert_unchanged "$f" "writers that could not get the lock"
expect_status 0 "$PBITMAP" verify "$f"
expect_status 0 "$PBITMAP" show "$f"
kill $holder
wait $holder 2>/dev/null
expect_status 0 "$PBITMAP" set --pages 1 "$f"
pass "a held lock: writers give up after PBITMAP_LOCK_TIMEOUT (exit 3) and change nothing; readers go on"

# ---- 6. a directory the caller cannot write ----------------------------------------------------

mkdir "$d/ro"
cp "$d/prog" "$d/ro/prog"
chown 65534:65534 "$d/ro/prog"
chmod 755 "$d/ro" "$d" "$(dirname "$d")"
snapshot "$d/ro/prog"
expect_status 1 setpriv --reuid=65534 --regid=65534 --clear-groups "$PBITMAP" add "$d/ro/prog"
grep -q "directory must be writable" "$ERR" || fail "read-only directory: unexpected message: $(cat "$ERR")"
assert_unchanged "$d/ro/prog" "add in a directory its owner cannot write"
pass "a program in a directory the caller cannot write: exit 1, unchanged"
