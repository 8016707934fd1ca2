#!/bin/bash
# t-data-xattr: records of non-ELF files, kept zstd-compressed in the
# user.pbitmap xattr, on ext4 (loop-mounted image) and tmpfs.
#
# Asserted, with the record decoded independently (tests/elfcheck.py dump:
# libzstd through ctypes, CRC-32 from zlib):
#   - add stores user.pbitmap, leaves content and mtime alone; show states the
#     granule size, show --json is valid JSON (an array, one object per file);
#   - a 1 GiB file (fallocate) and a 64 GiB sparse file get a coarser granule
#     (page_shift > 12), and even with random bits in every generation (the
#     worst case for compression) the xattr stays <= 3584 bytes, or <= the
#     --xattr-max given;
#   - set --ranges (START-END, START+LEN, K suffix), set --pages, --plane,
#     clear --pages, clear --all change exactly the expected granules;
#   - verify, strip (xattr gone, content and mtime unchanged);
#   - re-stamp with -g / --page-shift keeps the learned generations;
#   - merge ORs two stamped copies generation by generation, refuses a
#     different geometry; also for ELF copies;
#   - a damaged attribute that add cannot replace (an empty file) is left
#     byte for byte; add replaces it once it can;
#   - a filesystem without user xattrs (ramfs: this kernel has no vfat)
#     gives a clear error, exit 1, file unchanged.
# Why: data files (databases, fonts, caches) are stamped the same way as
# programs; the xattr size limit is what lets the kernel read it in one go.

source "$(dirname "$0")/../lib.sh"
need python3 mkfs.ext4 mount umount fallocate truncate getfattr setfattr gcc sha256sum
ELFCHECK="python3 $TOP/tests/elfcheck.py"
XMAX=3584

d=$(tmpdir)
mkdir "$d/ext4" "$d/tmpfs" "$d/ramfs"
truncate -s 3G "$d/ext4.img"
mkfs.ext4 -q -F "$d/ext4.img" || fail "mkfs.ext4"
mount -o loop "$d/ext4.img" "$d/ext4" || fail "cannot loop-mount ext4"
mount -t tmpfs -o size=64m pbtest "$d/tmpfs" || fail "cannot mount tmpfs"
mount -t ramfs pbtest "$d/ramfs" || fail "cannot mount ramfs"

# field FILE NAME: a value from the independently decoded record.
field() {
	local v
	v=$($ELFCHECK dump "$1" | sed -n "s/^$2=//p")
	[[ -n $v || $2 == age* ]] || fail "$1: no record field $2 (dump: $($ELFCHECK dump "$1" 2>&1 | head -3))"
	echo "$v"
}
expect_age() {
	local f=$1 age=$2 want=$3 got
	got=$(field "$f" "age$age")
	[[ $got == "$want" ]] || fail "$f: generation $age holds granules '$got', expected '$want' (after: $4)"
}
# granule_shown FILE: `show` (output in $OUT) states the granule size the
# record really has: as a number of bytes, or in KiB/MiB/GiB.
granule_shown() {
	local shift bytes human
	shift=$(field "$1" page_shift)
	bytes=$((1 << shift))
	if ((shift >= 30)); then human="$((bytes >> 30)) ?GiB"
	elif ((shift >= 20)); then human="$((bytes >> 20)) ?MiB"
	else human="$((bytes >> 10)) ?KiB"; fi
	grep -qE "(^|[^0-9])($bytes|$human)([^0-9]|$)" "$OUT" ||
		fail "$1: show does not state the granule ($bytes bytes): $(cat "$OUT")"
}
# content FILE: size, mtime and a hash of the bytes (for files too large to
# read in a test, like the 64 GiB one: of the first and last 4 MiB).
content() {
	local size
	size=$(stat -c %s "$1")
	stat -c '%s %.9Y' "$1"
	if ((size <= 64 << 20)); then
		sha256sum <"$1"
	else
		{ head -c 4M "$1"; tail -c 4M "$1"; } | sha256sum
	fi
}

# worst_case FILE: random granules in every generation, then check the size.
worst_case() {
	local f=$1 max=$2 npages g age list len
	npages=$(field "$f" nr_pages)
	g=$(field "$f" nr_planes)
	for ((age = 0; age < g; age++)); do
		list=$(python3 -c '
import random, sys
n = int(sys.argv[1]); r = random.Random(int(sys.argv[2]))
print(",".join(str(i) for i in sorted(r.sample(range(n), n // 2))))' "$npages" "$age")
		expect_status 0 "$PBITMAP" set --pages "$list" --plane "$age" "$f"
	done
	len=$(field "$f" xattr_len)
	((len <= max)) || fail "$f: xattr is $len bytes with random planes, limit $max"
	expect_status 0 "$PBITMAP" verify "$f"
	echo "$len"
}

small_tests() {
	local dir=$1 f=$1/small c
	head -c 1000000 /dev/urandom >"$f"
	touch -d '2001-01-01 00:00:00.5' "$f"
	c=$(content "$f")
	expect_status 0 "$PBITMAP" add "$f"
	getfattr --absolute-names -n user.pbitmap -e hex "$f" >/dev/null 2>&1 || fail "$f: no user.pbitmap after add"
	[[ $(content "$f") == "$c" ]] || fail "$f: content or mtime changed by add"
	[[ $(field "$f" flags) == 2 ]] || fail "$f: record flags should be PBITMAP_F_XATTR (2)"
	[[ $(field "$f" content_size) == 1000000 ]] || fail "$f: content_size"
	[[ $(field "$f" page_shift) == 12 ]] || fail "$f: a 1 MB file should get 4 KiB granules"
	expect_status 0 "$PBITMAP" show "$f"
	granule_shown "$f"
	expect_status 0 "$PBITMAP" show --json "$f"
	python3 -m json.tool "$OUT" >/dev/null || fail "show --json is not JSON: $(head -c 500 "$OUT")"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert isinstance(a, list) and len(a) == 1 and isinstance(a[0], dict)' "$OUT" ||
		fail "show --json: not an array of one object: $(head -c 500 "$OUT")"

	expect_status 0 "$PBITMAP" set --ranges 4K-12K,64K+8K "$f"
	for age in 0 1 2 3; do expect_age "$f" $age "1-2,16-17" "set --ranges 4K-12K,64K+8K"; done
	expect_status 0 "$PBITMAP" clear --pages 2,16-17 "$f"
	for age in 0 1 2 3; do expect_age "$f" $age "1" "clear --pages 2,16-17"; done
	expect_status 0 "$PBITMAP" set --pages 5 --plane 0 "$f"
	expect_age "$f" 0 "1,5" "set --pages 5 --plane 0"
	expect_age "$f" 1 "1" "set --pages 5 --plane 0"
	expect_status 0 "$PBITMAP" set --ranges 0-1,512K+4K --plane 2 "$f"
	expect_age "$f" 2 "0-1,128" "set --ranges 0-1,512K+4K --plane 2"
	expect_status 0 "$PBITMAP" verify "$f"
	expect_status 0 "$PBITMAP" clear --all "$f"
	for age in 0 1 2 3; do expect_age "$f" $age "" "clear --all"; done
	# Out-of-range granules are refused and change nothing.
	local x
	x=$(getfattr --absolute-names -n user.pbitmap -e hex "$f")
	"$PBITMAP" set --pages 999999 "$f" >/dev/null 2>&1
	rc=$?
	[[ $rc == 1 || $rc == 2 ]] || fail "set --pages beyond the file: exit $rc, expected 1 or 2"
	[[ $(getfattr --absolute-names -n user.pbitmap -e hex "$f") == "$x" ]] || fail "set --pages beyond the file changed the record"
	[[ $(content "$f") == "$c" ]] || fail "$f: content or mtime changed by set/clear"

	# merge: generation by generation OR of two copies; geometry must match.
	cp "$f" "$dir/copy"   # same size: same geometry; cp copies no xattr
	expect_status 0 "$PBITMAP" add "$dir/copy"
	expect_status 0 "$PBITMAP" set --pages 1 "$f"
	expect_status 0 "$PBITMAP" set --pages 7 "$dir/copy"
	expect_status 0 "$PBITMAP" set --pages 9 --plane 1 "$dir/copy"
	x=$(getfattr --absolute-names -n user.pbitmap -e hex "$dir/copy")
	expect_status 0 "$PBITMAP" merge "$f" "$dir/copy"
	expect_age "$f" 0 "1,7" "merge"
	expect_age "$f" 1 "1,7,9" "merge"
	expect_age "$f" 3 "1,7" "merge"
	[[ $(getfattr --absolute-names -n user.pbitmap -e hex "$dir/copy") == "$x" ]] || fail "merge changed its source"
	head -c 3000000 /dev/urandom >"$dir/other"
	expect_status 0 "$PBITMAP" add "$dir/other"
	x=$(getfattr --absolute-names -n user.pbitmap -e hex "$f")
	expect_status 1 "$PBITMAP" merge "$f" "$dir/other"
	grep -q "pbitmap: " "$ERR" || fail "merge of different geometry: no message"
	[[ $(getfattr --absolute-names -n user.pbitmap -e hex "$f") == "$x" ]] || fail "failed merge changed DEST"

	expect_status 0 "$PBITMAP" strip "$f"
	getfattr --absolute-names -n user.pbitmap "$f" >/dev/null 2>&1 && fail "$f: user.pbitmap left by strip"
	[[ $(content "$f") == "$c" ]] || fail "$f: content or mtime changed by strip"
	pass "$dir: small file: add, show, set/clear ranges and pages, merge, strip"
}

big_tests() {
	local dir=$1 how=$2 f=$1/big1g g len shift c
	if [[ $how == fallocate ]]; then
		fallocate -l 1G "$f" || fail "fallocate 1G on $dir"
	else
		truncate -s 1G "$f"
	fi
	for f in "$dir/big1g" "$dir/sparse64g"; do
		[[ -e $f ]] || truncate -s 64G "$f"
		c=$(content "$f")
		expect_status 0 "$PBITMAP" add "$f"
		shift=$(field "$f" page_shift)
		((shift > 12)) || fail "$f: page_shift $shift, expected a coarser granule"
		[[ $(field "$f" content_size) == $(stat -c %s "$f") ]] || fail "$f: content_size"
		expect_status 0 "$PBITMAP" show "$f"
		granule_shown "$f"
		len=$(worst_case "$f" "$XMAX") || exit 1
		note "$f: $(stat -c %s "$f") bytes: page_shift=$shift pages=$(field "$f" nr_pages), worst-case xattr $len bytes"
		# A tighter limit gives a coarser granule and is honoured too.
		expect_status 0 "$PBITMAP" strip "$f"
		expect_status 0 "$PBITMAP" add --xattr-max 1024 "$f"
		(($(field "$f" page_shift) > shift)) || fail "$f: --xattr-max 1024 did not coarsen the granule"
		len=$(worst_case "$f" 1024) || exit 1
		note "$f: --xattr-max 1024: page_shift=$(field "$f" page_shift), worst-case xattr $len bytes"
		expect_status 0 "$PBITMAP" strip "$f"
		getfattr --absolute-names -n user.pbitmap "$f" >/dev/null 2>&1 && fail "$f: user.pbitmap left by strip"
		[[ $(content "$f") == "$c" ]] || fail "$f: content or mtime changed"
		rm -f "$f"
	done
	pass "$dir: 1 GiB and 64 GiB files: coarser granule, xattr within limits"
}

small_tests "$d/ext4"
big_tests "$d/ext4" fallocate
small_tests "$d/tmpfs"
big_tests "$d/tmpfs" truncate

# show --json on two files: one array of two objects.
head -c 50000 /dev/urandom >"$d/tmpfs/a"
head -c 70000 /dev/urandom >"$d/tmpfs/b"
expect_status 0 "$PBITMAP" add "$d/tmpfs/a" "$d/tmpfs/b"
expect_status 0 "$PBITMAP" show --json "$d/tmpfs/a" "$d/tmpfs/b"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert isinstance(a, list) and len(a) == 2' "$OUT" ||
	fail "show --json of two files is not an array of two: $(head -c 500 "$OUT")"
pass "show --json on two files: one array of two objects"

# ELF merge: same program twice, different pages, merged, stripped.
echo 'int main(void){return 0;}' >"$d/p.c"
gcc -o "$d/e1" "$d/p.c" || fail gcc
cp "$d/e1" "$d/e2" && cp "$d/e1" "$d/e.orig"
expect_status 0 "$PBITMAP" add "$d/e1" "$d/e2"
expect_status 0 "$PBITMAP" set --pages 0 "$d/e1"
expect_status 0 "$PBITMAP" set --pages 2 --plane 1 "$d/e2"
expect_status 0 "$PBITMAP" merge "$d/e1" "$d/e2"
expect_age "$d/e1" 0 "0" "ELF merge"
expect_age "$d/e1" 1 "0,2" "ELF merge"
expect_status 0 "$PBITMAP" verify "$d/e1"
expect_status 0 "$PBITMAP" strip "$d/e1"
assert_cmp "$d/e1" "$d/e.orig"
pass "ELF: set, merge, verify, strip byte-identical"

# Re-stamp with another -g or --page-shift keeps the learned generations
# (pbitmap(1): mapped onto the new granule, newest first), ELF and data alike.
head -c 1000000 /dev/urandom >"$d/ext4/restamp"
cp /usr/bin/ls "$d/restamp-elf"	# 37 pages: room for page 9 at either granule
for f in "$d/ext4/restamp" "$d/restamp-elf"; do
	expect_status 0 "$PBITMAP" add "$f"
	expect_status 0 "$PBITMAP" set --pages 0-2 "$f"
	expect_status 0 "$PBITMAP" set --pages 9 --plane 1 "$f"
	expect_status 0 "$PBITMAP" add -g 6 "$f"
	[[ $(field "$f" nr_planes) == 6 ]] || fail "$f: add -g 6 did not give 6 generations"
	expect_age "$f" 0 "0-2" "re-stamp -g 6"
	expect_age "$f" 1 "0-2,9" "re-stamp -g 6"
	expect_age "$f" 3 "0-2" "re-stamp -g 6"
	expect_age "$f" 4 "" "re-stamp -g 6"
	expect_status 0 "$PBITMAP" add --page-shift 13 "$f"
	[[ $(field "$f" page_shift) == 13 ]] || fail "$f: --page-shift 13 not applied"
	expect_age "$f" 0 "0-1" "re-stamp --page-shift 13"
	expect_age "$f" 1 "0-1,4" "re-stamp --page-shift 13"
	# Back to 4 KiB: each 8 KiB granule covers two pages, both marked.
	expect_status 0 "$PBITMAP" add --page-shift 12 "$f"
	expect_age "$f" 0 "0-3" "re-stamp --page-shift 12 after 13"
	expect_age "$f" 1 "0-3,8-9" "re-stamp --page-shift 12 after 13"
	expect_status 0 "$PBITMAP" add -g 2 --page-shift 12 "$f"
	expect_age "$f" 0 "0-3" "re-stamp -g 2"
	expect_age "$f" 1 "0-3,8-9" "re-stamp -g 2"
	expect_status 0 "$PBITMAP" verify "$f"
	expect_status 0 "$PBITMAP" strip "$f"
done
assert_cmp "$d/restamp-elf" /usr/bin/ls
pass "re-stamp (-g 6, --page-shift 13, --page-shift 12, -g 2) keeps the learned generations, ELF and data"

# No user xattrs on this filesystem: a clear error, nothing changed.
head -c 100000 /dev/urandom >"$d/ramfs/data"
snapshot "$d/ramfs/data"
expect_status 1 "$PBITMAP" add "$d/ramfs/data"
grep -qF "pbitmap: $d/ramfs/data: " "$ERR" && grep -qiE "not supported|xattr|extended attribute" "$ERR" ||
	fail "no user xattrs: unclear message: $(cat "$ERR")"
assert_unchanged "$d/ramfs/data"
pass "ramfs (no user xattrs): exit 1: $(head -1 "$ERR")"

# A damaged attribute that add cannot replace (the file is empty: no pages
# to stamp) stays exactly as it was: an error leaves the file alone.  Once
# the file has content, add replaces it.
f=$d/tmpfs/damaged
: >"$f"
setfattr -n user.pbitmap -v 0x50425a58ffffffff0000 "$f" || fail "setfattr of a damaged record"
x=$(getfattr --absolute-names -n user.pbitmap -e hex "$f")
expect_status 1 "$PBITMAP" add "$f"
grep -qF "pbitmap: $f: empty file" "$ERR" || fail "damaged record of an empty file: unclear message: $(cat "$ERR")"
[[ $(getfattr --absolute-names -n user.pbitmap -e hex "$f" 2>/dev/null) == "$x" ]] ||
	fail "a failed add removed or changed the damaged attribute it could not replace"
head -c 100000 /dev/urandom >"$f"
expect_status 0 "$PBITMAP" add "$f"
grep -qF "pbitmap: $f: replacing a damaged bitmap" "$ERR" || fail "add does not say it replaces a damaged bitmap: $(cat "$ERR")"
expect_status 0 "$PBITMAP" verify "$f"
pass "a damaged attribute: a failed add leaves it as it was, add then replaces it"
