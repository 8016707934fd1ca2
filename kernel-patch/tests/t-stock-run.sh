#!/bin/bash
# Guest test, on Debian's own kernel (kernel-patch/scripts/stock-kernel; no
# pbitmap patch): what a user of the kernel Debian ships gets today, the
# user-space path.  A stamped copy of cc1 learns its bitmap with `pbitmap
# record` (ptrace, no kernel help), then cold-starts (page cache dropped
# before each run, 150-IOPS disk) alternately as it is and under `pbitmap
# run`, which reads the bitmap's pages of cc1 and its libraries with
# posix_fadvise(WILLNEED) before it execs.  Asserted: the kernel is the
# stock one (no vm.pbitmap_* sysctls), identical output, and fewer major
# faults under `pbitmap run` (medians of RUNS=3 each); printed: the
# medians and the read requests (/sys/block/vda/stat).  The figure the
# daemon (issue 45) and the patched kernel are measured against.
set -euo pipefail
W=/var/tmp/t-stock-run
RUNS=${RUNS:-3}
rm -rf "$W" && mkdir -p "$W/bin" && cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }

[ ! -e /proc/sys/vm/pbitmap_enabled ] ||
	fail "this kernel ($(uname -r)) has the pbitmap patch: the test wants Debian's stock kernel"
case $(uname -r) in *+deb12-amd64 | *+deb13-amd64) ;; *) fail "not a Debian kernel: $(uname -r)" ;; esac

cp "$(gcc -print-prog-name=cc1)" bin/cc1
pbitmap add -q bin/cc1 || fail "cannot stamp cc1"
printf 'int square(int x) { return x * x; }\n' > x.c
run_cc1() {	# OUTPUT [WRAPPER...]
	local out=$1; shift
	"$@" "$W/bin/cc1" -quiet -O2 "$W/x.c" -o "$out"
}
run_cc1 learned.s pbitmap record -- || fail "pbitmap record of cc1 failed"
pages=$(pbitmap show --json bin/cc1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["prefetch"]["pages"])')
[ "$pages" -gt 0 ] || fail "pbitmap record learned nothing for cc1"
echo "cc1: $pages pages learned by pbitmap record"

cold() {	# condition run
	local r0 r1 maj wrap=()
	[ "$1" = run ] && wrap=(pbitmap run --)
	sync; echo 3 > /proc/sys/vm/drop_caches
	read -r r0 _ < /sys/block/vda/stat
	run_cc1 "out.$1.$2.s" /usr/bin/time -f %F -o "maj.$1.$2" "${wrap[@]}"
	read -r r1 _ < /sys/block/vda/stat
	cmp -s "out.$1.$2.s" learned.s || fail "$1 run $2: output differs from the learned run's"
	maj=$(tail -n 1 "maj.$1.$2")
	echo "$maj $((r1 - r0))" >> "res.$1"
}
for i in $(seq 1 "$RUNS"); do
	if [ $((i % 2)) = 1 ]; then cold plain "$i"; cold run "$i"; else cold run "$i"; cold plain "$i"; fi
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for c in plain run; do
	eval "maj_$c=\$(cut -d' ' -f1 res.$c | median)"
	eval "req_$c=\$(cut -d' ' -f2 res.$c | median)"
done
echo "stock $(uname -r), cc1 cold start, medians of $RUNS: major faults $maj_plain -> $maj_run, read requests $req_plain -> $req_run (plain -> pbitmap run)"
[ "$maj_run" -lt "$maj_plain" ] ||
	fail "pbitmap run did not cut cc1's major faults on the stock kernel ($maj_plain -> $maj_run)"
echo "PASS: pbitmap run cuts a cold cc1's major faults on Debian's kernel"
