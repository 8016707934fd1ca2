#!/bin/bash
# Guest test (make stap-check): learn.stp around the kernel's learning.  A
# private copy of learn-pages (kernel-patch/tests/learn-pages.c) stamped
# with 4 generations runs mode A, A, B with vm.pbitmap_learn=1 and
# vm.pbitmap_learn_interval_s=0, each generation flushed at once; then an
# immutable copy runs once.  Checks that learn.stp printed
#   - one write line per run for the copy, runs 1, 2, 3, whose granules
#     equal the newest generation `pbitmap show` reports after that run;
#   - added = all granules and gone = 0 for the first run, added = gone = 0
#     for the repeat of A (converged), added and gone = 64 for B (its 64
#     array pages replace A's);
#   - a skip line with reason=immutable for the immutable copy;
# and that its table has the copy with 3 writes.
set -euo pipefail
HERE=$PWD
W=/var/tmp/t-stap-learn
VM=/proc/sys/vm
rm -rf "$W" && mkdir -p "$W" && cd "$W"
trap 'echo 0 >$VM/pbitmap_learn; echo 60 >$VM/pbitmap_learn_interval_s; echo 0 >$VM/pbitmap_enabled; chattr -i "$W/lp-imm" 2>/dev/null; cd /; rm -rf "$W"' EXIT
export STAP_HERE=$HERE
# shellcheck source=stap/guest-lib.sh
. "$HERE/guest-lib.sh"
stap_version_check
[ -w $VM/pbitmap_learn ] || fail "the kernel has no vm.pbitmap_learn"

gcc -std=c11 -O2 -Wall -Wextra -Werror -o learn-pages "$HERE/learn-pages.c" || fail "cannot build learn-pages"
cp learn-pages lp && pbitmap add -q -g 4 lp
cp learn-pages lp-imm && pbitmap add -q lp-imm && chattr +i lp-imm
newest() {
	pbitmap show --json lp | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
print([p for p in r["planes"] if p["age"] == 0][0]["marked"])'
}
echo 1 >$VM/pbitmap_enabled
echo 0 >$VM/pbitmap_learn_interval_s
echo 1 >$VM/pbitmap_learn
start_stap learn learn.out
want=()
for mode in A A B; do
	./lp $mode >/dev/null
	echo 1 >$VM/pbitmap_learn_flush
	want+=("$(newest)")
done
./lp-imm A >/dev/null
stop_stap
cat learn.out
writes=$(grep '^write file=lp ' learn.out) || fail "learn.stp printed no write for lp"
[ "$(wc -l <<<"$writes")" = 3 ] || fail "learn.stp printed $(wc -l <<<"$writes") writes for lp, not 3"
field() { sed -n "${1}p" <<<"$writes" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
for i in 1 2 3; do
	[ "$(field $i run)" = $i ] || fail "write $i: run=$(field $i run)"
	[ "$(field $i granules)" = "${want[i - 1]}" ] ||
		fail "write $i: granules=$(field $i granules), pbitmap show says ${want[i - 1]}"
done
[ "$(field 1 added)" = "${want[0]}" ] && [ "$(field 1 gone)" = 0 ] ||
	fail "first write: added=$(field 1 added) gone=$(field 1 gone), want ${want[0]} and 0"
[ "$(field 2 added)" = 0 ] && [ "$(field 2 gone)" = 0 ] ||
	fail "repeat of A: added=$(field 2 added) gone=$(field 2 gone), want 0 and 0"
[ "$(field 3 added)" = 64 ] && [ "$(field 3 gone)" = 64 ] ||
	fail "B after A: added=$(field 3 added) gone=$(field 3 gone), want 64 and 64"
grep -q '^skip file=lp-imm .*reason=immutable' learn.out || fail "no immutable skip for lp-imm"
grep -Eq '^lp +3 +3 ' learn.out || fail "the table has no line 'lp 3 3 ...'"
echo "PASS: learn.stp: 3 writes (granules ${want[*]}), converged on the repeat, B replaced A's 64 pages; immutable copy skipped"
