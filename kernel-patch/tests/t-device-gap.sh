#!/bin/bash
# Guest test, on Debian's own kernel (its blk-throttle: io.max): `pbitmap
# device-gap` tells a disk that charges requests from one that charges
# bytes.  The root disk is throttled by QEMU to 150 read requests a second
# whatever their size: a request costs more than any gap, so the gap is
# the widest --set writes (1024 KiB, or the disk's largest request if
# smaller) where the host's page cache holds the image, and at least twice
# the kernel's model whatever it holds.  The same disk read from a
# cgroup whose io.max also caps it at 4 MiB/s charges bytes: a 6.7 ms request is worth about 27 KiB
# of transfer, so the gap measured must be narrower than the model's
# (128 or 256 KiB) and wide enough to join runs (16-64 KiB).  --set on a
# kernel without the patch records the gap for pbitmapd only: it says so
# (a note, exit 0) and writes "KIB MAJ:MIN" to /run/pbitmap/device-gap (the
# widest gap and /usr's device on the plain disk; the narrower gap under io.max, in a
# directory of PBITMAP_RUNDIR's), and pbitmapd --print-config (the build
# beside the test) then joins across that gap, wider or narrower than its
# default 256, "measured at boot".  Also: a path on no block device is refused, and a bad --depth is
# a usage error.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)	# before the cd: $0 may be relative
PBITMAPD=$HERE/pbitmapd
W=/var/tmp/t-device-gap
rm -rf "$W" && mkdir -p "$W" && cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }

[ ! -e /proc/sys/vm/pbitmap_enabled ] ||
	fail "this kernel ($(uname -r)) has the pbitmap patch: the test wants Debian's stock kernel"
[ -x "$PBITMAPD" ] || fail "no pbitmapd beside the test ($PBITMAPD): make vm-check copies it"
[ ! -e /run/pbitmap ] || fail "/run/pbitmap exists before the test: $(ls -la /run/pbitmap)"
usr_dev=$(stat -c '%Hd:%Ld' /usr) || fail "stat /usr"
dev=$(findmnt -no MAJ:MIN --target /usr | tr -d " ") && [ -n "$dev" ] || fail "no device for /usr"
# The disk's own numbers, not a partition's (io.max takes a whole disk).
disk=$(lsblk -ndo PKNAME "/dev/block/$dev" 2>/dev/null || true)
[ -n "$disk" ] && dev=$(cat "/sys/class/block/$disk/dev")

gap_of() {	# OUTPUT-FILE: the gap it printed, or "model"
	if grep -q "the kernel's model ([0-9]* KiB) stands" "$1"; then echo model; return; fi
	sed -n 's/.*join gap \([0-9]*\) KiB.*/\1/p' "$1"
}
# The widest gap --set writes on this disk: 1024 KiB, or its largest request.
msk=$(cat "/sys/dev/block/$dev/queue/max_sectors_kb") || fail "no max_sectors_kb for $dev"
wide=$((msk < 1024 ? msk : 1024))
((wide >= 512)) || fail "the disk's largest request is $msk KiB: too small for this test's wide gap"

# 1. Requests charged, bytes (nearly) free: a wide gap, which --set on a stock
# kernel records for pbitmapd (not an error).  One probe per disk model:
# each takes 5-20 s of reads at 150 a second.
rc=0; pbitmap device-gap --set /usr >set.txt 2>set.err || rc=$?
cat set.txt
[ $rc = 0 ] || fail "--set on a stock kernel: exit $rc, not 0: $(cat set.err)"
grep -qx "pbitmap: /proc/sys/vm/pbitmap_merge_gap_kb: no such setting: the kernel has no pbitmap patch; the gap is recorded for pbitmapd only" set.err ||
	fail "--set on a stock kernel: $(cat set.err)"
# At least twice the model, not always the widest: the image's blocks come
# from the host's disk when its page cache does not hold them, and a 1 MiB
# read then costs more than a 4 KiB one (alone on a host with a cold cache:
# 13.5 ms against 5.9, a gap of 780 KiB)
wg=$(gap_of set.txt)
[[ $wg =~ ^[0-9]+$ ]] && ((wg >= 512 && wg <= wide)) ||
	fail "150 IOPS whatever the size: the gap should be 512-$wide KiB, twice the model's or more: $(cat set.txt)"
[ "$(cat /run/pbitmap/device-gap)" = "$wg $usr_dev" ] ||
	fail "/run/pbitmap/device-gap: '$(cat /run/pbitmap/device-gap)', not '$wg $usr_dev'"
[ "$(stat -c %a /run/pbitmap)/$(stat -c %a /run/pbitmap/device-gap)" = 755/644 ] ||
	fail "modes of /run/pbitmap and its file: $(stat -c %a /run/pbitmap /run/pbitmap/device-gap)"
[ "$(ls -A /run/pbitmap)" = device-gap ] || fail "left in /run/pbitmap: $(ls -A /run/pbitmap)"
"$PBITMAPD" --print-config -c /dev/null >cfg.txt || fail "pbitmapd --print-config failed"
grep -qx "PBITMAP_DAEMON_JOIN_GAP_KB $wg (measured at boot)" cfg.txt ||
	fail "$wg KiB recorded, wider than the default, not taken: $(cat cfg.txt)"

# 2. Bytes charged too (blk-throttle): a narrower gap, recorded (in a
# directory of PBITMAP_RUNDIR's) and taken by pbitmapd.
[ -f /sys/fs/cgroup/cgroup.controllers ] || fail "no cgroup v2 hierarchy"
grep -qw io /sys/fs/cgroup/cgroup.controllers || fail "the io controller is not available"
echo +io >/sys/fs/cgroup/cgroup.subtree_control
cg=$(mktemp -d /sys/fs/cgroup/t-device-gap.XXXXXX)
trap 'rmdir "$cg" 2>/dev/null || true; rm -rf /run/pbitmap' EXIT
echo "$dev rbps=4194304" >"$cg/io.max" || fail "cannot set io.max on $dev"
export PBITMAP_RUNDIR=$W/run
sh -c 'echo $$ >"$1/cgroup.procs" && exec pbitmap device-gap --set /usr' sh "$cg" >bytes.txt 2>bytes.err ||
	fail "device-gap --set under io.max failed: $(cat bytes.txt bytes.err)"
cat bytes.txt
g=$(gap_of bytes.txt)
[[ $g =~ ^[0-9]+$ ]] || fail "at 4 MiB/s a request is worth less than 128 KiB: the model should not stand"
((g >= 16 && g <= 64)) || fail "at 4 MiB/s and 150 requests a second the gap is about 27 KiB, not $g"
[ "$(cat "$W/run/device-gap")" = "$g $usr_dev" ] ||
	fail "$W/run/device-gap: '$(cat "$W/run/device-gap")', not '$g $usr_dev'"
"$PBITMAPD" --print-config -c /dev/null >cfgq.txt || fail "pbitmapd --print-config failed"
grep -qx "PBITMAP_DAEMON_JOIN_GAP_KB $g (measured at boot)" cfgq.txt || fail "$g KiB recorded: $(cat cfgq.txt)"
printf 'PBITMAP_DAEMON_JOIN_GAP_KB=128\n' >gap.conf
"$PBITMAPD" --print-config -c gap.conf >cfgs.txt || fail "pbitmapd --print-config failed"
grep -qx "PBITMAP_DAEMON_JOIN_GAP_KB 128 (setting)" cfgs.txt || fail "a setting: $(cat cfgs.txt)"
unset PBITMAP_RUNDIR

# 4. Errors.
rc=0; pbitmap device-gap /proc 2>proc.err || rc=$?
[ $rc = 1 ] && grep -qx "pbitmap: /proc: on no single block device (not a block filesystem: proc)" proc.err ||
	fail "/proc: exit $rc, $(cat proc.err)"
rc=0; pbitmap device-gap --depth 0 /usr 2>depth.err || rc=$?
[ $rc = 2 ] || fail "--depth 0: exit $rc, not 2"
echo "PASS: t-device-gap (requests only: $wg KiB, recorded and taken by pbitmapd; 4 MiB/s: $g KiB, recorded and taken)"
