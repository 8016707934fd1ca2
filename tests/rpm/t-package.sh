#!/bin/bash
# t-package: what `make rpm` built, and what rpm makes of it.
#
# The RPM holds /usr/bin/pbitmap (the tool, of VERSION), /usr/bin/pbitmap-run
# (its static launcher), its manual page, the
# macros file in %{_rpmconfigdir}/macros.d (a directory in this rpm's macro
# path, so rpm reads it) and /etc/pbitmap.conf as %config(noreplace).  Its
# file triggers, a transfiletriggerin (stamp, carry learned pages over) and
# a transfiletriggerun (keep them before files go: t-carry), are on exactly
# the prefixes of
# macros.pbitmap, each ending in "/"; the built-in list of rpm.c (used when
# the macros file is absent) is the same list.  The installed macros file
# defines %__pbitmap_prefixes for rpm.  A source RPM is built too.  pbitmapd,
# its manual and pbitmapd.service are in it; unpacked, the unit is disabled, passes systemd-analyze verify, and the packaged pbitmap.conf
# leaves the daemon off (tests/lib/unit.sh).
# Why: a package that installs the macros where rpm never looks, or a trigger
# on other prefixes than the documented ones, would fail silently.

source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/rpmlib.sh"
source "$TOP/tests/lib/unit.sh"

version=$(cat "$TOP/pbitmap-tool/VERSION")
macrodir=$(rpm --eval '%{_rpmconfigdir}')/macros.d
list=$(rpm -qpl "$PB_RPM") || fail "rpm -qpl $PB_RPM"
for f in /usr/bin/pbitmap /usr/bin/pbitmap-run /usr/share/man/man1/pbitmap.1 "$macrodir/macros.pbitmap" /etc/pbitmap.conf \
	/usr/sbin/pbitmapd /usr/share/man/man8/pbitmapd.8 /usr/lib/systemd/system/pbitmapd.service; do
	grep -qx "$f\(\.gz\|\.bz2\|\.xz\|\.zst\)\?" <<<"$list" || fail "$f not in the RPM: $list"
done
[[ $(rpm -qp --qf '%{VERSION}' "$PB_RPM") == "$version" ]] || fail "RPM version is not $version"
flags=$(rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$PB_RPM" | awk '$2 == "/etc/pbitmap.conf" { print $1 }')
[[ $flags == cn ]] || fail "/etc/pbitmap.conf flags '$flags', expected cn (%config(noreplace))"
rpm --showrc | grep -E '^Macro path: ' | grep -qF "$macrodir/macros.*" ||
	fail "rpm does not read $macrodir/macros.*: $(rpm --showrc | grep -E '^Macro path')"
ls "$TOP"/build/rpm/SRPMS/pbitmap-"$version"-1.src.rpm >/dev/null || fail "no source RPM"
pass "contents: tool, man page, $macrodir/macros.pbitmap (in rpm's macro path), /etc/pbitmap.conf (cn)"

prefixes=$(awk '$1 == "%__pbitmap_prefixes" { $1 = ""; print }' "$TOP/rpm-scripts/macros.pbitmap" |
	tr ' ' '\n' | grep . | sort)
[[ -n $prefixes ]] || fail "no %__pbitmap_prefixes in rpm-scripts/macros.pbitmap"
[[ -z $(grep -v '/$' <<<"$prefixes") ]] || fail "a prefix without its trailing slash: $prefixes"
trig=$(rpm -qp --filetriggers "$PB_RPM")
[[ $(grep -c '^transfiletriggerin scriptlet' <<<"$trig") == 1 &&
   $(grep -c '^transfiletriggerun scriptlet' <<<"$trig") == 1 && $(grep -c 'scriptlet (using' <<<"$trig") == 2 ]] ||
	fail "expected exactly two file triggers, a transfiletriggerin and a transfiletriggerun: $trig"
for kind in transfiletriggerin transfiletriggerun; do
	got=$(grep "^$kind" <<<"$trig" | sed 's/.* -- //' | tr -d ' ' | tr ',' '\n' | sort)
	[[ $got == "$prefixes" ]] || fail "$kind prefixes
$got
differ from macros.pbitmap
$prefixes"
done
builtin=$(sed -n '/default_prefixes\[\] = {/,/};/p' "$TOP/pbitmap-tool/src/rpm.c" |
	grep -o '"[^"]*"' | tr -d '"' | sort)
[[ $builtin == "$prefixes" ]] || fail "rpm.c's built-in prefixes
$builtin
differ from macros.pbitmap
$prefixes"
pass "trigger: transfiletriggerin on $(tr '\n' ' ' <<<"$prefixes")(= macros.pbitmap = rpm.c's default)"

d=$(tmpdir)
(cd "$d" && rpm2cpio "$PB_RPM" | busybox cpio -idm 2>/dev/null) || fail "cannot unpack $PB_RPM"
got=$("$d/usr/bin/pbitmap" --version) || fail "the packaged pbitmap does not run"
[[ $got == "pbitmap $version "* ]] || fail "packaged pbitmap --version: $got"
run=$("$d/usr/bin/pbitmap-run" --version) || fail "the packaged pbitmap-run does not run"
[[ $run == "pbitmap-run $version "* ]] || fail "packaged pbitmap-run --version: $run"
[[ $(rpm --load "$d$macrodir/macros.pbitmap" --eval '%{__pbitmap_prefixes}' | tr ' ' '\n' | grep . | sort) == "$prefixes" ]] ||
	fail "rpm does not read %__pbitmap_prefixes from the packaged macros file"
grep -qx 'PBITMAP_RESTAMP=yes' "$d/etc/pbitmap.conf" || fail "pbitmap.conf does not enable the trigger"
pass "packaged tool: $got; macros file defines %__pbitmap_prefixes for rpm"
check_pbitmapd_unit "$d" /usr/lib/systemd/system
pass "pbitmapd.service packaged disabled, verified by systemd-analyze; pbitmap.conf leaves the daemon off"
check_device_gap_unit "$d" /usr/lib/systemd/system
pass "pbitmap-device-gap.service installed enabled, verified by systemd-analyze"
