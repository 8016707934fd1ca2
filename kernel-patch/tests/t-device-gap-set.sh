#!/bin/bash
# Guest test, patched kernel: `pbitmap device-gap --set` writes the gap it
# measured to vm.pbitmap_merge_gap_kb, as pbitmap-device-gap.service does at
# boot.  The root disk charges requests only (QEMU: 150 a second whatever
# their size), so a request is worth more than any gap: --set writes the
# widest gap it writes (1024 KiB, or the disk's largest request if smaller)
# over the 64 left there before, and -q prints that value alone.
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
grep -q "join gap $wide KiB (the kernel's model: [0-9]* KiB)" out.txt ||
	fail "150 IOPS whatever the size: the gap should be $wide KiB"
[ "$(<$S)" = "$wide" ] || fail "--set left $(<$S) in $S, not $wide"
q=$(pbitmap device-gap -q /usr) || fail "device-gap -q failed"
[ "$q" = "$wide" ] || fail "device-gap -q printed '$q', not $wide"
echo "PASS: t-device-gap-set (requests only: $S = $wide)"
