#!/bin/bash
# Guest test: malformed and misleading start-up plans never break an exec.
# A program linked with two private stamped libraries gets a plan of both
# (pbitmap plan); craft-plan.py makes 73 variants of its plan area (bad
# head (unknown plan flags included), file table, names, steps and order
# table (an index repeated or past the steps), each resealed so that it
# reaches the plan check it is meant for; plans not in canonical form: ranges
# reversed, repeated, overlapping or alternating between files, one file
# named twice, also under another spelling of its path; paths that lead to
# another inode, a FIFO, a directory, a device node, through a symbolic
# link or "..", to /dev/zero or /proc/self/exe (devtmpfs and procfs: the
# walk stops at their mounts, counted as skip_fs), a path nobody cannot
# search (with another file's identity, with its own, and with its own but
# a wrong generation: the same counter for all three, so that a plan is no
# oracle on a file nobody cannot read), a file on tmpfs; and well-formed
# oddities, valid order tables among them).  Each variant is run by nobody
# with vm.pbitmap_enabled=1 and must print what the original prints and
# move the counters as the case says: a refused plan exactly one pbitmap_plan_reject_<reason> and no
# plan run; a misleading path one plan run and exactly one
# pbitmap_plan_skip_<reason>; a sound plan one run and no skip.  The FIFO
# is never opened (the case would hang).  The runner fails the run on any
# kernel warning in the console log (KASAN reports included when the
# kernel has KASAN).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=/var/tmp/t-crafted-plan
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W" && cd "$W"
fail() { echo "FAIL: $*"; exit 1; }
snap() { grep '^pbitmap_plan_' /proc/vmstat >"$1"; }
delta() { echo $(($(awk -v k="$1" '$1 == k { print $2 }' "$3") - $(awk -v k="$1" '$1 == k { print $2 }' "$2"))); }
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

[ -n "$(awk '$1 == "pbitmap_plan_exec"' /proc/vmstat)" ] || fail "no pbitmap_plan_* counters"
source "$HERE/planprog.sh"
plan_prog "$W"
want=$PLAN_WANT
mkfifo f
mknod zero c 1 5
ln -s liba.so link.so
mkdir d
mkdir -m 700 hidden
cp liba.so hidden/x.so
mkdir tmpfs
mount -t tmpfs -o size=4m,mode=755 t-crafted-plan tmpfs || fail "cannot mount a tmpfs"
trap 'echo 0 >/proc/sys/vm/pbitmap_enabled; umount "$W/tmpfs"' EXIT
cp liba.so tmpfs/x.so
python3 "$HERE/craft-plan.py" prog out "$W/f" "$W/d" "$W/hidden/x.so" "$W/tmpfs/x.so" \
	"$W/zero" "$W/link.so" >list ||
	fail "craft-plan.py failed"
chmod 755 out

echo 1 >/proc/sys/vm/pbitmap_enabled
trap 'echo 0 >/proc/sys/vm/pbitmap_enabled; umount "$W/tmpfs"' EXIT
cases=0
while read -r name expect; do
	echo 3 >/proc/sys/vm/drop_caches
	snap s0
	got=$(timeout 60 "${NOBODY[@]}" "./out/$name") || fail "$name: exit status $?"
	snap s1
	[ "$got" = "$want" ] || fail "$name: printed '$got', expected '$want'"
	runs=$(delta pbitmap_plan_exec s0 s1)
	rejects=0 skips=0
	for r in header files names steps canonical order; do
		rejects=$((rejects + $(delta "pbitmap_plan_reject_$r" s0 s1)))
	done
	for r in mismatch fs secure; do
		skips=$((skips + $(delta "pbitmap_plan_skip_$r" s0 s1)))
	done
	case $expect in
	reject_*)
		[ "$(delta "pbitmap_plan_$expect" s0 s1)" = 1 ] && [ "$rejects" = 1 ] && [ "$runs" = 0 ] ||
			fail "$name: want $expect: runs $runs, rejects $rejects ($(tr '\n' ' ' <s1))" ;;
	skip_*)
		[ "$(delta "pbitmap_plan_$expect" s0 s1)" = 1 ] && [ "$skips" = 1 ] && [ "$runs" = 1 ] &&
			[ "$rejects" = 0 ] ||
			fail "$name: want $expect: runs $runs, skips $skips, rejects $rejects" ;;
	ok)
		[ "$runs" = 1 ] && [ "$skips" = 0 ] && [ "$rejects" = 0 ] ||
			fail "$name: want a sound plan run: runs $runs, skips $skips, rejects $rejects" ;;
	*)	fail "$name: unknown expectation $expect" ;;
	esac
	cases=$((cases + 1))
done <list
((cases >= 50)) || fail "only $cases crafted plans"
echo "PASS: $cases crafted plans: each refused, skipped or run as its case says; every exec ran"
