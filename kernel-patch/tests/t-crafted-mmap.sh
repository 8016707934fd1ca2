#!/bin/bash
# Guest test: crafted user.pbitmap attributes never break a mapping.
# craft-xattr.py makes 40 crafted PBXZ records on copies of a data file
# (prefix, zstd frame, bombs, sizes, record fields, records for another
# size) and 23 crafted PBEM markers or records on copies of a stamped shared
# library (marker fields, stale size, places outside the file or in PT_LOAD
# content, checksums), plus 4 sound controls.  With vm.pbitmap_enabled=1 and
# vm.pbitmap_mmap=1, for each case a program maps the copy (mmap-index for a
# data file; a program linked against the library, LD_LIBRARY_PATH) and must
# print what it prints for the unstamped original; pbitmap_reject_<reason>
# and pbitmap_rejected must grow by exactly one (the expected reason from
# craft-xattr.py, every other reason counter still: a file's verdict is
# counted once, however many mmap calls map it), or, for the control cases,
# pbitmap_prefetch must grow with no rejection.  The tool must refuse every
# crafted data record as well (pbitmap verify), except those rejected for
# bounds: the tool does not compare a data record with its file.  dmesg must
# gain no WARNING, BUG, KASAN, Oops or lockdep line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-crafted-mmap
REASONS=(marker bounds size header checksum io nomem xattr)
cold_need_sysctls pbitmap_enabled pbitmap_mmap
cold_need_counters pbitmap_rejected pbitmap_prefetch "${REASONS[@]/#/pbitmap_reject_}"
# On a kernel without them, every case still runs (the programs must work
# on any kernel) and the test fails at the end, naming what is missing.
counting=1; [ -z "$COLD_MISSING" ] || counting=0

# The counters of every reason, the total and the prefetches, as one line.
# One read of /proc/vmstat (vmstatlib.sh): the guest is slow, and there is
# a snapshot per case.
snapshot() {
	((counting)) || return 0
	local -A v
	local r
	vmstat_snap v "${REASONS[@]/#/pbitmap_reject_}" pbitmap_rejected pbitmap_prefetch
	for r in "${REASONS[@]}"; do printf '%s ' "${v[pbitmap_reject_$r]}"; done
	printf '%s %s\n' "${v[pbitmap_rejected]}" "${v[pbitmap_prefetch]}"
}
# expect_delta CASE BEFORE AFTER REASON: REASON's counter and the total grew
# by one and nothing else moved, or (REASON accept) one prefetch, no reject.
expect_delta() {
	local name=$1 reason=$4 i want got
	local -a before after
	read -ra before <<<"$2"
	read -ra after <<<"$3"
	for i in "${!REASONS[@]}"; do
		want=0; [ "${REASONS[i]}" = "$reason" ] && want=1
		got=$((after[i] - before[i]))
		[ "$got" = $want ] || fail "$name: pbitmap_reject_${REASONS[i]} +$got, expected +$want (reason $reason)"
	done
	i=${#REASONS[@]}
	want=1; [ "$reason" = accept ] && want=0
	got=$((after[i] - before[i]))
	[ "$got" = $want ] || fail "$name: pbitmap_rejected +$got, expected +$want"
	got=$((after[i + 1] - before[i + 1]))
	if [ "$reason" = accept ]; then
		# ld.so maps a library in several mmap calls: each may count.
		((got >= 1)) || fail "$name: pbitmap_prefetch +$got, expected a prefetch"
	else
		((got == 0)) || fail "$name: pbitmap_prefetch +$got for a rejected record"
	fi
}

dmesg_problems() { dmesg | grep -cE 'WARNING:|\bBUG\b|KASAN|Oops|circular locking|lock state|cut here' || true; }

gcc -std=c11 -O2 -Wall -Wextra -Werror -o mmap-index "$HERE/mmap-index.c" || fail "cannot build mmap-index"
# 261 pages: not a multiple of 64, so a record has spare bits to set past its end.
head -c $((261 * 4096)) /dev/urandom >data
# 256 KiB of data: files no larger than the readahead window are not prefetched.
printf 'const char craft_pad[256 << 10] = { 1 };\nint craft_value(void) { return 41 + craft_pad[0]; }\n' >lib.c
printf '#include <stdio.h>\nint craft_value(void);\nint main(void) { printf("craft %%d\\n", craft_value()); return 0; }\n' >user.c
gcc -O2 -shared -fPIC -o libcraft.so lib.c || fail "cannot build libcraft.so"
gcc -O2 -o user user.c -L. -lcraft || fail "cannot build the program using libcraft.so"
want_data=$(./mmap-index clustered 7 data)
want_lib=$(LD_LIBRARY_PATH=$W ./user)
pbitmap add -q libcraft.so || fail "cannot stamp libcraft.so"
pbitmap set -q --pages 0-1 libcraft.so || fail "cannot mark pages of libcraft.so"
python3 "$HERE/craft-xattr.py" data data data-cases >data-list || fail "craft-xattr.py data"
python3 "$HERE/craft-xattr.py" lib libcraft.so lib-cases >lib-list || fail "craft-xattr.py lib"
sync

while read -r name reason; do
	if [ "$reason" = accept ]; then
		pbitmap verify -q "data-cases/$name" || fail "data/$name: the control record is not valid for the tool"
	elif [ "$reason" != bounds ] && pbitmap verify -q "data-cases/$name" 2>/dev/null; then
		fail "data/$name: the tool accepts a record crafted to be rejected ($reason)"
	fi
done <data-list

cold_cond on
k0=$(dmesg_problems)
# run_cases LIST LABEL WANT CMD...: each case NAME of LIST (lines "NAME
# REASON") with @ in CMD replaced by NAME; prints the number of cases.
run_cases() {
	local list=$1 label=$2 want=$3 name reason before after got n=0
	shift 3
	# the counters after a case are the next one's before (nothing
	# between them maps a stamped file)
	after=$(snapshot)
	while read -r name reason; do
		before=$after
		got=$("${@//@/$name}") || fail "$label/$name: exit status $?"
		after=$(snapshot)
		[ "$got" = "$want" ] || fail "$label/$name: printed '$got', expected '$want'"
		((!counting)) || expect_delta "$label/$name" "$before" "$after" "$reason"
		n=$((n + 1))
	done <"$list"
	echo $n
}
n=$(run_cases data-list data "$want_data" ./mmap-index clustered 7 "data-cases/@") || { echo "$n"; exit 1; }
echo "ok: $n crafted data-file attributes mapped, output unchanged$( ((counting)) && echo ", each counted under its reason")"
m=$(run_cases lib-list lib "$want_lib" env "LD_LIBRARY_PATH=$W/lib-cases/@" ./user) || { echo "$m"; exit 1; }
echo "ok: $m crafted library markers and records, program output unchanged$( ((counting)) && echo ", each counted under its reason")"
cold_reset
k1=$(dmesg_problems)
[ "$k1" = "$k0" ] || fail "dmesg gained kernel problem lines: $(dmesg | grep -E 'WARNING:|\bBUG\b|KASAN|Oops' | tail -n 5)"
cold_missing
echo "PASS: $((n + m)) crafted attributes ($n data, $m library), no kernel warning"
