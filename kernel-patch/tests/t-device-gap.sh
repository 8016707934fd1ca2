#!/bin/bash
# Guest test, on Debian's own kernel (its blk-throttle: io.max): `pbitmap
# device-gap` tells a disk that charges requests from one that charges
# bytes.  The root disk is throttled by QEMU to 150 read requests a second
# whatever their size: a request costs more than any gap, so the kernel's
# model must stand.  The same disk read from a cgroup whose io.max also
# caps it at 4 MiB/s charges bytes: a 6.7 ms request is worth about 27 KiB
# of transfer, so the gap measured must be narrower than the model's
# (128 or 256 KiB) and wide enough to join runs (16-64 KiB).  Also: --set on a kernel
# without the patch fails and says why, a path on no block device is
# refused, and a bad --depth is a usage error.
set -euo pipefail
W=/var/tmp/t-device-gap
rm -rf "$W" && mkdir -p "$W" && cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }

[ ! -e /proc/sys/vm/pbitmap_enabled ] ||
	fail "this kernel ($(uname -r)) has the pbitmap patch: the test wants Debian's stock kernel"
dev=$(findmnt -no MAJ:MIN --target /usr) || fail "no device for /usr"
# The disk's own numbers, not a partition's (io.max takes a whole disk).
disk=$(lsblk -ndo PKNAME "/dev/block/$dev" 2>/dev/null || true)
[ -n "$disk" ] && dev=$(cat "/sys/class/block/$disk/dev")

gap_of() {	# OUTPUT-FILE: the gap it printed, or "model"
	if grep -q "the kernel's model ([0-9]* KiB) stands" "$1"; then echo model; return; fi
	sed -n 's/.*join gap \([0-9]*\) KiB.*/\1/p' "$1"
}

# 1. Requests charged, bytes free: the model stands.
pbitmap device-gap /usr >plain.txt || fail "device-gap on the plain disk failed: $(cat plain.txt)"
cat plain.txt
[ "$(gap_of plain.txt)" = model ] || fail "150 IOPS whatever the size: the model should stand"

# 2. Bytes charged too (blk-throttle): a narrower gap.
[ -f /sys/fs/cgroup/cgroup.controllers ] || fail "no cgroup v2 hierarchy"
grep -qw io /sys/fs/cgroup/cgroup.controllers || fail "the io controller is not available"
echo +io >/sys/fs/cgroup/cgroup.subtree_control
cg=$(mktemp -d /sys/fs/cgroup/t-device-gap.XXXXXX)
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
echo "$dev rbps=4194304" >"$cg/io.max" || fail "cannot set io.max on $dev"
sh -c 'echo $$ >"$1/cgroup.procs" && exec pbitmap device-gap /usr' sh "$cg" >bytes.txt ||
	fail "device-gap under io.max failed: $(cat bytes.txt)"
cat bytes.txt
g=$(gap_of bytes.txt)
[[ $g =~ ^[0-9]+$ ]] || fail "at 4 MiB/s a request is worth less than 128 KiB: the model should not stand"
((g >= 16 && g <= 64)) || fail "at 4 MiB/s and 150 requests a second the gap is about 27 KiB, not $g"

# 3. Errors.
rc=0; pbitmap device-gap --set /usr >set.txt 2>set.err || rc=$?
[ $rc = 1 ] || fail "--set on a stock kernel: exit $rc, not 1"
grep -q "pbitmap: /proc/sys/vm/pbitmap_merge_gap_kb: no such setting" set.err ||
	fail "--set on a stock kernel: $(cat set.err)"
rc=0; pbitmap device-gap /proc 2>proc.err || rc=$?
[ $rc = 1 ] && grep -q "not on a block device" proc.err || fail "/proc: exit $rc, $(cat proc.err)"
rc=0; pbitmap device-gap --depth 0 /usr 2>depth.err || rc=$?
[ $rc = 2 ] || fail "--depth 0: exit $rc, not 2"
echo "PASS: t-device-gap (requests only: the model; 4 MiB/s: $g KiB)"
