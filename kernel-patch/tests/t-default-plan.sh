#!/bin/bash
# Guest test: what a user gets by stamping the documented way (issue 44).
# A copy of find, stamped with a plain `pbitmap add` (no --plan-size), has
# the default 32 KiB plan area; three cold runs by its owner (root) with
# vm.pbitmap_learn=1 and vm.pbitmap_learn_interval_s=0 learn a plan into
# it (pbitmap show: the plan lists files, the executable among them); and
# its next cold start with the defaults (vm.pbitmap_plan 1) is read
# through that plan: pbitmap_plan_exec +1 and pbitmap_plan_files at least
# 2 (find and its libraries), no plan rejected, the same output.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-default-plan
trap 'learn_reset; cold_reset; cd /; rm -rf "$W"' EXIT
cold_need_sysctls pbitmap_enabled pbitmap_learn pbitmap_learn_interval_s pbitmap_learn_flush pbitmap_plan
cold_need_counters pbitmap_plan_exec pbitmap_plan_files
cold_missing
[ "$(cat /proc/sys/vm/pbitmap_plan)" = 1 ] || fail "vm.pbitmap_plan is not at its default, 1"

cp /usr/bin/find prog
pbitmap add -q prog || fail "pbitmap add prog"
size=$(pbitmap show --json prog | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["plan_size"])')
[ "$size" = 32768 ] || fail "a plain pbitmap add gave the executable a plan area of $size bytes, not 32768"
args=(/etc -maxdepth 1 -name passwd)
./prog "${args[@]}" >want.out
for i in 1 2 3; do learn_one_run ./prog "${args[@]}"; done
plan=$(pbitmap show prog | grep -E '^ +plan ' | head -1)
echo "learned: $plan"
[[ $plan =~ ([0-9]+)\ files ]] && ((BASH_REMATCH[1] >= 2)) ||
	fail "three learning runs left no plan of 2 files or more: $plan"
pbitmap show prog | grep -qE "^ +[0-9]+ +[0-9]+ KiB +$W/prog( |$)" ||
	fail "the learned plan does not list the executable itself: $(pbitmap show prog)"

rej0=$(grep -E '^pbitmap_plan_reject' /proc/vmstat | awk '{ s += $2 } END { print s + 0 }')
e0=$(vmstat_counter pbitmap_plan_exec) f0=$(vmstat_counter pbitmap_plan_files)
cold_cond on
cold_run plan plan.out ./prog "${args[@]}"
cold_reset
rej1=$(grep -E '^pbitmap_plan_reject' /proc/vmstat | awk '{ s += $2 } END { print s + 0 }')
de=$(vmstat_delta pbitmap_plan_exec "$e0") df=$(vmstat_delta pbitmap_plan_files "$f0")
cmp -s plan.out want.out || fail "the output through the plan differs: $(cat plan.out)"
[ "$de" = 1 ] || fail "the cold start after learning ran $de plans, not 1"
((df >= 2)) || fail "the plan opened $df files, not 2 or more"
[ "$rej1" = "$rej0" ] || fail "plans rejected: $((rej1 - rej0))"
echo "PASS: t-default-plan (default area 32768 bytes; learned $plan; the next cold start: 1 plan, $df files)"
