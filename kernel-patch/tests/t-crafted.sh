#!/bin/bash
# Guest test: malformed pbitmap records never break an exec.  For a 64-bit PIE,
# non-PIE and static program and a 32-bit PIE and static one, craft.py makes 38
# variants each (bad header fields, geometry, checksum, section bounds, and the
# user.pbitmap marker through which the kernel finds the section).  With vm.pbitmap_enabled=1 every variant must print what the
# original prints, raise pbitmap_rejected in /proc/vmstat by exactly one, and
# make the pbitmap_reject tracepoint name the expected reason.  The runner fails
# the run on any kernel warning in the console log.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# vmstat_counter (coldlib.sh): read by bash itself, where an awk per read
# (190 cases read it twice each) cost a TCG guest more than the exec the
# case checks
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
W=/var/tmp/t-crafted
T=/sys/kernel/tracing
rm -rf "$W" && mkdir -p "$W" && cd "$W"
fail() { echo "FAIL: $*"; exit 1; }

mountpoint -q "$T" || mount -t tracefs nodev "$T"
[ -d "$T/events/pbitmap/pbitmap_reject" ] || fail "no pbitmap_reject tracepoint"
# 256 KiB of data: files no larger than the readahead window are not prefetched.
printf '#include <stdio.h>\nconst char pad[256 << 10] = { 1 };\nint main(void) { puts("crafted ok"); return pad[0] - 1; }\n' >p.c
declare -A flags=([pie]="-fPIE -pie" [nopie]="-fno-PIE -no-pie" [static]="-static"
		  [m32pie]="-m32 -fPIE -pie" [m32static]="-m32 -static")

echo 1 >"$T/events/pbitmap/pbitmap_reject/enable"
echo 1 >/proc/sys/vm/pbitmap_enabled
trap 'echo 0 >/proc/sys/vm/pbitmap_enabled; echo 0 >"$T/events/pbitmap/pbitmap_reject/enable"' EXIT
cases=0
for kind in pie nopie static m32pie m32static; do
	# shellcheck disable=SC2086
	gcc -O2 ${flags[$kind]} -o "$kind" p.c || fail "cannot build the $kind program (gcc-multilib for -m32)"
	pbitmap add "$kind"
	pbitmap set --pages 0-1 "$kind"
	want=$("./$kind")
	python3 "$HERE/craft.py" "$kind" "out-$kind" >"list-$kind"
	# one read per case: the count after a case is the next one's before
	# (nothing that execs a stamped file runs between them)
	r1=$(vmstat_counter pbitmap_rejected)
	while read -r name reason; do
		echo >"$T/trace"
		r0=$r1
		got=$("./out-$kind/$name") || fail "$kind/$name: exit status $?"
		r1=$(vmstat_counter pbitmap_rejected)
		[ "$got" = "$want" ] || fail "$kind/$name: printed '$got', expected '$want'"
		((r1 == r0 + 1)) || fail "$kind/$name: pbitmap_rejected went $r0 -> $r1, expected +1"
		trace=$(<"$T/trace")
		[[ $trace == *"name=$name reason=$reason"* ]] ||
			fail "$kind/$name: tracepoint did not report reason=$reason: $(grep -o 'reason=.*' "$T/trace" | head -1)"
		cases=$((cases + 1))
	done <"list-$kind"
	echo "ok: $kind: $(wc -l <"list-$kind") malformed sections rejected, program unaffected"
done
echo "PASS: $cases crafted sections on 5 kinds of executable"
