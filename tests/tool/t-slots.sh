#!/bin/bash
# t-slots: an ELF record is kept twice, in two slots (docs/FORMAT.md, "In an
# ELF executable or shared library"), and the current slot is the valid one
# with more runs, slot 0 on a tie; the kernel writes a generation into the
# other slot only, so that a crash never tears the record in use.  The
# learning policy (--learn=never|owner|every) is a record flag.
#
# Asserted, with the section checked independently (tests/elfcheck.py:
# Python struct and zlib.crc32):
#   - add writes both slots alike, the bytes between them zero, the section
#     roundup(record, 512) + record bytes; set and a re-stamp too;
#   - slot 1 rewritten as the kernel does (one more run, a page marked):
#     show, verify and the bitmap follow slot 1 (show --json "slot": 1);
#   - slot 1 then torn (its second half from the old bytes): verify accepts,
#     show reads slot 0 again, no message; a tool write (set) rewrites both
#     slots from the current one;
#   - both slots torn: verify exits 1 naming the checksum; add replaces the
#     bitmap (saying so); strip gives the original;
#   - a version 1 record (one slot, from an earlier pbitmap): verify exits 1
#     saying add stamps it anew; add does, and the result verifies;
#   - --learn=every, --learn=owner, --learn=never and --no-learn set the
#     policy in place (show and --json), keeping the learned bits;
#     --learn=sometimes is a usage error (exit 2) that changes nothing.

source "$(dirname "$0")/../lib.sh"
need python3 cmp
ELFCHECK="python3 $TOP/tests/elfcheck.py"

d=$(tmpdir)
cp /usr/bin/ls "$d/good"
cp "$d/good" "$d/f"
# --plan-size 0: the tears below change the second half of a record, which
# a plan area (zeros in both slots) would fill.
expect_status 0 "$PBITMAP" add --plan-size 0 "$d/f"
$ELFCHECK stamp "$d/good" "$d/f" >/dev/null || fail "add: bad layout: $($ELFCHECK stamp "$d/good" "$d/f" 2>&1)"
read -r size slot0 slot1 < <($ELFCHECK slots "$d/f") || fail "no slots"
[[ $((slot1 - slot0)) == $(((size + 511) / 512 * 512)) ]] || fail "slot 1 at $slot1, slot 0 at $slot0, record $size bytes"
pass "add: two equal slots of $size bytes at $slot0 and $slot1, zeros between"

json() { "$PBITMAP" show --json "$1" | python3 -c 'import json,sys; r = json.load(sys.stdin)[0]; print(r[sys.argv[1]])' "$2"; }

# kernel_write FILE: what the kernel's write-back does: take the current
# slot, shift in a generation marking granule 3, write it into the other.
kernel_write() {
	python3 - "$1" "$slot0" "$slot1" "$size" <<'EOF'
import struct, sys, time, zlib
path, offs, size = sys.argv[1], [int(sys.argv[2]), int(sys.argv[3])], int(sys.argv[4])
data = open(path, "rb").read()
def valid(rec):
    return zlib.crc32(rec[:8] + b"\0\0\0\0" + rec[12:]) == struct.unpack_from("<I", rec, 8)[0]
recs = [bytearray(data[o:o + size]) for o in offs]
runs = [struct.unpack_from("<Q", r, 40)[0] if valid(r) else -1 for r in recs]
cur = 1 if runs[1] > runs[0] else 0
rec = recs[cur]
planes, newest = rec[37], rec[39]
plane_size = struct.unpack_from("<I", rec, 32)[0]
newest = (newest + 1) % planes
p = 128 + newest * plane_size
rec[p:p + plane_size] = bytes(plane_size)
rec[p] = 1 << 3
rec[39] = newest
struct.pack_into("<QQ", rec, 40, runs[cur] + 1, int(time.time()))
struct.pack_into("<I", rec, 8, 0)
struct.pack_into("<I", rec, 8, zlib.crc32(bytes(rec)))
with open(path, "r+b") as f:
    f.seek(offs[1 - cur])
    f.write(rec)
print(1 - cur)
EOF
}

w=$(kernel_write "$d/f") || fail "cannot write a slot"
[[ $w == 1 ]] || fail "the first kernel write went to slot $w"
expect_status 0 "$PBITMAP" verify "$d/f"
[[ $(json "$d/f" slot) == 1 && $(json "$d/f" runs) == 1 ]] ||
	fail "after a write into slot 1: show says slot $(json "$d/f" slot), runs $(json "$d/f" runs)"
"$PBITMAP" show "$d/f" | grep -q "slot 1 current" || fail "show does not name slot 1 current"
"$PBITMAP" show --json "$d/f" | python3 -c 'import json,sys; r = json.load(sys.stdin)[0]; sys.exit([3, 3] not in r["prefetch"]["ranges"])' ||
	fail "the bitmap is not slot 1's (page 3 not in the prefetch set)"
pass "a generation in slot 1: verify, show and the prefetch set follow it"

# Tear slot 1: its second half goes back to slot 0's bytes.
python3 - "$d/f" "$slot0" "$slot1" "$size" <<'EOF' || fail "cannot tear"
import sys
path, s0, s1, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with open(path, "r+b") as f:
    f.seek(s0 + size // 2); old = f.read(size - size // 2)
    f.seek(s1 + size // 2); f.write(old)
EOF
expect_status 0 "$PBITMAP" verify "$d/f"
[[ -s $ERR ]] && fail "verify of a torn slot 1 printed: $(cat "$ERR")"
[[ $(json "$d/f" slot) == 0 && $(json "$d/f" runs) == 0 ]] || fail "torn slot 1: show does not fall back to slot 0"
pass "slot 1 torn: verify accepts, show reads slot 0 (runs 0), nothing printed"
expect_status 0 "$PBITMAP" set -q --pages 5 "$d/f"
$ELFCHECK stamp "$d/good" "$d/f" >/dev/null || fail "set after a torn slot: $($ELFCHECK stamp "$d/good" "$d/f" 2>&1)"
pass "set rewrites both slots alike from the current one"

# Both torn.
read -r size slot0 slot1 < <($ELFCHECK slots "$d/f")
python3 - "$d/f" "$slot0" "$slot1" "$size" <<'EOF' || fail "cannot tear"
import sys
path, size = sys.argv[1], int(sys.argv[4])
with open(path, "r+b") as f:
    for at in map(int, sys.argv[2:4]):
        f.seek(at + size - 1); b = f.read(1); f.seek(at + size - 1); f.write(bytes([b[0] ^ 0x5a]))
EOF
cp "$d/f" "$d/f2"
expect_status 1 "$PBITMAP" verify "$d/f"
grep -qi "checksum" "$ERR" || fail "both slots torn: verify does not name the checksum: $(cat "$ERR")"
expect_status 0 "$PBITMAP" add "$d/f"
grep -q "replacing a damaged bitmap" "$ERR" || fail "add over two torn slots does not say it replaces the bitmap"
expect_status 0 "$PBITMAP" verify "$d/f"
expect_status 0 "$PBITMAP" strip "$d/f2"
assert_cmp "$d/f2" "$d/good"
pass "both slots torn: verify exit 1 (checksum), add replaces the bitmap, strip gives the original"

# A version 1 record: one slot, as pbitmap wrote before the format had two.
cp "$d/good" "$d/v1"
expect_status 0 "$PBITMAP" add "$d/v1"
python3 - "$d/v1" <<'EOF' || fail "cannot make a version 1 stamp"
import os, struct, sys, zlib
sys.path.insert(0, os.environ["TOP"] + "/kernel-patch/tests")
import craft
path = sys.argv[1]
img = craft.Image(open(path, "rb").read())
h = img.header()
h["version"] = 1
# One slot: the section shrinks to the record; the zeros and slot 1 stay as padding.
craft.HDR.pack_into(img.data, img.rec_off, *(h[n] for n in craft.NAMES))
rec = bytearray(img.data[img.rec_off:img.rec_off + img.rec_size])
rec[8:12] = b"\0\0\0\0"
struct.pack_into("<I", img.data, img.rec_off + 8, zlib.crc32(bytes(rec)))
img.set_section(size=img.rec_size)
open(path, "wb").write(img.data)
os.setxattr(path, "user.pbitmap", img.marker())
EOF
expect_status 1 "$PBITMAP" verify "$d/v1"
grep -q "format version 1" "$ERR" || fail "verify of a version 1 record: $(cat "$ERR")"
expect_status 0 "$PBITMAP" add "$d/v1"
expect_status 0 "$PBITMAP" verify "$d/v1"
pass "a version 1 record: verify says so (exit 1), add stamps it anew"

# The learning policy.
cp "$d/good" "$d/p"
expect_status 0 "$PBITMAP" add "$d/p"
expect_status 0 "$PBITMAP" set -q --pages 2 "$d/p"
[[ $(json "$d/p" learn_policy) == owner ]] || fail "the default policy is $(json "$d/p" learn_policy)"
for pol in every never owner; do
	expect_status 0 "$PBITMAP" add --learn=$pol "$d/p"
	[[ $(json "$d/p" learn_policy) == "$pol" ]] || fail "--learn=$pol: show says $(json "$d/p" learn_policy)"
	"$PBITMAP" show --json "$d/p" | python3 -c 'import json,sys; r = json.load(sys.stdin)[0]; sys.exit([2, 2] not in r["prefetch"]["ranges"])' ||
		fail "--learn=$pol lost the learned bits"
done
expect_status 0 "$PBITMAP" add --no-learn "$d/p"
[[ $(json "$d/p" learn_policy) == never ]] || fail "--no-learn: show says $(json "$d/p" learn_policy)"
"$PBITMAP" show "$d/p" | grep -q "learning     never" || fail "show does not print the policy"
snapshot "$d/p"
expect_status 2 "$PBITMAP" add --learn=sometimes "$d/p"
grep -q "never, owner or every" "$ERR" || fail "--learn=sometimes: $(cat "$ERR")"
assert_unchanged "$d/p" "a usage error"
pass "--learn=every|never|owner and --no-learn set the policy in place, keeping the bits; a bad policy is a usage error"
