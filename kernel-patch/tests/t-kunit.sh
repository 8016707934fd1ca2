#!/bin/bash
# Guest test: the KUnit tests of mm/pbitmap/ (patch 0009), built as modules
# of the test-bed kernel (kunit.ko, pbitmap_kunit.ko; make vm-check copies
# them into modules/ beside the tests) and loaded here, in the kernel the
# other tests run, with vm.pbitmap_enabled=0 (the cache suite uses the live
# record cache).  KUnit prints TAP to the kernel log; this test fails unless
# the five suites (pbitmap-record, pbitmap-extent, pbitmap-cache, pbitmap-plan,
# pbitmap-pace) report
# "ok", no case reports "not ok", and at least the cases listed below ran.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
for m in kunit pbitmap_kunit; do
	[ -f "$HERE/modules/$m.ko" ] || fail "no modules/$m.ko beside the tests (make vm-check copies them)"
done
[ "$(cat /proc/sys/vm/pbitmap_enabled)" = 0 ] || fail "vm.pbitmap_enabled is not 0"
dmesg -C
insmod "$HERE/modules/kunit.ko" || fail "cannot load kunit.ko"
insmod "$HERE/modules/pbitmap_kunit.ko" || fail "cannot load pbitmap_kunit.ko"
log=$(dmesg)
rmmod pbitmap_kunit kunit || fail "cannot unload the test modules"
tap=$(grep -E '(^|\] *)( *)(ok|not ok) [0-9]+ ' <<<"$log" | sed -E 's/^\[[^]]*\] *//') || true
echo "$tap"
[ -n "$tap" ] || fail "no KUnit result in the kernel log: $(tail -n 20 <<<"$log")"
if grep -q 'not ok' <<<"$tap"; then
	grep -E 'Expected|not ok|ASSERT|EXPECT|at mm/' <<<"$log" | head -n 40
	fail "KUnit reports failures"
fi
for suite in pbitmap-record pbitmap-extent pbitmap-cache pbitmap-plan pbitmap-pace; do
	grep -qE "^ok [0-9]+ $suite\$" <<<"$tap" || fail "suite $suite did not report ok"
done
cases=$(grep -cE '^ *ok [0-9]+ pbitmap_test_' <<<"$tap" || true)
# 11 record, 7 extent, 7 cache, 10 plan and 2 pace cases (mm/pbitmap/tests/*-kunit.h).
((cases >= 37)) || fail "only $cases test cases reported ok, expected 37"
echo "PASS: $cases KUnit cases in 5 suites"
