#!/bin/bash
# t-crash: a pbitmap killed at any step of add or strip leaves a file that
# works, and that the next add or strip brings to a clean state.
#
# Uses the ASan build, which has the crash-injection points compiled in:
# PBITMAP_FAULT=list prints every point an operation passes, and
# PBITMAP_FAULT=STEP makes the process SIGKILL itself there (status 137).
# For each step of `add`, of `strip` and of a re-stamp (`add -g 6` on a
# stamped file: strip then stamp) on an ELF program carrying a file
# capability, this asserts, right after the kill:
#   - either the original is intact (the first ORIG_SIZE bytes equal the
#     original, readelf and eu-elflint see nothing new, the program prints
#     the same) or the stamp is complete (verify exits 0);
#   - verify exits 0 or says "interrupted" (or, once strip is done but for
#     its last step, the file is the original: no bitmap);
# and then that both ways out work: `add` completes or repairs it (verify 0)
# and a following `strip` gives the byte-identical original; or `strip`
# directly gives it.  File capabilities: pbitmap(1) (CRASH SAFETY) says a
# kill between the first write and the metadata restore may lose them and
# that nothing is ever restored from a tail on disk; so the test prints
# whether they survived each kill and asserts that repair and strip neither
# lose nor add any afterwards.  A data file's steps are checked at the end
# (its record is one attribute, written by one system call).
# Since changes are made in a copy renamed over the file (pbitmap(1),
# REPLACING FILES), the file named is always the old version or the complete
# new one, capability included (asserted); a kill between linking the copy
# and the rename ("linked") or after it ("exchanged") may leave a
# .NAME.pbitmap-new beside it, which the next change removes (asserted).
# `set` is killed at each of its steps too: the bitmap is the old one or
# the new one, never a mix, and undo gives the original.
# The user.pbitmap marker (docs/FORMAT.md, "The marker") is set on the copy
# before it is renamed: after every kill, a file left stamped carries a
# marker describing it (checked by tests/elfcheck.py, independently of the
# tool) and the original carries none; so does the file strip makes
# afterwards (verify checks the one add makes).
# Why: the tool runs from package triggers; power loss or an OOM kill in the
# middle must never leave a broken binary behind.

source "$(dirname "$0")/../lib.sh"
need gcc readelf eu-elflint setcap getcap getfattr python3 cmp
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
cat >"$d/p.c" <<'EOF'
#include <stdio.h>
int main(void) { puts("crash test program"); return 7; }
EOF
gcc -O1 -o "$d/prog" "$d/p.c" || fail gcc
setcap cap_net_raw+ep "$d/prog" || fail setcap
CAP=$(getcap "$d/prog" | sed "s|^$d/prog||")
size=$(stat -c %s "$d/prog")
eu-elflint --gnu-ld "$d/prog" 2>&1 | sed "s|$d/prog|FILE|g" | sort -u >"$d/lint.orig"
head -c 300000 /dev/urandom >"$d/data"

# steps "VERB [OPTIONS]" FILE: the fault points VERB passes, in order.
steps() {
	local verb=$1 f=$2
	# shellcheck disable=SC2086
	PBITMAP_FAULT=list "$PBITMAP" $verb "$f" 2>&1 >/dev/null | sed -n 's/^fault point: //p'
}

fresh_elf() { cp -p "$d/prog" "$1" && setcap cap_net_raw+ep "$1"; }
# (getfattr, not elfcheck.py: this runs after every kill, and is quicker)
no_marker() { ! getfattr --absolute-names -n user.pbitmap "$1" >/dev/null 2>&1; }

# elf_state F: after the kill, F is either the working original or a
# complete stamp.  Prints which.
elf_state() {
	local f=$1 lint
	if "$PBITMAP" verify "$f" >/dev/null 2>&1; then
		echo "complete stamp"
		return
	fi
	head -c "$size" "$f" | cmp -s - "$d/prog" ||
		fail "$f: neither a valid stamp nor the original content in the first $size bytes"
	readelf -W -h -S -l "$f" >/dev/null 2>"$d/readelf.err" && [[ ! -s $d/readelf.err ]] ||
		fail "$f: readelf complains: $(cat "$d/readelf.err")"
	lint=$(eu-elflint --gnu-ld "$f" 2>&1 | sed "s|$f|FILE|g" | sort -u | comm -13 "$d/lint.orig" -)
	[[ -z $lint ]] || fail "$f: eu-elflint: $lint"
	local out rc
	out=$("$f")
	rc=$?
	[[ $out == "crash test program" && $rc == 7 ]] || fail "$f: program prints '$out', exit $rc"
	echo "original content, $(($(stat -c %s "$f") - size)) bytes of tail"
}

verify_ok_or_interrupted() {
	local f=$1
	"$PBITMAP" verify "$f" >"$OUT" 2>"$ERR"
	case $? in
	0) ;;
	1)
		# Killed after the work was done (strip, last step): the original
		# with no bitmap is a clean state too.
		grep -qi interrupted "$ERR" || cmp -s "$f" "$d/prog" ||
			fail "$f: verify after a crash: exit 1 without 'interrupted': $(cat "$ERR")"
		;;
	*) fail "$f: verify after a crash: exit $?: $(cat "$ERR")" ;;
	esac
}

# after_crash F: check the state, then both ways out.
after_crash() {
	local f=$1 what=$2 state cap after_kill cap_note
	state=$(elf_state "$f") || exit 1
	verify_ok_or_interrupted "$f"
	if [[ $state == "complete stamp" ]]; then
		$ELFCHECK marker "$f" >/dev/null 2>"$d/mk.err" ||
			fail "$what: the kill left a stamped file without its marker: $(cat "$d/mk.err")"
	else
		no_marker "$f" || fail "$what: the kill left the original with a user.pbitmap marker"
	fi
	cp -p "$f" "$f.b"

	# What the kill left of the capability; nothing may change it from now on.
	after_kill=$(getcap "$f" | sed "s|^$f||")
	[[ -n $after_kill ]] && setcap cap_net_raw+ep "$f.b"   # cp -p copies no capability
	[[ $after_kill == "$CAP" ]] || fail "$what: the kill lost the file capability ('$after_kill')"
	cap_note="capability kept"
	leftover=$(find "$d" -name "*.pbitmap-new" -printf '%f ')
	[[ -n $leftover ]] && cap_note+=", left $leftover"

	# Way out 1: add repairs or completes, strip restores.
	expect_status 0 "$PBITMAP" add "$f"
	expect_status 0 "$PBITMAP" verify "$f"
	$ELFCHECK stamp "$d/prog" "$f" >/dev/null || fail "$what: add after the crash gives a bad layout"
	cap=$(getcap "$f" | sed "s|^$f||")
	[[ $cap == "$after_kill" ]] || fail "$what: capability after repair '$cap', after the kill it was '$after_kill'"
	expect_status 0 "$PBITMAP" strip "$f"
	assert_cmp "$f" "$d/prog"
	no_marker "$f" || fail "$what: strip after the crash left a user.pbitmap marker"
	cap=$(getcap "$f" | sed "s|^$f||")
	[[ $cap == "$after_kill" ]] || fail "$what: capability after strip '$cap', after the kill it was '$after_kill'"

	# Way out 2: strip straight away.
	expect_status 0 "$PBITMAP" strip "$f.b"
	assert_cmp "$f.b" "$d/prog"
	cap=$(getcap "$f.b" | sed "s|^$f.b||")
	[[ $cap == "$after_kill" ]] || fail "$what: capability after a direct strip '$cap', after the kill it was '$after_kill'"
	leftover=$(find "$d" -name "*.pbitmap-new")
	[[ -z $leftover ]] || fail "$what: a copy was left after the next changes: $leftover"
	pass "$what: killed -> $state, $cap_note; add+strip and strip both give the original"
}

# ---- ELF add ---------------------------------------------------------------

fresh_elf "$d/list"
mapfile -t add_steps < <(steps add "$d/list")
((${#add_steps[@]})) || add_steps=(tail-record tail-written header-switched)
note "add fault points: ${add_steps[*]}"
mapfile -t strip_steps < <(steps strip "$d/list")
((${#strip_steps[@]})) || strip_steps=(strip-header)
note "strip fault points: ${strip_steps[*]}"
for s in "${add_steps[@]}"; do
	f=$d/add-$s
	fresh_elf "$f"
	expect_status 137 env PBITMAP_FAULT="$s" "$PBITMAP" add "$f"
	after_crash "$f" "add killed at $s"
done

# ---- ELF strip ---------------------------------------------------------------

for s in "${strip_steps[@]}"; do
	f=$d/strip-$s
	fresh_elf "$f"
	expect_status 0 "$PBITMAP" add "$f"
	expect_status 137 env PBITMAP_FAULT="$s" "$PBITMAP" strip "$f"
	after_crash "$f" "strip killed at $s"
done

# ---- ELF re-stamp (add -g 6 on a file stamped with 4 generations) ------------------

# stamped_steps ARRAY "VERB [OPTIONS]" NAME: into ARRAY, the fault points
# VERB passes on a freshly stamped copy of the program, each once, in order
# (a kill happens at the first occurrence); fails if there are none.
stamped_steps() {
	local -n into=$1
	fresh_elf "$d/$3"
	expect_status 0 "$PBITMAP" add "$d/$3"
	mapfile -t into < <(steps "$2" "$d/$3" | awk '!seen[$0]++')
	note "$2: fault points: ${into[*]:-none}"
	((${#into[@]})) || fail "$2 passes no fault point"
}

stamped_steps restamp_steps "add -g 6" rlist
for s in "${restamp_steps[@]}"; do
	f=$d/restamp-$s
	fresh_elf "$f"
	expect_status 0 "$PBITMAP" add "$f"
	expect_status 0 "$PBITMAP" set --pages 0-2 "$f"
	expect_status 137 env PBITMAP_FAULT="$s" "$PBITMAP" add -g 6 "$f"
	if "$PBITMAP" verify "$f" >/dev/null 2>&1; then
		learned="planes=$($ELFCHECK header "$f" | sed -n 's/^nr_planes=//p') age0=$($ELFCHECK dump "$f" | sed -n 's/^age0=//p')"
	else
		learned="no valid record"
	fi
	note "re-stamp killed at $s: $learned"
	after_crash "$f" "re-stamp killed at $s"
done

# ---- ELF set: the old bitmap or the new one ------------------------------------------

stamped_steps set_steps "set --pages 1" slist
for s in "${set_steps[@]}"; do
	f=$d/set-$s
	fresh_elf "$f"
	expect_status 0 "$PBITMAP" add "$f"
	expect_status 0 "$PBITMAP" set --pages 0 "$f"
	expect_status 137 env PBITMAP_FAULT="$s" "$PBITMAP" set --pages 1 "$f"
	expect_status 0 "$PBITMAP" verify "$f"
	age0=$($ELFCHECK dump "$f" | sed -n 's/^age0=//p')
	[[ $age0 == 0 || $age0 == 0-1 ]] || fail "set killed at $s: newest generation is '$age0', neither the old '0' nor the new '0-1'"
	"$PBITMAP" undo "$f" | cmp -s - "$d/prog" || fail "set killed at $s: undo does not give the original"
	note "set killed at $s: age0=$age0"
	after_crash "$f" "set killed at $s"
done

# ---- data files ----------------------------------------------------------------

# A data file's record is one extended attribute, set or removed by a single
# system call, which is followed by a fault point (xattr-written,
# xattr-removed).  Each step of add, of strip and of a re-stamp (add -g 6)
# must be hit (status 137) and leave the content intact and the attribute
# as it was before that call (steps before it) or as the call left it (that
# step and later): add: none / valid; re-stamp: 4 generations / 6; strip:
# valid / none.  Then add, verify and strip work as on a fresh file.
cp "$d/data" "$d/dlist"
mapfile -t data_add_steps < <(steps add "$d/dlist")
"$PBITMAP" add "$d/dlist" 2>/dev/null || fail "add on a data file"
mapfile -t data_restamp_steps < <(steps "add -g 6" "$d/dlist")
mapfile -t data_strip_steps < <(steps strip "$d/dlist")
note "data file fault points: add: ${data_add_steps[*]:-none}; add -g 6: ${data_restamp_steps[*]:-none}; strip: ${data_strip_steps[*]:-none}"
((${#data_add_steps[@]} && ${#data_restamp_steps[@]} && ${#data_strip_steps[@]})) ||
	fail "a data file's add, re-stamp or strip passes no fault point: nothing below would run"
has_xattr() { getfattr --absolute-names -n user.pbitmap "$1" >/dev/null 2>&1; }
for verb in add "add -g 6" strip; do
	case $verb in
	add) data_steps=("${data_add_steps[@]}") ;;
	strip) data_steps=("${data_strip_steps[@]}") ;;
	*) data_steps=("${data_restamp_steps[@]}") ;;
	esac
	((${#data_steps[@]})) && [[ " ${data_steps[*]} " == *" xattr-"* ]] ||
		fail "data $verb: no step after the attribute write among: ${data_steps[*]}"
	written=0
	for s in "${data_steps[@]}"; do
		[[ $s == xattr-written || $s == xattr-removed ]] && written=1
		f=$d/data-${verb// /}-$s
		cp "$d/data" "$f"
		[[ $verb != add ]] && expect_status 0 "$PBITMAP" add "$f"
		# shellcheck disable=SC2086
		expect_status 137 env PBITMAP_FAULT="$s" "$PBITMAP" $verb "$f"
		assert_cmp "$f" "$d/data"
		if [[ $verb == add && $written == 0 ]] || [[ $verb == strip && $written == 1 ]]; then
			has_xattr "$f" && fail "data $verb killed at $s: there is an attribute (write done: $written)"
		else
			has_xattr "$f" || fail "data $verb killed at $s: no attribute (write done: $written)"
			expect_status 0 "$PBITMAP" verify "$f"
		fi
		if [[ $verb == "add -g 6" ]]; then
			planes=$($ELFCHECK dump "$f" | sed -n 's/^nr_planes=//p')
			[[ $planes == $((written ? 6 : 4)) ]] ||
				fail "data re-stamp killed at $s: $planes generations, expected $((written ? 6 : 4))"
		fi
		expect_status 0 "$PBITMAP" add "$f"
		expect_status 0 "$PBITMAP" verify "$f"
		expect_status 0 "$PBITMAP" strip "$f"
		assert_cmp "$f" "$d/data"
		has_xattr "$f" && fail "data: xattr left by strip"
		pass "data $verb killed at $s: content intact, attribute as $( ((written)) && echo "the call left it" || echo "before"); add/strip work"
	done
done
