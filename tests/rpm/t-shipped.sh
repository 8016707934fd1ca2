#!/bin/bash
# t-shipped: a package that ships learned pages (rpm-scripts/example/,
# %pbitmap_ship in rpm-scripts/macros.pbitmap).
#
#   1. rpmbuild of the example, as a distribution builds it (its
#      %__os_install_post strips the program first): the payload's program
#      is stamped with the profile's pages (carried from the build the
#      profile was learned on, or exactly), and the package holds the
#      manifest of original digests.  eu-elflint accepts the payload's
#      program as it accepts the unstamped one.
#   2. Installed into a root with pbitmap: the file arrives stamped without
#      its user.pbitmap marker (payloads carry no user attributes); the
#      trigger restores the marker and keeps the pages; the program runs;
#      rpm -V and pbitmap rpm-verify are clean.
#   3. The kernel learns (here: pbitmap set, which rewrites the record as
#      a learned generation does): rpm -V reports the digest; rpm-verify
#      reports nothing, the line marked as packaged.  A changed code byte
#      is still reported.
#   4. A profile of another program, or one that matches no file of the
#      package (a renamed program): rpmbuild fails, saying which.

source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/rpmlib.sh"
need eu-elflint rpm2cpio cpio

ex=$TOP/rpm-scripts/example
work=$(tmpdir)
build_example() {	# build_example PROFILE: prints the RPM's path
	local top=$work/top.$RANDOM
	mkdir -p "$top/SOURCES" "$top/SPECS"
	cp "$ex/hello.c" "$top/SOURCES/"
	cp "$1" "$top/SOURCES/pbitmap-hello.profile"
	rpmbuild --nodeps --load "$TOP/rpm-scripts/macros.pbitmap" --define "_topdir $top" \
		--define "__pbitmap $TOP/build/pbitmap" \
		--define "__pbitmap_ship $TOP/rpm-scripts/pbitmap-ship" \
		-bb "$ex/pbitmap-hello.spec" >"$top/log" 2>&1 || { cat "$top/log"; return 1; }
	grep -q '^+ /usr/lib/rpm/brp-strip' "$top/log" || { echo "no brp-strip ran" >&2; return 1; }
	grep '^pbitmap-ship: ' "$top/log" >&2
	ls "$top"/RPMS/*/pbitmap-hello-1.0-1.*.rpm
}
rpm=$(build_example "$ex/pbitmap-hello.profile") || fail "rpmbuild of the example failed"
mkdir -p "$work/x" && (cd "$work/x" && rpm2cpio "$rpm" | cpio -idm --quiet) || fail "unpack $rpm"
prog=$work/x/usr/bin/pbitmap-hello
[[ -f $work/x/usr/lib/pbitmap/shipped/pbitmap-hello.sha256 ]] || fail "no manifest in the package"
"$PBITMAP" show --json "$prog" >"$work/show" 2>&1 || fail "payload program not stamped: $(cat "$work/show")"
marked=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["prefetch"]["pages"])' "$work/show")
((marked > 0)) || fail "the payload's program has no page marked"
"$PBITMAP" undo -o "$work/orig" "$prog" || fail "undo"
diff <(eu-elflint --gnu-ld "$work/orig" 2>&1 | sed "s|$work/orig|F|") \
	<(eu-elflint --gnu-ld "$prog" 2>&1 | sed "s|$prog|F|") >"$work/lint" ||
	fail "eu-elflint says more of the stamped payload: $(cat "$work/lint")"
pass "rpmbuild: payload stamped after strip ($marked pages), manifest packaged, eu-elflint as unstamped"

make_root "$work/root"
expect_status 0 rpmi -i "$PB_RPM"
expect_status 0 rpmi -i "$rpm"
# add counts a file whose marker it restored as stamped (-q hides its note).
[[ $(summary_count stamped "$ERR") == 1 ]] || fail "trigger: $(summary_of "$ERR")"
expect_status 0 "$PBITMAP" verify "$R/usr/bin/pbitmap-hello"
"$PBITMAP" show --json "$R/usr/bin/pbitmap-hello" | grep -q '"marker":"ok"' || fail "marker not restored"
after=$("$PBITMAP" show --json "$R/usr/bin/pbitmap-hello" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["prefetch"]["pages"])')
((after == marked)) || fail "installed program has $after pages marked, the payload $marked"
[[ $(chroot "$R" /usr/bin/pbitmap-hello tester) == "hello, tester" ]] || fail "the program does not run"
expect_status 0 rpmr -V --nodeps pbitmap-hello
[[ ! -s $OUT ]] || fail "rpm -V: $(cat "$OUT")"
expect_status 0 "$PBITMAP" rpm-verify --root "$R" --dbpath /var/lib/rpm pbitmap-hello
pass "installed: marker restored, $after pages kept, program runs, rpm -V and rpm-verify clean"

"$PBITMAP" set --pages 1 "$R/usr/bin/pbitmap-hello" || fail "set"
expect_status 1 rpmr -V --nodeps pbitmap-hello
grep -q '^\.\.5.* /usr/bin/pbitmap-hello$' "$OUT" || fail "rpm -V after learning: $(cat "$OUT")"
expect_status 0 "$PBITMAP" rpm-verify --root "$R" --dbpath /var/lib/rpm pbitmap-hello
grep -q '/usr/bin/pbitmap-hello  (pbitmap: content as packaged)' "$OUT" ||
	fail "rpm-verify after learning: $(cat "$OUT")"
python3 - "$R/usr/bin/pbitmap-hello" <<'PY' || fail "patch a byte"
import sys
f = open(sys.argv[1], "r+b"); f.seek(0x1010); b = f.read(1); f.seek(0x1010); f.write(bytes([b[0] ^ 0xff]))
PY
expect_status 1 "$PBITMAP" rpm-verify --root "$R" --dbpath /var/lib/rpm pbitmap-hello
grep -q '5.* /usr/bin/pbitmap-hello$' "$OUT" || fail "a changed code byte not reported: $(cat "$OUT")"
pass "after learning: rpm -V reports the digest, rpm-verify knows it as packaged; a code change is reported"

cp /usr/bin/python3.11 "$work/py" && "$PBITMAP" add -q "$work/py" && "$PBITMAP" set --pages 300-310 "$work/py" &&
	"$PBITMAP" export "$work/py" | sed 's|^file .*|file /usr/bin/pbitmap-hello|' >"$work/wrong.profile" ||
	fail "make a wrong profile"
build_example "$work/wrong.profile" >"$work/wrong.out" 2>&1 && fail "rpmbuild accepted another program's profile"
grep -q "is for another program" "$work/wrong.out" || fail "rpmbuild failed without saying why: $(tail -5 "$work/wrong.out")"
pass "another program's profile: rpmbuild fails, saying so"

sed 's|^file .*|file /usr/bin/pbitmap-hello-renamed|' "$ex/pbitmap-hello.profile" >"$work/stale.profile" ||
	fail "make a stale profile"
build_example "$work/stale.profile" >"$work/stale.out" 2>&1 && fail "rpmbuild accepted a profile that matches no file"
grep -q "pbitmap-hello.profile: no file of .* has an entry in it" "$work/stale.out" ||
	fail "rpmbuild failed without saying why: $(tail -5 "$work/stale.out")"
pass "a profile that matches no file of the package (a renamed program): rpmbuild fails, saying so"
