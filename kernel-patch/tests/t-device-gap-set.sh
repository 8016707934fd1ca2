#!/bin/bash
# Guest test, patched kernel: `pbitmap device-gap --set` writes the gap it
# measured to vm.pbitmap_merge_gap_kb, as pbitmap-device-gap.service does at
# boot.  The root disk charges requests (QEMU: 150 a second whatever
# their size), and bytes only where the host's page cache does not hold the
# image's blocks: a request is worth at least twice the kernel's model
# (512 KiB), up to the widest gap --set writes (1024 KiB, or the disk's
# largest request if smaller).  --set writes the gap it printed over the 64
# left there before, and -q prints a gap alone (measured again: 512 KiB or
# more too).
# (t-device-gap, on Debian's kernel, checks a disk that charges bytes.)
set -euo pipefail
W=/var/tmp/t-device-gap-set
rm -rf "$W" && mkdir -p "$W" && cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }
S=/proc/sys/vm/pbitmap_merge_gap_kb
[ -w $S ] || fail "no $S: this kernel has no pbitmap series"
dev=$(findmnt -no MAJ:MIN --target /usr | tr -d " ") && [ -n "$dev" ] || fail "no device for /usr"
msk=$(cat "/sys/dev/block/$dev/queue/max_sectors_kb" 2>/dev/null ||
      cat "/sys/dev/block/$dev/../queue/max_sectors_kb") || fail "no max_sectors_kb for $dev"
wide=$((msk < 1024 ? msk : 1024))
((wide >= 512)) || fail "the disk's largest request is $msk KiB: too small for this test's wide gap"
old=$(<$S)
trap 'echo "$old" >$S' EXIT
echo 64 >$S
pbitmap device-gap --set /usr >out.txt || fail "device-gap --set failed: $(cat out.txt)"
cat out.txt
g=$(sed -n "s/.*join gap \([0-9]*\) KiB (the kernel's model: [0-9]* KiB).*/\1/p" out.txt)
[[ $g =~ ^[0-9]+$ ]] && ((g >= 512 && g <= wide)) ||
	fail "150 IOPS whatever the size: the gap should be 512-$wide KiB, twice the model's or more"
[ "$(<$S)" = "$g" ] || fail "--set left $(<$S) in $S, not the $g KiB it printed"
q=$(pbitmap device-gap -q /usr) || fail "device-gap -q failed"
[[ $q =~ ^[0-9]+$ ]] && ((q >= 512 && q <= wide)) || fail "device-gap -q printed '$q', not 512-$wide"
echo "PASS: t-device-gap-set (requests only: $S = $g, -q $q)"
