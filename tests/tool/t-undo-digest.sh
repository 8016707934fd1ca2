#!/bin/bash
# t-undo-digest: undo and digest (what rpm -V relies on), and a stamped file
# rewritten by another tool.
#
#   - digest of several files: one "HEX  FILE" line each, in order, equal to
#     sha256sum of the originals, stamped or not, ELF or data;
#   - undo -o OUT writes the original and refuses an existing OUT (left
#     alone); undo refuses to write to a terminal; undo of a data file or an
#     unstamped ELF file is its content;
#   - a stamped file rewritten by GNU strip (the undo data no longer matches):
#     verify fails, strip and add refuse it unchanged, digest/undo refuse
#     rather than print a wrong original (each exit status 1); objcopy --remove-section .pbitmap
#     gives a clean file that stamps and strips normally.
# Why: a wrong digest makes rpm -V report a modified package; a "strip" that
# trusts stale undo data would corrupt a program.

source "$(dirname "$0")/../lib.sh"
need gcc strip objcopy readelf sha256sum script python3
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
echo 'int main(void){return 0;}' >"$d/p.c"
gcc -o "$d/orig" "$d/p.c" || fail gcc
cp "$d/orig" "$d/prog"
head -c 70000 /dev/urandom >"$d/data"
cp "$d/data" "$d/data.orig"
cp "$d/orig" "$d/plain"
expect_status 0 "$PBITMAP" add "$d/prog" "$d/data"

expect_status 0 "$PBITMAP" digest "$d/prog" "$d/data" "$d/plain"
want="$(sha256sum <"$d/orig" | cut -d' ' -f1)  $d/prog
$(sha256sum <"$d/data.orig" | cut -d' ' -f1)  $d/data
$(sha256sum <"$d/orig" | cut -d' ' -f1)  $d/plain"
[[ $(cat "$OUT") == "$want" ]] || fail "digest of three files:
$(cat "$OUT")
expected:
$want"
pass "digest: one sha256sum-style line per file, in order, stamped or not"

expect_status 0 "$PBITMAP" undo -o "$d/undone" "$d/prog"
assert_cmp "$d/undone" "$d/orig"
echo "keep me" >"$d/exists"
snapshot "$d/exists"
# A file in the way is a failure on that file (1), not a usage error.
expect_status 1 "$PBITMAP" undo -o "$d/exists" "$d/prog"
grep -qF "pbitmap: $d/exists: " "$ERR" && grep -qi "exists" "$ERR" ||
	fail "undo -o EXISTING: stderr does not name the file in the way: $(cat "$ERR")"
assert_unchanged "$d/exists" "undo -o onto an existing file"
"$PBITMAP" undo "$d/data" >"$d/data.undone" || fail "undo of a data file"
assert_cmp "$d/data.undone" "$d/data.orig"
"$PBITMAP" undo "$d/plain" >"$d/plain.undone" || fail "undo of an unstamped file"
assert_cmp "$d/plain.undone" "$d/orig"
# A terminal on stdout: refused as a usage error (2: the command line must
# change, redirect or -o), nothing binary written to it.
script -qec "$PBITMAP undo $d/prog" "$d/tty.log" >/dev/null 2>&1
rc=$?
((rc == 2)) || fail "undo to a terminal: exit $rc, expected 2: $(cat "$d/tty.log")"
grep -q "refusing to write binary data to a terminal" "$d/tty.log" ||
	fail "undo to a terminal: no message saying why: $(cat "$d/tty.log")"
(($(stat -c %s "$d/tty.log") < 2000)) || fail "undo wrote binary data to a terminal"
pass "undo: -o, existing OUT refused (exit 1), data and unstamped files, terminal refused (exit 2)"

# Rewritten by GNU strip: the .pbitmap section survives at another place.
strip -o "$d/rewritten" "$d/prog" || fail "GNU strip of a stamped file"
snapshot "$d/rewritten"
expect_status 1 "$PBITMAP" verify "$d/rewritten"
grep -qF "pbitmap: $d/rewritten: " "$ERR" || fail "verify of a rewritten file: no message naming it"
expect_status 1 "$PBITMAP" strip "$d/rewritten"
grep -q 'objcopy' "$ERR" || fail "strip of a rewritten file does not suggest objcopy: $(cat "$ERR")"
assert_unchanged "$d/rewritten" "pbitmap strip of a rewritten file"
# add cannot replace the record without removing it first, which it cannot
# do safely either: refused, untouched.
expect_status 1 "$PBITMAP" add "$d/rewritten"
grep -q 'objcopy' "$ERR" || fail "add of a rewritten file does not suggest objcopy: $(cat "$ERR")"
assert_unchanged "$d/rewritten" "pbitmap add of a rewritten file"
for verb in digest undo; do
	expect_status 1 "$PBITMAP" $verb "$d/rewritten"
	grep -qF "pbitmap: $d/rewritten: cannot reconstruct the original" "$ERR" ||
		fail "$verb of a rewritten file: $(cat "$ERR")"
	[[ -s $OUT ]] && fail "$verb of a rewritten file printed something on stdout"
done
objcopy --remove-section .pbitmap "$d/rewritten" "$d/clean" || fail "objcopy --remove-section"
readelf -S -W "$d/clean" >"$d/sections"
[[ -z $(grep pbitmap "$d/sections") ]] || fail "objcopy left a .pbitmap section"
cp "$d/clean" "$d/clean.orig"
expect_status 0 "$PBITMAP" add "$d/clean"
$ELFCHECK stamp "$d/clean.orig" "$d/clean" >/dev/null || fail "stamp after objcopy --remove-section"
expect_status 0 "$PBITMAP" strip "$d/clean"
assert_cmp "$d/clean" "$d/clean.orig"
pass "rewritten by GNU strip: verify, strip, add, digest, undo refuse it (1); objcopy --remove-section then add/strip round-trip"
