#!/bin/bash
# t-problems: the trigger's opt-out and its failures, in real transactions.
#
# /etc/pbitmap.conf PBITMAP_RESTAMP=no (also written ` = "no"  # comment` and
# 'Off') stops the trigger: nothing stamped, nothing printed.  The file is
# %config(noreplace): reinstalling pbitmap keeps the local change.
# Then every kind of trouble, each of which must leave the transaction
# successful (rpm exit 0, package installed) with one readable line:
# an ELF executable pbitmap cannot stamp (no section header table) next to a
# good one; a PBITMAP_TIMEOUT that is not a number; a PBITMAP_LEARN that is
# no policy (and owner, honoured); pbitmap crashing
# (SIGSEGV); pbitmap running past PBITMAP_TIMEOUT; pbitmap missing.
# Why: a file trigger that fails would fail every install on the system.

source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/rpmlib.sh"

make_root "$(tmpdir)/root"
v1=$(build_sample 1.0) || exit 1
expect_status 0 rpmi -i "$PB_RPM"
conf=$R/etc/pbitmap.conf
cp "$conf" "$SAMPLE_DIR/pbitmap.conf.orig"
files=("$R/usr/bin/pbhello" "$R/usr/lib64/libpbsample.so.1")
TRIG=$SAMPLE_DIR/trigger.err

for setting in 'PBITMAP_RESTAMP=no' '  PBITMAP_RESTAMP = "no"   # stamping off' "PBITMAP_RESTAMP='Off'"; do
	sed -i '/^[[:space:]]*PBITMAP_RESTAMP/d' "$conf"
	printf '%s\n' "$setting" >>"$conf"
	expect_status 0 rpmi -i "$v1"
	[[ ! -s $ERR ]] || fail "opt-out ($setting): the trigger printed: $(cat "$ERR")"
	assert_unstamped "${files[@]}"
	expect_status 0 rpmi -e pbsample
	pass "opt-out '$setting': nothing stamped, nothing printed"
done

expect_status 0 rpmi -U --replacepkgs "$PB_RPM"
grep -qx "PBITMAP_RESTAMP='Off'" "$conf" || fail "reinstalling pbitmap replaced the changed $conf"
[[ ! -s $ERR ]] || fail "pbitmap reinstalled with the opt-out: trigger printed: $(cat "$ERR")"
pass "%config(noreplace): reinstalling pbitmap keeps the local opt-out (and honours it)"
cp "$SAMPLE_DIR/pbitmap.conf.orig" "$conf"

# An executable without a section header table cannot carry a section.
d=$(tmpdir)
mkdir -p "$d/payload/usr/bin"
printf 'int main(void) { return 0; }\n' >"$d/ok.c"
gcc -o "$d/payload/usr/bin/pbok" "$d/ok.c" && cp "$d/payload/usr/bin/pbok" "$d/payload/usr/bin/pbnoshdr" ||
	fail gcc
python3 - "$d/payload/usr/bin/pbnoshdr" <<'PY'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(0x28); f.write(struct.pack("<Q", 0))        # e_shoff
    f.seek(0x3c); f.write(struct.pack("<HH", 0, 0))     # e_shnum, e_shstrndx
PY
bad=$(build_rpm pbbroken 1.0 "$d/payload" '/usr/bin/pbok
/usr/bin/pbnoshdr') || exit 1
expect_status 0 rpmi -i "$bad"
cp "$ERR" "$TRIG"
assert_summary "$ERR" 1 0 0 1
grep -qF "pbitmap: /usr/bin/pbnoshdr: no section header table" "$ERR" ||
	fail "no readable line about pbnoshdr: $(cat "$ERR")"
[[ $(wc -l <"$ERR") == 2 ]] || fail "expected the problem line and the summary: $(cat "$ERR")"
assert_stamped "$R/usr/bin/pbok"
expect_status 0 rpmr -q pbbroken
pass "unstampable ELF: transaction fine; $(grep pbnoshdr "$TRIG"); $(summary_of "$TRIG")"

sed -i 's/^PBITMAP_TIMEOUT=.*/PBITMAP_TIMEOUT=soon/' "$conf"
expect_status 0 rpmi -i "$v1"
grep -qF 'PBITMAP_TIMEOUT=soon is not a number of seconds; using 600' "$ERR" ||
	fail "no line about the bad PBITMAP_TIMEOUT: $(cat "$ERR")"
assert_summary "$ERR" 2 0 0 0
expect_status 0 rpmi -e pbsample
cp "$SAMPLE_DIR/pbitmap.conf.orig" "$conf"
pass "bad PBITMAP_TIMEOUT: one line, default used, files stamped"

sed -i 's/^PBITMAP_LEARN=.*/PBITMAP_LEARN=sometimes/' "$conf"
expect_status 0 rpmi -i "$v1"
grep -qF 'PBITMAP_LEARN=sometimes is not never, owner or every; using every' "$ERR" ||
	fail "no line about the bad PBITMAP_LEARN: $(cat "$ERR")"
assert_summary "$ERR" 2 0 0 0
expect_status 0 rpmi -e pbsample
sed -i 's/^PBITMAP_LEARN=.*/PBITMAP_LEARN=owner/' "$conf"
expect_status 0 rpmi -i "$v1"
pol=$("$PBITMAP" show --json "$R/usr/bin/pbhello" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["learn_policy"])')
[[ $pol == owner ]] || fail "PBITMAP_LEARN=owner: stamped with $pol"
expect_status 0 rpmi -e pbsample
cp "$SAMPLE_DIR/pbitmap.conf.orig" "$conf"
pass "PBITMAP_LEARN: a bad value is reported and every used; owner is honoured"

# Stand-ins for a broken pbitmap (the real one is put back afterwards).
cp -p "$R/usr/bin/pbitmap" "$SAMPLE_DIR/pbitmap.real"
stand_in() {
	printf '#!/bin/sh\n%s\n' "$1" >"$R/usr/bin/pbitmap"
	chmod 755 "$R/usr/bin/pbitmap"
}

stand_in 'kill -SEGV $$'
expect_status 0 rpmi -i "$v1"
cp "$ERR" "$TRIG"
grep -qF "pbitmap: stamping ended with exit status 139" "$ERR" || fail "crash: $(cat "$ERR")"
expect_status 0 rpmr -q pbsample
expect_status 0 rpmi -e pbsample
pass "pbitmap crashing: transaction fine; $(cat "$TRIG")"

stand_in 'exec sleep 120'
sed -i 's/^PBITMAP_TIMEOUT=.*/PBITMAP_TIMEOUT=2/' "$conf"
start=$(date +%s)
expect_status 0 rpmi -i "$v1"
cp "$ERR" "$TRIG"
took=$(($(date +%s) - start))
((took < 60)) || fail "the time limit did not stop the trigger ($took s)"
grep -qF "pbitmap: stamping stopped after 2 s (PBITMAP_TIMEOUT in /etc/pbitmap.conf)" "$ERR" ||
	fail "no line about the time limit: $(cat "$ERR")"
expect_status 0 rpmr -q pbsample
expect_status 0 rpmi -e pbsample
cp "$SAMPLE_DIR/pbitmap.conf.orig" "$conf"
pass "pbitmap hanging: stopped by PBITMAP_TIMEOUT=2 after $took s; $(cat "$TRIG")"

rm "$R/usr/bin/pbitmap"
expect_status 0 rpmi -i "$v1"
cp "$ERR" "$TRIG"
grep -qF "pbitmap: /usr/bin/pbitmap is missing: nothing stamped" "$ERR" || fail "missing: $(cat "$ERR")"
expect_status 0 rpmi -e pbsample
pass "pbitmap missing: transaction fine; $(cat "$TRIG")"

cp -p "$SAMPLE_DIR/pbitmap.real" "$R/usr/bin/pbitmap"
expect_status 0 rpmi -i "$v1"
assert_summary "$ERR" 2 0 0 0
pass "real pbitmap back: $(summary_of "$ERR")"
