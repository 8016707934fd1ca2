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
# util-linux conventions: --help/-h/help VERB print the verb's usage on stdout
# and exit 0 for every verb; -V; a write error on stdout is exit 1; unknown
# options are "pbitmap: VERB: unknown option 'X'"; -q/-v for every verb;
# numbers are decimal (010 is 10; 0x10, +4, 1e1 refused); SIGTERM, SIGINT and
# SIGHUP stop a list of FILE operands after the file in hand, exit 1.
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

# ---- util-linux conventions (issue 14, item 10) -------------------------------------------
VERBS="add strip undo digest show verify set clear merge record prefetch run device-gap stamp rpm-verify"

# --help for every verb: its own usage on stdout, nothing on stderr, exit 0;
# also after operands (options are permuted) and as `help VERB`.
before=$_LIB_LATER
for v in $VERBS; do
	for args in "$v --help" "$v -h" "help $v"; do
		# shellcheck disable=SC2086
		"$PBITMAP" $args >"$OUT" 2>"$ERR"
		rc=$?
		if [[ $rc != 0 ]]; then
			fail_later "pbitmap $args: exit status $rc, expected 0: $(head -2 "$ERR")"
		elif ! grep -q "^usage: pbitmap $v " "$OUT"; then
			fail_later "pbitmap $args: no 'usage: pbitmap $v ...' line on stdout: $(head -2 "$OUT")"
		elif [[ -s $ERR ]]; then
			fail_later "pbitmap $args: wrote on stderr: $(head -2 "$ERR")"
		fi
	done
done
expect_status 0 "$PBITMAP" add "$d/prog" --help
assert_unchanged "$d/prog" "add FILE --help"
grep -q '^usage: pbitmap add ' "$OUT" || fail_later "add FILE --help: no usage on stdout"
((_LIB_LATER == before)) && pass "--help, -h, help VERB for every verb: the verb's usage on stdout, exit 0"

# -V like --version; a write error on stdout is an error (util-linux's close_stdout).
expect_status 0 "$PBITMAP" -V
grep -q '^pbitmap [0-9]' "$OUT" || fail "-V: no version line: $(cat "$OUT")"
[[ ! -w /dev/full ]] && fail "/dev/full is not writable here"
"$PBITMAP" --help >/dev/full 2>"$ERR"
rc=$?
[[ $rc == 1 ]] || fail "--help >/dev/full: exit status $rc, expected 1"
grep -q '^pbitmap: .*write error' "$ERR" || fail "--help >/dev/full: no 'pbitmap: ... write error' message: $(cat "$ERR")"
pass "-V shows the version; --help into a full disk: exit 1 with a message"

# Unknown options and missing arguments: one line, "pbitmap: VERB: ...", for every verb
# (getopt's own "VERB: unrecognized option" line would not say it is pbitmap's).
before=$_LIB_LATER
for v in $VERBS; do
	for args in "$v --bogus-option" "$v -Z" ; do
		# shellcheck disable=SC2086
		"$PBITMAP" $args "$d/prog" >"$OUT" 2>"$ERR"
		rc=$?
		if [[ $rc != 2 ]]; then
			fail_later "pbitmap $args FILE: exit status $rc, expected 2"
		elif [[ $(head -1 "$ERR") != "pbitmap: $v: unknown option '${args#"$v "}'" ]]; then
			fail_later "pbitmap $args FILE: first line '$(head -1 "$ERR")', expected \"pbitmap: $v: unknown option '${args#"$v "}'\""
		elif grep -qv '^pbitmap: \|^Try ' "$ERR"; then
			fail_later "pbitmap $args FILE: a line not from pbitmap on stderr: $(cat "$ERR")"
		fi
	done
	assert_unchanged "$d/prog" "pbitmap $v --bogus-option"
done
expect_status 2 "$PBITMAP" add "$d/prog" -g
[[ $(head -1 "$ERR") == "pbitmap: add: option '-g' needs an argument" ]] ||
	fail_later "add -g (no N): $(head -1 "$ERR")"
expect_status 2 "$PBITMAP" undo --output
[[ $(head -1 "$ERR") == "pbitmap: undo: option '--output' needs an argument" ]] ||
	fail_later "undo --output (no OUT): $(head -1 "$ERR")"
((_LIB_LATER == before)) && pass "unknown option, missing argument: exit 2, one 'pbitmap: VERB: ' message"

# -q and -v are accepted by every verb, before or after the other options.
cp "$d/orig" "$d/q1"
cp "$d/orig" "$d/q2"
"$PBITMAP" add "$d/q1" "$d/q2" || fail "add q1 q2"
before=$_LIB_LATER
qv() {
	local rc
	"$PBITMAP" "$@" >"$OUT" 2>"$ERR"
	rc=$?
	[[ $rc == 0 ]] || fail_later "pbitmap $*: exit status $rc, expected 0: $(head -2 "$ERR")"
}
for o in -q -v --quiet --verbose; do
	qv add "$o" "$d/q1"
	qv strip "$o" "$d/q2"
	qv add "$d/q2" "$o"
	qv undo "$o" -o "$d/undo$o" "$d/q1"
	qv digest "$o" "$d/q1"
	qv show "$o" "$d/q1"
	qv verify "$o" "$d/q1"
	qv set "$o" --pages 0 "$d/q1"
	qv clear --all "$o" "$d/q1"
	qv merge "$o" "$d/q1" "$d/q2"
	qv prefetch "$o" "$d/q1"
	qv record "$o" -- "$d/q1"
	qv run "$o" -- "$d/q1"
	qv rpm-verify "$o" -a
done
expect_status 0 "$PBITMAP" verify -q "$d/q1"
[[ -s $OUT ]] && fail_later "verify -q printed on stdout: $(cat "$OUT")"
expect_status 0 "$PBITMAP" strip -v "$d/orig"
grep -q "^pbitmap: $d/orig: has no bitmap" "$ERR" || fail_later "strip -v of an unstamped file: no note: $(cat "$ERR")"
((_LIB_LATER == before)) && pass "-q, -v, --quiet, --verbose: accepted by every verb"

# Numbers are decimal: 010 is ten (strtoul's base 0 read it as eight), 0x10 is refused.
cp "$d/orig" "$d/dec"
expect_status 0 "$PBITMAP" add -g 010 -t 09 "$d/dec"
expect_status 0 "$PBITMAP" show --json "$d/dec"
grep -q '"generations":10,"threshold":9,' "$OUT" || fail "add -g 010 -t 09: $(cat "$OUT")"
head -c 65536 /dev/urandom >"$d/data"
expect_status 0 "$PBITMAP" add --page-shift 012 "$d/data"
expect_status 0 "$PBITMAP" set --pages 010 --plane 01 "$d/data"
expect_status 0 "$PBITMAP" show --json "$d/data"
grep -q '"page_shift":12,' "$OUT" || fail "add --page-shift 012: $(cat "$OUT")"
grep -q '{"age":1,"marked":1,"ranges":\[\[10,10\]\]}' "$OUT" ||
	fail "set --pages 010 --plane 01: page 10 of age 1 expected: $(cat "$OUT")"
snapshot "$d/data"
for args in "set --pages 0x10" "set --ranges 0x1000+4096" "add -g 0x4" "add --xattr-max 0x400" \
	    "add --generations=+4" "set --pages -1"; do
	# shellcheck disable=SC2086
	expect_status 2 "$PBITMAP" $args "$d/data"
done
expect_status 2 "$PBITMAP" record --window 0x1 -- true
expect_status 2 "$PBITMAP" record --window 1e1 -- true
expect_status 2 "$PBITMAP" record --window inf -- true
expect_status 0 "$PBITMAP" record --window 0.5 -- true
assert_unchanged "$d/data" "hex, signed and exponent numbers"
pass "numbers are decimal: 010 is 10, 0x10, +4, -1, 1e1 and inf are usage errors"

# SIGTERM, SIGINT, SIGHUP stop a verb working through FILE arguments after the file in
# hand, as they stop --stdin: exit 1, one line saying so; every file is either done
# or untouched.  Sent while pbitmap is busy: after the first file is stamped and
# before the last one is.
stop_test() {
	local sig=$1 n=1000 pid i done=0 untouched=0 rc
	local sd
	sd=$(tmpdir)
	for ((i = 0; i < n; i++)); do cp "$d/orig" "$sd/f$i"; done
	# A background job of a script starts with SIGINT ignored, and pbitmap keeps
	# an ignored signal ignored (as nohup wants): give it the default back.
	env --default-signal=INT "$PBITMAP" add "$sd"/f{0..999} >"$OUT" 2>"$ERR" &
	pid=$!
	for ((i = 0; i < 3000; i++)); do
		cmp -s "$d/orig" "$sd/f0" || break
		sleep 0.01
	done
	cmp -s "$d/orig" "$sd/f0" && fail "$sig: the first file was not stamped after 30 s"
	kill -s "$sig" "$pid"
	wait "$pid"
	rc=$?
	[[ $rc == 1 ]] || fail "add of $n files, $sig while busy: exit status $rc, expected 1 ($(tail -2 "$ERR"))"
	grep -qx "pbitmap: stopped by signal $(kill -l "$sig") ([A-Za-z ]*): the rest of the list was not handled" "$ERR" ||
		fail "$sig: no 'stopped by signal $(kill -l "$sig")' line: $(tail -3 "$ERR")"
	[[ $(grep -c . "$ERR") == 1 ]] || fail "$sig: more than one line on stderr: $(head -5 "$ERR")"
	for ((i = 0; i < n; i++)); do
		if cmp -s "$d/orig" "$sd/f$i"; then
			untouched=$((untouched + 1))
		else
			((untouched == 0)) || fail "$sig: f$i stamped after an untouched file"
			done=$((done + 1))
		fi
	done
	((untouched > 0)) || fail "$sig: every file was stamped: the signal came too late to test"
	# The last file handled is whole: verify every stamped one, and undo the last.
	local stamped=()
	for ((i = 0; i < done; i++)); do stamped+=("$sd/f$i"); done
	"$PBITMAP" verify -q "${stamped[@]}" || fail "$sig: a stamped file does not verify"
	"$PBITMAP" undo "$sd/f$((done - 1))" | cmp -s - "$d/orig" || fail "$sig: undo of the last stamped file differs"
	note "$sig: $done of $n files stamped, $untouched untouched"
}
stop_test TERM
stop_test INT
stop_test HUP
pass "SIGTERM, SIGINT, SIGHUP during add FILE...: stop after the file in hand, exit 1, one line"
