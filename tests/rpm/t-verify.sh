#!/bin/bash
# t-verify: `pbitmap rpm-verify` against `rpm -V` in a real root.
#
# With pbsample's pbhello and libpbsample.so.1 stamped by the trigger:
# rpm -V reports S.5 for both; rpm-verify prints them with S and 5 cleared and
# the mark "(pbitmap: content as packaged)" and exits 0 (also with -a).  Other
# flags pass through (chmod: M; a new mtime: T) and make it exit 1.  For the
# file digest algorithms rpm records (MD5 = no FILEDIGESTALGO tag, SHA-1,
# SHA-224, SHA-384, SHA-512, SHA-256 above) the stamped files are recognised.
# Then the changes that must be reported: one byte flipped in the .text of
# the stamped pbhello (S.5 kept, no mark, exit 1), a changed unstamped file,
# a missing file, a package that is not installed.
# Why: since rpm 4.15 rpm -V cannot undo a stamp; rpm-verify must tell a
# stamped file from a tampered one, never hide a real change.

source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/rpmlib.sh"

make_root "$(tmpdir)/root"
v1=$(build_sample 1.0) || exit 1
expect_status 0 rpmi -i "$PB_RPM"
expect_status 0 rpmi -i "$v1"
assert_stamped "$R/usr/bin/pbhello" "$R/usr/lib64/libpbsample.so.1"
MARK='  (pbitmap: content as packaged)'
verify() {
	expect_status "$1" "$PBITMAP" rpm-verify --root "$R" --dbpath /var/lib/rpm "${@:2}"
}

expect_status 1 rpmr -V --nodeps pbsample
note "rpm -V pbsample:"
sed 's/^/#   /' "$OUT"
verify 0 pbsample
note "pbitmap rpm-verify pbsample:"
sed 's/^/#   /' "$OUT"
want=$(printf '%s\n' ".........    /usr/bin/pbhello$MARK" ".........    /usr/lib64/libpbsample.so.1$MARK")
[[ $(sort "$OUT") == "$want" ]] || fail "rpm-verify: expected
$want
got
$(cat "$OUT")"
verify 0 -a
# -a: the pbitmap package's launcher and daemon, stamped by the trigger, too
want_all=$(printf '%s\n' "$want" ".........    /usr/bin/pbitmap-run$MARK" ".........    /usr/sbin/pbitmapd$MARK" | sort)
[[ $(sort "$OUT") == "$want_all" ]] || fail "rpm-verify -a: $(cat "$OUT")"
pass "stamped files as packaged: S and 5 cleared, marked, exit 0 (PKG and -a)"

# other flags pass through
chmod 700 "$R/usr/bin/pbhello"
mtime=$(stat -c %Y "$R/usr/lib64/libpbsample.so.1")
touch -d @12345 "$R/usr/lib64/libpbsample.so.1"
verify 1 pbsample
want=$(printf '%s\n' ".M.......    /usr/bin/pbhello$MARK" ".......T.    /usr/lib64/libpbsample.so.1$MARK" | sort)
[[ $(sort "$OUT") == "$want" ]] || fail "rpm-verify with M and T: expected
$want
got
$(cat "$OUT")"
chmod 755 "$R/usr/bin/pbhello"
touch -d @"$mtime" "$R/usr/lib64/libpbsample.so.1"
verify 0 pbsample
pass "mode and mtime flags pass through (exit 1), then clean again"

# every digest algorithm rpm records
for algo in 1 2 11 9 10 8; do
	pkg=$(build_sample 1.0 "$algo") || exit 1
	expect_status 0 rpmi -U --replacepkgs "$pkg"
	assert_summary "$ERR" 2 0 0 0
	recorded=$(rpmr -q --qf '%{FILEDIGESTALGO}' pbsample)
	if [[ $algo == 1 ]]; then
		[[ $recorded == "(none)" || $recorded == 1 ]] || fail "MD5 package records FILEDIGESTALGO $recorded"
		md5tag=$recorded
	else
		[[ $recorded == "$algo" ]] || fail "package built with algorithm $algo records $recorded"
	fi
	verify 0 pbsample
	[[ $(grep -cF "$MARK" "$OUT") == 2 ]] || fail "algorithm $algo: $(cat "$OUT")"
	note "digest algorithm $algo (FILEDIGESTALGO: $recorded): both stamped files as packaged"
done
pass "MD5 (FILEDIGESTALGO $md5tag), SHA-1, SHA-224, SHA-384, SHA-512, SHA-256"

# one byte flipped in .text of the stamped program
f=$R/usr/bin/pbhello
read -r off size < <(python3 - "$f" <<'PY'
import subprocess, sys
for line in subprocess.run(["readelf", "-SW", sys.argv[1]], capture_output=True, text=True).stdout.splitlines():
    w = line.replace("[ ", "[").split()
    if len(w) > 6 and w[1] == ".text":
        print(int(w[4], 16), int(w[5], 16))
PY
)
[[ -n ${off:-} && $size -gt 32 ]] || fail "no .text in $f"
python3 - "$f" $((off + size / 2)) <<'PY'
import sys
with open(sys.argv[1], "r+b") as fh:
    fh.seek(int(sys.argv[2])); b = fh.read(1); fh.seek(int(sys.argv[2])); fh.write(bytes([b[0] ^ 0x01]))
PY
# The write dropped the file capabilities (as any write does): put them back,
# and the packaged mtime, so that only the content differs.
setcap cap_net_raw=ep "$f" || fail "setcap"
touch -d @"$(rpmr -q --qf '[%{FILEMTIMES} %{FILENAMES}\n]' pbsample | awk '$2 == "/usr/bin/pbhello" { print $1 }')" "$f"
expect_status 0 "$PBITMAP" verify "$f"
expect_status 1 rpmr -V --nodeps pbsample
note "rpm -V pbsample after flipping byte $((off + size / 2)) (.text) of pbhello:"
sed 's/^/#   /' "$OUT"
verify 1 pbsample
note "pbitmap rpm-verify pbsample after the flip:"
sed 's/^/#   /' "$OUT"
want=$(printf '%s\n' "S.5......    /usr/bin/pbhello" ".........    /usr/lib64/libpbsample.so.1$MARK" | sort)
[[ $(sort "$OUT") == "$want" ]] || fail "rpm-verify after the flip: expected
$want
got
$(cat "$OUT")"
pass "a flipped byte in .text of a stamped file is reported (S.5 kept, no mark, exit 1)"

# unstamped change, missing file, unknown package
echo '# changed' >>"$R/usr/bin/pbhello-sh"
rm "$R/usr/lib64/pbsample/plugin.o"
verify 1 pbsample nosuchpkg
for line in "S.5....T.    /usr/bin/pbhello-sh" "missing     /usr/lib64/pbsample/plugin.o" \
	"package nosuchpkg is not installed" "S.5......    /usr/bin/pbhello"; do
	grep -qxF "$line" "$OUT" || fail "rpm-verify: no line '$line' in: $(cat "$OUT")"
done
pass "other changes and rpm's messages pass through unchanged"

verify 1 nosuchpkg
verify 2
verify 2 -a pbsample
expect_status 2 "$PBITMAP" rpm-verify --bogus pbsample
pass "not installed: exit 1; usage errors: exit 2"
