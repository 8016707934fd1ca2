#!/bin/bash
# t-marker: every stamped ELF file carries the user.pbitmap marker (struct
# pbitmap_marker: where its record is), which is how the kernel finds a
# stamped library with one attribute lookup instead of reading the section
# header table of every library it maps (docs/FORMAT.md, "The marker").
#
# Asserted, with the marker decoded independently (tests/elfcheck.py marker:
# Python struct and zlib.crc32, against the section header table and the
# file size):
#   - add, a re-stamp (add -g 6), set, merge and record's write-back (the
#     program by a renamed copy, the library in place) leave a marker that
#     describes the new layout; strip leaves no attribute;
#   - a copy made without attributes (cp): verify exits 1 saying the marker
#     is missing, the kernel will not prefetch it and `pbitmap add FILE`
#     restores it; show says "marker missing" (text and --json); add
#     restores it in place (same inode, same bytes) and counts the file as
#     stamped in --summary; add again: already stamped;
#   - stale markers (another offset, record size or file size with a valid
#     CRC, a bad CRC, a reserved field set, a wrong length, a data record on
#     an ELF file): verify exits 1 naming it stale, show says stale, add
#     replaces it in place;
#   - a marker on a non-ELF file: verify exits 1 (kernel will not prefetch,
#     `pbitmap add` gives it its own bitmap), add does, strip removes it; a
#     marker on an unstamped ELF file: strip removes it;
#   - a filesystem without user attributes (ramfs): add stamps (exit 0), with
#     exactly one warning "cannot set the user.pbitmap marker (...): the
#     kernel will not prefetch it"; verify exits 1 saying why; strip gives
#     the original.
# Why: a stamped file without its marker, or with a stale one, is silently
# not prefetched by the kernel (or, stale, points it at the wrong bytes).

source "$(dirname "$0")/../lib.sh"
need gcc python3 getfattr setfattr mount umount cmp stat
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
cat >"$d/lib.c" <<'EOF'
int lib_value(int x) { return x * 3 + 1; }
EOF
cat >"$d/p.c" <<'EOF'
int lib_value(int x);
int main(int argc, char **argv) { (void)argv; return lib_value(argc) == 4 ? 0 : 1; }
EOF
gcc -O1 -shared -fPIC -o "$d/libm1.so" "$d/lib.c" || fail "gcc -shared"
gcc -O1 -o "$d/prog" "$d/p.c" -L"$d" -lm1 -Wl,-rpath,"$d" || fail gcc
cp "$d/prog" "$d/prog.orig"
cp "$d/libm1.so" "$d/lib.orig"
"$d/prog" || fail "the test program does not run"

marker_ok() { $ELFCHECK marker "$1" >/dev/null 2>"$d/mk.err" || fail "$2: $(cat "$d/mk.err")"; }
no_marker() { $ELFCHECK no-marker "$1" >/dev/null 2>"$d/mk.err" || fail "$2: $(cat "$d/mk.err")"; }
inode() { stat -c %i "$1"; }
# copy_marker FROM TO: TO gets FROM's user.pbitmap value.
copy_marker() {
	python3 -c 'import os, sys; os.setxattr(sys.argv[2], "user.pbitmap", os.getxattr(sys.argv[1], "user.pbitmap"))' "$1" "$2" ||
		fail "cannot copy the marker of $1 onto $2"
}

# ---- written by every change of a stamped ELF file ----------------------------

for f in "$d/prog" "$d/libm1.so"; do
	expect_status 0 "$PBITMAP" add "$f"
	marker_ok "$f" "add $(basename "$f")"
done
"$d/prog" || fail "the stamped program does not run"
expect_status 0 "$PBITMAP" add -g 6 "$d/prog"
[[ $($ELFCHECK header "$d/prog" | sed -n 's/^nr_planes=//p') == 6 ]] || fail "add -g 6 did not re-stamp"
marker_ok "$d/prog" "re-stamp (add -g 6)"
ino=$(inode "$d/prog")
expect_status 0 "$PBITMAP" set --pages 0-1 "$d/prog"
[[ $(inode "$d/prog") != "$ino" ]] || fail "set did not replace the file (the test relies on a new copy)"
marker_ok "$d/prog" "set"
cp -p --preserve=xattr "$d/prog" "$d/prog.copy"
expect_status 0 "$PBITMAP" merge "$d/prog" "$d/prog.copy"
marker_ok "$d/prog" "merge"
expect_status 0 "$PBITMAP" record -q -- "$d/prog"
# The current slot's runs: a learned generation goes into the library's
# slot 1, in place (slot 0, which elfcheck's header reads, stays as it was).
runs=$("$PBITMAP" show --json "$d/libm1.so" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["runs"])')
[[ $runs == 1 ]] || fail "record did not learn into the library (runs=$runs)"
marker_ok "$d/prog" "record (program)"
marker_ok "$d/libm1.so" "record (library)"
expect_status 0 "$PBITMAP" verify "$d/prog" "$d/libm1.so"
pass "add, re-stamp, set, merge and record leave a marker describing the new layout"

expect_status 0 "$PBITMAP" strip "$d/prog" "$d/libm1.so"
assert_cmp "$d/prog" "$d/prog.orig"
assert_cmp "$d/libm1.so" "$d/lib.orig"
no_marker "$d/prog" "strip (program)"
no_marker "$d/libm1.so" "strip (library)"
pass "strip leaves the original bytes and no user.pbitmap attribute"

# ---- lost by a copy without attributes: verify, show, add restores it -----------

expect_status 0 "$PBITMAP" add "$d/prog"
cp "$d/prog" "$d/cp"
no_marker "$d/cp" "cp without --preserve=xattr (test set-up)"
expect_status 1 "$PBITMAP" verify "$d/cp"
grep -qx "pbitmap: $d/cp: .*marker is missing.*the kernel will not prefetch it.*'pbitmap add $d/cp' restores it" "$ERR" ||
	fail "verify of a copy without marker: $(cat "$ERR")"
expect_status 0 "$PBITMAP" show "$d/cp"
grep -q '^  marker       missing' "$OUT" || fail "show does not say the marker is missing: $(cat "$OUT")"
expect_status 0 "$PBITMAP" show --json "$d/cp"
[[ $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["marker"])' "$OUT") == missing ]] ||
	fail "show --json: marker is not \"missing\": $(cat "$OUT")"
ino=$(inode "$d/cp")
sum=$(sha256sum <"$d/cp")
expect_status 0 "$PBITMAP" add --summary "$d/cp"
grep -q "^pbitmap: 1 files stamped, 0 already stamped, 0 skipped, 0 errors" "$ERR" ||
	fail "add of a file without marker is not counted as stamped: $(cat "$ERR")"
marker_ok "$d/cp" "add after cp"
[[ $(inode "$d/cp") == "$ino" && $(sha256sum <"$d/cp") == "$sum" ]] ||
	fail "restoring the marker rewrote the file (inode or bytes changed)"
expect_status 0 "$PBITMAP" verify "$d/cp"
expect_status 0 "$PBITMAP" show "$d/cp"
grep -q '^  marker       ok' "$OUT" || fail "show after add does not say ok: $(cat "$OUT")"
expect_status 0 "$PBITMAP" add --summary "$d/cp"
grep -q "^pbitmap: 0 files stamped, 1 already stamped" "$ERR" || fail "second add: $(cat "$ERR")"
pass "a copy without the marker: verify fails, show says missing, add restores it in place"

# ---- stale or corrupt markers ------------------------------------------------------

# put_marker FILE HOW: write a marker onto FILE, right but for HOW.
put_marker() {
	python3 - "$1" "$2" <<'PY' || fail "cannot write a marker on $1"
import os, struct, sys, zlib
path, how = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
shoff, = struct.unpack_from("<Q", data, 40)
shnum, = struct.unpack_from("<H", data, 60)
off, size = struct.unpack_from("<QQ", data, shoff + (shnum - 1) * 64 + 24)  # .pbitmap is last
fsize, reserved = len(data), 0
if how == "offset": off += 4096
if how == "size": size += 8
if how == "file-size": fsize += 1
if how == "reserved": reserved = 1
def pack(crc): return struct.pack("<IIQQII", 0x4D454250, size, off, fsize, crc, reserved)
val = pack(0)
val = pack(zlib.crc32(val))
if how == "crc": val = val[:24] + struct.pack("<I", zlib.crc32(val) ^ 1) + val[28:]
if how == "short": val = val[:31]
if how == "data-record": val = struct.pack("<II", 0x5A584250, 160) + bytes(24)
os.setxattr(path, "user.pbitmap", val)
PY
}

for how in offset size file-size crc reserved short data-record; do
	f=$d/stale-$how
	cp -p --preserve=xattr "$d/prog" "$f"
	marker_ok "$f" "set-up of $how"
	put_marker "$f" "$how"
	$ELFCHECK marker "$f" >/dev/null 2>&1 && fail "$how: the crafted marker passes elfcheck (test set-up)"
	expect_status 1 "$PBITMAP" verify "$f"
	grep -qx "pbitmap: $f: .*marker is stale (.*): the kernel will not prefetch it; 'pbitmap add $f' restores it" "$ERR" ||
		fail "verify with a marker wrong in its $how: $(cat "$ERR")"
	expect_status 0 "$PBITMAP" show "$f"
	grep -q '^  marker       stale' "$OUT" || fail "show with a marker wrong in its $how: $(cat "$OUT")"
	ino=$(inode "$f")
	expect_status 0 "$PBITMAP" add "$f"
	marker_ok "$f" "add after a marker wrong in its $how"
	[[ $(inode "$f") == "$ino" ]] || fail "$how: add rewrote the file to fix its marker"
	expect_status 0 "$PBITMAP" verify "$f"
done
pass "stale markers (offset, size, file size, CRC, reserved, length, a data record) fail verify; add replaces them"

# ---- markers where none belongs ------------------------------------------------------

head -c 100000 /dev/urandom >"$d/data"
cp "$d/data" "$d/data.orig"
copy_marker "$d/prog" "$d/data"
expect_status 1 "$PBITMAP" verify "$d/data"
grep -q "^pbitmap: $d/data: .*marker of a stamped ELF file.*not an ELF file.*kernel will not prefetch it.*pbitmap add" "$ERR" ||
	fail "verify of a data file carrying an ELF marker: $(cat "$ERR")"
expect_status 0 "$PBITMAP" add "$d/data"
[[ $($ELFCHECK dump "$d/data" | sed -n 's/^xattr_len=//p') -gt 32 ]] || fail "add did not give the data file a record of its own"
expect_status 0 "$PBITMAP" verify "$d/data"
copy_marker "$d/prog" "$d/data"
expect_status 0 "$PBITMAP" strip "$d/data"
no_marker "$d/data" "strip of a data file carrying an ELF marker"
assert_cmp "$d/data" "$d/data.orig"

cp "$d/prog.orig" "$d/unstamped"
copy_marker "$d/prog" "$d/unstamped"
expect_status 0 "$PBITMAP" strip "$d/unstamped"
no_marker "$d/unstamped" "strip of an unstamped ELF file carrying a marker"
assert_cmp "$d/unstamped" "$d/prog.orig"
pass "a marker on a data file fails verify, add and strip replace it; strip drops one from an unstamped ELF file"

# ---- a filesystem without user extended attributes ------------------------------------

mkdir "$d/ramfs"
mount -t ramfs pbtest "$d/ramfs" || fail "cannot mount ramfs"
r=$d/ramfs/prog
cp "$d/prog.orig" "$r"
setfattr -n user.x -v 1 "$r" 2>/dev/null && fail "ramfs takes user attributes here: the test needs a filesystem without them"
expect_status 0 "$PBITMAP" add "$r"
[[ $(wc -l <"$ERR") == 1 ]] && grep -qx "pbitmap: $r: cannot set the user.pbitmap marker (.*): the kernel will not prefetch it" "$ERR" ||
	fail "add on a filesystem without user attributes: expected one warning, got: $(cat "$ERR")"
$ELFCHECK stamp "$d/prog.orig" "$r" >/dev/null || fail "the stamp on ramfs is not complete"
expect_status 1 "$PBITMAP" verify "$r"
grep -qx "pbitmap: $r: .*does not support user extended attributes.*the kernel will not prefetch it" "$ERR" ||
	fail "verify on a filesystem without user attributes: $(cat "$ERR")"
expect_status 0 "$PBITMAP" show --json "$r"
grep -q '"marker":"unsupported"' "$OUT" || fail "show --json on ramfs: $(cat "$OUT")"
expect_status 0 "$PBITMAP" strip "$r"
assert_cmp "$r" "$d/prog.orig"
pass "no user attributes: the stamp is written with one warning (exit 0), verify fails, strip restores"
