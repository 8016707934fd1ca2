#!/bin/bash
# Guest test: a user who rewrites the attribute of a file of their own in
# a loop cannot keep everyone else's parses out of the record cache (issue
# 22, finding 5).
#
# An attacker (uid 1002) loops mmap + setfattr user.pbitmap (the same
# value again) on its own stamped 16 MiB file until the victim is done
# (SIGTERM; at most 300 s).  Meanwhile, after
# the page cache and inodes were dropped (each parse then waits for disk
# reads, so the attacker's setfattr calls land inside the victim's
# parses), a victim (uid 1001) maps 30 stamped files, then maps them again.
# The victim's second mappings must all be cache hits, for the victim's
# own pid, by the pbitmap_lookup tracepoint.  Invalidation was global
# before: every setxattr on any stamped inode made every parse in flight
# "used once, not kept", so the victim missed again.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kernel-patch/tests/coldlib.sh
. "$HERE/coldlib.sh"
# shellcheck source=kernel-patch/tests/cachelib.sh
. "$HERE/cachelib.sh"
cold_begin t-cache-attacker
trap 'trace_lookups_off; cold_reset; cd /; rm -rf "$W"' EXIT
chmod 755 "$W"
cold_need_sysctls pbitmap_enabled pbitmap_mmap
cold_missing
VICTIM=(setpriv --reuid=1001 --regid=1001 --clear-groups)
ATTACKER=(setpriv --reuid=1002 --regid=1002 --clear-groups)

cache_build
mkdir attacker && chown 1002:1002 attacker
stamp_sparse attacker/own 16M 0-31
chown 1002:1002 attacker/own
# Each of the victim's files gets a record of its own, 100 random pages of
# 256: it does not compress to fit in the inode, so each parse reads an
# xattr block of its own from disk.
for i in $(seq 0 29); do
	stamp_sparse "v.$i" 1M "$(shuf -i 0-255 -n 100 | sort -n | paste -sd,)"
done
sync

cold_cond on
# The trace's buffers sized first, and the loop stopped when the victim is
# done, not after a fixed 20 s: once (a CI run of 2f22ed5, two other
# guests on the host, 2070 rounds where an idle host makes 100,000) the
# set-up between the loop's start and the victim's took longer than that,
# and the loop had ended when the victim began.
trace_lookups_ready
echo 3 >/proc/sys/vm/drop_caches
"${ATTACKER[@]}" ./cache-poke loop 300 attacker/own >attacker.out 2>&1 &
apid=$!	# setpriv execs cache-poke: the attacker's pid
# Its own lookups are left out of the trace: thousands a second would
# overwrite the victim's.
trace_lookups_on "common_pid != $apid"
sleep 2
kill -0 $apid 2>/dev/null || fail "the attacker's loop stopped: $(cat attacker.out)"
"${VICTIM[@]}" ./cache-poke map -1 v.* >first.out || fail "the victim cannot map its files"
"${VICTIM[@]}" ./cache-poke map -1 v.* >second.out || fail "the victim cannot map its files again"
kill -0 $apid 2>/dev/null || fail "the attacker's loop ended before the victim's second mapping (300 s)"
kill -TERM $apid
wait $apid || fail "the attacker's loop failed: $(cat attacker.out)"
trace_lookups_off
read -r _ p1 <first.out
read -r _ p2 <second.out
rounds=$(awk '/^rounds/ { print $2 }' attacker.out)
first_miss=$(trace_lookups "$p1" miss)
hits=$(trace_lookups "$p2" hit)
misses=$(trace_lookups "$p2" miss)
echo "attacker: $rounds rounds of mmap + setfattr while the victim mapped its files"
echo "victim: first mapping $first_miss misses; second mapping $hits hits, $misses misses (of 30)"
# At least 100: under CI's load the loop made about 100 rounds a second
((rounds >= 100)) || fail "the attacker's loop made only $rounds rounds"
((first_miss == 30)) || fail "the victim's first mapping parsed $first_miss of 30 files"
((hits == 30 && misses == 0)) ||
	fail "the attacker's setfattr loop kept $misses of the victim's 30 parses out of the cache"
echo "PASS: the victim's 30 parses, made during $rounds rounds of the attacker's loop, all kept"
