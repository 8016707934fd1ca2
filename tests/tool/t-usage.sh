#!/bin/bash
# t-usage: the command line's exit statuses and messages (pbitmap(1), EXIT
# STATUS), with the files named on a bad command line left untouched.
#
#   2  usage errors: no verb, unknown verb (also for `help VERB`), unknown
#      option, missing FILE, bad --generations/--page-shift/--plane/--algo,
#      malformed --pages/--ranges, set/clear without what to set, merge
#      without SRC, undo with other than one FILE; the message starts with
#      "pbitmap: ";
#   0  --help, --version, help VERB;
#   1  an error on one file among good ones (the good ones are still done);
#   3  a file skipped by policy among good ones, no error; 1 when both.
# Also: verify of an unstamped file is an error, strip of one is not.
# Why: rpm scriptlets and the file trigger act on these statuses.

source "$(dirname "$0")/../lib.sh"
need gcc python3 setfattr
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
echo 'int main(void){return 0;}' >"$d/p.c"
gcc -o "$d/prog" "$d/p.c" || fail gcc
cp "$d/prog" "$d/orig"
snapshot "$d/prog"

# Each usage check reports and goes on (fail_later): one run lists them all.
usage() {
	local rc
	"$PBITMAP" "$@" >"$OUT" 2>"$ERR"
	rc=$?
	if [[ $rc != 2 ]]; then
		fail_later "pbitmap $*: exit status $rc, expected 2 (usage error): $(head -2 "$ERR")"
	elif [[ -z $(grep '^pbitmap: ' "$ERR") ]]; then
		fail_later "pbitmap $*: usage error without a 'pbitmap: ' message: $(cat "$ERR")"
	fi
	assert_unchanged "$d/prog" "pbitmap $*"
}
before=$_LIB_LATER
usage
usage bogus "$d/prog"
usage add
usage add --bogus-option "$d/prog"
usage show --bogus-option "$d/prog"
usage add -g 0 "$d/prog"
usage add -g 17 "$d/prog"
usage add --page-shift 11 "$d/prog"
usage add --page-shift 31 "$d/prog"
usage digest --algo md4 "$d/prog"
usage set "$d/prog"
usage set --pages x "$d/prog"
usage set --pages 1 --plane 99 "$d/prog"
usage set --ranges 5-2 "$d/prog"
usage set --ranges 1Q "$d/prog"
usage clear "$d/prog"
usage merge "$d/prog"
usage undo
usage undo "$d/prog" "$d/prog"
usage help bogus-verb
((_LIB_LATER == before)) && pass "usage errors: exit 2, 'pbitmap: ' message, file untouched"

for args in --help --version "help add" "help digest"; do
	# shellcheck disable=SC2086
	expect_status 0 "$PBITMAP" $args
	[[ -s $OUT ]] || fail "pbitmap $args printed nothing on stdout"
done
expect_status 0 "$PBITMAP" --version
grep -c '[0-9]\.[0-9]' "$OUT" >/dev/null || fail "--version shows no version number: $(cat "$OUT")"
pass "--help, --version, help VERB: exit 0 with output"

# verify: unstamped is an error; strip: unstamped is fine.
expect_status 1 "$PBITMAP" verify "$d/prog"
grep -qF "pbitmap: $d/prog: " "$ERR" || fail "verify of an unstamped file: no message naming it"
expect_status 0 "$PBITMAP" strip "$d/prog"
assert_unchanged "$d/prog" "strip of an unstamped file"
pass "verify of an unstamped file: exit 1; strip: exit 0, no change"

# Mixed results: the good files are done all the same.
cp "$d/orig" "$d/a"
cp "$d/orig" "$d/b"
mkdir "$d/dir"
expect_status 1 "$PBITMAP" add "$d/a" "$d/dir" "$d/b"
$ELFCHECK stamp "$d/orig" "$d/a" >/dev/null && $ELFCHECK stamp "$d/orig" "$d/b" >/dev/null ||
	fail "add GOOD DIR GOOD: the good files were not stamped"
[[ $(grep -c . "$ERR") == 1 ]] || fail "add GOOD DIR GOOD: expected one line on stderr: $(cat "$ERR")"
pass "add GOOD DIR GOOD: exit 1, both good files stamped"

cp "$d/orig" "$d/c"
cp "$d/orig" "$d/ima"
setfattr -n security.ima -v 0x0302 "$d/ima" || fail "setfattr security.ima"
expect_status 3 "$PBITMAP" add "$d/c" "$d/ima"
$ELFCHECK stamp "$d/orig" "$d/c" >/dev/null || fail "add GOOD SKIPPED: the good file was not stamped"
pass "add GOOD SKIPPED: exit 3, good file stamped"
expect_status 1 "$PBITMAP" add "$d/ima" "$d/dir"
pass "add SKIPPED ERROR: exit 1"
