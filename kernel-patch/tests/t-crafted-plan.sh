#!/bin/bash
# Guest test: malformed and misleading start-up plans never break an exec.
# A program linked with two private stamped libraries gets a plan of both
# (pbitmap plan); craft-plan.py makes 74 variants of its plan area (bad
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
# is never opened (the case would hang).  Every case is run with each look-up
# made inside execve (vm.pbitmap_plan_lookup_later=0, the default); then the
# cases that get to the look-ups (skips and sound plans) again, crafted
# from a copy of the program that sleeps 1 s after printing, with
# vm.pbitmap_plan_lookup_later=1 (the files not in the dentry cache looked
# up by a worker after exec, as nobody): the same counts, read after the
# worker is done, and at least one file left for after exec.  The runner fails the run on any
# kernel warning in the console log (KASAN reports included when the
# kernel has KASAN).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=/var/tmp/t-crafted-plan
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W" && cd "$W"
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=kernel-patch/tests/vmstatlib.sh
. "$HERE/vmstatlib.sh"
KEYS=(pbitmap_plan_exec pbitmap_plan_later pbitmap_plan_reject_{header,files,names,steps,canonical,order}
      pbitmap_plan_skip_{mismatch,fs,secure})
# S0, S1: the counters before and after a case, read by bash alone (no
# grep or awk loaded cold after the drop, 3 processes a case); D: S1 - S0.
declare -A S0 S1 D
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

vmstat_snap S0 "${KEYS[@]}"
for k in "${KEYS[@]}"; do
	[ -n "${S0[$k]}" ] || fail "no counter $k in /proc/vmstat"
done
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

# run_cases LIST DIR KINDS: each case of LIST whose expectation matches the
# extended regular expression KINDS, its program in DIR, run as above.
run_cases() {
	local list=$1 dir=$2 kinds=$3 name expect got runs rejects skips r
	while read -r name expect; do
		[[ $expect =~ ^($kinds)$ ]] || continue
		# A plan is refused as its record is read, before any of
		# its files is looked up: no cache to empty for that (each
		# case is a program of its own, so no repeat window either)
		[[ $expect == reject_* ]] || echo 3 >/proc/sys/vm/drop_caches
		vmstat_snap S0 "${KEYS[@]}"
		got=$(timeout 60 "${NOBODY[@]}" "./$dir/$name") || fail "$name: exit status $?"
		vmstat_snap S1 "${KEYS[@]}"
		[ "$got" = "$want" ] || fail "$name: printed '$got', expected '$want'"
		vmstat_diff D S0 S1
		runs=${D[pbitmap_plan_exec]}
		rejects=0 skips=0
		for r in header files names steps canonical order; do
			rejects=$((rejects + D[pbitmap_plan_reject_$r]))
		done
		for r in mismatch fs secure; do
			skips=$((skips + D[pbitmap_plan_skip_$r]))
		done
		later=$((later + D[pbitmap_plan_later]))
		case $expect in
		reject_*)
			[ "${D[pbitmap_plan_$expect]}" = 1 ] && [ "$rejects" = 1 ] && [ "$runs" = 0 ] ||
				fail "$name: want $expect: runs $runs, rejects $rejects (after: $(declare -p S1))" ;;
		skip_*)
			[ "${D[pbitmap_plan_$expect]}" = 1 ] && [ "$skips" = 1 ] && [ "$runs" = 1 ] &&
				[ "$rejects" = 0 ] ||
				fail "$name: want $expect: runs $runs, skips $skips, rejects $rejects" ;;
		ok)
			[ "$runs" = 1 ] && [ "$skips" = 0 ] && [ "$rejects" = 0 ] ||
				fail "$name: want a sound plan run: runs $runs, skips $skips, rejects $rejects" ;;
		*)	fail "$name: unknown expectation $expect" ;;
		esac
		cases=$((cases + 1))
	done <"$list"
}

echo 1 >/proc/sys/vm/pbitmap_enabled
trap 'echo 0 >/proc/sys/vm/pbitmap_enabled; echo 0 >/proc/sys/vm/pbitmap_plan_lookup_later; umount "$W/tmpfs"' EXIT
# Pass 1: every look-up inside execve (the default), where each count is exec's own.
echo 0 >/proc/sys/vm/pbitmap_plan_lookup_later
cases=0 later=0
run_cases list out '.*'
((cases >= 50)) || fail "only $cases crafted plans"
[ "$later" = 0 ] || fail "$later files left for after exec with vm.pbitmap_plan_lookup_later=0"
echo "ok: $cases crafted plans, every look-up at exec: each refused, skipped or run as its case says"

# Pass 2: vm.pbitmap_plan_lookup_later=1, the files not in the dentry cache
# opened by a worker after exec as nobody.  The same cases, of a program that sleeps 1 s
# after printing, so that the worker (which stops when the program exits)
# is done before the counters are read; only those that get to the look-ups.
echo 1 >/proc/sys/vm/pbitmap_plan_lookup_later
mkdir later && chmod 755 later
plan_prog "$W/later" 1000000
python3 "$HERE/craft-plan.py" later/prog out-later "$W/f" "$W/d" "$W/hidden/x.so" \
	"$W/tmpfs/x.so" "$W/zero" "$W/link.so" >list-later ||
	fail "craft-plan.py failed for later/prog"
chmod 755 out-later
n1=$cases cases=0 later=0
run_cases list-later out-later 'skip_.*|ok'
((cases >= 15)) || fail "only $cases crafted plans with look-ups after exec"
((later > 0)) || fail "no file left for after exec in $cases cold starts"
echo "ok: $cases crafted plans, $later files looked up after exec: each skipped or run as its case says"
echo "PASS: $n1 crafted plans at exec and $cases after it: each refused, skipped or run as its case says; every exec ran"
