#!/bin/bash
# t-floor: kernel-patch/bench/floor.py, the request floor.
#   - the pure part (physical ranges -> requests): adjacent and overlapping
#     ranges merge, a run is split at the largest request, empty input is 0;
#   - real files on the host's filesystem, their layout read back with
#     FIEMAP here: one extent (checked first, else the test says so and
#     fails): 4 MiB read whole with 128 KiB requests = 32; every other page
#     = one range per page; a page past EOF and the pages of a hole (a
#     sparse file) cost nothing; two files' ranges are never merged unless
#     they touch on disk;
#   - the physical floor (--physical-kb 256): ceil of the used bytes, past
#     EOF nothing, wherever the pages lie;
#   - bad input: a missing file, a non-JSON truth, a bad --max-request-kb
#     or --physical-kb.

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
FLOOR=$BENCH_DIR/floor.py
cd "$WORK" || fail "cd $WORK"

"$PYTHON" - "$BENCH_DIR" <<'EOF' || fail "pure cases"
import sys
sys.path.insert(0, sys.argv[1])
from floor import floor_requests, merge
K = 1024
cases = [
    ([], 128 * K, 0),
    ([(0, 4096)], 128 * K, 1),
    ([(0, 4096), (4096, 8192)], 128 * K, 1),             # adjacent: one request
    ([(0, 8192), (4096, 12288)], 128 * K, 1),            # overlapping
    ([(0, 4096), (8192, 12288)], 128 * K, 2),            # a gap: two
    ([(0, 4 * 1024 * K)], 128 * K, 32),                  # split at the largest request
    ([(0, 128 * K + 1)], 128 * K, 2),
    ([(10 * 4096, 11 * 4096), (0, 4096)], 128 * K, 2),   # any order
]
bad = [(r, m, want, floor_requests(r, m)) for r, m, want in cases if floor_requests(r, m) != want]
for b in bad:
    print("floor_requests(%r, %d) = %d, want %d" % (b[0], b[1], b[3], b[2]))
if merge([(5, 9), (0, 5), (20, 20)]) != [(0, 9)]:
    bad.append("merge")
    print("merge:", merge([(5, 9), (0, 5), (20, 20)]))
sys.exit(1 if bad else 0)
EOF

# Real files.  fallocate then dd of random data then sync: the filesystem
# allocates 4 MiB at once.  Check that each is one extent rather than assume
# it; a filesystem too fragmented for that gets three tries, then the test
# says so and fails.
make_files() {
	rm -f a b sparse
	fallocate -l 4M a && dd if=/dev/urandom of=a bs=1M count=4 conv=notrunc status=none &&
		fallocate -l 1M b && dd if=/dev/urandom of=b bs=1M count=1 conv=notrunc status=none &&
		truncate -s 8M sparse && dd if=/dev/urandom of=sparse bs=4096 count=1 conv=notrunc status=none &&
		sync
}
one_extent() {
	"$PYTHON" - "$BENCH_DIR" "$WORK" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[1])
import floor
for name in ("a", "b"):
    fd = os.open(os.path.join(sys.argv[2], name), os.O_RDONLY)
    ext = floor.extents(fd)
    os.close(fd)
    if len(ext) != 1:
        sys.exit(f"{name}: {len(ext)} extents, the cases assume 1: {ext}")
EOF
}
for try in 1 2 3; do
	make_files || fail "cannot write the test files"
	one_extent 2>layout && break
	((try < 3)) || fail "the test files' layout is not what the cases need: $(cat layout)"
done
truth() {	# OUT then PATH:FIRST-LAST,FIRST-LAST... per file
	local out=$1
	shift
	"$PYTHON" - "$out" "$@" <<'EOF'
import json, sys
files = []
for arg in sys.argv[2:]:
    path, spec = arg.split(":")
    pages = [[int(x) for x in r.split("-")] for r in spec.split(",")] if spec else []
    files.append({"path": path, "pages": pages, "count": sum(l - f + 1 for f, l in pages)})
json.dump({"page_size": 4096, "files": files}, open(sys.argv[1], "w"))
EOF
}
expect() {	# WANT TRUTH-ARGS...: floor with 128 KiB requests, --prefix $WORK
	local want=$1 got
	shift
	truth t.json "$@" || fail "cannot write t.json"
	got=$("$PYTHON" "$FLOOR" --prefix "$WORK/" --max-request-kb 128 t.json 2>err) ||
		fail "floor.py $*: $(cat err)"
	[ "$got" = "$want" ] || fail "floor of $*: $got, want $want"
}
expect 32 a:0-1023
expect 1 a:0-31
expect 2 a:0-32
odd=$(seq -s, 0 2 62 | sed 's/\([0-9]*\)/\1-\1/g')
expect 32 "a:$odd"
expect 0 a:1024-1100				# past EOF
expect 1 sparse:0-2047				# one written page, the rest a hole
expect 0 sparse:1-2047
# Two files: at least one range each (they are never the same blocks).
"$PYTHON" "$FLOOR" --prefix "$WORK/" --max-request-kb 128 --per-file t.json >/dev/null ||
	fail "--per-file"
truth t.json a:0-0 b:0-0
got=$("$PYTHON" "$FLOOR" --prefix "$WORK/" --max-request-kb 128 --per-file t.json) ||
	fail "floor.py of two files"
[ "$(tail -n 1 <<<"$got")" -ge 1 ] && [ "$(tail -n 1 <<<"$got")" -le 2 ] ||
	fail "two files, one page each: $got"
grep -q '^a: 1 pages, 1 disk ranges$' <<<"$got" || fail "--per-file line for a: $got"

# The physical floor: ceil(used bytes / 256 KiB), wherever the pages lie;
# nothing past the end of a file.
pexpect() {	# WANT TRUTH-ARGS...: --physical-kb 256
	local want=$1 got
	shift
	truth t.json "$@" || fail "cannot write t.json"
	got=$("$PYTHON" "$FLOOR" --prefix "$WORK/" --physical-kb 256 t.json 2>err) ||
		fail "floor.py --physical-kb $*: $(cat err)"
	[ "$got" = "$want" ] || fail "physical floor of $*: $got, want $want"
}
pexpect 16 a:0-1023				# 4 MiB
pexpect 5 "a:$odd" b:0-255 sparse:0-0		# 128 + 1024 + 4 KiB = 4.5 x 256 KiB
pexpect 1 a:1020-1100				# 16 KiB inside, the rest past EOF
pexpect 0 a:1024-1100
rc=0; "$PYTHON" "$FLOOR" --physical-kb 0 t.json 2>err >/dev/null || rc=$?
((rc == 2)) || fail "--physical-kb 0: exit $rc, $(cat err)"
rc=0; "$PYTHON" "$FLOOR" --physical-kb 256 --max-request-kb 128 t.json 2>err >/dev/null || rc=$?
((rc == 2)) || fail "--physical-kb with --max-request-kb: exit $rc, $(cat err)"

# Bad input.
truth t.json missing:0-0
rc=0; "$PYTHON" "$FLOOR" --prefix "$WORK/" --max-request-kb 128 t.json 2>err >/dev/null || rc=$?
((rc == 1)) && grep -q "^floor: $WORK/missing: No such file or directory" err ||
	fail "a missing file: exit $rc, $(cat err)"
echo '{"files": 3' >bad.json
rc=0; "$PYTHON" "$FLOOR" --max-request-kb 128 bad.json 2>err >/dev/null || rc=$?
((rc == 1)) && grep -q '^floor: bad.json: not a ground-truth file' err || fail "bad JSON: exit $rc, $(cat err)"
rc=0; "$PYTHON" "$FLOOR" --max-request-kb 0 t.json 2>err >/dev/null || rc=$?
((rc == 2)) || fail "--max-request-kb 0: exit $rc, $(cat err)"
rc=0; "$PYTHON" "$FLOOR" t.json 2>err >/dev/null || rc=$?
((rc == 2)) || fail "neither --device nor --max-request-kb: exit $rc"
echo "PASS: floor: merging, splitting, holes, EOF, two files, bad input"
