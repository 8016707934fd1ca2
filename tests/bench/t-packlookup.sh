#!/bin/bash
# t-packlookup: the benchmark's data-file workload (kernel-patch/bench/
# packlookup.c, built here with ASan/UBSan) and make-pack.sh.
#   - a pack of a small real tree (with a near copy of a file: a delta) made
#     by make-pack.sh, and the same objects
#     packed without deltas: every line packlookup prints is what
#     `git cat-file --batch-check` says of that name (whole objects), the
#     delta pack's lines name the same objects, and two runs print the same;
#   - --touched counts pages: fewer of the pack than it has when a few
#     objects are looked up;
#   - damaged input: a truncated index, a wrong magic, a pack whose object
#     data is overwritten, an index whose offsets point past the pack: exit
#     1 with "packlookup: FILE: ...", never a crash (ASan would abort).

# shellcheck source=tests/bench/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
command -v git >/dev/null || fail "git is not installed (make deps installs it)"
cd "$WORK" || fail "cd $WORK"
PL=$WORK/packlookup
gcc -std=c11 -D_DEFAULT_SOURCE -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined \
	-fno-sanitize-recover=all -o "$PL" "$BENCH_DIR/packlookup.c" -lz 2>err ||
	fail "cannot build packlookup: $(cat err)"

# A small real tree: this repository's kernel-patch/ and tests/ (text files
# of all sizes; similar ones give deltas).
mkdir src && cp -r "$TOP/kernel-patch" "$TOP/tests" src/ || fail "cannot copy the tree"
# and a near copy of a large file, which git's delta search stores as a
# delta: under the same name in another directory, since git pairs delta
# candidates by a hash of the name's end (then size), within a window of 10
big=$(ls -S src/kernel-patch/*.patch | head -n 1)
mkdir src/near-copy && sed '100s/^/changed /' "$big" >"src/near-copy/${big##*/}" ||
	fail "cannot make the near copy"
"$BENCH_DIR/make-pack.sh" out src >make.log 2>&1 || fail "make-pack.sh: $(cat make.log)"
[ -s out/linux.pack ] && [ -s out/linux.idx ] || fail "make-pack.sh left no pack: $(cat make.log)"
ls out/.make-pack.* >/dev/null 2>&1 && fail "make-pack.sh left its temporary directory"

# The same objects without deltas, in a repository git can read.
git init -q repo && cp -r src/. repo/ && git -C repo add -f -A &&
	git -C repo -c user.name=t -c user.email=t@t commit -q -m t || fail "cannot make repo"
git -C repo rev-list --objects --all | git -C repo pack-objects -q --depth=0 plain >/dev/null ||
	fail "cannot pack without deltas"
plain=(repo/plain-*.idx repo/plain-*.pack)

"$PL" -n 60 "${plain[@]}" >plain.out 2>err || fail "packlookup of the plain pack: $(cat err)"
[ "$(grep -c . plain.out)" = 61 ] || fail "plain: $(grep -c . plain.out) lines, not 60 + 1"
head -n 60 plain.out | cut -d' ' -f1 | git -C repo cat-file --batch-check >git.out ||
	fail "git cat-file"
head -n 60 plain.out | cmp -s - git.out ||
	fail "packlookup and git cat-file --batch-check differ: $(diff <(head -n 60 plain.out) git.out | head -n 6)"
grep -q '^inflated [0-9]* crc32 [0-9a-f]\{8\}$' plain.out || fail "no checksum line: $(tail -n 1 plain.out)"

"$PL" -n 60 out/linux.idx out/linux.pack >delta.out 2>err || fail "packlookup of make-pack's pack: $(cat err)"
"$PL" -n 60 out/linux.idx out/linux.pack | cmp -s - delta.out || fail "two runs differ"
"$PL" -n 1000 out/linux.idx out/linux.pack >all.out || fail "packlookup -n 1000"
grep -q ' ofs-delta ' all.out || fail "make-pack.sh's pack has no delta (git's delta search off?)"
# Its whole trees and blobs are the repository's (its commit is not: another
# identity and date), with the same types and sizes.
grep -E '^[0-9a-f]{40} (tree|blob) ' delta.out >whole.out
[ -s whole.out ] || fail "no whole tree or blob among 60 objects of make-pack's pack"
cut -d' ' -f1 whole.out | git -C repo cat-file --batch-check | cmp -s - whole.out ||
	fail "make-pack's pack and git disagree: $(cut -d' ' -f1 whole.out | git -C repo cat-file --batch-check | diff - whole.out | head -n 4)"

"$PL" -n 3 --touched "${plain[@]}" >t.out || fail "--touched"
read -r _ _ ti _ _ _ _ tp _ np _ < <(tail -n 1 t.out)
((ti >= 1 && tp >= 1 && tp < np)) || fail "--touched: $(tail -n 1 t.out)"

# Damaged input.
bad() {	# WHAT IDX PACK PATTERN
	local rc=0
	"$PL" "$2" "$3" >/dev/null 2>err || rc=$?
	((rc == 1)) && grep -q "^packlookup: $4" err || fail "$1: exit $rc, $(head -n 3 err)"
}
head -c 2000 "${plain[0]}" >short.idx
bad "truncated index" short.idx "${plain[1]}" "short.idx: too short for its object count"
printf 'XtOc' | cat - <(tail -c +5 "${plain[0]}") >magic.idx
bad "wrong magic" magic.idx "${plain[1]}" "magic.idx: not a version 2 pack index"
cp "${plain[1]}" zap.pack && size=$(stat -c %s zap.pack) &&
	dd if=/dev/urandom of=zap.pack bs=1 seek=12 count=$((size - 32)) conv=notrunc status=none
bad "overwritten object data" "${plain[0]}" zap.pack "zap.pack: "
head -c 4096 "${plain[1]}" >cut.pack
printf '\0\0\0' | dd of=cut.pack bs=1 seek=9 conv=notrunc status=none	# keep the count plausible
bad "pack shorter than the index says" "${plain[0]}" cut.pack "cut.pack: "
rc=0; "$PL" -n 0 "${plain[@]}" 2>err >/dev/null || rc=$?
((rc == 1)) || fail "-n 0: exit $rc"
rc=0; "$PL" "${plain[0]}" 2>err >/dev/null || rc=$?
((rc == 2)) || fail "one file: exit $rc"
echo "PASS: packlookup agrees with git cat-file on 60 objects; damaged packs are errors"
