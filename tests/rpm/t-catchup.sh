#!/bin/bash
# t-catchup: the files the trigger did not stamp get stamped later.
#
# 1. pbsample installed before pbitmap: unstamped; installing pbitmap runs
#    its trigger over every matching file of the root, and pbsample's two
#    ELF files get stamped then.
# 2. pbsample installed with --noscripts, and again with --notriggers: no
#    trigger runs, the files stay unstamped; `pbitmap stamp --rpm pbsample`
#    (from the host, --root/--dbpath) stamps exactly them, with a summary;
#    a second run finds them already stamped; `stamp --rpm-all` too.
# 3. `stamp --rpm` for a package that is not installed: rpm's message in one
#    line, exit 1; usage errors exit 2.
# Why: --noscripts/--notriggers/--justdb installs and systems that got
# pbitmap late must be able to catch up with one command.

source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/rpmlib.sh"

make_root "$(tmpdir)/root"
v1=$(build_sample 1.0) || exit 1
out1=$(sample_output 1.0) || exit 1
files=("$R/usr/bin/pbhello" "$R/usr/lib64/libpbsample.so.1")

expect_status 0 rpmi -i "$v1"
assert_unstamped "${files[@]}"
expect_status 0 rpmi -i "$PB_RPM"
assert_summary "$ERR" 4 0 0 0	# and the package's own pbitmap-run and pbitmapd
assert_stamped "${files[@]}"
[[ $(chroot "$R" /usr/bin/pbhello) == "$out1" ]] || fail "pbhello output after late stamping"
pass "sample before pbitmap: stamped when pbitmap arrived: $(summary_of "$ERR")"

for how in --noscripts --notriggers; do
	expect_status 0 rpmi -U --replacepkgs "$how" "$v1"
	[[ ! -s $ERR ]] || fail "rpm $how printed: $(cat "$ERR")"
	assert_unstamped "${files[@]}"
	expect_status 0 "$PBITMAP" stamp --root "$R" --dbpath /var/lib/rpm --rpm pbsample
	[[ ! -s $OUT ]] || fail "stamp printed on stdout: $(cat "$OUT")"
	assert_summary "$ERR" 2 0 0 0
	assert_stamped "${files[@]}"
	pass "install $how: unstamped; stamp --rpm pbsample: $(summary_of "$ERR")"
done

expect_status 0 "$PBITMAP" stamp --root "$R/" --dbpath /var/lib/rpm --rpm pbsample
assert_summary "$ERR" 0 2 0 0
# --rpm-all also finds the root's own /usr/bin/pbitmap (not running here).
expect_status 0 "$PBITMAP" stamp --root "$R" --dbpath /var/lib/rpm --rpm-all
assert_summary "$ERR" 1 4 0 0	# pbhello, libpbsample, pbitmap-run, pbitmapd already
assert_stamped "$R/usr/bin/pbitmap"
expect_status 0 "$PBITMAP" stamp --root "$R" --dbpath /var/lib/rpm --rpm-all
assert_summary "$ERR" 0 5 0 0
[[ $(getcap "$R/usr/bin/pbhello") == *cap_net_raw=ep* ]] || fail "stamp --rpm lost the capabilities"
expect_status 1 rpmr -V --nodeps pbsample
[[ -z $(grep -v '^S\.5\.\.\.\.\.\. ' "$OUT") ]] || fail "rpm -V after stamp --rpm: $(cat "$OUT")"
pass "again: already stamped (--rpm; --rpm-all also stamps the root's pbitmap once); capabilities and mtime kept"

expect_status 1 "$PBITMAP" stamp --root "$R" --dbpath /var/lib/rpm --rpm pbsample nosuchpkg
grep -qx 'pbitmap: rpm: package nosuchpkg is not installed' "$ERR" ||
	fail "no line about the missing package: $(cat "$ERR")"
pass "a package that is not installed: $(grep nosuchpkg "$ERR")"

expect_status 2 "$PBITMAP" stamp --root "$R"
expect_status 2 "$PBITMAP" stamp --rpm
expect_status 2 "$PBITMAP" stamp --rpm-all pbsample
expect_status 2 "$PBITMAP" stamp --rpm --rpm-all pbsample
pass "usage errors: exit 2"
