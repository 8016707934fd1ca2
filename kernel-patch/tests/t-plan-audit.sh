#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# t-plan-audit: a plan's look-ups do not grow the exec's audit event.
#
# With any audit rule loaded, kern_path() adds each name it looks up to
# the syscall's audit context: a plan of 1,024 files would add about
# 1,024 PATH records to the execve event and pin a names_cache buffer for
# each until execve returns.  The plan's walk (pbitmap_plan_lookup())
# uses lookup_one_positive_unlocked(), which audits nothing.
#
# A program whose plan (made by `pbitmap plan`) names 1,024 files of 4 KiB
# runs once under the rule `-a always,exit -F arch=b64 -S execve`
# (audit-count.py becomes the audit daemon over netlink), and so does an
# unstamped copy.  Asserts: the plan was followed and opened all 1,024
# files (pbitmap_plan_files +1024), and its execve event has as many PATH
# records as the copy's, which has no plan.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-plan-audit
trap 'cold_reset; cd /; rm -rf "$W"' EXIT
cold_need_sysctls pbitmap_enabled pbitmap_plan
cold_need_counters pbitmap_plan_exec pbitmap_plan_files
cold_missing
[ -e /proc/self/loginuid ] ||
	fail "no audit in the kernel (CONFIG_AUDIT, CONFIG_AUDITSYSCALL): /proc/self/loginuid is missing"

chmod 755 "$W"
mkdir f && chmod 755 f
for i in $(seq -w 0 1023); do head -c 4096 /dev/urandom >f/$i; done
chmod 644 f/*
printf '#include <stdio.h>\nint main(void) { puts("plan-audit ok"); return 0; }\n' >p.c
gcc -O1 -o plain p.c || fail "cannot build the program"
cp plain prog
pbitmap add -q --plan-size 256K prog || fail "cannot stamp prog with a plan area"
pbitmap plan prog "$W"/f/* || fail "pbitmap plan with 1,024 files"
pbitmap verify prog >/dev/null || fail "pbitmap verify refuses the plan the tool wrote"

echo 1 >/proc/sys/vm/pbitmap_enabled
echo 1 >/proc/sys/vm/pbitmap_plan
e0=$(vmstat_counter pbitmap_plan_exec)
f0=$(vmstat_counter pbitmap_plan_files)
planned=$(python3 "$HERE/audit-count.py" "$W/prog" ./prog) || fail "audit-count.py on the planned exec"
execs=$(($(vmstat_counter pbitmap_plan_exec) - e0))
files=$(($(vmstat_counter pbitmap_plan_files) - f0))
plain=$(python3 "$HERE/audit-count.py" "$W/plain" ./plain) || fail "audit-count.py on the plain exec"
echo "execve with a plan of 1,024 files: $planned PATH records (plans followed +$execs, files opened +$files); without a plan: $plain"
[ "$execs" = 1 ] && [ "$files" = 1024 ] || fail "the plan was not followed over all 1,024 files (+$execs, +$files)"
[ "$planned" = "$plain" ] || fail "the plan's look-ups added $((planned - plain)) PATH records to the execve event"
echo "PASS: a plan of 1,024 files adds no PATH record to its execve ($planned, as without a plan)"
