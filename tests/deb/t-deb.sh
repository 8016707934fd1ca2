#!/bin/bash
# t-deb: the pbitmap .deb (make deb) in real dpkg transactions, in an
# alternate root (tests/deb/deblib.sh).
#
#   1. The package: the tool, the launcher, the trigger script, the apt
#      hook and its apt.conf.d file (a conffile), the dpkg-verify wrapper;
#      DEBIAN/triggers has interest-noawait on /usr/bin, /usr/sbin,
#      /usr/lib, /usr/libexec.
#   2. Installing pbitmap stamps what the root already has (configure).
#   3. pbtool (this project's tool built from two commits,
#      tests/lib/toolbuilds.sh) 1.0 installed: the file trigger stamps its
#      files.  Pages learned for 1.0 are put into them (as t-carry does).
#   4. Upgrade to 2.0 as apt does it: the Pre-Install-Pkgs hook is given
#      the .deb, then dpkg -i: exit 0, the trigger reports 2 files carried
#      from another build, every page 2.0 uses is carried, no profile left.
#   5. Plain dpkg -i (a downgrade to 1.0, no apt hook): the files are
#      stamped, and nothing is carried (documented: deb-scripts/README.md).
#   6. dpkg --verify reports the stamped files ("??5??????", exit 0);
#      /usr/lib/pbitmap/dpkg-verify marks them as packaged and exits 0; a
#      changed code byte is still reported (exit 1).
#   7. A trigger whose pbitmap crashes (exit 139): dpkg -i still exits 0.
#   8. dpkg -r pbtool, dpkg --purge pbitmap: exit 0, /var/lib/pbitmap gone.
#   9. pbitmapd: /usr/sbin/pbitmapd, its manual and pbitmapd.service in
#      /lib/systemd/system, installed disabled, passing systemd-analyze
#      verify; the packaged /etc/pbitmap.conf leaves it off
#      (tests/lib/unit.sh).

source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/deblib.sh"
source "$TOP/tests/lib/toolbuilds.sh"
source "$TOP/tests/lib/unit.sh"
need python3

contents=$(dpkg-deb -c "$PB_DEB" | awk '{ print $NF }')
for f in ./usr/bin/pbitmap ./usr/bin/pbitmap-run ./usr/lib/pbitmap/restamp ./usr/lib/pbitmap/apt-pre-install \
	 ./usr/lib/pbitmap/dpkg-verify ./etc/apt/apt.conf.d/80pbitmap ./etc/pbitmap.conf \
	 ./usr/share/man/man1/pbitmap.1.gz ./usr/share/doc/pbitmap/copyright \
	 ./usr/sbin/pbitmapd ./usr/share/man/man8/pbitmapd.8.gz ./lib/systemd/system/pbitmapd.service; do
	grep -qx -- "$f" <<<"$contents" || fail "$f not in $PB_DEB"
done
trig=$(dpkg-deb -I "$PB_DEB" triggers | grep -v '^#' | sort)
[[ $trig == "$(printf 'interest-noawait %s\n' /usr/bin /usr/lib /usr/libexec /usr/sbin)" ]] ||
	fail "DEBIAN/triggers: $trig"
dpkg-deb -I "$PB_DEB" conffiles | grep -qx /etc/apt/apt.conf.d/80pbitmap || fail "apt hook not a conffile"
pass "package: tool, launcher, trigger, apt hook (conffile), dpkg-verify; triggers on the four directories"

work=$(tmpdir)
make_deb_root "$work/root"
expect_status 0 dpkgr -i "$PB_DEB"
grep -q '^pbitmap: [0-9]* files stamped' "$ERR" || fail "no stamping at configure: $(cat "$ERR")"
"$PBITMAP" verify -q "$R/usr/bin/find" || fail "configure did not stamp the root's /usr/bin/find"
# Stamped the documented way: the executable gets the default plan area.
size=$("$PBITMAP" show --json "$R/usr/bin/find" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["plan_size"])')
[[ $size == 32768 ]] || fail "configure stamped /usr/bin/find with a plan area of $size bytes, not 32768"
pass "install pbitmap: $(grep '^pbitmap: [0-9]* files stamped' "$ERR")"
check_pbitmapd_unit "$R" /lib/systemd/system
pass "pbitmapd.service installed disabled, verified by systemd-analyze; pbitmap.conf leaves the daemon off"
check_device_gap_unit "$R" /lib/systemd/system
pass "pbitmap-device-gap.service installed enabled, verified by systemd-analyze"

cd "$work" || fail "cd"
build_tool "$TOOLBUILD_OLD" v1 || exit 1
build_tool worktree v2 || exit 1
lib=/usr/lib/x86_64-linux-gnu/pbtool
for v in v1 v2; do
	mkdir -p "payload-$v$lib" && cp "$v/prog" "$v/libpbitmap.so" "payload-$v$lib/" || fail "payload $v"
done
deb1=$(build_deb pbtool 1.0 "$work/payload-v1") || exit 1
deb2=$(build_deb pbtool 2.0 "$work/payload-v2") || exit 1
files=("$R$lib/prog" "$R$lib/libpbitmap.so")
learn_build v1
learn_build v2
"$PBITMAP" export -o v1.prof v1/prog v1/libpbitmap.so || fail "export v1"

expect_status 0 dpkgr -i "$deb1"
for f in "${files[@]}"; do "$PBITMAP" verify -q "$f" || fail "trigger did not stamp $f: $(cat "$ERR" "$OUT")"; done
expect_status 0 "$PBITMAP" import v1.prof "${files[@]}"
pass "pbtool 1.0: stamped by the file trigger; 1.0's learned pages put in"

cp "$deb2" "$R/tmp/" || fail "cp"
echo "/tmp/$(basename "$deb2")" |
	chroot "$R" /bin/env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/usr/lib/pbitmap/apt-pre-install ||
	fail "the apt hook failed"
[[ -s $R/var/lib/pbitmap/carry.profile ]] || fail "the apt hook kept no profile"
expect_status 0 dpkgr -i "$deb2"
grep -q "carry.profile: 0 files given their own build's pages, 2 carried from another build, 0 refused" "$ERR" ||
	fail "upgrade: nothing carried: $(cat "$ERR")"
[[ ! -e $R/var/lib/pbitmap/carry.profile ]] || fail "the carry profile was left behind"
for f in prog libpbitmap.so; do
	check_carried "after the upgrade: $f" "$R$lib/$f" "v2/$f"
done
pass "apt hook + dpkg -i 2.0: learned pages carried into the new build"

expect_status 0 dpkgr -i "$deb1"
for f in "${files[@]}"; do
	"$PBITMAP" verify -q "$f" || fail "downgrade: $f not stamped"
	[[ -z $(gen_pages "$f") ]] || fail "plain dpkg -i carried pages into $f"
done
pass "plain dpkg -i (no apt hook): stamped, nothing carried"

expect_status 0 "$PBITMAP" import v1.prof "${files[@]}"
expect_status 0 dpkgr --verify pbtool	# dpkg 1.21 exits 0 with differences
grep -q "^??5?????? *$lib/prog$" "$OUT" || fail "dpkg --verify: $(cat "$OUT")"
expect_status 0 env DPKG_ROOT="$R" PBITMAP="$TOP/build/pbitmap" "$TOP/deb-scripts/dpkg-verify" pbtool
grep -q "^??\.?????? *$lib/prog  (pbitmap: content as packaged)$" "$OUT" || fail "dpkg-verify: $(cat "$OUT")"
python3 - "$R$lib/libpbitmap.so" <<'PY' || fail "patch"
import sys
f = open(sys.argv[1], "r+b"); f.seek(0x2000); b = f.read(1); f.seek(0x2000); f.write(bytes([b[0] ^ 0xff]))
PY
expect_status 1 env DPKG_ROOT="$R" PBITMAP="$TOP/build/pbitmap" "$TOP/deb-scripts/dpkg-verify" pbtool
grep -q "^??5?????? *$lib/libpbitmap.so$" "$OUT" || fail "a changed byte not reported: $(cat "$OUT")"
pass "dpkg --verify reports stamped files; dpkg-verify knows them as packaged, and reports a real change"

mv "$R/usr/bin/pbitmap" "$work/pbitmap.saved"
printf '#!/bin/sh\nkill -SEGV $$\n' >"$R/usr/bin/pbitmap" && chmod 755 "$R/usr/bin/pbitmap"
expect_status 0 dpkgr -i "$deb2"
mv "$work/pbitmap.saved" "$R/usr/bin/pbitmap"
pass "a crashing pbitmap in the trigger: dpkg -i still exits 0"

expect_status 0 dpkgr -r pbtool
expect_status 0 dpkgr --purge pbitmap
[[ ! -e $R/var/lib/pbitmap ]] || fail "purge left /var/lib/pbitmap"
pass "dpkg -r pbtool, dpkg --purge pbitmap: exit 0, state removed"
