#!/bin/bash
# t-plan: an executable's start-up plan (docs/FORMAT.md, "Start-up plan"):
# the files its start-up maps, each with its identity and ranges, in the
# order they are read, kept in a plan area at the end of its record.
#
# Asserted, with the plan parsed independently (tests/elfcheck.py plan):
#   - add --plan-size 16K makes a version 3 record with a 16384-byte empty
#     plan area (the stamp checked byte by byte); --plan-size 0, version 2;
#   - the default (pbitmap.1, add): an executable, ET_EXEC or a PIE (ET_DYN
#     with PT_INTERP and DF_1_PIE), gets a 32768-byte plan area: a copy of
#     /usr/bin/true, gcc -pie, gcc -no-pie, gcc -static; libc.so.6 (ET_DYN
#     with PT_INTERP but no DF_1_PIE), gcc -shared, ld.so, a static PIE (no
#     PT_INTERP) and a data file get none, and --plan-size 0 none;
#   - an executable stamped without an area (--plan-size 0) gets the
#     default one from a plain add FILE or add --stdin, its learned bits,
#     generations and learning setting kept; an area it has (8K) is never
#     shrunk or removed by a plain add or a re-stamp; a stamped library is
#     left alone;
#   - plan PROGRAM LIB DATA: the files in the order given, LIB with the
#     ranges its bitmap marks, DATA (no bitmap) whole; dev, inode and size
#     as stat says; show and verify list them;
#   - a file replaced since (a new inode at its path): verify says so and
#     still exits 0 (the kernel skips it, the plan is not wrong);
#   - a plan too large for the area, a program without a plan area, a data
#     file given --plan-size: exit 1, a message that says what to do, the
#     program unchanged;
#   - a re-stamp (-g 2) carries the plan; --clear empties it; strip gives
#     the original bytes;
#   - a plan whose step names a file past the table, sealed with a right
#     checksum: verify exits 1 naming it; so do an unterminated name, a
#     file's ranges repeated or out of order and two entries for one inode
#     (the canonical form the kernel enforces);
#   - plan refuses a file named twice, also through a hard link;
#   - an order table (flag 1, tests/lib/plan_order.py): a permutation of the
#     steps passes verify, show prints the read order ("steps 2,0-1"; with
#     no table "the steps' own"), show --json an "order" array (null with
#     none), a re-stamp carries it; a repeated index, an index past the
#     last step and an unknown flag bit (with or without the table) are
#     each refused by verify, exit 1, naming the entry or the bits; so is
#     the metadata table's flag (2) without a table, as a size fault (the
#     table itself: t-plan-meta);
#   - usage errors exit 2.

source "$(dirname "$0")/../lib.sh"
need python3 cmp stat
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
cp /usr/bin/ls "$d/prog"
cp /usr/bin/ls "$d/orig"
lib=$(ldd /usr/bin/ls | awk '/libselinux/ { print $3 }')
[[ -f $lib ]] || fail "ls is not linked with libselinux here: $(ldd /usr/bin/ls)"
cp "$lib" "$d/lib.so"
head -c 10000 /dev/urandom >"$d/data"

expect_status 0 "$PBITMAP" add "$d/lib.so"
expect_status 0 "$PBITMAP" set --pages 0-3,9 "$d/lib.so"
cp /usr/bin/ls "$d/plain"
expect_status 0 "$PBITMAP" add --plan-size 0 "$d/plain"
hdr=$($ELFCHECK header "$d/plain") || fail "elfcheck header"
grep -qx 'version=2' <<<"$hdr" || fail "a record without a plan area is not version 2"

expect_status 0 "$PBITMAP" add --plan-size 16K "$d/prog"
$ELFCHECK stamp "$d/orig" "$d/prog" >/dev/null || fail "add --plan-size: $($ELFCHECK stamp "$d/orig" "$d/prog" 2>&1)"
hdr=$($ELFCHECK header "$d/prog") || fail "elfcheck header"
grep -qx 'version=3' <<<"$hdr" || fail "a record with a plan area is not version 3"
grep -qx 'plan_size=16384' <<<"$hdr" || fail "plan_size is not 16384"
expect_status 0 "$PBITMAP" show "$d/prog"
grep -q 'plan *empty (16384 bytes of room)' "$OUT" || fail "show does not say the plan is empty: $(cat "$OUT")"
expect_status 0 "$PBITMAP" verify "$d/prog"
grep -q 'an empty plan' "$OUT" || fail "verify: $(cat "$OUT")"
pass "add --plan-size: a version 3 record with an empty 16384-byte plan area"

# plan_size FILE: what show --json says.
plan_size() {
	"$PBITMAP" show --json "$1" >"$d/show.json" || fail "show --json $1"
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["plan_size"])' "$d/show.json"
}
need gcc readelf ldd
mkdir "$d/def"
printf 'int main(void) { return 0; }\n' >"$d/def/main.c"
printf 'int f(void) { return 1; }\n' >"$d/def/lib.c"
gcc -o "$d/def/pie" -fPIE -pie "$d/def/main.c" || fail "gcc -pie"
gcc -o "$d/def/nopie" -fno-PIE -no-pie "$d/def/main.c" || fail "gcc -no-pie"
gcc -o "$d/def/static" -static "$d/def/main.c" || fail "gcc -static"
gcc -o "$d/def/spie" -static-pie "$d/def/main.c" || fail "gcc -static-pie"
gcc -o "$d/def/lib.so" -shared -fPIC "$d/def/lib.c" || fail "gcc -shared"
cp /usr/bin/true "$d/def/true"
libc=$(ldd /usr/bin/true | awk '/libc\.so\.6/ { print $3 }')
ldso=$(readelf -lW /usr/bin/true | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[[ -f $libc && -f $ldso ]] || fail "no libc.so.6 or ld.so: $(ldd /usr/bin/true)"
cp "$libc" "$d/def/libc.so.6"
cp "$ldso" "$d/def/ld.so"
head -c 10000 /dev/urandom >"$d/def/data"
# What the checks rely on: libc.so.6 is ET_DYN with a PT_INTERP, not a PIE.
readelf -lW "$d/def/libc.so.6" >"$d/readelf.txt" || fail "readelf -l libc.so.6"
grep -q 'INTERP' "$d/readelf.txt" || fail "libc.so.6 has no PT_INTERP here"
readelf -dW "$d/def/libc.so.6" >"$d/readelf.txt" || fail "readelf -d libc.so.6"
grep -q 'FLAGS_1.*PIE' "$d/readelf.txt" && fail "libc.so.6 is flagged PIE here"
readelf -dW "$d/def/pie" >"$d/readelf.txt" || fail "readelf -d pie"
grep -q 'FLAGS_1.*PIE' "$d/readelf.txt" || fail "gcc -pie made no DF_1_PIE"
readelf -hW "$d/def/nopie" >"$d/readelf.txt" || fail "readelf -h nopie"
grep -q 'Type: *EXEC' "$d/readelf.txt" || fail "gcc -no-pie made no ET_EXEC"
for f in pie nopie static true; do
	expect_status 0 "$PBITMAP" add "$d/def/$f"
	[[ $(plan_size "$d/def/$f") == 32768 ]] || fail "$f: no default plan area: $(cat "$d/show.json")"
done
hdr=$($ELFCHECK header "$d/def/pie") || fail "elfcheck header"
grep -qx 'version=3' <<<"$hdr" || fail "a default plan area is not a version 3 record"
grep -qx 'plan_size=32768' <<<"$hdr" || fail "elfcheck: the default plan_size is not 32768"
for f in libc.so.6 lib.so ld.so spie data; do
	expect_status 0 "$PBITMAP" add "$d/def/$f"
	[[ $(plan_size "$d/def/$f") == 0 ]] || fail "$f: a plan area: $(cat "$d/show.json")"
done
cp /usr/bin/true "$d/def/true-none"
expect_status 0 "$PBITMAP" add --plan-size 0 "$d/def/true-none"
[[ $(plan_size "$d/def/true-none") == 0 ]] || fail "--plan-size 0: $(cat "$d/show.json")"
pass "by default an executable (PIE, ET_EXEC, static) gets a 32768-byte plan area; libc.so.6, a library, ld.so, a static PIE, a data file and --plan-size 0 none"

# An executable stamped without an area, with learned bits: a plain add
# (FILE, or --stdin as the dpkg and rpm triggers run it, the path walk
# stamp --rpm uses too) gives it the default area and keeps the bits.
for how in file stdin; do
	cp "$d/def/nopie" "$d/def/old-$how"
	expect_status 0 "$PBITMAP" strip "$d/def/old-$how"
	expect_status 0 "$PBITMAP" add --plan-size 0 --learn=every -g 3 "$d/def/old-$how"
	expect_status 0 "$PBITMAP" set --pages 0,2 --plane 0 "$d/def/old-$how"
	expect_status 0 "$PBITMAP" set --pages 1 --plane 2 "$d/def/old-$how"
	"$PBITMAP" show --json "$d/def/old-$how" >"$d/before.json" || fail "show --json"
	if [[ $how == file ]]; then
		expect_status 0 "$PBITMAP" add --summary "$d/def/old-$how"
	else
		printf '%s\n' "$d/def/old-$how" >"$d/list"
		expect_status 0 "$PBITMAP" add --stdin --summary <"$d/list"
	fi
	grep -q '^pbitmap: 0 files stamped, 1 already stamped, 0 skipped, 0 errors' "$ERR" ||
		fail "$how: summary: $(cat "$ERR")"
	"$PBITMAP" show --json "$d/def/old-$how" >"$d/after.json" || fail "show --json"
	python3 - "$d/before.json" "$d/after.json" <<'EOF' || fail "$how: the re-stamp for the plan area"
import json, sys
b, a = (json.load(open(p))[0] for p in sys.argv[1:])
assert b["plan_size"] == 0 and a["plan_size"] == 32768, (b["plan_size"], a["plan_size"])
assert b["planes"][0]["ranges"] == [[0, 0], [2, 2]], b["planes"]
assert b["planes"][2]["ranges"] == [[1, 1]], b["planes"]
for k in ("planes", "prefetch", "generations", "threshold", "newest_plane", "runs",
          "last_update", "learn_policy", "pages", "content_size"):
    assert a[k] == b[k], (k, b[k], a[k])
EOF
	expect_status 0 "$PBITMAP" verify "$d/def/old-$how"
done
pass "add FILE, add --stdin: an executable stamped without a plan area gets the default one, its learned bits, generations and policy kept"

cp /usr/bin/true "$d/def/small"
expect_status 0 "$PBITMAP" add --plan-size 8K "$d/def/small"
snapshot "$d/def/small"
expect_status 0 "$PBITMAP" add -v "$d/def/small"
grep -q 'already stamped' "$ERR" || fail "an 8K area, add -v: $(cat "$ERR")"
assert_unchanged "$d/def/small" "a plain add of an executable with an 8K plan area"
expect_status 0 "$PBITMAP" add -g 2 "$d/def/small"
[[ $(plan_size "$d/def/small") == 8192 ]] || fail "a re-stamp (-g 2) changed the 8K area: $(cat "$d/show.json")"
expect_status 0 "$PBITMAP" add --plan-size 0 "$d/def/small"
[[ $(plan_size "$d/def/small") == 0 ]] || fail "--plan-size 0 kept the area: $(cat "$d/show.json")"
snapshot "$d/def/lib.so"
expect_status 0 "$PBITMAP" add -v "$d/def/lib.so"
grep -q 'already stamped' "$ERR" || fail "a library, add -v: $(cat "$ERR")"
assert_unchanged "$d/def/lib.so" "a plain add of a stamped library"
pass "a plain add keeps an 8K plan area, so does a re-stamp; --plan-size 0 removes it; a stamped library is left alone"

expect_status 0 "$PBITMAP" plan "$d/prog" "$d/lib.so" "$d/data"
$ELFCHECK plan "$d/prog" >"$d/plan.txt" || fail "elfcheck plan: $(cat "$d/plan.txt")"
lib_real=$(realpath "$d/lib.so") data_real=$(realpath "$d/data")
want="file 0 $lib_real $(stat -c '%i %s' "$lib_real") $(stat -c '%d' "$lib_real") "
[[ $(sed -n 1p "$d/plan.txt") == "$want"* ]] || fail "file 0: $(sed -n 1p "$d/plan.txt"), want $want..."
want="file 1 $data_real $(stat -c '%i %s %d' "$data_real") 0"
# Generation: what FS_IOC_GETVERSION says (lsattr -v), 0 where there is none.
gen=$(lsattr -v "$data_real" 2>/dev/null | awk '{ print $1 }')
[[ -n $gen ]] && want="file 1 $data_real $(stat -c '%i %s %d' "$data_real") $gen"
[[ $(sed -n 2p "$d/plan.txt") == "$want" ]] || fail "file 1: $(sed -n 2p "$d/plan.txt"), want $want"
steps=$(grep '^step' "$d/plan.txt" | tr '\n' ';')
[[ $steps == "step $lib_real 0 4;step $lib_real 9 1;step $data_real 0 3;" ]] ||
	fail "steps: $steps"
expect_status 0 "$PBITMAP" show "$d/prog"
grep -q 'plan *2 files, 3 ranges, 32 KiB' "$OUT" || fail "show: $(cat "$OUT")"
grep -q "read order *the steps' own (no order table)$" "$OUT" || fail "show, no order table: $(cat "$OUT")"
grep -q "20 KiB  $lib_real\$" "$OUT" || fail "show does not list the library: $(cat "$OUT")"
expect_status 0 "$PBITMAP" verify "$d/prog"
grep -q 'a plan of 2 files$' "$OUT" || fail "verify: $(cat "$OUT")"
expect_status 0 "$PBITMAP" show --json "$d/prog"
python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))[0]["plan"]
assert [f["state"] for f in p["files"]] == ["current", "current"], p
assert p["steps"] == [[0, 0, 4], [0, 9, 1], [1, 0, 3]], p["steps"]
assert p["order"] is None, p
' "$OUT" || fail "show --json: $(cat "$OUT")"
pass "plan: the files in order, marked ranges and a whole unstamped file, identities as stat says"

cp "$d/data" "$d/data.new" && mv "$d/data.new" "$d/data"
expect_status 0 "$PBITMAP" verify "$d/prog"
grep -q 'a plan of 2 files (1 replaced since: the kernel skips them)' "$OUT" || fail "verify: $(cat "$OUT")"
expect_status 0 "$PBITMAP" show "$d/prog"
grep -q "$data_real (replaced)" "$OUT" || fail "show: $(cat "$OUT")"
pass "a file replaced since the plan: verify and show say so, exit 0"

# 300 distinct small files (a plan names each file once): about 22 KiB of
# entries, ranges and names.
big=()
mkdir "$d/many"
for i in $(seq 1 300); do
	printf 'x' >"$d/many/file-$i"
	big+=("$d/many/file-$i")
done
snapshot "$d/prog"
expect_status 1 "$PBITMAP" plan "$d/prog" "${big[@]}"
grep -q 'the plan takes [0-9]* bytes, its area has 16384: stamp it again with a larger --plan-size' "$ERR" ||
	fail "a plan too large: $(cat "$ERR")"
assert_unchanged "$d/prog" "plan too large"
snapshot "$d/plain"
expect_status 1 "$PBITMAP" plan "$d/plain" "$d/lib.so"
grep -q "no room for a plan: stamp it with 'pbitmap add --plan-size SIZE" "$ERR" || fail "no plan area: $(cat "$ERR")"
assert_unchanged "$d/plain" "no plan area"
snapshot "$d/data"
expect_status 1 "$PBITMAP" add --plan-size 4K "$d/data"
grep -q 'only an executable carries a start-up plan' "$ERR" || fail "data file: $(cat "$ERR")"
assert_unchanged "$d/data" "data file with --plan-size"
pass "too large, no plan area, a data file: exit 1, what to do, nothing changed"

ln "$d/lib.so" "$d/lib-link.so"
snapshot "$d/prog"
expect_status 1 "$PBITMAP" plan "$d/prog" "$d/lib.so" "$d/data" "$d/lib.so"
grep -q "lib.so: the same file as .*lib.so: a plan names each file once" "$ERR" ||
	fail "a file named twice: $(cat "$ERR")"
assert_unchanged "$d/prog" "a file named twice"
expect_status 1 "$PBITMAP" plan "$d/prog" "$d/lib.so" "$d/lib-link.so"
grep -q "lib-link.so: the same file as .*lib.so" "$ERR" || fail "a hard link of a planned file: $(cat "$ERR")"
assert_unchanged "$d/prog" "a hard link of a planned file"
pass "one file named twice, or through a hard link: exit 1, which, nothing changed"

cp "$d/data" "$d/data2"
expect_status 0 "$PBITMAP" plan "$d/prog" "$d/lib.so" "$d/data2"
$ELFCHECK plan "$d/prog" >"$d/before.txt" || fail "elfcheck plan"
expect_status 0 "$PBITMAP" add -g 2 "$d/prog"
$ELFCHECK plan "$d/prog" >"$d/after.txt" || fail "elfcheck plan after re-stamp"
cmp -s "$d/before.txt" "$d/after.txt" || fail "re-stamp lost the plan: $(diff "$d/before.txt" "$d/after.txt")"
expect_status 0 "$PBITMAP" plan --clear "$d/prog"
expect_status 0 "$PBITMAP" show "$d/prog"
grep -q 'plan *empty' "$OUT" || fail "--clear: $(cat "$OUT")"
expect_status 0 "$PBITMAP" strip "$d/prog"
assert_cmp "$d/prog" "$d/orig"
pass "a re-stamp carries the plan, --clear empties it, strip gives the original"

# corrupt FILE WHAT: rewrite both slots' plan as a buggy or hostile writer
# would, with a right checksum, so that only the plan checks can refuse it.
corrupt() {
	python3 - "$1" "$2" "$TOP/tests" <<'EOF'
import struct, sys, zlib
sys.path.insert(0, sys.argv[3])
import elfcheck as ec
path, what = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
_, pb = ec.record_of(ec.Elf(bytes(data)))
size, offs = ec.slots_of(bytes(data), pb["offset"], pb["size"])
for at in offs:
    h = ec.header_at(bytes(data), at)
    plan = at + size - h["plan_size"]
    nr_files = struct.unpack_from("<H", data, plan + 8)[0]
    steps = plan + 32 + 32 * nr_files
    if what == "step-file":
        struct.pack_into("<H", data, steps + 8, nr_files)
    elif what == "repeat":
        # The second step becomes the first one again: same file, same range.
        data[steps + 12:steps + 24] = data[steps:steps + 12]
    elif what == "reversed":
        # The first file's first two ranges swapped.
        data[steps:steps + 12], data[steps + 12:steps + 24] = \
            data[steps + 12:steps + 24], data[steps:steps + 12]
    elif what == "same-inode":
        # Entry 1 names entry 0's device and inode (its path, size, ranges kept).
        struct.pack_into("<Q", data, plan + 32 + 32, struct.unpack_from("<Q", data, plan + 32)[0])
        struct.pack_into("<I", data, plan + 32 + 32 + 16, struct.unpack_from("<I", data, plan + 32 + 16)[0])
    else:
        used = struct.unpack_from("<I", data, plan + 4)[0]
        data[plan + used - 1] = ord("x")
    struct.pack_into("<I", data, at + 8, 0)
    struct.pack_into("<I", data, at + 8, zlib.crc32(bytes(data[at:at + size])))
open(path, "wb").write(data)
EOF
}
for what in step-file name repeat reversed same-inode; do
	cp /usr/bin/ls "$d/bad"
	expect_status 0 "$PBITMAP" add --plan-size 4K "$d/bad"
	# lib.so first: its bitmap marks two ranges (the steps the cases edit).
	expect_status 0 "$PBITMAP" plan "$d/bad" "$d/lib.so" "$d/data"
	expect_status 0 "$PBITMAP" verify "$d/bad"
	corrupt "$d/bad" "$what" || fail "cannot corrupt the plan"
	expect_status 1 "$PBITMAP" verify "$d/bad"
	case $what in
	step-file) grep -q 'plan: a range names no file' "$ERR" || fail "$what: $(cat "$ERR")" ;;
	name) grep -q 'plan: names not terminated' "$ERR" || fail "$what: $(cat "$ERR")" ;;
	repeat | reversed)
		grep -q "plan: ranges not sorted by file and start, or overlapping (not canonical)" "$ERR" ||
			fail "$what: $(cat "$ERR")" ;;
	same-inode)
		grep -q 'plan: two entries name one file (not canonical)' "$ERR" || fail "$what: $(cat "$ERR")" ;;
	esac
done
pass "a plan naming no file, an unterminated name, ranges repeated or reversed, two entries for one inode: verify exits 1 and says which"

# The order table: the steps are lib.so 0+4, lib.so 9+1, data 0+3.
ORDER="python3 $TOP/tests/lib/plan_order.py"
cp /usr/bin/ls "$d/ordered"
expect_status 0 "$PBITMAP" add --plan-size 4K "$d/ordered"
expect_status 0 "$PBITMAP" plan "$d/ordered" "$d/lib.so" "$d/data"
$ORDER "$d/ordered" 2,0,1 || fail "cannot add an order table"
$ELFCHECK plan "$d/ordered" >"$d/plan.txt" || fail "elfcheck plan: $(cat "$d/plan.txt")"
grep -qx 'order 2 0 1' "$d/plan.txt" || fail "elfcheck plan: $(cat "$d/plan.txt")"
expect_status 0 "$PBITMAP" verify "$d/ordered"
grep -q 'a plan of 2 files$' "$OUT" || fail "verify, an order table: $(cat "$OUT")"
expect_status 0 "$PBITMAP" show "$d/ordered"
grep -q 'plan *2 files, 3 ranges, 32 KiB; [0-9]* of 4096 bytes$' "$OUT" || fail "show: $(cat "$OUT")"
grep -q 'read order *by its order table: steps 2,0-1$' "$OUT" || fail "show, an order table: $(cat "$OUT")"
expect_status 0 "$PBITMAP" show --json "$d/ordered"
python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))[0]["plan"]
assert p["steps"] == [[0, 0, 4], [0, 9, 1], [1, 0, 3]], p["steps"]
assert p["order"] == [2, 0, 1], p
' "$OUT" || fail "show --json, an order table: $(cat "$OUT")"
$ELFCHECK plan "$d/ordered" >"$d/before.txt" || fail "elfcheck plan"
expect_status 0 "$PBITMAP" add -g 2 "$d/ordered"
$ELFCHECK plan "$d/ordered" >"$d/after.txt" || fail "elfcheck plan after re-stamp"
cmp -s "$d/before.txt" "$d/after.txt" || fail "re-stamp lost the order: $(diff "$d/before.txt" "$d/after.txt")"
pass "an order table: verify passes, show prints the read order, --json the table, a re-stamp carries it"

bad_order() {	# ORDER FLAGS MESSAGE
	cp /usr/bin/ls "$d/bad"
	expect_status 0 "$PBITMAP" add --plan-size 4K "$d/bad"
	expect_status 0 "$PBITMAP" plan "$d/bad" "$d/lib.so" "$d/data"
	$ORDER "$d/bad" "$1" "$2" || fail "cannot write the order table $1, flags $2"
	expect_status 1 "$PBITMAP" verify "$d/bad"
	grep -qF "pbitmap: $d/bad: invalid bitmap: plan: $3" "$ERR" ||
		fail "order $1, flags $2: want '$3': $(cat "$ERR")"
}
bad_order 0,2,0 1 "order table is not a permutation of the steps: entry 2 names step 0 again"
bad_order 1,3,0 1 "order table is not a permutation of the steps: entry 1 names step 3 (the plan has 3 steps)"
bad_order 2,0,1 0x8001 "unknown flags 0x8000"
bad_order "" 4 "unknown flags 0x4"
# flag 2, a metadata table (t-plan-meta), with none
bad_order "" 2 "size does not match its tables"
pass "an order table with an index repeated, one past the steps, an unknown flag bit, the metadata flag without its table: verify exits 1 and says which"

expect_status 2 "$PBITMAP" plan "$d/prog"
expect_status 2 "$PBITMAP" plan --clear "$d/prog" "$d/lib.so"
expect_status 2 "$PBITMAP" add --plan-size 12 "$d/prog"
expect_status 2 "$PBITMAP" add --plan-size 1M "$d/prog"
pass "usage errors: exit 2"
