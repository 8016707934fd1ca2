#!/bin/bash
# t-undo-digest: undo and digest (what rpm -V relies on), and a stamped file
# rewritten by another tool.
#
#   - digest of several files: one "HEX  FILE" line each, in order, equal to
#     sha256sum of the originals, stamped or not, ELF or data;
#   - digest --algo md5|sha1|sha224|sha256|sha384|sha512 (libmd; SHA-224 is
#     the tool's own on libmd's SHA-256): FIPS 180-4's and RFC 1321's
#     examples (all three of SHA-224's), and the output of coreutils'
#     md5sum..sha512sum for every length 0-300 (each padding case of the
#     64- and 128-byte blocks), for a 1 MiB and a stamped file; an unknown
#     algorithm is a usage error;
#   - undo -o OUT writes the original and refuses an existing OUT (left
#     alone); undo refuses to write to a terminal; undo of a data file or an
#     unstamped ELF file is its content;
#   - a stamped file rewritten by GNU strip (the undo data no longer matches):
#     verify fails, strip and add refuse it unchanged, digest/undo refuse
#     rather than print a wrong original (each exit status 1); objcopy --remove-section .pbitmap
#     gives a clean file that stamps and strips normally.
# Why: a wrong digest makes rpm -V report a modified package; a "strip" that
# trusts stale undo data would corrupt a program.

source "$(dirname "$0")/../lib.sh"
need gcc strip objcopy readelf script python3 md5sum sha1sum sha224sum sha256sum sha384sum sha512sum
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
echo 'int main(void){return 0;}' >"$d/p.c"
gcc -o "$d/orig" "$d/p.c" || fail gcc
cp "$d/orig" "$d/prog"
head -c 70000 /dev/urandom >"$d/data"
cp "$d/data" "$d/data.orig"
cp "$d/orig" "$d/plain"
expect_status 0 "$PBITMAP" add "$d/prog" "$d/data"

expect_status 0 "$PBITMAP" digest "$d/prog" "$d/data" "$d/plain"
want="$(sha256sum <"$d/orig" | cut -d' ' -f1)  $d/prog
$(sha256sum <"$d/data.orig" | cut -d' ' -f1)  $d/data
$(sha256sum <"$d/orig" | cut -d' ' -f1)  $d/plain"
[[ $(cat "$OUT") == "$want" ]] || fail "digest of three files:
$(cat "$OUT")
expected:
$want"
pass "digest: one sha256sum-style line per file, in order, stamped or not"

# Known answers: FIPS 180-4's examples (csrc.nist.gov, "Examples with
# Intermediate Values": "abc", the 448-bit two-block message, a million
# "a"), RFC 1321's for MD5.
mkdir "$d/kat" || fail mkdir
printf abc >"$d/kat/abc"
printf abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq >"$d/kat/abc448"
python3 -c 'import sys; sys.stdout.write("a" * 1000000)' >"$d/kat/a1m"
: >"$d/kat/empty"
while read -r algo name want; do
	expect_status 0 "$PBITMAP" digest --algo "$algo" "$d/kat/$name"
	[[ $(cat "$OUT") == "$want  $d/kat/$name" ]] ||
		fail "digest --algo $algo of $name: $(cat "$OUT"), expected $want"
done <<'KAT'
md5 abc 900150983cd24fb0d6963f7d28e17f72
md5 empty d41d8cd98f00b204e9800998ecf8427e
sha1 abc a9993e364706816aba3e25717850c26c9cd0d89d
sha224 abc 23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7
sha224 abc448 75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525
sha224 a1m 20794655980c91d8bbb4c1ea97618a4bf03f42581948b2ee4ee7ad67
sha224 empty d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f
sha256 abc ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
sha384 abc cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7
sha512 abc ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f
KAT
# Every length from 0 to 300 bytes, a 1 MiB file and the stamped ELF file
# (its original), against coreutils.
for n in $(seq 0 300); do
	head -c "$n" "$d/data.orig" >"$d/kat/len$n"
done
head -c $((1 << 20)) /dev/urandom >"$d/kat/big"
files=("$d"/kat/*)
for algo in md5 sha1 sha224 sha256 sha384 sha512; do
	expect_status 0 "$PBITMAP" digest --algo "$algo" "${files[@]}" "$d/prog"
	want=$("${algo}sum" "${files[@]}" && "${algo}sum" <"$d/orig" | sed "s|-\$|$d/prog|")
	[[ $(cat "$OUT") == "$want" ]] || fail "digest --algo $algo differs from ${algo}sum:
$(diff <(echo "$want") "$OUT" | head -20)"
done
expect_status 2 "$PBITMAP" digest --algo sha3-256 "$d/data"
pass "digest --algo: the FIPS 180-4 and RFC 1321 examples; as coreutils for lengths 0-300, 1 MiB, a stamped file"

expect_status 0 "$PBITMAP" undo -o "$d/undone" "$d/prog"
assert_cmp "$d/undone" "$d/orig"
echo "keep me" >"$d/exists"
snapshot "$d/exists"
# A file in the way is a failure on that file (1), not a usage error.
expect_status 1 "$PBITMAP" undo -o "$d/exists" "$d/prog"
grep -qF "pbitmap: $d/exists: " "$ERR" && grep -qi "exists" "$ERR" ||
	fail "undo -o EXISTING: stderr does not name the file in the way: $(cat "$ERR")"
assert_unchanged "$d/exists" "undo -o onto an existing file"
"$PBITMAP" undo "$d/data" >"$d/data.undone" || fail "undo of a data file"
assert_cmp "$d/data.undone" "$d/data.orig"
"$PBITMAP" undo "$d/plain" >"$d/plain.undone" || fail "undo of an unstamped file"
assert_cmp "$d/plain.undone" "$d/orig"
# A terminal on stdout: refused as a usage error (2: the command line must
# change, redirect or -o), nothing binary written to it.
script -qec "$PBITMAP undo $d/prog" "$d/tty.log" >/dev/null 2>&1
rc=$?
((rc == 2)) || fail "undo to a terminal: exit $rc, expected 2: $(cat "$d/tty.log")"
grep -q "refusing to write binary data to a terminal" "$d/tty.log" ||
	fail "undo to a terminal: no message saying why: $(cat "$d/tty.log")"
(($(stat -c %s "$d/tty.log") < 2000)) || fail "undo wrote binary data to a terminal"
pass "undo: -o, existing OUT refused (exit 1), data and unstamped files, terminal refused (exit 2)"

# Rewritten by GNU strip: the .pbitmap section survives at another place.
strip -o "$d/rewritten" "$d/prog" || fail "GNU strip of a stamped file"
snapshot "$d/rewritten"
expect_status 1 "$PBITMAP" verify "$d/rewritten"
grep -qF "pbitmap: $d/rewritten: " "$ERR" || fail "verify of a rewritten file: no message naming it"
expect_status 1 "$PBITMAP" strip "$d/rewritten"
grep -q 'objcopy' "$ERR" || fail "strip of a rewritten file does not suggest objcopy: $(cat "$ERR")"
assert_unchanged "$d/rewritten" "pbitmap strip of a rewritten file"
# add cannot replace the record without removing it first, which it cannot
# do safely either: refused, untouched.
expect_status 1 "$PBITMAP" add "$d/rewritten"
grep -q 'objcopy' "$ERR" || fail "add of a rewritten file does not suggest objcopy: $(cat "$ERR")"
assert_unchanged "$d/rewritten" "pbitmap add of a rewritten file"
for verb in digest undo; do
	expect_status 1 "$PBITMAP" $verb "$d/rewritten"
	grep -qF "pbitmap: $d/rewritten: cannot reconstruct the original" "$ERR" ||
		fail "$verb of a rewritten file: $(cat "$ERR")"
	[[ -s $OUT ]] && fail "$verb of a rewritten file printed something on stdout"
done
objcopy --remove-section .pbitmap "$d/rewritten" "$d/clean" || fail "objcopy --remove-section"
readelf -S -W "$d/clean" >"$d/sections"
[[ -z $(grep pbitmap "$d/sections") ]] || fail "objcopy left a .pbitmap section"
cp "$d/clean" "$d/clean.orig"
expect_status 0 "$PBITMAP" add "$d/clean"
$ELFCHECK stamp "$d/clean.orig" "$d/clean" >/dev/null || fail "stamp after objcopy --remove-section"
expect_status 0 "$PBITMAP" strip "$d/clean"
assert_cmp "$d/clean" "$d/clean.orig"
pass "rewritten by GNU strip: verify, strip, add, digest, undo refuse it (1); objcopy --remove-section then add/strip round-trip"
