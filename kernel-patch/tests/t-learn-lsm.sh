#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# t-learn-lsm: the learned write is judged as the learner's, by task-based
# and path-based LSMs, and read-only is honoured at write time
# (mm/pbitmap/learn.c, pbitmap_learn_judge(); writeback.c).
#
# It needs TOMOYO and AppArmor enabled, which the test bed's other boots
# leave off: make check runs it in a guest of its own, booted with
# lsm=landlock,tomoyo,apparmor (kernel-patch/kernel.mk, VM_LSM_APPEND).
#
# The learner is a static program (no loader, no library, no file opened
# by it): its only mapping is its own executable, which it touches.  Every
# file is a private copy stamped here; learning is the owner's runs
# (vm.pbitmap_learn=1), root's.
#
#   tomoyo:   TOMOYO is activated for this boot by a policy loader the test
#             writes (the test-bed kernel names /run/pbitmap-tomoyo-init its
#             loader, run at the first exec of /run/pbitmap-tomoyo-activate:
#             kernel-patch/config.fragment): profile 0 disabled
#             for every domain, profile 1 enforcing file::open, for the
#             learner's own domain, which may read its file, not write it.  The
#             learner is not written (pbitmap_learn_skip_denied), and
#             TOMOYO's audit log has the refusal of "file write" on it in
#             the learner's domain, with the learner's pid as the task.  A write
#             judged in the write-back worker saw the kernel's domain
#             (<kernel>, profile 0) and was written.
#   apparmor: two profiles attached to two copies, each allowing what the
#             program needs (its own file, mr) and one also "w" of itself.
#             The first is not written, and the kernel log has AppArmor's
#             DENIED for it with the learner's comm; the second is
#             written.  A write judged in the worker through a private
#             mount gave AppArmor a disconnected path: the second was
#             refused too, and the denial named the worker.  Beside a set
#             an unconfined learner made (another name of the file), the
#             confined learner is judged and audited once, not at each of
#             its 64 faults.
#   readonly: a learner maps a stamped data file through a bind mount and
#             waits; the bind mount is remounted read-only; the learner
#             exits: the file is not written (pbitmap_learn_dropped).  A
#             write through a private mount of the filesystem ignored the
#             bind mount's state.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-learn-lsm
VM=/proc/sys/vm
cleanup() {
	[ -p "$W/go" ] && echo go 1<>"$W/go"
	wait 2>/dev/null || true
	mountpoint -q "$W/bind" && umount "$W/bind"
	command -v apparmor_parser >/dev/null && [ -f "$W/aa.profile" ] &&
		apparmor_parser -R "$W/aa.profile" 2>/dev/null
	learn_reset
	cold_reset
	cd /
	rm -rf "$W"
}
trap cleanup EXIT
cold_need_sysctls pbitmap_enabled pbitmap_learn pbitmap_learn_interval_s \
	pbitmap_learn_data_interval_s pbitmap_learn_window_ms pbitmap_learn_flush
cold_need_counters pbitmap_learn_skip_denied pbitmap_learn_dropped pbitmap_learn_sets
cold_missing
SEC=/sys/kernel/security
# make check runs this test in a boot of its own with lsm=landlock,tomoyo,apparmor
# (VM_LSM_APPEND in kernel-patch/kernel.mk); the other boots leave them off.
grep -qw tomoyo /sys/kernel/security/lsm ||
	fail "TOMOYO is not enabled (lsm: $(cat /sys/kernel/security/lsm)): boot with $(
	)lsm=landlock,tomoyo,apparmor and CONFIG_SECURITY_TOMOYO"
grep -qw apparmor /sys/kernel/security/lsm ||
	fail "AppArmor is not enabled (lsm: $(cat /sys/kernel/security/lsm)): boot with $(
	)lsm=landlock,tomoyo,apparmor and CONFIG_SECURITY_APPARMOR"
[ -d $SEC/tomoyo ] || fail "no $SEC/tomoyo although TOMOYO is enabled"
[ -d $SEC/apparmor ] || fail "no $SEC/apparmor although AppArmor is enabled"
command -v apparmor_parser >/dev/null || fail "no apparmor_parser in the guest (package apparmor)"
# kernel-patch/config.fragment: CONFIG_SECURITY_TOMOYO_POLICY_LOADER and
# CONFIG_SECURITY_TOMOYO_ACTIVATION_TRIGGER (scripts/check-config holds them).
LOADER=/run/pbitmap-tomoyo-init TRIGGER=/run/pbitmap-tomoyo-activate

cat >touch-self.c <<'C'
/*
 * Touch 64 pages of a file-backed array: faults learning records; with an
 * argument, then sleep that many seconds.
 */
#include <stdlib.h>
#include <unistd.h>

static const volatile unsigned char blob[64 * 4096] = { 1 };

int main(int argc, char **argv)
{
	unsigned int i, sum = 0;

	for (i = 0; i < sizeof(blob); i += 4096)
		sum += blob[i];
	if (argc > 1)
		sleep(atoi(argv[1]));
	return sum != 1;
}
C
gcc -std=c11 -O2 -static -o touch-self touch-self.c || fail "cannot build the static learner"
stamped() { cp touch-self "$1" && pbitmap add -q "$1" || fail "cannot stamp $1"; }

echo 1 >$VM/pbitmap_enabled
echo 1 >$VM/pbitmap_learn
echo 0 >$VM/pbitmap_learn_interval_s
echo 0 >$VM/pbitmap_learn_data_interval_s

# ---- tomoyo ----
stamped lp-tomoyo
[ -e "$TRIGGER" ] && fail "tomoyo: $TRIGGER exists already: TOMOYO was activated before this test"
# The loader runs once, as root, from the kernel, before TOMOYO checks
# that every domain has a profile.  The learner may read its own file (the
# kernel opens it to check its record's blocks), not write it.
cat >"$LOADER" <<SH
#!/bin/sh
T=$SEC/tomoyo
printf '%s\n' PROFILE_VERSION=20150505 \
	'0-CONFIG={ mode=disabled grant_log=no reject_log=no }' \
	'1-CONFIG={ mode=disabled grant_log=no reject_log=yes }' \
	'1-CONFIG::file::open={ mode=enforcing grant_log=no reject_log=yes }' >\$T/profile
echo "initialize_domain $W/lp-tomoyo from any" >\$T/exception_policy
printf '%s\n' "<kernel> $W/lp-tomoyo" 'use_profile 1' "file read $W/lp-tomoyo" >\$T/domain_policy
echo done >$W/tomoyo-loaded
SH
chmod 755 "$LOADER"
cp /bin/true "$TRIGGER"
"$TRIGGER" || fail "tomoyo: the activation trigger failed"
[ -e tomoyo-loaded ] || fail "tomoyo: the kernel did not run $LOADER at $TRIGGER"
grep -q "use_profile 1" <(grep -A1 -F "<kernel> $W/lp-tomoyo" $SEC/tomoyo/domain_policy) ||
	fail "tomoyo: the learner's domain has no profile 1"
sum0=$(sha256sum <lp-tomoyo)
d0=$(vmstat_counter pbitmap_learn_skip_denied)
./lp-tomoyo &
learner=$!
wait "$learner" || fail "tomoyo: the confined learner failed"
learn_flush
# Entries end with a NUL.
{ timeout 5 cat $SEC/tomoyo/audit || true; } | tr '\0' '\n' >tomoyo.log
if [ "$(sha256sum <lp-tomoyo)" != "$sum0" ]; then
	fail "tomoyo: a learner TOMOYO forbids to write had its faults written (runs=$(runs_of lp-tomoyo))"
fi
[ "$(vmstat_delta pbitmap_learn_skip_denied "$d0")" -gt 0 ] || fail "tomoyo: pbitmap_learn_skip_denied did not grow"
grep -q "granted=no" tomoyo.log || fail "tomoyo: no refusal in TOMOYO's audit log: $(head -c 600 tomoyo.log)"
# An entry: a header with the task, the domain, the request.
refusal=$(grep -A2 -F "task={ pid=$learner " tomoyo.log | grep -A1 -xF "<kernel> $W/lp-tomoyo" |
	grep -xF "file write $W/lp-tomoyo" | head -1 || true)
[ -n "$refusal" ] ||
	fail "tomoyo: no refusal of 'file write' by the learner (pid $learner) in its domain: $(head -c 600 tomoyo.log)"
echo "tomoyo: the learner's file is byte-identical (skip_denied +$(vmstat_delta pbitmap_learn_skip_denied "$d0"));" \
	"TOMOYO refused '$refusal' to pid $learner in domain <kernel> $W/lp-tomoyo"

# ---- apparmor ----
stamped lp-aa-deny
stamped lp-aa-allow
cat >aa.profile <<AA
abi <abi/3.0>,
profile pbitmap-aa-deny $W/lp-aa-deny {
  $W/lp-aa-deny mr,
}
profile pbitmap-aa-allow $W/lp-aa-allow {
  $W/lp-aa-allow mrw,
}
AA
apparmor_parser -r -K aa.profile || fail "apparmor: apparmor_parser refused the profiles"
grep -q pbitmap-aa-deny $SEC/apparmor/profiles || fail "apparmor: the profiles are not loaded"
dmesg -c >/dev/null
sum0=$(sha256sum <lp-aa-deny)
d0=$(vmstat_counter pbitmap_learn_skip_denied)
./lp-aa-deny || fail "apparmor: the confined learner failed"
./lp-aa-allow || fail "apparmor: the learner allowed to write itself failed"
learn_flush
dmesg >aa.log
deny=$(grep 'apparmor="DENIED"' aa.log | grep -F "name=\"$W/lp-aa-deny\"" | head -1 || true)
[ "$(sha256sum <lp-aa-deny)" = "$sum0" ] ||
	fail "apparmor: a learner its profile forbids to write had its faults written"
[ -n "$deny" ] || fail "apparmor: no DENIED for $W/lp-aa-deny in the kernel log: $(grep apparmor aa.log | head -3)"
grep -q 'comm="lp-aa-deny"' <<<"$deny" || fail "apparmor: the denial does not name the learner: $deny"
[ "$(vmstat_delta pbitmap_learn_skip_denied "$d0")" -gt 0 ] || fail "apparmor: pbitmap_learn_skip_denied did not grow"
[ "$(runs_of lp-aa-allow)" = 1 ] ||
	fail "apparmor: a learner its profile allows to write itself was not written: $(grep -F lp-aa-allow aa.log | head -2)"
echo "apparmor: denied learner's file byte-identical, allowed learner's file written (runs 1); AppArmor logged: ${deny#*apparmor=}"
# A refusal is remembered: an unconfined learner (another name of the same
# file, which the profile does not attach to) makes the set and stays in
# its window; the confined learner's 64 faults are then not judged (nor
# audited) one by one: one DENIED, at its first mapping.
# The holder's set is waited for, not a fixed second (a slow guest may not
# have run the holder's faults by then), and it sleeps 8 s, well past the
# confined learner's run.
ln lp-aa-deny lp-aa-free
s0=$(vmstat_counter pbitmap_learn_sets)
./lp-aa-free 8 &
holder=$!
vmstat_grew pbitmap_learn_sets "$s0" 10 ||
	fail "apparmor: the unconfined learner made no learned set within 10 s"
dmesg -c >/dev/null
d0=$(vmstat_counter pbitmap_learn_skip_denied)
./lp-aa-deny &
confined=$!
wait "$confined" || fail "apparmor: the confined learner failed beside the holder"
sleep 1
# Every refusal is counted; the kernel log may suppress repeated records.
n=$(vmstat_delta pbitmap_learn_skip_denied "$d0")
logged=$(dmesg | grep 'apparmor="DENIED"' | grep -F "name=\"$W/lp-aa-deny\"" | grep -c "pid=$confined " || true)
wait "$holder" || fail "apparmor: the unconfined learner failed"
learn_flush
[ "$n" = 1 ] || fail "apparmor: the confined learner of a pending set was judged and refused $n times (want 1: at its first mapping)"
echo "apparmor: beside a pending set, the confined learner's 64 faults were refused $n time(s) (skip_denied), $logged DENIED logged"

# ---- readonly ----
head -c 4M /dev/urandom >ro.dat && pbitmap add -q ro.dat || fail "readonly: cannot stamp the data file"
mkdir bind && mount --bind "$W" bind || fail "readonly: cannot bind-mount $W"
mkfifo ready go
echo 30000 >$VM/pbitmap_learn_window_ms
python3 - "$W/bind/ro.dat" "$W/ready" "$W/go" <<'PY' &
import mmap, sys
with open(sys.argv[1], "rb") as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    sum(m[i] for i in range(0, len(m), 4096))
with open(sys.argv[2], "w") as r:
    r.write("mapped\n")
with open(sys.argv[3]) as g:
    g.readline()
PY
learner=$!
read -t 60 -r _ 0<>ready || fail "readonly: the learner did not map the file"
mount -o remount,bind,ro bind || fail "readonly: cannot remount the bind mount read-only"
x0=$(vmstat_counter pbitmap_learn_dropped)
sum0=$(sha256sum <ro.dat) xa0=$(getfattr --only-values -n user.pbitmap ro.dat | sha256sum)
echo go 1<>go
wait "$learner" || fail "readonly: the learner failed"
learn_flush
xa1=$(getfattr --only-values -n user.pbitmap ro.dat | sha256sum)
[ "$xa1" = "$xa0" ] && [ "$(sha256sum <ro.dat)" = "$sum0" ] ||
	fail "readonly: a file mapped through a bind mount remounted read-only was written (runs=$(runs_of ro.dat))"
[ "$(vmstat_delta pbitmap_learn_dropped "$x0")" -gt 0 ] || fail "readonly: pbitmap_learn_dropped did not grow"
echo "readonly: the file mapped through the read-only bind mount was not written (dropped +$(vmstat_delta pbitmap_learn_dropped "$x0"))"
echo PASS
