#!/bin/bash
# t-root: `stamp --root` and `rpm-verify --root` never leave the root.
#
# pbsample is installed in a root without its trigger; then the root's
# /usr/lib64 becomes an absolute symlink and /usr/bin a relative one whose
# ".." chain climbs above the root, both naming a directory $O of the host.
# The host's $O holds unstamped copies of what the package installed there
# (the victims);
# the root's $R$O holds the files themselves, which is where rpm, chrooted,
# sees them too.
#   - stamp --root --rpm pbsample: the victims stay byte-identical and
#     unstamped; the files inside the root are the ones stamped.
#   - rpm-verify --root: with the victims stamped (content as packaged) and
#     the root's files a stamped other version, rpm -V's S.5 lines must stay
#     reported: the victims are not what the root holds.
# Why: paths from the root's rpm database were opened as ROOT + PATH by the
# host, which follows the root's symlinks out of it (issue 14, defect 4).

source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/rpmlib.sh"

make_root "$(tmpdir)/root"
v1=$(build_sample 1.0) || exit 1
build_sample 2.0 >/dev/null || exit 1
p1=$SAMPLE_DIR/1.0/payload
p2=$SAMPLE_DIR/2.0/payload
expect_status 0 rpmi -i --noscripts "$v1"

O=$(tmpdir)/outside
mkdir -p "$O/lib64" "$O/bin" "$R$O" || fail "mkdir"
# The victims: a copy of everything the package put in those directories.
cp -a "$R/usr/lib64/." "$O/lib64/" || fail "cp"
cp -a "$R/usr/bin/." "$O/bin/" || fail "cp"
victims=("$O/lib64/libpbsample.so.1" "$O/bin/pbhello")
mv "$R/usr/lib64" "$R$O/lib64" || fail "mv lib64"
ln -s "$O/lib64" "$R/usr/lib64" || fail "ln"
mv "$R/usr/bin" "$R$O/bin" || fail "mv bin"
up=$(printf '../%.0s' $(seq 40))
ln -s "${up%/}$O/bin" "$R/usr/bin" || fail "ln"
inside=("$R$O/lib64/libpbsample.so.1" "$R$O/bin/pbhello")
# The host follows both links out of the root.
[[ $(stat -L -c %i "$R/usr/lib64/libpbsample.so.1") == $(stat -c %i "${victims[0]}") ]] ||
	fail "set-up: $R/usr/lib64 does not lead to $O/lib64 on the host"
[[ $(stat -L -c %i "$R/usr/bin/pbhello") == $(stat -c %i "${victims[1]}") ]] ||
	fail "set-up: $R/usr/bin does not lead to $O/bin on the host"
assert_unstamped "${victims[@]}" "${inside[@]}"
for f in "${victims[@]}"; do snapshot "$f"; done

expect_status 0 "$PBITMAP" stamp --root "$R" --dbpath /var/lib/rpm --rpm pbsample
for f in "${victims[@]}"; do assert_unchanged "$f" "stamp --root wrote outside the root"; done
assert_unstamped "${victims[@]}"
assert_stamped "${inside[@]}"
assert_summary "$ERR" 2 0 0 0
pass "stamp --root: an absolute symlink and a .. chain resolve inside the root; outside untouched"

# rpm-verify: the victims become stamped copies of the package's files, the
# root's files a stamped version 2.0.
"$PBITMAP" add -q "${victims[@]}" || fail "pbitmap add (victims)"
"$PBITMAP" strip -q "${inside[@]}" || fail "pbitmap strip (inside)"
cp "$p2/usr/lib64/libpbsample.so.1" "${inside[0]}" || fail "cp"
# (pbhello itself is the same in both versions: build one that differs)
gcc -O1 -o "${inside[1]}" "$SAMPLE_DIR/2.0/main.c" -L"$p2/usr/lib64" -l:libpbsample.so.1 \
	-Wl,-rpath,/usr/lib64 || fail "gcc"
cmp -s "${inside[1]}" "$p1/usr/bin/pbhello" && fail "set-up: the changed pbhello is the packaged one"
"$PBITMAP" add -q "${inside[@]}" || fail "pbitmap add (inside)"
for f in "${victims[@]}"; do snapshot "$f"; done
expect_status 1 rpmr -V --nodeps pbsample
rpmv=$(grep -E '^S\.5' "$OUT" | sort)
[[ $(grep -c . <<<"$rpmv") == 2 ]] || fail "rpm -V: expected S.5 on the two files: $(cat "$OUT")"
expect_status 1 "$PBITMAP" rpm-verify --root "$R" --dbpath /var/lib/rpm pbsample
grep -q 'content as packaged' "$OUT" &&
	fail "rpm-verify vouched for files outside the root: $(cat "$OUT")"
[[ $(grep -E '^S\.5' "$OUT" | sort) == "$rpmv" ]] ||
	fail "rpm-verify: expected rpm's S.5 lines
$rpmv
got
$(cat "$OUT")"
for f in "${victims[@]}"; do assert_unchanged "$f" "rpm-verify --root"; done
pass "rpm-verify --root: the root's own (changed) files are judged, not the host's"
