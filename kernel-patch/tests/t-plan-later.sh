#!/bin/bash
# Guest test: the files of a start-up plan whose look-ups would read the
# disk are opened after exec by a worker, as the exec'ing task, with
# vm.pbitmap_plan_lookup_later=1 (off by default; Documentation/admin-guide/
# sysctl/vm.rst, and mm/pbitmap/pace.c).
#
# The program (planprog.sh: prog, linked with liba.so and libb.so, with a
# plan of both; it sleeps 1 s after printing, so that the worker, which
# stops when the program exits, is done before it) lives on a fresh ext4
# on a loop device, mounted again before each cold start: then nothing of
# it is in the dentry cache but what exec itself walked (the mount point
# and prog), and the libraries' look-ups would read the disk.
#
# Asserted, from /proc/vmstat deltas and the pbitmap_plan_read events:
#   - vm.pbitmap_plan_lookup_later is 0 at boot;
#   - with it 1, a cold start: both libraries left for after exec (pbitmap_plan_later
#     2), both opened (pbitmap_plan_files 2), nothing skipped, every run of
#     the plan submitted by a kworker, none by prog; the output is right;
#   - the same start again with the page cache dropped and the dentries
#     kept: nothing left for later, both opened, every run submitted by
#     prog at exec;
#   - vm.pbitmap_plan_lookup_later=0, a cold start: nothing left for later,
#     every run submitted at exec, as without this setting;
#   - a plan naming a stamped file in a directory only root may search,
#     run by nobody: the three files left for later, the libraries opened,
#     the hidden file skipped (pbitmap_plan_skip_mismatch 1) and none of
#     its bytes cached after the start: the worker looked it up with
#     nobody's credentials, not its own.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-plan-later
cold_need_counters pbitmap_plan_exec pbitmap_plan_files pbitmap_plan_later \
	pbitmap_plan_skip_mismatch pbitmap_plan_skip_fs
cold_need_sysctls pbitmap_plan_lookup_later
cold_missing
# shellcheck source=kernel-patch/tests/planprog.sh
. "$HERE/planprog.sh"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T" || fail "cannot mount tracefs"
[ -d "$T/events/pbitmap/pbitmap_plan_read" ] || fail "the kernel has no pbitmap_plan_read tracepoint"
later0=$(cat /proc/sys/vm/pbitmap_plan_lookup_later)
[ "$later0" = 0 ] || fail "vm.pbitmap_plan_lookup_later is $later0 at boot, not 0"
M=$W/mnt
trap 'echo 0 >"$T/events/pbitmap/pbitmap_plan_read/enable" 2>/dev/null
	umount "$M" 2>/dev/null || :; cold_reset; cd /; rm -rf "$W"' EXIT
chmod 755 "$W"
truncate -s 64M fs.img && mkfs.ext4 -q -F -b 4096 fs.img || fail "cannot make the ext4 image"
mkdir "$M"
mount -o loop fs.img "$M" || fail "cannot mount fs.img"
chmod 755 "$M"
plan_prog "$M" 1000000
want=$PLAN_WANT
mkdir -m 700 "$M/hidden"
cp --preserve=xattr "$M/liba.so" "$M/hidden/x.so"
cp --preserve=xattr "$M/prog" "$M/prog2"
pbitmap plan "$M/prog2" "$M/liba.so" "$M/libb.so" "$M/hidden/x.so" ||
	fail "pbitmap plan prog2 with hidden/x.so"
inos="$(stat -c %i "$M/liba.so") $(stat -c %i "$M/libb.so")"
cd /
umount "$M"

# start LABEL REMOUNT CMD...: one start of CMD from $M with pbitmap on, the
# counters before and after in $W/LABEL.0 and $W/LABEL.1 and the plan's
# read events in $W/LABEL.trace; the file system mounted afresh first with
# REMOUNT=yes (nothing of it cached), the page cache alone dropped with no.
start() {
	local label=$1 remount=$2
	shift 2
	if [ "$remount" = yes ]; then
		mount -o loop "$W/fs.img" "$M" || fail "$label: cannot mount fs.img"
	else
		sleep 1.1	# past the plan's repeat window
		sync
		echo 1 >/proc/sys/vm/drop_caches
	fi
	echo 1 >/proc/sys/vm/pbitmap_enabled
	echo >"$T/trace"
	echo 1 >"$T/events/pbitmap/pbitmap_plan_read/enable"
	echo 1 >"$T/tracing_on"
	grep '^pbitmap_plan_' /proc/vmstat >"$W/$label.0"
	(cd "$M" && "$@") >"$W/$label.out" || fail "$label: $* failed"
	grep '^pbitmap_plan_' /proc/vmstat >"$W/$label.1"
	echo 0 >"$T/events/pbitmap/pbitmap_plan_read/enable"
	echo 0 >/proc/sys/vm/pbitmap_enabled
	cp "$T/trace" "$W/$label.trace"
	[ "$(cat "$W/$label.out")" = "$want" ] || fail "$label: printed '$(cat "$W/$label.out")'"
}
d() { echo $(($(awk -v k="$2" '$1 == k { print $2 }' "$W/$1.1") - $(awk -v k="$2" '$1 == k { print $2 }' "$W/$1.0"))); }
# by LABEL: "P K", the plan's runs of the libraries submitted by prog and
# by a kworker; any other run or submitter fails.
by() {
	python3 - "$W/$1.trace" "$inos" 2>&1 <<'PY'
import re, sys
inos = set(sys.argv[2].split())
prog = kworker = 0
for l in open(sys.argv[1]):
    m = re.match(r"\s*(\S+)-\d+\s.*pbitmap_plan_read: .* ino=(\d+) ", l)
    if not m:
        continue
    who, ino = m.groups()
    if ino not in inos:
        sys.exit("a run of inode %s, not a library's: %s" % (ino, l.strip()))
    if who.startswith("prog"):
        prog += 1
    elif who.startswith("kworker"):
        kworker += 1
    else:
        sys.exit("a run submitted by %s" % who)
print(prog, kworker)
PY
}
# all_at_exec LABEL WHAT: every run of LABEL's start submitted by prog at
# exec, at least the libraries' two, none by a kworker (their number in
# p); WHAT names the case.
all_at_exec() {
	local runs k
	runs=$(by "$1") || fail "$1: the trace: $runs"
	read -r p k <<<"$runs"
	[ "$p" -ge 2 ] && [ "$k" = 0 ] ||
		fail "$2: $p runs submitted by prog, $k by a kworker; want all by prog"
}
# expect LABEL LATER FILES MISMATCH: the counters' deltas.
expect() {
	local got
	got="$(d "$1" pbitmap_plan_exec) $(d "$1" pbitmap_plan_later) $(d "$1" pbitmap_plan_files) $(d "$1" pbitmap_plan_skip_mismatch) $(d "$1" pbitmap_plan_skip_fs)"
	[ "$got" = "1 $2 $3 $4 0" ] ||
		fail "$1: plan exec, later, files, skip_mismatch, skip_fs: $got, want 1 $2 $3 $4 0"
}

echo 1 >/proc/sys/vm/pbitmap_plan_lookup_later
start cold yes ./prog
expect cold 2 2 0
runs=$(by cold) || fail "cold: the trace: $runs"
read -r p k <<<"$runs"
[ "$p" = 0 ] && [ "$k" -ge 2 ] ||
	fail "cold: $p runs submitted by prog, $k by a kworker; want none by prog, at least 2 by a kworker"
echo "ok: a cold start leaves both libraries to the worker, which opens and reads them ($k runs)"

start warm no ./prog
expect warm 0 2 0
all_at_exec warm warm
echo "ok: with the dentries cached, exec opens both and submits every run ($p)"
umount "$M"

echo 0 >/proc/sys/vm/pbitmap_plan_lookup_later
start sync yes ./prog
echo 1 >/proc/sys/vm/pbitmap_plan_lookup_later
expect sync 0 2 0
all_at_exec sync "vm.pbitmap_plan_lookup_later=0"
echo "ok: vm.pbitmap_plan_lookup_later=0 makes every look-up at exec"
umount "$M"

start hidden yes "${NOBODY[@]}" ./prog2
expect hidden 3 2 1
echo 0 >/proc/sys/vm/pbitmap_enabled
cached=$(fincore --bytes --noheadings --output RES "$M/hidden/x.so") || fail "fincore hidden/x.so"
cached=${cached//[[:space:]]/}
[ "$cached" = 0 ] || fail "hidden/x.so: $cached bytes cached after nobody's start"
echo "ok: the worker looks up as nobody: the hidden file is skipped and nothing of it read"
umount "$M"
cold_reset
echo "PASS: t-plan-later"
