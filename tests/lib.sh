# shellcheck shell=bash
# tests/lib.sh: helpers sourced by every tests/*/t-*.sh script.
#
# A test script is plain bash: it sources this file, runs commands, and calls
# `fail MSG` (exit 1) as soon as something is wrong.  Reaching the end of the
# script means it passed.  Nothing is ever skipped: a missing tool is a
# failure (`need`), so a green run really exercised everything.
#
#   fail MSG            print "FAIL: MSG" and exit 1
#   fail_later MSG      print "FAIL: MSG", go on; the script fails at exit
#                       (to see every problem of a long run at once)
#   pass MSG            print "ok: MSG" (a milestone; the script goes on)
#   note MSG            print "# MSG" (a figure worth seeing in the log)
#   need CMD...         fail loudly unless every CMD is on $PATH
#   tmpdir              print a fresh directory, removed (and unmounted) at exit
#   at_exit CMD         run CMD (a string, eval'ed) at exit, before the cleanup
#   assert_cmp A B      the two files are byte-identical
#   snapshot FILE       remember FILE's sha256, size, mode, owner, inode,
#                       links, mtime and extended attributes
#   assert_unchanged FILE   all of the above are as at the last snapshot
#   expect_status N CMD...  run CMD, fail unless its exit status is N; its
#                       stdout/stderr are left in $OUT and $ERR (file names)
#
# pipefail is on: never write `CMD | grep -q PATTERN` (grep quits at the first
# match, CMD may die of SIGPIPE and the pipeline "fails"); capture the output
# first, or use grep -c >/dev/null.
#
# Environment: TOP (repository root) and PBITMAP (the binary under test,
# build/asan/pbitmap by default) are exported by tests/run-tests; they are
# derived here too so a script can be run by hand.

set -u -o pipefail

TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
PBITMAP=${PBITMAP:-$TOP/build/asan/pbitmap}
export TOP PBITMAP

# Sanitizers: any report is fatal and distinguishable from the tool's own
# exit status 1 (abort => 134; leaks => exit 86 or abort).  Options already
# in the environment come last, so they can override these on purpose.
_asan=halt_on_error=1:abort_on_error=1:detect_leaks=1:exitcode=86:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
_ubsan=halt_on_error=1:abort_on_error=1:print_stacktrace=1:exitcode=87
export ASAN_OPTIONS=$_asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}
export UBSAN_OPTIONS=$_ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}
export LSAN_OPTIONS=exitcode=86${LSAN_OPTIONS:+:$LSAN_OPTIONS}
unset _asan _ubsan
# Messages are compared against English text.
export LC_ALL=C

TEST_NAME=$(basename "$0" .sh)

fail() {
	echo "FAIL: $TEST_NAME: $*" >&2
	exit 1
}

_LIB_LATER=0
fail_later() {
	echo "FAIL: $TEST_NAME: $*" >&2
	_LIB_LATER=$((_LIB_LATER + 1))
}

pass() {
	echo "ok: $*"
}

note() {
	echo "# $*"
}

need() {
	local c missing=()
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || missing+=("$c")
	done
	((${#missing[@]} == 0)) ||
		fail "missing required command(s): ${missing[*]} (see DEPS_TEST in the Makefile; tests never skip)"
}

# ---- temporary directories and cleanup ------------------------------------

_LIB_TMP=$(mktemp -d "${TMPDIR:-/tmp}/pbtest.XXXXXX") || { echo "FAIL: mktemp" >&2; exit 1; }
_LIB_AT_EXIT=()

at_exit() {
	_LIB_AT_EXIT+=("$1")
}

_lib_cleanup() {
	local rc=$? i m
	set +e
	if ((rc == 0 && _LIB_LATER > 0)); then
		echo "FAIL: $TEST_NAME: $_LIB_LATER problem(s) reported above" >&2
		rc=1
	fi
	# Silent from here, once for all: an eval with its own redirections
	# makes bash keep the output on a descriptor of 10 or more, where an
	# "exec N<&-" of a descriptor the test closed already found it ("12:
	# Bad file descriptor", t-daemon-btrfs-opens).
	exec >/dev/null 2>&1
	for ((i = ${#_LIB_AT_EXIT[@]} - 1; i >= 0; i--)); do
		eval "${_LIB_AT_EXIT[i]}"
	done
	# Unmount anything mounted below our directory, deepest first.
	for m in $(awk -v p="$_LIB_TMP/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	# Immutable/append-only files left by a failed test would block rm.
	chattr -R -ia "$_LIB_TMP" >/dev/null 2>&1
	rm -rf "$_LIB_TMP"
	exit "$rc"
}
trap _lib_cleanup EXIT
trap 'exit 130' INT TERM

# Usually called as d=$(tmpdir): a subshell, so no state is kept here; the
# whole of $_LIB_TMP goes at exit.
tmpdir() {
	mktemp -d "$_LIB_TMP/d.XXXXXX"
}

# ---- assertions -----------------------------------------------------------

assert_cmp() {
	local out
	out=$(cmp -- "$1" "$2" 2>&1) ||
		fail "files differ: $1 vs $2: ${out:-cmp failed}"
}

# What must not change on a file the tool refused or failed to modify.
_lib_fingerprint() {
	local f=$1
	# Hash regular files only (through a symlink too): a FIFO would block.
	if [[ -f $f ]]; then
		sha256sum <"$f" | cut -d' ' -f1
	else
		echo "not a regular file"
	fi
	stat -c 'type=%F size=%s mode=%a uid=%u gid=%g ino=%i nlink=%h mtime=%.9Y' -- "$f"
	getfattr -h --absolute-names -d -m - -e hex -- "$f" 2>/dev/null | sed 1d
	return 0
}

snapshot() {
	local f=$1 key
	key=$(printf '%s' "$f" | sha256sum | cut -c1-16)
	mkdir -p "$_LIB_TMP/.snap"
	_lib_fingerprint "$f" >"$_LIB_TMP/.snap/$key" || fail "cannot snapshot $f"
}

assert_unchanged() {
	local f=$1 key now
	key=$(printf '%s' "$f" | sha256sum | cut -c1-16)
	[[ -e $_LIB_TMP/.snap/$key ]] || fail "assert_unchanged $f: no snapshot taken"
	now=$(_lib_fingerprint "$f")
	if [[ $now != "$(cat "$_LIB_TMP/.snap/$key")" ]]; then
		echo "--- before" >&2
		cat "$_LIB_TMP/.snap/$key" >&2
		echo "--- after" >&2
		echo "$now" >&2
		fail "$f was modified${2:+ ($2)}"
	fi
}

# expect_status N CMD...: exact exit status; output kept in $OUT/$ERR.
OUT=$_LIB_TMP/.out
ERR=$_LIB_TMP/.err
expect_status() {
	local want=$1 got
	shift
	"$@" >"$OUT" 2>"$ERR"
	got=$?
	if [[ $got != "$want" ]]; then
		echo "--- command: $*" >&2
		echo "--- stdout:" >&2
		head -c 4000 "$OUT" >&2
		echo "--- stderr:" >&2
		head -c 4000 "$ERR" >&2
		fail "exit status $got, expected $want: $*"
	fi
}

# The binary under test must exist: a missing build is a failure, not a skip.
[[ -x $PBITMAP ]] || fail "PBITMAP=$PBITMAP is not an executable (make build/asan/pbitmap)"
