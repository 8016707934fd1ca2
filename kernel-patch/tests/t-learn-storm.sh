#!/bin/bash
# Guest test: learning under a storm.  A stamped private copy of
# learn-pages (learn-pages.c) is exec'd 1000 times from 8 parallel loops
# (modes A and B alternating), about one start in eight killed with
# SIGKILL a few milliseconds in, with vm.pbitmap_learn=1 and
# vm.pbitmap_learn_interval_s=0, so that the kernel writes the record back
# all the time, while another loop runs `pbitmap show` on the file.
# Asserts: no failed exec (ETXTBSY or any other error: every start exits 0,
# or 137 when it was the one killed), no failed `pbitmap show`, generations
# written, and a valid record at the end.  Prints the learning counters and
# the write-back cost per generation.  Run it under KASAN and lockdep too
# (the vm runner fails a test whose console shows a report); the guest has
# 2 vCPUs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
cold_begin t-learn-storm
VM=/proc/sys/vm
trap 'learn_reset; cold_reset; cd /; rm -rf "$W"' EXIT
cold_need_sysctls pbitmap_enabled pbitmap_learn pbitmap_learn_interval_s pbitmap_learn_flush
cold_need_counters pbitmap_learn_written pbitmap_learn_merged pbitmap_learn_busy \
	pbitmap_learn_dropped pbitmap_learn_write_ns
cold_missing
LOOPS=8 PER_LOOP=125

gcc -std=c11 -O2 -Wall -Wextra -Werror -o lp-storm "$HERE/learn-pages.c" ||
	fail "cannot build learn-pages"
pbitmap add -q lp-storm || fail "cannot stamp lp-storm"
echo 1 >$VM/pbitmap_enabled
echo 1 >$VM/pbitmap_learn
echo 0 >$VM/pbitmap_learn_interval_s
declare -A c0
for c in written merged busy dropped write_ns; do
	c0[$c]=$(vmstat_counter pbitmap_learn_$c)
done

# storm ID: PER_LOOP starts; writes "failed killed" to res.ID, errors to err.ID.
storm() {
	local i rc p failed=0 killed=0 mode
	for ((i = 0; i < PER_LOOP; i++)); do
		mode=A
		((i % 2)) && mode=B
		if ((RANDOM % 8 == 0)); then
			./lp-storm $mode >/dev/null 2>>"err.$1" &
			p=$!
			sleep "0.00$((RANDOM % 10))"
			kill -9 $p 2>/dev/null || true
			rc=0
			# (stderr: bash's own "Killed" report)
			wait $p 2>/dev/null || rc=$?
			if [ $rc = 137 ]; then
				killed=$((killed + 1))
			elif [ $rc != 0 ]; then
				failed=$((failed + 1))
				echo "start $i (killed one): exit status $rc" >>"err.$1"
			fi
		else
			rc=0
			./lp-storm $mode >/dev/null 2>>"err.$1" || rc=$?
			if [ $rc != 0 ]; then
				failed=$((failed + 1))
				echo "start $i: exit status $rc" >>"err.$1"
			fi
		fi
	done
	echo "$failed $killed" >"res.$1"
}
shows() {
	local n=0 bad=0
	while [ ! -e stop ]; do
		pbitmap show lp-storm >/dev/null 2>>err.show || bad=$((bad + 1))
		n=$((n + 1))
	done
	echo "$bad $n" >res.show
}

t0=$(date +%s.%N)
shows &
sp=$!
pids=()
for ((l = 0; l < LOOPS; l++)); do
	storm $l &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a storm loop failed"; done
touch stop
wait $sp || fail "the show loop failed"
t1=$(date +%s.%N)
flush_rc=0
echo 1 >$VM/pbitmap_learn_flush || flush_rc=$?

failed=0 killed=0
for ((l = 0; l < LOOPS; l++)); do
	read -r f k <"res.$l"
	failed=$((failed + f))
	killed=$((killed + k))
done
read -r show_bad show_n <res.show
declare -A d
for c in written merged busy dropped write_ns; do
	d[$c]=$(($(vmstat_counter pbitmap_learn_$c) - c0[$c]))
done
runs=$(pbitmap show --json lp-storm | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["runs"])')
printf 'storm: %d starts in %.1f s from %d loops, %d killed, %d failed; %d pbitmap show, %d failed\n' \
	$((LOOPS * PER_LOOP)) "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" $LOOPS "$killed" "$failed" "$show_n" "$show_bad"
echo "learning: ${d[written]} generations written (record runs=$runs), ${d[merged]} exits merged into a pending write, ${d[busy]} write-backs met a lock, ${d[dropped]} sets dropped"
((d[written] > 0)) && echo "write-back cost: $((d[write_ns] / d[written])) ns per generation (lock to unlock, mean)"
problems=
[ "$failed" = 0 ] || problems+=" $failed failed starts ($(cat err.* 2>/dev/null | sort | uniq -c | sort -rn | head -3 | tr '\n' ';'));"
[ "$show_bad" = 0 ] || problems+=" $show_bad failed pbitmap show ($(sort err.show 2>/dev/null | uniq -c | head -3 | tr '\n' ';'));"
[ "$flush_rc" = 0 ] || problems+=" vm.pbitmap_learn_flush failed;"
((d[written] > 0)) || problems+=" no generation written;"
pbitmap verify -q lp-storm || problems+=" the record does not verify at the end;"
[ -z "$problems" ] || fail "storm:$problems"
echo PASS
