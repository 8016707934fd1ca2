#!/bin/bash
# t-stdin: `pbitmap add --stdin` / `strip --stdin`, as an rpm file trigger
# uses them: one path per line, mixed with everything a package contains.
#
# The list holds two ELF programs (one with a space in its name), a shared
# library, a directory, a symlink to a third ELF program, a duplicate line,
# a text file, a binary non-ELF data file and a path that does not exist.
# Asserted: exactly the ELF regular files get stamped, once (one .pbitmap);
# nothing else is modified (the symlink's target, the data files: no
# user.pbitmap xattr); stderr is exactly one "pbitmap: PATH: ..." line, for
# the missing path (nothing about the duplicate); exit status 1 (an error on
# one file, per the spec), and 0 once the missing path is left out.  strip --stdin
# then restores every ELF file byte for byte.
# Why: the trigger hands over whole packages; noise or a stray xattr on
# every config file would make pbitmap unusable there.

source "$(dirname "$0")/../lib.sh"
need gcc python3 getfattr sha256sum
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
cat >"$d/p.c" <<'EOF'
int main(void) { return 0; }
EOF
gcc -o "$d/prog1" "$d/p.c" && gcc -o "$d/prog 2" "$d/p.c" && gcc -o "$d/prog3" "$d/p.c" &&
	gcc -shared -fPIC -o "$d/libx.so" "$d/p.c" || fail gcc
for f in prog1 "prog 2" prog3 libx.so; do cp "$d/$f" "$d/$f.orig"; done
mkdir "$d/dir"
ln -s prog3 "$d/link"
printf 'just text\n' >"$d/readme.txt"
head -c 20000 /dev/urandom >"$d/blob.bin"

printf '%s\n' "$d/prog1" "$d/dir" "$d/link" "$d/prog 2" "$d/readme.txt" \
	"$d/prog1" "$d/missing" "$d/blob.bin" "$d/libx.so" >"$d/list"
note "list of $(wc -l <"$d/list") paths"

for f in dir link prog3 readme.txt blob.bin; do snapshot "$d/$f"; done

expect_status 1 "$PBITMAP" add --stdin <"$d/list"
lines=$(wc -l <"$ERR")
[[ $lines == 1 ]] || fail "expected exactly one line on stderr, got $lines: $(cat "$ERR")"
grep -qF "pbitmap: $d/missing: " "$ERR" || fail "the line is not about the missing path: $(cat "$ERR")"
[[ ! -s $OUT ]] || fail "add --stdin printed on stdout: $(cat "$OUT")"
pass "add --stdin: exit 1, one line: $(cat "$ERR")"

for f in prog1 "prog 2" libx.so; do
	$ELFCHECK stamp "$d/$f.orig" "$d/$f" >/dev/null || fail "$f not stamped exactly once"
	expect_status 0 "$PBITMAP" verify "$d/$f"
done
for f in dir link prog3 readme.txt blob.bin; do assert_unchanged "$d/$f" "add --stdin"; done
pass "ELF files stamped once; directory, symlink (and its target), text and data untouched"

# Everything listed again, without the missing path: exit 0, the stamped
# files do not change, stderr has at most the "already stamped" notes (the
# spec's note for add; nothing about the other entries).
grep -v missing "$d/list" >"$d/list2"
sum_before=$(cat "$d/prog1" "$d/prog 2" "$d/libx.so" | sha256sum)
expect_status 0 "$PBITMAP" add --stdin <"$d/list2"
[[ ! -s $OUT ]] || fail "second add --stdin printed on stdout: $(cat "$OUT")"
if [[ -n $(grep -v ': already stamped$' "$ERR") ]]; then
	fail "second add --stdin: unexpected messages: $(cat "$ERR")"
fi
[[ $(wc -l <"$ERR") -le 3 ]] || fail "second add --stdin: more notes than ELF files: $(cat "$ERR")"
[[ $(cat "$d/prog1" "$d/prog 2" "$d/libx.so" | sha256sum) == "$sum_before" ]] ||
	fail "second add --stdin changed stamped files"
pass "add --stdin again: exit 0, no change, $(wc -l <"$ERR") 'already stamped' notes"

expect_status 1 "$PBITMAP" strip --stdin <"$d/list"
[[ $(wc -l <"$ERR") == 1 ]] && grep -qF "pbitmap: $d/missing: " "$ERR" ||
	fail "strip --stdin: expected one line about the missing path: $(cat "$ERR")"
for f in prog1 "prog 2" libx.so; do assert_cmp "$d/$f" "$d/$f.orig"; done
for f in dir link prog3 readme.txt blob.bin; do assert_unchanged "$d/$f" "strip --stdin"; done
pass "strip --stdin: ELF files byte-identical to the originals, the rest untouched"
