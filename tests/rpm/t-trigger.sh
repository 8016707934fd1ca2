#!/bin/bash
# t-trigger: the pbitmap RPM's %transfiletriggerin in real rpm transactions
# (alternate root, busybox /bin/sh, pbitmap from `make rpm` inside the root).
#
# pbitmap installed, then the sample package pbsample (pbhello, a program with
# file capabilities, and libpbsample.so.1, plus a symlink, a script, an object
# file and a data file): the two ELF files are stamped, by one pbitmap run
# whose summary says 2 stamped, with the learning policy "every" (the
# default of PBITMAP_LEARN), the program with the default 32 KiB plan
# area and the library with none, and nothing else changes.  The stamped
# program runs in the root (chroot) and prints exactly what the unstamped one
# prints; `rpm -V` shows S.5 on the two files and no P (capabilities) or T
# (mtime).  Upgrade to version 2: the new files are stamped and print version
# 2.  Reinstall: stamped again.  Erase: the transaction works and the files
# are gone.  Why: these are the transactions that replace binaries, and each
# new binary has lost its bitmap.

source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/rpmlib.sh"

make_root "$(tmpdir)/root"
v1=$(build_sample 1.0) && v2=$(build_sample 2.0) || exit 1
out1=$(sample_output 1.0) && out2=$(sample_output 2.0) || exit 1
note "sample output: $out1 / $out2"
[[ $out1 != "$out2" ]] || fail "the two sample versions print the same"

expect_status 0 rpmi -i "$PB_RPM"
summary_of "$ERR" >/dev/null
# its own launcher and daemon, pbitmap-run and pbitmapd (pbitmap itself is
# the one running)
assert_summary "$ERR" 2 0 0 0
assert_stamped "$R/usr/bin/pbitmap-run" "$R/usr/sbin/pbitmapd"
pass "pbitmap installed: $(summary_of "$ERR")"
chroot "$R" /usr/bin/pbitmap --version >/dev/null || fail "pbitmap does not run inside the root"

# install
expect_status 0 rpmi -i "$v1"
assert_summary "$ERR" 2 0 0 0
trig=$(summary_of "$ERR")
if [[ -n $(grep -v '^pbitmap: [0-9]* files stamped' "$ERR") ]]; then
	fail "the trigger printed more than its summary: $(cat "$ERR")"
fi
assert_stamped "$R/usr/bin/pbhello" "$R/usr/lib64/libpbsample.so.1"
expect_status 0 chroot "$R" /usr/bin/pbitmap verify /usr/bin/pbhello /usr/lib64/libpbsample.so.1
for f in usr/bin/pbhello usr/lib64/libpbsample.so.1; do
	pol=$("$PBITMAP" show --json "$R/$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["learn_policy"])')
	[[ $pol == every ]] || fail "$f: stamped with learning policy $pol, not PBITMAP_LEARN's default every"
done
# The trigger stamps the documented way: the program gets the default plan
# area (32 KiB), the library none.
for f in usr/bin/pbhello:32768 usr/lib64/libpbsample.so.1:0; do
	size=$("$PBITMAP" show --json "$R/${f%:*}" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["plan_size"])')
	[[ $size == "${f#*:}" ]] || fail "${f%:*}: a plan area of $size bytes after the trigger, not ${f#*:}"
done
p=$SAMPLE_DIR/1.0/payload
for f in usr/bin/pbhello-sh usr/lib64/pbsample/plugin.o usr/share/pbsample/data.txt; do
	assert_cmp "$R/$f" "$p/$f"
	[[ -z $(getfattr -d -m - "$R/$f" 2>/dev/null) ]] || fail "$f got an extended attribute"
done
[[ -L $R/usr/lib64/libpbsample.so ]] || fail "the symlink is no longer a symlink"
for f in usr/bin/pbhello usr/lib64/libpbsample.so.1; do
	"$PBITMAP" undo "$R/$f" | cmp - "$p/$f" || fail "$f: the un-stamped bytes are not the packaged file"
done
pass "install: $trig; pbhello and libpbsample.so.1 stamped, undo gives the packaged bytes; the rest untouched"

got=$(chroot "$R" /usr/bin/pbhello) || fail "stamped pbhello does not run in the root"
[[ $got == "$out1" ]] || fail "stamped pbhello prints '$got', expected '$out1'"
got=$(chroot "$R" /usr/bin/pbhello-sh) || fail "pbhello-sh does not run in the root"
[[ $got == "$out1" ]] || fail "pbhello-sh prints '$got', expected '$out1'"
pass "stamped pbhello runs in the root (chroot) with identical output: $got"

# capabilities and mtime kept: rpm -V flags S and 5 only
[[ $(getcap "$R/usr/bin/pbhello") == *cap_net_raw=ep* ]] ||
	fail "pbhello lost its file capabilities: '$(getcap "$R/usr/bin/pbhello")'"
expect_status 1 rpmr -V --nodeps pbsample
want=$(printf 'S.5......    /usr/bin/pbhello\nS.5......    /usr/lib64/libpbsample.so.1')
[[ $(sort "$OUT") == "$want" ]] || fail "rpm -V: expected exactly
$want
got
$(cat "$OUT")"
pass "rpm -V: only S.5 on the two stamped files (no P, no T): $(tr '\n' ';' <"$OUT")"

# upgrade
expect_status 0 rpmi -U "$v2"
assert_summary "$ERR" 2 0 0 0
trig=$(summary_of "$ERR")
assert_stamped "$R/usr/bin/pbhello" "$R/usr/lib64/libpbsample.so.1"
"$PBITMAP" undo "$R/usr/bin/pbhello" | cmp - "$SAMPLE_DIR/2.0/payload/usr/bin/pbhello" ||
	fail "after the upgrade, pbhello's un-stamped bytes are not version 2"
got=$(chroot "$R" /usr/bin/pbhello) || fail "upgraded pbhello does not run"
[[ $got == "$out2" ]] || fail "upgraded pbhello prints '$got', expected '$out2'"
[[ $(getcap "$R/usr/bin/pbhello") == *cap_net_raw=ep* ]] || fail "upgrade: capabilities lost"
expect_status 1 rpmr -V --nodeps pbsample
[[ -z $(grep -v '^S\.5\.\.\.\.\.\. ' "$OUT") ]] || fail "rpm -V after upgrade: $(cat "$OUT")"
pass "upgrade to 2.0: $trig; new files stamped, run, capabilities kept"

# reinstall.  The open descriptor keeps the old inode allocated, so that
# its number cannot be reused by the new file (rpm's, then pbitmap's copy)
# and a changed number really means the file was replaced.
ino=$(stat -c %i "$R/usr/bin/pbhello")
exec 9<"$R/usr/bin/pbhello"
expect_status 0 rpmi --reinstall "$v2"
assert_summary "$ERR" 2 0 0 0
[[ $(stat -c %i "$R/usr/bin/pbhello") != "$ino" ]] || fail "reinstall did not replace pbhello"
exec 9<&-
assert_stamped "$R/usr/bin/pbhello" "$R/usr/lib64/libpbsample.so.1"
[[ $(chroot "$R" /usr/bin/pbhello) == "$out2" ]] || fail "reinstalled pbhello output"
pass "reinstall: $(summary_of "$ERR")"

# a transaction with nothing under the prefixes does not run the trigger
expect_status 0 rpmi -e pbsample
[[ ! -s $ERR ]] || fail "erase printed: $(cat "$ERR")"
[[ ! -e $R/usr/bin/pbhello && ! -e $R/usr/lib64/libpbsample.so.1 ]] || fail "erase left files"
expect_status 1 rpmr -q pbsample
pass "erase: clean, no trigger output, files gone"
