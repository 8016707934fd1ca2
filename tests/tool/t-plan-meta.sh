#!/bin/bash
# t-plan-meta: a start-up plan's metadata table (docs/FORMAT.md, "Start-up
# plan": flag 2, after the names at a multiple of 8 bytes, a 32-byte head
# and 16-byte ranges of device blocks), as the tool checks, shows and
# carries it.  Tables are written by kernel-patch/tests/craft-meta.py (the
# kernel's test cases); `pbitmap plan` writes none.
#
# Asserted, the plan also parsed independently (tests/elfcheck.py plan):
#   - a plan of lib.so and data given a table of 4 ranges: its files and
#     steps as before; verify passes (", a metadata table of 4 ranges");
#     show prints "metadata     dev MAJ:MIN, uuid U, 4 ranges, 112 KiB,
#     ages 0:1 1:2 3:1", with why a kernel would not read it when the
#     executable is not root's, is group- or world-writable or the table
#     names another device, and the ranges only with -v ("units 100-107,
#     age 0", "units 300, age 3"); show --json a "meta" object (dev, uuid,
#     ranges as [start, nr, age]), null without a table;
#   - a re-stamp (-g 2) and a larger area (--plan-size 32K) carry the table
#     byte for byte; a new `pbitmap plan` writes none;
#   - each of craft-meta.py's cases (--list): the malformed ones refused by
#     verify and show, exit 1, with the message naming the fault, a size
#     fault for those the kernel counts as reject_header and a "metadata
#     table:" one for its reject_meta; the valid ones at the bounds (512
#     ranges, 4096 units, the last unit, age 3, adjacent ranges) accepted.

source "$(dirname "$0")/../lib.sh"
need python3 cmp stat ldd
ELFCHECK="python3 $TOP/tests/elfcheck.py"
META="python3 $TOP/kernel-patch/tests/craft-meta.py"
UUID=0123456789abcdef0123456789abcdef

d=$(tmpdir)
cd "$d" || fail "cd $d"
lib=$(ldd /usr/bin/ls | awk '/libselinux/ { print $3 }')
[[ -f $lib ]] || fail "ls is not linked with libselinux here: $(ldd /usr/bin/ls)"
cp "$lib" lib.so && head -c 10000 /dev/urandom >data || fail "cp"
expect_status 0 "$PBITMAP" add lib.so
expect_status 0 "$PBITMAP" set --pages 0-3,9 lib.so
cp /usr/bin/ls base
# 16K: room for 513 ranges (nr-over-max)
expect_status 0 "$PBITMAP" add --plan-size 16K base
expect_status 0 "$PBITMAP" plan base lib.so data
expect_status 0 "$PBITMAP" show --json base
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))[0]["plan"]["meta"] is None' "$OUT" ||
	fail "show --json, no table: $(cat "$OUT")"
$ELFCHECK plan base >plain.txt || fail "elfcheck plan: $(cat plain.txt)"

# The device as a plan encodes it, and as show prints it.
st_dev=$(stat -c '%d' base)
major=$((st_dev >> 8 & 0xfff)) minor=$(((st_dev & 0xff) | (st_dev >> 12 & 0xfff00)))
dev=$(((major << 8) | (minor & 0xff) | ((minor & ~0xff) << 12)))
other=$(((major + 1) % 4096)):$minor

cp --preserve=xattr base prog
out=$($META prog --uuid $UUID --range 100:8 --range 200:3:1 --range 300:1:3 --range 1000:16:1) ||
	fail "craft-meta.py: $out"
[[ $out == "sound ok" ]] || fail "craft-meta.py printed '$out'"
$ELFCHECK plan prog >meta.txt || fail "elfcheck plan: $(cat meta.txt)"
grep -v '^meta\|^mrange' meta.txt | cmp -s - plain.txt || fail "the table moved the plan's files or steps: $(cat meta.txt)"
[[ $(grep '^meta\|^mrange' meta.txt | tr '\n' ';') == \
	"meta $dev $UUID;mrange 100 8 0;mrange 200 3 1;mrange 300 1 3;mrange 1000 16 1;" ]] ||
	fail "elfcheck plan: $(cat meta.txt)"
expect_status 0 "$PBITMAP" verify prog
grep -q 'a plan of 2 files, a metadata table of 4 ranges$' "$OUT" || fail "verify: $(cat "$OUT")"

# why_not: what show says after the table's line for prog as it is
why_not() {
	if [[ $(stat -c %u prog) != 0 ]]; then
		echo " (not read: the executable is not root's)"
	elif (($(stat -c '%#a' prog) & 022)); then
		echo " (not read: the executable is writable by group or others)"
	else
		echo "${1:-}"
	fi
}
line="  metadata     dev $major:$minor, uuid 01234567-89ab-cdef-0123-456789abcdef, 4 ranges, 112 KiB, ages 0:1 1:2 3:1"
expect_status 0 "$PBITMAP" show prog
grep -qxF "$line$(why_not)" "$OUT" || fail "show: want '$line$(why_not)': $(cat "$OUT")"
grep -q 'units' "$OUT" && fail "show without -v lists the ranges: $(cat "$OUT")"
expect_status 0 "$PBITMAP" show -v prog
grep -A4 -xF "$line$(why_not)" "$OUT" >ranges.txt || fail "show -v: $(cat "$OUT")"
cat >want.txt <<'EOF'
     0       32 KiB  units 100-107, age 0
     1       12 KiB  units 200-202, age 1
     2        4 KiB  units 300, age 3
     3       64 KiB  units 1000-1015, age 1
EOF
sed 1d ranges.txt | cmp -s - want.txt || fail "show -v, the ranges: $(cat ranges.txt)"
expect_status 0 "$PBITMAP" show --json prog
python3 - "$OUT" "$dev" <<'EOF' || fail "show --json: $(cat "$OUT")"
import json, sys
p = json.load(open(sys.argv[1]))[0]["plan"]
assert p["steps"] == [[0, 0, 4], [0, 9, 1], [1, 0, 3]], p["steps"]
assert p["order"] is None, p
m = p["meta"]
assert m == {"dev": int(sys.argv[2]), "uuid": "01234567-89ab-cdef-0123-456789abcdef",
             "ranges": [[100, 8, 0], [200, 3, 1], [300, 1, 3], [1000, 16, 1]]}, m
EOF
pass "a table of 4 ranges: the files and steps as before, verify passes, show a line (-v the ranges), --json a meta object"

if [[ $(id -u) == 0 ]]; then
	chmod 775 prog
	expect_status 0 "$PBITMAP" show prog
	grep -qxF "$line (not read: the executable is writable by group or others)" "$OUT" ||
		fail "show, mode 775: $(cat "$OUT")"
	chmod 755 prog && chown 65534 prog
	expect_status 0 "$PBITMAP" show prog
	grep -qxF "$line (not read: the executable is not root's)" "$OUT" || fail "show, nobody's: $(cat "$OUT")"
	chown 0 prog
fi
cp --preserve=xattr prog other
$META other --dev "$other" --uuid $UUID --range 100:8 --range 200:3:1 --range 300:1:3 \
	--range 1000:16:1 >/dev/null || fail "craft-meta.py --dev $other"
expect_status 0 "$PBITMAP" show other
grep -qxF "${line/dev $major:$minor/dev $other}$(why_not " (not read: another filesystem's device)")" "$OUT" ||
	fail "show, another device: $(cat "$OUT")"
pass "show says why a kernel would not read a table: not root's, writable by others, another device"

$ELFCHECK plan prog >before.txt || fail "elfcheck plan"
expect_status 0 "$PBITMAP" add -g 2 prog
$ELFCHECK plan prog >after.txt || fail "elfcheck plan after re-stamp"
cmp -s before.txt after.txt || fail "re-stamp lost the table: $(diff before.txt after.txt)"
expect_status 0 "$PBITMAP" add --plan-size 32K prog
$ELFCHECK plan prog >after.txt || fail "elfcheck plan after --plan-size 32K"
cmp -s before.txt after.txt || fail "a larger area lost the table: $(diff before.txt after.txt)"
expect_status 0 "$PBITMAP" verify prog
grep -q 'a metadata table of 4 ranges$' "$OUT" || fail "verify after the re-stamps: $(cat "$OUT")"
expect_status 0 "$PBITMAP" plan prog lib.so data
$ELFCHECK plan prog >after.txt || fail "elfcheck plan after plan"
cmp -s plain.txt after.txt || fail "pbitmap plan kept a table: $(cat after.txt)"
pass "a re-stamp and a larger area carry the table; pbitmap plan writes none"

# Each case: the message of the check that fails (craft-meta.py's ranges
# below: 100:8 and 200:3:1), or for a valid table its number of ranges.
declare -A want=(
	[sound]="ok 2"
	[used-plus-8]="size does not match its tables (a metadata table of 2 ranges)"
	[used-minus-16]="size does not match its tables (a metadata table of 2 ranges)"
	[used-no-table]="size does not match its tables"
	[nr-plus-1]="size does not match its tables (a metadata table of 3 ranges)"
	[nr-wraps]="size does not match its tables (a metadata table of 268435458 ranges)"
	[pad-nonzero]="metadata table: the padding before it is not zero"
	[meta-reserved]="metadata table: reserved fields not zero"
	[nr-zero]="metadata table: 0 ranges (1 to 512)"
	[nr-over-max]="metadata table: 513 ranges (1 to 512)"
	[uuid-zero]="metadata table: the filesystem UUID is all zero"
	[range-empty]="metadata table: range 0 is empty"
	[range-reserved]="metadata table: range 0: reserved bytes not zero"
	[age-over-keep]="metadata table: range 0: age 4 (at most 3)"
	[age-max]="metadata table: range 0: age 255 (at most 3)"
	[ranges-overlap]="metadata table: range 1 starts before range 0 ends (not ascending and disjoint)"
	[ranges-repeated]="metadata table: range 1 starts before range 0 ends (not ascending and disjoint)"
	[ranges-descending]="metadata table: range 1 starts before range 0 ends (not ascending and disjoint)"
	[end-past]="metadata table: range 0 ends past unit 2^40"
	[end-wraps]="metadata table: range 0 ends past unit 2^40"
	[units-over]="metadata table: 4097 units (at most 4096)"
	[adjacent]="ok 2"
	[age-keep]="ok 2"
	[end-exact]="ok 1"
	[max-ranges]="ok 512"
	[max-units]="ok 2"
)
$META --list >cases.txt || fail "craft-meta.py --list"
$META --list-bad >bad.txt || fail "craft-meta.py --list-bad"
grep -v ' ok$' cases.txt | cmp -s - bad.txt || fail "craft-meta.py --list-bad: $(cat bad.txt)"
n=0
while read -r name expect; do
	[[ -n ${want[$name]:-} ]] || fail "craft-meta.py has a case this test does not know: $name $expect"
	w=${want[$name]}
	case $expect in
	ok) [[ $w == ok* ]] ;;
	reject_header) [[ $w == size* ]] ;;
	reject_meta) [[ $w == "metadata table:"* ]] ;;
	*) false ;;
	esac || fail "$name: the kernel counts $expect, the tool says '$w'"
	cp --preserve=xattr base x
	out=$($META x --uuid $UUID --range 100:8 --range 200:3:1 --case "$name") || fail "craft-meta.py $name: $out"
	[[ $out == "$name $expect" ]] || fail "craft-meta.py --case $name printed '$out'"
	if [[ $w == ok* ]]; then
		expect_status 0 "$PBITMAP" verify x
		grep -q "a metadata table of ${w#ok } ranges\$" "$OUT" || fail "$name: verify: $(cat "$OUT")"
	else
		for verb in verify show; do
			expect_status 1 "$PBITMAP" $verb x
			grep -qxF "pbitmap: x: invalid bitmap: plan: $w" "$ERR" ||
				fail "$name: $verb: want 'plan: $w': $(cat "$ERR")"
		done
	fi
	n=$((n + 1))
done <cases.txt
((n == ${#want[@]})) || fail "craft-meta.py --list has $n cases, this test knows ${#want[@]}"
pass "craft-meta.py's $n cases: each malformed table refused by verify and show naming its fault (a size fault where the kernel counts reject_header), each valid one accepted"
