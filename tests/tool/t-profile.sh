#!/bin/bash
# t-profile: portable profiles (docs/FORMAT.md, "Portable profiles"):
# `export` writes a file's bitmap as text, `import` applies it to the same
# build exactly and carries it into another build through anchors.
#
#   - Same build: export of an ELF file (with --learn=every) and of a data
#     file (xattr), imported into unstamped copies: show prints the same
#     generations, runs and policy; importing into a stamped copy with
#     other bits replaces them.
#   - Another build: this project's own C code from two commits (49a6f83
#     and the working tree: profile.c, anchors.c and cmd-profile.c added,
#     merge rewritten, so functions move), built as a program and a shared
#     library of its modules, stripped as Debian strips.  `pbitmap record`
#     learns build A running `digest` and `add`; the profile of A is
#     imported into build B (entries found by name); `record` learns B for
#     the same commands in an identical copy.  Asserted per file: import
#     says it carried from another build; the library by symbols; at
#     least 90% of the pages B really used are in the carried set.  The
#     Jaccard index of carried and learned is printed.
#   - Refusals, each leaving the file unchanged (size, digest, xattrs,
#     inode, mtime): the profile of the tool imported into python3.11 (no
#     functions in common: "another program"), a data file's profile into
#     other content, a profile with a range past the file's end (the line
#     is named), a truncated profile, a file that is not a profile; a
#     profile with no entry for the file.
#   - merge --min: 10 profiles of a data file, 3 with a stray page: --min 5
#     drops it, --min 1 keeps it, the common pages stay; --min 11 is a usage
#     error.

source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/lib/toolbuilds.sh"
need python3 cmp
[[ -x /usr/bin/python3.11 ]] || fail "missing /usr/bin/python3.11 (Debian package python3.11)"

d=$(tmpdir)
cd "$d" || fail "cd $d"

# ---- same build -------------------------------------------------------------

cp /usr/bin/python3.11 py
cp py py-copy
"$PBITMAP" add -q --learn=every py || fail "add py"
"$PBITMAP" set --pages 0-3,40-60,1000 py || fail "set py"
"$PBITMAP" set --plane 2 --pages 7 py || fail "set plane 2"
expect_status 0 "$PBITMAP" export -o py.prof py
grep -q '^pbitmap-profile 1$' py.prof || fail "no profile header: $(head -2 py.prof)"
grep -q '^learn every$' py.prof || fail "policy not exported"
grep -c '^anchor function ' py.prof >/dev/null || fail "no function anchors in the profile"
expect_status 0 "$PBITMAP" import -v py.prof py-copy
grep -q "imported: .* (same content)" "$ERR" || fail "import did not say exact: $(cat "$ERR")"
diff <("$PBITMAP" show py | tail -n +2) <("$PBITMAP" show py-copy | tail -n +2) ||
	fail "show differs after an exact import"
"$PBITMAP" show --json py-copy | grep -q '"learn_policy":"every"' || fail "policy not imported"
pass "ELF: export, import into an unstamped copy of the same build: identical"

cp /usr/bin/python3.11 py-other
"$PBITMAP" add -q py-other && "$PBITMAP" set --pages 500-510 py-other || fail "stamp py-other"
expect_status 0 "$PBITMAP" import py.prof py-other
[[ $(gen_pages py-other) == "$(gen_pages py)" ]] || fail "import into a stamped copy kept other bits"
pass "ELF: import replaces the bits of a stamped copy"

python3 -c "import sys; sys.stdout.buffer.write(bytes(range(256)) * 11719)" >data
cp data data-copy
"$PBITMAP" add -q data data-copy && "$PBITMAP" set --pages 1,5-9 data || fail "stamp data"
"$PBITMAP" strip data-copy || fail "strip data-copy"
expect_status 0 "$PBITMAP" export -o data.prof data
grep -q '^kind data$' data.prof || fail "data file not exported as kind data"
expect_status 0 "$PBITMAP" import data.prof data-copy
[[ $(gen_pages data-copy) == "1 5 6 7 8 9" ]] || fail "data import: $(gen_pages data-copy)"
pass "data file: export, import into a copy: identical"

# ---- another build ----------------------------------------------------------

build_tool 49a6f83 A
build_tool worktree B
cp -a B Bt
"$PBITMAP" add -q A/prog A/libpbitmap.so B/prog B/libpbitmap.so Bt/prog Bt/libpbitmap.so ||
	fail "stamp the builds"
learn_build A
learn_build Bt
[[ -n $(gen_pages A/prog) && -n $(gen_pages A/libpbitmap.so) ]] || fail "record learned nothing in A"
expect_status 0 "$PBITMAP" export -o A.prof A/prog A/libpbitmap.so
expect_status 0 "$PBITMAP" import -v A.prof B/prog B/libpbitmap.so
grep -q "B/prog: carried from another build" "$ERR" || fail "prog: $(cat "$ERR")"
grep -q "B/libpbitmap.so: carried from another build" "$ERR" || fail "lib: $(cat "$ERR")"
grep "libpbitmap.so: carried" "$ERR" | grep -qv " 0 by symbol" ||
	fail "the library was not carried by its symbols: $(cat "$ERR")"
while read -r line; do note "${line#pbitmap: }"; done <"$ERR"
for f in prog libpbitmap.so; do
	for age in 0 1; do
		check_carried "$f generation $age" "B/$f" "Bt/$f" "$age"
	done
done
pass "another build (stripped, functions moved): carried, >= 90% of B's pages covered"

# ---- refusals ----------------------------------------------------------------

refuse() {	# refuse PROFILE FILE PATTERN
	snapshot "$2"
	expect_status 1 "$PBITMAP" import "$1" "$2"
	grep -q -- "$3" "$ERR" || fail "import $1 $2: expected '$3', got: $(cat "$ERR")"
	assert_unchanged "$2"
}
cp /usr/bin/python3.11 unrelated
"$PBITMAP" add -q unrelated || fail "add unrelated"
sed -n '1,/^end$/p' A.prof >A-prog.prof
refuse A-prog.prof unrelated "is for another program"
cp /usr/bin/python3.11 unrelated-plain
refuse A-prog.prof unrelated-plain "is for another program"
printf 'x' >>data-copy
"$PBITMAP" add -q data-copy
refuse data.prof data-copy "data file has no anchors"
sed 's/^gen 0 .*/gen 0 2999990+4096/' data.prof >bad-range.prof
refuse bad-range.prof data "line [0-9]*: gen: a range ends past the file's size"
head -c 300 py.prof >truncated.prof
refuse truncated.prof py-copy "line [0-9]*: \|ends inside an entry"
refuse /usr/bin/python3.11 py-copy "not a pbitmap profile"
cat A.prof data.prof | sed '/^pbitmap-profile/d' | sed '1i pbitmap-profile 1' >two.prof
refuse two.prof py-copy "has no entry for it"
pass "refusals: another program, changed data, bad ranges, truncated, not a profile, no entry"

# ---- merge --min --------------------------------------------------------------

python3 -c "import sys; sys.stdout.buffer.write(b\"fleet\" * 40000)" >fleet
"$PBITMAP" add -q fleet || fail "add fleet"
for i in $(seq 1 10); do
	cp -a fleet "m$i"
	"$PBITMAP" set --pages 2-4,20 "m$i" || fail "set m$i"
	((i <= 3)) && { "$PBITMAP" set --pages 40 "m$i" || fail "stray m$i"; }
	"$PBITMAP" export -o "m$i.prof" "m$i" || fail "export m$i"
done
profiles=(m{1..10}.prof)
expect_status 0 "$PBITMAP" merge --min 5 fleet "${profiles[@]}"
[[ $(gen_pages fleet) == "2 3 4 20" ]] || fail "--min 5: $(gen_pages fleet)"
expect_status 0 "$PBITMAP" merge --min 1 fleet "${profiles[@]}"
[[ $(gen_pages fleet) == "2 3 4 20 40" ]] || fail "--min 1: $(gen_pages fleet)"
expect_status 0 "$PBITMAP" merge --min 4 fleet m1 m2 m3 m4 m5
[[ $(gen_pages fleet) == "2 3 4 20" ]] || fail "--min 4 of stamped files: $(gen_pages fleet)"
snapshot fleet
expect_status 2 "$PBITMAP" merge --min 11 fleet "${profiles[@]}"
assert_unchanged fleet
pass "merge --min: 3 of 10 with a stray page: K=5 drops it, K=1 keeps it; K > N refused"
