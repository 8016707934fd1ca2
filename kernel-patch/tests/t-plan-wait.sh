#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# t-plan-wait: an exec waits on nobody its plan names.
#
# A plan's files are looked up and opened inside execve.  A path through a
# FUSE mount would ask the daemon (a network filesystem its server, an
# automount its daemon) before the filesystem could be refused, an open
# would wait for a fanotify permission listener's answer, and an open of a
# file under a write lease would start breaking the lease and wait up to
# lease-break-time for its holder.
#
# A program's plan (made by `pbitmap plan`) names three files: one on a
# FUSE mount served by fuse-count.py, which logs each request with the pid
# it is for and never caches an entry; one marked for FAN_OPEN_PERM by
# plan-waits.py, which allows each open and notes who made it; and one it
# holds a write lease on.  The program runs once.  Asserts: the plan was
# followed, the marked file opened (pbitmap_plan_files +1), the FUSE file
# skipped as on a filesystem plans do not read from
# (pbitmap_plan_skip_fs +1), the leased one skipped
# (pbitmap_plan_skip_mismatch +1); the daemon got no request from the
# exec, the listener no event from it, and the lease holder no SIGIO, its
# lease still held.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-plan-wait
break_time=$(cat /proc/sys/fs/lease-break-time)
cleanup() {
	cold_reset
	echo "$break_time" >/proc/sys/fs/lease-break-time
	umount "$W/fuse" 2>/dev/null || true
	cd /
	rm -rf "$W"
}
trap cleanup EXIT
cold_need_sysctls pbitmap_enabled pbitmap_plan
cold_need_counters pbitmap_plan_exec pbitmap_plan_files pbitmap_plan_skip_fs \
	pbitmap_plan_skip_mismatch
cold_missing
[ -c /dev/fuse ] || fail "no FUSE in the kernel (CONFIG_FUSE_FS): /dev/fuse is missing"
[ -d /proc/sys/fs/fanotify ] || fail "no fanotify in the kernel (CONFIG_FANOTIFY): /proc/sys/fs/fanotify is missing"

mkdir fuse
python3 "$HERE/fuse-count.py" "$W/fuse" "$W/fuse.log" 2>fuse.err &
for _ in $(seq 100); do
	grep -qx ready fuse.log 2>/dev/null && break
	sleep 0.1
done
grep -qx ready fuse.log 2>/dev/null || fail "fuse-count.py did not mount: $(cat fuse.err)"
head -c 4096 /dev/urandom >watched
head -c 4096 /dev/urandom >leased
printf '#include <stdio.h>\nint main(void) { puts("plan-wait ok"); return 0; }\n' >p.c
gcc -O1 -o prog p.c || fail "cannot build the program"
pbitmap add -q --plan-size 64K prog || fail "cannot stamp prog with a plan area"
pbitmap plan prog "$W/watched" "$W/leased" "$W/fuse/dir/file" ||
	fail "pbitmap plan with a file on FUSE"

echo 1 >/proc/sys/vm/pbitmap_enabled
echo 1 >/proc/sys/vm/pbitmap_plan
# A lease broken by mistake costs the test 5 s, not 45.
echo 5 >/proc/sys/fs/lease-break-time
e0=$(vmstat_counter pbitmap_plan_exec)
f0=$(vmstat_counter pbitmap_plan_files)
s0=$(vmstat_counter pbitmap_plan_skip_fs)
m0=$(vmstat_counter pbitmap_plan_skip_mismatch)
out=$(python3 "$HERE/plan-waits.py" "$W/watched" "$W/leased" ./prog) ||
	fail "plan-waits.py: $out"
echo "$out"
field() { awk -v k="$1" '$1 == k { print $2 }' <<<"$out"; }
pid=$(field pid)
fuse_asked=$(awk -v p="$pid" '$2 == p' fuse.log | wc -l)
execs=$(($(vmstat_counter pbitmap_plan_exec) - e0))
files=$(($(vmstat_counter pbitmap_plan_files) - f0))
skip_fs=$(($(vmstat_counter pbitmap_plan_skip_fs) - s0))
skip_mismatch=$(($(vmstat_counter pbitmap_plan_skip_mismatch) - m0))
echo "plans followed +$execs, files opened +$files, skipped: fs +$skip_fs, mismatch +$skip_mismatch; FUSE requests from the exec: $fuse_asked"
[ "$execs" = 1 ] || fail "the plan was not followed (+$execs)"
[ "$fuse_asked" = 0 ] ||
	fail "the exec's plan sent the FUSE daemon $fuse_asked requests: $(awk -v p="$pid" '$2 == p' fuse.log | tr '\n' ';')"
[ "$skip_fs" = 1 ] || fail "the file on FUSE was not skipped as on a filesystem plans do not read (+$skip_fs)"
[ "$(field perm_events_exec)" = 0 ] ||
	fail "the plan's open waited for a fanotify permission answer ($(field perm_events_exec) events)"
[ "$files" = 1 ] || fail "the marked file was not opened for the plan (+$files files)"
[ "$(field sigio)" = 0 ] && [ "$(field lease)" = wrlck ] ||
	fail "the plan's open broke a write lease (SIGIO $(field sigio), lease now $(field lease))"
[ "$skip_mismatch" = 1 ] || fail "the leased file was not skipped (+$skip_mismatch)"
echo "PASS: the plan asked FUSE nothing, waited on no fanotify listener and broke no lease"
