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
learn_build v1
learn_build v2

expect_status 0 rpmi -i "$PB_RPM"
expect_status 0 rpmi -i "$rpm1"
assert_stamped "$R$lib/prog" "$R$lib/libpbitmap.so"
"$PBITMAP" export -o v1.prof v1/prog v1/libpbitmap.so || fail "export v1"
expect_status 0 "$PBITMAP" import v1.prof "$R$lib/prog" "$R$lib/libpbitmap.so"
grep -c "same content" "$ERR" | grep -qx 2 || fail "v1's pages not imported exactly: $(cat "$ERR")"
[[ -n $(gen_pages "$R$lib/libpbitmap.so") ]] || fail "nothing learned in the root's library"

# ---- 1. upgrade ---------------------------------------------------------------
expect_status 0 rpmi -U "$rpm2"
grep -q "carry.profile: 0 files given their own build's pages, 2 carried from another build, 0 refused" "$ERR" ||
	fail "rpm -U: no carry-over reported: $(cat "$ERR")"
assert_stamped "$R$lib/prog" "$R$lib/libpbitmap.so"
[[ ! -e $R/var/lib/pbitmap/carry.profile ]] || fail "the carry profile was left behind"
for f in prog libpbitmap.so; do
	check_carried "after rpm -U: $f" "$R$lib/$f" "v2/$f"
done
pass "rpm -U 1.0 -> 2.0: learned pages carried into the new build: $(grep carry.profile "$ERR")"

# ---- 2. reinstall: identical files --------------------------------------------
before=$(gen_pages "$R$lib/libpbitmap.so")
expect_status 0 rpmi -U --replacepkgs "$rpm2"
grep -q "carry.profile: 2 files given their own build's pages, 0 carried" "$ERR" ||
	fail "reinstall: not carried exactly: $(cat "$ERR")"
[[ $(gen_pages "$R$lib/libpbitmap.so") == "$before" ]] || fail "reinstall changed the pages"
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
[[ -z $(gen_pages "$R$lib/libpbitmap.so") ]] || fail "pages appeared with nothing to carry"
pass "/var/lib/pbitmap unusable: rpm -U still succeeds, files stamped, nothing carried"
