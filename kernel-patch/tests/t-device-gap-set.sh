#!/bin/bash
# Guest test, patched kernel: `pbitmap device-gap --set` writes the gap it
# measured to vm.pbitmap_merge_gap_kb, as pbitmap-device-gap.service does at
# boot.  The root disk charges requests only (QEMU: 150 a second whatever
# their size), so the kernel's model stands: --set writes -1 over the 64
# left there before, and -q prints that value alone.  (t-device-gap, on
# Debian's kernel, checks a disk that charges bytes.)
set -euo pipefail
W=/var/tmp/t-device-gap-set
rm -rf "$W" && mkdir -p "$W" && cd "$W"
fail() { echo "FAIL: $*" >&2; exit 1; }
S=/proc/sys/vm/pbitmap_merge_gap_kb
[ -w $S ] || fail "no $S: this kernel has no pbitmap series"
old=$(<$S)
trap 'echo "$old" >$S' EXIT
echo 64 >$S
pbitmap device-gap --set /usr >out.txt || fail "device-gap --set failed: $(cat out.txt)"
cat out.txt
grep -q "the kernel's model ([0-9]* KiB) stands" out.txt || fail "150 IOPS whatever the size: the model should stand"
[ "$(<$S)" = -1 ] || fail "--set left $(<$S) in $S, not -1"
q=$(pbitmap device-gap -q /usr) || fail "device-gap -q failed"
[ "$q" = -1 ] || fail "device-gap -q printed '$q', not -1"
echo "PASS: t-device-gap-set (the model stands: $S = -1)"
