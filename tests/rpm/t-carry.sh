#!/bin/bash
# t-carry: learned pages survive `rpm -U`.  pbitmap's %transfiletriggerun
# exports, before the transaction, the bitmaps of the files it will remove
# (an upgrade erases the old package) into /var/lib/pbitmap/carry.profile;
# the install trigger stamps the new files and imports that profile into
# them, then removes it.
#
# The package, pbtool, is this project's own tool built from two commits
# (tests/lib/toolbuilds.sh: real code changes move functions), a program
# and a shared library of its modules, stripped.  The pages each build
# uses are learned on the host with `pbitmap record` (digest and add on a
# copy of python3.11) in identical copies; version 1's are imported into
# the root's installed files as the kernel would have learned them.
#   1. rpm -U to version 2: exit 0; the trigger reports 2 files carried
#      from another build; both new files are stamped and cover at least
#      90% of the pages version 2 really uses (Jaccard printed); the carry
#      profile is gone.
#   2. rpm -U --replacepkgs of version 2 (the files replaced by identical
#      ones): their pages come back exactly ("given their own build's").
#   3. rpm -e: exit 0, nothing printed but the trigger's own lines; the
#      next transaction removes the profile it left.
#   4. /var/lib/pbitmap a regular file (the export cannot write): the
#      upgrade still exits 0, the new files are stamped, nothing carried.

source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/rpmlib.sh"
source "$TOP/tests/lib/toolbuilds.sh"
need python3

make_root "$(tmpdir)/root"
work=$(tmpdir)
cd "$work" || fail "cd $work"
build_tool "$TOOLBUILD_OLD" v1 || exit 1
build_tool worktree v2 || exit 1
lib=/usr/lib64/pbtool
for v in v1 v2; do
	mkdir -p "payload-$v$lib"
	cp "$v/prog" "$v/libpbitmap.so" "payload-$v$lib/" || fail "payload $v"
done
rpm1=$(build_rpm pbtool 1.0 "$work/payload-v1" "$lib") || exit 1
rpm2=$(build_rpm pbtool 2.0 "$work/payload-v2" "$lib") || exit 1

# What each build uses, learned on the host in stamped copies.
learn() {	# learn DIR: record DIR/prog's digest and add
	"$PBITMAP" add -q "$1/prog" "$1/libpbitmap.so" || fail "stamp $1"
	cp /usr/bin/python3.11 "$1.work"
	for cmd in digest add; do
		"$PBITMAP" record -q -- "$1/prog" "$cmd" "$1.work" >/dev/null 2>"$1.rec" ||
			fail "record $1/prog $cmd: $(tail -3 "$1.rec")"
	done
}
learn v1
learn v2
pages() {	# pages FILE AGE: the marked pages of a generation
	"$PBITMAP" show --json "$1" | python3 -c '
import json, sys
p = json.load(sys.stdin)[0]["planes"][int(sys.argv[1])]
print(" ".join(str(n) for a, b in p["ranges"] for n in range(a, b + 1)))' "$2"
}

expect_status 0 rpmi -i "$PB_RPM"
expect_status 0 rpmi -i "$rpm1"
assert_stamped "$R$lib/prog" "$R$lib/libpbitmap.so"
"$PBITMAP" export -o v1.prof v1/prog v1/libpbitmap.so || fail "export v1"
expect_status 0 "$PBITMAP" import v1.prof "$R$lib/prog" "$R$lib/libpbitmap.so"
grep -c "same content" "$ERR" | grep -qx 2 || fail "v1's pages not imported exactly: $(cat "$ERR")"
[[ -n $(pages "$R$lib/libpbitmap.so" 0) ]] || fail "nothing learned in the root's library"

# ---- 1. upgrade ---------------------------------------------------------------
expect_status 0 rpmi -U "$rpm2"
grep -q "carry.profile: 0 files given their own build's pages, 2 carried from another build, 0 refused" "$ERR" ||
	fail "rpm -U: no carry-over reported: $(cat "$ERR")"
assert_stamped "$R$lib/prog" "$R$lib/libpbitmap.so"
[[ ! -e $R/var/lib/pbitmap/carry.profile ]] || fail "the carry profile was left behind"
for f in prog libpbitmap.so; do
	read -r cov jac carried used < <(python3 - "$(pages "$R$lib/$f" 0)" "$(pages "v2/$f" 0)" <<'PY'
import sys
c = set(sys.argv[1].split()); u = set(sys.argv[2].split())
print(len(c & u) / len(u) if u else 1.0, len(c & u) / len(c | u) if c | u else 1.0,
      len(c), len(u))
PY
)
	note "after rpm -U: $f: $carried pages carried, version 2 uses $used; coverage $cov, Jaccard $jac"
	python3 -c "import sys; sys.exit(0 if float('$cov') >= 0.9 else 1)" ||
		fail "$f: only $cov of the pages version 2 uses were carried"
done
pass "rpm -U 1.0 -> 2.0: learned pages carried into the new build: $(grep carry.profile "$ERR")"

# ---- 2. reinstall: identical files --------------------------------------------
before=$(pages "$R$lib/libpbitmap.so" 0)
expect_status 0 rpmi -U --replacepkgs "$rpm2"
grep -q "carry.profile: 2 files given their own build's pages, 0 carried" "$ERR" ||
	fail "reinstall: not carried exactly: $(cat "$ERR")"
[[ $(pages "$R$lib/libpbitmap.so" 0) == "$before" ]] || fail "reinstall changed the pages"
pass "rpm -U --replacepkgs: the same pages, exactly"

# ---- 3. erase -------------------------------------------------------------------
expect_status 0 rpmi -e pbtool
[[ -e $R/var/lib/pbitmap/carry.profile ]] || fail "rpm -e: the trigger kept nothing"
grep -v '^pbitmap: ' "$ERR" | grep -q . && fail "rpm -e printed: $(cat "$ERR")"
expect_status 0 rpmi -i "$rpm1"
[[ ! -e $R/var/lib/pbitmap/carry.profile ]] || fail "the next install left the old carry profile"
pass "rpm -e: exit 0; the profile it kept is gone after the next transaction"

# ---- 4. nowhere to write the profile --------------------------------------------
rm -rf "$R/var/lib/pbitmap" && touch "$R/var/lib/pbitmap"
expect_status 0 rpmi -U "$rpm2"
assert_stamped "$R$lib/prog" "$R$lib/libpbitmap.so"
[[ -z $(pages "$R$lib/libpbitmap.so" 0) ]] || fail "pages appeared with nothing to carry"
pass "/var/lib/pbitmap unusable: rpm -U still succeeds, files stamped, nothing carried"
