#!/bin/bash
# t-probe-reads: looking at an unstamped ELF file costs a few reads however
# many bytes follow its last ELF structure, and an interrupted stamp is
# still found among them.
#
# A program followed by 2 MiB of zeros (as a self-extracting archive or an
# appended payload is) has bytes an interrupted stamp could have left.  The
# search for one used to walk back page by page (516 reads of the file for
# `verify`).  The candidate record offsets follow from the end of the file,
# the sizes of the copied tables and the record size of each geometry, so
# this asserts, counting with strace the read calls on the file itself:
#   - verify, show, strip and prefetch read the file with the tail at most
#     2 times more than without it (one read per candidate offset), and run
#     (which only looks for a valid bitmap) no more times at all;
#   - the tail an in-place stamp of that file leaves when killed after
#     writing its record, or its whole tail (default geometry, and 16
#     generations of 8 KiB granules) is still reported as interrupted with
#     at most 2 reads more than the plain program, and strip then gives the
#     original back.
# Why: `run` and `record` probe every library of a program on each start.

source "$(dirname "$0")/../lib.sh"
need gcc strace cmp

d=$(tmpdir)
printf '#include <stdio.h>\nint main(void) { puts("probe"); return 0; }\n' >"$d/p.c"
gcc -O1 -o "$d/plain" "$d/p.c" || fail gcc
cp "$d/plain" "$d/tail" && head -c $((2 << 20)) /dev/zero >>"$d/tail" || fail "appending zeros"

# reads FILE VERB [ARGS...]: the number of read calls made on FILE (by any
# process: run execs the program) while `pbitmap VERB ARGS... FILE` runs.
# LeakSanitizer cannot work under ptrace, so it is off here.
reads() {
	local f=$1 log=$d/strace.log
	shift
	ASAN_OPTIONS=detect_leaks=0 strace -f -y -o "$log" \
		-e trace=read,pread64,readv,preadv,preadv2 "$PBITMAP" "$@" "$f" >/dev/null 2>&1
	[[ -s $log ]] || fail "strace wrote nothing for pbitmap $* $f"
	grep -cF "<$f>" "$log"
}

for verb in verify show strip prefetch run; do
	plain=$(reads "$d/plain" "$verb")
	with=$(reads "$d/tail" "$verb")
	case $verb in
	run) extra=0 ;;
	*) extra=2 ;;
	esac
	note "$verb: $plain reads of the program, $with with 2 MiB after it"
	((plain > 0)) || fail "$verb: strace counted no read of the program: the count is broken"
	((with <= plain + extra)) ||
		fail "$verb: $with reads of the file with a 2 MiB tail, $plain without (at most $extra more allowed)"
done
cmp -s "$d/tail" <(cat "$d/plain" <(head -c $((2 << 20)) /dev/zero)) || fail "strip changed an unstamped file"
pass "probing a program with a 2 MiB tail costs at most 2 reads more than without it"

# torn ORIG STAMPED OUT STATE: OUT = the tail an in-place stamp of ORIG
# (earlier versions of pbitmap wrote in place) leaves when killed after
# writing its record (STATE=record) or its whole tail (STATE=tail), before
# the header switch: ORIG followed by STAMPED's bytes past ORIG's end, up to
# the end of the record or of the file.  Built here from a complete stamp,
# whatever way the tool writes today.
torn() {
	python3 - "$TOP/tests" "$@" <<'EOF' || fail "building a torn tail"
import sys
sys.path.insert(0, sys.argv[1])
import elfcheck
orig, stamped = open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
_, pb = elfcheck.record_of(elfcheck.Elf(stamped))
end = pb["offset"] + pb["size"] if sys.argv[5] == "record" else len(stamped)
open(sys.argv[4], "wb").write(orig + stamped[len(orig):end])
EOF
}

# --plan-size 0: the versions that stamped in place wrote no plan area (the
# tool stamps through a copy since before plan areas existed).
for geometry in "" "-g 16 --page-shift 13"; do
	cp "$d/tail" "$d/stamped"
	# shellcheck disable=SC2086
	expect_status 0 "$PBITMAP" add --plan-size 0 $geometry "$d/stamped"
	for state in record tail; do
		torn "$d/tail" "$d/stamped" "$d/torn" "$state"
		expect_status 1 "$PBITMAP" verify "$d/torn"
		grep -q "interrupted stamp" "$ERR" || fail "torn after the $state (${geometry:-defaults}): verify: $(cat "$ERR")"
		n=$(reads "$d/torn" verify)
		plain=$(reads "$d/plain" verify)
		((n <= plain + 2)) || fail "torn after the $state (${geometry:-defaults}): $n reads to find the interrupted stamp, $plain for the plain program"
		expect_status 0 "$PBITMAP" strip "$d/torn"
		assert_cmp "$d/torn" "$d/tail"
		pass "stamp ${geometry:+($geometry) }interrupted after its $state: found in $n reads, strip restores the file"
	done
done
