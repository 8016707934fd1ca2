# shellcheck shell=bash
# tests/bench/benchlib.sh: sourced by tests/bench/t-*.sh.
#
# Not tests/lib.sh: that one requires the pbitmap binary, and these tests
# exercise only the host-side statistics and report (kernel-patch/bench/*.py),
# so `make check-bench` needs no tool build.  Same conventions: `fail MSG`
# exits 1, nothing is skipped (missing Python modules are a failure).
#
#   PYTHON      Debian's interpreter (/usr/bin/python3 by default): the
#               modules come from python3-numpy, python3-scipy and
#               python3-matplotlib, not from whatever python3 is first on
#               PATH (a pyenv one has none of them).
#   BENCH_DIR   kernel-patch/bench
#   WORK        a fresh directory, removed at exit

set -u -o pipefail
export LC_ALL=C
TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PYTHON=${PYTHON:-/usr/bin/python3}
BENCH_DIR=$TOP/kernel-patch/bench
export TOP PYTHON BENCH_DIR
TEST_NAME=$(basename "$0" .sh)

fail() {
	echo "FAIL: $TEST_NAME: $*" >&2
	exit 1
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pbbench.XXXXXX") || fail "mktemp"
trap 'rm -rf "$WORK"' EXIT

[[ -x $PYTHON ]] || fail "PYTHON=$PYTHON is not an executable"
"$PYTHON" -c 'import numpy, scipy, matplotlib' 2>"$WORK/import.err" ||
	fail "$PYTHON cannot import numpy/scipy/matplotlib ($(tail -1 "$WORK/import.err")); install python3-numpy python3-scipy python3-matplotlib (make deps)"
